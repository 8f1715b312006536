/* cache: the S3-backed bucket registry, credentials, the upstream thread pool, parked
 * requests (hd_acall), housekeeping (atime flushes, watermarks -> LRU job) and cache
 * metrics. See cache.h. */
#include "target/cache/cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/metrics.h"
#include "target/cache/int.h"

#define CACHE_MAGIC 0x63616368u /* "cach" */

/* ---- metrics ---- */

static const char *const cstat_names[HD_CS_COUNT] = {"hoard_cache_hits_total",
                                                     "hoard_cache_misses_total",
                                                     "hoard_cold_get_bytes_total",
                                                     "hoard_cold_fills_total",
                                                     "hoard_cold_fills_failed_total",
                                                     "hoard_cold_range_reads_total",
                                                     "hoard_upstream_errors_total",
                                                     "hoard_cache_validations_total",
                                                     "hoard_cache_stale_total",
                                                     "hoard_write_through_total",
                                                     "hoard_delete_through_total",
                                                     "hoard_evictions_total",
                                                     "hoard_evicted_bytes_total",
                                                     "hoard_cold_passthrough_total",
                                                     "hoard_cold_get_readback_bytes_total",
                                                     "hoard_lifecycle_expired_total",
                                                     "hoard_lifecycle_aborted_uploads_total"};
static const char *const cstat_help[HD_CS_COUNT] = {
    "GETs of S3-backed objects served from local disks",
    "GETs of S3-backed objects that went to the upstream",
    "Bytes fetched from upstream S3 servers",
    "Objects fetched from an upstream and cached",
    "Upstream fetches that cached nothing (upstream error, size or ETag mismatch, no space)",
    "Ranged cold GETs served with an upstream range request",
    "Upstream calls that failed (unreachable, 5xx after retries, 403...)",
    "Warm GETs checked against the upstream (validate_warm_get)",
    "Validated warm GETs whose upstream ETag had changed (object refetched)",
    "PUTs written through to the upstream",
    "DELETEs written through to the upstream",
    "Cached objects evicted (LRU and evict jobs)",
    "Bytes of cached objects evicted",
    "Cold GETs served to the client without caching the object (no room for it)",
    "Bytes cold GETs read back from the cache file (clients behind the fill's memory window)",
    "Objects deleted by bucket lifecycle rules",
    "Incomplete multipart uploads aborted by bucket lifecycle rules"};
static _Atomic uint64_t cstats[HD_CS_COUNT];

static const double cold_le[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                 1,     2.5,  5,     10,   30,  60,   300};
#define NCOLD (sizeof(cold_le) / sizeof(cold_le[0]))
static _Atomic uint64_t cold_ttfb[NCOLD + 1], cold_total[NCOLD + 1];
static _Atomic uint64_t cold_ttfb_us, cold_total_us, cold_count;

void hd_cstat_add(enum hd_cstat s, uint64_t n)
{
    atomic_fetch_add_explicit(&cstats[s], n, memory_order_relaxed);
}

static void hist_add(_Atomic uint64_t *h, double s)
{
    size_t i;

    for (i = 0; i < NCOLD && s > cold_le[i]; i++)
        ;
    atomic_fetch_add_explicit(&h[i], 1, memory_order_relaxed);
}

void hd_cstat_cold_time(double ttfb_s, double total_s)
{
    hist_add(cold_ttfb, ttfb_s);
    hist_add(cold_total, total_s);
    atomic_fetch_add(&cold_ttfb_us, (uint64_t)(ttfb_s * 1e6));
    atomic_fetch_add(&cold_total_us, (uint64_t)(total_s * 1e6));
    atomic_fetch_add(&cold_count, 1);
}

