/*
 * Phase rules: the parser of rules files and the matcher that tags a call
 * stack with a phase (see rules.h for the contract, docs/rules.md for the
 * user's view, builtin.rules for the built-in rules).
 *
 * Rules file syntax, one rule per line:
 *
 *	PHASE  [py:|native:]FUNCTION_GLOB  [in FILE_GLOB]  [obsolete]
 *
 *   PHASE          weights, kv_cache, forward, profile, cuda_graph, comm,
 *                  workspace, unattributed, or a custom name
 *                  [a-z][a-z0-9_]* (at most 63 bytes) that gets its own id
 *                  >= VRT_PHASE_FIRST_CUSTOM, in order of first appearance.
 *   py: native:    restrict the rule to Python or to native frames; no
 *                  prefix matches both kinds.
 *   FUNCTION_GLOB  matched against the whole function name: a Python
 *                  qualified name ("GPUModelRunner.load_model") or a
 *                  demangled native symbol. '*' matches any run of bytes
 *                  (including '.', ':' and '/'), '?' any one byte; there is
 *                  no escape. A native name also matches by its part before
 *                  the parameter list ("llama_context::decode" for
 *                  "llama_context::decode(llama_batch const&)") and a C
 *                  clone suffix (".part.0", ".cold") is ignored. A Python
 *                  frame without a '.' in its name (CPython < 3.11 has no
 *                  qualified names) matches a pattern "Class.meth" by the
 *                  part after the pattern's last '.', when that part is not
 *                  just '*'.
 *   in FILE_GLOB   also require the frame's file (Python source path, or
 *                  the shared object of a native frame) to match. A glob
 *                  without '/' is matched against the base name
 *                  ("libnccl.so*"); a glob with '/' against the whole path
 *                  or any tail of it that starts after a '/'
 *                  ("vllm/v1/worker/gpu_worker.py" matches
 *                  ".../site-packages/vllm/v1/worker/gpu_worker.py").
 *   obsolete       the rule names a function only older releases have:
 *                  it matches as any rule, and reports can tell stacks
 *                  that only such a rule claimed (vrt_rules_obsolete).
 *
 * Tokens are separated by blanks (space, tab); a token may be put in double
 * quotes to hold blanks (no escapes). '#' at the start of a token starts a
 * comment that runs to the end of the line ('#' inside a token, as in
 * "{lambda()#1}", is a plain byte). Blank lines are skipped; "\r\n" line
 * ends are accepted. Errors name the line: "<name>:<line>: <message>".
 *
 * Matching: rules are kept in one array, user rules in front of built-in
 * ones; a stack's phase is the rule with the lowest index that matches any
 * of its frames. Each glob is compiled once into its literal prefix and
 * suffix plus the minimum length a match needs, so almost every (rule,
 * frame) pair is rejected by one memcmp before the general matcher (a
 * linear-space backtracking matcher, O(pattern * name) worst case, never
 * recursive) runs. vrt_rules_match_stack, and vrt_rules_match_before for
 * a trie of call paths, only try rules below the best index found so far.
 *
 * Threads: a rule set is built by one thread (parse is not thread-safe)
 * and may then be matched from any number of threads; matching reads only.
 * No global state; all memory is owned by the rule set. Allocates, so never
 * call into this file from inside a hook.
 */
#include "rules.h"

#include <vramtrace/trace_format.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PHASE_NAME_MAX    63
#define CUSTOM_PHASES_MAX 4096
#define RULES_MAX         1000000

enum { KIND_ANY = -1 };

/* A compiled glob: the pattern text with runs of '*' collapsed. */
struct glob {
	char *pat; /* NUL-terminated, owned */
	size_t len;
	size_t prefix_len; /* leading bytes free of '*' and '?' */
	size_t suffix_len; /* trailing bytes free of '*' and '?' (star only) */
	size_t min_len;    /* bytes a matching name has at least */
	int has_star;
	int star_end;  /* the last byte is '*' */
	int has_slash; /* file globs: match path tails, not base name */
	/* For Python names without '.': the part after the last '.' of the
	 * pattern, compiled, or NULL when there is none or it is just '*'. */
	struct glob *tail;
};

struct rule {
	unsigned phase;
	int kind; /* KIND_ANY or enum vrt_frame_kind */
	struct glob fn;
	struct glob file; /* pat == NULL: no file restriction */
	int obsolete;
	char *text;       /* canonical text for vrt_rules_describe */
	char *origin;     /* "name:line" */
};

