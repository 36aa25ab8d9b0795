/*
 * A small streaming JSON writer: pretty-printed (two-space indent), keys in
 * the order written, strings escaped per RFC 8259 (invalid UTF-8 bytes are
 * written as U+FFFD so the output is always valid JSON).
 *
 * Usage: vrt_json_init, then nested begin/end calls; inside an object every
 * value is preceded by vrt_json_key. Writes go to a stdio stream; errors
 * are left in the stream (check ferror). Not thread-safe per writer.
 */
#ifndef VRT_JSON_H
#define VRT_JSON_H

#include <stdint.h>
#include <stdio.h>

#define VRT_JSON_MAX_DEPTH 32

struct vrt_json {
	FILE *f;
	int depth;
	int first[VRT_JSON_MAX_DEPTH];   /* no member written yet at depth */
	int oneline[VRT_JSON_MAX_DEPTH]; /* members on one line at depth */
	int after_key;
};

void vrt_json_init(struct vrt_json *w, FILE *f);
void vrt_json_begin_object(struct vrt_json *w);
void vrt_json_end_object(struct vrt_json *w);
void vrt_json_begin_array(struct vrt_json *w);
void vrt_json_end_array(struct vrt_json *w);
/* An array whose members stay on one line ([1,2,3]): long series of
 * numbers, which one per line would make thousands of lines long. Closed
 * by vrt_json_end_array; nothing inside it may open a container. */
void vrt_json_begin_array_oneline(struct vrt_json *w);
void vrt_json_key(struct vrt_json *w, const char *key);
void vrt_json_string(struct vrt_json *w, const char *s);
/* A string of n bytes (may hold NUL bytes, escaped as \u0000). */
void vrt_json_string_n(struct vrt_json *w, const char *s, size_t n);
void vrt_json_uint(struct vrt_json *w, uint64_t v);
void vrt_json_int(struct vrt_json *w, int64_t v);
void vrt_json_bool(struct vrt_json *w, int v);
void vrt_json_null(struct vrt_json *w);
/* "key": v */
void vrt_json_key_uint(struct vrt_json *w, const char *key, uint64_t v);
/* "key": v when have, else "key": null */
void vrt_json_key_uint_or_null(struct vrt_json *w, const char *key, int have,
                               uint64_t v);
/* Seconds from nanoseconds, printed exactly with 9 decimals trimmed. */
void vrt_json_seconds(struct vrt_json *w, int64_t ns);
/* A number given as text (a flag's value, "0.9"), written verbatim when it
 * follows JSON's number grammar, else as a string; NULL writes null. */
void vrt_json_number_text(struct vrt_json *w, const char *s);
/* Ends the document with a newline. */
void vrt_json_finish(struct vrt_json *w);

#endif /* VRT_JSON_H */
