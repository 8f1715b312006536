/* Unit tests for common/httputil: Range, HTTP dates, conditionals, URL/query, names. */
#include "common/httputil.h"

#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "test/unit/hd_test.h"

#define BIG "18446744073709551615"  /* UINT64_MAX */
#define HUGE "18446744073709551616" /* UINT64_MAX + 1 */

HD_SUITE(httputil_range)
{
    static const struct {
        const char *hdr;
        uint64_t size;
        int rc;
        uint64_t off, len;
    } t[] = {
        /* plain a-b */
        {"bytes=0-0", 10, 0, 0, 1},
        {"bytes=0-9", 10, 0, 0, 10},
        {"bytes=2-5", 10, 0, 2, 4},
        {"bytes=9-9", 10, 0, 9, 1},
        {"bytes=0-99", 10, 0, 0, 10},         /* b clamped */
        {"bytes=5-" BIG, 10, 0, 5, 5},        /* b == UINT64_MAX clamped */
        {"bytes=10-10", 10, HD_ERANGE, 0, 0}, /* a == size */
        {"bytes=11-20", 10, HD_ERANGE, 0, 0},
        {"bytes=5-2", 10, 1, 0, 0}, /* b < a: invalid -> ignore */
        {"bytes=1-0", 10, 1, 0, 0},
        /* open ended */
        {"bytes=0-", 10, 0, 0, 10},
        {"bytes=9-", 10, 0, 9, 1},
        {"bytes=10-", 10, HD_ERANGE, 0, 0},
        {"bytes=" BIG "-", 10, HD_ERANGE, 0, 0},
        /* suffix */
        {"bytes=-1", 10, 0, 9, 1},
        {"bytes=-3", 10, 0, 7, 3},
        {"bytes=-10", 10, 0, 0, 10},
        {"bytes=-11", 10, 0, 0, 10}, /* longer than the object: whole object */
        {"bytes=-" BIG, 10, 0, 0, 10},
        {"bytes=-0", 10, HD_ERANGE, 0, 0},
        /* empty object: S3 answers 416 for any range */
        {"bytes=0-", 0, HD_ERANGE, 0, 0},
        {"bytes=0-0", 0, HD_ERANGE, 0, 0},
        {"bytes=0-10", 0, HD_ERANGE, 0, 0},
        {"bytes=-5", 0, HD_ERANGE, 0, 0},
        {"bytes=-0", 0, HD_ERANGE, 0, 0},
        {"bytes=5-2", 0, 1, 0, 0},
        /* size 1 */
        {"bytes=0-0", 1, 0, 0, 1},
        {"bytes=0-", 1, 0, 0, 1},
        {"bytes=-1", 1, 0, 0, 1},
        {"bytes=-2", 1, 0, 0, 1},
        {"bytes=1-", 1, HD_ERANGE, 0, 0},
        {"bytes=1-1", 1, HD_ERANGE, 0, 0},
        /* huge sizes */
        {"bytes=0-", UINT64_MAX, 0, 0, UINT64_MAX},
        {"bytes=-1", UINT64_MAX, 0, UINT64_MAX - 1, 1},
        {"bytes=" BIG "-", UINT64_MAX, HD_ERANGE, 0, 0},
        {"bytes=0-" BIG, UINT64_MAX, 0, 0, UINT64_MAX},
        /* overflowing numbers -> ignore */
        {"bytes=" HUGE "-", 10, 1, 0, 0},
        {"bytes=0-" HUGE, 10, 1, 0, 0},
        {"bytes=-" HUGE, 10, 1, 0, 0},
        {"bytes=99999999999999999999999999-", 10, 1, 0, 0},
        /* case and whitespace */
        {"Bytes=0-1", 10, 0, 0, 2},
        {"BYTES=0-1", 10, 0, 0, 2},
        {" bytes=0-1 ", 10, 0, 0, 2},
        {"bytes= 0-1", 10, 0, 0, 2},
        {"bytes=0-1\t", 10, 0, 0, 2},
        {"bytes =0-1", 10, 1, 0, 0},
        {"bytes=0 -1", 10, 1, 0, 0},
        {"bytes=0- 1", 10, 1, 0, 0},
        /* several ranges, bad units and junk -> ignore */
        {"bytes=0-1,3-4", 10, 1, 0, 0},
        {"bytes=0-1, 3-4", 10, 1, 0, 0},
        {"bytes=0-1,", 10, 1, 0, 0},
        {"bytes=,0-1", 10, 1, 0, 0},
        {"bytes=-", 10, 1, 0, 0},
        {"bytes=", 10, 1, 0, 0},
        {"bytes", 10, 1, 0, 0},
        {"", 10, 1, 0, 0},
        {"items=0-1", 10, 1, 0, 0},
        {"bytes:0-1", 10, 1, 0, 0},
        {"bytes=a-b", 10, 1, 0, 0},
        {"bytes=0x1-2", 10, 1, 0, 0},
        {"bytes=+1-2", 10, 1, 0, 0},
        {"bytes=-+1", 10, 1, 0, 0},
        {"bytes=--1", 10, 1, 0, 0},
        {"bytes=1--2", 10, 1, 0, 0},
        {"bytes=1-2-3", 10, 1, 0, 0},
        {"bytes=1-2x", 10, 1, 0, 0},
        {"bytes=1.5-2", 10, 1, 0, 0},
    };

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        uint64_t off = 12345, len = 12345;
        int rc = hd_range_parse(t[i].hdr, t[i].size, &off, &len);
        if (rc != t[i].rc || (rc == 0 && (off != t[i].off || len != t[i].len)))
            fprintf(stderr, "  range \"%s\" size %llu: rc %d off %llu len %llu\n", t[i].hdr,
                    (unsigned long long)t[i].size, rc, (unsigned long long)off,
                    (unsigned long long)len);
        CHECK_EQ_INT(rc, t[i].rc);
        if (rc == 0) {
            CHECK(off == t[i].off);
            CHECK(len == t[i].len);
        }
    }
    {
        uint64_t off, len;
        CHECK_EQ_INT(hd_range_parse(NULL, 10, &off, &len), 1);
    }
}

/* The Content-Range of an upstream's 206 (common/s3client trusts nothing else about which
 * bytes it got): what sscanf("bytes %llu-%llu/%llu") let through must be refused. */
