/*
 * Unit test of the phase rules engine (common/rules.c) and the built-in
 * rule sets: parse errors with their exact line and message, precedence
 * (user rules before built-ins, rule order before frame order), realistic
 * stacks of each engine with the phase they must get, custom phase ids,
 * glob and name details, and random input that must never crash. TAP.
 */
#include "rules.h"

#include <vramtrace/trace_format.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int test_no;
static int failures;

static void ok(int cond, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

static void ok(int cond, const char *fmt, ...)
{
	va_list ap;
	printf("%sok %d - ", cond ? "" : "not ", ++test_no);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond)
		failures++;
}

static void is_str(const char *got, const char *want, const char *what)
{
	int same = got && want && strcmp(got, want) == 0;
	if (!got && !want)
		same = 1;
	ok(same, "%s", what);
	if (!same)
		printf("#   got:  %s\n#   want: %s\n", got ? got : "(null)",
		       want ? want : "(null)");
}

#define PY(fn, file)                                                           \
	{                                                                      \
		VRT_FRAME_PYTHON, fn, file                                     \
	}
#define NAT(fn, mod)                                                           \
	{                                                                      \
		VRT_FRAME_NATIVE, fn, mod                                      \
	}
#define PYF(fn, file) ((struct vrt_rule_frame)PY(fn, file))
#define NATF(fn, mod) ((struct vrt_rule_frame)NAT(fn, mod))
#define N(a)          (sizeof(a) / sizeof((a)[0]))

/* Site-packages prefix of the Python frames below. */
#define SP        "/opt/venv/lib/python3.12/site-packages/"
#define TORCH_MOD SP "torch/nn/modules/module.py"

/* The native tail every PyTorch allocation has. */
#define TORCH_ALLOC_TAIL                                                       \
	NAT("_PyEval_EvalFrameDefault", "/usr/lib/libpython3.12.so.1.0"),      \
	        NAT("at::empty(c10::ArrayRef<long>, c10::TensorOptions, "      \
	            "std::optional<c10::MemoryFormat>)",                       \
	            SP "torch/lib/libtorch_cpu.so"),                           \
	        NAT("c10::cuda::CUDACachingAllocator::Native::"                \
	            "NativeCachingAllocator::malloc(void**, signed char, "     \
	            "unsigned long, CUstream_st*)",                            \
	            SP "torch/lib/libc10_cuda.so"),                            \
	        NAT("cudaMalloc",                                              \
	            SP "nvidia/cuda_runtime/lib/libcudart.so.12"),             \
	        NAT(NULL, "/usr/lib/x86_64-linux-gnu/libcuda.so.1")

static const char *phase_of(const struct vrt_rules *r,
                            const struct vrt_rule_frame *f, size_t n)
{
	int best = vrt_rules_match_stack(r, f, n);
	int slow = VRT_RULE_NONE;
	for (size_t i = 0; i < n; i++) {
		int m = vrt_rules_match(r, &f[i]);
		if (m < slow)
			slow = m;
	}
	/* The trie form: each frame against the rules above its parent's. */
	int trie = VRT_RULE_NONE;
	for (size_t i = 0; i < n; i++) {
		int m = vrt_rules_match_before(r, &f[i], trie);
		if (m < trie)
			trie = m;
	}
	if (best != slow || trie != slow)
		return "(match_stack or match_before disagrees with match)";
	return vrt_rules_phase_name(r, vrt_rules_phase(r, best));
}

#define STACK(r, want, what, ...)                                              \
	do {                                                                   \
		const struct vrt_rule_frame st_[] = {__VA_ARGS__};             \
		is_str(phase_of(r, st_, N(st_)), want, what);                  \
	} while (0)

/* ---- parse errors ----------------------------------------------------- */

static void expect_error(const char *text, size_t len, const char *want)
{
	struct vrt_rules *r = vrt_rules_new_empty();
	char err[256] = "untouched";
	int n = vrt_rules_parse(r, text, len, "t.rules", err, sizeof(err));
	ok(n == -1 && vrt_rules_count(r) == 0, "error is reported: %s", want);
	is_str(err, want, "  exact message");
	vrt_rules_free(r);
}

#define EXPECT_ERROR(text, want) expect_error(text, strlen(text), want)

static void test_errors(void)
{
	EXPECT_ERROR("weights\n", "t.rules:1: missing pattern after phase "
	                          "'weights'");
	EXPECT_ERROR("\n# comment\nWeights foo\n",
	             "t.rules:3: bad phase name 'Weights': use a built-in "
	             "phase or [a-z][a-z0-9_]* (at most 63 bytes)");
	EXPECT_ERROR("kv-cache foo\n",
	             "t.rules:1: bad phase name 'kv-cache': use a built-in "
	             "phase or [a-z][a-z0-9_]* (at most 63 bytes)");
	EXPECT_ERROR("weights a\nweights py:\n", "t.rules:2: empty pattern");
	EXPECT_ERROR("weights native:", "t.rules:1: empty pattern");
	EXPECT_ERROR("weights \"\"", "t.rules:1: empty pattern");
	EXPECT_ERROR("weights foo bar\n",
	             "t.rules:1: unknown keyword 'bar' (expected 'in "
	             "FILE_GLOB'; quote a pattern that holds blanks)");
	EXPECT_ERROR("weights foo in\n",
	             "t.rules:1: missing file pattern after 'in'");
	EXPECT_ERROR("weights foo in a b\n",
	             "t.rules:1: unexpected 'b' after the file pattern");
	EXPECT_ERROR("weights in x\n",
	             "t.rules:1: missing pattern before 'in'");
	EXPECT_ERROR("in x\n", "t.rules:1: missing phase before 'in'");
	EXPECT_ERROR("weights python:load_model\n",
	             "t.rules:1: unknown frame kind 'python:' (use py: or "
	             "native:)");
	EXPECT_ERROR("weights \"foo bar\n", "t.rules:1: unterminated quote");
	EXPECT_ERROR("weights \"foo\"bar\n",
	             "t.rules:1: expected a blank after a quoted token");
	EXPECT_ERROR("a x\r\nb y\r\nc\r\n",
	             "t.rules:3: missing pattern after phase 'c'");
	expect_error("weights a\nweights b\0c\n", 21,
	             "t.rules:2: NUL byte in line");

	/* A 5000-byte line on line 2. */
	size_t len = 10 + 5000 + 1;
	char *big = malloc(len + 1);
	memcpy(big, "weights a\n", 10);
	memset(big + 10, 'a', 5000);
	big[10 + 5000] = '\n';
	big[len] = '\0';
	EXPECT_ERROR(big, "t.rules:2: line too long (5000 bytes, at most "
	                  "4096)");
	free(big);

	/* A long bad token is cut in the message. */
	EXPECT_ERROR("Xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa foo",
	             "t.rules:1: bad phase name "
	             "'Xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...': use a "
	             "built-in phase or [a-z][a-z0-9_]* (at most 63 bytes)");

	/* A failed parse leaves the rule set as it was, custom phases too. */
	struct vrt_rules *r = vrt_rules_new_empty();
	char err[128];
	int n = vrt_rules_parse(r, "mine a\n", 7, "one", err, sizeof(err));
	ok(n == 1, "first file parses");
	n = vrt_rules_parse(r, "other x\nbroken\n", 15, "two", err,
	                    sizeof(err));
	ok(n == -1 && vrt_rules_count(r) == 1, "failed parse adds nothing");
	ok(vrt_rules_phase_name(r, VRT_PHASE_FIRST_CUSTOM + 1) == NULL,
	   "failed parse declares no phase");
	/* A tiny error buffer truncates and stays NUL-terminated. */
	char tiny[8];
	vrt_rules_parse(r, "x", 1, "name", tiny, sizeof(tiny));
	ok(strlen(tiny) == 7, "message truncated to the buffer");
	ok(vrt_rules_parse(r, "x", 1, "name", NULL, 0) == -1,
	   "error without a buffer");
	ok(vrt_rules_parse(r, NULL, 0, NULL, NULL, 0) == 0,
	   "NULL empty text parses to nothing");
	vrt_rules_free(r);
}

