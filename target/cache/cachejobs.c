/* cachejobs: the cache's long-running work as jobs (target/jobs.h).
 *
 *   prefetch  args {"names":[..]} | {"template":"shard-{000..999}.tar"} | {"prefix":"p/"},
 *             optional "revalidate": true. Each target fetches the names it owns (HRW over
 *             the current smap), prefetch.workers at a time, skipping what is cached unless
 *             asked to revalidate (HEAD, refetch when the ETag changed). Fetches join a cold
 *             GET of the same object in progress (single-flight). A prefix is listed from
 *             the upstream by every target, each keeping its own names.
 *   evict     args as prefetch, or none for the whole bucket: drops cached copies (never the
 *             upstream's objects; the bucket stays).
 *   lru       started by the housekeeping thread when a mountpath passes space.high: evicts
 *             the least recently used cached objects of S3-backed buckets until the
 *             mountpath is under space.low. Native buckets are never touched.
 * Progress: objects and bytes (fetched or evicted), errors kept by the job. Job threads. */
#include "target/cache/int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/hrw.h"
#include "common/log.h"
#include "common/smap.h"
#include "common/brace.h"

/* The cache a job of these kinds runs for. */
static struct hd_cache *jc(struct hd_job *j)
{
    return j->ctx;
}

#define BATCH 1000

/* ---- which names, in batches ---- */

struct names {
    json_t *list;          /* args.names */
    struct hd_brace *tmpl; /* args.template */
    const char *prefix;    /* args.prefix (listed from the upstream or the catalog) */
    uint64_t pos, count;   /* list/template cursor */
    char *token;           /* upstream listing cursor */
    char *after;           /* catalog listing cursor */
    int done;
};

static int names_init(struct hd_job *j, struct names *nm)
{
    json_t *a = j->args, *l = json_object_get(a, "names"), *tp = json_object_get(a, "template");
    json_t *px = json_object_get(a, "prefix");
    char err[256];
    size_t i;
    int given = (l != NULL) + (tp != NULL) + (px != NULL);

    memset(nm, 0, sizeof(*nm));
    if (given > 1) {
        hd_job_error(j, "give one of names, template, prefix");
        return HD_EBADARG;
    }
    if (l) {
        if (!json_is_array(l)) {
            hd_job_error(j, "names must be an array of object names");
            return HD_EBADARG;
        }
        for (i = 0; i < json_array_size(l); i++) {
            const char *s = json_string_value(json_array_get(l, i));
            if (!s || hd_object_name_check(s, strlen(s)) < 0) {
                hd_job_error(j, "names[%zu] is not a valid object name", i);
                return HD_EBADARG;
            }
        }
        nm->list = l;
        nm->count = json_array_size(l);
    } else if (tp) {
        if (!json_is_string(tp) ||
            hd_brace_parse(json_string_value(tp), &nm->tmpl, err, sizeof(err)) < 0) {
            hd_job_error(j, "template: %s", json_is_string(tp) ? err : "not a string");
            return HD_EBADARG;
        }
        nm->count = hd_brace_count(nm->tmpl);
    } else if (px) {
        if (!json_is_string(px)) {
            hd_job_error(j, "prefix must be a string");
            return HD_EBADARG;
        }
        nm->prefix = json_string_value(px);
    } else {
        nm->prefix = ""; /* the whole bucket (evict only) */
    }
    return 0;
}

static void names_cleanup(struct names *nm)
{
    hd_brace_free(nm->tmpl);
    free(nm->token);
    free(nm->after);
}

struct batch {
    char **v;
    uint64_t *sizes; /* catalog listings: the sizes, for eviction counts */
    size_t n;
};

static void batch_clear(struct batch *b)
{
    size_t i;

    for (i = 0; i < b->n; i++)
        free(b->v[i]);
    b->n = 0;
}

static int batch_alloc(struct batch *b)
{
    b->n = 0;
    b->v = calloc(BATCH, sizeof(*b->v));
    b->sizes = calloc(BATCH, sizeof(*b->sizes));
    return b->v && b->sizes ? 0 : -ENOMEM;
}

