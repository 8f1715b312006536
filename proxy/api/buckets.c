/* bucket: buckets live in the BMD. The primary changes it (one version per change, persisted,
 * then pushed to every node before the caller is answered, so a PUT right after CreateBucket
 * finds the bucket on its target); other proxies ask the primary through its native API.
 * Native /v1/buckets[/B] handlers. Runs on HTTP workers (the fan-out is bounded). */
#include "proxy/api/api.h"
#include "proxy/cluster/cluster.h"
#include "proxy/data/data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/bprops.h"
#include "common/buf.h"
#include "common/errors.h"
#include "common/httputil.h"
#include "common/json.h"
#include "common/log.h"
#include "common/metrics.h"

/* ---- native handlers ---- */

/* Whether r carries a body (AIStore clients send their action messages as JSON bodies, on
 * GET and DELETE too; hoard's own native calls send none there). */
static int has_body(const struct hd_req *r)
{
    return r->content_length > 0 ||
           (r->content_length < 0 && hd_req_header(r, "Transfer-Encoding"));
}

/* The "action" of an AIStore action message ({"action": A, "name", "value"}), or NULL. */
static const char *action_of(const json_t *j)
{
    return json_string_value(json_object_get(j, "action"));
}

struct act_ctx {
    struct hd_proxy *p;
    char bucket[64];
    struct hd_sigv4_auth a; /* who asked (copy-bck authorises its destination too) */
};

static void list_buckets(struct hd_req *r, struct hd_proxy *p)
{
    struct hd_bmd *b = hd_smap_state_bmd(p->cs);
    json_t *arr = json_array();
    char ts[32];
    size_t i;

    for (i = 0; i < b->n; i++) {
        hd_iso8601((time_t)b->b[i].created, ts);
        json_array_append_new(arr, json_pack("{s:s, s:s, s:s}", "name", b->b[i].name, "provider",
                                             b->b[i].provider, "created", ts));
    }
    hd_bmd_unref(b);
    hd_resp_json(r, 200, json_pack("{s:o}", "buckets", arr));
}

static void list_buckets_end(struct hd_req *r, void *ctx, json_t *j)
{
    const char *act = action_of(j);

    if (act && strcmp(act, "list") == 0)
        hd_proxy_ais_list_buckets(r, ctx);
    else if (act)
        hd_resp_err_msg(r, HD_ENOTIMPL, "GET /v1/buckets takes the action \"list\" only.");
    else
        list_buckets(r, ctx);
}

/* Whether a is allowed to read bucket by its own rights, not only by what the bucket lets
 * everyone do (auth off, another node, or a key with read access). */
static int own_rights(struct hd_proxy *p, const struct hd_sigv4_auth *a, const char *bucket)
{
    const struct hd_key *k;

    if (p->keys.n == 0 || !a->access_key[0])
        return 1;
    return (k = hd_keys_find(&p->keys, a->access_key)) && hd_key_allows(k, bucket, 0) == 0;
}

/* GET /v1/buckets/B with an action message: AIStore's list objects. */
static void bucket_get_end(struct hd_req *r, void *ctx, json_t *j)
{
    struct act_ctx *c = ctx;
    const char *act = action_of(j);

    if (!act)
        hd_proxy_list_native(r, c->p, c->bucket);
    else if (strcmp(act, "list") == 0)
        hd_proxy_ais_list_objects(r, c->p, c->bucket, json_object_get(j, "value"));
    else if (c->a.anonymous && c->p->keys.n)
        hd_resp_err(r, HD_EMISSINGAUTH); /* a public bucket's listing, not its jobs (bucket_pub) */
    else if (!own_rights(c->p, &c->a, c->bucket))
        hd_resp_err(r, HD_EACCESS); /* a key let in by a public listing (hd_keys_authorize) */
    else
        hd_proxy_ais_bucket_job(r, c->p, c->bucket, &c->a, j);
}

