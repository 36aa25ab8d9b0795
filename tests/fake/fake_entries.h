/*
 * fake_entries.h — entry points of the fake driver shaped for the
 * relocator of `vramtrace attach` (analyzer/record/relocate.c), x86-64
 * only. The fake is built with -fcf-protection, so its C functions begin with
 * endbr64 like NVIDIA's; these entries are written in assembly and jump to
 * the C body (FAKE_BODY(name), static) after their first instructions:
 *
 *   cuMemFreeHost        its first instruction is RIP-relative (it counts
 *                        its calls): attach must move it, fixed.
 *
 * With FAKE_ODD_PROLOGUES (the fake in tests/fake/odd/, for the refusal
 * test), three more that attach must refuse, naming each, before it
 * touches the process:
 *
 *   cuMemHostUnregister  shorter than the jump (endbr64; xor; ret): it
 *                        unregisters nothing in this build
 *   cuMemGetInfo_v2      its first instruction reads its own first bytes
 *                        (RIP-relative into what the jump replaces)
 *   cuMemHostRegister_v2 a branch back into its first bytes
 *
 * The resolver hands out these entries, as it hands out every export.
 */
#ifndef FAKE_ENTRIES_H
#define FAKE_ENTRIES_H

#if defined(__x86_64__)

#define FAKE_BODY(name) fake_body_##name

/* Declared static and used: only the assembly below calls it. */
#define FAKE_BODY_DECL(ret, name, args)                                        \
	static ret FAKE_BODY(name) args __attribute__((used))

#define FAKE_ENTRY_BEGIN(name)                                                 \
	".globl " #name "\n.type " #name ", @function\n" #name ":\n"          \
	"	endbr64\n"
#define FAKE_ENTRY_END(name) ".size " #name ", .-" #name "\n"

/* Calls of the RIP-relative entry, readable by the tests' debuggers. */
__attribute__((used)) static unsigned fake_entry_calls;

__asm__(".text\n" FAKE_ENTRY_BEGIN(cuMemFreeHost)
        "	incl fake_entry_calls(%rip)\n"
        "	jmp fake_body_cuMemFreeHost\n" FAKE_ENTRY_END(cuMemFreeHost));

#ifdef FAKE_ODD_PROLOGUES
#define FAKE_ODD_BODY(name) FAKE_BODY(name)
__asm__(".text\n" FAKE_ENTRY_BEGIN(cuMemHostUnregister)
        "	xorl %eax, %eax\n"
        "	ret\n" FAKE_ENTRY_END(cuMemHostUnregister)
        FAKE_ENTRY_BEGIN(cuMemGetInfo_v2)
        "1:	movzbl 1b(%rip), %eax\n"
        "	jmp fake_body_cuMemGetInfo_v2\n" FAKE_ENTRY_END(cuMemGetInfo_v2)
        FAKE_ENTRY_BEGIN(cuMemHostRegister_v2)
        "	xorl %eax, %eax\n"
        "2:	incl %eax\n"
        "	cmpl $3, %eax\n"
        "	jne 2b\n"
        "	jmp fake_body_cuMemHostRegister_v2\n"
        FAKE_ENTRY_END(cuMemHostRegister_v2));
#else
#define FAKE_ODD_BODY(name) name
#endif

#else /* not x86-64: plain C entries */
#define FAKE_BODY(name)                 name
#define FAKE_ODD_BODY(name)             name
#define FAKE_BODY_DECL(ret, name, args) ret name args
#endif

#endif /* FAKE_ENTRIES_H */
