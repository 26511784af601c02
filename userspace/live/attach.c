// SPDX-License-Identifier: MIT
/*
 * Attaching sp probe sites.
 *
 * Why not libbpf's bpf_program__attach_usdt(): it keeps argument specs in a
 * BPF array (256 by default) and reads each argument through a spec lookup,
 * and for PIE executables and shared objects it needs the file mapped in the
 * target already, which a command about to exec does not have. sp probes
 * pass every argument in a register, so each site becomes one plain uprobe
 * whose cookie says which registers hold the arguments, attached by file
 * offset (works before exec) with the semaphore's file offset as the
 * kernel-managed ref_ctr_offset (a killed tracer leaves it at zero).
 *
 * Where the kernel has uprobe_multi links (Linux 6.6+), all sites of one
 * probe name in one file become one link: one syscall to attach however
 * many sites, and a shorter kernel path per hit than perf-event uprobes.
 * libbpf 1.1 predates them, so the link is created with the bpf syscall.
 *
 * Files are opened through /proc/PID/map_files/START-END when possible: that
 * names exactly the inode the target mapped, even if the path was replaced,
 * deleted, or lives in another mount namespace.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include <sptrace/query_abi.h>
#include "attach.h"
#include "elf_notes.h"
#include "log.h"
#include "proc_maps.h"
#include "site_guard.h"
#include "uprobe_multi.h"
#include "usdt_args.h"
#include "vec.h"

void attach__prepare_multi(struct bpf_program *prog)
{
	bpf_program__set_expected_attach_type(prog, SP_BPF_TRACE_UPROBE_MULTI);
}

void attacher__init(struct attacher *a, const char *provider,
		    const struct probe_binding *bindings, size_t nbindings,
		    bool multi)
{
	memset(a, 0, sizeof(*a));
	a->provider = provider;
	a->bindings = bindings;
	a->nbindings = nbindings;
	a->multi = multi;
}

static void link_destroy(struct sp_link *l)
{
	if (l->link)
		bpf_link__destroy(l->link);
	if (l->fd >= 0)
		close(l->fd);
}

/*
 * Closing a uprobe link waits for an RCU grace period (the kernel's
 * uprobe_unregister_sync()): 10 to 60 ms each, seconds on a loaded machine,
 * and one after the other they were most of the time from the end of a
 * trace to its report (6 links of a small program: 300 ms). Closed by
 * several threads at once, the waits overlap (60 ms for the same 6).
 */
#define CLOSERS 16

struct closing {
	struct sp_link *links;
	size_t n, next;
	bool last;	/* this round closes the links marked last */
};

static void *close_links(void *arg)
{
	struct closing *c = arg;
	size_t i;

	while ((i = __atomic_fetch_add(&c->next, 1, __ATOMIC_RELAXED)) < c->n)
		if (c->links[i].last == c->last)
			link_destroy(&c->links[i]);
	return NULL;
}

static void close_round(struct sp_link *links, size_t n, bool last)
{
	struct closing c = { .links = links, .n = n, .last = last };
	pthread_t t[CLOSERS];
	size_t k, nt = 0;

	while (n > 1 && nt < CLOSERS && nt < n &&
	       !pthread_create(&t[nt], NULL, close_links, &c))
		nt++;
	close_links(&c);	/* what no thread took (none could start) */
	for (k = 0; k < nt; k++)
		pthread_join(t[k], NULL);
}

/* The links of close_last bindings go in a second round: sp:flush's
 * drains then go on while the others detach, so that a host's records
 * stamped before the disarm are drained, not overwritten by those it
 * keeps writing once no flush drains (tests/e2e/test_batch.py,
 * test_stop_while_flushing). */
static void destroy_links(struct sp_link *links, size_t n)
{
	close_round(links, n, false);
	close_round(links, n, true);
}

static void obj_free(struct attached_obj *o)
{
	free(o->path);
	free(o->semas);
	free(o->open_path);
	free(o->func_offs);
	free(o->func_cookies);
}

/* Undoes the add_obj() just made: its object is not kept after all. */
static void drop_last_obj(struct attacher *a)
{
	obj_free(&a->objs[--a->nobjs]);
}

