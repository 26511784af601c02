// SPDX-License-Identifier: MIT
/*
 * sptrace's own drain of batched events (see batch_drain.h). A thread that
 * has not filled its ring or crossed the age bound since its last flush
 * holds records no BPF program saw (a thread blocked for minutes holds them
 * for minutes); the kernel cannot make it flush, so at each report and at
 * stop sptrace reads the rings itself and hands the records to the same
 * arithmetic through a BPF_PROG_TYPE_SYSCALL program (BPF_PROG_TEST_RUN),
 * which updates the same maps. The program and the flushes take turns on a
 * thread's registration (a cmpxchg'ed busy flag), and the program refuses
 * records a flush drained meanwhile: nothing is counted twice.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sptrace/batch_abi.h>
#include <sptrace/query_abi.h>
#include "batch_drain.h"
#include "log.h"
#include <sptrace/tsc_map.h>	/* the .bss of query.skel.h */
#include "query.skel.h"

static void sp_dbg_fed(size_t fed)
{
	sp_info("%zu batched events read from the rings by sptrace", fed);
}

_Static_assert(sizeof(struct sp_batch_rec) == 32, "record layout");
_Static_assert(sizeof(struct sp_batch_hdr) == SP_BATCH_REC_OFF, "ring header");

/* One ring's undrained records, oldest first; v[0] is record `first`. */
struct ring_recs {
	struct sp_batch_rec *v;
	size_t n, pos;
	__u64 first;
};

/* Reads ring `addr` of process tgid: the committed records past
 * `consumed`. Records overwritten count in *lost unless `past` (the
 * thread's drains reached the disarm: they were later). 0, or -errno when
 * the ring cannot be read. */
static int read_ring(__u32 tgid, __u64 addr, __u64 consumed, bool past,
		     struct ring_recs *out, __u64 *lost)
{
	static unsigned char buf[SP_BATCH_RING_SIZE];
	const struct sp_batch_hdr *h = (const void *)buf;
	const struct sp_batch_rec *r = (const void *)(buf + SP_BATCH_REC_OFF);
	struct iovec local = { buf, sizeof(buf) };
	struct iovec remote = { (void *)(uintptr_t)addr, sizeof(buf) };
	__u64 seq, i;

	memset(out, 0, sizeof(*out));
	if (process_vm_readv((pid_t)tgid, &local, 1, &remote, 1, 0) !=
	    (ssize_t)sizeof(buf))
		return -errno ? -errno : -EIO;
	if (h->magic != SP_BATCH_MAGIC)
		return 0;	/* wiped by a fork, or never started */
	seq = h->seq;
	if (seq < consumed)
		consumed = 0;
	if (seq - consumed > SP_BATCH_CAP) {
		if (consumed && !past)
			*lost += seq - SP_BATCH_CAP - consumed;
		consumed = seq - SP_BATCH_CAP;
	}
	out->first = consumed;
	out->v = calloc(seq - consumed + 1, sizeof(*out->v));
	if (!out->v)
		return -ENOMEM;
	for (i = consumed; i < seq; i++) {
		const struct sp_batch_rec *x = &r[i & (SP_BATCH_CAP - 1)];

		if (x->commit != (__u32)(i + 1))
			break;	/* interrupted by the stop: never finished */
		out->v[out->n++] = *x;
	}
	return 0;
}

/* Runs the feed program on f; 0 if counted, 1 if refused (a flush of the
 * thread got there first: its records are the flush's), or -errno. */
static int feed(int map_fd, int prog_fd, struct sp_batch_feed *f)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts);
	__u32 zero = 0;
	int err;

	if (!f->n)
		return 0;
	err = bpf_map_update_elem(map_fd, &zero, f, BPF_ANY);
	if (!err)
		err = bpf_prog_test_run_opts(prog_fd, &opts);
	if (err)
		return -errno;
	return opts.retval ? 1 : 0;
}

/* Merges one thread's rings by time into feeds of SP_BATCH_FEED records,
 * each stating which records of each ring it holds. */
