/* route: the data path of an object request. The owner is the HRW winner over the smap's
 * targets (AIStore's function, common/hrw.h); the client gets 307 to the owner's public URL
 * with the original raw path and query plus a proxy signature (pid, ptime, psig), or the
 * request is relayed to the owner (common/relay.c). HTTP workers; nothing blocks. */
#include "proxy/data/data.h"

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
#include "common/nodeauth.h"

/* The owner of r's object: HD_OK with *base (its public URL, malloc'd), its id and the version
 * of the map that named it, or HD_DONE after answering r (no owner available). */
static int owner_base(struct hd_req *r, struct hd_proxy *p, const char *bucket, const char *key,
                      char **base, char id[HD_NODE_ID_MAX], char smapv[HD_SMAP_VSTR_MAX])
{
    char msg[256];
    int rc = hd_proxy_owner(p, bucket, key, hd_req_param(r, "provider"), base, id, smapv, msg,
                            sizeof(msg));

    if (rc == 0)
        return HD_OK;
    hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
    return HD_DONE;
}
/* The 307 to owner. A capability given because the bucket is public (r->public_grant, not
 * the caller's rights) carries ppub=1 in its signed query: the target lets the client in only
 * while the bucket still is (target/api/auth.c), so that closing a bucket also closes the
 * redirects given before. */
static void redirect_signed(struct hd_req *r, struct hd_proxy *p, const char *base,
                            const char *owner, const char *smapv, const char *path,
                            const char *query, const char *copy_src)
{
    struct hd_buf loc, q;

    hd_buf_init(&loc);
    hd_buf_init(&q);
    if (r->public_grant) {
        hd_buf_printf(&q, "%s%sppub=1", query, *query ? "&" : "");
        if (q.oom) {
            hd_buf_cleanup(&q);
            hd_resp_err(r, -ENOMEM);
            return;
        }
        query = q.data;
    }
    hd_buf_printf(&loc, "%s%s?%s%spid=%s", base, path, query, *query ? "&" : "", p->self.id);
    if (smapv && *smapv) /* a target behind this map waits for it (target/cluster) */
        hd_buf_printf(&loc, "&psv=%s", smapv);
    if (hd_nodeauth_on(p->na)) {
        long long ptime = (long long)time(NULL) + HD_SMAP_PSIG_TTL;
        char sig[65];
        hd_nodeauth_psig(p->na, r->method, path, query, ptime, owner, copy_src, smapv, sig);
        hd_buf_printf(&loc, "&ptime=%lld&psig=%s", ptime, sig);
    }
    if (loc.oom || hd_resp_header(r, "Location", loc.data) < 0)
        hd_resp_err(r, -ENOMEM);
    else
        hd_resp_empty(r, 307);
    hd_buf_cleanup(&loc);
    hd_buf_cleanup(&q);
}

void hd_proxy_redirect_to(struct hd_req *r, struct hd_proxy *p, const char *base, const char *owner,
                          const char *smapv, const char *path, const char *query)
{
    redirect_signed(r, p, base, owner, smapv, path, query, hd_req_header(r, "x-amz-copy-source"));
}

void hd_proxy_redirect_copy(struct hd_req *r, struct hd_proxy *p, const char *bucket,
                            const char *key, const char *path, const char *query,
                            const char *copy_src)
{
    char *base, owner[HD_NODE_ID_MAX], smapv[HD_SMAP_VSTR_MAX];

    if (owner_base(r, p, bucket, key, &base, owner, smapv) == HD_DONE)
        return;
    redirect_signed(r, p, base, owner, smapv, path, query, copy_src);
    free(base);
}

void hd_proxy_redirect(struct hd_req *r, struct hd_proxy *p, const char *bucket, const char *key,
                       const char *path)
{
    char *base, owner[HD_NODE_ID_MAX], smapv[HD_SMAP_VSTR_MAX];

    if (owner_base(r, p, bucket, key, &base, owner, smapv) == HD_DONE)
        return;
    hd_proxy_redirect_to(r, p, base, owner, smapv, path ? path : r->raw_path, r->raw_query);
    free(base);
}

/* What a filtered relay sends instead of r's own: method, headers, body. */
struct filtered {
    const struct hd_kv *h;
    size_t nh;
    const struct hd_relay_filter *f;
    void *arg;
    const char *first;
    size_t nfirst;
};

