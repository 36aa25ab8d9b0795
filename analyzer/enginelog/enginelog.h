/*
 * The engine's own words: a server log in (a `record` run's output.log, or
 * any log given with `analyze --log`), line by line; what the engine said
 * about its memory out — weights loaded, KV cache bytes and tokens,
 * activation (profile) peak, CUDA-graph memory, maximum concurrency, its
 * effective configuration, when it became ready, and every memory error it
 * printed (PyTorch's OutOfMemoryError with its numbers, ggml's failed
 * cudaMalloc, and the budget refusals: vLLM's KV-cache check, SGLang's
 * --mem-fraction-static, llama.cpp's context that does not fit, TGI's
 * prefill and max_total_tokens checks). docs/logs.md lists every line
 * format read, with the engine version it comes from.
 *
 * Lines may carry noise: ANSI colour codes, carriage returns (progress
 * bars, vLLM's multi-line messages), the "(EngineCore_DP0 pid=N) " or
 * "(Worker_TP1 pid=N) " prefixes vLLM puts on its processes' output, the
 * timestamp prefix `record` writes, a line cut short by a kill. Every line
 * is untrusted text: lengths are bounded, numbers range-checked.
 *
 * Times: a line's wall-clock time comes from `record`'s prefix when it has
 * one, else from the engine's own timestamp (vLLM "INFO 12-02 10:15:00",
 * SGLang "[2025-12-02 10:15:00 TP0]", TGI's UTC ISO time, TensorRT-LLM's
 * "[12/02/2025-10:15:00]"); dates printed without a year take the year
 * that puts them nearest to opts.ref_wall_ns, and local times are moved to
 * UTC by opts.tz_offset_s. llama.cpp's relative times are not wall times.
 * A line without a time (uvicorn's "INFO:", a traceback) takes the time of
 * the last line that had one.
 *
 * Pure except vrt_enginelog_read (which reads one file): no globals;
 * single-threaded per struct.
 */
#ifndef VRT_ENGINELOG_H
#define VRT_ENGINELOG_H

#include <stddef.h>
#include <stdint.h>

/* Engines, numbered as engine.h's VRT_ENGINE_*. */
enum vrt_enginelog_engine {
	VRT_ENGINELOG_UNKNOWN = 0,
	VRT_ENGINELOG_VLLM = 1,
	VRT_ENGINELOG_SGLANG = 2,
	VRT_ENGINELOG_LLAMACPP = 3,
	VRT_ENGINELOG_TGI = 4,
	VRT_ENGINELOG_TRTLLM = 5,
	VRT_ENGINELOG_OLLAMA = 6,
	VRT_ENGINELOG_NENGINES = 7,
};

/* What a number the engine printed measures. */
enum vrt_enginelog_kind {
	VRT_ELK_WEIGHTS = 1,     /* bytes of weights loaded */
	VRT_ELK_KV_BYTES = 2,    /* bytes of the KV cache (its budget) */
	VRT_ELK_KV_TOKENS = 3,   /* tokens the KV cache holds */
	VRT_ELK_ACTIVATION = 4,  /* activation / profile peak, compute buffer */
	VRT_ELK_GRAPH = 5,       /* CUDA-graph memory */
	VRT_ELK_CONCURRENCY = 6, /* requests of max length at once, x1000 */
	VRT_ELK_TOTAL = 7,       /* the device capacity the engine saw */
	VRT_ELK_NON_TORCH = 8,   /* vLLM's non-torch memory (NCCL, ...) */
	VRT_ELK_KV_BLOCKS = 9,   /* KV blocks (vLLM V0, TGI) */
	VRT_ELK_FREE = 10,       /* device memory free before the engine
	                            loaded (its start-up probe) */
	VRT_ELK_PROJECTED = 11,  /* llama.cpp's fit step: the device memory
	                            it projects the model will use */
	VRT_ELK_NKINDS = 12,
};

/* The engine's effective configuration, as it printed it. */
enum vrt_enginelog_config_field {
	VRT_ELC_MAX_MODEL_LEN = 0, /* tokens per sequence */
	VRT_ELC_MAX_NUM_SEQS = 1,  /* sequences at once */
	VRT_ELC_MEM_FRACTION = 2,  /* of the device, x1000 */
	VRT_ELC_TP = 3,            /* tensor-parallel size */
	VRT_ELC_BLOCK_SIZE = 4,    /* tokens per KV block */
	VRT_ELC_CTX_SIZE = 5,      /* llama.cpp n_ctx: tokens, all slots */
	VRT_ELC_SLOTS = 6,         /* llama.cpp n_seq_max / slots */
	VRT_ELC_GPU_LAYERS = 7,    /* llama.cpp layers offloaded to GPU */
	VRT_ELC_MAX_BATCH_TOKENS = 8, /* TGI max batch total tokens */
	VRT_ELC_UBATCH = 9,        /* llama.cpp n_ubatch: tokens per step */
	VRT_ELC_BATCH = 10,        /* llama.cpp n_batch, vLLM
	                              max_num_batched_tokens, SGLang
	                              chunked_prefill_size */
	VRT_ELC_FLASH_ATTN = 11,   /* llama.cpp flash attention: 1 on, 0 off */
	VRT_ELC_NFIELDS = 12,
};

