/*
 * relocate.c — the prologue relocator of `vramtrace attach` (relocate.h),
 * over Zydis's decoder. libZydis is opened with dlopen on first use, so the
 * `vramtrace` command needs nothing beyond glibc until it attaches.
 */
#include "relocate.h"

#include <Zydis/Zydis.h>

#include "base/paths.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define JMP_LEN  5
#define ABS_JMP  14 /* jmp *0(%rip); .quad target */
#define SCAN_MAX 4096

static struct {
	int loaded;
	__typeof__(&ZydisDecoderInit) init;
	__typeof__(&ZydisDecoderDecodeFull) decode;
	__typeof__(&ZydisCalcAbsoluteAddress) absolute;
	ZydisDecoder dec;
} zy;

int vrt_relocate_init(char *why, size_t len)
{
	static const char *const names[] = {"libZydis.so.4.0", "libZydis.so.4",
	                                    "libZydis.so", NULL};
	void *h = NULL;
	char self[PATH_MAX], path[PATH_MAX + 64];
	if (zy.loaded)
		return 0;
	for (int i = 0; names[i] && !h; i++)
		h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	/* A bundle carries it beside its libraries (docs/deploy.md). */
	if (!h && !vrt_paths_self_dir(self)) {
		static const char *const rel[] = {"../lib/vramtrace", "../lib"};
		for (int i = 0; i < 2 && !h; i++) {
			snprintf(path, sizeof(path), "%s/%s/%s", self, rel[i],
			         names[0]);
			h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		}
	}
	if (!h) {
		snprintf(why, len,
		         "the Zydis disassembler library (libZydis.so.4.0) is "
		         "not installed: attach needs it to move the first "
		         "instructions of the functions it hooks (Debian: "
		         "apt-get install libzydis4)");
		return -1;
	}
	zy.init = (__typeof__(zy.init))dlsym(h, "ZydisDecoderInit");
	zy.decode = (__typeof__(zy.decode))dlsym(h, "ZydisDecoderDecodeFull");
	zy.absolute =
	        (__typeof__(zy.absolute))dlsym(h, "ZydisCalcAbsoluteAddress");
	if (!zy.init || !zy.decode || !zy.absolute ||
	    !ZYAN_SUCCESS(zy.init(&zy.dec, ZYDIS_MACHINE_MODE_LONG_64,
	                          ZYDIS_STACK_WIDTH_64))) {
		snprintf(why, len, "libZydis: not the version 4 API");
		return -1;
	}
	zy.loaded = 1;
	return 0;
}

static int refuse(struct vrt_reloc *out, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static int refuse(struct vrt_reloc *out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out->why, sizeof(out->why), fmt, ap);
	va_end(ap);
	return -1;
}

static int fits32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

struct insn {
	ZydisDecodedInstruction i;
	ZydisDecodedOperand op[ZYDIS_MAX_OPERAND_COUNT];
	uint64_t at;
};

static int decode(const uint8_t *p, size_t len, uint64_t at, struct insn *x)
{
	x->at = at;
	return ZYAN_SUCCESS(zy.decode(&zy.dec, p, len, &x->i, x->op)) ? 0 : -1;
}

/* The absolute target of a relative branch or call; 0 when x is none. */
static int branch_target(const struct insn *x, uint64_t *to)
{
	if (!(x->i.attributes & ZYDIS_ATTRIB_IS_RELATIVE))
		return 0;
	for (unsigned k = 0; k < x->i.operand_count_visible; k++)
		if (x->op[k].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
		    x->op[k].imm.is_relative)
			return ZYAN_SUCCESS(zy.absolute(&x->i, &x->op[k], x->at,
			                                to));
	return 0;
}

/* The RIP-relative memory operand's absolute address; 0 when none. */
static int rip_operand(const struct insn *x, uint64_t *to)
{
	for (unsigned k = 0; k < x->i.operand_count; k++)
		if (x->op[k].type == ZYDIS_OPERAND_TYPE_MEMORY &&
		    x->op[k].mem.base == ZYDIS_REGISTER_RIP)
			return ZYAN_SUCCESS(zy.absolute(&x->i, &x->op[k], x->at,
			                                to));
	return 0;
}

