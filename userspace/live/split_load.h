/* SPDX-License-Identifier: MIT */
/*
 * One BPF object's programs verified on two CPUs at once.
 *
 * Most of the time before tracing starts is the kernel's verifier, which
 * runs in the thread that loads a program, one program after another
 * within a bpf_object. Three skeletons of the same object share one set
 * of maps: `maps` (no program autoloaded) creates them, with its .rodata
 * and sizes as set; `a` and `b`, each with its own share of the programs
 * autoloaded, reuse every one of them and load in two threads. The
 * programs of a USDT-attached family must all be in one of the two: each
 * object keeps its own USDT spec ids in the shared maps.
 */
#ifndef SPTRACE_SPLIT_LOAD_H
#define SPTRACE_SPLIT_LOAD_H

#include <bpf/libbpf.h>

/*
 * Loads `maps`, then `a` and `b` at once, every map of theirs reusing
 * maps' (the three opened from one object file). 0, or the first error of
 * maps, a, b (negative errno). `maps` may be destroyed after: the maps
 * live on in a and b.
 */
int split_load(struct bpf_object_skeleton *maps, struct bpf_object_skeleton *a,
	       struct bpf_object_skeleton *b);

#endif /* SPTRACE_SPLIT_LOAD_H */
