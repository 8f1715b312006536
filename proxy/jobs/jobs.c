/* jobs: cluster-wide jobs on the proxy. A job runs under one id on every target (each does
 * its share: the objects it owns); the proxy starts it, merges the targets' states into one
 * view, and stops it. Any proxy serves these calls. The primary also drives rebalance:
 * when the set of targets changes it marks the smap (rebalance_id), starts the job on every
 * live target, watches it from the loop thread, and when every target has finished clears
 * the mark and lets decommissioned targets go.
 *
 *   POST   /v1/jobs            {"kind","bucket","args":{..},"id"?} -> 201 {"id",...}
 *   GET    /v1/jobs            {"jobs":[merged...]}
 *   GET    /v1/jobs/ID         merged, with "targets": {node: job}
 *   DELETE /v1/jobs/ID         stop on every target
 *   POST   /v1/cluster/rebalance   start a rebalance now (admin) -> 202 {"status","id"} */
#include "proxy/jobs/jobs.h"
#include "proxy/cluster/cluster.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/buf.h"
#include "common/cksum.h"
#include "common/errors.h"
#include "common/httpc.h"
#include "common/httputil.h"
#include "common/log.h"

#define BODY_MAX (4u << 20)

/* Kinds a client may start through the proxy; every target gets the request's args. */
struct pkind {
    const char *name;
    int all_targets; /* include targets in maintenance/decommission */
};

static const struct pkind pkinds[] = {
    {"rebalance", 1}, {"prefetch", 0}, /* S3-backed buckets: target/cachejobs.c */
    {"evict", 0},     {"shard", 0},    /* planned here first (proxy/shard.c) */
    {"copy", 0},                       /* bucket to bucket: target/cluster/copy.c */
    {"flush", 0},                      /* write-back buckets: target/cache/writeback.c */
};

static const struct pkind *pkind_find(const char *name)
{
    size_t i;

    for (i = 0; i < sizeof(pkinds) / sizeof(pkinds[0]); i++)
        if (strcmp(pkinds[i].name, name) == 0)
            return &pkinds[i];
    return NULL;
}

/* ---- merging ---- */

static int state_rank(const char *s)
{
    if (!s)
        return 0;
    if (strcmp(s, "running") == 0)
        return 4;
    if (strcmp(s, "failed") == 0)
        return 3;
    if (strcmp(s, "aborted") == 0)
        return 2;
    return 1; /* done */
}

static void add_u(json_t *o, const char *k, const json_t *v)
{
    json_int_t a = json_integer_value(json_object_get(o, k));

    json_object_set_new(o, k, json_integer(a + json_integer_value(v)));
}

