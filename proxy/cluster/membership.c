/* membership: the cluster control plane on a proxy. The primary owns the smap and BMD:
 * it adds joining nodes, records heartbeats, drops nodes silent for dead_after intervals
 * (targets move to tmap_down, see docs/cluster.md) and pushes every new version to all nodes
 * (metasync). Other proxies join and heartbeat like targets and forward changes to the
 * primary. Timers run on a libuv loop thread of our own; its control-plane calls block that
 * thread only. The primary's lease is renewed on a second thread (elect.c), so that this
 * one's fan-outs never delay it. */
#include "proxy/cluster/cluster.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/cksum.h"
#include "common/errors.h"
#include "common/httpc.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/nodeauth.h"

#define BODY_MAX (4u << 20)

static void random_uuid(char out[40])
{
    unsigned char r[16];

    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
        memset(r, 0x5a, sizeof(r));
    hd_hex(r, sizeof(r), out);
}

/* Primary at start: a fresh cluster's first proxy (empty cluster.join), or the proxy a small
 * cluster (fewer than three proxies: the primary is the only voter) names as its primary.
 * With three or more proxies everyone starts as a follower: the others may have elected a
 * new primary while we were away, and an election settles it if not. */
static int starts_primary(struct hd_proxy *p, const struct hd_smap *cur)
{
    if (!cur)
        return p->join[0] == '\0';
    if (hd_smap_count(cur, HD_NODE_PROXY, 0) >= 3)
        return 0;
    return strcmp(cur->primary, p->self.id) == 0 || (!cur->primary[0] && p->join[0] == '\0');
}

