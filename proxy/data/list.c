/* list: object listings on the proxy as a k-way merge of per-target pages. Every live target
 * is asked for `limit` entries after the same start key; the merged page is the first
 * `limit` distinct names of the union (common prefixes deduplicated across targets). That is
 * exact: a target that returned a full page contributes `limit` distinct names, so anything
 * it did not send sorts after the merged page's last name. The next start key is the last
 * name returned, so a continuation token works on any proxy. */
#include "proxy/data/data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bprops.h"
#include "common/buf.h"
#include "common/cksum.h"
#include "common/errors.h"
#include "common/hrw.h"
#include "common/httpc.h"
#include "common/httputil.h"
#include "common/log.h"
#include "common/metrics.h"

#define TOKEN_MAX 1500 /* base64 of a 1024-byte key, plus NUL */

void hd_proxy_list_cleanup(struct hd_plist_res *res)
{
    size_t i;

    for (i = 0; i < res->n; i++)
        free(res->items[i].name);
    free(res->items);
    free(res->last);
    memset(res, 0, sizeof(*res));
}

int hd_proxy_list_push(struct hd_plist_res *res, size_t *cap, const char *name, int is_prefix,
                       const json_t *e)
{
    struct hd_plist_item *it;

    if (res->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 256;
        it = realloc(res->items, nc * sizeof(*it));
        if (!it)
            return -ENOMEM;
        res->items = it;
        *cap = nc;
    }
    it = &res->items[res->n];
    memset(it, 0, sizeof(*it));
    it->name = strdup(name);
    if (!it->name)
        return -ENOMEM;
    it->is_prefix = is_prefix;
    if (e) {
        it->size = (uint64_t)json_integer_value(json_object_get(e, "size"));
        const char *etag = json_string_value(json_object_get(e, "etag"));
        const char *mtime = json_string_value(json_object_get(e, "mtime"));
        snprintf(it->etag, sizeof(it->etag), "%s", etag ? etag : "");
        const char *sc = json_string_value(json_object_get(e, "storage_class"));
        snprintf(it->mtime, sizeof(it->mtime), "%s", mtime ? mtime : "");
        snprintf(it->sclass, sizeof(it->sclass), "%s", sc ? sc : "");
    }
    res->n++;
    return 0;
}

static int cmp_item(const void *a, const void *b)
{
    const struct hd_plist_item *x = a, *y = b;
    int c = strcmp(x->name, y->name);

    return c ? c : y->is_prefix - x->is_prefix;
}

/* Adds one target's JSON page to res. */
static int take_page(struct hd_plist_res *res, size_t *cap, const json_t *j, int *truncated)
{
    json_t *ents = json_object_get(j, "entries"), *pfx = json_object_get(j, "prefixes"), *e;
    size_t i;
    int rc;

    json_array_foreach(ents, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        if (name && (rc = hd_proxy_list_push(res, cap, name, 0, e)) < 0)
            return rc;
    }
    json_array_foreach(pfx, i, e)
    {
        if (json_is_string(e) &&
            (rc = hd_proxy_list_push(res, cap, json_string_value(e), 1, NULL)) < 0)
            return rc;
    }
    if (json_object_get(j, "continuation_token"))
        *truncated = 1;
    return 0;
}

static void add_param(struct hd_buf *q, const char *k, const char *v)
{
    if (!v || !*v)
        return;
    hd_buf_printf(q, "&%s=", k);
    hd_uri_encode(q, v, strlen(v), 0);
}

int hd_proxy_list(struct hd_proxy *p, const char *bucket, const struct hd_plist_opts *o,
                  struct hd_plist_res *res, char *msg, size_t msglen)
{
    int cloud = hd_proxy_bucket_cloud(p, bucket), rc;
    size_t i;
    char why[256];

    if (cloud && !o->cached_only) {
        rc = hd_proxy_list_cloud(p, bucket, o, res, msg, msglen);
        /* The upstream (or the target listing it) is unreachable: what the targets hold is
         * still worth showing, marked as such (a Warning header; the CLI prints a note). A
         * missing bucket, denied access and the like stay errors. */
        if (!o->cached_fallback || rc != HD_EUNAVAIL)
            return rc;
        snprintf(why, sizeof(why), "%s", msg);
        rc = hd_proxy_list_local(p, bucket, o, res, msg, msglen);
        if (rc == 0) {
            res->upstream_failed = 1;
            HD_LOG(HD_WARN, NULL, "list %s: upstream unavailable (%s); listing cached objects",
                   bucket, why[0] ? why : "no answer");
        }
    } else
        rc = hd_proxy_list_local(p, bucket, o, res, msg, msglen);
    for (i = 0; rc == 0 && i < res->n; i++)
        res->items[i].cached = cloud && !res->items[i].is_prefix ? 1 : -1;
    return rc;
}

