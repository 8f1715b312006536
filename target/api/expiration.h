/* expiration: S3's x-amz-expiration for an object, from its bucket's lifecycle rules
 * (expiration.c). */
#ifndef HD_TARGET_EXPIRATION_H
#define HD_TARGET_EXPIRATION_H

#include <jansson.h>

#include "target/api/internal.h"

/* The object's tags (its row's hdrs) as a JSON object, or NULL when it has none. */
json_t *hd_lifecycle_obj_tags(const struct hd_obj_meta *m);

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
