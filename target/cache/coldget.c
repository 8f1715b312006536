/* coldget: GET and HEAD of S3-backed objects.
 *
 * Warm: the catalog has the object; it is served from local disk without the upstream (and
 * its access time is batched for LRU). With the bucket's validate_warm_get, a pool thread
 * first HEADs the upstream: same ETag -> served locally; changed -> refetched with If-Match
 * on the new ETag; gone -> the cached copy is dropped and the answer is 404; upstream
 * unreachable -> the cached copy is served (and the error counted).
 *
 * Cold: a "fill" fetches the object on a pool thread into a temp file of the store while
 * clients read that file as it grows: each client is a reader that streams [off, off+len)
 * with pread and parks its connection (MHD suspend) when it has caught up with the fill; the
 * fill resumes parked readers each time it flushes more. Fills are single-flight: a table
 * keyed by bucket/key holds the fill in progress, and every GET of that object joins it. When
 * the body is complete its size and ETag (a plain MD5 ETag is checked against the bytes) are
 * verified and the object is committed to the catalog; a failure aborts every reader's
 * connection and caches nothing.
 *
 * Ranged cold GET: served by an upstream range request at once (a fill of that range that is
 * never committed) unless a whole-object fill in progress already has the bytes; with
 * cache.range_fill the whole object is also filled in the background.
 *
 * Threads: entry points on HTTP workers; fills on pool threads (or a job thread for
 * hd_cache_fetch_sync). A fill's state is guarded by its mutex; the cache's table of fills by its
 * own. */
#include "target/cache/int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <xxhash.h>

#include "common/cksum.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/metrics.h"
#include "target/object/archive.h"
#include "target/object/object.h"

#define FILL_MAGIC 0x66696c6cu   /* "fill" */
#define READER_MAGIC 0x72656164u /* "read" */
#define FLUSH_AT (128u * 1024)   /* readers see new bytes at least every this many */
#define WCH ((size_t)256 * 1024) /* a window chunk: the store's write unit (WBUF) */
#define NWCH 8                   /* chunks in a fill's window: its last 2 MiB in memory */
#define NSLOT 256
#define RANGE_JOIN_SLACK (8ull << 20) /* a range this close to a fill's front waits for it */

enum { F_PENDING, F_HEAD, F_DONE, F_FAILED };

struct reader;

/* A piece of a fill's window: bytes [base, base + cap) of the fill's file, in memory. The fill
 * writes a chunk into the temp file once it is full, and recycles it (or, while a reader is
 * still copying out of it, leaves it to that reader to free) only after that, so a byte that
 * has left the window is always in the file. */
struct wchunk {
    uint64_t base;
    size_t cap;
    int users;  /* readers copying out of it right now (f->mu) */
    int orphan; /* out of the window while in use: the last user frees it (f->mu) */
    char buf[];
};

struct fill {
    uint32_t magic;
    atomic_int refs;
    struct hd_cache *c;
    struct hd_cbucket *cb;
    char *key;
    int range;     /* a client's range: never in the table, never committed */
    int pass;      /* no room to keep it: served to the readers, never committed */
    int check_md5; /* a plain-MD5 ETag checked against the bytes (fill thread only) */
    char range_hdr[128];
    char if_match[48]; /* refetch of a changed object: If-Match on its new ETag */
    /* weak: a commit or delete of the name after the fill began cancels it; the fill's copy
     * is then older than that write, so it is not committed, and new readers start a fill
     * of their own instead of joining this one (table fills only) */
    struct hd_store_fence *fence;
    struct hd_task task;
    struct fill *next; /* table chain */
    int in_table;      /* guarded by the table's mutex */

    pthread_mutex_t mu;
    pthread_cond_t cv; /* state changes, for hd_cache_fetch_sync */
    int state;
    int err;
    char msg[512];
    struct hd_s3c_obj obj; /* the upstream's answer (read-only once state >= F_HEAD) */
    uint64_t filled;       /* bytes readers may have (from the window or from rfd) */
    uint64_t on_disk;      /* bytes written to the temp file, readable with pread from rfd */
    int rfd;
    int local;                /* served from a committed copy: no window, nothing fetched */
    struct wchunk *win[NWCH]; /* the window, by (base / WCH) % NWCH (f->mu) */
    struct wchunk *cur;       /* the chunk being filled (fill thread; in win) */
    size_t cur_len;           /* bytes in cur (fill thread) */
    struct hd_put *put;       /* fill thread only */
    struct reader *waiters;
    uint64_t t0_ns;
    uint64_t fetched; /* body bytes received */
    char rid[17];     /* the request that started it (log context) */
};

struct reader {
    uint32_t magic;
    atomic_int refs; /* the request and the response */
    struct fill *f;
    struct hd_req *r; /* guarded by f->mu; NULL once the request is finished */
    int waiting, listed;
    struct reader *next;
    uint64_t off, len; /* object bytes served */
};

/* The fills in progress of one cache, by bucket/key. */
struct hd_fills {
    pthread_mutex_t mu;
    struct fill *slots[NSLOT];
};

int hd_fills_new(struct hd_fills **out)
{
    struct hd_fills *t = calloc(1, sizeof(*t));

    if (!t)
        return -ENOMEM;
    pthread_mutex_init(&t->mu, NULL);
    *out = t;
    return 0;
}

void hd_fills_free(struct hd_fills *t)
{
    if (!t)
        return;
    pthread_mutex_destroy(&t->mu);
    free(t);
}

/* ---- fills ---- */

static size_t slot_of(const char *bucket, const char *key)
{
    return (size_t)(XXH64(key, strlen(key), XXH64(bucket, strlen(bucket), 7)) % NSLOT);
}

static void fill_unref(struct fill *f)
{
    if (!f || atomic_fetch_sub(&f->refs, 1) != 1)
        return;
    if (f->rfd >= 0)
        close(f->rfd);
    for (size_t i = 0; i < NWCH; i++)
        free(f->win[i]); /* no reader left: none is in use */
    hd_put_free(f->put);
    hd_store_fence_free(f->fence);
    hd_s3c_obj_cleanup(&f->obj);
    hd_cbucket_unref(f->cb);
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
    free(f->key);
    f->magic = 0;
    free(f);
}

