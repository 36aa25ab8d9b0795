/*
 * enginelog_command.c — the server's command line rebuilt from what its
 * log printed: vLLM's dict of non-default arguments, SGLang's ServerArgs,
 * TGI's Args (which also give the configuration), and for engines that
 * print no argument list (llama.cpp, TGI) the configuration read.
 * Single-threaded per log.
 */
#include "enginelog_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The server's command line rebuilt from a Python dict of its arguments
 * (vLLM's "non-default args: {'model': 'x', 'max_model_len': 8192}"):
 * each key as --key-with-dashes VALUE, True as the flag alone, False and
 * None left out; prog comes first and the model (model_tag, else model)
 * after it. */
void vrt_enginelog_command_from_dict(struct vrt_enginelog *log, int engine,
                                     const char *prog, const char *dict)
{
	char out[VRT_ENGINELOG_CMD], model[256] = "", key[64], val[256];
	const char *p = dict;
	size_t n = 0;

	out[0] = '\0';
	while ((p = strchr(p, '\''))) {
		size_t k = 0, v = 0;
		const char *q = p + 1;
		while (*q && *q != '\'' && k + 1 < sizeof(key))
			key[k++] = *q++;
		key[k] = '\0';
		if (*q != '\'' || q[1] != ':')
			break;
		q += 2;
		while (vrt_enginelog_scan_blank(*q))
			q++;
		if (*q == '\'' || *q == '"') {
			char quote = *q++;
			while (*q && *q != quote && v + 1 < sizeof(val))
				val[v++] = *q++;
			if (*q)
				q++;
		} else if (*q == '[' || *q == '{' || *q == '(') {
			/* a list or a dict: not a flag we can rewrite */
			int depth = 0;
			do {
				if (*q == '[' || *q == '{' || *q == '(')
					depth++;
				else if (*q == ']' || *q == '}' || *q == ')')
					depth--;
				q++;
			} while (*q && depth);
			v = 0;
			key[0] = '\0';
		} else {
			while (*q && *q != ',' && *q != '}' &&
			       v + 1 < sizeof(val))
				val[v++] = *q++;
		}
		val[v] = '\0';
		p = q;
		if (!key[0] || !strcmp(val, "None") || !strcmp(val, "False"))
			continue;
		if (!strcmp(key, "model_tag") || (!strcmp(key, "model") &&
		                                  !model[0])) {
			snprintf(model, sizeof(model), "%s", val);
			continue;
		}
		if (!strcmp(key, "model"))
			continue;
		for (k = 0; key[k]; k++)
			if (key[k] == '_')
				key[k] = '-';
		if (n + strlen(key) + strlen(val) + 8 >= sizeof(out))
			break;
		n += (size_t)snprintf(out + n, sizeof(out) - n, " --%s", key);
		if (strcmp(val, "True"))
			n += (size_t)snprintf(out + n, sizeof(out) - n, " %s",
			                      val);
	}
	snprintf(log->command, sizeof(log->command), "%s%s%s%s", prog,
	         model[0] ? " " : "", model, out);
	log->command_engine = engine;
}

/* SGLang's server_args=ServerArgs(model_path='m', tp_size=2, ...) as a
 * command line: the arguments that size memory and the model. */
void vrt_enginelog_command_sglang(struct vrt_enginelog *log, const char *args)
{
	static const struct {
		const char *key, *flag;
	} keys[] = {{"tp_size=", "--tp-size"},
	            {"mem_fraction_static=", "--mem-fraction-static"},
	            {"context_length=", "--context-length"},
	            {"max_running_requests=", "--max-running-requests"},
	            {"max_total_tokens=", "--max-total-tokens"},
	            {"chunked_prefill_size=", "--chunked-prefill-size"},
	            {"cuda_graph_max_bs=", "--cuda-graph-max-bs"},
	            {"dp_size=", "--dp-size"},
	            {"pp_size=", "--pp-size"},
	            {"kv_cache_dtype=", "--kv-cache-dtype"},
	            {"quantization=", "--quantization"},
	            {"port=", "--port"}};
	char out[VRT_ENGINELOG_CMD], val[160];
	const char *p;
	size_t n = 0, k, v;

	n = (size_t)snprintf(out, sizeof(out),
	                     "python -m sglang.launch_server");
	if ((p = vrt_enginelog_scan_find(args, "model_path='"))) {
		p += 12;
		v = strcspn(p, "'");
		if (v < sizeof(val) && n + v + 16 < sizeof(out))
			n += (size_t)snprintf(out + n, sizeof(out) - n,
			                      " --model-path %.*s", (int)v, p);
	}
	for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		const char *at;
		for (at = args; (at = vrt_enginelog_scan_find(at, keys[k].key));
		     at++)
			if (at == args || at[-1] == ' ' || at[-1] == '(')
				break;
		if (!at)
			continue;
		p = at + strlen(keys[k].key);
		if (*p == '\'')
			p++;
		v = strcspn(p, "',)");
		if (!v || v >= sizeof(val) || !strncmp(p, "None", 4) ||
		    n + v + strlen(keys[k].flag) + 3 >= sizeof(out))
			continue;
		/* defaults SGLang prints that no one set */
		if (!strcmp(keys[k].key, "dp_size=") && v == 1 && *p == '1')
			continue;
		if (!strcmp(keys[k].key, "pp_size=") && v == 1 && *p == '1')
			continue;
		if (!strcmp(keys[k].key, "tp_size=") && v == 1 && *p == '1')
			continue;
		if (!strcmp(keys[k].key, "kv_cache_dtype=") &&
		    !strncmp(p, "auto", 4))
			continue;
		n += (size_t)snprintf(out + n, sizeof(out) - n, " %s %.*s",
		                      keys[k].flag, (int)v, p);
	}
	snprintf(log->command, sizeof(log->command), "%s", out);
	log->command_engine = VRT_ENGINELOG_SGLANG;
}

