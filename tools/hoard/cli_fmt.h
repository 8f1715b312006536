/* cli_fmt: pure helpers of the hoard CLI: argument splitting, URL path encoding, human sizes,
 * durations, the progress lines and aligned text tables. No I/O except hd_cli_table_print;
 * any thread. */
#ifndef HD_CLI_FMT_H
#define HD_CLI_FMT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/buf.h"

/* "0 B", "1023 B", "1.0 KiB", "20.0 MiB", "1.5 GiB" ... up to EiB. Always NUL-terminates. */
void hd_cli_fmt_size(uint64_t n, char *out, size_t len);

/* One progress line without '\r' or '\n': "12.0 MiB / 20.0 MiB  60%  85.3 MiB/s".
 * total 0 means unknown (no percentage); secs <= 0 gives a rate of 0. */
void hd_cli_fmt_progress(char *out, size_t len, uint64_t done, uint64_t total, double secs);

/* One job progress line without '\r' or '\n', objects first, then bytes as
 * hd_cli_fmt_progress: "120 / 400 objects   1.2 MiB / 4.0 MiB  30%  0.4 MiB/s". A total of 0
 * is unknown; the percentage comes from the bytes when their total is known, else from the
 * objects ("120 / 400 objects  30%   1.2 MiB  0.4 MiB/s"), else there is none. */
void hd_cli_fmt_job_progress(char *out, size_t len, uint64_t objs, uint64_t total_objs,
                             uint64_t bytes, uint64_t total_bytes, double secs);

/* A duration for people: "850 ms", "3.2 s", "4m05s", "2h03m", "3d04h". */
void hd_cli_fmt_duration(uint64_t ms, char *out, size_t len);

/* df's "Use%": used / (used + available) rounded up, so a nearly full disk never shows 100%
 * too early or 0% too late; 0 when both are 0. */
unsigned hd_cli_pct_used(uint64_t used, uint64_t avail);

/* A cluster node's state from its smap flags (1 maintenance, 2 decommissioning) and whether
 * it is in tmap_down: "down", "decommissioning", "maintenance" or "online". */
const char *hd_cli_node_state(unsigned flags, int down);

/* Splits "B/REST" at the first '/'. *bucket and *rest are heap copies (caller frees both);
 * *rest is "" when there is no '/' or nothing after it. 0, HD_EBADARG (empty bucket or
 * NULL arg) or -ENOMEM; on failure both outputs are NULL. */
int hd_cli_path_split(const char *arg, char **bucket, char **rest);

/* Appends s percent-encoded for a URL path: every byte but A-Z a-z 0-9 - . _ ~ becomes %XX;
 * '/' is kept when keep_slash. 0 or -ENOMEM. */
int hd_cli_path_encode(struct hd_buf *b, const char *s, int keep_slash);

/* Appends "&key=value" (or "?key=value" when b holds no '?' yet) with value encoded. */
int hd_cli_query_add(struct hd_buf *b, const char *key, const char *value);

/* Normalises an endpoint: adds "http://" when no scheme is given, accepts only http and
 * https, requires a host, strips trailing '/'. *out is a heap string (caller frees).
 * 0, HD_EBADARG or -ENOMEM. */
int hd_cli_endpoint_normalize(const char *in, char **out);

/* Strict decimal in [min, max]. 0 or HD_EBADARG. */
int hd_cli_parse_count(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* A byte size: digits with an optional unit K, M, G, T (or KiB..TiB: powers of 1024) or
 * KB, MB, GB, TB (powers of 1000), B; case-insensitive ("256MiB", "1g", "100000").
 * Result in [1, max]. 0 or HD_EBADARG. */
int hd_cli_parse_size(const char *s, uint64_t max, uint64_t *out);

/* Copies an ETag header value without surrounding quotes and a W/ prefix. */
void hd_cli_etag_clean(const char *etag, char *out, size_t len);

/* Last '/'-separated component of an object name ("a/b/c.jpg" -> "c.jpg"); "" when the name
 * ends with '/'. Points into name. */
const char *hd_cli_basename(const char *name);

/* Aligned text table: headers on the first line, columns separated by two spaces, the last
 * column unpadded. Cells are copied; control characters become '?' so a hostile object name
 * cannot break the layout. Widths count UTF-8 code points. */
struct hd_cli_table {
    size_t ncols;
    const char *const *headers;
    unsigned right; /* bit i set: column i is right-aligned */
    char **cells;   /* nrows * ncols */
    size_t nrows, cap;
    int oom;
};

void hd_cli_table_init(struct hd_cli_table *t, size_t ncols, const char *const *headers,
                       unsigned right);
/* 0 or -ENOMEM (sticky: the table then prints nothing and reports -ENOMEM again). */
int hd_cli_table_add(struct hd_cli_table *t, const char *const *row);
int hd_cli_table_print(const struct hd_cli_table *t, FILE *out);
void hd_cli_table_cleanup(struct hd_cli_table *t);

#endif