struct vrt_rules {
	struct rule *rules;
	int n, cap;
	char **custom; /* custom phase names; id = FIRST_CUSTOM + index */
	unsigned ncustom;
};

/* ---- globs ------------------------------------------------------------ */

/* Whole-string match of p[0..pl) against s[0..sl): '*' any run, '?' any
 * byte. The classic single-backtrack-point algorithm: on a mismatch after
 * a '*', let that star absorb one more byte and retry. */
static int glob_core(const char *p, size_t pl, const char *s, size_t sl)
{
	size_t pi = 0, si = 0, star = SIZE_MAX, mark = 0;

	while (si < sl) {
		if (pi < pl && p[pi] == '*') {
			star = pi++;
			mark = si;
		} else if (pi < pl && (p[pi] == '?' || p[pi] == s[si])) {
			pi++;
			si++;
		} else if (star != SIZE_MAX) {
			pi = star + 1;
			si = ++mark;
		} else {
			return 0;
		}
	}
	while (pi < pl && p[pi] == '*')
		pi++;
	return pi == pl;
}

static int glob_match(const struct glob *g, const char *s, size_t sl)
{
	if (sl < g->min_len)
		return 0;
	if (!g->has_star)
		return sl == g->len && glob_core(g->pat, g->len, s, sl);
	/* The last and first literal bytes reject most names before any
	 * call; min_len covers the bytes read here. */
	if (g->suffix_len && s[sl - 1] != g->pat[g->len - 1])
		return 0;
	if (g->prefix_len && s[0] != g->pat[0])
		return 0;
	if (memcmp(s, g->pat, g->prefix_len) != 0)
		return 0;
	if (memcmp(s + sl - g->suffix_len, g->pat + g->len - g->suffix_len,
	           g->suffix_len) != 0)
		return 0;
	return glob_core(g->pat + g->prefix_len,
	                 g->len - g->prefix_len - g->suffix_len,
	                 s + g->prefix_len, sl - g->prefix_len - g->suffix_len);
}

static void glob_free(struct glob *g)
{
	if (g->tail) {
		glob_free(g->tail);
		free(g->tail);
	}
	free(g->pat);
	memset(g, 0, sizeof(*g));
}

/* Compiles s[0..n) (n > 0). Returns 0, or -1 on ENOMEM. */
static int glob_compile(struct glob *g, const char *s, size_t n, int python)
{
	memset(g, 0, sizeof(*g));
	g->pat = malloc(n + 1);
	if (!g->pat)
		return -1;
	size_t len = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '*' && len > 0 && g->pat[len - 1] == '*')
			continue;
		g->pat[len++] = s[i];
	}
	g->pat[len] = '\0';
	g->len = len;

	while (g->prefix_len < len && g->pat[g->prefix_len] != '*' &&
	       g->pat[g->prefix_len] != '?')
		g->prefix_len++;
	for (size_t i = 0; i < len; i++) {
		if (g->pat[i] == '*')
			g->has_star = 1;
		else
			g->min_len++;
		if (g->pat[i] == '/')
			g->has_slash = 1;
	}
	g->star_end = len > 0 && g->pat[len - 1] == '*';
	if (g->has_star) {
		while (g->suffix_len < len - g->prefix_len &&
		       g->pat[len - 1 - g->suffix_len] != '*' &&
		       g->pat[len - 1 - g->suffix_len] != '?')
			g->suffix_len++;
	}

	if (python) {
		const char *dot = memrchr(g->pat, '.', len);
		if (dot && dot + 1 < g->pat + len &&
		    strcmp(dot + 1, "*") != 0) {
			g->tail = malloc(sizeof(*g->tail));
			if (!g->tail ||
			    glob_compile(g->tail, dot + 1,
			                 (size_t)(g->pat + len - dot - 1), 0)) {
				free(g->tail);
				g->tail = NULL;
				glob_free(g);
				return -1;
			}
		}
	}
	return 0;
}

/* ---- names as rules see them ----------------------------------------- */

/* Length of a native name without its parameter list and clone suffix:
 * "ns::f(int) const" -> "ns::f", "f.part.0" -> "f". "(anonymous
 * namespace)" is part of the name, and so is the "()" of "operator()".
 * Returns len when there is nothing to cut. */
