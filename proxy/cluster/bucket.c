/* bucket: buckets live in the BMD. The primary changes it (one version per change, persisted,
 * then pushed to every node before the caller is answered, so a PUT right after CreateBucket
 * finds the bucket on its target); other proxies ask the primary through its native API.
 * Native /v1/buckets[/B] handlers. Runs on HTTP workers (the fan-out is bounded). */
#include "proxy/core/core.h"

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

/* Applies change(b, arg) to a clone of the BMD, bumps the version, persists, and pushes. */
static int bmd_change(struct hd_proxy *p, int (*change)(struct hd_bmd *b, const void *arg),
                      const void *arg)
{
    struct hd_bmd *cur, *b = NULL;
    int rc;

    pthread_mutex_lock(&p->mu);
    cur = hd_smap_state_bmd(p->cs);
    if ((rc = hd_bmd_clone(cur, &b)) < 0 || (rc = change(b, arg)) < 0)
        goto unlock;
    b->version++;
    rc = hd_proxy_bmd_install(p, b);
unlock:
    pthread_mutex_unlock(&p->mu);
    if (rc == 0) {
        HD_LOG(HD_INFO, NULL, "cluster: BMD v%lld", (long long)b->version);
        hd_proxy_sync_now(p);
    }
    hd_bmd_unref(cur);
    hd_bmd_unref(b);
    return rc;
}

struct create_arg {
    const char *name;
    const char *provider;
    const char *props;
};

static int do_create(struct hd_bmd *b, const void *arg)
{
    const struct create_arg *a = arg;

    if (hd_bmd_find(b, a->name))
        return HD_EBUCKETEXISTS;
    return hd_bmd_put(b, a->name, a->provider, (int64_t)time(NULL), a->props);
}

static int do_destroy(struct hd_bmd *b, const void *arg)
{
    if (!hd_bmd_find(b, arg))
        return HD_ENOSUCHBUCKET;
    return hd_bmd_remove(b, arg) < 0 ? HD_ENOSUCHBUCKET : 0;
}

struct props_arg {
    const char *name;
    const char *patch; /* merged into the current props */
    char *msg;
    size_t msglen;
};

static int do_props(struct hd_bmd *b, const void *arg)
{
    const struct props_arg *a = arg;
    const struct hd_bmd_bucket *e = hd_bmd_find(b, a->name);
    struct hd_bprops bp;
    char provider[8], *merged = NULL;
    int rc;

    if (!e)
        return HD_ENOSUCHBUCKET;
    snprintf(provider, sizeof(provider), "%s", e->provider);
    if ((rc = hd_bprops_merge(e->props, a->patch, &merged, a->msg, a->msglen)) < 0)
        return rc;
    hd_bprops_parse(merged, &bp, NULL, 0);
    if (bp.has_upstream != (strcmp(provider, "aws") == 0)) {
        snprintf(a->msg, a->msglen, "%s",
                 bp.has_upstream ? "Only S3-backed buckets (provider aws) have an upstream."
                                 : "An S3-backed bucket needs its upstream.");
        free(merged);
        return HD_EBADARG;
    }
    rc = hd_bmd_put(b, a->name, provider, e->created, merged);
    free(merged);
    return rc;
}

static int via_primary(struct hd_proxy *p, const char *method, const char *name, const char *query,
                       const json_t *body)
{
    struct hd_buf path;
    json_t *out = NULL;
    long status = 0;
    int rc;

    hd_buf_init(&path);
    hd_buf_puts(&path, "/v1/buckets/");
    hd_uri_encode(&path, name, strlen(name), 0);
    if (query)
        hd_buf_printf(&path, "?%s", query);
    if (path.oom) {
        hd_buf_cleanup(&path);
        return -ENOMEM;
    }
    rc = hd_proxy_primary_call(p, method, path.data, body, &status, &out);
    hd_buf_cleanup(&path);
    if (rc < 0)
        return HD_EUNAVAIL;
    rc = hd_proxy_err_from_json(status, out);
    json_decref(out);
    out = NULL;
    /* the primary pushes the new BMD to proxies in the background: take it now, so this
     * client's next call through us sees its change */
    if (rc == 0 && hd_proxy_primary_call(p, "GET", "/v1/cluster/bmd", NULL, &status, &out) == 0 &&
        status == 200 && out) {
        struct hd_bmd *b = NULL;
        if (hd_bmd_from_json(out, &b) == 0)
            hd_smap_state_set_bmd(p->cs, b, 0, NULL);
        hd_bmd_unref(b);
    }
    json_decref(out);
    return rc;
}

