// SPDX-License-Identifier: MIT
/* common/ layer (bottom: needs nothing of sptrace but log.c).
 * Files sptrace writes: O_NOFOLLOW always, O_EXCL unless --force, 0600; a
 * character device or FIFO (/dev/null, a pipe) is written as it is.
 *
 * output__check() is the one look at every file a command will write,
 * taken before it does anything that costs (loading BPF, starting the
 * command, tracing): each problem it can see from here is reported, all of
 * them at once, so no run is lost to a typo in the last option. What it
 * cannot see (a disk that fills while tracing) output__keep() answers: the
 * finished run is kept in a private file of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>
#include "log.h"
#include "output.h"

/* Written as they are: no create, no truncate, no --force needed. */
static bool is_stream(const struct stat *st)
{
	return S_ISCHR(st->st_mode) || S_ISFIFO(st->st_mode);
}

/* O_TRUNC keeps an existing file's mode, but what sptrace writes is
 * private: 0600 for a regular file we own (a device or someone else's file
 * stays as it is). */
static int make_private(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 07777) == 0600)
		return 0;
	return fchmod(fd, 0600) ? -errno : 0;
}

int output__create(const char *path, enum output_mode mode)
{
	int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC;
	struct stat st;
	bool stream;
	int fd, err;

	stream = !lstat(path, &st) && is_stream(&st);
	if (stream)
		flags &= ~O_CREAT;
	else if (mode == OUTPUT_NEW)
		flags |= O_EXCL;
	else if (mode == OUTPUT_REPLACE)
		flags |= O_TRUNC;
	fd = open(path, flags, 0600);
	if (fd < 0)
		return -errno;
	if (mode == OUTPUT_REPLACE && !stream) {
		err = make_private(fd);
		if (err) {
			close(fd);
			return err;
		}
	}
	return fd;
}

int output__open(const char *path, bool force, FILE **out)
{
	int fd, err;

	if (!path || !strcmp(path, "-")) {
		*out = stdout;
		return 0;
	}
	fd = output__create(path, force ? OUTPUT_REPLACE : OUTPUT_NEW);
	if (fd < 0) {
		err = fd;
		if (err == -EEXIST)
			sp_err("%s: file exists (use --force to overwrite)", path);
		else if (err == -ELOOP)
			sp_err("%s: is a symbolic link; refusing to write through it",
			       path);
		else
			sp_err("%s: cannot create: %s", path, strerror(-err));
		return err;
	}
	*out = fdopen(fd, "w");
	if (!*out) {
		err = -errno;
		close(fd);
		sp_err("%s: %s", path, strerror(-err));
		return err;
	}
	return 0;
}

/* Where a file that does not exist yet would be: its directory, resolved,
 * and its name. NULL when the directory cannot be resolved. */
static char *future_path(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir, *real, *out = NULL;

	if (!slash)
		dir = strdup(".");
	else if (slash == path)
		dir = strdup("/");
	else
		dir = strndup(path, (size_t)(slash - path));
	if (!dir)
		return NULL;
	real = realpath(dir, NULL);
	if (real && asprintf(&out, "%s/%s", real, slash ? slash + 1 : path) < 0)
		out = NULL;
	free(real);
	free(dir);
	return out;
}

/* A kernel interface mounted as a file system: its files are not
 * places for a report (a write is refused, or worse, taken as a setting),
 * and files cannot be created in it. Its name, or NULL. */
static const char *kernel_fs(const char *path)
{
	static const struct { long magic; const char *name; } fs[] = {
		{ PROC_SUPER_MAGIC, "/proc (procfs)" },
		{ SYSFS_MAGIC, "/sys (sysfs)" },
		{ DEBUGFS_MAGIC, "debugfs" },
		{ TRACEFS_MAGIC, "tracefs" },
		{ CGROUP_SUPER_MAGIC, "cgroupfs" },
		{ CGROUP2_SUPER_MAGIC, "cgroup2fs" },
		{ SECURITYFS_MAGIC, "securityfs" },
		{ BPF_FS_MAGIC, "bpffs" },
	};
	struct statfs sf;
	size_t i;

	if (statfs(path, &sf))
		return NULL;
	for (i = 0; i < sizeof(fs) / sizeof(fs[0]); i++)
		if ((long)sf.f_type == fs[i].magic)
			return fs[i].name;
	return NULL;
}

/* A device takes data, tried with a write of nothing: /dev/full says
 * ENOSPC to that as to any write (a regular file, a pipe, /dev/null and
 * a terminal take it). 0 or -errno. */
