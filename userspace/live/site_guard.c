// SPDX-License-Identifier: MIT
/*
 * Per-event probe sites that a forked child survives.
 *
 * THE PROBLEM. sp_probe.h's site is a 5-byte nop (0f 1f 44 00 00) between
 * two `lea`s that step %rsp over the red zone. Since Linux 6.18 (x86-64),
 * the first hit of a uprobe on a 5-byte nop rewrites the site into a
 * `call` to a `[uprobes-trampoline]` page the kernel maps into the process
 * (arch_uprobe_optimize()). fork() does not copy that page, but the child
 * does get the rewritten text: a child that runs the site calls into an
 * unmapped page and dies with SIGSEGV. Whoever attaches a uprobe to such a
 * site (sptrace, bpftrace, perf) kills the children of a forking target.
 *
 * THE CHOICE. Three ways out were weighed, measured on this VM (bare site
 * hit, no BPF program; docs/numbers.md):
 *  - attach at the `lea` before the nop: the kernel does not optimize a
 *    lea, but it cannot emulate one either, so every hit is single-stepped
 *    out of line: 17.6 us a hit, 83x the optimized call (212 ns);
 *  - batch every probe kind: new binaries in batched sessions would trap
 *    rarely, but Rust, old binaries, SPTRACE_PER_EVENT=1 and the per-event
 *    fallback (an exiting thread's probes) still hit nop5 sites;
 *  - keep the nop5 site a trap (int3, the nop emulated: 434-470 ns a hit,
 *    2.2x the call), by making the kernel's one optimization attempt fail.
 * The third is this file's PIN mode; the first is the fallback where it
 * does not hold (NEIGHBOUR).
 *
 * HOW A SITE IS PINNED. The optimization is tried once per uprobe -- the
 * kernel's object for one (inode, offset), shared by every consumer of it
 * in every process -- at its first hit; if it fails, the uprobe is marked
 * never to be optimized again (ARCH_UPROBE_FLAG_OPTIMIZE_FAIL) for as long
 * as it has a consumer. It fails when no trampoline page can be placed
 * within a call's reach (+-2 GiB) of the site. So before attaching a
 * file's nop5 sites, a scratch process maps the file inside a PROT_NONE
 * reservation that fills that reach, writes a `ret` behind each site in
 * its private copy, and with a no-op BPF program attached to those sites
 * for itself alone (same ref_ctr_offset as the real link: the kernel
 * refuses a mismatch), calls each site once. Each first hit happens there
 * and fails; the scratch process checks that its copy still holds the
 * int3 (not a call) and exits. The real links are then attached while the
 * pin link still holds the uprobes, so they inherit the mark; the pin link
 * is closed after. Where the scratch copy became a call all the same, the
 * file is refused. A process in which another tracer's uprobe had already
 * been made a call keeps that call until that tracer detaches.
 *
 * WHICH MODE, ONCE PER PROCESS. Not by kernel version: a self-test in
 * scratch children. A child hits a nop5 site of sptrace's own (below)
 * twice and reads it: still int3 -> the kernel keeps nop5 sites traps
 * (DIRECT). A call -> the child forks, and the grandchild looks whether
 * the call's target is mapped in it (mincore(), so nothing crashes and
 * nothing lands in the kernel log): it is -> the call survives fork
 * (DIRECT, cheapest); it is not -> pin a second site and check a third
 * child still finds int3 there: PIN, else NEIGHBOUR. SPTRACE_SITE_GUARD
 * (auto, direct, pin, neighbour) overrides it, for tests and diagnosis.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include "clock.h"
#include "guard_cache.h"
#include "log.h"
#include "proc_maps.h"
#include "site_guard.h"
#include "uprobe_multi.h"

static const unsigned char nop5_bytes[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
static const unsigned char lea_bytes[5] = { 0x48, 0x8d, 0x64, 0x24, 0x80 };

#define OP_INT3 0xcc
#define OP_CALL 0xe8
#define OP_RET 0xc3
/* A call reaches +-2 GiB; the reservation covers that on both sides. */
#define REACH (1ull << 31)