/* Memory errors the engine printed. */
enum vrt_enginelog_error_kind {
	VRT_ELE_TORCH_OOM = 1,   /* PyTorch OutOfMemoryError */
	VRT_ELE_CUDA_MALLOC = 2, /* ggml: cudaMalloc failed: out of memory */
	VRT_ELE_CUDA_ERROR = 3,  /* ggml: "CUDA error: out of memory" */
	VRT_ELE_OOM_OTHER = 4,   /* an error line naming out of memory */
	/* Budget refusals: the engine stopped for a budget it computed. */
	VRT_ELE_KV_TOO_SMALL = 5,    /* vLLM: KV for max_model_len > budget */
	VRT_ELE_NO_KV_MEMORY = 6,    /* vLLM: no memory for the cache */
	VRT_ELE_FREE_BELOW_UTIL = 7, /* vLLM: free < utilization at start */
	VRT_ELE_MEM_FRACTION = 8,    /* SGLang: raise --mem-fraction-static */
	VRT_ELE_CONTEXT_ALLOC = 9,   /* llama.cpp: the context did not fit */
	VRT_ELE_PREFILL_TOKENS = 10, /* TGI: N prefill tokens do not fit */
	VRT_ELE_MAX_TOTAL_TOKENS = 11, /* TGI: max_total_tokens too large */
	/* Allocations the engine names (a driver call failed): */
	VRT_ELE_HOST_ALLOC = 12,     /* host memory: ggml's CPU buffer, pinned
	                                memory */
	VRT_ELE_WEIGHTS_ALLOC = 13,  /* a model (weights) buffer */
	VRT_ELE_COMPUTE_ALLOC = 14,  /* llama.cpp's compute buffers */
	VRT_ELE_SAMPLER_WARMUP = 15, /* vLLM: OOM warming up the sampler */
	VRT_ELE_EXECUTOR = 16,       /* TensorRT-LLM: a component (KV cache,
	                                executor) could not be created */
	VRT_ELE_RUNNER_DIED = 17,    /* Ollama: the llama runner terminated */
	VRT_ELE_NKINDS = 18,
};

/* What an error's allocation was for, as the line or its traceback or the
 * start-up step it came in says: the trace's phase ids
 * (vramtrace/trace_format.h VRT_PHASE_*), or VRT_ELP_UNKNOWN. */
#define VRT_ELP_UNKNOWN (-1)

/* Bits of vrt_enginelog_error.have: which numbers the line printed. */
enum {
	VRT_ELH_REQUESTED = 1 << 0,
	VRT_ELH_TOTAL = 1 << 1,
	VRT_ELH_FREE = 1 << 2,
	VRT_ELH_ALLOCATED = 1 << 3,
	VRT_ELH_RESERVED = 1 << 4,
	VRT_ELH_NEEDED = 1 << 5,
	VRT_ELH_AVAILABLE = 1 << 6,
	VRT_ELH_MAX_MODEL_LEN = 1 << 7,
	VRT_ELH_SUGGESTED_LEN = 1 << 8,
	VRT_ELH_TOKENS = 1 << 9,
	VRT_ELH_MEM_FRACTION = 1 << 10,
	VRT_ELH_DEVICE = 1 << 11,
	VRT_ELH_PRIVATE = 1 << 12,  /* PyTorch: in private pools (graphs) */
	VRT_ELH_PROCESS = 1 << 13,  /* PyTorch: this process's memory */
	VRT_ELH_RUNNING = 1 << 14,  /* requests running at that moment */
	VRT_ELH_PROMPT = 1 << 15,   /* the latest prompt's tokens */
	VRT_ELH_COUNT = 1 << 16,    /* sequences of a warm-up batch */
	VRT_ELH_SUGGESTED_FRACTION = 1 << 17, /* SGLang's "above F" */
};

/* Other processes a PyTorch OOM message names on the device. */
#define VRT_ENGINELOG_MAX_OTHERS 8
/* The pids of the log's own processes ("(Worker_TP1 pid=N)") kept. */
#define VRT_ENGINELOG_MAX_PIDS 32
/* The server's command line rebuilt from the log (bytes). */
#define VRT_ENGINELOG_CMD 1024