static struct fill *fill_new(struct hd_cache *c, struct hd_cbucket *cb, const char *key)
{
    struct fill *f = calloc(1, sizeof(*f));

    if (!f)
        return NULL;
    f->magic = FILL_MAGIC;
    atomic_init(&f->refs, 1);
    f->c = c;
    f->rfd = -1;
    f->key = strdup(key);
    if (!f->key) {
        free(f);
        return NULL;
    }
    atomic_fetch_add(&cb->refs, 1);
    f->cb = cb;
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    return f;
}

static void table_remove(struct fill *f)
{
    struct hd_fills *t = f->c->fills;
    struct fill **pp;
    int drop = 0;

    pthread_mutex_lock(&t->mu);
    if (f->in_table) {
        for (pp = &t->slots[slot_of(f->cb->name, f->key)]; *pp; pp = &(*pp)->next)
            if (*pp == f) {
                *pp = f->next;
                break;
            }
        f->in_table = 0;
        drop = 1;
    }
    pthread_mutex_unlock(&t->mu);
    if (drop)
        fill_unref(f); /* the table's reference */
}

/* Drops the table's references of fills taken out of it, chained by next. */
static void unref_chain(struct fill *f)
{
    struct fill *next;

    for (; f; f = next) {
        next = f->next;
        fill_unref(f);
    }
}

/* The fill in progress for bucket/key (a new reference), or a new one entered in the table
 * (*created = 1; not started). A fill that a write or delete of the name overtook is not
 * joined: it leaves the table, and the caller gets a new one. */
static struct fill *fill_get(struct hd_cache *c, struct hd_cbucket *cb, const char *key,
                             const char *if_match, int *created)
{
    size_t h = slot_of(cb->name, key);
    struct hd_fills *t = c->fills;
    struct fill *f, **pp, *stale = NULL;

    *created = 0;
    pthread_mutex_lock(&t->mu);
    for (pp = &t->slots[h]; (f = *pp);) {
        if (strcmp(f->key, key) != 0 || strcmp(f->cb->name, cb->name) != 0) {
            pp = &f->next;
            continue;
        }
        if (f->fence && hd_store_fence_cancelled(f->fence)) {
            *pp = f->next; /* its readers go on; it will not commit */
            f->in_table = 0;
            f->next = stale;
            stale = f;
            continue;
        }
        if (!if_match || strcmp(f->if_match, if_match) == 0) {
            atomic_fetch_add(&f->refs, 1);
            break;
        }
        pp = &f->next;
    }
    if (f) {
        pthread_mutex_unlock(&t->mu);
        unref_chain(stale);
        return f;
    }
    f = fill_new(c, cb, key);
    if (f && hd_store_fence_new(c->st, cb->name, key, 1, &f->fence) < 0) {
        fill_unref(f);
        f = NULL;
    }
    if (f) {
        if (if_match)
            snprintf(f->if_match, sizeof(f->if_match), "%s", if_match);
        atomic_fetch_add(&f->refs, 1); /* the table's */
        f->in_table = 1;
        f->next = t->slots[h];
        t->slots[h] = f;
        *created = 1;
    }
    pthread_mutex_unlock(&t->mu);
    unref_chain(stale);
    return f;
}

/* Resumes every parked reader (f->mu held). */
static void wake_readers(struct fill *f)
{
    struct reader *w, *next;

    for (w = f->waiters; w; w = next) {
        next = w->next;
        w->next = NULL;
        w->listed = 0;
        if (w->r && w->waiting) {
            w->waiting = 0;
            hd_req_resume(w->r);
        }
    }
    f->waiters = NULL;
}

static int fill_stop(void *arg)
{
    struct fill *f = arg;

    return hd_cache_stopping(f->c);
}

static int fill_head(void *arg, const struct hd_s3c_obj *o)
{
    struct fill *f = arg;
    uint64_t want = o->have_length ? o->length : 0;
    int rc;

    if (!f->range && o->status != 200) {
        snprintf(f->msg, sizeof(f->msg), "Upstream %s answered HTTP %ld to a GET.",
                 f->cb->s3.endpoint, o->status);
        return HD_EUNAVAIL;
    }
    rc = hd_put_begin_sized(f->c->st, f->cb->name, f->key, want, &f->put);
    if (rc == -ENOSPC && !f->range) {
        /* evict on the write path, then try again; failing that, the object goes through
         * to the readers uncached: a read never fails for lack of cache space */
        hd_cache_kick(f->c);
        hd_cache_make_room(f->c, f->cb->name, f->key, want);
        rc = hd_put_begin_sized(f->c->st, f->cb->name, f->key, want, &f->put);
    }
    if (rc == -ENOSPC) {
        f->pass = 1;
        rc = hd_put_begin_pass(f->c->st, f->cb->name, f->key, &f->put);
    }
    if (rc < 0) {
        snprintf(f->msg, sizeof(f->msg), "Cannot fetch %s/%s (%llu bytes) on this target: %s",
                 f->cb->name, f->key, (unsigned long long)want, hd_strerror(rc));
        return rc;
    }
    /* the bucket's validate_cold_get (default on) */
    f->check_md5 = !f->range && hd_etag_is_md5(o->etag) && !f->cb->props.cold_get_unchecked;
    if (f->range || (o->etag[0] && !f->check_md5))
        hd_put_skip_md5(f->put); /* nothing to check it against: save a pass over the bytes */
    else /* hashed from the window's chunks as they fill (no copy, no hand-off) */
        hd_put_md5_inline(f->put);
    f->rfd = open(hd_put_tmp_path(f->put), O_RDONLY | O_CLOEXEC);
    if (f->rfd < 0) {
        rc = -errno;
        snprintf(f->msg, sizeof(f->msg), "Cannot read back the object being fetched.");
        return rc;
    }
    pthread_mutex_lock(&f->mu);
    f->obj = *o;
    f->obj.meta = o->meta ? strdup(o->meta) : NULL;
    f->obj.hdrs = o->hdrs ? strdup(o->hdrs) : NULL;
    f->state = F_HEAD;
    wake_readers(f);
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    hd_cstat_cold_time((double)(hd_now_ns() - f->t0_ns) / 1e9, 0);
    return 0;
}

