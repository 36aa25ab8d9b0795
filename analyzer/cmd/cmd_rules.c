/*
 * cmd_rules.c — `vramtrace rules RUN... [--rules FILE] [--top N]` and
 * `vramtrace rules --builtin`: the quickest way to write a missing phase
 * rule.
 *
 * For RUN it streams the recorded allocations, classifies each call path
 * with the built-in rules (and FILE's, in front) the way `analyze --rules`
 * does (attrib.c's per-stack cache), and keeps the paths that no rule
 * claims or that only a rule marked obsolete claims (a function an engine
 * has since renamed). Paths with the same named frames are one group; the
 * groups are listed by the bytes they allocated, each with its frames as
 * the rule patterns that would name them (vrt_rules_suggest), innermost
 * first, leaving out the frames every allocation passes through (the CUDA
 * runtime, PyTorch's allocator, the interpreter). Allocations a program
 * annotated (vramtrace_phase_push) are left out: the annotation decides.
 *
 * --builtin prints common/builtin.rules as compiled in. Single-threaded.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay/attrib.h"
#include "replay/callpath.h"
#include "cmd.h"
#include "load/load.h"
#include "pathname.h"
#include "report/report.h"
#include "rules.h"
#include "replay/run.h"
#include "base/text.h"
#include "vramtrace/trace_format.h"

#define TOP_DEFAULT 10
#define SHOW_FRAMES 12 /* nameable frames printed per group */

struct settings {
	struct vrt_opts o; /* --rules */
	int builtin;
	size_t top; /* 0: all */
	char **paths;
	int npaths;
};

enum { OPT_BUILTIN = VRT_OPT_OWN, OPT_TOP };

static const struct vrt_option options[] = {
        {"builtin", 0, 0, OPT_BUILTIN},
        VRT_OPTION_RULES,
        {"top", 'n', 1, OPT_TOP},
        VRT_OPTION_END,
};

/* One named frame of a group's key. */
struct keyframe {
	uint32_t kind, function, file;
};

/* Call paths with the same named frames and the same deciding rule. */
struct group {
	struct keyframe *key;
	size_t nkey;
	uint64_t hash;
	int rule; /* VRT_RULE_NONE or an obsolete rule */
	uint64_t bytes, allocs, fails, failed_bytes;
	uint64_t paths; /* distinct recorded stacks */
	size_t order;   /* first seen, for stable output */
};

struct state {
	const struct vrt_rules *rules;
	struct vrt_attrib *attrib;
	int32_t *sgroup; /* per stack: group index, NO_GROUP or UNSEEN */
	size_t nsgroup;
	struct group *groups;
	size_t ngroups, cap;
	size_t *table; /* open addressing: group index + 1, 0 empty */
	size_t table_cap;
	uint32_t *frames; /* scratch for a stack's frame indexes */
	size_t nframes;
	uint64_t total_bytes, total_allocs, paths_seen;
};

enum { UNSEEN = -1, NO_GROUP = -2 };

static int own_option(const struct vrt_cmd *self, int id, const char *arg,
                      void *settings)
{
	struct settings *s = settings;
	unsigned long long v;
	char *end;

	if (id == OPT_BUILTIN) {
		s->builtin = 1;
	} else if (id == OPT_TOP) {
		v = strtoull(arg, &end, 10);
		if (!*arg || *end || arg[0] == '-' || v > 1000000)
			return vrt_main_usage_error(
			        self,
			        "--top takes a count from 0 (all) to 1000000, "
			        "not '%s'",
			        arg);
		s->top = (size_t)v;
	}
	return 0;
}

/* What the positionals may be with --builtin and without; 0 or
 * VRT_EXIT_USAGE. */
