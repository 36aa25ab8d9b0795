/*
 * logcap.c — record's copy of the command's output (logcap.h).
 *
 * Each stream (the command's stdout, its stderr) has two pipes: the one
 * the command writes (or a pseudo-terminal when record's own stream is a
 * terminal) and a log pipe of LOG_PIPE_BYTES between record's two
 * threads. Threads and ownership:
 *   - record's main thread: open (before fork), start, finish.
 *   - the copy thread ("vrt-logcopy") owns the command's read ends and
 *     record's stdout/stderr. For a pipe it duplicates what arrived into
 *     the log pipe with tee(2) and moves it to record's stream with
 *     splice(2): no copy through user space, so it keeps up with any
 *     writer. When splice cannot reach record's stream (a terminal on an
 *     older kernel) or the input is a pseudo-terminal, it reads, writes
 *     record's stream, and writes the log pipe without blocking. Either
 *     way the log pipe never makes it wait: when the pipe is full (the
 *     disk is slow, or full), those bytes are counted in the stream's
 *     `dropped` (an atomic) and not kept; where they were dropped (the
 *     bytes the log pipe had taken before them) goes to the log thread
 *     through the stream's drop ring (single producer, single consumer:
 *     the copy thread advances ring_tail, the log thread ring_head, both
 *     atomics), published before any later byte enters the log pipe.
 *     Drops at the place of the last published one (nothing fed since)
 *     add to its count (an atomic) until the log thread claims it.
 *   - the log thread ("vrt-logwrite") owns the log pipes' read ends, the
 *     line buffers, output.log and the tail: it cuts what it reads into
 *     lines stamped with the UTC time it read them, writes the head up to
 *     head_max bytes, keeps the last tail_max bytes in memory after that,
 *     and writes them at finish behind a "cut here" line. It says where
 *     bytes were dropped ("dropped here" line, at the place the drop ring
 *     gives; a drop the ring had no room for, at the end) when it sees `dropped`
 *     grow.
 * Both threads start with every signal blocked (record's handlers run on
 * the main thread; a write to a closed terminal returns EPIPE instead of
 * raising SIGPIPE). All descriptors are O_CLOEXEC, so the command and its
 * children inherit only the two ends given to them. `stop` (atomic) is
 * the main thread's request to finish.
 */
#include "logcap.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "load/wallclock.h"

#define COPY_CHUNK     (256 * 1024)
#define PIPE_BYTES     (1 << 20) /* asked of the kernel per pipe */
#define LINE_MAX_LEN   (64 * 1024) /* a longer line is split */
#define STAGE_BYTES    (256 * 1024) /* lines written to the file at once */
#define PREFIX_LEN     32 /* "<27-byte time> out " */
#define MARKER_ROOM    512 /* the cut line, kept out of the tail */

/* Drops (runs of bytes the log pipe had no room for) in flight from the
 * copy thread to the log thread; more merge into the last unpublished. */
#define DROP_RING    32
#define DROP_CLAIMED UINT64_MAX

struct stream {
	int rfd;        /* our end of the command's pipe or pty, -1 closed */
	int cfd;        /* the command's end, -1 closed */
	int lr, lw;     /* the log pipe: the log thread reads lr */
	int out;        /* record's stream: 1 or 2 */
	int out_ok;     /* 0 once writing it failed (closed terminal) */
	int zero_copy;  /* tee + splice work for this stream */
	const char *tag; /* "out", "err" */
	uint64_t dropped; /* bytes the log pipe had no room for (atomic) */
	/* the copy thread's: bytes put into the log pipe, and a drop not
	 * yet published in the ring (at fed == pend_pos, pend_n bytes) */
	uint64_t fed, pend_pos, pend_n;
	int published; /* ring[(ring_tail - 1) % DROP_RING] is the last */
	/* drops the log thread has to mark: ring[head % DROP_RING] ..
	 * ring[tail % DROP_RING] (see the file comment); n is DROP_CLAIMED
	 * once the log thread took it */
	struct {
		uint64_t pos, n;
	} ring[DROP_RING];
	unsigned ring_head, ring_tail;
	/* the log thread's: bytes read from the log pipe, dropped bytes
	 * marked */
	uint64_t consumed;
	uint64_t dropped_seen;
	char *line;
	size_t nline;
	int64_t line_ns;
};

