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
#include "common/xml.h"
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
                         struct hd_obj_meta *m, int fd, int head)
{
    if (hd_arch_wanted(r)) {
        hd_arch_serve(r, t->st, bucket, key, m, &fd, head);
        if (fd >= 0)
            close(fd);
    } else {
        hd_obj_serve(r, m, fd, head);
    }
    hd_obj_meta_cleanup(m);
}

struct objcall {
    struct hd_target *t;
    char *bucket, *key;
    int head, quiet_missing;
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
    hd_acall_request(r, t->pool, run, done, o, objcall_free);
}

/* Get-from-neighbour on a pool thread (it may wait for this target's join and then asks the
 * other targets). */
static void gfn_run(struct hd_acall *a)
{
    struct objcall *o = a->arg;

    a->rc = hd_rebalance_gfn(o->t->rb, o->bucket, o->key);
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
        serve_opened(r, o->t, o->bucket, o->key, &m, fd, o->head);
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
    if (rc == HD_ENOSUCHKEY && !local_probe(r) && hd_rebalance_may_gfn(t->rb, bucket, key)) {
        /* while the cluster map changes another target may hold it (gfn copies it here) */
        objcall_start(r, t, bucket, key, head, 0, gfn_run, gfn_done);
        return;
    }
    if (rc < 0) {
        hd_resp_err(r, rc);
        return;
    }
    serve_opened(r, t, bucket, key, &m, fd, head);
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
    char *ctype;
    char *xmeta; /* X-Hoard-Obj-Meta of a trusted rebalance PUT */
    struct hd_put_hooks hooks;
    int verified; /* put_verify passed (put_end may run again) */
    char ck_b64[HD_CK_B64_MAX];
    struct hd_cbucket *cb; /* S3-backed bucket: written through first */
    char *key;
    struct hd_wt *wt;
};

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
    hd_put_free(pc->put); /* removes the temp file unless committed */
    hd_awschunked_free(pc->dec);
    if (pc->ck_type != HD_CK_NONE)
        hd_cksum_cleanup(&pc->ck);
    if (pc->verify_sha)
        hd_cksum_cleanup(&pc->sha);
    free(pc->meta);
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
        if (pc->ck_trailer && !want)
            return HD_EINVALIDDIGEST; /* the promised trailer never came */
        if (want && strcmp(want, ck_b64) != 0)
            return HD_EBADCHECKSUM;
    }
    return 0;
}

