/* store_scan: per-mountpath access to the catalog (rows, scans) for lookups, rebalance and
 * capacity reports (see store.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "target/store/int.h"

size_t hd_store_nmp(const struct hd_store *st)
{
    return st->nmp;
}

size_t hd_store_mp_index(struct hd_store *st, const char *bucket, const char *name)
{
    return (size_t)(hd_store_mp_for(st, bucket, name) - st->mp);
}

void hd_store_names_free(char **names, size_t n)
{
    size_t i;

    for (i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

int hd_store_scan(struct hd_store *st, size_t mpi, const char *bucket, const char *after,
                  size_t max, char ***names, size_t *n)
{
    static const char sql[] = "SELECT name FROM objects WHERE bucket = ?1 AND name > ?2 "
                              "ORDER BY name LIMIT ?3";
    struct mountpath *mp;
    sqlite3_stmt *q = NULL;
    struct conn *c;
    char **v;
    size_t cnt = 0;
    int rc = 0, s;

    *names = NULL;
    *n = 0;
    if (mpi >= st->nmp || max == 0)
        return HD_EBADARG;
    mp = &st->mp[mpi];
    v = calloc(max, sizeof(*v));
    if (!v)
        return -ENOMEM;
    if ((rc = hd_store_conn_get(mp, &c)) < 0) {
        free(v);
        return rc;
    }
    if ((s = sqlite3_prepare_v2(c->db, sql, -1, &q, NULL)) != SQLITE_OK) {
        rc = hd_store_sqlerr(c->db, s, "scan");
        goto out;
    }
    sqlite3_bind_text(q, 1, bucket, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, after ? after : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, (sqlite3_int64)max);
    while ((s = sqlite3_step(q)) == SQLITE_ROW && cnt < max) {
        if (!(v[cnt] = hd_store_col_dup(q, 0))) {
            rc = -ENOMEM;
            goto out;
        }
        cnt++;
    }
    if (s != SQLITE_DONE && s != SQLITE_ROW)
        rc = hd_store_sqlerr(c->db, s, "scan");
out:
    sqlite3_finalize(q);
    hd_store_conn_put(mp, c);
    if (rc < 0) {
        hd_store_names_free(v, cnt);
        return rc;
    }
    *names = v;
    *n = cnt;
    return 0;
}

int hd_store_row_on(struct hd_store *st, size_t mpi, const char *bucket, const char *name,
                    struct hd_obj_meta *m, char **rel)
{
    struct mountpath *mp = &st->mp[mpi];
    struct conn *c;
    sqlite3_stmt *q;
    int rc, s;
    char path[PATH_MAX];

    memset(m, 0, sizeof(*m));
    if (rel)
        *rel = NULL;
    if ((rc = hd_store_conn_get(mp, &c)) < 0)
        return rc;
    q = c->q[Q_LOOKUP];
    sqlite3_bind_text(q, 1, bucket, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, name, -1, SQLITE_STATIC);
    s = sqlite3_step(q);
    if (s == SQLITE_ROW) {
        m->size = (uint64_t)sqlite3_column_int64(q, 0);
        m->mtime_ms = sqlite3_column_int64(q, 1);
        hd_store_col_copy(q, 2, m->etag, sizeof(m->etag));
        hd_store_col_copy(q, 3, m->ck_type, sizeof(m->ck_type));
        hd_store_col_copy(q, 4, m->ck_val, sizeof(m->ck_val));
        m->ctype = hd_store_col_dup(q, 5);
        m->meta = hd_store_col_dup(q, 6);
        m->hdrs = hd_store_col_dup(q, 8);
        m->parts = hd_store_col_dup(q, 9);
        snprintf(path, sizeof(path), "%s/%s", mp->path, (const char *)sqlite3_column_text(q, 7));
        m->path = strdup(path);
        rc = m->path && (m->ctype || !sqlite3_column_text(q, 5)) &&
                     (m->meta || !sqlite3_column_text(q, 6)) &&
                     (m->hdrs || !sqlite3_column_text(q, 8)) &&
                     (m->parts || !sqlite3_column_text(q, 9))
                 ? 0
                 : -ENOMEM;
        if (rc == 0 && rel && !(*rel = hd_store_col_dup(q, 7)))
            rc = -ENOMEM;
    } else if (s == SQLITE_DONE) {
        rc = HD_ENOSUCHKEY;
    } else {
        rc = hd_store_sqlerr(c->db, s, "lookup");
    }
    sqlite3_reset(q);
    hd_store_conn_put(mp, c);
    if (rc < 0) {
        hd_obj_meta_cleanup(m);
        if (rel) {
            free(*rel);
            *rel = NULL;
        }
    }
    return rc;
}

int hd_store_lookup_mp(struct hd_store *st, size_t mpi, const char *bucket, const char *name,
                       struct hd_obj_meta *m)
{
    if (mpi >= st->nmp)
        return HD_EBADARG;
    return hd_store_row_on(st, mpi, bucket, name, m, NULL);
}

int hd_store_fence_cancel_if(struct hd_store *st, size_t mpi, const char *bucket, const char *name,
                             const char *etag, int64_t mtime_ms)
{
    struct hd_obj_meta m;
    int rc;

    if (atomic_load(&st->nfences) == 0)
        return 0; /* nothing to cancel */
    if ((rc = hd_store_lookup_mp(st, mpi, bucket, name, &m)) == HD_ENOSUCHKEY)
        return HD_EPRECONDITION;
    if (rc < 0)
        return rc;
    if (strcmp(m.etag, etag) != 0 || m.mtime_ms != mtime_ms)
        rc = HD_EPRECONDITION;
    hd_obj_meta_cleanup(&m);
    if (rc == 0)
        hd_store_fence_cancel(st, bucket, name, NULL, 0);
    return rc;
}

