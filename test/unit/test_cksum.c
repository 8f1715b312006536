/* Unit tests for common/cksum: CRC catalogue check values, S3 header forms, streaming,
 * MD5/SHA known answers, hex and base64 round trips and rejects. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cksum.h"
#include "common/errors.h"
#include "test/unit/hd_test.h"

static const char check9[] = "123456789";

/* One-shot S3 base64 form of s under type t. */
static void b64_of(enum hd_ck_type t, const void *p, size_t n, char out[HD_CK_B64_MAX])
{
    struct hd_cksum c;

    out[0] = '\0';
    if (hd_cksum_init(&c, t) != 0)
        return;
    hd_cksum_update(&c, p, n);
    hd_cksum_final_b64(&c, out);
    hd_cksum_cleanup(&c);
}

static unsigned char *pattern(size_t n)
{
    unsigned char *p = malloc(n);

    for (size_t i = 0; p && i < n; i++)
        p[i] = (unsigned char)(i * 31 + 7);
    return p;
}

HD_SUITE(cksum_crc)
{
    unsigned char *big = pattern(10007);
    char b[HD_CK_B64_MAX];

    CHECK_EQ_INT(hd_crc32c(0, check9, 9), 0xe3069283u);
    CHECK_EQ_INT(hd_crc32c_portable(0, check9, 9), 0xe3069283u);
    CHECK(hd_crc64nvme(0, check9, 9) == 0xae8b14860a799888ull);
    /* Long input exercises the 8-byte loops; values from a bitwise reference model. */
    CHECK_EQ_INT(hd_crc32c(0, big, 10007), 0xca285153u);
    CHECK_EQ_INT(hd_crc32c_portable(0, big, 10007), 0xca285153u);
    CHECK(hd_crc64nvme(0, big, 10007) == 0x3bc44e791addcb46ull);
    /* Misaligned starts and continuation. */
    CHECK_EQ_INT(hd_crc32c(hd_crc32c(0, big, 3), big + 3, 10004), 0xca285153u);
    CHECK_EQ_INT(hd_crc32c_portable(hd_crc32c_portable(0, big, 5), big + 5, 10002), 0xca285153u);
    CHECK(hd_crc64nvme(hd_crc64nvme(0, big, 1), big + 1, 10006) == 0x3bc44e791addcb46ull);
    CHECK_EQ_INT(hd_crc32c(0, "", 0), 0);

    /* S3 header forms: base64 of the big-endian value. 0xcbf43926 -> y/Q5Jg==. */
    b64_of(HD_CK_CRC32, check9, 9, b);
    CHECK_EQ_STR(b, "y/Q5Jg==");
    b64_of(HD_CK_CRC32C, check9, 9, b);
    CHECK_EQ_STR(b, "4waSgw==");
    b64_of(HD_CK_CRC64NVME, check9, 9, b);
    CHECK_EQ_STR(b, "rosUhgp5mIg=");
    b64_of(HD_CK_CRC32, "hello world", 11, b);
    CHECK_EQ_STR(b, "DUoRhQ==");
    b64_of(HD_CK_CRC32C, "hello world", 11, b);
    CHECK_EQ_STR(b, "yZRlqg==");
    b64_of(HD_CK_CRC64NVME, "hello world", 11, b);
    CHECK_EQ_STR(b, "jSnVw/bqjr4=");
    b64_of(HD_CK_SHA1, "hello world", 11, b);
    CHECK_EQ_STR(b, "Kq5sNclPz7QV2+lfQIuc6R7oRu0=");
    b64_of(HD_CK_SHA256, "hello world", 11, b);
    CHECK_EQ_STR(b, "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek=");
    b64_of(HD_CK_CRC32, "", 0, b);
    CHECK_EQ_STR(b, "AAAAAA==");
    b64_of(HD_CK_NONE, "x", 1, b);
    CHECK_EQ_STR(b, "");
    free(big);
}

HD_SUITE(cksum_stream)
{
    static const enum hd_ck_type types[] = {HD_CK_CRC32, HD_CK_CRC32C, HD_CK_CRC64NVME, HD_CK_SHA1,
                                            HD_CK_SHA256};
    static const size_t pieces[] = {1, 2, 3, 7, 8, 13, 64, 1000, 4099};
    size_t n = 70001;
    unsigned char *data = pattern(n);

    for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
        char one[HD_CK_B64_MAX], many[HD_CK_B64_MAX];
        struct hd_cksum c;
        size_t off = 0, k = 0;

        b64_of(types[t], data, n, one);
        CHECK_EQ_INT(hd_cksum_init(&c, types[t]), 0);
        while (off < n) {
            size_t take = pieces[k++ % (sizeof(pieces) / sizeof(pieces[0]))];
            if (take > n - off)
                take = n - off;
            hd_cksum_update(&c, data + off, take);
            off += take;
        }
        CHECK_EQ_INT(hd_cksum_final_b64(&c, many), 0);
        hd_cksum_cleanup(&c);
        CHECK_EQ_STR(many, one);
    }
    free(data);
}

