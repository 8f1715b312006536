/* internal: what the target's API layer (target/api/: dispatch, auth, the native and S3 APIs,
 * object operations, multipart, batch) shares. The target's top: nothing below includes it.
 * struct hd_target holds one object of each lower layer, wired in target.c. */
#ifndef HD_TARGET_INTERNAL_H
#define HD_TARGET_INTERNAL_H

#include <jansson.h>

#include "common/http.h"
#include "common/keys.h"
#include "common/pool.h"
#include "common/sigv4.h"
#include "target/cache/cache.h"
#include "target/cluster/cluster.h"
#include "target/cluster/rebalance.h"
#include "target/jobs/jobs.h"
#include "target/object/object.h"
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
    uint64_t complete_keepalive;    /* s3.complete_keepalive: bytes (0: never) */
    unsigned complete_keepalive_ms; /* s3.complete_keepalive_ms */
    struct hd_tcluster *cl;         /* cluster membership; node id only when standalone */
    struct hd_jobs *jobs;           /* rebalance and other long-running work */
    struct hd_rb *rb;               /* rebalance, get-from-neighbour, deletes while objects move */
    struct hd_cache *cache;         /* S3-backed buckets: upstreams, cold GET, LRU (cache.h) */
    struct hd_pool *pool;           /* blocking work off the HTTP workers (upstream, other nodes) */
    struct hd_pool *disk;           /* PUT commits (fsync, rename, catalog): store.commit_workers */
    int64_t lc_day_ms;              /* lifecycle.day_ms: a lifecycle rule's day (lifecycle.c) */
};

/* Who is asking: 0 with *a filled for a verified request (a->anonymous for a request without
 * credentials), or the error to answer with (bad credentials). Requests a proxy authorised
 * (r->trusted) count as verified. */
int hd_target_authenticate(struct hd_req *r, struct hd_target *t, struct hd_sigv4_auth *a);
/* hd_jobs_admit_fn of the target's jobs (and its epoch plans, args NULL): a client's job on a
 * bucket whose policy is TLS only (its bucket, or one its args name) needs TLS. arg: the
 * target. */
int hd_target_jobs_admit(void *arg, struct hd_req *r, const char *bucket, const json_t *args);
/* Whether the caller (as hd_target_authenticate found it) may do r's method to bucket (NULL:
 * the service itself, e.g. ListBuckets). Without credentials, what r->pub names (set by r's
 * route, with r->pub_key for a read) is let through by a public bucket. 0 or the error to
 * answer with. */
int hd_target_authorize(struct hd_req *r, struct hd_target *t, const struct hd_sigv4_auth *a,
                        const char *bucket);
/* Whether bucket's policy opens some of its objects by key or prefix (so that a read's key,
 * not the bucket alone, decides). */
int hd_target_some_public(struct hd_target *t, const char *bucket);

/* Admin calls (/v1/jobs, /v1/plans, /v1/daemon): a proxy's node signature (another target's
 * is refused: targets never send these), or on a standalone target a key with rw on every
 * bucket (any key for GET); open when auth.keys is empty. 0 or the error to answer with. */
int hd_target_auth_admin(struct hd_req *r, struct hd_target *t);
/* plans.c: /v1/plans[/ID[/cursor]] */
void hd_target_plans(struct hd_req *r, struct hd_target *t);

/* Object operations shared by both APIs; each answers r (now, or once a pool thread has
 * done the blocking part). `auth` is NULL for unauthenticated (native) requests; otherwise it
 * says how the payload is signed. bucket/key are decoded. */
void hd_obj_get(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                int head);
void hd_obj_put(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                const struct hd_sigv4_auth *auth);

/* The PUT body pipeline (aws-chunked decoding, payload hash, Content-MD5, x-amz-checksum-*
 * verification) with a different final step: `commit` replaces hd_put_commit (e.g. to
 * store a multipart part). On success the response is 200 with ETag and the checksum
 * header. arg is freed with arg_free when the request ends, whatever happened. */
struct hd_put_hooks {
    /* optional, before commit: HD_AGAIN parks r (it runs again when r resumes), 0 goes on, a
     * negative code is answered (with msg when filled) */
    int (*through)(struct hd_req *r, struct hd_put *p, void *arg, char *msg, size_t msglen);
    int (*commit)(struct hd_put *p, const struct hd_put_attrs *a, struct hd_obj_meta *out,
                  void *arg);
    void *arg;
    void (*arg_free)(void *arg);
};
/* Object tags and S3-backed buckets: hoard does not forward tags to an upstream, so a write
 * asking for tags there (hd_api_wants_tags: a non-empty x-amz-tagging) is 501 with this. */
extern const char hd_api_upstream_tags_msg[];
int hd_api_wants_tags(struct hd_req *r);
/* strdup of s, or NULL for NULL; *oom set when a copy could not be made. */
char *hd_api_dup_opt(const char *s, int *oom);
void hd_obj_put_ex(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                   const struct hd_sigv4_auth *auth, const struct hd_put_hooks *hooks);
/* CopyObject: PUT with x-amz-copy-source (metadata COPY or REPLACE); a source another
 * target owns is streamed from there on a pool thread. */
void hd_obj_copy(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key);
/* The same with the source ("/BUCKET/KEY", percent-encoded) given: a native copy
 * (?object_from=, AIStore's Object.copy() as the proxy redirects it). */
void hd_obj_copy_from(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                      const char *src);
/* The source side of a copy (CopyObject, UploadPartCopy) on a pool thread, reading sb/sk as
 * a GET reads it: from another target that owns it (remote(arg), even when a misplaced copy
 * is held here), or from here (local(arg)), an S3-backed bucket's object fetched from its upstream
 * first when it is not cached (single-flight with GETs, kept as a GET's fill is) and revalidated
 * when the bucket has validate_warm_get. local/remote return 0 or a code (HD_ENOSUCHKEY: not
 * there); the result is theirs, or the upstream's error with msg filled. */
int hd_api_copy_run(struct hd_target *t, const char *sb, const char *sk, int (*local)(void *arg),
                    int (*remote)(void *arg), void *arg, char *msg, size_t msglen);
void hd_obj_delete(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                   int quiet_missing);

void hd_native_handle(struct hd_req *r, struct hd_target *t);
/* PATCH /v1/objects/B/O (AIStore's set_custom_props): the object's user metadata edited
 * (target/api/s3.c, beside object tags). */
void hd_target_custom_md(struct hd_req *r, struct hd_target *t, const char *bucket,
                         const char *key);
/* PUT /v1/objects/B/O?append_type=append|flush&append_handle=H (AIStore's appends):
 * target/api/append.c. */
void hd_target_append(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key);
/* GET /v1/daemon: id and per-mountpath capacity (daemon.c). */
void hd_daemon_handle(struct hd_req *r, struct hd_target *t);
/* GET|POST /v1/batch (batch.c) */
void hd_target_batch(struct hd_req *r, struct hd_target *t);
void hd_s3_handle(struct hd_req *r, struct hd_target *t, const char *path);

#endif
