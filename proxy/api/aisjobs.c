/* aisjobs: AIStore's job actions and job queries mapped onto hoard's cluster jobs
 * (docs/aistore-compat.md#jobs):
 *
 *   POST   /v1/buckets/B {"action":"prefetch-listrange","value":{objnames|template,...}}
 *   DELETE /v1/buckets/B {"action":"evict-listrange","value":{objnames|template}}
 *   DELETE /v1/buckets/B {"action":"evict-remote-bck"}              -> hoard "evict" (whole)
 *   DELETE /v1/buckets/B {"action":"delete-listrange","value":{objnames|template}} -> "delete"
 *   POST   /v1/buckets/B?bck_to=ais/@#/DST/ {"action":"copy-bck","value":{"prefix",...}}
 *   POST   /v1/buckets/B {"action":"copy-listrange","value":{objnames|template,"tobck":{..}}}
 *   PUT    /v1/buckets/B {"action":"archive","value":{objnames|template,"archname",..}}
 *                                                      -> a one-shard "shard" job (archive)
 *   GET    /v1/buckets/B {"action":"summary-bck","value":{"uuid",...}}  202 id, then 200 [..]
 *   HEAD   /v1/buckets/B[?presence=N[&uuid=ID]]   ais-bucket-props [+ ais-bucket-summ]
 *   GET    /v1/cluster?what=status    {"ID": id}  -> {"uuid","kind","err","end_time","aborted"}
 *   GET    /v1/cluster?what=qryxstats {"ID": id}  -> {TARGET: [snapshot]}
 *
 * A started job answers its id as text, as AIStore does; its status comes from the targets'
 * job documents (proxy/jobs). Requests arrive here authenticated (and authorised for B); the
 * body is read after that. HTTP workers (the fan-outs are bounded). */
#include "proxy/api/api.h"
#include "proxy/cluster/cluster.h"
#include "proxy/jobs/jobs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/aismsg.h"
#include "common/brace.h"
#include "common/errors.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/tarindex.h"

#define XACT_BODY_MAX 4096

/* hoard job kinds as AIStore names them (xact kinds the SDK knows) */
static const char *ais_kind(const char *kind, const json_t *args)
{
    if (!kind)
        return "";
    if (strcmp(kind, "prefetch") == 0)
        return "prefetch-listrange";
    if (strcmp(kind, "evict") == 0)
        return json_object_size(args) == 0 ? "evict-remote-bck" : "evict-listrange";
    if (strcmp(kind, "delete") == 0)
        return "delete-listrange";
    if (strcmp(kind, "copy") == 0)
        return json_object_get(args, "names") || json_object_get(args, "template")
                   ? "copy-listrange"
                   : "copy-bck";
    if (strcmp(kind, "shard") == 0 && json_is_true(json_object_get(args, "archive")))
        return "archive";
    return kind;
}

/* The job id as AIStore answers a started job: the id as the body. */
static void answer_id(struct hd_req *r, int status, const char *id)
{
    hd_resp_copy(r, status, "text/plain; charset=utf-8", id, strlen(id));
}

/* Starts kind on every target for bucket and answers its id. Takes args. */
static void start(struct hd_req *r, struct hd_proxy *p, const char *kind, const char *bucket,
                  json_t *args)
{
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    char id[64], msg[512] = "";
    int rc;

    if (!s) {
        hd_resp_err_msg(r, HD_EUNAVAIL, "This proxy has not joined a cluster yet.");
        json_decref(args);
        return;
    }
    hd_proxy_jobs_new_id(kind, id, sizeof(id));
    rc = hd_proxy_jobs_start_all(p, s, id, kind, bucket, args, 0, msg, sizeof(msg));
    hd_smap_unref(s);
    json_decref(args);
    if (rc < 0) {
        hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
        return;
    }
    HD_LOG(HD_INFO, r->id, "aistore: %s job %s on %s started for %s", kind, id, bucket,
           r->principal[0] ? r->principal : "-");
    answer_id(r, 200, id);
}

/* 0 when bucket is S3-backed; otherwise answers (404, or 400 for a native bucket). */
static int need_cloud(struct hd_req *r, struct hd_proxy *p, const char *bucket, const char *act)
{
    struct hd_bmd *b = hd_smap_state_bmd(p->cs);
    const struct hd_bmd_bucket *e = hd_bmd_find(b, bucket);
    char msg[160];
    int rc = 0;

    if (!e) {
        rc = HD_ENOSUCHBUCKET;
        hd_resp_err(r, rc);
    } else if (strcmp(e->provider, "aws") != 0) {
        rc = HD_EBADARG;
        snprintf(msg, sizeof(msg), "%s: bucket \"%s\" is not a remote (S3-backed) bucket", act,
                 bucket);
        hd_resp_err_msg(r, rc, msg);
    }
    hd_bmd_unref(b);
    return rc;
}

