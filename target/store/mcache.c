/* store_mcache: an in-memory cache of catalog rows for warm GET and HEAD (store_int.h).
 *
 * A warm GET used to cost an SQLite read transaction (two fcntl locks, a B-tree descent) per
 * request; the hot set of a training job is read every epoch, so its rows are kept here. The
 * catalog stays the only truth: every change of a row (put commit, delete, delete_if, bucket
 * destroy) drops the name here first-hand, and since every change of a row also replaces or
 * removes its content file, a reader that finds the cached file gone (ENOENT) drops the entry
 * and asks the catalog. A row read from the catalog is cached only if no drop hit its stripe
 * since the read began (hd_mcache_gen), so a reader racing a writer never caches the row the
 * writer just replaced. Up to max_fds entries also keep their content file open, so a warm
 * GET is a dup of that descriptor instead of a path walk (closed when the entry is dropped,
 * i.e. right after the row changes; a reader that got its dup just before reads the version
 * it looked up, as with any read racing a write). Entries live in stripes (a mutex, hash chains and
 * an LRU list each); a full stripe forgets its least recently used row. Any thread. */
#include "target/store/int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "common/errors.h"

#define MC_STRIPES 64

struct mc_ent {
    struct mc_ent *hnext;         /* hash chain */
    struct mc_ent *lprev, *lnext; /* LRU list, most recent first */
    uint64_t h;
    size_t mpi;
    uint64_t size;
    int64_t mtime_ms;
    char etag[48], ck_type[12], ck_val[96];
    char *ctype, *meta, *hdrs, *parts, *rel;
    int fd; /* the content file kept open (readers get a dup), or -1 */
    size_t klen;
    char key[]; /* bucket "\0" name */
};

struct mc_stripe {
    pthread_mutex_t mu;
    struct mc_ent **slot;
    size_t nslot, n, cap;
    struct mc_ent *head, *tail;
    uint64_t gen; /* bumped by every drop: a row read before it must not be cached after */
};

struct hd_mcache {
    struct mc_stripe s[MC_STRIPES];
    atomic_long fds; /* content files held open */
    long max_fds;
};

static uint64_t key_hash(const char *bucket, const char *name, char *key, size_t *klen)
{
    size_t bl = strlen(bucket), nl = strlen(name);

    if (key) {
        memcpy(key, bucket, bl + 1);
        memcpy(key + bl + 1, name, nl);
    }
    *klen = bl + 1 + nl;
    return XXH64(bucket, bl, 0) ^ XXH64(name, nl, 1);
}

int hd_mcache_new(size_t entries, long max_fds, struct hd_mcache **out)
{
    struct hd_mcache *mc;
    size_t i, per = entries / MC_STRIPES + 1;

    *out = NULL;
    if (!entries)
        return 0; /* disabled */
    if (!(mc = calloc(1, sizeof(*mc))))
        return -ENOMEM;
    mc->max_fds = max_fds;
    for (i = 0; i < MC_STRIPES; i++) {
        struct mc_stripe *s = &mc->s[i];
        pthread_mutex_init(&s->mu, NULL);
        s->cap = per;
        s->nslot = per < 16 ? 16 : per;
        if (!(s->slot = calloc(s->nslot, sizeof(*s->slot)))) {
            hd_mcache_free(mc);
            return -ENOMEM;
        }
    }
    *out = mc;
    return 0;
}

static void ent_free(struct hd_mcache *mc, struct mc_ent *e)
{
    if (e->fd >= 0) {
        close(e->fd);
        atomic_fetch_sub(&mc->fds, 1);
    }
    free(e->ctype);
    free(e->meta);
    free(e->hdrs);
    free(e->parts);
    free(e->rel);
    free(e);
}

static void lru_unlink(struct mc_stripe *s, struct mc_ent *e)
{
    if (e->lprev)
        e->lprev->lnext = e->lnext;
    else
        s->head = e->lnext;
    if (e->lnext)
        e->lnext->lprev = e->lprev;
    else
        s->tail = e->lprev;
    e->lprev = e->lnext = NULL;
}

static void lru_front(struct mc_stripe *s, struct mc_ent *e)
{
    e->lnext = s->head;
    e->lprev = NULL;
    if (s->head)
        s->head->lprev = e;
    s->head = e;
    if (!s->tail)
        s->tail = e;
}

