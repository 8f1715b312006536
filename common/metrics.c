#include "common/metrics.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static const char *const op_names[HD_OP_COUNT] = {"other",  "get",  "put",    "head",
                                                  "delete", "list", "bucket", "admin"};
static const char *const stat_names[HD_ST_COUNT] = {
    "hoard_put_bytes_total",         "hoard_get_bytes_total",
    "hoard_put_aborted_total",       "hoard_auth_failures_total",
    "hoard_relay_started_total",     "hoard_relay_ended_total",
    "hoard_relay_aborted_total",     "hoard_batch_sub_served_total",
    "hoard_batch_sub_entries_total", "hoard_batch_fetched_alone_total"};
static const char *const stat_help[HD_ST_COUNT] = {
    "Object bytes stored by PUT",
    "Object bytes served by GET",
    "PUTs that stored nothing (bad digest, short body, disk error)",
    "Requests refused by authentication",
    "Relayed requests begun (proxy; started minus ended is the number in flight)",
    "Relayed requests finished and released",
    "Relayed transfers cut short because the client left or the proxy stopped",
    "Sub-batches answered for another target's batch GET (one request per owner)",
    "Entries of the sub-batches answered",
    "Batch GET entries fetched from another node with a GET of their own"};

/* Status codes get their own series; anything else is "other". */
static const int statuses[] = {200, 201, 204, 206, 304, 400, 403, 404, 405,
                               409, 411, 412, 416, 500, 501, 503, 507, 0};
#define NSTATUS (sizeof(statuses) / sizeof(statuses[0]))

/* Latency buckets, seconds. */
static const double lat_le[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                0.1,    0.25,  0.5,    1,     2.5,  5,     10};
#define NLAT (sizeof(lat_le) / sizeof(lat_le[0]))

static _Atomic uint64_t req_count[HD_OP_COUNT][NSTATUS];
static _Atomic uint64_t lat_bucket[HD_OP_COUNT][NLAT + 1];
static _Atomic uint64_t lat_sum_us[HD_OP_COUNT];
static _Atomic uint64_t bytes_in_total, bytes_out_total;
static _Atomic uint64_t stats[HD_ST_COUNT];
static double start_time_s; /* hd_metrics_process_init */
static hd_metrics_extra_fn extra_fn;
static void *extra_arg;

static hd_metrics_extra_fn jobs_fn;
static void *jobs_arg;

void hd_metrics_set_extra(hd_metrics_extra_fn fn, void *arg)
{
    extra_fn = fn;
    extra_arg = arg;
}

void hd_metrics_set_jobs(hd_metrics_extra_fn fn, void *arg)
{
    jobs_fn = fn;
    jobs_arg = arg;
}

/* ---- per bucket: a fixed table, filled in first-seen order, slot 0 for the rest ---- */

#define BUCKETS_MAX 1024
struct bstat {
    char name[64]; /* written once, under bucket_mu, before n_buckets counts it */
    _Atomic uint64_t req[HD_OP_COUNT], in, out;
};
static struct bstat bstats[BUCKETS_MAX + 1]; /* [0]: "_other" */
static atomic_int n_buckets;                 /* named slots in use: 1..n_buckets */
static int bucket_cap = 64;
static pthread_mutex_t bucket_mu = PTHREAD_MUTEX_INITIALIZER;

void hd_metrics_bucket_cap(int cap)
{
    bucket_cap = cap < 0 ? 0 : cap > BUCKETS_MAX ? BUCKETS_MAX : cap;
}

static struct bstat *bucket_slot(const char *bucket, int may_add)
{
    int i, n = atomic_load_explicit(&n_buckets, memory_order_acquire);

    for (i = 1; i <= n; i++)
        if (strcmp(bstats[i].name, bucket) == 0)
            return &bstats[i];
    pthread_mutex_lock(&bucket_mu);
    n = atomic_load(&n_buckets);
    for (i = 1; i <= n && strcmp(bstats[i].name, bucket) != 0; i++)
        ;
    if (i > n) {
        if (may_add && n < bucket_cap) {
            snprintf(bstats[n + 1].name, sizeof(bstats[n + 1].name), "%s", bucket);
            atomic_store_explicit(&n_buckets, n + 1, memory_order_release);
        } else
            i = 0;
    }
    pthread_mutex_unlock(&bucket_mu);
    return &bstats[i];
}

void hd_metrics_bucket(const char *bucket, int op, int status, uint64_t bytes_in,
                       uint64_t bytes_out)
{
    struct bstat *b = bucket_slot(bucket, status >= 200 && status < 400);

    if (op < 0 || op >= HD_OP_COUNT)
        op = HD_OP_OTHER;
    atomic_fetch_add_explicit(&b->req[op], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&b->in, bytes_in, memory_order_relaxed);
    atomic_fetch_add_explicit(&b->out, bytes_out, memory_order_relaxed);
}