/* DELETE /v1/buckets/B with an action message: destroy-bck is the plain DELETE. */
static void bucket_delete_end(struct hd_req *r, void *ctx, json_t *j)
{
    struct act_ctx *c = ctx;
    const char *act = action_of(j);
    char msg[256] = "";
    int rc;

    if (act && strcmp(act, "destroy-bck") != 0) {
        hd_proxy_ais_bucket_job(r, c->p, c->bucket, &c->a, j); /* evict */
        return;
    }
    rc = hd_proxy_bucket_destroy(c->p, c->bucket, msg, sizeof(msg));
    rc < 0 ? hd_resp_err_msg(r, rc, msg[0] ? msg : NULL) : hd_resp_empty(r, act ? 200 : 204);
}

static void act_read(struct hd_req *r, struct hd_proxy *p, const char *bucket,
                     const struct hd_sigv4_auth *a, hd_json_fn fn)
{
    struct act_ctx *c = calloc(1, sizeof(*c));

    if (!c) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    c->p = p;
    c->a = *a;
    snprintf(c->bucket, sizeof(c->bucket), "%s", bucket);
    hd_req_read_json(r, (size_t)64 << 10, fn, c, free);
}

static void props_get(struct hd_req *r, struct hd_proxy *p, const char *name)
{
    struct hd_bmd *b = hd_smap_state_bmd(p->cs);
    const struct hd_bmd_bucket *e = hd_bmd_find(b, name);
    json_t *props;
    char ts[32];

    if (!e) {
        hd_bmd_unref(b);
        hd_resp_err(r, HD_ENOSUCHBUCKET);
        return;
    }
    props = e->props ? json_loads(e->props, 0, NULL) : NULL;
    if (!props)
        props = json_object();
    if (!json_object_get(props, "anonymous_read"))
        json_object_set_new(props, "anonymous_read", json_false());
    if (strcmp(e->provider, "aws") == 0 && !json_object_get(props, "validate_warm_get"))
        json_object_set_new(props, "validate_warm_get", json_false());
    if (strcmp(e->provider, "aws") == 0 && !json_object_get(props, "validate_cold_get"))
        json_object_set_new(props, "validate_cold_get", json_true());
    if (strcmp(e->provider, "aws") == 0 && !json_object_get(props, "write_policy"))
        json_object_set_new(props, "write_policy", json_string("through"));
    hd_iso8601((time_t)e->created, ts);
    hd_resp_json(r, 200,
                 json_pack("{s:s, s:s, s:s, s:o}", "name", e->name, "provider", e->provider,
                           "created", ts, "props", props));
    hd_bmd_unref(b);
}

struct props_ctx {
    struct hd_proxy *p;
    char bucket[64];
    int create; /* POST /v1/buckets/B[?provider=aws] with a props body */
    int admin;  /* may set "upstream" (see may_set_upstream) */
    char provider[8];
    struct hd_sigv4_auth a; /* who asked (AIStore job actions) */
};

/* An S3-backed bucket's upstream (endpoint, profile, upstream bucket) decides which of the
 * nodes' credentials are used against which server: only an admin (a key with rw on every
 * bucket, or another proxy) may choose it. A key with rw on bucket B alone could otherwise
 * point B at another team's upstream bucket with that team's profile, or at any address the
 * targets can reach. a: what hd_proxy_auth said about the request. */
static int may_set_upstream(const struct hd_proxy *p, const struct hd_sigv4_auth *a)
{
    const struct hd_key *k;

    if (p->keys.n == 0)
        return 1; /* auth off */
    if (hd_proxy_auth_by_node(a))
        return 1; /* another proxy of the cluster (its node signature) */
    k = !a->anonymous ? hd_keys_find(&p->keys, a->access_key) : NULL;
    return k && k->all == HD_PERM_RW;
}

/* 0, or HD_EACCESS (answered) when body sets "upstream" and the caller may not. */
static int upstream_check(struct hd_req *r, const struct props_ctx *c, const char *body, size_t len)
{
    json_t *j = !c->admin && len ? json_loadb(body, len, 0, NULL) : NULL;
    int set = j && json_object_get(j, "upstream") != NULL;

    json_decref(j);
    if (!set)
        return 0;
    hd_stats_inc(HD_ST_AUTH_FAILED);
    hd_resp_err_msg(r, HD_EACCESS,
                    "Only a key with rw on every bucket may set a bucket's upstream (endpoint, "
                    "profile, bucket): it decides which credentials the cluster uses where.");
    return HD_EACCESS;
}

