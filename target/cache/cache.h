/* cache: a target's caching tier for S3-backed (provider "aws") buckets. It owns
 *   - the registry of S3-backed buckets with their upstream client settings (from the bucket
 *     props in the store, which the BMD fills) and credentials resolved from named profiles;
 *   - upstream calls on the target's pool (common/pool.h), so HTTP workers never block on
 *     the network: a request that needs the upstream parks its connection (MHD suspend) and
 *     is resumed when the pool thread is done (struct hd_acall);
 *   - cold GET fills with single-flight (coldget.c), write-through PUT/DELETE and upstream
 *     listing (upstream.c), prefetch/evict/LRU jobs (cachejobs.c);
 *   - a housekeeping thread that flushes batched access times and starts the LRU job when a
 *     mountpath passes its high watermark;
 *   - the cache metrics.
 * It sits on the cluster layer (rebalance's get-from-neighbour before the upstream, the node
 * id) and the store. Thread rules per function below. */
#ifndef HD_TARGET_CACHE_H
#define HD_TARGET_CACHE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <jansson.h>

#include "common/bprops.h"
#include "common/config.h"
#include "common/http.h"
#include "common/s3client.h"

struct hd_cache;
struct hd_job;
struct hd_pool;
struct hd_rb;
struct hd_tcluster;
struct hd_jobs;
struct hd_put;

/* An S3-backed bucket as this target sees it. Read-only once published; refcounted. */
struct hd_cbucket {
    atomic_int refs;
    char name[64];
    const char *remote; /* upstream bucket name (into props or name) */
    struct hd_bprops props;
    struct hd_s3c s3; /* endpoint, region, style, credentials, timeouts */
    int cred_err;     /* no credentials for the profile: every upstream call fails */
    char cred_msg[512];
};

/* What the cache works with; all must outlive it. */
struct hd_cache_deps {
    struct hd_tcluster *cl; /* and its store */
    struct hd_jobs *js;     /* the prefetch, evict and lru kinds are registered here */
    struct hd_rb *rb;
    struct hd_pool *pool; /* upstream calls */
};
int hd_cache_new(const struct hd_config *cfg, const struct hd_cache_deps *deps,
                 struct hd_cache **out);
/* Starts the housekeeping thread. */
int hd_cache_start(struct hd_cache *c);
/* Aborts upstream transfers in flight and stops the housekeeping thread (no new LRU job):
 * first step of a shutdown, before the jobs are stopped. NULL is a no-op. */
void hd_cache_stop(struct hd_cache *c);
/* Stops (as above) and frees: the pool's threads must be gone (hd_pool_free) first. */
void hd_cache_free(struct hd_cache *c);
/* Rebuilds the registry from the store's buckets; call after bucket props changed. Any
 * thread. */
void hd_cache_refresh(struct hd_cache *c);
/* A reference to the S3-backed bucket `name`, NULL for native buckets; any thread. */
struct hd_cbucket *hd_cache_bucket(struct hd_cache *c, const char *name);
void hd_cbucket_unref(struct hd_cbucket *b);
/* Names of the S3-backed buckets (malloc'd array of malloc'd strings). */
int hd_cache_bucket_names(struct hd_cache *c, char ***names, size_t *n);
void hd_cache_names_free(char **names, size_t n);
/* Wakes the housekeeping thread now (e.g. a write hit the out-of-space mark). */
void hd_cache_kick(struct hd_cache *c);
/* Whether the cache is shutting down (transfers poll it). */
int hd_cache_stopping(struct hd_cache *c);
/* Settings read by the other cache modules. */
int hd_cache_range_fill(const struct hd_cache *c);
int hd_cache_prefetch_workers(const struct hd_cache *c);
int hd_cache_space_marks(const struct hd_cache *c, int *low, int *high);

/* The upstream client of cb, or the error to answer with (credentials missing). */
int hd_cbucket_check(const struct hd_cbucket *cb, char *msg, size_t msglen);

/* ---- metrics (cache.c) ---- */

