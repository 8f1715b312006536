/* sigv4: AWS Signature Version 4 as S3 uses it: verifying requests (server side), signing
 * them (upstream S3 client), and the aws-chunked chunk/trailer signatures. Stateless: any
 * thread; the secret lookup callback runs on the caller's thread.
 *
 * S3 rules, which differ from other AWS services: the path is never normalised (no "." /
 * ".." / "//" folding) and is encoded once, not twice. The canonical URI is the raw path
 * with each byte re-encoded (decode %XX, then encode everything except A-Za-z0-9-._~ and a
 * literal '/'; an encoded %2F stays %2F). The canonical query sorts the re-encoded
 * key=value pairs by key then value; '+' is a literal plus, not a space. Canonical header
 * values are trimmed, inner runs of blanks fold to one space, and repeated headers join
 * with ',' in arrival order. */
#ifndef HD_SIGV4_H
#define HD_SIGV4_H

#include <stddef.h>
#include <time.h>

struct hd_buf;

#ifndef HD_KV_DEFINED
#define HD_KV_DEFINED
struct hd_kv {
    const char *k;
    const char *v;
};
#endif

#define HD_SIGV4_AK_MAX 129         /* access key id, 1..128 chars, plus NUL */
#define HD_SIGV4_PART_MAX 64        /* region or service name, plus NUL */
#define HD_SIGV4_SCOPE_MAX 160      /* date/region/service/aws4_request, plus NUL */
#define HD_SIGV4_SECRET_MAX 256     /* buffer handed to the secret lookup */
#define HD_SIGV4_MAX_EXPIRES 604800 /* presigned URLs live at most 7 days */
#define HD_SIGV4_MAX_SKEW 900       /* header-signed requests: 15 minutes either way */

/* What x-amz-content-sha256 says about the body. */
enum hd_payload {
    HD_PL_HEX,                       /* the body's SHA-256 (payload_sha256) */
    HD_PL_UNSIGNED,                  /* UNSIGNED-PAYLOAD */
    HD_PL_STREAMING_SIGNED,          /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD */
    HD_PL_STREAMING_SIGNED_TRAILER,  /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER */
    HD_PL_STREAMING_UNSIGNED_TRAILER /* STREAMING-UNSIGNED-PAYLOAD-TRAILER */
};

/* A request as received. Strings are borrowed for the duration of the call. */
struct hd_sigv4_in {
    const char *method;
    const char *path;            /* raw, still percent-encoded as on the wire, no query */
    const char *query;           /* raw, without '?'; NULL or "" for none */
    const struct hd_kv *headers; /* arrival order, names in any case, duplicates allowed */
    size_t nheaders;
    time_t now;
};

/* The verified identity and what the body must satisfy. Filled by hd_sigv4_verify (and by
 * hd_sigv4_sign for a client that streams aws-chunked). */
struct hd_sigv4_auth {
    char access_key[HD_SIGV4_AK_MAX];
    char region[HD_SIGV4_PART_MAX];
    char service[HD_SIGV4_PART_MAX];
    char scope[HD_SIGV4_SCOPE_MAX]; /* YYYYMMDD/region/service/aws4_request */
    char amz_date[17];              /* YYYYMMDDTHHMMSSZ */
    time_t date;                    /* amz_date as a time */
    unsigned char signing_key[32];  /* HMAC chain result; keys the chunk signatures */
    char signature[65];             /* request signature: seed of the chunk chain */
    enum hd_payload payload;
    unsigned char payload_sha256[32]; /* HD_PL_HEX only */
    int presigned;
    int anonymous; /* set by the callers that verify: no credentials were sent (or none are
                    * checked: auth off) */
    /* presigned (also set when the answer is HD_EEXPIRED / HD_ENOTYET, for the error body):
     * X-Amz-Expires (SigV4; 0 for SigV2, whose Expires is an instant) and when it ends */
    long expires_in;
    time_t expires_at;
};

/* Looks up the secret for access_key, NUL-terminated into secret (secret_max bytes).
 * Returns 0, HD_ENOACCESSKEY for an unknown key, or another negative code to abort. */
typedef int (*hd_sigv4_secret_fn)(void *ctx, const char *access_key, char *secret,
                                  size_t secret_max);

