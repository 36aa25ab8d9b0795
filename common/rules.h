/*
 * Phase rules: ordered (phase, pattern) rules over the frames of a call
 * stack. The first rule (lowest index) that matches ANY frame of the stack
 * decides the phase; no match leaves the stack "unattributed".
 *
 * Shared by both sides as pure code, like trace_format.h is shared as
 * data: the preload's writer thread tags each new stack with the built-in
 * rules plus VRAMTRACE_RULES, and `vramtrace analyze --rules FILE`
 * re-classifies a recorded trace with the same engine. No I/O, no global
 * state; an object is not thread-safe, distinct objects are independent.
 * Functions may allocate: never call them from inside a hook.
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
 * Parses a rules file's text and puts its rules IN FRONT of those already
 * in r (user rules win over built-in ones), in file order. On a syntax
 * error returns -1, adds nothing, and writes "<name>:<line>: <message>" to
 * err. Returns the number of rules added on success.
 */
int vrt_rules_parse(struct vrt_rules *r, const char *text, size_t len,
		    const char *name, char *err, size_t errlen);

/* Index of the first rule matching f, or VRT_RULE_NONE. */
#define VRT_RULE_NONE 0x7fffffff
int vrt_rules_match(const struct vrt_rules *r, const struct vrt_rule_frame *f);

/* The phase a matching rule assigns, as a phase id: fixed ids of
 * trace_format.h (VRT_PHASE_weights, ...) or a custom id >=
 * VRT_PHASE_FIRST_CUSTOM for a phase name the rules file introduced.
 * VRT_PHASE_unattributed for VRT_RULE_NONE. */
unsigned vrt_rules_phase(const struct vrt_rules *r, int rule);

/* Name of a phase id known to r (fixed or custom), or NULL. */
const char *vrt_rules_phase_name(const struct vrt_rules *r, unsigned id);

/* Number of rules (for diagnostics) and a rule's text, e.g.
 * "kv_cache py:*.initialize_kv_cache" (for "why this phase" output). */
int vrt_rules_count(const struct vrt_rules *r);
const char *vrt_rules_describe(const struct vrt_rules *r, int rule);

#endif /* VRT_RULES_H */
