// SPDX-License-Identifier: MIT
/*
 * The latency provider: loads bpf/latency.bpf.c and attaches its two ways
 * in.
 *
 * SP_MARK endpoints. Every sp:mark site goes to lat_mark (userspace/attach.c,
 * uprobe_multi where the kernel has it). The BPF side sees a mark's name as a
 * pointer, so before a process may hit a mark its name pointers must be in
 * `mark_names`: at each attach (before arming with -p; at every stop of the
 * dynamic loader in launch mode, before any code of a newly mapped object
 * runs) the read-only file mappings not seen yet are searched for the bytes
 * of NAME plus its NUL (rodata_scan.c), and every place found is entered
 * with its role. A string literal lives in .rodata, once per binary with
 * merged constants but possibly in several binaries, and a pointer to any
 * copy reads as the name: each copy is entered. Extra places (the same
 * bytes in a symbol table, say) cost a map slot and nothing else, since
 * only a pointer that SP_MARK passes is ever looked up. A name built at run
 * time (heap, stack, writable data) is not found and its marks are not
 * counted: the probe header asks for names with static storage.
 *
 * USDT endpoints. libbpf's bpf_program__attach_usdt() per file that has the
 * probe, with the key's argument index as the USDT cookie; libbpf keeps the
 * argument specs in maps of the same object.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "elf_notes.h"
#include "latency.skel.h"
#include "latency_provider.h"
#include "log.h"
#include "parse.h"
#include "privileges.h"
#include "proc_maps.h"
#include "proc_pid.h"
#include "vec.h"

_Static_assert(sizeof(struct sp_lat_name_key) == 16, "sp_lat_name_key layout");
_Static_assert(sizeof(struct sp_lat_pending_key) == 16,
	       "sp_lat_pending_key layout");
_Static_assert(sizeof(struct sp_lat_stats) == 48, "sp_lat_stats layout");
_Static_assert(offsetof(struct sp_lat_stats, unmatched_to) == 40,
	       "sp_lat_stats layout");

static const char *const error_names[SP_LAT_ERR__MAX] = {
	[SP_LAT_ERR_PENDING_FULL] = "pending_full",
	[SP_LAT_ERR_KEY_READ] = "key_unreadable",
};

const char *latency__error_name(unsigned int i)
{
	return i < SP_LAT_ERR__MAX ? error_names[i] : "unknown";
}

/* ---- endpoints ---------------------------------------------------------- */

static bool is_ident(const char *s, size_t n)
{
	size_t i;

	if (!n || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_'))
			return false;
	}
	return true;
}

int lat_endpoint__parse(struct lat_endpoint *e, const char *opt,
			const char *spec)
{
	const char *colon = strchr(spec, ':'), *comma, *probe_end;
	long arg = 0;

	memset(e, 0, sizeof(*e));
	if (!*spec) {
		sp_err("%s: empty (give an SP_MARK name, or PROVIDER:PROBE,key=argN)",
		       opt);
		return -EINVAL;
	}
	comma = colon ? strchr(colon, ',') : NULL;
	probe_end = comma ? comma : spec + strlen(spec);
	if (!colon || !is_ident(spec, (size_t)(colon - spec)) ||
	    !is_ident(colon + 1, (size_t)(probe_end - colon - 1))) {
		e->kind = LAT_MARK;
		e->name = strdup(spec);
		e->spec = strdup(spec);
		return e->name && e->spec ? 0 : -ENOMEM;
	}
	if (comma && (strncmp(comma + 1, "key=arg", 7) ||
		      parse_long(comma + 8, 0, SP_LAT_MAX_ARG - 1, &arg))) {
		sp_err("%s '%s': bad key '%s' (expected key=argN with N in 0..%d)",
		       opt, spec, comma + 1, SP_LAT_MAX_ARG - 1);
		return -EINVAL;
	}
	e->kind = LAT_USDT;
	e->arg = (unsigned int)arg;
	e->provider = strndup(spec, (size_t)(colon - spec));
	e->name = strndup(colon + 1, (size_t)(probe_end - colon - 1));
	if (!e->provider || !e->name ||
	    asprintf(&e->spec, "%s:%s,key=arg%u", e->provider, e->name,
		     e->arg) < 0) {
		e->spec = NULL;
		return -ENOMEM;
	}
	return 0;
}

