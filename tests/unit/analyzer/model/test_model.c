/*
 * Unit tests of the model description (model.c, model_config.c): the
 * table of published configurations in tests/data/models (expected.tsv:
 * KV bytes per token, per-sequence state and one 32K sequence exact, the
 * model cards' parameter counts within 2%, quantized weight bytes), then
 * the arithmetic against budgets (sliding windows capped, tokens and
 * sequences that fit, recurrent state per sequence, tensor-parallel
 * replication, engine KV blocks and types), quantization formats on small
 * configs worked by hand, the defaults per model type, the errors, and a
 * description filled field by field as a GGUF reader will. TAP output.
 * argv[1]: the tests/data directory.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load/load.h"
#include "model/model.h"
#include "model/model_config.h"
#include "model/model_read.h"

#include "../tap.h"

#define GiB (1ull << 30)

static const char *datadir = "tests/data";

static int read_model(const char *name, const char *kv, struct vrt_model *m,
                      char *msg, size_t msgsz)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", datadir, name);
	return vrt_model_read(m, path, kv, msg, msgsz);
}

static int parse(const char *json, struct vrt_model *m, char *msg, size_t msgsz)
{
	return vrt_model_config_parse(m, json, strlen(json), msg, msgsz);
}

static void within(double got, double want, double tol, const char *what,
                   const char *file)
{
	ok(fabs(got - want) <= tol * want, "%s: %s %.4g within %.0f%% of %.4g",
	   file, what, got, tol * 100, want);
}

static int has_note(const struct vrt_model *m, const char *needle)
{
	size_t i;

	for (i = 0; i < m->nnotes; i++)
		if (strstr(m->notes[i], needle))
			return 1;
	return 0;
}

/* ---- the table ----------------------------------------------------------- */

static void table_row(char *line)
{
	char *f[8], *save = NULL, msg[600];
	struct vrt_model m;
	struct vrt_model_arith a;
	struct vrt_model_budget b;
	int n = 0;

	for (char *t = strtok_r(line, "\t\n", &save); t && n < 8;
	     t = strtok_r(NULL, "\t\n", &save))
		f[n++] = t;
	if (n != 8) {
		ok(0, "expected.tsv: a row of %d fields", n);
		return;
	}
	if (read_model(f[0], NULL, &m, msg, sizeof(msg))) {
		ok(0, "%s parses (%s)", f[0], msg);
		return;
	}
	ok(1, "%s parses", f[0]);
	EQ(m.kv_bytes_per_token, strtoull(f[1], NULL, 10), f[0]);
	EQ(m.state_bytes_per_seq, strtoull(f[2], NULL, 10), f[0]);
	EQ(vrt_model_seq_bytes(&m, 32768, 1, 1), strtoull(f[3], NULL, 10),
	   f[0]);
	if (strcmp(f[4], "-"))
		within((double)m.params_total / 1e9, atof(f[4]), 0.02,
		       "total parameters (B)", f[0]);
	if (strcmp(f[5], "-"))
		within((double)(m.params_active -
		                (strcmp(f[6], "noemb") ? 0
		                                       : m.params_embedding)) /
		               1e9,
		       atof(f[5]), 0.02,
		       strcmp(f[6], "noemb") ? "active parameters (B)"
		                             : "active parameters without the "
		                               "input embedding (B)",
		       f[0]);
	if (f[7][0] == '=')
		EQ(m.weight_bytes, strtoull(f[7] + 1, NULL, 10), f[0]);
	else if (f[7][0] == '~')
		within((double)m.weight_bytes, atof(f[7] + 1), 0.02,
		       "weight bytes", f[0]);
	else
		EQ(m.weight_bytes, m.params_total * m.dtype.block_bytes, f[0]);
	/* Any row solves against a budget without surprises. */
	memset(&b, 0, sizeof(b));
	b.kv_reserve_bytes = 8 * GiB;
	b.headroom_bytes = 8 * GiB;
	vrt_model_arith(&a, &m, &b);
	ok(a.have && a.max_tokens >= a.kv_reserve_tokens &&
	           a.params_total == m.params_total,
	   "%s: arithmetic against a 16 GiB budget", f[0]);
}

static void test_table(void)
{
	char path[4096], line[1024];
	FILE *f;
	int rows = 0;

	snprintf(path, sizeof(path), "%s/models/expected.tsv", datadir);
	f = fopen(path, "r");
	ok(f != NULL, "expected.tsv opens");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#' || line[0] == '\n')
			continue;
		table_row(line);
		rows++;
	}
	fclose(f);
	ok(rows >= 20, "the table has %d models (at least 20)", rows);
}

/* ---- two counts by hand -------------------------------------------------- */

