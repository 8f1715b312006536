/* upstream: the write paths and listing of S3-backed buckets on a target.
 *   - PUT: the verified body (already in the put's temp file) is uploaded to the upstream
 *     with its Content-MD5 from a pool thread; only when the upstream accepted it is the
 *     object committed locally, with the upstream's ETag. A refused or failed upload leaves
 *     nothing behind here and answers the upstream's error.
 *   - multipart: a local upload has an upstream twin; each part goes up the same way as a
 *     PUT (before it is recorded here), and Complete completes the twin (target/api/mpu.c).
 *   - DELETE: deleted upstream first, then the cached copy.
 *   - listing: one page of the upstream's ListObjectsV2 for the proxy (which merges in what
 *     is cached, proxy/cloud.c).
 * Entry points run on HTTP workers; the upstream calls on pool threads (hd_acall). A
 * CopyObject into an S3-backed bucket, already on a pool thread, sends its PUT with the same
 * code, blocking (hd_cache_put_through_sync). */
#include "target/cache/int.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/cksum.h"
#include "common/errors.h"
#include "common/json.h"
#include "common/log.h"
#include "common/metrics.h"

/* ---- PUT ---- */

#define WT_MAX (5ull << 30) /* S3's limit for one PUT (and for one part) */

struct hd_wt {
    struct hd_acall *a;
};

/* One call to the upstream on the pool: a whole object (PUT), one part of an upload
 * (UploadPart), or the end of an upload (its missing parts, then Complete). */
struct wtctx {
    struct hd_cbucket *cb;
    char *key, *path, *ctype, *meta, *hdrs;
    uint64_t size;
    unsigned char md5[16];
    int md5_known; /* else computed from the file first */
    char *up_id;   /* UploadPart and Complete: the upstream's upload ("" for Complete: none yet) */
    unsigned part; /* UploadPart */
    struct hd_cache_upart *parts; /* Complete */
    size_t nparts;
    char expect[48]; /* Complete: the ETag the parts make ("md5-N") */
    char etag[48];
};

static void wtctx_free(void *arg)
{
    struct wtctx *w = arg;
    size_t i;

    hd_cbucket_unref(w->cb);
    free(w->key);
    free(w->path);
    free(w->ctype);
    free(w->meta);
    free(w->hdrs);
    free(w->up_id);
    for (i = 0; i < w->nparts; i++)
        free(w->parts[i].path);
    free(w->parts);
    free(w);
}

static int wt_err(char *msg, size_t msglen, int rc, const char *what)
{
    snprintf(msg, msglen, "%s: %s", what, hd_strerror(rc));
    return rc;
}

/* Sends size bytes of path as a PUT (part 0) or as part `part` of upload up_id: 0, or the
 * error with msg filled. Blocks (pool threads). */
static int send_file(struct wtctx *w, const char *path, uint64_t size, const unsigned char *md5_in,
                     const char *up_id, unsigned part, char etag[48], char *msg, size_t msglen)
{
    struct hd_s3c_err err;
    unsigned char md5[16];
    int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

    if (fd < 0)
        return wt_err(msg, msglen, -errno, "Cannot read the uploaded body back");
    if (!md5_in && (rc = hd_wb_file_md5(fd, md5)) < 0) {
        close(fd);
        return wt_err(msg, msglen, rc, "Cannot read the uploaded body back");
    }
    if (!md5_in)
        md5_in = md5;
    memset(&err, 0, sizeof(err));
    if (part)
        rc = hd_s3c_mpu_part(&w->cb->s3, w->cb->remote, w->key, up_id, (int)part, fd, 0, size,
                             md5_in, etag, &err);
    else
        rc = hd_s3c_put_object(&w->cb->s3, w->cb->remote, w->key, fd, size, md5_in, w->ctype,
                               w->meta, w->hdrs, etag, &err);
    close(fd);
    if (!part && md5_in == md5)
        memcpy(w->md5, md5, 16); /* the ETag when the upstream sends none */
    snprintf(msg, msglen, "%s", err.msg);
    return rc;
}

static void wt_run(struct hd_acall *a)
{
    struct wtctx *w = a->arg;

    a->rc = send_file(w, w->path, w->size, w->md5_known ? w->md5 : NULL, w->up_id, w->part, w->etag,
                      a->msg, sizeof(a->msg));
    if (a->rc < 0)
        hd_cstat_add(HD_CS_UPSTREAM_ERR, 1);
}

