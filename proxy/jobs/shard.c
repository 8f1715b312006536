/* shard: planning a shard job on the proxy (POST /v1/jobs {"kind": "shard", ...}).
 *
 * The request is parked while a thread of its own does the work, so the HTTP worker never
 * waits on the network: it lists the input bucket across all targets (the merged listing),
 * keeps the objects the job names (prefix, list or name range), plans the shards
 * (common/shardplan.h: samples grouped by key, never split, sorted or seeded-shuffled, packed
 * to the target size, named from the template), assigns each shard to the target that owns
 * its output name, writes the job manifest as an object of the output bucket, and starts the
 * job (kind "shard", same id) on every target with the manifest's name. Each target then
 * builds its own shards (target/shard.c). The answer: 201 {"id", "kind", "manifest",
 * "shards", "samples", "objects", "bytes"}.
 *
 * Args: {"output_bucket": B, "template": "train-{000000..}.tar", "shard_size": BYTES,
 *        "prefix"?: P, "list"?: [names], "range"?: "img-{0000..0999}.jpg",
 *        "seed"?: N (shuffle), "key_rule"?: "first_dot"|"last_dot"|"dir"|"name",
 *        "manifest"?: NAME (default "shard-manifests/<id>.json")} */
#include "proxy/jobs/jobs.h"
#include "proxy/data/data.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/batch.h"
#include "common/buf.h"
#include "common/errors.h"
#include "common/httpc.h"
#include "common/httputil.h"
#include "common/json.h"
#include "common/log.h"
#include "common/shardplan.h"
#include "common/tarindex.h"

#define PLAN_MAGIC 0x706c616eu
#define MAX_OBJECTS 1000000 /* its manifest stays well under HD_HTTPC_MAX_BODY */
#define LIST_PAGE 10000
#define MANIFEST_PUT_MS 120000
#define ARCHIVE_PLAN_MAX (3u << 20) /* an inline plan, under the 4 MiB a target's job takes */

struct plan_req {
    uint32_t magic;
    pthread_mutex_t mu;
    int refs; /* request, thread */
    struct hd_proxy *p;
    struct hd_req *r; /* NULL once the request is over */
    int waiting;      /* r is parked until the thread finishes */
    int finished;
    char id[64];
    char bucket[64];
    json_t *args;
    int archive;     /* AIStore's archive action: the plan goes to the targets inline, no
                      * manifest object; the answer is the id as text (hd_proxy_archive_start) */
    void *prev_data; /* the jobs body handler's state, given back at the end */
    void (*prev_done)(struct hd_req *r);
    /* outcome */
    int rc;
    char msg[600];
    json_t *result;
};

static void pr_unref(struct plan_req *pr)
{
    int last;

    pthread_mutex_lock(&pr->mu);
    last = --pr->refs == 0;
    pthread_mutex_unlock(&pr->mu);
    if (!last)
        return;
    json_decref(pr->args);
    json_decref(pr->result);
    pthread_mutex_destroy(&pr->mu);
    pr->magic = 0;
    free(pr);
}

/* ---- the input set ---- */

struct objs {
    struct hd_plan_obj *v;
    size_t n, cap;
};

static void objs_free(struct objs *o)
{
    size_t i;

    for (i = 0; i < o->n; i++) {
        free((char *)o->v[i].name);
        free((char *)o->v[i].etag);
    }
    free(o->v);
    memset(o, 0, sizeof(*o));
}

static int objs_add(struct objs *o, const struct hd_plist_item *it)
{
    if (o->n == o->cap) {
        size_t nc = o->cap ? o->cap * 2 : 1024;
        struct hd_plan_obj *v = realloc(o->v, nc * sizeof(*v));
        if (!v)
            return -ENOMEM;
        o->v = v;
        o->cap = nc;
    }
    o->v[o->n].name = strdup(it->name);
    o->v[o->n].etag = strdup(it->etag);
    o->v[o->n].size = it->size;
    if (!o->v[o->n].name || !o->v[o->n].etag) {
        free((char *)o->v[o->n].name);
        free((char *)o->v[o->n].etag);
        return -ENOMEM;
    }
    o->n++;
    return 0;
}

