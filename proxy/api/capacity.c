/* capacity: GET /v1/cluster/capacity on any proxy. Asks every live target (flagged ones too)
 * for GET /v1/daemon (target/daemon.c: mountpaths with statvfs numbers and object counts) and
 * answers them under the target's id; a target that is down or did not answer gets "error".
 * GET /v1/buckets/B?summary does the same with the targets' B?summary (objects and bytes of
 * one bucket per mountpath) and adds them up. Runs on an HTTP worker, blocked for at most
 * HD_PROXY_SYNC_MS. */
#include "proxy/api/api.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/httpc.h"
#include "common/httputil.h"
#include "common/metrics.h"
#include "common/version.h"

/* One target's entry: its /v1/daemon document, or {"error": ...}; plus url and state. */
static json_t *target_entry(const struct hd_node *n, const struct hd_httpc_call *c)
{
    json_t *j = c ? hd_proxy_call_json(c) : NULL;
    char msg[256];

    if (!c) {
        snprintf(msg, sizeof(msg), "down");
    } else if (c->rc < 0) {
        snprintf(msg, sizeof(msg), "did not answer: %s", c->err);
    } else if (c->status != 200 || !json_is_object(j)) {
        const char *m = json_string_value(json_object_get(j, "message"));
        snprintf(msg, sizeof(msg), "HTTP %ld%s%s", c->status, m ? ": " : "", m ? m : "");
    } else {
        msg[0] = '\0';
    }
    if (msg[0]) {
        json_decref(j);
        j = json_pack("{s:s}", "error", msg);
    }
    if (j)
        json_object_set_new(j, "url", json_string(n->url));
    return j;
}

void hd_proxy_capacity_handle(struct hd_req *r, struct hd_proxy *p)
{
    struct hd_smap *s = NULL;
    struct hd_sigv4_auth a;
    struct hd_proxy_fan f;
    json_t *out = NULL, *targets;
    size_t i, k;
    int rc;

    r->api = HD_API_NATIVE;
    r->op = HD_OP_ADMIN;
    if ((rc = hd_proxy_auth(r, p, NULL, &a)) < 0) { /* any valid key, as for GET /v1/jobs */
        hd_resp_err(r, rc);
        return;
    }
    if (strcmp(r->method, "GET") != 0) {
        hd_resp_err(r, HD_EMETHOD);
        return;
    }
    if (!(s = hd_smap_state_smap(p->cs))) {
        hd_resp_err_msg(r, HD_EUNAVAIL, "This proxy has not joined a cluster yet.");
        return;
    }
    if ((rc = hd_proxy_fan_out(p, s, "GET", "/v1/daemon", NULL, 1, HD_PROXY_SYNC_MS, &f)) < 0) {
        hd_resp_err(r, rc);
        goto out;
    }
    targets = json_object();
    out = json_pack("{s:I, s:o}", "smap_version", (json_int_t)s->version, "targets", targets);
    for (i = 0, k = 0; out && i < s->n; i++) {
        const struct hd_node *n = &s->nodes[i];
        const struct hd_httpc_call *c = NULL;
        if (n->type != HD_NODE_TARGET)
            continue;
        if (k < f.n && f.nodes[k] == n) /* the fan-out kept the smap's order */
            c = &f.calls[k++];
        if (json_object_set_new(targets, n->id, target_entry(n, c)) < 0) {
            json_decref(out);
            out = NULL;
        }
    }
    hd_proxy_fan_cleanup(&f);
    if (!out)
        hd_resp_err(r, -ENOMEM);
    else
        hd_resp_json(r, 200, out);
out:
    hd_smap_unref(s);
}

int hd_proxy_bucket_summary_json(struct hd_proxy *p, const char *bucket, json_t **res)
{
    const struct hd_bmd_bucket *e;
    struct hd_smap *s = NULL;
    struct hd_bmd *b = NULL;
    struct hd_proxy_fan f;
    struct hd_buf path;
    json_t *out = NULL, *targets;
    uint64_t objs = 0, bytes = 0;
    size_t i, k, errs = 0;
    int rc = 0;

    *res = NULL;
    hd_buf_init(&path);
    b = hd_smap_state_bmd(p->cs);
    if (!(e = hd_bmd_find(b, bucket))) {
        rc = HD_ENOSUCHBUCKET;
        goto out;
    }
    if (!(s = hd_smap_state_smap(p->cs))) {
        rc = HD_EUNAVAIL;
        goto out;
    }
    hd_buf_puts(&path, "/v1/buckets/");
    hd_uri_encode(&path, bucket, strlen(bucket), 0);
    hd_buf_puts(&path, "?summary");
    if (path.oom) {
        rc = -ENOMEM;
        goto out;
    }
    if ((rc = hd_proxy_fan_out(p, s, "GET", path.data, NULL, 1, HD_PROXY_SYNC_MS, &f)) < 0)
        goto out;
    targets = json_object();
    out =
        json_pack("{s:s, s:s, s:o}", "bucket", bucket, "provider", e->provider, "targets", targets);
    for (i = 0, k = 0; out && i < s->n; i++) {
        const struct hd_node *n = &s->nodes[i];
        const struct hd_httpc_call *c = NULL;
        json_t *t;
        if (n->type != HD_NODE_TARGET)
            continue;
        if (k < f.n && f.nodes[k] == n) /* the fan-out kept the smap's order */
            c = &f.calls[k++];
        t = target_entry(n, c);
        if (t && json_object_get(t, "error"))
            errs++;
        objs += (uint64_t)json_integer_value(json_object_get(t, "objects"));
        bytes += (uint64_t)json_integer_value(json_object_get(t, "bytes"));
        if (json_object_set_new(targets, n->id, t) < 0) {
            json_decref(out);
            out = NULL;
        }
    }
    hd_proxy_fan_cleanup(&f);
    if (out) { /* sums over the targets that answered; "errors" counts the others */
        json_object_set_new(out, "objects", json_integer((json_int_t)objs));
        json_object_set_new(out, "bytes", json_integer((json_int_t)bytes));
        json_object_set_new(out, "errors", json_integer((json_int_t)errs));
        *res = out;
    } else {
        rc = -ENOMEM;
    }
out:
    hd_buf_cleanup(&path);
    hd_bmd_unref(b);
    hd_smap_unref(s);
    return rc;
}

