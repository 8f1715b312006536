/* copy: the "copy" job (`hoard bucket cp SRC DST`): a proxy starts it on every target with
 * bucket SRC and args {"to": DST, "prefix"?: P} or {"to": DST, "names": [..] | "template": T}
 * (AIStore's copy-listrange; a brace template as prefetch takes it, at most 100000 names), and
 * "prepend"?: X (AIStore's: the copies are named X + name). Each
 * target walks the objects of SRC it holds, on each mountpath in name order, and writes each one
 * (whose name starts with P, or is one of the names) as DST/[X]name to DST's HRW owner: itself (a
 * local put), or another target with the node-signed PUT rebalance uses (rebalance.c), so the copy
 * keeps the source's identity (ETag, mtime, Content-Type, user metadata) and a copy already there
 * at least as new is left alone. Running it again copies nothing new twice. Resumable: a target
 * that restarts runs it again. The "delete" job (delete_run) walks the same way and deletes. */
#include "target/cluster/copy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "common/brace.h"
#include "common/errors.h"
#include "common/smap.h"
#include "target/cluster/peer.h"
#include "target/cluster/rebalance.h"

#define COPY_SCAN_BATCH 256
#define COPY_SET_MAX 100000 /* names a template may select (as objnames) */

static void copy_result(struct hd_job *j, const char *what, const char *a)
{
    char msg[256];

    snprintf(msg, sizeof(msg), "%s%s", what, a);
    pthread_mutex_lock(&j->mu);
    free(j->result);
    j->result = strdup(msg);
    pthread_mutex_unlock(&j->mu);
}

/* One object of SRC on mountpath mpi, written as dst/dname. 0, or a negative code with the
 * error recorded. */
static int copy_to(struct hd_job *j, struct hd_tcluster *cl, CURL *cu, size_t mpi, const char *dst,
                   const char *name, const char *dname, uint64_t *bytes)
{
    struct hd_store *st = hd_tcluster_store(cl);
    struct hd_obj_meta m;
    char url[HD_NODE_URL_MAX], msg[512];
    int fd, rc, elsewhere;

    if (hd_store_lookup_mp(st, mpi, j->bucket, name, &m) < 0)
        return 0; /* deleted meanwhile */
    fd = open(m.path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        hd_obj_meta_cleanup(&m);
        return 0; /* replaced meanwhile: the new copy is scanned later */
    }
    elsewhere = hd_peer_owner_elsewhere(cl, dst, dname, url, sizeof(url));
    if (elsewhere == 0) {
        rc = hd_rb_send_object(cu, cl, url, dst, dname, &m, fd, 0, msg, sizeof(msg));
    } else if (elsewhere == HD_EUNAVAIL) {
        snprintf(msg, sizeof(msg), "%s/%s: the owner of %s/%s (%s) is down", j->bucket, name, dst,
                 dname, url);
        rc = HD_EUNAVAIL;
    } else if ((rc = hd_rb_put_local(st, dst, dname, &m, fd, 0)) < 0) {
        snprintf(msg, sizeof(msg), "%s/%s -> %s/%s: %s", j->bucket, name, dst, dname,
                 hd_strerror(rc));
    }
    close(fd);
    if (rc < 0)
        hd_job_error(j, "%s", msg);
    else
        *bytes = m.size;
    hd_obj_meta_cleanup(&m);
    return rc;
}

/* One object of SRC on mountpath mpi, as dst/name or, with prepend, dst/prepend+name. 0, or a
 * negative code with the error recorded. */
