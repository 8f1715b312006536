#include "target/store/store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "common/bprops.h"
#include "common/buf.h"
#include "common/cksum.h"
#include "common/errors.h"
#include "common/hrw.h"
#include "common/httputil.h"
#include "common/log.h"
#include "common/policy.h"
#include "target/store/int.h"

/* Temp files are never committed after a restart: whatever is in tmp/ is a PUT that did not
 * finish (crash, kill -9), so removing it is the whole of crash recovery for writes. */
static void clear_tmp(const char *mp)
{
    char dir[PATH_MAX], f[PATH_MAX];
    DIR *d;
    struct dirent *e;
    int n = 0;

    snprintf(dir, sizeof(dir), "%s/tmp", mp);
    d = opendir(dir);
    if (!d)
        return;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (snprintf(f, sizeof(f), "%s/%s", dir, e->d_name) >= (int)sizeof(f))
            continue;
        if (unlink(f) == 0)
            n++;
    }
    closedir(d);
    if (n)
        HD_LOG(HD_INFO, NULL, "mountpath %s: removed %d unfinished PUT temp file(s)", mp, n);
}

/* What is kept parsed beside the bucket array (caller holds bmu for writing). */
static void free_parsed(struct hd_store *st)
{
    size_t i;

    for (i = 0; st->bx && i < st->nbuckets; i++) {
        json_decref(st->bx[i].lc);
        json_decref(st->bx[i].public_keys);
    }
    free(st->bx);
    st->bx = NULL;
}

/* nlifecycle from the bucket array as it is (caller holds bmu for writing). */
static void count_lifecycles(struct hd_store *st)
{
    size_t i;
    int n = 0;

    for (i = 0; i < st->nbuckets; i++)
        n += st->buckets[i].has_lifecycle;
    atomic_store(&st->nlifecycle, n);
}

static int load_buckets(struct hd_store *st)
{
    sqlite3_stmt *s;
    int rc;

    rc = sqlite3_prepare_v2(
        st->node, "SELECT name, provider, created, props FROM buckets ORDER BY name", -1, &s, NULL);
    if (rc != SQLITE_OK)
        return hd_store_sqlerr(st->node, rc, "load buckets");
    free_parsed(st);
    free(st->buckets);
    st->buckets = NULL;
    st->nbuckets = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        struct hd_bucket_info *n = realloc(st->buckets, (st->nbuckets + 1) * sizeof(*n));
        struct bucket_parsed *bx = n ? realloc(st->bx, (st->nbuckets + 1) * sizeof(*bx)) : NULL;
        if (n)
            st->buckets = n;
        if (bx)
            st->bx = bx;
        if (!n || !bx) {
            sqlite3_finalize(s);
            count_lifecycles(st);
            return -ENOMEM;
        }
        memset(&st->bx[st->nbuckets], 0, sizeof(st->bx[0]));
        n = &st->buckets[st->nbuckets++];
        memset(n, 0, sizeof(*n));
        snprintf(n->name, sizeof(n->name), "%s", (const char *)sqlite3_column_text(s, 0));
        snprintf(n->provider, sizeof(n->provider), "%s", (const char *)sqlite3_column_text(s, 1));
        n->created = sqlite3_column_int64(s, 2);
        if (sqlite3_column_text(s, 3)) {
            json_t *j = json_loads((const char *)sqlite3_column_text(s, 3), 0, NULL);
            n->anonymous_read = j && json_is_true(json_object_get(j, "anonymous_read"));
            struct hd_bprops_access acc;
            hd_bprops_access(n->name, j, &acc);
            n->public_objects = acc.objects;
            n->public_list = acc.list;
            n->tls_only = acc.tls_only;
            n->has_lifecycle = j && json_object_get(j, "lifecycle") != NULL;
            st->bx[st->nbuckets - 1].lc = json_incref(json_object_get(j, "lifecycle"));
            st->bx[st->nbuckets - 1].public_keys = acc.keys;
            json_decref(j);
        }
    }
    sqlite3_finalize(s);
    count_lifecycles(st);
    return rc == SQLITE_DONE ? 0 : hd_store_sqlerr(st->node, rc, "load buckets");
}

int hd_store_open(const struct hd_store_cfg *cfg, struct hd_store **out)
{
    struct hd_store *st;
    char path[PATH_MAX];
    size_t i;
    int rc;
    struct conn *c;

    if (cfg->nmp == 0 || cfg->nmp > MAX_MP)
        return -EINVAL;
    st = calloc(1, sizeof(*st));
    if (!st)
        return -ENOMEM;
    pthread_rwlock_init(&st->bmu, NULL);
    pthread_mutex_init(&st->amu, NULL);
    pthread_mutex_init(&st->fmu, NULL);
    st->fsync = cfg->fsync;
    st->capacity = cfg->capacity;
    if ((rc = hd_mcache_new(cfg->meta_cache, cfg->open_files, &st->mc)) < 0)
        goto fail;
    {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN); /* MD5 is CPU work: two per core at most */
        if ((rc = hd_pool_new(ncpu > 0 ? (int)ncpu * 2 : 2, &st->hash_pool)) < 0)
            goto fail;
    }
    st->oos_pct = cfg->oos_pct > 0 && cfg->oos_pct <= 100 ? cfg->oos_pct : 100;
    st->data_dir = strdup(cfg->data_dir);
    if (!st->data_dir) {
        rc = -ENOMEM;
        goto fail;
    }
    if ((rc = hd_store_mkdir_p(cfg->data_dir)) < 0) {
        HD_LOG(HD_ERROR, NULL, "data dir %s: %s", cfg->data_dir, hd_strerror(rc));
        goto fail;
    }
    for (i = 0; i < cfg->nmp; i++) {
        struct mountpath *mp = &st->mp[i];
        char real[PATH_MAX];
        if ((rc = hd_store_mkdir_p(cfg->mountpaths[i])) < 0) {
            HD_LOG(HD_ERROR, NULL, "mountpath %s: %s", cfg->mountpaths[i], hd_strerror(rc));
            goto fail;
        }
        if (!realpath(cfg->mountpaths[i], real)) {
            rc = -errno;
            goto fail;
        }
        mp->path = strdup(real);
        mp->dirfd = open(real, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (!mp->path || mp->dirfd < 0) {
            rc = mp->path ? -errno : -ENOMEM;
            free(mp->path);
            mp->path = NULL;
            goto fail;
        }
        pthread_mutex_init(&mp->mu, NULL);
        pthread_mutex_init(&mp->gmu, NULL);
        pthread_cond_init(&mp->gcv, NULL);
        mp->gtail = &mp->gq;
        st->nmp++;
        mp->digest = hd_hrw_digest(mp->path, strlen(mp->path));
        st->mp_digest[i] = mp->digest;
        snprintf(path, sizeof(path), "%s/tmp", mp->path);
        if ((rc = hd_store_mkdir_p(path)) < 0)
            goto fail;
        snprintf(path, sizeof(path), "%s/objs", mp->path);
        if ((rc = hd_store_mkdir_p(path)) < 0)
            goto fail;
        clear_tmp(mp->path);
        if ((rc = hd_store_conn_get(mp, &c)) < 0) /* creates the schema */
            goto fail;
        rc = sqlite3_exec(c->db, usage_init, NULL, NULL, NULL);
        hd_store_conn_put(mp, c);
        if (rc != SQLITE_OK) {
            rc = HD_EINTERNAL;
            HD_LOG(HD_ERROR, NULL, "mountpath %s: cannot set up the usage row", mp->path);
            goto fail;
        }
    }
    snprintf(path, sizeof(path), "%s/node.db", cfg->data_dir);
    rc = sqlite3_open_v2(path, &st->node,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL);
    if (rc != SQLITE_OK) {
        rc = hd_store_sqlerr(st->node, rc, "open node.db");
        goto fail;
    }
    sqlite3_busy_timeout(st->node, 10000);
    rc = sqlite3_exec(st->node,
                      "PRAGMA journal_mode = WAL;"
                      "CREATE TABLE IF NOT EXISTS buckets(name TEXT PRIMARY KEY, provider TEXT "
                      "NOT NULL, created INTEGER NOT NULL, props TEXT);",
                      NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        rc = hd_store_sqlerr(st->node, rc, "node.db schema");
        goto fail;
    }
    if ((rc = load_buckets(st)) < 0)
        goto fail;
    *out = st;
    return 0;
fail:
    hd_store_close(st);
    return rc;
}

