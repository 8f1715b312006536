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
#include "target/api/internal.h"
#include "target/jobs/jobs.h"

#define CACHE_MAGIC 0x63616368u /* "cach" */
#define ACALL_MAGIC 0x6163616cu /* "acal" */

struct hd_cache {
    uint32_t magic;
    struct hd_target *t;

    /* settings, read-only after new */
    struct hd_s3c base; /* timeouts and retries every bucket's client starts from */
    char *cred_file;
    int range_fill, prefetch_workers, low, high;
    long atime_ms, check_ms;

    /* registry */
    pthread_rwlock_t rmu;
    struct hd_cbucket **bks;
    size_t nbks;

    /* pool */
    pthread_mutex_t pmu;
    pthread_cond_t pcv;   /* work queued, or stopping */
    pthread_cond_t pdone; /* a thread exited */
    struct hd_ctask *qh, *qt;
    int nthreads, nidle, queued, maxthreads;
    atomic_int stopping;

    /* housekeeping */
    pthread_t hk;
    int hk_running;
    pthread_mutex_t hmu;
    pthread_cond_t hcv;
    int kicked;
};

/* ---- metrics ---- */

static const char *const cstat_names[HD_CS_COUNT] = {
    "hoard_cache_hits_total",      "hoard_cache_misses_total",      "hoard_cold_get_bytes_total",
    "hoard_cold_fills_total",      "hoard_cold_fills_failed_total", "hoard_cold_range_reads_total",
    "hoard_upstream_errors_total", "hoard_cache_validations_total", "hoard_cache_stale_total",
    "hoard_write_through_total",   "hoard_delete_through_total",    "hoard_evictions_total",
    "hoard_evicted_bytes_total"};
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
    "Bytes of cached objects evicted"};
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

static void render(struct hd_buf *b, void *arg)
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
    n = hd_store_nmp(c->t->st);
    hd_buf_puts(b, "# HELP hoard_mountpath_used_bytes Bytes used on a mountpath (objects "
                   "when space.capacity is set, else the filesystem).\n"
                   "# TYPE hoard_mountpath_used_bytes gauge\n");
    for (i = 0; i < n; i++) {
        struct hd_mp_usage u;
        if (hd_store_mp_usage(c->t->st, i, &u) == 0)
            hd_buf_printf(b, "hoard_mountpath_used_bytes{mountpath=\"%s\"} %llu\n", u.path,
                          (unsigned long long)u.used);
    }
    hd_buf_puts(b, "# HELP hoard_mountpath_capacity_bytes Capacity the watermarks apply to.\n"
                   "# TYPE hoard_mountpath_capacity_bytes gauge\n");
    for (i = 0; i < n; i++) {
        struct hd_mp_usage u;
        if (hd_store_mp_usage(c->t->st, i, &u) == 0)
            hd_buf_printf(b, "hoard_mountpath_capacity_bytes{mountpath=\"%s\"} %llu\n", u.path,
                          (unsigned long long)u.capacity);
    }
    hd_buf_puts(b, "# HELP hoard_mountpath_objects Objects in a mountpath's catalog.\n"
                   "# TYPE hoard_mountpath_objects gauge\n");
    for (i = 0; i < n; i++) {
        struct hd_mp_usage u;
        if (hd_store_mp_usage(c->t->st, i, &u) == 0)
            hd_buf_printf(b, "hoard_mountpath_objects{mountpath=\"%s\"} %llu\n", u.path,
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
                 hd_tcluster_id(c->t->cl), b->props.up.profile, name);
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

    if (hd_store_bucket_list(c->t->st, &bi, &n) < 0)
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
        hd_store_bucket_props(c->t->st, bi[i].name, &props);
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

/* ---- the pool ---- */

static void *pool_main(void *arg)
{
    struct hd_cache *c = arg;

    pthread_mutex_lock(&c->pmu);
    for (;;) {
        struct hd_ctask *task;
        c->nidle++;
        while (!c->qh && !atomic_load(&c->stopping))
            pthread_cond_wait(&c->pcv, &c->pmu);
        c->nidle--;
        if (!c->qh)
            break; /* stopping and nothing left */
        task = c->qh;
        c->qh = task->next;
        if (!c->qh)
            c->qt = NULL;
        c->queued--;
        pthread_mutex_unlock(&c->pmu);
        task->run(task);
        pthread_mutex_lock(&c->pmu);
    }
    c->nthreads--;
    pthread_cond_broadcast(&c->pdone);
    pthread_mutex_unlock(&c->pmu);
    return NULL;
}

int hd_cache_submit(struct hd_cache *c, struct hd_ctask *task)
{
    pthread_attr_t at;
    pthread_t th;
    int rc = 0;

    pthread_mutex_lock(&c->pmu);
    if (atomic_load(&c->stopping)) {
        rc = HD_EUNAVAIL;
        goto out;
    }
    if (c->nidle <= c->queued && c->nthreads < c->maxthreads) {
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&at, 512u * 1024);
        if (pthread_create(&th, &at, pool_main, c) == 0)
            c->nthreads++;
        pthread_attr_destroy(&at);
        if (c->nthreads == 0) {
            rc = HD_EUNAVAIL;
            goto out;
        }
    }
    task->next = NULL;
    if (c->qt)
        c->qt->next = task;
    else
        c->qh = task;
    c->qt = task;
    c->queued++;
    pthread_cond_signal(&c->pcv);
out:
    pthread_mutex_unlock(&c->pmu);
    return rc;
}

