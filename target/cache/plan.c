/* plan: epoch plans, the order in which a training job will read a dataset (docs/caching.md,
 * "Epoch plans").
 *
 * A plan names a dataset of an S3-backed bucket (a prefix, listed from the upstream and
 * sorted, or a list of keys), a number of epochs, and per epoch a permutation of the dataset:
 * explicit, or generated from a seed (splitmix64 Fisher-Yates, below). This target keeps only
 * the objects it owns (HRW) with their global positions. It follows the reader by the GETs it
 * serves (hd_plans_observe) or an explicit cursor, and uses the plan for
 *   - prefetch: plan.workers threads fetch the upcoming owned objects in plan order, within a
 *     window ahead of the reader sized from its measured pace and the fetches' (window_of),
 *     at most plan.max_bps bytes/s (joining client GETs of the same object: single-flight
 *     through hd_cache_fetch_sync);
 *   - eviction by next use (hd_plans_next_use, for evict.c: Belady's MIN).
 * Plans are kept as their specs in DATA/plans/ID.json and rebuilt after a restart (progress
 * starts again from the reads that follow). A plan that sees no read for plan.idle_expire_s
 * is dropped.
 *
 * Threads: any thread; the plans are guarded by one mutex (hd_plans_add resolves the dataset
 * without it, on a pool thread: it may list the upstream). */
#include "target/cache/int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <xxhash.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/hrw.h"
#include "common/httputil.h"
#include "common/log.h"
#include "common/smap.h"

#define MAX_KEYS 20000000u
#define MAX_EPOCHS 1000000u
#define MAX_ORDER_ENTRIES 50000000u
#define NONE UINT32_MAX
#define OPEN_SHARDS 16 /* shard plans: reads of these shards are member reads */
#define LIST_PAGE 1000

enum { PF_NONE, PF_BUSY, PF_HELD, PF_FAILED };

/* One epoch's positions of the owned objects. */
struct eslot {
    uint32_t epoch; /* NONE: empty */
    uint64_t *pos;  /* by owned index: global position in that epoch */
    uint32_t *ord;  /* owned indices by position */
};

struct plan {
    char id[49];
    char bucket[64];
    json_t *spec; /* as registered (persisted) */
    uint32_t epochs;
    uint64_t total; /* dataset size: positions per epoch */
    int seeded;
    int prefetch; /* 0: the plan only ranks evictions */
    uint64_t seed;
    uint32_t norder; /* explicit: epochs given (cycled) */
    uint32_t *xpos;  /* explicit: [e * nown + i] position of owned i in order e */
    uint32_t nown;   /* objects of the dataset this target owns */
    char **keys;     /* by owned index */
    uint64_t *gidx;  /* dataset index of each owned object */
    uint32_t *htab;  /* key -> owned index (open addressing), hmask + 1 slots */
    size_t hmask;
    struct eslot slot[2];

    /* progress */
    uint32_t epoch; /* the reader's epoch; == epochs: finished */
    int64_t cursor; /* furthest position read in it (-1: none) */
    uint32_t nread; /* owned objects read in this epoch */
    uint32_t *last; /* by owned index: the epoch it was last read in (NONE: never) */
    uint8_t *pf;    /* by owned index: PF_* */
    uint8_t *by_pf; /* by owned index: held because we prefetched it, not read since */
    uint64_t last_read_ms;
    uint64_t rd_last_ns;        /* the reader's last step (a position read for the first time) */
    double rd_ival_s;           /* mean time between steps (EWMA; 0: not measured yet) */
    uint32_t open[OPEN_SHARDS]; /* shard plans: the shards started last (NONE: empty) */
    unsigned nopen;             /* next slot of open (a ring) */
    int shards;                 /* the objects are tar shards read member by member */

    /* metrics */
    uint64_t hits, misses, pf_objs, pf_bytes, wasted, wasted_bytes;
    struct plan *next;
};

struct hd_plans {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* the reader moved, a plan came or went, stop */
    struct plan *list;
    atomic_size_t n; /* plans in list (read without mu by the GET path) */
    char dir[4096];
    hd_plans_fetch_fn fetch;
    int window, window_max, workers;
    double fetch_s; /* a prefetch worker's time per fetched object, throttle included (EWMA) */
    uint64_t max_bps;
    long idle_s;
    pthread_t *th;
    int nth;
    int stopping;
    uint64_t bw_t0_ns, bw_bytes; /* bandwidth budget since bw_t0 */
};

/* ---- the generator (documented in docs/caching.md; docs/examples/hoard_plan.py) ---- */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* perm[p] = dataset index read at position p of epoch e. */
static void permute(uint64_t seed, uint32_t e, uint32_t *perm, uint64_t n)
{
    uint64_t s = seed ^ ((uint64_t)e * 0xd1b54a32d192ed03ull), i;

    for (i = 0; i < n; i++)
        perm[i] = (uint32_t)i;
    for (i = n; i > 1; i--) {
        uint64_t j = splitmix64(&s) % i, t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = (uint32_t)t;
    }
}

/* ---- a plan's tables ---- */

static size_t hslot(const struct plan *pl, const char *key)
{
    return (size_t)XXH64(key, strlen(key), 0x706c616eull) & pl->hmask;
}

static uint32_t owned_index(const struct plan *pl, const char *key)
{
    size_t h;

    if (!pl->htab)
        return NONE;
    for (h = hslot(pl, key); pl->htab[h] != NONE; h = (h + 1) & pl->hmask)
        if (strcmp(pl->keys[pl->htab[h]], key) == 0)
            return pl->htab[h];
    return NONE;
}

static void plan_free(struct plan *pl)
{
    uint32_t i;

    if (!pl)
        return;
    for (i = 0; pl->keys && i < pl->nown; i++)
        free(pl->keys[i]);
    free(pl->keys);
    free(pl->gidx);
    free(pl->htab);
    free(pl->xpos);
    free(pl->last);
    free(pl->pf);
    free(pl->by_pf);
    for (i = 0; i < 2; i++) {
        free(pl->slot[i].pos);
        free(pl->slot[i].ord);
    }
    json_decref(pl->spec);
    free(pl);
}

static const uint64_t *sort_pos; /* qsort context, under the plans' mutex */

static int by_pos(const void *a, const void *b)
{
    uint64_t x = sort_pos[*(const uint32_t *)a], y = sort_pos[*(const uint32_t *)b];

    return x < y ? -1 : x > y;
}

/* The positions of epoch e (computed on first use; two epochs are kept). NULL: no memory. */
static struct eslot *slot_of(struct plan *pl, uint32_t e)
{
    struct eslot *s;
    uint32_t *perm = NULL, *inv = NULL, i;

