/* kdf: keys derived from the cluster secret. Each use of the secret gets its own key, so a
 * key that leaks from one use (a node's request key, the bearer-token key) says nothing
 * about the secret or the other keys:
 *
 *   key = HKDF-SHA256(IKM = secret, salt = "hoard/v1", info = label 0x00 id)   (32 bytes)
 *
 * label names the use ("hoard node key", "hoard token key"), id the holder (a node id; ""
 * for cluster-wide keys). The NUL keeps label and id apart. */
#ifndef HD_KDF_H
#define HD_KDF_H

#include <stddef.h>

#define HD_KDF_KEY_LEN 32
#define HD_KDF_ID_MAX 128

/* 0, or -EINVAL (id longer than HD_KDF_ID_MAX) / -EIO (OpenSSL failed). */
int hd_kdf_key(const char *secret, size_t slen, const char *label, const char *id,
               unsigned char out[HD_KDF_KEY_LEN]);

/* HMAC-SHA256(key, msg) as 64 lowercase hex digits and a NUL. */
void hd_kdf_hmac_hex(const unsigned char *key, size_t klen, const void *msg, size_t len,
                     char out[65]);

/* A keyed HMAC-SHA256 set up once (the key schedule done), used from any thread: cheaper than
 * hd_kdf_hmac_hex for a key used again and again (a node's signing key). */
struct hd_hmac;
struct hd_hmac *hd_hmac_new(const unsigned char *key, size_t klen);
void hd_hmac_free(struct hd_hmac *h);
/* 0, or -EIO (out is then ""). */
int hd_hmac_hex(const struct hd_hmac *h, const void *msg, size_t len, char out[65]);

/* Constant-time comparison of two NUL-terminated strings (lengths are not secret). */
int hd_kdf_equal(const char *a, const char *b);

#endif
