/* cmd_cache: the caching tier in the CLI: `hoard bucket create s3://B`, `hoard bucket props`,
 * `hoard prefetch`, `hoard evict` (followed with `hoard job ...`, cmd_job.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/brace.h"
#include "tools/hoard/cli.h"
#include "tools/hoard/cli_fmt.h"
#include "tools/hoard/cli_http.h"
#include "tools/hoard/cli_obj.h"

static int print_json(json_t *j)
{
    if (json_dumpf(j, stdout, JSON_INDENT(2) | JSON_SORT_KEYS) != 0)
        return hd_cli_fail(HD_CLI_EXIT_API, "writing output failed");
    fputc('\n', stdout);
    return HD_CLI_EXIT_OK;
}

/* One native call with an optional JSON body; *out gets the parsed JSON answer (NULL when
 * none). Returns an exit code, having reported any failure as "<what>: ...". */
static int call(struct hd_cli *cli, const char *what, const char *method, const char *path,
                json_t *body, json_t **out)
{
    struct hd_cli_req rq = {.method = method, .path = path};
    struct hd_cli_resp rs;
    char *text = NULL;
    int rc;

    if (out)
        *out = NULL;
    if (body) {
        text = json_dumps(body, JSON_COMPACT);
        if (!text)
            return hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
        rq.body = text;
        rq.content_type = "application/json";
    }
    hd_cli_resp_init(&rs);
    rc = hd_cli_http_do(cli, &rq, &rs);
    if (rc != 0 || rs.status >= 300) {
        rc = hd_cli_report(cli, what, rc, &rs);
    } else {
        rc = HD_CLI_EXIT_OK;
        if (out && rs.body.len)
            *out = json_loadb(rs.body.data, rs.body.len, 0, NULL);
    }
    hd_cli_resp_cleanup(&rs);
    free(text);
    return rc;
}

static int bucket_path(struct hd_buf *b, const char *bucket, const char *query)
{
    hd_buf_puts(b, "/v1/buckets/");
    hd_cli_path_encode(b, bucket, 0);
    if (query)
        hd_buf_puts(b, query);
    return b->oom ? -ENOMEM : 0;
}

/* ---- bucket create s3://B ---- */

int hd_cli_cloud_create(struct hd_cli *cli, const char *name)
{
    const char *ep = cli->opt[HD_CLI_OPT_UPSTREAM], *style = cli->opt[HD_CLI_OPT_STYLE];
    json_t *props = json_object(), *up = json_object(), *j;
    struct hd_buf path, what;
    int rc;

    hd_buf_init(&path);
    hd_buf_init(&what);
    hd_buf_printf(&what, "bucket create s3://%s", name);
    if (!*name || strchr(name, '/')) {
        rc = hd_cli_usage_error(cli, "expected s3://BUCKET, got 's3://%s'", name);
        goto out;
    }
    if (style && strcmp(style, "path") != 0 && strcmp(style, "virtual") != 0) {
        rc = hd_cli_usage_error(cli, "--style is path or virtual");
        goto out;
    }
    if (ep)
        json_object_set_new(up, "endpoint", json_string(ep));
    if (cli->opt[HD_CLI_OPT_PROFILE])
        json_object_set_new(up, "profile", json_string(cli->opt[HD_CLI_OPT_PROFILE]));
    if (cli->opt[HD_CLI_OPT_REGION])
        json_object_set_new(up, "region", json_string(cli->opt[HD_CLI_OPT_REGION]));
    if (style)
        json_object_set_new(up, "style", json_string(style));
    if (cli->opt[HD_CLI_OPT_REMOTE])
        json_object_set_new(up, "bucket", json_string(cli->opt[HD_CLI_OPT_REMOTE]));
    if (json_object_size(up) && !ep) {
        rc = hd_cli_usage_error(cli, "--upstream URL is needed with --profile, --region, "
                                     "--style or --remote-bucket");
        goto out;
    }
    if (ep)
        json_object_set(props, "upstream", up);
    if (bucket_path(&path, name, "?provider=aws") < 0 || what.oom) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
        goto out;
    }
    rc = call(cli, what.data, "POST", path.data, props, NULL);
    if (rc != HD_CLI_EXIT_OK)
        goto out;
    if (cli->json) {
        j = json_pack("{s:s, s:s, s:b}", "bucket", name, "provider", "aws", "created", 1);
        rc = print_json(j);
        json_decref(j);
    } else {
        printf("created s3://%s%s%s\n", name, ep ? " -> " : " (default upstream)", ep ? ep : "");
    }
