/* libFuzzer driver for the aws-chunked decoder (common/awschunked). The input is a body; it
 * is decoded whole and split at a data-derived position, in unsigned, signed and
 * signed-trailer mode, and the two runs must agree on the result and on the payload. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/awschunked.h"
#include "common/buf.h"
#include "common/cksum.h"
#include "common/errors.h"
#include "common/sigv4.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The S3 documentation's streaming request: seed 4f232c43..., so seeds signed with it (see
 * test/fuzz/corpus/fuzz_awschunked) verify. */
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

struct run {
    int rc;
    uint64_t decoded;
    uint64_t seen; /* bytes the sink saw */
    uint32_t crc;  /* of those bytes */
};

static int sink(void *arg, const char *p, size_t n)
{
    struct run *r = arg;

    if (n == 0)
        __builtin_trap(); /* the decoder never hands out empty spans */
    r->seen += n;
    r->crc = hd_crc32c(r->crc, p, n);
    return 0;
}

static struct run decode(enum hd_payload mode, const struct hd_sigv4_auth *a, const char *p,
                         size_t n, size_t cut)
{
    struct run r = {0};
    struct hd_awschunked *d = hd_awschunked_new(mode, a);

    if (!d) {
        r.rc = -ENOMEM;
        return r;
    }
    r.rc = hd_awschunked_feed(d, p, cut, sink, &r);
    if (r.rc == 0)
        r.rc = hd_awschunked_feed(d, p + cut, n - cut, sink, &r);
    if (r.rc == 0)
        r.rc = hd_awschunked_finish(d);
    r.decoded = hd_awschunked_decoded(d);
    if (r.rc == 0)
        (void)hd_awschunked_trailer(d, "x-amz-checksum-crc32");
    hd_awschunked_free(d);
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct hd_sigv4_auth auth;
    static int have_auth;
    static const enum hd_payload modes[] = {HD_PL_STREAMING_UNSIGNED_TRAILER,
                                            HD_PL_STREAMING_SIGNED, HD_PL_STREAMING_SIGNED_TRAILER};
    const char *p = (const char *)data;
    size_t cut = size ? ((size_t)data[0] * 131u + data[size - 1]) % (size + 1) : 0;

    if (!have_auth) {
        if (doc_auth(&auth) != 0)
            __builtin_trap();
        have_auth = 1;
    }
    for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
        struct run whole = decode(modes[m], &auth, p, size, size);
        struct run split = decode(modes[m], &auth, p, size, cut);
        if (whole.rc != split.rc || whole.decoded != split.decoded || whole.seen != split.seen ||
            whole.crc != split.crc || whole.seen != whole.decoded)
            __builtin_trap();
        if (whole.rc > 0)
            __builtin_trap();
    }
    return 0;
}
