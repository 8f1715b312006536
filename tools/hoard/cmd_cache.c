/* cmd_cache: the caching tier in the CLI: `hoard bucket create s3://B`, `hoard bucket props`,
 * `hoard prefetch`, `hoard evict`, and `hoard job ls|show|stop|wait` (with a progress line). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "tools/hoard/cli.h"
#include "tools/hoard/cli_fmt.h"
#include "tools/hoard/cli_http.h"

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
        rq.body_len = strlen(text);
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
        printf("created s3://%s%s%s\n", name, ep ? " -> " : " (default upstream)",
               ep ? ep : "");
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
        rc = hd_cli_fail(HD_CLI_EXIT_API, "%s: unexpected answer from %s", what.data,
                         cli->endpoint);
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

/* ---- jobs ---- */

static int show_progress(struct hd_cli *cli, const json_t *j, double secs, int *drawn)
{
    uint64_t objs = (uint64_t)json_integer_value(json_object_get(j, "objects"));
    uint64_t total = (uint64_t)json_integer_value(json_object_get(j, "total_objects"));
    uint64_t bytes = (uint64_t)json_integer_value(json_object_get(j, "bytes"));
    uint64_t errs = (uint64_t)json_integer_value(json_object_get(j, "error_count"));
    char size[32], rate[32], line[200];
    int n;

    if (!cli->progress)
        return 0;
    hd_cli_fmt_size(bytes, size, sizeof(size));
    hd_cli_fmt_size(secs > 0 ? (uint64_t)((double)bytes / secs) : 0, rate, sizeof(rate));
    if (total)
        n = snprintf(line, sizeof(line), "  %" PRIu64 " / %" PRIu64 " objects  %3d%%  %s  %s/s",
                     objs, total, (int)(objs * 100 / total), size, rate);
    else
        n = snprintf(line, sizeof(line), "  %" PRIu64 " objects  %s  %s/s", objs, size, rate);
    if (errs && n > 0 && (size_t)n < sizeof(line))
        snprintf(line + n, sizeof(line) - (size_t)n, "  %" PRIu64 " errors", errs);
    fprintf(stderr, "\r%-70s", line);
    fflush(stderr);
    *drawn = 1;
    return 0;
}

static void job_summary(const json_t *j)
{
    const char *id = json_string_value(json_object_get(j, "id"));
    const char *kind = json_string_value(json_object_get(j, "kind"));
    const char *st = json_string_value(json_object_get(j, "state"));
    const char *res = json_string_value(json_object_get(j, "result"));
    uint64_t bytes = (uint64_t)json_integer_value(json_object_get(j, "bytes"));
    char size[32];
    json_t *e;
    size_t i;

    hd_cli_fmt_size(bytes, size, sizeof(size));
    printf("%s %s %s: %" PRIu64 " objects, %s, %" PRIu64 " errors%s%s\n", kind ? kind : "job",
           id ? id : "?", st ? st : "?",
           (uint64_t)json_integer_value(json_object_get(j, "objects")), size,
           (uint64_t)json_integer_value(json_object_get(j, "error_count")), res ? " - " : "",
           res ? res : "");
    json_array_foreach(json_object_get(j, "errors"), i, e)
    {
        if (i >= 10) {
            printf("  ...\n");
            break;
        }
        printf("  error: %s\n", json_string_value(e) ? json_string_value(e) : "?");
    }
}

/* Polls job `id` until it is no longer running (or timeout_s passes, 0 = no limit). */
static int wait_job(struct hd_cli *cli, const char *id, uint64_t timeout_s)
{
    struct timespec t0, now, half = {0, 500 * 1000000L};
    struct hd_buf path, what;
    json_t *j = NULL;
    const char *st;
    int rc, drawn = 0;

    hd_buf_init(&path);
    hd_buf_init(&what);
    hd_buf_puts(&path, "/v1/jobs/");
    hd_cli_path_encode(&path, id, 0);
    hd_buf_printf(&what, "job wait %s", id);
    if (path.oom || what.oom)
        return hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        double secs;
        json_decref(j);
        j = NULL;
        if ((rc = call(cli, what.data, "GET", path.data, NULL, &j)) != HD_CLI_EXIT_OK)
            break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        secs = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
        st = json_string_value(json_object_get(j, "state"));
        show_progress(cli, j, secs, &drawn);
        if (!st || strcmp(st, "running") != 0)
            break;
        if (hd_cli_interrupted) {
            rc = HD_CLI_EXIT_INTR;
            break;
        }
        if (timeout_s && secs >= (double)timeout_s) {
            if (drawn)
                fputc('\n', stderr);
            drawn = 0;
            rc = hd_cli_fail(HD_CLI_EXIT_API, "%s: still running after %" PRIu64 " s", what.data,
                             timeout_s);
            break;
        }
        nanosleep(&half, NULL);
    }
    if (drawn)
        fputc('\n', stderr);
    if (rc == HD_CLI_EXIT_OK) {
        st = json_string_value(json_object_get(j, "state"));
        if (cli->json)
            rc = print_json(j);
        else
            job_summary(j);
        if (!st || strcmp(st, "done") != 0 ||
            json_integer_value(json_object_get(j, "error_count")) > 0)
            rc = HD_CLI_EXIT_API;
    }
    json_decref(j);
    hd_buf_cleanup(&path);
    hd_buf_cleanup(&what);
    return rc;
}

