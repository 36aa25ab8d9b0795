/*
 * cmd_live.c — `vramtrace live DIR|PID [--interval SEC] [--count N]`: a
 * view of a recording run that refreshes every interval: per device used
 * of total, live bytes per phase, requests in flight, OOMs and the last
 * one.
 *
 * Each refresh loads the run's growing trace files again and replays them
 * (load.c, attrib.c, replay.c: the numbers are exactly what `analyze`
 * would say at that moment; a file still being written ends inside a
 * frame, the normal truncated case). Once every process of the run has
 * ended (its trace closed, its exit status written, or, on this host, the
 * pid gone), the view says so and counts no request in flight: a server
 * that died with connections open serves none. When no trace has a complete frame
 * yet (a process in standby writes none), the view asks each process's
 * control socket for its status instead (ctl.h).
 *
 * On a terminal: the alternate screen, redrawn in place, cursor hidden,
 * the keyboard in non-canonical mode so `q` quits at once; all of it is
 * undone on exit, on `q`, and on SIGINT/SIGTERM/SIGHUP (the handlers only
 * set a flag; the loop restores the terminal). Otherwise: one plain line
 * per refresh, for logs and tests. Single-threaded.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "replay/attrib.h"
#include "cmd.h"
#include "control_proto.h"
#include "record/ctl.h"
#include "load/load.h"
#include "replay/replay.h"
#include "replay/run.h"
#include "base/text.h"

struct settings {
	const char *target;
	double interval; /* seconds */
	long count;      /* refreshes; 0: until q or a signal */
};

enum { OPT_INTERVAL = VRT_OPT_OWN, OPT_COUNT };

static const struct vrt_option options[] = {
        {"interval", 'n', 1, OPT_INTERVAL},
        {"count", 'c', 1, OPT_COUNT},
        VRT_OPTION_END,
};

/* Set by the signal handlers, read by the loop. */
static volatile sig_atomic_t got_signal, got_winch;

static void on_signal(int sig)
{
	if (sig == SIGWINCH)
		got_winch = 1;
	else
		got_signal = sig;
}

/* ---- what one refresh shows --------------------------------------------- */

#define VIEW_MAX_DEVICES 64
#define VIEW_LINE        1024

struct view_device {
	char name[96];
	uint64_t total;  /* 0: unknown */
	uint64_t used;   /* live bytes of the traced processes */
	uint64_t others; /* used before the run (other processes) */
	size_t nphases;
	struct {
		char name[32];
		uint64_t bytes;
	} phases[VRT_REPLAY_MAX_PHASES];
};

struct view {
	char source[16]; /* "trace", "control", "" when nothing */
	char note[256];  /* why there are no numbers, or a warning */
	int ended;       /* every process of the run has ended */
	uint64_t inflight_at_end; /* in flight when the trace stopped */
	size_t nprocs;
	uint64_t events, inflight, max_inflight, ooms;
	int have_last_oom;
	char last_oom[256];
	size_t ndev;
	struct view_device dev[VIEW_MAX_DEVICES];
};

struct target {
	char dir[4096];  /* the run directory */
	char *paths[1];  /* what to load: the directory or one file */
	char file[4200]; /* "<dir>/<pid>.vtrace" for a pid */
	uint64_t pid;    /* 0 for a directory */
};

/* Wall-clock "HH:MM:SS" of a trace time, through the clock pair of the
 * process that recorded it. */
static void wall_of(const struct vrt_trace *t, uint32_t proc, int64_t ts,
                    char *buf, size_t n)
{
	const struct vrt_process *p = &t->procs[proc];
	time_t sec = (time_t)((p->start_wall_ns + (ts - p->start_mono_ns)) /
	                      1000000000);
	struct tm tm;

	localtime_r(&sec, &tm);
	strftime(buf, n, "%H:%M:%S", &tm);
}

/* A process of the run has ended: its trace was closed, its exit status
 * written, or it ran on this host and its pid is gone. */
