/* cmd_job: `hoard job ls|show|wait|stop` over a proxy's merged view of cluster jobs
 * (GET /v1/jobs[/ID], DELETE /v1/jobs/ID; proxy/jobs/jobs.c merges the targets' states). `job wait`
 * polls until the job has finished everywhere, drawing progress on stderr. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "common/json.h"
#include "tools/hoard/cli.h"
#include "tools/hoard/cli_fmt.h"
#include "tools/hoard/cli_http.h"

#define WAIT_POLL_MS 500 /* how often job wait asks */
#define WAIT_LINE_S 5.0  /* a plain progress line this often when not drawing in place */
#define WAIT_MAX_S 31536000ull

static uint64_t u64(const json_t *o, const char *k)
{
    json_int_t v = json_integer_value(json_object_get(o, k));

    return v > 0 ? (uint64_t)v : 0;
}

static const char *str_or(const json_t *o, const char *k, const char *dflt)
{
    const char *s = json_string_value(json_object_get(o, k));

    return s && *s ? s : dflt;
}

static int64_t wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static double mono_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ISO 8601 of a "..._ms" field; "-" when 0. */
static void time_cell(const json_t *job, const char *k, char out[32])
{
    uint64_t ms = u64(job, k);

    if (ms == 0)
        snprintf(out, 32, "-");
    else
        hd_iso8601((time_t)(ms / 1000), out);
}

/* How long the job ran (until now while it runs). */
static uint64_t took_ms(const json_t *job)
{
    uint64_t s = u64(job, "started_ms"), f = u64(job, "finished_ms");
    int64_t now = wall_ms();

    if (!s)
        return 0;
    if (!f)
        return now > (int64_t)s ? (uint64_t)now - s : 0;
    return f > s ? f - s : 0;
}

static void objects_cell(const json_t *job, char *out, size_t len)
{
    if (u64(job, "total_objects"))
        snprintf(out, len, "%llu/%llu", (unsigned long long)u64(job, "objects"),
                 (unsigned long long)u64(job, "total_objects"));
    else
        snprintf(out, len, "%llu", (unsigned long long)u64(job, "objects"));
}

static int running(const json_t *job)
{
    return strcmp(str_or(job, "state", ""), "running") == 0;
}

/* "/v1/jobs/ID" and "job VERB ID". */
static int job_paths(struct hd_cli *cli, const char *id, const char *verb, struct hd_buf *path,
                     struct hd_buf *what)
{
    if (!*id)
        return hd_cli_usage_error(cli, "empty job ID");
    hd_buf_puts(path, "/v1/jobs/");
    hd_cli_path_encode(path, id, 0);
    hd_buf_printf(what, "job %s %s", verb, id);
    if (path->oom || what->oom)
        return hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
    return 0;
}

/* ---- ls ------------------------------------------------------------------------------- */

static int newest_first(const void *a, const void *b)
{
    uint64_t x = u64(*(json_t *const *)a, "started_ms"), y = u64(*(json_t *const *)b, "started_ms");

    return x < y ? 1 : x > y ? -1 : 0;
}

int hd_cli_job_ls(struct hd_cli *cli, int argc, char **argv)
{
    static const char *const headers[] = {"ID",   "KIND",    "STATE", "STARTED",
                                          "TOOK", "OBJECTS", "BYTES", "ERRORS"};
    struct hd_cli_table t;
    json_t *doc = NULL, *arr, **v = NULL;
    size_t i, n;
    int rc;

    hd_cli_table_init(&t, 8, headers, 0xf0u);
    rc = hd_cli_json_do(cli, "GET", "/v1/jobs", NULL, "job ls", &doc);
    if (rc != HD_CLI_EXIT_OK)
        goto out;
    arr = json_object_get(doc, "jobs");
    if (!json_is_array(arr)) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "job ls: unexpected response from %s: no \"jobs\" array",
                         cli->endpoint);
        goto out;
    }
    if (cli->json) {
        rc = hd_cli_print_json(doc);
        goto out;
    }
    n = json_array_size(arr);
    v = calloc(n ? n : 1, sizeof(*v));
    if (!v) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
        goto out;
    }
    for (i = 0; i < n; i++)
        v[i] = json_array_get(arr, i);
    qsort(v, n, sizeof(*v), newest_first);
    for (i = 0; i < n; i++) {
        char started[32], took[32], objs[48], bytes[32], errs[24];
        const char *row[8];
        time_cell(v[i], "started_ms", started);
        hd_cli_fmt_duration(took_ms(v[i]), took, sizeof(took));
        objects_cell(v[i], objs, sizeof(objs));
        hd_cli_fmt_size(u64(v[i], "bytes"), bytes, sizeof(bytes));
        snprintf(errs, sizeof(errs), "%llu", (unsigned long long)u64(v[i], "error_count"));
        row[0] = str_or(v[i], "id", "?");
        row[1] = str_or(v[i], "kind", "?");
        row[2] = str_or(v[i], "state", "?");
        row[3] = started;
        row[4] = took;
        row[5] = objs;
        row[6] = bytes;
        row[7] = errs;
        hd_cli_table_add(&t, row);
    }
    rc = hd_cli_table_print(&t, stdout) < 0 ? hd_cli_fail(HD_CLI_EXIT_API, "out of memory")
                                            : HD_CLI_EXIT_OK;
