// SPDX-License-Identifier: MIT
/*
 * USDT argument spec parser (x86-64, SystemTap v3 notes).
 *
 * <sys/sdt.h> has the compiler print each argument as an asm operand with
 * the constraint "nor" (immediate, offsettable memory or register) behind
 * the size: "N@" with N the byte size of the C type, negative when it is
 * signed. So an item is one of
 *	-4@%edi		register (a sub-register of a 64-bit one)
 *	8@$5		immediate
 *	-4@-24(%rbp)	memory at register + displacement
 * and, for operands the BPF side cannot fetch without symbol resolution or
 * an index register, forms we recognise only to refuse with -EOPNOTSUPP
 * rather than call malformed: sym(%rip), (%rax,%rbx,8), $sym. The caller can
 * then say "unsupported argument" and still attach, skipping that argument.
 *
 * The spec comes from a file we do not trust: everything is parsed within
 * the item's bounds, by hand, without strtol's locale, base guessing and
 * leading-blank skipping.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include "usdt_args.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* 64-bit register first, then its 32-, 16- and low 8-bit parts. */
static const char *const reg_families[][4] = {
	{ "rax", "eax", "ax", "al" },	{ "rbx", "ebx", "bx", "bl" },
	{ "rcx", "ecx", "cx", "cl" },	{ "rdx", "edx", "dx", "dl" },
	{ "rsi", "esi", "si", "sil" },	{ "rdi", "edi", "di", "dil" },
	{ "rbp", "ebp", "bp", "bpl" },	{ "rsp", "esp", "sp", "spl" },
	{ "r8", "r8d", "r8w", "r8b" },	{ "r9", "r9d", "r9w", "r9b" },
	{ "r10", "r10d", "r10w", "r10b" }, { "r11", "r11d", "r11w", "r11b" },
	{ "r12", "r12d", "r12w", "r12b" }, { "r13", "r13d", "r13w", "r13b" },
	{ "r14", "r14d", "r14w", "r14b" }, { "r15", "r15d", "r15w", "r15b" },
};

/*
 * Registers that exist but cannot be read as "low N bytes of a pt_regs
 * slot": %ah..%dh are bits 8..15, and %rip at a uprobe is the probe address,
 * not what the compiler meant by a %rip-relative operand.
 */
static const char *const unsupported_regs[] = {
	"ah", "bh", "ch", "dh", "rip", "eip",
};

static bool token_is(const char *s, size_t len, const char *name)
{
	return strlen(name) == len && !memcmp(s, name, len);
}

/* s..s+len is a register name without '%'; reg gets the 64-bit name. */
static int parse_reg(const char *s, size_t len, char reg[8])
{
	size_t i, j;

	for (i = 0; i < ARRAY_SIZE(reg_families); i++) {
		for (j = 0; j < ARRAY_SIZE(reg_families[i]); j++) {
			if (!token_is(s, len, reg_families[i][j]))
				continue;
			strcpy(reg, reg_families[i][0]);
			return 0;
		}
	}
	for (i = 0; i < ARRAY_SIZE(unsupported_regs); i++)
		if (token_is(s, len, unsupported_regs[i]))
			return -EOPNOTSUPP;
	return -EINVAL;
}

static int digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return 99;
}

/*
 * The whole of s..end as an assembler integer: [-] then 0x hex, 0 octal or
 * decimal. Magnitudes up to UINT64_MAX are taken (an 8-byte unsigned
 * constant), keeping their bit pattern in *v; negative ones down to
 * INT64_MIN.
 */
static int parse_number(const char *s, const char *end, int64_t *v)
{
	uint64_t mag = 0;
	bool neg = false;
	unsigned int base = 10;
	int d;

	if (s < end && *s == '-') {
		neg = true;
		s++;
	}
	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	} else if (end - s > 1 && s[0] == '0') {
		base = 8;
		s++;
	}
	if (s >= end)
		return -EINVAL;
	for (; s < end; s++) {
		d = digit_value(*s);
		if (d >= (int)base)
			return -EINVAL;
		if (mag > (UINT64_MAX - (uint64_t)d) / base)
			return -EINVAL;
		mag = mag * base + (uint64_t)d;
	}
	if (neg && mag > (uint64_t)INT64_MAX + 1)
		return -EINVAL;
	/* Conversion keeps the bit pattern with GCC and Clang. */
	*v = neg ? (int64_t)(~mag + 1) : (int64_t)mag;
	return 0;
}

