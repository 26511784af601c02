// SPDX-License-Identifier: MIT
/*
 * Repeated reads of a running session with bounded memory (exited_rows.h).
 *
 * A process that exited can add nothing more, so its kernel rows are final:
 * they are copied into the accumulator and deleted from the maps (the
 * "evictions" of the health figures). Only processes already known to be
 * gone *before* a read are evicted after it; a process found gone during
 * the read may still have added to its rows after they were read, and is
 * evicted at the next read. After `keep_ns` an exited process's rows are
 * merged under pid 0, so the accumulator holds at most one row per query
 * name plus the rows of processes that exited within `keep_ns`, and the
 * session's snapshot of an evicted process's mappings is dropped.
 */
#include <dirent.h>
#include <errno.h>
#include <linux/kcmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "exited_rows.h"
#include "log.h"
#include "proc_maps.h"
#include "proc_pid.h"
#include "proc_title.h"
#include "query_maps.h"
#include "query_provider.h"
#include "session.h"
#include "vec.h"

void exited_rows__init(struct exited_rows *f, struct query_provider *qp,
		 struct session *ss, double keep_s)
{
	memset(f, 0, sizeof(*f));
	f->qp = qp;
	f->ss = ss;
	f->keep_ns = keep_s > 0 ? (uint64_t)(keep_s * 1e9) : 0;
	summary__init(&f->acc);
	f->acc.per_pid = true;
}

void exited_rows__free(struct exited_rows *f)
{
	size_t i;

	for (i = 0; i < f->nprocs; i++) {
		free(f->procs[i].exe);
		free(f->procs[i].title);
	}
	free(f->procs);
	free(f->folded);
	summary__free(&f->acc);
	memset(f, 0, sizeof(*f));
}

/* The process's start time in clock ticks, 0 when it is gone: with the
 * pid, it tells a process from a later one that reuses the pid. */
static uint64_t proc_start(uint32_t pid)
{
	uint64_t t;
	int ppid;

	if (proc_pid__start_time((int)pid, &t, &ppid))
		return 0;
	return t ? t : 1;
}