void attacher__destroy(struct attacher *a)
{
	size_t i;

	destroy_links(a->links, a->nlinks);
	for (i = 0; i < a->nobjs; i++)
		obj_free(&a->objs[i]);
	free(a->links);
	free(a->objs);
	memset(a, 0, sizeof(*a));
}

size_t attacher__sites(const struct attacher *a)
{
	return a->nsites;
}

static const struct {
	const char *name;
	enum sp_reg reg;
} reg_names[] = {
	{ "rax", SP_REG_RAX }, { "rbx", SP_REG_RBX }, { "rcx", SP_REG_RCX },
	{ "rdx", SP_REG_RDX }, { "rsi", SP_REG_RSI }, { "rdi", SP_REG_RDI },
	{ "rbp", SP_REG_RBP }, { "r8", SP_REG_R8 },   { "r9", SP_REG_R9 },
	{ "r10", SP_REG_R10 }, { "r11", SP_REG_R11 }, { "r12", SP_REG_R12 },
	{ "r13", SP_REG_R13 }, { "r14", SP_REG_R14 }, { "r15", SP_REG_R15 },
};

int attach__reg(const char *name)
{
	size_t j;

	for (j = 0; j < sizeof(reg_names) / sizeof(reg_names[0]); j++)
		if (!strcmp(name, reg_names[j].name))
			return reg_names[j].reg;
	return SP_REG_NONE;
}

int attach__cookie_from_args(const char *args, uint64_t *cookie)
{
	struct usdt_arg v[USDT_ARGS_MAX];
	int n, i;
	size_t j;

	*cookie = 0;
	n = usdt_args__parse(args, v, USDT_ARGS_MAX);
	if (n < 0)
		return n;
	if (n > SP_COOKIE_MAX_ARGS)
		return -EOPNOTSUPP;
	for (i = 0; i < n; i++) {
		if (v[i].kind != USDT_ARG_REG || v[i].size != 8)
			return -EOPNOTSUPP;
		for (j = 0; j < sizeof(reg_names) / sizeof(reg_names[0]); j++)
			if (!strcmp(v[i].reg, reg_names[j].name))
				break;
		if (j == sizeof(reg_names) / sizeof(reg_names[0]))
			return -EOPNOTSUPP;
		*cookie |= (uint64_t)reg_names[j].reg << (i * 8);
	}
	return 0;
}

/* A kernel-internal errno the bpf syscall passes on: uprobes refuse the
 * instruction at the site (an int3, or one it cannot single-step). */
#define SP_ENOTSUPP 524

static const char *attach_strerror(int err)
{
	return err == -SP_ENOTSUPP ?
		"the kernel cannot probe the instruction there (ENOTSUPP)" :
		strerror(-err);
}

static const struct probe_binding *binding_for(const struct probe_binding *b,
					       size_t nb, const char *name)
{
	size_t i;

	for (i = 0; i < nb; i++)
		if (!strcmp(b[i].name, name))
			return &b[i];
	return NULL;
}

/* The binding of b that serves site s, NULL if none (another provider, or
 * a probe no program serves). */
static const struct probe_binding *bound(const struct attacher *a,
					 const struct usdt_site *s,
					 const struct probe_binding *b,
					 size_t nb)
{
	return strcmp(s->provider, a->provider) ? NULL :
						   binding_for(b, nb, s->name);
}

/* Does the file have the provider's flush site (a header with batching)? */
static bool has_flush(const struct attacher *a, const struct usdt_file *f)
{
	size_t i;

	for (i = 0; i < f->nsites; i++)
		if (!strcmp(f->sites[i].provider, a->provider) &&
		    !strcmp(f->sites[i].name, "flush"))
			return true;
	return false;
}

static int push_link(struct attacher *a, struct bpf_link *link, int fd)
{
	if (VEC_RESERVE(a->links, a->links_cap, a->nlinks + 1))
		return -ENOMEM;
	a->links[a->nlinks].link = link;
	a->links[a->nlinks].fd = fd;
	a->links[a->nlinks].last = false;
	a->nlinks++;
	return 0;
}