static int is_end(const struct insn *x)
{
	switch (x->i.mnemonic) {
	case ZYDIS_MNEMONIC_RET:
	case ZYDIS_MNEMONIC_JMP:
	case ZYDIS_MNEMONIC_INT3:
	case ZYDIS_MNEMONIC_UD2:
	case ZYDIS_MNEMONIC_HLT:
		return 1;
	default:
		return 0;
	}
}

static uint32_t put_jmp(uint8_t *p, uint64_t at, uint64_t to)
{
	int64_t d = (int64_t)(to - (at + JMP_LEN));
	if (fits32(d)) {
		int32_t d32 = (int32_t)d;
		p[0] = 0xe9;
		memcpy(p + 1, &d32, 4);
		return JMP_LEN;
	}
	static const uint8_t op[6] = {0xff, 0x25, 0, 0, 0, 0};
	memcpy(p, op, 6);
	memcpy(p + 6, &to, 8);
	return ABS_JMP;
}

/* Emits x, moved from x->at to `at`, into p (room for 32 bytes): its
 * length, or 0 refused. src: its bytes. */
static uint32_t emit(const struct insn *x, const uint8_t *src, uint64_t at,
                     uint64_t lo, uint64_t hi, uint8_t *p,
                     struct vrt_reloc *out)
{
	uint32_t n = x->i.length;
	uint64_t to;
	switch (x->i.mnemonic) {
	case ZYDIS_MNEMONIC_JRCXZ:
	case ZYDIS_MNEMONIC_JECXZ:
	case ZYDIS_MNEMONIC_LOOP:
	case ZYDIS_MNEMONIC_LOOPE:
	case ZYDIS_MNEMONIC_LOOPNE:
	case ZYDIS_MNEMONIC_XBEGIN:
		refuse(out, "its instruction at +%llu (%s) has an 8-bit "
		            "relative target that cannot be moved",
		       (unsigned long long)(x->at - lo + out->skip),
		       x->i.mnemonic == ZYDIS_MNEMONIC_XBEGIN ? "xbegin"
		                                              : "loop/jrcxz");
		return 0;
	default:
		break;
	}
	if (branch_target(x, &to)) {
		if (to > lo && to < hi) {
			refuse(out, "its first bytes hold a branch back into "
			            "them");
			return 0;
		}
		if (x->i.mnemonic == ZYDIS_MNEMONIC_JMP)
			return put_jmp(p, at, to);
		if (x->i.mnemonic == ZYDIS_MNEMONIC_CALL) {
			int64_t d = (int64_t)(to - (at + 5));
			if (fits32(d)) {
				int32_t d32 = (int32_t)d;
				p[0] = 0xe8;
				memcpy(p + 1, &d32, 4);
				return 5;
			}
			/* call *2(%rip); jmp +8; .quad target */
			static const uint8_t c[8] = {0xff, 0x15, 2, 0, 0, 0,
			                             0xeb, 8};
			memcpy(p, c, 8);
			memcpy(p + 8, &to, 8);
			return 16;
		}
		if (x->i.meta.category == ZYDIS_CATEGORY_COND_BR) {
			unsigned cc = x->i.opcode & 0x0f;
			int64_t d = (int64_t)(to - (at + 6));
			if (fits32(d)) {
				int32_t d32 = (int32_t)d;
				p[0] = 0x0f;
				p[1] = (uint8_t)(0x80 | cc);
				memcpy(p + 2, &d32, 4);
				return 6;
			}
			/* the opposite condition over an absolute jump */
			p[0] = (uint8_t)(0x70 | (cc ^ 1));
			p[1] = ABS_JMP;
			return 2 + put_jmp(p + 2, at + 2, to);
		}
		refuse(out, "its instruction at +%llu is a relative branch "
		            "that cannot be moved",
		       (unsigned long long)(x->at - lo + out->skip));
		return 0;
	}
	memcpy(p, src, n);
	if (rip_operand(x, &to)) {
		if (to >= lo && to < hi) {
			refuse(out, "its first instruction reads the bytes the "
			            "jump would replace (RIP-relative)");
			return 0;
		}
		int64_t d = (int64_t)(to - (at + n));
		if (x->i.raw.disp.size != 32 || !fits32(d)) {
			refuse(out, "a RIP-relative operand at +%llu cannot "
			            "reach its data from the trampoline",
			       (unsigned long long)(x->at - lo + out->skip));
			return 0;
		}
		int32_t d32 = (int32_t)d;
		memcpy(p + x->i.raw.disp.offset, &d32, 4);
	}
	return n;
}

