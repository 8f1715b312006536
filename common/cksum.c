#include "common/cksum.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <xxhash.h>
#include <zlib.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define HAVE_SSE42_CRC 1
#endif

#include "common/errors.h"

#define CRC32C_POLY 0x82F63B78u              /* Castagnoli, reflected */
#define CRC64NVME_POLY 0x9a6c9329ac4bc9b5ull /* CRC-64/NVME, reflected */

/* Slicing-by-8 tables: t[k][b] is the CRC of byte b followed by k zero bytes. Built once;
 * read-only afterwards, so sharing them between threads is safe. */
static uint32_t crc32c_tab[8][256];
static uint64_t crc64_tab[8][256];
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;
#ifdef HAVE_SSE42_CRC
static int have_sse42;
#endif

static void build_tables(void)
{
    for (unsigned i = 0; i < 256; i++) {
        uint32_t c = i;
        uint64_t d = i;
        for (int k = 0; k < 8; k++) {
            c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
            d = (d & 1) ? (d >> 1) ^ CRC64NVME_POLY : d >> 1;
        }
        crc32c_tab[0][i] = c;
        crc64_tab[0][i] = d;
    }
    for (unsigned i = 0; i < 256; i++) {
        for (int k = 1; k < 8; k++) {
            uint32_t c = crc32c_tab[k - 1][i];
            uint64_t d = crc64_tab[k - 1][i];
            crc32c_tab[k][i] = (c >> 8) ^ crc32c_tab[0][c & 0xff];
            crc64_tab[k][i] = (d >> 8) ^ crc64_tab[0][d & 0xff];
        }
    }
#ifdef HAVE_SSE42_CRC
    __builtin_cpu_init();
    have_sse42 = __builtin_cpu_supports("sse4.2");
#endif
}

static void tables_ready(void)
{
    pthread_once(&tab_once, build_tables);
}

/* Unaligned little-endian loads; memcpy compiles to one mov on x86/arm64. */
static uint64_t load64le(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* Portable slicing-by-8 over the pre-inverted register. */
static uint32_t crc32c_sw(uint32_t crc, const unsigned char *p, size_t n)
{
    while (n && ((uintptr_t)p & 7)) {
        crc = (crc >> 8) ^ crc32c_tab[0][(crc ^ *p++) & 0xff];
        n--;
    }
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t x = load64le(p) ^ crc;
        crc = crc32c_tab[7][x & 0xff] ^ crc32c_tab[6][(x >> 8) & 0xff] ^
              crc32c_tab[5][(x >> 16) & 0xff] ^ crc32c_tab[4][(x >> 24) & 0xff] ^
              crc32c_tab[3][(x >> 32) & 0xff] ^ crc32c_tab[2][(x >> 40) & 0xff] ^
              crc32c_tab[1][(x >> 48) & 0xff] ^ crc32c_tab[0][x >> 56];
    }
    while (n--)
        crc = (crc >> 8) ^ crc32c_tab[0][(crc ^ *p++) & 0xff];
    return crc;
}

#ifdef HAVE_SSE42_CRC
/* SSE4.2 crc32 instruction implements exactly CRC32C; compiled for that target only and
 * reached only after the runtime check. */
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const unsigned char *p,
                                                            size_t n)
{
    uint64_t c = crc;

    while (n && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        n--;
    }
    for (; n >= 8; n -= 8, p += 8)
        c = _mm_crc32_u64(c, load64le(p));
    while (n--)
        c = _mm_crc32_u8((uint32_t)c, *p++);
    return (uint32_t)c;
}
#endif

static uint32_t crc32c_update(uint32_t reg, const void *p, size_t n)
{
    tables_ready();
#ifdef HAVE_SSE42_CRC
    if (have_sse42)
        return crc32c_hw(reg, p, n);
#endif
    return crc32c_sw(reg, p, n);
}

