// SPDX-License-Identifier: MIT
/*
 * Where a string lies in a process. Read-only mappings only: a pointer into
 * them reads the same bytes for the life of the mapping, which is what
 * makes a string's address stand for the string. The files are read, not
 * the target's memory, in chunks that overlap by the longest string so that
 * no hit is split or seen twice.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "proc_maps.h"
#include "rodata_scan.h"
#include "vec.h"

#define DEFAULT_CHUNK (1u << 20)

/* Hits starting before `limit` (the rest belong to the next chunk). */
static int scan_buf(const char *buf, size_t len, size_t limit, uint64_t base,
		    pid_t pid, const char *const *strs, unsigned int nstrs,
		    rodata_hit_fn fn, void *ctx)
{
	unsigned int i;
	int hits = 0, err;

	for (i = 0; i < nstrs; i++) {
		size_t nl = strlen(strs[i]) + 1, at = 0;
		const char *p;

		while (at < limit && at + nl <= len &&
		       (p = memmem(buf + at, len - at, strs[i], nl))) {
			size_t off = (size_t)(p - buf);

			if (off >= limit)
				break;
			err = fn(ctx, pid, i, base + off);
			if (err)
				return err;
			hits++;
			at = off + 1;
		}
	}
	return hits;
}

static int scan_file(int fd, uint64_t off, uint64_t len, uint64_t base,
		     pid_t pid, const char *const *strs, unsigned int nstrs,
		     size_t chunk, rodata_hit_fn fn, void *ctx)
{
	size_t overlap = 0, i;
	uint64_t pos = 0;
	struct stat st;
	char *buf;
	int hits = 0, n;

	if (!chunk)
		chunk = DEFAULT_CHUNK;
	for (i = 0; i < nstrs; i++)
		if (strlen(strs[i]) > overlap)
			overlap = strlen(strs[i]);
	/* The last page of a mapping may reach past the end of the file. */
	if (fstat(fd, &st))
		return -errno;
	if ((uint64_t)st.st_size <= off)
		return 0;
	if ((uint64_t)st.st_size - off < len)
		len = (uint64_t)st.st_size - off;
	buf = malloc(chunk + overlap);
	if (!buf)
		return -ENOMEM;
	while (pos < len) {
		size_t want = chunk + overlap;
		ssize_t got;

		if (want > len - pos)
			want = (size_t)(len - pos);
		got = pread(fd, buf, want, (off_t)(off + pos));
		if (got < 0) {
			hits = -errno;
			break;
		}
		if (!got)
			break;
		n = scan_buf(buf, (size_t)got, chunk, base + pos, pid, strs,
			     nstrs, fn, ctx);
		if (n < 0) {
			hits = n;
			break;
		}
		hits += n;
		pos += chunk;
	}
	free(buf);
	return hits;
}

int rodata_scan__file(int fd, uint64_t off, uint64_t len, uint64_t base,
		      const char *const *strs, unsigned int nstrs, size_t chunk,
		      rodata_hit_fn fn, void *ctx)
{
	return scan_file(fd, off, len, base, 0, strs, nstrs, chunk, fn, ctx);
}

static bool scanned(const struct rodata_scan *rs, pid_t pid,
		    const struct proc_mapping *m)
{
	size_t i;

	for (i = 0; i < rs->n; i++) {
		const struct rodata_range *r = &rs->done[i];

		if (r->pid == pid && r->start == m->start && r->end == m->end &&
		    r->pgoff == m->pgoff && r->inode == m->inode)
			return true;
	}
	return false;
}

static int remember(struct rodata_scan *rs, pid_t pid,
		    const struct proc_mapping *m)
{
	if (VEC_RESERVE(rs->done, rs->cap, rs->n + 1))
		return -ENOMEM;
	rs->done[rs->n++] = (struct rodata_range){
		.pid = pid, .start = m->start, .end = m->end,
		.pgoff = m->pgoff, .inode = m->inode,
	};
	return 0;
}

static int open_mapping(pid_t pid, const struct proc_mapping *m)
{
	char path[96], *alt;
	int fd;

	/* map_files names the mapped inode even if the path was replaced. */
	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
		 (int)pid, m->start, m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 || m->deleted)
		return fd;
	if (asprintf(&alt, "/proc/%d/root%s", (int)pid, m->path) < 0)
		return -1;
	fd = open(alt, O_RDONLY | O_CLOEXEC);
	free(alt);
	return fd;
}

int rodata_scan__pid(struct rodata_scan *rs, pid_t pid,
		     const char *const *strs, unsigned int nstrs,
		     rodata_hit_fn fn, void *ctx)
{
	struct proc_maps maps = {};
	int err, fd, hits = 0;
	size_t i;

	err = proc_maps__read((int)pid, &maps);
	if (err)
		return err;
	for (i = 0; i < maps.n; i++) {
		const struct proc_mapping *m = &maps.v[i];

		if (!m->path || m->path[0] != '/' || !m->inode ||
		    m->perms[0] != 'r' || m->perms[1] == 'w' ||
		    scanned(rs, pid, m))
			continue;
		fd = open_mapping(pid, m);
		if (fd < 0)
			continue;	/* unmapped meanwhile, or not ours */
		err = scan_file(fd, m->pgoff, m->end - m->start, m->start, pid,
				strs, nstrs, 0, fn, ctx);
		close(fd);
		if (err == -EIO || err == -EINVAL)
			err = 0;	/* unreadable file: as if unmapped */
		if (err < 0)
			goto cleanup;
		hits += err;
		err = remember(rs, pid, m);
		if (err)
			goto cleanup;
	}
	err = hits;
cleanup:
	proc_maps__free(&maps);
	return err;
}

void rodata_scan__free(struct rodata_scan *rs)
{
	free(rs->done);
	memset(rs, 0, sizeof(*rs));
}
