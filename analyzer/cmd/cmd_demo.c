/*
 * cmd_demo.c — `vramtrace demo [-o DIR]`: runs the bundled vLLM-shaped
 * example server (examples/serve_sim) on the fake GPU (tests/fake's
 * libcuda.so.1 and libnvidia-ml.so.1) once per OOM verdict, records each
 * run with `vramtrace record` (this executable, re-run as a child) into
 * DIR/<verdict>, and prints each run's diagnosis (diagnose.c) as analyze
 * would open its report. No GPU is needed.
 *
 * The example server and the fake driver are found next to this
 * executable in a build tree (../examples/serve_sim, ../tests/fake/), else
 * in an install's vramtrace/demo/ (paths.h); their absence is an error
 * naming every place looked in. Each child runs with its own environment (fake
 * driver on LD_LIBRARY_PATH, FAKECUDA_* settings); what record prints goes
 * to DIR/<verdict>/demo.log, inside the run (the server's own output is
 * also in its output.log). A DIR that already holds a run of a verdict is
 * refused: recording into it would merge two runs into one.
 * Single-threaded.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "replay/attrib.h"
#include "cmd.h"
#include "diagnose/diagnose.h"
#include "load/load.h"
#include "base/paths.h"
#include "replay/replay.h"
#include "report/report.h"
#include "replay/run.h"

#define MAX_ARGS 24
#define DEMO_LOG "demo.log"

struct scenario {
	const char *name;  /* the verdict it reproduces */
	const char *title; /* what the run does */
	const char *env[5];
	const char *args[MAX_ARGS];
};

/* Every run: an 80 GiB card (two for tensor parallel), vLLM's flags. */
static const struct scenario scenarios[] = {
        {"weights",
         "100 GiB of weights on one 80 GiB card",
         {NULL},
         {"--gpu-memory-utilization", "0.9", "--model-size-gib", "100", NULL}},
        {"not_sharded",
         "--tensor-parallel-size 2 on two cards, but rank 0 loads every "
         "layer",
         {"FAKECUDA_DEVICES=2", NULL},
         {"--gpu-memory-utilization", "0.9", "--model-size-gib", "100",
          "--tensor-parallel-size", "2", "--no-shard", NULL}},
        {"kv_cache",
         "--max-model-len 131072: one long request after the KV reserve",
         {NULL},
         {"--gpu-memory-utilization", "0.95", "--max-model-len", "131072",
          "--act-kib-per-token", "64", NULL}},
        {"concurrency",
         "8 requests at once, 2 GiB of activations each",
         {NULL},
         {"--gpu-memory-utilization", "0.9", "--max-model-len", "8192",
          "--max-num-seqs", "16", "--concurrent-requests", "8", NULL}},
        {"host_memory",
         "--swap-space 4 (pinned host memory) with 2 GiB pinnable",
         {"FAKECUDA_HOST_MEM=2G", NULL},
         {"--gpu-memory-utilization", "0.9", "--swap-space", "4", NULL}},
        {"other_processes",
         "another process (PID 4242) holds 30 GiB of the card",
         {"FAKECUDA_USED=30G", "FAKENVML_PROCS=0:4242:30G",
          "VRAMTRACE_SAMPLE_MS=10", NULL},
         {"--gpu-memory-utilization", "0.9", "--load-ms", "200", NULL}},
        {"none",
         "the defaults: 14 GiB of weights, 4 requests at once",
         {NULL},
         {"--gpu-memory-utilization", "0.9", NULL}},
};

#define NSCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))

struct settings {
	const char *output; /* -o DIR, or NULL: a new temporary directory */
};

enum { OPT_OUTPUT = 1 };

static const struct vrt_option options[] = {
        {"output", 'o', 1, OPT_OUTPUT},
        {NULL, 0, 0, 0},
};

struct paths {
	char self[PATH_MAX];     /* this executable */
	char server[PATH_MAX];   /* serve_sim */
	char fake_dir[PATH_MAX]; /* holds libcuda.so.1 */
	char out[PATH_MAX];      /* the demo's directory */
};