/* An S3 multipart ETag, "<md5 hex>-<parts>": the MD5 of the parts' MD5s, comparable to ours. */
static int multipart_etag(const char *e)
{
    size_t i;

    for (i = 0; i < 32; i++)
        if (!isxdigit((unsigned char)e[i]))
            return 0;
    if (e[32] != '-' || !e[33])
        return 0;
    for (i = 33; e[i]; i++)
        if (!isdigit((unsigned char)e[i]))
            return 0;
    return 1;
}

/* The end of a write-through multipart upload: the upstream's twin is created when there is
 * none yet, the parts it does not have are sent from their files, then it is completed. A
 * twin made here is aborted again when that fails. */
static void mpu_run(struct hd_acall *a)
{
    struct wtctx *w = a->arg;
    struct hd_s3c_err err;
    char id[1024], (*etags)[48] = calloc(w->nparts, sizeof(*etags));
    unsigned *nums = calloc(w->nparts, sizeof(*nums));
    int made = 0;
    size_t i;

    memset(&err, 0, sizeof(err));
    if (!etags || !nums) {
        a->rc = wt_err(a->msg, sizeof(a->msg), -ENOMEM, "Completing the upstream's upload");
        goto out;
    }
    snprintf(id, sizeof(id), "%s", w->up_id);
    if (!id[0]) {
        a->rc = hd_s3c_mpu_create(&w->cb->s3, w->cb->remote, w->key, w->ctype, w->meta, w->hdrs, id,
                                  sizeof(id), &err);
        snprintf(a->msg, sizeof(a->msg), "%s", err.msg);
        if (a->rc < 0)
            goto out;
        made = 1;
    }
    for (i = 0; i < w->nparts; i++) {
        struct hd_cache_upart *pt = &w->parts[i];
        nums[i] = pt->num;
        if (pt->up_etag[0])
            snprintf(etags[i], sizeof(etags[i]), "%s", pt->up_etag);
        else if ((a->rc = send_file(w, pt->path, pt->size, pt->md5, id, pt->num, etags[i], a->msg,
                                    sizeof(a->msg))) < 0)
            goto out;
    }
    memset(&err, 0, sizeof(err));
    a->rc = hd_s3c_mpu_complete(&w->cb->s3, w->cb->remote, w->key, id, nums,
                                (const char(*)[48])etags, w->nparts, w->etag, &err);
    snprintf(a->msg, sizeof(a->msg), "%s", err.msg);
    if (a->rc == 0 && multipart_etag(w->etag) && strcasecmp(w->etag, w->expect) != 0) {
        /* an upstream answering a repeated Complete (S3 does) with what it was given first */
        a->rc = HD_EINVALIDPART;
        snprintf(a->msg, sizeof(a->msg),
                 "The upstream completed this upload with other parts: its object's ETag is "
                 "%s, the parts listed make %s.",
                 w->etag, w->expect);
    }
out:
    if (a->rc < 0) {
        hd_cstat_add(HD_CS_UPSTREAM_ERR, 1);
        if (made && hd_s3c_mpu_abort(&w->cb->s3, w->cb->remote, w->key, id, &err) < 0)
            HD_LOG(HD_WARN, a->rid, "upstream %s/%s: aborting multipart upload %s failed: %s",
                   w->cb->remote, w->key, id, err.msg);
    }
    free(etags);
    free(nums);
}

static int dup_or(const char *s, char **out)
{
    *out = s ? strdup(s) : NULL;
    return s && !*out ? -ENOMEM : 0;
}

/* A write the upstream took: its ETag (ours when it sent none) into etag_out, counted. */
static void wt_done(struct wtctx *w, char etag_out[48])
{
    char hex[33];

    if (!w->etag[0]) { /* an upstream that sends no ETag: ours */
        hd_hex(w->md5, 16, hex);
        snprintf(w->etag, sizeof(w->etag), "%s", hex);
    }
    snprintf(etag_out, 48, "%s", w->etag);
    hd_cstat_add(HD_CS_WRITE_THROUGH, 1);
}

/* Starts the call of w for r (the first time: then only starts it with submit_only), or
 * parks r until it is done; then etag_out. */