void hd_store_close(struct hd_store *st)
{
    size_t i;

    if (!st)
        return;
    for (i = 0; i < st->nmp; i++) {
        hd_store_conns_close(&st->mp[i]);
        pthread_mutex_destroy(&st->mp[i].mu);
        pthread_mutex_destroy(&st->mp[i].gmu);
        pthread_cond_destroy(&st->mp[i].gcv);
        free(st->mp[i].path);
        close(st->mp[i].dirfd);
    }
    hd_mcache_free(st->mc);
    hd_pool_free(st->hash_pool);
    sqlite3_close(st->node);
    hd_store_atime_free(st);
    pthread_mutex_destroy(&st->amu);
    pthread_mutex_destroy(&st->fmu);
    pthread_rwlock_destroy(&st->bmu);
    free_parsed(st);
    free(st->buckets);
    free(st->data_dir);
    free(st);
}

/* ---- buckets ---- */

static int bucket_find(struct hd_store *st, const char *name)
{
    size_t i;

    for (i = 0; i < st->nbuckets; i++)
        if (strcmp(st->buckets[i].name, name) == 0)
            return (int)i;
    return -1;
}

static int node_exec(struct hd_store *st, const char *sql, const char *a, const char *b, int64_t n);

int hd_store_bucket_get(struct hd_store *st, const char *name, struct hd_bucket_info *out)
{
    int i;

    pthread_rwlock_rdlock(&st->bmu);
    i = bucket_find(st, name);
    if (i >= 0)
        *out = st->buckets[i];
    pthread_rwlock_unlock(&st->bmu);
    return i < 0 ? HD_ENOSUCHBUCKET : 0;
}

int hd_store_bucket_set_props(struct hd_store *st, const char *name, const char *json)
{
    struct hd_bprops bp;
    char *out;
    int rc;

    if (!json || !*json || hd_bprops_parse(json, &bp, NULL, 0) < 0)
        return HD_EBADARG;
    out = hd_bprops_dump_from(&bp, json);
    if (!out)
        return -ENOMEM;
    pthread_rwlock_wrlock(&st->bmu);
    if (bucket_find(st, name) < 0) {
        rc = HD_ENOSUCHBUCKET;
    } else {
        rc = node_exec(st, "UPDATE buckets SET props = ?2 WHERE name = ?1", name, out, 0);
        if (rc == 0)
            rc = load_buckets(st);
    }
    pthread_rwlock_unlock(&st->bmu);
    free(out);
    return rc;
}

/* The props column of bucket name into *out (malloc'd; NULL for none). bmu held. */
static int props_read(struct hd_store *st, const char *name, char **out)
{
    sqlite3_stmt *q = NULL;
    int rc, s;

    *out = NULL;
    if (bucket_find(st, name) < 0)
        return HD_ENOSUCHBUCKET;
    s = sqlite3_prepare_v2(st->node, "SELECT props FROM buckets WHERE name = ?1", -1, &q, NULL);
    if (s != SQLITE_OK) {
        rc = hd_store_sqlerr(st->node, s, "bucket props");
        goto out;
    }
    sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
    rc = 0;
    if ((s = sqlite3_step(q)) == SQLITE_ROW && sqlite3_column_text(q, 0) &&
        !(*out = hd_store_col_dup(q, 0)))
        rc = -ENOMEM;
    else if (s != SQLITE_ROW && s != SQLITE_DONE)
        rc = hd_store_sqlerr(st->node, s, "bucket props");
out:
    sqlite3_finalize(q);
    return rc;
}

int hd_store_bucket_props(struct hd_store *st, const char *name, char **out)
{
    int rc;

    pthread_rwlock_rdlock(&st->bmu);
    rc = props_read(st, name, out);
    pthread_rwlock_unlock(&st->bmu);
    return rc;
}

int hd_store_bucket_patch_props(struct hd_store *st, const char *name, const char *patch, char *msg,
                                size_t msglen)
{
    char *cur = NULL, *out = NULL;
    int rc;

    pthread_rwlock_wrlock(&st->bmu); /* the read, the merge and the write as one step */
    if ((rc = props_read(st, name, &cur)) == 0 &&
        (rc = hd_bprops_merge(cur, patch, &out, msg, msglen)) == 0 &&
        (rc = node_exec(st, "UPDATE buckets SET props = ?2 WHERE name = ?1", name, out, 0)) == 0)
        rc = load_buckets(st);
    pthread_rwlock_unlock(&st->bmu);
    free(cur);
    free(out);
    return rc;
}

int hd_store_lifecycle_buckets(struct hd_store *st)
{
    return atomic_load(&st->nlifecycle);
}

int hd_store_with_lifecycle(struct hd_store *st, const char *name,
                            int (*fn)(const json_t *rules, void *arg), void *arg)
{
    int i, rc = 0;

    pthread_rwlock_rdlock(&st->bmu); /* the rules are freed only under the write lock */
    if ((i = bucket_find(st, name)) >= 0 && st->bx && st->bx[i].lc)
        rc = fn(st->bx[i].lc, arg);
    pthread_rwlock_unlock(&st->bmu);
    return rc;
}

int hd_store_bucket_key_public(struct hd_store *st, const char *name, const char *key)
{
    int i, yes = 0;

    pthread_rwlock_rdlock(&st->bmu); /* the patterns are freed only under the write lock */
    if ((i = bucket_find(st, name)) >= 0 && st->bx)
        yes = hd_policy_patterns_match(st->bx[i].public_keys, key);
    pthread_rwlock_unlock(&st->bmu);
    return yes;
}

int hd_store_bucket_exists(struct hd_store *st, const char *name)
{
    int i;

    pthread_rwlock_rdlock(&st->bmu);
    i = bucket_find(st, name);
    pthread_rwlock_unlock(&st->bmu);
    return i < 0 ? HD_ENOSUCHBUCKET : 0;
}

static int node_exec(struct hd_store *st, const char *sql, const char *a, const char *b, int64_t n)
{
    sqlite3_stmt *s;
    int rc = sqlite3_prepare_v2(st->node, sql, -1, &s, NULL);

    if (rc != SQLITE_OK)
        return hd_store_sqlerr(st->node, rc, sql);
    sqlite3_bind_text(s, 1, a, -1, SQLITE_STATIC);
    if (b)
        sqlite3_bind_text(s, 2, b, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, n);
    rc = sqlite3_step(s);
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : hd_store_sqlerr(st->node, rc, sql);
}

int hd_store_bucket_create(struct hd_store *st, const char *name, const char *provider)
{
    int rc;

    if (strlen(name) >= sizeof(st->buckets[0].name))
        return HD_EBADBUCKETNAME;
    pthread_rwlock_wrlock(&st->bmu);
    if (bucket_find(st, name) >= 0) {
        rc = HD_EBUCKETEXISTS;
        goto out;
    }
    rc = node_exec(st, "INSERT INTO buckets(name, provider, created) VALUES(?1, ?2, ?3)", name,
                   provider, (int64_t)time(NULL));
    if (rc == 0)
        rc = load_buckets(st);
out:
    pthread_rwlock_unlock(&st->bmu);
    return rc;
}