out:
    free(v);
    hd_cli_table_cleanup(&t);
    json_decref(doc);
    return rc;
}

/* ---- show ----------------------------------------------------------------------------- */

/* "k=v, k=v" of the job's kind-specific counters. */
static void stats_line(const json_t *job, struct hd_buf *b)
{
    const char *k;
    json_t *v;

    json_object_foreach(json_object_get(job, "stats"), k, v)
    { /* "already_cached": "already cached 3" */
        size_t i, n = strlen(k);
        hd_buf_puts(b, b->len ? ", " : "");
        for (i = 0; i < n; i++)
            hd_buf_append(b, k[i] == '_' ? " " : &k[i], 1);
        hd_buf_printf(b, " %lld", (long long)json_integer_value(v));
    }
}

static void print_targets(const json_t *job)
{
    static const char *const headers[] = {"TARGET", "STATE",  "OBJECTS",
                                          "BYTES",  "ERRORS", "RESULT"};
    json_t *targets = json_object_get(job, "targets"), *tj;
    struct hd_cli_table t;
    const char *node;

    if (!json_object_size(targets))
        return;
    hd_cli_table_init(&t, 6, headers, 0x1cu);
    json_object_foreach(targets, node, tj)
    {
        char objs[48], bytes[32], errs[24];
        const char *row[6];
        objects_cell(tj, objs, sizeof(objs));
        hd_cli_fmt_size(u64(tj, "bytes"), bytes, sizeof(bytes));
        snprintf(errs, sizeof(errs), "%llu", (unsigned long long)u64(tj, "error_count"));
        row[0] = node;
        row[1] = str_or(tj, "state", "?");
        row[2] = objs;
        row[3] = bytes;
        row[4] = errs;
        row[5] = str_or(tj, "result", "-");
        hd_cli_table_add(&t, row);
    }
    putchar('\n');
    hd_cli_table_print(&t, stdout);
    hd_cli_table_cleanup(&t);
}

static void print_job(const json_t *job)
{
    char started[32], finished[32], took[32], line[256];
    struct hd_buf stats;
    json_t *e;
    size_t i;

    time_cell(job, "started_ms", started);
    time_cell(job, "finished_ms", finished);
    hd_cli_fmt_duration(took_ms(job), took, sizeof(took));
    hd_cli_fmt_job_progress(line, sizeof(line), u64(job, "objects"), u64(job, "total_objects"),
                            u64(job, "bytes"), u64(job, "total_bytes"),
                            (double)took_ms(job) / 1000.0);
    hd_buf_init(&stats);
    stats_line(job, &stats);
    printf("id         %s\n", str_or(job, "id", "?"));
    printf("kind       %s\n", str_or(job, "kind", "?"));
    if (*str_or(job, "bucket", ""))
        printf("bucket     %s\n", str_or(job, "bucket", ""));
    printf("state      %s\n", str_or(job, "state", "?"));
    printf("started    %s\n", started);
    if (running(job))
        printf("running    %s\n", took);
    else
        printf("finished   %s (took %s)\n", finished, took);
    printf("progress   %s\n", line);
    printf("targets    %llu\n", (unsigned long long)u64(job, "nodes"));
    printf("errors     %llu\n", (unsigned long long)u64(job, "error_count"));
    if (stats.len)
        printf("stats      %s\n", stats.data);
    hd_buf_cleanup(&stats);
    print_targets(job);
    if (json_array_size(json_object_get(job, "errors"))) {
        printf("\nErrors%s:\n",
               u64(job, "error_count") > json_array_size(json_object_get(job, "errors"))
                   ? " (the first ones)"
                   : "");
        json_array_foreach(json_object_get(job, "errors"), i, e)
            printf("  %s\n", json_string_value(e));
    }
}