/* Writes cur[from, cur_len) to the temp file (fill thread). */
static int chunk_write(struct fill *f, size_t from)
{
    int rc = hd_put_write(f->put, f->cur->buf + from, f->cur_len - from);

    if (rc == -ENOSPC && !f->range) { /* size unknown up front: pass the rest through */
        hd_cache_kick(f->c);
        f->pass = 1;
        hd_put_lift_mark(f->put);
        rc = hd_put_write(f->put, f->cur->buf + from, f->cur_len - from);
    }
    if (rc == 0)
        rc = hd_put_flush(f->put); /* a no-op for whole chunks: they fill the store's buffer */
    if (rc < 0) {
        snprintf(f->msg, sizeof(f->msg), "Cannot cache %s/%s: %s", f->cb->name, f->key,
                 hd_strerror(rc));
        if (rc == -ENOSPC)
            hd_cache_kick(f->c);
    }
    return rc;
}

/* Makes the next chunk of the window, for the bytes from f->fetched on (fill thread): the one
 * it replaces has been written to the file; a reader still copying out of that one frees it. */
static int chunk_next(struct fill *f)
{
    uint64_t base = f->fetched;
    size_t i = (size_t)((base / WCH) % NWCH), cap = WCH;
    struct wchunk *old, *c = NULL;

    if (f->obj.have_length && f->obj.length - base < cap)
        cap = (size_t)(f->obj.length - base); /* the object's last chunk */
    pthread_mutex_lock(&f->mu);
    old = f->win[i];
    f->win[i] = NULL;
    if (old && old->users)
        old->orphan = 1;
    else if (old && old->cap >= cap)
        c = old;
    else
        free(old);
    pthread_mutex_unlock(&f->mu);
    if (!c && !(c = malloc(sizeof(*c) + cap))) {
        snprintf(f->msg, sizeof(f->msg), "Cannot cache %s/%s: out of memory", f->cb->name, f->key);
        return -ENOMEM;
    }
    c->base = base;
    c->cap = cap;
    c->users = 0;
    c->orphan = 0;
    pthread_mutex_lock(&f->mu);
    f->win[i] = c;
    f->on_disk = hd_put_flushed(f->put); /* covers every chunk that has left the window */
    pthread_mutex_unlock(&f->mu);
    f->cur = c;
    f->cur_len = 0;
    return 0;
}

/* Lets the readers have what was fetched (the last byte waits for the size and ETag checks:
 * a client never gets the whole body of an object that then fails them). */
static void publish(struct fill *f)
{
    uint64_t fl = f->fetched;

    if (f->obj.have_length && fl >= f->obj.length && fl > 0)
        fl = f->obj.length - 1;
    pthread_mutex_lock(&f->mu);
    f->filled = fl;
    f->on_disk = hd_put_flushed(f->put);
    wake_readers(f);
    pthread_mutex_unlock(&f->mu);
}

/* The upstream's bytes go into the window, where readers copy them from, and from there into
 * the temp file a chunk at a time: one pass, no reading the file back for readers that keep
 * up with the fill (within the window's 2 MiB). */
static int fill_data(void *arg, const char *p, size_t n)
{
    struct fill *f = arg;
    uint64_t before = f->fetched;
    int rc;

    if (f->obj.have_length && f->fetched + n > f->obj.length) {
        snprintf(f->msg, sizeof(f->msg), "Upstream %s sent more than its Content-Length.",
                 f->cb->s3.endpoint);
        return HD_EUNAVAIL;
    }
    while (n) {
        size_t k;
        if ((!f->cur || f->cur_len == f->cur->cap) && (rc = chunk_next(f)) < 0)
            return rc;
        k = f->cur->cap - f->cur_len;
        if (k > n)
            k = n;
        memcpy(f->cur->buf + f->cur_len, p, k);
        f->cur_len += k;
        f->fetched += k;
        p += k;
        n -= k;
        if (f->cur_len == f->cur->cap && (rc = chunk_write(f, 0)) < 0)
            return rc;
    }
    hd_cstat_add(HD_CS_COLD_BYTES, f->fetched - before);
    if (f->fetched - f->filled >= FLUSH_AT)
        publish(f);
    return 0;
}

/* Size and ETag of a complete whole-object fill. */
static int fill_verify(struct fill *f)
{
    unsigned char md5[16];
    char hex[33];

    if (f->obj.have_length && hd_put_size(f->put) != f->obj.length) {
        snprintf(f->msg, sizeof(f->msg), "Upstream %s sent %llu of %llu bytes; nothing was cached.",
                 f->cb->s3.endpoint, (unsigned long long)hd_put_size(f->put),
                 (unsigned long long)f->obj.length);
        return HD_EUNAVAIL;
    }
    if (!f->check_md5)
        return 0; /* size only */
    hd_put_md5(f->put, md5);
    hd_hex(md5, 16, hex);
    if (strcasecmp(hex, f->obj.etag) != 0) {
        snprintf(f->msg, sizeof(f->msg),
                 "The bytes from upstream %s do not match its ETag %s (MD5 %s); nothing was "
                 "cached.",
                 f->cb->s3.endpoint, f->obj.etag, hex);
        return HD_EUNAVAIL;
    }
    return 0;
}

/* Commits a verified whole-object fill (fsync, rename, catalog row). */
static int fill_commit(struct fill *f)
{
    struct hd_put_attrs a;
    unsigned char md5[16];
    char hex[33];
    int rc;

    if (!f->obj.etag[0]) { /* an upstream without ETags: ours */
        hd_put_md5(f->put, md5);
        hd_hex(md5, 16, hex);
    }
    memset(&a, 0, sizeof(a));
    a.etag = f->obj.etag[0] ? f->obj.etag : hex;
    a.ctype = f->obj.ctype[0] ? f->obj.ctype : NULL;
    a.meta = f->obj.meta;
    a.hdrs = f->obj.hdrs;
    a.mtime_ms = f->obj.mtime_ms;
    /* a write-through PUT that committed meanwhile is newer than what we fetched */
    a.keep_newer = !f->if_match[0] && a.mtime_ms > 0;
    a.fence = f->fence; /* and any write or delete since the fill began */
    rc = hd_put_commit(f->put, &a, NULL);
    if (rc == HD_EPRECONDITION || rc == HD_EUNAVAIL)
        return 0; /* a newer copy is held or on its way: the readers got their bytes anyway */
    if (rc == 0) {
        struct hd_mp_usage u;
        int low, high;
        hd_store_touch(f->c->st, f->cb->name, f->key);
        hd_cstat_add(HD_CS_COLD_FILLS, 1);
        /* past the high mark: evict now, not at the next timer tick */
        hd_cache_space_marks(f->c, &low, &high);
        if (hd_store_mp_usage(f->c->st, hd_store_mp_index(f->c->st, f->cb->name, f->key), &u) ==
                0 &&
            u.capacity && (double)u.used * 100.0 > (double)u.capacity * high)
            hd_cache_kick(f->c);
    }
    return rc;
}

