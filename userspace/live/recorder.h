/* SPDX-License-Identifier: MIT */
/*
 * The recorder behind `sptrace record`: a session with the query provider
 * whose every probe event goes into a trace file (trace_format.h), names
 * resolved once per (pid, address), --only applied before writing.
 */
#ifndef SPTRACE_RECORDER_H
#define SPTRACE_RECORDER_H

#include <stdbool.h>
#include <stdint.h>
#include "query_provider.h"
#include "session.h"
#include "trace_format.h"

struct name_key {
	uint64_t addr;
	uint32_t pid;
	uint32_t id;		/* string id, or filtered out */
	bool used;
};

struct recorder {
	struct session ss;
	struct query_provider qp;
	struct trace_writer *w;
	struct ring_buffer *rb;
	struct name_key *names;	/* open addressing by (pid, addr) */
	uint32_t nnames, cap;
	char **only;		/* --only: names to keep, NULL-terminated */
	char *only_buf;		/* their bytes: a copy of the option */
	uint64_t filtered;	/* events left out by --only */
	uint32_t *titled;	/* pids given a title event, sorted */
	size_t ntitled, titled_cap;
	uint64_t records;	/* ring-buffer records read */
	uint64_t batches;	/* of which batches of batched events */
	uint64_t events;	/* events they held */
	uint64_t last_flush_ns;
	int err;		/* first writer error */
	bool started;		/* the session started: something was traced */
};

/* Sets up the session of so with the query provider, writing to w; only
 * is --only's NAME,NAME list or NULL. 0 or
 * -errno; recorder__destroy() in every case. */
int recorder__init(struct recorder *rec, const struct session_opts *so,
		   struct trace_writer *w, const char *only);
/* Starts the session and records until it ends (session__run()); a chunk
 * is ended every second, so a crash loses about a second at most. 0 or
 * -errno (reported). */
int recorder__run(struct recorder *rec);
/* The events the ring buffer had no room for, summed over CPUs. */
uint64_t recorder__lost(const struct recorder *rec);
void recorder__destroy(struct recorder *rec);

#endif /* SPTRACE_RECORDER_H */
