/* route: object requests on the proxy. The owner is the HRW winner over the smap's targets
 * (AIStore's function, common/hrw.h); the client gets 307 to the owner's public URL with the
 * original raw path and query plus a proxy signature (pid, ptime, psig), or, with
 * native.redirect = false, the request is relayed to the owner (common/relay.c). */
#include "proxy/core/core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/relay.h"
#include "common/hrw.h"
#include "common/httputil.h"
#include "common/log.h"
#include "common/metrics.h"

void hd_proxy_sign(struct hd_proxy *p, const char *method, const char *url,
                   struct hd_proxy_sig *sig)
{
    long long ptime = (long long)time(NULL) + HD_SMAP_PSIG_TTL;
    char path[4096];

    memset(sig, 0, sizeof(*sig));
    sig->kv[0].k = "X-Hoard-Pid";
    sig->kv[0].v = p->self.id;
    sig->n = 1;
    if (!*p->secret)
        return;
    hd_smap_url_path(url, path, sizeof(path));
    snprintf(sig->ptime, sizeof(sig->ptime), "%lld", ptime);
    hd_smap_psig(p->secret, method, path, ptime, sig->psig);
    sig->kv[1].k = "X-Hoard-Ptime";
    sig->kv[1].v = sig->ptime;
    sig->kv[2].k = "X-Hoard-Psig";
    sig->kv[2].v = sig->psig;
    sig->n = 3;
}

/* "ais" for native buckets, "aws" for S3-backed ones (DESIGN.md's uname). */
static const char *provider_of(struct hd_proxy *p, const char *bucket, const char *param)
{
    struct hd_bmd *b = hd_smap_state_bmd(p->cs);
    const struct hd_bmd_bucket *e = hd_bmd_find(b, bucket);
    const char *pv = hd_hrw_provider(e ? e->provider : param);

    hd_bmd_unref(b);
    return pv;
}

int hd_proxy_uname(struct hd_proxy *p, const char *bucket, const char *key, char **out, size_t *len)
{
    struct hd_buf b;

    hd_buf_init(&b);
    hd_hrw_uname(&b, provider_of(p, bucket, NULL), NULL, bucket, key);
    if (b.oom) {
        hd_buf_cleanup(&b);
        return -ENOMEM;
    }
    *out = hd_buf_steal(&b, len);
    return 0;
}

/* Finds the owner of bucket/key. 0 with *url (owner's public URL, malloc'd), or a negative
 * code after answering r. */
static int owner_url(struct hd_req *r, struct hd_proxy *p, const char *bucket, const char *key,
                     char **url)
{
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    const struct hd_node *owner = NULL;
    struct hd_buf uname;
    char msg[256];
    int rc;

    *url = NULL;
    hd_buf_init(&uname);
    if (!s) {
        rc = HD_EUNAVAIL;
        hd_resp_err_msg(r, rc, "This proxy has no cluster map yet; retry shortly.");
        goto out;
    }
    hd_hrw_uname(&uname, provider_of(p, bucket, hd_req_param(r, "provider")), NULL, bucket, key);
    if (uname.oom) {
        rc = -ENOMEM;
        hd_resp_err(r, rc);
        goto out;
    }
    rc = hd_smap_owner(s, uname.data, uname.len, &owner);
    if (rc < 0 && !owner) {
        hd_resp_err_msg(r, HD_EUNAVAIL,
                        "No target is available: none has joined the cluster, or all are in "
                        "maintenance.");
        goto out;
    }
    if (rc < 0) {
        snprintf(msg, sizeof(msg),
                 "Target %s, which owns this object, is down; retry when it is back.", owner->id);
        hd_resp_err_msg(r, HD_EUNAVAIL, msg);
        goto out;
    }
    *url = strdup(owner->url);
    if (!*url) {
        rc = -ENOMEM;
        hd_resp_err(r, rc);
    }
out:
    hd_buf_cleanup(&uname);
    hd_smap_unref(s);
    return rc < 0 ? rc : 0;
}

void hd_proxy_redirect(struct hd_req *r, struct hd_proxy *p, const char *bucket, const char *key,
                       const char *path)
{
    struct hd_buf loc;
    char *base;

    if (owner_url(r, p, bucket, key, &base) < 0)
        return;
    if (!path)
        path = r->raw_path;
    hd_buf_init(&loc);
    hd_buf_printf(&loc, "%s%s?%s%spid=%s", base, path, r->raw_query, *r->raw_query ? "&" : "",
                  p->self.id);
    if (*p->secret) {
        long long ptime = (long long)time(NULL) + HD_SMAP_PSIG_TTL;
        char sig[HD_SMAP_SIG_LEN];
        hd_smap_psig(p->secret, r->method, path, ptime, sig);
        hd_buf_printf(&loc, "&ptime=%lld&psig=%s", ptime, sig);
    }
    if (loc.oom || hd_resp_header(r, "Location", loc.data) < 0)
        hd_resp_err(r, -ENOMEM);
    else
        hd_resp_empty(r, 307);
    hd_buf_cleanup(&loc);
    free(base);
}

void hd_proxy_relay(struct hd_req *r, struct hd_proxy *p, const char *bucket, const char *key,
                    const char *vbucket)
{
    struct hd_proxy_sig sig;
    struct hd_buf url, signed_url;
    char *base;
    int rc;

    if (owner_url(r, p, bucket, key, &base) < 0)
        return;
    hd_buf_init(&url);
    hd_buf_init(&signed_url);
    hd_buf_printf(&url, "%s%s%s%s", base, r->raw_path, *r->raw_query ? "?" : "", r->raw_query);
    if (vbucket) /* signed as the path-style path the target will read */
        hd_buf_printf(&signed_url, "%s/%s%s", base, vbucket, r->raw_path);
    free(base);
    if (url.oom || signed_url.oom) {
        hd_buf_cleanup(&url);
        hd_buf_cleanup(&signed_url);
        hd_resp_err(r, -ENOMEM);
        return;
    }
    hd_proxy_sign(p, r->method, vbucket ? signed_url.data : url.data, &sig);
    hd_buf_cleanup(&signed_url);
    if (vbucket) {
        sig.kv[sig.n].k = "X-Hoard-Vhost";
        sig.kv[sig.n++].v = vbucket;
    }
    rc = hd_relay_start(r, url.data, sig.kv, sig.n);
    hd_buf_cleanup(&url);
    if (rc < 0)
        hd_resp_err_msg(r, rc == HD_EUNAVAIL ? rc : HD_EUNAVAIL,
                        "Too many relayed requests in flight; retry shortly.");
}

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
    /* the target trusts our signature, so authorise here */
    if ((rc = hd_proxy_auth(r, p, bucket, &a)) < 0) {
        hd_resp_err(r, rc);
        goto out;
    }
    hd_proxy_autoreg(p, bucket); /* default upstream: register on first access */
    if (p->native_redirect)
        hd_proxy_redirect(r, p, bucket, key, NULL);
    else /* for clients that cannot reach targets (native.redirect = false) */
        hd_proxy_relay(r, p, bucket, key, NULL);
out:
    free(bucket);
    free(key);
}
