/*
 * logcap.c — record's copy of the command's output (logcap.h).
 *
 * Threads and ownership:
 *   - record's main thread: open (before fork), start, finish.
 *   - the copy thread ("vrt-logcopy"): polls the read ends of both
 *     streams, reads up to COPY_CHUNK bytes, writes them to record's own
 *     stdout/stderr first (a blocked terminal blocks the command exactly as
 *     it would have without record), then cuts them into lines stamped
 *     with the UTC time of the read and hands them to the ring. It owns
 *     the line buffers.
 *   - the writer thread ("vrt-logwrite"): takes lines from the ring and
 *     writes output.log: the head up to head_max bytes, after that the
 *     lines go to an in-memory tail that keeps the last tail_max bytes,
 *     written at finish after the "cut here" line. It owns the file and
 *     the tail.
 *   - the ring (RING_BYTES) is the only shared state: lock protects
 *     ring[], rhead, rlen, the drop counters and the stop flags; cond
 *     wakes the writer. The copy thread never waits for space: a block
 *     that does not fit is counted as dropped and a "dropped here" line
 *     goes in front of the next block that fits, so a slow or full disk
 *     cannot slow the command down.
 * Both threads start with every signal blocked (record's handlers run on
 * the main thread; a write to a closed terminal returns EPIPE instead of
 * raising SIGPIPE). All descriptors are O_CLOEXEC, so the command and its
 * children inherit only the two ends given to them.
 */
#include "logcap.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "wallclock.h"

#define COPY_CHUNK   (64 * 1024)
#define LINE_MAX_LEN (64 * 1024)       /* a longer line is split */
#define RING_BYTES   (4u << 20)         /* copy thread -> writer */
#define STAGE_BYTES  (256 * 1024)       /* lines handed over at once */
#define PREFIX_LEN   32                 /* "<27-byte time> out " */
#define MARKER_ROOM  512                /* the cut line, kept out of tail */

struct stream {
	int rfd;      /* our read end (pty master or pipe), -1 closed */
	int cfd;      /* the child's end (pty slave or pipe), -1 closed */
	int out;      /* where the terminal copy goes: 1 or 2 */
	int out_ok;   /* 0 once that copy failed (closed terminal) */
	const char *tag; /* "out", "err" */
	char *line;   /* the line being assembled */
	size_t nline;
	int64_t line_ns; /* when its first byte was read */
};

struct vrt_logcap {
	int fd; /* output.log */
	char path[4096];
	uint64_t head_max, tail_max;
	struct stream s[2];
	pthread_t copier, writer;
	int started;
	/* shared with the writer, under lock */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	char *ring;
	size_t rhead, rlen;
	int copy_done; /* no more lines will come */
	uint64_t drop_bytes, drop_lines; /* since the last marker */
	uint64_t dropped_total;
	/* the copy thread */
	int stop;                /* finish asked: drain, then end (atomic) */
	int64_t stop_deadline_ns; /* monotonic */
	char *buf; /* one read */
	char *stage;
	size_t nstage;
	uint64_t stage_lines;
	uint64_t bytes_in, lines_in;
	/* the writer */
	uint64_t written, head_lines;
	int tail_mode;
	char *tail;      /* tail_max bytes, circular */
	uint64_t tail_total, tail_lines; /* bytes and lines given to it */
	uint64_t cut;    /* bytes left out between head and tail */
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

static int open_pipe(struct stream *st)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC))
		return -1;
	st->rfd = p[0];
	st->cfd = p[1];
	return 0;
}

int vrt_logcap_open(struct vrt_logcap **out, const char *dir,
                    uint64_t max_bytes, char *err, size_t errn)
{
	struct vrt_logcap *lc = calloc(1, sizeof(*lc));
	int i;

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
		lc->s[i].rfd = lc->s[i].cfd = -1;
		lc->s[i].out = i + 1;
		lc->s[i].out_ok = 1;
		lc->s[i].tag = i ? "err" : "out";
	}
	lc->fd = -1;
	snprintf(lc->path, sizeof(lc->path), "%s/%s", dir, VRT_LOGCAP_NAME);
	lc->ring = malloc(RING_BYTES);
	lc->buf = malloc(COPY_CHUNK);
	lc->stage = malloc(STAGE_BYTES + LINE_MAX_LEN + 2 * PREFIX_LEN + 256);
	lc->s[0].line = malloc(LINE_MAX_LEN);
	lc->s[1].line = malloc(LINE_MAX_LEN);
	if (!lc->ring || !lc->buf || !lc->stage || !lc->s[0].line ||
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
		int r = isatty(lc->s[i].out) ? open_pty(&lc->s[i], lc->s[i].out)
		                             : -1;
		/* No pseudo-terminal (none left, or not a terminal): a pipe,
		 * what the command would have had anyway without one. */
		if (r && open_pipe(&lc->s[i])) {
			snprintf(err, errn, "pipe: %s", strerror(errno));
			goto fail;
		}
	}
	pthread_mutex_init(&lc->lock, NULL);
	pthread_cond_init(&lc->cond, NULL);
	*out = lc;
	return 0;