/* ---- syntax that parses ------------------------------------------------- */

static void test_syntax(void)
{
	struct vrt_rules *r = vrt_rules_new_empty();
	char err[256] = "";
	const char *text = "# a comment\n"
	                   "\n"
	                   "   \t\n"
	                   "kv_cache   py:*.initialize_kv_cache   in vllm/*\n"
	                   "forward \"native:foo bar*\"  # trailing comment\n"
	                   "weights native:{lambda()#1}::operator()\r\n"
	                   "tokenizer py:*.encode\n"
	                   "forward \"in\" in \"a b/*\"";
	int n = vrt_rules_parse(r, text, strlen(text), "u.rules", err,
	                        sizeof(err));
	ok(n == 5, "five rules, comments and blank lines skipped");
	if (n != 5)
		printf("#   %s\n", err);
	is_str(vrt_rules_describe(r, 0),
	       "kv_cache py:*.initialize_kv_cache in vllm/*",
	       "describe normalizes blanks");
	is_str(vrt_rules_origin(r, 0), "u.rules:4", "origin names the line");
	is_str(vrt_rules_describe(r, 1), "forward \"native:foo bar*\"",
	       "a quoted pattern is quoted back with its kind prefix");
	is_str(vrt_rules_describe(r, 2),
	       "weights native:{lambda()#1}::operator()",
	       "'#' inside a token is not a comment");
	is_str(vrt_rules_describe(r, 3), "tokenizer py:*.encode",
	       "last line without a newline");
	is_str(vrt_rules_describe(r, 4), "forward \"in\" in \"a b/*\"",
	       "a quoted 'in' and a file glob with blanks stay quoted");
	ok(vrt_rules_describe(r, 5) == NULL &&
	           vrt_rules_describe(r, -1) == NULL,
	   "describe out of range is NULL");
	ok(vrt_rules_phase(r, VRT_RULE_NONE) == VRT_PHASE_unattributed,
	   "no rule -> unattributed");
	vrt_rules_free(r);
}

/* ---- custom phases and precedence ---------------------------------------- */

static void test_custom_and_precedence(void)
{
	struct vrt_rules *r = vrt_rules_new_builtin();
	char err[256];
	const char *user = "tokenizer py:*.encode in tokenizers/*\n"
	                   "lora_adapters py:*.load_lora*\n"
	                   "tokenizer py:Tokenizer.*\n"
	                   "profile py:Worker.load_model in vllm/*\n";
	int base = vrt_rules_count(r);
	int n = vrt_rules_parse(r, user, strlen(user), "user.rules", err,
	                        sizeof(err));
	ok(n == 4 && vrt_rules_count(r) == base + 4,
	   "user rules added in front of the built-ins");
	ok(vrt_rules_phase(r, 0) == VRT_PHASE_FIRST_CUSTOM &&
	           vrt_rules_phase(r, 1) == VRT_PHASE_FIRST_CUSTOM + 1 &&
	           vrt_rules_phase(r, 2) == VRT_PHASE_FIRST_CUSTOM,
	   "custom phases get ids from 16, in order, reused by name");
	is_str(vrt_rules_phase_name(r, 16), "tokenizer", "custom id 16 name");
	is_str(vrt_rules_phase_name(r, 17), "lora_adapters",
	       "custom id 17 name");
	ok(vrt_rules_phase_name(r, 18) == NULL &&
	           vrt_rules_phase_name(r, 8) == NULL &&
	           vrt_rules_phase_name(r, 15) == NULL,
	   "unknown ids have no name");
	is_str(vrt_rules_phase_name(r, VRT_PHASE_kv_cache), "kv_cache",
	       "fixed id name");
	is_str(vrt_rules_origin(r, 3), "user.rules:4", "user rule origin");
	is_str(vrt_rules_origin(r, 4), "builtin:9",
	       "first built-in rule comes right after");

	/* A second file goes in front of the first and reuses ids. */
	n = vrt_rules_parse(r, "lora_adapters py:x\nnewone py:y\n", 30, "b",
	                    err, sizeof(err));
	ok(n == 2 && vrt_rules_phase(r, 0) == 17 && vrt_rules_phase(r, 1) == 18,
	   "a later file reuses known names and extends ids");

	/* The user's rule turns vLLM's weight load into "profile". */
	STACK(r, "profile", "user rule wins over the built-in weights rule",
	      PY("Worker.load_model", SP "vllm/v1/worker/gpu_worker.py"),
	      PY("GPUModelRunner.load_model",
	         SP "vllm/v1/worker/gpu_model_runner.py"),
	      TORCH_ALLOC_TAIL);
	STACK(r, "tokenizer", "custom phase from a user rule",
	      PY("<module>", "/app/serve.py"),
	      PY("Tokenizer.encode", SP "tokenizers/implementations/base.py"),
	      TORCH_ALLOC_TAIL);
	vrt_rules_free(r);

	/* The rule order decides, not the frame order. */
	r = vrt_rules_new_empty();
	vrt_rules_parse(r, "outer py:outer\ninner py:inner\n", 30, "o", err,
	                sizeof(err));
	STACK(r, "outer", "first rule wins although its frame is outermost",
	      PY("outer", "/a.py"), PY("inner", "/a.py"));
	vrt_rules_free(r);
	r = vrt_rules_new_empty();
	vrt_rules_parse(r, "inner py:inner\nouter py:outer\n", 30, "o", err,
	                sizeof(err));
	STACK(r, "inner", "first rule wins although its frame is innermost",
	      PY("outer", "/a.py"), PY("inner", "/a.py"));
	vrt_rules_free(r);
}