/* Creates c->bucket with the props in the body (S3-backed buckets: the upstream). */
static void create_end(struct hd_req *r, struct props_ctx *c, const char *body, size_t len)
{
    char msg[256] = "", *props = NULL;
    json_t *j = len ? json_loadb(body, len, 0, NULL) : NULL;
    const char *act = action_of(j);
    int rc;

    if (act) { /* an AIStore action message (the SDK's bucket.create()) */
        if (strcmp(act, "create-bck") != 0) { /* prefetch, copy: jobs (aisjobs.c) */
            hd_proxy_ais_bucket_job(r, c->p, c->bucket, &c->a, j);
            json_decref(j);
            return;
        }
        json_decref(j);
        rc = hd_proxy_cloud_props(c->p, c->provider, NULL, &props, msg, sizeof(msg));
        if (rc == 0)
            rc =
                hd_proxy_bucket_create_props(c->p, c->bucket, c->provider, props, msg, sizeof(msg));
        free(props);
        if (rc == HD_EBUCKETEXISTS) /* the SDK maps 409 naming PROVIDER://B to "exists" */
            snprintf(msg, sizeof(msg), "bucket \"%s://%s\" already exists", c->provider, c->bucket);
        if (rc < 0)
            hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
        else
            hd_resp_empty(r, 200);
        return;
    }
    json_decref(j);
    rc = hd_proxy_cloud_props(c->p, c->provider, len ? body : NULL, &props, msg, sizeof(msg));
    if (rc == 0)
        rc = hd_proxy_bucket_create_props(c->p, c->bucket, c->provider, props, msg, sizeof(msg));
    free(props);
    if (rc < 0)
        hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
    else
        hd_resp_empty(r, 201);
}

static void props_end(struct hd_req *r, void *ctx, const char *body, size_t len)
{
    struct props_ctx *c = ctx;
    char msg[256];
    int rc;

    if (upstream_check(r, c, body, len) < 0)
        return;
    if (c->create) {
        create_end(r, c, body, len);
        return;
    }
    rc = hd_proxy_bucket_props_msg(c->p, c->bucket, body, msg, sizeof(msg));
    if (rc < 0)
        hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
    else
        hd_resp_empty(r, 200);
}

static void props_patch(struct hd_req *r, struct hd_proxy *p, const char *bucket,
                        const struct hd_sigv4_auth *a, const char *create_provider)
{
    struct props_ctx *c = calloc(1, sizeof(*c));

    if (!c) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    c->a = *a;
    if (create_provider) {
        c->create = 1;
        snprintf(c->provider, sizeof(c->provider), "%s",
                 strcmp(create_provider, "s3") == 0 ? "aws" : create_provider);
    }
    c->p = p;
    c->admin = may_set_upstream(p, a);
    snprintf(c->bucket, sizeof(c->bucket), "%s", bucket);
    hd_req_read_body(r, 64u * 1024, props_end, c, free);
}

/* GET /v1/buckets/B?writeback: every target's write-back queue for B, summed (the oldest
 * dirty age is the largest), with each target's own numbers under "targets". */