/* Which listed names the job takes. */
struct filter {
    const char *prefix;
    struct hd_tmpl range; /* width -2: none */
    const char **list;    /* sorted */
    unsigned char *seen;
    size_t nlist;
    uint64_t matched;
};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int in_range(const struct hd_tmpl *t, const char *name)
{
    size_t pl = strlen(t->prefix), sl = strlen(t->suffix), n = strlen(name);
    char digits[24];
    uint64_t v;
    struct hd_buf b;
    int ok;

    if (t->width < 0)
        return strcmp(name, t->prefix) == 0;
    if (n < pl + sl + 1 || n - pl - sl >= sizeof(digits) || strncmp(name, t->prefix, pl) != 0 ||
        strcmp(name + n - sl, t->suffix) != 0)
        return 0;
    memcpy(digits, name + pl, n - pl - sl);
    digits[n - pl - sl] = '\0';
    if (hd_parse_u64(digits, &v) < 0 || v < t->start || v > t->end)
        return 0;
    hd_buf_init(&b); /* the exact spelling: padding included */
    ok = hd_tmpl_name(t, v - t->start, &b) == 0 && !b.oom && strcmp(b.data, name) == 0;
    hd_buf_cleanup(&b);
    return ok;
}

static int wanted(struct filter *f, const char *name)
{
    if (f->list) {
        const char **hit = bsearch(&name, f->list, f->nlist, sizeof(*f->list), cmp_str);
        if (!hit)
            return 0;
        f->seen[hit - f->list] = 1;
        return 1;
    }
    if (f->range.width != -2)
        return in_range(&f->range, name);
    return 1;
}

/* Lists the input bucket under the filter's prefix and keeps what the filter wants. */
static int collect(struct plan_req *pr, struct filter *f, struct objs *o)
{
    struct hd_plist_opts lo = {.prefix = f->prefix, .limit = LIST_PAGE};
    struct hd_plist_res res;
    char *after = NULL;
    size_t i;
    int rc;

    for (;;) {
        lo.start_after = after;
        rc = hd_proxy_list(pr->p, pr->bucket, &lo, &res, pr->msg, sizeof(pr->msg));
        free(after);
        after = NULL;
        if (rc < 0)
            return rc;
        for (i = 0; i < res.n && rc == 0; i++) {
            if (res.items[i].is_prefix || !wanted(f, res.items[i].name))
                continue;
            if (o->n >= MAX_OBJECTS) {
                snprintf(pr->msg, sizeof(pr->msg),
                         "More than %d objects: split the job (prefix, list or range).",
                         MAX_OBJECTS);
                rc = HD_EBADARG;
            } else {
                rc = objs_add(o, &res.items[i]);
            }
        }
        if (rc == 0 && res.truncated && res.last && !(after = strdup(res.last)))
            rc = -ENOMEM;
        hd_proxy_list_cleanup(&res);
        if (rc < 0 || !after)
            break;
    }
    free(after);
    return rc;
}

static size_t common_prefix(const char **v, size_t n)
{
    size_t len, i;

    if (n == 0)
        return 0;
    len = strlen(v[0]); /* sorted: the first and last bound everything between */
    for (i = 0; i < len && v[0][i] == v[n - 1][i]; i++)
        ;
    return i;
}

/* ---- the plan ---- */