void lat_endpoint__free(struct lat_endpoint *e)
{
	free(e->spec);
	free(e->provider);
	free(e->name);
	memset(e, 0, sizeof(*e));
}

static const struct lat_endpoint *endpoint(const struct latency_provider *lp,
					   int i)
{
	return i ? &lp->lo->to : &lp->lo->from;
}

static bool any_mark(const struct latency_provider *lp)
{
	return lp->lo->from.kind == LAT_MARK || lp->lo->to.kind == LAT_MARK;
}

/* ---- load --------------------------------------------------------------- */

static int open_and_load(struct latency_provider *lp, bool multi)
{
	unsigned int max_pending = lp->lo->max_pending;
	int err;

	lp->skel = latency_bpf__open();
	if (!lp->skel)
		return -errno;
	if (multi)
		attach__prepare_multi(lp->skel->progs.lat_mark);
	err = bpf_map__set_max_entries(lp->skel->maps.pending,
				       max_pending ? max_pending
						   : SP_LAT_DEFAULT_MAX_PENDING);
	if (!err)
		err = latency_bpf__load(lp->skel);
	if (err) {
		latency_bpf__destroy(lp->skel);
		lp->skel = NULL;
	}
	return err;
}

static int lp_load(void *ctx, const struct session_opts *o)
{
	struct latency_provider *lp = ctx;
	int err;

	lp->o = o;
	lp->multi = true;
	err = open_and_load(lp, true);
	if (err && err != -EPERM && err != -EACCES) {
		sp_info("no uprobe_multi links (%s); attaching site by site",
			strerror(-err));
		lp->multi = false;
		err = open_and_load(lp, false);
	}
	if (err) {
		privileges__explain_load_error(err, "the latency BPF program");
		return err;
	}
	lp->binding = (struct probe_binding){ .name = "mark",
					      .prog = lp->skel->progs.lat_mark };
	attacher__init(&lp->att, "sp", &lp->binding, 1, lp->multi);
	return 0;
}

/* ---- mark names ---------------------------------------------------------- */

struct hit_ctx {
	struct latency_provider *lp;
	int ep[2];		/* endpoint of each string scanned */
	size_t found[2];	/* places found in this scan */
};

static int on_hit(void *ctx, pid_t pid, unsigned int which, uint64_t addr)
{
	struct hit_ctx *hc = ctx;
	struct latency_provider *lp = hc->lp;
	struct sp_lat_name_key k = { .addr = addr, .tgid = (__u32)pid };
	__u32 role = hc->ep[which] ? SP_LAT_TO : SP_LAT_FROM;
	int err;

	if (bpf_map_update_elem(bpf_map__fd(lp->skel->maps.mark_names), &k,
				&role, BPF_ANY)) {
		err = -errno;
		if (err != -E2BIG)
			return err;
		if (!lp->names_full)
			sp_warn("pid %d: more than %d places hold the mark names; marks through the others are not counted",
				(int)pid, SP_LAT_MAX_NAME_ADDRS);
		lp->names_full = true;
		return 0;
	}
	hc->found[which]++;
	return 0;
}

/* Enters the name places of pid's mappings not scanned yet; adds them to
 * each endpoint's `found` and returns 0 or -errno. */