    for (i = 0; i < 2; i++)
        if (pl->slot[i].epoch == e)
            return &pl->slot[i];
    /* replace the slot not holding the reader's epoch */
    s = &pl->slot[pl->slot[0].epoch == pl->epoch ? 1 : 0];
    s->epoch = NONE;
    if (!s->pos && !(s->pos = calloc(pl->nown ? pl->nown : 1, sizeof(*s->pos))))
        return NULL;
    if (!s->ord && !(s->ord = calloc(pl->nown ? pl->nown : 1, sizeof(*s->ord))))
        return NULL;
    if (pl->seeded) {
        perm = malloc(pl->total * sizeof(*perm));
        inv = malloc(pl->total * sizeof(*inv));
        if (!perm || !inv) {
            free(perm);
            free(inv);
            return NULL;
        }
        permute(pl->seed, e, perm, pl->total);
        for (i = 0; i < pl->total; i++)
            inv[perm[i]] = i;
        for (i = 0; i < pl->nown; i++)
            s->pos[i] = inv[pl->gidx[i]];
        free(perm);
        free(inv);
    } else {
        const uint32_t *x = pl->xpos + (size_t)(e % pl->norder) * pl->nown;
        for (i = 0; i < pl->nown; i++)
            s->pos[i] = x[i];
    }
    for (i = 0; i < pl->nown; i++)
        s->ord[i] = i;
    sort_pos = s->pos;
    qsort(s->ord, pl->nown, sizeof(*s->ord), by_pos);
    s->epoch = e;
    return s;
}

/* ---- building a plan from its spec (no lock held: may list the upstream) ---- */

struct dataset {
    char **keys;
    size_t n, cap;
};

static void dataset_cleanup(struct dataset *d)
{
    size_t i;

    for (i = 0; i < d->n; i++)
        free(d->keys[i]);
    free(d->keys);
}

