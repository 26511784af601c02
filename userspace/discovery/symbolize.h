/* SPDX-License-Identifier: MIT */
/*
 * Naming code addresses of a target ("func+0x1c (libfoo.so)") from its ELF
 * symbols, through an address-space snapshot: the snapshot says which file
 * and file offset an address came from, the file's PT_LOAD headers turn the
 * offset into a link-time address, and its symbol table (.symtab, else
 * .dynsym) names it. PIE executables and shared libraries come out right
 * wherever they were loaded. Each file is read once, then cached.
 */
#ifndef SPTRACE_SYMBOLIZE_H
#define SPTRACE_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct addr_spaces;
struct sym_file;

struct sym_exe {
	pid_t pid;
	int fd;
	char *path;
};

struct symbolizer {
	struct sym_file *files;
	size_t nfiles;
	struct sym_exe *exes;	/* position-dependent executables by pid */
	size_t nexes;
};

void symbolizer__init(struct symbolizer *sy);
void symbolizer__free(struct symbolizer *sy);
/* Names `pid`'s addresses that no snapshot maps from `path` when that is a
 * position-dependent executable (ET_EXEC: addresses are its link-time
 * addresses): a launched static program may exit before any snapshot.
 * 0 or -errno. */
int symbolizer__add_exe(struct symbolizer *sy, pid_t pid, const char *path);

/*
 * Writes the name of code address `addr` of process `pid` into buf:
 * "func+0xoff (file)", "file+0xoff" when no symbol covers it, "0xaddr"
 * when no snapshot maps it. `ret`: the address is a return address (the
 * caller's call instruction is just before it), so the byte before it is
 * looked up: a call that ends a function names that function, not the
 * next. Never fails; a file that cannot be read gives "file+0xoff".
 * Returns true when the address is code: in a mapping made executable,
 * or in a position-dependent executable's text (symbolizer__add_exe).
 * A "return address" that is not came from no real frame: a stack walked
 * by frame pointers through code built without them.
 */
bool symbolizer__name(struct symbolizer *sy, const struct addr_spaces *as,
		      pid_t pid, uint64_t addr, int ret, char *buf,
		      size_t len);

#endif /* SPTRACE_SYMBOLIZE_H */