static int proc_ended(const struct vrt_process *p, const char *host)
{
	if (p->has_trailer || p->exit_kind != VRT_EXIT_NONE)
		return 1;
	if (!p->host || strcmp(p->host, host) || !p->pid ||
	    p->pid > (uint64_t)INT32_MAX)
		return 0;
	return kill((pid_t)p->pid, 0) < 0 && errno == ESRCH;
}

static int run_ended(const struct vrt_trace *t)
{
	char host[256] = "";
	size_t i;

	if (!t->nprocs || gethostname(host, sizeof(host) - 1))
		return 0;
	for (i = 0; i < t->nprocs; i++)
		if (!proc_ended(&t->procs[i], host))
			return 0;
	return 1;
}

static void from_replay(struct view *v, const struct vrt_trace *t,
                        const struct vrt_replay *r)
{
	size_t i;
	unsigned k;

	snprintf(v->source, sizeof(v->source), "trace");
	v->nprocs = t->nprocs;
	v->events = vrt_load_events(t);
	v->inflight = r->inflight;
	v->max_inflight = r->max_inflight;
	v->ooms = r->ooms;
	if (run_ended(t)) {
		v->ended = 1;
		v->inflight_at_end = v->inflight;
		v->inflight = 0;
	}
	for (i = 0;
	     i < t->ndevices && i < r->ndevices && v->ndev < VIEW_MAX_DEVICES;
	     i++) {
		const struct vrt_device *dv = &t->devices[i];
		const struct vrt_replay_device *d = &r->dev[i];
		struct view_device *x = &v->dev[v->ndev++];
		vrt_text_copy_safe(x->name, sizeof(x->name),
		                   dv->name ? dv->name : "(unnamed)");
		x->total =
		        dv->have_total ? dv->total_bytes : d->probe_total_bytes;
		x->used = d->tracked_bytes;
		x->others = d->have_baseline ? d->baseline_used_bytes : 0;
		/* Every phase that ever held memory, so rows stay put. */
		for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++) {
			char pb[32];
			if (!d->phase[k].peak_bytes)
				continue;
			vrt_text_copy_safe(
			        x->phases[x->nphases].name,
			        sizeof(x->phases[x->nphases].name),
			        vrt_load_phase_name(t, k, pb, sizeof(pb)));
			x->phases[x->nphases].bytes = d->phase[k].live_bytes;
			x->nphases++;
		}
	}
	for (i = r->nfails; i-- > 0;) {
		const struct vrt_replay_failure *f = &r->fails[i];
		char when[16], b[32], pb[32], phase[32];
		if (!f->oom)
			continue;
		wall_of(t, f->proc, f->ts, when, sizeof(when));
		vrt_text_copy_safe(
		        phase, sizeof(phase),
		        vrt_load_phase_name(t, f->phase, pb, sizeof(pb)));
		v->have_last_oom = 1;
		snprintf(v->last_oom, sizeof(v->last_oom),
		         "%s pid %" PRIu64 " %s%d %s %s, %" PRIu32 " in flight",
		         when, t->procs[f->proc].pid,
		         f->device >= 0 ? "dev" : "host",
		         f->device >= 0 ? f->device : 0,
		         vrt_text_bytes(b, sizeof(b), f->requested_bytes, 1),
		         phase, f->inflight);
		break;
	}
}

/* Loads and replays the traces; 0 when at least one frame was read. */
static int refresh_trace(const struct target *tg, struct view *v)
{
	struct vrt_trace t;
	struct vrt_replay r;
	struct vrt_load_error *err = calloc(1, sizeof(*err));
	int rc = -1;

	memset(&t, 0, sizeof(t));
	memset(&r, 0, sizeof(r));
	if (!err) {
		snprintf(v->note, sizeof(v->note), "out of memory");
		return -1;
	}
	r.top_sites = 1;
	if (vrt_load_open(&t, tg->paths, 1, err)) {
		snprintf(v->note, sizeof(v->note), "%.200s",
		         err->status == VRT_LOAD_ERR_NO_TRACES ||
		                         err->status == VRT_LOAD_ERR_NO_FRAME ||
		                         err->status == VRT_LOAD_ERR_EMPTY ||
		                         (err->status == VRT_LOAD_ERR_IO &&
		                          tg->pid)
		                 ? "no trace data yet"
		                 : err->msg);
		goto out;
	}
	switch (vrt_run_pass(&t, NULL, &r, err)) {
	case VRT_RUN_PASS_OK:
		break;
	case VRT_RUN_PASS_LOAD:
		snprintf(v->note, sizeof(v->note), "%.200s", err->msg);
		goto out;
	default:
		snprintf(v->note, sizeof(v->note), "out of memory");
		goto out;
	}
	from_replay(v, &t, &r);
	rc = 0;
out:
	vrt_replay_free(&r);
	vrt_load_free(&t);
	free(err);
	return rc;
}

