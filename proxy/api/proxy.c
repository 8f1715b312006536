/* proxy: construction from config, auth keys, and the top-level request dispatch. */
#include "proxy/core/core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/json.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/relay.h"
#include "common/sigv2.h"

int hd_proxy_anonymous_read(struct hd_proxy *p, const char *bucket)
{
    struct hd_bmd *b = hd_smap_state_bmd(p->cs);
    const struct hd_bmd_bucket *e = hd_bmd_find(b, bucket);
    json_t *j = e && e->props ? json_loads(e->props, 0, NULL) : NULL;
    int yes = j && json_is_true(json_object_get(j, "anonymous_read"));

    json_decref(j);
    hd_bmd_unref(b);
    return yes;
}

/* A call from another proxy of this cluster (forwarded to the primary). */
static int cluster_trusted(struct hd_req *r, struct hd_proxy *p)
{
    char want[HD_SMAP_SIG_LEN];
    const char *got = hd_req_header(r, "X-Hoard-Cluster");

    if (!*p->secret || !got)
        return 0;
    hd_smap_csig(p->secret, r->method, r->raw_path, want);
    return hd_smap_sig_equal(want, got);
}

int hd_proxy_auth(struct hd_req *r, struct hd_proxy *p, const char *bucket, struct hd_sigv4_auth *a)
{
    int write = strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0;
    const struct hd_key *k;
    const char *src;
    struct hd_sigv4_in in;
    int rc;

    memset(a, 0, sizeof(*a));
    if (cluster_trusted(r, p))
        return 0;
    if (p->keys.n == 0)
        return 1; /* auth off: credentials, if any, are ignored (as on targets) */
    memset(&in, 0, sizeof(in));
    in.method = r->method;
    in.path = r->raw_path;
    in.query = r->raw_query;
    in.headers = r->hdrs;
    in.nheaders = r->nhdrs;
    in.now = time(NULL);
    rc = hd_sigv2_verify(&in, hd_keys_secret_for, &p->keys, a);
    if (rc == 1)
        rc = hd_sigv4_verify(&in, hd_keys_secret_for, &p->keys, a);
    if (rc < 0) {
        hd_stats_inc(HD_ST_AUTH_FAILED);
        HD_LOG(HD_INFO, r->id, "auth failed: %s", hd_strerror(rc));
        return rc;
    }
    if (rc == 1) {
        if (p->keys.n == 0 || (bucket && !write && hd_proxy_anonymous_read(p, bucket)))
            return 1;
        hd_stats_inc(HD_ST_AUTH_FAILED);
        return HD_EMISSINGAUTH;
    }
    k = hd_keys_find(&p->keys, a->access_key);
    if (!k)
        return HD_ENOACCESSKEY;
    if (bucket && hd_key_allows(k, bucket, write) < 0) {
        hd_stats_inc(HD_ST_AUTH_FAILED);
        return HD_EACCESS;
    }
    /* CopyObject also reads its source (targets trust our signature and skip this): check
     * the name the copy will use */
    src = write ? hd_req_header(r, "x-amz-copy-source") : NULL;
    if (src && (rc = hd_key_allows_copy_source(k, src)) < 0) {
        if (rc == HD_EACCESS)
            hd_stats_inc(HD_ST_AUTH_FAILED);
        return rc;
    }
    return 0;
}

int hd_proxy_auth_admin(struct hd_req *r, struct hd_proxy *p)
{
    struct hd_sigv4_auth a;
    const struct hd_key *k;
    int rc;

    if (cluster_trusted(r, p) || (!*p->secret && p->keys.n == 0))
        return 0;
    if (p->keys.n == 0)
        return HD_EACCESS; /* only the cluster header will do */
    rc = hd_proxy_auth(r, p, NULL, &a);
    if (rc < 0)
        return rc;
    k = rc == 0 ? hd_keys_find(&p->keys, a.access_key) : NULL;
    return k && k->all == HD_PERM_RW ? 0 : HD_EACCESS;
}

