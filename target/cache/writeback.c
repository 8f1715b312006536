/* writeback: the burst buffer of write-back buckets (bucket prop write_policy "back").
 *   - A PUT (or multipart Complete) is committed locally with an upload entry queued in the
 *     same catalog transaction (store wbq.c); a DELETE removes the local copy and queues an
 *     upstream delete the same way. The answer does not wait for the upstream.
 *   - Uploader threads (writeback.workers) take due entries in commit order (oldest first
 *     over the mountpaths), never two of one name at once, so the upstream sees a name's
 *     writes in the order they were acknowledged. A success removes the entry (a newer write
 *     that superseded it meanwhile keeps its own entry, uploaded next). A failure is retried
 *     with exponential backoff (writeback.backoff_ms .. backoff_max_ms); a 4xx other than
 *     408/429 is marked failed (reported by the metrics and flush jobs) and still retried at
 *     the longest backoff, never dropped.
 *   - Admission: PUTs to write-back buckets get 503 SlowDown while the target's dirty bytes
 *     would pass writeback.dirty_max.
 *   - The "flush" job kind: waits until every entry queued before it started (of a bucket,
 *     optionally under a prefix) is gone, with progress.
 * The queue is in the catalogs, so a restart (or kill -9) resumes it. Uploader threads and
 * job threads block on the network; the entry points for HTTP workers only touch the disk. */
#include "target/cache/int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cksum.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/metrics.h"
#include "target/object/object.h"

#define WB_BATCH 64
#define WB_REAP_MS 30000         /* how often interrupted multipart uploads are looked for */
#define S3_MIN_PART (5ull << 20) /* the upstream's rules for multipart uploads */
#define S3_MAX_PART (5ull << 30)
#define S3_MAX_PARTS 10000

struct inflight {
    int busy;
    size_t mpi;
    int64_t seq;
    char *bucket, *name;
};

struct hd_wb {
    struct hd_cache *c;
    int workers;
    long max_bps, backoff_ms, backoff_max_ms;
    uint64_t dirty_max, mp_threshold, part_size;
    int64_t gen;     /* this process's id in wbmpu */
    int64_t reap_ms; /* when wb_reap runs next (worker 0) */
    pthread_t *thr;
    int nthr;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* work may be due (kick), or an upload ended (flush waits) */
    int kicked;
    struct inflight *fl; /* one slot per worker */
    _Atomic uint64_t uploads, upload_bytes, deletes, errors, multipart, superseded;
};

static int64_t now_ms(void)
{
    return (int64_t)(hd_now_ns() / 1000000ull);
}

/* The MD5 of len bytes of fd from off (UINT64_MAX: to the end). */
static int range_md5(int fd, uint64_t off, uint64_t len, unsigned char out[16])
{
    struct hd_md5 m;
    char *buf = malloc(1 << 20);
    ssize_t n;
    int rc = 0;

    if (!buf || hd_md5_init(&m) < 0) {
        free(buf);
        return -ENOMEM;
    }
    while (len &&
           (n = pread(fd, buf, len < (1u << 20) ? (size_t)len : (1u << 20), (off_t)off)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            break;
        }
        hd_md5_update(&m, buf, (size_t)n);
        off += (uint64_t)n;
        len -= len == UINT64_MAX ? 0 : (uint64_t)n;
    }
    if (rc == 0 && len && len != UINT64_MAX)
        rc = -EIO; /* the file is shorter than its row says */
    hd_md5_final(&m, out);
    hd_md5_cleanup(&m);
    free(buf);
    return rc;
}

int hd_wb_file_md5(int fd, unsigned char out[16])
{
    return range_md5(fd, 0, UINT64_MAX, out);
}

/* The MD5 of a single-PUT object is its ETag; 0 when etag is one. */
static int etag_md5(const char *etag, unsigned char out[16])
{
    size_t n = 0;

    if (!etag || strlen(etag) != 32 || hd_unhex(etag, 32, out, 16, &n) < 0 || n != 16)
        return -1;
    return 0;
}

/* ---- one entry ---- */

/* Whether an upload error is the upstream refusing (4xx but 408/429): permanent. */
static int permanent(int rc, const struct hd_s3c_err *err)
{
    if (rc == HD_EACCESS || rc == HD_ENOSUCHBUCKET)
        return 1;
    return err->status >= 400 && err->status < 500 && err->status != 408 && err->status != 429;
}

