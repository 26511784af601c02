/* SPDX-License-Identifier: MIT */
/*
 * Snapshots of targets' file-backed mappings, with the files held open, so
 * that an address in a target (a query name literal in .rodata) can be read
 * even after the target has exited or its files were replaced.
 */
#ifndef SPTRACE_ADDR_SPACE_H
#define SPTRACE_ADDR_SPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct addr_file {
	char *path;
	int fd;
};

struct addr_map {
	uint64_t start, end, pgoff;
	size_t file;		/* index into files */
	bool exec;		/* mapped executable: code */
};

struct addr_space {
	pid_t pid;
	pid_t parent;		/* forked from (addr_spaces__fork), or 0 */
	struct addr_file *files;
	size_t nfiles, files_cap;
	struct addr_map *maps;
	size_t nmaps, maps_cap;
};

struct addr_spaces {
	struct addr_space *v;
	size_t n, cap;
};

/* Reads pid's mappings into its snapshot, keeping those seen before (a
 * library unmapped since still names its strings). 0 or -errno. */
int addr_spaces__snapshot(struct addr_spaces *as, pid_t pid);
struct proc_maps;
/* The same from pid's mappings already read (pm, /proc/PID/maps). */
int addr_spaces__add_maps(struct addr_spaces *as, pid_t pid,
			  const struct proc_maps *pm);
/* `child` was forked by `parent`: where its own snapshot (if any) cannot
 * name an address, its parent's snapshot does (its address space at fork),
 * before the live process is read. Holds no file open. parent 0: forget it
 * (the child exec'd another image). 0 or -errno. */
int addr_spaces__fork(struct addr_spaces *as, pid_t parent, pid_t child);
/*
 * Reads a NUL-terminated string at addr in pid into buf (cut at len - 1):
 * from the snapshot's file mapped there, else from the live process.
 * 0 or -errno (-ENOENT: not file-backed, or never snapshotted).
 */
int addr_spaces__read_str(const struct addr_spaces *as, pid_t pid,
			  uint64_t addr, char *buf, size_t len);
/*
 * Reads a NUL-terminated string at offset `off` of the file (dev, ino), dev
 * as the kernel encodes it (major << 20 | minor), from any snapshot or
 * held file that has it open: a name BPF located in a library since
 * unloaded, or in a process that has exited.
 * 0 or -errno (-ENOENT: no snapshot has the file).
 */
int addr_spaces__read_file_str(const struct addr_spaces *as, uint64_t dev,
			       uint64_t ino, uint64_t off, char *buf,
			       size_t len);
/* Holds the file at `path` open for addr_spaces__read_file_str(): a file
 * any process may map (-b), whose names BPF locates in processes gone
 * before they were snapshotted. 0 or -errno. */
int addr_spaces__hold_file(struct addr_spaces *as, const char *path);
/* Forgets pid's snapshot (its files closed): for a process that exited
 * and whose names were read. Kept while a forked child refers to it. */
void addr_spaces__drop(struct addr_spaces *as, pid_t pid);
void addr_spaces__free(struct addr_spaces *as);

#endif /* SPTRACE_ADDR_SPACE_H */
