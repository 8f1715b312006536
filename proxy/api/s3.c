/* s3: the S3 API on the proxy: the shared front end (common/s3front.h) with the proxy's
 * handlers. Bucket-level calls are served here: buckets from the BMD, listings merged from
 * the targets, DeleteObjects fanned out to the owners. Every object-level call leaves through
 * one handler, object_call(): a 307 to the owner when s3.redirect is set, otherwise the
 * streaming relay (common/relay.c). HTTP workers. */
#include "proxy/api/api.h"
#include "proxy/cluster/cluster.h"
#include "proxy/data/data.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/httpc.h"
#include "common/httputil.h"
#include "common/log.h"
#include "common/mpulist.h"
#include "common/s3front.h"

#define DELETE_PARALLEL 16

/* Who is calling (the same auth.keys as the targets); a bucket the BMD does not know may be
 * registered from the default upstream first (r parked meanwhile). */
static int authenticate(struct hd_req *r, void *ctx, const char *bucket, const char *key,
                        struct hd_sigv4_auth *a)
{
    struct hd_proxy *p = ctx;
    int rc = hd_proxy_auth(r, p, bucket, a);

    if (rc < 0)
        return rc;
    if (bucket && (key || strcmp(r->method, "PUT") != 0) &&
        hd_proxy_autoreg(r, p, bucket) == HD_AGAIN)
        return HD_AGAIN; /* registered on first access, then here again */
    return 0;
}

/* ---- buckets, for the front end ---- */

static const char *region(void *ctx)
{
    return ((struct hd_proxy *)ctx)->region;
}

static int buckets(void *ctx, struct hd_s3_bucket **out, size_t *n)
{
    struct hd_proxy *p = ctx;
    struct hd_bmd *bmd = hd_smap_state_bmd(p->cs);
    size_t i;

    if (!(*out = calloc(bmd->n ? bmd->n : 1, sizeof(**out)))) {
        hd_bmd_unref(bmd);
        return -ENOMEM;
    }
    for (i = 0; i < bmd->n; i++) {
        snprintf((*out)[i].name, sizeof((*out)[i].name), "%s", bmd->b[i].name);
        (*out)[i].created = bmd->b[i].created;
    }
    *n = bmd->n;
    hd_bmd_unref(bmd);
    return 0;
}

static int bucket_exists(void *ctx, const char *bucket)
{
    return hd_proxy_bucket_known(ctx, bucket);
}

static int bucket_create(void *ctx, const char *bucket)
{
    return hd_proxy_bucket_create(ctx, bucket, "ais");
}

static int bucket_delete(void *ctx, const char *bucket, char *msg, size_t msglen)
{
    return hd_proxy_bucket_destroy(ctx, bucket, msg, msglen);
}

/* A bucket's properties are the BMD's (changes go through the primary, as PATCH
 * /v1/buckets/B). */
static int props_get(void *ctx, const char *bucket, char **json)
{
    struct hd_proxy *p = ctx;
    struct hd_bmd *b = hd_smap_state_bmd(p->cs);
    const struct hd_bmd_bucket *e = hd_bmd_find(b, bucket);
    int rc = 0;

    *json = NULL;
    if (!e)
        rc = HD_ENOSUCHBUCKET;
    else if (e->props && !(*json = strdup(e->props)))
        rc = -ENOMEM;
    hd_bmd_unref(b);
    return rc;
}

static int props_patch(void *ctx, const char *bucket, const char *patch, char *msg, size_t msglen)
{
    return hd_proxy_bucket_props_msg(ctx, bucket, patch, msg, msglen);
}

/* A merged page of the targets' (or the upstream's) listing. max-keys=0 asks for one entry:
 * whether anything is there. */
static int list(void *ctx, const char *bucket, const struct hd_s3_list_req *q,
                struct hd_s3_list_page *pg, char *msg, size_t msglen)
{
    struct hd_plist_opts o;
    struct hd_plist_res res;
    size_t i;
    int rc;

    memset(&o, 0, sizeof(o));
    o.prefix = q->prefix;
    o.delimiter = q->delimiter;
    o.limit = q->max ? (size_t)q->max : 1;
    o.start_after = q->from;
    o.cached_fallback = 1;
    if ((rc = hd_proxy_list(ctx, bucket, &o, &res, msg, msglen)) < 0)
        return rc;
    if (res.upstream_failed)
        hd_s3_page_warn(pg, HD_PLIST_WARNING);
    for (i = 0; rc == 0 && i < res.n; i++)
        rc = hd_s3_page_add(pg, res.items[i].name, res.items[i].is_prefix, res.items[i].size,
                            res.items[i].etag, 0, res.items[i].mtime, res.items[i].sclass);
    hd_s3_page_end(pg, q->max ? res.truncated : res.n > 0, res.last);
    hd_proxy_list_cleanup(&res);
    return rc;
}