/* Verifies a SigV4 request signed either with an Authorization header or presigned in the
 * query (X-Amz-Algorithm ...). Returns:
 *   0                  verified; *out filled
 *   HD_DECLINED        no SigV4 auth at all (anonymous): the caller decides. One empty or
 *                      blank Authorization header counts as none (AWS, MinIO)
 *   HD_EAUTHHDR        malformed Authorization / date headers (X-Amz-Date, else Date in any
 *                      form hd_date_parse reads), or SigV2
 *   HD_EAUTHQUERY      malformed presigned parameters (credential, date, algorithm ...)
 *   HD_EEXPIRESNAN     X-Amz-Expires is not a number
 *   HD_EEXPIRESNEG     X-Amz-Expires is negative
 *   HD_EEXPIRESMAX     X-Amz-Expires is over 604800 (a week)
 *   HD_EBADARG         both an Authorization header and presigned parameters
 *   HD_EBADHEADER      x-amz-content-sha256 is none of the known forms
 *   HD_ESKEW           header-signed and more than 15 minutes away from now
 *   HD_EEXPIRED        presigned and now > X-Amz-Date + X-Amz-Expires, or X-Amz-Expires=0
 *   HD_ENOTYET         presigned and dated more than 15 minutes in the future
 *   HD_ENOACCESSKEY    secret_for does not know the key (or its own error code)
 *   HD_EBADSIG         signature mismatch
 *   -ENOMEM
 * Region and service are taken from the credential scope as sent; checking them is the
 * caller's business. out->access_key is set as soon as it is parsed (for error messages). */
int hd_sigv4_verify(const struct hd_sigv4_in *in, hd_sigv4_secret_fn secret_for, void *ctx,
                    struct hd_sigv4_auth *out);

/* Chunk signature of aws-chunked streaming: HMAC(signing_key, "AWS4-HMAC-SHA256-PAYLOAD\n"
 * date "\n" scope "\n" prev_sig "\n" sha256("") "\n" hex(chunk_sha256)). prev_sig is the
 * seed (a->signature) for the first chunk. out gets 64 lowercase hex chars + NUL. */
void hd_sigv4_chunk_sig(const struct hd_sigv4_auth *a, const char prev_sig[65],
                        const unsigned char chunk_sha256[32], char out[65]);
/* Trailer signature: "AWS4-HMAC-SHA256-TRAILER\n" date "\n" scope "\n" prev_sig "\n"
 * hex(trailer_sha256), where trailer_sha256 hashes the trailer lines as "name:value\n"
 * each, and prev_sig is the signature of the final (empty) chunk. */
void hd_sigv4_trailer_sig(const struct hd_sigv4_auth *a, const char prev_sig[65],
                          const unsigned char trailer_sha256[32], char out[65]);

/* ---- signing (client side) ---- */

struct hd_sigv4_sign_in {
    const char *method;
    const char *path;            /* as it will be sent (percent-encoded) */
    const char *query;           /* as it will be sent, without '?'; NULL or "" */
    const struct hd_kv *headers; /* every one is signed; must include host; header signing
                                  * also needs x-amz-date (= amz_date) among them */
    size_t nheaders;
    const char *access_key;
    const char *secret;
    const char *region;
    const char *service;
    const char *amz_date; /* YYYYMMDDTHHMMSSZ, see hd_sigv4_amz_date */
    /* Payload line of the canonical request. NULL: header signing uses the
     * x-amz-content-sha256 header if present, else sha256(""); presigning uses
     * UNSIGNED-PAYLOAD. */
    const char *payload_hash;
    const char *security_token; /* presign only: adds X-Amz-Security-Token (may be NULL);
                                 * header signing: send it as a signed header yourself */
    unsigned long expires;      /* presign only: 1..604800 */
};

/* Appends the Authorization header value to authz_out. auth_out (may be NULL) gets the
 * signing key, scope and signature, ready for hd_sigv4_chunk_sig. HD_EBADARG on bad input
 * (no host header, bad date, header names that cannot be signed), -ENOMEM. */
int hd_sigv4_sign(const struct hd_sigv4_sign_in *in, struct hd_buf *authz_out,
                  struct hd_sigv4_auth *auth_out);
/* Appends the complete presigned query string (the original query, then the X-Amz-*
 * parameters ending with X-Amz-Signature), without '?'. Same errors as hd_sigv4_sign. */
int hd_sigv4_presign(const struct hd_sigv4_sign_in *in, struct hd_buf *query_out);

/* Formats t as YYYYMMDDTHHMMSSZ (UTC). */
void hd_sigv4_amz_date(time_t t, char out[17]);

/* ---- building blocks, exposed for tests and for callers that sign by hand ---- */

struct hd_sigv4_creq {
    const char *method;
    const char *path;
    const char *query;
    const struct hd_kv *headers;
    size_t nheaders;
    const char *signed_headers; /* "host;x-amz-date", lowercase, in the order given */
    const char *payload_hash;
    int presigned; /* leave X-Amz-Signature out of the canonical query */
};

/* Appends the canonical request to out. -ENOMEM only. */
int hd_sigv4_canonical_request(const struct hd_sigv4_creq *c, struct hd_buf *out);
/* Appends "AWS4-HMAC-SHA256\n" amz_date "\n" scope "\n" hex(sha256(creq)). */
int hd_sigv4_string_to_sign(const char *amz_date, const char *scope, const char *creq,
                            size_t creq_len, struct hd_buf *out);
/* HMAC chain "AWS4"+secret -> date8 -> region -> service -> "aws4_request". */
void hd_sigv4_signing_key(const char *secret, const char *date8, const char *region,
                          const char *service, unsigned char out[32]);

#endif
