// SPDX-License-Identifier: MIT
/*
 * The memory provider: loads bpf/mem.bpf.c, binds the typed sp probes
 * through the attacher (as the query provider does), and attaches the libc
 * allocator of each target itself: an entry uprobe and a return uprobe on
 * malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign, valloc
 * and pvalloc, an entry uprobe on free, at file offsets found in the
 * symbol table of the libc the target maps (or of a statically linked
 * executable that kept its symbols). Aliases (glibc's aligned_alloc is
 * memalign) are attached once.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "clock.h"
#include "elf_notes.h"
#include "log.h"
#include "mem.skel.h"
#include "mem_provider.h"
#include "site_guard.h"
#include "privileges.h"
#include "proc_maps.h"
#include "vec.h"

_Static_assert(sizeof(struct sp_mem_key) == 24, "sp_mem_key layout");
_Static_assert(offsetof(struct sp_mem_key, src) == 16, "sp_mem_key layout");
_Static_assert(sizeof(struct sp_mem_stats) == 7 * 8 + SP_MEM_COMM_LEN,
	       "sp_mem_stats layout");
_Static_assert(sizeof(struct sp_mem_site_key) == 24, "sp_mem_site_key layout");
_Static_assert(offsetof(struct sp_mem_site_key, stackid) == 8,
	       "sp_mem_site_key layout");
_Static_assert(sizeof(struct sp_mem_site) == 32, "sp_mem_site layout");
_Static_assert(sizeof(struct sp_mem_live_key) == 16, "sp_mem_live_key layout");
_Static_assert(sizeof(struct sp_mem_live) == 24, "sp_mem_live layout");
_Static_assert(sizeof(struct sp_mem_call) == 40, "sp_mem_call layout");
_Static_assert(offsetof(struct sp_mem_call, fn) == 24, "sp_mem_call layout");
_Static_assert(sizeof(struct sp_mem_thread_name) == 16 + SP_MEM_THREAD_NAME_LEN,
	       "sp_mem_thread_name layout");
_Static_assert(sizeof(struct sp_mem_type_key) == 16, "sp_mem_type_key layout");
_Static_assert(SP_MEM_TYPE_NAME_LEN == SP_NAME_LEN, "type names as query names");

static const struct {
	const char *sym;
	enum sp_mem_fn fn;
} heap_fns[] = {
	{ "malloc", SP_MEM_FN_MALLOC },
	{ "calloc", SP_MEM_FN_CALLOC },
	{ "realloc", SP_MEM_FN_REALLOC },
	{ "posix_memalign", SP_MEM_FN_POSIX_MEMALIGN },
	{ "aligned_alloc", SP_MEM_FN_ALIGNED_ALLOC },
	{ "memalign", SP_MEM_FN_MEMALIGN },
	{ "valloc", SP_MEM_FN_VALLOC },
	{ "pvalloc", SP_MEM_FN_PVALLOC },
	{ "free", SP_MEM_FN_FREE },
};
#define NHEAP_FNS (sizeof(heap_fns) / sizeof(heap_fns[0]))

static int open_and_load(struct mem_provider *mp, bool multi)
{
	const struct session_opts *o = mp->o;
	struct mem_bpf *s;
	int err = 0;

	mp->skel = s = mem_bpf__open();
	if (!s)
		return -errno;
	if (multi) {
		attach__prepare_multi(s->progs.sp_alloc);
		attach__prepare_multi(s->progs.sp_free);
		attach__prepare_multi(s->progs.sp_thread_name);
	}
	s->rodata->sample_every = mp->mo.sample > 1 ? mp->mo.sample : 1;
	s->rodata->per_thread = mp->mo.per_thread;
	s->rodata->with_stacks = !mp->mo.no_stacks;
	if (mp->mo.max_live)
		err = bpf_map__set_max_entries(s->maps.live, mp->mo.max_live);
	if (!err && mp->mo.max_stacks)
		err = bpf_map__set_max_entries(s->maps.stacks,
					       mp->mo.max_stacks);
	if (!err && o->max_threads)
		err = bpf_map__set_max_entries(s->maps.calls, o->max_threads);
	if (!err && o->max_threads)
		err = bpf_map__set_max_entries(s->maps.thread_names,
					       o->max_threads);
	if (!err && mp->mo.no_stacks)
		err = bpf_map__set_max_entries(s->maps.stacks, 1);
	if (!err)
		err = mem_bpf__load(s);
	if (err) {
		mem_bpf__destroy(s);
		mp->skel = NULL;
	}
	return err;
}

static int mp_load(void *ctx, const struct session_opts *o)
{
	struct mem_provider *mp = ctx;
	struct probe_binding *b = mp->bindings;
	int err;

	mp->o = o;
	mp->multi = true;
	err = open_and_load(mp, true);
	if (err && err != -EPERM && err != -EACCES) {
		sp_info("no uprobe_multi links (%s); attaching site by site",
			strerror(-err));
		mp->multi = false;
		err = open_and_load(mp, false);
	}
	if (err) {
		privileges__explain_load_error(err, "the memory BPF program");
		return err;
	}
	/* Without it, a thread that exits leaves its call slot behind until
	 * `calls` fills up; everything else still works. */
	mp->exit_link = bpf_program__attach(mp->skel->progs.mem_thread_exit);
	if (!mp->exit_link)
		sp_warn("cannot watch thread exits (%s): short-lived threads may fill the call map (--max-threads)",
			strerror(errno));
	/* Frees first: a library attached while armed then misses at worst
	 * an allocation (whose free is counted as unknown), never a free
	 * that would leave an allocation live forever. */
	b[0] = (struct probe_binding){ .name = "free",
				       .prog = mp->skel->progs.sp_free };
	b[1] = (struct probe_binding){ .name = "alloc",
				       .prog = mp->skel->progs.sp_alloc };
	b[2] = (struct probe_binding){ .name = "thread_name",
				       .prog = mp->skel->progs.sp_thread_name };
	attacher__init(&mp->att, "sp", b, 3, mp->multi);
	return 0;
}