/* One DELETE per key to its owner (native API, proxy-signed), DELETE_PARALLEL at a time. */
static int delete_keys(void *ctx, const char *bucket, const struct hd_delete_req *dr, int *err)
{
    struct hd_proxy *p = ctx;
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    struct hd_httpc_call *calls = NULL;
    struct hd_buf *urls = NULL;
    size_t i;
    int rc = 0;

    calls = calloc(dr->n + 1, sizeof(*calls));
    urls = calloc(dr->n + 1, sizeof(*urls));
    if (!calls || !urls) {
        rc = -ENOMEM;
        goto out;
    }
    for (i = 0; i < dr->n; i++) {
        const char *k = dr->objs[i].key;
        const struct hd_node *owner = NULL;
        char *uname = NULL;
        size_t ulen;
        hd_buf_init(&urls[i]);
        /* a call without a URL is skipped by marking it failed up front */
        hd_httpc_call_init(&calls[i], "DELETE", "");
        if (err[i] < 0) /* the name is not valid */
            continue;
        if ((err[i] = hd_proxy_uname(p, bucket, k, &uname, &ulen)) < 0)
            continue;
        err[i] = s ? hd_smap_owner(s, uname, ulen, &owner) : HD_EUNAVAIL;
        free(uname);
        if (err[i] < 0)
            continue;
        hd_buf_printf(&urls[i], "%s/v1/objects/", owner->url);
        hd_uri_encode(&urls[i], bucket, strlen(bucket), 0);
        hd_buf_puts(&urls[i], "/");
        hd_uri_encode(&urls[i], k, strlen(k), 1);
        if (urls[i].oom) {
            err[i] = -ENOMEM;
            continue;
        }
        calls[i].url = urls[i].data;
        hd_proxy_call_sign(p, &calls[i]);
        calls[i].total_ms = HD_PROXY_FANOUT_MS;
    }
    {
        /* run only the calls that have a URL, keeping their indexes */
        struct hd_httpc_call *todo = calloc(dr->n + 1, sizeof(*todo));
        size_t *idx = calloc(dr->n + 1, sizeof(*idx)), nt = 0;
        if (!todo || !idx) {
            free(todo);
            free(idx);
            rc = -ENOMEM;
            goto out;
        }
        for (i = 0; i < dr->n; i++)
            if (err[i] == 0) {
                todo[nt] = calls[i];
                idx[nt++] = i;
            }
        hd_httpc_run_all(todo, nt, DELETE_PARALLEL);
        for (i = 0; i < nt; i++) {
            struct hd_httpc_call *t = &todo[i];
            json_t *j = NULL;
            if (t->rc < 0) {
                err[idx[i]] = HD_EUNAVAIL;
            } else if (t->status != 404 && (t->status < 200 || t->status > 299)) {
                j = t->resp.len ? json_loadb(t->resp.data, t->resp.len, 0, NULL) : NULL;
                err[idx[i]] = hd_proxy_err_from_json(t->status, j);
                json_decref(j);
            }
            calls[idx[i]] = *t; /* hands the response buffer back for cleanup */
        }
        free(todo);
        free(idx);
    }
out:
    for (i = 0; calls && i < dr->n; i++) {
        hd_httpc_call_cleanup(&calls[i]);
        if (urls)
            hd_buf_cleanup(&urls[i]);
    }
    free(calls);
    free(urls);
    hd_smap_unref(s);
    return rc;
}

/* The query a target's ListMultipartUploads takes: "uploads" and the parameters
 * hd_mpul_opts_parse reads, re-encoded; anything else the client sent (?summary, ?props)
 * would name another call on the target. */
static void uploads_query(struct hd_buf *b, const struct hd_req *r)
{
    static const char *const keep[] = {
        "prefix",      "delimiter",     "key-marker", "upload-id-marker",
        "max-uploads", "encoding-type", NULL};
    const struct hd_query_param *qp;
    size_t i;

    hd_buf_puts(b, "?uploads");
    for (i = 0; keep[i]; i++)
        if ((qp = hd_query_find(&r->query, keep[i]))) {
            hd_buf_printf(b, "&%s=", keep[i]);
            hd_uri_encode(b, qp->value, qp->value_len, 0);
        }
}

/* ListMultipartUploads: every target's first max + 1 entries after the markers (uploads
 * live on the owner of their key), merged, and cut at max-uploads. */
