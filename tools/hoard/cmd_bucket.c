/* cmd_bucket: `hoard bucket create|ls|rm`. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tools/hoard/cli.h"
#include "tools/hoard/cli_fmt.h"
#include "tools/hoard/cli_http.h"

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
