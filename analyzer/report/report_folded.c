/*
 * report_folded.c — the allocations live at each device's peak as folded
 * stacks, the input of flamegraph.pl, speedscope and inferno:
 *
 *     [weights];main;llama_model_load_from_file;ggml_alloc 6442450944
 *
 * one line per call path, root first, the phase as the first frame, the
 * bytes it held at the peak as the count (a plain number, as the format
 * wants: flamegraph.pl --countname=bytes names its unit). A run whose
 * peaks span several devices puts "[device N];" in front (N: the device's
 * index in the report), so each device is its own tower (their peaks are
 * different moments). The call paths are replay's sites
 * at the peak, all of them (the caller sets top_sites to SIZE_MAX); lines
 * that fold to the same text (frames that differ only by offset) are
 * summed, and the lines are sorted, so the output is stable.
 *
 * Frame names come from the trace: ';' would split a frame and control
 * bytes would break a line, so they are replaced (':' and '?').
 */
#include "replay/callpath.h"
#include "report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "pathname.h"
#include "base/text.h"

struct line {
	char *text;
	uint64_t bytes;
};

static void put_frame_text(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		fputc(c == ';' ? ':' : vrt_text_safe_char(c), f);
	}
}

static void put_frame(FILE *f, const struct vrt_trace *t,
                      const struct vrt_frame *fr)
{
	const char *fn = vrt_load_str(t, fr->function);
	const char *file = vrt_pathname_base(vrt_load_str(t, fr->file));

	if (fr->kind == VRT_FRAME_PYTHON) {
		/* py-spy's form: "function (file:line)". */
		put_frame_text(f, fn ? fn : "??");
		if (file) {
			fputs(" (", f);
			put_frame_text(f, file);
			if (fr->line)
				fprintf(f, ":%" PRIu64, fr->line);
			fputc(')', f);
		}
	} else if (fn) {
		put_frame_text(f, fn);
	} else if (fr->ip) {
		fprintf(f, "0x%" PRIx64, fr->ip);
	} else {
		fputs("??", f);
		if (file) {
			fputs(" [", f);
			put_frame_text(f, file);
			fputc(']', f);
		}
	}
}

/* The folded text of one site (without its count), malloc'd; NULL when
 * out of memory. */
static char *fold(const struct vrt_trace *t, const struct vrt_replay_site *x,
                  int with_device)
{
	uint32_t depth = x->stack < t->nstacks ? t->stacks[x->stack].depth : 0;
	uint32_t *fr = malloc(((size_t)depth + 1) * sizeof(*fr));
	char *text = NULL, pb[32];
	size_t len = 0, n, i;
	FILE *m;

	if (!fr)
		return NULL;
	n = vrt_load_stack_frames(t, x->stack, fr, (size_t)depth + 1);
	vrt_callpath_order(t, fr, n);
	m = open_memstream(&text, &len);
	if (!m) {
		free(fr);
		return NULL;
	}
	if (with_device)
		fprintf(m, "[device %" PRId32 "];", x->device);
	fputc('[', m);
	put_frame_text(m, vrt_load_phase_name(t, x->phase, pb, sizeof(pb)));
	fputc(']', m);
	for (i = n; i-- > 0;) {
		fputc(';', m);
		put_frame(m, t, &t->frames[fr[i]]);
	}
	free(fr);
	if (fclose(m)) {
		free(text);
		return NULL;
	}
	return text;
}

static int cmp_line(const void *pa, const void *pb)
{
	return strcmp(((const struct line *)pa)->text,
	              ((const struct line *)pb)->text);
}

int vrt_report_folded_write(FILE *f, const struct vrt_trace *t,
                            const struct vrt_replay *r)
{
	struct line *v = calloc(r->nsites ? r->nsites : 1, sizeof(*v));
	size_t n = 0, i, j;
	int with_device = 0, rc = -1;

	if (!v)
		return -1;
	for (i = 1; i < r->nsites; i++)
		with_device |= r->sites[i].device != r->sites[0].device;
	for (i = 0; i < r->nsites; i++) {
		if (!r->sites[i].bytes)
			continue;
		v[n].text = fold(t, &r->sites[i], with_device);
		v[n].bytes = r->sites[i].bytes;
		if (!v[n].text)
			goto out;
		n++;
	}
	qsort(v, n, sizeof(*v), cmp_line);
	for (i = 0; i < n; i = j) {
		uint64_t sum = 0;
		for (j = i; j < n && !strcmp(v[j].text, v[i].text); j++)
			sum += v[j].bytes;
		fprintf(f, "%s %" PRIu64 "\n", v[i].text, sum);
	}
	rc = 0;
out:
	for (i = 0; i < n; i++)
		free(v[i].text);
	free(v);
	return rc;
}
