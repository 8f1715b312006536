/* s3: the S3 API on the proxy. Bucket-level calls are served here: SigV4 (same auth.keys as
 * the targets), buckets from the BMD, listings merged from the targets, DeleteObjects fanned
 * out to the owners. Object-level calls leave through one place, object_call(): a 307 to the
 * owner when s3.redirect is set, otherwise the streaming relay (common/relay.c). */
#include "proxy/core/core.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/buf.h"
#include "common/cksum.h"
#include "common/errors.h"
#include "common/httpc.h"
#include "common/httputil.h"
#include "common/json.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/mpulist.h"
#include "common/sigv4.h"
#include "common/xml.h"

#define S3NS HD_XML_S3_NS
#define DELETE_PARALLEL 16

static int bucket_known(struct hd_proxy *p, const char *bucket)
{
    struct hd_bmd *b = hd_smap_state_bmd(p->cs);
    int rc = hd_bmd_find(b, bucket) ? 0 : HD_ENOSUCHBUCKET;

    hd_bmd_unref(b);
    return rc;
}

static void list_buckets(struct hd_req *r, struct hd_proxy *p, const char *owner)
{
    struct hd_bmd *bmd = hd_smap_state_bmd(p->cs);
    struct hd_buf b;
    char ts[32];
    size_t i;

    r->op = HD_OP_BUCKET;
    hd_buf_init(&b);
    hd_xml_decl(&b);
    hd_xml_open_ns(&b, "ListAllMyBucketsResult", S3NS);
    hd_xml_open(&b, "Owner");
    hd_xml_elem(&b, "ID", owner);
    hd_xml_elem(&b, "DisplayName", owner);
    hd_xml_close(&b, "Owner");
    hd_xml_open(&b, "Buckets");
    for (i = 0; i < bmd->n; i++) {
        hd_xml_open(&b, "Bucket");
        hd_xml_elem(&b, "Name", bmd->b[i].name);
        hd_iso8601_ms(bmd->b[i].created * 1000, ts);
        hd_xml_elem(&b, "CreationDate", ts);
        hd_xml_close(&b, "Bucket");
    }
    hd_xml_close(&b, "Buckets");
    hd_xml_close(&b, "ListAllMyBucketsResult");
    hd_bmd_unref(bmd);
    hd_resp_xml(r, 200, &b);
}

