/*
 * Phase rules: ordered (phase, pattern) rules over the frames of a call
 * stack. The first rule (lowest index) that matches ANY frame of the stack
 * decides the phase; no match leaves the stack "unattributed".
 *
 * Shared by both sides as pure code, like trace_format.h is shared as
 * data: the preload's writer thread tags each new stack with the built-in
 * rules plus VRAMTRACE_RULES, and `vramtrace analyze --rules FILE`
 * re-classifies a recorded trace with the same engine. Syntax: docs/rules.md;
 * the built-in rules are the rules file common/builtin.rules, compiled in.
 * No I/O, no global state. Building a rule
 * set (new, parse, free) is single-threaded; matching and the lookups only
 * read it, so a finished set may be shared by threads. Functions may
 * allocate: never call them from inside a hook.
 */
#ifndef VRT_RULES_H
#define VRT_RULES_H

#include <stddef.h>

struct vrt_rules;

/* One frame as rules see it. */
struct vrt_rule_frame {
	int kind;             /* enum vrt_frame_kind (trace_format.h) */
	const char *function; /* python: qualified name ("Worker.load_model");
	                       * native: demangled symbol; NULL if unknown */
	const char *file;     /* python: source file path; native: module
	                       * path (shared object); NULL if unknown */
};

/* A rule set holding the built-in rules (all engines). NULL on ENOMEM. */
struct vrt_rules *vrt_rules_new_builtin(void);

/* An empty rule set. NULL on ENOMEM. */
struct vrt_rules *vrt_rules_new_empty(void);

void vrt_rules_free(struct vrt_rules *r);

/*
 * Parses a rules file's text (syntax: docs/rules.md) and puts its rules IN
 * FRONT of those already in r (user rules win over built-in ones), in file
 * order. text need not be NUL-terminated and may hold any bytes; NULL is
 * accepted when len is 0. name labels messages and vrt_rules_origin()
 * (NULL reads "<rules>"). On error returns -1, leaves r unchanged, and
 * writes one line "<name>:<line>: <message>" (no newline, truncated to
 * errlen) to err unless err is NULL. Returns the number of rules added on
 * success.
 */
int vrt_rules_parse(struct vrt_rules *r, const char *text, size_t len,
                    const char *name, char *err, size_t errlen);

/* Longest line the parser accepts, in bytes (without the newline). */
#define VRT_RULES_LINE_MAX 4096

/*
 * Index of the first rule matching f, or VRT_RULE_NONE. A frame's NULL
 * function or file reads as "". Read-only: one rule set may be matched
 * from several threads at once as long as none modifies it.
 */
#define VRT_RULE_NONE 0x7fffffff
int vrt_rules_match(const struct vrt_rules *r, const struct vrt_rule_frame *f);

/*
 * Index of the first rule below limit that matches f, or VRT_RULE_NONE: the
 * incremental form for a trie of call paths, where a node's rule is
 * min(parent's rule, vrt_rules_match_before(r, frame, parent's rule)), so
 * each new node costs one frame against the rules that could still win.
 */
int vrt_rules_match_before(const struct vrt_rules *r,
                           const struct vrt_rule_frame *f, int limit);

/*
 * The first rule matching any of frames[0..n) (the minimum over frames of
 * vrt_rules_match, computed with early cut-off), or VRT_RULE_NONE.
 */
int vrt_rules_match_stack(const struct vrt_rules *r,
                          const struct vrt_rule_frame *frames, size_t n);

/* The phase a matching rule assigns, as a phase id: fixed ids of
 * trace_format.h (VRT_PHASE_weights, ...) or a custom id >=
 * VRT_PHASE_FIRST_CUSTOM for a phase name a rules file introduced (ids
 * follow first appearance, per rule set: another rule set may number the
 * same name differently, so a writer declares them with PHASE records).
 * VRT_PHASE_unattributed for VRT_RULE_NONE or an index out of range. */
unsigned vrt_rules_phase(const struct vrt_rules *r, int rule);

/* Name of a phase id known to r (fixed or custom), or NULL. */
const char *vrt_rules_phase_name(const struct vrt_rules *r, unsigned id);

/* Number of rules (for diagnostics) and a rule's text, e.g.
 * "kv_cache py:*.initialize_kv_cache in gpu_model_runner.py" (for "why this
 * phase" output); NULL for an index out of range. */
int vrt_rules_count(const struct vrt_rules *r);
const char *vrt_rules_describe(const struct vrt_rules *r, int rule);

/* Where a rule was written: "<name>:<line>" ("builtin:<line>" for a
 * built-in rule, the line of common/builtin.rules); NULL for an index out
 * of range. */
const char *vrt_rules_origin(const struct vrt_rules *r, int rule);

/* 1 when the rule was marked "obsolete" (it names a function only older
 * releases of an engine have), else 0 (also for an index out of range). */
int vrt_rules_obsolete(const struct vrt_rules *r, int rule);

/*
 * A rule pattern that names frame f, ready to follow a phase on a rules
 * line: "py:Class.method in pkg/file.py" (the file's last two path
 * components), "native:ns::func" (the name without its parameter list and
 * clone suffix), quoted where it holds blanks. Writes at most outlen bytes
 * including the NUL. Returns the length, or -1 when f has no name (a rule
 * could only name it by its file) or out is too small.
 */
int vrt_rules_suggest(const struct vrt_rule_frame *f, char *out,
                      size_t outlen);

/* The built-in rules as rules-file text: the bytes of
 * common/builtin.rules, which vrt_rules_new_builtin parses. */
const char *vrt_rules_builtin_text(void);

#endif /* VRT_RULES_H */
