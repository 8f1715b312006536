/* store: a target's objects on local mountpaths. Content files live under hashed fan-out
 * paths with random names (object names never become paths); one SQLite catalog (WAL) per
 * mountpath maps (bucket, name) to the file and its metadata; buckets live in DATA/node.db.
 * All functions are thread-safe (pooled SQLite connections) and block on disk: call them from
 * HTTP workers or the thread pool, never from an event loop. */
#ifndef HD_STORE_H
#define HD_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct hd_store;
struct hd_put;

struct hd_store_cfg {
    const char *data_dir;
    const char *const *mountpaths;
    size_t nmp;
    int fsync;
    uint64_t capacity; /* per mountpath, bytes; 0 = the filesystem's size */
    int oos_pct;       /* writes that would pass this % of capacity fail (0 = 100) */
    size_t meta_cache; /* catalog rows kept in memory for GET/HEAD (0 = none) */
    long open_files;   /* content files of cached rows kept open (0 = none) */
};

int hd_store_open(const struct hd_store_cfg *cfg, struct hd_store **out);
void hd_store_close(struct hd_store *st);

/* Buckets. */
struct hd_bucket_info {
    char name[64];
    char provider[8];
    int64_t created;    /* unix seconds */
    int anonymous_read; /* prop: the native API's "objects public" (as set; access: below) */
    int public_objects; /* unsigned GET/HEAD allowed (hd_bprops_access: these, or a policy) */
    int public_list;    /* unsigned listings allowed (the same) */
    int tls_only;       /* requests without TLS refused (hd_bprops_access) */
    int has_lifecycle;  /* prop: lifecycle rules (target/api/lifecycle.c applies them) */
};
int hd_store_bucket_create(struct hd_store *st, const char *name, const char *provider);
int hd_store_bucket_delete(struct hd_store *st, const char *name);
/* Deletes the bucket with all its objects (catalog rows and content files); for applying
 * a cluster BMD. HD_ENOSUCHBUCKET when absent. */
int hd_store_bucket_destroy(struct hd_store *st, const char *name);
int hd_store_bucket_exists(struct hd_store *st, const char *name);
/* Copies the bucket's info (incl. props) into *out; HD_ENOSUCHBUCKET when absent. */
int hd_store_bucket_get(struct hd_store *st, const char *name, struct hd_bucket_info *out);
/* Whether key is among the objects bucket's policy opens by key or prefix (its
 * HD_PUBLIC_OBJECTS_SOME, common/bprops.h). */
int hd_store_bucket_key_public(struct hd_store *st, const char *name, const char *key);
/* Sets props from a JSON object (common/bprops.h: anonymous_read, validate_warm_get,
 * upstream); anything else -> HD_EBADARG. */
int hd_store_bucket_set_props(struct hd_store *st, const char *name, const char *json);
/* The bucket's props JSON as stored (*out malloc'd; NULL when none). HD_ENOSUCHBUCKET. */
int hd_store_bucket_props(struct hd_store *st, const char *name, char **out);
/* Merges patch into the bucket's props (hd_bprops_merge: keys not named keep their value, null
 * removes one) and stores the result, as one step under the bucket lock: concurrent patches
 * never lose each other's keys. HD_EBADARG with msg, HD_ENOSUCHBUCKET. */
int hd_store_bucket_patch_props(struct hd_store *st, const char *name, const char *patch, char *msg,
                                size_t msglen);
/* *out is malloc'd (caller frees). */
int hd_store_bucket_list(struct hd_store *st, struct hd_bucket_info **out, size_t *n);
/* How many buckets have lifecycle rules (a lock-free read: 0 lets a GET skip the question). */
int hd_store_lifecycle_buckets(struct hd_store *st);
/* fn(rules, arg) with bucket's lifecycle rules (the "lifecycle" property, parsed when the
 * buckets were loaded), under the bucket lock for reading: rules are valid only during the
 * call and must not be kept or changed. fn's result, or 0 when the bucket has none. What a
 * GET's x-amz-expiration asks, without a catalog read. */
int hd_store_with_lifecycle(struct hd_store *st, const char *name,
                            int (*fn)(const json_t *rules, void *arg), void *arg);

/* Object metadata as kept in the catalog. Strings are owned by the struct; release with
 * hd_obj_meta_cleanup. */
