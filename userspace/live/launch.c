// SPDX-License-Identifier: MIT
/*
 * `sptrace -- CMD`. The child blocks on a pipe before exec while the loader
 * attaches the executable's probes by file offset (possible before the file
 * is mapped) and a stopper on its dynamic loader (dl_watch.c); a byte on
 * the pipe lets it exec, and an exec error comes back on a second pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "launch.h"
#include "log.h"

int launch__resolve(const char *cmd, char **out)
{
	const char *path = getenv("PATH");
	const char *p, *end;
	int err = -ENOENT;

	if (strchr(cmd, '/')) {
		struct stat st;

		/* access(X_OK) holds for a directory: refuse it here, as
		 * execv() would, with its reason. */
		if (stat(cmd, &st))
			return -errno;
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
		if (access(cmd, X_OK))
			return -errno;
		*out = strdup(cmd);
		return *out ? 0 : -ENOMEM;
	}
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; ; p = end + 1) {
		struct stat st;
		char *cand;

		end = strchrnul(p, ':');
		if (asprintf(&cand, "%.*s/%s", (int)(end - p),
			     end == p ? "." : p, cmd) < 0)
			return -ENOMEM;
		if (!stat(cand, &st) && S_ISREG(st.st_mode) &&
		    !access(cand, X_OK)) {
			*out = cand;
			return 0;
		}
		if (errno == EACCES)
			err = -EACCES;
		free(cand);
		if (!*end)
			break;
	}
	return err;
}

int launch__shebang(const char *path, char **line)
{
	char buf[256];
	ssize_t n;
	int fd;

	*line = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 2 || buf[0] != '#' || buf[1] != '!')
		return 0;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	*line = strdup(buf);
	return *line ? 0 : -ENOMEM;
}

int launch__interpreter(const char *line, char **out)
{
	char buf[256], *tok, *save, *prog;
	bool env;

	*out = NULL;
	snprintf(buf, sizeof(buf), "%s", line + 2);
	prog = strtok_r(buf, " \t", &save);
	if (!prog)
		return -ENOEXEC;
	/* "#!/usr/bin/env [-S] NAME": env runs NAME from PATH. */
	env = !strcmp(prog, "/usr/bin/env") || !strcmp(prog, "/bin/env");
	while (env && (tok = strtok_r(NULL, " \t", &save))) {
		if (tok[0] == '-' || strchr(tok, '='))
			continue;	/* -S, -i, NAME=VALUE */
		return launch__resolve(tok, out);
	}
	*out = strdup(prog);
	return *out ? 0 : -ENOMEM;
}

int launch__fork(struct launch *l, char *const argv[])
{
	int go[2], ex[2], err;

	memset(l, 0, sizeof(*l));
	l->go_fd = l->err_fd = -1;
	err = launch__resolve(argv[0], &l->path);
	if (err) {
		sp_err("cannot start '%s': %s (check the command and PATH)",
		       argv[0], strerror(-err));
		return err;
	}
	if (pipe2(go, O_CLOEXEC) || pipe2(ex, O_CLOEXEC)) {
		err = -errno;
		sp_err("cannot start '%s': pipe: %s", argv[0], strerror(-err));
		return err;
	}
	l->pid = fork();
	if (l->pid < 0) {
		err = -errno;
		sp_err("cannot start '%s': fork: %s", argv[0], strerror(-err));
		close(go[0]); close(go[1]); close(ex[0]); close(ex[1]);
		return err;
	}
	if (l->pid == 0) {
		sigset_t none;
		char c;

		close(go[1]);
		close(ex[0]);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		/* EOF instead of a byte: the loader gave up; do not run. */
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execv(l->path, argv);
		err = errno;
		if (write(ex[1], &err, sizeof(err)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(ex[1]);
	l->go_fd = go[1];
	l->err_fd = ex[0];
	return 0;
}

int launch__go(struct launch *l, const char *cmd)
{
	int child_errno = 0;
	ssize_t n;

	if (write(l->go_fd, "g", 1) != 1)
		return -errno;
	close(l->go_fd);
	l->go_fd = -1;
	do
		n = read(l->err_fd, &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	close(l->err_fd);
	l->err_fd = -1;
	if (n == (ssize_t)sizeof(child_errno)) {
		sp_err("cannot start '%s': %s", cmd, strerror(child_errno));
		return -child_errno;
	}
	return 0;
}

void launch__destroy(struct launch *l)
{
	if (l->go_fd >= 0)
		close(l->go_fd);	/* child sees EOF and exits */
	if (l->err_fd >= 0)
		close(l->err_fd);
	free(l->path);
	memset(l, 0, sizeof(*l));
	l->go_fd = l->err_fd = -1;
}
