/* s3front: the S3 REST front end both roles share. See s3front.h. */
#include "common/s3front.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cksum.h"
#include "common/cors.h"
#include "common/lifecycle.h"
#include "common/policy.h"
#include "common/errors.h"
#include "common/httputil.h"
#include "common/json.h"
#include "common/metrics.h"
#include "common/tagging.h"

#define S3NS HD_XML_S3_NS

/* ---- classification ---- */

enum level { SERVICE, BUCKET, OBJECT };

/* One row per call, in order: the first row whose level, method, subresource (a query
 * parameter) and copy-source header match names the operation. A strict subresource defines
 * the call: with it present, no row without it applies (another method gets 405). */
struct route {
    enum level level;
    const char *method;
    const char *sub; /* query parameter that must be present, or NULL */
    int strict;      /* sub present: only its rows apply */
    int copy;        /* 1: x-amz-copy-source must be present, 0: any */
    enum hd_s3_op op;
};

static const struct route routes[] = {
    {SERVICE, "GET", NULL, 0, 0, HD_S3_LIST_BUCKETS},

    {BUCKET, "GET", "acl", 1, 0, HD_S3_GET_BUCKET_ACL},
    {BUCKET, "PUT", "acl", 1, 0, HD_S3_PUT_BUCKET_ACL},
    {BUCKET, "GET", "versioning", 1, 0, HD_S3_GET_VERSIONING},
    {BUCKET, "PUT", "versioning", 1, 0, HD_S3_PUT_VERSIONING},
    {BUCKET, "GET", "location", 0, 0, HD_S3_GET_LOCATION},
    {BUCKET, "GET", "uploads", 0, 0, HD_S3_LIST_UPLOADS},
    {BUCKET, "GET", "versions", 1, 0, HD_S3_LIST_VERSIONS},
    {BUCKET, "POST", "delete", 0, 0, HD_S3_DELETE_OBJECTS},
    {BUCKET, "GET", NULL, 0, 0, HD_S3_LIST_OBJECTS},
    {BUCKET, "HEAD", NULL, 0, 0, HD_S3_HEAD_BUCKET},
    {BUCKET, "PUT", NULL, 0, 0, HD_S3_CREATE_BUCKET},
    {BUCKET, "DELETE", NULL, 0, 0, HD_S3_DELETE_BUCKET},

    {OBJECT, "GET", "acl", 1, 0, HD_S3_GET_OBJECT_ACL},
    {OBJECT, "PUT", "acl", 1, 0, HD_S3_PUT_OBJECT_ACL},
    {OBJECT, "GET", "tagging", 1, 0, HD_S3_GET_OBJECT_TAGGING},
    {OBJECT, "PUT", "tagging", 1, 0, HD_S3_PUT_OBJECT_TAGGING},
    {OBJECT, "DELETE", "tagging", 1, 0, HD_S3_DELETE_OBJECT_TAGGING},
    {OBJECT, "GET", "attributes", 1, 0, HD_S3_GET_OBJECT_ATTRIBUTES},
    {OBJECT, "POST", "uploads", 0, 0, HD_S3_CREATE_MPU},
    {OBJECT, "PUT", "uploadId", 1, 1, HD_S3_UPLOAD_PART_COPY},
    {OBJECT, "PUT", "uploadId", 1, 0, HD_S3_UPLOAD_PART},
    {OBJECT, "POST", "uploadId", 1, 0, HD_S3_COMPLETE_MPU},
    {OBJECT, "DELETE", "uploadId", 1, 0, HD_S3_ABORT_MPU},
    {OBJECT, "GET", "uploadId", 1, 0, HD_S3_LIST_PARTS},
    {OBJECT, "PUT", NULL, 0, 1, HD_S3_COPY_OBJECT},
    {OBJECT, "GET", NULL, 0, 0, HD_S3_GET_OBJECT},
    {OBJECT, "HEAD", NULL, 0, 0, HD_S3_HEAD_OBJECT},
    {OBJECT, "PUT", NULL, 0, 0, HD_S3_PUT_OBJECT},
    {OBJECT, "DELETE", NULL, 0, 0, HD_S3_DELETE_OBJECT},
};

/* Bucket configurations hoard never has. A GET answers what AWS answers for a bucket that has
 * none (an error naming it, or the empty document), and a DELETE of one that has a DeleteX
 * call is a no-op (204): tools that read every setting of a bucket (Terraform's AWS provider,
 * the console-like clients) then get the truth instead of a 501. Setting one stays 501. */
static const struct bucket_config {
    const char *sub;
    int err;           /* GET: this error, or 0 for the document */
    const char *root;  /* GET: the empty document's root element */
    const char *inner; /* and its content, or NULL */
    int deletable;     /* AWS has a DELETE for it */
} bucket_configs[] = {
    {"policy", HD_ENOBUCKETPOLICY, NULL, NULL, 1},
    {"lifecycle", HD_ENOLIFECYCLE, NULL, NULL, 1},
    {"tagging", HD_ENOTAGSET, NULL, NULL, 1},
    {"cors", HD_ENOCORS, NULL, NULL, 1},
    {"website", HD_ENOWEBSITE, NULL, NULL, 1},
    {"replication", HD_ENOREPLICATION, NULL, NULL, 1},
    {"encryption", HD_ENOSSECONFIG, NULL, NULL, 1},
    {"object-lock", HD_ENOOBJECTLOCK, NULL, NULL, 0},
    {"publicAccessBlock", HD_ENOPUBLICBLOCK, NULL, NULL, 1},
    {"ownershipControls", HD_ENOOWNERSHIP, NULL, NULL, 1},
    {"logging", 0, "BucketLoggingStatus", NULL, 0},
    {"notification", 0, "NotificationConfiguration", NULL, 0},
    {"accelerate", 0, "AccelerateConfiguration", NULL, 0},
    {"requestPayment", 0, "RequestPaymentConfiguration", "<Payer>BucketOwner</Payer>", 0},
};

/* The configuration r's query names at the bucket level, or NULL. */
static const struct bucket_config *bucket_config_of(const struct hd_req *r)
{
    size_t i;

    for (i = 0; i < sizeof(bucket_configs) / sizeof(bucket_configs[0]); i++)
        if (hd_query_find(&r->query, bucket_configs[i].sub))
            return &bucket_configs[i];
    return NULL;
}

static const char *const op_names[HD_S3_OP_COUNT] = {
    [HD_S3_LIST_BUCKETS] = "ListBuckets",
    [HD_S3_GET_LOCATION] = "GetBucketLocation",
    [HD_S3_LIST_UPLOADS] = "ListMultipartUploads",
    [HD_S3_LIST_VERSIONS] = "ListObjectVersions",
    [HD_S3_DELETE_OBJECTS] = "DeleteObjects",
    [HD_S3_LIST_OBJECTS] = "ListObjects",
    [HD_S3_HEAD_BUCKET] = "HeadBucket",
    [HD_S3_CREATE_BUCKET] = "CreateBucket",
    [HD_S3_DELETE_BUCKET] = "DeleteBucket",
    [HD_S3_GET_BUCKET_ACL] = "GetBucketAcl",
    [HD_S3_PUT_BUCKET_ACL] = "PutBucketAcl",
    [HD_S3_PUT_BUCKET_CORS] = "PutBucketCors",
    [HD_S3_PUT_BUCKET_TAGGING] = "PutBucketTagging",
    [HD_S3_PUT_BUCKET_LIFECYCLE] = "PutBucketLifecycleConfiguration",
    [HD_S3_PUT_BUCKET_POLICY] = "PutBucketPolicy",
    [HD_S3_GET_POLICY_STATUS] = "GetBucketPolicyStatus",
    [HD_S3_PUT_PUBLIC_ACCESS_BLOCK] = "PutPublicAccessBlock",
    [HD_S3_GET_VERSIONING] = "GetBucketVersioning",
    [HD_S3_PUT_VERSIONING] = "PutBucketVersioning",
    [HD_S3_GET_BUCKET_CONFIG] = "GetBucketConfiguration",
    [HD_S3_DELETE_BUCKET_CONFIG] = "DeleteBucketConfiguration",
    [HD_S3_CREATE_MPU] = "CreateMultipartUpload",
    [HD_S3_UPLOAD_PART] = "UploadPart",
    [HD_S3_UPLOAD_PART_COPY] = "UploadPartCopy",
    [HD_S3_COMPLETE_MPU] = "CompleteMultipartUpload",
    [HD_S3_ABORT_MPU] = "AbortMultipartUpload",
    [HD_S3_LIST_PARTS] = "ListParts",
    [HD_S3_COPY_OBJECT] = "CopyObject",
    [HD_S3_GET_OBJECT] = "GetObject",
    [HD_S3_HEAD_OBJECT] = "HeadObject",
    [HD_S3_PUT_OBJECT] = "PutObject",
    [HD_S3_DELETE_OBJECT] = "DeleteObject",
    [HD_S3_GET_OBJECT_ACL] = "GetObjectAcl",
    [HD_S3_PUT_OBJECT_ACL] = "PutObjectAcl",
    [HD_S3_GET_OBJECT_TAGGING] = "GetObjectTagging",
    [HD_S3_GET_OBJECT_ATTRIBUTES] = "GetObjectAttributes",
    [HD_S3_PUT_OBJECT_TAGGING] = "PutObjectTagging",
    [HD_S3_DELETE_OBJECT_TAGGING] = "DeleteObjectTagging",
};

const char *hd_s3_op_name(enum hd_s3_op op)
{
    return op < HD_S3_OP_COUNT && op_names[op] ? op_names[op] : "?";
}

/* The operation for r at level: 0 with *op, HD_EMETHOD (*sub: the strict subresource that
 * refused the method, or NULL) or HD_ENOTIMPL (an S3 feature hoard does not have). */
