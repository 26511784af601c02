// SPDX-License-Identifier: MIT
/* Writing a command's result to the file named by -o, or stdout (cli.h):
 * open it private, write, report a failure naming the file, close. */
#include <errno.h>
#include <string.h>
#include "cli.h"
#include "log.h"
#include "mem_writer.h"
#include "output.h"
#include "json_out.h"
#include "summary_writer.h"
#include "table.h"
#include "summary.h"

int cli__write(const char *path, bool force, cli_write_fn fn, const void *ctx)
{
	FILE *out;
	int err;

	err = output__open(path, force, &out);
	if (err)
		return err;
	errno = 0;
	err = fn(out, ctx);
	if (!err)
		return output__close(out, path);
	/* One line with the reason the device gave (ENOSPC for a full disk:
	 * the errno of the write that failed, which the writers turn into a
	 * generic EIO), not that EIO and then the close's own. */
	if (err == -EIO && errno && errno != EIO)
		err = -errno;
	sp_err("%s: write failed: %s", path ? path : "stdout", strerror(-err));
	if (out != stdout)
		fclose(out);
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

int cli__write_summary(const char *path, bool force, const struct summary *s,
		       const struct summary_write_opts *ropts)
{
	struct summary_job j = { .s = s, .ropts = ropts };

	return cli__write(path, force, summary_fn, &j);
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

	return cli__write(path, force, mem_fn, &j);
}