/* A site of the file that binding b serves, with its cookie. */
static bool site_cookie(struct attacher *a, const char *path,
			const struct usdt_site *s,
			const struct probe_binding *b, uint64_t *cookie)
{
	if (attach__cookie_from_args(s->args, cookie)) {
		sp_warn("%s: probe %s:%s at 0x%" PRIx64
			" has arguments '%s' that are not plain 64-bit registers; site skipped (rebuild with probes/sp_probe.h)",
			path, s->provider, s->name, s->pc_vaddr, s->args);
		a->skipped_sites++;
		return false;
	}
	*cookie |= b->cookie;
	return true;
}

static struct attached_obj *find_obj(struct attacher *a, pid_t pid,
				     uint64_t dev, uint64_t ino)
{
	size_t i;

	for (i = 0; i < a->nobjs; i++)
		if (a->objs[i].pid == pid && a->objs[i].dev == dev &&
		    a->objs[i].ino == ino)
			return &a->objs[i];
	return NULL;
}

static void rollback(struct attacher *a, size_t first)
{
	while (a->nlinks > first)
		link_destroy(&a->links[--a->nlinks]);
}

static bool watch_only(const struct attacher *a, const struct probe_binding *b)
{
	return a->watch_only && !strcmp(b->name, a->watch_only);
}

/* A watch-only binding the kernel refused: said, counted, and the file
 * goes on. */
static int watch_refused(struct attacher *a, const char *path,
			 const char *provider, const char *probe, int err)
{
	sp_info("%s: %s:%s not watched (%s); the file's events do not need it",
		path, provider, probe, attach_strerror(err));
	a->watch_refused++;
	return 0;
}

static int attach_site(struct attacher *a, pid_t pid, const char *open_path,
		       const char *path, const struct usdt_site *s,
		       const struct probe_binding *b)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts);
	struct bpf_link *link;
	uint64_t cookie;
	int err;

	if (!site_cookie(a, path, s, b, &cookie))
		return 0;
	opts.bpf_cookie = cookie;
	opts.ref_ctr_offset = watch_only(a, b) ? 0 : s->sema_offset;
	link = bpf_program__attach_uprobe_opts(b->prog, pid, open_path,
					       s->pc_offset, &opts);
	if (!link) {
		err = -errno;
		if (err == -ESRCH)
			return err;	/* the process exited: callers say so */
		if (watch_only(a, b))
			return watch_refused(a, path, s->provider, s->name, err);
		sp_err("%s: cannot attach probe %s:%s at 0x%" PRIx64 ": %s",
		       path, s->provider, s->name, s->pc_vaddr,
		       attach_strerror(err));
		return err == -SP_ENOTSUPP ? -EOPNOTSUPP : err;
	}
	err = push_link(a, link, -1);
	if (err) {
		bpf_link__destroy(link);
		return err;
	}
	a->links[a->nlinks - 1].last = b->close_last;
	return 1;
}

/* One uprobe_multi link: `n` offsets of `open_path`. fd or -errno. */
static int multi_link(struct bpf_program *prog, pid_t pid,
		      const char *open_path, const uint64_t *offs,
		      const uint64_t *refs, const uint64_t *cookies, size_t n,
		      bool ret)
{
	return uprobe_multi__link(bpf_program__fd(prog), pid, open_path, offs,
				  refs, cookies, n, ret);
}

/* Every site of `prog`'s probe in f as one uprobe_multi link. Returns the
 * number of sites attached or -errno. */