fail:
	for (i = 0; i < 2; i++) {
		if (lc->s[i].rfd >= 0)
			close(lc->s[i].rfd);
		if (lc->s[i].cfd >= 0)
			close(lc->s[i].cfd);
		free(lc->s[i].line);
	}
	if (lc->fd >= 0) {
		close(lc->fd);
		unlink(lc->path);
	}
	free(lc->ring);
	free(lc->buf);
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

/* The stage (whole lines) into the ring, or counted as dropped. */
static void hand_over(struct vrt_logcap *lc)
{
	char marker[256];
	size_t need, n = 0;

	if (!lc->nstage)
		return;
	pthread_mutex_lock(&lc->lock);
	if (lc->drop_bytes) {
		char ts[VRT_WALLCLOCK_TEXT];
		n = (size_t)snprintf(
		        marker, sizeof(marker),
		        "%s out --- vramtrace: %llu bytes (%llu lines) of output "
		        "dropped here: the disk did not keep up ---\n",
		        vrt_wallclock_format(ts, sizeof(ts),
		                             now_ns(CLOCK_REALTIME), 6),
		        (unsigned long long)lc->drop_bytes,
		        (unsigned long long)lc->drop_lines);
	}
	need = n + lc->nstage;
	if (RING_BYTES - lc->rlen < need) {
		lc->drop_bytes += lc->nstage;
		lc->drop_lines += lc->stage_lines;
		lc->dropped_total += lc->nstage;
	} else {
		const char *parts[2] = {marker, lc->stage};
		size_t lens[2] = {n, lc->nstage};
		int k;
		for (k = 0; k < 2; k++) {
			size_t at = (lc->rhead + lc->rlen) % RING_BYTES;
			size_t first = RING_BYTES - at < lens[k] ? RING_BYTES - at
			                                         : lens[k];
			memcpy(lc->ring + at, parts[k], first);
			memcpy(lc->ring, parts[k] + first, lens[k] - first);
			lc->rlen += lens[k];
		}
		lc->drop_bytes = lc->drop_lines = 0;
		pthread_cond_signal(&lc->cond);
	}
	pthread_mutex_unlock(&lc->lock);
	lc->nstage = 0;
	lc->stage_lines = 0;
}

/* One whole line of st into the stage, with its time and stream. */
static void stage_line(struct vrt_logcap *lc, struct stream *st,
                       const char *prefix_time)
{
	char *p = lc->stage + lc->nstage;

	memcpy(p, prefix_time, 27);
	p[27] = ' ';
	memcpy(p + 28, st->tag, 3);
	p[31] = ' ';
	memcpy(p + PREFIX_LEN, st->line, st->nline);
	p[PREFIX_LEN + st->nline] = '\n';
	lc->nstage += PREFIX_LEN + st->nline + 1;
	lc->stage_lines++;
	lc->lines_in++;
	st->nline = 0;
	if (lc->nstage >= STAGE_BYTES)
		hand_over(lc);
}

static void line_time(char *buf, int64_t ns)
{
	char t[VRT_WALLCLOCK_TEXT];

	vrt_wallclock_format(t, sizeof(t), ns, 6);
	memcpy(buf, t, 27);
}

/* Bytes read from st at wall time ns: complete lines go to the stage. */
static void take(struct vrt_logcap *lc, struct stream *st, const char *p,
                 size_t n, int64_t ns)
{
	char stamp[28];

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
		line_time(stamp, st->line_ns);
		stage_line(lc, st, stamp);
	}
}

static void end_stream(struct vrt_logcap *lc, struct stream *st)
{
	char stamp[28];

	/* A last line without its newline (a kill mid-write) is kept. */
	if (st->nline) {
		line_time(stamp, st->line_ns);
		stage_line(lc, st, stamp);
	}
	close(st->rfd);
	st->rfd = -1;
}

