/* Unit tests for common/awschunked: the botocore unsigned-trailer example, the S3 doc signed
 * streaming example (65 KiB + 1 KiB + 0), signed trailers, arbitrary splits, malformed
 * framing and limits. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/awschunked.h"
#include "common/buf.h"
#include "common/errors.h"
#include "common/sigv4.h"
#include "test/unit/hd_test.h"

static const char unsigned_body[] =
    "b\r\nhello world\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\r\n\r\n";

static int sink_buf(void *arg, const char *p, size_t n)
{
    return hd_buf_append(arg, p, n);
}

static int sink_fail(void *arg, const char *p, size_t n)
{
    (void)arg;
    (void)p;
    (void)n;
    return -EIO;
}

/* Decodes body fed in pieces of `step` bytes (0: all at once); returns the first error
 * from feed or finish. out collects the payload; *dp gets the decoder if wanted. */
static int decode(enum hd_payload mode, const struct hd_sigv4_auth *a, const char *body, size_t len,
                  size_t step, struct hd_buf *out, struct hd_awschunked **dp)
{
    struct hd_awschunked *d = hd_awschunked_new(mode, a);
    size_t off = 0;
    int rc = 0;

    if (!d)
        return -ENOMEM;
    hd_buf_reset(out);
    while (off < len && rc == 0) {
        size_t take = step && step < len - off ? step : len - off;
        rc = hd_awschunked_feed(d, body + off, take, sink_buf, out);
        off += take;
    }
    if (rc == 0)
        rc = hd_awschunked_finish(d);
    if (dp)
        *dp = d;
    else
        hd_awschunked_free(d);
    return rc;
}

HD_SUITE(awschunked_unsigned)
{
    struct hd_awschunked *d = NULL;
    struct hd_buf out;
    size_t len = sizeof(unsigned_body) - 1;

    hd_buf_init(&out);
    CHECK_EQ_INT(decode(HD_PL_STREAMING_UNSIGNED_TRAILER, NULL, unsigned_body, len, 0, &out, &d),
                 0);
    CHECK_EQ_STR(out.data, "hello world");
    if (d) {
        CHECK_EQ_INT(hd_awschunked_decoded(d), 11);
        CHECK_EQ_STR(hd_awschunked_trailer(d, "x-amz-checksum-crc32"), "DUoRhQ==");
        CHECK(hd_awschunked_trailer(d, "x-amz-checksum-crc32c") == NULL);
        hd_awschunked_free(d);
    }
    /* Byte at a time, and every two-piece split. */
    CHECK_EQ_INT(decode(HD_PL_STREAMING_UNSIGNED_TRAILER, NULL, unsigned_body, len, 1, &out, NULL),
                 0);
    CHECK_EQ_STR(out.data, "hello world");
    for (size_t cut = 0; cut <= len; cut++) {
        d = hd_awschunked_new(HD_PL_STREAMING_UNSIGNED_TRAILER, NULL);
        hd_buf_reset(&out);
        CHECK_EQ_INT(hd_awschunked_feed(d, unsigned_body, cut, sink_buf, &out), 0);
        CHECK_EQ_INT(hd_awschunked_feed(d, unsigned_body + cut, len - cut, sink_buf, &out), 0);
        CHECK_EQ_INT(hd_awschunked_finish(d), 0);
        CHECK_EQ_STR(hd_awschunked_trailer(d, "X-Amz-Checksum-CRC32"), "DUoRhQ==");
        CHECK_EQ_INT(out.len, 11);
        hd_awschunked_free(d);
    }
    /* Chunk signatures are ignored without auth; no trailers; empty body. */
    CHECK_EQ_INT(decode(HD_PL_UNSIGNED, NULL, "3;chunk-signature=x\r\nabc\r\n0;foo\r\n\r\n", 34, 0,
                        &out, NULL),
                 0);
    CHECK_EQ_STR(out.data, "abc");
    CHECK_EQ_INT(decode(HD_PL_STREAMING_UNSIGNED_TRAILER, NULL, "0\r\n\r\n", 5, 0, &out, NULL), 0);
    CHECK_EQ_INT(out.len, 0);
    /* Data may contain CRLF; uppercase hex sizes. */
    CHECK_EQ_INT(decode(HD_PL_STREAMING_UNSIGNED_TRAILER, NULL, "B\r\n0\r\n23\r\n5678\r\n0\r\n\r\n",
                        21, 1, &out, NULL),
                 0);
    CHECK_EQ_STR(out.data, "0\r\n23\r\n5678");
    /* Tolerated endings: no blank line, no CRLF after the last trailer. */
    CHECK_EQ_INT(
        decode(HD_PL_STREAMING_UNSIGNED_TRAILER, NULL, "3\r\nabc\r\n0\r\n", 11, 0, &out, NULL), 0);
    CHECK_EQ_INT(
        decode(HD_PL_STREAMING_UNSIGNED_TRAILER, NULL, unsigned_body, len - 2, 0, &out, NULL), 0);
    CHECK_EQ_INT(
        decode(HD_PL_STREAMING_UNSIGNED_TRAILER, NULL, unsigned_body, len - 3, 0, &out, NULL), 0);
    d = NULL;
    CHECK_EQ_INT(
        decode(HD_PL_STREAMING_UNSIGNED_TRAILER, NULL, unsigned_body, len - 4, 0, &out, &d), 0);
    if (d) {
        CHECK_EQ_STR(hd_awschunked_trailer(d, "x-amz-checksum-crc32"), "DUoRhQ==");
        hd_awschunked_free(d);
    }
    hd_buf_cleanup(&out);
}