struct hd_obj_meta {
    uint64_t size;
    int64_t mtime_ms;
    char etag[48];    /* unquoted: md5 hex, or md5-of-md5s "-N" for multipart */
    char ck_type[12]; /* "" or CRC32/CRC32C/CRC64NVME/SHA1/SHA256 */
    char ck_val[96];  /* base64, as x-amz-checksum-* carries it */
    char *ctype;      /* Content-Type or NULL */
    char *meta;       /* JSON object of x-amz-meta-* (lowercase names, no prefix) or NULL */
    char *hdrs;       /* JSON object of the other headers stored with it (Cache-Control,
                       * Content-Disposition, Content-Encoding, Content-Language, Expires,
                       * x-amz-storage-class when not STANDARD; lowercase names) or NULL */
    char *parts;      /* multipart: JSON array of the part sizes, in order; else NULL */
    char *path;       /* absolute path of the content file */
};
void hd_obj_meta_cleanup(struct hd_obj_meta *m);

int hd_store_lookup(struct hd_store *st, const char *bucket, const char *name,
                    struct hd_obj_meta *m);
/* Looks up and opens the content file (retrying once if a concurrent overwrite replaced it).
 * On success *fd is the caller's. */
int hd_store_open_object(struct hd_store *st, const char *bucket, const char *name,
                         struct hd_obj_meta *m, int *fd);
/* The same for a reader that uses pread only (a GET served from memory): for an object of
 * at most HD_STORE_SHARED_MAX bytes *fd may duplicate a descriptor the row cache keeps open,
 * whose file offset is shared, so no read()/lseek()/sendfile-by-offset-pointer on it. Larger
 * objects get a description of their own, as from hd_store_open_object. */
#define HD_STORE_SHARED_MAX (64u * 1024)
int hd_store_open_object_shared(struct hd_store *st, const char *bucket, const char *name,
                                struct hd_obj_meta *m, int *fd);
int hd_store_delete(struct hd_store *st, const char *bucket, const char *name);
/* Eviction: as hd_store_delete, but a dirty object (queued for write-back) is kept:
 * HD_EPRECONDITION. */
int hd_store_evict(struct hd_store *st, const char *bucket, const char *name);

/* A change of an object's metadata only (object tags): in one catalog transaction, the row's
 * hdrs JSON (NULL: none) becomes *out = edit(hdrs) (malloc'd or NULL; the store frees it);
 * content, ETag, checksums and mtime stay, and so does every copy elsewhere. The transaction
 * reads and writes the row as one step among the catalog's commits, so a concurrent overwrite
 * or delete comes wholly before it (edit sees the new row, or there is none) or after it.
 * 0, HD_ENOSUCHKEY, or edit's error (nothing changed). */
typedef int (*hd_store_hdrs_fn)(const char *hdrs, char **out, void *arg);
int hd_store_update_hdrs(struct hd_store *st, const char *bucket, const char *name,
                         hd_store_hdrs_fn edit, void *arg);
/* The same for the row's user metadata (hd_obj_meta.meta, x-amz-meta-* / AIStore custom
 * metadata): edit(meta, out, arg). */
int hd_store_update_meta(struct hd_store *st, const char *bucket, const char *name,
                         hd_store_hdrs_fn edit, void *arg);

/* A fence on bucket/name for a commit made later than the write it belongs to (fence.c): any
 * commit or delete of the name from now on (other than one with the fence, below) cancels
 * it, and a commit with the fence (hd_put_attrs.fence) is then refused with
 * HD_EPRECONDITION. A strong fence (weak 0: a deferred commit of a newer write) also makes
 * keep_newer commits of the name yield to it while it stands; a weak one (a cold fill's)
 * does not. hd_store_fence_free unregisters it. */
struct hd_store_fence;
int hd_store_fence_new(struct hd_store *st, const char *bucket, const char *name, int weak,
                       struct hd_store_fence **out);
/* Whether a commit or delete of the name cancelled f (any thread). */
int hd_store_fence_cancelled(const struct hd_store_fence *f);
void hd_store_fence_free(struct hd_store_fence *f);
/* hd_store_delete that leaves fence own standing (the older copy its commit replaces). */
int hd_store_delete_fenced(struct hd_store *st, const char *bucket, const char *name,
                           const struct hd_store_fence *own);

/* Streaming write. begin picks the mountpath (HRW) and creates a temp file; write appends and
 * updates the MD5; commit fsyncs, renames into place and upserts the catalog atomically with
 * respect to readers; abort (or free of an uncommitted put) removes the temp file. */
