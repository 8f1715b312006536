/* store_int: the store's internals shared by target/store*.c and target/mpu.c (catalog
 * connections, mountpaths, helpers). Thread rules as in store.h. Not for other modules. */
#ifndef HD_STORE_INT_H
#define HD_STORE_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <sqlite3.h>

#include "common/cksum.h"
#include "target/store/hpipe.h"
#include "target/store/store.h"

#define MAX_MP 64
#define WBUF (256 * 1024)
/* Puts announced at least this large hash on the hash pool (hpipe.h). */
#define HPIPE_MIN (1u << 20)
/* a put starts the disk writes of every this many bytes it wrote (sync_file_range) */
#define WB_STEP (1u << 20)

/* Prepared statements of one catalog connection. */
enum {
    Q_LOOKUP,
    Q_FILE,
    Q_UPSERT,
    Q_DELETE,
    Q_LIST,
    Q_ANY,
    Q_BEGIN,
    Q_COMMIT,
    Q_ROLLBACK,
    Q_USAGE,
    Q_TAR_STATE, /* tar index (store_tar.c) */
    Q_TAR_MEMBER,
    Q_TAR_LIST,
    Q_WB_DROP, /* write-back queue (store_wbq.c) */
    Q_WB_ADD,
    Q_WB_HAS,
    Q_COUNT
};

/* Designated: each statement sits next to the name it is prepared under (adjacent literals
 * of one statement are concatenated on purpose). */
static const char *const sqls[Q_COUNT] = {
    [Q_LOOKUP] = "SELECT size, mtime, etag, cksum_type, cksum, ctype, meta, file, hdrs, parts "
                 "FROM objects WHERE bucket = ?1 AND name = ?2",
    [Q_FILE] = "SELECT file, size FROM objects WHERE bucket = ?1 AND name = ?2",
    [Q_UPSERT] =
        "INSERT INTO objects(bucket, name, size, etag, cksum_type, cksum, mtime, atime, ctype, "
        "meta, file, hdrs, parts) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8, ?9, ?10, ?11, ?12) "
        "ON CONFLICT(bucket, name) DO UPDATE SET size = excluded.size, etag = excluded.etag, "
        "cksum_type = excluded.cksum_type, cksum = excluded.cksum, mtime = excluded.mtime, "
        "atime = excluded.atime, ctype = excluded.ctype, meta = excluded.meta, "
        "file = excluded.file, hdrs = excluded.hdrs, parts = excluded.parts",
    [Q_DELETE] = "DELETE FROM objects WHERE bucket = ?1 AND name = ?2",
    [Q_LIST] = "SELECT name, size, mtime, etag, json_extract(hdrs, '$.\"x-amz-storage-class\"') "
               "FROM objects WHERE bucket = ?1 AND name >= ?2 ORDER BY name",
    [Q_ANY] = "SELECT 1 FROM objects WHERE bucket = ?1 LIMIT 1",
    [Q_BEGIN] = "BEGIN IMMEDIATE",
    [Q_COMMIT] = "COMMIT",
    [Q_ROLLBACK] = "ROLLBACK",
    [Q_USAGE] = "SELECT bytes, objects FROM usage WHERE id = 0",
    [Q_TAR_STATE] = "SELECT members, status, msg FROM tar_index WHERE file = ?1",
    [Q_TAR_MEMBER] = "SELECT off, size FROM tar_members WHERE file = ?1 AND name = ?2",
    [Q_TAR_LIST] = "SELECT name, off, size FROM tar_members WHERE file = ?1 ORDER BY off",
    [Q_WB_DROP] = "DELETE FROM wbq WHERE bucket = ?1 AND name = ?2",
    [Q_WB_ADD] = "INSERT INTO wbq(bucket, name, op, file, size, etag, queued) "
                 "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [Q_WB_HAS] = "SELECT 1 FROM wbq WHERE bucket = ?1 AND name = ?2 AND op = 0",
};

