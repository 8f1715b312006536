/* metasync: the primary installs (persists) each new smap and BMD version and pushes it to
 * every node. The primary's loop thread and HTTP workers (bounded calls). */
#include "proxy/cluster/cluster.h"

#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/httpc.h"
#include "common/log.h"
#include "common/nodeauth.h"

/* The voters that must hold a change before it counts: a majority of the old map's voters
 * and of the new map's (one proxy joins or leaves at a time, so the two majorities always
 * overlap with any majority that could elect another primary). */
struct commit_set {
    const struct hd_node *old_v[64], *new_v[64];
    size_t nold, nnew;
};

static int in_set(const struct hd_node *const *v, size_t n, const char *id)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (strcmp(v[i]->id, id) == 0)
            return 1;
    return 0;
}

/* Sends {smap, bmd} to every voter of cur and next but us, in parallel; 0 once majorities of
 * both hold it, HD_EUNAVAIL otherwise (or a newer term was seen: stepped down). */
static int commit_to_voters(struct hd_proxy *p, struct hd_smap *cur, struct hd_smap *next,
                            struct hd_bmd *b)
{
    struct commit_set cs;
    const struct hd_node *to[128];
    struct hd_httpc_call calls[128];
    char urls[128][HD_NODE_URL_MAX + 16];
    json_t *j = json_object();
    char *body = NULL;
    size_t i, n = 0, ack_old = 0, ack_new = 0;
    long ms = p->hb_ms * 2 > 1000 ? p->hb_ms * 2 : 1000;
    int64_t seen_term = 0;

    cs.nold = hd_proxy_voters(cur, cs.old_v, 64);
    cs.nnew = hd_proxy_voters(next, cs.new_v, 64);
    /* we hold it once we persist it: count ourselves where we vote */
    ack_old = in_set(cs.old_v, cs.nold, p->self.id);
    ack_new = in_set(cs.new_v, cs.nnew, p->self.id);
    if ((!cs.nold || ack_old >= cs.nold / 2 + 1) && ack_new >= cs.nnew / 2 + 1) {
        json_decref(j);
        return 0; /* we are the only voter: nothing to wait for */
    }
    for (i = 0; i < cs.nold + cs.nnew && n < 128; i++) {
        const struct hd_node *nd = i < cs.nold ? cs.old_v[i] : cs.new_v[i - cs.nold];
        size_t k;
        if (strcmp(nd->id, p->self.id) == 0)
            continue;
        for (k = 0; k < n && strcmp(to[k]->id, nd->id) != 0; k++)
            ;
        if (k == n)
            to[n++] = nd;
    }
    if (!j)
        return -ENOMEM;
    json_object_set_new(j, "smap", hd_smap_to_json(next));
    json_object_set_new(j, "bmd", hd_bmd_to_json(b));
    body = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (!body)
        return -ENOMEM;
    for (i = 0; i < n; i++) {
        snprintf(urls[i], sizeof(urls[i]), "%s/v1/metasync", to[i]->url);
        hd_httpc_call_init(&calls[i], "PUT", urls[i]);
        calls[i].na = p->na;
        snprintf(calls[i].to, sizeof(calls[i].to), "%s", to[i]->id);
        calls[i].signed_resp = 1;
        calls[i].fresh = 1; /* see struct hd_httpc_call */
        calls[i].body = body;
        calls[i].blen = strlen(body);
        calls[i].ctype = "application/json";
        calls[i].connect_ms = ms;
        calls[i].total_ms = ms;
    }
    hd_httpc_run_all(calls, n, 0);
    for (i = 0; i < n; i++) {
        if (calls[i].rc == 0 && calls[i].status == 200) {
            ack_old += in_set(cs.old_v, cs.nold, to[i]->id);
            ack_new += in_set(cs.new_v, cs.nnew, to[i]->id);
        } else if (calls[i].rc == 0 && calls[i].status == 409) {
            json_t *e = json_loadb(calls[i].resp.data, calls[i].resp.len, 0, NULL);
            int64_t t = (int64_t)json_integer_value(json_object_get(e, "smap_term"));
            if (t > seen_term)
                seen_term = t;
            json_decref(e);
        } else {
            HD_LOG(HD_DEBUG, NULL, "cluster: commit to %s: %s", to[i]->id,
                   calls[i].rc < 0 ? calls[i].err : "refused");
        }
        hd_httpc_call_cleanup(&calls[i]);
    }
    free(body);
    if (seen_term > atomic_load(&p->term)) {
        hd_proxy_term_adopt(p, seen_term, "a proxy holds a map of a newer term");
        return HD_EUNAVAIL;
    }
    if ((cs.nold && ack_old < cs.nold / 2 + 1) || ack_new < cs.nnew / 2 + 1) {
        HD_LOG(HD_WARN, NULL,
               "cluster: smap v%lld / BMD v%lld not committed: %zu of %zu voters (%zu of %zu of "
               "the new map) hold it",
               (long long)next->version, (long long)b->version, ack_old, cs.nold, ack_new, cs.nnew);
        return HD_EUNAVAIL;
    }
    return 0;
}

