/* SPDX-License-Identifier: MIT */
/* Checking, before loading anything, that we may load BPF and attach uprobes. */
#ifndef SPTRACE_PRIVILEGES_H
#define SPTRACE_PRIVILEGES_H

/* 0, or -EPERM after telling the user which capability is missing. */
int privileges__check(void);
/* Explains a failed BPF load (EPERM: capabilities or lockdown; missing BTF). */
void privileges__explain_load_error(int err, const char *what);

#endif /* SPTRACE_PRIVILEGES_H */
