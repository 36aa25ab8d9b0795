/*
 * Unit tests of text.c, names.c and common/pathname.c: every size format the
 * reports print (bytes to EiB, the ranges the diagnosis, the engine-log
 * findings and the retest outcome keep, fractional predicted sizes), the
 * safe printer and copier on control bytes and cuts, and the base names of
 * paths with and without a last component, the names of API ids (known
 * and of a newer writer), vendors and families. TAP output.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/names.h"
#include "pathname.h"
#include "base/text.h"
#include "vramtrace/trace_format.h"

#include "../tap.h"

static void STR(const char *a, const char *b, const char *name)
{
	ok(a && !strcmp(a, b), "%s (got '%s', want '%s')", name,
	   a ? a : "(null)", b);
}

static void test_bytes(void)
{
	char b[32];

	STR(vrt_text_bytes(b, sizeof(b), 0, 2), "0 B", "zero");
	STR(vrt_text_bytes(b, sizeof(b), 1023, 2), "1023 B", "below a KiB");
	STR(vrt_text_bytes(b, sizeof(b), 1024, 2), "1.00 KiB", "one KiB");
	STR(vrt_text_bytes(b, sizeof(b), 3ull << 29, 2), "1.50 GiB", "1.5 GiB");
	STR(vrt_text_bytes(b, sizeof(b), 3ull << 29, 1), "1.5 GiB",
	    "one decimal");
	STR(vrt_text_bytes(b, sizeof(b), 5ull << 40, 2), "5.00 TiB", "TiB");
	STR(vrt_text_bytes(b, sizeof(b), UINT64_MAX, 2), "16.00 EiB",
	    "the largest");
	STR(vrt_text_bytes_in(b, sizeof(b), 5.0 * (1ull << 40), 2, VRT_UNIT_B,
	                      VRT_UNIT_GIB),
	    "5120.00 GiB", "GiB at most");
	STR(vrt_text_bytes_in(b, sizeof(b), 512.0 * 1024, 2, VRT_UNIT_MIB,
	                      VRT_UNIT_GIB),
	    "0.50 MiB", "MiB at least");
	STR(vrt_text_bytes_in(b, sizeof(b), 0, 2, VRT_UNIT_MIB, VRT_UNIT_GIB),
	    "0.00 MiB", "zero in MiB");
	STR(vrt_text_bytes_in(b, sizeof(b), 900000.0, 0, VRT_UNIT_B,
	                      VRT_UNIT_B),
	    "900000 B", "bytes only");
	STR(vrt_text_bytes_in(b, sizeof(b), 511.6, 2, VRT_UNIT_B, VRT_UNIT_TIB),
	    "512 B", "a fractional size rounds in bytes");
	STR(vrt_text_bytes(b, 6, 3ull << 29, 2), "1.50 ", "cut to the buffer");
}

static void test_safe(void)
{
	char buf[64], small[4];
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	vrt_text_put_safe(f, "a\tb\x1b[2J\x7f", SIZE_MAX);
	fputc('|', f);
	vrt_text_put_safe(f, "abcdef", 3);
	fputc('|', f);
	vrt_text_put_safe(f, "abc", 3);
	fputc('|', f);
	vrt_text_put_safe(f, NULL, 3);
	fclose(f);
	STR(out, "a?b?[2J?|abc...|abc|", "put: control bytes and cuts");
	free(out);
	vrt_text_copy_safe(buf, sizeof(buf), "x\ny\r");
	STR(buf, "x?y?", "copy: control bytes");
	vrt_text_copy_safe(small, sizeof(small), "abcdef");
	STR(small, "abc", "copy: cut to the buffer");
	vrt_text_copy_safe(small, sizeof(small), NULL);
	STR(small, "", "copy: NULL");
	EQ(vrt_text_safe_char(';'), ';', "a printable byte stays");
	EQ(vrt_text_safe_char(0x80), 0x80, "UTF-8 bytes stay");
}

static void test_pathname(void)
{
	STR(vrt_pathname_base("/usr/lib/libcuda.so.1"), "libcuda.so.1",
	    "last component");
	STR(vrt_pathname_base("vllm"), "vllm", "no slash");
	STR(vrt_pathname_base("/opt/models/"), "/opt/models/",
	    "a trailing slash keeps the whole path");
	ok(vrt_pathname_base(NULL) == NULL, "NULL stays NULL");
	STR(vrt_pathname_base_or_empty(NULL), "", "or empty: NULL");
	STR(vrt_pathname_base_or_empty("a/b.py"), "b.py", "or empty: path");
}

static void test_names(void)
{
	char buf[32];

	STR(vrt_names_api(VRT_API_cuMemAlloc_v2, NULL), "cuMemAlloc_v2",
	    "a CUDA api");
	STR(vrt_names_api(VRT_API_hipMalloc, NULL), "hipMalloc", "a HIP api");
	STR(vrt_names_api(250, "(unknown api)"), "(unknown api)",
	    "an unknown api takes the caller's word");
	STR(vrt_names_api_id(250, buf, sizeof(buf)), "api-250",
	    "an unknown api by number");
	STR(vrt_names_vendor(VRT_VENDOR_CUDA), "cuda", "vendor cuda");
	STR(vrt_names_vendor(VRT_VENDOR_HIP), "hip", "vendor hip");
	ok(!vrt_names_vendor(0), "no vendor: NULL");
	STR(vrt_names_family(VRT_FAM_VMM), "vmm", "family vmm");
	ok(!vrt_names_family(VRT_FAM_COUNT), "family out of range: NULL");
	STR(vrt_names_error(VRT_API_hipMalloc, 2, buf, sizeof(buf)),
	    "hipErrorOutOfMemory", "a HIP error in HIP's words");
}

int main(void)
{
	test_bytes();
	test_safe();
	test_pathname();
	test_names();
	printf("1..%d\n", ntests);
	return nfailed != 0;
}
