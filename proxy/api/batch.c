/* batch: GET|POST /v1/batch on a proxy (common/batch.h). The proxy authorises the read of
 * every bucket the body names, then streams one tar: each entry is fetched from the target
 * that owns it (HRW over the current cluster map) with the proxy's signature, up to 16 at
 * once, and written in request order. The HTTP worker only reads the body and drains the
 * response; the fetching runs on the batch thread. */
#include "proxy/api/api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/batch.h"
#include "common/buf.h"
#include "common/errors.h"
#include "common/httputil.h"
#include "common/metrics.h"
#include "common/nodeauth.h"

static void resolve(void *ctx, const struct hd_batch_ent *e, struct hd_tar_src *src)
{
    struct hd_proxy *p = ctx;
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    struct hd_bmd *bmd = hd_smap_state_bmd(p->cs);
    const struct hd_node *owner = NULL;
    struct hd_buf u;
    char *uname = NULL;
    size_t ulen;

    hd_buf_init(&u);
    if (!hd_bmd_find(bmd, e->bucket)) {
        src->err = HD_ENOSUCHBUCKET;
        snprintf(src->msg, sizeof(src->msg), "no bucket %s", e->bucket);
        goto out;
    }
    if (!s || hd_proxy_uname(p, e->bucket, e->name, &uname, &ulen) < 0 ||
        hd_smap_owner(s, uname, ulen, &owner) < 0) {
        src->err = HD_EUNAVAIL;
        snprintf(src->msg, sizeof(src->msg), "%s",
                 owner ? "the target that owns it is down" : "no target is available");
        goto out;
    }
    hd_buf_printf(&u, "%s/v1/objects/", owner->url);
    hd_uri_encode(&u, e->bucket, strlen(e->bucket), 0);
    hd_buf_puts(&u, "/");
    hd_uri_encode(&u, e->name, strlen(e->name), 1);
    if (e->archpath) {
        hd_buf_puts(&u, "?archpath=");
        hd_uri_encode(&u, e->archpath, strlen(e->archpath), 0);
    }
    if (u.oom) {
        src->err = -ENOMEM;
        goto out;
    }
    src->url = hd_buf_steal(&u, NULL);
    if (hd_nodeauth_sign_lines(p->na, "GET", src->url, owner->id, &src->hdrs, &src->nhdrs) < 0)
        src->err = -ENOMEM;
out:
    free(uname);
    hd_buf_cleanup(&u);
    hd_smap_unref(s);
    hd_bmd_unref(bmd);
}

/* Who asks, decided before the body is read (authentication first: a request with bad
 * credentials costs no parsing). */
struct pbatch {
    struct hd_proxy *p;
    struct hd_sigv4_auth a;
    int rc; /* of hd_proxy_auth: 0, or HD_EMISSINGAUTH (anonymous: reads of anonymous_read
             * buckets only) */
};

/* May the caller read every bucket b names? (Its signature was verified already.) */
static int authorize(const struct pbatch *pb, const struct hd_batch *b)
{
    struct hd_proxy *p = pb->p;
    const struct hd_key *k = NULL;
    size_t i;

    if (pb->rc == 0 && pb->a.access_key[0] && !(k = hd_keys_find(&p->keys, pb->a.access_key)))
        return HD_ENOACCESSKEY;
    if (pb->rc == 0 && !k && (p->keys.n == 0 || !pb->a.anonymous))
        return 0; /* auth off, or another proxy of the cluster */
    for (i = 0; i < b->n; i++) {
        const char *bk = b->e[i].bucket;
        if (i && strcmp(bk, b->e[i - 1].bucket) == 0)
            continue;
        if (k ? hd_key_allows(k, bk, 0) < 0 : !hd_proxy_anonymous_read(p, bk))
            return k ? HD_EACCESS : HD_EMISSINGAUTH;
    }
    return 0;
}

static void ready(struct hd_req *r, void *arg, const char *body, size_t len)
{
    struct pbatch *pb = arg;
    struct hd_batch *b = NULL;
    char msg[256];
    int rc;

    if ((rc = hd_batch_parse(body, len, &b, msg, sizeof(msg))) < 0) {
        hd_resp_err_msg(r, rc, msg);
        return;
    }
    if ((rc = authorize(pb, b)) < 0 || (rc = hd_batch_check_payload(&pb->a, body, len)) < 0) {
        hd_batch_free(b);
        hd_resp_err(r, rc);
        return;
    }
    hd_batch_respond(r, b, resolve, pb->p, NULL);
}

/* Whether any bucket allows anonymous reads (else an unsigned batch is refused unread). */
static int any_anonymous(struct hd_proxy *p)
{
    struct hd_bmd *b = hd_smap_state_bmd(p->cs);
    size_t i;
    int yes = 0;

    for (i = 0; b && i < b->n && !yes; i++)
        yes = hd_proxy_anonymous_read(p, b->b[i].name);
    hd_bmd_unref(b);
    return yes;
}

void hd_proxy_batch(struct hd_req *r, struct hd_proxy *p)
{
    struct pbatch *pb;

    r->op = HD_OP_GET;
    if (strcmp(r->method, "GET") != 0 && strcmp(r->method, "POST") != 0) {
        hd_resp_err(r, HD_EMETHOD);
        return;
    }
    if (!(pb = calloc(1, sizeof(*pb)))) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    pb->p = p;
    pb->rc = hd_proxy_auth(r, p, NULL, &pb->a);
    if ((pb->rc < 0 && pb->rc != HD_EMISSINGAUTH) ||
        (pb->rc == HD_EMISSINGAUTH && !any_anonymous(p))) {
        hd_resp_err(r, pb->rc);
        free(pb);
        return;
    }
    if (r->content_length == 0 ||
        (r->content_length < 0 && !hd_req_header(r, "Transfer-Encoding"))) {
        free(pb);
        hd_resp_err_msg(r, HD_EBADARG, "A batch needs a JSON body naming its entries.");
        return;
    }
    hd_req_read_body(r, HD_BATCH_BODY_MAX, ready, pb, free);
}
