/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Reading an sp probe argument in a BPF uprobe program: the attach cookie
 * names, one byte per argument, the register that holds it (enum sp_reg of
 * include/sptrace/query_abi.h, written by userspace/attach.c). BPF only.
 */
#ifndef SPTRACE_SP_REGS_BPF_H
#define SPTRACE_SP_REGS_BPF_H

#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <sptrace/query_abi.h>

/*
 * Loads one pt_regs field. Written as asm because clang would otherwise
 * merge the loads of all switch cases into one load from a computed ctx
 * offset, which the verifier rejects ("dereference of modified ctx ptr").
 */
#define SP_CTX_REG(ctx, field)                                                 \
	({                                                                     \
		__u64 __v;                                                     \
		asm volatile("%0 = *(u64 *)(%1 + %2)"                          \
			     : "=r"(__v)                                       \
			     : "r"(ctx),                                       \
			       "i"(__builtin_offsetof(struct pt_regs, field))); \
		__v;                                                           \
	})

static __always_inline __u64 sp_reg_value(struct pt_regs *ctx,
					  unsigned int reg)
{
	switch (reg) {
	case SP_REG_RAX: return SP_CTX_REG(ctx, rax);
	case SP_REG_RBX: return SP_CTX_REG(ctx, rbx);
	case SP_REG_RCX: return SP_CTX_REG(ctx, rcx);
	case SP_REG_RDX: return SP_CTX_REG(ctx, rdx);
	case SP_REG_RSI: return SP_CTX_REG(ctx, rsi);
	case SP_REG_RDI: return SP_CTX_REG(ctx, rdi);
	case SP_REG_RBP: return SP_CTX_REG(ctx, rbp);
	case SP_REG_R8: return SP_CTX_REG(ctx, r8);
	case SP_REG_R9: return SP_CTX_REG(ctx, r9);
	case SP_REG_R10: return SP_CTX_REG(ctx, r10);
	case SP_REG_R11: return SP_CTX_REG(ctx, r11);
	case SP_REG_R12: return SP_CTX_REG(ctx, r12);
	case SP_REG_R13: return SP_CTX_REG(ctx, r13);
	case SP_REG_R14: return SP_CTX_REG(ctx, r14);
	case SP_REG_R15: return SP_CTX_REG(ctx, r15);
	default: return 0;
	}
}

/* Argument i of the sp probe that fired. */
static __always_inline __u64 sp_probe_arg(struct pt_regs *ctx, unsigned int i)
{
	return sp_reg_value(ctx, SP_COOKIE_ARG(bpf_get_attach_cookie(ctx), i));
}

#endif /* SPTRACE_SP_REGS_BPF_H */
