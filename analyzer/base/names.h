/*
 * The names reports print for the numbers of a trace: API ids, memory
 * families, vendors and driver error codes. The trace stores numbers
 * (include/vramtrace/trace_format.h lists the API ids and their families);
 * every report, the diagnosis and the engine-log check name them here, so
 * a name is spelled once. Pure; no globals written; safe from any thread.
 */
#ifndef VRT_NAMES_H
#define VRT_NAMES_H

#include <stddef.h>
#include <stdint.h>

/* The name of an API id ("cuMemAlloc_v2"); unknown for an id this build
 * does not know (a newer writer's), which each caller words for its
 * sentence ("(unknown api)", "an allocation", NULL for JSON null). */
const char *vrt_names_api(unsigned api, const char *unknown);

/* The same with "api-N" written into buf for an unknown id: a name that
 * still tells ids apart. */
const char *vrt_names_api_id(unsigned api, char *buf, size_t bufsz);

/* Name of a family ("device", "async", ..., the order of enum vrt_family),
 * NULL out of range. */
const char *vrt_names_family(int family);

/* "cuda" or "hip" for enum vrt_vendor; NULL for a device of no known
 * vendor. */
const char *vrt_names_vendor(int vendor);

/* Name of a driver error code in the API's own vendor's spelling
 * ("CUDA_ERROR_OUT_OF_MEMORY", "hipErrorOutOfMemory"), or "error N"
 * written into buf for codes without a name. */
const char *vrt_names_error(unsigned api, int64_t code, char *buf,
                            size_t bufsz);

#endif /* VRT_NAMES_H */
