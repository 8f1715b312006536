/* cmd_shard: `hoard shard create|ls-members` and `hoard batch get`. A shard job is started
 * on the endpoint (a proxy), then watched until it ends with a progress line; Ctrl-C stops
 * it. A batch is streamed to FILE.tmp and renamed over FILE only once the whole tar arrived. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "tools/hoard/cli.h"
#include "tools/hoard/cli_fmt.h"
#include "tools/hoard/cli_http.h"

#define POLL_MS 500
#define LIST_MAX (64u << 20)

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* METHOD path with an optional JSON body; a 2xx JSON answer goes to *out (may be NULL).
 * Returns 0 or the exit code after reporting. */
static int json_call(struct hd_cli *cli, const char *what, const char *method, const char *path,
                     const json_t *body, json_t **out)
{
    struct hd_cli_req rq = {.method = method, .path = path};
    struct hd_cli_resp rs;
    char *text = NULL;
    FILE *f = NULL;
    int rc;

    if (out)
        *out = NULL;
    hd_cli_resp_init(&rs);
    if (body) {
        text = json_dumps(body, JSON_COMPACT);
        f = text ? fmemopen(text, strlen(text), "r") : NULL;
        if (!f) {
            rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
            goto out;
        }
        rq.upload = f;
        rq.upload_size = (int64_t)strlen(text);
        rq.content_type = "application/json";
    }
    rc = hd_cli_http_do(cli, &rq, &rs);
    if (rc != 0 || rs.status >= 300) {
        rc = hd_cli_report(cli, what, rc, &rs);
        goto out;
    }
    if (out) {
        *out = json_loadb(rs.body.data ? rs.body.data : "", rs.body.len, 0, NULL);
        if (!*out)
            rc = hd_cli_fail(HD_CLI_EXIT_API, "%s: the server's answer is not JSON", what);
    }
out:
    if (f)
        fclose(f);
    free(text);
    hd_cli_resp_cleanup(&rs);
    return rc;
}

