/* SPDX-License-Identifier: MIT */
/*
 * discovery/ layer: ELF notes, USDT arguments, /proc maps, address
 * spaces, symbols; uses common/ only (docs/architecture.md).
 *
 * The files a program will map before it runs any code of its own: the
 * executable, its PT_INTERP loader, LD_PRELOAD, and its DT_NEEDED closure
 * resolved as ld.so(8) resolves it, so the --query probes can be checked
 * before anything is launched. What is resolved, and what is not:
 *
 *   resolved:  DT_NEEDED names with a '/' as paths; else, in ld.so's order,
 *              the needing object's DT_RPATH (when it has no DT_RUNPATH),
 *              then the executable's, LD_LIBRARY_PATH (sptrace's own
 *              environment, which a launched command inherits), the
 *              object's DT_RUNPATH, the directories of /etc/ld.so.conf and
 *              the files it includes (what ldconfig puts in ld.so.cache),
 *              then /lib, /usr/lib, /lib64, /usr/lib64 and the multiarch
 *              /lib/TRIPLET, /usr/lib/TRIPLET. $ORIGIN and ${ORIGIN} in
 *              RPATH/RUNPATH are the needing object's directory. A candidate
 *              of another ELF class or machine is skipped, as ld.so does.
 *   not:       $LIB and $PLATFORM (their entries are skipped), the
 *              glibc-hwcaps subdirectories (the same library in plainer
 *              form is found in the directory itself), ld.so.cache entries
 *              ldconfig added by hand (-l), secure-execution rules, and
 *              anything loaded by dlopen() or a later exec: unknowable
 *              before the program runs. elf_deps.loads_later says whether
 *              some file of the closure can do either.
 *
 * Nothing here prints; errors come back as -errno.
 */
#ifndef SPTRACE_ELF_DEPS_H
#define SPTRACE_ELF_DEPS_H

#include <stdbool.h>
#include <stddef.h>

struct elf_deps {
	/* [0] the program, then its loader, LD_PRELOAD and each library,
	 * breadth-first, each file once (by device and inode). Owned. */
	char **paths;
	size_t n, cap;
	/* DT_NEEDED names found nowhere (ld.so would refuse to start). */
	char **missing;
	size_t nmissing, missing_cap;
	/* Some file imports dlopen/dlmopen, or an exec/spawn function
	 * (execve, posix_spawn, system, popen, ...): it can map files the
	 * closure does not hold. `late_why` says which: "FILE imports SYM". */
	bool loads_later;
	char *late_why;
};

/* The closure of the ELF file at path. 0 or -errno: the errors of opening
 * path, -ENOEXEC when it is not an ELF file, -ENOMEM. A library that cannot
 * be read is left out (as a missing name when nothing else matches). */
int elf_deps__closure(const char *path, struct elf_deps *out);
void elf_deps__free(struct elf_deps *d);

#endif /* SPTRACE_ELF_DEPS_H */