/* Sums the status of every process that answers on its socket. */
static int refresh_ctl(const struct target *tg, struct view *v)
{
	struct vrt_ctl_target *ts = NULL, one;
	struct vrt_ctl_status st;
	size_t n = 0, i, j, k, m;
	char err[256], *answer;

	if (tg->pid) {
		one.pid = tg->pid;
		if ((size_t)snprintf(one.path, sizeof(one.path),
		                     "%s/%" PRIu64 VRT_CONTROL_SUFFIX, tg->dir,
		                     tg->pid) >= sizeof(one.path))
			return -1;
		ts = &one;
		n = 1;
	} else if (vrt_ctl_list_dir(tg->dir, &ts, &n, err, sizeof(err))) {
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (vrt_ctl_request(ts[i].path, VRT_CONTROL_STATUS, VRT_CTL_TIMEOUT_MS,
		                    &answer, err, sizeof(err)))
			continue;
		if (vrt_ctl_parse_status(answer, &st, err, sizeof(err))) {
			free(answer);
			continue;
		}
		free(answer);
		snprintf(v->source, sizeof(v->source), "control");
		v->nprocs++;
		v->events += st.events;
		v->inflight += st.inflight;
		v->ooms += st.ooms;
		/* Devices by (vendor, ordinal): processes of one run name
		 * the same card alike unless their visibility differs. */
		for (j = 0; j < st.ndev; j++) {
			char name[96];
			struct view_device *x = NULL;
			snprintf(name, sizeof(name), "%s %" PRId64,
			         st.dev[j].vendor, st.dev[j].id);
			for (k = 0; k < v->ndev && !x; k++)
				if (!strcmp(v->dev[k].name, name))
					x = &v->dev[k];
			if (!x && v->ndev < VIEW_MAX_DEVICES) {
				x = &v->dev[v->ndev++];
				vrt_text_copy_safe(x->name, sizeof(x->name),
				                   name);
			}
			if (!x)
				continue;
			x->used += st.dev[j].live_bytes;
			if (st.dev[j].total_bytes > x->total)
				x->total = st.dev[j].total_bytes;
			for (k = 0; k < st.dev[j].nphases; k++) {
				for (m = 0; m < x->nphases; m++)
					if (!strcmp(x->phases[m].name,
					            st.dev[j].phases[k].name))
						break;
				if (m == x->nphases) {
					if (m == VRT_REPLAY_MAX_PHASES)
						continue;
					vrt_text_copy_safe(
					        x->phases[m].name,
					        sizeof(x->phases[m].name),
					        st.dev[j].phases[k].name);
					x->nphases++;
				}
				x->phases[m].bytes += st.dev[j].phases[k].bytes;
			}
		}
	}
	if (!tg->pid)
		free(ts);
	return v->source[0] ? 0 : -1;
}

static void refresh(const struct target *tg, struct view *v)
{
	char note[256];

	memset(v, 0, sizeof(*v));
	if (!refresh_trace(tg, v))
		return;
	snprintf(note, sizeof(note), "%s", v->note);
	if (!refresh_ctl(tg, v))
		return;
	snprintf(v->note, sizeof(v->note), "waiting: %.200s", note);
}

/* ---- plain lines -------------------------------------------------------- */

