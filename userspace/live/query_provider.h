/* SPDX-License-Identifier: MIT */
/*
 * The query provider of a session: bpf/query.bpf.c (per-query aggregation,
 * and the event ring buffer of `sptrace record`) attached to sp probes.
 */
#ifndef SPTRACE_QUERY_PROVIDER_H
#define SPTRACE_QUERY_PROVIDER_H

#include <linux/types.h>
#include <sptrace/query_abi.h>
#include "attach.h"
#include "overhead.h"
#include "sampler.h"
#include "pg_text.h"
#include "session.h"
#include "tsc_clock.h"

struct query_bpf;
struct bpf_link;
struct summary;

struct query_provider {
	struct query_bpf *skel;
	/* The second share of its programs (split_load.h), NULL if none:
	 * skel->progs points at them. */
	struct query_bpf *skel2;
	struct attacher att;
	struct probe_binding bindings[16];
	struct probe_binding batch_bindings[24];	/* files with sp:flush */
	bool batch;			/* batched events loaded and wanted */
	/* The sp probes' programs loaded: false only for -b files with no
	 * sp probe (third-party probes for --query, --func). */
	bool sp;
	bool sp_told;			/* a replaced file's sp probes: said */
	struct { uint64_t dev, ino; } sp_none[SESSION_MAX_PIDS];	/* -b */
	int nsp_none;			/* -b files seen without sp probes */
	bool drained;			/* stop drain of the rings done */
	/* A read only to evict exited processes (exited_rows__tick()): it
	 * drains no live thread's rings (racing a spinning host's flushes
	 * for nothing: the last read counts them) and the per-line warnings
	 * wait for the run's last read. */
	bool evict_read;
	/* Per spec line and error: when its warning was last printed, with
	 * what count (a read again and again warns once a minute at most). */
	uint64_t spec_warned_ns[SP_SPEC_MAX_LINES * SP_SPEC_ERR__MAX];
	uint64_t spec_warned_n[SP_SPEC_MAX_LINES * SP_SPEC_ERR__MAX];
	bool tsc;			/* the TSC map kept (tsc_clock.h) */
	bool tsc_ask;			/* sp_tsc_semaphore raised: records
					 * stamped with the TSC */
	bool tsc_told;			/* -v: the map's figures said */
	struct tsc_clock tclock;	/* the TSC -> ns map it writes */
	size_t batched_files, event_files;	/* kept past detaching */
	size_t tsc_unwatched;	/* att.watch_refused, kept past detaching */
	bool multi;			/* uprobe_multi links */
	struct attacher fatt;		/* --func probes */
	char **fnames;			/* --func: row names, by index */
	size_t nfnames;
	struct pg_text *pgt;		/* normalize=pg lines' row names */
	struct bpf_link *exit_link;	/* thread-exit tracepoint */
	struct bpf_link *exec_link;	/* batched: drain before exec */
	/* --query specs: their USDT links, the files they were looked for
	 * in, per spec and probe the sites found. */
	struct bpf_link **spec_links;
	size_t nspec_links;
	struct qp_spec_file *spec_files;
	size_t nspec_files;
	size_t *spec_found;		/* [spec * QUERY_SPEC_MAX_PROBES + probe] */
	char **providers;		/* USDT providers of the files seen */
	size_t nproviders;
	bool spec_by_path;		/* -b or a command: checked at the end */
	/* --func: per spec the functions it matched; checked like specs. */
	size_t func_found[SESSION_MAX_FUNCS];
	bool func_checked;
	struct query_names *names;	/* kept from one read to the next */
	bool follow;			/* --follow: count followed_fd's tgids */
	int followed_fd;
	const struct session_opts *o;
	struct overhead oh;		/* what the probes cost the targets */
	struct overhead_prog oh_progs[9];	/* its programs, by kind */
	struct sampler sm;		/* --max-overhead */
	/* Rows of sampled processes scaled at each read (not for serve,
	 * whose counters must never go down). */
	bool scale_rows;
	bool oh_started;
	bool oh_told;			/* -v: why there is no estimate */
	pid_t launched;			/* launch mode: the command's pid */
};

/* Fills `p` with the hooks of the query provider backed by `qp`. */
void query_provider__init(struct query_provider *qp,
			  struct session_provider *p);
/* After the session ran: each --query probe was found somewhere (else
 * reported, -ENOENT). With -p this is checked when attaching. */
int query_provider__check(const struct query_provider *qp,
			  const char *target);
/* The string of a tagged row name (--func, --query): 0, -ENOENT if
 * unknown, -EINVAL if `name` is an address. */
int query_provider__tag_name(const struct query_provider *qp, __u64 name,
			     char *buf, size_t len);
/* After the session ran: the aggregated figures (names read through the
 * session's address-space snapshots). 0 or -errno (reported). */
int query_provider__read(struct query_provider *qp, const struct session *ss,
			 struct summary *s);

#endif /* SPTRACE_QUERY_PROVIDER_H */
