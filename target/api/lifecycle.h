/* lifecycle: the target's job that applies its buckets' lifecycle rules (lifecycle.c). */
#ifndef HD_TARGET_LIFECYCLE_H
#define HD_TARGET_LIFECYCLE_H

#include <stdint.h>

#include "target/api/internal.h"

#define HD_LIFECYCLE_JOB "lifecycle" /* the job's kind and id (target/cache starts it) */

/* Registers the job kind with t->jobs; day_ms is the length of a rule's day
 * (lifecycle.day_ms). 0 or the error of hd_jobs_register. */
int hd_lifecycle_register(struct hd_target *t, int64_t day_ms);

#endif