static void print_plain(const struct view *v)
{
	char now[16], b1[32], b2[32];
	time_t sec = time(NULL);
	struct tm tm;
	size_t i, k;

	localtime_r(&sec, &tm);
	strftime(now, sizeof(now), "%H:%M:%S", &tm);
	printf("%s", now);
	if (!v->source[0]) {
		printf(" %s\n", v->note);
		fflush(stdout);
		return;
	}
	for (i = 0; i < v->ndev; i++) {
		const struct view_device *d = &v->dev[i];
		printf(" dev%zu %s/%s", i,
		       vrt_text_bytes(b1, sizeof(b1), d->used, 1),
		       d->total ? vrt_text_bytes(b2, sizeof(b2), d->total, 1)
		                : "?");
		for (k = 0; k < d->nphases; k++)
			printf(" %s %s", d->phases[k].name,
			       vrt_text_bytes(b1, sizeof(b1),
			                      d->phases[k].bytes, 1));
	}
	printf(" inflight %" PRIu64 " oom %" PRIu64, v->inflight, v->ooms);
	if (v->have_last_oom)
		printf(" last_oom %s", v->last_oom);
	if (v->ended)
		printf(" ended (%" PRIu64 " in flight when it stopped)",
		       v->inflight_at_end);
	putchar('\n');
	fflush(stdout);
}

/* ---- the full-screen view ----------------------------------------------- */

struct screen {
	int tty_in; /* stdin is a terminal we switched to non-canonical */
	struct termios saved;
	int cols, rows, row;
};

static void screen_size(struct screen *sc)
{
	struct winsize ws;

	sc->cols = 80;
	sc->rows = 24;
	if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col && ws.ws_row) {
		sc->cols = ws.ws_col;
		sc->rows = ws.ws_row;
	}
}

/* One line at the cursor, cut to the width, the rest of the row erased. */
__attribute__((format(printf, 2, 3))) static void line(struct screen *sc,
                                                       const char *fmt, ...)
{
	char buf[VIEW_LINE];
	va_list ap;
	int n;

	if (sc->row >= sc->rows)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if (n > sc->cols)
		buf[sc->cols] = '\0';
	sc->row++;
	printf("%s\033[K%s", buf, sc->row < sc->rows ? "\r\n" : "");
}

static void bar(char *buf, size_t width, uint64_t used, uint64_t total)
{
	size_t i, fill = total ? (size_t)((double)used / (double)total *
	                                          (double)width +
	                                  0.5)
	                       : 0;

	if (fill > width)
		fill = width;
	for (i = 0; i < width; i++)
		buf[i] = i < fill ? '#' : '.';
	buf[width] = '\0';
}

static void draw(struct screen *sc, const struct settings *s,
                 const struct view *v)
{
	char now[16], b1[32], b2[32], b3[32], br[41];
	time_t sec = time(NULL);
	struct tm tm;
	size_t i, k;

	localtime_r(&sec, &tm);
	strftime(now, sizeof(now), "%H:%M:%S", &tm);
	screen_size(sc);
	sc->row = 0;
	printf("\033[H");
	line(sc, "vramtrace live  %.200s  %s  (every %.1fs, q quits)",
	     s->target, now, s->interval);
	if (!v->source[0]) {
		line(sc, "%s", "");
		line(sc, "%s", v->note);
	} else {
		line(sc,
		     "%zu process%s, %" PRIu64 " events (from %s)  "
		     "requests in flight %" PRIu64 " (max %" PRIu64
		     ")  OOMs %" PRIu64,
		     v->nprocs, v->nprocs == 1 ? "" : "es", v->events,
		     v->source[0] == 't' ? "the traces" : "control sockets",
		     v->inflight, v->max_inflight, v->ooms);
		for (i = 0; i < v->ndev; i++) {
			const struct view_device *d = &v->dev[i];
			line(sc, "%s", "");
			bar(br, 30, d->used + d->others, d->total);
			line(sc, "dev%zu  %-28s %11s / %-11s [%s] %5.1f%%", i,
			     d->name,
			     vrt_text_bytes(b1, sizeof(b1), d->used, 2),
			     d->total ? vrt_text_bytes(b2, sizeof(b2), d->total,
			                               2)
			              : "?",
			     br,
			     d->total ? 100.0 * (double)(d->used + d->others) /
			                        (double)d->total
			              : 0.0);
			if (d->others)
				line(sc, "  %-14s %11s", "(other processes)",
				     vrt_text_bytes(b3, sizeof(b3), d->others,
				                    2));
			for (k = 0; k < d->nphases; k++)
				line(sc, "  %-14s %11s", d->phases[k].name,
				     vrt_text_bytes(b3, sizeof(b3),
				                    d->phases[k].bytes, 2));
		}
		line(sc, "%s", "");
		line(sc, "last OOM: %s",
		     v->have_last_oom ? v->last_oom : "none");
		if (v->ended)
			line(sc,
			     "the run has ended: no traced process is running "
			     "(%" PRIu64 " request%s in flight when it stopped)",
			     v->inflight_at_end,
			     v->inflight_at_end == 1 ? " was" : "s were");
	}
	printf("\033[J");
	fflush(stdout);
}

