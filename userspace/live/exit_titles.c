// SPDX-License-Identifier: MIT
/*
 * Exit titles (exit_titles.h): the watcher's load, its executables, and
 * the read of what it took.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sptrace/title_abi.h>
#include "exit_titles.h"
#include "exit_title.skel.h"
#include "log.h"
#include "proc_title.h"

int exit_titles__open(struct exit_titles *et)
{
	struct exit_title_bpf *skel;
	int err;

	*et = (struct exit_titles){ 0 };
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		sp_info("no kernel BTF: a process that exits between two title reads (200 ms) keeps the title read before");
		return 0;
	}
	skel = exit_title_bpf__open();
	if (!skel) {
		err = -errno;
		goto out;
	}
	err = exit_title_bpf__load(skel);
	if (err) {
		exit_title_bpf__destroy(skel);
		goto out;
	}
	et->skel = skel;
out:
	if (err)
		sp_info("cannot load the exit-title watcher: %s", strerror(-err));
	return 0;
}

int exit_titles__add_file(struct exit_titles *et, const char *path)
{
	struct sp_title_file f = { 0 };
	uint8_t one = 1;
	struct stat st;

	if (!et->skel)
		return 0;
	if (stat(path, &st))
		return -errno;
	/* The kernel's dev_t, as the super_block holds it. */
	f.dev = ((uint64_t)major(st.st_dev) << 20) | minor(st.st_dev);
	f.ino = st.st_ino;
	if (bpf_map_lookup_elem(bpf_map__fd(et->skel->maps.title_files), &f,
				&one) == 0)
		return 0;
	if (et->nfiles == SP_TITLE_FILES)
		return -ENOSPC;
	one = 1;
	if (bpf_map_update_elem(bpf_map__fd(et->skel->maps.title_files), &f,
				&one, BPF_ANY))
		return -errno;
	et->nfiles++;
	return 0;
}

int exit_titles__attach(struct exit_titles *et)
{
	int err;

	if (!et->skel)
		return 0;
	et->link = bpf_program__attach(et->skel->progs.sp_exit_title);
	if (et->link)
		return 0;
	err = -errno;
	sp_info("cannot watch process exits for their titles: %s",
		strerror(-err));
	return err;
}

/* A copy as /proc/PID/cmdline reads it: the arguments, or, when their
 * last byte is no NUL (a title longer than they were, as setproctitle()
 * writes it), one string running on into the environment's area. */
static size_t cmdline_len(const struct sp_exit_title *v)
{
	size_t len = v->len < SP_TITLE_RAW ? v->len : SP_TITLE_RAW;

	if (v->args_len && v->args_len <= len && v->raw[v->args_len - 1] == 0)
		return (size_t)v->args_len;
	return strnlen(v->raw, len);
}

int exit_titles__drain(struct exit_titles *et,
		       int (*fn)(void *ctx, uint32_t pid, const char *title),
		       void *ctx)
{
	char title[PROC_TITLE_MAX];
	struct sp_exit_title v;
	uint64_t lost;
	uint32_t key;
	int fd, n, err = 0;

	if (!et->skel)
		return 0;
	fd = bpf_map__fd(et->skel->maps.exit_titles);
	/* Each entry deleted once read: the walk starts again from the
	 * first key, bounded by what the map can hold meanwhile. */
	for (n = 0; !err && n < 2 * SP_EXIT_TITLES &&
		    !bpf_map_get_next_key(fd, NULL, &key); n++) {
		int got = bpf_map_lookup_elem(fd, &key, &v);

		bpf_map_delete_elem(fd, &key);
		if (got)
			continue;
		proc_title__from_cmdline(v.raw, cmdline_len(&v), title);
		err = fn(ctx, key, title);
	}
	lost = et->skel->bss->titles_lost;
	if (lost > et->lost_said) {
		sp_warn("%" PRIu64 " processes exited without their title kept (more than %d exits in 200 ms, or the title unreadable)",
			lost - et->lost_said, SP_EXIT_TITLES);
		et->lost_said = lost;
	}
	return err;
}

void exit_titles__close(struct exit_titles *et)
{
	bpf_link__destroy(et->link);
	exit_title_bpf__destroy(et->skel);
	*et = (struct exit_titles){ 0 };
}
