/* SPDX-License-Identifier: MIT */
/*
 * /proc/PID/maps reader: which files a process has mapped, where, and from
 * which file offset -- what USDT attachment needs to find the binaries and
 * libraries of a running process.
 */
#ifndef SPTRACE_PROC_MAPS_H
#define SPTRACE_PROC_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proc_mapping {
	uint64_t start, end, pgoff;
	uint64_t dev_major, dev_minor, inode;
	char perms[5];		/* "r-xp", NUL-terminated */
	/* Owned; NULL for an anonymous mapping; as the kernel prints it (may
	 * hold spaces, "[heap]", "[vdso]", "\012" for a newline), less a
	 * trailing " (deleted)". */
	char *path;
	bool deleted;		/* path ended with " (deleted)" */
};

struct proc_maps {
	struct proc_mapping *v;
	size_t n;
};

/*
 * Reads /proc/PID/maps. Returns 0 or -errno: -ENOENT when there is no such
 * process (any more), -ESRCH when it has no memory map (a zombie, or a
 * kernel thread), -EACCES/-EPERM when we may not look, -EINVAL for a line we
 * cannot parse, -ENOMEM. On error *out is empty.
 */
int proc_maps__read(int pid, struct proc_maps *out);
/* Same for any file in maps format (tests); an empty file gives n = 0. */
int proc_maps__read_file(const char *path, struct proc_maps *out);
void proc_maps__free(struct proc_maps *m);
/* The offset in its file of address p of sptrace itself (a site in its own
 * text, for a uprobe on it). 0, -ENOENT when no file maps p, or as
 * proc_maps__read(). */
int proc_maps__self_offset(const void *p, uint64_t *off);

/*
 * The distinct files (by device and inode) mapped with at least one
 * executable segment, as their first mapping, in mapping order. Pseudo
 * paths ("[vdso]") are not files. Deleted (or replaced) files are
 * included: the process runs them; their path names another file or none,
 * so open them only through /proc/PID/map_files (as the walker below
 * does). *files is NULL when *n is 0; the caller frees the array, not the
 * mappings, which point into m.
 */
int proc_maps__exec_files(const struct proc_maps *m,
			  const struct proc_mapping ***files, size_t *n);

/*
 * Calls fn(ctx, open_path, path) once for each file of proc_maps__exec_files()
 * of `pid`; open_path is its /proc/PID/map_files link (the mapped inode, in
 * any mount namespace, even if the path was replaced or deleted), or, when
 * that link cannot be used, /proc/PID/root/PATH for a file not deleted.
 * path is as maps names it, less " (deleted)". A return of -ENOENT or
 * -ESRCH from fn means the file or process vanished meanwhile: skipped.
 * Stops at any other negative return and returns it; else the sum of the
 * returns. Errors of reading maps as proc_maps__read().
 */
int proc_maps__for_each_exec_file(int pid,
				  int (*fn)(void *ctx, const char *open_path,
					    const char *path),
				  void *ctx);

#endif /* SPTRACE_PROC_MAPS_H */
