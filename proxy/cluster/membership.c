/* membership: the cluster control plane on a proxy. The primary owns the smap and BMD:
 * it adds joining nodes, records heartbeats, drops nodes silent for dead_after intervals
 * (targets move to tmap_down, see docs/cluster.md) and pushes every new version to all nodes
 * (metasync). Other proxies join and heartbeat like targets and forward changes to the
 * primary. Timers run on a libuv loop thread of our own; its control-plane calls block that
 * thread only. */
#include "proxy/core/core.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/cksum.h"
#include "common/errors.h"
#include "common/httpc.h"
#include "common/log.h"

#define BODY_MAX (4u << 20)

/* ---- the primary's books: who was heard from when (caller holds mu) ---- */

static struct hd_proxy_seen *seen_find(struct hd_proxy *p, const char *id)
{
    size_t i;

    for (i = 0; i < p->nseen; i++)
        if (strcmp(p->seen[i].id, id) == 0)
            return &p->seen[i];
    return NULL;
}

static void seen_mark(struct hd_proxy *p, const char *id, uint64_t now)
{
    struct hd_proxy_seen *s = seen_find(p, id), *nv;

    if (!s) {
        nv = realloc(p->seen, (p->nseen + 1) * sizeof(*nv));
        if (!nv)
            return;
        p->seen = nv;
        s = &p->seen[p->nseen++];
        snprintf(s->id, sizeof(s->id), "%s", id);
    }
    s->last_ns = now;
}

/* Installs a new smap version (primary, caller holds mu). */
static int smap_install(struct hd_proxy *p, struct hd_smap *s)
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

static void random_uuid(char out[40])
{
    unsigned char r[16];

    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
        memset(r, 0x5a, sizeof(r));
    hd_hex(r, sizeof(r), out);
}

int hd_proxy_members_init(struct hd_proxy *p)
{
    struct hd_smap *cur = hd_smap_state_smap(p->cs), *s = NULL;
    uint64_t now = hd_now_ns();
    size_t i;
    int rc, changed;

    if (!p->primary) {
        memset(&p->member, 0, sizeof(p->member));
        p->member.st = p->cs;
        p->member.self = &p->self;
        p->member.join_url = p->join;
        p->member.secret = p->secret;
        p->member.timeout_ms =
            p->hb_ms * p->dead_after / 2 > 2000 ? p->hb_ms * p->dead_after / 2 : 2000;
        hd_smap_unref(cur);
        return 0;
    }
    if (cur)
        rc = hd_smap_clone(cur, &s);
    else
        rc = (s = hd_smap_new()) ? 0 : -ENOMEM;
    if (rc < 0)
        goto out;
    if (!s->uuid[0])
        random_uuid(s->uuid);
    changed = !cur || strcmp(s->primary, p->self.id) != 0;
    snprintf(s->primary, sizeof(s->primary), "%s", p->self.id);
    if ((rc = hd_smap_put(s, &p->self)) < 0)
        goto out;
    if (changed || rc == 1) {
        s->version++;
        if ((rc = smap_install(p, s)) < 0)
            goto out;
    }
    /* everyone we remember gets dead_after intervals to check in */
    for (i = 0; i < s->n; i++)
        if (!s->nodes[i].down)
            seen_mark(p, s->nodes[i].id, now);
    atomic_store(&p->ready, 1);
    HD_LOG(HD_INFO, NULL, "cluster: primary proxy %s, smap v%lld with %zu target(s)", p->self.id,
           (long long)s->version, hd_smap_count(s, HD_NODE_TARGET, 1));
    rc = 0;
out:
    hd_smap_unref(cur);
    hd_smap_unref(s);
    return rc;
}

/* ---- metasync ---- */

static void cluster_header(struct hd_proxy *p, const char *method, const char *url,
                           struct hd_kv *kv, char sig[HD_SMAP_SIG_LEN], size_t *n)
{
    char path[2048];

    *n = 0;
    if (!*p->secret)
        return;
    hd_smap_url_path(url, path, sizeof(path));
    hd_smap_csig(p->secret, method, path, sig);
    kv->k = "X-Hoard-Cluster";
    kv->v = sig;
    *n = 1;
}

/* Sends s and b to every live node but us (only the targets: targets_only), in parallel;
 * returns the number of failures. */
