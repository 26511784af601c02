// SPDX-License-Identifier: MIT
/*
 * Unit test of USDT note discovery. Usage: test_elf_notes FIXTURE STRIPPED,
 * where FIXTURE is notes_fixture (notes_fixture.c + notes_fixture_sema.c)
 * and STRIPPED is `strip -o STRIPPED FIXTURE`.
 *
 * The truth we compare with comes from elsewhere than the code under test:
 * section headers (the code uses program headers), the bytes of the file
 * (a nop at each probe, zeroes at the semaphore, fix_marker's known bytes),
 * and for .dynsym the running process itself (getpid's bytes in memory).
 * Then copies of the fixture with corrupted notes, and a fuzz loop, which
 * must never crash (run it under ASan) and must count the bad notes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* dladdr */
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "elf_notes.h"

#define NOTE_HDR 12		/* namesz, descsz, type */
#define NOTE_NAME_SIZE 8	/* "stapsdt\0" */
#define ALIGN4(x) (((x) + 3) & ~(size_t)3)

static const char *fixture, *stripped;
/* The corrupted copies live in a memfd, opened by path through /proc: a
 * file on disk rewritten thousands of times costs seconds of writeback. */
static char tmp_path[64];
static int tmp_fd = -1;
static unsigned char *image;	/* the fixture's bytes */
static size_t image_size;

static int read_file(const char *path, unsigned char **buf, size_t *size)
{
	struct stat st;
	ssize_t n;
	int fd, err = 0;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !(*buf = malloc((size_t)st.st_size + 1))) {
		err = -EIO;
		goto cleanup;
	}
	n = read(fd, *buf, (size_t)st.st_size);
	if (n != st.st_size) {
		free(*buf);
		err = -EIO;
		goto cleanup;
	}
	*size = (size_t)n;
cleanup:
	close(fd);
	return err;
}

static int write_file(const char *path, const void *buf, size_t size)
{
	int fd, err = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, size) != (ssize_t)size)
		err = -EIO;
	close(fd);
	return err;
}

static int read_at(const char *path, uint64_t off, void *buf, size_t len)
{
	int fd, err = 0;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	if (pread(fd, buf, len, (off_t)off) != (ssize_t)len)
		err = -EIO;
	close(fd);
	return err;
}

/* Section header of `name`, read with libelf independently of elf_notes.c. */
static int find_section(const char *path, const char *name, GElf_Shdr *out)
{
	Elf_Scn *scn = NULL;
	const char *s;
	size_t shstrndx;
	int fd, err = -ENOENT;
	Elf *elf;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_getshdrstrndx(elf, &shstrndx)) {
		err = -EINVAL;
		goto cleanup;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, out))
			continue;
		s = elf_strptr(elf, shstrndx, out->sh_name);
		if (s && !strcmp(s, name)) {
			err = 0;
			break;
		}
	}
cleanup:
	elf_end(elf);
	close(fd);
	return err;
}

/* st_size of the .symtab symbol `name`, 0 if none. */
static uint64_t symbol_size(const char *path, const char *name)
{
	Elf_Scn *scn = NULL;
	uint64_t size = 0;
	Elf_Data *data;
	const char *s;
	GElf_Shdr sh;
	GElf_Sym sym;
	Elf *elf;
	int fd, i;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && !size && (scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		for (i = 0; gelf_getsym(data, i, &sym); i++) {
			s = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (s && !strcmp(s, name)) {
				size = sym.st_size;
				break;
			}
		}
	}
	elf_end(elf);
	close(fd);
	return size;
}

static const struct usdt_site *find_site(const struct usdt_file *f,
					 const char *name)
{
	size_t i;

	for (i = 0; i < f->nsites; i++)
		if (!strcmp(f->sites[i].name, name))
			return &f->sites[i];
	return NULL;
}

