/* lifecycle: a target applies its buckets' lifecycle rules (common/lifecycle.h) to what it
 * holds, as the job "lifecycle" (target/jobs.h). The housekeeping thread (target/cache) starts
 * it every lifecycle.interval_ms while a bucket here has rules; each pass
 *
 *   - deletes every object of the bucket's catalog rows on this target (each mountpath) that an
 *     enabled Expiration rule (Days or Date) makes due, and only while the row is the one the
 *     rule was checked against (hd_store_delete_if: an overwrite meanwhile keeps the new
 *     object);
 *   - aborts the multipart uploads started here that an AbortIncompleteMultipartUpload rule
 *     makes due (their parts go with them).
 *
 * Every target acts on its own rows only, so a cluster needs no coordination: an object's
 * rows are all written with its one mtime, and rules come to every target with the BMD.
 * Progress: objects and bytes deleted; extras "expired" and "aborted"; the counters
 * hoard_lifecycle_expired_total and hoard_lifecycle_aborted_uploads_total. Job thread. */
#include "target/api/lifecycle.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "common/errors.h"
#include "common/lifecycle.h"
#include "common/log.h"
#include "target/api/mpu.h"
#include "target/cache/cache.h"
#include "target/object/object.h"

#define SCAN_BATCH 1000

static int64_t wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The object's tags as a JSON object (NULL: none). */
static json_t *tags_of(const struct hd_obj_meta *m)
{
    char *text = NULL;
    json_t *j = NULL;

    if (hd_hdrs_tags(m->hdrs, &text) == 0 && text)
        j = json_loads(text, 0, NULL);
    free(text);
    return j;
}

/* One name of mountpath mpi: deleted when a rule makes it due. 1 deleted, 0 not, or < 0. */
static int expire_one(struct hd_job *j, struct hd_store *st, size_t mpi, const char *bucket,
                      const char *name, const json_t *rules, int need_tags, int64_t now,
                      int64_t day_ms)
{
    struct hd_obj_meta m;
    json_t *tags = NULL;
    int rc, due;

    if ((rc = hd_store_lookup_mp(st, mpi, bucket, name, &m)) < 0)
        return rc == HD_ENOSUCHKEY ? 0 : rc;
    if (need_tags)
        tags = tags_of(&m);
    due = hd_lc_expired(rules, name, m.size, m.mtime_ms, tags, now, day_ms);
    json_decref(tags);
    rc = due ? hd_store_delete_if(st, mpi, bucket, name, m.etag, m.mtime_ms) : 1;
    if (rc == 0) {
        hd_job_add(j, 1, m.size);
        hd_cstat_add(HD_CS_LC_EXPIRED, 1);
        HD_LOG(HD_DEBUG, NULL, "lifecycle: expired %s/%s", bucket, name);
    }
    hd_obj_meta_cleanup(&m);
    if (rc == HD_EPRECONDITION || rc == HD_ENOSUCHKEY || rc == 1)
        return 0; /* not due, or changed meanwhile: the next pass looks again */
    return rc < 0 ? rc : 1;
}

static int expire_bucket(struct hd_job *j, struct hd_store *st, const char *bucket,
                         const json_t *rules, int need_tags, int64_t day_ms, uint64_t *expired)
{
    size_t mpi, i, n;
    int rc = 0;

    for (mpi = 0; mpi < hd_store_nmp(st) && rc == 0; mpi++) {
        char *after = strdup(""), **names = NULL;
        if (!after)
            return -ENOMEM;
        do {
            if (hd_job_stopped(j)) {
                rc = -ECANCELED;
                break;
            }
            if ((rc = hd_store_scan(st, mpi, bucket, after, SCAN_BATCH, &names, &n)) < 0)
                break;
            for (i = 0; i < n && rc >= 0; i++) {
                rc = expire_one(j, st, mpi, bucket, names[i], rules, need_tags, wall_ms(), day_ms);
                *expired += rc > 0;
            }
            if (n) {
                free(after);
                after = names[n - 1];
                names[n - 1] = NULL;
            }
            hd_store_names_free(names, n);
            names = NULL;
        } while (rc >= 0 && n == SCAN_BATCH);
        free(after);
        rc = rc < 0 ? rc : 0;
    }
    return rc;
}

static int lc_run(struct hd_job *j, void *ctx)
{
    struct hd_target *t = ctx;
    struct hd_bucket_info *bs = NULL;
    uint64_t expired = 0, aborted = 0;
    size_t nb = 0, i;
    int rc;

    if ((rc = hd_store_bucket_list(t->st, &bs, &nb)) < 0)
        return rc;
    for (i = 0; i < nb && !hd_job_stopped(j); i++) {
        char *props = NULL;
        json_t *pj, *rules;
        int what, need_tags, brc = 0;
        uint64_t a = 0;
        if (!bs[i].has_lifecycle || hd_store_bucket_props(t->st, bs[i].name, &props) < 0)
            continue;
        pj = props ? json_loads(props, 0, NULL) : NULL;
        free(props);
        rules = json_object_get(pj, "lifecycle");
        what = hd_lc_actions(rules, &need_tags);
        if (what & HD_LC_EXPIRES)
            brc = expire_bucket(j, t->st, bs[i].name, rules, need_tags, t->lc_day_ms, &expired);
        if (brc == 0 && (what & HD_LC_ABORTS)) {
            brc = hd_mpu_lifecycle_abort(t, bs[i].name, rules, wall_ms(), t->lc_day_ms, &a);
            aborted += a;
            hd_cstat_add(HD_CS_LC_ABORTED, a);
        }
        json_decref(pj);
        if (brc == -ECANCELED) {
            rc = brc;
            break;
        }
        if (brc < 0)
            hd_job_error(j, "bucket %s: %s", bs[i].name, hd_strerror(brc));
    }
    free(bs);
    hd_job_set_extra(j, "expired", expired);
    hd_job_set_extra(j, "aborted", aborted);
    if (expired || aborted)
        HD_LOG(HD_INFO, NULL, "lifecycle: %llu objects expired, %llu uploads aborted",
               (unsigned long long)expired, (unsigned long long)aborted);
    if (rc == 0 && hd_job_stopped(j))
        rc = -ECANCELED;
    return rc;
}

int hd_lifecycle_register(struct hd_target *t, int64_t day_ms)
{
    t->lc_day_ms = day_ms > 0 ? day_ms : 86400000;
    return hd_jobs_register(t->jobs, HD_LIFECYCLE_JOB, lc_run, t, 0);
}
