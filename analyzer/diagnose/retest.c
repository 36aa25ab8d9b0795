/*
 * retest.c — a run's row of the retest table (retest.h), and what two
 * runs' settings and verdicts say for `compare`. The engine and its flags
 * are engine.c's and the verdict diagnose.c's (the ones `analyze` uses);
 * this file copies them, reads the numbers and words the outcome. Pure:
 * no I/O, no printing. Single-threaded.
 */
#include "retest.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pathname.h"
#include "base/text.h"

const char *vrt_retest_field_name(int field)
{
	if (field < 0 || field >= VRT_RETEST_NFIELDS)
		return NULL;
	return vrt_engine_field_name(field);
}

/* ---- the row ------------------------------------------------------------ */

static int copy_argv(struct vrt_retest_row *row, const struct vrt_process *p)
{
	size_t i;

	row->argv = calloc(p->argc + 1, sizeof(char *));
	if (!row->argv)
		return -1;
	for (i = 0; i < p->argc; i++) {
		row->argv[i] = strdup(p->argv[i] ? p->argv[i] : "");
		if (!row->argv[i])
			return -1;
		row->argc++;
	}
	return 0;
}

static int flags_of_run(struct vrt_retest_row *row, const struct vrt_trace *t)
{
	struct vrt_engine_run er;
	int k;

	if (!t->nprocs)
		return 0;
	vrt_engine_of_run(&er, t);
	/* The engine analyze names (recognised, else the guess its flags
	 * gave); the command line it was found in, else the root's. */
	row->engine = vrt_engine_name(er.engine);
	for (k = 0; k < VRT_RETEST_NFIELDS; k++) {
		if (!er.value[k])
			continue;
		row->value[k] = strdup(er.value[k]);
		if (!row->value[k])
			return -1;
		row->option[k] = er.option[k];
	}
	return copy_argv(row,
	                 &t->procs[er.proc < t->nprocs ? er.proc : er.root]);
}

static int devices_of_run(struct vrt_retest_row *row, const struct vrt_trace *t,
                          const struct vrt_replay *r)
{
	size_t i;
	unsigned k;
	char buf[32];

	row->dev = calloc(r->ndevices ? r->ndevices : 1, sizeof(*row->dev));
	if (!row->dev)
		return -1;
	for (i = 0; i < r->ndevices; i++) {
		const struct vrt_replay_device *d = &r->dev[i];
		struct vrt_retest_device *x = &row->dev[row->ndev++];
		x->id = (int32_t)i;
		x->peak_bytes = d->peak_bytes;
		x->phases = calloc(VRT_REPLAY_MAX_PHASES, sizeof(*x->phases));
		if (!x->phases)
			return -1;
		for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++) {
			struct vrt_retest_phase *p;
			if (!d->peak_by_phase[k])
				continue;
			p = &x->phases[x->nphases++];
			snprintf(p->name, sizeof(p->name), "%s",
			         vrt_load_phase_name(t, k, buf, sizeof(buf)));
			p->bytes = d->peak_by_phase[k];
		}
	}
	return 0;
}

/* The verdict and each device's headroom, as analyze says them. */
static int verdict_of_run(struct vrt_retest_row *row,
                          const struct vrt_trace *t,
                          const struct vrt_replay *r)
{
	struct vrt_diagnosis *dg = malloc(sizeof(*dg));
	size_t i, k;

	if (!dg)
		return -1;
	vrt_diagnose_run(dg, t, r, NULL);
	snprintf(row->verdict, sizeof(row->verdict), "%s",
	         vrt_diagnose_verdict_name(dg->verdict));
	snprintf(row->detail, sizeof(row->detail), "%s", dg->detail);
	for (k = 0; k < dg->ndevices; k++)
		for (i = 0; i < row->ndev; i++)
			if (row->dev[i].id == dg->devices[k].device &&
			    dg->devices[k].total_bytes) {
				row->dev[i].have_headroom = 1;
				row->dev[i].headroom_bytes =
				        dg->devices[k].headroom_bytes;
			}
	free(dg);
	return 0;
}

