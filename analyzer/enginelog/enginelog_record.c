/*
 * enginelog_record.c — recording what the rules found into struct
 * vrt_enginelog: facts (numbers), errors (and when one repeats another),
 * the configuration, readiness, the engine's step, the log's own pids,
 * requests (access lines and the engines' own) and the running count; the
 * engine votes each makes. Single-threaded per log; facts grow with
 * realloc.
 */
#include "enginelog_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- recording what was found ------------------------------------------ */

static void copy_text(char *dst, const char *s)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < VRT_ENGINELOG_TEXT; i++)
		dst[i] = s[i];
	dst[i] = '\0';
}

void vrt_enginelog_record_vote(struct vrt_enginelog *log, int engine,
                               unsigned n)
{
	if (engine > 0 && engine < VRT_ENGINELOG_NENGINES)
		log->votes[engine] += n;
}

int vrt_enginelog_record_fact(struct vrt_enginelog *log,
                              const struct lineinfo *li, int engine, int kind,
                              int32_t device, double value, double tol,
                              int additive)
{
	struct vrt_enginelog_fact *f;

	vrt_enginelog_record_vote(log, engine, 4);
	if (value < 0 || value > 1e18)
		return 0;
	if (log->nfacts >= VRT_ENGINELOG_MAX_FACTS) {
		log->facts_dropped++;
		return 0;
	}
	if (log->nfacts == log->cap_facts) {
		size_t cap = log->cap_facts ? 2 * log->cap_facts : 32;
		f = realloc(log->facts, cap * sizeof(*f));
		if (!f)
			return -1;
		log->facts = f;
		log->cap_facts = cap;
	}
	f = &log->facts[log->nfacts++];
	memset(f, 0, sizeof(*f));
	f->kind = kind;
	f->engine = engine;
	f->device = device >= 0 ? device : li->rank;
	f->pid = li->pid;
	f->value = (uint64_t)(value + 0.5);
	f->tol = (uint64_t)(tol + 0.5);
	f->additive = additive;
	f->line = (uint32_t)log->lines;
	f->wall_ns = li->wall_ns;
	copy_text(f->text, li->msg);
	return 0;
}

void vrt_enginelog_record_config(struct vrt_enginelog *log, int engine,
                                 int field, double v)
{
	if (v < 0 || v > 1e15)
		return;
	vrt_enginelog_record_vote(log, engine, 1);
	log->config[field] = (uint64_t)(v + 0.5);
	log->config_line[field] = (uint32_t)log->lines;
}

void vrt_enginelog_record_ready(struct vrt_enginelog *log,
                                const struct lineinfo *li, int engine,
                                int strength)
{
	vrt_enginelog_record_vote(log, engine, 2);
	if (log->have_ready && log->ready_strength >= strength)
		return;
	log->have_ready = 1;
	log->ready_strength = strength;
	log->ready_line = (uint32_t)log->lines;
	log->ready_wall_ns = li->wall_ns;
	copy_text(log->ready_text, li->msg);
}

/* A new error, or NULL when it repeats one already recorded (engines
 * print an exception in the worker and again where it is re-raised). */
struct vrt_enginelog_error *
vrt_enginelog_record_error(struct vrt_enginelog *log, const struct lineinfo *li,
                           int engine, int kind)
{
	struct vrt_enginelog_error *e;

	vrt_enginelog_record_vote(log, engine, 4);
	if (log->nerrors >= VRT_ENGINELOG_MAX_ERRORS)
		return NULL;
	e = &log->errors[log->nerrors];
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->engine = engine;
	e->device = li->rank;
	if (li->rank >= 0)
		e->have |= VRT_ELH_DEVICE;
	e->pid = li->pid;
	e->line = (uint32_t)log->lines;
	e->wall_ns = li->wall_ns;
	copy_text(e->text, li->msg);
	/* What it was for: the traceback's deepest frame that says, else
	 * the step the engine was in (refined by the rule that records
	 * it). */
	e->phase = log->tb_phase != VRT_ELP_UNKNOWN ? log->tb_phase : log->step;
	e->serving = (log->traceback & TB_REQUEST) != 0 ||
	             (log->have_ready && log->ready_line < e->line);
	e->requests = log->requests;
	if (log->have_running) {
		e->running = log->running;
		e->have |= VRT_ELH_RUNNING;
	}
	if (log->prompt_tokens) {
		e->prompt_tokens = log->prompt_tokens;
		e->have |= VRT_ELH_PROMPT;
	}
	return e;
}

