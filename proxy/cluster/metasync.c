/* metasync: the primary installs (persists) each new smap and BMD version and pushes it to
 * every node. The primary's loop thread and HTTP workers (bounded calls). */
#include "proxy/cluster/cluster.h"

#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/httpc.h"
#include "common/log.h"

int hd_proxy_smap_install(struct hd_proxy *p, struct hd_smap *s)
{
    int rc = hd_smap_state_set_smap(p->cs, s, 1);

    if (rc < 0)
        HD_LOG(HD_ERROR, NULL, "cluster: cannot persist smap v%lld: %s", (long long)s->version,
               hd_strerror(rc));
    return rc;
}

int hd_proxy_bmd_install(struct hd_proxy *p, struct hd_bmd *b)
{
    int rc = hd_smap_state_set_bmd(p->cs, b, 1, NULL);

    if (rc < 0)
        HD_LOG(HD_ERROR, NULL, "cluster: cannot persist BMD v%lld: %s", (long long)b->version,
               hd_strerror(rc));
    return rc;
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