enum hd_cstat {
    HD_CS_HIT,            /* GETs served from the cache */
    HD_CS_MISS,           /* GETs that went to the upstream */
    HD_CS_COLD_BYTES,     /* bytes fetched from upstreams */
    HD_CS_COLD_FILLS,     /* objects fetched and cached */
    HD_CS_COLD_FAILED,    /* fills that cached nothing */
    HD_CS_RANGE_PASS,     /* ranged cold GETs served by an upstream range request */
    HD_CS_UPSTREAM_ERR,   /* upstream calls that failed */
    HD_CS_VALIDATE,       /* warm GETs validated against the upstream */
    HD_CS_STALE,          /* of those, refetched because the ETag changed */
    HD_CS_WRITE_THROUGH,  /* PUTs written through */
    HD_CS_DELETE_THROUGH, /* DELETEs written through */
    HD_CS_EVICTED,        /* objects evicted (LRU and evict jobs) */
    HD_CS_EVICTED_BYTES,
    HD_CS_PASSTHROUGH,   /* cold GETs served without caching (no room) */
    HD_CS_COLD_READBACK, /* bytes readers of a fill read back from its file (behind the window) */
    HD_CS_LC_EXPIRED,    /* objects deleted by lifecycle rules (target/api/lifecycle.c) */
    HD_CS_LC_ABORTED,    /* multipart uploads aborted by lifecycle rules */
    HD_CS_COUNT
};
void hd_cstat_add(enum hd_cstat s, uint64_t n);
/* Cold GET durations (time to first byte and to the end of the fill). */
void hd_cstat_cold_time(double ttfb_s, double total_s);

/* ---- coldget.c (HTTP worker) ---- */

/* GET/HEAD of bucket/key in S3-backed cb: warm from the catalog, validated when the bucket
 * says so, else cold through a fill. Answers r (now or after parking it). */
void hd_cache_obj_get(struct hd_req *r, struct hd_cache *c, struct hd_cbucket *cb, const char *key,
                      int head);
/* For jobs (any thread but HTTP workers): makes sure bucket/key is cached, joining a fill in
 * progress or running one; revalidate HEADs the upstream first when it is cached. *bytes
 * gets the bytes fetched (0 when it was cached). 0, or a code with msg filled. */
int hd_cache_fetch_sync(struct hd_cache *c, struct hd_cbucket *cb, const char *key, int revalidate,
                        struct hd_job *j, uint64_t *bytes, char *msg, size_t msglen);

/* ---- plan.c: epoch plans (docs/caching.md) ---- */

struct json_t;
/* Registers (or replaces) the plan of spec {"id","bucket","prefix"|"keys","epochs",
 * "seed"|"order"}; the dataset is resolved here (a prefix is listed upstream): pool or job
 * thread, never an HTTP worker. *out: {"id","total","owned","epochs"} (caller frees). 0, or
 * HD_EBADARG/HD_ENOSUCHBUCKET/an upstream code with msg saying what is wrong. */
int hd_plans_add(struct hd_cache *c, struct json_t *spec, struct json_t **out, char *msg,
                 size_t msglen);
/* The same plan split again after a change of the cluster map (the proxy asks every target,
 * docs/caching.md): waits (up to 10 s) until this target holds map smap_ver, rebuilds the
 * share under it, keeps the counters of the plan it replaces and starts at the reader's
 * place (epoch, last position read). Pool thread. As hd_plans_add, HD_EUNAVAIL when the map
 * did not come. */
int hd_plans_split(struct hd_cache *c, struct json_t *spec, uint32_t epoch, int64_t cursor,
                   int64_t smap_ver, struct json_t **out, char *msg, size_t msglen);
/* This target's view of plan id ({"plans": [...]} for NULL), NULL when unknown; with_spec:
 * each view also has the plan's "spec" as registered. Any thread. */
struct json_t *hd_plans_view(struct hd_cache *c, const char *id, int with_spec);
/* 0 or HD_ENOSUCHKEY. Any thread. */
int hd_plans_delete(struct hd_cache *c, const char *id);
/* Sets the reader's place: epoch, last position read (-1: none). 0, HD_ENOSUCHKEY, HD_EBADARG. */
int hd_plans_cursor(struct hd_cache *c, const char *id, uint32_t epoch, int64_t position);
/* A GET of bucket/key was served (hit: from the cache), tagged with plan `tag` (NULL: none;
 * an untagged read advances every plan that has the object, a tagged one only that plan).
 * Any thread; cheap without plans. */
void hd_plans_observe(struct hd_cache *c, const char *bucket, const char *key, int hit,
                      const char *tag);

/* ---- upstream.c (HTTP worker) ---- */

struct hd_wt;
/* Write-through of a verified PUT body before it is committed locally. HD_AGAIN: r is parked
 * (call again from on_end), 0: the upstream took it (etag_out holds its ETag: commit with it),
 * negative: the error to answer with (msg filled). md5_known: the put's MD5 describes its
 * bytes (not so after hd_put_append_file: then it is computed from the file). *wt is the
 * state between calls; free it with hd_cache_wt_free in on_done. */
int hd_cache_put_through(struct hd_req *r, struct hd_cache *c, struct hd_cbucket *cb,
                         const char *key, struct hd_put *p, int md5_known, const char *ctype,
                         const char *meta, const char *hdrs, struct hd_wt **wt, char etag_out[48],
                         char *msg, size_t msglen);