static int dataset_add(struct dataset *d, const char *k)
{
    if (d->n == d->cap) {
        size_t nc = d->cap ? d->cap * 2 : 1024;
        char **v = realloc(d->keys, nc * sizeof(*v));
        if (!v)
            return -ENOMEM;
        d->keys = v;
        d->cap = nc;
    }
    if (!(d->keys[d->n] = strdup(k)))
        return -ENOMEM;
    d->n++;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int list_prefix(struct hd_cbucket *cb, const char *prefix, struct dataset *d, char *msg,
                       size_t msglen)
{
    char *after = NULL, *token = NULL;
    int rc = 0;

    for (;;) {
        struct hd_s3_list l;
        struct hd_s3c_err err;
        size_t i;
        memset(&err, 0, sizeof(err));
        if ((rc = hd_cbucket_check(cb, msg, msglen)) < 0)
            break;
        if ((rc = hd_s3c_list(&cb->s3, cb->remote, prefix, NULL, after, token, LIST_PAGE, &l,
                              &err)) < 0) {
            snprintf(msg, msglen, "Listing %s/%s upstream: %s", cb->name, prefix, err.msg);
            break;
        }
        for (i = 0; i < l.nents && rc == 0; i++)
            rc = dataset_add(d, l.ents[i].name);
        free(token);
        token = l.next_token;
        l.next_token = NULL;
        if (l.nents) {
            free(after);
            after = strdup(l.ents[l.nents - 1].name);
        }
        int done = !l.truncated || (!token && !l.nents);
        hd_s3_list_cleanup(&l);
        if (rc < 0 || done)
            break;
        if (d->n > MAX_KEYS) {
            snprintf(msg, msglen, "The dataset has more than %u objects.", MAX_KEYS);
            rc = HD_EBADARG;
            break;
        }
    }
    free(after);
    free(token);
    if (rc == 0 && d->n)
        qsort(d->keys, d->n, sizeof(*d->keys), cmp_str); /* byte order, as S3 lists */
    return rc;
}

#define BAD(...)                                                                                   \
    do {                                                                                           \
        snprintf(msg, msglen, __VA_ARGS__);                                                        \
        rc = HD_EBADARG;                                                                           \
        goto out;                                                                                  \
    } while (0)

/* Checks an explicit order: a list of epochs, each a permutation of 0..n-1. Fills pl->xpos
 * for the owned indices (own_of: dataset index -> owned index or NONE). */
static int load_order(struct plan *pl, json_t *order, const uint32_t *own_of, char *msg,
                      size_t msglen)
{
    uint8_t *seen = NULL;
    size_t e, p;
    int rc = 0;

    if (!json_is_array(order) || json_array_size(order) == 0)
        BAD("\"order\" must be a non-empty list of epochs, each a list of dataset indices.");
    if (json_array_size(order) > pl->epochs)
        BAD("\"order\" has %zu epochs, the plan %u.", json_array_size(order), pl->epochs);
    if ((uint64_t)json_array_size(order) * pl->total > MAX_ORDER_ENTRIES)
        BAD("\"order\" is too large (at most %u positions in all); use a seed.", MAX_ORDER_ENTRIES);
    pl->norder = (uint32_t)json_array_size(order);
    pl->xpos = calloc((size_t)pl->norder * (pl->nown ? pl->nown : 1), sizeof(*pl->xpos));
    seen = calloc(pl->total ? pl->total : 1, 1);
    if (!pl->xpos || !seen) {
        rc = -ENOMEM;
        goto out;
    }
    for (e = 0; e < pl->norder; e++) {
        json_t *ep = json_array_get(order, e);
        if (!json_is_array(ep) || json_array_size(ep) != pl->total)
            BAD("order[%zu] must list each of the %llu dataset indices once.", e,
                (unsigned long long)pl->total);
        memset(seen, 0, pl->total);
        for (p = 0; p < pl->total; p++) {
            json_t *v = json_array_get(ep, p);
            json_int_t x = json_integer_value(v);
            if (!json_is_integer(v) || x < 0 || (uint64_t)x >= pl->total || seen[x])
                BAD("order[%zu][%zu] is not a dataset index (0..%llu) unused in that epoch.", e, p,
                    (unsigned long long)pl->total - 1);
            seen[x] = 1;
            if (own_of[x] != NONE)
                pl->xpos[e * pl->nown + own_of[x]] = (uint32_t)p;
        }
    }
out:
    free(seen);
    return rc;
}

/* Builds a plan from spec (validated here; msg says what is wrong). */
static int plan_build(struct hd_cache *c, json_t *spec, struct plan **out, char *msg, size_t msglen)
{
    const char *id = json_string_value(json_object_get(spec, "id"));
    const char *bucket = json_string_value(json_object_get(spec, "bucket"));
    json_t *prefix = json_object_get(spec, "prefix"), *keys = json_object_get(spec, "keys");
    json_t *epochs = json_object_get(spec, "epochs"), *seed = json_object_get(spec, "seed");
    json_t *order = json_object_get(spec, "order"), *pf = json_object_get(spec, "prefetch");
    json_t *shards = json_object_get(spec, "shards");
    struct hd_cbucket *cb = NULL;
    struct hd_smap *s = NULL;
    struct dataset d = {0};
    uint32_t *own_of = NULL;
    struct plan *pl = NULL;
    size_t i;
    int rc = 0;

    *out = NULL;
    if (!json_is_object(spec))
        BAD("A plan is a JSON object.");
    if (hd_id_check(id) < 0)
        BAD("A plan id is 1-48 characters of A-Z a-z 0-9 . _ -");
    if (!bucket || hd_bucket_name_check(bucket) < 0)
        BAD("\"bucket\" must name an S3-backed bucket.");
    if (!(cb = hd_cache_bucket(c, bucket)))
        BAD("Bucket %s is not an S3-backed bucket of this cluster.", bucket);
    if ((prefix != NULL) == (keys != NULL))
        BAD("Give the dataset as one of \"prefix\" or \"keys\".");
    if (!json_is_integer(epochs) || json_integer_value(epochs) < 1 ||
        json_integer_value(epochs) > MAX_EPOCHS)
        BAD("\"epochs\" must be an integer from 1 to %u.", MAX_EPOCHS);
    if ((seed != NULL) == (order != NULL))
        BAD("Give the order as one of \"seed\" or \"order\".");
    if (seed && (!json_is_integer(seed) || json_integer_value(seed) < 0))
        BAD("\"seed\" must be a non-negative integer (below 2^63).");
    if (pf && !json_is_boolean(pf))
        BAD("\"prefetch\" must be true or false.");
    if (shards && !json_is_boolean(shards))
        BAD("\"shards\" must be true or false.");
    if (prefix) {
        if (!json_is_string(prefix))
            BAD("\"prefix\" must be a string.");
        if ((rc = list_prefix(cb, json_string_value(prefix), &d, msg, msglen)) < 0)
            goto out;
    } else {
        if (!json_is_array(keys))
            BAD("\"keys\" must be a list of object names.");
        if (json_array_size(keys) > MAX_KEYS)
            BAD("\"keys\" has more than %u names.", MAX_KEYS);
        for (i = 0; i < json_array_size(keys); i++) {
            const char *k = json_string_value(json_array_get(keys, i));
            if (!k || hd_object_name_check(k, strlen(k)) < 0)
                BAD("keys[%zu] is not a valid object name.", i);
            if ((rc = dataset_add(&d, k)) < 0)
                goto out;
        }
    }
    if (d.n == 0)
        BAD("The dataset is empty: no object under that prefix upstream.");
    if (d.n > MAX_KEYS)
        BAD("The dataset has more than %u objects.", MAX_KEYS);
    pl = calloc(1, sizeof(*pl));
    own_of = malloc(d.n * sizeof(*own_of));
    if (!pl || !own_of) {
        rc = -ENOMEM;
        goto out;
    }
    snprintf(pl->id, sizeof(pl->id), "%s", id);
    snprintf(pl->bucket, sizeof(pl->bucket), "%s", bucket);
    pl->epochs = (uint32_t)json_integer_value(epochs);
    pl->total = d.n;
    pl->seeded = seed != NULL;
    pl->prefetch = !pf || json_is_true(pf);
    pl->shards = json_is_true(shards);
    memset(pl->open, 0xff, sizeof(pl->open));
    pl->seed = seed ? (uint64_t)json_integer_value(seed) : 0;
    pl->cursor = -1;
    pl->slot[0].epoch = pl->slot[1].epoch = NONE;
    pl->last_read_ms = (uint64_t)time(NULL) * 1000;
    s = hd_tcluster_smap(c->cl);
    for (i = 0; i < d.n; i++) {
        own_of[i] = NONE;
        if (hd_tcluster_owns(c->cl, s, "aws", bucket, d.keys[i]))
            own_of[i] = pl->nown++;
    }
    pl->keys = calloc(pl->nown ? pl->nown : 1, sizeof(*pl->keys));
    pl->gidx = calloc(pl->nown ? pl->nown : 1, sizeof(*pl->gidx));
    pl->last = malloc((pl->nown ? pl->nown : 1) * sizeof(*pl->last));
    pl->pf = calloc(pl->nown ? pl->nown : 1, 1);
    pl->by_pf = calloc(pl->nown ? pl->nown : 1, 1);
    for (pl->hmask = 1; pl->hmask < 2 * (size_t)pl->nown; pl->hmask <<= 1)
        ;
    pl->htab = malloc(pl->hmask * sizeof(*pl->htab));
    pl->hmask--;
    if (!pl->keys || !pl->gidx || !pl->last || !pl->pf || !pl->by_pf || !pl->htab) {
        rc = -ENOMEM;
        goto out;
    }
    memset(pl->htab, 0xff, (pl->hmask + 1) * sizeof(*pl->htab));
    for (i = 0; i < d.n; i++) {
        uint32_t o = own_of[i];
        size_t h;
        if (o == NONE)
            continue;
        pl->keys[o] = d.keys[i]; /* taken */
        d.keys[i] = NULL;
        pl->gidx[o] = i;
        pl->last[o] = NONE;
        for (h = hslot(pl, pl->keys[o]); pl->htab[h] != NONE; h = (h + 1) & pl->hmask)
            if (strcmp(pl->keys[pl->htab[h]], pl->keys[o]) == 0)
                BAD("The dataset names %s twice.", pl->keys[o]);
        pl->htab[h] = o;
    }
    if (order && (rc = load_order(pl, order, own_of, msg, msglen)) < 0)
        goto out;
    pl->spec = json_incref(spec);
    *out = pl;
    pl = NULL;
out:
    dataset_cleanup(&d);
    free(own_of);
    plan_free(pl);
    hd_smap_unref(s);
    hd_cbucket_unref(cb);
    return rc;
}

#undef BAD

/* ---- the registry ---- */

static struct plan *find(struct hd_plans *ps, const char *id)
{
    struct plan *pl;

    for (pl = ps->list; pl; pl = pl->next)
        if (strcmp(pl->id, id) == 0)
            return pl;
    return NULL;
}

static void spec_path(struct hd_plans *ps, const char *id, char *out, size_t n)
{
    char hex[17];

    /* ids are free text without '/': the file name is a hash, the id is inside */
    snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)XXH64(id, strlen(id), 0));
    snprintf(out, n, "%s/%s.json", ps->dir, hex);
}

static void save(struct hd_plans *ps, struct plan *pl)
{
    char path[4200], tmp[4300];

    if (!ps->dir[0])
        return;
    mkdir(ps->dir, 0755);
    spec_path(ps, pl->id, path, sizeof(path));
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    if (json_dump_file(pl->spec, tmp, JSON_COMPACT) < 0 || rename(tmp, path) < 0) {
        HD_LOG(HD_WARN, NULL, "plan %s: cannot save %s: %s", pl->id, path, strerror(errno));
        unlink(tmp);
    }
}

