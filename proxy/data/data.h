/* data: the proxy's data path. An object request goes to its owner, by a 307 or through the
 * relay (route.c); listings are merged from the targets' pages, or for an S3-backed bucket
 * the upstream's page marked cached or not (list.c). On core/ only. HTTP workers; the
 * listing calls block for a bounded time (see docs/architecture.md). */
#ifndef HD_PROXY_DATA_H
#define HD_PROXY_DATA_H

#include "proxy/core/core.h"

/* ---- route.c ---- */

/* Answers r with 307 to the owner of bucket/key (decoded names), or 503. The Location (and
 * the proxy signature in it) carries `path`, the raw path the owner must see (NULL: r's):
 * a virtual-host S3 request is sent on path style, since the owner sees another Host. */
void hd_proxy_redirect(struct hd_req *r, struct hd_proxy *p, const char *bucket, const char *key,
                       const char *path);
/* Answers r with 307 to base (a target's public URL) + path?query&pid=..., signed for the
 * target `owner` over r's method and path (the redirect capability a target checks), and
 * over smapv (NULL: none), the map version that chose the owner, sent as psv. */
void hd_proxy_redirect_to(struct hd_req *r, struct hd_proxy *p, const char *base, const char *owner,
                          const char *smapv, const char *path, const char *query);
/* A copy the proxy authorised (AIStore's Object.copy()): 307 to the owner of bucket/key (the
 * destination) on path?query, with the redirect capability bound to copy_src, the source
 * "/BUCKET/KEY" (percent-encoded) the target will read (sent in query as object_from: only
 * this signature vouches for it). */
void hd_proxy_redirect_copy(struct hd_req *r, struct hd_proxy *p, const char *bucket,
                            const char *key, const char *path, const char *query,
                            const char *copy_src);
/* Streams r to the owner of bucket/key and the answer back (common/relay.c), authorised
 * with the proxy's signature; the client's own headers (Host, SigV4) pass unchanged.
 * vbucket: the bucket of a virtual-host request (the proxy's reading of Host), or NULL. The
 * target reads the request the same way: X-Hoard-Vhost names the bucket, covered by the
 * signature (made over the path-style path), whatever the target's own s3.domain says. */
void hd_proxy_relay(struct hd_req *r, struct hd_proxy *p, const char *bucket, const char *key,
                    const char *vbucket);

/* hd_proxy_relay to path?query instead of r's own (both signed with the rest). */
void hd_proxy_relay_path(struct hd_req *r, struct hd_proxy *p, const char *bucket, const char *key,
                         const char *path, const char *query);

/* The most headers a filtered relay sends of its own. */
#define HD_PROXY_RELAY_HDRS 48
/* A PUT of bucket/key (decoded) to its owner, with headers h[0..nh) only and the body the
 * filter makes of r's (common/relay.h: POST Object's file). 0: started, arg is the relay's
 * now; or the code to answer with and msg (nothing answered, arg still the caller's). */
struct hd_relay_filter;
int hd_proxy_relay_filtered(struct hd_req *r, struct hd_proxy *p, const char *bucket,
                            const char *key, const struct hd_kv *h, size_t nh,
                            const struct hd_relay_filter *f, void *arg, const char *first,
                            size_t nfirst, char *msg, size_t msglen);

/* ---- list.c ---- */

struct hd_plist_opts {
    const char *prefix;      /* NULL = none */
    const char *delimiter;   /* NULL or "" = none */
    const char *start_after; /* exclusive; NULL = from the start */
    size_t limit;            /* 1..10000 */
    int cached_only;         /* S3-backed buckets: only what the targets hold */
    int cached_fallback;     /* S3-backed buckets: the cached objects when the upstream fails */
};
struct hd_plist_item {
    char *name;
    int is_prefix;
    uint64_t size;
    char etag[48];
    char mtime[32];  /* ISO 8601 with milliseconds, as targets send it */
    char sclass[24]; /* storage class when not STANDARD, else "" */
    int cached;      /* S3-backed buckets: held by a target (-1: native bucket) */
};
struct hd_plist_res {
    struct hd_plist_item *items; /* sorted, unique */
    size_t n;
    int truncated;
    char *last;          /* name of the last item (the next start key), NULL when empty */
    int upstream_failed; /* cached_fallback: the upstream did not answer; cached objects only */
};
/* The Warning header of a listing with upstream_failed (RFC 7234 code 199: miscellaneous). */
#define HD_PLIST_WARNING "199 hoard \"upstream unavailable; listing cached objects only\""
/* Asks every live target for `limit` entries after start_after and merges. HD_EUNAVAIL (msg
 * says which target) when a target is down or does not answer; HD_ENOSUCHBUCKET. For an
 * S3-backed bucket (unless cached_only) the upstream is listed instead, through one
 * designated target, and each entry says whether it is cached. */
int hd_proxy_list(struct hd_proxy *p, const char *bucket, const struct hd_plist_opts *o,
                  struct hd_plist_res *res, char *msg, size_t msglen);
/* The targets' own objects only (what hd_proxy_list does for native buckets). */
int hd_proxy_list_local(struct hd_proxy *p, const char *bucket, const struct hd_plist_opts *o,
                        struct hd_plist_res *res, char *msg, size_t msglen);
void hd_proxy_list_cleanup(struct hd_plist_res *res);
/* Appends an item (e: a target's JSON entry with size/etag/mtime, or NULL for a prefix). */
int hd_proxy_list_push(struct hd_plist_res *res, size_t *cap, const char *name, int is_prefix,
                       const json_t *e);
/* One page of the upstream listing of S3-backed bucket, through the designated target,
 * each entry marked cached or not. */
int hd_proxy_list_cloud(struct hd_proxy *p, const char *bucket, const struct hd_plist_opts *o,
                        struct hd_plist_res *res, char *msg, size_t msglen);
/* A continuation token (base64 of the last name, no NUL) decoded into raw (max bytes, NUL
 * added): 0 or HD_EBADTOKEN. */
int hd_proxy_list_token(const char *tok, unsigned char *raw, size_t max);
/* Native GET /v1/buckets/B?prefix&delimiter&limit&token */
void hd_proxy_list_native(struct hd_req *r, struct hd_proxy *p, const char *bucket);
/* 0 when no target holds an object of bucket, HD_EBUCKETNOTEMPTY, HD_EUNAVAIL. */
int hd_proxy_bucket_empty(struct hd_proxy *p, const char *bucket, char *msg, size_t msglen);

#endif