/* ---- glob and name details ------------------------------------------------
 */

static const char *one(const char *rules, struct vrt_rule_frame f)
{
	static char buf[320];
	struct vrt_rules *r = vrt_rules_new_empty();
	char err[256];
	if (vrt_rules_parse(r, rules, strlen(rules), "g", err, sizeof(err)) <
	    0) {
		snprintf(buf, sizeof(buf), "(error: %s)", err);
	} else {
		snprintf(
		        buf, sizeof(buf), "%s",
		        vrt_rules_phase_name(
		                r, vrt_rules_phase(r, vrt_rules_match(r, &f))));
	}
	vrt_rules_free(r);
	return buf;
}

static void test_globs(void)
{
	struct vrt_rule_frame nat = NATF("llama_context::decode(llama_batch "
	                                 "const&)",
	                                 "/usr/lib/libllama.so");
	is_str(one("forward native:llama_context::decode", nat), "forward",
	       "native name matches without its parameters");
	is_str(one("forward native:llama_context::decode(*)", nat), "forward",
	       "native name matches with its parameters");
	is_str(one("forward native:llama_context::dec", nat), "unattributed",
	       "a glob matches the whole name");
	is_str(one("forward py:llama_context::decode", nat), "unattributed",
	       "py: rules skip native frames");
	is_str(one("forward llama_context::decode", nat), "forward",
	       "no prefix matches native frames");
	is_str(one("forward native:* in libllama.so", nat), "forward",
	       "file glob without '/' matches the base name");
	is_str(one("forward native:* in lib/libllama.so", nat), "forward",
	       "file glob with '/' matches a path tail");
	is_str(one("forward native:* in /usr/lib/*", nat), "forward",
	       "file glob with '/' matches the whole path");
	is_str(one("forward native:* in ib/libllama.so", nat), "unattributed",
	       "a path tail starts after a '/'");
	is_str(one("forward native:* in libggml*", nat), "unattributed",
	       "file glob mismatch");

	is_str(one("workspace native:*getNewWorkspace",
	           NATF("at::cuda::(anonymous namespace)::getNewWorkspace()",
	                "libtorch_cuda.so")),
	       "workspace", "(anonymous namespace) is kept in the base name");
	is_str(one("workspace \"native:at::cuda::(anonymous namespace)::*\"",
	           NATF("at::cuda::(anonymous namespace)::getNewWorkspace()",
	                "libtorch_cuda.so")),
	       "workspace", "quoted pattern with blanks");
	is_str(one("forward native:Foo::operator()",
	           NATF("Foo::operator()(int) const", "x.so")),
	       "forward", "operator() keeps its parentheses");
	is_str(one("profile native:ggml_backend_sched_reserve",
	           NATF("ggml_backend_sched_reserve.part.0",
	                "libggml-base.so")),
	       "profile", "C clone suffix ignored");
	is_str(one("workspace native:ggml_cuda_pool*",
	           NATF("ggml_cuda_pool_alloc<__half>::alloc(unsigned long)",
	                "libggml-cuda.so")),
	       "workspace", "template class method");

	is_str(one("a py:a*b*c", PYF("aXbYbZc", "/f.py")), "a", "a*b*c");
	is_str(one("a py:a*b*c", PYF("aXbYbZcd", "/f.py")), "unattributed",
	       "a*b*c needs the c at the end");
	is_str(one("a py:a?c", PYF("abc", "/f.py")), "a", "? matches one byte");
	is_str(one("a py:a?c", PYF("ac", "/f.py")), "unattributed",
	       "? needs a byte");
	is_str(one("a py:**x**", PYF("x", "/f.py")), "a", "runs of * collapse");
	is_str(one("a py:ab*ab", PYF("ab", "/f.py")), "unattributed",
	       "prefix and suffix may not overlap");
	is_str(one("a py:ab*ba", PYF("aba", "/f.py")), "unattributed",
	       "prefix and suffix may not overlap (2)");
	is_str(one("a *", PYF(NULL, NULL)), "a", "NULL names read as empty");
	is_str(one("a * in *.py", PYF(NULL, NULL)), "unattributed",
	       "NULL file does not match a file glob");

	/* CPython < 3.11: bare names match "Class.method" by the method. */
	is_str(one("weights py:*.load_model in vllm/*",
	           PYF("load_model", SP "vllm/v1/worker/gpu_model_runner.py")),
	       "weights", "bare Python name matches the pattern's method part");
	is_str(one("weights py:Worker.load_model",
	           PYF("Runner.load_model", "/x.py")),
	       "unattributed", "qualified names match the whole pattern");
	is_str(one("kv_cache py:CacheEngine.*", PYF("helper", "/x.py")),
	       "unattributed", "a bare name never matches Class.*");
	is_str(one("kv_cache native:*.load_model", NATF("load_model", "x.so")),
	       "unattributed", "the method-part rule is for Python only");
}

/* ---- the built-in rules on realistic stacks ---------------------------- */

#define VLLM_V1 SP "vllm/v1/worker/"
#define VLLM_WORKER_TOP                                                        \
	PY("<module>", SP "vllm/entrypoints/cli/main.py"),                     \
	        PY("WorkerProc.worker_main",                                   \
	           SP "vllm/v1/executor/multiproc_executor.py"),               \
	        PY("WorkerProc.worker_busy_loop",                              \
	           SP "vllm/v1/executor/multiproc_executor.py")
#define LLAMA_LAYER                                                            \
	PY("Module._wrapped_call_impl", TORCH_MOD),                            \
	        PY("Module._call_impl", TORCH_MOD),                            \
	        PY("LlamaForCausalLM.forward",                                 \
	           SP "vllm/model_executor/models/llama.py"),                  \
	        PY("Module._call_impl", TORCH_MOD),                            \
	        PY("LlamaMLP.forward",                                         \
	           SP "vllm/model_executor/models/llama.py"),                  \
	        PY("SiluAndMul.forward_cuda",                                  \
	           SP "vllm/model_executor/layers/activation.py")

