/* cmd_plan: hoard plan create|ls|show|rm, the epoch plans of /v1/plans (docs/caching.md,
 * "Epoch plans"; explicit orders go through the API). Main thread. */
#include "tools/hoard/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/buf.h"
#include "tools/hoard/cli_fmt.h"
#include "tools/hoard/cli_http.h"

static json_int_t num(const json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

static void print_plan(const json_t *p)
{
    printf("%s: bucket %s, %lld objects, epoch %lld of %lld (last position read %lld)\n",
           json_string_value(json_object_get(p, "id")),
           json_string_value(json_object_get(p, "bucket")), (long long)num(p, "total"),
           (long long)num(p, "epoch"), (long long)num(p, "epochs"), (long long)num(p, "cursor"));
    printf("  reads: %lld hits, %lld misses (hit ratio %.3f)\n", (long long)num(p, "hits"),
           (long long)num(p, "misses"), json_real_value(json_object_get(p, "hit_ratio")));
    printf("  prefetched: %lld objects, %lld bytes; lead %lld objects; wasted %lld objects, "
           "%lld bytes\n",
           (long long)num(p, "prefetched"), (long long)num(p, "prefetched_bytes"),
           (long long)num(p, "lead"), (long long)num(p, "wasted"),
           (long long)num(p, "wasted_bytes"));
}

static int plan_call(struct hd_cli *cli, const char *method, const char *id, const char *verb,
                     const char *body, json_t **out)
{
    struct hd_buf path, what;
    int rc;

    hd_buf_init(&path);
    hd_buf_init(&what);
    hd_buf_printf(&path, "/v1/plans%s%s", id ? "/" : "", id ? id : "");
    hd_buf_printf(&what, "plan %s%s%s", verb, id ? " " : "", id ? id : "");
    if (path.oom || what.oom || (id && strpbrk(id, "/?#%")))
        rc = hd_cli_usage_error(cli, "a plan id is A-Z a-z 0-9 . _ -");
    else
        rc = hd_cli_json_do(cli, method, path.data, body, what.data, out);
    hd_buf_cleanup(&path);
    hd_buf_cleanup(&what);
    return rc;
}

int hd_cli_plan_create(struct hd_cli *cli, int argc, char **argv)
{
    const char *list = cli->opt[HD_CLI_OPT_LIST], *prefix = cli->opt[HD_CLI_OPT_PREFIX];
    uint64_t epochs, seed;
    json_t *body, *out = NULL;
    char *text;
    int rc;

    if ((list != NULL) == (prefix != NULL))
        return hd_cli_usage_error(cli, "give the dataset as one of --prefix or --list");
    if (!cli->opt[HD_CLI_OPT_EPOCHS] ||
        hd_cli_parse_count(cli->opt[HD_CLI_OPT_EPOCHS], 1, 1000000, &epochs) < 0)
        return hd_cli_usage_error(cli, "--epochs N (1..1000000) is required");
    if (!cli->opt[HD_CLI_OPT_SEED] ||
        hd_cli_parse_count(cli->opt[HD_CLI_OPT_SEED], 0, INT64_MAX, &seed) < 0)
        return hd_cli_usage_error(cli, "--seed N (0..2^63-1) is required");
    body = json_pack("{s:s, s:I, s:I}", "bucket", argv[0], "epochs", (json_int_t)epochs, "seed",
                     (json_int_t)seed);
    if (!body)
        return hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
    if (prefix) {
        json_object_set_new(body, "prefix", json_string(prefix));
    } else {
        json_t *keys = json_array();
        const char *p = list;
        while (*p) {
            size_t n = strcspn(p, ",");
            if (n)
                json_array_append_new(keys, json_stringn(p, n));
            p += n;
            if (*p == ',')
                p++;
        }
        json_object_set_new(body, "keys", keys);
    }
    if (cli->opt[HD_CLI_OPT_ID])
        json_object_set_new(body, "id", json_string(cli->opt[HD_CLI_OPT_ID]));
    if (cli->opt[HD_CLI_OPT_NO_PREFETCH])
        json_object_set_new(body, "prefetch", json_false());
    if (cli->opt[HD_CLI_OPT_SHARDS])
        json_object_set_new(body, "shards", json_true());
    text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!text)
        return hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
    rc = plan_call(cli, "POST", NULL, "create", text, &out);
    free(text);
    if (rc == HD_CLI_EXIT_OK && cli->json)
        rc = hd_cli_print_json(out);
    else if (rc == HD_CLI_EXIT_OK)
        printf("plan %s: %lld objects, %lld epochs\n",
               json_string_value(json_object_get(out, "id")), (long long)num(out, "total"),
               (long long)num(out, "epochs"));
    json_decref(out);
    return rc;
}

int hd_cli_plan_ls(struct hd_cli *cli, int argc, char **argv)
{
    json_t *out = NULL, *p;
    size_t i;
    int rc = plan_call(cli, "GET", NULL, "ls", NULL, &out);

    if (rc == HD_CLI_EXIT_OK && cli->json) {
        rc = hd_cli_print_json(out);
    } else if (rc == HD_CLI_EXIT_OK) {
        json_array_foreach(json_object_get(out, "plans"), i, p)
        {
            printf("%-24s %-20s epoch %lld/%lld  hit ratio %.3f  prefetched %lld\n",
                   json_string_value(json_object_get(p, "id")),
                   json_string_value(json_object_get(p, "bucket")), (long long)num(p, "epoch"),
                   (long long)num(p, "epochs"), json_real_value(json_object_get(p, "hit_ratio")),
                   (long long)num(p, "prefetched"));
        }
    }
    json_decref(out);
    return rc;
}

int hd_cli_plan_show(struct hd_cli *cli, int argc, char **argv)
{
    json_t *out = NULL;
    int rc = plan_call(cli, "GET", argv[0], "show", NULL, &out);

    if (rc == HD_CLI_EXIT_OK && cli->json)
        rc = hd_cli_print_json(out);
    else if (rc == HD_CLI_EXIT_OK)
        print_plan(out);
    json_decref(out);
    return rc;
}

int hd_cli_plan_rm(struct hd_cli *cli, int argc, char **argv)
{
    json_t *out = NULL;
    int rc = plan_call(cli, "DELETE", argv[0], "rm", NULL, &out);

    if (rc == HD_CLI_EXIT_OK && cli->json)
        rc = hd_cli_print_json(out);
    else if (rc == HD_CLI_EXIT_OK)
        printf("deleted plan %s\n", argv[0]);
    json_decref(out);
    return rc;
}
