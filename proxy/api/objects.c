/* objects: the native object API on a proxy (/v1/objects/BUCKET/OBJECT): authorised here,
 * then a 307 to the owning target (native.redirect, the default) or the relay. */
#include "proxy/api/api.h"
#include "proxy/cluster/cluster.h"

#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/httputil.h"
#include "common/metrics.h"
#include "proxy/data/data.h"

void hd_proxy_route_object(struct hd_req *r, struct hd_proxy *p)
{
    const char *rest = r->raw_path + 12, *slash = strchr(rest, '/');
    const char *m = r->method;
    char *bucket = NULL, *key = NULL;
    struct hd_sigv4_auth a;
    size_t klen = 0;
    int rc;

    r->op = strcmp(m, "GET") == 0      ? HD_OP_GET
            : strcmp(m, "HEAD") == 0   ? HD_OP_HEAD
            : strcmp(m, "PUT") == 0    ? HD_OP_PUT
            : strcmp(m, "DELETE") == 0 ? HD_OP_DELETE
                                       : HD_OP_OTHER;
    if (!slash || slash == rest || !slash[1]) {
        hd_resp_err_msg(r, HD_EBADKEY, "Expected /v1/objects/BUCKET/OBJECT.");
        return;
    }
    if ((rc = hd_bucket_decode(rest, (size_t)(slash - rest), &bucket)) < 0 ||
        (rc = hd_url_decode_dup(slash + 1, strlen(slash + 1), &key, &klen)) < 0) {
        hd_resp_err(r, rc);
        goto out;
    }
    if ((rc = hd_object_name_check(key, klen)) < 0) {
        hd_resp_err(r, rc);
        goto out;
    }
    if (r->op == HD_OP_PUT && hd_query_find(&r->query, "object_to")) {
        hd_proxy_ais_copy_object(r, p, bucket, key); /* authorises both buckets (ais.c) */
        goto out;
    }
    if (hd_query_find(&r->query, "object_from")) { /* the copy source only ais.c names */
        hd_resp_err_msg(r, HD_EACCESS,
                        "object_from: only the proxy names a copy source; copy with "
                        "Object.copy() (object_to).");
        goto out;
    }
    /* the target trusts our signature, so authorise here */
    r->pub = hd_keys_native_object_pub(r);
    r->pub_key = key;
    rc = hd_proxy_auth(r, p, bucket, &a);
    r->pub_key = NULL;
    if (rc < 0) {
        hd_resp_err(r, rc);
        goto out;
    }
    if (hd_proxy_autoreg(r, p, bucket) == HD_AGAIN)
        goto out; /* default upstream: registered on first access, then here again */
    if (strcmp(m, "POST") == 0 && !hd_query_find(&r->query, "uploadId")) {
        hd_proxy_ais_mpt_create(r, p, bucket, key); /* ais.c */
        goto out;
    }
    /* a large body sent at once (AIStore's SDK over plain HTTP: requests never waits for
     * 100 Continue) would meet the 307 as a connection reset: relayed instead; so is a copy
     * whose source only its public state opens (a 307 would outlive the source's state) */
    if (p->native_redirect && !hd_req_body_unannounced(r) && !r->public_source)
        hd_proxy_redirect(r, p, bucket, key, NULL);
    else /* for clients that cannot reach targets (native.redirect = false) */
        hd_proxy_relay(r, p, bucket, key, NULL);
out:
    free(bucket);
    free(key);
}