/* Unlinks e from its chain and the LRU list and frees it (stripe locked). */
static void drop_locked(struct hd_mcache *mc, struct mc_stripe *s, struct mc_ent *e)
{
    struct mc_ent **pp = &s->slot[e->h % s->nslot];

    while (*pp && *pp != e)
        pp = &(*pp)->hnext;
    if (*pp)
        *pp = e->hnext;
    lru_unlink(s, e);
    s->n--;
    ent_free(mc, e);
}

static struct mc_ent *find_locked(struct mc_stripe *s, uint64_t h, const char *key, size_t klen)
{
    struct mc_ent *e;

    for (e = s->slot[h % s->nslot]; e; e = e->hnext)
        if (e->h == h && e->klen == klen && memcmp(e->key, key, klen) == 0)
            return e;
    return NULL;
}

void hd_mcache_free(struct hd_mcache *mc)
{
    size_t i;

    if (!mc)
        return;
    for (i = 0; i < MC_STRIPES; i++) {
        struct mc_stripe *s = &mc->s[i];
        while (s->head)
            drop_locked(mc, s, s->head);
        free(s->slot);
        pthread_mutex_destroy(&s->mu);
    }
    free(mc);
}

static struct mc_stripe *stripe(struct hd_mcache *mc, uint64_t h)
{
    return &mc->s[(h >> 40) % MC_STRIPES];
}

int hd_mcache_get(struct hd_mcache *mc, const char *bucket, const char *name, struct hd_obj_meta *m,
                  size_t *mpi, char **rel, int *fd)
{
    size_t klen = strlen(bucket) + 1 + strlen(name);
    char *key = malloc(klen + 1);
    struct mc_stripe *s;
    struct mc_ent *e;
    uint64_t h;
    int rc = HD_ENOSUCHKEY;

    if (!mc || !key) {
        free(key);
        return HD_ENOSUCHKEY;
    }
    h = key_hash(bucket, name, key, &klen);
    s = stripe(mc, h);
    pthread_mutex_lock(&s->mu);
    if ((e = find_locked(s, h, key, klen))) {
        memset(m, 0, sizeof(*m));
        m->size = e->size;
        m->mtime_ms = e->mtime_ms;
        memcpy(m->etag, e->etag, sizeof(m->etag));
        memcpy(m->ck_type, e->ck_type, sizeof(m->ck_type));
        memcpy(m->ck_val, e->ck_val, sizeof(m->ck_val));
        m->ctype = e->ctype ? strdup(e->ctype) : NULL;
        m->meta = e->meta ? strdup(e->meta) : NULL;
        m->hdrs = e->hdrs ? strdup(e->hdrs) : NULL;
        m->parts = e->parts ? strdup(e->parts) : NULL;
        *rel = strdup(e->rel);
        *mpi = e->mpi;
        if (fd) /* our own descriptor of the file the entry holds open: no path walk */
            *fd = e->fd >= 0 ? fcntl(e->fd, F_DUPFD_CLOEXEC, 0) : -1;
        if ((e->ctype && !m->ctype) || (e->meta && !m->meta) || (e->hdrs && !m->hdrs) ||
            (e->parts && !m->parts) || !*rel) {
            hd_obj_meta_cleanup(m);
            free(*rel);
            *rel = NULL;
            if (fd && *fd >= 0)
                close(*fd);
        } else {
            lru_unlink(s, e);
            lru_front(s, e);
            rc = 0;
        }
    }
    pthread_mutex_unlock(&s->mu);
    free(key);
    return rc;
}

uint64_t hd_mcache_gen(struct hd_mcache *mc, const char *bucket, const char *name)
{
    struct mc_stripe *s;
    size_t klen;
    uint64_t g;

    if (!mc)
        return 0;
    s = stripe(mc, key_hash(bucket, name, NULL, &klen));
    pthread_mutex_lock(&s->mu);
    g = s->gen;
    pthread_mutex_unlock(&s->mu);
    return g;
}

