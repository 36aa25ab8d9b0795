/*
 * Unit tests of intern.c: strings, frames and stacks found by value (the
 * same value twice is one index), the phase table's fixed names and its
 * last shared entry, hosts, and device identity (a UUID decides across
 * hosts; without one, host + vendor + ordinal, vendor 0 matching any), the
 * conflict line when two processes describe one card differently, and
 * the final (host, vendor, ordinal) order with its remap.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load/intern.h"
#include "../tap.h"
#include "vramtrace/trace_format.h"

static void strings_frames_stacks(void)
{
	struct vrt_intern in;
	struct vrt_trace t;
	struct vrt_frame f;
	uint32_t a, b, s1, s2, s3;
	int oom = 0;
	char buf[32];

	memset(&in, 0, sizeof(in));
	memset(&t, 0, sizeof(t));
	t.intern = &in;
	ok(vrt_intern_init(&t) == 0, "init");
	EQ(t.nstrs, 1, "strs[0] is the none string");
	EQ(t.nstacks, 1, "stacks[0] is the empty path");
	a = vrt_intern_str(&t, "forward", &oom);
	b = vrt_intern_bytes(&t, (const uint8_t *)"forwardXX", 7, &oom);
	ok(a > 0 && a == b, "one string, one index (%u %u)", a, b);
	b = vrt_intern_bytes(&t, (const uint8_t *)"fo\0rward", 8, &oom);
	ok(b != a && !strcmp(vrt_load_str(&t, b), "fo"),
	   "bytes end at an embedded NUL");
	/* Enough strings to grow the hash table several times. */
	for (int i = 0; i < 2000; i++) {
		snprintf(buf, sizeof(buf), "s%d", i);
		vrt_intern_str(&t, buf, &oom);
	}
	EQ(vrt_intern_str(&t, "s1234", &oom),
	   vrt_intern_str(&t, "s1234", &oom), "found again after growing");
	EQ(vrt_intern_str(&t, "forward", &oom), a, "first string kept");

	memset(&f, 0, sizeof(f));
	f.kind = VRT_FRAME_PYTHON;
	f.function = a;
	f.line = 12;
	s1 = vrt_intern_frame(&t, &f, &oom);
	f.line = 13;
	s2 = vrt_intern_frame(&t, &f, &oom);
	f.line = 12;
	ok(s1 > 0 && s1 != s2 && vrt_intern_frame(&t, &f, &oom) == s1,
	   "frames by every field");
	s3 = vrt_intern_stack(&t, 0, s1, &oom);
	b = vrt_intern_stack(&t, s3, s2, &oom);
	EQ(t.stacks[b].depth, 2, "a child is one deeper");
	EQ(vrt_intern_stack(&t, s3, s2, &oom), b, "one path, one stack");
	ok(vrt_intern_stack(&t, 0, s2, &oom) != b, "same frame, other parent");
	ok(!oom, "no allocation failed");
	vrt_intern_free(&t);
}

static void phases(void)
{
	struct vrt_trace t;
	char name[32];
	int g, last = 0;

	memset(&t, 0, sizeof(t));
	g = vrt_intern_phase(&t, "weights");
	EQ(g, VRT_PHASE_weights, "a fixed name keeps its fixed index");
	ok(!strcmp(t.phases[VRT_LOAD_PHASE_INFERRED_KV],
	           VRT_LOAD_PHASE_INFERRED_KV_NAME),
	   "the inferred kv_cache is named");
	EQ(vrt_intern_phase(&t, VRT_BEFORE_ATTACH_PHASE),
	   VRT_LOAD_PHASE_BEFORE_ATTACH,
	   "an attach's before_attach has its fixed index");
	g = vrt_intern_phase(&t, "lora");
	EQ(g, VRT_LOAD_PHASE_BEFORE_ATTACH + 1, "a custom name follows");
	EQ(vrt_intern_phase(&t, "lora"), g, "and is found again");
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "custom-%d", i);
		last = vrt_intern_phase(&t, name);
	}
	EQ(last, VRT_LOAD_MAX_PHASES - 1, "past the table: the last index");
	ok(!strcmp(t.phases[VRT_LOAD_MAX_PHASES - 1], "other"),
	   "which is named other");
	vrt_intern_free(&t);
}