static size_t native_base_len(const char *s, size_t len)
{
	static const char anon[] = "(anonymous namespace)";
	int angle = 0;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (c == '<') {
			angle++;
		} else if (c == '>') {
			if (angle > 0)
				angle--;
		} else if (c == '(' && angle == 0) {
			if (len - i >= sizeof(anon) - 1 &&
			    memcmp(s + i, anon, sizeof(anon) - 1) == 0) {
				i += sizeof(anon) - 2;
				continue;
			}
			if (i >= 8 && memcmp(s + i - 8, "operator", 8) == 0 &&
			    i + 1 < len && s[i + 1] == ')') {
				i++;
				continue;
			}
			return i;
		} else if (c == '.' && angle == 0 && i > 0) {
			/* C symbols have no '.', C++ ones only inside
			 * "[clone .x]" after the parameters: a '.' here is a
			 * compiler clone suffix such as ".part.0". */
			return i;
		}
	}
	return len;
}

struct frame_view {
	int kind;
	const char *fn;
	size_t fn_len, fn_base_len;
	int fn_has_dot;
	const char *file;
	size_t file_len;
	const char *base; /* base name of file */
	size_t base_len;
};

static void frame_view_init(struct frame_view *v,
                            const struct vrt_rule_frame *f)
{
	v->kind = f->kind;
	v->fn = f->function ? f->function : "";
	v->fn_len = strlen(v->fn);
	v->fn_base_len = v->fn_len;
	v->fn_has_dot = 1;
	if (f->kind == VRT_FRAME_NATIVE)
		v->fn_base_len = native_base_len(v->fn, v->fn_len);
	else if (f->kind == VRT_FRAME_PYTHON)
		v->fn_has_dot = memchr(v->fn, '.', v->fn_len) != NULL;
	v->file = f->file ? f->file : "";
	v->file_len = strlen(v->file);
	const char *slash = memrchr(v->file, '/', v->file_len);
	v->base = slash ? slash + 1 : v->file;
	v->base_len = (size_t)(v->file + v->file_len - v->base);
}

static int file_match(const struct glob *g, const struct frame_view *v)
{
	if (!g->has_slash)
		return glob_match(g, v->base, v->base_len);
	if (glob_match(g, v->file, v->file_len))
		return 1;
	for (size_t i = 0; i < v->file_len; i++) {
		if (v->file[i] == '/' &&
		    glob_match(g, v->file + i + 1, v->file_len - i - 1))
			return 1;
	}
	return 0;
}

static int rule_match(const struct rule *ru, const struct frame_view *v)
{
	if (ru->kind != KIND_ANY && ru->kind != v->kind)
		return 0;
	int ok = glob_match(&ru->fn, v->fn, v->fn_len);
	/* A glob ending in '*' that matches the base name also matches the
	 * whole name, so only the others need the second try. */
	if (!ok && v->fn_base_len < v->fn_len && !ru->fn.star_end)
		ok = glob_match(&ru->fn, v->fn, v->fn_base_len);
	if (!ok && !v->fn_has_dot && ru->fn.tail)
		ok = glob_match(ru->fn.tail, v->fn, v->fn_len);
	if (!ok)
		return 0;
	return !ru->file.pat || file_match(&ru->file, v);
}

int vrt_rules_match_before(const struct vrt_rules *r,
                           const struct vrt_rule_frame *f, int limit)
{
	if (!r || !f)
		return VRT_RULE_NONE;
	struct frame_view v;
	frame_view_init(&v, f);
	if (limit > r->n)
		limit = r->n;
	for (int i = 0; i < limit; i++) {
		if (rule_match(&r->rules[i], &v))
			return i;
	}
	return VRT_RULE_NONE;
}

int vrt_rules_match(const struct vrt_rules *r, const struct vrt_rule_frame *f)
{
	return vrt_rules_match_before(r, f, VRT_RULE_NONE);
}

int vrt_rules_match_stack(const struct vrt_rules *r,
                          const struct vrt_rule_frame *frames, size_t n)
{
	int best = VRT_RULE_NONE;
	if (!frames)
		return best;
	for (size_t i = 0; i < n && best > 0; i++) {
		int m = vrt_rules_match_before(r, &frames[i], best);
		if (m < best)
			best = m;
	}
	return best;
}

/* ---- rule sets -------------------------------------------------------- */

static void rule_free(struct rule *ru)
{
	glob_free(&ru->fn);
	glob_free(&ru->file);
	free(ru->text);
	free(ru->origin);
}