out:
    json_decref(props);
    json_decref(up);
    hd_buf_cleanup(&path);
    hd_buf_cleanup(&what);
    return rc;
}

/* ---- bucket props ---- */

static void print_props(const char *prefix, json_t *o)
{
    const char *k;
    json_t *v;

    json_object_foreach(o, k, v)
    {
        char key[160];
        snprintf(key, sizeof(key), "%s%s", prefix, k);
        if (json_is_object(v)) {
            char sub[170];
            snprintf(sub, sizeof(sub), "%s.", key);
            print_props(sub, v);
        } else if (json_is_string(v)) {
            printf("%-22s %s\n", key, json_string_value(v));
        } else {
            char *t = json_dumps(v, JSON_ENCODE_ANY);
            printf("%-22s %s\n", key, t ? t : "?");
            free(t);
        }
    }
}

/* "true"/"false"/"null" and integers as JSON, anything else as a string. */
static json_t *value_of(const char *s)
{
    uint64_t n;

    if (strcmp(s, "true") == 0)
        return json_true();
    if (strcmp(s, "false") == 0)
        return json_false();
    if (strcmp(s, "null") == 0)
        return json_null();
    if (hd_cli_parse_count(s, 0, INT64_MAX, &n) == 0)
        return json_integer((json_int_t)n);
    return json_string(s);
}

int hd_cli_bucket_props(struct hd_cli *cli, int argc, char **argv)
{
    const char *bucket = argv[0];
    json_t *cur = NULL, *patch = NULL, *props, *up = NULL, *j = NULL;
    struct hd_buf path, what;
    int rc, i;

    hd_buf_init(&path);
    hd_buf_init(&what);
    hd_buf_printf(&what, "bucket props %s", bucket);
    if (bucket_path(&path, bucket, "?props") < 0 || what.oom) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
        goto out;
    }
    if ((rc = call(cli, what.data, "GET", path.data, NULL, &cur)) != HD_CLI_EXIT_OK)
        goto out;
    props = json_object_get(cur, "props");
    if (argc > 1) {
        patch = json_object();
        for (i = 1; i < argc; i++) {
            const char *eq = strchr(argv[i], '=');
            char key[128];
            json_t *v;
            if (!eq || eq == argv[i] || (size_t)(eq - argv[i]) >= sizeof(key)) {
                rc = hd_cli_usage_error(cli, "expected KEY=VALUE, got '%s'", argv[i]);
                goto out;
            }
            snprintf(key, sizeof(key), "%.*s", (int)(eq - argv[i]), argv[i]);
            if (!(v = value_of(eq + 1))) {
                rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
                goto out;
            }
            if (strncmp(key, "upstream.", 9) == 0) { /* the whole upstream object is replaced */
                if (!up) {
                    up = json_deep_copy(json_object_get(props, "upstream"));
                    if (!json_is_object(up)) {
                        json_decref(up);
                        up = json_object();
                    }
                }
                json_object_set_new(up, key + 9, v);
            } else {
                json_object_set_new(patch, key, v);
            }
        }
        if (up)
            json_object_set(patch, "upstream", up);
        hd_buf_reset(&path);
        bucket_path(&path, bucket, NULL);
        if ((rc = call(cli, what.data, "PATCH", path.data, patch, NULL)) != HD_CLI_EXIT_OK)
            goto out;
        json_decref(cur);
        cur = NULL;
        hd_buf_reset(&path);
        bucket_path(&path, bucket, "?props");
        if ((rc = call(cli, what.data, "GET", path.data, NULL, &cur)) != HD_CLI_EXIT_OK)
            goto out;
    }
    if (!json_is_object(cur)) {
        rc =
            hd_cli_fail(HD_CLI_EXIT_API, "%s: unexpected answer from %s", what.data, cli->endpoint);
        goto out;
    }
    if (cli->json) {
        rc = print_json(cur);
    } else {
        j = json_object_get(cur, "provider");
        printf("%-22s %s\n", "name", bucket);
        printf("%-22s %s\n", "provider", json_string_value(j) ? json_string_value(j) : "-");
        print_props("", json_object_get(cur, "props"));
        rc = HD_CLI_EXIT_OK;
    }