/* A target in maintenance for a restart (hoardd --prestop, smap flag 4) that is down or does
 * not answer has stopped after its hook moved its objects to the other targets: a listing
 * is complete without it. */
static int handed_over(const struct hd_node *t)
{
    return (t->flags & HD_NODE_RESTART) && !(t->flags & HD_NODE_DECOMM);
}

int hd_proxy_list_local(struct hd_proxy *p, const char *bucket, const struct hd_plist_opts *o,
                        struct hd_plist_res *res, char *msg, size_t msglen)
{
    struct hd_bmd *bmd = hd_smap_state_bmd(p->cs);
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    struct hd_httpc_call *calls = NULL;
    const struct hd_node **tg = NULL;
    struct hd_buf q, *urls = NULL;
    char token[TOKEN_MAX];
    size_t i, n = 0, cap = 0, w;
    int rc = 0, truncated = 0;

    memset(res, 0, sizeof(*res));
    hd_buf_init(&q);
    msg[0] = '\0';
    if (!hd_bmd_find(bmd, bucket)) {
        rc = HD_ENOSUCHBUCKET;
        goto out;
    }
    if (!s) {
        snprintf(msg, msglen, "This proxy has no cluster map yet; retry shortly.");
        rc = HD_EUNAVAIL;
        goto out;
    }
    for (i = 0; i < s->n; i++)
        if (s->nodes[i].type == HD_NODE_TARGET && s->nodes[i].down && !handed_over(&s->nodes[i])) {
            snprintf(msg, msglen,
                     "Target %s is down: a listing without it would be incomplete; retry "
                     "when it is back (or decommission it).",
                     s->nodes[i].id);
            rc = HD_EUNAVAIL;
            goto out;
        }
    hd_buf_printf(&q, "limit=%zu", o->limit);
    add_param(&q, "prefix", o->prefix);
    add_param(&q, "delimiter", o->delimiter);
    if (o->start_after && *o->start_after) {
        if (hd_b64_encode((const unsigned char *)o->start_after, strlen(o->start_after), token,
                          sizeof(token)) < 0) {
            rc = HD_EBADTOKEN;
            goto out;
        }
        add_param(&q, "token", token);
    }
    calls = calloc(s->n ? s->n : 1, sizeof(*calls));
    urls = calloc(s->n ? s->n : 1, sizeof(*urls));
    tg = calloc(s->n ? s->n : 1, sizeof(const struct hd_node *));
    if (!calls || !urls || !tg || q.oom) {
        rc = -ENOMEM;
        goto out;
    }
    for (i = 0; i < s->n; i++) {
        const struct hd_node *t = &s->nodes[i];
        if (t->type != HD_NODE_TARGET || t->down)
            continue;
        hd_buf_init(&urls[n]);
        hd_buf_printf(&urls[n], "%s/v1/buckets/", t->url);
        hd_uri_encode(&urls[n], bucket, strlen(bucket), 0);
        hd_buf_printf(&urls[n], "?%s", q.data);
        if (urls[n].oom) {
            hd_buf_cleanup(&urls[n]);
            rc = -ENOMEM;
            goto out;
        }
        hd_httpc_call_init(&calls[n], "GET", urls[n].data);
        hd_proxy_call_sign(p, &calls[n]);
        calls[n].total_ms = HD_PROXY_FANOUT_MS;
        tg[n] = t;
        n++;
    }
    hd_httpc_run_all(calls, n, 0);
    for (i = 0; i < n && rc == 0; i++) {
        json_t *j = NULL;
        if (calls[i].rc < 0 && handed_over(tg[i]))
            continue; /* stopped after its preStop hook, before the primary noticed */
        if (calls[i].rc < 0) {
            snprintf(msg, msglen, "Target %s did not answer the listing: %s", tg[i]->id,
                     hd_strerror(calls[i].rc));
            rc = HD_EUNAVAIL;
            break;
        }
        if (calls[i].status == 404)
            continue; /* the bucket has not reached this target yet: nothing there */
        if (calls[i].resp.len)
            j = json_loadb(calls[i].resp.data, calls[i].resp.len, 0, NULL);
        if (calls[i].status != 200 || !j) {
            snprintf(msg, msglen, "Target %s failed the listing (HTTP %ld).", tg[i]->id,
                     calls[i].status);
            rc = calls[i].status == 400 ? hd_proxy_err_from_json(calls[i].status, j) : HD_EUNAVAIL;
            json_decref(j);
            break;
        }
        rc = take_page(res, &cap, j, &truncated);
        json_decref(j);
    }
    if (rc < 0)
        goto out;
    if (res->n)
        qsort(res->items, res->n, sizeof(res->items[0]), cmp_item);
    for (i = 0, w = 0; i < res->n; i++) { /* dedupe: common prefixes come from every target */
        if (w && strcmp(res->items[w - 1].name, res->items[i].name) == 0) {
            free(res->items[i].name);
            continue;
        }
        res->items[w++] = res->items[i];
    }
    res->n = w;
    if (res->n > o->limit) {
        for (i = o->limit; i < res->n; i++)
            free(res->items[i].name);
        res->n = o->limit;
        truncated = 1;
    }
    res->truncated = truncated;
    if (res->n && !(res->last = strdup(res->items[res->n - 1].name)))
        rc = -ENOMEM;
out:
    for (i = 0; i < n; i++) {
        hd_httpc_call_cleanup(&calls[i]);
        hd_buf_cleanup(&urls[i]);
    }
    free(calls);
    free(urls);
    free(tg);
    hd_buf_cleanup(&q);
    hd_smap_unref(s);
    hd_bmd_unref(bmd);
    if (rc < 0)
        hd_proxy_list_cleanup(res);
    return rc;
}

