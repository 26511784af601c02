// SPDX-License-Identifier: MIT
/*
 * A program's DT_NEEDED closure, resolved as ld.so resolves it (what is
 * and is not resolved: elf_deps.h), and whether it can load more later.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <glob.h>
#include <libelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "input.h"
#include "elf_deps.h"
#include "vec.h"

/* What one ELF file says about its loading. */
struct elf_obj {
	unsigned char cls;
	unsigned int machine;
	char *interp;		/* PT_INTERP */
	char **needed;
	size_t nneeded, cap;
	char *rpath, *runpath;	/* NULL: none */
	const char *late_sym;	/* an import that loads files later */
};

/* The directories of /etc/ld.so.conf, read once per closure. */
struct dirs {
	char **v;
	size_t n, cap;
};

/* Seen files, by device and inode: a library reached twice is one. */
struct file_id {
	dev_t dev;
	ino_t ino;
};

struct closure {
	struct elf_deps *d;
	struct dirs conf;
	struct file_id *seen;
	size_t nseen, seen_cap;
	unsigned char cls;
	unsigned int machine;
	char *exe_rpath;	/* the executable's DT_RPATH, if no RUNPATH */
	char *exe_dir;
};

static const char *const late_syms[] = {
	"dlopen", "dlmopen", "execve", "execv", "execvp", "execvpe", "execl",
	"execlp", "execle", "fexecve", "execveat", "posix_spawn",
	"posix_spawnp", "system", "popen",
};

static pthread_once_t libelf_once = PTHREAD_ONCE_INIT;
static bool libelf_ok;

static void libelf_init(void)
{
	libelf_ok = elf_version(EV_CURRENT) != EV_NONE;
}

static void obj_free(struct elf_obj *o)
{
	size_t i;

	for (i = 0; i < o->nneeded; i++)
		free(o->needed[i]);
	free(o->needed);
	free(o->interp);
	free(o->rpath);
	free(o->runpath);
	memset(o, 0, sizeof(*o));
}

static int push_str(char ***v, size_t *n, size_t *cap, const char *s)
{
	char *c = strdup(s);

	if (!c || VEC_RESERVE(*v, *cap, *n + 1)) {
		free(c);
		return -ENOMEM;
	}
	(*v)[(*n)++] = c;
	return 0;
}

static int read_dynamic(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
			struct elf_obj *o)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t i, n;
	GElf_Dyn dyn;
	const char *s;

	if (!data || !sh->sh_entsize)
		return 0;
	n = sh->sh_size / sh->sh_entsize;
	for (i = 0; i < n && gelf_getdyn(data, (int)i, &dyn); i++) {
		if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RPATH &&
		    dyn.d_tag != DT_RUNPATH)
			continue;
		s = elf_strptr(elf, sh->sh_link, dyn.d_un.d_val);
		if (!s)
			continue;
		if (dyn.d_tag == DT_NEEDED) {
			if (push_str(&o->needed, &o->nneeded, &o->cap, s))
				return -ENOMEM;
		} else {
			char **dst = dyn.d_tag == DT_RPATH ? &o->rpath
							   : &o->runpath;

			free(*dst);
			*dst = strdup(s);
			if (!*dst)
				return -ENOMEM;
		}
	}
	return 0;
}

static void read_imports(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
			 struct elf_obj *o)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t i, k, n;
	GElf_Sym sym;
	const char *name;

	if (!data || !sh->sh_entsize)
		return;
	n = sh->sh_size / sh->sh_entsize;
	for (i = 1; i < n && !o->late_sym; i++) {
		if (!gelf_getsym(data, (int)i, &sym) ||
		    sym.st_shndx != SHN_UNDEF)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name)
			continue;
		for (k = 0; k < sizeof(late_syms) / sizeof(late_syms[0]); k++)
			if (!strcmp(name, late_syms[k]))
				o->late_sym = late_syms[k];
	}
}

