/* SPDX-License-Identifier: MIT */
/*
 * Keeping a traced process's forked children alive: how a per-event probe
 * site on a 5-byte nop is attached on this kernel (see site_guard.c).
 */
#ifndef SPTRACE_SITE_GUARD_H
#define SPTRACE_SITE_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum site_guard_mode {
	/* Attach at the nop: this kernel keeps the uprobe a trap there, or
	 * the call it makes of it survives fork(). */
	SITE_GUARD_DIRECT,
	/* Pin each site to the trap path before attaching it (a failed
	 * optimization in a scratch process; site_guard.c). */
	SITE_GUARD_PIN,
	/* Attach at the `lea -128(%rsp),%rsp` before the nop, which the kernel
	 * single-steps: safe everywhere, ~20 us a hit. */
	SITE_GUARD_NEIGHBOUR,
};

/*
 * The mode for this kernel, decided once per process: SPTRACE_SITE_GUARD
 * (auto, direct, pin, neighbour) if set, else a self-test in scratch
 * children. *why (may be NULL) gets a sentence for -v. A bad
 * SPTRACE_SITE_GUARD is -EINVAL (said in one line).
 */
int site_guard__mode(enum site_guard_mode *mode, const char **why);

/*
 * site_guard__mode() started in a thread, so that its self-test (scratch
 * children and their uprobes, 90 to 180 ms) runs beside the BPF load;
 * site_guard__decided() waits for it, before anything is attached. A mode
 * SPTRACE_SITE_GUARD names (or no thread) is decided at once, and a bad
 * value is still refused before anything loads. 0 or -errno.
 */
int site_guard__decide(void);
/* SPTRACE_SITE_GUARD names a mode (tests, diagnosis), not the self-test. */
bool site_guard__forced(void);
int site_guard__decided(void);

/* The instruction at file offset `off` of the file open as fd: a 5-byte
 * nop (0f 1f 44 00 00)? And is the one before it sp_probe.h's
 * `lea -128(%rsp),%rsp` (48 8d 64 24 80)? 0 or -errno. */
int site_guard__shape(int fd, uint64_t off, bool *nop5, bool *lea_before);

/* A uprobe_multi program that does nothing (r0 = 0), loaded once: for
 * scratch processes that only need a site to trap. Its fd or -errno. */
int site_guard__noop_prog(void);

/*
 * First thing in a scratch child forked by `parent`: it dies with the
 * thread that forked it, and keeps no descriptor but keep[0..n)
 * (ascending). System calls only.
 */
void site_guard__scratch_child(pid_t parent, const int *keep, int n);
/* Closes a uprobe link fd that is done with, in a thread: the close waits
 * for an RCU grace period (10 to 60 ms). */
void site_guard__close_later(int fd);

/* site_guard__prepare()'s mark of a site that cannot be attached safely. */
#define SITE_GUARD_DROP UINT64_MAX

struct site_guard {
	size_t pinned;	/* 5-byte-nop sites pinned to the trap path */
	size_t moved;	/* moved onto the lea before them */
	size_t dropped;	/* set to SITE_GUARD_DROP */
	uint64_t pin_ns;	/* how long pinning took */
	int fd;		/* close() once the real links hold the sites; -1 */
};

/*
 * Makes the uprobe sites at file offsets offs[0..n) of `open_path` (`path`
 * in messages), about to be attached with the ref_ctr_offsets `refs` (NULL:
 * none), safe for the target's forked children on this kernel. Only sites
 * on a 5-byte nop need it. PIN: they are pinned to the trap path. NEIGHBOUR:
 * with `movable` (sp_probe.h's sites, whose every argument is in a register
 * on the lea before the nop too), a site preceded by that lea moves onto
 * it (offs[i] -= 5); any other becomes SITE_GUARD_DROP. 0 or -errno, said
 * in one line but for -ENOENT and -ESRCH (the target or the file vanished
 * meanwhile), which the caller reports as for any attach.
 */
int site_guard__prepare(const char *open_path, const char *path,
			uint64_t *offs, const uint64_t *refs, size_t n,
			bool movable, struct site_guard *g);

/* Lets the pinned sites go once the real links hold them (or failed). */
void site_guard__release(struct site_guard *g);

#endif /* SPTRACE_SITE_GUARD_H */
