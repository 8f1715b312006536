/* plans: the native API of epoch plans on a proxy (docs/caching.md, "Epoch plans").
 *   POST|PUT /v1/plans            register: checked here (bucket, shape), then sent to every
 *                                 target, which keeps its own objects' positions; answered
 *                                 with the dataset size and each target's share
 *   GET      /v1/plans[/ID]       merged views (sums, and per target with ID)
 *   DELETE   /v1/plans/ID         on every target
 *   POST     /v1/plans/ID/cursor  {"epoch": E, "position": P} on every target
 * Registration, deletion and cursors need an admin key; any valid key may look. HTTP worker
 * (bounded fan-outs, like the jobs API). */
#include "proxy/api/api.h"

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
#include "common/metrics.h"

#define PLAN_BODY_MAX (256u << 20)
#define PLAN_ADD_MS 600000 /* targets list the dataset's prefix upstream */

static const char *const sums[] = {"owned",  "read_in_epoch", "hits",
                                   "misses", "prefetched",    "prefetched_bytes",
                                   "wasted", "wasted_bytes",  "lead"};

/* Adds target t's view v into m (the merged view of one plan). */
static void merge(json_t *m, const char *t, json_t *v, int per_target)
{
    size_t i;
    json_t *x;

    if (!json_object_get(m, "id")) {
        const char *k;
        json_object_foreach(v, k, x)
        {
            if (strcmp(k, "cursor") != 0 && strcmp(k, "epoch") != 0 && strcmp(k, "idle_ms") != 0 &&
                strcmp(k, "window") != 0 && strcmp(k, "read_rate") != 0 &&
                strcmp(k, "fetch_s") != 0) /* per target only */
                json_object_set(m, k, x);
        }
        json_object_set_new(m, "epoch", json_integer(0));
        json_object_set_new(m, "cursor", json_integer(-1));
        json_object_set_new(m, "idle_ms", json_integer(-1));
        for (i = 0; i < sizeof(sums) / sizeof(sums[0]); i++)
            json_object_set_new(m, sums[i], json_integer(0));
    }
    for (i = 0; i < sizeof(sums) / sizeof(sums[0]); i++)
        json_object_set_new(m, sums[i],
                            json_integer(json_integer_value(json_object_get(m, sums[i])) +
                                         json_integer_value(json_object_get(v, sums[i]))));
    /* the reader is as far as the furthest target saw it; idle is the least idle target's */
    x = json_object_get(v, "epoch");
    if (json_integer_value(x) > json_integer_value(json_object_get(m, "epoch")) ||
        (json_integer_value(x) == json_integer_value(json_object_get(m, "epoch")) &&
         json_integer_value(json_object_get(v, "cursor")) >
             json_integer_value(json_object_get(m, "cursor")))) {
        json_object_set(m, "epoch", x);
        json_object_set(m, "cursor", json_object_get(v, "cursor"));
    }
    x = json_object_get(v, "idle_ms");
    if (json_integer_value(json_object_get(m, "idle_ms")) < 0 ||
        json_integer_value(x) < json_integer_value(json_object_get(m, "idle_ms")))
        json_object_set(m, "idle_ms", x);
    if (per_target) {
        json_t *ts = json_object_get(m, "targets");
        if (!ts)
            json_object_set_new(m, "targets", ts = json_object());
        json_object_set(ts, t, v);
    }
}

static void finish(json_t *m)
{
    json_int_t h = json_integer_value(json_object_get(m, "hits"));
    json_int_t n = h + json_integer_value(json_object_get(m, "misses"));

    json_object_set_new(m, "hit_ratio", json_real(n ? (double)h / (double)n : 0.0));
}

/* Fans METHOD path (body) out to every target; ok: the answers in f. */
static int fan(struct hd_req *r, struct hd_proxy *p, struct hd_smap *s, const char *method,
               const char *path, const char *body, long ms, struct hd_proxy_fan *f)
{
    size_t i;
    int rc;

    if ((rc = hd_proxy_fan_out(p, s, method, path, body, 1, ms, f)) < 0) {
        hd_resp_err(r, rc);
        return rc;
    }
    for (i = 0; i < f->n; i++)
        if (f->calls[i].rc < 0) {
            char m[400];
            snprintf(m, sizeof(m), "Target %s did not answer: %s", f->nodes[i]->id,
                     f->calls[i].err);
            hd_proxy_fan_cleanup(f);
            hd_resp_err_msg(r, HD_EUNAVAIL, m);
            return HD_EUNAVAIL;
        }
    return 0;
}

static void undo(struct hd_proxy *p, struct hd_smap *s, const char *id)
{
    struct hd_proxy_fan f;
    char path[128];

    snprintf(path, sizeof(path), "/v1/plans/%s", id);
    if (hd_proxy_fan_out(p, s, "DELETE", path, NULL, 1, HD_PROXY_FANOUT_MS, &f) == 0)
        hd_proxy_fan_cleanup(&f);
}