static int check_runs(const struct vrt_cmd *self, struct settings *s,
                      const struct vrt_optstate *st)
{
	if (s->builtin && (st->npos || s->o.rules))
		return vrt_main_usage_error(self,
		                            "--builtin takes no run and no "
		                            "--rules");
	if (!s->builtin && st->npos == 0)
		return vrt_main_usage_error(self, "no run given");
	s->paths = st->pos;
	s->npaths = st->npos;
	return 0;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static int grow_table(struct state *s)
{
	size_t cap = s->table_cap ? s->table_cap * 2 : 256, i;
	size_t *nt = calloc(cap, sizeof(*nt));

	if (!nt)
		return -1;
	for (i = 0; i < s->ngroups; i++) {
		size_t j = (size_t)s->groups[i].hash & (cap - 1);
		while (nt[j])
			j = (j + 1) & (cap - 1);
		nt[j] = i + 1;
	}
	free(s->table);
	s->table = nt;
	s->table_cap = cap;
	return 0;
}

/* The group of key (nkey frames) and rule, made when new; -1 on ENOMEM. */
static long find_group(struct state *s, struct keyframe *key, size_t nkey,
                       int rule)
{
	uint64_t h = mix(0, (uint64_t)(uint32_t)rule);
	size_t i, j;

	for (i = 0; i < nkey; i++)
		h = mix(mix(mix(h, key[i].kind), key[i].function), key[i].file);
	if ((s->ngroups + 1) * 2 > s->table_cap && grow_table(s))
		return -1;
	for (j = (size_t)h & (s->table_cap - 1); s->table[j];
	     j = (j + 1) & (s->table_cap - 1)) {
		struct group *g = &s->groups[s->table[j] - 1];
		if (g->hash == h && g->rule == rule && g->nkey == nkey &&
		    !memcmp(g->key, key, nkey * sizeof(*key)))
			return (long)(s->table[j] - 1);
	}
	if (s->ngroups == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct group *ng = realloc(s->groups, cap * sizeof(*ng));
		if (!ng)
			return -1;
		s->groups = ng;
		s->cap = cap;
	}
	struct group *g = &s->groups[s->ngroups];
	memset(g, 0, sizeof(*g));
	g->key = malloc((nkey ? nkey : 1) * sizeof(*key));
	if (!g->key)
		return -1;
	memcpy(g->key, key, nkey * sizeof(*key));
	g->nkey = nkey;
	g->hash = h;
	g->rule = rule;
	g->order = s->ngroups;
	s->table[j] = ++s->ngroups;
	return (long)(s->ngroups - 1);
}

/* The group index of stack, NO_GROUP when a current rule claims it, or
 * -3 on ENOMEM. Cached per stack. */
static long stack_group(struct state *s, const struct vrt_trace *t,
                        uint32_t stack)
{
	size_t i, n, nkey = 0;

	if (stack >= s->nsgroup) {
		size_t cap = s->nsgroup ? s->nsgroup : 256;
		while (cap <= stack)
			cap *= 2;
		int32_t *ns = realloc(s->sgroup, cap * sizeof(*ns));
		if (!ns)
			return -3;
		for (i = s->nsgroup; i < cap; i++)
			ns[i] = UNSEEN;
		s->sgroup = ns;
		s->nsgroup = cap;
	}
	if (s->sgroup[stack] != UNSEEN)
		return s->sgroup[stack];
	int rule = vrt_attrib_stack_rule(s->attrib, t, stack);
	if (rule == -1)
		return -3;
	if (rule != VRT_RULE_NONE && !vrt_rules_obsolete(s->rules, rule)) {
		s->sgroup[stack] = NO_GROUP;
		return NO_GROUP;
	}
	n = t->stacks[stack].depth + 1;
	if (n > s->nframes) {
		uint32_t *nf = realloc(s->frames, n * sizeof(*nf));
		if (!nf)
			return -3;
		s->frames = nf;
		s->nframes = n;
	}
	n = vrt_load_stack_frames(t, stack, s->frames, n);
	struct keyframe *key = malloc((n ? n : 1) * sizeof(*key));
	if (!key)
		return -3;
	for (i = 0; i < n; i++) {
		const struct vrt_frame *f = &t->frames[s->frames[i]];
		if (!f->function)
			continue;
		key[nkey].kind = f->kind;
		key[nkey].function = f->function;
		key[nkey].file = f->file;
		nkey++;
	}
	long g = find_group(s, key, nkey, rule);
	free(key);
	if (g < 0)
		return -3;
	s->groups[g].paths++;
	s->sgroup[stack] = (int32_t)g;
	return g;
}

/* Allocations that hold memory: not frees, probes or address ranges. */
static int counts(const struct vrt_event *e)
{
	int fam = vrt_api_family(e->api);
	return (e->kind == VRT_EV_ALLOC || e->kind == VRT_EV_REPEAT ||
	        e->kind == VRT_EV_FAIL) &&
	       vrt_api_op(e->api) == VRT_OP_ALLOC && fam != VRT_FAM_VA &&
	       fam != VRT_FAM_NONE;
}

static int feed(struct state *s, const struct vrt_trace *t,
                const struct vrt_event *ev, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct vrt_event *e = &ev[i];
		uint64_t times = e->kind == VRT_EV_REPEAT ? e->addr : 1;
		if (!counts(e) || e->phase_src == VRT_SRC_ANNOTATION)
			continue;
		if (e->kind != VRT_EV_FAIL) {
			s->total_bytes += e->size * times;
			s->total_allocs += times;
		}
		if (!e->stack || e->stack >= t->nstacks)
			continue;
		long g = stack_group(s, t, e->stack);
		if (g == -3)
			return -1;
		if (g < 0)
			continue;
		struct group *gr = &s->groups[g];
		if (e->kind == VRT_EV_FAIL) {
			gr->fails++;
			gr->failed_bytes += e->size;
		} else {
			gr->bytes += e->size * times;
			gr->allocs += times;
		}
	}
	return 0;
}

