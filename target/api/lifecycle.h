/* lifecycle: the target's job that applies its buckets' lifecycle rules (lifecycle.c). */
#ifndef HD_TARGET_LIFECYCLE_H
#define HD_TARGET_LIFECYCLE_H

#include <stdint.h>

#include "target/api/internal.h"

#define HD_LIFECYCLE_JOB "lifecycle" /* the job's kind and id (target/cache starts it) */

/* Registers the job kind with t->jobs; day_ms is the length of a rule's day
 * (lifecycle.day_ms). 0 or the error of hd_jobs_register. */
int hd_lifecycle_register(struct hd_target *t, int64_t day_ms);
/* The value of S3's x-amz-expiration for bucket/key (m its row), malloc'd, or NULL when no
 * enabled expiration rule takes the object (or no bucket here has rules: one atomic read). */
char *hd_lifecycle_expiration(struct hd_target *t, const char *bucket, const char *key,
                              const struct hd_obj_meta *m);
/* S3's x-amz-expiration on r (GET, HEAD, PUT of bucket/key, m its row): when an enabled
 * expiration rule takes the object, `expiry-date="<HTTP date>", rule-id="<ID, URI-encoded>"`
 * of the earliest. Nothing to do (one atomic read) while no bucket here has rules. */
void hd_lifecycle_header(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                         const struct hd_obj_meta *m);
/* The same for bucket/key as the catalog has it now (CopyObject, CompleteMultipartUpload: the
 * object just written); no read while no bucket here has rules. */
void hd_lifecycle_header_of(struct hd_req *r, struct hd_target *t, const char *bucket,
                            const char *key);

#endif