/* Could this start an assembler symbol expression ("sym", ".LC0+8")? */
static bool is_symbol_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       c == '.';
}

static int parse_immediate(const char *s, const char *end,
			   struct usdt_arg *arg)
{
	if (parse_number(s, end, &arg->val_off))
		return s < end && is_symbol_start(*s) ? -EOPNOTSUPP : -EINVAL;
	arg->kind = USDT_ARG_CONST;
	return 0;
}

/* "disp(%base)" with optional disp; ",%index,scale" is refused. */
static int parse_memory(const char *s, const char *end, struct usdt_arg *arg)
{
	const char *open, *in, *in_end, *comma;
	int err;

	open = memchr(s, '(', (size_t)(end - s));
	if (!open) {
		/* An absolute address or a bare symbol: valid, not for us. */
		if (!parse_number(s, end, &arg->val_off) || is_symbol_start(*s))
			return -EOPNOTSUPP;
		return -EINVAL;
	}
	in = open + 1;
	in_end = end - 1;
	if (in > in_end || *in_end != ')')
		return -EINVAL;
	comma = memchr(in, ',', (size_t)(in_end - in));
	if (!comma)
		comma = in_end;
	if (in == comma)	/* "(,%rax,8)": index without a base */
		return comma < in_end ? -EOPNOTSUPP : -EINVAL;
	if (*in != '%')
		return -EINVAL;
	err = parse_reg(in + 1, (size_t)(comma - in - 1), arg->reg);
	if (err)
		return err;
	if (comma < in_end)
		return -EOPNOTSUPP;

	arg->val_off = 0;
	if (s < open && parse_number(s, open, &arg->val_off))
		return is_symbol_start(*s) ? -EOPNOTSUPP : -EINVAL;
	arg->kind = USDT_ARG_REG_DEREF;
	return 0;
}

static int parse_operand(const char *s, const char *end, struct usdt_arg *arg)
{
	int err;

	if (s >= end)
		return -EINVAL;
	if (*s == '$')
		return parse_immediate(s + 1, end, arg);
	if (*s != '%')
		return parse_memory(s, end, arg);
	err = parse_reg(s + 1, (size_t)(end - s - 1), arg->reg);
	if (err)
		return err;
	arg->kind = USDT_ARG_REG;
	arg->val_off = 0;
	return 0;
}

/* One item "[-]N@OPERAND", s..end without blanks. */
static int parse_item(const char *s, const char *end, struct usdt_arg *arg)
{
	memset(arg, 0, sizeof(*arg));
	if (s < end && *s == '-') {
		arg->is_signed = true;
		s++;
	}
	/* Exactly one digit: "08@" or "16@" are nothing we can fetch. */
	if (end - s < 2 || s[1] != '@')
		return -EINVAL;
	switch (s[0]) {
	case '1': case '2': case '4': case '8':
		arg->size = s[0] - '0';
		break;
	default:
		return -EINVAL;
	}
	return parse_operand(s + 2, end, arg);
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

int usdt_args__parse(const char *spec, struct usdt_arg *args, int max_args)
{
	const char *p, *item;
	int n = 0, err;

	if (!spec || max_args < 0 || (max_args && !args))
		return -EINVAL;
	if (max_args > USDT_ARGS_MAX)
		max_args = USDT_ARGS_MAX;
	for (p = spec;;) {
		while (is_blank(*p))
			p++;
		if (!*p)
			break;
		item = p;
		while (*p && !is_blank(*p))
			p++;
		if (n >= max_args)
			return -E2BIG;
		err = parse_item(item, p, &args[n]);
		if (err)
			return err;
		n++;
	}
	return n;
}