static int read_interp(Elf *elf, struct elf_obj *o)
{
	size_t i, nph, size;
	const char *raw;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &nph))
		return 0;
	raw = elf_rawfile(elf, &size);
	for (i = 0; raw && i < nph; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_INTERP)
			continue;
		if (ph.p_offset >= size || ph.p_filesz > size - ph.p_offset ||
		    !ph.p_filesz)
			return 0;
		o->interp = strndup(raw + ph.p_offset, ph.p_filesz);
		return o->interp ? 0 : -ENOMEM;
	}
	return 0;
}

/* Reads path's class, machine, loader, DT_NEEDED, RPATH/RUNPATH and
 * whether it imports a late-loading function. 0 or -errno. */
static int obj_read(const char *path, struct elf_obj *o)
{
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	Elf *elf;
	int fd, err = 0;

	memset(o, 0, sizeof(*o));
	pthread_once(&libelf_once, libelf_init);
	if (!libelf_ok)
		return -EINVAL;
	fd = input__open(path);
	if (fd < 0)
		return fd;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		err = -ENOEXEC;
		goto cleanup;
	}
	o->cls = eh.e_ident[EI_CLASS];
	o->machine = eh.e_machine;
	err = read_interp(elf, o);
	while (!err && (scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_DYNAMIC)
			err = read_dynamic(elf, scn, &sh, o);
		else if (sh.sh_type == SHT_DYNSYM)
			read_imports(elf, scn, &sh, o);
	}
cleanup:
	if (elf)
		elf_end(elf);
	close(fd);
	if (err)
		obj_free(o);
	return err;
}

/* ---- /etc/ld.so.conf --------------------------------------------------- */

static void conf_read(struct dirs *dirs, const char *file, int depth);

static void conf_include(struct dirs *dirs, const char *file,
			 const char *pattern, int depth)
{
	char buf[PATH_MAX];
	const char *slash;
	glob_t g;
	size_t i;

	/* A relative pattern is relative to the including file's folder. */
	if (pattern[0] != '/' && (slash = strrchr(file, '/'))) {
		if (snprintf(buf, sizeof(buf), "%.*s/%s", (int)(slash - file),
			     file, pattern) >= (int)sizeof(buf))
			return;
		pattern = buf;
	}
	if (glob(pattern, 0, NULL, &g))
		return;
	for (i = 0; i < g.gl_pathc; i++)
		conf_read(dirs, g.gl_pathv[i], depth + 1);
	globfree(&g);
}

static void conf_read(struct dirs *dirs, const char *file, int depth)
{
	char line[PATH_MAX], *p, *tok, *save;
	FILE *f;

	if (depth > 8)	/* includes in a circle */
		return;
	f = fopen(file, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "#\n")] = 0;
		p = line + strspn(line, " \t");
		if (!strncmp(p, "include", 7) && (p[7] == ' ' || p[7] == '\t')) {
			for (tok = strtok_r(p + 7, " \t", &save); tok;
			     tok = strtok_r(NULL, " \t", &save))
				conf_include(dirs, file, tok, depth);
			continue;
		}
		if (!strncmp(p, "hwcap", 5))
			continue;
		/* ldconfig also splits on ':', ',' and '='(TYPE). */
		for (tok = strtok_r(p, " \t:,", &save); tok;
		     tok = strtok_r(NULL, " \t:,", &save)) {
			tok[strcspn(tok, "=")] = 0;
			if (tok[0] == '/')
				push_str(&dirs->v, &dirs->n, &dirs->cap, tok);
		}
	}
	fclose(f);
}

/* ---- resolving ---------------------------------------------------------- */

static const char *triplet(unsigned int machine)
{
	switch (machine) {
	case EM_X86_64: return "x86_64-linux-gnu";
	case EM_AARCH64: return "aarch64-linux-gnu";
	case EM_386: return "i386-linux-gnu";
	default: return NULL;
	}
}

/* A library ld.so would take: a readable ELF file of our class and
 * machine (ld.so passes over the others and searches on). */
