/*
 * Unit tests of the GGUF reader (gguf.c) through vrt_model_read, on the
 * small files tests/data/mkgguf.py writes (argv[1]: the directory they
 * were written to): the description of each (layers, heads, KV bytes per
 * token by layer type, parameters, weight bytes by ggml type, the
 * quantization name), the errors of the malformed ones, and every prefix
 * and many one-byte corruptions of a real-sized head, which must give a
 * description or an error, never a crash (run under the sanitizers too).
 * The expected numbers are worked out from the shapes mkgguf.py writes.
 * TAP output.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gguf.h"
#include "model/model.h"
#include "model/model_read.h"

#include "../tap.h"

#define GiB (1ull << 30)

static const char *dir = ".";

static int read_gguf(const char *name, struct vrt_model *m, char *msg, size_t n)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return vrt_model_read(m, path, NULL, msg, n);
}

static uint8_t *slurp(const char *name, size_t *len)
{
	char path[4096];
	FILE *f;
	uint8_t *b;
	long n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc((size_t)n + 1);
	if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return b;
}

static const struct vrt_model_weights *weights_of(const struct vrt_model *m,
                                                  const char *what)
{
	size_t i;

	for (i = 0; i < m->nweights; i++)
		if (!strcmp(m->weights[i].what, what))
			return &m->weights[i];
	return NULL;
}

/* Llama 3.1 8B at Q4_K_M: 32 layers of GQA (8 KV heads of 128), f16 KV:
 * 32 x 8 x (128 + 128) x 2 B = 128 KiB per token. Parameters: per layer
 * 2 x 4096 (norms) + 2 x 4096^2 (q, o) + 2 x 4096 x 1024 (k, v) + 3 x
 * 4096 x 14336 (ffn) = 218,112,000; x 32 + 2 x 4096 x 128256 (embedding,
 * output) + 4096 = 8,030,261,248. Bytes: q4_K 144 per 256, q6_K 210 per
 * 256, f32 4: even layers 138,936,320, odd 122,716,160, embedding
 * 295,501,824, output 430,940,160, output norm 16,384: 4,912,898,048. */
static void llama(void)
{
	struct vrt_model m;
	char msg[512] = "";
	const struct vrt_model_weights *w;

	ok(!read_gguf("llama3-8b-q4_k_m.gguf", &m, msg, sizeof(msg)),
	   "llama: read (%s)", msg);
	ok(!strcmp(m.source, "gguf") && !strcmp(m.model_type, "llama"),
	   "llama: source gguf, type llama (%s, %s)", m.source, m.model_type);
	ok(!strcmp(m.architecture, "Meta Llama 3.1 8B Instruct"),
	   "llama: general.name kept (%s)", m.architecture);
	EQ(m.layers, 32, "llama: layers");
	EQ(m.heads, 32, "llama: heads");
	EQ(m.kv_heads, 8, "llama: KV heads");
	EQ(m.head_dim, 128, "llama: head dim (embedding / heads)");
	EQ(m.context_len, 131072, "llama: context length");
	EQ(m.vocab, 300, "llama: vocabulary (tokenizer.ggml.tokens)");
	EQ(m.ngroups, 1, "llama: one layer type");
	ok(m.ngroups && m.group[0].kind == VRT_MODEL_FULL &&
	           !strcmp(m.group[0].label, "gqa"),
	   "llama: full attention, gqa");
	ok(!strcmp(m.kv_k.name, "fp16") && !strcmp(m.kv_v.name, "fp16"),
	   "llama: KV f16 (llama.cpp's default)");
	EQ(m.kv_bytes_per_token, 131072, "llama: KV bytes per token");
	EQ(m.params_total, 8030261248ull, "llama: parameters");
	EQ(m.params_active, 8030261248ull, "llama: active = total (dense)");
	EQ(m.params_embedding, 525336576ull, "llama: embedding parameters");
	ok(!m.tied, "llama: output head apart from the embedding");
	EQ(m.weight_bytes, 4912898048ull, "llama: weight bytes");
	EQ(m.block_weight_bytes, 4186439680ull, "llama: block weight bytes");
	w = weights_of(&m, "q6_K");
	ok(w && w->params == 16 * (4194304ull + 58720256) + 525336576ull,
	   "llama: q6_K parameters (v and down of even layers, output)");
	ok(!strcmp(m.gguf_type, "Q4_K_M") && !strcmp(m.quant, "gguf Q4_K_M"),
	   "llama: quantization Q4_K_M (%s)", m.quant);
}