HD_SUITE(httputil_content_range)
{
    static const struct {
        const char *hdr;
        int ok;
        uint64_t first, last, total;
    } t[] = {
        {"bytes 0-9/10", 1, 0, 9, 10},
        {"bytes 100-199/10000", 1, 100, 199, 10000},
        {"BYTES 5-5/6", 1, 5, 5, 6},
        {"bytes 0-18446744073709551614/" BIG, 1, 0, UINT64_MAX - 1, UINT64_MAX},
        {"bytes -1-98/10000", 0, 0, 0, 0}, /* a sign: sscanf wrapped it to 2^64-1 */
        {"bytes +1-98/10000", 0, 0, 0, 0},
        {"bytes 100-199/10000 junk", 0, 0, 0, 0},
        {"bytes 100-199/10000x", 0, 0, 0, 0},
        {"bytes  100-199/10000", 0, 0, 0, 0}, /* sscanf skipped the spaces */
        {"bytes 100 -199/10000", 0, 0, 0, 0},
        {"bytes 100-199/150", 0, 0, 0, 0}, /* past the total */
        {"bytes 100-199/199", 0, 0, 0, 0},
        {"bytes 200-100/1000", 0, 0, 0, 0}, /* backwards */
        {"bytes 0-9/" HUGE, 0, 0, 0, 0},    /* sscanf clamped it to 2^64-1 */
        {"bytes 0-" HUGE "/" HUGE, 0, 0, 0, 0},
        {"bytes 0-9/*", 0, 0, 0, 0},
        {"bytes */10", 0, 0, 0, 0},
        {"bytes=0-9/10", 0, 0, 0, 0},
        {"items 0-9/10", 0, 0, 0, 0},
        {"bytes 0-9", 0, 0, 0, 0},
        {"bytes -9/10", 0, 0, 0, 0},
        {"", 0, 0, 0, 0},
    };

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        uint64_t a = 7, b = 7, n = 7;
        int rc = hd_content_range_parse(t[i].hdr, &a, &b, &n);
        if ((rc == 0) != t[i].ok)
            fprintf(stderr, "  content-range \"%s\": rc %d\n", t[i].hdr, rc);
        CHECK_EQ_INT(rc, t[i].ok ? 0 : HD_EBADARG);
        if (t[i].ok) {
            CHECK(a == t[i].first);
            CHECK(b == t[i].last);
            CHECK(n == t[i].total);
        } else {
            CHECK(a == 7 && b == 7 && n == 7); /* untouched */
        }
    }
    {
        uint64_t a, b, n;
        CHECK_EQ_INT(hd_content_range_parse(NULL, &a, &b, &n), HD_EBADARG);
    }
}

HD_SUITE(httputil_dates)
{
    static const struct {
        const char *s;
        int ok;
        long long t;
    } t[] = {
        {"Sun, 06 Nov 1994 08:49:37 GMT", 1, 784111777},
        {"Sunday, 06-Nov-94 08:49:37 GMT", 1, 784111777},
        {"Sun Nov  6 08:49:37 1994", 1, 784111777},
        {"Sun Nov 06 08:49:37 1994", 1, 784111777},
        {"Thu, 01 Jan 1970 00:00:00 GMT", 1, 0},
        {"Wed, 31 Dec 1969 23:59:59 GMT", 1, -1},
        {"Tue, 29 Feb 2000 12:00:00 GMT", 1, 951825600},
        {"Fri, 31 Dec 9999 23:59:59 GMT", 1, 253402300799LL},
        {"Tue, 19 Jan 2038 03:14:08 GMT", 1, 2147483648LL},
        {"Thursday, 01-Jan-70 00:00:00 GMT", 1, 0},
        {"Saturday, 01-Jan-00 00:00:00 GMT", 1, 946684800},
        {"Wed, 21 Oct 2015 07:28:60 GMT", 1, 1445412539}, /* leap second folds to :59 */
        {"sun, 06 nov 1994 08:49:37 GMT", 1, 784111777},  /* names case-insensitive */
        {"Mon, 06 Nov 1994 08:49:37 GMT", 1, 784111777},  /* weekday not cross-checked */
        /* malformed */
        {"", 0, 0},
        {"Sun, 06 Nov 1994 08:49:37", 0, 0},
        {"Sun, 06 Nov 1994 08:49:37 UTC", 0, 0},
        {"Sun, 06 Nov 1994 08:49:37 GMT ", 0, 0},
        {" Sun, 06 Nov 1994 08:49:37 GMT", 0, 0},
        {"Sun, 6 Nov 1994 08:49:37 GMT", 0, 0},
        {"Sun, 06 Nov 94 08:49:37 GMT", 0, 0},
        {"Sun, 06 Nvm 1994 08:49:37 GMT", 0, 0},
        {"Sux, 06 Nov 1994 08:49:37 GMT", 0, 0},
        {"Sun, 31 Nov 1994 08:49:37 GMT", 0, 0},
        {"Sun, 00 Nov 1994 08:49:37 GMT", 0, 0},
        {"Mon, 29 Feb 1900 08:49:37 GMT", 0, 0},
        {"Sun, 06 Nov 1994 24:00:00 GMT", 0, 0},
        {"Sun, 06 Nov 1994 08:60:00 GMT", 0, 0},
        {"Sun, 06 Nov 1994 08:49:61 GMT", 0, 0},
        {"Sun, 06 Nov 1994 8:49:37 GMT", 0, 0},
        {"Sun, 06 Nov 1994 08-49-37 GMT", 0, 0},
        {"Sunday, 06 Nov 1994 08:49:37 GMT", 0, 0},
        {"Sun, 06-Nov-94 08:49:37 GMT", 0, 0},
        {"Sun Nov 6 08:49:37 1994", 0, 0},
        {"Sun Nov  6 08:49:37 1994 GMT", 0, 0},
        {"1994-11-06T08:49:37Z", 0, 0},
        {"784111777", 0, 0},
    };

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        time_t out = 42;
        int rc = hd_http_date_parse(t[i].s, &out);
        if ((rc == 0) != t[i].ok || (rc == 0 && (long long)out != t[i].t))
            fprintf(stderr, "  date \"%s\": rc %d t %lld\n", t[i].s, rc, (long long)out);
        CHECK_EQ_INT(rc == 0, t[i].ok);
        if (t[i].ok)
            CHECK_EQ_INT(out, t[i].t);
    }
    {
        time_t out;
        CHECK_EQ_INT(hd_http_date_parse(NULL, &out), HD_EBADARG);
    }

    /* format and round trip */
    {
        char buf[32];
        time_t out;
        static const long long ts[] = {0,          1,          784111777,   951825600,
                                       1700000000, 4102444800, 2147483648LL};
        hd_http_date_format(784111777, buf);
        CHECK_EQ_STR(buf, "Sun, 06 Nov 1994 08:49:37 GMT");
        hd_http_date_format(0, buf);
        CHECK_EQ_STR(buf, "Thu, 01 Jan 1970 00:00:00 GMT");
        for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
            hd_http_date_format((time_t)ts[i], buf);
            CHECK_EQ_INT(strlen(buf), 29);
            CHECK_EQ_INT(hd_http_date_parse(buf, &out), 0);
            CHECK_EQ_INT(out, ts[i]);
        }
        hd_http_date_format((time_t)999999999999999LL, buf); /* clamped */
        CHECK_EQ_STR(buf, "Fri, 31 Dec 9999 23:59:59 GMT");
    }

    /* x-amz-date */
    {
        static const struct {
            const char *s;
            int ok;
            long long t;
        } a[] = {
            {"20130524T000000Z", 1, 1369353600}, {"19700101T000000Z", 1, 0},
            {"20000229T235959Z", 1, 951868799},  {"20150830T123600Z", 1, 1440938160},
            {"20130524T000000", 0, 0},           {"20130524T000000Z ", 0, 0},
            {"2013-05-24T00:00:00Z", 0, 0},      {"20130524 000000Z", 0, 0},
            {"20131324T000000Z", 0, 0},          {"20130000T000000Z", 0, 0},
            {"20130230T000000Z", 0, 0},          {"20130524T240000Z", 0, 0},
            {"2013052T000000Z", 0, 0},           {"", 0, 0},
        };
        for (size_t i = 0; i < sizeof(a) / sizeof(a[0]); i++) {
            time_t out = 0;
            int rc = hd_amz_date_parse(a[i].s, &out);
            CHECK_EQ_INT(rc == 0, a[i].ok);
            if (a[i].ok)
                CHECK_EQ_INT(out, a[i].t);
        }
    }
}

