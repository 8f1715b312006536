/* batch: GET|POST /v1/batch on a proxy (common/batch.h). The proxy authorises the read of
 * every bucket the body names, then sends the client by a 307 to the target that owns most
 * entries, or (AIStore's moss, batches it cannot place, native.redirect false) streams one
 * tar itself: each target's entries are asked of it in sub-batches (POST /v1/batch/sub with
 * the proxy's signature, target/api/batch.c), all targets at once, and written in request
 * order; an entry a target does not hold is fetched alone with a GET. The HTTP worker only
 * reads the body and drains the response; the fetching runs on the batch thread. */
#include "proxy/api/api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/aismsg.h"
#include "common/batch.h"
#include "common/json.h"
#include "common/buf.h"
#include "common/errors.h"
#include "common/httputil.h"
#include "common/metrics.h"
#include "common/nodeauth.h"
#include "common/tarindex.h"
#include "proxy/data/data.h"

static void resolve_alone(struct hd_proxy *p, const struct hd_batch_ent *e, struct hd_tar_src *src)
{
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
    if (hd_nodeauth_sign_lines(p->na, "GET", src->url, owner->id, HD_NODEAUTH_EMPTY_SHA256,
                               &src->hdrs, &src->nhdrs) < 0)
        src->err = -ENOMEM;
    else
        hd_stats_inc(HD_ST_BATCH_ALONE);
out:
    free(uname);
    hd_buf_cleanup(&u);
    hd_smap_unref(s);
    hd_bmd_unref(bmd);
}

/* A batch the proxy streams: its groups (planned on the batch thread at the first entry),
 * and for a non-streaming GetBatch the request's "in" (for MossResp). */
struct pctx {
    struct hd_proxy *p;
    const struct hd_batch *b;
    json_t *in;
    int planned;
    struct hd_batch_plan plan;
};

static void pctx_free(void *arg)
{
    struct pctx *c = arg;

    hd_batch_plan_cleanup(&c->plan);
    json_decref(c->in);
    free(c);
}

/* Groups every entry whose bucket is known and whose owner is up by owner. */
static void plan(struct pctx *c)
{
    struct hd_smap *s = hd_smap_state_smap(c->p->cs);
    struct hd_bmd *bmd = hd_smap_state_bmd(c->p->cs);
    size_t i;

    c->planned = 1;
    if (!s || hd_batch_plan_init(&c->plan, c->b->n) < 0)
        goto out;
    for (i = 0; i < c->b->n; i++) {
        const struct hd_batch_ent *e = &c->b->e[i];
        const struct hd_node *owner = NULL;
        char *uname = NULL;
        size_t ulen;
        if (hd_bmd_find(bmd, e->bucket) &&
            hd_proxy_uname(c->p, e->bucket, e->name, &uname, &ulen) == 0 &&
            hd_smap_owner(s, uname, ulen, &owner) == 0 && owner && !owner->down)
            hd_batch_plan_add(&c->plan, owner->url, owner->id, i);
        free(uname); /* not grouped: resolved alone, and the stream reports why */
    }
out:
    hd_smap_unref(s);
    hd_bmd_unref(bmd);
}

static void resolve(void *ctx, const struct hd_batch_ent *e, struct hd_tar_src *src)
{
    struct pctx *c = ctx;
    size_t i = (size_t)(e - c->b->e);

    if (!c->planned)
        plan(c);
    if (c->plan.grp && c->plan.grp[i])
        src->group = c->plan.grp[i];
    else
        resolve_alone(c->p, e, src);
}

static void fallback(void *ctx, const struct hd_batch_ent *e, struct hd_tar_src *src)
{
    resolve_alone(((struct pctx *)ctx)->p, e, src);
}