/* Adds one target's job document to the merged view m (creating it from the first). */
static void merge_one(json_t *m, const char *node, json_t *job, int with_targets)
{
    static const char *const sums[] = {"objects",     "bytes",       "total_objects",
                                       "total_bytes", "error_count", NULL};
    const char *st = json_string_value(json_object_get(job, "state"));
    json_int_t started = json_integer_value(json_object_get(job, "started_ms"));
    json_int_t finished = json_integer_value(json_object_get(job, "finished_ms"));
    json_t *errs = json_object_get(job, "errors"), *e, *stats, *v;
    const char *k;
    size_t i;

    if (!json_object_get(m, "id")) {
        json_object_set(m, "id", json_object_get(job, "id"));
        json_object_set(m, "kind", json_object_get(job, "kind"));
        json_object_set(m, "bucket", json_object_get(job, "bucket"));
        json_object_set(m, "args", json_object_get(job, "args"));
        json_object_set_new(m, "state", json_string(st ? st : "done"));
        json_object_set_new(m, "started_ms", json_integer(started));
        json_object_set_new(m, "finished_ms", json_integer(finished));
        json_object_set_new(m, "errors", json_array());
        json_object_set_new(m, "stats", json_object());
        json_object_set_new(m, "nodes", json_integer(0));
    } else {
        if (state_rank(st) > state_rank(json_string_value(json_object_get(m, "state"))))
            json_object_set_new(m, "state", json_string(st));
        if (started && started < json_integer_value(json_object_get(m, "started_ms")))
            json_object_set_new(m, "started_ms", json_integer(started));
        if (finished > json_integer_value(json_object_get(m, "finished_ms")))
            json_object_set_new(m, "finished_ms", json_integer(finished));
    }
    for (i = 0; sums[i]; i++)
        add_u(m, sums[i], json_object_get(job, sums[i]));
    json_object_set_new(m, "nodes",
                        json_integer(json_integer_value(json_object_get(m, "nodes")) + 1));
    json_array_foreach(errs, i, e)
    {
        char line[600];
        if (json_array_size(json_object_get(m, "errors")) >= 100)
            break;
        snprintf(line, sizeof(line), "%s: %s", node, json_string_value(e));
        json_array_append_new(json_object_get(m, "errors"), json_string(line));
    }
    stats = json_object_get(m, "stats");
    json_object_foreach(json_object_get(job, "stats"), k, v) add_u(stats, k, v);
    if (with_targets) {
        json_t *t = json_object_get(m, "targets");
        if (!t) {
            t = json_object();
            json_object_set_new(m, "targets", t);
        }
        json_object_set(t, node, job);
    }
}

static void finish_view(json_t *m)
{
    if (strcmp(json_string_value(json_object_get(m, "state")), "running") == 0)
        json_object_set_new(m, "finished_ms", json_integer(0));
}

/* ---- handlers ---- */

static void random_hex(char *out, size_t nbytes)
{
    unsigned char r[16];

    if (nbytes > sizeof(r))
        nbytes = sizeof(r);
    if (getrandom(r, nbytes, 0) != (ssize_t)nbytes)
        memset(r, 0, sizeof(r));
    hd_hex(r, nbytes, out);
}

void hd_proxy_jobs_new_id(const char *kind, char *out, size_t outlen)
{
    char hex[17];

    random_hex(hex, 8);
    snprintf(out, outlen, "%.20s-%s", kind, hex);
}

/* A copy job's arguments, checked before any target starts it (a bad one would fail on
 * every target later): 1 when r was answered with the error. */
static int copy_args_bad(struct hd_req *r, struct hd_proxy *p, const char *bucket, json_t *args)
{
    const char *to = json_string_value(json_object_get(args, "to"));
    json_t *prefix = json_object_get(args, "prefix");

    if (!bucket || hd_proxy_bucket_known(p, bucket) < 0) {
        hd_resp_err_msg(r, HD_ENOSUCHBUCKET, "No such bucket.");
    } else if (!to || strcmp(to, bucket) == 0) {
        hd_resp_err_msg(r, HD_EBADARG, "args.to must name another bucket.");
    } else if (hd_proxy_bucket_known(p, to) < 0) {
        hd_resp_err_msg(r, HD_ENOSUCHBUCKET, "No such bucket: args.to.");
    } else if (hd_proxy_bucket_cloud(p, to)) {
        hd_resp_err_msg(r, HD_ENOTIMPL, "Copying into an S3-backed bucket is not supported yet.");
    } else if (prefix && !json_is_string(prefix) && !json_is_null(prefix)) {
        hd_resp_err_msg(r, HD_EBADARG, "args.prefix must be a string.");
    } else {
        return 0;
    }
    return 1;
}

