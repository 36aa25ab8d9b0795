/*
 * names.c — the names of a trace's numbers (names.h). API names come from
 * trace_format.h's list of hooked functions, so a function added there is
 * named here without an edit; families, vendors and error codes are
 * tables of this file. Pure.
 */
#include "names.h"

#include <inttypes.h>
#include <stdio.h>

#include "vramtrace/trace_format.h"

const char *vrt_names_api(unsigned api, const char *unknown)
{
	const char *n = vrt_api_name(api);
	return n ? n : unknown;
}

const char *vrt_names_api_id(unsigned api, char *buf, size_t bufsz)
{
	const char *n = vrt_api_name(api);

	if (n)
		return n;
	snprintf(buf, bufsz, "api-%u", api);
	return buf;
}

static const char *const family_names[VRT_FAM_COUNT] = {
        "device", "async",      "vmm", "managed",
        "pinned", "registered", "va",  "none",
};

const char *vrt_names_family(int family)
{
	if (family < 0 || family >= VRT_FAM_COUNT)
		return NULL;
	return family_names[family];
}

const char *vrt_names_vendor(int vendor)
{
	return vendor == VRT_VENDOR_CUDA  ? "cuda"
	       : vendor == VRT_VENDOR_HIP ? "hip"
	                                  : NULL;
}

/* The codes a memory call returns, with each vendor's name (HIP keeps
 * CUDA's numbers for these). */
struct err_name {
	int64_t code;
	const char *cuda, *hip;
};

static const struct err_name err_names[] = {
        {1, "CUDA_ERROR_INVALID_VALUE", "hipErrorInvalidValue"},
        {2, "CUDA_ERROR_OUT_OF_MEMORY", "hipErrorOutOfMemory"},
        {3, "CUDA_ERROR_NOT_INITIALIZED", "hipErrorNotInitialized"},
        {4, "CUDA_ERROR_DEINITIALIZED", "hipErrorDeinitialized"},
        {100, "CUDA_ERROR_NO_DEVICE", "hipErrorNoDevice"},
        {101, "CUDA_ERROR_INVALID_DEVICE", "hipErrorInvalidDevice"},
        {201, "CUDA_ERROR_INVALID_CONTEXT", "hipErrorInvalidContext"},
        {400, "CUDA_ERROR_INVALID_HANDLE", "hipErrorInvalidHandle"},
        {500, "CUDA_ERROR_NOT_FOUND", "hipErrorNotFound"},
        {712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
         "hipErrorHostMemoryAlreadyRegistered"},
        {713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
         "hipErrorHostMemoryNotRegistered"},
        {801, "CUDA_ERROR_NOT_SUPPORTED", "hipErrorNotSupported"},
        {999, "CUDA_ERROR_UNKNOWN", "hipErrorUnknown"},
};

const char *vrt_names_error(unsigned api, int64_t code, char *buf, size_t bufsz)
{
	size_t i;
	int hip = vrt_api_vendor(api) == VRT_VENDOR_HIP;

	for (i = 0; i < sizeof(err_names) / sizeof(err_names[0]); i++)
		if (err_names[i].code == code)
			return hip ? err_names[i].hip : err_names[i].cuda;
	snprintf(buf, bufsz, "error %" PRId64, code);
	return buf;
}
