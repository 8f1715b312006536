/* calls: how a proxy calls other nodes. Signatures (proxy->target and proxy->proxy), the
 * owner of an object, one path on every live target of an smap in parallel (jobs, listings,
 * bucket-wide calls), calls to the primary. The calls block the calling thread, bounded by
 * their timeouts. */
#include "proxy/core/core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/hrw.h"
#include "common/httpc.h"
#include "common/log.h"
#include <time.h>

void hd_proxy_fan_cleanup(struct hd_proxy_fan *f)
{
    size_t i;

    for (i = 0; i < f->n; i++)
        hd_httpc_call_cleanup(&f->calls[i]);
    free(f->calls);
    free(f->urls);
    free(f->nodes);
    memset(f, 0, sizeof(*f));
}

static int has_prefix(const char *path, const char *const *pre, size_t npre)
{
    size_t i, n;

    for (i = 0; i < npre; i++) {
        n = strlen(pre[i]);
        if (strncmp(path, pre[i], n) == 0 && (path[n] == '\0' || path[n] == '/' || path[n] == '?'))
            return 1;
    }
    return 0;
}

/* The capability a target needs to have signed its answer on path (HD_NODE_CAP_*); 0 for a
 * path whose answers are not signed. */
static unsigned signing_cap(const char *path)
{
    static const char *const admin[] = {"/v1/jobs", "/v1/plans", "/v1/daemon"};
    static const char *const buckets[] = {"/v1/buckets"};

    if (has_prefix(path, admin, sizeof(admin) / sizeof(admin[0])))
        return HD_NODE_CAP_SIGNED_ADMIN;
    if (has_prefix(path, buckets, sizeof(buckets) / sizeof(buckets[0])))
        return HD_NODE_CAP_SIGNED_BUCKETS;
    return 0;
}

int hd_proxy_fan_out(struct hd_proxy *p, struct hd_smap *s, const char *method, const char *path,
                     const char *body, int all, long total_ms, struct hd_proxy_fan *f)
{
    size_t i, cap = s->n ? s->n : 1;
    unsigned need = signing_cap(path);

    memset(f, 0, sizeof(*f));
    f->calls = calloc(cap, sizeof(*f->calls));
    f->urls = calloc(cap, sizeof(*f->urls));
    f->nodes = calloc(cap, sizeof(*f->nodes));
    if (!f->calls || !f->urls || !f->nodes) {
        hd_proxy_fan_cleanup(f);
        return -ENOMEM;
    }
    for (i = 0; i < s->n; i++) {
        const struct hd_node *nd = &s->nodes[i];
        size_t k = f->n;
        if (nd->type != HD_NODE_TARGET || nd->down || (nd->flags && !all))
            continue;
        snprintf(f->urls[k], sizeof(f->urls[k]), "%s%s", nd->url, path);
        hd_httpc_call_init(&f->calls[k], method, f->urls[k]);
        f->calls[k].na = p->na;
        snprintf(f->calls[k].to, sizeof(f->calls[k].to), "%s", nd->id);
        if (body) {
            f->calls[k].body = body;
            f->calls[k].blen = strlen(body);
            f->calls[k].ctype = "application/json";
        }
        f->calls[k].total_ms = total_ms;
        /* a target that signs its answers on this path: a forged or rewritten one fails the
         * call */
        f->calls[k].signed_resp = need && (nd->caps & need) != 0;
        f->nodes[k] = nd;
        f->n++;
    }
    hd_httpc_run_all(f->calls, f->n, 0);
    return 0;
}

json_t *hd_proxy_call_json(const struct hd_httpc_call *c)
{
    if (c->rc < 0 || !c->resp.data)
        return NULL;
    return json_loadb(c->resp.data, c->resp.len, 0, NULL);
}

/* The id of the node url points to, into to ("" when the smap has none: the call is then
 * signed for HD_NODEAUTH_ANY, which only joins accept). */