static int scan_names(struct latency_provider *lp, pid_t pid,
		      size_t found[2])
{
	struct hit_ctx hc = { .lp = lp };
	const char *strs[2];
	unsigned int n = 0;
	int i, err;

	for (i = 0; i < 2; i++) {
		if (endpoint(lp, i)->kind != LAT_MARK)
			continue;
		hc.ep[n] = i;
		strs[n++] = endpoint(lp, i)->name;
	}
	if (!n)
		return 0;
	err = rodata_scan__pid(&lp->scan, pid, strs, n, on_hit, &hc);
	if (err < 0)
		return err;
	for (i = 0; i < (int)n; i++) {
		found[hc.ep[i]] += hc.found[i];
		lp->found[hc.ep[i]] += hc.found[i];
		if (hc.found[i])
			sp_info("pid %d: mark name '%s' found at %zu new places",
				(int)pid, strs[i], hc.found[i]);
	}
	return 0;
}

/* ---- USDT endpoints ------------------------------------------------------ */

static unsigned int count_args(const char *args)
{
	unsigned int n = 0;
	const char *p = args;

	while (*p) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		n++;
		while (*p && *p != ' ' && *p != '\t')
			p++;
	}
	return n;
}

static bool usdt_done(const struct latency_provider *lp, pid_t pid,
		      const struct stat *st, int ep)
{
	size_t i;

	for (i = 0; i < lp->nobjs; i++)
		if (lp->objs[i].pid == pid && lp->objs[i].dev == st->st_dev &&
		    lp->objs[i].ino == st->st_ino && lp->objs[i].endpoint == ep)
			return true;
	return false;
}

static int usdt_remember(struct latency_provider *lp, pid_t pid,
			 const struct stat *st, int ep)
{
	if (VEC_RESERVE(lp->objs, lp->objs_cap, lp->nobjs + 1))
		return -ENOMEM;
	lp->objs[lp->nobjs++] = (struct lat_usdt_obj){
		.pid = pid, .dev = st->st_dev, .ino = st->st_ino, .endpoint = ep,
	};
	return 0;
}

static int push_link(struct latency_provider *lp, struct bpf_link *link)
{
	if (VEC_RESERVE(lp->links, lp->links_cap, lp->nlinks + 1))
		return -ENOMEM;
	lp->links[lp->nlinks++] = link;
	return 0;
}

/* Sites of endpoint ep in the file, all of which must have the key
 * argument. Returns their number or -errno (reported). */
static int usdt_sites(const struct lat_endpoint *e, const struct usdt_file *f,
		      const char *path)
{
	unsigned int nargs;
	size_t i;
	int n = 0;

	for (i = 0; i < f->nsites; i++) {
		const struct usdt_site *s = &f->sites[i];

		if (strcmp(s->provider, e->provider) || strcmp(s->name, e->name))
			continue;
		nargs = count_args(s->args);
		if (e->arg >= nargs) {
			if (nargs)
				sp_err("%s: probe %s:%s has %u arguments: key=arg%u names none (use arg0..arg%u)",
				       path, e->provider, e->name, nargs,
				       e->arg, nargs - 1);
			else
				sp_err("%s: probe %s:%s has no arguments: key=arg%u names none (a key argument is needed)",
				       path, e->provider, e->name, e->arg);
			return -EINVAL;
		}
		n++;
	}
	return n;
}

/* Attaches endpoint ep to the file for pid, once. Returns the sites
 * attached or -errno (reported, except -ENOENT/-EACCES/-EPERM from
 * opening the file, which the caller may retry another way). */