static void test_vllm(const struct vrt_rules *r)
{
	STACK(r, "weights", "vLLM V1 load_model", VLLM_WORKER_TOP,
	      PY("Worker.load_model", VLLM_V1 "gpu_worker.py"),
	      PY("GPUModelRunner.load_model", VLLM_V1 "gpu_model_runner.py"),
	      PY("BaseModelLoader.load_model",
	         SP "vllm/model_executor/model_loader/base_loader.py"),
	      PY("initialize_model",
	         SP "vllm/model_executor/model_loader/utils.py"),
	      PY("LlamaForCausalLM.__init__",
	         SP "vllm/model_executor/models/llama.py"),
	      PY("UnquantizedLinearMethod.create_weights",
	         SP "vllm/model_executor/layers/linear.py"),
	      TORCH_ALLOC_TAIL);
	STACK(r, "profile", "vLLM V1 profile_run -> _dummy_run -> model",
	      VLLM_WORKER_TOP,
	      PY("Worker.determine_available_memory", VLLM_V1 "gpu_worker.py"),
	      PY("GPUModelRunner.profile_run", VLLM_V1 "gpu_model_runner.py"),
	      PY("GPUModelRunner._dummy_run", VLLM_V1 "gpu_model_runner.py"),
	      LLAMA_LAYER, TORCH_ALLOC_TAIL);
	STACK(r, "profile", "vLLM V1 _dummy_sampler_run", VLLM_WORKER_TOP,
	      PY("Worker.determine_available_memory", VLLM_V1 "gpu_worker.py"),
	      PY("GPUModelRunner.profile_run", VLLM_V1 "gpu_model_runner.py"),
	      PY("GPUModelRunner._dummy_sampler_run",
	         VLLM_V1 "gpu_model_runner.py"),
	      PY("Sampler.forward", SP "vllm/v1/sample/sampler.py"),
	      TORCH_ALLOC_TAIL);
	STACK(r, "kv_cache", "vLLM V1 initialize_kv_cache", VLLM_WORKER_TOP,
	      PY("Worker.initialize_from_config", VLLM_V1 "gpu_worker.py"),
	      PY("GPUModelRunner.initialize_kv_cache",
	         VLLM_V1 "gpu_model_runner.py"),
	      PY("GPUModelRunner.initialize_kv_cache_tensors",
	         VLLM_V1 "gpu_model_runner.py"),
	      PY("GPUModelRunner._allocate_kv_cache_tensors",
	         VLLM_V1 "gpu_model_runner.py"),
	      TORCH_ALLOC_TAIL);
	STACK(r, "cuda_graph",
	      "vLLM V1 capture_model -> _dummy_run (capture beats profile)",
	      VLLM_WORKER_TOP,
	      PY("Worker.compile_or_warm_up_model", VLLM_V1 "gpu_worker.py"),
	      PY("GPUModelRunner.capture_model", VLLM_V1 "gpu_model_runner.py"),
	      PY("GPUModelRunner._capture_cudagraphs",
	         VLLM_V1 "gpu_model_runner.py"),
	      PY("GPUModelRunner._dummy_run", VLLM_V1 "gpu_model_runner.py"),
	      PY("CUDAGraphWrapper.__call__",
	         SP "vllm/compilation/cuda_graph.py"),
	      LLAMA_LAYER, TORCH_ALLOC_TAIL);
	STACK(r, "forward", "vLLM V1 execute_model", VLLM_WORKER_TOP,
	      PY("Worker.execute_model", VLLM_V1 "gpu_worker.py"),
	      PY("GPUModelRunner.execute_model", VLLM_V1 "gpu_model_runner.py"),
	      PY("GPUModelRunner._model_forward",
	         VLLM_V1 "gpu_model_runner.py"),
	      LLAMA_LAYER, TORCH_ALLOC_TAIL);
	STACK(r, "forward", "vLLM V1 sample_tokens", VLLM_WORKER_TOP,
	      PY("Worker.sample_tokens", VLLM_V1 "gpu_worker.py"),
	      PY("GPUModelRunner.sample_tokens", VLLM_V1 "gpu_model_runner.py"),
	      PY("Sampler.forward", SP "vllm/v1/sample/sampler.py"),
	      TORCH_ALLOC_TAIL);
	STACK(r, "workspace",
	      "vLLM cuBLAS workspace made lazily in profile_run",
	      VLLM_WORKER_TOP,
	      PY("GPUModelRunner.profile_run", VLLM_V1 "gpu_model_runner.py"),
	      PY("GPUModelRunner._dummy_run", VLLM_V1 "gpu_model_runner.py"),
	      PY("UnquantizedLinearMethod.apply",
	         SP "vllm/model_executor/layers/linear.py"),
	      NAT("_PyEval_EvalFrameDefault", "/usr/lib/libpython3.12.so.1.0"),
	      NAT("at::native::structured_mm_out_cuda::impl(at::Tensor const&, "
	          "at::Tensor const&, at::Tensor const&)",
	          SP "torch/lib/libtorch_cuda.so"),
	      NAT("void at::cuda::blas::gemm<c10::BFloat16>(char, char, long, "
	          "long, long, c10::BFloat16, c10::BFloat16 const*, long, "
	          "c10::BFloat16 const*, long, c10::BFloat16, c10::BFloat16*, "
	          "long)",
	          SP "torch/lib/libtorch_cuda.so"),
	      NAT("at::cuda::getCurrentCUDABlasHandle()",
	          SP "torch/lib/libtorch_cuda.so"),
	      NAT("at::cuda::getNewWorkspace()",
	          SP "torch/lib/libtorch_cuda.so"),
	      NAT("c10::cuda::CUDACachingAllocator::Native::"
	          "NativeCachingAllocator::allocate(unsigned long)",
	          SP "torch/lib/libc10_cuda.so"),
	      NAT("cudaMalloc", SP "nvidia/cuda_runtime/lib/libcudart.so.12"));
	STACK(r, "comm", "vLLM NCCL communicator set up lazily in profile_run",
	      VLLM_WORKER_TOP,
	      PY("GPUModelRunner.profile_run", VLLM_V1 "gpu_model_runner.py"),
	      PY("GPUModelRunner._dummy_run", VLLM_V1 "gpu_model_runner.py"),
	      PY("tensor_model_parallel_all_reduce",
	         SP "vllm/distributed/communication_op.py"),
	      PY("GroupCoordinator.all_reduce",
	         SP "vllm/distributed/parallel_state.py"),
	      PY("PyNcclCommunicator.all_reduce",
	         SP "vllm/distributed/device_communicators/pynccl.py"),
	      NAT("ffi_call_unix64", "/usr/lib/libffi.so.8"),
	      NAT("ncclAllReduce", SP "nvidia/nccl/lib/libnccl.so.2"),
	      NAT(NULL, SP "nvidia/nccl/lib/libnccl.so.2"),
	      NAT("cudaMalloc", SP "nvidia/cuda_runtime/lib/libcudart.so.12"));
	STACK(r, "comm", "vLLM worker init: init_distributed_environment",
	      VLLM_WORKER_TOP,
	      PY("Worker.init_device", VLLM_V1 "gpu_worker.py"),
	      PY("init_worker_distributed_environment",
	         VLLM_V1 "gpu_worker.py"),
	      PY("init_distributed_environment",
	         SP "vllm/distributed/parallel_state.py"),
	      PY("init_process_group",
	         SP "torch/distributed/distributed_c10d.py"),
	      TORCH_ALLOC_TAIL);

	/* Legacy engine (vllm/worker/). */
	STACK(r, "kv_cache", "vLLM legacy CacheEngine",
	      PY("LLMEngine._initialize_kv_caches",
	         SP "vllm/engine/llm_engine.py"),
	      PY("Worker.initialize_cache", SP "vllm/worker/worker.py"),
	      PY("Worker._init_cache_engine", SP "vllm/worker/worker.py"),
	      PY("CacheEngine.__init__", SP "vllm/worker/cache_engine.py"),
	      PY("CacheEngine._allocate_kv_cache",
	         SP "vllm/worker/cache_engine.py"),
	      TORCH_ALLOC_TAIL);
	STACK(r, "cuda_graph", "vLLM legacy CUDAGraphRunner.capture",
	      PY("LLMEngine._initialize_kv_caches",
	         SP "vllm/engine/llm_engine.py"),
	      PY("Worker.initialize_cache", SP "vllm/worker/worker.py"),
	      PY("Worker._warm_up_model", SP "vllm/worker/worker.py"),
	      PY("GPUModelRunnerBase.capture_model",
	         SP "vllm/worker/model_runner.py"),
	      PY("CUDAGraphRunner.capture", SP "vllm/worker/model_runner.py"),
	      LLAMA_LAYER, TORCH_ALLOC_TAIL);
	STACK(r, "profile", "vLLM legacy determine_num_available_blocks",
	      PY("LLMEngine._initialize_kv_caches",
	         SP "vllm/engine/llm_engine.py"),
	      PY("Worker.determine_num_available_blocks",
	         SP "vllm/worker/worker.py"),
	      PY("GPUModelRunnerBase.profile_run",
	         SP "vllm/worker/model_runner.py"),
	      PY("ModelRunner.execute_model", SP "vllm/worker/model_runner.py"),
	      LLAMA_LAYER, TORCH_ALLOC_TAIL);
}