struct vrt_rules *vrt_rules_new_empty(void)
{
	return calloc(1, sizeof(struct vrt_rules));
}

void vrt_rules_free(struct vrt_rules *r)
{
	if (!r)
		return;
	for (int i = 0; i < r->n; i++)
		rule_free(&r->rules[i]);
	free(r->rules);
	for (unsigned i = 0; i < r->ncustom; i++)
		free(r->custom[i]);
	free(r->custom);
	free(r);
}

struct vrt_rules *vrt_rules_new_builtin(void)
{
	struct vrt_rules *r = vrt_rules_new_empty();
	if (!r)
		return NULL;
	const char *text = vrt_rules_builtin_text();
	/* The built-in text is tested to parse; a failure here is ENOMEM. */
	if (vrt_rules_parse(r, text, strlen(text), "builtin", NULL, 0) < 0) {
		vrt_rules_free(r);
		return NULL;
	}
	return r;
}

int vrt_rules_count(const struct vrt_rules *r)
{
	return r ? r->n : 0;
}

const char *vrt_rules_describe(const struct vrt_rules *r, int rule)
{
	if (!r || rule < 0 || rule >= r->n)
		return NULL;
	return r->rules[rule].text;
}

const char *vrt_rules_origin(const struct vrt_rules *r, int rule)
{
	if (!r || rule < 0 || rule >= r->n)
		return NULL;
	return r->rules[rule].origin;
}

int vrt_rules_obsolete(const struct vrt_rules *r, int rule)
{
	if (!r || rule < 0 || rule >= r->n)
		return 0;
	return r->rules[rule].obsolete;
}

unsigned vrt_rules_phase(const struct vrt_rules *r, int rule)
{
	if (!r || rule < 0 || rule >= r->n)
		return VRT_PHASE_unattributed;
	return r->rules[rule].phase;
}

const char *vrt_rules_phase_name(const struct vrt_rules *r, unsigned id)
{
	if (id <= VRT_PHASE_BUILTIN_MAX)
		return vrt_phase_builtin_name(id);
	if (r && id >= VRT_PHASE_FIRST_CUSTOM &&
	    id - VRT_PHASE_FIRST_CUSTOM < r->ncustom)
		return r->custom[id - VRT_PHASE_FIRST_CUSTOM];
	return NULL;
}

/* ---- parser ----------------------------------------------------------- */

/* What one vrt_rules_parse call builds before it commits to r. */
struct parse {
	struct vrt_rules *r;
	const char *name;
	char *err;
	size_t errlen;
	unsigned line;
	struct rule *rules;
	int n, cap;
	char **custom; /* new custom names, ids continue r's */
	unsigned ncustom, custom_cap;
};

static int parse_error(struct parse *ps, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

static int parse_error(struct parse *ps, const char *fmt, ...)
{
	if (!ps->err || ps->errlen == 0)
		return -1;
	int k = snprintf(ps->err, ps->errlen, "%s:%u: ", ps->name, ps->line);
	if (k < 0 || (size_t)k >= ps->errlen)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ps->err + k, ps->errlen - (size_t)k, fmt, ap);
	va_end(ap);
	return -1;
}

/* A token quoted for a message: at most 40 bytes, non-printable bytes
 * shown as '?', so a message stays one readable line whatever the input. */
struct shown {
	char s[48];
};

static struct shown show(const char *t, size_t n)
{
	struct shown out;
	size_t k = 0;
	for (size_t i = 0; i < n && k < 40; i++) {
		unsigned char c = (unsigned char)t[i];
		out.s[k++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
	}
	if (n > 40) {
		memcpy(out.s + k, "...", 3);
		k += 3;
	}
	out.s[k] = '\0';
	return out;
}

struct token {
	const char *s;
	size_t n;
	int quoted;
};

static int is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\v' || c == '\f';
}

#define TOKENS_MAX 6 /* one more than a rule can have, to report it */

/* Splits line[0..len) into at most TOKENS_MAX tokens. Returns the count,
 * or -1 on error. */