struct hd_put_attrs {
    const char *ctype;
    const char *meta;    /* JSON or NULL */
    const char *hdrs;    /* JSON or NULL (struct hd_obj_meta) */
    const char *parts;   /* JSON or NULL (struct hd_obj_meta) */
    const char *ck_type; /* NULL or "" when none */
    const char *ck_val;
    const char *etag; /* NULL: the MD5 of the bytes written */
    int64_t mtime_ms; /* 0: now (a rebalanced object keeps its own) */
    int keep_newer;   /* commit only if no copy with mtime >= mtime_ms is held, else
                       * HD_EPRECONDITION (rebalance must not undo a newer write); and,
                       * unless writeback, not while a strong fence stands on the name:
                       * HD_EUNAVAIL then (a newer write's commit is on its way; retry) */
    /* A conditional write, evaluated in the transaction that commits (so of two racing
     * writers one fails): If-Match (an ETag list or "*"; the object must exist) and
     * If-None-Match: * (it must not). Either failing is HD_ECONFLICT: the caller checked
     * before the body was read, so failing here means another write got in between. */
    const char *if_match;
    int if_none_match;
    /* Write-back bucket: queue an upload of this object in the commit's transaction (the
     * object is dirty until hd_store_wb_done). Any commit drops older queued entries of the
     * same name (a newer write supersedes them). */
    int writeback;
    /* A deferred commit: made only while this fence stands (else HD_EPRECONDITION). */
    struct hd_store_fence *fence;
};
int hd_put_begin(struct hd_store *st, const char *bucket, const char *name, struct hd_put **out);
/* As hd_put_begin for an object of `size` bytes (0: unknown). -ENOSPC (507) when the chosen
 * mountpath has no room for it below its out-of-space mark; writes past that mark fail with
 * -ENOSPC too, so nothing partial is ever committed. */
int hd_put_begin_sized(struct hd_store *st, const char *bucket, const char *name, uint64_t size,
                       struct hd_put **out);
/* A pass-through: bytes that go through a temp file to readers and are never committed
 * (a cold GET that cannot be cached). No out-of-space mark applies (the filesystem's own
 * ENOSPC still does); lift_mark turns a begun put into one. */
int hd_put_begin_pass(struct hd_store *st, const char *bucket, const char *name,
                      struct hd_put **out);
void hd_put_lift_mark(struct hd_put *p);
int hd_put_write(struct hd_put *p, const void *data, size_t len);
uint64_t hd_put_size(const struct hd_put *p);
/* For readers of an object being written (cold GET): flush writes the buffered bytes to the
 * temp file; flushed is how many bytes are in it; tmp_path is its path until commit (an fd
 * opened on it stays valid across the commit's rename). */
int hd_put_flush(struct hd_put *p);
/* Before any write: no MD5 is computed (hd_put_md5 is then meaningless); for a commit with
 * attrs->etag, e.g. a cached object whose upstream ETag is not an MD5. */
void hd_put_skip_md5(struct hd_put *p);
/* Before any write: the MD5 is computed on the writing thread, from the caller's buffers,
 * instead of on the hash pool (no copy into the put's buffer for writes of 256 KiB and more;
 * for writers that are many at a time anyway, e.g. cold GET fills). */
void hd_put_md5_inline(struct hd_put *p);
uint64_t hd_put_flushed(const struct hd_put *p);
const char *hd_put_tmp_path(const struct hd_put *p);
/* The bucket and object name the put was begun for (owned by p). */
const char *hd_put_bucket(const struct hd_put *p);
const char *hd_put_name(const struct hd_put *p);
/* MD5 of the bytes written so far is final after this call; out is 16 bytes. */
void hd_put_md5(struct hd_put *p, unsigned char out[16]);
int hd_put_commit(struct hd_put *p, const struct hd_put_attrs *attrs, struct hd_obj_meta *out);
void hd_put_free(struct hd_put *p);

/* Listing in S3 order (bytewise) across all mountpaths. */
struct hd_list_opts {
    const char *prefix;      /* may be NULL */
    const char *delimiter;   /* may be NULL or "" */
    const char *start_after; /* exclusive; may be NULL */
    size_t max;              /* entries + prefixes per page; 0 = none (truncation probe) */
};
struct hd_list_ent {
    char *name;
    uint64_t size;
    int64_t mtime_ms;
    char etag[48];
    char sclass[24]; /* storage class, "" for STANDARD */
};
struct hd_list_res {
    struct hd_list_ent *ents;
    size_t nents;
    char **prefixes;
    size_t nprefixes;
    int truncated;
    char *last; /* last key or common prefix returned (the next marker), or NULL */
};
int hd_store_list(struct hd_store *st, const char *bucket, const struct hd_list_opts *o,
                  struct hd_list_res *res);