static void add_body(struct hd_req *r, void *ctx, json_t *in)
{
    struct hd_proxy *p = ctx;
    const char *bucket = json_string_value(json_object_get(in, "bucket"));
    const char *id = json_string_value(json_object_get(in, "id"));
    struct hd_smap *s = NULL;
    struct hd_proxy_fan f;
    json_t *spec = NULL, *targets = NULL;
    json_int_t total = -1, owned = 0;
    char gen[40], *text = NULL;
    size_t i, accepted = 0;
    int rc;

    if (!json_is_object(in)) {
        hd_resp_err_msg(r, HD_EBADARG,
                        "Expected {\"bucket\": B, \"prefix\": P | \"keys\": [...], \"epochs\": N, "
                        "\"seed\": S | \"order\": [[...], ...]}.");
        return;
    }
    if (!bucket || hd_proxy_bucket_known(p, bucket) < 0) {
        hd_resp_err_msg(r, HD_ENOSUCHBUCKET, "No such bucket.");
        return;
    }
    if ((rc = hd_proxy_tls_check(r, p, bucket)) < 0) {
        hd_resp_err(r, rc); /* the bucket's policy: TLS only */
        return;
    }
    if (!hd_proxy_bucket_cloud(p, bucket)) {
        hd_resp_err_msg(r, HD_EBADARG,
                        "Epoch plans are for S3-backed (provider aws) buckets: a native bucket is "
                        "all local already.");
        return;
    }
    if (!(spec = json_deep_copy(in)))
        goto oom;
    if (json_object_get(in, "id") && hd_id_check(id) < 0) {
        /* checked here too: the id goes into the URLs of the undo and of every later call */
        json_decref(spec);
        hd_resp_err_msg(r, HD_EBADARG,
                        "A plan id is a string of 1-48 characters of A-Z a-z 0-9 . _ -");
        return;
    }
    if (!id) {
        unsigned char rnd[8];
        char hex[17];
        if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
            memset(rnd, 0, sizeof(rnd));
        hd_hex(rnd, sizeof(rnd), hex);
        snprintf(gen, sizeof(gen), "plan-%s", hex);
        json_object_set_new(spec, "id", json_string(gen));
    }
    id = json_string_value(json_object_get(spec, "id"));
    if (!(text = json_dumps(spec, JSON_COMPACT)) || !(targets = json_object()))
        goto oom;
    if (!(s = hd_smap_state_smap(p->cs))) {
        hd_resp_err(r, HD_EUNAVAIL);
        goto out;
    }
    if (fan(r, p, s, "POST", "/v1/plans", text, PLAN_ADD_MS, &f) < 0)
        goto out;
    for (i = 0; i < f.n; i++)
        accepted += f.calls[i].status == 201;
    for (i = 0; i < f.n; i++) {
        json_t *j = hd_proxy_call_json(&f.calls[i]);
        if (f.calls[i].status != 201) { /* the first target's word on what is wrong */
            const char *m = json_string_value(json_object_get(j, "message"));
            rc = hd_proxy_err_from_json(f.calls[i].status, j);
            hd_resp_err_msg(r, rc, m);
            json_decref(j);
            hd_proxy_fan_cleanup(&f);
            /* a target that refused kept what it had (an earlier plan of this id stays
             * whole when every target refused); one that took it would leave half a plan */
            if (accepted)
                undo(p, s, id);
            goto out;
        }
        total = json_integer_value(json_object_get(j, "total"));
        owned += json_integer_value(json_object_get(j, "owned"));
        json_object_set(targets, f.nodes[i]->id, json_object_get(j, "owned"));
        json_decref(j);
    }
    hd_proxy_fan_cleanup(&f);
    if (owned != total) { /* the targets disagreed on who owns what (the map changed) */
        undo(p, s, id);
        hd_resp_err_msg(r, HD_EUNAVAIL,
                        "The targets' shares do not add up to the dataset (the cluster map "
                        "changed meanwhile?): try again.");
        goto out;
    }
    HD_LOG(HD_INFO, r->id, "plan %s registered: %s, %lld objects", id, bucket, (long long)total);
    hd_resp_json(r, 201,
                 json_pack("{s:s, s:s, s:I, s:O, s:O}", "id", id, "bucket", bucket, "total", total,
                           "epochs", json_object_get(spec, "epochs"), "targets", targets));
    goto out;
oom:
    hd_resp_err(r, -ENOMEM);
out:
    free(text);
    json_decref(spec);
    json_decref(targets);
    hd_smap_unref(s);
}

