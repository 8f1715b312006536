#include "common/httputil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/errors.h"

/* ---- small ASCII helpers (locale independent on purpose) --------------------------------- */

static int is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static int is_ows(int c)
{
    return c == ' ' || c == '\t';
}

static int lower(int c)
{
    return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}

static const char *skip_ows(const char *p)
{
    while (is_ows((unsigned char)*p))
        p++;
    return p;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int hd_str_case_prefix(const char *s, const char *prefix)
{
    if (!s || !prefix)
        return 0;
    for (; *prefix; s++, prefix++) {
        if (lower((unsigned char)*s) != lower((unsigned char)*prefix))
            return 0; /* also stops at the end of s, since *prefix != '\0' */
    }
    return 1;
}

/* Reads 1+ digits at *pp into *out. Returns 1 parsed, 0 no digits, -1 overflow. The cursor
 * moves past all digits even on overflow. */
static int scan_u64(const char **pp, uint64_t *out)
{
    const char *p = *pp;
    uint64_t v = 0;
    int ovf = 0;

    if (!is_digit((unsigned char)*p))
        return 0;
    for (; is_digit((unsigned char)*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            ovf = 1;
        else
            v = v * 10 + d;
    }
    *pp = p;
    *out = v;
    return ovf ? -1 : 1;
}

int hd_parse_u64(const char *s, uint64_t *out)
{
    const char *p = s;
    uint64_t v;

    if (!s || scan_u64(&p, &v) != 1 || *p != '\0')
        return HD_EBADARG;
    *out = v;
    return 0;
}

int hd_parse_i64(const char *s, int64_t *out)
{
    uint64_t v;
    int neg;
    int rc;

    if (!s)
        return HD_EBADARG;
    neg = s[0] == '-';
    rc = hd_parse_u64(s + neg, &v);
    if (rc < 0)
        return rc;
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1)
            return HD_EBADARG;
        *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX)
            return HD_EBADARG;
        *out = (int64_t)v;
    }
    return 0;
}

/* ---- Range ------------------------------------------------------------------------------ */

int hd_range_parse(const char *hdr, uint64_t size, uint64_t *off, uint64_t *len)
{
    const char *p;
    uint64_t a = 0, b = 0;
    int ra, rb;

    if (!hdr)
        return 1;
    p = skip_ows(hdr);
    if (!hd_str_case_prefix(p, "bytes="))
        return 1;
    p = skip_ows(p + 6);
    ra = scan_u64(&p, &a);
    if (*p != '-')
        return 1;
    p++;
    rb = scan_u64(&p, &b);
    p = skip_ows(p);
    if (*p != '\0') /* a ',' (several ranges) or junk */
        return 1;
    if (ra < 0 || rb < 0 || (ra == 0 && rb == 0))
        return 1;
    if (ra == 0) { /* suffix: the last b bytes */
        if (b == 0 || size == 0)
            return HD_ERANGE;
        *off = b >= size ? 0 : size - b;
        *len = size - *off;
        return 0;
    }
    if (rb == 1 && b < a)
        return 1;
    if (a >= size)
        return HD_ERANGE;
    if (rb == 0 || b >= size)
        b = size - 1;
    *off = a;
    *len = b - a + 1;
    return 0;
}

int hd_content_range_parse(const char *hdr, uint64_t *first, uint64_t *last, uint64_t *total)
{
    const char *p = hdr;
    uint64_t a, b, t;

    if (!p || !hd_str_case_prefix(p, "bytes "))
        return HD_EBADARG;
    p += 6;
    if (scan_u64(&p, &a) != 1 || *p++ != '-' || scan_u64(&p, &b) != 1 || *p++ != '/' ||
        scan_u64(&p, &t) != 1 || *p != '\0' || a > b || b >= t)
        return HD_EBADARG;
    *first = a;
    *last = b;
    *total = t;
    return 0;
}

