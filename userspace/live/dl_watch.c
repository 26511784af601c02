// SPDX-License-Identifier: MIT
/*
 * Dynamic-loader watch. A uprobe on _dl_debug_state of each target's
 * loader (found in its ELF PT_INTERP before exec, or among its mappings
 * when it runs) counts link-map changes, and in stop mode stops the
 * process until the session has attached to what was mapped.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "dl_watch.h"
#include "dl_watch.skel.h"
#include "elf_notes.h"
#include "log.h"
#include "name_locator.h"
#include "proc_maps.h"
#include "stop_release.h"

#define DEFAULT_INTERP "/lib64/ld-linux-x86-64.so.2"

int dl_watch__open(struct dl_watch *w, const struct stop_release *stops)
{
	int err;

	memset(w, 0, sizeof(*w));
	w->stop = stops != NULL;
	w->skel = dl_watch_bpf__open();
	if (!w->skel)
		return -errno;
	w->skel->rodata->stop = w->stop;
	/* The follow-mode maps, unused: as small as they can be. */
	err = bpf_map__set_max_entries(w->skel->maps.followed, 1);
	if (!err)
		err = bpf_map__set_max_entries(w->skel->maps.follow_events,
					       (uint32_t)getpagesize());
	if (!err)
		err = stop_release__use(stops, w->skel->maps.stop_held,
					w->skel->maps.stop_released,
					w->skel->maps.stop_ctl);
	if (!err)
		err = dl_watch_bpf__load(w->skel);
	if (err) {
		dl_watch_bpf__destroy(w->skel);
		w->skel = NULL;
	}
	return err;
}

int dl_watch__open_follow(struct dl_watch *w, const struct stop_release *stops,
			  int followed_fd, int events_fd, int errors_fd)
{
	int err;

	memset(w, 0, sizeof(*w));
	w->stop = true;
	w->follow = true;
	w->skel = dl_watch_bpf__open();
	if (!w->skel)
		return -errno;
	w->skel->rodata->stop = true;
	w->skel->rodata->follow = true;
	err = bpf_map__reuse_fd(w->skel->maps.followed, followed_fd);
	if (!err)
		err = bpf_map__reuse_fd(w->skel->maps.follow_events, events_fd);
	if (!err)
		err = bpf_map__reuse_fd(w->skel->maps.follow_errors, errors_fd);
	if (!err)
		err = stop_release__use(stops, w->skel->maps.stop_held,
					w->skel->maps.stop_released,
					w->skel->maps.stop_ctl);
	if (!err)
		err = dl_watch_bpf__load(w->skel);
	if (err) {
		dl_watch_bpf__destroy(w->skel);
		w->skel = NULL;
	}
	return err;
}

void dl_watch__locate_names(struct dl_watch *w, struct name_locator *l)
{
	w->names = l;
}

/* Keeps link in links[*n] (one more), or destroys it. 0 or -ENOMEM. */
static int add_link(struct bpf_link ***links, size_t *n, struct bpf_link *link)
{
	struct bpf_link **v;

	v = realloc(*links, (*n + 1) * sizeof(*v));
	if (!v) {
		bpf_link__destroy(link);
		return -ENOMEM;
	}
	*links = v;
	v[(*n)++] = link;
	return 0;
}

/* The name locator beside the watch at `off` of `loader`, with _r_debug's
 * distance from _dl_debug_state (vaddr) as its cookie. Best effort: the
 * names are read from snapshots without it. */
static void attach_locate(struct dl_watch *w, pid_t pid, const char *loader,
			  uint64_t vaddr, uint64_t off)
{
	uint64_t r_debug;

	if (w->names && !elf_object_vaddr(loader, "_r_debug", &r_debug))
		name_locator__attach_unloads(w->names, pid, loader, off,
					     r_debug - vaddr);
}