static void unsave(struct hd_plans *ps, const char *id)
{
    char path[4200];

    if (!ps->dir[0])
        return;
    spec_path(ps, id, path, sizeof(path));
    unlink(path);
}

static void unlink_plan(struct hd_plans *ps, struct plan *pl)
{
    struct plan **pp;

    for (pp = &ps->list; *pp; pp = &(*pp)->next)
        if (*pp == pl) {
            *pp = pl->next;
            ps->n--;
            return;
        }
}

/* The reader's place: epoch, last position read (-1: none); everything up to it counts as
 * read in that epoch (ps->mu held; checked by the caller). */
static void set_cursor(struct plan *pl, uint32_t epoch, int64_t position)
{
    struct eslot *s = epoch < pl->epochs ? slot_of(pl, epoch) : NULL;
    uint32_t i;

    pl->epoch = epoch;
    pl->cursor = position;
    pl->nread = 0;
    memset(pl->open, 0xff, sizeof(pl->open)); /* the reader starts over: no shard open */
    for (i = 0; i < pl->nown; i++) {
        pl->last[i] = s && (int64_t)s->pos[i] <= position ? epoch : NONE;
        pl->nread += pl->last[i] == epoch;
        if (pl->pf[i] == PF_FAILED)
            pl->pf[i] = PF_NONE;
    }
    pl->last_read_ms = (uint64_t)time(NULL) * 1000;
}

/* A re-split plan (hd_plans_split) goes on where the reader is. */
struct carry {
    uint32_t epoch;
    int64_t cursor;
};

/* Adds pl, replacing a plan of the same id; with k (a re-split), pl keeps the old one's
 * counters and starts at k's place. */
static int add_built(struct hd_cache *c, struct plan *pl, int persist, const struct carry *k)
{
    struct hd_plans *ps = c->plans;
    struct plan *old;

    pthread_mutex_lock(&ps->mu);
    old = find(ps, pl->id);
    if (k) {
        if (old) {
            pl->hits = old->hits;
            pl->misses = old->misses;
            pl->pf_objs = old->pf_objs;
            pl->pf_bytes = old->pf_bytes;
            pl->wasted = old->wasted;
            pl->wasted_bytes = old->wasted_bytes;
        }
        set_cursor(pl, k->epoch > pl->epochs ? pl->epochs : k->epoch,
                   k->cursor < -1 || (uint64_t)(k->cursor + 1) > pl->total ? -1 : k->cursor);
    }
    if (old) { /* registered again: the new spec wins */
        unlink_plan(ps, old);
        plan_free(old);
    }
    pl->next = ps->list;
    ps->list = pl;
    ps->n++;
    if (persist)
        save(ps, pl);
    pthread_cond_broadcast(&ps->cv);
    pthread_mutex_unlock(&ps->mu);
    return 0;
}

int hd_plans_add(struct hd_cache *c, json_t *spec, json_t **out, char *msg, size_t msglen)
{
    struct plan *pl;
    int rc;

    msg[0] = '\0';
    *out = NULL;
    if ((rc = plan_build(c, spec, &pl, msg, msglen)) < 0)
        return rc;
    *out = json_pack("{s:s, s:I, s:I, s:I}", "id", pl->id, "total", (json_int_t)pl->total, "owned",
                     (json_int_t)pl->nown, "epochs", (json_int_t)pl->epochs);
    HD_LOG(HD_INFO, NULL, "plan %s: %s, %llu objects (%u here), %u epochs", pl->id, pl->bucket,
           (unsigned long long)pl->total, pl->nown, pl->epochs);
    return add_built(c, pl, 1, NULL);
}

/* The version of this target's cluster map (-1: none, 0 standalone). */
static int64_t smap_version(struct hd_cache *c)
{
    struct hd_smap *s = hd_tcluster_smap(c->cl);
    int64_t v = s ? s->version : -1;

    hd_smap_unref(s);
    return v;
}

int hd_plans_split(struct hd_cache *c, json_t *spec, uint32_t epoch, int64_t cursor,
                   int64_t smap_ver, json_t **out, char *msg, size_t msglen)
{
    struct carry k = {epoch, cursor};
    struct timespec ts = {0, 50 * 1000000L};
    struct plan *pl;
    int waited, rc;

    msg[0] = '\0';
    *out = NULL;
    /* the proxy asks once it pushed the new map: it may not have arrived here yet */
    for (waited = 0; smap_version(c) < smap_ver && waited < 10000; waited += 50)
        nanosleep(&ts, NULL);
    if (smap_version(c) < smap_ver) {
        snprintf(msg, msglen, "This target has not received cluster map v%lld yet.",
                 (long long)smap_ver);
        return HD_EUNAVAIL;
    }
    if ((rc = plan_build(c, spec, &pl, msg, msglen)) < 0)
        return rc;
    *out = json_pack("{s:s, s:I, s:I, s:I}", "id", pl->id, "total", (json_int_t)pl->total, "owned",
                     (json_int_t)pl->nown, "epochs", (json_int_t)pl->epochs);
    HD_LOG(HD_INFO, NULL, "plan %s: split again for map v%lld: %u of %llu objects here", pl->id,
           (long long)smap_ver, pl->nown, (unsigned long long)pl->total);
    return add_built(c, pl, 1, &k);
}

int hd_plans_delete(struct hd_cache *c, const char *id)
{
    struct hd_plans *ps = c->plans;
    struct plan *pl;

    pthread_mutex_lock(&ps->mu);
    pl = find(ps, id);
    if (pl) {
        unlink_plan(ps, pl);
        unsave(ps, id);
    }
    pthread_mutex_unlock(&ps->mu);
    /* workers never hold a plan across an unlock: it can go now */
    plan_free(pl);
    return pl ? 0 : HD_ENOSUCHKEY;
}

/* The upcoming owned objects after the reader: (epoch, index in that epoch's ord) pairs
 * walked with next_up. */
struct walk {
    uint32_t e;
    size_t k;
    struct eslot *s;
};

static int walk_start(struct plan *pl, struct walk *w)
{
    size_t lo = 0, hi;

    if (pl->epoch >= pl->epochs || pl->nown == 0)
        return -1;
    w->e = pl->epoch;
    if (!(w->s = slot_of(pl, w->e)))
        return -1;
    hi = pl->nown;
    while (lo < hi) { /* first position after the cursor */
        size_t mid = (lo + hi) / 2;
        if ((int64_t)w->s->pos[w->s->ord[mid]] <= pl->cursor)
            lo = mid + 1;
        else
            hi = mid;
    }
    w->k = lo;
    return 0;
}

