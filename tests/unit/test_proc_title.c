// SPDX-License-Identifier: MIT
/* proc_title__from_cmdline(): joining, trimming and cutting titles. */
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "proc_title.h"

static const char *title(const char *raw, size_t n)
{
	static char buf[PROC_TITLE_MAX];

	proc_title__from_cmdline(raw, n, buf);
	return buf;
}

int main(void)
{
	char raw[400], buf[PROC_TITLE_MAX];
	size_t n;

	/* Arguments joined by one space; the last NUL dropped. */
	CHECK_STR(title("/usr/bin/x\0-a\0b c\0", 19), "/usr/bin/x -a b c");
	/* PostgreSQL: the title, then NUL padding to the end of argv. */
	CHECK_STR(title("postgres: bench bench [local] idle\0\0\0\0\0", 39),
		  "postgres: bench bench [local] idle");
	/* setproctitle-style space padding. */
	CHECK_STR(title("worker   \0", 10), "worker");
	CHECK_STR(title("\0\0\0", 3), "");
	CHECK_STR(title("", 0), "");
	/* Control bytes are kept: the writers escape them. */
	CHECK_STR(title("a\tb\0", 4), "a\tb");
	/* 127 bytes fit; 128 are cut to 124 and "...". */
	memset(raw, 'a', sizeof(raw));
	n = proc_title__from_cmdline(raw, 127, buf);
	CHECK_U64(n, 127);
	CHECK(buf[126] == 'a' && !buf[127]);
	n = proc_title__from_cmdline(raw, 128, buf);
	CHECK_U64(n, 127);
	CHECK(!memcmp(buf + 124, "...", 4));
	CHECK(buf[123] == 'a');
	/* Never cut inside a UTF-8 sequence: U+00E9 at bytes 123-124. */
	raw[123] = (char)0xc3;
	raw[124] = (char)0xa9;
	n = proc_title__from_cmdline(raw, 200, buf);
	CHECK_U64(n, 126);
	CHECK_STR(buf + 123, "...");
	/* This process's own title. */
	CHECK(proc_title__read(getpid(), buf) == 0);
	CHECK(strstr(buf, "test_proc_title") != NULL);
	CHECK(proc_title__read(0x7ffffff0, buf) < 0);
	return check_status();
}
