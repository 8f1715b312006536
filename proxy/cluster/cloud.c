/* cloud: S3-backed (provider "aws") buckets on the proxy.
 *   - props of a new bucket: validated; an aws bucket without an upstream gets the default
 *     upstream of the config (upstream.endpoint/region/style/profile);
 *   - registration on first access: with upstream.endpoint set, a request for a bucket the
 *     BMD does not know HEADs that bucket at the default upstream and, when it exists,
 *     creates it in the BMD as S3-backed (misses are remembered for MISS_TTL);
 *   - listing: one designated target (the HRW owner of "aws/@#/BUCKET/") pages through the
 *     upstream's listing (GET /v1/buckets/B?upstream=true on it); the proxy then lists what
 *     the targets hold over the same range and marks each entry cached or not.
 * Runs on HTTP workers; the intra-cluster and upstream calls block the worker for a bounded
 * time (the proxy's known limitation, see architecture.md). */
#include "proxy/core/core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bprops.h"
#include "common/buf.h"
#include "common/errors.h"
#include "common/hrw.h"
#include "common/httpc.h"
#include "common/httputil.h"
#include "common/log.h"
#include "common/s3client.h"

#define MISS_TTL_NS (10ull * 1000000000ull)
#define NMISS 64
#define MAX_SUFFIX "\xf4\x8f\xbf\xbf" /* U+10FFFF: after every key under a common prefix */

struct miss {
    char name[64];
    uint64_t until_ns;
};

struct hd_proxy_cloud {
    struct hd_upstream dflt; /* endpoint "" = no default upstream */
    char *cred_file;
    struct hd_s3c base;
    pthread_mutex_t mu;
    struct miss misses[NMISS];
    size_t next_miss;
};

int hd_proxy_cloud_new(const struct hd_config *cfg, struct hd_proxy_cloud **out)
{
    struct hd_proxy_cloud *c = calloc(1, sizeof(*c));
    const char *ep = hd_config_str(cfg, "upstream.endpoint");
    const char *style = hd_config_str(cfg, "upstream.style");
    json_t *j;
    char *text, err[256];
    struct hd_bprops bp;
    int rc = 0;

    if (!c)
        return -ENOMEM;
    pthread_mutex_init(&c->mu, NULL);
    c->cred_file = strdup(hd_config_str(cfg, "upstream.credentials"));
    c->base.connect_ms = (long)hd_config_int(cfg, "upstream.connect_timeout_ms");
    c->base.meta_s = (long)hd_config_int(cfg, "upstream.meta_timeout");
    c->base.retries = (int)hd_config_int(cfg, "upstream.retries");
    c->base.backoff_ms = (long)hd_config_int(cfg, "upstream.backoff_ms");
    if (!c->cred_file) {
        hd_proxy_cloud_free(c);
        return -ENOMEM;
    }
    if (*ep) { /* validated like bucket props */
        j = json_pack("{s:{s:s, s:s, s:s, s:s}}", "upstream", "endpoint", ep, "region",
                      hd_config_str(cfg, "upstream.region"), "style", style, "profile",
                      hd_config_str(cfg, "upstream.profile"));
        text = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        rc = text ? hd_bprops_parse(text, &bp, err, sizeof(err)) : -ENOMEM;
        free(text);
        if (rc < 0) {
            HD_LOG(HD_ERROR, NULL, "upstream.*: %s", rc == -ENOMEM ? "out of memory" : err);
            hd_proxy_cloud_free(c);
            return rc == -ENOMEM ? rc : -EINVAL;
        }
        c->dflt = bp.up;
    }
    *out = c;
    return 0;
}

void hd_proxy_cloud_free(struct hd_proxy_cloud *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->mu);
    free(c->cred_file);
    free(c);
}