static void list_uploads(struct hd_req *r, void *ctx, const struct hd_s3_call *call)
{
    struct hd_proxy *p = ctx;
    const char *bucket = call->bucket;
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    struct hd_mpul_opts o;
    struct hd_mpul l = {0};
    struct hd_proxy_fan f = {0};
    struct hd_buf path, b;
    const char *msg = NULL;
    char why[256] = "";
    size_t i;
    int rc;

    hd_buf_init(&path);
    hd_buf_init(&b);
    if ((rc = hd_mpul_opts_parse(r, &o, &msg)) < 0 || (rc = hd_proxy_bucket_known(p, bucket)) < 0)
        goto out;
    o.owner = call->owner;
    if (!s) {
        rc = HD_EUNAVAIL;
        goto out;
    }
    for (i = 0; i < s->n; i++)
        if (s->nodes[i].type == HD_NODE_TARGET && s->nodes[i].down) {
            snprintf(why, sizeof(why), "Target %s is down: the list would be incomplete.",
                     s->nodes[i].id);
            msg = why;
            rc = HD_EUNAVAIL;
            goto out;
        }
    hd_buf_puts(&path, "/v1/buckets/");
    hd_uri_encode(&path, bucket, strlen(bucket), 0);
    uploads_query(&path, r); /* "uploads" and the listing's parameters, nothing else */
    if (path.oom ||
        (rc = hd_proxy_fan_out(p, s, "GET", path.data, NULL, 1, HD_PROXY_FANOUT_MS, &f)) < 0) {
        rc = -ENOMEM;
        goto out;
    }
    for (i = 0; i < f.n && rc == 0; i++) {
        const struct hd_httpc_call *c = &f.calls[i];
        json_t *j = hd_proxy_call_json(c);
        if (c->rc < 0 || c->status != 200 || !j) {
            snprintf(why, sizeof(why), "Target %s failed the list: %s", f.nodes[i]->id,
                     c->rc < 0 ? c->err : "unexpected answer");
            msg = why;
            rc =
                c->rc == 0 && c->status == 400 ? hd_proxy_err_from_json(c->status, j) : HD_EUNAVAIL;
        } else {
            rc = hd_mpul_from_json(j, &l);
        }
        json_decref(j);
    }
    if (rc < 0)
        goto out;
    hd_mpul_finish(&l);
    hd_mpul_truncate(&l, (size_t)o.max + 1);
    rc = hd_mpul_xml(&b, bucket, &o, &l);
out:
    if (rc < 0) {
        hd_buf_cleanup(&b);
        hd_resp_err_msg(r, rc, msg);
    } else {
        hd_resp_xml(r, 200, &b);
    }
    hd_proxy_fan_cleanup(&f);
    hd_mpul_free(&l);
    hd_buf_cleanup(&path);
    hd_smap_unref(s);
}

/* Object-level S3 calls, authenticated and authorised already: relayed to the owner as they
 * are (the owner verifies the client's signature over the same Host and path), or with
 * s3.redirect a 307 to it. A virtual-host request's redirect carries the path-style path
 * (the owner sees its own Host; without it, /dir/obj would name bucket "dir", which the
 * proxy never authorised). A request whose body comes without "Expect: 100-continue" is
 * relayed even with s3.redirect: the body is on its way here already, a 307 would have it
 * sent twice, S3 SDKs do not send it again (the AWS SDK for Go v2 fails with
 * TemporaryRedirect), and a body over HD_HTTP_DRAIN_MAX meets the 307 as a reset. A copy
 * whose source only its public state opens is relayed too: a 307's capability would outlive
 * the source turning private (it binds the copy source, not whose rights let it in). */
static void object_call(struct hd_req *r, void *ctx, const struct hd_s3_call *c)
{
    struct hd_proxy *p = ctx;

    if (p->s3_redirect && !hd_req_body_sent_at_once(r) && !r->public_source)
        hd_proxy_redirect(r, p, c->bucket, c->key, c->vpath);
    else
        hd_proxy_relay(r, p, c->bucket, c->key, c->vpath ? c->bucket : NULL);
}

static void post_object(struct hd_req *r, void *ctx, const struct hd_s3_call *c)
{
    hd_proxy_post_object(r, ctx, c->bucket, c->vpath != NULL);
}

static char *vhost_path(struct hd_req *r, void *ctx, const char *path)
{
    struct hd_proxy *p = ctx;

    return hd_s3_vhost_path(hd_req_header(r, "Host"), p->domain, path);
}

static const struct hd_s3_front front = {
    .vhost = vhost_path,
    .authenticate = authenticate,
    .region = region,
    .buckets = buckets,
    .bucket_exists = bucket_exists,
    .bucket_create = bucket_create,
    .props_get = props_get,
    .props_patch = props_patch,
    .bucket_delete = bucket_delete,
    .list = list,
    .delete_keys = delete_keys,
    .handlers = {[HD_S3_LIST_UPLOADS] = list_uploads},
    .object = object_call,
    .post_object = post_object,
};

void hd_proxy_s3(struct hd_req *r, struct hd_proxy *p)
{
    const char *path = r->raw_path;

    if (strcmp(path, "/s3") == 0 || strncmp(path, "/s3/", 4) == 0)
        path = path[3] ? path + 3 : "/";
    hd_s3_dispatch(r, path, &front, p);
}
