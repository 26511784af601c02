// SPDX-License-Identifier: MIT
/*
 * The semaphore half of the notes fixture (see notes_fixture.c): every probe
 * of a file that defines _SDT_HAS_SEMAPHORES has one, so it lives alone here.
 * The semaphore sits in .probes, file-backed, where <sys/sdt.h> users keep
 * them, so the test can find its 2 zero bytes in the file.
 */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

void fix_sema(int v);

volatile unsigned short fix_sema_semaphore __attribute__((section(".probes")));

void fix_sema(int v)
{
	if (fix_sema_semaphore)
		DTRACE_PROBE1(fix, sema, v);
}