static int drain_thread(int map_fd, int prog_fd, __u32 tid,
			const struct sp_batch_reg *reg, struct sp_batch_feed *f,
			__u64 *lost, size_t *fed)
{
	struct ring_recs rings[SP_BATCH_MAX_RINGS];
	__u32 k, n = reg->n < SP_BATCH_MAX_RINGS ? reg->n : SP_BATCH_MAX_RINGS;
	__u64 chunk_lost = 0;
	int err = 0;

	memset(rings, 0, sizeof(rings));
	memset(f, 0, offsetof(struct sp_batch_feed, rec));
	f->tid = tid;
	f->tgid = reg->tgid;
	f->nrings = n;
	for (k = 0; k < n; k++) {
		f->start[k] = f->stop[k] = reg->consumed[k];
		f->addr[k] = reg->addr[k];
		if (!reg->addr[k])
			continue;	/* a free slot */
		err = read_ring(reg->tgid, reg->addr[k], reg->consumed[k],
				reg->past, &rings[k], &chunk_lost);
		if (err == -ESRCH || err == -EFAULT || err == -EIO) {
			err = 0;	/* gone: counted when it exited */
			continue;
		}
		if (err)
			goto cleanup;
	}
	for (;;) {
		struct ring_recs *best = NULL;

		for (k = 0; k < n; k++)
			if (rings[k].pos < rings[k].n &&
			    (!best || rings[k].v[rings[k].pos].ts <
					      best->v[best->pos].ts))
				best = &rings[k];
		if (best)
			f->rec[f->n++] = best->v[best->pos++];
		if (f->n < SP_BATCH_FEED && best)
			continue;
		for (k = 0; k < n; k++)
			if (rings[k].v)
				f->stop[k] = rings[k].first + rings[k].pos;
		err = feed(map_fd, prog_fd, f);
		if (err)
			break;	/* refused (1) or failed */
		*fed += f->n;
		*lost += chunk_lost;
		chunk_lost = 0;
		f->n = 0;
		memcpy(f->start, f->stop, sizeof(f->start));
		if (!best)
			break;
	}
	if (err == 1)
		err = 0;
cleanup:
	for (k = 0; k < SP_BATCH_MAX_RINGS; k++)
		free(rings[k].v);
	return err;
}

int batch_drain__run(struct query_bpf *skel)
{
	int rings_fd = bpf_map__fd(skel->maps.batch_rings);
	int map_fd = bpf_map__fd(skel->maps.batch_feed);
	int prog_fd = bpf_program__fd(skel->progs.sp_batch_feed);
	struct sp_batch_feed *f = NULL;
	struct sp_batch_reg reg;
	__u32 key, next, *prev = NULL;
	__u64 lost = 0;
	size_t fed = 0;
	int err = 0;

	if (prog_fd < 0)
		return 0;	/* batching not loaded */
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	while (!bpf_map_get_next_key(rings_fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(rings_fd, &key, &reg))
			continue;	/* the thread exited meanwhile */
		err = drain_thread(map_fd, prog_fd, key, &reg, f, &lost, &fed);
		if (err) {
			sp_err("cannot count the batched events still in the rings: %s",
			       strerror(-err));
			break;
		}
	}
	if (lost) {
		__u32 slot = SP_ERR_BATCH_LOST;
		int ncpus = libbpf_num_possible_cpus();
		__u64 *vals = ncpus > 0 ? calloc((size_t)ncpus, sizeof(*vals)) : NULL;

		/* Added on CPU 0 of the per-CPU error slot. */
		if (vals && !bpf_map_lookup_elem(bpf_map__fd(skel->maps.errors),
						 &slot, vals)) {
			vals[0] += lost;
			bpf_map_update_elem(bpf_map__fd(skel->maps.errors), &slot,
					    vals, BPF_ANY);
		}
		free(vals);
	}
	free(f);
	if (!err && fed)
		sp_dbg_fed(fed);
	return err ? err : (int)fed;
}
