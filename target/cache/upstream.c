/* upstream: the write paths and listing of S3-backed buckets on a target.
 *   - PUT: the verified body (already in the put's temp file) is uploaded to the upstream
 *     with its Content-MD5 from a pool thread; only when the upstream accepted it is the
 *     object committed locally, with the upstream's ETag. A refused or failed upload leaves
 *     nothing behind here and answers the upstream's error.
 *   - DELETE: deleted upstream first, then the cached copy.
 *   - listing: one page of the upstream's ListObjectsV2 for the proxy (which merges in what
 *     is cached, proxy/cloud.c).
 * Entry points run on HTTP workers; the upstream calls on pool threads (hd_acall). */
#include "target/cache/int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cksum.h"
#include "common/errors.h"
#include "common/json.h"
#include "common/log.h"
#include "common/metrics.h"

/* ---- PUT ---- */

#define WT_MAX (5ull << 30) /* S3's limit for one PUT */

struct hd_wt {
    struct hd_acall *a;
};

struct wtctx {
    struct hd_cbucket *cb;
    char *key, *path, *ctype, *meta, *hdrs;
    uint64_t size;
    unsigned char md5[16];
    int md5_known; /* else computed from the file first (an assembled multipart object) */
    char etag[48];
};

static void wtctx_free(void *arg)
{
    struct wtctx *w = arg;

    hd_cbucket_unref(w->cb);
    free(w->key);
    free(w->path);
    free(w->ctype);
    free(w->meta);
    free(w->hdrs);
    free(w);
}

static void wt_run(struct hd_acall *a)
{
    struct wtctx *w = a->arg;
    struct hd_s3c_err err;
    int fd = open(w->path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        a->rc = -errno;
        snprintf(a->msg, sizeof(a->msg), "Cannot read the uploaded body back: %s",
                 hd_strerror(a->rc));
        return;
    }
    if (!w->md5_known && (a->rc = hd_wb_file_md5(fd, w->md5)) < 0) {
        snprintf(a->msg, sizeof(a->msg), "Cannot read the uploaded body back: %s",
                 hd_strerror(a->rc));
        close(fd);
        return;
    }
    memset(&err, 0, sizeof(err));
    a->rc = hd_s3c_put_object(&w->cb->s3, w->cb->remote, w->key, fd, w->size, w->md5, w->ctype,
                              w->meta, w->hdrs, w->etag, &err);
    snprintf(a->msg, sizeof(a->msg), "%s", err.msg);
    close(fd);
    if (a->rc < 0)
        hd_cstat_add(HD_CS_UPSTREAM_ERR, 1);
}

int hd_cache_put_through(struct hd_req *r, struct hd_cache *c, struct hd_cbucket *cb,
                         const char *key, struct hd_put *p, int md5_known, const char *ctype,
                         const char *meta, const char *hdrs, struct hd_wt **wt, char etag_out[48],
                         char *msg, size_t msglen)
{
    struct hd_acall *a;
    struct wtctx *w;
    char hex[33];
    int rc;

    msg[0] = '\0';
    if (!*wt) {
        if ((rc = hd_cbucket_check(cb, msg, msglen)) < 0)
            return rc;
        if (hd_put_size(p) > WT_MAX) {
            snprintf(msg, msglen,
                     "Objects over 5 GiB cannot be written through to an "
                     "upstream yet (one PUT).");
            return HD_ETOOLARGE;
        }
        if ((rc = hd_put_flush(p)) < 0)
            return rc;
        w = calloc(1, sizeof(*w));
        *wt = calloc(1, sizeof(**wt));
        if (!w || !*wt) {
            free(w);
            return -ENOMEM;
        }
        atomic_fetch_add(&cb->refs, 1);
        w->cb = cb;
        w->key = strdup(key);
        w->path = strdup(hd_put_tmp_path(p));
        w->ctype = ctype ? strdup(ctype) : NULL;
        w->meta = meta ? strdup(meta) : NULL;
        w->hdrs = hdrs ? strdup(hdrs) : NULL;
        w->size = hd_put_size(p);
        w->md5_known = md5_known;
        if (md5_known)
            hd_put_md5(p, w->md5);
        if (!w->key || !w->path || (ctype && !w->ctype) || (meta && !w->meta) ||
            (hdrs && !w->hdrs)) {
            wtctx_free(w);
            return -ENOMEM;
        }
        a = hd_acall_new(c->pool, wt_run, w, wtctx_free);
        if (!a)
            return -ENOMEM;
        (*wt)->a = a;
        hd_acall_submit(a, r);
    }
    a = (*wt)->a;
    if (hd_acall_park(a, r) == HD_AGAIN)
        return HD_AGAIN;
    if (a->rc < 0) {
        snprintf(msg, msglen, "%s", a->msg);
        return a->rc;
    }
    w = a->arg;
    if (!w->etag[0]) { /* an upstream that sends no ETag: ours */
        hd_hex(w->md5, 16, hex);
        snprintf(w->etag, sizeof(w->etag), "%s", hex);
    }
    snprintf(etag_out, 48, "%s", w->etag);
    hd_cstat_add(HD_CS_WRITE_THROUGH, 1);
    return 0;
}

void hd_cache_wt_free(struct hd_wt *wt)
{
    if (!wt)
        return;
    hd_acall_release(wt->a);
    free(wt);
}

/* ---- DELETE ---- */

struct dctx {
    struct hd_cache *c;
    struct hd_cbucket *cb;
    char *key;
};

static void dctx_free(void *arg)
{
    struct dctx *d = arg;

    hd_cbucket_unref(d->cb);
    free(d->key);
    free(d);
}

