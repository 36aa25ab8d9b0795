/*
 * elfsym.c — dynamic symbols of an ELF64 file (elfsym.h). The file is
 * mapped read-only; the section headers give .dynsym, its string table
 * and .gnu.version. Lookups scan .dynsym (a few thousand entries at most
 * for the libraries read), no hash tables needed.
 */
#include "elfsym.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct vrt_elf {
	const uint8_t *map;
	size_t len;
	const Elf64_Ehdr *eh;
	const Elf64_Sym *sym;
	size_t nsym;
	const char *str;
	size_t strlen;
	const uint16_t *versym; /* NULL: none */
	size_t nversym;
};

static int in_file(const struct vrt_elf *e, uint64_t off, uint64_t size)
{
	return off <= e->len && size <= e->len - off;
}

void vrt_elfsym_close(struct vrt_elf *e)
{
	if (!e)
		return;
	if (e->map)
		munmap((void *)e->map, e->len);
	free(e);
}

int vrt_elfsym_open(const char *path, struct vrt_elf **out, char *why,
                    size_t len)
{
	struct stat st;
	struct vrt_elf *e = calloc(1, sizeof(*e));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	*out = NULL;
	if (!e || fd < 0 || fstat(fd, &st) < 0) {
		snprintf(why, len, "%s: %s", path, strerror(errno));
		goto bad;
	}
	if ((uint64_t)st.st_size < sizeof(Elf64_Ehdr)) {
		snprintf(why, len, "%s: not an ELF file", path);
		goto bad;
	}
	e->len = (size_t)st.st_size;
	e->map = mmap(NULL, e->len, PROT_READ, MAP_PRIVATE, fd, 0);
	if (e->map == MAP_FAILED) {
		e->map = NULL;
		snprintf(why, len, "%s: %s", path, strerror(errno));
		goto bad;
	}
	close(fd);
	fd = -1;
	e->eh = (const Elf64_Ehdr *)e->map;
	if (memcmp(e->eh->e_ident, ELFMAG, SELFMAG) != 0) {
		snprintf(why, len, "%s: not an ELF file", path);
		goto bad;
	}
	if (e->eh->e_ident[EI_CLASS] != ELFCLASS64) {
		/* 32-bit: only its machine is asked for. */
		*out = e;
		return 0;
	}
	const Elf64_Ehdr *h = e->eh;
	if (h->e_shentsize != sizeof(Elf64_Shdr) ||
	    !in_file(e, h->e_shoff, (uint64_t)h->e_shnum * sizeof(Elf64_Shdr))) {
		*out = e; /* no section headers: machine and loads only */
		return 0;
	}
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(e->map + h->e_shoff);
	for (unsigned i = 0; i < h->e_shnum; i++) {
		if (sh[i].sh_type == SHT_DYNSYM &&
		    in_file(e, sh[i].sh_offset, sh[i].sh_size) &&
		    sh[i].sh_link < h->e_shnum &&
		    in_file(e, sh[sh[i].sh_link].sh_offset,
		            sh[sh[i].sh_link].sh_size)) {
			e->sym = (const Elf64_Sym *)(e->map + sh[i].sh_offset);
			e->nsym = sh[i].sh_size / sizeof(Elf64_Sym);
			e->str = (const char *)(e->map +
			                        sh[sh[i].sh_link].sh_offset);
			e->strlen = sh[sh[i].sh_link].sh_size;
		} else if (sh[i].sh_type == SHT_GNU_versym &&
		           in_file(e, sh[i].sh_offset, sh[i].sh_size)) {
			e->versym = (const uint16_t *)(e->map +
			                               sh[i].sh_offset);
			e->nversym = sh[i].sh_size / sizeof(uint16_t);
		}
	}
	*out = e;
	return 0;
bad:
	if (fd >= 0)
		close(fd);
	vrt_elfsym_close(e);
	return -1;
}

int vrt_elfsym_machine(const struct vrt_elf *e, int *is64)
{
	*is64 = e->eh->e_ident[EI_CLASS] == ELFCLASS64;
	return e->eh->e_machine;
}

int vrt_elfsym_first_load(const struct vrt_elf *e, uint64_t *vaddr,
                          uint64_t *offset)
{
	const Elf64_Ehdr *h = e->eh;
	if (h->e_ident[EI_CLASS] != ELFCLASS64 ||
	    h->e_phentsize != sizeof(Elf64_Phdr) ||
	    !in_file(e, h->e_phoff, (uint64_t)h->e_phnum * sizeof(Elf64_Phdr)))
		return -1;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(e->map + h->e_phoff);
	for (unsigned i = 0; i < h->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		uint64_t align = ph[i].p_align > 1 ? ph[i].p_align : 4096;
		if (align > 4096)
			align = 4096; /* mappings are page-granular */
		*vaddr = ph[i].p_vaddr & ~(align - 1);
		*offset = ph[i].p_offset & ~(align - 1);
		return 0;
	}
	return -1;
}

int vrt_elfsym_find(const struct vrt_elf *e, const char *name, uint64_t *value,
                    uint64_t *size, int *ifunc)
{
	int found = 0;
	for (size_t i = 1; e->sym && i < e->nsym; i++) {
		const Elf64_Sym *s = &e->sym[i];
		int type = ELF64_ST_TYPE(s->st_info);
		if (s->st_shndx == SHN_UNDEF || s->st_name >= e->strlen ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC &&
		     type != STT_OBJECT))
			continue;
		const char *n = e->str + s->st_name;
		size_t left = e->strlen - s->st_name;
		if (strnlen(n, left) == left || strcmp(n, name) != 0)
			continue;
		/* A hidden version (name@V, not the default) only when
		 * nothing better is found. */
		int hidden = i < e->nversym && (e->versym[i] & 0x8000);
		if (found && hidden)
			continue;
		*value = s->st_value;
		*size = s->st_size;
		*ifunc = type == STT_GNU_IFUNC;
		found = 1;
		if (!hidden)
			break;
	}
	return found ? 0 : -1;
}