/* hd_date_parse: every form a client writes in Date, x-amz-date or a conditional header. */
HD_SUITE(httputil_date_any)
{
    static const struct {
        const char *s;
        int ok;
        long long t;
    } t[] = {
        /* the three HTTP-date forms */
        {"Sun, 06 Nov 1994 08:49:37 GMT", 1, 784111777},
        {"Sunday, 06-Nov-94 08:49:37 GMT", 1, 784111777},
        {"Sun Nov  6 08:49:37 1994", 1, 784111777},
        /* botocore formatdate() (SigV4 with Date only) and s3cmd's x-amz-date */
        {"Wed, 25 Nov 2026 13:30:59 -0000", 1, 1795613459},
        {"Wed, 25 Nov 2026 13:30:59 +0000", 1, 1795613459},
        {"Wed, 25 Nov 2026 14:30:59 +0100", 1, 1795613459},
        {"Wed, 25 Nov 2026 08:00:59 -0530", 1, 1795613459},
        {"Wed, 25 Nov 2026 13:30:59 UTC", 1, 1795613459},
        {"Wed, 25 Nov 2026 13:30:59 UT", 1, 1795613459},
        {"Wed, 25 Nov 2026 13:30:59 Z", 1, 1795613459},
        {"Sun, 6 Nov 1994 08:49:37 GMT", 1, 784111777}, /* RFC 2822: one-digit day */
        /* ISO 8601 basic (x-amz-date; a Date used for SigV4) */
        {"20261125T133059Z", 1, 1795613459},
        /* blanks around are ignored */
        {"  Sun, 06 Nov 1994 08:49:37 GMT \t", 1, 784111777},
        {"Tue, 07 Jul 1950 21:53:04 GMT", 1, -614916416},
        {"Fri, 31 Dec 9999 23:59:59 GMT", 1, 253402300799LL},
        /* malformed */
        {"", 0, 0},
        {"   ", 0, 0},
        {"Bad Date", 0, 0},
        {"Wed, 25 Nov 2026 13:30:59", 0, 0},
        {"Wed, 25 Nov 2026 13:30:59 +000", 0, 0},
        {"Wed, 25 Nov 2026 13:30:59 +2400", 0, 0},
        {"Wed, 25 Nov 2026 13:30:59 +0060", 0, 0},
        {"Wed, 25 Nov 2026 13:30:59 EST", 0, 0},
        {"Wed, 25 Nov 2026 13:30:59 GMTX", 0, 0},
        {"Wed, 25 Nov 2026 13:30:59 -0000 x", 0, 0},
        {"Fri, 31 Dec 9999 23:59:59 -0100", 0, 0}, /* past year 9999 */
        {"Sat, 01 Jan 0000 00:00:00 +0100", 0, 0}, /* before year 0 */
        {"2026-11-25T13:30:59Z", 0, 0},
        {"20261125T133059", 0, 0},
        {"1795613459", 0, 0},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        time_t out = 42;
        int rc = hd_date_parse(t[i].s, &out);
        if ((rc == 0) != t[i].ok || (rc == 0 && (long long)out != t[i].t))
            fprintf(stderr, "  date \"%s\": rc %d t %lld\n", t[i].s, rc, (long long)out);
        CHECK_EQ_INT(rc == 0, t[i].ok);
        if (t[i].ok)
            CHECK_EQ_INT(out, t[i].t);
    }
    {
        time_t out;
        CHECK_EQ_INT(hd_date_parse(NULL, &out), HD_EBADARG);
    }
    /* conditional headers read the same forms */
    {
        struct hd_cond c = {.if_unmodified_since = "Wed, 25 Nov 2026 13:30:59 -0000"};
        CHECK_EQ_INT(hd_cond_eval(&c, "x", 1795613459, 0), 0);
        CHECK_EQ_INT(hd_cond_eval(&c, "x", 1795613460, 0), HD_EPRECONDITION);
        c.if_unmodified_since = "20261125T133059Z";
        CHECK_EQ_INT(hd_cond_eval(&c, "x", 1795613460, 0), HD_EPRECONDITION);
    }
}

/* hd_list_drop_token: the aws-chunked content coding S3 leaves out of what it stores. */
HD_SUITE(httputil_object_attributes)
{
    CHECK_EQ_INT(hd_s3_attributes_parse(NULL), 0);
    CHECK_EQ_INT(hd_s3_attributes_parse(""), 0);
    CHECK_EQ_INT(hd_s3_attributes_parse(" , ,"), 0);
    CHECK_EQ_INT(hd_s3_attributes_parse("ETag"), HD_ATTR_ETAG);
    CHECK_EQ_INT(hd_s3_attributes_parse("ETag,Checksum,ObjectParts,StorageClass,ObjectSize"), 31);
    CHECK_EQ_INT(hd_s3_attributes_parse(" ObjectSize , ETag "), HD_ATTR_SIZE | HD_ATTR_ETAG);
    CHECK_EQ_INT(hd_s3_attributes_parse("ETag,ETag,"), HD_ATTR_ETAG);
    CHECK_EQ_INT(hd_s3_attributes_parse("ObjectSize   "), HD_ATTR_SIZE); /* trailing blanks */
    CHECK_EQ_INT(hd_s3_attributes_parse("etag"), HD_EBADARG);            /* case matters */
    CHECK_EQ_INT(hd_s3_attributes_parse("ETag,Bogus"), HD_EBADARG);
    CHECK_EQ_INT(hd_s3_attributes_parse("ETagX"), HD_EBADARG);
}