static int bucket_empty(struct hd_store *st, const char *name)
{
    size_t i;
    int rc = 0;

    for (i = 0; i < st->nmp && rc == 0; i++) {
        struct conn *c;
        sqlite3_stmt *q;
        if ((rc = hd_store_conn_get(&st->mp[i], &c)) < 0)
            break;
        q = c->q[Q_ANY];
        sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
        int s = sqlite3_step(q);
        if (s == SQLITE_ROW)
            rc = HD_EBUCKETNOTEMPTY;
        else if (s != SQLITE_DONE)
            rc = hd_store_sqlerr(c->db, s, "bucket empty check");
        hd_store_conn_put(&st->mp[i], c);
    }
    return rc;
}

int hd_store_bucket_delete(struct hd_store *st, const char *name)
{
    int rc;

    pthread_rwlock_wrlock(&st->bmu);
    if (bucket_find(st, name) < 0) {
        rc = HD_ENOSUCHBUCKET;
        goto out;
    }
    if ((rc = bucket_empty(st, name)) < 0)
        goto out;
    hd_store_fence_cancel(st, name, NULL, NULL, 0); /* a late Complete's copy must not land */
    rc = node_exec(st, "DELETE FROM buckets WHERE name = ?1", name, NULL, 0);
    if (rc == 0)
        rc = load_buckets(st);
out:
    pthread_rwlock_unlock(&st->bmu);
    return rc;
}

int hd_store_bucket_list(struct hd_store *st, struct hd_bucket_info **out, size_t *n)
{
    int rc = 0;

    pthread_rwlock_rdlock(&st->bmu);
    *n = st->nbuckets;
    *out = malloc((st->nbuckets ? st->nbuckets : 1) * sizeof(**out));
    if (!*out)
        rc = -ENOMEM;
    else if (st->nbuckets)
        memcpy(*out, st->buckets, st->nbuckets * sizeof(**out));
    pthread_rwlock_unlock(&st->bmu);
    return rc;
}

/* Removes every catalog row and content file of bucket on one mountpath (cluster BMD
 * apply). Files go after the rows, so a crash leaves unreferenced files, never rows that
 * point at nothing. */
static int drop_objects(struct mountpath *mp, const char *bucket)
{
    struct conn *c;
    sqlite3_stmt *q = NULL;
    char **rels = NULL, **nv;
    size_t n = 0, i;
    int rc, s;

    if ((rc = hd_store_conn_get(mp, &c)) < 0)
        return rc;
    s = sqlite3_prepare_v2(c->db, "SELECT file FROM objects WHERE bucket = ?1", -1, &q, NULL);
    if (s != SQLITE_OK) {
        rc = hd_store_sqlerr(c->db, s, "bucket destroy: list");
        goto out;
    }
    sqlite3_bind_text(q, 1, bucket, -1, SQLITE_STATIC);
    while ((s = sqlite3_step(q)) == SQLITE_ROW) {
        if (n % 256 == 0) {
            nv = realloc(rels, (n + 256) * sizeof(*rels));
            if (!nv) {
                rc = -ENOMEM;
                goto out;
            }
            rels = nv;
        }
        if (!(rels[n] = hd_store_col_dup(q, 0))) {
            rc = -ENOMEM;
            goto out;
        }
        n++;
    }
    if (s != SQLITE_DONE) {
        rc = hd_store_sqlerr(c->db, s, "bucket destroy: list");
        goto out;
    }
    sqlite3_finalize(q);
    q = NULL;
    s = sqlite3_prepare_v2(c->db, "DELETE FROM objects WHERE bucket = ?1", -1, &q, NULL);
    if (s == SQLITE_OK) {
        sqlite3_bind_text(q, 1, bucket, -1, SQLITE_STATIC);
        s = sqlite3_step(q);
    }
    if (s != SQLITE_DONE) {
        rc = hd_store_sqlerr(c->db, s, "bucket destroy: delete");
        goto out;
    }
    for (i = 0; i < n; i++)
        hd_store_unlink_rel(mp, rels[i]);
out:
    sqlite3_finalize(q);
    hd_store_conn_put(mp, c);
    for (i = 0; i < n; i++)
        free(rels[i]);
    free(rels);
    return rc;
}

int hd_store_bucket_destroy(struct hd_store *st, const char *name)
{
    size_t i;
    int rc = 0;

    pthread_rwlock_wrlock(&st->bmu);
    if (bucket_find(st, name) < 0) {
        rc = HD_ENOSUCHBUCKET;
        goto out;
    }
    hd_store_fence_cancel(st, name, NULL, NULL, 0);
    for (i = 0; i < st->nmp && rc == 0; i++)
        rc = drop_objects(&st->mp[i], name);
    hd_mcache_drop_all(st->mc);
    if (rc == 0)
        rc = node_exec(st, "DELETE FROM buckets WHERE name = ?1", name, NULL, 0);
    if (rc == 0)
        rc = load_buckets(st);
out:
    pthread_rwlock_unlock(&st->bmu);
    return rc;
}

/* ---- objects ---- */

/* The row, from the row cache or the catalog (its HRW mountpath first, then the others: it
 * may not have moved yet after a mountpath change); a row read from the catalog is cached.
 * *mpi and *rel (malloc'd) say where its content file is. */
static int find_row(struct hd_store *st, const char *bucket, const char *name,
                    struct hd_obj_meta *m, size_t *mpi, char **rel, int *fd)
{
    struct mountpath *home;
    uint64_t gen;
    size_t i, h;
    int rc;
    char path[PATH_MAX];

    if (fd)
        *fd = -1;
    if (hd_mcache_get(st->mc, bucket, name, m, mpi, rel, fd) == 0) {
        snprintf(path, sizeof(path), "%s/%s", st->mp[*mpi].path, *rel);
        if ((m->path = strdup(path)))
            return 0;
        hd_obj_meta_cleanup(m);
        free(*rel);
        if (fd && *fd >= 0)
            close(*fd);
        return -ENOMEM;
    }
    gen = hd_mcache_gen(st->mc, bucket, name);
    home = hd_store_mp_for(st, bucket, name);
    h = (size_t)(home - st->mp);
    rc = hd_store_row_on(st, h, bucket, name, m, rel);
    *mpi = h;
    for (i = 0; rc == HD_ENOSUCHKEY && i < st->nmp; i++)
        if (i != h && (rc = hd_store_row_on(st, i, bucket, name, m, rel)) == 0)
            *mpi = i;
    if (rc == 0)
        hd_mcache_put(st->mc, bucket, name, *mpi, m, *rel, gen);
    return rc;
}

int hd_store_lookup(struct hd_store *st, const char *bucket, const char *name,
                    struct hd_obj_meta *m)
{
    char *rel = NULL;
    size_t mpi;
    int rc = find_row(st, bucket, name, m, &mpi, &rel, NULL);

    free(rel);
    return rc;
}

static int open_object(struct hd_store *st, const char *bucket, const char *name,
                       struct hd_obj_meta *m, int *fd, int shared)
{
    char *rel = NULL;
    size_t mpi;
    int rc, tries;

