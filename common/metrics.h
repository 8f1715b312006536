/* metrics: process-wide counters and a latency histogram, served as Prometheus text at
 * /metrics. Lock-free (atomics); callable from any thread. */
#ifndef HD_METRICS_H
#define HD_METRICS_H

#include <stdint.h>

#include "common/buf.h"

enum hd_metric_op {
    HD_OP_OTHER,
    HD_OP_GET,
    HD_OP_PUT,
    HD_OP_HEAD,
    HD_OP_DELETE,
    HD_OP_LIST,
    HD_OP_BUCKET,
    HD_OP_ADMIN,
    HD_OP_COUNT
};

/* Named counters beyond per-request accounting. */
enum hd_stat {
    HD_ST_PUT_BYTES,
    HD_ST_GET_BYTES,
    HD_ST_PUT_ABORTED,
    HD_ST_AUTH_FAILED,
    HD_ST_RELAY_STARTED,     /* common/relay.c: relays begun */
    HD_ST_RELAY_ENDED,       /* ... and released (transfer over, client side gone) */
    HD_ST_RELAY_ABORTED,     /* ... transfers cut short because the client left or we stopped */
    HD_ST_BATCH_SUB_SERVED,  /* target: sub-batches answered for another target's batch */
    HD_ST_BATCH_SUB_ENTRIES, /* ... and the entries they held */
    HD_ST_BATCH_ALONE,       /* batch entries fetched from another node alone (one GET each) */
    HD_ST_COUNT
};

void hd_metrics_request(int op, int status, uint64_t bytes_in, uint64_t bytes_out, double secs);
void hd_stats_add(enum hd_stat s, uint64_t n);
static inline void hd_stats_inc(enum hd_stat s)
{
    hd_stats_add(s, 1);
}
uint64_t hd_stats_get(enum hd_stat s);
/* Per-bucket requests and bytes (bucket: a valid bucket name). At most the cap set with
 * hd_metrics_bucket_cap (default 64) buckets get series of their own; the rest are counted
 * under bucket="_other" (not a valid bucket name), so the cardinality stays bounded. Only a
 * request that succeeded (status 2xx/3xx) gives a bucket its series: refused requests for
 * made-up names (no credentials, no such bucket) cannot use up the slots. */
void hd_metrics_bucket(const char *bucket, int op, int status, uint64_t bytes_in,
                       uint64_t bytes_out);
void hd_metrics_bucket_cap(int cap);
/* Totals of one operation since the start: requests, those answered 400 or above, and
 * their summed latency (microseconds). Any pointer may be NULL. */
void hd_metrics_op_totals(int op, uint64_t *n, uint64_t *errors, uint64_t *latency_us);
/* Unix time (seconds) hd_metrics_process_init was called at; 0 before. */
double hd_metrics_start_time(void);
/* Build and process series: version/commit of hoard_build_info; call once at startup (also
 * records the start time). */
void hd_metrics_process_init(const char *version, const char *commit);
/* Appends the Prometheus exposition text. */
void hd_metrics_render(struct hd_buf *b);
/* A role's own series, appended by hd_metrics_render (one renderer; NULL removes it). Set
 * before the HTTP server starts or after it stopped. */
typedef void (*hd_metrics_extra_fn)(struct hd_buf *b, void *arg);
void hd_metrics_set_extra(hd_metrics_extra_fn fn, void *arg);
/* A second renderer slot, for the jobs' progress gauges (same rules). */
void hd_metrics_set_jobs(hd_metrics_extra_fn fn, void *arg);

#endif