/* prefetch-listrange, evict-listrange, evict-remote-bck */
static void cache_job(struct hd_req *r, struct hd_proxy *p, const char *bucket, const char *act,
                      const json_t *value)
{
    const char *kind = strcmp(act, "prefetch-listrange") == 0 ? "prefetch" : "evict";
    json_t *args = NULL;
    char msg[256];
    int rc;

    if (need_cloud(r, p, bucket, act) < 0)
        return;
    if (strcmp(act, "evict-remote-bck") == 0) {
        args = json_object(); /* the whole bucket; it stays registered (keep_md or not) */
        rc = args ? 0 : -ENOMEM;
        msg[0] = '\0';
    } else {
        rc = hd_ais_selection_args(value, 1, &args, msg, sizeof(msg));
    }
    if (rc < 0) {
        hd_resp_err_msg(r, rc, rc == HD_EBADARG ? msg : NULL);
        return;
    }
    start(r, p, kind, bucket, args);
}

/* Whether the caller authenticated as a may write bucket (copy-bck's destination). */
static int may_write(struct hd_req *r, struct hd_proxy *p, const struct hd_sigv4_auth *a,
                     const char *bucket)
{
    int rc;

    if (!hd_proxy_auth_by_node(a) && (rc = hd_proxy_tls_check(r, p, bucket)) < 0)
        return rc; /* the destination's policy: TLS only */
    if (p->keys.n == 0 || hd_proxy_auth_by_node(a))
        return 0; /* auth off, or another proxy of the cluster (which authorised it) */
    if (a->anonymous)
        return HD_EMISSINGAUTH;
    return hd_keys_authorize(&p->keys, r, a, bucket, NULL, NULL);
}

/* Starts a copy of bucket into dst (provider prov) with sel (names, template or prefix:
 * hoard's copy args; taken) after AIStore's checks; what names the action in messages. DST
 * (native) is created when missing, as AIStore does. */
/* 1 when sel's brace template selects more names than a copy or delete job takes (the
 * targets build the set of them), answered 400; 0 otherwise. */
static int set_too_big(struct hd_req *r, const json_t *sel, const char *what)
{
    const char *t = json_string_value(json_object_get(sel, "template"));
    struct hd_brace *b = NULL;
    char err[160], m[300];
    int big;

    if (!t || hd_brace_parse(t, &b, err, sizeof(err)) < 0)
        return 0; /* hd_ais_selection_args parsed it */
    big = hd_brace_count(b) > HD_AIS_NAMES_MAX;
    hd_brace_free(b);
    if (big) {
        snprintf(m, sizeof(m), "%s: the template selects more than %d names", what,
                 HD_AIS_NAMES_MAX);
        hd_resp_err_msg(r, HD_EBADARG, m);
    }
    return big;
}

static void copy_start(struct hd_req *r, struct hd_proxy *p, const char *bucket,
                       const struct hd_sigv4_auth *a, const json_t *value, const char *what,
                       const char *prov, const char *dst, json_t *sel)
{
    const char *prepend = json_string_value(json_object_get(value, "prepend"));
    char m[300];
    struct hd_bmd *b;
    int rc, exists;

    if (strcmp(prov, "ais") != 0 || strcmp(dst, bucket) == 0) {
        snprintf(m, sizeof(m), "%s: %s", what,
                 strcmp(prov, "ais") != 0 ? "hoard copies into native (ais) buckets only"
                                          : "the destination must be another bucket");
        hd_resp_err_msg(r, strcmp(prov, "ais") != 0 ? HD_ENOTIMPL : HD_EBADARG, m);
        goto out;
    }
    if (json_is_true(json_object_get(value, "dry_run"))) {
        snprintf(m, sizeof(m), "%s: dry_run is not supported (docs/aistore-compat.md)", what);
        hd_resp_err_msg(r, HD_ENOTIMPL, m);
        goto out;
    }
    if (prepend && *prepend &&
        (hd_object_name_check(prepend, strlen(prepend)) < 0 ||
         json_object_set_new(sel, "prepend", json_string(prepend)) < 0)) {
        snprintf(m, sizeof(m), "%s: prepend must be the start of a valid object name", what);
        hd_resp_err_msg(r, HD_EBADARG, m);
        goto out;
    }
    if ((rc = may_write(r, p, a, dst)) < 0) {
        hd_resp_err(r, rc);
        goto out;
    }
    if (set_too_big(r, sel, what))
        goto out;
    b = hd_smap_state_bmd(p->cs);
    rc = hd_bmd_find(b, bucket) ? 0 : HD_ENOSUCHBUCKET;
    exists = hd_bmd_find(b, dst) != NULL;
    hd_bmd_unref(b);
    if (rc < 0) {
        hd_resp_err(r, rc);
        goto out;
    }
    if (exists && hd_proxy_bucket_cloud(p, dst)) { /* the job cannot write through */
        snprintf(m, sizeof(m), "%s: copying into an S3-backed bucket is not supported yet", what);
        hd_resp_err_msg(r, HD_ENOTIMPL, m);
        goto out;
    }
    if (!exists && (rc = hd_proxy_bucket_create(p, dst, "ais")) < 0 && rc != HD_EBUCKETEXISTS) {
        hd_resp_err(r, rc);
        goto out;
    }
    if (json_object_set_new(sel, "to", json_string(dst)) < 0) {
        hd_resp_err(r, -ENOMEM);
        goto out;
    }
    start(r, p, "copy", bucket, sel);
    return;
out:
    json_decref(sel);
}

