// SPDX-License-Identifier: MIT
/* Writing a command's result to the file named by -o, or stdout (cli.h):
 * open it private, write, report a failure in one line naming the file and
 * the reason the device gave, close. A live run's result is formatted in
 * memory first, so a write that fails (a full disk) loses nothing: it is
 * kept in a private file (output__keep()) and the line says where. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"
#include "log.h"
#include "mem_writer.h"
#include "output.h"
#include "json_out.h"
#include "summary_writer.h"
#include "table.h"
#include "summary.h"

static int open_out(const char *path, bool force, FILE **out)
{
	int fd, err;

	if (!path || !strcmp(path, "-")) {
		*out = stdout;
		return 0;
	}
	fd = output__create(path, force ? OUTPUT_REPLACE : OUTPUT_NEW);
	if (fd < 0)
		return fd;
	*out = fdopen(fd, "w");
	if (!*out) {
		err = -errno;
		close(fd);
		return err;
	}
	return 0;
}

/* Flushes and closes (not stdout): 0, or the -errno of the write that
 * failed (ENOSPC for a full disk, which the writers see as a generic
 * EIO), kept in errno since the write. */
static int close_out(FILE *f, int err)
{
	if (err == -EIO && errno && errno != EIO)
		err = -errno;
	if ((fflush(f) || ferror(f)) && !err)
		err = errno ? -errno : -EIO;
	if (f != stdout && fclose(f) && !err)
		err = -errno;
	return err;
}

/* A regular file this write made (not one --force replaced, not a
 * device or stdout). */
static bool created(const char *path, bool force)
{
	struct stat st;

	return path && strcmp(path, "-") && !force && !lstat(path, &st) &&
	       S_ISREG(st.st_mode);
}

static int write_all(int fd, const char *p, size_t len)
{
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The result in buf could not go to `shown` (why: "cannot create" or
 * "write failed", err): kept in a file of its own, said in one line. */
static void keep(const char *shown, const char *why, int err, const char *buf,
		 size_t len)
{
	char kept[4096];
	int fd, kerr;

	fd = output__keep(shown, kept, sizeof(kept));
	kerr = fd < 0 ? fd : write_all(fd, buf, len);
	if (fd >= 0 && fsync(fd) && errno != EINVAL && !kerr)
		kerr = -errno;
	if (fd >= 0 && close(fd) && !kerr)
		kerr = -errno;
	if (!kerr) {
		sp_err("%s: %s: %s (the report is kept in %s)", shown, why,
		       strerror(-err), kept);
		return;
	}
	if (fd >= 0)
		unlink(kept);
	sp_err("%s: %s: %s (and it could not be kept in %s either: %s)",
	       shown, why, strerror(-err), kept, strerror(-kerr));
}

int cli__write(const char *path, bool force, bool keep_run, cli_write_fn fn,
	       const void *ctx)
{
	const char *shown = path && strcmp(path, "-") ? path : "stdout";
	char *buf = NULL;
	size_t len = 0;
	FILE *out, *mem;
	int err;

	if (keep_run) {
		mem = open_memstream(&buf, &len);
		if (!mem) {
			err = -errno;
			sp_err("cannot format the report: %s", strerror(-err));
			return err;
		}
		err = fn(mem, ctx);
		if (fclose(mem) && !err)
			err = -ENOMEM;
		if (err) {
			if (err != -ECANCELED)
				sp_err("cannot format the report: %s",
				       strerror(-err));
			free(buf);
			return err;
		}
	}
	err = open_out(path, force, &out);
	if (err) {
		if (keep_run)
			keep(shown, "cannot create", err, buf, len);
		else
			sp_err("%s: cannot create: %s", shown, strerror(-err));
		free(buf);
		return err;
	}
	errno = 0;
	if (keep_run)
		err = len && fwrite(buf, 1, len, out) != len ? -EIO : 0;
	else
		err = fn(out, ctx);
	if (err == -ECANCELED) {	/* reported by fn */
		close_out(out, 0);
		if (created(path, force))
			unlink(path);
		return err;
	}
	err = close_out(out, err);
	if (err && keep_run)
		keep(shown, "write failed", err, buf, len);
	else if (err)
		sp_err("%s: write failed: %s", shown, strerror(-err));
	/* What it created holds a part at most: not left as if whole. */
	if (err && created(path, force))
		unlink(path);
	free(buf);
	return err;
}

struct summary_job {
	const struct summary *s;
	const struct summary_write_opts *ropts;
	const struct mem_report *mr;
};

static int summary_fn(FILE *out, const void *ctx)
{
	const struct summary_job *j = ctx;

	return summary_writer__write(out, j->s, j->ropts);
}

int cli__write_summary(const char *path, bool force, bool keep_run,
		       const struct summary *s,
		       const struct summary_write_opts *ropts)
{
	struct summary_job j = { .s = s, .ropts = ropts };

	return cli__write(path, force, keep_run, summary_fn, &j);
}

static int mem_fn(FILE *out, const void *ctx)
{
	const struct summary_job *j = ctx;
	int err;

	if (!j->s)
		return mem_report__write(out, j->mr, j->ropts->format,
					 j->ropts->width);
	if (j->ropts->format == SUMMARY_JSON) {
		err = json_out__write_with(out, j->s, mem_report__json_fields,
				       (void *)j->mr);
		if (!err)
			table__warn_errors(stderr, j->s);
		mem_report__warn_errors(stderr, j->mr);
		return err;
	}
	err = summary_writer__write(out, j->s, j->ropts);
	if (!err) {
		fputc('\n', out);
		err = mem_report__write(out, j->mr, j->ropts->format,
					 j->ropts->width);
	}
	return err;
}

int cli__write_mem(const char *path, bool force, const struct summary *s,
		   const struct summary_write_opts *ropts, const struct mem_report *r)
{
	struct summary_job j = { .s = s, .ropts = ropts, .mr = r };

	return cli__write(path, force, true, mem_fn, &j);
}
