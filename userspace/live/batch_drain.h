/* SPDX-License-Identifier: MIT */
/*
 * Batched sp events still in the hosts' rings at a report or when tracing
 * stops: read them from each thread's rings and count them through the
 * query program.
 */
#ifndef SPTRACE_BATCH_DRAIN_H
#define SPTRACE_BATCH_DRAIN_H

struct query_bpf;

/*
 * Every ring that bpf/query.bpf.c registered is read with process_vm_readv,
 * its records no flush drained are merged by time per thread and run
 * through the sp_batch_feed program. At each report (threads still write)
 * and after the links are gone. Rings of exited processes are skipped
 * (their exit drained them). Returns the records fed or -errno (reported).
 */
int batch_drain__run(struct query_bpf *skel);

#endif /* SPTRACE_BATCH_DRAIN_H */
