/*
 * relocate.h — moving the first instructions of a function into a
 * trampoline, so that a 5-byte jump can take their place (`vramtrace
 * attach`'s inline hooks). x86-64; instructions are decoded with Zydis
 * (libZydis.so.4, loaded on first use: only attach needs it).
 *
 * What moves: whole instructions from the entry, after an endbr64 (which
 * stays in place: an indirect call still lands on it), until at least 5
 * bytes. Relative branches and calls are re-aimed (widened to 32 bits, or
 * through an absolute jump when out of reach), RIP-relative operands get
 * their displacement fixed. Refused, with the reason: a function shorter
 * than the jump (its size, or a return, jump or trap before 5 bytes); an
 * instruction that cannot be decoded or moved (loop, jrcxz, xbegin: 8-bit
 * relative only); a RIP-relative operand that reads the bytes the jump
 * replaces, or that the trampoline cannot reach; a branch anywhere in the
 * function into the middle of the moved bytes.
 *
 * Pure apart from the library load; thread-safe after vrt_relocate_init.
 */
#ifndef VRT_RELOCATE_H
#define VRT_RELOCATE_H

#include <stddef.h>
#include <stdint.h>

#include "attach_proto.h"

struct vrt_reloc {
	uint32_t skip;  /* bytes left at the entry (an endbr64: 4) */
	uint32_t moved; /* bytes moved (whole instructions, >= 5) */
	uint8_t tramp[VRT_ATTACH_TRAMP_MAX]; /* endbr64, the moved code, a
	                                      * jump back */
	uint32_t tramp_len;
	uint8_t patch[VRT_ATTACH_ORIG_MAX]; /* for [entry + skip, + moved):
	                                     * jmp rel32 to the relay, int3 */
	char why[160];
};

/* Loads the decoder once: 0, or -1 with the reason in why. */
int vrt_relocate_init(char *why, size_t len);

/* Plans the hook of the function at entry whose bytes are code[0..len)
 * (its first bytes at least; the whole function when size is known, to
 * look for branches into the moved bytes); size is its symbol's size, 0
 * when unknown. tramp_at: where the trampoline will live, relay: where the
 * entry's jump goes; with tramp_at 0 only what does not depend on them is
 * checked (before anything is loaded into the process). 0, or -1 refused
 * with out->why. */
int vrt_relocate(const uint8_t *code, size_t len, uint64_t entry,
                 uint64_t size, uint64_t tramp_at, uint64_t relay,
                 struct vrt_reloc *out);

#endif /* VRT_RELOCATE_H */