/* Upstream first, then the local copy and the copies still moving (all on the pool). */
static void delete_run(struct hd_acall *a)
{
    struct dctx *d = a->arg;
    struct hd_s3c_err err;
    int rc;

    memset(&err, 0, sizeof(err));
    if ((a->rc = hd_cbucket_check(d->cb, a->msg, sizeof(a->msg))) == 0) {
        a->rc = hd_s3c_delete_object(&d->cb->s3, d->cb->remote, d->key, &err);
        snprintf(a->msg, sizeof(a->msg), "%s", err.msg);
    }
    if (a->rc == HD_ENOSUCHKEY)
        a->rc = 0; /* gone upstream already: drop our copy too */
    if (a->rc < 0) {
        hd_cstat_add(HD_CS_UPSTREAM_ERR, 1);
        return;
    }
    hd_cstat_add(HD_CS_DELETE_THROUGH, 1);
    a->msg[0] = '\0';
    rc = hd_store_delete(d->c->st, d->cb->name, d->key);
    if (hd_rebalance_moving(d->c->rb))
        hd_rebalance_delete_elsewhere(d->c->rb, d->cb->name, d->key);
    a->rc = rc == HD_ENOSUCHKEY ? 0 : rc;
}

static void delete_done(struct hd_req *r, struct hd_acall *a)
{
    if (a->rc < 0)
        hd_resp_err_msg(r, a->rc, a->msg[0] ? a->msg : NULL);
    else
        hd_resp_empty(r, 204);
}

void hd_cache_obj_delete(struct hd_req *r, struct hd_cache *c, struct hd_cbucket *cb,
                         const char *key)
{
    struct dctx *d;
    int rc;

    if (cb->props.write_back) { /* the upstream's copy goes from the queue */
        rc = hd_cache_wb_delete(c, cb, key);
        if (rc < 0)
            hd_resp_err(r, rc);
        else
            hd_resp_empty(r, 204);
        return;
    }
    d = calloc(1, sizeof(*d));
    if (!d || !(d->key = strdup(key))) {
        free(d);
        hd_resp_err(r, -ENOMEM);
        return;
    }
    d->c = c;
    atomic_fetch_add(&cb->refs, 1);
    d->cb = cb;
    hd_acall_request(r, c->pool, delete_run, delete_done, d, dctx_free);
}

/* ---- listing ---- */

struct lctx {
    struct hd_cbucket *cb;
    char *prefix, *delim, *after;
    size_t limit;
    struct hd_s3_list res;
};

static void lctx_free(void *arg)
{
    struct lctx *l = arg;

    hd_cbucket_unref(l->cb);
    free(l->prefix);
    free(l->delim);
    free(l->after);
    hd_s3_list_cleanup(&l->res);
    free(l);
}

static void list_run(struct hd_acall *a)
{
    struct lctx *l = a->arg;
    struct hd_s3c_err err;

    memset(&err, 0, sizeof(err));
    if ((a->rc = hd_cbucket_check(l->cb, a->msg, sizeof(a->msg))) == 0) {
        a->rc = hd_s3c_list(&l->cb->s3, l->cb->remote, l->prefix, l->delim, l->after, NULL,
                            l->limit, &l->res, &err);
        snprintf(a->msg, sizeof(a->msg), "%s", err.msg);
    }
    if (a->rc < 0)
        hd_cstat_add(HD_CS_UPSTREAM_ERR, 1);
}

static void list_done(struct hd_req *r, struct hd_acall *a)
{
    struct lctx *l = a->arg;
    json_t *ents, *pfx, *j;
    char ts[32];
    size_t i, len;
    char *s;

    if (a->rc < 0) {
        hd_resp_err_msg(r, a->rc, a->msg[0] ? a->msg : NULL);
        return;
    }
    ents = json_array();
    pfx = json_array();
    for (i = 0; i < l->res.nents; i++) {
        const struct hd_s3_ent *e = &l->res.ents[i];
        hd_iso8601_ms(e->mtime_ms, ts);
        json_array_append_new(ents, json_pack("{s:s, s:I, s:s, s:s}", "name", e->name, "size",
                                              (json_int_t)e->size, "etag", e->etag, "mtime", ts));
    }
    for (i = 0; i < l->res.nprefixes; i++)
        json_array_append_new(pfx, json_string(l->res.prefixes[i]));
    j = json_pack("{s:o, s:o, s:b}", "entries", ents, "prefixes", pfx, "truncated",
                  l->res.truncated);
    s = j ? hd_json_dump_steal(j, &len) : NULL;
    if (!s) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    hd_resp_buf(r, 200, "application/json", s, len);
}

static char *dup_param(struct hd_req *r, const char *k)
{
    const char *v = hd_req_param(r, k);

    return v && *v ? strdup(v) : NULL;
}

void hd_cache_list_upstream(struct hd_req *r, struct hd_cache *c, struct hd_cbucket *cb)
{
    const char *lim = hd_req_param(r, "limit");
    struct lctx *l;
    uint64_t limit = 1000;

    r->op = HD_OP_LIST;
    if (lim && (hd_parse_u64(lim, &limit) < 0 || limit == 0 || limit > 10000)) {
        hd_resp_err_msg(r, HD_EBADARG, "limit must be an integer in 1..10000.");
        return;
    }
    l = calloc(1, sizeof(*l));
    if (!l) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    atomic_fetch_add(&cb->refs, 1);
    l->cb = cb;
    l->limit = limit > 1000 ? 1000 : (size_t)limit;
    l->prefix = dup_param(r, "prefix");
    l->delim = dup_param(r, "delimiter");
    l->after = dup_param(r, "start_after");
    hd_acall_request(r, c->pool, list_run, list_done, l, lctx_free);
}
