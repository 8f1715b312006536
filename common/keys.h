/* keys: the access keys of auth.keys (ACCESS:SECRET[:rw|ro|B=ro;B=rw][,...]) and their
 * per-bucket permissions, shared by proxies and targets. Parsed once at startup; read-only
 * afterwards, so any thread may query. */
#ifndef HD_KEYS_H
#define HD_KEYS_H

#include <stddef.h>

#include <jansson.h>

enum hd_perm { HD_PERM_NONE, HD_PERM_RO, HD_PERM_RW };

struct hd_key_rule {
    char *bucket;
    enum hd_perm perm;
};

/* Rights to all buckets (`all`) unless a per-bucket rule names the bucket. */
struct hd_key {
    char *access;
    char *secret;
    enum hd_perm all;
    struct hd_key_rule *rules;
    size_t nrules;
};

struct hd_keys {
    struct hd_key *v;
    size_t n;
};

/* -EINVAL for a malformed spec (what is parsed so far stays in ks: clean it up). */
int hd_keys_parse(struct hd_keys *ks, const char *spec);
void hd_keys_cleanup(struct hd_keys *ks);
const struct hd_key *hd_keys_find(const struct hd_keys *ks, const char *access);
/* 0 when k may read (write=0) or write bucket, else HD_EACCESS. */
int hd_key_allows(const struct hd_key *k, const char *bucket, int write);
/* hd_sigv4_secret_fn over a struct hd_keys (ctx). */
int hd_keys_secret_for(void *ctx, const char *access, char *secret, size_t max);

/* Verifies r's SigV2 or SigV4 signature (header or presigned) against ks: 0 with *a filled
 * (a->anonymous 0), HD_DECLINED when r carries no credentials (*a zeroed, a->anonymous set),
 * or the error to answer with (counted as a failed authentication and logged with r's id). */
struct hd_req;
struct hd_sigv4_auth;
int hd_keys_verify(const struct hd_keys *ks, const struct hd_req *r, struct hd_sigv4_auth *a);
/* "Authorization: Bearer T" (AIStore AuthN style, common/token.h) verified against the
 * cluster secrets: 0 with a filled (access_key, not anonymous, payload unsigned: a token
 * covers the request, not its body, as TLS does) and r->principal "token KEY";
 * HD_DECLINED when r carries no bearer token; HD_ETOKEN (401, with WWW-Authenticate: Bearer
 * error="invalid_token" added to r's answer) for a bad or expired one, counted and logged
 * with the reason. revoked(arg, id) (may be NULL) says whether the token with that id
 * (hd_token_id) was revoked (DELETE /v1/tokens): such a token is refused the same way.
 * Proxies and targets share it. */
typedef int (*hd_token_revoked_fn)(void *arg, const char *id);
int hd_keys_bearer(const char *secrets, hd_token_revoked_fn revoked, void *arg, struct hd_req *r,
                   struct hd_sigv4_auth *a);
/* 1 when a request its route classified as pub (enum hd_pub, common/http.h) may be let
 * through unsigned by a bucket whose objects and listings are public as said (common/bprops.h
 * hd_bprops_access: anonymous_read, anonymous_list, a bucket policy; list is its
 * HD_PUBLIC_LIST* bits, and HD_PUB_LIST_MORE needs HD_PUBLIC_LIST_MORE). Settings (ACL, tags,
 * CORS, policy, props, summaries) are never HD_PUB_*: AWS's READ grant covers no more. */
int hd_keys_public(int pub, int objects, int list);
/* What a native /v1/objects/B/O request is to an unsigned caller: HD_PUB_READ for a GET or
 * HEAD of the object, HD_PUB_NONE for the rest (writes, and the multipart calls that ?uploadId
 * and ?partNumber name). Proxies authorise by it; targets also route by it. */
int hd_keys_native_object_pub(const struct hd_req *r);
/* Whether bucket's policy refuses requests without TLS (the role's view of it). */
typedef int (*hd_tls_only_fn)(void *arg, const char *bucket);
/* A request that did not come over TLS, to bucket or copying from a bucket whose policy is
 * TLS only, is refused (counted as a failed authentication): HD_EACCESS, else 0. The calls
 * on the policy itself (r->policy_call) are left to hd_keys_tls_policy_call. */
int hd_keys_tls_check(const struct hd_req *r, const char *bucket, hd_tls_only_fn tls_only,
                      void *arg);
/* A call on the policy itself (r->policy_call) without TLS to a TLS-only bucket, by the
 * verified caller a: let through for an admin key (rights on every bucket), so that a cluster
 * without TLS can undo the policy, as AWS lets the root user past its Deny; HD_EACCESS for
 * any other caller. 0 for every other request. */
int hd_keys_tls_policy_call(const struct hd_keys *ks, const struct hd_req *r,
                            const struct hd_sigv4_auth *a, const char *bucket,
                            hd_tls_only_fn tls_only, void *arg);
/* The same for a job request (POST /v1/jobs): its bucket and the buckets its args name
 * ("to" of a copy, "output_bucket" of a shard job). */
int hd_keys_tls_check_job(const struct hd_req *r, const char *bucket, const json_t *args,
                          hd_tls_only_fn tls_only, void *arg);
/* Whether bucket lets anyone do what r->pub names (the role's hd_keys_public over its own
 * view of the bucket's properties), to object key (r->pub_key; NULL: any object) for a read. */
typedef int (*hd_public_fn)(void *arg, const char *bucket, const char *key, int pub);
/* Whether the verified caller a may do r's method to bucket (NULL: the service, e.g.
 * ListBuckets: any known key), and read a CopyObject's source (x-amz-copy-source, decoded
 * and validated the way the copy will read it): 0, HD_ENOACCESSKEY, HD_EACCESS (counted as a
 * failed authentication) or the source's parse error. A key without access to bucket may still
 * do what the bucket lets everyone do (open, when not NULL, says), as an unsigned caller
 * could: a bucket policy's "everyone" includes every key (r->public_grant is then set). The
 * same holds for the source: a public object may be copied by any key (r->public_source). */
int hd_keys_authorize(const struct hd_keys *ks, struct hd_req *r,
                      const struct hd_sigv4_auth *a, const char *bucket, hd_public_fn open,
                      void *arg);

#endif
