#include "common/smap.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/crypto.h>
#include <sqlite3.h>

#include "common/bprops.h"
#include "common/buf.h"
#include "common/cksum.h"
#include "common/errors.h"
#include "common/hrw.h"
#include "common/http.h"
#include "common/httpc.h"
#include "common/httputil.h"
#include "common/log.h"
#include "common/nodeauth.h"

/* ---- nodes ---- */

void hd_smap_node_cleanup(struct hd_node *n)
{
    size_t i;

    if (!n)
        return;
    for (i = 0; i < n->nmp; i++)
        free(n->mountpaths[i]);
    free(n->mountpaths);
    n->mountpaths = NULL;
    n->nmp = 0;
}

int hd_smap_node_copy(struct hd_node *dst, const struct hd_node *src)
{
    size_t i;

    *dst = *src;
    dst->mountpaths = NULL;
    dst->nmp = 0;
    if (!src->nmp)
        return 0;
    dst->mountpaths = calloc(src->nmp, sizeof(char *));
    if (!dst->mountpaths)
        return -ENOMEM;
    for (i = 0; i < src->nmp; i++) {
        dst->mountpaths[i] = strdup(src->mountpaths[i]);
        if (!dst->mountpaths[i]) {
            dst->nmp = i;
            hd_smap_node_cleanup(dst);
            return -ENOMEM;
        }
    }
    dst->nmp = src->nmp;
    return 0;
}

static int copy_str(char *dst, size_t max, const char *s)
{
    if (!s || !*s || strlen(s) >= max)
        return HD_EBADARG;
    memcpy(dst, s, strlen(s) + 1);
    return 0;
}

int hd_smap_node_from_json(const json_t *j, struct hd_node *out)
{
    const char *type;
    json_t *mp, *v;
    size_t i;

    memset(out, 0, sizeof(*out));
    if (!json_is_object(j))
        return HD_EBADARG;
    if (copy_str(out->id, sizeof(out->id), json_string_value(json_object_get(j, "daemon_id"))))
        return HD_EBADARG;
    type = json_string_value(json_object_get(j, "daemon_type"));
    if (type && strcmp(type, "proxy") == 0)
        out->type = HD_NODE_PROXY;
    else if (type && strcmp(type, "target") == 0)
        out->type = HD_NODE_TARGET;
    else
        return HD_EBADARG;
    v = json_object_get(json_object_get(j, "public_net"), "direct_url");
    if (copy_str(out->url, sizeof(out->url), json_string_value(v)))
        return HD_EBADARG;
    v = json_object_get(j, "flags");
    out->flags = json_is_integer(v) ? (unsigned)json_integer_value(v) : 0;
    v = json_object_get(j, "hoard_caps");
    out->caps = json_is_integer(v) ? (unsigned)json_integer_value(v) : 0;
    out->digest = hd_hrw_digest(out->id, strlen(out->id));
    mp = json_object_get(j, "mountpaths");
    if (json_is_array(mp) && json_array_size(mp)) {
        out->mountpaths = calloc(json_array_size(mp), sizeof(char *));
        if (!out->mountpaths)
            return -ENOMEM;
        json_array_foreach(mp, i, v)
        {
            if (!json_is_string(v))
                continue;
            out->mountpaths[out->nmp] = strdup(json_string_value(v));
            if (!out->mountpaths[out->nmp]) {
                hd_smap_node_cleanup(out);
                return -ENOMEM;
            }
            out->nmp++;
        }
    }
    return 0;
}

/* AIStore's NetInfo for url: {"node_hostname","daemon_port" (a string, as AIStore sends it),
 * "direct_url"}; host and port come from libcurl's URL parser. */
static json_t *net_info(const char *url)
{
    CURLU *u = curl_url();
    char *host = NULL, *port = NULL;
    json_t *j;

    if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK) {
        curl_url_get(u, CURLUPART_HOST, &host, 0);
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
    }
    j = json_pack("{s:s, s:s, s:s}", "node_hostname", host ? host : "", "daemon_port",
                  port ? port : "", "direct_url", url);
    if (!j) /* a host that decodes to bytes that are not UTF-8 ("127.0.%A0.1"): none */
        j = json_pack("{s:s, s:s, s:s}", "node_hostname", "", "daemon_port", port ? port : "",
                      "direct_url", url);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    return j;
}

json_t *hd_smap_node_to_json(const struct hd_node *n)
{
    /* one URL serves clients and nodes: the intra-cluster nets are the public one */
    json_t *j = json_pack("{s:s, s:s, s:o, s:o, s:o, s:I}", "daemon_id", n->id, "daemon_type",
                          n->type == HD_NODE_PROXY ? "proxy" : "target", "public_net",
                          net_info(n->url), "intra_control_net", net_info(n->url), "intra_data_net",
                          net_info(n->url), "flags", (json_int_t)n->flags);
    size_t i;

    if (j && n->caps)
        json_object_set_new(j, "hoard_caps", json_integer((json_int_t)n->caps));
    if (j && n->type == HD_NODE_TARGET) {
        json_t *mp = json_array();
        for (i = 0; i < n->nmp; i++)
            json_array_append_new(mp, json_string(n->mountpaths[i]));
        json_object_set_new(j, "mountpaths", mp);
    }
    return j;
}

static int node_same(const struct hd_node *a, const struct hd_node *b)
{
    size_t i;

    if (strcmp(a->id, b->id) != 0 || a->type != b->type || strcmp(a->url, b->url) != 0 ||
        a->flags != b->flags || a->caps != b->caps || a->down != b->down || a->nmp != b->nmp)
        return 0;
    for (i = 0; i < a->nmp; i++)
        if (strcmp(a->mountpaths[i], b->mountpaths[i]) != 0)
            return 0;
    return 1;
}

/* ---- smap ---- */

int hd_smap_vcmp(int64_t ta, int64_t va, int64_t tb, int64_t vb)
{
    if (ta != tb)
        return ta < tb ? -1 : 1;
    return va < vb ? -1 : va > vb;
}