static void batch_free(struct batch *b)
{
    batch_clear(b);
    free(b->v);
    free(b->sizes);
}

static int batch_add(struct batch *b, const char *name, uint64_t size)
{
    if (!(b->v[b->n] = strdup(name)))
        return -ENOMEM;
    b->sizes[b->n++] = size;
    return 0;
}

/* The next batch from a list or template. */
static int next_enumerated(struct names *nm, struct batch *b)
{
    struct hd_buf s;
    int rc = 0;

    hd_buf_init(&s);
    while (b->n < BATCH && nm->pos < nm->count && rc == 0) {
        if (nm->list) {
            rc = batch_add(b, json_string_value(json_array_get(nm->list, nm->pos)), 0);
        } else {
            hd_buf_reset(&s);
            if ((rc = hd_brace_at(nm->tmpl, nm->pos, &s)) == 0)
                rc = s.len && hd_object_name_check(s.data, s.len) == 0
                         ? batch_add(b, s.data, 0)
                         : 0; /* a template can expand to names S3 refuses: skip them */
        }
        nm->pos++;
    }
    if (nm->pos >= nm->count)
        nm->done = 1;
    hd_buf_cleanup(&s);
    return rc;
}

/* The next page of the upstream listing under the prefix. */
static int next_upstream(struct hd_job *j, struct hd_cbucket *cb, struct names *nm, struct batch *b)
{
    struct hd_s3_list l;
    struct hd_s3c_err err;
    size_t i;
    int rc;

    if ((rc = hd_cbucket_check(cb, err.msg, sizeof(err.msg))) == 0)
        rc = hd_s3c_list(&cb->s3, cb->remote, nm->prefix, NULL, nm->after, nm->token, BATCH, &l,
                         &err);
    if (rc < 0) {
        hd_job_error(j, "listing %s/%s: %s", cb->name, nm->prefix, err.msg);
        return rc;
    }
    for (i = 0; i < l.nents && rc == 0; i++)
        rc = batch_add(b, l.ents[i].name, l.ents[i].size);
    free(nm->token);
    nm->token = l.next_token;
    l.next_token = NULL;
    if (l.nents) {
        free(nm->after);
        nm->after = strdup(l.ents[l.nents - 1].name);
    }
    if (!l.truncated || (!nm->token && !l.nents))
        nm->done = 1;
    hd_s3_list_cleanup(&l);
    return rc;
}

/* The next page of what this target holds under the prefix. */
static int next_local(struct hd_job *j, struct names *nm, struct batch *b)
{
    struct hd_list_opts o = {nm->prefix, NULL, nm->after, BATCH};
    struct hd_list_res res;
    size_t i;
    int rc;

    if ((rc = hd_store_list(jc(j)->st, j->bucket, &o, &res)) < 0) {
        hd_job_error(j, "listing %s locally: %s", j->bucket, hd_strerror(rc));
        return rc;
    }
    for (i = 0; i < res.nents && rc == 0; i++)
        rc = batch_add(b, res.ents[i].name, res.ents[i].size);
    if (res.nents) {
        free(nm->after);
        nm->after = strdup(res.ents[res.nents - 1].name);
    }
    if (!res.truncated)
        nm->done = 1;
    hd_list_res_cleanup(&res);
    return rc;
}

/* ---- prefetch ---- */

struct pf {
    struct hd_job *j;
    struct hd_cbucket *cb;
    int revalidate;
    struct batch *b;
    atomic_size_t next;
    atomic_ullong fetched, cached, failed;
};

