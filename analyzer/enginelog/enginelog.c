/*
 * enginelog.c — reads what an inference engine printed about its memory
 * (enginelog.h). A line goes through: the `record` timestamp prefix, ANSI
 * escapes and carriage returns removed, process prefixes ("(EngineCore_DP0
 * pid=212) ", "vllm_0  | ") taken off, the engine's own log prefix read
 * (its time, its rank), then the message against each engine's sentences.
 *
 * The sentences are matched with a small pattern language (scan()):
 * literal text, where one space stands for any run of blanks (%_ for an
 * optional one); %f a signed
 * decimal, %u an unsigned integer that may carry thousands commas, %z a
 * size with its unit ("14.99GiB", "4403.49 MiB", "512 bytes"), %w a word,
 * %* any text. A pattern may match anywhere in the message, so prefixes we
 * do not know (a user's logging format) still leave the sentence readable.
 * Every pattern and the engine version it comes from is in docs/logs.md.
 *
 * Pure (no globals) except vrt_enginelog_read, which reads a file with
 * stdio. Single-threaded per struct vrt_enginelog.
 */
#include "enginelog.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include "vramtrace/trace_format.h"
#include "load/wallclock.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB (1024.0 * 1024.0)

/* ---- names ------------------------------------------------------------- */

const char *vrt_enginelog_engine_name(int engine)
{
	static const char *const names[VRT_ENGINELOG_NENGINES] = {
	        NULL, "vllm", "sglang", "llama.cpp", "tgi", "trtllm", "ollama"};
	return engine > 0 && engine < VRT_ENGINELOG_NENGINES ? names[engine]
	                                                     : NULL;
}

const char *vrt_enginelog_kind_name(int kind)
{
	static const char *const names[VRT_ELK_NKINDS] = {
	        "unknown",     "weights",     "kv_cache_bytes",
	        "kv_cache_tokens", "activations", "cuda_graphs",
	        "max_concurrency", "total_memory", "non_torch_memory",
	        "kv_cache_blocks", "free_memory", "projected_memory"};
	return kind > 0 && kind < VRT_ELK_NKINDS ? names[kind] : names[0];
}

const char *vrt_enginelog_error_name(int kind)
{
	static const char *const names[VRT_ELE_NKINDS] = {
	        "unknown",        "torch_oom",       "cudamalloc_failed",
	        "cuda_error_oom", "oom",             "kv_too_small",
	        "no_kv_memory",   "free_below_util", "mem_fraction_static",
	        "context_alloc",  "prefill_tokens",  "max_total_tokens",
	        "host_alloc",     "weights_alloc",   "compute_alloc",
	        "sampler_warmup", "executor_memory", "runner_died"};
	return kind > 0 && kind < VRT_ELE_NKINDS ? names[kind] : names[0];
}

const char *vrt_enginelog_config_name(int field)
{
	static const char *const names[VRT_ELC_NFIELDS] = {
	        "max_model_len", "max_num_seqs",  "memory_fraction",
	        "tensor_parallel", "block_size",  "context_size",
	        "slots",           "gpu_layers",  "max_batch_total_tokens",
	        "ubatch",          "batch",       "flash_attn"};
	return field >= 0 && field < VRT_ELC_NFIELDS ? names[field] : "unknown";
}

int vrt_enginelog_is_refusal(int kind)
{
	return kind >= VRT_ELE_KV_TOO_SMALL && kind <= VRT_ELE_MAX_TOTAL_TOKENS;
}

/* ---- the pattern scanner --------------------------------------------- */

#define SCAN_MAX 8

struct cap {
	double v[SCAN_MAX];
	double tol[SCAN_MAX]; /* half the last printed digit, in v's unit */
	int nv;
	char w[2][32];
	int nw;
};

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* The pairs of adjacent bytes of the message being read (a 4096-bit set,
 * six low bits of each byte), so that most searches for text the message
 * cannot hold end without scanning it: a log of a gigabyte is mostly
 * lines no rule reads. Set before message() runs the rules, cleared on
 * its way out; a search in any other text is a plain strstr. */
static _Thread_local struct {
	uintptr_t lo, hi; /* the message's bytes, its NUL included */
	uint64_t bits[64];
} msg_pairs;

static unsigned pair_of(const char *s)
{
	return ((unsigned)(unsigned char)s[0] & 0x3fu) << 6 |
	       ((unsigned)(unsigned char)s[1] & 0x3fu);
}

static void pairs_set(const char *s)
{
	size_t i, n = strlen(s);

	memset(msg_pairs.bits, 0, sizeof(msg_pairs.bits));
	for (i = 0; i + 1 < n; i++) {
		unsigned b = pair_of(s + i);
		msg_pairs.bits[b >> 6] |= 1ull << (b & 63);
	}
	msg_pairs.lo = (uintptr_t)s;
	msg_pairs.hi = (uintptr_t)s + n + 1;
}

static void pairs_clear(void)
{
	msg_pairs.lo = msg_pairs.hi = 0;
}

/* 0 when the text at h cannot hold the len bytes at n (h: in the
 * message being read, and a pair of n's bytes is not in it), else 1. */
static int may_hold(const char *h, const char *n, size_t len)
{
	size_t i;

	if ((uintptr_t)h < msg_pairs.lo || (uintptr_t)h >= msg_pairs.hi)
		return 1;
	for (i = 0; i + 1 < len; i++) {
		unsigned b = pair_of(n + i);
		if (!(msg_pairs.bits[b >> 6] >> (b & 63) & 1))
			return 0;
	}
	return 1;
}

/* strstr, quicker on the message being read. */
static char *find(const char *h, const char *n)
{
	return may_hold(h, n, strlen(n)) ? strstr(h, n) : NULL;
}

/* A decimal at s (sign allowed when sign, thousands commas when commas);
 * returns the bytes read (0: none), the value and half its last digit. */
static size_t number(const char *s, int sign, int commas, double *v,
                     double *tol)
{
	size_t i = 0;
	double x = 0, scale = 1;
	int neg = 0, digits = 0;

	if (sign && (s[i] == '-' || s[i] == '+'))
		neg = s[i++] == '-';
	for (;; i++) {
		if (is_digit(s[i])) {
			x = x * 10 + (s[i] - '0');
			digits++;
		} else if (commas && s[i] == ',' && digits && is_digit(s[i + 1]) &&
		           is_digit(s[i + 2]) && is_digit(s[i + 3]) &&
		           !is_digit(s[i + 4])) {
			continue;
		} else {
			break;
		}
	}
	if (!digits)
		return 0;
	if (s[i] == '.' && is_digit(s[i + 1]))
		for (i++; is_digit(s[i]); i++) {
			scale /= 10;
			x += (s[i] - '0') * scale;
		}
	if (digits > 18)
		return 0;
	*v = neg ? -x : x;
	*tol = scale / 2;
	return i;
}

/* A size with its unit at s: bytes and half its last digit in bytes.
 * Engines that print "GB" mean GiB (vLLM, SGLang divide by 2^30). */
static size_t size_at(const char *s, double *bytes, double *tol)
{
	static const struct {
		const char *unit;
		double mul;
	} units[] = {{"GiB", GIB},  {"MiB", MIB},  {"KiB", 1024.0},
	             {"TiB", GIB * 1024.0}, {"GB", GIB}, {"MB", MIB},
	             {"KB", 1024.0}, {"bytes", 1}, {"B", 1}};
	double v, t;
	size_t i = number(s, 0, 1, &v, &t), k;

	if (!i)
		return 0;
	while (is_blank(s[i]))
		i++;
	for (k = 0; k < sizeof(units) / sizeof(units[0]); k++) {
		size_t n = strlen(units[k].unit);
		if (!strncmp(s + i, units[k].unit, n) &&
		    !(s[i + n] >= 'a' && s[i + n] <= 'z')) {
			*bytes = v * units[k].mul;
			*tol = t * units[k].mul + 1;
			return i + n;
		}
	}
	return 0;
}

static size_t word_at(const char *s, char *out, size_t n)
{
	size_t i = 0;

	while (s[i] && !is_blank(s[i]) && s[i] != ',' && s[i] != ':' &&
	       s[i] != ';' && s[i] != ')' && s[i] != '(') {
		if (i + 1 < n)
			out[i] = s[i];
		i++;
	}
	out[i < n ? i : n - 1] = '\0';
	return i;
}

/* Matches pattern p against the text at s, exactly from s. */
static int match_here(const char *s, const char *p, struct cap *c)
{
	while (*p) {
		if (*p == ' ') {
			if (!is_blank(*s))
				return 0;
			while (is_blank(*s))
				s++;
			p++;
			continue;
		}
		if (*p != '%') {
			if (*s != *p)
				return 0;
			s++;
			p++;
			continue;
		}
		p++;
		if (*p == '*') {
			/* Lazily: the shortest skip that lets the rest match. */
			int nv = c->nv, nw = c->nw;
			for (;; s++) {
				c->nv = nv;
				c->nw = nw;
				if (match_here(s, p + 1, c))
					return 1;
				if (!*s)
					return 0;
			}
		}
		if (*p == '_') {
			/* optional blanks ("%6u" pads with spaces) */
			while (is_blank(*s))
				s++;
			p++;
			continue;
		}
		if (*p == 'w') {
			size_t n;
			if (c->nw >= 2)
				return 0;
			n = word_at(s, c->w[c->nw], sizeof(c->w[0]));
			if (!n)
				return 0;
			c->nw++;
			s += n;
		} else {
			size_t n = 0;
			if (c->nv >= SCAN_MAX)
				return 0;
			if (*p == 'f')
				n = number(s, 1, 0, &c->v[c->nv], &c->tol[c->nv]);
			else if (*p == 'u')
				n = number(s, 0, 1, &c->v[c->nv], &c->tol[c->nv]);
			else if (*p == 'z')
				n = size_at(s, &c->v[c->nv], &c->tol[c->nv]);
			if (!n)
				return 0;
			c->nv++;
			s += n;
		}
		p++;
	}
	return 1;
}

/* Matches pattern p anywhere in msg (it must start with literal text). */
static int scan(const char *msg, const char *p, struct cap *c)
{
	char lit[64];
	size_t n = 0;
	const char *at;

	while (p[n] && p[n] != '%' && p[n] != ' ' && n + 1 < sizeof(lit))
		n++;
	if (!n || !may_hold(msg, p, n))
		return 0;
	memcpy(lit, p, n);
	lit[n] = '\0';
	for (at = msg; (at = strstr(at, lit)); at++) {
		memset(c, 0, sizeof(*c));
		if (match_here(at, p, c))
			return 1;
	}
	return 0;
}

/* The number after key (a word boundary before it) in msg. */
static int keyval(const char *msg, const char *key, double *v)
{
	size_t n = strlen(key);
	const char *at;
	double tol;

	for (at = msg; (at = find(at, key)); at++) {
		const char *q = at + n;
		if (at > msg && (is_digit(at[-1]) || (at[-1] >= 'a' &&
		                                      at[-1] <= 'z') ||
		                 at[-1] == '_'))
			continue;
		while (is_blank(*q) || *q == '"' || *q == '\'')
			q++;
		if (!strncmp(q, "Some(", 5))
			q += 5;
		if (number(q, 0, 1, v, &tol))
			return 1;
	}
	return 0;
}

/* Traceback frames that say what a Python engine was doing (the deepest
 * one named wins: frames are printed outermost first). */
enum {
	TB_SEEN = 1 << 0,    /* a traceback is being printed */
	TB_REQUEST = 1 << 1, /* a request handler or the serving loop */
	TB_SAMPLER = 1 << 2, /* vLLM's sampler warm-up */
};

static const struct {
	const char *func;
	int phase; /* VRT_PHASE_*, or -2: a request's */
} tb_frames[] = {
        /* weights */
        {"load_model", VRT_PHASE_weights},
        {"load_weights", VRT_PHASE_weights},
        {"_load_weights", VRT_PHASE_weights},
        {"get_model", VRT_PHASE_weights},
        {"initialize_model", VRT_PHASE_weights},
        {"from_pretrained", VRT_PHASE_weights},
        {"load_state_dict", VRT_PHASE_weights},
        {"weight_loader", VRT_PHASE_weights},
        /* the KV cache */
        {"initialize_kv_cache", VRT_PHASE_kv_cache},
        {"_allocate_kv_cache", VRT_PHASE_kv_cache},
        {"_allocate_kv_cache_tensors", VRT_PHASE_kv_cache},
        {"initialize_kv_cache_tensors", VRT_PHASE_kv_cache},
        {"_init_cache", VRT_PHASE_kv_cache},
        {"init_memory_pool", VRT_PHASE_kv_cache},
        {"allocate_kv_cache", VRT_PHASE_kv_cache},
        {"_create_kv_cache_manager", VRT_PHASE_kv_cache},
        /* a profile / warm-up run of the configured batch */
        {"profile_run", VRT_PHASE_profile},
        {"_dummy_run", VRT_PHASE_profile},
        {"_dummy_sampler_run", VRT_PHASE_profile},
        {"_dummy_pooler_run", VRT_PHASE_profile},
        {"determine_available_memory", VRT_PHASE_profile},
        {"determine_num_available_blocks", VRT_PHASE_profile},
        {"profile_max_num_token", VRT_PHASE_profile},
        {"warmup", VRT_PHASE_profile},
        {"Warmup", VRT_PHASE_profile},
        {"_profile", VRT_PHASE_profile},
        /* CUDA graphs */
        {"capture_model", VRT_PHASE_cuda_graph},
        {"_capture_cudagraphs", VRT_PHASE_cuda_graph},
        {"capture", VRT_PHASE_cuda_graph},
        {"capture_end", VRT_PHASE_cuda_graph},
        {"capture_one_batch_size", VRT_PHASE_cuda_graph},
        {"init_cuda_graphs", VRT_PHASE_cuda_graph},
        {"_capture_graph", VRT_PHASE_cuda_graph},
        {"cuda_graph_warmup", VRT_PHASE_cuda_graph},
        /* serving: request handlers, the engine loop */
        {"create_chat_completion", -2},
        {"create_completion", -2},
        {"chat_completion_stream_generator", -2},
        {"chat_completion_full_generator", -2},
        {"completion_stream_generator", -2},
        {"run_engine_loop", -2},
        {"engine_step", -2},
        {"step_async", -2},
        {"run_busy_loop", -2},
        {"_process_engine_step", -2},
        {"event_loop_normal", -2},
        {"event_loop_overlap", -2},
        {"run_batch", -2},
        {"generate_request", -2},
        {"Prefill", -2},
        {"Decode", -2},
        {"_executor_loop", -2},
        {"_executor_loop_overlap", -2},
};

/* A traceback line: "Traceback (most recent call last):" opens one;
 * '  File "x.py", line N, in FUNC' names a frame. Returns 1 when the line
 * was one of them. */
static int traceback_line(struct vrt_enginelog *log, const char *msg)
{
	const char *in;
	size_t k, n;

	while (is_blank(*msg))
		msg++;
	if (find(msg, "Traceback (most recent call last)")) {
		/* a chained exception keeps what the first one said */
		if (!(log->traceback & TB_SEEN))
			log->tb_phase = VRT_ELP_UNKNOWN;
		log->traceback |= TB_SEEN;
		return 1;
	}
	if (strncmp(msg, "File \"", 6) || !(in = find(msg, ", in ")))
		return 0;
	in += 5;
	n = strcspn(in, " \t");
	for (k = 0; k < sizeof(tb_frames) / sizeof(tb_frames[0]); k++) {
		if (strlen(tb_frames[k].func) != n ||
		    strncmp(in, tb_frames[k].func, n))
			continue;
		if (tb_frames[k].phase == -2)
			log->traceback |= TB_REQUEST;
		else
			log->tb_phase = tb_frames[k].phase;
		if (!strcmp(tb_frames[k].func, "_dummy_sampler_run"))
			log->traceback |= TB_SAMPLER;
	}
	log->traceback |= TB_SEEN;
	return 1;
}

/* ---- recording what was found ------------------------------------------ */

/* What the prefixes of one line told. */
struct lineinfo {
	int64_t wall_ns;
	int64_t pid;
	int32_t rank; /* rank / device the prefix names, -1 */
	const char *msg;
	int level_error; /* the engine logged it as an error */
};

static void copy_text(char *dst, const char *s)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < VRT_ENGINELOG_TEXT; i++)
		dst[i] = s[i];
	dst[i] = '\0';
}

