/* libFuzzer driver for Range, Content-Range, HTTP-date (hd_http_date_parse and the any-form
 * hd_date_parse of Date / x-amz-date), conditional parsing, the header-list token removal and
 * x-amz-object-attributes (common/httputil).
 * Input: 8 bytes of big-endian object size, then header text; lines feed hd_cond_eval. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/errors.h"
#include "common/httputil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_date(const char *s)
{
    time_t t, t2;
    char buf[32];

    if (hd_http_date_parse(s, &t) == 0) {
        /* anything we accept formats and reparses to the same instant */
        hd_http_date_format(t, buf);
        if (hd_http_date_parse(buf, &t2) != 0 || t2 != t)
            __builtin_trap();
    }
    if (hd_amz_date_parse(s, &t) == 0) {
        hd_http_date_format(t, buf);
        if (hd_http_date_parse(buf, &t2) != 0 || t2 != t)
            __builtin_trap();
    }
    if (hd_date_parse(s, &t) == 0) {
        /* any form it accepts names an instant IMF-fixdate can write and it reads back */
        hd_http_date_format(t, buf);
        if (hd_date_parse(buf, &t2) != 0 || t2 != t)
            __builtin_trap();
    }
    if (hd_http_date_parse(s, &t) == 0 && (hd_date_parse(s, &t2) != 0 || t2 != t))
        __builtin_trap(); /* hd_date_parse reads every HTTP-date the same way */
}

/* The list without the token: shorter or equal, no element equal to it (any case). */
static void check_drop(const char *s)
{
    char out[256], *p, *e;
    int n = hd_list_drop_token(s, "aws-chunked", out, sizeof(out));

    if (n < 0)
        return;
    if ((size_t)n != strlen(out) || (size_t)n > 2 * strlen(s)) /* ", " may replace "," */
        __builtin_trap();
    for (p = out; *p; p = *e ? e + 2 : e) {
        e = strstr(p, ", ");
        if (!e)
            e = p + strlen(p);
        if (e - p == 11 && strncasecmp(p, "aws-chunked", 11) == 0)
            __builtin_trap();
        if (e == p)
            __builtin_trap(); /* no empty elements */
    }
}

/* x-amz-object-attributes: the five bits or HD_EBADARG, nothing else */
static void check_attrs(const char *s)
{
    int a = hd_s3_attributes_parse(s);

    if (a != HD_EBADARG && (a < 0 || a > 31))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t osize = 0, off = 0, len = 0, first, last, total;
    char *s, *f[4] = {NULL, NULL, NULL, NULL};
    struct hd_cond c;
    int rc;

    if (size < 8)
        return 0;
    for (int i = 0; i < 8; i++)
        osize = osize << 8 | data[i];
    s = malloc(size - 8 + 1);
    if (!s)
        return 0;
    memcpy(s, data + 8, size - 8);
    s[size - 8] = '\0';

    rc = hd_range_parse(s, osize, &off, &len);
    if (rc == 0 && (len == 0 || off >= osize || len > osize - off))
        __builtin_trap();
    if (rc != 0 && rc != 1 && rc != HD_ERANGE)
        __builtin_trap();
    rc = hd_content_range_parse(s, &first, &last, &total);
    if (rc == 0 && (first > last || last >= total))
        __builtin_trap();
    if (rc != 0 && rc != HD_EBADARG)
        __builtin_trap();
    check_date(s);
    check_drop(s);
    check_attrs(s);

    /* up to four '\n'-separated fields: If-Match, If-None-Match, IMS, IUS */
    f[0] = s;
    for (int i = 1; i < 4 && f[i - 1]; i++) {
        char *nl = strchr(f[i - 1], '\n');
        if (nl) {
            *nl = '\0';
            f[i] = nl + 1;
        }
    }
    c.if_match = f[0];
    c.if_none_match = f[1];
    c.if_modified_since = f[2];
    c.if_unmodified_since = f[3];
    for (int is_read = 0; is_read < 2; is_read++) {
        rc = hd_cond_eval(&c, "d41d8cd98f00b204e9800998ecf8427e", (time_t)(osize >> 24), is_read);
        if (rc != 0 && rc != HD_EPRECONDITION && rc != HD_ENOTMODIFIED)
            __builtin_trap();
        hd_cond_eval(&c, NULL, 0, is_read);
    }
    for (int i = 0; i < 4; i++)
        if (f[i])
            check_date(f[i]);
    free(s);
    return 0;
}
