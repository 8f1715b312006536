#include "common/kdf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>

#include "common/cksum.h"

static const char SALT[] = "hoard/v1";

int hd_kdf_key(const char *secret, size_t slen, const char *label, const char *id,
               unsigned char out[HD_KDF_KEY_LEN])
{
    unsigned char info[64 + 1 + HD_KDF_ID_MAX];
    size_t ln = strlen(label), in = strlen(id);
    EVP_KDF *kdf;
    EVP_KDF_CTX *k = NULL;
    OSSL_PARAM p[5];
    int ok = 0;

    if (ln > 64 || in > HD_KDF_ID_MAX)
        return -EINVAL;
    memcpy(info, label, ln);
    info[ln] = '\0';
    memcpy(info + ln + 1, id, in);
    p[0] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0);
    p[1] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)secret, slen);
    p[2] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)SALT, sizeof(SALT) - 1);
    p[3] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, ln + 1 + in);
    p[4] = OSSL_PARAM_construct_end();
    kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
    if (kdf)
        k = EVP_KDF_CTX_new(kdf);
    if (k)
        ok = EVP_KDF_derive(k, out, HD_KDF_KEY_LEN, p) == 1;
    EVP_KDF_CTX_free(k);
    EVP_KDF_free(kdf);
    return ok ? 0 : -EIO;
}

void hd_kdf_hmac_hex(const unsigned char *key, size_t klen, const void *msg, size_t len,
                     char out[65])
{
    unsigned char mac[32];

    hd_hmac_sha256(key, klen, msg, len, mac);
    hd_hex(mac, sizeof(mac), out);
}

struct hd_hmac {
    EVP_MAC_CTX *ctx; /* keyed; never updated itself, only duplicated */
};

struct hd_hmac *hd_hmac_new(const unsigned char *key, size_t klen)
{
    struct hd_hmac *h = calloc(1, sizeof(*h));
    EVP_MAC *m = EVP_MAC_fetch(NULL, "HMAC", NULL);
    OSSL_PARAM p[2];

    p[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0);
    p[1] = OSSL_PARAM_construct_end();
    if (!h || !m || !(h->ctx = EVP_MAC_CTX_new(m)) || EVP_MAC_init(h->ctx, key, klen, p) != 1) {
        EVP_MAC_free(m);
        hd_hmac_free(h);
        return NULL;
    }
    EVP_MAC_free(m); /* the context keeps its own reference */
    return h;
}

void hd_hmac_free(struct hd_hmac *h)
{
    if (!h)
        return;
    EVP_MAC_CTX_free(h->ctx);
    free(h);
}

int hd_hmac_hex(const struct hd_hmac *h, const void *msg, size_t len, char out[65])
{
    EVP_MAC_CTX *c = EVP_MAC_CTX_dup(h->ctx);
    unsigned char mac[32];
    size_t n = 0;
    int ok = c && EVP_MAC_update(c, msg, len) == 1 && EVP_MAC_final(c, mac, &n, sizeof(mac)) == 1 &&
             n == sizeof(mac);

    EVP_MAC_CTX_free(c);
    if (!ok) {
        out[0] = '\0';
        return -EIO;
    }
    hd_hex(mac, sizeof(mac), out);
    return 0;
}

int hd_kdf_equal(const char *a, const char *b)
{
    size_t n;

    if (!a || !b || (n = strlen(a)) != strlen(b))
        return 0;
    return CRYPTO_memcmp(a, b, n) == 0;
}