/* dir/name made absolute into out when it is readable; 0 on success. */
static int found(const char *dir, const char *name, char *out)
{
	char cand[PATH_MAX];

	return vrt_paths_join(cand, dir, name) || access(cand, R_OK) ||
	                       !realpath(cand, out)
	               ? -1
	               : 0;
}

static int find_parts(struct paths *p)
{
	char bin[PATH_MAX], dirs[VRT_PATHS_MAX + 1][PATH_MAX];
	char looked[(VRT_PATHS_MAX + 1) * 2 * 128];
	size_t used = 0;
	int n = 0;

	if (!realpath("/proc/self/exe", p->self) || vrt_paths_self_dir(bin)) {
		fprintf(stderr,
		        "vramtrace: error: demo: cannot find this "
		        "executable: %s\n",
		        strerror(errno));
		return -1;
	}
	/* A build tree keeps them in two places; an install in one. */
	char fake[PATH_MAX];
	if (vrt_paths_join(dirs[n], bin, "../examples") ||
	    vrt_paths_join(fake, bin, "../tests/fake"))
		fake[0] = '\0';
	else
		n++;
	n += vrt_paths_install_dirs("demo", dirs + n);
	looked[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (i > 0 || !fake[0])
			memcpy(fake, dirs[i], strlen(dirs[i]) + 1);
		if (!found(dirs[i], "serve_sim", p->server) &&
		    !found(fake, "libcuda.so.1", p->fake_dir)) {
			*strrchr(p->fake_dir, '/') = '\0';
			return 0;
		}
		if (used < sizeof(looked))
			used += (size_t)snprintf(
			        looked + used, sizeof(looked) - used,
			        "%s%s%s%s", i ? ", " : "", dirs[i],
			        strcmp(fake, dirs[i]) ? " and " : "",
			        strcmp(fake, dirs[i]) ? fake : "");
	}
	fprintf(stderr,
	        "vramtrace: error: demo: the example server (serve_sim) and "
	        "the fake GPU driver (libcuda.so.1) are not installed: looked "
	        "in %s; run it from a build tree (./build.sh demo) or an "
	        "install\n",
	        looked);
	return -1;
}

/* Runs `vramtrace record -o DIR -- serve_sim serve demo-model ARGS` with
 * the scenario's environment; its output goes to DIR.log. Returns the
 * record command's exit status, or -1 if it could not run. */
