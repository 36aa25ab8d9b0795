/*
 * hook_libc.c — our dlsym.
 *
 * Runtimes reach the CUDA driver by dlopen + dlsym, never by linking it:
 * libcudart looks up exactly one name, "cuGetProcAddress_v2", and Python
 * ctypes, NCCL and Triton look up each function on the driver's handle.
 * So dlsym is where our wrappers get handed out (hook_cuda.c decides).
 *
 * glibc's dlsym looks at its return address to know who is asking: for
 * RTLD_NEXT ("the next object after the caller") and RTLD_DEFAULT (the
 * caller's namespace and local scope). If our C function called it, the
 * caller would be libvramtrace and such look-ups would change meaning
 * (an allocator interposer asking for RTLD_NEXT "malloc" would get its own
 * malloc back). So dlsym is a tiny assembly stub: for those two pseudo
 * handles it jumps straight into libc with the caller's return address
 * intact, and only for real library handles — where the answer does not
 * depend on the caller — goes through C to substitute wrappers. A look-up
 * of a hooked name through RTLD_DEFAULT finds our own exported wrapper
 * anyway (the preload comes first in the global scope).
 *
 * Threads: any. The real pointer is set once (the constructor, or the
 * first dlsym if another library's constructor runs before ours) and only
 * ever to the same value, so a racy double initialisation is harmless.
 */
#include "hook.h"

#include <dlfcn.h>
#include <string.h>

void *(*vrt_real_dlsym)(void *, const char *);

void vrt_hook_libc_init(void)
{
	if (vrt_real_dlsym)
		return;
	/* dlvsym is not interposed, so this asks libc for the real one; the
	 * version names cover glibc before and after libdl moved into
	 * libc (2.34). */
	void *p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	if (!p)
		p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
	if (!p)
		p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.17"); /* aarch64 */
	vrt_real_dlsym = (void *(*)(void *, const char *))p;
}

/* dlsym on a real library handle: the answer does not depend on who asks,
 * so we may call libc from here and look at the result. */
VRT_HIDDEN void *vrt_libc_dlsym_handle(void *handle, const char *symbol);
VRT_HIDDEN void *vrt_libc_dlsym_handle(void *handle, const char *symbol)
{
	if (VRT_UNLIKELY(!vrt_real_dlsym)) {
		vrt_hook_libc_init();
		if (!vrt_real_dlsym)
			return NULL;
	}
	void *r = vrt_real_dlsym(handle, symbol);
	if (r && symbol && symbol[0] == 'c' && symbol[1] == 'u')
		return vrt_hook_cuda_dlsym(symbol, r);
	return r;
}

/* Before initialisation, on an architecture without the stub: the caller
 * is lost, which only matters for RTLD_NEXT/RTLD_DEFAULT look-ups. */
VRT_HIDDEN void *vrt_libc_dlsym_slow(void *handle, const char *symbol);
VRT_HIDDEN void *vrt_libc_dlsym_slow(void *handle, const char *symbol)
{
	vrt_hook_libc_init();
	return vrt_real_dlsym ? vrt_real_dlsym(handle, symbol) : NULL;
}

/* RTLD_DEFAULT is 0 and RTLD_NEXT is -1 in glibc. */
#if defined(__x86_64__)
__asm__(".text\n"
	".globl dlsym\n"
	".type dlsym, @function\n"
	"dlsym:\n"
	"	testq %rdi, %rdi\n"
	"	je 1f\n"
	"	cmpq $-1, %rdi\n"
	"	je 1f\n"
	"	jmp vrt_libc_dlsym_handle\n"
	"1:	movq vrt_real_dlsym(%rip), %rax\n"
	"	testq %rax, %rax\n"
	"	je 2f\n"
	"	jmp *%rax\n"
	"2:	jmp vrt_libc_dlsym_slow\n"
	".size dlsym, .-dlsym\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".globl dlsym\n"
	".type dlsym, %function\n"
	"dlsym:\n"
	"	cbz x0, 1f\n"
	"	cmn x0, #1\n"
	"	b.eq 1f\n"
	"	b vrt_libc_dlsym_handle\n"
	"1:	adrp x16, vrt_real_dlsym\n"
	"	ldr x16, [x16, :lo12:vrt_real_dlsym]\n"
	"	cbz x16, 2f\n"
	"	br x16\n"
	"2:	b vrt_libc_dlsym_slow\n"
	".size dlsym, .-dlsym\n");
#else
void *dlsym(void *handle, const char *symbol)
{
	if (handle == RTLD_DEFAULT || handle == RTLD_NEXT)
		return vrt_libc_dlsym_slow(handle, symbol);
	return vrt_libc_dlsym_handle(handle, symbol);
}
#endif