/* Group g's request: POST <owner>/v1/batch/sub, signed by this proxy over the body. */
static int group_req(void *ctx, size_t g, struct hd_tar_group *req)
{
    struct pctx *c = ctx;
    char sha[65];
    int rc = hd_batch_sub_req(c->b, &c->plan, g, req, sha);

    return rc < 0 ? rc
                  : hd_nodeauth_sign_lines(c->p->na, "POST", req->url, c->plan.g[g].id, sha,
                                           &req->hdrs, &req->nhdrs);
}

static const struct hd_batch_groups groups_ops = {group_req, fallback};

/* Who asks, decided before the body is read (authentication first: a request with bad
 * credentials costs no parsing). */
struct pbatch {
    struct hd_proxy *p;
    struct hd_sigv4_auth a;
    int rc;           /* of hd_proxy_auth: 0, or HD_EMISSINGAUTH (anonymous: reads of anonymous_read
                       * buckets only) */
    int moss;         /* AIStore's GetBatch body (/v1/ml/moss/B) */
    char provider[8]; /* its ?provider= */
    char *moss_bucket; /* B, "" when the path names none */
};

static void pbatch_free(void *arg)
{
    struct pbatch *pb = arg;

    free(pb->moss_bucket);
    free(pb);
}

/* AIStore's MossReq ({"in":[{"objname","bucket","provider","archpath","opaque"}],"mime",
 * "coer","onob","strm"}) as a batch body (common/batch.h): member names <bucket>/<objname>
 * (just <objname> with onob), then /<archpath> for an archive member, as AIStore names them.
 * 0 with *out (a JSON text) and *in (the request's "in", for the multipart answer's MossResp;
 * NULL for a streaming request), or HD_EBADARG / HD_ENOTIMPL with msg. */
static int moss_body(const struct pbatch *pb, const char *body, size_t len, char **out,
                     json_t **in_out, char *msg, size_t msglen)
{
    json_t *j = json_loadb(body, len, 0, NULL), *in, *e, *ents = NULL, *b = NULL;
    const char *mime;
    size_t i;
    int rc = HD_EBADARG, fmt;

    *out = NULL;
    *in_out = NULL;
    in = json_object_get(j, "in");
    if (!json_is_array(in) || json_array_size(in) == 0) {
        snprintf(msg, msglen, "GetBatch: \"in\" must name at least one object.");
        goto out;
    }
    mime = json_string_value(json_object_get(j, "mime"));
    fmt = hd_ais_archive_format(mime, NULL);
    if (fmt < 0) {
        snprintf(msg, msglen,
                 "GetBatch: the output formats are .tar, .tgz (.tar.gz), .tar.lz4, .tar.zst and "
                 ".zip.");
        rc = HD_ENOTIMPL;
        goto out;
    }
    ents = json_array();
    json_array_foreach(in, i, e)
    {
        const char *on = json_string_value(json_object_get(e, "objname"));
        const char *bk = json_string_value(json_object_get(e, "bucket"));
        const char *ap = json_string_value(json_object_get(e, "archpath"));
        const char *pv = json_string_value(json_object_get(e, "provider"));
        json_t *x;
        char *as;
        if (!on || !*on) {
            snprintf(msg, msglen, "GetBatch: entry %zu has no objname.", i);
            goto out;
        }
        if (json_object_get(e, "start") || json_object_get(e, "length") ||
            json_object_get(e, "uname")) {
            snprintf(msg, msglen, "GetBatch: entry %zu: start, length and uname are not supported.",
                     i);
            rc = HD_ENOTIMPL;
            goto out;
        }
        if (pv && *pv && strcmp(pv, "ais") != 0 && strcmp(pv, "aws") != 0 &&
            strcmp(pv, "s3") != 0) {
            snprintf(msg, msglen, "GetBatch: entry %zu: provider must be ais, aws or s3.", i);
            goto out;
        }
        if (!bk || !*bk)
            bk = pb->moss_bucket;
        if (!bk || !*bk) {
            snprintf(msg, msglen, "GetBatch: entry %zu names no bucket.", i);
            goto out;
        }
        if (asprintf(&as, "%s%s%s%s%s", json_is_true(json_object_get(j, "onob")) ? "" : bk,
                     json_is_true(json_object_get(j, "onob")) ? "" : "/", on, ap && *ap ? "/" : "",
                     ap && *ap ? ap : "") < 0) {
            rc = -ENOMEM;
            goto out;
        }
        x = json_pack("{s:s, s:s, s:s}", "bucket", bk, "name", on, "as", as);
        free(as);
        if (x && ap && *ap)
            json_object_set_new(x, "archpath", json_string(ap));
        if (!x || json_array_append_new(ents, x) < 0) {
            rc = -ENOMEM;
            goto out;
        }
    }
    b = json_pack("{s:O, s:b, s:s}", "entries", ents, "continue_on_error",
                  json_is_true(json_object_get(j, "coer")), "format", hd_arch_fmt_name(fmt));
    *out = b ? json_dumps(b, JSON_COMPACT) : NULL;
    rc = *out ? 0 : -ENOMEM;
    if (rc == 0 && !json_is_true(json_object_get(j, "strm"))) /* AIStore's default: multipart */
        *in_out = json_incref(in);
out:
    json_decref(b);
    json_decref(ents);
    json_decref(j);
    return rc;
}

