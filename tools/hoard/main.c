/* hoard: the admin CLI. `hoard [global options] <noun> <verb> [args] [options]`.
 * This file holds the option and command tables, argument parsing, help and dispatch. */
#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "tools/hoard/cli.h"
#include "tools/hoard/cli_config.h"
#include "tools/hoard/cli_fmt.h"
#include "tools/hoard/cli_http.h"
#include "tools/hoard/cli_sign.h"

volatile sig_atomic_t hd_cli_interrupted;
int hd_cli_mute_errors;

const struct hd_cli_opt hd_cli_opts[HD_CLI_OPT_COUNT] = {
    [HD_CLI_OPT_ENDPOINT] = {"endpoint", 1, 1, "URL",
                             "server URL (env HOARD_ENDPOINT, default " HD_CLI_DEFAULT_ENDPOINT
                             ")"},
    [HD_CLI_OPT_JSON] = {"json", 0, 1, NULL, "print JSON for scripts instead of tables"},
    [HD_CLI_OPT_HELP] = {"help", 0, 1, NULL, "show usage and exit"},
    [HD_CLI_OPT_VERSION] = {"version", 0, 1, NULL, "print the version and exit"},
    [HD_CLI_OPT_CFG_PROFILE] = {"profile", 1, 1, "NAME",
                                "profile of the config file (env HOARD_PROFILE; see config show)"},
    [HD_CLI_OPT_DELIMITER] = {"delimiter", 1, 0, "D",
                              "group names sharing a prefix up to D into PREFIXES"},
    [HD_CLI_OPT_LIMIT] = {"limit", 1, 0, "N",
                          "return at most N entries (plus a continuation token)"},
    [HD_CLI_OPT_TOKEN] = {"token", 1, 0, "T", "continue a listing from a continuation token"},
    [HD_CLI_OPT_CONTENT_TYPE] = {"content-type", 1, 0, "TYPE",
                                 "Content-Type stored with the object"},
    [HD_CLI_OPT_ACCESS_KEY] = {"access-key", 1, 1, "ID",
                               "SigV4 access key (env AWS_ACCESS_KEY_ID)"},
    [HD_CLI_OPT_SECRET_KEY] = {"secret-key", 1, 1, "KEY",
                               "SigV4 secret key (env AWS_SECRET_ACCESS_KEY)"},
    [HD_CLI_OPT_UPSTREAM] = {"upstream", 1, 0, "URL",
                             "upstream S3 endpoint of an s3:// bucket (not --endpoint: that is "
                             "the hoard node)"},
    [HD_CLI_OPT_PROFILE] = {"upstream-profile", 1, 0, "P",
                            "credential profile the nodes use for the upstream (also --profile "
                            "after s3://B)"},
    [HD_CLI_OPT_REGION] = {"region", 1, 0, "R", "upstream region (default us-east-1)"},
    [HD_CLI_OPT_STYLE] = {"style", 1, 0, "S", "upstream addressing: path (default) | virtual"},
    [HD_CLI_OPT_REMOTE] = {"remote-bucket", 1, 0, "NAME",
                           "the bucket's name at the upstream (default: the same)"},
    [HD_CLI_OPT_PREFIX] = {"prefix", 1, 0, "P", "every object whose name starts with P"},
    [HD_CLI_OPT_REVALIDATE] = {"revalidate", 0, 0, NULL,
                               "refetch cached objects whose upstream ETag changed"},
    [HD_CLI_OPT_WAIT] = {"wait", 0, 0, NULL, "wait for the job, showing its progress"},
    [HD_CLI_OPT_OFF] = {"off", 0, 0, NULL, "clear the flag instead of setting it"},
    [HD_CLI_OPT_TIMEOUT] = {"timeout", 1, 0, "S",
                            "give up after S seconds (exit 4; the job keeps running)"},
    [HD_CLI_OPT_ARCHPATH] = {"archpath", 1, 0, "NAME", "one member of a tar object"},
    [HD_CLI_OPT_TEMPLATE] = {"template", 1, 0, "T",
                             "brace template of names, e.g. 'train-{000000..}.tar' (shard: "
                             "required), 'shard-{0000..0999}.tar' (prefetch, evict)"},
    [HD_CLI_OPT_SIZE] = {"size", 1, 0, "SIZE", "target shard size, e.g. 256MiB (required)"},
    [HD_CLI_OPT_SEED] = {"seed", 1, 0, "N", "shuffle the samples with this seed"},
    [HD_CLI_OPT_KEY_RULE] = {"key-rule", 1, 0, "R",
                             "sample key: first_dot (default), last_dot, dir, name"},
    [HD_CLI_OPT_LIST] = {"list", 1, 0, "L",
                         "object names: a FILE of them, one a line (shard), or A,B,.. (prefetch, "
                         "evict, plan)"},
    [HD_CLI_OPT_RANGE] = {"range", 1, 0, "T",
                          "shard only names in a range, e.g. 'a-{000..999}.jpg'"},
    [HD_CLI_OPT_MANIFEST] = {"manifest", 1, 0, "NAME", "manifest object name in OUT"},
    [HD_CLI_OPT_ID] = {"id", 1, 0, "ID", "job or plan id (default: generated)"},
    [HD_CLI_OPT_NO_WAIT] = {"no-wait", 0, 0, NULL, "start the job and print its id"},
    [HD_CLI_OPT_CONTINUE] = {"continue-on-error", 0, 0, NULL,
                             "record missing entries in the tar (__404__/NAME) and go on"},
    [HD_CLI_OPT_CACHED] = {"cached", 0, 0, NULL,
                           "S3-backed bucket: only the objects cached in the cluster"},
    [HD_CLI_OPT_RECURSIVE] = {"recursive", 0, 0, NULL,
                              "(-r) every object under B/PREFIX, into DIR (default .)"},
    [HD_CLI_OPT_JOBS] = {"jobs", 1, 0, "N",
                         "(-j) parallel transfers for many objects (default 4, at most 64)"},
    [HD_CLI_OPT_DELETE] = {"delete", 0, 0, NULL,
                           "also remove from the destination what the source does not have"},
    [HD_CLI_OPT_TTL] = {"ttl", 1, 0, "S",
                        "token lifetime in seconds (default 3600, at most 86400)"},
    [HD_CLI_OPT_EPOCHS] = {"epochs", 1, 0, "N", "epochs the plan covers"},
    [HD_CLI_OPT_NO_PREFETCH] = {"no-prefetch", 0, 0, NULL,
                                "the plan only ranks evictions (no prefetch)"},
    [HD_CLI_OPT_SHARDS] = {"shards", 0, 0, NULL,
                           "the objects are tar shards read member by member (?archpath=)"},
    [HD_CLI_OPT_GZIP] = {"gzip", 0, 0, NULL,
                         "gzip-compressed shards (.tar.gz: smaller, members read in order)"},
    [HD_CLI_OPT_FORMAT] = {"format", 1, 0, "F",
                           "tar (default), tar.gz, tar.lz4, tar.zst or zip (members stored); "
                           "not tar: members read in order"},
};