int hd_proxy_bucket_create(struct hd_proxy *p, const char *name, const char *provider)
{
    if (provider && *provider && strcmp(provider, "ais") != 0)
        return HD_EBADARG; /* S3-backed buckets need props: hd_proxy_bucket_create_props */
    return hd_proxy_bucket_create_props(p, name, "ais", NULL);
}

int hd_proxy_bucket_create_props(struct hd_proxy *p, const char *name, const char *provider,
                                 const char *props)
{
    struct create_arg a = {name, provider && *provider ? provider : "ais", props};
    json_t *body = NULL;
    int rc;

    if ((rc = hd_bucket_name_check(name)) < 0)
        return rc;
    if (strcmp(a.provider, "ais") != 0 && strcmp(a.provider, "aws") != 0)
        return HD_EBADARG;
    if (!p->primary) {
        if (props && !(body = json_loads(props, 0, NULL)))
            return HD_EBADARG;
        rc = via_primary(p, "POST", name, strcmp(a.provider, "aws") == 0 ? "provider=aws" : NULL,
                         body);
        json_decref(body);
        return rc;
    }
    return bmd_change(p, do_create, &a);
}

int hd_proxy_bucket_destroy(struct hd_proxy *p, const char *name, char *msg, size_t msglen)
{
    struct hd_bmd *b;
    int rc;

    msg[0] = '\0';
    if (!p->primary)
        return via_primary(p, "DELETE", name, NULL, NULL);
    b = hd_smap_state_bmd(p->cs);
    rc = hd_bmd_find(b, name) ? 0 : HD_ENOSUCHBUCKET;
    hd_bmd_unref(b);
    if (rc < 0 || (rc = hd_proxy_bucket_empty(p, name, msg, msglen)) < 0)
        return rc;
    return bmd_change(p, do_destroy, name);
}

int hd_proxy_bucket_props(struct hd_proxy *p, const char *name, const char *json)
{
    char msg[256];

    return hd_proxy_bucket_props_msg(p, name, json, msg, sizeof(msg));
}

int hd_proxy_bucket_props_msg(struct hd_proxy *p, const char *name, const char *json, char *msg,
                              size_t msglen)
{
    json_t *in = json_loads(json, JSON_REJECT_DUPLICATES, NULL);
    struct props_arg a = {name, json, msg, msglen};
    char *probe = NULL;
    int rc;

    msg[0] = '\0';
    if (!json_is_object(in)) {
        json_decref(in);
        snprintf(msg, msglen, "Expected a JSON object like {\"anonymous_read\": true}.");
        return HD_EBADARG;
    }
    /* the patch alone must already be well formed (merging is the primary's) */
    if ((rc = hd_bprops_merge(NULL, json, &probe, msg, msglen)) < 0) {
        json_decref(in);
        return rc;
    }
    free(probe);
    msg[0] = '\0';
    if (!p->primary)
        rc = via_primary(p, "PATCH", name, NULL, in);
    else
        rc = bmd_change(p, do_props, &a);
    json_decref(in);
    return rc;
}

/* ---- native handlers ---- */

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
    hd_proxy_resp_json(r, 200, json_pack("{s:o}", "buckets", arr));
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
    hd_iso8601((time_t)e->created, ts);
    hd_proxy_resp_json(r, 200,
                       json_pack("{s:s, s:s, s:s, s:o}", "name", e->name, "provider", e->provider,
                                 "created", ts, "props", props));
    hd_bmd_unref(b);
}

struct props_ctx {
    struct hd_proxy *p;
    struct hd_buf body;
    char bucket[64];
    int create; /* POST /v1/buckets/B[?provider=aws] with a props body */
    char provider[8];
};

/* Creates c->bucket with the props in the body (S3-backed buckets: the upstream). */
static void create_end(struct hd_req *r, struct props_ctx *c)
{
    char msg[256] = "", *props = NULL;
    int rc;

    rc = hd_proxy_cloud_props(c->p, c->provider, c->body.len ? c->body.data : NULL, &props, msg,
                              sizeof(msg));
    if (rc == 0)
        rc = hd_proxy_bucket_create_props(c->p, c->bucket, c->provider, props);
    free(props);
    if (rc < 0)
        hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
    else
        hd_resp_empty(r, 201);
}

static int props_body(struct hd_req *r, const char *d, size_t n)
{
    struct props_ctx *c = r->data;

    if (c->body.len + n > (size_t)64 * 1024)
        return HD_ETOOLARGE;
    return hd_buf_append(&c->body, d, n);
}