static int classify(struct hd_req *r, enum level level, enum hd_s3_op *op, const char **sub)
{
    int copy = hd_req_header(r, "x-amz-copy-source") != NULL, strict = 0;
    const struct bucket_config *cfg;
    const char *allowed = NULL;
    size_t i;

    *sub = NULL;

    if (level == BUCKET && strcmp(r->method, "GET") == 0 &&
        hd_query_find(&r->query, "policyStatus")) {
        *op = HD_S3_GET_POLICY_STATUS;
        return 0;
    }
    if (level == BUCKET && (cfg = bucket_config_of(r))) {
        if (strcmp(r->method, "PUT") == 0 &&
            (strcmp(cfg->sub, "cors") == 0 || strcmp(cfg->sub, "tagging") == 0 ||
             strcmp(cfg->sub, "lifecycle") == 0 || strcmp(cfg->sub, "policy") == 0 ||
             strcmp(cfg->sub, "publicAccessBlock") == 0)) {
            *op = cfg->sub[0] == 'c'                ? HD_S3_PUT_BUCKET_CORS
                  : cfg->sub[0] == 't'              ? HD_S3_PUT_BUCKET_TAGGING
                  : cfg->sub[0] == 'l'              ? HD_S3_PUT_BUCKET_LIFECYCLE
                  : strcmp(cfg->sub, "policy") == 0 ? HD_S3_PUT_BUCKET_POLICY
                                                    : HD_S3_PUT_PUBLIC_ACCESS_BLOCK;
            return 0;
        }
        if (strcmp(r->method, "GET") == 0) {
            *op = HD_S3_GET_BUCKET_CONFIG;
            return 0;
        }
        if (strcmp(r->method, "DELETE") == 0 && cfg->deletable) {
            *op = HD_S3_DELETE_BUCKET_CONFIG;
            return 0;
        }
    }
    /* of the subresources in hoard_unsupported_subresource's list, an object's ?tagging (its
     * tags: GET, PUT, DELETE; another method is 405) and GET ?attributes are answered; every
     * other call of them (bucket tagging, PUT ?attributes) is 501 */
    if (level == OBJECT && hd_query_find(&r->query, "tagging"))
        allowed = "tagging";
    else if (level == OBJECT && strcmp(r->method, "GET") == 0)
        allowed = "attributes";
    if (level != SERVICE && hd_s3_unsupported_subresource(&r->query, allowed))
        return HD_ENOTIMPL;
    for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        const struct route *rt = &routes[i];
        if (rt->level != level || (rt->sub && !hd_query_find(&r->query, rt->sub)))
            continue;
        if (rt->sub && rt->strict) {
            strict = 1;
            *sub = rt->sub;
        } else if (!rt->sub && strict)
            break; /* a call its subresource defines, with another method */
        if (strcmp(rt->method, r->method) != 0)
            continue;
        if (rt->copy && !copy)
            continue;
        *op = rt->op;
        return 0;
    }
    return HD_EMETHOD;
}

/* What op is to a caller without credentials: what AWS's READ grant allows, to a bucket
 * (ListBucket, ListBucketVersions, ListBucketMultipartUploads, HeadBucket) or an object
 * (GetObject, HeadObject). Every other call, settings included, needs a signature. */
static int public_op(enum hd_s3_op op)
{
    switch (op) {
    case HD_S3_GET_OBJECT:
    case HD_S3_HEAD_OBJECT:
        return HD_PUB_READ;
    case HD_S3_LIST_OBJECTS:
    case HD_S3_HEAD_BUCKET:
        return HD_PUB_LIST;
    case HD_S3_LIST_VERSIONS: /* s3:ListBucketVersions */
    case HD_S3_LIST_UPLOADS:  /* s3:ListBucketMultipartUploads */
        return HD_PUB_LIST_MORE;
    default:
        return HD_PUB_NONE;
    }
}

static int metric_op(enum hd_s3_op op)
{
    switch (op) {
    case HD_S3_GET_OBJECT:
        return HD_OP_GET;
    case HD_S3_HEAD_OBJECT:
        return HD_OP_HEAD;
    case HD_S3_PUT_OBJECT:
    case HD_S3_COPY_OBJECT:
    case HD_S3_UPLOAD_PART:
    case HD_S3_UPLOAD_PART_COPY:
    case HD_S3_COMPLETE_MPU:
        return HD_OP_PUT;
    case HD_S3_DELETE_OBJECT:
    case HD_S3_DELETE_OBJECTS:
    case HD_S3_ABORT_MPU:
        return HD_OP_DELETE;
    case HD_S3_LIST_OBJECTS:
    case HD_S3_LIST_VERSIONS:
    case HD_S3_LIST_UPLOADS:
    case HD_S3_LIST_PARTS:
        return HD_OP_LIST;
    case HD_S3_LIST_BUCKETS:
    case HD_S3_GET_LOCATION:
    case HD_S3_HEAD_BUCKET:
    case HD_S3_CREATE_BUCKET:
    case HD_S3_DELETE_BUCKET:
    case HD_S3_GET_BUCKET_ACL:
    case HD_S3_PUT_BUCKET_ACL:
    case HD_S3_GET_VERSIONING:
    case HD_S3_PUT_VERSIONING:
    case HD_S3_GET_BUCKET_CONFIG:
    case HD_S3_DELETE_BUCKET_CONFIG:
    case HD_S3_PUT_BUCKET_CORS:
    case HD_S3_PUT_BUCKET_TAGGING:
    case HD_S3_PUT_BUCKET_LIFECYCLE:
    case HD_S3_PUT_BUCKET_POLICY:
    case HD_S3_GET_POLICY_STATUS:
    case HD_S3_PUT_PUBLIC_ACCESS_BLOCK:
        return HD_OP_BUCKET;
    default:
        return HD_OP_OTHER;
    }
}

/* ---- listings ---- */

/* Continuation tokens: base64url of the last name, without padding, so that no client has to
 * (or can fail to) URL-encode them; standard base64 is read too. */
static void tok_encode(const char *name, char *out, size_t max)
{
    char *p;

    if (hd_b64_encode((const unsigned char *)name, strlen(name), out, max) < 0) {
        out[0] = '\0';
        return;
    }
    for (p = out; *p; p++) {
        if (*p == '+')
            *p = '-';
        else if (*p == '/')
            *p = '_';
        else if (*p == '=')
            *p = '\0';
    }
}

/* 0 with out[0..*n) NUL-terminated (no NUL inside, not empty), or HD_EBADTOKEN. */
static int tok_decode(const char *tok, char *out, size_t max, size_t *n)
{
    size_t l = strlen(tok), i;
    char *b;
    int rc = HD_EBADTOKEN;

    if (l == 0 || l > 4 * max / 3 + 4 || l % 4 == 1 || !(b = malloc(l + 4)))
        return HD_EBADTOKEN;
    for (i = 0; i < l; i++)
        b[i] = tok[i] == '-' ? '+' : tok[i] == '_' ? '/' : tok[i];
    while (i % 4)
        b[i++] = '=';
    if (hd_b64_decode(b, i, (unsigned char *)out, max - 1, n) == 0 && *n && !memchr(out, 0, *n)) {
        out[*n] = '\0';
        rc = 0;
    }
    free(b);
    return rc;
}

int hd_s3_list_parse(struct hd_req *r, int versions, struct hd_s3_list_req *q, const char **msg)
{
    const char *lt = hd_req_param(r, "list-type");
    const char *mk = hd_req_param(r, "max-keys");
    const char *enc = hd_req_param(r, "encoding-type");
    const char *fo;
    size_t n;

    *msg = NULL;
    memset(q, 0, sizeof(*q));
    if (!versions && lt && strcmp(lt, "2") != 0 && strcmp(lt, "1") != 0) {
        *msg = "list-type must be 1 or 2.";
        return HD_EBADARG;
    }
    q->versions = versions;
    q->v2 = !versions && lt && strcmp(lt, "2") == 0;
    q->prefix = hd_req_param(r, "prefix");
    q->delimiter = hd_req_param(r, "delimiter");
    if (q->delimiter && !*q->delimiter)
        q->delimiter = NULL; /* AWS: "delimiter=" is no delimiter, and is not echoed */
    q->marker = q->v2 ? NULL : hd_req_param(r, versions ? "key-marker" : "marker");
    if (versions && (q->vid_marker = hd_req_param(r, "version-id-marker")) && *q->vid_marker) {
        /* AWS's answers; every object is version "null", the one marker that names one */
        if (!q->marker || !*q->marker) {
            *msg = "A version-id marker cannot be specified without a key marker.";
            return HD_EBADARG;
        }
        if (strcmp(q->vid_marker, "null") != 0) {
            *msg = "Invalid version id specified";
            return HD_EBADARG;
        }
    }
    q->ctok = q->v2 ? hd_req_param(r, "continuation-token") : NULL;
    q->start_after = q->v2 ? hd_req_param(r, "start-after") : NULL;
    fo = q->v2 ? hd_req_param(r, "fetch-owner") : NULL;
    q->owner = !q->v2 || (fo && strcmp(fo, "true") == 0);
    if (enc && strcmp(enc, "url") != 0) {
        *msg = "Invalid Encoding Method specified in Request";
        return HD_EBADARG;
    }
    q->url = enc != NULL;
    q->max = 1000;
    if (mk) {
        int64_t v;
        if (hd_parse_i64(mk, &v) < 0 || v < 0)
            return HD_EMAXKEYS;
        q->max = v > 1000 ? 1000 : (uint64_t)v;
    }
    q->from = q->marker && *q->marker             ? q->marker
              : q->start_after && *q->start_after ? q->start_after
                                                  : NULL;
    q->ctok_given = q->ctok != NULL;
    if (q->ctok && *q->ctok) { /* an empty one lists from the start (and is echoed) */
        if (tok_decode(q->ctok, q->tokbuf, sizeof(q->tokbuf), &n) < 0)
            return HD_EBADTOKEN;
        q->from = q->tokbuf;
    }
    return 0;
}

static void owner_xml(struct hd_buf *b, const char *owner)
{
    hd_xml_open(b, "Owner");
    hd_xml_elem(b, "ID", owner);
    hd_xml_elem(b, "DisplayName", owner);
    hd_xml_close(b, "Owner");
}