int hd_proxy_bucket_empty(struct hd_proxy *p, const char *bucket, char *msg, size_t msglen)
{
    struct hd_plist_opts o = {.limit = 1};
    struct hd_plist_res res;
    int rc = hd_proxy_list_local(p, bucket, &o, &res, msg, msglen);

    if (rc < 0)
        return rc;
    rc = res.n ? HD_EBUCKETNOTEMPTY : 0;
    hd_proxy_list_cleanup(&res);
    return rc;
}

int hd_proxy_list_token(const char *tok, unsigned char *raw, size_t max)
{
    size_t n;

    if (max < 2 || hd_b64_decode(tok, strlen(tok), raw, max - 1, &n) < 0 || n == 0 ||
        memchr(raw, 0, n))
        return HD_EBADTOKEN;
    raw[n] = '\0';
    return 0;
}

void hd_proxy_list_native(struct hd_req *r, struct hd_proxy *p, const char *bucket)
{
    const char *lim = hd_req_param(r, "limit"), *tok = hd_req_param(r, "token");
    struct hd_plist_opts o;
    struct hd_plist_res res;
    unsigned char raw[1100];
    uint64_t limit = 1000;
    char msg[256];
    json_t *ents, *pfx, *j;
    size_t i;
    int rc;

    r->op = HD_OP_LIST;
    memset(&o, 0, sizeof(o));
    if (lim && (hd_parse_u64(lim, &limit) < 0 || limit == 0 || limit > 10000)) {
        hd_resp_err_msg(r, HD_EBADARG, "limit must be an integer in 1..10000.");
        return;
    }
    if (tok && *tok) {
        if (hd_proxy_list_token(tok, raw, sizeof(raw)) < 0) {
            hd_resp_err(r, HD_EBADTOKEN);
            return;
        }
        o.start_after = (const char *)raw;
    }
    o.prefix = hd_req_param(r, "prefix");
    o.delimiter = hd_req_param(r, "delimiter");
    o.limit = (size_t)limit;
    o.cached_only = hd_req_param(r, "cached") && strcmp(hd_req_param(r, "cached"), "false") != 0;
    o.cached_fallback = 1;
    if ((rc = hd_proxy_list(p, bucket, &o, &res, msg, sizeof(msg))) < 0) {
        hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
        return;
    }
    ents = json_array();
    pfx = json_array();
    for (i = 0; i < res.n; i++) {
        const struct hd_plist_item *it = &res.items[i];
        if (it->is_prefix)
            json_array_append_new(pfx, json_string(it->name));
        else {
            json_t *e = json_pack("{s:s, s:I, s:s, s:s}", "name", it->name, "size",
                                  (json_int_t)it->size, "etag", it->etag, "mtime", it->mtime);
            if (e && it->cached >= 0)
                json_object_set_new(e, "cached", json_boolean(it->cached));
            if (e && it->sclass[0])
                json_object_set_new(e, "storage_class", json_string(it->sclass));
            json_array_append_new(ents, e);
        }
    }
    j = json_pack("{s:o, s:o}", "entries", ents, "prefixes", pfx);
    if (j && res.truncated && res.last) {
        char t64[TOKEN_MAX];
        if (hd_b64_encode((const unsigned char *)res.last, strlen(res.last), t64, sizeof(t64)) == 0)
            json_object_set_new(j, "continuation_token", json_string(t64));
    }
    if (j && res.upstream_failed) {
        json_object_set_new(j, "upstream_unavailable", json_true());
        hd_resp_header(r, "Warning", HD_PLIST_WARNING);
    }
    hd_proxy_list_cleanup(&res);
    hd_resp_json(r, 200, j);
}

