/* mpu: S3 multipart upload. An upload lives wholly on the mountpath its object will live on
 * (HRW of bucket/key): its rows in that mountpath's catalog (mpu_uploads, mpu_parts) and its
 * part files under MP/mpu/<uploadId>/. Parts are committed like objects (temp file, fsync,
 * rename, then the row), so a crash leaves at worst an unreferenced part file. Complete
 * concatenates the part files with copy_file_range into a new object committed with the
 * multipart ETag, then drops the parts and keeps a completed record for an hour so that a
 * retried Complete gets the same answer. */
#include "target/api/mpu.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "common/cksum.h"
#include "common/errors.h"
#include "common/json.h"
#include "common/lifecycle.h"
#include "common/log.h"
#include "common/mpulist.h"
#include "common/metrics.h"
#include "common/aismsg.h"
#include "common/xml.h"
#include "target/api/keepalive.h"
#include "target/api/expiration.h"
#include "target/cluster/peer.h"
#include "target/store/int.h"

#define MPU_MIN_PART (5ull << 20) /* S3's minimum size of every part but the last */
#define MPU_MAX_PART_NUM 10000
#define MPU_KEEP_DONE_MS (3600ll * 1000) /* completed uploads answer a retried Complete */
#define MPU_ID_BYTES 16
#define MPU_ID_HEX 32 /* 2 * MPU_ID_BYTES */
#define MPU_LIST_MAX 1000
#define COMPLETE_MAGIC 0x6d707563u

enum { UP_ACTIVE = 0, UP_DONE = 1 };

/* Idempotent; run on every use of a connection (cheap: a schema lookup once tables exist). */
static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS mpu_uploads("
    " id TEXT PRIMARY KEY, bucket TEXT NOT NULL, name TEXT NOT NULL, created INTEGER NOT NULL,"
    " ctype TEXT, meta TEXT, ck_algo TEXT, ck_type TEXT, state INTEGER NOT NULL DEFAULT 0,"
    " etag TEXT, ck_val TEXT, done INTEGER, hdrs TEXT, up_id TEXT) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS mpu_uploads_bn ON mpu_uploads(bucket, name, created);"
    "CREATE INDEX IF NOT EXISTS mpu_uploads_done ON mpu_uploads(done) WHERE state = 1;"
    "CREATE TABLE IF NOT EXISTS mpu_parts("
    " id TEXT NOT NULL, part INTEGER NOT NULL, size INTEGER NOT NULL, etag TEXT NOT NULL,"
    " ck_type TEXT, ck_val TEXT, mtime INTEGER NOT NULL, file TEXT NOT NULL, up_etag TEXT,"
    " PRIMARY KEY(id, part)) WITHOUT ROWID;";

/* ---- catalog helpers ---- */

struct db {
    struct mountpath *mp;
    struct conn *c;
};

/* Catalogs made before a column existed get it: the headers stored with the object (and its
 * storage class), then the upstream's twin of a write-through upload (up_id) and its parts'
 * ETags (up_etag). */
static int has_col(sqlite3 *db, const char *table, const char *col)
{
    char sql[64];
    sqlite3_stmt *s;
    int found = 0;

    snprintf(sql, sizeof(sql), "PRAGMA table_info(%s)", table);
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        return 0;
    while (!found && sqlite3_step(s) == SQLITE_ROW)
        found =
            sqlite3_column_text(s, 1) && strcmp((const char *)sqlite3_column_text(s, 1), col) == 0;
    sqlite3_finalize(s);
    return found;
}

static int migrate(sqlite3 *db)
{
    static const char *const cols[][2] = {
        {"mpu_uploads", "hdrs"}, {"mpu_uploads", "up_id"}, {"mpu_parts", "up_etag"}};
    char sql[96];
    size_t i;

    for (i = 0; i < sizeof(cols) / sizeof(cols[0]); i++) {
        snprintf(sql, sizeof(sql), "ALTER TABLE %s ADD COLUMN %s TEXT", cols[i][0], cols[i][1]);
        if (!has_col(db, cols[i][0], cols[i][1]) &&
            sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK &&
            !has_col(db, cols[i][0], cols[i][1])) /* another connection added it meanwhile */
            return SQLITE_ERROR;
    }
    return SQLITE_OK;
}

static int db_open(struct mountpath *mp, struct db *d)
{
    char *msg = NULL;
    int rc;

    d->mp = mp;
    d->c = NULL;
    if ((rc = hd_store_conn_get(mp, &d->c)) < 0)
        return rc;
    rc = sqlite3_exec(d->c->db, schema_sql, NULL, NULL, &msg);
    if (rc == SQLITE_OK && !atomic_load(&mp->mpu_schema)) {
        if ((rc = migrate(d->c->db)) == SQLITE_OK)
            atomic_store(&mp->mpu_schema, 1);
    }
    if (rc != SQLITE_OK) {
        HD_LOG(HD_ERROR, NULL, "catalog %s: multipart tables: %s", mp->path, msg ? msg : "?");
        sqlite3_free(msg);
        hd_store_conn_put(mp, d->c);
        d->c = NULL;
        return rc == SQLITE_FULL ? -ENOSPC : HD_EINTERNAL;
    }
    return 0;
}

/* Returns the connection to the pool, rolling back a transaction left open by an error. */
static void db_close(struct db *d)
{
    if (!d->c)
        return;
    if (!sqlite3_get_autocommit(d->c->db)) {
        sqlite3_step(d->c->q[Q_ROLLBACK]);
        sqlite3_reset(d->c->q[Q_ROLLBACK]);
    }
    hd_store_conn_put(d->mp, d->c);
    d->c = NULL;
}

/* q is Q_BEGIN (BEGIN IMMEDIATE), Q_COMMIT or Q_ROLLBACK. */
static int db_tx(struct db *d, int q)
{
    sqlite3_stmt *s = d->c->q[q];
    int rc = sqlite3_step(s);

    sqlite3_reset(s);
    return rc == SQLITE_DONE ? 0 : hd_store_sqlerr(d->c->db, rc, "multipart transaction");
}

static int db_prep(struct db *d, const char *sql, sqlite3_stmt **s)
{
    int rc = sqlite3_prepare_v2(d->c->db, sql, -1, s, NULL);

    if (rc != SQLITE_OK) {
        *s = NULL;
        return hd_store_sqlerr(d->c->db, rc, sql);
    }
    return 0;
}

/* Steps a statement that returns no rows, then finalizes it. */
static int db_run(struct db *d, sqlite3_stmt *s, const char *what)
{
    int rc = sqlite3_step(s);

    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : hd_store_sqlerr(d->c->db, rc, what);
}

static void bind_text_or_null(sqlite3_stmt *s, int i, const char *v)
{
    if (v && *v)
        sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(s, i);
}

/* A small list of strings (file names to unlink after a commit). */
struct strv {
    char **v;
    size_t n;
};

static int strv_push(struct strv *sv, const char *s)
{
    char **n = realloc(sv->v, (sv->n + 1) * sizeof(*n));

    if (!n)
        return -ENOMEM;
    sv->v = n;
    sv->v[sv->n] = strdup(s);
    if (!sv->v[sv->n])
        return -ENOMEM;
    sv->n++;
    return 0;
}

static void strv_free(struct strv *sv)
{
    size_t i;

    for (i = 0; i < sv->n; i++)
        free(sv->v[i]);
    free(sv->v);
    sv->v = NULL;
    sv->n = 0;
}

/* Collects the part files of upload id (inside the caller's transaction). */
static int part_files(struct db *d, const char *id, struct strv *out)
{
    sqlite3_stmt *s;
    int rc, st;

    if ((rc = db_prep(d, "SELECT file FROM mpu_parts WHERE id = ?1", &s)) < 0)
        return rc;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
    while ((st = sqlite3_step(s)) == SQLITE_ROW) {
        const char *f = (const char *)sqlite3_column_text(s, 0);
        if (f && (rc = strv_push(out, f)) < 0)
            break;
    }
    if (rc == 0 && st != SQLITE_DONE)
        rc = hd_store_sqlerr(d->c->db, st, "multipart part files");
    sqlite3_finalize(s);
    return rc;
}

static int delete_parts(struct db *d, const char *id)
{
    sqlite3_stmt *s;
    int rc;

    if ((rc = db_prep(d, "DELETE FROM mpu_parts WHERE id = ?1", &s)) < 0)
        return rc;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
    return db_run(d, s, "multipart delete parts");
}

/* After COMMIT: removes the files and the upload's directory (if now empty). */
static void remove_files(struct mountpath *mp, const char *id, struct strv *files)
{
    char dir[PATH_MAX];
    size_t i;

    for (i = 0; i < files->n; i++)
        hd_store_unlink_rel(mp, files->v[i]);
    snprintf(dir, sizeof(dir), "%s/mpu/%s", mp->path, id);
    (void)rmdir(dir); /* ENOTEMPTY when a racing part commit just landed: it cleans up */
}

/* ---- uploads ---- */

struct upload {
    int64_t created;
    int state;
    enum hd_ck_type ck; /* HD_CK_NONE when created without a checksum algorithm */
    int full;           /* checksum type FULL_OBJECT (else COMPOSITE) */
    char *ctype;
    char *meta;
    char *hdrs;      /* Cache-Control ... storage class, for the object (hd_collect_hdrs) */
    char *up_id;     /* write-through: the upstream's twin upload (NULL: none) */
    char etag[48];   /* once completed */
    char ck_val[64]; /* once completed: final checksum ("b64-N" when composite) */
};

static void upload_cleanup(struct upload *u)
{
    free(u->ctype);
    free(u->meta);
    free(u->hdrs);
    free(u->up_id);
    u->ctype = u->meta = u->hdrs = u->up_id = NULL;
}

/* Upload ids are ours only if they look like ours: they name a directory. */
static int id_valid(const char *id)
{
    size_t i;

    if (!id)
        return 0;
    for (i = 0; id[i]; i++)
        if (!isdigit((unsigned char)id[i]) && !(id[i] >= 'a' && id[i] <= 'f'))
            return 0;
    return i == MPU_ID_HEX;
}

static int upload_get(struct db *d, const char *id, const char *bucket, const char *key,
                      struct upload *u)
{
    sqlite3_stmt *s;
    char algo[16], typ[16];
    int rc, st;

    memset(u, 0, sizeof(*u));
    rc = db_prep(d,
                 "SELECT created, state, ck_algo, ck_type, ctype, meta, etag, ck_val, hdrs, up_id "
                 "FROM mpu_uploads WHERE id = ?1 AND bucket = ?2 AND name = ?3",
                 &s);
    if (rc < 0)
        return rc;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, bucket, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 3, key, -1, SQLITE_TRANSIENT);
    st = sqlite3_step(s);
    if (st == SQLITE_ROW) {
        u->created = sqlite3_column_int64(s, 0);
        u->state = sqlite3_column_int(s, 1);
        hd_store_col_copy(s, 2, algo, sizeof(algo));
        hd_store_col_copy(s, 3, typ, sizeof(typ));
        u->ck = hd_cksum_type_from_name(algo);
        u->full = strcmp(typ, "FULL_OBJECT") == 0;
        u->ctype = hd_store_col_dup(s, 4);
        u->meta = hd_store_col_dup(s, 5);
        hd_store_col_copy(s, 6, u->etag, sizeof(u->etag));
        hd_store_col_copy(s, 7, u->ck_val, sizeof(u->ck_val));
        u->hdrs = hd_store_col_dup(s, 8);
        u->up_id = hd_store_col_dup(s, 9);
        rc = (u->ctype || !sqlite3_column_text(s, 4)) && (u->meta || !sqlite3_column_text(s, 5)) &&
                     (u->hdrs || !sqlite3_column_text(s, 8)) &&
                     (u->up_id || !sqlite3_column_text(s, 9))
                 ? 0
                 : -ENOMEM;
    } else if (st == SQLITE_DONE) {
        rc = HD_ENOSUCHUPLOAD;
    } else {
        rc = hd_store_sqlerr(d->c->db, st, "multipart upload lookup");
    }
    sqlite3_finalize(s);
    if (rc < 0)
        upload_cleanup(u);
    return rc;
}

/* An active upload of bucket/key, or HD_ENOSUCHUPLOAD (also when already completed). */
static int upload_active(struct db *d, const char *id, const char *bucket, const char *key,
                         struct upload *u)
{
    int rc = upload_get(d, id, bucket, key, u);

    if (rc == 0 && u->state != UP_ACTIVE) {
        upload_cleanup(u);
        rc = HD_ENOSUCHUPLOAD;
    }
    return rc;
}

static unsigned long long min_part_size(void)
{
    const char *e = getenv("HOARD_MPU_MIN_PART");
    uint64_t v;

    /* tests may lower the limit, never raise it */
    if (e && hd_parse_u64(e, &v) == 0 && v < MPU_MIN_PART)
        return v;
    return MPU_MIN_PART;
}

static int is_crc(enum hd_ck_type t)
{
    return t == HD_CK_CRC32 || t == HD_CK_CRC32C || t == HD_CK_CRC64NVME;
}

/* "ChecksumCRC32" ... for a checksum type. */
static void ck_tag(enum hd_ck_type t, char *out, size_t n)
{
    snprintf(out, n, "Checksum%s", hd_cksum_name(t));
}

/* Text for a key in a listing, url-encoded when EncodingType=url. */
/* Drops completed records past their retention (best effort). */
/* Forgets completed uploads older than MPU_KEEP_DONE_MS, with any parts they still have (a
 * late Complete's copy that a crash interrupted). */