/* ---- Dates ------------------------------------------------------------------------------ */

static const char *const wday_short[7] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char *const wday_long[7] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                         "Thursday", "Friday", "Saturday"};
static const char *const mon_short[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                          "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* Matches one of names[] (case-insensitively, whole name) at *pp; index or -1. */
static int scan_name(const char **pp, const char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        size_t l = strlen(names[i]);
        if (hd_str_case_prefix(*pp, names[i])) {
            *pp += l;
            return i;
        }
    }
    return -1;
}

/* Exactly `n` digits at *pp. */
static int scan_fixed(const char **pp, int n, int *out)
{
    const char *p = *pp;
    int v = 0;

    for (int i = 0; i < n; i++, p++) {
        if (!is_digit((unsigned char)*p))
            return -1;
        v = v * 10 + (*p - '0');
    }
    *pp = p;
    *out = v;
    return 0;
}

static int expect(const char **pp, const char *lit)
{
    size_t l = strlen(lit);

    if (strncmp(*pp, lit, l) != 0)
        return -1;
    *pp += l;
    return 0;
}

/* "HH:MM:SS" */
static int scan_time(const char **pp, int *h, int *m, int *s)
{
    if (scan_fixed(pp, 2, h) < 0 || expect(pp, ":") < 0 || scan_fixed(pp, 2, m) < 0 ||
        expect(pp, ":") < 0 || scan_fixed(pp, 2, s) < 0)
        return -1;
    return 0;
}