int hd_proxy_bucket_cloud(struct hd_proxy *p, const char *bucket)
{
    struct hd_bmd *b = hd_smap_state_bmd(p->cs);
    const struct hd_bmd_bucket *e = hd_bmd_find(b, bucket);
    int yes = e && strcmp(e->provider, "aws") == 0;

    hd_bmd_unref(b);
    return yes;
}

int hd_proxy_cloud_props(struct hd_proxy *p, const char *provider, const char *body, char **out,
                         char *msg, size_t msglen)
{
    struct hd_bprops bp;
    int rc;

    *out = NULL;
    if ((rc = hd_bprops_parse(body, &bp, msg, msglen)) < 0)
        return rc;
    if (strcmp(provider, "aws") == 0) {
        if (!bp.has_upstream) {
            if (!p->cloud->dflt.endpoint[0]) {
                snprintf(msg, msglen,
                         "An S3-backed bucket needs {\"upstream\": {\"endpoint\": "
                         "URL, ...}} (or upstream.endpoint in the config).");
                return HD_EBADARG;
            }
            bp.up = p->cloud->dflt;
            bp.has_upstream = 1;
        }
    } else if (bp.has_upstream) {
        snprintf(msg, msglen, "Only S3-backed buckets (provider=aws) have an upstream.");
        return HD_EBADARG;
    }
    *out = hd_bprops_dump(&bp);
    return *out ? 0 : -ENOMEM;
}

/* ---- registration on first access ---- */

static int recent_miss(struct hd_proxy_cloud *c, const char *bucket)
{
    uint64_t now = hd_now_ns();
    size_t i;
    int hit = 0;

    pthread_mutex_lock(&c->mu);
    for (i = 0; i < NMISS && !hit; i++)
        hit = c->misses[i].until_ns > now && strcmp(c->misses[i].name, bucket) == 0;
    pthread_mutex_unlock(&c->mu);
    return hit;
}

static void add_miss(struct hd_proxy_cloud *c, const char *bucket)
{
    pthread_mutex_lock(&c->mu);
    snprintf(c->misses[c->next_miss].name, sizeof(c->misses[0].name), "%s", bucket);
    c->misses[c->next_miss].until_ns = hd_now_ns() + MISS_TTL_NS;
    c->next_miss = (c->next_miss + 1) % NMISS;
    pthread_mutex_unlock(&c->mu);
}

void hd_proxy_autoreg(struct hd_proxy *p, const char *bucket)
{
    struct hd_proxy_cloud *c = p->cloud;
    struct hd_bprops bp;
    struct hd_s3c s3;
    struct hd_s3c_err err;
    struct hd_bmd *b;
    char *props;
    int known, rc;

    if (!c || !c->dflt.endpoint[0] || !bucket || hd_bucket_name_check(bucket) < 0)
        return;
    b = hd_smap_state_bmd(p->cs);
    known = hd_bmd_find(b, bucket) != NULL;
    hd_bmd_unref(b);
    if (known || recent_miss(c, bucket))
        return;
    s3 = c->base;
    snprintf(s3.endpoint, sizeof(s3.endpoint), "%s", c->dflt.endpoint);
    snprintf(s3.region, sizeof(s3.region), "%s", c->dflt.region);
    s3.vhost = c->dflt.vhost;
    if (hd_s3c_profile(c->cred_file, c->dflt.profile, &s3) < 0) {
        HD_LOG(HD_WARN, NULL,
               "bucket %s: no credentials for profile '%s' on this proxy: cannot "
               "look it up at %s",
               bucket, c->dflt.profile, c->dflt.endpoint);
        add_miss(c, bucket);
        return;
    }
    rc = hd_s3c_head_bucket(&s3, bucket, &err);
    memset(s3.secret, 0, sizeof(s3.secret));
    if (rc < 0) {
        if (rc != HD_ENOSUCHBUCKET)
            HD_LOG(HD_WARN, NULL, "bucket %s: %s", bucket, err.msg);
        add_miss(c, bucket);
        return;
    }
    memset(&bp, 0, sizeof(bp));
    bp.has_upstream = 1;
    bp.up = c->dflt;
    props = hd_bprops_dump(&bp);
    rc = props ? hd_proxy_bucket_create_props(p, bucket, "aws", props) : -ENOMEM;
    free(props);
    if (rc == 0)
        HD_LOG(HD_INFO, NULL, "bucket %s registered as S3-backed (found at %s)", bucket,
               c->dflt.endpoint);
    else if (rc != HD_EBUCKETEXISTS)
        HD_LOG(HD_WARN, NULL, "bucket %s: registering it failed: %s", bucket, hd_strerror(rc));
}

