// SPDX-License-Identifier: MIT
/*
 * USDT discovery from an ELF file's .note.stapsdt section, with libelf.
 *
 * <sys/sdt.h> puts, for each probe site, a "nop" in the code and an ELF note
 * (name "stapsdt", type 3) in the non-allocated section .note.stapsdt. Its
 * descriptor holds three address-sized words: the nop's link-time address,
 * the link-time address of the .stapsdt.base section, and the address of the
 * probe's semaphore (0 if none); then three NUL-terminated strings: provider,
 * name and the argument spec ("-4@%edi 8@%rsi"). We read the section rather
 * than a PT_NOTE segment because the section is not allocated: it has no
 * segment, and `strip` keeps it.
 *
 * prelink may move a library after linking without rewriting the notes. It
 * does move .stapsdt.base, so "actual .stapsdt.base - base word" is the
 * distance every address of the note has moved.
 *
 * A uprobe is placed at a file offset, and the kernel bumps a semaphore
 * through a file offset too (ref_ctr_offset), so each address is turned into
 * "address - p_vaddr + p_offset" of the PT_LOAD segment holding it. The probe
 * must be in file-backed bytes of an executable segment: past p_filesz there
 * is no nop, only zeroes. The semaphore must be in a writable segment, where
 * the kernel looks for it, and may lie past p_filesz (.bss): the formula
 * still gives the offset the kernel maps back to the same address.
 *
 * The file may be hostile (any binary of the traced process) and this parser
 * is fuzzed, so every length read from the file is checked against the bytes
 * that libelf actually handed us before use, even where libelf checks too.
 * A bad note costs that note only; the file is rejected only when libelf
 * cannot read its headers. The file is read with ELF_C_READ, not mmap, so a
 * binary truncated while we read it gives an error rather than SIGBUS.
 */
#include <errno.h>
#include <fnmatch.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "input.h"
#include "elf_notes.h"
#include "vec.h"

#define STAPSDT_NOTE_NAME "stapsdt"
#define STAPSDT_NOTE_TYPE 3
/* ELFCLASS64 only: the three descriptor words are 8 bytes each. */
#define STAPSDT_WORD 8
#define STAPSDT_WORDS_SIZE (3 * STAPSDT_WORD)

/* An open ELF file and the segments every address lookup needs. */
struct elf_ctx {
	int fd;
	Elf *elf;
	GElf_Ehdr ehdr;
	uint64_t file_size;
	GElf_Phdr *loads;	/* PT_LOAD headers, file order */
	size_t nloads;
	GElf_Phdr interp;	/* PT_INTERP, if has_interp */
	bool has_interp;
};

/* Where .stapsdt.base really is, for the prelink adjustment. */
struct stapsdt_base {
	bool present;
	uint64_t addr;
};

static pthread_once_t libelf_once = PTHREAD_ONCE_INIT;
static bool libelf_ok;

/* libelf wants elf_version() before anything else, once: files may be
 * scanned from several threads, hence pthread_once. */
static void libelf_init(void)
{
	libelf_ok = elf_version(EV_CURRENT) != EV_NONE;
}

static void elf_ctx__close(struct elf_ctx *ctx)
{
	if (ctx->elf)
		elf_end(ctx->elf);
	free(ctx->loads);
	memset(ctx, 0, sizeof(*ctx));
}

static int elf_ctx__check_ident(struct elf_ctx *ctx)
{
	const char *ident;
	size_t n;

	if (elf_kind(ctx->elf) != ELF_K_ELF)
		return -ENOEXEC;
	ident = elf_getident(ctx->elf, &n);
	if (!ident || n < EI_NIDENT)
		return -ENOEXEC;
	/* The note parser reads 8-byte little-endian words. */
	if (ident[EI_CLASS] != ELFCLASS64 || ident[EI_DATA] != ELFDATA2LSB)
		return -ENOEXEC;
	if (!gelf_getehdr(ctx->elf, &ctx->ehdr))
		return -EINVAL;
	/* Relocatable objects and cores have notes but nothing to attach to. */
	if (ctx->ehdr.e_type != ET_EXEC && ctx->ehdr.e_type != ET_DYN)
		return -ENOEXEC;
	return 0;
}