static int is_leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    int64_t era;
    unsigned yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = (unsigned)(y - era * 400);
    doy = (153 * (m + (m > 2 ? (unsigned)-3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static int make_time(int year, int mon /* 0..11 */, int day, int h, int mi, int s, time_t *out)
{
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int dim;

    if (mon < 0 || mon > 11 || day < 1 || h > 23 || mi > 59 || s > 60)
        return HD_EBADARG;
    dim = mdays[mon] + (mon == 1 && is_leap(year));
    if (day > dim)
        return HD_EBADARG;
    if (s == 60) /* leap second: POSIX time has none, fold onto :59 */
        s = 59;
    *out = (time_t)(days_from_civil(year, (unsigned)mon + 1, (unsigned)day) * 86400 +
                    (int64_t)h * 3600 + (int64_t)mi * 60 + s);
    return 0;
}

int hd_http_date_parse(const char *s, time_t *out)
{
    const char *p = s;
    int day, mon, year, h, mi, sec;

    if (!s)
        return HD_EBADARG;
    /* RFC 850: the long weekday names all start with the short ones, so try them first. */
    if (scan_name(&p, wday_long, 7) >= 0) {
        if (expect(&p, ", ") < 0 || scan_fixed(&p, 2, &day) < 0 || expect(&p, "-") < 0 ||
            (mon = scan_name(&p, mon_short, 12)) < 0 || expect(&p, "-") < 0 ||
            scan_fixed(&p, 2, &year) < 0 || expect(&p, " ") < 0 ||
            scan_time(&p, &h, &mi, &sec) < 0 || expect(&p, " GMT") < 0 || *p)
            return HD_EBADARG;
        year += year < 70 ? 2000 : 1900;
        return make_time(year, mon, day, h, mi, sec, out);
    }
    p = s;
    if (scan_name(&p, wday_short, 7) < 0)
        return HD_EBADARG;
    if (*p == ',') { /* IMF-fixdate */
        if (expect(&p, ", ") < 0 || scan_fixed(&p, 2, &day) < 0 || expect(&p, " ") < 0 ||
            (mon = scan_name(&p, mon_short, 12)) < 0 || expect(&p, " ") < 0 ||
            scan_fixed(&p, 4, &year) < 0 || expect(&p, " ") < 0 ||
            scan_time(&p, &h, &mi, &sec) < 0 || expect(&p, " GMT") < 0 || *p)
            return HD_EBADARG;
        return make_time(year, mon, day, h, mi, sec, out);
    }
    /* asctime: "Sun Nov  6 08:49:37 1994" */
    if (expect(&p, " ") < 0 || (mon = scan_name(&p, mon_short, 12)) < 0 || expect(&p, " ") < 0)
        return HD_EBADARG;
    if (*p == ' ') {
        p++;
        if (scan_fixed(&p, 1, &day) < 0)
            return HD_EBADARG;
    } else if (scan_fixed(&p, 2, &day) < 0) {
        return HD_EBADARG;
    }
    if (expect(&p, " ") < 0 || scan_time(&p, &h, &mi, &sec) < 0 || expect(&p, " ") < 0 ||
        scan_fixed(&p, 4, &year) < 0 || *p)
        return HD_EBADARG;
    return make_time(year, mon, day, h, mi, sec, out);
}

/* 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z: what hd_http_date_format can write. */
#define DATE_MIN (-62167219200LL)
#define DATE_MAX 253402300799LL

/* A zone after the time of an RFC 1123 / 2822 date: GMT, UT, UTC, Z or +hhmm / -hhmm. 0 with
 * *off the seconds east of UTC, or -1. */
static int scan_zone(const char **pp, long *off)
{
    static const char *const utc[] = {"GMT", "UTC", "UT", "Z"};
    const char *p = *pp;
    int hh, mm, sign;

    for (size_t i = 0; i < sizeof(utc) / sizeof(utc[0]); i++) {
        size_t l = strlen(utc[i]);
        if (strncmp(p, utc[i], l) == 0 && !(p[l] >= 'A' && p[l] <= 'Z')) {
            *pp = p + l;
            *off = 0;
            return 0;
        }
    }
    if (*p != '+' && *p != '-')
        return -1;
    sign = *p == '-' ? -1 : 1;
    p++;
    if (scan_fixed(&p, 2, &hh) < 0 || scan_fixed(&p, 2, &mm) < 0 || hh > 23 || mm > 59)
        return -1;
    *off = sign * (hh * 3600L + mm * 60L);
    *pp = p;
    return 0;
}

/* "Sun, 6 Nov 1994 08:49:37 +0100" (and GMT/UT/UTC/Z): RFC 1123 as RFC 2822 allows it. */
static int parse_rfc1123_zone(const char *s, time_t *out)
{
    const char *p = s;
    int day, mon, year, h, mi, sec, rc;
    long off;

    if (scan_name(&p, wday_short, 7) < 0 || expect(&p, ", ") < 0)
        return HD_EBADARG;
    if (scan_fixed(&p, 2, &day) < 0 && scan_fixed(&p, 1, &day) < 0)
        return HD_EBADARG;
    if (expect(&p, " ") < 0 || (mon = scan_name(&p, mon_short, 12)) < 0 || expect(&p, " ") < 0 ||
        scan_fixed(&p, 4, &year) < 0 || expect(&p, " ") < 0 || scan_time(&p, &h, &mi, &sec) < 0 ||
        expect(&p, " ") < 0 || scan_zone(&p, &off) < 0 || *p)
        return HD_EBADARG;
    if ((rc = make_time(year, mon, day, h, mi, sec, out)) < 0)
        return rc;
    *out -= off;
    return 0;
}

int hd_date_parse(const char *s, time_t *out)
{
    char buf[64];
    size_t n;

    if (!s)
        return HD_EBADARG;
    s = skip_ows(s);
    n = strlen(s);
    while (n && is_ows((unsigned char)s[n - 1]))
        n--;
    if (n == 0 || n >= sizeof(buf))
        return HD_EBADARG;
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (!(is_digit((unsigned char)buf[0])     ? hd_amz_date_parse(buf, out)
          : hd_http_date_parse(buf, out) == 0 ? 0
                                              : parse_rfc1123_zone(buf, out)) &&
        (int64_t)*out >= DATE_MIN && (int64_t)*out <= DATE_MAX)
        return 0;
    return HD_EBADARG;
}

void hd_http_date_format(time_t t, char out[32])
{
    /* Clamp to years 0000..9999 so the fixed-width format always fits. */
    const int64_t lo = DATE_MIN, hi = DATE_MAX;
    struct tm tm;

    if ((int64_t)t < lo)
        t = (time_t)lo;
    if ((int64_t)t > hi)
        t = (time_t)hi;
    if (!gmtime_r(&t, &tm)) {
        snprintf(out, 32, "Thu, 01 Jan 1970 00:00:00 GMT");
        return;
    }
    snprintf(out, 32, "%s, %02d %s %04d %02d:%02d:%02d GMT", wday_short[tm.tm_wday % 7],
             tm.tm_mday % 100, mon_short[tm.tm_mon % 12], (tm.tm_year + 1900) % 10000,
             tm.tm_hour % 100, tm.tm_min % 100, tm.tm_sec % 100);
}

int hd_amz_date_parse(const char *s, time_t *out)
{
    const char *p = s;
    int y, mo, d, h, mi, sec;

    if (!s || scan_fixed(&p, 4, &y) < 0 || scan_fixed(&p, 2, &mo) < 0 ||
        scan_fixed(&p, 2, &d) < 0 || expect(&p, "T") < 0 || scan_fixed(&p, 2, &h) < 0 ||
        scan_fixed(&p, 2, &mi) < 0 || scan_fixed(&p, 2, &sec) < 0 || expect(&p, "Z") < 0 || *p)
        return HD_EBADARG;
    return make_time(y, mo - 1, d, h, mi, sec, out);
}

/* ---- Conditional requests ----------------------------------------------------------------- */

static int blank(const char *s)
{
    if (!s)
        return 1;
    s = skip_ows(s);
    return *s == '\0';
}

/* Does the ETag list match etag[0..elen)? weak: W/ tags compare equal to strong ones. */
static int etag_list_match(const char *list, const char *etag, size_t elen, int weak)
{
    const char *p = list;

    while (*p) {
        const char *start, *end;
        int is_weak = 0;

        while (is_ows((unsigned char)*p) || *p == ',')
            p++;
        if (!*p)
            break;
        if (*p == '*') {
            const char *q = skip_ows(p + 1);
            if (*q == ',' || *q == '\0')
                return etag != NULL;
        }
        if (p[0] == 'W' && p[1] == '/') {
            is_weak = 1;
            p += 2;
        }
        if (*p == '"') {
            start = p + 1;
            end = strchr(start, '"');
            if (!end)
                end = start + strlen(start);
            p = *end ? end + 1 : end;
        } else {
            start = p;
            while (*p && *p != ',')
                p++;
            end = p;
            while (end > start && is_ows((unsigned char)end[-1]))
                end--;
        }
        if (etag && (size_t)(end - start) == elen && memcmp(start, etag, elen) == 0 &&
            (weak || !is_weak))
            return 1;
        while (*p && *p != ',') /* junk after a quoted tag */
            p++;
    }
    return 0;
}

int hd_s3_attributes_parse(const char *h)
{
    static const struct {
        const char *name;
        int bit;
    } names[] = {{"ETag", HD_ATTR_ETAG},
                 {"Checksum", HD_ATTR_CHECKSUM},
                 {"ObjectParts", HD_ATTR_PARTS},
                 {"StorageClass", HD_ATTR_CLASS},
                 {"ObjectSize", HD_ATTR_SIZE}};
    int want = 0;

    while (h && *h) {
        const char *e = strchr(h, ',');
        size_t n = e ? (size_t)(e - h) : strlen(h), i = 0;
        const char *next = e ? e + 1 : h + n;
        while (n && (*h == ' ' || *h == '\t')) {
            h++;
            n--;
        }
        while (n && (h[n - 1] == ' ' || h[n - 1] == '\t'))
            n--;
        if (n) {
            for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (strlen(names[i].name) == n && strncmp(h, names[i].name, n) == 0)
                    break;
            if (i == sizeof(names) / sizeof(names[0]))
                return HD_EBADARG;
            want |= names[i].bit;
        }
        h = next;
    }
    return want;
}

const char *hd_cond_failed(const struct hd_cond *c)
{
    return c && !blank(c->if_match) ? "If-Match" : "If-Unmodified-Since";
}

int hd_cond_eval(const struct hd_cond *c, const char *etag, time_t mtime, int is_read)
{
    size_t elen = 0;
    time_t t;

    if (!c)
        return 0;
    if (etag) { /* be forgiving about a quoted ETag from the caller */
        elen = strlen(etag);
        if (elen >= 2 && etag[0] == '"' && etag[elen - 1] == '"') {
            etag++;
            elen -= 2;
        }
    }
    if (!blank(c->if_match)) {
        if (!etag_list_match(c->if_match, etag, elen, 0))
            return HD_EPRECONDITION;
    } else if (etag && !blank(c->if_unmodified_since) &&
               hd_date_parse(c->if_unmodified_since, &t) == 0) {
        if (mtime > t)
            return HD_EPRECONDITION;
    }
    if (!blank(c->if_none_match)) {
        if (etag_list_match(c->if_none_match, etag, elen, 1))
            return is_read ? HD_ENOTMODIFIED : HD_EPRECONDITION;
    } else if (is_read && etag && !blank(c->if_modified_since) &&
               hd_date_parse(c->if_modified_since, &t) == 0) {
        if (mtime <= t)
            return HD_ENOTMODIFIED;
    }
    return 0;
}

/* ---- URL encoding and query strings ------------------------------------------------------- */

int hd_url_decode(const char *in, size_t n, char *out, size_t *outlen, int plus_as_space)
{
    size_t i, j = 0;

    for (i = 0; i < n; i++) {
        char c = in[i];
        if (c == '%') {
            int hi, lo;
            if (n - i < 3)
                return HD_EBADARG;
            hi = hexval((unsigned char)in[i + 1]);
            lo = hexval((unsigned char)in[i + 2]);
            if (hi < 0 || lo < 0)
                return HD_EBADARG;
            c = (char)(hi << 4 | lo);
            i += 2;
        } else if (c == '+' && plus_as_space) {
            c = ' ';
        }
        out[j++] = c; /* j <= i, so decoding in place is safe */
    }
    out[j] = '\0';
    if (outlen)
        *outlen = j;
    return 0;
}

int hd_uri_encode(struct hd_buf *b, const char *s, size_t n, int keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t i = 0;

    while (i < n) {
        size_t run = i;
        char esc[3];

        /* Append runs of unreserved bytes in one call. */
        while (run < n) {
            unsigned char c = (unsigned char)s[run];
            if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || is_digit(c) || c == '-' ||
                  c == '.' || c == '_' || c == '~' || (c == '/' && keep_slash)))
                break;
            run++;
        }
        if (run > i && hd_buf_append(b, s + i, run - i) < 0)
            return -ENOMEM;
        if (run >= n)
            break;
        esc[0] = '%';
        esc[1] = hex[(unsigned char)s[run] >> 4];
        esc[2] = hex[(unsigned char)s[run] & 15];
        if (hd_buf_append(b, esc, 3) < 0)
            return -ENOMEM;
        i = run + 1;
    }
    return b->oom ? -ENOMEM : 0;
}

int hd_query_parse(const char *raw, struct hd_query *q)
{
    size_t rawlen, nparams = 0, pos = 0, i;
    const char *p, *end;
    int rc;

    memset(q, 0, sizeof(*q));
    if (!raw || !*raw)
        return 0;
    rawlen = strnlen(raw, (size_t)HD_QUERY_MAX_LEN + 1);
    if (rawlen > HD_QUERY_MAX_LEN)
        return HD_EBADARG;
    end = raw + rawlen;
    for (p = raw; p < end;) { /* count non-empty segments */
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *e = amp ? amp : end;
        if (e > p)
            nparams++;
        p = amp ? amp + 1 : end;
    }
    if (nparams > HD_QUERY_MAX_PARAMS)
        return HD_EBADARG;
    if (nparams == 0)
        return 0;
    q->params = calloc(nparams, sizeof(*q->params));
    /* Decoding never grows: keys and values fit in rawlen plus one NUL each. */
    q->store = malloc(rawlen + 2 * nparams);
    if (!q->params || !q->store) {
        rc = -ENOMEM;
        goto out;
    }
    i = 0;
    for (p = raw; p < end;) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *e = amp ? amp : end;
        struct hd_query_param *qp;
        const char *eq;

        if (e == p) {
            p = amp ? amp + 1 : end;
            continue;
        }
        qp = &q->params[i++];
        eq = memchr(p, '=', (size_t)(e - p));
        rc = hd_url_decode(p, (size_t)((eq ? eq : e) - p), q->store + pos, &qp->key_len, 1);
        if (rc < 0)
            goto out;
        qp->key = q->store + pos;
        pos += qp->key_len + 1;
        if (eq) {
            rc = hd_url_decode(eq + 1, (size_t)(e - eq - 1), q->store + pos, &qp->value_len, 1);
            if (rc < 0)
                goto out;
        } else {
            q->store[pos] = '\0';
            qp->value_len = 0;
        }
        qp->value = q->store + pos;
        pos += qp->value_len + 1;
        p = amp ? amp + 1 : end;
    }
    q->n = i;
    return 0;
out:
    hd_query_free(q);
    return rc;
}

