/* s3: the S3 REST API on a target (path style at "/" and "/s3/"): SigV4 auth, bucket calls
 * with XML bodies, and object calls through objops. */
#include "target/api/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/cksum.h"
#include "common/errors.h"
#include "common/json.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/xml.h"
#include "target/api/mpu.h"

#define S3NS HD_XML_S3_NS

/* Virtual-host style: Host "BUCKET.<s3.domain>[:port]" -> "/BUCKET" + path (heap). */
static char *vhost_path(struct hd_req *r, struct hd_target *t, const char *path)
{
    if (r->trusted == HD_TRUST_NODE) {
        /* a proxy read the Host already (its s3.domain, not ours) and said what it found,
         * under its signature (target/cluster.c) */
        const char *vh = hd_req_header(r, "X-Hoard-Vhost");
        struct hd_buf b;
        if (!vh)
            return NULL;
        hd_buf_init(&b);
        hd_buf_printf(&b, "/%s%s", vh, path);
        return b.oom ? (hd_buf_cleanup(&b), NULL) : hd_buf_steal(&b, NULL);
    }
    return hd_s3_vhost_path(hd_req_header(r, "Host"), t->domain, path);
}

static void list_buckets(struct hd_req *r, struct hd_target *t, const char *owner)
{
    struct hd_bucket_info *bk;
    struct hd_buf b;
    size_t n, i;
    char ts[32];

    r->op = HD_OP_BUCKET;
    if (hd_store_bucket_list(t->st, &bk, &n) < 0) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    hd_buf_init(&b);
    hd_xml_decl(&b);
    hd_buf_puts(&b, "<ListAllMyBucketsResult xmlns=\"" S3NS "\">");
    hd_xml_open(&b, "Owner");
    hd_xml_elem(&b, "ID", owner);
    hd_xml_elem(&b, "DisplayName", owner);
    hd_xml_close(&b, "Owner");
    hd_xml_open(&b, "Buckets");
    for (i = 0; i < n; i++) {
        hd_xml_open(&b, "Bucket");
        hd_xml_elem(&b, "Name", bk[i].name);
        hd_iso8601_ms(bk[i].created * 1000, ts);
        hd_xml_elem(&b, "CreationDate", ts);
        hd_xml_close(&b, "Bucket");
    }
    hd_xml_close(&b, "Buckets");
    hd_xml_close(&b, "ListAllMyBucketsResult");
    free(bk);
    hd_resp_xml(r, 200, &b);
}

/* mode 1: ListObjects, 2: ListObjectsV2, 3: ListObjectVersions (every object is version
 * "null", the latest). */