/* Polled during an upload: nonzero once its entry has left the queue (a newer write or a
 * delete of the name superseded it, or rebalance moved it away), which aborts the upload. */
struct wb_stop {
    struct hd_wb *wb;
    const struct hd_wb_ent *e;
    int64_t next_ms;
    int superseded;
};

static int wb_stopped(void *arg)
{
    struct wb_stop *s = arg;
    int64_t now = now_ms();

    if (s->superseded || now < s->next_ms)
        return s->superseded;
    s->next_ms = now + 200;
    if (hd_store_wb_queued(s->wb->c->st, s->e->mpi, s->e->seq) == 0)
        s->superseded = 1;
    return s->superseded;
}

/* The parts of m's upload into *sizes (*n of them; 0: one PUT). An object written here in
 * parts that suit the upstream's rules (all but the last >= 5 MiB, none > 5 GiB) keeps them,
 * so that the upstream computes the same multipart ETag; any other object larger than
 * writeback.multipart_threshold goes in writeback.part_size parts (doubled until at most
 * 10000). */
static int wb_layout(const struct hd_wb *wb, const struct hd_obj_meta *m, uint64_t **sizes,
                     size_t *n)
{
    uint64_t part = wb->part_size, left;
    size_t i;

    if (hd_obj_part_sizes(m, sizes, n) == 0 && *n) {
        for (i = 0; i < *n; i++)
            if ((*sizes)[i] > S3_MAX_PART || (i + 1 < *n && (*sizes)[i] < S3_MIN_PART))
                break;
        if (i == *n)
            return 0;
    }
    free(*sizes);
    *sizes = NULL;
    *n = 0;
    if (m->size <= wb->mp_threshold)
        return 0;
    while (part < S3_MAX_PART && (m->size + part - 1) / part > S3_MAX_PARTS)
        part *= 2;
    if ((m->size + part - 1) / part > S3_MAX_PARTS)
        return HD_ETOOLARGE;
    if (!(*sizes = calloc((size_t)((m->size + part - 1) / part), sizeof(**sizes))))
        return -ENOMEM;
    for (left = m->size; left; left -= (*sizes)[(*n)++])
        (*sizes)[*n] = left < part ? left : part;
    return 0;
}

/* Aborts upload_id of remote/name upstream (not stopped by what stopped the upload, not
 * held to the bandwidth cap): 0, or the error (none left to abort is success). */
static int wb_abort(const struct hd_s3c *s3, const char *remote, const char *name,
                    const char *upload_id, struct hd_s3c_err *err)
{
    struct hd_s3c a = *s3;
    int rc;

    a.stop = NULL;
    a.max_send_bps = 0;
    rc = hd_s3c_mpu_abort(&a, remote, name, upload_id, err);
    return rc == HD_ENOSUCHUPLOAD || rc == HD_ENOSUCHKEY ? 0 : rc;
}

/* Sends fd (m's content) to the upstream as a multipart upload of the parts sizes[0..n);
 * etag gets the upstream's ETag. The upload id is recorded (wbmpu) until it is completed or
 * aborted; on failure it is aborted at once, so no parts are left behind. An abort that
 * fails (the upstream down, or without AbortMultipartUpload) is retried by wb_reap, as are
 * the uploads a crash cut short. */
static int wb_put_parts(struct hd_wb *wb, const struct hd_wb_ent *e, const struct hd_s3c *s3,
                        const char *remote, const struct hd_obj_meta *m, int fd,
                        const uint64_t *sizes, size_t n, char etag[48], struct hd_s3c_err *err)
{
    char id[1024], (*etags)[48] = calloc(n, sizeof(*etags));
    struct hd_store *st = wb->c->st;
    struct hd_s3c_err aerr;
    unsigned char md5[16];
    uint64_t off = 0;
    size_t i;
    int rc;

    if (!etags)
        return -ENOMEM;
    if ((rc = hd_s3c_mpu_create(s3, remote, e->name, m->ctype, m->meta, m->hdrs, id, sizeof(id),
                                err)) < 0) {
        free(etags);
        return rc;
    }
    hd_store_wb_mpu_begun(st, e->mpi, e->bucket, e->name, id, wb->gen);
    for (i = 0; i < n && rc == 0; off += sizes[i++]) {
        if ((rc = range_md5(fd, off, sizes[i], md5)) < 0) {
            snprintf(err->msg, sizeof(err->msg), "reading part %zu back: %s", i + 1,
                     hd_strerror(rc));
            break;
        }
        rc = hd_s3c_mpu_part(s3, remote, e->name, id, (int)i + 1, fd, off, sizes[i], md5, etags[i],
                             err);
    }
    if (rc == 0)
        rc = hd_s3c_mpu_complete(s3, remote, e->name, id, NULL, (const char(*)[48])etags, n, etag,
                                 err);
    if (rc == 0 || wb_abort(s3, remote, e->name, id, &aerr) == 0) { /* completed, or aborted */
        hd_store_wb_mpu_ended(st, e->mpi, e->bucket, e->name, id, 0);
    } else {
        HD_LOG(HD_WARN, NULL,
               "write-back %s/%s: aborting the upstream's multipart upload %s failed (tried "
               "again later): %s",
               remote, e->name, id, aerr.msg);
        hd_store_wb_mpu_ended(st, e->mpi, e->bucket, e->name, id, 1);
    }
    free(etags);
    return rc;
}

