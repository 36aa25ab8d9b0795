/*
 * enginelog_internal.h — what the parts of the engine log reader share,
 * not for anyone else: the pattern scanner's captures, what one line's
 * prefixes told (struct lineinfo), and the functions one part calls in
 * another. enginelog.c says which part owns what. Single-threaded per
 * struct vrt_enginelog.
 */
#ifndef VRT_ENGINELOG_INTERNAL_H
#define VRT_ENGINELOG_INTERNAL_H

#include "enginelog.h"
#include "vramtrace/trace_format.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB (1024.0 * 1024.0)

/* What a pattern captured (enginelog_scan.c): its numbers (%f %u %z) with
 * their tolerance, and its words (%w). */
#define SCAN_MAX 8

struct cap {
	double v[SCAN_MAX];
	double tol[SCAN_MAX]; /* half the last printed digit, in v's unit */
	int nv;
	char w[2][32];
	int nw;
};

/* Traceback frames that say what a Python engine was doing (the deepest
 * one named wins: frames are printed outermost first). */
enum {
	TB_SEEN = 1 << 0,    /* a traceback is being printed */
	TB_REQUEST = 1 << 1, /* a request handler or the serving loop */
	TB_SAMPLER = 1 << 2, /* vLLM's sampler warm-up */
};

/* What the prefixes of one line told. */
struct lineinfo {
	int64_t wall_ns;
	int64_t pid;
	int32_t rank; /* rank / device the prefix names, -1 */
	const char *msg;
	int level_error; /* the engine logged it as an error */
};

/* A blank (space, tab) and a digit: inline, as the loops of every part
 * test them byte by byte. */
static inline int vrt_enginelog_scan_blank(char c)
{
	return c == ' ' || c == '\t';
}

static inline int vrt_enginelog_scan_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* The pairs of adjacent bytes of the message being read (a 4096-bit set,
 * six low bits of each byte), so that most searches for text the message
 * cannot hold end without scanning it: a log of a gigabyte is mostly
 * lines no rule reads. Set before message() runs the rules, cleared on
 * its way out; a search in any other text is a plain strstr. Per thread;
 * enginelog.c defines and sets it. */
struct vrt_enginelog_pairs {
	uintptr_t lo, hi; /* the message's bytes, its NUL included */
	uint64_t bits[64];
};
extern _Thread_local struct vrt_enginelog_pairs vrt_enginelog_msg_pairs;

/* The pair of bytes at s, as the set above numbers it. */
static inline unsigned vrt_enginelog_scan_pair(const char *s)
{
	return ((unsigned)(unsigned char)s[0] & 0x3fu) << 6 |
	       ((unsigned)(unsigned char)s[1] & 0x3fu);
}

/* 0 when the text at h cannot hold the len bytes at n (h: in the
 * message being read, and a pair of n's bytes is not in it), else 1. */
/* 0 when the text at h cannot hold the len bytes at n (h: in the
 * message being read, and a pair of n's bytes is not in it), else 1. */
static inline int vrt_enginelog_scan_may_hold(const char *h, const char *n,
                                              size_t len)
{
	const struct vrt_enginelog_pairs *mp = &vrt_enginelog_msg_pairs;
	size_t i;

	if ((uintptr_t)h < mp->lo || (uintptr_t)h >= mp->hi)
		return 1;
	for (i = 0; i + 1 < len; i++) {
		unsigned b = vrt_enginelog_scan_pair(n + i);
		if (!(mp->bits[b >> 6] >> (b & 63) & 1))
			return 0;
	}
	return 1;
}

/* strstr, quicker on the message being read. */
static inline char *vrt_enginelog_scan_find(const char *h, const char *n)
{
	return vrt_enginelog_scan_may_hold(h, n, strlen(n)) ? strstr(h, n)
	                                                    : NULL;
}

/* 1 when s starts with p. */
static inline int vrt_enginelog_scan_starts(const char *s, const char *p)
{
	return *s == *p && !strncmp(s, p, strlen(p));
}

/* vrt_enginelog_scan matches pattern p anywhere in msg (it must start
 * with literal text): 1 when it does (captures into c), else 0. Most
 * patterns fail on their literal start, checked here inline (the
 * rules of every engine call this for every line). */
#define VRT_ENGINELOG_SCAN_LIT 64
int vrt_enginelog_scan_from(const char *msg, const char *p, size_t n,
                            struct cap *c);
static inline int vrt_enginelog_scan(const char *msg, const char *p,
                                     struct cap *c)
{
	size_t n = 0;

