// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Where the query names the kernel could not read lie, found while their
 * file is still mapped:
 *  - at the dynamic loader's _dl_debug_state (the hook of dl_watch.bpf.c,
 *    same sites), when the loader is about to unmap objects (r_state
 *    RT_DELETE, after their destructors ran: their rings' last records are
 *    drained by then);
 *  - at the exit of each thread of the process (sched_process_exit, before
 *    the thread lets go of the memory: exit_mm()), after the last flush of
 *    its rings at exit. A -b process that lives less than the 200 ms
 *    between sptrace's scans of /proc is never snapshotted.
 * Each `names` entry of the process (query.bpf.c's map, shared by fd)
 * still without a string gets the file, device, inode and offset of its
 * address (struct sp_name_loc), and sptrace reads the name from that
 * file: a library unloaded before sptrace reads its names, and whose next
 * copy is mapped elsewhere, keeps them, as does a process gone before
 * sptrace read its mappings. Only processes in `unread_names` are walked.
 *
 * Why not in query.bpf.c, when the read fails: bpf_find_vma() and the
 * fields of a vm_area_struct need the kernel's BTF, and sptrace must load
 * and trace without it. This object is loaded only where there is BTF;
 * without it, names are read from sptrace's snapshots as before.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <sptrace/query_abi.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define SP_RT_DELETE 2		/* <link.h>: r_debug.r_state */
#define SP_R_STATE_OFF 24	/* offsetof(struct r_debug, r_state), LP64 */

/* query.bpf.c's map (bpf_map__reuse_fd); same definition. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_DEFAULT_MAX_QUERIES);
	__type(key, struct sp_query_key);
	__type(value, struct sp_name);
} names SEC(".maps");

/* The kernel's types, relocated against its BTF (CO-RE). */
/* query.bpf.c's too: the processes with an unread name. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SP_DEFAULT_MAX_QUERIES);
	__type(key, __u32);
	__type(value, __u8);
} unread_names SEC(".maps");

struct inode {
	unsigned long i_ino;
	struct super_block *i_sb;
} __attribute__((preserve_access_index));

struct super_block {
	__u32 s_dev;
} __attribute__((preserve_access_index));

struct file {
	struct inode *f_inode;
} __attribute__((preserve_access_index));

struct vm_area_struct {
	unsigned long vm_start;
	unsigned long vm_pgoff;
	struct file *vm_file;
} __attribute__((preserve_access_index));

struct task_struct;
struct bpf_map;

/* bpf_find_vma() callback: the file and offset of loc->off (an address). */
static long name_vma(struct task_struct *task, struct vm_area_struct *vma,
		     void *ctx)
{
	struct sp_name_loc *loc = ctx;
	struct file *f = BPF_CORE_READ(vma, vm_file);

	(void)task;
	if (!f)
		return 0;	/* anonymous: a name built at run time */
	loc->off = loc->off - BPF_CORE_READ(vma, vm_start) +
		   (BPF_CORE_READ(vma, vm_pgoff) << 12);
	loc->ino = BPF_CORE_READ(f, f_inode, i_ino);
	loc->dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
	loc->magic = SP_NAME_LOC_MAGIC;
	return 0;
}

/*
 * bpf_find_vma() only tries the address space's lock: it fails with EBUSY
 * while a writer holds it or waits for it (an mmap() in another thread,
 * a tracer's uprobe registration walking the file's mappings), and at a
 * process's last exit there is no later chance. So it is tried again, a
 * bounded number of times: a writer's hold is short, and only processes
 * with an unread name get here.
 */
#define FIND_VMA_TRIES 4096

struct find_try {
	__u64 addr;
	struct sp_name_loc loc;
	long err;
};

/* bpf_loop() callback: one try; 1 ends the loop. */
static long find_once(__u32 i, struct find_try *t)
{
	(void)i;
	t->err = bpf_find_vma(bpf_get_current_task_btf(), t->addr, name_vma,
			      &t->loc, 0);
	return t->err != -16;	/* EBUSY */
}

/* bpf_for_each_map_elem() callback over `names`. */
static long locate_one(struct bpf_map *map, struct sp_query_key *key,
		       struct sp_name *val, __u32 *tgid)
{
	struct find_try t = { 0 };

	(void)map;
	if (key->tgid != *tgid || val->str[0] ||
	    val->loc.magic == SP_NAME_LOC_MAGIC ||
	    (key->name & (SP_FUNC_TAG | SP_SPEC_TAG | SP_KEY_TAG)))
		return 0;
	t.addr = key->name;
	t.loc.off = key->name;
	bpf_loop(FIND_VMA_TRIES, find_once, &t, 0);
	if (t.err || t.loc.magic != SP_NAME_LOC_MAGIC)
		return 0;	/* still busy, or not a file's name */
	val->loc = t.loc;
	return 0;
}

/* The attach cookie: _r_debug's distance from _dl_debug_state in the
 * loader (both in its own image, so the site's address gives its base). */
SEC("uprobe")
int sp_name_locate(struct pt_regs *ctx)
{
	__u64 r_debug = bpf_get_func_ip(ctx) + bpf_get_attach_cookie(ctx);
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	int state;

	if (!bpf_map_lookup_elem(&unread_names, &tgid) ||
	    bpf_probe_read_user(&state, sizeof(state),
				(const void *)(r_debug + SP_R_STATE_OFF)) ||
	    state != SP_RT_DELETE)
		return 0;
	bpf_for_each_map_elem(&names, locate_one, &tgid, 0);
	return 0;
}

/* Every thread's exit, of every process: one lookup unless its process
 * has an unread name. Each thread's, not the main thread's only: the main
 * thread may exit first (pthread_exit()) and the others name more. */
SEC("raw_tracepoint/sched_process_exit")
int sp_name_locate_exit(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;

	(void)ctx;
	if (!bpf_map_lookup_elem(&unread_names, &tgid))
		return 0;
	bpf_for_each_map_elem(&names, locate_one, &tgid, 0);
	/* Gone with the main thread: a name found later (by a thread
	 * outliving it) adds the process again. */
	if ((__u32)id == tgid)
		bpf_map_delete_elem(&unread_names, &tgid);
	return 0;
}