static int attach_multi(struct attacher *a, pid_t pid, const char *open_path,
			const char *path, const struct usdt_file *f,
			const struct probe_binding *b)
{
	const char *probe = b->name;
	uint64_t *offs, *refs, *cookies;
	size_t i, n = 0;
	int fd, err = 0;

	offs = calloc(f->nsites, sizeof(*offs));
	refs = calloc(f->nsites, sizeof(*refs));
	cookies = calloc(f->nsites, sizeof(*cookies));
	if (!offs || !refs || !cookies) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < f->nsites; i++) {
		const struct usdt_site *s = &f->sites[i];
		uint64_t cookie;

		if (strcmp(s->provider, a->provider) || strcmp(s->name, probe) ||
		    !site_cookie(a, path, s, b, &cookie))
			continue;
		offs[n] = s->pc_offset;
		refs[n] = watch_only(a, b) ? 0 : s->sema_offset;
		cookies[n] = cookie;
		n++;
	}
	if (!n)
		goto out;
	fd = multi_link(b->prog, pid, open_path, offs, refs, cookies, n, false);
	if (fd < 0) {
		err = fd;
		if (err == -ESRCH)
			goto out;	/* the process exited: callers say so */
		if (watch_only(a, b)) {
			n = 0;
			err = watch_refused(a, path, a->provider, probe, err);
			goto out;
		}
		sp_err("%s: cannot attach %zu sites of probe %s:%s: %s", path, n,
		       a->provider, probe, attach_strerror(err));
		if (err == -SP_ENOTSUPP)
			err = -EOPNOTSUPP;	/* callers' strerror() knows it */
		goto out;
	}
	err = push_link(a, NULL, fd);
	if (err)
		close(fd);
	else
		a->links[a->nlinks - 1].last = b->close_last;
out:
	free(offs);
	free(refs);
	free(cookies);
	return err ? err : (int)n;
}

/* Site i of f dropped: it will not be attached. */
static void drop_site(struct usdt_file *f, size_t i)
{
	struct usdt_site *s = &f->sites[i];

	free(s->provider);
	free(s->name);
	free(s->args);
	memmove(s, s + 1, (f->nsites - i - 1) * sizeof(*s));
	f->nsites--;
}

/*
 * Before f's sites bound in b are attached: the ones on a 5-byte nop made
 * safe for the target's forked children (site_guard.c): pinned, or moved
 * onto the lea before the nop; one that can be neither is dropped, said
 * and counted. Release g once the links are made. 0 or -errno (said).
 */
static int guard_sites(struct attacher *a, const char *open_path,
		       const char *path, struct usdt_file *f,
		       const struct probe_binding *b, size_t nb,
		       struct site_guard *g)
{
	uint64_t *offs, *refs;
	size_t *which, i, n = 0;
	int err = -ENOMEM;

	offs = calloc(f->nsites + 1, sizeof(*offs));
	refs = calloc(f->nsites + 1, sizeof(*refs));
	which = calloc(f->nsites + 1, sizeof(*which));
	if (!offs || !refs || !which)
		goto out;
	for (i = 0; i < f->nsites; i++) {
		const struct usdt_site *s = &f->sites[i];
		const struct probe_binding *bs = bound(a, s, b, nb);

		if (!bs)
			continue;
		offs[n] = s->pc_offset;
		refs[n] = watch_only(a, bs) ? 0 : s->sema_offset;
		which[n++] = i;
	}
	err = site_guard__prepare(open_path, path, offs, refs, n, true, g);
	if (err)
		goto out;
	/* Backwards: dropping a site moves the ones after it. */
	for (i = n; i-- > 0;) {
		struct usdt_site *s = &f->sites[which[i]];

		if (offs[i] != SITE_GUARD_DROP) {
			s->pc_offset = offs[i];
			continue;
		}
		sp_warn("%s: probe %s:%s at 0x%" PRIx64
			" is a 5-byte nop without sp_probe.h's lea before it: on this kernel a uprobe there kills forked children; site skipped",
			path, s->provider, s->name, s->pc_vaddr);
		a->skipped_sites++;
		drop_site(f, which[i]);
	}
	if (g->pinned)
		sp_info("%s: %zu per-event 5-byte-nop sites pinned to the trap path in %.1f ms (forked children keep running them)",
			path, g->pinned, (double)g->pin_ns / 1e6);
	if (g->moved)
		sp_info("%s: %zu per-event sites probed at the lea before their nop (single-stepped: forked children keep running them)",
			path, g->moved);
out:
	free(offs);
	free(refs);
	free(which);
	return err;
}

static struct attached_obj *add_obj(struct attacher *a, pid_t pid,
				    const struct stat *st, const char *path,
				    size_t first);

/* The semaphores of f's sites bound in b that gate a probe's work (a
 * thread's name is given once, sp:tsc only picks a clock): their file
 * offsets, each once, into o. 0 or -ENOMEM. */
static int keep_semas(const struct attacher *a, const struct usdt_file *f,
		      const struct probe_binding *b, size_t nb,
		      struct attached_obj *o)
{
	size_t i, j;