static void prune_done(struct db *d)
{
    struct strv files = {0};
    sqlite3_stmt *s;
    int64_t before = hd_store_now_ms() - MPU_KEEP_DONE_MS;
    int st;
    size_t i;

    if (db_prep(d,
                "SELECT file FROM mpu_parts WHERE id IN (SELECT id FROM mpu_uploads WHERE "
                "state = 1 AND done < ?1)",
                &s) < 0)
        return;
    sqlite3_bind_int64(s, 1, before);
    while ((st = sqlite3_step(s)) == SQLITE_ROW) {
        const char *f = (const char *)sqlite3_column_text(s, 0);
        if (f && strv_push(&files, f) < 0)
            break;
    }
    sqlite3_finalize(s);
    if (db_prep(d,
                "DELETE FROM mpu_parts WHERE id IN (SELECT id FROM mpu_uploads WHERE state = 1 "
                "AND done < ?1)",
                &s) == 0) {
        sqlite3_bind_int64(s, 1, before);
        (void)db_run(d, s, "multipart prune parts");
    }
    if (db_prep(d, "DELETE FROM mpu_uploads WHERE state = 1 AND done < ?1", &s) == 0) {
        sqlite3_bind_int64(s, 1, before);
        (void)db_run(d, s, "multipart prune");
    }
    for (i = 0; i < files.n; i++) { /* mpu/<id>/<file>: the file, then its directory */
        char *slash;
        hd_store_unlink_rel(d->mp, files.v[i]);
        if ((slash = strrchr(files.v[i], '/'))) {
            char dir[PATH_MAX];
            *slash = '\0';
            snprintf(dir, sizeof(dir), "%s/%s", d->mp->path, files.v[i]);
            (void)rmdir(dir);
        }
    }
    strv_free(&files);
}

/* ---- CreateMultipartUpload ---- */

/* An upload to create: recorded at once, or (write-through buckets) once its twin exists at
 * the upstream, from a pool thread. */
struct create_arg {
    struct hd_cbucket *cb; /* write-through: the twin's bucket */
    struct mountpath *mp;
    char *bucket, *key, *ctype, *meta, *hdrs;
    enum hd_ck_type ck;
    int full;
    char id[MPU_ID_HEX + 1];
    char up_id[1024];
};

static void create_free(void *arg)
{
    struct create_arg *ca = arg;

    if (!ca)
        return;
    hd_cbucket_unref(ca->cb);
    free(ca->bucket);
    free(ca->key);
    free(ca->ctype);
    free(ca->meta);
    free(ca->hdrs);
    free(ca);
}