static int put_manifest(struct plan_req *pr, struct hd_smap *s, const char *out, const char *name,
                        const char *text)
{
    const struct hd_node *owner = NULL;
    struct hd_httpc_call c;
    struct hd_buf url;
    char *uname = NULL;
    size_t ulen;
    int rc;

    hd_buf_init(&url);
    if (hd_proxy_uname(pr->p, out, name, &uname, &ulen) < 0 ||
        hd_smap_owner(s, uname, ulen, &owner) < 0) {
        snprintf(pr->msg, sizeof(pr->msg), "The target that owns the manifest %s is %s.", name,
                 owner ? "down" : "missing");
        free(uname);
        return HD_EUNAVAIL;
    }
    free(uname);
    hd_buf_printf(&url, "%s/v1/objects/", owner->url);
    hd_uri_encode(&url, out, strlen(out), 0);
    hd_buf_puts(&url, "/");
    hd_uri_encode(&url, name, strlen(name), 1);
    if (url.oom) {
        hd_buf_cleanup(&url);
        return -ENOMEM;
    }
    hd_httpc_call_init(&c, "PUT", url.data);
    hd_proxy_call_sign(pr->p, &c);
    c.body = text;
    c.blen = strlen(text);
    c.ctype = "application/json";
    c.total_ms = MANIFEST_PUT_MS;
    rc = hd_httpc_run(&c);
    if (rc < 0 || c.status != 200) {
        snprintf(pr->msg, sizeof(pr->msg), "Writing the manifest %s/%s to target %s failed: %s",
                 out, name, owner->id, rc < 0 ? c.err : "refused");
        if (rc == 0 && c.resp.len) {
            json_t *e = json_loadb(c.resp.data, c.resp.len, 0, NULL);
            const char *m = json_string_value(json_object_get(e, "message"));
            if (m)
                snprintf(pr->msg, sizeof(pr->msg), "Writing the manifest %s/%s: %s", out, name, m);
            rc = hd_proxy_err_from_json(c.status, e);
            json_decref(e);
        } else {
            rc = HD_EUNAVAIL;
        }
    }
    hd_httpc_call_cleanup(&c);
    hd_buf_cleanup(&url);
    return rc;
}

static int arg_str(json_t *args, const char *k, const char **out, int required)
{
    json_t *v = json_object_get(args, k);

    *out = NULL;
    if (!v)
        return required ? -1 : 0;
    if (!json_is_string(v) || !*json_string_value(v))
        return -1;
    *out = json_string_value(v);
    return 0;
}

static int bad_arg(struct plan_req *pr, const char *what)
{
    snprintf(pr->msg, sizeof(pr->msg), "Shard job: %s.", what);
    return HD_EBADARG;
}

