/* target: construction from config and the top-level request dispatch. */
#include "target/api/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/metrics.h"
#include "target/api/lifecycle.h"
#include "target/api/mpu.h"
#include "target/cluster/copy.h"
#include "target/cluster/shard.h"

static int split_mountpaths(const char *spec, const char *data, char ***out, size_t *n)
{
    char *dup, *save = NULL, *tok, **v = NULL;
    size_t cnt = 0;

    if (!*spec) {
        struct hd_buf b;
        hd_buf_init(&b);
        hd_buf_printf(&b, "%s/mp1", data);
        v = malloc(sizeof(*v));
        if (!v || b.oom) {
            free(v);
            hd_buf_cleanup(&b);
            return -ENOMEM;
        }
        v[0] = hd_buf_steal(&b, NULL);
        *out = v;
        *n = 1;
        return 0;
    }
    dup = strdup(spec);
    if (!dup)
        return -ENOMEM;
    for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char **nv = realloc(v, (cnt + 1) * sizeof(*v));
        if (!nv)
            break;
        v = nv;
        v[cnt++] = strdup(tok);
    }
    free(dup);
    *out = v;
    *n = cnt;
    return cnt ? 0 : -EINVAL;
}

/* The cluster layer's news of BMD changes, for the layers above it. */
static void bucket_gone(void *arg, const char *bucket)
{
    struct hd_target *t = arg;

    hd_mpu_drop_bucket(t, bucket);
}

static void bmd_applied(void *arg)
{
    struct hd_target *t = arg;

    hd_cache_refresh(t->cache); /* S3-backed buckets and their upstreams */
}

/* A valid client key (cluster reads on a target). */
static int client_ok(void *arg, struct hd_req *r)
{
    struct hd_target *t = arg;
    struct hd_sigv4_auth a;

    return t->keys.n > 0 && hd_keys_verify(&t->keys, r, &a) == 0 && !a.anonymous;
}

int hd_target_new(const struct hd_config *cfg, struct hd_target **out)
{
    struct hd_target *t = calloc(1, sizeof(*t));
    struct hd_cache_deps deps;
    struct hd_bmd_hooks hooks;
    struct hd_store_cfg sc;
    char **mps = NULL;
    size_t nmp = 0, i;
    int rc;

    if (!t)
        return -ENOMEM;
    t->magic = HD_TARGET_MAGIC;
    t->max_object = (uint64_t)hd_config_int(cfg, "store.max_object");
    t->complete_keepalive = (uint64_t)hd_config_int(cfg, "s3.complete_keepalive");
    t->complete_keepalive_ms = (unsigned)hd_config_int(cfg, "s3.complete_keepalive_ms");
    t->region = strdup(hd_config_str(cfg, "s3.region"));
    t->domain = strdup(hd_config_str(cfg, "s3.domain"));
    if ((rc = hd_keys_parse(&t->keys, hd_config_str(cfg, "auth.keys"))) < 0) {
        HD_LOG(HD_ERROR, NULL,
               "auth.keys: expected ACCESS:SECRET[:rw|ro|BUCKET=ro;BUCKET=rw][,...]");
        goto fail;
    }
    if ((rc = split_mountpaths(hd_config_str(cfg, "mountpaths"), hd_config_str(cfg, "data"), &mps,
                               &nmp)) < 0)
        goto fail;
    memset(&sc, 0, sizeof(sc));
    sc.data_dir = hd_config_str(cfg, "data");
    sc.mountpaths = (const char *const *)mps;
    sc.nmp = nmp;
    sc.fsync = hd_config_bool(cfg, "store.fsync");
    sc.meta_cache = (size_t)hd_config_int(cfg, "store.meta_cache");
    sc.open_files = (long)hd_config_int(cfg, "store.open_files");
    {
        struct rlimit rl; /* connections, catalogs and upstreams need descriptors too */
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
            sc.open_files > (long)(rl.rlim_cur / 4))
            sc.open_files = (long)(rl.rlim_cur / 4);
    }
    sc.capacity = (uint64_t)hd_config_int(cfg, "space.capacity");
    sc.oos_pct = (int)hd_config_int(cfg, "space.oos");
    rc = hd_store_open(&sc, &t->st);
    for (i = 0; i < nmp; i++)
        free(mps[i]);
    free(mps);
    if (rc < 0)
        goto fail;
    /* the layers bottom up; each registers its job kinds and hooks with the ones below */
    if ((rc = hd_pool_new((int)hd_config_int(cfg, "upstream.workers"), &t->pool)) < 0 ||
        (hd_config_int(cfg, "store.commit_workers") > 0 &&
         (rc = hd_pool_new((int)hd_config_int(cfg, "store.commit_workers"), &t->disk)) < 0) ||
        (rc = hd_jobs_new(hd_config_str(cfg, "data"), &t->jobs)) < 0)
        goto fail;
    if ((rc = hd_tcluster_new(cfg, t->st, t->pool, &t->cl)) < 0) /* standalone too: the node id */
        goto fail;
    hd_jobs_set_admit(t->jobs, hd_target_jobs_admit, t);
    if ((rc = hd_rb_new(t->cl, t->jobs, &t->rb)) < 0 ||
        (rc = hd_shard_register(t->jobs, t->cl)) < 0 || (rc = hd_copy_register(t->jobs, t->cl)) < 0)
        goto fail;
    deps.cl = t->cl;
    deps.js = t->jobs;
    deps.rb = t->rb;
    deps.pool = t->pool;
    if ((rc = hd_cache_new(cfg, &deps, &t->cache)) < 0) /* reads the buckets the BMD gave */
        goto fail;
    if ((rc = hd_lifecycle_register(t, hd_config_int(cfg, "lifecycle.day_ms"))) < 0)
        goto fail;
    hooks.bucket_gone = bucket_gone;
    hooks.applied = bmd_applied;
    hooks.client_ok = client_ok;
    hooks.arg = t;
    hd_tcluster_set_hooks(t->cl, &hooks);
    *out = t;
    return 0;
