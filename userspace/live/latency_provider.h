/* SPDX-License-Identifier: MIT */
/*
 * The latency provider of a session: bpf/latency.bpf.c attached to the two
 * endpoints of `sptrace latency` (SP_MARK names or third-party USDT probes),
 * and the figures it leaves behind.
 */
#ifndef SPTRACE_LATENCY_PROVIDER_H
#define SPTRACE_LATENCY_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sptrace/latency_abi.h>
#include "attach.h"
#include "rodata_scan.h"
#include "session.h"
#include "summary.h"

struct latency_bpf;
struct bpf_link;

enum lat_endpoint_kind {
	LAT_MARK,	/* SP_MARK(name, key) with this name */
	LAT_USDT,	/* PROVIDER:PROBE, key in argument `arg` */
};

/* One side of the interval: --from or --to. */
struct lat_endpoint {
	enum lat_endpoint_kind kind;
	char *spec;		/* as shown in reports: "NAME", "P:N,key=argK" */
	char *provider;		/* USDT only */
	char *name;		/* mark name, or USDT probe name */
	unsigned int arg;	/* USDT only: key argument index */
};

/*
 * Parses an endpoint: "PROVIDER:PROBE[,key=argN]" (C identifiers, N below
 * SP_LAT_MAX_ARG, key=arg0 if left out) is a USDT probe; anything else is
 * an SP_MARK name. `opt` names the option in messages. 0 or -EINVAL
 * (reported), -ENOMEM.
 */
int lat_endpoint__parse(struct lat_endpoint *e, const char *opt,
			const char *spec);
void lat_endpoint__free(struct lat_endpoint *e);

struct latency_opts {
	struct lat_endpoint from, to;
	unsigned int max_pending;	/* 0: SP_LAT_DEFAULT_MAX_PENDING */
};

/* A USDT file attached for one process and endpoint. */
struct lat_usdt_obj {
	pid_t pid;
	uint64_t dev, ino;
	int endpoint;		/* 0: from, 1: to */
};

struct latency_provider {
	const struct latency_opts *lo;
	const struct session_opts *o;
	struct latency_bpf *skel;
	bool multi;			/* lat_mark loaded for uprobe_multi */
	bool armed;
	struct probe_binding binding;	/* sp:mark -> lat_mark */
	struct attacher att;
	struct rodata_scan scan;
	struct lat_usdt_obj *objs;
	size_t nobjs, objs_cap;
	struct bpf_link **links;	/* USDT links */
	size_t nlinks, links_cap;
	size_t mark_sites;		/* sp:mark sites attached */
	/* Per endpoint: name places / USDT sites found, over all targets. */
	size_t found[2];
	bool names_full;		/* mark_names could not take an address */
};

/* The figures of a finished session. */
struct latency_result {
	const struct latency_opts *lo;
	uint64_t duration_ns;
	/* One row, "FROM -> TO": count, min, max, total, histogram and
	 * percentiles (summary__finish() done). */
	struct summary s;
	uint64_t unmatched_from;	/* left pending + overwritten */
	uint64_t unmatched_to;
	uint64_t errors[SP_LAT_ERR__MAX];
};

/* Fills `p` with the hooks of the latency provider backed by `lp`. */
void latency_provider__init(struct latency_provider *lp,
			    const struct latency_opts *lo,
			    struct session_provider *p);
/* After the session ran: every endpoint was found in some target (else
 * reported, -ENOENT); launch mode checks only at the end, since a library
 * loaded late may bring it. */
int latency_provider__check(const struct latency_provider *lp,
			    const char *target);
/* After the session ran: reads the maps. 0 or -errno (reported). Free the
 * result with latency_result__free(). */
int latency_provider__read(struct latency_provider *lp,
			   const struct session *ss, struct latency_result *r);
void latency_result__free(struct latency_result *r);
/* Name of error slot i in JSON ("pending_full", "key_unreadable"). */
const char *latency__error_name(unsigned int i);

#endif /* SPTRACE_LATENCY_PROVIDER_H */