int hd_cache_stopping(struct hd_cache *c)
{
    return atomic_load(&c->stopping);
}

/* ---- parked requests ---- */

static void acall_unref(struct hd_acall *a)
{
    int last;

    pthread_mutex_lock(&a->mu);
    last = --a->refs == 0;
    pthread_mutex_unlock(&a->mu);
    if (!last)
        return;
    if (a->arg_free)
        a->arg_free(a->arg);
    hd_s3c_obj_cleanup(&a->obj);
    pthread_mutex_destroy(&a->mu);
    a->magic = 0;
    free(a);
}

static void acall_finish(struct hd_acall *a)
{
    pthread_mutex_lock(&a->mu);
    a->finished = 1;
    if (a->r && a->waiting) {
        a->waiting = 0;
        hd_req_resume(a->r);
    }
    pthread_mutex_unlock(&a->mu);
}

static void acall_task(struct hd_ctask *task)
{
    struct hd_acall *a = (struct hd_acall *)((char *)task - offsetof(struct hd_acall, task));

    if (a->magic == ACALL_MAGIC)
        a->run(a);
    acall_finish(a);
    acall_unref(a); /* the task's reference */
}

struct hd_acall *hd_acall_new(struct hd_cache *c, hd_acall_fn run, void *arg,
                              void (*arg_free)(void *arg))
{
    struct hd_acall *a = calloc(1, sizeof(*a));

    if (!a) {
        if (arg_free)
            arg_free(arg);
        return NULL;
    }
    a->magic = ACALL_MAGIC;
    a->c = c;
    a->run = run;
    a->arg = arg;
    a->arg_free = arg_free;
    a->refs = 1; /* the request's (released by hd_acall_release) */
    a->task.run = acall_task;
    pthread_mutex_init(&a->mu, NULL);
    return a;
}

int hd_acall_submit(struct hd_acall *a, struct hd_req *r)
{
    int rc;

    a->r = r;
    a->refs++; /* the task's */
    if ((rc = hd_cache_submit(a->c, &a->task)) < 0) {
        a->refs--;
        a->rc = rc;
        a->err.code = rc;
        snprintf(a->err.msg, sizeof(a->err.msg), "The target is shutting down.");
        a->finished = 1;
    }
    return rc;
}

int hd_acall_park(struct hd_acall *a, struct hd_req *r)
{
    int pending;

    pthread_mutex_lock(&a->mu);
    pending = !a->finished;
    if (pending) {
        a->waiting = 1;
        hd_req_suspend(r);
    }
    pthread_mutex_unlock(&a->mu);
    return pending;
}

void hd_acall_release(struct hd_acall *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    a->r = NULL;
    a->waiting = 0;
    pthread_mutex_unlock(&a->mu);
    acall_unref(a);
}

static void acall_end(struct hd_req *r)
{
    struct hd_acall *a = r->data;

    if (!a || a->magic != ACALL_MAGIC) {
        hd_resp_err(r, HD_EINTERNAL);
        return;
    }
    if (hd_acall_park(a, r))
        return;
    a->done(r, a);
}

static void acall_done(struct hd_req *r)
{
    struct hd_acall *a = r->data;

    if (a && a->magic == ACALL_MAGIC)
        hd_acall_release(a);
    r->data = NULL;
}

