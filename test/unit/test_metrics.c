/* Unit tests for common/metrics: request counters by op and status, the latency histogram
 * (cumulative buckets, +Inf == count, sum), byte totals and named stats. Counters are
 * process-wide, so every assertion is on the difference between two renders. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/metrics.h"
#include "test/unit/hd_test.h"

static char *render(void)
{
    struct hd_buf b;

    hd_buf_init(&b);
    hd_metrics_render(&b);
    return hd_buf_steal(&b, NULL);
}

/* Value of the sample line "<series> <value>"; 0 when the series is absent. */
static double value(const char *text, const char *series)
{
    size_t n = strlen(series);
    const char *p = text;

    while (p && *p) {
        if (strncmp(p, series, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return 0;
}

static int has_series(const char *text, const char *series)
{
    size_t n = strlen(series);
    const char *p = text;

    while (p && *p) {
        if (strncmp(p, series, n) == 0 && p[n] == ' ')
            return 1;
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return 0;
}

static double delta(const char *before, const char *after, const char *series)
{
    return value(after, series) - value(before, series);
}

/* Checks op's histogram in text: le bounds ascending, counts non-decreasing, last bucket is
 * +Inf and equals _count. Returns the number of buckets (0 on any violation). */
static int histogram_ok(const char *text, const char *op)
{
    char pfx[128], series[160];
    const char *p = text;
    double prev_le = -1, prev = -1, count;
    int n = 0, inf = 0;

    snprintf(pfx, sizeof(pfx), "hoard_request_duration_seconds_bucket{op=\"%s\",le=\"", op);
    while (p && *p) {
        if (strncmp(p, pfx, strlen(pfx)) == 0) {
            const char *le = p + strlen(pfx), *q = strchr(le, '"');
            double v;
            if (!q || inf)
                return 0; /* nothing may follow +Inf */
            if (strncmp(le, "+Inf", 4) == 0) {
                inf = 1;
            } else {
                double l = strtod(le, NULL);
                if (l <= prev_le)
                    return 0;
                prev_le = l;
            }
            v = strtod(strchr(q, ' ') + 1, NULL);
            if (v < prev)
                return 0;
            prev = v;
            n++;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    snprintf(series, sizeof(series), "hoard_request_duration_seconds_count{op=\"%s\"}", op);
    count = value(text, series);
    if (!inf || count != prev)
        return 0;
    return n;
}

HD_SUITE(metrics)
{
    char *before, *after;
    uint64_t s0, s1, a0;

    uint64_t gn0, ge0, gl0, gn1, ge1, gl1;

    hd_metrics_op_totals(HD_OP_GET, &gn0, &ge0, &gl0);
    before = render();
    CHECK(before != NULL);
    CHECK(strstr(before, "# TYPE hoard_requests_total counter\n") != NULL);
    CHECK(strstr(before, "# TYPE hoard_request_duration_seconds histogram\n") != NULL);
    CHECK(strstr(before, "# TYPE hoard_put_bytes_total counter\n") != NULL);
    CHECK(has_series(before, "hoard_http_bytes_in_total"));
    CHECK(has_series(before, "hoard_http_bytes_out_total"));

    hd_metrics_request(HD_OP_GET, 200, 10, 100, 0.003);
    hd_metrics_request(HD_OP_GET, 200, 10, 100, 0.003);
    hd_metrics_request(HD_OP_GET, 200, 10, 100, 0.003);
    hd_metrics_request(HD_OP_GET, 404, 0, 0, 0.0001);
    hd_metrics_request(HD_OP_PUT, 299, 1000, 0, 0.2);   /* unlisted status -> "other" */
    hd_metrics_request(HD_OP_HEAD, 200, 0, 0, 0.001);   /* exactly on a bucket bound */
    hd_metrics_request(HD_OP_DELETE, 204, 0, 0, 100.0); /* beyond the last bound */
    hd_metrics_request(99, 500, 0, 0, 0.01);            /* bad op -> "other" */
    hd_metrics_request(-1, 503, 0, 0, 0.01);
    after = render();
    CHECK(after != NULL);

    /* the totals node_status reports (proxy/api/capacity.c) */
    hd_metrics_op_totals(HD_OP_GET, &gn1, &ge1, &gl1);
    CHECK(gn1 - gn0 == 4);
    CHECK(ge1 - ge0 == 1); /* the 404 */
    CHECK(gl1 - gl0 >= 9000 && gl1 - gl0 <= 9200);
    hd_metrics_op_totals(99, NULL, NULL, NULL); /* a bad op, no outputs: no crash */

    /* request counters */
    CHECK(delta(before, after, "hoard_requests_total{op=\"get\",status=\"200\"}") == 3);
    CHECK(delta(before, after, "hoard_requests_total{op=\"get\",status=\"404\"}") == 1);
    CHECK(delta(before, after, "hoard_requests_total{op=\"put\",status=\"other\"}") == 1);
    CHECK(delta(before, after, "hoard_requests_total{op=\"head\",status=\"200\"}") == 1);
    CHECK(delta(before, after, "hoard_requests_total{op=\"delete\",status=\"204\"}") == 1);
    CHECK(delta(before, after, "hoard_requests_total{op=\"other\",status=\"500\"}") == 1);
    CHECK(delta(before, after, "hoard_requests_total{op=\"other\",status=\"503\"}") == 1);
    CHECK(!has_series(after, "hoard_requests_total{op=\"put\",status=\"299\"}"));

    /* histograms: cumulative, and the deltas land in the right buckets */
    CHECK_EQ_INT(histogram_ok(after, "get"), 15);
    CHECK_EQ_INT(histogram_ok(after, "put"), 15);
    CHECK_EQ_INT(histogram_ok(after, "head"), 15);
    CHECK_EQ_INT(histogram_ok(after, "delete"), 15);
    CHECK_EQ_INT(histogram_ok(after, "other"), 15);
#define B(op, le) "hoard_request_duration_seconds_bucket{op=\"" op "\",le=\"" le "\"}"
    CHECK(delta(before, after, B("get", "0.0005")) == 1);
    CHECK(delta(before, after, B("get", "0.0025")) == 1);
    CHECK(delta(before, after, B("get", "0.005")) == 4);
    CHECK(delta(before, after, B("get", "10")) == 4);
    CHECK(delta(before, after, B("get", "+Inf")) == 4);
    CHECK(delta(before, after, "hoard_request_duration_seconds_count{op=\"get\"}") == 4);
    CHECK(fabs(delta(before, after, "hoard_request_duration_seconds_sum{op=\"get\"}") - 0.0091) <
          1e-5);
    CHECK(delta(before, after, B("head", "0.0005")) == 0);
    CHECK(delta(before, after, B("head", "0.001")) == 1); /* le is inclusive */
    CHECK(delta(before, after, B("put", "0.1")) == 0);
    CHECK(delta(before, after, B("put", "0.25")) == 1);
    CHECK(delta(before, after, B("delete", "10")) == 0);
    CHECK(delta(before, after, B("delete", "+Inf")) == 1);
    CHECK(fabs(delta(before, after, "hoard_request_duration_seconds_sum{op=\"delete\"}") - 100) <
          1e-3);
#undef B

    /* byte totals */
    CHECK(delta(before, after, "hoard_http_bytes_in_total") == 1030);
    CHECK(delta(before, after, "hoard_http_bytes_out_total") == 300);
    free(before);
    free(after);

    /* named stats */
    s0 = hd_stats_get(HD_ST_PUT_BYTES);
    a0 = hd_stats_get(HD_ST_AUTH_FAILED);
    before = render();
    hd_stats_add(HD_ST_PUT_BYTES, 1234);
    hd_stats_add(HD_ST_PUT_BYTES, 1);
    hd_stats_inc(HD_ST_AUTH_FAILED);
    hd_stats_inc(HD_ST_AUTH_FAILED);
    s1 = hd_stats_get(HD_ST_PUT_BYTES);
    CHECK(s1 - s0 == 1235);
    CHECK(hd_stats_get(HD_ST_AUTH_FAILED) - a0 == 2);
    after = render();
    CHECK(delta(before, after, "hoard_put_bytes_total") == 1235);
    CHECK(delta(before, after, "hoard_auth_failures_total") == 2);
    CHECK(delta(before, after, "hoard_get_bytes_total") == 0);
    CHECK(value(after, "hoard_put_bytes_total") == (double)s1);
    CHECK(has_series(after, "hoard_put_aborted_total"));
    free(before);
    free(after);
}