void hd_proxy_resp_json(struct hd_req *r, int status, json_t *j)
{
    size_t len;
    char *s = j ? hd_json_dump_steal(j, &len) : NULL;

    if (!s) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    hd_resp_buf(r, status, "application/json", s, len);
}

void hd_proxy_resp_conflict(struct hd_req *r, const char *msg)
{
    char *j = hd_json_error(409, "Conflict", msg, r->raw_path, r->id);

    if (!j) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    hd_resp_buf(r, 409, "application/json", j, strlen(j));
}

static char *default_url(const char *listen)
{
    struct hd_buf b;

    hd_buf_init(&b);
    hd_buf_printf(&b, "http://%s", listen);
    return hd_buf_steal(&b, NULL);
}

int hd_proxy_new(const struct hd_config *cfg, struct hd_proxy **out)
{
    struct hd_proxy *p = calloc(1, sizeof(*p));
    const char *url = hd_config_str(cfg, "public_url");
    char *dflt = NULL;
    int rc;

    if (!p)
        return -ENOMEM;
    p->magic = HD_PROXY_MAGIC;
    pthread_mutex_init(&p->mu, NULL);
    p->secret = strdup(hd_config_str(cfg, "cluster.secret"));
    p->data_dir = strdup(hd_config_str(cfg, "data"));
    p->region = strdup(hd_config_str(cfg, "s3.region"));
    p->domain = strdup(hd_config_str(cfg, "s3.domain"));
    if (!p->secret || !p->data_dir || !p->region || !p->domain) {
        rc = -ENOMEM;
        goto fail;
    }
    p->hb_ms = (long)hd_config_int(cfg, "cluster.heartbeat_ms");
    p->dead_after = (int)hd_config_int(cfg, "cluster.dead_after");
    p->s3_redirect = hd_config_bool(cfg, "s3.redirect");
    p->native_redirect = hd_config_bool(cfg, "native.redirect");
    snprintf(p->join, sizeof(p->join), "%s", hd_config_str(cfg, "cluster.join"));
    while (*p->join && p->join[strlen(p->join) - 1] == '/')
        p->join[strlen(p->join) - 1] = '\0';
    p->primary = p->join[0] == '\0';
    if ((rc = hd_keys_parse(&p->keys, hd_config_str(cfg, "auth.keys"))) < 0) {
        HD_LOG(HD_ERROR, NULL,
               "auth.keys: expected ACCESS:SECRET[:rw|ro|BUCKET=ro;BUCKET=rw][,...]");
        goto fail;
    }
    if (!*url)
        url = dflt = default_url(hd_config_str(cfg, "listen"));
    if (!url || strlen(url) >= sizeof(p->self.url)) {
        rc = url ? -ENAMETOOLONG : -ENOMEM;
        goto fail;
    }
    snprintf(p->self.url, sizeof(p->self.url), "%s", url);
    while (p->self.url[strlen(p->self.url) - 1] == '/')
        p->self.url[strlen(p->self.url) - 1] = '\0';
    p->self.type = HD_NODE_PROXY;
    if ((rc = hd_smap_state_open(p->data_dir, &p->cs)) < 0)
        goto fail;
    if ((rc = hd_smap_state_node_id(p->cs, hd_config_str(cfg, "node.id"), 'p', p->self.id)) < 0) {
        HD_LOG(HD_ERROR, NULL, "node.id: cannot set up the node id: %s", hd_strerror(rc));
        goto fail;
    }
    if ((rc = hd_proxy_members_init(p)) < 0)
        goto fail;
    if ((rc = hd_proxy_cloud_new(cfg, &p->cloud)) < 0)
        goto fail;
    free(dflt);
    *out = p;
    return 0;
fail:
    free(dflt);
    hd_proxy_free(p);
    return rc;
}

int hd_proxy_start(struct hd_proxy *p)
{
    return hd_proxy_loop_start(p);
}

