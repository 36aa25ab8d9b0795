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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wallclock.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB (1024.0 * 1024.0)

/* ---- names ------------------------------------------------------------- */

const char *vrt_enginelog_engine_name(int engine)
{
	static const char *const names[VRT_ENGINELOG_NENGINES] = {
	        NULL, "vllm", "sglang", "llama.cpp", "tgi", "trtllm"};
	return engine > 0 && engine < VRT_ENGINELOG_NENGINES ? names[engine]
	                                                     : NULL;
}

const char *vrt_enginelog_kind_name(int kind)
{
	static const char *const names[VRT_ELK_NKINDS] = {
	        "unknown",     "weights",     "kv_cache_bytes",
	        "kv_cache_tokens", "activations", "cuda_graphs",
	        "max_concurrency", "total_memory", "non_torch_memory",
	        "kv_cache_blocks"};
	return kind > 0 && kind < VRT_ELK_NKINDS ? names[kind] : names[0];
}

const char *vrt_enginelog_error_name(int kind)
{
	static const char *const names[] = {
	        "unknown",        "torch_oom",       "cudamalloc_failed",
	        "cuda_error_oom", "oom",             "kv_too_small",
	        "no_kv_memory",   "free_below_util", "mem_fraction_static",
	        "context_alloc",  "prefill_tokens",  "max_total_tokens"};
	return kind > 0 && kind <= VRT_ELE_MAX_TOTAL_TOKENS ? names[kind]
	                                                    : names[0];
}