/*
 * Llama-3-8B (bf16): KV/token = 2 x 32 x 8 x 128 x 2 = 131072 B.
 *   per layer: q,o 2 x 4096 x 4096 = 33554432; k,v 2 x 4096 x 1024 =
 *   8388608; MLP 3 x 4096 x 14336 = 176160768; norms 8192 -> 218112000;
 *   x 32 = 6979584000; embeddings + lm_head 2 x 128256 x 4096 =
 *   1050673152; final norm 4096 -> 8030261248 parameters (the published
 *   8,030,261,248), 16060522496 bytes in bf16.
 * Falcon-7B (bf16, multi_query, parallel attention): head_dim 4544 / 71 =
 *   64, 1 KV head: KV/token = 2 x 32 x 1 x 64 x 2 = 8192 B.
 *   per layer: query_key_value 4544 x (4544 + 2 x 64) = 21229568; dense
 *   4544 x 4544 = 20647936; MLP 2 x 4544 x 18176 = 165183488; one
 *   LayerNorm (weight and bias) 9088 -> 207070080; x 32 = 6626242560;
 *   tied embeddings 65024 x 4544 = 295469056; ln_f 9088 -> 6921720704.
 */
static void test_by_count(void)
{
	struct vrt_model m;
	char msg[600];

	ok(!read_model("llama3-8b.config.json", NULL, &m, msg, sizeof(msg)),
	   "llama3-8b parses");
	ok(m.kv_heads == 8 && m.head_dim == 128 && !m.tied,
	   "llama3: 8 KV heads of 128, separate head");
	EQ(m.params_total, 8030261248ull, "llama3: parameters");
	EQ(m.weight_bytes, 16060522496ull, "llama3: weight bytes (bf16)");
	ok(!read_model("falcon-7b.config.json", NULL, &m, msg, sizeof(msg)),
	   "falcon-7b parses");
	ok(m.kv_heads == 1 && m.head_dim == 64 && m.tied &&
	           !strcmp(m.group[0].label, "mqa"),
	   "falcon: multi_query is one KV head (MQA), tied head");
	EQ(m.params_total, 6921720704ull, "falcon: parameters");
	ok(!read_model("falcon-7b.config.json", "fp32", &m, msg, sizeof(msg)),
	   "falcon-7b with --kv-dtype fp32");
	EQ(m.kv_bytes_per_token, 16384, "falcon: fp32 KV doubles it");
}

/* ---- element types and the engine's flags -------------------------------- */

static void test_dtypes(void)
{
	struct vrt_model_dtype d;

	ok(!vrt_model_dtype("BFloat16", &d) && !strcmp(d.name, "bf16") &&
	           d.block_bytes == 2,
	   "bfloat16 is bf16, 2 bytes, any case");
	ok(!vrt_model_dtype("float8_e4m3fn", &d) && !strcmp(d.name, "fp8_e4m3"),
	   "float8_e4m3fn is fp8_e4m3");
	ok(!vrt_model_dtype("fp8_e5m2", &d) && d.block_bytes == 1,
	   "fp8_e5m2: 1 byte");
	ok(!vrt_model_dtype("int8", &d) && !strcmp(d.name, "int8"),
	   "int8 keeps its name");
	ok(!vrt_model_dtype("q8_0", &d) && vrt_model_dtype_size(&d, 128) == 136,
	   "q8_0: 128 elements in 4 blocks of 34 bytes");
	ok(!vrt_model_dtype("q4_0", &d) && vrt_model_dtype_size(&d, 33) == 36,
	   "q4_0: 33 elements round up to 2 blocks");
	ok(vrt_model_dtype("auto", NULL) == -1 && vrt_model_dtype("int3", NULL),
	   "auto and int3 name no type");
}

static void test_engine_flags(void)
{
	char *vllm[] = {"vllm",
	                "serve",
	                "m",
	                "--kv-cache-dtype=fp8_e5m2",
	                "--block-size",
	                "32",
	                "--mamba-ssm-cache-dtype",
	                "float32"};
	char *lcpp[] = {"llama-server",        "-m",   "x.gguf", "-ctk", "q8_0",
	                "--cache-type-v=q4_0", "-ctk", "f32"};
	char *sgl[] = {"python",      "-m", "sglang.launch_server",
	               "--page-size", "64", "--kv-cache-dtype",
	               "fp8_e4m3"};
	struct vrt_model_budget b;

	memset(&b, 0, sizeof(b));
	vrt_model_budget_argv(&b, vllm, sizeof(vllm) / sizeof(vllm[0]));
	ok(!strcmp(b.kv_dtype, "fp8_e5m2") &&
	           !strcmp(b.kv_dtype_v, "fp8_e5m2") && b.block_tokens == 32 &&
	           !strcmp(b.ssm_dtype, "float32") &&
	           !strcmp(b.kv_flag, "--kv-cache-dtype"),
	   "vLLM: --kv-cache-dtype=, --block-size, --mamba-ssm-cache-dtype");
	memset(&b, 0, sizeof(b));
	vrt_model_budget_argv(&b, lcpp, sizeof(lcpp) / sizeof(lcpp[0]));
	ok(!strcmp(b.kv_dtype, "q8_0") && !strcmp(b.kv_dtype_v, "q4_0") &&
	           !strcmp(b.kv_flag, "-ctk"),
	   "llama.cpp: K and V apart, the first -ctk wins (got %s/%s)",
	   b.kv_dtype, b.kv_dtype_v);
	memset(&b, 0, sizeof(b));
	vrt_model_budget_argv(&b, sgl, sizeof(sgl) / sizeof(sgl[0]));
	ok(b.block_tokens == 64 && !strcmp(b.kv_dtype, "fp8_e4m3"),
	   "SGLang: --page-size and --kv-cache-dtype");
	ok(vrt_model_engine("vllm") == VRT_MODEL_ENGINE_VLLM &&
	           vrt_model_engine("llama.cpp") == VRT_MODEL_ENGINE_LLAMACPP &&
	           vrt_model_engine(NULL) == VRT_MODEL_ENGINE_OTHER,
	   "engines by diagnose's names");
}