static bool fits(const char *path, const struct closure *c)
{
	unsigned char h[20];
	struct stat st;
	ssize_t n;
	int fd;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return false;
	fd = input__open(path);
	if (fd < 0)
		return false;
	n = read(fd, h, sizeof(h));
	close(fd);
	return n == (ssize_t)sizeof(h) && !memcmp(h, ELFMAG, SELFMAG) &&
	       h[EI_CLASS] == c->cls &&
	       (unsigned int)(h[18] | h[19] << 8) == c->machine;
}

/* Searches a ':'-separated list (RPATH, RUNPATH, LD_LIBRARY_PATH) for name;
 * origin: $ORIGIN's value, or NULL where it means nothing. */
static char *search_list(const char *list, const char *origin,
			 const char *name, const struct closure *c)
{
	char dir[PATH_MAX], path[PATH_MAX];
	const char *p = list, *end;
	size_t len;

	while (p && *p) {
		end = strchr(p, ':');
		len = end ? (size_t)(end - p) : strlen(p);
		if (len >= sizeof(dir))
			len = sizeof(dir) - 1;
		memcpy(dir, p, len);
		dir[len] = 0;
		p = end ? end + 1 : NULL;
		if (!strncmp(dir, "$ORIGIN", 7) || !strncmp(dir, "${ORIGIN}", 9)) {
			const char *rest = dir + (dir[1] == '{' ? 9 : 7);

			if (!origin)
				continue;
			if (snprintf(path, sizeof(path), "%s%s/%s", origin,
				     rest, name) >= (int)sizeof(path))
				continue;
		} else if (strchr(dir, '$')) {
			continue;	/* $LIB, $PLATFORM: not resolved */
		} else {
			/* An empty entry is the current directory. */
			if (snprintf(path, sizeof(path), "%s/%s",
				     dir[0] ? dir : ".", name) >= (int)sizeof(path))
				continue;
		}
		if (fits(path, c))
			return strdup(path);
	}
	return NULL;
}

static char *dir_of(const char *path)
{
	char *real = realpath(path, NULL), *slash;

	if (!real)
		return NULL;
	slash = strrchr(real, '/');
	if (slash == real)
		slash[1] = 0;
	else if (slash)
		*slash = 0;
	return real;
}

/* Where ld.so finds `name`, needed by `o` at `opath`; NULL if nowhere. */
static char *resolve(struct closure *c, const struct elf_obj *o,
		     const char *opath, const char *name)
{
	static const char *const defaults[] = { "/lib", "/usr/lib", "/lib64",
						"/usr/lib64" };
	char *origin = NULL, *found = NULL, path[PATH_MAX];
	const char *t = triplet(c->machine);
	size_t i;

	if (strchr(name, '/'))
		return fits(name, c) ? strdup(name) : NULL;
	origin = dir_of(opath);
	if (o->rpath && !o->runpath)
		found = search_list(o->rpath, origin, name, c);
	if (!found && c->exe_rpath && !o->runpath)
		found = search_list(c->exe_rpath, c->exe_dir, name, c);
	if (!found && getenv("LD_LIBRARY_PATH"))
		found = search_list(getenv("LD_LIBRARY_PATH"), NULL, name, c);
	if (!found && o->runpath)
		found = search_list(o->runpath, origin, name, c);
	for (i = 0; !found && i < c->conf.n; i++) {
		if (snprintf(path, sizeof(path), "%s/%s", c->conf.v[i],
			     name) < (int)sizeof(path) && fits(path, c))
			found = strdup(path);
	}
	for (i = 0; !found && t && i < 2; i++) {
		if (snprintf(path, sizeof(path), "%s/%s/%s", defaults[i], t,
			     name) < (int)sizeof(path) && fits(path, c))
			found = strdup(path);
	}
	for (i = 0; !found && i < sizeof(defaults) / sizeof(defaults[0]); i++) {
		if (snprintf(path, sizeof(path), "%s/%s", defaults[i],
			     name) < (int)sizeof(path) && fits(path, c))
			found = strdup(path);
	}
	free(origin);
	return found;
}