const char *vrt_enginelog_config_name(int field)
{
	static const char *const names[VRT_ELC_NFIELDS] = {
	        "max_model_len", "max_num_seqs",  "memory_fraction",
	        "tensor_parallel", "block_size",  "context_size",
	        "slots",           "gpu_layers",  "max_batch_total_tokens"};
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

	while (p[n] && p[n] != '%' && p[n] != ' ' && n + 1 < sizeof(lit)) {
		lit[n] = p[n];
		n++;
	}
	lit[n] = '\0';
	for (at = msg; n && (at = strstr(at, lit)); at++) {
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

	for (at = msg; (at = strstr(at, key)); at++) {
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
	return e;
}

static int repeats(const struct vrt_enginelog *log, size_t i);

/* Keeps the error filled in at errors[nerrors] unless it repeats one. */
static void commit_error(struct vrt_enginelog *log)
{
	if (!repeats(log, log->nerrors))
		log->nerrors++;
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
	const char *msg = li->msg, *at = strstr(msg, " buffer size =");
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
	} else if (!strcmp(words[0], "KV") || !strcmp(words[0], "RS")) {
		kind = VRT_ELK_KV_BYTES; /* RS: a recurrent model's state */
		name = words[1];
	} else if (!strcmp(words[0], "compute")) {
		kind = VRT_ELK_ACTIVATION;
		name = words[1];
	} else if (strstr(words[1], "load_tensors")) {
		kind = VRT_ELK_WEIGHTS; /* "llm_load_tensors: CUDA0 buffer" */
		name = words[0];
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

static int rule_llama(struct vrt_enginelog *log, const struct lineinfo *li)
{
	const char *msg = li->msg;
	struct cap c;
	struct vrt_enginelog_error *e;
	int r;

	if ((r = llama_buffer(log, li)) != 0)
		return r < 0 ? -1 : 1;
	if (scan(msg, "allocating %f MiB on device %u: cudaMalloc failed: "
	              "out of memory",
	         &c) ||
	    scan(msg, "allocating %f MiB on device %u: hipMalloc failed: "
	              "out of memory",
	         &c)) {
		if ((e = error(log, li, VRT_ENGINELOG_LLAMACPP,
		               VRT_ELE_CUDA_MALLOC))) {
			e->requested_bytes = (uint64_t)(c.v[0] * MIB + 0.5);
			e->requested_tol = (uint64_t)(c.tol[0] * MIB) + 1;
			e->device = (int32_t)c.v[1];
			e->have |= VRT_ELH_REQUESTED | VRT_ELH_DEVICE;
			commit_error(log);
		}
		return 1;
	}
	if ((scan(msg, "CUDA error: out of memory", &c) ||
	     scan(msg, "ROCm error: out of memory", &c) ||
	     scan(msg, "MUSA error: out of memory", &c)) &&
	    !strstr(msg, "current device")) {
		if ((e = error(log, li, VRT_ENGINELOG_LLAMACPP,
		               VRT_ELE_CUDA_ERROR))) {
			log->last_oom_error = (int64_t)log->nerrors;
			commit_error(log);
		}
		return 1;
	}
	if (scan(msg, "current device: %u, in function", &c)) {
		if (log->last_oom_error >= 0 &&
		    (size_t)log->last_oom_error < log->nerrors) {
			e = &log->errors[log->last_oom_error];
			if (!(e->have & VRT_ELH_DEVICE)) {
				e->device = (int32_t)c.v[0];
				e->have |= VRT_ELH_DEVICE;
			}
		}
		log->last_oom_error = -1;
		return 1;
	}
	if (strstr(msg, "failed to allocate buffer for kv cache") ||
	    strstr(msg, "failed to allocate compute buffers") ||
	    strstr(msg, "failed to initialize the context")) {
		if ((e = error(log, li, VRT_ENGINELOG_LLAMACPP,
		               VRT_ELE_CONTEXT_ALLOC))) {
			/* The failed cudaMalloc printed just before is this
			 * refusal's allocation: it carries its numbers. */
			const struct vrt_enginelog_error *p =
			        log->nerrors ? &log->errors[log->nerrors - 1]
			                     : NULL;
			if (p && p->kind == VRT_ELE_CUDA_MALLOC &&
			    e->line - p->line <= 8) {
				e->requested_bytes = p->requested_bytes;
				e->requested_tol = p->requested_tol;
				e->device = p->device;
				e->have |= p->have &
				           (VRT_ELH_REQUESTED | VRT_ELH_DEVICE);
			}
			commit_error(log);
		}
		return 1;
	}
	if (scan(msg, "llama_kv_cache%*: size = %f MiB (%_%u cells, %u layers, "
	              "%u/%u seqs)",
	         &c)) {
		config(log, VRT_ENGINELOG_LLAMACPP, VRT_ELC_SLOTS, c.v[4]);
		return fact(log, li, VRT_ENGINELOG_LLAMACPP, VRT_ELK_KV_TOKENS,
		            -1, c.v[1], 0, 0) < 0
		               ? -1
		               : 1;
	}
	if (strncmp(msg, "llama_context:", 14) == 0 ||
	    strncmp(msg, "llama_new_context_with_model:", 29) == 0 ||
	    strncmp(msg, "llama_init_from_model:", 22) == 0) {
		if (scan(msg, ": n_ctx = %u", &c))
			config(log, VRT_ENGINELOG_LLAMACPP, VRT_ELC_CTX_SIZE,
			       c.v[0]);
		else if (scan(msg, ": n_ctx_per_seq = %u", &c))
			config(log, VRT_ENGINELOG_LLAMACPP,
			       VRT_ELC_MAX_MODEL_LEN, c.v[0]);
		else if (scan(msg, ": n_seq_max = %u", &c))
			config(log, VRT_ENGINELOG_LLAMACPP, VRT_ELC_SLOTS,
			       c.v[0]);
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
	if (strstr(msg, "server is listening on") ||
	    strstr(msg, "HTTP server listening")) {
		ready(log, li, VRT_ENGINELOG_LLAMACPP, 2);
		return 1;
	}
	/* the model is in: weaker than the listening line that follows */
	if (strstr(msg, "all slots are idle") ||
	    strstr(msg, "main: model loaded") ||
	    strstr(msg, "\"model loaded\"")) {
		ready(log, li, VRT_ENGINELOG_LLAMACPP, 1);
		return 1;
	}
	return 0;
}

/* 1 when errors[i] repeats an earlier error (commit_error's test). */
static int repeats(const struct vrt_enginelog *log, size_t i)
{
	const struct vrt_enginelog_error *e = &log->errors[i];
	size_t k;

	for (k = 0; k < i; k++) {
		const struct vrt_enginelog_error *x = &log->errors[k];
		if (x->kind == e->kind && x->have == e->have &&
		    x->requested_bytes == e->requested_bytes &&
		    x->max_model_len == e->max_model_len &&
		    x->tokens == e->tokens && x->device == e->device &&
		    x->free_bytes == e->free_bytes &&
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

/* PyTorch's OutOfMemoryError (CUDA, HIP): the current message and the one
 * before PyTorch 2.1. */
static int rule_torch(struct vrt_enginelog *log, const struct lineinfo *li)
{
	const char *msg = li->msg;
	struct cap c;
	struct vrt_enginelog_error *e;

	if (rule_torch_async(log, li))
		return 1;
	if (!strstr(msg, "out of memory. Tried to allocate "))
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
		if (scan(msg, "and %z is reserved by PyTorch but unallocated",
		         &c)) {
			e->reserved_bytes = (uint64_t)c.v[0];
			e->have |= VRT_ELH_RESERVED;
		}
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

static int rule_vllm(struct vrt_enginelog *log, const struct lineinfo *li)
{
	const char *msg = li->msg;
	const int E = VRT_ENGINELOG_VLLM;
	struct cap c;
	struct vrt_enginelog_error *e;
	double v;

	if (scan(msg, "Model loading took %f GiB", &c) ||
	    scan(msg, "Loading model weights took %f GB", &c))
		return fact(log, li, E, VRT_ELK_WEIGHTS, -1, c.v[0] * GIB,
		            c.tol[0] * GIB, 0) < 0
		               ? -1
		               : 1;
	if (scan(msg, "model weights take %z; non_torch_memory takes %z; "
	              "PyTorch activation peak memory takes %z; the rest of "
	              "the memory reserved for KV Cache is %f",
	         &c)) {
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
	if (scan(msg, "total_gpu_memory (%z) x gpu_memory_utilization (%f)",
	         &c)) {
		config(log, E, VRT_ELC_MEM_FRACTION, c.v[1] * 1000);
		return fact(log, li, E, VRT_ELK_TOTAL, -1, c.v[0], c.tol[0],
		            0) < 0
		               ? -1
		               : 1;
	}
	if (scan(msg, "Available KV cache memory: %f GiB", &c))
		return fact(log, li, E, VRT_ELK_KV_BYTES, -1, c.v[0] * GIB,
		            c.tol[0] * GIB, 0) < 0
		               ? -1
		               : 1;
	if (scan(msg, "GPU KV cache size: %u tokens", &c))
		return fact(log, li, E, VRT_ELK_KV_TOKENS, -1, c.v[0], 0, 0) < 0
		               ? -1
		               : 1;
	if (scan(msg, "Maximum concurrency for %u tokens per request: %fx",
	         &c)) {
		config(log, E, VRT_ELC_MAX_MODEL_LEN, c.v[0]);
		return fact(log, li, E, VRT_ELK_CONCURRENCY, -1, c.v[1] * 1000,
		            c.tol[1] * 1000, 0) < 0
		               ? -1
		               : 1;
	}
	if (scan(msg, "# CUDA blocks: %u, # CPU blocks: %u", &c) ||
	    scan(msg, "# GPU blocks: %u, # CPU blocks: %u", &c))
		return fact(log, li, E, VRT_ELK_KV_BLOCKS, -1, c.v[0], 0, 0) < 0
		               ? -1
		               : 1;
	if (scan(msg, "Graph capturing finished in %f secs, took %f GiB", &c))
		return fact(log, li, E, VRT_ELK_GRAPH, -1, c.v[1] * GIB,
		            c.tol[1] * GIB, 0) < 0
		               ? -1
		               : 1;
	if (strstr(msg, "LLM engine (v") && strstr(msg, "with config:")) {
		vote(log, E, 4);
		if (keyval(msg, "max_seq_len=", &v))
			config(log, E, VRT_ELC_MAX_MODEL_LEN, v);
		if (keyval(msg, "tensor_parallel_size=", &v))
			config(log, E, VRT_ELC_TP, v);
		return 1;
	}
	if (strstr(msg, "non-default args: {")) {
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
		return 1;
	}
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
	if (strstr(msg, "No available memory for the cache blocks")) {
		if ((e = error(log, li, E, VRT_ELE_NO_KV_MEMORY)))
			commit_error(log);
		return 1;
	}
	if (scan(msg, "Free memory on device (%f/%f GiB) on startup is less "
	              "than desired GPU memory utilization (%f, %f GiB)",
	         &c)) {
		if ((e = error(log, li, E, VRT_ELE_FREE_BELOW_UTIL))) {
			e->free_bytes = (uint64_t)(c.v[0] * GIB);
			e->total_bytes = (uint64_t)(c.v[1] * GIB);
			e->mem_fraction_milli = (uint64_t)(c.v[2] * 1000 + 0.5);
			e->needed_bytes = (uint64_t)(c.v[3] * GIB);
			e->have |= VRT_ELH_FREE | VRT_ELH_TOTAL |
			           VRT_ELH_MEM_FRACTION | VRT_ELH_NEEDED;
			commit_error(log);
		}
		return 1;
	}
	if (strstr(msg, "Starting vLLM API server")) {
		ready(log, li, E, 1);
		return 1;
	}
	return 0;
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
		log->sglang_avail[0][rank] = (uint64_t)(c.v[0] * 1000 + 0.5);
		return 1;
	}
	if (scan(msg, "Load weight end. type=%*mem usage=%f GB", &c))
		return fact(log, li, E, VRT_ELK_WEIGHTS, -1, c.v[0] * GIB,
		            c.tol[0] * GIB, 0) < 0
		               ? -1
		               : 1;
	if (scan(msg, "Load weight end. type=%*avail mem=%f GB", &c)) {
		double before = (double)log->sglang_avail[0][rank] / 1000;
		vote(log, E, 4);
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
		if (fact(log, li, E, VRT_ELK_KV_TOKENS, -1, c.v[0], 0, 0) ||
		    fact(log, li, E, VRT_ELK_KV_BYTES, -1,
		         (c.v[1] + c.v[2]) * GIB,
		         (c.tol[1] + c.tol[2]) * GIB, 0))
			return -1;
		return 1;
	}
	if (scan(msg, "KV Cache is allocated. #tokens: %u, KV size: %f GB",
	         &c)) {
		if (fact(log, li, E, VRT_ELK_KV_TOKENS, -1, c.v[0], 0, 0) ||
		    fact(log, li, E, VRT_ELK_KV_BYTES, -1, c.v[1] * GIB,
		         c.tol[1] * GIB, 0))
			return -1;
		return 1;
	}
	if (scan(msg, "Capture cuda graph begin.%*avail mem=%f GB", &c)) {
		vote(log, E, 4);
		log->sglang_avail[1][rank] = (uint64_t)(c.v[0] * 1000 + 0.5);
		return 1;
	}
	if (scan(msg, "Capture cuda graph end.%*mem usage=%f GB", &c))
		return fact(log, li, E, VRT_ELK_GRAPH, -1, c.v[0] * GIB,
		            c.tol[0] * GIB, 0) < 0
		               ? -1
		               : 1;
	if (scan(msg, "Capture cuda graph end.%*avail mem=%f GB", &c)) {
		double before = (double)log->sglang_avail[1][rank] / 1000;
		vote(log, E, 4);
		if (before > c.v[0])
			return fact(log, li, E, VRT_ELK_GRAPH, -1,
			            (before - c.v[0]) * GIB, 0.01 * GIB, 0) < 0
			               ? -1
			               : 1;
		return 1;
	}
	if (strstr(msg, "max_total_num_tokens=")) {
		vote(log, E, 4);
		if (keyval(msg, "max_running_requests=", &v))
			config(log, E, VRT_ELC_MAX_NUM_SEQS, v);
		if (keyval(msg, "context_len=", &v))
			config(log, E, VRT_ELC_MAX_MODEL_LEN, v);
		if (keyval(msg, "max_total_num_tokens=", &v))
			return fact(log, li, E, VRT_ELK_KV_TOKENS, -1, v, 0, 0) <
			                       0
			               ? -1
			               : 1;
		return 1;
	}
	if (strstr(msg, "server_args=ServerArgs(")) {
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
		return 1;
	}
	if (strstr(msg, "Not enough memory. Please try to increase "
	                "--mem-fraction-static")) {
		if ((e = error(log, li, E, VRT_ELE_MEM_FRACTION))) {
			if (keyval(msg, "mem_fraction_static=", &v)) {
				e->mem_fraction_milli = (uint64_t)(v * 1000 + 0.5);
				e->have |= VRT_ELH_MEM_FRACTION;
			}
			commit_error(log);
		}
		return 1;
	}
	if (strstr(msg, "The server is fired up and ready to roll")) {
		ready(log, li, E, 2);
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
			commit_error(log);
		}
		return 1;
	}
	if (scan(msg, "Not enough memory to handle `max_total_tokens=%u`",
	         &c)) {
		if ((e = error(log, li, E, VRT_ELE_MAX_TOTAL_TOKENS))) {
			e->tokens = (uint64_t)c.v[0];
			e->have |= VRT_ELH_TOKENS;
			commit_error(log);
		}
		return 1;
	}
	if (n >= 9 && !strcmp(msg + n - 9, "Connected") &&
	    (n == 9 || msg[n - 10] == ' ')) {
		ready(log, li, E, 2);
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
	            {"num_shard:", VRT_ELC_TP}};
	const char *q = msg;
	size_t k, n = strlen(msg);
	double v, tol;

	if (n >= 6 && !strcmp(msg + n - 6, "Args {")) {
		log->tgi_args = 1;
		vote(log, VRT_ENGINELOG_TGI, 2);
		return 1;
	}
	if (!log->tgi_args && !strstr(msg, "Args { "))
		return 0;
	while (is_blank(*q))
		q++;
	if (log->tgi_args && *q == '}') {
		log->tgi_args = 0;
		return 1;
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
		const char *at = strstr(msg, keys[k].key), *p;
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

	if (scan(msg, "Allocated %f GiB for max tokens in paged KV cache (%u)",
	         &c)) {
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
	if (scan(msg, "Number of tokens per block: %u", &c)) {
		config(log, E, VRT_ELC_BLOCK_SIZE, c.v[0]);
		return 1;
	}
	if (scan(msg, "max_seq_len=%u, max_num_requests=%u", &c)) {
		config(log, E, VRT_ELC_MAX_MODEL_LEN, c.v[0]);
		config(log, E, VRT_ELC_MAX_NUM_SEQS, c.v[1]);
		return 1;
	}
	if (scan(msg, "Loaded engine size: %u MiB", &c))
		return fact(log, li, E, VRT_ELK_WEIGHTS, -1, c.v[0] * MIB, MIB,
		            0) < 0
		               ? -1
		               : 1;
	if (li->level_error && strstr(msg, "out of memory") &&
	    strstr(msg, "TensorRT-LLM")) {
		if ((e = error(log, li, E, VRT_ELE_OOM_OTHER)))
			commit_error(log);
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
		char buf[VRT_WALLCLOCK_TEXT];
		if (!log->opts.ref_wall_ns)
			return 0;
		vrt_wallclock_format(buf, sizeof(buf), log->opts.ref_wall_ns,
		                     0);
		y = atoi(buf);
		y0 = y - 1;
		y1 = y + 1;
	}
	for (y = y0; y <= y1; y++) {
		int64_t s = vrt_wallclock_timegm(y, mon, day, h, mi, se);
		int64_t ns, d;
		if (s == INT64_MIN)
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
	return !strncmp(s, p, strlen(p));
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
	if ((p = strstr(s, "pid=")) && p < s + i &&
	    number(p + 4, 0, 0, &v, &tol))
		li->pid = (int64_t)v;
	if ((p = strstr(s, "rank=")) && p < s + i &&
	    number(p + 5, 0, 0, &v, &tol))
		li->rank = (int32_t)v;
	else if ((p = strstr(s, "TP")) && p < s + i &&
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
			const char *e = strstr(s + i, "] ");
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
				tp = strstr(s, " TP");
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
					    (strstr(s + i, "text_generation") ==
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
			if (s[i] == '[' && s[i + 2] == ']') {
				li->level_error = s[i + 1] == 'E';
				i += 3;
			}
			while (is_blank(s[i]))
				i++;
			return i;
		}
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
	return 0;
}

/* The old llama.cpp server's JSON lines: {"tid":..,"timestamp":N,
 * "level":"INFO",...,"msg":"model loaded",...}: msg into out. */
static int llama_json(struct vrt_enginelog *log, const char *s,
                      struct lineinfo *li, char *out, size_t n)
{
	const char *m = strstr(s, "\"msg\":\"");
	size_t i = 0;
	double v, tol;
	const char *t;

	if (s[0] != '{' || !m)
		return 0;
	for (m += 7; *m && *m != '"' && i + 1 < n; m++)
		out[i++] = *m == '\\' && m[1] ? *++m : *m;
	out[i] = '\0';
	vote(log, VRT_ENGINELOG_LLAMACPP, 1);
	t = strstr(s, "\"timestamp\":");
	if (t && !li->wall_ns && number(t + 12, 0, 0, &v, &tol) && v > 1e9 &&
	    v < 1e11)
		li->wall_ns = (int64_t)v * 1000000000;
	li->level_error = strstr(s, "\"level\":\"ERR") != NULL;
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

int vrt_enginelog_feed(struct vrt_enginelog *log, const char *line,
                       size_t len)
{
	char buf[VRT_ENGINELOG_LINE_MAX + 1], json[VRT_ENGINELOG_TEXT * 2];
	struct lineinfo li = {0, -1, -1, NULL, 0};
	size_t n = len < VRT_ENGINELOG_LINE_MAX ? len : VRT_ENGINELOG_LINE_MAX;
	char *s = buf;
	size_t k;
	int64_t w;
	int r = 0;

	log->lines++;
	log->bytes += len + 1;
	memcpy(buf, line, n);
	buf[n] = '\0';
	/* record's prefix: "2026-12-02T10:15:00.123456Z out " */
	k = vrt_wallclock_parse(s, n, &w);
	if (k && (starts(s + k, " out ") || starts(s + k, " err "))) {
		li.wall_ns = w;
		s += k + 5;
		n -= k + 5;
	}
	n = clean(s, n);
	if (starts(s, "--- vramtrace: ")) {
		double v, tol;
		if (number(s + 15, 0, 1, &v, &tol))
			log->cut_bytes += (uint64_t)v;
		return 0;
	}
	for (k = 0; k < 4; k++) {
		size_t p = compose_prefix(s);
		if (!p)
			p = proc_prefix(s, &li);
		if (!p)
			break;
		s += p;
	}
	if (llama_json(log, s, &li, json, sizeof(json)))
		s = json;
	else
		s += engine_prefix(log, s, &li);
	if (!*s)
		return 0;
	li.msg = s;
	if (li.wall_ns) {
		if (!log->first_wall_ns)
			log->first_wall_ns = li.wall_ns;
		log->last_wall_ns = li.wall_ns;
	} else {
		/* A line without a time of its own (uvicorn's "INFO:", a
		 * traceback) comes right after the last one that had one. */
		li.wall_ns = log->last_wall_ns;
	}
	if (tgi_args(log, s))
		return 0;
	if ((r = rule_torch(log, &li)) || (r = rule_vllm(log, &li)) ||
	    (r = rule_sglang(log, &li)) || (r = rule_llama(log, &li)) ||
	    (r = rule_tgi(log, &li)) || (r = rule_trtllm(log, &li)))
		return r < 0 ? -1 : 0;
	if (strstr(s, "Application startup complete"))
		ready(log, &li, VRT_ENGINELOG_UNKNOWN, 2);
	else if (strstr(s, "Uvicorn running on"))
		ready(log, &li, VRT_ENGINELOG_UNKNOWN, 1);
	return 0;
}

void vrt_enginelog_init(struct vrt_enginelog *log,
                        const struct vrt_enginelog_opts *o)
{
	memset(log, 0, sizeof(*log));
	if (o)
		log->opts = *o;
	log->last_oom_error = -1;
}

void vrt_enginelog_end(struct vrt_enginelog *log)
{
	unsigned best = 0;
	int e;

	log->engine = VRT_ENGINELOG_UNKNOWN;
	for (e = 1; e < VRT_ENGINELOG_NENGINES; e++)
		if (log->votes[e] > best) {
			best = log->votes[e];
			log->engine = e;
		}
	/* The error the process did not survive is the last one printed;
	 * an engine prints nothing after it but its shutdown. */
	log->have_fatal = log->nerrors > 0;
	log->fatal = log->nerrors ? log->nerrors - 1 : 0;
	for (e = 0; (size_t)e < log->nerrors; e++)
		if (!log->errors[e].engine)
			log->errors[e].engine = log->engine;
	for (size_t i = 0; i < log->nfacts; i++)
		if (!log->facts[i].engine)
			log->facts[i].engine = log->engine;
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

int vrt_enginelog_read(struct vrt_enginelog *log, const char *path,
                       const struct vrt_enginelog_opts *o, char *err,
                       size_t errn)
{
	FILE *f = fopen(path, "re");
	char *line = malloc(VRT_ENGINELOG_LINE_MAX), chunk[64 * 1024];
	size_t n = 0, got, i;
	uint64_t skipped = 0; /* bytes of the current line past the cap */
	int rc = 0;

	vrt_enginelog_init(log, o);
	if (!f || !line) {
		snprintf(err, errn, "cannot open: %s",
		         strerror(f ? ENOMEM : errno));
		if (f)
			fclose(f);
		free(line);
		return -1;
	}
	/* Lines longer than VRT_ENGINELOG_LINE_MAX are looked at up to it,
	 * so memory stays bounded whatever the file holds. */
	while (!rc && (got = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		for (i = 0; i < got; i++) {
			if (chunk[i] != '\n') {
				if (n < VRT_ENGINELOG_LINE_MAX)
					line[n++] = chunk[i];
				else
					skipped++;
				continue;
			}
			if (vrt_enginelog_feed(log, line, n)) {
				rc = -1;
				break;
			}
			log->bytes += skipped;
			n = 0;
			skipped = 0;
		}
	}
	if (!rc && (n || skipped))
		rc = vrt_enginelog_feed(log, line, n); /* no newline at the end */
	if (rc)
		snprintf(err, errn, "out of memory");
	else if (ferror(f)) {
		snprintf(err, errn, "cannot read: %s", strerror(errno));
		rc = -1;
	}
	free(line);
	fclose(f);
	vrt_enginelog_end(log);
	return rc;
}
