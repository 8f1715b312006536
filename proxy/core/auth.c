/* auth: who is asking a proxy and may they (SigV4/SigV2 against auth.keys, anonymous reads of
 * anonymous_read buckets, another proxy's cluster header). HTTP workers. */
#include "proxy/core/core.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/errors.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/sigv2.h"

int hd_proxy_anonymous_read(struct hd_proxy *p, const char *bucket)
{
    struct hd_bmd *b = hd_smap_state_bmd(p->cs);
    const struct hd_bmd_bucket *e = hd_bmd_find(b, bucket);
    json_t *j = e && e->props ? json_loads(e->props, 0, NULL) : NULL;
    int yes = j && json_is_true(json_object_get(j, "anonymous_read"));

    json_decref(j);
    hd_bmd_unref(b);
    return yes;
}

/* A call from another proxy of this cluster (forwarded to the primary). */
static int cluster_trusted(struct hd_req *r, struct hd_proxy *p)
{
    char want[HD_SMAP_SIG_LEN];
    const char *got = hd_req_header(r, "X-Hoard-Cluster");

    if (!*p->secret || !got)
        return 0;
    hd_smap_csig(p->secret, r->method, r->raw_path, want);
    return hd_smap_sig_equal(want, got);
}

int hd_proxy_auth(struct hd_req *r, struct hd_proxy *p, const char *bucket, struct hd_sigv4_auth *a)
{
    int write = strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0;
    int rc;

    memset(a, 0, sizeof(*a));
    if (cluster_trusted(r, p))
        return 0;
    a->anonymous = 1;
    if (p->keys.n == 0)
        return 0; /* auth off: credentials, if any, are ignored (as on targets) */
    rc = hd_keys_verify(&p->keys, r, a);
    if (rc == HD_DECLINED) { /* no credentials */
        if (bucket && !write && hd_proxy_anonymous_read(p, bucket))
            return 0;
        hd_stats_inc(HD_ST_AUTH_FAILED);
        return HD_EMISSINGAUTH;
    }
    if (rc < 0)
        return rc;
    /* the targets trust our signature (and skip this, CopyObject's source included) */
    return hd_keys_authorize(&p->keys, r, a, bucket);
}

int hd_proxy_auth_admin(struct hd_req *r, struct hd_proxy *p)
{
    struct hd_sigv4_auth a;
    const struct hd_key *k;
    int rc;

    if (cluster_trusted(r, p) || (!*p->secret && p->keys.n == 0))
        return 0;
    if (p->keys.n == 0)
        return HD_EACCESS; /* only the cluster header will do */
    rc = hd_proxy_auth(r, p, NULL, &a);
    if (rc < 0)
        return rc;
    k = !a.anonymous ? hd_keys_find(&p->keys, a.access_key) : NULL;
    return k && k->all == HD_PERM_RW ? 0 : HD_EACCESS;
}
