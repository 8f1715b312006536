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
#include "target/object/archive.h"

#define PUT_MAGIC 0x70757463u

char *hd_obj_meta_json(const struct hd_obj_meta *m)
{
    json_t *j = json_pack("{s:s, s:I, s:s, s:s}", "etag", m->etag, "mtime_ms",
                          (json_int_t)m->mtime_ms, "ck_type", m->ck_type, "ck_val", m->ck_val);
    char *s;

    if (!j)
        return NULL;
    if (m->ctype)
        json_object_set_new(j, "ctype", json_string(m->ctype));
    if (m->meta)
        json_object_set_new(j, "meta", json_loads(m->meta, 0, NULL));
    s = json_dumps(j, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(j);
    return s;
}

int hd_obj_meta_attrs(const char *text, struct hd_put_attrs *a, json_t **hold)
{
    json_t *j = json_loads(text, 0, NULL), *meta;
    json_t *mt;

    *hold = NULL;
    if (!json_is_object(j) || !json_is_string(json_object_get(j, "etag")) ||
        !json_is_integer(mt = json_object_get(j, "mtime_ms"))) {
        json_decref(j);
        return HD_EBADHEADER;
    }
    memset(a, 0, sizeof(*a));
    a->etag = json_string_value(json_object_get(j, "etag"));
    a->mtime_ms = (int64_t)json_integer_value(mt);
    a->ck_type = json_string_value(json_object_get(j, "ck_type"));
    a->ck_val = json_string_value(json_object_get(j, "ck_val"));
    a->ctype = json_string_value(json_object_get(j, "ctype"));
    meta = json_object_get(j, "meta");
    if (json_is_object(meta)) {
        char *mtext = json_dumps(meta, JSON_COMPACT);
        json_object_set_new(j, "_meta_text", json_string(mtext ? mtext : "{}"));
        free(mtext);
        a->meta = json_string_value(json_object_get(j, "_meta_text"));
    }
    a->keep_newer = 1;
    *hold = j;
    return 0;
}

void hd_obj_meta_headers(struct hd_req *r, const char *meta)
{
    json_t *j;
    const char *k;
    json_t *v;
    char name[300];

    if (!meta)
        return;
    j = json_loads(meta, 0, NULL);
    if (!j)
        return;
    json_object_foreach(j, k, v)
    {
        if (!json_is_string(v))
            continue;
        snprintf(name, sizeof(name), "x-amz-meta-%s", k);
        hd_resp_header(r, name, json_string_value(v));
    }
    json_decref(j);
}

static void add_object_headers(struct hd_req *r, const struct hd_obj_meta *m)
{
    char v[64], date[32];

    snprintf(v, sizeof(v), "\"%s\"", m->etag);
    hd_resp_header(r, "ETag", v);
    hd_http_date_format((time_t)(m->mtime_ms / 1000), date);
    hd_resp_header(r, "Last-Modified", date);
    hd_resp_header(r, "Accept-Ranges", "bytes");
    hd_obj_meta_headers(r, m->meta);
}

void hd_obj_get(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                int head)
{
    struct hd_obj_meta m;
    struct hd_cbucket *cb;
    int fd = -1, rc, shared;

    r->op = head ? HD_OP_HEAD : HD_OP_GET;
    if ((rc = hd_store_bucket_exists(t->st, bucket)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    /* S3-backed: warm or cold; another node probing for a local copy gets only that */
    if (!(r->trusted == HD_TRUST_NODE && hd_req_header(r, "X-Hoard-Local")) &&
        (cb = hd_cache_bucket(t->cache, bucket))) {
        hd_cache_obj_get(r, t, cb, key, head);
        hd_cbucket_unref(cb);
        return;
    }
    /* a plain GET reads at most HD_STORE_SHARED_MAX bytes with pread (hd_resp_fd's small
     * path) or sends a description of its own: the row cache's descriptor will do */
    shared = !hd_arch_wanted(r);
    if (head)
        rc = hd_store_lookup(t->st, bucket, key, &m);
    else if (shared)
        rc = hd_store_open_object_shared(t->st, bucket, key, &m, &fd);
    else
        rc = hd_store_open_object(t->st, bucket, key, &m, &fd);
    if (rc == HD_ENOSUCHKEY && !hd_req_header(r, "X-Hoard-Local")) {
        /* While the cluster map changes another target may hold it (gfn copies it here), or
         * its old owner may have pushed it here since the miss above and dropped its own copy,
         * so that gfn finds none: look again either way. */
        hd_rebalance_gfn(t, bucket, key);
        rc = head     ? hd_store_lookup(t->st, bucket, key, &m)
             : shared ? hd_store_open_object_shared(t->st, bucket, key, &m, &fd)
                      : hd_store_open_object(t->st, bucket, key, &m, &fd);
    }
    if (rc < 0) {
        hd_resp_err(r, rc);
        return;
    }
    if (hd_arch_wanted(r)) { /* a member of a tar object, or its member list */
        hd_arch_serve(r, t, bucket, key, &m, &fd, head);
        if (fd >= 0)
            close(fd);
        hd_obj_meta_cleanup(&m);
        return;
    }
    hd_obj_serve(r, &m, fd, head);
    hd_obj_meta_cleanup(&m);
}

void hd_obj_serve(struct hd_req *r, const struct hd_obj_meta *mp, int fd, int head)
{
    const struct hd_obj_meta m = *mp;
    struct hd_cond cond;
    uint64_t off = 0, len;
    int rc, status = 200;
    const char *mode;

    if (r->trusted == HD_TRUST_NODE) { /* another node moving or copying it */
        char *xm = hd_obj_meta_json(&m);
        if (xm)
            hd_resp_header(r, "X-Hoard-Obj-Meta", xm);
        free(xm);
    }
    cond.if_match = hd_req_header(r, "If-Match");
    cond.if_none_match = hd_req_header(r, "If-None-Match");
    cond.if_modified_since = hd_req_header(r, "If-Modified-Since");
    cond.if_unmodified_since = hd_req_header(r, "If-Unmodified-Since");
    rc = hd_cond_eval(&cond, m.etag, (time_t)(m.mtime_ms / 1000), 1);
    if (rc == HD_ENOTMODIFIED) {
        char v[64], date[32];
        snprintf(v, sizeof(v), "\"%s\"", m.etag);
        hd_resp_header(r, "ETag", v);
        hd_http_date_format((time_t)(m.mtime_ms / 1000), date);
        hd_resp_header(r, "Last-Modified", date);
        hd_resp_empty(r, 304);
        goto out;
    }
    if (rc < 0) {
        hd_resp_err(r, rc);
        goto out;
    }
    len = m.size;
    status = hd_resp_range(r, m.size, &off, &len);
    if (status < 0)
        goto out;
    add_object_headers(r, &m);
    hd_resp_header(r, "Content-Type", m.ctype ? m.ctype : "application/octet-stream");
    /* A stored checksum describes the whole object: echo it only when the whole object is
     * served (botocore validates what it receives). */
    mode = hd_req_header(r, "x-amz-checksum-mode");
    if (m.ck_type[0] && status == 200 && mode && strcasecmp(mode, "ENABLED") == 0) {
        enum hd_ck_type ct = hd_cksum_type_from_name(m.ck_type);
        if (ct != HD_CK_NONE)
            hd_resp_header(r, hd_cksum_header(ct), m.ck_val);
    }
    if (head) {
        hd_resp_head(r, status, len);
    } else if (hd_resp_fd(r, status, fd, off, len) == 0) {
        fd = -1; /* the response owns it */
        hd_stats_add(HD_ST_GET_BYTES, len);
    } else {
        hd_resp_err(r, HD_EINTERNAL);
    }
out:
    if (fd >= 0)
        close(fd);
}

void hd_obj_delete(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                   int quiet_missing)
{
    int rc;

    r->op = HD_OP_DELETE;
    if ((rc = hd_store_bucket_exists(t->st, bucket)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    {
        struct hd_cbucket *cb = hd_cache_bucket(t->cache, bucket);
        if (cb) { /* S3-backed: the upstream first */
            hd_cache_obj_delete(r, t, cb, key);
            hd_cbucket_unref(cb);
            return;
        }
    }
    rc = hd_store_delete(t->st, bucket, key);
    if (!(r->trusted == HD_TRUST_NODE && hd_req_header(r, "X-Hoard-Local")) &&
        hd_rebalance_delete_elsewhere(t, bucket, key) > 0 && rc == HD_ENOSUCHKEY)
        rc = 0; /* it had not moved here yet */
    if (rc == HD_ENOSUCHKEY && quiet_missing)
        rc = 0; /* S3: deleting a missing key succeeds */
    if (rc < 0)
        hd_resp_err(r, rc);
    else
        hd_resp_empty(r, 204);
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
        if (hd_rebalance_deleted_since(pc->t, hd_put_bucket(pc->put), hd_put_name(pc->put),
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
        rc = hd_cache_put_through(r, pc->t, pc->cb, pc->key, pc->put, 1, pc->ctype, pc->meta,
                                  &pc->wt, uetag, msg, sizeof(msg));
        if (rc == 1)
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

/* x-amz-meta-* headers as a JSON object keyed by the lowercase suffix. */
int hd_collect_meta(struct hd_req *r, char **out)
{
    json_t *j = json_object();
    size_t i, total = 0;
    char name[256];

    *out = NULL;
    if (!j)
        return -ENOMEM;
    for (i = 0; i < r->nhdrs; i++) {
        const char *k = r->hdrs[i].k;
        size_t n, c;
        if (strncasecmp(k, "x-amz-meta-", 11) != 0)
            continue;
        n = strlen(k + 11);
        total += n + strlen(r->hdrs[i].v);
        if (n == 0 || n >= sizeof(name) || total > 2048) {
            json_decref(j);
            return n == 0 ? HD_EBADHEADER : HD_EMETATOOLARGE;
        }
        for (c = 0; c <= n; c++)
            name[c] = (char)tolower((unsigned char)k[11 + c]);
        json_t *v = json_string(r->hdrs[i].v);
        if (!v) { /* not UTF-8 */
            json_decref(j);
            return HD_EBADHEADER;
        }
        json_object_set_new(j, name, v);
    }
    if (json_object_size(j) == 0) {
        json_decref(j);
        return 0;
    }
    *out = hd_json_dump_steal(j, NULL);
    return *out ? 0 : -ENOMEM;
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

/* The new object's attributes: the source's checksum, and its content type and metadata
 * (directive COPY) or the request's (REPLACE; *meta is then malloc'd, the caller frees). */
static int copy_attrs(struct hd_req *r, int replace, const char *src_meta, const char *src_ctype,
                      const char *ck_type, const char *ck_val, struct hd_put_attrs *a, char **meta)
{
    int rc;

    memset(a, 0, sizeof(*a));
    if (ck_type && ck_type[0]) {
        a->ck_type = ck_type;
        a->ck_val = ck_val;
    }
    if (!replace) {
        a->meta = src_meta;
        a->ctype = src_ctype;
        return 0;
    }
    if ((rc = hd_collect_meta(r, meta)) < 0)
        return rc;
    a->meta = *meta;
    a->ctype = hd_req_header(r, "Content-Type");
    return 0;
}

/* CopyObject whose source another target owns: streams it from there into the new object.
 * 0 done (*out filled), 1 answered with an error, HD_ENOSUCHKEY when no other target owns
 * the source (standalone, or we are its owner). */
static int copy_from_owner(struct hd_req *r, struct hd_target *t, const char *sb, const char *sk,
                           const char *bucket, const char *key, int replace,
                           const struct hd_cond *cond, struct hd_obj_meta *out)
{
    char url[512], *xmeta = NULL, *meta = NULL, hex[33];
    struct hd_put_attrs src, a;
    struct hd_put *p = NULL;
    unsigned char md5[16];
    json_t *hold = NULL;
    int rc = hd_node_owner_elsewhere(t, sb, sk, url, sizeof(url));

    if (rc == HD_ENOSUCHKEY)
        return rc;
    if (rc < 0)
        goto fail;
    if ((rc = hd_put_begin(t->st, bucket, key, &p)) < 0 ||
        (rc = hd_node_get_into(t, url, sb, sk, 0, cond, p, &xmeta)) < 0 ||
        (rc = hd_obj_meta_attrs(xmeta, &src, &hold)) < 0)
        goto fail;
    hd_put_md5(p, md5);
    hd_hex(md5, 16, hex);
    if (!strchr(src.etag, '-') && strcmp(src.etag, hex) != 0) {
        rc = HD_EBADDIGEST;
        goto fail;
    }
    if ((rc = copy_attrs(r, replace, src.meta, src.ctype, src.ck_type, src.ck_val, &a, &meta)) < 0)
        goto fail;
    if ((rc = hd_put_commit(p, &a, out)) < 0)
        goto fail;
    rc = 0;
    goto out;
fail:
    hd_resp_err(r, rc);
    rc = 1;
out:
    hd_put_free(p);
    json_decref(hold);
    free(xmeta);
    free(meta);
    return rc;
}

void hd_obj_copy(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key)
{
    const char *dir = hd_req_header(r, "x-amz-metadata-directive");
    int replace = dir && strcmp(dir, "REPLACE") == 0;
    char *sb = NULL, *sk = NULL, *meta = NULL, ts[32], etag[64];
    struct hd_obj_meta m, out;
    struct hd_put_attrs a;
    struct hd_put *p = NULL;
    struct hd_cond cond;
    struct hd_buf b;
    int fd = -1, rc;

    r->op = HD_OP_PUT;
    memset(&m, 0, sizeof(m));
    if (dir && !replace && strcmp(dir, "COPY") != 0) {
        hd_resp_err_msg(r, HD_EBADARG, "Unknown metadata directive.");
        return;
    }
    if ((rc = hd_copy_source_parse(hd_req_header(r, "x-amz-copy-source"), &sb, &sk)) < 0) {
        hd_resp_err_msg(r, rc, "Invalid copy source (expected /bucket/key, url-encoded).");
        return;
    }
    if (!replace && strcmp(sb, bucket) == 0 && strcmp(sk, key) == 0) {
        hd_resp_err_msg(r, HD_EBADREQ,
                        "This copy request is illegal because it is trying to copy an object "
                        "to itself without changing the object's metadata.");
        goto out;
    }
    {
        struct hd_cbucket *cb = hd_cache_bucket(t->cache, bucket);
        hd_cbucket_unref(cb);
        if (cb) {
            hd_resp_err_msg(r, HD_ENOTIMPL,
                            "CopyObject into an S3-backed bucket is not "
                            "supported yet; PUT the object instead.");
            goto out;
        }
    }
    cond.if_match = hd_req_header(r, "x-amz-copy-source-if-match");
    cond.if_none_match = hd_req_header(r, "x-amz-copy-source-if-none-match");
    cond.if_modified_since = hd_req_header(r, "x-amz-copy-source-if-modified-since");
    cond.if_unmodified_since = hd_req_header(r, "x-amz-copy-source-if-unmodified-since");
    if ((rc = hd_store_bucket_exists(t->st, bucket)) < 0 ||
        (rc = hd_store_bucket_exists(t->st, sb)) < 0) {
        hd_resp_err(r, rc);
        goto out;
    }
    rc = hd_store_open_object(t->st, sb, sk, &m, &fd);
    if (rc == HD_ENOSUCHKEY) { /* in a cluster the source may live on another target */
        rc = copy_from_owner(r, t, sb, sk, bucket, key, replace, &cond, &out);
        if (rc == 1)
            goto out; /* answered */
        if (rc == 0)
            goto done;
        rc = HD_ENOSUCHKEY;
    }
    if (rc < 0) {
        hd_resp_err(r, rc);
        goto out;
    }
    rc = hd_cond_eval(&cond, m.etag, (time_t)(m.mtime_ms / 1000), 0);
    if (rc < 0) {
        hd_resp_err(r, rc == HD_ENOTMODIFIED ? HD_EPRECONDITION : rc);
        goto out;
    }
    if ((rc = copy_attrs(r, replace, m.meta, m.ctype, m.ck_type, m.ck_val, &a, &meta)) < 0) {
        hd_resp_err(r, rc);
        goto out;
    }
    if ((rc = hd_put_begin(t->st, bucket, key, &p)) < 0 || (rc = copy_content(p, fd, m.size)) < 0 ||
        (rc = hd_put_commit(p, &a, &out)) < 0) {
        hd_resp_err(r, rc);
        goto out;
    }
done:
    hd_buf_init(&b);
    hd_xml_decl(&b);
    hd_buf_puts(&b, "<CopyObjectResult xmlns=\"" HD_XML_S3_NS "\">");
    hd_iso8601_ms(out.mtime_ms, ts);
    hd_xml_elem(&b, "LastModified", ts);
    snprintf(etag, sizeof(etag), "\"%s\"", out.etag);
    hd_xml_elem(&b, "ETag", etag);
    hd_xml_close(&b, "CopyObjectResult");
    if (b.oom) {
        hd_buf_cleanup(&b);
        hd_resp_err(r, -ENOMEM);
    } else {
        size_t len;
        char *body = hd_buf_steal(&b, &len);
        hd_resp_buf(r, 200, "application/xml", body, len);
    }
out:
    hd_put_free(p);
    if (fd >= 0)
        close(fd);
    hd_obj_meta_cleanup(&m);
    free(meta);
    free(sb);
    free(sk);
}