fail:
    hd_target_free(t);
    return rc;
}

int hd_target_start(struct hd_target *t)
{
    int rc = hd_tcluster_start(t->cl);

    if (rc == 0)
        rc = hd_cache_start(t->cache);
    if (rc == 0)
        hd_jobs_resume(t->jobs);
    return rc;
}

int hd_target_prestop(const struct hd_config *cfg, long timeout_s, FILE *out, char *err,
                      size_t errlen)
{
    return hd_tcluster_prestop(cfg, timeout_s, out, err, errlen);
}

void hd_target_free(struct hd_target *t)
{
    if (!t)
        return;
    hd_tcluster_stop(t->cl); /* no more joins and heartbeats; waits for the join end */
    hd_cache_stop(t->cache); /* upstream transfers of jobs end now */
    hd_pool_stop(t->pool);   /* and so do the pool's */
    hd_jobs_free(t->jobs);   /* jobs use the cache, the cluster state and the store */
    hd_pool_free(t->pool);   /* its tasks use the cache, the cluster state and the store */
    hd_pool_free(t->disk);   /* commits still queued run to the end */
    hd_cache_free(t->cache);
    hd_rb_free(t->rb);
    hd_tcluster_free(t->cl);
    hd_store_close(t->st);
    hd_keys_cleanup(&t->keys);
    free(t->region);
    free(t->domain);
    t->magic = 0;
    free(t);
}

static void health(struct hd_req *r)
{
    static const char body[] = "{\"status\":\"ok\",\"role\":\"target\"}";

    r->op = HD_OP_ADMIN;
    hd_resp_copy(r, 200, "application/json", body, sizeof(body) - 1);
}

void hd_target_handle(struct hd_req *r, void *ctx)
{
    struct hd_target *t = ctx;
    const char *p = r->raw_path;

    if (!t || t->magic != HD_TARGET_MAGIC) {
        hd_resp_err(r, HD_EINTERNAL);
        return;
    }
    if (hd_tcluster_handle(t->cl, r) != HD_OK)
        return; /* health, cluster endpoint, no valid proxy signature, or waiting for the join */
    if (strcmp(p, "/v1/health") == 0) {
        health(r);
    } else if (strcmp(p, "/metrics") == 0) {
        hd_resp_metrics(r);
    } else if (strncmp(p, "/v1/jobs", 8) == 0 && (p[8] == '\0' || p[8] == '/')) {
        int rc = hd_target_auth_admin(r, t);
        r->api = HD_API_NATIVE;
        if (rc < 0)
            hd_resp_err(r, rc);
        else
            hd_jobs_handle(r, t->jobs);
    } else if (strncmp(p, "/v1/plans", 9) == 0 && (p[9] == '\0' || p[9] == '/')) {
        hd_target_plans(r, t);
    } else if (strcmp(p, "/v1/daemon") == 0) {
        hd_daemon_handle(r, t);
    } else if (strcmp(p, "/v1/batch") == 0 || strncmp(p, "/v1/batch/", 10) == 0) {
        hd_target_batch(r, t);
    } else if (strncmp(p, "/v1/", 4) == 0) {
        hd_native_handle(r, t);
    } else if (strcmp(p, "/s3") == 0 || strncmp(p, "/s3/", 4) == 0) {
        hd_s3_handle(r, t, p[3] ? p + 3 : "/");
    } else if (p[0] == '/') {
        hd_s3_handle(r, t, p);
    } else {
        r->api = HD_API_S3;
        hd_resp_err(r, HD_EBADREQ);
    }
}