static int push_link(struct mem_provider *mp, struct bpf_link *l)
{
	if (VEC_RESERVE(mp->links, mp->links_cap, mp->nlinks + 1))
		return -ENOMEM;
	mp->links[mp->nlinks++] = l;
	return 0;
}

static int attach_one(struct mem_provider *mp, struct bpf_program *prog,
		      pid_t pid, const char *open_path, const char *path,
		      const char *sym, uint64_t off, bool ret, uint64_t cookie)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = ret,
		    .bpf_cookie = cookie);
	struct site_guard g;
	struct bpf_link *l;
	uint64_t at = off;
	int err;

	/* An allocator built with patchable entries starts with a 5-byte
	 * nop: a uprobe there needs the guard of any such site. */
	err = site_guard__prepare(open_path, path, &at, NULL, 1, false, &g);
	if (!err && g.dropped) {
		sp_err("pid %d: %s: %s starts with a 5-byte nop, which this kernel's uprobes make unsafe for forked children; refused",
		       (int)pid, path, sym);
		err = -EOPNOTSUPP;
	}
	if (err) {
		site_guard__release(&g);
		return err;	/* said */
	}
	l = bpf_program__attach_uprobe_opts(prog, pid, open_path, off, &opts);
	if (!l)
		err = -errno;
	site_guard__release(&g);
	if (!l) {
		sp_err("pid %d: %s: cannot attach to %s%s at 0x%" PRIx64 ": %s",
		       (int)pid, path, sym, ret ? " (return)" : "", off,
		       strerror(-err));
		return err;
	}
	err = push_link(mp, l);
	if (err)
		bpf_link__destroy(l);
	return err;
}

/*
 * Where free's probe goes. glibc's free starts with `test %rdi,%rdi; je`,
 * instructions the kernel cannot emulate: each hit would single-step them
 * out of line, a debug trap that costs 15x an emulated `push` on some
 * virtual machines (docs/memory.md has the figures). A probe just after
 * that NULL check sees the same %rdi and %rsp, and free(NULL) is ignored
 * anyway.
 */
static uint64_t free_probe_offset(const char *open_path, uint64_t off)
{
	unsigned char b[9];
	ssize_t n = -1;
	int fd;

	fd = open(open_path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = pread(fd, b, sizeof(b), (off_t)off);
		close(fd);
	}
	if (n != (ssize_t)sizeof(b) || b[0] != 0x48 || b[1] != 0x85 ||
	    b[2] != 0xff)
		return off;
	if (b[3] == 0x74)		/* je rel8 */
		return off + 5;
	if (b[3] == 0x0f && b[4] == 0x84)	/* je rel32 */
		return off + 9;
	return off;
}

