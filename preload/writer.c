/*
 * writer.c — the writer thread: takes every thread's chunks, compresses
 * them into independent zstd frames and writes them to this process's
 * trace file "<dir>/<pid>.vtrace".
 *
 * Threads: one writer thread ("vramtrace-wr", all signals blocked) does
 * every compression and write(2). Hooks never wait for it, except
 * vrt_writer_sync after a failed allocation (bounded). The session
 * (session.c) starts and stops it; the lifecycle (entry.c) calls its fork
 * handlers.
 *
 * Locks: w_mu guards the request/complete sequence numbers, the stop flag
 * and the pending device inventory. The writer holds no lock while it
 * compresses or writes, so nothing on the hot path ever waits on I/O.
 * Writer-only state (fd, cctx, buffers) needs no lock.
 *
 * A pass runs at least every half flush interval, when a chunk fills up,
 * or on a sync request, and ends with a WATERMARK record. It closes the
 * frame when the frame is a flush interval old, on a sync request and at
 * the end: a frame spans the passes of a flush interval, so zstd finds
 * what repeats across them (a frame is compressed on its own: a server
 * repeats one step's pattern of allocations for every step), and a file
 * cut by SIGKILL loses at most that interval. A frame with more than
 * FRAME_MAX input bytes is closed at the next chunk boundary.
 *
 * Any write error turns capture off for good (the host carries on); the
 * reason is printed once at exit (session.c's warning).
 *
 * The trace's descriptor is registered with fds.c: every write goes
 * through it, and each pass first checks that the number still names the
 * file we created (the program may close every fd or dup2 over ours and
 * reuse the number). When the program's close_range, closefrom, close,
 * dup2 or dup3 is about to take it, that call first waits (bounded) for
 * one last frame of everything buffered; then recording stops with one
 * warning, the trace ends there (truncated: no trailer) and the number is
 * never written to or closed again. Re-opening a second file for the
 * same process would leave readers two halves of one process to join.
 * The run directory is checked (rundir.h) on the descriptor the trace is
 * then created in.
 */
#include "clock.h"
#include "core.h"
#include "rundir.h"

#include <vramtrace/trace_format.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#define FRAME_MAX   (4u << 20)
#define STAGE_BYTES (256u * 1024u)
#define MAX_DEVICES 64
/* How long a program's close of our trace's number waits for the last
 * frame (fds.c): a fraction of the failed-allocation sync's bound. */
#define TAKEN_FLUSH_MS 500

static pthread_mutex_t pass_mu = PTHREAD_MUTEX_INITIALIZER; /* a pass */
static pthread_mutex_t w_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t w_cv; /* CLOCK_MONOTONIC, set up by start */
static uint64_t req_seq, done_seq;
static int stop_req, stopped, running;
/* The stop gave up waiting (the last frame or its fdatasync is slow): the
 * writer thread closes the file and lets itself go when it has written
 * it, so a process that goes on (an attach's detach) keeps no fd of ours. */
static int orphaned;
static struct vrt_device_info known_devs[MAX_DEVICES];
static int known_ndev;
static int devs_pending; /* known_devs not yet in this trace */

/* Writer-thread state. */
static pthread_t thread;
static struct vrt_fd tfd = {-1, -1, 0}; /* the trace file */
static int flush_ms = 100;
static ZSTD_CCtx *cctx;
static uint8_t *zout;
static size_t zout_cap;
static uint8_t *stage; /* writer-made records for the next frame */
static size_t stage_len;
static size_t frame_in; /* input bytes in the open frame */
static int frame_open;
static uint64_t frame_t0; /* when the frame under way took its first
                           * bytes (fed, or waiting in batch.c); 0 none */
static int failed;
static char fail_msg[160];

static void fail(const char *what, int err)
{
	if (failed)
		return;
	failed = 1;
	snprintf(fail_msg, sizeof(fail_msg), "%s: %s", what, strerror(err));
	vrt_capture_fail(fail_msg);
}