/* show and stop: one call to /v1/jobs/ID answered with the merged job. */
static int job_call(struct hd_cli *cli, const char *id, const char *verb, const char *method,
                    json_t **job)
{
    struct hd_buf path, what;
    int rc;

    *job = NULL;
    hd_buf_init(&path);
    hd_buf_init(&what);
    if ((rc = job_paths(cli, id, verb, &path, &what)) == 0)
        rc = hd_cli_json_do(cli, method, path.data, NULL, what.data, job);
    hd_buf_cleanup(&what);
    hd_buf_cleanup(&path);
    return rc;
}

int hd_cli_job_show(struct hd_cli *cli, int argc, char **argv)
{
    json_t *job;
    int rc = job_call(cli, argv[0], "show", "GET", &job);

    if (rc == HD_CLI_EXIT_OK && cli->json)
        rc = hd_cli_print_json(job);
    else if (rc == HD_CLI_EXIT_OK)
        print_job(job);
    json_decref(job);
    return rc;
}

/* ---- stop ----------------------------------------------------------------------------- */

int hd_cli_job_stop(struct hd_cli *cli, int argc, char **argv)
{
    json_t *job;
    int rc = job_call(cli, argv[0], "stop", "DELETE", &job);

    if (rc == HD_CLI_EXIT_OK && cli->json)
        rc = hd_cli_print_json(job);
    else if (rc == HD_CLI_EXIT_OK && running(job))
        printf("stopping %s: every target was asked to stop it (hoard job wait %s)\n", argv[0],
               argv[0]);
    else if (rc == HD_CLI_EXIT_OK)
        printf("%s is not running (%s)\n", argv[0], str_or(job, "state", "?"));
    json_decref(job);
    return rc;
}

/* ---- wait ----------------------------------------------------------------------------- */

struct waiter {
    struct hd_cli *cli;
    const char *id;
    const char *what;
    double t0, tline;
    uint64_t known_objs, known_bytes; /* totals the caller knows (0: take the job's) */
    size_t drawn;                     /* length of the line drawn in place, 0 when none */
    json_t *seen; /* each target's last document seen ("targets" of the merged view) */
    int unmarked; /* a rebalance: the map's mark was seen cleared */
};

/* Progress on stderr: redrawn in place when cli->progress, else a line every WAIT_LINE_S. */
static void wait_progress(struct waiter *w, const json_t *job)
{
    char line[320], prog[256];
    double now = mono_s();

    /* The merged view's totals grow as targets report their shares: a total known from the
     * start (the caller's listing or plan) wins, so the first line is already right. */
    if (job)
        hd_cli_fmt_job_progress(prog, sizeof(prog), u64(job, "objects"),
                                w->known_objs ? w->known_objs : u64(job, "total_objects"),
                                u64(job, "bytes"),
                                w->known_bytes ? w->known_bytes : u64(job, "total_bytes"),
                                (double)took_ms(job) / 1000.0);
    /* a rebalance done everywhere it started, but still marked, is not over (wait_poll) */
    snprintf(line, sizeof(line), "%s %s%s%s", w->id,
             job ? str_or(job, "state", "running") : "pending",
             job ? "  " : ": waiting for it to start", job ? prog : "");
    if (w->cli->progress) {
        size_t n = strlen(line);
        fprintf(stderr, "\r%s%*s", line, w->drawn > n ? (int)(w->drawn - n) : 0, "");
        w->drawn = n;
    } else if (w->tline == 0 || now - w->tline >= WAIT_LINE_S) {
        fprintf(stderr, "%s\n", line);
        w->tline = now;
    }
    fflush(stderr);
}

static void wait_end_line(struct waiter *w)
{
    if (w->drawn) {
        fputc('\n', stderr);
        fflush(stderr);
        w->drawn = 0;
    }
}

/* 1 when the cluster map still marks rebalance `id` (started, or about to be), 0 when not;
 * else an exit code (-1 - code) after printing the error. mark (may be NULL) gets the
 * rebalance the map marks, "" for none. */