/*
 * The cookie of free's probe: the extent of the code around it, bytes
 * before in the low 32 bits and after in the high 32, for heap_free to
 * tell a call from libc itself (bpf/mem.bpf.c). 0 (no such call known)
 * if the segment cannot be read or is over 4 GiB.
 */
static uint64_t free_cookie(const char *open_path, uint64_t off)
{
	uint64_t before, after;

	if (elf_exec_extent(open_path, off, &before, &after) ||
	    before > UINT32_MAX || after > UINT32_MAX)
		return 0;
	return after << 32 | before;
}

static bool obj_attached(const struct mem_provider *mp, pid_t pid,
			 uint64_t dev, uint64_t ino)
{
	size_t i;

	for (i = 0; i < mp->nobjs; i++)
		if (mp->objs[i].pid == pid && mp->objs[i].dev == dev &&
		    mp->objs[i].ino == ino)
			return true;
	return false;
}

/*
 * The allocator in one file: -ENOENT if it defines no malloc and free,
 * else the number of probes attached (0: attached before) or -errno.
 */
static int attach_heap_file(struct mem_provider *mp, pid_t pid,
			    const char *open_path, const char *path)
{
	uint64_t off[NHEAP_FNS], vaddr, tls_dtors;
	bool have[NHEAP_FNS];
	size_t i, j, first = mp->nlinks;
	struct mem_heap_obj *v;
	struct stat st;
	int err = 0, n = 0;

	if (stat(open_path, &st))
		return -errno;
	if (obj_attached(mp, pid, st.st_dev, st.st_ino))
		return 0;
	for (i = 0; i < NHEAP_FNS; i++)
		have[i] = !elf_symbol_offset(open_path, heap_fns[i].sym, &vaddr,
					     &off[i]);
	if (!have[0] || !have[NHEAP_FNS - 1])
		return -ENOENT;
	/* Returns before entries and free last: an entry is never seen
	 * without its return while armed. */
	for (i = 0; !err && i < NHEAP_FNS - 1; i++) {
		for (j = 0; j < i; j++)
			if (have[j] && off[j] == off[i])
				have[i] = false;	/* an alias */
		if (!have[i])
			continue;
		err = attach_one(mp, mp->skel->progs.heap_ret, pid, open_path,
				 path, heap_fns[i].sym, off[i], true,
				 heap_fns[i].fn);
		if (!err)
			err = attach_one(mp, mp->skel->progs.heap_enter, pid,
					 open_path, path, heap_fns[i].sym,
					 off[i], false, heap_fns[i].fn);
		n += 2;
	}
	if (!err) {
		uint64_t at = free_probe_offset(open_path, off[NHEAP_FNS - 1]);

		err = attach_one(mp, mp->skel->progs.heap_free, pid, open_path,
				 path, "free", at, false,
				 free_cookie(open_path, at));
	}
	n++;
	/* The start of a thread's teardown (glibc; see bpf/mem.bpf.c): the
	 * frees of libc's own cleanup that follow are not the program's. */
	if (!err && !elf_symbol_offset(open_path, "__call_tls_dtors", &vaddr,
				       &tls_dtors)) {
		err = attach_one(mp, mp->skel->progs.thread_teardown, pid,
				 open_path, path, "__call_tls_dtors", tls_dtors,
				 false, 0);
		n++;
	}
	if (!err) {
		v = realloc(mp->objs, (mp->nobjs + 1) * sizeof(*v));
		if (!v)
			err = -ENOMEM;
		else {
			mp->objs = v;
			v[mp->nobjs++] = (struct mem_heap_obj){
				.pid = pid, .dev = st.st_dev, .ino = st.st_ino,
			};
		}
	}
	if (err) {
		while (mp->nlinks > first)
			bpf_link__destroy(mp->links[--mp->nlinks]);
		return err == -ENOENT ? -EINVAL : err;
	}
	mp->heap_traced = true;
	sp_info("pid %d: %s: libc allocator attached (%d probes)", (int)pid,
		path, n);
	return n;
}

static bool is_libc(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5);
}

