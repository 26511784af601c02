// SPDX-License-Identifier: MIT
/*
 * /proc/PID/maps reader.
 *
 * A line is "start-end perms pgoff major:minor inode", then, for a mapping
 * with a name, blanks padding to a column and the name to the end of the
 * line. The name is printed raw except for '\n' (as "\012"), so it may hold
 * any other byte, spaces included, and be longer than any fixed buffer:
 * lines are read with getline() and the name is everything after the
 * padding. A file unlinked (or replaced, as by a package upgrade) while
 * mapped gets " (deleted)" appended; we strip it into a flag. A file whose
 * real name ends in " (deleted)" looks the same; maps alone cannot tell
 * them apart, so such a path is never opened by name: the walker opens
 * every file through /proc/PID/map_files.
 *
 * The numbers are parsed by hand: sscanf's %lx accepts signs and leading
 * blanks and has undefined behaviour on overflow; the input here is a file.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "proc_maps.h"
#include "vec.h"

#define DELETED_SUFFIX " (deleted)"

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* At least one digit of base 16 or 10 at *p, no overflow; advances *p. */
static int parse_uint(const char **p, unsigned int base, uint64_t *v)
{
	const char *s = *p;
	uint64_t r = 0;
	int d;

	for (; (d = hex_digit(*s)) >= 0 && (unsigned int)d < base; s++) {
		if (r > (UINT64_MAX - (uint64_t)d) / base)
			return -EINVAL;
		r = r * base + (uint64_t)d;
	}
	if (s == *p)
		return -EINVAL;
	*p = s;
	*v = r;
	return 0;
}

static int expect(const char **p, char c)
{
	if (**p != c)
		return -EINVAL;
	(*p)++;
	return 0;
}

static int parse_perms(const char **p, char perms[5])
{
	static const char *const allowed[4] = { "r-", "w-", "x-", "ps" };
	const char *s = *p;
	int i;

	for (i = 0; i < 4; i++) {
		if (!s[i] || !strchr(allowed[i], s[i]))
			return -EINVAL;
		perms[i] = s[i];
	}
	perms[4] = '\0';
	*p = s + 4;
	return 0;
}

/* The name after the inode: NULL when there is none. */
static int parse_path(const char *p, struct proc_mapping *m)
{
	size_t len, slen = strlen(DELETED_SUFFIX);

	if (*p && *p != ' ')
		return -EINVAL;
	while (*p == ' ')
		p++;
	if (!*p)
		return 0;
	m->path = strdup(p);
	if (!m->path)
		return -ENOMEM;
	len = strlen(m->path);
	if (len > slen && !strcmp(m->path + len - slen, DELETED_SUFFIX)) {
		m->path[len - slen] = '\0';
		m->deleted = true;
	}
	return 0;
}

/* line is NUL-terminated, its '\n' (if any) already removed. */
static int parse_line(const char *line, struct proc_mapping *m)
{
	const char *p = line;

	memset(m, 0, sizeof(*m));
	if (parse_uint(&p, 16, &m->start) || expect(&p, '-') ||
	    parse_uint(&p, 16, &m->end) || expect(&p, ' ') ||
	    parse_perms(&p, m->perms) || expect(&p, ' ') ||
	    parse_uint(&p, 16, &m->pgoff) || expect(&p, ' ') ||
	    parse_uint(&p, 16, &m->dev_major) || expect(&p, ':') ||
	    parse_uint(&p, 16, &m->dev_minor) || expect(&p, ' ') ||
	    parse_uint(&p, 10, &m->inode))
		return -EINVAL;
	if (m->start > m->end)
		return -EINVAL;
	return parse_path(p, m);
}

static int maps_reserve(struct proc_maps *m, size_t *cap)
{
	return VEC_RESERVE(m->v, *cap, m->n + 1);
}

static int read_stream(FILE *fp, struct proc_maps *out)
{
	size_t linecap = 0, cap = 0;
	char *line = NULL;
	ssize_t len;
	int err = 0;

	for (;;) {
		errno = 0;
		len = getline(&line, &linecap, fp);
		if (len < 0)
			break;
		if (len > 0 && line[len - 1] == '\n')
			line[len - 1] = '\0';
		err = maps_reserve(out, &cap);
		if (err)
			goto cleanup;
		err = parse_line(line, &out->v[out->n]);
		if (err)
			goto cleanup;
		out->n++;
	}
	/* getline() returns -1 at EOF and on failure alike: a read error
	 * (ESRCH when the process went away while we read) or ENOMEM. */
	if (!feof(fp))
		err = errno ? -errno : -EIO;
cleanup:
	free(line);
	return err;
}