static void props_end(struct hd_req *r)
{
    struct props_ctx *c = r->data;
    char msg[256];
    int rc;

    if (r->body_err) {
        hd_resp_err(r, r->body_err);
        return;
    }
    if (c->create) {
        create_end(r, c);
        return;
    }
    rc = hd_proxy_bucket_props_msg(c->p, c->bucket, c->body.data ? c->body.data : "", msg,
                                   sizeof(msg));
    if (rc < 0)
        hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
    else
        hd_resp_empty(r, 200);
}

static void props_done(struct hd_req *r)
{
    struct props_ctx *c = r->data;

    if (c) {
        hd_buf_cleanup(&c->body);
        free(c);
    }
    r->data = NULL;
}

static void props_patch(struct hd_req *r, struct hd_proxy *p, const char *bucket,
                        const char *create_provider)
{
    struct props_ctx *c = calloc(1, sizeof(*c));

    if (!c) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    if (create_provider) {
        c->create = 1;
        snprintf(c->provider, sizeof(c->provider), "%s",
                 strcmp(create_provider, "s3") == 0 ? "aws" : create_provider);
    }
    c->p = p;
    hd_buf_init(&c->body);
    snprintf(c->bucket, sizeof(c->bucket), "%s", bucket);
    r->data = c;
    r->on_body = props_body;
    r->on_end = props_end;
    r->on_done = props_done;
}

static void bucket_op(struct hd_req *r, struct hd_proxy *p, const char *bucket)
{
    const char *m = r->method;
    struct hd_bmd *b;
    char msg[256];
    int rc;

    r->op = HD_OP_BUCKET;
    if (strcmp(m, "GET") == 0 && hd_query_find(&r->query, "props")) {
        props_get(r, p, bucket);
    } else if (strcmp(m, "PATCH") == 0) {
        props_patch(r, p, bucket, NULL);
    } else if (strcmp(m, "GET") == 0) {
        hd_proxy_list_native(r, p, bucket);
    } else if (strcmp(m, "HEAD") == 0) {
        b = hd_smap_state_bmd(p->cs);
        rc = hd_bmd_find(b, bucket) ? 0 : HD_ENOSUCHBUCKET;
        hd_bmd_unref(b);
        rc < 0 ? hd_resp_err(r, rc) : hd_resp_empty(r, 200);
    } else if (strcmp(m, "POST") == 0 || strcmp(m, "PUT") == 0) {
        const char *pv = hd_req_param(r, "provider");
        if ((pv && *pv && strcmp(pv, "ais") != 0 && strcmp(pv, "aws") != 0 &&
             strcmp(pv, "s3") != 0)) {
            hd_resp_err_msg(r, HD_EBADARG, "provider must be ais (native) or aws (S3-backed).");
            return;
        }
        props_patch(r, p, bucket, pv && *pv ? pv : "ais"); /* the body may carry props */
    } else if (strcmp(m, "DELETE") == 0) {
        rc = hd_proxy_bucket_destroy(p, bucket, msg, sizeof(msg));
        rc < 0 ? hd_resp_err_msg(r, rc, msg[0] ? msg : NULL) : hd_resp_empty(r, 204);
    } else {
        hd_resp_err(r, HD_EMETHOD);
    }
}

void hd_proxy_buckets_handle(struct hd_req *r, struct hd_proxy *p)
{
    const char *rest = r->raw_path + 11; /* after "/v1/buckets" */
    struct hd_sigv4_auth a;
    char *bucket = NULL;
    int rc;

    r->op = HD_OP_BUCKET;
    if (!*rest || strcmp(rest, "/") == 0) {
        if ((rc = hd_proxy_auth(r, p, NULL, &a)) < 0)
            hd_resp_err(r, rc);
        else if (strcmp(r->method, "GET") == 0)
            list_buckets(r, p);
        else
            hd_resp_err(r, HD_EMETHOD);
        return;
    }
    rest++;
    rc = strchr(rest, '/') ? HD_ENOTFOUND : hd_bucket_decode(rest, strlen(rest), &bucket);
    if (rc == 0 && !*bucket)
        rc = HD_ENOTFOUND;
    if (rc < 0) {
        hd_resp_err(r, rc);
        free(bucket);
        return;
    }
    if ((rc = hd_proxy_auth(r, p, bucket, &a)) < 0) {
        hd_resp_err(r, rc);
    } else {
        if (strcmp(r->method, "GET") == 0 || strcmp(r->method, "HEAD") == 0)
            hd_proxy_autoreg(p, bucket); /* default upstream: register on first access */
        bucket_op(r, p, bucket);
    }
    free(bucket);
}
