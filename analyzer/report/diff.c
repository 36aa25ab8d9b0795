/*
 * diff.c — compares two replayed runs (diff.h says what matches what).
 *
 * Devices are paired first; every per-device number is then a pair (A, B)
 * with 0 where a run lacks the device or the phase. Call paths: each run's
 * sites (replay.c's live set at each device's peak) become (device pair,
 * key, bytes) rows, the key being the phase name and the frames' names;
 * rows with the same key add up, both lists are sorted by key and merged.
 * Pure: no I/O, no printing. Single-threaded.
 */
#include "diff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pathname.h"

/* Frames of a call path that take part in its key. */
#define KEY_FRAMES 256

int64_t vrt_diff_delta(struct vrt_diff_pair p)
{
	if (p.b >= p.a)
		return p.b - p.a > (uint64_t)INT64_MAX ? INT64_MAX
		                                       : (int64_t)(p.b - p.a);
	return p.a - p.b > (uint64_t)INT64_MAX ? INT64_MIN
	                                       : -(int64_t)(p.a - p.b);
}

int vrt_diff_pct(struct vrt_diff_pair p, int64_t *pct)
{
	long double q;

	if (!p.a)
		return 0;
	q = ((long double)p.b - (long double)p.a) * 100.0L / (long double)p.a;
	*pct = (int64_t)(q < 0 ? q - 0.5L : q + 0.5L);
	return 1;
}

const char *vrt_diff_change_name(int change)
{
	switch (change) {
	case VRT_DIFF_GREW:
		return "grew";
	case VRT_DIFF_SHRANK:
		return "shrank";
	case VRT_DIFF_APPEARED:
		return "appeared";
	case VRT_DIFF_DISAPPEARED:
		return "disappeared";
	}
	return "";
}

/* ---- devices ------------------------------------------------------------ */

static int same_str(const char *x, const char *y)
{
	return !strcmp(x ? x : "", y ? y : "");
}

static int device_match(const struct vrt_device *x, const struct vrt_device *y)
{
	if (x->uuid[0] && y->uuid[0])
		return !strcmp(x->uuid, y->uuid);
	return same_str(x->host, y->host) && x->vendor == y->vendor &&
	       x->ordinal == y->ordinal;
}

/* Fills d->dev with A's devices in order, each with its B partner (or
 * none), then B's unpaired devices. */
static int pair_devices(struct vrt_diff *d, const struct vrt_trace *ta,
                        const struct vrt_trace *tb)
{
	size_t i, j, n = 0;
	int32_t *partner; /* per A device: its B device, or -1 */
	uint8_t *taken;   /* per B device */
	int other_host;

	partner = malloc((ta->ndevices ? ta->ndevices : 1) * sizeof(*partner));
	taken = calloc(tb->ndevices ? tb->ndevices : 1, 1);
	d->dev = calloc(ta->ndevices + tb->ndevices + 1, sizeof(*d->dev));
	if (!partner || !taken || !d->dev) {
		free(partner);
		free(taken);
		return -1;
	}
	for (i = 0; i < ta->ndevices; i++) {
		partner[i] = -1;
		for (j = 0; j < tb->ndevices && partner[i] < 0; j++)
			if (!taken[j] &&
			    device_match(&ta->devices[i], &tb->devices[j])) {
				partner[i] = (int32_t)j;
				taken[j] = 1;
			}
	}
	other_host = ta->nhosts == 1 && tb->nhosts == 1 &&
	             !same_str(ta->hosts[0], tb->hosts[0]);
	for (i = 0; other_host && i < ta->ndevices; i++)
		for (j = 0; j < tb->ndevices && partner[i] < 0; j++)
			if (!taken[j] &&
			    ta->devices[i].vendor == tb->devices[j].vendor &&
			    ta->devices[i].ordinal == tb->devices[j].ordinal) {
				partner[i] = (int32_t)j;
				taken[j] = 1;
			}
	for (i = 0; i < ta->ndevices; i++) {
		d->dev[n].a = (int32_t)i;
		d->dev[n++].b = partner[i];
	}
	for (j = 0; j < tb->ndevices; j++)
		if (!taken[j]) {
			d->dev[n].a = -1;
			d->dev[n++].b = (int32_t)j;
		}
	d->ndev = n;
	free(partner);
	free(taken);
	return 0;
}

static int phase_used(const struct vrt_replay_device *rd, unsigned k)
{
	const struct vrt_counters *c = &rd->phase[k];
	return c->allocs || c->frees || c->failed || c->peak_bytes ||
	       rd->peak_by_phase[k];
}