out:
    json_decref(cur);
    json_decref(patch);
    json_decref(up);
    hd_buf_cleanup(&path);
    hd_buf_cleanup(&what);
    return rc;
}

/* ---- prefetch, evict ---- */

/* The totals of a prefetch or evict known before it starts, so that its first progress line
 * is right (the merged job view only learns them as each target reports its share): the
 * number of names of --list or --template, the objects and bytes a listing finds under
 * --prefix (evict: of what is cached; without a selection, all of it). 0, 0 when unknown;
 * never an error (the job reports its own numbers at the end). */
static void cache_job_totals(struct hd_cli *cli, const char *kind, const char *bucket,
                             uint64_t *objs, uint64_t *bytes)
{
    const char *list = cli->opt[HD_CLI_OPT_LIST], *tmpl = cli->opt[HD_CLI_OPT_TEMPLATE];
    const char *prefix = cli->opt[HD_CLI_OPT_PREFIX];
    int evict = strcmp(kind, "evict") == 0;
    json_t *ents, *e;
    size_t i;

    *objs = *bytes = 0;
    if (list) {
        for (*objs = 1; *list; list++)
            *objs += *list == ',';
        return;
    }
    if (tmpl) {
        struct hd_brace *br = NULL;
        char err[128];
        if (hd_brace_parse(tmpl, &br, err, sizeof(err)) == 0)
            *objs = hd_brace_count(br);
        hd_brace_free(br);
        if (!evict)
            return;
        *objs = 0; /* evict: only the cached ones count; a listing tells */
    }
    if (!(ents = json_array()))
        return;
    hd_cli_mute_errors = 1; /* the job itself reports what is wrong */
    if (hd_cli_list_all(cli, bucket, prefix ? prefix : "", evict, "listing for the totals", ents) ==
        0) {
        json_array_foreach(ents, i, e)
        {
            *objs += 1;
            *bytes += (uint64_t)json_integer_value(json_object_get(e, "size"));
        }
    }
    hd_cli_mute_errors = 0;
    if (tmpl) /* evict --template: names and cached objects differ; leave it to the job */
        *objs = *bytes = 0;
    json_decref(ents);
}

/* prefetch and evict: {"kind","bucket","args"} from the options. */
static int start_cache_job(struct hd_cli *cli, const char *kind, const char *bucket)
{
    const char *list = cli->opt[HD_CLI_OPT_LIST], *tmpl = cli->opt[HD_CLI_OPT_TEMPLATE];
    const char *prefix = cli->opt[HD_CLI_OPT_PREFIX];
    json_t *args = json_object(), *body = NULL, *out = NULL;
    struct hd_buf what;
    uint64_t tobjs = 0, tbytes = 0;
    const char *id;
    int rc;

    hd_buf_init(&what);
    hd_buf_printf(&what, "%s %s", kind, bucket);
    if ((list != NULL) + (tmpl != NULL) + (prefix != NULL) > 1) {
        rc = hd_cli_usage_error(cli, "give one of --list, --template, --prefix");
        goto out;
    }
    if (strcmp(kind, "prefetch") == 0 && !list && !tmpl && !prefix) {
        rc = hd_cli_usage_error(cli, "prefetch needs --list, --template or --prefix");
        goto out;
    }
    if (list) {
        json_t *names = json_array();
        const char *p = list;
        while (*p) {
            size_t n = strcspn(p, ",");
            if (n)
                json_array_append_new(names, json_stringn(p, n));
            p += n;
            if (*p == ',')
                p++;
        }
        json_object_set_new(args, "names", names);
    } else if (tmpl) {
        json_object_set_new(args, "template", json_string(tmpl));
    } else if (prefix) {
        json_object_set_new(args, "prefix", json_string(prefix));
    }
    if (cli->opt[HD_CLI_OPT_REVALIDATE])
        json_object_set_new(args, "revalidate", json_true());
    body = json_pack("{s:s, s:s, s:O}", "kind", kind, "bucket", bucket, "args", args);
    if (!body || what.oom) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
        goto out;
    }
    if (cli->opt[HD_CLI_OPT_WAIT])
        cache_job_totals(cli, kind, bucket, &tobjs, &tbytes);
    if ((rc = call(cli, what.data, "POST", "/v1/jobs", body, &out)) != HD_CLI_EXIT_OK)
        goto out;
    id = json_string_value(json_object_get(out, "id"));
    if (!id) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "%s: the answer names no job", what.data);
        goto out;
    }
    if (cli->opt[HD_CLI_OPT_WAIT]) { /* hoard job wait ID (cmd_job.c): progress, summary */
        if (!cli->json)
            fprintf(stderr, "%s job %s started\n", kind, id);
        rc = hd_cli_job_wait_totals(cli, id, tobjs, tbytes);
    } else if (cli->json) {
        rc = print_json(out);
    } else {
        printf("%s job %s started (hoard job wait %s)\n", kind, id, id);
    }