/* ---- KV types ------------------------------------------------------------ */

static void test_kv_types(void)
{
	struct vrt_model m;
	struct vrt_model_arith a;
	struct vrt_model_budget b;
	char msg[600];

	/* Llama-3-8B: 32 layers x 8 KV heads x (128 + 128). */
	ok(!read_model("llama3-8b.config.json", "fp8", &m, msg, sizeof(msg)),
	   "llama3-8b with --kv-dtype fp8");
	EQ(m.kv_bytes_per_token, 65536, "fp8 halves the KV per token");
	ok(!strcmp(m.kv_from, "--kv-dtype"), "the KV type says who chose it");
	ok(!read_model("llama3-8b.config.json", "q8_0", &m, msg, sizeof(msg)),
	   "llama3-8b with --kv-dtype q8_0");
	/* 128 elements = 4 blocks of 34 bytes, K and V, 8 heads, 32 layers */
	EQ(m.kv_bytes_per_token, 32 * 8 * 2 * 136, "q8_0: 34 bytes per 32");
	ok(read_model("llama3-8b.config.json", "int3", &m, msg, sizeof(msg)) ==
	                   -1 &&
	           strstr(msg, "unknown KV dtype 'int3'"),
	   "an unknown --kv-dtype is an error (%s)", msg);

	/* The engine's flag when --kv-dtype is not given. */
	read_model("llama3-8b.config.json", NULL, &m, msg, sizeof(msg));
	memset(&b, 0, sizeof(b));
	snprintf(b.kv_dtype, sizeof(b.kv_dtype), "fp8_e5m2");
	snprintf(b.kv_dtype_v, sizeof(b.kv_dtype_v), "fp8_e5m2");
	snprintf(b.kv_flag, sizeof(b.kv_flag), "--kv-cache-dtype");
	vrt_model_arith(&a, &m, &b);
	EQ(a.kv_bytes_per_token, 65536, "vLLM --kv-cache-dtype fp8_e5m2");
	ok(!strcmp(a.desc.kv_from, "--kv-cache-dtype"),
	   "arith: the engine flag chose it");
	snprintf(b.kv_dtype, sizeof(b.kv_dtype), "auto");
	snprintf(b.kv_dtype_v, sizeof(b.kv_dtype_v), "auto");
	vrt_model_arith(&a, &m, &b);
	EQ(a.kv_bytes_per_token, 131072, "--kv-cache-dtype auto: the model's");
	/* llama.cpp: -ctk q8_0 alone leaves V at its f16 default. */
	memset(&b, 0, sizeof(b));
	b.engine = VRT_MODEL_ENGINE_LLAMACPP;
	snprintf(b.kv_dtype, sizeof(b.kv_dtype), "q8_0");
	vrt_model_arith(&a, &m, &b);
	EQ(a.kv_bytes_per_token, 32 * 8 * (136 + 256),
	   "llama.cpp: K q8_0, V f16");
	snprintf(b.kv_dtype, sizeof(b.kv_dtype), "q3_k");
	vrt_model_arith(&a, &m, &b);
	ok(a.kv_bytes_per_token == 131072 && has_note(&a.desc, "'q3_k'"),
	   "llama.cpp: an unknown cache type is noted");
	snprintf(b.kv_dtype, sizeof(b.kv_dtype), "q8_0");
	/* --kv-dtype beats the engine's flag. */
	read_model("llama3-8b.config.json", "fp32", &m, msg, sizeof(msg));
	vrt_model_arith(&a, &m, &b);
	EQ(a.kv_bytes_per_token, 262144, "--kv-dtype fp32 over -ctk q8_0");
	/* An engine type this table does not know: noted, model dtype. */
	read_model("llama3-8b.config.json", NULL, &m, msg, sizeof(msg));
	memset(&b, 0, sizeof(b));
	snprintf(b.kv_dtype, sizeof(b.kv_dtype), "nvfp9");
	vrt_model_arith(&a, &m, &b);
	ok(a.kv_bytes_per_token == 131072 && has_note(&a.desc, "nvfp9"),
	   "an unknown engine KV type is noted");
	/* DeepSeek's MLA at vLLM's fp8_ds_mla: 656 bytes per token-layer. */
	read_model("models/deepseek-r1.json", "fp8_ds_mla", &m, msg,
	           sizeof(msg));
	EQ(m.kv_bytes_per_token, 61 * 656, "fp8_ds_mla: 656 B per layer");
	read_model("models/deepseek-r1.json", "fp8", &m, msg, sizeof(msg));
	EQ(m.kv_bytes_per_token, 61 * 576, "MLA at fp8: 576 B per layer");
}