#define SGL SP "sglang/srt/"
#define SGL_TOP                                                                \
	PY("run_scheduler_process", SGL "managers/scheduler.py"),              \
	        PY("Scheduler.__init__", SGL "managers/scheduler.py"),         \
	        PY("TpModelWorker.__init__", SGL "managers/tp_worker.py"),     \
	        PY("ModelRunner.__init__",                                     \
	           SGL "model_executor/model_runner.py"),                      \
	        PY("ModelRunner.initialize",                                   \
	           SGL "model_executor/model_runner.py")

static void test_sglang(const struct vrt_rules *r)
{
	STACK(r, "weights", "SGLang load_model", SGL_TOP,
	      PY("ModelRunner.load_model",
	         SGL "model_executor/model_runner.py"),
	      PY("get_model", SGL "model_loader/__init__.py"),
	      PY("DefaultModelLoader.load_model", SGL "model_loader/loader.py"),
	      TORCH_ALLOC_TAIL);
	STACK(r, "kv_cache", "SGLang MHATokenToKVPool._create_buffers", SGL_TOP,
	      PY("ModelRunner.init_memory_pool",
	         SGL "model_executor/model_runner.py"),
	      PY("MHATokenToKVPool.__init__", SGL "mem_cache/memory_pool.py"),
	      PY("MHATokenToKVPool._create_buffers",
	         SGL "mem_cache/memory_pool.py"),
	      TORCH_ALLOC_TAIL);
	STACK(r, "kv_cache", "SGLang ReqToTokenPool (mixin init_memory_pool)",
	      SGL_TOP,
	      PY("ModelRunnerKVCacheMixin.init_memory_pool",
	         SGL "model_executor/model_runner_kv_cache_mixin.py"),
	      PY("ReqToTokenPool.__init__", SGL "mem_cache/memory_pool.py"),
	      TORCH_ALLOC_TAIL);
	STACK(r, "cuda_graph", "SGLang CudaGraphRunner.capture", SGL_TOP,
	      PY("ModelRunner.init_device_graphs",
	         SGL "model_executor/model_runner.py"),
	      PY("CudaGraphRunner.__init__",
	         SGL "model_executor/cuda_graph_runner.py"),
	      PY("CudaGraphRunner.capture",
	         SGL "model_executor/cuda_graph_runner.py"),
	      PY("CudaGraphRunner.capture_one_batch_size",
	         SGL "model_executor/cuda_graph_runner.py"),
	      PY("ModelRunner.forward", SGL "model_executor/model_runner.py"),
	      PY("ModelRunner.forward_decode",
	         SGL "model_executor/model_runner.py"),
	      TORCH_ALLOC_TAIL);
	STACK(r, "forward", "SGLang forward_extend",
	      PY("run_scheduler_process", SGL "managers/scheduler.py"),
	      PY("Scheduler.event_loop_normal", SGL "managers/scheduler.py"),
	      PY("Scheduler.run_batch", SGL "managers/scheduler.py"),
	      PY("TpModelWorker.forward_batch_generation",
	         SGL "managers/tp_worker.py"),
	      PY("ModelRunner.forward", SGL "model_executor/model_runner.py"),
	      PY("ModelRunner.forward_extend",
	         SGL "model_executor/model_runner.py"),
	      PY("Module._call_impl", TORCH_MOD),
	      PY("LlamaForCausalLM.forward", SGL "models/llama.py"),
	      TORCH_ALLOC_TAIL);
	STACK(r, "comm", "SGLang NCCL init", SGL_TOP,
	      PY("ModelRunner.init_torch_distributed",
	         SGL "model_executor/model_runner.py"),
	      PY("initialize_model_parallel",
	         SGL "distributed/parallel_state.py"),
	      PY("GroupCoordinator.__init__",
	         SGL "distributed/parallel_state.py"),
	      NAT("_PyEval_EvalFrameDefault", "/usr/lib/libpython3.12.so.1.0"),
	      NAT("c10d::ProcessGroupNCCL::getNCCLComm(std::__cxx11::basic_"
	          "string<char, std::char_traits<char>, std::allocator<char> > "
	          "const&, c10::Device&, c10d::OpType, int, bool)",
	          SP "torch/lib/libtorch_cuda.so"),
	      NAT("ncclCommInitRankConfig", SP "nvidia/nccl/lib/libnccl.so.2"),
	      NAT("cudaMalloc", SP "nvidia/cuda_runtime/lib/libcudart.so.12"));
}