/* Adds path to the closure unless that file is in already: 1 if added,
 * 0 if seen, -ENOMEM. */
static int add_file(struct closure *c, const char *path)
{
	struct stat st;
	size_t i;

	if (stat(path, &st))
		return 0;
	for (i = 0; i < c->nseen; i++)
		if (c->seen[i].dev == st.st_dev && c->seen[i].ino == st.st_ino)
			return 0;
	if (VEC_RESERVE(c->seen, c->seen_cap, c->nseen + 1))
		return -ENOMEM;
	c->seen[c->nseen++] = (struct file_id){ st.st_dev, st.st_ino };
	if (push_str(&c->d->paths, &c->d->n, &c->d->cap, path))
		return -ENOMEM;
	return 1;
}

static int note_late(struct elf_deps *d, const char *path, const char *sym)
{
	if (d->loads_later)
		return 0;
	d->loads_later = true;
	if (asprintf(&d->late_why, "%s imports %s", path, sym) < 0) {
		d->late_why = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* The preloaded libraries: LD_PRELOAD, split on spaces and colons. */
static int add_preload(struct closure *c, const struct elf_obj *exe,
		       const char *exe_path)
{
	const char *env = getenv("LD_PRELOAD");
	char *copy, *tok, *save, *found;
	int err = 0;

	if (!env || !*env)
		return 0;
	copy = strdup(env);
	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, " :", &save); tok && err >= 0;
	     tok = strtok_r(NULL, " :", &save)) {
		found = resolve(c, exe, exe_path, tok);
		if (found)
			err = add_file(c, found);
		free(found);
	}
	free(copy);
	return err < 0 ? err : 0;
}

int elf_deps__closure(const char *path, struct elf_deps *out)
{
	struct closure c = { .d = out };
	struct elf_obj exe, o;
	size_t i, k;
	char *found;
	int err;

	memset(out, 0, sizeof(*out));
	err = obj_read(path, &exe);
	if (err)
		return err;
	c.cls = exe.cls;
	c.machine = exe.machine;
	conf_read(&c.conf, "/etc/ld.so.conf", 0);
	if (exe.rpath && !exe.runpath) {
		c.exe_rpath = exe.rpath;
		c.exe_dir = dir_of(path);
	}
	err = add_file(&c, path);
	if (err >= 0 && exe.interp)
		err = add_file(&c, exe.interp);
	if (err >= 0)
		err = add_preload(&c, &exe, path);
	/* Breadth-first, as ld.so loads them: paths grows as we go. */
	for (i = 0; err >= 0 && i < out->n; i++) {
		const char *p = out->paths[i];

		if (i == 0)
			o = exe;
		else if (obj_read(p, &o))
			continue;
		if (o.late_sym)
			err = note_late(out, p, o.late_sym);
		for (k = 0; err >= 0 && k < o.nneeded; k++) {
			found = resolve(&c, &o, p, o.needed[k]);
			if (found)
				err = add_file(&c, found);
			else
				err = push_str(&out->missing, &out->nmissing,
					       &out->missing_cap, o.needed[k]);
			free(found);
		}
		if (i != 0)
			obj_free(&o);
	}
	obj_free(&exe);
	for (i = 0; i < c.conf.n; i++)
		free(c.conf.v[i]);
	free(c.conf.v);
	free(c.seen);
	free(c.exe_dir);
	if (err < 0) {
		elf_deps__free(out);
		return err;
	}
	return 0;
}

void elf_deps__free(struct elf_deps *d)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		free(d->paths[i]);
	for (i = 0; i < d->nmissing; i++)
		free(d->missing[i]);
	free(d->paths);
	free(d->missing);
	free(d->late_why);
	memset(d, 0, sizeof(*d));
}
