/*
 * The subcommand interface: main.c holds the table of subcommands and the
 * option parser they share; each cmd_<name>.c parses its arguments into a
 * settings struct with vrt_main_getopt, then does its work.
 *
 * A subcommand returns the process exit status: VRT_EXIT_OK, VRT_EXIT_FAIL
 * (runtime or data error, message already printed), VRT_EXIT_USAGE (usage
 * error, printed by vrt_main_usage_error), or for `record` the status of
 * the recorded command.
 */
#ifndef VRT_CMD_H
#define VRT_CMD_H

#include <stdio.h>

enum { VRT_EXIT_OK = 0, VRT_EXIT_FAIL = 1, VRT_EXIT_USAGE = 2 };

struct vrt_cmd {
	const char *name;
	int (*run)(const struct vrt_cmd *self, int argc, char **argv);
	const char *summary; /* one line for `vramtrace --help` */
	const char *usage;   /* "analyze PATH... [--format text|json] ..." */
	const char *help;    /* the option list printed by --help */
};

struct vrt_option {
	const char *name; /* long name without "--", or NULL */
	char short_name;  /* or 0 */
	int has_arg;
	int id; /* > 0, returned by vrt_main_getopt */
};

/* Parser state; zero it, then set argc/argv (after the command name). */
struct vrt_optstate {
	int argc;
	char **argv;
	int ind;
	const char *arg;        /* the option's value */
	int stop_at_positional; /* record: the first non-option starts CMD */
	char **pos;             /* positional arguments (malloc'd array) */
	int npos;
	char **rest; /* stop_at_positional: the command */
	int nrest;
};

enum {
	VRT_OPT_END = 0,    /* all arguments consumed */
	VRT_OPT_ERROR = -1, /* usage error, already printed */
	VRT_OPT_HELP = -2,  /* --help/-h given: help already printed */
};

/*
 * Returns the id of the next option (its value in st->arg), VRT_OPT_END,
 * VRT_OPT_HELP (the help was printed to stdout) or VRT_OPT_ERROR (a usage
 * error was printed to stderr). Accepts "--name value", "--name=value",
 * "-x value", "-xvalue"; "--" ends options. Positionals are collected in
 * st->pos (free it with free()).
 */
int vrt_main_getopt(struct vrt_optstate *st, const struct vrt_option *opts,
                    const struct vrt_cmd *cmd);

/*
 * Options several subcommands take, parsed once by vrt_main_parse into
 * struct vrt_opts. A subcommand's table lists the rows it takes
 * (VRT_OPTIONS_REPORT, ...) beside its own options, whose ids start at
 * VRT_OPT_OWN.
 */
enum {
	VRT_OPT_FORMAT = 1,
	VRT_OPT_OUTPUT,
	VRT_OPT_RULES,
	VRT_OPT_MODEL_CONFIG,
	VRT_OPT_KV_DTYPE,
	VRT_OPT_MARGIN,
	VRT_OPT_EXPLAIN,
	VRT_OPT_OWN
};

/* clang-format off */
#define VRT_OPTION_RULES {"rules", 0, 1, VRT_OPT_RULES}
/* --format, -o/--output, --rules: every command that writes a report. */
#define VRT_OPTIONS_REPORT                                                     \
	{"format", 'f', 1, VRT_OPT_FORMAT}, {"output", 'o', 1, VRT_OPT_OUTPUT}, \
	VRT_OPTION_RULES
/* --model-config, --kv-dtype, --margin, --explain: analyze and plan. */
#define VRT_OPTIONS_MODEL                                                      \
	{"model-config", 0, 1, VRT_OPT_MODEL_CONFIG},                          \
	{"kv-dtype", 0, 1, VRT_OPT_KV_DTYPE}, {"margin", 0, 1, VRT_OPT_MARGIN}, \
	{"explain", 0, 0, VRT_OPT_EXPLAIN}