static int record(const struct paths *p, const struct scenario *sc,
                  const char *dir)
{
	char *argv[MAX_ARGS + 8], logpath[PATH_MAX * 2 + 16],
	        ldpath[PATH_MAX * 2];
	const char *prev = getenv("LD_LIBRARY_PATH");
	int n = 0, status, fd;
	pid_t pid;
	size_t i;

	argv[n++] = (char *)p->self;
	argv[n++] = "record";
	argv[n++] = "-o";
	argv[n++] = (char *)dir;
	argv[n++] = "--";
	argv[n++] = (char *)p->server;
	argv[n++] = "serve";
	argv[n++] = "demo-model";
	for (i = 0; sc->args[i] && n < MAX_ARGS + 7; i++)
		argv[n++] = (char *)sc->args[i];
	argv[n] = NULL;
	snprintf(logpath, sizeof(logpath), "%s/%s", dir, DEMO_LOG);
	snprintf(ldpath, sizeof(ldpath), "%s%s%s", p->fake_dir,
	         prev && *prev ? ":" : "", prev && *prev ? prev : "");
	fflush(NULL);
	/* The run directory first, so the log lives inside it: a glob over
	 * DIR (`vramtrace table DIR/<star>`) then names runs only. */
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		          0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		setenv("LD_LIBRARY_PATH", ldpath, 1);
		setenv("FAKECUDA_MEM", "80G", 1);
		unsetenv("VRAMTRACE_OUT");
		for (i = 0; sc->env[i]; i++)
			putenv((char *)sc->env[i]);
		execv(p->self, argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* Loads, attributes, replays and diagnoses dir; prints the diagnosis. */
static int show(const char *dir)
{
	struct vrt_run run;
	struct vrt_diagnosis *d = malloc(sizeof(*d));
	int rc = -1;

	memset(&run, 0, sizeof(run));
	if (!d)
		fprintf(stderr, "vramtrace: error: out of memory\n");
	else if (vrt_run_open(&run, dir, NULL, 0) == 0) {
		vrt_diagnose_run(d, &run.t, &run.r, NULL);
		vrt_report_diagnosis_text(stdout, &run.t, d);
		rc = 0;
	}
	vrt_run_close(&run);
	free(d);
	return rc;
}

/* 1 (after saying so) when out already holds the run of a verdict. */
static int holds_runs(const char *out)
{
	char dir[PATH_MAX * 2];
	struct stat st;
	size_t i;

	for (i = 0; i < NSCENARIOS; i++) {
		snprintf(dir, sizeof(dir), "%s/%s", out, scenarios[i].name);
		if (lstat(dir, &st) == 0) {
			fprintf(stderr,
			        "vramtrace: error: %s: already holds a demo "
			        "run (%s): recording again would merge two runs "
			        "into one; give a new directory or remove it\n",
			        out, dir);
			return 1;
		}
	}
	return 0;
}

static int run(const struct settings *s)
{
	struct paths p;
	char dir[PATH_MAX * 2];
	size_t i, k;
	int failed = 0;

	if (find_parts(&p))
		return VRT_EXIT_FAIL;
	if (s->output) {
		if (mkdir(s->output, 0700) && errno != EEXIST) {
			fprintf(stderr,
			        "vramtrace: error: %s: cannot create: %s\n",
			        s->output, strerror(errno));
			return VRT_EXIT_FAIL;
		}
		snprintf(p.out, sizeof(p.out), "%s", s->output);
		if (holds_runs(p.out))
			return VRT_EXIT_FAIL;
	} else {
		const char *tmp = getenv("TMPDIR");
		snprintf(p.out, sizeof(p.out), "%s/vramtrace-demo.XXXXXX",
		         tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(p.out)) {
			fprintf(stderr,
			        "vramtrace: error: %s: cannot create: %s\n",
			        p.out, strerror(errno));
			return VRT_EXIT_FAIL;
		}
	}
	printf("vramtrace demo: a vLLM-shaped server (examples/serve_sim) on "
	       "a fake 80 GiB GPU,\nrecorded once per verdict; each "
	       "diagnosis below is how `vramtrace analyze` opens.\n\n");
	for (i = 0; i < NSCENARIOS; i++) {
		const struct scenario *sc = &scenarios[i];
		int st;
		snprintf(dir, sizeof(dir), "%s/%s", p.out, sc->name);
		printf("== %zu/%zu %s: %s\n$ vramtrace record -- serve_sim "
		       "serve demo-model",
		       i + 1, NSCENARIOS, sc->name, sc->title);
		for (k = 0; sc->args[k]; k++)
			printf(" %s", sc->args[k]);
		putchar('\n');
		st = record(&p, sc, dir);
		if (st < 0 || st == 127 || st == 1) {
			fprintf(stderr,
			        "vramtrace: error: demo: recording %s failed "
			        "(exit %d); see %s/%s\n",
			        sc->name, st, dir, DEMO_LOG);
			failed = 1;
			continue;
		}
		printf("(server exit %d%s)\n", st,
		       st == 3 ? ": CUDA out of memory" : "");
		if (show(dir))
			failed = 1;
	}
	printf("traces kept in %s (vramtrace analyze %s/concurrency)\n", p.out,
	       p.out);
	return failed ? VRT_EXIT_FAIL : VRT_EXIT_OK;
}

int vrt_cmd_demo_run(const struct vrt_cmd *self, int argc, char **argv)
{
	struct settings s = {NULL};
	struct vrt_optstate st;
	int id, rc;

	memset(&st, 0, sizeof(st));
	st.argc = argc;
	st.argv = argv;
	while ((id = vrt_main_getopt(&st, options, self)) > 0)
		if (id == OPT_OUTPUT)
			s.output = st.arg;
	if (id == VRT_OPT_HELP) {
		rc = VRT_EXIT_OK;
		goto out;
	}
	if (id == VRT_OPT_ERROR) {
		rc = VRT_EXIT_USAGE;
		goto out;
	}
	if (st.npos) {
		rc = vrt_main_usage_error(self, "unexpected argument '%s'",
		                          st.pos[0]);
		goto out;
	}
	rc = run(&s);
out:
	free(st.pos);
	return rc;
}