static int plan(struct plan_req *pr)
{
    static const char *const known[] = {"output_bucket", "template",   "shard_size", "prefix",
                                        "list",          "range",      "seed",       "key_rule",
                                        "manifest",      "missing_ok", "gzip",       "format",
                                        NULL};
    json_t *args = pr->args, *v, *shards = NULL, *man = NULL, *targs = NULL;
    const char *out, *tmpl_s, *prefix, *range_s, *rule_s, *mname, *k;
    struct filter f;
    struct hd_tmpl tmpl;
    struct hd_plan_opts po;
    struct hd_plan plan;
    struct objs o = {NULL, 0, 0};
    struct hd_bmd *bmd = hd_smap_state_bmd(pr->p->cs);
    struct hd_smap *s = hd_smap_state_smap(pr->p->cs);
    const char **targets = NULL;
    struct hd_buf mn;
    char *text = NULL, ts[32];
    size_t i, j;
    int rc = 0, fmt;

    memset(&f, 0, sizeof(f));
    memset(&tmpl, 0, sizeof(tmpl));
    memset(&plan, 0, sizeof(plan));
    memset(&po, 0, sizeof(po));
    f.range.width = -2;
    hd_buf_init(&mn);
    json_object_foreach(args, k, v)
    {
        for (j = 0; known[j] && strcmp(k, known[j]) != 0; j++)
            ;
        if (!known[j]) {
            snprintf(pr->msg, sizeof(pr->msg), "Shard job: unknown argument \"%.64s\".", k);
            rc = HD_EBADARG;
            goto out;
        }
    }
    v = json_object_get(args, "gzip");
    if (v && !json_is_boolean(v)) {
        rc = bad_arg(pr, "\"gzip\" must be true or false");
        goto out;
    }
    if ((fmt = hd_arch_fmt_json(args)) < 0) {
        rc = bad_arg(pr, HD_ARCH_FMT_MSG);
        goto out;
    }
    if (!s) {
        rc = HD_EUNAVAIL;
        snprintf(pr->msg, sizeof(pr->msg), "This proxy has no cluster map yet; retry shortly.");
        goto out;
    }
    if (!*pr->bucket || !hd_bmd_find(bmd, pr->bucket)) {
        rc = *pr->bucket ? HD_ENOSUCHBUCKET : bad_arg(pr, "\"bucket\" (the input) is required");
        if (rc == HD_ENOSUCHBUCKET)
            snprintf(pr->msg, sizeof(pr->msg), "Input bucket %s does not exist.", pr->bucket);
        goto out;
    }
    if (arg_str(args, "output_bucket", &out, 1) < 0) {
        rc = bad_arg(pr, "\"output_bucket\" is required");
        goto out;
    }
    if (!hd_bmd_find(bmd, out)) {
        rc = HD_ENOSUCHBUCKET;
        snprintf(pr->msg, sizeof(pr->msg), "Output bucket %s does not exist.", out);
        goto out;
    }
    if (arg_str(args, "template", &tmpl_s, 1) < 0) {
        rc = bad_arg(pr, "\"template\" (e.g. \"train-{000000..}.tar\") is required");
        goto out;
    }
    if ((rc = hd_tmpl_parse(tmpl_s, &tmpl, pr->msg, sizeof(pr->msg))) < 0)
        goto out;
    v = json_object_get(args, "shard_size");
    if (!json_is_integer(v) || json_integer_value(v) < 1 ||
        json_integer_value(v) > ((json_int_t)1 << 40)) {
        rc = bad_arg(pr, "\"shard_size\" must be a number of bytes (1 to 1 TiB)");
        goto out;
    }
    po.shard_size = (uint64_t)json_integer_value(v);
    po.tmpl = &tmpl;
    po.fmt = fmt;
    v = json_object_get(args, "seed");
    if (v && (!json_is_integer(v) || json_integer_value(v) < 0)) {
        rc = bad_arg(pr, "\"seed\" must be a non-negative integer");
        goto out;
    }
    po.shuffle = v != NULL;
    po.seed = v ? (uint64_t)json_integer_value(v) : 0;
    if (arg_str(args, "key_rule", &rule_s, 0) < 0 ||
        (rule_s && hd_keyrule_parse(rule_s, &po.rule) < 0)) {
        rc = bad_arg(pr, "\"key_rule\" must be first_dot, last_dot, dir or name");
        goto out;
    }
    if (arg_str(args, "prefix", &prefix, 0) < 0 || arg_str(args, "range", &range_s, 0) < 0 ||
        arg_str(args, "manifest", &mname, 0) < 0) {
        rc = bad_arg(pr, "\"prefix\", \"range\" and \"manifest\" must be non-empty strings");
        goto out;
    }
    v = json_object_get(args, "list");
    if ((v != NULL) + (range_s != NULL) + (prefix != NULL) > 1) {
        rc = bad_arg(pr, "give at most one of \"prefix\", \"list\" and \"range\"");
        goto out;
    }
    f.prefix = prefix;
    if (range_s) {
        if ((rc = hd_tmpl_parse(range_s, &f.range, pr->msg, sizeof(pr->msg))) < 0)
            goto out;
        if (hd_tmpl_count(&f.range) > MAX_OBJECTS) {
            rc = bad_arg(pr, "\"range\" must be a closed range of at most 1000000 names");
            goto out;
        }
        f.prefix = f.range.prefix;
    } else if (v) {
        if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > MAX_OBJECTS) {
            rc = bad_arg(pr, "\"list\" must be an array of 1 to 1000000 object names");
            goto out;
        }
        f.nlist = json_array_size(v);
        f.list = calloc(f.nlist, sizeof(*f.list));
        f.seen = calloc(f.nlist, 1);
        if (!f.list || !f.seen) {
            rc = -ENOMEM;
            goto out;
        }
        for (i = 0; i < f.nlist; i++)
            if (!(f.list[i] = json_string_value(json_array_get(v, i)))) {
                rc = bad_arg(pr, "\"list\" must hold object names (strings)");
                goto out;
            }
        qsort(f.list, f.nlist, sizeof(*f.list), cmp_str);
        i = common_prefix(f.list, f.nlist);
        if (i && !(f.prefix = strndup(f.list[0], i))) {
            rc = -ENOMEM;
            goto out;
        }
    }
    hd_buf_printf(&mn, "shard-manifests/%s.json", pr->id);
    if (mn.oom) {
        rc = -ENOMEM;
        goto out;
    }
    if (!mname)
        mname = mn.data;
    if (hd_object_name_check(mname, strlen(mname)) < 0) {
        rc = bad_arg(pr, "\"manifest\" must be a valid object name");
        goto out;
    }

    if ((rc = collect(pr, &f, &o)) < 0)
        goto out;
    if (json_is_true(json_object_get(args, "missing_ok"))) {
        /* listed names that do not exist are left out (AIStore's continue-on-error) */
    } else if (f.list) { /* every listed name must exist */
        size_t missing = 0, first = 0;
        for (i = 0; i < f.nlist; i++)
            if (!f.seen[i] && (i == 0 || strcmp(f.list[i], f.list[i - 1]) != 0) && missing++ == 0)
                first = i;
        if (missing) {
            snprintf(pr->msg, sizeof(pr->msg),
                     "%zu listed objects do not exist in %s (the first: %.300s).", missing,
                     pr->bucket, f.list[first]);
            rc = HD_ENOSUCHKEY;
            goto out;
        }
    } else if (range_s && o.n != hd_tmpl_count(&f.range)) {
        snprintf(pr->msg, sizeof(pr->msg),
                 "%llu of the %llu objects of range %.200s do not "
                 "exist in %s.",
                 (unsigned long long)(hd_tmpl_count(&f.range) - o.n),
                 (unsigned long long)hd_tmpl_count(&f.range), range_s, pr->bucket);
        rc = HD_ENOSUCHKEY;
        goto out;
    }
    if (o.n == 0) {
        snprintf(pr->msg, sizeof(pr->msg), "No objects to shard in %s%s%s.", pr->bucket,
                 f.prefix ? " under " : "", f.prefix ? f.prefix : "");
        rc = HD_ENOSUCHKEY;
        goto out;
    }
    if ((rc = hd_plan_build(o.v, o.n, &po, &plan, pr->msg, sizeof(pr->msg))) < 0)
        goto out;
    if (!(targets = calloc(plan.nshards, sizeof(*targets)))) {
        rc = -ENOMEM;
        goto out;
    }
    for (i = 0; i < plan.nshards; i++) {
        const struct hd_node *owner = NULL;
        char *uname = NULL;
        size_t ulen;
        if ((rc = hd_proxy_uname(pr->p, out, plan.shards[i].name, &uname, &ulen)) == 0)
            rc = hd_smap_owner(s, uname, ulen, &owner);
        free(uname);
        if (rc < 0) {
            snprintf(pr->msg, sizeof(pr->msg),
                     "Shard %s: its target is %s; retry when every "
                     "target is up.",
                     plan.shards[i].name, owner ? "down" : "missing");
            rc = HD_EUNAVAIL;
            goto out;
        }
        targets[i] = owner->id;
    }
    shards = hd_plan_shards_json(&plan, o.v, targets);
    hd_iso8601(time(NULL), ts);
    man = shards ? json_pack(
                       "{s:s, s:s, s:s, s:{s:s, s:s*, s:s*, s:I}, s:{s:s, s:s, s:I}, "
                       "s:s, s:b, s:O?, s:{s:I, s:I, s:I, s:I}, s:o}",
                       "job", pr->id, "kind", "shard", "created", ts, "input", "bucket", pr->bucket,
                       "prefix", prefix, "range", range_s, "objects", (json_int_t)o.n, "output",
                       "bucket", out, "template", tmpl_s, "shard_size", (json_int_t)po.shard_size,
                       "key_rule", hd_keyrule_name(po.rule), "shuffle", po.shuffle, "seed",
                       json_object_get(args, "seed"), "totals", "objects", (json_int_t)plan.nobjs,
                       "bytes", (json_int_t)plan.bytes, "samples", (json_int_t)plan.nsamples,
                       "shards", (json_int_t)plan.nshards, "shards", shards)
                 : NULL;
    shards = NULL; /* the manifest holds it (or json_pack released it) */
    text = man ? json_dumps(man, JSON_COMPACT) : NULL;
    if (!text) {
        rc = -ENOMEM;
        goto out;
    }
    if (strlen(text) > HD_HTTPC_MAX_BODY) { /* targets could not read it back */
        snprintf(pr->msg, sizeof(pr->msg),
                 "The manifest would be %zu MiB (at most %u): split "
                 "the job (prefix, list or range).",
                 strlen(text) >> 20, HD_HTTPC_MAX_BODY >> 20);
        rc = HD_EBADARG;
        goto out;
    }
    if (pr->archive && strlen(text) > ARCHIVE_PLAN_MAX) { /* a target takes 4 MiB of args */
        snprintf(pr->msg, sizeof(pr->msg),
                 "The archive's plan would be %zu KiB (at most %u): fewer or shorter names.",
                 strlen(text) >> 10, ARCHIVE_PLAN_MAX >> 10);
        rc = HD_EBADARG;
        goto out;
    }
    if (pr->archive) /* the plan travels with the job: nothing is written beside the archive */
        targs = json_pack("{s:O, s:s, s:b, s:b, s:s}", "plan", man, "output_bucket", out,
                          "archive", 1, "gzip", fmt == HD_ARCH_TGZ, "format", hd_arch_fmt_name(fmt));
    else if ((rc = put_manifest(pr, s, out, mname, text)) < 0)
        goto out;
    else
        targs = json_pack("{s:s, s:s, s:b, s:s}", "manifest", mname, "output_bucket", out, "gzip",
                          fmt == HD_ARCH_TGZ, "format", hd_arch_fmt_name(fmt));
    if (!targs) {
        rc = -ENOMEM;
        goto out;
    }
    HD_LOG(HD_INFO, NULL,
           "shard job %s: %zu objects, %zu samples -> %zu shards in %s (manifest "
           "%s)",
           pr->id, o.n, plan.nsamples, plan.nshards, out, mname);
    rc = hd_proxy_jobs_start_all(pr->p, s, pr->id, "shard", pr->bucket, targs, 0, pr->msg,
                                 sizeof(pr->msg));
    if (rc == 0 && pr->archive)
        HD_LOG(HD_INFO, NULL, "archive job %s: %s/%s from %zu objects of %s", pr->id, out, tmpl_s,
               o.n, pr->bucket);
    if (rc == 0)
        pr->result = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I}", "id", pr->id, "kind", "shard",
                               "manifest", mname, "shards", (json_int_t)plan.nshards, "samples",
                               (json_int_t)plan.nsamples, "objects", (json_int_t)plan.nobjs,
                               "bytes", (json_int_t)plan.bytes);