/* Statically linked: no PT_INTERP (static-pie included). */
static bool is_static(const char *path)
{
	struct usdt_file *f = NULL;
	unsigned int bad;
	bool st;

	if (usdt_file__open(path, &f, &bad))
		return false;
	st = !f->interp;
	usdt_file__free(f);
	return st;
}

static void no_allocator(pid_t pid, const char *exe, int typed)
{
	if (typed > 0)
		sp_warn("pid %d: %s: statically linked without a malloc symbol (stripped?): only its SP_ALLOC/SP_FREE probes are traced",
			(int)pid, exe);
	else
		sp_err("pid %d: %s: statically linked and its allocator cannot be found (no malloc symbol: stripped?) (link it dynamically, keep its symbols, or use SP_ALLOC probes)",
		       (int)pid, exe);
}

struct heap_walk {
	struct mem_provider *mp;
	pid_t pid;
	int typed;
	char exe[4096];		/* the executable's path, as maps names it */
	bool stopped;		/* a static exe without allocator ended it */
};

static int heap_file(void *ctx, const char *open_path, const char *path)
{
	struct heap_walk *w = ctx;
	bool lib = is_libc(path);
	int n;

	if (!lib && strcmp(path, w->exe))
		return 0;
	if (!lib && !is_static(open_path))
		return 0;	/* dynamic: its libc has the allocator */
	n = attach_heap_file(w->mp, w->pid, open_path, path);
	if (n == -ENOENT && !lib) {
		no_allocator(w->pid, path, w->typed);
		w->stopped = true;
		return w->typed > 0 ? -ECANCELED : -ENOEXEC;
	}
	return n == -ENOENT ? 0 : n;
}

/* The allocator of a running process: in the libc it maps, or in its
 * executable when that is statically linked. */
static int attach_heap_pid(struct mem_provider *mp, pid_t pid, int typed)
{
	struct heap_walk w = { .mp = mp, .pid = pid, .typed = typed };
	char link[64];
	ssize_t len;
	int err;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	len = readlink(link, w.exe, sizeof(w.exe) - 1);
	w.exe[len > 0 ? len : 0] = 0;
	if (len > 10 && !strcmp(w.exe + len - 10, " (deleted)"))
		w.exe[len - 10] = 0;
	err = proc_maps__for_each_exec_file(pid, heap_file, &w);
	/* Typed probes carry on without the heap (reported above). */
	return w.stopped && err == -ECANCELED ? 0 : err;
}

static int mp_attach(void *ctx, pid_t pid, const char *path)
{
	struct mem_provider *mp = ctx;
	int typed, heap = 0;

	typed = path ? attacher__attach_file(&mp->att, pid, path, path)
		     : attacher__attach_pid(&mp->att, pid);
	if (typed < 0 || mp->mo.no_libc)
		return typed;
	if (path) {
		/* Before exec: only a static executable carries its
		 * allocator; a dynamic one's libc is attached once the
		 * dynamic loader has mapped it. */
		if (!is_static(path))
			return typed;
		heap = attach_heap_file(mp, pid, path, path);
		if (heap > 0)
			symbolizer__add_exe(&mp->sym, pid, path);
		if (heap == -ENOENT) {
			no_allocator(pid, path, typed);
			return typed > 0 ? typed : -ENOEXEC;
		}
	} else {
		heap = attach_heap_pid(mp, pid, typed);
	}
	return heap < 0 ? heap : typed + heap;
}

static void mp_arm(void *ctx, bool on)
{
	struct mem_provider *mp = ctx;

	mp->skel->bss->armed = on;
}

static void mp_detach(void *ctx)
{
	struct mem_provider *mp = ctx;
	size_t i;

	attacher__destroy(&mp->att);
	for (i = 0; i < mp->nlinks; i++)
		bpf_link__destroy(mp->links[i]);
	mp->nlinks = 0;
}

static void mp_destroy(void *ctx)
{
	struct mem_provider *mp = ctx;

	mp_detach(mp);
	free(mp->links);
	free(mp->objs);
	mp->links = NULL;
	mp->objs = NULL;
	mp->nobjs = mp->links_cap = 0;
	bpf_link__destroy(mp->exit_link);
	mp->exit_link = NULL;
	mem_bpf__destroy(mp->skel);
	mp->skel = NULL;
	symbolizer__free(&mp->sym);
}

