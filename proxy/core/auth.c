/* auth: who is asking a proxy and may they (SigV4/SigV2 against auth.keys, bearer tokens
 * (hd_keys_bearer), unsigned reads of public buckets (hd_proxy_public), another proxy's node
 * signature). HTTP workers. */
#include "proxy/core/core.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/bprops.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/nodeauth.h"
#include "common/policy.h"
#include "common/sigv2.h"

int hd_proxy_tls_only(struct hd_proxy *p, const char *bucket)
{
    struct hd_bmd *b = hd_smap_state_bmd(p->cs);
    const struct hd_bmd_bucket *e = hd_bmd_find(b, bucket);
    int yes = e && e->tls_only;

    hd_bmd_unref(b);
    return yes;
}

static int tls_only_fn(void *arg, const char *bucket)
{
    return hd_proxy_tls_only(arg, bucket);
}

int hd_proxy_tls_check(struct hd_req *r, struct hd_proxy *p, const char *bucket)
{
    return hd_keys_tls_check(r, bucket, tls_only_fn, p);
}

int hd_proxy_tls_check_job(struct hd_req *r, struct hd_proxy *p, const char *bucket,
                           const json_t *args)
{
    return hd_keys_tls_check_job(r, bucket, args, tls_only_fn, p);
}

int hd_proxy_public(struct hd_proxy *p, const char *bucket, const char *key, int pub)
{
    struct hd_bmd *b = hd_smap_state_bmd(p->cs);
    const struct hd_bmd_bucket *e = hd_bmd_find(b, bucket);
    int yes = e && hd_keys_public(pub, e->public_objects, e->public_list);

    if (!yes && e && pub == HD_PUB_READ && key && (e->public_objects & HD_PUBLIC_OBJECTS_SOME))
        yes = hd_policy_patterns_match(e->public_keys, key); /* the policy's keys, prefixes */
    hd_bmd_unref(b);
    return yes;
}

static int bucket_open(void *arg, const char *bucket, const char *key, int pub)
{
    return hd_proxy_public(arg, bucket, key, pub);
}

static int known_node(void *arg, const char *id)
{
    struct hd_proxy *p = arg;
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    int yes = hd_smap_find(s, id) != NULL;

    hd_smap_unref(s);
    return yes;
}

int hd_proxy_node_verify(struct hd_req *r, struct hd_proxy *p, int flags,
                         struct hd_nodeauth_who *who)
{
    const char *why = NULL;
    char addr[64];
    int rc = hd_nodeauth_verify(p->na, r, flags, known_node, p, who, &why);

    if (rc == HD_DECLINED)
        return rc;
    if (rc < 0) {
        hd_stats_inc(HD_ST_AUTH_FAILED);
        HD_LOG(HD_WARN, NULL, "auth: node call %s %s from %s (X-Hoard-Node %s) refused: %s",
               r->method, r->raw_path, hd_req_remote(r, addr, sizeof(addr)),
               hd_req_header(r, "X-Hoard-Node") ? hd_req_header(r, "X-Hoard-Node") : "-", why);
        hd_resp_err_msg(r, rc, why);
        return HD_DONE;
    }
    hd_nodeauth_sign_answers(p->na, r);
    return 0;
}

/* A call from another proxy of this cluster (forwarded to the primary): 1; 0 when r has no
 * node signature; a negative code for a bad one (logged). */
static int cluster_trusted(struct hd_req *r, struct hd_proxy *p)
{
    struct hd_nodeauth_who who;
    const char *why = NULL;
    struct hd_smap *s;
    const struct hd_node *n;
    char addr[64];
    int rc, proxy;

    if (!hd_nodeauth_on(p->na))
        return 0; /* without a secret no node is trusted over client credentials */
    rc = hd_nodeauth_verify(p->na, r, 0, known_node, p, &who, &why);
    if (rc == HD_DECLINED)
        return 0;
    if (rc == 0) {
        s = hd_smap_state_smap(p->cs);
        n = hd_smap_find(s, who.sender);
        proxy = n && n->type == HD_NODE_PROXY;
        hd_smap_unref(s);
        if (proxy) {
            hd_nodeauth_sign_answers(p->na, r); /* the caller checks who answered */
            return 1;
        }
        why = "only proxies may call this on behalf of a client";
        rc = HD_EACCESS;
    }
    hd_stats_inc(HD_ST_AUTH_FAILED);
    HD_LOG(HD_WARN, NULL, "auth: node call %s %s from %s (X-Hoard-Node %s) refused: %s", r->method,
           r->raw_path, hd_req_remote(r, addr, sizeof(addr)),
           hd_req_header(r, "X-Hoard-Node") ? hd_req_header(r, "X-Hoard-Node") : "-", why);
    return rc;
}