static void recipient(struct hd_proxy *p, const char *url, char *to, size_t max)
{
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    const struct hd_node *n = hd_smap_find_url(s, url);

    snprintf(to, max, "%s", n ? n->id : "");
    hd_smap_unref(s);
}

void hd_proxy_call_sign(struct hd_proxy *p, struct hd_httpc_call *c)
{
    c->na = p->na;
    recipient(p, c->url, c->to, sizeof(c->to));
}

int hd_proxy_sign(struct hd_proxy *p, const char *method, const char *url, const char *body_sha256,
                  const struct hd_kv *hdrs, size_t nhdrs, struct hd_nodesig *sig)
{
    char to[HD_NODE_ID_MAX];

    recipient(p, url, to, sizeof(to));
    return hd_nodeauth_sign(p->na, method, url, to[0] ? to : NULL, body_sha256, hdrs, nhdrs, sig);
}

/* "ais" for native buckets, "aws" for S3-backed ones (DESIGN.md's uname). */
static const char *provider_of(struct hd_proxy *p, const char *bucket, const char *param)
{
    struct hd_bmd *b = hd_smap_state_bmd(p->cs);
    const struct hd_bmd_bucket *e = hd_bmd_find(b, bucket);
    const char *pv = hd_hrw_provider(e ? e->provider : param);

    hd_bmd_unref(b);
    return pv;
}

int hd_proxy_uname(struct hd_proxy *p, const char *bucket, const char *key, char **out, size_t *len)
{
    struct hd_buf b;

    hd_buf_init(&b);
    hd_hrw_uname(&b, provider_of(p, bucket, NULL), NULL, bucket, key);
    if (b.oom) {
        hd_buf_cleanup(&b);
        return -ENOMEM;
    }
    *out = hd_buf_steal(&b, len);
    return 0;
}

int hd_proxy_primary_call(struct hd_proxy *p, const char *method, const char *path,
                          const json_t *in, long *status, json_t **out)
{
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    const struct hd_node *prim = s ? hd_smap_find(s, s->primary) : NULL;
    char url[HD_NODE_URL_MAX + 2048], to[HD_NODE_ID_MAX];
    int rc;

    if (prim && strcmp(prim->id, p->self.id) == 0) { /* stepped down, no new primary yet */
        hd_smap_unref(s);
        HD_LOG(HD_DEBUG, NULL, "cluster: no primary to send %s %s to yet (an election is due)",
               method, path);
        return HD_EUNAVAIL;
    }
    snprintf(url, sizeof(url), "%s%s", prim ? prim->url : p->join, path);
    snprintf(to, sizeof(to), "%s", prim ? prim->id : "");
    hd_smap_unref(s);
    rc = hd_httpc_json(p->na, to[0] ? to : NULL, method, url, in, HD_PROXY_FANOUT_MS, status, out);
    if (rc < 0)
        HD_LOG(HD_WARN, NULL, "cluster: call to the primary failed: %s %s: %s", method, url,
               hd_strerror(rc));
    return rc;
}

int hd_proxy_err_from_json(long status, const json_t *j)
{
    const char *code = json_string_value(json_object_get(j, "code"));
    int c;

    if (status >= 200 && status < 300)
        return 0;
    for (c = HD_EBASE; code && c < HD_ELAST; c++) {
        const struct hd_err_info *e = hd_err_info(c);
        if (e->http_status == status && strcmp(e->s3_code, code) == 0)
            return c;
    }
    if (status == 404)
        return HD_ENOTFOUND;
    if (status == 503)
        return HD_EUNAVAIL;
    return status >= 500 ? HD_EINTERNAL : HD_EBADREQ;
}