static const enum hd_cli_optid ls_opts[] = {HD_CLI_OPT_DELIMITER, HD_CLI_OPT_LIMIT,
                                            HD_CLI_OPT_TOKEN, HD_CLI_OPT_CACHED, HD_CLI_OPT_COUNT};
static const enum hd_cli_optid put_opts[] = {HD_CLI_OPT_CONTENT_TYPE, HD_CLI_OPT_JOBS,
                                             HD_CLI_OPT_COUNT};
static const enum hd_cli_optid rm_opts[] = {HD_CLI_OPT_PREFIX, HD_CLI_OPT_TEMPLATE, HD_CLI_OPT_JOBS,
                                            HD_CLI_OPT_COUNT};
static const enum hd_cli_optid cp_opts[] = {HD_CLI_OPT_PREFIX, HD_CLI_OPT_WAIT, HD_CLI_OPT_TIMEOUT,
                                            HD_CLI_OPT_COUNT};
static const enum hd_cli_optid sync_opts[] = {HD_CLI_OPT_DELETE, HD_CLI_OPT_JOBS, HD_CLI_OPT_COUNT};
static const enum hd_cli_optid create_opts[] = {HD_CLI_OPT_UPSTREAM, HD_CLI_OPT_PROFILE,
                                                HD_CLI_OPT_REGION,   HD_CLI_OPT_STYLE,
                                                HD_CLI_OPT_REMOTE,   HD_CLI_OPT_COUNT};
static const enum hd_cli_optid prefetch_opts[] = {
    HD_CLI_OPT_LIST, HD_CLI_OPT_TEMPLATE, HD_CLI_OPT_PREFIX, HD_CLI_OPT_REVALIDATE,
    HD_CLI_OPT_WAIT, HD_CLI_OPT_TIMEOUT,  HD_CLI_OPT_COUNT};
static const enum hd_cli_optid evict_opts[] = {HD_CLI_OPT_LIST,    HD_CLI_OPT_TEMPLATE,
                                               HD_CLI_OPT_PREFIX,  HD_CLI_OPT_WAIT,
                                               HD_CLI_OPT_TIMEOUT, HD_CLI_OPT_COUNT};
static const enum hd_cli_optid flush_opts[] = {HD_CLI_OPT_PREFIX, HD_CLI_OPT_WAIT,
                                               HD_CLI_OPT_TIMEOUT, HD_CLI_OPT_COUNT};
static const enum hd_cli_optid off_opts[] = {HD_CLI_OPT_OFF, HD_CLI_OPT_COUNT};
static const enum hd_cli_optid wait_opts[] = {HD_CLI_OPT_TIMEOUT, HD_CLI_OPT_COUNT};
static const enum hd_cli_optid get_opts[] = {HD_CLI_OPT_ARCHPATH, HD_CLI_OPT_RECURSIVE,
                                             HD_CLI_OPT_JOBS, HD_CLI_OPT_COUNT};
static const enum hd_cli_optid shard_opts[] = {
    HD_CLI_OPT_TEMPLATE, HD_CLI_OPT_SIZE,  HD_CLI_OPT_SEED,     HD_CLI_OPT_KEY_RULE,
    HD_CLI_OPT_LIST,     HD_CLI_OPT_RANGE, HD_CLI_OPT_MANIFEST, HD_CLI_OPT_ID,
    HD_CLI_OPT_NO_WAIT,  HD_CLI_OPT_GZIP,  HD_CLI_OPT_FORMAT,   HD_CLI_OPT_COUNT};
