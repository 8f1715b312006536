/* bprops: bucket properties as kept in the BMD (and in a target's node.db): parsing with
 * validation, canonical JSON, and merging a PATCH. Shared by proxies (which validate what a
 * client asks for) and targets (which act on it). Pure functions; any thread.
 *
 *   {"anonymous_read": bool,              unsigned reads of the objects and listings
 *    "anonymous_list": bool,              unsigned listings only (S3's public-read bucket ACL)
 *    "validate_warm_get": bool,            S3-backed buckets: HEAD upstream on every warm GET
 *    "validate_cold_get": bool,            S3-backed buckets: a cold GET checks the bytes
 *                                          against a plain-MD5 ETag (default true; false:
 *                                          size only, which saves a full MD5 pass)
 *    "write_policy": "through" | "back",   S3-backed buckets: PUT/DELETE reach the upstream
 *                                          before the answer (default), or after it from a
 *                                          durable queue on the owning target (write-back)
 *    "upstream": {"endpoint": "http://host:port", "region": "us-east-1",
 *                 "style": "path" | "virtual", "profile": "NAME", "bucket": "NAME"},
 *    "cors": [RULE, ...],                  S3 PutBucketCors (common/cors.h)
 *    "tags": {"key": "value", ...},        S3 PutBucketTagging (common/tagging.h)
 *    "lifecycle": [RULE, ...],             S3 PutBucketLifecycleConfiguration (common/
 *                                          lifecycle.h); hoard's own buckets only
 *    "policy": "{...}",                    S3 PutBucketPolicy: the document as sent
 *                                          (common/policy.h)
 *    "public_access_block": {...}}         S3 PutPublicAccessBlock (common/policy.h)
 *
 * "write_policy" "back" is for S3-backed buckets only: the proxy checks it with the provider.
 * "upstream" names where an S3-backed (provider "aws") bucket's objects come from. It never
 * holds credentials: "profile" names a credential set that each node resolves locally
 * (target/cache.c), so secrets are neither in the BMD nor in any log. */
#ifndef HD_BPROPS_H
#define HD_BPROPS_H

#include <stddef.h>

#include <jansson.h>

#define HD_UPSTREAM_URL_MAX 256
#define HD_UPSTREAM_NAME_MAX 64

struct hd_upstream {
    char endpoint[HD_UPSTREAM_URL_MAX]; /* scheme://host[:port], no trailing '/' */
    char region[HD_UPSTREAM_NAME_MAX];
    int vhost;                          /* virtual-host style (BUCKET.host) */
    char profile[HD_UPSTREAM_NAME_MAX]; /* credential profile; "" or "anonymous": unsigned */
    char bucket[HD_UPSTREAM_NAME_MAX];  /* upstream bucket name; "" = the hoard bucket's */
};

struct hd_bprops {
    int anonymous_read;
    int anonymous_list;
    int validate_warm_get;
    int cold_get_unchecked; /* "validate_cold_get": false */
    int write_back;         /* "write_policy": "back" */
    int has_upstream;
    struct hd_upstream up;
    int has_cors;      /* "cors" (its rules stay in the JSON: hd_bprops_dump_from) */
    int has_tags;      /* "tags" (the same) */
    int has_lifecycle; /* "lifecycle" (the same) */
    int has_policy;    /* "policy" (the same) */
    int has_pab;       /* "public_access_block" (the same) */
};

/* Parses and validates props JSON (NULL or "" = {}). Unknown keys, wrong types, a bad
 * endpoint URL (http/https, host, optional port, nothing else) or style are HD_EBADARG with
 * a one-line reason in err. */
int hd_bprops_parse(const char *json, struct hd_bprops *out, char *err, size_t errlen);
/* Canonical compact JSON (sorted keys, defaults left out); malloc'd, NULL on OOM. Without
 * "cors", "tags" and "lifecycle": hd_bprops_dump_from carries them over from the JSON p was
 * parsed from. */
char *hd_bprops_dump(const struct hd_bprops *p);
char *hd_bprops_dump_from(const struct hd_bprops *p, const char *src);
/* cur (NULL = {}) with the keys of patch replaced (a key set to null is removed); the
 * result is validated. *out is canonical JSON (malloc'd). HD_EBADARG with err filled. */
int hd_bprops_merge(const char *cur, const char *patch, char **out, char *err, size_t errlen);
/* What bucket's properties (a parsed props object, NULL = {}) decide about access, read with
 * one parse of its policy where the props are kept (a proxy's BMD entry, a target's bucket
 * array):
 *   objects: unsigned reads: HD_PUBLIC_OBJECTS (anonymous_read, or a policy's s3:GetObject on
 *            every object), HD_PUBLIC_OBJECTS_SOME (a policy's on some: keys), or 0;
 *   list:    HD_PUBLIC_LIST (ListObjects, HeadBucket: any of anonymous_read, anonymous_list,
 *            a policy's s3:ListBucket) and HD_PUBLIC_LIST_MORE (the version and upload
 *            listings: the first two, AWS's READ grant, not a policy's s3:ListBucket);
 *   tls_only: the policy refuses requests without TLS (AWS's "TLS only" Deny);
 *   keys:    for HD_PUBLIC_OBJECTS_SOME, the policy's keys and prefixes (common/policy.h
 *            hd_policy_patterns_match; a new reference, NULL otherwise).
 * Block Public Access: ignore_public_acls takes anonymous_read and anonymous_list out,
 * restrict_public_buckets the policy's grants (not its TLS-only Deny). */
#define HD_PUBLIC_OBJECTS 1
#define HD_PUBLIC_OBJECTS_SOME 2
#define HD_PUBLIC_LIST 1
#define HD_PUBLIC_LIST_MORE 2
struct hd_bprops_access {
    int objects, list, tls_only;
    json_t *keys;
};
void hd_bprops_access(const char *bucket, const json_t *props, struct hd_bprops_access *out);
/* The upstream bucket name for hoard bucket `name`. */
const char *hd_bprops_remote_bucket(const struct hd_bprops *p, const char *name);

#endif
