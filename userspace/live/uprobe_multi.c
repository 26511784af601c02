// SPDX-License-Identifier: MIT
/*
 * uprobe_multi links through the bpf syscall (see uprobe_multi.h).
 */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/bpf.h>
#include "uprobe_multi.h"

struct sp_uprobe_multi_attr {	/* union bpf_attr, link_create */
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;
	__u64 offsets;
	__u64 ref_ctr_offsets;
	__u64 cookies;
	__u32 cnt;
	__u32 um_flags;
	__u32 pid;
	__u32 pad;
};

#define SP_BPF_F_UPROBE_MULTI_RETURN 1

int uprobe_multi__link(int prog_fd, pid_t pid, const char *path,
		       const uint64_t *offs, const uint64_t *refs,
		       const uint64_t *cookies, size_t n, bool ret)
{
	struct sp_uprobe_multi_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_fd = (__u32)prog_fd;
	attr.attach_type = SP_BPF_TRACE_UPROBE_MULTI;
	attr.path = (__u64)(uintptr_t)path;
	attr.offsets = (__u64)(uintptr_t)offs;
	attr.ref_ctr_offsets = (__u64)(uintptr_t)refs;
	attr.cookies = (__u64)(uintptr_t)cookies;
	attr.cnt = (__u32)n;
	attr.um_flags = ret ? SP_BPF_F_UPROBE_MULTI_RETURN : 0;
	attr.pid = pid > 0 ? (__u32)pid : 0;
	fd = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}