static json_int_t jint(const json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

/* ---- shard create ---------------------------------------------------------------------- */

/* Object names of FILE, one a line (blank lines and lines starting with '#' skipped). */
static int read_list(struct hd_cli *cli, const char *file, json_t *arr)
{
    FILE *f = strcmp(file, "-") == 0 ? stdin : fopen(file, "r");
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;

    if (!f)
        return hd_cli_fail(HD_CLI_EXIT_API, "cannot open %s: %s", file, strerror(errno));
    while ((n = getline(&line, &cap, f)) >= 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (n == 0 || line[0] == '#')
            continue;
        if (json_array_append_new(arr, json_string(line)) < 0) {
            rc = hd_cli_fail(HD_CLI_EXIT_API, "%s: a line is not valid UTF-8: %.80s", file, line);
            break;
        }
    }
    if (rc == 0 && ferror(f))
        rc = hd_cli_fail(HD_CLI_EXIT_API, "reading %s: %s", file, strerror(errno));
    if (rc == 0 && json_array_size(arr) == 0)
        rc = hd_cli_usage_error(cli, "%s names no objects", file);
    free(line);
    if (f != stdin)
        fclose(f);
    return rc;
}

/* The job's progress; the totals come from the plan the create answer carried (objects,
 * bytes, shards), known before any target reports: the merged job view only adds a target's
 * share once it has reported, so its totals would grow during the first polls. */
static void progress_line(const json_t *j, const json_t *plan, double secs, int final)
{
    const json_t *st = json_object_get(j, "stats");
    char done[32], total[32], rate[32];
    json_int_t objs = jint(j, "objects"), tobjs = jint(plan, "objects");
    json_int_t tbytes = jint(plan, "bytes"), tshards = jint(plan, "shards");
    json_int_t tar = jint(st, "tar_bytes_written");

    if (tobjs <= 0)
        tobjs = jint(j, "total_objects");
    if (tbytes <= 0)
        tbytes = jint(j, "total_bytes");
    if (tshards <= 0)
        tshards = jint(st, "shards_total");
    hd_cli_fmt_size((uint64_t)jint(j, "bytes"), done, sizeof(done));
    hd_cli_fmt_size((uint64_t)tbytes, total, sizeof(total));
    hd_cli_fmt_size(secs > 0 ? (uint64_t)((double)tar / secs) : 0, rate, sizeof(rate));
    fprintf(stderr,
            "\rshard %s: %lld/%lld objects (%s / %s), %lld samples, %lld/%lld shards, "
            "%s/s %s",
            json_string_value(json_object_get(j, "id")), (long long)objs, (long long)tobjs, done,
            total, (long long)jint(st, "samples_done"),
            (long long)(jint(st, "shards_done") + jint(st, "shards_skipped")), (long long)tshards,
            rate, final ? "\n" : "");
    fflush(stderr);
}

static int watch(struct hd_cli *cli, const char *id, const json_t *started, const char *out)
{
    struct hd_buf path;
    json_t *j = NULL, *errs;
    const char *state = "running";
    double t0 = now_s();
    size_t i;
    int rc;

    hd_buf_init(&path);
    hd_buf_puts(&path, "/v1/jobs/");
    hd_cli_path_encode(&path, id, 0);
    if (path.oom)
        return hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
    for (;;) {
        struct timespec ts = {0, POLL_MS * 1000000L};
        if (hd_cli_interrupted) {
            hd_cli_interrupted = 0; /* let the stop request through */
            json_call(cli, "stopping the shard job", "DELETE", path.data, NULL, NULL);
            fprintf(stderr, "%shoard: interrupted: shard job %s asked to stop\n",
                    cli->progress ? "\n" : "", id);
            rc = HD_CLI_EXIT_INTR;
            goto out;
        }
        json_decref(j);
        if ((rc = json_call(cli, "shard job status", "GET", path.data, NULL, &j)) != 0)
            goto out;
        state = json_string_value(json_object_get(j, "state"));
        if (!state)
            state = "?";
        if (strcmp(state, "running") != 0)
            break;
        if (cli->progress)
            progress_line(j, started, now_s() - t0, 0);
        nanosleep(&ts, NULL);
    }
    if (cli->progress)
        progress_line(j, started, now_s() - t0, 1);
    if (cli->json) {
        json_object_set(j, "created", (json_t *)started);
        rc = hd_cli_print_json(j);
    } else if (strcmp(state, "done") == 0) {
        const json_t *st = json_object_get(j, "stats");
        char size[32];
        hd_cli_fmt_size((uint64_t)jint(j, "bytes"), size, sizeof(size));
        printf("sharded %lld objects (%lld samples, %s) into %lld shards in %s in %.1f s "
               "(%lld already there); manifest %s/%s\n",
               (long long)jint(j, "objects"), (long long)jint(st, "samples_done"), size,
               (long long)jint(st, "shards_total"), out, now_s() - t0,
               (long long)jint(st, "shards_skipped"), out,
               json_string_value(json_object_get(started, "manifest")));
    }
    if (strcmp(state, "done") != 0) {
        errs = json_object_get(j, "errors");
        for (i = 0; i < json_array_size(errs) && i < 10; i++)
            fprintf(stderr, "hoard: shard job %s: %s\n", id,
                    json_string_value(json_array_get(errs, i)));
        rc = hd_cli_fail(HD_CLI_EXIT_API, "shard job %s %s%s%s", id, state,
                         json_string_value(json_object_get(j, "result")) ? ": " : "",
                         json_string_value(json_object_get(j, "result"))
                             ? json_string_value(json_object_get(j, "result"))
                             : "");
    }
out:
    json_decref(j);
    hd_buf_cleanup(&path);
    return rc;
}

int hd_cli_shard_create(struct hd_cli *cli, int argc, char **argv)
{
    const char *tmpl = cli->opt[HD_CLI_OPT_TEMPLATE], *size_s = cli->opt[HD_CLI_OPT_SIZE];
    const char *out = argv[1];
    char *bucket = NULL, *prefix = NULL;
    json_t *body = NULL, *args = NULL, *res = NULL, *list = NULL;
    uint64_t size, seed;
    int rc;

    if (!tmpl || !*tmpl)
        return hd_cli_usage_error(cli, "--template is required (e.g. 'train-{000000..}.tar')");
    if (!size_s || hd_cli_parse_size(size_s, 1ull << 40, &size) < 0)
        return hd_cli_usage_error(cli, "--size is required: a size like 256MiB (at most 1TiB)");
    if (!*out || strchr(out, '/'))
        return hd_cli_usage_error(cli, "bad output bucket '%s'", out);
    rc = hd_cli_path_split(argv[0], &bucket, &prefix);
    if (rc < 0) {
        rc = hd_cli_usage_error(cli, "bad input '%s': want BUCKET[/PREFIX]", argv[0]);
        goto out;
    }
    args = json_pack("{s:s, s:s, s:I}", "output_bucket", out, "template", tmpl, "shard_size",
                     (json_int_t)size);
    if (!args) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
        goto out;
    }
    if (*prefix)
        json_object_set_new(args, "prefix", json_string(prefix));
    if (cli->opt[HD_CLI_OPT_SEED]) {
        if (hd_cli_parse_count(cli->opt[HD_CLI_OPT_SEED], 0, INT64_MAX, &seed) < 0) {
            rc = hd_cli_usage_error(cli, "--seed must be a non-negative integer");
            goto out;
        }
        json_object_set_new(args, "seed", json_integer((json_int_t)seed));
    }
    if (cli->opt[HD_CLI_OPT_KEY_RULE])
        json_object_set_new(args, "key_rule", json_string(cli->opt[HD_CLI_OPT_KEY_RULE]));
    if (cli->opt[HD_CLI_OPT_GZIP])
        json_object_set_new(args, "gzip", json_true());
    if (cli->opt[HD_CLI_OPT_FORMAT]) /* checked by the proxy: 400 names the formats */
        json_object_set_new(args, "format", json_string(cli->opt[HD_CLI_OPT_FORMAT]));
    if (cli->opt[HD_CLI_OPT_RANGE])
        json_object_set_new(args, "range", json_string(cli->opt[HD_CLI_OPT_RANGE]));
    if (cli->opt[HD_CLI_OPT_MANIFEST])
        json_object_set_new(args, "manifest", json_string(cli->opt[HD_CLI_OPT_MANIFEST]));
    if (cli->opt[HD_CLI_OPT_LIST]) {
        list = json_array();
        if ((rc = read_list(cli, cli->opt[HD_CLI_OPT_LIST], list)) != 0)
            goto out;
        json_object_set(args, "list", list);
    }
    body = json_pack("{s:s, s:s, s:O}", "kind", "shard", "bucket", bucket, "args", args);
    if (body && cli->opt[HD_CLI_OPT_ID])
        json_object_set_new(body, "id", json_string(cli->opt[HD_CLI_OPT_ID]));
    if (!body) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
        goto out;
    }
    if ((rc = json_call(cli, "shard create", "POST", "/v1/jobs", body, &res)) != 0)
        goto out;
    if (!json_string_value(json_object_get(res, "id"))) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "shard create: the answer has no job id");
        goto out;
    }
    if (cli->opt[HD_CLI_OPT_NO_WAIT]) {
        if (cli->json)
            rc = hd_cli_print_json(res);
        else
            printf("%s\n", json_string_value(json_object_get(res, "id")));
        goto out;
    }
    if (!cli->json && !cli->progress)
        fprintf(stderr, "shard job %s: %lld objects, %lld samples -> %lld shards\n",
                json_string_value(json_object_get(res, "id")), (long long)jint(res, "objects"),
                (long long)jint(res, "samples"), (long long)jint(res, "shards"));
    rc = watch(cli, json_string_value(json_object_get(res, "id")), res, out);