static struct vrt_diff_phase *phase_get(struct vrt_diff_device *dd,
                                        const char *name)
{
	struct vrt_diff_phase *p;
	size_t i;

	for (i = 0; i < dd->nphases; i++)
		if (!strncmp(dd->phases[i].name, name, VRT_DIFF_NAME - 1))
			return &dd->phases[i];
	p = realloc(dd->phases, (dd->nphases + 1) * sizeof(*p));
	if (!p)
		return NULL;
	dd->phases = p;
	p = &p[dd->nphases++];
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name);
	return p;
}

/* Adds one run's side (b: B's) of device dd. */
static int device_side(struct vrt_diff_device *dd, const struct vrt_trace *t,
                       const struct vrt_replay *r, int32_t idx, int b)
{
	const struct vrt_replay_device *rd;
	struct vrt_diff_phase *p;
	char buf[32];
	unsigned k;
	int fam;

	if (idx < 0 || (size_t)idx >= r->ndevices)
		return 0;
	rd = &r->dev[idx];
	*(b ? &dd->peak.b : &dd->peak.a) = rd->peak_bytes;
	for (fam = 0; fam < VRT_FAM_COUNT; fam++)
		*(b ? &dd->fam[fam].b : &dd->fam[fam].a) =
		        rd->fam[fam].peak_bytes;
	for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++) {
		if (!phase_used(rd, k))
			continue;
		p = phase_get(dd, vrt_load_phase_name(t, k, buf, sizeof(buf)));
		if (!p)
			return -1;
		*(b ? &p->peak.b : &p->peak.a) = rd->phase[k].peak_bytes;
		*(b ? &p->at_peak.b : &p->at_peak.a) = rd->peak_by_phase[k];
	}
	return 0;
}

/* ---- call paths --------------------------------------------------------- */

struct row {
	size_t dev;
	char *key; /* phase, then the frames' names */
	uint32_t stack;
	uint64_t bytes, allocs;
	char phase[VRT_DIFF_NAME];
};

/* The key of a call path: "phase" then per frame, innermost first,
 * "\x1e" kind "\x1f" function "\x1f" basename. Separators are control
 * bytes, which no symbol or path of a real trace holds. */
static char *site_key(const struct vrt_trace *t, const char *phase,
                      uint32_t stack)
{
	uint32_t fr[KEY_FRAMES];
	size_t n = vrt_load_stack_frames(t, stack, fr, KEY_FRAMES), i, len;
	char *k, *p;

	len = strlen(phase) + 1;
	for (i = 0; i < n; i++) {
		const struct vrt_frame *x = &t->frames[fr[i]];
		const char *fn = vrt_load_str(t, x->function);
		len += 4 + strlen(fn ? fn : "?") +
		       strlen(vrt_pathname_base_or_empty(vrt_load_str(t, x->file)));
	}
	k = p = malloc(len);
	if (!k)
		return NULL;
	p += sprintf(p, "%s", phase);
	for (i = 0; i < n; i++) {
		const struct vrt_frame *x = &t->frames[fr[i]];
		const char *fn = vrt_load_str(t, x->function);
		p += sprintf(p, "\x1e%c\x1f%s\x1f%s",
		             x->kind == VRT_FRAME_PYTHON ? 'p' : 'n',
		             fn ? fn : "?",
		             vrt_pathname_base_or_empty(vrt_load_str(t, x->file)));
	}
	return k;
}

static int cmp_row(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;

	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	return strcmp(a->key, b->key);
}

static void rows_free(struct row *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i].key);
	free(v);
}

/* One run's sites as rows keyed by names, sorted, equal keys added up.
 * side 0: A, 1: B. Returns the row count, or (size_t)-1 when out of
 * memory. */
static size_t site_rows(const struct vrt_diff *d, const struct vrt_trace *t,
                        const struct vrt_replay *r, int side, struct row **out)
{
	struct row *v;
	size_t i, j, n = 0;
	char buf[32];

	*out = NULL;
	v = calloc(r->nsites ? r->nsites : 1, sizeof(*v));
	if (!v)
		return (size_t)-1;
	for (i = 0; i < r->nsites; i++) {
		const struct vrt_replay_site *s = &r->sites[i];
		const char *ph;
		for (j = 0; j < d->ndev; j++)
			if ((side ? d->dev[j].b : d->dev[j].a) == s->device)
				break;
		if (j == d->ndev)
			continue;
		ph = vrt_load_phase_name(t, s->phase, buf, sizeof(buf));
		v[n].dev = j;
		v[n].stack = s->stack;
		v[n].bytes = s->bytes;
		v[n].allocs = s->allocs;
		snprintf(v[n].phase, sizeof(v[n].phase), "%s", ph);
		v[n].key = site_key(t, v[n].phase, s->stack);
		if (!v[n].key) {
			rows_free(v, n);
			return (size_t)-1;
		}
		n++;
	}
	qsort(v, n, sizeof(*v), cmp_row);
	for (i = 1, j = n ? 1 : 0; i < n; i++) {
		if (!cmp_row(&v[j - 1], &v[i])) {
			v[j - 1].bytes += v[i].bytes;
			v[j - 1].allocs += v[i].allocs;
			free(v[i].key); /* the first stack stands for all */
		} else {
			v[j++] = v[i];
		}
	}
	*out = v;
	return j;
}