static int rebalance_marked(struct waiter *w, char *mark, size_t marklen)
{
    json_t *smap = NULL;
    const char *rb;
    int rc;

    rc = hd_cli_json_do(w->cli, "GET", "/v1/cluster", NULL, w->what, &smap);
    if (rc != HD_CLI_EXIT_OK)
        return -1 - rc;
    rb = json_string_value(json_object_get(smap, "rebalance_id"));
    if (mark)
        snprintf(mark, marklen, "%s", rb ? rb : "");
    rc = rb && strcmp(rb, w->id) == 0;
    json_decref(smap);
    return rc;
}

/* One look at the job. 0 with *job (NULL while a marked rebalance has not started yet) and
 * *done, or an exit code after printing the error. */
static int wait_poll(struct waiter *w, const char *path, struct hd_cli_resp *rs, json_t **job,
                     int *done)
{
    struct hd_cli_req rq = {.method = "GET", .path = path};
    int rc, marked;

    *job = NULL;
    *done = 0;
    rc = hd_cli_http_do(w->cli, &rq, rs);
    if (rc == 0 && rs->status == 404) {
        /* POST /v1/cluster/rebalance answers with the id before the targets start it */
        char mark[128];
        marked = rebalance_marked(w, mark, sizeof(mark));
        if (marked < 0)
            return -1 - marked;
        if (marked)
            return 0;
        if (mark[0] && strncmp(w->id, "rebalance-", 10) == 0)
            return hd_cli_fail(HD_CLI_EXIT_API,
                               "%s: NoSuchJob: no target has it; %s replaced it (hoard job "
                               "wait %s)",
                               w->what, mark, mark);
        return hd_cli_report(w->cli, w->what, rc, rs);
    }
    if (rc != 0 || rs->status >= 300)
        return hd_cli_report(w->cli, w->what, rc, rs);
    *job = json_loadb(rs->body.data ? rs->body.data : "", rs->body.len, 0, NULL);
    if (!json_is_object(*job)) {
        json_decref(*job);
        *job = NULL;
        return hd_cli_fail(HD_CLI_EXIT_API, "%s: unexpected response from %s", w->what,
                           w->cli->endpoint);
    }
    *done = !running(*job);
    /* A rebalance is over when the primary clears the smap's mark: every target has
     * finished its share (one that has not started it yet is not in the merged view). The
     * mark clears together with the leavers' removal, so the view is fetched once more after
     * it is seen cleared: the one fetched before may still list a leaver. */
    if (*done && !w->unmarked && strcmp(str_or(*job, "kind", ""), "rebalance") == 0) {
        marked = rebalance_marked(w, NULL, 0);
        if (marked < 0)
            return -1 - marked;
        *done = 0;
        if (!marked) {
            w->unmarked = 1;
            if (json_object_size(json_object_get(*job, "targets"))) /* a leaver's last word */
                json_object_update(w->seen, json_object_get(*job, "targets"));
            json_decref(*job);
            return wait_poll(w, path, rs, job, done);
        }
    }
    return 0;
}

/* The job finished: a summary on stdout (or the document with --json), the errors on
 * stderr; 0 only when it is done without errors. */
static int wait_report(struct waiter *w, json_t *job)
{
    const char *state = str_or(job, "state", "?");
    uint64_t nerr = u64(job, "error_count");
    int ok = strcmp(state, "done") == 0 && nerr == 0;
    json_t *tj, *e, *left = json_object();
    const char *node;
    size_t i;

    /* Targets that left the cluster map while we waited (a decommission's leaver, removed
     * once its share is done) are no longer in the merged view: show their last report. */
    json_object_foreach(w->seen, node, tj)
    {
        if (!json_object_get(json_object_get(job, "targets"), node))
            json_object_set(left, node, tj);
    }
    if (json_object_size(left))
        json_object_set(job, "left_targets", left);
    json_decref(left);
    if (w->cli->json) {
        if (hd_cli_print_json(job) != HD_CLI_EXIT_OK)
            return HD_CLI_EXIT_API;
    } else {
        char took[32], bytes[32];
        struct hd_buf stats;
        hd_buf_init(&stats);
        stats_line(job, &stats);
        hd_cli_fmt_duration(took_ms(job), took, sizeof(took));
        hd_cli_fmt_size(u64(job, "bytes"), bytes, sizeof(bytes));
        printf("%s %s in %s: %llu objects, %s, %llu errors%s%s%s\n", w->id, state, took,
               (unsigned long long)u64(job, "objects"), bytes, (unsigned long long)nerr,
               stats.len ? " (" : "", stats.len ? stats.data : "", stats.len ? ")" : "");
        hd_buf_cleanup(&stats);
        json_object_foreach(json_object_get(job, "left_targets"), node, tj)
        {
            char objs[48];
            objects_cell(tj, objs, sizeof(objs));
            hd_cli_fmt_size(u64(tj, "bytes"), bytes, sizeof(bytes));
            printf("  %s left the cluster; its last report: %s, %s objects, %s, %llu errors\n",
                   node, str_or(tj, "state", "?"), objs, bytes,
                   (unsigned long long)u64(tj, "error_count"));
        }
    }
    if (ok)
        return HD_CLI_EXIT_OK;
    fflush(stdout);
    json_object_foreach(json_object_get(job, "targets"), node, tj)
    {
        if (strcmp(str_or(tj, "state", "done"), "done") != 0)
            fprintf(stderr, "  %s: %s%s%s\n", node, str_or(tj, "state", "?"),
                    json_object_get(tj, "result") ? ": " : "", str_or(tj, "result", ""));
    }
    json_array_foreach(json_object_get(job, "errors"), i, e)
        fprintf(stderr, "  %s\n", json_string_value(e));
    if (strcmp(state, "done") != 0)
        return hd_cli_fail(HD_CLI_EXIT_API, "%s: the job %s", w->what,
                           strcmp(state, "aborted") == 0 ? "was aborted" : state);
    return hd_cli_fail(HD_CLI_EXIT_API, "%s: the job finished with %llu error%s", w->what,
                       (unsigned long long)nerr, nerr == 1 ? "" : "s");
}