int vrt_retest_row(struct vrt_retest_row *row, const struct vrt_trace *t,
                   const struct vrt_replay *r)
{
	size_t i;
	char buf[32];

	memset(row, 0, sizeof(*row));
	row->nprocs = t->nprocs;
	if (flags_of_run(row, t) || devices_of_run(row, t, r) ||
	    verdict_of_run(row, t, r))
		return -1;
	row->max_inflight = r->max_inflight;
	row->ooms = r->ooms;
	/* The failure the run's verdict rests on (replay.h), else its
	 * first out-of-memory failure (every one was recovered). */
	for (i = r->decisive < r->nfails ? r->decisive : 0; i < r->nfails;
	     i++) {
		const struct vrt_replay_failure *x = &r->fails[i];
		if (!x->oom)
			continue;
		row->have_oom = 1;
		row->oom_after_ready = x->after_ready;
		snprintf(row->oom_phase, sizeof(row->oom_phase), "%s",
		         vrt_load_phase_name(t, x->phase, buf, sizeof(buf)));
		row->oom_device = x->device;
		row->oom_requested = x->requested_bytes;
		row->oom_time_ns = x->ts - t->start_ns;
		break;
	}
	for (i = 0; i < t->nprocs; i++)
		if (t->procs[i].exit_kind != VRT_EXIT_NONE) {
			row->exit_kind = t->procs[i].exit_kind;
			row->exit_code = t->procs[i].exit_code;
			break;
		}
	return 0;
}

void vrt_retest_row_free(struct vrt_retest_row *row)
{
	size_t i;
	int k;

	for (k = 0; k < VRT_RETEST_NFIELDS; k++)
		free(row->value[k]);
	for (i = 0; i < row->argc; i++)
		free(row->argv[i]);
	free(row->argv);
	for (i = 0; i < row->ndev; i++)
		free(row->dev[i].phases);
	free(row->dev);
	memset(row, 0, sizeof(*row));
}

int vrt_retest_row_fill(struct vrt_retest_row *row, int field,
                        const char *value)
{
	if (field < 0 || field >= VRT_RETEST_NFIELDS || row->value[field] ||
	    !value)
		return 0;
	row->value[field] = strdup(value);
	if (!row->value[field])
		return -1;
	row->option[field] = "log";
	return 0;
}

/* ---- what changed between two runs ------------------------------------- */

/* Spellings of one setting outside engine.c's table (KV cache types,
 * flash attention): compared as one. */
static const char *const aliases[][2] = {
        {"-ctk", "--cache-type-k"}, {"-ctv", "--cache-type-v"},
        {"-fa", "--flash-attn"},    {"-ts", "--tensor-split"},
        {"-mg", "--main-gpu"},
};

struct opt {
	char key[48];  /* what the setting is: an engine field, else the
	                  option as spelled */
	char name[48]; /* the option as spelled */
	char value[64];
};

struct opts {
	struct opt *v;
	size_t n;
	char program[128]; /* the program's base name, and the module or
	                      script python runs */
	char args[256];    /* the positional arguments, space-separated */
};

static int is_number(const char *s)
{
	char *end;

	if (!s || !*s)
		return 0;
	strtod(s, &end);
	return !*end;
}

