#include "target/store/tar.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "target/store/int.h"

/* The mountpath holding m's content file and the file's name relative to it. */
static struct mountpath *locate(struct hd_store *st, const struct hd_obj_meta *m, const char **rel)
{
    size_t i, n;

    if (!m->path)
        return NULL;
    for (i = 0; i < st->nmp; i++) {
        n = strlen(st->mp[i].path);
        if (strncmp(m->path, st->mp[i].path, n) == 0 && m->path[n] == '/') {
            *rel = m->path + n + 1;
            return &st->mp[i];
        }
    }
    return NULL;
}

int hd_store_tar_state(struct hd_store *st, const struct hd_obj_meta *m, uint64_t *members,
                       char *msg, size_t msglen)
{
    const char *rel;
    struct mountpath *mp = locate(st, m, &rel);
    struct conn *c;
    sqlite3_stmt *q;
    int rc, s;

    if (msg && msglen)
        msg[0] = '\0';
    if (!mp)
        return HD_EINTERNAL;
    if ((rc = hd_store_conn_get(mp, &c)) < 0)
        return rc;
    q = c->q[Q_TAR_STATE];
    sqlite3_bind_text(q, 1, rel, -1, SQLITE_STATIC);
    s = sqlite3_step(q);
    if (s == SQLITE_ROW) {
        *members = (uint64_t)sqlite3_column_int64(q, 0);
        rc = sqlite3_column_int(q, 1) == 0 ? 0 : HD_ENOTARCHIVE;
        if (msg)
            hd_store_col_copy(q, 2, msg, msglen);
    } else if (s == SQLITE_DONE) {
        rc = 1;
    } else {
        rc = hd_store_sqlerr(c->db, s, "tar index state");
    }
    hd_store_conn_put(mp, c);
    return rc;
}

static int exec_step(sqlite3 *db, sqlite3_stmt *q, const char *what)
{
    int s = sqlite3_step(q);

    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return s == SQLITE_DONE ? 0 : hd_store_sqlerr(db, s, what);
}