HD_SUITE(awschunked_malformed)
{
    static const struct {
        const char *body;
        int want;
    } cases[] = {
        {"zz\r\nhello\r\n0\r\n\r\n", HD_ECHUNK},                       /* bad hex */
        {"\r\nhello\r\n0\r\n\r\n", HD_ECHUNK},                         /* empty size */
        {"b \r\nhello world\r\n0\r\n\r\n", HD_ECHUNK},                 /* junk after size */
        {"b\nhello world\r\n0\r\n\r\n", HD_ECHUNK},                    /* bare LF */
        {"b\r\nhello world0\r\n\r\n", HD_ECHUNK},                      /* missing CRLF */
        {"b\r\nhello world\n0\r\n\r\n", HD_ECHUNK},                    /* half CRLF */
        {"4000001\r\n", HD_ECHUNK},                                    /* > 64 MiB */
        {"ffffffffffffffffffff\r\n", HD_ECHUNK},                       /* overflow */
        {"b\r\nhello", HD_EINCOMPLETEBODY},                            /* truncated data */
        {"b\r\nhello world\r\n", HD_EINCOMPLETEBODY},                  /* no final chunk */
        {"b\r\nhello world", HD_EINCOMPLETEBODY},                      /* no CRLF at all */
        {"b\r", HD_EINCOMPLETEBODY},                                   /* mid size line */
        {"", HD_EINCOMPLETEBODY},                                      /* nothing */
        {"0\r\n\r\nX", HD_ECHUNK},                                     /* bytes after end */
        {"0\r\nno-colon\r\n\r\n", HD_ECHUNK},                          /* bad trailer */
        {"0\r\n:v\r\n\r\n", HD_ECHUNK},                                /* empty name */
        {"0\r\nna me:v\r\n\r\n", HD_ECHUNK},                           /* space in name */
        {"0\r\na:b\rc\r\n\r\n", HD_ECHUNK},                            /* CR in trailer */
        {"0\r\na:b\n\r\n", HD_ECHUNK},                                 /* bare LF trailer */
        {"0\r\nx-amz-trailer-signature:ab\r\na:b\r\n\r\n", HD_ECHUNK}, /* after signature */
    };
    struct hd_buf out, big;

    hd_buf_init(&out);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t len = strlen(cases[i].body);
        for (size_t step = 0; step <= 1; step++) {
            int rc = decode(HD_PL_STREAMING_UNSIGNED_TRAILER, NULL, cases[i].body, len, step, &out,
                            NULL);
            if (rc != cases[i].want)
                fprintf(stderr, "  case %zu step %zu\n", i, step);
            CHECK_EQ_INT(rc, cases[i].want);
        }
    }

    /* Size line limit: 128 bytes before CRLF is fine, 129 is not. */
    hd_buf_init(&big);
    hd_buf_puts(&big, "3;");
    while (big.len < 128)
        hd_buf_puts(&big, "x");
    hd_buf_puts(&big, "\r\nabc\r\n0\r\n\r\n");
    CHECK_EQ_INT(decode(HD_PL_UNSIGNED, NULL, big.data, big.len, 0, &out, NULL), 0);
    hd_buf_reset(&big);
    hd_buf_puts(&big, "3;");
    while (big.len < 129)
        hd_buf_puts(&big, "x");
    hd_buf_puts(&big, "\r\nabc\r\n0\r\n\r\n");
    CHECK_EQ_INT(decode(HD_PL_UNSIGNED, NULL, big.data, big.len, 0, &out, NULL), HD_ECHUNK);
    CHECK_EQ_INT(decode(HD_PL_UNSIGNED, NULL, big.data, big.len, 1, &out, NULL), HD_ECHUNK);

    /* Trailer section limit: 4 KiB. */
    hd_buf_reset(&big);
    hd_buf_puts(&big, "0\r\n");
    for (int i = 0; big.len < 3 + 4000; i++)
        hd_buf_printf(&big, "x-amz-meta-t%d:%040d\r\n", i, i);
    hd_buf_puts(&big, "\r\n");
    CHECK_EQ_INT(decode(HD_PL_UNSIGNED, NULL, big.data, big.len, 0, &out, NULL), HD_ECHUNK);
    hd_buf_reset(&big);
    hd_buf_puts(&big, "0\r\nx-amz-checksum-crc32:");
    while (big.len < 5000)
        hd_buf_puts(&big, "A");
    CHECK_EQ_INT(decode(HD_PL_UNSIGNED, NULL, big.data, big.len, 0, &out, NULL), HD_ECHUNK);
    hd_buf_cleanup(&big);

    /* Errors are sticky; sink errors propagate. */
    {
        struct hd_awschunked *d = hd_awschunked_new(HD_PL_UNSIGNED, NULL);
        CHECK_EQ_INT(hd_awschunked_feed(d, "zz\r\n", 4, sink_buf, &out), HD_ECHUNK);
        CHECK_EQ_INT(hd_awschunked_feed(d, "0\r\n\r\n", 5, sink_buf, &out), HD_ECHUNK);
        CHECK_EQ_INT(hd_awschunked_finish(d), HD_ECHUNK);
        hd_awschunked_free(d);
        d = hd_awschunked_new(HD_PL_UNSIGNED, NULL);
        CHECK_EQ_INT(hd_awschunked_feed(d, unsigned_body, 20, sink_fail, NULL), -EIO);
        CHECK_EQ_INT(hd_awschunked_finish(d), -EIO);
        hd_awschunked_free(d);
    }
    /* Signed modes need auth. */
    CHECK(hd_awschunked_new(HD_PL_STREAMING_SIGNED, NULL) == NULL);
    hd_awschunked_free(NULL);
    hd_buf_cleanup(&out);
}