void hd_proxy_bucket_summary(struct hd_req *r, struct hd_proxy *p, const char *bucket)
{
    json_t *j;
    int rc = hd_proxy_bucket_summary_json(p, bucket, &j);

    if (rc == HD_EUNAVAIL)
        hd_resp_err_msg(r, rc, "This proxy has not joined a cluster yet.");
    else if (rc < 0)
        hd_resp_err(r, rc);
    else
        hd_resp_json(r, 200, j);
}

/* ---- AIStore's Cluster.get_performance(): GET /v1/reverse/daemon?what=node_status ---- */

/* AIStore's copyTracker entry: {"v": "N"} (a string, json:"v,string"). */
static void tracker_set(json_t *tr, const char *name, uint64_t v)
{
    char num[24];

    snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
    json_object_set_new(tr, name, json_pack("{s:s}", "v", num));
}

static uint64_t req_num(const json_t *reqs, const char *op, const char *field)
{
    json_int_t v = json_integer_value(json_object_get(json_object_get(reqs, op), field));

    return v > 0 ? (uint64_t)v : 0;
}

/* stats.Node's "tracker": hoard's counters of the target under AIStore's metric names. */
static json_t *tracker_json(const json_t *reqs)
{
    static const struct {
        const char *op, *aname;
    } ops[] = {
        {"get", "get"}, {"put", "put"}, {"delete", "del"}, {"list", "lst"}, {"head", "head"}};
    json_t *tr = json_object();
    json_int_t started = json_integer_value(json_object_get(reqs, "started"));
    time_t now = time(NULL);
    char name[32];
    size_t i;

    for (i = 0; tr && i < sizeof(ops) / sizeof(ops[0]); i++) {
        snprintf(name, sizeof(name), "%s.n", ops[i].aname);
        tracker_set(tr, name, req_num(reqs, ops[i].op, "n"));
        snprintf(name, sizeof(name), "err.%s.n", ops[i].aname);
        tracker_set(tr, name, req_num(reqs, ops[i].op, "errors"));
        snprintf(name, sizeof(name), "%s.ns.total", ops[i].aname);
        tracker_set(tr, name, req_num(reqs, ops[i].op, "latency_us") * 1000u);
    }
    if (tr) {
        json_int_t gb = json_integer_value(json_object_get(reqs, "get_bytes"));
        json_int_t pb = json_integer_value(json_object_get(reqs, "put_bytes"));
        tracker_set(tr, "get.size", gb > 0 ? (uint64_t)gb : 0);
        tracker_set(tr, "put.size", pb > 0 ? (uint64_t)pb : 0);
        tracker_set(tr, "up.ns.time",
                    started > 0 && now > started ? (uint64_t)(now - started) * 1000000000u : 0);
    }
    return tr;
}

static void u64_str(json_t *o, const char *key, uint64_t v)
{
    char num[24];

    snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
    json_object_set_new(o, key, json_string(num));
}

/* fs.Tcdf ("capacity") from the target's mountpaths: per mountpath {"capacity": {"used",
 * "avail" (strings), "pct_used"}, "disks": [], "mountpath_label": ""}, and the totals. */