    for (tries = 0; tries < 3; tries++) {
        if ((rc = find_row(st, bucket, name, m, &mpi, &rel, shared ? fd : NULL)) < 0)
            return rc;
        if (shared && *fd >= 0) {
            if (m->size <= HD_STORE_SHARED_MAX) { /* the row cache's descriptor, duplicated */
                free(rel);
                return 0;
            }
            close(*fd); /* a large object gets a description of its own (sendfile) */
        }
        /* relative to the mountpath's descriptor: a short path walk */
        *fd = openat(st->mp[mpi].dirfd, rel, O_RDONLY | O_CLOEXEC);
        rc = *fd < 0 ? -errno : 0;
        if (rc == 0)
            hd_mcache_keep_fd(st->mc, bucket, name, rel, *fd);
        free(rel);
        rel = NULL;
        if (rc == 0)
            return 0;
        hd_obj_meta_cleanup(m);
        if (rc != -ENOENT)
            return rc;
        /* replaced or deleted since the row was read (cached or not): read it again */
        hd_mcache_drop(st->mc, bucket, name);
    }
    HD_LOG(HD_ERROR, NULL, "object %s/%s: catalog row without content file", bucket, name);
    return HD_EINTERNAL;
}

int hd_store_open_object(struct hd_store *st, const char *bucket, const char *name,
                         struct hd_obj_meta *m, int *fd)
{
    return open_object(st, bucket, name, m, fd, 0);
}

int hd_store_open_object_shared(struct hd_store *st, const char *bucket, const char *name,
                                struct hd_obj_meta *m, int *fd)
{
    return open_object(st, bucket, name, m, fd, 1);
}

/* Runs `fn` inside BEGIN IMMEDIATE on the object's catalog, returning the previous content
 * file (relative path, malloc'd) so the caller can unlink it after COMMIT. */
static int swap_row(struct conn *c, const char *bucket, const char *name,
                    int (*fn)(struct conn *c, void *arg), void *arg, char **old)
{
    sqlite3_stmt *q;
    int s, rc;

    *old = NULL;
    s = sqlite3_step(c->q[Q_BEGIN]);
    sqlite3_reset(c->q[Q_BEGIN]);
    if (s != SQLITE_DONE)
        return hd_store_sqlerr(c->db, s, "begin");
    q = c->q[Q_FILE];
    sqlite3_bind_text(q, 1, bucket, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, name, -1, SQLITE_STATIC);
    s = sqlite3_step(q);
    if (s == SQLITE_ROW)
        *old = hd_store_col_dup(q, 0);
    sqlite3_reset(q);
    if (s != SQLITE_ROW && s != SQLITE_DONE) {
        rc = hd_store_sqlerr(c->db, s, "select file");
        goto rollback;
    }
    if ((rc = fn(c, arg)) < 0)
        goto rollback;
    s = sqlite3_step(c->q[Q_COMMIT]);
    sqlite3_reset(c->q[Q_COMMIT]);
    if (s != SQLITE_DONE) {
        rc = hd_store_sqlerr(c->db, s, "commit");
        goto rollback;
    }
    return 0;
rollback:
    sqlite3_step(c->q[Q_ROLLBACK]);
    sqlite3_reset(c->q[Q_ROLLBACK]);
    free(*old);
    *old = NULL;
    return rc;
}

struct del_arg {
    const char *bucket, *name;
    int found;
    int keep_dirty; /* eviction: a dirty object stays (HD_EPRECONDITION) */
    int queue;      /* write-back delete: queue the upstream delete here */
};

static int do_delete(struct conn *c, void *arg)
{
    struct del_arg *a = arg;
    sqlite3_stmt *q = c->q[Q_DELETE];
    int s, rc;

    if (a->keep_dirty && (rc = hd_store_wb_has(c, a->bucket, a->name)) != 0)
        return rc > 0 ? HD_EPRECONDITION : rc;
    if ((rc = hd_store_wb_requeue(c, a->bucket, a->name, a->queue ? HD_WB_DELETE : -1, NULL, 0,
                                  NULL)) < 0)
        return rc;
    sqlite3_bind_text(q, 1, a->bucket, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, a->name, -1, SQLITE_STATIC);
    s = sqlite3_step(q);
    sqlite3_reset(q);
    if (s != SQLITE_DONE)
        return hd_store_sqlerr(c->db, s, "delete");
    a->found = sqlite3_changes(c->db) > 0;
    return 0;
}

static int delete_on(struct mountpath *mp, const char *bucket, const char *name, int *found,
                     int keep_dirty, int queue)
{
    struct del_arg a = {bucket, name, 0, keep_dirty, queue};
    struct conn *c;
    char *old = NULL;
    int rc;

    if ((rc = hd_store_conn_get(mp, &c)) < 0)
        return rc;
    rc = swap_row(c, bucket, name, do_delete, &a, &old);
    hd_store_conn_put(mp, c);
    if (rc < 0)
        return rc;
    if (old) {
        hd_store_unlink_rel(mp, old);
        free(old);
    }
    *found |= a.found;
    return 0;
}

static int delete_all(struct hd_store *st, const char *bucket, const char *name, int keep_dirty,
                      int queue, const struct hd_store_fence *own)
{
    struct mountpath *home = hd_store_mp_for(st, bucket, name);
    int found = 0, rc;
    size_t i;

    hd_store_fence_cancel(st, bucket, name, own, 0);
    rc = delete_on(home, bucket, name, &found, keep_dirty, queue);
    /* a copy left on another mountpath by a mountpath change must not resurface */
    for (i = 0; rc == 0 && i < st->nmp; i++)
        if (&st->mp[i] != home)
            rc = delete_on(&st->mp[i], bucket, name, &found, keep_dirty, 0);
    hd_mcache_drop(st->mc, bucket, name);
    if (rc < 0)
        return rc;
    return found ? 0 : HD_ENOSUCHKEY;
}

int hd_store_delete(struct hd_store *st, const char *bucket, const char *name)
{
    return delete_all(st, bucket, name, 0, 0, NULL);
}

int hd_store_evict(struct hd_store *st, const char *bucket, const char *name)
{
    return delete_all(st, bucket, name, 1, 0, NULL);
}

int hd_store_delete_fenced(struct hd_store *st, const char *bucket, const char *name,
                           const struct hd_store_fence *own)
{
    return delete_all(st, bucket, name, 0, 0, own);
}

int hd_store_wb_delete(struct hd_store *st, const char *bucket, const char *name)
{
    int rc = delete_all(st, bucket, name, 0, 1, NULL);

    return rc == HD_ENOSUCHKEY ? 0 : rc;
}

/* One mountpath's row of bucket/name, its column col ("hdrs" or "meta") replaced by
 * edit(old) in one transaction: 0, HD_ENOSUCHKEY (no row there), or edit's error (nothing
 * changed). */