static const enum hd_cli_optid shard_req[] = {HD_CLI_OPT_TEMPLATE, HD_CLI_OPT_SIZE,
                                              HD_CLI_OPT_COUNT};
static const enum hd_cli_optid plan_req[] = {HD_CLI_OPT_EPOCHS, HD_CLI_OPT_SEED, HD_CLI_OPT_COUNT};
static const enum hd_cli_optid plan_opts[] = {
    HD_CLI_OPT_PREFIX, HD_CLI_OPT_LIST,        HD_CLI_OPT_EPOCHS, HD_CLI_OPT_SEED,
    HD_CLI_OPT_ID,     HD_CLI_OPT_NO_PREFETCH, HD_CLI_OPT_SHARDS, HD_CLI_OPT_COUNT};
static const enum hd_cli_optid batch_opts[] = {HD_CLI_OPT_CONTINUE, HD_CLI_OPT_FORMAT,
                                               HD_CLI_OPT_COUNT};
static const enum hd_cli_optid token_opts[] = {HD_CLI_OPT_TTL, HD_CLI_OPT_COUNT};

/* The command table: one row per <noun> <verb>. Help text is generated from it. */
static const struct hd_cli_cmd cmds[] = {
    {"bucket", "create", hd_cli_bucket_create, 1, 1, "B|s3://B",
     "create bucket B, or S3-backed bucket B in front of an upstream", create_opts, NULL},
    {"bucket", "ls", hd_cli_bucket_ls, 0, 0, "", "list buckets", NULL, NULL},
    {"bucket", "rm", hd_cli_bucket_rm, 1, 1, "B", "remove bucket B (must be empty)", NULL, NULL},
    {"bucket", "cp", hd_cli_bucket_cp, 2, 2, "SRC DST",
     "copy SRC's objects (under --prefix) into DST as a job on every target", cp_opts, NULL},
    {"bucket", "du", hd_cli_bucket_du, 0, 64, "[B...]",
     "count and bytes stored per bucket (S3-backed: upstream and cached), per target mountpath",
     NULL, NULL},
    {"bucket", "props", hd_cli_bucket_props, 1, 64, "B [KEY=VALUE...]",
     "show bucket properties, or set them (validate_warm_get=true, validate_cold_get=false, "
     "write_policy=back, "
     "upstream.profile=P)",
     NULL, NULL},
    {"bucket", "flush", hd_cli_bucket_flush, 1, 1, "B",
     "upload what write-back bucket B holds dirty now (a job; --wait shows progress)", flush_opts,
     NULL},
    {"bucket", "show", hd_cli_bucket_show, 1, 1, "B",
     "bucket properties and, for write-back, what is dirty (count, bytes) and upload lag", NULL,
     NULL},
    {"object", "put", hd_cli_object_put, 2, 2, "FILE|DIR|- B/O|B/PREFIX",
     "upload FILE (or stdin) as object O in bucket B; a DIR: every file under it, -j at once",
     put_opts, NULL},
    {"object", "get", hd_cli_object_get, 1, 2, "B/O|B/PREFIX [FILE|DIR|-]",
     "download to FILE, into DIR, or to stdout (-); default ./NAME; -r: every object under "
     "PREFIX",
     get_opts, NULL},
    {"object", "head", hd_cli_object_head, 1, 1, "B/O", "show an object's size, ETag and metadata",
     NULL, NULL},
    {"object", "ls", hd_cli_object_ls, 1, 1, "B[/PREFIX]",
     "list objects (all pages unless --limit)", ls_opts, NULL},
    {"object", "rm", hd_cli_object_rm, 1, 1, "B/O|B",
     "remove an object, or every object of B --prefix P or --template 'a-{00..99}.tar'", rm_opts,
     NULL},
    {"sync", "", hd_cli_sync, 2, 2, "DIR hoard://B[/P] | hoard://B[/P] DIR",
     "copy to the second what it lacks or has different (size, older); -j at once", sync_opts,
     NULL},
    {"prefetch", "", hd_cli_prefetch, 1, 1, "B",
     "cache objects of S3-backed bucket B (a job on every target)", prefetch_opts, NULL},
    {"evict", "", hd_cli_evict, 1, 1, "B",
     "drop cached objects of S3-backed bucket B (all without a selection)", evict_opts, NULL},
    {"config", "show", hd_cli_config_show, 0, 0, "",
     "the endpoint, profile, key and region the CLI would use, and where they come from", NULL,
     NULL},
    {"config", "profiles", hd_cli_config_profiles, 0, 0, "",
     "the profiles of the config file (~/.config/hoard/config)", NULL, NULL},
    {"completion", "", hd_cli_completion, 1, 1, "bash",
     "print a bash completion script (source <(hoard completion bash))", NULL, NULL},
    {"cluster", "show", hd_cli_cluster_show, 0, 0, "",
     "nodes, states, rebalance, and mountpath capacity per target", NULL, NULL},
    {"cluster", "maintenance", hd_cli_cluster_maintenance, 1, 1, "NODE",
     "put target NODE in maintenance (no new objects; --off ends it)", off_opts, NULL},
    {"cluster", "decommission", hd_cli_cluster_decommission, 1, 1, "NODE",
     "move target NODE's objects away, then remove it (--off cancels)", off_opts, NULL},
    {"cluster", "rebalance", hd_cli_cluster_rebalance, 0, 0, "",
     "start a rebalance now and print its job id", NULL, NULL},
    {"auth", "token", hd_cli_auth_token, 0, 0, "",
     "print a bearer token for your key (AIStore SDK clients: Client(URL, token=...))", token_opts,
     NULL},
    {"job", "ls", hd_cli_job_ls, 0, 0, "", "list jobs (newest first)", NULL, NULL},
    {"job", "show", hd_cli_job_show, 1, 1, "ID", "show a job: state, progress, per-target view",
     NULL, NULL},
    {"job", "wait", hd_cli_job_wait, 1, 1, "ID",
     "wait for a job to end, with progress; exit 0 only if it had no errors", wait_opts, NULL},
    {"job", "stop", hd_cli_job_stop, 1, 1, "ID", "ask every target to stop a job", NULL, NULL},
    {"plan", "create", hd_cli_plan_create, 1, 1, "B",
     "register an epoch plan over S3-backed bucket B (--prefix|--list, --epochs, --seed)",
     plan_opts, plan_req},
    {"plan", "ls", hd_cli_plan_ls, 0, 0, "", "list epoch plans with their progress", NULL, NULL},
    {"plan", "show", hd_cli_plan_show, 1, 1, "ID", "show a plan: progress, hits, prefetch", NULL,
     NULL},
    {"plan", "rm", hd_cli_plan_rm, 1, 1, "ID", "delete a plan (its prefetch stops)", NULL, NULL},
    {"shard", "create", hd_cli_shard_create, 2, 2, "B[/PREFIX] OUT",
     "pack the objects of B into tar shards in bucket OUT (shows progress)", shard_opts, shard_req},
    {"shard", "ls-members", hd_cli_shard_members, 1, 1, "B/O",
     "list the members of an archive object (tar, compressed tar, zip)", NULL, NULL},
    {"batch", "get", hd_cli_batch_get, 2, 2, "LIST|- FILE|-",
     "fetch the objects and members LIST names as one tar (lines: B/O [TAB MEMBER])", batch_opts,
     NULL},
};
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