/* ---- listing ---- */

/* An upstream entry (not known to be cached yet) or common prefix. */
static int push(struct hd_plist_res *res, size_t *cap, const char *name, int is_prefix,
                const json_t *e)
{
    int rc = hd_proxy_list_push(res, cap, name, is_prefix, e);

    if (rc == 0)
        res->items[res->n - 1].cached = is_prefix ? -1 : 0;
    return rc;
}

static int cmp_item(const void *a, const void *b)
{
    return strcmp(((const struct hd_plist_item *)a)->name, ((const struct hd_plist_item *)b)->name);
}

static void add_param(struct hd_buf *q, const char *k, const char *v)
{
    if (!v || !*v)
        return;
    hd_buf_printf(q, "&%s=", k);
    hd_uri_encode(q, v, strlen(v), 0);
}

/* start_after as the upstream must get it: a common prefix returned by an earlier page
 * resumes after everything under it. */
static char *upstream_after(const struct hd_plist_opts *o)
{
    const char *sa = o->start_after, *pfx = o->prefix ? o->prefix : "", *d = o->delimiter;
    size_t sl, pl = strlen(pfx), dl = d ? strlen(d) : 0;
    char *out;

    if (!sa || !*sa)
        return NULL;
    sl = strlen(sa);
    if (dl && sl >= pl + dl && strncmp(sa, pfx, pl) == 0 && memcmp(sa + sl - dl, d, dl) == 0 &&
        memmem(sa + pl, sl - pl, d, dl) == sa + sl - dl) {
        out = malloc(sl + sizeof(MAX_SUFFIX));
        if (out) {
            memcpy(out, sa, sl);
            memcpy(out + sl, MAX_SUFFIX, sizeof(MAX_SUFFIX));
        }
        return out;
    }
    return strdup(sa);
}

/* Marks the entries of res the targets hold: the targets' merged listing over the same
 * range, page by page until it passes res's last name. */
static int mark_cached(struct hd_proxy *p, const char *bucket, const struct hd_plist_opts *o,
                       struct hd_plist_res *res, int upstream_done, char *msg, size_t msglen)
{
    struct hd_plist_opts lo = *o;
    const char *last = res->n ? res->items[res->n - 1].name : NULL;
    char *after = o->start_after ? strdup(o->start_after) : NULL;
    int rc = 0;

    if (!last)
        goto out;
    lo.limit = 1000;
    lo.cached_only = 1;
    for (;;) {
        struct hd_plist_res lr;
        size_t i;
        int more;
        lo.start_after = after;
        if ((rc = hd_proxy_list_local(p, bucket, &lo, &lr, msg, msglen)) < 0)
            break;
        for (i = 0; i < lr.n; i++) {
            struct hd_plist_item key = {.name = lr.items[i].name}, *hit;
            if (lr.items[i].is_prefix)
                continue;
            hit = bsearch(&key, res->items, res->n, sizeof(key), cmp_item);
            if (hit && !hit->is_prefix)
                hit->cached = 1;
        }
        more = lr.truncated && lr.last && (upstream_done || strcmp(lr.last, last) < 0);
        free(after);
        after = more ? strdup(lr.last) : NULL;
        hd_proxy_list_cleanup(&lr);
        if (!more)
            break;
        if (!after) {
            rc = -ENOMEM;
            break;
        }
    }
out:
    free(after);
    return rc;
}