out:
    if (rc == -ENOMEM && !pr->msg[0])
        snprintf(pr->msg, sizeof(pr->msg), "Out of memory while planning.");
    json_decref(targs);
    json_decref(man);
    free(text);
    free(targets);
    hd_plan_free(&plan);
    objs_free(&o);
    if (f.list && f.prefix)
        free((char *)f.prefix);
    free(f.list);
    free(f.seen);
    if (f.range.width != -2)
        hd_tmpl_cleanup(&f.range);
    hd_tmpl_cleanup(&tmpl);
    hd_buf_cleanup(&mn);
    hd_smap_unref(s);
    hd_bmd_unref(bmd);
    return rc;
}

/* ---- the request ---- */

static void *plan_main(void *arg)
{
    struct plan_req *pr = arg;
    int rc = plan(pr);

    if (rc < 0)
        HD_LOG(HD_INFO, NULL, "shard job %s not started: %s", pr->id,
               pr->msg[0] ? pr->msg : hd_strerror(rc));
    pthread_mutex_lock(&pr->mu);
    pr->rc = rc;
    pr->finished = 1;
    if (pr->r && pr->waiting) {
        pr->waiting = 0;
        hd_req_resume(pr->r);
    }
    pthread_mutex_unlock(&pr->mu);
    pr_unref(pr);
    return NULL;
}

