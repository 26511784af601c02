// SPDX-License-Identifier: MIT
/*
 * Address -> "func+0xoff (file)" for the stacks of the memory report. The
 * files are a target's (possibly hostile) binaries: every symbol and
 * segment comes through libelf's bounds-checked accessors, and a file that
 * cannot be parsed just has no symbols.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "addr_space.h"
#include "symbolize.h"
#include "vec.h"

struct sym {
	uint64_t value, size;
	const char *name;	/* into sym_file.strs */
};

struct sym_load {
	uint64_t offset, filesz, vaddr;
};

struct sym_file {
	dev_t dev;
	ino_t ino;
	struct sym *syms;	/* sorted by value */
	size_t nsyms;
	char *strs;		/* every name, NUL-separated */
	struct sym_load *loads;
	size_t nloads;
	bool exec;		/* ET_EXEC */
};

void symbolizer__init(struct symbolizer *sy)
{
	memset(sy, 0, sizeof(*sy));
}

void symbolizer__free(struct symbolizer *sy)
{
	size_t i;

	for (i = 0; i < sy->nfiles; i++) {
		free(sy->files[i].syms);
		free(sy->files[i].strs);
		free(sy->files[i].loads);
	}
	free(sy->files);
	for (i = 0; i < sy->nexes; i++) {
		close(sy->exes[i].fd);
		free(sy->exes[i].path);
	}
	free(sy->exes);
	memset(sy, 0, sizeof(*sy));
}

static int sym_cmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	/* Among aliases, the sized one first. */
	return (x->size == 0) - (y->size == 0);
}

static int read_loads(Elf *elf, struct sym_file *f)
{
	size_t n, i;

	if (elf_getphdrnum(elf, &n))
		return -EINVAL;
	f->loads = calloc(n ? n : 1, sizeof(*f->loads));
	if (!f->loads)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		f->loads[f->nloads++] = (struct sym_load){
			.offset = ph.p_offset, .filesz = ph.p_filesz,
			.vaddr = ph.p_vaddr,
		};
	}
	return 0;
}

/* The function symbols of the section of type `type` (SHT_SYMTAB or
 * SHT_DYNSYM); -ENOENT if the file has none. */
static int read_syms(Elf *elf, Elf64_Word type, struct sym_file *f)
{
	Elf_Scn *scn = NULL;
	size_t strs_len = 0, strs_cap = 0, cap = 0, i;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
			break;
	}
	if (!scn || !sh.sh_entsize)
		return -ENOENT;
	{
		Elf_Data *data = elf_getdata(scn, NULL);
		size_t n;

		if (!data)
			return -EINVAL;
		n = data->d_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			const char *name;
			GElf_Sym s;
			size_t len;

			if (!gelf_getsym(data, (int)i, &s))
				break;
			if ((GELF_ST_TYPE(s.st_info) != STT_FUNC &&
			     GELF_ST_TYPE(s.st_info) != STT_GNU_IFUNC) ||
			    s.st_shndx == SHN_UNDEF || !s.st_value)
				continue;
			name = elf_strptr(elf, sh.sh_link, s.st_name);
			if (!name || !*name)
				continue;
			len = strlen(name) + 1;
			if (VEC_RESERVE(f->syms, cap, f->nsyms + 1) ||
			    VEC_RESERVE(f->strs, strs_cap, strs_len + len))
				return -ENOMEM;
			memcpy(f->strs + strs_len, name, len);
			/* Offsets for now: strs may still move. */
			f->syms[f->nsyms++] = (struct sym){
				.value = s.st_value, .size = s.st_size,
				.name = (const char *)(uintptr_t)strs_len,
			};
			strs_len += len;
		}
	}
	for (i = 0; i < f->nsyms; i++)
		f->syms[i].name = f->strs + (uintptr_t)f->syms[i].name;
	if (f->nsyms)
		qsort(f->syms, f->nsyms, sizeof(f->syms[0]), sym_cmp);
	return 0;
}

static void load_file(int fd, struct sym_file *f)
{
	GElf_Ehdr eh;
	Elf *elf;

	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return;
	if (elf_kind(elf) == ELF_K_ELF && gelf_getehdr(elf, &eh))
		f->exec = eh.e_type == ET_EXEC;
	if (elf_kind(elf) == ELF_K_ELF && !read_loads(elf, f) &&
	    read_syms(elf, SHT_SYMTAB, f) == -ENOENT)
		read_syms(elf, SHT_DYNSYM, f);
	elf_end(elf);
}

