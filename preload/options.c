/*
 * options.c — the one table of VRAMTRACE_* variables (name, default, kind,
 * range), read once by the constructor with secure_getenv, so a setuid or
 * setgid program ignores them all.
 *
 * Threads: vrt_options_init runs in the constructor before any other
 * vramtrace thread exists; afterwards the table is read-only and the
 * getters are safe from any thread, including inside hooks.
 *
 * A bad value never stops the host: it keeps the default and prints one
 * "vramtrace: warning:" line on stderr (the constructor is not a hook, so
 * stdio is allowed here).
 */
#include "core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum vrt_option_kind {
	VRT_KIND_INT,
	VRT_KIND_BOOL,
	VRT_KIND_STR,
	VRT_KIND_STACKS, /* none | native | python | native,python */
	VRT_KIND_START   /* record | standby */
};

struct vrt_option {
	const char *name;
	enum vrt_option_kind kind;
	long def;
	long min, max;
	long value;
	const char *str;
};

/* Order follows enum vrt_option_id. Keep docs/environment.md's table in step. */
static struct vrt_option options[VRT_OPT_COUNT] = {
        [VRT_OPT_ENABLE] = {"VRAMTRACE_ENABLE", VRT_KIND_BOOL, 1, 0, 1, 0,
                            NULL},
        [VRT_OPT_OUT] = {"VRAMTRACE_OUT", VRT_KIND_STR, 0, 0, 0, 0, NULL},
        [VRT_OPT_FLUSH_MS] = {"VRAMTRACE_FLUSH_MS", VRT_KIND_INT, 100, 5, 10000,
                              0, NULL},
        [VRT_OPT_ZSTD_LEVEL] = {"VRAMTRACE_ZSTD_LEVEL", VRT_KIND_INT, 3, 1, 19,
                                0, NULL},
        [VRT_OPT_BUFFER_MB] = {"VRAMTRACE_BUFFER_MB", VRT_KIND_INT, 64, 1, 4096,
                               0, NULL},
        [VRT_OPT_DEBUG] = {"VRAMTRACE_DEBUG", VRT_KIND_BOOL, 0, 0, 1, 0, NULL},
        [VRT_OPT_STACKS] = {"VRAMTRACE_STACKS", VRT_KIND_STACKS,
                            VRT_STACKS_NATIVE | VRT_STACKS_PYTHON, 0, 3, 0,
                            NULL},
        [VRT_OPT_STACK_DEPTH] = {"VRAMTRACE_STACK_DEPTH", VRT_KIND_INT, 64, 1,
                                 256, 0, NULL},
        [VRT_OPT_RULES] = {"VRAMTRACE_RULES", VRT_KIND_STR, 0, 0, 0, 0, NULL},
        [VRT_OPT_SAMPLE_MS] = {"VRAMTRACE_SAMPLE_MS", VRT_KIND_INT, 500, 0,
                               60000, 0, NULL},
        [VRT_OPT_NVML] = {"VRAMTRACE_NVML", VRT_KIND_BOOL, 1, 0, 1, 0, NULL},
        [VRT_OPT_START] = {"VRAMTRACE_START", VRT_KIND_START, 0, 0, 1, 0,
                           NULL},
        [VRT_OPT_METRICS] = {"VRAMTRACE_METRICS", VRT_KIND_STR, 0, 0, 0, 0,
                             NULL},
        [VRT_OPT_REDACT] = {"VRAMTRACE_REDACT", VRT_KIND_BOOL, 0, 0, 1, 0,
                            NULL},
        [VRT_OPT_FOLD] = {"VRAMTRACE_FOLD", VRT_KIND_BOOL, 1, 0, 1, 0, NULL},
        [VRT_OPT_RESOLVE_LOG] = {"VRAMTRACE_RESOLVE_LOG", VRT_KIND_BOOL, 0, 0,
                                 1, 0, NULL},
        [VRT_OPT_STANDBY_STACK_KIB] = {"VRAMTRACE_STANDBY_STACK_KIB",
                                       VRT_KIND_INT, 1024, 0, 1L << 40, 0,
                                       NULL},
        [VRT_OPT_BATCH] = {"VRAMTRACE_BATCH", VRT_KIND_BOOL, 1, 0, 1, 0, NULL},
        [VRT_OPT_METRICS_PUBLIC] = {"VRAMTRACE_METRICS_PUBLIC", VRT_KIND_BOOL,
                                    0, 0, 1, 0, NULL},
        [VRT_OPT_ENGINE] = {"VRAMTRACE_ENGINE", VRT_KIND_STR, 0, 0, 0, 0, NULL},
        [VRT_OPT_ROOT] = {"VRAMTRACE_ROOT", VRT_KIND_INT, 0, 0, 2147483647, 0,
                          NULL},
        [VRT_OPT_TIME_US] = {"VRAMTRACE_TIME_US", VRT_KIND_INT, 1000, 0,
                             10000000, 0, NULL},
};