const struct hd_query_param *hd_query_find(const struct hd_query *q, const char *key)
{
    size_t klen;

    if (!q || !key)
        return NULL;
    klen = strlen(key);
    for (size_t i = 0; i < q->n; i++) {
        if (q->params[i].key_len == klen && memcmp(q->params[i].key, key, klen) == 0)
            return &q->params[i];
    }
    return NULL;
}

const char *hd_query_get(const struct hd_query *q, const char *key)
{
    const struct hd_query_param *p = hd_query_find(q, key);

    return p ? p->value : NULL;
}

void hd_query_free(struct hd_query *q)
{
    if (!q)
        return;
    free(q->params);
    free(q->store);
    memset(q, 0, sizeof(*q));
}

/* ---- Names ------------------------------------------------------------------------------ */

static int has_suffix(const char *s, size_t n, const char *suf)
{
    size_t l = strlen(suf);

    return n >= l && memcmp(s + n - l, suf, l) == 0;
}

/* Four dot-separated, all-digit labels ("192.168.5.4"). */
static int looks_like_ipv4(const char *s)
{
    int groups = 0;

    for (;;) {
        if (!is_digit((unsigned char)*s))
            return 0;
        while (is_digit((unsigned char)*s))
            s++;
        groups++;
        if (*s == '\0')
            return groups == 4;
        if (*s != '.')
            return 0;
        s++;
    }
}