static int copy_one(struct hd_job *j, struct hd_tcluster *cl, CURL *cu, size_t mpi, const char *dst,
                    const char *prepend, const char *name, uint64_t *bytes)
{
    char *dname = NULL;
    size_t pl, nl;
    int rc;

    *bytes = 0;
    if (!prepend || !*prepend)
        return copy_to(j, cl, cu, mpi, dst, name, name, bytes);
    pl = strlen(prepend);
    nl = strlen(name);
    if (!(dname = malloc(pl + nl + 1)))
        return -ENOMEM;
    memcpy(dname, prepend, pl);
    memcpy(dname + pl, name, nl + 1);
    if ((rc = hd_object_name_check(dname, pl + nl)) < 0)
        hd_job_error(j, "%s/%s: %s%s is not a valid object name", j->bucket, name, prepend, name);
    else
        rc = copy_to(j, cl, cu, mpi, dst, name, dname, bytes);
    free(dname);
    return rc;
}

/* The names args select ("names" or "template") as a JSON object used as a set: 0 with *set
 * (NULL when args select by prefix), or an error reported on j. */
static int copy_selection(struct hd_job *j, json_t **set)
{
    const json_t *names = json_object_get(j->args, "names");
    const char *tmpl = json_string_value(json_object_get(j->args, "template"));
    struct hd_brace *t = NULL;
    struct hd_buf b;
    char err[200];
    uint64_t i, n = 0;
    size_t k;
    int rc = 0;

    *set = NULL;
    if (!names && !tmpl)
        return 0;
    if ((names && !json_is_array(names)) || (names && tmpl)) {
        copy_result(j, "args.names must be a list (and no template with it)", "");
        return HD_EBADARG;
    }
    if (!(*set = json_object()))
        return -ENOMEM;
    for (k = 0; names && k < json_array_size(names) && rc == 0; k++)
        if (json_is_string(json_array_get(names, k)))
            rc = json_object_set_new(*set, json_string_value(json_array_get(names, k)),
                                     json_true()) < 0
                     ? -ENOMEM
                     : 0;
    if (tmpl) {
        if ((rc = hd_brace_parse(tmpl, &t, err, sizeof(err))) < 0) {
            copy_result(j, "args.template: ", err);
        } else if ((n = hd_brace_count(t)) > COPY_SET_MAX) {
            copy_result(j, "args.template selects more than 100000 names", "");
            rc = HD_EBADARG;
        }
        hd_buf_init(&b);
        for (i = 0; rc == 0 && i < n; i++) {
            hd_buf_reset(&b);
            if ((rc = hd_brace_at(t, i, &b)) == 0 && !b.oom)
                rc = json_object_setn_new(*set, b.data, b.len, json_true()) < 0 ? -ENOMEM : 0;
            else if (b.oom)
                rc = -ENOMEM;
        }
        hd_buf_cleanup(&b);
        hd_brace_free(t);
    }
    if (rc < 0) {
        json_decref(*set);
        *set = NULL;
    }
    return rc;
}

/* Calls fn(j, mpi, name, arg) for every object of j->bucket on every mountpath that the
 * selection takes (names starting with prefix when it is set, and in set when it is set),
 * until the job is stopped (-ECANCELED) or the catalog fails. */
static int each_selected(struct hd_job *j, struct hd_store *st, const char *prefix,
                         const json_t *set,
                         void (*fn)(struct hd_job *j, size_t mpi, const char *name, void *arg),
                         void *arg)
{
    size_t mpi, i, n, plen = prefix ? strlen(prefix) : 0;
    char **names = NULL, *after = NULL;
    int rc = 0;

    for (mpi = 0; mpi < hd_store_nmp(st) && rc == 0; mpi++) {
        free(after);
        after = strdup(prefix && plen ? prefix : "");
        if (after && plen) /* names sort after their prefix's predecessor: start just before */
            after[plen - 1]--;
        for (;;) {
            if (!after) {
                rc = -ENOMEM;
                break;
            }
            if (hd_job_stopped(j)) {
                rc = -ECANCELED;
                break;
            }
            if ((rc = hd_store_scan(st, mpi, j->bucket, after, COPY_SCAN_BATCH, &names, &n)) < 0)
                break;
            for (i = 0; i < n && !hd_job_stopped(j); i++)
                if ((!plen || strncmp(names[i], prefix, plen) == 0) &&
                    (!set || json_object_get(set, names[i])))
                    fn(j, mpi, names[i], arg);
            free(after);
            after = n ? strdup(names[n - 1]) : NULL;
            hd_store_names_free(names, n);
            names = NULL;
            if (n < COPY_SCAN_BATCH) /* this mountpath is done */
                break;
            if (plen && after && strncmp(after, prefix, plen) > 0)
                break; /* past the prefix */
        }
    }
    free(after);
    return rc;
}