/* ---- the arithmetic ------------------------------------------------------ */

static void budget(struct vrt_model_budget *b, uint64_t reserve, uint64_t head,
                   uint64_t ctx)
{
	memset(b, 0, sizeof(*b));
	b->kv_reserve_bytes = reserve;
	b->headroom_bytes = head;
	b->context_len = ctx;
}

static void test_arith_dense(void)
{
	struct vrt_model m;
	struct vrt_model_arith a;
	struct vrt_model_budget b;
	char msg[600];

	read_model("llama3-8b.config.json", NULL, &m, msg, sizeof(msg));
	budget(&b, 16 * GiB, 8 * GiB, 8192);
	b.engine = VRT_MODEL_ENGINE_VLLM;
	vrt_model_arith(&a, &m, &b);
	EQ(a.block_tokens, 16, "vLLM's default block of 16 tokens");
	EQ(a.kv_reserve_tokens, 131072, "16 GiB / 128 KiB");
	EQ(a.max_tokens, 196608, "24 GiB / 128 KiB");
	EQ(a.max_concurrency, 24, "24 sequences of 8192");
	EQ(a.max_context_single, 196608, "one sequence of 196608");
	EQ(a.kv_bytes_per_token_at_context, 131072,
	   "no window: same per token");
	/* Blocks: a 1000-token sequence takes 63 blocks of 16. */
	EQ(vrt_model_seq_bytes(&m, 1000, 16, 1), 1008ull * 131072,
	   "1000 tokens round up to 1008");
	/* No context anywhere: every layer holds the token. */
	m.context_len = 0;
	budget(&b, 16 * GiB, 8 * GiB, 0);
	vrt_model_arith(&a, &m, &b);
	ok(a.context_len == 0 && a.kv_reserve_tokens == 131072 &&
	           a.max_concurrency == 0,
	   "no context length: tokens only");
}

static void test_arith_sliding(void)
{
	struct vrt_model m;
	struct vrt_model_arith a;
	struct vrt_model_budget b;
	char msg[600];
	uint64_t seq;

	/* Gemma 2 9B: 21 full + 21 sliding (4096) layers of 8192 B. */
	read_model("models/gemma-2-9b.json", NULL, &m, msg, sizeof(msg));
	budget(&b, 16 * GiB, 0, 32768);
	vrt_model_arith(&a, &m, &b);
	EQ(a.kv_bytes_per_token, 42 * 8192, "short context: all 42 layers");
	EQ(a.kv_bytes_per_token_at_context, 21 * 8192 + 21 * 8192 / 8,
	   "at 32K the windowed half holds an eighth");
	seq = 21ull * 8192 * 32768 + 21ull * 8192 * 4096;
	EQ(a.seq_bytes_at_context, seq, "one 32K sequence");
	EQ(a.kv_reserve_tokens, 16 * GiB * 32768 / seq,
	   "tokens the reserve holds at 32K");
	/* Longest sequence: 21 x 8192 per token past the window plus the
	 * windowed layers' 21 x 8192 x 4096. */
	EQ(a.max_context_single, (16 * GiB - 21ull * 8192 * 4096) / (21 * 8192),
	   "the capped sum solved for one sequence");
	budget(&b, 16 * GiB, 0, 2048);
	vrt_model_arith(&a, &m, &b);
	EQ(a.kv_bytes_per_token_at_context, 42 * 8192,
	   "at 2K every layer holds every token");

	/* Mistral 7B v0.1: every layer windowed, no length exhausts it. */
	read_model("models/mistral-7b-v0.1.json", NULL, &m, msg, sizeof(msg));
	budget(&b, 16 * GiB, 0, 32768);
	vrt_model_arith(&a, &m, &b);
	EQ(a.max_context_single, VRT_MODEL_UNBOUNDED,
	   "all-sliding: one sequence of any length");
	EQ(a.max_concurrency, 32, "16 GiB / (32 x 4096 x 128 KiB / 32)");
	/* vLLM blocks: the window straddles one more block. */
	EQ(vrt_model_seq_bytes(&m, 32768, 16, 1), 4112ull * 131072,
	   "window 4096 + one block of 16");
	EQ(vrt_model_seq_bytes(&m, 100, 16, 1), 112ull * 131072,
	   "inside the window: rounded up to blocks only");
}

