// SPDX-License-Identifier: MIT
/*
 * Address-space snapshots for reading target strings. The BPF side cannot
 * read a string whose page was never touched (it may not fault), and a
 * string literal's page usually is not: the program only loads its address.
 * So the loader reads names itself: at the place in the file that was mapped
 * there, or, for memory no file backs, through process_vm_readv.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>
#include "addr_space.h"
#include "proc_maps.h"
#include "vec.h"

static void space_clear(struct addr_space *s)
{
	size_t i;

	for (i = 0; i < s->nfiles; i++) {
		if (s->files[i].fd >= 0)
			close(s->files[i].fd);
		free(s->files[i].path);
	}
	free(s->files);
	free(s->maps);
	s->files = NULL;
	s->maps = NULL;
	s->nfiles = s->nmaps = s->files_cap = s->maps_cap = 0;
}

/* The space of the files held for every process (addr_spaces__hold_file()):
 * no process's, and with no mappings. */
#define HELD_FILES 0

static struct addr_space *space_get(struct addr_spaces *as, pid_t pid,
				    bool create)
{
	struct addr_space *v;
	size_t i;

	for (i = 0; i < as->n; i++)
		if (as->v[i].pid == pid)
			return &as->v[i];
	if (!create)
		return NULL;
	if (VEC_RESERVE(as->v, as->cap, as->n + 1))
		return NULL;
	v = as->v;
	memset(&v[as->n], 0, sizeof(v[0]));
	v[as->n].pid = pid;
	return &v[as->n++];
}