struct copy_walk {
    struct hd_tcluster *cl;
    CURL *cu;
    const char *dst, *prepend;
    uint64_t copied;
};

static void copy_each(struct hd_job *j, size_t mpi, const char *name, void *arg)
{
    struct copy_walk *w = arg;
    uint64_t b;

    if (copy_one(j, w->cl, w->cu, mpi, w->dst, w->prepend, name, &b) == 0) {
        hd_job_add(j, 1, b);
        hd_job_set_extra(j, "copied", ++w->copied);
    }
}

static int copy_run(struct hd_job *j, void *ctx)
{
    struct hd_tcluster *cl = ctx;
    struct hd_store *st = hd_tcluster_store(cl);
    const char *dst = json_string_value(json_object_get(j->args, "to"));
    const char *prefix = json_string_value(json_object_get(j->args, "prefix"));
    uint64_t tobjs = 0, tbytes = 0, o, b;
    size_t mpi, plen = prefix ? strlen(prefix) : 0;
    struct copy_walk w = {
        .cl = cl, .dst = dst, .prepend = json_string_value(json_object_get(j->args, "prepend"))};
    struct hd_bucket_info bi;
    json_t *set = NULL;
    int rc = 0;

    if (!prefix && !json_is_null(json_object_get(j->args, "prefix")) &&
        json_object_get(j->args, "prefix")) {
        copy_result(j, "args.prefix must be a string", "");
        return HD_EBADARG;
    }
    if (!dst || !*dst || strcmp(dst, j->bucket) == 0) {
        copy_result(j, "args.to must name another bucket", "");
        return HD_EBADARG;
    }
    if (hd_store_bucket_exists(st, j->bucket) < 0 || hd_store_bucket_exists(st, dst) < 0) {
        copy_result(
            j, "no such bucket: ", hd_store_bucket_exists(st, j->bucket) < 0 ? j->bucket : dst);
        return HD_ENOSUCHBUCKET;
    }
    if (hd_store_bucket_get(st, dst, &bi) == 0 && strcmp(bi.provider, "aws") == 0) {
        /* a local put would not reach the upstream: as CopyObject, not supported yet */
        copy_result(j, "copying into an S3-backed bucket is not supported yet: ", dst);
        return HD_ENOTIMPL;
    }
    if ((rc = copy_selection(j, &set)) < 0)
        return rc;
    if (!plen && !set) { /* the totals are known up front: what this target holds of SRC */
        for (mpi = 0; mpi < hd_store_nmp(st); mpi++)
            if (hd_store_mp_bucket_usage(st, mpi, j->bucket, &o, &b) == 0) {
                tobjs += o;
                tbytes += b;
            }
        hd_job_set_total(j, tobjs, tbytes);
    }
    if (!(w.cu = curl_easy_init())) {
        json_decref(set);
        return -ENOMEM;
    }
    rc = each_selected(j, st, prefix, set, copy_each, &w);
    curl_easy_cleanup(w.cu);
    json_decref(set);
    return rc;
}