/* Aborts the upstream multipart uploads that a crash (or a failed abort) left behind: those
 * recorded by another process, or marked orphan. Each stays recorded until its abort
 * succeeds (or its bucket is no longer S3-backed). */
static void wb_reap(struct hd_wb *wb)
{
    struct hd_cache *c = wb->c;
    size_t mpi, i, n;

    for (mpi = 0; mpi < hd_store_nmp(c->st) && !atomic_load(&c->stopping); mpi++) {
        struct hd_wb_mpu *v = NULL;
        if (hd_store_wb_mpu_stale(c->st, mpi, wb->gen, 64, &v, &n) < 0)
            continue;
        for (i = 0; i < n && !atomic_load(&c->stopping); i++) {
            struct hd_cbucket *cb = hd_cache_bucket(c, v[i].bucket);
            struct hd_s3c_err err;
            int rc = 0;
            if (cb) {
                rc = wb_abort(&cb->s3, cb->remote, v[i].name, v[i].upload_id, &err);
                if (rc < 0 && permanent(rc, &err) && err.status != 404)
                    HD_LOG(HD_WARN, NULL,
                           "write-back %s/%s: aborting the upstream's multipart upload %s: %s "
                           "(its parts stay until the upstream's lifecycle rule removes them)",
                           cb->remote, v[i].name, v[i].upload_id, err.msg);
                if (rc < 0 && (permanent(rc, &err) || err.status == 404))
                    rc = 0; /* the upstream will not do it (405, 403, ...): stop asking */
                hd_cbucket_unref(cb);
            }
            if (rc == 0) {
                HD_LOG(HD_INFO, NULL,
                       "write-back %s/%s: multipart upload %s left by an interrupted upload "
                       "aborted",
                       v[i].bucket, v[i].name, v[i].upload_id);
                hd_store_wb_mpu_ended(c->st, mpi, v[i].bucket, v[i].name, v[i].upload_id, 0);
            }
        }
        hd_store_wb_mpu_free(v, n);
    }
}

/* Uploads (or deletes upstream) entry e: 0, or the error with msg filled. */
static int wb_send(struct hd_wb *wb, const struct hd_wb_ent *e, struct hd_cbucket *cb,
                   struct wb_stop *stop, int *perm, char *msg, size_t msglen)
{
    struct hd_cache *c = wb->c;
    struct hd_s3c_err err;
    struct hd_obj_meta m;
    struct hd_s3c s3;
    unsigned char md5[16];
    uint64_t *sizes = NULL;
    size_t nparts = 0;
    char etag[48];
    size_t rl;
    int rc, fd = -1;

