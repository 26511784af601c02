// SPDX-License-Identifier: MIT
/*
 * Process titles for --per-pid, serve and Chrome tracks
 * (tests/e2e/test_titles.py).
 *
 *   title_host K WAIT_MS HOLD_MS PADDING
 *
 * The parent forks two children and waits for them. Each child sets its
 * title T1 at once, sleeps WAIT_MS, runs "t_work" K * (i + 1) times, sleeps
 * WAIT_MS again (a recorder reads its events meanwhile), sets title T2,
 * prints {"pid": P, "t1": T1, "t2": T2, "count": C} on its own
 * line, sleeps HOLD_MS and exits. Both rewrite their argv memory in
 * place as PostgreSQL does (PADDING, a long last argument, gives room; the
 * rest is NUL-padded): child 0 "title_host: worker 0 busy", then
 * "... idle"; child 1 a 200-byte title (longer than sptrace keeps) of
 * "title_host: worker 1 ", x's, and "busy", then "idle". With
 * TITLE_HOST_LATE_MS=N in the environment, each child first shows its
 * parent's title N ms (a PostgreSQL backend before init_ps_display()). (Not
 * prctl(PR_SET_MM_ARG_START): it needs CAP_SYS_RESOURCE, which CI
 * containers may lack.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sp_probe.h>

static char *arg_area;		/* argv[0] .. the end of the last argument */
static size_t arg_len;

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* PostgreSQL's way: overwrite argv in place, pad with NULs. */
static void set_in_place(const char *title)
{
	size_t n = strlen(title);

	if (n >= arg_len)
		exit(2);
	memset(arg_area, 0, arg_len);
	memcpy(arg_area, title, n);
}

/* Title 200 bytes long: "title_host: worker 1 ", x's, then STATE. */
static void set_long(const char *state)
{
	char t[201];
	size_t n = 200 - strlen(state);

	memcpy(t, "title_host: worker 1 ", 21);
	memset(t + 21, 'x', n - 21);
	memcpy(t + n, state, strlen(state) + 1);
	set_in_place(t);
}

static void child(int i, int k, int wait_ms, int hold_ms)
{
	char t1[256], t2[256], line[700];
	const char *late = getenv("TITLE_HOST_LATE_MS");
	int n, len;

	if (late)
		sleep_ms(atoi(late));
	if (i == 0)
		set_in_place("title_host: worker 0 busy");
	else
		set_long("busy");
	snprintf(t1, sizeof(t1), "%s", arg_area);
	sleep_ms(wait_ms);
	for (n = 0; n < k * (i + 1); n++) {
		SP_QUERY_BEGIN("t_work");
		SP_QUERY_END("t_work");
	}
	sleep_ms(wait_ms);
	if (i == 0)
		set_in_place("title_host: worker 0 idle");
	else
		set_long("idle");
	snprintf(t2, sizeof(t2), "%s", arg_area);
	len = snprintf(line, sizeof(line),
		       "{\"pid\": %d, \"t1\": \"%s\", \"t2\": \"%s\", \"count\": %d}\n",
		       (int)getpid(), t1, t2, k * (i + 1));
	if (write(STDOUT_FILENO, line, (size_t)len) != len)
		_exit(1);
	sleep_ms(hold_ms);
	_exit(0);
}

int main(int argc, char **argv)
{
	int k, wait_ms, hold_ms, i, st, bad = 0;

	if (argc != 5)
		return 2;
	k = atoi(argv[1]);
	wait_ms = atoi(argv[2]);
	hold_ms = atoi(argv[3]);
	arg_area = argv[0];
	arg_len = (size_t)(argv[argc - 1] + strlen(argv[argc - 1]) - argv[0]);
	setvbuf(stdout, NULL, _IONBF, 0);
	for (i = 0; i < 2; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (!pid)
			child(i, k, wait_ms, hold_ms);
	}
	for (i = 0; i < 2; i++)
		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			bad = 1;
	return bad;
}
