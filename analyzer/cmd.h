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

/* Prints "vramtrace: error: CMD: MSG", the usage line and a hint to
 * stderr; returns VRT_EXIT_USAGE. */
int vrt_main_usage_error(const struct vrt_cmd *cmd, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

/* The index of arg in the NULL-terminated names; else prints the usage
 * error "unknown WHAT 'ARG' (a, b or c)" and returns -1. */
int vrt_main_choice(const struct vrt_cmd *cmd, const char *what,
                    const char *arg, const char *const *names);

int vrt_cmd_record_run(const struct vrt_cmd *self, int argc, char **argv);
int vrt_cmd_analyze_run(const struct vrt_cmd *self, int argc, char **argv);
int vrt_cmd_demo_run(const struct vrt_cmd *self, int argc, char **argv);
int vrt_cmd_ctl_run(const struct vrt_cmd *self, int argc, char **argv);
int vrt_cmd_live_run(const struct vrt_cmd *self, int argc, char **argv);
int vrt_cmd_compare_run(const struct vrt_cmd *self, int argc, char **argv);
int vrt_cmd_table_run(const struct vrt_cmd *self, int argc, char **argv);
int vrt_cmd_rules_run(const struct vrt_cmd *self, int argc, char **argv);
int vrt_cmd_plan_run(const struct vrt_cmd *self, int argc, char **argv);

#endif /* VRT_CMD_H */
