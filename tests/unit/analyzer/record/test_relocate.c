/*
 * relocate.c, the prologue relocator of `vramtrace attach`: what it moves,
 * how it re-aims relative branches and RIP-relative operands, what it
 * refuses and why; and a function hooked for real in this process (its
 * entry jumping to a wrapper that calls the trampoline). TAP; skipped when
 * libZydis is not installed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "record/relocate.h"
#include "../tap.h"

#define E 0x7f0000001000ull /* where the code "is" */
#define T 0x7f0000201000ull /* where its trampoline goes */

static const uint8_t endbr[4] = {0xf3, 0x0f, 0x1e, 0xfa};

static int32_t rd32(const uint8_t *p)
{
	int32_t v;
	memcpy(&v, p, 4);
	return v;
}

static void structure(void)
{
	struct vrt_reloc r;
	/* endbr64; push rbp; mov rbp,rsp; sub rsp,0x20; ... ret */
	uint8_t f[64] = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5,
	                 0x48, 0x83, 0xec, 0x20, 0x90, 0x90, 0xc9, 0xc3};
	ok(vrt_relocate(f, sizeof(f), E, 16, T, T + 96, &r) == 0,
	   "a plain prologue moves");
	EQ(r.skip, 4, "the endbr64 stays");
	EQ(r.moved, 8, "whole instructions, at least 5 bytes (1 + 3 + 4)");
	ok(!memcmp(r.tramp, endbr, 4), "the trampoline starts with endbr64");
	ok(!memcmp(r.tramp + 4, f + 4, 8), "the moved bytes, as they were");
	ok(r.tramp[12] == 0xe9 &&
	           (uint64_t)(T + 17 + rd32(r.tramp + 13)) == E + 12,
	   "then a jump back after them");
	ok(r.patch[0] == 0xe9 &&
	           (uint64_t)(E + 4 + 5 + rd32(r.patch + 1)) == T + 96,
	   "the entry jumps to the relay");
	ok(r.patch[5] == 0xcc && r.patch[7] == 0xcc,
	   "the rest of the replaced bytes are int3");
}

static void rip_relative(void)
{
	struct vrt_reloc r;
	/* endbr64; mov eax,[rip+0x100]; ret */
	uint8_t f[64] = {0xf3, 0x0f, 0x1e, 0xfa, 0x8b, 0x05, 0x00, 0x01,
	                 0x00, 0x00, 0xc3};
	ok(vrt_relocate(f, sizeof(f), E, 11, T, T + 96, &r) == 0,
	   "a RIP-relative first instruction moves");
	uint64_t target = E + 10 + 0x100;
	EQ(T + 4 + 6 + (int64_t)rd32(r.tramp + 6), target,
	   "its displacement reaches the same data from the trampoline");
	/* endbr64; movzx eax, byte [rip-7] (its own first byte); jmp */
	uint8_t g[64] = {0xf3, 0x0f, 0x1e, 0xfa, 0x0f, 0xb6, 0x05, 0xf9,
	                 0xff, 0xff, 0xff, 0xe9, 0, 0, 0, 0};
	ok(vrt_relocate(g, sizeof(g), E, 16, T, T + 96, &r) < 0 &&
	           strstr(r.why, "reads the bytes"),
	   "one that reads the bytes the jump replaces is refused (%s)",
	   r.why);
	/* without a trampoline address: checked as far as it can be */
	ok(vrt_relocate(f, sizeof(f), E, 11, 0, 0, &r) == 0,
	   "the check without addresses accepts it too");
}

