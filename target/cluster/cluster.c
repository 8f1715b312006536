#include "target/cluster/cluster.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/hrw.h"
#include "common/json.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/nodeauth.h"
#include "common/pool.h"
#include "common/smap.h"
#include "common/ticker.h"
#include "common/tls.h"
#include "target/store/store.h"

#define TCL_MAGIC 0x74636c31u /* "tcl1" */
#define BODY_MAX (4u << 20)

struct hd_tcluster {
    uint32_t magic;
    int standalone; /* no cluster.join: only the node id (health) is ours */
    struct hd_store *st;
    struct hd_pool *pool;      /* waits for the join off the HTTP workers */
    struct hd_bmd_hooks hooks; /* set before the loop starts */
    struct hd_smap_state *cs;
    struct hd_node self;
    char join[HD_NODE_URL_MAX];
    char *secret;
    struct hd_nodeauth *na; /* our node signatures, and the checks of others' */
    long hb_ms;
    struct hd_smap_member member; /* loop thread only */
    pthread_mutex_t apply_mu;     /* one BMD accept+apply at a time */
    atomic_int joined;
    int fresh; /* started without a held smap (a new node) */

    struct hd_ticker ticker; /* joins and heartbeats */
    atomic_int stopping;
};

/* ---- BMD -> store ---- */

/* Whether the store already holds the BMD entry's props (upstream, validate_warm_get...). */
static int props_same(struct hd_store *st, const struct hd_bmd_bucket *e)
{
    char *have = NULL;
    int same;

    if (hd_store_bucket_props(st, e->name, &have) < 0)
        return 0;
    same = hd_bmd_props_equal(have, e->props);
    free(have);
    return same;
}

/* Makes the store match b: creates missing buckets, sets props, and destroys the buckets
 * that prev had and b has not (only those: local buckets that never were in the BMD stay). */
static void apply_to_store(struct hd_tcluster *c, struct hd_bmd *prev, struct hd_bmd *b)
{
    struct hd_store *st = c->st;
    struct hd_bucket_info bi;
    size_t i;
    int rc;

    for (i = 0; i < b->n; i++) {
        const struct hd_bmd_bucket *e = &b->b[i];
        rc = hd_store_bucket_create(st, e->name, e->provider);
        if (rc < 0 && rc != HD_EBUCKETEXISTS) {
            HD_LOG(HD_ERROR, NULL, "cluster: cannot create bucket %s: %s", e->name,
                   hd_strerror(rc));
            continue;
        }
        if (hd_store_bucket_get(st, e->name, &bi) == 0 &&
            (bi.public_objects != e->public_objects || bi.public_list != e->public_list ||
             !props_same(st, e)))
            hd_store_bucket_set_props(st, e->name, e->props ? e->props : "{}");
    }
    for (i = 0; prev && i < prev->n; i++) {
        const char *name = prev->b[i].name;
        if (hd_bmd_find(b, name))
            continue;
        rc = hd_store_bucket_destroy(st, name);
        if (rc == 0 && c->hooks.bucket_gone)
            c->hooks.bucket_gone(c->hooks.arg, name);
        if (rc < 0 && rc != HD_ENOSUCHBUCKET)
            HD_LOG(HD_ERROR, NULL, "cluster: cannot destroy bucket %s: %s", name, hd_strerror(rc));
        else
            HD_LOG(HD_INFO, NULL, "cluster: bucket %s destroyed (BMD v%lld)", name,
                   (long long)b->version);
    }
}

static int set_bmd(void *arg, struct hd_bmd *b, int force)
{
    struct hd_tcluster *c = arg;
    struct hd_bmd *prev = NULL;
    int rc;

    pthread_mutex_lock(&c->apply_mu);
    rc = hd_smap_state_set_bmd(c->cs, b, force, &prev);
    if (rc == 0) {
        apply_to_store(c, prev, b);
        if (c->hooks.applied)
            c->hooks.applied(c->hooks.arg);
    }
    pthread_mutex_unlock(&c->apply_mu);
    hd_bmd_unref(prev);
    return rc;
}

