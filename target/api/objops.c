/* objops: GET/HEAD/PUT/DELETE of one object, shared by the native and S3 APIs. */
#include "target/api/internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>

#include "common/awschunked.h"
#include "common/cksum.h"
#include "common/errors.h"
#include "common/json.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/tagging.h"
#include "common/xml.h"
#include "target/api/keepalive.h"
#include "target/api/expiration.h"
#include "target/cluster/peer.h"
#include "target/object/archive.h"

#define PUT_MAGIC 0x70757463u

/* A node looking for a local copy only (get-from-neighbour, delete-elsewhere): no further
 * hops, no upstream. */
static int local_probe(const struct hd_req *r)
{
    return r->trusted == HD_TRUST_NODE && hd_req_header(r, "X-Hoard-Local");
}

/* The catalog row (HEAD) or the row and its open content file. A plain GET reads at most
 * HD_STORE_SHARED_MAX bytes with pread (hd_resp_fd's small path) or sends a description of
 * its own: the row cache's descriptor will do. */
static int open_local(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                      int head, struct hd_obj_meta *m, int *fd)
{
    if (head)
        return hd_store_lookup(t->st, bucket, key, m);
    if (!hd_arch_wanted(r))
        return hd_store_open_object_shared(t->st, bucket, key, m, fd);
    return hd_store_open_object(t->st, bucket, key, m, fd);
}

/* Answers from an opened local copy (m, fd; both taken): the object, or a tar member of it
 * or its member list. */
static void serve_opened(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                         struct hd_obj_meta *m, int fd, int head, struct hd_pool *pool)
{
    if (hd_arch_wanted(r)) {
        hd_arch_serve(r, t->st, pool, bucket, key, m, &fd, head);
        if (fd >= 0)
            close(fd);
    } else {
        char *exp = hd_lifecycle_expiration(t, bucket, key, m);
        hd_obj_serve_ex(r, m, fd, head, exp);
        free(exp);
    }
    hd_obj_meta_cleanup(m);
}

struct objcall {
    struct hd_target *t;
    char *bucket, *key;
    int head, quiet_missing;
    int64_t rterm, rversion; /* the map the request was routed by */
};

static void objcall_free(void *arg)
{
    struct objcall *o = arg;

    free(o->bucket);
    free(o->key);
    free(o);
}

/* Runs run/done for r on the pool with bucket/key; answers r itself when it cannot. */
static void objcall_start(struct hd_req *r, struct hd_target *t, const char *bucket,
                          const char *key, int head, int quiet_missing, hd_acall_fn run,
                          hd_acall_done_fn done)
{
    struct objcall *o = calloc(1, sizeof(*o));

    if (!o || !(o->bucket = strdup(bucket)) || !(o->key = strdup(key))) {
        if (o)
            objcall_free(o);
        hd_resp_err(r, -ENOMEM);
        return;
    }
    o->t = t;
    o->head = head;
    o->quiet_missing = quiet_missing;
    o->rterm = r->routed_term;
    o->rversion = r->routed_version;
    hd_acall_request(r, t->pool, run, done, o, objcall_free);
}

/* Get-from-neighbour on a pool thread (it may wait for this target's join and then asks the
 * other targets). */
static void gfn_run(struct hd_acall *a)
{
    struct objcall *o = a->arg;

    a->rc = hd_rebalance_gfn(o->t->rb, o->rterm, o->rversion, o->bucket, o->key);
}

/* Looks again either way: the old owner may also have pushed the object here since the
 * first miss and dropped its own copy, so that gfn found none. */
static void gfn_done(struct hd_req *r, struct hd_acall *a)
{
    struct objcall *o = a->arg;
    struct hd_obj_meta m;
    int fd = -1, rc = open_local(r, o->t, o->bucket, o->key, o->head, &m, &fd);

    if (rc < 0)
        hd_resp_err(r, rc);
    else
        serve_opened(r, o->t, o->bucket, o->key, &m, fd, o->head, NULL); /* in a call's done */
}