/* The numbers an error printed (not what the log said around it). */
#define NUMBERS                                                                \
	(VRT_ELH_REQUESTED | VRT_ELH_TOTAL | VRT_ELH_FREE |                    \
	 VRT_ELH_ALLOCATED | VRT_ELH_RESERVED | VRT_ELH_NEEDED |               \
	 VRT_ELH_AVAILABLE | VRT_ELH_MAX_MODEL_LEN | VRT_ELH_SUGGESTED_LEN |   \
	 VRT_ELH_TOKENS | VRT_ELH_MEM_FRACTION | VRT_ELH_DEVICE)

/* 1 when errors[i] repeats an earlier error (the test of
 * vrt_enginelog_record_commit). */
int vrt_enginelog_record_repeats(const struct vrt_enginelog *log, size_t i)
{
	const struct vrt_enginelog_error *e = &log->errors[i];
	size_t k;

	for (k = 0; k < i; k++) {
		const struct vrt_enginelog_error *x = &log->errors[k];
		if (x->kind == e->kind &&
		    (x->have & NUMBERS) == (e->have & NUMBERS) &&
		    x->requested_bytes == e->requested_bytes &&
		    x->max_model_len == e->max_model_len &&
		    x->tokens == e->tokens && x->device == e->device &&
		    x->free_bytes == e->free_bytes &&
		    x->recovered == e->recovered &&
		    (x->pid == e->pid || x->pid < 0 || e->pid < 0))
			return 1;
	}
	return 0;
}

/* Keeps the error filled in at errors[nerrors] unless it repeats one; the
 * traceback it ended is done with. */
void vrt_enginelog_record_commit(struct vrt_enginelog *log)
{
	struct vrt_enginelog_error *e = &log->errors[log->nerrors];
	int64_t pid = e->pid;

	/* Ray's fold of the same line from other workers: one error */
	if (log->line_repeated)
		e->pid = -1;
	if (!vrt_enginelog_record_repeats(log, log->nerrors))
		log->nerrors++;
	e->pid = pid;
	log->traceback = 0;
	log->tb_phase = VRT_ELP_UNKNOWN;
}

/* A host memory allocation that failed (no device): bytes requested;
 * recovered when the engine fell back to other memory. */
void vrt_enginelog_record_host_error(struct vrt_enginelog *log,
                                     const struct lineinfo *li, int engine,
                                     uint64_t bytes, int recovered)
{
	struct vrt_enginelog_error *e =
	        vrt_enginelog_record_error(log, li, engine, VRT_ELE_HOST_ALLOC);

	if (!e)
		return;
	e->requested_bytes = bytes;
	e->have = (e->have | VRT_ELH_REQUESTED) & ~(unsigned)VRT_ELH_DEVICE;
	e->device = -1;
	e->recovered = recovered;
	vrt_enginelog_record_commit(log);
}

/* The last error kept, when it is of kind (0: any) and at most within
 * lines before this one; NULL otherwise. */
struct vrt_enginelog_error *
vrt_enginelog_record_last_error(struct vrt_enginelog *log, int kind,
                                uint32_t within)
{
	struct vrt_enginelog_error *p;

	if (!log->nerrors)
		return NULL;
	p = &log->errors[log->nerrors - 1];
	if ((kind && p->kind != kind) || log->lines - p->line > within)
		return NULL;
	return p;
}

/* e takes the numbers of the failed allocation p that stands behind it
 * (a summary line after the driver's error). */
void vrt_enginelog_record_inherit(struct vrt_enginelog_error *e,
                                  const struct vrt_enginelog_error *p)
{
	const unsigned nums = VRT_ELH_REQUESTED | VRT_ELH_DEVICE |
	                      VRT_ELH_TOTAL | VRT_ELH_FREE | VRT_ELH_ALLOCATED |
	                      VRT_ELH_RESERVED | VRT_ELH_PRIVATE |
	                      VRT_ELH_PROCESS;

	if (!p)
		return;
	e->requested_bytes = p->requested_bytes;
	e->requested_tol = p->requested_tol;
	e->device = p->device;
	e->total_bytes = p->total_bytes;
	e->free_bytes = p->free_bytes;
	e->allocated_bytes = p->allocated_bytes;
	e->reserved_bytes = p->reserved_bytes;
	e->private_bytes = p->private_bytes;
	e->process_bytes = p->process_bytes;
	memcpy(e->others, p->others, sizeof(e->others));
	e->nothers = p->nothers;
	e->have |= p->have & nums;
	if (p->phase != VRT_ELP_UNKNOWN && e->phase == VRT_ELP_UNKNOWN)
		e->phase = p->phase;
	e->serving |= p->serving;
}