/* The next upcoming owned index, or NONE at the end of the plan. */
static uint32_t walk_next(struct plan *pl, struct walk *w)
{
    if (w->k >= pl->nown) {
        if (w->e + 1 >= pl->epochs || w->e != pl->epoch)
            return NONE; /* at most into the next epoch */
        w->e++;
        if (!(w->s = slot_of(pl, w->e)))
            return NONE;
        w->k = 0;
    }
    return w->s->ord[w->k++];
}

/* Prefetch lead: how many upcoming owned objects in a row are held. */
static uint32_t lead(struct plan *pl)
{
    struct walk w;
    uint32_t n = 0, i;

    if (walk_start(pl, &w) < 0)
        return 0;
    while ((i = walk_next(pl, &w)) != NONE && n < 100000 &&
           (pl->pf[i] == PF_HELD || (w.e == pl->epoch && pl->last[i] == pl->epoch)))
        n++;
    return n;
}

static uint64_t window_of(const struct hd_plans *ps, const struct plan *pl, uint64_t cap_bytes);
static uint64_t cache_bytes(struct hd_cache *c);
static double read_rate(const struct plan *pl, uint64_t now);

static json_t *view(const struct hd_plans *ps, struct plan *pl, int with_spec, uint64_t cap)
{
    json_t *j = json_pack("{s:s, s:s, s:I, s:I, s:I, s:b}", "id", pl->id, "bucket", pl->bucket,
                          "epochs", (json_int_t)pl->epochs, "total", (json_int_t)pl->total, "owned",
                          (json_int_t)pl->nown, "seeded", pl->seeded);
    if (j)
        json_object_set_new(j, "prefetch", json_boolean(pl->prefetch));
    if (j)
        json_object_set_new(j, "shards", json_boolean(pl->shards));

    if (!j)
        return NULL;
    json_object_set_new(j, "epoch", json_integer(pl->epoch));
    json_object_set_new(j, "cursor", json_integer(pl->cursor));
    json_object_set_new(j, "read_in_epoch", json_integer(pl->nread));
    json_object_set_new(j, "hits", json_integer((json_int_t)pl->hits));
    json_object_set_new(j, "misses", json_integer((json_int_t)pl->misses));
    json_object_set_new(j, "prefetched", json_integer((json_int_t)pl->pf_objs));
    json_object_set_new(j, "prefetched_bytes", json_integer((json_int_t)pl->pf_bytes));
    json_object_set_new(j, "wasted", json_integer((json_int_t)pl->wasted));
    json_object_set_new(j, "wasted_bytes", json_integer((json_int_t)pl->wasted_bytes));
    json_object_set_new(j, "lead", json_integer(lead(pl)));
    json_object_set_new(j, "idle_ms",
                        json_integer((json_int_t)((uint64_t)time(NULL) * 1000 - pl->last_read_ms)));
    json_object_set_new(j, "window",
                        json_integer(pl->prefetch && pl->epoch < pl->epochs
                                         ? (json_int_t)window_of(ps, pl, cap)
                                         : 0));
    json_object_set_new(j, "read_rate", json_real(read_rate(pl, hd_now_ns())));
    json_object_set_new(j, "fetch_s", json_real(ps->fetch_s));
    if (with_spec)
        json_object_set(j, "spec", pl->spec);
    return j;
}

json_t *hd_plans_view(struct hd_cache *c, const char *id, int with_spec)
{
    struct hd_plans *ps = c->plans;
    uint64_t cap = cache_bytes(c);
    struct plan *pl;
    json_t *out = NULL;

    pthread_mutex_lock(&ps->mu);
    if (id) {
        if ((pl = find(ps, id)) != NULL)
            out = view(ps, pl, with_spec, cap);
    } else {
        json_t *a = json_array();
        for (pl = ps->list; pl && a; pl = pl->next)
            json_array_append_new(a, view(ps, pl, with_spec, cap));
        out = a ? json_pack("{s:o}", "plans", a) : NULL;
    }
    pthread_mutex_unlock(&ps->mu);
    return out;
}

/* ---- progress ---- */

static void advance_epoch(struct plan *pl)
{
    uint32_t i;

    pl->epoch++;
    pl->cursor = -1;
    pl->nread = 0;
    for (i = 0; i < pl->nown; i++)
        if (pl->pf[i] == PF_FAILED)
            pl->pf[i] = PF_NONE;
}

#define EWMA 0.2 /* weight of a new sample in the measured means */

/* The reader read a position for the first time: its pace (ps->mu held). */
static void step(struct plan *pl)
{
    uint64_t now = hd_now_ns();

    if (pl->rd_last_ns) {
        double dt = (double)(now - pl->rd_last_ns) / 1e9;
        pl->rd_ival_s = pl->rd_ival_s > 0 ? (1 - EWMA) * pl->rd_ival_s + EWMA * dt : dt;
    }
    pl->rd_last_ns = now;
}

/* The reader's pace, objects/s of this target (0: not measured). A pause does not shrink
 * it: a reader that stops for a while (evaluation between epochs) comes back at its pace, and
 * the prefetch may use the pause to fill the window. */
static double read_rate(const struct plan *pl, uint64_t now)
{
    (void)now;
    return pl->rd_ival_s > 0 ? 1 / pl->rd_ival_s : 0;
}

/* Shard plans: 1 when shard i is among the ones started last (being read member by member). */
static int is_open(const struct plan *pl, uint32_t i)
{
    unsigned k;

    for (k = 0; pl->shards && k < OPEN_SHARDS; k++)
        if (pl->open[k] == i)
            return 1;
    return 0;
}

/* A read of owned object i (ps->mu held). */
static void observe(struct plan *pl, uint32_t i, int hit)
{
    struct eslot *s;

    pl->last_read_ms = (uint64_t)time(NULL) * 1000;
    if (hit)
        pl->hits++;
    else
        pl->misses++;
    pl->by_pf[i] = 0;
    if (pl->epoch >= pl->epochs)
        return; /* finished: reads count, the order no longer says anything */
    if (is_open(pl, i))
        return; /* another member of a shard being read: the reader is where it was */
    if (pl->shards) {
        pl->open[pl->nopen] = i;
        pl->nopen = (pl->nopen + 1) % OPEN_SHARDS;
    }
    if (pl->last[i] == pl->epoch) {
        /* read again in this epoch: the reader is in the next one when it had read at least
         * half of this one (else a re-read, e.g. a retry) */
        if (pl->nread * 2 < pl->nown)
            return;
        advance_epoch(pl);
        if (pl->epoch >= pl->epochs)
            return;
    }
    if (!(s = slot_of(pl, pl->epoch)))
        return;
    pl->last[i] = pl->epoch;
    pl->nread++;
    step(pl);
    if ((int64_t)s->pos[i] > pl->cursor)
        pl->cursor = (int64_t)s->pos[i];
    if (pl->nread == pl->nown)
        advance_epoch(pl); /* all of ours read: the next epoch begins */
}

