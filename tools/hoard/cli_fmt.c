#include "tools/hoard/cli_fmt.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <wchar.h>

#include <curl/curl.h>

#include "common/errors.h"

void hd_cli_fmt_size(uint64_t n, char *out, size_t len)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)n;
    size_t u = 0;

    if (n < 1024) {
        snprintf(out, len, "%llu B", (unsigned long long)n);
        return;
    }
    v /= 1024.0;
    /* Move up a unit before rounding would print "1024.0". */
    while (v >= 1023.95 && u + 1 < sizeof(units) / sizeof(units[0])) {
        v /= 1024.0;
        u++;
    }
    snprintf(out, len, "%.1f %s", v, units[u]);
}

void hd_cli_fmt_progress(char *out, size_t len, uint64_t done, uint64_t total, double secs)
{
    char d[32], t[32];
    double rate = secs > 0 ? (double)done / secs / (1024.0 * 1024.0) : 0.0;

    hd_cli_fmt_size(done, d, sizeof(d));
    if (total == 0) {
        snprintf(out, len, "%10s  %7.1f MiB/s", d, rate);
        return;
    }
    hd_cli_fmt_size(total, t, sizeof(t));
    if (done > total)
        done = total;
    snprintf(out, len, "%10s / %-10s %3u%%  %7.1f MiB/s", d, t,
             (unsigned)(done * 100.0 / (double)total), rate);
}

void hd_cli_fmt_job_progress(char *out, size_t len, uint64_t objs, uint64_t total_objs,
                             uint64_t bytes, uint64_t total_bytes, double secs)
{
    char b[96], pct[8] = "";
    int n;

    if (len == 0)
        return;
    if (total_objs && !total_bytes)
        snprintf(pct, sizeof(pct), "  %3u%%",
                 (unsigned)((objs > total_objs ? total_objs : objs) * 100.0 / (double)total_objs));
    hd_cli_fmt_progress(b, sizeof(b), bytes, total_bytes, secs);
    if (total_objs)
        n = snprintf(out, len, "%llu / %llu objects%s ", (unsigned long long)objs,
                     (unsigned long long)total_objs, pct);
    else
        n = snprintf(out, len, "%llu objects ", (unsigned long long)objs);
    if (n > 0 && (size_t)n < len)
        snprintf(out + n, len - (size_t)n, "%s", b);
}

void hd_cli_fmt_duration(uint64_t ms, char *out, size_t len)
{
    uint64_t s = ms / 1000;

    if (ms < 1000)
        snprintf(out, len, "%llu ms", (unsigned long long)ms);
    else if (ms < 60000)
        snprintf(out, len, "%.1f s", (double)(ms / 100) / 10.0);
    else if (s < 3600)
        snprintf(out, len, "%llum%02llus", (unsigned long long)(s / 60),
                 (unsigned long long)(s % 60));
    else if (s < 86400)
        snprintf(out, len, "%lluh%02llum", (unsigned long long)(s / 3600),
                 (unsigned long long)(s / 60 % 60));
    else
        snprintf(out, len, "%llud%02lluh", (unsigned long long)(s / 86400),
                 (unsigned long long)(s / 3600 % 24));
}

unsigned hd_cli_pct_used(uint64_t used, uint64_t avail)
{
    double whole = (double)used + (double)avail;
    double pct;

    if (whole <= 0)
        return 0;
    pct = (double)used * 100.0 / whole;
    return pct >= 100.0 ? 100u : (unsigned)pct + ((double)(unsigned)pct < pct ? 1u : 0u);
}

const char *hd_cli_node_state(unsigned flags, int down)
{
    if (down)
        return "down";
    if (flags & 2u)
        return "decommissioning";
    if ((flags & 5u) == 5u)
        return "maintenance-restart"; /* hoardd --prestop: ends when it rejoins */
    if (flags & 1u)
        return "maintenance";
    return "online";
}

int hd_cli_path_split(const char *arg, char **bucket, char **rest)
{
    const char *slash;
    size_t blen;

    *bucket = NULL;
    *rest = NULL;
    if (!arg)
        return HD_EBADARG;
    slash = strchr(arg, '/');
    blen = slash ? (size_t)(slash - arg) : strlen(arg);
    if (blen == 0)
        return HD_EBADARG;
    *bucket = strndup(arg, blen);
    *rest = strdup(slash ? slash + 1 : "");
    if (!*bucket || !*rest) {
        free(*bucket);
        free(*rest);
        *bucket = NULL;
        *rest = NULL;
        return -ENOMEM;
    }
    return 0;
}

