/* cmd_bucket: `hoard bucket create|ls|rm|du`. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tools/hoard/cli.h"
#include "tools/hoard/cli_fmt.h"
#include "tools/hoard/cli_http.h"
#include "tools/hoard/cli_obj.h"

static int bucket_path(struct hd_buf *path, const char *bucket)
{
    hd_buf_puts(path, "/v1/buckets/");
    hd_cli_path_encode(path, bucket, 0);
    return path->oom ? -ENOMEM : 0;
}

/* create and rm differ only in method, expected status and the words printed. */
static int bucket_simple(struct hd_cli *cli, const char *bucket, const char *method,
                         const char *verb, const char *done)
{
    struct hd_cli_req rq = {.method = method};
    struct hd_cli_resp rs;
    struct hd_buf path, what;
    int rc;

    hd_cli_resp_init(&rs);
    hd_buf_init(&path);
    hd_buf_init(&what);
    hd_buf_printf(&what, "bucket %s %s", verb, bucket);
    if (bucket_path(&path, bucket) < 0 || what.oom) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
        goto out;
    }
    rq.path = path.data;
    rc = hd_cli_http_do(cli, &rq, &rs);
    if (rc != 0 || rs.status >= 300) {
        rc = hd_cli_report(cli, what.data, rc, &rs);
        goto out;
    }
    if (cli->json) {
        json_t *j = json_pack("{s:s, s:b}", "bucket", bucket, done, 1);
        rc = hd_cli_print_json(j);
        json_decref(j);
    } else {
        printf("%s %s\n", done, bucket);
        rc = HD_CLI_EXIT_OK;
    }
out:
    hd_buf_cleanup(&what);
    hd_buf_cleanup(&path);
    hd_cli_resp_cleanup(&rs);
    return rc;
}

int hd_cli_bucket_create(struct hd_cli *cli, int argc, char **argv)
{
    if (strncmp(argv[0], "s3://", 5) == 0) /* S3-backed (cmd_cache.c) */
        return hd_cli_cloud_create(cli, argv[0] + 5);
    if (cli->opt[HD_CLI_OPT_UPSTREAM] || cli->opt[HD_CLI_OPT_PROFILE])
        return hd_cli_usage_error(cli, "--upstream and --profile are for s3:// buckets");
    return bucket_simple(cli, argv[0], "POST", "create", "created");
}

int hd_cli_bucket_rm(struct hd_cli *cli, int argc, char **argv)
{
    return bucket_simple(cli, argv[0], "DELETE", "rm", "removed");
}

int hd_cli_bucket_ls(struct hd_cli *cli, int argc, char **argv)
{
    static const char *const headers[] = {"NAME", "PROVIDER", "CREATED"};
    struct hd_cli_req rq = {.method = "GET", .path = "/v1/buckets"};
    struct hd_cli_resp rs;
    struct hd_cli_table t;
    json_t *j = NULL, *arr, *b;
    json_error_t jerr;
    size_t i;
    int rc;

    hd_cli_resp_init(&rs);
    hd_cli_table_init(&t, 3, headers, 0);
    rc = hd_cli_http_do(cli, &rq, &rs);
    if (rc != 0 || rs.status >= 300) {
        rc = hd_cli_report(cli, "bucket ls", rc, &rs);
        goto out;
    }
    j = json_loadb(rs.body.data ? rs.body.data : "", rs.body.len, 0, &jerr);
    arr = json_object_get(j, "buckets");
    if (!json_is_array(arr)) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "bucket ls: unexpected response from %s: %s",
                         cli->endpoint, j ? "no \"buckets\" array" : jerr.text);
        goto out;
    }
    if (cli->json) {
        rc = hd_cli_print_json(j);
        goto out;
    }
    json_array_foreach(arr, i, b)
    {
        const char *row[3];
        row[0] = json_string_value(json_object_get(b, "name"));
        row[1] = json_string_value(json_object_get(b, "provider"));
        row[2] = json_string_value(json_object_get(b, "created"));
        row[0] = row[0] ? row[0] : "?";
        row[1] = row[1] ? row[1] : "-";
        row[2] = row[2] ? row[2] : "-";
        hd_cli_table_add(&t, row);
    }
    rc = hd_cli_table_print(&t, stdout) < 0 ? hd_cli_fail(HD_CLI_EXIT_API, "out of memory")
                                            : HD_CLI_EXIT_OK;
out:
    json_decref(j);
    hd_cli_table_cleanup(&t);
    hd_cli_resp_cleanup(&rs);
    return rc;
}

/* ---- du ------------------------------------------------------------------------------- */

/* One bucket's usage: the cluster's summary (GET /v1/buckets/B?summary: objects and bytes per
 * target and mountpath) and, for an S3-backed bucket, the upstream's totals from a full
 * listing (the summary's numbers are then what is cached). */