static const char schema[] =
    "PRAGMA journal_mode = WAL;"
    "CREATE TABLE IF NOT EXISTS objects("
    " bucket TEXT NOT NULL, name TEXT NOT NULL, size INTEGER NOT NULL, etag TEXT NOT NULL,"
    " cksum_type TEXT, cksum TEXT, mtime INTEGER NOT NULL, atime INTEGER NOT NULL,"
    " ctype TEXT, meta TEXT, file TEXT NOT NULL, hdrs TEXT, parts TEXT,"
    " PRIMARY KEY(bucket, name)) WITHOUT ROWID;"
    /* LRU candidates by atime (store_space.c) */
    "CREATE INDEX IF NOT EXISTS objects_atime ON objects(atime);"
    /* bytes and objects held, kept exact by triggers whatever path changes a row */
    "CREATE TABLE IF NOT EXISTS usage(id INTEGER PRIMARY KEY CHECK (id = 0),"
    " bytes INTEGER NOT NULL, objects INTEGER NOT NULL);"
    "CREATE TRIGGER IF NOT EXISTS usage_ins AFTER INSERT ON objects BEGIN"
    " UPDATE usage SET bytes = bytes + new.size, objects = objects + 1 WHERE id = 0; END;"
    "CREATE TRIGGER IF NOT EXISTS usage_del AFTER DELETE ON objects BEGIN"
    " UPDATE usage SET bytes = bytes - old.size, objects = objects - 1 WHERE id = 0; END;"
    "CREATE TRIGGER IF NOT EXISTS usage_upd AFTER UPDATE OF size ON objects BEGIN"
    " UPDATE usage SET bytes = bytes - old.size + new.size WHERE id = 0; END;"
    /* Tar index of a content file (store_tar.c). Keyed by the file, which is new on every
     * write, so an overwritten object is indexed afresh; the triggers drop an index together
     * with the row of its file (overwrite, delete, bucket destroy, rebalance), atomically. */
    "CREATE TABLE IF NOT EXISTS tar_index("
    " file TEXT PRIMARY KEY, members INTEGER NOT NULL, status INTEGER NOT NULL, msg TEXT)"
    " WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS tar_members("
    " file TEXT NOT NULL, name TEXT NOT NULL, off INTEGER NOT NULL, size INTEGER NOT NULL,"
    " PRIMARY KEY(file, name)) WITHOUT ROWID;"
    "CREATE TRIGGER IF NOT EXISTS tar_drop_upd AFTER UPDATE OF file ON objects"
    " WHEN old.file <> new.file BEGIN"
    " DELETE FROM tar_members WHERE file = old.file;"
    " DELETE FROM tar_index WHERE file = old.file; END;"
    "CREATE TRIGGER IF NOT EXISTS tar_drop_del AFTER DELETE ON objects BEGIN"
    " DELETE FROM tar_members WHERE file = old.file;"
    " DELETE FROM tar_index WHERE file = old.file; END;"
    /* Write-back queue (store_wbq.c): uploads (op 0) and deletes (op 1) owed to the upstream
     * of a write-back bucket, in commit order (seq). A row is added in the transaction that
     * commits the object, and removed when the upstream has it or a newer write of the same
     * name supersedes it; an object with an op-0 row is dirty. */
    "CREATE TABLE IF NOT EXISTS wbq("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT, bucket TEXT NOT NULL, name TEXT NOT NULL,"
    " op INTEGER NOT NULL, file TEXT, size INTEGER NOT NULL, etag TEXT, queued INTEGER NOT NULL,"
    " attempts INTEGER NOT NULL DEFAULT 0, next_try INTEGER NOT NULL DEFAULT 0,"
    " failed INTEGER NOT NULL DEFAULT 0, err TEXT);"
    "CREATE INDEX IF NOT EXISTS wbq_key ON wbq(bucket, name);"
    /* Upstream multipart uploads the uploader has begun and not yet completed or aborted
     * (store_wbq.c): what a crash leaves is aborted after the restart. */
    "CREATE TABLE IF NOT EXISTS wbmpu("
    " upload_id TEXT NOT NULL, bucket TEXT NOT NULL, name TEXT NOT NULL,"
    " gen INTEGER NOT NULL, orphan INTEGER NOT NULL DEFAULT 0,"
    " PRIMARY KEY(bucket, name, upload_id));";

/* Run once per mountpath at open: the usage row of a catalog created before it existed. */
static const char usage_init[] =
    "INSERT OR IGNORE INTO usage(id, bytes, objects) SELECT 0, coalesce(sum(size), 0), count(*)"
    " FROM objects WHERE NOT EXISTS (SELECT 1 FROM usage);";

struct conn {
    sqlite3 *db;
    sqlite3_stmt *q[Q_COUNT];
    struct conn *next;
};