/* copy-bck: ?bck_to=PROVIDER/@#/DST/, value {"prefix","prepend","dry_run","force",
 * "latest-ver","synchronize"}. */
static void copy_bck(struct hd_req *r, struct hd_proxy *p, const char *bucket,
                     const struct hd_sigv4_auth *a, const json_t *value)
{
    const char *prefix = json_string_value(json_object_get(value, "prefix"));
    char prov[8], dst[256], msg[256] = "", m[300];
    json_t *sel;

    if (value && !json_is_null(value) && !json_is_object(value)) {
        hd_resp_err_msg(r, HD_EBADARG, "copy-bck: the value must be an object");
        return;
    }
    if (hd_ais_bck_parse(hd_req_param(r, "bck_to"), prov, sizeof(prov), dst, sizeof(dst), msg,
                         sizeof(msg)) < 0) {
        snprintf(m, sizeof(m), "copy-bck: bck_to: %s", msg);
        hd_resp_err_msg(r, HD_EBADARG, m);
        return;
    }
    sel = prefix && *prefix ? json_pack("{s:s}", "prefix", prefix) : json_object();
    if (!sel) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    copy_start(r, p, bucket, a, value, "copy-bck", prov, dst, sel);
}

/* copy-listrange (ObjectGroup.copy()): value TCMultiObj {"objnames"|"template", "tobck":
 * {"name","provider","namespace"?}, "prepend","dry_run","force","latest-ver","synchronize",
 * "coer"}. */
static void copy_listrange(struct hd_req *r, struct hd_proxy *p, const char *bucket,
                           const struct hd_sigv4_auth *a, const json_t *value)
{
    const json_t *to = json_object_get(value, "tobck"), *ns = json_object_get(to, "namespace");
    const char *name = json_string_value(json_object_get(to, "name"));
    const char *pv = json_string_value(json_object_get(to, "provider"));
    char msg[256] = "", m[300];
    json_t *sel = NULL;
    int rc;

    if ((rc = hd_ais_selection_args(value, 0, &sel, msg, sizeof(msg))) < 0) {
        snprintf(m, sizeof(m), "copy-listrange: %s", msg);
        hd_resp_err_msg(r, rc, rc == HD_EBADARG ? m : NULL);
        return;
    }
    if (!name || hd_bucket_name_check(name) < 0 || (pv && *pv && strcmp(pv, "ais") != 0) ||
        (json_is_object(ns) && (json_string_length(json_object_get(ns, "name")) ||
                                json_string_length(json_object_get(ns, "uuid"))))) {
        json_decref(sel);
        hd_resp_err_msg(r, pv && *pv && strcmp(pv, "ais") != 0 ? HD_ENOTIMPL : HD_EBADARG,
                        "copy-listrange: tobck must be {\"name\": B, \"provider\": \"ais\"} "
                        "(hoard copies into native buckets of its one namespace)");
        return;
    }
    copy_start(r, p, bucket, a, value, "copy-listrange", "ais", name, sel);
}

/* ---- archive (ObjectGroup.archive()) ----
 * value ArchiveMultiObj {"objnames"|"template", "archname", "mime"?, "tobck", "isbn", "aate",
 * "coer"}: one tar (or .tar.gz: mime or the name's extension) named archname in tobck, written by
 * the target that owns that name, from the selected objects of B in name order (a shard job of one
 * shard, its plan sent with the job: proxy/jobs/shard.c). */

#define ARCHIVE_NAMES_MAX 10000 /* the plan travels in the job's args (targets take 4 MiB) */

/* The archive's format (hd_ais_archive_format, HD_ARCH_*); -1 after answering 501 for an
 * unknown mime. */
static int archive_format(struct hd_req *r, const char *name, const char *mime)
{
    int fmt = hd_ais_archive_format(mime, name);

    if (fmt < 0)
        hd_resp_err_msg(r, HD_ENOTIMPL,
                        "archive: hoard writes .tar, .tgz (.tar.gz), .tar.lz4, .tar.zst and .zip "
                        "archives (mime, or the archive name's extension)");
    return fmt;
}

/* The shard job's selection for an AIStore one: {"list": [..]} (a template expanded) or
 * {"prefix": P}. */