HD_SUITE(httputil_drop_token)
{
    static const struct {
        const char *in, *out;
    } t[] = {
        {"gzip", "gzip"},
        {"deflate, gzip", "deflate, gzip"},
        {"gzip, aws-chunked", "gzip"},
        {"aws-chunked, gzip", "gzip"},
        {"aws-chunked", ""},
        {"aws-chunked, aws-chunked", ""},
        {"AWS-Chunked", ""},
        {" aws-chunked ,gzip ,  br ", "gzip, br"},
        {"gzip,,aws-chunked,", "gzip"},
        {"aws-chunkedx", "aws-chunkedx"},
        {"", ""},
    };
    char out[64];

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        int n = hd_list_drop_token(t[i].in, "aws-chunked", out, sizeof(out));
        CHECK_EQ_INT(n, (int)strlen(t[i].out));
        CHECK_EQ_STR(out, t[i].out);
    }
    CHECK_EQ_INT(hd_list_drop_token("gzip, deflate", "aws-chunked", out, 8), -1);
    CHECK_EQ_INT(hd_list_drop_token("gzip", "aws-chunked", out, 5), 4);
}

HD_SUITE(httputil_cond)
{
    /* Object: etag "abc", mtime T. Dates: OLD < T == EQ < NEW. */
    const time_t T = 784111777;
#define OLD "Sat, 05 Nov 1994 08:49:37 GMT"
#define EQ "Sun, 06 Nov 1994 08:49:37 GMT"
#define NEW "Mon, 07 Nov 1994 08:49:37 GMT"
    static const struct {
        const char *im, *inm, *ims, *ius;
        int read_rc, write_rc;
    } t[] = {
        {NULL, NULL, NULL, NULL, 0, 0},
        {"", " ", "", "\t", 0, 0}, /* blank values count as absent */
        /* If-Match */
        {"\"abc\"", NULL, NULL, NULL, 0, 0},
        {"abc", NULL, NULL, NULL, 0, 0},
        {"*", NULL, NULL, NULL, 0, 0},
        {" * ", NULL, NULL, NULL, 0, 0},
        {"\"xyz\"", NULL, NULL, NULL, HD_EPRECONDITION, HD_EPRECONDITION},
        {"\"xyz\", \"abc\"", NULL, NULL, NULL, 0, 0},
        {"\"xyz\",\"abc\"", NULL, NULL, NULL, 0, 0},
        {"xyz, abc ", NULL, NULL, NULL, 0, 0},
        {"\"xyz\", *", NULL, NULL, NULL, 0, 0},
        {"W/\"abc\"", NULL, NULL, NULL, HD_EPRECONDITION, HD_EPRECONDITION}, /* strong */
        {"\"ab\"", NULL, NULL, NULL, HD_EPRECONDITION, HD_EPRECONDITION},
        {"\"abcd\"", NULL, NULL, NULL, HD_EPRECONDITION, HD_EPRECONDITION},
        {"\"ABC\"", NULL, NULL, NULL, HD_EPRECONDITION, HD_EPRECONDITION},
        {"\"abc", NULL, NULL, NULL, 0, 0}, /* unterminated quote: lenient */
        {",,", NULL, NULL, NULL, HD_EPRECONDITION, HD_EPRECONDITION},
        /* If-None-Match */
        {NULL, "\"abc\"", NULL, NULL, HD_ENOTMODIFIED, HD_EPRECONDITION},
        {NULL, "W/\"abc\"", NULL, NULL, HD_ENOTMODIFIED, HD_EPRECONDITION}, /* weak */
        {NULL, "*", NULL, NULL, HD_ENOTMODIFIED, HD_EPRECONDITION},
        {NULL, "\"xyz\"", NULL, NULL, 0, 0},
        {NULL, "\"xyz\", W/\"abc\"", NULL, NULL, HD_ENOTMODIFIED, HD_EPRECONDITION},
        /* If-Unmodified-Since */
        {NULL, NULL, NULL, OLD, HD_EPRECONDITION, HD_EPRECONDITION},
        {NULL, NULL, NULL, EQ, 0, 0},
        {NULL, NULL, NULL, NEW, 0, 0},
        {NULL, NULL, NULL, "garbage", 0, 0},
        /* If-Modified-Since (reads only) */
        {NULL, NULL, OLD, NULL, 0, 0},
        {NULL, NULL, EQ, NULL, HD_ENOTMODIFIED, 0},
        {NULL, NULL, NEW, NULL, HD_ENOTMODIFIED, 0},
        {NULL, NULL, "garbage", NULL, 0, 0},
        {NULL, NULL, "Sunday, 06-Nov-94 08:49:37 GMT", NULL, HD_ENOTMODIFIED, 0},
        /* S3 precedence: If-Match true + If-Unmodified-Since false -> 200 */
        {"\"abc\"", NULL, NULL, OLD, 0, 0},
        /* If-Match false wins over If-Unmodified-Since true */
        {"\"xyz\"", NULL, NULL, NEW, HD_EPRECONDITION, HD_EPRECONDITION},
        /* S3 precedence: If-None-Match false + If-Modified-Since true -> 304 */
        {NULL, "\"abc\"", OLD, NULL, HD_ENOTMODIFIED, HD_EPRECONDITION},
        /* If-None-Match true: If-Modified-Since is not consulted */
        {NULL, "\"xyz\"", EQ, NULL, 0, 0},
        {NULL, "\"xyz\"", OLD, NULL, 0, 0},
        /* If-Match failure is 412 even when If-None-Match would give 304 */
        {"\"xyz\"", "\"abc\"", NULL, NULL, HD_EPRECONDITION, HD_EPRECONDITION},
        /* If-Match true + If-None-Match false -> 304 on read */
        {"\"abc\"", "\"abc\"", NULL, NULL, HD_ENOTMODIFIED, HD_EPRECONDITION},
        /* If-Unmodified-Since false beats If-Modified-Since */
        {NULL, NULL, NEW, OLD, HD_EPRECONDITION, HD_EPRECONDITION},
        /* all four */
        {"\"abc\"", "\"xyz\"", NEW, OLD, 0, 0},
        {"\"abc\"", "\"abc\"", OLD, OLD, HD_ENOTMODIFIED, HD_EPRECONDITION},
    };

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        struct hd_cond c = {t[i].im, t[i].inm, t[i].ims, t[i].ius};
        int r = hd_cond_eval(&c, "abc", T, 1);
        int w = hd_cond_eval(&c, "abc", T, 0);
        if (r != t[i].read_rc || w != t[i].write_rc)
            fprintf(stderr, "  cond row %zu: read %d write %d\n", i, r, w);
        CHECK_EQ_INT(r, t[i].read_rc);
        CHECK_EQ_INT(w, t[i].write_rc);
    }

    /* multipart-style etags and a caller passing a quoted etag */
    {
        struct hd_cond c = {"\"d41d8cd98f00b204e9800998ecf8427e-3\"", NULL, NULL, NULL};
        CHECK_EQ_INT(hd_cond_eval(&c, "d41d8cd98f00b204e9800998ecf8427e-3", T, 1), 0);
        CHECK_EQ_INT(hd_cond_eval(&c, "\"d41d8cd98f00b204e9800998ecf8427e-3\"", T, 1), 0);
        CHECK_EQ_INT(hd_cond_eval(&c, "d41d8cd98f00b204e9800998ecf8427e", T, 1), HD_EPRECONDITION);
    }
    /* etag NULL: no current object. If-None-Match: * lets a create proceed. */
    {
        struct hd_cond c1 = {NULL, "*", NULL, NULL};
        struct hd_cond c2 = {"*", NULL, NULL, NULL};
        struct hd_cond c3 = {NULL, NULL, NEW, OLD};
        CHECK_EQ_INT(hd_cond_eval(&c1, NULL, 0, 0), 0);
        CHECK_EQ_INT(hd_cond_eval(&c2, NULL, 0, 0), HD_EPRECONDITION);
        CHECK_EQ_INT(hd_cond_eval(&c3, NULL, 0, 1), 0);
        CHECK_EQ_INT(hd_cond_eval(NULL, "abc", T, 1), 0);
    }