static uint64_t crc64_update(uint64_t crc, const void *buf, size_t n)
{
    const unsigned char *p = buf;

    tables_ready();
    while (n && ((uintptr_t)p & 7)) {
        crc = (crc >> 8) ^ crc64_tab[0][(crc ^ *p++) & 0xff];
        n--;
    }
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t x = load64le(p) ^ crc;
        crc = crc64_tab[7][x & 0xff] ^ crc64_tab[6][(x >> 8) & 0xff] ^
              crc64_tab[5][(x >> 16) & 0xff] ^ crc64_tab[4][(x >> 24) & 0xff] ^
              crc64_tab[3][(x >> 32) & 0xff] ^ crc64_tab[2][(x >> 40) & 0xff] ^
              crc64_tab[1][(x >> 48) & 0xff] ^ crc64_tab[0][x >> 56];
    }
    while (n--)
        crc = (crc >> 8) ^ crc64_tab[0][(crc ^ *p++) & 0xff];
    return crc;
}

uint32_t hd_crc32c(uint32_t crc, const void *p, size_t n)
{
    return ~crc32c_update(~crc, p, n);
}

uint32_t hd_crc32c_portable(uint32_t crc, const void *p, size_t n)
{
    tables_ready();
    return ~crc32c_sw(~crc, p, n);
}

uint64_t hd_crc64nvme(uint64_t crc, const void *p, size_t n)
{
    return ~crc64_update(~crc, p, n);
}

/* ---- streaming checksum ---- */

static const EVP_MD *md_for(enum hd_ck_type t)
{
    return t == HD_CK_SHA1 ? EVP_sha1() : EVP_sha256();
}

int hd_cksum_init(struct hd_cksum *c, enum hd_ck_type t)
{
    EVP_MD_CTX *md;

    memset(c, 0, sizeof(*c));
    c->type = t;
    switch (t) {
    case HD_CK_NONE:
        return 0;
    case HD_CK_CRC32:
        c->u.crc32 = (uint32_t)crc32_z(0, Z_NULL, 0);
        return 0;
    case HD_CK_CRC32C:
        c->u.crc32 = 0xffffffffu;
        return 0;
    case HD_CK_CRC64NVME:
        c->u.crc64 = ~0ull;
        return 0;
    case HD_CK_SHA1:
    case HD_CK_SHA256:
        md = EVP_MD_CTX_new();
        if (!md)
            return -ENOMEM;
        if (EVP_DigestInit_ex(md, md_for(t), NULL) != 1) {
            EVP_MD_CTX_free(md);
            return HD_EINTERNAL;
        }
        c->u.md = md;
        return 0;
    }
    c->type = HD_CK_NONE;
    return HD_EBADARG;
}

void hd_cksum_update(struct hd_cksum *c, const void *p, size_t n)
{
    switch (c->type) {
    case HD_CK_NONE:
        break;
    case HD_CK_CRC32:
        c->u.crc32 = (uint32_t)crc32_z(c->u.crc32, p, n);
        break;
    case HD_CK_CRC32C:
        c->u.crc32 = crc32c_update(c->u.crc32, p, n);
        break;
    case HD_CK_CRC64NVME:
        c->u.crc64 = crc64_update(c->u.crc64, p, n);
        break;
    case HD_CK_SHA1:
    case HD_CK_SHA256:
        if (c->u.md)
            EVP_DigestUpdate(c->u.md, p, n);
        break;
    }
}

static void put_be(unsigned char *out, uint64_t v, int nbytes)
{
    for (int i = nbytes - 1; i >= 0; i--) {
        out[i] = (unsigned char)v;
        v >>= 8;
    }
}

int hd_cksum_final_b64(struct hd_cksum *c, char out[HD_CK_B64_MAX])
{
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;

    out[0] = '\0';
    switch (c->type) {
    case HD_CK_NONE:
        return 0;
    case HD_CK_CRC32:
        put_be(d, c->u.crc32, 4); /* zlib's value already has xorout applied */
        dlen = 4;
        break;
    case HD_CK_CRC32C:
        put_be(d, ~c->u.crc32, 4);
        dlen = 4;
        break;
    case HD_CK_CRC64NVME:
        put_be(d, ~c->u.crc64, 8);
        dlen = 8;
        break;
    case HD_CK_SHA1:
    case HD_CK_SHA256:
        if (!c->u.md || EVP_DigestFinal_ex(c->u.md, d, &dlen) != 1)
            return HD_EINTERNAL;
        break;
    }
    return hd_b64_encode(d, dlen, out, HD_CK_B64_MAX);
}

