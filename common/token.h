/* token: bearer tokens, the way AIStore's AuthN hands them out: HS256 JSON Web Tokens
 *
 *   base64url({"alg":"HS256","typ":"JWT"}) "." base64url(claims) "." base64url(HMAC-SHA256)
 *
 * with claims {"username": ACCESS_KEY, "sub": ACCESS_KEY, "iat": unix, "exp": unix,
 * "iss": "hoard", "jti": 16 random hex digits (so every token differs and can be revoked
 * alone)}. The HMAC key is derived from the cluster secret (common/kdf.h, label
 * "hoard token key", id ""), never the secret itself; during a secret rotation (a
 * comma-separated list, common/nodeauth.h) the first secret signs and any verifies, so tokens
 * issued before the rotation keep working until they expire. A token says who the caller is;
 * what that key may do is still auth.keys' business (common/keys.h). Thread-safe. */
#ifndef HD_TOKEN_H
#define HD_TOKEN_H

#include <stddef.h>
#include <time.h>

#define HD_TOKEN_MAX 1024         /* a token, NUL included */
#define HD_TOKEN_TTL_DEFAULT 3600 /* seconds */
#define HD_TOKEN_TTL_MAX 86400    /* seconds: longer requests are capped */

/* Issues a token for access (1..128 bytes, no NUL) valid from now for ttl seconds (capped to
 * 1..HD_TOKEN_TTL_MAX). secrets: the cluster.secret value ("" = no tokens: -EINVAL).
 * 0, -EINVAL, -ENOSPC (out too small), -ENOMEM, -EIO. */
int hd_token_issue(const char *secrets, const char *access, long ttl, time_t now, char *out,
                   size_t outlen);

/* Verifies token: the header is HS256, the MAC matches a key of one of the secrets, the
 * claims parse, exp is after now (and iat not more than 5 minutes ahead). 0 with access
 * copied (accmax bytes, NUL included) and *exp set, or HD_EACCESS (why: a static reason)
 * / HD_EEXPIRED. */
int hd_token_verify(const char *secrets, const char *token, time_t now, char *access, size_t accmax,
                    time_t *exp, const char **why);

/* A token's id for revocation lists: the SHA-256 of the whole token, 64 hex digits and NUL.
 * 0 or -ENOMEM. */
int hd_token_id(const char *token, char out[65]);

#endif
