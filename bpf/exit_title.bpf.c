// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The title a target process had as it exited (include/sptrace/title_abi.h):
 * at the exit of its main thread, its argv area, where servers write what a
 * worker is (PostgreSQL sets it after the fork, and a backend of a short
 * connection may live a few milliseconds). sched_process_exit runs before
 * the exiting task lets go of its memory (exit_mm()), so the area is still
 * readable.
 *
 * Its own object: reading a task's mm needs the kernel's BTF (CO-RE),
 * which costs a load 20-30 ms and which the query object must do without.
 * Loaded only for --per-pid, and only where there is BTF.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <sptrace/title_abi.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* The kernel's types, relocated against its BTF (CO-RE). */
struct super_block {
	__u32 s_dev;
} __attribute__((preserve_access_index));

struct inode {
	unsigned long i_ino;
	struct super_block *i_sb;
} __attribute__((preserve_access_index));

struct file {
	struct inode *f_inode;
} __attribute__((preserve_access_index));

struct mm_struct {
	struct file *exe_file;
	unsigned long arg_start;
	unsigned long arg_end;
} __attribute__((preserve_access_index));

struct task_struct {
	struct mm_struct *mm;
} __attribute__((preserve_access_index));

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_TITLE_FILES);
	__type(key, struct sp_title_file);
	__type(value, __u8);
} title_files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_EXIT_TITLES);
	__type(key, __u32);
	__type(value, struct sp_exit_title);
} exit_titles SEC(".maps");

/* Exits of target processes whose title was not kept: `exit_titles` full
 * (userspace reads it every 200 ms), or the area unreadable. */
__u64 titles_lost;

SEC("raw_tracepoint/sched_process_exit")
int sp_exit_title(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct task_struct *task = (void *)bpf_get_current_task();
	struct sp_title_file f = {};
	struct sp_exit_title v = {};
	struct mm_struct *mm;
	__u32 tgid = id >> 32;
	__u64 start, n;

	(void)ctx;
	/* The process's exit, as ps sees it: its main thread's. */
	if ((__u32)id != tgid)
		return 0;
	mm = BPF_CORE_READ(task, mm);
	if (!mm)
		return 0;	/* a kernel thread */
	f.ino = BPF_CORE_READ(mm, exe_file, f_inode, i_ino);
	f.dev = BPF_CORE_READ(mm, exe_file, f_inode, i_sb, s_dev);
	if (!bpf_map_lookup_elem(&title_files, &f))
		return 0;
	start = BPF_CORE_READ(mm, arg_start);
	v.args_len = BPF_CORE_READ(mm, arg_end) - start;
	/* The whole copy when it can be had: a title longer than the
	 * arguments runs on into the environment's area, as ps reads it.
	 * Else what the arguments hold (the area's end is the stack's). */
	if (!bpf_probe_read_user(v.raw, sizeof(v.raw), (void *)start)) {
		v.len = sizeof(v.raw);
	} else {
		n = v.args_len < sizeof(v.raw) ? v.args_len : sizeof(v.raw);
		if (!n || bpf_probe_read_user(v.raw, n, (void *)start)) {
			__sync_fetch_and_add(&titles_lost, 1);
			return 0;
		}
		v.len = n;
	}
	if (bpf_map_update_elem(&exit_titles, &tgid, &v, BPF_ANY))
		__sync_fetch_and_add(&titles_lost, 1);
	return 0;
}