/* prefetch and evict: {"kind","bucket","args"} from the options. */
static int start_cache_job(struct hd_cli *cli, const char *kind, const char *bucket)
{
    const char *list = cli->opt[HD_CLI_OPT_LIST], *tmpl = cli->opt[HD_CLI_OPT_TEMPLATE];
    const char *prefix = cli->opt[HD_CLI_OPT_PREFIX];
    json_t *args = json_object(), *body = NULL, *out = NULL;
    uint64_t timeout = 0;
    struct hd_buf what;
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
    if (cli->opt[HD_CLI_OPT_TIMEOUT] &&
        hd_cli_parse_count(cli->opt[HD_CLI_OPT_TIMEOUT], 1, 86400 * 365, &timeout) < 0) {
        rc = hd_cli_usage_error(cli, "--timeout takes seconds");
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
    if ((rc = call(cli, what.data, "POST", "/v1/jobs", body, &out)) != HD_CLI_EXIT_OK)
        goto out;
    id = json_string_value(json_object_get(out, "id"));
    if (!id) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "%s: the answer names no job", what.data);
        goto out;
    }
    if (cli->opt[HD_CLI_OPT_WAIT]) {
        if (!cli->json)
            fprintf(stderr, "%s job %s started\n", kind, id);
        rc = wait_job(cli, id, timeout);
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

int hd_cli_job_ls(struct hd_cli *cli, int argc, char **argv)
{
    static const char *const headers[] = {"ID", "KIND", "BUCKET", "STATE", "OBJECTS", "BYTES",
                                          "ERRORS"};
    struct hd_cli_table t;
    json_t *j = NULL, *e;
    size_t i;
    int rc;

    hd_cli_table_init(&t, 7, headers, (1u << 4) | (1u << 5) | (1u << 6));
    if ((rc = call(cli, "job ls", "GET", "/v1/jobs", NULL, &j)) != HD_CLI_EXIT_OK)
        goto out;
    if (cli->json) {
        rc = print_json(j);
        goto out;
    }
    json_array_foreach(json_object_get(j, "jobs"), i, e)
    {
        char objs[48], size[32], errs[24];
        const char *row[7];
        uint64_t total = (uint64_t)json_integer_value(json_object_get(e, "total_objects"));
        if (total)
            snprintf(objs, sizeof(objs), "%" PRIu64 "/%" PRIu64,
                     (uint64_t)json_integer_value(json_object_get(e, "objects")), total);
        else
            snprintf(objs, sizeof(objs), "%" PRIu64,
                     (uint64_t)json_integer_value(json_object_get(e, "objects")));
        hd_cli_fmt_size((uint64_t)json_integer_value(json_object_get(e, "bytes")), size,
                        sizeof(size));
        snprintf(errs, sizeof(errs), "%" PRIu64,
                 (uint64_t)json_integer_value(json_object_get(e, "error_count")));
        row[0] = json_string_value(json_object_get(e, "id"));
        row[1] = json_string_value(json_object_get(e, "kind"));
        row[2] = json_string_value(json_object_get(e, "bucket"));
        row[3] = json_string_value(json_object_get(e, "state"));
        row[4] = objs;
        row[5] = size;
        row[6] = errs;
        for (size_t k = 0; k < 4; k++)
            if (!row[k] || !*row[k])
                row[k] = "-";
        hd_cli_table_add(&t, row);
    }
    rc = hd_cli_table_print(&t, stdout) < 0 ? hd_cli_fail(HD_CLI_EXIT_API, "out of memory")
                                            : HD_CLI_EXIT_OK;
out:
    hd_cli_table_cleanup(&t);
    json_decref(j);
    return rc;
}

static int job_one(struct hd_cli *cli, const char *verb, const char *method, const char *id)
{
    struct hd_buf path, what;
    json_t *j = NULL;
    int rc;

    hd_buf_init(&path);
    hd_buf_init(&what);
    hd_buf_puts(&path, "/v1/jobs/");
    hd_cli_path_encode(&path, id, 0);
    hd_buf_printf(&what, "job %s %s", verb, id);
    if (path.oom || what.oom) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
        goto out;
    }
    if ((rc = call(cli, what.data, method, path.data, NULL, &j)) != HD_CLI_EXIT_OK)
        goto out;
    if (cli->json)
        rc = print_json(j);
    else if (strcmp(method, "DELETE") == 0)
        printf("stopping %s\n", id);
    else
        job_summary(j);
out:
    json_decref(j);
    hd_buf_cleanup(&path);
    hd_buf_cleanup(&what);
    return rc;
}

int hd_cli_job_show(struct hd_cli *cli, int argc, char **argv)
{
    return job_one(cli, "show", "GET", argv[0]);
}

int hd_cli_job_stop(struct hd_cli *cli, int argc, char **argv)
{
    return job_one(cli, "stop", "DELETE", argv[0]);
}

int hd_cli_job_wait(struct hd_cli *cli, int argc, char **argv)
{
    uint64_t timeout = 0;

    if (cli->opt[HD_CLI_OPT_TIMEOUT] &&
        hd_cli_parse_count(cli->opt[HD_CLI_OPT_TIMEOUT], 1, 86400 * 365, &timeout) < 0)
        return hd_cli_usage_error(cli, "--timeout takes seconds");
    return wait_job(cli, argv[0], timeout);
}