int site_guard__shape(int fd, uint64_t off, bool *nop5, bool *lea_before)
{
	unsigned char b[10];
	ssize_t r;

	*nop5 = *lea_before = false;
	if (off < 5) {
		r = pread(fd, b + 5, 5, (off_t)off);
		if (r < 0)
			return -errno;
		*nop5 = r == 5 && !memcmp(b + 5, nop5_bytes, 5);
		return 0;
	}
	r = pread(fd, b, sizeof(b), (off_t)(off - 5));
	if (r < 0)
		return -errno;
	*nop5 = r == 10 && !memcmp(b + 5, nop5_bytes, 5);
	*lea_before = r == 10 && !memcmp(b, lea_bytes, 5);
	return 0;
}

/* The no-op program the scratch processes attach: r0 = 0; exit. */
int site_guard__noop_prog(void)
{
	static int fd = -1;
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts,
		    .expected_attach_type = SP_BPF_TRACE_UPROBE_MULTI);

	if (fd < 0) {
		fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "sp_site_guard", "GPL",
				   insns, 2, &opts);
		if (fd < 0)
			fd = -errno;
	}
	return fd;
}

/*
 * First thing in a scratch child of `parent`: it dies with the thread that
 * forked it (or at once if that is gone already),
 * and keeps no descriptor but keep[0..n) (ascending): sptrace's BPF links
 * and maps must not outlive sptrace in a child that waits. System calls
 * only (the parent may have threads).
 */
void site_guard__scratch_child(pid_t parent, const int *keep, int n)
{
	unsigned int lo = 0;
	int i;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(30);
	for (i = 0; i <= n; i++) {
		unsigned int hi = i < n ? (unsigned int)keep[i] : ~0u;

		if (hi > lo)
			(void)syscall(SYS_close_range, lo, hi - 1, 0);
		lo = hi + 1;
	}
}

static void sort3(int *v)
{
	int t;

	if (v[0] > v[1])
		t = v[0], v[0] = v[1], v[1] = t;
	if (v[1] > v[2])
		t = v[1], v[1] = v[2], v[2] = t;
	if (v[0] > v[1])
		t = v[0], v[0] = v[1], v[1] = t;
}

