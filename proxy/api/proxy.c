/* proxy: construction from config (the layers bottom up) and the top-level request dispatch. */
#include "proxy/proxy.h"
#include "proxy/api/api.h"
#include "proxy/cluster/cluster.h"
#include "proxy/jobs/jobs.h"

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
#include "common/nodeauth.h"
#include "common/relay.h"
#include "common/sigv2.h"
#include "common/tls.h"

static char *default_url(const char *listen)
{
    struct hd_buf b;

    hd_buf_init(&b);
    hd_buf_printf(&b, "%s://%s", hd_tls_scheme(), listen);
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
    pthread_mutex_init(&p->term_mu, NULL);
    pthread_mutex_init(&p->grant_mu, NULL);
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
    p->loop_stall_ms = (long)hd_config_int(cfg, "cluster.loop_stall_ms");
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
    if ((rc = hd_nodeauth_new(p->secret, p->self.id, &p->na)) < 0)
        goto fail;
    if ((rc = hd_proxy_members_init(p)) < 0)
        goto fail;
    if ((rc = hd_proxy_cloud_new(cfg, &p->cloud)) < 0 || (rc = hd_pool_new(8, &p->pool)) < 0 ||
        (rc = hd_relay_new(256, &p->relay)) < 0)
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
    hd_relay_free(p->relay); /* the HTTP server is stopped: no request uses a relay any more */
    hd_pool_free(p->pool);
    hd_smap_state_close(p->cs);
    hd_keys_cleanup(&p->keys);
    hd_nodeauth_free(p->na);
    hd_proxy_cloud_free(p->cloud);
    free(p->seen);
    free(p->grants);
    pthread_mutex_destroy(&p->term_mu);
    pthread_mutex_destroy(&p->grant_mu);
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
    const char *prr = hd_req_param(r, "prr"); /* AIStore: primary ready (SDK is_ready()) */
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    int ok = atomic_load(&p->ready) && s;
    json_t *j;

    r->op = HD_OP_ADMIN;
    j = json_pack("{s:s, s:s, s:s, s:b, s:I, s:b}", "status", ok ? "ok" : "starting", "role",
                  "proxy", "id", p->self.id, "primary", p->primary, "smap_version",
                  (json_int_t)(s ? s->version : 0), "ready", ok);
    hd_smap_unref(s);
    if (!ready && hd_query_find(&r->query, "readiness"))
        ready = "true";
    if (!ready && prr)
        ready = prr;
    if (ready && strcmp(ready, "false") != 0 && !ok) {
        hd_resp_json(r, 503, j);
        return;
    }
    hd_resp_json(r, 200, j);
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
        hd_resp_metrics(r);
    } else if (strcmp(path, "/v1/cluster/capacity") == 0) {
        hd_proxy_capacity_handle(r, p);
    } else if (strcmp(path, "/v1/daemon") == 0 ||
               (strcmp(path, "/v1/cluster") == 0 && hd_req_param(r, "what"))) {
        hd_proxy_ais_daemon(r, p);
    } else if (strncmp(path, "/v1/reverse", 11) == 0 && (path[11] == '\0' || path[11] == '/')) {
        hd_proxy_ais_node_status(r, p);
    } else if (strcmp(path, "/v1/tokens") == 0) {
        hd_proxy_ais_tokens(r, p);
    } else if (strncmp(path, "/v1/users/", 10) == 0) {
        hd_proxy_ais_login(r, p);
    } else if (strncmp(path, "/v1/ml/moss", 11) == 0 && (path[11] == '\0' || path[11] == '/')) {
        r->api = HD_API_NATIVE;
        hd_proxy_moss(r, p);
    } else if (strcmp(path, "/v1/cluster") == 0 || strncmp(path, "/v1/cluster/", 12) == 0 ||
               strcmp(path, "/v1/metasync") == 0) {
        r->api = HD_API_NATIVE;
        r->op = HD_OP_ADMIN;
        hd_proxy_cluster_handle(r, p);
    } else if (strncmp(path, "/v1/jobs", 8) == 0 && (path[8] == '\0' || path[8] == '/')) {
        hd_proxy_jobs_handle(r, p);
    } else if (strncmp(path, "/v1/plans", 9) == 0 && (path[9] == '\0' || path[9] == '/')) {
        hd_proxy_plans_handle(r, p);
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