static struct sym_file *file_get(struct symbolizer *sy, int fd)
{
	struct sym_file *f, *v;
	struct stat st;
	size_t i;

	if (fstat(fd, &st))
		return NULL;
	for (i = 0; i < sy->nfiles; i++)
		if (sy->files[i].dev == st.st_dev && sy->files[i].ino == st.st_ino)
			return &sy->files[i];
	v = realloc(sy->files, (sy->nfiles + 1) * sizeof(*v));
	if (!v)
		return NULL;
	sy->files = v;
	f = &v[sy->nfiles++];
	memset(f, 0, sizeof(*f));
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	elf_version(EV_CURRENT);
	load_file(fd, f);
	return f;
}

/* The symbol covering vaddr, or NULL. */
static const struct sym *sym_at(const struct sym_file *f, uint64_t vaddr)
{
	size_t lo = 0, hi = f->nsyms;

	/* The last symbol with value <= vaddr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->syms[mid].value <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	hi = lo;
	/* Aliases share a value: any of them that covers vaddr. */
	while (lo-- > 0 && f->syms[lo].value == f->syms[hi - 1].value) {
		const struct sym *s = &f->syms[lo];

		if (!s->size || vaddr - s->value < s->size)
			return s;
	}
	return NULL;
}

/* vaddr lies in the file-backed part of a PT_LOAD. */
static bool in_load(const struct sym_file *f, uint64_t vaddr)
{
	size_t i;

	for (i = 0; i < f->nloads; i++)
		if (vaddr >= f->loads[i].vaddr &&
		    vaddr - f->loads[i].vaddr < f->loads[i].filesz)
			return true;
	return false;
}

int symbolizer__add_exe(struct symbolizer *sy, pid_t pid, const char *path)
{
	struct sym_exe *v;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	v = realloc(sy->exes, (sy->nexes + 1) * sizeof(*v));
	if (!v) {
		close(fd);
		return -ENOMEM;
	}
	sy->exes = v;
	v[sy->nexes].pid = pid;
	v[sy->nexes].fd = fd;
	v[sy->nexes].path = strdup(path);
	if (!v[sy->nexes].path) {
		close(fd);
		return -ENOMEM;
	}
	sy->nexes++;
	return 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

bool symbolizer__name(struct symbolizer *sy, const struct addr_spaces *as,
		      pid_t pid, uint64_t addr, int ret, char *buf,
		      size_t len)
{
	const struct addr_space *s = NULL;
	const struct addr_map *m = NULL;
	uint64_t look = ret && addr ? addr - 1 : addr, off, vaddr;
	const struct sym_file *f;
	const struct sym *sym;
	const char *file;
	size_t i;

	for (i = 0; i < as->n; i++)
		if (as->v[i].pid == pid)
			s = &as->v[i];
	/* Newest mapping first, as addr_space.c reads strings. */
	for (i = s ? s->nmaps : 0; i-- > 0;) {
		if (look >= s->maps[i].start && look < s->maps[i].end) {
			m = &s->maps[i];
			break;
		}
	}
	if (!m) {
		for (i = 0; i < sy->nexes; i++) {
			if (sy->exes[i].pid != pid)
				continue;
			f = file_get(sy, sy->exes[i].fd);
			sym = f && f->exec && in_load(f, look) ? sym_at(f, look)
							       : NULL;
			if (sym) {
				snprintf(buf, len, "%s+0x%" PRIx64 " (%s)",
					 sym->name, addr - sym->value,
					 base_name(sy->exes[i].path));
				return true;
			}
		}
		snprintf(buf, len, "0x%" PRIx64, addr);
		return false;
	}
	file = base_name(s->files[m->file].path);
	off = look - m->start + m->pgoff;
	f = file_get(sy, s->files[m->file].fd);
	for (i = 0; f && i < f->nloads; i++) {
		const struct sym_load *l = &f->loads[i];

		if (off < l->offset || off - l->offset >= l->filesz)
			continue;
		vaddr = off - l->offset + l->vaddr;
		sym = sym_at(f, vaddr);
		if (!sym)
			break;
		snprintf(buf, len, "%s+0x%" PRIx64 " (%s)", sym->name,
			 vaddr + (look != addr) - sym->value, file);
		return m->exec;
	}
	snprintf(buf, len, "%s+0x%" PRIx64, file, off + (look != addr));
	return m->exec;
}
