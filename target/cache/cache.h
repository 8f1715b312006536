/* cache: a target's caching tier for S3-backed (provider "aws") buckets. It owns
 *   - the registry of S3-backed buckets with their upstream client settings (from the bucket
 *     props in the store, which the BMD fills) and credentials resolved from named profiles;
 *   - a pool of threads that talk to upstreams, so HTTP workers never block on the network:
 *     a request that needs the upstream parks its connection (MHD suspend) and is resumed
 *     when the pool thread is done (struct hd_acall);
 *   - cold GET fills with single-flight (coldget.c), write-through PUT/DELETE and upstream
 *     listing (upstream.c), prefetch/evict/LRU jobs (cachejobs.c);
 *   - a housekeeping thread that flushes batched access times and starts the LRU job when a
 *     mountpath passes its high watermark;
 *   - the cache metrics.
 * Thread rules per function below. Internal to target/. */
#ifndef HD_TARGET_CACHE_H
#define HD_TARGET_CACHE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/bprops.h"
#include "common/config.h"
#include "common/http.h"
#include "common/s3client.h"

struct hd_target;
struct hd_cache;
struct hd_job;

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

int hd_cache_new(struct hd_target *t, const struct hd_config *cfg, struct hd_cache **out);
/* Starts the housekeeping thread. */
int hd_cache_start(struct hd_cache *c);
/* Aborts upstream transfers in flight and stops the housekeeping thread (no new LRU job):
 * first step of a shutdown, before the jobs are stopped. NULL is a no-op. */
void hd_cache_stop(struct hd_cache *c);
/* Stops (as above) and waits for the pool threads, then frees. */
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

/* ---- the pool ---- */

struct hd_ctask {
    void (*run)(struct hd_ctask *task); /* on a pool thread; owns the task from here */
    struct hd_ctask *next;
};
/* Queues task; HD_EUNAVAIL when shutting down (run is then not called). */
int hd_cache_submit(struct hd_cache *c, struct hd_ctask *task);

/* ---- requests parked while a pool thread works (HTTP worker side + pool side) ---- */

struct hd_acall;
typedef void (*hd_acall_fn)(struct hd_acall *a); /* pool thread */
/* HTTP worker, once run finished: answer r (a is released afterwards by on_done). */
typedef void (*hd_acall_done_fn)(struct hd_req *r, struct hd_acall *a);

struct hd_acall {
    uint32_t magic;
    struct hd_cache *c;
    struct hd_ctask task;
    pthread_mutex_t mu;
    int refs;
    struct hd_req *r; /* NULL once the request is finished */
    int finished, waiting;
    hd_acall_fn run;
    hd_acall_done_fn done;
    void *arg;
    void (*arg_free)(void *arg);
    /* results, written by run */
    int rc;
    struct hd_s3c_err err;
    struct hd_s3c_obj obj;
};

/* A call whose run() goes on the pool; arg is freed with arg_free when the call is. */
struct hd_acall *hd_acall_new(struct hd_cache *c, hd_acall_fn run, void *arg,
                              void (*arg_free)(void *arg));
/* Queues a for r. 0, or a negative code (a is then finished with that rc). */
int hd_acall_submit(struct hd_acall *a, struct hd_req *r);
/* From r's on_end: 1 when run has not finished (r is suspended and on_end runs again once it
 * has), 0 when its results are there. */
int hd_acall_park(struct hd_acall *a, struct hd_req *r);
/* From r's on_done (or when done with a): detaches r and drops the request's reference. */
void hd_acall_release(struct hd_acall *a);
/* The whole request is the call: installs r's on_end/on_done; done answers r. On failure to
 * start, answers r itself. */
void hd_acall_request(struct hd_req *r, struct hd_cache *c, hd_acall_fn run, hd_acall_done_fn done,
                      void *arg, void (*arg_free)(void *arg));

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
    HD_CS_COUNT
};
void hd_cstat_add(enum hd_cstat s, uint64_t n);
/* Cold GET durations (time to first byte and to the end of the fill). */
void hd_cstat_cold_time(double ttfb_s, double total_s);

/* ---- coldget.c (HTTP worker) ---- */

/* GET/HEAD of bucket/key in S3-backed cb: warm from the catalog, validated when the bucket
 * says so, else cold through a fill. Answers r (now or after parking it). */
void hd_cache_obj_get(struct hd_req *r, struct hd_target *t, struct hd_cbucket *cb, const char *key,
                      int head);
/* For jobs (any thread but HTTP workers): makes sure bucket/key is cached, joining a fill in
 * progress or running one; revalidate HEADs the upstream first when it is cached. *bytes
 * gets the bytes fetched (0 when it was cached). 0, or a code with msg filled. */
int hd_cache_fetch_sync(struct hd_target *t, struct hd_cbucket *cb, const char *key, int revalidate,
                        struct hd_job *j, uint64_t *bytes, char *msg, size_t msglen);

/* ---- upstream.c (HTTP worker) ---- */

struct hd_put;
struct hd_put_attrs;
struct hd_wt;
/* Write-through of a verified PUT body before it is committed locally. 1: r is parked (call
 * again from on_end), 0: the upstream took it (etag_out holds its ETag: commit with it),
 * negative: the error to answer with (msg filled). md5_known: the put's MD5 describes its
 * bytes (not so after hd_put_append_file: then it is computed from the file). *wt is the
 * state between calls; free it with hd_cache_wt_free in on_done. */
int hd_cache_put_through(struct hd_req *r, struct hd_target *t, struct hd_cbucket *cb,
                         const char *key, struct hd_put *p, int md5_known, const char *ctype,
                         const char *meta, struct hd_wt **wt, char etag_out[48], char *msg,
                         size_t msglen);
void hd_cache_wt_free(struct hd_wt *wt);
/* DELETE through to the upstream, then locally; answers r. */
void hd_cache_obj_delete(struct hd_req *r, struct hd_target *t, struct hd_cbucket *cb,
                         const char *key);
/* GET /v1/buckets/B?upstream=true&prefix&delimiter&limit&start_after on the target the proxy
 * designated: one page of the upstream listing as JSON {"entries","prefixes","truncated"}. */
void hd_cache_list_upstream(struct hd_req *r, struct hd_target *t, struct hd_cbucket *cb);

/* ---- cachejobs.c (job threads) ---- */

int hd_prefetch_run(struct hd_job *j);
int hd_evict_run(struct hd_job *j);
int hd_lru_run(struct hd_job *j);

#endif
