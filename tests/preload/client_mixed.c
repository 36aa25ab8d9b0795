/*
 * client_mixed.c — one process that uses the CUDA driver and the HIP
 * runtime at once (both fakes, linked with -lcuda -lamdhip64): the CUDA
 * workload (workload.c) runs on one thread while the HIP workload
 * (hip_workload.c) runs on another, so their events interleave in the
 * trace. Each writes its own expectation; --expect FILE receives
 *   {"parts": ["FILE.cuda", "FILE.hip"]}
 * which run_case.py merges: the report must keep CUDA device 0 and HIP
 * device 0 apart, each with its own counters.
 *
 * Options: --expect FILE, --cuda-devices N, --hip-devices N.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hip_workload.h"
#include "workload.h"

struct job {
	char *argv[8];
	int argc;
	int rc;
};

static void *cuda_main(void *arg)
{
	struct job *j = arg;
	struct cu_fns fns = {.ptsz = 0,
#define FILL_CU(field, base, has_ptsz) .field = field,
	                     WL_FN_LIST(FILL_CU)
#undef FILL_CU
	};
	j->rc = wl_main(j->argc, j->argv, &fns, &fns);
	return NULL;
}

static void *hip_main(void *arg)
{
	struct job *j = arg;
	struct hip_fns fns = {
#define FILL_HIP(name) .name = name,
	        HWL_FN_LIST(FILL_HIP)
#undef FILL_HIP
	};
	j->rc = hwl_main(j->argc, j->argv, &fns, &fns);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *expect = NULL, *ncuda = "1", *nhip = "1";
	char ecuda[4096], ehip[4096];
	struct job cj = {.argc = 0}, hj = {.argc = 0};
	pthread_t ct, ht;
	FILE *f;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--expect"))
			expect = argv[i + 1];
		else if (!strcmp(argv[i], "--cuda-devices"))
			ncuda = argv[i + 1];
		else if (!strcmp(argv[i], "--hip-devices"))
			nhip = argv[i + 1];
		else
			goto usage;
	}
	if (argc % 2 == 0)
		goto usage;
	snprintf(ecuda, sizeof(ecuda), "%s.cuda",
	         expect ? expect : "/dev/null");
	snprintf(ehip, sizeof(ehip), "%s.hip", expect ? expect : "/dev/null");
	cj = (struct job){{argv[0], "--devices", (char *)ncuda}, 3, 1};
	hj = (struct job){{argv[0], "--devices", (char *)nhip, "--id-base",
	                   (char *)ncuda},
	                  5,
	                  1};
	if (expect) {
		cj.argv[cj.argc++] = "--expect";
		cj.argv[cj.argc++] = ecuda;
		hj.argv[hj.argc++] = "--expect";
		hj.argv[hj.argc++] = ehip;
	}
	if (pthread_create(&ct, NULL, cuda_main, &cj) ||
	    pthread_create(&ht, NULL, hip_main, &hj)) {
		fprintf(stderr, "client_mixed: pthread_create failed\n");
		return 1;
	}
	pthread_join(ct, NULL);
	pthread_join(ht, NULL);
	if (cj.rc || hj.rc) {
		fprintf(stderr, "client_mixed: cuda %d, hip %d\n", cj.rc,
		        hj.rc);
		return 1;
	}
	if (!expect)
		return 0;
	f = fopen(expect, "w");
	if (!f ||
	    fprintf(f, "{\"parts\": [\"%s\", \"%s\"]}\n", ecuda, ehip) < 0 ||
	    fclose(f)) {
		perror(expect);
		return 1;
	}
	return 0;
usage:
	fprintf(stderr,
	        "usage: client_mixed [--expect FILE] [--cuda-devices N] "
	        "[--hip-devices N]\n");
	return 2;
}