const struct hd_cli_cmd *hd_cli_commands(size_t *n)
{
    *n = NCMDS;
    return cmds;
}

/* --json: failures are one JSON object on stderr instead of a text line (set before any
 * parsing, so usage errors are JSON too). */
static int json_errors;

/* The "code" of a failure that has no server error code, from its exit code. */
static const char *exit_code_name(int code)
{
    switch (code) {
    case HD_CLI_EXIT_USAGE:
        return "Usage";
    case HD_CLI_EXIT_CONN:
        return "Connection";
    case HD_CLI_EXIT_TIMEOUT:
        return "Timeout";
    case HD_CLI_EXIT_INTR:
        return "Interrupted";
    default:
        return "Error";
    }
}

/* One failure: "hoard: MSG" or {"error": MSG, "code": CODE, "exit": N[, "usage": U]}. */
static void emit_error(int exit_code, const char *code, const char *msg, const char *usage_line)
{
    json_t *j;

    if (hd_cli_mute_errors)
        return;
    fflush(stdout);
    if (!json_errors) {
        fprintf(stderr, "hoard: %s\n", msg);
        return;
    }
    j = json_pack("{s:s, s:s, s:i}", "error", msg, "code", code ? code : exit_code_name(exit_code),
                  "exit", exit_code);
    if (j && usage_line)
        json_object_set_new(j, "usage", json_string(usage_line));
    if (j && json_dumpf(j, stderr, JSON_COMPACT) == 0)
        fputc('\n', stderr);
    else
        fprintf(stderr, "hoard: %s\n", msg);
    json_decref(j);
}

static int vfail(int exit_code, const char *code, const char *fmt, va_list ap)
{
    char msg[2048];

    vsnprintf(msg, sizeof(msg), fmt, ap);
    emit_error(exit_code, code, msg, NULL);
    return exit_code;
}

int hd_cli_fail(int code, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = vfail(code, NULL, fmt, ap);
    va_end(ap);
    return rc;
}

int hd_cli_fail_code(int exit_code, const char *code, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = vfail(exit_code, code, fmt, ap);
    va_end(ap);
    return rc;
}

int hd_cli_print_json(const json_t *j)
{
    if (!j)
        return hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
    if (json_dumpf(j, stdout, JSON_INDENT(2)) != 0)
        return hd_cli_fail(HD_CLI_EXIT_API, "writing output failed");
    fputc('\n', stdout);
    return HD_CLI_EXIT_OK;
}

static int noun_known(const char *noun)
{
    size_t i;

    for (i = 0; i < NCMDS; i++)
        if (strcmp(cmds[i].noun, noun) == 0)
            return 1;
    return 0;
}

static int opt_in(const enum hd_cli_optid *list, enum hd_cli_optid id)
{
    for (; list && *list != HD_CLI_OPT_COUNT; list++)
        if (*list == id)
            return 1;
    return 0;
}