/* ---- setup and the loop thread ---- */

static int self_entry(struct hd_tcluster *c, const struct hd_config *cfg)
{
    const char *url = hd_config_str(cfg, "public_url"), *mps = hd_config_str(cfg, "mountpaths");
    char *dup, *save = NULL, *tok, **v;
    struct hd_buf b;

    hd_buf_init(&b);
    if (*url)
        hd_buf_puts(&b, url);
    else
        hd_buf_printf(&b, "%s://%s", hd_tls_scheme(), hd_config_str(cfg, "listen"));
    while (b.len && b.data[b.len - 1] == '/')
        b.data[--b.len] = '\0';
    if (b.oom || b.len >= sizeof(c->self.url)) {
        hd_buf_cleanup(&b);
        return -EINVAL;
    }
    memcpy(c->self.url, b.data, b.len + 1);
    hd_buf_reset(&b);
    if (!*mps) {
        hd_buf_printf(&b, "%s/mp1", hd_config_str(cfg, "data"));
        mps = b.data ? b.data : "";
    }
    dup = strdup(mps);
    hd_buf_cleanup(&b);
    if (!dup)
        return -ENOMEM;
    for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        v = realloc(c->self.mountpaths, (c->self.nmp + 1) * sizeof(*v));
        if (!v || !(v[c->self.nmp] = strdup(tok))) {
            if (v)
                c->self.mountpaths = v;
            free(dup);
            return -ENOMEM;
        }
        c->self.mountpaths = v;
        c->self.nmp++;
    }
    free(dup);
    c->self.type = HD_NODE_TARGET;
    c->self.caps = HD_NODE_CAP_SIGNED_ADMIN | HD_NODE_CAP_SIGNED_BUCKETS;
    return 0;
}

void hd_tcluster_set_hooks(struct hd_tcluster *c, const struct hd_bmd_hooks *hooks)
{
    c->hooks = *hooks;
}

struct hd_store *hd_tcluster_store(const struct hd_tcluster *c)
{
    return c->st;
}

int hd_tcluster_new(const struct hd_config *cfg, struct hd_store *st, struct hd_pool *pool,
                    struct hd_tcluster **out)
{
    struct hd_tcluster *c = calloc(1, sizeof(*c));
    struct hd_bmd *held;
    long long dead_after = hd_config_int(cfg, "cluster.dead_after");
    int rc;

    if (!c)
        return -ENOMEM;
    c->magic = TCL_MAGIC;
    c->st = st;
    c->pool = pool;
    pthread_mutex_init(&c->apply_mu, NULL);
    c->hb_ms = (long)hd_config_int(cfg, "cluster.heartbeat_ms");
    snprintf(c->join, sizeof(c->join), "%s", hd_config_str(cfg, "cluster.join"));
    while (*c->join && c->join[strlen(c->join) - 1] == '/')
        c->join[strlen(c->join) - 1] = '\0';
    if (!(c->secret = strdup(hd_config_str(cfg, "cluster.secret")))) {
        rc = -ENOMEM;
        goto fail;
    }
    if ((rc = self_entry(c, cfg)) < 0)
        goto fail;
    if ((rc = hd_smap_state_open(hd_config_str(cfg, "data"), &c->cs)) < 0)
        goto fail;
    if ((rc = hd_smap_state_node_id(c->cs, hd_config_str(cfg, "node.id"), 't', c->self.id)) < 0) {
        HD_LOG(HD_ERROR, NULL, "node.id: cannot set up the node id: %s", hd_strerror(rc));
        goto fail;
    }
    if ((rc = hd_nodeauth_new(c->secret, c->self.id, &c->na)) < 0)
        goto fail;
    c->standalone = !*c->join;
    {
        struct hd_smap *prev = hd_smap_state_smap(c->cs);
        c->fresh = !prev; /* never joined: nothing to serve until the first join applies */
        hd_smap_unref(prev);
    }
    if (c->standalone) {
        *out = c;
        return 0;
    }
    /* buckets of the BMD we held when we stopped (nothing is destroyed at startup) */
    held = hd_smap_state_bmd(c->cs);
    apply_to_store(c, NULL, held);
    hd_bmd_unref(held);
    c->member.st = c->cs;
    c->member.self = &c->self;
    c->member.join_url = c->join;
    c->member.na = c->na;
    c->member.timeout_ms = c->hb_ms * dead_after / 2 > 2000 ? c->hb_ms * dead_after / 2 : 2000;
    c->member.set_bmd = set_bmd;
    c->member.arg = c;
    HD_LOG(HD_INFO, NULL, "cluster: target %s (%s) joining %s", c->self.id, c->self.url, c->join);
    *out = c;
    return 0;
fail:
    hd_tcluster_free(c);
    return rc;
}

