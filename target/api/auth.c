/* auth: who is asking (SigV4/SigV2) and may they do this to that bucket (per-key
 * permissions, anonymous-read buckets). Shared by the S3 and native APIs. */
#include "target/api/internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/errors.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/sigv2.h"

int hd_target_authenticate(struct hd_req *r, struct hd_target *t, struct hd_sigv4_auth *a)
{
    struct hd_sigv4_in in;
    int rc;

    memset(a, 0, sizeof(*a));
    if (t->keys.n == 0)
        return 1; /* auth disabled: credentials, if any, are ignored */
    memset(&in, 0, sizeof(in));
    in.method = r->method;
    in.path = r->raw_path;
    in.query = r->raw_query;
    in.headers = r->hdrs;
    in.nheaders = r->nhdrs;
    in.now = time(NULL);
    /* SigV2 first: it answers 1 unless the request carries an "AWS " header or the
     * AWSAccessKeyId query form, which SigV4 would reject as malformed */
    rc = hd_sigv2_verify(&in, hd_keys_secret_for, &t->keys, a);
    if (rc == 1)
        rc = hd_sigv4_verify(&in, hd_keys_secret_for, &t->keys, a);
    if (rc < 0 && r->trusted) {
        /* a redirected client may re-send credentials signed for the proxy's Host; the
         * proxy verified them already */
        memset(a, 0, sizeof(*a));
        return 1;
    }
    if (rc < 0) {
        hd_stats_inc(HD_ST_AUTH_FAILED);
        HD_LOG(HD_INFO, r->id, "auth failed: %s", hd_strerror(rc));
    }
    return rc;
}

static int is_write(const char *method)
{
    return strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0;
}

int hd_target_authorize(struct hd_req *r, struct hd_target *t, int authrc,
                        const struct hd_sigv4_auth *a, const char *bucket)
{
    struct hd_bucket_info bi;
    const struct hd_key *k;
    int write = is_write(r->method);

    if (r->trusted)
        return 0; /* a proxy authenticated and authorised it */
    if (authrc == 1) {
        if (t->keys.n == 0)
            return 0; /* auth disabled */
        if (bucket && !write && hd_store_bucket_get(t->st, bucket, &bi) == 0 && bi.anonymous_read)
            return 0;
        hd_stats_inc(HD_ST_AUTH_FAILED);
        return HD_EMISSINGAUTH;
    }
    k = hd_keys_find(&t->keys, a->access_key);
    if (!k)
        return HD_ENOACCESSKEY;
    if (!bucket)
        return 0; /* ListBuckets: any valid key */
    if (hd_key_allows(k, bucket, write) < 0) {
        hd_stats_inc(HD_ST_AUTH_FAILED);
        return HD_EACCESS;
    }
    /* CopyObject also reads its source: check the name the copy will use */
    if (write && hd_req_header(r, "x-amz-copy-source")) {
        int rc = hd_key_allows_copy_source(k, hd_req_header(r, "x-amz-copy-source"));
        if (rc == HD_EACCESS)
            hd_stats_inc(HD_ST_AUTH_FAILED);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int hd_target_auth_admin(struct hd_req *r, struct hd_target *t)
{
    struct hd_sigv4_auth a;
    const struct hd_key *k;
    int rc;

    if (r->trusted || t->keys.n == 0)
        return 0;
    rc = hd_target_authenticate(r, t, &a);
    if (rc < 0)
        return rc;
    if (rc == 1)
        return HD_EMISSINGAUTH;
    k = hd_keys_find(&t->keys, a.access_key);
    if (!k)
        return HD_ENOACCESSKEY;
    if (strcmp(r->method, "GET") == 0 || strcmp(r->method, "HEAD") == 0)
        return 0;
    return k->all == HD_PERM_RW ? 0 : HD_EACCESS;
}