/* The object was committed by someone else between the caller's lookup and this fill
 * (e.g. the previous fill finished): serve that copy instead of fetching it again. */
static int fill_from_local(struct fill *f)
{
    struct hd_obj_meta m;
    int fd;

    if (f->range || f->if_match[0] ||
        hd_store_open_object(f->c->st, f->cb->name, f->key, &m, &fd) < 0)
        return 0;
    pthread_mutex_lock(&f->mu);
    f->rfd = fd;
    f->local = 1;
    f->obj.status = 200;
    f->obj.length = f->obj.size = m.size;
    f->obj.have_length = 1;
    snprintf(f->obj.etag, sizeof(f->obj.etag), "%s", m.etag);
    f->obj.mtime_ms = m.mtime_ms;
    if (m.ctype)
        snprintf(f->obj.ctype, sizeof(f->obj.ctype), "%s", m.ctype);
    f->obj.meta = m.meta;
    f->obj.hdrs = m.hdrs;
    m.meta = m.hdrs = NULL;
    f->filled = f->on_disk = m.size;
    f->state = F_DONE;
    wake_readers(f);
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    hd_obj_meta_cleanup(&m);
    return 1;
}

/* Runs a fill to its end on the calling thread (pool or job thread). */
static void fill_run(struct fill *f)
{
    struct hd_s3c_get g;
    struct hd_s3c_err err;
    int rc;

    f->t0_ns = hd_now_ns();
    if (fill_from_local(f))
        goto out;
    memset(&g, 0, sizeof(g));
    g.range = f->range ? f->range_hdr : NULL;
    g.if_match = f->if_match[0] ? f->if_match : NULL;
    g.head = fill_head;
    g.data = fill_data;
    g.stop = fill_stop;
    g.arg = f;
    memset(&err, 0, sizeof(err));
    if ((rc = hd_cbucket_check(f->cb, err.msg, sizeof(err.msg))) == 0)
        rc = hd_s3c_get_object(&f->cb->s3, f->cb->remote, f->key, &g, NULL, &err);
    if (rc == 0 && f->cur && f->cur_len < f->cur->cap)
        rc = chunk_write(f, 0); /* the last, partial chunk */
    if (rc == 0 && f->range && f->obj.have_length && hd_put_size(f->put) != f->obj.length) {
        snprintf(f->msg, sizeof(f->msg), "Upstream %s sent %llu of %llu bytes.", f->cb->s3.endpoint,
                 (unsigned long long)hd_put_size(f->put), (unsigned long long)f->obj.length);
        rc = HD_EUNAVAIL;
    }
    if (rc == 0 && !f->range)
        rc = fill_verify(f);
    if (rc == 0) { /* verified: the readers may have the last bytes while we commit */
        pthread_mutex_lock(&f->mu);
        f->filled = f->on_disk = hd_put_size(f->put);
        wake_readers(f);
        pthread_mutex_unlock(&f->mu);
    }
    if (rc == 0 && !f->range && !f->pass)
        rc = fill_commit(f);
    if (rc == 0 && f->pass) {
        hd_cstat_add(HD_CS_PASSTHROUGH, 1);
        HD_LOG(HD_DEBUG, NULL, "cold GET %s/%s: no room, served without caching", f->cb->name,
               f->key);
    }
    if (rc < 0 && !f->msg[0])
        snprintf(f->msg, sizeof(f->msg), "%s", err.msg[0] ? err.msg : hd_strerror(rc));
    /* a failed fill leaves the table before its readers hear of it: a GET that comes after
     * their error starts a fill of its own instead of joining this one */
    if (rc < 0)
        table_remove(f);
    pthread_mutex_lock(&f->mu);
    if (rc == 0) {
        f->state = F_DONE;
        f->filled = f->on_disk = hd_put_size(f->put);
    } else {
        f->state = F_FAILED;
        f->err = rc;
    }
    wake_readers(f);
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    if (rc == 0) {
        hd_cstat_cold_time(0, (double)(hd_now_ns() - f->t0_ns) / 1e9);
    } else {
        hd_cstat_add(HD_CS_COLD_FAILED, 1);
        if (err.status || rc == HD_EUNAVAIL || rc == HD_EACCESS)
            hd_cstat_add(HD_CS_UPSTREAM_ERR, 1);
        HD_LOG(rc == HD_ENOSUCHKEY ? HD_DEBUG : HD_WARN, NULL, "cold GET %s/%s: %s", f->cb->name,
               f->key, f->msg);
    }
out:
    table_remove(f);
    hd_store_fence_free(f->fence); /* out of the table: no write need tell it any more */
    f->fence = NULL;
}

static void fill_task(struct hd_task *task)
{
    struct fill *f = (struct fill *)((char *)task - offsetof(struct fill, task));

    hd_log_set_context(f->rid);
    fill_run(f);
    hd_log_set_context(NULL);
    fill_unref(f); /* the task's */
}

/* Queues f on the pool (the task takes a reference of its own); on failure marks it failed
 * and drops the table's and the task's references. The caller's reference is never dropped
 * here, so f is still valid when this returns. */
static void fill_start(struct fill *f)
{
    int rc;

    atomic_fetch_add(&f->refs, 1);
    f->task.run = fill_task;
    /* the request that starts it (the worker's context), for the fill's log lines */
    snprintf(f->rid, sizeof(f->rid), "%s", hd_log_context() ? hd_log_context() : "-");
    if ((rc = hd_pool_submit(f->c->pool, &f->task)) < 0) {
        pthread_mutex_lock(&f->mu);
        f->state = F_FAILED;
        f->err = rc;
        snprintf(f->msg, sizeof(f->msg), "The target is shutting down.");
        wake_readers(f);
        pthread_cond_broadcast(&f->cv);
        pthread_mutex_unlock(&f->mu);
        table_remove(f);
        fill_unref(f);
    }
}

