/* plansplit: epoch plans split again after the cluster map changed (docs/caching.md, "Who
 * keeps what"). A plan lives on the targets, each with the share of the dataset it owns by
 * HRW; when a target joins, leaves (decommission) or goes into maintenance, placement moves,
 * so the primary asks every target for its plans' specs and the reader's place, then sends
 * each plan to every target of the new map (POST /v1/plans/ID/split), which rebuilds its
 * share there and goes on from that place. Until every target took every plan it tries
 * again (after 2 s, doubling up to a minute); a plan a target refuses (4xx: its bucket is
 * gone) is not retried. The loop thread decides, a pool thread does the calls (a prefix plan
 * is listed upstream again: slow for large datasets). */
#include "proxy/cluster/cluster.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/log.h"

#define SPLIT_MS 600000             /* targets list the dataset's prefix upstream */
#define RETRY_NS 2000000000ull      /* the first retry; doubles */
#define RETRY_MAX_NS 60000000000ull /* up to a minute */

/* The plans held by any target of s: {id: {"spec", "epoch", "cursor"}} with the furthest
 * place any target saw the reader at. NULL: out of memory or no answer. */
static json_t *collect(struct hd_proxy *p, struct hd_smap *s)
{
    json_t *plans = json_object();
    struct hd_proxy_fan f;
    size_t i, k;
    int unasked = 0;

    if (!plans ||
        hd_proxy_fan_out(p, s, "GET", "/v1/plans?spec=true", NULL, 1, HD_PROXY_SYNC_MS, &f) < 0) {
        json_decref(plans);
        return NULL;
    }
    for (i = 0; i < f.n; i++) {
        json_t *j = hd_proxy_call_json(&f.calls[i]), *v;
        if (f.calls[i].rc < 0 || f.calls[i].status != 200) {
            unasked |= !f.nodes[i]->flags; /* an owner we cannot ask: ask again later */
            json_decref(j);
            continue;
        }
        json_array_foreach(json_object_get(j, "plans"), k, v)
        {
            const char *id = json_string_value(json_object_get(v, "id"));
            json_int_t e = json_integer_value(json_object_get(v, "epoch"));
            json_int_t c = json_integer_value(json_object_get(v, "cursor"));
            json_t *m;
            if (!id || !json_is_object(json_object_get(v, "spec")))
                continue;
            if (!(m = json_object_get(plans, id))) {
                json_object_set_new(plans, id,
                                    json_pack("{s:O, s:I, s:I}", "spec", json_object_get(v, "spec"),
                                              "epoch", e, "cursor", c));
                continue;
            }
            if (e > json_integer_value(json_object_get(m, "epoch")) ||
                (e == json_integer_value(json_object_get(m, "epoch")) &&
                 c > json_integer_value(json_object_get(m, "cursor")))) {
                json_object_set_new(m, "epoch", json_integer(e));
                json_object_set_new(m, "cursor", json_integer(c));
            }
        }
        json_decref(j);
    }
    hd_proxy_fan_cleanup(&f);
    if (unasked) {
        json_decref(plans);
        return NULL;
    }
    return plans;
}

/* Sends plan id to every target of s. 0 when each answered and the shares add up, 1 when a
 * target refused the plan for good (4xx: its bucket is gone, its dataset is empty now), an
 * error to try again (a target did not answer, or the shares disagree). */