int hd_proxy_list_cloud(struct hd_proxy *p, const char *bucket, const struct hd_plist_opts *o,
                        struct hd_plist_res *res, char *msg, size_t msglen)
{
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    const struct hd_node *owner = NULL;
    struct hd_httpc_call call;
    struct hd_proxy_sig sig;
    struct hd_buf u, url;
    json_t *j = NULL, *e;
    char *after = NULL;
    size_t cap = 0, i;
    int rc, truncated;

    memset(res, 0, sizeof(*res));
    msg[0] = '\0';
    hd_buf_init(&u);
    hd_buf_init(&url);
    hd_httpc_call_init(&call, "GET", "");
    if (!s) {
        snprintf(msg, msglen, "This proxy has no cluster map yet; retry shortly.");
        rc = HD_EUNAVAIL;
        goto out;
    }
    hd_hrw_uname(&u, "aws", NULL, bucket, "");
    rc = u.oom ? -ENOMEM : hd_smap_owner(s, u.data, u.len, &owner);
    if (rc < 0) {
        if (owner)
            snprintf(msg, msglen, "Target %s, which lists bucket %s's upstream, is down.",
                     owner->id, bucket);
        else
            snprintf(msg, msglen, "No target is available to list the upstream.");
        rc = HD_EUNAVAIL;
        goto out;
    }
    after = upstream_after(o);
    hd_buf_printf(&url, "%s/v1/buckets/", owner->url);
    hd_uri_encode(&url, bucket, strlen(bucket), 0);
    hd_buf_printf(&url, "?upstream=true&limit=%zu", o->limit > 1000 ? (size_t)1000 : o->limit);
    add_param(&url, "prefix", o->prefix);
    add_param(&url, "delimiter", o->delimiter);
    add_param(&url, "start_after", after);
    if (url.oom) {
        rc = -ENOMEM;
        goto out;
    }
    call.url = url.data;
    hd_proxy_sign(p, "GET", url.data, &sig);
    call.hdrs = sig.kv;
    call.nhdrs = sig.n;
    call.total_ms = HD_PROXY_FANOUT_MS;
    if (hd_httpc_run(&call) < 0) {
        snprintf(msg, msglen, "Target %s did not answer the upstream listing: %s", owner->id,
                 call.err);
        rc = HD_EUNAVAIL;
        goto out;
    }
    if (call.resp.len)
        j = json_loadb(call.resp.data, call.resp.len, 0, NULL);
    if (call.status != 200 || !json_is_object(j)) {
        const char *m = json_string_value(json_object_get(j, "message"));
        rc = hd_proxy_err_from_json(call.status, j);
        if (rc == 0)
            rc = HD_EUNAVAIL;
        snprintf(msg, msglen, "%s", m ? m : "The upstream listing failed.");
        goto out;
    }
    json_array_foreach(json_object_get(j, "entries"), i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        if (name && (rc = push(res, &cap, name, 0, e)) < 0)
            goto out;
    }
    json_array_foreach(json_object_get(j, "prefixes"), i, e)
    {
        if (json_is_string(e) && (rc = push(res, &cap, json_string_value(e), 1, NULL)) < 0)
            goto out;
    }
    truncated = json_is_true(json_object_get(j, "truncated"));
    if (res->n)
        qsort(res->items, res->n, sizeof(res->items[0]), cmp_item);
    if ((rc = mark_cached(p, bucket, o, res, !truncated, msg, msglen)) < 0)
        goto out;
    res->truncated = truncated;
    if (res->n && !(res->last = strdup(res->items[res->n - 1].name)))
        rc = -ENOMEM;
out:
    json_decref(j);
    free(after);
    hd_httpc_call_cleanup(&call);
    hd_buf_cleanup(&u);
    hd_buf_cleanup(&url);
    hd_smap_unref(s);
    if (rc < 0)
        hd_proxy_list_cleanup(res);
    return rc;
}
