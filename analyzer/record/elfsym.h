/*
 * elfsym.h — the dynamic symbols of an ELF file on disk, for `vramtrace
 * attach`: where dlopen is in the target's libc, where the driver's entry
 * points are and how long each is (to check their first instructions
 * before touching the process), and the agent's entry.
 *
 * Input is untrusted: every offset is bounds-checked. Not thread-safe per
 * handle; any number of handles.
 */
#ifndef VRT_ELFSYM_H
#define VRT_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

struct vrt_elf;

/* Opens (maps) an ELF file; 0 and *out, or -1 with the reason in why. */
int vrt_elfsym_open(const char *path, struct vrt_elf **out, char *why,
                    size_t len);
void vrt_elfsym_close(struct vrt_elf *e);

/* e_machine (EM_X86_64...) and whether the file is 64-bit. */
int vrt_elfsym_machine(const struct vrt_elf *e, int *is64);

/* The lowest PT_LOAD's virtual address and file offset, page-aligned down:
 * a mapping of the file at offset `offset` that starts at address A puts
 * the file's address 0 at A - vaddr. -1 when there is none. */
int vrt_elfsym_first_load(const struct vrt_elf *e, uint64_t *vaddr,
                          uint64_t *offset);

/* The definition of the dynamic symbol name: its value and size; *ifunc
 * set when it is an indirect function (the value is its resolver). Among
 * several versions the default one (name@@V) wins. 0, or -1 when the
 * file does not define it. */
int vrt_elfsym_find(const struct vrt_elf *e, const char *name, uint64_t *value,
                    uint64_t *size, int *ifunc);

#endif /* VRT_ELFSYM_H */