/* The program closed our trace's descriptor or put a file of its own at
 * its number. */
static void fail_taken(void)
{
	if (failed)
		return;
	failed = 1;
	snprintf(fail_msg, sizeof(fail_msg),
	         "the program closed or replaced the trace file's descriptor "
	         "(fd %d); recording stopped there",
	         tfd.fd);
	vrt_capture_fail(fail_msg);
}

/* Feeds src into the open frame (opening one as needed); end != 0 closes
 * the frame. Output goes straight to the file. */
static void zfeed(const void *src, size_t len, int end)
{
	if (failed)
		return;
	ZSTD_inBuffer in = {src, len, 0};
	ZSTD_EndDirective mode = end ? ZSTD_e_end : ZSTD_e_continue;
	for (;;) {
		ZSTD_outBuffer out = {zout, zout_cap, 0};
		size_t rem = ZSTD_compressStream2(cctx, &out, &in, mode);
		if (ZSTD_isError(rem)) {
			fail("zstd", EIO);
			return;
		}
		if (out.pos) {
			int err = vrt_fds_write_all(tfd, zout, out.pos);
			if (err == -EBADF && !vrt_fds_check(tfd)) {
				fail_taken();
				return;
			}
			if (err) {
				fail("write", -err);
				return;
			}
		}
		if (end ? rem == 0 : in.pos == in.size)
			break;
	}
	frame_in += len;
	frame_open = !end;
	if (end)
		frame_in = 0;
}

static size_t put_str(uint8_t *p, const char *s, size_t max)
{
	size_t len = strnlen(s, max);
	size_t n = vrt_put_uvarint(p, len);
	memcpy(p + n, s, len);
	return n + len;
}

/* Appends one writer-made record to the stage (dropped if it cannot fit,
 * which only a pathological command line could cause). */
static void stage_record(unsigned type, const uint8_t *payload, size_t len)
{
	if (stage_len + len + 1 + VRT_UVARINT_MAX > STAGE_BYTES)
		return;
	stage[stage_len++] = (uint8_t)type;
	stage_len += vrt_put_uvarint(stage + stage_len, len);
	memcpy(stage + stage_len, payload, len);
	stage_len += len;
}

/* ---- VRAMTRACE_REDACT: the command line without its values ----------
 * argv[0] and flag names stay (reports name the program and its flags);
 * the values of a small allowlist of numeric engine flags stay when they
 * are plain numbers (`vramtrace table` reads them); `-m`'s value stays
 * when it is a plain word (python -m vllm...: the engine's name). Every
 * other value, and any argument that is not a plain word or looks like a
 * secret, becomes "***". */
static const char *const redact_keep[] = {
        "--max-model-len",
        "--max-num-seqs",
        "--max-num-batched-tokens",
        "--gpu-memory-utilization",
        "--tensor-parallel-size",
        "-tp",
        "--pipeline-parallel-size",
        "-pp",
        "--data-parallel-size",
        "-dp",
        "--context-length",
        "--max-running-requests",
        "--max-total-tokens",
        "--mem-fraction-static",
        "--tp",
        "--tp-size",
        "--dp",
        "--dp-size",
        "-c",
        "--ctx-size",
        "-np",
        "--parallel",
        "-ngl",
        "--n-gpu-layers",
        "--gpu-layers",
        "-b",
        "--batch-size",
        "-ub",
        "--ubatch-size",
        "--max-concurrent-requests",
        "--num-shard",
        "--cuda-memory-fraction",
        "--max-batch-size",
        "--max-seq-len",
        "--max-num-tokens",
        "--max-input-length",
        "--kv-cache-free-gpu-memory-fraction",
};

static int redact_secretish(const char *s, size_t n)
{
	static const char *const words[] = {
	        "token",         "password", "passwd",  "secret",    "bearer",
	        "authorization", "apikey",   "api_key", "credential"};
	if (n >= 3 && !strncasecmp(s, "sk-", 3))
		return 1;
	for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
		size_t k = strlen(words[w]);
		for (size_t i = 0; i + k <= n; i++)
			if (!strncasecmp(s + i, words[w], k))
				return 1;
	}
	return 0;
}