#undef OLD
#undef EQ
#undef NEW
}

HD_SUITE(httputil_url)
{
    char out[256];
    size_t n;

    /* decode table */
    static const struct {
        const char *in;
        int plus;
        int rc;
        const char *out;
        size_t outlen;
    } t[] = {
        {"", 0, 0, "", 0},
        {"abc", 0, 0, "abc", 3},
        {"a%20b", 0, 0, "a b", 3},
        {"a+b", 0, 0, "a+b", 3},
        {"a+b", 1, 0, "a b", 3},
        {"a%2Bb", 1, 0, "a+b", 3},
        {"a%2bb", 1, 0, "a+b", 3},
        {"%E2%82%AC", 0, 0, "\xE2\x82\xAC", 3},
        {"%2F%2f", 0, 0, "//", 2},
        {"%25", 0, 0, "%", 1},
        {"%2525", 0, 0, "%25", 3},
        {"%00x", 0, 0, "\0x", 2}, /* NUL passes through; outlen tells */
        {"%", 0, HD_EBADARG, NULL, 0},
        {"%2", 0, HD_EBADARG, NULL, 0},
        {"a%", 0, HD_EBADARG, NULL, 0},
        {"%G0", 0, HD_EBADARG, NULL, 0},
        {"%0G", 0, HD_EBADARG, NULL, 0},
        {"%%20", 0, HD_EBADARG, NULL, 0},
        {"% 20", 0, HD_EBADARG, NULL, 0},
        {"%-1", 0, HD_EBADARG, NULL, 0},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        int rc = hd_url_decode(t[i].in, strlen(t[i].in), out, &n, t[i].plus);
        CHECK_EQ_INT(rc, t[i].rc);
        if (rc == 0) {
            CHECK_EQ_INT(n, t[i].outlen);
            CHECK(memcmp(out, t[i].out, t[i].outlen) == 0);
            CHECK(out[n] == '\0');
        }
    }
    /* decode honours n, not the NUL */
    CHECK_EQ_INT(hd_url_decode("ab%41cd", 5, out, &n, 0), 0);
    CHECK_EQ_INT(n, 3);
    CHECK_EQ_STR(out, "abA");
    CHECK_EQ_INT(hd_url_decode("ab%4", 3, out, &n, 0), HD_EBADARG); /* "%" cut at n */
    /* in place */
    {
        char s[] = "a%2Fb+c%7E";
        CHECK_EQ_INT(hd_url_decode(s, strlen(s), s, &n, 1), 0);
        CHECK_EQ_STR(s, "a/b c~");
        CHECK_EQ_INT(n, 6);
    }

    /* encode */
    {
        struct hd_buf b;
        hd_buf_init(&b);
        CHECK_EQ_INT(hd_uri_encode(&b, "AZaz09-._~", 10, 0), 0);
        CHECK_EQ_STR(b.data, "AZaz09-._~");
        hd_buf_reset(&b);
        CHECK_EQ_INT(hd_uri_encode(&b, "a b/c+d=e&f", 11, 0), 0);
        CHECK_EQ_STR(b.data, "a%20b%2Fc%2Bd%3De%26f");
        hd_buf_reset(&b);
        CHECK_EQ_INT(hd_uri_encode(&b, "a b/c+d=e&f", 11, 1), 0);
        CHECK_EQ_STR(b.data, "a%20b/c%2Bd%3De%26f");
        hd_buf_reset(&b);
        CHECK_EQ_INT(hd_uri_encode(&b, "\xE2\x82\xAC\x00\xff*", 6, 1), 0);
        CHECK_EQ_STR(b.data, "%E2%82%AC%00%FF%2A");
        hd_buf_reset(&b);
        CHECK_EQ_INT(hd_uri_encode(&b, "", 0, 1), 0);
        CHECK(b.len == 0);

        /* round trip of every byte value */
        {
            char all[256];
            for (int i = 0; i < 256; i++)
                all[i] = (char)i;
            for (int ks = 0; ks < 2; ks++) {
                hd_buf_reset(&b);
                CHECK_EQ_INT(hd_uri_encode(&b, all, 256, ks), 0);
                {
                    char *dec = malloc(b.len + 1);
                    CHECK_EQ_INT(hd_url_decode(b.data, b.len, dec, &n, 0), 0);
                    CHECK_EQ_INT(n, 256);
                    CHECK(memcmp(dec, all, 256) == 0);
                    free(dec);
                }
            }
        }
        hd_buf_cleanup(&b);
    }
}

