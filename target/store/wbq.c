/* store_wbq: the write-back queue of a mountpath's catalog (table wbq, see int.h and
 * store.h). Entries are added and superseded inside the transactions that change the rows
 * they describe (hd_store_wb_requeue); the uploader (target/cache/writeback.c) reads them in
 * seq order and removes them once the upstream has them. Any thread; blocks on disk. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/errors.h"
#include "target/store/int.h"

/* Steps c's prepared statement which (bound to bucket, name) once: the sqlite3_step code. */
static int step_key(struct conn *c, int which, const char *bucket, const char *name)
{
    sqlite3_stmt *q = c->q[which];
    int s;

    sqlite3_bind_text(q, 1, bucket, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, name, -1, SQLITE_STATIC);
    s = sqlite3_step(q);
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return s;
}

int hd_store_wb_requeue(struct conn *c, const char *bucket, const char *name, int op,
                        const char *file, uint64_t size, const char *etag)
{
    sqlite3_stmt *q;
    int s = step_key(c, Q_WB_DROP, bucket, name);

    if (s != SQLITE_DONE)
        return hd_store_sqlerr(c->db, s, "write-back queue: drop");
    if (op < 0)
        return 0;
    q = c->q[Q_WB_ADD];
    sqlite3_bind_text(q, 1, bucket, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, name, -1, SQLITE_STATIC);
    sqlite3_bind_int(q, 3, op);
    if (file)
        sqlite3_bind_text(q, 4, file, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(q, 4);
    sqlite3_bind_int64(q, 5, (sqlite3_int64)size);
    if (etag)
        sqlite3_bind_text(q, 6, etag, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(q, 6);
    sqlite3_bind_int64(q, 7, hd_store_now_ms());
    s = sqlite3_step(q);
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return s == SQLITE_DONE ? 0 : hd_store_sqlerr(c->db, s, "write-back queue: add");
}

int hd_store_wb_has(struct conn *c, const char *bucket, const char *name)
{
    int s = step_key(c, Q_WB_HAS, bucket, name);

    if (s == SQLITE_ROW)
        return 1;
    return s == SQLITE_DONE ? 0 : hd_store_sqlerr(c->db, s, "write-back queue: lookup");
}

/* Runs sql on mountpath mpi's catalog with the prepared statement handed to fn. */
static int with_stmt(struct hd_store *st, size_t mpi, const char *sql,
                     int (*fn)(sqlite3 *db, sqlite3_stmt *q, void *arg), void *arg)
{
    struct mountpath *mp;
    sqlite3_stmt *q = NULL;
    struct conn *c;
    int rc, s;

    if (mpi >= st->nmp)
        return HD_EBADARG;
    mp = &st->mp[mpi];
    if ((rc = hd_store_conn_get(mp, &c)) < 0)
        return rc;
    if ((s = sqlite3_prepare_v2(c->db, sql, -1, &q, NULL)) != SQLITE_OK)
        rc = hd_store_sqlerr(c->db, s, "write-back queue");
    else
        rc = fn(c->db, q, arg);
    sqlite3_finalize(q);
    hd_store_conn_put(mp, c);
    return rc;
}

struct next_arg {
    size_t mpi;
    int64_t now;
    size_t max;
    struct hd_wb_ent *v;
    size_t n;
};

static int next_fn(sqlite3 *db, sqlite3_stmt *q, void *arg)
{
    struct next_arg *a = arg;
    int s;

    sqlite3_bind_int64(q, 1, a->now);
    sqlite3_bind_int64(q, 2, (sqlite3_int64)a->max);
    a->v = calloc(a->max ? a->max : 1, sizeof(*a->v));
    if (!a->v)
        return -ENOMEM;
    while ((s = sqlite3_step(q)) == SQLITE_ROW && a->n < a->max) {
        struct hd_wb_ent *e = &a->v[a->n++];
        e->seq = sqlite3_column_int64(q, 0);
        e->mpi = a->mpi;
        e->bucket = hd_store_col_dup(q, 1);
        e->name = hd_store_col_dup(q, 2);
        e->op = sqlite3_column_int(q, 3);
        e->rel = hd_store_col_dup(q, 4);
        e->size = (uint64_t)sqlite3_column_int64(q, 5);
        e->etag = hd_store_col_dup(q, 6);
        e->queued_ms = sqlite3_column_int64(q, 7);
        e->attempts = sqlite3_column_int(q, 8);
        if (!e->bucket || !e->name)
            return -ENOMEM;
    }
    return s == SQLITE_ROW || s == SQLITE_DONE ? 0 : hd_store_sqlerr(db, s, "write-back queue");
}

int hd_store_wb_next(struct hd_store *st, size_t mpi, int64_t now_ms, size_t max,
                     struct hd_wb_ent **out, size_t *n)
{
    static const char sql[] = "SELECT seq, bucket, name, op, file, size, etag, queued, attempts "
                              "FROM wbq WHERE next_try <= ?1 ORDER BY seq LIMIT ?2";
    struct next_arg a = {mpi, now_ms, max, NULL, 0};
    int rc = with_stmt(st, mpi, sql, next_fn, &a);

    if (rc < 0) {
        hd_store_wb_free(a.v, a.n);
        *out = NULL;
        *n = 0;
        return rc;
    }
    *out = a.v;
    *n = a.n;
    return 0;
}

void hd_store_wb_free(struct hd_wb_ent *v, size_t n)
{
    size_t i;

    for (i = 0; v && i < n; i++) {
        free(v[i].bucket);
        free(v[i].name);
        free(v[i].rel);
        free(v[i].etag);
    }
    free(v);
}

struct upd_arg {
    int64_t seq, next;
    int failed;
    const char *err;
};

static int done_fn(sqlite3 *db, sqlite3_stmt *q, void *arg)
{
    struct upd_arg *a = arg;
    int s;

    sqlite3_bind_int64(q, 1, a->seq);
    if (a->err) {
        sqlite3_bind_int64(q, 2, a->next);
        sqlite3_bind_int(q, 3, a->failed);
        sqlite3_bind_text(q, 4, a->err, -1, SQLITE_STATIC);
    }
    s = sqlite3_step(q);
    return s == SQLITE_DONE ? 0 : hd_store_sqlerr(db, s, "write-back queue: update");
}

int hd_store_wb_done(struct hd_store *st, size_t mpi, int64_t seq)
{
    struct upd_arg a = {seq, 0, 0, NULL};

    return with_stmt(st, mpi, "DELETE FROM wbq WHERE seq = ?1", done_fn, &a);
}

static int seq_fn(sqlite3 *db, sqlite3_stmt *q, void *arg)
{
    int s;

    sqlite3_bind_int64(q, 1, *(const int64_t *)arg);
    s = sqlite3_step(q);
    if (s == SQLITE_ROW)
        return 1;
    return s == SQLITE_DONE ? 0 : hd_store_sqlerr(db, s, "write-back queue: lookup");
}

int hd_store_wb_queued(struct hd_store *st, size_t mpi, int64_t seq)
{
    return with_stmt(st, mpi, "SELECT 1 FROM wbq WHERE seq = ?1", seq_fn, &seq);
}

int hd_store_wb_retry(struct hd_store *st, size_t mpi, int64_t seq, int64_t next_ms, int failed,
                      const char *err)
{
    struct upd_arg a = {seq, next_ms, failed, err ? err : ""};

    return with_stmt(st, mpi,
                     "UPDATE wbq SET attempts = attempts + 1, next_try = ?2, failed = ?3, "
                     "err = ?4 WHERE seq = ?1",
                     done_fn, &a);
}

/* ---- upstream multipart uploads in progress ---- */

struct mpu_arg {
    const char *bucket, *name, *id;
    int64_t num;
    struct hd_wb_mpu *v;
    size_t n, max;
};

static int mpu_exec_fn(sqlite3 *db, sqlite3_stmt *q, void *arg)
{
    struct mpu_arg *a = arg;
    int s;

    sqlite3_bind_text(q, 1, a->bucket, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, a->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, a->id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 4, a->num);
    s = sqlite3_step(q);
    return s == SQLITE_DONE ? 0 : hd_store_sqlerr(db, s, "write-back multipart uploads");
}

int hd_store_wb_mpu_begun(struct hd_store *st, size_t mpi, const char *bucket, const char *name,
                          const char *upload_id, int64_t gen)
{
    struct mpu_arg a = {bucket, name, upload_id, gen, NULL, 0, 0};

    return with_stmt(st, mpi,
                     "INSERT OR REPLACE INTO wbmpu(bucket, name, upload_id, gen) "
                     "VALUES(?1, ?2, ?3, ?4)",
                     mpu_exec_fn, &a);
}

int hd_store_wb_mpu_ended(struct hd_store *st, size_t mpi, const char *bucket, const char *name,
                          const char *upload_id, int orphan)
{
    struct mpu_arg a = {bucket, name, upload_id, orphan, NULL, 0, 0};

    return with_stmt(st, mpi,
                     orphan ? "UPDATE wbmpu SET orphan = ?4 WHERE bucket = ?1 AND name = ?2 AND "
                              "upload_id = ?3"
                            : "DELETE FROM wbmpu WHERE bucket = ?1 AND name = ?2 AND "
                              "upload_id = ?3",
                     mpu_exec_fn, &a);
}

static int mpu_list_fn(sqlite3 *db, sqlite3_stmt *q, void *arg)
{
    struct mpu_arg *a = arg;
    int s;

    sqlite3_bind_int64(q, 1, a->num);
    sqlite3_bind_int64(q, 2, (sqlite3_int64)a->max);
    if (!(a->v = calloc(a->max ? a->max : 1, sizeof(*a->v))))
        return -ENOMEM;
    while ((s = sqlite3_step(q)) == SQLITE_ROW && a->n < a->max) {
        struct hd_wb_mpu *m = &a->v[a->n++];
        m->bucket = hd_store_col_dup(q, 0);
        m->name = hd_store_col_dup(q, 1);
        m->upload_id = hd_store_col_dup(q, 2);
        if (!m->bucket || !m->name || !m->upload_id)
            return -ENOMEM;
    }
    return s == SQLITE_ROW || s == SQLITE_DONE ? 0 : hd_store_sqlerr(db, s, "write-back queue");
}

int hd_store_wb_mpu_stale(struct hd_store *st, size_t mpi, int64_t gen, size_t max,
                          struct hd_wb_mpu **out, size_t *n)
{
    struct mpu_arg a = {NULL, NULL, NULL, gen, NULL, 0, max};
    int rc = with_stmt(st, mpi,
                       "SELECT bucket, name, upload_id FROM wbmpu WHERE orphan <> 0 OR "
                       "gen <> ?1 LIMIT ?2",
                       mpu_list_fn, &a);

    if (rc < 0) {
        hd_store_wb_mpu_free(a.v, a.n);
        a.v = NULL;
        a.n = 0;
    }
    *out = a.v;
    *n = a.n;
    return rc;
}

void hd_store_wb_mpu_free(struct hd_wb_mpu *v, size_t n)
{
    size_t i;

    for (i = 0; v && i < n; i++) {
        free(v[i].bucket);
        free(v[i].name);
        free(v[i].upload_id);
    }
    free(v);
}

int hd_store_wb_open(struct hd_store *st, size_t mpi, const char *rel, int *fd)
{
    if (mpi >= st->nmp || !rel)
        return HD_EBADARG;
    *fd = openat(st->mp[mpi].dirfd, rel, O_RDONLY | O_CLOEXEC);
    return *fd < 0 ? -errno : 0;
}

/* WHERE of a scoped query: ?1 bucket (NULL = any), ?2 prefix (NULL = any), ?3 max seq
 * (0 = any). */
#define SCOPE                                                                                      \
    "(?1 IS NULL OR bucket = ?1) AND (?2 IS NULL OR substr(name, 1, length(?2)) = ?2) AND "        \
    "(?3 = 0 OR seq <= ?3)"

struct stats_arg {
    const char *bucket, *prefix;
    int64_t max_seq;
    struct hd_wb_stats *out;
    char **name, **msg;
};

static void bind_scope(sqlite3_stmt *q, const struct stats_arg *a)
{
    if (a->bucket)
        sqlite3_bind_text(q, 1, a->bucket, -1, SQLITE_STATIC);
    if (a->prefix)
        sqlite3_bind_text(q, 2, a->prefix, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, a->max_seq);
}

static int stats_fn(sqlite3 *db, sqlite3_stmt *q, void *arg)
{
    struct stats_arg *a = arg;
    int s;

    bind_scope(q, a);
    memset(a->out, 0, sizeof(*a->out));
    if ((s = sqlite3_step(q)) != SQLITE_ROW)
        return hd_store_sqlerr(db, s, "write-back queue: stats");
    a->out->objects = (uint64_t)sqlite3_column_int64(q, 0);
    a->out->bytes = (uint64_t)sqlite3_column_int64(q, 1);
    a->out->failed = (uint64_t)sqlite3_column_int64(q, 2);
    a->out->entries = (uint64_t)sqlite3_column_int64(q, 3);
    a->out->oldest_ms = sqlite3_column_int64(q, 4);
    a->out->max_seq = sqlite3_column_int64(q, 5);
    return 0;
}

int hd_store_wb_stats(struct hd_store *st, size_t mpi, const char *bucket, const char *prefix,
                      int64_t max_seq, struct hd_wb_stats *out)
{
    static const char sql[] =
        "SELECT coalesce(sum(op = 0), 0), coalesce(sum(CASE WHEN op = 0 THEN size END), 0), "
        "coalesce(sum(failed <> 0), 0), count(*), coalesce(min(queued), 0), "
        "coalesce(max(seq), 0) FROM wbq WHERE " SCOPE;
    struct stats_arg a = {bucket, prefix, max_seq, out, NULL, NULL};

    return with_stmt(st, mpi, sql, stats_fn, &a);
}

static int first_err_fn(sqlite3 *db, sqlite3_stmt *q, void *arg)
{
    struct stats_arg *a = arg;
    int s;

    bind_scope(q, a);
    s = sqlite3_step(q);
    if (s == SQLITE_ROW) {
        *a->name = hd_store_col_dup(q, 0);
        *a->msg = hd_store_col_dup(q, 1);
        return 0;
    }
    return s == SQLITE_DONE ? 0 : hd_store_sqlerr(db, s, "write-back queue: errors");
}

int hd_store_wb_first_error(struct hd_store *st, size_t mpi, const char *bucket, const char *prefix,
                            int64_t max_seq, char **name, char **msg)
{
    static const char sql[] =
        "SELECT name, err FROM wbq WHERE failed <> 0 AND " SCOPE " ORDER BY seq LIMIT 1";
    struct stats_arg a = {bucket, prefix, max_seq, NULL, name, msg};

    *name = *msg = NULL;
    return with_stmt(st, mpi, sql, first_err_fn, &a);
}

static int exists_fn(sqlite3 *db, sqlite3_stmt *q, void *arg)
{
    const char *const *k = arg;
    int s;

    sqlite3_bind_text(q, 1, k[0], -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, k[1], -1, SQLITE_STATIC);
    s = sqlite3_step(q);
    if (s == SQLITE_ROW)
        return 1;
    return s == SQLITE_DONE ? 0 : hd_store_sqlerr(db, s, "write-back queue: lookup");
}

int hd_store_wb_deleting(struct hd_store *st, const char *bucket, const char *name)
{
    const char *k[2] = {bucket, name};

    return with_stmt(st, hd_store_mp_index(st, bucket, name),
                     "SELECT 1 FROM wbq WHERE bucket = ?1 AND name = ?2 AND op = 1", exists_fn, k);
}

int hd_store_wb_dirty(struct hd_store *st, size_t mpi, const char *bucket, const char *name)
{
    const char *k[2] = {bucket, name};

    return with_stmt(st, mpi, "SELECT 1 FROM wbq WHERE bucket = ?1 AND name = ?2 AND op = 0",
                     exists_fn, k);
}

struct moved_arg {
    const char *bucket, *name, *etag;
    int64_t mtime;
    char *file;
};

static int moved_fn(sqlite3 *db, sqlite3_stmt *q, void *arg)
{
    struct moved_arg *a = arg;
    int s, rc = 0;

    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return hd_store_sqlerr(db, sqlite3_errcode(db), "write-back queue: begin");
    sqlite3_bind_text(q, 1, a->bucket, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, a->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, a->etag, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 4, a->mtime);
    s = sqlite3_step(q);
    if (s == SQLITE_ROW) {
        a->file = hd_store_col_dup(q, 0);
        s = sqlite3_step(q);
    } else if (s == SQLITE_DONE) {
        rc = HD_EPRECONDITION;
    }
    sqlite3_reset(q);
    if (s != SQLITE_DONE)
        rc = hd_store_sqlerr(db, s, "write-back queue: moved");
    if (rc == 0) {
        sqlite3_stmt *d = NULL;
        if (sqlite3_prepare_v2(db, "DELETE FROM wbq WHERE bucket = ?1 AND name = ?2", -1, &d,
                               NULL) != SQLITE_OK) {
            rc = hd_store_sqlerr(db, sqlite3_errcode(db), "write-back queue: moved");
        } else {
            sqlite3_bind_text(d, 1, a->bucket, -1, SQLITE_STATIC);
            sqlite3_bind_text(d, 2, a->name, -1, SQLITE_STATIC);
            if ((s = sqlite3_step(d)) != SQLITE_DONE)
                rc = hd_store_sqlerr(db, s, "write-back queue: moved");
        }
        sqlite3_finalize(d);
    }
    if (rc == 0 && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = hd_store_sqlerr(db, sqlite3_errcode(db), "write-back queue: commit");
    if (rc < 0)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

int hd_store_delete_moved(struct hd_store *st, size_t mpi, const char *bucket, const char *name,
                          const char *etag, int64_t mtime_ms)
{
    struct moved_arg a = {bucket, name, etag, mtime_ms, NULL};
    int rc;

    if (mpi >= st->nmp)
        return HD_EBADARG;
    if ((rc = hd_store_fence_cancel_if(st, mpi, bucket, name, etag, mtime_ms)) < 0)
        return rc;
    rc = with_stmt(st, mpi,
                   "DELETE FROM objects WHERE bucket = ?1 AND name = ?2 AND etag = ?3 AND "
                   "mtime = ?4 RETURNING file",
                   moved_fn, &a);

    if (rc == 0) {
        hd_mcache_drop(st->mc, bucket, name);
        if (a.file)
            hd_store_unlink_rel(&st->mp[mpi], a.file);
    }
    free(a.file);
    return rc;
}