static int elf_ctx__load_phdrs(struct elf_ctx *ctx)
{
	GElf_Phdr ph;
	size_t n, i;

	if (elf_getphdrnum(ctx->elf, &n))
		return -EINVAL;
	/* libelf has checked n against the file size, so this is bounded. */
	ctx->loads = calloc(n ? n : 1, sizeof(*ctx->loads));
	if (!ctx->loads)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(ctx->elf, (int)i, &ph))
			return -EINVAL;
		if (ph.p_type == PT_LOAD) {
			ctx->loads[ctx->nloads++] = ph;
		} else if (ph.p_type == PT_INTERP && !ctx->has_interp) {
			ctx->interp = ph;
			ctx->has_interp = true;
		}
	}
	return 0;
}

static int elf_ctx__open(int fd, struct elf_ctx *ctx)
{
	struct stat st;
	int err;

	memset(ctx, 0, sizeof(*ctx));
	ctx->fd = fd;
	if (fstat(fd, &st))
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode))
		return -ENOEXEC;
	ctx->file_size = (uint64_t)st.st_size;

	pthread_once(&libelf_once, libelf_init);
	if (!libelf_ok)
		return -ENOSYS;
	ctx->elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!ctx->elf)
		return -EIO;

	err = elf_ctx__check_ident(ctx);
	if (err)
		goto cleanup;
	err = elf_ctx__load_phdrs(ctx);
cleanup:
	if (err)
		elf_ctx__close(ctx);
	return err;
}

/*
 * File offset of vaddr: it must lie in a PT_LOAD that has all of need_flags,
 * within its file contents (p_filesz) if file_backed, else within p_memsz.
 */
static int vaddr_to_offset(const struct elf_ctx *ctx, uint64_t vaddr,
			   uint32_t need_flags, bool file_backed,
			   uint64_t *offset)
{
	const GElf_Phdr *ph;
	uint64_t size, off;
	size_t i;

	for (i = 0; i < ctx->nloads; i++) {
		ph = &ctx->loads[i];
		if ((ph->p_flags & need_flags) != need_flags)
			continue;
		size = file_backed ? ph->p_filesz : ph->p_memsz;
		if (vaddr < ph->p_vaddr || vaddr - ph->p_vaddr >= size)
			continue;
		off = vaddr - ph->p_vaddr + ph->p_offset;
		/* A hostile p_offset could point past the end of the file. */
		if (file_backed && off >= ctx->file_size)
			continue;
		*offset = off;
		return 0;
	}
	return -ENOENT;
}

static int pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pread(fd, (char *)buf + done, len - done,
			  (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EINVAL;	/* the segment claims bytes past EOF */
		done += (size_t)n;
	}
	return 0;
}

/*
 * PT_INTERP is informational here: contents that the kernel itself would
 * refuse (empty, no NUL, longer than a path) leave interp NULL rather than
 * failing the file. Only a read error is an error.
 */
static int read_interp(const struct elf_ctx *ctx, char **interp)
{
	uint64_t len = ctx->interp.p_filesz;
	char *buf = NULL;
	int err = 0;

	*interp = NULL;
	if (!ctx->has_interp || len < 2 || len > PATH_MAX ||
	    ctx->interp.p_offset > ctx->file_size ||
	    len > ctx->file_size - ctx->interp.p_offset)
		return 0;
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	err = pread_full(ctx->fd, buf, len, ctx->interp.p_offset);
	if (err)
		goto cleanup;
	if (!memchr(buf, '\0', len) || !buf[0])
		goto cleanup;
	*interp = buf;
	buf = NULL;
cleanup:
	free(buf);
	return err;
}