static int tokenize(struct parse *ps, const char *line, size_t len,
                    struct token *tok)
{
	int nt = 0;
	size_t i = 0;
	while (nt < TOKENS_MAX) {
		while (i < len && is_blank(line[i]))
			i++;
		if (i >= len || line[i] == '#')
			break;
		struct token t = {line + i, 0, 0};
		if (line[i] == '"') {
			const char *q = memchr(line + i + 1, '"', len - i - 1);
			if (!q)
				return parse_error(ps, "unterminated quote");
			t.s = line + i + 1;
			t.n = (size_t)(q - t.s);
			t.quoted = 1;
			i = (size_t)(q - line) + 1;
			if (i < len && !is_blank(line[i]))
				return parse_error(
				        ps, "expected a blank after a quoted "
				            "token");
		} else {
			while (i < len && !is_blank(line[i]))
				i++;
			t.n = (size_t)(line + i - t.s);
		}
		tok[nt++] = t;
	}
	return nt;
}

static int tok_is(const struct token *t, const char *word)
{
	return !t->quoted && t->n == strlen(word) &&
	       memcmp(t->s, word, t->n) == 0;
}

/* Looks a phase name up or declares it. Returns the id, or -1 on error. */
static long phase_id(struct parse *ps, const struct token *t)
{
	for (unsigned id = 0; id <= VRT_PHASE_BUILTIN_MAX; id++) {
		const char *nm = vrt_phase_builtin_name(id);
		if (nm && strlen(nm) == t->n && memcmp(nm, t->s, t->n) == 0)
			return id;
	}
	int ok = t->n > 0 && t->n <= PHASE_NAME_MAX && t->s[0] >= 'a' &&
	         t->s[0] <= 'z';
	for (size_t i = 0; ok && i < t->n; i++) {
		char c = t->s[i];
		ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		     c == '_';
	}
	if (!ok)
		return parse_error(ps,
		                   "bad phase name '%s': use a built-in phase "
		                   "or [a-z][a-z0-9_]* (at most %d bytes)",
		                   show(t->s, t->n).s, PHASE_NAME_MAX);
	if (tok_is(t, "in"))
		return parse_error(ps, "missing phase before 'in'");

	const struct vrt_rules *r = ps->r;
	for (unsigned i = 0; i < r->ncustom; i++) {
		if (strlen(r->custom[i]) == t->n &&
		    memcmp(r->custom[i], t->s, t->n) == 0)
			return VRT_PHASE_FIRST_CUSTOM + i;
	}
	for (unsigned i = 0; i < ps->ncustom; i++) {
		if (strlen(ps->custom[i]) == t->n &&
		    memcmp(ps->custom[i], t->s, t->n) == 0)
			return VRT_PHASE_FIRST_CUSTOM + r->ncustom + i;
	}
	if (r->ncustom + ps->ncustom >= CUSTOM_PHASES_MAX)
		return parse_error(ps, "too many custom phases (at most %d)",
		                   CUSTOM_PHASES_MAX);
	if (ps->ncustom == ps->custom_cap) {
		unsigned cap = ps->custom_cap ? ps->custom_cap * 2 : 8;
		char **p = realloc(ps->custom, cap * sizeof(*p));
		if (!p)
			return parse_error(ps, "out of memory");
		ps->custom = p;
		ps->custom_cap = cap;
	}
	char *copy = strndup(t->s, t->n);
	if (!copy)
		return parse_error(ps, "out of memory");
	ps->custom[ps->ncustom++] = copy;
	return VRT_PHASE_FIRST_CUSTOM + r->ncustom + ps->ncustom - 1;
}

/* Appends "tok" to the canonical text, quoted when it holds a blank or
 * would read as a keyword. */
static size_t put_token(char *out, const char *s, size_t n)
{
	int quote = (n == 2 && memcmp(s, "in", 2) == 0) ||
	            (n == 8 && memcmp(s, "obsolete", 8) == 0) ||
	            (n > 0 && (s[0] == '#' || s[0] == '"'));
	for (size_t i = 0; i < n; i++)
		quote |= is_blank(s[i]);
	size_t k = 0;
	if (quote)
		out[k++] = '"';
	memcpy(out + k, s, n);
	k += n;
	if (quote)
		out[k++] = '"';
	return k;
}