static int file_index(struct addr_space *s, const struct proc_mapping *m,
		      size_t *idx)
{
	char link[96];
	struct addr_file *v;
	size_t i;
	int fd;

	for (i = 0; i < s->nfiles; i++) {
		if (!strcmp(s->files[i].path, m->path)) {
			*idx = i;
			return 0;
		}
	}
	/* map_files names the mapped inode itself, even if replaced. */
	snprintf(link, sizeof(link), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
		 (int)s->pid, m->start, m->end);
	fd = open(link, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (VEC_RESERVE(s->files, s->files_cap, s->nfiles + 1)) {
		close(fd);
		return -ENOMEM;
	}
	v = s->files;
	v[s->nfiles].fd = fd;
	v[s->nfiles].path = strdup(m->path);
	if (!v[s->nfiles].path) {
		close(fd);
		return -ENOMEM;
	}
	*idx = s->nfiles++;
	return 0;
}

/* Already in the snapshot: same range, offset and file. */
static bool known(const struct addr_space *s, const struct proc_mapping *m)
{
	size_t i;

	for (i = 0; i < s->nmaps; i++) {
		const struct addr_map *a = &s->maps[i];

		if (a->start == m->start && a->end == m->end &&
		    a->pgoff == m->pgoff && !strcmp(s->files[a->file].path, m->path))
			return true;
	}
	return false;
}

int addr_spaces__snapshot(struct addr_spaces *as, pid_t pid)
{
	struct proc_maps pm = {};
	int err;

	err = proc_maps__read(pid, &pm);
	if (err)
		return err;
	err = addr_spaces__add_maps(as, pid, &pm);
	proc_maps__free(&pm);
	return err;
}

int addr_spaces__add_maps(struct addr_spaces *as, pid_t pid,
			  const struct proc_maps *pm)
{
	struct addr_space *s;
	size_t i;

	s = space_get(as, pid, true);
	if (!s)
		return -ENOMEM;
	/* Snapshots accumulate: a library unmapped later (dlclose) keeps
	 * naming what it held while it was mapped. */
	for (i = 0; i < pm->n; i++) {
		const struct proc_mapping *m = &pm->v[i];
		size_t idx = 0;

		if (!m->path || m->path[0] != '/' || !m->inode)
			continue;
		if (known(s, m))
			continue;
		if (file_index(s, m, &idx))
			continue;	/* unmapped meanwhile, or no access */
		if (VEC_RESERVE(s->maps, s->maps_cap, s->nmaps + 1))
			return -ENOMEM;
		s->maps[s->nmaps++] = (struct addr_map){
			.start = m->start, .end = m->end, .pgoff = m->pgoff,
			.file = idx, .exec = m->perms[2] == 'x',
		};
	}
	return 0;
}

int addr_spaces__fork(struct addr_spaces *as, pid_t parent, pid_t child)
{
	struct addr_space *c = space_get(as, child, true);

	if (!c)
		return -ENOMEM;
	c->parent = parent;
	return 0;
}

static int read_live(pid_t pid, uint64_t addr, char *buf, size_t len)
{
	size_t got = 0;

	/* Page by page: the string may end just before an unmapped page. */
	while (got < len - 1) {
		size_t chunk = 4096 - ((addr + got) & 4095);
		struct iovec l, r;
		ssize_t n;

		if (chunk > len - 1 - got)
			chunk = len - 1 - got;
		l.iov_base = buf + got;
		l.iov_len = chunk;
		r.iov_base = (void *)(uintptr_t)(addr + got);
		r.iov_len = chunk;
		n = process_vm_readv(pid, &l, 1, &r, 1, 0);
		if (n <= 0)
			return got ? 0 : -errno;
		if (memchr(buf + got, 0, (size_t)n))
			return 0;
		got += (size_t)n;
	}
	buf[len - 1] = 0;
	return 0;
}

static int read_file(const struct addr_space *s, uint64_t addr, char *buf,
		     size_t len)
{
	size_t i;

	/* Newest first: an address range reused after an unmap names what
	 * is mapped there now. */
	for (i = s->nmaps; i-- > 0;) {
		const struct addr_map *m = &s->maps[i];
		ssize_t n;

		if (addr < m->start || addr >= m->end)
			continue;
		n = pread(s->files[m->file].fd, buf, len - 1,
			  (off_t)(addr - m->start + m->pgoff));
		if (n <= 0)
			return n ? -errno : -ENOENT;
		buf[n] = 0;
		return 0;
	}
	return -ENOENT;
}

int addr_spaces__read_str(const struct addr_spaces *as, pid_t pid,
			  uint64_t addr, char *buf, size_t len)
{
	const struct addr_space *s = NULL, *p;
	size_t i;
	int depth;

	if (len < 2)
		return -EINVAL;
	memset(buf, 0, len);
	/* The file first: a literal's bytes there are what was mapped, and
	 * the pid may since have been reused by another process. */
	for (i = 0; i < as->n; i++)
		if (as->v[i].pid == pid)
			s = &as->v[i];
	if (s && !read_file(s, addr, buf, len))
		return 0;
	/* A forked child: what it did not map itself, it had from its
	 * parent (files mapped at fork). Bounded: PIDs can cycle. */
	for (p = s, depth = 0; p && p->parent && depth < 64; depth++) {
		pid_t parent = p->parent;

		p = NULL;
		for (i = 0; i < as->n; i++)
			if (as->v[i].pid == parent)
				p = &as->v[i];
		if (p && !read_file(p, addr, buf, len))
			return 0;
	}
	return read_live(pid, addr, buf, len);
}

int addr_spaces__read_file_str(const struct addr_spaces *as, uint64_t dev,
			       uint64_t ino, uint64_t off, char *buf,
			       size_t len)
{
	dev_t want = makedev((unsigned int)(dev >> 20),
			     (unsigned int)(dev & 0xfffff));
	struct stat st;
	size_t i, j;
	ssize_t n;

	if (len < 2)
		return -EINVAL;
	for (i = 0; i < as->n; i++)
		for (j = 0; j < as->v[i].nfiles; j++) {
			const struct addr_file *f = &as->v[i].files[j];

			if (f->fd < 0 || fstat(f->fd, &st) ||
			    st.st_ino != ino || st.st_dev != want)
				continue;
			n = pread(f->fd, buf, len - 1, (off_t)off);
			if (n <= 0)
				return n ? -errno : -ENOENT;
			buf[n] = 0;
			return 0;
		}
	return -ENOENT;
}

int addr_spaces__hold_file(struct addr_spaces *as, const char *path)
{
	struct addr_space *s = space_get(as, HELD_FILES, true);
	struct addr_file *v;
	int fd;

	if (!s)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (VEC_RESERVE(s->files, s->files_cap, s->nfiles + 1)) {
		close(fd);
		return -ENOMEM;
	}
	v = s->files;
	v[s->nfiles].fd = fd;
	v[s->nfiles].path = strdup(path);
	if (!v[s->nfiles].path) {
		close(fd);
		return -ENOMEM;
	}
	s->nfiles++;
	return 0;
}

void addr_spaces__free(struct addr_spaces *as)
{
	size_t i;

	for (i = 0; i < as->n; i++)
		space_clear(&as->v[i]);
	free(as->v);
	as->v = NULL;
	as->n = as->cap = 0;
}

void addr_spaces__drop(struct addr_spaces *as, pid_t pid)
{
	struct addr_space *s = space_get(as, pid, false);
	size_t i;

	if (!s)
		return;
	/* A forked child may still name addresses through it. */
	for (i = 0; i < as->n; i++)
		if (as->v[i].parent == pid)
			return;
	space_clear(s);
	*s = as->v[--as->n];
}