out:
    json_decref(args);
    json_decref(body);
    json_decref(out);
    hd_buf_cleanup(&what);
    return rc;
}

int hd_cli_prefetch(struct hd_cli *cli, int argc, char **argv)
{
    return start_cache_job(cli, "prefetch", argv[0]);
}

int hd_cli_evict(struct hd_cli *cli, int argc, char **argv)
{
    return start_cache_job(cli, "evict", argv[0]);
}

int hd_cli_bucket_flush(struct hd_cli *cli, int argc, char **argv)
{
    return start_cache_job(cli, "flush", argv[0]);
}

/* props, then the write-back queue summed over the targets (GET /v1/buckets/B?writeback). */
int hd_cli_bucket_show(struct hd_cli *cli, int argc, char **argv)
{
    const char *bucket = argv[0];
    json_t *wb = NULL, *props;
    struct hd_buf path, what;
    int rc;

    hd_buf_init(&path);
    hd_buf_init(&what);
    hd_buf_printf(&what, "bucket show %s", bucket);
    if (cli->json) { /* one document: {"props": ..., "writeback": ...} */
        json_t *cur = NULL, *doc;
        if (bucket_path(&path, bucket, "?props") < 0 || what.oom) {
            rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
            goto out;
        }
        if ((rc = call(cli, what.data, "GET", path.data, NULL, &cur)) != HD_CLI_EXIT_OK)
            goto out;
        hd_buf_reset(&path);
        bucket_path(&path, bucket, "?writeback");
        if ((rc = call(cli, what.data, "GET", path.data, NULL, &wb)) != HD_CLI_EXIT_OK) {
            json_decref(cur);
            goto out;
        }
        doc = json_pack("{s:o, s:O}", "bucket", cur, "writeback", wb);
        rc = doc ? print_json(doc) : hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
        json_decref(doc);
        goto out;
    }
    {
        char *pargv[1] = {(char *)bucket};
        if ((rc = hd_cli_bucket_props(cli, 1, pargv)) != HD_CLI_EXIT_OK)
            goto out;
    }
    if (bucket_path(&path, bucket, "?writeback") < 0 || what.oom) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
        goto out;
    }
    if ((rc = call(cli, what.data, "GET", path.data, NULL, &wb)) != HD_CLI_EXIT_OK)
        goto out;
    props = wb;
    printf("%-22s %lld\n", "dirty_objects",
           (long long)json_integer_value(json_object_get(props, "dirty_objects")));
    printf("%-22s %lld\n", "dirty_bytes",
           (long long)json_integer_value(json_object_get(props, "dirty_bytes")));
    printf("%-22s %lld\n", "upload_queue",
           (long long)json_integer_value(json_object_get(props, "queue_depth")));
    printf("%-22s %lld\n", "upload_failed",
           (long long)json_integer_value(json_object_get(props, "failed")));
    printf("%-22s %lld\n", "uploading",
           (long long)json_integer_value(json_object_get(props, "uploading")));
    printf("%-22s %.1f s\n", "upload_lag",
           json_number_value(json_object_get(props, "oldest_dirty_seconds")));
    rc = HD_CLI_EXIT_OK;
out:
    json_decref(wb);
    hd_buf_cleanup(&path);
    hd_buf_cleanup(&what);
    return rc;
}