static void *pf_worker(void *arg)
{
    struct pf *p = arg;
    size_t i;
    char msg[512];

    while ((i = atomic_fetch_add(&p->next, 1)) < p->b->n && !hd_job_stopped(p->j)) {
        uint64_t bytes = 0;
        int rc = hd_cache_fetch_sync(p->j->ctx, p->cb, p->b->v[i], p->revalidate, p->j, &bytes, msg,
                                     sizeof(msg));
        if (rc < 0) {
            atomic_fetch_add(&p->failed, 1);
            hd_job_error(p->j, "%s: %s", p->b->v[i], msg[0] ? msg : hd_strerror(rc));
        } else if (bytes) {
            atomic_fetch_add(&p->fetched, 1);
            hd_cstat_add(HD_CS_MISS, 1); /* a fill from the upstream, as a cold GET's */
        } else {
            atomic_fetch_add(&p->cached, 1);
        }
        hd_job_add(p->j, 1, bytes);
    }
    return NULL;
}

/* Fetches the batch with `workers` threads (the calling one included). */
static void pf_batch(struct pf *p, int workers)
{
    pthread_t th[256];
    int i, started = 0;

    atomic_store(&p->next, 0);
    for (i = 1; i < workers && (size_t)i < p->b->n; i++)
        if (pthread_create(&th[started], NULL, pf_worker, p) == 0)
            started++;
    pf_worker(p);
    for (i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    hd_job_set_extra(p->j, "fetched", atomic_load(&p->fetched));
    hd_job_set_extra(p->j, "already_cached", atomic_load(&p->cached));
    hd_job_set_extra(p->j, "failed", atomic_load(&p->failed));
}

/* Drops the names this target does not own from b. */
static void keep_owned(struct hd_job *j, struct hd_smap *s, struct batch *b)
{
    size_t i, w = 0;

    for (i = 0; i < b->n; i++) {
        if (hd_tcluster_owns(jc(j)->cl, s, "aws", j->bucket, b->v[i])) {
            b->v[w] = b->v[i];
            b->sizes[w++] = b->sizes[i];
        } else {
            free(b->v[i]);
        }
    }
    b->n = w;
}

static struct hd_cbucket *job_bucket(struct hd_job *j)
{
    struct hd_cbucket *cb = hd_cache_bucket(j->ctx, j->bucket);

    if (!cb)
        hd_job_error(j, "bucket %s is not an S3-backed bucket on this target", j->bucket);
    return cb;
}

/* Objects of a list/template this target owns: the job's total. */
static uint64_t owned_total(struct hd_job *j, struct hd_smap *s, struct names *nm)
{
    struct names c = *nm;
    struct batch b;
    uint64_t total = 0;
    char *v[BATCH];
    uint64_t sz[BATCH];

    c.token = c.after = NULL;
    b.v = v;
    b.sizes = sz;
    b.n = 0;
    while (!c.done && !hd_job_stopped(j)) {
        if (next_enumerated(&c, &b) < 0)
            break;
        keep_owned(j, s, &b);
        total += b.n;
        batch_clear(&b);
    }
    return total;
}

static int prefetch_run(struct hd_job *j, void *ctx)
{
    struct hd_cbucket *cb = job_bucket(j);
    struct hd_smap *s = NULL;
    struct names nm;
    struct batch b = {0};
    struct pf p;
    int rc;

    if (!cb)
        return HD_ENOSUCHBUCKET;
    if ((rc = names_init(j, &nm)) < 0)
        goto out;
    if (!json_object_get(j->args, "names") && !json_object_get(j->args, "template") &&
        !json_object_get(j->args, "prefix")) {
        hd_job_error(j, "prefetch needs names, a template or a prefix");
        rc = HD_EBADARG;
        goto out;
    }
    if ((rc = batch_alloc(&b)) < 0)
        goto out;
    s = hd_tcluster_smap(jc(j)->cl);
    if (!nm.prefix)
        hd_job_set_total(j, owned_total(j, s, &nm), 0);
    memset(&p, 0, sizeof(p));
    p.j = j;
    p.cb = cb;
    p.revalidate = json_is_true(json_object_get(j->args, "revalidate"));
    p.b = &b;
    while (!nm.done && !hd_job_stopped(j)) {
        rc = nm.prefix ? next_upstream(j, cb, &nm, &b) : next_enumerated(&nm, &b);
        if (rc < 0)
            break;
        keep_owned(j, s, &b);
        pf_batch(&p, hd_cache_prefetch_workers(j->ctx));
        batch_clear(&b);
    }
    if (rc == 0 && hd_job_stopped(j))
        rc = -ECANCELED;
out:
    batch_free(&b);
    names_cleanup(&nm);
    hd_smap_unref(s);
    hd_cbucket_unref(cb);
    return rc;
}

/* ---- evict ---- */

static int evict_run(struct hd_job *j, void *ctx)
{
    struct hd_cbucket *cb = job_bucket(j);
    struct names nm;
    struct batch b = {0};
    uint64_t evicted = 0, kept = 0;
    size_t i;
    int rc;

    if (!cb)
        return HD_ENOSUCHBUCKET;
    if ((rc = names_init(j, &nm)) < 0)
        goto out;
    if ((rc = batch_alloc(&b)) < 0)
        goto out;
    while (!nm.done && !hd_job_stopped(j)) {
        rc = nm.prefix ? next_local(j, &nm, &b) : next_enumerated(&nm, &b);
        if (rc < 0)
            break;
        for (i = 0; i < b.n && !hd_job_stopped(j); i++) {
            struct hd_obj_meta m;
            uint64_t size = b.sizes[i];
            if (!nm.prefix) { /* a name from a list: evicted only if held */
                if (hd_store_lookup(jc(j)->st, j->bucket, b.v[i], &m) < 0)
                    continue;
                size = m.size;
                hd_obj_meta_cleanup(&m);
            }
            rc = hd_store_evict(jc(j)->st, j->bucket, b.v[i]);
            if (rc == HD_EPRECONDITION) { /* dirty: never evicted before the upstream has it */
                hd_job_set_extra(j, "dirty_kept", ++kept);
                rc = 0;
                continue;
            }
            if (rc == 0) {
                evicted++;
                hd_job_add(j, 1, size);
                hd_cstat_add(HD_CS_EVICTED, 1);
                hd_cstat_add(HD_CS_EVICTED_BYTES, size);
            } else if (rc != HD_ENOSUCHKEY) {
                hd_job_error(j, "%s: %s", b.v[i], hd_strerror(rc));
            }
            rc = 0;
        }
        batch_clear(&b);
    }
    hd_job_set_extra(j, "evicted", evicted);
    if (rc == 0 && hd_job_stopped(j))
        rc = -ECANCELED;
out:
    batch_free(&b);
    names_cleanup(&nm);
    hd_cbucket_unref(cb);
    return rc;
}

/* ---- lru ---- */

static int lru_run(struct hd_job *j, void *ctx)
{
    char **buckets = NULL;
    size_t nb = 0, mpi;
    uint64_t objs = 0, bytes = 0;
    int low, high, rc = 0;

    hd_cache_space_marks(j->ctx, &low, &high);
    hd_store_atime_flush(jc(j)->st); /* the latest reads count */
    if ((rc = hd_cache_bucket_names(j->ctx, &buckets, &nb)) < 0)
        return rc;
    for (mpi = 0; mpi < hd_store_nmp(jc(j)->st) && rc == 0; mpi++)
        rc = hd_cache_evict_mp(j->ctx, j, mpi, (const char *const *)buckets, nb, low, high, 0,
                               &objs, &bytes);
    hd_job_set_extra(j, "evicted", objs);
    HD_LOG(HD_INFO, NULL, "lru %s: evicted %llu objects, %llu bytes", j->id,
           (unsigned long long)objs, (unsigned long long)bytes);
    hd_cache_names_free(buckets, nb);
    return rc;
}

int hd_cache_jobs_register(struct hd_cache *c)
{
    int rc;

    if ((rc = hd_jobs_register(c->js, "prefetch", prefetch_run, c, HD_JOB_RESUMABLE)) < 0 ||
        (rc = hd_jobs_register(c->js, "evict", evict_run, c, HD_JOB_RESUMABLE)) < 0 ||
        (rc = hd_jobs_register(c->js, "lru", lru_run, c, HD_JOB_EXCLUSIVE)) < 0)
        return rc;
    return 0;
}