static void on_tick(void *arg)
{
    struct hd_tcluster *c = arg;

    hd_smap_member_tick(&c->member);
    atomic_store(&c->joined, c->member.joined);
}

int hd_tcluster_start(struct hd_tcluster *c)
{
    if (!c || c->standalone)
        return 0;
    return hd_ticker_start(&c->ticker, "target-loop", (uint64_t)c->hb_ms, on_tick, NULL, c);
}

void hd_tcluster_stop(struct hd_tcluster *c)
{
    if (!c)
        return;
    atomic_store(&c->stopping, 1); /* waits for the join give up */
    hd_ticker_stop(&c->ticker);
}

void hd_tcluster_free(struct hd_tcluster *c)
{
    if (!c)
        return;
    hd_tcluster_stop(c);
    hd_smap_state_close(c->cs);
    hd_smap_node_cleanup(&c->self);
    free(c->secret);
    hd_nodeauth_free(c->na);
    pthread_mutex_destroy(&c->apply_mu);
    c->magic = 0;
    free(c);
}

/* ---- requests ---- */

/* Joined, and the smap we hold has us as a live target (standalone: always). */
static int ready(struct hd_tcluster *c, struct hd_smap *s)
{
    const struct hd_node *n = s ? hd_smap_find(s, c->self.id) : NULL;

    return c->standalone || (atomic_load(&c->joined) && n && !n->down);
}

static void health(struct hd_tcluster *c, struct hd_req *r)
{
    const char *want = hd_req_param(r, "ready");
    struct hd_smap *s = hd_smap_state_smap(c->cs);
    int ok = ready(c, s);
    json_t *j;

    r->op = HD_OP_ADMIN;
    j = json_pack("{s:s, s:s, s:s, s:b, s:I}", "status", ok ? "ok" : "joining", "role", "target",
                  "id", c->self.id, "ready", ok, "smap_version", (json_int_t)(s ? s->version : 0));
    hd_smap_unref(s);
    hd_resp_json(r, want && strcmp(want, "false") != 0 && !ok ? 503 : 200, j);
}

static void metasync_end(struct hd_req *r, void *ctx, json_t *j)
{
    struct hd_tcluster *c = ctx;

    hd_smap_member_metasync(&c->member, r, j);
}

static int known_node(void *arg, const char *id)
{
    struct hd_tcluster *c = arg;
    struct hd_smap *s = hd_smap_state_smap(c->cs);
    int yes = hd_smap_find(s, id) != NULL;

    hd_smap_unref(s);
    return yes;
}

/* r's node signature: 0 (verified; *who filled), HD_DECLINED (none), or HD_DONE after
 * refusing r (logged). */
static int node_verify(struct hd_tcluster *c, struct hd_req *r, int flags,
                       struct hd_nodeauth_who *who)
{
    const char *why = NULL, *node;
    char addr[64];
    int rc = hd_nodeauth_verify(c->na, r, flags, known_node, c, who, &why);

    if (rc == 0 || rc == HD_DECLINED)
        return rc;
    node = hd_req_header(r, "X-Hoard-Node");
    hd_stats_inc(HD_ST_AUTH_FAILED);
    HD_LOG(HD_WARN, NULL, "auth: node call %s %s from %s (X-Hoard-Node %s) refused: %s", r->method,
           r->raw_path, hd_req_remote(r, addr, sizeof(addr)), node ? node : "-", why);
    r->api = strncmp(r->raw_path, "/v1/", 4) == 0 ? HD_API_NATIVE : HD_API_S3;
    hd_resp_err_msg(r, rc, why);
    return HD_DONE;
}