static int usdt_attach_file(struct latency_provider *lp, int ep, pid_t pid,
			    const char *open_path, const char *path)
{
	const struct lat_endpoint *e = endpoint(lp, ep);
	LIBBPF_OPTS(bpf_usdt_opts, uo, .usdt_cookie = e->arg);
	struct bpf_program *prog = ep ? lp->skel->progs.lat_usdt_to
				      : lp->skel->progs.lat_usdt_from;
	struct usdt_file *f = NULL;
	struct bpf_link *link;
	struct stat st;
	int n, err;

	if (stat(open_path, &st))
		return -errno;
	if (usdt_done(lp, pid, &st, ep))
		return 0;
	err = usdt_file__open(open_path, &f, NULL);
	if (err == -ENOEXEC)
		return usdt_remember(lp, pid, &st, ep);
	if (err)
		return err;
	n = usdt_sites(e, f, path);
	usdt_file__free(f);
	if (n <= 0)
		return n ? n : usdt_remember(lp, pid, &st, ep);
	link = bpf_program__attach_usdt(prog, pid, open_path, e->provider,
					e->name, &uo);
	if (!link) {
		err = -errno;
		sp_err("%s: cannot attach probe %s:%s: %s%s", path, e->provider,
		       e->name, strerror(-err),
		       err == -E2BIG ? " (too many distinct argument specs)" :
		       " (see -v)");
		return err == -ENOENT || err == -EACCES || err == -EPERM ? -EIO
									   : err;
	}
	err = push_link(lp, link);
	if (err) {
		bpf_link__destroy(link);
		return err;
	}
	err = usdt_remember(lp, pid, &st, ep);
	if (err)
		return err;
	lp->found[ep] += (size_t)n;
	sp_info("pid %d: %s: %d sites of %s:%s attached", (int)pid, path, n,
		e->provider, e->name);
	return n;
}

struct usdt_walk {
	struct latency_provider *lp;
	pid_t pid;
	size_t *found;
};

/* One mapped file, for every USDT endpoint. */
static int usdt_walk_file(void *ctx, const char *open_path, const char *path)
{
	struct usdt_walk *w = ctx;
	int ep, n, total = 0;

	for (ep = 0; ep < 2; ep++) {
		if (endpoint(w->lp, ep)->kind != LAT_USDT)
			continue;
		n = usdt_attach_file(w->lp, ep, w->pid, open_path, path);
		if (n < 0)
			return n;
		w->found[ep] += (size_t)n;
		total += n;
	}
	return total;
}

/* Every mapped file of pid, for every USDT endpoint. Returns the sites
 * attached or -errno. */
static int usdt_attach_pid(struct latency_provider *lp, pid_t pid,
			   size_t found[2])
{
	struct usdt_walk w = { .lp = lp, .pid = pid, .found = found };

	if (lp->lo->from.kind != LAT_USDT && lp->lo->to.kind != LAT_USDT)
		return 0;
	return proc_maps__for_each_exec_file(pid, usdt_walk_file, &w);
}

/* ---- session hooks ------------------------------------------------------- */

/* Each endpoint is in the process, and marks have sites there. */
static int check_pid(const struct latency_provider *lp, pid_t pid,
		     const size_t found[2], int mark_sites)
{
	char comm[32];
	int i;

	if (any_mark(lp) && !mark_sites) {
		sp_err("pid %d (%s): no SP_MARK sites in its executable or libraries (instrument it with probes/sp_probe.h)",
		       (int)pid, proc_pid__comm((int)pid, comm, sizeof(comm)));
		return -EINVAL;
	}
	for (i = 0; i < 2; i++) {
		const struct lat_endpoint *e = endpoint(lp, i);

		if (found[i])
			continue;
		if (e->kind == LAT_MARK)
			sp_err("pid %d (%s): mark name '%s' (%s) not found in its executable or libraries (SP_MARK names are found as string literals; check the spelling)",
			       (int)pid, proc_pid__comm((int)pid, comm, sizeof(comm)),
			       e->name, i ? "--to" : "--from");
		else
			sp_err("pid %d (%s): no probe %s:%s (%s) in its executable or libraries (sptrace list -p %d shows its probes)",
			       (int)pid, proc_pid__comm((int)pid, comm, sizeof(comm)),
			       e->provider, e->name, i ? "--to" : "--from",
			       (int)pid);
		return -EINVAL;
	}
	return 0;
}

