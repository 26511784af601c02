/* SPDX-License-Identifier: MIT */
/*
 * The query provider of a session: bpf/query.bpf.c (per-query aggregation,
 * and the event ring buffer of `sptrace record`) attached to sp probes.
 */
#ifndef SPTRACE_QUERY_PROVIDER_H
#define SPTRACE_QUERY_PROVIDER_H

#include "attach.h"
#include "session.h"

struct query_bpf;
struct bpf_link;
struct summary;

struct query_provider {
	struct query_bpf *skel;
	struct attacher att;
	struct probe_binding bindings[16];
	bool multi;			/* uprobe_multi links */
	struct attacher fatt;		/* --func probes */
	char **fnames;			/* --func: row names, by index */
	size_t nfnames;
	struct bpf_link *exit_link;	/* thread-exit tracepoint */
	const struct session_opts *o;
};

/* Fills `p` with the hooks of the query provider backed by `qp`. */
void query_provider__init(struct query_provider *qp,
			  struct session_provider *p);
/* After the session ran: the aggregated figures (names read through the
 * session's address-space snapshots). 0 or -errno (reported). */
int query_provider__read(struct query_provider *qp, const struct session *ss,
			 struct summary *s);

#endif /* SPTRACE_QUERY_PROVIDER_H */
