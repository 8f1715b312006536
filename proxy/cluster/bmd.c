/* bmd: buckets live in the BMD. The primary changes it (one version per change, persisted,
 * then pushed to every node before the caller is answered, so a PUT right after CreateBucket
 * finds the bucket on its target); other proxies ask the primary through its native API.
 * HTTP workers (the calls are bounded). */
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
#include "common/log.h"

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

#define PROPS_FULL                                                                                 \
    "The cluster's buckets would hold more than %u KiB of properties (CORS rules, lifecycle "      \
    "rules, tags): every node keeps them all. Remove some first."

struct create_arg {
    const char *name;
    const char *provider;
    const char *props;
    char *msg; /* why it was refused (may be NULL) */
    size_t msglen;
};

/* Bytes of every bucket's props but skip's: the BMD goes to every node on every change, in one
 * metasync body (at most 4 MiB, target/cluster), so per-bucket settings have a cluster-wide
 * bound. */
#define HD_BMD_PROPS_MAX (1u << 20)

static size_t bmd_props_bytes(const struct hd_bmd *b, const char *skip)
{
    size_t i, n = 0;

    for (i = 0; i < b->n; i++)
        if (b->b[i].props && strcmp(b->b[i].name, skip) != 0)
            n += strlen(b->b[i].props);
    return n;
}

static int do_create(struct hd_bmd *b, const void *arg)
{
    const struct create_arg *a = arg;

    if (hd_bmd_find(b, a->name))
        return HD_EBUCKETEXISTS;
    if (a->props && bmd_props_bytes(b, "") + strlen(a->props) > HD_BMD_PROPS_MAX)
        return hd_err_fmt(a->msg, a->msglen, HD_EBADARG, PROPS_FULL, HD_BMD_PROPS_MAX >> 10);
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
    if (bp.write_back && !bp.has_upstream) {
        snprintf(a->msg, a->msglen, "%s",
                 "write_policy \"back\" is for S3-backed buckets (an upstream to write to).");
        free(merged);
        return HD_EBADARG;
    }
    /* a change that does not grow the props is always taken (one over the bound can shrink) */
    if (strlen(merged) > (e->props ? strlen(e->props) : 0) &&
        bmd_props_bytes(b, a->name) + strlen(merged) > HD_BMD_PROPS_MAX) {
        snprintf(a->msg, a->msglen, PROPS_FULL, HD_BMD_PROPS_MAX >> 10);
        free(merged);
        return HD_EBADARG;
    }
    rc = hd_bmd_put(b, a->name, provider, e->created, merged);
    free(merged);
    return rc;
}

/* The primary pushes a new BMD to proxies in the background: take it now, so this client's
 * next call through us sees its change. */
static void pull_bmd(struct hd_proxy *p)
{
    json_t *out = NULL;
    long status = 0;

    if (hd_proxy_primary_call(p, "GET", "/v1/cluster/bmd", NULL, &status, &out) == 0 &&
        status == 200 && out) {
        struct hd_bmd *b = NULL;
        if (hd_bmd_from_json(out, &b) == 0)
            hd_smap_state_set_bmd(p->cs, b, 0, NULL);
        hd_bmd_unref(b);
    }
    json_decref(out);
}

/* METHOD path on the primary (a BMD change); then its BMD. 0 or the primary's error. */
/* The primary's answer to method path (body): 0, or its error with its message in msg (NULL:
 * not wanted). */
static int forward(struct hd_proxy *p, const char *method, const char *path, const json_t *body,
                   char *msg, size_t msglen)
{
    json_t *out = NULL;
    long status = 0;
    int rc = hd_proxy_primary_call(p, method, path, body, &status, &out);

    if (rc < 0) {
        json_decref(out);
        return HD_EUNAVAIL;
    }
    rc = hd_proxy_err_from_json(status, out);
    if (rc < 0 && msg && msglen && json_is_string(json_object_get(out, "message")))
        snprintf(msg, msglen, "%s", json_string_value(json_object_get(out, "message")));
    json_decref(out);
    if (rc == 0)
        pull_bmd(p);
    return rc;
}

static int via_primary(struct hd_proxy *p, const char *method, const char *name, const char *query,
                       const json_t *body, char *msg, size_t msglen)
{
    struct hd_buf path;
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
    rc = forward(p, method, path.data, body, msg, msglen);
    hd_buf_cleanup(&path);
    return rc;
}

int hd_proxy_bucket_create(struct hd_proxy *p, const char *name, const char *provider)
{
    if (provider && *provider && strcmp(provider, "ais") != 0)
        return HD_EBADARG; /* S3-backed buckets need props: hd_proxy_bucket_create_props */
    return hd_proxy_bucket_create_props(p, name, "ais", NULL, NULL, 0);
}

int hd_proxy_bucket_create_props(struct hd_proxy *p, const char *name, const char *provider,
                                 const char *props, char *msg, size_t msglen)
{
    struct create_arg a = {name, provider && *provider ? provider : "ais", props, msg, msglen};
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
                         body, msg, msglen);
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
        return via_primary(p, "DELETE", name, NULL, NULL, msg, msglen);
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
        rc = via_primary(p, "PATCH", name, NULL, in, msg, msglen);
    else
        rc = bmd_change(p, do_props, &a);
    json_decref(in);
    return rc;
}

struct revoke_arg {
    const char *id;
    int64_t exp;
};

static int do_revoke(struct hd_bmd *b, const void *arg)
{
    const struct revoke_arg *a = arg;

    return hd_bmd_revoke(b, a->id, a->exp, (int64_t)time(NULL));
}

int hd_proxy_token_revoke(struct hd_proxy *p, const char *token, const char *id, int64_t exp)
{
    struct revoke_arg a = {id, exp};
    json_t *body;
    int rc;

    if (p->primary)
        return bmd_change(p, do_revoke, &a);
    if (!(body = json_pack("{s:s}", "token", token)))
        return -ENOMEM;
    rc = forward(p, "DELETE", "/v1/tokens", body, NULL, 0);
    json_decref(body);
    return rc;
}
