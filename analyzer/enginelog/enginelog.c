/*
 * enginelog.c — reads what an inference engine printed about its memory
 * (enginelog.h). A line goes through: the `record` timestamp prefix, ANSI
 * escapes and carriage returns removed, process prefixes ("(EngineCore_DP0
 * pid=212) ", "vllm_0  | ") taken off, the engine's own log prefix read
 * (its time, its rank), then the message against each engine's sentences.
 *
 * The sentences are matched with a small pattern language
 * (vrt_enginelog_scan, enginelog_scan.c):
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
 *
 * This file owns the reader: the names, a line's way from bytes to a
 * message (cleaning, the prefixes with their times, ranks and pids, the
 * noise of a pasted log, wrapped lines joined, the rules in turn), the
 * end of a log (which engine, the error the process did not survive) and
 * the file. The other parts (enginelog_internal.h):
 *   enginelog_scan.c     the pattern language and text helpers
 *   enginelog_record.c   recording what was found (facts, errors, the
 *                        configuration, readiness, requests)
 *   enginelog_command.c  the server's command line from what it printed
 *   enginelog_torch.c    PyTorch's errors and Python tracebacks
 *   enginelog_vllm.c, enginelog_sglang.c, enginelog_llama.c (llama.cpp),
 *   enginelog_ollama.c, enginelog_tgi.c, enginelog_trtllm.c: each
 *                        engine's own sentences
 */
#include "enginelog_internal.h"
#include "load/wallclock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

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
	return vrt_enginelog_scan_digit(s[0]) && vrt_enginelog_scan_digit(s[1])
	               ? (s[0] - '0') * 10 + s[1] - '0'
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
		else if (!(vrt_enginelog_scan_digit(c) ||
		           (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		           strchr(" _=,.:-/", c)))
			return 0;
	}
	if (depth || !vrt_enginelog_scan_blank(s[i]))
		return 0;
	if ((p = vrt_enginelog_scan_find(s, "pid=")) && p < s + i &&
	    vrt_enginelog_scan_number(p + 4, 0, 0, &v, &tol))
		li->pid = (int64_t)v;
	if ((p = vrt_enginelog_scan_find(s, "rank=")) && p < s + i &&
	    vrt_enginelog_scan_number(p + 5, 0, 0, &v, &tol))
		li->rank = (int32_t)v;
	else if ((p = vrt_enginelog_scan_find(s, "TP")) && p < s + i &&
	         vrt_enginelog_scan_number(p + 2, 0, 0, &v, &tol))
		li->rank = (int32_t)v;
	while (vrt_enginelog_scan_blank(s[i]))
		i++;
	return i;
}