static int count_args(const char *spec)
{
	int n = 0;

	for (; *spec; spec++)
		if (*spec != ' ' && (spec[1] == ' ' || !spec[1]))
			n++;
	return n;
}

/* The file offset `vaddr` has according to section `sh`. */
static uint64_t section_offset(const GElf_Shdr *sh, uint64_t vaddr)
{
	return vaddr - sh->sh_addr + sh->sh_offset;
}

static void test_fixture_sites(void)
{
	const struct usdt_site *two, *zero, *sema, *s;
	GElf_Shdr text, probes, interp;
	unsigned char byte, sem[2];
	struct usdt_file *f = NULL;
	unsigned int bad = 99;
	char ipath[256] = "";
	Elf64_Ehdr eh;
	size_t i;

	CHECK(usdt_file__open(fixture, &f, &bad) == 0);
	if (!f)
		return;
	CHECK_U64(bad, 0);
	CHECK_STR(f->path, fixture);
	CHECK_U64(f->nsites, 3);
	CHECK_U64(usdt_file__count(f, "fix"), 3);
	CHECK_U64(usdt_file__count(f, NULL), 3);
	CHECK_U64(usdt_file__count(f, "nope"), 0);

	CHECK(read_at(fixture, 0, &eh, sizeof(eh)) == 0);
	CHECK_U64(f->e_machine, EM_X86_64);
	CHECK(f->is_pie_or_dso == (eh.e_type == ET_DYN));
	CHECK_U64(f->entry_vaddr, eh.e_entry);
	CHECK(find_section(fixture, ".text", &text) == 0);
	CHECK_U64(f->entry_offset, section_offset(&text, eh.e_entry));
	if (find_section(fixture, ".interp", &interp) == 0 &&
	    interp.sh_size < sizeof(ipath)) {
		CHECK(read_at(fixture, interp.sh_offset, ipath,
			      interp.sh_size) == 0);
		CHECK_STR(f->interp, ipath);
	} else {
		CHECK(f->interp == NULL);
	}

	for (i = 0; i < f->nsites; i++) {
		s = &f->sites[i];
		CHECK_STR(s->provider, "fix");
		CHECK(s->pc_vaddr >= text.sh_addr &&
		      s->pc_vaddr < text.sh_addr + text.sh_size);
		CHECK_U64(s->pc_offset, section_offset(&text, s->pc_vaddr));
		CHECK(read_at(fixture, s->pc_offset, &byte, 1) == 0);
		CHECK_U64(byte, 0x90);
	}

	two = find_site(f, "two");
	zero = find_site(f, "zero");
	sema = find_site(f, "sema");
	CHECK(two && zero && sema);
	if (!two || !zero || !sema)
		goto cleanup;
	CHECK(count_args(two->args) == 2);
	CHECK_STR(zero->args, "");
	CHECK(count_args(sema->args) == 1);
	CHECK(two->sema_vaddr == 0 && two->sema_offset == 0);
	CHECK(zero->sema_vaddr == 0 && zero->sema_offset == 0);

	/* The semaphore is the only object in .probes. */
	CHECK(find_section(fixture, ".probes", &probes) == 0);
	CHECK_U64(sema->sema_vaddr, probes.sh_addr);
	CHECK_U64(sema->sema_offset, probes.sh_offset);
	CHECK(read_at(fixture, sema->sema_offset, sem, 2) == 0);
	CHECK(sem[0] == 0 && sem[1] == 0);
cleanup:
	usdt_file__free(f);
}