#define LIBLLAMA    "/usr/local/lib/libllama.so"
#define LIBGGML     "/usr/local/lib/libggml-base.so"
#define LIBGGMLCUDA "/usr/local/lib/libggml-cuda.so"
#define LLAMA_ALLOC_TAIL                                                       \
	NAT("ggml_backend_buft_alloc_buffer", LIBGGML),                        \
	        NAT("ggml_backend_cuda_buffer_type_alloc_buffer(ggml_backend_" \
	            "buffer_type*, unsigned long)",                            \
	            LIBGGMLCUDA),                                              \
	        NAT("ggml_cuda_device_malloc(void**, unsigned long, int)",     \
	            LIBGGMLCUDA),                                              \
	        NAT("cudaMalloc", "/usr/local/cuda/lib64/libcudart.so.12")

static void test_llama(const struct vrt_rules *r)
{
	STACK(r, "weights", "llama.cpp model load",
	      NAT("main", "/usr/local/bin/llama-server"),
	      NAT("common_init_from_params(common_params&)",
	          "/usr/local/bin/llama-server"),
	      NAT("llama_model_load_from_file", LIBLLAMA),
	      NAT("llama_model_load_from_file_impl(std::__cxx11::basic_string<"
	          "char, std::char_traits<char>, std::allocator<char> > "
	          "const&, "
	          "std::vector<std::__cxx11::basic_string<char, "
	          "std::char_traits<char>, std::allocator<char> >, "
	          "std::allocator<std::__cxx11::basic_string<char, "
	          "std::char_traits<char>, std::allocator<char> > > >&, "
	          "llama_model_params)",
	          LIBLLAMA),
	      NAT("llama_model::load_tensors(llama_model_loader&)", LIBLLAMA),
	      NAT("ggml_backend_alloc_ctx_tensors_from_buft", LIBGGML),
	      LLAMA_ALLOC_TAIL);
	STACK(r, "kv_cache",
	      "llama.cpp KV cache (beats ggml_backend_alloc_ctx_tensors)",
	      NAT("main", "/usr/local/bin/llama-server"),
	      NAT("llama_init_from_model", LIBLLAMA),
	      NAT("llama_context::llama_context(llama_model const&, "
	          "llama_context_params)",
	          LIBLLAMA),
	      NAT("llama_model::create_memory(llama_memory_params const&, "
	          "llama_cparams const&) const",
	          LIBLLAMA),
	      NAT("llama_kv_cache::llama_kv_cache(llama_model const&, "
	          "ggml_type, ggml_type, bool, bool, bool, unsigned int, "
	          "unsigned int, unsigned int, unsigned int, llama_swa_type, "
	          "std::function<bool (int)> const&, std::function<bool (int)> "
	          "const&)",
	          LIBLLAMA),
	      NAT("ggml_backend_alloc_ctx_tensors_from_buft", LIBGGML),
	      LLAMA_ALLOC_TAIL);
	STACK(r, "kv_cache", "llama.cpp KV cache, older unified class",
	      NAT("llama_init_from_model", LIBLLAMA),
	      NAT("llama_kv_cache_unified::llama_kv_cache_unified(llama_model "
	          "const&, ggml_type, ggml_type, bool, bool, unsigned int, "
	          "unsigned int, unsigned int)",
	          LIBLLAMA),
	      NAT("ggml_backend_alloc_ctx_tensors_from_buft", LIBGGML),
	      LLAMA_ALLOC_TAIL);
	STACK(r, "profile", "llama.cpp compute buffer reserve",
	      NAT("llama_init_from_model", LIBLLAMA),
	      NAT("llama_context::llama_context(llama_model const&, "
	          "llama_context_params)",
	          LIBLLAMA),
	      NAT("llama_context::sched_reserve()", LIBLLAMA),
	      NAT("llama_context::graph_reserve(unsigned int, unsigned int, "
	          "unsigned int, llama_memory_context_i const*, bool)",
	          LIBLLAMA),
	      NAT("ggml_backend_sched_reserve", LIBGGML),
	      NAT("ggml_gallocr_reserve_n", LIBGGML), LLAMA_ALLOC_TAIL);
	STACK(r, "forward", "llama.cpp decode grows the compute buffer",
	      NAT("server_context::update_slots()",
	          "/usr/local/bin/llama-server"),
	      NAT("llama_decode", LIBLLAMA),
	      NAT("llama_context::decode(llama_batch const&)", LIBLLAMA),
	      NAT("ggml_backend_sched_alloc_graph", LIBGGML),
	      NAT("ggml_gallocr_alloc_graph", LIBGGML),
	      NAT("ggml_gallocr_reserve_n", LIBGGML), LLAMA_ALLOC_TAIL);
	STACK(r, "workspace", "llama.cpp CUDA pool during decode",
	      NAT("llama_decode", LIBLLAMA),
	      NAT("llama_context::decode(llama_batch const&)", LIBLLAMA),
	      NAT("ggml_backend_sched_graph_compute_async", LIBGGML),
	      NAT("ggml_backend_cuda_graph_compute(ggml_backend*, "
	          "ggml_cgraph*)",
	          LIBGGMLCUDA),
	      NAT("ggml_cuda_mul_mat(ggml_backend_cuda_context&, ggml_tensor "
	          "const*, ggml_tensor const*, ggml_tensor*)",
	          LIBGGMLCUDA),
	      NAT("ggml_cuda_pool_alloc<__half>::alloc(unsigned long)",
	          LIBGGMLCUDA),
	      NAT("ggml_cuda_pool_leg::alloc(unsigned long, unsigned long*)",
	          LIBGGMLCUDA),
	      NAT("cudaMalloc", "/usr/local/cuda/lib64/libcudart.so.12"));
	STACK(r, "workspace", "llama.cpp cuBLAS handle",
	      NAT("llama_decode", LIBLLAMA),
	      NAT("ggml_backend_cuda_context::cublas_handle(int)", LIBGGMLCUDA),
	      NAT("cublasCreate_v2", "/usr/local/cuda/lib64/libcublas.so.12"),
	      NAT(NULL, "/usr/local/cuda/lib64/libcublasLt.so.12"),
	      NAT("cudaMalloc", "/usr/local/cuda/lib64/libcudart.so.12"));
}