static int archive_selection(const json_t *sel, json_t *args, char *msg, size_t msglen)
{
    const json_t *names = json_object_get(sel, "names");
    const char *t = json_string_value(json_object_get(sel, "template"));
    const char *prefix = json_string_value(json_object_get(sel, "prefix"));
    struct hd_brace *b = NULL;
    struct hd_buf name;
    json_t *list;
    uint64_t i, n;
    int rc = 0;

    if (prefix)
        return *prefix ? json_object_set_new(args, "prefix", json_string(prefix)) : 0;
    if (names) {
        if (json_array_size(names) > ARCHIVE_NAMES_MAX)
            goto too_many;
        return json_object_set(args, "list", (json_t *)names) < 0 ? -ENOMEM : 0;
    }
    if (!t || (rc = hd_brace_parse(t, &b, msg, msglen)) < 0)
        return rc < 0 ? rc : HD_EBADARG;
    n = hd_brace_count(b);
    if (n > ARCHIVE_NAMES_MAX) {
        hd_brace_free(b);
        goto too_many;
    }
    if (!(list = json_array()) || json_object_set_new(args, "list", list) < 0) {
        hd_brace_free(b);
        return -ENOMEM;
    }
    hd_buf_init(&name);
    for (i = 0; i < n && rc == 0; i++) {
        name.len = 0;
        if ((rc = hd_brace_at(b, i, &name)) == 0 &&
            (name.oom || json_array_append_new(list, json_string(name.data)) < 0))
            rc = -ENOMEM;
    }
    hd_buf_cleanup(&name);
    hd_brace_free(b);
    return rc;
too_many:
    snprintf(msg, msglen, "archive: at most %d objects in one archive", ARCHIVE_NAMES_MAX);
    return HD_EBADARG;
}

static void archive(struct hd_req *r, struct hd_proxy *p, const char *bucket,
                    const struct hd_sigv4_auth *a, const json_t *value)
{
    const json_t *to = json_object_get(value, "tobck"), *ns = json_object_get(to, "namespace");
    const char *name = json_string_value(json_object_get(value, "archname"));
    const char *dst = json_string_value(json_object_get(to, "name"));
    const char *pv = json_string_value(json_object_get(to, "provider"));
    char msg[256] = "", m[300], id[64];
    json_t *sel = NULL, *args = NULL;
    struct hd_bmd *b;
    int rc, fmt;

    if ((rc = hd_ais_selection_args(value, 0, &sel, msg, sizeof(msg))) < 0) {
        snprintf(m, sizeof(m), "archive: %s", msg);
        hd_resp_err_msg(r, rc, rc == HD_EBADARG ? m : NULL);
        return;
    }
    if (!dst || !*dst)
        dst = bucket; /* the SDK always names it; AIStore's default is the source */
    if (!name || hd_object_name_check(name, strlen(name)) < 0 || strpbrk(name, "{}")) {
        hd_resp_err_msg(r, HD_EBADARG,
                        "archive: archname must be a valid object name without braces");
        goto out;
    }
    if (hd_bucket_name_check(dst) < 0 || (pv && *pv && strcmp(pv, "ais") != 0) ||
        (json_is_object(ns) && (json_string_length(json_object_get(ns, "name")) ||
                                json_string_length(json_object_get(ns, "uuid"))))) {
        hd_resp_err_msg(r, pv && *pv && strcmp(pv, "ais") != 0 ? HD_ENOTIMPL : HD_EBADARG,
                        "archive: tobck must be {\"name\": B, \"provider\": \"ais\"} (hoard "
                        "writes archives into native buckets of its one namespace)");
        goto out;
    }
    if ((fmt = archive_format(r, name, json_string_value(json_object_get(value, "mime")))) < 0)
        goto out;
    if (json_is_true(json_object_get(value, "isbn")) ||
        json_is_true(json_object_get(value, "aate"))) {
        hd_resp_err_msg(r, HD_ENOTIMPL,
                        "archive: include_source_name and allow_append are not supported: "
                        "members keep their object names, and an archive is written whole");
        goto out;
    }
    if ((rc = may_write(r, p, a, dst)) < 0) {
        hd_resp_err(r, rc);
        goto out;
    }
    b = hd_smap_state_bmd(p->cs);
    rc = !hd_bmd_find(b, bucket) || !hd_bmd_find(b, dst) ? HD_ENOSUCHBUCKET : 0;
    hd_bmd_unref(b);
    if (rc == 0 && hd_proxy_bucket_cloud(p, dst)) { /* the job writes locally only */
        hd_resp_err_msg(r, HD_ENOTIMPL,
                        "archive: writing archives into an S3-backed bucket is not supported");
        goto out;
    }
    if (rc < 0) {
        hd_resp_err(r, rc);
        goto out;
    }
    /* one shard (1 TiB at most), every object its own sample, in name order */
    args = json_pack("{s:s, s:s, s:I, s:s, s:b, s:s}", "output_bucket", dst, "template", name,
                     "shard_size", (json_int_t)1 << 40, "key_rule", "name", "missing_ok",
                     json_is_true(json_object_get(value, "coer")), "format", hd_arch_fmt_name(fmt));
    if (!args) {
        hd_resp_err(r, -ENOMEM);
        goto out;
    }
    msg[0] = '\0';
    if ((rc = archive_selection(sel, args, msg, sizeof(msg))) < 0) {
        hd_resp_err_msg(r, rc, rc == HD_EBADARG && msg[0] ? msg : NULL);
        goto out;
    }
    hd_proxy_jobs_new_id("archive", id, sizeof(id));
    HD_LOG(HD_INFO, r->id, "aistore: archive %s/%s from %s (job %s) for %s", dst, name, bucket, id,
           r->principal[0] ? r->principal : "-");
    hd_proxy_archive_start(r, p, id, bucket, args);
out:
    json_decref(args);
    json_decref(sel);
}