static void plan_end(struct hd_req *r)
{
    struct plan_req *pr = r->data;
    json_t *res;

    pthread_mutex_lock(&pr->mu);
    if (!pr->finished) {
        pr->waiting = 1;
        hd_req_suspend(r);
        pthread_mutex_unlock(&pr->mu);
        return;
    }
    res = pr->result;
    pr->result = NULL;
    pthread_mutex_unlock(&pr->mu);
    if (pr->rc < 0) {
        hd_resp_err_msg(r, pr->rc, pr->msg[0] ? pr->msg : NULL);
    } else if (pr->archive) { /* as AIStore answers a started job: its id */
        json_decref(res);
        hd_resp_copy(r, 200, "text/plain; charset=utf-8", pr->id, strlen(pr->id));
    } else {
        hd_resp_json(r, 201, res);
    }
}

static void plan_done(struct hd_req *r)
{
    struct plan_req *pr = r->data;

    if (!pr || pr->magic != PLAN_MAGIC)
        return;
    pthread_mutex_lock(&pr->mu);
    pr->r = NULL;
    pthread_mutex_unlock(&pr->mu);
    r->data = pr->prev_data;
    r->on_done = pr->prev_done;
    if (r->on_done)
        r->on_done(r);
    pr_unref(pr);
}