int hd_proxy_post_job(struct hd_proxy *p, struct hd_smap *s, const char *id, const char *kind,
                      const char *bucket, json_t *args, int all, char *msg, size_t msglen,
                      size_t *ok)
{
    json_t *body = json_pack("{s:s, s:s, s:s, s:o}", "id", id, "kind", kind, "bucket", bucket,
                             "args", args ? json_incref(args) : json_object());
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    struct hd_proxy_fan f;
    size_t i;
    int rc = 0;

    *ok = 0;
    json_decref(body);
    if (!text)
        return -ENOMEM;
    if ((rc = hd_proxy_fan_out(p, s, "POST", "/v1/jobs", text, all, HD_PROXY_FANOUT_MS, &f)) < 0) {
        free(text);
        return rc;
    }
    for (i = 0; i < f.n; i++) {
        const struct hd_httpc_call *c = &f.calls[i];
        if (c->rc == 0 && (c->status == 200 || c->status == 201)) {
            (*ok)++;
        } else if (rc == 0) {
            json_t *e = hd_proxy_call_json(c);
            rc = c->rc < 0 ? HD_EUNAVAIL : hd_proxy_err_from_json(c->status, e);
            snprintf(msg, msglen, "target %s: %s", f.nodes[i]->id,
                     c->rc < 0 ? c->err
                     : json_string_value(json_object_get(e, "message"))
                         ? json_string_value(json_object_get(e, "message"))
                         : "job refused");
            json_decref(e);
        }
    }
    if (rc == 0 && f.n == 0) {
        rc = HD_EUNAVAIL;
        snprintf(msg, msglen, "No live target to run the job.");
    }
    hd_proxy_fan_cleanup(&f);
    free(text);
    return rc;
}

int hd_proxy_jobs_start_all(struct hd_proxy *p, struct hd_smap *s, const char *id, const char *kind,
                            const char *bucket, json_t *args, int all, char *msg, size_t msglen)
{
    struct hd_proxy_fan f;
    size_t ok;
    int rc = hd_proxy_post_job(p, s, id, kind, bucket, args, all, msg, msglen, &ok);

    if (rc < 0 && ok) {
        char path[160];
        snprintf(path, sizeof(path), "/v1/jobs/%s", id);
        if (hd_proxy_fan_out(p, s, "DELETE", path, NULL, all, HD_PROXY_FANOUT_MS, &f) == 0)
            hd_proxy_fan_cleanup(&f);
    }
    return rc;
}

int hd_proxy_owner(struct hd_proxy *p, const char *bucket, const char *key, const char *provider,
                   char **url, char id[HD_NODE_ID_MAX], char smapv[HD_SMAP_VSTR_MAX], char *msg,
                   size_t msglen)
{
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    const struct hd_node *owner = NULL;
    struct hd_buf uname;
    int rc;

    *url = NULL;
    msg[0] = '\0';
    hd_buf_init(&uname);
    if (!s) {
        snprintf(msg, msglen, "This proxy has no cluster map yet; retry shortly.");
        rc = HD_EUNAVAIL;
        goto out;
    }
    hd_hrw_uname(&uname, provider_of(p, bucket, provider), NULL, bucket, key);
    if (uname.oom) {
        rc = -ENOMEM;
        goto out;
    }
    rc = hd_smap_owner(s, uname.data, uname.len, &owner);
    if (rc < 0 && !owner) {
        snprintf(msg, msglen,
                 "No target is available: none has joined the cluster, or all are in "
                 "maintenance.");
        rc = HD_EUNAVAIL;
        goto out;
    }
    if (rc < 0) {
        snprintf(msg, msglen, "Target %s, which owns this object, is down; retry when it is back.",
                 owner->id);
        rc = HD_EUNAVAIL;
        goto out;
    }
    if (!(*url = strdup(owner->url)))
        rc = -ENOMEM;
    snprintf(id, HD_NODE_ID_MAX, "%s", owner->id);
    if (smapv)
        hd_smap_vstr(s, smapv);
out:
    hd_buf_cleanup(&uname);
    hd_smap_unref(s);
    return rc < 0 ? rc : 0;
}
