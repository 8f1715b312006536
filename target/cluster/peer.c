#include "target/cluster/peer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/hrw.h"
#include "common/httpc.h"
#include "common/httputil.h"
#include "common/nodeauth.h"
#include "common/smap.h"
#include "target/cluster/cluster.h"
#include <curl/curl.h>
#include <strings.h>

#include "common/log.h"
#include "common/tls.h"

int hd_peer_object_url(struct hd_tcluster *cl, const char *bucket, const char *name,
                       const char *archpath, char **url, int *self, char *msg, size_t msglen)
{
    struct hd_smap *s = hd_tcluster_smap(cl);
    const struct hd_node *owner = NULL;
    struct hd_bucket_info bi;
    struct hd_buf u;
    int rc;

    *url = NULL;
    hd_buf_init(&u);
    if (!s) { /* standalone: what is not here does not exist */
        snprintf(msg, msglen, "%s/%s: no such object", bucket, name);
        rc = HD_ENOSUCHKEY;
        goto out;
    }
    memset(&bi, 0, sizeof(bi));
    hd_store_bucket_get(hd_tcluster_store(cl), bucket, &bi);
    hd_hrw_uname(&u,
                 strcmp(bi.provider, "aws") == 0 || strcmp(bi.provider, "s3") == 0 ? "aws" : "ais",
                 NULL, bucket, name);
    rc = u.oom ? -ENOMEM : hd_smap_owner(s, u.data, u.len, &owner);
    if (rc < 0) {
        snprintf(msg, msglen, "%s/%s: %s", bucket, name,
                 owner ? "its owner is down" : "no target is available");
        goto out;
    }
    *self = strcmp(owner->id, hd_tcluster_id(cl)) == 0;
    hd_buf_reset(&u);
    hd_buf_printf(&u, "%s/v1/objects/", owner->url);
    hd_uri_encode(&u, bucket, strlen(bucket), 0);
    hd_buf_puts(&u, "/");
    hd_uri_encode(&u, name, strlen(name), 1);
    if (archpath) {
        hd_buf_puts(&u, "?archpath=");
        hd_uri_encode(&u, archpath, strlen(archpath), 0);
    }
    if (u.oom) {
        rc = -ENOMEM;
        goto out;
    }
    *url = hd_buf_steal(&u, NULL);
out:
    hd_buf_cleanup(&u);
    hd_smap_unref(s);
    return rc;
}

/* The id of the node url points to ("" when the smap has none). */
static void recipient(struct hd_tcluster *cl, const char *url, char to[HD_NODE_ID_MAX])
{
    struct hd_smap *s = hd_tcluster_smap(cl);
    const struct hd_node *n = hd_smap_find_url(s, url);

    snprintf(to, HD_NODE_ID_MAX, "%s", n ? n->id : "");
    hd_smap_unref(s);
}

int hd_peer_sign(struct hd_tcluster *cl, const char *method, const char *url,
                 const char *body_sha256, char ***hdrs, size_t *n)
{
    char to[HD_NODE_ID_MAX];

    recipient(cl, url, to);
    return hd_nodeauth_sign_lines(hd_tcluster_nodeauth(cl), method, url, to[0] ? to : NULL,
                                  body_sha256 ? body_sha256 : HD_NODEAUTH_EMPTY_SHA256, hdrs, n);
}

void hd_peer_call_sign(struct hd_tcluster *cl, struct hd_httpc_call *c)
{
    c->na = hd_tcluster_nodeauth(cl);
    recipient(cl, c->url, c->to);
}

/* ---- streaming an object from another target ---- */

#define GFN_TIMEOUT_S 60

struct gfn {
    struct hd_put *p;
    char *xmeta;
    long status;
    int werr;
    uint64_t total, length;
    int have_total, have_length;
    long hstatus; /* of the answer being read */
};

int hd_peer_object_path(struct hd_buf *b, const char *base, const char *bucket, const char *key)
{
    hd_buf_puts(b, base);
    hd_buf_puts(b, "/v1/objects/");
    hd_uri_encode(b, bucket, strlen(bucket), 0);
    hd_buf_puts(b, "/");
    hd_uri_encode(b, key, strlen(key), 1);
    return b->oom ? -ENOMEM : 0;
}