static json_t *tcdf_json(const json_t *mps)
{
    json_t *out = json_object(), *byp = json_object();
    uint64_t tused = 0, tavail = 0;
    int pmax = 0, pmin = 100, n = 0;
    long psum = 0;
    size_t i;

    if (!out || !byp) {
        json_decref(out);
        json_decref(byp);
        return NULL;
    }
    for (i = 0; i < json_array_size(mps); i++) {
        const json_t *m = json_array_get(mps, i);
        const char *path = json_string_value(json_object_get(m, "path"));
        json_int_t used = json_integer_value(json_object_get(m, "used"));
        json_int_t avail = json_integer_value(json_object_get(m, "available"));
        json_t *cap, *cdf;
        int pct;
        if (!path || json_object_get(m, "error") || used < 0 || avail < 0)
            continue;
        pct = used + avail > 0 ? (int)((100 * (double)used) / (double)(used + avail)) : 0;
        cap = json_pack("{s:i}", "pct_used", pct);
        if (!cap)
            continue;
        u64_str(cap, "used", (uint64_t)used);
        u64_str(cap, "avail", (uint64_t)avail);
        cdf = json_pack("{s:o, s:[], s:s}", "capacity", cap, "disks", "mountpath_label", "");
        json_object_set_new(byp, path, cdf);
        tused += (uint64_t)used;
        tavail += (uint64_t)avail;
        pmax = pct > pmax ? pct : pmax;
        pmin = pct < pmin ? pct : pmin;
        psum += pct;
        n++;
    }
    json_object_set_new(out, "mountpaths", byp);
    json_object_set_new(out, "pct_max", json_integer(pmax));
    json_object_set_new(out, "pct_avg", json_integer(n ? psum / n : 0));
    json_object_set_new(out, "pct_min", json_integer(n ? pmin : 0));
    json_object_set_new(out, "cs_err", json_string(""));
    u64_str(out, "total_used", tused);
    u64_str(out, "total_avail", tavail);
    return out;
}

void hd_proxy_ais_node_status(struct hd_req *r, struct hd_proxy *p)
{
    const char *what = hd_req_param(r, "what"), *id = hd_req_header(r, "ais-node-id");
    struct hd_smap *s = NULL;
    const struct hd_node *n;
    struct hd_sigv4_auth a;
    struct hd_httpc_call c;
    char url[HD_NODE_URL_MAX + 16], sv[24];
    json_t *doc = NULL, *out;
    int rc;

    r->api = HD_API_NATIVE;
    r->op = HD_OP_ADMIN;
    if ((rc = hd_proxy_auth(r, p, NULL, &a)) < 0) { /* any valid key, as for capacity */
        hd_resp_err(r, rc);
        return;
    }
    if (strcmp(r->method, "GET") != 0) {
        hd_resp_err(r, HD_EMETHOD);
        return;
    }
    if (strcmp(r->raw_path, "/v1/reverse/daemon") != 0 || !what ||
        strcmp(what, "node_status") != 0) {
        hd_resp_err_msg(r, HD_ENOTIMPL,
                        "/v1/reverse: hoard serves GET /v1/reverse/daemon?what=node_status of "
                        "a target (ais-node-id) only (docs/aistore-compat.md).");
        return;
    }
    if (!id || !*id) {
        hd_resp_err_msg(r, HD_EBADARG, "node_status: the ais-node-id header names the node.");
        return;
    }
    if (!(s = hd_smap_state_smap(p->cs))) {
        hd_resp_err_msg(r, HD_EUNAVAIL, "This proxy has not joined a cluster yet.");
        return;
    }
    if (!(n = hd_smap_find(s, id))) {
        hd_resp_err_msg(r, HD_ENOTFOUND, "node_status: no node with that id in the cluster map.");
        goto out;
    }
    if (n->type != HD_NODE_TARGET) {
        hd_resp_err_msg(r, HD_ENOTIMPL,
                        "node_status: served for targets only (Cluster.get_performance() asks "
                        "targets); proxies: GET /v1/health, /metrics.");
        goto out;
    }
    if (n->down) {
        hd_resp_err_msg(r, HD_EUNAVAIL, "node_status: that target is down.");
        goto out;
    }
    snprintf(url, sizeof(url), "%s/v1/daemon", n->url);
    hd_httpc_call_init(&c, "GET", url);
    c.na = p->na;
    snprintf(c.to, sizeof(c.to), "%s", n->id);
    c.total_ms = HD_PROXY_SYNC_MS;
    c.signed_resp = (n->caps & HD_NODE_CAP_SIGNED_ADMIN) != 0;
    hd_httpc_run_all(&c, 1, 0);
    doc = target_entry(n, &c);
    hd_httpc_call_cleanup(&c);
    if (!doc || json_object_get(doc, "error")) {
        const char *m = json_string_value(json_object_get(doc, "error"));
        hd_resp_err_msg(r, doc ? HD_EUNAVAIL : -ENOMEM, m);
        goto out;
    }
    snprintf(sv, sizeof(sv), "%lld", (long long)s->version);
    out = json_pack("{s:o, s:o*, s:o*, s:s, s:s, s:s, s:s, s:s, s:s}", "snode",
                    hd_smap_node_to_json(n), "tracker",
                    tracker_json(json_object_get(doc, "requests")), "capacity",
                    tcdf_json(json_object_get(doc, "mountpaths")), "status",
                    n->flags ? "maintenance" : "online", "deployment", "hoard", "ais_version",
                    "hoard " HD_VERSION, "build_time", "", "k8s_pod_name", "", "smap_version", sv);
    if (!out)
        hd_resp_err(r, -ENOMEM);
    else
        hd_resp_json(r, 200, out);
out:
    json_decref(doc);
    hd_smap_unref(s);
}