static int through(struct hd_req *r, struct hd_cache *c, struct wtctx *w, hd_acall_fn run,
                   int submit_only, struct hd_wt **wt, char etag_out[48], char *msg, size_t msglen)
{
    struct hd_acall *a;

    if (w) {
        *wt = calloc(1, sizeof(**wt));
        if (!*wt) {
            wtctx_free(w);
            return -ENOMEM;
        }
        if (!(a = hd_acall_new(c->pool, run, w, wtctx_free)))
            return -ENOMEM;
        (*wt)->a = a;
        hd_acall_submit(a, r); /* a failure finishes a with it: answered below */
        if (submit_only)
            return HD_AGAIN;
    }
    a = (*wt)->a;
    if (hd_acall_park(a, r) == HD_AGAIN)
        return HD_AGAIN;
    if (a->rc < 0) {
        snprintf(msg, msglen, "%s", a->msg);
        return a->rc;
    }
    wt_done(a->arg, etag_out);
    return 0;
}

/* A call for key of cb with the object's attributes; NULL when out of memory. */
static struct wtctx *wt_new(struct hd_cbucket *cb, const char *key, const char *ctype,
                            const char *meta, const char *hdrs, const char *up_id)
{
    struct wtctx *w = calloc(1, sizeof(*w));

    if (!w)
        return NULL;
    atomic_fetch_add(&cb->refs, 1);
    w->cb = cb;
    if (dup_or(key, &w->key) < 0 || dup_or(ctype, &w->ctype) < 0 || dup_or(meta, &w->meta) < 0 ||
        dup_or(hdrs, &w->hdrs) < 0 || dup_or(up_id, &w->up_id) < 0) {
        wtctx_free(w);
        return NULL;
    }
    return w;
}

/* The put's verified body, flushed, as a call's file. */
static int wt_body(struct wtctx *w, struct hd_put *p, int md5_known, char *msg, size_t msglen)
{
    int rc;

    w->size = hd_put_size(p);
    if (w->size > WT_MAX) {
        snprintf(msg, msglen, "%s",
                 w->up_id ? "Parts over 5 GiB cannot be uploaded to S3."
                          : "Objects over 5 GiB cannot be written through "
                            "to an upstream in one PUT: use a multipart "
                            "upload.");
        return HD_ETOOLARGE;
    }
    if ((rc = hd_put_flush(p)) < 0)
        return rc;
    if (!(w->path = strdup(hd_put_tmp_path(p))))
        return -ENOMEM;
    w->md5_known = md5_known;
    if (md5_known)
        hd_put_md5(p, w->md5);
    return 0;
}

static int put_or_part(struct hd_req *r, struct hd_cache *c, struct hd_cbucket *cb, const char *key,
                       const char *up_id, unsigned part, struct hd_put *p, int md5_known,
                       const char *ctype, const char *meta, const char *hdrs, struct hd_wt **wt,
                       char etag_out[48], char *msg, size_t msglen)
{
    struct wtctx *w = NULL;
    int rc;

    msg[0] = '\0';
    if (!*wt) {
        if ((rc = hd_cbucket_check(cb, msg, msglen)) < 0)
            return rc;
        if (!(w = wt_new(cb, key, ctype, meta, hdrs, up_id)))
            return -ENOMEM;
        w->part = part;
        if ((rc = wt_body(w, p, md5_known, msg, msglen)) < 0) {
            wtctx_free(w);
            return rc;
        }
    }
    return through(r, c, w, wt_run, 0, wt, etag_out, msg, msglen);
}

int hd_cache_put_through(struct hd_req *r, struct hd_cache *c, struct hd_cbucket *cb,
                         const char *key, struct hd_put *p, int md5_known, const char *ctype,
                         const char *meta, const char *hdrs, struct hd_wt **wt, char etag_out[48],
                         char *msg, size_t msglen)
{
    return put_or_part(r, c, cb, key, NULL, 0, p, md5_known, ctype, meta, hdrs, wt, etag_out, msg,
                       msglen);
}

