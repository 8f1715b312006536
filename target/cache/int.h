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

    /* registry */
    pthread_rwlock_t rmu;
    struct hd_cbucket **bks;
    size_t nbks;

    atomic_int stopping;
    struct hd_fills *fills; /* cold GETs in progress (coldget.c) */

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
