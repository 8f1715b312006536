/* int: what the cache's files (cache.c, coldget.c, upstream.c, cachejobs.c) share. Not for
 * other folders. Fields above `rmu` are set by hd_cache_new and read-only afterwards. */
#ifndef HD_TARGET_CACHE_INT_H
#define HD_TARGET_CACHE_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "common/pool.h"
#include "target/cache/cache.h"
#include "target/cluster/cluster.h"
#include "target/cluster/rebalance.h"
#include "target/jobs/jobs.h"
#include "target/store/store.h"

#define CACHE_MAGIC 0x63616368u /* "cach" */

struct hd_cache {
    uint32_t magic;
    struct hd_store *st;
    struct hd_tcluster *cl;
    struct hd_jobs *js;
    struct hd_rb *rb;
    struct hd_pool *pool; /* upstream calls (not ours: the target's) */

    /* settings */
    struct hd_s3c base; /* timeouts and retries every bucket's client starts from */
    char *cred_file;
    int range_fill, prefetch_workers, low, high;
    long atime_ms, check_ms;
    long lc_ms; /* lifecycle.interval_ms: how often the job "lifecycle" runs */

    /* registry */
    pthread_rwlock_t rmu;
    struct hd_cbucket **bks;
    size_t nbks;

    atomic_int stopping;
    struct hd_fills *fills; /* cold GETs in progress (coldget.c) */
    struct hd_plans *plans; /* epoch plans (plan.c) */

    pthread_mutex_t evmu; /* one eviction at a time (evict.c) */

    /* housekeeping */
    pthread_t hk;
    int hk_running;
    pthread_mutex_t hmu;
    pthread_cond_t hcv;
    int kicked;

    struct hd_wb *wb; /* write-back uploader (writeback.c) */
};

/* cache.c: the cache metrics (a hd_metrics_set_extra renderer; arg is the cache) and the
 * housekeeping thread (arg is the cache). */
struct hd_buf;
void hd_cache_render(struct hd_buf *b, void *arg);
void *hd_cache_hk_main(void *arg);

/* coldget.c: the table of fills in progress. */
struct hd_fills;
int hd_fills_new(struct hd_fills **out);
void hd_fills_free(struct hd_fills *t);

/* evict.c: drops cached objects on mountpath mpi (of the S3-backed `buckets`) until it is at
 * most `low` percent full with `need` more bytes; starts only when it is above `high` (0:
 * always). j: the job doing it, or NULL (a fill). Counts into *objs, *bytes. */
int hd_cache_evict_mp(struct hd_cache *c, struct hd_job *j, size_t mpi, const char *const *buckets,
                      size_t nb, int low, int high, uint64_t need, uint64_t *objs, uint64_t *bytes);
/* Evicts synchronously so that bucket/key (need bytes) fits under the low mark. */
int hd_cache_make_room(struct hd_cache *c, const char *bucket, const char *key, uint64_t need);

/* plan.c: the plans' registry and prefetch threads; next use and eviction notices for
 * evict.c. */
struct hd_plans;
/* How the prefetch threads fetch (hd_cache_fetch_sync: given here so that plan.c, which
 * evict.c asks about next uses, does not call back into coldget.c). */
typedef int (*hd_plans_fetch_fn)(struct hd_cache *c, struct hd_cbucket *cb, const char *key,
                                 int revalidate, struct hd_job *j, uint64_t *bytes, char *msg,
                                 size_t msglen);
int hd_plans_new(struct hd_cache *c, const struct hd_config *cfg, hd_plans_fetch_fn fetch);
int hd_plans_start(struct hd_cache *c);
void hd_plans_stop(struct hd_cache *c); /* joins the prefetch threads */
void hd_plans_free(struct hd_cache *c);
/* /metrics: per-plan series (hoard_plan_*{plan,bucket}; the first 64 plans). Any thread. */
struct hd_buf;
void hd_plans_render(struct hd_buf *b, struct hd_cache *c);
/* Whether any plan is registered. */
int hd_plans_live(struct hd_cache *c);
/* How many plan positions from now bucket/key is read next across all plans (the nearest),
 * HD_PLAN_NEVER when no plan reads it again. */
#define HD_PLAN_NEVER UINT64_MAX
uint64_t hd_plans_next_use(struct hd_cache *c, const char *bucket, const char *key);
/* bucket/key (size bytes) was evicted. */
void hd_plans_evicted(struct hd_cache *c, const char *bucket, const char *key, uint64_t size);

/* cachejobs.c: registers the prefetch, evict and lru job kinds (ctx: the cache). */
int hd_cache_jobs_register(struct hd_cache *c);

/* writeback.c: the write-back uploader threads, their metrics and the flush job kind. */
struct hd_wb;
int hd_wb_new(struct hd_cache *c, const struct hd_config *cfg, struct hd_wb **out);
int hd_wb_start(struct hd_wb *wb);
void hd_wb_stop(struct hd_wb *wb); /* after c->stopping is set */
void hd_wb_free(struct hd_wb *wb);
void hd_wb_render(struct hd_buf *b, struct hd_cache *c);
int hd_wb_jobs_register(struct hd_cache *c);
/* MD5 of a whole file (read with pread). */
int hd_wb_file_md5(int fd, unsigned char out[16]);

#endif