int hd_cli_job_wait(struct hd_cli *cli, int argc, char **argv)
{
    (void)argc;
    return hd_cli_job_wait_totals(cli, argv[0], 0, 0);
}

int hd_cli_job_wait_totals(struct hd_cli *cli, const char *id, uint64_t objs, uint64_t bytes)
{
    struct timespec pause = {WAIT_POLL_MS / 1000, (WAIT_POLL_MS % 1000) * 1000000L};
    struct hd_buf path, what;
    struct hd_cli_resp rs;
    struct waiter w;
    uint64_t timeout = 0;
    json_t *job = NULL;
    int rc, done = 0;

    memset(&w, 0, sizeof(w));
    hd_buf_init(&path);
    hd_buf_init(&what);
    hd_cli_resp_init(&rs);
    if ((rc = job_paths(cli, id, "wait", &path, &what)) != 0)
        goto out;
    if (cli->opt[HD_CLI_OPT_TIMEOUT] &&
        hd_cli_parse_count(cli->opt[HD_CLI_OPT_TIMEOUT], 1, WAIT_MAX_S, &timeout) < 0) {
        rc = hd_cli_usage_error(cli, "bad --timeout '%s' (want whole seconds, 1 or more)",
                                cli->opt[HD_CLI_OPT_TIMEOUT]);
        goto out;
    }
    w.cli = cli;
    w.id = id;
    w.known_objs = objs;
    w.known_bytes = bytes;
    w.what = what.data;
    w.t0 = mono_s();
    w.seen = json_object();
    for (;;) {
        json_decref(job);
        if ((rc = wait_poll(&w, path.data, &rs, &job, &done)) != 0)
            break;
        if (json_object_size(json_object_get(job, "targets")))
            json_object_update(w.seen, json_object_get(job, "targets"));
        if (done) {
            if (w.cli->progress) /* the bar at its end, also for a job done at the first look */
                wait_progress(&w, job);
            break;
        }
        wait_progress(&w, job);
        if (timeout && mono_s() - w.t0 >= (double)timeout) {
            wait_end_line(&w);
            rc = hd_cli_fail(HD_CLI_EXIT_TIMEOUT,
                             "%s: still %s after %llu s; it keeps running (hoard job stop %s "
                             "stops it)",
                             w.what, job ? "running" : "waiting to start",
                             (unsigned long long)timeout, w.id);
            break;
        }
        nanosleep(&pause, NULL);
        if (hd_cli_interrupted) {
            wait_end_line(&w);
            rc = hd_cli_fail(HD_CLI_EXIT_INTR,
                             "%s: interrupted; the job keeps running (hoard job stop %s stops it)",
                             w.what, w.id);
            break;
        }
    }
    wait_end_line(&w);
    if (done)
        rc = wait_report(&w, job);
out:
    json_decref(w.seen);
    json_decref(job);
    hd_cli_resp_cleanup(&rs);
    hd_buf_cleanup(&what);
    hd_buf_cleanup(&path);
    return rc;
}
