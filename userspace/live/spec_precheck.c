// SPDX-License-Identifier: MIT
/*
 * The probes a session needs (sp probes, --query specs) against the files
 * each target will have, in the one pass of checks before tracing (the
 * rules: spec_precheck.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "elf_deps.h"
#include "elf_notes.h"
#include "launch.h"
#include "log.h"
#include "proc_maps.h"
#include "proc_pid.h"
#include "query_spec.h"
#include "spec_precheck.h"
#include "usdt_args.h"
#include "vec.h"

/* The kernel follows at most this many "#!" levels (BINPRM_MAX_RECURSION). */
#define SCRIPT_DEPTH 4

/* The USDT notes of a target's files. */
struct probe_set {
	struct usdt_file **v;
	size_t n, cap;
};

static int set_add(struct probe_set *s, const char *open_path,
		   const char *path)
{
	struct usdt_file *f;

	/* Unreadable, not ELF: attaching skips it too. */
	if (usdt_file__open(open_path, &f, NULL))
		return 0;
	free(f->path);
	f->path = strdup(path);
	if (!f->path || VEC_RESERVE(s->v, s->cap, s->n + 1)) {
		usdt_file__free(f);
		return -ENOMEM;
	}
	s->v[s->n++] = f;
	return 0;
}

static void set_free(struct probe_set *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		usdt_file__free(s->v[i]);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* The file holding provider:name (name NULL: any probe of provider). */
static const char *set_find(const struct probe_set *s, const char *provider,
			    const char *name)
{
	size_t i, k;

	for (i = 0; i < s->n; i++)
		for (k = 0; k < s->v[i]->nsites; k++)
			if (!strcmp(s->v[i]->sites[k].provider, provider) &&
			    (!name || !strcmp(s->v[i]->sites[k].name, name)))
				return s->v[i]->path;
	return NULL;
}

/* Every site of probe p of q in s has the arguments the line reads there
 * (attaching the file would refuse it otherwise): 0, or -EINVAL said in
 * one line. */
static int set_args(const struct probe_set *s, const struct query_spec *q,
		    int p)
{
	struct usdt_arg args[USDT_ARGS_MAX];
	const char *what;
	size_t i, k;

	if (query_spec__arg_need(q, p, &what) < 0)
		return 0;
	for (i = 0; i < s->n; i++)
		for (k = 0; k < s->v[i]->nsites; k++) {
			const struct usdt_site *site = &s->v[i]->sites[k];

			if (strcmp(site->provider, q->provider[p]) ||
			    strcmp(site->name, q->probe[p]))
				continue;
			if (query_spec__args_check(q, p, s->v[i]->path,
						   usdt_args__parse(site->args, args,
								    USDT_ARGS_MAX)))
				return -EINVAL;
		}
	return 0;
}

/* "p1, p2": the providers of the set, as the check after attaching says. */
static void set_providers(const struct probe_set *s, char *buf, size_t len)
{
	size_t i, k, at = 0;

	buf[0] = 0;
	for (i = 0; i < s->n; i++) {
		for (k = 0; k < s->v[i]->nsites && at < len - 1; k++) {
			const char *p = s->v[i]->sites[k].provider;
			const char *hit = strstr(buf, p);
			size_t pl = strlen(p);

			while (hit && !((hit == buf || hit[-1] == ' ') &&
					(hit[pl] == ',' || !hit[pl])))
				hit = strstr(hit + 1, p);
			if (hit)
				continue;
			at += (size_t)snprintf(buf + at, len - at, "%s%s",
					       at ? ", " : "", p);
		}
	}
}

static int pid_file(void *ctx, const char *open_path, const char *path)
{
	return set_add(ctx, open_path, path);
}

/* How a spec check ends for one target. */
enum strictness {
	REFUSE,		/* the files are all the target will have */
	MAY_LOAD,	/* dlopen, exec or --follow may bring more */
};

/* Every probe of every spec against s, one line per spec line: its first
 * probe found nowhere, the others in the parentheses. REFUSE: an error;
 * MAY_LOAD: a note with -v (the check after the run decides, and says it
 * in one line). libs: the files the -b file needs, for a hint. 0 or
 * -EINVAL. */
static int check_set(const struct session_opts *o, const struct probe_set *s,
		     const char *target, enum strictness how,
		     const char *late_why, const struct probe_set *libs,
		     const char *bin)
{
	char wbuf[640], provs[512], more[512], hint[PATH_MAX * 2 + 96];
	const char *in;
	int k, p, first, err = 0;
	size_t at;

	set_providers(s, provs, sizeof(provs));
	for (k = 0; k < o->nqspecs; k++) {
		const struct query_spec *q = &o->qspecs[k];

		first = -1;
		more[0] = 0;
		at = 0;
		hint[0] = 0;
		for (p = 0; p < q->nprobes; p++) {
			if (set_find(s, q->provider[p], q->probe[p]))
				continue;
			if (first < 0)
				first = p;
			else if (at < sizeof(more))
				at += (size_t)snprintf(more + at, sizeof(more) - at,
						       "%s%s:%s",
						       at ? ", " : "; nor ",
						       q->provider[p], q->probe[p]);
			in = libs ? set_find(libs, q->provider[p], q->probe[p])
				  : NULL;
			if (in && !hint[0])
				snprintf(hint, sizeof(hint),
					 "; %s:%s is in %s, which %s loads: -b traces only the file given, add -b %s",
					 q->provider[p], q->probe[p], in, bin, in);
		}
		/* A probe found with fewer arguments than the line reads: the
		 * file is attached whatever else may load later. */
		for (p = 0; (first < 0 || how == MAY_LOAD) && p < q->nprobes; p++)
			if (set_args(s, q, p)) {
				err = -EINVAL;
				first = -1;	/* said: one line per spec line */
				break;
			}
		if (first < 0)
			continue;
		query_spec__where(q, wbuf, sizeof(wbuf));
		if (how == MAY_LOAD) {
			sp_info("%s: no probe %s:%s%s in %s or its libraries before it runs; not refused: a file loaded later may bring it (%s), which the run's end checks",
				wbuf, q->provider[first], q->probe[first], more,
				target, late_why);
			continue;
		}
		if (provs[0])
			sp_err("%s: no probe %s:%s in %s or its libraries (their providers: %s%s%s; sptrace list FILE shows the probes)",
			       wbuf, q->provider[first], q->probe[first], target,
			       provs, more, hint);
		else
			sp_err("%s: no probe %s:%s in %s or its libraries (they have no USDT probes at all%s%s)",
			       wbuf, q->provider[first], q->probe[first], target,
			       more, hint);
		err = -EINVAL;
	}
	return err;
}

/* -p: the union of the files the processes map (a probe in one of them
 * is enough, as attaching counts it). */
static int check_pids(const struct session_opts *o)
{
	struct probe_set s = { 0 };
	char target[64];
	int i, n = 0, last = 0, err;

	for (i = 0; i < o->npids; i++) {
		/* Gone, or not ours to read: said elsewhere. */
		if (proc_maps__for_each_exec_file(o->pids[i], pid_file, &s) < 0)
			continue;
		n++;
		last = (int)o->pids[i];
	}
	if (n == 1)
		snprintf(target, sizeof(target), "pid %d", last);
	else
		snprintf(target, sizeof(target), "any of the %d processes", n);
	err = n ? check_set(o, &s, target, REFUSE, NULL, NULL, NULL) : 0;
	set_free(&s);
	return err;
}

static int check_binaries(const struct session_opts *o)
{
	struct elf_deps d = { 0 };
	struct probe_set s = { 0 }, libs = { 0 };
	size_t i;
	int k, err = 0;

	if (!o->nbinaries)
		return 0;
	for (k = 0; !err && k < o->nbinaries; k++)
		err = set_add(&s, o->binaries[k], o->binaries[k]);
	/* The libraries the (first) file needs, for a hint. */
	if (!err && !elf_deps__closure(o->binaries[0], &d))
		for (i = 1; !err && i < d.n; i++)
			err = set_add(&libs, d.paths[i], d.paths[i]);
	if (!err)
		err = check_set(o, &s, o->binaries[0], REFUSE, NULL, &libs,
				o->binaries[0]);
	elf_deps__free(&d);
	set_free(&libs);
	set_free(&s);
	return err == -ENOMEM ? -EINVAL : err;
}

/* -- CMD: the program the exec will run, a script followed to its
 * interpreter as the kernel does; *shown says so for messages. */
static int command_program(const char *cmd, char **prog, char **shown)
{
	char *path = NULL, *line = NULL, *next;
	int depth, err;

	*prog = *shown = NULL;
	err = launch__resolve(cmd, &path);
	if (err)
		return err;
	for (depth = 0; depth < SCRIPT_DEPTH; depth++) {
		free(line);
		err = launch__shebang(path, &line);
		if (err || !line)
			break;
		err = launch__interpreter(line, &next);
		if (err)
			break;
		free(path);
		path = next;
		free(*shown);
		if (asprintf(shown, "%s (a script, %s, run by %s)", cmd, line,
			     path) < 0) {
			*shown = NULL;
			err = -ENOMEM;
			break;
		}
	}
	free(line);
	if (!err && !*shown && !(*shown = strdup(cmd)))
		err = -ENOMEM;
	if (err) {
		free(path);
		free(*shown);
		*shown = NULL;
		return err;
	}
	*prog = path;
	return 0;
}

static int check_command(const struct session_opts *o)
{
	struct elf_deps d = { 0 };
	struct probe_set s = { 0 };
	char *prog, *shown;
	const char *why;
	size_t i;
	int err;

	/* Not found, not runnable: the command check says so. */
	if (command_program(o->cmd[0], &prog, &shown))
		return 0;
	err = elf_deps__closure(prog, &d);
	if (err) {	/* not ELF (exec would say why): nothing to check */
		free(prog);
		free(shown);
		return 0;
	}
	for (i = 0; !err && i < d.n; i++)
		err = set_add(&s, d.paths[i], d.paths[i]);
	why = o->follow ? "--follow traces the programs its children run" :
	      d.late_why;
	if (!err)
		err = check_set(o, &s, shown,
				o->follow || d.loads_later ? MAY_LOAD : REFUSE,
				why, NULL, NULL);
	elf_deps__free(&d);
	set_free(&s);
	free(prog);
	free(shown);
	return err == -ENOMEM ? -EINVAL : err;
}

/* Sites of provider "sp" in the set. */
static size_t set_sp_sites(const struct probe_set *s)
{
	size_t i, n = 0;

	for (i = 0; i < s->n; i++)
		n += usdt_file__count(s->v[i], "sp");
	return n;
}

/* A process whose maps listed `nfiles` executable files is still there:
 * one exiting has given its mappings up (none listed) or is gone or a
 * zombie by now, and is said to have exited, not to lack probes. */
static bool still_there(pid_t pid, size_t nfiles)
{
	char why[160];
	int t;

	if (!nfiles)
		return false;
	t = proc_pid__traceable((int)pid, why, sizeof(why));
	return t != -ENOENT && t != -ESRCH;
}

/* -p: each process on its own, as attaching refuses each. One that cannot
 * be read was said by the PID check. */
static int sp_pids(const struct session_opts *o)
{
	char comm[64];
	int i, err = 0;

	for (i = 0; i < o->npids; i++) {
		struct probe_set s = { 0 };

		if (proc_maps__for_each_exec_file(o->pids[i], pid_file, &s) < 0 ||
		    set_sp_sites(&s)) {
			set_free(&s);
			continue;
		}
		if (!still_there(o->pids[i], s.n))
			sp_err("pid %d: exited before it could be attached",
			       (int)o->pids[i]);
		else
			sp_err("pid %d (%s): no sp probes in its executable or libraries (instrument it with probes/sp_probe.h; sptrace list -p %d shows its probes)",
			       (int)o->pids[i],
			       proc_pid__comm((int)o->pids[i], comm, sizeof(comm)),
			       (int)o->pids[i]);
		err = -EINVAL;
		set_free(&s);
	}
	return err;
}

/* -b: each file on its own (only it is attached); when a library it needs
 * has sp probes, the line names it. One that cannot be read was said by
 * the -b check. */
static int sp_binaries(const struct session_opts *o)
{
	char hint[PATH_MAX + 64];
	struct elf_deps d = { 0 };
	struct usdt_file *f;
	size_t i, n;
	int k, err = 0;

	for (k = 0; k < o->nbinaries; k++) {
		if (usdt_file__open(o->binaries[k], &f, NULL))
			continue;
		n = usdt_file__count(f, "sp");
		usdt_file__free(f);
		if (n)
			continue;
		hint[0] = 0;
		if (!elf_deps__closure(o->binaries[k], &d)) {
			for (i = 1; i < d.n && !hint[0]; i++) {
				if (usdt_file__open(d.paths[i], &f, NULL))
					continue;
				if (usdt_file__count(f, "sp"))
					snprintf(hint, sizeof(hint),
						 "; %s, which it loads, has some: add -b %s",
						 d.paths[i], d.paths[i]);
				usdt_file__free(f);
			}
			elf_deps__free(&d);
		}
		sp_err("%s: no sp probes in this file (instrument it with probes/sp_probe.h; sptrace list %s shows its probes%s)",
		       o->binaries[k], o->binaries[k], hint);
		err = -EINVAL;
	}
	return err;
}

/* -- CMD: its program and DT_NEEDED closure. None with an sp probe is
 * refused when nothing can load more; else the run's end says it. */
static int sp_command(const struct session_opts *o)
{
	struct elf_deps d = { 0 };
	struct probe_set s = { 0 };
	char *prog, *shown;
	size_t i;
	int err;

	if (command_program(o->cmd[0], &prog, &shown))
		return 0;	/* the command check says why */
	err = elf_deps__closure(prog, &d);
	for (i = 0; !err && i < d.n; i++)
		err = set_add(&s, d.paths[i], d.paths[i]);
	if (!err && !set_sp_sites(&s)) {
		if (o->follow || d.loads_later)
			sp_info("%s: no sp probes in %s or its libraries before it runs; not refused: %s",
				shown, prog, o->follow ?
				"--follow traces the programs its children run" :
				d.late_why);
		else {
			sp_err("%s: no sp probes in %s or its libraries, and it loads no others (instrument it with probes/sp_probe.h; sptrace list FILE shows a file's probes)",
			       shown, prog);
			err = -EINVAL;
		}
	}
	elf_deps__free(&d);
	set_free(&s);
	free(prog);
	free(shown);
	return err == -EINVAL ? err : 0;	/* not ELF: exec says why */
}

int spec_precheck__sp(const struct session_opts *o)
{
	int err = 0;

	if (!session_opts__sp_only(o))
		return 0;
	if (sp_pids(o))
		err = -EINVAL;
	if (sp_binaries(o))
		err = -EINVAL;
	if (o->cmd && sp_command(o))
		err = -EINVAL;
	return err;
}

int spec_precheck__targets(const struct session_opts *o)
{
	int err = 0;

	if (!o->nqspecs)
		return 0;
	if (o->npids && check_pids(o))
		err = -EINVAL;
	if (check_binaries(o))
		err = -EINVAL;
	if (o->cmd && check_command(o))
		err = -EINVAL;
	return err;
}