HD_SUITE(httputil_query)
{
    struct hd_query q;
    const struct hd_query_param *p;

    CHECK_EQ_INT(hd_query_parse(NULL, &q), 0);
    CHECK_EQ_INT(q.n, 0);
    CHECK(hd_query_get(&q, "a") == NULL);
    hd_query_free(&q);
    CHECK_EQ_INT(hd_query_parse("", &q), 0);
    CHECK_EQ_INT(q.n, 0);
    hd_query_free(&q);
    CHECK_EQ_INT(hd_query_parse("&&&", &q), 0);
    CHECK_EQ_INT(q.n, 0);
    hd_query_free(&q);

    CHECK_EQ_INT(hd_query_parse("list-type=2&prefix=a%2Fb&delimiter=%2F&max-keys=10", &q), 0);
    CHECK_EQ_INT(q.n, 4);
    CHECK_EQ_STR(q.params[0].key, "list-type");
    CHECK_EQ_STR(hd_query_get(&q, "list-type"), "2");
    CHECK_EQ_STR(hd_query_get(&q, "prefix"), "a/b");
    CHECK_EQ_STR(hd_query_get(&q, "delimiter"), "/");
    CHECK_EQ_STR(hd_query_get(&q, "max-keys"), "10");
    CHECK(hd_query_get(&q, "marker") == NULL);
    CHECK(hd_query_get(&q, "Prefix") == NULL); /* case-sensitive */
    hd_query_free(&q);

    /* keys without '=', empty values, duplicates, order */
    CHECK_EQ_INT(hd_query_parse("uploads&a=&b=1&a=2&=x&c==", &q), 0);
    CHECK_EQ_INT(q.n, 6);
    CHECK_EQ_STR(q.params[0].key, "uploads");
    CHECK_EQ_STR(q.params[0].value, "");
    CHECK_EQ_STR(hd_query_get(&q, "uploads"), "");
    CHECK_EQ_STR(hd_query_get(&q, "a"), ""); /* first wins */
    CHECK_EQ_STR(q.params[3].key, "a");
    CHECK_EQ_STR(q.params[3].value, "2");
    CHECK_EQ_STR(q.params[4].key, "");
    CHECK_EQ_STR(q.params[4].value, "x");
    CHECK_EQ_STR(hd_query_get(&q, ""), "x");
    CHECK_EQ_STR(hd_query_get(&q, "c"), "=");
    hd_query_free(&q);

    /* '+' is a space, %2B a plus, in keys and values */
    CHECK_EQ_INT(hd_query_parse("prefix=a+b&x%2By=c%2Bd&k+1=v", &q), 0);
    CHECK_EQ_STR(hd_query_get(&q, "prefix"), "a b");
    CHECK_EQ_STR(hd_query_get(&q, "x+y"), "c+d");
    CHECK_EQ_STR(hd_query_get(&q, "k 1"), "v");
    hd_query_free(&q);

    /* embedded NUL: never matches a plain key; lengths tell */
    CHECK_EQ_INT(hd_query_parse("prefix%00junk=1&v=a%00b", &q), 0);
    CHECK(hd_query_get(&q, "prefix") == NULL);
    p = hd_query_find(&q, "v");
    CHECK(p != NULL);
    if (p) {
        CHECK_EQ_INT(p->value_len, 3);
        CHECK(memcmp(p->value, "a\0b", 3) == 0);
    }
    CHECK_EQ_INT(q.params[0].key_len, 11);
    hd_query_free(&q);

    /* malformed escapes */
    CHECK_EQ_INT(hd_query_parse("a=%zz", &q), HD_EBADARG);
    CHECK_EQ_INT(q.n, 0);
    CHECK(q.params == NULL);
    hd_query_free(&q);
    CHECK_EQ_INT(hd_query_parse("a%=1", &q), HD_EBADARG);
    CHECK_EQ_INT(hd_query_parse("a=1&b=%", &q), HD_EBADARG);
    CHECK_EQ_INT(hd_query_parse("a=1%2", &q), HD_EBADARG);
    hd_query_free(&q);

    /* parameter count limit */
    {
        struct hd_buf b;
        hd_buf_init(&b);
        for (int i = 0; i < HD_QUERY_MAX_PARAMS; i++)
            hd_buf_printf(&b, "%sk%d=%d", i ? "&" : "", i, i);
        CHECK_EQ_INT(hd_query_parse(b.data, &q), 0);
        CHECK_EQ_INT(q.n, HD_QUERY_MAX_PARAMS);
        CHECK_EQ_STR(hd_query_get(&q, "k999"), "999");
        hd_query_free(&q);
        hd_buf_puts(&b, "&&&"); /* empty segments do not count */
        CHECK_EQ_INT(hd_query_parse(b.data, &q), 0);
        hd_query_free(&q);
        hd_buf_puts(&b, "&x");
        CHECK_EQ_INT(hd_query_parse(b.data, &q), HD_EBADARG);
        hd_query_free(&q);

        /* length limit */
        hd_buf_reset(&b);
        hd_buf_puts(&b, "k=");
        while (b.len < HD_QUERY_MAX_LEN)
            hd_buf_puts(&b, "v");
        CHECK_EQ_INT(b.len, HD_QUERY_MAX_LEN);
        CHECK_EQ_INT(hd_query_parse(b.data, &q), 0);
        CHECK_EQ_INT(q.params[0].value_len, HD_QUERY_MAX_LEN - 2);
        hd_query_free(&q);
        hd_buf_puts(&b, "v");
        CHECK_EQ_INT(hd_query_parse(b.data, &q), HD_EBADARG);
        hd_query_free(&q);
        hd_buf_cleanup(&b);
    }
    hd_query_free(NULL);
}

