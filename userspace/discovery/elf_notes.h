/* SPDX-License-Identifier: MIT */
/*
 * discovery/ layer: ELF notes, USDT arguments, /proc maps, address
 * spaces, symbols; uses common/ only (docs/architecture.md).
 *
 * USDT discovery: reads the SystemTap v3 probe notes (.note.stapsdt) of one
 * ELF file and turns each into the file offsets a uprobe needs (probe
 * instruction, semaphore). Only 64-bit little-endian ELF executables and
 * shared objects (ELFCLASS64, ELFDATA2LSB, ET_EXEC/ET_DYN) are read: those
 * are the only ones sptrace can attach to on x86-64.
 *
 * Nothing here prints; errors come back as -errno and the caller names the
 * path (usdt_file.path) and provider:name in its own message.
 */
#ifndef SPTRACE_ELF_NOTES_H
#define SPTRACE_ELF_NOTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct usdt_site {
	char *provider;		/* owned strings */
	char *name;
	char *args;		/* raw arg spec, e.g. "-8@%rdi -8@%rsi" ("" if none) */
	uint64_t pc_vaddr;	/* probe address, adjusted for .stapsdt.base (prelink) */
	uint64_t pc_offset;	/* file offset of the probe instruction (uprobe offset) */
	uint64_t sema_vaddr;	/* 0 if the probe has no semaphore */
	uint64_t sema_offset;	/* file offset of the semaphore (ref_ctr_offset), 0 if none */
};

struct usdt_file {
	char *path;
	bool is_pie_or_dso;	/* e_type == ET_DYN */
	uint16_t e_machine;
	uint64_t entry_vaddr;	/* e_entry */
	uint64_t entry_offset;	/* its file offset, 0 if not in a PT_LOAD */
	char *interp;		/* PT_INTERP contents or NULL */
	struct usdt_site *sites;
	size_t nsites;
};

/*
 * Reads every stapsdt note of the ELF file at path. A file without notes is
 * not an error (nsites = 0). A note that is malformed, of an unknown stapsdt
 * note type, has unprintable strings, or whose probe address is not in an
 * executable PT_LOAD (or semaphore not in any PT_LOAD) is skipped and counted
 * in *bad_notes (may be NULL); the other notes still come back. A note whose
 * address lies below every executable PT_LOAD is skipped without counting:
 * the linker left it so when it dropped the note's function (elf_notes.c).
 *
 * Returns 0 or -errno: -ENOENT/-EACCES/... (open), -EISDIR, -ENOEXEC (not
 * an ELF file, not ELFCLASS64 little-endian, or neither ET_EXEC nor ET_DYN),
 * -EINVAL (the ELF structure itself is unreadable: headers, section table),
 * -ENOMEM. *out is set only on success; free it with usdt_file__free().
 */
int usdt_file__open(const char *path, struct usdt_file **out,
		    unsigned int *bad_notes);
/* Same from an already open fd, which stays the caller's. path is copied to
 * usdt_file.path for messages only. */
int usdt_file__open_fd(int fd, const char *path, struct usdt_file **out,
		       unsigned int *bad_notes);
void usdt_file__free(struct usdt_file *f);

/* Number of sites of the given provider (NULL = any). */
size_t usdt_file__count(const struct usdt_file *f, const char *provider);

/*
 * Resolves a defined STT_FUNC symbol to its address and file offset, looking
 * in .symtab first, then .dynsym. A global or weak definition wins over a
 * local one of the same name (static functions of several files may share
 * it). Returns 0, -ENOENT if there is no such symbol, -EINVAL if it lies
 * outside every PT_LOAD's file contents, or the errors of usdt_file__open().
 */
int elf_symbol_offset(const char *path, const char *sym, uint64_t *vaddr,
		      uint64_t *offset);
/* The address of the defined data object (STT_OBJECT) `sym`, as
 * elf_symbol_offset() looks a function up. 0, -ENOENT, or -errno. */
int elf_object_vaddr(const char *path, const char *sym, uint64_t *vaddr);

/* The executable PT_LOAD whose file contents hold file offset `off`: how
 * many of its bytes lie before off and from off on (the code around a
 * function, as mapped). 0, -ENOENT if no executable segment holds off, or
 * the errors of usdt_file__open(). */
int elf_exec_extent(const char *path, uint64_t off, uint64_t *before,
		    uint64_t *after);

/* Defined functions (STT_FUNC) of an ELF file whose names match a
 * fnmatch(3) pattern, from .symtab and .dynsym. C++ symbols are matched
 * and named demangled ("ns::f(int)"), and match by their mangled name too. */
struct elf_function {
	char *name;
	uint64_t vaddr;
	uint64_t offset;	/* file offset, for a uprobe */
};

struct elf_functions {
	struct elf_function *v;
	size_t n;
	bool go;		/* a Go binary (.go.buildinfo / .gopclntab) */
	bool throws;		/* uses or defines __cxa_throw & co. */
};

/* 0 (n may be 0) or -errno. */
int elf_functions(const char *path, const char *glob,
		  struct elf_functions *out);
void elf_functions__free(struct elf_functions *fns);

#endif /* SPTRACE_ELF_NOTES_H */