void hd_smap_vstr(const struct hd_smap *s, char out[HD_SMAP_VSTR_MAX])
{
    out[0] = '\0';
    if (s)
        snprintf(out, HD_SMAP_VSTR_MAX, "%lld.%lld", (long long)s->term, (long long)s->version);
}

int hd_smap_vparse(const char *str, int64_t *term, int64_t *version)
{
    char t[24];
    const char *dot = str ? strchr(str, '.') : NULL;

    if (!dot || dot == str || (size_t)(dot - str) >= sizeof(t))
        return HD_EBADARG;
    memcpy(t, str, (size_t)(dot - str));
    t[dot - str] = '\0';
    if (hd_parse_i64(t, term) < 0 || hd_parse_i64(dot + 1, version) < 0 || *term < 0 ||
        *version < 0)
        return HD_EBADARG;
    return 0;
}

struct hd_smap *hd_smap_new(void)
{
    struct hd_smap *s = calloc(1, sizeof(*s));

    if (s)
        s->refs = 1;
    return s;
}

struct hd_smap *hd_smap_ref(struct hd_smap *s)
{
    if (s)
        __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
    return s;
}

void hd_smap_unref(struct hd_smap *s)
{
    size_t i;

    if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    for (i = 0; i < s->n; i++)
        hd_smap_node_cleanup(&s->nodes[i]);
    free(s->nodes);
    free(s);
}

int hd_smap_clone(const struct hd_smap *s, struct hd_smap **out)
{
    struct hd_smap *c = hd_smap_new();
    size_t i;

    if (!c)
        return -ENOMEM;
    c->term = s->term;
    c->version = s->version;
    memcpy(c->uuid, s->uuid, sizeof(c->uuid));
    memcpy(c->primary, s->primary, sizeof(c->primary));
    memcpy(c->rebalance, s->rebalance, sizeof(c->rebalance));
    if (s->n) {
        c->nodes = calloc(s->n, sizeof(*c->nodes));
        if (!c->nodes) {
            hd_smap_unref(c);
            return -ENOMEM;
        }
        for (i = 0; i < s->n; i++) {
            if (hd_smap_node_copy(&c->nodes[i], &s->nodes[i]) < 0) {
                hd_smap_unref(c);
                return -ENOMEM;
            }
            c->n++;
        }
    }
    *out = c;
    return 0;
}

const struct hd_node *hd_smap_find(const struct hd_smap *s, const char *id)
{
    size_t i;

    for (i = 0; s && i < s->n; i++)
        if (strcmp(s->nodes[i].id, id) == 0)
            return &s->nodes[i];
    return NULL;
}

const struct hd_node *hd_smap_find_url(const struct hd_smap *s, const char *url)
{
    size_t i, n;

    for (i = 0; s && i < s->n; i++) {
        n = strlen(s->nodes[i].url);
        if (n && strncmp(url, s->nodes[i].url, n) == 0 &&
            (url[n] == '\0' || url[n] == '/' || url[n] == '?'))
            return &s->nodes[i];
    }
    return NULL;
}

int hd_smap_put(struct hd_smap *s, const struct hd_node *n)
{
    struct hd_node copy, *nv;
    size_t i;

    for (i = 0; i < s->n; i++) {
        int c = strcmp(s->nodes[i].id, n->id);
        if (c == 0) {
            if (node_same(&s->nodes[i], n))
                return 0;
            if (hd_smap_node_copy(&copy, n) < 0)
                return -ENOMEM;
            copy.digest = hd_hrw_digest(copy.id, strlen(copy.id));
            hd_smap_node_cleanup(&s->nodes[i]);
            s->nodes[i] = copy;
            return 1;
        }
        if (c > 0)
            break;
    }
    nv = realloc(s->nodes, (s->n + 1) * sizeof(*nv));
    if (!nv)
        return -ENOMEM;
    s->nodes = nv;
    if (hd_smap_node_copy(&copy, n) < 0)
        return -ENOMEM;
    copy.digest = hd_hrw_digest(copy.id, strlen(copy.id));
    memmove(&s->nodes[i + 1], &s->nodes[i], (s->n - i) * sizeof(*nv));
    s->nodes[i] = copy;
    s->n++;
    return 1;
}

int hd_smap_remove(struct hd_smap *s, const char *id)
{
    size_t i;

    for (i = 0; i < s->n; i++)
        if (strcmp(s->nodes[i].id, id) == 0) {
            hd_smap_node_cleanup(&s->nodes[i]);
            memmove(&s->nodes[i], &s->nodes[i + 1], (s->n - i - 1) * sizeof(s->nodes[0]));
            s->n--;
            return 0;
        }
    return -ENOENT;
}

size_t hd_smap_count(const struct hd_smap *s, enum hd_node_type t, int live_only)
{
    size_t i, n = 0;

    for (i = 0; s && i < s->n; i++)
        if (s->nodes[i].type == t && !(live_only && s->nodes[i].down))
            n++;
    return n;
}

int hd_smap_owner(const struct hd_smap *s, const char *uname, size_t len,
                  const struct hd_node **out)
{
    uint64_t d = hd_hrw_digest(uname, len), best = 0;
    const struct hd_node *win = NULL;
    size_t i;

    for (i = 0; s && i < s->n; i++) {
        const struct hd_node *n = &s->nodes[i];
        uint64_t w;
        if (n->type != HD_NODE_TARGET || n->flags)
            continue;
        w = hd_hrw_weight(n->digest, d);
        if (!win || w > best) {
            best = w;
            win = n;
        }
    }
    *out = win;
    return win && !win->down ? 0 : HD_EUNAVAIL;
}

static int add_map(json_t *parent, const char *key, const struct hd_smap *s, enum hd_node_type t,
                   int down)
{
    json_t *m = json_object();
    size_t i;

    if (!m)
        return -ENOMEM;
    for (i = 0; i < s->n; i++) {
        const struct hd_node *n = &s->nodes[i];
        if (n->type != t || n->down != down)
            continue;
        json_object_set_new(m, n->id, hd_smap_node_to_json(n));
    }
    return json_object_set_new(parent, key, m) == 0 ? 0 : -ENOMEM;
}