static void branches(void)
{
	struct vrt_reloc r;
	/* endbr64; test edi,edi; je +0x20; call rel32 +0x100; ret */
	uint8_t f[64] = {0xf3, 0x0f, 0x1e, 0xfa, 0x85, 0xff, 0x74, 0x20,
	                 0xe8, 0x00, 0x01, 0x00, 0x00, 0xc3};
	ok(vrt_relocate(f, sizeof(f), E, 14, T, T + 96, &r) == 0,
	   "a short conditional jump and a call move");
	EQ(r.moved, 9, "test, je and call (2 + 2 + 5)");
	ok(r.tramp[6] == 0x0f && r.tramp[7] == 0x84 &&
	           (uint64_t)(T + 12 + rd32(r.tramp + 8)) == E + 8 + 0x20,
	   "je widened to 32 bits, to the same target");
	ok(r.tramp[12] == 0xe8 &&
	           (uint64_t)(T + 17 + rd32(r.tramp + 13)) == E + 13 + 0x100,
	   "the call re-aimed at the same function");
	/* a trampoline out of 32-bit reach: branches through absolute
	 * jumps (the relay itself stays near) */
	uint64_t far = E + (8ull << 30);
	ok(vrt_relocate(f, sizeof(f), E, 14, far, E + 4096, &r) == 0,
	   "a trampoline out of reach still works");
	uint64_t to;
	memcpy(&to, r.tramp + 4 + 2 + 2 + 14 + 8, 8);
	ok(r.tramp[6] == 0x75 && r.tramp[7] == 14 && r.tramp[8] == 0xff &&
	           r.tramp[9] == 0x25,
	   "je becomes jne over an absolute jump");
	ok(r.tramp[22] == 0xff && r.tramp[23] == 0x15 && to == E + 13 + 0x100,
	   "the call goes through an absolute pointer to the same function");
	/* endbr64; xor eax,eax; L: inc eax; cmp eax,3; jne L; ret */
	uint8_t g[64] = {0xf3, 0x0f, 0x1e, 0xfa, 0x31, 0xc0, 0xff, 0xc0,
	                 0x83, 0xf8, 0x03, 0x75, 0xf9, 0xc3};
	ok(vrt_relocate(g, sizeof(g), E, 14, T, T + 96, &r) < 0 &&
	           strstr(r.why, "branch"),
	   "a branch back into the moved bytes is refused (%s)", r.why);
	/* endbr64; loop -2; ... */
	uint8_t h[64] = {0xf3, 0x0f, 0x1e, 0xfa, 0xe2, 0x10, 0x90, 0x90,
	                 0x90, 0x90, 0xc3};
	ok(vrt_relocate(h, sizeof(h), E, 11, T, T + 96, &r) < 0 &&
	           strstr(r.why, "8-bit"),
	   "loop cannot move (%s)", r.why);
}

static void too_short(void)
{
	struct vrt_reloc r;
	/* endbr64; xor eax,eax; ret */
	uint8_t f[64] = {0xf3, 0x0f, 0x1e, 0xfa, 0x31, 0xc0, 0xc3};
	ok(vrt_relocate(f, sizeof(f), E, 7, T, T + 96, &r) < 0 &&
	           strstr(r.why, "shorter"),
	   "a function shorter than the jump is refused (%s)", r.why);
	ok(vrt_relocate(f, sizeof(f), E, 0, T, T + 96, &r) < 0 &&
	           strstr(r.why, "3 bytes in"),
	   "and so is one that returns before 5 bytes, its size unknown "
	   "(%s)",
	   r.why);
}

/* ---- a function hooked for real ------------------------------------------ */

static int (*trampoline)(int);

static int wrapper(int x)
{
	return trampoline(x) + 100;
}

static void hooked(void)
{
	struct vrt_reloc r;
	uint8_t *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
	                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED) {
		ok(1, "# SKIP no executable page here");
		return;
	}
	/* f(x): endbr64; mov eax,[rip+8]; add eax,edi; ret; ...; .long 41 */
	static const uint8_t f[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x8b, 0x05, 0x08,
	                            0x00, 0x00, 0x00, 0x01, 0xf8, 0xc3, 0x90,
	                            0x90, 0x90, 0x90, 0x90, 0x29, 0x00, 0x00,
	                            0x00};
	uint8_t *fn = page, *tramp = page + 1024, *relay = page + 2048;
	memcpy(fn, f, sizeof(f));
	int (*call)(int) = (int (*)(int))(uintptr_t)fn;
	EQ(call(1), 42, "the function before: 41 + x");
	/* the relay: jmp *0(%rip) to the wrapper */
	relay[0] = 0xff;
	relay[1] = 0x25;
	memset(relay + 2, 0, 4);
	uint64_t w = (uint64_t)(uintptr_t)wrapper;
	memcpy(relay + 6, &w, 8);
	int rc = vrt_relocate(fn, sizeof(f), (uint64_t)(uintptr_t)fn,
	                      sizeof(f), (uint64_t)(uintptr_t)tramp,
	                      (uint64_t)(uintptr_t)relay, &r);
	ok(rc == 0, "relocated (%s)", rc ? r.why : "");
	if (rc)
		return;
	memcpy(tramp, r.tramp, r.tramp_len);
	trampoline = (int (*)(int))(uintptr_t)tramp;
	EQ(trampoline(1), 42, "the trampoline alone is the function");
	memcpy(fn + r.skip, r.patch, r.moved);
	EQ(call(1), 142, "hooked: the entry runs the wrapper, which calls "
	                 "the trampoline");
	munmap(page, 4096);
}

int main(void)
{
	char why[256];
	if (vrt_relocate_init(why, sizeof(why))) {
		printf("1..0 # SKIP %s\n", why);
		return 0;
	}
	structure();
	rip_relative();
	branches();
	too_short();
	hooked();
	printf("1..%d\n", ntests);
	return nfailed ? 1 : 0;
}