static void test_stripped(void)
{
	struct usdt_file *f = NULL, *g = NULL;
	const struct usdt_site *a, *b;
	unsigned int bad = 99;
	uint64_t v, o;
	size_t i;

	CHECK(usdt_file__open(fixture, &f, NULL) == 0);
	CHECK(usdt_file__open(stripped, &g, &bad) == 0);
	if (!f || !g)
		goto cleanup;
	CHECK_U64(bad, 0);
	CHECK_U64(g->nsites, f->nsites);
	for (i = 0; i < f->nsites; i++) {
		a = &f->sites[i];
		b = find_site(g, a->name);
		CHECK(b != NULL);
		if (!b)
			continue;
		CHECK_STR(b->provider, a->provider);
		CHECK_STR(b->args, a->args);
		CHECK_U64(b->pc_vaddr, a->pc_vaddr);
		CHECK_U64(b->pc_offset, a->pc_offset);
		CHECK_U64(b->sema_vaddr, a->sema_vaddr);
		CHECK_U64(b->sema_offset, a->sema_offset);
	}
	/* No .symtab any more, and fix_marker is not exported. */
	CHECK(elf_symbol_offset(stripped, "fix_marker", &v, &o) == -ENOENT);
cleanup:
	usdt_file__free(f);
	usdt_file__free(g);
}

static void test_symbols(void)
{
	static const unsigned char marker[] = { 0xb8, 0xed, 0x5e, 0xed, 0x5e,
						0xc3 };
	unsigned char buf[16];
	struct usdt_file *f = NULL;
	const struct usdt_site *two;
	uint64_t v = 0, o = 0;
	GElf_Shdr text;
	Dl_info dl;

	CHECK(find_section(fixture, ".text", &text) == 0);
	CHECK(elf_symbol_offset(fixture, "fix_marker", &v, &o) == 0);
	CHECK_U64(o, section_offset(&text, v));
	CHECK(read_at(fixture, o, buf, sizeof(marker)) == 0);
	CHECK(!memcmp(buf, marker, sizeof(marker)));

	CHECK(elf_symbol_offset(fixture, "main", &v, &o) == 0);
	CHECK_U64(o, section_offset(&text, v));
	CHECK(usdt_file__open(fixture, &f, NULL) == 0);
	two = f ? find_site(f, "two") : NULL;
	/* The probe "two" is in main. */
	CHECK(two && two->pc_vaddr >= v &&
	      two->pc_vaddr < v + symbol_size(fixture, "main"));
	usdt_file__free(f);

	CHECK(elf_symbol_offset(fixture, "no_such_symbol", &v, &o) == -ENOENT);
	/* An object, and an undefined function: neither counts. */
	CHECK(elf_symbol_offset(fixture, "fix_sema_semaphore", &v, &o) ==
	      -ENOENT);
	CHECK(elf_symbol_offset(fixture, "__libc_start_main", &v, &o) ==
	      -ENOENT);

	/* .dynsym of the libc we run on: its getpid's bytes in memory must be
	 * the bytes at the offset we compute, at the address we compute. */
	CHECK(dladdr((void *)&getpid, &dl) && dl.dli_fname && dl.dli_fbase);
	if (!dl.dli_fname || !dl.dli_fbase)
		return;
	CHECK(elf_symbol_offset(dl.dli_fname, "getpid", &v, &o) == 0);
	CHECK_U64(v, (uintptr_t)&getpid - (uintptr_t)dl.dli_fbase);
	CHECK(read_at(dl.dli_fname, o, buf, sizeof(buf)) == 0);
	CHECK(!memcmp(buf, (const void *)&getpid, sizeof(buf)));
}

static void test_open_fd(void)
{
	struct usdt_file *f = NULL;
	unsigned int bad = 99;
	int fd;

	fd = open(fixture, O_RDONLY);
	CHECK(fd >= 0);
	CHECK(usdt_file__open_fd(fd, "label", &f, &bad) == 0);
	CHECK(f && f->nsites == 3 && bad == 0);
	CHECK_STR(f ? f->path : NULL, "label");
	CHECK(fcntl(fd, F_GETFD) >= 0);	/* still the caller's */
	usdt_file__free(f);
	close(fd);
	CHECK(usdt_file__open_fd(-1, "x", &f, NULL) == -EINVAL);
	usdt_file__free(NULL);
	CHECK_U64(usdt_file__count(NULL, NULL), 0);
}