#define VRT_ENGINELOG_TEXT      320
#define VRT_ENGINELOG_MAX_FACTS 4096
#define VRT_ENGINELOG_MAX_ERRORS 64
/* Bytes of a line looked at; the rest of a longer line is skipped. */
#define VRT_ENGINELOG_LINE_MAX (16 * 1024)

/* One number the engine printed. */
struct vrt_enginelog_fact {
	int kind;       /* enum vrt_enginelog_kind */
	int engine;     /* the engine whose line it is */
	int32_t device; /* device ordinal or rank the line names, -1 none */
	int64_t pid;    /* from a "(... pid=N)" prefix, else -1 */
	uint64_t value; /* bytes, tokens, blocks, or x1000 (concurrency) */
	uint64_t tol;   /* half the last printed digit, in value's unit */
	int additive;   /* 1: lines of one device add up (llama.cpp
	                   buffers); 0: the last line is the value */
	uint32_t line;  /* 1-based line number in the log */
	int64_t wall_ns; /* UTC ns of the line, 0 unknown */
	char text[VRT_ENGINELOG_TEXT]; /* the line, cleaned and cut */
};

struct vrt_enginelog_error {
	int kind; /* enum vrt_enginelog_error_kind */
	int engine;
	int32_t device; /* GPU index the line names (VRT_ELH_DEVICE) */
	int64_t pid;
	unsigned have; /* VRT_ELH_* */
	uint64_t requested_bytes, requested_tol;
	uint64_t total_bytes, free_bytes;
	uint64_t allocated_bytes; /* by PyTorch */
	uint64_t reserved_bytes;  /* reserved by PyTorch but unallocated */
	uint64_t needed_bytes, available_bytes; /* a KV check's numbers */
	uint64_t max_model_len, suggested_max_model_len;
	uint64_t tokens;             /* TGI: prefill / max_total tokens */
	uint64_t mem_fraction_milli; /* SGLang's current fraction */
	uint64_t suggested_fraction_milli; /* SGLang: raise it above this */
	uint64_t private_bytes; /* PyTorch: allocated in private pools */
	uint64_t process_bytes; /* PyTorch: this process, non-PyTorch
	                           memory included */
	struct {
		int64_t pid;
		uint64_t bytes;
	} others[VRT_ENGINELOG_MAX_OTHERS]; /* PyTorch: "Process N has X" */
	unsigned nothers;
	uint64_t count; /* vLLM's sampler warm-up: dummy requests */
	/* What the log said around it: the allocation's purpose
	 * (VRT_ELP_*), whether the engine carried on (a retry that worked,
	 * a fallback: never fatal), whether it came while serving (after
	 * the ready line, or raised in request handling), and the traffic
	 * then. */
	int phase;
	int recovered;
	int serving;
	uint64_t running;       /* requests running (VRT_ELH_RUNNING) */
	uint64_t requests;      /* request lines before it */
	uint64_t prompt_tokens; /* the latest prompt (VRT_ELH_PROMPT) */
	uint32_t line;
	int64_t wall_ns;
	char text[VRT_ENGINELOG_TEXT];
};

struct vrt_enginelog_opts {
	int64_t ref_wall_ns; /* a moment of the run (UTC ns), 0: unknown */
	int32_t tz_offset_s; /* the engine's local time minus UTC */
};