void mem_provider__init(struct mem_provider *mp, const struct mem_opts *mo,
			struct session_provider *p)
{
	memset(mp, 0, sizeof(*mp));
	mp->mo = *mo;
	symbolizer__init(&mp->sym);
	*p = (struct session_provider){
		.name = "mem", .ctx = mp, .load = mp_load,
		.attach = mp_attach, .arm = mp_arm, .detach = mp_detach,
		.destroy = mp_destroy,
	};
}

/* ---- reading ----------------------------------------------------------- */

static void scale(struct mem_figures *f, uint64_t n)
{
	f->allocs *= n;
	f->alloc_bytes *= n;
	f->frees *= n;
	f->free_bytes *= n;
	f->live *= n;
	f->live_bytes *= n;
	f->peak_live_bytes *= n;
}

static void figures_of(const struct sp_mem_stats *v, uint64_t n,
		       struct mem_figures *f)
{
	*f = (struct mem_figures){
		.allocs = v->allocs, .alloc_bytes = v->alloc_bytes,
		.frees = v->frees, .free_bytes = v->free_bytes,
		.live = v->live, .live_bytes = v->live_bytes,
		.peak_live_bytes = v->peak_live_bytes,
	};
	scale(f, n);
}

/* The name the kernel captured when the type's row was made (the only copy
 * of a name made at run time once its process exited), else the string
 * read from the file or the process. */
static const char *type_name(struct mem_provider *mp, const struct session *ss,
			     uint32_t tgid, uint64_t name, char *buf, size_t len)
{
	struct sp_mem_type_key key = { .name = name, .tgid = tgid };
	struct sp_mem_type_name tn;

	if (!bpf_map_lookup_elem(bpf_map__fd(mp->skel->maps.type_names), &key,
				 &tn) && tn.str[0]) {
		tn.str[sizeof(tn.str) - 1] = 0;
		snprintf(buf, len, "%s", tn.str);
		return buf;
	}
	if (addr_spaces__read_str(&ss->spaces, (pid_t)tgid, name, buf, len) ||
	    !buf[0])
		snprintf(buf, len, "<unreadable type name 0x%" PRIx64
			 " in pid %u>", name, tgid);
	return buf;
}

/* SP_THREAD_NAME's name, else the comm when the thread's row was made. */
static const char *thread_name(struct mem_provider *mp,
			       const struct session *ss, uint32_t tid,
			       const struct sp_mem_stats *v, char *buf,
			       size_t len)
{
	struct sp_mem_thread_name tn;

	if (!bpf_map_lookup_elem(bpf_map__fd(mp->skel->maps.thread_names),
				 &tid, &tn) &&
	    (tn.str[0] || (!addr_spaces__read_str(&ss->spaces,
						  (pid_t)tn.tgid, tn.name,
						  tn.str, sizeof(tn.str)) &&
			   tn.str[0]))) {
		tn.str[sizeof(tn.str) - 1] = 0;
		snprintf(buf, len, "%s", tn.str);
	} else {
		snprintf(buf, len, "%.*s", SP_MEM_COMM_LEN, v->comm);
	}
	return buf;
}

static int read_rows(struct mem_provider *mp, const struct session *ss,
		     struct mem_report *r)
{
	int fd = bpf_map__fd(mp->skel->maps.rows), err = 0;
	struct sp_mem_key key, next, *prev = NULL;
	char name[SP_NAME_LEN], tname[SP_MEM_THREAD_NAME_LEN];
	struct sp_mem_stats v;
	struct mem_figures f;

	while (!err && !bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &v))
			continue;
		figures_of(&v, r->sampled, &f);
		if (key.tid) {
			err = mem_report__add_thread(r, key.tgid, key.tid,
				thread_name(mp, ss, key.tid, &v, tname,
					    sizeof(tname)),
				key.src == SP_MEM_HEAP ? NULL
				: type_name(mp, ss, key.tgid, key.name, name,
					    sizeof(name)), &f);
		} else if (key.src == SP_MEM_HEAP) {
			r->heap.allocs += f.allocs;
			r->heap.alloc_bytes += f.alloc_bytes;
			r->heap.frees += f.frees;
			r->heap.free_bytes += f.free_bytes;
			r->heap.live += f.live;
			r->heap.live_bytes += f.live_bytes;
			r->heap.peak_live_bytes += f.peak_live_bytes;
		} else {
			err = mem_report__add_type(r, type_name(mp, ss, key.tgid,
				key.name, name, sizeof(name)), &f);
		}
	}
	return err;
}