void hd_proxy_free(struct hd_proxy *p)
{
    if (!p)
        return;
    hd_proxy_loop_stop(p);
    hd_relay_stop(); /* the HTTP server is stopped: no request uses a relay any more */
    hd_smap_state_close(p->cs);
    hd_keys_cleanup(&p->keys);
    hd_proxy_cloud_free(p->cloud);
    free(p->seen);
    free(p->secret);
    free(p->data_dir);
    free(p->region);
    free(p->domain);
    pthread_mutex_destroy(&p->mu);
    p->magic = 0;
    free(p);
}

static void health(struct hd_req *r, struct hd_proxy *p)
{
    const char *ready = hd_req_param(r, "ready");
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    int ok = atomic_load(&p->ready) && s;
    json_t *j;

    r->op = HD_OP_ADMIN;
    j = json_pack("{s:s, s:s, s:s, s:b, s:I, s:b}", "status", ok ? "ok" : "starting", "role",
                  "proxy", "id", p->self.id, "primary", p->primary, "smap_version",
                  (json_int_t)(s ? s->version : 0), "ready", ok);
    hd_smap_unref(s);
    if (ready && strcmp(ready, "false") != 0 && !ok) {
        hd_proxy_resp_json(r, 503, j);
        return;
    }
    hd_proxy_resp_json(r, 200, j);
}

static void metrics(struct hd_req *r)
{
    struct hd_buf b;
    size_t len;
    char *s;

    r->op = HD_OP_ADMIN;
    hd_buf_init(&b);
    hd_metrics_render(&b);
    if (b.oom) {
        hd_buf_cleanup(&b);
        hd_resp_err(r, -ENOMEM);
        return;
    }
    s = hd_buf_steal(&b, &len);
    hd_resp_buf(r, 200, "text/plain; version=0.0.4", s, len);
}

void hd_proxy_handle(struct hd_req *r, void *ctx)
{
    struct hd_proxy *p = ctx;
    const char *path = r->raw_path;

    if (!p || p->magic != HD_PROXY_MAGIC) {
        hd_resp_err(r, HD_EINTERNAL);
        return;
    }
    if (strcmp(path, "/v1/health") == 0) {
        health(r, p);
    } else if (strcmp(path, "/metrics") == 0) {
        metrics(r);
    } else if (strcmp(path, "/v1/cluster/capacity") == 0) {
        hd_proxy_capacity_handle(r, p);
    } else if (strcmp(path, "/v1/cluster") == 0 || strncmp(path, "/v1/cluster/", 12) == 0 ||
               strcmp(path, "/v1/metasync") == 0) {
        r->api = HD_API_NATIVE;
        r->op = HD_OP_ADMIN;
        hd_proxy_cluster_handle(r, p);
    } else if (strncmp(path, "/v1/jobs", 8) == 0 && (path[8] == '\0' || path[8] == '/')) {
        hd_proxy_jobs_handle(r, p);
    } else if (strncmp(path, "/v1/objects/", 12) == 0) {
        r->api = HD_API_NATIVE;
        hd_proxy_route_object(r, p);
    } else if (strcmp(path, "/v1/buckets") == 0 || strncmp(path, "/v1/buckets/", 12) == 0) {
        r->api = HD_API_NATIVE;
        hd_proxy_buckets_handle(r, p);
    } else if (strcmp(path, "/v1/batch") == 0) {
        r->api = HD_API_NATIVE;
        hd_proxy_batch(r, p);
    } else if (strncmp(path, "/v1/", 4) == 0 || strcmp(path, "/v1") == 0) {
        r->api = HD_API_NATIVE;
        hd_resp_err(r, HD_ENOTFOUND);
    } else if (path[0] == '/') {
        hd_proxy_s3(r, p);
    } else {
        r->api = HD_API_S3;
        hd_resp_err(r, HD_EBADREQ);
    }
}