static int try_write(int fd)
{
	return write(fd, "", 0) < 0 ? -errno : 0;
}

int output__check_stdout(void)
{
	struct stat st;
	int err;

	if (fstat(STDOUT_FILENO, &st) || !S_ISCHR(st.st_mode))
		return 0;
	err = try_write(STDOUT_FILENO);
	if (err)
		sp_err("stdout: cannot write: %s (redirect it, or give -o FILE)",
		       strerror(-err));
	return err;
}

/* One output's own problems (not those between outputs): reported; 0 or
 * -errno. */
static int check_one(const struct output_spec *o, struct stat *st,
		     bool *exists)
{
	const char *p, *slash, *base, *fs;
	char *dir;
	struct stat ds;
	int err;

	*exists = false;
	if (!*o->path) {
		sp_err("%s '': an empty file name (give a file, or - for stdout)",
		       o->what);
		return -EINVAL;
	}
	for (p = o->path; *p; p = slash + 1) {
		slash = strchrnul(p, '/');
		if (slash - p > NAME_MAX || slash - o->path >= PATH_MAX) {
			sp_err("%s %s: file name too long (at most %d bytes a "
			       "name, %d a path)", o->what, o->path, NAME_MAX,
			       PATH_MAX - 1);
			return -ENAMETOOLONG;
		}
		if (!*slash)
			break;
	}
	if (!lstat(o->path, st)) {
		*exists = true;
		if (S_ISLNK(st->st_mode)) {
			sp_err("%s: is a symbolic link; refusing to write through it",
			       o->path);
			return -ELOOP;
		}
		if (S_ISDIR(st->st_mode)) {
			sp_err("%s %s: is a directory (give a file name in it)",
			       o->what, o->path);
			return -EISDIR;
		}
		if (!S_ISREG(st->st_mode) && (!is_stream(st) || o->may_exist)) {
			/* A database is read back and rewritten in place. */
			sp_err("%s %s: not a regular file%s", o->what, o->path,
			       o->may_exist ? " (a database is one)" : "");
			return -EINVAL;
		}
		if ((fs = kernel_fs(o->path))) {
			sp_err("%s %s: a file of %s, a kernel interface, not a "
			       "place for output (give a file elsewhere)",
			       o->what, o->path, fs);
			return -EINVAL;
		}
		/* Opened as the write will open it, without truncating: a FIFO
		 * would wait for its reader here, so only character devices. */
		if (S_ISCHR(st->st_mode)) {
			int fd = open(o->path, O_WRONLY | O_NOCTTY | O_NONBLOCK |
					       O_CLOEXEC);

			err = fd < 0 ? -errno : try_write(fd);
			if (fd >= 0)
				close(fd);
			if (err) {
				sp_err("%s %s: cannot write: %s", o->what,
				       o->path, strerror(-err));
				return err;
			}
		}
		if (S_ISREG(st->st_mode) && !o->force && !o->may_exist) {
			sp_err("%s: file exists (use --force to overwrite)",
			       o->path);
			return -EEXIST;
		}
		if (access(o->path, W_OK)) {
			err = -errno;
			sp_err("%s %s: cannot write: %s", o->what, o->path,
			       strerror(-err));
			return err;
		}
		return 0;
	}
	err = -errno;
	if (err != -ENOENT) {
		sp_err("%s %s: %s", o->what, o->path, strerror(-err));
		return err;
	}
	base = strrchr(o->path, '/');
	dir = !base ? strdup(".") : base == o->path ? strdup("/") :
	      strndup(o->path, (size_t)(base - o->path));
	if (!dir)
		return -ENOMEM;
	if (stat(dir, &ds)) {
		err = -errno;
		sp_err("%s %s: directory %s %s", o->what, o->path, dir,
		       err == -ENOENT ? "does not exist" : strerror(-err));
	} else if (!S_ISDIR(ds.st_mode)) {
		err = -ENOTDIR;
		sp_err("%s %s: %s is not a directory", o->what, o->path, dir);
	} else if ((fs = kernel_fs(dir))) {
		err = -EINVAL;
		sp_err("%s %s: %s is in %s, a kernel interface, where no file "
		       "can be created (give a file elsewhere)", o->what,
		       o->path, dir, fs);
	} else if (access(dir, W_OK | X_OK)) {
		err = -errno;
		sp_err("%s %s: cannot create a file in %s: %s", o->what, o->path,
		       dir, strerror(-err));
	} else {
		err = 0;
	}
	free(dir);
	return err;
}

