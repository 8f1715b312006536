/* db: the bottom of the store. Catalog connections (one pool per mountpath, prepared
 * statements), the mountpath HRW picks for a name, and small helpers every store file uses.
 * Any thread; blocks on disk. */
#include "target/store/int.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/hrw.h"
#include "common/log.h"

int64_t hd_store_now_ms(void)
{
    struct timeval tv;

    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

int hd_store_sqlerr(sqlite3 *db, int rc, const char *what)
{
    HD_LOG(HD_ERROR, NULL, "catalog: %s: %s (%d)", what, db ? sqlite3_errmsg(db) : "?", rc);
    if (rc == SQLITE_FULL)
        return -ENOSPC;
    return HD_EINTERNAL;
}

static void conn_free(struct conn *c)
{
    int i;

    if (!c)
        return;
    for (i = 0; i < Q_COUNT; i++)
        sqlite3_finalize(c->q[i]);
    sqlite3_close(c->db);
    free(c);
}

static int has_column(sqlite3 *db, const char *col)
{
    sqlite3_stmt *s;
    int found = 0;

    if (sqlite3_prepare_v2(db, "PRAGMA table_info(objects)", -1, &s, NULL) != SQLITE_OK)
        return 0;
    while (!found && sqlite3_step(s) == SQLITE_ROW)
        found =
            sqlite3_column_text(s, 1) && strcmp((const char *)sqlite3_column_text(s, 1), col) == 0;
    sqlite3_finalize(s);
    return found;
}

/* Catalogs written before a column existed get it (NULL in every old row). Runs on every new
 * connection; after the first it finds the columns there. */
static int migrate(sqlite3 *db)
{
    static const char *const add[][2] = {
        {"hdrs", "ALTER TABLE objects ADD COLUMN hdrs TEXT"},
        {"parts", "ALTER TABLE objects ADD COLUMN parts TEXT"},
    };
    size_t i;

    for (i = 0; i < sizeof(add) / sizeof(add[0]); i++)
        if (!has_column(db, add[i][0]) &&
            sqlite3_exec(db, add[i][1], NULL, NULL, NULL) != SQLITE_OK &&
            !has_column(db, add[i][0])) /* another connection may have just added it */
            return -1;
    return 0;
}

static int conn_open(const char *mpath, struct conn **out)
{
    char path[PATH_MAX];
    struct conn *c = calloc(1, sizeof(*c));
    int rc, i;
    char *msg = NULL;

    if (!c)
        return -ENOMEM;
    snprintf(path, sizeof(path), "%s/catalog.db", mpath);
    rc = sqlite3_open_v2(path, &c->db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK)
        goto fail;
    sqlite3_busy_timeout(c->db, 10000);
    rc = sqlite3_exec(c->db, schema, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        goto fail;
    if (migrate(c->db) < 0)
        goto fail; /* logged with sqlite3_errmsg below */
    /* WAL + NORMAL: every commit is atomic and survives a process crash; a power loss may
     * lose the last commits but never corrupts the catalog. */
    sqlite3_exec(c->db, "PRAGMA synchronous = NORMAL;", NULL, NULL, NULL);
    for (i = 0; i < Q_COUNT; i++) {
        rc = sqlite3_prepare_v3(c->db, sqls[i], -1, SQLITE_PREPARE_PERSISTENT, &c->q[i], NULL);
        if (rc != SQLITE_OK)
            goto fail;
    }
    *out = c;
    return 0;
fail:
    HD_LOG(HD_ERROR, NULL, "catalog: open %s: %s", path,
           msg ? msg : (c->db ? sqlite3_errmsg(c->db) : "out of memory"));
    sqlite3_free(msg);
    conn_free(c);
    return HD_EINTERNAL;
}

int hd_store_conn_get(struct mountpath *mp, struct conn **out)
{
    struct conn *c;

    pthread_mutex_lock(&mp->mu);
    c = mp->free;
    if (c)
        mp->free = c->next;
    pthread_mutex_unlock(&mp->mu);
    if (c) {
        *out = c;
        return 0;
    }
    return conn_open(mp->path, out);
}

void hd_store_conn_put(struct mountpath *mp, struct conn *c)
{
    int i;

    for (i = 0; i < Q_COUNT; i++)
        sqlite3_reset(c->q[i]);
    pthread_mutex_lock(&mp->mu);
    c->next = mp->free;
    mp->free = c;
    pthread_mutex_unlock(&mp->mu);
}

void hd_store_conns_close(struct mountpath *mp)
{
    struct conn *c = mp->free, *n;

    for (; c; c = n) {
        n = c->next;
        conn_free(c);
    }
    mp->free = NULL;
}

int hd_store_mkdir_p(const char *path)
{
    char tmp[PATH_MAX];
    size_t i, n = strlen(path);

    if (n >= sizeof(tmp))
        return -ENAMETOOLONG;
    memcpy(tmp, path, n + 1);
    for (i = 1; i <= n; i++) {
        if (tmp[i] != '/' && tmp[i] != '\0')
            continue;
        tmp[i] = '\0';
        if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
            return -errno;
        tmp[i] = i < n ? '/' : '\0';
    }
    return 0;
}

struct mountpath *hd_store_mp_for(struct hd_store *st, const char *bucket, const char *name)
{
    struct hd_buf u;
    uint64_t d;
    int i;

    if (st->nmp == 1)
        return &st->mp[0];
    hd_buf_init(&u);
    hd_hrw_uname(&u, "ais", NULL, bucket, name);
    d = u.data ? hd_hrw_digest(u.data, u.len) : 0;
    hd_buf_cleanup(&u);
    i = hd_hrw_pick(st->mp_digest, NULL, st->nmp, d);
    return &st->mp[i < 0 ? 0 : i];
}

void hd_obj_meta_cleanup(struct hd_obj_meta *m)
{
    free(m->ctype);
    free(m->meta);
    free(m->hdrs);
    free(m->parts);
    free(m->path);
    m->ctype = m->meta = m->hdrs = m->parts = m->path = NULL;
}

char *hd_store_col_dup(sqlite3_stmt *s, int i)
{
    const unsigned char *t = sqlite3_column_text(s, i);

    return t ? strdup((const char *)t) : NULL;
}

void hd_store_col_copy(sqlite3_stmt *s, int i, char *dst, size_t n)
{
    const unsigned char *t = sqlite3_column_text(s, i);

    snprintf(dst, n, "%s", t ? (const char *)t : "");
}

void hd_store_unlink_rel(struct mountpath *mp, const char *rel)
{
    char path[PATH_MAX];

    snprintf(path, sizeof(path), "%s/%s", mp->path, rel);
    if (unlink(path) < 0 && errno != ENOENT)
        HD_LOG(HD_WARN, NULL, "unlink %s: %s", path, strerror(errno));
}

int hd_store_random_hex(char *out, size_t nbytes)
{
    unsigned char r[32];
    size_t i;
    static const char hx[] = "0123456789abcdef";

    if (nbytes > sizeof(r) || getrandom(r, nbytes, 0) != (ssize_t)nbytes)
        return -EIO;
    for (i = 0; i < nbytes; i++) {
        out[2 * i] = hx[r[i] >> 4];
        out[2 * i + 1] = hx[r[i] & 15];
    }
    out[2 * nbytes] = '\0';
    return 0;
}