/* Mixtral 8x7B at Q8_0: 46,702,661,632 parameters, 12,879,794,176 active
 * (2 of 8 experts); Q8_0 34 bytes per 32. */
static void mixtral(void)
{
	struct vrt_model m;
	char msg[512] = "";

	ok(!read_gguf("mixtral-8x7b-q8_0.gguf", &m, msg, sizeof(msg)),
	   "mixtral: read (%s)", msg);
	EQ(m.experts, 8, "mixtral: experts");
	EQ(m.experts_per_token, 2, "mixtral: experts per token");
	EQ(m.moe_layers, 32, "mixtral: MoE layers");
	EQ(m.params_total, 46702661632ull, "mixtral: parameters");
	EQ(m.params_active, 12879794176ull, "mixtral: active parameters");
	EQ(m.weight_bytes, 49625055232ull, "mixtral: weight bytes");
	EQ(m.kv_bytes_per_token, 32 * 8 * 256 * 2, "mixtral: KV per token");
	ok(!strcmp(m.gguf_type, "Q8_0"), "mixtral: Q8_0 (%s)", m.gguf_type);
}

/* DeepSeek-V2-Lite: 27 MLA layers of a 512 + 64 latent, f16: 31,104 B
 * per token; the architecture key last in the file. */
static void mla(void)
{
	struct vrt_model m;
	char msg[512] = "";

	ok(!read_gguf("deepseek-v2-lite-f16.gguf", &m, msg, sizeof(msg)),
	   "mla: read (%s)", msg);
	ok(m.ngroups == 1 && m.group[0].kind == VRT_MODEL_MLA &&
	           m.group[0].k_dim == 576 && m.group[0].layers == 27,
	   "mla: 27 MLA layers of 576");
	EQ(m.kv_bytes_per_token, 27 * 576 * 2, "mla: KV bytes per token");
	ok(!strcmp(m.gguf_type, "F16"), "mla: F16");
}

/* Gemma 3 4B: no pattern key, llama.cpp's rule: layers 6, 12, ... 30
 * global (5), the other 29 within a 1024-token window. */
static void gemma(void)
{
	struct vrt_model m;
	char msg[512] = "";
	uint64_t full = 0, sliding = 0;
	size_t i;

	ok(!read_gguf("gemma3-4b-q8_0.gguf", &m, msg, sizeof(msg)),
	   "gemma3: read (%s)", msg);
	for (i = 0; i < m.ngroups; i++) {
		if (m.group[i].kind == VRT_MODEL_FULL)
			full += m.group[i].layers;
		if (m.group[i].kind == VRT_MODEL_SLIDING &&
		    m.group[i].window == 1024)
			sliding += m.group[i].layers;
	}
	EQ(full, 5, "gemma3: global layers");
	EQ(sliding, 29, "gemma3: sliding layers of 1024");
	EQ(vrt_model_seq_bytes(&m, 32768, 1, 1),
	   5ull * 32768 * 4 * 512 * 2 + 29ull * 1024 * 4 * 512 * 2,
	   "gemma3: one 32K sequence, windows capped");
	ok(strstr(m.notes[0], "file_type") == NULL,
	   "gemma3: file type given, not guessed");
}

/* A hybrid: attention (8 KV heads of 128) in 2 of 8 layers, Mamba in 6:
 * conv (4 - 1) x 8192, SSM 8192 x 16, f32: 622,592 B per layer per
 * sequence. */
static void hybrid(void)
{
	struct vrt_model m;
	char msg[512] = "";

	ok(!read_gguf("hybrid.gguf", &m, msg, sizeof(msg)), "hybrid: read (%s)",
	   msg);
	EQ(m.kv_bytes_per_token, 2 * 8 * 256 * 2, "hybrid: KV bytes per token");
	EQ(m.state_bytes_per_seq, 6ull * 622592, "hybrid: state per sequence");
	ok(m.nnotes && strstr(m.notes[0], "lists no tensors"),
	   "hybrid: no tensors noted");
}

