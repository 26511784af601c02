// SPDX-License-Identifier: MIT
/*
 * A plugin (for dlopen_host) whose sp:query_begin has a second site the
 * kernel refuses to probe: it points at an int3. Attaching the file fails
 * half-way (ENDs are attached before BEGINs), so sptrace must roll back
 * the query_end links it already made (tests/e2e/test_reach_faults.py).
 */
#include <sp_probe.h>

void plugin_run(void);

void plugin_run(void)
{
	SP_QUERY_BEGIN("plugin_query");
	SP_QUERY_END("plugin_query");
}

/* Never called: only its note and its int3 matter. */
__asm__(".pushsection .text\n"
	"sp_bad_site: int3\n"
	".popsection\n"
	".pushsection .note.stapsdt,\"\",\"note\"\n"
	".balign 4\n"
	".4byte 2f-1f, 4f-3f, 3\n"
	"1: .asciz \"stapsdt\"\n"
	"2: .balign 4\n"
	"3: .8byte sp_bad_site\n"
	".8byte _.stapsdt.base\n"
	".8byte sp_query_begin_semaphore\n"
	".asciz \"sp\"\n"
	".asciz \"query_begin\"\n"
	".asciz \"-8@%rdi\"\n"
	"4: .balign 4\n"
	".popsection\n");