/* ---- readers (HTTP worker) ---- */

static void reader_unref(struct reader *rd)
{
    if (atomic_fetch_sub(&rd->refs, 1) != 1)
        return;
    fill_unref(rd->f);
    rd->magic = 0;
    free(rd);
}

/* Parks rd until the fill moves (f->mu held). */
static void reader_park(struct reader *rd)
{
    struct fill *f = rd->f;

    rd->waiting = 1;
    if (!rd->listed) {
        rd->next = f->waiters;
        f->waiters = rd;
        rd->listed = 1;
    }
    hd_req_suspend(rd->r);
}

static long reader_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct reader *rd = cls;
    struct fill *f = rd->f;
    struct wchunk *c;
    uint64_t at, n;
    ssize_t got;

    if (pos >= rd->len)
        return HD_STREAM_END;
    at = rd->off + pos - f->obj.range_start; /* offset in the fill's file */
    pthread_mutex_lock(&f->mu);
    if (at < f->filled) {
        n = f->filled - at;
        if (n > max)
            n = max;
        if (n > rd->len - pos)
            n = rd->len - pos;
        c = f->win[(at / WCH) % NWCH];
        if (c && at >= c->base && at < c->base + c->cap) { /* in the window: from memory */
            if (n > c->base + c->cap - at)
                n = c->base + c->cap - at;
            c->users++;
            pthread_mutex_unlock(&f->mu);
            memcpy(buf, c->buf + (at - c->base), (size_t)n); /* below filled: not written to */
            pthread_mutex_lock(&f->mu);
            if (--c->users == 0 && c->orphan)
                free(c);
            pthread_mutex_unlock(&f->mu);
            return (long)n;
        }
        if (at < f->on_disk) { /* behind the window (or a committed copy): from the file */
            if (n > f->on_disk - at)
                n = f->on_disk - at;
            pthread_mutex_unlock(&f->mu);
            do
                got = pread(f->rfd, buf, (size_t)n, (off_t)at);
            while (got < 0 && errno == EINTR);
            if (got > 0 && !f->local)
                hd_cstat_add(HD_CS_COLD_READBACK, (uint64_t)got);
            return got > 0 ? (long)got : HD_STREAM_ERROR;
        }
    }
    if (f->state == F_FAILED || (f->state == F_DONE && at >= f->filled) || !rd->r) {
        pthread_mutex_unlock(&f->mu);
        return HD_STREAM_ERROR; /* aborts the connection: the client sees a short body */
    }
    reader_park(rd);
    pthread_mutex_unlock(&f->mu);
    return 0;
}

static void reader_free_cb(void *cls)
{
    reader_unref(cls);
}

static void obj_headers(struct hd_req *r, const struct hd_s3c_obj *o)
{
    char v[64], date[32];

    snprintf(v, sizeof(v), "\"%s\"", o->etag);
    hd_resp_header(r, "ETag", v);
    if (o->mtime_ms > 0) {
        hd_http_date_format((time_t)(o->mtime_ms / 1000), date);
        hd_resp_header(r, "Last-Modified", date);
    }
    hd_resp_header(r, "Accept-Ranges", "bytes");
    hd_obj_meta_headers(r, o->meta);
    hd_obj_hdrs_headers(r, o->hdrs);
}

/* Conditionals of r against the upstream's metadata: HD_OK to go on, or HD_DONE (answered). */
static int conditionals(struct hd_req *r, const struct hd_s3c_obj *o)
{
    struct hd_cond cond;
    char v[64], date[32];
    int rc;

    if (hd_obj_ssec_refused(r))
        return HD_DONE;
    cond.if_match = hd_req_header(r, "If-Match");
    cond.if_none_match = hd_req_header(r, "If-None-Match");
    cond.if_modified_since = hd_req_header(r, "If-Modified-Since");
    cond.if_unmodified_since = hd_req_header(r, "If-Unmodified-Since");
    rc = hd_cond_eval(&cond, o->etag, (time_t)(o->mtime_ms / 1000), 1);
    if (rc == HD_ENOTMODIFIED) {
        snprintf(v, sizeof(v), "\"%s\"", o->etag);
        hd_resp_header(r, "ETag", v);
        hd_http_date_format((time_t)(o->mtime_ms / 1000), date);
        hd_resp_header(r, "Last-Modified", date);
        hd_resp_empty(r, 304);
        return HD_DONE;
    }
    if (rc < 0) {
        hd_wcond_error(r, rc, rc == HD_EPRECONDITION ? hd_cond_failed(&cond) : NULL);
        return HD_DONE;
    }
    return HD_OK;
}

static void reader_end(struct hd_req *r)
{
    struct reader *rd = r->data;
    struct fill *f;
    struct hd_s3c_obj o;
    uint64_t off = 0, len;
    int status = 200, rc, range;
    char cr[96], msg[512];

    if (!rd || rd->magic != READER_MAGIC) {
        hd_resp_err(r, HD_EINTERNAL);
        return;
    }
    f = rd->f;
    pthread_mutex_lock(&f->mu);
    if (f->state == F_PENDING) {
        reader_park(rd);
        pthread_mutex_unlock(&f->mu);
        return;
    }
    if (f->state == F_FAILED) {
        rc = f->err;
        snprintf(msg, sizeof(msg), "%s", f->msg);
        pthread_mutex_unlock(&f->mu);
        hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
        return;
    }
    o = f->obj; /* shallow: f->obj is read-only from F_HEAD on and f outlives rd */
    range = f->range;
    pthread_mutex_unlock(&f->mu);
    if (range) {
        if (hd_obj_ssec_refused(r)) /* conditionals() checks it for whole reads */
            return;
        /* as the upstream answered the range: 206 with its Content-Range, or 200 */
        off = o.range_start;
        len = o.length;
        if (o.status == 206) {
            status = 206;
            snprintf(cr, sizeof(cr), "bytes %llu-%llu/%llu", (unsigned long long)off,
                     (unsigned long long)(off + len - (len ? 1 : 0)), (unsigned long long)o.size);
            hd_resp_header(r, "Content-Range", cr);
        }
    } else {
        if (conditionals(r, &o) == HD_DONE)
            return;
        len = o.size;
        status = hd_resp_range(r, o.size, &off, &len);
        if (status < 0)
            return;
    }
    obj_headers(r, &o);
    hd_resp_header(r, "Content-Type", o.ctype[0] ? o.ctype : hd_obj_default_ctype(r));
    rd->off = off;
    rd->len = len;
    atomic_fetch_add(&rd->refs, 1); /* the response's */
    if (hd_resp_stream(r, status, len, reader_read, rd, reader_free_cb) < 0) {
        reader_unref(rd);
        hd_resp_err(r, -ENOMEM);
        return;
    }
    hd_stats_add(HD_ST_GET_BYTES, len);
}

