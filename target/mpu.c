/* mpu: placeholder until the multipart implementation lands (being written now). */
#include "target/mpu.h"

#include "common/errors.h"

void hd_mpu_create(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key)
{
    hd_resp_err(r, HD_ENOTIMPL);
}

void hd_mpu_upload_part(struct hd_req *r, struct hd_target *t, const char *bucket,
                        const char *key, const struct hd_sigv4_auth *auth)
{
    hd_resp_err(r, HD_ENOTIMPL);
}

void hd_mpu_complete(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key)
{
    hd_resp_err(r, HD_ENOTIMPL);
}

void hd_mpu_abort(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key)
{
    hd_resp_err(r, HD_ENOTIMPL);
}

void hd_mpu_list_parts(struct hd_req *r, struct hd_target *t, const char *bucket,
                       const char *key)
{
    hd_resp_err(r, HD_ENOTIMPL);
}

void hd_mpu_list_uploads(struct hd_req *r, struct hd_target *t, const char *bucket)
{
    hd_resp_err(r, HD_ENOTIMPL);
}

int hd_mpu_drop_bucket(struct hd_target *t, const char *bucket)
{
    return 0;
}