static void vote(struct vrt_enginelog *log, int engine, unsigned n)
{
	if (engine > 0 && engine < VRT_ENGINELOG_NENGINES)
		log->votes[engine] += n;
}

static int fact(struct vrt_enginelog *log, const struct lineinfo *li,
                int engine, int kind, int32_t device, double value,
                double tol, int additive)
{
	struct vrt_enginelog_fact *f;

	vote(log, engine, 4);
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

static void config(struct vrt_enginelog *log, int engine, int field,
                   double v)
{
	if (v < 0 || v > 1e15)
		return;
	vote(log, engine, 1);
	log->config[field] = (uint64_t)(v + 0.5);
	log->config_line[field] = (uint32_t)log->lines;
}

static void ready(struct vrt_enginelog *log, const struct lineinfo *li,
                  int engine, int strength)
{
	vote(log, engine, 2);
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
static struct vrt_enginelog_error *error(struct vrt_enginelog *log,
                                         const struct lineinfo *li,
                                         int engine, int kind)
{
	struct vrt_enginelog_error *e;

	vote(log, engine, 4);
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

static int repeats(const struct vrt_enginelog *log, size_t i);

/* Keeps the error filled in at errors[nerrors] unless it repeats one; the
 * traceback it ended is done with. */
static void commit_error(struct vrt_enginelog *log)
{
	struct vrt_enginelog_error *e = &log->errors[log->nerrors];
	int64_t pid = e->pid;

	/* Ray's fold of the same line from other workers: one error */
	if (log->line_repeated)
		e->pid = -1;
	if (!repeats(log, log->nerrors))
		log->nerrors++;
	e->pid = pid;
	log->traceback = 0;
	log->tb_phase = VRT_ELP_UNKNOWN;
}

/* A host memory allocation that failed (no device): bytes requested;
 * recovered when the engine fell back to other memory. */
static void host_error(struct vrt_enginelog *log, const struct lineinfo *li,
                       int engine, uint64_t bytes, int recovered)
{
	struct vrt_enginelog_error *e = error(log, li, engine,
	                                      VRT_ELE_HOST_ALLOC);

	if (!e)
		return;
	e->requested_bytes = bytes;
	e->have = (e->have | VRT_ELH_REQUESTED) & ~(unsigned)VRT_ELH_DEVICE;
	e->device = -1;
	e->recovered = recovered;
	commit_error(log);
}

/* The last error kept, when it is of kind (0: any) and at most within
 * lines before this one; NULL otherwise. */
static struct vrt_enginelog_error *last_error(struct vrt_enginelog *log,
                                              int kind, uint32_t within)
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
static void inherit(struct vrt_enginelog_error *e,
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
static void step(struct vrt_enginelog *log, int phase)
{
	log->step = phase;
}

/* A pid of the log's own processes. */
static void own_pid(struct vrt_enginelog *log, int64_t pid)
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
static void request_seen(struct vrt_enginelog *log, const struct lineinfo *li,
                         int engine, int by)
{
	vote(log, engine, 1);
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
static void running_now(struct vrt_enginelog *log, uint64_t n)
{
	log->have_running = 1;
	log->running = n;
	if (n > log->max_running)
		log->max_running = n;
}

/* Paths a health or metrics probe asks for: never a request served. */
static int probe_path(const char *p)
{
	static const char *const probes[] = {"/health", "/healthz", "/ready",
	                                     "/readyz", "/metrics", "/v1/models",
	                                     "/api/version", "/api/tags",
	                                     "/ping", "/live", "/livez", "/"};
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
static int access_line(struct vrt_enginelog *log, const struct lineinfo *li)
{
	const char *msg = li->msg, *p;

	if ((p = find(msg, "\"POST /")) && find(p, " HTTP/")) {
		if (!probe_path(p + 6))
			request_seen(log, li, VRT_ENGINELOG_UNKNOWN, 0);
		return 1;
	}
	if (find(msg, "[GIN]") && (p = find(msg, "| POST"))) {
		p += 6;
		while (is_blank(*p) || *p == '"')
			p++;
		if (!probe_path(p))
			request_seen(log, li, VRT_ENGINELOG_OLLAMA, 0);
		return 1;
	}
	if (find(msg, "log_server_r") && (p = find(msg, "request: POST "))) {
		if (!probe_path(p + 14))
			request_seen(log, li, VRT_ENGINELOG_LLAMACPP, 0);
		return 1;
	}
	return 0;
}

/* The server's command line rebuilt from a Python dict of its arguments
 * (vLLM's "non-default args: {'model': 'x', 'max_model_len': 8192}"):
 * each key as --key-with-dashes VALUE, True as the flag alone, False and
 * None left out; prog comes first and the model (model_tag, else model)
 * after it. */
static void command_from_dict(struct vrt_enginelog *log, int engine,
                              const char *prog, const char *dict)
{
	char out[VRT_ENGINELOG_CMD], model[256] = "", key[64], val[256];
	const char *p = dict;
	size_t n = 0;

	out[0] = '\0';
	while ((p = strchr(p, '\''))) {
		size_t k = 0, v = 0;
		const char *q = p + 1;
		while (*q && *q != '\'' && k + 1 < sizeof(key))
			key[k++] = *q++;
		key[k] = '\0';
		if (*q != '\'' || q[1] != ':')
			break;
		q += 2;
		while (is_blank(*q))
			q++;
		if (*q == '\'' || *q == '"') {
			char quote = *q++;
			while (*q && *q != quote && v + 1 < sizeof(val))
				val[v++] = *q++;
			if (*q)
				q++;
		} else if (*q == '[' || *q == '{' || *q == '(') {
			/* a list or a dict: not a flag we can rewrite */
			int depth = 0;
			do {
				if (*q == '[' || *q == '{' || *q == '(')
					depth++;
				else if (*q == ']' || *q == '}' || *q == ')')
					depth--;
				q++;
			} while (*q && depth);
			v = 0;
			key[0] = '\0';
		} else {
			while (*q && *q != ',' && *q != '}' && v + 1 < sizeof(val))
				val[v++] = *q++;
		}
		val[v] = '\0';
		p = q;
		if (!key[0] || !strcmp(val, "None") || !strcmp(val, "False"))
			continue;
		if (!strcmp(key, "model_tag") || (!strcmp(key, "model") &&
		                                  !model[0])) {
			snprintf(model, sizeof(model), "%s", val);
			continue;
		}
		if (!strcmp(key, "model"))
			continue;
		for (k = 0; key[k]; k++)
			if (key[k] == '_')
				key[k] = '-';
		if (n + strlen(key) + strlen(val) + 8 >= sizeof(out))
			break;
		n += (size_t)snprintf(out + n, sizeof(out) - n, " --%s", key);
		if (strcmp(val, "True"))
			n += (size_t)snprintf(out + n, sizeof(out) - n, " %s", val);
	}
	snprintf(log->command, sizeof(log->command), "%s%s%s%s", prog,
	         model[0] ? " " : "", model, out);
	log->command_engine = engine;
}

/* ---- the engines' sentences ------------------------------------------ */

/* "CUDA0", "ROCm1", "Vulkan0", "MUSA0", "SYCL0": a GPU buffer and its
 * device; CPU, CPU_Mapped, CUDA_Host and the like are host memory. */
static int gpu_buffer(const char *name, int32_t *dev)
{
	static const char *const gpus[] = {"CUDA", "ROCm", "Vulkan", "MUSA",
	                                   "SYCL", "CANN"};
	size_t k, n;

	for (k = 0; k < sizeof(gpus) / sizeof(gpus[0]); k++) {
		n = strlen(gpus[k]);
		if (!strncmp(name, gpus[k], n) && is_digit(name[n])) {
			*dev = (int32_t)atoi(name + n);
			return 1;
		}
	}
	if (!strcmp(name, "Metal")) {
		*dev = 0;
		return 1;
	}
	return 0;
}

/* llama.cpp: "<func>: <BUF> <what> buffer size = <MiB> MiB" (what: model,
 * KV, compute, output) and the older "<func>: <BUF> buffer size = ...". */
static int llama_buffer(struct vrt_enginelog *log, const struct lineinfo *li)
{
	const char *msg = li->msg, *at = find(msg, " buffer size =");
	char words[3][48];
	int nw = 0, kind = 0;
	const char *p, *q, *name = NULL;
	double mib, tol;
	int32_t dev;
	size_t n;

	if (!at)
		return 0;
	for (q = at + 14; is_blank(*q); q++)
		;
	n = number(q, 0, 0, &mib, &tol);
	if (!n)
		return 0;
	while (is_blank(q[n]))
		n++;
	if (strncmp(q + n, "MiB", 3))
		return 0;
	/* the (up to three) words before " buffer size" */
	p = at;
	while (nw < 3 && p > msg) {
		const char *end = p, *b;
		while (end > msg && is_blank(end[-1]))
			end--;
		b = end;
		while (b > msg && !is_blank(b[-1]))
			b--;
		if (b == end)
			break;
		snprintf(words[nw], sizeof(words[0]), "%.*s", (int)(end - b),
		         b);
		nw++;
		p = b;
	}
	if (nw < 2)
		return 0;
	if (!strcmp(words[0], "model")) {
		kind = VRT_ELK_WEIGHTS;
		name = words[1];
		step(log, VRT_PHASE_weights);
	} else if (!strcmp(words[0], "KV") || !strcmp(words[0], "RS")) {
		kind = VRT_ELK_KV_BYTES; /* RS: a recurrent model's state */
		name = words[1];
		step(log, VRT_PHASE_profile); /* the compute buffers next */
	} else if (!strcmp(words[0], "compute")) {
		kind = VRT_ELK_ACTIVATION;
		name = words[1];
	} else if (find(words[1], "load_tensors")) {
		kind = VRT_ELK_WEIGHTS; /* "llm_load_tensors: CUDA0 buffer" */
		name = words[0];
		step(log, VRT_PHASE_weights);
	}
	if (!kind) {
		vote(log, VRT_ENGINELOG_LLAMACPP, 1);
		return 1; /* output buffers and the like: not compared */
	}
	if (!gpu_buffer(name, &dev)) {
		vote(log, VRT_ENGINELOG_LLAMACPP, 4);
		return 1; /* host memory */
	}
	return fact(log, li, VRT_ENGINELOG_LLAMACPP, kind, dev, mib * MIB,
	            tol * MIB + 1, 1) < 0
	               ? -1
	               : 1;
}

/* llama.cpp's fit step and memory lines: the device list with its free
 * memory, the projection of what the model will use, the breakdown
 * printed at exit. Returns 1 when the line was one, -1 out of memory. */
static int llama_memory_lines(struct vrt_enginelog *log,
                              const struct lineinfo *li)
{
	const int E = VRT_ENGINELOG_LLAMACPP;
	const char *msg = li->msg, *p;
	struct cap c;
	int32_t dev;
	char name[32];

	/* "using device CUDA0 (NVIDIA ...) (0000:01:00.0) - 23000 MiB free" */
	if (scan(msg, "using device %w (%*) - %u MiB free", &c) &&
	    gpu_buffer(c.w[0], &dev)) {
		step(log, VRT_PHASE_weights);
		return fact(log, li, E, VRT_ELK_FREE, dev, c.v[0] * MIB, MIB, 0) <
		                       0
		               ? -1
		               : 1;
	}
	/* "  - CUDA0 (NVIDIA ...):  24117 total,  20903 used,   2870 free vs.
	 * target of   1024": what the fit step projects per device; used +
	 * free is the device's free memory now. */
	if (scan(msg, "- %w (%*): %u total, %u used, %f free vs. target", &c) &&
	    gpu_buffer(c.w[0], &dev)) {
		double freenow = c.v[1] + c.v[2];
		if (fact(log, li, E, VRT_ELK_TOTAL, dev, c.v[0] * MIB, MIB, 0) ||
		    fact(log, li, E, VRT_ELK_PROJECTED, dev, c.v[1] * MIB, MIB,
		         0) ||
		    (freenow > 0 &&
		     fact(log, li, E, VRT_ELK_FREE, dev, freenow * MIB, MIB, 0)))
			return -1;
		return 1;
	}
	/* "projected to use 899 MiB of device memory vs. 16140 MiB of free
	 * device memory" (every device together) */
	if (scan(msg, "projected to use %u MiB%*vs%*%u MiB of free device "
	              "memory",
	         &c)) {
		vote(log, E, 4);
		return fact(log, li, E, VRT_ELK_PROJECTED, -1, c.v[0] * MIB, MIB,
		            0) < 0
		               ? -1
		               : 1;
	}
	/* "| - CUDA0 (RTX 3090) | 24124 = 23845 + (17542 = 10579 + 6566 +
	 * 396) + 12 |": total = free + (self = model + context + compute) +
	 * unaccounted, in MiB */
	if ((p = find(msg, "| - ")) || (p = find(msg, "|   - "))) {
		while (*p == '|' || is_blank(*p) || *p == '-')
			p++;
		word_at(p, name, sizeof(name));
		if (gpu_buffer(name, &dev) &&
		    scan(p, "| %u = %u + (%u = %u + %u + %u)", &c)) {
			if (fact(log, li, E, VRT_ELK_TOTAL, dev, c.v[0] * MIB,
			         MIB, 0))
				return -1;
			return 1;
		}
	}
	return 0;
}

/* llama.cpp's failures and the lines that say what they were for. */
static int llama_errors(struct vrt_enginelog *log, const struct lineinfo *li)
{
	const int E = VRT_ENGINELOG_LLAMACPP;
	const char *msg = li->msg;
	struct vrt_enginelog_error *e, *p;
	struct cap c;
	int32_t dev;

	if (scan(msg, "allocating %f MiB on device %u: cudaMalloc failed: "
	              "out of memory",
	         &c) ||
	    scan(msg, "allocating %f MiB on device %u: hipMalloc failed: "
	              "out of memory",
	         &c)) {
		if ((e = error(log, li, E, VRT_ELE_CUDA_MALLOC))) {
			e->requested_bytes = (uint64_t)(c.v[0] * MIB + 0.5);
			e->requested_tol = (uint64_t)(c.tol[0] * MIB) + 1;
			e->device = (int32_t)c.v[1];
			e->have |= VRT_ELH_REQUESTED | VRT_ELH_DEVICE;
			commit_error(log);
		}
		return 1;
	}
	/* "alloc_tensor_range: failed to allocate CUDA0 buffer of size N"
	 * after the cudaMalloc line (its exact size), and
	 * "ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size
	 * N" (a compute buffer); a CPU buffer is host memory. */
	if (scan(msg, "failed to allocate %w buffer of size %u", &c)) {
		int gpu = gpu_buffer(c.w[0], &dev);
		int compute = find(msg, "gallocr") != NULL;
		p = last_error(log, VRT_ELE_CUDA_MALLOC, 4);
		if (!gpu) {
			host_error(log, li, E, (uint64_t)c.v[0], 0);
			return 1;
		}
		if (p) {
			/* the same allocation: its exact size */
			p->requested_bytes = (uint64_t)c.v[0];
			p->requested_tol = MIB / 100 + 1;
			if (compute)
				p->phase = VRT_PHASE_profile;
			return 1;
		}
		if ((e = error(log, li, E, compute ? VRT_ELE_COMPUTE_ALLOC
		                                   : VRT_ELE_CUDA_MALLOC))) {
			e->requested_bytes = (uint64_t)c.v[0];
			e->device = dev;
			e->have |= VRT_ELH_REQUESTED | VRT_ELH_DEVICE;
			if (compute)
				e->phase = VRT_PHASE_profile;
			commit_error(log);
		}
		return 1;
	}
	/* ggml's host buffers: "ggml_backend_cpu_buffer_type_alloc_buffer:
	 * failed to allocate buffer of size N" is fatal; pinned memory that
	 * cannot be had falls back to pageable memory (recovered). */
	if (scan(msg, "cpu_buffer_type_alloc_buffer: failed to allocate "
	              "buffer of size %u",
	         &c)) {
		host_error(log, li, E, (uint64_t)c.v[0], 0);
		return 1;
	}
	if (scan(msg, "host_malloc: %*failed to allocate %f MiB of pinned "
	              "memory",
	         &c)) {
		host_error(log, li, E, (uint64_t)(c.v[0] * MIB + 0.5), 1);
		return 1;
	}
	if ((scan(msg, "CUDA error: out of memory", &c) ||
	     scan(msg, "ROCm error: out of memory", &c) ||
	     scan(msg, "MUSA error: out of memory", &c)) &&
	    !find(msg, "current device")) {
		if ((e = error(log, li, E, VRT_ELE_CUDA_ERROR))) {
			log->last_oom_error = (int64_t)log->nerrors;
			commit_error(log);
		}
		return 1;
	}
	if (scan(msg, "current device: %u, in function %w", &c)) {
		if (log->last_oom_error >= 0 &&
		    (size_t)log->last_oom_error < log->nerrors) {
			e = &log->errors[log->last_oom_error];
			if (!(e->have & VRT_ELH_DEVICE)) {
				e->device = (int32_t)c.v[0];
				e->have |= VRT_ELH_DEVICE;
			}
			/* the pools hold a step's temporaries */
			if (find(c.w[0], "pool"))
				e->phase = e->serving ? VRT_PHASE_forward
				                      : VRT_PHASE_profile;
		}
		log->last_oom_error = -1;
		return 1;
	}
	/* "sched_reserve: compute buffer allocation failed, retrying without
	 * pipeline parallelism": llama.cpp carries on (recovered). */
	if (find(msg, "allocation failed, retrying")) {
		if ((p = last_error(log, 0, 6)) && !vrt_enginelog_is_refusal(p->kind))
			p->recovered = 1;
		vote(log, E, 4);
		return 1;
	}
	/* The summary lines: what the failed allocation was for. */
	{
		int kind = 0, phase = VRT_ELP_UNKNOWN;
		if (find(msg, "failed to allocate compute buffers") ||
		    find(msg, "failed to allocate compute pp buffers")) {
			kind = VRT_ELE_COMPUTE_ALLOC;
			phase = VRT_PHASE_profile;
		} else if (find(msg, "failed to allocate buffer for kv cache") ||
		           find(msg, "failed to initialize the context")) {
			kind = VRT_ELE_CONTEXT_ALLOC;
			phase = VRT_PHASE_kv_cache;
		} else if (scan(msg, "unable to allocate %w buffer", &c)) {
			/* "error loading model: unable to allocate CUDA0
			 * buffer" (llama_model_load, Ollama's runners); a CPU
			 * buffer's failure was host memory, said before */
			if (!gpu_buffer(c.w[0], &dev))
				return 1;
			kind = VRT_ELE_WEIGHTS_ALLOC;
			phase = VRT_PHASE_weights;
		}
		if (kind) {
			p = last_error(log, 0, 10);
			if (p && (p->kind == VRT_ELE_CUDA_MALLOC ||
			          p->kind == VRT_ELE_CUDA_ERROR))
				;
			else if (p && p->kind == kind)
				return 1; /* said again by its caller */
			else
				p = NULL;
			if ((e = error(log, li, E, kind))) {
				inherit(e, p);
				e->phase = phase;
				if (p) {
					p->phase = phase;
					p->recovered = 0;
				}
				commit_error(log);
			}
			return 1;
		}
	}
	return 0;
}

/* llama-server's slots: a task launched on a slot is a request in flight
 * until the slot releases it; a prompt's tokens. */
static int llama_slots(struct vrt_enginelog *log, const struct lineinfo *li)
{
	const char *msg = li->msg;
	struct cap c;
	unsigned id;

	if (!scan(msg, "slot %*: id %u | task %f | %*", &c) &&
	    !scan(msg, "slot %*: id %u | task %f", &c))
		return 0;
	id = (unsigned)c.v[0];
	vote(log, VRT_ENGINELOG_LLAMACPP, 1);
	if (find(msg, "processing task") || find(msg, "launch_slot")) {
		if (id < 64 && !(log->slots_busy & (1ull << id))) {
			log->slots_busy |= 1ull << id;
			request_seen(log, li, VRT_ENGINELOG_LLAMACPP, 1);
		}
		running_now(log,
		            (uint64_t)__builtin_popcountll(log->slots_busy));
	} else if (find(msg, "stop processing") || find(msg, "release")) {
		if (id < 64)
			log->slots_busy &= ~(1ull << id);
		running_now(log,
		            (uint64_t)__builtin_popcountll(log->slots_busy));
	}
	if (scan(msg, "n_prompt_tokens = %u", &c) ||
	    scan(msg, "task.n_tokens = %u", &c) ||
	    scan(msg, "prompt tokens = %u", &c))
		log->prompt_tokens = (uint64_t)c.v[0];
	return 1;
}

static int rule_llama(struct vrt_enginelog *log, const struct lineinfo *li)
{
	const char *msg = li->msg;
	struct cap c;
	int r;

	if ((r = llama_buffer(log, li)) != 0)
		return r < 0 ? -1 : 1;
	if ((r = llama_errors(log, li)) != 0 ||
	    (r = llama_memory_lines(log, li)) != 0)
		return r < 0 ? -1 : 1;
	if (llama_slots(log, li))
		return 1;
	/* "llama_kv_cache: size = 4096.00 MiB ( 4096 cells, 32 layers, 4/4
	 * seqs)": cells per stream, n_seq_max / n_stream; the cache holds
	 * cells x streams tokens (a unified cache is one stream). */
	if (scan(msg, "llama_kv_cache%*: size = %f MiB (%_%u cells, %u layers, "
	              "%u/%u seqs)",
	         &c)) {
		config(log, VRT_ENGINELOG_LLAMACPP, VRT_ELC_SLOTS, c.v[3]);
		step(log, VRT_PHASE_profile);
		return fact(log, li, VRT_ENGINELOG_LLAMACPP, VRT_ELK_KV_TOKENS,
		            -1, c.v[1] * (c.v[4] ? c.v[4] : 1), 0, 0) < 0
		               ? -1
		               : 1;
	}
	if (strncmp(msg, "llama_context:", 14) == 0 ||
	    strncmp(msg, "llama_new_context_with_model:", 29) == 0 ||
	    strncmp(msg, "llama_init_from_model:", 22) == 0) {
		vote(log, VRT_ENGINELOG_LLAMACPP, 1);
		step(log, VRT_PHASE_kv_cache);
		if (scan(msg, ": n_ctx = %u", &c))
			config(log, VRT_ENGINELOG_LLAMACPP, VRT_ELC_CTX_SIZE,
			       c.v[0]);
		else if (scan(msg, ": n_ctx_per_seq = %u", &c))
			config(log, VRT_ENGINELOG_LLAMACPP,
			       VRT_ELC_MAX_MODEL_LEN, c.v[0]);
		else if (scan(msg, ": n_seq_max = %u", &c))
			config(log, VRT_ENGINELOG_LLAMACPP, VRT_ELC_SLOTS,
			       c.v[0]);
		else if (scan(msg, ": n_ubatch = %u", &c))
			config(log, VRT_ENGINELOG_LLAMACPP, VRT_ELC_UBATCH,
			       c.v[0]);
		else if (scan(msg, ": n_batch = %u", &c))
			config(log, VRT_ENGINELOG_LLAMACPP, VRT_ELC_BATCH, c.v[0]);
		else if (scan(msg, ": flash_attn = %w", &c))
			config(log, VRT_ENGINELOG_LLAMACPP, VRT_ELC_FLASH_ATTN,
			       !strcmp(c.w[0], "1") || !strcmp(c.w[0], "enabled")
			               ? 1
			               : 0);
		return 1;
	}
	if (scan(msg, "offloaded %u/%u layers to GPU", &c)) {
		config(log, VRT_ENGINELOG_LLAMACPP, VRT_ELC_GPU_LAYERS, c.v[0]);
		return 1;
	}
	if (scan(msg, "n_slots = %u", &c)) {
		config(log, VRT_ENGINELOG_LLAMACPP, VRT_ELC_SLOTS, c.v[0]);
		return 1;
	}
	if (!strncmp(msg, "llama_model_loader:", 19) ||
	    !strncmp(msg, "load_tensors:", 13)) {
		vote(log, VRT_ENGINELOG_LLAMACPP, 1);
		step(log, VRT_PHASE_weights);
		if (scan(msg, "tensors from %w", &c) && !log->model[0])
			snprintf(log->model, sizeof(log->model), "%s", c.w[0]);
		return 1;
	}
	if (scan(msg, "load_model: loading model '%*'", &c)) {
		const char *q = strchr(msg, '\'');
		size_t n = q ? strcspn(q + 1, "'") : 0;
		if (q && n < sizeof(log->model))
			snprintf(log->model, sizeof(log->model), "%.*s", (int)n,
			         q + 1);
		step(log, VRT_PHASE_weights);
		vote(log, VRT_ENGINELOG_LLAMACPP, 2);
		return 1;
	}
	if (find(msg, "sched_reserve:") || find(msg, "graph_reserve:")) {
		step(log, VRT_PHASE_profile);
		vote(log, VRT_ENGINELOG_LLAMACPP, 1);
		return 1;
	}
	/* Ready: "model loaded" (main: before, "srv    llama_server:" now),
	 * then the listening line that follows it: "server is listening
	 * on" (main:), "listening on http://" (llama_server:), the old JSON
	 * server's "HTTP server listening". The server's HTTP thread is up
	 * before the model loads ("HTTP server is listening, hostname: "):
	 * not ready. */
	if (find(msg, "server is listening on") ||
	    (find(msg, "listening on http") && !find(msg, "router")) ||
	    !strcmp(msg, "HTTP server listening")) {
		ready(log, li, VRT_ENGINELOG_LLAMACPP, 3);
		step(log, VRT_PHASE_forward);
		return 1;
	}
	if (find(msg, ": model loaded") || !strcmp(msg, "model loaded")) {
		ready(log, li, VRT_ENGINELOG_LLAMACPP, 2);
		step(log, VRT_PHASE_forward);
		return 1;
	}
	if (find(msg, "all slots are idle")) {
		ready(log, li, VRT_ENGINELOG_LLAMACPP, 1);
		step(log, VRT_PHASE_forward);
		return 1;
	}
	return 0;
}

/* The numbers an error printed (not what the log said around it). */
#define NUMBERS                                                             \
	(VRT_ELH_REQUESTED | VRT_ELH_TOTAL | VRT_ELH_FREE | VRT_ELH_ALLOCATED | \
	 VRT_ELH_RESERVED | VRT_ELH_NEEDED | VRT_ELH_AVAILABLE |               \
	 VRT_ELH_MAX_MODEL_LEN | VRT_ELH_SUGGESTED_LEN | VRT_ELH_TOKENS |      \
	 VRT_ELH_MEM_FRACTION | VRT_ELH_DEVICE)

/* 1 when errors[i] repeats an earlier error (commit_error's test). */
static int repeats(const struct vrt_enginelog *log, size_t i)
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

/* PyTorch's OutOfMemoryError with the cudaMallocAsync backend: a first
 * line, then one line per number ("Requested               : 2.00 GiB",
 * "Free (according to CUDA): 512.00 MiB", ...), each filled into the
 * error the first line opened (log->last_oom_error). */
static int rule_torch_async(struct vrt_enginelog *log,
                            const struct lineinfo *li)
{
	const char *msg = li->msg;
	struct vrt_enginelog_error *e;
	struct cap c;
	size_t i;

	while (is_blank(*msg))
		msg++;
	if (scan(msg, "Allocation on device %u would exceed allowed memory",
	         &c)) {
		if ((e = error(log, li, VRT_ENGINELOG_UNKNOWN,
		               VRT_ELE_TORCH_OOM))) {
			e->device = (int32_t)c.v[0];
			e->have |= VRT_ELH_DEVICE;
			log->last_oom_error = (int64_t)log->nerrors;
			log->nerrors++; /* its numbers follow */
		}
		return 1;
	}
	if (log->last_oom_error < 0 ||
	    (size_t)log->last_oom_error + 1 != log->nerrors)
		return 0;
	i = (size_t)log->last_oom_error;
	e = &log->errors[i];
	if (e->kind != VRT_ELE_TORCH_OOM)
		return 0;
	if (match_here(msg, "Requested%_: %z", (memset(&c, 0, sizeof(c)), &c))) {
		e->requested_bytes = (uint64_t)c.v[0];
		e->requested_tol = (uint64_t)c.tol[0];
		e->have |= VRT_ELH_REQUESTED;
	} else if (match_here(msg, "Free (according to %*): %z",
	                      (memset(&c, 0, sizeof(c)), &c))) {
		e->free_bytes = (uint64_t)c.v[0];
		e->have |= VRT_ELH_FREE;
	} else if (match_here(msg, "Device limit%_: %z",
	                      (memset(&c, 0, sizeof(c)), &c))) {
		e->total_bytes = (uint64_t)c.v[0];
		e->have |= VRT_ELH_TOTAL;
	} else if (match_here(msg, "Currently allocated%_: %z",
	                      (memset(&c, 0, sizeof(c)), &c))) {
		e->allocated_bytes = (uint64_t)c.v[0];
		e->have |= VRT_ELH_ALLOCATED;
	} else {
		return 0;
	}
	/* the same error printed again (re-raised elsewhere) counts once */
	if (e->have & VRT_ELH_FREE && repeats(log, i)) {
		log->nerrors--;
		log->last_oom_error = -1;
	}
	return 1;
}

/* "Process 1234 has 10.00 GiB memory in use" for every process PyTorch
 * names (NVML's list for the device), and "Including non-PyTorch memory,
 * this process has X memory in use". */
static void torch_processes(struct vrt_enginelog_error *e, const char *msg)
{
	const char *at;
	struct cap c;

	for (at = msg; (at = find(at, "Process ")); at++) {
		memset(&c, 0, sizeof(c));
		if (!match_here(at, "Process %u has %z memory in use", &c))
			continue;
		if (e->nothers < VRT_ENGINELOG_MAX_OTHERS) {
			e->others[e->nothers].pid = (int64_t)c.v[0];
			e->others[e->nothers].bytes = (uint64_t)c.v[1];
			e->nothers++;
		}
	}
	if (scan(msg, "this process has %z memory in use", &c)) {
		e->process_bytes = (uint64_t)c.v[0];
		e->have |= VRT_ELH_PROCESS;
	}
}

/* Before PyTorch 2.2 the message lists every process on the card, this
 * one among them ("Process N has X memory in use", no "this process
 * has"): the one holding at least what PyTorch allocated and reserved
 * (its CUDA context on top) is this one, not another. */
static void torch_self(struct vrt_enginelog_error *e)
{
	uint64_t floor;
	unsigned k, best = VRT_ENGINELOG_MAX_OTHERS;

	if ((e->have & VRT_ELH_PROCESS) || !e->nothers ||
	    !(e->have & VRT_ELH_ALLOCATED))
		return;
	floor = e->allocated_bytes +
	        ((e->have & VRT_ELH_RESERVED) ? e->reserved_bytes : 0);
	for (k = 0; k < e->nothers; k++)
		if (e->others[k].bytes >= floor &&
		    (best == VRT_ENGINELOG_MAX_OTHERS ||
		     e->others[k].bytes < e->others[best].bytes))
			best = k;
	if (best == VRT_ENGINELOG_MAX_OTHERS)
		return;
	e->process_bytes = e->others[best].bytes;
	e->have |= VRT_ELH_PROCESS;
	if (e->pid < 0)
		e->pid = e->others[best].pid;
	e->others[best] = e->others[--e->nothers];
}

/* PyTorch's OutOfMemoryError (CUDA, HIP): the current message and the one
 * before PyTorch 2.1. */
static int rule_torch(struct vrt_enginelog *log, const struct lineinfo *li)
{
	const char *msg = li->msg;
	struct cap c;
	struct vrt_enginelog_error *e;

	if (rule_torch_async(log, li))
		return 1;
	if (!find(msg, "out of memory. Tried to allocate "))
		return 0;
	e = error(log, li, VRT_ENGINELOG_UNKNOWN, VRT_ELE_TORCH_OOM);
	if (!e)
		return 1;
	if (scan(msg, "Tried to allocate %z. GPU %u has a total capacit%* of "
	              "%z of which %z is free",
	         &c)) {
		e->requested_bytes = (uint64_t)c.v[0];
		e->requested_tol = (uint64_t)c.tol[0];
		e->device = (int32_t)c.v[1];
		e->total_bytes = (uint64_t)c.v[2];
		e->free_bytes = (uint64_t)c.v[3];
		e->have |= VRT_ELH_REQUESTED | VRT_ELH_DEVICE | VRT_ELH_TOTAL |
		           VRT_ELH_FREE;
		if (scan(msg, "Of the allocated memory %z is allocated by "
		              "PyTorch",
		         &c)) {
			e->allocated_bytes = (uint64_t)c.v[0];
			e->have |= VRT_ELH_ALLOCATED;
		}
		if (scan(msg, "with %z allocated in private pools", &c)) {
			e->private_bytes = (uint64_t)c.v[0];
			e->have |= VRT_ELH_PRIVATE;
		}
		if (scan(msg, "and %z is reserved by PyTorch but unallocated",
		         &c)) {
			e->reserved_bytes = (uint64_t)c.v[0];
			e->have |= VRT_ELH_RESERVED;
		}
		torch_processes(e, msg);
		torch_self(e);
	} else if (scan(msg, "Tried to allocate %z (GPU %u; %z total capacity; "
	                     "%z already allocated; %z free; %z reserved in "
	                     "total by PyTorch)",
	                &c)) {
		e->requested_bytes = (uint64_t)c.v[0];
		e->requested_tol = (uint64_t)c.tol[0];
		e->device = (int32_t)c.v[1];
		e->total_bytes = (uint64_t)c.v[2];
		e->allocated_bytes = (uint64_t)c.v[3];
		e->free_bytes = (uint64_t)c.v[4];
		e->reserved_bytes = c.v[5] > c.v[3] ? (uint64_t)(c.v[5] - c.v[3])
		                                    : 0;
		e->have |= VRT_ELH_REQUESTED | VRT_ELH_DEVICE | VRT_ELH_TOTAL |
		           VRT_ELH_FREE | VRT_ELH_ALLOCATED | VRT_ELH_RESERVED;
	} else if (scan(msg, "Tried to allocate %z", &c)) {
		e->requested_bytes = (uint64_t)c.v[0];
		e->requested_tol = (uint64_t)c.tol[0];
		e->have |= VRT_ELH_REQUESTED;
	}
	commit_error(log);
	return 1;
}

/* Other memory errors a Python engine raises: "CUDA error: out of
 * memory" (torch.AcceleratorError, a kernel launch), "RuntimeError: CUDA
 * out of memory" without numbers; PyTorch's host allocator out of host
 * memory ("DefaultCPUAllocator: can't allocate memory: you tried to
 * allocate N bytes"). */
static int rule_python_oom(struct vrt_enginelog *log, const struct lineinfo *li)
{
	const char *msg = li->msg;
	struct vrt_enginelog_error *e;
	struct cap c;

	if (scan(msg, "DefaultCPUAllocator: can't allocate memory: you tried "
	              "to allocate %u bytes",
	         &c)) {
		host_error(log, li, VRT_ENGINELOG_UNKNOWN, (uint64_t)c.v[0], 0);
		return 1;
	}

	if (!(find(msg, "Error: CUDA error: out of memory") ||
	      find(msg, "Error: CUDA out of memory") ||
	      find(msg, "Error: HIP out of memory") ||
	      find(msg, "Error: HIP error: out of memory")))
		return 0;
	if ((e = error(log, li, VRT_ENGINELOG_UNKNOWN, VRT_ELE_OOM_OTHER)))
		commit_error(log);
	return 1;
}

/* vLLM's start-up lines that say which step it is in. */
static void vllm_steps(struct vrt_enginelog *log, const char *msg)
{
	if (find(msg, "Starting to load model") ||
	    find(msg, "Loading safetensors checkpoint shards") ||
	    find(msg, "Loading weights took"))
		step(log, VRT_PHASE_weights);
	else if (find(msg, "Memory profiling takes"))
		step(log, VRT_PHASE_kv_cache);
	else if (find(msg, "Capturing CUDA graph") ||
	         find(msg, "Capturing cudagraphs") ||
	         find(msg, "Capturing the model for CUDA graphs"))
		step(log, VRT_PHASE_cuda_graph);
	else if (find(msg, "init engine (profile, create kv cache, warmup "
	                     "model) took"))
		step(log, VRT_PHASE_forward);
}

static int rule_vllm(struct vrt_enginelog *log, const struct lineinfo *li)
{
	const char *msg = li->msg, *p;
	const int E = VRT_ENGINELOG_VLLM;
	struct cap c;
	struct vrt_enginelog_error *e;
	double v;

	if (scan(msg, "Model loading took %f GiB", &c) ||
	    scan(msg, "Loading model weights took %f GB", &c)) {
		step(log, VRT_PHASE_profile); /* the profile run is next */
		return fact(log, li, E, VRT_ELK_WEIGHTS, -1, c.v[0] * GIB,
		            c.tol[0] * GIB, 0) < 0
		               ? -1
		               : 1;
	}
	if (scan(msg, "model weights take %z; non_torch_memory takes %z; "
	              "PyTorch activation peak memory takes %z; the rest of "
	              "the memory reserved for KV Cache is %f",
	         &c)) {
		step(log, VRT_PHASE_kv_cache);
		if (fact(log, li, E, VRT_ELK_WEIGHTS, -1, c.v[0], c.tol[0], 0) ||
		    fact(log, li, E, VRT_ELK_NON_TORCH, -1, c.v[1], c.tol[1],
		         0) ||
		    fact(log, li, E, VRT_ELK_ACTIVATION, -1, c.v[2], c.tol[2],
		         0) ||
		    (c.v[3] > 0 && fact(log, li, E, VRT_ELK_KV_BYTES, -1,
		                        c.v[3] * GIB, c.tol[3] * GIB, 0)))
			return -1;
		return 1;
	}
	/* V0 0.6: "Memory profiling results: total_gpu_memory=79.22GiB
	 * initial_memory_usage=... peak_torch_memory=... non_torch_memory=
	 * ... kv_cache_size=60.00GiB gpu_memory_utilization=0.90" */
	if (find(msg, "Memory profiling results:")) {
		step(log, VRT_PHASE_kv_cache);
		vote(log, E, 4);
		if (scan(msg, "total_gpu_memory=%z", &c) &&
		    fact(log, li, E, VRT_ELK_TOTAL, -1, c.v[0], c.tol[0], 0))
			return -1;
		if (scan(msg, "kv_cache_size=%z", &c) &&
		    fact(log, li, E, VRT_ELK_KV_BYTES, -1, c.v[0], c.tol[0], 0))
			return -1;
		/* the peak of the profile run, weights included */
		if (scan(msg, "peak_torch_memory=%z", &c)) {
			uint64_t wb = 0;
			double act = c.v[0];
			if (vrt_enginelog_value(log, VRT_ELK_WEIGHTS, li->rank, &wb,
			                        NULL, NULL) &&
			    (double)wb < act)
				act -= (double)wb;
			if (fact(log, li, E, VRT_ELK_ACTIVATION, -1, act,
			         c.tol[0], 0))
				return -1;
		}
		if (keyval(msg, "gpu_memory_utilization=", &v))
			config(log, E, VRT_ELC_MEM_FRACTION, v * 1000);
		return 1;
	}
	if (scan(msg, "total_gpu_memory (%z) x gpu_memory_utilization (%f)",
	         &c)) {
		config(log, E, VRT_ELC_MEM_FRACTION, c.v[1] * 1000);
		return fact(log, li, E, VRT_ELK_TOTAL, -1, c.v[0], c.tol[0],
		            0) < 0
		               ? -1
		               : 1;
	}
	/* 0.10, 0.11: "Free memory on device (F/T GiB) on startup. Desired
	 * GPU memory utilization is (U, X GiB). Actual usage is W GiB for
	 * weight, A GiB for peak activation, N GiB for non-torch memory,
	 * and G GiB for CUDAGraph memory." (later: "C GiB for consumed
	 * memory (weights + non-torch), A GiB for peak activation, and G GiB
	 * for CUDAGraph memory") */
	if (scan(msg, "Free memory on device%*(%f/%f GiB) on startup. Desired",
	         &c)) {
		double f = c.v[0], t = c.v[1];
		vote(log, E, 4);
		if (fact(log, li, E, VRT_ELK_FREE, -1, f * GIB, c.tol[0] * GIB,
		         0) ||
		    fact(log, li, E, VRT_ELK_TOTAL, -1, t * GIB, c.tol[1] * GIB,
		         0))
			return -1;
		if (scan(msg, "memory utilization is (%f,", &c))
			config(log, E, VRT_ELC_MEM_FRACTION, c.v[0] * 1000);
		if (scan(msg, "Actual usage is %f GiB for weight, %f GiB for peak "
		              "activation, %f GiB for non-torch memory, and %f "
		              "GiB for CUDAGraph memory",
		         &c)) {
			if (fact(log, li, E, VRT_ELK_WEIGHTS, -1, c.v[0] * GIB,
			         c.tol[0] * GIB, 0) ||
			    fact(log, li, E, VRT_ELK_ACTIVATION, -1, c.v[1] * GIB,
			         c.tol[1] * GIB, 0) ||
			    fact(log, li, E, VRT_ELK_NON_TORCH, -1, c.v[2] * GIB,
			         c.tol[2] * GIB, 0) ||
			    fact(log, li, E, VRT_ELK_GRAPH, -1, c.v[3] * GIB,
			         c.tol[3] * GIB, 0))
				return -1;
		} else if (scan(msg, "Actual usage is %f GiB for consumed memory "
		                     "%*, %f GiB for peak activation, and %f GiB "
		                     "for CUDAGraph memory",
		                &c)) {
			if (fact(log, li, E, VRT_ELK_ACTIVATION, -1, c.v[1] * GIB,
			         c.tol[1] * GIB, 0) ||
			    fact(log, li, E, VRT_ELK_GRAPH, -1, c.v[2] * GIB,
			         c.tol[2] * GIB, 0))
				return -1;
		}
		return 1;
	}
	if (scan(msg, "Available KV cache memory: %f GiB", &c)) {
		step(log, VRT_PHASE_kv_cache);
		return fact(log, li, E, VRT_ELK_KV_BYTES, -1, c.v[0] * GIB,
		            c.tol[0] * GIB, 0) < 0
		               ? -1
		               : 1;
	}
	if (scan(msg, "GPU KV cache size: %u tokens", &c)) {
		step(log, VRT_PHASE_cuda_graph); /* graph capture is next */
		return fact(log, li, E, VRT_ELK_KV_TOKENS, -1, c.v[0], 0, 0) < 0
		               ? -1
		               : 1;
	}
	if (scan(msg, "Maximum concurrency for %u tokens per request: %fx",
	         &c)) {
		config(log, E, VRT_ELC_MAX_MODEL_LEN, c.v[0]);
		return fact(log, li, E, VRT_ELK_CONCURRENCY, -1, c.v[1] * 1000,
		            c.tol[1] * 1000, 0) < 0
		               ? -1
		               : 1;
	}
	if (scan(msg, "# CUDA blocks: %u, # CPU blocks: %u", &c) ||
	    scan(msg, "# GPU blocks: %u, # CPU blocks: %u", &c)) {
		step(log, VRT_PHASE_cuda_graph);
		return fact(log, li, E, VRT_ELK_KV_BLOCKS, -1, c.v[0], 0, 0) < 0
		               ? -1
		               : 1;
	}
	if (scan(msg, "Graph capturing finished in %f secs, took %f GiB", &c)) {
		step(log, VRT_PHASE_forward);
		return fact(log, li, E, VRT_ELK_GRAPH, -1, c.v[1] * GIB,
		            c.tol[1] * GIB, 0) < 0
		               ? -1
		               : 1;
	}
	if (find(msg, "LLM engine (v") && find(msg, "with config:")) {
		vote(log, E, 4);
		if (keyval(msg, "max_seq_len=", &v))
			config(log, E, VRT_ELC_MAX_MODEL_LEN, v);
		if (keyval(msg, "tensor_parallel_size=", &v))
			config(log, E, VRT_ELC_TP, v);
		return 1;
	}
	if ((p = find(msg, "non-default args: {"))) {
		vote(log, E, 4);
		if (keyval(msg, "'max_model_len':", &v))
			config(log, E, VRT_ELC_MAX_MODEL_LEN, v);
		if (keyval(msg, "'max_num_seqs':", &v))
			config(log, E, VRT_ELC_MAX_NUM_SEQS, v);
		if (keyval(msg, "'gpu_memory_utilization':", &v))
			config(log, E, VRT_ELC_MEM_FRACTION, v * 1000);
		if (keyval(msg, "'tensor_parallel_size':", &v))
			config(log, E, VRT_ELC_TP, v);
		if (keyval(msg, "'block_size':", &v))
			config(log, E, VRT_ELC_BLOCK_SIZE, v);
		if (keyval(msg, "'max_num_batched_tokens':", &v))
			config(log, E, VRT_ELC_BATCH, v);
		command_from_dict(log, E, "vllm serve", p + 18);
		return 1;
	}
	/* V1 raises "To serve at least one request with the models's max seq
	 * len (N), (X GiB KV cache is needed, ..." */
	if (scan(msg, "max seq len (%u), (%f GiB KV cache is needed, which is "
	              "larger than the available KV cache memory (%f GiB)",
	         &c)) {
		if ((e = error(log, li, E, VRT_ELE_KV_TOO_SMALL))) {
			e->max_model_len = (uint64_t)c.v[0];
			e->needed_bytes = (uint64_t)(c.v[1] * GIB);
			e->available_bytes = (uint64_t)(c.v[2] * GIB);
			e->have |= VRT_ELH_MAX_MODEL_LEN | VRT_ELH_NEEDED |
			           VRT_ELH_AVAILABLE;
			if (scan(msg, "estimated maximum model length is %u",
			         &c)) {
				e->suggested_max_model_len = (uint64_t)c.v[0];
				e->have |= VRT_ELH_SUGGESTED_LEN;
			}
			commit_error(log);
		}
		return 1;
	}
	if (scan(msg, "The model's max seq len (%u) is larger than the maximum "
	              "number of tokens that can be stored in KV cache (%u)",
	         &c)) {
		if ((e = error(log, li, E, VRT_ELE_KV_TOO_SMALL))) {
			e->max_model_len = (uint64_t)c.v[0];
			e->suggested_max_model_len = (uint64_t)c.v[1];
			e->have |= VRT_ELH_MAX_MODEL_LEN | VRT_ELH_SUGGESTED_LEN;
			commit_error(log);
		}
		return 1;
	}
	if (find(msg, "No available memory for the cache blocks")) {
		if ((e = error(log, li, E, VRT_ELE_NO_KV_MEMORY)))
			commit_error(log);
		return 1;
	}
	/* 0.11: "Free memory on device cuda:0 (F/T GiB) on startup is less
	 * than ..." (before: no device name) */
	if (scan(msg, "Free memory on device%*(%f/%f GiB) on startup is less "
	              "than desired GPU memory utilization (%f, %f GiB)",
	         &c)) {
		if ((e = error(log, li, E, VRT_ELE_FREE_BELOW_UTIL))) {
			struct cap d;
			e->free_bytes = (uint64_t)(c.v[0] * GIB);
			e->total_bytes = (uint64_t)(c.v[1] * GIB);
			e->mem_fraction_milli = (uint64_t)(c.v[2] * 1000 + 0.5);
			e->needed_bytes = (uint64_t)(c.v[3] * GIB);
			e->have |= VRT_ELH_FREE | VRT_ELH_TOTAL |
			           VRT_ELH_MEM_FRACTION | VRT_ELH_NEEDED;
			if (scan(msg, "Free memory on device cuda:%u", &d) ||
			    scan(msg, "Free memory on device rocm:%u", &d)) {
				e->device = (int32_t)d.v[0];
				e->have |= VRT_ELH_DEVICE;
			}
			e->phase = VRT_PHASE_weights; /* at start-up */
			commit_error(log);
		}
		return 1;
	}
	/* V1: "CUDA out of memory occurred when warming up sampler with N
	 * dummy requests. Please try lowering `max_num_seqs` or
	 * `gpu_memory_utilization`": the PyTorch error just before is its
	 * allocation. */
	if (scan(msg, "out of memory occurred when warming up %*with %u dummy "
	              "requests",
	         &c)) {
		if ((e = error(log, li, E, VRT_ELE_SAMPLER_WARMUP))) {
			struct vrt_enginelog_error *oom =
			        last_error(log, VRT_ELE_TORCH_OOM, 40);
			inherit(e, oom);
			e->count = (uint64_t)c.v[0];
			e->have |= VRT_ELH_COUNT;
			/* the dummy requests are --max-num-seqs */
			if (!log->config_line[VRT_ELC_MAX_NUM_SEQS])
				config(log, E, VRT_ELC_MAX_NUM_SEQS, c.v[0]);
			e->phase = VRT_PHASE_profile;
			e->serving = 0;
			if (oom) {
				/* its allocation is this one: one error */
				*oom = *e;
				log->nerrors--;
			}
			commit_error(log);
		}
		return 1;
	}
	/* V0 and V1 metrics: "Running: 12 reqs, Swapped: 0 reqs, Pending: 0
	 * reqs" / "Running: 12 reqs, Waiting: 0 reqs" */
	if (scan(msg, "Running: %u reqs", &c)) {
		vote(log, E, 1);
		running_now(log, (uint64_t)c.v[0]);
		return 1;
	}
	if (find(msg, "Added request ")) {
		request_seen(log, li, E, 1);
		return 1;
	}
	if (find(msg, "Starting vLLM API server")) {
		ready(log, li, E, 1);
		step(log, VRT_PHASE_forward);
		return 1;
	}
	vllm_steps(log, msg);
	return 0;
}

/* SGLang's server_args=ServerArgs(model_path='m', tp_size=2, ...) as a
 * command line: the arguments that size memory and the model. */
static void command_sglang(struct vrt_enginelog *log, const char *args)
{
	static const struct {
		const char *key, *flag;
	} keys[] = {{"tp_size=", "--tp-size"},
	            {"mem_fraction_static=", "--mem-fraction-static"},
	            {"context_length=", "--context-length"},
	            {"max_running_requests=", "--max-running-requests"},
	            {"max_total_tokens=", "--max-total-tokens"},
	            {"chunked_prefill_size=", "--chunked-prefill-size"},
	            {"cuda_graph_max_bs=", "--cuda-graph-max-bs"},
	            {"dp_size=", "--dp-size"},
	            {"pp_size=", "--pp-size"},
	            {"kv_cache_dtype=", "--kv-cache-dtype"},
	            {"quantization=", "--quantization"},
	            {"port=", "--port"}};
	char out[VRT_ENGINELOG_CMD], val[160];
	const char *p;
	size_t n = 0, k, v;

	n = (size_t)snprintf(out, sizeof(out), "python -m sglang.launch_server");
	if ((p = find(args, "model_path='"))) {
		p += 12;
		v = strcspn(p, "'");
		if (v < sizeof(val) && n + v + 16 < sizeof(out))
			n += (size_t)snprintf(out + n, sizeof(out) - n,
			                      " --model-path %.*s", (int)v, p);
	}
	for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		const char *at;
		for (at = args; (at = find(at, keys[k].key)); at++)
			if (at == args || at[-1] == ' ' || at[-1] == '(')
				break;
		if (!at)
			continue;
		p = at + strlen(keys[k].key);
		if (*p == '\'')
			p++;
		v = strcspn(p, "',)");
		if (!v || v >= sizeof(val) || !strncmp(p, "None", 4) ||
		    n + v + strlen(keys[k].flag) + 3 >= sizeof(out))
			continue;
		/* defaults SGLang prints that no one set */
		if (!strcmp(keys[k].key, "dp_size=") && v == 1 && *p == '1')
			continue;
		if (!strcmp(keys[k].key, "pp_size=") && v == 1 && *p == '1')
			continue;
		if (!strcmp(keys[k].key, "tp_size=") && v == 1 && *p == '1')
			continue;
		if (!strcmp(keys[k].key, "kv_cache_dtype=") && !strncmp(p, "auto", 4))
			continue;
		n += (size_t)snprintf(out + n, sizeof(out) - n, " %s %.*s",
		                      keys[k].flag, (int)v, p);
	}
	snprintf(log->command, sizeof(log->command), "%s", out);
	log->command_engine = VRT_ENGINELOG_SGLANG;
}

static int rule_sglang(struct vrt_enginelog *log, const struct lineinfo *li)
{
	const char *msg = li->msg;
	const int E = VRT_ENGINELOG_SGLANG;
	unsigned rank = li->rank >= 0 && li->rank < 64 ? (unsigned)li->rank : 0;
	struct cap c;
	struct vrt_enginelog_error *e;
	double v;

	if (scan(msg, "Load weight begin. avail mem=%f GB", &c)) {
		vote(log, E, 4);
		step(log, VRT_PHASE_weights);
		log->sglang_avail[0][rank] = (uint64_t)(c.v[0] * 1000 + 0.5);
		return fact(log, li, E, VRT_ELK_FREE, -1, c.v[0] * GIB,
		            c.tol[0] * GIB, 0) < 0
		               ? -1
		               : 1;
	}
	/* 0.4: "Load weight end. type=X, dtype=Y, avail mem=A GB, mem
	 * usage=W GB."; 0.5: "Load weight end. elapsed=S s, type=X,
	 * quant=Q, avail mem=A GB, mem usage=W GB." */
	if (scan(msg, "Load weight end.%*mem usage=%f GB", &c)) {
		step(log, VRT_PHASE_kv_cache);
		return fact(log, li, E, VRT_ELK_WEIGHTS, -1, c.v[0] * GIB,
		            c.tol[0] * GIB, 0) < 0
		               ? -1
		               : 1;
	}
	if (scan(msg, "Load weight end.%*avail mem=%f GB", &c)) {
		double before = (double)log->sglang_avail[0][rank] / 1000;
		vote(log, E, 4);
		step(log, VRT_PHASE_kv_cache);
		if (before > c.v[0])
			return fact(log, li, E, VRT_ELK_WEIGHTS, -1,
			            (before - c.v[0]) * GIB, 0.01 * GIB, 0) < 0
			               ? -1
			               : 1;
		return 1;
	}
	if (scan(msg, "KV Cache is allocated. #tokens: %u, K size: %f GB, V "
	              "size: %f GB",
	         &c)) {
		step(log, VRT_PHASE_cuda_graph);
		if (fact(log, li, E, VRT_ELK_KV_TOKENS, -1, c.v[0], 0, 0) ||
		    fact(log, li, E, VRT_ELK_KV_BYTES, -1,
		         (c.v[1] + c.v[2]) * GIB,
		         (c.tol[1] + c.tol[2]) * GIB, 0))
			return -1;
		return 1;
	}
	if (scan(msg, "KV Cache is allocated. #tokens: %u, KV size: %f GB",
	         &c)) {
		step(log, VRT_PHASE_cuda_graph);
		if (fact(log, li, E, VRT_ELK_KV_TOKENS, -1, c.v[0], 0, 0) ||
		    fact(log, li, E, VRT_ELK_KV_BYTES, -1, c.v[1] * GIB,
		         c.tol[1] * GIB, 0))
			return -1;
		return 1;
	}
	if (scan(msg, "Capture cuda graph begin.%*avail mem=%f GB", &c)) {
		vote(log, E, 4);
		step(log, VRT_PHASE_cuda_graph);
		log->sglang_avail[1][rank] = (uint64_t)(c.v[0] * 1000 + 0.5);
		return 1;
	}
	if (scan(msg, "Capture cuda graph end.%*mem usage=%f GB", &c)) {
		step(log, VRT_PHASE_forward);
		return fact(log, li, E, VRT_ELK_GRAPH, -1, c.v[0] * GIB,
		            c.tol[0] * GIB, 0) < 0
		               ? -1
		               : 1;
	}
	if (scan(msg, "Capture cuda graph end.%*avail mem=%f GB", &c)) {
		double before = (double)log->sglang_avail[1][rank] / 1000;
		vote(log, E, 4);
		step(log, VRT_PHASE_forward);
		if (before > c.v[0])
			return fact(log, li, E, VRT_ELK_GRAPH, -1,
			            (before - c.v[0]) * GIB, 0.01 * GIB, 0) < 0
			               ? -1
			               : 1;
		return 1;
	}
	/* a warning: SGLang uses the profiled value */
	if (scan(msg, "max_total_tokens=%u is larger than the profiled value "
	              "%u",
	         &c)) {
		vote(log, E, 4);
		return fact(log, li, E, VRT_ELK_KV_TOKENS, -1, c.v[1], 0, 0) < 0
		               ? -1
		               : 1;
	}
	if (find(msg, "max_total_num_tokens=")) {
		vote(log, E, 4);
		if (keyval(msg, "max_running_requests=", &v))
			config(log, E, VRT_ELC_MAX_NUM_SEQS, v);
		if (keyval(msg, "context_len=", &v))
			config(log, E, VRT_ELC_MAX_MODEL_LEN, v);
		if (keyval(msg, "chunked_prefill_size=", &v))
			config(log, E, VRT_ELC_BATCH, v);
		if (keyval(msg, "max_total_num_tokens=", &v))
			return fact(log, li, E, VRT_ELK_KV_TOKENS, -1, v, 0, 0) <
			                       0
			               ? -1
			               : 1;
		return 1;
	}
	if (find(msg, "server_args=ServerArgs(")) {
		vote(log, E, 4);
		if (keyval(msg, "mem_fraction_static=", &v))
			config(log, E, VRT_ELC_MEM_FRACTION, v * 1000);
		if (keyval(msg, "tp_size=", &v))
			config(log, E, VRT_ELC_TP, v);
		if (keyval(msg, "context_length=", &v))
			config(log, E, VRT_ELC_MAX_MODEL_LEN, v);
		if (keyval(msg, "max_running_requests=", &v))
			config(log, E, VRT_ELC_MAX_NUM_SEQS, v);
		if (keyval(msg, "page_size=", &v))
			config(log, E, VRT_ELC_BLOCK_SIZE, v);
		if (keyval(msg, "chunked_prefill_size=", &v))
			config(log, E, VRT_ELC_BATCH, v);
		command_sglang(log, find(msg, "ServerArgs(") + 11);
		return 1;
	}
	if (find(msg, "Not enough memory. Please try to increase "
	                "--mem-fraction-static")) {
		if ((e = error(log, li, E, VRT_ELE_MEM_FRACTION))) {
			if (keyval(msg, "mem_fraction_static=", &v)) {
				e->mem_fraction_milli = (uint64_t)(v * 1000 + 0.5);
				e->have |= VRT_ELH_MEM_FRACTION;
			}
			e->phase = VRT_PHASE_kv_cache;
			commit_error(log);
		}
		return 1;
	}
	/* 0.5: "Loaded weights leave no GPU memory for the KV cache under
	 * --mem-fraction-static=F. Raise --mem-fraction-static above S
	 * (minimum viable = 1 - available/pre = M)." */
	if (scan(msg, "Loaded weights leave no GPU memory for the KV cache "
	              "under --mem-fraction-static=%f",
	         &c)) {
		if ((e = error(log, li, E, VRT_ELE_MEM_FRACTION))) {
			e->mem_fraction_milli = (uint64_t)(c.v[0] * 1000 + 0.5);
			e->have |= VRT_ELH_MEM_FRACTION;
			if (scan(msg, "Raise --mem-fraction-static above %f", &c)) {
				e->suggested_fraction_milli =
				        (uint64_t)(c.v[0] * 1000 + 0.999);
				e->have |= VRT_ELH_SUGGESTED_FRACTION;
			}
			e->phase = VRT_PHASE_kv_cache;
			commit_error(log);
		}
		return 1;
	}
	/* "Prefill batch. #new-seq: 1, #new-token: 1802, #cached-token: 0,
	 * token usage: 0.01, #running-req: 3, #queue-req: 0" and "Decode
	 * batch. #running-req: 4, #token: 8000, ..." */
	if (find(msg, "Prefill batch.") || find(msg, "Decode batch.")) {
		uint64_t run = 0, fresh = 0;
		vote(log, E, 1);
		if (keyval(msg, "#running-req:", &v))
			run = (uint64_t)v;
		if (keyval(msg, "#new-seq:", &v)) {
			uint64_t k;
			fresh = (uint64_t)v;
			for (k = 0; k < fresh && k < 4096; k++)
				request_seen(log, li, E, 1);
		}
		if (keyval(msg, "#new-token:", &v))
			log->prompt_tokens = (uint64_t)v;
		running_now(log, run + fresh);
		step(log, VRT_PHASE_forward);
		return 1;
	}
	if (find(msg, "The server is fired up and ready to roll")) {
		ready(log, li, E, 2);
		step(log, VRT_PHASE_forward);
		return 1;
	}
	return 0;
}

static int rule_tgi(struct vrt_enginelog *log, const struct lineinfo *li)
{
	const char *msg = li->msg;
	const int E = VRT_ENGINELOG_TGI;
	struct cap c;
	struct vrt_enginelog_error *e;
	size_t n = strlen(msg);

	if (scan(msg, "KV-cache blocks: %u, size: %u", &c)) {
		config(log, E, VRT_ELC_BLOCK_SIZE, c.v[1]);
		if (fact(log, li, E, VRT_ELK_KV_BLOCKS, -1, c.v[0], 0, 0) ||
		    fact(log, li, E, VRT_ELK_KV_TOKENS, -1, c.v[0] * c.v[1], 0,
		         0))
			return -1;
		return 1;
	}
	if (scan(msg, "Setting max batch total tokens to %u", &c)) {
		config(log, E, VRT_ELC_MAX_BATCH_TOKENS, c.v[0]);
		return 1;
	}
	if (scan(msg, "Not enough memory to handle %u prefill tokens", &c)) {
		if ((e = error(log, li, E, VRT_ELE_PREFILL_TOKENS))) {
			e->tokens = (uint64_t)c.v[0];
			e->have |= VRT_ELH_TOKENS;
			e->phase = VRT_PHASE_profile;
			commit_error(log);
		}
		return 1;
	}
	if (scan(msg, "Not enough memory to handle `max_total_tokens=%u`",
	         &c)) {
		if ((e = error(log, li, E, VRT_ELE_MAX_TOTAL_TOKENS))) {
			e->tokens = (uint64_t)c.v[0];
			e->have |= VRT_ELH_TOKENS;
			e->phase = VRT_PHASE_kv_cache;
			commit_error(log);
		}
		return 1;
	}
	/* the shard's warm-up and its serving methods ("Method Warmup
	 * encountered an error.", "Method Decode ...") */
	if (scan(msg, "Method %w encountered an error", &c)) {
		vote(log, E, 4);
		if (!strcmp(c.w[0], "Warmup"))
			step(log, VRT_PHASE_profile);
		else if (!strcmp(c.w[0], "Prefill") || !strcmp(c.w[0], "Decode"))
			log->traceback |= TB_REQUEST;
		return 1;
	}
	/* the router: "generate{...}: text_generation_router::server: ...:
	 * Success" for every request answered */
	if (n >= 7 && !strcmp(msg + n - 7, "Success") &&
	    (find(msg, "text_generation_router") || log->engine == E ||
	     log->votes[E])) {
		request_seen(log, li, E, 1);
		return 1;
	}
	if (n >= 9 && !strcmp(msg + n - 9, "Connected") &&
	    (n == 9 || msg[n - 10] == ' ')) {
		ready(log, li, E, 2);
		step(log, VRT_PHASE_forward);
		return 1;
	}
	return 0;
}

/* The launcher prints its Args with {:#?} ("Args {", then one field a
 * line, "    max_total_tokens: Some(" with the value on the next line, a
 * closing "}") or with {:?} on one line. Returns 1 for the lines it
 * consumed. */
static int tgi_args(struct vrt_enginelog *log, const char *msg)
{
	static const struct {
		const char *key;
		int field;
	} keys[] = {{"max_total_tokens:", VRT_ELC_MAX_MODEL_LEN},
	            {"max_concurrent_requests:", VRT_ELC_MAX_NUM_SEQS},
	            {"cuda_memory_fraction:", VRT_ELC_MEM_FRACTION},
	            {"num_shard:", VRT_ELC_TP},
	            {"max_batch_prefill_tokens:", VRT_ELC_BATCH}};
	const char *q = msg;
	size_t k, n = strlen(msg);
	double v, tol;

	if (n >= 6 && !strcmp(msg + n - 6, "Args {")) {
		log->tgi_args = 1;
		vote(log, VRT_ENGINELOG_TGI, 2);
		return 1;
	}
	if (!log->tgi_args && !find(msg, "Args { "))
		return 0;
	while (is_blank(*q))
		q++;
	if (log->tgi_args && *q == '}') {
		log->tgi_args = 0;
		return 1;
	}
	{
		const char *m = find(msg, "model_id: \"");
		size_t l = m ? strcspn(m + 11, "\"") : 0;
		if (m && l < sizeof(log->model))
			snprintf(log->model, sizeof(log->model), "%.*s", (int)l,
			         m + 11);
	}
	if (log->pending_key[0]) {
		for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			if (!strcmp(log->pending_key, keys[k].key) &&
			    number(q, 0, 0, &v, &tol))
				config(log, VRT_ENGINELOG_TGI, keys[k].field,
				       keys[k].field == VRT_ELC_MEM_FRACTION
				               ? v * 1000
				               : v);
		log->pending_key[0] = '\0';
		return 1;
	}
	for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		const char *at = find(msg, keys[k].key), *p;
		if (!at || (at > msg && at[-1] != ' ' && at[-1] != '{'))
			continue;
		p = at + strlen(keys[k].key);
		while (is_blank(*p))
			p++;
		if (!strcmp(p, "Some(")) {
			snprintf(log->pending_key, sizeof(log->pending_key), "%s",
			         keys[k].key);
			return 1;
		}
		if (!strncmp(p, "Some(", 5))
			p += 5;
		if (number(p, 0, 0, &v, &tol))
			config(log, VRT_ENGINELOG_TGI, keys[k].field,
			       keys[k].field == VRT_ELC_MEM_FRACTION ? v * 1000
			                                            : v);
	}
	return 1;
}

static int rule_trtllm(struct vrt_enginelog *log, const struct lineinfo *li)
{
	const char *msg = li->msg;
	const int E = VRT_ENGINELOG_TRTLLM;
	struct cap c;
	struct vrt_enginelog_error *e;

	/* "[MemUsageChange] Allocated 41.11 GiB for max tokens in paged KV
	 * cache (524288)." (later without "in paged KV cache") */
	if (scan(msg, "Allocated %f GiB for max tokens%*(%u)", &c)) {
		step(log, VRT_PHASE_cuda_graph);
		if (fact(log, li, E, VRT_ELK_KV_BYTES, -1, c.v[0] * GIB,
		         c.tol[0] * GIB, 0) ||
		    fact(log, li, E, VRT_ELK_KV_TOKENS, -1, c.v[1], 0, 0))
			return -1;
		return 1;
	}
	if (scan(msg, "Memory usage when calculating max tokens in paged kv "
	              "cache: total: %f GiB, available: %f GiB",
	         &c))
		return fact(log, li, E, VRT_ELK_TOTAL, -1, c.v[0] * GIB,
		            c.tol[0] * GIB, 0) < 0
		               ? -1
		               : 1;
	/* the PyTorch backend's estimation */
	if (scan(msg, "Memory used after loading model weights (inside torch) "
	              "in memory usage profiling: %f GiB",
	         &c)) {
		step(log, VRT_PHASE_profile);
		return fact(log, li, E, VRT_ELK_WEIGHTS, -1, c.v[0] * GIB,
		            c.tol[0] * GIB, 0) < 0
		               ? -1
		               : 1;
	}
	if (scan(msg, "Peak memory during memory usage profiling (torch + "
	              "non-torch): %f GiB",
	         &c)) {
		double v;
		step(log, VRT_PHASE_kv_cache);
		vote(log, E, 4);
		if (keyval(msg, "fraction is set", &v))
			config(log, E, VRT_ELC_MEM_FRACTION, v * 1000);
		/* the KV cache it is about to allocate */
		if (scan(msg, "available KV cache memory when calculating max "
		              "tokens: %f GiB",
		         &c))
			log->kv_plan = (uint64_t)(c.v[0] * GIB);
		if (scan(msg, "device total memory %f GiB", &c) &&
		    fact(log, li, E, VRT_ELK_TOTAL, -1, c.v[0] * GIB,
		         c.tol[0] * GIB, 0))
			return -1;
		return 1;
	}
	if (scan(msg, "Number of tokens per block: %u", &c)) {
		config(log, E, VRT_ELC_BLOCK_SIZE, c.v[0]);
		return 1;
	}
	if (scan(msg, "max_seq_len=%u, max_num_requests=%u", &c)) {
		config(log, E, VRT_ELC_MAX_MODEL_LEN, c.v[0]);
		config(log, E, VRT_ELC_MAX_NUM_SEQS, c.v[1]);
		return 1;
	}
	if (scan(msg, "Loaded engine size: %u MiB", &c)) {
		step(log, VRT_PHASE_kv_cache);
		return fact(log, li, E, VRT_ELK_WEIGHTS, -1, c.v[0] * MIB, MIB,
		            0) < 0
		               ? -1
		               : 1;
	}
	/* "iter = 5559, host_step_time = 62.5ms, num_scheduled_requests: 5" */
	if (scan(msg, "num_scheduled_requests: %u", &c)) {
		vote(log, E, 1);
		running_now(log, (uint64_t)c.v[0]);
		step(log, VRT_PHASE_forward);
		return 1;
	}
	/* "Executor creation failed due to insufficient GPU memory" and "The
	 * following component could not be created: KV cache" */
	if (find(msg, "due to insufficient GPU memory") ||
	    scan(msg, "The following component could not be created: %*", &c)) {
		int kv = find(msg, "KV cache") != NULL;
		if ((e = error(log, li, E, VRT_ELE_EXECUTOR))) {
			if (kv)
				e->phase = VRT_PHASE_kv_cache;
			if (kv && log->kv_plan) {
				e->requested_bytes = log->kv_plan;
				e->requested_tol = (uint64_t)(0.005 * GIB);
				e->have |= VRT_ELH_REQUESTED;
			}
			if (scan(msg, "%z required", &c) ||
			    scan(msg, "requested %z", &c)) {
				e->requested_bytes = (uint64_t)c.v[0];
				e->requested_tol = (uint64_t)c.tol[0];
				e->have |= VRT_ELH_REQUESTED;
			}
			commit_error(log);
		}
		return 1;
	}
	if (li->level_error && find(msg, "out of memory") &&
	    (find(msg, "TensorRT-LLM") || log->engine == E || log->votes[E])) {
		if ((e = error(log, li, E, VRT_ELE_OOM_OTHER)))
			commit_error(log);
		return 1;
	}
	return 0;
}

/* Ollama's own lines (Go's slog: the message and its key=value pairs,
 * see ollama_prefix): the devices it found, its estimate, the runner it
 * starts and when the runner serves, the runner's death, the prompt of a
 * request. The runner's own output (llama.cpp's lines) goes through
 * rule_llama. */
static int rule_ollama(struct vrt_enginelog *log, const struct lineinfo *li)
{
	const char *msg = li->msg, *p;
	const int E = VRT_ENGINELOG_OLLAMA;
	struct vrt_enginelog_error *e;
	struct cap c;
	double v, t;

	if (strncmp(msg, "msg=", 4))
		return 0;
	/* msg="inference compute" id=GPU-... library=cuda ... total="23.6
	 * GiB" available="22.9 GiB" */
	if (find(msg, "inference compute")) {
		int32_t dev = -1;
		vote(log, E, 4);
		if (scan(msg, "id=%u ", &c))
			dev = (int32_t)c.v[0];
		if (scan(msg, "total=\"%z\"", &c)) {
			t = c.v[0];
			if (fact(log, li, E, VRT_ELK_TOTAL, dev, t, c.tol[0], 0))
				return -1;
		}
		if (scan(msg, "available=\"%z\"", &c) &&
		    fact(log, li, E, VRT_ELK_FREE, dev, c.v[0], c.tol[0], 0))
			return -1;
		return 1;
	}
	/* msg=offload / msg="offload to cuda" ... memory.required.full="6.2
	 * GiB" memory.required.kv="1.0 GiB" memory.weights.total="4.1 GiB"
	 * memory.graph.full="560.0 MiB" (its estimate before it loads) */
	if (!strncmp(msg, "msg=offload", 11) ||
	    !strncmp(msg, "msg=\"offload to", 15)) {
		vote(log, E, 4);
		step(log, VRT_PHASE_weights);
		if (scan(msg, "memory.required.full=\"%z\"", &c) &&
		    fact(log, li, E, VRT_ELK_PROJECTED, -1, c.v[0], c.tol[0], 0))
			return -1;
		if (scan(msg, "layers.offload=%u", &c))
			config(log, E, VRT_ELC_GPU_LAYERS, c.v[0]);
		return 1;
	}
	/* msg="starting llama server" cmd="..." (to 0.11), msg="starting
	 * runner" cmd="..." (0.12 to 0.24), msg="starting llama-server"
	 * cmd="..." (0.30 on): the runner's command line */
	if ((find(msg, "msg=\"starting llama server\"") ||
	     find(msg, "msg=\"starting runner\"") ||
	     find(msg, "msg=\"starting llama-server\"")) &&
	    (p = find(msg, "cmd=\""))) {
		size_t n = strcspn(p + 5, "\"");
		vote(log, E, 4);
		step(log, VRT_PHASE_weights);
		if (n < sizeof(log->command)) {
			snprintf(log->command, sizeof(log->command), "%.*s",
			         (int)n, p + 5);
			log->command_engine = E;
		}
		if (keyval(msg, "--ctx-size", &v) || keyval(msg, " -c", &v))
			config(log, E, VRT_ELC_CTX_SIZE, v);
		if (keyval(msg, "--parallel", &v))
			config(log, E, VRT_ELC_SLOTS, v);
		if (keyval(msg, "--n-gpu-layers", &v) || keyval(msg, "-ngl", &v))
			config(log, E, VRT_ELC_GPU_LAYERS, v);
		if (keyval(msg, "--batch-size", &v))
			config(log, E, VRT_ELC_BATCH, v);
		return 1;
	}
	if (scan(msg, "llama runner started in %f seconds", &c) ||
	    scan(msg, "llama-server started in %f seconds", &c)) {
		ready(log, li, E, 2);
		step(log, VRT_PHASE_forward);
		return 1;
	}
	/* msg="error loading llama server" error="llama runner process has
	 * terminated: <the runner's error>" (0.30 on: "llama-server process
	 * has terminated"): the runner's error is read as its own line */
	if (find(msg, "error loading llama server") ||
	    find(msg, "process has terminated")) {
		struct lineinfo inner = *li;
		char buf[VRT_ENGINELOG_TEXT];
		const char *q = find(msg, "has terminated: ");
		size_t before = log->nerrors;
		int consumed = 0, r;
		vote(log, E, 4);
		if (q) {
			q += 16;
			snprintf(buf, sizeof(buf), "%.*s",
			         (int)strcspn(q, "\""), q);
			inner.msg = buf;
			if ((r = rule_torch(log, &inner)) < 0 ||
			    (!r && (r = llama_errors(log, &inner)) < 0))
				return -1;
			consumed = r;
		}
		/* nothing it names was read, but it names memory */
		if (!consumed && log->nerrors == before &&
		    (find(msg, "out of memory") ||
		     find(msg, "unable to allocate") ||
		     find(msg, "cudaMalloc")) &&
		    (e = error(log, li, E, VRT_ELE_RUNNER_DIED)))
			commit_error(log);
		return 1;
	}
	/* the new engine's memory (0.11 on): msg="model weights"
	 * device=CUDA0 size="8.4 GiB", "kv cache", "compute graph" */
	{
		static const struct {
			const char *what;
			int kind;
		} mem[] = {{"msg=\"model weights\"", VRT_ELK_WEIGHTS},
		           {"msg=\"kv cache\"", VRT_ELK_KV_BYTES},
		           {"msg=\"compute graph\"", VRT_ELK_ACTIVATION}};
		size_t k;
		for (k = 0; k < sizeof(mem) / sizeof(mem[0]); k++) {
			int32_t dev;
			if (strncmp(msg, mem[k].what, strlen(mem[k].what)))
				continue;
			vote(log, E, 4);
			step(log, mem[k].kind == VRT_ELK_WEIGHTS
			                  ? VRT_PHASE_weights
			          : mem[k].kind == VRT_ELK_KV_BYTES
			                  ? VRT_PHASE_kv_cache
			                  : VRT_PHASE_profile);
			if (scan(msg, "device=%w", &c) && gpu_buffer(c.w[0], &dev) &&
			    scan(msg, "size=\"%z\"", &c))
				return fact(log, li, E, mem[k].kind, dev, c.v[0],
				            c.tol[0], 0) < 0
				               ? -1
				               : 1;
			return 1;
		}
	}
	/* the scheduler could not place the model: "memory layout cannot be
	 * allocated", the runner's "insufficient memory - required
	 * allocations" */
	if (find(msg, "memory layout cannot be allocated") ||
	    find(msg, "insufficient memory - required allocations")) {
		if ((e = error(log, li, E, VRT_ELE_OOM_OTHER))) {
			e->phase = VRT_PHASE_weights;
			commit_error(log);
		}
		return 1;
	}
	/* msg="loading cache slot" id=0 cache=0 prompt=1802 used=0 */
	if (find(msg, "loading cache slot") && keyval(msg, "prompt=", &v)) {
		log->prompt_tokens = (uint64_t)v;
		request_seen(log, li, E, 1);
		return 1;
	}
	if (find(msg, "Listening on ")) {
		vote(log, E, 4);
		return 1;
	}
	return 0;
}

/* ---- prefixes ---------------------------------------------------------- */

/* Local calendar time of the engine (year -1: not printed) as UTC ns. */
static int64_t engine_time(const struct vrt_enginelog *log, int year, int mon,
                           int day, int h, int mi, int se)
{
	int64_t best = 0, bestd = INT64_MAX;
	int y, y0, y1;

	if (year >= 0) {
		y0 = y1 = year;
	} else {
		if (!log->ref_year)
			return 0;
		y = log->ref_year;
		y0 = y - 1;
		y1 = y + 1;
	}
	for (y = y0; y <= y1; y++) {
		int64_t s = vrt_wallclock_timegm(y, mon, day, h, mi, se);
		int64_t ns, d;
		/* nanoseconds since 1970 in 64 bits: years up to 2262 */
		if (s == INT64_MIN || s - log->opts.tz_offset_s < 0 ||
		    s - log->opts.tz_offset_s > INT64_MAX / 1000000000 - 1)
			continue;
		ns = (s - log->opts.tz_offset_s) * 1000000000;
		d = ns > log->opts.ref_wall_ns ? ns - log->opts.ref_wall_ns
		                               : log->opts.ref_wall_ns - ns;
		if (year >= 0 || d < bestd) {
			best = ns;
			bestd = d;
		}
	}
	return best;
}

static int two(const char *s)
{
	return is_digit(s[0]) && is_digit(s[1]) ? (s[0] - '0') * 10 + s[1] - '0'
	                                        : -1;
}

/* "HH:MM:SS" at s (8 bytes); -1 when not one. */
static int hms(const char *s, int *h, int *m, int *sec)
{
	*h = two(s);
	*m = two(s + 3);
	*sec = two(s + 6);
	return *h >= 0 && *m >= 0 && *sec >= 0 && s[2] == ':' && s[5] == ':'
	               ? 0
	               : -1;
}

static int starts(const char *s, const char *p)
{
	return *s == *p && !strncmp(s, p, strlen(p));
}

/* A "(EngineCore_DP0 pid=212) " style prefix: the pid and rank it names;
 * returns its length (with the blanks after it), 0 when none. */
static size_t proc_prefix(const char *s, struct lineinfo *li)
{
	size_t i = 1;
	int depth = 1;
	const char *p;
	double v, tol;

	if (s[0] != '(')
		return 0;
	for (; s[i] && i < 96 && depth; i++) {
		char c = s[i];
		if (c == '(')
			depth++;
		else if (c == ')')
			depth--;
		else if (!(is_digit(c) || (c >= 'a' && c <= 'z') ||
		           (c >= 'A' && c <= 'Z') || strchr(" _=,.:-/", c)))
			return 0;
	}
	if (depth || !is_blank(s[i]))
		return 0;
	if ((p = find(s, "pid=")) && p < s + i &&
	    number(p + 4, 0, 0, &v, &tol))
		li->pid = (int64_t)v;
	if ((p = find(s, "rank=")) && p < s + i &&
	    number(p + 5, 0, 0, &v, &tol))
		li->rank = (int32_t)v;
	else if ((p = find(s, "TP")) && p < s + i &&
	         number(p + 2, 0, 0, &v, &tol))
		li->rank = (int32_t)v;
	while (is_blank(s[i]))
		i++;
	return i;
}

/* A docker compose "service_1  | " prefix; returns its length or 0. */
static size_t compose_prefix(const char *s)
{
	size_t i = 0;

	while (s[i] && i < 48 && (is_digit(s[i]) || (s[i] >= 'a' && s[i] <= 'z') ||
	                          (s[i] >= 'A' && s[i] <= 'Z') ||
	                          strchr("_.-", s[i])))
		i++;
	if (!i)
		return 0;
	while (s[i] == ' ')
		i++;
	if (s[i] != '|' || s[i + 1] != ' ')
		return 0;
	return i + 2;
}

/* TensorRT-LLM's "[RANK 1] ": the rank into li, its length. */
static size_t trt_rank(const char *s, struct lineinfo *li)
{
	double v, tol;
	size_t n;

	if (!starts(s, "[RANK "))
		return 0;
	n = number(s + 6, 0, 0, &v, &tol);
	if (!n || s[6 + n] != ']')
		return 0;
	li->rank = (int32_t)v;
	n += 7;
	while (is_blank(s[n]))
		n++;
	return n;
}

static const char *const levels[] = {"DEBUG ", "INFO ", "WARNING ", "ERROR ",
                                     "CRITICAL "};

/* The engine's own prefix at s: its time and rank into li, its length
 * returned (0: none known). */
static size_t engine_prefix(struct vrt_enginelog *log, const char *s,
                            struct lineinfo *li)
{
	size_t i, k;
	int mo, d, h, mi, se, y;

	/* vLLM: "INFO 12-02 10:15:00 [file.py:123] " (older: "file.py:123] ") */
	for (k = 0; k < 5; k++) {
		size_t n = strlen(levels[k]);
		if (!starts(s, levels[k]))
			continue;
		mo = two(s + n);
		d = two(s + n + 3);
		if (mo < 0 || d < 0 || s[n + 2] != '-' || s[n + 5] != ' ' ||
		    hms(s + n + 6, &h, &mi, &se))
			break;
		vote(log, VRT_ENGINELOG_VLLM, 1);
		li->level_error = k >= 3;
		if (!li->wall_ns)
			li->wall_ns = engine_time(log, -1, mo, d, h, mi, se);
		i = n + 14;
		while (is_blank(s[i]))
			i++;
		if (s[i] == '[') {
			const char *e = strchr(s + i, ']');
			if (e && e - (s + i) < 160)
				i = (size_t)(e - s) + 1;
		} else {
			const char *e = find(s + i, "] ");
			if (e && e - (s + i) < 160 && memchr(s + i, ':', (size_t)(e - s - i)))
				i = (size_t)(e - s) + 1;
		}
		while (is_blank(s[i]))
			i++;
		return i;
	}
	/* SGLang: "[2025-12-02 10:15:00 TP0] " or "[12-02 10:15:00 DP0 TP1] " */
	if (s[0] == '[' && is_digit(s[1])) {
		i = 1;
		y = -1;
		if (s[5] == '-' && is_digit(s[4])) {
			y = atoi(s + 1);
			i = 6;
		}
		mo = two(s + i);
		d = two(s + i + 3);
		if (mo >= 0 && d >= 0 && s[i + 2] == '-' && s[i + 5] == ' ' &&
		    !hms(s + i + 6, &h, &mi, &se)) {
			const char *e = strchr(s + i, ']');
			const char *tp;
			double v, tol;
			if (e && e - s < 80) {
				vote(log, VRT_ENGINELOG_SGLANG, 1);
				if (!li->wall_ns)
					li->wall_ns = engine_time(log, y, mo, d, h,
					                          mi, se);
				tp = find(s, " TP");
				if (tp && tp < e && number(tp + 3, 0, 0, &v, &tol))
					li->rank = (int32_t)v;
				i = (size_t)(e - s) + 1;
				while (is_blank(s[i]))
					i++;
				return i;
			}
		}
	}
	/* TGI: "2024-10-16T08:51:10.517470Z  INFO target: file.rs:12: " */
	{
		int64_t w;
		size_t n = vrt_wallclock_parse(s, strlen(s), &w);
		if (n && is_blank(s[n])) {
			i = n;
			while (is_blank(s[i]))
				i++;
			if (starts(s + i, "INFO ") || starts(s + i, "WARN ") ||
			    starts(s + i, "ERROR ") || starts(s + i, "DEBUG ") ||
			    starts(s + i, "TRACE ")) {
				li->level_error = starts(s + i, "ERROR ");
				vote(log, VRT_ENGINELOG_TGI, 1);
				if (!li->wall_ns)
					li->wall_ns = w;
				while (s[i] && !is_blank(s[i]))
					i++;
				while (is_blank(s[i]))
					i++;
				/* "target: " and "file.rs:123: " */
				for (k = 0; k < 2; k++) {
					size_t j = i;
					while (s[j] && !is_blank(s[j]))
						j++;
					if (j > i && s[j - 1] == ':' &&
					    (find(s + i, "text_generation") ==
					             s + i ||
					     (j - i > 4 && memchr(s + i, '.',
					                          j - i)))) {
						i = j;
						while (is_blank(s[i]))
							i++;
					}
				}
				return i;
			}
		}
	}
	/* TensorRT-LLM: "[12/20/2025-04:21:10] [TRT-LLM] [I] " and
	 * "[TensorRT-LLM][INFO] " */
	if (s[0] == '[' && two(s + 1) >= 0 && s[3] == '/' && s[6] == '/' &&
	    s[11] == '-' && s[20] == ']') {
		mo = two(s + 1);
		d = two(s + 4);
		y = atoi(s + 7);
		if (mo >= 0 && d >= 0 && !hms(s + 12, &h, &mi, &se)) {
			vote(log, VRT_ENGINELOG_TRTLLM, 1);
			if (!li->wall_ns)
				li->wall_ns = engine_time(log, y, mo, d, h, mi,
				                          se);
			i = 21;
			while (is_blank(s[i]))
				i++;
			if (starts(s + i, "[TRT-LLM] "))
				i += 10;
			i += trt_rank(s + i, li);
			if (s[i] == '[' && s[i + 2] == ']') {
				li->level_error = s[i + 1] == 'E';
				i += 3;
			}
			while (is_blank(s[i]))
				i++;
			return i;
		}
	}
	/* "[TRT-LLM] [RANK 0] [E] " without a date */
	if (starts(s, "[TRT-LLM] ")) {
		vote(log, VRT_ENGINELOG_TRTLLM, 1);
		i = 10 + trt_rank(s + 10, li);
		if (s[i] == '[' && s[i + 1] && s[i + 2] == ']') {
			li->level_error = s[i + 1] == 'E';
			i += 3;
		}
		while (is_blank(s[i]))
			i++;
		return i;
	}
	if (starts(s, "[TensorRT-LLM]")) {
		vote(log, VRT_ENGINELOG_TRTLLM, 1);
		li->level_error = starts(s + 14, "[ERROR]");
		i = 14;
		if (s[i] == '[') {
			const char *e = strchr(s + i, ']');
			if (e)
				i = (size_t)(e - s) + 1;
		}
		while (is_blank(s[i]))
			i++;
		return i;
	}
	/* llama.cpp with --log-prefix/--log-timestamps: "0.00.035.060 I " */
	if (is_digit(s[0])) {
		i = 0;
		while (is_digit(s[i]))
			i++;
		if (s[i] == '.' && two(s + i + 1) >= 0 && s[i + 3] == '.' &&
		    is_digit(s[i + 4]) && s[i + 7] == '.' && is_digit(s[i + 8]) &&
		    s[i + 11] == ' ' && strchr("IWED", s[i + 12]) &&
		    s[i + 13] == ' ') {
			vote(log, VRT_ENGINELOG_LLAMACPP, 1);
			li->level_error = s[i + 12] == 'E';
			return i + 14;
		}
	}
	/* llama.cpp with --log-prefix and no timestamps: "I load_tensors: ",
	 * "W srv  ...", "E ggml_..." */
	if (strchr("IWED", s[0]) && s[0] && s[1] == ' ' &&
	    (starts(s + 2, "srv ") || starts(s + 2, "slot ") ||
	     starts(s + 2, "llama") || starts(s + 2, "ggml") ||
	     starts(s + 2, "load_") || starts(s + 2, "common_") ||
	     starts(s + 2, "print_info") || starts(s + 2, "main:") ||
	     starts(s + 2, "sched_") || starts(s + 2, "alloc_") ||
	     starts(s + 2, "build_info") || starts(s + 2, "system_info"))) {
		vote(log, VRT_ENGINELOG_LLAMACPP, 1);
		li->level_error = s[0] == 'E';
		return 2;
	}
	return 0;
}

/* Ollama's Go slog lines: "time=2025-12-02T10:15:00.123Z level=INFO
 * source=server.go:385 msg=\"starting runner\" cmd=...": the time and
 * level into li; returns the offset of "msg=" (0: not one). */
static size_t ollama_prefix(struct vrt_enginelog *log, const char *s,
                            struct lineinfo *li)
{
	const char *m;
	int64_t w;
	size_t n;

	if (!starts(s, "time=") || !(m = find(s, " msg=")) || m - s > 160)
		return 0;
	n = vrt_wallclock_parse(s + 5, strlen(s + 5), &w);
	if (n && !li->wall_ns)
		li->wall_ns = w;
	li->level_error = find(s, " level=ERROR") &&
	                  find(s, " level=ERROR") < m;
	vote(log, VRT_ENGINELOG_OLLAMA, 2);
	return (size_t)(m - s) + 1;
}

/* Noise a person adds pasting a log: a Markdown fence (the line is
 * dropped: returns NULL), ">" quote markers, kubectl's "[pod/x/c] "
 * (--prefix), journald's "Dec 02 10:15:00 host unit[pid]: ", a bare
 * RFC 3339 time (docker logs -t, kubectl --timestamps), Ray's
 * " [repeated 3x across cluster]". In place; the text that is left. */
static char *paste_noise(struct vrt_enginelog *log, char *s,
                         struct lineinfo *li)
{
	static const char *const months[] = {"Jan", "Feb", "Mar", "Apr",
	                                     "May", "Jun", "Jul", "Aug",
	                                     "Sep", "Oct", "Nov", "Dec"};
	size_t k, n;
	char *p;
	int64_t w;

	for (k = 0; k < 8; k++) {
		while (is_blank(*s) && (s[1] == '>' || s[1] == '`'))
			s++;
		if (*s == '>') {
			s++;
			if (*s == ' ')
				s++;
			continue;
		}
		break;
	}
	{
		char *t = s;
		while (is_blank(*t))
			t++;
		if (starts(t, "```") || starts(t, "~~~"))
			return NULL;
	}
	/* kubectl logs --prefix: "[pod/vllm-0/server] " */
	if (starts(s, "[pod/") && (p = find(s, "] ")) && p - s < 200)
		s = p + 2;
	/* journald: "Dec 02 10:15:00 host unit[123]: " */
	for (k = 0; k < 12; k++)
		if (starts(s, months[k]) && s[3] == ' ')
			break;
	if (k < 12 && (s[4] == ' ' || is_digit(s[4])) && is_digit(s[5]) &&
	    s[6] == ' ' && s[9] == ':' && s[12] == ':' && s[15] == ' ') {
		char *colon = find(s + 16, "]: ");
		char *sp = strchr(s + 16, ' ');
		if (colon && sp && sp < colon && colon - s < 160) {
			char *br = strchr(sp, '[');
			double v, tol;
			if (br && br < colon && number(br + 1, 0, 0, &v, &tol))
				own_pid(log, (int64_t)v);
			s = colon + 3;
		}
	}
	/* a bare RFC 3339 time in front (not TGI's, whose level follows) */
	n = vrt_wallclock_parse(s, strlen(s), &w);
	if (n && s[n] == ' ') {
		char *t = s + n;
		while (is_blank(*t))
			t++;
		if (!(starts(t, "INFO ") || starts(t, "WARN ") ||
		      starts(t, "ERROR ") || starts(t, "DEBUG ") ||
		      starts(t, "TRACE "))) {
			if (!li->wall_ns)
				li->wall_ns = w;
			s = t;
		}
	}
	/* Ray's deduplication: " [repeated 3x across cluster]" */
	log->line_repeated = 0;
	if ((p = find(s, " [repeated ")) && find(p, "x across cluster]")) {
		*p = '\0';
		log->line_repeated = 1;
	}
	return s;
}

/* The old llama.cpp server's JSON lines: {"tid":..,"timestamp":N,
 * "level":"INFO",...,"msg":"model loaded",...}: msg into out. */
static int llama_json(struct vrt_enginelog *log, const char *s,
                      struct lineinfo *li, char *out, size_t n)
{
	const char *m = find(s, "\"msg\":\"");
	size_t i = 0;
	double v, tol;
	const char *t;

	if (s[0] != '{' || !m)
		return 0;
	for (m += 7; *m && *m != '"' && i + 1 < n; m++)
		out[i++] = *m == '\\' && m[1] ? *++m : *m;
	out[i] = '\0';
	/* the slot a task runs on: "slot is processing task" ... "id_slot":N
	 * read as today's slot lines are */
	if ((t = find(s, "\"id_slot\":")) && number(t + 10, 0, 0, &v, &tol) &&
	    (!strcmp(out, "slot is processing task") ||
	     !strcmp(out, "slot released")))
		snprintf(out, n, "slot %s: id %d | task 0 | %s",
		         out[5] == 'i' ? "launch_slot_" : "release", (int)v,
		         out[5] == 'i' ? "processing task" : "stop processing");
	vote(log, VRT_ENGINELOG_LLAMACPP, 1);
	t = find(s, "\"timestamp\":");
	if (t && !li->wall_ns && number(t + 12, 0, 0, &v, &tol) && v > 1e9 &&
	    v < 1e11)
		li->wall_ns = (int64_t)v * 1000000000;
	li->level_error = find(s, "\"level\":\"ERR") != NULL;
	return 1;
}

/* ANSI escapes and control bytes out, the text after the last carriage
 * return kept (a progress bar redraws its line with \r). In place;
 * returns the new length. */
static size_t clean(char *s, size_t n)
{
	size_t i = 0, o = 0, start = 0;

	while (n && (s[n - 1] == '\r' || s[n - 1] == '\n'))
		n--;
	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		if (c == 0x1b) {
			i++;
			if (i < n && s[i] == '[') {
				/* CSI: parameters, then one final byte */
				for (i++; i < n && !((unsigned char)s[i] >= 0x40 &&
				                     (unsigned char)s[i] <= 0x7e);
				     i++)
					;
				i++;
			} else if (i < n && s[i] == ']') {
				/* OSC: to BEL or ESC \ */
				for (i++; i < n && s[i] != 0x07 && s[i] != 0x1b;
				     i++)
					;
				i += i < n && s[i] == 0x1b ? 2 : 1;
			} else {
				i++;
			}
			continue;
		}
		if (c == '\r') {
			/* keep what follows, if anything does */
			if (i + 1 < n)
				start = o;
			i++;
			continue;
		}
		if (c == '\t')
			c = ' ';
		if (c < 0x20 || c == 0x7f) {
			i++;
			continue;
		}
		s[o++] = (char)c;
		i++;
	}
	if (start) {
		memmove(s, s + start, o - start);
		o -= start;
	}
	s[o] = '\0';
	return o;
}

static int message_read(struct vrt_enginelog *log, char *s,
                        struct lineinfo *li);

/* One line's message through the rules (s: cleaned, paste noise off;
 * li: what its outer prefixes told). Returns 0, or -1 out of memory. */
static int message(struct vrt_enginelog *log, char *s, struct lineinfo *li)
{
	int r = message_read(log, s, li);

	pairs_clear();
	return r;
}

static int message_read(struct vrt_enginelog *log, char *s,
                        struct lineinfo *li)
{
	char json[VRT_ENGINELOG_TEXT * 2];
	size_t k;
	int r = 0;

	for (k = 0; k < 4; k++) {
		size_t p = compose_prefix(s);
		if (!p)
			p = proc_prefix(s, li);
		if (!p)
			break;
		s += p;
	}
	if (li->pid > 0)
		own_pid(log, li->pid);
	if (llama_json(log, s, li, json, sizeof(json)))
		s = json;
	else if ((k = ollama_prefix(log, s, li)))
		s += k;
	else
		s += engine_prefix(log, s, li);
	if (!*s)
		return 0;
	li->msg = s;
	if (li->wall_ns) {
		if (!log->first_wall_ns)
			log->first_wall_ns = li->wall_ns;
		log->last_wall_ns = li->wall_ns;
	} else {
		/* A line without a time of its own (uvicorn's "INFO:", a
		 * traceback) comes right after the last one that had one. */
		li->wall_ns = log->last_wall_ns;
	}
	if (tgi_args(log, s) || traceback_line(log, s))
		return 0;
	if (access_line(log, li))
		return 0;
	/* past the lines read quickly: the rules search this line often */
	pairs_set(s);
	if ((r = rule_torch(log, li)) || (r = rule_vllm(log, li)) ||
	    (r = rule_sglang(log, li)) || (r = rule_ollama(log, li)) ||
	    (r = rule_llama(log, li)) || (r = rule_tgi(log, li)) ||
	    (r = rule_trtllm(log, li)) || (r = rule_python_oom(log, li)))
		return r < 0 ? -1 : 0;
	if (find(s, "Application startup complete")) {
		ready(log, li, VRT_ENGINELOG_UNKNOWN, 2);
		step(log, VRT_PHASE_forward);
	} else if (find(s, "Uvicorn running on")) {
		ready(log, li, VRT_ENGINELOG_UNKNOWN, 1);
	}
	return 0;
}

/* Messages people's terminals and issue trackers wrap: a sentence begun
 * (the first string) whose end (the second, NULL: the line's end) is not
 * on the line yet. */
static const char *const wraps[][2] = {
        {"out of memory. Tried to allocate", "unallocated"},
        {"To serve at least one request", "maximum model length is"},
        {"max seq len (", "KV cache memory ("},
        {"Free memory on device", "GiB)."},
        {"Loaded weights leave no GPU memory", "minimum viable"},
        {"occurred when warming up", "dummy requests"},
};

/* The wrap a line opens and does not close (index + 1), else 0. */
static int wrap_opens(const char *s)
{
	size_t k;
	const char *at;

	for (k = 0; k < sizeof(wraps) / sizeof(wraps[0]); k++)
		if ((at = find(s, wraps[k][0])) && !find(at, wraps[k][1]))
			return (int)k + 1;
	return 0;
}

/* A line as long as a terminal is wide: a terminal's copy may have cut a
 * longer one there. */
static int wrap_width(size_t n)
{
	return n == 80 || n == 100 || n == 120 || n == 132 || n == 160 ||
	       n == 200;
}

/* 1 when s reads as the rest of a wrapped line: no prefix of its own, not
 * a traceback line, not empty. */
static int continues(struct vrt_enginelog *log, const char *s)
{
	struct lineinfo li = {0, -1, -1, NULL, 0};
	unsigned votes[VRT_ENGINELOG_NENGINES];
	const char *t = s;
	size_t n;

	while (is_blank(*t))
		t++;
	if (!*t || starts(t, "Traceback") || starts(t, "File \"") ||
	    starts(t, "The above exception") || starts(t, "During handling") ||
	    *t == '(' || starts(t, "time="))
		return 0;
	/* a prefix-less engine's line: "llama_context: ", "srv  ", "slot " */
	n = strspn(t, "abcdefghijklmnopqrstuvwxyz0123456789_");
	if ((n > 2 && n < 48 && t[n] == ':' && t[n + 1] == ' ') ||
	    starts(t, "srv ") || starts(t, "slot ") || starts(t, "[GIN]"))
		return 0;
	/* an exception's line: "torch.OutOfMemoryError: ", "ValueError: " */
	n = strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	              "0123456789_.");
	if (n > 5 && t[n] == ':' && t[n + 1] == ' ' &&
	    (!strncmp(t + n - 5, "Error", 5) ||
	     (n > 9 && !strncmp(t + n - 9, "Exception", 9))))
		return 0;
	if (vrt_wallclock_parse(t, strlen(t), &li.wall_ns) ||
	    compose_prefix(t))
		return 0;
	/* engine_prefix votes: the votes are kept as they were */
	memcpy(votes, log->votes, sizeof(votes));
	n = engine_prefix(log, t, &li);
	memcpy(log->votes, votes, sizeof(votes));
	return n == 0;
}

/* Processes the held wrapped line as the line it began on. */
static int wrap_flush(struct vrt_enginelog *log)
{
	uint64_t lines = log->lines;
	struct lineinfo li = {log->wrap_wall_ns, -1, -1, NULL, 0};
	int r;

	if (!log->wrap_len)
		return 0;
	log->lines = log->wrap_line;
	log->wrap_len = 0;
	r = message(log, log->wrap, &li);
	log->lines = lines;
	return r;
}

/* 1 when none of the n bytes at s is a control byte (below 0x20, or
 * 0x7f): most lines, which then need no cleaning. Eight bytes at a time. */
static int plain_text(const char *s, size_t n)
{
	const uint64_t ones = 0x0101010101010101ull,
	               highs = 0x8080808080808080ull;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t x;
		memcpy(&x, s + i, 8);
		/* a byte below 0x20, or one equal to 0x7f */
		if (((x - ones * 0x20) & ~x & highs) ||
		    (((x ^ ones * 0x7f) - ones) & ~(x ^ ones * 0x7f) & highs))
			return 0;
	}
	for (; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return 1;
}

int vrt_enginelog_feed(struct vrt_enginelog *log, const char *line,
                       size_t len)
{
	char buf[VRT_ENGINELOG_LINE_MAX + 1];
	struct lineinfo li = {0, -1, -1, NULL, 0};
	size_t n = len < VRT_ENGINELOG_LINE_MAX ? len : VRT_ENGINELOG_LINE_MAX;
	size_t k, ctl = 0;
	char *s = buf;
	int64_t w;
	int plain;

	log->lines++;
	log->bytes += len + 1;
	memcpy(buf, line, n);
	buf[n] = '\0';
	plain = plain_text(buf, n);
	/* Text, or a binary file read as a log: NUL and control bytes other
	 * than tab, CR, escape and backspace. */
	for (k = 0; !plain && k < n; k++) {
		unsigned char c = (unsigned char)buf[k];
		if ((c < 0x20 && c != '\t' && c != '\r' && c != 0x1b && c != 8) ||
		    c == 0x7f)
			ctl++;
	}
	if (ctl && (memchr(buf, 0, n) || ctl * 10 > n))
		log->binary_lines++;
	/* record's prefix: "2026-12-02T10:15:00.123456Z out " */
	k = vrt_wallclock_parse(s, n, &w);
	if (k && (starts(s + k, " out ") || starts(s + k, " err "))) {
		li.wall_ns = w;
		s += k + 5;
		n -= k + 5;
	}
	if (!plain)
		n = clean(s, n);
	if (starts(s, "--- vramtrace: ")) {
		double v, tol;
		if (number(s + 15, 0, 1, &v, &tol))
			log->cut_bytes += (uint64_t)v;
		return 0;
	}
	if (!(s = paste_noise(log, s, &li)))
		return wrap_flush(log);
	n = strlen(s);
	/* A wrapped message: held until its end comes (or a line that is no
	 * part of it), then read as one line. */
	if (log->wrap_len) {
		size_t room = sizeof(log->wrap) - log->wrap_len - 2;
		if (continues(log, s) && n < room && log->wrap_parts < 64) {
			/* a hard wrap at the terminal's width cuts words:
			 * joined as it was; else the line break was a space */
			if (!is_blank(log->wrap[log->wrap_len - 1]) &&
			    !is_blank(*s) && !log->wrap_hard)
				log->wrap[log->wrap_len++] = ' ';
			memcpy(log->wrap + log->wrap_len, s, n + 1);
			log->wrap_len += n;
			log->wrap_parts++;
			log->wrap_hard = wrap_width(n);
			if (!wrap_opens(log->wrap) && !log->wrap_hard)
				return wrap_flush(log);
			return 0;
		}
		if (wrap_flush(log))
			return -1;
	}
	if ((wrap_opens(s) || (wrap_width(n) && !find(s, "File \""))) &&
	    n + 1 < sizeof(log->wrap)) {
		memcpy(log->wrap, s, n + 1);
		log->wrap_len = n;
		log->wrap_line = (uint32_t)log->lines;
		log->wrap_wall_ns = li.wall_ns;
		log->wrap_parts = 0;
		log->wrap_hard = wrap_width(n);
		return 0;
	}
	return message(log, s, &li);
}

void vrt_enginelog_init(struct vrt_enginelog *log,
                        const struct vrt_enginelog_opts *o)
{
	memset(log, 0, sizeof(*log));
	if (o)
		log->opts = *o;
	if (log->opts.ref_wall_ns) {
		char buf[VRT_WALLCLOCK_TEXT];
		vrt_wallclock_format(buf, sizeof(buf), log->opts.ref_wall_ns, 0);
		log->ref_year = atoi(buf);
	}
	log->last_oom_error = -1;
	log->step = VRT_ELP_UNKNOWN;
	log->tb_phase = VRT_ELP_UNKNOWN;
}

/* A command line from the configuration the log printed, for engines
 * that print no argument list (llama.cpp, TGI). */
static void command_from_config(struct vrt_enginelog *log)
{
	const uint64_t *v = log->config;
	const uint32_t *at = log->config_line;
	char out[VRT_ENGINELOG_CMD];
	size_t n = 0;

#define ARG(field, flag)                                                     \
	do {                                                                 \
		if (at[field] && n + 40 < sizeof(out))                       \
			n += (size_t)snprintf(out + n, sizeof(out) - n,      \
			                      " " flag " %" PRIu64, v[field]); \
	} while (0)
	if (log->engine == VRT_ENGINELOG_LLAMACPP) {
		n = (size_t)snprintf(out, sizeof(out), "llama-server -m %s",
		                     log->model[0] ? log->model : "MODEL.gguf");
		ARG(VRT_ELC_CTX_SIZE, "-c");
		if (at[VRT_ELC_SLOTS] && v[VRT_ELC_SLOTS] > 1)
			ARG(VRT_ELC_SLOTS, "-np");
		ARG(VRT_ELC_GPU_LAYERS, "-ngl");
		ARG(VRT_ELC_BATCH, "-b");
		ARG(VRT_ELC_UBATCH, "-ub");
		if (at[VRT_ELC_FLASH_ATTN] && n + 8 < sizeof(out))
			n += (size_t)snprintf(out + n, sizeof(out) - n, " -fa %s",
			                      v[VRT_ELC_FLASH_ATTN] ? "on" : "off");
	} else if (log->engine == VRT_ENGINELOG_TGI) {
		n = (size_t)snprintf(out, sizeof(out),
		                     "text-generation-launcher --model-id %s",
		                     log->model[0] ? log->model : "MODEL");
		ARG(VRT_ELC_TP, "--num-shard");
		ARG(VRT_ELC_MAX_MODEL_LEN, "--max-total-tokens");
		ARG(VRT_ELC_MAX_NUM_SEQS, "--max-concurrent-requests");
		ARG(VRT_ELC_BATCH, "--max-batch-prefill-tokens");
		if (at[VRT_ELC_MEM_FRACTION] && n + 40 < sizeof(out))
			n += (size_t)snprintf(out + n, sizeof(out) - n,
			                      " --cuda-memory-fraction %.2f",
			                      (double)v[VRT_ELC_MEM_FRACTION] /
			                              1000);
	} else {
		return;
	}
#undef ARG
	snprintf(log->command, sizeof(log->command), "%s", out);
	log->command_engine = log->engine;
}

void vrt_enginelog_end(struct vrt_enginelog *log)
{
	unsigned best = 0;
	size_t i;
	int e;

	wrap_flush(log);
	log->engine = VRT_ENGINELOG_UNKNOWN;
	for (e = 1; e < VRT_ENGINELOG_NENGINES; e++)
		if (log->votes[e] > best) {
			best = log->votes[e];
			log->engine = e;
		}
	/* Ollama's log carries its runner's llama.cpp lines: Ollama's own
	 * lines make it Ollama's. */
	if (log->votes[VRT_ENGINELOG_OLLAMA] >= 4 &&
	    log->engine == VRT_ENGINELOG_LLAMACPP)
		log->engine = VRT_ENGINELOG_OLLAMA;
	/* The error the process did not survive is the last one printed that
	 * the engine did not carry on from; an engine prints nothing after
	 * it but its shutdown. */
	log->have_fatal = 0;
	for (i = log->nerrors; i-- > 0;)
		if (!log->errors[i].recovered) {
			log->have_fatal = 1;
			log->fatal = i;
			break;
		}
	for (i = 0; i < log->nerrors; i++)
		if (!log->errors[i].engine)
			log->errors[i].engine = log->engine;
	for (i = 0; i < log->nfacts; i++)
		if (!log->facts[i].engine)
			log->facts[i].engine = log->engine;
	if (!log->command[0])
		command_from_config(log);
}

void vrt_enginelog_free(struct vrt_enginelog *log)
{
	free(log->facts);
	log->facts = NULL;
	log->nfacts = log->cap_facts = 0;
}

int vrt_enginelog_value(const struct vrt_enginelog *log, int kind,
                        int32_t device, uint64_t *value, uint64_t *tol,
                        uint32_t *line)
{
	uint64_t v = 0, t = 0;
	uint32_t l = 0;
	int found = 0;
	size_t i;

	for (i = 0; i < log->nfacts; i++) {
		const struct vrt_enginelog_fact *f = &log->facts[i];
		if (f->kind != kind || f->device != device)
			continue;
		if (f->additive) {
			v += f->value;
			t += f->tol;
		} else {
			v = f->value;
			t = f->tol;
		}
		l = f->line;
		found = 1;
	}
	if (found) {
		*value = v;
		if (tol)
			*tol = t;
		if (line)
			*line = l;
	}
	return found;
}

/* Opens what path names for reading: "-" is standard input (not closed
 * after: *own 0); a FIFO waits at most VRT_ENGINELOG_FIFO_WAIT_S for a
 * writer, never forever. Returns the fd, or -1 with err filled. */
static int open_log(const char *path, int *own, char *err, size_t errn)
{
	struct stat st;
	struct pollfd pfd;
	int fd, r, fl;

	*own = 1;
	if (!strcmp(path, "-")) {
		*own = 0;
		return 0;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		snprintf(err, errn, "cannot open: %s", strerror(errno));
		return -1;
	}
	if (fstat(fd, &st)) {
		snprintf(err, errn, "cannot open: %s", strerror(errno));
		close(fd);
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(err, errn, "cannot read: a directory (give the log "
		                    "file, or the run directory as a trace)");
		close(fd);
		return -1;
	}
	if (S_ISFIFO(st.st_mode)) {
		/* Opened without waiting for a writer; wait for one (or its
		 * first bytes) a bounded time. */
		pfd.fd = fd;
		pfd.events = POLLIN;
		do
			r = poll(&pfd, 1, VRT_ENGINELOG_FIFO_WAIT_S * 1000);
		while (r < 0 && errno == EINTR);
		if (r == 0) {
			snprintf(err, errn,
			         "cannot read: a FIFO that no writer opened within "
			         "%d s",
			         VRT_ENGINELOG_FIFO_WAIT_S);
			close(fd);
			return -1;
		}
	}
	fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

int vrt_enginelog_read(struct vrt_enginelog *log, const char *path,
                       const struct vrt_enginelog_opts *o, char *err,
                       size_t errn)
{
	char *line = malloc(VRT_ENGINELOG_LINE_MAX), *chunk = malloc(1 << 20);
	size_t n = 0, i;
	uint64_t skipped = 0; /* bytes of the current line past the cap */
	ssize_t got;
	int rc = 0, own, fd;

	vrt_enginelog_init(log, o);
	if (!line || !chunk) {
		snprintf(err, errn, "out of memory");
		free(line);
		free(chunk);
		return -1;
	}
	fd = open_log(path, &own, err, errn);
	if (fd < 0) {
		free(line);
		free(chunk);
		return -1;
	}
	/* Lines longer than VRT_ENGINELOG_LINE_MAX are looked at up to it,
	 * so memory stays bounded whatever the file holds. */
	while (!rc) {
		got = read(fd, chunk, 1 << 20);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			if (got < 0) {
				snprintf(err, errn, "cannot read: %s",
				         strerror(errno));
				rc = -2;
			}
			break;
		}
		for (i = 0; i < (size_t)got;) {
			const char *nl = memchr(chunk + i, '\n', (size_t)got - i);
			size_t len = nl ? (size_t)(nl - (chunk + i))
			                : (size_t)got - i;
			size_t take = len;
			if (take > VRT_ENGINELOG_LINE_MAX - n)
				take = VRT_ENGINELOG_LINE_MAX - n;
			memcpy(line + n, chunk + i, take);
			n += take;
			skipped += len - take;
			i += len;
			if (!nl)
				break;
			i++;
			if (vrt_enginelog_feed(log, line, n)) {
				rc = -1;
				break;
			}
			log->bytes += skipped;
			n = 0;
			skipped = 0;
		}
	}
	if (!rc && (n || skipped)) {
		rc = vrt_enginelog_feed(log, line, n); /* no newline at the end */
		log->bytes += skipped;
	}
	if (rc == -1)
		snprintf(err, errn, "out of memory");
	free(line);
	free(chunk);
	if (own)
		close(fd);
	vrt_enginelog_end(log);
	return rc ? -1 : 0;
}