/* May the caller read every bucket b names (secure: r came over TLS)? (Its signature was
 * verified already.) *grants says how: BATCH_BY_PUBLIC for buckets only everyone's rights
 * open to the caller, BATCH_BY_KEY for buckets its key opens. */
#define BATCH_BY_PUBLIC 1
#define BATCH_BY_KEY 2
static int authorize(const struct pbatch *pb, const struct hd_batch *b, int secure, int *grants)
{
    struct hd_proxy *p = pb->p;
    const struct hd_key *k = NULL;
    size_t i;
    int whole = 0; /* the previous entry's bucket was decided as a whole (not per key) */

    *grants = 0;
    if (!secure && !(pb->rc == 0 && hd_proxy_auth_by_node(&pb->a)))
        for (i = 0; i < b->n; i++)
            if (hd_proxy_tls_only(p, b->e[i].bucket))
                return HD_EACCESS; /* the bucket's policy: TLS only */

    if (pb->rc == 0 && pb->a.access_key[0] && !(k = hd_keys_find(&p->keys, pb->a.access_key)))
        return HD_ENOACCESSKEY;
    if (pb->rc == 0 && !k && (p->keys.n == 0 || !pb->a.anonymous))
        return 0; /* auth off, or another proxy of the cluster */
    for (i = 0; i < b->n; i++) {
        const char *bk = b->e[i].bucket;
        if (i && whole && strcmp(bk, b->e[i - 1].bucket) == 0)
            continue; /* decided for the whole bucket */
        if (k && hd_key_allows(k, bk, 0) == 0) {
            *grants |= BATCH_BY_KEY;
            whole = 1;
        } else if (hd_proxy_public(p, bk, b->e[i].name, HD_PUB_READ)) {
            *grants |= BATCH_BY_PUBLIC; /* (a key: as everyone may, too) */
            whole = hd_proxy_public(p, bk, NULL, HD_PUB_READ); /* every object, not by key */
        } else {
            return k ? HD_EACCESS : HD_EMISSINGAUTH;
        }
    }
    return 0;
}

/* AIStore's MossResp {"out": [MossOut per entry, in order], "uuid"}: MossOut {"objname",
 * "archpath"?, "bucket", "provider", "opaque"? (echoed), "err_msg"?, "size"}. */