static int parse_line(struct parse *ps, const char *line, size_t len)
{
	struct token tok[TOKENS_MAX];
	int nt = tokenize(ps, line, len, tok);
	if (nt <= 0)
		return nt;

	long phase = phase_id(ps, &tok[0]);
	if (phase < 0)
		return -1;
	if (nt < 2)
		return parse_error(ps, "missing pattern after phase '%s'",
		                   show(tok[0].s, tok[0].n).s);
	if (tok_is(&tok[1], "in"))
		return parse_error(ps, "missing pattern before 'in'");

	struct token pat = tok[1];
	int kind = KIND_ANY;
	if (pat.n >= 3 && memcmp(pat.s, "py:", 3) == 0) {
		kind = VRT_FRAME_PYTHON;
		pat.s += 3;
		pat.n -= 3;
	} else if (pat.n >= 7 && memcmp(pat.s, "native:", 7) == 0) {
		kind = VRT_FRAME_NATIVE;
		pat.s += 7;
		pat.n -= 7;
	} else {
		/* "python:x" or "cuda:x" is a typo for a kind prefix; a
		 * native name's "ns::x" (two colons) is not. */
		size_t k = 0;
		while (k < pat.n && pat.s[k] >= 'a' && pat.s[k] <= 'z')
			k++;
		if (k > 0 && k < pat.n && pat.s[k] == ':' &&
		    (k + 1 == pat.n || pat.s[k + 1] != ':'))
			return parse_error(ps,
			                   "unknown frame kind '%s:' (use "
			                   "py: or native:)",
			                   show(pat.s, k).s);
	}
	if (pat.n == 0)
		return parse_error(ps, "empty pattern");

	struct token file = {NULL, 0, 0};
	int next = 2, obsolete = 0;
	if (nt > next && tok_is(&tok[next], "in")) {
		if (nt < 4)
			return parse_error(ps,
			                   "missing file pattern after 'in'");
		file = tok[3];
		if (file.n == 0)
			return parse_error(ps, "empty file pattern");
		next = 4;
	}
	if (nt > next && tok_is(&tok[next], "obsolete")) {
		obsolete = 1;
		next++;
	}
	if (nt > next) {
		if (next == 2)
			return parse_error(
			        ps,
			        "unknown keyword '%s' (expected 'in "
			        "FILE_GLOB' or 'obsolete'; quote a pattern "
			        "that holds blanks)",
			        show(tok[2].s, tok[2].n).s);
		return parse_error(ps, "unexpected '%s' after %s",
		                   show(tok[next].s, tok[next].n).s,
		                   obsolete ? "'obsolete'"
		                            : "the file pattern");
	}

	if (ps->r->n + ps->n >= RULES_MAX)
		return parse_error(ps, "too many rules (at most %d)",
		                   RULES_MAX);
	if (ps->n == ps->cap) {
		int cap = ps->cap ? ps->cap * 2 : 32;
		struct rule *p = realloc(ps->rules, (size_t)cap * sizeof(*p));
		if (!p)
			return parse_error(ps, "out of memory");
		ps->rules = p;
		ps->cap = cap;
	}
	struct rule *ru = &ps->rules[ps->n];
	memset(ru, 0, sizeof(*ru));
	ru->phase = (unsigned)phase;
	ru->kind = kind;
	ru->obsolete = obsolete;

	/* phase + ' ' + quoted kind and pattern + " in " + quoted file +
	 * " obsolete" */
	size_t tlen = tok[0].n + 1 + tok[1].n + 2 + 4 + file.n + 2 + 9 + 1;
	ru->text = malloc(tlen);
	size_t olen = strlen(ps->name) + 12;
	ru->origin = malloc(olen);
	int bad =
	        !ru->text || !ru->origin ||
	        glob_compile(&ru->fn, pat.s, pat.n, kind != VRT_FRAME_NATIVE) ||
	        (file.s && glob_compile(&ru->file, file.s, file.n, 0));
	if (bad) {
		rule_free(ru);
		return parse_error(ps, "out of memory");
	}
	size_t k = 0;
	memcpy(ru->text, tok[0].s, tok[0].n);
	k += tok[0].n;
	ru->text[k++] = ' ';
	k += put_token(ru->text + k, tok[1].s, tok[1].n);
	if (file.s) {
		memcpy(ru->text + k, " in ", 4);
		k += 4;
		k += put_token(ru->text + k, file.s, file.n);
	}
	if (obsolete) {
		memcpy(ru->text + k, " obsolete", 9);
		k += 9;
	}
	ru->text[k] = '\0';
	snprintf(ru->origin, olen, "%s:%u", ps->name, ps->line);
	ps->n++;
	return 0;
}

