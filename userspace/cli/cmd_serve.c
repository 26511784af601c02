// SPDX-License-Identifier: MIT
/*
 * `sptrace serve`: keeps the probes attached and serves the figures at
 * /metrics in the OpenMetrics / Prometheus text format (docs/fleet.md).
 * The HTTP server (libmicrohttpd, serve_http.c) is polled by the session's
 * own wait loop, so serving and tracing share one thread and the maps are
 * read by the thread that owns them.
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "clock.h"
#include "commands.h"
#include "exited_rows.h"
#include "log.h"
#include "parse.h"
#include "mem_provider.h"
#include "openmetrics.h"
#include "query_provider.h"
#include "serve_http.h"
#include "session.h"
#include "summary.h"
#include "summary_top.h"

#define SERVE_DEFAULT_LISTEN "127.0.0.1:9464"
/* One read of the maps serves every scrape within this window. */
#define SERVE_CACHE_NS 500000000ull
/* Without scrapes, exited processes are still evicted this often. */
#define SERVE_HOUSEKEEP_NS 5000000000ull

struct serve_env {
	struct session_opts so;
	const char *listen;
	double keep_exited_s;
	unsigned int top;	/* --top N: rows a scrape shows; 0: all */
	enum om_proc_labels proc_labels;
	bool mem;
};

struct serve {
	struct session ss;
	struct query_provider qp;
	struct mem_provider mp;
	bool mem;
	unsigned int top;
	enum om_proc_labels proc_labels;
	struct exited_rows rows;
	struct serve_http srv;
	/* The last exposition of each format ([openmetrics]): every scrape
	 * within SERVE_CACHE_NS is sent from it, each at its own pace. */
	struct om_snapshot *cache[2];
	uint64_t cache_ns[2];
	uint64_t last_read_ns;
	struct om_cache *om;		/* rendered rows, kept between scrapes */
	double read_s;
	bool failed;
};

static const char usage[] =
"Usage: sptrace serve [OPTIONS] -b PATH\n"
"       sptrace serve [OPTIONS] -p PID[,PID...]\n"
"       sptrace serve [OPTIONS] -- CMD [ARGS...]\n"
"Keep the probes attached and serve the per-query figures at /metrics in\n"
"the OpenMetrics / Prometheus text format (docs/fleet.md).\n"
"\n"
"  -b, --binary PATH        trace every process that runs or maps PATH,\n"
"                           including those started later (repeatable)\n"
"  -p, --pid PID[,PID...]   trace these running processes (serving ends\n"
"                           when they all exited)\n"
"  -d, --duration SECONDS   stop after this long (default: Ctrl-C)\n"
"      --listen ADDR:PORT   numeric address to listen on (default "
SERVE_DEFAULT_LISTEN ");\n"
"                           [IPV6]:PORT; port 0 picks a free port. Only an\n"
"                           address named here is used, loopback or not\n"
"      --mem                also the memory gauges of `sptrace mem`, per\n"
"                           type (docs/memory.md; no allocation stacks)\n"
"      --keep-exited SECONDS  an exited process keeps series of its own this\n"
"                           long, then its figures leave /metrics (default 300)\n"
"      --top N              the N rows of most self time keep their names; the\n"
"                           rest are summed into one \"<other>\" row per process\n"
"      --process-labels info|series  where binary and title go: once per\n"
"                           process on sptrace_process_info (info, default),\n"
"                           or also on every per-query series (series)\n"
"      --query SPEC, --query-file FILE, --func GLOB, --query-keys, --max-queries N,\n"
"      --max-threads N      as for sptrace (sptrace --help)\n"
"  -v, --verbose            say what is attached; show libbpf's messages\n"
"  -h, --help\n";

static void print_usage(FILE *f)
{
	fputs(usage, f);
}

static int parse_args(int argc, char **argv, struct serve_env *env)
{
	static const struct option opts[] = {
		SESSION_LONG_OPTS,
		SESSION_QUERY_OPTS,
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "keep-exited", required_argument, NULL, OPT_KEEP_EXITED },
		{ "mem", no_argument, NULL, OPT_MEM },
		{ "top", required_argument, NULL, OPT_TOP },
		{ "process-labels", required_argument, NULL,
		  OPT_PROCESS_LABELS },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	int c, r;

	optind = 1;
	while ((c = cli__getopt(argc, argv, "+" SESSION_SHORT_OPTS "vh", opts,
				NULL)) != -1) {
		r = session_opts__parse(&env->so, c, optarg);
		if (r < 0)
			return r;
		if (r)
			continue;
		switch (c) {
		case OPT_LISTEN:
			env->listen = optarg;
			break;
		case OPT_MEM:
			env->mem = true;
			break;
		case OPT_TOP: {
			char *end;
			long v;

			errno = 0;
			v = strtol(optarg, &end, 10);
			if (!*optarg || *end || errno || v < 1 || v > 16777216) {
				sp_err("invalid --top '%s' (expected a number of rows, 1 to 16777216)",
				       optarg);
				return -EINVAL;
			}
			env->top = (unsigned int)v;
			break;
		}
		case OPT_PROCESS_LABELS:
			if (!strcmp(optarg, "info")) {
				env->proc_labels = OM_PROC_LABELS_INFO;
			} else if (!strcmp(optarg, "series")) {
				env->proc_labels = OM_PROC_LABELS_SERIES;
			} else {
				sp_err("invalid --process-labels '%s' (expected info or series)",
				       optarg);
				return -EINVAL;
			}
			break;
		case OPT_KEEP_EXITED:
			if (parse_double(optarg, 0, 86400 * 365,
					 &env->keep_exited_s)) {
				sp_err("invalid --keep-exited '%s' (expected seconds)",
				       optarg);
				return -EINVAL;
			}
			break;
		default:
			if (cli__option(c, print_usage))
				return -EINVAL;
		}
	}
	if (optind < argc)
		env->so.cmd = &argv[optind];
	/* The exposition has only the ladder's bounds: counted by them in
	 * the kernel, exactly, in fewer `hist` entries to read. */
	env->so.hist_ladder = true;
	if (!env->so.npids && !env->so.nbinaries && !env->so.cmd) {
		sp_err("serve: no targets (give -b PATH, -p PID or -- CMD)");
		return -EINVAL;
	}
	return session_opts__check(&env->so);
}