static json_t *moss_meta(void *ctx, const struct hd_batch *b, const uint64_t *sizes,
                         char *const *errs)
{
    struct pctx *m = ctx;
    struct hd_bmd *bmd = hd_smap_state_bmd(m->p->cs);
    json_t *out = json_array(), *e;
    size_t i;

    for (i = 0; out && i < b->n; i++) {
        json_t *x = json_array_get(m->in, i);
        const struct hd_bmd_bucket *bk = hd_bmd_find(bmd, b->e[i].bucket);
        const char *pv = bk ? bk->provider : "ais";
        e = json_pack("{s:s, s:s, s:s, s:I}", "objname", b->e[i].name, "bucket", b->e[i].bucket,
                      "provider", pv, "size", (json_int_t)(errs[i] ? 0 : sizes[i]));
        if (e && b->e[i].archpath)
            json_object_set_new(e, "archpath", json_string(b->e[i].archpath));
        if (e && json_is_string(json_object_get(x, "opaque")))
            json_object_set(e, "opaque", json_object_get(x, "opaque"));
        if (e && errs[i])
            json_object_set_new(e, "err_msg", json_string(errs[i]));
        if (!e || json_array_append_new(out, e) < 0) {
            json_decref(out);
            out = NULL;
        }
    }
    hd_bmd_unref(bmd);
    return out ? json_pack("{s:o, s:s}", "out", out, "uuid", "") : NULL;
}

/* Batch GET served by a target (issue 14): the owner of most entries (the designated target)
 * gets the client by a 307 to /v1/batch/<SHA-256 of the body>, signed like an object
 * redirect. It reads its own entries from disk and fetches the others from their owners in
 * parallel, so a mini-batch streams like a shard instead of every sample taking an HTTP hop
 * through the proxy. The body's hash in the signed path keeps the capability to this body
 * (the proxy authorised its buckets). HD_DONE when r was answered, HD_DECLINED to stream
 * here (an entry without an available owner: the stream reports it as before). */
static int batch_redirect(struct hd_req *r, struct hd_proxy *p, const struct hd_batch *b,
                          const char *body, size_t len)
{
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    struct hd_bmd *bmd = hd_smap_state_bmd(p->cs);
    struct owner_count {
        const struct hd_node *node;
        size_t n;
    } *oc = NULL;
    const struct hd_node *best = NULL;
    size_t nn = 0, i, j, most = 0;
    char hex[65], path[80];
    int rc = HD_DECLINED;

    if (!s || !(oc = calloc(s->n, sizeof(*oc))))
        goto out;
    for (i = 0; i < b->n; i++) {
        const struct hd_node *owner = NULL;
        char *uname = NULL;
        size_t ulen;
        int ok = hd_bmd_find(bmd, b->e[i].bucket) && /* else the stream here reports it */
                 hd_proxy_uname(p, b->e[i].bucket, b->e[i].name, &uname, &ulen) == 0 &&
                 hd_smap_owner(s, uname, ulen, &owner) == 0 && owner && !owner->down;
        free(uname);
        if (!ok)
            goto out;
        for (j = 0; j < nn && oc[j].node != owner; j++)
            ;
        if (j == nn) {
            if (nn == s->n)
                goto out;
            oc[nn++].node = owner;
        }
        oc[j].n++;
    }
    for (j = 0; j < nn; j++) /* the first of the most, so that ties are decided by order */
        if (oc[j].n > most) {
            best = oc[j].node;
            most = oc[j].n;
        }
    if (!best)
        goto out;
    hd_nodeauth_sha256_hex(body, len, hex);
    snprintf(path, sizeof(path), "/v1/batch/%s", hex);
    hd_proxy_redirect_to(r, p, best->url, best->id, NULL, path, "");
    rc = HD_DONE;
out:
    free(oc);
    hd_smap_unref(s);
    hd_bmd_unref(bmd);
    return rc;
}