/* Writes img to the temporary file and opens that. */
static int open_image(const unsigned char *img, size_t size,
		      struct usdt_file **f, unsigned int *bad)
{
	int err;

	err = write_file(tmp_path, img, size);
	if (err)
		return err;
	return usdt_file__open(tmp_path, f, bad);
}

/* Opens a copy of the fixture with len bytes at off set to val. */
static int open_patched(size_t off, size_t len, unsigned char val,
			struct usdt_file **f, unsigned int *bad)
{
	unsigned char *copy = malloc(image_size);
	int err;

	if (!copy || off + len > image_size) {
		free(copy);
		return -ENOMEM;
	}
	memcpy(copy, image, image_size);
	memset(copy + off, val, len);
	err = open_image(copy, image_size, f, bad);
	free(copy);
	return err;
}

static void test_not_elf(void)
{
	struct usdt_file *f = NULL;
	uint64_t v, o;

	CHECK(usdt_file__open("/nonexistent/file", &f, NULL) == -ENOENT);
	CHECK(usdt_file__open("/", &f, NULL) == -EISDIR);
	CHECK(!write_file(tmp_path, "", 0));
	CHECK(usdt_file__open(tmp_path, &f, NULL) == -ENOEXEC);
	CHECK(!write_file(tmp_path, "#!/bin/sh\necho hi\n", 18));
	CHECK(usdt_file__open(tmp_path, &f, NULL) == -ENOEXEC);
	CHECK(elf_symbol_offset(tmp_path, "main", &v, &o) == -ENOEXEC);
	CHECK(open_patched(EI_CLASS, 1, ELFCLASS32, &f, NULL) == -ENOEXEC);
	CHECK(open_patched(EI_DATA, 1, ELFDATA2MSB, &f, NULL) == -ENOEXEC);
	CHECK(open_patched(offsetof(Elf64_Ehdr, e_type), 1, ET_REL, &f,
			   NULL) == -ENOEXEC);
	CHECK(f == NULL);
}

/* File offset of the k-th note header of the .note.stapsdt section. */
static size_t note_off(const GElf_Shdr *sh, int k)
{
	size_t off = sh->sh_offset;
	uint32_t namesz, descsz;

	for (; k > 0; k--) {
		memcpy(&namesz, image + off, 4);
		memcpy(&descsz, image + off + 4, 4);
		off += NOTE_HDR + ALIGN4(namesz) + ALIGN4(descsz);
	}
	return off;
}

/* Every site a corrupted file still yields must be usable as is. */
static bool sites_sane(const struct usdt_file *f, size_t file_size)
{
	const struct usdt_site *s;
	size_t i;

	for (i = 0; i < f->nsites; i++) {
		s = &f->sites[i];
		if (!s->provider[0] || !s->name[0] || !s->args ||
		    s->pc_offset >= file_size ||
		    (!s->sema_vaddr && s->sema_offset))
			return false;
	}
	return true;
}

/* One field of the first note overwritten with len bytes of val. */
struct patch_case {
	const char *what;
	long at;		/* from the first note's descriptor */
	size_t len;
	unsigned char val;
	/* Expected; -1: this note is bad, and the notes after it are
	 * misread in ways that depend on the layout. */
	int nsites, bad;
};

/*
 * Note layout: namesz at desc-20, descsz at desc-16, type at desc-12,
 * "stapsdt\0" at desc-8; desc: pc, base, semaphore (8 bytes each), then
 * "fix\0", the name, the args.
 */