HD_SUITE(httputil_names)
{
    static const struct {
        const char *name;
        int ok;
    } b[] = {
        {"abc", 1},
        {"my-bucket", 1},
        {"my.bucket.name", 1},
        {"a1b", 1},
        {"123", 1},
        {"1.2.3", 1},
        {"1.2.3.4.5", 1},
        {"192.168.5.4a", 1},
        {"a-b.c-d", 1},
        {"a-.b", 0},
        {"a.-b", 0},
        {"foo-.bar", 0},
        {"foo.-bar", 0},
        {"xn-a", 1},
        {"bucket-s3alia", 1},
        {"a--b", 1},
        {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 1},  /* 63 */
        {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 0}, /* 64 */
        {"", 0},
        {"a", 0},
        {"ab", 0},
        {"Abc", 0},
        {"abC", 0},
        {"a_b", 0},
        {"a b", 0},
        {"a/b", 0},
        {"-abc", 0},
        {"abc-", 0},
        {".abc", 0},
        {"abc.", 0},
        {"a..b", 0},
        {"192.168.5.4", 0},
        {"1.1.1.1", 0},
        {"999.999.999.999", 0},
        {"xn--abc", 0},
        {"sthree-abc", 0},
        {"amzn-s3-demo-x", 0},
        {"bucket-s3alias", 0},
        {"bucket--ol-s3", 0},
        {"bucket.mrap", 0},
        {"bucket--x-s3", 0},
        {"bucket--table-s3", 0},
        {"caf\xc3\xa9", 0},
    };
    for (size_t i = 0; i < sizeof(b) / sizeof(b[0]); i++) {
        int rc = hd_bucket_name_check(b[i].name);
        if ((rc == 0) != b[i].ok)
            fprintf(stderr, "  bucket \"%s\": rc %d\n", b[i].name, rc);
        CHECK_EQ_INT(rc, b[i].ok ? 0 : HD_EBADBUCKETNAME);
    }
    CHECK_EQ_INT(hd_bucket_name_check(NULL), HD_EBADBUCKETNAME);

    /* job and plan ids: they go into URL paths */
    CHECK_EQ_INT(hd_id_check("plan-1.a_B"), 0);
    CHECK_EQ_INT(hd_id_check("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), 0); /* 48 */
    CHECK_EQ_INT(hd_id_check("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), -1);
    CHECK_EQ_INT(hd_id_check(""), -1);
    CHECK_EQ_INT(hd_id_check(NULL), -1);
    CHECK_EQ_INT(hd_id_check("a/b"), -1);
    CHECK_EQ_INT(hd_id_check("a?x=1"), -1);
    CHECK_EQ_INT(hd_id_check("a%2f"), -1);
    CHECK_EQ_INT(hd_id_check("a b"), -1);

    static const struct {
        const char *name;
        size_t len; /* 0: strlen */
        int rc;
    } o[] = {
        {"a", 0, 0},
        {"../a", 0, 0},
        {"a//b", 0, 0},
        {"/", 0, 0},
        {".", 0, 0},
        {"a\tb\nc\x01\x7f", 0, 0},
        {"caf\xc3\xa9", 0, 0},
        {"\xe2\x82\xac", 0, 0},     /* U+20AC */
        {"\xef\xbf\xbf", 0, 0},     /* U+FFFF */
        {"\xed\x9f\xbf", 0, 0},     /* U+D7FF */
        {"\xee\x80\x80", 0, 0},     /* U+E000 */
        {"\xf0\x9f\x98\x80", 0, 0}, /* U+1F600 */
        {"\xf4\x8f\xbf\xbf", 0, 0}, /* U+10FFFF */
        {"", 0, HD_EBADKEY},
        {"a\0b", 3, HD_EBADKEY},
        {"\x80", 0, HD_EBADKEY}, /* lone continuation */
        {"\xc3", 0, HD_EBADKEY}, /* truncated */
        {"\xc3(", 0, HD_EBADKEY},
        {"\xe2\x82", 0, HD_EBADKEY},
        {"\xf0\x9f\x98", 0, HD_EBADKEY},
        {"\xc0\xaf", 0, HD_EBADKEY}, /* overlong '/' */
        {"\xc1\xbf", 0, HD_EBADKEY},
        {"\xe0\x80\xaf", 0, HD_EBADKEY}, /* overlong */
        {"\xe0\x9f\xbf", 0, HD_EBADKEY},
        {"\xf0\x80\x80\xaf", 0, HD_EBADKEY},
        {"\xf0\x8f\xbf\xbf", 0, HD_EBADKEY},
        {"\xed\xa0\x80", 0, HD_EBADKEY},     /* U+D800 surrogate */
        {"\xed\xbf\xbf", 0, HD_EBADKEY},     /* U+DFFF */
        {"\xf4\x90\x80\x80", 0, HD_EBADKEY}, /* U+110000 */
        {"\xf5\x80\x80\x80", 0, HD_EBADKEY},
        {"\xf8\x88\x80\x80\x80", 0, HD_EBADKEY},
        {"\xfe", 0, HD_EBADKEY},
        {"\xff", 0, HD_EBADKEY},
        {"ok\xe2\x82\xac\xe2\x82", 0, HD_EBADKEY},
    };
    for (size_t i = 0; i < sizeof(o) / sizeof(o[0]); i++) {
        size_t len = o[i].len ? o[i].len : strlen(o[i].name);
        int rc = hd_object_name_check(o[i].name, len);
        if (rc != o[i].rc)
            fprintf(stderr, "  object name #%zu: rc %d\n", i, rc);
        CHECK_EQ_INT(rc, o[i].rc);
    }
    {
        char k[1100];
        memset(k, 'k', sizeof(k));
        CHECK_EQ_INT(hd_object_name_check(k, 1024), 0);
        CHECK_EQ_INT(hd_object_name_check(k, 1025), HD_EKEYTOOLONG);
        k[0] = '\0';
        CHECK_EQ_INT(hd_object_name_check(k, 1025), HD_EKEYTOOLONG); /* length first */
        CHECK_EQ_INT(hd_object_name_check(k, 1024), HD_EBADKEY);
        /* a 3-byte char ending exactly at byte 1024 */
        memset(k, 'k', sizeof(k));
        memcpy(k + 1021, "\xe2\x82\xac", 3);
        CHECK_EQ_INT(hd_object_name_check(k, 1024), 0);
        CHECK_EQ_INT(hd_object_name_check(k, 1023), HD_EBADKEY);
    }
    CHECK_EQ_INT(hd_object_name_check(NULL, 3), HD_EBADKEY);
}

HD_SUITE(httputil_misc)
{
    uint64_t u = 7;
    int64_t s = 7;

    CHECK_EQ_INT(hd_parse_u64("0", &u), 0);
    CHECK(u == 0);
    CHECK_EQ_INT(hd_parse_u64("007", &u), 0);
    CHECK(u == 7);
    CHECK_EQ_INT(hd_parse_u64("1234567890", &u), 0);
    CHECK(u == 1234567890);
    CHECK_EQ_INT(hd_parse_u64(BIG, &u), 0);
    CHECK(u == UINT64_MAX);
    u = 5;
    CHECK_EQ_INT(hd_parse_u64(HUGE, &u), HD_EBADARG);
    CHECK_EQ_INT(hd_parse_u64("99999999999999999999", &u), HD_EBADARG);
    CHECK_EQ_INT(hd_parse_u64("", &u), HD_EBADARG);
    CHECK_EQ_INT(hd_parse_u64(NULL, &u), HD_EBADARG);
    CHECK_EQ_INT(hd_parse_u64("-1", &u), HD_EBADARG);
    CHECK_EQ_INT(hd_parse_u64("+1", &u), HD_EBADARG);
    CHECK_EQ_INT(hd_parse_u64(" 1", &u), HD_EBADARG);
    CHECK_EQ_INT(hd_parse_u64("1 ", &u), HD_EBADARG);
    CHECK_EQ_INT(hd_parse_u64("1a", &u), HD_EBADARG);
    CHECK_EQ_INT(hd_parse_u64("0x10", &u), HD_EBADARG);
    CHECK_EQ_INT(hd_parse_u64("1e3", &u), HD_EBADARG);
    CHECK(u == 5); /* untouched on failure */

    CHECK_EQ_INT(hd_parse_i64("0", &s), 0);
    CHECK(s == 0);
    CHECK_EQ_INT(hd_parse_i64("-0", &s), 0);
    CHECK(s == 0);
    CHECK_EQ_INT(hd_parse_i64("42", &s), 0);
    CHECK(s == 42);
    CHECK_EQ_INT(hd_parse_i64("-42", &s), 0);
    CHECK(s == -42);
    CHECK_EQ_INT(hd_parse_i64("9223372036854775807", &s), 0);
    CHECK(s == INT64_MAX);
    CHECK_EQ_INT(hd_parse_i64("-9223372036854775808", &s), 0);
    CHECK(s == INT64_MIN);
    CHECK_EQ_INT(hd_parse_i64("9223372036854775808", &s), HD_EBADARG);
    CHECK_EQ_INT(hd_parse_i64("-9223372036854775809", &s), HD_EBADARG);
    CHECK_EQ_INT(hd_parse_i64("-", &s), HD_EBADARG);
    CHECK_EQ_INT(hd_parse_i64("--1", &s), HD_EBADARG);
    CHECK_EQ_INT(hd_parse_i64("+1", &s), HD_EBADARG);
    CHECK_EQ_INT(hd_parse_i64("", &s), HD_EBADARG);
    CHECK_EQ_INT(hd_parse_i64(NULL, &s), HD_EBADARG);
    CHECK_EQ_INT(hd_parse_i64(" -1", &s), HD_EBADARG);

    CHECK_EQ_INT(hd_str_case_prefix("Content-Type", "content-"), 1);
    CHECK_EQ_INT(hd_str_case_prefix("X-AMZ-META-foo", "x-amz-meta-"), 1);
    CHECK_EQ_INT(hd_str_case_prefix("abc", ""), 1);
    CHECK_EQ_INT(hd_str_case_prefix("", ""), 1);
    CHECK_EQ_INT(hd_str_case_prefix("ab", "abc"), 0);
    CHECK_EQ_INT(hd_str_case_prefix("abd", "abc"), 0);
    CHECK_EQ_INT(hd_str_case_prefix("[", "{"), 0); /* no case folding outside letters */
    CHECK_EQ_INT(hd_str_case_prefix(NULL, "a"), 0);
}

HD_SUITE(httputil_s3_addressing)
{
    struct hd_query q;
    char *v;

    v = hd_s3_vhost_path("photos.s3.example.com", "s3.example.com", "/a/b.jpg");
    CHECK_EQ_STR(v, "/photos/a/b.jpg");
    free(v);
    v = hd_s3_vhost_path("Photos.S3.Example.COM:8080", "s3.example.com", "/");
    CHECK_EQ_STR(v, "/Photos/"); /* the domain matches without case, the port is dropped */
    free(v);
    v = hd_s3_vhost_path("a.b.s3.example.com", "s3.example.com", "/k");
    CHECK_EQ_STR(v, "/a.b/k"); /* dotted bucket names */
    free(v);
    CHECK(hd_s3_vhost_path("s3.example.com", "s3.example.com", "/k") == NULL);  /* no bucket */
    CHECK(hd_s3_vhost_path(".s3.example.com", "s3.example.com", "/k") == NULL); /* empty */
    CHECK(hd_s3_vhost_path("xs3.example.com", "s3.example.com", "/k") == NULL); /* no dot */
    CHECK(hd_s3_vhost_path("b.s3.example.org", "s3.example.com", "/k") == NULL);
    CHECK(hd_s3_vhost_path("b.s3.example.com", "", "/k") == NULL); /* not configured */
    CHECK(hd_s3_vhost_path(NULL, "s3.example.com", "/k") == NULL); /* no Host */
    CHECK(hd_s3_vhost_path("[::1]:80", "s3.example.com", "/k") == NULL);
    CHECK(hd_s3_vhost_path("", "s3.example.com", "/k") == NULL);

    CHECK_EQ_INT(hd_query_parse("policy", &q), 0);
    CHECK_EQ_INT(hd_s3_unsupported_subresource(&q, NULL), 1);
    hd_query_free(&q);
    /* ?acl and ?versioning are answered (an owner-only ACL, an unversioned bucket) */
    CHECK_EQ_INT(hd_query_parse("acl", &q), 0);
    CHECK_EQ_INT(hd_s3_unsupported_subresource(&q, NULL), 0);
    hd_query_free(&q);
    CHECK_EQ_INT(hd_query_parse("versioning", &q), 0);
    CHECK_EQ_INT(hd_s3_unsupported_subresource(&q, NULL), 0);
    hd_query_free(&q);
    CHECK_EQ_INT(hd_query_parse("list-type=2&tagging=", &q), 0);
    CHECK_EQ_INT(hd_s3_unsupported_subresource(&q, NULL), 1);
    CHECK_EQ_INT(hd_s3_unsupported_subresource(&q, "tagging"), 0);
    hd_query_free(&q);
    /* the allowed one does not excuse another */
    CHECK_EQ_INT(hd_query_parse("tagging&torrent", &q), 0);
    CHECK_EQ_INT(hd_s3_unsupported_subresource(&q, "tagging"), 1);
    hd_query_free(&q);
    CHECK_EQ_INT(hd_query_parse("attributes", &q), 0);
    CHECK_EQ_INT(hd_s3_unsupported_subresource(&q, NULL), 1);
    CHECK_EQ_INT(hd_s3_unsupported_subresource(&q, "attributes"), 0);
    hd_query_free(&q);
    CHECK_EQ_INT(hd_etag_is_md5("d41d8cd98f00b204e9800998ecf8427e"), 1);
    CHECK_EQ_INT(hd_etag_is_md5("D41D8CD98F00B204E9800998ECF8427E"), 1);
    CHECK_EQ_INT(hd_etag_is_md5("d41d8cd98f00b204e9800998ecf8427e-2"), 0); /* multipart */
    CHECK_EQ_INT(hd_etag_is_md5("d41d8cd98f00b204e9800998ecf8427"), 0);
    CHECK_EQ_INT(hd_etag_is_md5("g41d8cd98f00b204e9800998ecf8427e"), 0);
    CHECK_EQ_INT(hd_etag_is_md5(""), 0);

    CHECK_EQ_INT(hd_query_parse("uploads&prefix=acl", &q), 0);
    CHECK_EQ_INT(hd_s3_unsupported_subresource(&q, NULL), 0); /* a value named acl is not ?acl */
    hd_query_free(&q);
}