int hd_id_check(const char *id)
{
    static const char ok[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-";
    size_t n = id ? strlen(id) : 0;

    return n && n <= HD_ID_MAX && strspn(id, ok) == n ? 0 : -1;
}

int hd_bucket_name_check(const char *name)
{
    static const char *const bad_prefix[] = {"xn--", "sthree-", "amzn-s3-demo-"};
    static const char *const bad_suffix[] = {"-s3alias", "--ol-s3", ".mrap", "--x-s3",
                                             "--table-s3"};
    size_t n, i;

    if (!name)
        return HD_EBADBUCKETNAME;
    n = strnlen(name, 64);
    if (n < 3 || n > 63)
        return HD_EBADBUCKETNAME;
    for (i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || is_digit((unsigned char)c) || c == '-' || c == '.'))
            return HD_EBADBUCKETNAME;
        /* "..", ".-" and "-.": not a DNS label sequence (s3-tests' dns_dot_dot, dot_dash,
         * dash_dot names) */
        if (i > 0 && (c == '.' || name[i - 1] == '.') && (c == '.' || c == '-') &&
            (name[i - 1] == '.' || name[i - 1] == '-'))
            return HD_EBADBUCKETNAME;
    }
    if (name[0] == '-' || name[0] == '.' || name[n - 1] == '-' || name[n - 1] == '.')
        return HD_EBADBUCKETNAME;
    if (looks_like_ipv4(name))
        return HD_EBADBUCKETNAME;
    for (i = 0; i < sizeof(bad_prefix) / sizeof(bad_prefix[0]); i++)
        if (strncmp(name, bad_prefix[i], strlen(bad_prefix[i])) == 0)
            return HD_EBADBUCKETNAME;
    for (i = 0; i < sizeof(bad_suffix) / sizeof(bad_suffix[0]); i++)
        if (has_suffix(name, n, bad_suffix[i]))
            return HD_EBADBUCKETNAME;
    return 0;
}