static size_t metasync_all(struct hd_proxy *p, struct hd_smap *s, struct hd_bmd *b,
                           int targets_only)
{
    json_t *j = json_object();
    struct hd_httpc_call *calls = NULL;
    struct hd_kv *kv = NULL;
    char(*urls)[HD_NODE_URL_MAX + 16] = NULL, (*sigs)[HD_SMAP_SIG_LEN] = NULL;
    char *body = NULL;
    size_t i, n = 0, failed = 0, nh;

    if (!j)
        return 1;
    json_object_set_new(j, "smap", hd_smap_to_json(s));
    json_object_set_new(j, "bmd", hd_bmd_to_json(b));
    body = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    calls = calloc(s->n ? s->n : 1, sizeof(*calls));
    kv = calloc(s->n ? s->n : 1, sizeof(*kv));
    urls = calloc(s->n ? s->n : 1, sizeof(*urls));
    sigs = calloc(s->n ? s->n : 1, sizeof(*sigs));
    if (!body || !calls || !kv || !urls || !sigs) {
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
        cluster_header(p, "PUT", urls[n], &kv[n], sigs[n], &nh);
        calls[n].hdrs = &kv[n];
        calls[n].nhdrs = nh;
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
    free(kv);
    free(urls);
    free(sigs);
    return failed;
}

/* Pushes the current versions if some node has not been sent them yet. */
static void push_pending(struct hd_proxy *p, int always)
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

static void wake_loop(struct hd_proxy *p);

void hd_proxy_push_pending(struct hd_proxy *p)
{
    push_pending(p, 0);
}

int hd_proxy_smap_install(struct hd_proxy *p, struct hd_smap *s)
{
    return smap_install(p, s);
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
    wake_loop(p);
}

/* ---- failure detection (primary, loop thread) ---- */

/* Asks each silent node for /v1/health before it is dropped: heartbeats are served by our
 * HTTP workers, which a burst of requests (or the blocking fan-outs, see docs) can delay; a
 * node that answers is alive. A killed node refuses the connection at once. ok[i] = 1 when
 * url i answered. */
static void probe(struct hd_proxy *p, char (*urls)[HD_NODE_URL_MAX + 16], size_t n, int *ok)
{
    struct hd_httpc_call *calls = calloc(n, sizeof(*calls));
    size_t i;

    if (!calls)
        return;
    for (i = 0; i < n; i++) {
        hd_httpc_call_init(&calls[i], "GET", urls[i]);
        calls[i].connect_ms = 1000;
        calls[i].total_ms = p->hb_ms * 2 > 1000 ? p->hb_ms * 2 : 1000;
    }
    hd_httpc_run_all(calls, n, 0);
    for (i = 0; i < n; i++) {
        ok[i] = calls[i].rc == 0 && calls[i].status == 200;
        hd_httpc_call_cleanup(&calls[i]);
    }
    free(calls);
}

static void detect_failures(struct hd_proxy *p)
{
    uint64_t now = hd_now_ns(), limit = (uint64_t)p->hb_ms * (uint64_t)p->dead_after * 1000000ull;
    char(*urls)[HD_NODE_URL_MAX + 16] = NULL, (*ids)[HD_NODE_ID_MAX] = NULL;
    struct hd_smap *cur, *s = NULL;
    size_t i, j, n = 0;
    int *ok = NULL;

    pthread_mutex_lock(&p->mu);
    cur = hd_smap_state_smap(p->cs);
    for (i = 0; cur && i < cur->n; i++) {
        const struct hd_node *nd = &cur->nodes[i];
        struct hd_proxy_seen *seen;
        if (nd->down || strcmp(nd->id, p->self.id) == 0)
            continue;
        seen = seen_find(p, nd->id);
        if (!seen) {
            seen_mark(p, nd->id, now);
            continue;
        }
        if (now - seen->last_ns <= limit)
            continue;
        if (!urls) {
            urls = calloc(cur->n, sizeof(*urls));
            ids = calloc(cur->n, sizeof(*ids));
            ok = calloc(cur->n, sizeof(*ok));
            if (!urls || !ids || !ok)
                break;
        }
        snprintf(urls[n], sizeof(urls[n]), "%s/v1/health", nd->url);
        snprintf(ids[n], sizeof(ids[n]), "%s", nd->id);
        n++;
    }
    pthread_mutex_unlock(&p->mu);
    hd_smap_unref(cur);
    if (n == 0 || !ok)
        goto out;
    probe(p, urls, n, ok);

    pthread_mutex_lock(&p->mu);
    now = hd_now_ns();
    cur = hd_smap_state_smap(p->cs);
    for (j = 0; cur && j < n; j++) {
        const struct hd_node *nd = hd_smap_find(cur, ids[j]);
        struct hd_proxy_seen *seen = seen_find(p, ids[j]);
        if (!nd || nd->down || !seen || now - seen->last_ns <= limit)
            continue; /* gone meanwhile, or it checked in */
        if (ok[j]) {
            HD_LOG(HD_INFO, NULL, "cluster: %s missed heartbeats but answers: keeping it", ids[j]);
            seen_mark(p, ids[j], now);
            continue;
        }
        if (!s && hd_smap_clone(cur, &s) < 0)
            break;
        HD_LOG(HD_WARN, NULL, "cluster: %s %s silent for %llu ms: removing it from the smap",
               nd->type == HD_NODE_TARGET ? "target" : "proxy", nd->id,
               (unsigned long long)((now - seen->last_ns) / 1000000ull));
        if (nd->type == HD_NODE_TARGET) {
            struct hd_node down;
            if (hd_smap_node_copy(&down, nd) == 0) {
                down.down = 1;
                hd_smap_put(s, &down);
                hd_smap_node_cleanup(&down);
            }
        } else {
            hd_smap_remove(s, nd->id);
        }
    }
    if (s) {
        s->version++;
        smap_install(p, s);
    }
    pthread_mutex_unlock(&p->mu);
    hd_smap_unref(cur);
    hd_smap_unref(s);
out:
    free(urls);
    free(ids);
    free(ok);
}

/* ---- the loop thread ---- */

static void on_tick(uv_timer_t *t)
{
    struct hd_proxy *p = t->data;

    if (atomic_load(&p->stopping))
        return;
    if (p->primary) {
        detect_failures(p);
        push_pending(p, 0);
        hd_proxy_rebalance_tick(p);
    } else {
        hd_smap_member_tick(&p->member);
        atomic_store(&p->ready, p->member.joined);
    }
}

static void on_close(uv_handle_t *h)
{
    (void)h;
}

static void on_wake(uv_async_t *a)
{
    struct hd_proxy *p = a->data;

    if (atomic_load(&p->stopping)) {
        uv_timer_stop(&p->timer);
        uv_close((uv_handle_t *)&p->timer, on_close);
        uv_close((uv_handle_t *)&p->wake, on_close);
        return;
    }
    if (p->primary) {
        push_pending(p, 0);
        hd_proxy_rebalance_tick(p);
    }
}

static void *loop_main(void *arg)
{
    struct hd_proxy *p = arg;
    sigset_t all;

    /* SIGINT/SIGTERM belong to the main thread */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    uv_run(&p->loop, UV_RUN_DEFAULT);
    return NULL;
}

int hd_proxy_loop_start(struct hd_proxy *p)
{
    int rc;

    if (atomic_load(&p->running))
        return 0;
    if ((rc = uv_loop_init(&p->loop)) < 0)
        return rc;
    uv_timer_init(&p->loop, &p->timer);
    uv_async_init(&p->loop, &p->wake, on_wake);
    p->timer.data = p;
    p->wake.data = p;
    uv_timer_start(&p->timer, on_tick, 0, (uint64_t)p->hb_ms);
    if ((rc = pthread_create(&p->thr, NULL, loop_main, p)) != 0) {
        uv_close((uv_handle_t *)&p->timer, on_close);
        uv_close((uv_handle_t *)&p->wake, on_close);
        uv_run(&p->loop, UV_RUN_DEFAULT);
        uv_loop_close(&p->loop);
        return -rc;
    }
    atomic_store(&p->running, 1);
    return 0;
}

void hd_proxy_loop_stop(struct hd_proxy *p)
{
    if (!atomic_load(&p->running))
        return;
    atomic_store(&p->stopping, 1);
    uv_async_send(&p->wake);
    pthread_join(p->thr, NULL);
    uv_loop_close(&p->loop);
    atomic_store(&p->running, 0);
}

static void wake_loop(struct hd_proxy *p)
{
    if (atomic_load(&p->running) && !atomic_load(&p->stopping))
        uv_async_send(&p->wake);
}

/* ---- calls to the primary (non-primary proxies, HTTP workers) ---- */

int hd_proxy_primary_call(struct hd_proxy *p, const char *method, const char *path,
                          const json_t *in, long *status, json_t **out)
{
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    const struct hd_node *prim = s ? hd_smap_find(s, s->primary) : NULL;
    char url[HD_NODE_URL_MAX + 2048], sig[HD_SMAP_SIG_LEN];
    struct hd_kv kv;
    size_t nh;
    int rc;

    snprintf(url, sizeof(url), "%s%s", prim ? prim->url : p->join, path);
    hd_smap_unref(s);
    cluster_header(p, method, url, &kv, sig, &nh);
    rc = hd_httpc_json(method, url, &kv, nh, in, HD_PROXY_FANOUT_MS, status, out);
    if (rc < 0)
        HD_LOG(HD_WARN, NULL, "cluster: call to the primary failed: %s %s: %s", method, url,
               hd_strerror(rc));
    return rc;
}

int hd_proxy_err_from_json(long status, const json_t *j)
{
    const char *code = json_string_value(json_object_get(j, "code"));
    int c;

    if (status >= 200 && status < 300)
        return 0;
    for (c = HD_EBASE; code && c < HD_ELAST; c++) {
        const struct hd_err_info *e = hd_err_info(c);
        if (e->http_status == status && strcmp(e->s3_code, code) == 0)
            return c;
    }
    if (status == 404)
        return HD_ENOTFOUND;
    if (status == 503)
        return HD_EUNAVAIL;
    return status >= 500 ? HD_EINTERNAL : HD_EBADREQ;
}

/* ---- request bodies ---- */

struct body_ctx {
    struct hd_proxy *p;
    struct hd_buf body;
    void (*done)(struct hd_req *r, struct hd_proxy *p, json_t *j);
};

static int body_chunk(struct hd_req *r, const char *d, size_t n)
{
    struct body_ctx *c = r->data;

    if (c->body.len + n > BODY_MAX)
        return HD_ETOOLARGE;
    return hd_buf_append(&c->body, d, n);
}

static void body_end(struct hd_req *r)
{
    struct body_ctx *c = r->data;
    json_t *j = NULL;

    if (r->body_err) {
        hd_resp_err(r, r->body_err);
        return;
    }
    if (c->body.len) {
        j = json_loadb(c->body.data, c->body.len, 0, NULL);
        if (!j) {
            hd_resp_err_msg(r, HD_EBADARG, "The request body is not valid JSON.");
            return;
        }
    }
    c->done(r, c->p, j);
    json_decref(j);
}

static void body_done(struct hd_req *r)
{
    struct body_ctx *c = r->data;

    if (c) {
        hd_buf_cleanup(&c->body);
        free(c);
    }
    r->data = NULL;
}

static void read_json(struct hd_req *r, struct hd_proxy *p,
                      void (*done)(struct hd_req *r, struct hd_proxy *p, json_t *j))
{
    struct body_ctx *c = calloc(1, sizeof(*c));

    if (!c) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    c->p = p;
    c->done = done;
    hd_buf_init(&c->body);
    r->data = c;
    r->on_body = body_chunk;
    r->on_end = body_end;
    r->on_done = body_done;
}

/* Re-sends the request (method, path, query, JSON body) to the primary and answers with
 * its status and body. */
static void forward(struct hd_req *r, struct hd_proxy *p, json_t *j)
{
    char path[4096];
    json_t *out = NULL;
    long status = 0;
    int rc;

    snprintf(path, sizeof(path), "%s%s%s", r->raw_path, *r->raw_query ? "?" : "", r->raw_query);
    rc = hd_proxy_primary_call(p, r->method, path, j, &status, &out);
    if (rc < 0) {
        hd_resp_err_msg(r, HD_EUNAVAIL, "The primary proxy cannot be reached.");
        return;
    }
    if (!out) {
        hd_resp_empty(r, (int)status);
        return;
    }
    hd_proxy_resp_json(r, (int)status, out);
}

/* ---- handlers ---- */

static int cluster_auth(struct hd_req *r, struct hd_proxy *p)
{
    char want[HD_SMAP_SIG_LEN];

    if (!*p->secret)
        return 0;
    hd_smap_csig(p->secret, r->method, r->raw_path, want);
    if (hd_smap_sig_equal(want, hd_req_header(r, "X-Hoard-Cluster")))
        return 0;
    hd_resp_err_msg(r, HD_EACCESS,
                    "Cluster calls need a valid X-Hoard-Cluster header (cluster.secret).");
    return HD_EACCESS;
}

static json_t *smap_view(struct hd_proxy *p, struct hd_smap *s)
{
    json_t *j = hd_smap_to_json(s), *ages;
    uint64_t now = hd_now_ns();
    size_t i;

    if (!j)
        return NULL;
    json_object_set_new(j, "self", json_string(p->self.id));
    if (p->primary) {
        ages = json_object();
        pthread_mutex_lock(&p->mu);
        for (i = 0; i < p->nseen; i++)
            if (strcmp(p->seen[i].id, p->self.id) != 0 && hd_smap_find(s, p->seen[i].id))
                json_object_set_new(
                    ages, p->seen[i].id,
                    json_integer((json_int_t)((now - p->seen[i].last_ns) / 1000000ull)));
        pthread_mutex_unlock(&p->mu);
        json_object_set_new(j, "heartbeat_age_ms", ages);
    }
    return j;
}

static int same_mountpaths(const struct hd_node *a, const struct hd_node *b)
{
    size_t i;

    if (a->nmp != b->nmp)
        return 0;
    for (i = 0; i < a->nmp; i++)
        if (strcmp(a->mountpaths[i], b->mountpaths[i]) != 0)
            return 0;
    return 1;
}

static void on_join(struct hd_req *r, struct hd_proxy *p, json_t *j)
{
    struct hd_smap *cur = NULL, *s = NULL;
    struct hd_bmd *their = NULL, *bmd = NULL;
    const struct hd_node *old;
    struct hd_node n;
    json_int_t their_v;
    json_t *out;
    int rc, changed, moves;

    if (!p->primary) {
        forward(r, p, j);
        return;
    }
    if (!j || hd_smap_node_from_json(j, &n) < 0) {
        hd_resp_err_msg(r, HD_EBADARG,
                        "Expected a node entry (daemon_id, daemon_type, "
                        "public_net.direct_url).");
        return;
    }
    if (strcmp(n.id, p->self.id) == 0) {
        hd_smap_node_cleanup(&n);
        hd_proxy_resp_conflict(r, "A node cannot join with the primary's id.");
        return;
    }
    if (n.type == HD_NODE_TARGET && hd_proxy_decommissioned(p, n.id)) {
        hd_smap_node_cleanup(&n);
        hd_resp_err(r, HD_EGONE);
        return;
    }
    their_v = json_integer_value(json_object_get(j, "smap_version"));
    if (json_object_get(j, "bmd"))
        hd_bmd_from_json(json_object_get(j, "bmd"), &their);
    pthread_mutex_lock(&p->mu);
    cur = hd_smap_state_smap(p->cs);
    if (!cur) {
        rc = HD_EUNAVAIL;
        goto unlock;
    }
    if ((rc = hd_smap_clone(cur, &s)) < 0)
        goto unlock;
    old = hd_smap_find(cur, n.id);
    /* new, coming back, or with other mountpaths (objects move between them) */
    moves = n.type == HD_NODE_TARGET && (!old || old->down || !same_mountpaths(old, &n));
    n.flags = old ? old->flags : 0; /* maintenance survives a restart */
    n.down = 0;
    if ((rc = hd_smap_put(s, &n)) < 0)
        goto unlock;
    changed = rc == 1;
    if (their_v > s->version) { /* we lost our state: continue above what nodes hold */
        s->version = their_v;
        changed = 1;
    }
    if (changed) {
        s->version++;
        if (moves)
            hd_proxy_rebalance_mark(p, s);
        if ((rc = smap_install(p, s)) < 0)
            goto unlock;
        HD_LOG(HD_INFO, NULL, "cluster: %s %s joined at %s (smap v%lld)",
               n.type == HD_NODE_TARGET ? "target" : "proxy", n.id, n.url, (long long)s->version);
    }
    bmd = hd_smap_state_bmd(p->cs);
    if (their && their->version > bmd->version) {
        HD_LOG(HD_WARN, NULL, "cluster: %s holds BMD v%lld, newer than ours (v%lld): adopting it",
               n.id, (long long)their->version, (long long)bmd->version);
        if ((rc = hd_proxy_bmd_install(p, their)) < 0)
            goto unlock;
        hd_bmd_unref(bmd);
        bmd = hd_bmd_ref(their);
    }
    seen_mark(p, n.id, hd_now_ns());
    rc = 0;
unlock:
    pthread_mutex_unlock(&p->mu);
    if (rc < 0) {
        hd_resp_err(r, rc);
    } else {
        struct hd_smap *now = hd_smap_state_smap(p->cs);
        out = json_object();
        json_object_set_new(out, "smap", hd_smap_to_json(now));
        json_object_set_new(out, "bmd", hd_bmd_to_json(bmd));
        hd_smap_unref(now);
        hd_proxy_resp_json(r, 200, out);
        wake_loop(p);
    }
    hd_smap_node_cleanup(&n);
    hd_smap_unref(cur);
    hd_smap_unref(s);
    hd_bmd_unref(their);
    hd_bmd_unref(bmd);
}

static void on_heartbeat(struct hd_req *r, struct hd_proxy *p, json_t *j)
{
    const char *id = json_string_value(json_object_get(j, "daemon_id"));
    struct hd_smap *s;
    struct hd_bmd *b;
    const struct hd_node *n;

    if (!p->primary) {
        forward(r, p, j);
        return;
    }
    if (!id) {
        hd_resp_err_msg(r, HD_EBADARG, "Expected {\"daemon_id\": ...}.");
        return;
    }
    pthread_mutex_lock(&p->mu);
    s = hd_smap_state_smap(p->cs);
    b = hd_smap_state_bmd(p->cs);
    n = hd_smap_find(s, id);
    if (n && !n->down)
        seen_mark(p, id, hd_now_ns());
    pthread_mutex_unlock(&p->mu);
    if (!n || n->down)
        hd_resp_err_msg(r, HD_ENOTFOUND, "Unknown node: join first.");
    else
        hd_proxy_resp_json(r, 200,
                           json_pack("{s:I, s:I}", "smap_version", (json_int_t)s->version,
                                     "bmd_version", (json_int_t)b->version));
    hd_smap_unref(s);
    hd_bmd_unref(b);
}

static void on_metasync(struct hd_req *r, struct hd_proxy *p, json_t *j)
{
    struct hd_smap *s = NULL;
    struct hd_bmd *b = NULL;
    int rs = 0, rb = 0;

    if (p->primary) {
        hd_proxy_resp_conflict(r, "This proxy is the primary: it does not accept metasync.");
        return;
    }
    if (!j || hd_smap_parse_sync(j, &s, &b) < 0) {
        hd_resp_err_msg(r, HD_EBADARG, "Expected {\"smap\": ..., \"bmd\": ...}.");
        return;
    }
    if (s)
        rs = hd_smap_state_set_smap(p->cs, s, 0);
    if (b)
        rb = hd_smap_state_set_bmd(p->cs, b, 0, NULL);
    if (rs == -ESTALE || rb == -ESTALE)
        hd_proxy_resp_conflict(r, "Older than the version held.");
    else if (rs < 0 || rb < 0)
        hd_resp_err(r, rs < 0 ? rs : rb);
    else
        hd_resp_empty(r, 200);
    hd_smap_unref(s);
    hd_bmd_unref(b);
}

/* POST /v1/cluster/{maintenance,decommission}/<id> {"on": bool} */
static void on_flag(struct hd_req *r, struct hd_proxy *p, json_t *j)
{
    int decomm = strncmp(r->raw_path, "/v1/cluster/decommission/", 25) == 0;
    const char *id = strrchr(r->raw_path, '/') + 1;
    json_t *on = json_object_get(j, "on");
    unsigned flag = decomm ? HD_NODE_DECOMM : HD_NODE_MAINT;
    struct hd_smap *cur = NULL, *s = NULL;
    const struct hd_node *n;
    struct hd_node copy;
    int rc = 0, set = on ? json_is_true(on) : 1, moves = 0;

    if (!p->primary) {
        forward(r, p, j);
        return;
    }
    if (on && !json_is_boolean(on)) {
        hd_resp_err_msg(r, HD_EBADARG, "Expected {\"on\": true|false}.");
        return;
    }
    pthread_mutex_lock(&p->mu);
    cur = hd_smap_state_smap(p->cs);
    n = hd_smap_find(cur, id);
    if (!n || n->type != HD_NODE_TARGET) {
        rc = HD_ENOTFOUND;
        goto unlock;
    }
    if ((rc = hd_smap_clone(cur, &s)) < 0)
        goto unlock;
    if (decomm && set && n->down) {
        hd_smap_remove(s, id); /* a dead target is forgotten: its objects are gone */
        HD_LOG(HD_WARN, NULL, "cluster: down target %s decommissioned and forgotten", id);
    } else {
        if ((rc = hd_smap_node_copy(&copy, n)) < 0)
            goto unlock;
        copy.flags = set ? copy.flags | flag : copy.flags & ~flag;
        moves = decomm || !set; /* objects leave a decommissioned target, return after
                                 * maintenance */
        rc = hd_smap_put(s, &copy);
        hd_smap_node_cleanup(&copy);
        if (rc < 0)
            goto unlock;
        HD_LOG(HD_INFO, NULL, "cluster: %s %s %s", id, decomm ? "decommissioning" : "maintenance",
               set ? "on" : "off");
    }
    s->version++;
    if (moves)
        hd_proxy_rebalance_mark(p, s);
    rc = smap_install(p, s);
unlock:
    pthread_mutex_unlock(&p->mu);
    if (rc == 0) /* targets learn the new owners before the caller hears back */
        hd_proxy_sync_now(p);
    if (rc == HD_ENOTFOUND) {
        hd_resp_err_msg(r, rc, "No such target in the cluster map.");
    } else if (rc < 0) {
        hd_resp_err(r, rc);
    } else {
        hd_proxy_resp_json(r, 200, smap_view(p, s));
        wake_loop(p);
    }
    hd_smap_unref(cur);
    hd_smap_unref(s);
}

void hd_proxy_cluster_handle(struct hd_req *r, struct hd_proxy *p)
{
    const char *path = r->raw_path, *m = r->method;
    int get = strcmp(m, "GET") == 0;
    struct hd_smap *s;
    struct hd_bmd *b;

    if (get && (strcmp(path, "/v1/cluster") == 0 || strcmp(path, "/v1/cluster/smap") == 0)) {
        s = hd_smap_state_smap(p->cs);
        if (!s)
            hd_resp_err_msg(r, HD_EUNAVAIL, "This proxy has not joined a cluster yet.");
        else
            hd_proxy_resp_json(r, 200, path[11] ? hd_smap_to_json(s) : smap_view(p, s));
        hd_smap_unref(s);
        return;
    }
    if (get && strcmp(path, "/v1/cluster/bmd") == 0) {
        b = hd_smap_state_bmd(p->cs);
        hd_proxy_resp_json(r, 200, hd_bmd_to_json(b));
        hd_bmd_unref(b);
        return;
    }
    if (get) {
        hd_resp_err(r, HD_ENOTFOUND);
        return;
    }
    if (strcmp(m, "POST") == 0 &&
        ((strncmp(path, "/v1/cluster/maintenance/", 24) == 0 && path[24]) ||
         (strncmp(path, "/v1/cluster/decommission/", 25) == 0 && path[25]))) {
        int rc = hd_proxy_auth_admin(r, p);
        if (rc < 0)
            hd_resp_err_msg(r, rc,
                            "Cluster administration needs the cluster header or a key "
                            "with rw access to all buckets.");
        else
            read_json(r, p, on_flag);
        return;
    }
    if (strcmp(m, "POST") == 0 && strcmp(path, "/v1/cluster/rebalance") == 0) {
        int rc = hd_proxy_auth_admin(r, p);
        if (rc < 0) {
            hd_resp_err(r, rc);
        } else {
            hd_proxy_rebalance_reply(r, p);
            wake_loop(p);
        }
        return;
    }
    if (cluster_auth(r, p) < 0)
        return;
    if (strcmp(m, "POST") == 0 && strcmp(path, "/v1/cluster/join") == 0)
        read_json(r, p, on_join);
    else if (strcmp(m, "POST") == 0 && strcmp(path, "/v1/cluster/heartbeat") == 0)
        read_json(r, p, on_heartbeat);
    else if (strcmp(m, "PUT") == 0 && strcmp(path, "/v1/metasync") == 0)
        read_json(r, p, on_metasync);
    else
        hd_resp_err(r, HD_EMETHOD);
}