static int update_col_on(struct mountpath *mp, const char *col, const char *bucket,
                         const char *name, hd_store_hdrs_fn edit, void *arg)
{
    char sel[96], upd[96];
    sqlite3_stmt *qs = NULL, *qu = NULL;
    struct conn *c;
    char *old = NULL, *neu = NULL;
    int rc, s, began = 0;

    snprintf(sel, sizeof(sel), "SELECT %s FROM objects WHERE bucket = ?1 AND name = ?2", col);
    snprintf(upd, sizeof(upd), "UPDATE objects SET %s = ?3 WHERE bucket = ?1 AND name = ?2", col);
    if ((rc = hd_store_conn_get(mp, &c)) < 0)
        return rc;
    if ((s = sqlite3_prepare_v2(c->db, sel, -1, &qs, NULL)) != SQLITE_OK ||
        (s = sqlite3_prepare_v2(c->db, upd, -1, &qu, NULL)) != SQLITE_OK) {
        rc = hd_store_sqlerr(c->db, s, "update metadata");
        goto out;
    }
    /* BEGIN IMMEDIATE: the read and the write are one step among the commits of the catalog,
     * so a row replaced or deleted meanwhile is never written from its old self */
    s = sqlite3_step(c->q[Q_BEGIN]);
    sqlite3_reset(c->q[Q_BEGIN]);
    if (s != SQLITE_DONE) {
        rc = hd_store_sqlerr(c->db, s, "begin");
        goto out;
    }
    began = 1;
    sqlite3_bind_text(qs, 1, bucket, -1, SQLITE_STATIC);
    sqlite3_bind_text(qs, 2, name, -1, SQLITE_STATIC);
    s = sqlite3_step(qs);
    if (s == SQLITE_DONE) {
        rc = HD_ENOSUCHKEY;
        goto out;
    }
    if (s != SQLITE_ROW) {
        rc = hd_store_sqlerr(c->db, s, "select metadata");
        goto out;
    }
    old = hd_store_col_dup(qs, 0);
    if (!old && sqlite3_column_type(qs, 0) != SQLITE_NULL) {
        rc = -ENOMEM;
        goto out;
    }
    if ((rc = edit(old, &neu, arg)) < 0)
        goto out;
    sqlite3_bind_text(qu, 1, bucket, -1, SQLITE_STATIC);
    sqlite3_bind_text(qu, 2, name, -1, SQLITE_STATIC);
    if (neu)
        sqlite3_bind_text(qu, 3, neu, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(qu, 3);
    if ((s = sqlite3_step(qu)) != SQLITE_DONE) {
        rc = hd_store_sqlerr(c->db, s, "update metadata");
        goto out;
    }
    s = sqlite3_step(c->q[Q_COMMIT]);
    sqlite3_reset(c->q[Q_COMMIT]);
    if (s != SQLITE_DONE)
        rc = hd_store_sqlerr(c->db, s, "commit");
    else
        began = 0;
out:
    if (began) {
        sqlite3_step(c->q[Q_ROLLBACK]);
        sqlite3_reset(c->q[Q_ROLLBACK]);
    }
    sqlite3_finalize(qs);
    sqlite3_finalize(qu);
    hd_store_conn_put(mp, c);
    free(old);
    free(neu);
    return rc;
}

static int update_col(struct hd_store *st, const char *col, const char *bucket, const char *name,
                      hd_store_hdrs_fn edit, void *arg)
{
    struct mountpath *home = hd_store_mp_for(st, bucket, name);
    int rc = update_col_on(home, col, bucket, name, edit, arg);
    size_t i;

    /* where a lookup finds it: its home mountpath first, then one it has not left yet */
    for (i = 0; rc == HD_ENOSUCHKEY && i < st->nmp; i++)
        if (&st->mp[i] != home)
            rc = update_col_on(&st->mp[i], col, bucket, name, edit, arg);
    if (rc == 0)
        hd_mcache_drop(st->mc, bucket, name);
    return rc;
}

int hd_store_update_hdrs(struct hd_store *st, const char *bucket, const char *name,
                         hd_store_hdrs_fn edit, void *arg)
{
    return update_col(st, "hdrs", bucket, name, edit, arg);
}

int hd_store_update_meta(struct hd_store *st, const char *bucket, const char *name,
                         hd_store_hdrs_fn edit, void *arg)
{
    return update_col(st, "meta", bucket, name, edit, arg);
}

int hd_put_begin(struct hd_store *st, const char *bucket, const char *name, struct hd_put **out)
{
    return hd_put_begin_sized(st, bucket, name, 0, out);
}

static int put_begin(struct hd_store *st, const char *bucket, const char *name, uint64_t size,
                     int marked, struct hd_put **out)
{
    struct hd_put *p;
    char id[33];
    int rc;
    char xattr[2048];
    int n;

    if ((rc = hd_store_random_hex(id, 16)) < 0)
        return rc;
    p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->fd = -1;
    p->st = st;
    p->mp = hd_store_mp_for(st, bucket, name);
    p->room = UINT64_MAX;
    if (marked && (rc = hd_store_room(st, p->mp, size, &p->room)) < 0)
        goto fail;
    p->bucket = strdup(bucket);
    p->name = strdup(name);
    p->wbuf = malloc(WBUF);
    if (!p->bucket || !p->name || !p->wbuf) {
        rc = -ENOMEM;
        goto fail;
    }
    hd_md5_init(&p->md5);
    if (size >= HPIPE_MIN && st->hash_pool &&
        (rc = hd_hpipe_new(st->hash_pool, &p->md5, p->wbuf, (size_t)WBUF, &p->hp)) < 0)
        goto fail;
    snprintf(p->rel, sizeof(p->rel), "objs/%.2s/%.2s/%s", id, id + 2, id);
    snprintf(p->tmp, sizeof(p->tmp), "%s/tmp/%s", p->mp->path, id);
    p->fd = open(p->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (p->fd < 0) {
        rc = -errno;
        HD_LOG(HD_ERROR, NULL, "put %s/%s: create %s: %s", bucket, name, p->tmp, strerror(-rc));
        goto fail;
    }
    /* Name beside the content, so a lost catalog can be rebuilt by a scan. Best effort:
     * not every filesystem has user xattrs. */
    n = snprintf(xattr, sizeof(xattr), "%s\n%s", bucket, name);
    if (n > 0 && (size_t)n < sizeof(xattr))
        (void)fsetxattr(p->fd, "user.hoard.name", xattr, (size_t)n, 0);
    *out = p;
    return 0;
fail:
    hd_put_free(p);
    return rc;
}

int hd_put_begin_sized(struct hd_store *st, const char *bucket, const char *name, uint64_t size,
                       struct hd_put **out)
{
    return put_begin(st, bucket, name, size, 1, out);
}

int hd_put_begin_pass(struct hd_store *st, const char *bucket, const char *name,
                      struct hd_put **out)
{
    return put_begin(st, bucket, name, 0, 0, out);
}

void hd_put_lift_mark(struct hd_put *p)
{
    p->room = UINT64_MAX;
}

static int write_all(int fd, const char *b, size_t len)
{
    size_t off = 0;

    while (off < len) {
        ssize_t w = write(fd, b + off, len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        off += (size_t)w;
    }
    return 0;
}

/* Writes n bytes to the temp file. With fsync on, every WB_STEP written also starts their
 * disk writes without waiting (SYNC_FILE_RANGE_WRITE), so the disk works while the next bytes
 * arrive and the fsync at the commit finds most of a large body written already. */
static int put_out(struct hd_put *p, const char *b, size_t n)
{
    int rc = write_all(p->fd, b, n);

    if (rc < 0)
        return rc;
    p->written += n;
    if (p->st->fsync && p->written - p->wb_from >= WB_STEP) {
        (void)sync_file_range(p->fd, (off64_t)p->wb_from, (off64_t)(p->written - p->wb_from),
                              SYNC_FILE_RANGE_WRITE); /* a hint: the fsync still decides */
        p->wb_from = p->written;
    }
    return 0;
}

/* Writes the buffered bytes. With a hash pipe they go to the MD5 on the hash pool first, so
 * the hash runs while this thread writes them and fills the next buffer (the pipe only reads
 * a buffer, and gives it back no earlier than the next push). */
static int flush_wbuf(struct hd_put *p)
{
    const char *b = p->wbuf;
    size_t n = p->wlen;

    if (n == 0)
        return 0;
    if (p->hp) {
        char *next = hd_hpipe_push(p->hp, p->wbuf, n);
        if (!next)
            return -ENOMEM;
        p->wbuf = next;
    }
    p->wlen = 0;
    return put_out(p, b, n);
}

int hd_put_write(struct hd_put *p, const void *data, size_t len)
{
    const char *d = data;
    int rc;

    if (p->size + len > p->room)
        return -ENOSPC; /* the mountpath would pass its out-of-space mark */
    if (!p->no_md5 && !p->hp)
        hd_md5_update(&p->md5, data, len);
    p->size += len;
    if (!p->hp && p->wlen == 0 && len >= (size_t)WBUF) /* a buffer's worth or more: no copy */
        return put_out(p, d, len);
    while (len) {
        size_t n = WBUF - p->wlen;
        if (n > len)
            n = len;
        memcpy(p->wbuf + p->wlen, d, n);
        p->wlen += n;
        d += n;
        len -= n;
        if (p->wlen == WBUF && (rc = flush_wbuf(p)) < 0)
            return rc;
    }
    return 0;
}

void hd_put_skip_md5(struct hd_put *p)
{
    if (p->size == 0) {
        p->no_md5 = 1;
        hd_hpipe_free(p->hp, p->wbuf); /* nothing pushed yet */
        p->hp = NULL;
    }
}

void hd_put_md5_inline(struct hd_put *p)
{
    if (p->size == 0 && p->hp) {
        hd_hpipe_free(p->hp, p->wbuf); /* nothing pushed yet */
        p->hp = NULL;
    }
}

int hd_put_flush(struct hd_put *p)
{
    return flush_wbuf(p);
}

uint64_t hd_put_flushed(const struct hd_put *p)
{
    return p->size - p->wlen;
}

const char *hd_put_tmp_path(const struct hd_put *p)
{
    return p->tmp;
}

uint64_t hd_put_size(const struct hd_put *p)
{
    return p->size;
}

const char *hd_put_bucket(const struct hd_put *p)
{
    return p->bucket;
}

const char *hd_put_name(const struct hd_put *p)
{
    return p->name;
}

void hd_put_md5(struct hd_put *p, unsigned char out[16])
{
    if (!p->md5_done && p->hp) { /* the rest to the pipe, then wait for it */
        if (flush_wbuf(p) < 0)
            memset(p->digest, 0, sizeof(p->digest)); /* the put fails at its commit */
        hd_hpipe_drain(p->hp);
    }
    if (!p->md5_done) {
        hd_md5_final(&p->md5, p->digest);
        p->md5_done = 1;
    }
    memcpy(out, p->digest, 16);
}

struct upsert_arg {
    struct hd_put *p;
    const struct hd_put_attrs *a;
    const char *etag;
    int64_t mtime;
};

static int do_upsert(struct conn *c, void *arg)
{
    struct upsert_arg *u = arg;
    const struct hd_put_attrs *a = u->a;
    sqlite3_stmt *q = c->q[Q_UPSERT];
    int s;

    if (a && (a->keep_newer || a->if_match || a->if_none_match)) {
        sqlite3_stmt *l = c->q[Q_LOOKUP];
        int64_t have = -1;
        char etag[48] = "";
        sqlite3_bind_text(l, 1, u->p->bucket, -1, SQLITE_STATIC);
        sqlite3_bind_text(l, 2, u->p->name, -1, SQLITE_STATIC);
        if ((s = sqlite3_step(l)) == SQLITE_ROW) {
            have = sqlite3_column_int64(l, 1);
            hd_store_col_copy(l, 2, etag, sizeof(etag));
        }
        sqlite3_reset(l);
        sqlite3_clear_bindings(l);
        if (s != SQLITE_ROW && s != SQLITE_DONE)
            return hd_store_sqlerr(c->db, s, "upsert: lookup");
        if (a->keep_newer && have >= u->mtime)
            return HD_EPRECONDITION;
        if (a->if_none_match && s == SQLITE_ROW)
            return HD_ECONFLICT;
        if (a->if_match) {
            struct hd_cond cond = {.if_match = a->if_match};
            if (hd_cond_eval(&cond, s == SQLITE_ROW ? etag : NULL, 0, 0) < 0)
                return HD_ECONFLICT;
        }
    }
    sqlite3_bind_text(q, 1, u->p->bucket, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, u->p->name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, (sqlite3_int64)u->p->size);
    sqlite3_bind_text(q, 4, u->etag, -1, SQLITE_STATIC);
    if (a && a->ck_type && *a->ck_type) {
        sqlite3_bind_text(q, 5, a->ck_type, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 6, a->ck_val, -1, SQLITE_STATIC);
    } else {
        sqlite3_bind_null(q, 5);
        sqlite3_bind_null(q, 6);
    }
    sqlite3_bind_int64(q, 7, u->mtime);
    if (a && a->ctype)
        sqlite3_bind_text(q, 8, a->ctype, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(q, 8);
    if (a && a->meta)
        sqlite3_bind_text(q, 9, a->meta, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(q, 9);
    sqlite3_bind_text(q, 10, u->p->rel, -1, SQLITE_STATIC);
    if (a && a->hdrs)
        sqlite3_bind_text(q, 11, a->hdrs, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(q, 11);
    if (a && a->parts)
        sqlite3_bind_text(q, 12, a->parts, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(q, 12);
    s = sqlite3_step(q);
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    if (s != SQLITE_DONE)
        return hd_store_sqlerr(c->db, s, "upsert");
    return hd_store_wb_requeue(c, u->p->bucket, u->p->name, a && a->writeback ? HD_WB_PUT : -1,
                               u->p->rel, u->p->size, u->etag);
}

/* Flushes, fsyncs and closes the temp file and renames it to <mountpath>/<rel> (creating
 * the directory on demand); `final` gets the absolute path. */
static int put_place(struct hd_put *p, const char *rel, char final[PATH_MAX])
{
    char dir[PATH_MAX], *slash;
    int rc;

    if ((rc = flush_wbuf(p)) < 0)
        return rc;
    if (p->st->fsync && fsync(p->fd) < 0)
        return -errno;
    rc = close(p->fd);
    p->fd = -1;
    if (rc < 0)
        return -errno;
    if (snprintf(final, PATH_MAX, "%s/%s", p->mp->path, rel) >= PATH_MAX)
        return -ENAMETOOLONG;
    if (rename(p->tmp, final) < 0) {
        if (errno != ENOENT)
            return -errno;
        snprintf(dir, sizeof(dir), "%s", final);
        slash = strrchr(dir, '/');
        *slash = '\0';
        if ((rc = hd_store_mkdir_p(dir)) < 0)
            return rc;
        if (rename(p->tmp, final) < 0)
            return -errno;
    }
    p->tmp[0] = '\0'; /* the content file is now at `final` */
    return 0;
}

int hd_put_commit_file(struct hd_put *p, const char *rel)
{
    char final[PATH_MAX];
    int rc = put_place(p, rel, final);

    if (rc < 0)
        HD_LOG(HD_ERROR, NULL, "put %s/%s: writing %s: %s", p->bucket, p->name, p->mp->path,
               hd_strerror(rc));
    return rc;
}

int hd_put_append_file(struct hd_put *p, int fd, uint64_t len)
{
    off_t in = 0;
    ssize_t n;
    int rc, fallback = 0;

    if (p->size + len > p->room)
        return -ENOSPC;
    if ((rc = flush_wbuf(p)) < 0)
        return rc;
    while (len > 0) {
        size_t want = len > (1u << 30) ? (1u << 30) : (size_t)len;
        if (!fallback) {
            n = copy_file_range(fd, &in, p->fd, NULL, want, 0);
            if (n < 0 &&
                (errno == EXDEV || errno == ENOSYS || errno == EOPNOTSUPP || errno == EINVAL)) {
                fallback = 1; /* filesystem without it: plain copy */
                continue;
            }
        } else {
            n = pread(fd, p->wbuf, want > (size_t)WBUF ? (size_t)WBUF : want, in);
            if (n > 0) {
                if ((rc = write_all(p->fd, p->wbuf, (size_t)n)) < 0)
                    return rc;
                in += n;
            }
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            return -EIO; /* the source is shorter than it should be */
        len -= (uint64_t)n;
        p->size += (uint64_t)n;
        p->written += (uint64_t)n;
    }
    return 0;
}

/* ---- group commit ----
 * Each PUT's row used to be its own BEGIN IMMEDIATE ... COMMIT; with many PUTs finishing
 * together (the disk workers) they queued on SQLite's write lock, whose busy handler sleeps
 * 1, 2, 5 ... ms. Now the first committer of a mountpath becomes the leader and commits its
 * row and every row queued meanwhile in one transaction, each inside a savepoint (so one
 * failing condition undoes only its own row); the others wait for their result. The content
 * files are already fsynced and renamed at that point, as before; a crash before the COMMIT
 * leaves them unreferenced (the scan removes or re-adopts them), never a half row. */
struct gcommit {
    struct upsert_arg *u;
    char *old; /* the replaced content file, on success */
    int rc, done;
    struct gcommit *next;
};

static int exec_sql(struct conn *c, const char *sql)
{
    int s = sqlite3_exec(c->db, sql, NULL, NULL, NULL);

    return s == SQLITE_OK ? 0 : hd_store_sqlerr(c->db, s, sql);
}

/* One row inside the group's transaction: its own savepoint. */
static int group_row(struct conn *c, struct gcommit *g)
{
    sqlite3_stmt *q = c->q[Q_FILE];
    int s, rc;

    if ((rc = exec_sql(c, "SAVEPOINT put")) < 0)
        return rc;
    sqlite3_bind_text(q, 1, g->u->p->bucket, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, g->u->p->name, -1, SQLITE_STATIC);
    s = sqlite3_step(q);
    if (s == SQLITE_ROW)
        g->old = hd_store_col_dup(q, 0);
    sqlite3_reset(q);
    if (s != SQLITE_ROW && s != SQLITE_DONE)
        rc = hd_store_sqlerr(c->db, s, "select file");
    else
        rc = do_upsert(c, g->u);
    if (rc < 0) {
        exec_sql(c, "ROLLBACK TO put");
        free(g->old);
        g->old = NULL;
    }
    exec_sql(c, "RELEASE put");
    return rc;
}

/* Commits the rows of list in one transaction; sets each one's rc. */
static void group_run(struct mountpath *mp, struct gcommit *list)
{
    struct gcommit *g;
    struct conn *c;
    int s, rc;

    if ((rc = hd_store_conn_get(mp, &c)) < 0)
        goto fail;
    s = sqlite3_step(c->q[Q_BEGIN]);
    sqlite3_reset(c->q[Q_BEGIN]);
    if (s != SQLITE_DONE) {
        rc = hd_store_sqlerr(c->db, s, "begin");
        hd_store_conn_put(mp, c);
        goto fail;
    }
    for (g = list; g; g = g->next)
        g->rc = group_row(c, g);
    s = sqlite3_step(c->q[Q_COMMIT]);
    sqlite3_reset(c->q[Q_COMMIT]);
    if (s != SQLITE_DONE) {
        rc = hd_store_sqlerr(c->db, s, "commit");
        sqlite3_step(c->q[Q_ROLLBACK]);
        sqlite3_reset(c->q[Q_ROLLBACK]);
        hd_store_conn_put(mp, c);
        goto fail;
    }
    hd_store_conn_put(mp, c);
    return;
fail:
    for (g = list; g; g = g->next) {
        g->rc = rc;
        free(g->old);
        g->old = NULL;
    }
}

static int group_commit(struct mountpath *mp, struct upsert_arg *u, char **old)
{
    struct gcommit me = {.u = u}, *list, *g, *next;

    pthread_mutex_lock(&mp->gmu);
    *mp->gtail = &me;
    mp->gtail = &me.next;
    while (!me.done && mp->gleader)
        pthread_cond_wait(&mp->gcv, &mp->gmu);
    while (!me.done) { /* lead: commit what is queued (this row included), then hand over */
        mp->gleader = 1;
        list = mp->gq;
        mp->gq = NULL;
        mp->gtail = &mp->gq;
        pthread_mutex_unlock(&mp->gmu);
        group_run(mp, list);
        pthread_mutex_lock(&mp->gmu);
        for (g = list; g; g = next) {
            next = g->next; /* g may be gone once done is seen */
            g->done = 1;
        }
        mp->gleader = 0;
        pthread_cond_broadcast(&mp->gcv);
    }
    pthread_mutex_unlock(&mp->gmu);
    *old = me.old;
    return me.rc;
}

int hd_put_commit(struct hd_put *p, const struct hd_put_attrs *attrs, struct hd_obj_meta *out)
{
    char final[PATH_MAX], etag[48], *old = NULL;
    unsigned char md5[16];
    struct upsert_arg u;
    int rc;

    if ((rc = put_place(p, p->rel, final)) < 0)
        goto io_fail;
    if (attrs && attrs->etag) {
        snprintf(etag, sizeof(etag), "%s", attrs->etag);
    } else {
        hd_put_md5(p, md5);
        hd_hex(md5, 16, etag);
    }
    u.p = p;
    u.a = attrs;
    u.etag = etag;
    u.mtime = attrs && attrs->mtime_ms > 0 ? attrs->mtime_ms : hd_store_now_ms();
    /* a keep_newer copy yields to a deferred commit of a newer write (there is no row to
     * compare with yet), unless it is dirty (write-back: the only copy there is) */
    if ((rc = hd_store_fence_cancel(
             p->st, p->bucket, p->name, attrs ? attrs->fence : NULL,
             (attrs && attrs->keep_newer && !attrs->writeback ? HD_FENCE_YIELD : 0) |
                 (attrs && attrs->fence ? HD_FENCE_COMMIT : 0))) < 0)
        goto undo;
    if (attrs && attrs->fence && (rc = hd_store_fence_lock(attrs->fence)) < 0)
        goto undo; /* a newer write or a delete came first */
    rc = group_commit(p->mp, &u, &old);
    if (attrs && attrs->fence)
        hd_store_fence_unlock(attrs->fence);
    if (rc < 0)
        goto undo;
    hd_mcache_drop(p->st->mc, p->bucket, p->name);
    if (old) {
        if (strcmp(old, p->rel) != 0)
            hd_store_unlink_rel(p->mp, old);
        free(old);
    }
    if (out) {
        memset(out, 0, sizeof(*out));
        out->size = p->size;
        out->mtime_ms = u.mtime;
        snprintf(out->etag, sizeof(out->etag), "%s", etag);
        if (attrs && attrs->ck_type) {
            snprintf(out->ck_type, sizeof(out->ck_type), "%s", attrs->ck_type);
            snprintf(out->ck_val, sizeof(out->ck_val), "%s", attrs->ck_val ? attrs->ck_val : "");
        }
    }
    return 0;
undo:
    unlink(final);
    return rc;
io_fail:
    HD_LOG(HD_ERROR, NULL, "put %s/%s: writing %s: %s", p->bucket, p->name, p->mp->path,
           hd_strerror(rc));
    return rc;
}

void hd_put_free(struct hd_put *p)
{
    if (!p)
        return;
    if (p->fd >= 0)
        close(p->fd);
    if (p->tmp[0])
        unlink(p->tmp);
    hd_hpipe_free(p->hp, p->wbuf); /* before the MD5 it feeds goes */
    hd_md5_cleanup(&p->md5);
    free(p->wbuf);
    free(p->bucket);
    free(p->name);
    free(p);
}

/* ---- listing: k-way merge of per-mountpath cursors ---- */

struct cursor {
    struct mountpath *mp;
    struct conn *c;
    sqlite3_stmt *q; /* Q_LIST, positioned on the current row while `live` */
    int live;
    const char *name; /* of the current row (valid until the next step) */
    size_t nlen;
};

static int cur_step(struct cursor *k)
{
    int s = sqlite3_step(k->q);

    if (s == SQLITE_ROW) {
        k->name = (const char *)sqlite3_column_text(k->q, 0);
        k->nlen = (size_t)sqlite3_column_bytes(k->q, 0);
        k->live = 1;
        return 0;
    }
    k->live = 0;
    return s == SQLITE_DONE ? 0 : hd_store_sqlerr(k->c->db, s, "list");
}

/* Positions the cursor on the first name >= from (or > from when exclusive). */
static int cur_seek(struct cursor *k, const char *bucket, const char *from, size_t flen,
                    int exclusive)
{
    int rc;

    sqlite3_reset(k->q);
    sqlite3_bind_text(k->q, 1, bucket, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(k->q, 2, from, (int)flen, SQLITE_TRANSIENT);
    if ((rc = cur_step(k)) < 0)
        return rc;
    while (exclusive && k->live && k->nlen == flen && memcmp(k->name, from, flen) == 0)
        if ((rc = cur_step(k)) < 0)
            return rc;
    return 0;
}

static int starts_with(const char *s, size_t n, const char *p, size_t pn)
{
    return n >= pn && memcmp(s, p, pn) == 0;
}

/* Smallest string greater than every string with prefix p: p with its last byte below 0xff
 * incremented (trailing 0xff bytes dropped). Returns its length; 0 means "no upper bound". */
static size_t prefix_successor(const char *p, size_t n, char *out)
{
    memcpy(out, p, n);
    while (n > 0 && (unsigned char)out[n - 1] == 0xff)
        n--;
    if (n > 0)
        out[n - 1] = (char)((unsigned char)out[n - 1] + 1);
    return n;
}

static int push_ent(struct hd_list_res *res, sqlite3_stmt *q)
{
    struct hd_list_ent *n;

    if (res->nents % 64 == 0) {
        n = realloc(res->ents, (res->nents + 64) * sizeof(*n));
        if (!n)
            return -ENOMEM;
        res->ents = n;
    }
    n = &res->ents[res->nents];
    memset(n, 0, sizeof(*n));
    n->name = strndup((const char *)sqlite3_column_text(q, 0), (size_t)sqlite3_column_bytes(q, 0));
    if (!n->name)
        return -ENOMEM;
    n->size = (uint64_t)sqlite3_column_int64(q, 1);
    n->mtime_ms = sqlite3_column_int64(q, 2);
    hd_store_col_copy(q, 3, n->etag, sizeof(n->etag));
    hd_store_col_copy(q, 4, n->sclass, sizeof(n->sclass));
    res->nents++;
    return 0;
}

static int push_prefix(struct hd_list_res *res, const char *p, size_t n)
{
    char **v;

    if (res->nprefixes % 64 == 0) {
        v = realloc(res->prefixes, (res->nprefixes + 64) * sizeof(*v));
        if (!v)
            return -ENOMEM;
        res->prefixes = v;
    }
    res->prefixes[res->nprefixes] = strndup(p, n);
    if (!res->prefixes[res->nprefixes])
        return -ENOMEM;
    res->nprefixes++;
    return 0;
}

int hd_store_list(struct hd_store *st, const char *bucket, const struct hd_list_opts *o,
                  struct hd_list_res *res)
{
    struct cursor ks[MAX_MP];
    const char *prefix = o->prefix ? o->prefix : "";
    const char *delim = o->delimiter && *o->delimiter ? o->delimiter : NULL;
    size_t plen = strlen(prefix), dlen = delim ? strlen(delim) : 0, i, count = 0;
    char *from = NULL, *succ = NULL;
    size_t flen;
    int exclusive = 0, rc = 0;

    memset(res, 0, sizeof(*res));
    memset(ks, 0, sizeof(ks));
    if ((rc = hd_store_bucket_exists(st, bucket)) < 0)
        return rc;
    /* Start at max(prefix, start_after); if start_after is itself a common prefix returned
     * by a previous page, skip everything under it. */
    from = strdup(prefix);
    flen = plen;
    if (!from)
        return -ENOMEM;
    if (o->start_after && strcmp(o->start_after, prefix) >= 0) {
        size_t sl = strlen(o->start_after);
        free(from);
        from = malloc(sl + 1);
        if (!from)
            return -ENOMEM;
        memcpy(from, o->start_after, sl + 1);
        flen = sl;
        exclusive = 1;
        if (delim && sl >= plen + dlen && starts_with(from, sl, prefix, plen) &&
            memcmp(from + sl - dlen, delim, dlen) == 0 &&
            memmem(from + plen, sl - plen, delim, dlen) == from + sl - dlen) {
            flen = prefix_successor(from, sl, from);
            exclusive = 0;
            if (flen == 0)
                goto done;
        }
    }
    succ = malloc(flen + 1024 + 1);
    if (!succ) {
        rc = -ENOMEM;
        goto done;
    }
    for (i = 0; i < st->nmp; i++) {
        ks[i].mp = &st->mp[i];
        if ((rc = hd_store_conn_get(ks[i].mp, &ks[i].c)) < 0)
            goto done;
        ks[i].q = ks[i].c->q[Q_LIST];
        if ((rc = cur_seek(&ks[i], bucket, from, flen, exclusive)) < 0)
            goto done;
    }
    for (;;) {
        struct cursor *min = NULL;
        for (i = 0; i < st->nmp; i++) {
            struct cursor *k = &ks[i];
            if (!k->live)
                continue;
            if (!min) {
                min = k;
                continue;
            }
            size_t n = k->nlen < min->nlen ? k->nlen : min->nlen;
            int c = memcmp(k->name, min->name, n);
            if (c < 0 || (c == 0 && k->nlen < min->nlen))
                min = k;
        }
        if (!min || !starts_with(min->name, min->nlen, prefix, plen))
            break; /* sorted: once past the prefix, nothing more matches */
        if (count >= o->max) {
            res->truncated = 1;
            break;
        }
        const char *d = delim ? memmem(min->name + plen, min->nlen - plen, delim, dlen) : NULL;
        if (d) {
            size_t cpl = (size_t)(d - min->name) + dlen, sl;
            if ((rc = push_prefix(res, min->name, cpl)) < 0)
                goto done;
            count++;
            sl = prefix_successor(res->prefixes[res->nprefixes - 1], cpl, succ);
            for (i = 0; i < st->nmp; i++) {
                struct cursor *k = &ks[i];
                if (!k->live)
                    continue;
                if (sl == 0)
                    k->live = 0;
                else if (starts_with(k->name, k->nlen, res->prefixes[res->nprefixes - 1], cpl) &&
                         (rc = cur_seek(k, bucket, succ, sl, 0)) < 0)
                    goto done;
            }
            continue;
        }
        if ((rc = push_ent(res, min->q)) < 0)
            goto done;
        count++;
        if ((rc = cur_step(min)) < 0)
            goto done;
    }
    if (res->nents || res->nprefixes) {
        /* the next marker is the greater of the last key and the last prefix */
        const char *lk = res->nents ? res->ents[res->nents - 1].name : NULL;
        const char *lp = res->nprefixes ? res->prefixes[res->nprefixes - 1] : NULL;
        const char *last = !lk ? lp : !lp ? lk : strcmp(lk, lp) > 0 ? lk : lp;
        res->last = last ? strdup(last) : NULL;
        if (!res->last)
            rc = -ENOMEM;
    }
done:
    for (i = 0; i < st->nmp; i++)
        if (ks[i].c)
            hd_store_conn_put(ks[i].mp, ks[i].c);
    free(from);
    free(succ);
    if (rc < 0)
        hd_list_res_cleanup(res);
    return rc;
}

void hd_list_res_cleanup(struct hd_list_res *res)
{
    size_t i;

    for (i = 0; i < res->nents; i++)
        free(res->ents[i].name);
    for (i = 0; i < res->nprefixes; i++)
        free(res->prefixes[i]);
    free(res->ents);
    free(res->prefixes);
    free(res->last);
    memset(res, 0, sizeof(*res));
}