static void list_objects(struct hd_req *r, struct hd_target *t, const char *bucket, int mode,
                         const char *owner)
{
    int v2 = mode == 2, vers = mode == 3;
    const char *prefix = hd_req_param(r, "prefix");
    const char *delim = hd_req_param(r, "delimiter");
    const char *mk = hd_req_param(r, "max-keys");
    const char *enc = hd_req_param(r, "encoding-type");
    const char *marker = v2 ? NULL : hd_req_param(r, vers ? "key-marker" : "marker");
    const char *ctok = v2 ? hd_req_param(r, "continuation-token") : NULL;
    const char *sa = v2 ? hd_req_param(r, "start-after") : NULL;
    const char *fo = v2 ? hd_req_param(r, "fetch-owner") : NULL;
    int url = enc && strcmp(enc, "url") == 0;
    int owner_on = !v2 || (fo && strcmp(fo, "true") == 0);
    const char *root = vers ? "ListVersionsResult" : "ListBucketResult";
    const char *item = vers ? "Version" : "Contents";
    uint64_t max = 1000;
    unsigned char raw[1100];
    struct hd_list_opts o;
    struct hd_list_res res;
    struct hd_buf b;
    char ts[32], etag[64];
    size_t i, n;
    int rc;

    r->op = HD_OP_LIST;
    if (enc && !url) {
        hd_resp_err_msg(r, HD_EBADARG, "Invalid Encoding Method specified in Request");
        return;
    }
    if (mk) {
        int64_t v;
        if (hd_parse_i64(mk, &v) < 0 || v < 0) {
            hd_resp_err(r, HD_EMAXKEYS);
            return;
        }
        max = v > 1000 ? 1000 : (uint64_t)v;
    }
    memset(&o, 0, sizeof(o));
    o.prefix = prefix;
    o.delimiter = delim;
    o.max = (size_t)max;
    o.start_after = marker && *marker ? marker : sa && *sa ? sa : NULL;
    if (ctok) {
        if (!*ctok || hd_b64_decode(ctok, strlen(ctok), raw, sizeof(raw) - 1, &n) < 0 || !n) {
            hd_resp_err(r, HD_EBADTOKEN);
            return;
        }
        raw[n] = '\0';
        o.start_after = (const char *)raw;
    }
    if ((rc = hd_store_list(t->st, bucket, &o, &res)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    hd_buf_init(&b);
    hd_xml_decl(&b);
    hd_buf_printf(&b, "<%s xmlns=\"" S3NS "\">", root);
    hd_xml_elem(&b, "Name", bucket);
    hd_xml_key_elem(&b, "Prefix", prefix ? prefix : "", url);
    if (v2) {
        hd_xml_elemf(&b, "KeyCount", "%zu", res.nents + res.nprefixes);
        if (ctok)
            hd_xml_elem(&b, "ContinuationToken", ctok);
        if (sa)
            hd_xml_key_elem(&b, "StartAfter", sa, url);
    } else if (vers) {
        hd_xml_key_elem(&b, "KeyMarker", marker ? marker : "", url);
        hd_xml_elem(&b, "VersionIdMarker", "");
    } else {
        hd_xml_key_elem(&b, "Marker", marker ? marker : "", url);
    }
    hd_xml_elemf(&b, "MaxKeys", "%llu", (unsigned long long)max);
    if (delim)
        hd_xml_key_elem(&b, "Delimiter", delim, url);
    hd_xml_elem(&b, "IsTruncated", res.truncated ? "true" : "false");
    if (res.truncated && res.last) {
        if (v2) {
            char t64[1500];
            hd_b64_encode((const unsigned char *)res.last, strlen(res.last), t64, sizeof(t64));
            hd_xml_elem(&b, "NextContinuationToken", t64);
        } else if (vers) {
            hd_xml_key_elem(&b, "NextKeyMarker", res.last, url);
            hd_xml_elem(&b, "NextVersionIdMarker", "null");
        } else if (delim) {
            hd_xml_key_elem(&b, "NextMarker", res.last, url);
        }
    }
    if (url)
        hd_xml_elem(&b, "EncodingType", "url");
    for (i = 0; i < res.nents; i++) {
        hd_xml_open(&b, item);
        hd_xml_key_elem(&b, "Key", res.ents[i].name, url);
        if (vers) {
            hd_xml_elem(&b, "VersionId", "null");
            hd_xml_elem(&b, "IsLatest", "true");
        }
        hd_iso8601_ms(res.ents[i].mtime_ms, ts);
        hd_xml_elem(&b, "LastModified", ts);
        snprintf(etag, sizeof(etag), "\"%s\"", res.ents[i].etag);
        hd_xml_elem(&b, "ETag", etag);
        hd_xml_elemf(&b, "Size", "%llu", (unsigned long long)res.ents[i].size);
        if (owner_on) {
            hd_xml_open(&b, "Owner");
            hd_xml_elem(&b, "ID", owner);
            hd_xml_elem(&b, "DisplayName", owner);
            hd_xml_close(&b, "Owner");
        }
        hd_xml_elem(&b, "StorageClass", "STANDARD");
        hd_xml_close(&b, item);
    }
    for (i = 0; i < res.nprefixes; i++) {
        hd_xml_open(&b, "CommonPrefixes");
        hd_xml_key_elem(&b, "Prefix", res.prefixes[i], url);
        hd_xml_close(&b, "CommonPrefixes");
    }
    hd_xml_close(&b, root);
    hd_list_res_cleanup(&res);
    hd_resp_xml(r, 200, &b);
}

static void location(struct hd_req *r, struct hd_target *t, const char *bucket)
{
    struct hd_buf b;
    int rc;

    r->op = HD_OP_BUCKET;
    if ((rc = hd_store_bucket_exists(t->st, bucket)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    hd_buf_init(&b);
    hd_xml_decl(&b);
    /* us-east-1 is reported as an empty constraint, as AWS does */
    hd_buf_puts(&b, "<LocationConstraint xmlns=\"" S3NS "\">");
    if (strcmp(t->region, "us-east-1") != 0)
        hd_xml_escape(&b, t->region, strlen(t->region));
    hd_buf_puts(&b, "</LocationConstraint>");
    hd_resp_xml(r, 200, &b);
}

/* CreateBucket reads an optional CreateBucketConfiguration body. */
struct create_ctx {
    struct hd_target *t;
    struct hd_buf body;
    char bucket[64];
};

static int create_body(struct hd_req *r, const char *d, size_t n)
{
    struct create_ctx *c = r->data;

    if (c->body.len + n > 64u * 1024)
        return HD_EMALFORMEDXML;
    return hd_buf_append(&c->body, d, n);
}

static void create_end(struct hd_req *r)
{
    struct create_ctx *c = r->data;
    char loc[80];
    int rc;

    if (r->body_err) {
        hd_resp_err(r, r->body_err);
        return;
    }
    if (c->body.len &&
        (rc = hd_xml_parse_create_bucket(c->body.data, c->body.len, loc, sizeof(loc))) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    rc = hd_store_bucket_create(c->t->st, c->bucket, "ais");
    if (rc == HD_EBUCKETEXISTS)
        rc = 0; /* us-east-1 semantics: creating a bucket you own again succeeds */
    if (rc < 0) {
        hd_resp_err(r, rc);
        return;
    }
    snprintf(loc, sizeof(loc), "/%s", c->bucket);
    hd_resp_header(r, "Location", loc);
    hd_resp_empty(r, 200);
}

static void create_done(struct hd_req *r)
{
    struct create_ctx *c = r->data;

    if (c) {
        hd_buf_cleanup(&c->body);
        free(c);
    }
    r->data = NULL;
}

static void create_bucket(struct hd_req *r, struct hd_target *t, const char *bucket)
{
    struct create_ctx *c;
    int rc;

    r->op = HD_OP_BUCKET;
    if ((rc = hd_bucket_name_check(bucket)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    c = calloc(1, sizeof(*c));
    if (!c) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    hd_buf_init(&c->body);
    snprintf(c->bucket, sizeof(c->bucket), "%s", bucket);
    c->t = t;
    r->data = c;
    r->on_body = create_body;
    r->on_end = create_end;
    r->on_done = create_done;
}

/* DeleteObjects: POST /B?delete with up to 1000 keys (no Content-MD5 required). */
struct delete_ctx {
    struct hd_target *t;
    struct hd_buf body;
    char bucket[64];
};

static int delete_body(struct hd_req *r, const char *d, size_t n)
{
    struct delete_ctx *c = r->data;

    if (c->body.len + n > HD_XML_MAX_BODY)
        return HD_EMALFORMEDXML;
    return hd_buf_append(&c->body, d, n);
}

static void delete_end(struct hd_req *r)
{
    struct delete_ctx *c = r->data;
    struct hd_delete_req dr;
    struct hd_buf b;
    size_t i;
    int rc;

    if (r->body_err) {
        hd_resp_err(r, r->body_err);
        return;
    }
    if ((rc = hd_store_bucket_exists(c->t->st, c->bucket)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    if ((rc = hd_xml_parse_delete(c->body.data ? c->body.data : "", c->body.len, &dr)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    hd_buf_init(&b);
    hd_xml_decl(&b);
    hd_buf_puts(&b, "<DeleteResult xmlns=\"" S3NS "\">");
    for (i = 0; i < dr.n; i++) {
        const char *k = dr.objs[i].key;
        rc = hd_object_name_check(k, strlen(k));
        if (rc == 0) {
            rc = hd_store_delete(c->t->st, c->bucket, k);
            if (rc == HD_ENOSUCHKEY)
                rc = 0;
        }
        if (rc == 0 && !dr.quiet) {
            hd_xml_open(&b, "Deleted");
            hd_xml_elem(&b, "Key", k);
            if (dr.objs[i].version_id)
                hd_xml_elem(&b, "VersionId", dr.objs[i].version_id);
            hd_xml_close(&b, "Deleted");
        } else if (rc < 0) {
            const struct hd_err_info *e = hd_err_info(rc);
            hd_xml_open(&b, "Error");
            hd_xml_elem(&b, "Key", k);
            hd_xml_elem(&b, "Code", e->s3_code);
            hd_xml_elem(&b, "Message", e->message);
            hd_xml_close(&b, "Error");
        }
    }
    hd_buf_puts(&b, "</DeleteResult>");
    hd_xml_delete_cleanup(&dr);
    hd_resp_xml(r, 200, &b);
}

static void delete_done(struct hd_req *r)
{
    struct delete_ctx *c = r->data;

    if (c) {
        hd_buf_cleanup(&c->body);
        free(c);
    }
    r->data = NULL;
}

static void delete_objects(struct hd_req *r, struct hd_target *t, const char *bucket)
{
    struct delete_ctx *c = calloc(1, sizeof(*c));

    r->op = HD_OP_DELETE;
    if (!c) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    c->t = t;
    hd_buf_init(&c->body);
    snprintf(c->bucket, sizeof(c->bucket), "%s", bucket);
    r->data = c;
    r->on_body = delete_body;
    r->on_end = delete_end;
    r->on_done = delete_done;
}

static void bucket_call(struct hd_req *r, struct hd_target *t, const char *bucket,
                        const char *owner)
{
    const char *m = r->method;
    int rc;

    if (hd_query_find(&r->query, "location") && strcmp(m, "GET") == 0) {
        location(r, t, bucket);
        return;
    }
    if (hd_s3_unsupported_subresource(&r->query)) {
        hd_resp_err(r, HD_ENOTIMPL);
        return;
    }
    if (hd_query_find(&r->query, "uploads") && strcmp(m, "GET") == 0) {
        hd_mpu_list_uploads(r, t, bucket);
        return;
    }
    if (hd_query_find(&r->query, "versions") && strcmp(m, "GET") == 0) {
        list_objects(r, t, bucket, 3, owner);
        return;
    }
    if (hd_query_find(&r->query, "delete") && strcmp(m, "POST") == 0) {
        delete_objects(r, t, bucket);
        return;
    }
    if (strcmp(m, "GET") == 0) {
        const char *lt = hd_req_param(r, "list-type");
        if (lt && strcmp(lt, "2") != 0 && strcmp(lt, "1") != 0) {
            hd_resp_err_msg(r, HD_EBADARG, "list-type must be 1 or 2.");
            return;
        }
        list_objects(r, t, bucket, lt && strcmp(lt, "2") == 0 ? 2 : 1, owner);
    } else if (strcmp(m, "HEAD") == 0) {
        r->op = HD_OP_BUCKET;
        rc = hd_store_bucket_exists(t->st, bucket);
        if (rc == 0)
            hd_resp_header(r, "x-amz-bucket-region", t->region);
        rc < 0 ? hd_resp_err(r, rc) : hd_resp_empty(r, 200);
    } else if (strcmp(m, "PUT") == 0) {
        create_bucket(r, t, bucket);
    } else if (strcmp(m, "DELETE") == 0) {
        r->op = HD_OP_BUCKET;
        rc = hd_store_bucket_delete(t->st, bucket);
        if (rc == 0)
            hd_mpu_drop_bucket(t, bucket);
        rc < 0 ? hd_resp_err(r, rc) : hd_resp_empty(r, 204);
    } else {
        hd_resp_err(r, HD_EMETHOD);
    }
}

static void object_call(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                        const struct hd_sigv4_auth *a)
{
    const char *m = r->method;
    int upload = hd_query_find(&r->query, "uploadId") != NULL;

    if (hd_s3_unsupported_subresource(&r->query)) {
        hd_resp_err(r, HD_ENOTIMPL);
        return;
    }
    if (strcmp(m, "POST") == 0 && hd_query_find(&r->query, "uploads")) {
        hd_mpu_create(r, t, bucket, key);
        return;
    }
    if (upload) {
        if (strcmp(m, "PUT") == 0 && hd_req_header(r, "x-amz-copy-source"))
            hd_resp_err_msg(r, HD_ENOTIMPL, "UploadPartCopy is not implemented.");
        else if (strcmp(m, "PUT") == 0)
            hd_mpu_upload_part(r, t, bucket, key, a);
        else if (strcmp(m, "POST") == 0)
            hd_mpu_complete(r, t, bucket, key);
        else if (strcmp(m, "DELETE") == 0)
            hd_mpu_abort(r, t, bucket, key);
        else if (strcmp(m, "GET") == 0)
            hd_mpu_list_parts(r, t, bucket, key);
        else
            hd_resp_err(r, HD_EMETHOD);
        return;
    }
    if (hd_req_header(r, "x-amz-copy-source") && strcmp(m, "PUT") == 0) {
        hd_obj_copy(r, t, bucket, key);
        return;
    }
    if (strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0)
        hd_obj_get(r, t, bucket, key, m[0] == 'H');
    else if (strcmp(m, "PUT") == 0)
        hd_obj_put(r, t, bucket, key, a);
    else if (strcmp(m, "DELETE") == 0)
        hd_obj_delete(r, t, bucket, key, 1);
    else
        hd_resp_err(r, HD_EMETHOD);
}

void hd_s3_handle(struct hd_req *r, struct hd_target *t, const char *path)
{
    struct hd_sigv4_auth a;
    const char *rest, *slash, *owner;
    char *bucket = NULL, *key = NULL, *vpath;
    size_t klen = 0;
    int authrc, rc;

    r->api = HD_API_S3;
    vpath = vhost_path(r, t, path);
    if (vpath)
        path = vpath;
    if ((authrc = hd_target_authenticate(r, t, &a)) < 0) {
        hd_resp_err(r, authrc);
        goto out;
    }
    owner = authrc == 1 ? "anonymous" : a.access_key;
    rest = path + 1; /* skip '/' */
    if (*rest) {
        slash = strchr(rest, '/');
        rc = hd_bucket_decode(rest, slash ? (size_t)(slash - rest) : strlen(rest), &bucket);
        if (rc == 0 && slash && slash[1])
            rc = hd_url_decode_dup(slash + 1, strlen(slash + 1), &key, &klen);
        if (rc < 0) {
            hd_resp_err(r, rc);
            goto out;
        }
    }
    if ((rc = hd_target_authorize(r, t, authrc, &a, bucket)) < 0) {
        hd_resp_err(r, rc);
        goto out;
    }
    if (!bucket) {
        if (strcmp(r->method, "GET") == 0)
            list_buckets(r, t, owner);
        else
            hd_resp_err(r, HD_EMETHOD);
    } else if (!key) {
        bucket_call(r, t, bucket, owner);
    } else if ((rc = hd_object_name_check(key, klen)) < 0) {
        hd_resp_err(r, rc);
    } else {
        object_call(r, t, bucket, key, authrc == 1 ? NULL : &a);
    }
out:
    free(vpath);
    free(bucket);
    free(key);
}