#define VRT_OPTION_END {NULL, 0, 0, 0}
/* clang-format on */

struct vrt_opts {
	/* Set by the caller: --format's names (NULL-terminated), and how many
	 * positional arguments it takes (max_pos 0: no bound) with the usage
	 * error for too few and too many. */
	const char *const *formats;
	int min_pos, max_pos;
	const char *few, *many;
	/* Filled by vrt_main_parse: */
	int format;               /* index in formats; 0 unless given */
	const char *output;       /* -o FILE, or NULL */
	const char *rules;        /* --rules FILE, or NULL */
	const char *model_config; /* --model-config FILE, or NULL */
	const char *kv_dtype;     /* --kv-dtype NAME (a known one), or NULL */
	int margin;               /* --margin percent; -1 unless given */
	int explain;              /* --explain */
};

/* A subcommand's own option id with its value (NULL for none) into its
 * settings; returns 0, or VRT_EXIT_USAGE after vrt_main_usage_error. */
typedef int (*vrt_own_option_fn)(const struct vrt_cmd *self, int id,
                                 const char *arg, void *settings);

/*
 * Parses argc/argv (after the command name) with the table opts: the
 * shared options into *o (zero it and set what the caller sets first;
 * NULL when opts has none and any positionals go), the rest through own
 * (NULL when opts has none). *st is zeroed by the caller
 * (stop_at_positional set where wanted); positionals are left in st->pos
 * (free it). Returns 0 to go on, or 1 to stop with the exit status in
 * *status: VRT_EXIT_OK after --help (printed), VRT_EXIT_USAGE after a
 * usage error (printed).
 */
int vrt_main_parse(const struct vrt_cmd *self, int argc, char **argv,
                   const struct vrt_option *opts, struct vrt_opts *o,
                   vrt_own_option_fn own, void *settings,
                   struct vrt_optstate *st, int *status);

/* Prints "vramtrace: error: CMD: MSG", the usage line and a hint to
 * stderr; returns VRT_EXIT_USAGE. */
int vrt_main_usage_error(const struct vrt_cmd *cmd, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

/* The index of arg in the NULL-terminated names; else prints the usage
 * error "unknown WHAT 'ARG' (a, b or c)" and returns -1. */
int vrt_main_choice(const struct vrt_cmd *cmd, const char *what,
                    const char *arg, const char *const *names);

/*
 * Writes a report (write.c) with fn(f, ctx) to stdout (output NULL or
 * "-"), or to output: a new path or regular file through
 * output.tmp.XXXXXX (mode 0600) + fsync + rename so a reader never sees
 * half a file; an existing FIFO, device or socket directly, never
 * replaced. fn returns 0, or -1 when it ran out of memory. Returns the
 * exit status: VRT_EXIT_OK, or VRT_EXIT_FAIL after printing the error.
 */
int vrt_cmd_write(const char *output, int (*fn)(FILE *f, const void *ctx),
                  const void *ctx);

int vrt_cmd_record_run(const struct vrt_cmd *self, int argc, char **argv);
int vrt_cmd_attach_run(const struct vrt_cmd *self, int argc, char **argv);
int vrt_cmd_analyze_run(const struct vrt_cmd *self, int argc, char **argv);
int vrt_cmd_demo_run(const struct vrt_cmd *self, int argc, char **argv);
int vrt_cmd_ctl_run(const struct vrt_cmd *self, int argc, char **argv);
int vrt_cmd_live_run(const struct vrt_cmd *self, int argc, char **argv);
int vrt_cmd_compare_run(const struct vrt_cmd *self, int argc, char **argv);
int vrt_cmd_table_run(const struct vrt_cmd *self, int argc, char **argv);
int vrt_cmd_rules_run(const struct vrt_cmd *self, int argc, char **argv);
int vrt_cmd_plan_run(const struct vrt_cmd *self, int argc, char **argv);

#endif /* VRT_CMD_H */