void hd_list_res_cleanup(struct hd_list_res *res);

/* Per-mountpath access for rebalance (store_scan.c). Lookups above find an object on its
 * HRW mountpath first and then on the others, so objects stay readable while they move. */
size_t hd_store_nmp(const struct hd_store *st);
/* Index of the mountpath HRW picks for bucket/name. */
size_t hd_store_mp_index(struct hd_store *st, const char *bucket, const char *name);
/* Up to max names of bucket on mountpath mpi after `after` ("" = from the start), sorted;
 * *names is an array of malloc'd strings (free with hd_store_names_free). */
int hd_store_scan(struct hd_store *st, size_t mpi, const char *bucket, const char *after,
                  size_t max, char ***names, size_t *n);
void hd_store_names_free(char **names, size_t n);
int hd_store_lookup_mp(struct hd_store *st, size_t mpi, const char *bucket, const char *name,
                       struct hd_obj_meta *m);
/* Deletes the row on mountpath mpi only while it still has this etag and mtime (nothing
 * overwrote it meanwhile) and is not dirty (queued for write-back; a dirty row is moved with
 * hd_store_delete_moved): 0 deleted, HD_EPRECONDITION changed or dirty, HD_ENOSUCHKEY gone. */
int hd_store_delete_if(struct hd_store *st, size_t mpi, const char *bucket, const char *name,
                       const char *etag, int64_t mtime_ms);
/* The same, also only while the row's hdrs (its stored headers and tags) are still hdrs (NULL:
 * none): a lifecycle rule that took the object for its tags deletes nothing they changed. */
int hd_store_delete_if_hdrs(struct hd_store *st, size_t mpi, const char *bucket, const char *name,
                            const char *etag, int64_t mtime_ms, const char *hdrs);
/* Objects held, over every bucket and mountpath. */
uint64_t hd_store_count(struct hd_store *st);
/* Mountpath mpi's directory (NULL past the last), and the objects its catalog holds
 * (SELECT count(*): a scan of the catalog, about 5 ms per 100k objects when cached). */
const char *hd_store_mp_path(const struct hd_store *st, size_t mpi);
int hd_store_mp_count(struct hd_store *st, size_t mpi, uint64_t *out);
/* Objects and bytes of one bucket in mountpath mpi's catalog (a range scan of the bucket's
 * rows: `hoard bucket du`). */
int hd_store_mp_bucket_usage(struct hd_store *st, size_t mpi, const char *bucket, uint64_t *objects,
                             uint64_t *bytes);

/* ---- space (store_space.c) ---- */

/* Mountpath mpi's path, bytes used and capacity: with store capacity set, the bytes of the
 * objects in its catalog (kept exact by triggers) against that capacity; else the
 * filesystem's used and usable bytes (statvfs, as df computes them). */
struct hd_mp_usage {
    const char *path;
    uint64_t used, capacity, objects;
};
int hd_store_mp_usage(struct hd_store *st, size_t mpi, struct hd_mp_usage *out);
/* Records a read of bucket/name now; kept in memory and written by hd_store_atime_flush
 * (one transaction per mountpath), so a GET costs no catalog write. */
void hd_store_touch(struct hd_store *st, const char *bucket, const char *name);
int hd_store_atime_flush(struct hd_store *st);
/* Up to max objects of the given buckets on mountpath mpi, least recently used first. */
struct hd_lru_ent {
    char *bucket, *name;
    uint64_t size;
    int64_t atime_ms, mtime_ms;
    char etag[48];
};
int hd_store_lru_batch(struct hd_store *st, size_t mpi, const char *const *buckets, size_t nb,
                       size_t max, struct hd_lru_ent **out, size_t *n);
void hd_store_lru_free(struct hd_lru_ent *v, size_t n);

/* ---- write-back queue (store_wbq.c) ----
 * Per mountpath, in the catalog (table wbq): what the upstream of a write-back bucket still
 * has to get, in commit order. Entries are added by hd_put_commit (attrs->writeback) and
 * hd_store_wb_delete, in the same transaction as the row they describe. */