/* "noun verb ARGS --req R [--opt V]...": required options first, unbracketed. */
static void cmd_line(const struct hd_cli_cmd *c, char *line, size_t len)
{
    const enum hd_cli_optid *o;
    int n, pass;

    n = snprintf(line, len, "%s%s%s%s%s", c->noun, *c->verb ? " " : "", c->verb,
                 *c->args ? " " : "", c->args);
    for (pass = 0; pass < 2; pass++)
        for (o = c->opts; o && *o != HD_CLI_OPT_COUNT && n > 0 && (size_t)n < len; o++) {
            const struct hd_cli_opt *d = &hd_cli_opts[*o];
            int req = opt_in(c->req, *o);
            if (req != (pass == 0))
                continue;
            n += snprintf(line + n, len - (size_t)n, " %s--%s%s%s%s", req ? "" : "[", d->name,
                          d->has_arg ? " " : "", d->has_arg ? d->arg_name : "", req ? "" : "]");
        }
}

/* Commands of one noun (all when NULL): aligned "cmd  summary" rows, or the summary on its
 * own line when that would not fit in 100 columns. */
static void print_cmds(FILE *out, const char *noun)
{
    char line[256];
    size_t i, w = 0, ws = 0;

    for (i = 0; i < NCMDS; i++) {
        if (noun && strcmp(cmds[i].noun, noun) != 0)
            continue;
        cmd_line(&cmds[i], line, sizeof(line));
        if (strlen(line) > w)
            w = strlen(line);
        if (strlen(cmds[i].summary) > ws)
            ws = strlen(cmds[i].summary);
    }
    for (i = 0; i < NCMDS; i++) {
        if (noun && strcmp(cmds[i].noun, noun) != 0)
            continue;
        cmd_line(&cmds[i], line, sizeof(line));
        if (2 + w + 2 + ws <= 100)
            fprintf(out, "  %-*s  %s\n", (int)w, line, cmds[i].summary);
        else
            fprintf(out, "  %s\n      %s\n", line, cmds[i].summary);
    }
}

static void print_cmd_options(FILE *out, const char *noun)
{
    int seen[HD_CLI_OPT_COUNT] = {0}, any = 0;
    const enum hd_cli_optid *o;
    size_t i;

    for (i = 0; i < NCMDS; i++) {
        if (noun && strcmp(cmds[i].noun, noun) != 0)
            continue;
        for (o = cmds[i].opts; o && *o != HD_CLI_OPT_COUNT; o++) {
            const struct hd_cli_opt *d = &hd_cli_opts[*o];
            char flag[64];
            if (seen[*o])
                continue;
            if (!any)
                fputs("\nCommand options:\n", out);
            seen[*o] = any = 1;
            snprintf(flag, sizeof(flag), "--%s%s%s", d->name, d->has_arg ? " " : "",
                     d->has_arg ? d->arg_name : "");
            fprintf(out, "  %-20s %s\n", flag, d->help);
        }
    }
}

static void print_global_options(FILE *out);

/* Usage of one command: its line, summary, options (required ones marked). */
static void usage_cmd(FILE *out, const struct hd_cli_cmd *c, int globals)
{
    const enum hd_cli_optid *o;
    char line[512];

    cmd_line(c, line, sizeof(line));
    fprintf(out, "usage: hoard %s\n\n%s\n", line, c->summary);
    if (c->opts && *c->opts != HD_CLI_OPT_COUNT)
        fputs("\nOptions:\n", out);
    for (o = c->opts; o && *o != HD_CLI_OPT_COUNT; o++) {
        const struct hd_cli_opt *d = &hd_cli_opts[*o];
        char flag[64];
        snprintf(flag, sizeof(flag), "--%s%s%s", d->name, d->has_arg ? " " : "",
                 d->has_arg ? d->arg_name : "");
        fprintf(out, "  %-20s %s%s\n", flag, opt_in(c->req, *o) ? "(required) " : "", d->help);
    }
    if (globals)
        print_global_options(out);
    else
        fputs("\nGlobal options: see `hoard --help`.\n", out);
}

static void print_global_options(FILE *out)
{
    size_t i;

    fputs("\nGlobal options (anywhere on the line):\n", out);
    for (i = 0; i < HD_CLI_OPT_COUNT; i++) {
        const struct hd_cli_opt *d = &hd_cli_opts[i];
        char flag[64];
        if (!d->global)
            continue;
        snprintf(flag, sizeof(flag), "--%s%s%s", d->name, d->has_arg ? " " : "",
                 d->has_arg ? d->arg_name : "");
        fprintf(out, "  %-20s %s\n", flag, d->help);
    }
}