static void put_end(struct hd_req *r)
{
    struct put_ctx *pc = r->data;
    struct hd_put_attrs a;
    struct hd_obj_meta m;
    char *ck_b64 = pc->ck_b64, etag[64], uetag[48], msg[512];
    int rc;

    if (r->body_err) {
        hd_resp_err(r, r->body_err);
        return;
    }
    if (!pc->verified && (rc = put_verify(r, pc, ck_b64)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    pc->verified = 1;
    memset(&a, 0, sizeof(a));
    a.ctype = pc->ctype;
    a.meta = pc->meta;
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
        rc = hd_put_commit(pc->put, &a, &m);
        json_decref(hold);
        if (rc < 0) {
            hd_resp_err_msg(r, rc, rc == HD_EPRECONDITION ? "A newer copy is held." : NULL);
            return;
        }
        hd_resp_empty(r, 200);
        return;
    }
    if (pc->cb) { /* S3-backed: committed here only once the upstream has it */
        rc = hd_cache_put_through(r, pc->t->cache, pc->cb, pc->key, pc->put, 1, pc->ctype, pc->meta,
                                  &pc->wt, uetag, msg, sizeof(msg));
        if (rc == HD_AGAIN)
            return; /* parked; put_end runs again when the upload is done */
        if (rc < 0) {
            hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
            return;
        }
        a.etag = uetag;
    }
    if (pc->hooks.commit)
        rc = pc->hooks.commit(pc->put, &a, &m, pc->hooks.arg);
    else
        rc = hd_put_commit(pc->put, &a, &m);
    if (rc < 0) {
        hd_resp_err(r, rc);
        return;
    }
    hd_stats_add(HD_ST_PUT_BYTES, m.size);
    snprintf(etag, sizeof(etag), "\"%s\"", m.etag);
    hd_resp_header(r, "ETag", etag);
    if (pc->ck_type != HD_CK_NONE)
        hd_resp_header(r, hd_cksum_header(pc->ck_type), ck_b64);
    hd_resp_empty(r, 200);
}

static int put_checksum_setup(struct hd_req *r, struct put_ctx *pc)
{
    const char *trailer = hd_req_header(r, "x-amz-trailer");
    const char *algo = hd_req_header(r, "x-amz-sdk-checksum-algorithm");
    size_t i;

    pc->ck_type = HD_CK_NONE;
    for (i = 0; i < r->nhdrs; i++) {
        enum hd_ck_type ct = hd_cksum_type_from_header(r->hdrs[i].k);
        if (ct == HD_CK_NONE)
            continue;
        if (pc->ck_type != HD_CK_NONE && pc->ck_type != ct)
            return HD_EBADARG; /* several different algorithms */
        pc->ck_type = ct;
        pc->ck_expect = r->hdrs[i].v;
    }
    if (trailer && *trailer) {
        enum hd_ck_type ct = hd_cksum_type_from_header(trailer);
        if (ct == HD_CK_NONE)
            return HD_EBADARG;
        if (pc->ck_type != HD_CK_NONE && pc->ck_type != ct)
            return HD_EBADARG;
        pc->ck_type = ct;
        pc->ck_trailer = 1;
    }
    if (pc->ck_type == HD_CK_NONE && algo && *algo) {
        pc->ck_type = hd_cksum_type_from_name(algo);
        if (pc->ck_type == HD_CK_NONE)
            return HD_EBADARG;
    }
    if (pc->ck_expect) {
        /* a value must at least be base64 of the right size */
        unsigned char raw[64];
        size_t n;
        if (hd_b64_decode(pc->ck_expect, strlen(pc->ck_expect), raw, sizeof(raw), &n) < 0)
            return HD_EINVALIDDIGEST;
    }
    if (pc->ck_type != HD_CK_NONE && hd_cksum_init(&pc->ck, pc->ck_type) < 0)
        return -ENOMEM;
    return 0;
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
    if ((rc = put_checksum_setup(r, pc)) < 0) {
        hd_resp_err_msg(r, rc,
                        rc == HD_EBADARG ? "Unsupported or conflicting x-amz-checksum "
                                           "algorithm headers."
                                         : NULL);
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
    (void)enc; /* aws-chunked framing is keyed off x-amz-content-sha256; the encoding is
                  stripped by not storing Content-Encoding */
    if ((rc = hd_collect_meta(r, &pc->meta)) < 0) {
        hd_resp_err(r, rc);
        return;
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
    if ((rc = hd_put_begin_sized(t->st, bucket, key,
                                 pc->decoded_len >= 0    ? (uint64_t)pc->decoded_len
                                 : r->content_length > 0 ? (uint64_t)r->content_length
                                                         : 0,
                                 &pc->put)) < 0) {
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
 * on a pool thread when the source lives on another target. */
struct copy {
    struct hd_target *t;
    char *sb, *sk, *bucket, *key;
    int replace;
    char *meta;  /* REPLACE: the request's x-amz-meta-* as JSON (or NULL) */
    char *ctype; /* REPLACE: the request's Content-Type (or NULL) */
    char *cond_v[4];
    struct hd_cond cond; /* x-amz-copy-source-if-*, pointing into cond_v */
    struct hd_obj_meta out;
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
    for (i = 0; i < 4; i++)
        free(c->cond_v[i]);
    hd_obj_meta_cleanup(&c->out);
    free(c);
}

static char *dup_or_null(const char *v, int *oom)
{
    char *d = v ? strdup(v) : NULL;

    if (v && !d)
        *oom = 1;
    return d;
}

/* The new object's attributes: the source's checksum, and its content type and metadata
 * (directive COPY) or the request's (REPLACE). Strings point into c or the source's. */
static void copy_attrs(const struct copy *c, const char *src_meta, const char *src_ctype,
                       const char *ck_type, const char *ck_val, struct hd_put_attrs *a)
{
    memset(a, 0, sizeof(*a));
    if (ck_type && ck_type[0]) {
        a->ck_type = ck_type;
        a->ck_val = ck_val;
    }
    a->meta = c->replace ? c->meta : src_meta;
    a->ctype = c->replace ? c->ctype : src_ctype;
}

/* The source from its owner, another target (pool thread): streams it into the new object. */
static void copy_remote_run(struct hd_acall *a)
{
    struct copy *c = a->arg;
    struct hd_put_attrs src, at;
    struct hd_put *p = NULL;
    char url[512], *xmeta = NULL, hex[33];
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
    copy_attrs(c, src.meta, src.ctype, src.ck_type, src.ck_val, &at);
    rc = hd_put_commit(p, &at, &c->out);
out:
    hd_put_free(p);
    json_decref(hold);
    free(xmeta);
    a->rc = rc;
}

static void copy_answer(struct hd_req *r, const struct hd_obj_meta *out)
{
    struct hd_buf b;
    char ts[32], etag[64];

    hd_buf_init(&b);
    hd_xml_decl(&b);
    hd_buf_puts(&b, "<CopyObjectResult xmlns=\"" HD_XML_S3_NS "\">");
    hd_iso8601_ms(out->mtime_ms, ts);
    hd_xml_elem(&b, "LastModified", ts);
    snprintf(etag, sizeof(etag), "\"%s\"", out->etag);
    hd_xml_elem(&b, "ETag", etag);
    hd_xml_close(&b, "CopyObjectResult");
    hd_resp_xml(r, 200, &b);
}

static void copy_remote_done(struct hd_req *r, struct hd_acall *a)
{
    struct copy *c = a->arg;

    if (a->rc < 0)
        hd_resp_err(r, a->rc);
    else
        copy_answer(r, &c->out);
}

/* The source held here (disk only: on the worker). HD_ENOSUCHKEY when it is not here. */
static int copy_local(struct copy *c)
{
    struct hd_obj_meta m;
    struct hd_put_attrs a;
    struct hd_put *p = NULL;
    int fd = -1, rc = hd_store_open_object(c->t->st, c->sb, c->sk, &m, &fd);

    if (rc < 0)
        return rc;
    rc = hd_cond_eval(&c->cond, m.etag, (time_t)(m.mtime_ms / 1000), 0);
    if (rc == HD_ENOTMODIFIED)
        rc = HD_EPRECONDITION;
    if (rc == 0) {
        copy_attrs(c, m.meta, m.ctype, m.ck_type, m.ck_val, &a);
        if ((rc = hd_put_begin(c->t->st, c->bucket, c->key, &p)) == 0 &&
            (rc = copy_content(p, fd, m.size)) == 0)
            rc = hd_put_commit(p, &a, &c->out);
    }
    hd_put_free(p);
    close(fd);
    hd_obj_meta_cleanup(&m);
    return rc;
}

/* The request's side of a copy (on the worker): c filled, or the error to answer with. */
static int copy_prepare(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                        struct copy *c, const char **msg)
{
    static const char *const hdrs[4] = {
        "x-amz-copy-source-if-match", "x-amz-copy-source-if-none-match",
        "x-amz-copy-source-if-modified-since", "x-amz-copy-source-if-unmodified-since"};
    const char *dir = hd_req_header(r, "x-amz-metadata-directive");
    struct hd_cbucket *cb;
    int oom = 0, rc, i;

    *msg = NULL;
    c->t = t;
    c->replace = dir && strcmp(dir, "REPLACE") == 0;
    if (dir && !c->replace && strcmp(dir, "COPY") != 0) {
        *msg = "Unknown metadata directive.";
        return HD_EBADARG;
    }
    if ((rc = hd_copy_source_parse(hd_req_header(r, "x-amz-copy-source"), &c->sb, &c->sk)) < 0) {
        *msg = "Invalid copy source (expected /bucket/key, url-encoded).";
        return rc;
    }
    if (!c->replace && strcmp(c->sb, bucket) == 0 && strcmp(c->sk, key) == 0) {
        *msg = "This copy request is illegal because it is trying to copy an object to itself "
               "without changing the object's metadata.";
        return HD_EBADREQ;
    }
    if ((cb = hd_cache_bucket(t->cache, bucket))) {
        hd_cbucket_unref(cb);
        *msg = "CopyObject into an S3-backed bucket is not supported yet; PUT the object "
               "instead.";
        return HD_ENOTIMPL;
    }
    if ((rc = hd_store_bucket_exists(t->st, bucket)) < 0 ||
        (rc = hd_store_bucket_exists(t->st, c->sb)) < 0)
        return rc;
    if (c->replace) {
        if ((rc = hd_collect_meta(r, &c->meta)) < 0)
            return rc;
        c->ctype = dup_or_null(hd_req_header(r, "Content-Type"), &oom);
    }
    for (i = 0; i < 4; i++)
        c->cond_v[i] = dup_or_null(hd_req_header(r, hdrs[i]), &oom);
    c->cond.if_match = c->cond_v[0];
    c->cond.if_none_match = c->cond_v[1];
    c->cond.if_modified_since = c->cond_v[2];
    c->cond.if_unmodified_since = c->cond_v[3];
    c->bucket = dup_or_null(bucket, &oom);
    c->key = dup_or_null(key, &oom);
    return oom ? -ENOMEM : 0;
}

void hd_obj_copy(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key)
{
    struct copy *c = calloc(1, sizeof(*c));
    const char *msg = NULL;
    char url[512];
    int rc;

    r->op = HD_OP_PUT;
    if (!c) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    if ((rc = copy_prepare(r, t, bucket, key, c, &msg)) < 0) {
        hd_resp_err_msg(r, rc, msg);
        copy_free(c);
        return;
    }
    rc = copy_local(c);
    if (rc == HD_ENOSUCHKEY &&
        hd_peer_owner_elsewhere(t->cl, c->sb, c->sk, url, sizeof(url)) != HD_ENOSUCHKEY) {
        /* in a cluster the source may live on another target: fetched on the pool */
        hd_acall_request(r, t->pool, copy_remote_run, copy_remote_done, c, copy_free);
        return;
    }
    if (rc < 0)
        hd_resp_err(r, rc);
    else
        copy_answer(r, &c->out);
    copy_free(c);
}