void hd_mcache_put(struct hd_mcache *mc, const char *bucket, const char *name, size_t mpi,
                   const struct hd_obj_meta *m, const char *rel, uint64_t gen)
{
    size_t klen = strlen(bucket) + 1 + strlen(name);
    struct mc_stripe *s;
    struct mc_ent *e, *old;

    if (!mc || !(e = calloc(1, sizeof(*e) + klen + 1)))
        return;
    e->h = key_hash(bucket, name, e->key, &e->klen);
    e->mpi = mpi;
    e->size = m->size;
    e->mtime_ms = m->mtime_ms;
    memcpy(e->etag, m->etag, sizeof(e->etag));
    memcpy(e->ck_type, m->ck_type, sizeof(e->ck_type));
    memcpy(e->ck_val, m->ck_val, sizeof(e->ck_val));
    e->ctype = m->ctype ? strdup(m->ctype) : NULL;
    e->meta = m->meta ? strdup(m->meta) : NULL;
    e->hdrs = m->hdrs ? strdup(m->hdrs) : NULL;
    e->parts = m->parts ? strdup(m->parts) : NULL;
    e->rel = strdup(rel);
    e->fd = -1;
    if ((m->ctype && !e->ctype) || (m->meta && !e->meta) || (m->hdrs && !e->hdrs) ||
        (m->parts && !e->parts) || !e->rel) {
        ent_free(mc, e);
        return;
    }
    s = stripe(mc, e->h);
    pthread_mutex_lock(&s->mu);
    if (s->gen != gen) { /* a writer dropped something here since the row was read */
        pthread_mutex_unlock(&s->mu);
        ent_free(mc, e);
        return;
    }
    if ((old = find_locked(s, e->h, e->key, e->klen)))
        drop_locked(mc, s, old);
    while (s->n >= s->cap && s->tail)
        drop_locked(mc, s, s->tail);
    e->hnext = s->slot[e->h % s->nslot];
    s->slot[e->h % s->nslot] = e;
    lru_front(s, e);
    s->n++;
    pthread_mutex_unlock(&s->mu);
}

void hd_mcache_keep_fd(struct hd_mcache *mc, const char *bucket, const char *name, const char *rel,
                       int fd)
{
    size_t klen = strlen(bucket) + 1 + strlen(name);
    struct mc_stripe *s;
    struct mc_ent *e;
    char *key;
    uint64_t h;

    if (!mc || mc->max_fds <= 0 || atomic_load(&mc->fds) >= mc->max_fds ||
        !(key = malloc(klen + 1)))
        return;
    h = key_hash(bucket, name, key, &klen);
    s = stripe(mc, h);
    pthread_mutex_lock(&s->mu);
    /* only for the same file: a row replaced since it was opened keeps no descriptor */
    if ((e = find_locked(s, h, key, klen)) && e->fd < 0 && strcmp(e->rel, rel) == 0 &&
        (e->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) >= 0)
        atomic_fetch_add(&mc->fds, 1);
    pthread_mutex_unlock(&s->mu);
    free(key);
}

void hd_mcache_drop(struct hd_mcache *mc, const char *bucket, const char *name)
{
    size_t klen = strlen(bucket) + 1 + strlen(name);
    char *key;
    struct mc_stripe *s;
    struct mc_ent *e;
    uint64_t h;

    if (!mc)
        return;
    if (!(key = malloc(klen + 1))) {
        hd_mcache_drop_all(mc); /* cannot name it: forget everything rather than go stale */
        return;
    }
    h = key_hash(bucket, name, key, &klen);
    s = stripe(mc, h);
    pthread_mutex_lock(&s->mu);
    s->gen++;
    if ((e = find_locked(s, h, key, klen)))
        drop_locked(mc, s, e);
    pthread_mutex_unlock(&s->mu);
    free(key);
}

void hd_mcache_drop_all(struct hd_mcache *mc)
{
    size_t i;

    if (!mc)
        return;
    for (i = 0; i < MC_STRIPES; i++) {
        struct mc_stripe *s = &mc->s[i];
        pthread_mutex_lock(&s->mu);
        s->gen++;
        while (s->head)
            drop_locked(mc, s, s->head);
        pthread_mutex_unlock(&s->mu);
    }
}

size_t hd_mcache_count(struct hd_mcache *mc)
{
    size_t i, n = 0;

    if (!mc)
        return 0;
    for (i = 0; i < MC_STRIPES; i++) {
        pthread_mutex_lock(&mc->s[i].mu);
        n += mc->s[i].n;
        pthread_mutex_unlock(&mc->s[i].mu);
    }
    return n;
}