/* One object of a delete job's selection, on mountpath mpi (arg: the count deleted). */
static void delete_each(struct hd_job *j, size_t mpi, const char *name, void *arg)
{
    struct hd_store *st = hd_tcluster_store(j->ctx);
    uint64_t *deleted = arg, size;
    struct hd_obj_meta m;
    int rc;

    if (hd_store_lookup_mp(st, mpi, j->bucket, name, &m) < 0)
        return;
    size = m.size;
    rc = m.mtime_ms > j->started_ms
             ? HD_EPRECONDITION /* written after the job started: kept */
             : hd_store_delete_if(st, mpi, j->bucket, name, m.etag, m.mtime_ms);
    hd_obj_meta_cleanup(&m);
    if (rc == 0) {
        hd_job_add(j, 1, size);
        hd_job_set_extra(j, "deleted", ++*deleted);
    } else if (rc != HD_ENOSUCHKEY && rc != HD_EPRECONDITION) {
        hd_job_error(j, "%s: %s", name, hd_strerror(rc));
    }
}

/* The cluster map's (term, version); 1 when it marks a rebalance in progress. */
static int map_state(struct hd_tcluster *cl, int64_t *term, int64_t *version)
{
    struct hd_smap *s = hd_tcluster_smap(cl);
    int moving = s && s->rebalance[0];

    *term = s ? s->term : 0;
    *version = s ? s->version : 0;
    hd_smap_unref(s);
    return moving;
}

/* The "delete" job (AIStore's delete-listrange, native buckets): args {"names": [..] |
 * "template": T | "prefix": P}. Each target deletes every object of the selection it holds
 * (owner or not, so misplaced copies go too); names it does not hold are skipped. Only what
 * was written before the job started goes: each row is deleted only while it is the one read
 * (hd_store_delete_if), and a row newer than the job's start is kept, so a PUT racing the
 * job is never lost. When the map changed or a rebalance ran meanwhile, the pass is repeated
 * once the rebalance is over ("passes"), so a copy that moved here behind the pass goes too.
 * Not resumable for the same reason: a job resumed after a restart, maybe
 * hours later, would delete what clients wrote since. */
static int delete_run(struct hd_job *j, void *ctx)
{
    struct hd_store *st = hd_tcluster_store(ctx);
    const char *prefix = json_string_value(json_object_get(j->args, "prefix"));
    struct hd_bucket_info bi;
    uint64_t deleted = 0, passes = 1;
    int64_t t0, v0, t1, v1;
    int moving = map_state(ctx, &t0, &v0), rc;
    json_t *set = NULL;

    if (hd_store_bucket_get(st, j->bucket, &bi) < 0) {
        copy_result(j, "no such bucket: ", j->bucket);
        return HD_ENOSUCHBUCKET;
    }
    if (strcmp(bi.provider, "ais") != 0) {
        copy_result(j,
                    "deleting listed objects of an S3-backed bucket is not supported: ", j->bucket);
        return HD_ENOTIMPL;
    }
    if ((rc = copy_selection(j, &set)) < 0)
        return rc;
    if (!set && (!prefix || !*prefix)) { /* never the whole bucket by an empty prefix */
        copy_result(j, "args need names, a template or a prefix", "");
        return HD_EBADARG;
    }
    rc = each_selected(j, st, prefix, set, delete_each, &deleted);
    /* a copy moving while the pass ran may land here after the pass went by its name (moved
     * rows keep their mtime): once the cluster's rebalance is over, again, until a pass saw
     * the map unchanged */
    while (rc == 0 && (moving || map_state(ctx, &t1, &v1) || t1 != t0 || v1 != v0)) {
        if (map_state(ctx, &t0, &v0)) {
            if (hd_job_stopped(j)) {
                rc = -ECANCELED;
                break;
            }
            nanosleep(&(struct timespec){0, 200 * 1000 * 1000}, NULL);
            moving = 1;
            continue;
        }
        moving = 0;
        hd_job_set_extra(j, "passes", ++passes);
        rc = each_selected(j, st, prefix, set, delete_each, &deleted);
    }
    json_decref(set);
    return rc;
}

int hd_copy_register(struct hd_jobs *js, struct hd_tcluster *cl)
{
    int rc = hd_jobs_register(js, "copy", copy_run, cl, HD_JOB_RESUMABLE);

    return rc < 0 ? rc : hd_jobs_register(js, "delete", delete_run, cl, 0);
}