/* A docker compose "service_1  | " prefix; returns its length or 0. */
static size_t compose_prefix(const char *s)
{
	size_t i = 0;

	while (s[i] && i < 48 &&
	       (vrt_enginelog_scan_digit(s[i]) ||
	        (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
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

	if (!vrt_enginelog_scan_starts(s, "[RANK "))
		return 0;
	n = vrt_enginelog_scan_number(s + 6, 0, 0, &v, &tol);
	if (!n || s[6 + n] != ']')
		return 0;
	li->rank = (int32_t)v;
	n += 7;
	while (vrt_enginelog_scan_blank(s[n]))
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

	/* vLLM: "INFO 12-02 10:15:00 [file.py:123] " (older: "file.py:123] ")
	 */
	for (k = 0; k < 5; k++) {
		size_t n = strlen(levels[k]);
		if (!vrt_enginelog_scan_starts(s, levels[k]))
			continue;
		mo = two(s + n);
		d = two(s + n + 3);
		if (mo < 0 || d < 0 || s[n + 2] != '-' || s[n + 5] != ' ' ||
		    hms(s + n + 6, &h, &mi, &se))
			break;
		vrt_enginelog_record_vote(log, VRT_ENGINELOG_VLLM, 1);
		li->level_error = k >= 3;
		if (!li->wall_ns)
			li->wall_ns = engine_time(log, -1, mo, d, h, mi, se);
		i = n + 14;
		while (vrt_enginelog_scan_blank(s[i]))
			i++;
		if (s[i] == '[') {
			const char *e = strchr(s + i, ']');
			if (e && e - (s + i) < 160)
				i = (size_t)(e - s) + 1;
		} else {
			const char *e = vrt_enginelog_scan_find(s + i, "] ");
			if (e && e - (s + i) < 160 &&
			    memchr(s + i, ':', (size_t)(e - s - i)))
				i = (size_t)(e - s) + 1;
		}
		while (vrt_enginelog_scan_blank(s[i]))
			i++;
		return i;
	}
	/* SGLang: "[2025-12-02 10:15:00 TP0] " or "[12-02 10:15:00 DP0 TP1] "
	 */
	if (s[0] == '[' && vrt_enginelog_scan_digit(s[1])) {
		i = 1;
		y = -1;
		if (s[5] == '-' && vrt_enginelog_scan_digit(s[4])) {
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
				vrt_enginelog_record_vote(
				        log, VRT_ENGINELOG_SGLANG, 1);
				if (!li->wall_ns)
					li->wall_ns = engine_time(log, y, mo, d,
					                          h, mi, se);
				tp = vrt_enginelog_scan_find(s, " TP");
				if (tp && tp < e &&
				    vrt_enginelog_scan_number(tp + 3, 0, 0, &v,
				                              &tol))
					li->rank = (int32_t)v;
				i = (size_t)(e - s) + 1;
				while (vrt_enginelog_scan_blank(s[i]))
					i++;
				return i;
			}
		}
	}
	/* TGI: "2024-10-16T08:51:10.517470Z  INFO target: file.rs:12: " */
	{
		int64_t w;
		size_t n = vrt_wallclock_parse(s, strlen(s), &w);
		if (n && vrt_enginelog_scan_blank(s[n])) {
			i = n;
			while (vrt_enginelog_scan_blank(s[i]))
				i++;
			if (vrt_enginelog_scan_starts(s + i, "INFO ") ||
			    vrt_enginelog_scan_starts(s + i, "WARN ") ||
			    vrt_enginelog_scan_starts(s + i, "ERROR ") ||
			    vrt_enginelog_scan_starts(s + i, "DEBUG ") ||
			    vrt_enginelog_scan_starts(s + i, "TRACE ")) {
				li->level_error = vrt_enginelog_scan_starts(
				        s + i, "ERROR ");
				vrt_enginelog_record_vote(log,
				                          VRT_ENGINELOG_TGI, 1);
				if (!li->wall_ns)
					li->wall_ns = w;
				while (s[i] && !vrt_enginelog_scan_blank(s[i]))
					i++;
				while (vrt_enginelog_scan_blank(s[i]))
					i++;
				/* "target: " and "file.rs:123: " */
				for (k = 0; k < 2; k++) {
					size_t j = i;
					while (s[j] &&
					       !vrt_enginelog_scan_blank(s[j]))
						j++;
					if (j > i && s[j - 1] == ':' &&
					    (vrt_enginelog_scan_find(
					             s + i,
					             "text_generation") ==
					             s + i ||
					     (j - i > 4 &&
					      memchr(s + i, '.', j - i)))) {
						i = j;
						while (vrt_enginelog_scan_blank(
						        s[i]))
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
			vrt_enginelog_record_vote(log, VRT_ENGINELOG_TRTLLM, 1);
			if (!li->wall_ns)
				li->wall_ns = engine_time(log, y, mo, d, h, mi,
				                          se);
			i = 21;
			while (vrt_enginelog_scan_blank(s[i]))
				i++;
			if (vrt_enginelog_scan_starts(s + i, "[TRT-LLM] "))
				i += 10;
			i += trt_rank(s + i, li);
			if (s[i] == '[' && s[i + 2] == ']') {
				li->level_error = s[i + 1] == 'E';
				i += 3;
			}
			while (vrt_enginelog_scan_blank(s[i]))
				i++;
			return i;
		}
	}
	/* "[TRT-LLM] [RANK 0] [E] " without a date */
	if (vrt_enginelog_scan_starts(s, "[TRT-LLM] ")) {
		vrt_enginelog_record_vote(log, VRT_ENGINELOG_TRTLLM, 1);
		i = 10 + trt_rank(s + 10, li);
		if (s[i] == '[' && s[i + 1] && s[i + 2] == ']') {
			li->level_error = s[i + 1] == 'E';
			i += 3;
		}
		while (vrt_enginelog_scan_blank(s[i]))
			i++;
		return i;
	}
	if (vrt_enginelog_scan_starts(s, "[TensorRT-LLM]")) {
		vrt_enginelog_record_vote(log, VRT_ENGINELOG_TRTLLM, 1);
		li->level_error = vrt_enginelog_scan_starts(s + 14, "[ERROR]");
		i = 14;
		if (s[i] == '[') {
			const char *e = strchr(s + i, ']');
			if (e)
				i = (size_t)(e - s) + 1;
		}
		while (vrt_enginelog_scan_blank(s[i]))
			i++;
		return i;
	}
	/* llama.cpp with --log-prefix/--log-timestamps: "0.00.035.060 I " */
	if (vrt_enginelog_scan_digit(s[0])) {
		i = 0;
		while (vrt_enginelog_scan_digit(s[i]))
			i++;
		if (s[i] == '.' && two(s + i + 1) >= 0 && s[i + 3] == '.' &&
		    vrt_enginelog_scan_digit(s[i + 4]) && s[i + 7] == '.' &&
		    vrt_enginelog_scan_digit(s[i + 8]) && s[i + 11] == ' ' &&
		    strchr("IWED", s[i + 12]) && s[i + 13] == ' ') {
			vrt_enginelog_record_vote(log, VRT_ENGINELOG_LLAMACPP,
			                          1);
			li->level_error = s[i + 12] == 'E';
			return i + 14;
		}
	}
	/* llama.cpp with --log-prefix and no timestamps: "I load_tensors: ",
	 * "W srv  ...", "E ggml_..." */
	if (strchr("IWED", s[0]) && s[0] && s[1] == ' ' &&
	    (vrt_enginelog_scan_starts(s + 2, "srv ") ||
	     vrt_enginelog_scan_starts(s + 2, "slot ") ||
	     vrt_enginelog_scan_starts(s + 2, "llama") ||
	     vrt_enginelog_scan_starts(s + 2, "ggml") ||
	     vrt_enginelog_scan_starts(s + 2, "load_") ||
	     vrt_enginelog_scan_starts(s + 2, "common_") ||
	     vrt_enginelog_scan_starts(s + 2, "print_info") ||
	     vrt_enginelog_scan_starts(s + 2, "main:") ||
	     vrt_enginelog_scan_starts(s + 2, "sched_") ||
	     vrt_enginelog_scan_starts(s + 2, "alloc_") ||
	     vrt_enginelog_scan_starts(s + 2, "build_info") ||
	     vrt_enginelog_scan_starts(s + 2, "system_info"))) {
		vrt_enginelog_record_vote(log, VRT_ENGINELOG_LLAMACPP, 1);
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

	if (!vrt_enginelog_scan_starts(s, "time=") ||
	    !(m = vrt_enginelog_scan_find(s, " msg=")) || m - s > 160)
		return 0;
	n = vrt_wallclock_parse(s + 5, strlen(s + 5), &w);
	if (n && !li->wall_ns)
		li->wall_ns = w;
	li->level_error = vrt_enginelog_scan_find(s, " level=ERROR") &&
	                  vrt_enginelog_scan_find(s, " level=ERROR") < m;
	vrt_enginelog_record_vote(log, VRT_ENGINELOG_OLLAMA, 2);
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
		while (vrt_enginelog_scan_blank(*s) &&
		       (s[1] == '>' || s[1] == '`'))
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
		while (vrt_enginelog_scan_blank(*t))
			t++;
		if (vrt_enginelog_scan_starts(t, "```") ||
		    vrt_enginelog_scan_starts(t, "~~~"))
			return NULL;
	}
	/* kubectl logs --prefix: "[pod/vllm-0/server] " */
	if (vrt_enginelog_scan_starts(s, "[pod/") &&
	    (p = vrt_enginelog_scan_find(s, "] ")) && p - s < 200)
		s = p + 2;
	/* journald: "Dec 02 10:15:00 host unit[123]: " */
	for (k = 0; k < 12; k++)
		if (vrt_enginelog_scan_starts(s, months[k]) && s[3] == ' ')
			break;
	if (k < 12 && (s[4] == ' ' || vrt_enginelog_scan_digit(s[4])) &&
	    vrt_enginelog_scan_digit(s[5]) && s[6] == ' ' && s[9] == ':' &&
	    s[12] == ':' && s[15] == ' ') {
		char *colon = vrt_enginelog_scan_find(s + 16, "]: ");
		char *sp = strchr(s + 16, ' ');
		if (colon && sp && sp < colon && colon - s < 160) {
			char *br = strchr(sp, '[');
			double v, tol;
			if (br && br < colon &&
			    vrt_enginelog_scan_number(br + 1, 0, 0, &v, &tol))
				vrt_enginelog_record_own_pid(log, (int64_t)v);
			s = colon + 3;
		}
	}
	/* a bare RFC 3339 time in front (not TGI's, whose level follows) */
	n = vrt_wallclock_parse(s, strlen(s), &w);
	if (n && s[n] == ' ') {
		char *t = s + n;
		while (vrt_enginelog_scan_blank(*t))
			t++;
		if (!(vrt_enginelog_scan_starts(t, "INFO ") ||
		      vrt_enginelog_scan_starts(t, "WARN ") ||
		      vrt_enginelog_scan_starts(t, "ERROR ") ||
		      vrt_enginelog_scan_starts(t, "DEBUG ") ||
		      vrt_enginelog_scan_starts(t, "TRACE "))) {
			if (!li->wall_ns)
				li->wall_ns = w;
			s = t;
		}
	}
	/* Ray's deduplication: " [repeated 3x across cluster]" */
	log->line_repeated = 0;
	if ((p = vrt_enginelog_scan_find(s, " [repeated ")) &&
	    vrt_enginelog_scan_find(p, "x across cluster]")) {
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
	const char *m = vrt_enginelog_scan_find(s, "\"msg\":\"");
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
	if ((t = vrt_enginelog_scan_find(s, "\"id_slot\":")) &&
	    vrt_enginelog_scan_number(t + 10, 0, 0, &v, &tol) &&
	    (!strcmp(out, "slot is processing task") ||
	     !strcmp(out, "slot released")))
		snprintf(out, n, "slot %s: id %d | task 0 | %s",
		         out[5] == 'i' ? "launch_slot_" : "release", (int)v,
		         out[5] == 'i' ? "processing task" : "stop processing");
	vrt_enginelog_record_vote(log, VRT_ENGINELOG_LLAMACPP, 1);
	t = vrt_enginelog_scan_find(s, "\"timestamp\":");
	if (t && !li->wall_ns &&
	    vrt_enginelog_scan_number(t + 12, 0, 0, &v, &tol) && v > 1e9 &&
	    v < 1e11)
		li->wall_ns = (int64_t)v * 1000000000;
	li->level_error = vrt_enginelog_scan_find(s, "\"level\":\"ERR") != NULL;
	return 1;
}

/* ---- the message's byte pairs ------------------------------------------ */

/* The message's byte pairs (enginelog_internal.h), this thread's. */
_Thread_local struct vrt_enginelog_pairs vrt_enginelog_msg_pairs;

static void pairs_set(const char *s)
{
	struct vrt_enginelog_pairs *mp = &vrt_enginelog_msg_pairs;
	size_t i, n = strlen(s);

	memset(mp->bits, 0, sizeof(mp->bits));
	for (i = 0; i + 1 < n; i++) {
		unsigned b = vrt_enginelog_scan_pair(s + i);
		mp->bits[b >> 6] |= 1ull << (b & 63);
	}
	mp->lo = (uintptr_t)s;
	mp->hi = (uintptr_t)s + n + 1;
}

static void pairs_clear(void)
{
	vrt_enginelog_msg_pairs.lo = vrt_enginelog_msg_pairs.hi = 0;
}

/* ---- a line, from its bytes to the rules ------------------------------ */

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
				for (i++;
				     i < n && !((unsigned char)s[i] >= 0x40 &&
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
		vrt_enginelog_record_own_pid(log, li->pid);
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
	if (vrt_enginelog_command_tgi_args(log, s) ||
	    vrt_enginelog_torch_traceback(log, s))
		return 0;
	if (vrt_enginelog_record_access_line(log, li))
		return 0;
	/* past the lines read quickly: the rules search this line often */
	pairs_set(s);
	if ((r = vrt_enginelog_torch_rule(log, li)) ||
	    (r = vrt_enginelog_vllm_rule(log, li)) ||
	    (r = vrt_enginelog_sglang_rule(log, li)) ||
	    (r = vrt_enginelog_ollama_rule(log, li)) ||
	    (r = vrt_enginelog_llama_rule(log, li)) ||
	    (r = vrt_enginelog_tgi_rule(log, li)) ||
	    (r = vrt_enginelog_trtllm_rule(log, li)) ||
	    (r = vrt_enginelog_torch_python_oom(log, li)))
		return r < 0 ? -1 : 0;
	if (vrt_enginelog_scan_find(s, "Application startup complete")) {
		vrt_enginelog_record_ready(log, li, VRT_ENGINELOG_UNKNOWN, 2);
		vrt_enginelog_record_step(log, VRT_PHASE_forward);
	} else if (vrt_enginelog_scan_find(s, "Uvicorn running on")) {
		vrt_enginelog_record_ready(log, li, VRT_ENGINELOG_UNKNOWN, 1);
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
		if ((at = vrt_enginelog_scan_find(s, wraps[k][0])) &&
		    !vrt_enginelog_scan_find(at, wraps[k][1]))
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

	while (vrt_enginelog_scan_blank(*t))
		t++;
	if (!*t || vrt_enginelog_scan_starts(t, "Traceback") ||
	    vrt_enginelog_scan_starts(t, "File \"") ||
	    vrt_enginelog_scan_starts(t, "The above exception") ||
	    vrt_enginelog_scan_starts(t, "During handling") || *t == '(' ||
	    vrt_enginelog_scan_starts(t, "time="))
		return 0;
	/* a prefix-less engine's line: "llama_context: ", "srv  ", "slot " */
	n = strspn(t, "abcdefghijklmnopqrstuvwxyz0123456789_");
	if ((n > 2 && n < 48 && t[n] == ':' && t[n + 1] == ' ') ||
	    vrt_enginelog_scan_starts(t, "srv ") ||
	    vrt_enginelog_scan_starts(t, "slot ") ||
	    vrt_enginelog_scan_starts(t, "[GIN]"))
		return 0;
	/* an exception's line: "torch.OutOfMemoryError: ", "ValueError: " */
	n = strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	              "0123456789_.");
	if (n > 5 && t[n] == ':' && t[n + 1] == ' ' &&
	    (!strncmp(t + n - 5, "Error", 5) ||
	     (n > 9 && !strncmp(t + n - 9, "Exception", 9))))
		return 0;
	if (vrt_wallclock_parse(t, strlen(t), &li.wall_ns) || compose_prefix(t))
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
		if ((c < 0x20 && c != '\t' && c != '\r' && c != 0x1b &&
		     c != 8) ||
		    c == 0x7f)
			ctl++;
	}
	if (ctl && (memchr(buf, 0, n) || ctl * 10 > n))
		log->binary_lines++;
	/* record's prefix: "2026-12-02T10:15:00.123456Z out " */
	k = vrt_wallclock_parse(s, n, &w);
	if (k && (vrt_enginelog_scan_starts(s + k, " out ") ||
	          vrt_enginelog_scan_starts(s + k, " err "))) {
		li.wall_ns = w;
		s += k + 5;
		n -= k + 5;
	}
	if (!plain)
		n = clean(s, n);
	if (vrt_enginelog_scan_starts(s, "--- vramtrace: ")) {
		double v, tol;
		if (vrt_enginelog_scan_number(s + 15, 0, 1, &v, &tol))
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
			if (!vrt_enginelog_scan_blank(
			            log->wrap[log->wrap_len - 1]) &&
			    !vrt_enginelog_scan_blank(*s) && !log->wrap_hard)
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
	if ((wrap_opens(s) ||
	     (wrap_width(n) && !vrt_enginelog_scan_find(s, "File \""))) &&
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
		vrt_wallclock_format(buf, sizeof(buf), log->opts.ref_wall_ns,
		                     0);
		log->ref_year = atoi(buf);
	}
	log->last_oom_error = -1;
	log->step = VRT_ELP_UNKNOWN;
	log->tb_phase = VRT_ELP_UNKNOWN;
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
		vrt_enginelog_command_from_config(log);
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
			         "cannot read: a FIFO that no writer opened "
			         "within "
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
			const char *nl =
			        memchr(chunk + i, '\n', (size_t)got - i);
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
		rc = vrt_enginelog_feed(log, line,
		                        n); /* no newline at the end */
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
