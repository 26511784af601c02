/* SPDX-License-Identifier: MIT */
/*
 * Unregistering the uprobes of a finished session after sptrace is gone,
 * when no traced process is left to hit them (see detach_behind.c).
 */
#ifndef SPTRACE_DETACH_BEHIND_H
#define SPTRACE_DETACH_BEHIND_H

/*
 * Starts a process that holds this process's BPF links and perf events
 * (nothing else: not its output, not its terminal) until the fd returned
 * is closed, then exits, and the kernel unregisters their uprobes in it.
 * Closing them here is then quick. Call right before detaching; the
 * write end of a pipe (>= 0, close-on-exec) or -errno.
 */
int detach_behind__start(void);

#endif /* SPTRACE_DETACH_BEHIND_H */