static int sender_is_proxy(struct hd_tcluster *c, const char *id)
{
    struct hd_smap *s = hd_smap_state_smap(c->cs);
    const struct hd_node *n = hd_smap_find(s, id);
    int yes = n && n->type == HD_NODE_PROXY;

    hd_smap_unref(s);
    return yes;
}

void hd_tcluster_sign_answers(struct hd_tcluster *c, struct hd_req *r)
{
    if (*c->secret)
        hd_nodeauth_sign_answers(c->na, r);
}

int hd_tcluster_from_proxy(struct hd_tcluster *c, struct hd_req *r)
{
    const char *node = hd_req_header(r, "X-Hoard-Node"); /* verified, taken once */

    if (!*c->secret)
        return 1;
    return r->trusted == HD_TRUST_NODE && node && sender_is_proxy(c, node);
}

static void cluster_call(struct hd_tcluster *c, struct hd_req *r)
{
    const char *p = r->raw_path, *m = r->method;
    struct hd_nodeauth_who who;
    struct hd_smap *s;
    struct hd_bmd *b;
    json_t *j;
    int get = strcmp(m, "GET") == 0, rc, flags;

    r->api = HD_API_NATIVE;
    r->op = HD_OP_ADMIN;
    /* reads: a node (for anyone: a node that lost track of the primary asks around), or a
     * client key; the metasync push: a proxy of our map, for us */
    s = hd_smap_state_smap(c->cs);
    flags = get ? HD_NA_ANY_TO : 0;
    if (!s) /* joining: the primary's first push may come before our join's answer */
        flags |= HD_NA_UNKNOWN;
    hd_smap_unref(s);
    rc = node_verify(c, r, flags, &who);
    if (rc == HD_DONE)
        return;
    if (rc == 0) {
        hd_nodeauth_sign_answers(c->na, r);
    } else if (*c->secret && !(get && c->hooks.client_ok && c->hooks.client_ok(c->hooks.arg, r))) {
        hd_stats_inc(HD_ST_AUTH_FAILED);
        hd_resp_err_msg(r, HD_EACCESS,
                        get ? "Reading the cluster map needs a client key or a node signature."
                            : "Cluster calls must carry a node signature.");
        return;
    }
    if (get && (strcmp(p, "/v1/cluster") == 0 || strcmp(p, "/v1/cluster/smap") == 0)) {
        s = hd_smap_state_smap(c->cs);
        if (!s) {
            hd_resp_err_msg(r, HD_EUNAVAIL, "This target has not joined a cluster yet.");
            return;
        }
        j = hd_smap_to_json(s);
        if (j && !p[11])
            json_object_set_new(j, "self", json_string(c->self.id));
        hd_smap_unref(s);
        hd_resp_json(r, 200, j);
        return;
    }
    if (get && strcmp(p, "/v1/cluster/bmd") == 0) {
        b = hd_smap_state_bmd(c->cs);
        hd_resp_json(r, 200, hd_bmd_to_json(b));
        hd_bmd_unref(b);
        return;
    }
    if (strcmp(m, "PUT") != 0 || strcmp(p, "/v1/metasync") != 0) {
        hd_resp_err(r, get ? HD_ENOTFOUND : HD_EMETHOD);
        return;
    }
    if (*c->secret && (flags & HD_NA_UNKNOWN) == 0 && !sender_is_proxy(c, who.sender)) {
        hd_stats_inc(HD_ST_AUTH_FAILED);
        hd_resp_err_msg(r, HD_EACCESS, "Only a proxy sends metasync.");
        return;
    }
    hd_req_read_json(r, BODY_MAX, metasync_end, c, NULL);
}

/* Removes pid, ptime, psig, psv and ppub from the raw query (in place: it lives in
 * r->raw_uri) and parses the rest again, so SigV4 sees the query the client signed. */