	o->nsemas = 0;
	o->semas = calloc(f->nsites ? f->nsites : 1, sizeof(*o->semas));
	if (!o->semas)
		return -ENOMEM;
	for (i = 0; i < f->nsites; i++) {
		const struct usdt_site *s = &f->sites[i];
		const struct probe_binding *bs = bound(a, s, b, nb);

		if (!bs || watch_only(a, bs) || !s->sema_offset ||
		    !strcmp(s->name, "thread_name") || !strcmp(s->name, "tsc"))
			continue;
		for (j = 0; j < o->nsemas && o->semas[j] != s->sema_offset; j++)
			;
		if (j == o->nsemas)
			o->semas[o->nsemas++] = s->sema_offset;
	}
	return 0;
}

int attacher__attach_file(struct attacher *a, pid_t pid, const char *open_path,
			  const char *path)
{
	const struct probe_binding *b;
	struct usdt_file *f = NULL;
	size_t first = a->nlinks, i, n = 0, nb;
	unsigned int bad = 0;
	bool batched;
	struct attached_obj *o;
	struct stat st;
	int err;
	struct site_guard guard = { .fd = -1 };

	if (a->any_pid)
		pid = -1;
	if (stat(open_path, &st))
		return -errno;
	if (find_obj(a, pid, st.st_dev, st.st_ino))
		return 0;
	err = usdt_file__open(open_path, &f, &bad);
	if (err == -ENOEXEC)
		return 0;	/* not an ELF file: nothing to attach */
	if (err)
		return err;
	if (bad)
		sp_warn("%s: %u malformed stapsdt notes ignored", path, bad);

	batched = a->nbatch && has_flush(a, f);
	if (batched && !a->batched_files && a->before_batched)
		a->before_batched(a->before_batched_ctx);
	b = batched ? a->batch_bindings : a->bindings;
	nb = batched ? a->nbatch : a->nbindings;
	err = guard_sites(a, open_path, path, f, b, nb, &guard);
	if (err)
		goto rollback;
	for (i = 0; a->multi && i < nb; i++) {
		err = attach_multi(a, pid, open_path, path, f, &b[i]);
		if (err < 0)
			goto rollback;
		n += err;
	}
	for (i = 0; !a->multi && i < f->nsites; i++) {
		const struct usdt_site *s = &f->sites[i];
		const struct probe_binding *bs = bound(a, s, b, nb);

		if (!bs)
			continue;
		err = attach_site(a, pid, open_path, path, s, bs);
		if (err < 0)
			goto rollback;
		n += err;
	}
	o = add_obj(a, pid, &st, path, first);
	if (!o) {
		err = -ENOMEM;
		goto rollback;
	}
	if (keep_semas(a, f, b, nb, o)) {
		drop_last_obj(a);
		err = -ENOMEM;
		goto rollback;
	}
	a->nsites += n;
	if (n) {
		const char *mode = batched ? "batched" : "per-event";

		if (batched)
			a->batched_files++;
		else
			a->event_files++;
		if (pid < 0)	/* -b: one link for every process */
			sp_info("every process: %s: %zu probe sites attached (%s events)",
				path, n, mode);
		else
			sp_info("pid %d: %s: %zu probe sites attached (%s events)",
				(int)pid, path, n, mode);
	}
	usdt_file__free(f);
	site_guard__release(&guard);	/* the real links hold the sites */
	return (int)n;

rollback:
	rollback(a, first);
	usdt_file__free(f);
	site_guard__release(&guard);
	/* Remembered with no links: the next loader stop of the same
	 * process does not fail (and report) the same way again. */
	if (err != -ENOMEM)
		add_obj(a, pid, &st, path, a->nlinks);
	return err;
}

struct attach_walk {
	struct attacher *a;
	pid_t pid;
};

static int attach_walk_file(void *ctx, const char *open_path, const char *path)
{
	struct attach_walk *w = ctx;
	int n = attacher__attach_file(w->a, w->pid, open_path, path);

	if (n == -ENOENT || n == -ESRCH)
		sp_info("pid %d: %s vanished while attaching", (int)w->pid,
			path);
	return n;
}