static void test_arith_state(void)
{
	struct vrt_model m;
	struct vrt_model_arith a;
	struct vrt_model_budget b;
	char msg[600];
	uint64_t seq, state = 28ull * (8192 * 3 * 2 + 8192 * 16 * 2);

	/* Jamba 1.5 Mini: 4 attention layers of 4096 B per token and 28
	 * Mamba layers of 311296 B per sequence. */
	read_model("models/jamba-1.5-mini.json", NULL, &m, msg, sizeof(msg));
	budget(&b, 10 * GiB, 0, 8192);
	vrt_model_arith(&a, &m, &b);
	seq = 4ull * 4096 * 8192 + state;
	EQ(a.state_bytes_per_seq, state, "Mamba state per sequence");
	EQ(a.seq_bytes_at_context, seq, "KV of 8192 tokens + state");
	EQ(a.max_concurrency, 10 * GiB / seq,
	   "sequences count their state once each");
	EQ(a.kv_reserve_tokens, 10 * GiB * 8192 / seq,
	   "tokens: the state's share taken out");
	EQ(a.max_context_single, (10 * GiB - state) / 16384,
	   "one sequence: state once, then 16 KiB per token");
	/* An SSM state kept in fp32 by the engine doubles that part. */
	snprintf(b.ssm_dtype, sizeof(b.ssm_dtype), "float32");
	vrt_model_arith(&a, &m, &b);
	EQ(a.state_bytes_per_seq, 28ull * (8192 * 3 * 2 + 8192 * 16 * 4),
	   "--mamba-ssm-cache-dtype float32");

	/* Pure Mamba: nothing per token. */
	read_model("models/falcon-mamba-7b.json", NULL, &m, msg, sizeof(msg));
	budget(&b, 1 * GiB, 0, 4096);
	vrt_model_arith(&a, &m, &b);
	ok(a.kv_bytes_per_token == 0 &&
	           a.max_context_single == VRT_MODEL_UNBOUNDED &&
	           a.max_concurrency == GiB / 19922944,
	   "pure Mamba: sequences, not tokens (%llu)",
	   (unsigned long long)a.max_concurrency);

	/* Whisper: cross-attention over 1500 encoder positions per
	 * sequence, self-attention per token. */
	read_model("models/whisper-large-v3.json", NULL, &m, msg, sizeof(msg));
	budget(&b, 4 * GiB, 0, 0);
	vrt_model_arith(&a, &m, &b);
	EQ(a.context_len, 448, "whisper: max_target_positions");
	EQ(a.seq_bytes_at_context, 448ull * 163840 + 245760000,
	   "448 decoder tokens + the encoder's K and V");
	ok(has_note(&m, "encoder layers hold no KV cache"),
	   "whisper: the encoder is noted");
}

static void test_arith_tp(void)
{
	struct vrt_model m;
	struct vrt_model_arith a;
	struct vrt_model_budget b;
	char msg[600];

	/* MLA: one latent, stored on every tensor-parallel rank. */
	read_model("models/deepseek-r1.json", NULL, &m, msg, sizeof(msg));
	budget(&b, 80 * GiB, 0, 32768);
	b.tp = 8;
	vrt_model_arith(&a, &m, &b);
	EQ(a.kv_bytes_per_token, 8ull * 61 * 1152, "MLA x 8 ranks");
	EQ(a.kv_reserve_tokens, 80 * GiB / (8ull * 61 * 1152),
	   "the reserve across 8 ranks");
	/* GQA with fewer KV heads than ranks: at least one per rank. */
	read_model("models/llama-3.1-70b-instruct.json", NULL, &m, msg,
	           sizeof(msg));
	b.tp = 16;
	vrt_model_arith(&a, &m, &b);
	EQ(a.kv_bytes_per_token, 2ull * 327680, "8 KV heads over 16 ranks");
	b.tp = 8;
	vrt_model_arith(&a, &m, &b);
	EQ(a.kv_bytes_per_token, 327680, "8 KV heads over 8 ranks: none");
}

/* ---- parameters by type -------------------------------------------------- */

/* A small dense model: H 256, I 512, 2 layers, 4 heads of 64, 2 KV
 * heads, vocabulary 1000. Per layer: q 256x256, k and v 256x128, o
 * 256x256, gate/up/down 3 x 256x512: 589824 linear parameters, output
 * dims 2048; norms 2 x 256. */
#define TINY_LIN   (2ull * 589824)
#define TINY_OUT   (2ull * 2048)
#define TINY_IN    (2ull * (6 * 256 + 512))
#define TINY_OTHER (2000ull * 256 + 2 * 512 + 256) /* emb, head, norms */
#define TINY(extra)                                                            \
	"{\"model_type\": \"llama\", \"hidden_size\": 256, "                   \
	"\"intermediate_size\": 512, \"num_hidden_layers\": 2, "               \
	"\"num_attention_heads\": 4, \"num_key_value_heads\": 2, "             \
	"\"vocab_size\": 1000, \"torch_dtype\": \"bfloat16\"" extra "}"

/* One quantization_config on the tiny model: its weight bytes. */
static void quant_case(struct vrt_model *m, const char *json, uint64_t want,
                       const char *what)
{
	char msg[600];

	if (parse(json, m, msg, sizeof(msg))) {
		ok(0, "%s: parses (%s)", what, msg);
		return;
	}
	EQ(m->weight_bytes, want, what);
}

#define QC(body) TINY(", \"quantization_config\": {" body "}")