void hd_plans_observe(struct hd_cache *c, const char *bucket, const char *key, int hit,
                      const char *tag)
{
    struct hd_plans *ps = c->plans;
    struct plan *pl;
    int moved = 0;

    if (!ps || !ps->n) /* racy read: a plan registered this instant misses one read */
        return;
    pthread_mutex_lock(&ps->mu);
    for (pl = ps->list; pl; pl = pl->next) {
        uint32_t i;
        if ((tag && strcmp(pl->id, tag) != 0) || strcmp(pl->bucket, bucket) != 0 ||
            (i = owned_index(pl, key)) == NONE)
            continue;
        observe(pl, i, hit);
        moved = 1;
    }
    if (moved)
        pthread_cond_broadcast(&ps->cv);
    pthread_mutex_unlock(&ps->mu);
}

int hd_plans_cursor(struct hd_cache *c, const char *id, uint32_t epoch, int64_t position)
{
    struct hd_plans *ps = c->plans;
    struct plan *pl;
    int rc = 0;

    pthread_mutex_lock(&ps->mu);
    if (!(pl = find(ps, id))) {
        rc = HD_ENOSUCHKEY;
    } else if (epoch > pl->epochs || position < -1 || (uint64_t)position >= pl->total) {
        rc = HD_EBADARG;
    } else {
        set_cursor(pl, epoch, position);
        pthread_cond_broadcast(&ps->cv);
    }
    pthread_mutex_unlock(&ps->mu);
    return rc;
}

/* ---- next use, for eviction ---- */

int hd_plans_live(struct hd_cache *c)
{
    return c->plans && c->plans->n > 0;
}

uint64_t hd_plans_next_use(struct hd_cache *c, const char *bucket, const char *key)
{
    struct hd_plans *ps = c->plans;
    struct plan *pl;
    uint64_t best = HD_PLAN_NEVER;

    pthread_mutex_lock(&ps->mu);
    for (pl = ps->list; pl; pl = pl->next) {
        uint32_t i;
        struct eslot *s;
        uint64_t d, cur;
        if (strcmp(pl->bucket, bucket) != 0 || (i = owned_index(pl, key)) == NONE)
            continue;
        if (pl->epoch >= pl->epochs || !(s = slot_of(pl, pl->epoch)))
            continue;
        if (is_open(pl, i)) {
            best = 0; /* a shard being read member by member: in use now */
            break;
        }
        cur = pl->cursor < 0 ? 0 : (uint64_t)pl->cursor;
        if (pl->last[i] != pl->epoch) { /* still to be read in this epoch */
            d = s->pos[i] > cur ? s->pos[i] - cur : 0;
        } else if (pl->epoch + 1 < pl->epochs && (s = slot_of(pl, pl->epoch + 1)) != NULL) {
            d = pl->total - cur + s->pos[i];
        } else {
            continue; /* read for the last time */
        }
        if (d < best)
            best = d;
    }
    pthread_mutex_unlock(&ps->mu);
    return best;
}

void hd_plans_evicted(struct hd_cache *c, const char *bucket, const char *key, uint64_t size)
{
    struct hd_plans *ps = c->plans;
    struct plan *pl;

    if (!ps || !ps->n)
        return;
    pthread_mutex_lock(&ps->mu);
    for (pl = ps->list; pl; pl = pl->next) {
        uint32_t i;
        if (strcmp(pl->bucket, bucket) != 0 || (i = owned_index(pl, key)) == NONE)
            continue;
        if (pl->by_pf[i]) { /* prefetched and dropped before anyone read it */
            pl->wasted++;
            pl->wasted_bytes += size;
            pl->by_pf[i] = 0;
        }
        if (pl->pf[i] == PF_HELD)
            pl->pf[i] = PF_NONE;
    }
    pthread_mutex_unlock(&ps->mu);
}

/* ---- prefetch workers ---- */

/* The look-ahead of pl in objects (ps->mu held; docs/caching.md, "Prefetch"). While a worker
 * fetches one object (fetch_s, throttle included) the reader takes rate * fetch_s more: the
 * window is twice that plus the objects in flight (one per worker),
 *     need = ceil(2 * rate * fetch_s) + workers,
 * kept within plan.window .. plan.window_max (plan.window until both are measured), and at
 * most half of what the cache holds at its low mark (cap_bytes, 0: unknown) in objects of the
 * plan's average size so far. */
static uint64_t window_of(const struct hd_plans *ps, const struct plan *pl, uint64_t cap_bytes)
{
    uint64_t avg = pl->pf_objs ? pl->pf_bytes / pl->pf_objs : 0, win = (uint64_t)ps->window;
    double rate = read_rate(pl, hd_now_ns());

    if (rate > 0 && ps->fetch_s > 0) {
        double need = ceil(2 * rate * ps->fetch_s) + ps->workers;
        if (need > (double)ps->window_max)
            win = (uint64_t)ps->window_max;
        else if (need > (double)win)
            win = (uint64_t)need;
    }

    if (cap_bytes && avg && cap_bytes / 2 / avg < win)
        win = cap_bytes / 2 / avg > 0 ? cap_bytes / 2 / avg : 1;
    return win;
}

/* The next object to prefetch (ps->mu held): marks it busy and copies its names. The window
 * is plan.window objects, and at most half of what the cache holds at its low mark
 * (cap_bytes) in objects of the plan's average size so far: a look-ahead larger than the
 * cache would evict what it fetched before the reader gets there. */
static int pick(struct hd_plans *ps, uint64_t cap_bytes, char *id, char *bucket, char **key)
{
    struct plan *pl;

    for (pl = ps->list; pl; pl = pl->next) {
        struct walk w;
        uint64_t win = window_of(ps, pl, cap_bytes);
        uint32_t i;
        uint64_t n = 0;
        if (!pl->prefetch || pl->epoch >= pl->epochs || walk_start(pl, &w) < 0)
            continue;
        while (n++ < win && (i = walk_next(pl, &w)) != NONE) {
            if (w.e == pl->epoch && pl->last[i] == pl->epoch)
                continue; /* read already in this epoch */
            if (pl->pf[i] != PF_NONE)
                continue;
            if (!(*key = strdup(pl->keys[i])))
                return 0;
            pl->pf[i] = PF_BUSY;
            snprintf(id, 49, "%s", pl->id);
            snprintf(bucket, 64, "%s", pl->bucket);
            return 1;
        }
    }
    return 0;
}

static void done_one(struct hd_plans *ps, const char *id, const char *key, int held, uint64_t bytes)
{
    struct plan *pl = find(ps, id);
    uint32_t i;

    if (!pl || (i = owned_index(pl, key)) == NONE)
        return; /* deleted meanwhile */
    pl->pf[i] = held ? PF_HELD : PF_FAILED;
    if (bytes) {
        pl->pf_objs++;
        pl->pf_bytes += bytes;
        pl->by_pf[i] = held;
    }
}