#define HD_WB_PUT 0
#define HD_WB_DELETE 1
struct hd_wb_ent {
    int64_t seq;
    size_t mpi;
    char *bucket, *name;
    int op;
    char *rel;  /* content file (uploads) */
    char *etag; /* of the object queued (uploads) */
    uint64_t size;
    int64_t queued_ms;
    int attempts;
};
/* Deletes bucket/name here (every mountpath, as hd_store_delete) and queues an upstream
 * delete on its home mountpath, atomically with the row's removal there. */
int hd_store_wb_delete(struct hd_store *st, const char *bucket, const char *name);
/* 1 when bucket/name on mountpath mpi is dirty (an upload is queued), 0 when not. */
int hd_store_wb_dirty(struct hd_store *st, size_t mpi, const char *bucket, const char *name);
/* Rebalance moved a dirty object with its dirty state: deletes the row (while it has this etag
 * and mtime, else HD_EPRECONDITION) and the name's queued entries here, in one transaction, so
 * that only the new owner uploads it. */
int hd_store_delete_moved(struct hd_store *st, size_t mpi, const char *bucket, const char *name,
                          const char *etag, int64_t mtime_ms);
/* 1 when an upstream delete of bucket/name is queued (its upstream copy is about to go, so a
 * miss must not fetch it), 0 when not. */
int hd_store_wb_deleting(struct hd_store *st, const char *bucket, const char *name);
/* Up to max entries of mountpath mpi due at now_ms (next_try <= now_ms), by seq. */
int hd_store_wb_next(struct hd_store *st, size_t mpi, int64_t now_ms, size_t max,
                     struct hd_wb_ent **out, size_t *n);
void hd_store_wb_free(struct hd_wb_ent *v, size_t n);
/* Upstream multipart uploads begun by the uploader (table wbmpu of mountpath mpi): begun
 * records one with gen (an id of the running process); ended removes it, or with orphan
 * keeps it marked (its abort failed); stale lists up to max that are marked or were begun
 * under another gen (by a process that has since died), to be aborted. */
struct hd_wb_mpu {
    char *bucket, *name, *upload_id;
};
int hd_store_wb_mpu_begun(struct hd_store *st, size_t mpi, const char *bucket, const char *name,
                          const char *upload_id, int64_t gen);
int hd_store_wb_mpu_ended(struct hd_store *st, size_t mpi, const char *bucket, const char *name,
                          const char *upload_id, int orphan);
int hd_store_wb_mpu_stale(struct hd_store *st, size_t mpi, int64_t gen, size_t max,
                          struct hd_wb_mpu **out, size_t *n);
void hd_store_wb_mpu_free(struct hd_wb_mpu *v, size_t n);
/* 1 while entry seq of mountpath mpi is queued, 0 once it is gone (uploaded, or superseded by
 * a newer write or delete of its name, or moved away by rebalance). */
int hd_store_wb_queued(struct hd_store *st, size_t mpi, int64_t seq);
/* The upstream has entry seq: removes it (0; it may have been superseded meanwhile). */
int hd_store_wb_done(struct hd_store *st, size_t mpi, int64_t seq);
/* The entry failed: try again at next_ms; failed != 0 marks a permanent error (reported,
 * still retried at the longest backoff). */
int hd_store_wb_retry(struct hd_store *st, size_t mpi, int64_t seq, int64_t next_ms, int failed,
                      const char *err);
/* Opens content file rel of mountpath mpi for reading (*fd is the caller's). */
int hd_store_wb_open(struct hd_store *st, size_t mpi, const char *rel, int *fd);
/* Queued entries of mountpath mpi (bucket and prefix NULL = all; max_seq 0 = all): uploads
 * (objects, bytes), entries marked failed, all entries, the oldest queued time (0 = none)
 * and the highest seq. */
struct hd_wb_stats {
    uint64_t objects, bytes, failed, entries;
    int64_t oldest_ms, max_seq;
};
int hd_store_wb_stats(struct hd_store *st, size_t mpi, const char *bucket, const char *prefix,
                      int64_t max_seq, struct hd_wb_stats *out);
/* The error of the first failed entry in the same scope (*msg malloc'd, NULL when none). */
int hd_store_wb_first_error(struct hd_store *st, size_t mpi, const char *bucket, const char *prefix,
                            int64_t max_seq, char **name, char **msg);

#endif
