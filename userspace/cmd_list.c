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
#include "commands.h"
#include "elf_notes.h"
#include "log.h"
#include "proc_maps.h"

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
		sp_err("%s: cannot read: %s", path, strerror(-err));
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

static int list_pid(long pid, size_t *total)
{
	struct proc_maps maps = {};
	const char **paths = NULL;
	size_t n = 0, i, j;
	int err;

	err = proc_maps__read((int)pid, &maps);
	if (err) {
		sp_err("pid %ld: cannot read its mappings: %s%s", pid,
		       strerror(-err),
		       err == -ENOENT || err == -ESRCH ? " (check the PID)" :
		       " (needs root or CAP_SYS_PTRACE)");
		return err;
	}
	err = proc_maps__exec_files(&maps, &paths, &n);
	for (i = 0; !err && i < n; i++) {
		char open_path[96];

		for (j = 0; j < maps.n; j++)
			if (maps.v[j].path && !strcmp(maps.v[j].path, paths[i]))
				break;
		snprintf(open_path, sizeof(open_path),
			 "/proc/%ld/map_files/%" PRIx64 "-%" PRIx64, pid,
			 maps.v[j].start, maps.v[j].end);
		err = list_file(open_path, paths[i], total);
		if (err == -ENOENT)
			err = 0;	/* unmapped meanwhile */
	}
	free(paths);
	proc_maps__free(&maps);
	return err;
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
	while ((c = getopt_long(argc, argv, "p:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_long(optarg, 1, INT_MAX, &pid)) {
				sp_err("invalid PID '%s'", optarg);
				return 1;
			}
			break;
		case 'h':
			printf("Usage: sptrace list -p PID | FILE...\n"
			       "Print every USDT probe: provider:name, file, address, semaphore, arguments.\n");
			return 0;
		default:
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