HD_SUITE(cksum_names)
{
    CHECK_EQ_INT(hd_cksum_type_from_name("CRC32"), HD_CK_CRC32);
    CHECK_EQ_INT(hd_cksum_type_from_name("crc32"), HD_CK_CRC32);
    CHECK_EQ_INT(hd_cksum_type_from_name("CRC32C"), HD_CK_CRC32C);
    CHECK_EQ_INT(hd_cksum_type_from_name("crc64nvme"), HD_CK_CRC64NVME);
    CHECK_EQ_INT(hd_cksum_type_from_name("Sha1"), HD_CK_SHA1);
    CHECK_EQ_INT(hd_cksum_type_from_name("SHA256"), HD_CK_SHA256);
    CHECK_EQ_INT(hd_cksum_type_from_name("MD5"), HD_CK_NONE);
    CHECK_EQ_INT(hd_cksum_type_from_name(NULL), HD_CK_NONE);
    CHECK_EQ_STR(hd_cksum_name(HD_CK_CRC64NVME), "CRC64NVME");
    CHECK_EQ_STR(hd_cksum_name(HD_CK_NONE), "");
    CHECK_EQ_STR(hd_cksum_header(HD_CK_CRC32C), "x-amz-checksum-crc32c");
    CHECK_EQ_STR(hd_cksum_header(HD_CK_SHA256), "x-amz-checksum-sha256");
    CHECK(hd_cksum_header(HD_CK_NONE) == NULL);
    CHECK_EQ_INT(hd_cksum_type_from_header("x-amz-checksum-crc32"), HD_CK_CRC32);
    CHECK_EQ_INT(hd_cksum_type_from_header("X-Amz-Checksum-SHA1"), HD_CK_SHA1);
    CHECK_EQ_INT(hd_cksum_type_from_header("x-amz-checksum-mode"), HD_CK_NONE);
}

static void md5_hex(const char *s, char out[33])
{
    struct hd_md5 m;
    unsigned char d[16];

    out[0] = '\0';
    if (hd_md5_init(&m) != 0)
        return;
    hd_md5_update(&m, s, strlen(s));
    if (hd_md5_final(&m, d) == 0)
        hd_hex(d, 16, out);
    hd_md5_cleanup(&m);
}