#define TF  SP "transformers/"
#define TGI SP "text_generation_server/"

static void test_hf(const struct vrt_rules *r)
{
	STACK(r, "weights", "transformers from_pretrained",
	      PY("<module>", "/app/serve.py"),
	      PY("_BaseAutoModelClass.from_pretrained",
	         TF "models/auto/auto_factory.py"),
	      PY("PreTrainedModel.from_pretrained", TF "modeling_utils.py"),
	      PY("PreTrainedModel._load_pretrained_model",
	         TF "modeling_utils.py"),
	      PY("_load_state_dict_into_meta_model", TF "modeling_utils.py"),
	      TORCH_ALLOC_TAIL);
	STACK(r, "weights", "transformers on CPython 3.10 (bare names)",
	      PY("<module>", "/app/serve.py"),
	      PY("from_pretrained", TF "models/auto/auto_factory.py"),
	      PY("from_pretrained", TF "modeling_utils.py"), TORCH_ALLOC_TAIL);
	STACK(r, "weights", "model.to('cuda')", PY("<module>", "/app/serve.py"),
	      PY("Module.to", TORCH_MOD), PY("Module._apply", TORCH_MOD),
	      TORCH_ALLOC_TAIL);
	STACK(r, "kv_cache", "transformers DynamicCache.update in generate",
	      PY("<module>", "/app/serve.py"),
	      PY("GenerationMixin.generate", TF "generation/utils.py"),
	      PY("GenerationMixin._sample", TF "generation/utils.py"),
	      PY("Module._call_impl", TORCH_MOD),
	      PY("LlamaAttention.forward", TF "models/llama/modeling_llama.py"),
	      PY("DynamicCache.update", TF "cache_utils.py"),
	      PY("DynamicLayer.update", TF "cache_utils.py"), TORCH_ALLOC_TAIL);
	STACK(r, "forward", "transformers activations in generate",
	      PY("<module>", "/app/serve.py"),
	      PY("GenerationMixin.generate", TF "generation/utils.py"),
	      PY("GenerationMixin._sample", TF "generation/utils.py"),
	      PY("Module._call_impl", TORCH_MOD),
	      PY("LlamaMLP.forward", TF "models/llama/modeling_llama.py"),
	      TORCH_ALLOC_TAIL);
	STACK(r, "forward", "a bare nn.Module call in user code",
	      PY("<module>", "/app/serve.py"),
	      PY("Module._wrapped_call_impl", TORCH_MOD),
	      PY("Module._call_impl", TORCH_MOD),
	      PY("MyNet.forward", "/app/net.py"), TORCH_ALLOC_TAIL);

	STACK(r, "kv_cache", "TGI warmup -> init_kv_cache",
	      PY("TextGenerationService.Warmup", TGI "server.py"),
	      PY("FlashCausalLM.warmup", TGI "models/flash_causal_lm.py"),
	      PY("FlashCausalLM.init_kv_cache",
	         TGI "models/flash_causal_lm.py"),
	      TORCH_ALLOC_TAIL);
	STACK(r, "cuda_graph", "TGI warmup -> cuda_graph_warmup",
	      PY("TextGenerationService.Warmup", TGI "server.py"),
	      PY("FlashCausalLM.warmup", TGI "models/flash_causal_lm.py"),
	      PY("FlashCausalLM.cuda_graph_warmup",
	         TGI "models/flash_causal_lm.py"),
	      PY("FlashLlamaForCausalLM.forward",
	         TGI "models/custom_modeling/flash_llama_modeling.py"),
	      TORCH_ALLOC_TAIL);
	STACK(r, "profile", "TGI warmup forward",
	      PY("TextGenerationService.Warmup", TGI "server.py"),
	      PY("FlashCausalLM.warmup", TGI "models/flash_causal_lm.py"),
	      PY("FlashCausalLM.forward", TGI "models/flash_causal_lm.py"),
	      TORCH_ALLOC_TAIL);
	STACK(r, "forward", "TGI generate_token",
	      PY("TextGenerationService.Decode", TGI "server.py"),
	      PY("FlashCausalLM.generate_token",
	         TGI "models/flash_causal_lm.py"),
	      PY("FlashCausalLM.forward", TGI "models/flash_causal_lm.py"),
	      TORCH_ALLOC_TAIL);
	STACK(r, "weights", "TGI Weights.get_sharded",
	      PY("serve_inner", TGI "server.py"),
	      PY("get_model", TGI "models/__init__.py"),
	      PY("FlashCausalLM.__init__", TGI "models/flash_causal_lm.py"),
	      PY("Weights.get_sharded", TGI "utils/weights.py"),
	      TORCH_ALLOC_TAIL);
}

