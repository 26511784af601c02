// SPDX-License-Identifier: MIT
/*
 * Unit test of usdt_args__parse(): the operand forms GCC and Clang emit
 * through <sys/sdt.h>, and the errors for malformed and unsupported specs.
 */
#include <errno.h>
#include <string.h>
#include "check.h"
#include "usdt_args.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static bool arg_is(const struct usdt_arg *a, enum usdt_arg_kind kind,
		   int size, bool is_signed, const char *reg, int64_t val_off)
{
	return a->kind == kind && a->size == size && a->is_signed == is_signed &&
	       !strcmp(a->reg, reg) && a->val_off == val_off;
}

static void test_mixed(void)
{
	struct usdt_arg a[USDT_ARGS_MAX];
	int n;

	n = usdt_args__parse("-8@%rdi -4@%esi 8@$5 -4@-24(%rbp) 2@%ax "
			     "1@%dil 8@(%rax) 8@%r8", a, USDT_ARGS_MAX);
	CHECK(n == 8);
	if (n != 8)
		return;
	CHECK(arg_is(&a[0], USDT_ARG_REG, 8, true, "rdi", 0));
	CHECK(arg_is(&a[1], USDT_ARG_REG, 4, true, "rsi", 0));
	CHECK(arg_is(&a[2], USDT_ARG_CONST, 8, false, "", 5));
	CHECK(arg_is(&a[3], USDT_ARG_REG_DEREF, 4, true, "rbp", -24));
	CHECK(arg_is(&a[4], USDT_ARG_REG, 2, false, "rax", 0));
	CHECK(arg_is(&a[5], USDT_ARG_REG, 1, false, "rdi", 0));
	CHECK(arg_is(&a[6], USDT_ARG_REG_DEREF, 8, false, "rax", 0));
	CHECK(arg_is(&a[7], USDT_ARG_REG, 8, false, "r8", 0));
}

/* Each sub-register name maps to its 64-bit register. */
static void test_registers(void)
{
	static const struct { const char *spec, *reg; } cases[] = {
		{ "8@%rax", "rax" }, { "4@%eax", "rax" }, { "2@%ax", "rax" },
		{ "1@%al", "rax" }, { "1@%bl", "rbx" }, { "4@%ecx", "rcx" },
		{ "2@%dx", "rdx" }, { "1@%sil", "rsi" }, { "2@%di", "rdi" },
		{ "1@%bpl", "rbp" }, { "4@%esp", "rsp" }, { "1@%spl", "rsp" },
		{ "4@%r8d", "r8" }, { "2@%r9w", "r9" }, { "1@%r10b", "r10" },
		{ "8@%r11", "r11" }, { "4@%r12d", "r12" }, { "8@%r13", "r13" },
		{ "2@%r14w", "r14" }, { "1@%r15b", "r15" },
	};
	struct usdt_arg a;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		memset(&a, 0x5a, sizeof(a));
		CHECK(usdt_args__parse(cases[i].spec, &a, 1) == 1);
		CHECK(a.kind == USDT_ARG_REG);
		CHECK_STR(a.reg, cases[i].reg);
	}
}

static void test_numbers(void)
{
	static const struct { const char *spec; int64_t v; } cases[] = {
		{ "8@$0", 0 }, { "-8@$-1", -1 }, { "4@$0x10", 16 },
		{ "4@$0X1f", 31 }, { "4@$010", 8 },	/* octal, as gas */
		{ "8@$9223372036854775807", INT64_MAX },
		{ "-8@$-9223372036854775808", INT64_MIN },
		{ "8@$0xffffffffffffffff", -1 },	/* bit pattern kept */
		{ "8@0x20(%rsp)", 32 }, { "-4@-0x8(%rbp)", -8 },
	};
	struct usdt_arg a;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		memset(&a, 0, sizeof(a));
		CHECK(usdt_args__parse(cases[i].spec, &a, 1) == 1);
		CHECK_U64((uint64_t)a.val_off, (uint64_t)cases[i].v);
	}
}

static void test_blanks_and_empty(void)
{
	struct usdt_arg a[3];

	CHECK(usdt_args__parse("", a, 3) == 0);
	CHECK(usdt_args__parse("   ", a, 3) == 0);
	CHECK(usdt_args__parse("", NULL, 0) == 0);
	CHECK(usdt_args__parse("  8@%rdi\t -4@%esi  ", a, 3) == 2);
	CHECK(arg_is(&a[1], USDT_ARG_REG, 4, true, "rsi", 0));
}

