/* SPDX-License-Identifier: MIT */
/*
 * Reading the query BPF maps into a summary: the live source of the one
 * aggregator. Per-CPU values are summed here, rows of one name merged by
 * summary.c.
 */
#ifndef SPTRACE_QUERY_MAPS_H
#define SPTRACE_QUERY_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "summary.h"

struct query_bpf;
struct addr_spaces;

/* Names a tagged row (--func, --query) into buf: 0, or -errno when it
 * cannot (the row is then named "<unknown ...>"). */
typedef int (*query_tag_name_fn)(void *ctx, __u64 name, char *buf,
				 size_t len);

/* The row names read so far, kept from one read to the next. */
struct query_names;

struct query_names *query_names__new(void);
void query_names__free(struct query_names *c);

/* Fills s from the maps of a loaded query program; names come from
 * `names`, else from the map (then kept in `names`); those the BPF side
 * could not read are read through `as`; tagged rows are named by
 * `tag_name`; the rows of processes in `scales` (sorted by pid) are
 * scaled. 0 or -errno. */
int query_maps__read(struct query_bpf *skel, struct query_names *names,
		     const struct addr_spaces *as, query_tag_name_fn tag_name,
		     void *tag_ctx, const struct summary_sampled *scales,
		     size_t nscales, struct summary *s);
/* Deletes every row, histogram bucket and name of the processes `tgids`
 * (sorted in place) from the kernel maps, so that the maps hold only live
 * processes, and their names from `names` (if not NULL); *rows gets the
 * number of `queries` rows deleted. Call it only for processes that
 * exited, after reading their rows. 0 or -errno. */
int query_maps__evict(struct query_bpf *skel, struct query_names *names,
		      uint32_t *tgids, size_t n, size_t *rows);
/* Events the ring buffer could not take, summed over CPUs. 0 or -errno. */
int query_maps__lost(struct query_bpf *skel, uint64_t *lost);
/* Sets map sizes before load (0 keeps the default); with query_keys,
 * max_queries keyed rows besides as many of names. 0 or -errno. */
int query_maps__resize(struct query_bpf *skel, unsigned int max_queries,
		       unsigned int max_threads, bool query_keys);

#endif /* SPTRACE_QUERY_MAPS_H */
