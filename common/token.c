#include "common/token.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "common/cksum.h"
#include "common/errors.h"
#include "common/kdf.h"

#define LABEL "hoard token key"
#define SECRETS 3
#define IAT_SKEW 300

static const char HEADER_JSON[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";

/* base64url without padding (RFC 7515 section 2). */
static int b64url_encode(const unsigned char *in, size_t n, char *out, size_t outmax)
{
    size_t i, len;
    int rc = hd_b64_encode(in, n, out, outmax);

    if (rc < 0)
        return rc;
    len = strlen(out);
    while (len && out[len - 1] == '=')
        out[--len] = '\0';
    for (i = 0; i < len; i++)
        out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
    return 0;
}

static int b64url_decode(const char *in, size_t n, unsigned char *out, size_t outmax,
                         size_t *outlen)
{
    char buf[HD_TOKEN_MAX + 4];
    size_t i;

    if (n % 4 == 1 || n + 4 > sizeof(buf))
        return HD_EACCESS;
    for (i = 0; i < n; i++) {
        if (in[i] == '+' || in[i] == '/' || in[i] == '=')
            return HD_EACCESS; /* the standard alphabet is not base64url */
        buf[i] = in[i] == '-' ? '+' : in[i] == '_' ? '/' : in[i];
    }
    while (i % 4)
        buf[i++] = '=';
    return hd_b64_decode(buf, i, out, outmax, outlen) < 0 ? HD_EACCESS : 0;
}

/* Splits a copy of the secrets list; returns how many (0..SECRETS). */
static size_t split(char *copy, char *v[SECRETS])
{
    char *save = NULL, *t;
    size_t n = 0;

    for (t = strtok_r(copy, ",", &save); t && n < SECRETS; t = strtok_r(NULL, ",", &save))
        if (*t)
            v[n++] = t;
    return n;
}

static int mac_b64(const char *secret, const char *msg, size_t len, char out[64])
{
    unsigned char key[HD_KDF_KEY_LEN], mac[32];
    int rc = hd_kdf_key(secret, strlen(secret), LABEL, "", key);

    if (rc < 0)
        return rc;
    hd_hmac_sha256(key, sizeof(key), msg, len, mac);
    OPENSSL_cleanse(key, sizeof(key));
    return b64url_encode(mac, sizeof(mac), out, 64);
}

int hd_token_issue(const char *secrets, const char *access, long ttl, time_t now, char *out,
                   size_t outlen)
{
    char *copy, *v[SECRETS], *claims = NULL;
    char h64[64], c64[HD_TOKEN_MAX], m64[64], jti[17];
    unsigned char rnd[8];
    size_t alen = access ? strlen(access) : 0, used;
    json_t *j;
    int rc = 0;

    if (!secrets || !access || alen == 0 || alen > 128)
        return -EINVAL;
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return -EIO;
    hd_hex(rnd, sizeof(rnd), jti); /* every token differs: one can be revoked alone */
    if (!(copy = strdup(secrets)))
        return -ENOMEM;
    if (split(copy, v) == 0) {
        rc = -EINVAL;
        goto out;
    }
    if (ttl <= 0)
        ttl = HD_TOKEN_TTL_DEFAULT;
    if (ttl > HD_TOKEN_TTL_MAX)
        ttl = HD_TOKEN_TTL_MAX;
    j = json_pack("{s:s, s:s, s:I, s:I, s:s, s:s}", "username", access, "sub", access, "iat",
                  (json_int_t)now, "exp", (json_int_t)now + (json_int_t)ttl, "iss", "hoard", "jti",
                  jti);
    claims = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(j);
    if (!claims) {
        rc = -ENOMEM;
        goto out;
    }
    if ((rc = b64url_encode((const unsigned char *)HEADER_JSON, sizeof(HEADER_JSON) - 1, h64,
                            sizeof(h64))) < 0 ||
        (rc = b64url_encode((const unsigned char *)claims, strlen(claims), c64, sizeof(c64))) < 0)
        goto out;
    if (strlen(h64) + strlen(c64) + 2 + 44 > outlen) {
        rc = -ENOSPC;
        goto out;
    }
    used = (size_t)snprintf(out, outlen, "%s.%s", h64, c64);
    if ((rc = mac_b64(v[0], out, used, m64)) < 0)
        goto out;
    snprintf(out + used, outlen - used, ".%s", m64);
out:
    if (copy) {
        OPENSSL_cleanse(copy, strlen(secrets));
        free(copy);
    }
    free(claims);
    return rc;
}

int hd_token_verify(const char *secrets, const char *token, time_t now, char *access, size_t accmax,
                    time_t *exp, const char **why)
{
    const char *d1, *d2;
    char *copy = NULL, *v[SECRETS], m64[64];
    unsigned char raw[HD_TOKEN_MAX];
    size_t n, i, rawlen, slen = 0, tlen = token ? strlen(token) : 0;
    json_t *j = NULL, *hj = NULL;
    const char *user;
    json_int_t e, iat;
    int ok = 0, rc = HD_EACCESS;

    *why = "malformed bearer token";
    if (!token || tlen == 0 || tlen >= HD_TOKEN_MAX || !(d1 = strchr(token, '.')) ||
        !(d2 = strchr(d1 + 1, '.')) || strchr(d2 + 1, '.'))
        return HD_EACCESS;
    /* the header must say HS256: no "none", no other algorithm */
    if (b64url_decode(token, (size_t)(d1 - token), raw, sizeof(raw) - 1, &rawlen) < 0 ||
        !(hj = json_loadb((const char *)raw, rawlen, 0, NULL)) ||
        !json_is_string(json_object_get(hj, "alg")) ||
        strcmp(json_string_value(json_object_get(hj, "alg")), "HS256") != 0)
        goto out;
    if (!secrets || !(copy = strdup(secrets)) || !(slen = strlen(secrets))) {
        *why = "bearer tokens are off (no cluster.secret)";
        goto out;
    }
    n = split(copy, v);
    if (n == 0) {
        *why = "bearer tokens are off (no cluster.secret)";
        goto out;
    }
    for (i = 0; i < n && !ok; i++)
        if (mac_b64(v[i], token, (size_t)(d2 - token), m64) == 0)
            ok = hd_kdf_equal(m64, d2 + 1);
    if (!ok) {
        *why = "bearer token signature does not match";
        goto out;
    }
    *why = "malformed bearer token claims";
    if (b64url_decode(d1 + 1, (size_t)(d2 - d1 - 1), raw, sizeof(raw) - 1, &rawlen) < 0 ||
        !(j = json_loadb((const char *)raw, rawlen, 0, NULL)))
        goto out;
    user = json_string_value(json_object_get(j, "username"));
    if (!user)
        user = json_string_value(json_object_get(j, "sub"));
    if (!user || !*user || strlen(user) >= accmax || !json_is_integer(json_object_get(j, "exp")))
        goto out;
    e = json_integer_value(json_object_get(j, "exp"));
    iat = json_is_integer(json_object_get(j, "iat")) ? json_integer_value(json_object_get(j, "iat"))
                                                     : 0;
    if (iat > (json_int_t)now + IAT_SKEW) {
        *why = "bearer token issued in the future";
        goto out;
    }
    if (e <= (json_int_t)now) {
        *why = "bearer token has expired";
        rc = HD_EEXPIRED;
        goto out;
    }
    snprintf(access, accmax, "%s", user);
    if (exp)
        *exp = (time_t)e;
    *why = NULL;
    rc = 0;
out:
    if (copy) {
        OPENSSL_cleanse(copy, slen);
        free(copy);
    }
    json_decref(j);
    json_decref(hj);
    return rc;
}

int hd_token_id(const char *token, char out[65])
{
    unsigned char md[32];
    unsigned int n = 0;

    if (!EVP_Digest(token, strlen(token), md, &n, EVP_sha256(), NULL) || n != sizeof(md))
        return -ENOMEM;
    hd_hex(md, sizeof(md), out);
    out[64] = '\0';
    return 0;
}
