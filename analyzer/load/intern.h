/*
 * intern.h — the tables a load shares across its files (load.h's struct
 * vrt_trace): interned strings, frames and stacks, phase names, hosts, and
 * the identity and names of devices. load.c reads records and calls in
 * here to turn a file's ids and ordinals into the trace's indexes; nothing
 * here reads a file or calls back into load.c.
 *
 * Strings, frames and stacks are found by value in hash tables kept in
 * t->intern, which points at a struct vrt_intern (the loader's state
 * starts with one, so the one opaque pointer of struct vrt_trace serves
 * both). Entries are never removed: an index, once given, keeps its
 * meaning for the life of the load.
 *
 * Single-threaded (one load, one thread), no globals. Functions returning
 * int give 0, or -1 when out of memory; the interners give index 0 and set
 * *oom instead, so a caller may intern several fields and check once.
 */
#ifndef VRT_INTERN_H
#define VRT_INTERN_H

#include <stddef.h>
#include <stdint.h>

#include "load.h"

/* Open addressing, linear probing; a slot holds a hash and an index + 1
 * (0 = empty). */
struct vrt_intern_tab {
	struct vrt_intern_slot {
		uint64_t h;
		uint32_t v;
	} * s;
	size_t cap, n;
};

struct vrt_intern {
	struct vrt_intern_tab strs, frames, stacks;
};

/* A 64-bit finalizer (splitmix64): spreads ids and hashes over a table's
 * slots. Inline: the loader's per-file id tables hash with it too. */
static inline uint64_t vrt_intern_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* Creates t's tables with their fixed first entries (strs[0] NULL,
 * frames[0] the unknown frame, stacks[0] the empty path, the fixed phase
 * names); t->intern must point at a zeroed struct vrt_intern. Does nothing
 * when they exist. */
int vrt_intern_init(struct vrt_trace *t);

/* Releases the string, frame, stack and phase tables of t and, when
 * t->intern is set, the hash tables in it (not t->intern itself). */
void vrt_intern_free(struct vrt_trace *t);

/* Index (> 0) of the NUL-terminated string s in t->strs, added when new;
 * 0 with *oom set when out of memory. */
uint32_t vrt_intern_str(struct vrt_trace *t, const char *s, int *oom);

/* The same for n bytes of a record (not NUL-terminated; the string ends
 * at an embedded NUL, as any C reader of it would). */
uint32_t vrt_intern_bytes(struct vrt_trace *t, const uint8_t *p, size_t n,
                          int *oom);

/* Index of the frame equal to *f in every field, added when new; 0 (the
 * unknown frame) with *oom set when out of memory. */
uint32_t vrt_intern_frame(struct vrt_trace *t, const struct vrt_frame *f,
                          int *oom);

/* Index of the stack (parent, frame), added when new with depth one more
 * than its parent's; parent must be an index of t->stacks. 0 (the empty
 * path) with *oom set when out of memory. */
uint32_t vrt_intern_stack(struct vrt_trace *t, uint32_t parent,
                          uint32_t frame, int *oom);

/* The phase index named name, added to t->phases when new (the last index,
 * "other", once the table is full). -1 when out of memory. */
int vrt_intern_phase(struct vrt_trace *t, const char *name);

/* Index of host in t->hosts, added when new, into *idx. */
int vrt_intern_host(struct vrt_trace *t, const char *host, unsigned *idx);

/* Index of host in t->hosts, or t->nhosts when it is not there. */
unsigned vrt_intern_host_find(const struct vrt_trace *t, const char *host);

/* A DEVICE record's UUID bytes as text into out: 16 bytes as
 * "GPU-xxxxxxxx-xxxx-..." for CUDA (without "GPU-" otherwise), any other
 * length as plain hex, nothing for none. */
void vrt_intern_format_uuid(char *out, size_t outsz, int vendor,
                            const uint8_t *u, size_t n);

/* Index in t->devices of the device a process on host means: by uuid
 * (formatted as above) when it is not "", else by (host, vendor, ordinal)
 * among devices without one (vendor 0, unknown, matches any). Created
 * unnamed when new; -1 when out of memory. */
int32_t vrt_intern_device(struct vrt_trace *t, const char *host, int vendor,
                          int64_t ordinal, const char *uuid);

/* What process pr's DEVICE record says of device g: the first record names
 * it (name, vendor, total bytes, pid); a later one that disagrees (another
 * name, capacity or host for the same UUID) fills its conflict line.
 * -1 when out of memory. */
int vrt_intern_device_name(struct vrt_trace *t, int32_t g,
                           const struct vrt_process *pr, int vendor,
                           uint64_t total, const uint8_t *name,
                           size_t nname);

/* Orders t->devices by (host, vendor, ordinal, UUID); t->device_remap
 * says where each moved (left NULL when none did). -1 when out of
 * memory (t unchanged). */
int vrt_intern_sort_devices(struct vrt_trace *t);

#endif /* VRT_INTERN_H */
