/* evict: makes room on a mountpath by dropping cached copies of S3-backed objects (never
 * native ones), for the lru job and for a fill that found no room (the write path). Without
 * epoch plans, least recently used first; with plans, Belady's MIN: first what no plan reads
 * again (least recently used first among those), then the object whose next use in the
 * plans is furthest away (plan.c's hd_plans_next_use; the nearest use across plans counts).
 * Job threads and pool threads; one eviction runs at a time per cache (c->evmu). */
#include "target/cache/int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

#define EVICT_BATCH 256

#define PLAN_BATCH 200000 /* with plans, candidates ranked at once */

struct ranked {
    uint64_t next; /* plan positions to the next use, HD_PLAN_NEVER: none */
    size_t lru;    /* index in LRU order */
};

static const struct ranked *rank_ctx; /* qsort context, under c->evmu */

/* Furthest next use first; among equals (no plan reads them again) least recently used. */
static int by_rank(const void *a, const void *b)
{
    const struct ranked *x = &rank_ctx[*(const size_t *)a], *y = &rank_ctx[*(const size_t *)b];

    if (x->next != y->next)
        return x->next > y->next ? -1 : 1;
    return x->lru < y->lru ? -1 : x->lru > y->lru;
}

/* Orders v (LRU order) for Belady's MIN across the live plans: *order gets indices into v. */
static int rank(struct hd_cache *c, const struct hd_lru_ent *v, size_t n, size_t **order)
{
    struct ranked *rk = calloc(n ? n : 1, sizeof(*rk));
    size_t *o = calloc(n ? n : 1, sizeof(*o)), i;

    if (!rk || !o) {
        free(rk);
        free(o);
        return -ENOMEM;
    }
    for (i = 0; i < n; i++) {
        rk[i].next = hd_plans_next_use(c, v[i].bucket, v[i].name);
        rk[i].lru = i;
        o[i] = i;
    }
    rank_ctx = rk;
    qsort(o, n, sizeof(*o), by_rank);
    free(rk);
    *order = o;
    return 0;
}

static int over(const struct hd_mp_usage *u, uint64_t need, int pct)
{
    return (double)(u->used + need) * 100.0 > (double)u->capacity * pct;
}

int hd_cache_evict_mp(struct hd_cache *c, struct hd_job *j, size_t mpi, const char *const *buckets,
                      size_t nb, int low, int high, uint64_t need, uint64_t *objs, uint64_t *bytes)
{
    struct hd_store *st = c->st;
    struct hd_mp_usage u;
    int rc = 0, first = 1;

    pthread_mutex_lock(&c->evmu);
    for (;;) {
        struct hd_lru_ent *v = NULL;
        size_t n = 0, i;
        if (j ? hd_job_stopped(j) : hd_cache_stopping(c)) {
            rc = -ECANCELED;
            break;
        }
        if ((rc = hd_store_mp_usage(st, mpi, &u)) < 0)
            break;
        if (!u.capacity || !over(&u, need, low))
            break;
        if (first && !over(&u, need, high))
            break; /* between the marks: only a mountpath above high starts eviction */
        first = 0;
        size_t *order = NULL, k;
        int planned = hd_plans_live(c);
        if ((rc = hd_store_lru_batch(st, mpi, buckets, nb, planned ? PLAN_BATCH : EVICT_BATCH, &v,
                                     &n)) < 0)
            break;
        if (planned && (rc = rank(c, v, n, &order)) < 0) {
            hd_store_lru_free(v, n);
            break;
        }
        if (n == 0) {
            if (j)
                hd_job_error(j,
                             "mountpath %s: %llu of %llu bytes used and nothing cached left to "
                             "evict (native objects are never evicted)",
                             u.path, (unsigned long long)u.used, (unsigned long long)u.capacity);
            free(order);
            hd_store_lru_free(v, n);
            break;
        }
        for (k = 0; k < n && !(j ? hd_job_stopped(j) : hd_cache_stopping(c)); k++) {
            i = order ? order[k] : k;
            if (hd_store_delete_if(st, mpi, v[i].bucket, v[i].name, v[i].etag, v[i].mtime_ms) < 0)
                continue; /* rewritten or deleted meanwhile */
            (*objs)++;
            *bytes += v[i].size;
            if (j)
                hd_job_add(j, 1, v[i].size);
            hd_cstat_add(HD_CS_EVICTED, 1);
            hd_cstat_add(HD_CS_EVICTED_BYTES, v[i].size);
            hd_plans_evicted(c, v[i].bucket, v[i].name, v[i].size);
            u.used = u.used > v[i].size ? u.used - v[i].size : 0;
            if (!over(&u, need, low))
                break; /* close enough: the next round reads the exact usage */
        }
        free(order);
        hd_store_lru_free(v, n);
    }
    pthread_mutex_unlock(&c->evmu);
    return rc;
}

int hd_cache_make_room(struct hd_cache *c, const char *bucket, const char *key, uint64_t need)
{
    char **buckets = NULL;
    size_t nb = 0;
    uint64_t objs = 0, bytes = 0;
    int low, high, rc;

    hd_cache_space_marks(c, &low, &high);
    if ((rc = hd_cache_bucket_names(c, &buckets, &nb)) < 0)
        return rc;
    /* evict down to low with room for `need`; start even between the marks (need is here) */
    rc = hd_cache_evict_mp(c, NULL, hd_store_mp_index(c->st, bucket, key),
                           (const char *const *)buckets, nb, low, 0, need, &objs, &bytes);
    hd_cache_names_free(buckets, nb);
    if (objs)
        HD_LOG(HD_INFO, NULL, "made room for %s/%s: evicted %llu objects, %llu bytes", bucket, key,
               (unsigned long long)objs, (unsigned long long)bytes);
    return rc;
}
