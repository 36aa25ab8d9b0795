/*
 * symbols.c — names of native frames that dladdr cannot give: functions
 * that are static, hidden or in an executable built without
 * -rdynamic. They are still in the file's .symtab unless it was stripped,
 * so the writer reads that table once per module and looks frames up in
 * it. Off the hot path (writer thread only: no locks, malloc allowed).
 *
 * The file is read with plain read(2) and every offset and size in it is
 * checked before use: a module replaced on disk after it was loaded, or a
 * corrupt one, only means "no name".
 */
#include "core.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SYMTAB_MAX (256u << 20) /* larger tables are not read */

struct sym {
	uint64_t value, size;
	uint32_t name; /* offset in strtab */
};

struct module {
	char *path;
	uintptr_t base;
	int is_exec; /* ET_EXEC: values are absolute addresses */
	struct sym *syms;
	size_t nsyms;
	char *strtab;
	size_t strtab_len;
	struct module *next;
};

static struct module *modules;

static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	while (done < len) {
		ssize_t r = pread(fd, (char *)buf + done, len - done,
		                  (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;
	return x->value < y->value ? -1 : x->value > y->value;
}

/* Loads the function symbols of a 64-bit ELF file into m; leaves m empty
 * when the file has no .symtab or does not look right. */
static void load(struct module *m, int fd)
{
	struct stat st;
	Elf64_Ehdr eh;
	if (fstat(fd, &st) < 0 || read_at(fd, &eh, sizeof(eh), 0) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
	    eh.e_shnum > 4096 ||
	    eh.e_shoff + (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) >
	            (uint64_t)st.st_size)
		return;
	m->is_exec = eh.e_type == ET_EXEC;
	Elf64_Shdr *sh = malloc(eh.e_shnum * sizeof(Elf64_Shdr));
	if (!sh || read_at(fd, sh, eh.e_shnum * sizeof(Elf64_Shdr), eh.e_shoff))
		goto out;
	for (unsigned i = 0; i < eh.e_shnum; i++) {
		if (sh[i].sh_type != SHT_SYMTAB)
			continue;
		const Elf64_Shdr *sy = &sh[i];
		if (sy->sh_link >= eh.e_shnum ||
		    sy->sh_entsize != sizeof(Elf64_Sym))
			break;
		const Elf64_Shdr *st_sh = &sh[sy->sh_link];
		if (sy->sh_size > SYMTAB_MAX || st_sh->sh_size > SYMTAB_MAX ||
		    sy->sh_offset + sy->sh_size > (uint64_t)st.st_size ||
		    st_sh->sh_offset + st_sh->sh_size > (uint64_t)st.st_size)
			break;
		size_t n = sy->sh_size / sizeof(Elf64_Sym);
		Elf64_Sym *raw = malloc(sy->sh_size ? sy->sh_size : 1);
		m->strtab = malloc(st_sh->sh_size + 1);
		m->syms = malloc((n ? n : 1) * sizeof(struct sym));
		if (!raw || !m->strtab || !m->syms ||
		    read_at(fd, raw, sy->sh_size, sy->sh_offset) ||
		    read_at(fd, m->strtab, st_sh->sh_size, st_sh->sh_offset)) {
			free(raw);
			free(m->strtab);
			free(m->syms);
			m->strtab = NULL;
			m->syms = NULL;
			break;
		}
		m->strtab[st_sh->sh_size] = 0;
		m->strtab_len = st_sh->sh_size;
		for (size_t k = 0; k < n; k++) {
			unsigned type = ELF64_ST_TYPE(raw[k].st_info);
			if ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
			    raw[k].st_shndx == SHN_UNDEF || !raw[k].st_value ||
			    raw[k].st_name >= m->strtab_len)
				continue;
			m->syms[m->nsyms++] =
			        (struct sym){raw[k].st_value, raw[k].st_size,
			                     raw[k].st_name};
		}
		free(raw);
		qsort(m->syms, m->nsyms, sizeof(struct sym), cmp_sym);
		break;
	}
out:
	free(sh);
}

static struct module *module_for(const char *path, uintptr_t base)
{
	for (struct module *m = modules; m; m = m->next)
		if (m->base == base && !strcmp(m->path, path))
			return m;
	struct module *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->path = strdup(path);
	m->base = base;
	if (!m->path) {
		free(m);
		return NULL;
	}
	/* The main program may be named by a relative argv[0]; its file is
	 * always reachable as /proc/self/exe. */
	/* Registered (fds.c): a program closing every fd meanwhile must not
	 * have its new file closed by us. */
	struct vrt_fd fd = vrt_fds_open(path, O_RDONLY, 0);
	if (fd.fd < 0 && path[0] != '/')
		fd = vrt_fds_open("/proc/self/exe", O_RDONLY, 0);
	if (fd.fd >= 0) {
		load(m, fd.fd);
		vrt_fds_close(&fd);
	}
	m->next = modules;
	modules = m;
	return m;
}

const char *vrt_symbols_lookup(const char *path, uintptr_t base, uintptr_t ip,
                               uint64_t *offset)
{
	if (!path || !*path)
		return NULL;
	struct module *m = module_for(path, base);
	if (!m || !m->nsyms)
		return NULL;
	uint64_t rel = m->is_exec ? ip : ip - base;
	size_t lo = 0, hi = m->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->syms[mid].value <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct sym *s = &m->syms[lo - 1];
	if (s->size && rel >= s->value + s->size)
		return NULL;
	*offset = rel - s->value;
	return m->strtab + s->name;
}