/* A letter, then letters, '_', '.', '-' (no digits, '/', ':', '='). */
static int redact_word(const char *s, size_t n)
{
	if (!n || n > 64 || (s[0] | 32) < 'a' || (s[0] | 32) > 'z')
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c | 32) >= 'a' && (c | 32) <= 'z') && c != '_' &&
		    c != '.' && c != '-')
			return 0;
	}
	return !redact_secretish(s, n);
}

static int redact_flag_name(const char *s, size_t n)
{
	size_t d = n > 1 && s[1] == '-' ? 2 : 1;
	if (n <= d || n > 64)
		return 0;
	for (size_t i = d; i < n; i++) {
		char c = s[i];
		if (!((c | 32) >= 'a' && (c | 32) <= 'z') &&
		    !(c >= '0' && c <= '9' && i > d) && c != '_' && c != '-' &&
		    c != '.')
			return 0;
	}
	return !(n - d >= 3 && !strncasecmp(s + d, "sk-", 3));
}

static int redact_number(const char *s, size_t n)
{
	if (!n || n > 24)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!strchr("0123456789.eE+-kKmMgG", s[i]))
			return 0;
	return s[0] >= '0' && s[0] <= '9';
}

static int redact_keeps(const char *flag, size_t fl, const char *v, size_t vl)
{
	if (fl == 2 && !memcmp(flag, "-m", 2))
		return redact_word(v, vl);
	for (size_t i = 0; i < sizeof(redact_keep) / sizeof(redact_keep[0]);
	     i++)
		if (strlen(redact_keep[i]) == fl &&
		    !memcmp(redact_keep[i], flag, fl))
			return redact_number(v, vl);
	return 0;
}

/* Writes the NUL-separated arguments of cmd[0..clen) to out, redacted;
 * returns the bytes written. out needs 2 * clen + 4 bytes: "***" can
 * replace a 1-byte argument. clen ends with a NUL. */
static size_t redact_args(const char *cmd, size_t clen, char *out)
{
	size_t o = 0;
	const char *flag = NULL;
	size_t fl = 0;
	for (size_t i = 0, k = 0; i < clen; k++) {
		const char *a = cmd + i;
		size_t n = strnlen(a, clen - i);
		i += n + 1;
		const char *eq = memchr(a, '=', n);
		if (k == 0) {
			memcpy(out + o, a, n);
			o += n;
		} else if (a[0] == '-' && n > 1 &&
		           !redact_number(a + 1, n - 1)) {
			size_t nl = eq ? (size_t)(eq - a) : n;
			if (!redact_flag_name(a, nl)) {
				memcpy(out + o, "***", 3);
				o += 3;
				flag = NULL;
			} else {
				memcpy(out + o, a, nl);
				o += nl;
				if (eq) {
					const char *v = eq + 1;
					size_t vl = n - nl - 1;
					out[o++] = '=';
					int keep = redact_keeps(a, nl, v, vl);
					memcpy(out + o, keep ? v : "***",
					       keep ? vl : 3);
					o += keep ? vl : 3;
					flag = NULL;
				} else {
					flag = a;
					fl = nl;
				}
			}
		} else {
			int keep = flag ? redact_keeps(flag, fl, a, n)
			                : redact_word(a, n);
			memcpy(out + o, keep ? a : "***", keep ? n : 3);
			o += keep ? n : 3;
			flag = NULL;
		}
		out[o++] = 0;
	}
	return o;
}

