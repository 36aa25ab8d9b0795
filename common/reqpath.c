/*
 * reqpath.c — the class of a request path (reqpath.h).
 *
 * Matched case-sensitively, as servers route them. A path is cut at '?'
 * and one trailing '/' is ignored ("/health/" is "/health"). gRPC paths
 * are "/package.Service/Method": a probe when the service is gRPC's
 * health or reflection service, or the method is one of the metadata and
 * readiness methods of the inference services (Triton's and KServe's
 * GRPCInferenceService, TGI's TextGenerationService).
 */
#include "reqpath.h"

#include <string.h>

/* Whole paths that are probes. */
static const char *const probe_paths[] = {
	"/health", "/healthz", "/health_generate", "/ready", "/readyz",
	"/livez", "/live", "/ping", "/metrics", "/version", "/info",
	"/v1/models", "/v1/health", "/props", "/slots", "/get_model_info",
	"/get_server_info", "/server_info", "/api/version", "/api/tags",
	"/api/ps", "/v2", "/v2/health/ready", "/v2/health/live",
	"/favicon.ico", "/docs", "/openapi.json", "/is_sleeping",
};

/* gRPC methods of inference services that answer metadata or readiness. */
static const char *const probe_methods[] = {
	"ServerLive", "ServerReady", "ModelReady", "ServerMetadata",
	"ModelMetadata", "ModelConfig", "ModelStatistics", "RepositoryIndex",
	"Health", "Info", "ServiceDiscovery", "GetModelInfo", "GetServerInfo",
};

static int is(const char *p, size_t n, const char *s)
{
	size_t k = strlen(s);
	return n == k && !memcmp(p, s, k);
}

static int starts(const char *p, size_t n, const char *s)
{
	size_t k = strlen(s);
	return n >= k && !memcmp(p, s, k);
}

/* "/v2/models/<name>/ready" and "/v2/models/<name>[/versions/<v>]"
 * (KServe v2 metadata and readiness). */
static int v2_model_probe(const char *p, size_t n)
{
	if (!starts(p, n, "/v2/models/"))
		return 0;
	if (n >= 6 && !memcmp(p + n - 6, "/ready", 6))
		return 1;
	if (n >= 6 && !memcmp(p + n - 6, "/stats", 6))
		return 1;
	if (n >= 7 && !memcmp(p + n - 7, "/config", 7))
		return 1;
	/* no further '/' after the name (or only /versions/<v>): metadata */
	const char *name = p + 11;
	const char *slash = memchr(name, '/', n - 11);
	if (!slash)
		return 1;
	return starts(slash, (size_t)(p + n - slash), "/versions/") &&
	       !memchr(slash + 10, '/', (size_t)(p + n - slash - 10));
}

int vrt_reqpath_class(const char *p, size_t n, int get)
{
	const char *q;
	size_t i;

	if (!p || !n)
		return VRT_REQPATH_REQUEST;
	q = memchr(p, '?', n);
	if (q)
		n = (size_t)(q - p);
	if (n == 1 && p[0] == '/')
		return get ? VRT_REQPATH_PROBE : VRT_REQPATH_REQUEST;
	if (n > 1 && p[n - 1] == '/')
		n--;
	for (i = 0; i < sizeof(probe_paths) / sizeof(probe_paths[0]); i++)
		if (is(p, n, probe_paths[i]))
			return VRT_REQPATH_PROBE;
	if (v2_model_probe(p, n))
		return VRT_REQPATH_PROBE;
	if (starts(p, n, "/grpc.health.") ||
	    starts(p, n, "/grpc.reflection."))
		return VRT_REQPATH_PROBE;
	if (starts(p, n, "/ray.rpc.") || starts(p, n, "/ray.serve."))
		return VRT_REQPATH_INTERNAL;
	/* "/pkg.Service/Method": the method after the last '/' */
	if (n > 1 && p[0] == '/' && memchr(p + 1, '.', n - 1)) {
		const char *m = p + n;
		while (m > p && m[-1] != '/')
			m--;
		if (m > p + 1)
			for (i = 0; i < sizeof(probe_methods) /
			                        sizeof(probe_methods[0]);
			     i++)
				if (is(m, (size_t)(p + n - m), probe_methods[i]))
					return VRT_REQPATH_PROBE;
	}
	return VRT_REQPATH_REQUEST;
}
