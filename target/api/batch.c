/* batch: /v1/batch on a target (common/batch.h). Entries this target owns are read from the
 * local disk (archive members through the tar index); in a cluster, the entries other targets
 * own are asked of each owner in groups: one node-signed POST /v1/batch/sub per owner and up
 * to SUB_MAX entries, all owners in parallel, whose answers (common/tarstream.h, "group
 * answer") are taken in request order. An entry its owner does not hold (a cold S3-backed
 * object, one moving in a rebalance) is then fetched alone with a node-signed GET, the
 * normal object path. Proxies send batches here by a 307 (proxy/api/batch.c). HTTP worker
 * for the request and for serving /v1/batch/sub, the batch thread for resolving. */
#include "target/api/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/batch.h"
#include "common/errors.h"
#include "common/metrics.h"
#include "common/nodeauth.h"
#include "common/smap.h"
#include "common/tarstream.h"
#include "target/object/archive.h"
#include "target/cluster/peer.h"
#include "target/store/tar.h"

struct tbatch {
    struct hd_target *t;
    struct hd_sigv4_auth a;
    char body_sha256[65];     /* /v1/batch/<hex>: a proxy's 307 for this body only; "" none */
    const struct hd_batch *b; /* the run's (batch thread) */
    int planned;
    struct hd_batch_plan plan; /* the entries other targets own */
};

static void tbatch_free(void *arg)
{
    struct tbatch *tb = arg;

    hd_batch_plan_cleanup(&tb->plan);
    free(tb);
}

/* Local bytes of e, when this target holds them: 0 with src filled, HD_ENOSUCHKEY when the
 * object is not here, another code (src->msg set) when it is here but unusable. */
static int resolve_local(struct hd_target *t, const struct hd_batch_ent *e, struct hd_tar_src *src)
{
    struct hd_obj_meta m;
    uint64_t off, size;
    int fd, rc;

    rc = e->archpath ? hd_store_open_object(t->st, e->bucket, e->name, &m, &fd)
                     : hd_store_open_object_shared(t->st, e->bucket, e->name, &m, &fd); /* pread */
    if (rc < 0)
        return rc;
    src->mtime = m.mtime_ms / 1000;
    if (!e->archpath) {
        src->fd = fd;
        src->off = 0;
        src->len = m.size;
        hd_obj_meta_cleanup(&m);
        return 0;
    }
    rc = hd_arch_index(t->st, e->bucket, e->name, &m, fd, NULL, src->msg, sizeof(src->msg));
    if (rc == HD_ENOTARCHIVE) { /* not a plain tar: perhaps a compressed tar or a zip */
        char msg[sizeof(src->msg)];
        int prc = hd_arch_packed_member(fd, m.size, e->archpath, &src->fd, &size, msg, sizeof(msg));
        if (prc == 1) { /* the member's bytes, decompressed */
            close(fd);
            src->off = 0;
            src->len = size;
            hd_obj_meta_cleanup(&m);
            return 0;
        }
        if (prc < 0) {
            rc = prc;
            memcpy(src->msg, msg, sizeof(msg));
        }
    }
    if (rc == 0)
        rc = hd_store_tar_member(t->st, &m, e->archpath, &off, &size);
    if (rc == 0) {
        src->fd = fd;
        src->off = off;
        src->len = size;
    } else {
        close(fd);
        if (rc == HD_ENOSUCHMEMBER)
            snprintf(src->msg, sizeof(src->msg), "%s/%s has no member '%.200s'", e->bucket, e->name,
                     e->archpath);
        else if (!src->msg[0])
            snprintf(src->msg, sizeof(src->msg), "%s", hd_strerror(rc));
    }
    hd_obj_meta_cleanup(&m);
    return rc;
}

/* Whether bucket is cached from an upstream: an object of it that this target owns but does
 * not hold yet is fetched through this target's own GET (a cold GET), as a proxy's batch
 * would have had it fetched (batches come here by the proxy's 307). */
static int s3_backed(struct hd_target *t, const char *bucket)
{
    struct hd_bucket_info bi;

    return hd_store_bucket_get(t->st, bucket, &bi) == 0 && strcmp(bi.provider, "ais") != 0;
}

/* e from its owner alone (a node-signed GET); local: why it is not here. */
static void resolve_remote(struct tbatch *tb, const struct hd_batch_ent *e, int local,
                           struct hd_tar_src *src)
{
    int rc, self = 0;

