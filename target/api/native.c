/* native: hoard's /v1 API on a target (AIStore-style URLs, JSON bodies). */
#include "target/api/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/cksum.h"
#include "common/errors.h"
#include "common/json.h"
#include "common/metrics.h"
#include "target/api/mpu.h"

static void list_buckets(struct hd_req *r, struct hd_target *t)
{
    struct hd_bucket_info *b;
    size_t n, i;
    json_t *arr;
    char ts[32];

    if (hd_store_bucket_list(t->st, &b, &n) < 0) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    arr = json_array();
    for (i = 0; i < n; i++) {
        hd_iso8601((time_t)b[i].created, ts);
        json_array_append_new(arr, json_pack("{s:s, s:s, s:s}", "name", b[i].name, "provider",
                                             b[i].provider, "created", ts));
    }
    free(b);
    hd_resp_json(r, 200, json_pack("{s:o}", "buckets", arr));
}

static void list_objects(struct hd_req *r, struct hd_target *t, const char *bucket)
{
    struct hd_list_opts o;
    struct hd_list_res res;
    const char *lim = hd_req_param(r, "limit");
    const char *tok = hd_req_param(r, "token");
    uint64_t limit = 1000;
    unsigned char raw[1100];
    char *after = NULL, ts[32];
    size_t i, n;
    json_t *ents, *pfx, *j;
    int rc;

    if (lim && (hd_parse_u64(lim, &limit) < 0 || limit == 0 || limit > 10000)) {
        hd_resp_err_msg(r, HD_EBADARG, "limit must be an integer in 1..10000.");
        return;
    }
    if (tok && *tok) {
        if (hd_b64_decode(tok, strlen(tok), raw, sizeof(raw) - 1, &n) < 0 || n == 0) {
            hd_resp_err(r, HD_EBADTOKEN);
            return;
        }
        raw[n] = '\0';
        after = (char *)raw;
    }
    memset(&o, 0, sizeof(o));
    o.prefix = hd_req_param(r, "prefix");
    o.delimiter = hd_req_param(r, "delimiter");
    o.start_after = after;
    o.max = (size_t)limit;
    if ((rc = hd_store_list(t->st, bucket, &o, &res)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    ents = json_array();
    pfx = json_array();
    for (i = 0; i < res.nents; i++) {
        json_t *e;
        hd_iso8601_ms(res.ents[i].mtime_ms, ts);
        e = json_pack("{s:s, s:I, s:s, s:s}", "name", res.ents[i].name, "size",
                      (json_int_t)res.ents[i].size, "etag", res.ents[i].etag, "mtime", ts);
        if (e && res.ents[i].sclass[0])
            json_object_set_new(e, "storage_class", json_string(res.ents[i].sclass));
        json_array_append_new(ents, e);
    }
    for (i = 0; i < res.nprefixes; i++)
        json_array_append_new(pfx, json_string(res.prefixes[i]));
    j = json_pack("{s:o, s:o}", "entries", ents, "prefixes", pfx);
    if (res.truncated && res.last) {
        char t64[1500];
        hd_b64_encode((const unsigned char *)res.last, strlen(res.last), t64, sizeof(t64));
        json_object_set_new(j, "continuation_token", json_string(t64));
    }
    hd_list_res_cleanup(&res);
    hd_resp_json(r, 200, j);
}

/* PATCH /v1/buckets/B {"anonymous_read": true}: bucket properties. */
struct props_ctx {
    struct hd_target *t;
    char bucket[64];
};

static void props_end(struct hd_req *r, void *ctx, const char *body, size_t len)
{
    struct props_ctx *c = ctx;
    char msg[200] = "";
    int rc = body && len ? hd_store_bucket_patch_props(c->t->st, c->bucket, body, msg, sizeof(msg))
                         : HD_EBADARG;

    if (rc == HD_EBADARG)
        hd_resp_err_msg(r, rc,
                        msg[0] ? msg : "Expected a JSON object like {\"anonymous_read\": true}.");
    else if (rc < 0)
        hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
    else
        hd_resp_empty(r, 200);
}

static void props_get(struct hd_req *r, struct hd_target *t, const char *bucket)
{
    struct hd_bucket_info bi;
    char ts[32], *text = NULL;
    json_t *props;
    int rc;

    if ((rc = hd_store_bucket_get(t->st, bucket, &bi)) < 0 ||
        (rc = hd_store_bucket_props(t->st, bucket, &text)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    props = text && *text ? json_loads(text, 0, NULL) : json_object(); /* every property */
    free(text);
    if (!json_is_object(props)) {
        json_decref(props);
        props = json_object();
    }
    json_object_set_new(props, "anonymous_read", json_boolean(bi.anonymous_read));
    hd_iso8601((time_t)bi.created, ts);
    hd_resp_json(r, 200,
                 json_pack("{s:s, s:s, s:s, s:o}", "name", bi.name, "provider", bi.provider,
                           "created", ts, "props", props));
}

/* GET /v1/buckets/B?summary: this target's objects and bytes of B, per mountpath
 * ({"bucket","objects","bytes","mountpaths":[{"path","objects","bytes"}]}); a proxy sums the
 * targets' answers (proxy/api/buckets.c). */
static void summary_get(struct hd_req *r, struct hd_target *t, const char *bucket)
{
    uint64_t objs = 0, bytes = 0, o, b;
    json_t *mps = json_array(), *j;
    size_t i;
    int rc;

    if ((rc = hd_store_bucket_exists(t->st, bucket)) < 0) {
        json_decref(mps);
        hd_resp_err(r, rc);
        return;
    }
    for (i = 0; i < hd_store_nmp(t->st); i++) {
        if ((rc = hd_store_mp_bucket_usage(t->st, i, bucket, &o, &b)) < 0) {
            json_decref(mps);
            hd_resp_err(r, rc);
            return;
        }
        json_array_append_new(mps, json_pack("{s:s, s:I, s:I}", "path", hd_store_mp_path(t->st, i),
                                             "objects", (json_int_t)o, "bytes", (json_int_t)b));
        objs += o;
        bytes += b;
    }
    j = json_pack("{s:s, s:I, s:I, s:o}", "bucket", bucket, "objects", (json_int_t)objs, "bytes",
                  (json_int_t)bytes, "mountpaths", mps);
    hd_resp_json(r, 200, j);
}

/* The calls of /v1/buckets/B, told apart before authentication, so that an unsigned caller of
 * a public bucket gets the listing ones only (bucket_pub). */
enum bucket_call {
    BC_PROPS,     /* GET ?props */
    BC_SUMMARY,   /* GET ?summary */
    BC_UPLOADS,   /* GET ?uploads: the multipart uploads in progress */
    BC_WRITEBACK, /* GET ?writeback: this target's queue (a proxy sums them) */
    BC_UPSTREAM,  /* GET ?upstream: the upstream's listing (proxy/cloud.c asks) */
    BC_LIST,      /* GET */
    BC_HEAD,      /* HEAD */
    BC_PATCH,     /* PATCH: props */
    BC_CREATE,    /* POST, PUT */
    BC_DESTROY,   /* DELETE */
    BC_BAD,
};

static enum bucket_call bucket_call_of(const struct hd_req *r)
{
    const char *m = r->method;

    if (strcmp(m, "GET") == 0)
        return hd_query_find(&r->query, "props")       ? BC_PROPS
               : hd_query_find(&r->query, "summary")   ? BC_SUMMARY
               : hd_query_find(&r->query, "uploads")   ? BC_UPLOADS
               : hd_query_find(&r->query, "writeback") ? BC_WRITEBACK
               : hd_query_find(&r->query, "upstream")  ? BC_UPSTREAM
                                                       : BC_LIST;
    return strcmp(m, "HEAD") == 0                            ? BC_HEAD
           : strcmp(m, "PATCH") == 0                         ? BC_PATCH
           : strcmp(m, "POST") == 0 || strcmp(m, "PUT") == 0 ? BC_CREATE
           : strcmp(m, "DELETE") == 0                        ? BC_DESTROY
                                                             : BC_BAD;
}

/* as S3's READ grant: ListObjects, HeadBucket; ListMultipartUploads (not a policy's
 * s3:ListBucket) */
static int bucket_pub(enum bucket_call c)
{
    return c == BC_LIST || c == BC_HEAD ? HD_PUB_LIST
           : c == BC_UPLOADS            ? HD_PUB_LIST_MORE
                                        : HD_PUB_NONE;
}

static void bucket_op(struct hd_req *r, struct hd_target *t, const char *bucket, enum bucket_call c)
{
    struct hd_cbucket *cb;
    struct props_ctx *pc;
    json_t *st = NULL;
    int rc;

    r->op = HD_OP_BUCKET;
    /* a proxy's fan-out (summary, write-back queue, uploads): HD_NODE_CAP_SIGNED_BUCKETS */
    if (r->trusted == HD_TRUST_NODE && hd_tcluster_from_proxy(t->cl, r))
        hd_tcluster_sign_answers(t->cl, r);
    switch (c) {
    case BC_PROPS:
        props_get(r, t, bucket);
        break;
    case BC_SUMMARY:
        summary_get(r, t, bucket);
        break;
    case BC_UPLOADS:
        hd_mpu_list_uploads_json(r, t, bucket);
        break;
    case BC_PATCH:
        if (!(pc = calloc(1, sizeof(*pc)))) {
            hd_resp_err(r, -ENOMEM);
            return;
        }
        pc->t = t;
        snprintf(pc->bucket, sizeof(pc->bucket), "%s", bucket);
        hd_req_read_body(r, (size_t)64 * 1024, props_end, pc, free);
        break;
    case BC_WRITEBACK: /* this target's write-back queue for the bucket (proxy sums) */
        if ((rc = hd_store_bucket_exists(t->st, bucket)) < 0 ||
            (rc = hd_cache_wb_status(t->cache, bucket, &st)) < 0)
            hd_resp_err(r, rc);
        else
            hd_resp_json(r, 200, st);
        break;
    case BC_UPSTREAM:
        if ((cb = hd_cache_bucket(t->cache, bucket)))
            hd_cache_list_upstream(r, t->cache, cb);
        else
            hd_resp_err_msg(r, HD_EBADARG, "Not an S3-backed bucket.");
        hd_cbucket_unref(cb);
        break;
    case BC_LIST:
        r->op = HD_OP_LIST;
        list_objects(r, t, bucket);
        break;
    case BC_HEAD:
        rc = hd_store_bucket_exists(t->st, bucket);
        rc < 0 ? hd_resp_err(r, rc) : hd_resp_empty(r, 200);
        break;
    case BC_CREATE:
        if ((rc = hd_bucket_name_check(bucket)) < 0 ||
            (rc = hd_store_bucket_create(t->st, bucket, "ais")) < 0)
            hd_resp_err(r, rc);
        else
            hd_resp_empty(r, 201);
        break;
    case BC_DESTROY:
        rc = hd_store_bucket_delete(t->st, bucket);
        rc < 0 ? hd_resp_err(r, rc) : hd_resp_empty(r, 204);
        break;
    default:
        hd_resp_err(r, HD_EMETHOD);
    }
}

/* Splits "B/O" (raw, percent-encoded) after a route prefix into decoded bucket and key. */
static int split_bucket_key(const char *rest, char **bucket, char **key, size_t *klen)
{
    const char *slash = strchr(rest, '/');
    size_t blen = slash ? (size_t)(slash - rest) : strlen(rest);
    int rc;

    *bucket = *key = NULL;
    if ((rc = hd_bucket_decode(rest, blen, bucket)) < 0)
        return rc;
    if (slash && (rc = hd_url_decode_dup(slash + 1, strlen(slash + 1), key, klen)) < 0) {
        free(*bucket);
        *bucket = NULL;
        return rc;
    }
    return 0;
}

/* Same credentials and permissions as the S3 API (SigV4 header or presigned URL), when
 * auth.keys is set: curl --aws-sigv4 works against /v1 as well. */
static int native_auth(struct hd_req *r, struct hd_target *t, const char *bucket,
                       struct hd_sigv4_auth *a, int *signed_req)
{
    int rc = hd_target_authenticate(r, t, a);

    if (rc < 0)
        return rc;
    *signed_req = !a->anonymous;
    return hd_target_authorize(r, t, a, bucket);
}

/* A copy the proxy authorised (AIStore's Object.copy(), proxy/api/ais.c): the source in
 * object_from is bound to the proxy's signature, so only a proxy's request may name one. */
static void native_copy(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key)
{
    if (!r->trusted) {
        hd_resp_err_msg(r, HD_EACCESS,
                        "object_from: only a proxy's redirect may name a copy "
                        "source; send Object.copy() to a proxy.");
        return;
    }
    hd_obj_copy_from(r, t, bucket, key, hd_req_param(r, "object_from"));
}

/* AIStore's native multipart upload (obj/multipart_upload.py) on hoard's uploads (mpu.c):
 * POST (mpt-upload, which the proxy checked and sends without its body) creates, PUT
 * ?uploadId&partNumber uploads a part, POST ?uploadId completes (the mpt-complete message),
 * DELETE ?uploadId aborts. */
static void native_mpu(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                       const struct hd_sigv4_auth *a)
{
    int has_id = hd_query_find(&r->query, "uploadId") != NULL;

    if (strcmp(r->method, "PUT") == 0)
        hd_mpu_upload_part(r, t, bucket, key, a);
    else if (strcmp(r->method, "POST") == 0 && has_id)
        hd_mpu_complete(r, t, bucket, key);
    else if (strcmp(r->method, "POST") == 0)
        hd_mpu_create(r, t, bucket, key);
    else if (strcmp(r->method, "DELETE") == 0 && has_id)
        hd_mpu_abort(r, t, bucket, key);
    else
        hd_resp_err_msg(r, HD_ENOTIMPL,
                        "uploadId/partNumber: PUT a part, POST completes, DELETE aborts "
                        "(docs/aistore-compat.md).");
}

void hd_native_handle(struct hd_req *r, struct hd_target *t)
{
    const char *p = r->raw_path;
    char *bucket = NULL, *key = NULL;
    enum bucket_call c;
    struct hd_sigv4_auth a;
    size_t klen = 0;
    int rc, sig = 0;

    r->api = HD_API_NATIVE;
    if (strcmp(p, "/v1/buckets") == 0 || strcmp(p, "/v1/buckets/") == 0) {
        r->op = HD_OP_BUCKET;
        if ((rc = native_auth(r, t, NULL, &a, &sig)) < 0)
            hd_resp_err(r, rc);
        else if (strcmp(r->method, "GET") == 0)
            list_buckets(r, t);
        else
            hd_resp_err(r, HD_EMETHOD);
        return;
    }
    if (strncmp(p, "/v1/buckets/", 12) == 0) {
        if ((rc = split_bucket_key(p + 12, &bucket, &key, &klen)) < 0 || key) {
            hd_resp_err(r, rc < 0 ? rc : HD_ENOTFOUND);
            goto out;
        }
        c = bucket_call_of(r);
        r->pub = bucket_pub(c);
        r->policy_call = c == BC_PROPS; /* a read of the settings (a PATCH is not) */
        if ((rc = native_auth(r, t, bucket, &a, &sig)) < 0) {
            hd_resp_err(r, rc);
            goto out;
        }
        bucket_op(r, t, bucket, c);
        goto out;
    }
    if (strncmp(p, "/v1/objects/", 12) == 0) {
        if ((rc = split_bucket_key(p + 12, &bucket, &key, &klen)) < 0) {
            hd_resp_err(r, rc);
            goto out;
        }
        if (!key || !*bucket) {
            hd_resp_err_msg(r, HD_EBADKEY, "Expected /v1/objects/BUCKET/OBJECT.");
            goto out;
        }
        r->pub = hd_keys_native_object_pub(r); /* the reads; routes them too */
        r->pub_key = key;
        rc = native_auth(r, t, bucket, &a, &sig);
        r->pub_key = NULL;
        if (rc < 0) {
            hd_resp_err(r, rc);
            goto out;
        }
        if ((rc = hd_object_name_check(key, klen)) < 0) {
            hd_resp_err(r, rc);
            goto out;
        }
        if (r->pub == HD_PUB_READ)
            hd_obj_get(r, t, bucket, key, r->method[0] == 'H');
        else if (hd_query_find(&r->query, "uploadId") || hd_query_find(&r->query, "partNumber") ||
                 strcmp(r->method, "POST") == 0)
            native_mpu(r, t, bucket, key, sig ? &a : NULL);
        else if (strcmp(r->method, "PUT") == 0 && hd_query_find(&r->query, "append_type"))
            hd_target_append(r, t, bucket, key);
        else if (strcmp(r->method, "PUT") == 0 && hd_query_find(&r->query, "object_from"))
            native_copy(r, t, bucket, key);
        else if (strcmp(r->method, "PUT") == 0)
            hd_obj_put(r, t, bucket, key, sig ? &a : NULL);
        else if (strcmp(r->method, "DELETE") == 0)
            hd_obj_delete(r, t, bucket, key, 0);
        else if (strcmp(r->method, "PATCH") == 0)
            hd_target_custom_md(r, t, bucket, key);
        else
            hd_resp_err(r, HD_EMETHOD);
        goto out;
    }
    hd_resp_err(r, HD_ENOTFOUND);
out:
    free(bucket);
    free(key);
}