void proc_maps__free(struct proc_maps *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

int proc_maps__read_file(const char *path, struct proc_maps *out)
{
	FILE *fp;
	int err;

	if (!out)
		return -EINVAL;
	out->v = NULL;
	out->n = 0;
	if (!path)
		return -EINVAL;
	fp = fopen(path, "re");
	if (!fp)
		return -errno;
	err = read_stream(fp, out);
	fclose(fp);
	if (err)
		proc_maps__free(out);
	return err;
}

int proc_maps__self_offset(const void *p, uint64_t *off)
{
	struct proc_maps m;
	uint64_t a = (uint64_t)(uintptr_t)p;
	size_t i;
	int err = proc_maps__read(getpid(), &m);

	if (err)
		return err;
	err = -ENOENT;
	for (i = 0; i < m.n; i++)
		if (a >= m.v[i].start && a < m.v[i].end && m.v[i].path) {
			*off = a - m.v[i].start + m.v[i].pgoff;
			err = 0;
			break;
		}
	proc_maps__free(&m);
	return err;
}

int proc_maps__read(int pid, struct proc_maps *out)
{
	char path[32];
	int err;

	if (!out)
		return -EINVAL;
	out->v = NULL;
	out->n = 0;
	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	err = proc_maps__read_file(path, out);
	/* A live user process always has mappings; none means its memory is
	 * gone (a zombie) or it never had any (a kernel thread). */
	if (!err && !out->n)
		err = -ESRCH;
	return err;
}

/* Mapping index and file, sorted to find each file's first mapping. */
struct file_ref {
	const struct proc_mapping *m;
	size_t idx;
};

static int file_ref_cmp(const void *a, const void *b)
{
	const struct file_ref *x = a, *y = b;

	if (x->m->dev_major != y->m->dev_major)
		return x->m->dev_major < y->m->dev_major ? -1 : 1;
	if (x->m->dev_minor != y->m->dev_minor)
		return x->m->dev_minor < y->m->dev_minor ? -1 : 1;
	if (x->m->inode != y->m->inode)
		return x->m->inode < y->m->inode ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static bool same_file(const struct proc_mapping *a,
		      const struct proc_mapping *b)
{
	return a->dev_major == b->dev_major && a->dev_minor == b->dev_minor &&
	       a->inode == b->inode;
}

/* A file: pseudo names ("[vdso]") are not, nor anonymous memory. */
static bool is_file(const struct proc_mapping *m)
{
	return m->path && m->path[0] == '/' && m->inode;
}

/*
 * Sorting (file, index) pairs keeps this O(n log n): a JVM or a browser can
 * have tens of thousands of mappings, where comparing each file with every
 * earlier one would take seconds. Files are told apart by device and
 * inode, not by name: a library replaced on disk and its successor may
 * both be mapped under one path.
 */
int proc_maps__exec_files(const struct proc_maps *m,
			  const struct proc_mapping ***files, size_t *n)
{
	struct file_ref *refs = NULL;
	const struct proc_mapping **res = NULL;
	bool *first_exec = NULL;
	size_t i, j, nrefs = 0, nres = 0;
	bool exec;
	int err = 0;

	if (!m || !files || !n)
		return -EINVAL;
	*files = NULL;
	*n = 0;
	if (!m->n)
		return 0;
	refs = calloc(m->n, sizeof(*refs));
	first_exec = calloc(m->n, sizeof(*first_exec));
	res = calloc(m->n, sizeof(*res));
	if (!refs || !first_exec || !res) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < m->n; i++) {
		if (!is_file(&m->v[i]))
			continue;
		refs[nrefs].m = &m->v[i];
		refs[nrefs++].idx = i;
	}
	qsort(refs, nrefs, sizeof(*refs), file_ref_cmp);
	/* For each run of one file: mark its first mapping if any is 'x'. */
	for (i = 0; i < nrefs; i = j) {
		exec = false;
		for (j = i; j < nrefs && same_file(refs[j].m, refs[i].m); j++)
			exec |= refs[j].m->perms[2] == 'x';
		first_exec[refs[i].idx] = exec;
	}
	for (i = 0; i < m->n; i++)
		if (first_exec[i])
			res[nres++] = &m->v[i];
	if (!nres) {
		free(res);
		res = NULL;
	}
	*files = res;
	*n = nres;
	res = NULL;
cleanup:
	free(res);
	free(first_exec);
	free(refs);
	return err;
}

/*
 * The one walk over a process's mapped files. Each is opened through its
 * map_files link, which names the mapped inode even when the path now
 * names another file (replaced), none (deleted, or a name that really ends
 * in " (deleted)"), or one in another mount namespace. Without map_files
 * (no access, or no such link) a file still on disk is reached through
 * the process's root, for containers; a deleted one then cannot be.
 */
int proc_maps__for_each_exec_file(int pid,
				  int (*fn)(void *ctx, const char *open_path,
					    const char *path),
				  void *ctx)
{
	const struct proc_mapping **files = NULL;
	struct proc_maps m = { 0 };
	char link[96], *alt;
	size_t n = 0, i;
	struct stat st;
	int err, total = 0;

	err = proc_maps__read(pid, &m);
	if (!err)
		err = proc_maps__exec_files(&m, &files, &n);
	for (i = 0; !err && i < n; i++) {
		const struct proc_mapping *f = files[i];

		alt = NULL;
		snprintf(link, sizeof(link),
			 "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid,
			 f->start, f->end);
		if (stat(link, &st) && !f->deleted &&
		    (errno == EACCES || errno == EPERM || errno == ENOENT) &&
		    asprintf(&alt, "/proc/%d/root%s", pid, f->path) < 0) {
			err = -ENOMEM;
			break;
		}
		err = fn(ctx, alt ? alt : link, f->path);
		free(alt);
		if (err == -ENOENT || err == -ESRCH) {
			err = 0;	/* unmapped, or exited, meanwhile */
			continue;
		}
		if (err > 0) {
			total += err;
			err = 0;
		}
	}
	free(files);
	proc_maps__free(&m);
	return err ? err : total;
}
