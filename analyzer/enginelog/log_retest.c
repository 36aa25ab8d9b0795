/*
 * log_retest.c — a retest row (diagnose/retest.h) completed from the
 * engine's log: the settings the command lines left out, read from the
 * configuration the engine printed (enginelog.h). `table` calls it for a
 * run that carries its log. Pure: no I/O. Single-threaded.
 */
#include "log_retest.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "enginelog.h"

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
