/*
 * standby.c — what a process in standby keeps besides its live table, and
 * the snapshot that starts a recording.
 *
 * Standby (VRAMTRACE_START=standby, `ctl stop`) writes nothing. What is
 * live when recording starts is attributed as a full recording would
 * attribute it: an allocation of at least VRAMTRACE_STANDBY_STACK_KIB
 * keeps its call stack in the live table (so its phase, its site), a
 * smaller one only the phase the application announced. The facts that
 * cost nothing per allocation are kept from the process's first event
 * and written, as PAST records, when recording starts: each listen()
 * (port, inet or unix), the first request begun and answered, the latest
 * request edges (begun, answered, closed: how many were in flight when
 * another process of the run failed), the
 * children made (fork, exec, posix_spawn), the first free-memory probe
 * per device (with the bytes the process held then), the sampler's
 * readings (NVML: other processes). The header of the trace then says the
 * process's capture began at its first event, as in a full recording.
 *
 * An allocation refused for lack of memory in standby makes the process
 * record for that one call (hook_lib.c): the facts, a snapshot of the
 * live set and the failure with its stack go into the trace, then the
 * process is back in standby.
 *
 * Threads: hooks on any thread keep facts (one spinlock over the store;
 * the per-request facts are taken once, behind a flag); the snapshot is
 * written by whoever starts recording (the control thread, or the thread
 * of a failed allocation), under session.c's start_mu.
 */
#ifndef VRT_STANDBY_H
#define VRT_STANDBY_H

#include <stdatomic.h>
#include <stdint.h>

struct vrt_ev;

/* Entering standby: reads the options; at the first event of a trace
 * file to be (first_event), also notes when — the origin a full
 * recording's header would have had. The session only (session.c). */
void vrt_standby_begin(int first_event);

/* 1 and the time (monotonic, wall) this image's capture began in
 * standby, or 0 when it did not begin in standby. */
int vrt_standby_origin(uint64_t *mono_ns, uint64_t *wall_ns);

/* Allocations of at least this many bytes keep their stack in standby
 * (VRAMTRACE_STANDBY_STACK_KIB). Read on the hot path. */
extern _Atomic uint64_t vrt_standby_stack_min;

static inline int vrt_standby_keeps_stack(uint64_t size)
{
	return size >= atomic_load_explicit(&vrt_standby_stack_min,
	                                    memory_order_relaxed);
}

/* From hooks in standby: keeps what ev says about the run (NET, PROC,
 * MEMINFO, REQUEST); other events are ignored. No malloc, no wait
 * longer than the store's spinlock. */
void vrt_standby_keep(const struct vrt_ev *ev);

/* The application's request brackets, recording or not: the open ones
 * are part of a snapshot. */
void vrt_standby_request(int op, uint64_t id);

/* Writes the kept facts (PAST records, in time order) and the snapshot
 * (SNAPSHOT begin, one ALLOC per live allocation, the open connections
 * and requests, SNAPSHOT end) into the calling thread's buffer, then
 * forgets the facts written. Recording must be on. */
void vrt_standby_write(void);

/* Recording stops here (SNAPSHOT op 3): standby until the next snapshot.
 * Written while still recording. */
void vrt_standby_write_stop(void);

void vrt_standby_after_fork_child(void);

/* How the snapshot lists the open connections (hook_libc.c's
 * vrt_hook_libc_each_conn, set by the constructor): conn for each, then
 * req for each request open on it, under its lock. Unset, the snapshot
 * has none. */
typedef void (*vrt_standby_conn_fn)(int fd, int listener, int kind,
                                    void *arg);
typedef void (*vrt_standby_req_fn)(int fd, uint32_t stream, unsigned flags,
                                   void *arg);
void vrt_standby_set_conns(void (*each)(vrt_standby_conn_fn conn,
                                        vrt_standby_req_fn req, void *arg));

#endif /* VRT_STANDBY_H */
