/*
 * retest.c — a run's row of the retest table (retest.h). The engine and
 * its flags are engine.c's; this file copies them and reads the numbers.
 * Pure: no I/O, no printing. Single-threaded.
 */
#include "retest.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "enginelog.h"

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
	/* The command line the engine was found in, else the root's. */
	if (er.recognised)
		row->engine = vrt_engine_name(er.engine);
	for (k = 0; k < VRT_RETEST_NFIELDS; k++) {
		if (!er.value[k])
			continue;
		row->value[k] = strdup(er.value[k]);
		if (!row->value[k])
			return -1;
		row->option[k] = er.option[k];
	}
	return copy_argv(row, &t->procs[er.recognised ? er.proc : er.root]);
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

int vrt_retest_row(struct vrt_retest_row *row, const struct vrt_trace *t,
                   const struct vrt_replay *r)
{
	size_t i;
	char buf[32];

	memset(row, 0, sizeof(*row));
	row->nprocs = t->nprocs;
	if (flags_of_run(row, t) || devices_of_run(row, t, r))
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

int vrt_retest_from_log(struct vrt_retest_row *row,
                        const struct vrt_enginelog *log)
{
	/* the log's field for each of ours, and llama.cpp's alternative */
	static const int from[VRT_RETEST_NFIELDS][2] = {
	        [VRT_RETEST_CONTEXT] = {VRT_ELC_MAX_MODEL_LEN, VRT_ELC_CTX_SIZE},
	        [VRT_RETEST_CONCURRENCY] = {VRT_ELC_MAX_NUM_SEQS, VRT_ELC_SLOTS},
	        [VRT_RETEST_MEM_FRACTION] = {VRT_ELC_MEM_FRACTION, -1},
	        [VRT_RETEST_PARALLEL] = {VRT_ELC_TP, -1},
	        [VRT_RETEST_GPU_LAYERS] = {VRT_ELC_GPU_LAYERS, -1},
	};
	char buf[32];
	int k, n = 0;

	if (!row->engine)
		row->engine = vrt_enginelog_engine_name(log->engine);
	for (k = 0; k < VRT_RETEST_NFIELDS; k++) {
		int f = from[k][0];
		if (row->value[k])
			continue;
		/* llama.cpp's context is the whole n_ctx, as -c gives it */
		if (log->engine == VRT_ENGINELOG_LLAMACPP && from[k][1] >= 0 &&
		    log->config_line[from[k][1]])
			f = from[k][1];
		else if (!log->config_line[f] && from[k][1] >= 0)
			f = from[k][1];
		if (f < 0 || !log->config_line[f])
			continue;
		if (f == VRT_ELC_MEM_FRACTION)
			snprintf(buf, sizeof(buf), "%.2f",
			         (double)log->config[f] / 1000);
		else
			snprintf(buf, sizeof(buf), "%" PRIu64, log->config[f]);
		row->value[k] = strdup(buf);
		if (!row->value[k])
			return -1;
		row->option[k] = VRT_RETEST_FROM_LOG;
		n++;
	}
	return n;
}
