// SPDX-License-Identifier: MIT
/*
 * Privilege checks. Loading tracing BPF programs needs CAP_BPF and
 * CAP_PERFMON (Linux 5.8+) or CAP_SYS_ADMIN; reading another process's
 * mappings and memory needs ptrace access (CAP_SYS_PTRACE across users).
 * Checking up front lets us name the missing capability instead of passing
 * on a bare EPERM from the kernel.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include "log.h"
#include "privileges.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static int effective_caps(__u64 *caps)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	*caps = (__u64)data[0].effective | ((__u64)data[1].effective << 32);
	return 0;
}

static int has(__u64 caps, int cap)
{
	return (caps >> cap) & 1;
}

int privileges__check(void)
{
	__u64 caps = 0;

	if (effective_caps(&caps))
		return 0;	/* cannot tell: let the kernel decide */
	if (has(caps, CAP_SYS_ADMIN))
		return 0;
	if (has(caps, CAP_BPF) && has(caps, CAP_PERFMON))
		return 0;
	if (!has(caps, CAP_BPF) && !has(caps, CAP_PERFMON))
		sp_err("missing capabilities CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN): needed to load BPF programs and attach uprobes (run as root, or grant them with setcap/capsh)");
	else
		sp_err("missing capability %s (or CAP_SYS_ADMIN): needed to load BPF programs and attach uprobes (run as root, or grant it with setcap/capsh)",
		       has(caps, CAP_BPF) ? "CAP_PERFMON" : "CAP_BPF");
	return -EPERM;
}

void privileges__explain_load_error(int err, const char *what)
{
	if (err == -EPERM || err == -EACCES) {
		FILE *f = fopen("/sys/kernel/security/lockdown", "r");
		char buf[128] = "";

		if (f) {
			if (!fgets(buf, sizeof(buf), f))
				buf[0] = 0;
			fclose(f);
		}
		if (strstr(buf, "[confidentiality]"))
			sp_err("cannot load %s: kernel lockdown (confidentiality) forbids BPF tracing (boot with lockdown=integrity or none)",
			       what);
		else
			sp_err("cannot load %s: %s (needs CAP_BPF and CAP_PERFMON, or root; see -v for the verifier log)",
			       what, strerror(-err));
		return;
	}
	if (err == -ESRCH || err == -ENOENT) {
		if (access("/sys/kernel/btf/vmlinux", R_OK))
			sp_err("cannot load %s: this kernel has no BTF (/sys/kernel/btf/vmlinux missing; needs CONFIG_DEBUG_INFO_BTF=y)",
			       what);
		else
			sp_err("cannot load %s: %s (see -v)", what,
			       strerror(-err));
		return;
	}
	if (err == -ENOSYS) {
		sp_err("cannot load %s: this kernel has no bpf() system call (needs CONFIG_BPF_SYSCALL=y)",
		       what);
		return;
	}
	sp_err("cannot load %s: %s (see -v for libbpf's log)", what,
	       strerror(-err));
}
