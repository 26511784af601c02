/* SPDX-License-Identifier: MIT */
/*
 * Launching `sptrace -- CMD`: the child waits before exec until the probes
 * are attached, and its dynamic loader stops it (through a BPF uprobe on
 * _dl_debug_state) whenever libraries are mapped, so that nothing it runs,
 * not even a library constructor, goes unseen.
 */
#ifndef SPTRACE_LAUNCH_H
#define SPTRACE_LAUNCH_H

#include <stdbool.h>
#include <sys/types.h>

struct launch_bpf;
struct bpf_link;

struct launch {
	pid_t pid;
	char *path;		/* the executable, resolved like execvp */
	int go_fd;		/* write end: the child execs on a byte */
	int err_fd;		/* read end: the child's exec errno, or EOF */
	struct launch_bpf *skel;
	struct bpf_link *stop_link;
};

/* Resolves argv[0] and forks the child, which waits. 0 or -errno (the
 * error is already reported). */
int launch__fork(struct launch *l, char *const argv[]);
/* Stops the child at each link-map change of its dynamic loader. */
int launch__arm_stopper(struct launch *l);
/* Lets the child exec. 0, or -errno when exec failed (reported). */
int launch__go(struct launch *l, const char *cmd);
/* Called when the child is seen stopped by SIGSTOP: true if the stop came
 * from our stopper (the caller attaches, then sends SIGCONT). */
bool launch__stop_is_ours(struct launch *l);
void launch__destroy(struct launch *l);

#endif /* SPTRACE_LAUNCH_H */