static void start_end(struct hd_req *r, void *ctx, json_t *in)
{
    struct hd_proxy *p = ctx;
    json_t *args;
    const char *kind, *bucket, *cid;
    const struct pkind *k;
    struct hd_smap *s = NULL;
    char id[64], msg[512] = "";
    int rc;

    kind = json_string_value(json_object_get(in, "kind"));
    bucket = json_string_value(json_object_get(in, "bucket"));
    cid = json_string_value(json_object_get(in, "id"));
    args = json_object_get(in, "args");
    if (!json_is_object(in) || !kind || (args && !json_is_object(args))) {
        hd_resp_err_msg(r, HD_EBADARG,
                        "Expected {\"kind\": KIND, \"bucket\": B, \"args\": {...}}.");
        goto out;
    }
    if (!(k = pkind_find(kind))) {
        hd_resp_err_msg(r, HD_EBADARG, "Unknown job kind.");
        goto out;
    }
    if (strcmp(kind, "rebalance") == 0) { /* the primary's business, with the smap mark */
        hd_proxy_rebalance_reply(r, p);
        goto out;
    }
    if (json_object_get(in, "id") && hd_id_check(cid) < 0) {
        hd_resp_err_msg(r, HD_EBADARG,
                        "A job id is a string of 1-48 characters of A-Z a-z 0-9 . _ -");
        goto out;
    }
    if (cid) {
        snprintf(id, sizeof(id), "%s", cid);
    } else {
        hd_proxy_jobs_new_id(kind, id, sizeof(id));
    }
    if ((rc = hd_proxy_tls_check_job(r, p, bucket, args)) < 0) {
        hd_resp_err(r, rc); /* a bucket's policy: TLS only */
        goto out;
    }
    if (strcmp(kind, "copy") == 0 && copy_args_bad(r, p, bucket, args))
        goto out;
    if (strcmp(kind, "shard") == 0) { /* plans, writes the manifest, then starts it */
        hd_proxy_shard_start(r, p, id, bucket ? bucket : "", args);
        goto out;
    }
    s = hd_smap_state_smap(p->cs);
    if (!s) {
        hd_resp_err(r, HD_EUNAVAIL);
        goto out;
    }
    rc = hd_proxy_jobs_start_all(p, s, id, kind, bucket ? bucket : "", args, k->all_targets, msg,
                                 sizeof(msg));
    if (rc < 0)
        hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
    else
        hd_resp_json(r, 201, json_pack("{s:s, s:s}", "id", id, "kind", kind));
out:
    hd_smap_unref(s);
}

/* METHOD /v1/jobs[/ID] on every target, merged: *merged maps job ids to merged views (with
 * "targets" when id is given). 0, or a code with msg filled (a target that did not answer). */
static int merged_query(struct hd_proxy *p, const char *method, const char *id, json_t **merged,
                        char *msg, size_t msglen)
{
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    char path[160];
    struct hd_proxy_fan f;
    size_t i;
    int rc;

    *merged = NULL;
    msg[0] = '\0';
    if (!s) {
        snprintf(msg, msglen, "This proxy has not joined a cluster yet.");
        return HD_EUNAVAIL;
    }
    if (!(*merged = json_object())) {
        hd_smap_unref(s);
        return -ENOMEM;
    }
    snprintf(path, sizeof(path), "/v1/jobs%s%s", id ? "/" : "", id ? id : "");
    if ((rc = hd_proxy_fan_out(p, s, method, path, NULL, 1, HD_PROXY_FANOUT_MS, &f)) < 0)
        goto out;
    for (i = 0; i < f.n; i++) {
        json_t *j = hd_proxy_call_json(&f.calls[i]), *e;
        size_t k;
        if (f.calls[i].rc < 0) {
            snprintf(msg, msglen, "Target %s did not answer: %s", f.nodes[i]->id, f.calls[i].err);
            HD_LOG(HD_WARN, NULL, "jobs: %s %s: %s", method, path, msg);
            json_decref(j);
            rc = HD_EUNAVAIL;
            break;
        }
        if (id && f.calls[i].status == 200 && json_is_object(j)) {
            json_t *m = json_object_get(*merged, id);
            if (!m) {
                m = json_object();
                json_object_set_new(*merged, id, m);
            }
            merge_one(m, f.nodes[i]->id, j, 1);
        } else if (!id && f.calls[i].status == 200) {
            json_array_foreach(json_object_get(j, "jobs"), k, e)
            {
                const char *jid = json_string_value(json_object_get(e, "id"));
                json_t *m;
                if (!jid)
                    continue;
                m = json_object_get(*merged, jid);
                if (!m) {
                    m = json_object();
                    json_object_set_new(*merged, jid, m);
                }
                merge_one(m, f.nodes[i]->id, e, 0);
            }
        }
        json_decref(j);
    }
    hd_proxy_fan_cleanup(&f);
out:
    if (rc < 0) {
        json_decref(*merged);
        *merged = NULL;
    }
    hd_smap_unref(s);
    return rc;
}