    memset(&err, 0, sizeof(err));
    *perm = 0;
    if ((rc = hd_cbucket_check(cb, msg, msglen)) < 0)
        return rc;
    s3 = cb->s3;
    s3.max_send_bps = wb->max_bps > 0 ? wb->max_bps / (wb->workers ? wb->workers : 1) : 0;
    if (s3.max_send_bps == 0 && wb->max_bps > 0)
        s3.max_send_bps = 1;
    if (e->op == HD_WB_DELETE) {
        rc = hd_s3c_delete_object(&s3, cb->remote, e->name, &err);
        if (rc == HD_ENOSUCHKEY)
            rc = 0;
        if (rc == 0)
            atomic_fetch_add(&wb->deletes, 1);
        goto out;
    }
    s3.stop = wb_stopped;
    s3.stop_arg = stop;
    if ((rc = hd_store_lookup_mp(c->st, e->mpi, e->bucket, e->name, &m)) < 0)
        return rc == HD_ENOSUCHKEY ? 0 : rc; /* deleted: the delete's own entry follows */
    rl = e->rel ? strlen(e->rel) : 0;
    if (!m.path || !e->rel || strlen(m.path) < rl ||
        strcmp(m.path + strlen(m.path) - rl, e->rel) != 0) {
        hd_obj_meta_cleanup(&m); /* overwritten: that write queued its own upload */
        return 0;
    }
    if ((rc = hd_store_wb_open(c->st, e->mpi, e->rel, &fd)) < 0) {
        hd_obj_meta_cleanup(&m);
        return rc == -ENOENT ? 0 : rc; /* replaced between the lookup and the open */
    }
    if ((rc = wb_layout(wb, &m, &sizes, &nparts)) < 0) {
        snprintf(msg, msglen, "%s/%s (%llu bytes) does not fit an upstream multipart upload",
                 e->bucket, e->name, (unsigned long long)m.size);
        *perm = 1;
        goto done;
    }
    if (nparts) {
        rc = wb_put_parts(wb, e, &s3, cb->remote, &m, fd, sizes, nparts, etag, &err);
        if (rc == 0) {
            atomic_fetch_add(&wb->multipart, 1);
            if (strcmp(etag, m.etag) != 0)
                HD_LOG(HD_DEBUG, NULL,
                       "write-back %s/%s: the upstream's ETag %s differs from the local %s",
                       e->bucket, e->name, etag, m.etag);
        }
    } else if (etag_md5(m.etag, md5) < 0 && (rc = hd_wb_file_md5(fd, md5)) < 0) {
        snprintf(msg, msglen, "reading %s/%s back: %s", e->bucket, e->name, hd_strerror(rc));
        goto done;
    } else {
        rc = hd_s3c_put_object(&s3, cb->remote, e->name, fd, m.size, md5, m.ctype, m.meta, m.hdrs,
                               etag, &err);
    }
    if (rc == 0) {
        atomic_fetch_add(&wb->uploads, 1);
        atomic_fetch_add(&wb->upload_bytes, m.size);
    }
    if (rc < 0 && stop->superseded) {
        hd_obj_meta_cleanup(&m);
        free(sizes);
        close(fd);
        return -ECANCELED;
    }
    hd_obj_meta_cleanup(&m);
    free(sizes);
    close(fd);
out:
    if (rc < 0) {
        *perm = permanent(rc, &err);
        snprintf(msg, msglen, "%s", err.msg[0] ? err.msg : hd_strerror(rc));
        hd_cstat_add(HD_CS_UPSTREAM_ERR, 1);
    }
    return rc;
done:
    hd_obj_meta_cleanup(&m);
    free(sizes);
    close(fd);
    return rc;
}

static void wb_process(struct hd_wb *wb, const struct hd_wb_ent *e)
{
    struct hd_cache *c = wb->c;
    struct hd_cbucket *cb = hd_cache_bucket(c, e->bucket);
    struct wb_stop stop = {wb, e, 0, 0};
    char msg[512] = "";
    int rc, perm = 0;

    if (!cb) { /* the bucket is gone (destroyed): nothing to send it to */
        HD_LOG(HD_WARN, NULL, "write-back: %s/%s: bucket is no longer S3-backed; dropped",
               e->bucket, e->name);
        hd_store_wb_done(c->st, e->mpi, e->seq);
        return;
    }
    rc = wb_send(wb, e, cb, &stop, &perm, msg, sizeof(msg));
    hd_cbucket_unref(cb);
    if (rc == 0) {
        hd_store_wb_done(c->st, e->mpi, e->seq);
        return;
    }
    if (stop.superseded) { /* its entry is gone: the newer one is uploaded next */
        atomic_fetch_add(&wb->superseded, 1);
        HD_LOG(HD_INFO, NULL,
               "write-back %s/%s: upload stopped, a newer write or delete of it came", e->bucket,
               e->name);
        return;
    }
    if (rc == -ECANCELED && atomic_load(&c->stopping))
        return; /* shutting down: the entry stays for the next start */
    {
        int shift = e->attempts < 20 ? e->attempts : 20;
        int64_t delay = (int64_t)wb->backoff_ms << shift;
        if (perm || delay > wb->backoff_max_ms)
            delay = wb->backoff_max_ms;
        atomic_fetch_add(&wb->errors, 1);
        HD_LOG(perm ? HD_ERROR : HD_WARN, NULL,
               "write-back %s %s/%s (attempt %d): %s; retry in %lld ms%s",
               e->op == HD_WB_DELETE ? "delete" : "upload", e->bucket, e->name, e->attempts + 1,
               msg, (long long)delay, perm ? " (the upstream refuses it)" : "");
        hd_store_wb_retry(c->st, e->mpi, e->seq, now_ms() + delay, perm, msg);
    }
}