/* The start-up step the engine's latest line says it is in. */
void vrt_enginelog_record_step(struct vrt_enginelog *log, int phase)
{
	log->step = phase;
}

/* A pid of the log's own processes. */
void vrt_enginelog_record_own_pid(struct vrt_enginelog *log, int64_t pid)
{
	size_t i;

	if (pid <= 0)
		return;
	for (i = 0; i < log->npids; i++)
		if (log->pids[i] == pid)
			return;
	if (log->npids < VRT_ENGINELOG_MAX_PIDS)
		log->pids[log->npids++] = pid;
}

/* A request the server handled (or began), as an access line (by 0) or
 * the engine's own line (by 1) says: the same requests, counted apart. */
void vrt_enginelog_record_request(struct vrt_enginelog *log,
                                  const struct lineinfo *li, int engine, int by)
{
	vrt_enginelog_record_vote(log, engine, 1);
	if (!log->requests) {
		log->first_request_line = (uint32_t)log->lines;
		log->first_request_wall_ns = li->wall_ns;
	}
	log->requests_by[by]++;
	log->requests = log->requests_by[0] > log->requests_by[1]
	                        ? log->requests_by[0]
	                        : log->requests_by[1];
}

/* The engine's own count of requests running now. */
void vrt_enginelog_record_running(struct vrt_enginelog *log, uint64_t n)
{
	log->have_running = 1;
	log->running = n;
	if (n > log->max_running)
		log->max_running = n;
}

/* Paths a health or metrics probe asks for: never a request served. */
static int probe_path(const char *p)
{
	static const char *const probes[] = {
	        "/health",  "/healthz",   "/ready",       "/readyz",
	        "/metrics", "/v1/models", "/api/version", "/api/tags",
	        "/ping",    "/live",      "/livez",       "/"};
	size_t k, n = strcspn(p, " \"?");

	for (k = 0; k < sizeof(probes) / sizeof(probes[0]); k++)
		if (strlen(probes[k]) == n && !strncmp(p, probes[k], n))
			return 1;
	return 0;
}

/* Access lines of HTTP front ends: uvicorn's `ADDR - "POST /path
 * HTTP/1.1" 200 OK` (vLLM, SGLang, TensorRT-LLM), Gin's `[GIN] date |
 * 200 | 1.2s | addr | POST "/api/chat"` (Ollama), llama-server's
 * `log_server_r: request: POST /completion ADDR 200` (older: "done
 * request:"). Probes are not requests. Returns 1 when it was one. */
int vrt_enginelog_record_access_line(struct vrt_enginelog *log,
                                     const struct lineinfo *li)
{
	const char *msg = li->msg, *p;

	if ((p = vrt_enginelog_scan_find(msg, "\"POST /")) &&
	    vrt_enginelog_scan_find(p, " HTTP/")) {
		if (!probe_path(p + 6))
			vrt_enginelog_record_request(log, li,
			                             VRT_ENGINELOG_UNKNOWN, 0);
		return 1;
	}
	if (vrt_enginelog_scan_find(msg, "[GIN]") &&
	    (p = vrt_enginelog_scan_find(msg, "| POST"))) {
		p += 6;
		while (vrt_enginelog_scan_blank(*p) || *p == '"')
			p++;
		if (!probe_path(p))
			vrt_enginelog_record_request(log, li,
			                             VRT_ENGINELOG_OLLAMA, 0);
		return 1;
	}
	if (vrt_enginelog_scan_find(msg, "log_server_r") &&
	    (p = vrt_enginelog_scan_find(msg, "request: POST "))) {
		if (!probe_path(p + 14))
			vrt_enginelog_record_request(log, li,
			                             VRT_ENGINELOG_LLAMACPP, 0);
		return 1;
	}
	return 0;
}
