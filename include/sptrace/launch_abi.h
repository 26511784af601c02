/* SPDX-License-Identifier: MIT */
/*
 * The ABI between bpf/launch.bpf.c and userspace/launch.c: the map that
 * tells the loader a SIGSTOP came from its own stopper, not from someone else.
 */
#ifndef SPTRACE_LAUNCH_ABI_H
#define SPTRACE_LAUNCH_ABI_H

#include <linux/types.h>

/* `stop_pending` map: one slot, the number of SIGSTOPs the stopper sent
 * that the loader has not seen yet. One slot, not one per pid: the stopper
 * is attached for the launched command only, and a pid key would have to
 * be translated when sptrace itself runs in a pid namespace. */

#endif /* SPTRACE_LAUNCH_ABI_H */
