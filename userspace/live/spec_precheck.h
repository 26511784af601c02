/* SPDX-License-Identifier: MIT */
/*
 * The probes a session needs checked against the files the targets will
 * have, before any BPF is loaded or any command starts
 * (session_opts__precheck): its sp probes when they are all it counts
 * (session_opts__sp_only()), and its --query probes, by these rules:
 *
 *   -p PID     the files PID maps now: a probe in none of them is refused
 *              (exactly what attaching would refuse).
 *   -b FILE    the -b files: only they are attached, so a probe in none of
 *              them is refused; when it is in a library FILE needs, the
 *              message names that library.
 *   -- CMD     CMD's program (a "#!" script followed to its interpreter)
 *              and its DT_NEEDED closure (discovery/elf_deps.h). A probe in
 *              none of them is refused when no file of the closure can load
 *              more (imports neither dlopen nor an exec function) and
 *              --follow is off. Else the probe may come with a library
 *              loaded later or a program exec'd: not refused (a note with
 *              -v), and the check after the run decides, in one line.
 *
 * Like bpftrace's missing_probes=error for a named (not wildcard) probe,
 * wherever the files are known; where they are not, the run is not lost
 * to a refusal of what may work (a plugin's probes, a shim's program).
 * One line per spec line: its first probe found nowhere, the others named
 * in the parentheses.
 */
#ifndef SPTRACE_SPEC_PRECHECK_H
#define SPTRACE_SPEC_PRECHECK_H

#include "session_opts.h"

/* --query: one line per probe refused. 0 or -EINVAL. */
int spec_precheck__targets(const struct session_opts *o);
/* sp probes, by the same rules, each -p process and -b file on its own:
 * one line per target that has none. 0 or -EINVAL. */
int spec_precheck__sp(const struct session_opts *o);

#endif /* SPTRACE_SPEC_PRECHECK_H */