/* ---- the uploader ---- */

static int busy_with(const struct hd_wb *wb, const struct hd_wb_ent *e)
{
    int i;

    for (i = 0; i < wb->nthr; i++) {
        const struct inflight *f = &wb->fl[i];
        if (f->busy && ((f->mpi == e->mpi && f->seq == e->seq) ||
                        (strcmp(f->bucket, e->bucket) == 0 && strcmp(f->name, e->name) == 0)))
            return 1;
    }
    return 0;
}

/* Under wb->mu: the oldest due entry no worker has and whose name no worker is sending,
 * copied to *out (strings moved). 0 found, 1 none. */
static int wb_claim(struct hd_wb *wb, struct hd_wb_ent *out)
{
    struct hd_cache *c = wb->c;
    size_t mpi, nmp = hd_store_nmp(c->st), i;
    struct hd_wb_ent *best = NULL, *lists[64] = {0};
    size_t counts[64] = {0};
    int64_t now = now_ms();

    if (nmp > 64)
        nmp = 64;
    for (mpi = 0; mpi < nmp; mpi++) {
        if (hd_store_wb_next(c->st, mpi, now, WB_BATCH, &lists[mpi], &counts[mpi]) < 0)
            continue;
        for (i = 0; i < counts[mpi]; i++) {
            struct hd_wb_ent *e = &lists[mpi][i];
            if (busy_with(wb, e))
                continue;
            if (!best || e->queued_ms < best->queued_ms)
                best = e;
            break; /* the first free one of a mountpath is its oldest */
        }
    }
    if (best) {
        *out = *best;
        memset(best, 0, sizeof(*best));
    }
    for (mpi = 0; mpi < nmp; mpi++)
        hd_store_wb_free(lists[mpi], counts[mpi]);
    return best ? 0 : 1;
}

struct worker {
    struct hd_wb *wb;
    int slot;
};

static void *wb_main(void *arg)
{
    struct worker *w = arg;
    struct hd_wb *wb = w->wb;
    struct inflight *f = &wb->fl[w->slot];
    struct hd_wb_ent e;

    pthread_mutex_lock(&wb->mu);
    while (!atomic_load(&wb->c->stopping)) {
        if (w->slot == 0 && now_ms() >= wb->reap_ms) {
            wb->reap_ms = now_ms() + WB_REAP_MS;
            pthread_mutex_unlock(&wb->mu);
            wb_reap(wb);
            pthread_mutex_lock(&wb->mu);
            continue;
        }
        if (wb_claim(wb, &e) != 0) {
            struct timespec ts;
            if (wb->kicked) {
                wb->kicked = 0;
                continue;
            }
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 200 * 1000000L; /* due retries are found within this */
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&wb->cv, &wb->mu, &ts);
            continue;
        }
        f->busy = 1;
        f->mpi = e.mpi;
        f->seq = e.seq;
        f->bucket = e.bucket;
        f->name = e.name;
        pthread_mutex_unlock(&wb->mu);
        wb_process(wb, &e);
        pthread_mutex_lock(&wb->mu);
        f->busy = 0;
        f->bucket = f->name = NULL;
        free(e.bucket);
        free(e.name);
        free(e.rel);
        free(e.etag);
        pthread_cond_broadcast(&wb->cv);
        wb->kicked = 1; /* a newer entry of the same name may be waiting */
    }
    pthread_mutex_unlock(&wb->mu);
    free(w);
    return NULL;
}