/* Usage of one noun's commands (or of all when noun is NULL). */
static void usage(FILE *out, const char *noun)
{
    fputs("usage: hoard [--endpoint URL | --profile NAME] [--json] [--access-key ID --secret-key "
          "KEY]\n"
          "             <noun> <verb> [args] [options]\n\n",
          out);
    fputs("Commands:\n", out);
    print_cmds(out, noun);
    print_cmd_options(out, noun);
    print_global_options(out);
    if (!noun) {
        fputs("\nEnvironment:\n"
              "  HOARD_ENDPOINT     default for --endpoint\n"
              "  HOARD_PROFILE      default for --profile (a profile of the config file)\n"
              "  HOARD_CONFIG       config file (default ~/.config/hoard/config)\n"
              "  AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY\n"
              "                     credentials: requests are SigV4-signed when both are set\n"
              "  AWS_REGION, AWS_DEFAULT_REGION\n"
              "                     region in the signature (default " HD_CLI_DEFAULT_REGION ")\n"
              "  HOARD_PROGRESS=1   draw progress bars even when stderr is not a terminal\n"
              "  HOARD_DEBUG=1      print libcurl's request/response trace on stderr\n"
              "\nExit codes: 0 ok, 1 server or API error (also local file errors; a job that\n"
              "  failed or had errors), 2 usage, 3 cannot reach the endpoint, 4 job wait timed\n"
              "  out, 130 interrupted. With --json a failure is one JSON line on stderr:\n"
              "  {\"error\": MESSAGE, \"code\": CODE, \"exit\": N}.\n"
              "See `hoard <noun> --help`, `hoard <noun> <verb> --help`; full reference in\n"
              "docs/cli.md.\n",
              out);
    }
}

int hd_cli_usage_error(struct hd_cli *cli, const char *fmt, ...)
{
    va_list ap;
    char msg[1024], line[512];

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (json_errors) {
        line[0] = '\0';
        if (cli && cli->cmd) {
            snprintf(line, sizeof(line), "hoard ");
            cmd_line(cli->cmd, line + 6, sizeof(line) - 6);
        }
        emit_error(HD_CLI_EXIT_USAGE, NULL, msg, line[0] ? line : NULL);
        return HD_CLI_EXIT_USAGE;
    }
    emit_error(HD_CLI_EXIT_USAGE, NULL, msg, NULL);
    fputc('\n', stderr);
    if (cli && cli->cmd)
        usage_cmd(stderr, cli->cmd, 0); /* only the verb that was meant */
    else
        usage(stderr, cli ? cli->noun : NULL);
    return HD_CLI_EXIT_USAGE;
}

static int opt_allowed(const struct hd_cli_cmd *c, enum hd_cli_optid id)
{
    const enum hd_cli_optid *o;

    if (hd_cli_opts[id].global)
        return 1;
    for (o = c ? c->opts : NULL; o && *o != HD_CLI_OPT_COUNT; o++)
        if (*o == id)
            return 1;
    return 0;
}

/* Parses argv[*i] as an option ("--name", "--name=value", "--name value", "-h").
 * Returns 1 when it was an option (consumed, *i advanced past any value), 0 when it is a
 * positional argument, or HD_CLI_EXIT_USAGE-style failure via *err. */
static int parse_opt(struct hd_cli *cli, int argc, char **argv, int *i, int *err)
{
    const char *a = argv[*i], *name, *eq;
    size_t nlen;
    int id;

    *err = 0;
    if (strcmp(a, "-h") == 0) {
        cli->opt[HD_CLI_OPT_HELP] = "";
        return 1;
    }
    if (strcmp(a, "-r") == 0)
        a = "--recursive";
    else if (strcmp(a, "-j") == 0)
        a = "--jobs";
    else if (strncmp(a, "-j", 2) == 0 && a[2] >= '0' && a[2] <= '9') { /* -j8 */
        if (!opt_allowed(cli->cmd, HD_CLI_OPT_JOBS)) {
            *err = hd_cli_usage_error(cli, "unknown option '-j'");
            return 1;
        }
        cli->opt[HD_CLI_OPT_JOBS] = a + 2;
        return 1;
    }
    if (a[0] != '-' || strcmp(a, "-") == 0)
        return 0;
    if (a[1] != '-') {
        *err = hd_cli_usage_error(cli, "unknown option '%s'", a);
        return 1;
    }
    name = a + 2;
    eq = strchr(name, '=');
    nlen = eq ? (size_t)(eq - name) : strlen(name);
    for (id = 0; id < HD_CLI_OPT_COUNT; id++)
        if (strlen(hd_cli_opts[id].name) == nlen && strncmp(hd_cli_opts[id].name, name, nlen) == 0)
            break;
    if (id == HD_CLI_OPT_COUNT || !opt_allowed(cli->cmd, (enum hd_cli_optid)id)) {
        if (cli->cmd)
            *err = hd_cli_usage_error(cli, "unknown option '--%.*s' for '%s %s'", (int)nlen, name,
                                      cli->cmd->noun, cli->cmd->verb);
        else
            *err = hd_cli_usage_error(cli, "unknown option '--%.*s'", (int)nlen, name);
        return 1;
    }
    if (!hd_cli_opts[id].has_arg) {
        if (eq) {
            *err = hd_cli_usage_error(cli, "option '--%s' takes no value", hd_cli_opts[id].name);
            return 1;
        }
        cli->opt[id] = "";
        return 1;
    }
    if (eq) {
        cli->opt[id] = eq + 1;
    } else if (*i + 1 < argc) {
        cli->opt[id] = argv[++*i];
    } else {
        *err = hd_cli_usage_error(cli, "option '--%s' needs a value", hd_cli_opts[id].name);
        return 1;
    }
    return 1;
}

