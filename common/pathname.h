/*
 * The last component of a path, for the places that show or match a file
 * by its name alone (a frame's module or source file, a program in a
 * command line). One definition, so that every report shortens a path the
 * same way. Pure; thread-safe; no allocation (the result points into p).
 */
#ifndef VRT_PATHNAME_H
#define VRT_PATHNAME_H

/* "dir/lib.so" -> "lib.so". A path that ends in '/' has no last component
 * and is returned whole ("dir/" stays "dir/"), as is a path without '/';
 * NULL stays NULL, so that a caller can still tell "no file". */
const char *vrt_pathname_base(const char *p);

/* vrt_pathname_base, but "" for NULL: for callers that print, measure or
 * compare the result at once. */
const char *vrt_pathname_base_or_empty(const char *p);

#endif /* VRT_PATHNAME_H */