void hd_cache_wt_free(struct hd_wt *wt);
/* The same, blocking (pool threads, never HTTP workers), for a put whose MD5 describes its
 * bytes (a CopyObject's): 0 with etag_out, or the error with msg filled. */
int hd_cache_put_through_sync(struct hd_cbucket *cb, const char *key, struct hd_put *p,
                              const char *ctype, const char *meta, const char *hdrs,
                              char etag_out[48], char *msg, size_t msglen);
/* Write-through multipart (docs/caching.md): a multipart upload to a write-through bucket has
 * a twin upload at the upstream; each part goes up as it arrives and Complete completes the
 * twin. As hd_cache_put_through, for part `part` (p's verified body) of the twin up_id;
 * etag_out gets the upstream's part ETag. */
int hd_cache_part_through(struct hd_req *r, struct hd_cache *c, struct hd_cbucket *cb,
                          const char *key, const char *up_id, unsigned part, struct hd_put *p,
                          struct hd_wt **wt, char etag_out[48], char *msg, size_t msglen);
/* A part of a Complete: its number, the upstream's ETag when the twin has it ("" otherwise:
 * sent first from path, size bytes with MD5 md5). */
struct hd_cache_upart {
    unsigned num;
    char up_etag[48];
    unsigned char md5[16];
    char *path;
    uint64_t size;
};
/* Completes the twin up_id (NULL or "": created first, with ctype, meta and hdrs) from
 * parts[0..n) (copied); etag_out gets the object's upstream ETag. An upstream multipart ETag
 * other than expect_etag (the ETag the parts make) is HD_EINVALIDPART: the upstream answered
 * a repeated Complete with other parts than these. As hd_cache_put_through,
 * but the first call only starts the work (HD_AGAIN, r not parked), so that the caller can
 * do its own meanwhile; the next calls park r or give the result. */
int hd_cache_mpu_through(struct hd_req *r, struct hd_cache *c, struct hd_cbucket *cb,
                         const char *key, const char *up_id, const char *ctype, const char *meta,
                         const char *hdrs, const struct hd_cache_upart *parts, size_t n,
                         const char *expect_etag, struct hd_wt **wt, char etag_out[48], char *msg,
                         size_t msglen);
/* Blocking (pool threads, never HTTP workers): creates the twin (up_id gets its id) and
 * aborts it (none left is success). 0, or the error with msg filled. */
int hd_cache_mpu_up_create(struct hd_cbucket *cb, const char *key, const char *ctype,
                           const char *meta, const char *hdrs, char *up_id, size_t idlen, char *msg,
                           size_t msglen);
int hd_cache_mpu_up_abort(struct hd_cbucket *cb, const char *key, const char *up_id, char *msg,
                          size_t msglen);
/* DELETE through to the upstream, then locally; answers r. */
void hd_cache_obj_delete(struct hd_req *r, struct hd_cache *c, struct hd_cbucket *cb,
                         const char *key);
/* GET /v1/buckets/B?upstream=true&prefix&delimiter&limit&start_after on the target the proxy
 * designated: one page of the upstream listing as JSON {"entries","prefixes","truncated"}. */
void hd_cache_list_upstream(struct hd_req *r, struct hd_cache *c, struct hd_cbucket *cb);

/* ---- writeback.c: write-back buckets (props.write_back) ---- */

/* A write of size bytes to a write-back bucket may start: 0, or HD_ESLOWDOWN (msg filled)
 * while the target's dirty bytes would pass writeback.dirty_max. HTTP workers and pool
 * threads (a CopyObject's). */
int hd_cache_wb_admit(struct hd_cache *c, uint64_t size, char *msg, size_t msglen);
/* Wakes the uploaders (after a commit that queued an upload). Any thread. */
void hd_cache_wb_kick(struct hd_cache *c);
/* DELETE in a write-back bucket: the local copy now, the upstream's from the queue. */
int hd_cache_wb_delete(struct hd_cache *c, struct hd_cbucket *cb, const char *key);
/* Records upload_id of bucket/key at the upstream as left behind (its abort failed): the
 * uploader aborts it later, as it does its own. Any thread. */
void hd_cache_wb_orphan(struct hd_cache *c, const char *bucket, const char *key,
                        const char *upload_id);
/* {"dirty_objects","dirty_bytes","queue_depth","failed","oldest_dirty_seconds"} of bucket
 * (NULL = all) on this target. */
int hd_cache_wb_status(struct hd_cache *c, const char *bucket, json_t **out);

#endif
