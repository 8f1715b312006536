/* internal: what the target's request modules (native.c, s3.c, objops.c) share.
 * Not for use outside target/. */
#ifndef HD_TARGET_INTERNAL_H
#define HD_TARGET_INTERNAL_H

#include <jansson.h>

#include "common/http.h"
#include "common/keys.h"
#include "common/sigv4.h"
#include "target/cache/cache.h"
#include "target/cluster/cluster.h"
#include "target/store/store.h"
#include "target/target.h"

#define HD_TARGET_MAGIC 0x74677431u

struct hd_target {
    uint32_t magic;
    struct hd_store *st;
    struct hd_keys keys;
    char *region;
    char *domain; /* s3.domain: virtual-host style for BUCKET.<domain> */
    uint64_t max_object;
    struct hd_tcluster *cl; /* cluster membership; node id only when standalone */
    struct hd_jobs *jobs;   /* rebalance and other long-running work */
    struct hd_rb *rb;       /* rebalance.c: deletes remembered while objects move */
    struct hd_cache *cache; /* S3-backed buckets: upstreams, cold GET, LRU (cache.h) */
};

/* 0 with *a filled for a verified request, 1 for a request without credentials, negative
 * code for bad credentials. Requests a proxy authorised (r->trusted) count as verified. */
int hd_target_authenticate(struct hd_req *r, struct hd_target *t, struct hd_sigv4_auth *a);
/* Whether the caller (authrc from hd_target_authenticate) may do r's method to bucket
 * (NULL: the service itself, e.g. ListBuckets). 0 or an error to answer. */
int hd_target_authorize(struct hd_req *r, struct hd_target *t, int authrc,
                        const struct hd_sigv4_auth *a, const char *bucket);

/* Admin calls (/v1/jobs): a proxy's signature, or a key with rw on every bucket (any key
 * for GET); open when auth.keys is empty. 0 or the error to answer with. */
int hd_target_auth_admin(struct hd_req *r, struct hd_target *t);
/* Object operations shared by both APIs. `auth` is NULL for unauthenticated (native)
 * requests; otherwise it says how the payload is signed. bucket/key are decoded. */
void hd_obj_get(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                int head);
/* Answers a GET/HEAD from a local copy (conditionals, Range, headers, sendfile). fd is the
 * content file (or -1 for HEAD) and is closed on every path; m stays the caller's. */
void hd_obj_serve(struct hd_req *r, const struct hd_obj_meta *m, int fd, int head);
/* x-amz-meta-* response headers from the catalog's JSON object (NULL: none). */
void hd_obj_meta_headers(struct hd_req *r, const char *meta);
void hd_obj_put(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                const struct hd_sigv4_auth *auth);

/* The PUT body pipeline (aws-chunked decoding, payload hash, Content-MD5, x-amz-checksum-*
 * verification) with a different final step: `commit` replaces hd_put_commit (e.g. to
 * store a multipart part). On success the response is 200 with ETag and the checksum
 * header. arg is freed with arg_free when the request ends, whatever happened. */
struct hd_put_hooks {
    int (*commit)(struct hd_put *p, const struct hd_put_attrs *a, struct hd_obj_meta *out,
                  void *arg);
    void *arg;
    void (*arg_free)(void *arg);
};
void hd_obj_put_ex(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                   const struct hd_sigv4_auth *auth, const struct hd_put_hooks *hooks);
/* CopyObject: PUT with x-amz-copy-source (same target; metadata COPY or REPLACE). */
void hd_obj_copy(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key);
void hd_obj_delete(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                   int quiet_missing);

/* x-amz-meta-* headers as a JSON object (lowercase names without the prefix) in *out, or
 * NULL when there are none; HD_EMETATOOLARGE past 2 KiB. */
int hd_collect_meta(struct hd_req *r, char **out);

/* Rebalance (rebalance.c): an object missing here may still sit on its previous owner while
 * the cluster map changes (a rebalance in progress, or targets in maintenance): asks the
 * other targets and stores the first copy found. 0 when the object is now held locally. */
int hd_rebalance_gfn(struct hd_target *t, const char *bucket, const char *key);
/* Streams bucket/key from the target at node_url into p (node-signed GET; local: no
 * further hops on that side), forwarding the conditionals in cond (NULL: none). 0 with
 * *xmeta = its X-Hoard-Obj-Meta (malloc'd), HD_ENOSUCHKEY, HD_EPRECONDITION (a
 * conditional failed), HD_EUNAVAIL or -EIO. Blocks on the network (bounded). */
struct hd_cond;
int hd_node_get_into(struct hd_target *t, const char *node_url, const char *bucket, const char *key,
                     int local, const struct hd_cond *cond, struct hd_put *p, char **xmeta);
/* When another target owns bucket/key in the current cluster map: 0 with its URL in url;
 * HD_EUNAVAIL with url when that owner is down; HD_ENOSUCHKEY when we own it (or run
 * standalone). */
int hd_node_owner_elsewhere(struct hd_target *t, const char *bucket, const char *key, char *url,
                            size_t urlmax);
int hd_rebalance_init(struct hd_target *t);
void hd_rebalance_cleanup(struct hd_target *t);
/* After a client's delete on the owner while objects move: deletes the copies other targets
 * may still hold and remembers the delete. Returns how many copies were deleted elsewhere. */
int hd_rebalance_delete_elsewhere(struct hd_target *t, const char *bucket, const char *key);
/* 1 when bucket/key was deleted here (while objects move) at or after mtime_ms: a moved
 * copy that old must not come back. */
int hd_rebalance_deleted_since(struct hd_target *t, const char *bucket, const char *key,
                               int64_t mtime_ms);
/* An object's identity for moving it between targets (X-Hoard-Obj-Meta: compact ASCII JSON
 * {etag, mtime_ms, ck_type, ck_val, ctype, meta}); malloc'd, NULL on OOM. */
char *hd_obj_meta_json(const struct hd_obj_meta *m);
/* Parses such a header into attrs for hd_put_commit (keep_newer set). The strings point into
 * *hold (json_decref it after the commit). HD_EBADHEADER when malformed. */
int hd_obj_meta_attrs(const char *text, struct hd_put_attrs *a, json_t **hold);
void hd_native_handle(struct hd_req *r, struct hd_target *t);
/* GET /v1/daemon: id and per-mountpath capacity (daemon.c). */
void hd_daemon_handle(struct hd_req *r, struct hd_target *t);
/* GET|POST /v1/batch (batch.c) */
void hd_target_batch(struct hd_req *r, struct hd_target *t);
void hd_s3_handle(struct hd_req *r, struct hd_target *t, const char *path);

#endif