/* hd_store_delete_if, and with check_hdrs also while the row's hdrs are hdrs (NULL: none). */
static int delete_if(struct hd_store *st, size_t mpi, const char *bucket, const char *name,
                     const char *etag, int64_t mtime_ms, int check_hdrs, const char *hdrs)
{
    static const char sql[] = "DELETE FROM objects WHERE bucket = ?1 AND name = ?2 AND "
                              "etag = ?3 AND mtime = ?4 AND (?5 = 0 OR hdrs IS ?6) AND "
                              "NOT EXISTS (SELECT 1 FROM wbq "
                              "WHERE wbq.bucket = ?1 AND wbq.name = ?2 AND op = 0) "
                              "RETURNING file";
    struct mountpath *mp;
    sqlite3_stmt *q = NULL;
    struct conn *c;
    char *file = NULL;
    int rc = 0, s;

    if (mpi >= st->nmp)
        return HD_EBADARG;
    mp = &st->mp[mpi];
    if ((rc = hd_store_fence_cancel_if(st, mpi, bucket, name, etag, mtime_ms)) < 0)
        return rc;
    if ((rc = hd_store_conn_get(mp, &c)) < 0)
        return rc;
    if ((s = sqlite3_prepare_v2(c->db, sql, -1, &q, NULL)) != SQLITE_OK) {
        rc = hd_store_sqlerr(c->db, s, "delete_if");
        goto out;
    }
    sqlite3_bind_text(q, 1, bucket, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, etag, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 4, mtime_ms);
    sqlite3_bind_int(q, 5, check_hdrs);
    if (hdrs)
        sqlite3_bind_text(q, 6, hdrs, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(q, 6);
    s = sqlite3_step(q);
    if (s == SQLITE_ROW) {
        file = hd_store_col_dup(q, 0);
        s = sqlite3_step(q);
    } else if (s == SQLITE_DONE) {
        rc = HD_EPRECONDITION;
    }
    if (s != SQLITE_DONE)
        rc = hd_store_sqlerr(c->db, s, "delete_if");
out:
    sqlite3_finalize(q);
    hd_store_conn_put(mp, c);
    if (rc == 0)
        hd_mcache_drop(st->mc, bucket, name);
    if (file) {
        if (rc == 0)
            hd_store_unlink_rel(mp, file);
        free(file);
    }
    return rc;
}

int hd_store_delete_if(struct hd_store *st, size_t mpi, const char *bucket, const char *name,
                       const char *etag, int64_t mtime_ms)
{
    return delete_if(st, mpi, bucket, name, etag, mtime_ms, 0, NULL);
}

int hd_store_delete_if_hdrs(struct hd_store *st, size_t mpi, const char *bucket, const char *name,
                            const char *etag, int64_t mtime_ms, const char *hdrs)
{
    return delete_if(st, mpi, bucket, name, etag, mtime_ms, 1, hdrs);
}

const char *hd_store_mp_path(const struct hd_store *st, size_t mpi)
{
    return mpi < st->nmp ? st->mp[mpi].path : NULL;
}

int hd_store_mp_count(struct hd_store *st, size_t mpi, uint64_t *out)
{
    sqlite3_stmt *q = NULL;
    struct conn *c;
    int rc = 0, s;

    *out = 0;
    if (mpi >= st->nmp)
        return HD_EBADARG;
    if ((rc = hd_store_conn_get(&st->mp[mpi], &c)) < 0)
        return rc;
    if ((s = sqlite3_prepare_v2(c->db, "SELECT count(*) FROM objects", -1, &q, NULL)) !=
            SQLITE_OK ||
        (s = sqlite3_step(q)) != SQLITE_ROW)
        rc = hd_store_sqlerr(c->db, s, "count");
    else
        *out = (uint64_t)sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    hd_store_conn_put(&st->mp[mpi], c);
    return rc;
}

int hd_store_mp_bucket_usage(struct hd_store *st, size_t mpi, const char *bucket, uint64_t *objects,
                             uint64_t *bytes)
{
    static const char sql[] =
        "SELECT count(*), coalesce(sum(size), 0) FROM objects WHERE bucket = ?1";
    sqlite3_stmt *q = NULL;
    struct conn *c;
    int rc = 0, s;

    *objects = *bytes = 0;
    if (mpi >= st->nmp)
        return HD_EBADARG;
    if ((rc = hd_store_conn_get(&st->mp[mpi], &c)) < 0)
        return rc;
    if ((s = sqlite3_prepare_v2(c->db, sql, -1, &q, NULL)) != SQLITE_OK ||
        (s = sqlite3_bind_text(q, 1, bucket, -1, SQLITE_STATIC)) != SQLITE_OK ||
        (s = sqlite3_step(q)) != SQLITE_ROW) {
        rc = hd_store_sqlerr(c->db, s, "bucket usage");
    } else {
        *objects = (uint64_t)sqlite3_column_int64(q, 0);
        *bytes = (uint64_t)sqlite3_column_int64(q, 1);
    }
    sqlite3_finalize(q);
    hd_store_conn_put(&st->mp[mpi], c);
    return rc;
}

uint64_t hd_store_count(struct hd_store *st)
{
    uint64_t total = 0, n;
    size_t i;

    for (i = 0; i < st->nmp; i++)
        if (hd_store_mp_count(st, i, &n) == 0)
            total += n;
    return total;
}
