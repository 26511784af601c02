// SPDX-License-Identifier: MIT
/*
 * sptrace: entry point and command table. `sptrace [OPTIONS] -p PID` and
 * `sptrace [OPTIONS] -- CMD` are the live trace; other commands are named
 * first (exact name or unambiguous prefix, as bpftool does).
 */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "commands.h"
#include "log.h"

#ifndef SPTRACE_VERSION
#define SPTRACE_VERSION "unknown"
#endif

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

static int cmd_help(int argc, char **argv);

#ifndef SPTRACE_BPF
/* Built with -Dbpf=false: the live commands are named, and refused. */
static int cmd_no_bpf(int argc, char **argv)
{
	static const char *const live[] = { "record", "mem", "latency",
					    "serve", "bench" };
	const char *name = "trace";	/* sptrace -p PID, sptrace -- CMD */
	size_t i;

	(void)argc;
	for (i = 0; i < sizeof(live) / sizeof(live[0]); i++)
		if (!strcmp(argv[0], live[i]))
			name = live[i];
	sp_err("%s: this sptrace was built without BPF (meson setup -Dbpf=true, with clang and bpftool)",
	       name);
	return 1;
}
#define cmd_trace cmd_no_bpf
#define cmd_record cmd_no_bpf
#define cmd_mem cmd_no_bpf
#define cmd_latency cmd_no_bpf
#define cmd_serve cmd_no_bpf
#define cmd_bench cmd_no_bpf
#endif

static const struct command commands[] = {
	{ "trace", cmd_trace, "trace running processes or a command (default)" },
	{ "record", cmd_record, "record every probe event into a trace file" },
	{ "bench", cmd_bench, "run a command N times (or two in turn), store every run, print the statistics" },
	{ "summarize", cmd_summarize, "print the per-query table of a trace file" },
	{ "diff", cmd_diff, "compare two runs per query, or sets of runs with a verdict per query" },
	{ "export", cmd_export, "write a trace file as Chrome trace JSON, folded stacks or CSV" },
	{ "import", cmd_import, "store trace files or JSON summaries as runs in a history database" },
	{ "history", cmd_history, "list the runs of a history database, or one query across them" },
	{ "report", cmd_report, "write a run (optionally against a base run) as one self-contained HTML file" },
	{ "list", cmd_list, "list the USDT probes of a process or a file" },
	{ "mem", cmd_mem, "memory: typed allocations and the libc heap, per type, site, thread, over time" },
	{ "latency", cmd_latency, "time from one event to another with the same key, as a histogram" },
	{ "serve", cmd_serve, "keep tracing and serve the figures to Prometheus at /metrics" },
	{ "help", cmd_help, "this list" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct command *find_command(const char *name);
static void print_candidates(const char *name);

/* `sptrace help` lists the commands; `sptrace help COMMAND` is `sptrace
 * COMMAND --help`. */
static int cmd_help(int argc, char **argv)
{
	const struct command *c;
	size_t i;

	if (argc > 2) {
		sp_err("help: give at most one command (see sptrace help)");
		return 1;
	}
	if (argc == 2 && strcmp(argv[1], "--help") && strcmp(argv[1], "-h")) {
		char *args[] = { NULL, (char *)"--help", NULL };

		c = find_command(argv[1]);
		if (!c) {
			print_candidates(argv[1]);
			return 1;
		}
		if (c->fn != cmd_help) {
			if (c->fn != cmd_trace)
				cli__command = c->name;
			args[0] = (char *)c->name;
			return c->fn(2, args);
		}
	}
	printf("Usage: sptrace [COMMAND] [OPTIONS]\n\nCommands:\n");
	for (i = 0; i < NCOMMANDS; i++)
		printf("  %-10s %s\n", commands[i].name, commands[i].help);
	printf("\nWithout a command, sptrace traces: sptrace -p PID, sptrace -- CMD.\n"
	       "sptrace COMMAND --help shows a command's options; see also sptrace(1).\n");
	return 0;
}

static const struct command *find_command(const char *name)
{
	const struct command *found = NULL;
	size_t i, len = strlen(name);

	for (i = 0; i < NCOMMANDS; i++) {
		if (!strcmp(commands[i].name, name))
			return &commands[i];
		if (!strncmp(commands[i].name, name, len)) {
			if (found)
				return NULL;	/* ambiguous */
			found = &commands[i];
		}
	}
	return found;
}

/* The error for a name that is no command: an ambiguous prefix lists the
 * commands it could mean. */
static void print_candidates(const char *name)
{
	char list[256] = "";
	size_t i, len = strlen(name), used = 0;
	int n = 0;

	for (i = 0; i < NCOMMANDS; i++) {
		if (strncmp(commands[i].name, name, len))
			continue;
		n++;
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
					 used ? ", " : "", commands[i].name);
		if (used >= sizeof(list))
			break;
	}
	if (n > 1)
		sp_err("ambiguous command '%s': %s (type more of it)", name, list);
	else
		sp_err("unknown command '%s' (see sptrace help)", name);
}

int main(int argc, char **argv)
{
	const struct command *c;

	if (argc >= 2 && !strcmp(argv[1], "--version")) {
		if (argc > 2) {
			sp_err("--version takes nothing after it ('%s')", argv[2]);
			return 1;
		}
		printf("sptrace %s\n", SPTRACE_VERSION);
		return 0;
	}
	if (argc < 2 || argv[1][0] == '-')
		return cmd_trace(argc, argv);
	c = find_command(argv[1]);
	if (!c) {
		print_candidates(argv[1]);
		return 1;
	}
	if (c->fn != cmd_trace)
		cli__command = c->name;
	return c->fn(argc - 1, argv + 1);
}
