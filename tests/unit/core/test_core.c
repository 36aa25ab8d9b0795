/*
 * Unit test of the capture core (tbuf.c + writer.c) with no preload: many
 * threads record events, the writer streams them, and the file is decoded
 * here with nothing but zstd and trace_format.h. Checks: every event
 * arrives exactly once, the trailer counts match, frames are independent,
 * and the WATERMARK promise holds (no event stamped before a watermark
 * shows up after it). TAP output.
 */
#include "core.h"

#include <vramtrace/trace_format.h>

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#define THREADS    8
#define PER_THREAD 50000

static int test_no;
static int failures;

static void ok(int cond, const char *what)
{
	printf("%sok %d - %s\n", cond ? "" : "not ", ++test_no, what);
	if (!cond)
		failures++;
}

static void *worker(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	for (uint64_t i = 0; i < PER_THREAD; i++) {
		struct vrt_ev ev = {.rec = VRT_REC_ALLOC,
		                    .api = VRT_API_cuMemAlloc_v2,
		                    .device = (int)(id % 3),
		                    .addr = (id << 40) | (i << 9),
		                    .size = 512 + i % 4096};
		vrt_tbuf_event(&ev);
		struct vrt_ev fr = {.rec = VRT_REC_FREE,
		                    .api = VRT_API_cuMemFree_v2,
		                    .device = VRT_DEVICE_UNKNOWN,
		                    .addr = ev.addr};
		vrt_tbuf_event(&fr);
	}
	/* Threads that exit hand their buffer over (thread-exit path). */
	vrt_tbuf_thread_exit();
	return NULL;
}

struct decoded {
	uint64_t allocs, frees, frames, watermark_violations;
	uint64_t trailer_events, trailer_dropped;
	int have_header, have_trailer, bad;
	uint64_t addr_sum_alloc, addr_sum_free;
};

static void parse(const uint8_t *p, size_t n, struct decoded *d,
                  uint64_t *last_wm)
{
	const uint8_t *end = p + n;
	uint64_t ts = 0, reg = 0; /* reg: the compact address register */
	while (p < end) {
		unsigned type = *p++;
		uint64_t len;
		if (vrt_get_uvarint(&p, end, &len) || len > (size_t)(end - p)) {
			d->bad = 1;
			return;
		}
		const uint8_t *q = p, *qe = p + len;
		p += len;
		uint64_t v = 0, dts = 0, api = 0, addr = 0;
		int64_t dev = 0;
		switch (type) {
		case VRT_REC_HEADER:
			d->have_header =
			        len > 8 && !memcmp(q, VRT_TRACE_MAGIC, 8);
			break;
		case VRT_REC_CHUNK:
			vrt_get_uvarint(&q, qe, &v);
			vrt_get_uvarint(&q, qe, &ts);
			reg = 0;
			break;
		case VRT_REC_ALLOC_C:
		case VRT_REC_FREE_C:
		case VRT_REC_ALLOC:
		case VRT_REC_FREE:
			vrt_get_uvarint(&q, qe, &dts);
			if (type == VRT_REC_ALLOC_C || type == VRT_REC_FREE_C) {
				uint64_t delta = 0;
				vrt_get_uvarint(&q, qe, &delta);
				addr = reg + (uint64_t)vrt_unpack_s(delta);
				type = type == VRT_REC_ALLOC_C ? VRT_REC_ALLOC
				                               : VRT_REC_FREE;
			} else {
				vrt_get_uvarint(&q, qe, &api);
				vrt_get_svarint(&q, qe, &dev);
				vrt_get_uvarint(&q, qe, &addr);
			}
			reg = addr;
			ts += dts;
			if (ts < *last_wm)
				d->watermark_violations++;
			if (type == VRT_REC_ALLOC) {
				d->allocs++;
				d->addr_sum_alloc += addr;
			} else {
				d->frees++;
				d->addr_sum_free += addr;
			}
			break;
		case VRT_REC_WATERMARK:
			/* Written first in its frame: covers earlier frames. */
			vrt_get_uvarint(&q, qe, &v);
			break;
		case VRT_REC_TRAILER:
			vrt_get_uvarint(&q, qe, &v);
			vrt_get_uvarint(&q, qe, &v);
			vrt_get_uvarint(&q, qe, &d->trailer_events);
			vrt_get_uvarint(&q, qe, &d->trailer_dropped);
			d->have_trailer = 1;
			break;
		}
	}
}