/* Strict UTF-8 (RFC 3629 table): no overlongs, surrogates, > U+10FFFF; NUL rejected too. */
static int utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;

    while (i < n) {
        unsigned char c = s[i];
        unsigned char lo = 0x80, hi = 0xBF;
        size_t need;

        if (c == 0)
            return 0;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            need = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            if (c == 0xE0)
                lo = 0xA0;
            else if (c == 0xED)
                hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                hi = 0x8F;
        } else {
            return 0;
        }
        if (n - i - 1 < need)
            return 0;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return 0;
        for (size_t k = 2; k <= need; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF)
                return 0;
        i += need + 1;
    }
    return 1;
}

int hd_object_name_check(const char *name, size_t len)
{
    if (!name || len == 0)
        return HD_EBADKEY;
    if (len > 1024)
        return HD_EKEYTOOLONG;
    if (!utf8_valid((const unsigned char *)name, len))
        return HD_EBADKEY;
    return 0;
}

int hd_url_decode_dup(const char *s, size_t n, char **out, size_t *outlen)
{
    char *d = malloc(n + 1);
    size_t len;

    *out = NULL;
    if (!d)
        return -ENOMEM;
    if (hd_url_decode(s, n, d, &len, 0) < 0) {
        free(d);
        return HD_EBADARG;
    }
    *out = d;
    if (outlen)
        *outlen = len;
    return 0;
}