    rc = hd_peer_object_url(tb->t->cl, e->bucket, e->name, e->archpath, &src->url, &self, src->msg,
                            sizeof(src->msg));
    if (rc == 0 && self && !s3_backed(tb->t, e->bucket)) {
        free(src->url);
        src->url = NULL;
        rc = HD_ENOSUCHKEY;
    }
    if (rc == 0)
        rc = hd_peer_sign(tb->t->cl, "GET", src->url, NULL, &src->hdrs, &src->nhdrs);
    if (rc == 0)
        hd_stats_inc(HD_ST_BATCH_ALONE);
    if (rc < 0) {
        free(src->url);
        src->url = NULL;
        src->err = rc == HD_ENOSUCHKEY ? local : rc;
        if (src->err == HD_ENOSUCHKEY)
            snprintf(src->msg, sizeof(src->msg), "no object %s/%s", e->bucket, e->name);
        else if (src->err == HD_ENOSUCHBUCKET)
            snprintf(src->msg, sizeof(src->msg), "no bucket %s", e->bucket);
    }
}

/* Groups the entries that another (live) target owns by owner. Without memory for it an
 * entry is not grouped: it is then resolved alone. */
static void plan(struct tbatch *tb)
{
    const struct hd_batch *b = tb->b;
    char url[HD_NODE_URL_MAX];
    size_t i;

    tb->planned = 1;
    if (hd_batch_plan_init(&tb->plan, b->n) < 0)
        return;
    for (i = 0; i < b->n; i++)
        if (hd_peer_owner_elsewhere(tb->t->cl, b->e[i].bucket, b->e[i].name, url, sizeof(url)) ==
            0) /* else ours, standalone, or its owner is down: resolved alone */
            hd_batch_plan_add(&tb->plan, url, NULL, i);
}

static void resolve(void *ctx, const struct hd_batch_ent *e, struct hd_tar_src *src)
{
    struct tbatch *tb = ctx;
    size_t i = (size_t)(e - tb->b->e);
    int rc;

    if (!tb->planned)
        plan(tb);
    if (tb->plan.grp && tb->plan.grp[i]) {
        src->group = tb->plan.grp[i];
        return;
    }
    rc = hd_store_bucket_exists(tb->t->st, e->bucket);
    if (rc == 0)
        rc = resolve_local(tb->t, e, src);
    if (rc == 0 || (rc != HD_ENOSUCHKEY && rc != HD_ENOSUCHBUCKET)) {
        src->err = rc;
        return;
    }
    /* not held here: in a cluster its owner may have it (or fetch it: its normal GET) */
    resolve_remote(tb, e, rc, src);
}

static void fallback(void *ctx, const struct hd_batch_ent *e, struct hd_tar_src *src)
{
    resolve_remote(ctx, e, HD_ENOSUCHKEY, src);
}

/* Group g's request: POST <owner>/v1/batch/sub, node-signed over the body. */
static int group_req(void *ctx, size_t g, struct hd_tar_group *req)
{
    struct tbatch *tb = ctx;
    char sha[65];
    int rc = hd_batch_sub_req(tb->b, &tb->plan, g, req, sha);

    return rc < 0 ? rc : hd_peer_sign(tb->t->cl, "POST", req->url, sha, &req->hdrs, &req->nhdrs);
}

static const struct hd_batch_groups groups_ops = {group_req, fallback};