static void on_signal(int sig)
{
    (void)sig;
    hd_cli_interrupted = 1;
}

/* A setting's value: the flag; else a profile named by --profile or HOARD_PROFILE; else the
 * environment variable(s); else the config file's default profile. NULL when none is set. */
static const char *pick(struct hd_cli *cli, enum hd_cli_optid id, int key, const char *var,
                        const char *var2)
{
    const struct hd_cli_config *c = cli->config;
    const char *v = id < HD_CLI_OPT_COUNT ? cli->opt[id] : NULL;

    if (v && *v)
        return v;
    if (c->chosen && c->val[key])
        return c->val[key];
    if ((v = getenv(var)) && *v)
        return v;
    if (var2 && (v = getenv(var2)) && *v)
        return v;
    return c->val[key];
}

/* Credentials: both halves or neither (then requests go unsigned). */
static int setup_cred(struct hd_cli *cli)
{
    struct hd_cli_cred *c = &cli->cred;

    c->access_key =
        pick(cli, HD_CLI_OPT_ACCESS_KEY, HD_CLI_PROF_ACCESS_KEY, "AWS_ACCESS_KEY_ID", NULL);
    c->secret_key =
        pick(cli, HD_CLI_OPT_SECRET_KEY, HD_CLI_PROF_SECRET_KEY, "AWS_SECRET_ACCESS_KEY", NULL);
    c->region = pick(cli, HD_CLI_OPT_COUNT, HD_CLI_PROF_REGION, "AWS_REGION", "AWS_DEFAULT_REGION");
    if (!c->region)
        c->region = HD_CLI_DEFAULT_REGION;
    if (!c->access_key != !c->secret_key)
        return hd_cli_usage_error(cli,
                                  "%s but no %s: give both (--access-key/--secret-key, "
                                  "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or a profile) or "
                                  "neither",
                                  c->access_key ? "access key" : "secret key",
                                  c->access_key ? "secret key" : "access key");
    return 0;
}

static int setup_env(struct hd_cli *cli)
{
    const char *ep, *p;
    char err[512];
    int rc;

    rc = hd_cli_config_load(cli->config, cli->opt[HD_CLI_OPT_CFG_PROFILE], err, sizeof(err));
    if (rc == -ENOMEM)
        return hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
    if (rc != 0)
        return hd_cli_fail(HD_CLI_EXIT_USAGE, "%s", err);
    ep = pick(cli, HD_CLI_OPT_ENDPOINT, HD_CLI_PROF_ENDPOINT, "HOARD_ENDPOINT", NULL);
    if (!ep)
        ep = HD_CLI_DEFAULT_ENDPOINT;
    rc = hd_cli_endpoint_normalize(ep, &cli->endpoint_owned);
    if (rc == -ENOMEM)
        return hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
    if (rc < 0)
        return hd_cli_usage_error(cli, "bad endpoint '%s' (want http[s]://host[:port])", ep);
    cli->endpoint = cli->endpoint_owned;
    cli->json = cli->opt[HD_CLI_OPT_JSON] != NULL;
    p = getenv("HOARD_PROGRESS");
    if (p && *p)
        cli->progress = strcmp(p, "0") != 0;
    else
        cli->progress = isatty(STDERR_FILENO);
    p = getenv("HOARD_DEBUG");
    cli->verbose = p && *p && strcmp(p, "0") != 0;
    return setup_cred(cli);
}