int hd_bucket_decode(const char *s, size_t n, char **out)
{
    size_t len;
    int rc = hd_url_decode_dup(s, n, out, &len);

    if (rc == HD_EBADARG || (rc == 0 && strlen(*out) != len)) {
        free(*out);
        *out = NULL;
        return HD_EBADBUCKETNAME;
    }
    return rc;
}

int hd_copy_source_parse(const char *src, char **bucket, char **key)
{
    const char *p = src, *q, *slash;
    char *dec = NULL;
    size_t n, klen;
    int rc;

    *bucket = *key = NULL;
    if (*p == '/')
        p++;
    q = strchr(p, '?'); /* ?versionId=...: the caller decides what versions exist */
    n = q ? (size_t)(q - p) : strlen(p);
    if (!(dec = malloc(n + 1)))
        return -ENOMEM;
    if (hd_url_decode(p, n, dec, &n, 0) < 0) {
        rc = HD_EBADARG;
        goto out;
    }
    slash = memchr(dec, '/', n);
    if (!slash || slash == dec || !slash[1]) {
        rc = HD_EBADARG;
        goto out;
    }
    klen = n - (size_t)(slash + 1 - dec);
    if (!(*bucket = strndup(dec, (size_t)(slash - dec)))) {
        rc = -ENOMEM;
        goto out;
    }
    if (strlen(*bucket) != (size_t)(slash - dec) || hd_bucket_name_check(*bucket) < 0) {
        rc = HD_EBADBUCKETNAME;
        goto out;
    }
    if ((rc = hd_object_name_check(slash + 1, klen)) < 0)
        goto out;
    if (!(*key = malloc(klen + 1))) {
        rc = -ENOMEM;
        goto out;
    }
    memcpy(*key, slash + 1, klen);
    (*key)[klen] = '\0';
    rc = 0;
out:
    free(dec);
    if (rc < 0) {
        free(*bucket);
        free(*key);
        *bucket = *key = NULL;
    }
    return rc;
}

