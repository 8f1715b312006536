/* bucket: buckets live in the BMD. The primary changes it (one version per change, persisted,
 * then pushed to every node before the caller is answered, so a PUT right after CreateBucket
 * finds the bucket on its target); other proxies ask the primary through its native API.
 * Native /v1/buckets[/B] handlers. Runs on HTTP workers (the fan-out is bounded). */
#include "proxy/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
};

static int do_create(struct hd_bmd *b, const void *arg)
{
    const struct create_arg *a = arg;

    if (hd_bmd_find(b, a->name))
        return HD_EBUCKETEXISTS;
    return hd_bmd_put(b, a->name, a->provider, (int64_t)time(NULL), NULL);
}

static int do_destroy(struct hd_bmd *b, const void *arg)
{
    if (!hd_bmd_find(b, arg))
        return HD_ENOSUCHBUCKET;
    return hd_bmd_remove(b, arg) < 0 ? HD_ENOSUCHBUCKET : 0;
}

struct props_arg {
    const char *name;
    const char *props;
};

static int do_props(struct hd_bmd *b, const void *arg)
{
    const struct props_arg *a = arg;
    const struct hd_bmd_bucket *e = hd_bmd_find(b, a->name);
    char provider[8];

    if (!e)
        return HD_ENOSUCHBUCKET;
    snprintf(provider, sizeof(provider), "%s", e->provider);
    return hd_bmd_put(b, a->name, provider, e->created, a->props);
}

static int via_primary(struct hd_proxy *p, const char *method, const char *name,
                       const char *query, const json_t *body)
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
    struct create_arg a = {name, provider && *provider ? provider : "ais"};
    int rc;

    if ((rc = hd_bucket_name_check(name)) < 0)
        return rc;
    if (strcmp(a.provider, "ais") != 0)
        return HD_EBADARG; /* upstream-backed buckets arrive with the caching issue */
    if (!p->primary)
        return via_primary(p, "POST", name, NULL, NULL);
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
    json_t *in = json_loads(json, 0, NULL), *v;
    struct props_arg a;
    const char *k;
    char *props = NULL;
    int rc = 0;

    if (!json_is_object(in)) {
        json_decref(in);
        return HD_EBADARG;
    }
    json_object_foreach(in, k, v)
    {
        if (strcmp(k, "anonymous_read") != 0 || !json_is_boolean(v))
            rc = HD_EBADARG;
    }
    if (rc == 0 && !p->primary) {
        rc = via_primary(p, "PATCH", name, NULL, in);
    } else if (rc == 0) {
        props = json_dumps(in, JSON_COMPACT | JSON_SORT_KEYS);
        a.name = name;
        a.props = props;
        rc = props ? bmd_change(p, do_props, &a) : -ENOMEM;
    }
    free(props);
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
        json_array_append_new(arr, json_pack("{s:s, s:s, s:s}", "name", b->b[i].name,
                                             "provider", b->b[i].provider, "created", ts));
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
    hd_iso8601((time_t)e->created, ts);
    hd_proxy_resp_json(r, 200, json_pack("{s:s, s:s, s:s, s:o}", "name", e->name, "provider",
                                         e->provider, "created", ts, "props", props));
    hd_bmd_unref(b);
}

struct props_ctx {
    struct hd_proxy *p;
    struct hd_buf body;
    char bucket[64];
};

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
    int rc;

    if (r->body_err) {
        hd_resp_err(r, r->body_err);
        return;
    }
    rc = hd_proxy_bucket_props(c->p, c->bucket, c->body.data ? c->body.data : "");
    if (rc == HD_EBADARG)
        hd_resp_err_msg(r, rc, "Expected a JSON object like {\"anonymous_read\": true}.");
    else if (rc < 0)
        hd_resp_err(r, rc);
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

static void props_patch(struct hd_req *r, struct hd_proxy *p, const char *bucket)
{
    struct props_ctx *c = calloc(1, sizeof(*c));

    if (!c) {
        hd_resp_err(r, -ENOMEM);
        return;
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
        props_patch(r, p, bucket);
    } else if (strcmp(m, "GET") == 0) {
        hd_proxy_list_native(r, p, bucket);
    } else if (strcmp(m, "HEAD") == 0) {
        b = hd_smap_state_bmd(p->cs);
        rc = hd_bmd_find(b, bucket) ? 0 : HD_ENOSUCHBUCKET;
        hd_bmd_unref(b);
        rc < 0 ? hd_resp_err(r, rc) : hd_resp_empty(r, 200);
    } else if (strcmp(m, "POST") == 0 || strcmp(m, "PUT") == 0) {
        rc = hd_proxy_bucket_create(p, bucket, hd_req_param(r, "provider"));
        if (rc == HD_EBADARG)
            hd_resp_err_msg(r, rc, "Only native buckets (provider=ais) can be created yet.");
        else
            rc < 0 ? hd_resp_err(r, rc) : hd_resp_empty(r, 201);
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
    if ((rc = hd_proxy_auth(r, p, bucket, &a)) < 0)
        hd_resp_err(r, rc);
    else
        bucket_op(r, p, bucket);
    free(bucket);
}