struct curl_slist *hd_peer_sign_curl(struct curl_slist *h, struct hd_tcluster *cl,
                                     const char *method, const char *url, const char *body_sha256)
{
    char to[HD_NODE_ID_MAX];

    recipient(cl, url, to);
    return hd_nodeauth_sign_curl(hd_tcluster_nodeauth(cl), h, method, url, to[0] ? to : NULL,
                                 body_sha256);
}

static size_t gfn_header(char *p, size_t size, size_t n, void *arg)
{
    struct gfn *g = arg;
    size_t len = size * n;
    static const char key[] = "x-hoard-obj-meta:";
    char hv[128];

    if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) { /* a new answer: forget the last one's */
        const char *sp = memchr(p, ' ', len);
        g->have_total = g->have_length = 0;
        g->hstatus = sp ? strtol(sp + 1, NULL, 10) : 0;
        return len;
    }
    if (len > 14 && len < sizeof(hv) + 14 && strncasecmp(p, "content-range:", 14) == 0) {
        uint64_t a, b;
        const char *s = hv;
        snprintf(hv, sizeof(hv), "%.*s", (int)(len - 14), p + 14);
        hv[strcspn(hv, "\r\n")] = '\0';
        while (*s == ' ')
            s++;
        if (strncmp(s, "bytes */", 8) == 0) /* 416: only the size */
            g->have_total = hd_parse_u64(s + 8, &g->total) == 0;
        else
            g->have_total = hd_content_range_parse(s, &a, &b, &g->total) == 0;
        return len;
    }
    if (len > 15 && len < sizeof(hv) + 15 && strncasecmp(p, "content-length:", 15) == 0) {
        const char *s = hv;
        snprintf(hv, sizeof(hv), "%.*s", (int)(len - 15), p + 15);
        hv[strcspn(hv, "\r\n")] = '\0';
        while (*s == ' ')
            s++;
        g->have_length = hd_parse_u64(s, &g->length) == 0;
        return len;
    }
    if (len > sizeof(key) && strncasecmp(p, key, sizeof(key) - 1) == 0) {
        const char *v = p + sizeof(key) - 1;
        size_t vl = len - (sizeof(key) - 1);
        while (vl && (*v == ' ' || *v == '\t'))
            v++, vl--;
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
            vl--;
        free(g->xmeta);
        g->xmeta = strndup(v, vl);
    }
    return len;
}

static size_t gfn_body(char *p, size_t size, size_t n, void *arg)
{
    struct gfn *g = arg;

    if (g->hstatus >= 300)
        return size * n; /* an error's body (without CURLOPT_FAILONERROR): not the object */
    if (hd_put_write(g->p, p, size * n) < 0) {
        g->werr = 1;
        return 0;
    }
    return size * n;
}

int hd_peer_get_into(struct hd_tcluster *cl, const char *node_url, const char *bucket,
                     const char *key, int local, const struct hd_cond *cond, struct hd_put *p,
                     char **xmeta)
{
    uint64_t total;

    return hd_peer_get_range_into(cl, node_url, bucket, key, local, cond, NULL, p, xmeta, &total);
}