static void render_hist(struct hd_buf *b, const char *name, const char *help, _Atomic uint64_t *h,
                        uint64_t sum_us)
{
    uint64_t cum = 0;
    size_t i;

    hd_buf_printf(b, "# HELP %s %s.\n# TYPE %s histogram\n", name, help, name);
    for (i = 0; i < NCOLD; i++) {
        cum += atomic_load(&h[i]);
        hd_buf_printf(b, "%s_bucket{le=\"%g\"} %llu\n", name, cold_le[i], (unsigned long long)cum);
    }
    cum += atomic_load(&h[NCOLD]);
    hd_buf_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name,
                  (unsigned long long)cum, name, (double)sum_us / 1e6, name,
                  (unsigned long long)cum);
}

void hd_cache_render(struct hd_buf *b, void *arg)
{
    struct hd_cache *c = arg;
    size_t i, n;

    for (i = 0; i < HD_CS_COUNT; i++)
        hd_buf_printf(b, "# HELP %s %s.\n# TYPE %s counter\n%s %llu\n", cstat_names[i],
                      cstat_help[i], cstat_names[i], cstat_names[i],
                      (unsigned long long)atomic_load(&cstats[i]));
    render_hist(b, "hoard_cold_get_ttfb_seconds",
                "Cold GET fills: time from the upstream request to its first byte", cold_ttfb,
                atomic_load(&cold_ttfb_us));
    render_hist(b, "hoard_cold_get_seconds", "Cold GET fills: time to fetch the whole object",
                cold_total, atomic_load(&cold_total_us));
    if (!c || c->magic != CACHE_MAGIC)
        return;
    n = hd_store_nmp(c->st);
    hd_buf_puts(b, "# HELP hoard_mountpath_used_bytes Bytes used on a mountpath (objects "
                   "when space.capacity is set, else the filesystem).\n"
                   "# TYPE hoard_mountpath_used_bytes gauge\n");
    for (i = 0; i < n; i++) {
        struct hd_mp_usage u;
        if (hd_store_mp_usage(c->st, i, &u) == 0)
            hd_buf_printf(b, "hoard_mountpath_used_bytes{mountpath=\"%zu\"} %llu\n", i,
                          (unsigned long long)u.used);
    }
    hd_buf_puts(b, "# HELP hoard_mountpath_capacity_bytes Capacity the watermarks apply to.\n"
                   "# TYPE hoard_mountpath_capacity_bytes gauge\n");
    for (i = 0; i < n; i++) {
        struct hd_mp_usage u;
        if (hd_store_mp_usage(c->st, i, &u) == 0)
            hd_buf_printf(b, "hoard_mountpath_capacity_bytes{mountpath=\"%zu\"} %llu\n", i,
                          (unsigned long long)u.capacity);
    }
    hd_buf_puts(b, "# HELP hoard_mountpath_objects Objects in a mountpath's catalog.\n"
                   "# TYPE hoard_mountpath_objects gauge\n");
    for (i = 0; i < n; i++) {
        struct hd_mp_usage u;
        if (hd_store_mp_usage(c->st, i, &u) == 0)
            hd_buf_printf(b, "hoard_mountpath_objects{mountpath=\"%zu\"} %llu\n", i,
                          (unsigned long long)u.objects);
    }
}

/* ---- registry ---- */

void hd_cbucket_unref(struct hd_cbucket *b)
{
    if (b && atomic_fetch_sub(&b->refs, 1) == 1) {
        memset(b->s3.secret, 0, sizeof(b->s3.secret));
        free(b);
    }
}

static struct hd_cbucket *cbucket_make(struct hd_cache *c, const char *name, const char *props)
{
    struct hd_cbucket *b = calloc(1, sizeof(*b));
    char err[256];