int hd_proxy_members_init(struct hd_proxy *p)
{
    struct hd_smap *cur = hd_smap_state_smap(p->cs), *s = NULL;
    uint64_t now = hd_now_ns();
    size_t i;
    int rc, changed;

    memset(&p->member, 0, sizeof(p->member));
    p->member.st = p->cs;
    p->member.self = &p->self;
    p->member.join_url = p->join;
    p->member.na = p->na;
    /* short: a follower's loop also runs the election, which must not wait on a primary
     * that accepts connections but does not answer (stopped) */
    p->member.timeout_ms = p->hb_ms < 500 ? 500 : (p->hb_ms > 2000 ? 2000 : p->hb_ms);
    if ((rc = hd_proxy_role_init(p)) < 0)
        goto out;
    atomic_store(&p->primary, 0);
    if (!starts_primary(p, cur)) {
        HD_LOG(HD_INFO, NULL, "cluster: proxy %s starts as a follower (term %lld)", p->self.id,
               (long long)atomic_load(&p->term));
        rc = 0;
        goto out;
    }
    /* the term goes on from the highest we know of (1 for a new cluster) */
    if (cur && cur->term > atomic_load(&p->term))
        hd_proxy_term_adopt(p, cur->term, "the term of our smap");
    if (atomic_load(&p->term) == 0)
        hd_proxy_term_adopt(p, 1, "a new cluster");
    atomic_store(&p->primary, 1);
    hd_proxy_lease_tick(p); /* the only voter: the lease is ours */
    if (cur)
        rc = hd_smap_clone(cur, &s);
    else
        rc = (s = hd_smap_new()) ? 0 : -ENOMEM;
    if (rc < 0)
        goto out;
    if (!s->uuid[0])
        random_uuid(s->uuid);
    changed = !cur || strcmp(s->primary, p->self.id) != 0 || cur->term != atomic_load(&p->term);
    snprintf(s->primary, sizeof(s->primary), "%s", p->self.id);
    if ((rc = hd_smap_put(s, &p->self)) < 0)
        goto out;
    if (changed || rc == 1) {
        s->version++;
        pthread_mutex_lock(&p->mu);
        rc = hd_proxy_smap_install(p, s);
        pthread_mutex_unlock(&p->mu);
        if (rc < 0)
            goto out;
    }
    /* everyone we remember gets dead_after intervals to check in */
    for (i = 0; i < s->n; i++)
        if (!s->nodes[i].down)
            hd_proxy_seen_mark(p, s->nodes[i].id, now);
    atomic_store(&p->ready, 1);
    HD_LOG(HD_INFO, NULL, "cluster: primary proxy %s, term %lld, smap v%lld with %zu target(s)",
           p->self.id, (long long)atomic_load(&p->term), (long long)s->version,
           hd_smap_count(s, HD_NODE_TARGET, 1));
    rc = 0;
out:
    hd_smap_unref(cur);
    hd_smap_unref(s);
    return rc;
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
        seen = hd_proxy_seen_find(p, nd->id);
        if (!seen) {
            hd_proxy_seen_mark(p, nd->id, now);
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
        struct hd_proxy_seen *seen = hd_proxy_seen_find(p, ids[j]);
        if (!nd || nd->down || !seen || now - seen->last_ns <= limit)
            continue; /* gone meanwhile, or it checked in */
        if (ok[j]) {
            HD_LOG(HD_INFO, NULL, "cluster: %s missed heartbeats but answers: keeping it", ids[j]);
            hd_proxy_seen_mark(p, ids[j], now);
            continue;
        }
        if (!s && hd_smap_clone(cur, &s) < 0)
            break;
        HD_LOG(HD_WARN, NULL, "cluster: %s %s silent for %llu ms: marking it down",
               nd->type == HD_NODE_TARGET ? "target" : "proxy", nd->id,
               (unsigned long long)((now - seen->last_ns) / 1000000ull));
        /* kept in the map: a target keeps its objects' placement, a proxy its vote */
        {
            struct hd_node down;
            if (hd_smap_node_copy(&down, nd) == 0) {
                down.down = 1;
                hd_smap_put(s, &down);
                hd_smap_node_cleanup(&down);
            }
        }
    }
    if (s) {
        s->version++;
        hd_proxy_smap_install(p, s);
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

static void on_tick(void *arg)
{
    struct hd_proxy *p = arg;

    if (p->primary) {
        /* the lease is renewed on its own thread (elect.c), never held up by this one */
        if (!hd_proxy_has_lease(p))
            return; /* a primary without a majority changes nothing */
        detect_failures(p);
        hd_proxy_push_pending(p, 0);
        hd_proxy_rebalance_tick(p);
        hd_proxy_plans_tick(p);
    } else if (!hd_proxy_elect_tick(p) && !p->primary) {
        hd_smap_member_tick(&p->member);
        atomic_store(&p->ready, p->member.joined);
    }
}

static void on_wake(void *arg)
{
    struct hd_proxy *p = arg;

    if (hd_proxy_has_lease(p)) {
        hd_proxy_push_pending(p, 0);
        hd_proxy_rebalance_tick(p);
        hd_proxy_plans_tick(p);
    }
}

int hd_proxy_loop_start(struct hd_proxy *p)
{
    int rc;

    if ((rc = hd_proxy_lease_start(p)) < 0)
        return rc;
    if ((rc = hd_ticker_start(&p->ticker, "proxy-loop", (uint64_t)p->hb_ms, on_tick, on_wake, p)) <
        0)
        hd_proxy_lease_stop(p);
    return rc;
}

/* The lease thread first: a primary that is going away stops renewing at once, so the
 * followers' promises run out while the loop thread finishes its last calls. */
void hd_proxy_loop_stop(struct hd_proxy *p)
{
    hd_proxy_lease_stop(p);
    hd_ticker_stop(&p->ticker);
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
    hd_resp_json(r, (int)status, out);
}

/* ---- handlers ---- */

/* The sender of a node call (verified before the body was read; "" in dev mode without it). */
static const char *sender_of(struct hd_req *r)
{
    const char *s = hd_req_header(r, "X-Hoard-Node");

    return s ? s : "";
}

static int is_proxy(struct hd_proxy *p, const char *id)
{
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    const struct hd_node *n = hd_smap_find(s, id);
    int yes = n && n->type == HD_NODE_PROXY;

    hd_smap_unref(s);
    return yes;
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

static void on_join(struct hd_req *r, void *ctx, json_t *j)
{
    struct hd_proxy *p = ctx;
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
        hd_resp_conflict(r, "A node cannot join with the primary's id.");
        return;
    }
    /* a node joins as itself, or through a proxy of the map that checked it */
    if (*p->secret && strcmp(n.id, sender_of(r)) != 0 && !is_proxy(p, sender_of(r))) {
        char addr[64];
        hd_stats_inc(HD_ST_AUTH_FAILED);
        HD_LOG(HD_WARN, NULL, "cluster: refused join of %s signed by %s (from %s)", n.id,
               sender_of(r), hd_req_remote(r, addr, sizeof(addr)));
        hd_smap_node_cleanup(&n);
        hd_resp_err_msg(r, HD_EACCESS, "A node may only join as itself.");
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
    if ((n.flags & HD_NODE_RESTART) && !(n.flags & HD_NODE_DECOMM)) {
        /* back from the restart its preStop asked maintenance for: its objects return */
        n.flags &= ~(HD_NODE_MAINT | HD_NODE_RESTART);
        moves = n.type == HD_NODE_TARGET;
        HD_LOG(HD_INFO, NULL, "cluster: %s rejoined after its restart: maintenance off", n.id);
    }
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
        if ((rc = hd_proxy_smap_install(p, s)) < 0)
            goto unlock;
        char addr[64];
        HD_LOG(HD_INFO, NULL, "cluster: %s %s joined at %s (smap v%lld; asked by %s from %s)",
               n.type == HD_NODE_TARGET ? "target" : "proxy", n.id, n.url, (long long)s->version,
               r->principal[0] ? r->principal : "-", hd_req_remote(r, addr, sizeof(addr)));
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
    hd_proxy_seen_mark(p, n.id, hd_now_ns());
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
        hd_resp_json(r, 200, out);
        hd_proxy_wake(p);
    }
    hd_smap_node_cleanup(&n);
    hd_smap_unref(cur);
    hd_smap_unref(s);
    hd_bmd_unref(their);
    hd_bmd_unref(bmd);
}

static void on_heartbeat(struct hd_req *r, void *ctx, json_t *j)
{
    struct hd_proxy *p = ctx;
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
    if (*p->secret && strcmp(id, sender_of(r)) != 0 && !is_proxy(p, sender_of(r))) {
        hd_resp_err_msg(r, HD_EACCESS, "A node may only heartbeat as itself.");
        return;
    }
    pthread_mutex_lock(&p->mu);
    s = hd_smap_state_smap(p->cs);
    b = hd_smap_state_bmd(p->cs);
    n = hd_smap_find(s, id);
    if (n && !n->down)
        hd_proxy_seen_mark(p, id, hd_now_ns());
    pthread_mutex_unlock(&p->mu);
    if (!n || n->down)
        hd_resp_err_msg(r, HD_ENOTFOUND, "Unknown node: join first.");
    else
        hd_resp_json(r, 200,
                     json_pack("{s:I, s:I, s:I, s:I}", "smap_version", (json_int_t)s->version,
                               "smap_term", (json_int_t)s->term, "bmd_version",
                               (json_int_t)b->version, "bmd_term", (json_int_t)b->term));
    hd_smap_unref(s);
    hd_bmd_unref(b);
}

static void on_metasync(struct hd_req *r, void *ctx, json_t *j)
{
    struct hd_proxy *p = ctx;
    int64_t t = (int64_t)json_integer_value(json_object_get(json_object_get(j, "smap"), "term"));
    struct hd_smap *held = hd_smap_state_smap(p->cs);
    int known = held != NULL;

    hd_smap_unref(held);
    if (*p->secret && known && !is_proxy(p, sender_of(r))) {
        hd_resp_err_msg(r, HD_EACCESS, "Only a proxy sends metasync.");
        return;
    }
    /* a primary takes a map only from the primary of a newer term (then it follows) */
    if (p->primary && t > atomic_load(&p->term))
        hd_proxy_term_adopt(p, t, "a map from the primary of a newer term");
    if (p->primary) {
        struct hd_smap *s = hd_smap_state_smap(p->cs);
        hd_resp_json(r, 409,
                     json_pack("{s:s, s:s, s:I, s:I}", "code", "Conflict", "message",
                               "This proxy is the primary of this or a newer term.", "smap_term",
                               (json_int_t)atomic_load(&p->term), "smap_version",
                               (json_int_t)(s ? s->version : 0)));
        hd_smap_unref(s);
        return;
    }
    hd_smap_member_metasync(&p->member, r, j);
}

static void lease_end(struct hd_req *r, void *ctx, json_t *j)
{
    hd_proxy_on_lease(r, ctx, j);
}

static void vote_end(struct hd_req *r, void *ctx, json_t *j)
{
    hd_proxy_on_vote(r, ctx, j);
}

/* Whether r was authenticated by the signature of node id itself (self_maintenance). */
static int by_itself(const struct hd_req *r, const char *id)
{
    return strncmp(r->principal, "node ", 5) == 0 && strcmp(r->principal + 5, id) == 0;
}

/* Whether target id is in maintenance for a restart (flag 4) in our smap. */
static int restart_flagged(struct hd_proxy *p, const char *id)
{
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    const struct hd_node *n = s ? hd_smap_find(s, id) : NULL;
    int yes = n && (n->flags & HD_NODE_RESTART);

    hd_smap_unref(s);
    return yes;
}

/* POST /v1/cluster/{maintenance,decommission}/<id> {"on": bool, "restart": bool}. "restart"
 * (maintenance on only; what hoardd --prestop sends): the maintenance ends by itself when the
 * target joins again, unless it was in maintenance or decommissioning already; its objects
 * move away now (a rebalance), so that they are served while it restarts. A target signed as
 * itself may only ask that, or take it back (hoardd --prestop after a failed wait). */
static void on_flag(struct hd_req *r, void *ctx, json_t *j)
{
    struct hd_proxy *p = ctx;
    int decomm = strncmp(r->raw_path, "/v1/cluster/decommission/", 25) == 0;
    const char *id = strrchr(r->raw_path, '/') + 1;
    json_t *on = json_object_get(j, "on"), *restart = json_object_get(j, "restart");
    unsigned flag = decomm ? HD_NODE_DECOMM : HD_NODE_MAINT;
    struct hd_smap *cur = NULL, *s = NULL;
    const struct hd_node *n;
    struct hd_node copy;
    int rc = 0, set = on ? json_is_true(on) : 1, moves = 0, rs = json_is_true(restart);
    unsigned nflags = 0;

    if ((on && !json_is_boolean(on)) || (restart && !json_is_boolean(restart))) {
        hd_resp_err_msg(r, HD_EBADARG, "Expected {\"on\": true|false, \"restart\": true|false}.");
        return;
    }
    if (rs && (decomm || !set)) {
        hd_resp_err_msg(r, HD_EBADARG, "\"restart\" goes with maintenance on only.");
        return;
    }
    if (by_itself(r, id) && !(set ? rs : restart_flagged(p, id))) {
        hd_resp_err_msg(r, HD_EACCESS,
                        "A target may only ask maintenance for its own restart "
                        "({\"on\": true, \"restart\": true}) and take that back.");
        return;
    }
    if (!p->primary) {
        forward(r, p, j);
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
        char addr[64];
        HD_LOG(HD_WARN, NULL,
               "cluster: down target %s decommissioned and forgotten (asked by %s "
               "from %s)",
               id, r->principal[0] ? r->principal : "anyone (auth off)",
               hd_req_remote(r, addr, sizeof(addr)));
    } else {
        if ((rc = hd_smap_node_copy(&copy, n)) < 0)
            goto unlock;
        if (rs && !copy.flags)
            copy.flags = HD_NODE_MAINT | HD_NODE_RESTART;
        else if (!rs)
            copy.flags =
                set ? copy.flags | flag : copy.flags & ~(flag | (decomm ? 0u : HD_NODE_RESTART));
        /* objects leave a decommissioned target or one about to restart, return after
         * maintenance */
        moves = decomm || !set || rs;
        nflags = copy.flags;
        rc = hd_smap_put(s, &copy);
        hd_smap_node_cleanup(&copy);
        if (rc < 0)
            goto unlock;
        char addr[64];
        HD_LOG(HD_INFO, NULL, "cluster: %s %s %s%s (asked by %s from %s)", id,
               decomm ? "decommissioning" : "maintenance", set ? "on" : "off",
               !rs                        ? ""
               : nflags & HD_NODE_RESTART ? " until it rejoins after its restart"
                                          : " (already flagged: kept after its restart)",
               r->principal[0] ? r->principal : "anyone (auth off)",
               hd_req_remote(r, addr, sizeof(addr)));
    }
    s->version++;
    if (moves)
        hd_proxy_rebalance_mark(p, s);
    rc = hd_proxy_smap_install(p, s);
unlock:
    pthread_mutex_unlock(&p->mu);
    if (rc == 0) /* targets learn the new owners before the caller hears back */
        hd_proxy_sync_now(p);
    if (rc == HD_ENOTFOUND) {
        hd_resp_err_msg(r, rc, "No such target in the cluster map.");
    } else if (rc < 0) {
        hd_resp_err(r, rc);
    } else {
        hd_resp_json(r, 200, smap_view(p, s));
        hd_proxy_wake(p);
    }
    hd_smap_unref(cur);
    hd_smap_unref(s);
}

/* POST /v1/cluster/maintenance/<id> signed by target <id> itself (hoardd --prestop): 0 when
 * the signature is good, HD_DONE after refusing r, HD_DECLINED when r is no such call. */
static int self_maintenance(struct hd_req *r, struct hd_proxy *p, const char *id)
{
    struct hd_nodeauth_who who;
    struct hd_smap *s;
    const struct hd_node *n;
    int target;

    if (!hd_nodeauth_on(p->na) || strcmp(sender_of(r), id) != 0)
        return HD_DECLINED;
    s = hd_smap_state_smap(p->cs);
    n = s ? hd_smap_find(s, id) : NULL;
    target = n && n->type == HD_NODE_TARGET;
    hd_smap_unref(s);
    if (!target)
        return HD_DECLINED;
    return hd_proxy_node_verify(r, p, 0, &who); /* its sender is the X-Hoard-Node checked */
}

/* Cluster reads (smap, BMD): a node's signature, or any valid client key (none needed with
 * auth off). 0, or HD_DONE after refusing r. */
static int read_auth(struct hd_req *r, struct hd_proxy *p)
{
    struct hd_nodeauth_who who;
    struct hd_sigv4_auth a;
    int rc = hd_proxy_node_verify(r, p, HD_NA_ANY_TO, &who);

    if (rc != HD_DECLINED)
        return rc;
    if (!*p->secret && p->keys.n == 0)
        return 0;
    rc = hd_proxy_auth(r, p, NULL, &a);
    if (rc == 0 && a.anonymous && p->keys.n > 0)
        rc = HD_EMISSINGAUTH;
    if (rc == 0 && !a.anonymous)
        return 0;
    hd_resp_err_msg(r, rc < 0 ? rc : HD_EACCESS,
                    "Reading the cluster map needs a client key or a node signature.");
    return HD_DONE;
}

void hd_proxy_cluster_handle(struct hd_req *r, struct hd_proxy *p)
{
    const char *path = r->raw_path, *m = r->method;
    int get = strcmp(m, "GET") == 0, flags, rc;
    struct hd_nodeauth_who who;
    struct hd_smap *s;
    struct hd_bmd *b;

    if (get && (strcmp(path, "/v1/cluster") == 0 || strcmp(path, "/v1/cluster/smap") == 0)) {
        if (read_auth(r, p) == HD_DONE)
            return;
        s = hd_smap_state_smap(p->cs);
        if (!s)
            hd_resp_err_msg(r, HD_EUNAVAIL, "This proxy has not joined a cluster yet.");
        else
            hd_resp_json(r, 200, path[11] ? hd_smap_to_json(s) : smap_view(p, s));
        hd_smap_unref(s);
        return;
    }
    if (get && strcmp(path, "/v1/cluster/bmd") == 0) {
        if (read_auth(r, p) == HD_DONE)
            return;
        b = hd_smap_state_bmd(p->cs);
        hd_resp_json(r, 200, hd_bmd_to_json(b));
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
        rc = path[12] == 'm' ? self_maintenance(r, p, path + 24) : HD_DECLINED;
        if (rc == HD_DONE)
            return;
        if (rc == HD_DECLINED)
            rc = hd_proxy_auth_admin(r, p);
        if (rc < 0)
            hd_resp_err_msg(r, rc,
                            "Cluster administration needs another proxy's signature or a key "
                            "with rw access to all buckets (a target may ask maintenance for "
                            "itself).");
        else
            hd_req_read_json(r, BODY_MAX, on_flag, p, NULL);
        return;
    }
    if (strcmp(m, "POST") == 0 && strcmp(path, "/v1/cluster/rebalance") == 0) {
        rc = hd_proxy_auth_admin(r, p);
        if (rc < 0) {
            hd_resp_err(r, rc);
        } else {
            hd_proxy_rebalance_reply(r, p);
            hd_proxy_wake(p);
        }
        return;
    }
    /* node calls: signed by a node we know, for us; a join or heartbeat by any holder of a
     * node key, for anyone (it may not know our id yet; a node we forgot hears 404 and joins
     * again, a decommissioned one 410) */
    flags = strcmp(path, "/v1/cluster/join") == 0 || strcmp(path, "/v1/cluster/heartbeat") == 0
                ? HD_NA_ANY_TO | HD_NA_UNKNOWN
                : 0;
    s = hd_smap_state_smap(p->cs);
    if (!s && strcmp(path, "/v1/metasync") == 0)
        flags |= HD_NA_UNKNOWN; /* joining: the primary's push may precede our join's answer */
    hd_smap_unref(s);
    rc = hd_proxy_node_verify(r, p, flags, &who);
    if (rc == HD_DONE)
        return;
    if (rc == HD_DECLINED && *p->secret) {
        hd_stats_inc(HD_ST_AUTH_FAILED);
        hd_resp_err_msg(r, HD_EACCESS, "Cluster calls must carry a node signature.");
        return;
    }
    if ((strcmp(path, "/v1/cluster/lease") == 0 || strcmp(path, "/v1/cluster/vote") == 0) &&
        strcmp(m, "POST") == 0) {
        if (*p->secret && !is_proxy(p, sender_of(r))) {
            hd_resp_err_msg(r, HD_EACCESS, "Only proxies of this map take part in elections.");
            return;
        }
        hd_req_read_json(r, BODY_MAX, path[12] == 'l' ? lease_end : vote_end, p, NULL);
    } else if (strcmp(m, "POST") == 0 && strcmp(path, "/v1/cluster/join") == 0)
        hd_req_read_json(r, BODY_MAX, on_join, p, NULL);
    else if (strcmp(m, "POST") == 0 && strcmp(path, "/v1/cluster/heartbeat") == 0)
        hd_req_read_json(r, BODY_MAX, on_heartbeat, p, NULL);
    else if (strcmp(m, "PUT") == 0 && strcmp(path, "/v1/metasync") == 0)
        hd_req_read_json(r, BODY_MAX, on_metasync, p, NULL);
    else
        hd_resp_err(r, HD_EMETHOD);
}
