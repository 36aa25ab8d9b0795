/*
 * Unit test of the phase rules engine (common/rules.c) and the built-in
 * rule sets: parse errors with their exact line and message, precedence
 * (user rules before built-ins, rule order before frame order), realistic
 * stacks of each engine with the phase they must get, custom phase ids,
 * glob and name details, and random input that must never crash. TAP.
 */
#include "rules.h"

#include <vramtrace/trace_format.h>

#include <dirent.h>
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

static const char *one(const char *rules, struct vrt_rule_frame f);

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
	             "FILE_GLOB' or 'obsolete'; quote a pattern that holds "
	             "blanks)");
	EXPECT_ERROR("weights foo obsolete in x\n",
	             "t.rules:1: unexpected 'in' after 'obsolete'");
	EXPECT_ERROR("weights foo in x obsolete y\n",
	             "t.rules:1: unexpected 'y' after 'obsolete'");
	EXPECT_ERROR("weights foo obsolete obsolete\n",
	             "t.rules:1: unexpected 'obsolete' after 'obsolete'");
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
	                   "forward \"in\" in \"a b/*\"\n"
	                   "kv_cache native:llama_kv_cache_init obsolete\n"
	                   "weights py:x in a/* obsolete # old\n"
	                   "weights \"obsolete\" in \"obsolete\"\n";
	int n = vrt_rules_parse(r, text, strlen(text), "u.rules", err,
	                        sizeof(err));
	ok(n == 8, "eight rules, comments and blank lines skipped");
	if (n != 8)
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
	is_str(vrt_rules_describe(r, 5),
	       "kv_cache native:llama_kv_cache_init obsolete",
	       "an obsolete rule keeps its keyword");
	is_str(vrt_rules_describe(r, 6), "weights py:x in a/* obsolete",
	       "obsolete after the file pattern");
	is_str(vrt_rules_describe(r, 7), "weights \"obsolete\" in \"obsolete\"",
	       "a quoted 'obsolete' is a pattern, quoted back");
	ok(!vrt_rules_obsolete(r, 0) && !vrt_rules_obsolete(r, 4) &&
	           vrt_rules_obsolete(r, 5) && vrt_rules_obsolete(r, 6) &&
	           !vrt_rules_obsolete(r, 7) && !vrt_rules_obsolete(r, 8) &&
	           !vrt_rules_obsolete(r, -1) && !vrt_rules_obsolete(NULL, 0),
	   "vrt_rules_obsolete tells the marked rules");
	is_str(one("kv_cache native:llama_kv_cache_init obsolete",
	           NATF("llama_kv_cache_init", "libllama.so")),
	       "kv_cache", "an obsolete rule still matches");
	ok(vrt_rules_describe(r, 8) == NULL &&
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
	/* The first line of builtin.rules that is not blank or a comment. */
	const char *bt = vrt_rules_builtin_text(), *l = bt;
	int first = 1;
	while (*l == '#' || *l == '\n') {
		l = strchr(l, '\n');
		if (!l)
			break;
		l++;
		first++;
	}
	char want[32];
	snprintf(want, sizeof(want), "builtin:%d", first);
	is_str(vrt_rules_origin(r, 4), want,
	       "first built-in rule comes right after, named by its line");

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

/* ---- suggested patterns ----------------------------------------------- */

static void expect_suggest(struct vrt_rule_frame f, const char *want,
                           const char *what)
{
	char buf[256];
	int n = vrt_rules_suggest(&f, buf, sizeof(buf));
	is_str(n < 0 ? NULL : buf, want, what);
	ok(n < 0 || (size_t)n == strlen(buf), "  its length is returned");
}

static void test_suggest(void)
{
	expect_suggest(PYF("GPUModelRunner.load_model",
	                   SP "vllm/v1/worker/gpu_model_runner.py"),
	               "py:GPUModelRunner.load_model in "
	               "worker/gpu_model_runner.py",
	               "Python: qualified name and the path's last two parts");
	expect_suggest(PYF("serve", "app.py"), "py:serve in app.py",
	               "Python: a bare file name");
	expect_suggest(PYF("serve", NULL), "py:serve",
	               "Python without a file");
	expect_suggest(NATF("llama_context::decode(llama_batch const&)",
	                    "/usr/lib/libllama.so"),
	               "native:llama_context::decode",
	               "native: the name without its parameters, no file");
	expect_suggest(NATF("at::cuda::(anonymous namespace)::getNewWorkspace()",
	                    "libtorch_cuda.so"),
	               "\"native:at::cuda::(anonymous namespace)::getNewWorkspace\"",
	               "a name with blanks is quoted");
	expect_suggest(NATF("ggml_backend_sched_reserve.part.0", "l.so"),
	               "native:ggml_backend_sched_reserve",
	               "a clone suffix is dropped");
	expect_suggest(NATF(NULL, "/usr/lib/libnccl.so.2"), NULL,
	               "an unnamed frame has no pattern");
	expect_suggest(PYF("", "/a.py"), NULL, "an empty name has none");
	char tiny[8];
	struct vrt_rule_frame f = PYF("Something.long", "/a/b.py");
	ok(vrt_rules_suggest(&f, tiny, sizeof(tiny)) == -1,
	   "a buffer too small is refused");
	ok(vrt_rules_suggest(NULL, tiny, sizeof(tiny)) == -1,
	   "no frame, no pattern");
}

/* ---- the stack corpus (tests/data/stacks) ------------------------------
 *
 * Each *.stacks file holds realistic call stacks of one engine with the
 * phase the built-in rules must give them; the files say which sources the
 * frames come from. Format, one item per line ('#' starts a comment line):
 *
 *   set NAME VALUE          $NAME in later frame lines reads VALUE
 *   define NAME ... end     a named block of frame lines
 *   == PHASE [obsolete] TITLE
 *                           a stack; "obsolete": the deciding rule must be
 *                           one marked obsolete (and without it, must not)
 *   py|native FUNCTION @ FILE
 *                           a frame, innermost first; '?' for an unknown
 *                           name or file
 *   use NAME                the frames of a block, here
 *
 * Definitions and variables carry over to later files (read in name
 * order, so 00-common.stacks defines the shared allocator tails). Every
 * stack must start at a driver allocation entry, so the rules are shown
 * to look past the allocator and runtime frames above it.
 */

#define CORPUS_FRAMES 96
#define CORPUS_DEFS   64
#define CORPUS_VARS   64
#define CORPUS_LINE   1024

struct corpus_def {
	char name[64];
	char *lines; /* frame lines, '\n'-separated */
};

struct corpus {
	struct corpus_def defs[CORPUS_DEFS];
	int ndefs;
	char vars[CORPUS_VARS][2][256];
	int nvars;
	int stacks, files;
};

struct corpus_stack {
	char where[160], title[200], phase[64];
	int obsolete;
	struct vrt_rule_frame f[CORPUS_FRAMES];
	char *own[CORPUS_FRAMES * 2]; /* strings the frames point to */
	int n, nown, bad;
};

static char *trim(char *t)
{
	while (*t == ' ' || *t == '\t')
		t++;
	size_t n = strlen(t);
	while (n && (t[n - 1] == ' ' || t[n - 1] == '\t' ||
	             t[n - 1] == '\n' || t[n - 1] == '\r'))
		t[--n] = '\0';
	return t;
}

/* Expands $NAME references of line into out (the longest name that
 * matches, so $GGML and $GGMLCUDA may both be set). */
static void expand(const struct corpus *c, const char *line, char *out,
                   size_t len)
{
	size_t k = 0;
	while (*line && k + 1 < len) {
		int best = -1;
		size_t best_n = 0;
		for (int i = 0; *line == '$' && i < c->nvars; i++) {
			size_t vn = strlen(c->vars[i][0]);
			if (vn > best_n && !strncmp(line + 1, c->vars[i][0], vn)) {
				best = i;
				best_n = vn;
			}
		}
		if (best >= 0) {
			k += (size_t)snprintf(out + k, len - k, "%s",
			                      c->vars[best][1]);
			line += best_n + 1;
		} else {
			out[k++] = *line++;
		}
		if (k >= len)
			k = len - 1;
	}
	out[k] = '\0';
}

static char *own_str(struct corpus_stack *st, const char *s)
{
	if (!strcmp(s, "?") || st->nown >= CORPUS_FRAMES * 2)
		return NULL;
	char *d = strdup(s);
	st->own[st->nown++] = d;
	return d;
}

/* One frame line into st; 0, or -1 when it is not one. */
static int corpus_frame(struct corpus_stack *st, char *line)
{
	int kind;
	if (!strncmp(line, "py ", 3))
		kind = VRT_FRAME_PYTHON;
	else if (!strncmp(line, "native ", 7))
		kind = VRT_FRAME_NATIVE;
	else
		return -1;
	char *rest = line + (kind == VRT_FRAME_PYTHON ? 3 : 7);
	char *at = strstr(rest, " @ ");
	if (!at)
		return -1;
	*at = '\0';
	if (st->n >= CORPUS_FRAMES)
		return -1;
	struct vrt_rule_frame *f = &st->f[st->n++];
	f->kind = kind;
	f->function = own_str(st, trim(rest));
	f->file = own_str(st, trim(at + 3));
	return 0;
}

/* The frames of block name into st (a block may use others). */
static int corpus_use(const struct corpus *c, struct corpus_stack *st,
                      const char *name, int depth)
{
	for (int i = 0; i < c->ndefs && depth < 8; i++) {
		if (strcmp(c->defs[i].name, name) || !c->defs[i].lines)
			continue;
		char *copy = strdup(c->defs[i].lines), *save = NULL;
		int rc = 0;
		for (char *l = strtok_r(copy, "\n", &save); l && !rc;
		     l = strtok_r(NULL, "\n", &save))
			rc = !strncmp(l, "use ", 4)
			             ? corpus_use(c, st, trim(l + 4), depth + 1)
			             : corpus_frame(st, l);
		free(copy);
		return rc;
	}
	return -1;
}

/* A driver allocation entry, where every corpus stack starts. */
static int is_alloc_entry(const struct vrt_rule_frame *f)
{
	static const char *const entry[] = {"cuMemAlloc", "cuMemCreate",
	                                    "cuMemHostAlloc", "hipMalloc",
	                                    "hipExtMalloc", "hipMemCreate"};
	for (size_t i = 0; f->function && i < N(entry); i++)
		if (!strncmp(f->function, entry[i], strlen(entry[i])))
			return 1;
	return 0;
}

static void corpus_check(const struct vrt_rules *r, struct corpus *c,
                         struct corpus_stack *st)
{
	c->stacks++;
	if (st->bad || st->n == 0 || !is_alloc_entry(&st->f[0])) {
		ok(0, "%s: a well-formed stack starting at a driver "
		      "allocation entry (%s)",
		   st->where, st->title);
		return;
	}
	int rule = vrt_rules_match_stack(r, st->f, (size_t)st->n);
	char what[512];
	snprintf(what, sizeof(what), "%s %s -> %s%s", st->where, st->title,
	         st->phase, st->obsolete ? " (obsolete rule)" : "");
	is_str(phase_of(r, st->f, (size_t)st->n), st->phase, what);
	if (vrt_rules_obsolete(r, rule) != st->obsolete)
		printf("# %s: deciding rule %s %s obsolete\n", st->where,
		       vrt_rules_origin(r, rule) ? vrt_rules_origin(r, rule)
		                                 : "(none)",
		       st->obsolete ? "is not" : "is");
	ok(vrt_rules_obsolete(r, rule) == st->obsolete,
	   "  the deciding rule is %sobsolete", st->obsolete ? "" : "not ");
	if (rule != VRT_RULE_NONE)
		printf("#   %s  %s\n", vrt_rules_origin(r, rule),
		       vrt_rules_describe(r, rule));

	/* Every named frame's suggested pattern names it. */
	int named = 1;
	for (int i = 0; i < st->n; i++) {
		char pat[CORPUS_LINE], line[CORPUS_LINE + 16];
		if (vrt_rules_suggest(&st->f[i], pat, sizeof(pat)) < 0) {
			if (st->f[i].function)
				named = 0;
			continue;
		}
		snprintf(line, sizeof(line), "x %s", pat);
		struct vrt_rules *one_r = vrt_rules_new_empty();
		if (vrt_rules_parse(one_r, line, strlen(line), "s", NULL, 0) !=
		            1 ||
		    vrt_rules_match(one_r, &st->f[i]) != 0) {
			printf("# suggestion does not name its frame: %s\n",
			       line);
			named = 0;
		}
		vrt_rules_free(one_r);
	}
	ok(named, "  each named frame's suggested rule matches it");
}

static void corpus_free_stack(struct corpus_stack *st)
{
	for (int i = 0; i < st->nown; i++)
		free(st->own[i]);
	memset(st, 0, sizeof(*st));
}

/* Reads one corpus file; returns its stack count, or -1 if unreadable. */
static int corpus_file(const struct vrt_rules *r, struct corpus *c,
                       const char *dir, const char *name)
{
	char path[4096], raw[CORPUS_LINE], line[CORPUS_LINE * 2];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *fp = fopen(path, "r");
	if (!fp)
		return -1;
	struct corpus_stack *st = calloc(1, sizeof(*st));
	struct corpus_def *def = NULL;
	int in_stack = 0, lineno = 0, count = 0;
	while (fgets(raw, sizeof(raw), fp)) {
		lineno++;
		expand(c, raw, line, sizeof(line));
		char *t = trim(line);
		if (!*t || *t == '#')
			continue;
		if (def) {
			if (!strcmp(t, "end")) {
				def = NULL;
				continue;
			}
			size_t have = def->lines ? strlen(def->lines) : 0;
			def->lines = realloc(def->lines, have + strlen(t) + 2);
			snprintf(def->lines + have, strlen(t) + 2, "%s\n", t);
			continue;
		}
		if (!strncmp(t, "set ", 4) && c->nvars < CORPUS_VARS) {
			char *v = trim(t + 4), *sp = strpbrk(v, " \t");
			if (sp) {
				*sp = '\0';
				snprintf(c->vars[c->nvars][0], 256, "%s", v);
				snprintf(c->vars[c->nvars][1], 256, "%s",
				         trim(sp + 1));
				c->nvars++;
			}
			continue;
		}
		if (!strncmp(t, "define ", 7) && c->ndefs < CORPUS_DEFS) {
			def = &c->defs[c->ndefs++];
			snprintf(def->name, sizeof(def->name), "%s",
			         trim(t + 7));
			def->lines = NULL;
			continue;
		}
		if (!strncmp(t, "== ", 3)) {
			if (in_stack) {
				corpus_check(r, c, st);
				corpus_free_stack(st);
				count++;
			}
			in_stack = 1;
			snprintf(st->where, sizeof(st->where), "%s:%d", name,
			         lineno);
			char *ph = trim(t + 3), *sp = strpbrk(ph, " \t");
			char *title = "";
			if (sp) {
				*sp = '\0';
				title = trim(sp + 1);
			}
			snprintf(st->phase, sizeof(st->phase), "%s", ph);
			if (!strncmp(title, "obsolete ", 9)) {
				st->obsolete = 1;
				title = trim(title + 9);
			}
			snprintf(st->title, sizeof(st->title), "%s", title);
			continue;
		}
		if (!in_stack) {
			printf("# %s:%d: outside a stack: %s\n", name, lineno,
			       t);
			st->bad = 1;
			continue;
		}
		int rc = !strncmp(t, "use ", 4)
		                 ? corpus_use(c, st, trim(t + 4), 0)
		                 : corpus_frame(st, t);
		if (rc) {
			printf("# %s:%d: bad frame line: %s\n", name, lineno,
			       t);
			st->bad = 1;
		}
	}
	if (in_stack) {
		corpus_check(r, c, st);
		count++;
	}
	corpus_free_stack(st);
	free(st);
	fclose(fp);
	ok(def == NULL, "%s: every define has its end", name);
	return count;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_corpus(const struct vrt_rules *r, const char *dir)
{
	static const char *const required[] = {
	        "vllm_v1.stacks", "vllm_v2.stacks", "sglang.stacks",
	        "llama_cpp.stacks", "tgi.stacks", "tensorrt_llm.stacks"};
	struct corpus *c = calloc(1, sizeof(*c));
	char *names[128];
	int nnames = 0;
	DIR *d = dir ? opendir(dir) : NULL;
	ok(d != NULL, "stack corpus directory %s opens", dir ? dir : "(none)");
	if (!d) {
		free(c);
		return;
	}
	for (struct dirent *e; (e = readdir(d)) && nnames < 128;) {
		size_t n = strlen(e->d_name);
		if (n > 7 && !strcmp(e->d_name + n - 7, ".stacks"))
			names[nnames++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, (size_t)nnames, sizeof(names[0]), by_name);
	int per_required[N(required)] = {0};
	for (int i = 0; i < nnames; i++) {
		int n = corpus_file(r, c, dir, names[i]);
		ok(n > 0, "%s: %d stacks", names[i], n);
		for (size_t k = 0; k < N(required); k++)
			if (!strcmp(names[i], required[k]))
				per_required[k] = n;
		free(names[i]);
	}
	for (size_t k = 0; k < N(required); k++)
		ok(per_required[k] >= 5, "%s holds at least 5 stacks (%d)",
		   required[k], per_required[k]);
	ok(c->stacks >= 60, "the corpus holds at least 60 stacks (%d)",
	   c->stacks);
	for (int i = 0; i < c->ndefs; i++)
		free(c->defs[i].lines);
	free(c);
}

/* The built-in text is, byte for byte, the rules file at path. */
static void test_embedded(const char *path)
{
	FILE *f = path ? fopen(path, "rb") : NULL;
	ok(f != NULL, "the built-in rules file %s opens",
	   path ? path : "(none)");
	if (!f)
		return;
	const char *text = vrt_rules_builtin_text();
	size_t len = strlen(text), got = 0;
	char *buf = malloc(len + 2);
	got = fread(buf, 1, len + 1, f);
	fclose(f);
	ok(got == len && memcmp(buf, text, len) == 0,
	   "vrt_rules_builtin_text() is that file's bytes (%zu of %zu)", got,
	   len);
	free(buf);
}

static void test_builtin(const char *corpus_dir)
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

	test_corpus(r, corpus_dir);

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

int main(int argc, char **argv)
{
	test_errors();
	test_syntax();
	test_custom_and_precedence();
	test_globs();
	test_suggest();
	test_embedded(argc > 2 ? argv[2] : NULL);
	test_builtin(argc > 1 ? argv[1] : NULL);
	test_random();
	printf("1..%d\n", test_no);
	return failures ? 1 : 0;
}