struct mountpath {
    char *path;
    int dirfd; /* O_PATH descriptor of path: content files are opened relative to it */
    uint64_t digest;
    pthread_mutex_t mu;
    struct conn *free; /* idle connections */
    /* group commit of PUTs (store.c: hd_put_commit): rows queued while a leader commits are
     * committed together by the next leader, in one transaction */
    pthread_mutex_t gmu;
    pthread_cond_t gcv;
    struct gcommit *gq, **gtail;
    int gleader;
    atomic_int mpu_schema; /* target/api/mpu.c: its tables are created and current */
};

struct atime_ent; /* store_space.c */

struct hd_store {
    struct mountpath mp[MAX_MP];
    uint64_t mp_digest[MAX_MP];
    size_t nmp;
    int fsync;
    uint64_t capacity;   /* per mountpath, bytes; 0 = the filesystem's */
    int oos_pct;         /* writes refused at or above this use of capacity */
    pthread_mutex_t amu; /* batched atimes (store_space.c) */
    struct atime_ent **atab;
    size_t acount;
    char *data_dir;
    sqlite3 *node; /* buckets; guarded by bmu */
    pthread_rwlock_t bmu;
    struct hd_bucket_info *buckets;
    size_t nbuckets;
    struct bucket_parsed {     /* beside each bucket (bmu), parsed from its props: */
        json_t *lc;            /* lifecycle rules, NULL where none */
        json_t *public_keys;   /* the keys and prefixes its policy opens (HD_PUBLIC_OBJECTS_SOME) */
    } *bx;
    atomic_int nlifecycle;     /* of those, with lifecycle rules (read without bmu) */
    struct hd_mcache *mc;      /* cached catalog rows (store_mcache.c); NULL = off */
    struct hd_pool *hash_pool; /* MD5 of large puts beside their writes (hpipe.c) */
    pthread_mutex_t fmu;       /* fences (fence.c) */
    struct hd_store_fence *fences;
    atomic_int nfences;
};

struct hd_put {
    struct hd_store *st;
    struct mountpath *mp;
    char *bucket, *name;
    char tmp[PATH_MAX];
    char rel[64]; /* objs/aa/bb/<32 hex> */
    int fd;
    uint64_t size;
    struct hd_md5 md5;
    int md5_done;
    int no_md5; /* hd_put_skip_md5: the caller commits with its own ETag */
    unsigned char digest[16];
    char *wbuf;
    size_t wlen;
    struct hd_hpipe *hp; /* MD5 on the hash pool (large puts); NULL: hashed as written */
    uint64_t room;       /* bytes this put may write before the mountpath is out of space */
    uint64_t written;    /* bytes in the file */
    uint64_t wb_from;    /* the file's disk writes were started up to here (put_out) */
};

int64_t hd_store_now_ms(void);
/* fence.c. Every commit and delete of bucket/name (name NULL: every object of the bucket)
 * cancels the fences on it other than own, before it changes the catalog, and waits for a
 * fenced commit of theirs in progress. mode: HD_FENCE_YIELD (a keep_newer commit, not a
 * dirty one): HD_EUNAVAIL, nothing cancelled, while a strong fence other than own stands on
 * the name; HD_FENCE_COMMIT (a commit with fence own): HD_EPRECONDITION, nothing cancelled,
 * when own is cancelled already (the commit will be refused). 0 otherwise. */
#define HD_FENCE_YIELD 1
#define HD_FENCE_COMMIT 2
int hd_store_fence_cancel(struct hd_store *st, const char *bucket, const char *name,
                          const struct hd_store_fence *own, int mode);
/* For a conditional delete of the row (etag, mtime) of mountpath mpi: cancels the fences on
 * bucket/name, unless that row is not held (HD_EPRECONDITION: the delete will match nothing,
 * and a deferred commit or a fill it would cancel is not older than it). scan.c */
/* The catalog row of bucket/name on mountpath mpi (scan.c): *m (path absolute) and, when rel
 * is not NULL, the content file relative to the mountpath (malloc'd). HD_ENOSUCHKEY. */
int hd_store_row_on(struct hd_store *st, size_t mpi, const char *bucket, const char *name,
                    struct hd_obj_meta *m, char **rel);
int hd_store_fence_cancel_if(struct hd_store *st, size_t mpi, const char *bucket, const char *name,
                             const char *etag, int64_t mtime_ms);
