// SPDX-License-Identifier: MIT
/*
 * Attaching sp probe sites.
 *
 * Why not libbpf's bpf_program__attach_usdt(): it keeps argument specs in a
 * BPF array (256 by default) and reads each argument through a spec lookup,
 * and for PIE executables and shared objects it needs the file mapped in the
 * target already, which a command about to exec does not have. sp probes
 * pass every argument in a register, so each site becomes one plain uprobe
 * whose cookie says which registers hold the arguments, attached by file
 * offset (works before exec) with the semaphore's file offset as the
 * kernel-managed ref_ctr_offset (a killed tracer leaves it at zero).
 *
 * Files are opened through /proc/PID/map_files/START-END when possible: that
 * names exactly the inode the target mapped, even if the path was replaced,
 * deleted, or lives in another mount namespace.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include <sptrace/query_abi.h>
#include "attach.h"
#include "elf_notes.h"
#include "log.h"
#include "proc_maps.h"
#include "usdt_args.h"

void attacher__init(struct attacher *a, const char *provider,
		    const struct probe_binding *bindings, size_t nbindings)
{
	memset(a, 0, sizeof(*a));
	a->provider = provider;
	a->bindings = bindings;
	a->nbindings = nbindings;
}

void attacher__destroy(struct attacher *a)
{
	size_t i;

	for (i = 0; i < a->nlinks; i++)
		bpf_link__destroy(a->links[i]);
	for (i = 0; i < a->nobjs; i++)
		free(a->objs[i].path);
	free(a->links);
	free(a->objs);
	memset(a, 0, sizeof(*a));
}

size_t attacher__sites(const struct attacher *a)
{
	return a->nsites;
}

static const struct {
	const char *name;
	enum sp_reg reg;
} reg_names[] = {
	{ "rax", SP_REG_RAX }, { "rbx", SP_REG_RBX }, { "rcx", SP_REG_RCX },
	{ "rdx", SP_REG_RDX }, { "rsi", SP_REG_RSI }, { "rdi", SP_REG_RDI },
	{ "rbp", SP_REG_RBP }, { "r8", SP_REG_R8 },   { "r9", SP_REG_R9 },
	{ "r10", SP_REG_R10 }, { "r11", SP_REG_R11 }, { "r12", SP_REG_R12 },
	{ "r13", SP_REG_R13 }, { "r14", SP_REG_R14 }, { "r15", SP_REG_R15 },
};

int attach__cookie_from_args(const char *args, uint64_t *cookie)
{
	struct usdt_arg v[USDT_ARGS_MAX];
	int n, i;
	size_t j;

	*cookie = 0;
	n = usdt_args__parse(args, v, USDT_ARGS_MAX);
	if (n < 0)
		return n;
	if (n > 8)
		return -EOPNOTSUPP;
	for (i = 0; i < n; i++) {
		if (v[i].kind != USDT_ARG_REG || v[i].size != 8)
			return -EOPNOTSUPP;
		for (j = 0; j < sizeof(reg_names) / sizeof(reg_names[0]); j++)
			if (!strcmp(v[i].reg, reg_names[j].name))
				break;
		if (j == sizeof(reg_names) / sizeof(reg_names[0]))
			return -EOPNOTSUPP;
		*cookie |= (uint64_t)reg_names[j].reg << (i * 8);
	}
	return 0;
}

static struct bpf_program *binding_for(const struct attacher *a,
				       const char *name)
{
	size_t i;

	for (i = 0; i < a->nbindings; i++)
		if (!strcmp(a->bindings[i].name, name))
			return a->bindings[i].prog;
	return NULL;
}

static int push_link(struct attacher *a, struct bpf_link *l)
{
	if (a->nlinks == a->links_cap) {
		size_t cap = a->links_cap ? a->links_cap * 2 : 64;
		struct bpf_link **v = realloc(a->links, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		a->links = v;
		a->links_cap = cap;
	}
	a->links[a->nlinks++] = l;
	return 0;
}

static struct attached_obj *find_obj(struct attacher *a, pid_t pid,
				     uint64_t dev, uint64_t ino)
{
	size_t i;

	for (i = 0; i < a->nobjs; i++)
		if (a->objs[i].pid == pid && a->objs[i].dev == dev &&
		    a->objs[i].ino == ino)
			return &a->objs[i];
	return NULL;
}

static void rollback(struct attacher *a, size_t first)
{
	while (a->nlinks > first)
		bpf_link__destroy(a->links[--a->nlinks]);
}

static int attach_site(struct attacher *a, pid_t pid, const char *open_path,
		       const char *path, const struct usdt_site *s,
		       struct bpf_program *prog)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts);
	struct bpf_link *link;
	uint64_t cookie;
	int err;

	err = attach__cookie_from_args(s->args, &cookie);
	if (err) {
		sp_warn("%s: probe %s:%s at 0x%" PRIx64
			" has arguments '%s' that are not plain 64-bit registers; site skipped (rebuild with probes/sp_probe.h)",
			path, s->provider, s->name, s->pc_vaddr, s->args);
		a->skipped_sites++;
		return 0;
	}
	opts.bpf_cookie = cookie;
	opts.ref_ctr_offset = s->sema_offset;
	link = bpf_program__attach_uprobe_opts(prog, pid, open_path,
					       s->pc_offset, &opts);
	if (!link) {
		err = -errno;
		sp_err("%s: cannot attach probe %s:%s at 0x%" PRIx64 ": %s",
		       path, s->provider, s->name, s->pc_vaddr, strerror(-err));
		return err;
	}
	err = push_link(a, link);
	if (err) {
		bpf_link__destroy(link);
		return err;
	}
	return 1;
}

int attacher__attach_file(struct attacher *a, pid_t pid, const char *open_path,
			  const char *path)
{
	struct usdt_file *f = NULL;
	size_t first = a->nlinks, i, n = 0;
	unsigned int bad = 0;
	struct attached_obj *o;
	struct stat st;
	int err;

	if (stat(open_path, &st))
		return -errno;
	if (find_obj(a, pid, st.st_dev, st.st_ino))
		return 0;
	err = usdt_file__open(open_path, &f, &bad);
	if (err == -ENOEXEC)
		return 0;	/* not an ELF file: nothing to attach */
	if (err)
		return err;
	if (bad)
		sp_warn("%s: %u malformed stapsdt notes ignored", path, bad);

	for (i = 0; i < f->nsites; i++) {
		const struct usdt_site *s = &f->sites[i];
		struct bpf_program *prog;

		if (strcmp(s->provider, a->provider))
			continue;
		prog = binding_for(a, s->name);
		if (!prog)
			continue;
		err = attach_site(a, pid, open_path, path, s, prog);
		if (err < 0)
			goto rollback;
		n += err;
	}
	if (a->nobjs == a->objs_cap) {
		size_t cap = a->objs_cap ? a->objs_cap * 2 : 16;
		struct attached_obj *v = realloc(a->objs, cap * sizeof(*v));

		if (!v) {
			err = -ENOMEM;
			goto rollback;
		}
		a->objs = v;
		a->objs_cap = cap;
	}
	o = &a->objs[a->nobjs];
	o->path = strdup(path);
	if (!o->path) {
		err = -ENOMEM;
		goto rollback;
	}
	o->pid = pid;
	o->dev = st.st_dev;
	o->ino = st.st_ino;
	o->first_link = first;
	o->nlinks = a->nlinks - first;
	a->nobjs++;
	a->nsites += n;
	if (n)
		sp_info("pid %d: %s: %zu probe sites attached", (int)pid, path,
			n);
	usdt_file__free(f);
	return (int)n;