static const uint8_t endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};

int vrt_relocate(const uint8_t *code, size_t len, uint64_t entry,
                 uint64_t size, uint64_t tramp_at, uint64_t relay,
                 struct vrt_reloc *out)
{
	struct insn moved[VRT_ATTACH_ORIG_MAX];
	int nmoved = 0;
	memset(out, 0, sizeof(*out));
	if (!zy.loaded)
		return refuse(out, "no decoder");
	out->skip = len >= 4 && !memcmp(code, endbr64, 4) ? 4 : 0;
	if (size && size < out->skip + JMP_LEN)
		return refuse(out, "it is shorter (%llu bytes) than the jump "
		                   "that would replace its first ones",
		              (unsigned long long)size);
	uint32_t pos = out->skip;
	while (pos - out->skip < JMP_LEN) {
		struct insn *x = &moved[nmoved];
		if (pos >= len || decode(code + pos, len - pos, entry + pos, x))
			return refuse(out, "its instruction at +%u cannot be "
			                   "decoded",
			              pos);
		if (size && pos + x->i.length > size)
			return refuse(out, "it is shorter (%llu bytes) than the "
			                   "jump that would replace its first "
			                   "ones",
			              (unsigned long long)size);
		pos += x->i.length;
		nmoved++;
		if (is_end(x) && pos - out->skip < JMP_LEN)
			return refuse(out, "it ends (or leaves) %u bytes in, "
			                   "before the jump's 5",
			              pos - out->skip);
	}
	out->moved = pos - out->skip;
	if (out->moved > VRT_ATTACH_ORIG_MAX)
		return refuse(out, "its first instructions are too long");
	uint64_t lo = entry + out->skip, hi = lo + out->moved;
	/* Nothing in the function may branch into the middle of what
	 * moves: it would land inside the jump. */
	size_t end = size ? (size < len ? size : len) : len;
	if (end > SCAN_MAX)
		end = SCAN_MAX;
	for (size_t at = out->skip; at < end;) {
		struct insn x;
		uint64_t to;
		if (decode(code + at, end - at, entry + at, &x))
			break; /* data or padding: the rest is not code we
			        * can read */
		if (branch_target(&x, &to) && to > lo && to < hi)
			return refuse(out, "a branch at +%zu jumps into its "
			                   "first %u bytes, which the jump "
			                   "replaces",
			              at, out->moved);
		at += x.i.length;
	}
	/* The trampoline: endbr64 (an indirect call lands on it), the moved
	 * instructions, a jump back. Checked even without an address
	 * (placed as if next to the function) for what does not depend on
	 * it. */
	uint64_t t0 = tramp_at ? tramp_at : entry;
	uint32_t n = 0;
	memcpy(out->tramp, endbr64, 4);
	n = 4;
	for (int k = 0; k < nmoved; k++) {
		uint8_t buf[32];
		uint32_t w = emit(&moved[k], code + (moved[k].at - entry),
		                  t0 + n, lo, hi, buf, out);
		if (!w)
			return -1;
		if (n + w + ABS_JMP > sizeof(out->tramp))
			return refuse(out, "its first instructions do not fit "
			                   "the trampoline");
		memcpy(out->tramp + n, buf, w);
		n += w;
	}
	n += put_jmp(out->tramp + n, t0 + n, hi);
	out->tramp_len = n;
	if (!tramp_at)
		return 0;
	int64_t d = (int64_t)(relay - (lo + JMP_LEN));
	if (!fits32(d))
		return refuse(out, "the relay is out of reach of a 32-bit "
		                   "jump");
	memset(out->patch, 0xcc, sizeof(out->patch));
	put_jmp(out->patch, lo, relay);
	return 0;
}