/* 1 when the cluster map has targets and every one is up and unflagged. */
static int all_targets_serving(struct hd_proxy *p)
{
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    size_t i, n = 0;
    int ok = s != NULL;

    for (i = 0; s && i < s->n; i++) {
        if (s->nodes[i].type != HD_NODE_TARGET)
            continue;
        n++;
        if (s->nodes[i].down || s->nodes[i].flags)
            ok = 0;
    }
    hd_smap_unref(s);
    return ok && n > 0;
}

/* delete-listrange (ObjectGroup.delete()): value {"objnames"|"template"}; native buckets. */
static void delete_listrange(struct hd_req *r, struct hd_proxy *p, const char *bucket,
                             const json_t *value)
{
    struct hd_bmd *b = hd_smap_state_bmd(p->cs);
    const struct hd_bmd_bucket *e = hd_bmd_find(b, bucket);
    int rc = !e ? HD_ENOSUCHBUCKET : strcmp(e->provider, "ais") != 0 ? HD_ENOTIMPL : 0;
    char msg[256] = "", m[300];
    json_t *sel = NULL;

    hd_bmd_unref(b);
    if (rc == HD_ENOTIMPL) {
        hd_resp_err_msg(r, rc,
                        "delete-listrange: hoard deletes listed objects of native (ais) buckets "
                        "only; delete S3-backed ones one by one (docs/aistore-compat.md)");
        return;
    }
    if (rc < 0) {
        hd_resp_err(r, rc);
        return;
    }
    if ((rc = hd_ais_selection_args(value, 0, &sel, msg, sizeof(msg))) < 0) {
        snprintf(m, sizeof(m), "delete-listrange: %s", msg);
        hd_resp_err_msg(r, rc, rc == HD_EBADARG ? m : NULL);
        return;
    }
    if (set_too_big(r, sel, "delete-listrange")) {
        json_decref(sel);
        return;
    }
    if (!all_targets_serving(p)) {
        /* a target the job would skip keeps its copies, and they come back when it rejoins
         * or its objects move */
        json_decref(sel);
        hd_resp_err_msg(r, HD_EUNAVAIL,
                        "delete-listrange: every target must be up and in service (none down, "
                        "in maintenance or leaving); retry when they are");
        return;
    }
    start(r, p, "delete", bucket, sel);
}

/* AIStore's BsummResult ([0] of the answer) from hoard's summary of bucket. */
static json_t *bsumm(const char *bucket, const json_t *sum)
{
    const char *prov = json_string_value(json_object_get(sum, "provider"));
    json_int_t objs = json_integer_value(json_object_get(sum, "objects"));
    json_int_t bytes = json_integer_value(json_object_get(sum, "bytes"));
    char no[24], nb[24];

    /* AIStore encodes these uint64 counts as strings (Go's ",string" tag) */
    snprintf(no, sizeof(no), "%lld", (long long)objs);
    snprintf(nb, sizeof(nb), "%lld", (long long)bytes);
    return json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:s, s:I, s:I, s:I, s:s, s:s, s:s, s:s, "
                     "s:I, s:b}",
                     "name", bucket, "provider", prov ? prov : "ais", "namespace", "uuid", "",
                     "name", "", "obj_count_present", no, "obj_count_remote", "0", "obj_min_size",
                     (json_int_t)0, "obj_max_size", (json_int_t)0, "obj_avg_size",
                     (json_int_t)(objs ? bytes / objs : 0), "size_on_disk", nb,
                     "size_all_present_objs", nb, "size_all_remote_objs", "0", "total_disks_size",
                     "0", "used_pct", (json_int_t)0, "is_present", 1);
}

/* summary-bck: the SDK asks once without a uuid (202 with an id), then polls with it until
 * 200 [BsummResult]. hoard's summary is immediate: the second call answers it. */
