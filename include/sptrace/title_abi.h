/* SPDX-License-Identifier: MIT */
/*
 * The ABI of exit titles: bpf/exit_title.bpf.c copies the argv area of a
 * target process as it exits (its title, which a server's worker rewrites
 * after the fork: PostgreSQL's "postgres: bench bench [local] idle") and
 * userspace/live/exit_titles.c reads it, so that a process living less
 * than the 200 ms between two title scans still has its last title.
 *
 * `title_files`: struct sp_title_file -> 1, the executables whose
 * processes count, written by userspace only.
 * `exit_titles`: tgid -> struct sp_exit_title, written by BPF, read and
 * deleted by userspace.
 */
#ifndef SPTRACE_TITLE_ABI_H
#define SPTRACE_TITLE_ABI_H

#include <linux/types.h>

#define SP_TITLE_RAW 128	/* bytes of the argv area copied */
#define SP_TITLE_FILES 64	/* executables watched */
#define SP_EXIT_TITLES 4096	/* exits between two reads (200 ms) */

/* An executable, as the kernel names it: the device of its inode's
 * super_block (the kernel's dev_t, major << 20 | minor) and its inode. */
struct sp_title_file {
	__u64 dev;
	__u64 ino;
};

struct sp_exit_title {
	__u64 args_len;		/* mm->arg_end - mm->arg_start */
	__u32 len;		/* bytes of raw copied */
	__u32 pad;
	char raw[SP_TITLE_RAW];	/* from mm->arg_start */
};

#endif /* SPTRACE_TITLE_ABI_H */