static void *copy_main(void *arg)
{
	struct vrt_logcap *lc = arg;
	char *buf = lc->buf;
	struct pollfd pf[2];
	int i;

	pthread_setname_np(pthread_self(), "vrt-logcopy");
	for (;;) {
		int nfds = 0, r;
		int stopping = __atomic_load_n(&lc->stop, __ATOMIC_ACQUIRE);
		int map[2];
		for (i = 0; i < 2; i++)
			if (lc->s[i].rfd >= 0) {
				pf[nfds].fd = lc->s[i].rfd;
				pf[nfds].events = POLLIN;
				pf[nfds].revents = 0;
				map[nfds++] = i;
			}
		if (!nfds)
			break;
		/* Asked to stop (the tree was reaped): what is already in the
		 * pipes is copied; a process left running that keeps writing
		 * gets until the deadline. */
		if (stopping && now_ns(CLOCK_MONOTONIC) > lc->stop_deadline_ns)
			break;
		r = poll(pf, (nfds_t)nfds, stopping ? 200 : 100);
		if (r < 0 && errno != EINTR)
			break;
		if (r <= 0) {
			hand_over(lc);
			if (stopping && r == 0)
				break; /* nothing more came */
			continue;
		}
		for (i = 0; i < nfds; i++) {
			struct stream *st = &lc->s[map[i]];
			ssize_t got;
			if (!pf[i].revents)
				continue;
			got = read(st->rfd, buf, COPY_CHUNK);
			if (got > 0) {
				/* the terminal first: it is what the command
				 * would have written to */
				if (st->out_ok &&
				    write_all(st->out, buf, (size_t)got))
					st->out_ok = 0;
				lc->bytes_in += (uint64_t)got;
				take(lc, st, buf, (size_t)got,
				     now_ns(CLOCK_REALTIME));
			} else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
				/* EOF; a pseudo-terminal whose last writer
				 * closed reads EIO */
				end_stream(lc, st);
			}
		}
		hand_over(lc);
	}
	for (i = 0; i < 2; i++)
		if (lc->s[i].rfd >= 0)
			end_stream(lc, &lc->s[i]);
	hand_over(lc);
	pthread_mutex_lock(&lc->lock);
	lc->copy_done = 1;
	pthread_cond_signal(&lc->cond);
	pthread_mutex_unlock(&lc->lock);
	return NULL;
}

/* ---- the writer thread ----------------------------------------------- */

static void file_write(struct vrt_logcap *lc, const char *p, size_t n)
{
	if (lc->werr || !n)
		return;
	if (write_all(lc->fd, p, n)) {
		/* A full or failing disk: the file stops here; record says so
		 * at the end. The command is not affected. */
		lc->werr = errno ? errno : EIO;
		return;
	}
	lc->written += n;
}

static void tail_put(struct vrt_logcap *lc, const char *p, size_t n)
{
	size_t k;

	lc->tail_total += n;
	for (k = 0; k < n; k++)
		lc->tail_lines += p[k] == '\n';
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
		for (size_t j = 0; j < k; j++)
			lc->head_lines += p[j] == '\n';
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
		lc->dropped_total += n; /* no memory for the tail */
}

static void *write_main(void *arg)
{
	struct vrt_logcap *lc = arg;
	char *chunk = malloc(1u << 20);

	pthread_setname_np(pthread_self(), "vrt-logwrite");
	pthread_mutex_lock(&lc->lock);
	for (;;) {
		size_t n, first;
		while (!lc->rlen && !lc->copy_done)
			pthread_cond_wait(&lc->cond, &lc->lock);
		if (!lc->rlen && lc->copy_done)
			break;
		/* copy out, then write without the lock: the copy thread
		 * keeps filling the ring meanwhile */
		n = lc->rlen < (1u << 20) ? lc->rlen : (1u << 20);
		if (!chunk)
			n = 0;
		first = RING_BYTES - lc->rhead < n ? RING_BYTES - lc->rhead : n;
		if (n) {
			memcpy(chunk, lc->ring + lc->rhead, first);
			memcpy(chunk + first, lc->ring, n - first);
		} else {
			n = lc->rlen; /* no buffer: let it go */
		}
		lc->rhead = (lc->rhead + n) % RING_BYTES;
		lc->rlen -= n;
		pthread_mutex_unlock(&lc->lock);
		/* Blocks of the ring end at whole lines, but one copied out
		 * may end mid-line; the rest comes next and the head cut
		 * looks for a newline, so a line is never split by it. */
		if (chunk)
			consume(lc, chunk, n);
		pthread_mutex_lock(&lc->lock);
	}
	pthread_mutex_unlock(&lc->lock);
	free(chunk);
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
	e = pthread_create(&lc->writer, NULL, write_main, lc);
	if (!e) {
		e = pthread_create(&lc->copier, NULL, copy_main, lc);
		if (e) {
			pthread_mutex_lock(&lc->lock);
			lc->copy_done = 1;
			pthread_cond_signal(&lc->cond);
			pthread_mutex_unlock(&lc->lock);
			pthread_join(lc->writer, NULL);
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
	for (k = skip; k < kept; k++)
		lines_kept += lc->tail[(start + k) % lc->tail_max] == '\n';
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
		pthread_join(lc->writer, NULL);
	}
	if (lc->tail_mode && !discard)
		write_tail(lc);
	if (stats) {
		stats->bytes_in = lc->bytes_in;
		stats->lines_in = lc->lines_in;
		stats->bytes_written = lc->written;
		stats->bytes_cut = lc->cut;
		stats->bytes_dropped = lc->dropped_total;
		stats->write_errno = lc->werr;
	}
	for (i = 0; i < 2; i++) {
		if (lc->s[i].rfd >= 0)
			close(lc->s[i].rfd);
		if (lc->s[i].cfd >= 0)
			close(lc->s[i].cfd);
		free(lc->s[i].line);
	}
	close(lc->fd);
	if (discard)
		unlink(lc->path);
	pthread_mutex_destroy(&lc->lock);
	pthread_cond_destroy(&lc->cond);
	free(lc->ring);
	free(lc->buf);
	free(lc->stage);
	free(lc->tail);
	free(lc);
}