json_t *hd_smap_to_json(const struct hd_smap *s)
{
    json_t *j = json_pack("{s:I, s:I, s:s, s:s}", "version", (json_int_t)s->version, "term",
                          (json_int_t)s->term, "uuid", s->uuid, "primary", s->primary);

    const struct hd_node *pr = hd_smap_find(s, s->primary);

    if (j && s->rebalance[0])
        json_object_set_new(j, "rebalance_id", json_string(s->rebalance));
    if (j && pr) /* AIStore's field: the primary's node entry */
        json_object_set_new(j, "proxy_si", hd_smap_node_to_json(pr));
    if (!j || add_map(j, "pmap", s, HD_NODE_PROXY, 0) < 0 ||
        add_map(j, "pmap_down", s, HD_NODE_PROXY, 1) < 0 ||
        add_map(j, "tmap", s, HD_NODE_TARGET, 0) < 0 ||
        add_map(j, "tmap_down", s, HD_NODE_TARGET, 1) < 0) {
        json_decref(j);
        return NULL;
    }
    return j;
}

static int load_map(struct hd_smap *s, const json_t *m, enum hd_node_type t, int down)
{
    const char *k;
    json_t *v;
    int rc;

    if (!m)
        return 0;
    if (!json_is_object(m))
        return HD_EBADARG;
    json_object_foreach((json_t *)m, k, v)
    {
        struct hd_node n;
        if ((rc = hd_smap_node_from_json(v, &n)) < 0)
            return rc;
        if (n.type != t || strcmp(n.id, k) != 0) {
            hd_smap_node_cleanup(&n);
            return HD_EBADARG;
        }
        n.down = down;
        rc = hd_smap_put(s, &n);
        hd_smap_node_cleanup(&n);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int hd_smap_from_json(const json_t *j, struct hd_smap **out)
{
    struct hd_smap *s;
    json_t *v = json_object_get(j, "version");
    const char *uuid = json_string_value(json_object_get(j, "uuid"));
    const char *prim = json_string_value(json_object_get(j, "primary"));
    const char *rb = json_string_value(json_object_get(j, "rebalance_id"));
    int rc;

    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return HD_EBADARG;
    s = hd_smap_new();
    if (!s)
        return -ENOMEM;
    s->version = (int64_t)json_integer_value(v);
    s->term = (int64_t)json_integer_value(json_object_get(j, "term")); /* 0 when absent */
    snprintf(s->uuid, sizeof(s->uuid), "%s", uuid ? uuid : "");
    snprintf(s->primary, sizeof(s->primary), "%s", prim ? prim : "");
    snprintf(s->rebalance, sizeof(s->rebalance), "%s", rb ? rb : "");
    if (s->term < 0) {
        hd_smap_unref(s);
        return HD_EBADARG;
    }
    if ((rc = load_map(s, json_object_get(j, "pmap"), HD_NODE_PROXY, 0)) < 0 ||
        (rc = load_map(s, json_object_get(j, "pmap_down"), HD_NODE_PROXY, 1)) < 0 ||
        (rc = load_map(s, json_object_get(j, "tmap"), HD_NODE_TARGET, 0)) < 0 ||
        (rc = load_map(s, json_object_get(j, "tmap_down"), HD_NODE_TARGET, 1)) < 0) {
        hd_smap_unref(s);
        return rc;
    }
    *out = s;
    return 0;
}

/* ---- BMD ---- */

struct hd_bmd *hd_bmd_new(void)
{
    struct hd_bmd *b = calloc(1, sizeof(*b));

    if (b)
        b->refs = 1;
    return b;
}

struct hd_bmd *hd_bmd_ref(struct hd_bmd *b)
{
    if (b)
        __atomic_add_fetch(&b->refs, 1, __ATOMIC_RELAXED);
    return b;
}

static void entry_cleanup(struct hd_bmd_bucket *e)
{
    free(e->props);
    json_decref(e->public_keys);
}

void hd_bmd_unref(struct hd_bmd *b)
{
    size_t i;

    if (!b || __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    for (i = 0; i < b->n; i++)
        entry_cleanup(&b->b[i]);
    free(b->b);
    free(b->rv);
    free(b);
}

static int revoked_id_ok(const char *id)
{
    size_t i;

    for (i = 0; id && i < 64; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
            return 0;
    return id && id[64] == '\0';
}

int hd_bmd_revoke(struct hd_bmd *b, const char *id, int64_t exp, int64_t now)
{
    struct hd_bmd_revoked *nv;
    size_t i, k;

    if (!revoked_id_ok(id))
        return HD_EBADARG;
    for (i = 0, k = 0; i < b->nrv; i++) /* drop what has expired */
        if (b->rv[i].exp > now)
            b->rv[k++] = b->rv[i];
    b->nrv = k;
    if (hd_bmd_is_revoked(b, id, now) || exp <= now)
        return 0;
    if (b->nrv >= HD_BMD_REVOKED_MAX)
        return HD_EBADARG;
    if (!(nv = realloc(b->rv, (b->nrv + 1) * sizeof(*nv))))
        return -ENOMEM;
    b->rv = nv;
    snprintf(nv[b->nrv].id, sizeof(nv[b->nrv].id), "%s", id);
    nv[b->nrv].exp = exp;
    b->nrv++;
    return 0;
}

int hd_bmd_is_revoked(const struct hd_bmd *b, const char *id, int64_t now)
{
    size_t i;

    for (i = 0; b && i < b->nrv; i++)
        if (b->rv[i].exp > now && strcmp(b->rv[i].id, id) == 0)
            return 1;
    return 0;
}

int hd_bmd_put(struct hd_bmd *b, const char *name, const char *provider, int64_t created,
               const char *props)
{
    struct hd_bmd_bucket *nv, e;
    size_t i;

    memset(&e, 0, sizeof(e));
    if (strlen(name) >= sizeof(e.name))
        return HD_EBADBUCKETNAME;
    snprintf(e.name, sizeof(e.name), "%s", name);
    snprintf(e.provider, sizeof(e.provider), "%s", provider && *provider ? provider : "ais");
    e.created = created;
    if (props && !(e.props = strdup(props)))
        return -ENOMEM;
    /* most buckets are private: props are canonical JSON (hd_bprops_dump, keys as written),
     * so a bucket without these keys is not parsed; a miss could only refuse access */
    if (props && (strstr(props, "\"anonymous_") || strstr(props, "\"policy\""))) {
        json_t *j = json_loads(props, 0, NULL);
        struct hd_bprops_access acc;
        hd_bprops_access(e.name, j, &acc);
        e.public_objects = acc.objects;
        e.public_list = acc.list;
        e.tls_only = acc.tls_only;
        e.public_keys = acc.keys;
        json_decref(j);
    }
    for (i = 0; i < b->n; i++) {
        int c = strcmp(b->b[i].name, name);
        if (c == 0) {
            entry_cleanup(&b->b[i]);
            b->b[i] = e;
            return 0;
        }
        if (c > 0)
            break;
    }
    nv = realloc(b->b, (b->n + 1) * sizeof(*nv));
    if (!nv) {
        entry_cleanup(&e);
        return -ENOMEM;
    }
    b->b = nv;
    memmove(&b->b[i + 1], &b->b[i], (b->n - i) * sizeof(*nv));
    b->b[i] = e;
    b->n++;
    return 0;
}

int hd_bmd_remove(struct hd_bmd *b, const char *name)
{
    size_t i;

    for (i = 0; i < b->n; i++)
        if (strcmp(b->b[i].name, name) == 0) {
            entry_cleanup(&b->b[i]);
            memmove(&b->b[i], &b->b[i + 1], (b->n - i - 1) * sizeof(b->b[0]));
            b->n--;
            return 0;
        }
    return -ENOENT;
}

const struct hd_bmd_bucket *hd_bmd_find(const struct hd_bmd *b, const char *name)
{
    size_t i;

    for (i = 0; b && i < b->n; i++)
        if (strcmp(b->b[i].name, name) == 0)
            return &b->b[i];
    return NULL;
}

int hd_bmd_clone(const struct hd_bmd *b, struct hd_bmd **out)
{
    struct hd_bmd *c = hd_bmd_new();
    size_t i;

    if (!c)
        return -ENOMEM;
    c->term = b->term;
    c->version = b->version;
    /* the entries as they are, parsed flags included (the same props need no parse again) */
    if (b->n && !(c->b = calloc(b->n, sizeof(*c->b)))) {
        hd_bmd_unref(c);
        return -ENOMEM;
    }
    for (i = 0; i < b->n; i++) {
        c->b[i] = b->b[i];
        c->b[i].props = b->b[i].props ? strdup(b->b[i].props) : NULL;
        json_incref(c->b[i].public_keys);
        c->n = i + 1;
        if (b->b[i].props && !c->b[i].props) {
            hd_bmd_unref(c);
            return -ENOMEM;
        }
    }
    if (b->nrv) {
        if (!(c->rv = malloc(b->nrv * sizeof(*c->rv)))) {
            hd_bmd_unref(c);
            return -ENOMEM;
        }
        memcpy(c->rv, b->rv, b->nrv * sizeof(*c->rv));
        c->nrv = b->nrv;
    }
    *out = c;
    return 0;
}

json_t *hd_bmd_to_json(const struct hd_bmd *b)
{
    json_t *j = json_pack("{s:I, s:I}", "version", (json_int_t)b->version, "term",
                          (json_int_t)b->term),
           *bk = json_object();
    size_t i;

    if (!j || !bk) {
        json_decref(j);
        json_decref(bk);
        return NULL;
    }
    for (i = 0; i < b->n; i++) {
        json_t *props = b->b[i].props ? json_loads(b->b[i].props, 0, NULL) : NULL;
        json_object_set_new(bk, b->b[i].name,
                            json_pack("{s:s, s:I, s:o}", "provider", b->b[i].provider, "created",
                                      (json_int_t)b->b[i].created, "props",
                                      props ? props : json_object()));
    }
    json_object_set_new(j, "buckets", bk);
    if (b->nrv) {
        json_t *rv = json_array();
        for (i = 0; rv && i < b->nrv; i++)
            json_array_append_new(
                rv, json_pack("{s:s, s:I}", "id", b->rv[i].id, "exp", (json_int_t)b->rv[i].exp));
        if (!rv || json_array_size(rv) != b->nrv) {
            json_decref(rv);
            json_decref(j);
            return NULL;
        }
        json_object_set_new(j, "revoked", rv);
    }
    return j;
}

int hd_bmd_from_json(const json_t *j, struct hd_bmd **out)
{
    json_t *v = json_object_get(j, "version"), *bk = json_object_get(j, "buckets"), *e, *rv;
    struct hd_bmd *b;
    const char *k;
    size_t i;

    if (!json_is_integer(v) || json_integer_value(v) < 0 || (bk && !json_is_object(bk)))
        return HD_EBADARG;
    b = hd_bmd_new();
    if (!b)
        return -ENOMEM;
    b->version = (int64_t)json_integer_value(v);
    b->term = (int64_t)json_integer_value(json_object_get(j, "term"));
    if (b->term < 0) {
        hd_bmd_unref(b);
        return HD_EBADARG;
    }
    json_object_foreach(bk, k, e)
    {
        json_t *props = json_object_get(e, "props");
        char *ps = NULL;
        int rc;
        if (!json_is_object(e)) {
            hd_bmd_unref(b);
            return HD_EBADARG;
        }
        if (json_is_object(props) && json_object_size(props))
            ps = json_dumps(props, JSON_COMPACT | JSON_SORT_KEYS);
        rc = hd_bmd_put(b, k, json_string_value(json_object_get(e, "provider")),
                        (int64_t)json_integer_value(json_object_get(e, "created")), ps);
        free(ps);
        if (rc < 0) {
            hd_bmd_unref(b);
            return rc;
        }
    }
    rv = json_object_get(j, "revoked");
    if (rv && (!json_is_array(rv) || json_array_size(rv) > HD_BMD_REVOKED_MAX)) {
        hd_bmd_unref(b);
        return HD_EBADARG;
    }
    json_array_foreach(rv, i, e)
    {
        const char *id = json_string_value(json_object_get(e, "id"));
        json_t *exp = json_object_get(e, "exp");
        struct hd_bmd_revoked *nv;
        if (!revoked_id_ok(id) || !json_is_integer(exp)) {
            hd_bmd_unref(b);
            return HD_EBADARG;
        }
        if (!(nv = realloc(b->rv, (b->nrv + 1) * sizeof(*nv)))) {
            hd_bmd_unref(b);
            return -ENOMEM;
        }
        b->rv = nv;
        snprintf(nv[b->nrv].id, sizeof(nv[b->nrv].id), "%s", id);
        nv[b->nrv].exp = (int64_t)json_integer_value(exp);
        b->nrv++;
    }
    *out = b;
    return 0;
}

int hd_bmd_props_equal(const char *a, const char *b)
{
    int ea = !a || strcmp(a, "{}") == 0, eb = !b || strcmp(b, "{}") == 0;

    if (ea || eb)
        return ea && eb;
    return strcmp(a, b) == 0;
}

int hd_smap_parse_sync(const json_t *j, struct hd_smap **s, struct hd_bmd **b)
{
    json_t *js = json_object_get(j, "smap"), *jb = json_object_get(j, "bmd");
    int rc;

    *s = NULL;
    *b = NULL;
    if (!json_is_object(j))
        return HD_EBADARG;
    if (js && (rc = hd_smap_from_json(js, s)) < 0)
        return rc;
    if (jb && (rc = hd_bmd_from_json(jb, b)) < 0) {
        hd_smap_unref(*s);
        *s = NULL;
        return rc;
    }
    return 0;
}

/* ---- persisted state ---- */

struct hd_smap_state {
    pthread_mutex_t mu;
    sqlite3 *db;
    struct hd_smap *smap;
    struct hd_bmd *bmd;
};

static int mkdir_p(const char *path)
{
    char tmp[PATH_MAX];
    size_t i, n = strlen(path);

    if (n == 0 || n >= sizeof(tmp))
        return -EINVAL;
    memcpy(tmp, path, n + 1);
    for (i = 1; i <= n; i++) {
        if (tmp[i] != '/' && tmp[i] != '\0')
            continue;
        tmp[i] = '\0';
        if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
            return -errno;
        tmp[i] = i < n ? '/' : '\0';
    }
    return 0;
}

static int sqlerr(sqlite3 *db, const char *what)
{
    HD_LOG(HD_ERROR, NULL, "node.db: %s: %s", what, db ? sqlite3_errmsg(db) : "?");
    return HD_EINTERNAL;
}

int hd_smap_state_meta_get(struct hd_smap_state *st, const char *key, char **out)
{
    sqlite3_stmt *q;
    int rc;

    *out = NULL;
    if (sqlite3_prepare_v2(st->db, "SELECT value FROM meta WHERE key = ?1", -1, &q, NULL))
        return sqlerr(st->db, "prepare meta get");
    sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW && sqlite3_column_text(q, 0)) {
        *out = strdup((const char *)sqlite3_column_text(q, 0));
        rc = *out ? 0 : -ENOMEM;
    } else if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
        rc = -ENOENT;
    } else {
        rc = sqlerr(st->db, "meta get");
    }
    sqlite3_finalize(q);
    return rc;
}

int hd_smap_state_meta_set(struct hd_smap_state *st, const char *key, const char *value)
{
    sqlite3_stmt *q;
    int rc;

    if (sqlite3_prepare_v2(st->db,
                           "INSERT INTO meta(key, value) VALUES(?1, ?2) ON CONFLICT(key) DO "
                           "UPDATE SET value = excluded.value",
                           -1, &q, NULL))
        return sqlerr(st->db, "prepare meta set");
    sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, value, -1, SQLITE_STATIC);
    rc = sqlite3_step(q) == SQLITE_DONE ? 0 : sqlerr(st->db, "meta set");
    sqlite3_finalize(q);
    return rc;
}

static int persist_json(struct hd_smap_state *st, const char *key, json_t *j)
{
    char *s;
    int rc;

    if (!j)
        return -ENOMEM;
    s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(j);
    if (!s)
        return -ENOMEM;
    rc = hd_smap_state_meta_set(st, key, s);
    free(s);
    return rc;
}

static void load_persisted(struct hd_smap_state *st)
{
    char *s = NULL;
    json_t *j;

    if (hd_smap_state_meta_get(st, "smap", &s) == 0) {
        j = json_loads(s, 0, NULL);
        if (!j || hd_smap_from_json(j, &st->smap) < 0)
            HD_LOG(HD_WARN, NULL, "node.db: persisted smap is unreadable; starting without");
        json_decref(j);
        free(s);
    }
    if (hd_smap_state_meta_get(st, "bmd", &s) == 0) {
        struct hd_bmd *b = NULL;
        j = json_loads(s, 0, NULL);
        if (j && hd_bmd_from_json(j, &b) == 0) {
            hd_bmd_unref(st->bmd);
            st->bmd = b;
        } else {
            HD_LOG(HD_WARN, NULL, "node.db: persisted BMD is unreadable; starting without");
        }
        json_decref(j);
        free(s);
    }
}

int hd_smap_state_open(const char *data_dir, struct hd_smap_state **out)
{
    struct hd_smap_state *st;
    char path[PATH_MAX];
    int rc;

    if ((rc = mkdir_p(data_dir)) < 0) {
        HD_LOG(HD_ERROR, NULL, "data dir %s: %s", data_dir, hd_strerror(rc));
        return rc;
    }
    if (snprintf(path, sizeof(path), "%s/node.db", data_dir) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    st = calloc(1, sizeof(*st));
    if (!st)
        return -ENOMEM;
    pthread_mutex_init(&st->mu, NULL);
    st->bmd = hd_bmd_new();
    if (!st->bmd) {
        rc = -ENOMEM;
        goto fail;
    }
    if (sqlite3_open_v2(path, &st->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        NULL) != SQLITE_OK) {
        rc = sqlerr(st->db, path);
        goto fail;
    }
    sqlite3_busy_timeout(st->db, 10000);
    if (sqlite3_exec(st->db,
                     "PRAGMA journal_mode = WAL;"
                     "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);",
                     NULL, NULL, NULL) != SQLITE_OK) {
        rc = sqlerr(st->db, "meta schema");
        goto fail;
    }
    load_persisted(st);
    *out = st;
    return 0;
fail:
    hd_smap_state_close(st);
    return rc;
}

void hd_smap_state_close(struct hd_smap_state *st)
{
    if (!st)
        return;
    sqlite3_close(st->db);
    hd_smap_unref(st->smap);
    hd_bmd_unref(st->bmd);
    pthread_mutex_destroy(&st->mu);
    free(st);
}

int hd_smap_state_node_id(struct hd_smap_state *st, const char *configured, char prefix,
                          char out[HD_NODE_ID_MAX])
{
    unsigned char rnd[4];
    char *saved = NULL, hex[9];
    int rc;

    if (configured && *configured) {
        if (strlen(configured) >= HD_NODE_ID_MAX || strpbrk(configured, "/?&#% \"\\"))
            return HD_EBADARG;
        snprintf(out, HD_NODE_ID_MAX, "%s", configured);
        return hd_smap_state_meta_set(st, "node_id", out);
    }
    rc = hd_smap_state_meta_get(st, "node_id", &saved);
    if (rc == 0 && *saved && strlen(saved) < HD_NODE_ID_MAX) {
        snprintf(out, HD_NODE_ID_MAX, "%s", saved);
        free(saved);
        return 0;
    }
    free(saved);
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return -EIO;
    hd_hex(rnd, sizeof(rnd), hex);
    snprintf(out, HD_NODE_ID_MAX, "%c%s", prefix, hex);
    return hd_smap_state_meta_set(st, "node_id", out);
}

struct hd_smap *hd_smap_state_smap(struct hd_smap_state *st)
{
    struct hd_smap *s;

    pthread_mutex_lock(&st->mu);
    s = hd_smap_ref(st->smap);
    pthread_mutex_unlock(&st->mu);
    return s;
}

struct hd_bmd *hd_smap_state_bmd(struct hd_smap_state *st)
{
    struct hd_bmd *b;

    pthread_mutex_lock(&st->mu);
    b = hd_bmd_ref(st->bmd);
    pthread_mutex_unlock(&st->mu);
    return b;
}

int hd_smap_state_set_smap(struct hd_smap_state *st, struct hd_smap *s, int force)
{
    int rc;

    pthread_mutex_lock(&st->mu);
    if (!force && st->smap &&
        (rc = hd_smap_vcmp(s->term, s->version, st->smap->term, st->smap->version)) <= 0) {
        rc = rc == 0 ? 1 : -ESTALE;
        goto out;
    }
    if ((rc = persist_json(st, "smap", hd_smap_to_json(s))) < 0)
        goto out;
    hd_smap_unref(st->smap);
    st->smap = hd_smap_ref(s);
out:
    pthread_mutex_unlock(&st->mu);
    return rc;
}

int hd_smap_state_set_bmd(struct hd_smap_state *st, struct hd_bmd *b, int force,
                          struct hd_bmd **prev)
{
    int rc;

    if (prev)
        *prev = NULL;
    pthread_mutex_lock(&st->mu);
    if (!force && (rc = hd_smap_vcmp(b->term, b->version, st->bmd->term, st->bmd->version)) <= 0) {
        rc = rc == 0 ? 1 : -ESTALE;
        goto out;
    }
    if ((rc = persist_json(st, "bmd", hd_bmd_to_json(b))) < 0)
        goto out;
    if (prev)
        *prev = st->bmd;
    else
        hd_bmd_unref(st->bmd);
    st->bmd = hd_bmd_ref(b);
out:
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/* ---- member: join and heartbeat ---- */

/* to: the primary's id, or NULL when only its address is known (HD_NODEAUTH_ANY) */
static int member_call(struct hd_smap_member *m, const char *method, const char *base,
                       const char *to, const char *path, const json_t *in, long *status,
                       json_t **out)
{
    char url[HD_NODE_URL_MAX + 64];

    int rc;

    snprintf(url, sizeof(url), "%s%s", base, path);
    rc = hd_httpc_json(m->na, to, method, url, in, m->timeout_ms, status, out);
    if (rc == -EACCES && (m->failures == 0 || m->failures % 30 == 0))
        HD_LOG(HD_WARN, NULL,
               "cluster: %s %s answered HTTP %ld without a valid node signature: it refused "
               "ours, or is not a node of this cluster (is cluster.secret the same on every "
               "node?)",
               method, url, *status);
    return rc;
}

static int set_bmd(struct hd_smap_member *m, struct hd_bmd *b, int force)
{
    if (m->set_bmd)
        return m->set_bmd(m->arg, b, force);
    return hd_smap_state_set_bmd(m->st, b, force, NULL);
}

/* Where the primary is: its smap entry, else cluster.join. id gets the primary's id ("" when
 * only cluster.join is known). */
static void primary_url(struct hd_smap_member *m, char *out, size_t max, char id[HD_NODE_ID_MAX])
{
    struct hd_smap *s = hd_smap_state_smap(m->st);
    const struct hd_node *p = s ? hd_smap_find(s, s->primary) : NULL;

    id[0] = '\0';
    if (p && strcmp(p->id, m->self->id) != 0) {
        snprintf(out, max, "%s", p->url);
        snprintf(id, HD_NODE_ID_MAX, "%s", p->id);
    } else {
        snprintf(out, max, "%s", m->join_url);
    }
    hd_smap_unref(s);
}

/* The primary did not answer (or we know none but ourselves, an old primary back from a
 * restart): ask every proxy of our map, and cluster.join, for its smap and keep the newest
 * (answers are signed). 1 when a newer smap was installed. */
static int discover(struct hd_smap_member *m)
{
    struct hd_smap *cur = hd_smap_state_smap(m->st), *best = NULL;
    struct hd_httpc_call *calls;
    char(*urls)[HD_NODE_URL_MAX + 32];
    size_t i, n = 0, cap = (cur ? cur->n : 0) + 1;
    int rc = 0;

    calls = calloc(cap, sizeof(*calls));
    urls = calloc(cap, sizeof(*urls));
    if (!calls || !urls)
        goto out;
    for (i = 0; cur && i < cur->n; i++) {
        const struct hd_node *nd = &cur->nodes[i];
        if (nd->type != HD_NODE_PROXY || strcmp(nd->id, m->self->id) == 0)
            continue;
        snprintf(urls[n], sizeof(urls[n]), "%s/v1/cluster/smap", nd->url);
        hd_httpc_call_init(&calls[n], "GET", urls[n]);
        snprintf(calls[n].to, sizeof(calls[n].to), "%s", nd->id);
        n++;
    }
    if (m->join_url[0]) {
        snprintf(urls[n], sizeof(urls[n]), "%s/v1/cluster/smap", m->join_url);
        hd_httpc_call_init(&calls[n], "GET", urls[n]);
        n++;
    }
    for (i = 0; i < n; i++) {
        calls[i].na = m->na;
        calls[i].signed_resp = 1;
        calls[i].connect_ms = 1000;
        calls[i].total_ms = m->timeout_ms;
    }
    hd_httpc_run_all(calls, n, 0);
    for (i = 0; i < n; i++) {
        json_t *j = calls[i].rc == 0 && calls[i].status == 200 && calls[i].resp.len
                        ? json_loadb(calls[i].resp.data, calls[i].resp.len, 0, NULL)
                        : NULL;
        struct hd_smap *s = NULL;
        if (j && hd_smap_from_json(j, &s) == 0 && s->primary[0] &&
            (!best || hd_smap_vcmp(s->term, s->version, best->term, best->version) > 0)) {
            hd_smap_unref(best);
            best = s;
            s = NULL;
        }
        hd_smap_unref(s);
        json_decref(j);
        hd_httpc_call_cleanup(&calls[i]);
    }
    if (best && hd_smap_state_set_smap(m->st, best, 0) == 0) {
        HD_LOG(HD_INFO, NULL, "cluster: the primary is %s now (smap v%lld, term %lld)",
               best->primary, (long long)best->version, (long long)best->term);
        rc = 1;
    }
out:
    free(calls);
    free(urls);
    hd_smap_unref(best);
    hd_smap_unref(cur);
    return rc;
}

static int member_join(struct hd_smap_member *m, const char *base, const char *to)
{
    struct hd_smap *cur = hd_smap_state_smap(m->st), *s = NULL;
    struct hd_bmd *bmd = hd_smap_state_bmd(m->st), *b = NULL;
    json_t *in = hd_smap_node_to_json(m->self), *out = NULL;
    long status = 0;
    int rc;

    if (!in) {
        rc = -ENOMEM;
        goto out;
    }
    json_object_set_new(in, "smap_version", json_integer(cur ? cur->version : 0));
    if (bmd->version > 0)
        json_object_set_new(in, "bmd", hd_bmd_to_json(bmd));
    rc = member_call(m, "POST", base, to, "/v1/cluster/join", in, &status, &out);
    if (rc < 0)
        goto out;
    if (status == 410) {
        HD_LOG(HD_WARN, NULL,
               "cluster: %s was decommissioned: not joining again (remove its "
               "data directory to join as a new node)",
               m->self->id);
        m->gone = 1;
        rc = HD_EGONE;
        goto out;
    }
    if (status != 200 || !out) {
        HD_LOG(HD_WARN, NULL, "cluster: join at %s refused: HTTP %ld", base, status);
        rc = HD_EUNAVAIL;
        goto out;
    }
    if ((rc = hd_smap_parse_sync(out, &s, &b)) < 0 || !s || !b) {
        HD_LOG(HD_WARN, NULL, "cluster: join at %s: malformed answer", base);
        rc = rc < 0 ? rc : HD_EBADARG;
        goto out;
    }
    /* a primary of an older term than ours is one that lost an election: not it */
    if (cur && s->term < cur->term) {
        HD_LOG(HD_WARN, NULL,
               "cluster: join at %s answered with term %lld, older than ours "
               "(%lld): looking for the primary",
               base, (long long)s->term, (long long)cur->term);
        rc = HD_EUNAVAIL;
        goto out;
    }
    /* the primary is the authority at join time, whatever versions we held */
    if ((rc = hd_smap_state_set_smap(m->st, s, 1)) < 0 || (rc = set_bmd(m, b, 1)) < 0)
        goto out;
    m->joined = 1;
    rc = 0;
    HD_LOG(HD_INFO, NULL, "cluster: joined as %s via %s (smap v%lld, bmd v%lld)", m->self->id, base,
           (long long)s->version, (long long)b->version);
out:
    json_decref(in);
    json_decref(out);
    hd_smap_unref(cur);
    hd_smap_unref(s);
    hd_bmd_unref(bmd);
    hd_bmd_unref(b);
    return rc;
}

static int pull(struct hd_smap_member *m, const char *base, const char *to, int want_smap)
{
    json_t *out = NULL;
    long status = 0;
    int rc;

    rc = member_call(m, "GET", base, to, want_smap ? "/v1/cluster/smap" : "/v1/cluster/bmd", NULL,
                     &status, &out);
    if (rc == 0 && (status != 200 || !out))
        rc = HD_EUNAVAIL;
    if (rc == 0 && want_smap) {
        struct hd_smap *s = NULL;
        if ((rc = hd_smap_from_json(out, &s)) == 0)
            rc = hd_smap_state_set_smap(m->st, s, 0);
        hd_smap_unref(s);
    } else if (rc == 0) {
        struct hd_bmd *b = NULL;
        if ((rc = hd_bmd_from_json(out, &b)) == 0)
            rc = set_bmd(m, b, 0);
        hd_bmd_unref(b);
    }
    json_decref(out);
    return rc < 0 && rc != -ESTALE ? rc : 0;
}

int hd_smap_member_tick(struct hd_smap_member *m)
{
    struct hd_smap *s;
    struct hd_bmd *b;
    char base[HD_NODE_URL_MAX], pid[HD_NODE_ID_MAX];
    const char *to;
    json_t *in, *out = NULL;
    long status = 0;
    int rc;

    if (m->gone)
        return HD_EGONE;
    primary_url(m, base, sizeof(base), pid);
    /* no primary to ask but ourselves (an old primary back), or the one we know has not
     * answered twice: find the current one */
    if ((!pid[0] && !m->join_url[0]) || m->failures >= 2) {
        if (discover(m) == 1)
            primary_url(m, base, sizeof(base), pid);
    }
    if (!pid[0] && !m->join_url[0]) {
        m->failures++;
        return HD_EUNAVAIL;
    }
    to = pid[0] ? pid : NULL;
    if (!m->joined) {
        rc = member_join(m, base, to);
        m->failures = rc < 0 ? m->failures + 1 : 0;
        if (rc < 0 && (m->failures == 1 || m->failures % 30 == 0))
            HD_LOG(HD_WARN, NULL, "cluster: cannot join via %s yet: %s", base, hd_strerror(rc));
        return rc;
    }
    s = hd_smap_state_smap(m->st);
    b = hd_smap_state_bmd(m->st);
    in = json_pack("{s:s, s:I, s:I, s:I, s:I}", "daemon_id", m->self->id, "smap_version",
                   (json_int_t)(s ? s->version : 0), "smap_term", (json_int_t)(s ? s->term : 0),
                   "bmd_version", (json_int_t)b->version, "bmd_term", (json_int_t)b->term);
    rc =
        in ? member_call(m, "POST", base, to, "/v1/cluster/heartbeat", in, &status, &out) : -ENOMEM;
    if (rc == 0 && status == 404) {
        HD_LOG(HD_WARN, NULL, "cluster: primary at %s does not know %s; joining again", base,
               m->self->id);
        m->joined = 0;
    } else if (rc == 0 && status == 200 && out) {
        json_int_t sv = json_integer_value(json_object_get(out, "smap_version"));
        json_int_t st = json_integer_value(json_object_get(out, "smap_term"));
        json_int_t bv = json_integer_value(json_object_get(out, "bmd_version"));
        json_int_t bt = json_integer_value(json_object_get(out, "bmd_term"));
        if (!s || hd_smap_vcmp(st, sv, s->term, s->version) > 0)
            pull(m, base, to, 1);
        if (hd_smap_vcmp(bt, bv, b->term, b->version) > 0)
            pull(m, base, to, 0);
    } else if (rc == 0) {
        rc = HD_EUNAVAIL;
    }
    m->failures = rc < 0 ? m->failures + 1 : 0;
    if (rc < 0 && (m->failures == 1 || m->failures % 30 == 0))
        HD_LOG(HD_WARN, NULL, "cluster: heartbeat to %s failed (%d in a row): %s", base,
               m->failures, hd_strerror(rc));
    json_decref(in);
    json_decref(out);
    hd_smap_unref(s);
    hd_bmd_unref(b);
    return rc;
}

void hd_smap_member_metasync(struct hd_smap_member *m, struct hd_req *r, json_t *j)
{
    const char *from = hd_req_header(r, "X-Hoard-Node"); /* verified by the caller */
    struct hd_smap *s = NULL, *cur;
    struct hd_bmd *b = NULL, *curb;
    int rs = 0, rb = 0;

    if (!j || hd_smap_parse_sync(j, &s, &b) < 0 || !s) {
        hd_resp_err_msg(r, HD_EBADARG, "Expected {\"smap\": ..., \"bmd\": ...}.");
        goto out;
    }
    /* maps come from the primary they name: a fenced-off old primary's push names itself
     * with an older term, and is refused as older below */
    if (from && hd_nodeauth_on(m->na) && strcmp(from, s->primary) != 0) {
        hd_resp_err_msg(r, HD_EACCESS, "Metasync comes from the primary the smap names.");
        goto out;
    }
    rs = hd_smap_state_set_smap(m->st, s, 0);
    if (b)
        rb = m->set_bmd ? m->set_bmd(m->arg, b, 0) : hd_smap_state_set_bmd(m->st, b, 0, NULL);
    if (rs == -ESTALE || rb == -ESTALE) {
        /* what we hold, so that a primary of an older term learns it has been replaced */
        cur = hd_smap_state_smap(m->st);
        curb = hd_smap_state_bmd(m->st);
        hd_resp_json(r, 409,
                     json_pack("{s:s, s:s, s:I, s:I, s:I, s:I}", "code", "Conflict", "message",
                               "Older than the version held.", "smap_term",
                               (json_int_t)(cur ? cur->term : 0), "smap_version",
                               (json_int_t)(cur ? cur->version : 0), "bmd_term",
                               (json_int_t)curb->term, "bmd_version", (json_int_t)curb->version));
        hd_smap_unref(cur);
        hd_bmd_unref(curb);
    } else if (rs < 0 || rb < 0) {
        hd_resp_err(r, rs < 0 ? rs : rb);
    } else {
        hd_resp_empty(r, 200);
    }
out:
    hd_smap_unref(s);
    hd_bmd_unref(b);
}