int vrt_rules_parse(struct vrt_rules *r, const char *text, size_t len,
                    const char *name, char *err, size_t errlen)
{
	struct parse ps = {.r = r,
	                   .name = name ? name : "<rules>",
	                   .err = err,
	                   .errlen = errlen};
	int ret = -1;

	if (err && errlen)
		err[0] = '\0';
	if (!r || (!text && len)) {
		parse_error(&ps, "no rules to parse");
		return -1;
	}

	size_t pos = 0;
	while (pos < len) {
		ps.line++;
		const char *line = text + pos;
		const char *nl = memchr(line, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - line) : len - pos;
		pos += n + (nl ? 1 : 0);
		if (n > 0 && line[n - 1] == '\r')
			n--;
		if (n > VRT_RULES_LINE_MAX) {
			parse_error(&ps,
			            "line too long (%zu bytes, at most %d)", n,
			            VRT_RULES_LINE_MAX);
			goto out;
		}
		if (memchr(line, '\0', n)) {
			parse_error(&ps, "NUL byte in line");
			goto out;
		}
		if (parse_line(&ps, line, n) < 0)
			goto out;
	}

	/* Commit: new custom names after r's, new rules in front of r's. */
	if (ps.ncustom) {
		char **p = realloc(r->custom,
		                   (r->ncustom + ps.ncustom) * sizeof(*p));
		if (!p) {
			parse_error(&ps, "out of memory");
			goto out;
		}
		r->custom = p;
	}
	if (r->n + ps.n > r->cap) {
		int cap = r->n + ps.n;
		struct rule *p = realloc(r->rules, (size_t)cap * sizeof(*p));
		if (!p) {
			parse_error(&ps, "out of memory");
			goto out;
		}
		r->rules = p;
		r->cap = cap;
	}
	if (ps.ncustom) {
		memcpy(r->custom + r->ncustom, ps.custom,
		       ps.ncustom * sizeof(*ps.custom));
		r->ncustom += ps.ncustom;
		ps.ncustom = 0;
	}
	if (ps.n) {
		memmove(r->rules + ps.n, r->rules,
		        (size_t)r->n * sizeof(*r->rules));
		memcpy(r->rules, ps.rules, (size_t)ps.n * sizeof(*ps.rules));
		r->n += ps.n;
	}
	ret = ps.n;
	ps.n = 0;

out:
	for (int i = 0; i < ps.n; i++)
		rule_free(&ps.rules[i]);
	free(ps.rules);
	for (unsigned i = 0; i < ps.ncustom; i++)
		free(ps.custom[i]);
	free(ps.custom);
	return ret;
}

/* ---- suggestions -------------------------------------------------------- */

/* The last two components of a path ("pkg/file.py"), or all of it. */
static const char *path_tail(const char *path)
{
	const char *end = path + strlen(path), *p = end;
	int slashes = 0;
	while (p > path) {
		if (p[-1] == '/' && ++slashes == 2)
			break;
		p--;
	}
	return p;
}

int vrt_rules_suggest(const struct vrt_rule_frame *f, char *out,
                      size_t outlen)
{
	if (!f || !f->function || !f->function[0] || !out)
		return -1;
	const char *prefix = f->kind == VRT_FRAME_NATIVE   ? "native:"
	                     : f->kind == VRT_FRAME_PYTHON ? "py:"
	                                                   : "";
	size_t n = strlen(f->function);
	if (f->kind == VRT_FRAME_NATIVE)
		n = native_base_len(f->function, n);
	const char *tail = f->kind == VRT_FRAME_PYTHON && f->file && f->file[0]
	                           ? path_tail(f->file)
	                           : NULL;
	if (tail && !tail[0])
		tail = NULL;
	size_t plen = strlen(prefix), tlen = tail ? strlen(tail) : 0;
	/* A token can be quoted but holds no quote: such a name has no
	 * pattern of its own. */
	if (memchr(f->function, '"', n) || (tail && strchr(tail, '"')))
		return -1;
	/* Both tokens quoted, " in ", the NUL. */
	if (plen + n + 2 + 4 + tlen + 2 + 1 > outlen)
		return -1;
	char *tok = malloc(plen + n + 1);
	if (!tok)
		return -1;
	memcpy(tok, prefix, plen);
	memcpy(tok + plen, f->function, n);
	size_t k = put_token(out, tok, plen + n);
	free(tok);
	if (tail) {
		memcpy(out + k, " in ", 4);
		k += 4;
		k += put_token(out + k, tail, tlen);
	}
	out[k] = '\0';
	return (int)k;
}