static void start(struct hd_req *r, struct hd_proxy *p, const char *id, const char *bucket,
                  json_t *args, int archive)
{
    struct plan_req *pr = calloc(1, sizeof(*pr));
    pthread_attr_t at;
    pthread_t th;

    if (!pr || !(pr->args = args ? json_deep_copy(args) : json_object())) {
        free(pr);
        hd_resp_err(r, -ENOMEM);
        return;
    }
    pr->magic = PLAN_MAGIC;
    pr->archive = archive;
    pthread_mutex_init(&pr->mu, NULL);
    pr->refs = 2;
    pr->p = p;
    pr->r = r;
    snprintf(pr->id, sizeof(pr->id), "%s", id);
    snprintf(pr->bucket, sizeof(pr->bucket), "%s", bucket);
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &at, plan_main, pr) != 0) {
        pthread_attr_destroy(&at);
        pr->refs = 1;
        pr_unref(pr);
        hd_resp_err_msg(r, HD_EUNAVAIL, "Cannot start planning; retry shortly.");
        return;
    }
    pthread_attr_destroy(&at);
    /* chain onto the jobs handler's request state: given back in plan_done */
    pr->prev_data = r->data;
    pr->prev_done = r->on_done;
    r->data = pr;
    r->on_done = plan_done;
    r->on_end = plan_end;
    plan_end(r);
}

void hd_proxy_shard_start(struct hd_req *r, struct hd_proxy *p, const char *id, const char *bucket,
                          json_t *args)
{
    start(r, p, id, bucket, args, 0);
}

void hd_proxy_archive_start(struct hd_req *r, struct hd_proxy *p, const char *id,
                            const char *bucket, json_t *args)
{
    start(r, p, id, bucket, args, 1);
}
