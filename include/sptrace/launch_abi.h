/* SPDX-License-Identifier: MIT */
/*
 * The ABI between bpf/launch.bpf.c and userspace/launch.c: the map that
 * tells the loader a SIGSTOP came from its own stopper, not from someone else.
 */
#ifndef SPTRACE_LAUNCH_ABI_H
#define SPTRACE_LAUNCH_ABI_H

#include <linux/types.h>

#define SP_LAUNCH_MAX_PROCS 1024

/* `stop_pending` map: key __u32 tgid, value __u32 stops sent, not yet seen. */

#endif /* SPTRACE_LAUNCH_ABI_H */