    if (!b)
        return NULL;
    atomic_init(&b->refs, 1);
    snprintf(b->name, sizeof(b->name), "%s", name);
    if (hd_bprops_parse(props, &b->props, err, sizeof(err)) < 0 || !b->props.has_upstream) {
        b->cred_err = HD_EUNAVAIL;
        snprintf(b->cred_msg, sizeof(b->cred_msg),
                 "Bucket %s is S3-backed but has no valid upstream: %s", name,
                 err[0] ? err : "set props.upstream");
        b->remote = b->name;
        return b;
    }
    b->remote = hd_bprops_remote_bucket(&b->props, b->name);
    b->s3 = c->base;
    snprintf(b->s3.endpoint, sizeof(b->s3.endpoint), "%s", b->props.up.endpoint);
    snprintf(b->s3.region, sizeof(b->s3.region), "%s", b->props.up.region);
    b->s3.vhost = b->props.up.vhost;
    if (hd_s3c_profile(c->cred_file, b->props.up.profile, &b->s3) < 0) {
        b->cred_err = HD_EUNAVAIL;
        snprintf(b->cred_msg, sizeof(b->cred_msg),
                 "Target %s has no credentials for profile '%s' of bucket %s (see "
                 "docs/caching.md).",
                 hd_tcluster_id(c->cl), b->props.up.profile, name);
        HD_LOG(HD_ERROR, NULL, "bucket %s: no credentials for profile '%s'", name,
               b->props.up.profile);
    }
    return b;
}

/* the pointer is "remote": it must follow the struct when the registry copies it */
static void fix_remote(struct hd_cbucket *b)
{
    b->remote = b->props.has_upstream && b->props.up.bucket[0] ? b->props.up.bucket : b->name;
}

void hd_cache_refresh(struct hd_cache *c)
{
    struct hd_bucket_info *bi = NULL;
    struct hd_cbucket **nv = NULL, **old;
    size_t n = 0, i, k = 0, nold;

    if (hd_store_bucket_list(c->st, &bi, &n) < 0)
        return;
    nv = calloc(n ? n : 1, sizeof(*nv));
    if (!nv) {
        free(bi);
        return;
    }
    for (i = 0; i < n; i++) {
        char *props = NULL;
        if (strcmp(bi[i].provider, "aws") != 0)
            continue;
        hd_store_bucket_props(c->st, bi[i].name, &props);
        nv[k] = cbucket_make(c, bi[i].name, props);
        free(props);
        if (nv[k]) {
            fix_remote(nv[k]);
            k++;
        }
    }
    free(bi);
    pthread_rwlock_wrlock(&c->rmu);
    old = c->bks;
    nold = c->nbks;
    c->bks = nv;
    c->nbks = k;
    pthread_rwlock_unlock(&c->rmu);
    for (i = 0; i < nold; i++)
        hd_cbucket_unref(old[i]);
    free(old);
}

struct hd_cbucket *hd_cache_bucket(struct hd_cache *c, const char *name)
{
    struct hd_cbucket *b = NULL;
    size_t i;

    if (!c)
        return NULL;
    pthread_rwlock_rdlock(&c->rmu);
    for (i = 0; i < c->nbks; i++)
        if (strcmp(c->bks[i]->name, name) == 0) {
            b = c->bks[i];
            atomic_fetch_add(&b->refs, 1);
            break;
        }
    pthread_rwlock_unlock(&c->rmu);
    return b;
}

int hd_cache_bucket_names(struct hd_cache *c, char ***names, size_t *n)
{
    size_t i;
    int rc = 0;

    *names = NULL;
    *n = 0;
    pthread_rwlock_rdlock(&c->rmu);
    if (c->nbks && !(*names = calloc(c->nbks, sizeof(**names))))
        rc = -ENOMEM;
    for (i = 0; rc == 0 && i < c->nbks; i++) {
        if (!((*names)[i] = strdup(c->bks[i]->name)))
            rc = -ENOMEM;
        else
            (*n)++;
    }
    pthread_rwlock_unlock(&c->rmu);
    if (rc < 0) {
        hd_cache_names_free(*names, *n);
        *names = NULL;
        *n = 0;
    }
    return rc;
}