int hd_peer_get_range_into(struct hd_tcluster *cl, const char *node_url, const char *bucket,
                           const char *key, int local, const struct hd_cond *cond,
                           const char *range, struct hd_put *p, char **xmeta, uint64_t *total)
{
    struct curl_slist *h = NULL;
    struct gfn g = {p, NULL, 0, 0, 0, 0, 0, 0, 0};
    struct hd_buf url, line;
    CURL *cu = curl_easy_init();
    CURLcode cc;
    int rc;

    *xmeta = NULL;
    hd_buf_init(&url);
    hd_buf_init(&line);
    if (!cu || hd_peer_object_path(&url, node_url, bucket, key) < 0) {
        rc = -ENOMEM;
        goto out;
    }
    if (local)
        h = curl_slist_append(h, "X-Hoard-Local: 1");
    h = curl_slist_append(h, "X-Hoard-Want-Meta: 1"); /* its metadata comes with it */
    if (range && !strpbrk(range, "\r\n")) {
        hd_buf_printf(&line, "Range: %s", range);
        if (!line.oom)
            h = curl_slist_append(h, line.data);
    }
    if (cond) {
        static const char *const names[] = {"If-Match", "If-None-Match", "If-Modified-Since",
                                            "If-Unmodified-Since"};
        const char *vals[] = {cond->if_match, cond->if_none_match, cond->if_modified_since,
                              cond->if_unmodified_since};
        size_t i;
        for (i = 0; i < 4; i++) {
            if (!vals[i] || strpbrk(vals[i], "\r\n"))
                continue;
            hd_buf_reset(&line);
            hd_buf_printf(&line, "%s: %s", names[i], vals[i]);
            if (!line.oom)
                h = curl_slist_append(h, line.data);
        }
    }
    h = hd_peer_sign_curl(h, cl, "GET", url.data, HD_NODEAUTH_EMPTY_SHA256); /* last: over the
                                                                              * X-Hoard-* above */
    if (!h) {
        rc = -ENOMEM;
        goto out;
    }
    curl_easy_setopt(cu, CURLOPT_URL, url.data);
    curl_easy_setopt(cu, CURLOPT_PATH_AS_IS, 1L); /* a key "a/../b" is that key, signed so */
    hd_tls_curl(cu);
    curl_easy_setopt(cu, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(cu, CURLOPT_HEADERFUNCTION, gfn_header);
    curl_easy_setopt(cu, CURLOPT_HEADERDATA, &g);
    curl_easy_setopt(cu, CURLOPT_WRITEFUNCTION, gfn_body);
    curl_easy_setopt(cu, CURLOPT_WRITEDATA, &g);
    /* with a range, a 416 answer's headers say the size: read them (the body is dropped) */
    curl_easy_setopt(cu, CURLOPT_FAILONERROR, range ? 0L : 1L);
    curl_easy_setopt(cu, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(cu, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
    curl_easy_setopt(cu, CURLOPT_TIMEOUT, (long)GFN_TIMEOUT_S);
    cc = curl_easy_perform(cu);
    curl_easy_getinfo(cu, CURLINFO_RESPONSE_CODE, &g.status);
    *total = g.have_total ? g.total : g.length;
    if (g.status == 416 && range) {
        rc = HD_ERANGE;
    } else if (cc == CURLE_OK && (g.status == 200 || (range && g.status == 206)) && !g.werr &&
               g.xmeta) {
        *xmeta = g.xmeta;
        g.xmeta = NULL;
        rc = 0;
    } else if (g.status == 412 || g.status == 304) {
        rc = HD_EPRECONDITION;
    } else if (g.status == 404 || (cc == CURLE_OK && g.status == 200)) {
        rc = HD_ENOSUCHKEY;
    } else if (g.werr) {
        rc = -EIO;
    } else {
        rc = HD_EUNAVAIL;
    }
out:
    curl_slist_free_all(h);
    hd_buf_cleanup(&url);
    hd_buf_cleanup(&line);
    free(g.xmeta);
    if (cu)
        curl_easy_cleanup(cu);
    return rc;
}

int hd_peer_owner_elsewhere(struct hd_tcluster *cl, const char *bucket, const char *key, char *url,
                            size_t urlmax)
{
    struct hd_smap *s = hd_tcluster_smap(cl);
    const struct hd_node *owner = NULL;
    struct hd_bucket_info bi;
    struct hd_buf u;
    int rc = HD_ENOSUCHKEY;

    if (!s || hd_store_bucket_get(hd_tcluster_store(cl), bucket, &bi) < 0)
        goto out;
    hd_buf_init(&u);
    hd_hrw_uname(&u, hd_hrw_provider(bi.provider), NULL, bucket, key);
    rc = u.oom ? -ENOMEM : hd_smap_owner(s, u.data, u.len, &owner);
    hd_buf_cleanup(&u);
    if (!owner || strcmp(owner->id, hd_tcluster_id(cl)) == 0) {
        rc = HD_ENOSUCHKEY;
        goto out;
    }
    if (rc == 0)
        snprintf(url, urlmax, "%s", owner->url);
out:
    hd_smap_unref(s);
    return rc;
}