	while (p[n] && p[n] != '%' && p[n] != ' ' &&
	       n + 1 < VRT_ENGINELOG_SCAN_LIT)
		n++;
	if (!n || !vrt_enginelog_scan_may_hold(msg, p, n))
		return 0;
	return vrt_enginelog_scan_from(msg, p, n, c);
}
int vrt_enginelog_scan_keyval(const char *msg, const char *key, double *v);
int vrt_enginelog_scan_match(const char *s, const char *p, struct cap *c);
size_t vrt_enginelog_scan_number(const char *s, int sign, int commas, double *v,
                                 double *tol);
size_t vrt_enginelog_scan_word(const char *s, char *out, size_t n);

/* enginelog_record.c: fact returns -1 out of memory; error fills in the
 * next error (NULL when they are full), vrt_enginelog_record_commit keeps
 * it unless it repeats one */
void vrt_enginelog_record_commit(struct vrt_enginelog *log);
void vrt_enginelog_record_config(struct vrt_enginelog *log, int engine,
                                 int field, double v);
struct vrt_enginelog_error *
vrt_enginelog_record_error(struct vrt_enginelog *log, const struct lineinfo *li,
                           int engine, int kind);
int vrt_enginelog_record_fact(struct vrt_enginelog *log,
                              const struct lineinfo *li, int engine, int kind,
                              int32_t device, double value, double tol,
                              int additive);
void vrt_enginelog_record_host_error(struct vrt_enginelog *log,
                                     const struct lineinfo *li, int engine,
                                     uint64_t bytes, int recovered);
void vrt_enginelog_record_inherit(struct vrt_enginelog_error *e,
                                  const struct vrt_enginelog_error *p);
struct vrt_enginelog_error *
vrt_enginelog_record_last_error(struct vrt_enginelog *log, int kind,
                                uint32_t within);
void vrt_enginelog_record_own_pid(struct vrt_enginelog *log, int64_t pid);
void vrt_enginelog_record_ready(struct vrt_enginelog *log,
                                const struct lineinfo *li, int engine,
                                int strength);
int vrt_enginelog_record_repeats(const struct vrt_enginelog *log, size_t i);
void vrt_enginelog_record_request(struct vrt_enginelog *log,
                                  const struct lineinfo *li, int engine,
                                  int by);
void vrt_enginelog_record_running(struct vrt_enginelog *log, uint64_t n);
void vrt_enginelog_record_step(struct vrt_enginelog *log, int phase);
void vrt_enginelog_record_vote(struct vrt_enginelog *log, int engine,
                               unsigned n);
int vrt_enginelog_record_access_line(struct vrt_enginelog *log,
                                     const struct lineinfo *li);

/* enginelog_command.c: the command line into log->command */
void vrt_enginelog_command_from_config(struct vrt_enginelog *log);
void vrt_enginelog_command_from_dict(struct vrt_enginelog *log, int engine,
                                     const char *prog, const char *dict);
void vrt_enginelog_command_sglang(struct vrt_enginelog *log, const char *args);
int vrt_enginelog_command_tgi_args(struct vrt_enginelog *log, const char *msg);

/* The rules, one per engine (and PyTorch's): each reads li->msg and returns
 * 1 when the line was its own, 0 when not, -1 out of memory. */

/* enginelog_torch.c */
int vrt_enginelog_torch_python_oom(struct vrt_enginelog *log,
                                   const struct lineinfo *li);
int vrt_enginelog_torch_rule(struct vrt_enginelog *log,
                             const struct lineinfo *li);
int vrt_enginelog_torch_traceback(struct vrt_enginelog *log, const char *msg);

/* enginelog_vllm.c */
int vrt_enginelog_vllm_rule(struct vrt_enginelog *log,
                            const struct lineinfo *li);

/* enginelog_sglang.c */
int vrt_enginelog_sglang_rule(struct vrt_enginelog *log,
                              const struct lineinfo *li);

/* enginelog_llama.c */
int vrt_enginelog_llama_gpu_buffer(const char *name, int32_t *dev);
int vrt_enginelog_llama_errors(struct vrt_enginelog *log,
                               const struct lineinfo *li);
int vrt_enginelog_llama_rule(struct vrt_enginelog *log,
                             const struct lineinfo *li);

/* enginelog_ollama.c */
int vrt_enginelog_ollama_rule(struct vrt_enginelog *log,
                              const struct lineinfo *li);

/* enginelog_tgi.c */
int vrt_enginelog_tgi_rule(struct vrt_enginelog *log,
                           const struct lineinfo *li);

/* enginelog_trtllm.c */
int vrt_enginelog_trtllm_rule(struct vrt_enginelog *log,
                              const struct lineinfo *li);

#endif