int attacher__attach_pid(struct attacher *a, pid_t pid)
{
	struct attach_walk w = { .a = a, .pid = pid };

	return proc_maps__for_each_exec_file(pid, attach_walk_file, &w);
}

static struct attached_obj *add_obj(struct attacher *a, pid_t pid,
				    const struct stat *st, const char *path,
				    size_t first)
{
	struct attached_obj *o;

	if (VEC_RESERVE(a->objs, a->objs_cap, a->nobjs + 1))
		return NULL;
	o = &a->objs[a->nobjs];
	memset(o, 0, sizeof(*o));
	o->path = strdup(path);
	if (!o->path)
		return NULL;
	o->pid = pid;
	o->dev = st->st_dev;
	o->ino = st->st_ino;
	o->first_link = first;
	o->nlinks = a->nlinks - first;
	a->nobjs++;
	return o;
}

/* The entry and return links of one file's --func functions, appended to
 * a->links: all or none. 0 or -errno (said, but for a file or process
 * gone: -ENOENT, -ESRCH). */
static int func_links(struct attacher *a, pid_t pid, const char *open_path,
		      const char *path, const uint64_t *offsets,
		      const uint64_t *cookies, size_t n)
{
	size_t first = a->nlinks, i, k;
	struct site_guard g = { .fd = -1 };
	uint64_t *safe;
	int err = 0, fd;

	if (access(open_path, R_OK))
		return -errno;
	/* A function compiled with a patchable entry starts with a 5-byte
	 * nop: its entry probe needs the guard of any such site. */
	safe = malloc(n * sizeof(*safe));
	if (!safe)
		return -ENOMEM;
	memcpy(safe, offsets, n * sizeof(*safe));
	err = site_guard__prepare(open_path, path, safe, NULL, n, false, &g);
	free(safe);
	if (!err && g.dropped) {
		sp_err("%s: %zu --func functions start with a 5-byte nop, which this kernel's uprobes make unsafe for forked children; refused",
		       path, g.dropped);
		err = -EOPNOTSUPP;
	}
	if (err) {
		site_guard__release(&g);
		return err;	/* said */
	}
	/* Return probes are attached first and closed last (a second round
	 * of destroy_links()): a call caught between the two links, when
	 * --max-overhead sheds them or brings them back, then has a return
	 * without its entry, which a sampled process counts as cut, never
	 * an entry without its return, a frame left open above the query
	 * that called it. */
	for (k = 0; k < 2 && !err; k++) {
		bool ret = k == 0;
		struct bpf_program *prog = ret ? a->func_ret : a->func_entry;

		if (a->multi) {
			fd = multi_link(prog, pid, open_path, offsets, NULL,
					cookies, n, ret);
			err = fd < 0 ? fd : push_link(a, NULL, fd);
			if (err && fd >= 0)
				close(fd);
			else
				a->links[a->nlinks - 1].last = ret;
			continue;
		}
		for (i = 0; i < n && !err; i++) {
			LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = ret,
				    .bpf_cookie = cookies[i]);
			struct bpf_link *l;

			l = bpf_program__attach_uprobe_opts(prog, pid, open_path,
							    offsets[i], &opts);
			err = l ? push_link(a, l, -1) : -errno;
			if (!err)
				a->links[a->nlinks - 1].last = ret;
		}
	}
	site_guard__release(&g);
	if (err) {
		if (err != -ESRCH && err != -ENOENT)
			sp_err("%s: cannot attach --func probes to %zu functions: %s",
			       path, n, strerror(-err));
		rollback(a, first);
	}
	return err;
}

/*
 * Does the kernel single-step the instruction at file offset `off` of fd
 * when a uprobe there fires? On x86-64 it emulates only nops, a push of a
 * register, jmp and call (arch/x86/kernel/uprobes.c); any other first
 * instruction costs a second trap, on this VM several times a plain one.
 * Unreadable: as if stepped (the dearer price).
 */