static int lp_attach(void *ctx, pid_t pid, const char *path)
{
	struct latency_provider *lp = ctx;
	size_t found[2] = { 0, 0 };
	int n = 0, err, ep;

	if (path) {
		/* A command about to exec: its sites by file offset. Names
		 * are found at the loader's first stop, before main. */
		if (any_mark(lp)) {
			n = attacher__attach_file(&lp->att, pid, path, path);
			if (n < 0)
				return n;
			lp->mark_sites += (size_t)n;
		}
		for (ep = 0; ep < 2; ep++) {
			if (endpoint(lp, ep)->kind != LAT_USDT)
				continue;
			err = usdt_attach_file(lp, ep, pid, path, path);
			if (err < 0)
				return err;
			n += err;
		}
		return n;
	}
	/* Names first: a mark site must never fire unclassified. */
	err = scan_names(lp, pid, found);
	if (err)
		return err;
	if (any_mark(lp)) {
		n = attacher__attach_pid(&lp->att, pid);
		if (n < 0)
			return n;
		lp->mark_sites += (size_t)n;
	}
	/* -p, before arming: each endpoint must be in this process. */
	if (lp->o->npids && !lp->armed) {
		int marks = n;

		err = usdt_attach_pid(lp, pid, found);
		if (err < 0)
			return err;
		n += err;
		err = check_pid(lp, pid, found, marks);
		return err ? err : n;
	}
	err = usdt_attach_pid(lp, pid, found);
	return err < 0 ? err : n + err;
}

static void lp_arm(void *ctx, bool on)
{
	struct latency_provider *lp = ctx;

	lp->skel->bss->armed = on;
	lp->armed = on;
}

static void lp_detach(void *ctx)
{
	struct latency_provider *lp = ctx;
	size_t i;

	attacher__destroy(&lp->att);
	for (i = 0; i < lp->nlinks; i++)
		bpf_link__destroy(lp->links[i]);
	lp->nlinks = 0;
}

static void lp_destroy(void *ctx)
{
	struct latency_provider *lp = ctx;

	lp_detach(lp);
	free(lp->links);
	free(lp->objs);
	rodata_scan__free(&lp->scan);
	latency_bpf__destroy(lp->skel);
	lp->links = NULL;
	lp->objs = NULL;
	lp->nobjs = lp->objs_cap = lp->links_cap = 0;
	lp->skel = NULL;
}

void latency_provider__init(struct latency_provider *lp,
			    const struct latency_opts *lo,
			    struct session_provider *p)
{
	memset(lp, 0, sizeof(*lp));
	lp->lo = lo;
	*p = (struct session_provider){
		.name = "latency", .ctx = lp, .load = lp_load,
		.attach = lp_attach, .arm = lp_arm, .detach = lp_detach,
		.destroy = lp_destroy,
	};
}

int latency_provider__check(const struct latency_provider *lp,
			    const char *target)
{
	int i;

	if (any_mark(lp) && !lp->mark_sites) {
		sp_err("'%s' has no SP_MARK sites in its executable or libraries (instrument it with probes/sp_probe.h)",
		       target);
		return -ENOENT;
	}
	for (i = 0; i < 2; i++) {
		const struct lat_endpoint *e = endpoint(lp, i);

		if (lp->found[i])
			continue;
		if (e->kind == LAT_MARK)
			sp_err("mark name '%s' (%s) not found in '%s' or its libraries (SP_MARK names are found as string literals; check the spelling)",
			       e->name, i ? "--to" : "--from", target);
		else
			sp_err("no probe %s:%s (%s) in '%s' or its libraries (sptrace list FILE shows a file's probes)",
			       e->provider, e->name, i ? "--to" : "--from",
			       target);
		return -ENOENT;
	}
	return 0;
}

/* ---- results ------------------------------------------------------------- */

static int read_percpu(int fd, __u32 key, void *vals)
{
	return bpf_map_lookup_elem(fd, &key, vals) ? -errno : 0;
}

static int read_stats(struct latency_provider *lp, int ncpus,
		      struct sp_lat_stats *sum)
{
	struct sp_lat_stats *v = calloc((size_t)ncpus, sizeof(*v));
	int i, err;