static int split_one(struct hd_proxy *p, struct hd_smap *s, const char *id, json_t *m)
{
    struct hd_proxy_fan f;
    json_int_t total = -1, owned = 0;
    char path[128], *body;
    size_t i;
    int rc = 0;

    json_object_set_new(m, "smap_version", json_integer(s->version));
    if (!(body = json_dumps(m, JSON_COMPACT)))
        return -ENOMEM;
    snprintf(path, sizeof(path), "/v1/plans/%s/split", id);
    if ((rc = hd_proxy_fan_out(p, s, "POST", path, body, 1, SPLIT_MS, &f)) < 0) {
        free(body);
        return rc;
    }
    for (i = 0; i < f.n; i++) {
        json_t *j = hd_proxy_call_json(&f.calls[i]);
        if (f.calls[i].rc < 0 || f.calls[i].status != 200) {
            const char *msg = json_string_value(json_object_get(j, "message"));
            const char *why = f.calls[i].rc < 0 ? f.calls[i].err : msg ? msg : "?";
            if (f.calls[i].rc == 0 && f.calls[i].status >= 400 && f.calls[i].status < 500) {
                HD_LOG(HD_WARN, NULL, "plan %s: %s cannot split it again: %s", id, f.nodes[i]->id,
                       why);
                if (rc == 0)
                    rc = 1; /* not retried: the plan stays as it was where it was */
            } else if (!f.nodes[i]->flags) { /* an owner: try again */
                HD_LOG(HD_WARN, NULL, "plan %s: split on %s failed: %s", id, f.nodes[i]->id, why);
                rc = HD_EUNAVAIL;
            }
        } else {
            total = json_integer_value(json_object_get(j, "total"));
            owned += json_integer_value(json_object_get(j, "owned"));
        }
        json_decref(j);
    }
    hd_proxy_fan_cleanup(&f);
    free(body);
    if (rc == 1)
        return 1;
    if (rc == 0 && owned != total) {
        HD_LOG(HD_WARN, NULL, "plan %s: shares add up to %lld of %lld objects: again later", id,
               (long long)owned, (long long)total);
        rc = HD_EUNAVAIL;
    }
    return rc;
}

struct split_task {
    struct hd_task task; /* first: the pool hands it back */
    struct hd_proxy *p;
    int64_t want;
};

static void split_run(struct hd_task *task)
{
    struct split_task *t = (struct split_task *)task;
    struct hd_proxy *p = t->p;
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    json_t *plans = s ? collect(p, s) : NULL, *m;
    const char *id;
    size_t ok = 0;
    int rc = plans ? 0 : HD_EUNAVAIL;

    json_object_foreach(plans, id, m)
    {
        if (!s || hd_pool_stopping(p->pool)) {
            rc = HD_EUNAVAIL;
            break;
        }
        if (split_one(p, s, id, m) < 0)
            rc = HD_EUNAVAIL;
        else
            ok++;
    }
    if (rc == 0) {
        if (json_object_size(plans))
            HD_LOG(HD_INFO, NULL, "plans: %zu plan(s) split again for cluster map v%lld", ok,
                   (long long)s->version);
        atomic_store(&p->plans_done, t->want);
        p->plans_retry_ns = 0;
    } else {
        p->plans_retry_ns = p->plans_retry_ns ? p->plans_retry_ns * 2 : RETRY_NS;
        if (p->plans_retry_ns > RETRY_MAX_NS)
            p->plans_retry_ns = RETRY_MAX_NS;
        HD_LOG(HD_WARN, NULL, "plans: split for cluster map v%lld not complete: again in %llu s",
               s ? (long long)s->version : -1LL,
               (unsigned long long)(p->plans_retry_ns / 1000000000ull));
        atomic_store(&p->plans_next_ns, hd_now_ns() + p->plans_retry_ns);
    }
    json_decref(plans);
    hd_smap_unref(s);
    atomic_store(&p->plans_busy, 0);
    free(t);
}

void hd_proxy_plans_tick(struct hd_proxy *p)
{
    int64_t want = atomic_load(&p->plans_want);
    struct split_task *t;

    if (!p->primary || want <= atomic_load(&p->plans_done) || atomic_load(&p->plans_busy) ||
        hd_now_ns() < atomic_load(&p->plans_next_ns))
        return;
    if (!(t = calloc(1, sizeof(*t))))
        return;
    t->task.run = split_run;
    t->p = p;
    t->want = want;
    atomic_store(&p->plans_busy, 1);
    if (hd_pool_submit(p->pool, &t->task) < 0) {
        atomic_store(&p->plans_busy, 0);
        free(t);
    }
}