void hd_cache_names_free(char **names, size_t n)
{
    size_t i;

    for (i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

int hd_cbucket_check(const struct hd_cbucket *cb, char *msg, size_t msglen)
{
    if (!cb->cred_err)
        return 0;
    snprintf(msg, msglen, "%s", cb->cred_msg);
    return cb->cred_err;
}

int hd_cache_stopping(struct hd_cache *c)
{
    return atomic_load(&c->stopping) || hd_pool_stopping(c->pool);
}

/* ---- housekeeping ---- */

void hd_cache_kick(struct hd_cache *c)
{
    pthread_mutex_lock(&c->hmu);
    c->kicked = 1;
    pthread_cond_signal(&c->hcv);
    pthread_mutex_unlock(&c->hmu);
}

/* Starts the LRU job when a mountpath is above the high watermark and none runs. */
static void check_space(struct hd_cache *c)
{
    struct hd_store *st = c->st;
    struct hd_job *j;
    size_t i, n = hd_store_nmp(st);
    char id[64];

    for (i = 0; i < n; i++) {
        struct hd_mp_usage u;
        if (hd_store_mp_usage(st, i, &u) < 0 || !u.capacity)
            continue;
        if ((double)u.used * 100.0 <= (double)u.capacity * c->high)
            continue;
        j = hd_jobs_running(c->js, "lru");
        if (j) {
            hd_job_unref(j);
            return;
        }
        snprintf(id, sizeof(id), "lru-%lld", (long long)time(NULL));
        HD_LOG(HD_INFO, NULL,
               "mountpath %s above the high watermark (%llu of %llu bytes, high %d%%): "
               "starting %s",
               u.path, (unsigned long long)u.used, (unsigned long long)u.capacity, c->high, id);
        hd_jobs_start(c->js, id, "lru", "", NULL);
        return;
    }
}

/* Starts the job "lifecycle" (target/api/lifecycle.c) when a bucket here has lifecycle
 * rules and it is not running yet. */
static void lifecycle_pass(struct hd_cache *c)
{
    if (hd_store_lifecycle_buckets(c->st) > 0)
        hd_jobs_start(c->js, "lifecycle", "lifecycle", "", NULL); /* running: declined */
}

void *hd_cache_hk_main(void *arg)
{
    struct hd_cache *c = arg;
    uint64_t next_flush = 0, next_check = 0, next_lc = 0;

    pthread_mutex_lock(&c->hmu);
    while (!atomic_load(&c->stopping)) {
        uint64_t now = hd_now_ns(), wake;
        struct timespec ts;
        int kicked = c->kicked;
        c->kicked = 0;
        pthread_mutex_unlock(&c->hmu);
        if (kicked || now >= next_flush) {
            hd_store_atime_flush(c->st);
            next_flush = now + (uint64_t)c->atime_ms * 1000000ull;
        }
        if (kicked || now >= next_check) {
            check_space(c);
            next_check = now + (uint64_t)c->check_ms * 1000000ull;
        }
        if (!next_lc) { /* the first pass a minute in (or one interval, if shorter) */
            next_lc = now + (uint64_t)(c->lc_ms < 60000 ? c->lc_ms : 60000) * 1000000ull;
        } else if (now >= next_lc) {
            lifecycle_pass(c);
            next_lc = now + (uint64_t)c->lc_ms * 1000000ull;
        }
        pthread_mutex_lock(&c->hmu);
        if (c->kicked || atomic_load(&c->stopping))
            continue;
        wake = next_flush < next_check ? next_flush : next_check;
        wake = wake < next_lc ? wake : next_lc;
        now = hd_now_ns();
        if (wake > now) {
            uint64_t d = wake - now;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += (time_t)(d / 1000000000ull);
            ts.tv_nsec += (long)(d % 1000000000ull);
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&c->hcv, &c->hmu, &ts);
        }
    }
    pthread_mutex_unlock(&c->hmu);
    hd_store_atime_flush(c->st);
    return NULL;
}

/* ---- setup ---- */

int hd_cache_range_fill(const struct hd_cache *c)
{
    return c->range_fill;
}

int hd_cache_prefetch_workers(const struct hd_cache *c)
{
    return c->prefetch_workers;
}

int hd_cache_space_marks(const struct hd_cache *c, int *low, int *high)
{
    *low = c->low;
    *high = c->high;
    return 0;
}
