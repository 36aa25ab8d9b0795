/*
 * phase.c — phases the application announces itself (the annotation API:
 * vramtrace_phase_push/pop), which win over every rule.
 *
 * Each thread keeps its own stack of phase ids in initial-exec TLS, so
 * reading the current phase inside a hook is one TLS load. Names map to
 * the fixed ids of trace_format.h or to custom ids registered on first
 * use (a small table under reg_mu; the API is called by the application,
 * never from inside a hook). The writer declares custom names with PHASE
 * records.
 *
 * Custom annotation ids live in [VRT_ANNOT_FIRST, VRT_ANNOT_LAST], apart
 * from the custom ids of rule files (which start at VRT_PHASE_FIRST_CUSTOM
 * inside a rules object), so the two never collide in one trace.
 */
#include "core.h"

#include <vramtrace/trace_format.h>

#include <pthread.h>
#include <string.h>

#define PHASE_STACK_MAX 16
#define VRT_ANNOT_FIRST 128
#define VRT_ANNOT_LAST  239
#define NAME_MAX_LEN    63

static VRT_TLS uint16_t pstack[PHASE_STACK_MAX];
static VRT_TLS int pdepth;

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static char names[VRT_ANNOT_LAST - VRT_ANNOT_FIRST + 1][NAME_MAX_LEN + 1];
static _Atomic int nnames;
static int emitted; /* writer thread only */

static unsigned phase_id(const char *name)
{
	for (unsigned id = 0; id <= VRT_PHASE_BUILTIN_MAX; id++)
		if (!strcmp(vrt_phase_builtin_name(id), name))
			return id;
	pthread_mutex_lock(&reg_mu);
	int n = atomic_load(&nnames);
	unsigned id = VRT_PHASE_unattributed;
	for (int i = 0; i < n; i++)
		if (!strncmp(names[i], name, NAME_MAX_LEN)) {
			id = VRT_ANNOT_FIRST + (unsigned)i;
			goto out;
		}
	if (n <= VRT_ANNOT_LAST - VRT_ANNOT_FIRST) {
		strncpy(names[n], name, NAME_MAX_LEN);
		names[n][NAME_MAX_LEN] = 0;
		atomic_store(&nnames, n + 1);
		id = VRT_ANNOT_FIRST + (unsigned)n;
	}
out:
	pthread_mutex_unlock(&reg_mu);
	return id;
}

void vrt_phase_push(const char *name)
{
	unsigned id = name && *name ? phase_id(name) : VRT_PHASE_unattributed;
	if (pdepth < PHASE_STACK_MAX)
		pstack[pdepth] = (uint16_t)id;
	pdepth++;
}

uint64_t vrt_phase_named(const char *name)
{
	return vrt_phase_encode(phase_id(name), VRT_SRC_ANNOTATION);
}

void vrt_phase_pop(void)
{
	if (pdepth > 0)
		pdepth--;
}

uint64_t vrt_phase_current(void)
{
	int d = pdepth;
	if (d <= 0)
		return 0;
	unsigned id = pstack[(d <= PHASE_STACK_MAX ? d : PHASE_STACK_MAX) - 1];
	return vrt_phase_encode(id, VRT_SRC_ANNOTATION);
}

void vrt_phase_emit(vrt_stack_emit_fn emit)
{
	int n = atomic_load(&nnames);
	for (; emitted < n; emitted++) {
		uint8_t p[VRT_UVARINT_MAX * 2 + NAME_MAX_LEN + 1];
		size_t k =
		        vrt_put_uvarint(p, VRT_ANNOT_FIRST + (unsigned)emitted);
		size_t len = strnlen(names[emitted], NAME_MAX_LEN);
		k += vrt_put_uvarint(p + k, len);
		memcpy(p + k, names[emitted], len);
		emit(VRT_REC_PHASE, p, k + len);
	}
}

void vrt_phase_new_file(void)
{
	emitted = 0;
}

void vrt_phase_after_fork_child(void)
{
	pthread_mutex_init(&reg_mu, NULL);
	/* The child's trace declares them again (vrt_writer_start). */
}