/* Resident bytes of a process ("self" for sptrace); 0 if unknown. */
static uint64_t rss_of(const char *pid)
{
	unsigned long long size, res;
	char path[64];
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/proc/%s/statm", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fscanf(f, "%llu %llu", &size, &res);
	fclose(f);
	return n == 2 ? res * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

static int proc_cmp(const void *a, const void *b)
{
	const struct om_process *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Reads the maps and renders one exposition; NULL on error (reported). */
static struct om_snapshot *render(struct serve *sv, bool openmetrics)
{
	struct om_health h = {};
	struct summary top;
	unsigned int folded = 0;
	struct om_process *procs = NULL;
	struct om_snapshot *sn = NULL;
	struct mem_report mr;
	struct summary s;
	uint64_t t0 = now_ns();
	size_t i, n = 0;
	char pid[16];
	int err;

	summary__init(&s);
	mem_report__init(&mr);
	err = exited_rows__read(&sv->rows, &s);
	if (!err && sv->top) {
		/* --top: the scrape's rows, the rest folded exactly. */
		summary__init(&top);
		err = summary__top(&s, sv->top, &top, &folded);
		summary__free(&s);
		s = top;
		h.folded_rows = folded;
	}
	if (!err && sv->mem)
		err = mem_provider__read(&sv->mp, &sv->ss, &mr);
	sv->last_read_ns = now_ns();
	sv->read_s = (double)(sv->last_read_ns - t0) / 1e9;
	if (err)
		goto cleanup;
	procs = calloc(sv->rows.nprocs + 2, sizeof(*procs));
	if (!procs)
		goto cleanup;
	for (i = 0; i < sv->rows.nprocs; i++) {
		const struct tracked_proc *p = &sv->rows.procs[i];

		snprintf(pid, sizeof(pid), "%u", p->pid);
		if (!p->pid)
			continue;
		procs[n++] = (struct om_process){
			.pid = p->pid, .comm = p->comm, .binary = p->exe,
			.title = p->title,
			.alive = p->alive,
			.rss_bytes = p->alive ? rss_of(pid) : 0,
		};
	}
	/* pid 0: the figures of every exited process past --keep-exited. */
	procs[n++] = (struct om_process){ .pid = 0, .comm = "(exited)",
					  .binary = "" };
	qsort(procs, n, sizeof(*procs), proc_cmp);
	h.attached_probes = sv->ss.sites;
	h.targets_alive = exited_rows__alive(&sv->rows);
	h.evicted_rows = sv->rows.evicted_rows;
	h.exited_processes = sv->rows.exited;
	h.http_dropped = sv->srv.dropped;
	h.http_rejected = sv->srv.rejected;
	h.self_rss_bytes = rss_of("self");
	h.read_seconds = sv->read_s;
	err = openmetrics__snapshot(&(struct om_input){
		.s = &s, .mem = sv->mem ? &mr : NULL,
		.procs = procs, .nprocs = n, .h = &h,
		.openmetrics = openmetrics, .cache = sv->om,
		.proc_labels = sv->proc_labels,
	}, &sn);
cleanup:
	if (!sn && !sv->failed) {
		sp_err("serve: cannot render /metrics: %s",
		       strerror(err ? -err : ENOMEM));
		sv->failed = true;	/* said once */
	}
	free(procs);
	summary__free(&s);
	mem_report__free(&mr);
	return sn;
}

/* One scrape's read of a snapshot. */
struct scrape {
	struct om_snapshot *sn;
	struct om_cursor cur;
};

static size_t scrape_read(void *ctx, char *buf, size_t max)
{
	struct scrape *sc = ctx;

	return om_snapshot__read(sc->sn, &sc->cur, buf, max);
}

static void scrape_done(void *ctx)
{
	struct scrape *sc = ctx;

	om_snapshot__put(sc->sn);
	free(sc);
}

static struct serve_body *metrics(void *ctx, bool openmetrics)
{
	struct serve *sv = ctx;
	uint64_t now = now_ns();
	struct scrape *sc;
	int k = openmetrics;

	if (!sv->cache[k] || now - sv->cache_ns[k] > SERVE_CACHE_NS) {
		/* A scrape still sending the old one keeps it (and its
		 * block of row texts) until it is done. */
		om_snapshot__put(sv->cache[k]);
		sv->cache[k] = render(sv, openmetrics);
		if (!sv->cache[k])
			return NULL;
		sv->cache_ns[k] = now;
	}
	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return NULL;
	sc->sn = om_snapshot__get(sv->cache[k]);
	return serve_body__stream(om_snapshot__len(sc->sn),
				  openmetrics__content_type(openmetrics),
				  scrape_read, scrape_done, sc);
}

static int serve_poll(void *ctx)
{
	struct serve *sv = ctx;
	bool more = serve_http__poll(&sv->srv);

	exited_rows__poll(&sv->rows);
	if (now_ns() - sv->last_read_ns > SERVE_HOUSEKEEP_NS) {
		struct summary s;

		/* Evicts the rows of exited processes without a scrape. */
		summary__init(&s);
		exited_rows__read(&sv->rows, &s);
		sv->last_read_ns = now_ns();
		summary__free(&s);
	}
	return more;	/* at once again: a scrape is being sent */
}

int cmd_serve(int argc, char **argv)
{
	struct serve_env env = { .keep_exited_s = 300 };
	struct sockaddr_storage addr;
	struct session_provider p, mem_p;
	struct mem_opts mo = { .no_stacks = true };
	struct serve *sv;
	socklen_t alen;
	char why[256];
	int err, status = 1;

	if (parse_args(argc, argv, &env)) {
		session_opts__free(&env.so);
		return 1;
	}
	/* Only an address the operator wrote: the default is loopback,
	 * and names are never resolved to some address of this host. The
	 * targets, specs and privileges in the same pass. */
	err = serve_http__parse_addr(env.listen ? env.listen
					       : SERVE_DEFAULT_LISTEN,
				    &addr, &alen, why, sizeof(why));
	if (err)
		sp_err("--listen '%s': %s", env.listen, why);
	env.so.need_sp = !env.mem;	/* else the memory gauges count */
	if (session_opts__precheck(&env.so) || err) {
		session_opts__free(&env.so);
		return 1;
	}
	/* Each scrape in flight has a SERVE_STREAM_BLOCK buffer (MHD's), and
	 * each exposition kept for one its block of row texts: from mmap, so
	 * once freed they leave nothing behind in the heap (glibc's threshold
	 * would rise past them after the first larger free). */
	mallopt(M_MMAP_THRESHOLD, SERVE_STREAM_BLOCK / 2);
	sv = calloc(1, sizeof(*sv));
	if (!sv) {
		session_opts__free(&env.so);
		return 1;
	}
	err = serve_http__open(&sv->srv, &addr, alen, "/metrics", metrics,
				sv);
	if (err) {
		sp_err("serve: cannot listen on %s: %s (is the port in use? --listen picks another)",
		       env.listen ? env.listen : SERVE_DEFAULT_LISTEN,
		       strerror(-err));
		free(sv);
		session_opts__free(&env.so);
		return 1;
	}
	if (!serve_http__is_loopback(&addr))
		sp_warn("serving on %s, not a loopback address: whoever reaches it reads the query names and process labels",
			sv->srv.addr);
	sv->om = om_cache__new();
	if (!sv->om) {
		serve_http__close(&sv->srv);
		free(sv);
		session_opts__free(&env.so);
		return 1;
	}
	session__init(&sv->ss, &env.so);
	query_provider__init(&sv->qp, &p);
	/* Counters never go down: a sampled process's counts are its
	 * windows' own (--max-overhead), not scaled. */
	sv->qp.scale_rows = false;
	exited_rows__init(&sv->rows, &sv->qp, &sv->ss, env.keep_exited_s);
	err = session__add(&sv->ss, &p);
	sv->mem = env.mem;
	sv->top = env.top;
	sv->proc_labels = env.proc_labels;
	sv->rows.keep_spaces = env.mem;
	if (!err && env.mem) {
		mem_provider__init(&sv->mp, &mo, &mem_p);
		err = session__add(&sv->ss, &mem_p);
	}
	if (!err)
		err = session__start(&sv->ss);
	if (!err) {
		fprintf(stderr, "sptrace: serving http://%s/metrics\n",
			sv->srv.addr);
		sv->last_read_ns = now_ns();
		err = session__run(&sv->ss, serve_http__fd(&sv->srv), serve_poll, sv);
	}
	if (!err)
		status = 0;
	serve_http__close(&sv->srv);
	om_snapshot__put(sv->cache[0]);
	om_snapshot__put(sv->cache[1]);
	om_cache__free(sv->om);
	exited_rows__free(&sv->rows);
	session__destroy(&sv->ss);
	if (err)
		status = session__exit_status(&sv->ss, err);
	else if (sv->ss.launched)
		status = session__exit_status(&sv->ss, 0);
	free(sv);
	session_opts__free(&env.so);
	return status;
}
