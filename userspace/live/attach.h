/* SPDX-License-Identifier: MIT */
/*
 * Attaching BPF programs to sp probe sites: which program serves which probe
 * name, one uprobe per site with the semaphore as the kernel-managed
 * ref_ctr_offset, and every link kept so that detaching is one call.
 */
#ifndef SPTRACE_ATTACH_H
#define SPTRACE_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct bpf_program;
struct bpf_link;

/* Which BPF program serves the probe sp:<name>. `cookie` goes into the
 * attach cookie of each of its sites beside the argument registers: for a
 * program that serves several probe names, which one fired (query_abi.h,
 * SP_COOKIE_OF_EVENT); 0 for a program of one name. `close_last`: its
 * links are closed after the attacher's others (see attacher__destroy()). */
struct probe_binding {
	const char *name;
	struct bpf_program *prog;
	uint64_t cookie;
	bool close_last;
};

/* One attachment: a libbpf link (per-site uprobe) or the fd of a
 * uprobe_multi link covering every site of one program in one file. */
struct sp_link {
	struct bpf_link *link;
	int fd;
	bool last;		/* closed after the others */
};

struct attached_obj {
	pid_t pid;
	uint64_t dev, ino;
	char *path;		/* as the target names it, for messages */
	size_t first_link, nlinks;
	/* File offsets of the semaphores its links raise, but for sites
	 * that do not gate work (thread names, sp:tsc): where sampling
	 * (sampler.c) lowers them to turn the probes off. */
	uint64_t *semas;
	size_t nsemas;
	/* --func: the file as opened, its functions' offsets and cookies,
	 * kept to attach them again after they were shed (sampler.c). */
	char *open_path;
	uint64_t *func_offs, *func_cookies;
	size_t nfuncs;
};

struct attacher {
	const char *provider;	/* "sp" */
	const struct probe_binding *bindings;
	size_t nbindings;
	/* Files with an sp:flush site get these instead (batched events,
	 * see probes/sp_probe.h); none: every file is per-event. */
	const struct probe_binding *batch_bindings;
	size_t nbatch;
	size_t batched_files, event_files;	/* files attached either way */
	/* Called before the first file is attached batched (what only
	 * batched files need, e.g. the exec drain); optional. */
	void (*before_batched)(void *ctx);
	void *before_batched_ctx;
	/* A probe whose sites are watched without raising their semaphore;
	 * if the kernel refuses (another tracer's uprobe on a site, with the
	 * semaphore), the file goes on without them. Optional. */
	const char *watch_only;
	size_t watch_refused;	/* files where the kernel refused it */
	bool multi;		/* programs loaded for uprobe_multi links */
	/* --follow: links serve every process (the programs filter), one
	 * per file whichever pid asks; set after attacher__init(). */
	bool any_pid;
	struct sp_link *links;
	size_t nlinks, links_cap;
	struct attached_obj *objs;
	size_t nobjs, objs_cap;
	size_t nsites;		/* sites attached, over all objects */
	size_t skipped_sites;	/* sites whose arguments we cannot read */
	/* --func: its programs, and whether the links are shed now. */
	struct bpf_program *func_entry, *func_ret;
	bool funcs_off;
};

/* `multi`: the bound programs were loaded with expected attach type
 * BPF_TRACE_UPROBE_MULTI (see attach__prepare_multi()). */
void attacher__init(struct attacher *a, const char *provider,
		    const struct probe_binding *bindings, size_t nbindings,
		    bool multi);
/* Detaches everything (semaphores drop back through the kernel): the links
 * of close_last bindings once the others are closed. */
void attacher__destroy(struct attacher *a);

/*
 * Attaches every bound probe of the ELF file opened as `open_path` (which may
 * be a /proc/PID/map_files link) for process `pid` (-1: every process).
 * `path` names the file in messages. All sites of the file or none: on error
 * the file's links are rolled back. Returns the number of sites attached
 * (0 when the file has no bound probe) or -errno.
 */
int attacher__attach_file(struct attacher *a, pid_t pid, const char *open_path,
			  const char *path);

/*
 * Attaches every mapped file of `pid` that carries bound probes and is not
 * attached for this pid yet. Returns the number of new sites or -errno
 * (-ESRCH: the process is gone).
 */
int attacher__attach_pid(struct attacher *a, pid_t pid);

/*
 * --func: an entry and a return probe on each of `n` functions of the file
 * (`offsets` file offsets, `cookies` their row names). Once per (pid, file)
 * for this attacher; all or nothing. Returns n, 0 if attached already, or
 * -errno.
 */
int attacher__attach_funcs(struct attacher *a, pid_t pid, const char *open_path,
			   const char *path, const uint64_t *offsets,
			   const uint64_t *cookies, size_t n,
			   struct bpf_program *entry, struct bpf_program *ret);

/*
 * --func probes off (every link closed; files attached meanwhile are only
 * kept) or on again (each kept file attached anew; a file or process gone
 * is left out). Returns the number of files attached again, or 0.
 */
int attacher__set_funcs(struct attacher *a, bool on);

/* Total number of sites of bound probes found in `pid`'s attached files. */
size_t attacher__sites(const struct attacher *a);

/* Before load: makes a program attachable through uprobe_multi links
 * (Linux 6.6+): one link per file, one cheaper kernel path per hit. */
void attach__prepare_multi(struct bpf_program *prog);

/* Encodes a site's argument spec as the uprobe cookie of query_abi.h.
 * 0 or -EOPNOTSUPP (an argument that is not a plain 64-bit register). */
int attach__cookie_from_args(const char *args, uint64_t *cookie);

/* The enum sp_reg of a 64-bit register name ("rbx"), SP_REG_NONE if none. */
int attach__reg(const char *name);

#endif /* SPTRACE_ATTACH_H */