static void stage_header(uint64_t wall_ns, uint64_t mono_ns, uint64_t flags)
{
	uint8_t *p = malloc(VRT_REC_MAX_PAYLOAD);
	if (!p)
		return;
	size_t n = 0;
	memcpy(p, VRT_TRACE_MAGIC, VRT_TRACE_MAGIC_LEN);
	n += VRT_TRACE_MAGIC_LEN;
	n += vrt_put_uvarint(p + n, VRT_TRACE_VERSION);
	n += vrt_put_uvarint(p + n, (uint64_t)getpid());
	n += vrt_put_uvarint(p + n, (uint64_t)getppid());
	n += vrt_put_uvarint(p + n, wall_ns);
	n += vrt_put_uvarint(p + n, mono_ns);
	n += vrt_put_uvarint(p + n, flags);
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	n += put_str(p + n, host, 255);
	char exe[4096];
	ssize_t el = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[el > 0 ? el : 0] = 0;
	n += put_str(p + n, exe, sizeof(exe));
	/* The command line, as /proc shows it, cut to what fits. */
	char *cmd = malloc(32768);
	size_t clen = 0;
	if (cmd) {
		struct vrt_fd cfd = vrt_fds_open("/proc/self/cmdline",
		                                 O_RDONLY, 0);
		if (cfd.fd >= 0) {
			ssize_t r;
			while (clen < 32767 &&
			       (r = vrt_fds_read(cfd, cmd + clen,
			                         32767 - clen)) > 0)
				clen += (size_t)r;
			vrt_fds_close(&cfd);
		}
	}
	if (cmd && clen && cmd[clen - 1] != 0)
		cmd[clen++] = 0;
	if (cmd && clen && vrt_options_int(VRT_OPT_REDACT)) {
		/* "***" plus its NUL can outgrow a 1-byte argument ("a\0"
		 * becomes "***\0"): room for twice the input is enough. */
		char *red = malloc(2 * clen + 4);
		if (red) {
			clen = redact_args(cmd, clen, red);
			free(cmd);
			cmd = red;
		} else {
			clen = 0; /* never store what was asked to be hidden */
		}
	}
	uint64_t argc = 0;
	for (size_t i = 0; i < clen; i++)
		argc += cmd[i] == 0;
	if (clen && cmd[clen - 1] != 0)
		argc++;
	n += vrt_put_uvarint(p + n, argc);
	for (size_t i = 0; i < clen && n < VRT_REC_MAX_PAYLOAD - 4200;) {
		size_t len = strnlen(cmd + i, clen - i);
		size_t take = len < 4096 ? len : 4096;
		n += vrt_put_uvarint(p + n, take);
		memcpy(p + n, cmd + i, take);
		n += take;
		i += len + 1;
	}
	stage_record(VRT_REC_HEADER, p, n);
	free(cmd);
	free(p);
}

static void stage_devices(void)
{
	pthread_mutex_lock(&w_mu);
	int n = devs_pending ? known_ndev : 0;
	struct vrt_device_info devs[MAX_DEVICES];
	if (n > 0)
		memcpy(devs, known_devs, (size_t)n * sizeof(devs[0]));
	devs_pending = 0;
	pthread_mutex_unlock(&w_mu);
	for (int i = 0; i < n; i++) {
		uint8_t p[256];
		size_t k = 0;
		k += vrt_put_uvarint(p + k, (uint64_t)devs[i].vendor);
		k += vrt_put_uvarint(p + k, (uint64_t)devs[i].ordinal);
		k += vrt_put_uvarint(p + k, devs[i].total_bytes);
		k += put_str(p + k, devs[i].name, sizeof(devs[i].name) - 1);
		k += vrt_put_uvarint(p + k, devs[i].have_uuid ? 16 : 0);
		if (devs[i].have_uuid) {
			memcpy(p + k, devs[i].uuid, 16);
			k += 16;
		}
		stage_record(VRT_REC_DEVICE, p, k);
	}
}

/* How the process is leaving (vrt_writer_set_exit), for the trailer. */
static _Atomic int exit_kind, exit_code;

void vrt_writer_set_exit(int kind, int code)
{
	atomic_store(&exit_code, code);
	atomic_store(&exit_kind, kind);
}