void hd_cksum_cleanup(struct hd_cksum *c)
{
    if ((c->type == HD_CK_SHA1 || c->type == HD_CK_SHA256) && c->u.md)
        EVP_MD_CTX_free(c->u.md);
    memset(c, 0, sizeof(*c));
}

/* ---- names ---- */

static const struct {
    enum hd_ck_type t;
    const char *name;
    const char *header;
} ck_names[] = {
    {HD_CK_CRC32, "CRC32", "x-amz-checksum-crc32"},
    {HD_CK_CRC32C, "CRC32C", "x-amz-checksum-crc32c"},
    {HD_CK_CRC64NVME, "CRC64NVME", "x-amz-checksum-crc64nvme"},
    {HD_CK_SHA1, "SHA1", "x-amz-checksum-sha1"},
    {HD_CK_SHA256, "SHA256", "x-amz-checksum-sha256"},
};
#define NCK (sizeof(ck_names) / sizeof(ck_names[0]))

enum hd_ck_type hd_cksum_type_from_name(const char *s)
{
    for (size_t i = 0; s && i < NCK; i++)
        if (strcasecmp(s, ck_names[i].name) == 0)
            return ck_names[i].t;
    return HD_CK_NONE;
}

const char *hd_cksum_name(enum hd_ck_type t)
{
    for (size_t i = 0; i < NCK; i++)
        if (ck_names[i].t == t)
            return ck_names[i].name;
    return "";
}

const char *hd_cksum_header(enum hd_ck_type t)
{
    for (size_t i = 0; i < NCK; i++)
        if (ck_names[i].t == t)
            return ck_names[i].header;
    return NULL;
}

enum hd_ck_type hd_cksum_type_from_header(const char *lname)
{
    for (size_t i = 0; lname && i < NCK; i++)
        if (strcasecmp(lname, ck_names[i].header) == 0)
            return ck_names[i].t;
    return HD_CK_NONE;
}

size_t hd_cksum_size(enum hd_ck_type t)
{
    switch (t) {
    case HD_CK_CRC32:
    case HD_CK_CRC32C:
        return 4;
    case HD_CK_CRC64NVME:
        return 8;
    case HD_CK_SHA1:
        return 20;
    case HD_CK_SHA256:
        return 32;
    default:
        return 0;
    }
}

int hd_cksum_value_ok(enum hd_ck_type t, const char *v, int composite_ok)
{
    unsigned char raw[64];
    const char *dash = v ? strchr(v, '-') : NULL;
    size_t n = dash ? (size_t)(dash - v) : v ? strlen(v) : 0, got;

    if (!v || t == HD_CK_NONE || (dash && !composite_ok))
        return 0;
    if (dash) { /* "-N": 1..10000 parts */
        const char *p = dash + 1;
        if (!*p || strlen(p) > 5)
            return 0;
        for (; *p; p++)
            if (*p < '0' || *p > '9')
                return 0;
    }
    return hd_b64_decode(v, n, raw, sizeof(raw), &got) == 0 && got == hd_cksum_size(t);
}

/* ---- MD5 ---- */

int hd_md5_init(struct hd_md5 *m)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();

    m->ctx = NULL;
    if (!ctx)
        return -ENOMEM;
    if (EVP_DigestInit_ex(ctx, EVP_md5(), NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        return HD_EINTERNAL;
    }
    m->ctx = ctx;
    return 0;
}

void hd_md5_update(struct hd_md5 *m, const void *p, size_t n)
{
    if (m->ctx)
        EVP_DigestUpdate(m->ctx, p, n);
}

int hd_md5_final(struct hd_md5 *m, unsigned char out[16])
{
    unsigned int len = 0;

    if (!m->ctx || EVP_DigestFinal_ex(m->ctx, out, &len) != 1 || len != 16)
        return HD_EINTERNAL;
    return 0;
}

void hd_md5_cleanup(struct hd_md5 *m)
{
    EVP_MD_CTX_free(m->ctx); /* NULL-safe */
    m->ctx = NULL;
}