/* The newlines in p[0..n). */
static uint64_t count_lines(const char *p, size_t n)
{
	uint64_t c = 0;
	const char *e = p + n, *q;

	while (p < e && (q = memchr(p, '\n', (size_t)(e - p)))) {
		c++;
		p = q + 1;
	}
	return c;
}

struct vrt_logcap {
	int fd; /* output.log */
	char path[4096];
	uint64_t head_max, tail_max;
	struct stream s[2];
	pthread_t copier, logger;
	int started;
	int stop; /* finish asked: drain, then end (atomic) */
	int64_t stop_deadline_ns; /* monotonic, set before stop */
	char *buf; /* the copy thread's read buffer */
	uint64_t bytes_in;
	/* the log thread's */
	char *rbuf;
	int64_t stamp_ns; /* the time stamp[] holds, formatted once */
	char stamp[28];
	char *stage;
	size_t nstage;
	uint64_t lines_in;
	uint64_t written, head_lines;
	int tail_mode;
	char *tail;      /* tail_max bytes, circular */
	uint64_t tail_total, tail_lines; /* bytes and lines given to it */
	uint64_t cut;    /* bytes left out between head and tail */
	uint64_t lost;   /* bytes with no memory to keep them */
	int werr;
};

int vrt_logcap_parse_size(const char *s, uint64_t *bytes)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	if (*end == 'K' || *end == 'k')
		mul = 1ull << 10;
	else if (*end == 'M' || *end == 'm')
		mul = 1ull << 20;
	else if (*end == 'G' || *end == 'g')
		mul = 1ull << 30;
	else if (*end)
		return -1;
	if (*end && end[1] && strcmp(end + 1, "iB") && strcmp(end + 1, "B"))
		return -1;
	if (v > UINT64_MAX / mul)
		return -1;
	*bytes = v * mul;
	return 0;
}

static int64_t now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A write of all n bytes, retried on EINTR; 0 or -1 with errno. */
static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* ---- the ends given to the command ------------------------------------- */

/* A pseudo-terminal for a stream that is a terminal: the command sees a
 * terminal (colours, line buffering) of the same size. Output processing
 * is off on it, so bytes pass unchanged and record's real terminal does
 * the \n -> \r\n it would have done for the command. */
static int open_pty(struct stream *st, int like)
{
	struct termios tio;
	struct winsize ws;
	char name[128];
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC), sl;

	if (m < 0)
		return -1;
	if (grantpt(m) || unlockpt(m) || ptsname_r(m, name, sizeof(name))) {
		close(m);
		return -1;
	}
	sl = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (sl < 0) {
		close(m);
		return -1;
	}
	if (!tcgetattr(like, &tio)) {
		tio.c_oflag &= ~(tcflag_t)OPOST;
		tcsetattr(sl, TCSANOW, &tio);
	} else if (!tcgetattr(sl, &tio)) {
		tio.c_oflag &= ~(tcflag_t)OPOST;
		tcsetattr(sl, TCSANOW, &tio);
	}
	/* A size of 0 x 0 confuses programs that lay out text; the real
	 * terminal's is the one the command would have seen. */
	if (!ioctl(like, TIOCGWINSZ, &ws))
		ioctl(sl, TIOCSWINSZ, &ws);
	st->rfd = m;
	st->cfd = sl;
	return 0;
}

static int open_pipe(int fds[2])
{
	if (pipe2(fds, O_CLOEXEC))
		return -1;
	/* A deeper pipe absorbs a burst while a thread is busy; best
	 * effort (/proc/sys/fs/pipe-max-size may refuse it). */
	(void)fcntl(fds[0], F_SETPIPE_SZ, PIPE_BYTES);
	return 0;
}