int hd_wb_new(struct hd_cache *c, const struct hd_config *cfg, struct hd_wb **out)
{
    struct hd_wb *wb = calloc(1, sizeof(*wb));

    if (!wb)
        return -ENOMEM;
    wb->c = c;
    wb->workers = (int)hd_config_int(cfg, "writeback.workers");
    wb->max_bps = (long)hd_config_int(cfg, "writeback.max_bps");
    wb->dirty_max = (uint64_t)hd_config_int(cfg, "writeback.dirty_max");
    {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        wb->gen = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    }
    wb->mp_threshold = (uint64_t)hd_config_int(cfg, "writeback.multipart_threshold");
    wb->part_size = (uint64_t)hd_config_int(cfg, "writeback.part_size");
    wb->backoff_ms = (long)hd_config_int(cfg, "writeback.backoff_ms");
    wb->backoff_max_ms = (long)hd_config_int(cfg, "writeback.backoff_max_ms");
    wb->fl = calloc((size_t)wb->workers + 1, sizeof(*wb->fl));
    wb->thr = calloc((size_t)wb->workers + 1, sizeof(*wb->thr));
    pthread_mutex_init(&wb->mu, NULL);
    pthread_cond_init(&wb->cv, NULL);
    if (!wb->fl || !wb->thr) {
        hd_wb_free(wb);
        return -ENOMEM;
    }
    *out = wb;
    return 0;
}

int hd_wb_start(struct hd_wb *wb)
{
    int i;

    for (i = 0; i < wb->workers; i++) {
        struct worker *w = malloc(sizeof(*w));
        if (!w)
            return -ENOMEM;
        w->wb = wb;
        w->slot = i;
        wb->fl[i].busy = 0;
        if (pthread_create(&wb->thr[i], NULL, wb_main, w) != 0) {
            free(w);
            return -EAGAIN;
        }
        wb->nthr++;
    }
    return 0;
}

/* The cache's stopping flag is set (and transfers aborted) before this. */
void hd_wb_stop(struct hd_wb *wb)
{
    int i;

    if (!wb)
        return;
    pthread_mutex_lock(&wb->mu);
    pthread_cond_broadcast(&wb->cv);
    pthread_mutex_unlock(&wb->mu);
    for (i = 0; i < wb->nthr; i++)
        pthread_join(wb->thr[i], NULL);
    wb->nthr = 0;
}

void hd_wb_free(struct hd_wb *wb)
{
    if (!wb)
        return;
    hd_wb_stop(wb);
    pthread_mutex_destroy(&wb->mu);
    pthread_cond_destroy(&wb->cv);
    free(wb->fl);
    free(wb->thr);
    free(wb);
}

void hd_cache_wb_kick(struct hd_cache *c)
{
    struct hd_wb *wb = c ? c->wb : NULL;

    if (!wb)
        return;
    pthread_mutex_lock(&wb->mu);
    wb->kicked = 1;
    pthread_cond_broadcast(&wb->cv);
    pthread_mutex_unlock(&wb->mu);
}

/* Sums the queue statistics of every mountpath in one scope. */
static int wb_totals(struct hd_cache *c, const char *bucket, const char *prefix,
                     const int64_t *max_seq, struct hd_wb_stats *t)
{
    size_t mpi, nmp = hd_store_nmp(c->st);
    struct hd_wb_stats s;
    int rc;

    memset(t, 0, sizeof(*t));
    for (mpi = 0; mpi < nmp; mpi++) {
        if (max_seq && max_seq[mpi] <= 0)
            continue;
        if ((rc = hd_store_wb_stats(c->st, mpi, bucket, prefix, max_seq ? max_seq[mpi] : 0, &s)) <
            0)
            return rc;
        t->objects += s.objects;
        t->bytes += s.bytes;
        t->failed += s.failed;
        t->entries += s.entries;
        if (s.oldest_ms && (!t->oldest_ms || s.oldest_ms < t->oldest_ms))
            t->oldest_ms = s.oldest_ms;
    }
    return 0;
}

int hd_cache_wb_admit(struct hd_cache *c, uint64_t size, char *msg, size_t msglen)
{
    struct hd_wb_stats t;
    uint64_t limit = c->wb->dirty_max;
    size_t mpi;

    if (!limit) { /* half of what the mountpaths can hold */
        for (mpi = 0; mpi < hd_store_nmp(c->st); mpi++) {
            struct hd_mp_usage u;
            if (hd_store_mp_usage(c->st, mpi, &u) == 0)
                limit += u.capacity / 2;
        }
    }
    if (!limit || wb_totals(c, NULL, NULL, NULL, &t) < 0)
        return 0;
    if (t.bytes + size > limit) {
        snprintf(msg, msglen,
                 "Write-back: %llu dirty bytes are waiting for the upstream "
                 "(writeback.dirty_max %llu); retry later.",
                 (unsigned long long)t.bytes, (unsigned long long)limit);
        return HD_ESLOWDOWN;
    }
    return 0;
}