static void reader_done(struct hd_req *r)
{
    struct reader *rd = r->data;
    struct fill *f;
    struct reader **pp;

    if (!rd || rd->magic != READER_MAGIC)
        return;
    f = rd->f;
    pthread_mutex_lock(&f->mu);
    if (rd->listed)
        for (pp = &f->waiters; *pp; pp = &(*pp)->next)
            if (*pp == rd) {
                *pp = rd->next;
                break;
            }
    rd->listed = 0;
    rd->waiting = 0;
    rd->r = NULL;
    pthread_mutex_unlock(&f->mu);
    r->data = NULL;
    reader_unref(rd);
}

/* Makes r a reader of f (taking over the caller's reference to f) and runs its on_end. */
static void attach(struct hd_req *r, struct fill *f)
{
    struct reader *rd = calloc(1, sizeof(*rd));

    if (!rd) {
        fill_unref(f);
        hd_resp_err(r, -ENOMEM);
        return;
    }
    rd->magic = READER_MAGIC;
    atomic_init(&rd->refs, 1);
    rd->f = f;
    rd->r = r;
    r->data = rd;
    r->on_end = reader_end;
    r->on_done = reader_done;
}

/* A single-range header S3 would honour ("bytes=..." without ','), else NULL. */
static const char *simple_range(struct hd_req *r)
{
    const char *h = hd_req_header(r, "Range");

    if (!h || !hd_str_case_prefix(h, "bytes=") || strchr(h, ',') || strlen(h) >= 120)
        return NULL;
    return h;
}

static void cold_get(struct hd_req *r, struct hd_cache *c, struct hd_cbucket *cb, const char *key,
                     const char *if_match)
{
    const char *rh = if_match ? NULL : simple_range(r);
    struct fill *f;
    int created;

    hd_cstat_add(HD_CS_MISS, 1);
    f = fill_get(c, cb, key, if_match, &created);
    if (!f) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    if (rh && !created) {
        /* a whole-object fill is running: join it if it is about to have the bytes */
        uint64_t off = 0, len = 0;
        int join = 0;
        pthread_mutex_lock(&f->mu);
        if (f->state == F_DONE)
            join = 1;
        else if (f->state == F_HEAD && f->obj.size &&
                 hd_range_parse(rh, f->obj.size, &off, &len) == 0)
            join = off + len <= f->filled + RANGE_JOIN_SLACK;
        pthread_mutex_unlock(&f->mu);
        if (join) {
            attach(r, f);
            return;
        }
    }
    if (rh) {
        struct fill *rf = fill_new(c, cb, key);
        if (created) { /* the whole object in the background, or nothing */
            if (hd_cache_range_fill(c))
                fill_start(f);
            else
                table_remove(f);
        }
        fill_unref(f);
        if (!rf) {
            hd_resp_err(r, -ENOMEM);
            return;
        }
        rf->range = 1;
        snprintf(rf->range_hdr, sizeof(rf->range_hdr), "%s", rh);
        hd_cstat_add(HD_CS_RANGE_PASS, 1);
        fill_start(rf);
        attach(r, rf);
        return;
    }
    if (created)
        fill_start(f);
    attach(r, f);
}

/* ---- HEAD of an uncached object, validation of a cached one (pool thread + worker) ---- */

struct vctx {
    struct hd_cache *c;
    struct hd_cbucket *cb;
    char *key;
    char etag[48];    /* cached copy's */
    int64_t mtime_ms; /* cached copy's */
    int head;
    int64_t rterm, rversion; /* the map the request was routed by */
    struct hd_s3c_obj obj;   /* the upstream's HEAD answer */
};

static void vctx_free(void *arg)
{
    struct vctx *v = arg;

    hd_cbucket_unref(v->cb);
    hd_s3c_obj_cleanup(&v->obj);
    free(v->key);
    free(v);
}

static void head_run(struct hd_acall *a)
{
    struct vctx *v = a->arg;
    struct hd_s3c_err err;

    memset(&err, 0, sizeof(err));
    if ((a->rc = hd_cbucket_check(v->cb, a->msg, sizeof(a->msg))) == 0) {
        a->rc = hd_s3c_head_object(&v->cb->s3, v->cb->remote, v->key, &v->obj, &err);
        snprintf(a->msg, sizeof(a->msg), "%s", err.msg);
    }
    if (a->rc < 0 && (err.status || a->rc == HD_EUNAVAIL) && a->rc != HD_ENOSUCHKEY)
        hd_cstat_add(HD_CS_UPSTREAM_ERR, 1);
}

static void head_done(struct hd_req *r, struct hd_acall *a)
{
    struct vctx *v = a->arg;

    if (a->rc < 0) {
        hd_resp_err_msg(r, a->rc, a->msg[0] ? a->msg : NULL);
        return;
    }
    if (conditionals(r, &v->obj) == HD_DONE)
        return;
    obj_headers(r, &v->obj);
    hd_resp_header(r, "Content-Type", v->obj.ctype[0] ? v->obj.ctype : hd_obj_default_ctype(r));
    hd_resp_head(r, 200, v->obj.size);
}

/* Answers from the held copy (m, fd; fd is taken): the object, or a tar member of it. */
/* The local copy's row and, for a GET, its content: a whole-object GET shares the row cache's
 * descriptor (pread only, as a native bucket's GET), a tar member read gets its own. */
