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

#include "common/buf.h"
#include "common/errors.h"
#include "common/httpc.h"
#include "common/httputil.h"
#include "common/metrics.h"

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