static void errors(void)
{
	static const struct {
		const char *file, *want;
	} cases[] = {
	        {"bad-magic.gguf", "not a usable model config: invalid JSON"},
	        {"bad-version.gguf", "GGUF version 1 is not supported"},
	        {"bad-truncated.gguf", "cannot fit in 200 bytes"},
	        {"bad-count.gguf", "cannot fit in"},
	        {"bad-noarch.gguf", "general.architecture is missing"},
	        {"bad-deep.gguf", "arrays nested deeper than 4"},
	        {"bad-type.gguf", "unknown ggml type 99"},
	        {"bad-negative.gguf", "llama.block_count is missing"},
	};
	struct vrt_model m;
	char msg[512] = "";
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = read_gguf(cases[i].file, &m, msg, sizeof(msg));
		ok(rc && strstr(msg, cases[i].want), "%s: %s", cases[i].file,
		   msg);
	}
}

/* Every prefix of the Llama head, and one byte at a time set to 0xff:
 * a description or an error, never a crash or a read past the end. */
static void robust(void)
{
	struct vrt_model *m = malloc(sizeof(*m));
	size_t len = 0, i, errs = 0, fine = 0;
	uint8_t *b = slurp("llama3-8b-q4_k_m.gguf", &len), *c;
	char msg[512] = "";

	ok(b && m && len > 1000, "robust: the Llama head read (%zu bytes)",
	   len);
	if (!b || !m)
		goto out;
	for (i = 0; i < len; i += i < 2000 ? 1 : 97) {
		/* A copy of exactly i bytes, so a sanitizer sees any read
		 * past them. */
		c = malloc(i ? i : 1);
		memcpy(c, b, i);
		if (vrt_gguf_parse(m, c, i, 1, msg, sizeof(msg)))
			errs++;
		else
			fine++;
		free(c);
	}
	ok(errs > 0 && fine == 0, "robust: every prefix is an error (%zu)",
	   errs);
	errs = fine = 0;
	for (i = 0; i < len; i += i < 1500 ? 1 : 53) {
		uint8_t save = b[i];
		b[i] = 0xff;
		if (vrt_gguf_parse(m, b, len, 0, msg, sizeof(msg)))
			errs++;
		else
			fine++;
		b[i] = save;
	}
	ok(errs + fine > 1000, "robust: %zu corruptions: %zu errors, %zu read",
	   errs + fine, errs, fine);
	ok(!vrt_gguf_parse(m, b, len, 0, msg, sizeof(msg)) &&
	           m->kv_bytes_per_token == 131072,
	   "robust: the untouched head still reads");
out:
	free(b);
	free(m);
}

static void tables(void)
{
	unsigned bytes = 0, elems = 0;
	size_t n, i;
	const struct vrt_gguf_quant *q = vrt_gguf_quants(&n);
	int sorted = 1;

	ok(vrt_gguf_type(12, &bytes, &elems) && bytes == 144 && elems == 256,
	   "types: q4_K is 144 bytes per 256");
	ok(vrt_gguf_type(23, &bytes, &elems) && bytes == 136 && elems == 256,
	   "types: iq4_xs is 136 bytes per 256");
	ok(!vrt_gguf_type(4, NULL, NULL) && !vrt_gguf_type(1000, NULL, NULL),
	   "types: removed and unknown types have no traits");
	ok(!strcmp(vrt_gguf_file_type_name(15), "Q4_K_M") &&
	           !vrt_gguf_file_type_name(5) &&
	           !vrt_gguf_file_type_name(9999),
	   "file types: 15 is Q4_K_M; removed and unknown ones NULL");
	for (i = 1; i < n; i++)
		sorted &= q[i].bpw < q[i - 1].bpw;
	ok(n >= 8 && sorted, "quants: largest first");
	ok(vrt_gguf_quant_bpw("q4_k_m") == 4.90 &&
	           vrt_gguf_quant_bpw("nope") == 0,
	   "quants: bits per weight by name, any case");
}

int main(int argc, char **argv)
{
	if (argc > 1)
		dir = argv[1];
	llama();
	mixtral();
	mla();
	gemma();
	hybrid();
	errors();
	robust();
	tables();
	printf("1..%d\n", ntests);
	return nfailed != 0;
}