int hd_cache_part_through(struct hd_req *r, struct hd_cache *c, struct hd_cbucket *cb,
                          const char *key, const char *up_id, unsigned part, struct hd_put *p,
                          struct hd_wt **wt, char etag_out[48], char *msg, size_t msglen)
{
    return put_or_part(r, c, cb, key, up_id, part, p, 1, NULL, NULL, NULL, wt, etag_out, msg,
                       msglen);
}

int hd_cache_mpu_through(struct hd_req *r, struct hd_cache *c, struct hd_cbucket *cb,
                         const char *key, const char *up_id, const char *ctype, const char *meta,
                         const char *hdrs, const struct hd_cache_upart *parts, size_t n,
                         const char *expect_etag, struct hd_wt **wt, char etag_out[48], char *msg,
                         size_t msglen)
{
    struct wtctx *w = NULL;
    size_t i;
    int rc;

    msg[0] = '\0';
    if (!*wt) {
        if ((rc = hd_cbucket_check(cb, msg, msglen)) < 0)
            return rc;
        if (!(w = wt_new(cb, key, ctype, meta, hdrs, up_id ? up_id : "")) ||
            !(w->parts = calloc(n, sizeof(*w->parts)))) {
            if (w)
                wtctx_free(w);
            return -ENOMEM;
        }
        snprintf(w->expect, sizeof(w->expect), "%s", expect_etag ? expect_etag : "");
        for (w->nparts = 0; w->nparts < n; w->nparts++) {
            i = w->nparts;
            w->parts[i] = parts[i];
            if (parts[i].path && !(w->parts[i].path = strdup(parts[i].path))) {
                wtctx_free(w);
                return -ENOMEM;
            }
        }
    }
    return through(r, c, w, mpu_run, 1, wt, etag_out, msg, msglen);
}

void hd_cache_wt_free(struct hd_wt *wt)
{
    if (!wt)
        return;
    hd_acall_release(wt->a);
    free(wt);
}

int hd_cache_put_through_sync(struct hd_cbucket *cb, const char *key, struct hd_put *p,
                              const char *ctype, const char *meta, const char *hdrs,
                              char etag_out[48], char *msg, size_t msglen)
{
    struct wtctx *w;
    int rc;

    msg[0] = '\0';
    if ((rc = hd_cbucket_check(cb, msg, msglen)) < 0)
        return rc;
    if (!(w = wt_new(cb, key, ctype, meta, hdrs, NULL)))
        return -ENOMEM;
    if ((rc = wt_body(w, p, 1, msg, msglen)) == 0) {
        if ((rc = send_file(w, w->path, w->size, w->md5, NULL, 0, w->etag, msg, msglen)) == 0)
            wt_done(w, etag_out);
        else
            hd_cstat_add(HD_CS_UPSTREAM_ERR, 1);
    }
    wtctx_free(w);
    return rc;
}

/* ---- write-through multipart: the blocking calls (pool threads) ---- */

/* The end of an upstream call: its message into msg, a failure counted. */
static int up_end(int rc, const struct hd_s3c_err *err, char *msg, size_t msglen)
{
    snprintf(msg, msglen, "%s", err->msg);
    if (rc < 0)
        hd_cstat_add(HD_CS_UPSTREAM_ERR, 1);
    return rc;
}

int hd_cache_mpu_up_create(struct hd_cbucket *cb, const char *key, const char *ctype,
                           const char *meta, const char *hdrs, char *up_id, size_t idlen, char *msg,
                           size_t msglen)
{
    struct hd_s3c_err err = {0};
    int rc;

    if ((rc = hd_cbucket_check(cb, msg, msglen)) < 0)
        return rc;
    rc = hd_s3c_mpu_create(&cb->s3, cb->remote, key, ctype, meta, hdrs, up_id, idlen, &err);
    return up_end(rc, &err, msg, msglen);
}

int hd_cache_mpu_up_abort(struct hd_cbucket *cb, const char *key, const char *up_id, char *msg,
                          size_t msglen)
{
    struct hd_s3c_err err = {0};
    int rc;

    if ((rc = hd_cbucket_check(cb, msg, msglen)) < 0)
        return rc;
    rc = hd_s3c_mpu_abort(&cb->s3, cb->remote, key, up_id, &err);
    if (rc == HD_ENOSUCHUPLOAD || rc == HD_ENOSUCHKEY)
        rc = 0; /* none left to abort */
    return up_end(rc, &err, msg, msglen);
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