static int escape_append(struct hd_buf *b, const char *s, size_t n)
{
    char *e;
    int rc;

    if (n == 0)
        return 0;
    if (n > INT_MAX)
        return -ENOMEM;
    e = curl_easy_escape(NULL, s, (int)n);
    if (!e)
        return -ENOMEM;
    rc = hd_buf_puts(b, e);
    curl_free(e);
    return rc;
}

int hd_cli_path_encode(struct hd_buf *b, const char *s, int keep_slash)
{
    const char *p = s, *slash;
    int rc;

    if (!keep_slash)
        return escape_append(b, s, strlen(s));
    while ((slash = strchr(p, '/')) != NULL) {
        rc = escape_append(b, p, (size_t)(slash - p));
        if (rc == 0)
            rc = hd_buf_append(b, "/", 1);
        if (rc < 0)
            return rc;
        p = slash + 1;
    }
    return escape_append(b, p, strlen(p));
}

int hd_cli_query_add(struct hd_buf *b, const char *key, const char *value)
{
    int rc;

    rc = hd_buf_puts(b, (b->data && strchr(b->data, '?')) ? "&" : "?");
    if (rc == 0)
        rc = hd_buf_puts(b, key);
    if (rc == 0)
        rc = hd_buf_append(b, "=", 1);
    if (rc == 0)
        rc = hd_cli_path_encode(b, value, 0);
    return rc;
}

int hd_cli_endpoint_normalize(const char *in, char **out)
{
    const char *sep, *host;
    size_t n;
    char *s;

    *out = NULL;
    if (!in || !*in)
        return HD_EBADARG;
    sep = strstr(in, "://");
    if (sep) {
        size_t slen = (size_t)(sep - in);
        if (!((slen == 4 && strncasecmp(in, "http", 4) == 0) ||
              (slen == 5 && strncasecmp(in, "https", 5) == 0)))
            return HD_EBADARG;
        host = sep + 3;
    } else {
        host = in;
    }
    if (*host == '\0' || *host == '/' || *host == ':' || strpbrk(host, "?# \t\r\n"))
        return HD_EBADARG;
    n = strlen(in);
    while (n > 0 && in[n - 1] == '/')
        n--;
    if (sep) {
        s = strndup(in, n);
    } else {
        s = malloc(n + sizeof("http://"));
        if (s) {
            memcpy(s, "http://", 7);
            memcpy(s + 7, in, n);
            s[7 + n] = '\0';
        }
    }
    if (!s)
        return -ENOMEM;
    *out = s;
    return 0;
}

int hd_cli_parse_size(const char *s, uint64_t max, uint64_t *out)
{
    static const struct {
        const char *unit;
        uint64_t mult;
    } units[] = {{"", 1},
                 {"b", 1},
                 {"k", 1ull << 10},
                 {"kib", 1ull << 10},
                 {"kb", 1000},
                 {"m", 1ull << 20},
                 {"mib", 1ull << 20},
                 {"mb", 1000000},
                 {"g", 1ull << 30},
                 {"gib", 1ull << 30},
                 {"gb", 1000000000},
                 {"t", 1ull << 40},
                 {"tib", 1ull << 40},
                 {"tb", 1000000000000ull}};
    char digits[24];
    size_t n = 0, i;
    uint64_t v;

    if (!s)
        return HD_EBADARG;
    while (s[n] >= '0' && s[n] <= '9')
        n++;
    if (n == 0 || n >= sizeof(digits))
        return HD_EBADARG;
    memcpy(digits, s, n);
    digits[n] = '\0';
    if (hd_cli_parse_count(digits, 0, UINT64_MAX, &v) < 0)
        return HD_EBADARG;
    for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcasecmp(s + n, units[i].unit) != 0)
            continue;
        if (v > max / units[i].mult || v * units[i].mult == 0)
            return HD_EBADARG;
        *out = v * units[i].mult;
        return 0;
    }
    return HD_EBADARG;
}

int hd_cli_parse_count(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;

    if (!s || !*s)
        return HD_EBADARG;
    for (; *s; s++) {
        unsigned d;
        if (*s < '0' || *s > '9')
            return HD_EBADARG;
        d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return HD_EBADARG;
        v = v * 10 + d;
    }
    if (v < min || v > max)
        return HD_EBADARG;
    *out = v;
    return 0;
}