static void writeback_get(struct hd_req *r, struct hd_proxy *p, const char *bucket)
{
    static const char *const sums[] = {"dirty_objects", "dirty_bytes", "queue_depth",
                                       "failed",        "uploading",   NULL};
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    struct hd_bmd *b = hd_smap_state_bmd(p->cs);
    struct hd_proxy_fan f;
    struct hd_buf path;
    json_t *out = NULL, *targets;
    double oldest = 0;
    size_t i, k;
    int rc;

    hd_buf_init(&path);
    if (!hd_bmd_find(b, bucket)) {
        hd_resp_err(r, HD_ENOSUCHBUCKET);
        goto done;
    }
    if (!s) {
        hd_resp_err_msg(r, HD_EUNAVAIL, "This proxy has not joined a cluster yet.");
        goto done;
    }
    hd_buf_puts(&path, "/v1/buckets/");
    hd_uri_encode(&path, bucket, strlen(bucket), 0);
    hd_buf_puts(&path, "?writeback=true");
    if (path.oom) {
        hd_resp_err(r, -ENOMEM);
        goto done;
    }
    if ((rc = hd_proxy_fan_out(p, s, "GET", path.data, NULL, 1, HD_PROXY_SYNC_MS, &f)) < 0) {
        hd_resp_err(r, rc);
        goto done;
    }
    targets = json_object();
    out = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:o}", "bucket", bucket, "dirty_objects",
                    (json_int_t)0, "dirty_bytes", (json_int_t)0, "queue_depth", (json_int_t)0,
                    "failed", (json_int_t)0, "uploading", (json_int_t)0, "targets", targets);
    for (i = 0, k = 0; out && i < s->n; i++) {
        const struct hd_node *n = &s->nodes[i];
        const struct hd_httpc_call *c = NULL;
        json_t *j;
        if (n->type != HD_NODE_TARGET)
            continue;
        if (k < f.n && f.nodes[k] == n)
            c = &f.calls[k++];
        j = c && c->rc == 0 && c->status == 200 ? hd_proxy_call_json(c) : NULL;
        if (!json_is_object(j)) {
            json_decref(j);
            json_object_set_new(targets, n->id, json_pack("{s:s}", "error", "did not answer"));
            json_object_set_new(out, "incomplete", json_true());
            continue;
        }
        for (size_t q = 0; sums[q]; q++)
            json_object_set_new(out, sums[q],
                                json_integer(json_integer_value(json_object_get(out, sums[q])) +
                                             json_integer_value(json_object_get(j, sums[q]))));
        if (json_number_value(json_object_get(j, "oldest_dirty_seconds")) > oldest)
            oldest = json_number_value(json_object_get(j, "oldest_dirty_seconds"));
        json_object_set_new(targets, n->id, j);
    }
    hd_proxy_fan_cleanup(&f);
    if (!out) {
        hd_resp_err(r, -ENOMEM);
        goto done;
    }
    json_object_set_new(out, "oldest_dirty_seconds", json_real(oldest));
    hd_resp_json(r, 200, out);
done:
    hd_buf_cleanup(&path);
    hd_bmd_unref(b);
    hd_smap_unref(s);
}

/* The calls of /v1/buckets/B, told apart before authentication (bucket_call), so that an
 * unsigned caller of a public bucket gets the listing ones only (bucket_pub). */
enum bucket_call {
    BC_PROPS,     /* GET ?props */
    BC_WRITEBACK, /* GET ?writeback */
    BC_SUMMARY,   /* GET ?summary */
    BC_PATCH,     /* PATCH: props */
    BC_ACTION,    /* GET with an action message (AIStore's list objects, bucket jobs) */
    BC_LIST,      /* GET */
    BC_HEAD,      /* HEAD: existence and props headers */
    BC_INFO,      /* HEAD ?presence asking for a summary (AIStore's Bucket.info()) */
    BC_CREATE,    /* POST, PUT */
    BC_ACTION_DELETE,
    BC_DESTROY,
    BC_BAD,
};

static enum bucket_call bucket_call_of(struct hd_req *r)
{
    const char *m = r->method, *pres;

    if (strcmp(m, "GET") == 0)
        return hd_query_find(&r->query, "props")       ? BC_PROPS
               : hd_query_find(&r->query, "writeback") ? BC_WRITEBACK
               : hd_query_find(&r->query, "summary")   ? BC_SUMMARY
               : has_body(r)                           ? BC_ACTION
                                                       : BC_LIST;
    if (strcmp(m, "HEAD") == 0) {
        pres = hd_req_param(r, "presence");
        return !pres || strcmp(pres, "1") == 0 || strcmp(pres, "3") == 0 ? BC_HEAD : BC_INFO;
    }
    if (strcmp(m, "PATCH") == 0)
        return BC_PATCH;
    if (strcmp(m, "POST") == 0 || strcmp(m, "PUT") == 0)
        return BC_CREATE;
    if (strcmp(m, "DELETE") == 0)
        return has_body(r) ? BC_ACTION_DELETE : BC_DESTROY;
    return BC_BAD;
}

/* An action message is read after authentication: bucket_get_end refuses unsigned callers
 * every action but list. */