static void stage_trailer(int clean)
{
	uint8_t p[512];
	size_t n = 0;
	uint64_t flags = (clean ? VRT_TRAILER_CLEAN_EXIT : 0) |
	                 (failed ? VRT_TRAILER_CAPTURE_OFF : 0);
	n += vrt_put_uvarint(p + n, vrt_clock_now());
	n += vrt_put_uvarint(p + n, flags);
	n += vrt_put_uvarint(p + n, vrt_tbuf_events());
	n += vrt_put_uvarint(p + n, vrt_tbuf_dropped());
	const char *note = vrt_capture_fail_reason();
	n += put_str(p + n, note ? note : "", 400);
	n += vrt_put_uvarint(p + n, (uint64_t)atomic_load(&exit_kind));
	n += vrt_put_uvarint(p + n, (uint64_t)(uint32_t)atomic_load(&exit_code));
	stage_record(VRT_REC_TRAILER, p, n);
}

/* Feeds one record straight into the open frame (stack definitions,
 * which can be many at start-up: they bypass the stage). */
static void emit_record(unsigned type, const uint8_t *payload, size_t len)
{
	uint8_t hdr[1 + VRT_UVARINT_MAX];
	hdr[0] = (uint8_t)type;
	size_t n = 1 + vrt_put_uvarint(hdr + 1, len);
	zfeed(hdr, n, 0);
	zfeed(payload, len, 0);
}

static void feed_chunk(const void *data, size_t len)
{
	zfeed(data, len, 0);
}

/* One pass: stage + definitions + every chunk + watermark, closed as
 * a frame when close is set or the frame holds FRAME_MAX (else the
 * frame stays open, the chunks waiting in batch.c). Definitions
 * are taken after the chunks were collected, so every stack a collected
 * event names is among them. */
static void write_pass(uint64_t watermark, struct vrt_chunk *chunks,
                       int close)
{
	/* Every event of this pass is stamped at or after the previous
	 * pass's watermark (tbuf.c): batch.c rounds no time below it. */
	static uint64_t floor_ts;
	if (!chunks && !stage_len && !vrt_batch_pending()) {
		if (close && frame_open)
			zfeed(NULL, 0, 1);
		if (close)
			frame_t0 = 0;
		return;
	}
	if (!frame_t0)
		frame_t0 = vrt_clock_now();
	if (stage_len)
		zfeed(stage, stage_len, 0);
	stage_len = 0;
	if (chunks) {
		vrt_stack_emit(emit_record);
		vrt_phase_emit(emit_record);
		vrt_batch_pass(chunks, floor_ts);
		floor_ts = watermark;
	}
	/* The chunks wait in batch.c until the frame closes, each thread's
	 * under one CHUNK record. */
	for (struct vrt_chunk *c = chunks; c; c = c->next)
		vrt_batch_chunk(c->data, c->len);
	if (!close && frame_in + vrt_batch_pending() < FRAME_MAX)
		return;
	frame_t0 = 0;
	vrt_batch_emit(feed_chunk);
	/* Last in the frame: it covers everything written so far. */
	uint8_t wm[1 + 1 + VRT_UVARINT_MAX];
	size_t n = vrt_put_uvarint(wm + 2, watermark);
	wm[0] = VRT_REC_WATERMARK;
	wm[1] = (uint8_t)n;
	zfeed(wm, 2 + n, 1);
}

/* A pass; close: its frame ends with it (see the top of the file). */
static void pass(int final, int close)
{
	/* Once per frame, never on the allocation path: is the number
	 * still our file? */
	if (!failed && !vrt_fds_check(tfd))
		fail_taken();
	/* Lowered by the clock's slack: an event stamped just after the
	 * sweep passed its thread may carry a stamp a little older than the
	 * reading here (tbuf.c). */
	uint64_t watermark = vrt_clock_now() - vrt_clock_slack();
	struct vrt_chunk *chunks;
	vrt_tbuf_collect(&chunks);
	stage_devices();
	if (final)
		stage_trailer(1);
	write_pass(watermark, chunks, close || final);
	vrt_tbuf_release(chunks);
}