/*
 * A stack is walked by the kernel through frame pointers. In code built
 * without them (gcc -O2's default) the walk reads whatever the register
 * held (a double, 0x3fd3333333333333 for 0.3) as the next return address:
 * a "frame" that is no code. Such a stack is cut at the first of them,
 * its call site (taken exactly, at the allocator's return or the probe)
 * kept, and said once: frames past it would be garbage shown as real.
 */
static void tell_cut(struct mem_provider *mp, uint64_t cut, const char *site,
		     uint64_t bad)
{
	if (!cut || mp->told_cut)
		return;
	mp->told_cut = true;
	sp_warn("%" PRIu64 " allocation stack%s went on from a call site (%s) to 0x%" PRIx64 ", which is no code: the program has no frame pointers, so such stacks are shown as their call site only (build it with -fno-omit-frame-pointer for whole stacks)",
		cut, cut == 1 ? "" : "s", site, bad);
}

static int read_sites(struct mem_provider *mp, const struct session *ss,
		      struct mem_report *r)
{
	int fd = bpf_map__fd(mp->skel->maps.sites), err = 0;
	int sfd = bpf_map__fd(mp->skel->maps.stacks);
	struct sp_mem_site_key key, next, *prev = NULL;
	__u64 ips[SP_MEM_STACK_DEPTH];
	char name[SP_NAME_LEN], frame[512], site[512] = "";
	struct sp_mem_site v;
	uint64_t cut = 0, bad = 0;

	while (!err && !bpf_map_get_next_key(fd, prev, &next)) {
		unsigned int i, n = 0;
		char **frames;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &v))
			continue;
		memset(ips, 0, sizeof(ips));
		if (bpf_map_lookup_elem(sfd, &key.stackid, ips))
			memset(ips, 0, sizeof(ips));
		frames = calloc(SP_MEM_STACK_DEPTH, sizeof(*frames));
		if (!frames)
			return -ENOMEM;
		for (i = 0; i < SP_MEM_STACK_DEPTH && ips[i]; i++) {
			/* A typed site's first address is the probe itself;
			 * every other one (and a heap site's first, taken
			 * at malloc's return) is a return address. */
			bool code = symbolizer__name(&mp->sym, &ss->spaces,
						     (pid_t)key.tgid, ips[i],
						     i || key.src == SP_MEM_HEAP,
						     frame, sizeof(frame));

			if (i && !code) {	/* the walk left real frames */
				if (!cut++) {
					bad = ips[i];
					snprintf(site, sizeof(site), "%s",
						 frames[n - 1]);
				}
				break;
			}
			frames[n] = strdup(frame);
			if (!frames[n]) {
				err = -ENOMEM;
				break;
			}
			n++;
		}
		if (err) {
			while (n)
				free(frames[--n]);
			free(frames);
			break;
		}
		err = mem_report__add_site(r, frames, n,
			key.src == SP_MEM_HEAP ? NULL
			: type_name(mp, ss, key.tgid, key.name, name, sizeof(name)),
			v.allocs * r->sampled, v.alloc_bytes * r->sampled,
			v.live * r->sampled, v.live_bytes * r->sampled);
	}
	if (!err)
		tell_cut(mp, cut, site, bad);
	return err;
}

static int read_errors(struct mem_provider *mp, struct mem_report *r)
{
	int fd = bpf_map__fd(mp->skel->maps.errors), ncpus, i;
	__u32 slot;
	__u64 *vals;

	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0)
		return ncpus ? ncpus : -EINVAL;
	vals = calloc((size_t)ncpus, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (slot = 0; slot < SP_MEM_ERR__MAX; slot++) {
		if (bpf_map_lookup_elem(fd, &slot, vals))
			continue;
		for (i = 0; i < ncpus; i++)
			r->errors[slot] += vals[i];
	}
	free(vals);
	return 0;
}

int mem_provider__read(struct mem_provider *mp, const struct session *ss,
		       struct mem_report *r)
{
	int err;