int vrt_logcap_open(struct vrt_logcap **out, const char *dir,
                    uint64_t max_bytes, char *err, size_t errn)
{
	struct vrt_logcap *lc = calloc(1, sizeof(*lc));
	int i, fds[2];

	*out = NULL;
	if (!lc) {
		snprintf(err, errn, "out of memory");
		return -1;
	}
	if (!max_bytes)
		max_bytes = VRT_LOGCAP_MAX_DEFAULT;
	if (max_bytes < VRT_LOGCAP_MAX_MIN)
		max_bytes = VRT_LOGCAP_MAX_MIN;
	lc->head_max = max_bytes / 4;
	lc->tail_max = max_bytes - lc->head_max - MARKER_ROOM;
	for (i = 0; i < 2; i++) {
		lc->s[i].rfd = lc->s[i].cfd = lc->s[i].lr = lc->s[i].lw = -1;
		lc->s[i].out = i + 1;
		lc->s[i].out_ok = 1;
		lc->s[i].tag = i ? "err" : "out";
	}
	lc->fd = -1;
	snprintf(lc->path, sizeof(lc->path), "%s/%s", dir, VRT_LOGCAP_NAME);
	lc->buf = malloc(COPY_CHUNK);
	lc->rbuf = malloc(COPY_CHUNK);
	lc->stage = malloc(STAGE_BYTES + LINE_MAX_LEN + 2 * PREFIX_LEN + 512);
	lc->s[0].line = malloc(LINE_MAX_LEN);
	lc->s[1].line = malloc(LINE_MAX_LEN);
	if (!lc->buf || !lc->rbuf || !lc->stage || !lc->s[0].line ||
	    !lc->s[1].line) {
		snprintf(err, errn, "out of memory");
		goto fail;
	}
	lc->fd = open(lc->path,
	              O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	              0600);
	if (lc->fd < 0) {
		snprintf(err, errn, "%s: cannot create: %s", lc->path,
		         strerror(errno));
		goto fail;
	}
	for (i = 0; i < 2; i++) {
		struct stream *st = &lc->s[i];
		int r = isatty(st->out) ? open_pty(st, st->out) : -1;
		/* No pseudo-terminal (not a terminal, or none left): a pipe,
		 * what the command would have had anyway without one. */
		if (r) {
			if (open_pipe(fds))
				goto fail_pipe;
			st->rfd = fds[0];
			st->cfd = fds[1];
			st->zero_copy = 1;
		}
		if (open_pipe(fds))
			goto fail_pipe;
		st->lr = fds[0];
		st->lw = fds[1];
		/* the copy thread never waits for the log thread */
		if (fcntl(st->lw, F_SETFL, O_NONBLOCK))
			goto fail_pipe;
	}
	*out = lc;
	return 0;
fail_pipe:
	snprintf(err, errn, "pipe: %s", strerror(errno));
fail:
	for (i = 0; i < 2; i++) {
		int *fd[4] = {&lc->s[i].rfd, &lc->s[i].cfd, &lc->s[i].lr,
		              &lc->s[i].lw};
		for (int k = 0; k < 4; k++)
			if (*fd[k] >= 0)
				close(*fd[k]);
		free(lc->s[i].line);
	}
	if (lc->fd >= 0) {
		close(lc->fd);
		unlink(lc->path);
	}
	free(lc->buf);
	free(lc->rbuf);
	free(lc->stage);
	free(lc);
	return -1;
}

void vrt_logcap_child(const struct vrt_logcap *lc)
{
	/* dup2 drops O_CLOEXEC on the copy; the originals close at exec. */
	if (lc->s[0].cfd >= 0)
		dup2(lc->s[0].cfd, 1);
	if (lc->s[1].cfd >= 0)
		dup2(lc->s[1].cfd, 2);
}

/* ---- the copy thread --------------------------------------------------- */

/* n bytes the log pipe had no room for, after the fed bytes it took. */
static void drop(struct stream *st, uint64_t n)
{
	__atomic_add_fetch(&st->dropped, n, __ATOMIC_RELEASE);
	if (!st->pend_n && st->published) {
		/* nothing fed since the last published drop: the same place,
		 * one count, unless the log thread has claimed it */
		unsigned k = (st->ring_tail - 1) % DROP_RING;
		uint64_t old = __atomic_load_n(&st->ring[k].n, __ATOMIC_ACQUIRE);
		while (st->ring[k].pos == st->fed && old != DROP_CLAIMED)
			if (__atomic_compare_exchange_n(&st->ring[k].n, &old,
			                                old + n, 0,
			                                __ATOMIC_ACQ_REL,
			                                __ATOMIC_ACQUIRE))
				return;
	}
	if (!st->pend_n)
		st->pend_pos = st->fed;
	st->pend_n += n;
}

/* Hands the pending drop to the log thread: called before any later byte
 * enters the log pipe, so the log thread learns of it before it reads
 * past its place. A full ring keeps it pending (later drops merge in). */
