/* SPDX-License-Identifier: MIT */
/*
 * Finding a string in a running process: every address where its bytes and
 * the terminating NUL lie in a read-only file-backed mapping. That is where
 * string literals live (.rodata), so the pointers a program passes as
 * SP_MARK names can be known before the program passes them.
 */
#ifndef SPTRACE_RODATA_SCAN_H
#define SPTRACE_RODATA_SCAN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One mapping already scanned, so that a rescan reads only new ones. */
struct rodata_range {
	pid_t pid;
	uint64_t start, end, pgoff, inode;
};

struct rodata_scan {
	struct rodata_range *done;
	size_t n, cap;
};

/* Called for each hit: string `which` (index into strs) at `addr`. A
 * non-zero return (-errno) stops the scan and is returned. */
typedef int (*rodata_hit_fn)(void *ctx, pid_t pid, unsigned int which,
			     uint64_t addr);

/*
 * Scans the read-only (r--, r-x) file-backed mappings of pid that this scan
 * has not read before for each of the nstrs strings (NUL included, at any
 * offset: a linker that merges string tails may make "b" point into "ab").
 * The bytes come from the mapped files (/proc/PID/map_files), so the
 * target's pages are neither read nor faulted in. A mapping that cannot be
 * opened is skipped. Returns the number of hits, or -errno (-ENOENT,
 * -ESRCH: no such process) or fn's non-zero return.
 */
int rodata_scan__pid(struct rodata_scan *rs, pid_t pid,
		     const char *const *strs, unsigned int nstrs,
		     rodata_hit_fn fn, void *ctx);

/*
 * The same on bytes [off, off + len) of an open file, which appear at `base`
 * (a hit at file offset o is reported at base + o - off, with pid 0), read
 * `chunk` bytes at a time (0: the default, 1 MiB) plus the longest string
 * less one, so that a hit across two chunks is found once. A range past
 * the end of the file ends there. Returns the number of hits, or -errno
 * (read error, ENOMEM) or fn's non-zero return.
 */
int rodata_scan__file(int fd, uint64_t off, uint64_t len, uint64_t base,
		      const char *const *strs, unsigned int nstrs, size_t chunk,
		      rodata_hit_fn fn, void *ctx);

void rodata_scan__free(struct rodata_scan *rs);

#endif /* SPTRACE_RODATA_SCAN_H */