static void summary_bck(struct hd_req *r, struct hd_proxy *p, const char *bucket,
                        const json_t *value)
{
    const char *uuid = json_string_value(json_object_get(value, "uuid"));
    const char *prefix = json_string_value(json_object_get(value, "prefix"));
    json_t *sum, *out;
    char id[64];
    int rc;

    if (value && !json_is_null(value) && !json_is_object(value)) {
        hd_resp_err_msg(r, HD_EBADARG, "summary-bck: the value must be an object");
        return;
    }
    if (prefix && *prefix) {
        hd_resp_err_msg(r, HD_ENOTIMPL,
                        "summary-bck: hoard summarises whole buckets only (no prefix)");
        return;
    }
    if ((rc = hd_proxy_bucket_summary_json(p, bucket, &sum)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    if (!uuid || !*uuid) {
        json_decref(sum);
        hd_proxy_jobs_new_id("summary-bck", id, sizeof(id));
        answer_id(r, 202, id);
        return;
    }
    out = json_array();
    if (out)
        json_array_append_new(out, bsumm(bucket, sum));
    json_decref(sum);
    hd_resp_json(r, 200, out);
}

/* AIStore's BucketProps (the ais-bucket-props header) of a BMD entry: what hoard has of them
 * (hoard's own props stay at GET ?props). */
static json_t *bck_props(const struct hd_bmd_bucket *e)
{
    return json_pack("{s:s, s:I, s:{s:s}, s:{s:b}, s:{s:I, s:b}}", "provider", e->provider,
                     "created", (json_int_t)e->created * 1000000000, "checksum", "type", "md5",
                     "versioning", "enabled", 0, "mirror", "copies", (json_int_t)1, "enabled", 0);
}

/* Sets header name to j as compact JSON. Takes j. */
static int json_header(struct hd_req *r, const char *name, json_t *j)
{
    char *v = j ? json_dumps(j, JSON_COMPACT) : NULL;
    int rc = v ? hd_resp_header(r, name, v) : -ENOMEM;

    free(v);
    json_decref(j);
    return rc;
}

void hd_proxy_ais_bucket_head(struct hd_req *r, struct hd_proxy *p, const char *bucket)
{
    const char *pres = hd_req_param(r, "presence"), *uuid = hd_req_param(r, "uuid");
    struct hd_bmd *b = hd_smap_state_bmd(p->cs);
    const struct hd_bmd_bucket *e = hd_bmd_find(b, bucket);
    json_t *sum = NULL;
    uint64_t flt = 0;
    char id[64];
    int rc;

    if (!e) {
        hd_bmd_unref(b);
        hd_resp_err(r, HD_ENOSUCHBUCKET);
        return;
    }
    rc = json_header(r, "ais-bucket-props", bck_props(e));
    hd_bmd_unref(b);
    if (rc < 0) {
        hd_resp_err(r, rc);
        return;
    }
    if (pres && (hd_parse_u64(pres, &flt) < 0 || flt > 5)) {
        hd_resp_err_msg(r, HD_EBADARG, "presence must be 0 to 5 (AIStore's apc.Flt*)");
        return;
    }
    /* no presence: Bucket.head(); 1 and 3 (FltExistsNoProps, FltPresentNoProps): no summary */
    if (!pres || flt == 1 || flt == 3) {
        hd_resp_empty(r, 200);
        return;
    }
    /* Bucket.info(): 202 with an id, then (uuid=ID) 200 with the summary; hoard's summary is
     * immediate, so both carry it (older SDKs read it from the first answer) */
    if ((rc = hd_proxy_bucket_summary_json(p, bucket, &sum)) < 0 ||
        (rc = json_header(r, "ais-bucket-summ", bsumm(bucket, sum))) < 0) {
        json_decref(sum);
        hd_resp_err(r, rc);
        return;
    }
    json_decref(sum);
    if (uuid && *uuid) {
        hd_resp_empty(r, 200);
        return;
    }
    hd_proxy_jobs_new_id("summary-bck", id, sizeof(id));
    if ((rc = hd_resp_header(r, "ais-xaction-id", id)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    hd_resp_empty(r, 202);
}

void hd_proxy_ais_bucket_job(struct hd_req *r, struct hd_proxy *p, const char *bucket,
                             const struct hd_sigv4_auth *a, const json_t *msg)
{
    const char *act = json_string_value(json_object_get(msg, "action"));
    const json_t *value = json_object_get(msg, "value");
    const char *m = r->method;

    r->api = HD_API_NATIVE;
    r->op = HD_OP_BUCKET;
    if (!act) {
        hd_resp_err_msg(r, HD_EBADARG, "An action message has a string \"action\".");
    } else if ((strcmp(m, "POST") == 0 && strcmp(act, "prefetch-listrange") == 0) ||
               (strcmp(m, "DELETE") == 0 &&
                (strcmp(act, "evict-listrange") == 0 || strcmp(act, "evict-remote-bck") == 0))) {
        cache_job(r, p, bucket, act, value);
    } else if (strcmp(m, "DELETE") == 0 && strcmp(act, "delete-listrange") == 0) {
        delete_listrange(r, p, bucket, value);
    } else if (strcmp(m, "POST") == 0 && strcmp(act, "copy-bck") == 0) {
        copy_bck(r, p, bucket, a, value);
    } else if (strcmp(m, "POST") == 0 && strcmp(act, "copy-listrange") == 0) {
        copy_listrange(r, p, bucket, a, value);
    } else if (strcmp(m, "PUT") == 0 && strcmp(act, "archive") == 0) {
        archive(r, p, bucket, a, value);
    } else if (strcmp(m, "GET") == 0 && strcmp(act, "summary-bck") == 0) {
        summary_bck(r, p, bucket, value);
    } else if (strcmp(act, "move-bck") == 0) {
        hd_resp_err_msg(r, HD_ENOTIMPL,
                        "move-bck: hoard does not rename buckets; copy-bck to the new name, "
                        "then delete the old bucket (docs/aistore-compat.md)");
    } else {
        hd_resp_err_msg(r, HD_ENOTIMPL,
                        "This action is not supported on this method of /v1/buckets/B "
                        "(docs/aistore-compat.md).");
    }
}

/* ---- GET /v1/cluster?what=status|qryxstats {"ID","Kind","DaemonID","Bck","Buckets"} ---- */

/* RFC 3339 UTC of a unix millisecond time, Go's zero time for 0 (AIStore's unfinished). */
static void rfc3339(json_int_t ms, char out[64])
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    if (ms <= 0 || !gmtime_r(&t, &tm)) {
        snprintf(out, 64, "0001-01-01T00:00:00Z");
        return;
    }
    snprintf(out, 64, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

/* AIStore's xact snapshot (core.Snap as the SDK's JobSnap reads it) of one target's job. */
static json_t *snap(const json_t *job, const char *provider)
{
    const char *st = json_string_value(json_object_get(job, "state"));
    const char *bucket = json_string_value(json_object_get(job, "bucket"));
    const json_t *args = json_object_get(job, "args");
    json_int_t objs = json_integer_value(json_object_get(job, "objects"));
    json_int_t bytes = json_integer_value(json_object_get(job, "bytes"));
    json_int_t fin = json_integer_value(json_object_get(job, "finished_ms"));
    char t0[64], t1[64];
    int running = st && strcmp(st, "running") == 0;
    int aborted = st && (strcmp(st, "aborted") == 0 || strcmp(st, "failed") == 0);
    json_t *s, *err = json_array_get(json_object_get(job, "errors"), 0);

    rfc3339(json_integer_value(json_object_get(job, "started_ms")), t0);
    rfc3339(running ? 0 : fin, t1);
    s = json_pack("{s:O, s:s, s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}}, s:{s:I, s:I, s:I, s:I, s:I, "
                  "s:I}, s:b, s:b, s:s}",
                  "id", json_object_get(job, "id"), "kind",
                  ais_kind(json_string_value(json_object_get(job, "kind")), args), "start-time", t0,
                  "end-time", t1, "bck", "name", bucket ? bucket : "", "provider", provider,
                  "namespace", "uuid", "", "name", "", "stats", "loc-objs", objs, "loc-bytes",
                  bytes, "out-objs", (json_int_t)0, "out-bytes", (json_int_t)0, "in-objs",
                  (json_int_t)0, "in-bytes", (json_int_t)0, "aborted", aborted, "is_idle", !running,
                  "abort-err", aborted && json_is_string(err) ? json_string_value(err) : "");
    return s;
}

struct xact_ctx {
    struct hd_proxy *p;
    char what[16];
};

/* The provider of the bucket of merged job view v ("ais" when it has none). */
static void job_provider(struct hd_proxy *p, const json_t *v, char *prov, size_t len)
{
    struct hd_bmd *b = hd_smap_state_bmd(p->cs);
    const struct hd_bmd_bucket *e =
        json_is_string(json_object_get(v, "bucket"))
            ? hd_bmd_find(b, json_string_value(json_object_get(v, "bucket")))
            : NULL;

    snprintf(prov, len, "%s", e ? e->provider : "ais");
    hd_bmd_unref(b);
}

/* AIStore's nl.Status of merged job view v: what Job.wait() polls (end_time 0 while running). */
static json_t *status_of(const json_t *v, const char *prov)
{
    const char *st = json_string_value(json_object_get(v, "state"));
    const char *bucket = json_string_value(json_object_get(v, "bucket"));
    int running = st && strcmp(st, "running") == 0;
    int failed = st && strcmp(st, "failed") == 0;
    json_int_t fin = json_integer_value(json_object_get(v, "finished_ms"));
    json_t *err = json_array_get(json_object_get(v, "errors"), 0);

    return json_pack(
        "{s:O, s:s, s:s, s:I, s:b, s:{s:s, s:s, s:{s:s, s:s}}}", "uuid", json_object_get(v, "id"),
        "kind", ais_kind(json_string_value(json_object_get(v, "kind")), json_object_get(v, "args")),
        "err", failed && json_is_string(err) ? json_string_value(err) : "", "end_time",
        running ? (json_int_t)0 : (fin > 0 ? fin : 1) * 1000000, "aborted",
        st && strcmp(st, "aborted") == 0, "bck", "name", bucket ? bucket : "", "provider", prov,
        "namespace", "uuid", "", "name", "");
}

/* what=status_all (Cluster.list_jobs_status(): [JobStatus]) and what=running_all
 * (list_running_jobs(): ["KIND[ID]"]), body JobQuery {"kind","node","show_active"}: every
 * job, or the running ones, of one AIStore kind or all. "node" is accepted and ignored:
 * hoard's jobs run on every target. */
static void xact_all(struct hd_req *r, struct hd_proxy *p, const char *what, const json_t *in)
{
    const char *kind = json_string_value(json_object_get(in, "kind"));
    int running_all = strcmp(what, "running_all") == 0;
    int active = running_all || json_is_true(json_object_get(in, "show_active"));
    json_t *jobs = NULL, *out, *v;
    char msg[400], prov[16];
    size_t i;
    int rc;

    if ((in && !json_is_object(in)) ||
        (json_object_get(in, "kind") && !json_is_string(json_object_get(in, "kind")))) {
        hd_resp_err_msg(
            r, HD_EBADARG,
            "what=status_all and running_all take {\"kind\", \"node\", \"show_active\"}");
        return;
    }
    if ((rc = hd_proxy_jobs_list(p, &jobs, msg, sizeof(msg))) < 0) {
        hd_resp_err_msg(r, rc, rc == HD_EUNAVAIL && msg[0] ? msg : NULL);
        return;
    }
    out = json_array();
    json_array_foreach(jobs, i, v)
    {
        const char *st = json_string_value(json_object_get(v, "state"));
        const char *k =
            ais_kind(json_string_value(json_object_get(v, "kind")), json_object_get(v, "args"));
        char *one;
        if ((kind && *kind && strcmp(kind, k) != 0) ||
            (active && !(st && strcmp(st, "running") == 0)))
            continue;
        if (!running_all) {
            job_provider(p, v, prov, sizeof(prov));
            json_array_append_new(out, status_of(v, prov));
        } else if (asprintf(&one, "%s[%s]", k, json_string_value(json_object_get(v, "id"))) >= 0) {
            json_array_append_new(out, json_string(one));
            free(one);
        }
    }
    json_decref(jobs);
    hd_resp_json(r, 200, out);
}

static void xact_end(struct hd_req *r, void *ctx, json_t *in)
{
    struct xact_ctx *c = ctx;
    const char *id = json_string_value(json_object_get(in, "ID"));
    json_t *v = NULL, *out;
    char msg[400], prov[16];
    int rc;

    if (strcmp(c->what, "status_all") == 0 || strcmp(c->what, "running_all") == 0) {
        xact_all(r, c->p, c->what, in);
        return;
    }
    if (!id)
        id = json_string_value(json_object_get(in, "id"));
    if (!json_is_object(in) || !id || !*id || strlen(id) > 63 || strchr(id, '/')) {
        hd_resp_err_msg(r, HD_EBADARG,
                        "what=status and what=qryxstats take {\"ID\": JOB_ID} (one job; "
                        "status_all and running_all list them)");
        return;
    }
    if ((rc = hd_proxy_jobs_view(c->p, id, &v, msg, sizeof(msg))) < 0) {
        hd_resp_err_msg(r, rc, rc == HD_EUNAVAIL && msg[0] ? msg : NULL);
        return;
    }
    job_provider(c->p, v, prov, sizeof(prov));
    if (strcmp(c->what, "status") == 0) {
        out = status_of(v, prov);
    } else { /* qryxstats: {TARGET_ID: [snapshot]} (AggregatedJobSnap) */
        const char *node;
        json_t *job;
        out = json_object();
        json_object_foreach(json_object_get(v, "targets"), node, job)
        {
            json_t *one = json_array();
            if (one)
                json_array_append_new(one, snap(job, prov));
            json_object_set_new(out, node, one);
        }
    }
    json_decref(v);
    hd_resp_json(r, 200, out);
}

void hd_proxy_ais_xact(struct hd_req *r, struct hd_proxy *p, const char *what)
{
    struct xact_ctx *c = calloc(1, sizeof(*c));

    if (!c) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    c->p = p;
    snprintf(c->what, sizeof(c->what), "%s", what);
    hd_req_read_json(r, XACT_BODY_MAX, xact_end, c, free);
}