static void test_quantization(void)
{
	struct vrt_model m;

	quant_case(&m, TINY(""), 2 * (TINY_LIN + TINY_OTHER),
	           "tiny: bf16 bytes");
	EQ(m.params_total, TINY_LIN + TINY_OTHER, "tiny: parameters");
	quant_case(&m,
	           QC("\"quant_method\": \"awq\", \"bits\": 4, "
	              "\"group_size\": 128, \"zero_point\": false"),
	           TINY_LIN / 2 + TINY_LIN / 128 * 2 + 2 * TINY_OTHER,
	           "awq: codes and fp16 scales, no zeros");
	quant_case(&m,
	           QC("\"quant_method\": \"gptq\", \"bits\": 8, "
	              "\"group_size\": -1"),
	           TINY_LIN + TINY_OUT * 2 + TINY_OUT + TINY_IN * 4 +
	                   2 * TINY_OTHER,
	           "gptq 8-bit per channel: scales and zeros per output, "
	           "g_idx per input");
	ok(!strcmp(m.quant, "int8 gptq per-channel"), "gptq: named (%s)",
	   m.quant);
	quant_case(&m,
	           QC("\"quant_method\": \"fp8\", \"activation_scheme\": "
	              "\"static\""),
	           TINY_LIN + 14 * 4 * 2 + 2 * TINY_OTHER,
	           "fp8: one weight and one input scale per matrix (14)");
	quant_case(&m,
	           QC("\"quant_method\": \"compressed-tensors\", "
	              "\"config_groups\": {\"group_0\": {\"targets\": "
	              "[\"Linear\"], \"weights\": {\"num_bits\": 8, \"type\": "
	              "\"float\", \"strategy\": \"channel\", \"symmetric\": "
	              "true}}}, \"ignore\": [\"lm_head\"]"),
	           TINY_LIN + TINY_OUT * 2 + 2 * TINY_OTHER,
	           "compressed-tensors fp8: bf16 scale per output channel");
	quant_case(
	        &m,
	        QC("\"quant_method\": \"compressed-tensors\", "
	           "\"config_groups\": {\"group_0\": {\"weights\": "
	           "{\"num_bits\": 4, \"type\": \"int\", \"strategy\": "
	           "\"group\", \"group_size\": 64, \"symmetric\": false}}}"),
	        TINY_LIN / 2 + TINY_LIN / 64 * 2 + TINY_LIN / 64 / 2 +
	                2 * TINY_OTHER,
	        "compressed-tensors int4 asymmetric: scales and zero points");
	quant_case(&m,
	           QC("\"load_in_4bit\": true, \"bnb_4bit_quant_type\": "
	              "\"nf4\", \"bnb_4bit_use_double_quant\": true"),
	           TINY_LIN / 2 + TINY_LIN / 64 + TINY_LIN / (64 * 256) * 4 +
	                   2 * TINY_OTHER,
	           "nf4 double quantization: 8-bit absmax per 64, fp32 per "
	           "256 blocks");
	quant_case(&m,
	           QC("\"quant_method\": \"bitsandbytes\", \"load_in_8bit\": "
	              "true"),
	           TINY_LIN + TINY_OUT * 4 + 2 * TINY_OTHER,
	           "int8: an fp32 scale per output row");
	quant_case(&m, QC("\"quant_method\": \"hqq\""),
	           2 * (TINY_LIN + TINY_OTHER),
	           "an unknown method: weights at the model's dtype");
	ok(has_note(&m, "\"hqq\" is not known"), "an unknown method is noted");
}

