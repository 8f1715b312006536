/* rebalance: the primary drives rebalance. When the set of targets changes it marks the smap
 * (rebalance_id) in the same version, starts the job on every live target, watches it from
 * the loop thread, and when every target has finished clears the mark and lets
 * decommissioned targets go. POST /v1/cluster/rebalance starts one on request. */
#include "proxy/cluster/cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/httpc.h"
#include "common/log.h"

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
            hd_resp_json(r, (int)status, out);
        return;
    }
    if ((rc = mark_now(p, id, sizeof(id))) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    hd_resp_json(r, 202, json_pack("{s:s, s:s}", "status", "rebalance requested", "id", id));
}

void hd_proxy_rebalance_mark(struct hd_proxy *p, struct hd_smap *s)
{
    snprintf(s->rebalance, sizeof(s->rebalance), "rebalance-v%lld", (long long)s->version);
    atomic_store(&p->rb_pending, 1);
    atomic_store(&p->plans_want, s->version); /* placement moves: plans follow */
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
    hd_proxy_push_pending(p, 0);
    s = hd_smap_state_smap(p->cs);
    HD_LOG(HD_INFO, NULL, "rebalance %s: starting on every target (smap v%lld)", id,
           (long long)s->version);
    rc = hd_proxy_post_job(p, s, id, "rebalance", "", NULL, 1, msg, sizeof(msg), &started);
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
            hd_proxy_post_job(p, &one, s->rebalance, "rebalance", "", NULL, 1, msg, sizeof(msg),
                              &ok);
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
            hd_proxy_push_pending(p, 0);
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