/* mode 1: ListObjects, 2: ListObjectsV2, 3: ListObjectVersions (all "null", latest). */
static void list_objects(struct hd_req *r, struct hd_proxy *p, const char *bucket, int mode,
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
    struct hd_plist_opts o;
    struct hd_plist_res res;
    struct hd_buf b;
    char etag[64], msg[256];
    size_t i, n, shown;
    int rc, truncated;

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
    o.limit = max ? (size_t)max : 1; /* max-keys=0 only asks whether anything is there */
    o.start_after = marker && *marker ? marker : sa && *sa ? sa : NULL;
    if (ctok) {
        if (!*ctok || hd_b64_decode(ctok, strlen(ctok), raw, sizeof(raw) - 1, &n) < 0 || !n ||
            memchr(raw, 0, n)) {
            hd_resp_err(r, HD_EBADTOKEN);
            return;
        }
        raw[n] = '\0';
        o.start_after = (const char *)raw;
    }
    if ((rc = hd_proxy_list(p, bucket, &o, &res, msg, sizeof(msg))) < 0) {
        hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
        return;
    }
    shown = max ? res.n : 0;
    truncated = max ? res.truncated : res.n > 0;
    hd_buf_init(&b);
    hd_xml_decl(&b);
    hd_xml_open_ns(&b, root, S3NS);
    hd_xml_elem(&b, "Name", bucket);
    hd_xml_key_elem(&b, "Prefix", prefix ? prefix : "", url);
    if (v2) {
        hd_xml_elemf(&b, "KeyCount", "%zu", shown);
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
    hd_xml_elem(&b, "IsTruncated", truncated ? "true" : "false");
    if (truncated && shown && res.last) {
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
    for (i = 0; i < shown; i++) {
        const struct hd_plist_item *it = &res.items[i];
        if (it->is_prefix)
            continue;
        hd_xml_open(&b, item);
        hd_xml_key_elem(&b, "Key", it->name, url);
        if (vers) {
            hd_xml_elem(&b, "VersionId", "null");
            hd_xml_elem(&b, "IsLatest", "true");
        }
        hd_xml_elem(&b, "LastModified", it->mtime);
        snprintf(etag, sizeof(etag), "\"%s\"", it->etag);
        hd_xml_elem(&b, "ETag", etag);
        hd_xml_elemf(&b, "Size", "%llu", (unsigned long long)it->size);
        if (owner_on) {
            hd_xml_open(&b, "Owner");
            hd_xml_elem(&b, "ID", owner);
            hd_xml_elem(&b, "DisplayName", owner);
            hd_xml_close(&b, "Owner");
        }
        hd_xml_elem(&b, "StorageClass", "STANDARD");
        hd_xml_close(&b, item);
    }
    for (i = 0; i < shown; i++) {
        if (!res.items[i].is_prefix)
            continue;
        hd_xml_open(&b, "CommonPrefixes");
        hd_xml_key_elem(&b, "Prefix", res.items[i].name, url);
        hd_xml_close(&b, "CommonPrefixes");
    }
    hd_xml_close(&b, root);
    hd_proxy_list_cleanup(&res);
    hd_resp_xml(r, 200, &b);
}

static void location(struct hd_req *r, struct hd_proxy *p, const char *bucket)
{
    struct hd_buf b;
    int rc;

    r->op = HD_OP_BUCKET;
    if ((rc = bucket_known(p, bucket)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    hd_buf_init(&b);
    hd_xml_decl(&b);
    hd_buf_puts(&b, "<LocationConstraint xmlns=\"" S3NS "\">");
    if (strcmp(p->region, "us-east-1") != 0)
        hd_xml_escape(&b, p->region, strlen(p->region));
    hd_buf_puts(&b, "</LocationConstraint>");
    hd_resp_xml(r, 200, &b);
}

/* ---- calls with a small XML body (CreateBucket, DeleteObjects) ---- */

struct body_ctx {
    struct hd_proxy *p;
    struct hd_buf body;
    char bucket[64];
    struct hd_sigv4_auth auth;
    int signed_req;
    size_t max;
};

static int body_chunk(struct hd_req *r, const char *d, size_t n)
{
    struct body_ctx *c = r->data;

    if (c->body.len + n > c->max)
        return HD_EMALFORMEDXML;
    return hd_buf_append(&c->body, d, n);
}

static void body_done(struct hd_req *r)
{
    struct body_ctx *c = r->data;

    if (c) {
        hd_buf_cleanup(&c->body);
        free(c);
    }
    r->data = NULL;
}

/* The body against x-amz-content-sha256 (a hex digest was signed) and Content-MD5. */
static int body_check(struct hd_req *r, struct body_ctx *c)
{
    const char *md5 = hd_req_header(r, "Content-MD5");
    unsigned char h[32];

    if (r->body_err)
        return r->body_err;
    if (c->signed_req && c->auth.payload == HD_PL_HEX) {
        hd_sha256(c->body.data ? c->body.data : "", c->body.len, h);
        if (memcmp(h, c->auth.payload_sha256, 32) != 0)
            return HD_ESHA256MISMATCH;
    } else if (c->signed_req && c->auth.payload != HD_PL_UNSIGNED) {
        return HD_ENOTIMPL; /* aws-chunked bucket calls: no client sends them */
    }
    if (md5) {
        struct hd_md5 m;
        unsigned char d[16];
        char b64[32];
        if (hd_md5_init(&m) < 0)
            return -ENOMEM;
        hd_md5_update(&m, c->body.data ? c->body.data : "", c->body.len);
        hd_md5_final(&m, d);
        hd_md5_cleanup(&m);
        hd_b64_encode(d, sizeof(d), b64, sizeof(b64));
        if (strcmp(b64, md5) != 0)
            return HD_EBADDIGEST;
    }
    return 0;
}

static struct body_ctx *body_start(struct hd_req *r, struct hd_proxy *p, const char *bucket,
                                   const struct hd_sigv4_auth *a, size_t max,
                                   void (*end)(struct hd_req *r))
{
    struct body_ctx *c = calloc(1, sizeof(*c));

    if (!c) {
        hd_resp_err(r, -ENOMEM);
        return NULL;
    }
    c->p = p;
    c->max = max;
    hd_buf_init(&c->body);
    snprintf(c->bucket, sizeof(c->bucket), "%s", bucket);
    if (a) {
        c->auth = *a;
        c->signed_req = 1;
    }
    r->data = c;
    r->on_body = body_chunk;
    r->on_end = end;
    r->on_done = body_done;
    return c;
}

static void create_end(struct hd_req *r)
{
    struct body_ctx *c = r->data;
    char loc[80];
    int rc;

    if ((rc = body_check(r, c)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    if (c->body.len &&
        (rc = hd_xml_parse_create_bucket(c->body.data, c->body.len, loc, sizeof(loc))) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    rc = hd_proxy_bucket_create(c->p, c->bucket, "ais");
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

/* One DELETE per key to its owner (native API, proxy-signed), DELETE_PARALLEL at a time. */
static void delete_end(struct hd_req *r)
{
    struct body_ctx *c = r->data;
    struct hd_proxy *p = c->p;
    struct hd_smap *s = NULL;
    struct hd_delete_req dr;
    struct hd_httpc_call *calls = NULL;
    struct hd_proxy_sig *sigs = NULL;
    struct hd_buf *urls = NULL, b;
    int *err = NULL;
    size_t i;
    int rc;

    memset(&dr, 0, sizeof(dr));
    if ((rc = body_check(r, c)) < 0 || (rc = bucket_known(p, c->bucket)) < 0 ||
        (rc = hd_xml_parse_delete(c->body.data ? c->body.data : "", c->body.len, &dr)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    s = hd_smap_state_smap(p->cs);
    calls = calloc(dr.n, sizeof(*calls));
    sigs = calloc(dr.n, sizeof(*sigs));
    urls = calloc(dr.n, sizeof(*urls));
    err = calloc(dr.n, sizeof(*err));
    if (!calls || !sigs || !urls || !err) {
        hd_resp_err(r, -ENOMEM);
        goto out;
    }
    for (i = 0; i < dr.n; i++) {
        const char *k = dr.objs[i].key;
        const struct hd_node *owner = NULL;
        char *uname = NULL;
        size_t ulen;
        hd_buf_init(&urls[i]);
        /* a call without a URL is skipped by marking it failed up front */
        hd_httpc_call_init(&calls[i], "DELETE", "");
        if ((err[i] = hd_object_name_check(k, strlen(k))) < 0)
            continue;
        if ((err[i] = hd_proxy_uname(p, c->bucket, k, &uname, &ulen)) < 0)
            continue;
        err[i] = s ? hd_smap_owner(s, uname, ulen, &owner) : HD_EUNAVAIL;
        free(uname);
        if (err[i] < 0)
            continue;
        hd_buf_printf(&urls[i], "%s/v1/objects/", owner->url);
        hd_uri_encode(&urls[i], c->bucket, strlen(c->bucket), 0);
        hd_buf_puts(&urls[i], "/");
        hd_uri_encode(&urls[i], k, strlen(k), 1);
        if (urls[i].oom) {
            err[i] = -ENOMEM;
            continue;
        }
        calls[i].url = urls[i].data;
        hd_proxy_sign(p, "DELETE", urls[i].data, &sigs[i]);
        calls[i].hdrs = sigs[i].kv;
        calls[i].nhdrs = sigs[i].n;
        calls[i].total_ms = HD_PROXY_FANOUT_MS;
    }
    {
        /* run only the calls that have a URL, keeping their indexes */
        struct hd_httpc_call *todo = calloc(dr.n, sizeof(*todo));
        size_t *idx = calloc(dr.n, sizeof(*idx)), nt = 0;
        if (!todo || !idx) {
            free(todo);
            free(idx);
            hd_resp_err(r, -ENOMEM);
            goto out;
        }
        for (i = 0; i < dr.n; i++)
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
    hd_buf_init(&b);
    hd_xml_decl(&b);
    hd_xml_open_ns(&b, "DeleteResult", S3NS);
    for (i = 0; i < dr.n; i++) {
        const char *k = dr.objs[i].key;
        if (err[i] == 0 && !dr.quiet) {
            hd_xml_open(&b, "Deleted");
            hd_xml_elem(&b, "Key", k);
            if (dr.objs[i].version_id)
                hd_xml_elem(&b, "VersionId", dr.objs[i].version_id);
            hd_xml_close(&b, "Deleted");
        } else if (err[i] < 0) {
            const struct hd_err_info *e = hd_err_info(err[i]);
            hd_xml_open(&b, "Error");
            hd_xml_elem(&b, "Key", k);
            hd_xml_elem(&b, "Code", e->s3_code);
            hd_xml_elem(&b, "Message", e->message);
            hd_xml_close(&b, "Error");
        }
    }
    hd_xml_close(&b, "DeleteResult");
    hd_resp_xml(r, 200, &b);
out:
    for (i = 0; calls && i < dr.n; i++) {
        hd_httpc_call_cleanup(&calls[i]);
        if (urls)
            hd_buf_cleanup(&urls[i]);
    }
    free(calls);
    free(sigs);
    free(urls);
    free(err);
    hd_xml_delete_cleanup(&dr);
    hd_smap_unref(s);
}

/* ListMultipartUploads: every target's first max + 1 entries after the markers (uploads
 * live on the owner of their key), merged, and cut at max-uploads. */
static void list_uploads(struct hd_req *r, struct hd_proxy *p, const char *bucket)
{
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    struct hd_mpul_opts o;
    struct hd_mpul l = {0};
    struct hd_proxy_fan f = {0};
    struct hd_buf path, b;
    const char *msg = NULL;
    char why[256] = "";
    size_t i;
    int rc;

    r->op = HD_OP_LIST;
    hd_buf_init(&path);
    hd_buf_init(&b);
    if ((rc = hd_mpul_opts_parse(r, &o, &msg)) < 0 || (rc = bucket_known(p, bucket)) < 0)
        goto out;
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
    hd_buf_printf(&path, "?%s", r->raw_query); /* carries "uploads" and the parameters */
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

static void bucket_call(struct hd_req *r, struct hd_proxy *p, const char *bucket, const char *owner,
                        const struct hd_sigv4_auth *a)
{
    const char *m = r->method;
    char msg[256];
    int rc;

    r->op = HD_OP_BUCKET;
    if (hd_query_find(&r->query, "location") && strcmp(m, "GET") == 0) {
        location(r, p, bucket);
    } else if (hd_s3_unsupported_subresource(&r->query)) {
        hd_resp_err(r, HD_ENOTIMPL);
    } else if (hd_query_find(&r->query, "uploads") && strcmp(m, "GET") == 0) {
        list_uploads(r, p, bucket);
    } else if (hd_query_find(&r->query, "versions") && strcmp(m, "GET") == 0) {
        list_objects(r, p, bucket, 3, owner);
    } else if (hd_query_find(&r->query, "delete") && strcmp(m, "POST") == 0) {
        r->op = HD_OP_DELETE;
        body_start(r, p, bucket, a, HD_XML_MAX_BODY, delete_end);
    } else if (strcmp(m, "GET") == 0) {
        const char *lt = hd_req_param(r, "list-type");
        if (lt && strcmp(lt, "2") != 0 && strcmp(lt, "1") != 0) {
            hd_resp_err_msg(r, HD_EBADARG, "list-type must be 1 or 2.");
            return;
        }
        list_objects(r, p, bucket, lt && strcmp(lt, "2") == 0 ? 2 : 1, owner);
    } else if (strcmp(m, "HEAD") == 0) {
        if ((rc = bucket_known(p, bucket)) == 0)
            hd_resp_header(r, "x-amz-bucket-region", p->region);
        rc < 0 ? hd_resp_err(r, rc) : hd_resp_empty(r, 200);
    } else if (strcmp(m, "PUT") == 0) {
        if ((rc = hd_bucket_name_check(bucket)) < 0)
            hd_resp_err(r, rc);
        else
            body_start(r, p, bucket, a, (size_t)64 * 1024, create_end);
    } else if (strcmp(m, "DELETE") == 0) {
        rc = hd_proxy_bucket_destroy(p, bucket, msg, sizeof(msg));
        rc < 0 ? hd_resp_err_msg(r, rc, msg[0] ? msg : NULL) : hd_resp_empty(r, 204);
    } else {
        hd_resp_err(r, HD_EMETHOD);
    }
}

/* Object-level S3 calls, authenticated and authorised already: relayed to the owner as they
 * are (the owner verifies the client's signature over the same Host and path), or with
 * s3.redirect a 307 to it. vpath: the path-style path of a virtual-host request, which the
 * redirect must carry (the owner sees its own Host; without it, /dir/obj would name bucket
 * "dir", which the proxy never authorised), or NULL. */
static void object_call(struct hd_req *r, struct hd_proxy *p, const char *bucket, const char *key,
                        const char *vpath)
{
    const char *m = r->method;

    r->op = strcmp(m, "GET") == 0      ? HD_OP_GET
            : strcmp(m, "HEAD") == 0   ? HD_OP_HEAD
            : strcmp(m, "PUT") == 0    ? HD_OP_PUT
            : strcmp(m, "DELETE") == 0 ? HD_OP_DELETE
                                       : HD_OP_OTHER;
    if (p->s3_redirect)
        hd_proxy_redirect(r, p, bucket, key, vpath);
    else
        hd_proxy_relay(r, p, bucket, key, vpath ? bucket : NULL);
}

void hd_proxy_s3(struct hd_req *r, struct hd_proxy *p)
{
    const char *path = r->raw_path, *rest, *slash, *owner;
    struct hd_sigv4_auth a;
    char *bucket = NULL, *key = NULL, *vpath = NULL;
    size_t blen = 0, klen = 0;
    int authrc, rc;

    r->api = HD_API_S3;
    if (strcmp(path, "/s3") == 0 || strncmp(path, "/s3/", 4) == 0)
        path = path[3] ? path + 3 : "/";
    vpath = hd_s3_vhost_path(hd_req_header(r, "Host"), p->domain, path);
    if (vpath)
        path = vpath;
    rest = path + 1;
    if (*rest) {
        slash = strchr(rest, '/');
        blen = slash ? (size_t)(slash - rest) : strlen(rest);
        if ((rc = hd_bucket_decode(rest, blen, &bucket)) < 0) {
            hd_resp_err(r, rc);
            goto out;
        }
        if (slash && slash[1] &&
            (rc = hd_url_decode_dup(slash + 1, strlen(slash + 1), &key, &klen)) < 0) {
            hd_resp_err(r, rc == HD_EBADARG ? HD_EBADKEY : rc);
            goto out;
        }
    }
    /* object calls too: a redirect carries our signature, which targets trust */
    if ((authrc = hd_proxy_auth(r, p, bucket, &a)) < 0) {
        hd_resp_err(r, authrc);
        goto out;
    }
    owner = authrc == 1 ? "anonymous" : a.access_key;
    if (bucket && (key || strcmp(r->method, "PUT") != 0))
        hd_proxy_autoreg(p, bucket); /* default upstream: register on first access */
    if (!bucket) {
        if (strcmp(r->method, "GET") == 0)
            list_buckets(r, p, owner);
        else
            hd_resp_err(r, HD_EMETHOD);
    } else if (!key) {
        bucket_call(r, p, bucket, owner, authrc == 1 ? NULL : &a);
    } else if ((rc = hd_object_name_check(key, klen)) < 0) {
        hd_resp_err(r, rc);
    } else {
        object_call(r, p, bucket, key, vpath);
    }
out:
    free(vpath);
    free(bucket);
    free(key);
}