int hd_store_tar_save(struct hd_store *st, const char *bucket, const char *name,
                      const struct hd_obj_meta *m, const struct hd_tar_ent *ents, size_t n,
                      int status, const char *msg)
{
    const char *rel;
    struct mountpath *mp = locate(st, m, &rel);
    sqlite3_stmt *ins = NULL, *idx = NULL, *del = NULL, *cur;
    struct conn *c;
    size_t i;
    int rc, s, same = 0;

    if (!mp)
        return HD_EINTERNAL;
    if ((rc = hd_store_conn_get(mp, &c)) < 0)
        return rc;
    s = sqlite3_step(c->q[Q_BEGIN]); /* BEGIN IMMEDIATE */
    sqlite3_reset(c->q[Q_BEGIN]);
    if (s != SQLITE_DONE) {
        rc = hd_store_sqlerr(c->db, s, "tar index: begin");
        goto out;
    }
    /* only while the object still uses this file: a concurrent overwrite already dropped
     * the old file's index and must not get stale rows back */
    cur = c->q[Q_FILE];
    sqlite3_bind_text(cur, 1, bucket, -1, SQLITE_STATIC);
    sqlite3_bind_text(cur, 2, name, -1, SQLITE_STATIC);
    s = sqlite3_step(cur);
    if (s == SQLITE_ROW) {
        const unsigned char *f = sqlite3_column_text(cur, 0);
        same = f && strcmp((const char *)f, rel) == 0;
    }
    sqlite3_reset(cur);
    sqlite3_clear_bindings(cur);
    if (s != SQLITE_ROW && s != SQLITE_DONE) {
        rc = hd_store_sqlerr(c->db, s, "tar index: lookup");
        goto rollback;
    }
    if (!same)
        goto rollback; /* rc == 0: nothing to record */
    if ((s = sqlite3_prepare_v2(c->db,
                                "INSERT OR REPLACE INTO tar_index(file, members, status, msg) "
                                "VALUES(?1, ?2, ?3, ?4)",
                                -1, &idx, NULL)) != SQLITE_OK ||
        (s = sqlite3_prepare_v2(c->db,
                                "INSERT OR REPLACE INTO tar_members(file, name, off, size) "
                                "VALUES(?1, ?2, ?3, ?4)",
                                -1, &ins, NULL)) != SQLITE_OK) {
        rc = hd_store_sqlerr(c->db, s, "tar index: prepare");
        goto rollback;
    }
    s = sqlite3_prepare_v2(c->db, "DELETE FROM tar_members WHERE file = ?1", -1, &del, NULL);
    if (s != SQLITE_OK) {
        rc = hd_store_sqlerr(c->db, s, "tar index: prepare");
        goto rollback;
    }
    sqlite3_bind_text(del, 1, rel, -1, SQLITE_STATIC);
    if ((rc = exec_step(c->db, del, "tar index: clear")) < 0)
        goto rollback;
    for (i = 0; i < n; i++) {
        sqlite3_bind_text(ins, 1, rel, -1, SQLITE_STATIC);
        sqlite3_bind_text(ins, 2, ents[i].name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(ins, 3, (sqlite3_int64)ents[i].off);
        sqlite3_bind_int64(ins, 4, (sqlite3_int64)ents[i].size);
        if ((rc = exec_step(c->db, ins, "tar index: member")) < 0)
            goto rollback;
    }
    sqlite3_bind_text(idx, 1, rel, -1, SQLITE_STATIC);
    sqlite3_bind_int64(idx, 2, (sqlite3_int64)n);
    sqlite3_bind_int(idx, 3, status == 0 ? 0 : 1);
    if (msg)
        sqlite3_bind_text(idx, 4, msg, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(idx, 4);
    if ((rc = exec_step(c->db, idx, "tar index: state")) < 0)
        goto rollback;
    s = sqlite3_step(c->q[Q_COMMIT]);
    sqlite3_reset(c->q[Q_COMMIT]);
    if (s != SQLITE_DONE) {
        rc = hd_store_sqlerr(c->db, s, "tar index: commit");
        goto rollback;
    }
    goto out;
rollback:
    sqlite3_step(c->q[Q_ROLLBACK]);
    sqlite3_reset(c->q[Q_ROLLBACK]);
out:
    sqlite3_finalize(del);
    sqlite3_finalize(ins);
    sqlite3_finalize(idx);
    hd_store_conn_put(mp, c);
    return rc;
}

int hd_store_tar_member(struct hd_store *st, const struct hd_obj_meta *m, const char *member,
                        uint64_t *off, uint64_t *size)
{
    const char *rel;
    struct mountpath *mp = locate(st, m, &rel);
    struct conn *c;
    sqlite3_stmt *q;
    int rc, s;

    if (!mp)
        return HD_EINTERNAL;
    if ((rc = hd_store_conn_get(mp, &c)) < 0)
        return rc;
    q = c->q[Q_TAR_MEMBER];
    sqlite3_bind_text(q, 1, rel, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, member, -1, SQLITE_STATIC);
    s = sqlite3_step(q);
    if (s == SQLITE_ROW) {
        *off = (uint64_t)sqlite3_column_int64(q, 0);
        *size = (uint64_t)sqlite3_column_int64(q, 1);
        rc = 0;
    } else if (s == SQLITE_DONE) {
        rc = HD_ENOSUCHMEMBER;
    } else {
        rc = hd_store_sqlerr(c->db, s, "tar member");
    }
    hd_store_conn_put(mp, c);
    return rc;
}

int hd_store_tar_list(struct hd_store *st, const struct hd_obj_meta *m, hd_store_tar_fn fn,
                      void *arg)
{
    const char *rel;
    struct mountpath *mp = locate(st, m, &rel);
    struct conn *c;
    sqlite3_stmt *q;
    int rc = 0, s;

    if (!mp)
        return HD_EINTERNAL;
    if ((rc = hd_store_conn_get(mp, &c)) < 0)
        return rc;
    q = c->q[Q_TAR_LIST];
    sqlite3_bind_text(q, 1, rel, -1, SQLITE_STATIC);
    while ((s = sqlite3_step(q)) == SQLITE_ROW) {
        const unsigned char *name = sqlite3_column_text(q, 0);
        rc = fn(arg, name ? (const char *)name : "", (uint64_t)sqlite3_column_int64(q, 1),
                (uint64_t)sqlite3_column_int64(q, 2));
        if (rc != 0)
            break;
    }
    if (rc == 0 && s != SQLITE_DONE)
        rc = hd_store_sqlerr(c->db, s, "tar members");
    hd_store_conn_put(mp, c);
    return rc;
}