/* A fenced commit holds its fence from the check to the catalog's commit: 0, or
 * HD_EPRECONDITION when it was cancelled (nothing held then). */
int hd_store_fence_lock(struct hd_store_fence *f);
void hd_store_fence_unlock(struct hd_store_fence *f);
int hd_store_sqlerr(sqlite3 *db, int rc, const char *what);
/* A pooled catalog connection of mountpath mp; give it back with hd_store_conn_put. */
int hd_store_conn_get(struct mountpath *mp, struct conn **out);
void hd_store_conn_put(struct mountpath *mp, struct conn *c);
/* Closes the idle connections of mp (the store is closing: none is in use). */
void hd_store_conns_close(struct mountpath *mp);
int hd_store_mkdir_p(const char *path);
struct mountpath *hd_store_mp_for(struct hd_store *st, const char *bucket, const char *name);
/* 2*nbytes random hex digits + NUL into out (nbytes <= 32). */
int hd_store_random_hex(char *out, size_t nbytes);
void hd_store_unlink_rel(struct mountpath *mp, const char *rel);
char *hd_store_col_dup(sqlite3_stmt *s, int i);
void hd_store_col_copy(sqlite3_stmt *s, int i, char *dst, size_t n);

/* For multipart upload. hd_put_commit_file flushes, fsyncs and renames the temp file to
 * <mountpath>/<rel> without a catalog row (the caller records it, e.g. as a part); after
 * success the file is the caller's and hd_put_free leaves it. hd_put_append_file appends
 * len bytes of fd (from offset 0) with copy_file_range where the filesystem has it; the
 * put's MD5 then no longer describes the content, so commit with attrs->etag. */
int hd_put_commit_file(struct hd_put *p, const char *rel);

/* store_wbq.c, inside a catalog transaction: drops the queued entries of bucket/name and,
 * with op >= 0, queues a new one (file, size, etag may be NULL/0 for a delete). */
int hd_store_wb_requeue(struct conn *c, const char *bucket, const char *name, int op,
                        const char *file, uint64_t size, const char *etag);
/* 1 when bucket/name has a queued upload (dirty) on c's catalog, 0 when not. */
int hd_store_wb_has(struct conn *c, const char *bucket, const char *name);

/* store_space.c: bytes a new object of `need` bytes may take on mp before it reaches the
 * out-of-space mark (0 when it is already there); frees the batched atimes at close. */
int hd_store_room(struct hd_store *st, struct mountpath *mp, uint64_t need, uint64_t *room);
void hd_store_atime_free(struct hd_store *st);
int hd_put_append_file(struct hd_put *p, int fd, uint64_t len);

/* store_mcache.c: catalog rows of recently read objects (see its header comment). */
struct hd_mcache;
/* 0 entries: *out = NULL (off). max_fds: content files it may hold open. */
int hd_mcache_new(size_t entries, long max_fds, struct hd_mcache **out);
void hd_mcache_free(struct hd_mcache *mc);
/* 0 with *m (strings owned by m), the mountpath index, *rel (malloc'd) and, when fd is not
 * NULL, *fd: a descriptor of the content file (the caller's) or -1 when none is held; or
 * HD_ENOSUCHKEY when not cached. */
int hd_mcache_get(struct hd_mcache *mc, const char *bucket, const char *name, struct hd_obj_meta *m,
                  size_t *mpi, char **rel, int *fd);
/* Keeps a duplicate of fd (the open content file rel) with the cached row, if the row is
 * still cached for that same file and the budget allows. */
void hd_mcache_keep_fd(struct hd_mcache *mc, const char *bucket, const char *name, const char *rel,
                       int fd);
/* The stripe generation to pass to hd_mcache_put for a row about to be read. */
uint64_t hd_mcache_gen(struct hd_mcache *mc, const char *bucket, const char *name);
void hd_mcache_put(struct hd_mcache *mc, const char *bucket, const char *name, size_t mpi,
                   const struct hd_obj_meta *m, const char *rel, uint64_t gen);
/* Called after every change of a catalog row (commit first, then drop). */
void hd_mcache_drop(struct hd_mcache *mc, const char *bucket, const char *name);
void hd_mcache_drop_all(struct hd_mcache *mc);
size_t hd_mcache_count(struct hd_mcache *mc);

#endif