static int bucket_pub(enum bucket_call c)
{
    return c == BC_LIST || c == BC_ACTION || c == BC_HEAD ? HD_PUB_LIST : HD_PUB_NONE;
}

static void bucket_op(struct hd_req *r, struct hd_proxy *p, const char *bucket,
                      const struct hd_sigv4_auth *a, enum bucket_call c)
{
    const char *pv;
    char msg[256];
    int rc;

    r->op = HD_OP_BUCKET;
    switch (c) {
    case BC_PROPS:
        props_get(r, p, bucket);
        break;
    case BC_WRITEBACK:
        writeback_get(r, p, bucket);
        break;
    case BC_SUMMARY:
        hd_proxy_bucket_summary(r, p, bucket);
        break;
    case BC_PATCH:
        props_patch(r, p, bucket, a, NULL);
        break;
    case BC_ACTION:
        act_read(r, p, bucket, a, bucket_get_end);
        break;
    case BC_LIST:
        hd_proxy_list_native(r, p, bucket);
        break;
    case BC_HEAD:
    case BC_INFO:
        hd_proxy_ais_bucket_head(r, p, bucket); /* props headers (aisjobs.c) */
        break;
    case BC_CREATE:
        pv = hd_req_param(r, "provider");
        if ((pv && *pv && strcmp(pv, "ais") != 0 && strcmp(pv, "aws") != 0 &&
             strcmp(pv, "s3") != 0)) {
            hd_resp_err_msg(r, HD_EBADARG, "provider must be ais (native) or aws (S3-backed).");
            return;
        }
        props_patch(r, p, bucket, a, pv && *pv ? pv : "ais"); /* the body may carry props */
        break;
    case BC_ACTION_DELETE:
        act_read(r, p, bucket, a, bucket_delete_end);
        break;
    case BC_DESTROY:
        rc = hd_proxy_bucket_destroy(p, bucket, msg, sizeof(msg));
        rc < 0 ? hd_resp_err_msg(r, rc, msg[0] ? msg : NULL) : hd_resp_empty(r, 204);
        break;
    default:
        hd_resp_err(r, HD_EMETHOD);
    }
}

void hd_proxy_buckets_handle(struct hd_req *r, struct hd_proxy *p)
{
    const char *rest = r->raw_path + 11; /* after "/v1/buckets" */
    enum bucket_call c;
    struct hd_sigv4_auth a;
    char *bucket = NULL;
    int rc;

    r->op = HD_OP_BUCKET;
    if (!*rest || strcmp(rest, "/") == 0) {
        if ((rc = hd_proxy_auth(r, p, NULL, &a)) < 0)
            hd_resp_err(r, rc);
        else if (strcmp(r->method, "GET") == 0 && has_body(r))
            hd_req_read_json(r, (size_t)64 << 10, list_buckets_end, p, NULL);
        else if (strcmp(r->method, "GET") == 0)
            list_buckets(r, p);
        else
            hd_resp_err(r, HD_EMETHOD);
        return;
    }
    rest++;
    if (strchr(rest, '/') && strcmp(r->method, "HEAD") == 0 && hd_req_param(r, "presence")) {
        /* AIStore's Bucket.info(prefix=P): HEAD /v1/buckets/B/P */
        hd_resp_err_msg(r, HD_ENOTIMPL, "Bucket info summarises whole buckets only (no prefix).");
        return;
    }
    rc = strchr(rest, '/') ? HD_ENOTFOUND : hd_bucket_decode(rest, strlen(rest), &bucket);
    if (rc == 0 && !*bucket)
        rc = HD_ENOTFOUND;
    if (rc < 0) {
        hd_resp_err(r, rc);
        free(bucket);
        return;
    }
    c = bucket_call_of(r);
    r->pub = bucket_pub(c);
    r->policy_call = c == BC_PROPS; /* a read of the settings (a PATCH is not) */
    if ((rc = hd_proxy_auth(r, p, bucket, &a)) < 0)
        hd_resp_err(r, rc);
    else if ((strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0) ||
             hd_proxy_autoreg(r, p, bucket) != HD_AGAIN) /* default upstream: first access */
        bucket_op(r, p, bucket, &a, c);
    free(bucket);
}