/* The watermark of a frame is the first record of the frame's stage; the
 * promise is about everything written in LATER frames. */
static uint64_t frame_watermark(const uint8_t *p, size_t n)
{
	const uint8_t *end = p + n;
	while (p < end) {
		unsigned type = *p++;
		uint64_t len, v = 0;
		if (vrt_get_uvarint(&p, end, &len) || len > (size_t)(end - p))
			return 0;
		if (type == VRT_REC_WATERMARK) {
			const uint8_t *q = p;
			vrt_get_uvarint(&q, p + len, &v);
			return v;
		}
		p += len;
	}
	return 0;
}

static int decode_file(const char *path, struct decoded *d)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *buf = malloc((size_t)size);
	if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	size_t off = 0, cap = 1 << 24;
	uint8_t *out = malloc(cap);
	uint64_t last_wm = 0;
	while (off < (size_t)size) {
		size_t fsz = ZSTD_findFrameCompressedSize(buf + off,
		                                          (size_t)size - off);
		if (ZSTD_isError(fsz)) {
			d->bad = 1;
			break;
		}
		size_t got = ZSTD_decompress(out, cap, buf + off, fsz);
		if (ZSTD_isError(got)) {
			d->bad = 1;
			break;
		}
		d->frames++;
		/* Events of this frame must not predate the previous frame's
		 * watermark. */
		parse(out, got, d, &last_wm);
		uint64_t wm = frame_watermark(out, got);
		if (wm > last_wm)
			last_wm = wm;
		off += fsz;
	}
	free(out);
	free(buf);
	return 0;
}

int main(void)
{
	char dir[] = "/tmp/vrt-core-XXXXXX";
	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	printf("1..9\n");
	atomic_store(&vrt_state, VRT_STATE_ON);
	/* The records as the hot path wrote them (test_batch.c reads
	 * the BATCH records the writer makes of them by default). */
	vrt_batch_set(0);
	ok(vrt_tbuf_init(4u << 20) == 0, "tbuf init with a small pool");
	ok(vrt_writer_start(dir, 20, 1) == 0, "writer starts");
	pthread_t t[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	vrt_writer_stop(5000);

	char path[256];
	snprintf(path, sizeof(path), "%s/%d%s", dir, (int)getpid(),
	         VRT_TRACE_SUFFIX);
	struct stat st;
	ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600,
	   "trace file exists with mode 0600");
	struct decoded d = {0};
	decode_file(path, &d);
	uint64_t expect = (uint64_t)THREADS * PER_THREAD;
	ok(!d.bad && d.have_header && d.have_trailer,
	   "every frame decodes; header and trailer present");
	ok(d.allocs == expect && d.frees == expect,
	   "every event arrives exactly once");
	ok(d.addr_sum_alloc == d.addr_sum_free,
	   "alloc and free payloads intact");
	ok(d.trailer_events == 2 * expect && d.trailer_dropped == 0,
	   "trailer counts match, nothing dropped");
	ok(d.frames > 1, "more than one independent frame");
	ok(d.watermark_violations == 0,
	   "no event appears after a watermark that covers it");
	if (d.allocs != expect || d.watermark_violations)
		printf("# allocs %llu frees %llu frames %llu wm-violations "
		       "%llu\n",
		       (unsigned long long)d.allocs,
		       (unsigned long long)d.frees,
		       (unsigned long long)d.frames,
		       (unsigned long long)d.watermark_violations);
	unlink(path);
	rmdir(dir);
	return failures ? 1 : 0;
}