static int parse_start(const char *s, long *out)
{
	if (!strcmp(s, "record"))
		*out = 0;
	else if (!strcmp(s, "standby"))
		*out = 1;
	else
		return -1;
	return 0;
}

static int parse_stacks(const char *s, long *out)
{
	static const struct {
		const char *name;
		long bits;
	} modes[] = {
	        {"none", 0},
	        {"native", VRT_STACKS_NATIVE},
	        {"python", VRT_STACKS_PYTHON},
	        {"native,python", VRT_STACKS_NATIVE | VRT_STACKS_PYTHON},
	        {"python,native", VRT_STACKS_NATIVE | VRT_STACKS_PYTHON},
	};
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(s, modes[i].name)) {
			*out = modes[i].bits;
			return 0;
		}
	return -1;
}

static int parse_long(const char *s, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end)
		return -1;
	*out = v;
	return 0;
}

static int parse_bool(const char *s, long *out)
{
	static const char *const yes[] = {"1", "yes", "true", "on"};
	static const char *const no[] = {"0", "no", "false", "off"};
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = 1;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = 0;
			return 0;
		}
	}
	return -1;
}

static const char *from_env(const char *name, void *arg)
{
	(void)arg;
	return secure_getenv(name);
}

void vrt_options_init(void)
{
	vrt_options_init_from(from_env, NULL);
}

void vrt_options_init_from(const char *(*get)(const char *name, void *arg),
                           void *arg)
{
	for (int i = 0; i < VRT_OPT_COUNT; i++) {
		struct vrt_option *o = &options[i];
		o->value = o->def;
		o->str = NULL;
		const char *s = get(o->name, arg);
		if (!s)
			continue;
		long v = 0;
		int bad = 0;
		switch (o->kind) {
		case VRT_KIND_STR:
			if (*s)
				o->str = s;
			continue;
		case VRT_KIND_BOOL:
			bad = parse_bool(s, &v) != 0;
			break;
		case VRT_KIND_STACKS:
			bad = parse_stacks(s, &v) != 0;
			break;
		case VRT_KIND_START:
			bad = parse_start(s, &v) != 0;
			break;
		case VRT_KIND_INT:
			bad = parse_long(s, &v) != 0 || v < o->min ||
			      v > o->max;
			break;
		}
		if (bad) {
			if (o->kind == VRT_KIND_START)
				fprintf(stderr,
				        "vramtrace: warning: %s=%s is not record "
				        "or standby; using record\n",
				        o->name, s);
			else if (o->kind == VRT_KIND_STACKS)
				fprintf(stderr,
				        "vramtrace: warning: %s=%s is not one "
				        "of "
				        "none, native, python, native,python; "
				        "using native,python\n",
				        o->name, s);
			else if (o->kind == VRT_KIND_BOOL)
				fprintf(stderr,
				        "vramtrace: warning: %s=%s is not a "
				        "boolean (0/1); using %ld\n",
				        o->name, s, o->def);
			else
				fprintf(stderr,
				        "vramtrace: warning: %s=%s is not an "
				        "integer in [%ld, %ld]; using %ld\n",
				        o->name, s, o->min, o->max, o->def);
			continue;
		}
		o->value = v;
	}
}

long vrt_options_int(enum vrt_option_id id)
{
	return options[id].value;
}

const char *vrt_options_str(enum vrt_option_id id)
{
	return options[id].str;
}