static const char *const unsupported_sub[] = {"policy",
                                              "lifecycle",
                                              "tagging",
                                              "cors",
                                              "website",
                                              "logging",
                                              "replication",
                                              "encryption",
                                              "notification",
                                              "requestPayment",
                                              "accelerate",
                                              "object-lock",
                                              "legal-hold",
                                              "retention",
                                              "inventory",
                                              "metrics",
                                              "analytics",
                                              "intelligent-tiering",
                                              "ownershipControls",
                                              "publicAccessBlock",
                                              "torrent",
                                              "restore",
                                              "select",
                                              "attributes",
                                              "policyStatus",
                                              NULL};

int hd_s3_unsupported_subresource(const struct hd_query *q, const char *allowed)
{
    size_t i;

    for (i = 0; unsupported_sub[i]; i++)
        if ((!allowed || strcmp(unsupported_sub[i], allowed) != 0) &&
            hd_query_find(q, unsupported_sub[i]))
            return 1;
    return 0;
}

char *hd_s3_vhost_path(const char *host, const char *domain, const char *path)
{
    size_t dl = domain ? strlen(domain) : 0, hl;
    const char *colon;
    struct hd_buf b;

    if (!dl || !host)
        return NULL;
    colon = strrchr(host, ':');
    hl = colon && !strchr(colon, ']') ? (size_t)(colon - host) : strlen(host);
    if (hl <= dl + 1 || host[hl - dl - 1] != '.' || strncasecmp(host + hl - dl, domain, dl) != 0)
        return NULL;
    hd_buf_init(&b);
    hd_buf_printf(&b, "/%.*s%s", (int)(hl - dl - 1), host, path);
    if (b.oom) {
        hd_buf_cleanup(&b);
        return NULL;
    }
    return hd_buf_steal(&b, NULL);
}

int hd_list_drop_token(const char *list, const char *token, char *out, size_t max)
{
    size_t tl = strlen(token), n = 0;
    const char *p = list;

    if (!max)
        return -1;
    out[0] = '\0';
    while (*p) {
        const char *e = strchr(p, ','), *a, *b;
        if (!e)
            e = p + strlen(p);
        a = skip_ows(p);
        b = e;
        while (b > a && is_ows((unsigned char)b[-1]))
            b--;
        if (b > a && !((size_t)(b - a) == tl && strncasecmp(a, token, tl) == 0)) {
            size_t need = (size_t)(b - a) + (n ? 2 : 0);
            if (n + need + 1 > max)
                return -1;
            if (n) {
                memcpy(out + n, ", ", 2);
                n += 2;
            }
            memcpy(out + n, a, (size_t)(b - a));
            n += (size_t)(b - a);
            out[n] = '\0';
        }
        p = *e ? e + 1 : e;
    }
    return (int)n;
}

int hd_etag_is_md5(const char *etag)
{
    size_t i;

    if (strlen(etag) != 32)
        return 0;
    for (i = 0; i < 32; i++)
        if (!strchr("0123456789abcdefABCDEF", etag[i]))
            return 0;
    return 1;
}