static int open_held(struct hd_req *r, struct hd_cache *c, struct hd_cbucket *cb, const char *key,
                     int head, struct hd_obj_meta *m, int *fd)
{
    if (head)
        return hd_store_lookup(c->st, cb->name, key, m);
    if (!hd_arch_wanted(r))
        return hd_store_open_object_shared(c->st, cb->name, key, m, fd);
    return hd_store_open_object(c->st, cb->name, key, m, fd);
}

static void serve_held(struct hd_req *r, struct hd_cache *c, struct hd_cbucket *cb, const char *key,
                       const struct hd_obj_meta *m, int fd, int head, struct hd_pool *pool)
{
    if (hd_arch_wanted(r)) { /* ?archpath= / ?members of a cached shard */
        hd_arch_serve(r, c->st, pool, cb->name, key, m, &fd, head);
        if (fd >= 0)
            close(fd);
        return;
    }
    hd_obj_serve(r, m, fd, head);
}

/* Serves the local copy (looked up again: it may have changed while we asked). */
static void serve_local(struct hd_req *r, struct hd_cache *c, struct hd_cbucket *cb,
                        const char *key, int head)
{
    struct hd_obj_meta m;
    int fd = -1, rc;

    rc = open_held(r, c, cb, key, head, &m, &fd);
    if (rc < 0) {
        hd_resp_err(r, rc);
        return;
    }
    hd_cstat_add(HD_CS_HIT, 1);
    hd_store_touch(c->st, cb->name, key);
    serve_held(r, c, cb, key, &m, fd, head, NULL); /* may run in a call's done */
    hd_obj_meta_cleanup(&m);
}

static void validate_done(struct hd_req *r, struct hd_acall *a)
{
    struct vctx *v = a->arg;
    struct hd_cache *c = v->c;
    struct hd_cbucket *cb = v->cb;
    char *key = v->key, etag[48];
    int rc = a->rc;

    if (rc == HD_ENOSUCHKEY) { /* deleted upstream: so is the cached copy */
        size_t mpi = hd_store_mp_index(c->st, cb->name, key);
        hd_store_delete_if(c->st, mpi, cb->name, key, v->etag, v->mtime_ms);
        hd_resp_err_msg(r, rc, a->msg[0] ? a->msg : NULL);
        return;
    }
    if (rc < 0) {
        HD_LOG(HD_WARN, r->id, "validate %s/%s: %s; serving the cached copy", cb->name, key,
               a->msg);
        serve_local(r, c, cb, key, 0);
        return;
    }
    if (strcmp(v->obj.etag, v->etag) == 0) {
        serve_local(r, c, cb, key, 0);
        return;
    }
    /* changed upstream: fetch the version the HEAD saw, and only that one. The stale copy goes
     * first (unless it was replaced meanwhile): the new one is committed only after its last
     * byte went out, and a GET in between must not be answered from the old one */
    hd_cstat_add(HD_CS_STALE, 1);
    hd_store_delete_if(c->st, hd_store_mp_index(c->st, cb->name, key), cb->name, key, v->etag,
                       v->mtime_ms);
    snprintf(etag, sizeof(etag), "%s", v->obj.etag);
    atomic_fetch_add(&cb->refs, 1);
    v->key = NULL;
    hd_acall_release(a); /* r is ours again; frees v */
    r->data = NULL;
    r->on_done = NULL;
    cold_get(r, c, cb, key, etag);
    hd_cbucket_unref(cb);
    free(key);
    if (r->on_end == reader_end)
        reader_end(r);
}

/* A tar member of an uncached shard, or an object another target copies (want_meta): the
 * object is fetched (joining a fill in progress) on a pool thread, then served from the local
 * copy. With a held copy (v->etag), that copy is revalidated (validate_warm_get) instead. */
static void fetch_run(struct hd_acall *a)
{
    struct vctx *v = a->arg;
    uint64_t bytes;

    if (!v->etag[0])
        hd_cstat_add(HD_CS_MISS, 1);
    a->rc = hd_cache_fetch_sync(v->c, v->cb, v->key, v->etag[0] != '\0', NULL, &bytes, a->msg,
                                sizeof(a->msg));
}

static void fetch_done(struct hd_req *r, struct hd_acall *a)
{
    struct vctx *v = a->arg;
    struct hd_obj_meta m;

    if (a->rc < 0 && a->rc != HD_ENOSUCHKEY && v->etag[0]) {
        /* could not revalidate: the cached copy is served, as a GET does */
        HD_LOG(HD_WARN, r->id, "validate %s/%s: %s; serving the cached copy", v->cb->name, v->key,
               a->msg);
        serve_local(r, v->c, v->cb, v->key, v->head);
    } else if (a->rc < 0) {
        hd_resp_err_msg(r, a->rc, a->msg[0] ? a->msg : NULL);
    } else if (hd_store_lookup(v->c->st, v->cb->name, v->key, &m) < 0) {
        /* fetched, but a write of the name overtook the fetch and nothing was kept */
        hd_resp_err_msg(r, HD_EUNAVAIL, "The object changed while it was fetched: retry.");
    } else {
        hd_obj_meta_cleanup(&m);
        serve_local(r, v->c, v->cb, v->key, v->head);
    }
}

static int start_acall(struct hd_req *r, struct hd_cache *c, struct hd_cbucket *cb, const char *key,
                       const struct hd_obj_meta *m, int head, hd_acall_fn run,
                       hd_acall_done_fn done)
{
    struct vctx *v = calloc(1, sizeof(*v));

    if (!v || !(v->key = strdup(key))) {
        free(v);
        hd_resp_err(r, -ENOMEM);
        return -ENOMEM;
    }
    v->c = c;
    atomic_fetch_add(&cb->refs, 1);
    v->cb = cb;
    v->head = head;
    v->rterm = r->routed_term;
    v->rversion = r->routed_version;
    if (m) {
        snprintf(v->etag, sizeof(v->etag), "%s", m->etag);
        v->mtime_ms = m->mtime_ms;
    }
    hd_acall_request(r, c->pool, run, done, v, vctx_free);
    return 0;
}

/* Another target copying the object (CopyObject, UploadPartCopy: peer.c) wants its identity
 * (X-Hoard-Obj-Meta) with the bytes, which only a committed copy has: such a read caches the
 * object first and is then served from here. */
static int want_meta(const struct hd_req *r)
{
    return r->trusted == HD_TRUST_NODE && hd_req_header(r, "X-Hoard-Want-Meta");
}