static int du_one(struct hd_cli *cli, const char *bucket, json_t **out)
{
    struct hd_buf path, what;
    json_t *sum = NULL, *ents = NULL, *e;
    uint64_t objs = 0, bytes = 0;
    const char *prov;
    size_t i;
    int rc;

    *out = NULL;
    hd_buf_init(&path);
    hd_buf_init(&what);
    hd_buf_printf(&what, "bucket du %s", bucket);
    if (bucket_path(&path, bucket) < 0 || hd_buf_puts(&path, "?summary") < 0 || what.oom) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
        goto out;
    }
    if ((rc = hd_cli_json_do(cli, "GET", path.data, NULL, what.data, &sum)) != 0)
        goto out;
    prov = json_string_value(json_object_get(sum, "provider"));
    if (prov && strcmp(prov, "aws") == 0) {
        if (!(ents = json_array())) {
            rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
            goto out;
        }
        if ((rc = hd_cli_list_all(cli, bucket, "", 0, what.data, ents)) != 0)
            goto out;
        json_array_foreach(ents, i, e)
        {
            objs++;
            bytes += (uint64_t)json_integer_value(json_object_get(e, "size"));
        }
        json_object_set(sum, "cached_objects", json_object_get(sum, "objects"));
        json_object_set(sum, "cached_bytes", json_object_get(sum, "bytes"));
        json_object_set_new(sum, "objects", json_integer((json_int_t)objs));
        json_object_set_new(sum, "bytes", json_integer((json_int_t)bytes));
    }
    *out = sum;
    sum = NULL;
out:
    json_decref(ents);
    json_decref(sum);
    hd_buf_cleanup(&what);
    hd_buf_cleanup(&path);
    return rc;
}

static void size_cell(json_t *v, char *out, size_t len)
{
    if (json_is_integer(v))
        hd_cli_fmt_size((uint64_t)json_integer_value(v), out, len);
    else
        snprintf(out, len, "-");
}