static _Atomic int thread_started;
static int request(int stop, int timeout_ms);

/* The writer wakes at least this often to keep the clock calibrated, and
 * passes every half flush interval (or at once when asked). */
#define CALIBRATE_MS 250

static void *writer_main(void *arg)
{
	vrt_capture_thread_started(&thread_started);
	(void)arg;
	int half = flush_ms / 2 > 0 ? flush_ms / 2 : 1;
	uint64_t last_pass = 0;
	for (;;) {
		int kicked = vrt_tbuf_writer_wait(
		        half < CALIBRATE_MS ? half : CALIBRATE_MS);
		if (vrt_capture_tick)
			vrt_capture_tick();
		pthread_mutex_lock(&w_mu);
		uint64_t seq = req_seq;
		int stop = stop_req;
		pthread_mutex_unlock(&w_mu);
		/* A pass may allocate (symbol names, zstd): fork waits for it
		 * to finish, so a child never inherits an allocator lock held
		 * by this thread (glibc's malloc copes; others may not). The
		 * clock's parameters are published under it too, so a child
		 * never sees them half written. */
		pthread_mutex_lock(&pass_mu);
		vrt_clock_calibrate();
		uint64_t now = vrt_clock_now();
		int due = kicked || stop || seq != done_seq ||
		          now - last_pass >= (uint64_t)half * 1000000u;
		if (due) {
			int close = stop || seq != done_seq ||
			            (frame_t0 &&
			             now - frame_t0 >=
			                     (uint64_t)flush_ms * 1000000u);
			pass(stop, close);
			last_pass = now;
		}
		pthread_mutex_unlock(&pass_mu);
		if (!due)
			continue;
		if (seq != done_seq && !failed && vrt_fds_use(tfd)) {
			int r = fdatasync(tfd.fd), e = errno;
			vrt_fds_done(tfd);
			if (r < 0 && e != EINVAL && e != EROFS)
				fail("fdatasync", e);
		}
		pthread_mutex_lock(&w_mu);
		done_seq = seq;
		if (stop)
			stopped = 1;
		int orphan = stop && orphaned;
		pthread_cond_broadcast(&w_cv);
		pthread_mutex_unlock(&w_mu);
		if (orphan) {
			vrt_fds_close(&tfd);
			pthread_detach(pthread_self());
			pthread_mutex_lock(&w_mu);
			orphaned = 0;
			running = 0;
			pthread_cond_broadcast(&w_cv);
			pthread_mutex_unlock(&w_mu);
		}
		if (stop)
			break;
	}
	vrt_capture_thread_exiting();
	return NULL;
}

/* Creates the trace in dir (made 0700 if missing; refused unless it is
 * ours and writable by nobody else); 0 or -errno. */
static int open_trace(const char *dir)
{
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	struct vrt_fd dfd = vrt_fds_open(dir, O_RDONLY | O_DIRECTORY |
	                                              O_NOFOLLOW, 0);
	if (dfd.fd < 0)
		return -errno;
	char why[128];
	if (vrt_rundir_check(dfd.fd, geteuid(), why, sizeof(why))) {
		vrt_fds_close(&dfd);
		return -EPERM;
	}
	struct vrt_fd out = VRT_FD_NONE;
	for (int i = 0; i < 100 && out.fd < 0; i++) {
		char name[64];
		if (i == 0)
			snprintf(name, sizeof(name), "%d%s", (int)getpid(),
			         VRT_TRACE_SUFFIX);
		else
			snprintf(name, sizeof(name), "%d-%d%s", (int)getpid(),
			         i, VRT_TRACE_SUFFIX);
		out = vrt_fds_openat(dfd, name,
		                     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW,
		                     0600);
		if (out.fd < 0 && errno != EEXIST)
			break;
	}
	int err = out.fd < 0 ? -errno : 0;
	vrt_fds_close(&dfd);
	tfd = out;
	return err;
}

/* The program is about to take the trace's number: what is buffered goes
 * to disk first (bounded: the closing call waits for it). */