/* An upstream entry (not known to be cached yet) or common prefix. */
/* ---- S3-backed buckets: the upstream's listing, marked cached or not ---- */

#define MAX_SUFFIX "\xf4\x8f\xbf\xbf" /* U+10FFFF: after every key under a common prefix */

static int push(struct hd_plist_res *res, size_t *cap, const char *name, int is_prefix,
                const json_t *e)
{
    int rc = hd_proxy_list_push(res, cap, name, is_prefix, e);

    if (rc == 0)
        res->items[res->n - 1].cached = is_prefix ? -1 : 0;
    return rc;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(((const struct hd_plist_item *)a)->name, ((const struct hd_plist_item *)b)->name);
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

/* Appends a copy of item it to res (whose capacity is *cap). */
static int push_copy(struct hd_plist_res *res, size_t *cap, const struct hd_plist_item *it)
{
    int rc = hd_proxy_list_push(res, cap, it->name, it->is_prefix, NULL);

    if (rc == 0) {
        struct hd_plist_item *n = &res->items[res->n - 1];
        char *name = n->name;
        *n = *it;
        n->name = name;
        n->cached = it->is_prefix ? -1 : 1;
    }
    return rc;
}

/* Write-back buckets: what the targets hold and the upstream does not have yet (dirty) is
 * listed too: the items of add are merged into res, which is cut back to o->limit. */
static int merge_held(const struct hd_plist_opts *o, struct hd_plist_res *res, size_t *cap,
                      struct hd_plist_res *add, int *truncated)
{
    size_t i, limit = o->limit ? o->limit : 1000;
    int rc = 0;

    for (i = 0; i < add->n && rc == 0; i++)
        rc = push_copy(res, cap, &add->items[i]);
    if (rc < 0 || !add->n)
        return rc;
    qsort(res->items, res->n, sizeof(res->items[0]), cmp_name);
    if (res->n > limit) {
        for (i = limit; i < res->n; i++)
            free(res->items[i].name);
        res->n = limit;
        *truncated = 1;
    }
    return 0;
}

/* Marks the entries of res the targets hold: the targets' merged listing over the same
 * range, page by page until it passes res's last name. With `held` (a write-back bucket),
 * held names in that range that res lacks are collected there. */
static int mark_cached(struct hd_proxy *p, const char *bucket, const struct hd_plist_opts *o,
                       struct hd_plist_res *res, int upstream_done, struct hd_plist_res *held,
                       char *msg, size_t msglen)
{
    struct hd_plist_opts lo = *o;
    const char *last = res->n ? res->items[res->n - 1].name : NULL;
    char *after = o->start_after ? strdup(o->start_after) : NULL;
    size_t hcap = 0;
    int rc = 0;

    if (!last && !(held && upstream_done))
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
        for (i = 0; i < lr.n && rc == 0; i++) {
            struct hd_plist_item key = {.name = lr.items[i].name}, *hit;
            hit = res->n ? bsearch(&key, res->items, res->n, sizeof(key), cmp_name) : NULL;
            if (hit && !hit->is_prefix && !lr.items[i].is_prefix)
                hit->cached = 1;
            else if (!hit && held && (upstream_done || strcmp(lr.items[i].name, last) < 0))
                rc = push_copy(held, &hcap, &lr.items[i]);
        }
        more = rc == 0 && lr.truncated && lr.last && (upstream_done || strcmp(lr.last, last) < 0);
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

/* Whether bucket's props say write_policy "back". */
static int write_back(struct hd_proxy *p, const char *bucket)
{
    struct hd_bmd *b = hd_smap_state_bmd(p->cs);
    const struct hd_bmd_bucket *e = hd_bmd_find(b, bucket);
    struct hd_bprops bp;
    int wb = e && hd_bprops_parse(e->props, &bp, NULL, 0) == 0 && bp.write_back;

    hd_bmd_unref(b);
    return wb;
}

int hd_proxy_list_cloud(struct hd_proxy *p, const char *bucket, const struct hd_plist_opts *o,
                        struct hd_plist_res *res, char *msg, size_t msglen)
{
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    const struct hd_node *owner = NULL;
    struct hd_httpc_call call;
    struct hd_plist_res held;
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
    hd_proxy_call_sign(p, &call);
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
        qsort(res->items, res->n, sizeof(res->items[0]), cmp_name);
    memset(&held, 0, sizeof(held));
    rc = mark_cached(p, bucket, o, res, !truncated, write_back(p, bucket) ? &held : NULL, msg,
                     msglen);
    if (rc == 0)
        rc = merge_held(o, res, &cap, &held, &truncated);
    hd_proxy_list_cleanup(&held);
    if (rc < 0)
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