HD_SUITE(cksum_digests)
{
    char h[65];
    unsigned char d[32];
    struct hd_md5 m = {0};

    md5_hex("", h);
    CHECK_EQ_STR(h, "d41d8cd98f00b204e9800998ecf8427e");
    md5_hex("abc", h);
    CHECK_EQ_STR(h, "900150983cd24fb0d6963f7d28e17f72");
    md5_hex("The quick brown fox jumps over the lazy dog", h);
    CHECK_EQ_STR(h, "9e107d9d372bb6826bd81d3542a419d6");
    hd_md5_cleanup(&m); /* zeroed struct: no-op */

    hd_sha256("abc", 3, d);
    hd_hex(d, 32, h);
    CHECK_EQ_STR(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    hd_sha256("", 0, d);
    hd_hex(d, 32, h);
    CHECK_EQ_STR(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");

    /* SHA1("abc") via the streaming API, in base64 and hex form. */
    {
        char b[HD_CK_B64_MAX];
        unsigned char raw[20];
        size_t n = 0;
        b64_of(HD_CK_SHA1, "abc", 3, b);
        CHECK_EQ_INT(hd_b64_decode(b, strlen(b), raw, sizeof(raw), &n), 0);
        CHECK_EQ_INT(n, 20);
        hd_hex(raw, 20, h);
        CHECK_EQ_STR(h, "a9993e364706816aba3e25717850c26c9cd0d89d");
    }

    /* RFC 4231 test case 2. */
    hd_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, d);
    hd_hex(d, 32, h);
    CHECK_EQ_STR(h, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");

    CHECK(hd_xxh64("", 0, 0) == 0xef46db3751d8e999ull);
}

HD_SUITE(cksum_hex_b64)
{
    unsigned char raw[64], back[64];
    char txt[130];
    size_t n;

    for (size_t i = 0; i < sizeof(raw); i++)
        raw[i] = (unsigned char)(i * 37 + 1);
    hd_hex(raw, sizeof(raw), txt);
    CHECK_EQ_INT(strlen(txt), 128);
    CHECK_EQ_INT(hd_unhex(txt, 128, back, sizeof(back), &n), 0);
    CHECK_EQ_INT(n, 64);
    CHECK(memcmp(raw, back, 64) == 0);
    CHECK_EQ_INT(hd_unhex("ABcd", 4, back, 2, &n), 0);
    CHECK(back[0] == 0xab && back[1] == 0xcd);
    CHECK_EQ_INT(hd_unhex("abc", 3, back, 8, &n), HD_EINVALIDDIGEST);
    CHECK_EQ_INT(hd_unhex("zz", 2, back, 8, &n), HD_EINVALIDDIGEST);
    CHECK_EQ_INT(hd_unhex("abcd", 4, back, 1, &n), HD_EINVALIDDIGEST);

    /* Every length 0..64 round-trips, decoding into an exact-size buffer. */
    for (size_t len = 0; len <= sizeof(raw); len++) {
        CHECK_EQ_INT(hd_b64_encode(raw, len, txt, sizeof(txt)), 0);
        CHECK_EQ_INT(strlen(txt), (len + 2) / 3 * 4);
        n = 999;
        CHECK_EQ_INT(hd_b64_decode(txt, strlen(txt), back, len, &n), 0);
        CHECK_EQ_INT(n, len);
        CHECK(memcmp(raw, back, len) == 0);
    }
    CHECK_EQ_INT(hd_b64_encode(raw, 3, txt, 4), -ENOSPC);
    CHECK_EQ_INT(hd_b64_encode(raw, 3, txt, 5), 0);
    CHECK_EQ_INT(strlen(txt), 4);

    /* Content-MD5 of "" decodes into 16 bytes. */
    CHECK_EQ_INT(hd_b64_decode("1B2M2Y8AsgTpgAmY7PhCfg==", 24, back, 16, &n), 0);
    CHECK_EQ_INT(n, 16);
    CHECK(back[0] == 0xd4 && back[15] == 0x7e);
    /* ... but not into 15. */
    CHECK_EQ_INT(hd_b64_decode("1B2M2Y8AsgTpgAmY7PhCfg==", 24, back, 15, &n), HD_EINVALIDDIGEST);

    /* Rejects. */
    CHECK_EQ_INT(hd_b64_decode("DUoRhQ=", 7, back, 64, &n), HD_EINVALIDDIGEST);
    CHECK_EQ_INT(hd_b64_decode("DUoRhQ", 6, back, 64, &n), HD_EINVALIDDIGEST);
    CHECK_EQ_INT(hd_b64_decode("DUo*hQ==", 8, back, 64, &n), HD_EINVALIDDIGEST);
    CHECK_EQ_INT(hd_b64_decode("DU=RhQ==", 8, back, 64, &n), HD_EINVALIDDIGEST);
    CHECK_EQ_INT(hd_b64_decode("DUoRh===", 8, back, 64, &n), HD_EINVALIDDIGEST);
    CHECK_EQ_INT(hd_b64_decode(" DUoRhQ=", 8, back, 64, &n), HD_EINVALIDDIGEST);
    CHECK_EQ_INT(hd_b64_decode("DUoRhQ==\n", 9, back, 64, &n), HD_EINVALIDDIGEST);
    CHECK_EQ_INT(hd_b64_decode("DUoRhR==", 8, back, 64, &n), HD_EINVALIDDIGEST); /* bits */
    CHECK_EQ_INT(hd_b64_decode("QR==", 4, back, 64, &n), HD_EINVALIDDIGEST);
    CHECK_EQ_INT(hd_b64_decode("QUI=", 4, back, 64, &n), 0);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(hd_b64_decode("QUJ=", 4, back, 64, &n), HD_EINVALIDDIGEST);
    CHECK_EQ_INT(hd_b64_decode("DUoRhQ==", 8, back, 64, &n), 0);
    CHECK_EQ_INT(n, 4);
    CHECK(back[0] == 0x0d && back[1] == 0x4a && back[2] == 0x11 && back[3] == 0x85);
    CHECK_EQ_INT(hd_b64_decode("", 0, back, 0, &n), 0);
    CHECK_EQ_INT(n, 0);
}