static int proc_cmp(const void *a, const void *b)
{
	const struct tracked_proc *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

const struct tracked_proc *exited_rows__proc(const struct exited_rows *f, uint32_t pid)
{
	struct tracked_proc key = { .pid = pid };

	return f->nprocs ? bsearch(&key, f->procs, f->nprocs,
				   sizeof(key), proc_cmp) : NULL;
}

size_t exited_rows__alive(const struct exited_rows *f)
{
	size_t i, n = 0;

	for (i = 0; i < f->nprocs; i++)
		n += f->procs[i].alive;
	return n;
}

/* Labels are read once, when a process is first seen. */
static void proc_labels(struct tracked_proc *p)
{
	char path[64], buf[4096], title[PROC_TITLE_MAX];
	ssize_t n;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%u/comm", p->pid);
	fp = fopen(path, "r");
	if (fp) {
		if (fgets(p->comm, sizeof(p->comm), fp))
			p->comm[strcspn(p->comm, "\n")] = 0;
		fclose(fp);
	}
	snprintf(path, sizeof(path), "/proc/%u/exe", p->pid);
	n = readlink(path, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = 0;
	p->exe = strdup(buf);
	if (!proc_title__read((pid_t)p->pid, title)) {
		p->title = strdup(title);
		p->title_inherited = proc_title__inherited((pid_t)p->pid, title);
	}
}

/* A title first seen as the parent's, once the process has set its own. */
static int title_again(struct tracked_proc *p)
{
	char title[PROC_TITLE_MAX], *copy;

	if (!p->alive || !p->title_inherited ||
	    proc_title__read((pid_t)p->pid, title) || !strcmp(title, p->title))
		return 0;
	copy = strdup(title);
	if (!copy)
		return -ENOMEM;
	free(p->title);
	p->title = copy;
	p->title_inherited = false;
	return 0;
}

static struct tracked_proc *proc_get(struct exited_rows *f, uint32_t pid)
{
	struct tracked_proc *p = (struct tracked_proc *)exited_rows__proc(f, pid);

	if (p)
		return p;
	if (VEC_RESERVE(f->procs, f->procs_cap, f->nprocs + 1))
		return NULL;
	p = &f->procs[f->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->start = proc_start(pid);
	p->alive = p->start != 0;
	if (p->alive)
		proc_labels(p);
	else
		p->dead_ns = now_ns();
	if (!p->exe)
		p->exe = strdup("");
	if (!p->title)
		p->title = strdup("");
	if (!p->exe || !p->title) {
		free(p->exe);
		free(p->title);
		f->nprocs--;
		return NULL;
	}
	if (!p->alive)
		f->exited++;
	qsort(f->procs, f->nprocs, sizeof(*p), proc_cmp);
	return (struct tracked_proc *)exited_rows__proc(f, pid);
}

int exited_rows__add_row(struct summary *dst, const struct sp_query_row *r,
		   uint32_t pid)
{
	unsigned int i;
	int err;

	int row = summary__row_index(dst, r->name, pid);

	if (row < 0)
		return row;
	err = summary__add_stats_at(dst, (unsigned int)row, &r->st);
	if (r->est_err > dst->rows[row].est_err)
		dst->rows[row].est_err = r->est_err;
	for (i = 0; !err && i < r->nbins; i++)
		err = summary__add_hist_at(dst, (unsigned int)row,
					   r->bins[i].bucket, r->bins[i].count);
	return err;
}

static bool in_set(const uint32_t *v, size_t n, uint32_t pid)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (v[mid] == pid)
			return true;
		if (v[mid] < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* Exited processes past keep_ns: their rows go under pid 0 and they are
 * forgotten. The pids are left in f->folded for interval.c. */
static int fold_old(struct exited_rows *f, uint64_t now)
{
	struct summary acc;
	size_t i, j;
	int err = 0;

	f->nfolded = 0;
	for (i = 0; i < f->nprocs; i++) {
		struct tracked_proc *p = &f->procs[i];

		/* (dead_ns may be a little after `now`: seen gone during
		 * the read.) */
		if (p->alive || !p->evicted || p->dead_ns + f->keep_ns > now)
			continue;
		if (VEC_RESERVE(f->folded, f->folded_cap, f->nfolded + 1))
			return -ENOMEM;
		f->folded[f->nfolded++] = p->pid;	/* procs are sorted */
	}
	if (!f->nfolded)
		return 0;
	summary__init(&acc);
	acc.per_pid = true;
	for (i = 0; !err && i < f->acc.nrows; i++) {
		const struct sp_query_row *r = &f->acc.rows[i];

		err = exited_rows__add_row(&acc, r, in_set(f->folded, f->nfolded,
						     r->pid) ? 0 : r->pid);
	}
	if (err) {
		summary__free(&acc);
		return err;
	}
	summary__free(&f->acc);
	f->acc = acc;
	for (i = j = 0; i < f->nprocs; i++) {
		if (in_set(f->folded, f->nfolded, f->procs[i].pid)) {
			free(f->procs[i].exe);
			free(f->procs[i].title);
		} else
			f->procs[j++] = f->procs[i];
	}
	f->nprocs = j;
	return 0;
}

/*
 * A task of the last scan that is not a process to track: one that shares
 * its parent's address space is a part of the parent, not one more
 * process, though /proc lists it with the parent's executable:
 * LeakSanitizer's tracer, cloned (CLONE_VM, no CLONE_THREAD) at the exit
 * of every ASan-built target, or a vfork child before its exec. Counted,
 * it would be one more process seen exiting. If it execs the binary, a
 * later scan finds it with an address space of its own. One gone since
 * the scan cannot be told apart any more (that tracer lives a few ms;
 * taken for a process it was one more seen exiting: an ASan run of
 * e2e_serve, 22 of 20); a process of its own that ran a probe has rows,
 * and its rows bring it in at the next read.
 */
static bool not_a_process(uint32_t pid)
{
	uint64_t t;
	int ppid;

	if (proc_pid__start_time((int)pid, &t, &ppid))
		return true;	/* gone since the scan */
	return ppid > 0 &&
	       syscall(SYS_kcmp, (pid_t)pid, (pid_t)ppid, KCMP_VM, 0, 0) == 0;
}

/*
 * Processes are labelled when first seen; one that ran and exited between
 * two reads would be seen only dead, unlabelled. So the targets are
 * looked for between reads too: -p pids at once, and every
 * 200 ms the processes whose executable is a -b file (in the session's
 * last scan of /proc, which has each one's /proc/PID/exe). A title first
 * seen as the parent's is read again at each scan until the process sets
 * its own.
 */
int exited_rows__poll(struct exited_rows *f)
{
	const struct session *ss = f->ss;
	const struct session_opts *o = ss->o;
	uint64_t now = now_ns();
	size_t k;
	int i;

	if (now < f->next_scan_ns)
		return 0;
	f->next_scan_ns = now + 200000000ull;
	for (k = 0; k < f->nprocs; k++)
		if (title_again(&f->procs[k]))
			return -ENOMEM;
	for (i = 0; i < o->npids; i++)
		if (!exited_rows__proc(f, (uint32_t)o->pids[i]) &&
		    !proc_get(f, (uint32_t)o->pids[i]))
			return -ENOMEM;
	/* Not a launched command: until it execs, its labels are ours. It
	 * is labelled at the first read that finds rows of it. */
	if (!o->nbinaries)
		return 0;
	for (k = 0; k < ss->nscanned; k++) {
		const struct scan_pid *sp = &ss->scanned[k];
		uint32_t pid = (uint32_t)sp->pid;

		for (i = 0; i < o->nbinaries; i++)
			if (ss->bin_ids[i].dev == sp->exe_dev &&
			    ss->bin_ids[i].ino == sp->exe_ino)
				break;
		if (i == o->nbinaries || exited_rows__proc(f, pid))
			continue;
		if (!not_a_process(pid) && !proc_get(f, pid))
			return -ENOMEM;
	}
	return 0;
}

int exited_rows__tick(struct exited_rows *f, uint64_t period_ns)
{
	uint64_t now = now_ns();
	struct summary scratch;
	int err;

	err = exited_rows__poll(f);
	if (err) {
		sp_err("out of memory tracking the traced processes");
		return err;
	}
	if (now < f->next_read_ns)
		return 0;
	/* A process is evicted at the read after the one that found it
	 * gone: under churn (a PostgreSQL backend per connection, hundreds
	 * a second) rows of the dead wait two periods, so read sooner. */
	if (f->churn)
		period_ns /= 10;
	f->next_read_ns = now + period_ns;
	summary__init(&scratch);
	f->qp->evict_read = true;
	err = exited_rows__read(f, &scratch);
	f->qp->evict_read = false;
	summary__free(&scratch);
	return err;
}

int exited_rows__collect(struct exited_rows *f, struct summary *out)
{
	struct summary all;
	unsigned int i;
	int err;

	summary__init(&all);
	err = exited_rows__read(f, &all);
	for (i = 0; !err && i < all.nrows; i++)
		err = exited_rows__add_row(out, &all.rows[i], all.rows[i].pid);
	if (err == -ENOMEM)
		sp_err("out of memory reading the BPF maps");
	if (!err) {
		summary__copy_counts(out, &all);
		out->duration_ns = all.duration_ns;
	}
	summary__free(&all);
	return err;
}

int exited_rows__read(struct exited_rows *f, struct summary *out)
{
	uint64_t now = now_ns();
	uint32_t *gone = NULL;
	size_t i, ngone = 0, rows;
	struct summary m;
	int err;

	/* Who is gone before the read: their rows are final in it. */
	for (i = 0; i < f->nprocs; i++) {
		struct tracked_proc *p = &f->procs[i];

		if (p->alive && proc_start(p->pid) != p->start) {
			p->alive = false;
			p->dead_ns = now;
			f->exited++;
		}
	}
	summary__init(&m);
	m.per_pid = true;
	out->per_pid = true;
	gone = calloc(f->nprocs + 1, sizeof(*gone));
	if (!gone) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < f->nprocs; i++)
		if (!f->procs[i].alive && !f->procs[i].evicted)
			gone[ngone++] = f->procs[i].pid;	/* sorted */
	/* Usually nobody left: the maps are read straight into `out`. */
	err = query_provider__read(f->qp, f->ss, ngone ? &m : out);
	if (err)
		goto cleanup;
	/* New processes get their labels (and, if already gone, are
	 * evicted at the next read). */
	for (i = 0; i < (ngone ? m.nrows : out->nrows); i++)
		if (!proc_get(f, ngone ? m.rows[i].pid : out->rows[i].pid)) {
			err = -ENOMEM;
			goto cleanup;
		}
	for (i = 0; !err && ngone && i < m.nrows; i++) {
		const struct sp_query_row *r = &m.rows[i];

		err = exited_rows__add_row(in_set(gone, ngone, r->pid) ? &f->acc : out,
				     r, r->pid);
	}
	if (!err && ngone && f->qp->skel) {
		err = query_maps__evict(f->qp->skel, f->qp->names, gone,
					ngone, &rows);
		if (err)
			sp_err("cannot delete the rows of exited processes from the BPF maps: %s",
			       strerror(-err));
		f->evicted_rows += rows;
	}
	f->churn = ngone && !err;
	for (i = 0; i < ngone; i++) {
		struct tracked_proc *p = (struct tracked_proc *)exited_rows__proc(f, gone[i]);

		if (p)
			p->evicted = true;
		/* Its names are read: the mappings kept for them can go. */
		if (!err && !f->keep_spaces)
			addr_spaces__drop(&f->ss->spaces, (pid_t)gone[i]);
	}
	if (!err)
		err = fold_old(f, now);
	for (i = 0; !err && i < f->acc.nrows; i++)
		err = exited_rows__add_row(out, &f->acc.rows[i], f->acc.rows[i].pid);
	if (err == -ENOMEM)
		sp_err("out of memory reading the BPF maps");
	if (ngone)
		summary__copy_counts(out, &m);
	out->duration_ns = f->ss->stop_ns ? session__duration(f->ss)
					  : now - f->ss->start_ns;
cleanup:
	free(gone);
	summary__free(&m);
	return err;
}