/* ---- signed: the S3 documentation example ---- */

static const char *const doc_sigs[3] = {
    "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
    "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
    "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
};
static const char doc_trailer_sig[] =
    "df5735bd9f3295cd9386572292562fefc93ba94e80a0a1ddcbd652c4e0a75e6c";

/* Signs the documented request to get the seed signature and signing key. */
static int doc_auth(struct hd_sigv4_auth *a)
{
    static const struct hd_kv h[] = {
        {"content-encoding", "aws-chunked"},
        {"content-length", "66824"},
        {"host", "s3.amazonaws.com"},
        {"x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"},
        {"x-amz-date", "20130524T000000Z"},
        {"x-amz-decoded-content-length", "66560"},
        {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
    };
    struct hd_sigv4_sign_in si = {"PUT",
                                  "/examplebucket/chunkObject.txt",
                                  NULL,
                                  h,
                                  7,
                                  "AKIAIOSFODNN7EXAMPLE",
                                  "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                                  "us-east-1",
                                  "s3",
                                  "20130524T000000Z",
                                  NULL,
                                  NULL,
                                  0};
    struct hd_buf authz;
    int rc;

    hd_buf_init(&authz);
    rc = hd_sigv4_sign(&si, &authz, a);
    hd_buf_cleanup(&authz);
    return rc;
}

/* The chunked body; trailers (already CRLF-framed, may be NULL) replace the final blank
 * line. */
static void doc_body(struct hd_buf *b, const char *trailers)
{
    static const size_t sizes[3] = {65536, 1024, 0};

    hd_buf_reset(b);
    for (int i = 0; i < 3; i++) {
        hd_buf_printf(b, "%zx;chunk-signature=%s\r\n", sizes[i], doc_sigs[i]);
        for (size_t k = 0; k < sizes[i]; k++)
            hd_buf_append(b, "a", 1);
        if (sizes[i])
            hd_buf_puts(b, "\r\n");
    }
    hd_buf_puts(b, trailers ? trailers : "\r\n");
}

static int all_a(const struct hd_buf *b, size_t n)
{
    if (b->len != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (b->data[i] != 'a')
            return 0;
    return 1;
}

HD_SUITE(awschunked_signed)
{
    struct hd_sigv4_auth a;
    struct hd_buf body, out;
    struct hd_awschunked *d;

    hd_buf_init(&body);
    hd_buf_init(&out);
    CHECK_EQ_INT(doc_auth(&a), 0);
    CHECK_EQ_STR(a.signature, "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");
    doc_body(&body, NULL);
    CHECK_EQ_INT(body.len, 66824); /* the documented Content-Length */

    CHECK_EQ_INT(decode(HD_PL_STREAMING_SIGNED, &a, body.data, body.len, 0, &out, NULL), 0);
    CHECK(all_a(&out, 66560));
    CHECK_EQ_INT(decode(HD_PL_STREAMING_SIGNED, &a, body.data, body.len, 1, &out, NULL), 0);
    CHECK(all_a(&out, 66560));
    CHECK_EQ_INT(decode(HD_PL_STREAMING_SIGNED, &a, body.data, body.len, 4093, &out, NULL), 0);
    CHECK(all_a(&out, 66560));
    /* The same body also decodes unsigned (signatures ignored). */
    CHECK_EQ_INT(decode(HD_PL_STREAMING_UNSIGNED_TRAILER, NULL, body.data, body.len, 0, &out, NULL),
                 0);

    /* A flipped data byte in either chunk breaks that chunk's signature. */
    body.data[100] = 'b';
    CHECK_EQ_INT(decode(HD_PL_STREAMING_SIGNED, &a, body.data, body.len, 0, &out, NULL),
                 HD_EBADSIG);
    body.data[100] = 'a';
    body.data[body.len - 2 - 90 - 2 - 10] = 'b'; /* inside the 1 KiB chunk */
    CHECK_EQ_INT(decode(HD_PL_STREAMING_SIGNED, &a, body.data, body.len, 7, &out, NULL),
                 HD_EBADSIG);
    CHECK(out.len == 66560); /* bytes reached the sink before the check: caller discards */
    doc_body(&body, NULL);
    /* A flipped signature digit. */
    body.data[30] = body.data[30] == '0' ? '1' : '0';
    CHECK_EQ_INT(decode(HD_PL_STREAMING_SIGNED, &a, body.data, body.len, 0, &out, NULL),
                 HD_EBADSIG);
    /* Uppercase signature hex is the same signature. */
    doc_body(&body, NULL);
    for (size_t i = 0; i < 64; i++)
        if (body.data[22 + i] >= 'a' && body.data[22 + i] <= 'f')
            body.data[22 + i] = (char)(body.data[22 + i] - 'a' + 'A');
    CHECK_EQ_INT(decode(HD_PL_STREAMING_SIGNED, &a, body.data, body.len, 0, &out, NULL), 0);
    /* Wrong seed. */
    {
        struct hd_sigv4_auth b = a;
        b.signature[0] = b.signature[0] == '0' ? '1' : '0';
        doc_body(&body, NULL);
        CHECK_EQ_INT(decode(HD_PL_STREAMING_SIGNED, &b, body.data, body.len, 0, &out, NULL),
                     HD_EBADSIG);
    }
    /* Unsigned chunks, other extensions, trailers: not in this mode. */
    CHECK_EQ_INT(decode(HD_PL_STREAMING_SIGNED, &a, "3\r\nabc\r\n0\r\n\r\n", 13, 0, &out, NULL),
                 HD_EBADSIG);
    hd_buf_reset(&body);
    hd_buf_printf(&body, "0;chunk-signature=%s;x=1\r\n\r\n", doc_sigs[2]);
    CHECK_EQ_INT(decode(HD_PL_STREAMING_SIGNED, &a, body.data, body.len, 0, &out, NULL), HD_ECHUNK);
    doc_body(&body, "x-amz-checksum-crc32:AAAAAA==\r\n\r\n");
    CHECK_EQ_INT(decode(HD_PL_STREAMING_SIGNED, &a, body.data, body.len, 0, &out, NULL), HD_ECHUNK);
    /* Truncation anywhere but at the very end is incomplete. */
    doc_body(&body, NULL);
    CHECK_EQ_INT(decode(HD_PL_STREAMING_SIGNED, &a, body.data, body.len - 90, 0, &out, NULL),
                 HD_EINCOMPLETEBODY);
    CHECK_EQ_INT(decode(HD_PL_STREAMING_SIGNED, &a, body.data, body.len - 2, 0, &out, NULL), 0);

    /* Signed trailer: the documented trailer signature chains from the final chunk. */
    doc_body(&body, NULL);
    body.len -= 2;
    body.data[body.len] = '\0';
    hd_buf_printf(&body,
                  "first:1st\r\nsecond:2nd\r\nthird:3rd\r\nx-amz-trailer-signature:%s\r\n\r\n",
                  doc_trailer_sig);
    d = NULL;
    CHECK_EQ_INT(decode(HD_PL_STREAMING_SIGNED_TRAILER, &a, body.data, body.len, 1, &out, &d), 0);
    if (d) {
        CHECK_EQ_STR(hd_awschunked_trailer(d, "first"), "1st");
        CHECK_EQ_STR(hd_awschunked_trailer(d, "third"), "3rd");
        CHECK(hd_awschunked_trailer(d, "x-amz-trailer-signature") == NULL);
        CHECK_EQ_INT(hd_awschunked_decoded(d), 66560);
        hd_awschunked_free(d);
    }
    /* Missing final CRLFs are tolerated at the end. */
    CHECK_EQ_INT(decode(HD_PL_STREAMING_SIGNED_TRAILER, &a, body.data, body.len - 2, 0, &out, NULL),
                 0);
    CHECK_EQ_INT(decode(HD_PL_STREAMING_SIGNED_TRAILER, &a, body.data, body.len - 4, 0, &out, NULL),
                 0);
    /* Missing the signature's last digit. */
    CHECK_EQ_INT(decode(HD_PL_STREAMING_SIGNED_TRAILER, &a, body.data, body.len - 5, 0, &out, NULL),
                 HD_EBADSIG);
    /* A changed trailer value. */
    {
        char *p = strstr(body.data, "second:2nd");
        p[7] = '3';
        CHECK_EQ_INT(decode(HD_PL_STREAMING_SIGNED_TRAILER, &a, body.data, body.len, 0, &out, NULL),
                     HD_EBADSIG);
        p[7] = '2';
    }
    /* No trailer signature at all. */
    doc_body(&body, "first:1st\r\n\r\n");
    CHECK_EQ_INT(decode(HD_PL_STREAMING_SIGNED_TRAILER, &a, body.data, body.len, 0, &out, NULL),
                 HD_EBADSIG);
    hd_buf_cleanup(&body);
    hd_buf_cleanup(&out);
}