/* The same file? Existing ones by inode, new ones by resolved path. */
struct ident {
	bool exists, stream;
	dev_t dev;
	ino_t ino;
	char *future;
};

static bool same_file(const struct ident *a, const struct ident *b)
{
	if (a->exists && b->exists)
		return a->dev == b->dev && a->ino == b->ino;
	return !a->exists && !b->exists && a->future && b->future &&
	       !strcmp(a->future, b->future);
}

int output__check(const struct output_spec *outs, size_t nouts,
		  const char *const *inputs, size_t ninputs)
{
	struct ident id[OUTPUT_CHECK_MAX] = { 0 }, in;
	bool bad[OUTPUT_CHECK_MAX] = { 0 }, stdout_done = false;
	struct stat st;
	size_t i, j;
	int err = 0;

	if (nouts > OUTPUT_CHECK_MAX)
		return -E2BIG;
	for (i = 0; i < nouts; i++) {
		if (!outs[i].path || !strcmp(outs[i].path, "-")) {
			/* Once, for the outputs that go there. */
			if (!stdout_done && output__check_stdout())
				err = -EINVAL;
			stdout_done = true;
			continue;
		}
		if (check_one(&outs[i], &st, &id[i].exists)) {
			bad[i] = true;
			err = -EINVAL;
			continue;
		}
		if (id[i].exists) {
			id[i].dev = st.st_dev;
			id[i].ino = st.st_ino;
			id[i].stream = is_stream(&st);
		} else {
			id[i].future = future_path(outs[i].path);
		}
	}
	for (i = 0; i < nouts; i++) {
		if (!outs[i].path || !strcmp(outs[i].path, "-") || bad[i] ||
		    id[i].stream)
			continue;
		for (j = 0; j < i; j++) {
			if (!outs[j].path || !strcmp(outs[j].path, "-") ||
			    bad[j] || !same_file(&id[i], &id[j]))
				continue;
			sp_err("%s %s: the same file as %s %s (give each output "
			       "its own file)", outs[i].what, outs[i].path,
			       outs[j].what, outs[j].path);
			err = -EINVAL;
		}
		for (j = 0; j < ninputs; j++) {
			if (!inputs[j] || stat(inputs[j], &st))
				continue;
			in = (struct ident){ .exists = true, .dev = st.st_dev,
					     .ino = st.st_ino };
			if (!id[i].exists || !same_file(&id[i], &in))
				continue;
			sp_err("%s %s: is the input %s (it would be overwritten "
			       "before it is read)", outs[i].what, outs[i].path,
			       inputs[j]);
			err = -EINVAL;
		}
	}
	for (i = 0; i < nouts; i++)
		free(id[i].future);
	return err;
}

int output__precheck(const char *path, bool force)
{
	struct stat st;

	if (!path || !strcmp(path, "-") || lstat(path, &st))
		return 0;
	if (S_ISLNK(st.st_mode)) {
		sp_err("%s: is a symbolic link; refusing to write through it",
		       path);
		return -ELOOP;
	}
	if (!force) {
		sp_err("%s: file exists (use --force to overwrite)", path);
		return -EEXIST;
	}
	return 0;
}

int output__keep(const char *name, char *path, size_t len)
{
	const char *dirs[] = { getenv("TMPDIR"), "/tmp", "." };
	const char *base = strrchr(name, '/');
	int fd = -ENOENT, i, n;

	base = base ? base + 1 : name;
	for (i = 0; i < 3; i++) {
		if (!dirs[i] || !*dirs[i])
			continue;
		/* Another run's of the same pid (reused): the next number. */
		for (n = 0; n < 100; n++) {
			if (n)
				snprintf(path, len, "%s/sptrace-%d-%d-%s",
					 dirs[i], (int)getpid(), n, base);
			else
				snprintf(path, len, "%s/sptrace-%d-%s",
					 dirs[i], (int)getpid(), base);
			fd = output__create(path, OUTPUT_NEW);
			if (fd != -EEXIST)
				break;
		}
		if (fd >= 0)
			return fd;
	}
	return fd;
}

int output__close(FILE *f, const char *path)
{
	int err = 0;

	if (fflush(f) || ferror(f))
		err = errno ? -errno : -EIO;
	if (f != stdout && fclose(f) && !err)
		err = -errno;
	if (err)
		sp_err("%s: write failed: %s", path ? path : "stdout",
		       strerror(-err));
	return err;
}