static void test_defaults(void)
{
	struct vrt_model m;
	char msg[600];

	/* tie_word_embeddings per type when the config says nothing. */
	parse(TINY(""), &m, msg, sizeof(msg));
	ok(!m.tied, "llama: untied by default (LlamaConfig)");
	parse("{\"model_type\": \"gemma\", \"hidden_size\": 256, "
	      "\"intermediate_size\": 512, \"num_hidden_layers\": 2, "
	      "\"num_attention_heads\": 4, \"head_dim\": 64, "
	      "\"vocab_size\": 1000}",
	      &m, msg, sizeof(msg));
	ok(m.tied, "gemma: tied by default (GemmaConfig)");
	parse("{\"model_type\": \"brand_new\", \"hidden_size\": 256, "
	      "\"intermediate_size\": 512, \"num_hidden_layers\": 2, "
	      "\"num_attention_heads\": 4, \"vocab_size\": 1000}",
	      &m, msg, sizeof(msg));
	ok(m.tied && has_note(&m, "\"brand_new\" is not known"),
	   "an unknown type: the base class's tied head, noted");
	/* float32 checkpoints are served in 16 bits. */
	parse("{\"model_type\": \"llama\", \"hidden_size\": 256, "
	      "\"intermediate_size\": 512, \"num_hidden_layers\": 2, "
	      "\"num_attention_heads\": 4, \"vocab_size\": 1000, "
	      "\"torch_dtype\": \"float32\"}",
	      &m, msg, sizeof(msg));
	ok(m.dtype.block_bytes == 2 && has_note(&m, "float32 checkpoint") &&
	           m.kv_bytes_per_token == 2 * 2 * 4 * 64 * 2,
	   "float32 config: fp16 weights and KV");
	/* Gemma 3's text config leaves heads and vocabulary to defaults. */
	read_model("models/gemma-3-4b-it.json", NULL, &m, msg, sizeof(msg));
	ok(m.heads == 8 && m.kv_heads == 4 && m.head_dim == 256 &&
	           m.vocab == 262208 && m.tied,
	   "gemma-3-4b-it: Gemma3TextConfig's defaults");
	ok(m.params_vision > 4.1e8 && m.params_vision < 4.3e8,
	   "gemma-3-4b-it: SigLIP tower and projector %.3fB",
	   (double)m.params_vision / 1e9);
	/* Qwen2's window only with use_sliding_window. */
	read_model("models/qwen2.5-7b-instruct.json", NULL, &m, msg,
	           sizeof(msg));
	ok(m.ngroups == 1 && m.group[0].kind == VRT_MODEL_FULL,
	   "qwen2.5: sliding_window without use_sliding_window is full");
	parse("{\"model_type\": \"qwen2\", \"hidden_size\": 256, "
	      "\"intermediate_size\": 512, \"num_hidden_layers\": 4, "
	      "\"num_attention_heads\": 4, \"vocab_size\": 1000, "
	      "\"sliding_window\": 1024, \"use_sliding_window\": true, "
	      "\"max_window_layers\": 1}",
	      &m, msg, sizeof(msg));
	ok(m.ngroups == 2 && m.group[0].layers == 1 &&
	           m.group[1].kind == VRT_MODEL_SLIDING &&
	           m.group[1].layers == 3 && m.group[1].window == 1024,
	   "qwen2 with use_sliding_window: layers from max_window_layers");
	/* gpt-oss without layer_types: GptOssConfig's even layers. */
	parse("{\"model_type\": \"gpt_oss\", \"hidden_size\": 256, "
	      "\"intermediate_size\": 256, \"num_hidden_layers\": 4, "
	      "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
	      "\"head_dim\": 64, \"vocab_size\": 1000, "
	      "\"sliding_window\": 128, \"num_local_experts\": 4, "
	      "\"num_experts_per_tok\": 2}",
	      &m, msg, sizeof(msg));
	ok(m.ngroups == 2 && m.group[0].kind == VRT_MODEL_FULL &&
	           m.group[0].layers == 2 && m.group[1].layers == 2 &&
	           m.group[1].window == 128 && !m.tied && m.moe_layers == 4,
	   "gpt_oss: half the layers windowed, experts everywhere");
	/* DeepSeek's MTP layer is named, not counted. */
	read_model("models/deepseek-r1.json", NULL, &m, msg, sizeof(msg));
	ok(has_note(&m, "multi-token-prediction") && m.experts == 256 &&
	           m.experts_per_token == 8 && m.shared_experts == 1 &&
	           m.moe_layers == 58,
	   "deepseek-r1: 58 MoE layers, the MTP layer noted");
}

/* ---- errors -------------------------------------------------------------- */

static void test_errors(void)
{
	struct vrt_model m;
	char msg[600];
	char many[200];

	ok(parse("{\"num_hidden_layers\": 2,", &m, msg, sizeof(msg)) == -1 &&
	           strstr(msg, "invalid JSON at line 1"),
	   "invalid JSON with its position (%s)", msg);
	ok(parse("[1, 2]", &m, msg, sizeof(msg)) == -1 &&
	           strstr(msg, "not a JSON object"),
	   "not an object (%s)", msg);
	ok(parse("{\"num_hidden_layers\": 2, \"hidden_size\": 64, "
	         "\"vocab_size\": 10}",
	         &m, msg, sizeof(msg)) == -1 &&
	           strstr(msg, "missing key \"num_attention_heads\""),
	   "missing key named (%s)", msg);
	ok(parse("{\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
	         "\"num_key_value_heads\": 3, \"hidden_size\": 64, "
	         "\"vocab_size\": 10}",
	         &m, msg, sizeof(msg)) == -1 &&
	           strstr(msg, "does not divide"),
	   "KV heads that do not divide (%s)", msg);
	ok(parse("{\"num_hidden_layers\": -2, \"num_attention_heads\": 4, "
	         "\"hidden_size\": 64, \"vocab_size\": 10}",
	         &m, msg, sizeof(msg)) == -1 &&
	           strstr(msg, "\"num_hidden_layers\" is not a positive"),
	   "a negative layer count (%s)", msg);
	ok(parse("{\"model_type\": \"gpt_oss\", \"num_hidden_layers\": 2, "
	         "\"num_attention_heads\": 4, \"hidden_size\": 64, "
	         "\"vocab_size\": 10, \"layer_types\": [\"full_attention\"]}",
	         &m, msg, sizeof(msg)) == -1 &&
	           strstr(msg, "layer_types has 1 entries for 2 layers"),
	   "layer_types of the wrong length (%s)", msg);
	ok(parse("{\"num_hidden_layers\": 1, \"num_attention_heads\": 4, "
	         "\"hidden_size\": 64, \"vocab_size\": 10, \"layer_types\": "
	         "[\"quantum_attention\"]}",
	         &m, msg, sizeof(msg)) == -1 &&
	           strstr(msg, "\"quantum_attention\" of layer 0 is not known"),
	   "an unknown layer type (%s)", msg);
	ok(parse("{\"model_type\": \"nemotron_h\", \"num_hidden_layers\": 3, "
	         "\"hybrid_override_pattern\": \"M*\"}",
	         &m, msg, sizeof(msg)) == -1 &&
	           strstr(msg, "hybrid_override_pattern has 2 layers"),
	   "a hybrid pattern of the wrong length (%s)", msg);
	snprintf(many, sizeof(many),
	         "{\"num_hidden_layers\": 5000, \"num_attention_heads\": 4, "
	         "\"hidden_size\": 64, \"vocab_size\": 10}");
	ok(parse(many, &m, msg, sizeof(msg)) == -1 && strstr(msg, "is over"),
	   "too many layers (%s)", msg);
	ok(parse("{\"model_type\": \"mixtral\", \"num_hidden_layers\": 1, "
	         "\"num_attention_heads\": 4, \"hidden_size\": 64, "
	         "\"vocab_size\": 10, \"num_local_experts\": 2, "
	         "\"num_experts_per_tok\": 3}",
	         &m, msg, sizeof(msg)) == -1 &&
	           strstr(msg, "exceeds the 2 experts"),
	   "more experts per token than experts (%s)", msg);
	ok(read_model("no-such.json", NULL, &m, msg, sizeof(msg)) == -1 &&
	           strstr(msg, "cannot read"),
	   "a missing file (%s)", msg);
}