int hd_proxy_jobs_view(struct hd_proxy *p, const char *id, json_t **out, char *msg, size_t msglen)
{
    json_t *merged, *m;
    int rc = merged_query(p, "GET", id, &merged, msg, msglen);

    *out = NULL;
    if (rc < 0)
        return rc;
    if (!(m = json_object_get(merged, id))) {
        json_decref(merged);
        return HD_ENOSUCHJOB;
    }
    finish_view(m);
    *out = json_incref(m);
    json_decref(merged);
    return 0;
}

int hd_proxy_jobs_list(struct hd_proxy *p, json_t **out, char *msg, size_t msglen)
{
    json_t *merged, *v;
    const char *k;
    int rc = merged_query(p, "GET", NULL, &merged, msg, msglen);

    *out = NULL;
    if (rc < 0)
        return rc;
    if (!(*out = json_array())) {
        json_decref(merged);
        return -ENOMEM;
    }
    json_object_foreach(merged, k, v)
    {
        finish_view(v);
        json_array_append(*out, v);
    }
    json_decref(merged);
    return 0;
}

/* GET /v1/jobs[/ID], DELETE /v1/jobs/ID: fan out and merge. */
static void query(struct hd_req *r, struct hd_proxy *p, const char *id)
{
    json_t *merged, *out;
    char msg[400];
    int rc;

    if ((rc = merged_query(p, r->method, id, &merged, msg, sizeof(msg))) < 0) {
        hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
        return;
    }
    if (id) {
        json_t *m = json_object_get(merged, id);
        if (!m) {
            hd_resp_err(r, HD_ENOSUCHJOB);
            goto out;
        }
        finish_view(m);
        hd_resp_json(r, 200, json_incref(m));
    } else {
        const char *k;
        json_t *v;
        out = json_array();
        json_object_foreach(merged, k, v)
        {
            finish_view(v);
            json_array_append(out, v);
        }
        hd_resp_json(r, 200, json_pack("{s:o}", "jobs", out));
    }
out:
    json_decref(merged);
}

void hd_proxy_jobs_handle(struct hd_req *r, struct hd_proxy *p)
{
    const char *rest = r->raw_path + strlen("/v1/jobs");

    if (hd_proxy_auth_view_or_admin(r, p) < 0)
        return;
    if (*rest == '\0' || strcmp(rest, "/") == 0) {
        if (strcmp(r->method, "GET") == 0) {
            query(r, p, NULL);
        } else if (strcmp(r->method, "POST") == 0) {
            hd_req_read_json(r, BODY_MAX, start_end, p, NULL);
        } else {
            hd_resp_err(r, HD_EMETHOD);
        }
        return;
    }
    if (rest[0] != '/' || !rest[1] || strchr(rest + 1, '/') || strlen(rest) > 64) {
        hd_resp_err(r, HD_ENOTFOUND);
        return;
    }
    if (strcmp(r->method, "GET") == 0 || strcmp(r->method, "DELETE") == 0)
        query(r, p, rest + 1);
    else
        hd_resp_err(r, HD_EMETHOD);
}

/* ---- rebalance, driven by the primary's loop thread ---- */