out:
    json_decref(res);
    json_decref(body);
    json_decref(args);
    json_decref(list);
    free(bucket);
    free(prefix);
    return rc;
}

/* ---- shard ls-members ------------------------------------------------------------------ */

int hd_cli_shard_members(struct hd_cli *cli, int argc, char **argv)
{
    static const char *const headers[] = {"SIZE", "OFFSET", "NAME"};
    char *bucket = NULL, *name = NULL, what[300];
    struct hd_cli_table tb;
    struct hd_buf path;
    json_t *j = NULL, *e;
    size_t i;
    int rc;

    hd_buf_init(&path);
    hd_cli_table_init(&tb, 3, headers, 3);
    if (hd_cli_path_split(argv[0], &bucket, &name) < 0 || !*name) {
        rc = hd_cli_usage_error(cli, "bad path '%s': want BUCKET/OBJECT", argv[0]);
        goto out;
    }
    hd_buf_puts(&path, "/v1/objects/");
    hd_cli_path_encode(&path, bucket, 0);
    hd_buf_puts(&path, "/");
    hd_cli_path_encode(&path, name, 1);
    hd_buf_puts(&path, "?members");
    snprintf(what, sizeof(what), "shard ls-members %s/%s", bucket, name);
    if (path.oom) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
        goto out;
    }
    if ((rc = json_call(cli, what, "GET", path.data, NULL, &j)) != 0)
        goto out;
    if (cli->json) {
        rc = hd_cli_print_json(j);
        goto out;
    }
    json_array_foreach(json_object_get(j, "members"), i, e)
    {
        char sz[24], off[24];
        const char *row[3] = {sz, off, json_string_value(json_object_get(e, "name"))};
        snprintf(sz, sizeof(sz), "%lld", (long long)jint(e, "size"));
        if (json_object_get(e, "offset"))
            snprintf(off, sizeof(off), "%lld", (long long)jint(e, "offset"));
        else /* a compressed archive's member has no byte range */
            snprintf(off, sizeof(off), "-");
        if (!row[2])
            row[2] = "?";
        hd_cli_table_add(&tb, row);
    }
    if (hd_cli_table_print(&tb, stdout) < 0) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
        goto out;
    }
    printf("%lld members\n", (long long)jint(j, "count"));