/* GET /v1/plans[/ID], DELETE /v1/plans/ID, POST /v1/plans/ID/cursor (body). */
static void query(struct hd_req *r, struct hd_proxy *p, const char *id, const char *body)
{
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    json_t *merged = json_object();
    struct hd_proxy_fan f;
    char path[160];
    size_t i, found = 0;

    if (!s || !merged) {
        hd_resp_err(r, s ? -ENOMEM : HD_EUNAVAIL);
        goto out;
    }
    snprintf(path, sizeof(path), "/v1/plans%s%s%s", id ? "/" : "", id ? id : "",
             body ? "/cursor" : "");
    if (fan(r, p, s, body ? "POST" : r->method, path, body, HD_PROXY_FANOUT_MS, &f) < 0)
        goto out;
    for (i = 0; i < f.n; i++) {
        json_t *j = hd_proxy_call_json(&f.calls[i]), *e;
        long st = f.calls[i].status;
        size_t k;
        if (st == 400 && body) {
            hd_resp_err_msg(r, HD_EBADARG, json_string_value(json_object_get(j, "message")));
            json_decref(j);
            hd_proxy_fan_cleanup(&f);
            goto out;
        }
        if (st >= 200 && st < 300)
            found++;
        if (id && !body && st == 200) {
            json_t *m = json_object_get(merged, id);
            if (!m)
                json_object_set_new(merged, id, m = json_object());
            merge(m, f.nodes[i]->id, j, 1);
        } else if (!id && st == 200) {
            json_array_foreach(json_object_get(j, "plans"), k, e)
            {
                const char *pid = json_string_value(json_object_get(e, "id"));
                json_t *m;
                if (!pid)
                    continue;
                if (!(m = json_object_get(merged, pid)))
                    json_object_set_new(merged, pid, m = json_object());
                merge(m, f.nodes[i]->id, e, 0);
            }
        }
        json_decref(j);
    }
    hd_proxy_fan_cleanup(&f);
    if (id && !found) {
        hd_resp_err_msg(r, HD_ENOTFOUND, "No such plan.");
    } else if (id && (body || strcmp(r->method, "DELETE") == 0)) {
        hd_resp_json(r, 200, json_pack("{s:s, s:b}", "id", id, body ? "moved" : "deleted", 1));
    } else if (id) {
        json_t *m = json_object_get(merged, id);
        finish(m);
        hd_resp_json(r, 200, json_incref(m));
    } else {
        json_t *a = json_array(), *v;
        const char *k;
        json_object_foreach(merged, k, v)
        {
            finish(v);
            json_array_append(a, v);
        }
        hd_resp_json(r, 200, json_pack("{s:o}", "plans", a));
    }
out:
    json_decref(merged);
    hd_smap_unref(s);
}

struct cur {
    struct hd_proxy *p;
    char id[64];
};

static void cursor_body(struct hd_req *r, void *ctx, json_t *in)
{
    struct cur *c = ctx;
    char *text = in ? json_dumps(in, JSON_COMPACT) : NULL;

    if (!text) {
        hd_resp_err_msg(r, HD_EBADARG, "Expected {\"epoch\": E, \"position\": P}.");
        return;
    }
    query(r, c->p, c->id, text);
    free(text);
}

void hd_proxy_plans_handle(struct hd_req *r, struct hd_proxy *p)
{
    const char *rest = r->raw_path + strlen("/v1/plans");
    const char *slash;
    char id[64];

    r->op = HD_OP_ADMIN;
    if (hd_proxy_auth_view_or_admin(r, p) < 0)
        return;
    if (*rest == '\0' || strcmp(rest, "/") == 0) {
        if (strcmp(r->method, "GET") == 0)
            query(r, p, NULL, NULL);
        else if (strcmp(r->method, "POST") == 0 || strcmp(r->method, "PUT") == 0)
            hd_req_read_json(r, PLAN_BODY_MAX, add_body, p, NULL);
        else
            hd_resp_err(r, HD_EMETHOD);
        return;
    }
    rest++;
    slash = strchr(rest, '/');
    if (!*rest || (slash ? (size_t)(slash - rest) : strlen(rest)) >= sizeof(id) ||
        (slash && strcmp(slash, "/cursor") != 0)) {
        hd_resp_err(r, HD_ENOTFOUND);
        return;
    }
    snprintf(id, sizeof(id), "%.*s", (int)(slash ? (size_t)(slash - rest) : strlen(rest)), rest);
    if (slash) {
        struct cur *c;
        if (strcmp(r->method, "POST") != 0) {
            hd_resp_err(r, HD_EMETHOD);
            return;
        }
        if (!(c = calloc(1, sizeof(*c)))) {
            hd_resp_err(r, -ENOMEM);
            return;
        }
        c->p = p;
        snprintf(c->id, sizeof(c->id), "%s", id);
        hd_req_read_json(r, 4096, cursor_body, c, free);
    } else if (strcmp(r->method, "GET") == 0 || strcmp(r->method, "DELETE") == 0) {
        query(r, p, id, NULL);
    } else {
        hd_resp_err(r, HD_EMETHOD);
    }
}