int hd_proxy_commit(struct hd_proxy *p, struct hd_smap *s, struct hd_bmd *b)
{
    struct hd_smap *cur = hd_smap_state_smap(p->cs);
    struct hd_bmd *curb = hd_smap_state_bmd(p->cs);
    struct hd_smap *next = s ? s : cur;
    struct hd_bmd *nb = b ? b : curb;
    int64_t term = atomic_load(&p->term);
    int rc;

    if (!hd_proxy_has_lease(p)) { /* not primary, or no majority answers it: it could not
                                   * commit anyway */
        rc = HD_EUNAVAIL;
        goto out;
    }
    if (s)
        s->term = term;
    if (b)
        b->term = term;
    if (!next) {
        rc = HD_EUNAVAIL;
        goto out;
    }
    if ((rc = commit_to_voters(p, cur ? cur : next, next, nb)) < 0)
        goto out;
    if (s && (rc = hd_smap_state_set_smap(p->cs, s, 1)) < 0)
        HD_LOG(HD_ERROR, NULL, "cluster: cannot persist smap v%lld: %s", (long long)s->version,
               hd_strerror(rc));
    if (rc == 0 && b && (rc = hd_smap_state_set_bmd(p->cs, b, 1, NULL)) < 0)
        HD_LOG(HD_ERROR, NULL, "cluster: cannot persist BMD v%lld: %s", (long long)b->version,
               hd_strerror(rc));
out:
    hd_smap_unref(cur);
    hd_bmd_unref(curb);
    return rc;
}

int hd_proxy_smap_install(struct hd_proxy *p, struct hd_smap *s)
{
    return hd_proxy_commit(p, s, NULL);
}

int hd_proxy_bmd_install(struct hd_proxy *p, struct hd_bmd *b)
{
    return hd_proxy_commit(p, NULL, b);
}

/* Sends s and b to every live node but us (only the targets: targets_only), in parallel;
 * returns the number of failures. */
static size_t metasync_all(struct hd_proxy *p, struct hd_smap *s, struct hd_bmd *b,
                           int targets_only)
{
    json_t *j = json_object();
    struct hd_httpc_call *calls = NULL;
    char(*urls)[HD_NODE_URL_MAX + 16] = NULL;
    char *body = NULL;
    size_t i, n = 0, failed = 0;

    if (!j)
        return 1;
    json_object_set_new(j, "smap", hd_smap_to_json(s));
    json_object_set_new(j, "bmd", hd_bmd_to_json(b));
    body = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    calls = calloc(s->n ? s->n : 1, sizeof(*calls));
    urls = calloc(s->n ? s->n : 1, sizeof(*urls));
    if (!body || !calls || !urls) {
        failed = 1;
        goto out;
    }
    for (i = 0; i < s->n; i++) {
        const struct hd_node *nd = &s->nodes[i];
        if (nd->down || strcmp(nd->id, p->self.id) == 0 ||
            (targets_only && nd->type != HD_NODE_TARGET))
            continue;
        snprintf(urls[n], sizeof(urls[n]), "%s/v1/metasync", nd->url);
        hd_httpc_call_init(&calls[n], "PUT", urls[n]);
        calls[n].na = p->na;
        snprintf(calls[n].to, sizeof(calls[n].to), "%s", nd->id);
        calls[n].body = body;
        calls[n].blen = strlen(body);
        calls[n].ctype = "application/json";
        calls[n].total_ms = HD_PROXY_SYNC_MS;
        n++;
    }
    hd_httpc_run_all(calls, n, 0);
    for (i = 0; i < n; i++) {
        if (calls[i].rc < 0 || (calls[i].status != 200 && calls[i].status != 409)) {
            failed++;
            HD_LOG(HD_WARN, NULL, "cluster: metasync to %s failed: %s", calls[i].url,
                   calls[i].rc < 0 ? calls[i].err : "unexpected HTTP status");
        }
        hd_httpc_call_cleanup(&calls[i]);
    }
out:
    free(body);
    free(calls);
    free(urls);
    return failed;
}

/* Pushes the current versions if some node has not been sent them yet. */
void hd_proxy_push_pending(struct hd_proxy *p, int always)
{
    struct hd_smap *s;
    struct hd_bmd *b;
    int need;

    pthread_mutex_lock(&p->mu);
    s = hd_smap_state_smap(p->cs);
    b = hd_smap_state_bmd(p->cs);
    need = s && (always || s->version > p->pushed_smap || b->version > p->pushed_bmd);
    pthread_mutex_unlock(&p->mu);
    if (need) {
        metasync_all(p, s, b, 0);
        pthread_mutex_lock(&p->mu);
        if (s->version > p->pushed_smap)
            p->pushed_smap = s->version;
        if (b->version > p->pushed_bmd)
            p->pushed_bmd = b->version;
        pthread_mutex_unlock(&p->mu);
    }
    hd_smap_unref(s);
    hd_bmd_unref(b);
}

/* Targets now (their HTTP workers never wait on us), the proxies from the loop thread: a
 * proxy's worker may be waiting on this very request (a forwarded bucket change), so
 * pushing to it from here could deadlock until the timeout. */
void hd_proxy_sync_now(struct hd_proxy *p)
{
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    struct hd_bmd *b = hd_smap_state_bmd(p->cs);

    if (s)
        metasync_all(p, s, b, 1);
    hd_smap_unref(s);
    hd_bmd_unref(b);
    hd_proxy_wake(p);
}
