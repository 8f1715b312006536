/* auth: who is asking (SigV4/SigV2, bearer tokens) and may they do this to that bucket (per-key
 * permissions, anonymous-read buckets). Shared by the S3 and native APIs. */
#include "target/api/internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/bprops.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/sigv2.h"

int hd_target_authenticate(struct hd_req *r, struct hd_target *t, struct hd_sigv4_auth *a)
{
    int rc;

    memset(a, 0, sizeof(*a));
    a->anonymous = 1;
    if (t->keys.n == 0)
        return 0; /* auth disabled: credentials, if any, are ignored */
    /* a bearer token is checked wherever it arrives: a client following a proxy's 307 may
     * keep its Authorization header (a proxy's own calls carry its node signature instead) */
    if (r->trusted != HD_TRUST_NODE &&
        (rc = hd_keys_bearer(hd_tcluster_secret(t->cl), hd_tcluster_token_revoked, t->cl, r, a)) !=
            HD_DECLINED)
        return rc;
    if (r->trusted) {
        /* a proxy verified the client already; a redirected client may even re-send
         * credentials signed for the proxy's Host, which fail here */
        if ((rc = hd_keys_verify(&t->keys, r, a)) < 0 && rc != HD_DECLINED) {
            memset(a, 0, sizeof(*a));
            a->anonymous = 1;
        }
        return 0;
    }
    rc = hd_keys_verify(&t->keys, r, a);
    return rc == HD_DECLINED ? 0 : rc;
}

static int tls_only(void *arg, const char *bucket)
{
    struct hd_target *t = arg;
    struct hd_bucket_info bi;

    return hd_store_bucket_get(t->st, bucket, &bi) == 0 && bi.tls_only;
}

int hd_target_jobs_admit(void *arg, struct hd_req *r, const char *bucket, const json_t *args)
{
    if (r->trusted || !bucket)
        return 0; /* a proxy's: it checked its client */
    return hd_keys_tls_check_job(r, bucket, args, tls_only, arg);
}

static int bucket_open(void *arg, const char *bucket, const char *key, int pub)
{
    struct hd_target *t = arg;
    struct hd_bucket_info bi;

    if (hd_store_bucket_get(t->st, bucket, &bi) < 0)
        return 0;
    if (hd_keys_public(pub, bi.public_objects, bi.public_list))
        return 1;
    return pub == HD_PUB_READ && key && (bi.public_objects & HD_PUBLIC_OBJECTS_SOME) &&
           hd_store_bucket_key_public(t->st, bucket, key); /* the policy's keys, prefixes */
}

int hd_target_some_public(struct hd_target *t, const char *bucket)
{
    struct hd_bucket_info bi;

    return hd_store_bucket_get(t->st, bucket, &bi) == 0 &&
           (bi.public_objects & HD_PUBLIC_OBJECTS_SOME) != 0;
}

int hd_target_authorize(struct hd_req *r, struct hd_target *t, const struct hd_sigv4_auth *a,
                        const char *bucket)
{
    int rc;

    if (r->trusted == HD_TRUST_NODE)
        return 0; /* a proxy authenticated and authorised it */
    if ((rc = hd_keys_tls_check(r, bucket, tls_only, t)) < 0)
        return rc; /* the bucket's policy: TLS only (a 307 given before it was set included) */
    if (r->trusted == HD_TRUST_REDIRECT) {
        /* a proxy authorised it; given because the bucket was public, it must still be */
        if (!r->public_grant || (bucket && r->pub && bucket_open(t, bucket, r->pub_key, r->pub)))
            return 0;
        hd_stats_inc(HD_ST_AUTH_FAILED);
        return HD_EACCESS;
    }
    if (a->anonymous) {
        if (t->keys.n == 0)
            return 0; /* auth disabled */
        if (bucket && r->pub && bucket_open(t, bucket, r->pub_key, r->pub))
            return 0;
        hd_stats_inc(HD_ST_AUTH_FAILED);
        return HD_EMISSINGAUTH;
    }
    if ((rc = hd_keys_tls_policy_call(&t->keys, r, a, bucket, tls_only, t)) < 0)
        return rc; /* undoing TLS only without TLS: an admin key's */
    return hd_keys_authorize(&t->keys, r, a, bucket, bucket_open, t);
}

int hd_target_auth_admin(struct hd_req *r, struct hd_target *t)
{
    struct hd_sigv4_auth a;
    const struct hd_key *k;
    int rc;

    if (r->trusted == HD_TRUST_NODE) { /* only proxies call admin endpoints */
        if (hd_tcluster_from_proxy(t->cl, r)) {
            hd_tcluster_sign_answers(t->cl, r); /* HD_NODE_CAP_SIGNED_ADMIN */
            return 0;
        }
        hd_stats_inc(HD_ST_AUTH_FAILED);
        return HD_EACCESS;
    }
    if (r->trusted == HD_TRUST_REDIRECT) /* a 307 capability is for object paths only */
        return HD_EACCESS;
    if (t->keys.n == 0)
        return 0;
    rc = hd_target_authenticate(r, t, &a);
    if (rc < 0)
        return rc;
    if (a.anonymous)
        return HD_EMISSINGAUTH;
    k = hd_keys_find(&t->keys, a.access_key);
    if (!k)
        return HD_ENOACCESSKEY;
    if (strcmp(r->method, "GET") == 0 || strcmp(r->method, "HEAD") == 0)
        return 0;
    return k->all == HD_PERM_RW ? 0 : HD_EACCESS;
}