	r->duration_ns = session__duration(ss);
	r->sampled = mp->mo.sample > 1 ? mp->mo.sample : 1;
	r->heap_traced = mp->heap_traced;
	r->per_thread = mp->mo.per_thread;
	err = read_rows(mp, ss, r);
	if (!err)
		err = read_sites(mp, ss, r);
	if (!err)
		err = read_errors(mp, r);
	if (err)
		sp_err("cannot read the memory BPF maps: %s", strerror(-err));
	else
		mem_report__finish(r);
	return err;
}

/* ---- memory over time ---------------------------------------------------- */

/* VmRSS, RssAnon, RssFile of pid in bytes; -errno once it is gone. */
static int read_rss(pid_t pid, uint64_t v[3])
{
	static const char *const keys[3] = { "VmRSS:", "RssAnon:", "RssFile:" };
	char path[64], line[256];
	unsigned long long kb;
	int i, found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		for (i = 0; i < 3; i++) {
			size_t kl = strlen(keys[i]);

			if (!strncmp(line, keys[i], kl) &&
			    sscanf(line + kl, "%llu", &kb) == 1) {
				v[i] += kb * 1024;
				found++;
			}
		}
	}
	fclose(f);
	return found ? 0 : -ESRCH;	/* a zombie has no VmRSS */
}

int mem_provider__sample(struct mem_provider *mp, const struct session *ss,
			 struct mem_report *r, uint64_t now_ns)
{
	int fd = bpf_map__fd(mp->skel->maps.rows);
	struct sp_mem_key key, next, *prev = NULL;
	struct mem_point p = {};
	uint64_t rss[3] = { 0, 0, 0 }, n;
	struct sp_mem_stats v;
	bool any = false;
	int i;

	if (ss->launched) {
		any = !ss->child_exited && !read_rss(ss->launch.pid, rss);
	} else {
		for (i = 0; i < ss->o->npids; i++)
			if (ss->alive[i] && !read_rss(ss->o->pids[i], rss))
				any = true;
	}
	if (!any)
		return 0;	/* every target is gone: nothing to sample */
	n = mp->mo.sample > 1 ? mp->mo.sample : 1;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (key.tid || bpf_map_lookup_elem(fd, &key, &v))
			continue;
		if (key.src == SP_MEM_HEAP)
			p.heap_live_bytes += v.live_bytes * n;
		else
			p.typed_live_bytes += v.live_bytes * n;
	}
	p.t_ns = now_ns > ss->start_ns ? now_ns - ss->start_ns : 0;
	p.rss_bytes = rss[0];
	p.rss_anon_bytes = rss[1];
	p.rss_file_bytes = rss[2];
	r->timeline_on = true;
	return mem_timeline__add(&r->tl, &p);
}

/* The timeline: a timer fd the session polls. */
struct mem_tick {
	struct mem_provider *mp;
	struct session *ss;
	struct mem_report *r;
	int tfd;
};

static int on_tick(void *ctx)
{
	struct mem_tick *t = ctx;
	uint64_t n = 0;

	if (read(t->tfd, &n, sizeof(n)) != (ssize_t)sizeof(n) || !n)
		return 0;	/* the 50 ms poll, not the timer */
	return mem_provider__sample(t->mp, t->ss, t->r, now_ns());
}

static int timer_open(unsigned int ms)
{
	struct itimerspec its = {};
	int fd;

	fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	its.it_interval.tv_sec = ms / 1000;
	its.it_interval.tv_nsec = (long)(ms % 1000) * 1000000;
	its.it_value = its.it_interval;
	if (timerfd_settime(fd, 0, &its, NULL)) {
		close(fd);
		return -errno;
	}
	return fd;
}

int mem_provider__run(struct mem_provider *mp, struct session *ss,
		      struct mem_report *r, unsigned int interval_ms)
{
	struct mem_tick t = { .mp = mp, .ss = ss, .r = r, .tfd = -1 };
	int err;

	if (interval_ms) {
		t.tfd = timer_open(interval_ms);
		if (t.tfd < 0) {
			sp_err("cannot create the --interval timer: %s",
			       strerror(-t.tfd));
			return t.tfd;
		}
		r->timeline_on = true;
		r->tl.interval_ns = (uint64_t)interval_ms * 1000000ull;
		mem_provider__sample(mp, ss, r, now_ns());
	}
	err = session__run(ss, t.tfd, t.tfd >= 0 ? on_tick : NULL, &t);
	if (t.tfd >= 0)
		close(t.tfd);
	return err;
}
