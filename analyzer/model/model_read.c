/*
 * model_read.c — a model description from a file (model_read.h): the head
 * of the file through load's textfile.c, then the GGUF reader (gguf.c) or
 * the config.json reader (model_config.c). Single-threaded.
 */
#include "model_read.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "load/readfile.h"
#include "load/textfile.h"
#include "model_config.h"

int vrt_model_read(struct vrt_model *m, const char *path, const char *kv_dtype,
                   char *msg, size_t msgsz)
{
	struct vrt_load_error *err = calloc(1, sizeof(*err));
	uint8_t *head = NULL;
	char why[400];
	size_t len = 0;
	int rc = -1, more = 0;

	memset(m, 0, sizeof(*m));
	if (!err) {
		snprintf(msg, msgsz, "out of memory");
		return -1;
	}
	/* The head of the file: all of a config.json, the metadata of a
	 * GGUF (whose tensor data after it is never read). */
	if (vrt_textfile_head(path, VRT_GGUF_MAX_HEAD, &head, &len, &more,
	                      err)) {
		snprintf(msg, msgsz, "%s", err->msg);
		goto out;
	}
	if (vrt_gguf_is(head, len)) {
		if (vrt_gguf_parse(m, head, len, more, why, sizeof(why))) {
			snprintf(msg, msgsz, "not a usable GGUF file: %s", why);
			goto out;
		}
	} else if (more || len > VRT_READFILE_TEXT_MAX) {
		/* A config.json is kilobytes: the same cap as every text
		 * input (readfile.h). */
		snprintf(msg, msgsz,
		         "not a usable model config: larger than %u MiB and "
		         "not a GGUF file",
		         VRT_READFILE_TEXT_MAX >> 20);
		goto out;
	} else if (vrt_model_config_parse(m, (const char *)head, len, why,
	                                  sizeof(why))) {
		snprintf(msg, msgsz, "not a usable model config: %s", why);
		goto out;
	}
	if (kv_dtype &&
	    vrt_model_set_kv_dtype(m, kv_dtype, NULL, "--kv-dtype")) {
		snprintf(msg, msgsz, "unknown KV dtype '%s'", kv_dtype);
		goto out;
	}
	vrt_model_finish(m);
	rc = 0;
out:
	free(head);
	free(err);
	return rc;
}
