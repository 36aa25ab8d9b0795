/*
 * Unit tests of record_explain.c's reading of the dynamic loader's
 * messages (glibc's own wording), among them the one a system older than
 * the preload's glibc prints, which no test machine can produce for real.
 * TAP output.
 */
#include <string.h>

#include "record/record_explain.h"
#include "../tap.h"

static int has(const char *s, const char *part)
{
	return strstr(s, part) != NULL;
}

int main(void)
{
	char why[1024];
	static const char glibc[] =
	        "/usr/bin/python3: /lib/x86_64-linux-gnu/libc.so.6: version "
	        "`GLIBC_2.34' not found (required by "
	        "/opt/vramtrace/lib/vramtrace/libvramtrace.so)\n";
	static const char missing[] =
	        "INFO 12-01 starting\n"
	        "python3: error while loading shared libraries: "
	        "libunwind.so.8: "
	        "cannot open shared object file: No such file or directory\n";
	static const char ignored[] =
	        "ERROR: ld.so: object '/opt/x/libvramtrace.so' from LD_PRELOAD "
	        "cannot be preloaded (wrong ELF class: ELFCLASS64): ignored.\n";
	static const char symbol[] =
	        "llama-server: symbol lookup error: /opt/x/libvramtrace.so: "
	        "undefined symbol: ZSTD_compressStream2\n";
	static const char innocent[] =
	        "vLLM API server version 0.11.0\nversion 2 of the model\n";
	int r;

	r = vrt_record_explain_loader(glibc, sizeof(glibc) - 1, NULL, why,
	                              sizeof(why));
	ok(r == 1 && has(why, "libvramtrace.so needs glibc 2.34 or newer") &&
	           has(why, "/lib/x86_64-linux-gnu/libc.so.6"),
	   "glibc too old: names the version and the C library (%s)", why);

	/* Not NUL-terminated: the length decides where the text ends. */
	char buf[sizeof(missing) + 8];
	memcpy(buf, missing, sizeof(missing) - 1);
	memset(buf + sizeof(missing) - 1, 'x', 8);
	r = vrt_record_explain_loader(buf, sizeof(missing) - 1, NULL, why,
	                              sizeof(why));
	ok(r == 1 && has(why, "cannot find libunwind.so.8") &&
	           !has(why, "xxxx"),
	   "missing library on the second line, text not terminated (%s)", why);

	r = vrt_record_explain_loader(ignored, sizeof(ignored) - 1, NULL, why,
	                              sizeof(why));
	ok(r == 1 && has(why, "ignored /opt/x/libvramtrace.so: wrong ELF "
	                      "class: ELFCLASS64"),
	   "a preload the loader ignored (%s)", why);

	r = vrt_record_explain_loader(symbol, sizeof(symbol) - 1, NULL, why,
	                              sizeof(why));
	ok(r == 1 && has(why, "undefined symbol ZSTD_compressStream2"),
	   "an undefined symbol (%s)", why);

	r = vrt_record_explain_loader(ignored, sizeof(ignored) - 1,
	                              "/opt/y/libvramtrace.so", why,
	                              sizeof(why));
	ok(r == 0, "another LD_PRELOAD entry ignored is not the preload's");

	why[0] = '\0';
	r = vrt_record_explain_loader(innocent, sizeof(innocent) - 1, NULL, why,
	                              sizeof(why));
	ok(r == 0 && !why[0], "a server's own words are no complaint");

	r = vrt_record_explain_loader(glibc, 40, NULL, why, sizeof(why));
	ok(r == 0, "half a line is no complaint");

	printf("1..%d\n", ntests);
	return nfailed != 0;
}
