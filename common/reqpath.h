/*
 * reqpath.h — what kind of request a path names: one a client sends for
 * an answer from the model, a probe (health, readiness, liveness, metrics,
 * metadata, the model list), or a service of the serving stack's own
 * plumbing (a cluster runtime's RPCs). Shared by the preload, which marks
 * each request it sees, and the analyzer, which names them.
 *
 * Probes are counted apart: a load balancer or a Kubernetes probe polling
 * a server that is still loading is not serving, and a poll is never the
 * request in flight when memory runs out. The lists are the engines' own
 * endpoints (vLLM, SGLang, llama-server, Ollama, TGI, Triton and
 * TensorRT-LLM's servers, KServe's v2 protocol, gRPC's standard health
 * and reflection services); docs/design.md has them in a table.
 *
 * Pure: no allocation, no globals, no locale; safe inside a hook.
 */
#ifndef VRT_REQPATH_H
#define VRT_REQPATH_H

#include <stddef.h>
#include <stdint.h>

enum vrt_reqpath_class {
	VRT_REQPATH_REQUEST = 0, /* a request for the model (or unknown) */
	VRT_REQPATH_PROBE = 1,   /* health, readiness, metrics, metadata */
	VRT_REQPATH_INTERNAL = 2 /* a cluster runtime's own RPC (Ray) */
};

/* The class of the request path p[0..n) (an HTTP/1.x request target or an
 * HTTP/2 :path; a query string is ignored). get: the method is GET, HEAD
 * or OPTIONS (the site root is a probe only then: servers that take
 * their requests at "/" take them by POST). Unknown paths are requests. */
int vrt_reqpath_class(const char *p, size_t n, int get);

/* A request path's identity in the trace (NET's val): FNV-1a, 32 bits,
 * over the whole path, byte by byte as HTTP/2's HPACK walk meets it or at
 * once as an HTTP/1.x request line gives it: the same path hashes the
 * same over either protocol. */
#define VRT_REQPATH_HASH_INIT 2166136261u
static inline uint32_t vrt_reqpath_hash_byte(uint32_t x, unsigned c)
{
	return (x ^ (c & 0xffu)) * 16777619u;
}

static inline uint32_t vrt_reqpath_hash(const char *p, size_t n)
{
	uint32_t x = VRT_REQPATH_HASH_INIT;
	for (size_t i = 0; i < n; i++)
		x = vrt_reqpath_hash_byte(x, (unsigned char)p[i]);
	return x;
}

#endif
