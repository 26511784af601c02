// SPDX-License-Identifier: MIT
/*
 * The query-name locator (name_locator.h): its load in a thread and its
 * links.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "name_locator.h"
#include "name_locate.skel.h"
#include "log.h"

static void *load(void *arg)
{
	struct name_locator *l = arg;
	struct name_locate_bpf *skel;
	int err;

	skel = name_locate_bpf__open();
	if (!skel) {
		err = -errno;
		goto out;
	}
	err = bpf_map__reuse_fd(skel->maps.names, l->names_fd);
	if (!err)
		err = bpf_map__reuse_fd(skel->maps.unread_names, l->unread_fd);
	if (!err)
		err = name_locate_bpf__load(skel);
	if (err)
		name_locate_bpf__destroy(skel);
	else
		l->skel = skel;
out:
	if (err)
		sp_info("cannot load the query-name locator: %s", strerror(-err));
	return NULL;
}

void name_locator__start(struct name_locator *l, int names_fd, int unread_fd)
{
	memset(l, 0, sizeof(*l));
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		sp_info("no kernel BTF: query names BPF could not read are read from sptrace's snapshots only");
		return;
	}
	l->names_fd = names_fd;
	l->unread_fd = unread_fd;
	if (!pthread_create(&l->loader, NULL, load, l))
		l->loading = true;
	else
		load(l);
}

static void wait_loaded(struct name_locator *l)
{
	if (l->loading)
		pthread_join(l->loader, NULL);
	l->loading = false;
}

void name_locator__attach_exits(struct name_locator *l)
{
	wait_loaded(l);
	if (!l->skel || l->exit_link)
		return;
	l->exit_link = bpf_program__attach(l->skel->progs.sp_name_locate_exit);
	if (!l->exit_link)
		sp_info("cannot locate query names at processes' exits: %s",
			strerror(errno));
}

void name_locator__attach_unloads(struct name_locator *l, pid_t pid,
				  const char *loader, uint64_t off,
				  uint64_t r_debug_off)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts);
	struct bpf_link *link, **v;

	wait_loaded(l);
	if (!l->skel)
		return;
	opts.bpf_cookie = r_debug_off;
	link = bpf_program__attach_uprobe_opts(l->skel->progs.sp_name_locate,
					       pid, loader, off, &opts);
	if (!link) {
		sp_info("%s: cannot locate query names at unloads: %s",
			loader, strerror(errno));
		return;
	}
	v = realloc(l->links, (l->nlinks + 1) * sizeof(*v));
	if (!v) {
		bpf_link__destroy(link);
		return;
	}
	l->links = v;
	v[l->nlinks++] = link;
}

void name_locator__destroy(struct name_locator *l)
{
	size_t i;

	wait_loaded(l);
	bpf_link__destroy(l->exit_link);
	for (i = 0; i < l->nlinks; i++)
		bpf_link__destroy(l->links[i]);
	free(l->links);
	name_locate_bpf__destroy(l->skel);
	memset(l, 0, sizeof(*l));
}