rollback:
	rollback(a, first);
	usdt_file__free(f);
	return err;
}

int attacher__attach_pid(struct attacher *a, pid_t pid)
{
	struct proc_maps maps = {};
	const char **paths = NULL;
	size_t npaths = 0, i, j;
	int err, total = 0;

	err = proc_maps__read(pid, &maps);
	if (err)
		return err;
	err = proc_maps__exec_files(&maps, &paths, &npaths);
	if (err)
		goto out;
	for (i = 0; i < npaths; i++) {
		char open_path[96];

		/* The first mapping of this path names its inode. */
		for (j = 0; j < maps.n; j++)
			if (maps.v[j].path && !strcmp(maps.v[j].path, paths[i]))
				break;
		if (j == maps.n)
			continue;
		snprintf(open_path, sizeof(open_path),
			 "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid,
			 maps.v[j].start, maps.v[j].end);
		err = attacher__attach_file(a, pid, open_path, paths[i]);
		if (err == -ENOENT || err == -EACCES || err == -EPERM) {
			/* No map_files (unprivileged or old kernel): go
			 * through the target's root, for containers. */
			char *alt;

			if (asprintf(&alt, "/proc/%d/root%s", (int)pid,
				     paths[i]) < 0) {
				err = -ENOMEM;
				goto out;
			}
			err = attacher__attach_file(a, pid, alt, paths[i]);
			free(alt);
		}
		if (err < 0) {
			if (err == -ENOENT || err == -ESRCH) {
				/* unmapped or exited meanwhile */
				sp_info("pid %d: %s vanished while attaching",
					(int)pid, paths[i]);
				continue;
			}
			goto out;
		}
		total += err;
	}
	err = total;
out:
	free(paths);
	proc_maps__free(&maps);
	return err;
}