static void publish(struct stream *st)
{
	unsigned tail = st->ring_tail;

	if (!st->pend_n ||
	    tail - __atomic_load_n(&st->ring_head, __ATOMIC_ACQUIRE) >=
	            DROP_RING)
		return;
	st->ring[tail % DROP_RING].pos = st->pend_pos;
	__atomic_store_n(&st->ring[tail % DROP_RING].n, st->pend_n,
	                 __ATOMIC_RELAXED);
	__atomic_store_n(&st->ring_tail, tail + 1, __ATOMIC_RELEASE);
	st->pend_n = 0;
	st->published = 1;
}

/* Bytes read into the log pipe without waiting; what does not fit is
 * dropped. */
static void log_put(struct stream *st, const char *p, size_t n)
{
	publish(st);
	while (n) {
		ssize_t w = write(st->lw, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			drop(st, n);
			return;
		}
		st->fed += (uint64_t)w;
		p += w;
		n -= (size_t)w;
	}
}

/* The plain way: read, write record's stream, put into the log pipe.
 * Returns 0, or -1 at the end of the stream. */
static int copy_read(struct vrt_logcap *lc, struct stream *st)
{
	ssize_t got = read(st->rfd, lc->buf, COPY_CHUNK);

	if (got < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (got <= 0)
		return -1; /* EOF; a pseudo-terminal whose last writer closed
		            * reads EIO */
	/* record's stream first: it is where the command wrote */
	if (st->out_ok && write_all(st->out, lc->buf, (size_t)got))
		st->out_ok = 0;
	lc->bytes_in += (uint64_t)got;
	log_put(st, lc->buf, (size_t)got);
	return 0;
}

/* The zero-copy way for a pipe: tee into the log pipe, splice to record's
 * stream. Returns 0, or -1 at the end of the stream; turns st->zero_copy
 * off (the caller reads instead) when the kernel cannot splice there. */
static int copy_splice(struct vrt_logcap *lc, struct stream *st)
{
	ssize_t t;
	int full = 0;

	publish(st);
	t = tee(st->rfd, st->lw, COPY_CHUNK, SPLICE_F_NONBLOCK);
	if (t == 0)
		return -1; /* no writer left, nothing buffered */
	if (t > 0)
		st->fed += (uint64_t)t;
	if (t < 0) {
		if (errno == EINTR)
			return 0;
		if (errno != EAGAIN) {
			st->zero_copy = 0;
			return 0;
		}
		/* EAGAIN: the log pipe is full (or nothing came after all):
		 * what is there goes to record's stream only. */
		full = 1;
		t = COPY_CHUNK;
	}
	while (t > 0) {
		ssize_t m = splice(st->rfd, NULL, st->out, NULL, (size_t)t,
		                   SPLICE_F_MOVE | (full ? SPLICE_F_NONBLOCK : 0));
		if (m < 0 && errno == EINTR)
			continue;
		if (m < 0 && errno == EAGAIN && full)
			return 0; /* nothing there */
		if (m <= 0) {
			/* record's stream takes no splice (EINVAL) or is
			 * gone: the rest is read, and the log keeps the teed
			 * bytes already in its pipe */
			if (m < 0 && errno != EINVAL)
				st->out_ok = 0;
			st->zero_copy = 0;
			return 0;
		}
		if (full)
			drop(st, (uint64_t)m);
		lc->bytes_in += (uint64_t)m;
		t -= m;
		if (full)
			break;
	}
	return 0;
}

static void end_copy(struct stream *st)
{
	publish(st);
	close(st->rfd);
	st->rfd = -1;
	close(st->lw); /* the log thread reads to the end, then EOF */
	st->lw = -1;
}

/* The open ends of the streams to poll: the command's (copy thread) or
 * the log pipes' (log thread); map[k] is the stream of pf[k]. */
static int poll_set(struct vrt_logcap *lc, int log_side, struct pollfd *pf,
                    int *map)
{
	int i, n = 0;

	for (i = 0; i < 2; i++) {
		int fd = log_side ? lc->s[i].lr : lc->s[i].rfd;
		if (fd < 0)
			continue;
		pf[n].fd = fd;
		pf[n].events = POLLIN;
		pf[n].revents = 0;
		map[n++] = i;
	}
	return n;
}

static void *copy_main(void *arg)
{
	struct vrt_logcap *lc = arg;
	struct pollfd pf[2];
	int i;

	pthread_setname_np(pthread_self(), "vrt-logcopy");
	for (;;) {
		int r, map[2], nfds = poll_set(lc, 0, pf, map);
		int stopping = __atomic_load_n(&lc->stop, __ATOMIC_ACQUIRE);
		if (!nfds)
			break;
		/* Asked to stop (the tree was reaped): what is already in the
		 * pipes is copied; a process left running that keeps writing
		 * gets until the deadline. */
		if (stopping && now_ns(CLOCK_MONOTONIC) > lc->stop_deadline_ns)
			break;
		/* the timeout lets a stop request be seen while nothing
		 * comes */
		r = poll(pf, (nfds_t)nfds, stopping ? 200 : 100);
		if (r < 0 && errno != EINTR)
			break;
		if (r == 0 && stopping)
			break; /* nothing more came */
		for (i = 0; r > 0 && i < nfds; i++) {
			struct stream *st = &lc->s[map[i]];
			int end;
			if (!pf[i].revents)
				continue;
			end = st->zero_copy && st->out_ok
			              ? copy_splice(lc, st)
			              : copy_read(lc, st);
			if (end)
				end_copy(st);
		}
	}
	for (i = 0; i < 2; i++)
		if (lc->s[i].rfd >= 0)
			end_copy(&lc->s[i]);
	return NULL;
}

/* ---- output.log ----------------------------------------------------------- */

static void file_write(struct vrt_logcap *lc, const char *p, size_t n)
{
	while (!lc->werr && n) {
		ssize_t w = write(lc->fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			/* A full or failing disk: the file stops here; record
			 * says so at the end. The command is not affected. */
			lc->werr = w < 0 ? errno : EIO;
			return;
		}
		lc->written += (uint64_t)w;
		p += w;
		n -= (size_t)w;
	}
}

static void tail_put(struct vrt_logcap *lc, const char *p, size_t n)
{
	lc->tail_total += n;
	lc->tail_lines += count_lines(p, n);
	if (n >= lc->tail_max) {
		p += n - lc->tail_max;
		n = lc->tail_max;
	}
	{
		size_t at = (size_t)((lc->tail_total - n) % lc->tail_max);
		size_t first = lc->tail_max - at < n ? lc->tail_max - at : n;
		memcpy(lc->tail + at, p, first);
		memcpy(lc->tail, p + first, n - first);
	}
}

/* Whole lines p[0..n): the head while it has room, then the tail. */
static void consume(struct vrt_logcap *lc, const char *p, size_t n)
{
	if (!lc->tail_mode) {
		size_t room = lc->written < lc->head_max
		                      ? (size_t)(lc->head_max - lc->written)
		                      : 0;
		size_t k = n <= room ? n : 0;
		if (n > room) {
			/* the head ends at the last line that fits */
			for (k = room; k > 0 && p[k - 1] != '\n'; k--)
				;
		}
		file_write(lc, p, k);
		lc->head_lines += count_lines(p, k);
		if (k == n)
			return;
		lc->tail_mode = 1;
		lc->tail = malloc(lc->tail_max);
		p += k;
		n -= k;
	}
	if (lc->tail)
		tail_put(lc, p, n);
	else
		lc->lost += n; /* no memory for the tail */
}

/* ---- the log thread ------------------------------------------------------ */

/* The time stamp of ns, formatted once for all the lines of a read. */
static const char *stamp_of(struct vrt_logcap *lc, int64_t ns)
{
	char t[VRT_WALLCLOCK_TEXT];

	if (ns != lc->stamp_ns || !lc->stamp[0]) {
		vrt_wallclock_format(t, sizeof(t), ns, 6);
		memcpy(lc->stamp, t, 27);
		lc->stamp_ns = ns;
	}
	return lc->stamp;
}

static void flush_stage(struct vrt_logcap *lc)
{
	consume(lc, lc->stage, lc->nstage);
	lc->nstage = 0;
}

/* One whole line of st into the stage, with its time and stream. */
static void stage_line(struct vrt_logcap *lc, struct stream *st)
{
	char *p = lc->stage + lc->nstage;

	memcpy(p, stamp_of(lc, st->line_ns), 27);
	p[27] = ' ';
	memcpy(p + 28, st->tag, 3);
	p[31] = ' ';
	memcpy(p + PREFIX_LEN, st->line, st->nline);
	p[PREFIX_LEN + st->nline] = '\n';
	lc->nstage += PREFIX_LEN + st->nline + 1;
	lc->lines_in++;
	st->nline = 0;
	if (lc->nstage >= STAGE_BYTES)
		flush_stage(lc);
}

/* Bytes of st read at wall time ns: complete lines go to the stage. */
static void take(struct vrt_logcap *lc, struct stream *st, const char *p,
                 size_t n, int64_t ns)
{
	while (n) {
		const char *nl = memchr(p, '\n', n);
		size_t k = nl ? (size_t)(nl - p) : n;
		if (!st->nline)
			st->line_ns = ns;
		if (st->nline + k > LINE_MAX_LEN)
			k = LINE_MAX_LEN - st->nline;
		memcpy(st->line + st->nline, p, k);
		st->nline += k;
		p += k;
		n -= k;
		if (n && *p == '\n') {
			p++;
			n--;
		} else if (st->nline < LINE_MAX_LEN) {
			break; /* the line goes on in the next read */
		}
		stage_line(lc, st);
	}
}

/* A line saying n bytes of st were dropped here. */
static void dropped_line(struct vrt_logcap *lc, struct stream *st, uint64_t n)
{
	char *p = lc->stage + lc->nstage;
	int k;

	if (!n)
		return;
	k = snprintf(p, 400,
	             "%.27s %s --- vramtrace: %llu bytes of output dropped "
	             "here: the log did not keep up ---\n",
	             stamp_of(lc, now_ns(CLOCK_REALTIME)), st->tag,
	             (unsigned long long)n);
	lc->nstage += (size_t)k;
	st->dropped_seen += n;
	flush_stage(lc);
}

/* Bytes of st read from its log pipe: into lines, with a "dropped here"
 * line at the place of each drop the ring gives. */
static void take_marked(struct vrt_logcap *lc, struct stream *st, const char *p,
                        size_t n, int64_t ns)
{
	for (;;) {
		unsigned head = st->ring_head;
		uint64_t pos, k;
		if (head == __atomic_load_n(&st->ring_tail, __ATOMIC_ACQUIRE))
			break;
		pos = st->ring[head % DROP_RING].pos;
		if (pos > st->consumed + n)
			break;
		k = pos > st->consumed ? pos - st->consumed : 0;
		take(lc, st, p, (size_t)k, ns);
		p += k;
		n -= (size_t)k;
		st->consumed += k;
		dropped_line(lc, st,
		             __atomic_exchange_n(&st->ring[head % DROP_RING].n,
		                                 DROP_CLAIMED, __ATOMIC_ACQ_REL));
		__atomic_store_n(&st->ring_head, head + 1, __ATOMIC_RELEASE);
	}
	take(lc, st, p, n, ns);
	st->consumed += n;
}

/* What was dropped and not yet marked (a ring that was full). */
static void dropped_rest(struct vrt_logcap *lc, struct stream *st)
{
	dropped_line(lc, st,
	             __atomic_load_n(&st->dropped, __ATOMIC_ACQUIRE) -
	                     st->dropped_seen);
}

static void *log_main(void *arg)
{
	struct vrt_logcap *lc = arg;
	struct pollfd pf[2];
	int i;

	pthread_setname_np(pthread_self(), "vrt-logwrite");
	for (;;) {
		int map[2], nfds = poll_set(lc, 1, pf, map);
		if (!nfds)
			break;
		if (poll(pf, (nfds_t)nfds, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (i = 0; i < nfds; i++) {
			struct stream *st = &lc->s[map[i]];
			ssize_t got;
			if (!pf[i].revents)
				continue;
			got = read(st->lr, lc->rbuf, COPY_CHUNK);
			if (got < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (got > 0) {
				take_marked(lc, st, lc->rbuf, (size_t)got,
				            now_ns(CLOCK_REALTIME));
				continue;
			}
			/* the copy side ended: the drops at the end, and a
			 * last line without its newline (a kill mid-write) */
			take_marked(lc, st, lc->rbuf, 0, now_ns(CLOCK_REALTIME));
			if (st->nline)
				stage_line(lc, st);
			close(st->lr);
			st->lr = -1;
		}
		flush_stage(lc);
	}
	for (i = 0; i < 2; i++)
		dropped_rest(lc, &lc->s[i]);
	flush_stage(lc);
	return NULL;
}

int vrt_logcap_start(struct vrt_logcap *lc, char *err, size_t errn)
{
	sigset_t all, old;
	int i, e;

	for (i = 0; i < 2; i++) {
		close(lc->s[i].cfd);
		lc->s[i].cfd = -1;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	e = pthread_create(&lc->logger, NULL, log_main, lc);
	if (!e) {
		e = pthread_create(&lc->copier, NULL, copy_main, lc);
		if (e) {
			/* no copier: end the log pipes so the logger ends */
			for (i = 0; i < 2; i++) {
				close(lc->s[i].lw);
				lc->s[i].lw = -1;
			}
			pthread_join(lc->logger, NULL);
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		snprintf(err, errn, "cannot start a thread: %s", strerror(e));
		return -1;
	}
	lc->started = 1;
	return 0;
}

/* The kept tail after the "cut here" line, from its first whole line. */
static void write_tail(struct vrt_logcap *lc)
{
	uint64_t kept = lc->tail_total < lc->tail_max ? lc->tail_total
	                                              : lc->tail_max;
	size_t start = (size_t)((lc->tail_total - kept) % lc->tail_max);
	uint64_t skip = 0, cut, lines_kept = 0, k;
	char marker[320], ts[VRT_WALLCLOCK_TEXT];

	if (!lc->tail)
		return;
	if (lc->tail_total > lc->tail_max) {
		/* the oldest kept bytes may start mid-line */
		while (skip < kept &&
		       lc->tail[(start + skip) % lc->tail_max] != '\n')
			skip++;
		if (skip < kept)
			skip++;
	}
	{
		/* the kept bytes are at most two runs of the circle */
		size_t a = (start + (size_t)skip) % lc->tail_max;
		size_t len = (size_t)(kept - skip);
		size_t first = lc->tail_max - a < len ? lc->tail_max - a : len;
		lines_kept = count_lines(lc->tail + a, first) +
		             count_lines(lc->tail, len - first);
	}
	cut = lc->tail_total - kept + skip;
	lc->cut = cut;
	if (cut) {
		int n = snprintf(
		        marker, sizeof(marker),
		        "%s out --- vramtrace: %llu bytes (%llu lines) of output "
		        "cut here: %s keeps the first %llu and the last %llu "
		        "bytes ---\n",
		        vrt_wallclock_format(ts, sizeof(ts),
		                             now_ns(CLOCK_REALTIME), 6),
		        (unsigned long long)cut,
		        (unsigned long long)(lc->tail_lines - lines_kept),
		        VRT_LOGCAP_NAME, (unsigned long long)lc->written,
		        (unsigned long long)(kept - skip));
		file_write(lc, marker, (size_t)n);
	}
	start = (start + (size_t)skip) % lc->tail_max;
	kept -= skip;
	k = lc->tail_max - start < kept ? lc->tail_max - start : kept;
	file_write(lc, lc->tail + start, (size_t)k);
	file_write(lc, lc->tail, (size_t)(kept - k));
}

void vrt_logcap_finish(struct vrt_logcap *lc, int discard,
                       struct vrt_logcap_stats *stats)
{
	int i;

	if (!lc)
		return;
	if (lc->started) {
		lc->stop_deadline_ns = now_ns(CLOCK_MONOTONIC) + 1000000000ll;
		__atomic_store_n(&lc->stop, 1, __ATOMIC_RELEASE);
		pthread_join(lc->copier, NULL);
		pthread_join(lc->logger, NULL);
	}
	if (lc->tail_mode && !discard)
		write_tail(lc);
	if (stats) {
		stats->bytes_in = lc->bytes_in;
		stats->lines_in = lc->lines_in;
		stats->bytes_written = lc->written;
		stats->bytes_cut = lc->cut;
		stats->bytes_dropped =
		        lc->s[0].dropped + lc->s[1].dropped + lc->lost;
		stats->write_errno = lc->werr;
	}
	for (i = 0; i < 2; i++) {
		int *fd[4] = {&lc->s[i].rfd, &lc->s[i].cfd, &lc->s[i].lr,
		              &lc->s[i].lw};
		for (int k = 0; k < 4; k++)
			if (*fd[k] >= 0)
				close(*fd[k]);
		free(lc->s[i].line);
	}
	close(lc->fd);
	if (discard)
		unlink(lc->path);
	free(lc->buf);
	free(lc->rbuf);
	free(lc->stage);
	free(lc->tail);
	free(lc);
}