/* The launcher prints its Args with {:#?} ("Args {", then one field a
 * line, "    max_total_tokens: Some(" with the value on the next line, a
 * closing "}") or with {:?} on one line. Returns 1 for the lines it
 * consumed. */
int vrt_enginelog_command_tgi_args(struct vrt_enginelog *log, const char *msg)
{
	static const struct {
		const char *key;
		int field;
	} keys[] = {{"max_total_tokens:", VRT_ELC_MAX_MODEL_LEN},
	            {"max_concurrent_requests:", VRT_ELC_MAX_NUM_SEQS},
	            {"cuda_memory_fraction:", VRT_ELC_MEM_FRACTION},
	            {"num_shard:", VRT_ELC_TP},
	            {"max_batch_prefill_tokens:", VRT_ELC_BATCH}};
	const char *q = msg;
	size_t k, n = strlen(msg);
	double v, tol;

	if (n >= 6 && !strcmp(msg + n - 6, "Args {")) {
		log->tgi_args = 1;
		vrt_enginelog_record_vote(log, VRT_ENGINELOG_TGI, 2);
		return 1;
	}
	if (!log->tgi_args && !vrt_enginelog_scan_find(msg, "Args { "))
		return 0;
	while (vrt_enginelog_scan_blank(*q))
		q++;
	if (log->tgi_args && *q == '}') {
		log->tgi_args = 0;
		return 1;
	}
	{
		const char *m = vrt_enginelog_scan_find(msg, "model_id: \"");
		size_t l = m ? strcspn(m + 11, "\"") : 0;
		if (m && l < sizeof(log->model))
			snprintf(log->model, sizeof(log->model), "%.*s", (int)l,
			         m + 11);
	}
	if (log->pending_key[0]) {
		for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			if (!strcmp(log->pending_key, keys[k].key) &&
			    vrt_enginelog_scan_number(q, 0, 0, &v, &tol))
				vrt_enginelog_record_config(
				        log, VRT_ENGINELOG_TGI, keys[k].field,
				        keys[k].field == VRT_ELC_MEM_FRACTION
				                ? v * 1000
				                : v);
		log->pending_key[0] = '\0';
		return 1;
	}
	for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		const char *at = vrt_enginelog_scan_find(msg, keys[k].key), *p;
		if (!at || (at > msg && at[-1] != ' ' && at[-1] != '{'))
			continue;
		p = at + strlen(keys[k].key);
		while (vrt_enginelog_scan_blank(*p))
			p++;
		if (!strcmp(p, "Some(")) {
			snprintf(log->pending_key, sizeof(log->pending_key),
			         "%s", keys[k].key);
			return 1;
		}
		if (!strncmp(p, "Some(", 5))
			p += 5;
		if (vrt_enginelog_scan_number(p, 0, 0, &v, &tol))
			vrt_enginelog_record_config(
			        log, VRT_ENGINELOG_TGI, keys[k].field,
			        keys[k].field == VRT_ELC_MEM_FRACTION ? v * 1000
			                                              : v);
	}
	return 1;
}

/* A command line from the configuration the log printed, for engines
 * that print no argument list (llama.cpp, TGI). */
void vrt_enginelog_command_from_config(struct vrt_enginelog *log)
{
	const uint64_t *v = log->config;
	const uint32_t *at = log->config_line;
	char out[VRT_ENGINELOG_CMD];
	size_t n = 0;

#define ARG(field, flag)                                                     \
	do {                                                                 \
		if (at[field] && n + 40 < sizeof(out))                       \
			n += (size_t)snprintf(out + n, sizeof(out) - n,      \
			                      " " flag " %" PRIu64, v[field]); \
	} while (0)
	if (log->engine == VRT_ENGINELOG_LLAMACPP) {
		n = (size_t)snprintf(out, sizeof(out), "llama-server -m %s",
		                     log->model[0] ? log->model : "MODEL.gguf");
		ARG(VRT_ELC_CTX_SIZE, "-c");
		if (at[VRT_ELC_SLOTS] && v[VRT_ELC_SLOTS] > 1)
			ARG(VRT_ELC_SLOTS, "-np");
		ARG(VRT_ELC_GPU_LAYERS, "-ngl");
		ARG(VRT_ELC_BATCH, "-b");
		ARG(VRT_ELC_UBATCH, "-ub");
		if (at[VRT_ELC_FLASH_ATTN] && n + 8 < sizeof(out))
			n += (size_t)snprintf(
			        out + n, sizeof(out) - n, " -fa %s",
			        v[VRT_ELC_FLASH_ATTN] ? "on" : "off");
	} else if (log->engine == VRT_ENGINELOG_TGI) {
		n = (size_t)snprintf(out, sizeof(out),
		                     "text-generation-launcher --model-id %s",
		                     log->model[0] ? log->model : "MODEL");
		ARG(VRT_ELC_TP, "--num-shard");
		ARG(VRT_ELC_MAX_MODEL_LEN, "--max-total-tokens");
		ARG(VRT_ELC_MAX_NUM_SEQS, "--max-concurrent-requests");
		ARG(VRT_ELC_BATCH, "--max-batch-prefill-tokens");
		if (at[VRT_ELC_MEM_FRACTION] && n + 40 < sizeof(out))
			n += (size_t)snprintf(out + n, sizeof(out) - n,
			                      " --cuda-memory-fraction %.2f",
			                      (double)v[VRT_ELC_MEM_FRACTION] /
			                              1000);
	} else {
		return;
	}
#undef ARG
	snprintf(log->command, sizeof(log->command), "%s", out);
	log->command_engine = log->engine;
}