static void test_misc(const struct vrt_rules *r)
{
	STACK(r, "kv_cache", "TensorRT-LLM KVCacheManager::allocatePools",
	      PY("KVCacheManager.__init__",
	         SP "tensorrt_llm/_torch/pyexecutor/resource_manager.py"),
	      NAT("tensorrt_llm::batch_manager::kv_cache_manager::"
	          "KVCacheManager::allocatePools(bool)",
	          SP "tensorrt_llm/libs/libtensorrt_llm.so"),
	      NAT("tensorrt_llm::batch_manager::kv_cache_manager::"
	          "BlockManager::allocatePools(bool)",
	          SP "tensorrt_llm/libs/libtensorrt_llm.so"),
	      NAT("cudaMallocAsync", "/usr/local/cuda/lib64/libcudart.so.12"));
	STACK(r, "comm", "NCCL init from C", NAT("main", "/usr/bin/app"),
	      NAT("ncclCommInitRank", "/usr/lib/x86_64-linux-gnu/libnccl.so.2"),
	      NAT(NULL, "/usr/lib/x86_64-linux-gnu/libnccl.so.2"),
	      NAT("cuMemCreate", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"));
	STACK(r, "cuda_graph", "torch.cuda.graph capture_end instantiation",
	      PY("<module>", "/app/serve.py"),
	      PY("graph.__exit__", SP "torch/cuda/graphs.py"),
	      PY("CUDAGraph.capture_end", SP "torch/cuda/graphs.py"),
	      NAT("at::cuda::CUDAGraph::capture_end()",
	          SP "torch/lib/libtorch_cuda.so"),
	      NAT("cudaGraphInstantiate",
	          SP "nvidia/cuda_runtime/lib/libcudart.so.12"));
	STACK(r, "workspace", "cuDNN handle",
	      PY("Module._call_impl", TORCH_MOD),
	      NAT("at::native::getCudnnHandle()",
	          SP "torch/lib/libtorch_cuda.so"),
	      NAT("cudnnCreate", SP "nvidia/cudnn/lib/libcudnn.so.9"),
	      NAT(NULL, SP "nvidia/cudnn/lib/libcudnn_graph.so.9"),
	      NAT("cudaMalloc", SP "nvidia/cuda_runtime/lib/libcudart.so.12"));
	STACK(r, "unattributed", "a stack nothing claims",
	      PY("<module>", "/app/main.py"), PY("helper", "/app/util.py"),
	      NAT("main", "/usr/bin/python3"),
	      NAT("cudaMalloc", "/usr/local/cuda/lib64/libcudart.so.12"),
	      NAT(NULL, NULL), PY(NULL, NULL), {99, "odd kind", "x"});
	is_str(phase_of(r, NULL, 0), "unattributed", "an empty stack");
	ok(vrt_rules_match(NULL, NULL) == VRT_RULE_NONE &&
	           vrt_rules_count(NULL) == 0,
	   "NULL rule set matches nothing");
}

static void test_builtin(void)
{
	struct vrt_rules *r = vrt_rules_new_builtin();
	ok(r != NULL && vrt_rules_count(r) > 100, "built-in rules parse");
	if (!r)
		return;
	/* Every built-in rule is canonical: parsing its own text again
	 * gives the same text. */
	int canon = 1;
	for (int i = 0; i < vrt_rules_count(r); i++) {
		const char *t = vrt_rules_describe(r, i);
		struct vrt_rules *one_r = vrt_rules_new_empty();
		char err[256];
		if (vrt_rules_parse(one_r, t, strlen(t), "re", err,
		                    sizeof(err)) != 1 ||
		    strcmp(vrt_rules_describe(one_r, 0), t) != 0) {
			printf("# not canonical: %s\n", t);
			canon = 0;
		}
		vrt_rules_free(one_r);
		if (vrt_rules_phase(r, i) > VRT_PHASE_BUILTIN_MAX) {
			printf("# custom phase in built-ins: %s\n", t);
			canon = 0;
		}
	}
	ok(canon, "built-in rules re-parse to themselves, fixed phases only");

	test_vllm(r);
	test_sglang(r);
	test_llama(r);
	test_hf(r);
	test_misc(r);

	/* Speed: a 60-frame stack that matches nothing scans every rule. */
	struct vrt_rule_frame deep[60];
	for (int i = 0; i < 60; i++) {
		deep[i] = PYF("SomeClass.some_method_name",
		              SP "app/module/file.py");
		if (i >= 40)
			deep[i] = NATF(
			        "at::native::(anonymous namespace)::foo(at::"
			        "Tensor const&, long)",
			        SP "torch/lib/libtorch_cuda.so");
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int iters = 2000, hits = 0;
	for (int i = 0; i < iters; i++)
		hits += vrt_rules_match_stack(r, deep, 60) != VRT_RULE_NONE;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double us = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 +
	             (double)(t1.tv_nsec - t0.tv_nsec)) /
	            1e3 / iters;
	ok(hits == 0, "deep unmatched stack stays unattributed");
	printf("# %.1f us per 60-frame stack against %d rules\n", us,
	       vrt_rules_count(r));
	vrt_rules_free(r);
}

/* ---- random input never crashes ----------------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15u;

static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static void test_random(void)
{
	static const char alphabet[] = "ab_z09 \t\n\r#\"*?:/.py:native:in ";
	const char *builtin = vrt_rules_builtin_text();
	size_t blen = strlen(builtin);
	char *buf = malloc(blen + 64);
	int bad_msg = 0, parsed = 0;

	for (int iter = 0; iter < 3000; iter++) {
		size_t len;
		if (iter % 2) {
			/* Mutate the built-in text a little. */
			memcpy(buf, builtin, blen);
			len = blen;
			for (int k = rnd(8); k >= 0; k--) {
				size_t at = rnd((unsigned)len);
				buf[at] = (iter % 4 == 1)
				                  ? (char)rnd(256)
				                  : alphabet[rnd(
				                            sizeof(alphabet) -
				                            1)];
			}
		} else {
			len = rnd(200);
			for (size_t i = 0; i < len; i++)
				buf[i] =
				        (iter % 3)
				                ? alphabet[rnd(
				                          sizeof(alphabet) - 1)]
				                : (char)rnd(256);
		}
		struct vrt_rules *r = vrt_rules_new_builtin();
		char err[200];
		int n = vrt_rules_parse(r, buf, len, "fuzz", err, sizeof(err));
		if (n < 0) {
			if (strncmp(err, "fuzz:", 5) != 0 ||
			    strchr(err, '\n') != NULL)
				bad_msg++;
		} else {
			parsed++;
			struct vrt_rule_frame f[3] = {PY("x.y", "/a/b.py"),
			                              NAT("n::m(int)", "l.so"),
			                              NAT(NULL, NULL)};
			int m = vrt_rules_match_stack(r, f, 3);
			(void)vrt_rules_phase_name(r, vrt_rules_phase(r, m));
		}
		vrt_rules_free(r);
	}
	free(buf);
	ok(bad_msg == 0,
	   "random input: every error is one \"name:line:\" line");
	printf("# %d of 3000 random inputs parsed\n", parsed);
}

int main(void)
{
	test_errors();
	test_syntax();
	test_custom_and_precedence();
	test_globs();
	test_builtin();
	test_random();
	printf("1..%d\n", test_no);
	return failures ? 1 : 0;
}
