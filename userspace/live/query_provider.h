/* SPDX-License-Identifier: MIT */
/*
 * The query provider of a session: bpf/query.bpf.c (per-query aggregation,
 * and the event ring buffer of `sptrace record`) attached to sp probes.
 */
#ifndef SPTRACE_QUERY_PROVIDER_H
#define SPTRACE_QUERY_PROVIDER_H

#include <linux/types.h>
#include "attach.h"
#include "session.h"
#include "tsc_clock.h"

struct query_bpf;
struct bpf_link;
struct summary;

struct query_provider {
	struct query_bpf *skel;
	struct attacher att;
	struct probe_binding bindings[16];
	struct probe_binding batch_bindings[24];	/* files with sp:flush */
	bool batch;			/* batched events loaded and wanted */
	bool drained;			/* stop drain of the rings done */
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
