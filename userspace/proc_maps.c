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
 * them apart, and dropping such a file is the safe side.
 *
 * The numbers are parsed by hand: sscanf's %lx accepts signs and leading
 * blanks and has undefined behaviour on overflow; the input here is a file.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "proc_maps.h"

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
	struct proc_mapping *v;
	size_t ncap;

	if (m->n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	if (ncap > SIZE_MAX / sizeof(*v))
		return -ENOMEM;
	v = realloc(m->v, ncap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	m->v = v;
	*cap = ncap;
	return 0;
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

/* Mapping index and path, sorted to find each path's first mapping. */
struct path_ref {
	const char *path;
	size_t idx;
};

static int path_ref_cmp(const void *a, const void *b)
{
	const struct path_ref *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	if (c)
		return c;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static bool is_live_file(const struct proc_mapping *m)
{
	return m->path && m->path[0] == '/' && !m->deleted;
}

/*
 * Sorting (path, index) pairs keeps this O(n log n): a JVM or a browser can
 * have tens of thousands of mappings, where comparing each path with every
 * earlier one would take seconds.
 */
int proc_maps__exec_files(const struct proc_maps *m, const char ***paths,
			  size_t *n)
{
	struct path_ref *refs = NULL;
	const char **res = NULL;
	bool *first_exec = NULL;
	size_t i, j, nrefs = 0, nres = 0;
	bool exec;
	int err = 0;

	if (!m || !paths || !n)
		return -EINVAL;
	*paths = NULL;
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
		if (!is_live_file(&m->v[i]))
			continue;
		refs[nrefs].path = m->v[i].path;
		refs[nrefs++].idx = i;
	}
	qsort(refs, nrefs, sizeof(*refs), path_ref_cmp);
	/* For each run of one path: mark its first mapping if any is 'x'. */
	for (i = 0; i < nrefs; i = j) {
		exec = false;
		for (j = i; j < nrefs && !strcmp(refs[j].path, refs[i].path);
		     j++)
			exec |= m->v[refs[j].idx].perms[2] == 'x';
		first_exec[refs[i].idx] = exec;
	}
	for (i = 0; i < m->n; i++)
		if (first_exec[i])
			res[nres++] = m->v[i].path;
	if (!nres) {
		free(res);
		res = NULL;
	}
	*paths = res;
	*n = nres;
	res = NULL;
cleanup:
	free(res);
	free(first_exec);
	free(refs);
	return err;
}

int proc_maps__for_each_exec_file(int pid,
				  int (*fn)(void *ctx, const char *open_path,
					    const char *path),
				  void *ctx)
{
	struct proc_maps m = { 0 };
	const char **paths = NULL;
	char open_path[96];
	size_t n = 0, i, j;
	int err, total = 0;

	err = proc_maps__read(pid, &m);
	if (!err)
		err = proc_maps__exec_files(&m, &paths, &n);
	for (i = 0; !err && i < n; i++) {
		/* The first mapping of the path names its inode. */
		for (j = 0; j < m.n; j++)
			if (m.v[j].path && !strcmp(m.v[j].path, paths[i]))
				break;
		if (j == m.n)
			continue;
		snprintf(open_path, sizeof(open_path),
			 "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid,
			 m.v[j].start, m.v[j].end);
		err = fn(ctx, open_path, paths[i]);
		if (err > 0)
			total += err;
		if (err > 0)
			err = 0;
	}
	free(paths);
	proc_maps__free(&m);
	return err ? err : total;
}
