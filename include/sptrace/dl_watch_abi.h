/* SPDX-License-Identifier: MIT */
/*
 * The ABI between bpf/dl_watch.bpf.c and userspace/dl_watch.c.
 *
 * `dl_events` map: one slot counting the dynamic-loader events the program
 * saw (each stop it sent, in stop mode). One slot, not one per pid: a link
 * is attached for chosen processes only, and a pid key would need
 * translating when sptrace itself runs in a pid namespace.
 */
#ifndef SPTRACE_DL_WATCH_ABI_H
#define SPTRACE_DL_WATCH_ABI_H

#include <linux/types.h>

#endif /* SPTRACE_DL_WATCH_ABI_H */
