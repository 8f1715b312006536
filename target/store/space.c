/* store_space: mountpath usage and the out-of-space mark, batched access times, and LRU
 * candidates (see store.h). Thread rules as in store.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include <xxhash.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/log.h"
#include "target/store/int.h"

#define ATAB_SIZE 4096
#define ATIME_MAX 200000 /* touches kept between flushes; more are dropped (and logged) */

struct atime_ent {
    char *bucket, *name;
    int64_t at;
    struct atime_ent *next;
};

static int usage_of(struct hd_store *st, struct mountpath *mp, struct hd_mp_usage *u)
{
    struct statvfs sv;
    struct conn *c;
    int rc = 0, s;

    memset(u, 0, sizeof(*u));
    u->path = mp->path;
    if ((rc = hd_store_conn_get(mp, &c)) < 0)
        return rc;
    s = sqlite3_step(c->q[Q_USAGE]);
    if (s == SQLITE_ROW) {
        int64_t b = sqlite3_column_int64(c->q[Q_USAGE], 0);
        int64_t o = sqlite3_column_int64(c->q[Q_USAGE], 1);
        u->used = b > 0 ? (uint64_t)b : 0;
        u->objects = o > 0 ? (uint64_t)o : 0;
    } else if (s != SQLITE_DONE) {
        rc = hd_store_sqlerr(c->db, s, "usage");
    }
    sqlite3_reset(c->q[Q_USAGE]);
    hd_store_conn_put(mp, c);
    if (rc < 0)
        return rc;
    if (st->capacity) {
        u->capacity = st->capacity;
        return 0;
    }
    if (statvfs(mp->path, &sv) < 0)
        return -errno;
    /* as df: used = size - free; capacity = used + what an unprivileged writer may still use */
    u->used = (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
    u->capacity = u->used + (uint64_t)sv.f_bavail * sv.f_frsize;
    return 0;
}

int hd_store_mp_usage(struct hd_store *st, size_t mpi, struct hd_mp_usage *out)
{
    if (mpi >= st->nmp)
        return HD_EBADARG;
    return usage_of(st, &st->mp[mpi], out);
}

int hd_store_room(struct hd_store *st, struct mountpath *mp, uint64_t need, uint64_t *room)
{
    struct hd_mp_usage u;
    uint64_t mark;
    int rc;

    *room = UINT64_MAX;
    if (st->oos_pct >= 100 && !st->capacity)
        return 0; /* no mark: the filesystem's own ENOSPC is the limit */
    if ((rc = usage_of(st, mp, &u)) < 0)
        return rc;
    mark =
        u.capacity / 100 * (uint64_t)st->oos_pct + u.capacity % 100 * (uint64_t)st->oos_pct / 100;
    *room = mark > u.used ? mark - u.used : 0;
    if (*room == 0 || need > *room) {
        HD_LOG(HD_WARN, NULL,
               "mountpath %s is out of space: %llu of %llu bytes used, out-of-space mark %d%%",
               mp->path, (unsigned long long)u.used, (unsigned long long)u.capacity, st->oos_pct);
        return -ENOSPC;
    }
    return 0;
}

/* ---- access times ---- */

static uint64_t akey(const char *bucket, const char *name)
{
    return XXH64(name, strlen(name), XXH64(bucket, strlen(bucket), 0));
}

void hd_store_touch(struct hd_store *st, const char *bucket, const char *name)
{
    static int warned;
    int64_t now = hd_store_now_ms();
    struct atime_ent *e;
    size_t h = (size_t)(akey(bucket, name) % ATAB_SIZE);

    pthread_mutex_lock(&st->amu);
    if (!st->atab && !(st->atab = calloc(ATAB_SIZE, sizeof(*st->atab))))
        goto out;
    for (e = st->atab[h]; e; e = e->next)
        if (strcmp(e->name, name) == 0 && strcmp(e->bucket, bucket) == 0) {
            e->at = now;
            goto out;
        }
    if (st->acount >= ATIME_MAX) {
        if (!warned++)
            HD_LOG(HD_WARN, NULL,
                   "access times: more than %d reads between flushes; some are "
                   "not recorded",
                   ATIME_MAX);
        goto out;
    }
    e = calloc(1, sizeof(*e));
    if (!e || !(e->bucket = strdup(bucket)) || !(e->name = strdup(name))) {
        if (e)
            free(e->bucket);
        free(e);
        goto out;
    }
    e->at = now;
    e->next = st->atab[h];
    st->atab[h] = e;
    st->acount++;
out:
    pthread_mutex_unlock(&st->amu);
}

static void ent_free(struct atime_ent *e)
{
    while (e) {
        struct atime_ent *n = e->next;
        free(e->bucket);
        free(e->name);
        free(e);
        e = n;
    }
}

void hd_store_atime_free(struct hd_store *st)
{
    size_t i;

    if (!st->atab)
        return;
    for (i = 0; i < ATAB_SIZE; i++)
        ent_free(st->atab[i]);
    free(st->atab);
    st->atab = NULL;
    st->acount = 0;
}

/* One mountpath's share of a flush, in one transaction. */
static int flush_mp(struct hd_store *st, size_t mpi, struct atime_ent **tab)
{
    static const char sql[] = "UPDATE objects SET atime = ?3 WHERE bucket = ?1 AND name = ?2 "
                              "AND atime < ?3";
    struct mountpath *mp = &st->mp[mpi];
    sqlite3_stmt *q = NULL;
    struct conn *c;
    size_t i;
    int rc, s;

    if ((rc = hd_store_conn_get(mp, &c)) < 0)
        return rc;
    if ((s = sqlite3_prepare_v2(c->db, sql, -1, &q, NULL)) != SQLITE_OK) {
        rc = hd_store_sqlerr(c->db, s, "atime flush");
        goto out;
    }
    if ((s = sqlite3_step(c->q[Q_BEGIN])) != SQLITE_DONE) {
        sqlite3_reset(c->q[Q_BEGIN]);
        rc = hd_store_sqlerr(c->db, s, "atime flush: begin");
        goto out;
    }
    sqlite3_reset(c->q[Q_BEGIN]);
    for (i = 0; i < ATAB_SIZE; i++) {
        struct atime_ent *e;
        for (e = tab[i]; e; e = e->next) {
            if (st->nmp > 1 && hd_store_mp_for(st, e->bucket, e->name) != mp)
                continue;
            sqlite3_bind_text(q, 1, e->bucket, -1, SQLITE_STATIC);
            sqlite3_bind_text(q, 2, e->name, -1, SQLITE_STATIC);
            sqlite3_bind_int64(q, 3, e->at);
            s = sqlite3_step(q);
            sqlite3_reset(q);
            if (s != SQLITE_DONE) {
                rc = hd_store_sqlerr(c->db, s, "atime flush");
                sqlite3_step(c->q[Q_ROLLBACK]);
                sqlite3_reset(c->q[Q_ROLLBACK]);
                goto out;
            }
        }
    }
    s = sqlite3_step(c->q[Q_COMMIT]);
    sqlite3_reset(c->q[Q_COMMIT]);
    if (s != SQLITE_DONE) {
        rc = hd_store_sqlerr(c->db, s, "atime flush: commit");
        sqlite3_step(c->q[Q_ROLLBACK]);
        sqlite3_reset(c->q[Q_ROLLBACK]);
    }
out:
    sqlite3_finalize(q);
    hd_store_conn_put(mp, c);
    return rc;
}

int hd_store_atime_flush(struct hd_store *st)
{
    struct atime_ent **tab;
    size_t i;
    int rc = 0, r;

    pthread_mutex_lock(&st->amu);
    tab = st->atab;
    st->atab = NULL;
    st->acount = 0;
    pthread_mutex_unlock(&st->amu);
    if (!tab)
        return 0;
    for (i = 0; i < st->nmp; i++)
        if ((r = flush_mp(st, i, tab)) < 0 && rc == 0)
            rc = r;
    for (i = 0; i < ATAB_SIZE; i++)
        ent_free(tab[i]);
    free(tab);
    return rc;
}

/* ---- LRU ---- */

void hd_store_lru_free(struct hd_lru_ent *v, size_t n)
{
    size_t i;

    for (i = 0; v && i < n; i++) {
        free(v[i].bucket);
        free(v[i].name);
    }
    free(v);
}

int hd_store_lru_batch(struct hd_store *st, size_t mpi, const char *const *buckets, size_t nb,
                       size_t max, struct hd_lru_ent **out, size_t *n)
{
    static const char sql[] = "SELECT bucket, name, size, atime, mtime, etag FROM objects "
                              "WHERE bucket IN (SELECT value FROM json_each(?1)) "
                              "AND NOT EXISTS (SELECT 1 FROM wbq WHERE wbq.bucket = "
                              "objects.bucket AND wbq.name = objects.name AND op = 0) "
                              "ORDER BY atime LIMIT ?2";
    struct mountpath *mp;
    struct hd_lru_ent *v = NULL;
    struct hd_buf list;
    sqlite3_stmt *q = NULL;
    struct conn *c;
    size_t i, cnt = 0;
    int rc = 0, s;

    *out = NULL;
    *n = 0;
    if (mpi >= st->nmp || max == 0)
        return HD_EBADARG;
    if (nb == 0)
        return 0;
    mp = &st->mp[mpi];
    /* the bucket names as a JSON array: one bound parameter however many there are */
    hd_buf_init(&list);
    hd_buf_puts(&list, "[");
    for (i = 0; i < nb; i++) {
        size_t k;
        hd_buf_puts(&list, i ? ",\"" : "\"");
        for (k = 0; buckets[i][k]; k++) /* bucket names are [a-z0-9.-]: nothing to escape */
            hd_buf_append(&list, &buckets[i][k], 1);
        hd_buf_puts(&list, "\"");
    }
    hd_buf_puts(&list, "]");
    v = calloc(max, sizeof(*v));
    if (!v || list.oom) {
        free(v);
        hd_buf_cleanup(&list);
        return -ENOMEM;
    }
    if ((rc = hd_store_conn_get(mp, &c)) < 0) {
        free(v);
        hd_buf_cleanup(&list);
        return rc;
    }
    if ((s = sqlite3_prepare_v2(c->db, sql, -1, &q, NULL)) != SQLITE_OK) {
        rc = hd_store_sqlerr(c->db, s, "lru");
        goto out;
    }
    sqlite3_bind_text(q, 1, list.data, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, (sqlite3_int64)max);
    while (cnt < max && (s = sqlite3_step(q)) == SQLITE_ROW) {
        struct hd_lru_ent *e = &v[cnt];
        e->bucket = hd_store_col_dup(q, 0);
        e->name = hd_store_col_dup(q, 1);
        cnt++;
        if (!e->bucket || !e->name) {
            rc = -ENOMEM;
            goto out;
        }
        e->size = (uint64_t)sqlite3_column_int64(q, 2);
        e->atime_ms = sqlite3_column_int64(q, 3);
        e->mtime_ms = sqlite3_column_int64(q, 4);
        hd_store_col_copy(q, 5, e->etag, sizeof(e->etag));
    }
    if (cnt < max && s != SQLITE_DONE)
        rc = hd_store_sqlerr(c->db, s, "lru");
out:
    sqlite3_finalize(q);
    hd_store_conn_put(mp, c);
    hd_buf_cleanup(&list);
    if (rc < 0) {
        hd_store_lru_free(v, cnt);
        return rc;
    }
    *out = v;
    *n = cnt;
    return 0;
}