static void test_patch_cases(size_t d0, uint32_t descsz, const char *first)
{
	const struct patch_case cases[] = {
		{ "no NUL in the strings", 24, descsz - 24, 'A', 2, 1 },
		{ "wrong type", -12, 1, 99, 2, 1 },
		{ "foreign note name", -2, 1, 'X', 2, 0 },
		{ "pc outside PT_LOAD", 6, 1, 0xde, 2, 1 },
		/* What GNU ld and lld leave in the note of a function they
		 * dropped: 0 + the site's offset, below all code. Ignored
		 * without a word, like the function. */
		{ "pc of a dropped function", 1, 7, 0, 2, 0 },
		{ "escape in provider", 25, 1, 0x1b, 2, 1 },
		{ "empty provider", 24, 1, 0, 2, 1 },
		{ "descsz smaller than the words", -16, 1, 20, -1, -1 },
		/* 0xffffxxxx: the rest of the section cannot be walked */
		{ "huge descsz", -14, 2, 0xff, 0, 1 },
	};
	struct usdt_file *f;
	unsigned int bad;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		f = NULL;
		rc = open_patched((size_t)((long)d0 + cases[i].at),
				  cases[i].len, cases[i].val, &f, &bad);
		CHECK(rc == 0);
		if (rc || !f) {
			printf("  case '%s': %d\n", cases[i].what, rc);
			continue;
		}
		CHECK(sites_sane(f, image_size));
		if (cases[i].bad < 0) {
			CHECK(bad >= 1 && f->nsites <= 2);
		} else {
			CHECK(f->nsites == (size_t)cases[i].nsites);
			CHECK(bad == (unsigned int)cases[i].bad);
			if (f->nsites != (size_t)cases[i].nsites ||
			    bad != (unsigned int)cases[i].bad)
				printf("  case '%s': %zu sites, %u bad\n",
				       cases[i].what, f->nsites, bad);
		}
		if (f->nsites == 2)
			CHECK(find_site(f, first) == NULL);
		usdt_file__free(f);
	}
}

/* prelink moved everything 1 byte up: base word 1 lower in every note. */
static void test_prelink(const GElf_Shdr *sh, const struct usdt_file *ref)
{
	struct usdt_file *f = NULL;
	const struct usdt_site *s, *r;
	unsigned char *copy;
	unsigned int bad = 99;
	size_t i, at;
	uint64_t b;
	int rc;

	copy = malloc(image_size);
	if (!copy)
		return;
	memcpy(copy, image, image_size);
	for (i = 0; i < ref->nsites; i++) {
		at = note_off(sh, (int)i) + NOTE_HDR + NOTE_NAME_SIZE + 8;
		memcpy(&b, copy + at, 8);
		b -= 1;
		memcpy(copy + at, &b, 8);
	}
	rc = open_image(copy, image_size, &f, &bad);
	free(copy);
	CHECK(rc == 0 && bad == 0 && f && f->nsites == ref->nsites);
	for (i = 0; f && i < f->nsites && i < ref->nsites; i++) {
		s = &f->sites[i];
		r = &ref->sites[i];
		CHECK_U64(s->pc_vaddr, r->pc_vaddr + 1);
		CHECK_U64(s->pc_offset, r->pc_offset + 1);
		CHECK_U64(s->sema_vaddr, r->sema_vaddr ? r->sema_vaddr + 1 : 0);
		CHECK_U64(s->sema_offset,
			  r->sema_offset ? r->sema_offset + 1 : 0);
	}
	usdt_file__free(f);
}