static uint64_t abs_delta(const struct vrt_diff_site *s)
{
	return s->bytes.b > s->bytes.a ? s->bytes.b - s->bytes.a
	                               : s->bytes.a - s->bytes.b;
}

static int cmp_site(const void *pa, const void *pb)
{
	const struct vrt_diff_site *a = pa, *b = pb;
	uint64_t da = abs_delta(a), db = abs_delta(b);
	int c;

	if (da != db)
		return da > db ? -1 : 1;
	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	if ((c = strcmp(a->phase, b->phase)))
		return c;
	if (a->stack_a != b->stack_a)
		return a->stack_a < b->stack_a ? -1 : 1;
	return a->stack_b < b->stack_b ? -1 : a->stack_b > b->stack_b;
}

static int add_site(struct vrt_diff *d, const struct row *a,
                    const struct row *b)
{
	const struct row *x = a ? a : b;
	struct vrt_diff_site *s;

	if (a && b && a->bytes == b->bytes) {
		d->sites_same++;
		return 0;
	}
	if (d->nsites % 64 == 0) {
		s = realloc(d->sites, (d->nsites + 64) * sizeof(*s));
		if (!s)
			return -1;
		d->sites = s;
	}
	s = &d->sites[d->nsites++];
	memset(s, 0, sizeof(*s));
	s->dev = x->dev;
	memcpy(s->phase, x->phase, sizeof(s->phase));
	if (a) {
		s->stack_a = a->stack;
		s->bytes.a = a->bytes;
		s->allocs.a = a->allocs;
	}
	if (b) {
		s->stack_b = b->stack;
		s->bytes.b = b->bytes;
		s->allocs.b = b->allocs;
	}
	s->change = !a                        ? VRT_DIFF_APPEARED
	            : !b                      ? VRT_DIFF_DISAPPEARED
	            : s->bytes.b > s->bytes.a ? VRT_DIFF_GREW
	                                      : VRT_DIFF_SHRANK;
	return 0;
}

static int diff_sites(struct vrt_diff *d, const struct vrt_trace *ta,
                      const struct vrt_replay *ra, const struct vrt_trace *tb,
                      const struct vrt_replay *rb)
{
	struct row *va = NULL, *vb = NULL;
	size_t na, nb, i = 0, j = 0;
	int rc = -1, c;

	na = site_rows(d, ta, ra, 0, &va);
	if (na == (size_t)-1)
		return -1;
	nb = site_rows(d, tb, rb, 1, &vb);
	if (nb == (size_t)-1) {
		rows_free(va, na);
		return -1;
	}
	while (i < na || j < nb) {
		c = i == na ? 1 : j == nb ? -1 : cmp_row(&va[i], &vb[j]);
		if (add_site(d, c <= 0 ? &va[i] : NULL, c >= 0 ? &vb[j] : NULL))
			goto out;
		i += c <= 0;
		j += c >= 0;
	}
	/* qsort's base must not be NULL, even for zero elements. */
	if (d->nsites)
		qsort(d->sites, d->nsites, sizeof(*d->sites), cmp_site);
	rc = 0;
out:
	rows_free(va, na);
	rows_free(vb, nb);
	return rc;
}

/* ---- the whole run ------------------------------------------------------ */

int vrt_diff_run(struct vrt_diff *d, const struct vrt_trace *ta,
                 const struct vrt_replay *ra, const struct vrt_trace *tb,
                 const struct vrt_replay *rb)
{
	size_t i;

	if (pair_devices(d, ta, tb))
		return -1;
	for (i = 0; i < d->ndev; i++)
		if (device_side(&d->dev[i], ta, ra, d->dev[i].a, 0) ||
		    device_side(&d->dev[i], tb, rb, d->dev[i].b, 1))
			return -1;
	d->ooms.a = ra->ooms;
	d->ooms.b = rb->ooms;
	d->max_inflight.a = ra->max_inflight;
	d->max_inflight.b = rb->max_inflight;
	d->have_single_request_a = ra->have_single_request;
	d->have_single_request_b = rb->have_single_request;
	d->single_request.a = ra->single_request_peak_bytes;
	d->single_request.b = rb->single_request_peak_bytes;
	d->pinned_peak.a = ra->host_pinned_peak;
	d->pinned_peak.b = rb->host_pinned_peak;
	return diff_sites(d, ta, ra, tb, rb);
}

void vrt_diff_free(struct vrt_diff *d)
{
	size_t i;

	for (i = 0; i < d->ndev; i++)
		free(d->dev[i].phases);
	free(d->dev);
	free(d->sites);
	memset(d, 0, sizeof(*d));
}