/* Not held here: from the upstream (the whole object first for a member of a shard, or for
 * another target's copy). */
static void miss(struct hd_req *r, struct hd_cache *c, struct hd_cbucket *cb, const char *key,
                 int head)
{
    if (hd_arch_wanted(r) || (want_meta(r) && !head))
        start_acall(r, c, cb, key, NULL, head, fetch_run, fetch_done);
    else if (head)
        start_acall(r, c, cb, key, NULL, 1, head_run, head_done);
    else
        cold_get(r, c, cb, key, NULL);
}

/* Get-from-neighbour on a pool thread: while the cluster map changes, the previous owner may
 * hold the object (cheaper than the upstream). */
static void gfn_run(struct hd_acall *a)
{
    struct vctx *v = a->arg;

    a->rc = hd_rebalance_gfn(v->c->rb, v->rterm, v->rversion, v->cb->name, v->key);
}

static void gfn_done(struct hd_req *r, struct hd_acall *a)
{
    struct vctx *v = a->arg;
    struct hd_cache *c = v->c;
    struct hd_cbucket *cb = v->cb;
    char *key = v->key;
    int head = v->head;

    if (a->rc == 0) {
        serve_local(r, c, cb, key, head);
        return;
    }
    /* not found on a neighbour: the upstream, with r out of this call (we are in its on_end,
     * so the next step's on_end runs now) */
    atomic_fetch_add(&cb->refs, 1);
    v->key = NULL;
    hd_acall_release(a); /* frees v */
    r->data = NULL;
    r->on_done = NULL;
    r->on_end = NULL;
    miss(r, c, cb, key, head);
    hd_cbucket_unref(cb);
    free(key);
    if (!r->responded && r->on_end)
        r->on_end(r);
}

/* The plan a read is tagged with: ?plan=ID (kept on the 307) or Hoard-Plan: ID (passed on
 * by the S3 relay, which drops X-Hoard-* headers). */
static const char *plan_tag(const struct hd_req *r)
{
    const char *t = hd_req_param(r, "plan");

    return t && *t ? t : hd_req_header(r, "Hoard-Plan");
}

void hd_cache_obj_get(struct hd_req *r, struct hd_cache *c, struct hd_cbucket *cb, const char *key,
                      int head)
{
    struct hd_obj_meta m;
    const char *lv = hd_req_param(r, "latest-ver"); /* AIStore's get(latest=True): this once */
    int fd = -1, rc, validate = cb->props.validate_warm_get || (lv && strcmp(lv, "true") == 0);

    rc = open_held(r, c, cb, key, head, &m, &fd);
    if (!head && (rc == 0 || rc == HD_ENOSUCHKEY))
        hd_plans_observe(c, cb->name, key, rc == 0, plan_tag(r)); /* the reader's progress */
    if (rc == 0) {
        if (head || !validate || cb->props.write_back) {
            hd_cstat_add(HD_CS_HIT, 1);
            hd_store_touch(c->st, cb->name, key);
            serve_held(r, c, cb, key, &m, fd, head, c->pool); /* at dispatch */
        } else {
            close(fd);
            hd_cstat_add(HD_CS_VALIDATE, 1);
            start_acall(r, c, cb, key, &m, 0, want_meta(r) ? fetch_run : head_run,
                        want_meta(r) ? fetch_done : validate_done);
        }
        hd_obj_meta_cleanup(&m);
        return;
    }
    if (rc != HD_ENOSUCHKEY) {
        hd_resp_err(r, rc);
        return;
    }
    if (cb->props.write_back && hd_store_wb_deleting(c->st, cb->name, key) > 0) {
        hd_resp_err(r, HD_ENOSUCHKEY); /* deleted here; the upstream's copy goes next */
        return;
    }
    if (hd_rebalance_may_gfn(c->rb, r, cb->name, key))
        start_acall(r, c, cb, key, NULL, head, gfn_run, gfn_done);
    else
        miss(r, c, cb, key, head);
}

/* ---- for jobs ---- */

int hd_cache_fetch_sync(struct hd_cache *c, struct hd_cbucket *cb, const char *key, int revalidate,
                        struct hd_job *j, uint64_t *bytes, char *msg, size_t msglen)
{
    struct hd_obj_meta m;
    struct hd_s3c_obj o;
    struct hd_s3c_err err;
    char im[48] = "";
    struct fill *f;
    int created, rc;

    *bytes = 0;
    msg[0] = '\0';
    if (hd_store_lookup(c->st, cb->name, key, &m) == 0) {
        if (!revalidate) {
            hd_obj_meta_cleanup(&m);
            return 0;
        }
        memset(&o, 0, sizeof(o));
        if ((rc = hd_cbucket_check(cb, msg, msglen)) == 0)
            rc = hd_s3c_head_object(&cb->s3, cb->remote, key, &o, &err);
        if (rc == HD_ENOSUCHKEY) {
            hd_store_delete_if(c->st, hd_store_mp_index(c->st, cb->name, key), cb->name, key,
                               m.etag, m.mtime_ms);
            snprintf(msg, msglen, "%s", err.msg);
        } else if (rc < 0 && !msg[0]) {
            snprintf(msg, msglen, "%s", err.msg);
        } else if (rc == 0 && strcmp(o.etag, m.etag) != 0) {
            snprintf(im, sizeof(im), "%s", o.etag);
            rc = 1;
        }
        hd_s3c_obj_cleanup(&o);
        hd_obj_meta_cleanup(&m);
        if (rc <= 0)
            return rc;
    }
    f = fill_get(c, cb, key, im[0] ? im : NULL, &created);
    if (!f)
        return -ENOMEM;
    if (created) {
        fill_run(f);
    } else {
        pthread_mutex_lock(&f->mu);
        while (f->state != F_DONE && f->state != F_FAILED)
            pthread_cond_wait(&f->cv, &f->mu);
        pthread_mutex_unlock(&f->mu);
    }
    pthread_mutex_lock(&f->mu);
    rc = f->state == F_DONE ? 0 : f->err;
    if (rc < 0)
        snprintf(msg, msglen, "%s", f->msg);
    else if (created)
        *bytes = f->fetched;
    pthread_mutex_unlock(&f->mu);
    fill_unref(f);
    (void)j;
    return rc;
}