void hd_cli_etag_clean(const char *etag, char *out, size_t len)
{
    size_t n;

    if (len == 0)
        return;
    out[0] = '\0';
    if (!etag)
        return;
    if (strncmp(etag, "W/", 2) == 0)
        etag += 2;
    n = strlen(etag);
    if (n >= 2 && etag[0] == '"' && etag[n - 1] == '"') {
        etag++;
        n -= 2;
    }
    if (n >= len)
        n = len - 1;
    memcpy(out, etag, n);
    out[n] = '\0';
}

const char *hd_cli_basename(const char *name)
{
    const char *slash = strrchr(name, '/');

    return slash ? slash + 1 : name;
}

/* ---- table ---------------------------------------------------------------------------- */

void hd_cli_table_init(struct hd_cli_table *t, size_t ncols, const char *const *headers,
                       unsigned right)
{
    memset(t, 0, sizeof(*t));
    t->ncols = ncols;
    t->headers = headers;
    t->right = right;
}

static char *sanitize(const char *s)
{
    char *c = strdup(s ? s : "");
    unsigned char *p;

    if (!c)
        return NULL;
    for (p = (unsigned char *)c; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            *p = '?';
    return c;
}

int hd_cli_table_add(struct hd_cli_table *t, const char *const *row)
{
    size_t i;

    if (t->oom)
        return -ENOMEM;
    if (t->nrows == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        char **cells = realloc(t->cells, cap * t->ncols * sizeof(*cells));
        if (!cells)
            goto oom;
        t->cells = cells;
        t->cap = cap;
    }
    for (i = 0; i < t->ncols; i++) {
        t->cells[t->nrows * t->ncols + i] = sanitize(row[i]);
        if (!t->cells[t->nrows * t->ncols + i]) {
            while (i-- > 0)
                free(t->cells[t->nrows * t->ncols + i]);
            goto oom;
        }
    }
    t->nrows++;
    return 0;
oom:
    t->oom = 1;
    return -ENOMEM;
}

/* Display width in terminal columns: wcwidth() per character when the locale decodes it
 * (main selects a UTF-8 LC_CTYPE), else one column per UTF-8 code point. */
static size_t width(const char *s)
{
    mbstate_t st;
    size_t w = 0, n, len = strlen(s);
    wchar_t wc;
    int cw;

    memset(&st, 0, sizeof(st));
    while (len > 0) {
        n = mbrtowc(&wc, s, len, &st);
        if (n == (size_t)-1 || n == (size_t)-2 || n == 0) {
            /* Not decodable here: count code points of the rest. */
            for (; *s; s++)
                if (((unsigned char)*s & 0xC0) != 0x80)
                    w++;
            return w;
        }
        cw = wcwidth(wc);
        w += cw < 0 ? 1 : (size_t)cw;
        s += n;
        len -= n;
    }
    return w;
}

static void pad(FILE *out, size_t n)
{
    while (n-- > 0)
        fputc(' ', out);
}

static void print_row(const struct hd_cli_table *t, FILE *out, const char *const *row,
                      const size_t *w)
{
    size_t i;

    for (i = 0; i < t->ncols; i++) {
        size_t cw = width(row[i]);
        int last = i + 1 == t->ncols;
        if (i > 0)
            fputs("  ", out);
        if (t->right & (1u << i)) {
            pad(out, w[i] - cw);
            fputs(row[i], out);
        } else {
            fputs(row[i], out);
            if (!last)
                pad(out, w[i] - cw);
        }
    }
    fputc('\n', out);
}

int hd_cli_table_print(const struct hd_cli_table *t, FILE *out)
{
    size_t *w, i, r;

    if (t->oom)
        return -ENOMEM;
    w = calloc(t->ncols ? t->ncols : 1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    for (i = 0; i < t->ncols; i++)
        w[i] = width(t->headers[i]);
    for (r = 0; r < t->nrows; r++)
        for (i = 0; i < t->ncols; i++) {
            size_t cw = width(t->cells[r * t->ncols + i]);
            if (cw > w[i])
                w[i] = cw;
        }
    print_row(t, out, t->headers, w);
    for (r = 0; r < t->nrows; r++)
        print_row(t, out, (const char *const *)&t->cells[r * t->ncols], w);
    free(w);
    return 0;
}

void hd_cli_table_cleanup(struct hd_cli_table *t)
{
    size_t i;

    for (i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof(*t));
}