static uint64_t le64(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = STAPSDT_WORD - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Takes the NUL-terminated string at *p, which must end before end. */
static int next_string(const unsigned char **p, const unsigned char *end,
		       const char **s)
{
	const unsigned char *nul;

	if (*p >= end)
		return -EINVAL;
	nul = memchr(*p, '\0', (size_t)(end - *p));
	if (!nul)
		return -EINVAL;
	*s = (const char *)*p;
	*p = nul + 1;
	return 0;
}

/*
 * These strings end up in terminal output and in BPF map keys: printable
 * ASCII only, so a hostile file cannot send escape sequences through us.
 */
static bool is_printable(const char *s, bool allow_space)
{
	for (; *s; s++) {
		if (*s == ' ' && allow_space)
			continue;
		if (*s <= ' ' || *s >= 0x7f)
			return false;
	}
	return true;
}

static void site_free(struct usdt_site *s)
{
	free(s->provider);
	free(s->name);
	free(s->args);
	memset(s, 0, sizeof(*s));
}

/*
 * A note of a function the linker dropped (--gc-sections, which cargo
 * always passes, and LTO): the note section is not allocated, so GNU ld
 * and lld keep the note and resolve its address word, a reference into
 * the discarded section, to 0 plus the site's offset in that function.
 * Such a pc lies below every executable segment; no probe can be there,
 * so the note is dropped without a word, like its function. A pc anywhere
 * else outside code is a broken note, and counted.
 */
static bool below_code(const struct elf_ctx *ctx, uint64_t pc)
{
	bool any = false;
	size_t i;

	for (i = 0; i < ctx->nloads; i++) {
		if (!(ctx->loads[i].p_flags & PF_X))
			continue;
		if (pc >= ctx->loads[i].p_vaddr)
			return false;
		any = true;
	}
	return any;
}

/* Address words of a note, turned into the site's addresses and offsets. */
static int site_place(const struct elf_ctx *ctx,
		      const struct stapsdt_base *base, const unsigned char *desc,
		      struct usdt_site *site)
{
	uint64_t pc = le64(desc);
	uint64_t base_word = le64(desc + STAPSDT_WORD);
	uint64_t sema = le64(desc + 2 * STAPSDT_WORD);
	uint64_t delta = 0;

	/* Unsigned wrap-around gives the right answer for moves down too. */
	if (base->present)
		delta = base->addr - base_word;
	site->pc_vaddr = pc + delta;
	if (vaddr_to_offset(ctx, site->pc_vaddr, PF_X, true, &site->pc_offset))
		return below_code(ctx, site->pc_vaddr) ? -ENOENT : -EINVAL;
	if (!sema)
		return 0;
	site->sema_vaddr = sema + delta;
	if (vaddr_to_offset(ctx, site->sema_vaddr, PF_W, false,
			    &site->sema_offset))
		return -EINVAL;
	return 0;
}

/*
 * One note at name_off/desc_off of data. Returns 0 with *site filled,
 * -ENOENT for a note that is not a stapsdt note or is the note of a dropped
 * function (both ignored), -EINVAL for a bad stapsdt note, -ENOMEM.
 */
static int parse_note(const struct elf_ctx *ctx,
		      const struct stapsdt_base *base, const Elf_Data *data,
		      const GElf_Nhdr *nh, size_t name_off, size_t desc_off,
		      struct usdt_site *site)
{
	const unsigned char *buf = data->d_buf, *p, *end;
	const char *provider, *name, *args;
	int err;

	memset(site, 0, sizeof(*site));
	if (name_off > data->d_size || nh->n_namesz > data->d_size - name_off ||
	    desc_off > data->d_size || nh->n_descsz > data->d_size - desc_off)
		return -EINVAL;
	if (nh->n_namesz != sizeof(STAPSDT_NOTE_NAME) ||
	    memcmp(buf + name_off, STAPSDT_NOTE_NAME, sizeof(STAPSDT_NOTE_NAME)))
		return -ENOENT;
	/* Types 1 and 2 are older layouts we cannot read: say so. */
	if (nh->n_type != STAPSDT_NOTE_TYPE)
		return -EINVAL;
	if (nh->n_descsz < STAPSDT_WORDS_SIZE)
		return -EINVAL;

	p = buf + desc_off + STAPSDT_WORDS_SIZE;
	end = buf + desc_off + nh->n_descsz;
	/* Anything after args is the note's alignment padding. */
	if (next_string(&p, end, &provider) || next_string(&p, end, &name) ||
	    next_string(&p, end, &args))
		return -EINVAL;
	if (!provider[0] || !name[0] || !is_printable(provider, false) ||
	    !is_printable(name, false) || !is_printable(args, true))
		return -EINVAL;

	err = site_place(ctx, base, buf + desc_off, site);
	if (err)
		return err;
	site->provider = strdup(provider);
	site->name = strdup(name);
	site->args = strdup(args);
	if (!site->provider || !site->name || !site->args) {
		site_free(site);
		return -ENOMEM;
	}
	return 0;
}

static int sites_reserve(struct usdt_file *f, size_t *cap)
{
	return VEC_RESERVE(f->sites, *cap, f->nsites + 1);
}

static int parse_note_section(const struct elf_ctx *ctx, Elf_Scn *scn,
			      const struct stapsdt_base *base,
			      struct usdt_file *f, size_t *cap,
			      unsigned int *bad)
{
	size_t off = 0, next, name_off, desc_off;
	Elf_Data *data;
	GElf_Nhdr nh;
	int err;

	/* A section libelf cannot read (sh_offset/sh_size past EOF) costs its
	 * notes, not the file. */
	data = elf_getdata(scn, NULL);
	if (!data) {
		(*bad)++;
		return 0;
	}
	while (off < data->d_size) {
		next = gelf_getnote(data, off, &nh, &name_off, &desc_off);
		/* Past a note whose sizes do not fit, nothing can be trusted
		 * to start on a note boundary: the rest of the section goes. */
		if (!next || next <= off) {
			(*bad)++;
			break;
		}
		off = next;
		err = sites_reserve(f, cap);
		if (err)
			return err;
		err = parse_note(ctx, base, data, &nh, name_off, desc_off,
				 &f->sites[f->nsites]);
		if (err == -ENOMEM)
			return err;
		if (err == -EINVAL)
			(*bad)++;
		if (!err)
			f->nsites++;
	}
	return 0;
}

static const char *section_name(const struct elf_ctx *ctx, size_t shstrndx,
				Elf_Scn *scn, GElf_Shdr *sh)
{
	if (!gelf_getshdr(scn, sh))
		return NULL;
	return elf_strptr(ctx->elf, shstrndx, sh->sh_name);
}

static int read_notes(const struct elf_ctx *ctx, struct usdt_file *f,
		      unsigned int *bad)
{
	struct stapsdt_base base = { 0 };
	Elf_Scn *scn = NULL;
	const char *name;
	size_t shstrndx, cap = 0;
	GElf_Shdr sh;
	int err;

	if (elf_getshdrstrndx(ctx->elf, &shstrndx))
		return -EINVAL;
	/* The base section may come after the notes: find it first. */
	while ((scn = elf_nextscn(ctx->elf, scn))) {
		name = section_name(ctx, shstrndx, scn, &sh);
		if (name && !strcmp(name, ".stapsdt.base")) {
			base.present = true;
			base.addr = sh.sh_addr;
			break;
		}
	}
	scn = NULL;
	while ((scn = elf_nextscn(ctx->elf, scn))) {
		name = section_name(ctx, shstrndx, scn, &sh);
		if (!name || sh.sh_type != SHT_NOTE ||
		    strcmp(name, ".note.stapsdt"))
			continue;
		err = parse_note_section(ctx, scn, &base, f, &cap, bad);
		if (err)
			return err;
	}
	return 0;
}

void usdt_file__free(struct usdt_file *f)
{
	size_t i;

	if (!f)
		return;
	for (i = 0; i < f->nsites; i++)
		site_free(&f->sites[i]);
	free(f->sites);
	free(f->interp);
	free(f->path);
	free(f);
}

int usdt_file__open_fd(int fd, const char *path, struct usdt_file **out,
		       unsigned int *bad_notes)
{
	struct elf_ctx ctx = { 0 };
	struct usdt_file *f = NULL;
	unsigned int bad = 0;
	int err;

	if (bad_notes)
		*bad_notes = 0;
	if (fd < 0 || !out)
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->path = strdup(path ? path : "");
	if (!f->path) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = elf_ctx__open(fd, &ctx);
	if (err)
		goto cleanup;
	f->is_pie_or_dso = ctx.ehdr.e_type == ET_DYN;
	f->e_machine = ctx.ehdr.e_machine;
	f->entry_vaddr = ctx.ehdr.e_entry;
	if (vaddr_to_offset(&ctx, f->entry_vaddr, PF_X, true, &f->entry_offset))
		f->entry_offset = 0;
	err = read_interp(&ctx, &f->interp);
	if (err)
		goto cleanup;
	err = read_notes(&ctx, f, &bad);
cleanup:
	elf_ctx__close(&ctx);
	if (bad_notes)
		*bad_notes = bad;
	if (err) {
		usdt_file__free(f);
		return err;
	}
	*out = f;
	return 0;
}

int usdt_file__open(const char *path, struct usdt_file **out,
		    unsigned int *bad_notes)
{
	int fd, err;

	if (bad_notes)
		*bad_notes = 0;
	if (!path)
		return -EINVAL;
	fd = input__open(path);
	if (fd < 0)
		return fd;
	err = usdt_file__open_fd(fd, path, out, bad_notes);
	close(fd);
	return err;
}

size_t usdt_file__count(const struct usdt_file *f, const char *provider)
{
	size_t i, n = 0;

	if (!f)
		return 0;
	for (i = 0; i < f->nsites; i++)
		if (!provider || !strcmp(f->sites[i].provider, provider))
			n++;
	return n;
}

/* Value of the defined symbol `sym` of type stt (STT_FUNC, STT_OBJECT) in
 * the first table of type (SHT_SYMTAB or SHT_DYNSYM); a global or weak
 * definition beats a local. */
static int find_symbol(const struct elf_ctx *ctx, Elf64_Word type,
		       unsigned char stt, const char *sym, uint64_t *value)
{
	bool have_local = false;
	uint64_t local = 0;
	Elf_Scn *scn = NULL;
	Elf_Data *data;
	const char *name;
	GElf_Shdr sh;
	GElf_Sym s;
	int bind, i;

	while ((scn = elf_nextscn(ctx->elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		/* gelf_getsym() returns NULL past the end of data. */
		for (i = 0; gelf_getsym(data, i, &s); i++) {
			if (GELF_ST_TYPE(s.st_info) != stt ||
			    s.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(ctx->elf, sh.sh_link, s.st_name);
			if (!name || strcmp(name, sym))
				continue;
			bind = GELF_ST_BIND(s.st_info);
			if (bind == STB_GLOBAL || bind == STB_WEAK) {
				*value = s.st_value;
				return 0;
			}
			if (!have_local) {
				local = s.st_value;
				have_local = true;
			}
		}
	}
	if (!have_local)
		return -ENOENT;
	*value = local;
	return 0;
}

int elf_symbol_offset(const char *path, const char *sym, uint64_t *vaddr,
		      uint64_t *offset)
{
	struct elf_ctx ctx = { 0 };
	uint64_t value, off;
	int fd, err;

	if (!path || !sym || !vaddr || !offset)
		return -EINVAL;
	fd = input__open(path);
	if (fd < 0)
		return fd;
	err = elf_ctx__open(fd, &ctx);
	if (err)
		goto cleanup;
	err = find_symbol(&ctx, SHT_SYMTAB, STT_FUNC, sym, &value);
	if (err == -ENOENT)
		err = find_symbol(&ctx, SHT_DYNSYM, STT_FUNC, sym, &value);
	if (err)
		goto cleanup;
	if (vaddr_to_offset(&ctx, value, PF_X, true, &off)) {
		err = -EINVAL;
		goto cleanup;
	}
	*vaddr = value;
	*offset = off;
cleanup:
	elf_ctx__close(&ctx);
	close(fd);
	return err;
}

int elf_exec_extent(const char *path, uint64_t off, uint64_t *before,
		    uint64_t *after)
{
	struct elf_ctx ctx = { 0 };
	const GElf_Phdr *ph;
	size_t i;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = elf_ctx__open(fd, &ctx);
	for (i = 0; !err && i < ctx.nloads; i++) {
		ph = &ctx.loads[i];
		if (!(ph->p_flags & PF_X) || off < ph->p_offset ||
		    off - ph->p_offset >= ph->p_filesz)
			continue;
		*before = off - ph->p_offset;
		*after = ph->p_filesz - *before;
		break;
	}
	if (!err && i == ctx.nloads)
		err = -ENOENT;
	elf_ctx__close(&ctx);
	close(fd);
	return err;
}

int elf_object_vaddr(const char *path, const char *sym, uint64_t *vaddr)
{
	struct elf_ctx ctx = { 0 };
	int fd, err;

	if (!path || !sym || !vaddr)
		return -EINVAL;
	fd = input__open(path);
	if (fd < 0)
		return fd;
	err = elf_ctx__open(fd, &ctx);
	if (!err) {
		err = find_symbol(&ctx, SHT_SYMTAB, STT_OBJECT, sym, vaddr);
		if (err == -ENOENT)
			err = find_symbol(&ctx, SHT_DYNSYM, STT_OBJECT, sym,
					  vaddr);
	}
	elf_ctx__close(&ctx);
	close(fd);
	return err;
}

static bool is_go_binary(const struct elf_ctx *ctx)
{
	Elf_Scn *scn = NULL;
	const char *name;
	GElf_Shdr sh;
	size_t shstrndx;

	if (elf_getshdrstrndx(ctx->elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(ctx->elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(ctx->elf, shstrndx, sh.sh_name);
		if (name && (!strcmp(name, ".go.buildinfo") ||
			     !strcmp(name, ".gopclntab")))
			return true;
	}
	return false;
}

/* The C++ ABI's demangler (libstdc++): --func matches and names C++
 * functions by what their authors wrote, not by their mangled symbol. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len,
			    int *status);

static char *demangle(const char *name)
{
	int status = -1;
	char *d;

	if (strncmp(name, "_Z", 2))
		return NULL;
	d = __cxa_demangle(name, NULL, NULL, &status);
	if (status) {
		free(d);
		return NULL;
	}
	return d;
}

static int add_function(struct elf_functions *fns, const char *name,
			uint64_t vaddr, uint64_t off)
{
	struct elf_function *v;

	v = realloc(fns->v, (fns->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	fns->v = v;
	v[fns->n].name = strdup(name);
	if (!v[fns->n].name)
		return -ENOMEM;
	v[fns->n].vaddr = vaddr;
	v[fns->n].offset = off;
	fns->n++;
	return 0;
}

static int function_cmp(const void *a, const void *b)
{
	const struct elf_function *x = a, *y = b;

	if (x->vaddr != y->vaddr)
		return x->vaddr < y->vaddr ? -1 : 1;
	return strcmp(x->name, y->name);
}

int elf_functions(const char *path, const char *glob,
		  struct elf_functions *out)
{
	static const Elf64_Word types[] = { SHT_SYMTAB, SHT_DYNSYM };
	struct elf_ctx ctx = { 0 };
	Elf_Scn *scn;
	GElf_Shdr sh;
	GElf_Sym s;
	size_t t;
	int fd, err, i;

	memset(out, 0, sizeof(*out));
	fd = input__open(path);
	if (fd < 0)
		return fd;
	err = elf_ctx__open(fd, &ctx);
	if (err)
		goto cleanup;
	out->go = is_go_binary(&ctx);
	for (t = 0; !err && t < sizeof(types) / sizeof(types[0]); t++) {
		for (scn = NULL; !err && (scn = elf_nextscn(ctx.elf, scn));) {
			Elf_Data *data;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != types[t])
				continue;
			data = elf_getdata(scn, NULL);
			for (i = 0; !err && data && gelf_getsym(data, i, &s);
			     i++) {
				const char *name;
				uint64_t off;
				char *dm;

				name = elf_strptr(ctx.elf, sh.sh_link, s.st_name);
				if (name && (!strcmp(name, "__cxa_throw") ||
					     !strcmp(name, "__cxa_rethrow") ||
					     !strcmp(name, "_Unwind_RaiseException")))
					out->throws = true;
				if (GELF_ST_TYPE(s.st_info) != STT_FUNC ||
				    s.st_shndx == SHN_UNDEF || !s.st_value)
					continue;
				if (!name || !*name)
					continue;
				dm = demangle(name);
				if (fnmatch(glob, dm ? dm : name, 0) &&
				    fnmatch(glob, name, 0)) {
					free(dm);
					continue;
				}
				if (!vaddr_to_offset(&ctx, s.st_value, PF_X,
						     true, &off))
					err = add_function(out, dm ? dm : name,
							   s.st_value, off);
				free(dm);
			}
		}
	}
	if (!err && out->n > 1) {
		/* The same function in .symtab and .dynsym: keep one. */
		size_t i, j;

		qsort(out->v, out->n, sizeof(out->v[0]), function_cmp);
		for (i = 1, j = 0; i < out->n; i++) {
			if (!function_cmp(&out->v[i], &out->v[j])) {
				free(out->v[i].name);
				continue;
			}
			out->v[++j] = out->v[i];
		}
		out->n = j + 1;
	}
cleanup:
	elf_ctx__close(&ctx);
	close(fd);
	if (err)
		elf_functions__free(out);
	return err;
}

void elf_functions__free(struct elf_functions *fns)
{
	size_t i;

	for (i = 0; i < fns->n; i++)
		free(fns->v[i].name);
	free(fns->v);
	memset(fns, 0, sizeof(*fns));
}