static void key_of(char *key, size_t n, int engine, const char *option)
{
	int field = vrt_engine_field_of(engine, option);
	size_t i;

	if (field >= 0) {
		snprintf(key, n, "%s", vrt_engine_field_name(field));
		return;
	}
	for (i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (!strcmp(option, aliases[i][0]) ||
		    !strcmp(option, aliases[i][1])) {
			snprintf(key, n, "%s", aliases[i][1]);
			return;
		}
	snprintf(key, n, "%s", option);
}

/* The options of one command line; the last of a setting wins, as the
 * engines' parsers do. */
static int parse_opts(struct opts *o, int engine, char *const *argv,
                      size_t argc)
{
	size_t i, k, len = 0;

	o->v = calloc(argc ? argc : 1, sizeof(*o->v));
	if (!o->v)
		return -1;
	i = 1;
	if (argc && argv[0]) {
		snprintf(o->program, sizeof(o->program), "%s",
		         vrt_pathname_base_or_empty(argv[0]));
		/* python's own options are not the engine's: the engine's
		 * start after "-m MODULE" or the script. */
		if (!strncmp(o->program, "python", 6)) {
			for (; i < argc && argv[i]; i++) {
				if (!strcmp(argv[i], "-m") && i + 1 < argc &&
				    argv[i + 1]) {
					i++;
					break;
				}
				if (argv[i][0] != '-')
					break;
			}
			if (i < argc && argv[i]) {
				size_t pl = strlen(o->program);
				snprintf(o->program + pl,
				         sizeof(o->program) - pl, " %s",
				         vrt_pathname_base_or_empty(argv[i]));
				i++;
			}
		}
	}
	for (; i < argc && argv[i]; i++) {
		const char *a = argv[i], *eq;
		char name[48], key[48];
		const char *val = "(set)";
		struct opt *x = NULL;
		if (a[0] != '-' || !a[1] || is_number(a)) {
			len += (size_t)snprintf(o->args + len,
			                        len < sizeof(o->args)
			                                ? sizeof(o->args) - len
			                                : 0,
			                        "%s%s", len ? " " : "", a);
			if (len > sizeof(o->args))
				len = sizeof(o->args);
			continue;
		}
		eq = strchr(a, '=');
		if (eq) {
			snprintf(name, sizeof(name), "%.*s", (int)(eq - a), a);
			val = eq + 1;
		} else {
			snprintf(name, sizeof(name), "%s", a);
			if (i + 1 < argc && argv[i + 1] &&
			    (argv[i + 1][0] != '-' || is_number(argv[i + 1])))
				val = argv[++i];
		}
		key_of(key, sizeof(key), engine, name);
		for (k = 0; k < o->n && !x; k++)
			if (!strcmp(o->v[k].key, key))
				x = &o->v[k];
		if (!x)
			x = &o->v[o->n++];
		snprintf(x->key, sizeof(x->key), "%s", key);
		snprintf(x->name, sizeof(x->name), "%s", name);
		snprintf(x->value, sizeof(x->value), "%s", val);
	}
	return 0;
}

static int opts_of_run(struct opts *o, const struct vrt_trace *t)
{
	struct vrt_engine_run er;
	const struct vrt_process *p;

	memset(o, 0, sizeof(*o));
	if (!t->nprocs)
		return parse_opts(o, 0, NULL, 0);
	vrt_engine_of_run(&er, t);
	p = &t->procs[er.proc < t->nprocs ? er.proc : er.root];
	return parse_opts(o, er.engine, p->argv, p->argc);
}

static const struct opt *find_opt(const struct opts *o, const char *key)
{
	size_t k;

	for (k = 0; k < o->n; k++)
		if (!strcmp(o->v[k].key, key))
			return &o->v[k];
	return NULL;
}

int vrt_retest_changes_add(struct vrt_retest_changes *c, const char *name,
                           const char *a, const char *b, const char *source)
{
	struct vrt_retest_change *x;
	size_t k;

	for (k = 0; k < c->n; k++)
		if (!strcmp(c->v[k].name, name))
			return 0;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		void *nv = realloc(c->v, cap * sizeof(*c->v));
		if (!nv)
			return -1;
		c->v = nv;
		c->cap = cap;
	}
	x = &c->v[c->n++];
	snprintf(x->name, sizeof(x->name), "%s", name);
	snprintf(x->a, sizeof(x->a), "%s", a ? a : "");
	snprintf(x->b, sizeof(x->b), "%s", b ? b : "");
	x->source = source;
	return 0;
}

int vrt_retest_flags_diff(struct vrt_retest_changes *out,
                          const struct vrt_trace *a, const struct vrt_trace *b)
{
	struct opts oa, ob;
	size_t k;
	int rc = -1;

	if (opts_of_run(&oa, a) || opts_of_run(&ob, b))
		goto out;
	if (strcmp(oa.program, ob.program) &&
	    vrt_retest_changes_add(out, "program", oa.program, ob.program,
	                           "command line"))
		goto out;
	if (strcmp(oa.args, ob.args) &&
	    vrt_retest_changes_add(out, "arguments", oa.args, ob.args,
	                           "command line"))
		goto out;
	/* B's settings in its order, then those only A gave. */
	for (k = 0; k < ob.n; k++) {
		const struct opt *x = find_opt(&oa, ob.v[k].key);
		if (x && !strcmp(x->value, ob.v[k].value))
			continue;
		if (vrt_retest_changes_add(out, ob.v[k].name,
		                           x ? x->value : "", ob.v[k].value,
		                           "command line"))
			goto out;
	}
	for (k = 0; k < oa.n; k++)
		if (!find_opt(&ob, oa.v[k].key) &&
		    vrt_retest_changes_add(out, oa.v[k].name, oa.v[k].value, "",
		                           "command line"))
			goto out;
	rc = 0;
out:
	free(oa.v);
	free(ob.v);
	return rc;
}

void vrt_retest_changes_free(struct vrt_retest_changes *c)
{
	free(c->v);
	memset(c, 0, sizeof(*c));
}

/* ---- whether B fixed A --------------------------------------------------- */

