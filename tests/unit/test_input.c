// SPDX-License-Identifier: MIT
/*
 * Unit test of common/input.c, the one way sptrace opens a file it reads:
 * a regular file opens (and reads blocking), a directory, a FIFO with no
 * writer, a device and a socket are refused at once. An alarm fails the
 * test if an open blocks.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include "check.h"
#include "input.h"

static char dir[] = "/tmp/sptrace_test_input.XXXXXX";

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "FAIL an open blocked\n";

	if (write(1, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(1);
}

static void test_kinds(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char p[256], buf[4];
	int fd, s;

	snprintf(p, sizeof(p), "%s/file", dir);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0 && write(fd, "abc", 3) == 3);
	close(fd);
	fd = input__open(p);
	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK(!(fcntl(fd, F_GETFL) & O_NONBLOCK));
		CHECK(read(fd, buf, sizeof(buf)) == 3);
		close(fd);
	}
	CHECK_U64(input__open(dir), -EISDIR);
	snprintf(p, sizeof(p), "%s/nosuch", dir);
	CHECK_U64(input__open(p), -ENOENT);
	/* A FIFO without a writer: open() alone would wait for one. */
	snprintf(p, sizeof(p), "%s/fifo", dir);
	CHECK(!mkfifo(p, 0600));
	alarm(5);
	CHECK_U64(input__open(p), -EINPUT_NOTREG);
	CHECK_U64(input__open("/dev/null"), -EINPUT_NOTREG);
	CHECK_U64(input__open("/dev/zero"), -EINPUT_NOTREG);
	alarm(0);
	/* A socket: open() says ENXIO, passed on. */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock", dir);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(s >= 0 && !bind(s, (struct sockaddr *)&sa, sizeof(sa)));
	CHECK_U64(input__open(sa.sun_path), -ENXIO);
	close(s);
	CHECK(strstr(input__strerror(-EINPUT_NOTREG), "not a regular file"));
	CHECK_STR(input__strerror(-ENOENT), strerror(ENOENT));
}

int main(void)
{
	char cmd[300];

	signal(SIGALRM, on_alarm);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_kinds);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		printf("warning: %s not removed\n", dir);
	return check_status();
}
