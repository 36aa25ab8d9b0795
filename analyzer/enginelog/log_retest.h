/*
 * A run's retest row (diagnose/retest.h) completed from its engine's log
 * (enginelog.h): the one place the log's configuration lines meet the
 * retest table. Pure; single-threaded.
 */
#ifndef VRT_LOG_RETEST_H
#define VRT_LOG_RETEST_H

#include "diagnose/retest.h"

struct vrt_enginelog;

/* Fills the fields (and the engine) the command lines left out from the
 * configuration the engine printed in its log (enginelog.h), their option
 * set to VRT_RETEST_FROM_LOG. Returns the fields filled, or -1 when out of
 * memory. */
int vrt_retest_from_log(struct vrt_retest_row *row,
                        const struct vrt_enginelog *log);

#endif /* VRT_LOG_RETEST_H */
