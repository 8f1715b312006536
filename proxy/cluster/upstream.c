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
#include "proxy/cluster/cluster.h"

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
    } else if (bp.write_back) {
        snprintf(msg, msglen, "write_policy \"back\" is for S3-backed buckets (provider=aws).");
        return HD_EBADARG;
    }
    *out = hd_bprops_dump_from(&bp, body);
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

/* Whether bucket is one to look up at the default upstream now (not known, not a recent
 * miss, a valid name). */
static int autoreg_wanted(struct hd_proxy *p, const char *bucket)
{
    struct hd_proxy_cloud *c = p->cloud;
    struct hd_bmd *b;
    int known;

    if (!c || !c->dflt.endpoint[0] || !bucket || hd_bucket_name_check(bucket) < 0)
        return 0;
    b = hd_smap_state_bmd(p->cs);
    known = hd_bmd_find(b, bucket) != NULL;
    hd_bmd_unref(b);
    return !known && !recent_miss(c, bucket);
}

struct autoreg {
    struct hd_proxy *p;
    char bucket[64];
};

/* On a pool thread: HEADs the bucket at the default upstream and registers it when it is
 * there; every other outcome is remembered as a miss for MISS_TTL. */
static void autoreg_run(void *arg)
{
    struct autoreg *ar = arg;
    struct hd_proxy *p = ar->p;
    struct hd_proxy_cloud *c = p->cloud;
    const char *bucket = ar->bucket;
    struct hd_bprops bp;
    struct hd_s3c s3;
    struct hd_s3c_err err;
    char *props;
    int rc;

    if (!autoreg_wanted(p, bucket)) /* another request registered it meanwhile */
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
    rc = props ? hd_proxy_bucket_create_props(p, bucket, "aws", props, NULL, 0) : -ENOMEM;
    free(props);
    if (rc == 0) {
        HD_LOG(HD_INFO, NULL, "bucket %s registered as S3-backed (found at %s)", bucket,
               c->dflt.endpoint);
    } else if (rc != HD_EBUCKETEXISTS) {
        HD_LOG(HD_WARN, NULL, "bucket %s: registering it failed: %s", bucket, hd_strerror(rc));
        add_miss(c, bucket);
    }
}

int hd_proxy_autoreg(struct hd_req *r, struct hd_proxy *p, const char *bucket)
{
    struct autoreg *ar;

    if (r->deferrals || !autoreg_wanted(p, bucket))
        return HD_DECLINED;
    if (!(ar = calloc(1, sizeof(*ar))))
        return HD_DECLINED;
    ar->p = p;
    snprintf(ar->bucket, sizeof(ar->bucket), "%s", bucket);
    return hd_pool_defer(p->pool, r, autoreg_run, ar, free);
}

/* ---- listing ---- */