static bool single_stepped(int fd, uint64_t off)
{
	unsigned char b[2];

	if (pread(fd, b, sizeof(b), (off_t)off) != (ssize_t)sizeof(b))
		return true;
	if (b[0] == 0x41)		/* REX.B: push %r8-%r15 */
		return !(b[1] >= 0x50 && b[1] <= 0x57);
	return !(b[0] == 0x90 || (b[0] == 0x0f && b[1] == 0x1f) ||
		 (b[0] >= 0x50 && b[0] <= 0x57) || b[0] == 0xe8 ||
		 b[0] == 0xe9 || b[0] == 0xeb);
}

/* The cookies of n functions, with SP_FUNC_STEP where their entry probe
 * is single-stepped. malloc'd, or NULL. */
static uint64_t *step_cookies(const char *open_path, const uint64_t *offsets,
			      const uint64_t *cookies, size_t n)
{
	uint64_t *c = malloc(n * sizeof(*c));
	int fd = open(open_path, O_RDONLY | O_CLOEXEC);
	size_t i;

	for (i = 0; c && i < n; i++)
		c[i] = cookies[i] |
		       (fd < 0 || single_stepped(fd, offsets[i]) ?
			SP_FUNC_STEP : 0);
	if (fd >= 0)
		close(fd);
	return c;
}

/* What a --func file needs to be attached again (attacher__set_funcs()). */
static int keep_funcs(struct attached_obj *o, const char *open_path,
		      const uint64_t *offsets, const uint64_t *cookies,
		      size_t n)
{
	o->open_path = strdup(open_path);
	o->func_offs = malloc(n * sizeof(*o->func_offs));
	o->func_cookies = malloc(n * sizeof(*o->func_cookies));
	if (!o->open_path || !o->func_offs || !o->func_cookies)
		return -ENOMEM;
	memcpy(o->func_offs, offsets, n * sizeof(*offsets));
	memcpy(o->func_cookies, cookies, n * sizeof(*cookies));
	o->nfuncs = n;
	return 0;
}

int attacher__attach_funcs(struct attacher *a, pid_t pid, const char *open_path,
			   const char *path, const uint64_t *offsets,
			   const uint64_t *cookies, size_t n,
			   struct bpf_program *entry, struct bpf_program *ret)
{
	size_t first = a->nlinks;
	struct attached_obj *o;
	uint64_t *steps;
	struct stat st;
	int err = 0;

	if (a->any_pid)
		pid = -1;
	if (stat(open_path, &st))
		return -errno;
	if (find_obj(a, pid, st.st_dev, st.st_ino) || !n)
		return 0;
	a->func_entry = entry;
	a->func_ret = ret;
	steps = step_cookies(open_path, offsets, cookies, n);
	if (!steps) {
		sp_err("%s: cannot attach --func probes to %zu functions: %s",
		       path, n, strerror(ENOMEM));
		return -ENOMEM;
	}
	/* Shed (sampler.c): kept, to be attached when they come back. */
	if (!a->funcs_off) {
		err = func_links(a, pid, open_path, path, offsets, steps, n);
		if (err) {
			free(steps);
			return err;
		}
	}
	o = add_obj(a, pid, &st, path, first);
	if (o && keep_funcs(o, open_path, offsets, steps, n)) {
		drop_last_obj(a);
		o = NULL;
	}
	free(steps);
	if (!o) {
		sp_err("%s: cannot attach --func probes to %zu functions: %s",
		       path, n, strerror(ENOMEM));
		rollback(a, first);
		return -ENOMEM;
	}
	a->nsites += 2 * n;
	return (int)n;
}

int attacher__set_funcs(struct attacher *a, bool on)
{
	size_t i, first;
	int n = 0;

	if (on != a->funcs_off)
		return 0;
	if (!on) {
		destroy_links(a->links, a->nlinks);
		a->nlinks = 0;
		for (i = 0; i < a->nobjs; i++)
			a->objs[i].first_link = a->objs[i].nlinks = 0;
		a->funcs_off = true;
		return 0;
	}
	a->funcs_off = false;
	for (i = 0; i < a->nobjs; i++) {
		struct attached_obj *o = &a->objs[i];

		first = a->nlinks;
		if (o->nfuncs &&
		    !func_links(a, o->pid, o->open_path, o->path, o->func_offs,
				o->func_cookies, o->nfuncs))
			n++;
		o->first_link = first;
		o->nlinks = a->nlinks - first;
	}
	return n;
}