static void throttle(struct hd_plans *ps, uint64_t bytes)
{
    uint64_t now, due;

    if (!ps->max_bps || !bytes)
        return;
    pthread_mutex_lock(&ps->mu);
    now = hd_now_ns();
    if (!ps->bw_t0_ns || now - ps->bw_t0_ns > 10000000000ull) {
        ps->bw_t0_ns = now;
        ps->bw_bytes = 0;
    }
    ps->bw_bytes += bytes;
    due = ps->bw_t0_ns + ps->bw_bytes * 1000000000ull / ps->max_bps;
    pthread_mutex_unlock(&ps->mu);
    if (due > now) {
        struct timespec ts = {(time_t)((due - now) / 1000000000ull),
                              (long)((due - now) % 1000000000ull)};
        nanosleep(&ts, NULL);
    }
}

/* What the cache holds at its low mark, all mountpaths (0: no capacity known). */
static uint64_t cache_bytes(struct hd_cache *c)
{
    uint64_t sum = 0;
    size_t i;
    int low, high;

    hd_cache_space_marks(c, &low, &high);
    for (i = 0; i < hd_store_nmp(c->st); i++) {
        struct hd_mp_usage u;
        if (hd_store_mp_usage(c->st, i, &u) == 0)
            sum += (uint64_t)((double)u.capacity * low / 100.0);
    }
    return sum;
}

/* ---- /metrics: per-plan series (setup.c's renderer calls this) ---- */

#define RENDER_MAX 64 /* plans with series of their own: bounded cardinality */

struct pseries {
    char id[49], bucket[64];
    uint64_t v[12];
    double ratio;
};

enum {
    PS_HITS,
    PS_MISSES,
    PS_PF,
    PS_PFB,
    PS_WASTED,
    PS_WASTEDB,
    PS_EPOCH,
    PS_CURSOR,
    PS_LEAD,
    PS_LAG,
    PS_WINDOW,
    PS_OWNED
};

static const struct {
    const char *name, *type, *help;
} pmetrics[] = {
    {"hoard_plan_hits_total", "counter", "Reads of the plan's objects served from the cache"},
    {"hoard_plan_misses_total", "counter",
     "Reads of the plan's objects that waited for the upstream (reader stalls)"},
    {"hoard_plan_prefetched_total", "counter", "Objects the plan's prefetch fetched"},
    {"hoard_plan_prefetched_bytes_total", "counter", "Bytes the plan's prefetch fetched"},
    {"hoard_plan_wasted_total", "counter", "Prefetched objects evicted before anyone read them"},
    {"hoard_plan_wasted_bytes_total", "counter", "Bytes of those"},
    {"hoard_plan_epoch", "gauge", "The reader's epoch (from 0; = epochs when finished)"},
    {"hoard_plan_cursor", "gauge", "The furthest position read in that epoch (-1: none)"},
    {"hoard_plan_lead", "gauge", "Upcoming objects in a row already held (prefetch lead)"},
    {"hoard_plan_lag", "gauge", "Objects in the look-ahead window not held yet (prefetch lag)"},
    {"hoard_plan_window", "gauge", "The look-ahead window in objects"},
    {"hoard_plan_objects", "gauge", "Objects of the plan's dataset this target owns"},
};

/* Held objects among the next win upcoming ones (ps->mu held). */
static uint64_t held_ahead(struct plan *pl, uint64_t win)
{
    struct walk w;
    uint64_t n = 0, held = 0;
    uint32_t i;

    if (walk_start(pl, &w) < 0)
        return 0;
    while (n < win && (i = walk_next(pl, &w)) != NONE) {
        if (w.e == pl->epoch && pl->last[i] == pl->epoch)
            continue; /* read already: not ahead */
        n++;
        held += pl->pf[i] == PF_HELD;
    }
    return held + (win - n); /* past the plan's end nothing is missing */
}

void hd_plans_render(struct hd_buf *b, struct hd_cache *c)
{
    struct hd_plans *ps = c ? c->plans : NULL;
    struct pseries *v;
    struct plan *pl;
    uint64_t cap;
    size_t n = 0, i, m;

    if (!ps || !ps->n)
        return;
    cap = cache_bytes(c);
    if (!(v = calloc(RENDER_MAX, sizeof(*v))))
        return;
    pthread_mutex_lock(&ps->mu);
    for (pl = ps->list; pl && n < RENDER_MAX; pl = pl->next, n++) {
        uint64_t win = window_of(ps, pl, cap), live = pl->prefetch && pl->epoch < pl->epochs;
        snprintf(v[n].id, sizeof(v[n].id), "%s", pl->id);
        snprintf(v[n].bucket, sizeof(v[n].bucket), "%s", pl->bucket);
        v[n].v[PS_HITS] = pl->hits;
        v[n].v[PS_MISSES] = pl->misses;
        v[n].v[PS_PF] = pl->pf_objs;
        v[n].v[PS_PFB] = pl->pf_bytes;
        v[n].v[PS_WASTED] = pl->wasted;
        v[n].v[PS_WASTEDB] = pl->wasted_bytes;
        v[n].v[PS_EPOCH] = pl->epoch;
        v[n].v[PS_CURSOR] = (uint64_t)pl->cursor; /* printed signed */
        v[n].v[PS_LEAD] = lead(pl);
        v[n].v[PS_WINDOW] = live ? win : 0;
        v[n].v[PS_LAG] = live ? win - held_ahead(pl, win) : 0;
        v[n].v[PS_OWNED] = pl->nown;
        v[n].ratio =
            pl->hits + pl->misses ? (double)pl->hits / (double)(pl->hits + pl->misses) : 0.0;
    }
    pthread_mutex_unlock(&ps->mu);
    for (m = 0; m < sizeof(pmetrics) / sizeof(pmetrics[0]); m++) {
        hd_buf_printf(b, "# HELP %s %s.\n# TYPE %s %s\n", pmetrics[m].name, pmetrics[m].help,
                      pmetrics[m].name, pmetrics[m].type);
        for (i = 0; i < n; i++) {
            if (m == PS_CURSOR)
                hd_buf_printf(b, "%s{plan=\"%s\",bucket=\"%s\"} %lld\n", pmetrics[m].name, v[i].id,
                              v[i].bucket, (long long)(int64_t)v[i].v[m]);
            else
                hd_buf_printf(b, "%s{plan=\"%s\",bucket=\"%s\"} %llu\n", pmetrics[m].name, v[i].id,
                              v[i].bucket, (unsigned long long)v[i].v[m]);
        }
    }
    hd_buf_printf(b, "# HELP hoard_plan_hit_ratio Hits over reads of the plan's objects.\n"
                     "# TYPE hoard_plan_hit_ratio gauge\n");
    for (i = 0; i < n; i++)
        hd_buf_printf(b, "hoard_plan_hit_ratio{plan=\"%s\",bucket=\"%s\"} %.6f\n", v[i].id,
                      v[i].bucket, v[i].ratio);
    free(v);
}