/* ---- hex / base64 ---- */

void hd_hex(const unsigned char *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";

    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int hd_unhex(const char *in, size_t inlen, unsigned char *out, size_t outmax, size_t *outlen)
{
    if (inlen % 2 || inlen / 2 > outmax)
        return HD_EINVALIDDIGEST;
    for (size_t i = 0; i < inlen; i += 2) {
        int hi = hexval((unsigned char)in[i]), lo = hexval((unsigned char)in[i + 1]);
        if (hi < 0 || lo < 0)
            return HD_EINVALIDDIGEST;
        out[i / 2] = (unsigned char)(hi << 4 | lo);
    }
    if (outlen)
        *outlen = inlen / 2;
    return 0;
}

int hd_b64_encode(const unsigned char *in, size_t n, char *out, size_t outmax)
{
    size_t need = (n + 2) / 3 * 4 + 1;

    if (need > outmax)
        return -ENOSPC;
    /* EVP_EncodeBlock takes an int length; callers encode digests, but stay correct. */
    while (n > 0) {
        size_t take = n > ((size_t)3 << 28) ? ((size_t)3 << 28) : n;
        int w = EVP_EncodeBlock((unsigned char *)out, in, (int)take);
        out += w;
        in += take;
        n -= take;
    }
    *out = '\0';
    return 0;
}

/* Value of a base64 character, -1 outside the standard alphabet. */
static int b64_val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* EVP_DecodeBlock skips surrounding whitespace, ignores nothing else and counts padding
 * bytes as output, so validate first and fix the length up after. */
int hd_b64_decode(const char *in, size_t n, unsigned char *out, size_t outmax, size_t *outlen)
{
    const unsigned char *s = (const unsigned char *)in;
    unsigned char last[3];
    size_t pad = 0, full, dlen;

    if (n % 4)
        return HD_EINVALIDDIGEST;
    if (n >= 1 && s[n - 1] == '=')
        pad = (n >= 2 && s[n - 2] == '=') ? 2 : 1;
    for (size_t i = 0; i < n - pad; i++)
        if (b64_val(s[i]) < 0)
            return HD_EINVALIDDIGEST;
    /* Canonical form only: the bits a padded quad does not use must be zero ("QR==" is
     * not another spelling of "QQ=="). */
    if (pad && (b64_val(s[n - pad - 1]) & (pad == 2 ? 0x0f : 0x03)))
        return HD_EINVALIDDIGEST;
    dlen = n / 4 * 3 - pad;
    if (dlen > outmax || n / 4 > INT32_MAX / 4)
        return HD_EINVALIDDIGEST;
    /* All quads but the last decode straight into out; the last goes through a small
     * buffer so an exact-size out (16 bytes for Content-MD5) is enough. */
    if (n > 0) {
        full = n - 4;
        if (full && EVP_DecodeBlock(out, s, (int)full) < 0)
            return HD_EINVALIDDIGEST;
        if (EVP_DecodeBlock(last, s + full, 4) != 3)
            return HD_EINVALIDDIGEST;
        memcpy(out + full / 4 * 3, last, 3 - pad);
    }
    if (outlen)
        *outlen = dlen;
    return 0;
}

/* ---- one-shot hashes ---- */

uint64_t hd_xxh64(const void *p, size_t n, uint64_t seed)
{
    return XXH64(p, n, seed);
}

/* OpenSSL one-shots fail only when an allocation inside them fails. Returning a wrong
 * digest (which a signature check might then compare against) would be worse than
 * stopping, so treat that as fatal like any other out-of-memory in a hashing primitive. */
void hd_sha256(const void *p, size_t n, unsigned char out[32])
{
    unsigned int len = 0;

    if (EVP_Digest(p, n, out, &len, EVP_sha256(), NULL) != 1 || len != 32)
        abort();
}

void hd_hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
                    unsigned char out[32])
{
    unsigned int len = 0;

    if (klen > INT32_MAX || !HMAC(EVP_sha256(), key, (int)klen, msg, mlen, out, &len) || len != 32)
        abort();
}