	if (!v)
		return -ENOMEM;
	memset(sum, 0, sizeof(*sum));
	err = read_percpu(bpf_map__fd(lp->skel->maps.stats), 0, v);
	for (i = 0; !err && i < ncpus; i++) {
		if (v[i].count && (!sum->count || v[i].min_ns < sum->min_ns))
			sum->min_ns = v[i].min_ns;
		if (v[i].max_ns > sum->max_ns)
			sum->max_ns = v[i].max_ns;
		sum->count += v[i].count;
		sum->total_ns += v[i].total_ns;
		sum->overwritten += v[i].overwritten;
		sum->unmatched_to += v[i].unmatched_to;
	}
	free(v);
	return err;
}

static int read_hist(struct latency_provider *lp, int ncpus,
		     struct summary *s, const char *row)
{
	int fd = bpf_map__fd(lp->skel->maps.hist), i, err = 0;
	__u64 *v = calloc((size_t)ncpus, sizeof(*v)), sum;
	__u32 b;

	if (!v)
		return -ENOMEM;
	for (b = 0; !err && b < SP_HIST_BUCKETS; b++) {
		err = read_percpu(fd, b, v);
		for (sum = 0, i = 0; !err && i < ncpus; i++)
			sum += v[i];
		if (!err && sum)
			err = summary__add_hist(s, row, b, sum);
	}
	free(v);
	return err;
}

static int read_errors(struct latency_provider *lp, int ncpus,
		       struct latency_result *r)
{
	int fd = bpf_map__fd(lp->skel->maps.errors), i, err = 0;
	__u64 *v = calloc((size_t)ncpus, sizeof(*v));
	__u32 slot;

	if (!v)
		return -ENOMEM;
	for (slot = 0; !err && slot < SP_LAT_ERR__MAX; slot++) {
		err = read_percpu(fd, slot, v);
		for (i = 0; !err && i < ncpus; i++)
			r->errors[slot] += v[i];
	}
	free(v);
	return err;
}

/* Starts never ended: what `pending` still holds. */
static int count_pending(struct latency_provider *lp, uint64_t *n)
{
	int fd = bpf_map__fd(lp->skel->maps.pending);
	struct sp_lat_pending_key key, next, *prev = NULL;
	int err;

	*n = 0;
	while (!(err = bpf_map_get_next_key(fd, prev, &next))) {
		key = next;
		prev = &key;
		(*n)++;
	}
	return err == -ENOENT ? 0 : err;
}

int latency_provider__read(struct latency_provider *lp,
			   const struct session *ss, struct latency_result *r)
{
	int ncpus = libbpf_num_possible_cpus(), err;
	struct sp_query_stats q = { 0 };
	struct sp_lat_stats st;
	uint64_t left = 0;
	char *row = NULL;

	memset(r, 0, sizeof(*r));
	summary__init(&r->s);
	r->lo = lp->lo;
	r->duration_ns = session__duration(ss);
	if (ncpus <= 0) {
		err = ncpus ? ncpus : -EINVAL;
		goto out;
	}
	if (asprintf(&row, "%s -> %s", lp->lo->from.spec, lp->lo->to.spec) < 0) {
		row = NULL;
		err = -ENOMEM;
		goto out;
	}
	err = read_stats(lp, ncpus, &st);
	if (!err) {
		q.count = st.count;
		q.total_ns = st.total_ns;
		q.min_ns = st.min_ns;
		q.max_ns = st.max_ns;
		err = summary__add_stats(&r->s, row, &q);
	}
	if (!err)
		err = read_hist(lp, ncpus, &r->s, row);
	if (!err)
		err = read_errors(lp, ncpus, r);
	if (!err)
		err = count_pending(lp, &left);
	if (!err) {
		r->unmatched_from = left + st.overwritten;
		r->unmatched_to = st.unmatched_to;
		summary__finish(&r->s);
	}
out:
	if (err)
		sp_err("cannot read the latency BPF maps: %s", strerror(-err));
	free(row);
	return err;
}

void latency_result__free(struct latency_result *r)
{
	summary__free(&r->s);
}
