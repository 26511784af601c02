// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The maps of stop_release.bpf.h and nothing else: userspace/live/
 * stop_release.c creates them from this object before the programs that
 * stop processes are loaded (they reuse the fds), and hands them to the
 * releaser.
 */
#include "stop_release.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";