/* ---- a description filled field by field --------------------------------- */

static void test_by_hand(void)
{
	struct vrt_model m;
	struct vrt_model_group *g;
	struct vrt_model_arith a;
	struct vrt_model_budget b;
	char f[256];

	/* What a GGUF reader has: layers, heads, KV heads, head dim,
	 * context, the cache and weight types, tensor sizes. */
	memset(&m, 0, sizeof(m));
	snprintf(m.source, sizeof(m.source), "gguf");
	vrt_model_dtype("f16", &m.dtype);
	m.layers = 32;
	m.context_len = 8192;
	g = vrt_model_add_group(&m, VRT_MODEL_FULL, "gqa", 24);
	g->kv_heads = 8;
	g->k_dim = g->v_dim = 128;
	g = vrt_model_add_group(&m, VRT_MODEL_SLIDING, "sliding", 8);
	g->kv_heads = 8;
	g->k_dim = g->v_dim = 128;
	g->window = 1024;
	ok(!vrt_model_set_kv_dtype(&m, "q8_0", "f16", "-ctk/-ctv"),
	   "cache types set");
	m.params_total = m.params_active = 8000000000ull;
	m.nweights = 1;
	snprintf(m.weights[0].what, sizeof(m.weights[0].what), "q4_K");
	m.weights[0].params = m.params_total;
	m.weights[0].bytes = 4800000000ull;
	vrt_model_finish(&m);
	EQ(m.kv_bytes_per_token, 32ull * 8 * (136 + 256),
	   "by hand: K q8_0 + V f16 per token");
	EQ(m.weight_bytes, 4800000000ull, "by hand: weight bytes summed");
	budget(&b, 4 * GiB, 0, 0);
	vrt_model_arith(&a, &m, &b);
	EQ(a.seq_bytes_at_context,
	   24ull * 8192 * 8 * 392 + 8ull * 1024 * 8 * 392,
	   "by hand: the description's own context");
	vrt_model_kv_formula(&m, f, sizeof(f));
	ok(!strcmp(f, "24 full + 8 sliding (window 1024) layers x 8 KV heads "
	              "x (128 + 128) at K q8_0, V fp16"),
	   "formula: '%s'", f);
	ok(vrt_model_set_kv_dtype(&m, "int3", NULL, "x") == -1 &&
	           !strcmp(m.kv_k.name, "q8_0"),
	   "an unknown cache type leaves the description as it was");
}

static void test_formula(void)
{
	struct vrt_model m;
	char msg[600], f[256];

	read_model("models/deepseek-r1.json", NULL, &m, msg, sizeof(msg));
	vrt_model_kv_formula(&m, f, sizeof(f));
	ok(!strcmp(f, "61 MLA layers x 576 latent x 2 B bf16"), "MLA: '%s'", f);
	read_model("models/gemma-2-9b.json", "q4_0", &m, msg, sizeof(msg));
	vrt_model_kv_formula(&m, f, sizeof(f));
	ok(!strcmp(f, "21 full + 21 sliding (window 4096) layers x 8 KV "
	              "heads x (256 + 256) x q4_0 (18 B per 32)"),
	   "windows and blocks: '%s'", f);
	read_model("models/falcon-mamba-7b.json", NULL, &m, msg, sizeof(msg));
	vrt_model_kv_formula(&m, f, sizeof(f));
	ok(!strcmp(f, "no attention layer"), "no attention: '%s'", f);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		datadir = argv[1];
	test_table();
	test_by_count();
	test_dtypes();
	test_engine_flags();
	test_kv_types();
	test_arith_dense();
	test_arith_sliding();
	test_arith_state();
	test_arith_tp();
	test_quantization();
	test_defaults();
	test_errors();
	test_by_hand();
	test_formula();
	printf("1..%d\n", ntests);
	return nfailed ? 1 : 0;
}
