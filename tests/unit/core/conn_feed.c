/*
 * conn_feed — drives one connection's state machine (preload/conn.c) from
 * a script on stdin and prints its events, for the tests that write the
 * bytes with real protocol libraries (tests/unit/core/run_conn_wire.py:
 * Python's h2 for HTTP/2).
 *
 * Script lines:
 *   R <ns> <hex>   the server read these bytes at time ns
 *   W <ns> <hex>   the server wrote them
 *   U <ns> <n>     the server sent n bytes unseen (sendfile)
 *   C <ns>         the connection closes
 * Each event prints one line:
 *   <op> stream=<s> flags=<f> arg=<a> val=<v> path=<text or ->
 * with op BEGIN, END, ANSWER or PROTO. At the end: "inflight <n>".
 */
#include "conn.h"

#include <vramtrace/trace_format.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_event(void *arg, const struct vrt_conn_event *e)
{
	static const char *const ops[] = {
	        [VRT_NET_REQ_BEGIN] = "BEGIN", [VRT_NET_REQ_END] = "END",
	        [VRT_NET_ANSWER] = "ANSWER", [VRT_NET_PROTO] = "PROTO"};
	(void)arg;
	printf("%s stream=%u flags=%u arg=%llu val=%llu path=",
	       e->op < sizeof(ops) / sizeof(ops[0]) && ops[e->op] ? ops[e->op]
	                                                           : "?",
	       e->stream, e->flags, (unsigned long long)e->arg,
	       (unsigned long long)e->val);
	if (e->text && e->text_len)
		fwrite(e->text, 1, e->text_len, stdout);
	else
		fputc('-', stdout);
	fputc('\n', stdout);
}

static size_t unhex(const char *s, unsigned char *out, size_t max)
{
	size_t n = 0;
	while (s[0] && s[1] && n < max) {
		unsigned v;
		if (sscanf(s, "%2x", &v) != 1)
			break;
		out[n++] = (unsigned char)v;
		s += 2;
	}
	return n;
}

int main(void)
{
	static char line[1 << 20];
	static unsigned char buf[1 << 19];
	struct vrt_conn c;

	vrt_conn_init(&c);
	while (fgets(line, sizeof(line), stdin)) {
		char op;
		unsigned long long ns, k;
		char *hex = NULL;
		if (sscanf(line, "%c %llu", &op, &ns) < 2)
			continue;
		hex = strchr(line + 2, ' ');
		if (op == 'R' || op == 'W') {
			size_t n = hex ? unhex(hex + 1, buf, sizeof(buf)) : 0;
			if (op == 'R')
				vrt_conn_read(&c, buf, n, ns, print_event, NULL);
			else
				vrt_conn_write(&c, buf, n, ns, print_event,
				               NULL);
		} else if (op == 'U' && hex &&
		           sscanf(hex + 1, "%llu", &k) == 1) {
			vrt_conn_write(&c, NULL, k, ns, print_event, NULL);
		} else if (op == 'C') {
			vrt_conn_close(&c, ns, print_event, NULL);
		}
		fflush(stdout);
	}
	printf("inflight %u\n", vrt_conn_inflight(&c));
	return 0;
}