static int strip_sig(struct hd_req *r)
{
    char *q = (char *)r->raw_query, *rd = q, *w = q;
    int found = 0;

    if (!*q)
        return 0;
    while (*rd) {
        size_t n = strcspn(rd, "&"), k = strcspn(rd, "=&");
        int drop =
            (k == 3 && strncmp(rd, "pid", 3) == 0) || (k == 5 && strncmp(rd, "ptime", 5) == 0) ||
            (k == 4 && strncmp(rd, "psig", 4) == 0) || (k == 3 && strncmp(rd, "psv", 3) == 0) ||
            (k == 4 && strncmp(rd, "ppub", 4) == 0);
        if (drop) {
            found = 1;
        } else if (n) {
            if (w != q)
                *w++ = '&';
            memmove(w, rd, n);
            w += n;
        }
        rd += n;
        if (*rd == '&')
            rd++;
    }
    *w = '\0';
    if (!found)
        return 0;
    hd_query_free(&r->query);
    return hd_query_parse(r->raw_query, &r->query);
}

/* A redirect's capability (pid, ptime, psig, psv in the query): 0 when a proxy of our map
 * signed it for us and it has not expired; HD_EEXPIRED; HD_EACCESS. */
static int check_psig(struct hd_tcluster *c, struct hd_req *r)
{
    const char *pid = hd_req_param(r, "pid"), *pt = hd_req_param(r, "ptime");
    const char *ps = hd_req_param(r, "psig");
    const char *src = hd_req_header(r, "x-amz-copy-source");
    int64_t ptime;

    if (!pid || !pt || !ps || hd_parse_i64(pt, &ptime) < 0 || !sender_is_proxy(c, pid))
        return HD_EACCESS;
    /* a native copy's source (AIStore's Object.copy()) comes in the query: the signature is
     * bound to it, and to only one source (never both forms) */
    if (hd_query_find(&r->query, "object_from")) {
        if (src)
            return HD_EACCESS;
        src = hd_req_param(r, "object_from");
    }
    return hd_nodeauth_psig_check(c->na, pid, r->method, r->raw_path, r->raw_query,
                                  (long long)ptime, src, hd_req_param(r, "psv"), ps);
}

/* The map version the proxy routed r by (authenticated with the rest), for a GET that misses
 * while this target's map is older (target/cluster/rebalance.c: it waits for that map). */
static void routed_by(struct hd_req *r, const char *v)
{
    int64_t t, n;

    if (v && hd_smap_vparse(v, &t, &n) == 0) {
        r->routed_term = t;
        r->routed_version = n;
    }
}

static void wait_join(void *arg)
{
    hd_tcluster_wait_joined(arg, 10000);
}