static void screen_enter(struct screen *sc)
{
	struct termios raw;

	memset(sc, 0, sizeof(*sc));
	if (isatty(STDIN_FILENO) && !tcgetattr(STDIN_FILENO, &sc->saved)) {
		raw = sc->saved;
		/* Keys arrive one by one, unechoed; ISIG stays on, so ^C is
		 * still SIGINT (handled below). */
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		sc->tty_in = !tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw);
	}
	/* alternate screen, cursor hidden, cleared */
	printf("\033[?1049h\033[?25l\033[H\033[2J");
	fflush(stdout);
}

static void screen_leave(struct screen *sc)
{
	printf("\033[?25h\033[?1049l");
	fflush(stdout);
	if (sc->tty_in)
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &sc->saved);
}

/* Waits up to ms; returns 1 when q was pressed. Signals end the wait. */
static int wait_key(const struct screen *sc, int64_t ms)
{
	struct timespec t0, t1;
	char c;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!got_signal && !got_winch) {
		int64_t left;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		left = ms - ((int64_t)(t1.tv_sec - t0.tv_sec) * 1000 +
		             (t1.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0)
			return 0;
		if (!sc || !sc->tty_in) {
			struct timespec d = {left / 1000,
			                     (left % 1000) * 1000000};
			nanosleep(&d, NULL); /* EINTR: the loop re-checks */
			continue;
		}
		struct pollfd p = {STDIN_FILENO, POLLIN, 0};
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		while (read(STDIN_FILENO, &c, 1) == 1)
			if (c == 'q' || c == 'Q')
				return 1;
	}
	return 0;
}

/* ---- the command -------------------------------------------------------- */

static int own_option(const struct vrt_cmd *self, int id, const char *arg,
                      void *settings)
{
	struct settings *s = settings;
	char *end;

	errno = 0;
	if (id == OPT_INTERVAL) {
		s->interval = strtod(arg, &end);
		if (errno || *end || !(s->interval >= 0.05) ||
		    s->interval > 3600)
			return vrt_main_usage_error(
			        self,
			        "bad interval '%s' (seconds, 0.05 to 3600)",
			        arg);
	} else if (id == OPT_COUNT) {
		s->count = strtol(arg, &end, 10);
		if (errno || *end || s->count < 1)
			return vrt_main_usage_error(
			        self, "bad count '%s' (1 or more)", arg);
	}
	return 0;
}

/* 1 when dir holds something else and nothing a run holds (traces,
 * control sockets, exit files, the command's output.log): a directory
 * such as /tmp, which no refresh would ever turn into a run. An empty
 * directory may be a run whose first process has not started yet. */
