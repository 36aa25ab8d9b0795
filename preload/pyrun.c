/*
 * pyrun.c — runs a few lines of Python in the process's own interpreter,
 * for the agent of `vramtrace attach` (agent.c: PyTorch's allocator
 * snapshot), never for the preload.
 *
 * The code runs on a thread of ours ("vramtrace-py", every signal
 * blocked) that takes the GIL with PyGILState_Ensure, as any C extension's
 * background thread would: it waits until the interpreter hands the GIL
 * over at its next switch, holds no lock of the program's meanwhile, and
 * never interrupts a Python thread in the middle of anything. The code
 * runs in a fresh namespace and leaves its answer, a str, in `result`.
 *
 * The caller waits at most timeout_ms. A program thread that keeps the GIL
 * (a C extension that does not release it) can hold our thread up for
 * longer: the caller then goes on without the answer, and the thread
 * finishes (and frees the job) whenever the interpreter lets it.
 *
 * The interpreter's functions are looked up where pystack.c found it
 * (vrt_pystack_handle): no libpython link.
 *
 * Threads: one call at a time (the agent's thread); a job is shared by the
 * caller and our thread under its mutex, freed by the last one done.
 */
#include "core.h"
#include "pystack.h"
#include "real.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PY_FILE_INPUT 257 /* Py_file_input */

typedef struct py_object py_object;

static struct {
	int (*is_initialized)(void);
	int (*is_finalizing)(void);
	int (*ensure)(void);
	void (*release)(int);
	py_object *(*dict_new)(void);
	py_object *(*builtins)(void);
	int (*dict_set)(py_object *, const char *, py_object *);
	py_object *(*dict_get)(py_object *, const char *);
	py_object *(*run)(const char *, int, py_object *, py_object *, void *);
	const char *(*utf8)(py_object *, long *);
	void (*decref)(py_object *);
	void (*err_clear)(void);
} py;

struct job {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int refs, done, rc;
	char *code;
	char *out;
	size_t len;
};

static int find_api(void)
{
	void *h;
	if (!vrt_pystack_init() || !vrt_pystack_handle(&h))
		return 0;
#define GET(field, name) *(void **)&py.field = vrt_real_dlsym(h, name)
	GET(is_initialized, "Py_IsInitialized");
	GET(is_finalizing, "Py_IsFinalizing");
	if (!py.is_finalizing)
		GET(is_finalizing, "_Py_IsFinalizing");
	GET(ensure, "PyGILState_Ensure");
	GET(release, "PyGILState_Release");
	GET(dict_new, "PyDict_New");
	GET(builtins, "PyEval_GetBuiltins");
	GET(dict_set, "PyDict_SetItemString");
	GET(dict_get, "PyDict_GetItemString");
	GET(run, "PyRun_StringFlags");
	GET(utf8, "PyUnicode_AsUTF8AndSize");
	GET(decref, "Py_DecRef");
	GET(err_clear, "PyErr_Clear");
#undef GET
	return py.is_initialized && py.ensure && py.release && py.dict_new &&
	       py.builtins && py.dict_set && py.dict_get && py.run &&
	       py.utf8 && py.decref && py.err_clear;
}

static void job_put(struct job *j)
{
	pthread_mutex_lock(&j->mu);
	int last = --j->refs == 0;
	pthread_mutex_unlock(&j->mu);
	if (last) {
		pthread_mutex_destroy(&j->mu);
		pthread_cond_destroy(&j->cv);
		free(j->code);
		free(j->out);
		free(j);
	}
}

/* With the GIL held: runs the code, copies `result` out. */
static int run_locked(struct job *j)
{
	int rc = -1;
	py_object *g = py.dict_new();
	if (!g)
		goto out;
	py_object *b = py.builtins();
	if (!b || py.dict_set(g, "__builtins__", b))
		goto out;
	py_object *r = py.run(j->code, PY_FILE_INPUT, g, g, NULL);
	if (!r)
		goto out;
	py.decref(r);
	py_object *res = py.dict_get(g, "result"); /* borrowed */
	long n = 0;
	const char *s = res ? py.utf8(res, &n) : NULL;
	if (s && n >= 0) {
		size_t k = (size_t)n < j->len - 1 ? (size_t)n : j->len - 1;
		memcpy(j->out, s, k);
		j->out[k] = 0;
		rc = 1;
	}
out:
	py.err_clear();
	if (g)
		py.decref(g);
	return rc;
}

static void *py_main(void *arg)
{
	struct job *j = arg;
	int rc = 0;
	if (py.is_initialized() &&
	    !(py.is_finalizing && py.is_finalizing())) {
		int st = py.ensure();
		rc = run_locked(j);
		py.release(st);
	}
	pthread_mutex_lock(&j->mu);
	j->rc = rc;
	j->done = 1;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
	job_put(j);
	return NULL;
}

int vrt_pyrun(const char *code, char *out, size_t len, int timeout_ms)
{
	if (!len || !find_api())
		return 0;
	struct job *j = calloc(1, sizeof(*j));
	if (!j)
		return -1;
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	j->refs = 2;
	j->len = len;
	j->code = strdup(code);
	j->out = malloc(len);
	if (!j->code || !j->out) {
		j->refs = 1;
		job_put(j);
		return -1;
	}
	j->out[0] = 0;
	pthread_attr_t attr;
	pthread_t t;
	sigset_t all, old;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int err = pthread_create(&t, &attr, py_main, j);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (err) {
		j->refs = 1;
		job_put(j);
		return -1;
	}
	pthread_setname_np(t, "vramtrace-py");
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&j->mu);
	while (!j->done &&
	       pthread_cond_timedwait(&j->cv, &j->mu, &deadline) != ETIMEDOUT)
		;
	int rc = j->done ? j->rc : -2;
	if (j->done && rc == 1)
		memcpy(out, j->out, strlen(j->out) + 1);
	pthread_mutex_unlock(&j->mu);
	job_put(j);
	return rc;
}
