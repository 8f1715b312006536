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
#include "proxy/core/core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/buf.h"
#include "common/cksum.h"
#include "common/errors.h"
#include "common/httpc.h"
#include "common/log.h"

#define BODY_MAX (4u << 20)

/* Kinds a client may start through the proxy; every target gets the request's args. */
struct pkind {
    const char *name;
    int all_targets; /* include targets in maintenance/decommission */
};

static const struct pkind pkinds[] = {
    {"rebalance", 1},
    {"prefetch", 0}, /* S3-backed buckets: target/cachejobs.c */
    {"evict", 0},
    {"shard", 0}, /* planned here first (proxy/shard.c) */
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

/* Posts job `id` to every target (flagged ones too when all). 0, or a negative code with
 * msg filled (the first refusal); *ok counts the targets that started it. */
static int post_job(struct hd_proxy *p, struct hd_smap *s, const char *id, const char *kind,
                    const char *bucket, json_t *args, int all, char *msg, size_t msglen, size_t *ok)
{
    json_t *body = json_pack("{s:s, s:s, s:s, s:o}", "id", id, "kind", kind, "bucket", bucket,
                             "args", args ? json_incref(args) : json_object());
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    struct hd_proxy_fan f;
    size_t i;
    int rc = 0;

    *ok = 0;
    json_decref(body);
    if (!text)
        return -ENOMEM;
    if ((rc = hd_proxy_fan_out(p, s, "POST", "/v1/jobs", text, all, HD_PROXY_FANOUT_MS, &f)) < 0) {
        free(text);
        return rc;
    }
    for (i = 0; i < f.n; i++) {
        const struct hd_httpc_call *c = &f.calls[i];
        if (c->rc == 0 && (c->status == 200 || c->status == 201)) {
            (*ok)++;
        } else if (rc == 0) {
            json_t *e = hd_proxy_call_json(c);
            rc = c->rc < 0 ? HD_EUNAVAIL : hd_proxy_err_from_json(c->status, e);
            snprintf(msg, msglen, "target %s: %s", f.nodes[i]->id,
                     c->rc < 0 ? c->err
                     : json_string_value(json_object_get(e, "message"))
                         ? json_string_value(json_object_get(e, "message"))
                         : "job refused");
            json_decref(e);
        }
    }
    if (rc == 0 && f.n == 0) {
        rc = HD_EUNAVAIL;
        snprintf(msg, msglen, "No live target to run the job.");
    }
    hd_proxy_fan_cleanup(&f);
    free(text);
    return rc;
}

/* Starts job `id` on every target (flagged ones too when all). 0, or a negative code with
 * msg filled after asking the targets that did start to stop again. */
static int start_everywhere(struct hd_proxy *p, struct hd_smap *s, const char *id, const char *kind,
                            const char *bucket, json_t *args, int all, char *msg, size_t msglen)
{
    struct hd_proxy_fan f;
    size_t ok;
    int rc = post_job(p, s, id, kind, bucket, args, all, msg, msglen, &ok);

    if (rc < 0 && ok) {
        char path[160];
        snprintf(path, sizeof(path), "/v1/jobs/%s", id);
        if (hd_proxy_fan_out(p, s, "DELETE", path, NULL, all, HD_PROXY_FANOUT_MS, &f) == 0)
            hd_proxy_fan_cleanup(&f);
    }
    return rc;
}

int hd_proxy_jobs_start_all(struct hd_proxy *p, struct hd_smap *s, const char *id, const char *kind,
                            const char *bucket, json_t *args, int all, char *msg, size_t msglen)
{
    return start_everywhere(p, s, id, kind, bucket, args, all, msg, msglen);
}

struct body {
    struct hd_proxy *p;
    struct hd_buf b;
};

static int body_chunk(struct hd_req *r, const char *d, size_t n)
{
    struct body *bc = r->data;

    if (bc->b.len + n > BODY_MAX)
        return HD_ETOOLARGE;
    hd_buf_append(&bc->b, d, n);
    return bc->b.oom ? -ENOMEM : 0;
}

static void body_done(struct hd_req *r)
{
    struct body *bc = r->data;

    if (bc) {
        hd_buf_cleanup(&bc->b);
        free(bc);
    }
    r->data = NULL;
}

static void start_end(struct hd_req *r)
{
    struct body *bc = r->data;
    struct hd_proxy *p = bc->p;
    json_t *in, *args;
    const char *kind, *bucket, *cid;
    const struct pkind *k;
    struct hd_smap *s = NULL;
    char id[64], msg[512] = "";
    int rc;

    if (r->body_err) {
        hd_resp_err(r, r->body_err);
        return;
    }
    in = json_loadb(bc->b.data ? bc->b.data : "", bc->b.len, 0, NULL);
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
    if (cid && (!*cid || strlen(cid) > 48 || strchr(cid, '/'))) {
        hd_resp_err_msg(r, HD_EBADARG, "A job id is 1-48 characters without '/'.");
        goto out;
    }
    if (cid) {
        snprintf(id, sizeof(id), "%s", cid);
    } else {
        char hex[17];
        random_hex(hex, 8);
        snprintf(id, sizeof(id), "%.20s-%s", kind, hex);
    }
    if (strcmp(kind, "shard") == 0) { /* plans, writes the manifest, then starts it */
        hd_proxy_shard_start(r, p, id, bucket ? bucket : "", args);
        goto out;
    }
    s = hd_smap_state_smap(p->cs);
    if (!s) {
        hd_resp_err(r, HD_EUNAVAIL);
        goto out;
    }
    rc = start_everywhere(p, s, id, kind, bucket ? bucket : "", args, k->all_targets, msg,
                          sizeof(msg));
    if (rc < 0)
        hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
    else
        hd_proxy_resp_json(r, 201, json_pack("{s:s, s:s}", "id", id, "kind", kind));
out:
    hd_smap_unref(s);
    json_decref(in);
}

/* GET /v1/jobs[/ID], DELETE /v1/jobs/ID: fan out and merge. */
static void query(struct hd_req *r, struct hd_proxy *p, const char *id)
{
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    char path[160];
    json_t *merged = json_object(), *out;
    struct hd_proxy_fan f;
    size_t i;
    int rc;

    if (!s || !merged) {
        hd_resp_err(r, s ? -ENOMEM : HD_EUNAVAIL);
        goto out;
    }
    snprintf(path, sizeof(path), "/v1/jobs%s%s", id ? "/" : "", id ? id : "");
    if ((rc = hd_proxy_fan_out(p, s, r->method, path, NULL, 1, HD_PROXY_FANOUT_MS, &f)) < 0) {
        hd_resp_err(r, rc);
        goto out;
    }
    for (i = 0; i < f.n; i++) {
        json_t *j = hd_proxy_call_json(&f.calls[i]), *e;
        size_t k;
        if (f.calls[i].rc < 0) {
            char m[400];
            snprintf(m, sizeof(m), "Target %s did not answer: %s", f.nodes[i]->id, f.calls[i].err);
            hd_proxy_fan_cleanup(&f);
            hd_resp_err_msg(r, HD_EUNAVAIL, m);
            json_decref(j);
            goto out;
        }
        if (id && f.calls[i].status == 200 && json_is_object(j)) {
            json_t *m = json_object_get(merged, id);
            if (!m) {
                m = json_object();
                json_object_set_new(merged, id, m);
            }
            merge_one(m, f.nodes[i]->id, j, 1);
        } else if (!id && f.calls[i].status == 200) {
            json_array_foreach(json_object_get(j, "jobs"), k, e)
            {
                const char *jid = json_string_value(json_object_get(e, "id"));
                json_t *m;
                if (!jid)
                    continue;
                m = json_object_get(merged, jid);
                if (!m) {
                    m = json_object();
                    json_object_set_new(merged, jid, m);
                }
                merge_one(m, f.nodes[i]->id, e, 0);
            }
        }
        json_decref(j);
    }
    hd_proxy_fan_cleanup(&f);
    if (id) {
        json_t *m = json_object_get(merged, id);
        if (!m) {
            hd_resp_err(r, HD_ENOSUCHJOB);
            goto out;
        }
        finish_view(m);
        hd_proxy_resp_json(r, 200, json_incref(m));
    } else {
        const char *k;
        json_t *v;
        out = json_array();
        json_object_foreach(merged, k, v)
        {
            finish_view(v);
            json_array_append(out, v);
        }
        hd_proxy_resp_json(r, 200, json_pack("{s:o}", "jobs", out));
    }
out:
    json_decref(merged);
    hd_smap_unref(s);
}

void hd_proxy_jobs_handle(struct hd_req *r, struct hd_proxy *p)
{
    const char *rest = r->raw_path + strlen("/v1/jobs");
    int rc;

    r->api = HD_API_NATIVE;
    if (strcmp(r->method, "GET") == 0) {
        struct hd_sigv4_auth a;
        rc = hd_proxy_auth(r, p, NULL, &a); /* any valid key may watch */
    } else {
        rc = hd_proxy_auth_admin(r, p);
    }
    if (rc < 0) {
        hd_resp_err(r, rc);
        return;
    }
    if (*rest == '\0' || strcmp(rest, "/") == 0) {
        if (strcmp(r->method, "GET") == 0) {
            query(r, p, NULL);
        } else if (strcmp(r->method, "POST") == 0) {
            struct body *bc = calloc(1, sizeof(*bc));
            if (!bc) {
                hd_resp_err(r, -ENOMEM);
                return;
            }
            bc->p = p;
            hd_buf_init(&bc->b);
            r->data = bc;
            r->on_body = body_chunk;
            r->on_end = start_end;
            r->on_done = body_done;
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

/* Primary: marks the smap with a new rebalance id, which the loop thread then starts (it
 * replaces one in progress or stopped: targets stop the running one first). id gets it. */
static int mark_now(struct hd_proxy *p, char *id, size_t idlen)
{
    struct hd_smap *cur, *s = NULL;
    int rc;

    pthread_mutex_lock(&p->mu);
    cur = hd_smap_state_smap(p->cs);
    rc = cur ? hd_smap_clone(cur, &s) : HD_EUNAVAIL;
    if (rc == 0) {
        s->version++;
        hd_proxy_rebalance_mark(p, s);
        rc = hd_proxy_smap_install(p, s);
    }
    if (rc == 0)
        snprintf(id, idlen, "%s", s->rebalance);
    pthread_mutex_unlock(&p->mu);
    hd_smap_unref(cur);
    hd_smap_unref(s);
    return rc;
}

void hd_proxy_rebalance_reply(struct hd_req *r, struct hd_proxy *p)
{
    char id[HD_NODE_ID_MAX];
    json_t *out = NULL;
    long status = 0;
    int rc;

    if (!p->primary) {
        rc = hd_proxy_primary_call(p, "POST", "/v1/cluster/rebalance", NULL, &status, &out);
        if (rc < 0)
            hd_resp_err_msg(r, HD_EUNAVAIL, "The primary proxy cannot be reached.");
        else if (!out)
            hd_resp_empty(r, (int)status);
        else
            hd_proxy_resp_json(r, (int)status, out);
        return;
    }
    if ((rc = mark_now(p, id, sizeof(id))) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    hd_proxy_resp_json(r, 202, json_pack("{s:s, s:s}", "status", "rebalance requested", "id", id));
}

void hd_proxy_rebalance_mark(struct hd_proxy *p, struct hd_smap *s)
{
    snprintf(s->rebalance, sizeof(s->rebalance), "rebalance-v%lld", (long long)s->version);
    atomic_store(&p->rb_pending, 1);
}

/* Sets the smap's rebalance mark to id, or clears it (id "") if it still is `expect` (a
 * membership change may have marked a newer rebalance meanwhile), and removes targets
 * listed in gone. Caller holds nothing; takes mu. 1 when the mark was not `expect`. */
static int mark(struct hd_proxy *p, const char *id, const char *expect, json_t *gone)
{
    struct hd_smap *cur, *s = NULL;
    size_t i;
    int rc;

    pthread_mutex_lock(&p->mu);
    cur = hd_smap_state_smap(p->cs);
    if (!cur) {
        rc = HD_EUNAVAIL;
        goto out;
    }
    if (expect && strcmp(cur->rebalance, expect) != 0) {
        rc = 1;
        goto out;
    }
    if ((rc = hd_smap_clone(cur, &s)) < 0)
        goto out;
    snprintf(s->rebalance, sizeof(s->rebalance), "%s", id);
    for (i = 0; i < json_array_size(gone); i++) {
        const char *nid = json_string_value(json_array_get(gone, i));
        if (nid && hd_smap_remove(s, nid) == 0)
            HD_LOG(HD_INFO, NULL,
                   "cluster: target %s decommissioned: rebalanced out and "
                   "removed from the cluster map",
                   nid);
    }
    s->version++;
    rc = hd_proxy_smap_install(p, s);
out:
    pthread_mutex_unlock(&p->mu);
    hd_smap_unref(cur);
    hd_smap_unref(s);
    return rc;
}

/* Records decommissioned ids (node.db meta "decommissioned": a JSON array). */
static void remember_gone(struct hd_proxy *p, json_t *gone)
{
    char *old = NULL, *text;
    json_t *arr = NULL;
    size_t i;

    if (!json_array_size(gone))
        return;
    if (hd_smap_state_meta_get(p->cs, "decommissioned", &old) == 0)
        arr = json_loads(old, 0, NULL);
    if (!json_is_array(arr)) {
        json_decref(arr);
        arr = json_array();
    }
    for (i = 0; i < json_array_size(gone); i++)
        json_array_append(arr, json_array_get(gone, i));
    text = json_dumps(arr, JSON_COMPACT);
    if (text)
        hd_smap_state_meta_set(p->cs, "decommissioned", text);
    free(text);
    free(old);
    json_decref(arr);
}

int hd_proxy_decommissioned(struct hd_proxy *p, const char *id)
{
    char *text = NULL;
    json_t *arr;
    size_t i;
    int found = 0;

    if (hd_smap_state_meta_get(p->cs, "decommissioned", &text) < 0)
        return 0;
    arr = json_loads(text, 0, NULL);
    for (i = 0; i < json_array_size(arr) && !found; i++)
        found = json_string_value(json_array_get(arr, i)) &&
                strcmp(json_string_value(json_array_get(arr, i)), id) == 0;
    json_decref(arr);
    free(text);
    return found;
}

static void rebalance_start(struct hd_proxy *p)
{
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    char id[64], msg[512] = "";
    size_t started;
    int rc;

    if (!s)
        return;
    if (s->rebalance[0] && strcmp(s->rebalance, p->rb_started) != 0) {
        snprintf(id, sizeof(id), "%s", s->rebalance); /* marked with the membership change */
        hd_smap_unref(s);
    } else {
        snprintf(id, sizeof(id), "rebalance-v%lld", (long long)s->version + 1);
        hd_smap_unref(s);
        if ((rc = mark(p, id, NULL, NULL)) < 0) {
            HD_LOG(HD_ERROR, NULL, "rebalance: cannot mark the cluster map: %s", hd_strerror(rc));
            return;
        }
    }
    snprintf(p->rb_started, sizeof(p->rb_started), "%s", id);
    hd_proxy_push_pending(p);
    s = hd_smap_state_smap(p->cs);
    HD_LOG(HD_INFO, NULL, "rebalance %s: starting on every target (smap v%lld)", id,
           (long long)s->version);
    rc = post_job(p, s, id, "rebalance", "", NULL, 1, msg, sizeof(msg), &started);
    if (rc < 0) /* the watch below starts it where it is missing */
        HD_LOG(HD_WARN, NULL, "rebalance %s: %s", id, msg);
    hd_smap_unref(s);
    p->rb_next_ns = 0;
}

/* Polls the targets; when all have finished, clears the mark and removes decommissioned
 * targets whose share finished without errors. */
static void rebalance_watch(struct hd_proxy *p)
{
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    json_t *gone = json_array();
    char path[160], msg[512];
    struct hd_proxy_fan f;
    size_t i, running = 0, stopped = 0, ok;

    if (!s || !s->rebalance[0])
        goto out;
    snprintf(path, sizeof(path), "/v1/jobs/%s", s->rebalance);
    if (hd_proxy_fan_out(p, s, "GET", path, NULL, 1, HD_PROXY_SYNC_MS, &f) < 0)
        goto out;
    for (i = 0; i < f.n; i++) {
        const struct hd_httpc_call *c = &f.calls[i];
        json_t *j = hd_proxy_call_json(c);
        const char *st = json_string_value(json_object_get(j, "state"));
        if (c->rc < 0) {
            running++; /* cannot tell: ask again later */
        } else if (c->status == 404 || (st && strcmp(st, "failed") == 0) ||
                   ((f.nodes[i]->flags & HD_NODE_DECOMM) && st && strcmp(st, "done") == 0 &&
                    json_integer_value(json_object_get(j, "error_count")) > 0)) {
            /* restarted without it, joined since, failed, or a leaver that still holds
             * objects: (re)start its share */
            struct hd_smap one = *s;
            one.nodes = (struct hd_node *)f.nodes[i];
            one.n = 1;
            if (c->status != 404)
                HD_LOG(HD_INFO, NULL, "rebalance %s: running again on %s (%s)", s->rebalance,
                       f.nodes[i]->id, st);
            post_job(p, &one, s->rebalance, "rebalance", "", NULL, 1, msg, sizeof(msg), &ok);
            running++;
        } else if (st && strcmp(st, "running") == 0) {
            running++;
        } else if (st && strcmp(st, "aborted") == 0) {
            stopped++; /* stopped on request: not restarted */
        } else if ((f.nodes[i]->flags & HD_NODE_DECOMM) && st && strcmp(st, "done") == 0) {
            json_array_append_new(gone, json_string(f.nodes[i]->id));
        }
        json_decref(j);
    }
    hd_proxy_fan_cleanup(&f);
    if (running == 0 && stopped) {
        /* the mark stays, so reads still find objects that have not moved (GFN); a new
         * rebalance (POST /v1/cluster/rebalance, or the next membership change) finishes */
        if (strcmp(p->rb_stopped, s->rebalance) != 0)
            HD_LOG(HD_WARN, NULL,
                   "rebalance %s: stopped on %zu target(s) before it finished; "
                   "objects that did not move are still found from their old "
                   "targets",
                   s->rebalance, stopped);
        snprintf(p->rb_stopped, sizeof(p->rb_stopped), "%s", s->rebalance);
    } else if (running == 0) {
        HD_LOG(HD_INFO, NULL, "rebalance %s: finished on every target", s->rebalance);
        remember_gone(p, gone);
        if (mark(p, "", s->rebalance, gone) == 0)
            hd_proxy_push_pending(p);
    }
out:
    json_decref(gone);
    hd_smap_unref(s);
}

void hd_proxy_rebalance_tick(struct hd_proxy *p)
{
    uint64_t now = hd_now_ns();

    if (!p->primary)
        return;
    if (atomic_exchange(&p->rb_pending, 0)) {
        rebalance_start(p);
        return;
    }
    if (now < p->rb_next_ns)
        return;
    p->rb_next_ns = now + 1000000000ull; /* once a second */
    rebalance_watch(p);
}
