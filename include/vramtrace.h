/*
 * vramtrace.h — the annotation API: tell vramtrace what your program is
 * doing, in words no rule can guess.
 *
 *   VRAMTRACE_PHASE_PUSH("kv_cache");   ...allocate...   VRAMTRACE_PHASE_POP();
 *   VRAMTRACE_REQUEST_BEGIN(id);        ...serve... VRAMTRACE_REQUEST_END(id);
 *   VRAMTRACE_MARK("concurrency=8");
 *
 * Phases pushed by the application win over every rule (the report marks
 * them as annotated). Canonical phase names: weights, kv_cache, forward,
 * profile, cuda_graph, comm, workspace; any other short name is a custom
 * phase. Requests bracket what one request does (requests in flight);
 * marks split a run into windows (the report's per-window table).
 *
 * The functions are weak references: a program using this header runs
 * unchanged without libvramtrace.so, where the macros do nothing. Under
 * the preload they call it. Each call is per thread (the phase stack is the
 * calling thread's); all are thread-safe and cheap, and none may be called
 * from a signal handler. From Python, call them through ctypes:
 *     lib = ctypes.CDLL(None); lib.vramtrace_phase_push(b"weights")
 * (present only when the process runs under the preload).
 */
#ifndef VRAMTRACE_H
#define VRAMTRACE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void vramtrace_phase_push(const char *phase) __attribute__((weak));
void vramtrace_phase_pop(void) __attribute__((weak));
void vramtrace_request_begin(uint64_t id) __attribute__((weak));
void vramtrace_request_end(uint64_t id) __attribute__((weak));
void vramtrace_mark(const char *label) __attribute__((weak));

#ifdef __cplusplus
}
#endif

#define VRAMTRACE_PHASE_PUSH(phase)                                            \
	do {                                                                   \
		if (vramtrace_phase_push)                                      \
			vramtrace_phase_push(phase);                           \
	} while (0)
#define VRAMTRACE_PHASE_POP()                                                  \
	do {                                                                   \
		if (vramtrace_phase_pop)                                       \
			vramtrace_phase_pop();                                 \
	} while (0)
#define VRAMTRACE_REQUEST_BEGIN(id)                                            \
	do {                                                                   \
		if (vramtrace_request_begin)                                   \
			vramtrace_request_begin(id);                           \
	} while (0)
#define VRAMTRACE_REQUEST_END(id)                                              \
	do {                                                                   \
		if (vramtrace_request_end)                                     \
			vramtrace_request_end(id);                             \
	} while (0)
#define VRAMTRACE_MARK(label)                                                  \
	do {                                                                   \
		if (vramtrace_mark)                                            \
			vramtrace_mark(label);                                 \
	} while (0)

#endif /* VRAMTRACE_H */