static int run(struct hd_cli *cli, int argc, char **argv)
{
    char **pos = NULL, *up_eq = NULL, *pr_eq = NULL;
    const char *noun = NULL, *verb = NULL;
    int npos = 0, i, err, only_pos = 0, rc;
    size_t k;

    for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--json") == 0)
            json_errors = 1; /* usage errors found while parsing are JSON too */
    pos = calloc((size_t)argc + 1, sizeof(*pos));
    if (!pos)
        return hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
    for (i = 1; i < argc; i++) {
        if (!only_pos && strcmp(argv[i], "--") == 0) {
            only_pos = 1;
            continue;
        }
        /* `bucket create s3://B --endpoint URL`: after an s3:// bucket, --endpoint names the
         * bucket's upstream (as --upstream does); before it, the hoard node */
        if (!only_pos && cli->cmd && strcmp(cli->cmd->noun, "bucket") == 0 &&
            strcmp(cli->cmd->verb, "create") == 0 && npos > 0 && strncmp(pos[0], "s3://", 5) == 0) {
            if (strcmp(argv[i], "--endpoint") == 0)
                argv[i] = (char *)"--upstream";
            else if (strncmp(argv[i], "--endpoint=", 11) == 0 && !up_eq &&
                     (up_eq = malloc(strlen(argv[i]) + 1))) {
                snprintf(up_eq, strlen(argv[i]) + 1, "--upstream=%s", argv[i] + 11);
                argv[i] = up_eq;
            } else if (strcmp(argv[i], "--profile") == 0) { /* the upstream's, as before */
                argv[i] = (char *)"--upstream-profile";
            } else if (strncmp(argv[i], "--profile=", 10) == 0 && !pr_eq &&
                       (pr_eq = malloc(strlen(argv[i]) + 10))) {
                snprintf(pr_eq, strlen(argv[i]) + 10, "--upstream-profile=%s", argv[i] + 10);
                argv[i] = pr_eq;
            }
        }
        if (!only_pos && parse_opt(cli, argc, argv, &i, &err)) {
            if (err) {
                rc = err;
                goto out;
            }
            continue;
        }
        if (!noun) {
            noun = argv[i];
            if (noun_known(noun))
                cli->noun = noun;       /* usage errors from here on show this noun's commands */
            for (k = 0; k < NCMDS; k++) /* a command that is its noun alone */
                if (strcmp(cmds[k].noun, noun) == 0 && !*cmds[k].verb) {
                    cli->cmd = &cmds[k];
                    verb = "";
                }
        } else if (!verb && strcmp(noun, "help") != 0) {
            verb = argv[i];
        } else {
            pos[npos++] = argv[i];
        }
        /* Once the command is known, its own options become acceptable. */
        if (noun && verb && !cli->cmd) {
            for (k = 0; k < NCMDS; k++)
                if (strcmp(cmds[k].noun, noun) == 0 && strcmp(cmds[k].verb, verb) == 0)
                    cli->cmd = &cmds[k];
            if (!cli->cmd && cli->noun && !cli->opt[HD_CLI_OPT_HELP]) {
                rc = hd_cli_usage_error(cli, "unknown command '%s %s'", noun, verb);
                goto out;
            }
        }
    }

    if (cli->opt[HD_CLI_OPT_VERSION]) {
        printf("hoard %s (%s)\n", HD_CLI_VERSION, curl_version());
        rc = HD_CLI_EXIT_OK;
        goto out;
    }
    if (!noun) {
        if (cli->opt[HD_CLI_OPT_HELP]) {
            usage(stdout, NULL);
            rc = HD_CLI_EXIT_OK;
        } else {
            rc = hd_cli_usage_error(cli, "missing command");
        }
        goto out;
    }
    if (strcmp(noun, "help") == 0) {
        const char *topic = npos > 0 ? pos[0] : NULL;
        if (topic && !noun_known(topic)) {
            rc = hd_cli_usage_error(cli, "no such noun '%s'", topic);
            goto out;
        }
        if (topic && npos > 1) { /* hoard help object put */
            for (k = 0; k < NCMDS; k++)
                if (strcmp(cmds[k].noun, topic) == 0 && strcmp(cmds[k].verb, pos[1]) == 0) {
                    usage_cmd(stdout, &cmds[k], 1);
                    rc = HD_CLI_EXIT_OK;
                    goto out;
                }
            cli->noun = topic;
            rc = hd_cli_usage_error(cli, "unknown command '%s %s'", topic, pos[1]);
            goto out;
        }
        usage(stdout, topic);
        rc = HD_CLI_EXIT_OK;
        goto out;
    }
    if (!noun_known(noun)) {
        rc = hd_cli_usage_error(cli, "unknown command '%s'", noun);
        goto out;
    }
    if (cli->opt[HD_CLI_OPT_HELP]) {
        if (cli->cmd)
            usage_cmd(stdout, cli->cmd, 1); /* hoard object put --help */
        else
            usage(stdout, noun);
        rc = HD_CLI_EXIT_OK;
        goto out;
    }
    if (!cli->cmd) {
        rc = verb ? hd_cli_usage_error(cli, "unknown command '%s %s'", noun, verb)
                  : hd_cli_usage_error(cli, "missing verb for '%s'", noun);
        goto out;
    }
    if (npos < cli->cmd->min_args || npos > cli->cmd->max_args) {
        rc = hd_cli_usage_error(cli, "'%s %s' takes %s%s", noun, verb,
                                *cli->cmd->args ? "arguments " : "no arguments", cli->cmd->args);
        goto out;
    }
    rc = setup_env(cli);
    if (rc != 0)
        goto out;
    rc = cli->cmd->run(cli, npos, pos);
out:
    free(pos);
    free(up_eq);
    free(pr_eq);
    return rc;
}

int main(int argc, char **argv)
{
    struct hd_cli_config cfg;
    struct hd_cli cli;
    struct sigaction sa;
    int rc;

    memset(&cli, 0, sizeof(cli));
    memset(&cfg, 0, sizeof(cfg));
    cli.config = &cfg;
    /* Character classes only (table column widths); numbers and messages stay in "C". */
    if (!setlocale(LC_CTYPE, "") || strcmp(nl_langinfo(CODESET), "UTF-8") != 0)
        setlocale(LC_CTYPE, "C.UTF-8");
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
        return hd_cli_fail(HD_CLI_EXIT_API, "libcurl initialisation failed");

    rc = run(&cli, argc, argv);

    hd_cli_http_free(cli.http);
    free(cli.endpoint_owned);
    hd_cli_config_cleanup(&cfg);
    curl_global_cleanup();
    if (fflush(stdout) != 0 || ferror(stdout)) {
        if (rc == HD_CLI_EXIT_OK)
            rc = hd_cli_fail(HD_CLI_EXIT_API, "writing output: %s", strerror(errno));
    }
    return rc;
}
