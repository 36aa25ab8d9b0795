/*
 * pystack.c against an embedded interpreter. Python code calls a C
 * function (module vrtcb) that captures and describes the calling
 * thread's frames, optionally after releasing the GIL as PyTorch's
 * bindings and ctypes do, and from a second Python thread. Checks the
 * innermost frames' function names, file and line numbers (non-ASCII
 * names cover the UCS1, UCS2 and UCS4 string kinds), that the __init__
 * shim of 3.12+ stays hidden, that a thread with no Python state gets
 * nothing, and prints the cost of one capture of about 20 frames (a TAP
 * comment, not an assertion). TAP output.
 */
#include <Python.h>

#include "pystack.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define MAXF        64
#define SLOTS       5
#define BENCH_SLOT  5
#define BENCH_ITERS 200000

struct result {
	int n;
	char file[MAXF][256];
	char func[MAXF][128];
	int line[MAXF];
	char cut12[12], cut13[13]; /* outermost file name, cut */
};

static struct result results[SLOTS + 1];
static double bench_ns;

static int test_no;
static int failures;

static void ok(int cond, const char *what)
{
	printf("%sok %d - %s\n", cond ? "" : "not ", ++test_no, what);
	if (!cond)
		failures++;
}

static void record(struct result *r)
{
	struct vrt_pyframe f[MAXF];
	r->n = vrt_pystack_capture(f, MAXF);
	for (int i = 0; i < r->n; i++)
		if (vrt_pystack_describe(&f[i], r->file[i], sizeof(r->file[i]),
		                         r->func[i], sizeof(r->func[i]),
		                         &r->line[i]))
			r->line[i] = -1;
	int line;
	if (r->n > 0) {
		vrt_pystack_describe(&f[r->n - 1], r->cut12, sizeof(r->cut12),
		                     r->func[MAXF - 1], 1, &line);
		vrt_pystack_describe(&f[r->n - 1], r->cut13, sizeof(r->cut13),
		                     r->func[MAXF - 1], 1, &line);
	}
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* vrtcb.capture(slot, release_gil) */
static PyObject *cb_capture(PyObject *self, PyObject *args)
{
	int slot, release;
	if (!PyArg_ParseTuple(args, "ii", &slot, &release) || slot < 0 ||
	    slot >= SLOTS)
		return NULL;
	PyThreadState *save = NULL;
	if (release)
		save = PyEval_SaveThread();
	record(&results[slot]);
	if (release)
		PyEval_RestoreThread(save);
	Py_RETURN_NONE;
}

/* vrtcb.bench(): times captures with the GIL released. */
static PyObject *cb_bench(PyObject *self, PyObject *args)
{
	PyThreadState *save = PyEval_SaveThread();
	struct vrt_pyframe f[MAXF];
	int sum = 0;
	uint64_t t0 = now_ns();
	for (int i = 0; i < BENCH_ITERS; i++)
		sum += vrt_pystack_capture(f, MAXF);
	uint64_t t1 = now_ns();
	bench_ns = (double)(t1 - t0) / BENCH_ITERS;
	record(&results[BENCH_SLOT]);
	if (sum != results[BENCH_SLOT].n * BENCH_ITERS)
		results[BENCH_SLOT].n = -1;
	PyEval_RestoreThread(save);
	Py_RETURN_NONE;
}

static PyMethodDef cb_methods[] = {
        {"capture", cb_capture, METH_VARARGS, NULL},
        {"bench", cb_bench, METH_NOARGS, NULL},
        {NULL, NULL, 0, NULL},
};

static struct PyModuleDef cb_module = {
        PyModuleDef_HEAD_INIT,
        "vrtcb",
        NULL,
        -1,
        cb_methods,
        NULL,
        NULL,
        NULL,
        NULL,
};

static PyObject *cb_init(void)
{
	return PyModule_Create(&cb_module);
}

#define FILENAME "/virtual/w\xc3\xb6rk\xf0\x9f\x99\x82.py" /* wörk🙂.py */

static const char script[] =
        "import vrtcb, threading\n"                  /* 1 */
        "def helper(slot, release):\n"               /* 2 */
        "    vrtcb.capture(slot, release)\n"         /* 3 */
        "class Worker:\n"                            /* 4 */
        "    def load_model(self, slot, release):\n" /* 5 */
        "        x = 1\n"                            /* 6 */
        "        helper(slot, release)\n"            /* 7 */
        "def gr\xc3\xbc\xc3\x9f"
        "e(slot):\n"                            /* 8 grüße */
        "    Worker().load_model(slot, 1)\n"    /* 9 */
        "def \xe8\xbd\xbd\xe5\x85\xa5(slot):\n" /* 10 载入 */
        "    gr\xc3\xbc\xc3\x9f"
        "e(slot)\n"                                          /* 11 */
        "Worker().load_model(0, 0)\n"                        /* 12 */
        "Worker().load_model(1, 1)\n"                        /* 13 */
        "t = threading.Thread(target=Worker().load_model,\n" /* 14 */
        "                     args=(2, 1))\n"                /* 15 */
        "t.start(); t.join()\n"                              /* 16 */
        "\xe8\xbd\xbd\xe5\x85\xa5(3)\n"                      /* 17 */
        "def deep(n):\n"                                     /* 18 */
        "    if n:\n"                                        /* 19 */
        "        return deep(n - 1)\n"                       /* 20 */
        "    vrtcb.bench()\n"                                /* 21 */
        "deep(18)\n"                                         /* 22 */
        "class Model:\n"                                     /* 23 */
        "    def __init__(self):\n"                          /* 24 */
        "        vrtcb.capture(4, 1)\n"                      /* 25 */
        "for i in range(100):\n"                             /* 26 */
        "    Model()\n";                                     /* 27 */

static int frame_is(const struct result *r, int i, const char *func,
                    const char *file, int line)
{
	if (i >= r->n)
		return 0;
	int good = strcmp(r->func[i], func) == 0 &&
	           (!file || strcmp(r->file[i], file) == 0) &&
	           (line < 0 || r->line[i] == line);
	if (!good)
		printf("# frame %d: %s %s:%d, want %s %s:%d\n", i, r->func[i],
		       r->file[i], r->line[i], func, file ? file : "*", line);
	return good;
}

static void dump(const char *what, const struct result *r)
{
	printf("# %s: %d frames\n", what, r->n);
	for (int i = 0; i < r->n && i < 12; i++)
		printf("#   %s %s:%d\n", r->func[i], r->file[i], r->line[i]);
}

static int ends_with(const char *s, const char *tail)
{
	size_t a = strlen(s), b = strlen(tail);
	return a >= b && strcmp(s + a - b, tail) == 0;
}

static void *no_python_thread(void *arg)
{
	struct vrt_pyframe f[4];
	*(int *)arg = vrt_pystack_capture(f, 4);
	return NULL;
}

int main(void)
{
	const int qual = PY_VERSION_HEX >= 0x030b0000;
	const char *load_model = qual ? "Worker.load_model" : "load_model";

	PyImport_AppendInittab("vrtcb", cb_init);
	Py_InitializeEx(0);

	ok(vrt_pystack_init() == 1, "interpreter found");
	ok(vrt_pystack_version() == (PY_VERSION_HEX >> 16),
	   "version matches the headers");

	PyObject *code = Py_CompileString(script, FILENAME, Py_file_input);
	PyObject *mod = PyImport_AddModule("__main__"); /* borrowed */
	PyObject *res = code && mod
	                        ? PyEval_EvalCode(code, PyModule_GetDict(mod),
	                                          PyModule_GetDict(mod))
	                        : NULL;
	if (!res)
		PyErr_Print();
	ok(res != NULL, "script ran");
	Py_XDECREF(res);
	Py_XDECREF(code);

	const struct result *r = &results[0];
	dump("GIL held", r);
	ok(r->n == 3, "GIL held: 3 frames");
	ok(frame_is(r, 0, "helper", FILENAME, 3), "GIL held: helper:3");
	ok(frame_is(r, 1, load_model, FILENAME, 7),
	   "GIL held: Worker.load_model:7");
	ok(frame_is(r, 2, "<module>", FILENAME, 12), "GIL held: <module>:12");

	r = &results[1];
	dump("GIL released", r);
	ok(r->n == 3, "GIL released: 3 frames");
	ok(frame_is(r, 0, "helper", FILENAME, 3), "GIL released: helper:3");
	ok(frame_is(r, 1, load_model, FILENAME, 7),
	   "GIL released: Worker.load_model:7");
	ok(frame_is(r, 2, "<module>", FILENAME, 13),
	   "GIL released: <module>:13");

	r = &results[2];
	dump("second thread", r);
	ok(r->n >= 4, "second thread: frames up to threading's bootstrap");
	ok(frame_is(r, 0, "helper", FILENAME, 3), "second thread: helper:3");
	ok(frame_is(r, 1, load_model, FILENAME, 7),
	   "second thread: Worker.load_model:7");
	ok(r->n >= 3 && ends_with(r->file[2], "threading.py") &&
	           ends_with(r->func[2], "run") &&
	           ends_with(r->file[r->n - 1], "threading.py") &&
	           ends_with(r->func[r->n - 1], "_bootstrap"),
	   "second thread: run ... _bootstrap in threading.py");

	r = &results[3];
	dump("non-ASCII names", r);
	ok(r->n == 5, "non-ASCII: 5 frames");
	ok(frame_is(r, 2,
	            "gr\xc3\xbc\xc3\x9f"
	            "e",
	            FILENAME, 9),
	   "latin-1 name (UCS1) as UTF-8");
	ok(frame_is(r, 3, "\xe8\xbd\xbd\xe5\x85\xa5", FILENAME, 11),
	   "CJK name (UCS2) as UTF-8");
	ok(frame_is(r, 4, "<module>", FILENAME, 17),
	   "emoji file name (UCS4) as UTF-8");

	/* Once specialized, 3.12+ calls __init__ through a shim frame. */
	r = &results[4];
	dump("__init__ after warm-up", r);
	ok(r->n == 2 &&
	           frame_is(r, 0, qual ? "Model.__init__" : "__init__",
	                    FILENAME, 25) &&
	           frame_is(r, 1, "<module>", FILENAME, 27),
	   "__init__ called from specialized code: no shim frame");

	r = &results[BENCH_SLOT];
	ok(r->n == 20, "deep recursion: 20 frames, stable across captures");
	ok(frame_is(r, 0, "deep", FILENAME, 21) &&
	           frame_is(r, 1, "deep", FILENAME, 20) &&
	           frame_is(r, 19, "<module>", FILENAME, 22),
	   "deep recursion: lines");
	printf("# capture of %d frames: %.1f ns\n", r->n, bench_ns);

	/* Names cut to fit stay NUL-terminated and whole characters. */
	ok(strcmp(results[3].cut12, "/virtual/w") == 0 &&
	           strcmp(results[3].cut13, "/virtual/w\xc3\xb6") == 0,
	   "cut names end at a character boundary");
	{
		struct vrt_pyframe f[MAXF];
		PyThreadState *save = PyEval_SaveThread();
		int n = vrt_pystack_capture(f, MAXF);
		PyEval_RestoreThread(save);
		ok(n == 0, "outside any Python frame: 0 frames");
	}

	int got = -1;
	pthread_t t;
	pthread_create(&t, NULL, no_python_thread, &got);
	pthread_join(t, NULL);
	ok(got == 0, "thread without a Python thread state: 0 frames");

	Py_FinalizeEx();
	printf("1..%d\n", test_no);
	return failures ? 1 : 0;
}