/* Starts the relay of r (or of what fl makes of it) to the owner: 0, or the code to answer
 * with and msg (nothing answered; fl's arg stays the caller's). */
static int relay_to(struct hd_req *r, struct hd_proxy *p, const char *bucket, const char *key,
                    const char *vbucket, const char *path, const char *query,
                    const struct filtered *fl, char *msg, size_t msglen)
{
    struct hd_nodesig sig;
    struct hd_kv extra[8 + HD_PROXY_RELAY_HDRS];
    struct hd_buf url;
    char *base, owner[HD_NODE_ID_MAX], smapv[HD_SMAP_VSTR_MAX];
    size_t n = 0, i;
    int rc;

    msg[0] = '\0';
    if ((rc = hd_proxy_owner(p, bucket, key, hd_req_param(r, "provider"), &base, owner, smapv, msg,
                             msglen)) < 0)
        return rc;
    hd_buf_init(&url);
    hd_buf_printf(&url, "%s%s%s%s", base, path, *query ? "?" : "", query);
    free(base);
    if (url.oom || (fl && fl->nh > HD_PROXY_RELAY_HDRS)) {
        hd_buf_cleanup(&url);
        return -ENOMEM;
    }
    for (i = 0; fl && i < fl->nh; i++)
        extra[n++] = fl->h[i];
    if (vbucket) /* a virtual-host request: the target reads the bucket from here */
        extra[n++] = (struct hd_kv){"X-Hoard-Vhost", vbucket};
    if (r->public_source) /* the copy's source is public, not the caller's: no tags */
        extra[n++] = (struct hd_kv){"X-Hoard-Public-Source", "1"};
    if (*smapv) /* signed with the rest: a target behind this map waits for it */
        extra[n++] = (struct hd_kv){"X-Hoard-Smap", smapv};
    /* the client's body streams through unhashed (UNSIGNED-PAYLOAD): the nonce stops a
     * replay, TLS an on-path rewrite, and the client's own SigV4 covers it end to end */
    if (hd_nodeauth_sign(p->na, fl ? fl->f->method : r->method, url.data, owner, NULL, extra, n,
                         &sig) < 0) {
        hd_buf_cleanup(&url);
        return -ENOMEM;
    }
    for (i = 0; i < sig.n; i++)
        extra[n++] = sig.kv[i];
    rc = fl ? hd_relay_start_filtered(p->relay, r, url.data, extra, n, fl->f, fl->arg, fl->first,
                                      fl->nfirst)
            : hd_relay_start(p->relay, r, url.data, extra, n);
    hd_buf_cleanup(&url);
    if (rc < 0) {
        snprintf(msg, msglen, "Too many relayed requests in flight; retry shortly.");
        return HD_EUNAVAIL;
    }
    return 0;
}

static void relay_answer(struct hd_req *r, struct hd_proxy *p, const char *bucket, const char *key,
                         const char *vbucket, const char *path, const char *query)
{
    char msg[256];
    int rc = relay_to(r, p, bucket, key, vbucket, path, query, NULL, msg, sizeof(msg));

    if (rc < 0)
        hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
}

void hd_proxy_relay(struct hd_req *r, struct hd_proxy *p, const char *bucket, const char *key,
                    const char *vbucket)
{
    relay_answer(r, p, bucket, key, vbucket, r->raw_path, r->raw_query);
}

int hd_proxy_relay_filtered(struct hd_req *r, struct hd_proxy *p, const char *bucket,
                            const char *key, const struct hd_kv *h, size_t nh,
                            const struct hd_relay_filter *f, void *arg, const char *first,
                            size_t nfirst, char *msg, size_t msglen)
{
    struct filtered fl = {h, nh, f, arg, first, nfirst};
    struct hd_buf path;
    int rc;

    hd_buf_init(&path);
    hd_buf_puts(&path, "/");
    hd_uri_encode(&path, bucket, strlen(bucket), 0);
    hd_buf_puts(&path, "/");
    hd_uri_encode(&path, key, strlen(key), 1);
    msg[0] = '\0';
    rc = path.oom ? -ENOMEM : relay_to(r, p, bucket, key, NULL, path.data, "", &fl, msg, msglen);
    hd_buf_cleanup(&path);
    return rc;
}

void hd_proxy_relay_path(struct hd_req *r, struct hd_proxy *p, const char *bucket, const char *key,
                         const char *path, const char *query)
{
    relay_answer(r, p, bucket, key, NULL, path, query);
}