static void test_errors(void)
{
	static const struct { const char *spec; int err; } cases[] = {
		{ "8@", -EINVAL },
		{ "@%rdi", -EINVAL },
		{ "-@%rdi", -EINVAL },
		{ "8@%bogus", -EINVAL },
		{ "x@%rdi", -EINVAL },
		{ "8@%rdi extra junk", -EINVAL },
		{ "%rdi", -EINVAL },			/* legacy, no size */
		{ "3@%rdi", -EINVAL },
		{ "16@%rdi", -EINVAL },
		{ "08@%rdi", -EINVAL },
		{ "+8@%rdi", -EINVAL },
		{ "8@%", -EINVAL },
		{ "8@%RDI", -EINVAL },
		{ "8@%xmm0", -EINVAL },
		{ "8@%fs", -EINVAL },
		{ "8@$", -EINVAL },
		{ "8@$-", -EINVAL },
		{ "8@$0x", -EINVAL },
		{ "8@$12a", -EINVAL },
		{ "8@$09", -EINVAL },			/* not octal */
		{ "8@$18446744073709551616", -EINVAL },	/* 2^64 */
		{ "8@$-9223372036854775809", -EINVAL },
		{ "8@(%rax", -EINVAL },
		{ "8@%rax)", -EINVAL },
		{ "8@()", -EINVAL },
		{ "8@(rax)", -EINVAL },
		{ "8@-(%rax)", -EINVAL },
		{ "8@4(%rax))", -EINVAL },
		{ "8@4(%rax)x", -EINVAL },
		{ "8@4(%bogus)", -EINVAL },
		{ "8@4(%rax,%rbx,8)", -EOPNOTSUPP },
		{ "8@(,%rbx,8)", -EOPNOTSUPP },
		{ "4@counter(%rip)", -EOPNOTSUPP },
		{ "4@8(%rip)", -EOPNOTSUPP },
		{ "8@$sym", -EOPNOTSUPP },
		{ "8@.LC0+8(%rax)", -EOPNOTSUPP },
		{ "8@1234", -EOPNOTSUPP },		/* absolute address */
		{ "1@%ah", -EOPNOTSUPP },
		{ "8@%rip", -EOPNOTSUPP },
	};
	struct usdt_arg a[USDT_ARGS_MAX];
	size_t i;
	int rc;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		rc = usdt_args__parse(cases[i].spec, a, USDT_ARGS_MAX);
		CHECK(rc == cases[i].err);
		if (rc != cases[i].err)
			printf("  spec '%s' gave %d, want %d\n", cases[i].spec,
			       rc, cases[i].err);
	}
	CHECK(usdt_args__parse(NULL, a, 1) == -EINVAL);
	CHECK(usdt_args__parse("8@%rdi", NULL, 1) == -EINVAL);
	CHECK(usdt_args__parse("8@%rdi", a, -1) == -EINVAL);
	/* The first bad item decides, even after good ones. */
	CHECK(usdt_args__parse("8@%rdi 4@%esi 8@%bogus", a, 3) == -EINVAL);
}

static void test_limits(void)
{
	static const char twelve[] = "8@%rax 8@%rbx 8@%rcx 8@%rdx 8@%rsi "
				     "8@%rdi 8@%rbp 8@%rsp 8@%r8 8@%r9 "
				     "8@%r10 8@%r11";
	struct usdt_arg a[USDT_ARGS_MAX + 1];

	CHECK(usdt_args__parse(twelve, a, USDT_ARGS_MAX) == 12);
	CHECK(!strcmp(a[11].reg, "r11"));
	CHECK(usdt_args__parse(twelve, a, 11) == -E2BIG);
	/* 13 items fail even when the caller has room for them. */
	CHECK(usdt_args__parse("8@%r12 8@%rax 8@%rbx 8@%rcx 8@%rdx 8@%rsi "
			       "8@%rdi 8@%rbp 8@%rsp 8@%r8 8@%r9 8@%r10 "
			       "8@%r11", a, USDT_ARGS_MAX + 1) == -E2BIG);
	CHECK(usdt_args__parse("8@%rdi", a, 0) == -E2BIG);
}

int main(void)
{
	RUN(test_mixed);
	RUN(test_registers);
	RUN(test_numbers);
	RUN(test_blanks_and_empty);
	RUN(test_errors);
	RUN(test_limits);
	return check_status();
}