static int failed(const struct vrt_diagnosis *d)
{
	return d->verdict != VRT_VERDICT_NONE &&
	       d->verdict != VRT_VERDICT_INCONCLUSIVE;
}

/* "kv_cache (context_too_long)". */
static const char *named(char *buf, size_t n, const struct vrt_diagnosis *d)
{
	snprintf(buf, n, "%s%s%s%s", vrt_diagnose_verdict_name(d->verdict),
	         d->detail[0] ? " (" : "", d->detail, d->detail[0] ? ")" : "");
	return buf;
}

/* The device with the least headroom; NULL when none is budgeted. */
static const struct vrt_diag_device *tightest(const struct vrt_diagnosis *d)
{
	const struct vrt_diag_device *best = NULL;
	size_t k;

	for (k = 0; k < d->ndevices; k++)
		if (d->devices[k].total_bytes &&
		    (!best ||
		     d->devices[k].headroom_bytes < best->headroom_bytes))
			best = &d->devices[k];
	return best;
}

/* "4.50 GiB", "512.00 MiB": sizes in the outcome line. */
static const char *human(char *buf, size_t n, uint64_t b)
{
	return vrt_text_bytes_in(buf, n, (double)b, 2, VRT_UNIT_MIB,
	                         VRT_UNIT_GIB);
}

void vrt_retest_outcome(const struct vrt_diagnosis *a,
                        const struct vrt_replay *ra,
                        const struct vrt_diagnosis *b,
                        const struct vrt_replay *rb, int *fixed, char *buf,
                        size_t n)
{
	const struct vrt_diag_device *tb = tightest(b);
	char va[96], vb[96], hb[32];
	uint32_t a_load = 0;

	named(va, sizeof(va), a);
	named(vb, sizeof(vb), b);
	if (a->have_failure && a->failure < ra->nfails)
		a_load = ra->fails[a->failure].inflight;
	*fixed = -1;
	if (a->verdict == VRT_VERDICT_INCONCLUSIVE) {
		snprintf(buf, n,
		         "cannot tell: A's verdict is %s, so there is no "
		         "diagnosed failure for B to fix (B: %s)",
		         va, vb);
	} else if (b->verdict == VRT_VERDICT_INCONCLUSIVE) {
		snprintf(buf, n,
		         "cannot tell: B's verdict is %s, so whether it fixed "
		         "A's %s is not known",
		         vb, va);
	} else if (failed(a) && failed(b)) {
		*fixed = 0;
		if (a->verdict == b->verdict && !strcmp(a->detail, b->detail))
			snprintf(buf, n,
			         "no: B fails the same way as A, %s at the %s "
			         "stage",
			         vb, b->stage);
		else
			snprintf(buf, n,
			         "no: B fails differently, A %s at the %s stage, "
			         "B %s at the %s stage",
			         va, a->stage, vb, b->stage);
	} else if (failed(b)) {
		*fixed = 0;
		snprintf(buf, n, "no: B fails where A did not: %s at the %s stage",
		         vb, b->stage);
	} else if (!failed(a)) {
		if (tb)
			snprintf(buf, n,
			         "neither run failed (B: %s, %s of headroom at "
			         "the least)",
			         vb, human(hb, sizeof(hb), tb->headroom_bytes));
		else
			snprintf(buf, n, "neither run failed (B: %s)", vb);
	} else if (!strcmp(a->stage, "request") &&
	           rb->max_inflight < a_load) {
		snprintf(buf, n,
		         "not shown: B did not fail, but it carried at most "
		         "%" PRIu32 " request%s in flight where A failed with "
		         "%" PRIu32 " (A: %s); repeat A's load",
		         rb->max_inflight, rb->max_inflight == 1 ? "" : "s",
		         a_load, va);
	} else {
		int thin = tb && !vrt_diag_fits_margin(tb->headroom_bytes,
		                                       tb->total_bytes,
		                                       b->margin_pct);
		int len;
		*fixed = 1;
		len = snprintf(buf, n, "yes: B fixed A's %s: B did not fail%s", va,
		               !strcmp(b->detail, "near_miss")
		                       ? " for good (it had near-misses)"
		                       : "");
		if (tb && len >= 0 && (size_t)len < n)
			snprintf(buf + len, n - (size_t)len,
			         ", %s of headroom at the least (device %d)%s",
			         human(hb, sizeof(hb), tb->headroom_bytes),
			         tb->device, thin ? ", under the margin" : "");
	}
}
