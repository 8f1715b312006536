/* s3front: the S3 REST front end both roles share. One place reads an S3 request (path
 * style at "/" and "/s3/", virtual-host style under s3.domain), decodes bucket and key,
 * asks the role who is calling, classifies the call from one table {method, subresource,
 * level} -> operation, and answers 405/501 for what is not there; the role only plugs in a
 * handler per operation (the proxy routes, the target stores). The answers both roles
 * build the same way live here too: listing parameters and the ListObjects XML, ListBuckets
 * (with its pages), GetBucketLocation, DeleteObjects results, the ACL and versioning answers
 * of a store that keeps neither, and reading a small XML request body with its payload
 * checks. Every call's x-amz-acl / x-amz-grant-* and GetObject's response-* parameters are
 * checked here too, before the role sees the call. HTTP workers. */
#ifndef HD_S3FRONT_H
#define HD_S3FRONT_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/http.h"
#include "common/sigv4.h"
#include "common/xml.h"

enum hd_s3_op {
    HD_S3_LIST_BUCKETS,
    /* bucket level */
    HD_S3_GET_LOCATION,
    HD_S3_LIST_UPLOADS,
    HD_S3_LIST_VERSIONS,
    HD_S3_DELETE_OBJECTS,
    HD_S3_LIST_OBJECTS, /* V1 or V2: hd_s3_list_parse reads list-type */
    HD_S3_HEAD_BUCKET,
    HD_S3_CREATE_BUCKET,
    HD_S3_DELETE_BUCKET,
    HD_S3_GET_BUCKET_ACL,
    HD_S3_PUT_BUCKET_ACL,
    HD_S3_PUT_BUCKET_CORS,
    HD_S3_PUT_BUCKET_TAGGING,
    HD_S3_PUT_BUCKET_LIFECYCLE,
    HD_S3_PUT_BUCKET_POLICY,
    HD_S3_GET_POLICY_STATUS,
    HD_S3_PUT_PUBLIC_ACCESS_BLOCK,
    HD_S3_GET_VERSIONING,
    HD_S3_PUT_VERSIONING,
    HD_S3_GET_BUCKET_CONFIG,    /* a configuration hoard never has (policy, lifecycle, ...) */
    HD_S3_DELETE_BUCKET_CONFIG, /* ... deleted: a no-op */
    /* object level */
    HD_S3_CREATE_MPU,
    HD_S3_UPLOAD_PART,
    HD_S3_UPLOAD_PART_COPY,
    HD_S3_COMPLETE_MPU,
    HD_S3_ABORT_MPU,
    HD_S3_LIST_PARTS,
    HD_S3_COPY_OBJECT,
    HD_S3_GET_OBJECT,
    HD_S3_HEAD_OBJECT,
    HD_S3_PUT_OBJECT,
    HD_S3_DELETE_OBJECT,
    HD_S3_GET_OBJECT_ACL,
    HD_S3_PUT_OBJECT_ACL,
    HD_S3_GET_OBJECT_TAGGING,
    HD_S3_GET_OBJECT_ATTRIBUTES,
    HD_S3_PUT_OBJECT_TAGGING,
    HD_S3_DELETE_OBJECT_TAGGING,
    HD_S3_OP_COUNT
};

/* One classified call. Strings are owned by the front end and live until the handler
 * returns (copy what a parked request needs later). */
struct hd_s3_call {
    enum hd_s3_op op;
    const char *bucket; /* decoded; NULL for the service */
    const char *key;    /* decoded; NULL for the service and bucket levels */
    size_t klen;
    const char *vpath; /* the path-style path of a virtual-host request, or NULL */
    struct hd_sigv4_auth auth;
    const char *owner; /* "anonymous" or the caller's access key */
};

typedef void (*hd_s3_handler_fn)(struct hd_req *r, void *ctx, const struct hd_s3_call *c);

struct hd_s3_list_req;
struct hd_s3_list_item;

/* One page of a listing, as the role's list callback fills it (hd_s3_page_add, in order). */
struct hd_s3_list_page;

/* A bucket as ListBuckets shows it. */
struct hd_s3_bucket {
    char name[64];
    int64_t created; /* unix seconds */
};

/* What a role plugs in. The bucket calls are answered here from the callbacks; every object
 * call goes to the role's handler for its operation (NULL: 501 NotImplemented). Callbacks
 * return 0 or the error to answer with (msg, when given, says more; "" for the table's). */
struct hd_s3_front {
    /* The path-style path of a virtual-host request (heap), or NULL when r is path style. */
    char *(*vhost)(struct hd_req *r, void *ctx, const char *path);
    /* Who is calling (bucket NULL: the service), before classification: 0 with *a filled, a
     * negative code to answer, or HD_AGAIN when the role parked r (it runs again later). */
    int (*authenticate)(struct hd_req *r, void *ctx, const char *bucket, const char *key,
                        struct hd_sigv4_auth *a);
    const char *(*region)(void *ctx);
    int (*buckets)(void *ctx, struct hd_s3_bucket **out, size_t *n); /* *out malloc'd */
    int (*bucket_exists)(void *ctx, const char *bucket);
    int (*bucket_create)(void *ctx, const char *bucket);
    /* The bucket's properties (common/bprops.h JSON; *json malloc'd, NULL for none), or a
     * negative code (HD_ENOSUCHBUCKET). What the bucket's ACL (anonymous_list, anonymous_read),
     * CORS configuration (cors), lifecycle rules (lifecycle) and tags (tags) are read from. */
    int (*props_get)(void *ctx, const char *bucket, char **json);
    /* Changes them as PATCH /v1/buckets/B does: the keys of patch replace the bucket's (a
     * null removes one). 0, or a negative code (with msg, or msg[0] == '\0'). */
    int (*props_patch)(void *ctx, const char *bucket, const char *patch, char *msg, size_t msglen);
    int (*bucket_delete)(void *ctx, const char *bucket, char *msg, size_t msglen);
    int (*list)(void *ctx, const char *bucket, const struct hd_s3_list_req *q,
                struct hd_s3_list_page *page, char *msg, size_t msglen);
    /* DeleteObjects: err[i] = 0 (deleted or absent) or the code for key i (names checked). */
    int (*delete_keys)(void *ctx, const char *bucket, const struct hd_delete_req *dr, int *err);
    /* ListMultipartUploads, and the object calls */
    hd_s3_handler_fn handlers[HD_S3_OP_COUNT];
    /* Every object call not in handlers[] (the proxy's route to the owner), or NULL. */
    hd_s3_handler_fn object;
    /* POST Object (POST /B with multipart/form-data: c->bucket, c->vpath; the form carries
     * its own signature, so r is not authenticated), or NULL: 501. */
    hd_s3_handler_fn post_object;
};