static void *worker_main(void *arg)
{
    struct hd_cache *c = arg;
    struct hd_plans *ps = c->plans;

    pthread_mutex_lock(&ps->mu);
    while (!ps->stopping) {
        char id[49], bucket[64], msg[512], *key = NULL;
        struct hd_cbucket *cb;
        struct hd_obj_meta m;
        uint64_t bytes = 0, t0;
        int rc, held;
        if (!pick(ps, cache_bytes(c), id, bucket, &key)) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 200000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&ps->cv, &ps->mu, &ts);
            continue;
        }
        pthread_mutex_unlock(&ps->mu);
        t0 = hd_now_ns();
        rc = HD_ENOSUCHBUCKET;
        if ((cb = hd_cache_bucket(c, bucket)) != NULL) {
            rc = ps->fetch(c, cb, key, 0, NULL, &bytes, msg, sizeof(msg));
            hd_cbucket_unref(cb);
        }
        held = rc == 0 && hd_store_lookup(c->st, bucket, key, &m) == 0;
        if (held)
            hd_obj_meta_cleanup(&m);
        if (rc < 0)
            HD_LOG(HD_DEBUG, NULL, "plan %s: prefetch %s/%s: %s", id, bucket, key, msg);
        throttle(ps, bytes);
        pthread_mutex_lock(&ps->mu);
        if (bytes) { /* a fetch from the upstream: the prefetch's pace */
            double dt = (double)(hd_now_ns() - t0) / 1e9;
            ps->fetch_s = ps->fetch_s > 0 ? (1 - EWMA) * ps->fetch_s + EWMA * dt : dt;
        }
        done_one(ps, id, key, held, bytes);
        free(key);
    }
    pthread_mutex_unlock(&ps->mu);
    return NULL;
}

/* Drops plans nobody read for idle_s (ps->mu held). */
static void expire(struct hd_plans *ps)
{
    uint64_t now = (uint64_t)time(NULL) * 1000;
    struct plan *pl = ps->list, *next;

    for (; pl; pl = next) {
        next = pl->next;
        if (now - pl->last_read_ms > (uint64_t)ps->idle_s * 1000) {
            HD_LOG(HD_INFO, NULL, "plan %s: no read for %lds: dropped", pl->id, ps->idle_s);
            unlink_plan(ps, pl);
            unsave(ps, pl->id);
            plan_free(pl);
        }
    }
}

/* Thread 0 also reloads the saved plans, then expires idle ones now and then. */
static void *first_main(void *arg)
{
    struct hd_cache *c = arg;
    struct hd_plans *ps = c->plans;
    DIR *dir = ps->dir[0] ? opendir(ps->dir) : NULL;
    struct dirent *de;

    while (dir && (de = readdir(dir)) != NULL && !hd_cache_stopping(c)) {
        char path[4400], msg[512];
        json_t *spec;
        struct plan *pl;
        size_t n = strlen(de->d_name);
        if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", ps->dir, de->d_name);
        if (!(spec = json_load_file(path, 0, NULL)))
            continue;
        if (plan_build(c, spec, &pl, msg, sizeof(msg)) == 0) {
            add_built(c, pl, 0, NULL);
            HD_LOG(HD_INFO, NULL, "plan %s: rebuilt (%u objects here)", pl->id, pl->nown);
        } else {
            HD_LOG(HD_WARN, NULL, "plan in %s: cannot rebuild: %s", path, msg);
        }
        json_decref(spec);
    }
    if (dir)
        closedir(dir);
    return worker_main(arg);
}

static void *expire_main(void *arg)
{
    struct hd_cache *c = arg;
    struct hd_plans *ps = c->plans;

    pthread_mutex_lock(&ps->mu);
    while (!ps->stopping) {
        struct timespec ts;
        expire(ps);
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&ps->cv, &ps->mu, &ts);
    }
    pthread_mutex_unlock(&ps->mu);
    return NULL;
}

/* ---- setup ---- */

int hd_plans_new(struct hd_cache *c, const struct hd_config *cfg, hd_plans_fetch_fn fetch)
{
    struct hd_plans *ps = calloc(1, sizeof(*ps));
    const char *data = hd_config_str(cfg, "data");

    if (!ps)
        return -ENOMEM;
    pthread_mutex_init(&ps->mu, NULL);
    pthread_cond_init(&ps->cv, NULL);
    ps->fetch = fetch;
    if (data && *data)
        snprintf(ps->dir, sizeof(ps->dir), "%s/plans", data);
    ps->window = (int)hd_config_int(cfg, "plan.window");
    ps->window_max = (int)hd_config_int(cfg, "plan.window_max");
    if (ps->window_max < ps->window)
        ps->window_max = ps->window;
    ps->workers = (int)hd_config_int(cfg, "plan.workers");
    ps->max_bps = (uint64_t)hd_config_int(cfg, "plan.max_bps");
    ps->idle_s = (long)hd_config_int(cfg, "plan.idle_expire_s");
    c->plans = ps;
    return 0;
}

int hd_plans_start(struct hd_cache *c)
{
    struct hd_plans *ps = c->plans;
    int i;

    ps->th = calloc((size_t)ps->workers + 1, sizeof(*ps->th));
    if (!ps->th)
        return -ENOMEM;
    for (i = 0; i <= ps->workers; i++) {
        void *(*fn)(void *) = i == 0 ? expire_main : i == 1 ? first_main : worker_main;
        if (pthread_create(&ps->th[i], NULL, fn, c) != 0)
            break;
        ps->nth++;
    }
    return ps->nth == ps->workers + 1 ? 0 : -EAGAIN;
}

void hd_plans_stop(struct hd_cache *c)
{
    struct hd_plans *ps = c ? c->plans : NULL;
    int i;

    if (!ps)
        return;
    pthread_mutex_lock(&ps->mu);
    ps->stopping = 1;
    pthread_cond_broadcast(&ps->cv);
    pthread_mutex_unlock(&ps->mu);
    for (i = 0; i < ps->nth; i++)
        pthread_join(ps->th[i], NULL);
    ps->nth = 0;
    free(ps->th);
    ps->th = NULL;
}

void hd_plans_free(struct hd_cache *c)
{
    struct hd_plans *ps = c ? c->plans : NULL;
    struct plan *pl, *next;

    if (!ps)
        return;
    hd_plans_stop(c);
    for (pl = ps->list; pl; pl = next) {
        next = pl->next;
        plan_free(pl);
    }
    pthread_mutex_destroy(&ps->mu);
    pthread_cond_destroy(&ps->cv);
    free(ps);
    c->plans = NULL;
}