static void count_cell(json_t *v, char *out, size_t len)
{
    if (json_is_integer(v))
        snprintf(out, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else
        snprintf(out, len, "-");
}

static int du_print(json_t *docs)
{
    static const char *const h1[] = {"BUCKET", "PROVIDER",       "OBJECTS",
                                     "SIZE",   "CACHED OBJECTS", "CACHED"};
    static const char *const h2[] = {"BUCKET", "TARGET", "MOUNTPATH", "OBJECTS", "SIZE"};
    struct hd_cli_table t1, t2;
    json_t *d, *t, *mp, *tg, *single = NULL;
    const char *tid;
    size_t i, k;
    int rc = 0;

    hd_cli_table_init(&t1, 6, h1, 0x3cu);
    hd_cli_table_init(&t2, 5, h2, 0x18u);
    json_array_foreach(docs, i, d)
    {
        char c[4][32];
        const char *row[6];
        count_cell(json_object_get(d, "objects"), c[0], 32);
        size_cell(json_object_get(d, "bytes"), c[1], 32);
        count_cell(json_object_get(d, "cached_objects"), c[2], 32);
        size_cell(json_object_get(d, "cached_bytes"), c[3], 32);
        row[0] = json_string_value(json_object_get(d, "bucket"));
        row[1] = json_string_value(json_object_get(d, "provider"));
        if (!row[1])
            row[1] = "-";
        for (k = 0; k < 4; k++)
            row[2 + k] = c[k];
        hd_cli_table_add(&t1, row);
        tg = json_object_get(d, "targets");
        if (!tg && (tg = single = json_object())) /* a standalone target answered itself */
            json_object_set(single, "this target", d);
        json_object_foreach(tg, tid, t)
        {
            const char *err = json_string_value(json_object_get(t, "error"));
            if (err) {
                const char *r2[5] = {row[0], tid, err, "-", "-"};
                hd_cli_table_add(&t2, r2);
                continue;
            }
            json_array_foreach(json_object_get(t, "mountpaths"), k, mp)
            {
                char o[32], b[32];
                const char *r2[5] = {row[0], tid, json_string_value(json_object_get(mp, "path")), o,
                                     b};
                count_cell(json_object_get(mp, "objects"), o, 32);
                size_cell(json_object_get(mp, "bytes"), b, 32);
                hd_cli_table_add(&t2, r2);
            }
        }
        json_decref(single);
        single = NULL;
    }
    if (hd_cli_table_print(&t1, stdout) < 0 || fputc('\n', stdout) == EOF ||
        hd_cli_table_print(&t2, stdout) < 0)
        rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
    hd_cli_table_cleanup(&t1);
    hd_cli_table_cleanup(&t2);
    return rc;
}

/* bucket du [B...]: every bucket when none is named. */
int hd_cli_bucket_du(struct hd_cli *cli, int argc, char **argv)
{
    json_t *docs = json_array(), *ls = NULL, *b, *one;
    size_t i;
    int rc = 0;

    if (!docs)
        return hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
    if (argc == 0) {
        if ((rc = hd_cli_json_do(cli, "GET", "/v1/buckets", NULL, "bucket du", &ls)) != 0)
            goto out;
        json_array_foreach(json_object_get(ls, "buckets"), i, b)
        {
            const char *name = json_string_value(json_object_get(b, "name"));
            if (!name)
                continue;
            if ((rc = du_one(cli, name, &one)) != 0)
                goto out;
            json_array_append_new(docs, one);
        }
    }
    for (i = 0; i < (size_t)argc; i++) {
        if ((rc = du_one(cli, argv[i], &one)) != 0)
            goto out;
        json_array_append_new(docs, one);
    }
    if (cli->json) {
        json_t *j = json_pack("{s:O}", "buckets", docs);
        rc = hd_cli_print_json(j);
        json_decref(j);
    } else {
        rc = du_print(docs);
    }
out:
    json_decref(ls);
    json_decref(docs);
    return rc;
}

/* ---- cp ------------------------------------------------------------------------------- */

/* bucket cp SRC DST [--prefix P] [--wait [--timeout S]]: a "copy" job on every target
 * (target/cluster/copy.c), followed like any job. */
int hd_cli_bucket_cp(struct hd_cli *cli, int argc, char **argv)
{
    const char *src = argv[0], *dst = argv[1], *prefix = cli->opt[HD_CLI_OPT_PREFIX], *id;
    json_t *body = NULL, *out = NULL, *sum = NULL, *ents = NULL, *e;
    uint64_t tobjs = 0, tbytes = 0;
    struct hd_buf path, what;
    char *text = NULL;
    size_t i;
    int rc;

    (void)argc;
    hd_buf_init(&path);
    hd_buf_init(&what);
    hd_buf_printf(&what, "bucket cp %s %s", src, dst);
    if (strcmp(src, dst) == 0 || strchr(src, '/') || strchr(dst, '/')) {
        rc = hd_cli_usage_error(cli, "bucket cp wants two different buckets (use --prefix for "
                                     "part of SRC)");
        goto out;
    }
    /* both must exist: a clear NoSuchBucket now rather than a failed job */
    for (i = 0; i < 2; i++) {
        hd_buf_reset(&path);
        if (bucket_path(&path, i ? dst : src) < 0 || hd_buf_puts(&path, "?summary") < 0 ||
            what.oom) {
            rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
            goto out;
        }
        json_decref(sum);
        if ((rc = hd_cli_json_do(cli, "GET", path.data, NULL, what.data, &sum)) != 0)
            goto out;
        if (i == 1 && json_string_value(json_object_get(sum, "provider")) &&
            strcmp(json_string_value(json_object_get(sum, "provider")), "aws") == 0) {
            rc = hd_cli_fail_code(HD_CLI_EXIT_API, "NotImplemented",
                                  "%s: copying into an S3-backed bucket is not supported yet",
                                  what.data);
            goto out;
        }
        if (i == 0 && !prefix) { /* the totals, known before the job starts */
            tobjs = (uint64_t)json_integer_value(json_object_get(sum, "objects"));
            tbytes = (uint64_t)json_integer_value(json_object_get(sum, "bytes"));
        }
    }
    if (prefix && cli->opt[HD_CLI_OPT_WAIT] && (ents = json_array()) &&
        hd_cli_list_all(cli, src, prefix, 0, what.data, ents) == 0)
        json_array_foreach(ents, i, e)
        {
            tobjs++;
            tbytes += (uint64_t)json_integer_value(json_object_get(e, "size"));
        }
    body = json_pack("{s:s, s:s, s:{s:s, s:s?}}", "kind", "copy", "bucket", src, "args", "to", dst,
                     "prefix", prefix);
    if (!body || !(text = json_dumps(body, JSON_COMPACT))) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
        goto out;
    }
    if ((rc = hd_cli_json_do(cli, "POST", "/v1/jobs", text, what.data, &out)) != 0)
        goto out;
    if (!(id = json_string_value(json_object_get(out, "id")))) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "%s: the answer names no job", what.data);
        goto out;
    }
    if (cli->opt[HD_CLI_OPT_WAIT]) {
        if (!cli->json)
            fprintf(stderr, "copy job %s started\n", id);
        rc = hd_cli_job_wait_totals(cli, id, tobjs, tbytes);
    } else if (cli->json) {
        rc = hd_cli_print_json(out);
    } else {
        printf("copy job %s started (hoard job wait %s)\n", id, id);
        rc = HD_CLI_EXIT_OK;
    }
out:
    free(text);
    json_decref(ents);
    json_decref(sum);
    json_decref(out);
    json_decref(body);
    hd_buf_cleanup(&what);
    hd_buf_cleanup(&path);
    return rc;
}