out:
    hd_cli_table_cleanup(&tb);
    json_decref(j);
    hd_buf_cleanup(&path);
    free(bucket);
    free(name);
    return rc;
}

/* ---- batch get ------------------------------------------------------------------------- */

/* The batch body from LIST: lines "B/O" or "B/O<TAB>MEMBER"; a file starting with '{' is
 * sent as it is (the JSON body itself). */
static int batch_body(struct hd_cli *cli, const char *file, char **text)
{
    FILE *f = strcmp(file, "-") == 0 ? stdin : fopen(file, "r");
    json_t *ents = json_array(), *body = NULL;
    struct hd_buf all;
    char buf[65536], *line, *save = NULL;
    size_t n, lineno = 0;
    int rc = 0;

    *text = NULL;
    hd_buf_init(&all);
    if (!f) {
        json_decref(ents);
        return hd_cli_fail(HD_CLI_EXIT_API, "cannot open %s: %s", file, strerror(errno));
    }
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0 && all.len <= LIST_MAX)
        hd_buf_append(&all, buf, n);
    if (ferror(f) || all.oom || all.len > LIST_MAX) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "reading %s: %s", file,
                         ferror(f) ? strerror(errno) : "too large");
        goto out;
    }
    if (all.len && all.data[strspn(all.data, " \t\r\n")] == '{') {
        *text = hd_buf_steal(&all, NULL); /* a JSON body as is */
        goto out;
    }
    for (line = all.data ? strtok_r(all.data, "\n", &save) : NULL; line && rc == 0;
         line = strtok_r(NULL, "\n", &save)) {
        char *tab, *b = NULL, *o = NULL;
        json_t *e;
        lineno++;
        line[strcspn(line, "\r")] = '\0';
        if (!*line || *line == '#')
            continue;
        tab = strchr(line, '\t');
        if (tab)
            *tab++ = '\0';
        if (hd_cli_path_split(line, &b, &o) < 0 || !*o) {
            rc = hd_cli_usage_error(cli, "%s:%zu: want BUCKET/OBJECT[<TAB>MEMBER]", file, lineno);
        } else {
            e = json_pack("{s:s, s:s}", "bucket", b, "name", o);
            if (e && tab && *tab)
                json_object_set_new(e, "archpath", json_string(tab));
            if (!e || json_array_append_new(ents, e) < 0)
                rc = hd_cli_fail(HD_CLI_EXIT_API, "%s:%zu: not valid UTF-8", file, lineno);
        }
        free(b);
        free(o);
    }
    if (rc == 0 && json_array_size(ents) == 0)
        rc = hd_cli_usage_error(cli, "%s names no objects", file);
    if (rc == 0) {
        body = json_pack("{s:O, s:b}", "entries", ents, "continue_on_error",
                         cli->opt[HD_CLI_OPT_CONTINUE] != NULL);
        if (body && cli->opt[HD_CLI_OPT_FORMAT])
            json_object_set_new(body, "format", json_string(cli->opt[HD_CLI_OPT_FORMAT]));
        *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        if (!*text)
            rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
    }
out:
    json_decref(body);
    json_decref(ents);
    hd_buf_cleanup(&all);
    if (f != stdin)
        fclose(f);
    return rc;
}

/* A fail-fast batch whose tar stream broke off after the 200: the server stops at the first
 * entry it cannot read, and a stream cannot carry an error status. Asks for each entry in
 * turn (bodies discarded at once) and reports the first that fails, by number and name, as
 * the server error it is. 0 when every entry reads (the break was the network's). */
