/* plans: /v1/plans on a target (the proxy fans the native API out to every target; see
 * target/cache/plan.c and docs/caching.md):
 *   POST   /v1/plans              register a plan (the dataset is resolved on a pool thread)
 *   GET    /v1/plans[/ID]         this target's view
 *   DELETE /v1/plans/ID
 *   POST   /v1/plans/ID/cursor    {"epoch": E, "position": P}
 *   POST   /v1/plans/ID/split     {"spec": S, "epoch": E, "cursor": P, "smap_version": V}:
 *                                 the proxy splits the plan again after the cluster map
 *                                 changed (a pool thread rebuilds this target's share)
 *   GET    /v1/plans?spec=true    also each plan's spec (what the proxy splits again)
 * Proxy-signed (admin) requests only. HTTP worker. */
#include "target/api/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/errors.h"

#define PLAN_BODY_MAX (256u << 20) /* explicit orders of large datasets */

struct padd {
    struct hd_cache *c;
    json_t *spec, *out;
    int split; /* POST /v1/plans/ID/split: spec is the whole body */
};

static void padd_free(void *arg)
{
    struct padd *a = arg;

    json_decref(a->spec);
    json_decref(a->out);
    free(a);
}

static void add_run(struct hd_acall *a)
{
    struct padd *pa = a->arg;

    json_t *b = pa->spec;

    if (pa->split)
        a->rc = hd_plans_split(pa->c, json_object_get(b, "spec"),
                               (uint32_t)json_integer_value(json_object_get(b, "epoch")),
                               json_integer_value(json_object_get(b, "cursor")),
                               json_integer_value(json_object_get(b, "smap_version")), &pa->out,
                               a->msg, sizeof(a->msg));
    else
        a->rc = hd_plans_add(pa->c, b, &pa->out, a->msg, sizeof(a->msg));
}

static void add_done(struct hd_req *r, struct hd_acall *a)
{
    struct padd *pa = a->arg;

    if (a->rc < 0)
        hd_resp_err_msg(r, a->rc, a->msg[0] ? a->msg : NULL);
    else
        hd_resp_json(r, pa->split ? 200 : 201, json_incref(pa->out));
}

static void add_any(struct hd_req *r, struct hd_target *t, json_t *j, int split)
{
    struct padd *pa;
    const json_t *spec = split ? json_object_get(j, "spec") : j;
    int rc;

    /* a client's plan of a TLS-only bucket needs TLS (a proxy's split was checked there) */
    if ((rc = hd_target_jobs_admit(t, r, json_string_value(json_object_get(spec, "bucket")),
                                   NULL)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    if (split) {
        json_t *e = json_object_get(j, "epoch"), *p = json_object_get(j, "cursor");
        json_t *v = json_object_get(j, "smap_version");
        if (!json_is_object(json_object_get(j, "spec")) || !json_is_integer(e) ||
            !json_is_integer(p) || !json_is_integer(v) || json_integer_value(e) < 0 ||
            json_integer_value(e) > UINT32_MAX) {
            hd_resp_err_msg(r, HD_EBADARG,
                            "Expected {\"spec\": S, \"epoch\": E, \"cursor\": P, "
                            "\"smap_version\": V}.");
            return;
        }
    }
    if (!(pa = calloc(1, sizeof(*pa)))) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    pa->c = t->cache;
    pa->split = split;
    pa->spec = json_incref(j);
    hd_acall_request(r, t->pool, add_run, add_done, pa, padd_free);
    if (!r->responded && r->on_end) /* we are in the body reader's on_end: park now */
        r->on_end(r);
}

static void add_body(struct hd_req *r, void *ctx, json_t *j)
{
    add_any(r, ctx, j, 0);
}

static void split_body(struct hd_req *r, void *ctx, json_t *j)
{
    add_any(r, ctx, j, 1);
}

static void cursor_body(struct hd_req *r, void *ctx, json_t *j)
{
    struct hd_target *t = ctx;
    const char *id = r->raw_path + strlen("/v1/plans/");
    char pid[64];
    json_t *e = json_object_get(j, "epoch"), *p = json_object_get(j, "position");
    int rc;

    snprintf(pid, sizeof(pid), "%.*s", (int)(strchr(id, '/') - id), id);
    if (!json_is_integer(e) || !json_is_integer(p) || json_integer_value(e) < 0 ||
        json_integer_value(e) > UINT32_MAX) {
        hd_resp_err_msg(r, HD_EBADARG,
                        "Expected {\"epoch\": E, \"position\": P} (P: the last position read, "
                        "-1 for none).");
        return;
    }
    rc = hd_plans_cursor(t->cache, pid, (uint32_t)json_integer_value(e), json_integer_value(p));
    if (rc == HD_EBADARG)
        hd_resp_err_msg(r, rc, "The epoch or position is outside the plan.");
    else if (rc < 0)
        hd_resp_err_msg(r, HD_ENOTFOUND, "No such plan.");
    else
        hd_resp_json(r, 200, json_pack("{s:s}", "id", pid));
}

void hd_target_plans(struct hd_req *r, struct hd_target *t)
{
    const char *rest = r->raw_path + strlen("/v1/plans");
    const char *slash;
    int rc = hd_target_auth_admin(r, t);
    json_t *v;

    r->api = HD_API_NATIVE;
    if (rc < 0) {
        hd_resp_err(r, rc);
        return;
    }
    if (*rest == '\0' || strcmp(rest, "/") == 0) {
        if (strcmp(r->method, "GET") == 0) {
            const char *sp = hd_req_param(r, "spec");
            hd_resp_json(r, 200, hd_plans_view(t->cache, NULL, sp && strcmp(sp, "true") == 0));
        } else if (strcmp(r->method, "POST") == 0 || strcmp(r->method, "PUT") == 0)
            hd_req_read_json(r, PLAN_BODY_MAX, add_body, t, NULL);
        else
            hd_resp_err(r, HD_EMETHOD);
        return;
    }
    rest++;
    slash = strchr(rest, '/');
    if (!*rest || strlen(rest) > 60) {
        hd_resp_err(r, HD_ENOTFOUND);
        return;
    }
    if (slash) {
        if (strcmp(slash, "/cursor") != 0 && strcmp(slash, "/split") != 0)
            hd_resp_err(r, HD_ENOTFOUND);
        else if (strcmp(r->method, "POST") != 0)
            hd_resp_err(r, HD_EMETHOD);
        else if (strcmp(slash, "/split") == 0)
            hd_req_read_json(r, PLAN_BODY_MAX, split_body, t, NULL);
        else
            hd_req_read_json(r, 4096, cursor_body, t, NULL);
        return;
    }
    if (strcmp(r->method, "GET") == 0) {
        if ((v = hd_plans_view(t->cache, rest, 0)) != NULL)
            hd_resp_json(r, 200, v);
        else
            hd_resp_err_msg(r, HD_ENOTFOUND, "No such plan.");
    } else if (strcmp(r->method, "DELETE") == 0) {
        if (hd_plans_delete(t->cache, rest) < 0)
            hd_resp_err_msg(r, HD_ENOTFOUND, "No such plan.");
        else
            hd_resp_empty(r, 204);
    } else {
        hd_resp_err(r, HD_EMETHOD);
    }
}
