/* lifecycle: a target applies its buckets' lifecycle rules (common/lifecycle.h) to what it
 * holds, as the job "lifecycle" (target/jobs.h). The housekeeping thread (target/cache) starts
 * it every lifecycle.interval_ms while a bucket here has rules; each pass
 *
 *   - deletes every object of the bucket's catalog rows on this target (each mountpath) that an
 *     enabled Expiration rule (Days or Date) makes due, and only while the row is the one the
 *     rule was checked against (hd_store_delete_if: an overwrite meanwhile keeps the new
 *     object; with a tag filter hd_store_delete_if_hdrs: a tag change meanwhile keeps it);
 *     names no enabled rule's prefix takes are not even read; the bucket's rules are read
 *     again before every 1000 names, and a change (DELETE ?lifecycle, new rules, the bucket
 *     dropped) stops the bucket's pass there;
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

#include <jansson.h>

#include "common/errors.h"
#include "common/lifecycle.h"
#include "common/log.h"
#include "target/api/expiration.h"
#include "target/api/mpu.h"
#include "target/cache/cache.h"
#include "target/store/int.h" /* hd_store_now_ms: the clock of every mtime */

#define SCAN_BATCH 1000

/* One bucket's pass: its rules as read at the start (text too: a change stops the pass). */
struct pass {
    struct hd_job *j;
    struct hd_target *t;
    const char *bucket;
    char *text;    /* the bucket's props when the pass began */
    json_t *props; /* parsed */
    const json_t *rules;
    int need_tags;
    uint64_t expired;
};

/* Whether the bucket still has the rules the pass began with (no DELETE ?lifecycle, no new
 * rules, not dropped and made again with others meanwhile): checked before every batch, so a
 * change stops a running pass within one batch of names. Other properties (ACL, tags, CORS)
 * may change meanwhile. */
static int rules_unchanged(struct pass *p)
{
    char *now = NULL;
    json_t *j = NULL;
    int same = 0;

    if (hd_store_bucket_props(p->t->st, p->bucket, &now) == 0 && now) {
        if (p->text && strcmp(now, p->text) == 0)
            same = 1; /* nothing changed: no parse */
        else if ((j = json_loads(now, 0, NULL)))
            same = json_equal(json_object_get(j, "lifecycle"), p->rules); /* other props may */
    }
    json_decref(j);
    free(now);
    return same;
}

/* One name of mountpath mpi: deleted when a rule makes it due. 1 deleted, 0 not, or < 0. */
static int expire_one(struct pass *p, size_t mpi, const char *name)
{
    struct hd_store *st = p->t->st;
    struct hd_obj_meta m;
    json_t *tags = NULL;
    int rc, due;

    if (!hd_lc_may_expire(p->rules, name))
        return 0; /* no enabled expiration rule has its prefix: not even read */
    if ((rc = hd_store_lookup_mp(st, mpi, p->bucket, name, &m)) < 0)
        return rc == HD_ENOSUCHKEY ? 0 : rc;
    if (p->need_tags)
        tags = hd_lifecycle_obj_tags(&m);
    due =
        hd_lc_expired(p->rules, name, m.size, m.mtime_ms, tags, hd_store_now_ms(), p->t->lc_day_ms);
    json_decref(tags);
    if (!due)
        rc = 1;
    else if (p->need_tags) /* the tags it was judged by too */
        rc = hd_store_delete_if_hdrs(st, mpi, p->bucket, name, m.etag, m.mtime_ms, m.hdrs);
    else
        rc = hd_store_delete_if(st, mpi, p->bucket, name, m.etag, m.mtime_ms);
    if (rc == 0) {
        hd_job_add(p->j, 1, m.size);
        hd_cstat_add(HD_CS_LC_EXPIRED, 1);
        HD_LOG(HD_DEBUG, NULL, "lifecycle: expired %s/%s", p->bucket, name);
    }
    hd_obj_meta_cleanup(&m);
    if (rc == HD_EPRECONDITION || rc == HD_ENOSUCHKEY || rc == 1)
        return 0; /* not due, or changed meanwhile: the next pass looks again */
    return rc < 0 ? rc : 1;
}

/* 0 (done, or stopped because the rules changed), -ECANCELED, or an error. */
static int expire_bucket(struct pass *p)
{
    struct hd_store *st = p->t->st;
    size_t mpi, i, n;
    int rc = 0;

    for (mpi = 0; mpi < hd_store_nmp(st) && rc == 0; mpi++) {
        char *after = strdup(""), **names = NULL;
        if (!after)
            return -ENOMEM;
        do {
            if (hd_job_stopped(p->j)) {
                rc = -ECANCELED;
                break;
            }
            if (!rules_unchanged(p)) {
                rc = HD_DECLINED;
                break;
            }
            if ((rc = hd_store_scan(st, mpi, p->bucket, after, SCAN_BATCH, &names, &n)) < 0)
                break;
            for (i = 0; i < n && rc >= 0; i++) {
                rc = expire_one(p, mpi, names[i]);
                p->expired += rc > 0;
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
        if (rc == HD_DECLINED) {
            HD_LOG(HD_INFO, NULL, "lifecycle: the rules of %s changed: its pass stops", p->bucket);
            return 0;
        }
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
        struct pass p = {.j = j, .t = t, .bucket = bs[i].name};
        int what, brc = 0;
        uint64_t a = 0;
        if (!bs[i].has_lifecycle || hd_store_bucket_props(t->st, bs[i].name, &p.text) < 0 ||
            !p.text || !(p.props = json_loads(p.text, 0, NULL))) {
            free(p.text);
            continue;
        }
        p.rules = json_object_get(p.props, "lifecycle");
        what = hd_lc_actions(p.rules, &p.need_tags);
        if (what & HD_LC_EXPIRES) {
            brc = expire_bucket(&p);
            expired += p.expired;
        }
        if (brc != -ECANCELED && (what & HD_LC_ABORTS) && rules_unchanged(&p)) {
            int arc;
            arc =
                hd_mpu_lifecycle_abort(t, bs[i].name, p.rules, hd_store_now_ms(), t->lc_day_ms, &a);
            brc = brc < 0 ? brc : arc; /* an expiry error does not keep uploads */
            aborted += a;
            hd_cstat_add(HD_CS_LC_ABORTED, a);
        }
        json_decref(p.props);
        free(p.text);
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