/* Answers r, or hands it to the role's handler. path: the request's raw path with any "/s3"
 * prefix removed. */
void hd_s3_dispatch(struct hd_req *r, const char *path, const struct hd_s3_front *f, void *ctx);
/* The operation's name (for logs and tests). */
const char *hd_s3_op_name(enum hd_s3_op op);

/* ---- ACLs: the owner has FULL_CONTROL of everything; a bucket may also be public-read ----
 * A bucket's ACL is two properties: canned public-read (PutBucketAcl, CreateBucket) or an
 * AllUsers READ grant sets anonymous_list (anyone may list it, as AWS's READ on a bucket);
 * private and bucket-owner-full-control clear it and anonymous_read (the native API's "its
 * objects are public too"). Objects have the bucket's ACL. GetObjectAcl / PutObjectAcl for a
 * role that found the object (the bucket calls are answered here; f->props_get tells whether
 * the bucket's objects are public): GET answers the owner's FULL_CONTROL (and AllUsers READ
 * when the objects are public); PUT accepts what changes nothing (bucket-owner-full-control;
 * private unless the objects are public: then 400 AccessControlListNotSupported; public-read
 * when they are, else 501; or the document GET answers) and answers any other grant 501
 * (reading the body first). */
void hd_s3_acl_answer(struct hd_req *r, const struct hd_s3_front *f, void *ctx,
                      const struct hd_s3_call *c);

/* ---- small request bodies ---- */

/* Reads r's body (at most max bytes), checks it against a signed x-amz-content-sha256 and
 * Content-MD5 (when sent), then calls end(r, ctx, body, len); or answers the error itself.
 * auth: the call's (anonymous: unsigned). ctx is freed with ctx_free when done with (also when
 * end is never called). */
typedef void (*hd_s3_body_fn)(struct hd_req *r, void *ctx, const char *body, size_t len);
void hd_s3_read_body(struct hd_req *r, const struct hd_sigv4_auth *auth, size_t max,
                     hd_s3_body_fn end, void *ctx, void (*ctx_free)(void *ctx));

/* ---- listings ---- */

/* ListObjects (V1), ListObjectsV2 and ListObjectVersions parameters, read from r. */
struct hd_s3_list_req {
    int v2, versions;
    const char *prefix, *delimiter, *marker, *ctok, *start_after;
    const char *vid_marker; /* ListObjectVersions' version-id-marker: NULL, "" or "null" */
    int url;                /* encoding-type=url */
    int ctok_given;         /* continuation-token present (perhaps empty: "from the start") */
    int owner;              /* Owner elements wanted (V1 always; V2 with fetch-owner=true) */
    uint64_t max;           /* max-keys, at most 1000 */
    const char *from;       /* exclusive start key: marker, start-after or the decoded token */
    char tokbuf[1100];
};
/* 0, or the error to answer with (*msg: its message, or NULL for the table's). */
int hd_s3_list_parse(struct hd_req *r, int versions, struct hd_s3_list_req *q, const char **msg);

struct hd_s3_list_item {
    const char *name;
    int is_prefix;
    uint64_t size;
    const char *etag;      /* unquoted */
    int64_t mtime_ms;      /* used when mtime_iso is NULL */
    const char *mtime_iso; /* ISO 8601 with milliseconds, or NULL */
    const char *sclass;    /* storage class, or NULL for STANDARD */
};
/* Appends an entry to a page (strings copied); 0 or -ENOMEM. */
int hd_s3_page_add(struct hd_s3_list_page *pg, const char *name, int is_prefix, uint64_t size,
                   const char *etag, int64_t mtime_ms, const char *mtime_iso, const char *sclass);
/* Whether more entries follow, and the name to continue after (NULL: the last added). */
void hd_s3_page_end(struct hd_s3_list_page *pg, int truncated, const char *next);
/* A Warning header for the listing's answer (static text, e.g. a degraded listing). */
void hd_s3_page_warn(struct hd_s3_list_page *pg, const char *warning);

/* The result document: items sorted, objects and common prefixes mixed; truncated: more
 * follow; next: the last name given (the next start key). Past q->max items the page is cut
 * there (truncated, next = the last one shown); max-keys=0 is never truncated (AWS).
 * Continuation tokens are base64url without padding: nothing in them needs URL encoding. */
void hd_s3_list_xml(struct hd_buf *b, const char *bucket, const struct hd_s3_list_req *q,
                    const char *owner, const struct hd_s3_list_item *items, size_t n, int truncated,
                    const char *next);

#endif