#define BATCH_PROBE_MAX 10000
static int batch_find_missing(struct hd_cli *cli, const char *text)
{
    json_t *body = json_loads(text, 0, NULL), *e;
    struct hd_cli_req rq = {.method = "GET", .discard_success = 1};
    struct hd_cli_resp rs;
    struct hd_buf path, what;
    size_t i;
    int rc = 0;

    hd_cli_resp_init(&rs);
    hd_buf_init(&path);
    hd_buf_init(&what);
    json_array_foreach(json_object_get(body, "entries"), i, e)
    {
        const char *b = json_string_value(json_object_get(e, "bucket"));
        const char *o = json_string_value(json_object_get(e, "name"));
        const char *m = json_string_value(json_object_get(e, "archpath"));
        if (!b || !o || i >= BATCH_PROBE_MAX || hd_cli_interrupted)
            break;
        hd_buf_reset(&path);
        hd_buf_reset(&what);
        hd_buf_puts(&path, "/v1/objects/");
        hd_cli_path_encode(&path, b, 0);
        hd_buf_puts(&path, "/");
        hd_cli_path_encode(&path, o, 1);
        if (m)
            hd_cli_query_add(&path, "archpath", m);
        hd_buf_printf(&what, "batch get: entry %zu (%s/%s%s%s)", i + 1, b, o, m ? " member " : "",
                      m ? m : "");
        if (path.oom || what.oom)
            break;
        rq.path = path.data;
        if (hd_cli_http_do(cli, &rq, &rs) == 0 && rs.status >= 300) {
            rc = hd_cli_report(cli, what.data, 0, &rs);
            break;
        }
    }
    json_decref(body);
    hd_buf_cleanup(&what);
    hd_buf_cleanup(&path);
    hd_cli_resp_cleanup(&rs);
    return rc;
}

int hd_cli_batch_get(struct hd_cli *cli, int argc, char **argv)
{
    const char *dest = argv[1];
    int to_stdout = strcmp(dest, "-") == 0;
    struct hd_cli_req rq = {.method = "POST", .path = "/v1/batch"};
    struct hd_cli_resp rs;
    struct hd_buf tmp;
    char *text = NULL, size[32];
    FILE *in = NULL, *out = NULL;
    struct stat st;
    int rc, fd;

    hd_cli_resp_init(&rs);
    hd_buf_init(&tmp);
    if ((rc = batch_body(cli, argv[0], &text)) != 0)
        goto out;
    if (!(in = fmemopen(text, strlen(text), "r"))) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
        goto out;
    }
    if (to_stdout) {
        out = stdout;
    } else {
        hd_buf_printf(&tmp, "%s.tmp", dest);
        fd = tmp.oom ? -1
                     : open(tmp.data, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 || !(out = fdopen(fd, "wb"))) {
            rc = hd_cli_fail(HD_CLI_EXIT_API, "batch get: cannot create %s: %s",
                             tmp.data ? tmp.data : dest, strerror(errno));
            if (fd >= 0) {
                close(fd);
                unlink(tmp.data);
            }
            hd_buf_reset(&tmp);
            goto out;
        }
    }
    rq.upload = in;
    rq.upload_size = (int64_t)strlen(text);
    rq.content_type = "application/json";
    rq.download = out;
    rc = hd_cli_http_do(cli, &rq, &rs);
    if (rc == HD_CLI_ECURL && rs.status >= 200 && rs.status < 300 &&
        !cli->opt[HD_CLI_OPT_CONTINUE]) {
        int found = batch_find_missing(cli, text);
        if (found != 0) {
            rc = found; /* the entry that stopped the stream, named */
            goto out;
        }
    }
    if (rc != 0 || rs.status >= 300) {
        rc = hd_cli_report(cli, "batch get", rc, &rs);
        goto out;
    }
    if (fflush(out) != 0 || ferror(out)) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "batch get: writing %s: %s", dest, strerror(errno));
        goto out;
    }
    if (to_stdout)
        goto out;
    if (fstat(fileno(out), &st) != 0)
        st.st_size = 0;
    rc = fclose(out);
    out = NULL;
    if (rc != 0 || rename(tmp.data, dest) != 0) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "batch get: writing %s: %s", dest, strerror(errno));
        goto out;
    }
    hd_buf_reset(&tmp);
    hd_cli_fmt_size((uint64_t)st.st_size, size, sizeof(size));
    if (cli->json) {
        json_t *j = json_pack("{s:s, s:I, s:s?}", "file", dest, "size", (json_int_t)st.st_size,
                              "entries", hd_cli_resp_header(&rs, "X-Hoard-Batch-Entries"));
        rc = hd_cli_print_json(j);
        json_decref(j);
    } else {
        printf("wrote %s entries (%s) to %s\n",
               hd_cli_resp_header(&rs, "X-Hoard-Batch-Entries")
                   ? hd_cli_resp_header(&rs, "X-Hoard-Batch-Entries")
                   : "?",
               size, dest);
    }
out:
    if (out && out != stdout)
        fclose(out);
    if (tmp.len > 0)
        unlink(tmp.data); /* an incomplete batch leaves nothing behind */
    if (in)
        fclose(in);
    free(text);
    hd_buf_cleanup(&tmp);
    hd_cli_resp_cleanup(&rs);
    return rc;
}
