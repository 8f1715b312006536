/* cksum: S3 object checksums (CRC32, CRC32C, CRC64NVME, SHA1, SHA256), the MD5 used for
 * ETags, hex/base64 helpers and one-shot hashes. No shared mutable state: any thread. */
#ifndef HD_CKSUM_H
#define HD_CKSUM_H

#include <stddef.h>
#include <stdint.h>

enum hd_ck_type {
    HD_CK_NONE,
    HD_CK_CRC32,
    HD_CK_CRC32C,
    HD_CK_CRC64NVME,
    HD_CK_SHA1,
    HD_CK_SHA256
};

/* Room for the base64 of the largest digest (SHA-256: 44 chars) plus NUL. */
#define HD_CK_B64_MAX 48

/* A running checksum, embedded by the caller. hd_cksum_init() may allocate (the SHA
 * variants hold an OpenSSL EVP_MD_CTX), so every successful init needs one
 * hd_cksum_cleanup(), also after hd_cksum_final_b64(). */
struct hd_cksum {
    enum hd_ck_type type;
    union {
        uint32_t crc32; /* CRC32/CRC32C register, kept pre-inverted */
        uint64_t crc64; /* CRC64NVME register, kept pre-inverted */
        void *md;       /* EVP_MD_CTX * for SHA1/SHA256 */
    } u;
};

/* HD_CK_NONE is accepted: updates are no-ops and the final value is "". -ENOMEM or
 * HD_EINTERNAL (OpenSSL failure) on error; nothing to clean up then. */
int hd_cksum_init(struct hd_cksum *c, enum hd_ck_type t);
void hd_cksum_update(struct hd_cksum *c, const void *p, size_t n);
/* Base64 of the big-endian digest, exactly as x-amz-checksum-* headers carry it. Call once. */
int hd_cksum_final_b64(struct hd_cksum *c, char out[HD_CK_B64_MAX]);
void hd_cksum_cleanup(struct hd_cksum *c);

/* "CRC32", "crc32c", ... (case-insensitive); HD_CK_NONE if unknown or NULL. */
enum hd_ck_type hd_cksum_type_from_name(const char *s);
/* "CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"; "" for HD_CK_NONE. */
const char *hd_cksum_name(enum hd_ck_type t);
/* "x-amz-checksum-crc32" ...; NULL for HD_CK_NONE. */
const char *hd_cksum_header(enum hd_ck_type t);
/* Inverse of hd_cksum_header (case-insensitive); HD_CK_NONE if not a checksum header. */
enum hd_ck_type hd_cksum_type_from_header(const char *lname);
/* Bytes of the digest (4, 8, 20, 32; 0 for HD_CK_NONE). */
size_t hd_cksum_size(enum hd_ck_type t);
/* 1 when v is a well-formed value of type t: the padded base64 of hd_cksum_size(t) bytes,
 * followed, when composite_ok, by an optional "-N" (a multipart upload's checksum of
 * checksums); else 0. */
int hd_cksum_value_ok(enum hd_ck_type t, const char *v, int composite_ok);

/* Raw CRCs for callers that combine or store them (init/xorout applied, as in the catalogue):
 * pass 0 as crc to start, the previous return value to continue. */
uint32_t hd_crc32c(uint32_t crc, const void *p, size_t n);
uint64_t hd_crc64nvme(uint64_t crc, const void *p, size_t n);
/* hd_crc32c without the SSE4.2 fast path (the tests compare the two). */
uint32_t hd_crc32c_portable(uint32_t crc, const void *p, size_t n);

/* MD5 for ETags. init allocates the EVP context: pair it with hd_md5_cleanup(), which is
 * safe after a failed init and on a zeroed struct. final may be called once per init. */
struct hd_md5 {
    void *ctx; /* EVP_MD_CTX * */
};
int hd_md5_init(struct hd_md5 *m);
void hd_md5_update(struct hd_md5 *m, const void *p, size_t n);
int hd_md5_final(struct hd_md5 *m, unsigned char out[16]);
void hd_md5_cleanup(struct hd_md5 *m);

/* Lowercase hex of n bytes into out (2n+1 bytes, NUL-terminated). */
void hd_hex(const unsigned char *in, size_t n, char *out);
/* Hex (either case) to bytes. HD_EINVALIDDIGEST on odd length, a non-hex character or
 * more than outmax bytes. */
int hd_unhex(const char *in, size_t inlen, unsigned char *out, size_t outmax, size_t *outlen);
/* Standard padded base64, NUL-terminated. -ENOSPC if out (outmax bytes) is too small:
 * it needs 4*ceil(n/3)+1. */
int hd_b64_encode(const unsigned char *in, size_t n, char *out, size_t outmax);
/* Strict padded base64: HD_EINVALIDDIGEST on a length not a multiple of 4, characters
 * outside the alphabet (whitespace included), misplaced '=', or more than outmax bytes of
 * output. *outlen gets the exact decoded length. */
int hd_b64_decode(const char *in, size_t n, unsigned char *out, size_t outmax, size_t *outlen);

uint64_t hd_xxh64(const void *p, size_t n, uint64_t seed);
void hd_sha256(const void *p, size_t n, unsigned char out[32]);
void hd_hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
                    unsigned char out[32]);

#endif