static void ready(struct hd_req *r, void *arg, const char *body, size_t len)
{
    struct pbatch *pb = arg;
    struct hd_batch *b = NULL;
    struct pctx *c = NULL;
    json_t *in = NULL;
    char msg[256], *mb = NULL;
    int rc, grants;

    if (pb->moss && (rc = moss_body(pb, body, len, &mb, &in, msg, sizeof(msg))) < 0) {
        hd_resp_err_msg(r, rc, msg);
        return;
    }
    rc = mb ? hd_batch_parse(mb, strlen(mb), &b, msg, sizeof(msg))
            : hd_batch_parse(body, len, &b, msg, sizeof(msg));
    free(mb);
    if (rc < 0) {
        json_decref(in);
        hd_resp_err_msg(r, rc, msg);
        return;
    }
    if ((rc = authorize(pb, b, hd_req_secure(r), &grants)) < 0 ||
        (rc = hd_batch_check_payload(&pb->a, body, len)) < 0) {
        json_decref(in);
        hd_batch_free(b);
        hd_resp_err(r, rc);
        return;
    }
    /* a 307 capability given only by public buckets says so (the target checks that they
     * still are); one that mixes them with the key's own is not given: streamed here */
    r->public_grant = grants == BATCH_BY_PUBLIC;
    if (!in && !pb->moss && pb->p->native_redirect &&
        grants != (BATCH_BY_PUBLIC | BATCH_BY_KEY) &&
        batch_redirect(r, pb->p, b, body, len) == HD_DONE) {
        hd_batch_free(b);
        return;
    }
    if (!(c = calloc(1, sizeof(*c)))) {
        json_decref(in);
        hd_batch_free(b);
        hd_resp_err(r, -ENOMEM);
        return;
    }
    c->p = pb->p;
    c->b = b; /* freed after c (common/batch.c frees the context first) */
    c->in = in;
    if (!in)
        hd_batch_respond_groups(r, b, resolve, &groups_ops, c, pctx_free);
    else
        hd_batch_respond_multipart(r, b, resolve, &groups_ops, c, pctx_free, moss_meta);
}

/* Whether any bucket allows anonymous reads (else an unsigned batch is refused unread). */
static int any_anonymous(struct hd_proxy *p)
{
    struct hd_bmd *b = hd_smap_state_bmd(p->cs);
    size_t i;
    int yes = 0;

    for (i = 0; b && i < b->n && !yes; i++)
        yes = b->b[i].public_objects;
    hd_bmd_unref(b);
    return yes;
}

static void start(struct hd_req *r, struct hd_proxy *p, const char *moss_bucket);

void hd_proxy_batch(struct hd_req *r, struct hd_proxy *p)
{
    start(r, p, NULL);
}

void hd_proxy_moss(struct hd_req *r, struct hd_proxy *p)
{
    const char *rest = r->raw_path + strlen("/v1/ml/moss");
    char *bucket = NULL;
    int rc = 0;

    if (*rest == '/' && rest[1]) {
        rest++;
        rc = strchr(rest, '/') ? HD_ENOTFOUND : hd_bucket_decode(rest, strlen(rest), &bucket);
    }
    if (rc < 0) {
        hd_resp_err(r, rc);
        return;
    }
    start(r, p, bucket ? bucket : "");
    free(bucket);
}

static void start(struct hd_req *r, struct hd_proxy *p, const char *moss_bucket)
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
    if (moss_bucket) {
        pb->moss = 1;
        if (!(pb->moss_bucket = strdup(moss_bucket))) {
            pbatch_free(pb);
            hd_resp_err(r, -ENOMEM);
            return;
        }
    }
    pb->rc = hd_proxy_auth(r, p, NULL, &pb->a);
    if ((pb->rc < 0 && pb->rc != HD_EMISSINGAUTH) ||
        (pb->rc == HD_EMISSINGAUTH && !any_anonymous(p))) {
        hd_resp_err(r, pb->rc);
        pbatch_free(pb);
        return;
    }
    if (r->content_length == 0 ||
        (r->content_length < 0 && !hd_req_header(r, "Transfer-Encoding"))) {
        pbatch_free(pb);
        hd_resp_err_msg(r, HD_EBADARG, "A batch needs a JSON body naming its entries.");
        return;
    }
    hd_req_read_body(r, HD_BATCH_BODY_MAX, ready, pb, pbatch_free);
}