static int by_bytes(const void *pa, const void *pb)
{
	const struct group *a = pa, *b = pb;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	if (a->fails != b->fails)
		return a->fails > b->fails ? -1 : 1;
	if (a->allocs != b->allocs)
		return a->allocs > b->allocs ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

/* A frame in code every allocation runs through: naming it would claim
 * every stack, so it is not offered (callpath.h). */
static int plumbing(const struct vrt_trace *t, const struct keyframe *k)
{
	struct vrt_frame f = {.kind = (uint8_t)k->kind,
	                      .function = k->function,
	                      .file = k->file};
	return vrt_callpath_plumbing(t, &f);
}

static void put_count(FILE *f, uint64_t n, const char *one, const char *many)
{
	fprintf(f, "%" PRIu64 " %s", n, n == 1 ? one : many);
}

/* The pattern of k into out (outlen bytes); -1 when no rule should name
 * it (plumbing) or it has no name. */
static int frame_pattern(const struct vrt_trace *t, const struct keyframe *k,
                         char *out, size_t outlen)
{
	struct vrt_rule_frame rf = {(int)k->kind, vrt_load_str(t, k->function),
	                            vrt_load_str(t, k->file)};
	if (plumbing(t, k))
		return -1;
	return vrt_rules_suggest(&rf, out, outlen);
}

/* The innermost pattern of g into out, left alone when there is none. */
static void first_pattern(const struct vrt_trace *t, const struct group *g,
                          char *out, size_t outlen)
{
	size_t i;
	for (i = 0; i < g->nkey; i++)
		if (frame_pattern(t, &g->key[i], out, outlen) >= 0)
			return;
	out[0] = '\0';
}

/* A group: its bytes, why it is listed, and its frames a rule could name,
 * one pattern a line. */
static void print_group(FILE *f, const struct vrt_trace *t,
                        const struct vrt_rules *rules, const struct group *g,
                        size_t rank)
{
	char b[32], pat[VRT_RULES_LINE_MAX];
	size_t i, shown = 0, more = 0, skipped = 0;

	fprintf(f, "%zu. %s in ", rank,
	        vrt_text_bytes(b, sizeof(b), g->bytes, 2));
	put_count(f, g->allocs, "allocation", "allocations");
	if (g->fails) {
		fprintf(f, ", ");
		put_count(f, g->fails, "failed", "failed");
		fprintf(f, " (%s)",
		        vrt_text_bytes(b, sizeof(b), g->failed_bytes, 2));
	}
	fprintf(f, ", ");
	put_count(f, g->paths, "call path", "call paths");
	if (g->rule == VRT_RULE_NONE) {
		fprintf(f, ": no rule matched\n");
	} else {
		fprintf(f, ": only an obsolete rule matched: %s  ",
		        vrt_rules_origin(rules, g->rule));
		vrt_text_put_safe(f, vrt_rules_describe(rules, g->rule), 200);
		fprintf(f, "\n");
	}
	for (i = 0; i < g->nkey; i++) {
		if (plumbing(t, &g->key[i])) {
			skipped++;
			continue;
		}
		if (frame_pattern(t, &g->key[i], pat, sizeof(pat)) < 0)
			continue;
		if (shown == SHOW_FRAMES) {
			more++;
			continue;
		}
		if (!shown)
			fprintf(f, "   frames a rule could name, innermost "
			           "first:\n");
		fprintf(f, "     ");
		vrt_text_put_safe(f, pat, 300);
		fprintf(f, "\n");
		shown++;
	}
	if (!shown)
		fprintf(f, "   no frame of these paths has a name a rule "
		           "could match\n");
	if (more)
		fprintf(f, "     ... and %zu more\n", more);
	if (skipped) {
		fprintf(f, "   (");
		put_count(f, skipped, "frame", "frames");
		fprintf(f, " in the CUDA runtime, PyTorch's allocator or the "
		           "interpreter left out)\n");
	}
}

struct job {
	const struct settings *set;
	const struct state *s;
	const struct vrt_trace *t;
};

static int write_report(FILE *f, const void *ctx)
{
	const struct job *j = ctx;
	const struct state *s = j->s;
	char b1[32], b2[32], first[VRT_RULES_LINE_MAX] = "";
	uint64_t bytes = 0, allocs = 0;
	size_t i, show;

	for (i = 0; i < s->ngroups; i++) {
		bytes += s->groups[i].bytes;
		allocs += s->groups[i].allocs;
	}
	if (!s->ngroups) {
		fprintf(f,
		        "every allocating call path is claimed by a current "
		        "rule (%" PRIu64 " allocations, %s)\n",
		        s->total_allocs,
		        vrt_text_bytes(b1, sizeof(b1), s->total_bytes, 2));
		return 0;
	}
	fprintf(f,
	        "call paths no rule claims, or only an obsolete one, by "
	        "bytes allocated (%s of %s; ",
	        vrt_text_bytes(b1, sizeof(b1), bytes, 2),
	        vrt_text_bytes(b2, sizeof(b2), s->total_bytes, 2));
	put_count(f, allocs, "allocation", "allocations");
	fprintf(f, " of %" PRIu64 ")%s\n\n", s->total_allocs,
	        j->set->o.rules ? "" : "; built-in rules only");
	show = j->set->top && j->set->top < s->ngroups ? j->set->top
	                                               : s->ngroups;
	for (i = 0; i < show; i++) {
		print_group(f, j->t, s->rules, &s->groups[i], i + 1);
		fprintf(f, "\n");
	}
	/* The example names a path no rule claims when one is shown: an
	 * obsolete rule still classifies its paths. */
	for (i = 0; !first[0] && i < show * 2; i++) {
		const struct group *g = &s->groups[i % show];
		if (i >= show || g->rule == VRT_RULE_NONE)
			first_pattern(j->t, g, first, sizeof(first));
	}
	if (show < s->ngroups)
		fprintf(f, "... %zu more %s (--top 0 lists them all)\n\n",
		        s->ngroups - show,
		        s->ngroups - show == 1 ? "group" : "groups");
	fprintf(f, "To claim a path, add a line to a rules file: a phase "
	           "(weights, kv_cache, forward,\n"
	           "profile, cuda_graph, comm, workspace, or a name of your "
	           "own), then one of its patterns:\n");
	fprintf(f, "    PHASE  %s\n",
	        first[0] ? first : "py:MyModule.step in myapp/engine.py");
	fprintf(f, "Check it with `vramtrace rules RUN --rules FILE`, use it "
	           "with `vramtrace analyze RUN\n"
	           "--rules FILE` (docs/rules.md).\n");
	return 0;
}

static int scan(struct state *s, struct vrt_trace *t)
{
	struct vrt_load_error *err = calloc(1, sizeof(*err));
	struct vrt_event *batch = malloc(VRT_RUN_BATCH * sizeof(*batch));
	int rc = -1;
	size_t n;

	if (!err || !batch) {
		fprintf(stderr, "vramtrace: error: out of memory\n");
		goto out;
	}
	for (;;) {
		if (vrt_load_next(t, batch, VRT_RUN_BATCH, &n, err)) {
			fprintf(stderr, "vramtrace: error: %s: %s\n",
			        err->path, err->msg);
			goto out;
		}
		if (!n)
			break;
		if (feed(s, t, batch, n)) {
			fprintf(stderr, "vramtrace: error: out of memory\n");
			goto out;
		}
	}
	vrt_run_warn(t);
	rc = 0;
out:
	free(batch);
	free(err);
	return rc;
}

static int open_trace(struct vrt_trace *t, const struct settings *set)
{
	struct vrt_load_error *err = calloc(1, sizeof(*err));
	int rc = -1;

	if (!err) {
		fprintf(stderr, "vramtrace: error: out of memory\n");
		return -1;
	}
	if (vrt_load_open(t, set->paths, (size_t)set->npaths, err))
		fprintf(stderr, "vramtrace: error: %s: %s\n", err->path,
		        err->msg);
	else
		rc = 0;
	free(err);
	return rc;
}

int vrt_cmd_rules_run(const struct vrt_cmd *self, int argc, char **argv)
{
	struct settings set = {.top = TOP_DEFAULT};
	struct vrt_rules *rules = NULL;
	struct vrt_optstate st;
	struct vrt_trace t;
	struct state s;
	size_t i;
	int rc;

	memset(&st, 0, sizeof(st));
	memset(&t, 0, sizeof(t));
	memset(&s, 0, sizeof(s));
	if (vrt_main_parse(self, argc, argv, options, &set.o, own_option, &set,
	                   &st, &rc))
		goto out;
	rc = check_runs(self, &set, &st);
	if (rc)
		goto out;
	if (set.builtin) {
		fputs(vrt_rules_builtin_text(), stdout);
		rc = fflush(stdout) || ferror(stdout) ? VRT_EXIT_FAIL
		                                      : VRT_EXIT_OK;
		goto out;
	}
	rc = VRT_EXIT_FAIL;
	rules = set.o.rules ? vrt_run_read_rules(set.o.rules)
	                    : vrt_rules_new_builtin();
	if (!rules) {
		if (!set.o.rules)
			fprintf(stderr, "vramtrace: error: out of memory\n");
		goto out;
	}
	s.rules = rules;
	if (open_trace(&t, &set))
		goto out;
	s.attrib = vrt_attrib_new(&t, rules);
	if (!s.attrib) {
		fprintf(stderr, "vramtrace: error: out of memory\n");
		goto out;
	}
	if (scan(&s, &t))
		goto out;
	if (s.ngroups)
		qsort(s.groups, s.ngroups, sizeof(*s.groups), by_bytes);
	struct job job = {&set, &s, &t};
	rc = vrt_cmd_write(NULL, write_report, &job);
out:
	for (i = 0; i < s.ngroups; i++)
		free(s.groups[i].key);
	free(s.groups);
	free(s.table);
	free(s.sgroup);
	free(s.frames);
	vrt_attrib_free(s.attrib);
	vrt_load_free(&t);
	if (rules)
		vrt_rules_free(rules);
	free(st.pos);
	return rc;
}