static void ready(struct hd_req *r, void *arg, const char *body, size_t len)
{
    struct tbatch *tb = arg, *run;
    struct hd_batch *b = NULL;
    char msg[256];
    size_t i;
    int rc;

    if (tb->body_sha256[0]) { /* the body the proxy authorised, not another one */
        char hex[65];
        hd_nodeauth_sha256_hex(body, len, hex);
        if (strcmp(hex, tb->body_sha256) != 0) {
            hd_resp_err_msg(r, HD_EACCESS,
                            "The batch body is not the one the proxy redirected: send it to "
                            "the proxy again.");
            return;
        }
    }
    if ((rc = hd_batch_parse(body, len, &b, msg, sizeof(msg))) < 0) {
        hd_resp_err_msg(r, rc, msg);
        goto fail;
    }
    if ((rc = hd_batch_check_payload(&tb->a, body, len)) < 0) {
        hd_resp_err(r, rc);
        goto fail;
    }
    r->pub = HD_PUB_READ; /* a batch reads each object it names (a policy may open some) */
    for (i = 0; i < b->n && rc == 0; i++) {
        /* once per bucket, unless its policy opens some objects (then the key decides) */
        if (i && strcmp(b->e[i].bucket, b->e[i - 1].bucket) == 0 &&
            !hd_target_some_public(tb->t, b->e[i].bucket))
            continue;
        r->pub_key = b->e[i].name;
        rc = hd_target_authorize(r, tb->t, &tb->a, b->e[i].bucket);
    }
    r->pub_key = NULL;
    if (rc < 0) {
        hd_resp_err(r, rc);
        goto fail;
    }
    /* the batch thread gets its own copy: tb is freed when this call returns */
    if (!(run = malloc(sizeof(*run)))) {
        hd_resp_err(r, -ENOMEM);
        goto fail;
    }
    *run = *tb;
    run->b = b; /* freed after run (common/batch.c frees the context first) */
    hd_batch_respond_groups(r, b, resolve, &groups_ops, run, tbatch_free);
    return;
fail:
    hd_batch_free(b);
}

/* ---- /v1/batch/sub: a group answer of this target's own entries (another target's batch) ---- */

struct sub {
    struct hd_tar_grec *recs;
    int *fd;
    uint64_t *off;
    size_t n;
    char *index; /* the index line */
    size_t index_len;
    uint64_t pos;  /* answer bytes produced */
    size_t k;      /* record being sent */
    uint64_t done; /* of it */
};

static void sub_free(void *arg)
{
    struct sub *sb = arg;
    size_t k;

    for (k = 0; k < sb->n; k++)
        if (sb->fd[k] >= 0)
            close(sb->fd[k]);
    hd_tarstream_grecs_free(sb->recs, sb->n);
    free(sb->fd);
    free(sb->off);
    free(sb->index);
    free(sb);
}

/* The answer's bytes: the index line, then each data record's range, read with pread (files
 * in the page cache cost a copy, no catalog work). HTTP worker. */
static long sub_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct sub *sb = cls;
    size_t n = 0;

    if (pos != sb->pos)
        return HD_STREAM_ERROR;
    if (pos < sb->index_len) {
        n = sb->index_len - (size_t)pos < max ? sb->index_len - (size_t)pos : max;
        memcpy(buf, sb->index + pos, n);
    }
    while (n < max && sb->k < sb->n) {
        const struct hd_tar_grec *rec = &sb->recs[sb->k];
        uint64_t left = rec->kind == HD_GREC_DATA ? rec->size - sb->done : 0;
        ssize_t got;
        if (!left) {
            sb->k++;
            sb->done = 0;
            continue;
        }
        got = pread(sb->fd[sb->k], buf + n, left < max - n ? (size_t)left : max - n,
                    (off_t)(sb->off[sb->k] + sb->done));
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) /* a file shorter than recorded: cut, the asker reports it */
            return n ? (long)n : HD_STREAM_ERROR;
        n += (size_t)got;
        sb->done += (uint64_t)got;
    }
    sb->pos += n;
    return n ? (long)n : HD_STREAM_END;
}

