/*
 * Unit test of the request path classes (common/reqpath.c): the engines'
 * health, readiness, metrics and metadata endpoints are probes, gRPC's
 * health and reflection services and the inference services' metadata
 * methods too, Ray's RPCs are plumbing, and the calls that ask a model for
 * an answer are requests. TAP output.
 */
#include "reqpath.h"

#include <stdio.h>
#include <string.h>

#include "../analyzer/tap.h"

static int cls(const char *p, int get)
{
	return vrt_reqpath_class(p, strlen(p), get);
}

int main(void)
{
	static const char *const probes[] = {
	        "/health", "/healthz", "/health?verbose=1", "/health/",
	        "/metrics", "/v1/models", "/ready", "/v2/health/ready",
	        "/v2/models/llama/ready", "/v2/models/llama",
	        "/v2/models/llama/versions/1", "/api/tags", "/props", "/slots",
	        "/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch",
	        "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
	        "/inference.GRPCInferenceService/ServerReady",
	        "/inference.GRPCInferenceService/ModelMetadata",
	        "/generate.v2.TextGenerationService/Health",
	        "/generate.v3.TextGenerationService/ServiceDiscovery",
	};
	static const char *const requests[] = {
	        "/v1/completions", "/v1/chat/completions", "/completion",
	        "/generate", "/api/chat", "/api/generate", "/v1/embeddings",
	        "/inference.GRPCInferenceService/ModelInfer",
	        "/inference.GRPCInferenceService/ModelStreamInfer",
	        "/generate.v2.TextGenerationService/Prefill",
	        "/generate.v2.TextGenerationService/Decode",
	        "/v2/models/llama/infer", "/v2/models/llama/generate", "",
	};
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
		ok(cls(probes[i], 1) == VRT_REQPATH_PROBE, "probe %s",
		   probes[i]);
	for (size_t i = 0; i < sizeof(requests) / sizeof(requests[0]); i++)
		ok(cls(requests[i], 0) == VRT_REQPATH_REQUEST, "request '%s'",
		   requests[i]);
	ok(cls("/", 1) == VRT_REQPATH_PROBE, "%s", "GET / is a probe");
	ok(cls("/", 0) == VRT_REQPATH_REQUEST, "%s", "POST / is a request");
	ok(cls("/ray.rpc.CoreWorkerService/PushTask", 0) ==
	           VRT_REQPATH_INTERNAL,
	   "%s", "Ray's RPCs are plumbing");
	printf("1..%d\n", ntests);
	return nfailed ? 1 : 0;
}