static void devices(void)
{
	static const uint8_t u[16] = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4,
	                              5,    6,    7,    8,    9, 10, 11, 12};
	struct vrt_process p1, p2;
	struct vrt_trace t;
	char uuid[64];
	int32_t a, b, c, d;
	unsigned h;

	memset(&t, 0, sizeof(t));
	vrt_intern_format_uuid(uuid, sizeof(uuid), VRT_VENDOR_CUDA, u, 16);
	ok(!strcmp(uuid, "GPU-deadbeef-0102-0304-0506-0708090a0b0c"),
	   "CUDA UUID text (%s)", uuid);
	vrt_intern_format_uuid(uuid, sizeof(uuid), VRT_VENDOR_CUDA, u, 3);
	ok(!strcmp(uuid, "deadbe"), "odd length kept as hex (%s)", uuid);
	vrt_intern_format_uuid(uuid, sizeof(uuid), VRT_VENDOR_CUDA, u, 0);
	ok(!strcmp(uuid, ""), "no UUID, no text");

	vrt_intern_format_uuid(uuid, sizeof(uuid), VRT_VENDOR_CUDA, u, 16);
	a = vrt_intern_device(&t, "hostB", VRT_VENDOR_CUDA, 1, uuid);
	b = vrt_intern_device(&t, "hostA", VRT_VENDOR_CUDA, 0, uuid);
	EQ(b, a, "one UUID, one card, whatever host and ordinal");
	c = vrt_intern_device(&t, "hostA", VRT_VENDOR_HIP, 0, "");
	d = vrt_intern_device(&t, "hostA", 0, 0, "");
	ok(c != a && d == c, "no UUID: host + ordinal, vendor 0 matches");
	EQ(vrt_intern_device(&t, "hostB", VRT_VENDOR_HIP, 0, ""), 2,
	   "another host is another card");
	EQ(t.nhosts, 2, "hosts in order of first appearance");
	ok(!vrt_intern_host(&t, "hostA", &h) && h == 1, "hostA found");
	EQ(vrt_intern_host_find(&t, "hostC"), t.nhosts, "unknown host");

	memset(&p1, 0, sizeof(p1));
	p1.pid = 10;
	p1.host = "hostB";
	p2 = p1;
	p2.pid = 20;
	ok(!vrt_intern_device_name(&t, a, &p1, VRT_VENDOR_CUDA, 80,
	                           (const uint8_t *)"H100", 4),
	   "first record names the card");
	ok(!strcmp(t.devices[a].name, "H100") && t.devices[a].pid == 10 &&
	           t.devices[a].total_bytes == 80,
	   "name, pid and capacity kept");
	vrt_intern_device_name(&t, a, &p2, VRT_VENDOR_CUDA, 80,
	                       (const uint8_t *)"H100", 4);
	ok(!t.devices[a].conflict[0], "agreeing record: no conflict");
	vrt_intern_device_name(&t, a, &p2, VRT_VENDOR_CUDA, 40,
	                       (const uint8_t *)"A100", 4);
	ok(strstr(t.devices[a].conflict, "PID 20") &&
	           strstr(t.devices[a].conflict, "'A100'") &&
	           !strcmp(t.devices[a].name, "H100"),
	   "disagreeing record: conflict line (%s)", t.devices[a].conflict);

	/* hostB (index 0) CUDA 1, hostA HIP 0, hostB HIP 0: hosts first. */
	ok(!vrt_intern_sort_devices(&t), "sort");
	ok(t.device_remap && t.device_remap[a] == 0 &&
	           t.device_remap[c] == 2 && t.device_remap[2] == 1,
	   "order (host, vendor, ordinal) and remap");
	ok(!strcmp(t.devices[2].host, "hostA"), "hostA's card last");
	for (size_t i = 0; i < t.ndevices; i++) {
		free(t.devices[i].host);
		free(t.devices[i].name);
	}
	for (size_t i = 0; i < t.nhosts; i++)
		free(t.hosts[i]);
	free(t.hosts);
	free(t.devices);
	free(t.device_remap);
	vrt_intern_free(&t);
}

int main(void)
{
	strings_frames_stacks();
	phases();
	devices();
	printf("1..%d\n", ntests);
	return nfailed != 0;
}