int hd_tcluster_handle(struct hd_tcluster *c, struct hd_req *r)
{
    const char *p = r->raw_path;
    struct hd_nodeauth_who who;
    const char *pp;
    int rc;

    if (!c || c->magic != TCL_MAGIC)
        return HD_OK;
    if (strcmp(p, "/v1/health") == 0) {
        r->api = HD_API_NATIVE;
        health(c, r);
        return HD_DONE;
    }
    if (strcmp(p, "/metrics") == 0 || c->standalone)
        return HD_OK;
    if (strcmp(p, "/v1/cluster") == 0 || strncmp(p, "/v1/cluster/", 12) == 0 ||
        strcmp(p, "/v1/metasync") == 0) {
        cluster_call(c, r);
        return HD_DONE;
    }
    /* a proxy added us and sent a client before our join's answer arrived: wait for it on
     * the pool (the proxy's signature can be checked then), once */
    if (c->fresh && !atomic_load(&c->joined) && !r->deferrals &&
        hd_pool_defer(c->pool, r, wait_join, c, NULL) == HD_AGAIN)
        return HD_AGAIN;
    /* a node's own call (a proxy's relay or fan-out, another target) */
    rc = node_verify(c, r, 0, &who);
    if (rc == HD_DONE)
        return HD_DONE;
    if (rc == 0) {
        const char *ps = hd_req_header(r, "X-Hoard-Public-Source");
        r->trusted = HD_TRUST_NODE;
        r->public_source = ps && strcmp(ps, "1") == 0; /* signed: the proxy's authorisation */
        routed_by(r, hd_req_header(r, "X-Hoard-Smap"));
        return HD_OK;
    }
    /* a client sent here by a proxy's 307 */
    if (hd_req_param(r, "psig") && *c->secret) {
        rc = check_psig(c, r);
        if (rc < 0) {
            r->api = strncmp(p, "/v1/", 4) == 0 ? HD_API_NATIVE : HD_API_S3;
            hd_stats_inc(HD_ST_AUTH_FAILED);
            hd_resp_err_msg(r, HD_EACCESS,
                            rc == HD_EEXPIRED
                                ? "The proxy signature has expired: request must come through a "
                                  "proxy again."
                                : "Access Denied: request must come through a proxy.");
            return HD_DONE;
        }
        r->trusted = HD_TRUST_REDIRECT;
        /* given because the bucket is public (signed with the rest of the query): the
         * bucket must still be (hd_target_authorize) */
        pp = hd_req_param(r, "ppub");
        r->public_grant = pp && strcmp(pp, "1") == 0;
    } else if (*c->secret) {
        r->api = strncmp(p, "/v1/", 4) == 0 ? HD_API_NATIVE : HD_API_S3;
        hd_stats_inc(HD_ST_AUTH_FAILED);
        hd_resp_err_msg(r, HD_EACCESS, "Access Denied: request must come through a proxy.");
        return HD_DONE;
    }
    /* without a secret (dev mode, which main() allows only without auth.keys) nothing is
     * checked: a redirect is taken as such */
    routed_by(r, hd_req_param(r, "psv"));
    if ((rc = strip_sig(r)) < 0) {
        hd_resp_err_msg(r, rc, "The query string is malformed.");
        return HD_DONE;
    }
    return HD_OK;
}

struct hd_smap *hd_tcluster_smap(struct hd_tcluster *c)
{
    return c && !c->standalone ? hd_smap_state_smap(c->cs) : NULL;
}

int hd_tcluster_joined(const struct hd_tcluster *c)
{
    return !c || c->standalone || atomic_load(&c->joined);
}

int hd_tcluster_wait_joined(struct hd_tcluster *c, int ms)
{
    struct timespec ts = {0, 10 * 1000000L};

    if (!c || c->standalone)
        return 1;
    for (; !atomic_load(&c->joined) && ms > 0 && !atomic_load(&c->stopping); ms -= 10)
        nanosleep(&ts, NULL);
    return atomic_load(&c->joined);
}

const char *hd_tcluster_id(const struct hd_tcluster *c)
{
    return c->self.id;
}

int hd_tcluster_owns(const struct hd_tcluster *c, const struct hd_smap *s, const char *provider,
                     const char *bucket, const char *name)
{
    const struct hd_node *owner = NULL;
    struct hd_buf u;

    if (!s)
        return 1;
    hd_buf_init(&u);
    hd_hrw_uname(&u, provider, NULL, bucket, name);
    if (!u.oom)
        hd_smap_owner(s, u.data, u.len, &owner);
    hd_buf_cleanup(&u);
    return owner && strcmp(owner->id, c->self.id) == 0;
}

struct hd_nodeauth *hd_tcluster_nodeauth(const struct hd_tcluster *c)
{
    return c->na;
}

const char *hd_tcluster_secret(const struct hd_tcluster *c)
{
    return c && c->secret ? c->secret : "";
}

int hd_tcluster_token_revoked(void *arg, const char *id)
{
    struct hd_tcluster *c = arg;
    struct hd_bmd *b;
    int yes;

    if (!c || c->standalone)
        return 0;
    b = hd_smap_state_bmd(c->cs);
    yes = hd_bmd_is_revoked(b, id, (int64_t)time(NULL));
    hd_bmd_unref(b);
    return yes;
}