void hd_s3_list_xml(struct hd_buf *b, const char *bucket, const struct hd_s3_list_req *q,
                    const char *owner, const struct hd_s3_list_item *items, size_t n, int truncated,
                    const char *next)
{
    const char *root = q->versions ? "ListVersionsResult" : "ListBucketResult";
    const char *item = q->versions ? "Version" : "Contents";
    size_t i, shown = n < q->max ? n : (size_t)q->max;
    char etag[64], ts[32];

    if (shown < n && shown > 0) { /* more than max-keys: the rest is the next page */
        truncated = 1;
        next = items[shown - 1].name;
    }
    if (q->max == 0)
        truncated = 0; /* AWS: max-keys=0 is an empty, complete page */
    hd_xml_decl(b);
    hd_xml_open_ns(b, root, S3NS);
    hd_xml_elem(b, "Name", bucket);
    /* V1's <Prefix> stays raw: botocore decodes it for V2 and versions, never for V1 */
    hd_xml_key_elem(b, "Prefix", q->prefix ? q->prefix : "", q->url && (q->v2 || q->versions));
    if (q->v2) {
        hd_xml_elemf(b, "KeyCount", "%zu", shown);
        if (q->ctok_given)
            hd_xml_elem(b, "ContinuationToken", q->ctok);
        if (q->start_after)
            hd_xml_key_elem(b, "StartAfter", q->start_after, q->url);
    } else if (q->versions) {
        hd_xml_key_elem(b, "KeyMarker", q->marker ? q->marker : "", q->url);
        hd_xml_elem(b, "VersionIdMarker", q->vid_marker ? q->vid_marker : "");
    } else {
        hd_xml_key_elem(b, "Marker", q->marker ? q->marker : "", q->url);
    }
    hd_xml_elemf(b, "MaxKeys", "%llu", (unsigned long long)q->max);
    if (q->delimiter)
        hd_xml_key_elem(b, "Delimiter", q->delimiter, q->url);
    hd_xml_elem(b, "IsTruncated", truncated ? "true" : "false");
    if (truncated && shown && next) {
        if (q->v2) {
            char t64[1500];
            tok_encode(next, t64, sizeof(t64));
            hd_xml_elem(b, "NextContinuationToken", t64);
        } else if (q->versions) {
            hd_xml_key_elem(b, "NextKeyMarker", next, q->url);
            hd_xml_elem(b, "NextVersionIdMarker", "null");
        } else if (q->delimiter) {
            hd_xml_key_elem(b, "NextMarker", next, q->url);
        }
    }
    if (q->url)
        hd_xml_elem(b, "EncodingType", "url");
    for (i = 0; i < shown; i++) {
        const struct hd_s3_list_item *it = &items[i];
        if (it->is_prefix)
            continue;
        hd_xml_open(b, item);
        hd_xml_key_elem(b, "Key", it->name, q->url);
        if (q->versions) {
            hd_xml_elem(b, "VersionId", "null");
            hd_xml_elem(b, "IsLatest", "true");
        }
        if (!it->mtime_iso)
            hd_iso8601_ms(it->mtime_ms, ts);
        hd_xml_elem(b, "LastModified", it->mtime_iso ? it->mtime_iso : ts);
        snprintf(etag, sizeof(etag), "\"%s\"", it->etag);
        hd_xml_elem(b, "ETag", etag);
        hd_xml_elemf(b, "Size", "%llu", (unsigned long long)it->size);
        if (q->owner)
            owner_xml(b, owner);
        hd_xml_elem(b, "StorageClass", it->sclass && *it->sclass ? it->sclass : "STANDARD");
        hd_xml_close(b, item);
    }
    for (i = 0; i < shown; i++) {
        if (!items[i].is_prefix)
            continue;
        hd_xml_open(b, "CommonPrefixes");
        hd_xml_key_elem(b, "Prefix", items[i].name, q->url);
        hd_xml_close(b, "CommonPrefixes");
    }
    hd_xml_close(b, root);
}

/* ListBuckets' page: bk[0..n) in order; region: each bucket's BucketRegion (the request had
 * a pagination parameter) or NULL; token: the ContinuationToken of the next page or NULL;
 * prefix: echoed when the request had one. */
static void buckets_xml(struct hd_buf *b, const char *owner, const struct hd_s3_bucket *bk,
                        size_t n, const char *region, const char *token, const char *prefix)
{
    char ts[32];
    size_t i;

    hd_xml_decl(b);
    hd_xml_open_ns(b, "ListAllMyBucketsResult", S3NS);
    owner_xml(b, owner);
    hd_xml_open(b, "Buckets");
    for (i = 0; i < n; i++) {
        hd_xml_open(b, "Bucket");
        hd_xml_elem(b, "Name", bk[i].name);
        hd_iso8601_ms(bk[i].created * 1000, ts);
        hd_xml_elem(b, "CreationDate", ts);
        if (region)
            hd_xml_elem(b, "BucketRegion", region);
        hd_xml_close(b, "Bucket");
    }
    hd_xml_close(b, "Buckets");
    if (token)
        hd_xml_elem(b, "ContinuationToken", token);
    if (prefix)
        hd_xml_elem(b, "Prefix", prefix);
    hd_xml_close(b, "ListAllMyBucketsResult");
}

static void location_xml(struct hd_buf *b, const char *region)
{
    hd_xml_decl(b);
    hd_buf_puts(b, "<LocationConstraint xmlns=\"" S3NS "\">");
    if (strcmp(region, "us-east-1") != 0)
        hd_xml_escape(b, region, strlen(region));
    hd_buf_puts(b, "</LocationConstraint>");
}

static void delete_result_xml(struct hd_buf *b, const struct hd_delete_req *dr, const int *err)
{
    size_t i;

    hd_xml_decl(b);
    hd_xml_open_ns(b, "DeleteResult", S3NS);
    for (i = 0; i < dr->n; i++) {
        const char *k = dr->objs[i].key;
        if (err[i] == 0 && !dr->quiet) {
            hd_xml_open(b, "Deleted");
            hd_xml_elem(b, "Key", k);
            if (dr->objs[i].version_id)
                hd_xml_elem(b, "VersionId", dr->objs[i].version_id);
            hd_xml_close(b, "Deleted");
        } else if (err[i] < 0) {
            const struct hd_err_info *e = hd_err_info(err[i]);
            hd_xml_open(b, "Error");
            hd_xml_elem(b, "Key", k);
            if (dr->objs[i].version_id)
                hd_xml_elem(b, "VersionId", dr->objs[i].version_id);
            hd_xml_elem(b, "Code", e->s3_code);
            hd_xml_elem(b, "Message", e->message);
            hd_xml_close(b, "Error");
        }
    }
    hd_xml_close(b, "DeleteResult");
}

/* ---- small XML request bodies ---- */

typedef hd_s3_body_fn body_fn;

struct body_call {
    struct hd_sigv4_auth auth;
    int signed_req;
    body_fn end;
    void *ctx;
    void (*ctx_free)(void *ctx);
};

static void body_call_free(void *arg)
{
    struct body_call *bc = arg;

    if (bc->ctx_free)
        bc->ctx_free(bc->ctx);
    free(bc);
}

/* The body against x-amz-content-sha256 (a hex digest was signed) and Content-MD5. */
static int body_check(struct hd_req *r, const struct body_call *bc, const char *body, size_t len)
{
    const char *md5 = hd_req_header(r, "Content-MD5");
    unsigned char h[32];
    size_t i;
    int rc;

    if (bc->signed_req && bc->auth.payload == HD_PL_HEX) {
        hd_sha256(body, len, h);
        if (memcmp(h, bc->auth.payload_sha256, 32) != 0)
            return HD_ESHA256MISMATCH;
    } else if (bc->signed_req && bc->auth.payload != HD_PL_UNSIGNED) {
        return HD_ENOTIMPL; /* aws-chunked bucket calls: no client sends them */
    }
    if (md5) {
        struct hd_md5 m;
        unsigned char d[16];
        char b64[32];
        if (hd_md5_init(&m) < 0)
            return -ENOMEM;
        hd_md5_update(&m, body, len);
        hd_md5_final(&m, d);
        hd_md5_cleanup(&m);
        hd_b64_encode(d, sizeof(d), b64, sizeof(b64));
        if (strcmp(b64, md5) != 0)
            return HD_EBADDIGEST;
    }
    /* the flexible checksums newer SDKs send instead of Content-MD5 (x-amz-checksum-crc32 ...) */
    for (i = 0; i < r->nhdrs; i++) {
        enum hd_ck_type t = hd_cksum_type_from_header(r->hdrs[i].k);
        struct hd_cksum ck;
        char got[HD_CK_B64_MAX];
        if (t == HD_CK_NONE)
            continue;
        if (!hd_cksum_value_ok(t, r->hdrs[i].v, 0))
            return HD_ECKVALUE; /* not the algorithm's digest in base64: AWS's InvalidRequest */
        if (hd_cksum_init(&ck, t) < 0)
            return -ENOMEM;
        hd_cksum_update(&ck, body, len);
        rc = hd_cksum_final_b64(&ck, got);
        hd_cksum_cleanup(&ck);
        if (rc < 0)
            return rc;
        if (strcmp(got, r->hdrs[i].v) != 0)
            return HD_EBADCHECKSUM;
    }
    return 0;
}

static void body_read(struct hd_req *r, void *arg, const char *body, size_t len)
{
    struct body_call *bc = arg;
    int rc = body_check(r, bc, body, len);

    if (rc < 0)
        hd_resp_err(r, rc);
    else
        bc->end(r, bc->ctx, body, len);
}

void hd_s3_read_body(struct hd_req *r, const struct hd_sigv4_auth *auth, size_t max, body_fn end,
                     void *ctx, void (*ctx_free)(void *ctx))
{
    struct body_call *bc = calloc(1, sizeof(*bc));

    if (!bc) {
        if (ctx_free)
            ctx_free(ctx);
        hd_resp_err(r, -ENOMEM);
        return;
    }
    bc->end = end;
    bc->ctx = ctx;
    bc->ctx_free = ctx_free;
    if (auth && !auth->anonymous && auth->access_key[0]) {
        bc->auth = *auth;
        bc->signed_req = 1;
    }
    hd_req_read_body(r, max, body_read, bc, body_call_free);
}

/* ---- the calls answered here, from the role's callbacks ---- */

static int bucket_cmp(const void *a, const void *b)
{
    return strcmp(((const struct hd_s3_bucket *)a)->name, ((const struct hd_s3_bucket *)b)->name);
}

/* ListBuckets, with the 2024 pagination parameters: max-buckets (1..10000), continuation-token,
 * prefix, bucket-region. Without any of them every bucket in one page; with one but no
 * max-buckets, pages of 10000 (AWS). A token is emitted only when more buckets follow. */