static void sub_ready(struct hd_req *r, void *arg, const char *body, size_t len)
{
    struct hd_target *t = arg;
    struct hd_batch *b = NULL;
    struct sub *sb = NULL;
    struct hd_buf idx;
    uint64_t total = 0;
    char msg[256];
    size_t k;
    int rc;

    hd_buf_init(&idx);
    if ((rc = hd_batch_parse(body, len, &b, msg, sizeof(msg))) < 0) {
        hd_resp_err_msg(r, rc, msg);
        goto out;
    }
    if (b->n > 4 * HD_BATCH_SUB_MAX) {
        hd_resp_err_msg(r, HD_EBADARG, "Too many entries for a sub-batch.");
        goto out;
    }
    if (!(sb = calloc(1, sizeof(*sb))) || !(sb->recs = calloc(b->n, sizeof(*sb->recs))) ||
        !(sb->fd = malloc(b->n * sizeof(*sb->fd))) || !(sb->off = calloc(b->n, sizeof(*sb->off)))) {
        hd_resp_err(r, -ENOMEM);
        goto out;
    }
    for (k = 0; k < b->n; k++)
        sb->fd[k] = -1;
    sb->n = b->n;
    for (k = 0; k < b->n; k++) {
        struct hd_tar_src src;
        memset(&src, 0, sizeof(src));
        src.fd = -1;
        rc = hd_store_bucket_exists(t->st, b->e[k].bucket);
        if (rc == 0)
            rc = resolve_local(t, &b->e[k], &src);
        if (rc == 0) {
            sb->recs[k].kind = HD_GREC_DATA;
            sb->recs[k].size = src.len;
            sb->recs[k].mtime = src.mtime;
            sb->fd[k] = src.fd;
            sb->off[k] = src.off;
            total += src.len;
        } else if (rc == HD_ENOSUCHKEY || rc == HD_ENOSUCHBUCKET) {
            sb->recs[k].kind = HD_GREC_FETCH; /* the asker takes our normal GET path */
        } else {
            sb->recs[k].kind = HD_GREC_ERR;
            sb->recs[k].err = rc;
            if (!(sb->recs[k].msg = strdup(src.msg[0] ? src.msg : hd_strerror(rc)))) {
                hd_resp_err(r, -ENOMEM);
                goto out;
            }
        }
    }
    if (hd_tarstream_group_index(sb->recs, sb->n, &idx) < 0 || idx.oom) {
        hd_resp_err(r, -ENOMEM);
        goto out;
    }
    sb->index = hd_buf_steal(&idx, &sb->index_len);
    hd_resp_header(r, "Content-Type", "application/x-hoard-group");
    if (hd_resp_stream(r, 200, sb->index_len + total, sub_read, sb, sub_free) < 0) {
        hd_resp_err(r, -ENOMEM);
        goto out;
    }
    hd_stats_inc(HD_ST_BATCH_SUB_SERVED);
    hd_stats_add(HD_ST_BATCH_SUB_ENTRIES, b->n);
    sb = NULL; /* the response's */
out:
    if (sb)
        sub_free(sb);
    hd_buf_cleanup(&idx);
    hd_batch_free(b);
}

/* Only another node of the cluster may ask (its signature covers the body): the answer
 * skips the caller's authorisation, which the node asking did (a proxy for its client). */
static void sub_batch(struct hd_req *r, struct hd_target *t)
{
    if (strcmp(r->method, "POST") != 0) {
        hd_resp_err(r, HD_EMETHOD);
        return;
    }
    if (r->trusted != HD_TRUST_NODE) {
        hd_stats_inc(HD_ST_AUTH_FAILED);
        hd_resp_err_msg(r, HD_EACCESS, "Access Denied: sub-batches are for cluster nodes only.");
        return;
    }
    hd_req_read_body(r, HD_BATCH_BODY_MAX, sub_ready, t, NULL);
}

void hd_target_batch(struct hd_req *r, struct hd_target *t)
{
    struct tbatch *tb;
    int rc;

    r->api = HD_API_NATIVE;
    r->op = HD_OP_GET;
    if (strcmp(r->raw_path, "/v1/batch/sub") == 0) {
        sub_batch(r, t);
        return;
    }
    if (strcmp(r->method, "GET") != 0 && strcmp(r->method, "POST") != 0) {
        hd_resp_err(r, HD_EMETHOD);
        return;
    }
    if (!(tb = calloc(1, sizeof(*tb)))) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    tb->t = t;
    if (r->raw_path[9] == '/') { /* /v1/batch/<SHA-256 hex of the body> (proxy/api/batch.c) */
        const char *h = r->raw_path + 10;
        size_t i;
        for (i = 0; i < 64 && ((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f')); i++)
            ;
        if (i != 64 || h[64]) {
            tbatch_free(tb);
            hd_resp_err(r, HD_ENOTFOUND);
            return;
        }
        memcpy(tb->body_sha256, h, 65);
    }
    if ((rc = hd_target_authenticate(r, t, &tb->a)) < 0) {
        free(tb);
        hd_resp_err(r, rc);
        return;
    }
    if (r->content_length == 0 ||
        (r->content_length < 0 && !hd_req_header(r, "Transfer-Encoding"))) {
        free(tb);
        hd_resp_err_msg(r, HD_EBADARG, "A batch needs a JSON body naming its entries.");
        return;
    }
    hd_req_read_body(r, HD_BATCH_BODY_MAX, ready, tb, tbatch_free);
}