/* Follow mode: is this loader file watched already? Records it if not. */
static int loader_seen(struct dl_watch *w, const char *loader, bool *seen)
{
	struct stat st;
	size_t i;
	void *v;

	*seen = false;
	if (stat(loader, &st))
		return -errno;
	for (i = 0; i < w->nlinks; i++)
		if (w->loaders[i].dev == st.st_dev &&
		    w->loaders[i].ino == st.st_ino) {
			*seen = true;
			return 0;
		}
	v = realloc(w->loaders, (w->nlinks + 1) * sizeof(*w->loaders));
	if (!v)
		return -ENOMEM;
	w->loaders = v;
	w->loaders[w->nlinks].dev = st.st_dev;
	w->loaders[w->nlinks].ino = st.st_ino;
	return 0;
}

/* The running process's loader: a mapped file named ld-*.so*. Its
 * map_files link names the very inode, in any mount namespace. */
static int running_loader(pid_t pid, char *buf, size_t len)
{
	struct proc_maps m = {};
	size_t i;
	int err;

	err = proc_maps__read(pid, &m);
	if (err)
		return err;
	err = -ENOENT;
	for (i = 0; i < m.n; i++) {
		const char *p = m.v[i].path, *base;

		if (!p || p[0] != '/' || m.v[i].pgoff)
			continue;
		base = strrchr(p, '/') + 1;
		if (!strncmp(base, "ld-", 3) && strstr(base, ".so")) {
			snprintf(buf, len, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
				 (int)pid, m.v[i].start, m.v[i].end);
			err = 0;
			break;
		}
	}
	proc_maps__free(&m);
	return err;
}

int dl_watch__attach(struct dl_watch *w, pid_t pid, const char *exe)
{
	struct usdt_file *f = NULL;
	char loader[PATH_MAX];
	struct bpf_link *link;
	uint64_t vaddr, off;
	unsigned int bad;
	bool seen;
	int err;

	if (exe) {
		/* A script or a static binary still gets the default loader:
		 * it costs nothing if never mapped. */
		snprintf(loader, sizeof(loader), "%s", DEFAULT_INTERP);
		if (!usdt_file__open(exe, &f, &bad) && f->interp)
			snprintf(loader, sizeof(loader), "%s", f->interp);
		usdt_file__free(f);
	} else {
		err = running_loader(pid, loader, sizeof(loader));
		if (err)
			return err;
	}
	err = elf_symbol_offset(loader, "_dl_debug_state", &vaddr, &off);
	if (err)
		return err;
	if (w->follow) {
		/* One link per loader file serves every followed process. */
		err = loader_seen(w, loader, &seen);
		if (err || seen)
			return err;
		pid = -1;
	}
	link = bpf_program__attach_uprobe(w->skel->progs.sp_dl_event, false,
					  pid, loader, off);
	if (!link)
		return -errno;
	err = add_link(&w->links, &w->nlinks, link);
	if (!err)
		attach_locate(w, pid, loader, vaddr, off);
	return err;
}

static uint32_t events(const struct dl_watch *w)
{
	__u32 key = 0, v = 0;

	if (w->skel)
		bpf_map_lookup_elem(bpf_map__fd(w->skel->maps.dl_events), &key,
				    &v);
	return v;
}

bool dl_watch__take_stop(struct dl_watch *w)
{
	__u32 key = 0, v = events(w);

	if (!v || w->follow)
		return false;
	/* The process is stopped: no event can come in between. */
	v--;
	bpf_map_update_elem(bpf_map__fd(w->skel->maps.dl_events), &key, &v,
			    BPF_ANY);
	return true;
}

bool dl_watch__changed(struct dl_watch *w)
{
	uint32_t v = events(w);

	if (v == w->seen)
		return false;
	w->seen = v;
	return true;
}

void dl_watch__destroy(struct dl_watch *w)
{
	size_t i;

	for (i = 0; i < w->nlinks; i++)
		bpf_link__destroy(w->links[i]);
	free(w->links);
	free(w->loaders);
	dl_watch_bpf__destroy(w->skel);
	memset(w, 0, sizeof(*w));
}
