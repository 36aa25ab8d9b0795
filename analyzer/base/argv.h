/*
 * Reading engine options from a recorded command line: the one place
 * that knows how "--flag value" and "--flag=value" are spelled. Pure; no
 * globals; safe from any thread.
 */
#ifndef VRT_ARGV_H
#define VRT_ARGV_H

#include <stddef.h>

/* The value of option name at argv[i] ("--name=value", or "--name" with
 * the value in argv[i + 1]); NULL when argv[i] is another word or the
 * value is missing. */
const char *vrt_argv_value(char *const *argv, size_t argc, size_t i,
                           const char *name);

#endif /* VRT_ARGV_H */