/* One bytes counter per bucket slot (in: request bodies, else response bodies). */
static void render_bucket_bytes(struct hd_buf *b, const char *name, const char *help, int n,
                                int other_used, int in)
{
    int i;

    hd_buf_printf(b, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
    for (i = 0; i <= n; i++)
        if (i || other_used)
            hd_buf_printf(b, "%s{bucket=\"%s\"} %llu\n", name, i ? bstats[i].name : "_other",
                          (unsigned long long)atomic_load(in ? &bstats[i].in : &bstats[i].out));
}

static void render_buckets(struct hd_buf *b)
{
    int i, n = atomic_load_explicit(&n_buckets, memory_order_acquire), other_used = 0;
    size_t o;

    for (o = 0; o < HD_OP_COUNT; o++)
        other_used |= atomic_load(&bstats[0].req[o]) != 0;

    hd_buf_puts(b, "# HELP hoard_bucket_requests_total Requests by bucket and operation (at "
                   "most metrics.buckets buckets; the rest as bucket=\"_other\").\n"
                   "# TYPE hoard_bucket_requests_total counter\n");
    for (i = 0; i <= n; i++)
        for (o = 0; o < HD_OP_COUNT; o++) {
            uint64_t v = atomic_load(&bstats[i].req[o]);
            if (v)
                hd_buf_printf(b, "hoard_bucket_requests_total{bucket=\"%s\",op=\"%s\"} %llu\n",
                              i ? bstats[i].name : "_other", op_names[o], (unsigned long long)v);
        }
    render_bucket_bytes(b, "hoard_bucket_bytes_in_total", "Request body bytes by bucket.", n,
                        other_used, 1);
    render_bucket_bytes(b, "hoard_bucket_bytes_out_total", "Response body bytes by bucket.", n,
                        other_used, 0);
}

/* ---- build and process ---- */

static char build_version[64] = "unknown", build_commit[64] = "unknown";

void hd_metrics_process_init(const char *version, const char *commit)
{
    struct timespec ts;

    snprintf(build_version, sizeof(build_version), "%s", version && *version ? version : "unknown");
    snprintf(build_commit, sizeof(build_commit), "%s", commit && *commit ? commit : "unknown");
    clock_gettime(CLOCK_REALTIME, &ts);
    start_time_s = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void render_process(struct hd_buf *b)
{
    struct rusage ru;
    long pages = 0, rss = 0, open_fds = 0;
    struct rlimit rl;
    FILE *f;
    DIR *d;

    hd_buf_printf(b,
                  "# HELP hoard_build_info hoard's version and commit (value 1).\n"
                  "# TYPE hoard_build_info gauge\n"
                  "hoard_build_info{version=\"%s\",commit=\"%s\"} 1\n",
                  build_version, build_commit);
    if ((f = fopen("/proc/self/statm", "r"))) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    if ((d = opendir("/proc/self/fd"))) {
        while (readdir(d))
            open_fds++;
        closedir(d);
        open_fds -= 3; /* ".", ".." and the directory's own descriptor */
    }
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        memset(&ru, 0, sizeof(ru));
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        rl.rlim_cur = 0;
    hd_buf_printf(b,
                  "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
                  "# TYPE process_resident_memory_bytes gauge\n"
                  "process_resident_memory_bytes %llu\n"
                  "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
                  "# TYPE process_virtual_memory_bytes gauge\n"
                  "process_virtual_memory_bytes %llu\n"
                  "# HELP process_cpu_seconds_total User and system CPU time in seconds.\n"
                  "# TYPE process_cpu_seconds_total counter\n"
                  "process_cpu_seconds_total %.3f\n"
                  "# HELP process_open_fds Open file descriptors.\n"
                  "# TYPE process_open_fds gauge\n"
                  "process_open_fds %ld\n"
                  "# HELP process_max_fds Limit of open file descriptors.\n"
                  "# TYPE process_max_fds gauge\n"
                  "process_max_fds %llu\n"
                  "# HELP process_start_time_seconds Start time since the epoch, seconds.\n"
                  "# TYPE process_start_time_seconds gauge\n"
                  "process_start_time_seconds %.3f\n",
                  (unsigned long long)rss * (unsigned long long)sysconf(_SC_PAGESIZE),
                  (unsigned long long)pages * (unsigned long long)sysconf(_SC_PAGESIZE),
                  (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                      (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6,
                  open_fds < 0 ? 0 : open_fds, (unsigned long long)rl.rlim_cur, start_time_s);
}

void hd_metrics_request(int op, int status, uint64_t bytes_in, uint64_t bytes_out, double secs)
{
    size_t s, l;

    if (op < 0 || op >= HD_OP_COUNT)
        op = HD_OP_OTHER;
    for (s = 0; s < NSTATUS - 1 && statuses[s] != status; s++)
        ;
    atomic_fetch_add_explicit(&req_count[op][s], 1, memory_order_relaxed);
    for (l = 0; l < NLAT && secs > lat_le[l]; l++)
        ;
    atomic_fetch_add_explicit(&lat_bucket[op][l], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&lat_sum_us[op], (uint64_t)(secs * 1e6), memory_order_relaxed);
    atomic_fetch_add_explicit(&bytes_in_total, bytes_in, memory_order_relaxed);
    atomic_fetch_add_explicit(&bytes_out_total, bytes_out, memory_order_relaxed);
}

void hd_metrics_op_totals(int op, uint64_t *n, uint64_t *errors, uint64_t *latency_us)
{
    uint64_t all = 0, bad = 0, v;
    size_t s;

    if (op < 0 || op >= HD_OP_COUNT)
        op = HD_OP_OTHER;
    for (s = 0; s < NSTATUS; s++) {
        v = atomic_load_explicit(&req_count[op][s], memory_order_relaxed);
        all += v;
        if (statuses[s] >= 400)
            bad += v;
    }
    if (n)
        *n = all;
    if (errors)
        *errors = bad;
    if (latency_us)
        *latency_us = atomic_load_explicit(&lat_sum_us[op], memory_order_relaxed);
}

double hd_metrics_start_time(void)
{
    return start_time_s;
}

void hd_stats_add(enum hd_stat s, uint64_t n)
{
    atomic_fetch_add_explicit(&stats[s], n, memory_order_relaxed);
}

uint64_t hd_stats_get(enum hd_stat s)
{
    return atomic_load_explicit(&stats[s], memory_order_relaxed);
}

void hd_metrics_render(struct hd_buf *b)
{
    size_t o, s, l;

    hd_buf_puts(b, "# HELP hoard_requests_total HTTP requests by operation and status.\n"
                   "# TYPE hoard_requests_total counter\n");
    for (o = 0; o < HD_OP_COUNT; o++)
        for (s = 0; s < NSTATUS; s++) {
            uint64_t v = atomic_load(&req_count[o][s]);
            if (!v)
                continue;
            if (statuses[s])
                hd_buf_printf(b, "hoard_requests_total{op=\"%s\",status=\"%d\"} %llu\n",
                              op_names[o], statuses[s], (unsigned long long)v);
            else
                hd_buf_printf(b, "hoard_requests_total{op=\"%s\",status=\"other\"} %llu\n",
                              op_names[o], (unsigned long long)v);
        }
    hd_buf_puts(b, "# HELP hoard_request_duration_seconds Request latency by operation.\n"
                   "# TYPE hoard_request_duration_seconds histogram\n");
    for (o = 0; o < HD_OP_COUNT; o++) {
        uint64_t cum = 0;
        for (l = 0; l <= NLAT; l++)
            cum += atomic_load(&lat_bucket[o][l]);
        if (!cum)
            continue;
        cum = 0;
        for (l = 0; l < NLAT; l++) {
            cum += atomic_load(&lat_bucket[o][l]);
            hd_buf_printf(b, "hoard_request_duration_seconds_bucket{op=\"%s\",le=\"%g\"} %llu\n",
                          op_names[o], lat_le[l], (unsigned long long)cum);
        }
        cum += atomic_load(&lat_bucket[o][NLAT]);
        hd_buf_printf(b,
                      "hoard_request_duration_seconds_bucket{op=\"%s\",le=\"+Inf\"} %llu\n"
                      "hoard_request_duration_seconds_sum{op=\"%s\"} %.6f\n"
                      "hoard_request_duration_seconds_count{op=\"%s\"} %llu\n",
                      op_names[o], (unsigned long long)cum, op_names[o],
                      (double)atomic_load(&lat_sum_us[o]) / 1e6, op_names[o],
                      (unsigned long long)cum);
    }
    hd_buf_printf(b,
                  "# HELP hoard_http_bytes_in_total Request body bytes received.\n"
                  "# TYPE hoard_http_bytes_in_total counter\nhoard_http_bytes_in_total %llu\n"
                  "# HELP hoard_http_bytes_out_total Response body bytes sent.\n"
                  "# TYPE hoard_http_bytes_out_total counter\nhoard_http_bytes_out_total %llu\n",
                  (unsigned long long)atomic_load(&bytes_in_total),
                  (unsigned long long)atomic_load(&bytes_out_total));
    for (s = 0; s < HD_ST_COUNT; s++)
        hd_buf_printf(b, "# HELP %s %s.\n# TYPE %s counter\n%s %llu\n", stat_names[s], stat_help[s],
                      stat_names[s], stat_names[s], (unsigned long long)atomic_load(&stats[s]));
    render_buckets(b);
    render_process(b);
    if (extra_fn)
        extra_fn(b, extra_arg);
    if (jobs_fn)
        jobs_fn(b, jobs_arg);
}