void hd_cache_wb_orphan(struct hd_cache *c, const char *bucket, const char *key,
                        const char *upload_id)
{
    size_t mpi = hd_store_mp_index(c->st, bucket, key);

    if (hd_store_wb_mpu_begun(c->st, mpi, bucket, key, upload_id, c->wb->gen) == 0)
        hd_store_wb_mpu_ended(c->st, mpi, bucket, key, upload_id, 1);
}

int hd_cache_wb_delete(struct hd_cache *c, struct hd_cbucket *cb, const char *key)
{
    int rc = hd_store_wb_delete(c->st, cb->name, key);

    if (rc == 0 && hd_rebalance_moving(c->rb))
        hd_rebalance_delete_elsewhere(c->rb, cb->name, key);
    hd_cache_wb_kick(c);
    return rc;
}

int hd_cache_wb_status(struct hd_cache *c, const char *bucket, json_t **out)
{
    struct hd_wb_stats t;
    int64_t now = now_ms();
    int rc;

    json_int_t uploading = 0;
    int i;

    if ((rc = wb_totals(c, bucket, NULL, NULL, &t)) < 0)
        return rc;
    if (c->wb) {
        pthread_mutex_lock(&c->wb->mu);
        for (i = 0; i < c->wb->nthr; i++)
            uploading += c->wb->fl[i].busy && (!bucket || strcmp(c->wb->fl[i].bucket, bucket) == 0);
        pthread_mutex_unlock(&c->wb->mu);
    }
    *out = json_pack("{s:I, s:I, s:I, s:I, s:I, s:f}", "dirty_objects", (json_int_t)t.objects,
                     "dirty_bytes", (json_int_t)t.bytes, "queue_depth", (json_int_t)t.entries,
                     "failed", (json_int_t)t.failed, "uploading", uploading, "oldest_dirty_seconds",
                     t.oldest_ms ? (double)(now - t.oldest_ms) / 1000.0 : 0.0);
    return *out ? 0 : -ENOMEM;
}

void hd_wb_render(struct hd_buf *b, struct hd_cache *c)
{
    struct hd_wb *wb = c->wb;
    struct hd_wb_stats t;

    if (!wb || wb_totals(c, NULL, NULL, NULL, &t) < 0)
        return;
    hd_buf_printf(b,
                  "# HELP hoard_writeback_dirty_objects Objects written here and not yet "
                  "upstream (write-back).\n# TYPE hoard_writeback_dirty_objects gauge\n"
                  "hoard_writeback_dirty_objects %llu\n"
                  "# HELP hoard_writeback_dirty_bytes Bytes of those objects.\n"
                  "# TYPE hoard_writeback_dirty_bytes gauge\nhoard_writeback_dirty_bytes %llu\n"
                  "# HELP hoard_writeback_queue_depth Upload and delete entries queued.\n"
                  "# TYPE hoard_writeback_queue_depth gauge\nhoard_writeback_queue_depth %llu\n"
                  "# HELP hoard_writeback_failed Entries the upstream refuses (still retried).\n"
                  "# TYPE hoard_writeback_failed gauge\nhoard_writeback_failed %llu\n"
                  "# HELP hoard_writeback_oldest_dirty_seconds Age of the oldest queued entry.\n"
                  "# TYPE hoard_writeback_oldest_dirty_seconds gauge\n"
                  "hoard_writeback_oldest_dirty_seconds %.3f\n",
                  (unsigned long long)t.objects, (unsigned long long)t.bytes,
                  (unsigned long long)t.entries, (unsigned long long)t.failed,
                  t.oldest_ms ? (double)(now_ms() - t.oldest_ms) / 1000.0 : 0.0);
    hd_buf_printf(b,
                  "# HELP hoard_writeback_uploads_total Objects uploaded from the queue.\n"
                  "# TYPE hoard_writeback_uploads_total counter\n"
                  "hoard_writeback_uploads_total %llu\n"
                  "# HELP hoard_writeback_upload_bytes_total Bytes uploaded from the queue.\n"
                  "# TYPE hoard_writeback_upload_bytes_total counter\n"
                  "hoard_writeback_upload_bytes_total %llu\n"
                  "# HELP hoard_writeback_deletes_total Deletes sent upstream from the queue.\n"
                  "# TYPE hoard_writeback_deletes_total counter\n"
                  "hoard_writeback_deletes_total %llu\n"
                  "# HELP hoard_writeback_errors_total Failed upload or delete attempts.\n"
                  "# TYPE hoard_writeback_errors_total counter\n"
                  "hoard_writeback_errors_total %llu\n"
                  "# HELP hoard_writeback_multipart_uploads_total Uploads sent as upstream "
                  "multipart uploads.\n# TYPE hoard_writeback_multipart_uploads_total counter\n"
                  "hoard_writeback_multipart_uploads_total %llu\n"
                  "# HELP hoard_writeback_superseded_total Uploads stopped because a newer write "
                  "or delete of the name came.\n"
                  "# TYPE hoard_writeback_superseded_total counter\n"
                  "hoard_writeback_superseded_total %llu\n",
                  (unsigned long long)atomic_load(&wb->uploads),
                  (unsigned long long)atomic_load(&wb->upload_bytes),
                  (unsigned long long)atomic_load(&wb->deletes),
                  (unsigned long long)atomic_load(&wb->errors),
                  (unsigned long long)atomic_load(&wb->multipart),
                  (unsigned long long)atomic_load(&wb->superseded));
}