static int not_a_run(const char *dir)
{
	static const char *const run_files[] = {VRT_TRACE_SUFFIX,
	                                        VRT_CONTROL_SUFFIX, ".exit",
	                                        "/output.log"};
	DIR *d = opendir(dir);
	struct dirent *de;
	int other = 0, run = 0;
	char name[300];
	size_t k, n;

	while (d && !run && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(name, sizeof(name), "/%s", de->d_name);
		n = strlen(name);
		for (k = 0; k < sizeof(run_files) / sizeof(run_files[0]); k++) {
			size_t m = strlen(run_files[k]);
			run |= n >= m && !strcmp(name + n - m, run_files[k]);
		}
		other = 1;
	}
	if (d)
		closedir(d);
	return other && !run;
}

static int resolve(const char *what, struct target *tg)
{
	struct stat sb;
	char err[256];
	const char *p;
	uint64_t pid = 0;

	memset(tg, 0, sizeof(*tg));
	if (stat(what, &sb) == 0 && S_ISDIR(sb.st_mode)) {
		if (not_a_run(what)) {
			fprintf(stderr,
			        "vramtrace: error: %s: not a run directory: no "
			        "traces, control sockets or exit files (vramtrace "
			        "record -o DIR -- COMMAND makes one)\n",
			        what);
			return -1;
		}
		snprintf(tg->dir, sizeof(tg->dir), "%s", what);
		tg->paths[0] = tg->dir;
		return 0;
	}
	for (p = what; *p >= '0' && *p <= '9' && pid < UINT64_MAX / 10; p++)
		pid = pid * 10 + (uint64_t)(*p - '0');
	if (*p || !pid) {
		fprintf(stderr,
		        "vramtrace: error: %s: neither a run directory nor a "
		        "process id\n",
		        what);
		return -1;
	}
	if (vrt_ctl_run_dir(pid, tg->dir, sizeof(tg->dir), err, sizeof(err))) {
		fprintf(stderr, "vramtrace: error: pid %" PRIu64 ": %s\n", pid,
		        err);
		return -1;
	}
	tg->pid = pid;
	snprintf(tg->file, sizeof(tg->file), "%s/%" PRIu64 ".vtrace", tg->dir,
	         pid);
	tg->paths[0] = tg->file;
	return 0;
}

int vrt_cmd_live_run(const struct vrt_cmd *self, int argc, char **argv)
{
	struct settings s = {NULL, 1.0, 0};
	struct vrt_opts o = {.min_pos = 1,
	                     .max_pos = 1,
	                     .few = "no run given",
	                     .many = "one run only"};
	struct vrt_optstate st;
	struct sigaction sa, old[4];
	static const int sigs[4] = {SIGINT, SIGTERM, SIGHUP, SIGWINCH};
	struct target *tg = NULL;
	struct view *v = NULL;
	struct screen sc;
	int rc, tty, i;
	long n;

	memset(&st, 0, sizeof(st));
	if (vrt_main_parse(self, argc, argv, options, &o, own_option, &s, &st,
	                   &rc))
		goto out;
	s.target = st.pos[0];
	rc = VRT_EXIT_FAIL;
	tg = malloc(sizeof(*tg));
	v = malloc(sizeof(*v));
	if (!tg || !v) {
		fprintf(stderr, "vramtrace: error: out of memory\n");
		goto out;
	}
	if (resolve(s.target, tg))
		goto out;
	/* No SA_RESTART: a signal ends the wait at once. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < 4; i++)
		sigaction(sigs[i], &sa, &old[i]);
	tty = isatty(STDOUT_FILENO);
	if (tty)
		screen_enter(&sc);
	for (n = 0; !got_signal; n++) {
		if (s.count && n == s.count)
			break;
		got_winch = 0;
		refresh(tg, v);
		if (tty)
			draw(&sc, &s, v);
		else
			print_plain(v);
		if (s.count && n + 1 == s.count)
			break;
		if (wait_key(tty ? &sc : NULL, (int64_t)(s.interval * 1000)))
			break;
	}
	if (tty)
		screen_leave(&sc);
	for (i = 0; i < 4; i++)
		sigaction(sigs[i], &old[i], NULL);
	rc = VRT_EXIT_OK;
out:
	free(tg);
	free(v);
	free(st.pos);
	return rc;
}