/* Whether a token was revoked: the revocation list travels in the BMD. */
static int token_revoked(void *arg, const char *id)
{
    struct hd_proxy *p = arg;
    struct hd_bmd *b = hd_smap_state_bmd(p->cs);
    int yes = hd_bmd_is_revoked(b, id, (int64_t)time(NULL));

    hd_bmd_unref(b);
    return yes;
}

int hd_proxy_auth(struct hd_req *r, struct hd_proxy *p, const char *bucket, struct hd_sigv4_auth *a)
{
    int rc;

    memset(a, 0, sizeof(*a));
    if ((rc = cluster_trusted(r, p)) != 0)
        return rc == 1 ? 0 : rc;
    if ((rc = hd_keys_tls_check(r, bucket, tls_only_fn, p)) < 0)
        return rc; /* the bucket's policy: TLS only */
    a->anonymous = 1;
    if (p->keys.n == 0)
        return 0; /* auth off: credentials, if any, are ignored (as on targets) */
    if ((rc = hd_keys_bearer(p->secret, token_revoked, p, r, a)) != HD_DECLINED) {
        if (rc == 0)
            rc = hd_keys_tls_policy_call(&p->keys, r, a, bucket, tls_only_fn, p);
        return rc < 0 ? rc : hd_keys_authorize(&p->keys, r, a, bucket, bucket_open, p);
    }
    rc = hd_keys_verify(&p->keys, r, a);
    if (rc == HD_DECLINED) { /* no credentials */
        if (bucket && hd_proxy_public(p, bucket, r->pub_key, r->pub)) {
            r->public_grant = 1;
            return 0;
        }
        hd_stats_inc(HD_ST_AUTH_FAILED);
        return HD_EMISSINGAUTH;
    }
    if (rc < 0)
        return rc;
    snprintf(r->principal, sizeof(r->principal), "key %s", a->access_key);
    if ((rc = hd_keys_tls_policy_call(&p->keys, r, a, bucket, tls_only_fn, p)) < 0)
        return rc; /* undoing TLS only without TLS: an admin key's */
    /* the targets trust our signature (and skip this, CopyObject's source included) */
    return hd_keys_authorize(&p->keys, r, a, bucket, bucket_open, p);
}

int hd_proxy_auth_view_or_admin(struct hd_req *r, struct hd_proxy *p)
{
    int rc;

    r->api = HD_API_NATIVE;
    if (strcmp(r->method, "GET") == 0) {
        struct hd_sigv4_auth a;
        rc = hd_proxy_auth(r, p, NULL, &a); /* any valid key may look */
    } else {
        rc = hd_proxy_auth_admin(r, p);
    }
    if (rc < 0)
        hd_resp_err(r, rc);
    return rc;
}

int hd_proxy_auth_admin(struct hd_req *r, struct hd_proxy *p)
{
    struct hd_sigv4_auth a;
    const struct hd_key *k;
    int rc;

    if ((rc = cluster_trusted(r, p)) != 0)
        return rc == 1 ? 0 : rc;
    if (!*p->secret && p->keys.n == 0)
        return 0;
    if (p->keys.n == 0)
        return HD_EACCESS; /* only another proxy's signature will do */
    rc = hd_proxy_auth(r, p, NULL, &a);
    if (rc < 0)
        return rc;
    k = !a.anonymous ? hd_keys_find(&p->keys, a.access_key) : NULL;
    return k && k->all == HD_PERM_RW ? 0 : HD_EACCESS;
}