/* ---- the flush job ---- */

/* args {"prefix": P} (optional). Waits until every queue entry of the bucket (under P) that
 * existed when it started is gone. Fails when only entries the upstream refuses are left. */
static int flush_run(struct hd_job *j, void *ctx)
{
    struct hd_cache *c = ctx;
    struct hd_wb *wb = c->wb;
    json_t *px = json_object_get(j->args, "prefix");
    const char *prefix =
        json_is_string(px) && *json_string_value(px) ? json_string_value(px) : NULL;
    size_t mpi, nmp = hd_store_nmp(c->st);
    int64_t *barrier = calloc(nmp ? nmp : 1, sizeof(*barrier));
    struct hd_wb_stats t0, t;
    uint64_t done = 0;
    int rc;

    if (!barrier)
        return -ENOMEM;
    if (px && !json_is_string(px)) {
        hd_job_error(j, "prefix must be a string");
        free(barrier);
        return HD_EBADARG;
    }
    for (mpi = 0; mpi < nmp; mpi++) {
        struct hd_wb_stats s;
        if ((rc = hd_store_wb_stats(c->st, mpi, NULL, NULL, 0, &s)) < 0)
            goto out;
        barrier[mpi] = s.max_seq; /* 0: nothing queued there */
    }
    if ((rc = wb_totals(c, j->bucket, prefix, barrier, &t0)) < 0)
        goto out;
    hd_job_set_total(j, t0.entries, t0.bytes);
    hd_cache_wb_kick(c);
    for (;;) {
        struct timespec ts;
        if ((rc = wb_totals(c, j->bucket, prefix, barrier, &t)) < 0)
            goto out;
        if (t0.entries - t.entries > done) {
            hd_job_add(j, t0.entries - t.entries - done, 0);
            done = t0.entries - t.entries;
        }
        hd_job_set_extra(j, "remaining", t.entries);
        hd_job_set_extra(j, "failed", t.failed);
        if (t.entries == 0)
            break;
        if (t.failed && t.failed == t.entries) {
            for (mpi = 0; mpi < nmp; mpi++) {
                char *name = NULL, *msg = NULL;
                if (barrier[mpi] > 0 &&
                    hd_store_wb_first_error(c->st, mpi, j->bucket, prefix, barrier[mpi], &name,
                                            &msg) == 0 &&
                    name)
                    hd_job_error(j, "%s: the upstream refuses it: %s", name, msg ? msg : "");
                free(name);
                free(msg);
            }
            rc = HD_EUNAVAIL;
            goto out;
        }
        if (hd_job_stopped(j)) {
            rc = -ECANCELED;
            goto out;
        }
        pthread_mutex_lock(&wb->mu);
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 250 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&wb->cv, &wb->mu, &ts);
        pthread_mutex_unlock(&wb->mu);
    }
    rc = 0;
out:
    free(barrier);
    return rc;
}

int hd_wb_jobs_register(struct hd_cache *c)
{
    return hd_jobs_register(c->js, "flush", flush_run, c, HD_JOB_RESUMABLE);
}