static void flush_before_taken(void)
{
	request(0, TAKEN_FLUSH_MS);
}

static uint64_t origin_mono, origin_wall; /* 0: none; session.c's
                                             * start_mu */
static int origin_standby;

void vrt_writer_set_origin(uint64_t mono_ns, uint64_t wall_ns, int standby)
{
	origin_mono = mono_ns;
	origin_wall = wall_ns;
	origin_standby = standby;
}

static uint64_t extra_flags; /* session.c's start_mu, or before it */

void vrt_writer_set_flags(uint64_t flags)
{
	extra_flags = flags;
}

int vrt_writer_wait_orphan(int timeout_ms)
{
	struct timespec until;
	vrt_clock_deadline(&until, timeout_ms);
	int cancel = vrt_capture_cancel_off();
	pthread_mutex_lock(&w_mu);
	while (orphaned &&
	       pthread_cond_timedwait(&w_cv, &w_mu, &until) != ETIMEDOUT)
		;
	int busy = orphaned;
	pthread_mutex_unlock(&w_mu);
	vrt_capture_cancel_restore(cancel);
	return busy ? -EBUSY : 0;
}

int vrt_writer_start(const char *dir, int flush_interval_ms, int level)
{
	/* A writer left to finish its last frame on its own (see orphaned)
	 * must be done before a new file starts. */
	if (vrt_writer_wait_orphan(5000))
		return -EBUSY;
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	uint64_t mono = vrt_clock_now(), flags = 0;
	if (origin_mono) {
		flags = origin_standby ? VRT_HEADER_STANDBY : 0;
		/* The header (and its frame's watermark) at the origin: a
		 * PAST record written later is no broken promise. */
		mono = origin_mono;
		wall.tv_sec = (time_t)(origin_wall / 1000000000u);
		wall.tv_nsec = (long)(origin_wall % 1000000000u);
		origin_mono = 0;
	}
	flags |= extra_flags;
	flush_ms = flush_interval_ms;
	failed = 0;
	stage_len = 0;
	frame_open = 0;
	frame_in = 0;
	/* A new file: readers start without state, and every string, frame,
	 * stack and custom phase is defined in it again. */
	vrt_batch_reset();
	vrt_stack_new_file();
	vrt_phase_new_file();
	frame_t0 = 0;
	int err = -ENOMEM;
	if (!stage)
		stage = malloc(STAGE_BYTES);
	zout_cap = ZSTD_CStreamOutSize();
	if (!zout)
		zout = malloc(zout_cap);
	if (cctx)
		ZSTD_freeCCtx(cctx);
	cctx = ZSTD_createCCtx();
	if (!stage || !zout || !cctx)
		goto fail;
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
	err = open_trace(dir);
	if (err)
		goto fail;
	vrt_fds_set_flush(tfd, flush_before_taken);
	stage_header((uint64_t)wall.tv_sec * 1000000000u +
	                     (uint64_t)wall.tv_nsec,
	             mono, flags);
	/* The header goes out now, in a frame of its own, so the file names
	 * its process even if the process dies before the first flush. */
	write_pass(mono, NULL, 1);
	if (failed) {
		err = -EIO;
		goto fail;
	}
	req_seq = done_seq = 0;
	stop_req = stopped = orphaned = 0;
	vrt_clock_cond_init(&w_cv);
	devs_pending = known_ndev > 0; /* a forked child repeats them */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	atomic_store(&thread_started, 0);
	err = -pthread_create(&thread, NULL, writer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!err)
		vrt_capture_wait_started(&thread_started);
	if (err)
		goto fail;
	pthread_setname_np(thread, "vramtrace-wr");
	running = 1;
	return 0;
fail:
	vrt_fds_close(&tfd);
	return err;
}

int vrt_writer_known_devices(struct vrt_device_info *out, int max)
{
	pthread_mutex_lock(&w_mu);
	int n = known_ndev < max ? known_ndev : max;
	memcpy(out, known_devs, (size_t)n * sizeof(out[0]));
	pthread_mutex_unlock(&w_mu);
	return n;
}

