/*
 * report_html.c — the HTML report: one self-contained page (inline CSS,
 * inline JavaScript drawing SVG, nothing fetched from anywhere: no fonts,
 * scripts or icons), so the file can be mailed, attached to a ticket or
 * opened on an air-gapped machine.
 *
 * The page itself is html/ beside this file (page.html, style.css, app.js),
 * which the build assembles and compiles in as two strings (html_page.c, from
 * html/embed_page.py). This file only writes them around the run's data:
 * the "vramtrace-report/1" JSON document, exactly as `--format json`
 * writes it (report_json.c), inside a <script type="application/json">
 * element. The page's script draws everything from that document with DOM
 * calls (textContent, never markup from trace strings).
 *
 * Trace strings are hostile input (a command line, a mark label, a symbol
 * name can hold anything). In the embedded document every '<', '>' and
 * '&' becomes \u003c, \u003e, \u0026, and U+2028 and U+2029 become
 * \u2028 and \u2029: the data can then never close its script element
 * ("</script>"), open a comment ("<!--"), nor read as anything but the
 * same JSON. JSON has none of these characters outside strings, and inside
 * a string each escape means the character it replaces, so the document
 * parses to exactly the JSON report.
 */
#include "report.h"

#include <stdlib.h>
#include <string.h>

/* Writes n bytes of JSON text, escaped for a script element (above). */
static void put_escaped(FILE *f, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '<' || c == '>' || c == '&') {
			fprintf(f, "\\u%04x", c);
		} else if (c == 0xe2 && i + 2 < n &&
		           (unsigned char)s[i + 1] == 0x80 &&
		           ((unsigned char)s[i + 2] == 0xa8 ||
		            (unsigned char)s[i + 2] == 0xa9)) {
			/* U+2028 LINE SEPARATOR, U+2029 PARAGRAPH SEPARATOR:
			 * line ends to older JavaScript parsers. */
			fputs((unsigned char)s[i + 2] == 0xa8 ? "\\u2028"
			                                      : "\\u2029",
			      f);
			i += 2;
		} else {
			fputc(c, f);
		}
	}
}

void vrt_report_html_write(FILE *f, const struct vrt_trace *t,
                           const struct vrt_replay *r,
                           const struct vrt_diagnosis *d,
                           const struct vrt_logcheck *lc)
{
	char *doc = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&doc, &len);

	fputs(vrt_html_page_head, f);
	if (m) {
		vrt_report_json_write(m, t, r, d, lc);
		if (fclose(m)) {
			free(doc);
			doc = NULL;
		}
	}
	/* Out of memory: the page says that its data is missing. */
	if (doc)
		put_escaped(f, doc, len);
	else
		fputs("null\n", f);
	free(doc);
	fputs(vrt_html_page_tail, f);
}