struct vrt_enginelog {
	struct vrt_enginelog_opts opts;
	int ref_year; /* the year of opts.ref_wall_ns (UTC), 0: unknown */
	int engine; /* the engine the log reads as (after _end) */
	unsigned votes[VRT_ENGINELOG_NENGINES];
	struct vrt_enginelog_fact *facts;
	size_t nfacts, cap_facts;
	uint64_t facts_dropped; /* past VRT_ENGINELOG_MAX_FACTS */
	uint64_t config[VRT_ELC_NFIELDS];
	uint32_t config_line[VRT_ELC_NFIELDS]; /* 0: not printed */
	/* the moment the engine said it serves */
	int have_ready, ready_strength;
	uint32_t ready_line;
	int64_t ready_wall_ns;
	char ready_text[VRT_ENGINELOG_TEXT];
	struct vrt_enginelog_error errors[VRT_ENGINELOG_MAX_ERRORS];
	size_t nerrors;
	int have_fatal; /* the last memory error printed that was not
	                   recovered (after _end) */
	size_t fatal;   /* index into errors[] */
	/* Traffic: request lines (access logs, llama-server's and SGLang's
	 * per-request lines, Gin's, TGI's router spans), the engine's own
	 * count of running requests (vLLM's "Running: N reqs", SGLang's
	 * "#running-req", llama.cpp's busy slots), the latest prompt. */
	uint64_t requests;       /* the larger of the two counts below */
	uint64_t requests_by[2]; /* by access lines, by the engine's own */
	uint32_t first_request_line;
	int64_t first_request_wall_ns;
	int have_running;
	uint64_t running, max_running;
	uint64_t prompt_tokens;
	/* The log's own processes ("(EngineCore_DP0 pid=N)", the pids
	 * engines print of themselves) */
	int64_t pids[VRT_ENGINELOG_MAX_PIDS];
	size_t npids;
	/* The server's command line, rebuilt from the arguments the log
	 * prints (vLLM's non-default args, SGLang's server_args, TGI's
	 * Args, Ollama's runner command); "" when it prints none. */
	char command[VRT_ENGINELOG_CMD];
	int command_engine; /* the engine the command runs */
	char model[256];    /* the model path it loaded, "" unknown */
	/* Lines that are not text (NUL and other control bytes): a binary
	 * file read as a log. */
	uint64_t binary_lines;
	uint64_t lines, bytes;
	uint64_t cut_bytes; /* output record cut or dropped (its markers) */
	int64_t first_wall_ns, last_wall_ns;
	/* Parser state between lines (private). */
	int64_t last_oom_error;  /* a CUDA error awaiting its device line */
	char pending_key[32];    /* TGI "key: Some(" awaiting its value */
	int tgi_args;            /* inside TGI's multi-line "Args {" */
	uint64_t sglang_avail[2][64]; /* "begin" free memory per rank, x1000
	                                 GiB: weights, graph capture */
	unsigned traceback; /* TB_* hints of the traceback being printed */
	int tb_phase;       /* its deepest frame that names a phase */
	int step;           /* the start-up step the latest line was in
	                       (VRT_ELP_*), VRT_ELP_UNKNOWN none yet */
	uint64_t slots_busy; /* llama-server: slot N busy (bit N) */
	uint64_t kv_plan;    /* TensorRT-LLM: the KV cache it sized, bytes */
	int line_repeated;   /* Ray's "[repeated Nx across cluster]": the
	                        line repeats one of another worker's */
	/* a wrapped line being joined (see enginelog.c wraps[]) */
	char wrap[8192];
	size_t wrap_len;
	uint32_t wrap_line;
	int64_t wrap_wall_ns;
	int wrap_parts, wrap_hard;
};

/* Starts an empty log; o may be NULL (no year, UTC). */
void vrt_enginelog_init(struct vrt_enginelog *log,
                        const struct vrt_enginelog_opts *o);

/* One line (without its newline; any bytes). Returns 0, or -1 when out of
 * memory (the line is then skipped; the log stays usable). */
int vrt_enginelog_feed(struct vrt_enginelog *log, const char *line,
                       size_t len);

/* Settles the engine and the fatal error once every line was fed. */
void vrt_enginelog_end(struct vrt_enginelog *log);

void vrt_enginelog_free(struct vrt_enginelog *log);

/* How long a FIFO given as the log may wait for a writer. */
#define VRT_ENGINELOG_FIFO_WAIT_S 5

/* Reads the file at path ("-": standard input; a FIFO waits for its
 * writer at most VRT_ENGINELOG_FIFO_WAIT_S) line by line into log
 * (init'ed, then _end'ed here). Returns 0, or -1 with "what: reason" in
 * err. Memory stays bounded whatever the file's size. */
int vrt_enginelog_read(struct vrt_enginelog *log, const char *path,
                       const struct vrt_enginelog_opts *o, char *err,
                       size_t errn);

/* The engine's value of kind on device (-1: the lines that named none):
 * the last such line, or the sum of additive lines. Returns 1 and fills
 * *value (and *tol, *line: the last line; may be NULL) when printed. */
int vrt_enginelog_value(const struct vrt_enginelog *log, int kind,
                        int32_t device, uint64_t *value, uint64_t *tol,
                        uint32_t *line);

/* 1 for the kinds that are budget refusals (no driver call failed). */
int vrt_enginelog_is_refusal(int kind);

/* Names: "vllm", "sglang", "llama.cpp", "tgi", "trtllm" (NULL unknown);
 * "weights", "kv_cache_bytes", ...; "torch_oom", "kv_too_small", ...;
 * "max_model_len", ... Never NULL except the engine's. */
const char *vrt_enginelog_engine_name(int engine);
const char *vrt_enginelog_kind_name(int kind);
const char *vrt_enginelog_error_name(int kind);
const char *vrt_enginelog_config_name(int field);

#endif /* VRT_ENGINELOG_H */