void vrt_writer_devices(const struct vrt_device_info *devs, int n)
{
	if (n <= 0)
		return;
	pthread_mutex_lock(&w_mu);
	/* One inventory per vendor: a process using both CUDA and HIP keeps
	 * both lists; a vendor's new list replaces only its own. Every
	 * device is staged again, and readers take a repeated DEVICE record
	 * as the same device. */
	int keep = 0;
	for (int i = 0; i < known_ndev; i++)
		if (known_devs[i].vendor != devs[0].vendor)
			known_devs[keep++] = known_devs[i];
	if (n > MAX_DEVICES - keep)
		n = MAX_DEVICES - keep;
	memcpy(known_devs + keep, devs, (size_t)n * sizeof(devs[0]));
	known_ndev = keep + n;
	devs_pending = 1;
	pthread_mutex_unlock(&w_mu);
}

/* Asks the writer for a pass (stop: the final one) and waits until it is
 * done or timeout_ms has passed. Returns 1 when the writer answered. */
static int request(int stop, int timeout_ms)
{
	struct timespec deadline;
	vrt_clock_deadline(&deadline, timeout_ms);
	/* Called from hooks on the program's threads: the wait below must
	 * not be where a cancellation ends the thread holding w_mu. */
	int cancel = vrt_capture_cancel_off();
	pthread_mutex_lock(&w_mu);
	if (!running || stop_req) {
		pthread_mutex_unlock(&w_mu);
		vrt_capture_cancel_restore(cancel);
		return 0;
	}
	uint64_t mine = ++req_seq;
	stop_req = stop;
	pthread_mutex_unlock(&w_mu);
	vrt_tbuf_kick();
	pthread_mutex_lock(&w_mu);
	while (done_seq < mine && !stopped)
		if (pthread_cond_timedwait(&w_cv, &w_mu, &deadline) ==
		    ETIMEDOUT)
			break;
	int answered = stop ? stopped : done_seq >= mine;
	pthread_mutex_unlock(&w_mu);
	vrt_capture_cancel_restore(cancel);
	return answered;
}

void vrt_writer_sync(int timeout_ms)
{
	request(0, timeout_ms);
}

void vrt_writer_stop(int timeout_ms)
{
	int done = request(1, timeout_ms);
	if (!done) {
		pthread_mutex_lock(&w_mu);
		if (stopped)
			done = running && !orphaned; /* an orphan lets
			                              * itself go: no join */
		else if (running && stop_req)
			orphaned = 1;
		pthread_mutex_unlock(&w_mu);
	}
	if (done) {
		pthread_join(thread, NULL);
		/* Not closed when the program took the number: then it is
		 * the program's file now. */
		vrt_fds_close(&tfd);
		running = 0;
	}
	/* Otherwise the writer is stuck in I/O; the process is exiting and
	 * the kernel closes the file. Waiting longer would hang the host. */
}

void vrt_writer_before_fork(void)
{
	pthread_mutex_lock(&pass_mu);
	pthread_mutex_lock(&w_mu);
}

void vrt_writer_after_fork_parent(void)
{
	pthread_mutex_unlock(&w_mu);
	pthread_mutex_unlock(&pass_mu);
}

void vrt_writer_after_fork_child(void)
{
	pthread_mutex_init(&pass_mu, NULL);
	pthread_mutex_init(&w_mu, NULL);
	vrt_clock_cond_init(&w_cv);
	/* The parent's writer thread does not exist here and its compression
	 * context may be mid-frame: drop both. The buffers are reused. The
	 * child's copy of the trace fd is closed with every other fd of ours
	 * (vrt_fds_after_fork_child), and only while it is still ours. */
	tfd = VRT_FD_NONE;
	cctx = NULL;
	running = 0;
	stop_req = stopped = orphaned = 0;
	req_seq = done_seq = 0;
}