static int create_insert(struct create_arg *ca)
{
    struct db d = {0};
    sqlite3_stmt *s;
    int rc;

    if ((rc = db_open(ca->mp, &d)) < 0)
        return rc;
    prune_done(&d);
    rc = db_prep(&d,
                 "INSERT INTO mpu_uploads(id, bucket, name, created, ctype, meta, ck_algo, "
                 "ck_type, state, hdrs, up_id) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 0, ?9, ?10)",
                 &s);
    if (rc == 0) {
        sqlite3_bind_text(s, 1, ca->id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 2, ca->bucket, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 3, ca->key, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(s, 4, hd_store_now_ms());
        bind_text_or_null(s, 5, ca->ctype);
        bind_text_or_null(s, 6, ca->meta);
        bind_text_or_null(s, 7, ca->ck == HD_CK_NONE ? NULL : hd_cksum_name(ca->ck));
        bind_text_or_null(s, 8,
                          ca->ck == HD_CK_NONE ? NULL
                          : ca->full           ? "FULL_OBJECT"
                                               : "COMPOSITE");
        bind_text_or_null(s, 9, ca->hdrs);
        bind_text_or_null(s, 10, ca->up_id);
        rc = db_run(&d, s, "multipart create");
    }
    db_close(&d);
    return rc;
}

static void create_answer(struct hd_req *r, const struct create_arg *ca)
{
    struct hd_buf b;

    if (ca->ck != HD_CK_NONE) {
        hd_resp_header(r, "x-amz-checksum-algorithm", hd_cksum_name(ca->ck));
        hd_resp_header(r, "x-amz-checksum-type", ca->full ? "FULL_OBJECT" : "COMPOSITE");
    }
    if (r->api == HD_API_NATIVE) { /* AIStore's mpt-upload: the id as the body */
        char *id = strdup(ca->id);
        if (!id)
            hd_resp_err(r, -ENOMEM);
        else
            hd_resp_buf(r, 200, "text/plain", id, strlen(id));
        return;
    }
    hd_buf_init(&b);
    hd_xml_decl(&b);
    hd_xml_open_ns(&b, "InitiateMultipartUploadResult", HD_XML_S3_NS);
    hd_xml_elem(&b, "Bucket", ca->bucket);
    hd_xml_elem(&b, "Key", ca->key);
    hd_xml_elem(&b, "UploadId", ca->id);
    hd_xml_close(&b, "InitiateMultipartUploadResult");
    hd_resp_xml(r, 200, &b);
}

/* Pool: the twin at the upstream first, then the local record (else the twin goes again). */
static void create_run(struct hd_acall *a)
{
    struct create_arg *ca = a->arg;
    char msg[512];

    a->rc = hd_cache_mpu_up_create(ca->cb, ca->key, ca->ctype, ca->meta, ca->hdrs, ca->up_id,
                                   sizeof(ca->up_id), a->msg, sizeof(a->msg));
    if (a->rc < 0)
        return;
    a->msg[0] = '\0';
    if ((a->rc = create_insert(ca)) < 0 &&
        hd_cache_mpu_up_abort(ca->cb, ca->key, ca->up_id, msg, sizeof(msg)) < 0)
        HD_LOG(HD_WARN, a->rid, "multipart %s: aborting the upstream's upload %s: %s", ca->id,
               ca->up_id, msg);
}

static void create_done(struct hd_req *r, struct hd_acall *a)
{
    if (a->rc < 0)
        hd_resp_err_msg(r, a->rc, a->msg[0] ? a->msg : NULL);
    else
        create_answer(r, a->arg);
}

void hd_mpu_create(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key)
{
    const char *algo = hd_req_header(r, "x-amz-checksum-algorithm");
    const char *ctyp = hd_req_header(r, "x-amz-checksum-type");
    const char *ctype = hd_req_header(r, "Content-Type");
    const char *msg = NULL;
    struct create_arg *ca = NULL;
    enum hd_ck_type ck = HD_CK_NONE;
    int full = 0, rc;

    r->op = HD_OP_PUT;
    if ((rc = hd_store_bucket_exists(t->st, bucket)) < 0)
        goto out;
    if (!algo || !*algo)
        algo = hd_req_header(r, "x-amz-sdk-checksum-algorithm");
    if (algo && *algo) {
        ck = hd_cksum_type_from_name(algo);
        if (ck == HD_CK_NONE) {
            rc = HD_EBADARG;
            msg = "Checksum algorithm provided is unsupported.";
            goto out;
        }
    }
    if (ctyp && *ctyp) {
        if (strcasecmp(ctyp, "FULL_OBJECT") == 0) {
            full = 1;
        } else if (strcasecmp(ctyp, "COMPOSITE") != 0) {
            rc = HD_EBADARG;
            msg = "Value for x-amz-checksum-type header is invalid.";
            goto out;
        }
        if (ck == HD_CK_NONE) {
            rc = HD_EBADREQ;
            msg = "The x-amz-checksum-type header can only be used with the "
                  "x-amz-checksum-algorithm header.";
            goto out;
        }
    } else if (ck == HD_CK_CRC64NVME) {
        full = 1; /* S3's default (and only) type for CRC64NVME */
    }
    if (full && !is_crc(ck)) {
        rc = HD_EBADREQ;
        msg = "The FULL_OBJECT checksum type cannot be used with this checksum algorithm.";
        goto out;
    }
    if (!full && ck == HD_CK_CRC64NVME) {
        rc = HD_EBADREQ;
        msg = "The COMPOSITE checksum type cannot be used with the crc64nvme checksum algorithm.";
        goto out;
    }
    if (!(ca = calloc(1, sizeof(*ca)))) {
        rc = -ENOMEM;
        goto out;
    }
    ca->ck = ck;
    ca->full = full;
    ca->mp = hd_store_mp_for(t->st, bucket, key);
    if ((rc = hd_collect_meta(r, &ca->meta)) < 0) {
        msg = "x-amz-meta-* headers are invalid or larger than 2 KiB.";
        goto out;
    }
    if ((rc = hd_collect_hdrs(r, &ca->hdrs)) < 0)
        goto out;
    ca->bucket = strdup(bucket);
    ca->key = strdup(key);
    ca->ctype = ctype ? strdup(ctype) : NULL;
    if (!ca->bucket || !ca->key || (ctype && !ca->ctype)) {
        rc = -ENOMEM;
        goto out;
    }
    if ((rc = hd_store_random_hex(ca->id, MPU_ID_BYTES)) < 0)
        goto out;
    ca->cb = hd_cache_bucket(t->cache, bucket);
    if (ca->cb && hd_api_wants_tags(r)) {
        rc = HD_ENOTIMPL;
        msg = hd_api_upstream_tags_msg;
        goto out;
    }
    if (ca->cb && !ca->cb->props.write_back) { /* write-through: the twin first */
        hd_acall_request(r, t->pool, create_run, create_done, ca, create_free);
        return;
    }
    if ((rc = create_insert(ca)) < 0)
        goto out;
    create_answer(r, ca);
out:
    create_free(ca);
    if (rc < 0)
        hd_resp_err_msg(r, rc, msg);
}

/* ---- UploadPart ---- */

struct part_arg {
    struct hd_store *st;
    struct mountpath *mp;
    char *bucket, *key;
    char id[MPU_ID_HEX + 1];
    unsigned part;
    enum hd_ck_type ck; /* the upload's algorithm: every part must carry it */
    /* write-through: the part goes to the upload's twin (up_id) first */
    struct hd_cache *cache;
    struct hd_cbucket *cb;
    char *up_id;
    struct hd_wt *wt;
    char up_etag[48];
};

static void part_arg_free(void *arg)
{
    struct part_arg *pa = arg;

    if (!pa)
        return;
    hd_cache_wt_free(pa->wt);
    hd_cbucket_unref(pa->cb);
    free(pa->up_id);
    free(pa->bucket);
    free(pa->key);
    free(pa);
}

/* Records the part in the same transaction that checks the upload is still active, so a
 * part never outlives an Abort or Complete that it races with. */
static int part_record(struct part_arg *pa, const char *rel, uint64_t size, const char *etag,
                       const struct hd_put_attrs *a, int64_t mtime, char **old)
{
    struct db d;
    struct upload u;
    sqlite3_stmt *s = NULL;
    int rc, st;

    *old = NULL;
    if ((rc = db_open(pa->mp, &d)) < 0)
        return rc;
    if ((rc = db_tx(&d, Q_BEGIN)) < 0)
        goto out;
    if ((rc = upload_active(&d, pa->id, pa->bucket, pa->key, &u)) < 0)
        goto out;
    upload_cleanup(&u);
    if ((rc = db_prep(&d, "SELECT file FROM mpu_parts WHERE id = ?1 AND part = ?2", &s)) < 0)
        goto out;
    sqlite3_bind_text(s, 1, pa->id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(s, 2, (int)pa->part);
    st = sqlite3_step(s);
    if (st == SQLITE_ROW) {
        *old = hd_store_col_dup(s, 0);
    } else if (st != SQLITE_DONE) {
        rc = hd_store_sqlerr(d.c->db, st, "multipart part lookup");
        goto out;
    }
    sqlite3_finalize(s);
    rc = db_prep(&d,
                 "INSERT OR REPLACE INTO mpu_parts(id, part, size, etag, ck_type, ck_val, mtime, "
                 "file, up_etag) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                 &s);
    if (rc < 0)
        goto out;
    sqlite3_bind_text(s, 1, pa->id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(s, 2, (int)pa->part);
    sqlite3_bind_int64(s, 3, (sqlite3_int64)size);
    sqlite3_bind_text(s, 4, etag, -1, SQLITE_TRANSIENT);
    bind_text_or_null(s, 5, a->ck_type);
    bind_text_or_null(s, 6, a->ck_type && *a->ck_type ? a->ck_val : NULL);
    sqlite3_bind_int64(s, 7, mtime);
    sqlite3_bind_text(s, 8, rel, -1, SQLITE_TRANSIENT);
    bind_text_or_null(s, 9, pa->up_etag);
    rc = db_run(&d, s, "multipart part insert");
    s = NULL;
    if (rc < 0)
        goto out;
    rc = db_tx(&d, Q_COMMIT);
out:
    sqlite3_finalize(s);
    db_close(&d);
    if (rc < 0) {
        free(*old);
        *old = NULL;
    }
    return rc;
}

static int part_commit(struct hd_put *p, const struct hd_put_attrs *a, struct hd_obj_meta *out,
                       void *arg)
{
    struct part_arg *pa = arg;
    unsigned char md5[16];
    char etag[33], rnd[17], rel[128], *old = NULL;
    uint64_t size = hd_put_size(p);
    int64_t mtime = hd_store_now_ms();
    int rc;

    if (pa->ck != HD_CK_NONE && (!a->ck_type || hd_cksum_type_from_name(a->ck_type) != pa->ck))
        return HD_EBADREQ; /* the upload promised a checksum algorithm */
    hd_put_md5(p, md5);
    hd_hex(md5, 16, etag);
    if ((rc = hd_store_random_hex(rnd, 8)) < 0)
        return rc;
    snprintf(rel, sizeof(rel), "mpu/%s/%u-%s", pa->id, pa->part, rnd);
    if ((rc = hd_put_commit_file(p, rel)) < 0)
        return rc;
    rc = part_record(pa, rel, size, etag, a, mtime, &old);
    if (rc < 0) {
        hd_store_unlink_rel(pa->mp, rel);
        return rc;
    }
    if (old) {
        hd_store_unlink_rel(pa->mp, old);
        free(old);
    }
    memset(out, 0, sizeof(*out));
    out->size = size;
    out->mtime_ms = mtime;
    snprintf(out->etag, sizeof(out->etag), "%s", etag);
    if (a->ck_type) {
        snprintf(out->ck_type, sizeof(out->ck_type), "%s", a->ck_type);
        snprintf(out->ck_val, sizeof(out->ck_val), "%s", a->ck_val ? a->ck_val : "");
    }
    return 0;
}

/* Write-through: the verified part goes to the twin before it is recorded here. */
static int part_through(struct hd_req *r, struct hd_put *p, void *arg, char *msg, size_t msglen)
{
    struct part_arg *pa = arg;

    return hd_cache_part_through(r, pa->cache, pa->cb, pa->key, pa->up_id, pa->part, p, &pa->wt,
                                 pa->up_etag, msg, msglen);
}

/* The checksum algorithm the request's headers announce (as the PUT pipeline reads them). */
static enum hd_ck_type request_ck(struct hd_req *r)
{
    const char *trailer = hd_req_header(r, "x-amz-trailer");
    const char *algo = hd_req_header(r, "x-amz-sdk-checksum-algorithm");
    size_t i;

    for (i = 0; i < r->nhdrs; i++) {
        enum hd_ck_type ct = hd_cksum_type_from_header(r->hdrs[i].k);
        if (ct != HD_CK_NONE)
            return ct;
    }
    if (trailer && *trailer)
        return hd_cksum_type_from_header(trailer);
    return algo && *algo ? hd_cksum_type_from_name(algo) : HD_CK_NONE;
}

void hd_mpu_upload_part(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                        const struct hd_sigv4_auth *auth)
{
    const char *id = hd_req_param(r, "uploadId");
    const char *pn = hd_req_param(r, "partNumber");
    struct hd_put_hooks hooks;
    struct part_arg *pa = NULL;
    struct upload u;
    struct db d = {0};
    const char *msg = NULL;
    uint64_t n;
    int rc;

    r->op = HD_OP_PUT;
    if ((rc = hd_store_bucket_exists(t->st, bucket)) < 0)
        goto out;
    if (!pn || hd_parse_u64(pn, &n) < 0 || n < 1 || n > MPU_MAX_PART_NUM) {
        rc = HD_EBADPARTNUM;
        goto out;
    }
    if (!id_valid(id)) {
        rc = HD_ENOSUCHUPLOAD;
        goto out;
    }
    pa = calloc(1, sizeof(*pa));
    if (!pa) {
        rc = -ENOMEM;
        goto out;
    }
    pa->st = t->st;
    pa->mp = hd_store_mp_for(t->st, bucket, key);
    pa->bucket = strdup(bucket);
    pa->key = strdup(key);
    snprintf(pa->id, sizeof(pa->id), "%s", id);
    pa->part = (unsigned)n;
    if (!pa->bucket || !pa->key) {
        rc = -ENOMEM;
        goto out;
    }
    /* fail before the body is read when we already know the answer */
    if ((rc = db_open(pa->mp, &d)) < 0)
        goto out;
    rc = upload_active(&d, id, bucket, key, &u);
    db_close(&d);
    if (rc < 0)
        goto out;
    pa->ck = u.ck;
    pa->up_id = u.up_id;
    u.up_id = NULL;
    upload_cleanup(&u);
    if (pa->up_id && !(pa->cb = hd_cache_bucket(t->cache, bucket))) {
        rc = HD_EUNAVAIL; /* the bucket stopped being S3-backed */
        msg = "The bucket is no longer backed by the upstream this upload was started at.";
        goto out;
    }
    pa->cache = t->cache;
    if (pa->ck != HD_CK_NONE && request_ck(r) != pa->ck) {
        rc = HD_EBADREQ;
        msg = "Checksum type mismatch: the upload was created with a checksum algorithm that "
              "this part does not carry.";
        goto out;
    }
    hooks.through = pa->up_id ? part_through : NULL;
    hooks.commit = part_commit;
    hooks.arg = pa;
    hooks.arg_free = part_arg_free;
    hd_obj_put_ex(r, t, bucket, key, auth, &hooks); /* owns pa from here */
    return;
out:
    part_arg_free(pa);
    hd_resp_err_msg(r, rc, msg);
}

/* The checksum of type t of the bytes written to p (flushed first), base64. */
static int put_file_cksum(struct hd_put *p, enum hd_ck_type t, char out[HD_CK_B64_MAX])
{
    struct hd_cksum ck;
    char *buf = NULL;
    off_t off = 0;
    ssize_t n;
    int fd = -1, rc;

    if ((rc = hd_put_flush(p)) < 0 || (rc = hd_cksum_init(&ck, t)) < 0)
        return rc;
    if (!(buf = malloc(1 << 20))) {
        rc = -ENOMEM;
        goto out;
    }
    if ((fd = open(hd_put_tmp_path(p), O_RDONLY | O_CLOEXEC)) < 0) {
        rc = -errno;
        goto out;
    }
    while ((n = pread(fd, buf, 1 << 20, off)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            goto out;
        }
        hd_cksum_update(&ck, buf, (size_t)n);
        off += n;
    }
    hd_cksum_final_b64(&ck, out);
out:
    if (fd >= 0)
        close(fd);
    free(buf);
    hd_cksum_cleanup(&ck);
    return rc;
}

/* ---- UploadPartCopy ----
 * A part made of (a range of) another object: the source's bytes go through a put on the
 * upload's mountpath and are committed as the part, exactly as an uploaded part is. A source
 * held here is read on the worker (disk only, as CopyObject does); one another target owns is
 * streamed from it on the pool, with the request parked. */

struct pcopy {
    struct hd_target *t;
    struct part_arg *pa;
    char *sb, *sk; /* the source */
    int ranged;
    uint64_t first, last; /* x-amz-copy-source-range, inclusive */
    char range[64];       /* the same as a Range header */
    char *cond_v[4];
    struct hd_cond cond; /* x-amz-copy-source-if-*, pointing into cond_v */
    struct hd_obj_meta out;
    char msg[512];
};

static void pcopy_free(void *arg)
{
    struct pcopy *c = arg;
    size_t i;

    part_arg_free(c->pa);
    free(c->sb);
    free(c->sk);
    for (i = 0; i < 4; i++)
        free(c->cond_v[i]);
    free(c);
}

/* "bytes=first-last", digits only, first <= last (what AWS accepts). */
static int copy_range_parse(const char *v, uint64_t *first, uint64_t *last)
{
    char a[24], b[24];
    const char *dash;

    if (strncmp(v, "bytes=", 6) != 0 || !(dash = strchr(v + 6, '-')) ||
        (size_t)(dash - v - 6) >= sizeof(a) || strlen(dash + 1) >= sizeof(b))
        return -1;
    snprintf(a, sizeof(a), "%.*s", (int)(dash - v - 6), v + 6);
    snprintf(b, sizeof(b), "%s", dash + 1);
    if (hd_parse_u64(a, first) < 0 || hd_parse_u64(b, last) < 0 || *first > *last)
        return -1;
    return 0;
}

/* The range against a source of `size` bytes: 0, or HD_EBADARG with AWS's message. */
static int pcopy_check_range(struct pcopy *c, uint64_t size)
{
    if (c->ranged && (c->last >= size || c->first >= size)) {
        snprintf(c->msg, sizeof(c->msg),
                 "Range specified is not valid for source object of size: %llu",
                 (unsigned long long)size);
        return HD_EBADARG;
    }
    return 0;
}

/* Commits what p holds as the part (with the upload's checksum algorithm computed over it). */
static int pcopy_commit(struct pcopy *c, struct hd_put *p)
{
    struct hd_put_attrs a;
    char ck[HD_CK_B64_MAX];
    int rc;

    memset(&a, 0, sizeof(a));
    if (c->pa->ck != HD_CK_NONE) {
        if ((rc = put_file_cksum(p, c->pa->ck, ck)) < 0)
            return rc;
        a.ck_type = hd_cksum_name(c->pa->ck);
        a.ck_val = ck;
    }
    return part_commit(p, &a, &c->out, c->pa);
}

/* The source held here: HD_ENOSUCHKEY when it is not. */
static int pcopy_local(void *arg)
{
    struct pcopy *c = arg;
    struct hd_obj_meta m;
    struct hd_put *p = NULL;
    uint64_t off, len;
    char *buf = NULL;
    int fd = -1, rc = hd_store_open_object(c->t->st, c->sb, c->sk, &m, &fd);

    if (rc < 0)
        return rc;
    rc = hd_cond_eval(&c->cond, m.etag, (time_t)(m.mtime_ms / 1000), 1);
    /* evaluated as a read (x-amz-copy-source-if-modified-since counts, as on a peer's GET)
     * but a failed condition is 412, never 304 */
    if (rc == HD_ENOTMODIFIED)
        rc = HD_EPRECONDITION;
    if (rc < 0 || (rc = pcopy_check_range(c, m.size)) < 0)
        goto out;
    off = c->ranged ? c->first : 0;
    len = c->ranged ? c->last - c->first + 1 : m.size;
    if ((rc = hd_put_begin_sized(c->t->st, c->pa->bucket, c->pa->key, len, &p)) < 0)
        goto out;
    if (!(buf = malloc(1 << 20))) {
        rc = -ENOMEM;
        goto out;
    }
    while (len > 0) {
        ssize_t n = pread(fd, buf, len > (1u << 20) ? (1u << 20) : (size_t)len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = n < 0 ? -errno : HD_EINTERNAL;
            goto out;
        }
        if ((rc = hd_put_write(p, buf, (size_t)n)) < 0)
            goto out;
        off += (uint64_t)n;
        len -= (uint64_t)n;
    }
    rc = pcopy_commit(c, p);
out:
    free(buf);
    hd_put_free(p);
    close(fd);
    hd_obj_meta_cleanup(&m);
    return rc;
}

/* The source from its owner, another target (pool thread). */
static int pcopy_remote(void *arg)
{
    struct pcopy *c = arg;
    struct hd_put *p = NULL;
    char url[512], *xmeta = NULL;
    uint64_t total = 0;
    int rc = hd_peer_owner_elsewhere(c->t->cl, c->sb, c->sk, url, sizeof(url));

    if (rc < 0 || (rc = hd_put_begin(c->t->st, c->pa->bucket, c->pa->key, &p)) < 0)
        goto out;
    rc = hd_peer_get_range_into(c->t->cl, url, c->sb, c->sk, 0, &c->cond,
                                c->ranged ? c->range : NULL, p, &xmeta, &total);
    if (rc == HD_ERANGE || (rc == 0 && c->ranged && c->last >= total)) {
        c->ranged = 1;
        rc = pcopy_check_range(c, total);
        if (rc == 0)
            rc = HD_EBADARG;
        goto out;
    }
    if (rc == 0)
        rc = pcopy_commit(c, p);
out:
    hd_put_free(p);
    free(xmeta);
    return rc;
}

/* A source another target owns or of an S3-backed bucket (hd_api_copy_run), on the pool. */
static void pcopy_run(struct hd_acall *a)
{
    struct pcopy *c = a->arg;

    a->rc =
        hd_api_copy_run(c->t, c->sb, c->sk, pcopy_local, pcopy_remote, c, c->msg, sizeof(c->msg));
}

static void pcopy_answer(struct hd_req *r, struct pcopy *c, int rc)
{
    struct hd_buf b;
    char ts[32], etag[64], tag[32];

    if (rc < 0) {
        hd_resp_err_msg(r, rc, c->msg[0] ? c->msg : NULL);
        return;
    }
    hd_buf_init(&b);
    hd_xml_decl(&b);
    hd_xml_open_ns(&b, "CopyPartResult", HD_XML_S3_NS);
    hd_iso8601_ms(c->out.mtime_ms, ts);
    hd_xml_elem(&b, "LastModified", ts);
    snprintf(etag, sizeof(etag), "\"%s\"", c->out.etag);
    hd_xml_elem(&b, "ETag", etag);
    if (c->pa->ck != HD_CK_NONE && c->out.ck_val[0]) {
        ck_tag(c->pa->ck, tag, sizeof(tag));
        hd_xml_elem(&b, tag, c->out.ck_val);
    }
    hd_xml_close(&b, "CopyPartResult");
    hd_resp_xml(r, 200, &b);
}

static void pcopy_done(struct hd_req *r, struct hd_acall *a)
{
    pcopy_answer(r, a->arg, a->rc);
}

void hd_mpu_upload_part_copy(struct hd_req *r, struct hd_target *t, const char *bucket,
                             const char *key)
{
    static const char *const hdrs[4] = {
        "x-amz-copy-source-if-match", "x-amz-copy-source-if-none-match",
        "x-amz-copy-source-if-modified-since", "x-amz-copy-source-if-unmodified-since"};
    const char *id = hd_req_param(r, "uploadId"), *pn = hd_req_param(r, "partNumber");
    const char *rg = hd_req_header(r, "x-amz-copy-source-range"), *msg = NULL;
    struct hd_cbucket *scb;
    struct pcopy *c = NULL;
    struct upload u;
    struct db d = {0};
    char url[512];
    uint64_t n;
    int rc, i;

    r->op = HD_OP_PUT;
    if ((rc = hd_store_bucket_exists(t->st, bucket)) < 0)
        goto out;
    if (!pn || hd_parse_u64(pn, &n) < 0 || n < 1 || n > MPU_MAX_PART_NUM) {
        rc = HD_EBADPARTNUM;
        goto out;
    }
    if (!id_valid(id)) {
        rc = HD_ENOSUCHUPLOAD;
        goto out;
    }
    if (!(c = calloc(1, sizeof(*c))) || !(c->pa = calloc(1, sizeof(*c->pa)))) {
        rc = -ENOMEM;
        goto out;
    }
    c->t = t;
    c->pa->st = t->st;
    c->pa->mp = hd_store_mp_for(t->st, bucket, key);
    c->pa->bucket = strdup(bucket);
    c->pa->key = strdup(key);
    snprintf(c->pa->id, sizeof(c->pa->id), "%s", id);
    c->pa->part = (unsigned)n;
    if (!c->pa->bucket || !c->pa->key) {
        rc = -ENOMEM;
        goto out;
    }
    if ((rc = db_open(c->pa->mp, &d)) < 0)
        goto out;
    rc = upload_active(&d, id, bucket, key, &u);
    db_close(&d);
    if (rc < 0)
        goto out;
    c->pa->ck = u.ck;
    upload_cleanup(&u);
    if ((rc = hd_copy_source_parse(hd_req_header(r, "x-amz-copy-source"), &c->sb, &c->sk)) < 0) {
        msg = "Invalid copy source (expected /bucket/key, url-encoded).";
        goto out;
    }
    /* the source's names, in a NoSuchBucket or NoSuchKey about it */
    if ((rc = hd_req_err_names(r, c->sb, c->sk)) < 0 ||
        (rc = hd_store_bucket_exists(t->st, c->sb)) < 0)
        goto out;
    if (rg) {
        if (copy_range_parse(rg, &c->first, &c->last) < 0) {
            struct hd_kv ex[] = {{"ArgumentName", "x-amz-copy-source-range"},
                                 {"ArgumentValue", rg}};
            hd_resp_err_ex(r, HD_EBADARG,
                           "The x-amz-copy-source-range value must be of the form "
                           "bytes=first-last where first and last are the zero-based offsets "
                           "of the first and last bytes to copy",
                           ex, 2);
            pcopy_free(c);
            return;
        }
        c->ranged = 1;
        snprintf(c->range, sizeof(c->range), "bytes=%llu-%llu", (unsigned long long)c->first,
                 (unsigned long long)c->last);
    }
    for (i = 0; i < 4; i++) {
        const char *v = hd_req_header(r, hdrs[i]);
        if (v && !(c->cond_v[i] = strdup(v))) {
            rc = -ENOMEM;
            goto out;
        }
    }
    c->cond.if_match = c->cond_v[0];
    c->cond.if_none_match = c->cond_v[1];
    c->cond.if_modified_since = c->cond_v[2];
    c->cond.if_unmodified_since = c->cond_v[3];
    /* never on the HTTP worker (a part is up to 5 GiB of copying). Read as a GET reads it: an
     * S3-backed source, or one another target owns, on the upstream pool; one held here on
     * the disk workers */
    if ((scb = hd_cache_bucket(t->cache, c->sb)) ||
        hd_peer_owner_elsewhere(t->cl, c->sb, c->sk, url, sizeof(url)) != HD_ENOSUCHKEY || !t->disk)
        hd_acall_request(r, t->pool, pcopy_run, pcopy_done, c, pcopy_free);
    else
        hd_acall_request(r, t->disk, pcopy_run, pcopy_done, c, pcopy_free);
    hd_cbucket_unref(scb);
    return;
out:
    if (c)
        pcopy_free(c);
    hd_resp_err_msg(r, rc, msg);
}

/* ---- CRC combination for FULL_OBJECT checksums ----
 * The CRCs here are reflected with init = xorout = all ones, so crc(A|B) = crc(A) * x^(8|B|)
 * + crc(B) in GF(2)[x] mod P (zlib's crc32_combine, generalised to 64-bit registers). */

static uint64_t gf_mul(uint64_t a, uint64_t b, uint64_t poly, unsigned w)
{
    uint64_t m = (uint64_t)1 << (w - 1), p = 0;

    while (m) {
        if (a & m)
            p ^= b;
        m >>= 1;
        b = b & 1 ? (b >> 1) ^ poly : b >> 1;
    }
    return p;
}

static uint64_t crc_combine(enum hd_ck_type t, uint64_t crc1, uint64_t crc2, uint64_t len2)
{
    uint64_t poly = t == HD_CK_CRC32    ? 0xedb88320u
                    : t == HD_CK_CRC32C ? 0x82f63b78u
                                        : 0x9a6c9329ac4bc9b5ull;
    unsigned w = t == HD_CK_CRC64NVME ? 64 : 32;
    uint64_t sq = (uint64_t)1 << (w - 2); /* x^1 */
    uint64_t xp = (uint64_t)1 << (w - 1); /* x^0 */
    int k;

    for (k = 0; k < 3; k++)
        sq = gf_mul(sq, sq, poly, w); /* x^8: one byte */
    for (; len2; len2 >>= 1) {
        if (len2 & 1)
            xp = gf_mul(sq, xp, poly, w);
        sq = gf_mul(sq, sq, poly, w);
    }
    return gf_mul(xp, crc1, poly, w) ^ crc2;
}

/* A CRC checksum value (base64, big-endian) to an integer; HD_EINVALIDDIGEST if malformed. */
static int crc_decode(enum hd_ck_type t, const char *b64, uint64_t *out)
{
    unsigned char raw[16];
    size_t n, i, want = t == HD_CK_CRC64NVME ? 8 : 4;

    if (hd_b64_decode(b64, strlen(b64), raw, sizeof(raw), &n) < 0 || n != want)
        return HD_EINVALIDDIGEST;
    *out = 0;
    for (i = 0; i < n; i++)
        *out = *out << 8 | raw[i];
    return 0;
}

static void crc_encode(enum hd_ck_type t, uint64_t v, char out[HD_CK_B64_MAX])
{
    unsigned char raw[8];
    size_t n = t == HD_CK_CRC64NVME ? 8 : 4, i;

    for (i = 0; i < n; i++)
        raw[i] = (unsigned char)(v >> (8 * (n - 1 - i)));
    hd_b64_encode(raw, n, out, HD_CK_B64_MAX);
}

/* ---- CompleteMultipartUpload ---- */

struct complete_res {
    char etag[48];
    enum hd_ck_type ck;
    int full;
    char ck_val[64];
};

enum { CS_START, CS_ASSEMBLING, CS_THROUGH, CS_COMMITTING, CS_ANSWER };

struct complete_ctx {
    uint32_t magic;
    struct hd_target *t;
    char *bucket, *key;
    char id[MPU_ID_HEX + 1];
    struct hd_buf body;
    int stage;                  /* CS_*: where complete_end goes on after a park */
    struct hd_complete_req req; /* the parsed body (parsed set) */
    int parsed;
    struct upload u; /* the upload's row, as the checks read it */
    struct mountpath *mp;
    struct hd_acall *job;     /* the assembly or commit on the disk workers (struct asm_job) */
    struct asm_job *late_job; /* late: started once the upstream completed the twin */
    char uetag[48];           /* the upstream's ETag (write-through) */
    /* S3-backed buckets: the upload's twin at the upstream is completed (parking the
     * request) before the assembled object is committed here */
    struct hd_cbucket *cb;
    struct hd_put *p;
    struct hd_put_attrs a;
    char *ctype, *meta, *hdrs, *parts, *up_id;
    struct hd_cache_upart *uparts;
    size_t nuparts;
    struct complete_res res;
    struct hd_wt *wt;
    int late;           /* answered once the twin is completed (struct asm_job) */
    struct hd_wcond wc; /* If-Match / If-None-Match: * on the object (pointing into r) */
    const char *cond;   /* the condition that failed (412) */
    char msgbuf[256];   /* an error message made for this request */
    char twin_msg[512];
    /* a large native or write-back Complete: 200 at once, then spaces while the parts are
     * assembled, then the result or an <Error> (as AWS answers; keepalive.h) */
    int keepalive;
    struct hd_ka *ka; /* registered while the 200 waits */
    struct hd_ka_body kb;
};

/* The checked parts of a Complete, in order: content files (relative) and sizes. They are
 * opened one at a time while copying, so 10000 parts need no 10000 descriptors; a part file
 * that vanished meanwhile was replaced, aborted or completed by a racing request. */
struct src {
    struct strv files;
    uint64_t *sizes;
    struct hd_cache_upart *up; /* numbers, MD5s and the twin's ETags ("": it has none) */
};

static void src_cleanup(struct src *sc)
{
    strv_free(&sc->files);
    free(sc->sizes);
    free(sc->up);
    sc->sizes = NULL;
    sc->up = NULL;
}

/* Checks one listed part against its row (s positioned on it) and folds it into the
 * multipart ETag and checksum. */
static int check_part(const struct upload *u, const struct hd_complete_part *cp, sqlite3_stmt *s,
                      int first, int last, struct hd_md5 *md5, struct hd_cksum *comp, uint64_t *crc,
                      struct hd_cache_upart *up, const char **msg)
{
    const char *etag = (const char *)sqlite3_column_text(s, 1);
    const char *pck = (const char *)sqlite3_column_text(s, 2);
    const char *pval = (const char *)sqlite3_column_text(s, 3);
    uint64_t size = (uint64_t)sqlite3_column_int64(s, 0), v;
    unsigned char raw[64];
    size_t i, n;

    if (!etag || (!cp->any_etag && strcasecmp(etag, cp->etag) != 0))
        return HD_EINVALIDPART;
    for (i = 0; i < cp->nck; i++)
        if (!pck || !pval || strcasecmp(cp->ck[i].algo, pck) != 0 ||
            strcmp(cp->ck[i].value, pval) != 0)
            return HD_EINVALIDPART;
    if (!last && size < min_part_size()) {
        *msg = "Your proposed upload is smaller than the minimum allowed size: every part but "
               "the last must be at least 5 MiB.";
        return HD_ETOOSMALL;
    }
    if (hd_unhex(etag, strlen(etag), raw, sizeof(raw), &n) < 0 || n != 16)
        return HD_EINTERNAL;
    hd_md5_update(md5, raw, 16);
    up->num = cp->part_number;
    up->size = size;
    memcpy(up->md5, raw, 16);
    hd_store_col_copy(s, 5, up->up_etag, sizeof(up->up_etag));
    if (u->ck == HD_CK_NONE)
        return 0;
    if (!pck || hd_cksum_type_from_name(pck) != u->ck || !pval) {
        *msg = "A part was uploaded without the upload's checksum algorithm.";
        return HD_EINVALIDPART;
    }
    if (u->full) {
        if (crc_decode(u->ck, pval, &v) < 0)
            return HD_EINTERNAL;
        *crc = first ? v : crc_combine(u->ck, *crc, v, size);
        return 0;
    }
    if (hd_b64_decode(pval, strlen(pval), raw, sizeof(raw), &n) < 0)
        return HD_EINTERNAL;
    hd_cksum_update(comp, raw, n);
    return 0;
}

/* Under the catalog's write lock (a consistent view of the parts): validates the parts list
 * and collects the part files. */
static int complete_prepare(struct complete_ctx *cc, struct db *d, const struct upload *u,
                            const struct hd_complete_req *req, struct src *sc,
                            struct complete_res *res, const char **msg)
{
    struct hd_md5 md5 = {0};
    struct hd_cksum comp;
    unsigned char digest[16];
    char hex[33];
    sqlite3_stmt *s = NULL;
    uint64_t crc = 0, total = 0;
    size_t i;
    int rc, st, comp_on = 0;

    sc->sizes = malloc(req->n * sizeof(*sc->sizes));
    sc->up = calloc(req->n, sizeof(*sc->up));
    if (!sc->sizes || !sc->up)
        return -ENOMEM;
    if ((rc = hd_md5_init(&md5)) < 0)
        goto out;
    if (u->ck != HD_CK_NONE && !u->full) {
        if ((rc = hd_cksum_init(&comp, u->ck)) < 0)
            goto out;
        comp_on = 1;
    }
    rc = db_prep(d,
                 "SELECT size, etag, ck_type, ck_val, file, up_etag FROM mpu_parts "
                 "WHERE id = ?1 AND part = ?2",
                 &s);
    if (rc < 0)
        goto out;
    for (i = 0; i < req->n; i++) {
        const struct hd_complete_part *cp = &req->parts[i];
        const char *file;
        sqlite3_reset(s);
        sqlite3_bind_text(s, 1, cc->id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(s, 2, (int)cp->part_number);
        st = sqlite3_step(s);
        if (st == SQLITE_DONE) {
            rc = HD_EINVALIDPART;
            goto out;
        }
        if (st != SQLITE_ROW) {
            rc = hd_store_sqlerr(d->c->db, st, "multipart part lookup");
            goto out;
        }
        rc = check_part(u, cp, s, i == 0, i + 1 == req->n, &md5, &comp, &crc, &sc->up[i], msg);
        if (rc < 0)
            goto out;
        sc->sizes[i] = (uint64_t)sqlite3_column_int64(s, 0);
        total += sc->sizes[i];
        if (total > cc->t->max_object) {
            rc = HD_ETOOLARGE;
            goto out;
        }
        file = (const char *)sqlite3_column_text(s, 4);
        if ((rc = strv_push(&sc->files, file ? file : "")) < 0)
            goto out;
    }
    hd_md5_final(&md5, digest);
    hd_hex(digest, 16, hex);
    snprintf(res->etag, sizeof(res->etag), "%s-%zu", hex, req->n);
    res->ck = u->ck;
    res->full = u->full;
    if (comp_on) {
        char b64[HD_CK_B64_MAX];
        hd_cksum_final_b64(&comp, b64);
        snprintf(res->ck_val, sizeof(res->ck_val), "%s-%zu", b64, req->n);
    } else if (u->full) {
        crc_encode(u->ck, crc, res->ck_val);
    }
out:
    sqlite3_finalize(s);
    if (comp_on)
        hd_cksum_cleanup(&comp);
    hd_md5_cleanup(&md5);
    return rc;
}

/* Drops the upload's parts (listed or not) and marks it completed; keep_parts: only marks it
 * (a write-through Complete answered before its cached copy is assembled from them). */
static int complete_finish(const char *id, struct mountpath *mp, const struct complete_res *res,
                           int keep_parts)
{
    struct strv files = {0};
    struct db d;
    sqlite3_stmt *s;
    int rc;

    if ((rc = db_open(mp, &d)) < 0)
        return rc;
    if ((rc = db_tx(&d, Q_BEGIN)) < 0)
        goto out;
    if (!keep_parts && ((rc = part_files(&d, id, &files)) < 0 || (rc = delete_parts(&d, id)) < 0))
        goto out;
    rc = db_prep(&d,
                 "UPDATE mpu_uploads SET state = 1, etag = ?2, ck_val = ?3, done = ?4 "
                 "WHERE id = ?1",
                 &s);
    if (rc < 0)
        goto out;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, res->etag, -1, SQLITE_TRANSIENT);
    bind_text_or_null(s, 3, res->ck_val);
    sqlite3_bind_int64(s, 4, hd_store_now_ms());
    if ((rc = db_run(&d, s, "multipart complete")) < 0)
        goto out;
    if ((rc = db_tx(&d, Q_COMMIT)) < 0)
        goto out;
    db_close(&d);
    remove_files(mp, id, &files);
out:
    db_close(&d);
    strv_free(&files);
    return rc;
}

/* Copies the part files into p, opening them one at a time. -ENOENT when one vanished. */
static int copy_parts(struct hd_put *p, struct mountpath *mp, const struct src *sc)
{
    char path[PATH_MAX];
    struct stat sb;
    size_t i;
    int fd, rc = 0;

    for (i = 0; i < sc->files.n && rc == 0; i++) {
        snprintf(path, sizeof(path), "%s/%s", mp->path, sc->files.v[i]);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return -errno;
        if (fstat(fd, &sb) < 0) {
            rc = -errno;
        } else if ((uint64_t)sb.st_size != sc->sizes[i]) {
            HD_LOG(HD_ERROR, NULL, "multipart: part file %s has %lld bytes, not %llu", path,
                   (long long)sb.st_size, (unsigned long long)sc->sizes[i]);
            rc = HD_EINTERNAL;
        } else {
            rc = hd_put_append_file(p, fd, sc->sizes[i]);
        }
        close(fd);
    }
    return rc;
}

/* First step of a Complete, under the catalog's write lock: HD_DECLINED with *res filled when
 * the upload is already completed (a retried Complete gets the first answer), 0 with the parts
 * checked and collected, or a negative code. */
static int complete_start(struct complete_ctx *cc, struct mountpath *mp,
                          const struct hd_complete_req *req, struct upload *u, struct src *sc,
                          struct complete_res *res, const char **msg)
{
    struct db d;
    int rc;

    if ((rc = db_open(mp, &d)) < 0)
        return rc;
    if ((rc = db_tx(&d, Q_BEGIN)) < 0)
        goto out;
    if ((rc = upload_get(&d, cc->id, cc->bucket, cc->key, u)) < 0)
        goto out;
    if (u->state == UP_DONE) {
        snprintf(res->etag, sizeof(res->etag), "%s", u->etag);
        snprintf(res->ck_val, sizeof(res->ck_val), "%s", u->ck_val);
        res->ck = u->ck;
        res->full = u->full;
        rc = HD_DECLINED; /* completed already: answer as it did */
        goto out;
    }
    rc = complete_prepare(cc, &d, u, req, sc, res, msg);
out:
    db_close(&d); /* read only: rolls back, releasing the lock for the long copy */
    return rc;
}

/* S3 writes algorithm names in lower case in these messages. */
static const char *lname(enum hd_ck_type t, char *buf, size_t n)
{
    size_t i;

    snprintf(buf, n, "%s", t == HD_CK_NONE ? "null" : hd_cksum_name(t));
    for (i = 0; buf[i]; i++)
        buf[i] = (char)tolower((unsigned char)buf[i]);
    return buf;
}

/* The checksum headers of a Complete against the upload's (res: what the parts make): 0, with
 * *vt and *vval set when the client asserts a full-object checksum of an upload created without
 * an algorithm (then verified over the assembled bytes); or the error, with *msg. */
static int complete_ck_check(struct hd_req *r, struct complete_ctx *cc, const struct upload *u,
                             const struct complete_res *res, enum hd_ck_type *vt, const char **vval,
                             const char **msg)
{
    const char *typ = hd_req_header(r, "x-amz-checksum-type"), *want = NULL;
    const char *utype = u->ck == HD_CK_NONE ? NULL : u->full ? "FULL_OBJECT" : "COMPOSITE";
    enum hd_ck_type wt = HD_CK_NONE;
    char a[16], b[16];
    size_t i;

    *vt = HD_CK_NONE;
    for (i = 0; i < r->nhdrs; i++) {
        enum hd_ck_type ct = hd_cksum_type_from_header(r->hdrs[i].k);
        if (ct == HD_CK_NONE)
            continue;
        if (wt != HD_CK_NONE) {
            *msg = "Expecting a single x-amz-checksum- header. Multiple checksum Types are not "
                   "allowed.";
            return HD_EBADREQ;
        }
        wt = ct;
        want = r->hdrs[i].v;
    }
    if (typ && *typ) {
        int full = strcasecmp(typ, "FULL_OBJECT") == 0;
        if (!full && strcasecmp(typ, "COMPOSITE") != 0) {
            *msg = "Value for x-amz-checksum-type header is invalid.";
            return HD_EBADREQ;
        }
        if (utype ? strcasecmp(typ, utype) != 0 : !full)
            goto mode;
    }
    if (!want)
        return 0;
    if (!hd_cksum_value_ok(wt, want, 1)) {
        snprintf(cc->msgbuf, sizeof(cc->msgbuf), "Value for %s header is invalid.",
                 hd_cksum_header(wt));
        *msg = cc->msgbuf;
        return HD_ECKVALUE;
    }
    if (u->ck == HD_CK_NONE) {
        if (strchr(want, '-'))
            goto mode; /* a checksum of part checksums that were never sent */
        *vt = wt;      /* what the client says the whole object is: checked over the bytes */
        *vval = want;
        return 0;
    }
    if (wt != u->ck) {
        snprintf(cc->msgbuf, sizeof(cc->msgbuf),
                 "Checksum Type mismatch occurred, expected checksum Type: %s, actual checksum "
                 "Type: %s",
                 lname(u->ck, a, sizeof(a)), lname(wt, b, sizeof(b)));
        *msg = cc->msgbuf;
        return HD_EBADREQ;
    }
    if (strcmp(want, res->ck_val) != 0) {
        snprintf(cc->msgbuf, sizeof(cc->msgbuf),
                 "The %s you specified did not match the calculated checksum.", hd_cksum_name(wt));
        *msg = cc->msgbuf;
        return HD_EBADCHECKSUM;
    }
    return 0;
mode: /* AWS's documentation: BadDigest (the text is versitygw's, matched against S3) */
    snprintf(cc->msgbuf, sizeof(cc->msgbuf),
             "The upload was created using the %s checksum mode. The complete request must use "
             "the same checksum mode.",
             utype ? utype : "null");
    *msg = cc->msgbuf;
    return HD_EBADCHECKSUM;
}

/* The part sizes as the object's parts JSON, runs of equal sizes as [size, count]
 * ([[8388608,12],[4194304,1]]: clients upload equal parts but the last, so this stays a few
 * bytes however many parts there are); malloc'd, NULL on OOM. */
static char *parts_json(const struct src *sc)
{
    struct hd_buf b;
    size_t i, run;

    hd_buf_init(&b);
    hd_buf_puts(&b, "[");
    for (i = 0; i < sc->files.n; i += run) {
        for (run = 1; i + run < sc->files.n && sc->sizes[i + run] == sc->sizes[i]; run++)
            ;
        hd_buf_printf(&b, "%s[%llu,%zu]", i ? "," : "", (unsigned long long)sc->sizes[i], run);
    }
    hd_buf_puts(&b, "]");
    if (b.oom) {
        hd_buf_cleanup(&b);
        return NULL;
    }
    return hd_buf_steal(&b, NULL);
}

/* Starts completing u's twin with the parts of sc (or, for an upload begun before twins,
 * making one and sending them all): complete_end waits for it. */
static int twin_start(struct hd_req *r, struct complete_ctx *cc, struct upload *u,
                      struct mountpath *mp, const struct src *sc, const char *etag,
                      const char **msg)
{
    char path[PATH_MAX], uetag[48];
    size_t i;
    int rc;

    cc->up_id = u->up_id;
    u->up_id = NULL;
    if (!(cc->uparts = calloc(sc->files.n, sizeof(*cc->uparts))))
        return -ENOMEM;
    for (cc->nuparts = 0; cc->nuparts < sc->files.n; cc->nuparts++) {
        i = cc->nuparts;
        cc->uparts[i] = sc->up[i];
        snprintf(path, sizeof(path), "%s/%s", mp->path, sc->files.v[i]);
        if (!(cc->uparts[i].path = strdup(path)))
            return -ENOMEM;
    }
    rc = hd_cache_mpu_through(r, cc->t->cache, cc->cb, cc->key, cc->up_id, u->ctype, u->meta,
                              u->hdrs, cc->uparts, cc->nuparts, etag, &cc->wt, uetag, cc->twin_msg,
                              sizeof(cc->twin_msg));
    if (rc == HD_AGAIN)
        return 0;
    *msg = cc->twin_msg[0] ? cc->twin_msg : NULL;
    return rc < 0 ? rc : HD_EINTERNAL; /* a first call only starts */
}

/* The assembly of a Complete on the target's disk workers: copy_file_range of every part, a
 * full-object checksum when the client asserts one, and, where nothing waits for the
 * upstream, the commit with its fsync and the upload's end. The HTTP worker's other
 * connections go on meanwhile (a 1 GiB checkpoint is seconds of copying and fsync). The job
 * owns what it uses: a client that leaves first leaves it to finish or fail on its own, and
 * a put it did not commit removes its temp file. A write-through object's commit, once the
 * upstream completed the twin, is a second job of the same kind, without the copy.
 *
 * A late job (write-through, no full-object checksum or condition to check here) starts
 * once the upstream completed the twin and the request is answered: it copies and commits
 * on its own, under a fence (target/store/fence.c) that any write or delete of the name
 * since the Complete started cancels. Queued after the answer, not beside the twin's
 * completion: no hand-off with a running job, and the two orders measured the same
 * (performance.md). */
struct asm_job {
    struct hd_put *p;
    struct mountpath *mp;
    struct src sc;      /* the parts, in order */
    int copy;           /* copy them into p */
    int commit;         /* commit p with a, then end the upload (complete_finish) */
    enum hd_ck_type vt; /* a full-object checksum to check over the bytes (HD_CK_NONE: none) */
    char vval[HD_CK_B64_MAX];
    struct hd_put_attrs a;
    char *ctype, *meta, *hdrs, *parts, *if_match;
    char etag[64];
    char id[MPU_ID_HEX + 1];
    struct complete_res res;      /* the answer (its checksum set by a checked vt) */
    int late;                     /* copy and commit after the answer (late_commit) */
    struct hd_store_fence *fence; /* late: the commit's (owned) */
};

static void asm_free(void *arg)
{
    struct asm_job *j = arg;

    hd_put_free(j->p);
    src_cleanup(&j->sc);
    free(j->ctype);
    free(j->meta);
    free(j->hdrs);
    free(j->parts);
    free(j->if_match);
    hd_store_fence_free(j->fence);
    free(j);
}

/* A FULL_OBJECT CRC describes the bytes and may be served with them; a composite one
 * ("b64-N") is kept too, but only HEAD shows it: clients would check it against a body. */
static void asm_ck_attrs(struct asm_job *j)
{
    if (j->res.ck != HD_CK_NONE && j->res.ck_val[0]) {
        j->a.ck_type = hd_cksum_name(j->res.ck);
        j->a.ck_val = j->res.ck_val;
    }
}

/* A late job's end (disk worker): the commit under the upstream's ETag unless the copy
 * failed or a newer write or a delete of the name came first, then the parts go. */
static void late_commit(struct asm_job *j, int rc)
{
    struct hd_obj_meta m;

    if (rc == 0) {
        asm_ck_attrs(j);
        j->a.fence = j->fence;
        if ((rc = hd_put_commit(j->p, &j->a, &m)) == 0)
            hd_obj_meta_cleanup(&m);
    }
    if (rc == HD_EPRECONDITION)
        HD_LOG(HD_INFO, NULL, "multipart %s: a newer write or a delete came first: not cached",
               j->id);
    else if (rc < 0)
        HD_LOG(HD_WARN, NULL, "multipart %s: assembling: %s (not cached)", j->id, hd_strerror(rc));
    if ((rc = complete_finish(j->id, j->mp, &j->res, 0)) < 0)
        HD_LOG(HD_WARN, NULL, "multipart %s: dropping the parts: %s", j->id, hd_strerror(rc));
    hd_store_fence_free(j->fence);
    j->fence = NULL;
}

static void asm_run(struct hd_acall *ac)
{
    struct asm_job *j = ac->arg;
    struct hd_obj_meta m;
    char got[HD_CK_B64_MAX];
    int rc = 0;

    if (j->copy)
        rc = copy_parts(j->p, j->mp, &j->sc);
    if (j->late) {
        late_commit(j, rc);
        ac->rc = rc;
        return;
    }
    if (rc == 0 && j->vt != HD_CK_NONE) {
        if ((rc = put_file_cksum(j->p, j->vt, got)) == 0 && strcmp(got, j->vval) != 0)
            rc = HD_EBADCHECKSUM;
        if (rc == 0) {
            j->res.ck = j->vt;
            j->res.full = 1;
            snprintf(j->res.ck_val, sizeof(j->res.ck_val), "%s", got);
        }
    }
    asm_ck_attrs(j);
    if (rc == 0 && j->commit && (rc = hd_put_commit(j->p, &j->a, &m)) == 0) {
        hd_obj_meta_cleanup(&m);
        rc = complete_finish(j->id, j->mp, &j->res, 0);
    }
    ac->rc = rc;
}

/* A job for cc's upload with attributes a (copied; a->etag: the object's) and answer res. */
static struct asm_job *asm_new(const struct complete_ctx *cc, const struct hd_put_attrs *a,
                               const struct complete_res *res)
{
    struct asm_job *j = calloc(1, sizeof(*j));
    int oom = 0;

    if (!j)
        return NULL;
    j->mp = cc->mp;
    j->a = *a;
    j->a.ctype = j->ctype = hd_api_dup_opt(a->ctype, &oom);
    j->a.meta = j->meta = hd_api_dup_opt(a->meta, &oom);
    j->a.hdrs = j->hdrs = hd_api_dup_opt(a->hdrs, &oom);
    j->a.parts = j->parts = hd_api_dup_opt(a->parts, &oom);
    j->a.if_match = j->if_match = hd_api_dup_opt(a->if_match, &oom);
    snprintf(j->etag, sizeof(j->etag), "%s", a->etag ? a->etag : "");
    j->a.etag = a->etag ? j->etag : NULL;
    j->a.ck_type = NULL; /* from res, in asm_run */
    j->a.ck_val = NULL;
    j->res = *res;
    snprintf(j->id, sizeof(j->id), "%s", cc->id);
    if (oom) {
        asm_free(j);
        return NULL;
    }
    return j;
}

/* Queues j (owned from here) on the disk workers and moves cc to `stage`: 0 or -ENOMEM. */
static int asm_start(struct hd_req *r, struct complete_ctx *cc, struct asm_job *j, int stage)
{
    /* store.commit_workers = 0: the upstream pool, still off the HTTP worker */
    if (!(cc->job = hd_acall_new(cc->t->disk ? cc->t->disk : cc->t->pool, asm_run, j, asm_free)))
        return -ENOMEM;          /* j freed with it */
    hd_acall_submit(cc->job, r); /* a failure finishes it with that error: seen by the park */
    cc->stage = stage;
    return 0;
}

/* First step, on the HTTP worker: the checks (catalog reads, conditions, checksums), the
 * twin's completion started (write-through), and the assembly queued. */
static int complete_run(struct hd_req *r, struct complete_ctx *cc, const char **msg)
{
    struct hd_store *st = cc->t->st;
    struct mountpath *mp = hd_store_mp_for(st, cc->bucket, cc->key);
    const char *mpsize = hd_req_header(r, "x-amz-mp-object-size");
    struct complete_res *res = &cc->res;
    struct src sc = {0};
    struct hd_put *p = NULL;
    struct hd_put_attrs a;
    struct hd_obj_meta m;
    struct asm_job *j;
    enum hd_ck_type vt;
    const char *vval = NULL;
    char *parts = NULL;
    uint64_t total = 0, v;
    size_t i;
    int rc, found;

    cc->stage = CS_ANSWER;
    cc->parsed = 1;                /* cleaned up whatever the parse leaves */
    if (r->api == HD_API_NATIVE) { /* AIStore's mpt-complete action message (aismsg.h) */
        json_t *doc = json_loadb(cc->body.data ? cc->body.data : "", cc->body.len, 0, NULL);
        rc = hd_ais_mpt_complete_parse(doc, &cc->req, cc->msgbuf, sizeof(cc->msgbuf));
        json_decref(doc);
        if (rc < 0) {
            *msg = cc->msgbuf;
            return rc;
        }
    } else if ((rc = hd_xml_parse_complete(cc->body.data ? cc->body.data : "", cc->body.len,
                                           &cc->req)) < 0) {
        return rc;
    }
    for (i = 1; i < cc->req.n; i++)
        if (cc->req.parts[i].part_number <= cc->req.parts[i - 1].part_number)
            return HD_EPARTORDER;
    memset(res, 0, sizeof(*res));
    cc->mp = mp;
    rc = complete_start(cc, mp, &cc->req, &cc->u, &sc, res, msg);
    if (rc != 0)
        goto out; /* completed already (HD_DECLINED): answered as it was */
    if (cc->wc.if_match || cc->wc.if_none_match) {
        /* fail before assembling when we can; the commit checks again */
        rc = hd_store_lookup(st, cc->bucket, cc->key, &m);
        if (rc < 0 && rc != HD_ENOSUCHKEY)
            goto out;
        found = rc == 0;
        rc = hd_wcond_check(&cc->wc, found ? &m : NULL, &cc->cond);
        if (found)
            hd_obj_meta_cleanup(&m);
        if (rc < 0)
            goto out;
    }
    for (i = 0; i < sc.files.n; i++)
        total += sc.sizes[i];
    if (mpsize && (hd_parse_u64(mpsize, &v) < 0 || v != total)) {
        rc = HD_EBADREQ;
        *msg = "The x-amz-mp-object-size header does not match the size of the parts.";
        goto out;
    }
    if ((rc = complete_ck_check(r, cc, &cc->u, res, &vt, &vval, msg)) < 0)
        goto out;
    if (!(parts = parts_json(&sc))) {
        rc = -ENOMEM;
        goto out;
    }
    if (cc->cb && cc->cb->props.write_back &&
        (rc = hd_cache_wb_admit(cc->t->cache, total, cc->msgbuf, sizeof(cc->msgbuf))) < 0) {
        *msg = cc->msgbuf;
        goto out;
    }
    if ((rc = hd_put_begin(st, cc->bucket, cc->key, &p)) < 0)
        goto out;
    /* write-through: the twin is completed while the parts are assembled here (unless a
     * full-object checksum is to be checked on the assembled bytes first) */
    if (cc->cb && !cc->cb->props.write_back && vt == HD_CK_NONE &&
        (rc = twin_start(r, cc, &cc->u, mp, &sc, res->etag, msg)) < 0)
        goto out;
    memset(&a, 0, sizeof(a));
    a.ctype = cc->u.ctype;
    a.meta = cc->u.meta;
    a.hdrs = cc->u.hdrs;
    a.parts = parts;
    a.etag = res->etag;
    a.if_match = cc->wc.if_match;
    a.if_none_match = cc->wc.if_none_match;
    a.writeback = cc->cb && cc->cb->props.write_back; /* queued with the commit */
    if (!(j = asm_new(cc, &a, res))) {
        rc = -ENOMEM;
        goto out;
    }
    j->p = p;
    p = NULL;
    j->sc = sc;
    memset(&sc, 0, sizeof(sc));
    j->copy = 1;
    j->commit = !cc->cb || a.writeback; /* S3-backed: once the upstream has it */
    j->vt = vt;
    if (vval)
        snprintf(j->vval, sizeof(j->vval), "%s", vval);
    /* write-through with nothing to check on the assembled bytes: answered as soon as the
     * upstream has the object */
    cc->late = j->late = cc->wt && !cc->wc.if_match && !cc->wc.if_none_match;
    /* committed by the job itself: nothing to wait for but the disk, which can be minutes */
    cc->keepalive = !cc->late && j->commit && cc->t->complete_keepalive &&
                    total >= cc->t->complete_keepalive &&
                    r->api != HD_API_NATIVE; /* AIStore's mpt-complete: the status is the answer */
    if (cc->late) {
        /* fenced from now: a write or delete of the name while the upstream completes also
         * means the assembled copy must not be committed */
        if ((rc = hd_store_fence_new(st, cc->bucket, cc->key, 0, &j->fence)) < 0) {
            asm_free(j);
            goto out;
        }
        cc->late_job = j;
        cc->stage = CS_THROUGH;
    } else {
        rc = asm_start(r, cc, j, CS_ASSEMBLING);
    }
out:
    hd_put_free(p);
    free(parts);
    src_cleanup(&sc);
    return rc < 0 ? rc : 0;
}

/* After the assembly (and, native and write-back, the commit). */
static int complete_assembled(struct hd_req *r, struct complete_ctx *cc, const char **msg)
{
    struct asm_job *j = cc->job->arg;
    struct upload u2 = {0};
    struct src sc2 = {0};
    int rc = cc->job->rc, oom = 0;

    cc->stage = CS_ANSWER;
    if (rc == -ENOENT) {
        /* a part vanished: replaced (the listed ETag is stale), aborted, or a racing
         * Complete of the same upload finished first (then answer as it did) */
        memset(&cc->res, 0, sizeof(cc->res));
        rc = complete_start(cc, cc->mp, &cc->req, &u2, &sc2, &cc->res, msg);
        upload_cleanup(&u2);
        src_cleanup(&sc2);
        if (rc == 0)
            rc = HD_EINVALIDPART;
        goto out;
    }
    if (rc < 0 && cc->wt) { /* the upstream's answer decides; the cache goes without */
        HD_LOG(HD_WARN, r->id, "multipart %s: assembling %s/%s: %s (not cached)", cc->id,
               cc->bucket, cc->key, hd_strerror(rc));
        cc->stage = CS_THROUGH;
        rc = 0;
        goto out;
    }
    if (rc == HD_EBADCHECKSUM) {
        snprintf(cc->msgbuf, sizeof(cc->msgbuf),
                 "The %s you specified did not match the calculated checksum.",
                 hd_cksum_name(j->vt));
        *msg = cc->msgbuf;
        goto out;
    }
    if (rc < 0) {
        HD_LOG(HD_ERROR, r->id, "multipart %s: assembling %s/%s: %s", cc->id, cc->bucket, cc->key,
               hd_strerror(rc));
        goto out;
    }
    cc->res = j->res;
    if (j->commit) {
        if (j->a.writeback)
            hd_cache_wb_kick(cc->t->cache);
        goto out;
    }
    /* S3-backed, write-through: committed once the upstream completed the twin */
    cc->p = j->p;
    j->p = NULL;
    cc->a = j->a;
    cc->a.ctype = cc->ctype = hd_api_dup_opt(j->ctype, &oom);
    cc->a.meta = cc->meta = hd_api_dup_opt(j->meta, &oom);
    cc->a.hdrs = cc->hdrs = hd_api_dup_opt(j->hdrs, &oom);
    cc->a.parts = cc->parts = hd_api_dup_opt(j->parts, &oom);
    cc->a.if_match = cc->wc.if_match;
    cc->a.etag = NULL; /* the upstream's, when it has answered */
    cc->a.ck_val = cc->a.ck_type ? cc->res.ck_val : NULL;
    if (oom) {
        rc = -ENOMEM;
        goto out;
    }
    if (!cc->wt && (rc = twin_start(r, cc, &cc->u, cc->mp, &j->sc, cc->res.etag, msg)) < 0)
        goto out;
    cc->stage = CS_THROUGH;
out:
    hd_acall_release(cc->job);
    cc->job = NULL;
    return rc < 0 ? rc : 0;
}

/* A late Complete whose twin the upstream completed: the older copy goes (a read is a miss
 * until the new one is committed), the upload is marked completed (a retry gets this answer),
 * and the job that assembles and commits the cached copy starts, on its own. */
static int complete_late(struct hd_req *r, struct complete_ctx *cc)
{
    struct asm_job *j = cc->late_job;
    struct hd_acall *a;
    int rc;

    rc = hd_store_delete_fenced(cc->t->st, cc->bucket, cc->key, j->fence);
    if ((rc < 0 && rc != HD_ENOSUCHKEY) || (rc = complete_finish(cc->id, cc->mp, &cc->res, 1)) < 0)
        return rc;
    snprintf(j->etag, sizeof(j->etag), "%s", cc->uetag);
    j->a.etag = j->etag;
    j->res = cc->res;
    cc->late_job = NULL;
    /* out of memory: answered all the same, not cached; the parts go with the upload */
    if ((a = hd_acall_new(cc->t->disk ? cc->t->disk : cc->t->pool, asm_run, j, asm_free))) {
        hd_acall_submit(a, r);
        hd_acall_release(a); /* runs on its own */
    }
    return 0;
}

/* Write-through: the twin's completion (parks r until the upstream answered), then the
 * commit here under the upstream's ETag. */
static int complete_through(struct hd_req *r, struct complete_ctx *cc, const char **msg)
{
    struct asm_job *j;
    int rc;

    rc = hd_cache_mpu_through(r, cc->t->cache, cc->cb, cc->key, cc->up_id, cc->ctype, cc->meta,
                              cc->hdrs, cc->uparts, cc->nuparts, NULL, &cc->wt, cc->uetag,
                              cc->twin_msg, sizeof(cc->twin_msg));
    if (rc == HD_AGAIN)
        return HD_AGAIN; /* parked: complete_end runs again when the upload is done */
    cc->stage = CS_ANSWER;
    if (rc < 0) {
        *msg = cc->twin_msg[0] ? cc->twin_msg : NULL;
        return rc;
    }
    /* the upstream completed its twin: its ETag is the object's from now on */
    snprintf(cc->res.etag, sizeof(cc->res.etag), "%s", cc->uetag);
    if (cc->late)
        return complete_late(r, cc);
    if (cc->p) {
        cc->a.etag = cc->uetag;
        if (!(j = asm_new(cc, &cc->a, &cc->res)))
            return -ENOMEM;
        j->p = cc->p;
        cc->p = NULL;
        j->commit = 1;
        return asm_start(r, cc, j, CS_COMMITTING);
    }
    /* not assembled here: an older copy must not stay */
    rc = hd_store_delete(cc->t->st, cc->bucket, cc->key);
    if (rc < 0 && rc != HD_ENOSUCHKEY)
        return rc;
    return complete_finish(cc->id, cc->mp, &cc->res, 0);
}

/* The CompleteMultipartUploadResult document, appended to b (with the declaration when
 * decl). */
static void complete_doc(struct hd_req *r, struct complete_ctx *cc, struct hd_buf *b, int decl)
{
    const struct complete_res *res = &cc->res;
    struct hd_buf loc;
    const char *host;
    char tag[32], etag[64];

    if (r->api == HD_API_NATIVE) { /* AIStore's mpt-complete: 200, no body */
        hd_resp_header(r, "ETag", res->etag);
        hd_resp_empty(r, 200);
        return;
    }
    hd_buf_init(&loc);
    host = hd_req_header(r, "Host");
    hd_buf_printf(&loc, "http://%s/", host ? host : "localhost");
    hd_uri_encode(&loc, cc->bucket, strlen(cc->bucket), 0);
    hd_buf_puts(&loc, "/");
    hd_uri_encode(&loc, cc->key, strlen(cc->key), 1);
    if (decl)
        hd_xml_decl(b);
    hd_xml_open_ns(b, "CompleteMultipartUploadResult", HD_XML_S3_NS);
    hd_xml_elem(b, "Location", loc.data ? loc.data : "");
    hd_xml_elem(b, "Bucket", cc->bucket);
    hd_xml_elem(b, "Key", cc->key);
    snprintf(etag, sizeof(etag), "\"%s\"", res->etag);
    hd_xml_elem(b, "ETag", etag);
    if (res->ck != HD_CK_NONE && res->ck_val[0]) {
        ck_tag(res->ck, tag, sizeof(tag));
        hd_xml_elem(b, tag, res->ck_val);
        hd_xml_elem(b, "ChecksumType", res->full ? "FULL_OBJECT" : "COMPOSITE");
    }
    hd_xml_close(b, "CompleteMultipartUploadResult");
    if (loc.oom)
        b->oom = 1;
    hd_buf_cleanup(&loc);
}

static void complete_answer(struct hd_req *r, struct complete_ctx *cc)
{
    struct hd_buf b;

    if (!cc->cb)
        hd_lifecycle_header_of(r, cc->t, cc->bucket, cc->key);
    hd_buf_init(&b);
    complete_doc(r, cc, &b, 1);
    hd_resp_xml(r, 200, &b);
}

/* The keep-alive answer's document once the job has ended: the result, or the error that a
 * status line would have carried. */
static void ka_final(struct hd_req *r, void *arg, struct hd_buf *out)
{
    struct complete_ctx *cc = arg;
    const char *msg = NULL;
    struct hd_kv ex;
    int rc = complete_assembled(r, cc, &msg);

    if (rc == 0 && cc->stage != CS_ANSWER)
        rc = HD_EINTERNAL; /* never: a keep-alive job commits on its own */
    if (rc == HD_EPRECONDITION && cc->cond) {
        ex = (struct hd_kv){"Condition", cc->cond};
        hd_err_doc(r, rc, NULL, &ex, 1, 0, out);
    } else if (rc < 0) {
        hd_err_doc(r, rc, msg, NULL, 0, 0, out);
    } else {
        complete_doc(r, cc, out, 0);
    }
}

/* The keep-alive answer's body (keepalive.h). */
static long ka_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct hd_req *r = cls;
    struct complete_ctx *cc = r->data;

    (void)pos;
    if (!cc || cc->magic != COMPLETE_MAGIC)
        return HD_STREAM_ERROR;
    return hd_ka_body_read(&cc->kb, r, ka_final, cc, buf, max);
}

/* Answers 200 now with ka_read's body: 0, or an error (then the request parks as usual). */
static int ka_answer(struct hd_req *r, struct complete_ctx *cc)
{
    struct hd_ka *k = cc->ka ? cc->ka : hd_ka_start(cc->job, cc->t->complete_keepalive_ms);

    cc->ka = NULL;
    if (!k)
        return -ENOMEM;
    return hd_ka_body_start(&cc->kb, r, cc->job, k, ka_read, r);
}

/* on_end, and again after each park: the checks, the assembly on the disk workers, the
 * upstream's completion (write-through), the commit, the answer. */
static void complete_end(struct hd_req *r)
{
    struct complete_ctx *cc = r->data;
    const char *msg = NULL;
    int rc = 0;

    if (r->body_err) {
        hd_resp_err(r, r->body_err);
        return;
    }
    while (rc == 0 && cc->stage != CS_ANSWER) {
        switch (cc->stage) {
        case CS_START:
            rc = complete_run(r, cc, &msg);
            break;
        case CS_ASSEMBLING:
            if (cc->keepalive && !hd_ka_body_started(&cc->kb)) {
                /* the 200 goes once the assembly ends or one interval has passed, never
                 * right after the request's last byte: the AWS SDK for Go v2 (smithy-go
                 * closing the request body once the answer's head is in, while net/http
                 * still checks that body for extra bytes) drops its connection, and with
                 * it the answer, when the head comes that fast */
                if (!cc->ka)
                    cc->ka = hd_ka_start(cc->job, cc->t->complete_keepalive_ms);
                if (cc->ka && !hd_acall_finished(cc->job) && !hd_ka_due(cc->ka) &&
                    hd_acall_park(cc->job, r) == HD_AGAIN)
                    return;
                if (ka_answer(r, cc) == 0)
                    return; /* the body goes on in ka_read */
            }
            if (hd_acall_park(cc->job, r) == HD_AGAIN)
                return;
            rc = complete_assembled(r, cc, &msg);
            break;
        case CS_THROUGH:
            if ((rc = complete_through(r, cc, &msg)) == HD_AGAIN)
                return;
            break;
        case CS_COMMITTING:
            if (hd_acall_park(cc->job, r) == HD_AGAIN)
                return;
            rc = cc->job->rc;
            hd_acall_release(cc->job);
            cc->job = NULL;
            cc->stage = CS_ANSWER;
            break;
        default:
            rc = HD_EINTERNAL;
        }
    }
    if (rc == HD_EPRECONDITION && cc->cond)
        hd_wcond_error(r, rc, cc->cond);
    else if (rc < 0)
        hd_resp_err_msg(r, rc, msg);
    else
        complete_answer(r, cc);
}

static int complete_body(struct hd_req *r, const char *data, size_t n)
{
    struct complete_ctx *cc = r->data;

    if (cc->body.len + n > HD_XML_COMPLETE_MAX_BODY)
        return HD_EMALFORMEDXML;
    return hd_buf_append(&cc->body, data, n);
}

static void complete_done(struct hd_req *r)
{
    struct complete_ctx *cc = r->data;

    if (!cc || cc->magic != COMPLETE_MAGIC)
        return;
    cc->magic = 0;
    hd_buf_cleanup(&cc->body);
    hd_ka_end(cc->ka); /* before the job goes */
    hd_ka_body_cleanup(&cc->kb);
    hd_acall_release(cc->job); /* a job still running finishes on its own */
    if (cc->late_job)
        asm_free(cc->late_job); /* never started: the upstream refused, or the client left */
    if (cc->parsed)
        hd_xml_complete_cleanup(&cc->req);
    upload_cleanup(&cc->u);
    hd_cache_wt_free(cc->wt);
    hd_put_free(cc->p);
    hd_cbucket_unref(cc->cb);
    free(cc->ctype);
    free(cc->meta);
    free(cc->hdrs);
    free(cc->parts);
    free(cc->up_id);
    for (; cc->nuparts; cc->nuparts--)
        free(cc->uparts[cc->nuparts - 1].path);
    free(cc->uparts);
    free(cc->bucket);
    free(cc->key);
    free(cc);
    r->data = NULL;
}

void hd_mpu_complete(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key)
{
    const char *id = hd_req_param(r, "uploadId");
    struct complete_ctx *cc;
    struct hd_wcond wc;
    int rc;

    r->op = HD_OP_PUT;
    if ((rc = hd_store_bucket_exists(t->st, bucket)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    if (!id_valid(id)) {
        hd_resp_err(r, HD_ENOSUCHUPLOAD);
        return;
    }
    if ((rc = hd_wcond_parse(r, &wc)) < 0) {
        hd_wcond_error(r, rc, NULL);
        return;
    }
    if (r->content_length > (int64_t)HD_XML_COMPLETE_MAX_BODY) {
        hd_resp_err(r, HD_EMALFORMEDXML);
        return;
    }
    cc = calloc(1, sizeof(*cc));
    if (!cc) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    cc->magic = COMPLETE_MAGIC;
    cc->t = t;
    cc->wc = wc;
    hd_buf_init(&cc->body);
    snprintf(cc->id, sizeof(cc->id), "%s", id);
    cc->bucket = strdup(bucket);
    cc->key = strdup(key);
    cc->cb = hd_cache_bucket(t->cache, bucket); /* S3-backed: written through at the end */
    r->data = cc;
    r->on_done = complete_done;
    if (!cc->bucket || !cc->key) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    r->on_body = complete_body;
    r->on_end = complete_end;
}

/* ---- AbortMultipartUpload ---- */

/* Drops the upload's rows and then its part files. */
static int abort_local(struct mountpath *mp, const char *id, const char *bucket, const char *key)
{
    struct strv files = {0};
    struct upload u;
    struct db d = {0};
    sqlite3_stmt *s;
    int rc;

    if ((rc = db_open(mp, &d)) < 0)
        return rc;
    if ((rc = db_tx(&d, Q_BEGIN)) < 0)
        goto out;
    if ((rc = upload_active(&d, id, bucket, key, &u)) < 0)
        goto out;
    upload_cleanup(&u);
    if ((rc = part_files(&d, id, &files)) < 0 || (rc = delete_parts(&d, id)) < 0)
        goto out;
    if ((rc = db_prep(&d, "DELETE FROM mpu_uploads WHERE id = ?1", &s)) < 0)
        goto out;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
    if ((rc = db_run(&d, s, "multipart abort")) < 0)
        goto out;
    if ((rc = db_tx(&d, Q_COMMIT)) < 0)
        goto out;
    db_close(&d);
    remove_files(mp, id, &files);
out:
    db_close(&d);
    strv_free(&files);
    return rc;
}

/* An abort of a write-through upload: the twin at the upstream, then the local upload. */
struct abort_arg {
    struct hd_cache *cache;
    struct hd_cbucket *cb;
    struct mountpath *mp;
    char *bucket, *key, *up_id;
    char id[MPU_ID_HEX + 1];
};

static void abort_free(void *arg)
{
    struct abort_arg *aa = arg;

    hd_cbucket_unref(aa->cb);
    free(aa->bucket);
    free(aa->key);
    free(aa->up_id);
    free(aa);
}

/* Pool. A twin the upstream would not abort (down, or no AbortMultipartUpload) is recorded
 * for the write-back uploader, which tries again later: the local abort goes on. */
static void abort_run(struct hd_acall *a)
{
    struct abort_arg *aa = a->arg;
    char msg[512];

    if (aa->cb && hd_cache_mpu_up_abort(aa->cb, aa->key, aa->up_id, msg, sizeof(msg)) < 0) {
        HD_LOG(HD_WARN, a->rid,
               "multipart %s: aborting the upstream's upload %s (tried again "
               "later): %s",
               aa->id, aa->up_id, msg);
        hd_cache_wb_orphan(aa->cache, aa->bucket, aa->key, aa->up_id);
    }
    a->rc = abort_local(aa->mp, aa->id, aa->bucket, aa->key);
}

static void abort_done(struct hd_req *r, struct hd_acall *a)
{
    if (a->rc < 0)
        hd_resp_err(r, a->rc);
    else
        hd_resp_empty(r, 204);
}

void hd_mpu_abort(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key)
{
    const char *id = hd_req_param(r, "uploadId");
    struct mountpath *mp = hd_store_mp_for(t->st, bucket, key);
    struct abort_arg *aa;
    struct upload u;
    struct db d = {0};
    int rc;

    r->op = HD_OP_DELETE;
    if ((rc = hd_store_bucket_exists(t->st, bucket)) < 0)
        goto out;
    if (!id_valid(id)) {
        rc = HD_ENOSUCHUPLOAD;
        goto out;
    }
    if ((rc = db_open(mp, &d)) < 0)
        goto out;
    rc = upload_active(&d, id, bucket, key, &u);
    db_close(&d);
    if (rc < 0)
        goto out;
    if (!u.up_id) {
        upload_cleanup(&u);
        if ((rc = abort_local(mp, id, bucket, key)) == 0)
            hd_resp_empty(r, 204);
        goto out;
    }
    if (!(aa = calloc(1, sizeof(*aa)))) {
        upload_cleanup(&u);
        rc = -ENOMEM;
        goto out;
    }
    aa->cache = t->cache;
    aa->cb = hd_cache_bucket(t->cache, bucket); /* NULL: no longer S3-backed, local only */
    aa->mp = mp;
    aa->up_id = u.up_id;
    u.up_id = NULL;
    upload_cleanup(&u);
    snprintf(aa->id, sizeof(aa->id), "%s", id);
    aa->bucket = strdup(bucket);
    aa->key = strdup(key);
    if (!aa->bucket || !aa->key) {
        abort_free(aa);
        rc = -ENOMEM;
        goto out;
    }
    hd_acall_request(r, t->pool, abort_run, abort_done, aa, abort_free);
    return;
out:
    if (rc < 0)
        hd_resp_err(r, rc);
}

/* ---- ListParts ---- */

/* A listing bound: absent -> dflt; not a non-negative integer -> HD_EBADARG; capped at max. */
static int parse_max(const char *v, uint64_t dflt, uint64_t *out)
{
    int64_t n;

    *out = dflt;
    if (!v)
        return 0;
    if (hd_parse_i64(v, &n) < 0 || n < 0)
        return HD_EBADARG;
    *out = (uint64_t)n > MPU_LIST_MAX ? MPU_LIST_MAX : (uint64_t)n;
    return 0;
}

void hd_mpu_list_parts(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                       const char *owner)
{
    const char *id = hd_req_param(r, "uploadId");
    const char *mp_s = hd_req_param(r, "max-parts");
    const char *mk_s = hd_req_param(r, "part-number-marker");
    const char *enc = hd_req_param(r, "encoding-type");
    int url = enc && strcmp(enc, "url") == 0;
    const char *msg = NULL;
    struct upload u = {0};
    struct db d = {0};
    sqlite3_stmt *s = NULL;
    struct hd_buf b;
    uint64_t max, marker = 0, count = 0, last = 0;
    char ts[32], tag[32], etag[64], sclass[24];
    int rc, st, truncated = 0;

    r->op = HD_OP_LIST;
    hd_buf_init(&b);
    if ((rc = hd_store_bucket_exists(t->st, bucket)) < 0)
        goto out;
    if ((rc = parse_max(mp_s, MPU_LIST_MAX, &max)) < 0) {
        msg = "Argument max-parts must be an integer between 0 and 2147483647.";
        goto out;
    }
    if (mk_s && (hd_parse_u64(mk_s, &marker) < 0 || marker > MPU_MAX_PART_NUM)) {
        rc = HD_EBADARG;
        msg = "Argument part-number-marker must be an integer between 0 and 10000.";
        goto out;
    }
    if (!id_valid(id)) {
        rc = HD_ENOSUCHUPLOAD;
        goto out;
    }
    if ((rc = db_open(hd_store_mp_for(t->st, bucket, key), &d)) < 0)
        goto out;
    if ((rc = upload_active(&d, id, bucket, key, &u)) < 0)
        goto out;
    rc = db_prep(&d,
                 "SELECT part, size, etag, ck_type, ck_val, mtime FROM mpu_parts "
                 "WHERE id = ?1 AND part > ?2 ORDER BY part LIMIT ?3",
                 &s);
    if (rc < 0)
        goto out;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)marker);
    sqlite3_bind_int64(s, 3, (sqlite3_int64)max + 1);

    hd_xml_decl(&b);
    hd_xml_open_ns(&b, "ListPartsResult", HD_XML_S3_NS);
    hd_xml_elem(&b, "Bucket", bucket);
    hd_xml_key_elem(&b, "Key", key, url);
    hd_xml_elem(&b, "UploadId", id);
    hd_mpul_owner_xml(&b, owner);
    hd_hdrs_class(u.hdrs, sclass, sizeof(sclass));
    hd_xml_elem(&b, "StorageClass", sclass);
    hd_xml_elemf(&b, "PartNumberMarker", "%llu", (unsigned long long)marker);
    hd_xml_elemf(&b, "MaxParts", "%llu", (unsigned long long)max);
    if (url)
        hd_xml_elem(&b, "EncodingType", "url");
    if (u.ck != HD_CK_NONE) {
        hd_xml_elem(&b, "ChecksumAlgorithm", hd_cksum_name(u.ck));
        hd_xml_elem(&b, "ChecksumType", u.full ? "FULL_OBJECT" : "COMPOSITE");
    }
    while ((st = sqlite3_step(s)) == SQLITE_ROW) {
        const char *pck = (const char *)sqlite3_column_text(s, 3);
        if (count == max) {
            truncated = 1;
            break;
        }
        count++;
        last = (uint64_t)sqlite3_column_int64(s, 0);
        hd_xml_open(&b, "Part");
        hd_xml_elemf(&b, "PartNumber", "%llu", (unsigned long long)last);
        hd_iso8601_ms(sqlite3_column_int64(s, 5), ts);
        hd_xml_elem(&b, "LastModified", ts);
        snprintf(etag, sizeof(etag), "\"%s\"", (const char *)sqlite3_column_text(s, 2));
        hd_xml_elem(&b, "ETag", etag);
        hd_xml_elemf(&b, "Size", "%lld", (long long)sqlite3_column_int64(s, 1));
        if (pck && hd_cksum_type_from_name(pck) != HD_CK_NONE) {
            ck_tag(hd_cksum_type_from_name(pck), tag, sizeof(tag));
            hd_xml_elem(&b, tag, (const char *)sqlite3_column_text(s, 4));
        }
        hd_xml_close(&b, "Part");
    }
    if (st != SQLITE_ROW && st != SQLITE_DONE) {
        rc = hd_store_sqlerr(d.c->db, st, "multipart list parts");
        goto out;
    }
    if (count)
        hd_xml_elemf(&b, "NextPartNumberMarker", "%llu", (unsigned long long)last);
    hd_xml_elem(&b, "IsTruncated", truncated ? "true" : "false");
    hd_xml_close(&b, "ListPartsResult");
    sqlite3_finalize(s);
    s = NULL;
    db_close(&d);
    hd_resp_xml(r, 200, &b);
out:
    sqlite3_finalize(s);
    db_close(&d);
    upload_cleanup(&u);
    if (rc < 0) {
        hd_buf_cleanup(&b);
        hd_resp_err_msg(r, rc, msg);
    }
}

/* ---- ListMultipartUploads ---- */

/* Collects up to o->max + 1 entries (uploads or common prefixes) of one mountpath, in
 * order: with every mountpath contributing its smallest max + 1, the merge is exact. */
static int lu_scan(struct mountpath *mp, const char *bucket, const struct hd_mpul_opts *o,
                   struct hd_mpul *out)
{
    const char *prefix = o->prefix ? o->prefix : "";
    const char *km = o->key_marker;
    size_t plen = strlen(prefix), dlen = o->delim ? strlen(o->delim) : 0, units = 0;
    const char *from = km && strcmp(km, prefix) > 0 ? km : prefix;
    int skip_under_marker = 0, seen_id = 0, rc, st;
    const char *lastcp = NULL;
    size_t lastcpl = 0;
    struct db d;
    sqlite3_stmt *s = NULL;

    /* a marker that is itself a common prefix from an earlier page: skip what it covers */
    if (km && o->delim && strncmp(km, prefix, plen) == 0 && strlen(km) >= plen + dlen &&
        strcmp(km + strlen(km) - dlen, o->delim) == 0)
        skip_under_marker = 1;
    if ((rc = db_open(mp, &d)) < 0)
        return rc;
    rc = db_prep(&d,
                 "SELECT name, id, created, ck_algo, ck_type FROM mpu_uploads "
                 "WHERE bucket = ?1 AND state = 0 AND name >= ?2 ORDER BY name, created, id",
                 &s);
    if (rc < 0)
        goto out;
    sqlite3_bind_text(s, 1, bucket, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, from, -1, SQLITE_TRANSIENT);
    while ((st = sqlite3_step(s)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(s, 0);
        const char *id = (const char *)sqlite3_column_text(s, 1);
        size_t nlen = (size_t)sqlite3_column_bytes(s, 0);
        const char *dp;
        char algo[16], typ[16];
        if (!name || !id)
            continue;
        if (strncmp(name, prefix, plen) != 0)
            break; /* sorted: past the prefix */
        if (km) {
            int c = strcmp(name, km);
            if (c == 0 && o->id_marker) {
                /* same key: only uploads after the marker upload */
                if (!seen_id) {
                    seen_id = strcmp(id, o->id_marker) == 0;
                    continue;
                }
            } else if (c <= 0) {
                continue;
            }
            if (skip_under_marker && strncmp(name, km, strlen(km)) == 0)
                continue;
        }
        dp = o->delim ? strstr(name + plen, o->delim) : NULL;
        if (dp) {
            size_t cpl = (size_t)(dp - name) + dlen;
            if (lastcp && lastcpl == cpl && memcmp(lastcp, name, cpl) == 0)
                continue; /* same common prefix as the previous entry */
            if (units == o->max + 1)
                break;
            if ((rc = hd_mpul_push(out, name, cpl, NULL, 0, NULL, 0)) < 0)
                goto out;
            lastcp = out->v[out->n - 1].key;
            lastcpl = cpl;
            units++;
            continue;
        }
        if (units == o->max + 1)
            break;
        hd_store_col_copy(s, 3, algo, sizeof(algo));
        hd_store_col_copy(s, 4, typ, sizeof(typ));
        rc = hd_mpul_push(out, name, nlen, id, sqlite3_column_int64(s, 2), algo,
                          strcmp(typ, "FULL_OBJECT") == 0);
        if (rc < 0)
            goto out;
        lastcp = NULL;
        units++;
    }
    if (st != SQLITE_ROW && st != SQLITE_DONE)
        rc = hd_store_sqlerr(d.c->db, st, "multipart list uploads");
out:
    sqlite3_finalize(s);
    db_close(&d);
    return rc;
}

/* Every mountpath's smallest max + 1 entries, merged: the first max + 1 are exact. */
static int list_uploads(struct hd_target *t, const char *bucket, const struct hd_mpul_opts *o,
                        struct hd_mpul *l)
{
    size_t i;
    int rc;

    if ((rc = hd_store_bucket_exists(t->st, bucket)) < 0)
        return rc;
    for (i = 0; i < t->st->nmp; i++)
        if ((rc = lu_scan(&t->st->mp[i], bucket, o, l)) < 0)
            return rc;
    hd_mpul_finish(l);
    hd_mpul_truncate(l, (size_t)o->max + 1);
    return 0;
}

void hd_mpu_list_uploads(struct hd_req *r, struct hd_target *t, const char *bucket,
                         const char *owner)
{
    struct hd_mpul_opts o;
    struct hd_mpul l = {0};
    const char *msg = NULL;
    struct hd_buf b;
    int rc;

    r->op = HD_OP_LIST;
    hd_buf_init(&b);
    if ((rc = hd_mpul_opts_parse(r, &o, &msg)) == 0)
        o.owner = owner;
    if (rc < 0 || (rc = list_uploads(t, bucket, &o, &l)) < 0 ||
        (rc = hd_mpul_xml(&b, bucket, &o, &l)) < 0) {
        hd_buf_cleanup(&b);
        hd_resp_err_msg(r, rc, msg);
    } else {
        hd_resp_xml(r, 200, &b);
    }
    hd_mpul_free(&l);
}

void hd_mpu_list_uploads_json(struct hd_req *r, struct hd_target *t, const char *bucket)
{
    struct hd_mpul_opts o;
    struct hd_mpul l = {0};
    const char *msg = NULL;
    json_t *j = NULL;
    char *text;
    int rc;

    r->op = HD_OP_LIST;
    if ((rc = hd_mpul_opts_parse(r, &o, &msg)) < 0 || (rc = list_uploads(t, bucket, &o, &l)) < 0 ||
        !(j = hd_mpul_to_json(&l)) || !(text = json_dumps(j, JSON_COMPACT))) {
        hd_resp_err_msg(r, rc < 0 ? rc : -ENOMEM, msg);
    } else {
        hd_resp_buf(r, 200, "application/json", text, strlen(text));
    }
    json_decref(j);
    hd_mpul_free(&l);
}

/* ---- DeleteBucket ---- */

int hd_mpu_drop_bucket(struct hd_target *t, const char *bucket)
{
    struct hd_store *st = t->st;
    size_t i, k;
    int rc = 0;

    for (i = 0; i < st->nmp && rc == 0; i++) {
        struct mountpath *mp = &st->mp[i];
        struct strv ids = {0}, files = {0};
        struct db d;
        sqlite3_stmt *s = NULL;
        int sst;
        if ((rc = db_open(mp, &d)) < 0)
            break;
        if ((rc = db_tx(&d, Q_BEGIN)) < 0)
            goto next;
        if ((rc = db_prep(&d, "SELECT id FROM mpu_uploads WHERE bucket = ?1", &s)) < 0)
            goto next;
        sqlite3_bind_text(s, 1, bucket, -1, SQLITE_TRANSIENT);
        while ((sst = sqlite3_step(s)) == SQLITE_ROW)
            if ((rc = strv_push(&ids, (const char *)sqlite3_column_text(s, 0))) < 0)
                goto next;
        sqlite3_finalize(s);
        s = NULL;
        if (sst != SQLITE_DONE) {
            rc = hd_store_sqlerr(d.c->db, sst, "multipart drop bucket");
            goto next;
        }
        for (k = 0; k < ids.n; k++)
            if ((rc = part_files(&d, ids.v[k], &files)) < 0 ||
                (rc = delete_parts(&d, ids.v[k])) < 0)
                goto next;
        if ((rc = db_prep(&d, "DELETE FROM mpu_uploads WHERE bucket = ?1", &s)) < 0)
            goto next;
        sqlite3_bind_text(s, 1, bucket, -1, SQLITE_TRANSIENT);
        rc = db_run(&d, s, "multipart drop bucket");
        s = NULL;
        if (rc < 0 || (rc = db_tx(&d, Q_COMMIT)) < 0)
            goto next;
        db_close(&d);
        for (k = 0; k < files.n; k++)
            hd_store_unlink_rel(mp, files.v[k]);
        for (k = 0; k < ids.n; k++) {
            struct strv none = {0};
            remove_files(mp, ids.v[k], &none);
        }
    next:
        sqlite3_finalize(s);
        db_close(&d);
        strv_free(&ids);
        strv_free(&files);
    }
    return rc;
}

/* ---- lifecycle: AbortIncompleteMultipartUpload ---- */

int hd_mpu_lifecycle_abort(struct hd_target *t, const char *bucket, const json_t *rules,
                           int64_t now_ms, int64_t day_ms, uint64_t *aborted)
{
    struct hd_store *st = t->st;
    size_t i, k;
    int rc = 0, first = 0;

    *aborted = 0;
    for (i = 0; i < st->nmp && rc == 0; i++) {
        struct mountpath *mp = &st->mp[i];
        struct strv ids = {0}, names = {0};
        sqlite3_stmt *s = NULL;
        struct db d;
        int sst;
        if ((rc = db_open(mp, &d)) < 0)
            break;
        if ((rc = db_prep(&d,
                          "SELECT id, name, created FROM mpu_uploads WHERE bucket = ?1 AND "
                          "state = 0",
                          &s)) < 0)
            goto next;
        sqlite3_bind_text(s, 1, bucket, -1, SQLITE_TRANSIENT);
        while ((sst = sqlite3_step(s)) == SQLITE_ROW) {
            const char *name = (const char *)sqlite3_column_text(s, 1);
            if (name && hd_lc_abort_due(rules, name, sqlite3_column_int64(s, 2), now_ms, day_ms) &&
                ((rc = strv_push(&ids, (const char *)sqlite3_column_text(s, 0))) < 0 ||
                 (rc = strv_push(&names, name)) < 0))
                goto next;
        }
        if (sst != SQLITE_DONE)
            rc = hd_store_sqlerr(d.c->db, sst, "multipart lifecycle");
    next:
        sqlite3_finalize(s);
        db_close(&d);
        for (k = 0; rc == 0 && k < ids.n; k++) {
            int a = abort_local(mp, ids.v[k], bucket, names.v[k]);
            if (a == 0) {
                HD_LOG(HD_INFO, NULL, "lifecycle: aborted upload %s of %s/%s", ids.v[k], bucket,
                       names.v[k]);
                (*aborted)++;
            } else if (a != HD_ENOSUCHUPLOAD) { /* (that one: completed or aborted meanwhile) */
                HD_LOG(HD_WARN, NULL, "lifecycle: aborting upload %s of %s/%s: %s", ids.v[k],
                       bucket, names.v[k], hd_strerror(a));
                first = first ? first : a; /* the others are still tried */
            }
        }
        strv_free(&ids);
        strv_free(&names);
    }
    return rc < 0 ? rc : first;
}