static void list_buckets(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                         const struct hd_s3_call *c)
{
    const char *mb = hd_req_param(r, "max-buckets"), *tok = hd_req_param(r, "continuation-token");
    const char *pfx = hd_req_param(r, "prefix"), *reg = hd_req_param(r, "bucket-region");
    int paged = mb || tok || pfx || reg;
    struct hd_s3_bucket *bk = NULL;
    char from[128] = "", next[128];
    size_t n = 0, i, first, more = 0, limit = paged ? 10000 : (size_t)-1, fl;
    uint64_t v;
    struct hd_buf b;
    int rc;

    if (mb && (hd_parse_u64(mb, &v) < 0 || v < 1 || v > 10000)) {
        struct hd_kv ex[] = {{"ArgumentName", "max-buckets"}, {"ArgumentValue", mb}};
        hd_resp_err_ex(r, HD_EMAXBUCKETS, NULL, ex, 2);
        return;
    }
    if (mb)
        limit = (size_t)v;
    if (tok && *tok && tok_decode(tok, from, sizeof(from), &fl) < 0) {
        struct hd_kv ex[] = {{"ArgumentName", "continuation-token"}};
        hd_resp_err_ex(r, HD_EBADTOKEN, NULL, ex, 1);
        return;
    }
    if ((rc = f->buckets(ctx, &bk, &n)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    if (reg && *reg && strcmp(reg, f->region(ctx)) != 0)
        n = 0; /* all of ours live in our region */
    qsort(bk, n, sizeof(*bk), bucket_cmp);
    /* keep the page's buckets at the front: after the token, under the prefix, up to limit
     * (one more, to see whether anything follows) */
    for (i = first = 0; i < n; i++) {
        if (strcmp(bk[i].name, from) <= 0 || (pfx && strncmp(bk[i].name, pfx, strlen(pfx)) != 0))
            continue;
        if (first == limit) {
            more = 1;
            break;
        }
        bk[first++] = bk[i];
    }
    if (more)
        tok_encode(bk[first - 1].name, next, sizeof(next));
    hd_buf_init(&b);
    buckets_xml(&b, c->owner, bk, first, paged ? f->region(ctx) : NULL, more ? next : NULL, pfx);
    free(bk);
    hd_resp_xml(r, 200, &b);
}

static void location(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                     const struct hd_s3_call *c)
{
    struct hd_buf b;
    int rc;

    if ((rc = f->bucket_exists(ctx, c->bucket)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    hd_buf_init(&b);
    location_xml(&b, f->region(ctx));
    hd_resp_xml(r, 200, &b);
}

static void head_bucket(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                        const struct hd_s3_call *c)
{
    int rc = f->bucket_exists(ctx, c->bucket);

    if (rc < 0) {
        hd_resp_err(r, rc);
        return;
    }
    hd_resp_header(r, "x-amz-bucket-region", f->region(ctx));
    hd_resp_empty(r, 200);
}

static void delete_bucket(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                          const struct hd_s3_call *c)
{
    char msg[256] = "";
    int rc = f->bucket_delete(ctx, c->bucket, msg, sizeof(msg));

    if (rc < 0)
        hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
    else
        hd_resp_empty(r, 204);
}

struct hd_s3_list_page {
    struct hd_s3_list_item *items;
    size_t n, cap;
    int truncated;
    char *next;
    const char *warning; /* static text of a Warning header, or NULL */
};

int hd_s3_page_add(struct hd_s3_list_page *pg, const char *name, int is_prefix, uint64_t size,
                   const char *etag, int64_t mtime_ms, const char *mtime_iso, const char *sclass)
{
    struct hd_s3_list_item *it;

    if (pg->n == pg->cap) {
        size_t nc = pg->cap ? pg->cap * 2 : 64;
        if (!(it = realloc(pg->items, nc * sizeof(*it))))
            return -ENOMEM;
        pg->items = it;
        pg->cap = nc;
    }
    it = &pg->items[pg->n];
    memset(it, 0, sizeof(*it));
    it->is_prefix = is_prefix;
    it->size = size;
    it->mtime_ms = mtime_ms;
    if (!(it->name = strdup(name)) || !(it->etag = strdup(etag ? etag : "")) ||
        (mtime_iso && !(it->mtime_iso = strdup(mtime_iso))) ||
        (sclass && *sclass && !(it->sclass = strdup(sclass)))) {
        free((char *)it->name);
        free((char *)it->etag);
        free((char *)it->mtime_iso);
        return -ENOMEM;
    }
    pg->n++;
    return 0;
}

void hd_s3_page_end(struct hd_s3_list_page *pg, int truncated, const char *next)
{
    pg->truncated = truncated;
    free(pg->next);
    pg->next = next ? strdup(next) : NULL;
}

void hd_s3_page_warn(struct hd_s3_list_page *pg, const char *warning)
{
    pg->warning = warning;
}

static void page_cleanup(struct hd_s3_list_page *pg)
{
    size_t i;

    for (i = 0; i < pg->n; i++) {
        free((char *)pg->items[i].name);
        free((char *)pg->items[i].etag);
        free((char *)pg->items[i].mtime_iso);
        free((char *)pg->items[i].sclass);
    }
    free(pg->items);
    free(pg->next);
}

static void list_objects(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                         const struct hd_s3_call *c)
{
    struct hd_s3_list_req q;
    struct hd_s3_list_page page;
    const char *qmsg;
    char msg[256] = "";
    struct hd_buf b;
    int rc;

    if ((rc = hd_s3_list_parse(r, c->op == HD_S3_LIST_VERSIONS, &q, &qmsg)) < 0) {
        struct hd_kv ex[] = {{"ArgumentName", "continuation-token"}, {NULL, NULL}};
        if (rc == HD_EMAXKEYS) {
            ex[0].v = "maxKeys";
            ex[1] = (struct hd_kv){"ArgumentValue", hd_req_param(r, "max-keys")};
        }
        hd_resp_err_ex(r, rc, qmsg, ex, rc == HD_EBADTOKEN ? 1 : rc == HD_EMAXKEYS ? 2 : 0);
        return;
    }
    memset(&page, 0, sizeof(page));
    if ((rc = f->list(ctx, c->bucket, &q, &page, msg, sizeof(msg))) < 0) {
        page_cleanup(&page);
        hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
        return;
    }
    hd_buf_init(&b);
    hd_s3_list_xml(&b, c->bucket, &q, c->owner, page.items, page.n, page.truncated,
                   page.next ? page.next
                   : page.n  ? page.items[page.n - 1].name
                             : NULL);
    if (page.warning)
        hd_resp_header(r, "Warning", page.warning);
    page_cleanup(&page);
    hd_resp_xml(r, 200, &b);
}

/* A bucket call with a body: what it needs once the body is read. */
/* A setting whose XML body a parser turns into its bucket property's canonical JSON. */
struct xml_setting {
    const char *key;
    int (*parse)(const char *body, size_t len, char **out, char *msg, size_t msglen);
};

struct bucket_call {
    const struct hd_s3_front *f;
    void *ctx;
    char bucket[64];
    const struct xml_setting *xs; /* PutBucketCors, PutBucketLifecycleConfiguration */
};

static struct bucket_call *bucket_call(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                                       const char *bucket)
{
    struct bucket_call *bc = calloc(1, sizeof(*bc));

    if (!bc) {
        hd_resp_err(r, -ENOMEM);
        return NULL;
    }
    bc->f = f;
    bc->ctx = ctx;
    snprintf(bc->bucket, sizeof(bc->bucket), "%s", bucket);
    return bc;
}

static int canned_public(const char *canned);

/* The bucket's properties (common/bprops.h; a new reference, NULL when it has none or when *rc,
 * 0 otherwise, is the code that kept them from being read: HD_ENOSUCHBUCKET). */
static json_t *props_json(const struct hd_s3_front *f, void *ctx, const char *bucket, int *rc)
{
    char *props = NULL;
    json_t *j;

    *rc = f->props_get ? f->props_get(ctx, bucket, &props) : 0;
    if (*rc < 0 || !props)
        return NULL;
    j = json_loads(props, 0, NULL);
    free(props);
    return j;
}

/* Bucket property key alone (a new reference; NULL when unset), as props_json. The ACL, CORS
 * and tag calls read the bucket's settings through these two. */
static json_t *setting(const struct hd_s3_front *f, void *ctx, const char *bucket, const char *key,
                       int *rc)
{
    json_t *j = props_json(f, ctx, bucket, rc), *v = json_incref(json_object_get(j, key));

    json_decref(j);
    return v;
}

/* Whether the bucket's block public access setting name is on (hd_pab_on). */
static int pab_on(const struct hd_s3_front *f, void *ctx, const char *bucket, const char *name)
{
    int rc;
    json_t *v = setting(f, ctx, bucket, "public_access_block", &rc);
    int on = hd_pab_on(v, name);

    json_decref(v);
    return on;
}

/* How public the bucket is: 2 when its objects are (anonymous_read, set by the native API),
 * 1 when only its listing is (anonymous_list: S3's public-read bucket ACL), 0 when neither;
 * or a negative code. */
static int bucket_public(const struct hd_s3_front *f, void *ctx, const char *bucket)
{
    int rc;
    json_t *j = props_json(f, ctx, bucket, &rc);

    if (rc >= 0)
        rc = json_is_true(json_object_get(j, "anonymous_read"))   ? 2
             : json_is_true(json_object_get(j, "anonymous_list")) ? 1
                                                                  : 0;
    json_decref(j);
    return rc;
}

/* PutBucketAcl, CreateBucket with x-amz-acl: public-read opens the bucket's listing to
 * everyone (as AWS's READ grant on a bucket: its objects stay private), private closes the
 * listing and the objects. Always sent (the primary merges; a proxy's own view may lag). */
static int bucket_acl_set(const struct hd_s3_front *f, void *ctx, const char *bucket, int pub)
{
    char msg[200];

    if (!f->props_patch)
        return pub ? HD_ENOGRANTS : 0;
    if (pub && pab_on(f, ctx, bucket, "block_public_acls"))
        return HD_EACCESS; /* as AWS: the BlockPublicAcls setting */
    return f->props_patch(ctx, bucket,
                          pub ? "{\"anonymous_list\":true}"
                              : "{\"anonymous_list\":false,\"anonymous_read\":false}",
                          msg, sizeof(msg));
}

/* CreateBucket reads an optional CreateBucketConfiguration body. An x-amz-acl (acl_headers let
 * only private, bucket-owner-full-control and public-read through) sets the bucket's
 * public-read state, also of a bucket that was there. */
static void create_end(struct hd_req *r, void *arg, const char *body, size_t len)
{
    struct bucket_call *bc = arg;
    const char *canned = hd_req_header(r, "x-amz-acl");
    char loc[80];
    int rc, existed;

    if (len && (rc = hd_xml_parse_create_bucket(body, len, loc, sizeof(loc))) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    rc = bc->f->bucket_create(bc->ctx, bc->bucket);
    existed = rc == HD_EBUCKETEXISTS;
    if (existed)
        rc = 0; /* us-east-1 semantics: creating a bucket you own again succeeds */
    /* a new bucket is private already: only public-read, or an ACL for one that was there,
     * changes anything (clients such as rclone send private with every CreateBucket) */
    if (rc == 0 && canned && (existed || canned_public(canned) == 1))
        rc = bucket_acl_set(bc->f, bc->ctx, bc->bucket, canned_public(canned) == 1);
    if (rc < 0) {
        hd_resp_err(r, rc);
        return;
    }
    snprintf(loc, sizeof(loc), "/%s", bc->bucket);
    hd_resp_header(r, "Location", loc);
    hd_resp_empty(r, 200);
}

static void create_bucket(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                          const struct hd_s3_call *c)
{
    struct bucket_call *bc;
    int rc;

    if ((rc = hd_bucket_name_check(c->bucket)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    if ((bc = bucket_call(r, f, ctx, c->bucket)))
        hd_s3_read_body(r, &c->auth, 64u * 1024, create_end, bc, free);
}

/* DeleteObjects: POST /B?delete with up to 1000 keys (no Content-MD5 required). */
static void delete_end(struct hd_req *r, void *arg, const char *body, size_t len)
{
    struct bucket_call *bc = arg;
    struct hd_delete_req dr;
    struct hd_buf b;
    int *err, rc;
    size_t i;

    if ((rc = bc->f->bucket_exists(bc->ctx, bc->bucket)) < 0 ||
        (rc = hd_xml_parse_delete(body, len, &dr)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    if (!(err = calloc(dr.n ? dr.n : 1, sizeof(*err)))) {
        hd_xml_delete_cleanup(&dr);
        hd_resp_err(r, -ENOMEM);
        return;
    }
    for (i = 0; i < dr.n; i++) {
        const char *v = dr.objs[i].version_id;
        err[i] = hd_object_name_check(dr.objs[i].key, strlen(dr.objs[i].key));
        if (err[i] == 0 && v && strcmp(v, "null") != 0)
            err[i] = HD_EBADVERSION; /* every object is version null (see version_check) */
    }
    if ((rc = bc->f->delete_keys(bc->ctx, bc->bucket, &dr, err)) < 0) {
        free(err);
        hd_xml_delete_cleanup(&dr);
        hd_resp_err(r, rc);
        return;
    }
    hd_buf_init(&b);
    delete_result_xml(&b, &dr, err);
    free(err);
    hd_xml_delete_cleanup(&dr);
    hd_resp_xml(r, 200, &b);
}

static void delete_objects(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                           const struct hd_s3_call *c)
{
    struct bucket_call *bc = bucket_call(r, f, ctx, c->bucket);

    if (bc)
        hd_s3_read_body(r, &c->auth, HD_XML_MAX_BODY, delete_end, bc, free);
}

/* ---- ACLs and versioning: what a store without either answers ---- */

#define XSI_NS "http://www.w3.org/2001/XMLSchema-instance"
#define ALL_USERS "http://acs.amazonaws.com/groups/global/AllUsers"

/* The ACL there is: the owner (the caller, as ListObjects shows Owner) has FULL_CONTROL, and
 * everyone READ when the bucket is public-read (pub). xsi:type is not optional in practice:
 * s3cmd reads it from every Grantee. */
static void acl_xml(struct hd_buf *b, const char *owner, int pub)
{
    hd_xml_decl(b);
    hd_xml_open_ns(b, "AccessControlPolicy", S3NS);
    owner_xml(b, owner);
    hd_xml_open(b, "AccessControlList");
    hd_xml_open(b, "Grant");
    hd_buf_puts(b, "<Grantee xmlns:xsi=\"" XSI_NS "\" xsi:type=\"CanonicalUser\">");
    hd_xml_elem(b, "ID", owner);
    hd_xml_elem(b, "DisplayName", owner);
    hd_xml_close(b, "Grantee");
    hd_xml_elem(b, "Permission", "FULL_CONTROL");
    hd_xml_close(b, "Grant");
    if (pub) {
        hd_xml_open(b, "Grant");
        hd_buf_puts(b, "<Grantee xmlns:xsi=\"" XSI_NS "\" xsi:type=\"Group\">");
        hd_xml_elem(b, "URI", ALL_USERS);
        hd_xml_close(b, "Grantee");
        hd_xml_elem(b, "Permission", "READ");
        hd_xml_close(b, "Grant");
    }
    hd_xml_close(b, "AccessControlList");
    hd_xml_close(b, "AccessControlPolicy");
}

static int in_list(const char *v, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(v, *list) == 0)
            return 1;
    return 0;
}

/* The public-read state a canned ACL asks for: 1 (public-read), 0 (private,
 * bucket-owner-full-control), or -1 (any other name). */
static int canned_public(const char *canned)
{
    static const char *const same[] = {"private", "bucket-owner-full-control", NULL};

    return strcmp(canned, "public-read") == 0 ? 1 : in_list(canned, same) ? 0 : -1;
}

#define OBJECTS_PUBLIC                                                                             \
    "The objects of this bucket are public (its anonymous_read property): one of them cannot "     \
    "be made private."

/* Whether an object of a bucket this public (bucket_public) may have the ACL want asks for (1:
 * public-read, 0: private; owner: it is bucket-owner-full-control): an object's ACL is its
 * bucket's. bucket-owner-full-control is always taken (it grants the bucket owner what it has;
 * pipelines send it on every write, as AWS takes it with ACLs disabled); private in a bucket
 * whose objects are public is refused as AWS refuses an ACL its bucket overrides. 0, or the
 * code (and *msg) to answer with. */
static int object_acl_ok(int pub, int want, int owner, const char **msg)
{
    *msg = NULL;
    if (pub < 0)
        return pub;
    if (want && pub != 2)
        return HD_ENOGRANTS; /* an object cannot be more public than its bucket's objects */
    if (!want && !owner && pub == 2) {
        *msg = OBJECTS_PUBLIC;
        return HD_EACLNOTSUPP;
    }
    return 0;
}

/* x-amz-acl and x-amz-grant-* of a call that may carry them (PUT object or bucket, copy,
 * CreateMultipartUpload, PUT ?acl): HD_OK, or HD_DONE when answered. The bucket calls take
 * private, bucket-owner-full-control and public-read (and set them); an object's write takes
 * the one its bucket has (object_acl_ok); the other known canned ACLs and any grant header
 * are 501; an unknown canned name is AWS's 400 InvalidArgument (with its empty Message). */
static int acl_headers(struct hd_req *r, const struct hd_s3_front *f, void *ctx, const char *bucket,
                       enum hd_s3_op op)
{
    static const char *const known[] = {"public-read-write", "authenticated-read", "aws-exec-read",
                                        "bucket-owner-read", "log-delivery-write", NULL};
    const char *canned = hd_req_header(r, "x-amz-acl"), *msg = NULL;
    size_t i;
    int grants = 0, rc, want;

    for (i = 0; i < r->nhdrs; i++)
        grants |= hd_str_case_prefix(r->hdrs[i].k, "x-amz-grant-");
    if (canned && grants) {
        hd_resp_err_msg(r, HD_EBADREQ,
                        "Specifying both Canned ACLs and Header Grants is not allowed");
        return HD_DONE;
    }
    if (grants || (canned && in_list(canned, known))) {
        hd_resp_err(r, HD_ENOGRANTS);
        return HD_DONE;
    }
    if (!canned)
        return HD_OK;
    if ((want = canned_public(canned)) < 0) {
        struct hd_kv ex[] = {{"ArgumentName", "x-amz-acl"}, {"ArgumentValue", canned}};
        hd_resp_err_ex(r, HD_EBADARG, "", ex, 2);
        return HD_DONE;
    }
    if (op == HD_S3_CREATE_BUCKET || op == HD_S3_PUT_BUCKET_ACL)
        rc = want && !f->props_patch ? HD_ENOGRANTS : 0; /* the call sets it */
    else if (want && pab_on(f, ctx, bucket, "block_public_acls"))
        rc = HD_EACCESS; /* an object's public-read, as AWS: the BlockPublicAcls setting */
    else
        rc = object_acl_ok(bucket_public(f, ctx, bucket), want,
                           strcmp(canned, "bucket-owner-full-control") == 0, &msg);
    if (rc < 0) {
        hd_resp_err_msg(r, rc, msg);
        return HD_DONE;
    }
    return HD_OK;
}

/* Headers asking a write for a feature hoard does not have (server-side encryption, object
 * lock, website redirects): the first one's name, or NULL. Dropping them would be a silent
 * success (the client believes its object is encrypted or locked).
 * x-amz-bucket-object-lock-enabled false is harmless. (x-amz-tagging is the target's: native
 * buckets keep tags, S3-backed ones answer 501.) */
static const char *unsupported_write_header(struct hd_req *r, enum hd_s3_op op)
{
    static const char *const sse[] = {"x-amz-server-side-encryption",
                                      "x-amz-copy-source-server-side-encryption", NULL};
    const char *k, *v;
    size_t i, j;

    for (i = 0; i < r->nhdrs; i++) {
        k = r->hdrs[i].k;
        v = r->hdrs[i].v ? r->hdrs[i].v : "";
        for (j = 0; sse[j]; j++)
            if (op != HD_S3_CREATE_BUCKET && hd_str_case_prefix(k, sse[j]))
                return k;
        if (op == HD_S3_CREATE_BUCKET) {
            if (strcasecmp(k, "x-amz-bucket-object-lock-enabled") == 0 &&
                strcasecmp(v, "false") != 0)
                return k;
            continue;
        }
        if (op == HD_S3_UPLOAD_PART || op == HD_S3_UPLOAD_PART_COPY)
            continue;
        if (hd_str_case_prefix(k, "x-amz-object-lock-") ||
            strcasecmp(k, "x-amz-website-redirect-location") == 0)
            return k;
    }
    return NULL;
}

/* Buckets are unversioned: every object is version "null". A versionId naming another
 * version (of the object, or of a copy source) is AWS's 400 InvalidArgument, never a read,
 * copy or delete of the current object. HD_OK, or HD_DONE when answered. */
static int version_check(struct hd_req *r, enum hd_s3_op op)
{
    const char *v = NULL, *src, *q;
    struct hd_query sq = {0};
    int rc = HD_OK;

    switch (op) {
    case HD_S3_GET_OBJECT:
    case HD_S3_HEAD_OBJECT:
    case HD_S3_DELETE_OBJECT:
    case HD_S3_GET_OBJECT_ACL:
    case HD_S3_PUT_OBJECT_ACL:
    case HD_S3_GET_OBJECT_TAGGING:
    case HD_S3_PUT_OBJECT_TAGGING:
    case HD_S3_DELETE_OBJECT_TAGGING:
    case HD_S3_GET_OBJECT_ATTRIBUTES:
        v = hd_query_get(&r->query, "versionId");
        break;
    case HD_S3_COPY_OBJECT:
    case HD_S3_UPLOAD_PART_COPY:
        src = hd_req_header(r, "x-amz-copy-source");
        if (src && (q = strchr(src, '?'))) {
            if (hd_query_parse(q + 1, &sq) < 0) {
                hd_resp_err(r, HD_EBADARG);
                return HD_DONE;
            }
            v = hd_query_get(&sq, "versionId");
        }
        break;
    default:
        break;
    }
    if (v && strcmp(v, "null") != 0) {
        struct hd_kv ex[] = {{"ArgumentName", "versionId"}, {"ArgumentValue", v}};
        hd_resp_err_ex(r, HD_EBADVERSION, *v ? NULL : "Version id cannot be the empty string", ex,
                       2);
        rc = HD_DONE;
    }
    hd_query_free(&sq);
    return rc;
}

/* An AccessControlPolicy body: 0 when it grants the owner FULL_CONTROL and nobody anything
 * else but perhaps everyone READ (*pub 1); what GET ?acl answers, and what s3cmd copies from
 * object to object. */
static int acl_body_check(const char *body, size_t len, const char *owner, int *pub)
{
    struct hd_xnode *root = NULL, *acl, *g;
    int rc = hd_xml_parse(body, len, &root), owned = 0;

    *pub = 0;
    if (rc < 0)
        return rc;
    if (strcmp(root->name, "AccessControlPolicy") != 0 ||
        !(acl = hd_xnode_child(root, "AccessControlList"))) {
        rc = HD_EMALFORMEDXML;
        goto out;
    }
    rc = 0;
    for (g = hd_xnode_child(acl, "Grant"); g && rc == 0; g = hd_xnode_next(g, "Grant")) {
        struct hd_xnode *who = hd_xnode_child(g, "Grantee");
        const char *perm = hd_xnode_child_text(g, "Permission");
        const char *id = who ? hd_xnode_child_text(who, "ID") : NULL;
        const char *uri = who ? hd_xnode_child_text(who, "URI") : NULL;

        int one = who && perm && !hd_xnode_child(who, "EmailAddress") && !(id && uri);

        if (one && id && strcmp(id, owner) == 0 && strcmp(perm, "FULL_CONTROL") == 0)
            owned = 1;
        else if (one && uri && strcmp(uri, ALL_USERS) == 0 && strcmp(perm, "READ") == 0)
            *pub = 1;
        else
            rc = HD_ENOGRANTS;
    }
    if (rc == 0 && !owned)
        rc = HD_ENOGRANTS; /* taking the owner's own rights away */
out:
    hd_xnode_free(root);
    return rc;
}

/* A PUT ?acl: what its end needs. */
struct acl_call {
    const struct hd_s3_front *f;
    void *ctx;
    char bucket[64];
    char *owner;
    int pub;    /* the bucket's state before (bucket_public) */
    int object; /* PutObjectAcl */
};

static void acl_call_free(void *arg)
{
    struct acl_call *a = arg;

    free(a->owner);
    free(a);
}

static void acl_put_end(struct hd_req *r, void *ctx, const char *body, size_t len)
{
    struct acl_call *a = ctx;
    const char *canned = hd_req_header(r, "x-amz-acl"), *msg = NULL;
    int rc = 0, want = 0;

    if (len)
        rc = acl_body_check(body, len, a->owner, &want);
    else if (canned)
        want = canned_public(canned) == 1; /* acl_headers refused the others */
    else
        rc = HD_EMALFORMEDXML; /* neither a canned ACL nor a policy */
    if (rc == 0 && a->object && want && pab_on(a->f, a->ctx, a->bucket, "block_public_acls"))
        rc = HD_EACCESS; /* as AWS: the BlockPublicAcls setting */
    if (rc == 0)
        rc = a->object
                 ? object_acl_ok(a->pub, want,
                                 !len && strcmp(canned, "bucket-owner-full-control") == 0, &msg)
                 : bucket_acl_set(a->f, a->ctx, a->bucket, want);
    if (rc < 0)
        hd_resp_err_msg(r, rc, msg);
    else
        hd_resp_empty(r, 200);
}

static void acl_answer(struct hd_req *r, const struct hd_s3_call *c, const struct hd_s3_front *f,
                       void *ctx, int pub, int object)
{
    struct acl_call *a;
    struct hd_buf b;

    if (strcmp(r->method, "PUT") == 0) {
        if (!(a = calloc(1, sizeof(*a))) || !(a->owner = strdup(c->owner))) {
            free(a);
            hd_resp_err(r, -ENOMEM);
            return;
        }
        a->f = f;
        a->ctx = ctx;
        snprintf(a->bucket, sizeof(a->bucket), "%s", c->bucket);
        a->pub = pub;
        a->object = object;
        hd_s3_read_body(r, &c->auth, (size_t)64 * 1024, acl_put_end, a, acl_call_free);
        return;
    }
    hd_buf_init(&b);
    acl_xml(&b, c->owner, object ? pub == 2 : pub > 0); /* AllUsers may read it */
    hd_resp_xml(r, 200, &b);
}

void hd_s3_acl_answer(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                      const struct hd_s3_call *c)
{
    int rc = bucket_public(f, ctx, c->bucket);

    if (rc < 0)
        hd_resp_err(r, rc);
    else
        acl_answer(r, c, f, ctx, rc, 1);
}

static void bucket_acl(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                       const struct hd_s3_call *c)
{
    int rc = f->bucket_exists(ctx, c->bucket);

    if (rc == 0)
        rc = bucket_public(f, ctx, c->bucket);
    if (rc < 0)
        hd_resp_err(r, rc);
    else
        acl_answer(r, c, f, ctx, rc, 0);
}

static void get_versioning(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                           const struct hd_s3_call *c)
{
    struct hd_buf b;
    int rc = f->bucket_exists(ctx, c->bucket);

    if (rc < 0) {
        hd_resp_err(r, rc);
        return;
    }
    /* never versioned: no Status (rclone and the aws CLI read "unversioned") */
    hd_buf_init(&b);
    hd_xml_decl(&b);
    hd_buf_puts(&b, "<VersioningConfiguration xmlns=\"" S3NS "\"/>");
    hd_resp_xml(r, 200, &b);
}

/* Suspended is what an unversioned bucket already behaves as: a no-op. Enabled is not there. */
static void versioning_end(struct hd_req *r, void *ctx, const char *body, size_t len)
{
    struct hd_xnode *root = NULL;
    const char *st, *mfa;
    int rc = hd_xml_parse(body, len, &root);

    if (rc == 0 && strcmp(root->name, "VersioningConfiguration") != 0)
        rc = HD_EMALFORMEDXML;
    if (rc == 0) {
        st = hd_xnode_child_text(root, "Status");
        mfa = hd_xnode_child_text(root, "MfaDelete");
        if ((st && strcmp(st, "Enabled") == 0) || (mfa && strcmp(mfa, "Enabled") == 0))
            rc = HD_ENOVERSIONING;
        else if ((st && strcmp(st, "Suspended") != 0) || (mfa && strcmp(mfa, "Disabled") != 0))
            rc = HD_EMALFORMEDXML;
    }
    hd_xnode_free(root);
    if (rc < 0)
        hd_resp_err(r, rc);
    else
        hd_resp_empty(r, 200);
}

static void put_versioning(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                           const struct hd_s3_call *c)
{
    int rc = f->bucket_exists(ctx, c->bucket);

    if (rc < 0)
        hd_resp_err(r, rc);
    else
        hd_s3_read_body(r, &c->auth, (size_t)64 * 1024, versioning_end, NULL, NULL);
}

/* GetBucketPolicy, GetBucketLifecycleConfiguration, ... of a bucket that exists: the "none"
 * answer; DeleteBucketPolicy, ...: 204. */
/* ---- CORS (the bucket property "cors", common/cors.h) ---- */

/* "a, b, c" of the strings of a rule's list key into b (empty when none). */
static void joined(struct hd_buf *b, const json_t *rule, const char *key)
{
    const json_t *a = json_object_get(rule, key);
    size_t i;

    for (i = 0; i < json_array_size(a); i++)
        if (json_is_string(json_array_get(a, i)))
            hd_buf_printf(b, "%s%s", b->len ? ", " : "", json_string_value(json_array_get(a, i)));
}

/* The Access-Control-* answer of rule to origin; allow: the preflight's requested headers (NULL
 * on an actual request). A rule allowing every origin ("*") answers "*", without credentials. */
static void cors_headers(struct hd_req *r, const json_t *rule, const char *origin,
                         const char *allow)
{
    const json_t *o = json_object_get(rule, "origins");
    struct hd_buf b;
    size_t i;
    int star = 0;

    for (i = 0; i < json_array_size(o); i++)
        star |= json_is_string(json_array_get(o, i)) &&
                strcmp(json_string_value(json_array_get(o, i)), "*") == 0;
    hd_resp_header(r, "Access-Control-Allow-Origin", star ? "*" : origin);
    hd_buf_init(&b);
    joined(&b, rule, "methods");
    if (b.len && !b.oom)
        hd_resp_header(r, "Access-Control-Allow-Methods", b.data);
    hd_buf_cleanup(&b);
    if (allow && *allow)
        hd_resp_header(r, "Access-Control-Allow-Headers", allow);
    hd_buf_init(&b);
    joined(&b, rule, "expose");
    if (b.len && !b.oom)
        hd_resp_header(r, "Access-Control-Expose-Headers", b.data);
    hd_buf_cleanup(&b);
    if (json_is_integer(json_object_get(rule, "max_age"))) {
        char n[24];
        snprintf(n, sizeof(n), "%lld",
                 (long long)json_integer_value(json_object_get(rule, "max_age")));
        hd_resp_header(r, "Access-Control-Max-Age", n);
    }
    if (!star)
        hd_resp_header(r, "Access-Control-Allow-Credentials", "true");
    hd_resp_header(r, "Vary",
                   "Origin, Access-Control-Request-Headers, Access-Control-Request-Method");
}

/* A browser's request (it has an Origin) to a bucket with CORS rules gets the headers of the
 * rule that allows it (its method, or the Access-Control-Request-Method it names), whatever
 * the answer: an error too, so the page can read it. */
static void cors_actual(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                        const char *bucket)
{
    const char *origin = hd_req_header(r, "Origin"), *m;
    json_t *rules;
    int rc, i;

    if (!origin || !bucket || !(rules = setting(f, ctx, bucket, "cors", &rc)))
        return;
    m = hd_req_header(r, "Access-Control-Request-Method");
    if ((i = hd_cors_find(rules, origin, m ? m : r->method, NULL)) >= 0)
        cors_headers(r, json_array_get(rules, (size_t)i), origin, NULL);
    json_decref(rules);
}

/* OPTIONS: a browser's preflight, unauthenticated (browsers send no credentials with it). A
 * missing bucket is answered as one without CORS (no 404 for unsigned callers to probe). */
static void cors_preflight(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                           const char *bucket, const char *key)
{
    const char *origin = hd_req_header(r, "Origin");
    const char *m = hd_req_header(r, "Access-Control-Request-Method");
    const char *hdrs = hd_req_header(r, "Access-Control-Request-Headers");
    json_t *rules = NULL;
    char msg[96];
    int rc, i = -1;

    if (!origin) {
        hd_resp_err(r, HD_ECORSBAD);
        return;
    }
    if (!m || (strcmp(m, "GET") != 0 && strcmp(m, "PUT") != 0 && strcmp(m, "POST") != 0 &&
               strcmp(m, "DELETE") != 0 && strcmp(m, "HEAD") != 0)) {
        snprintf(msg, sizeof(msg), "Invalid Access-Control-Request-Method: %.40s", m ? m : "null");
        hd_resp_err_msg(r, HD_ECORSBAD, msg);
        return;
    }
    if (bucket)
        rules = setting(f, ctx, bucket, "cors", &rc);
    if (rules)
        i = hd_cors_find(rules, origin, m, hdrs);
    if (i >= 0) {
        cors_headers(r, json_array_get(rules, (size_t)i), origin, hdrs);
        hd_resp_empty(r, 200);
    } else {
        struct hd_kv ex[] = {{"Method", m}, {"ResourceType", key ? "OBJECT" : "BUCKET"}};
        hd_resp_err_ex(r, HD_ECORSDENY,
                       rules ? NULL : "CORSResponse: CORS is not enabled for this bucket.", ex, 2);
    }
    json_decref(rules);
}

/* Sets the bucket property key to value (JSON text; NULL removes it) and answers status, or
 * the error (with the role's message). */
static void setting_answer(struct hd_req *r, const struct bucket_call *bc, const char *key,
                           const char *value, int status)
{
    char msg[256] = "";
    struct hd_buf patch;
    int rc;

    hd_buf_init(&patch);
    hd_buf_printf(&patch, "{\"%s\":%s}", key, value ? value : "null");
    rc =
        patch.oom ? -ENOMEM : bc->f->props_patch(bc->ctx, bc->bucket, patch.data, msg, sizeof(msg));
    hd_buf_cleanup(&patch);
    if (rc < 0)
        hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
    else
        hd_resp_empty(r, status);
}

/* PutBucketCors, PutBucketTagging, PutBucketLifecycleConfiguration: the body (at most max
 * bytes) goes to end, with xs (NULL for tags) in the bucket_call. */
static void put_setting(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                        const struct hd_s3_call *c, size_t max, hd_s3_body_fn end,
                        const struct xml_setting *xs)
{
    struct bucket_call *bc;
    int rc = f->bucket_exists(ctx, c->bucket);

    if (rc < 0) {
        hd_resp_err(r, rc);
    } else if (!f->props_patch) {
        hd_resp_err(r, HD_ENOTIMPL);
    } else if ((bc = bucket_call(r, f, ctx, c->bucket))) {
        bc->xs = xs;
        hd_s3_read_body(r, &c->auth, max, end, bc, free);
    }
}

/* The body of an XML setting parsed into its property, which is then set (200). */
static void xml_setting_end(struct hd_req *r, void *arg, const char *body, size_t len)
{
    const struct bucket_call *bc = arg;
    char *value = NULL, msg[256];
    int rc = bc->xs->parse(body, len, &value, msg, sizeof(msg));

    if (rc < 0)
        hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
    else
        setting_answer(r, bc, bc->xs->key, value, 200);
    free(value);
}

static const struct xml_setting cors_setting = {"cors", hd_cors_parse_xml};
static const struct xml_setting pab_setting = {"public_access_block", hd_pab_parse_xml};
static const struct xml_setting lc_setting = {"lifecycle", hd_lc_parse_xml};

static void put_cors(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                     const struct hd_s3_call *c)
{
    put_setting(r, f, ctx, c, (size_t)HD_CORS_JSON_MAX * 2, xml_setting_end, &cors_setting);
}

/* PutPublicAccessBlock (the bucket property "public_access_block", common/policy.h) */
static void put_pab(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                    const struct hd_s3_call *c)
{
    put_setting(r, f, ctx, c, HD_PAB_MAX, xml_setting_end, &pab_setting);
}

/* ---- lifecycle rules (the bucket property "lifecycle", common/lifecycle.h) ---- */

static void put_lifecycle(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                          const struct hd_s3_call *c)
{
    put_setting(r, f, ctx, c, HD_XML_MAX_BODY, xml_setting_end, &lc_setting);
}

/* ---- bucket policies (the bucket property "policy": the document, common/policy.h) ---- */

static void policy_put_end(struct hd_req *r, void *arg, const char *body, size_t len)
{
    const struct bucket_call *bc = arg;
    char msg[512], *value;
    json_t *doc;
    int grants, rc = hd_policy_check(bc->bucket, body, len, &grants, msg, sizeof(msg));

    if (rc < 0) {
        hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
        return;
    }
    if ((grants & HD_POLICY_PUBLIC) && pab_on(bc->f, bc->ctx, bc->bucket, "block_public_policy")) {
        hd_resp_err_msg(r, HD_EACCESS,
                        "Access Denied: public policies are blocked by the BlockPublicPolicy "
                        "block public access setting.");
        return;
    }
    doc = json_stringn(body, len); /* as sent: GetBucketPolicy gives it back */
    value = doc ? json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    json_decref(doc);
    if (!value)
        hd_resp_err(r, -ENOMEM);
    else
        setting_answer(r, bc, "policy", value, 204);
    free(value);
}

static void put_policy(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                       const struct hd_s3_call *c)
{
    /* read past the bound, so that a document over it is MalformedPolicy, as AWS says */
    put_setting(r, f, ctx, c, (size_t)HD_POLICY_MAX * 2, policy_put_end, NULL);
}

/* GetBucketPolicy (the document as it was sent), DeleteBucketPolicy, GetBucketPolicyStatus
 * (IsPublic: the policy grants everyone something). */
static void policy_config(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                          const struct hd_s3_call *c)
{
    char msg[256] = "";
    struct hd_buf b;
    int rc;
    json_t *v = setting(f, ctx, c->bucket, "policy", &rc);
    const char *doc = json_string_value(v);

    if (rc >= 0 && c->op == HD_S3_DELETE_BUCKET_CONFIG) {
        rc = v ? f->props_patch(ctx, c->bucket, "{\"policy\":null}", msg, sizeof(msg)) : 0;
        if (rc >= 0)
            hd_resp_empty(r, 204);
    }
    if (rc < 0) {
        hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
    } else if (c->op == HD_S3_DELETE_BUCKET_CONFIG) {
        ; /* answered */
    } else if (!doc) {
        hd_resp_err(r, HD_ENOBUCKETPOLICY);
    } else if (c->op == HD_S3_GET_POLICY_STATUS) {
        hd_buf_init(&b);
        hd_xml_decl(&b);
        hd_buf_printf(&b, "<PolicyStatus xmlns=\"" S3NS "\"><IsPublic>%s</IsPublic></PolicyStatus>",
                      (hd_policy_grants(c->bucket, doc) & HD_POLICY_PUBLIC) ? "true" : "false");
        hd_resp_xml(r, 200, &b);
    } else {
        hd_resp_copy(r, 200, "application/json", doc, json_string_length(v));
    }
    json_decref(v);
}

static void policy_status(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                          const struct hd_s3_call *c)
{
    int rc = f->bucket_exists(ctx, c->bucket);

    if (rc < 0)
        hd_resp_err(r, rc);
    else
        policy_config(r, f, ctx, c);
}

/* ---- bucket tags (the bucket property "tags": {key: value}) ---- */

static void tags_put_end(struct hd_req *r, void *arg, const char *body, size_t len)
{
    char *tags = NULL;
    int rc = hd_tags_parse_xml_max(body, len, HD_BUCKET_TAGS_MAX, &tags);

    if (rc == HD_ETAGCOUNT)
        hd_resp_err_msg(r, rc, "Bucket tag count cannot be greater than 50");
    else if (rc < 0)
        hd_resp_err(r, rc);
    else
        setting_answer(r, arg, "tags", tags, 204); /* an empty set (NULL): none */
    free(tags);
}

static void put_tagging(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                        const struct hd_s3_call *c)
{
    put_setting(r, f, ctx, c, 64u * 1024, tags_put_end, NULL);
}

static void tags_xml(struct hd_buf *b, const json_t *tags)
{
    char *text = json_dumps(tags, JSON_COMPACT);

    if (!text)
        b->oom = 1;
    else
        hd_tags_xml(b, text);
    free(text);
}

/* GET and DELETE of a setting kept as bucket property key (cors, tags): its document (xml), or
 * none: the error missing on GET, 204 on DELETE. */
static void setting_config(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                           const struct hd_s3_call *c, const char *key, int missing,
                           void (*xml)(struct hd_buf *b, const json_t *v))
{
    char msg[256] = "", patch[32];
    struct hd_buf b;
    int rc;
    json_t *v = setting(f, ctx, c->bucket, key, &rc);

    if (rc >= 0 && c->op == HD_S3_DELETE_BUCKET_CONFIG) {
        snprintf(patch, sizeof(patch), "{\"%s\":null}", key);
        rc = v ? f->props_patch(ctx, c->bucket, patch, msg, sizeof(msg)) : 0;
        if (rc >= 0) {
            hd_resp_empty(r, 204);
            goto out;
        }
    }
    if (rc < 0) {
        hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
    } else if (!v) {
        hd_resp_err(r, missing);
    } else {
        hd_buf_init(&b);
        xml(&b, v);
        hd_resp_xml(r, 200, &b);
    }
out:
    json_decref(v);
}

static void bucket_config(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                          const struct hd_s3_call *c)
{
    const struct bucket_config *cfg = bucket_config_of(r);
    struct hd_buf b;
    int rc = f->bucket_exists(ctx, c->bucket);

    if (rc < 0) {
        hd_resp_err(r, rc);
    } else if (strcmp(cfg->sub, "cors") == 0) {
        setting_config(r, f, ctx, c, "cors", HD_ENOCORS, hd_cors_xml);
    } else if (strcmp(cfg->sub, "tagging") == 0) {
        setting_config(r, f, ctx, c, "tags", HD_ENOTAGSET, tags_xml);
    } else if (strcmp(cfg->sub, "lifecycle") == 0) {
        setting_config(r, f, ctx, c, "lifecycle", HD_ENOLIFECYCLE, hd_lc_xml);
    } else if (strcmp(cfg->sub, "policy") == 0) {
        policy_config(r, f, ctx, c);
    } else if (strcmp(cfg->sub, "publicAccessBlock") == 0) {
        setting_config(r, f, ctx, c, "public_access_block", HD_ENOPUBLICBLOCK, hd_pab_xml);
    } else if (c->op == HD_S3_DELETE_BUCKET_CONFIG) {
        hd_resp_empty(r, 204);
    } else if (cfg->err) {
        hd_resp_err(r, cfg->err);
    } else {
        hd_buf_init(&b);
        hd_xml_decl(&b);
        if (cfg->inner)
            hd_buf_printf(&b, "<%s xmlns=\"" S3NS "\">%s</%s>", cfg->root, cfg->inner, cfg->root);
        else
            hd_buf_printf(&b, "<%s xmlns=\"" S3NS "\"/>", cfg->root);
        hd_resp_xml(r, 200, &b);
    }
}

typedef void (*builtin_fn)(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                           const struct hd_s3_call *c);

static const builtin_fn builtin[HD_S3_OP_COUNT] = {
    [HD_S3_LIST_BUCKETS] = list_buckets,          [HD_S3_GET_LOCATION] = location,
    [HD_S3_LIST_VERSIONS] = list_objects,         [HD_S3_DELETE_OBJECTS] = delete_objects,
    [HD_S3_LIST_OBJECTS] = list_objects,          [HD_S3_HEAD_BUCKET] = head_bucket,
    [HD_S3_CREATE_BUCKET] = create_bucket,        [HD_S3_DELETE_BUCKET] = delete_bucket,
    [HD_S3_GET_BUCKET_ACL] = bucket_acl,          [HD_S3_PUT_BUCKET_ACL] = bucket_acl,
    [HD_S3_GET_VERSIONING] = get_versioning,      [HD_S3_PUT_VERSIONING] = put_versioning,
    [HD_S3_GET_BUCKET_CONFIG] = bucket_config,    [HD_S3_DELETE_BUCKET_CONFIG] = bucket_config,
    [HD_S3_PUT_BUCKET_CORS] = put_cors,           [HD_S3_PUT_BUCKET_TAGGING] = put_tagging,
    [HD_S3_PUT_BUCKET_LIFECYCLE] = put_lifecycle, [HD_S3_PUT_BUCKET_POLICY] = put_policy,
    [HD_S3_GET_POLICY_STATUS] = policy_status,    [HD_S3_PUT_PUBLIC_ACCESS_BLOCK] = put_pab,
};

/* ---- dispatch ---- */

/* Signed by its sender (Authorization header or a presigned query), whether or not this
 * node checks signatures (auth off): what response-* overrides need. */
static int signed_request(const struct hd_req *r)
{
    const char *a = hd_req_header(r, "Authorization"); /* an empty one is none (sigv4.h) */

    return (a && a[strspn(a, " \t")]) || hd_req_param(r, "X-Amz-Signature") ||
           hd_req_param(r, "Signature");
}

/* GetObject / HeadObject response-* parameters: the headers they name replace the object's
 * in a 200/206 answer. 0, or the error to answer (an unsigned request, a value that cannot be
 * a header). An empty value is ignored; none is checked for syntax (response-expires=123 is
 * sent as is). */
static int response_overrides(struct hd_req *r)
{
    static const char *const map[][2] = {
        {"response-cache-control", "Cache-Control"},
        {"response-content-disposition", "Content-Disposition"},
        {"response-content-encoding", "Content-Encoding"},
        {"response-content-language", "Content-Language"},
        {"response-content-type", "Content-Type"},
        {"response-expires", "Expires"},
    };
    size_t i, any = 0;
    const char *v, *p;

    for (i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        const struct hd_query_param *qp = hd_query_find(&r->query, map[i][0]);
        if (!qp || !qp->value_len)
            continue;
        for (p = qp->value; p < qp->value + qp->value_len; p++)
            if ((unsigned char)*p < 0x20 && *p != '\t')
                return HD_EBADHEADER; /* a CR, LF or NUL would split or cut the header */
        any++;
    }
    if (!any)
        return 0;
    if (!signed_request(r))
        return HD_EANONOVERRIDE;
    for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if ((v = hd_req_param(r, map[i][0])) && *v && hd_resp_override(r, map[i][1], v) < 0)
            return -ENOMEM;
    return 0;
}

/* A presigned URL past its time (SigV4 or SigV2): AWS's body names the times. */
static void expired(struct hd_req *r, const struct hd_sigv4_auth *a)
{
    struct hd_kv ex[3];
    char in[24], at[32], now[32];
    size_t n = 0;

    if (a->date) { /* SigV4: X-Amz-Date + X-Amz-Expires */
        snprintf(in, sizeof(in), "%ld", a->expires_in);
        ex[n++] = (struct hd_kv){"X-Amz-Expires", in};
    }
    if (a->expires_at) {
        hd_iso8601_ms((int64_t)a->expires_at * 1000, at);
        at[19] = 'Z'; /* whole seconds, as AWS writes them */
        at[20] = '\0';
        ex[n++] = (struct hd_kv){"Expires", at};
    }
    hd_iso8601_ms((int64_t)time(NULL) * 1000, now);
    now[19] = 'Z';
    now[20] = '\0';
    ex[n++] = (struct hd_kv){"ServerTime", now};
    hd_resp_err_ex(r, HD_EEXPIRED, NULL, ex, n);
}

/* 405 as AWS words it: <Method> and <ResourceType>, the subresource's (PUT ?versions:
 * VERSIONS; ?uploadId: UPLOAD, PART with a partNumber) or else the level's. */
static void method_not_allowed(struct hd_req *r, enum level level, const char *sub)
{
    static const char *const levels[] = {
        [SERVICE] = "SERVICE", [BUCKET] = "BUCKET", [OBJECT] = "OBJECT"};
    char type[32];
    size_t i;

    if (!sub) {
        snprintf(type, sizeof(type), "%s", levels[level]);
    } else if (strcmp(sub, "uploadId") == 0) {
        snprintf(type, sizeof(type), "%s", hd_req_param(r, "partNumber") ? "PART" : "UPLOAD");
    } else {
        for (i = 0; sub[i] && i + 1 < sizeof(type); i++)
            type[i] = (char)(sub[i] >= 'a' && sub[i] <= 'z' ? sub[i] - 'a' + 'A' : sub[i]);
        type[i] = '\0';
    }
    hd_resp_err_ex(r, HD_EMETHOD, NULL,
                   (const struct hd_kv[]){{"Method", r->method}, {"ResourceType", type}}, 2);
}

void hd_s3_dispatch(struct hd_req *r, const char *path, const struct hd_s3_front *f, void *ctx)
{
    struct hd_s3_call c;
    const char *rest, *slash, *hname, *ctype, *sub;
    char *bucket = NULL, *key = NULL, *vpath;
    enum level level;
    int rc, crc;

    r->api = HD_API_S3;
    memset(&c, 0, sizeof(c));
    vpath = f->vhost(r, ctx, path);
    if (vpath)
        path = vpath;
    rest = path + 1; /* skip '/' */
    if (*rest) {
        slash = strchr(rest, '/');
        rc = hd_bucket_decode(rest, slash ? (size_t)(slash - rest) : strlen(rest), &bucket);
        if (rc == 0 && slash && slash[1] &&
            (rc = hd_url_decode_dup(slash + 1, strlen(slash + 1), &key, &c.klen)) == HD_EBADARG)
            rc = HD_EBADKEY;
        if (rc == 0)
            rc = hd_req_err_names(r, bucket, key);
        if (rc < 0) {
            hd_resp_err(r, rc);
            goto out;
        }
    }
    if (strcmp(r->method, "OPTIONS") == 0) {
        cors_preflight(r, f, ctx, bucket, key);
        goto out;
    }
    /* POST Object (an HTML form upload, its policy signed inside the form, so the request
     * itself is unsigned): the role checks the form; a role without it says so before
     * authentication would answer 403 AccessDenied to a request that could never pass */
    if (bucket && !key && strcmp(r->method, "POST") == 0 &&
        (ctype = hd_req_header(r, "Content-Type")) &&
        hd_str_case_prefix(ctype, "multipart/form-data")) {
        cors_actual(r, f, ctx, bucket);
        if (f->post_object) {
            c.bucket = bucket;
            c.vpath = vpath;
            c.owner = "anonymous";
            r->op = HD_OP_PUT;
            snprintf(r->bucket, sizeof(r->bucket), "%s", bucket);
            f->post_object(r, ctx, &c);
        } else {
            hd_resp_err_msg(r, HD_ENOTIMPL,
                            "POST Object (browser-based uploads with an HTML form) is served by "
                            "the proxies; send the form to a proxy.");
        }
        goto out;
    }
    /* the operation first: an unsigned caller gets what it names (public_op) and nothing
     * else; its errors are answered after authentication's */
    level = !bucket ? SERVICE : !key ? BUCKET : OBJECT;
    crc = classify(r, level, &c.op, &sub);
    r->pub = crc == 0 ? public_op(c.op) : HD_PUB_NONE;
    r->policy_call =
        crc == 0 && (c.op == HD_S3_PUT_BUCKET_POLICY || c.op == HD_S3_GET_POLICY_STATUS ||
                     ((c.op == HD_S3_GET_BUCKET_CONFIG || c.op == HD_S3_DELETE_BUCKET_CONFIG) &&
                      strcmp(bucket_config_of(r)->sub, "policy") == 0));
    r->pub_key = r->pub == HD_PUB_READ ? key : NULL;
    rc = f->authenticate(r, ctx, bucket, key, &c.auth);
    r->pub_key = NULL;
    if (rc == HD_AGAIN)
        goto out; /* parked: this runs again */
    cors_actual(r, f, ctx, bucket);
    if (rc == HD_EEXPIRED) {
        expired(r, &c.auth);
        goto out;
    }
    if (rc < 0) {
        hd_resp_err(r, rc);
        goto out;
    }
    if (level == OBJECT && (rc = hd_object_name_check(key, c.klen)) < 0) {
        hd_resp_err(r, rc);
        goto out;
    }
    if (crc == HD_EMETHOD) {
        method_not_allowed(r, level, sub);
        goto out;
    }
    if (crc < 0) {
        hd_resp_err(r, crc);
        goto out;
    }
    r->op = metric_op(c.op);
    if (bucket)
        snprintf(r->bucket, sizeof(r->bucket), "%s", bucket);
    if (version_check(r, c.op) == HD_DONE)
        goto out;
    /* A body framed by neither Content-Length nor Transfer-Encoding has no bytes (RFC 9112):
     * AWS answers 411 rather than store the empty object the client did not mean (s3-tests
     * test_object_create_bad_contentlength_none). Chunked framing stays accepted: botocore
     * sends aws-chunked bodies in it over https, curl -T - streams with it. */
    if ((c.op == HD_S3_PUT_OBJECT || c.op == HD_S3_UPLOAD_PART) &&
        !hd_req_header(r, "Content-Length") && !hd_req_header(r, "Transfer-Encoding")) {
        hd_resp_err(r, HD_EMISSINGLENGTH);
        goto out;
    }
    switch (c.op) {
    case HD_S3_PUT_OBJECT:
    case HD_S3_COPY_OBJECT:
    case HD_S3_CREATE_MPU:
    case HD_S3_CREATE_BUCKET:
    case HD_S3_PUT_BUCKET_ACL:
    case HD_S3_PUT_OBJECT_ACL:
        if (acl_headers(r, f, ctx, bucket, c.op) == HD_DONE)
            goto out;
        if (c.op == HD_S3_PUT_BUCKET_ACL || c.op == HD_S3_PUT_OBJECT_ACL)
            break;
        /* fall through */
    case HD_S3_UPLOAD_PART:
    case HD_S3_UPLOAD_PART_COPY:
        if ((hname = unsupported_write_header(r, c.op))) {
            struct hd_kv ex = {"Header", hname};
            hd_resp_err_ex(r, HD_ENOTIMPL,
                           "A header you provided implies functionality that is not "
                           "implemented: hoard has no server-side encryption, object lock "
                           "or website redirects.",
                           &ex, 1);
            goto out;
        }
        break;
    case HD_S3_GET_OBJECT:
    case HD_S3_HEAD_OBJECT:
        if ((rc = response_overrides(r)) < 0) {
            hd_resp_err_msg(r, rc,
                            rc == HD_EBADHEADER
                                ? "Header value cannot be represented using ISO-8859-1."
                                : NULL);
            goto out;
        }
        break;
    default:
        break;
    }
    c.bucket = bucket;
    c.key = key;
    c.vpath = vpath;
    c.owner = c.auth.anonymous || !c.auth.access_key[0] ? "anonymous" : c.auth.access_key;
    if (f->handlers[c.op])
        f->handlers[c.op](r, ctx, &c);
    else if (level == OBJECT && f->object)
        f->object(r, ctx, &c);
    else if (level != OBJECT && builtin[c.op])
        builtin[c.op](r, f, ctx, &c);
    else
        hd_resp_err_msg(r, HD_ENOTIMPL, NULL);
out:
    free(vpath);
    free(bucket);
    free(key);
}
