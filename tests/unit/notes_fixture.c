// SPDX-License-Identifier: MIT
/*
 * Fixture of test_elf_notes: a program whose stapsdt notes are known.
 * Provider "fix": "two" (2 arguments, in main), "zero" (none, in fix_zero)
 * and "sema" (1 argument and a semaphore, in notes_fixture_sema.c, because
 * <sys/sdt.h> decides per translation unit whether probes have semaphores).
 * fix_marker has known bytes, so the test can check what elf_symbol_offset()
 * points at.
 */
#include <sys/sdt.h>

void fix_sema(int v);
int fix_marker(void);

/* mov $0x5eed5eed,%eax; ret -- written as bytes so no compiler or
 * assembler choice can change them. */
__asm__(".pushsection .text\n"
	".globl fix_marker\n"
	".type fix_marker, @function\n"
	"fix_marker:\n"
	".byte 0xb8, 0xed, 0x5e, 0xed, 0x5e, 0xc3\n"
	".size fix_marker, 6\n"
	".popsection\n");

__attribute__((noinline)) static void fix_zero(void)
{
	DTRACE_PROBE(fix, zero);
}

int main(int argc, char **argv)
{
	long addr = (long)argv;

	DTRACE_PROBE2(fix, two, argc, addr);
	fix_zero();
	fix_sema(argc);
	return fix_marker() == 0x5eed5eed ? 0 : 1;
}
