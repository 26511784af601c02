// SPDX-License-Identifier: MIT
/*
 * `sptrace list -p PID | FILE...`: every USDT probe (any provider) of a file,
 * or of a process's executable and mapped shared objects, as found in the
 * ELF notes (which survive strip).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "commands.h"
#include "elf_notes.h"
#include "input.h"
#include "log.h"
#include "parse.h"
#include "proc_maps.h"
#include "proc_pid.h"

static int list_file(const char *open_path, const char *path, size_t *total)
{
	struct usdt_file *f = NULL;
	unsigned int bad = 0;
	size_t i;
	int err;

	err = usdt_file__open(open_path, &f, &bad);
	if (err == -ENOEXEC)
		return 0;
	if (err) {
		sp_err("%s: cannot read: %s", path, input__strerror(err));
		return err;
	}
	if (bad)
		sp_warn("%s: %u malformed stapsdt notes ignored", path, bad);
	for (i = 0; i < f->nsites; i++) {
		const struct usdt_site *s = &f->sites[i];

		printf("%s:%s  %s  0x%" PRIx64 "  %s  args: %s\n", s->provider,
		       s->name, path, s->pc_vaddr,
		       s->sema_vaddr ? "semaphore" : "no-semaphore",
		       s->args[0] ? s->args : "(none)");
	}
	*total += f->nsites;
	usdt_file__free(f);
	return 0;
}

static int list_mapped(void *ctx, const char *open_path, const char *path)
{
	int err = list_file(open_path, path, ctx);

	return err == -ENOENT ? 0 : err;	/* unmapped meanwhile */
}

static int list_pid(long pid, size_t *total)
{
	char why[256], comm[64];
	int err;

	/* A kernel thread, a zombie, maps not ours to read: the reason, as
	 * a trace of the PID would give it. */
	err = proc_pid__traceable((int)pid, why, sizeof(why));
	if (err == -ENOENT)
		sp_err("pid %ld: %s", pid, why);
	else if (err)
		sp_err("pid %ld (%s): %s", pid,
		       proc_pid__comm((int)pid, comm, sizeof(comm)), why);
	if (err)
		return err;
	err = proc_maps__for_each_exec_file((int)pid, list_mapped, total);
	if (err == -ENOENT || err == -ESRCH)
		sp_err("pid %ld: exited while its files were read", pid);
	else if (err == -EACCES || err == -EPERM)
		sp_err("pid %ld: cannot read its mappings: %s", pid,
		       strerror(-err));
	return err < 0 ? err : 0;	/* others said by list_file() */
}

static void print_usage(FILE *f)
{
	fputs("Usage: sptrace list -p PID | FILE...\n"
	      "Print every USDT probe: provider:name, file, address, semaphore, arguments.\n",
	      f);
}

int cmd_list(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	size_t total = 0;
	long pid = 0;
	int c, err = 0;

	optind = 1;
	while ((c = cli__getopt(argc, argv, "p:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_long(optarg, 1, INT_MAX, &pid)) {
				sp_err("invalid PID '%s'", optarg);
				return 1;
			}
			break;
		default:
			if (cli__option(c, print_usage))
				return 1;
		}
	}
	if (!pid && optind >= argc) {
		sp_err("list: give -p PID or a file (see sptrace list --help)");
		return 1;
	}
	if (pid)
		err = list_pid(pid, &total);
	for (; !err && optind < argc; optind++)
		err = list_file(argv[optind], argv[optind], &total);
	if (err)
		return 1;
	if (!total)
		fprintf(stderr, "sptrace: no USDT probes found\n");
	return 0;
}
