/* batch: /v1/batch on a target (common/batch.h). Entries held here are read from the local
 * disk (archive members through the tar index); in a cluster, the others are fetched from
 * their owners with a node-signed GET, the normal object path. Proxies run their own
 * batch (proxy/batch.c); this one serves standalone targets and direct calls. HTTP worker
 * for the request, the batch thread for resolving. */
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
#include "common/tarstream.h"
#include "target/object/archive.h"
#include "target/cluster/peer.h"
#include "target/store/tar.h"

struct tbatch {
    struct hd_target *t;
    struct hd_sigv4_auth a;
    char body_sha256[65]; /* /v1/batch/<hex>: a proxy's 307 for this body only; "" none */
};

/* Local bytes of e, when this target holds them: 0 with src filled, HD_ENOSUCHKEY when the
 * object is not here, another code (src->msg set) when it is here but unusable. */
static int resolve_local(struct hd_target *t, const struct hd_batch_ent *e, struct hd_tar_src *src)
{
    struct hd_obj_meta m;
    uint64_t off, size;
    int fd, rc;

    if ((rc = hd_store_open_object(t->st, e->bucket, e->name, &m, &fd)) < 0)
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

static void resolve(void *ctx, const struct hd_batch_ent *e, struct hd_tar_src *src)
{
    struct tbatch *tb = ctx;
    int rc, local, self = 0;

    rc = hd_store_bucket_exists(tb->t->st, e->bucket);
    if (rc == 0)
        rc = resolve_local(tb->t, e, src);
    if (rc == 0 || (rc != HD_ENOSUCHKEY && rc != HD_ENOSUCHBUCKET)) {
        src->err = rc;
        return;
    }
    local = rc;
    /* not held here: in a cluster its owner may have it (or fetch it: its normal GET) */
    rc = hd_peer_object_url(tb->t->cl, e->bucket, e->name, e->archpath, &src->url, &self, src->msg,
                            sizeof(src->msg));
    if (rc == 0 && self && !s3_backed(tb->t, e->bucket)) {
        free(src->url);
        src->url = NULL;
        rc = HD_ENOSUCHKEY;
    }
    if (rc == 0)
        rc = hd_peer_sign(tb->t->cl, "GET", src->url, &src->hdrs, &src->nhdrs);
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

static void ready(struct hd_req *r, void *arg, const char *body, size_t len)
{
    struct tbatch *tb = arg, *run;
    struct hd_batch *b = NULL;
    const char *method = r->method;
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
    r->method = "GET"; /* a batch reads each bucket it names */
    for (i = 0; i < b->n && rc == 0; i++)
        if (i == 0 || strcmp(b->e[i].bucket, b->e[i - 1].bucket) != 0)
            rc = hd_target_authorize(r, tb->t, &tb->a, b->e[i].bucket);
    r->method = method;
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
    hd_batch_respond(r, b, resolve, run, free);
    return;
fail:
    hd_batch_free(b);
}

void hd_target_batch(struct hd_req *r, struct hd_target *t)
{
    struct tbatch *tb;
    int rc;

    r->api = HD_API_NATIVE;
    r->op = HD_OP_GET;
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
            free(tb);
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
    hd_req_read_body(r, HD_BATCH_BODY_MAX, ready, tb, free);
}