void hd_obj_get(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                int head)
{
    struct hd_obj_meta m;
    struct hd_cbucket *cb;
    int fd = -1, rc;

    r->op = head ? HD_OP_HEAD : HD_OP_GET;
    if ((rc = hd_store_bucket_exists(t->st, bucket)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    /* S3-backed: warm or cold; another node probing for a local copy gets only that */
    if (!local_probe(r) && (cb = hd_cache_bucket(t->cache, bucket))) {
        hd_cache_obj_get(r, t->cache, cb, key, head);
        hd_cbucket_unref(cb);
        return;
    }
    rc = open_local(r, t, bucket, key, head, &m, &fd);
    if (rc == HD_ENOSUCHKEY && !local_probe(r) && hd_rebalance_may_gfn(t->rb, r, bucket, key)) {
        /* while the cluster map changes another target may hold it (gfn copies it here) */
        objcall_start(r, t, bucket, key, head, 0, gfn_run, gfn_done);
        return;
    }
    if (rc == HD_ENOSUCHKEY && !local_probe(r) && hd_rebalance_stale_route(t->rb, r, bucket, key)) {
        hd_resp_err_msg(r, HD_EUNAVAIL,
                        "The cluster map changed while this request was routed; retry.");
        return;
    }
    if (rc < 0) {
        hd_resp_err(r, rc);
        return;
    }
    serve_opened(r, t, bucket, key, &m, fd, head, t->pool); /* at dispatch */
}

/* A delete while objects move: the local copy and those other targets may still hold, on a
 * pool thread. */
static void delete_run(struct hd_acall *a)
{
    struct objcall *o = a->arg;
    int rc = hd_store_delete(o->t->st, o->bucket, o->key);

    if (hd_rebalance_delete_elsewhere(o->t->rb, o->bucket, o->key) > 0 && rc == HD_ENOSUCHKEY)
        rc = 0; /* it had not moved here yet */
    a->rc = rc;
}

static void delete_answer(struct hd_req *r, int rc, int quiet_missing)
{
    if (rc == HD_ENOSUCHKEY && quiet_missing)
        rc = 0; /* S3: deleting a missing key succeeds */
    if (rc < 0)
        hd_resp_err(r, rc);
    else
        hd_resp_empty(r, 204);
}

static void delete_done(struct hd_req *r, struct hd_acall *a)
{
    struct objcall *o = a->arg;

    delete_answer(r, a->rc, o->quiet_missing);
}

void hd_obj_delete(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                   int quiet_missing)
{
    struct hd_cbucket *cb;
    int rc;

    r->op = HD_OP_DELETE;
    if ((rc = hd_store_bucket_exists(t->st, bucket)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    if ((cb = hd_cache_bucket(t->cache, bucket))) { /* S3-backed: the upstream first */
        hd_cache_obj_delete(r, t->cache, cb, key);
        hd_cbucket_unref(cb);
        return;
    }
    if (!local_probe(r) && hd_rebalance_moving(t->rb)) {
        objcall_start(r, t, bucket, key, 0, quiet_missing, delete_run, delete_done);
        return;
    }
    delete_answer(r, hd_store_delete(t->st, bucket, key), quiet_missing);
}

/* ---- PUT: streamed into a put session, verified, then committed ---- */

struct put_ctx {
    uint32_t magic;
    struct hd_target *t;
    struct hd_put *put;
    struct hd_awschunked *dec;
    enum hd_ck_type ck_type;
    struct hd_cksum ck;
    const char *ck_expect; /* from a request header; NULL: from the trailer, or none */
    int ck_trailer;
    struct hd_cksum sha; /* payload hash for a signed hex x-amz-content-sha256 */
    int verify_sha;
    unsigned char sha_expect[32];
    unsigned char md5_expect[16];
    int have_md5;
    int64_t decoded_len;
    char *meta;
    char *hdrs; /* Cache-Control ... x-amz-storage-class (hd_collect_hdrs) */
    char *ctype;
    struct hd_wcond wc; /* If-Match / If-None-Match: * (pointing into r) */
    char *xmeta;        /* X-Hoard-Obj-Meta of a trusted rebalance PUT */
    struct hd_put_hooks hooks;
    int verified; /* put_verify passed (put_end may run again) */
    char ck_b64[HD_CK_B64_MAX];
    struct hd_cbucket *cb; /* S3-backed bucket: written through first */
    char *key;
    struct hd_wt *wt;
    struct hd_acall *commit; /* the commit on the disk workers (commit_job), once started */
};

/* The commit (fsync, rename, catalog) of a PUT that runs on the target's disk workers while
 * its connection is suspended, so the fsyncs of many connections are in flight together
 * instead of at most one per HTTP worker. The job owns the put and copies of what the
 * attributes point to: a request that ends first (the client left) leaves it to finish or
 * fail on its own, and a put that is not committed removes its temp file as before. */
struct commit_job {
    struct hd_put *put;
    struct hd_put_attrs a;
    char *ctype, *meta, *hdrs, *if_match;
    char ck_val[HD_CK_B64_MAX];
    char etag[48]; /* a.etag's: a write-through object's upstream ETag */
    struct hd_obj_meta m;
    /* a put hook's commit (a multipart part), with its argument, the job's once started */
    int (*hook)(struct hd_put *p, const struct hd_put_attrs *a, struct hd_obj_meta *out, void *arg);
    void *hook_arg;
    void (*hook_free)(void *arg);
};

static void commit_run(struct hd_acall *ac)
{
    struct commit_job *j = ac->arg;

    if (j->hook)
        ac->rc = j->hook(j->put, &j->a, &j->m, j->hook_arg);
    else
        ac->rc = hd_put_commit(j->put, &j->a, &j->m);
}

static void commit_free(void *arg)
{
    struct commit_job *j = arg;

    hd_put_free(j->put); /* removes the temp file unless committed */
    if (j->hook_free)
        j->hook_free(j->hook_arg);
    free(j->ctype);
    free(j->meta);
    free(j->hdrs);
    free(j->if_match);
    free(j);
}

char *hd_api_dup_opt(const char *s, int *oom)
{
    char *d = s ? strdup(s) : NULL;

    if (s && !d)
        *oom = 1;
    return d;
}

/* Hands pc's put to the disk workers with a's attributes: 0 (r parked, put_end runs again
 * when the commit is done) or a negative code (nothing started, pc->put still pc's). */
static int commit_start(struct hd_req *r, struct put_ctx *pc, const struct hd_put_attrs *a)
{
    struct commit_job *j = calloc(1, sizeof(*j));
    int oom = 0;

    if (!j)
        return -ENOMEM;
    j->a = *a;
    j->a.ctype = j->ctype = hd_api_dup_opt(a->ctype, &oom);
    j->a.meta = j->meta = hd_api_dup_opt(a->meta, &oom);
    j->a.hdrs = j->hdrs = hd_api_dup_opt(a->hdrs, &oom);
    j->a.if_match = j->if_match = hd_api_dup_opt(a->if_match, &oom);
    if (a->ck_val) {
        snprintf(j->ck_val, sizeof(j->ck_val), "%s", a->ck_val);
        j->a.ck_val = j->ck_val;
    }
    if (a->etag) {
        snprintf(j->etag, sizeof(j->etag), "%s", a->etag);
        j->a.etag = j->etag;
    }
    if (oom) {
        commit_free(j); /* j->put is NULL */
        return -ENOMEM;
    }
    if (!(pc->commit = hd_acall_new(pc->t->disk, commit_run, j, commit_free)))
        return -ENOMEM; /* j freed with it */
    j->put = pc->put;   /* the job's from here on, with the hook's argument */
    pc->put = NULL;
    if ((j->hook = pc->hooks.commit)) {
        j->hook_arg = pc->hooks.arg;
        j->hook_free = pc->hooks.arg_free;
        pc->hooks.arg = NULL;
        pc->hooks.arg_free = NULL;
    }
    if (hd_acall_submit(pc->commit, r) < 0)
        return 0; /* finished with the error: answered by the park below */
    return 0;
}

/* The answer to a committed (or failed) PUT. */
static void put_answer(struct hd_req *r, struct put_ctx *pc, int rc, const struct hd_obj_meta *m,
                       int writeback, struct hd_put *put)
{
    char etag[64];

    if (rc < 0) {
        hd_resp_err(r, rc);
        return;
    }
    if (writeback)
        hd_cache_wb_kick(pc->t->cache);
    hd_stats_add(HD_ST_PUT_BYTES, m->size);
    snprintf(etag, sizeof(etag), "\"%s\"", m->etag);
    hd_resp_header(r, "ETag", etag);
    if (!pc->hooks.commit && !pc->xmeta) { /* an object's PUT (not a part, not a move) */
        struct hd_obj_meta mm = *m;        /* with the headers (its tags) it was sent */
        if (!mm.hdrs)
            mm.hdrs = pc->hdrs;
        hd_lifecycle_header(r, pc->t, hd_put_bucket(put), hd_put_name(put), &mm);
    }
    if (pc->ck_type != HD_CK_NONE) {
        hd_resp_header(r, hd_cksum_header(pc->ck_type), pc->ck_b64);
        if (!pc->hooks.commit)
            hd_resp_header(r, "x-amz-checksum-type", "FULL_OBJECT");
    }
    hd_resp_empty(r, 200);
}

static int put_sink(void *arg, const char *p, size_t n)
{
    struct put_ctx *pc = arg;

    if (hd_put_size(pc->put) + n > pc->t->max_object)
        return HD_ETOOLARGE;
    if (pc->ck_type != HD_CK_NONE)
        hd_cksum_update(&pc->ck, p, n);
    if (pc->verify_sha)
        hd_cksum_update(&pc->sha, p, n);
    return hd_put_write(pc->put, p, n);
}

static int put_body(struct hd_req *r, const char *data, size_t len)
{
    struct put_ctx *pc = r->data;

    if (pc->dec)
        return hd_awschunked_feed(pc->dec, data, len, put_sink, pc);
    return put_sink(pc, data, len);
}

static void put_done(struct hd_req *r)
{
    struct put_ctx *pc = r->data;

    if (!pc || pc->magic != PUT_MAGIC)
        return;
    if (r->status != 200)
        hd_stats_inc(HD_ST_PUT_ABORTED);
    hd_put_free(pc->put);         /* removes the temp file unless committed */
    hd_acall_release(pc->commit); /* a commit still running finishes on its own */
    hd_awschunked_free(pc->dec);
    if (pc->ck_type != HD_CK_NONE)
        hd_cksum_cleanup(&pc->ck);
    if (pc->verify_sha)
        hd_cksum_cleanup(&pc->sha);
    free(pc->meta);
    free(pc->hdrs);
    free(pc->ctype);
    free(pc->xmeta);
    hd_cache_wt_free(pc->wt);
    hd_cbucket_unref(pc->cb);
    free(pc->key);
    if (pc->hooks.arg_free)
        pc->hooks.arg_free(pc->hooks.arg);
    pc->magic = 0;
    free(pc);
    r->data = NULL;
}

static int put_verify(struct hd_req *r, struct put_ctx *pc, char *ck_b64)
{
    unsigned char md5[16];
    int rc;

    if (pc->dec && (rc = hd_awschunked_finish(pc->dec)) < 0)
        return rc;
    if (pc->decoded_len >= 0 && (uint64_t)pc->decoded_len != hd_put_size(pc->put))
        return HD_EINCOMPLETEBODY;
    if (!pc->dec && r->content_length >= 0 && (uint64_t)r->content_length != r->bytes_in)
        return HD_EINCOMPLETEBODY;
    if (pc->verify_sha) {
        char got[HD_CK_B64_MAX], want[HD_CK_B64_MAX];
        hd_cksum_final_b64(&pc->sha, got);
        hd_b64_encode(pc->sha_expect, 32, want, sizeof(want));
        if (strcmp(got, want) != 0)
            return HD_ESHA256MISMATCH;
    }
    if (pc->have_md5) {
        hd_put_md5(pc->put, md5);
        if (memcmp(md5, pc->md5_expect, 16) != 0)
            return HD_EBADDIGEST;
    }
    if (pc->ck_type != HD_CK_NONE) {
        const char *want = pc->ck_expect;
        hd_cksum_final_b64(&pc->ck, ck_b64);
        if (!want && pc->ck_trailer && pc->dec)
            want = hd_awschunked_trailer(pc->dec, hd_cksum_header(pc->ck_type));
        if (pc->ck_trailer && (!want || !hd_cksum_value_ok(pc->ck_type, want, 0)))
            return HD_ECKVALUE; /* the promised trailer never came, or is not a value */
        if (want && strcmp(want, ck_b64) != 0)
            return HD_EBADCHECKSUM;
    }
    return 0;
}

/* A conditional write to an S3-backed bucket looks once more right before the upstream is
 * written (it passed before the body or the copy): 0, HD_ECONFLICT when someone wrote since,
 * or a store error. */
static int wcond_recheck(struct hd_target *t, const char *bucket, const char *key,
                         const struct hd_wcond *wc)
{
    struct hd_obj_meta old;
    const char *cond;
    int found, rc;

    if (!wc->if_match && !wc->if_none_match)
        return 0;
    found = (rc = hd_store_lookup(t->st, bucket, key, &old)) == 0;
    if (rc < 0 && rc != HD_ENOSUCHKEY)
        return rc;
    rc = hd_wcond_check(wc, found ? &old : NULL, &cond);
    if (found)
        hd_obj_meta_cleanup(&old);
    return rc < 0 ? HD_ECONFLICT : 0;
}

/* A checksum error says which algorithm, as S3's do. */
static void checksum_error(struct hd_req *r, const struct put_ctx *pc, int rc)
{
    char msg[128];
    const char *name = hd_cksum_name(pc->ck_type);

    if (rc == HD_EBADCHECKSUM)
        snprintf(msg, sizeof(msg), "The %s you specified did not match the calculated checksum.",
                 name);
    else if (pc->ck_trailer)
        snprintf(msg, sizeof(msg), "Value for %s trailing header is invalid.",
                 hd_cksum_header(pc->ck_type));
    else
        snprintf(msg, sizeof(msg), "Value for %s header is invalid.", hd_cksum_header(pc->ck_type));
    hd_resp_err_msg(r, rc, msg);
}

static void put_end(struct hd_req *r)
{
    struct put_ctx *pc = r->data;
    struct hd_put_attrs a;
    struct hd_obj_meta m;
    char *ck_b64 = pc->ck_b64, uetag[48], msg[512];
    int rc;

    if (pc->commit) { /* again, once the disk worker is done */
        struct commit_job *j = pc->commit->arg;
        if (hd_acall_park(pc->commit, r) == HD_AGAIN)
            return;
        put_answer(r, pc, pc->commit->rc, &j->m, j->a.writeback, j->put);
        return;
    }
    if (r->body_err) {
        hd_resp_err(r, r->body_err);
        return;
    }
    if (!pc->verified && (rc = put_verify(r, pc, ck_b64)) < 0) {
        if (rc == HD_EBADCHECKSUM || rc == HD_ECKVALUE)
            checksum_error(r, pc, rc);
        else
            hd_resp_err(r, rc);
        return;
    }
    pc->verified = 1;
    memset(&a, 0, sizeof(a));
    a.ctype = pc->ctype;
    a.meta = pc->meta;
    a.hdrs = pc->hdrs;
    a.if_match = pc->wc.if_match;
    a.if_none_match = pc->wc.if_none_match;
    if (pc->ck_type != HD_CK_NONE) {
        a.ck_type = hd_cksum_name(pc->ck_type);
        a.ck_val = ck_b64;
    }
    if (pc->xmeta) { /* an object moved by rebalance keeps its identity */
        json_t *hold;
        unsigned char md5[16];
        char hex[33];
        if ((rc = hd_obj_meta_attrs(pc->xmeta, &a, &hold)) < 0) {
            hd_resp_err_msg(r, rc, "X-Hoard-Obj-Meta is not valid.");
            return;
        }
        if (hd_rebalance_deleted_since(pc->t->rb, hd_put_bucket(pc->put), hd_put_name(pc->put),
                                       a.mtime_ms)) {
            json_decref(hold);
            hd_resp_err_msg(r, HD_EPRECONDITION, "Deleted here after this copy was written.");
            return;
        }
        hd_put_md5(pc->put, md5);
        hd_hex(md5, 16, hex);
        if (!strchr(a.etag, '-') && strcmp(a.etag, hex) != 0) {
            json_decref(hold);
            hd_resp_err(r, HD_EBADDIGEST);
            return;
        }
        /* a dirty object of a write-back bucket moves with its dirty state: uploaded here */
        a.writeback = hd_req_header(r, "X-Hoard-Dirty") != NULL;
        rc = hd_put_commit(pc->put, &a, &m);
        json_decref(hold);
        if (rc < 0) {
            hd_resp_err_msg(r, rc,
                            rc == HD_EPRECONDITION ? "A newer copy is held."
                            : rc == HD_EUNAVAIL    ? "A newer write of the object is being "
                                                     "committed here: try again."
                                                   : NULL);
            return;
        }
        if (a.writeback)
            hd_cache_wb_kick(pc->t->cache);
        hd_resp_empty(r, 200);
        return;
    }
    if (pc->cb && pc->cb->props.write_back) { /* committed with its upload queued */
        a.writeback = 1;
    } else if (pc->cb && !pc->wt &&
               (rc = wcond_recheck(pc->t, hd_put_bucket(pc->put), hd_put_name(pc->put), &pc->wc)) <
                   0) {
        hd_resp_err(r, rc); /* S3-backed: the upstream is written first, so look once more */
        return;
    }
    if (pc->cb && !a.writeback) { /* S3-backed: committed here only once the upstream has it */
        rc = hd_cache_put_through(r, pc->t->cache, pc->cb, pc->key, pc->put, 1, pc->ctype, pc->meta,
                                  pc->hdrs, &pc->wt, uetag, msg, sizeof(msg));
        if (rc == HD_AGAIN)
            return; /* parked; put_end runs again when the upload is done */
        if (rc < 0) {
            hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
            return;
        }
        a.etag = uetag;
    }
    if (pc->hooks.through) {
        rc = pc->hooks.through(r, pc->put, pc->hooks.arg, msg, sizeof(msg));
        if (rc == HD_AGAIN)
            return; /* parked; put_end runs again when it is done */
        if (rc < 0) {
            hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
            return;
        }
    }
    /* the fsync and the catalog off the HTTP worker (its other connections go on) */
    if (pc->t->disk) {
        if (commit_start(r, pc, &a) == 0) {
            put_end(r); /* parks, or answers when the commit is already done */
            return;
        }
        hd_acall_release(pc->commit); /* could not start: commit here */
        pc->commit = NULL;
    }
    if (pc->hooks.commit)
        rc = pc->hooks.commit(pc->put, &a, &m, pc->hooks.arg);
    else
        rc = hd_put_commit(pc->put, &a, &m);
    put_answer(r, pc, rc, &m, a.writeback, pc->put);
}

/* The x-amz-checksum-* the request announces (a header, a trailer, or only the algorithm),
 * checked as S3 checks them before the body: 0, or the error with *msg (S3's texts). */
static int put_checksum_setup(struct hd_req *r, struct put_ctx *pc, const char **msg)
{
    static const char multiple[] =
        "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.";
    const char *trailer = hd_req_header(r, "x-amz-trailer");
    const char *algo = hd_req_header(r, "x-amz-sdk-checksum-algorithm");
    enum hd_ck_type named = HD_CK_NONE;
    size_t i;

    *msg = NULL;
    pc->ck_type = HD_CK_NONE;
    for (i = 0; i < r->nhdrs; i++) {
        enum hd_ck_type ct = hd_cksum_type_from_header(r->hdrs[i].k);
        if (ct == HD_CK_NONE)
            continue;
        if (pc->ck_type != HD_CK_NONE) {
            *msg = multiple;
            return HD_EBADREQ;
        }
        pc->ck_type = ct;
        pc->ck_expect = r->hdrs[i].v;
    }
    if (trailer && *trailer) {
        enum hd_ck_type ct = hd_cksum_type_from_header(trailer);
        if (ct == HD_CK_NONE) {
            *msg = "The value specified in the x-amz-trailer header is not supported";
            return HD_EBADREQ;
        }
        if (pc->ck_type != HD_CK_NONE) {
            *msg = multiple;
            return HD_EBADREQ;
        }
        pc->ck_type = ct;
        pc->ck_trailer = 1;
    }
    if (algo && *algo) {
        named = hd_cksum_type_from_name(algo);
        *msg = "Value for x-amz-sdk-checksum-algorithm header is invalid.";
        if (named == HD_CK_NONE)
            return HD_EBADREQ;
        if (pc->ck_type != HD_CK_NONE && pc->ck_type != named)
            return HD_EBADCHECKSUM; /* AWS's documentation: BadDigest */
        *msg = NULL;
        if (pc->ck_type == HD_CK_NONE)
            pc->ck_type = named;
    }
    /* a value must be base64 of the algorithm's digest size (AWS: InvalidRequest; a
     * well-formed value that does not match the body is BadDigest, after the body) */
    if (pc->ck_expect && !hd_cksum_value_ok(pc->ck_type, pc->ck_expect, 0))
        return HD_ECKVALUE;
    if (pc->ck_type != HD_CK_NONE && hd_cksum_init(&pc->ck, pc->ck_type) < 0)
        return -ENOMEM;
    return 0;
}

const char hd_api_upstream_tags_msg[] =
    "Object tags are not supported in S3-backed buckets: hoard does not forward tags to the "
    "upstream bucket.";

int hd_api_wants_tags(struct hd_req *r)
{
    const char *v = hd_req_header(r, "x-amz-tagging");

    return v && *v;
}

void hd_obj_put(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                const struct hd_sigv4_auth *auth)
{
    hd_obj_put_ex(r, t, bucket, key, auth, NULL);
}

void hd_obj_put_ex(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                   const struct hd_sigv4_auth *auth, const struct hd_put_hooks *hooks)
{
    struct put_ctx *pc;
    const char *md5 = hd_req_header(r, "Content-MD5");
    const char *enc = hd_req_header(r, "Content-Encoding");
    const char *dlen = hd_req_header(r, "x-amz-decoded-content-length");
    const char *sha = hd_req_header(r, "x-amz-content-sha256");
    enum hd_payload pl = auth ? auth->payload : HD_PL_UNSIGNED;
    const char *cmsg, *cond;
    struct hd_obj_meta old;
    char wmsg[512];
    uint64_t size;
    int rc;

    r->op = HD_OP_PUT;
    pc = calloc(1, sizeof(*pc));
    if (!pc) {
        if (hooks && hooks->arg_free)
            hooks->arg_free(hooks->arg);
        hd_resp_err(r, -ENOMEM);
        return;
    }
    if (hooks)
        pc->hooks = *hooks;
    pc->magic = PUT_MAGIC;
    r->data = pc;
    r->on_done = put_done;
    if ((rc = hd_store_bucket_exists(t->st, bucket)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    if (r->content_length >= 0 && (uint64_t)r->content_length > t->max_object) {
        hd_resp_err(r, HD_ETOOLARGE);
        return;
    }
    pc->t = t;
    pc->decoded_len = -1;
    if (!auth && sha) {
        /* anonymous (auth disabled) but the client still framed the body: decode it
         * without signature checks */
        if (strncmp(sha, "STREAMING-", 10) == 0)
            pl = HD_PL_STREAMING_UNSIGNED_TRAILER;
    }
    if (md5) {
        size_t n;
        if (hd_b64_decode(md5, strlen(md5), pc->md5_expect, sizeof(pc->md5_expect), &n) < 0 ||
            n != 16) {
            hd_resp_err(r, HD_EINVALIDDIGEST);
            return;
        }
        pc->have_md5 = 1;
    }
    if ((rc = put_checksum_setup(r, pc, &cmsg)) < 0) {
        if (rc == HD_ECKVALUE)
            checksum_error(r, pc, rc);
        else
            hd_resp_err_msg(r, rc, cmsg);
        return;
    }
    if (pl == HD_PL_STREAMING_SIGNED || pl == HD_PL_STREAMING_SIGNED_TRAILER ||
        pl == HD_PL_STREAMING_UNSIGNED_TRAILER) {
        uint64_t v;
        if (!dlen || hd_parse_u64(dlen, &v) < 0 || v > t->max_object) {
            hd_resp_err_msg(r, HD_EMISSINGLENGTH,
                            "aws-chunked uploads need a valid x-amz-decoded-content-length.");
            return;
        }
        pc->decoded_len = (int64_t)v;
        pc->dec = hd_awschunked_new(pl, auth);
        if (!pc->dec) {
            hd_resp_err(r, -ENOMEM);
            return;
        }
    } else if (pl == HD_PL_HEX) {
        pc->verify_sha = 1;
        memcpy(pc->sha_expect, auth->payload_sha256, 32);
        hd_cksum_init(&pc->sha, HD_CK_SHA256);
    }
    (void)enc; /* aws-chunked framing is keyed off x-amz-content-sha256; the aws-chunked
                  token is left out of the Content-Encoding stored (hd_collect_hdrs) */
    if ((rc = hd_collect_meta(r, &pc->meta)) < 0 ||
        (!hooks && (rc = hd_collect_hdrs(r, &pc->hdrs)) < 0)) {
        hd_resp_err(r, rc);
        return;
    }
    if (!hooks && !(r->trusted == HD_TRUST_NODE && hd_req_header(r, "X-Hoard-Obj-Meta"))) {
        /* a conditional PUT fails before its body is read when it can already; the commit
         * checks again, in the transaction that writes the row */
        if ((rc = hd_wcond_parse(r, &pc->wc)) < 0) {
            hd_wcond_error(r, rc, NULL);
            return;
        }
        if (pc->wc.if_match || pc->wc.if_none_match) {
            int found;
            rc = hd_store_lookup(t->st, bucket, key, &old);
            if (rc < 0 && rc != HD_ENOSUCHKEY) {
                hd_resp_err(r, rc);
                return;
            }
            found = rc == 0;
            rc = hd_wcond_check(&pc->wc, found ? &old : NULL, &cond);
            if (found)
                hd_obj_meta_cleanup(&old);
            if (rc < 0) { /* the HTTP layer holds it while the body is drained */
                hd_wcond_error(r, rc, cond);
                return;
            }
        }
    }
    if (hd_req_header(r, "Content-Type")) {
        pc->ctype = strdup(hd_req_header(r, "Content-Type"));
        if (!pc->ctype) {
            hd_resp_err(r, -ENOMEM);
            return;
        }
    }
    if (r->trusted == HD_TRUST_NODE && hd_req_header(r, "X-Hoard-Obj-Meta") &&
        !(pc->xmeta = strdup(hd_req_header(r, "X-Hoard-Obj-Meta")))) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    if (!hooks && !pc->xmeta && (pc->cb = hd_cache_bucket(t->cache, bucket)) &&
        !(pc->key = strdup(key))) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    if (pc->cb && hd_api_wants_tags(r)) {
        hd_resp_err_msg(r, HD_ENOTIMPL, hd_api_upstream_tags_msg);
        return;
    }
    size = pc->decoded_len >= 0    ? (uint64_t)pc->decoded_len
           : r->content_length > 0 ? (uint64_t)r->content_length
                                   : 0;
    if (pc->cb && pc->cb->props.write_back &&
        (rc = hd_cache_wb_admit(t->cache, size, wmsg, sizeof(wmsg))) < 0) {
        HD_LOG(HD_WARN, r->id, "%s", wmsg);
        r->body_err = rc; /* answered after the body, as out of space is */
        return;
    }
    if ((rc = hd_put_begin_sized(t->st, bucket, key, size, &pc->put)) < 0) {
        if (rc == -ENOSPC) {
            /* answered after the body was read (and dropped): an early answer makes the
             * client, or a relaying proxy, meet a reset while it is still sending */
            r->body_err = rc;
            return;
        }
        hd_resp_err(r, rc);
        return;
    }
    r->on_body = put_body;
    r->on_end = put_end;
}

/* ---- CopyObject ---- */

static int copy_content(struct hd_put *p, int fd, uint64_t size)
{
    char *buf = malloc(1 << 20);
    uint64_t off = 0;
    int rc = 0;

    if (!buf)
        return -ENOMEM;
    while (off < size) {
        size_t want = size - off > (1 << 20) ? (1 << 20) : (size_t)(size - off);
        ssize_t n = pread(fd, buf, want, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = n < 0 ? -errno : HD_EINTERNAL;
            break;
        }
        if ((rc = hd_put_write(p, buf, (size_t)n)) < 0)
            break;
        off += (uint64_t)n;
    }
    free(buf);
    return rc;
}

/* A CopyObject: everything the request says, gathered on the worker, so that the copy can run
 * on a pool thread when the source lives on another target or in an upstream, or when the
 * destination is S3-backed. */
struct copy {
    struct hd_target *t;
    char *sb, *sk, *bucket, *key;
    int replace;
    char *meta;       /* REPLACE: the request's x-amz-meta-* as JSON (or NULL) */
    char *ctype;      /* REPLACE: the request's Content-Type (or NULL) */
    char *hdrs;       /* REPLACE: the request's Cache-Control ... storage class (or NULL) */
    char *sclass;     /* x-amz-storage-class (COPY keeps the rest of the source's headers) */
    int tags_replace; /* x-amz-tagging-directive REPLACE: tags, not the source's */
    int public_source; /* the caller may read the source only because it is public */
    char *tags;       /* REPLACE: the request's x-amz-tagging (canonical; NULL: none) */
    char *cond_v[4];
    struct hd_cond cond; /* x-amz-copy-source-if-*, pointing into cond_v */
    char *if_match;      /* on the destination */
    int if_none_match;
    struct hd_cbucket *dcb; /* an S3-backed destination: written as a PUT into it is */
    int s3src;              /* the source bucket is S3-backed */
    struct hd_obj_meta out;
    char msg[512]; /* an upstream's words for the error */
};

static void copy_free(void *arg)
{
    struct copy *c = arg;
    size_t i;

    free(c->sb);
    free(c->sk);
    free(c->bucket);
    free(c->key);
    free(c->meta);
    free(c->ctype);
    free(c->hdrs);
    free(c->sclass);
    free(c->tags);
    free(c->if_match);
    for (i = 0; i < 4; i++)
        free(c->cond_v[i]);
    hd_cbucket_unref(c->dcb);
    hd_obj_meta_cleanup(&c->out);
    free(c);
}

/* The new object's attributes: the source's full-object checksum (a composite one describes
 * parts the copy does not have), and its content type, metadata and headers (directive COPY)
 * or the request's (REPLACE); the storage class is the request's either way (none: STANDARD,
 * as S3 does); the tags the source's (x-amz-tagging-directive COPY, the default) or the
 * request's (REPLACE), none in an S3-backed bucket (its upstream gets no tags). Strings point
 * into c, the source's, or *hold (free it after the commit). */
static int copy_attrs(const struct copy *c, const char *src_meta, const char *src_ctype,
                      const char *src_hdrs, const char *ck_type, const char *ck_val,
                      struct hd_put_attrs *a, char **hold)
{
    char *base = NULL, *stags = NULL;
    int rc = 0;

    memset(a, 0, sizeof(*a));
    *hold = NULL;
    if (ck_type && ck_type[0] && ck_val && !strchr(ck_val, '-')) {
        a->ck_type = ck_type;
        a->ck_val = ck_val;
    }
    a->meta = c->replace ? c->meta : src_meta;
    a->ctype = c->replace ? c->ctype : src_ctype;
    a->if_match = c->if_match;
    a->if_none_match = c->if_none_match;
    if (!c->replace && hd_hdrs_with_class(src_hdrs, c->sclass, &base) < 0)
        return -ENOMEM;
    if (!c->tags_replace && !c->dcb)
        rc = hd_hdrs_tags(src_hdrs, &stags);
    /* a public object's tags are not public (GetObjectTagging stays closed): a caller who may
     * read the source only because everyone may copies it with REPLACE, or not at all */
    if (rc == 0 && stags && *stags && c->public_source)
        rc = HD_EACCESS;
    if (rc == 0)
        rc =
            hd_hdrs_with_tags(c->replace ? c->hdrs : base, c->tags_replace ? c->tags : stags, hold);
    a->hdrs = *hold;
    free(base);
    free(stags);
    return rc;
}

/* Commits the new object, p's complete content, with attributes a. An S3-backed destination
 * takes the PutObject path: a write-back bucket's copy is committed dirty with its upload
 * queued (admitted against writeback.dirty_max as a PUT is); a write-through bucket's goes to
 * the upstream first (hd_cache_put_through_sync, blocking: pool thread) and is committed
 * with the upstream's ETag, or not at all. */
static int copy_commit(struct copy *c, struct hd_put *p, struct hd_put_attrs *a)
{
    char uetag[48];
    int rc;

    if (c->dcb && c->dcb->props.write_back) {
        if ((rc = hd_cache_wb_admit(c->t->cache, hd_put_size(p), c->msg, sizeof(c->msg))) < 0)
            return rc;
        a->writeback = 1;
    } else if (c->dcb) {
        if ((rc = wcond_recheck(c->t, c->bucket, c->key,
                                &(struct hd_wcond){c->if_match, c->if_none_match})) < 0)
            return rc;
        if ((rc = hd_cache_put_through_sync(c->dcb, c->key, p, a->ctype, a->meta, a->hdrs, uetag,
                                            c->msg, sizeof(c->msg))) < 0)
            return rc;
        a->etag = uetag;
    }
    if ((rc = hd_put_commit(p, a, &c->out)) == 0 && a->writeback)
        hd_cache_wb_kick(c->t->cache);
    return rc;
}

/* The source from its owner, another target (pool thread): streams it into the new object
 * (the owner reads it as a GET does, from its upstream when it is not cached there). */
static int copy_remote(void *arg)
{
    struct copy *c = arg;
    struct hd_put_attrs src, at;
    struct hd_put *p = NULL;
    char url[512], *xmeta = NULL, hex[33], *h = NULL;
    unsigned char md5[16];
    json_t *hold = NULL;
    int rc = hd_peer_owner_elsewhere(c->t->cl, c->sb, c->sk, url, sizeof(url));

    if (rc < 0 || (rc = hd_put_begin(c->t->st, c->bucket, c->key, &p)) < 0 ||
        (rc = hd_peer_get_into(c->t->cl, url, c->sb, c->sk, 0, &c->cond, p, &xmeta)) < 0 ||
        (rc = hd_obj_meta_attrs(xmeta, &src, &hold)) < 0)
        goto out;
    hd_put_md5(p, md5);
    hd_hex(md5, 16, hex);
    if (!strchr(src.etag, '-') && strcmp(src.etag, hex) != 0) {
        rc = HD_EBADDIGEST;
        goto out;
    }
    if ((rc = copy_attrs(c, src.meta, src.ctype, src.hdrs, src.ck_type, src.ck_val, &at, &h)) == 0)
        rc = copy_commit(c, p, &at);
out:
    hd_put_free(p);
    json_decref(hold);
    free(xmeta);
    free(h);
    return rc;
}

/* <CopyObjectResult> appended to b (with the XML declaration when decl). */
static void copy_doc(struct hd_buf *b, const struct hd_obj_meta *out, int decl)
{
    char ts[32], etag[64];

    if (decl)
        hd_xml_decl(b);
    hd_buf_puts(b, "<CopyObjectResult xmlns=\"" HD_XML_S3_NS "\">");
    hd_iso8601_ms(out->mtime_ms, ts);
    hd_xml_elem(b, "LastModified", ts);
    snprintf(etag, sizeof(etag), "\"%s\"", out->etag);
    hd_xml_elem(b, "ETag", etag);
    hd_xml_close(b, "CopyObjectResult");
}

static void copy_answer(struct hd_req *r, const struct hd_obj_meta *out)
{
    struct hd_buf b;

    if (r->api == HD_API_NATIVE) { /* AIStore's Object.copy(): 200, no body */
        hd_resp_empty(r, 200);
        return;
    }
    hd_buf_init(&b);
    copy_doc(&b, out, 1);
    hd_resp_xml(r, 200, &b);
}

/* The source held here (disk only; on the disk workers when both buckets are native, else
 * on the upstream pool). HD_ENOSUCHKEY when it is not here. */
static int copy_local(void *arg)
{
    struct copy *c = arg;
    struct hd_obj_meta m;
    struct hd_put_attrs a;
    struct hd_put *p = NULL;
    char *hold = NULL;
    int fd = -1, rc = hd_store_open_object(c->t->st, c->sb, c->sk, &m, &fd);

    if (rc < 0)
        return rc;
    rc = hd_cond_eval(&c->cond, m.etag, (time_t)(m.mtime_ms / 1000), 1);
    /* evaluated as a read (x-amz-copy-source-if-modified-since counts, as on a peer's GET)
     * but a failed condition is 412, never 304 */
    if (rc == HD_ENOTMODIFIED)
        rc = HD_EPRECONDITION;
    if (rc == 0 &&
        (rc = copy_attrs(c, m.meta, m.ctype, m.hdrs, m.ck_type, m.ck_val, &a, &hold)) == 0) {
        if ((rc = hd_put_begin(c->t->st, c->bucket, c->key, &p)) == 0 &&
            (rc = copy_content(p, fd, m.size)) == 0)
            rc = copy_commit(c, p, &a);
    }
    hd_put_free(p);
    free(hold);
    close(fd);
    hd_obj_meta_cleanup(&m);
    return rc;
}

/* A copy's source that this target owns, made ready to be read from the store as a GET
 * reads it: nothing to do for a native bucket; an S3-backed bucket's is fetched from the
 * upstream when not cached (single-flight with GETs, and kept as a GET's fill is) and
 * revalidated when the bucket has validate_warm_get. 1 when it was fetched now, 0, or
 * HD_ENOSUCHKEY / an upstream's error with msg filled. Pool threads. */
static int copy_source_ready(struct hd_target *t, const char *bucket, const char *key, char *msg,
                             size_t msglen)
{
    struct hd_cbucket *cb = hd_cache_bucket(t->cache, bucket);
    struct hd_obj_meta m;
    uint64_t bytes = 0;
    int held, rc = 0;

    msg[0] = '\0';
    if (!cb)
        return 0;
    if ((held = hd_store_lookup(t->st, bucket, key, &m) == 0))
        hd_obj_meta_cleanup(&m);
    if (!held && cb->props.write_back && hd_store_wb_deleting(t->st, bucket, key) > 0) {
        rc = HD_ENOSUCHKEY; /* deleted here; the upstream's copy goes next */
    } else if (!held || (cb->props.validate_warm_get && !cb->props.write_back)) {
        rc = hd_cache_fetch_sync(t->cache, cb, key, held, NULL, &bytes, msg, msglen);
        if (held && rc < 0 && rc != HD_ENOSUCHKEY) {
            HD_LOG(HD_WARN, NULL, "validate %s/%s: %s; copying the cached copy", bucket, key, msg);
            rc = 0; /* as a GET: the cached copy when the upstream cannot tell */
            msg[0] = '\0';
        }
        rc = rc == 0 && (!held || bytes) ? 1 : rc;
    }
    hd_cbucket_unref(cb);
    return rc;
}

int hd_api_copy_run(struct hd_target *t, const char *sb, const char *sk, int (*local)(void *arg),
                    int (*remote)(void *arg), void *arg, char *msg, size_t msglen)
{
    char url[512];
    int rc = hd_peer_owner_elsewhere(t->cl, sb, sk, url, sizeof(url)), fetched;

    /* another target's: read from its owner as a GET of it reads it, never from a copy held
     * here (a misplaced one may be older than the owner's while objects move) */
    if (rc != HD_ENOSUCHKEY)
        return rc < 0 ? rc : remote(arg);
    if ((rc = fetched = copy_source_ready(t, sb, sk, msg, msglen)) >= 0)
        rc = local(arg);
    if (rc == HD_ENOSUCHKEY && fetched > 0) {
        /* fetched, but not kept: a write of the name overtook it, or there was no room */
        rc = HD_EUNAVAIL;
        snprintf(msg, msglen, "%s",
                 "The copy source could not be cached here (it changed while it was fetched, "
                 "or there is no room): retry.");
    }
    return rc;
}

static void copy_run(struct hd_acall *a)
{
    struct copy *c = a->arg;

    a->rc = hd_api_copy_run(c->t, c->sb, c->sk, copy_local, copy_remote, c, c->msg, sizeof(c->msg));
}

static void copy_done(struct hd_req *r, struct hd_acall *a)
{
    struct copy *c = a->arg;

    if (a->rc < 0) {
        hd_resp_err_msg(r, a->rc, c->msg[0] ? c->msg : NULL);
    } else {
        if (r->api != HD_API_NATIVE && !c->dcb)
            hd_lifecycle_header_of(r, c->t, c->bucket, c->key);
        copy_answer(r, &c->out);
    }
}

/* ---- a slow CopyObject: answered before the copy ends ----
 * An S3 CopyObject still running after s3.complete_keepalive_ms (a large object: every byte
 * is copied and fsync'd) answers 200 then, as AWS answers a slow copy: the XML declaration, a
 * space every s3.complete_keepalive_ms, then <CopyObjectResult>, or the <Error> the status
 * line would have carried (the SDKs read a 200 with an <Error> as the failure it is). That
 * keeps the clients' read timeouts and the relay's low-speed limit (60 s) from cutting a copy
 * that is only slow. A copy done sooner is answered as before. */
#define SLOWCOPY_MAGIC 0x736c6f77u

struct slowcopy {
    uint32_t magic;
    struct hd_acall *job; /* its arg: the struct copy */
    struct hd_ka *ka;     /* registered while the answer waits */
    struct hd_ka_body kb;
};

static void slowcopy_final(struct hd_req *r, void *arg, struct hd_buf *out)
{
    struct hd_acall *job = arg;
    struct copy *c = job->arg;

    if (job->rc < 0)
        hd_err_doc(r, job->rc, c->msg[0] ? c->msg : NULL, NULL, 0, 0, out);
    else
        copy_doc(out, &c->out, 0);
}

static long slowcopy_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct hd_req *r = cls;
    struct slowcopy *s = r->data;

    (void)pos;
    if (!s || s->magic != SLOWCOPY_MAGIC)
        return HD_STREAM_ERROR;
    return hd_ka_body_read(&s->kb, r, slowcopy_final, s->job, buf, max);
}

/* on_end, and again each time the copy ends or the keep-alive thread nudges the park. */
static void slowcopy_end(struct hd_req *r)
{
    struct slowcopy *s = r->data;

    if (!hd_acall_finished(s->job)) {
        if (s->ka && hd_ka_due(s->ka)) { /* still copying: the 200 goes now */
            struct hd_ka *k = s->ka;
            s->ka = NULL;
            if (hd_ka_body_start(&s->kb, r, s->job, k, slowcopy_read, r) == 0)
                return;
        }
        if (hd_acall_park(s->job, r) == HD_AGAIN)
            return; /* resumed by the copy's end or a nudge (none without s->ka) */
    }
    hd_ka_end(s->ka);
    s->ka = NULL;
    copy_done(r, s->job);
}

static void slowcopy_done(struct hd_req *r)
{
    struct slowcopy *s = r->data;

    if (!s || s->magic != SLOWCOPY_MAGIC)
        return;
    s->magic = 0;
    hd_ka_end(s->ka); /* before the job goes */
    hd_ka_body_cleanup(&s->kb);
    hd_acall_release(s->job); /* a copy still running finishes on its own */
    free(s);
    r->data = NULL;
}

/* Runs c on pool p for r, answered as above. */
static void slowcopy_start(struct hd_req *r, struct hd_target *t, struct hd_pool *p, struct copy *c)
{
    struct slowcopy *s = calloc(1, sizeof(*s));
    int rc;

    if (!s || !(s->job = hd_acall_new(p, copy_run, c, copy_free))) {
        if (!s)
            copy_free(c);
        free(s);
        hd_resp_err(r, -ENOMEM);
        return;
    }
    s->magic = SLOWCOPY_MAGIC;
    r->data = s;
    r->on_end = slowcopy_end;
    r->on_done = slowcopy_done;
    if ((rc = hd_acall_submit(s->job, r)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    s->ka = hd_ka_start(s->job, t->complete_keepalive_ms); /* NULL: answered at the end */
}

/* The request's side of a copy (on the worker): c filled, or the error to answer with. */
static int copy_prepare(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                        const char *src, struct copy *c, const char **msg)
{
    static const char *const hdrs[4] = {
        "x-amz-copy-source-if-match", "x-amz-copy-source-if-none-match",
        "x-amz-copy-source-if-modified-since", "x-amz-copy-source-if-unmodified-since"};
    const char *dir = hd_req_header(r, "x-amz-metadata-directive");
    const char *tdir = hd_req_header(r, "x-amz-tagging-directive");
    const char *tg = hd_req_header(r, "x-amz-tagging");
    const char *sc = hd_req_header(r, "x-amz-storage-class");
    struct hd_cbucket *cb;
    struct hd_wcond wc;
    int oom = 0, rc, i;

    *msg = NULL;
    c->t = t;
    c->replace = dir && strcmp(dir, "REPLACE") == 0;
    if (dir && !c->replace && strcmp(dir, "COPY") != 0) {
        *msg = "Unknown metadata directive.";
        return HD_EBADARG;
    }
    c->tags_replace = tdir && strcmp(tdir, "REPLACE") == 0;
    c->public_source = r->public_source;
    if (tdir && !c->tags_replace && strcmp(tdir, "COPY") != 0) {
        *msg = "Unknown tagging directive.";
        return HD_EBADARG;
    }
    if (c->tags_replace && tg && (rc = hd_tags_parse_header(tg, &c->tags)) < 0)
        return rc;
    if (sc && (rc = hd_storage_class_check(sc)) < 0)
        return rc;
    if ((rc = hd_copy_source_parse(src, &c->sb, &c->sk)) < 0) {
        *msg = "Invalid copy source (expected /bucket/key, url-encoded).";
        return rc;
    }
    /* onto itself: legal only when something changes (REPLACE, or a storage class, even the
     * one it has) */
    if (!c->replace && !sc && strcmp(c->sb, bucket) == 0 && strcmp(c->sk, key) == 0)
        return HD_ECOPYSELF;
    if ((rc = hd_wcond_parse(r, &wc)) < 0)
        return rc;
    c->if_none_match = wc.if_none_match;
    c->if_match = hd_api_dup_opt(wc.if_match, &oom);
    c->sclass = hd_api_dup_opt(sc, &oom);
    if ((rc = hd_store_bucket_exists(t->st, bucket)) < 0)
        return rc;
    /* a missing source bucket is named in the error body, not the destination */
    if ((rc = hd_store_bucket_exists(t->st, c->sb)) < 0)
        return hd_req_err_names(r, c->sb, c->sk) < 0 ? -ENOMEM : rc;
    c->dcb = hd_cache_bucket(t->cache, bucket);
    if ((cb = hd_cache_bucket(t->cache, c->sb))) {
        c->s3src = 1;
        hd_cbucket_unref(cb);
    }
    if (c->replace) {
        if ((rc = hd_collect_meta(r, &c->meta)) < 0 || (rc = hd_collect_hdrs(r, &c->hdrs)) < 0)
            return rc;
        c->ctype = hd_api_dup_opt(hd_req_header(r, "Content-Type"), &oom);
    }
    for (i = 0; i < 4; i++)
        c->cond_v[i] = hd_api_dup_opt(hd_req_header(r, hdrs[i]), &oom);
    c->cond.if_match = c->cond_v[0];
    c->cond.if_none_match = c->cond_v[1];
    c->cond.if_modified_since = c->cond_v[2];
    c->cond.if_unmodified_since = c->cond_v[3];
    c->bucket = hd_api_dup_opt(bucket, &oom);
    c->key = hd_api_dup_opt(key, &oom);
    return oom ? -ENOMEM : 0;
}

void hd_obj_copy(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key)
{
    hd_obj_copy_from(r, t, bucket, key, hd_req_header(r, "x-amz-copy-source"));
}

void hd_obj_copy_from(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                      const char *src)
{
    struct copy *c = calloc(1, sizeof(*c));
    const char *msg = NULL;
    char url[512];
    int rc, upstream;

    r->op = HD_OP_PUT;
    if (!c) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    if ((rc = copy_prepare(r, t, bucket, key, src, c, &msg)) < 0) {
        if (rc == HD_ENOTIMPL)
            hd_wcond_error(r, rc, NULL);
        else
            hd_resp_err_msg(r, rc, msg);
        copy_free(c);
        return;
    }
    if (c->dcb && c->tags) {
        hd_resp_err_msg(r, HD_ENOTIMPL, hd_api_upstream_tags_msg);
        copy_free(c);
        return;
    }
    if (c->if_match || c->if_none_match) { /* on the destination, here: checked first */
        struct hd_obj_meta old;
        const char *cond = NULL;
        int found = (rc = hd_store_lookup(t->st, bucket, key, &old)) == 0;
        if (rc == 0 || rc == HD_ENOSUCHKEY)
            rc = hd_wcond_check(&(struct hd_wcond){c->if_match, c->if_none_match},
                                found ? &old : NULL, &cond);
        if (found)
            hd_obj_meta_cleanup(&old);
        if (rc < 0) {
            hd_wcond_error(r, rc, cond);
            copy_free(c);
            return;
        }
    }
    /* from here a NoSuchKey is the source's, and its body names the source */
    if ((rc = hd_req_err_names(r, c->sb, c->sk)) < 0) {
        hd_resp_err(r, rc);
        copy_free(c);
        return;
    }
    /* never on the HTTP worker, whose other connections would wait: a large object is
     * seconds of copying and fsync. An upstream on either side, or a source another target
     * owns: the upstream pool; a copy of a source held here: the disk workers. */
    upstream = c->dcb || c->s3src ||
               hd_peer_owner_elsewhere(t->cl, c->sb, c->sk, url, sizeof(url)) != HD_ENOSUCHKEY;
    if (r->api == HD_API_S3 && t->complete_keepalive)
        slowcopy_start(r, t, upstream || !t->disk ? t->pool : t->disk, c);
    else
        hd_acall_request(r, upstream || !t->disk ? t->pool : t->disk, copy_run, copy_done, c,
                         copy_free);
}
