/* mpu: S3 multipart upload on a target (create, upload part, complete, abort, list parts,
 * list uploads). Parts live on the object's mountpath; state in that mountpath's catalog.
 * Called on HTTP worker threads. */
#ifndef HD_MPU_H
#define HD_MPU_H

#include "target/api/internal.h"

/* POST /B/K?uploads */
void hd_mpu_create(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key);
/* PUT /B/K?partNumber=N&uploadId=U (body streamed through hd_obj_put_ex) */
void hd_mpu_upload_part(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                        const struct hd_sigv4_auth *auth);
/* PUT /B/K?partNumber=N&uploadId=U with x-amz-copy-source (and x-amz-copy-source-range) */
void hd_mpu_upload_part_copy(struct hd_req *r, struct hd_target *t, const char *bucket,
                             const char *key);
/* POST /B/K?uploadId=U (XML body) */
void hd_mpu_complete(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key);
/* DELETE /B/K?uploadId=U */
void hd_mpu_abort(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key);
/* GET /B/K?uploadId=U */
/* owner: the caller, shown as the upload's Initiator and Owner */
void hd_mpu_list_parts(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                       const char *owner);
/* GET /B?uploads (owner: the caller, shown as each upload's Owner and Initiator) */
void hd_mpu_list_uploads(struct hd_req *r, struct hd_target *t, const char *bucket,
                         const char *owner);
/* The same entries as JSON (common/mpulist.h), for a proxy to merge: native
 * GET /v1/buckets/B?uploads&<the S3 parameters>. */
void hd_mpu_list_uploads_json(struct hd_req *r, struct hd_target *t, const char *bucket);
/* Removes every upload of a bucket (DeleteBucket); 0 or negative code. */
int hd_mpu_drop_bucket(struct hd_target *t, const char *bucket);
/* Aborts the uploads of bucket held here that an AbortIncompleteMultipartUpload rule of
 * rules (common/lifecycle.h) makes due at now_ms; *aborted counts them. 0 or negative code. */
int hd_mpu_lifecycle_abort(struct hd_target *t, const char *bucket, const json_t *rules,
                           int64_t now_ms, int64_t day_ms, uint64_t *aborted);

#endif