/* Waits for child `pid`; its exit status, or 128 + the signal. */
static int child_status(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * The scratch process of pin(), after fork(): only system
 * calls and plain memory access (the parent may have threads). Exit 0: every
 * site hit and still a trap; 3: one was made a call; others: set-up failed.
 */
static void pin_child(int fd, const uint64_t *offs, size_t n, int ready,
		      int go)
{
	struct stat st;
	unsigned char *res, *m;
	uint64_t size, j;
	size_t i;
	char c;

	if (fstat(fd, &st) || st.st_size <= 0)
		_exit(10);
	size = ((uint64_t)st.st_size + 4095) & ~4095ull;
	res = mmap(NULL, size + 2 * REACH + 2 * 4096, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED)
		_exit(11);
	m = mmap(res + REACH + 4096, size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_FIXED, fd, 0);
	if (m == MAP_FAILED)
		_exit(12);
	for (i = 0; i < n; i++) {
		if (offs[i] + 6 > (uint64_t)st.st_size ||
		    memcmp(m + offs[i], nop5_bytes, 5))
			_exit(13);
		/* Behind the site, and behind any nop5 right after it (a
		 * neighbouring site), a ret: calling the site returns. */
		for (j = offs[i] + 5; j + 5 <= (uint64_t)st.st_size &&
				      !memcmp(m + j, nop5_bytes, 5); j += 5)
			;
		if (j >= (uint64_t)st.st_size)
			_exit(13);
		m[j] = OP_RET;
	}
	/* Not writable any more: the kernel installs uprobes only there. */
	if (mprotect(m, size, PROT_READ | PROT_EXEC))
		_exit(14);
	if (write(ready, "r", 1) != 1 || read(go, &c, 1) != 1)
		_exit(15);
	for (i = 0; i < n; i++) {
		((void (*)(void))(uintptr_t)(m + offs[i]))();
		if (m[offs[i]] == OP_CALL)
			_exit(3);
		if (m[offs[i]] != OP_INT3)
			_exit(16);	/* the uprobe was not installed here */
	}
	_exit(0);
}

/*
 * Closing a uprobe link waits for an RCU grace period (uprobe_unregister_
 * sync(): 10 to 60 ms, more under load). The links closed here are done
 * with (a pin whose sites the real links hold now, a self-test's probe of
 * a child that exited), so a thread closes them while sptrace goes on to
 * trace: three such waits were most of the self-test's time, one per file
 * most of attaching's. At exit the kernel closes what is left.
 */
static void *close_fd(void *arg)
{
	close((int)(intptr_t)arg);
	return NULL;
}

void site_guard__close_later(int fd)
{
	pthread_attr_t attr;
	pthread_t t;
	bool started = false;

	if (fd < 0)
		return;
	if (!pthread_attr_init(&attr)) {
		started = !pthread_attr_setdetachstate(&attr,
						       PTHREAD_CREATE_DETACHED) &&
			  !pthread_create(&t, &attr, close_fd,
					  (void *)(intptr_t)fd);
		pthread_attr_destroy(&attr);
	}
	if (!started)
		close(fd);
}

/*
 * Pins the 5-byte-nop sites at file offsets `offs` of `path`, each with the
 * ref_ctr_offset (`refs`, NULL: none) its real attachment will use (the
 * kernel refuses a second one that differs). *guard: a link fd that keeps
 * the pinned uprobes alive until the real links hold them. 0 or -errno
 * (-EPROTO: the kernel made a site a call anyway).
 */
static int pin(const char *path, const uint64_t *offs, const uint64_t *refs,
	       size_t n, int *guard)
{
	int prog = site_guard__noop_prog(), fd, ready[2] = { -1, -1 }, go[2] = { -1, -1 };
	/* -ECHILD until made: the scratch process died before it was ready */
	int link = -ECHILD, err = 0, st;
	pid_t pid, parent;
	char c;

	*guard = -1;
	if (!n)
		return 0;
	if (prog < 0)
		return prog;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (pipe2(ready, O_CLOEXEC) || pipe2(go, O_CLOEXEC)) {
		err = -errno;
		goto out;
	}
	parent = getpid();
	pid = fork();
	if (pid < 0) {
		err = -errno;
		goto out;
	}
	if (!pid) {
		int keep[3] = { fd, ready[1], go[0] };

		/* Not go[1]: its copy would keep it waiting for a "go"
		 * forever if sptrace died first. */
		sort3(keep);
		site_guard__scratch_child(parent, keep, 3);
		pin_child(fd, offs, n, ready[1], go[0]);
	}
	close(ready[1]);
	close(go[0]);
	ready[1] = go[0] = -1;
	if (read(ready[0], &c, 1) == 1) {
		link = uprobe_multi__link(prog, pid, path, offs, refs, NULL, n,
					  false);
		if (link >= 0 && write(go[1], "g", 1) != 1)
			err = -EPIPE;
	}
	close(go[1]);	/* a child still waiting for it gives up */
	go[1] = -1;
	st = child_status(pid);
	if (link < 0)
		err = link;
	else if (!err && st)
		err = st == 3 ? -EPROTO : -ECHILD;
	if (!err) {
		*guard = link;
		link = -1;
	} else {
		sp_info("%s: pinning %zu 5-byte-nop sites failed (%s; scratch process status %d)",
			path, n, strerror(-err), st);
	}
out:
	if (link >= 0)
		close(link);
	close(fd);
	if (ready[0] >= 0)
		close(ready[0]);
	if (ready[1] >= 0)
		close(ready[1]);
	if (go[0] >= 0)
		close(go[0]);
	if (go[1] >= 0)
		close(go[1]);
	return err;
}

#if defined(__x86_64__)
/* Two sites of sp_probe.h's shape in sptrace itself, as functions that
 * return: the self-test's. Hidden: their addresses need no relocation. */
__asm__(".pushsection .text.sp_site_guard, \"ax\", @progbits\n"
	".balign 16\n"
	".hidden sp_guard_site_a\n"
	"sp_guard_site_a:\n"
	"lea -128(%rsp), %rsp\n"
	"sp_guard_nop_a: .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"
	"lea 128(%rsp), %rsp\n"
	"ret\n"
	".balign 16\n"
	"sp_guard_site_b:\n"
	"lea -128(%rsp), %rsp\n"
	"sp_guard_nop_b: .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"
	"lea 128(%rsp), %rsp\n"
	"ret\n"
	".popsection\n");
extern const unsigned char sp_guard_nop_a[], sp_guard_nop_b[];
void sp_guard_site_a(void);
void sp_guard_site_b(void);

/* In the grandchild: is the target of the call at `site` mapped? */
static bool call_target_mapped(const unsigned char *site)
{
	int32_t rel;
	uintptr_t t;
	unsigned char v;

	memcpy(&rel, site + 1, sizeof(rel));
	t = (uintptr_t)site + 5 + (intptr_t)rel;
	return !mincore((void *)(t & ~(uintptr_t)4095), 1, &v);
}

/*
 * Runs `fn` (one of the sites) in a child with a no-op uprobe on its nop
 * (at file offset `off` of /proc/self/exe) for that child alone, then
 * `check` in the child, whose exit status is returned (or -errno).
 */
static int probe_in_child(uint64_t off, int (*check)(void))
{
	int prog = site_guard__noop_prog(), go[2], link, st;
	pid_t pid, parent = getpid();
	char c;

	if (prog < 0)
		return prog;
	if (pipe2(go, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		st = -errno;
		close(go[0]);
		close(go[1]);
		return st;
	}
	if (!pid) {
		site_guard__scratch_child(parent, (int[]){ go[0] }, 1);
		if (read(go[0], &c, 1) != 1)
			_exit(20);
		_exit(check());
	}
	close(go[0]);
	link = uprobe_multi__link(prog, pid, "/proc/self/exe", &off, NULL,
				  NULL, 1, false);
	if (link >= 0 && write(go[1], "g", 1) != 1)
		link = -EPIPE;
	close(go[1]);
	st = child_status(pid);
	if (link < 0)
		return link;
	site_guard__close_later(link);
	return st;
}

enum { SELF_TRAP, SELF_CALL_KEPT, SELF_CALL_LOST, SELF_ODD };

/* Site a, hit twice: still a trap, or a call that a fork keeps or not. */
static int check_site_a(void)
{
	pid_t pid;
	int st;

	sp_guard_site_a();
	sp_guard_site_a();
	if (sp_guard_nop_a[0] == OP_INT3)
		return SELF_TRAP;
	if (sp_guard_nop_a[0] != OP_CALL)
		return SELF_ODD;
	pid = fork();
	if (pid < 0)
		return SELF_ODD;
	if (!pid) {
		if (!call_target_mapped(sp_guard_nop_a))
			_exit(SELF_CALL_LOST);
		sp_guard_site_a();	/* mapped: it must also work */
		_exit(SELF_CALL_KEPT);
	}
	st = child_status(pid);
	return st == SELF_CALL_KEPT || st == SELF_CALL_LOST ? st :
						    SELF_CALL_LOST;
}

/* Site b, pinned beforehand, hit twice: still a trap? */
static int check_site_b(void)
{
	sp_guard_site_b();
	sp_guard_site_b();
	return sp_guard_nop_b[0] == OP_INT3 ? 0 : 1;
}

static int self_test(enum site_guard_mode *mode, const char **why, bool *keep)
{
	uint64_t off_a, off_b;
	int st, guard, err;

	err = proc_maps__self_offset(sp_guard_nop_a, &off_a);
	if (!err)
		err = proc_maps__self_offset(sp_guard_nop_b, &off_b);
	if (err)
		return err;
	st = probe_in_child(off_a, check_site_a);
	*keep = st == SELF_TRAP || st == SELF_CALL_KEPT ||
		st == SELF_CALL_LOST;
	if (st < 0) {
		/* No uprobe_multi (before Linux 6.6): no kernel that old
		 * optimizes uprobes. */
		*mode = SITE_GUARD_DIRECT;
		*why = "this kernel has no uprobe_multi links, so no optimized uprobes: sites stay traps";
		return 0;
	}
	if (st == SELF_TRAP || st == SELF_CALL_KEPT) {
		*mode = SITE_GUARD_DIRECT;
		*why = st == SELF_TRAP ?
			"this kernel keeps a uprobe on a 5-byte nop a trap" :
			"this kernel makes a uprobe on a 5-byte nop a call that forked children keep";
		return 0;
	}
	if (st != SELF_CALL_LOST)
		sp_info("site self-test: unexpected status %d; guarding sites",
			st);
	err = pin("/proc/self/exe", &off_b, NULL, 1, &guard);
	st = err ? -1 : probe_in_child(off_b, check_site_b);
	site_guard__close_later(guard);
	/* A NEIGHBOUR verdict is not kept: a pin that failed may work in
	 * the next run, which then costs a test again. */
	*keep = *keep && st == 0;
	if (st == 0) {
		*mode = SITE_GUARD_PIN;
		*why = "this kernel makes a uprobe on a 5-byte nop a call that a forked child cannot follow: sites are pinned to the trap path";
	} else {
		*mode = SITE_GUARD_NEIGHBOUR;
		*why = "this kernel makes a uprobe on a 5-byte nop a call that a forked child cannot follow, and pinning failed: sites are probed at their lea (single-stepped, slow)";
	}
	return 0;
}
#else
static int self_test(enum site_guard_mode *mode, const char **why, bool *keep)
{
	*keep = false;
	*mode = SITE_GUARD_DIRECT;
	*why = "no optimized uprobes on this architecture";
	return 0;
}
#endif

static const struct {
	const char *name;
	enum site_guard_mode mode;
	const char *kept;	/* -v's sentence for a verdict read back */
} modes[] = {
	{ "direct", SITE_GUARD_DIRECT,
	  "this kernel's uprobes on 5-byte nops are safe for forked children as they are" },
	{ "pin", SITE_GUARD_PIN,
	  "this kernel makes a uprobe on a 5-byte nop a call that a forked child cannot follow: sites are pinned to the trap path" },
	{ "neighbour", SITE_GUARD_NEIGHBOUR,
	  "sites are probed at their lea (single-stepped, slow)" },
};
#define NMODES (sizeof(modes) / sizeof(modes[0]))

static const char *mode_name(enum site_guard_mode m)
{
	size_t i;

	for (i = 0; i < NMODES; i++)
		if (modes[i].mode == m)
			return modes[i].name;
	return "?";
}

/* This boot's verdict, read back (guard_cache.c): true with *mode and
 * *why set, or false (none, stale, not believed: test). */
static bool kept_verdict(enum site_guard_mode *mode, const char **why)
{
	static char line[256];
	char name[32];
	size_t i;

	if (guard_cache__read(name, sizeof(name)))
		return false;
	for (i = 0; i < NMODES; i++)
		if (!strcmp(name, modes[i].name)) {
			snprintf(line, sizeof(line), "%s (this boot's self-test, kept in %s)",
				 modes[i].kept, guard_cache__path());
			*mode = modes[i].mode;
			*why = line;
			return true;
		}
	return false;
}

/* The self-test, and its verdict kept for the boot when it is clean. */
static void test_sites(enum site_guard_mode *mode, const char **why)
{
	bool keep = false;
	int err;

	if (self_test(mode, why, &keep)) {
		/* Cannot tell: the safe way that always works. */
		*mode = SITE_GUARD_NEIGHBOUR;
		*why = "the site self-test failed: sites are probed at their lea (single-stepped, slow)";
		return;
	}
	if (!keep)
		return;
	err = guard_cache__write(mode_name(*mode));
	if (err)
		sp_info("site self-test: verdict not kept in %s: %s (the next run tests again)",
			guard_cache__path(), strerror(-err));
}

int site_guard__mode(enum site_guard_mode *mode, const char **why)
{
	static int done, saved_err;
	static enum site_guard_mode saved;
	static const char *saved_why;
	const char *e = getenv("SPTRACE_SITE_GUARD");
	size_t i;

	if (!done) {
		uint64_t t0 = now_ns();

		done = 1;
		saved_err = 0;
		if (!e || !*e || !strcmp(e, "auto")) {
			if (!kept_verdict(&saved, &saved_why))
				test_sites(&saved, &saved_why);
		} else if (!strcmp(e, "retest")) {
			test_sites(&saved, &saved_why);
		} else {
			saved_err = -EINVAL;
			for (i = 0; i < NMODES; i++)
				if (!strcmp(e, modes[i].name)) {
					saved = modes[i].mode;
					saved_why = "SPTRACE_SITE_GUARD";
					saved_err = 0;
				}
		}
		if (saved_err)
			sp_err("SPTRACE_SITE_GUARD=%s: not a site guard mode (auto, retest, direct, pin or neighbour)",
			       e);
		else
			sp_info("5-byte-nop probe sites: %s (decided in %.1f ms)",
				saved_why, (double)(now_ns() - t0) / 1e6);
	}
	*mode = saved;
	if (why)
		*why = saved_why;
	return saved_err;
}

bool site_guard__forced(void)
{
	const char *e = getenv("SPTRACE_SITE_GUARD");

	return e && *e && strcmp(e, "auto") && strcmp(e, "retest");
}

static pthread_t decider;
static bool deciding;
static int decided_err;

static void *decide(void *arg)
{
	enum site_guard_mode mode;

	(void)arg;
	decided_err = site_guard__mode(&mode, NULL);
	return NULL;
}

int site_guard__decide(void)
{
	const char *e = getenv("SPTRACE_SITE_GUARD");
	enum site_guard_mode mode;

	if ((!e || !*e || !strcmp(e, "auto") || !strcmp(e, "retest")) &&
	    !pthread_create(&decider, NULL, decide, NULL)) {
		deciding = true;
		return 0;
	}
	return site_guard__mode(&mode, NULL);
}

int site_guard__decided(void)
{
	if (!deciding)
		return 0;
	pthread_join(decider, NULL);
	deciding = false;
	return decided_err;
}

/* The target or its file went away meanwhile (a /proc/PID/map_files path
 * of a process that exited): the caller says so, as for any attach. */
static bool vanished(int err)
{
	return err == -ENOENT || err == -ESRCH;
}

int site_guard__prepare(const char *open_path, const char *path,
			uint64_t *offs, const uint64_t *refs, size_t n,
			bool movable, struct site_guard *g)
{
	enum site_guard_mode mode;
	uint64_t *pin_offs = NULL, *pin_refs = NULL;
	bool nop5, lea;
	size_t i, np = 0;
	int fd, err;

	memset(g, 0, sizeof(*g));
	g->fd = -1;
	err = site_guard__mode(&mode, NULL);
	if (err || mode == SITE_GUARD_DIRECT || !n)
		return err;
	fd = open(open_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		if (!vanished(err))
			sp_err("%s: cannot read its probe sites: %s", path,
			       strerror(-err));
		return err;
	}
	pin_offs = calloc(n, sizeof(*pin_offs));
	pin_refs = calloc(n, sizeof(*pin_refs));
	if (!pin_offs || !pin_refs) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		err = site_guard__shape(fd, offs[i], &nop5, &lea);
		if (err) {
			sp_err("%s: cannot read its probe site at file offset 0x%llx: %s",
			       path, (unsigned long long)offs[i],
			       strerror(-err));
			goto out;
		}
		if (!nop5)
			continue;
		if (mode == SITE_GUARD_PIN) {
			pin_offs[np] = offs[i];
			pin_refs[np++] = refs ? refs[i] : 0;
		} else if (movable && lea) {
			offs[i] -= 5;
			g->moved++;
		} else {
			offs[i] = SITE_GUARD_DROP;
			g->dropped++;
		}
	}
	if (np) {
		uint64_t t0 = now_ns();

		err = pin(open_path, pin_offs, pin_refs, np, &g->fd);
		g->pin_ns = now_ns() - t0;
		if (err && !vanished(err))
			sp_err("%s: cannot keep its %zu per-event probe sites safe for forked children: %s",
			       path, np, err == -EPROTO ?
			       "this kernel made them calls all the same (SPTRACE_SITE_GUARD=neighbour is slower but safe: docs/troubleshooting.md)" :
			       strerror(-err));
		else
			g->pinned = np;
	}
out:
	free(pin_offs);
	free(pin_refs);
	close(fd);
	return err;
}

void site_guard__release(struct site_guard *g)
{
	site_guard__close_later(g->fd);
	g->fd = -1;
}