static void test_corrupt_notes(void)
{
	struct usdt_file *f = NULL, *ref = NULL;
	unsigned int bad = 99;
	char first[32];
	uint32_t descsz;
	size_t n0, d0, i, at;
	GElf_Shdr sh;
	int rc;

	CHECK(find_section(fixture, ".note.stapsdt", &sh) == 0);
	CHECK(usdt_file__open(fixture, &ref, NULL) == 0);
	if (!ref || ref->nsites != 3 || sh.sh_offset + sh.sh_size > image_size)
		goto cleanup;
	n0 = note_off(&sh, 0);
	d0 = n0 + NOTE_HDR + NOTE_NAME_SIZE;
	memcpy(&descsz, image + n0 + 4, 4);
	/* The first note's name, after 3 words and "fix\0". */
	snprintf(first, sizeof(first), "%s", (const char *)image + d0 + 28);
	CHECK(find_site(ref, first) != NULL);

	test_patch_cases(d0, descsz, first);
	test_prelink(&sh, ref);

	/* A semaphore in the read-only first segment: the kernel could not
	 * count it, so the site is bad. */
	for (i = 0; i < ref->nsites; i++) {
		if (!ref->sites[i].sema_vaddr)
			continue;
		at = note_off(&sh, (int)i) + NOTE_HDR + NOTE_NAME_SIZE + 16;
		rc = open_patched(at + 1, 7, 0, &f, &bad);	/* -> 0x10 */
		CHECK(rc == 0 && bad == 1 && f && f->nsites == 2);
		usdt_file__free(f);
		f = NULL;
	}
cleanup:
	usdt_file__free(ref);
}

/* File offset of the section header of .note.stapsdt, 0 if none. */
static size_t note_shdr_at(const GElf_Shdr *sh)
{
	Elf64_Ehdr eh;
	Elf64_Shdr s;
	size_t i, at;

	memcpy(&eh, image, sizeof(eh));
	for (i = 0; i < eh.e_shnum; i++) {
		at = eh.e_shoff + i * sizeof(s);
		if (at + sizeof(s) > image_size)
			break;
		memcpy(&s, image + at, sizeof(s));
		if (s.sh_offset == sh->sh_offset && s.sh_type == SHT_NOTE)
			return at;
	}
	return 0;
}

/* sh_size of .note.stapsdt past the end of the file. */
static void test_corrupt_section(void)
{
	struct usdt_file *f = NULL;
	unsigned int bad = 0;
	GElf_Shdr sh;
	size_t at;
	int rc;

	CHECK(find_section(fixture, ".note.stapsdt", &sh) == 0);
	at = note_shdr_at(&sh);
	CHECK(at != 0);
	if (!at)
		return;
	rc = open_patched(at + offsetof(Elf64_Shdr, sh_size) + 4, 1, 0x7f, &f,
			  &bad);
	CHECK(rc == 0 || rc == -EINVAL);
	if (rc == 0)
		CHECK(f->nsites == 0 && bad == 1);
	usdt_file__free(f);
}

/*
 * The last note, whose end is the end of the buffer libelf hands us: a
 * parser that trusts a NUL or a descriptor size to be there reads past it,
 * which ASan reports. (1) no NUL up to the end of the section; (2) descsz 4,
 * with the section ending right there.
 */
static void test_last_note_bounds(void)
{
	struct usdt_file *f = NULL;
	unsigned char *copy = NULL;
	size_t last, desc, end, shdr;
	unsigned int bad = 99;
	uint32_t descsz = 4;
	uint64_t size;
	GElf_Shdr sh;
	int rc;

	CHECK(find_section(fixture, ".note.stapsdt", &sh) == 0);
	shdr = note_shdr_at(&sh);
	copy = malloc(image_size);
	if (!shdr || !copy)
		goto cleanup;
	last = note_off(&sh, 2);
	desc = last + NOTE_HDR + NOTE_NAME_SIZE;
	end = sh.sh_offset + sh.sh_size;
	CHECK_U64(note_off(&sh, 3), end);	/* 3 notes, nothing after */

	memcpy(copy, image, image_size);
	memset(copy + desc + 24, 'A', end - desc - 24);
	rc = open_image(copy, image_size, &f, &bad);
	CHECK(rc == 0 && f && f->nsites == 2 && bad == 1);
	usdt_file__free(f);
	f = NULL;

	memcpy(copy, image, image_size);
	memcpy(copy + last + 4, &descsz, 4);
	size = desc + descsz - sh.sh_offset;
	memcpy(copy + shdr + offsetof(Elf64_Shdr, sh_size), &size, 8);
	rc = open_image(copy, image_size, &f, &bad);
	CHECK(rc == 0 && f && f->nsites == 2 && bad == 1);
	usdt_file__free(f);
cleanup:
	free(copy);
}