void hd_acall_request(struct hd_req *r, struct hd_cache *c, hd_acall_fn run, hd_acall_done_fn done,
                      void *arg, void (*arg_free)(void *arg))
{
    struct hd_acall *a = hd_acall_new(c, run, arg, arg_free);

    if (!a) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    a->done = done;
    r->data = a;
    r->on_end = acall_end;
    r->on_done = acall_done;
    hd_acall_submit(a, r); /* a failure is answered by done() with a->rc */
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
    struct hd_store *st = c->t->st;
    struct hd_job *j;
    size_t i, n = hd_store_nmp(st);
    char id[64];

    for (i = 0; i < n; i++) {
        struct hd_mp_usage u;
        if (hd_store_mp_usage(st, i, &u) < 0 || !u.capacity)
            continue;
        if ((double)u.used * 100.0 <= (double)u.capacity * c->high)
            continue;
        j = hd_jobs_running(c->t->jobs, "lru");
        if (j) {
            hd_job_unref(j);
            return;
        }
        snprintf(id, sizeof(id), "lru-%lld", (long long)time(NULL));
        HD_LOG(HD_INFO, NULL,
               "mountpath %s above the high watermark (%llu of %llu bytes, high %d%%): "
               "starting %s",
               u.path, (unsigned long long)u.used, (unsigned long long)u.capacity, c->high, id);
        hd_jobs_start(c->t->jobs, id, "lru", "", NULL);
        return;
    }
}

static void *hk_main(void *arg)
{
    struct hd_cache *c = arg;
    uint64_t next_flush = 0, next_check = 0;

    pthread_mutex_lock(&c->hmu);
    while (!atomic_load(&c->stopping)) {
        uint64_t now = hd_now_ns(), wake;
        struct timespec ts;
        int kicked = c->kicked;
        c->kicked = 0;
        pthread_mutex_unlock(&c->hmu);
        if (kicked || now >= next_flush) {
            hd_store_atime_flush(c->t->st);
            next_flush = now + (uint64_t)c->atime_ms * 1000000ull;
        }
        if (kicked || now >= next_check) {
            check_space(c);
            next_check = now + (uint64_t)c->check_ms * 1000000ull;
        }
        pthread_mutex_lock(&c->hmu);
        if (c->kicked || atomic_load(&c->stopping))
            continue;
        wake = next_flush < next_check ? next_flush : next_check;
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
    hd_store_atime_flush(c->t->st);
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

int hd_cache_new(struct hd_target *t, const struct hd_config *cfg, struct hd_cache **out)
{
    struct hd_cache *c = calloc(1, sizeof(*c));

    if (!c)
        return -ENOMEM;
    c->magic = CACHE_MAGIC;
    c->t = t;
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
    c->maxthreads = (int)hd_config_int(cfg, "upstream.workers");
    pthread_rwlock_init(&c->rmu, NULL);
    pthread_mutex_init(&c->pmu, NULL);
    pthread_cond_init(&c->pcv, NULL);
    pthread_cond_init(&c->pdone, NULL);
    pthread_mutex_init(&c->hmu, NULL);
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
    hd_cache_refresh(c);
    hd_metrics_set_extra(render, c);
    *out = c;
    return 0;
}

int hd_cache_start(struct hd_cache *c)
{
    if (pthread_create(&c->hk, NULL, hk_main, c) != 0)
        return -EAGAIN;
    c->hk_running = 1;
    return 0;
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
    if (c->hk_running) /* it starts LRU jobs: gone before the jobs are */
        pthread_join(c->hk, NULL);
    c->hk_running = 0;
}

void hd_cache_free(struct hd_cache *c)
{
    size_t i;

    if (!c)
        return;
    hd_metrics_set_extra(NULL, NULL);
    hd_cache_stop(c);
    pthread_mutex_lock(&c->pmu);
    pthread_cond_broadcast(&c->pcv);
    while (c->nthreads > 0)
        pthread_cond_wait(&c->pdone, &c->pmu);
    pthread_mutex_unlock(&c->pmu);
    for (i = 0; i < c->nbks; i++)
        hd_cbucket_unref(c->bks[i]);
    free(c->bks);
    free(c->cred_file);
    pthread_rwlock_destroy(&c->rmu);
    pthread_mutex_destroy(&c->pmu);
    pthread_cond_destroy(&c->pcv);
    pthread_cond_destroy(&c->pdone);
    pthread_mutex_destroy(&c->hmu);
    pthread_cond_destroy(&c->hcv);
    c->magic = 0;
    free(c);
}
