#include "common/metrics.h"

#include <stdatomic.h>

static const char *const op_names[HD_OP_COUNT] = {"other",  "get",  "put",    "head",
                                                  "delete", "list", "bucket", "admin"};
static const char *const stat_names[HD_ST_COUNT] = {
    "hoard_put_bytes_total",     "hoard_get_bytes_total",     "hoard_put_aborted_total",
    "hoard_auth_failures_total", "hoard_relay_started_total", "hoard_relay_ended_total",
    "hoard_relay_aborted_total"};
static const char *const stat_help[HD_ST_COUNT] = {
    "Object bytes stored by PUT",
    "Object bytes served by GET",
    "PUTs that stored nothing (bad digest, short body, disk error)",
    "Requests refused by authentication",
    "Relayed requests begun (proxy; started minus ended is the number in flight)",
    "Relayed requests finished and released",
    "Relayed transfers cut short because the client left or the proxy stopped"};

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
static hd_metrics_extra_fn extra_fn;
static void *extra_arg;

void hd_metrics_set_extra(hd_metrics_extra_fn fn, void *arg)
{
    extra_fn = fn;
    extra_arg = arg;
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
    if (extra_fn)
        extra_fn(b, extra_arg);
}
