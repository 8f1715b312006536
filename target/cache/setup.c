/* setup: the cache's life cycle. The top of the cache folder: it builds the registry
 * (cache.c), the table of fills (coldget.c) and the job kinds (cachejobs.c), and starts and
 * stops the housekeeping thread. Main thread only. */
#include "target/cache/int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/metrics.h"

/* /metrics: the cache's, then the write-back queue's and the epoch plans'. */
static void render(struct hd_buf *b, void *arg)
{
    struct hd_cache *c = arg;

    hd_cache_render(b, c);
    if (c && c->magic == CACHE_MAGIC) {
        hd_wb_render(b, c);
        hd_plans_render(b, c);
    }
}

int hd_cache_new(const struct hd_config *cfg, const struct hd_cache_deps *deps,
                 struct hd_cache **out)
{
    struct hd_cache *c = calloc(1, sizeof(*c));

    if (!c)
        return -ENOMEM;
    c->magic = CACHE_MAGIC;
    c->st = hd_tcluster_store(deps->cl);
    c->cl = deps->cl;
    c->js = deps->js;
    c->rb = deps->rb;
    c->pool = deps->pool;
    c->base.connect_ms = (long)hd_config_int(cfg, "upstream.connect_timeout_ms");
    c->base.total_s = (long)hd_config_int(cfg, "upstream.timeout");
    c->base.meta_s = (long)hd_config_int(cfg, "upstream.meta_timeout");
    c->base.low_speed_bps = 1024;
    c->base.low_speed_s = (long)hd_config_int(cfg, "upstream.low_speed_time");
    c->base.retries = (int)hd_config_int(cfg, "upstream.retries");
    c->base.backoff_ms = (long)hd_config_int(cfg, "upstream.backoff_ms");
    c->cred_file = strdup(hd_config_str(cfg, "upstream.credentials"));
    c->range_fill = hd_config_bool(cfg, "cache.range_fill");
    c->prefetch_workers = (int)hd_config_int(cfg, "prefetch.workers");
    c->low = (int)hd_config_int(cfg, "space.low");
    c->high = (int)hd_config_int(cfg, "space.high");
    c->atime_ms = (long)hd_config_int(cfg, "cache.atime_flush_ms");
    c->check_ms = (long)hd_config_int(cfg, "space.check_ms");
    c->lc_ms = (long)hd_config_int(cfg, "lifecycle.interval_ms");
    pthread_rwlock_init(&c->rmu, NULL);
    pthread_mutex_init(&c->hmu, NULL);
    pthread_mutex_init(&c->evmu, NULL);
    pthread_cond_init(&c->hcv, NULL);
    if (!c->cred_file) {
        hd_cache_free(c);
        return -ENOMEM;
    }
    if (c->low > c->high) {
        HD_LOG(HD_ERROR, NULL, "space.low (%d) must not be above space.high (%d)", c->low, c->high);
        hd_cache_free(c);
        return -EINVAL;
    }
    if (hd_fills_new(&c->fills) < 0 || hd_plans_new(c, cfg, hd_cache_fetch_sync) < 0 ||
        hd_cache_jobs_register(c) < 0 || hd_wb_new(c, cfg, &c->wb) < 0 ||
        hd_wb_jobs_register(c) < 0) {
        hd_cache_free(c);
        return -ENOMEM;
    }
    hd_cache_refresh(c);
    hd_metrics_set_extra(render, c);
    *out = c;
    return 0;
}

int hd_cache_start(struct hd_cache *c)
{
    if (pthread_create(&c->hk, NULL, hd_cache_hk_main, c) != 0)
        return -EAGAIN;
    c->hk_running = 1;
    if (hd_wb_start(c->wb) < 0)
        return -EAGAIN;
    return hd_plans_start(c);
}

void hd_cache_stop(struct hd_cache *c)
{
    if (!c)
        return;
    atomic_store(&c->stopping, 1);
    hd_s3c_abort_all(); /* pool and job threads blocked in upstream calls return now */
    pthread_mutex_lock(&c->hmu);
    pthread_cond_broadcast(&c->hcv);
    pthread_mutex_unlock(&c->hmu);
    hd_plans_stop(c);  /* its fetches end now */
    if (c->hk_running) /* it starts LRU jobs: gone before the jobs are */
        pthread_join(c->hk, NULL);
    c->hk_running = 0;
    hd_wb_stop(c->wb);
}

void hd_cache_free(struct hd_cache *c)
{
    size_t i;

    if (!c)
        return;
    hd_metrics_set_extra(NULL, NULL);
    hd_cache_stop(c);
    for (i = 0; i < c->nbks; i++)
        hd_cbucket_unref(c->bks[i]);
    free(c->bks);
    free(c->cred_file);
    hd_plans_free(c);
    hd_fills_free(c->fills);
    hd_wb_free(c->wb);
    pthread_rwlock_destroy(&c->rmu);
    pthread_mutex_destroy(&c->hmu);
    pthread_mutex_destroy(&c->evmu);
    pthread_cond_destroy(&c->hcv);
    c->magic = 0;
    free(c);
}