/*
 * Random bytes in the notes, and the file cut at many lengths: whatever
 * comes back, no crash, no read out of bounds (ASan), and sane sites.
 */
static void test_fuzz(void)
{
	unsigned int bad, errors = 0, insane = 0, iter, k, nflip;
	unsigned char *notes = NULL;
	struct usdt_file *f;
	size_t len, off, step;
	GElf_Shdr sh;
	int rc;

	CHECK(find_section(fixture, ".note.stapsdt", &sh) == 0);
	CHECK(!write_file(tmp_path, image, image_size));
	notes = malloc(sh.sh_size);
	if (!notes || !sh.sh_size || sh.sh_offset + sh.sh_size > image_size)
		goto cleanup;
	/* Only the section's bytes are rewritten: a sanitizer build of the
	 * fixture can weigh megabytes. */
	srand(12345);
	for (iter = 0; iter < 3000; iter++) {
		memcpy(notes, image + sh.sh_offset, sh.sh_size);
		nflip = 1 + (unsigned int)rand() % 8;
		for (k = 0; k < nflip; k++) {
			off = (size_t)rand() % sh.sh_size;
			notes[off] = (unsigned char)rand();
		}
		if (pwrite(tmp_fd, notes, sh.sh_size, (off_t)sh.sh_offset) !=
		    (ssize_t)sh.sh_size)
			break;
		f = NULL;
		rc = usdt_file__open(tmp_path, &f, &bad);
		errors += rc != 0;
		insane += f && !sites_sane(f, image_size);
		usdt_file__free(f);
	}
	CHECK_U64(iter, 3000);
	CHECK_U64(errors, 0);	/* the ELF itself stayed readable */
	CHECK_U64(insane, 0);

	/* Cut short at about 600 lengths, and at each of the first 128. */
	CHECK(!write_file(tmp_path, image, image_size));
	step = image_size / 600 + 1;
	len = image_size;
	while (len > 0) {
		len = len > 128 + step ? len - step : len - 1;
		if (ftruncate(tmp_fd, (off_t)len))
			break;
		f = NULL;
		rc = usdt_file__open(tmp_path, &f, &bad);
		/* Any error, but a clean one: nothing returned with it. */
		errors += rc > 0 || (rc == 0) != (f != NULL);
		insane += f && !sites_sane(f, len);
		usdt_file__free(f);
	}
	CHECK_U64(len, 0);
	CHECK_U64(errors, 0);
	CHECK_U64(insane, 0);
cleanup:
	free(notes);
}

int main(int argc, char **argv)
{
	int status;

	if (argc != 3) {
		fprintf(stderr, "usage: %s FIXTURE STRIPPED_FIXTURE\n", argv[0]);
		return 2;
	}
	fixture = argv[1];
	stripped = argv[2];
	if (read_file(fixture, &image, &image_size)) {
		fprintf(stderr, "%s: cannot read\n", fixture);
		return 1;
	}
	tmp_fd = memfd_create("test_elf_notes", MFD_CLOEXEC);
	if (tmp_fd < 0) {
		perror("memfd_create");
		return 1;
	}
	snprintf(tmp_path, sizeof(tmp_path), "/proc/self/fd/%d", tmp_fd);
	RUN(test_fixture_sites);
	RUN(test_stripped);
	RUN(test_symbols);
	RUN(test_open_fd);
	RUN(test_not_elf);
	RUN(test_corrupt_notes);
	RUN(test_corrupt_section);
	RUN(test_last_note_bounds);
	RUN(test_fuzz);
	status = check_status();
	close(tmp_fd);
	free(image);
	return status;
}
