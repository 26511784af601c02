/* SPDX-License-Identifier: MIT */
/*
 * Parser of a USDT probe's argument spec, the third string of its stapsdt
 * note ("-4@%edi 8@$5 -8@-24(%rbp)"), into what the BPF side needs to fetch
 * each argument: a constant, a register, or a load from register + offset.
 * x86-64 (AT&T syntax, as GCC and Clang print operands) only.
 */
#ifndef SPTRACE_USDT_ARGS_H
#define SPTRACE_USDT_ARGS_H

#include <stdbool.h>
#include <stdint.h>

/* <sys/sdt.h> supports at most 12 arguments. */
#define USDT_ARGS_MAX 12

enum usdt_arg_kind {
	USDT_ARG_CONST,		/* val_off is the value */
	USDT_ARG_REG,		/* the value is in reg */
	USDT_ARG_REG_DEREF,	/* the value is at reg + val_off */
};

struct usdt_arg {
	enum usdt_arg_kind kind;
	int size;		/* 1, 2, 4 or 8 bytes */
	bool is_signed;
	char reg[8];		/* 64-bit register without '%' ("rdi", "r8"), "" for CONST */
	int64_t val_off;	/* constant value, or deref offset */
};

/*
 * Parses an x86-64 SystemTap v3 argument spec: items "[-]N@OPERAND"
 * separated by blanks, N in 1, 2, 4, 8 ('-' = signed), OPERAND one of %reg,
 * $imm, off(%reg), (%reg). Numbers are decimal, 0x hex or 0 octal, as the
 * assembler reads them. Sub-registers map to their 64-bit register (%eax,
 * %ax, %al -> rax; %r8d -> r8): the size N says how many low bytes count.
 *
 * Returns the number of arguments (0 for "") or:
 * -EINVAL     malformed item, an item without "N@", an unknown register
 *             (%xmm0, %fs, ...);
 * -EOPNOTSUPP a valid operand we cannot fetch: index forms
 *             off(%base,%index,scale), symbolic offsets (sym(%rip), $sym),
 *             %rip, absolute addresses, high-byte registers (%ah..%dh);
 * -E2BIG      more items than max_args (or than USDT_ARGS_MAX).
 * args[] is filled only up to the first error.
 */
int usdt_args__parse(const char *spec, struct usdt_arg *args, int max_args);

#endif /* SPTRACE_USDT_ARGS_H */
