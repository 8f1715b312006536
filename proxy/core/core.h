/* internal: what the proxy's modules (proxy.c, membership.c, route.c, bucket.c, list.c,
 * s3.c) share. Not for use outside proxy/. Thread rules: fields above `mu` are set before
 * the HTTP server starts and read-only afterwards; the rest as commented. */
#ifndef HD_PROXY_INTERNAL_H
#define HD_PROXY_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <uv.h>

#include "common/http.h"
#include "common/keys.h"
#include "common/sigv4.h"
#include "common/smap.h"
#include "proxy/proxy.h"

#define HD_PROXY_MAGIC 0x70727831u /* "prx1" */

/* Intra-cluster call timeouts, milliseconds. Calls made from HTTP workers (listing and
 * bucket fan-out, forwarding to the primary) are bounded by HD_PROXY_FANOUT_MS. */
#define HD_PROXY_FANOUT_MS 30000
#define HD_PROXY_SYNC_MS 10000

struct hd_proxy_seen {
    char id[HD_NODE_ID_MAX];
    uint64_t last_ns; /* monotonic time of the last join or heartbeat */
};

struct hd_proxy {
    uint32_t magic;
    struct hd_node self;        /* our smap entry */
    char join[HD_NODE_URL_MAX]; /* cluster.join; "" on the primary */
    char *secret;               /* cluster.secret ("" = no checks) */
    char *data_dir;
    char *region;
    char *domain; /* s3.domain */
    int primary;  /* started as the primary (empty cluster.join) */
    long hb_ms;
    int dead_after;
    int s3_redirect;
    int native_redirect; /* native.redirect: 307 (default) or relay for /v1/objects */
    struct hd_keys keys;
    struct hd_smap_state *cs;     /* current smap/BMD (thread-safe) */
    struct hd_proxy_cloud *cloud; /* S3-backed buckets: default upstream (cloud.c) */

    pthread_mutex_t mu; /* primary: serialises smap/BMD changes; guards below */
    struct hd_proxy_seen *seen;
    size_t nseen;
    int64_t pushed_smap, pushed_bmd; /* versions every node was sent */

    struct hd_smap_member member; /* non-primary: loop thread only */
    atomic_int ready;             /* holds an smap (and, non-primary, joined) */

    /* the membership loop thread */
    uv_loop_t loop;
    uv_timer_t timer;
    uv_async_t wake;
    pthread_t thr;
    atomic_int running;
    atomic_int stopping;

    /* rebalance (primary) */
    atomic_int rb_pending;           /* the set of targets changed: start one */
    uint64_t rb_next_ns;             /* loop thread: next poll of the targets */
    char rb_started[HD_NODE_ID_MAX]; /* loop thread: the last rebalance id started */
    char rb_stopped[HD_NODE_ID_MAX]; /* loop thread: the last one found stopped on request */
};

/* proxy.c */
/* Who is asking and may they: SigV4 against auth.keys (anonymous when none are set, or
 * for reads of anonymous_read buckets), or the X-Hoard-Cluster header of another proxy
 * (trusted). bucket NULL means the service (ListBuckets). 0 signed or trusted (*a filled
 * when signed), 1 anonymous and allowed, negative: the error to answer with. */
int hd_proxy_auth(struct hd_req *r, struct hd_proxy *p, const char *bucket,
                  struct hd_sigv4_auth *a);
/* Admin calls (maintenance, decommission): the cluster header, or a key with rw on all
 * buckets; open when neither cluster.secret nor auth.keys is set. */
int hd_proxy_auth_admin(struct hd_req *r, struct hd_proxy *p);
void hd_proxy_resp_json(struct hd_req *r, int status, json_t *j); /* takes j */
/* 1 when bucket has the anonymous_read property (unsigned reads allowed). */
int hd_proxy_anonymous_read(struct hd_proxy *p, const char *bucket);
/* Error with an HTTP status outside the errors table (409 Conflict for stale metasync). */
void hd_proxy_resp_conflict(struct hd_req *r, const char *msg);

/* membership.c */
int hd_proxy_members_init(struct hd_proxy *p);
int hd_proxy_loop_start(struct hd_proxy *p);
void hd_proxy_loop_stop(struct hd_proxy *p);
/* /v1/cluster..., /v1/metasync */
void hd_proxy_cluster_handle(struct hd_req *r, struct hd_proxy *p);
/* Primary only, caller holds p->mu: installs b (version already bumped) and persists it. */
int hd_proxy_bmd_install(struct hd_proxy *p, struct hd_bmd *b);
/* Sends the current smap and BMD to every target now and waits (HTTP worker, bounded);
 * the loop thread then pushes them to the other proxies. */
void hd_proxy_sync_now(struct hd_proxy *p);
/* Calls the primary's `path` (absolute, with query) with the cluster header. Returns the
 * transport rc; *status and *out as hd_httpc_json. */
int hd_proxy_primary_call(struct hd_proxy *p, const char *method, const char *path,
                          const json_t *in, long *status, json_t **out);
/* Maps a native JSON error answer ({"code":"BucketNotEmpty",...}) back to a project code. */
int hd_proxy_err_from_json(long status, const json_t *j);

/* Primary, caller holds mu: installs and persists s (version already bumped). */
int hd_proxy_smap_install(struct hd_proxy *p, struct hd_smap *s);
/* Loop thread: pushes smap/BMD versions some node has not been sent yet. */
void hd_proxy_push_pending(struct hd_proxy *p);

/* fan.c */
/* One call per live target of s (flagged ones too when all): METHOD path (absolute, with
 * query) with the proxy's signature and an optional JSON body, all in parallel; returns when
 * all have finished (each call's rc/status tell how). 0 or -ENOMEM. Release with
 * hd_proxy_fan_cleanup. */
struct hd_proxy_fan {
    struct hd_httpc_call *calls;
    struct hd_proxy_sig *sigs;
    char (*urls)[HD_NODE_URL_MAX + 96];
    const struct hd_node **nodes;
    size_t n;
};
int hd_proxy_fan_out(struct hd_proxy *p, struct hd_smap *s, const char *method, const char *path,
                     const char *body, int all, long total_ms, struct hd_proxy_fan *f);
void hd_proxy_fan_cleanup(struct hd_proxy_fan *f);
/* A call's answer as JSON, NULL when it failed or is not JSON. */
json_t *hd_proxy_call_json(const struct hd_httpc_call *c);

/* capacity.c: GET /v1/cluster/capacity */
void hd_proxy_capacity_handle(struct hd_req *r, struct hd_proxy *p);

/* jobs.c */
/* /v1/jobs[/ID] */
void hd_proxy_jobs_handle(struct hd_req *r, struct hd_proxy *p);
/* POST /v1/cluster/rebalance (and POST /v1/jobs of kind rebalance): the primary marks the
 * smap with a new rebalance id at once, which its loop thread then starts (wake it) in place
 * of any marked before, and answers 202 {"status", "id"}. Other proxies forward to the
 * primary. HTTP worker. */
void hd_proxy_rebalance_reply(struct hd_req *r, struct hd_proxy *p);
/* Primary, caller holds mu, s is the next smap (version already bumped, not installed):
 * marks it with a new rebalance id, so the map that moves objects is the same version that
 * turns on get-from-neighbour everywhere (no window where a new owner misses an object
 * that has not moved yet), and asks the loop thread to start the job. */
void hd_proxy_rebalance_mark(struct hd_proxy *p, struct hd_smap *s);
/* Primary's loop thread: starts a requested rebalance, watches the one in progress. */
void hd_proxy_rebalance_tick(struct hd_proxy *p);
/* 1 when id left the cluster by decommission (it may not join again). */
int hd_proxy_decommissioned(struct hd_proxy *p, const char *id);
/* Starts job `id` on every live target of s (flagged ones too when all). 0, or a negative
 * code with msg filled after asking the targets that did start to stop again. Blocks on the
 * network. */
int hd_proxy_jobs_start_all(struct hd_proxy *p, struct hd_smap *s, const char *id, const char *kind,
                            const char *bucket, json_t *args, int all, char *msg, size_t msglen);

/* shard.c: a shard job request (POST /v1/jobs, kind "shard"), from the jobs body handler:
 * plans it on a thread of its own (listing, grouping, packing), writes the manifest object,
 * starts the job on every target and answers r (parked meanwhile). args is copied. */
void hd_proxy_shard_start(struct hd_req *r, struct hd_proxy *p, const char *id, const char *bucket,
                          json_t *args);

/* batch.c: GET|POST /v1/batch */
void hd_proxy_batch(struct hd_req *r, struct hd_proxy *p);

/* route.c */
void hd_proxy_route_object(struct hd_req *r, struct hd_proxy *p);
/* Answers r with 307 to the owner of bucket/key (decoded names), or 503. The Location (and
 * the proxy signature in it) carries `path`, the raw path the owner must see (NULL: r's):
 * a virtual-host S3 request is sent on path style, since the owner sees another Host. */
void hd_proxy_redirect(struct hd_req *r, struct hd_proxy *p, const char *bucket, const char *key,
                       const char *path);
/* Streams r to the owner of bucket/key and the answer back (common/relay.c), authorised
 * with the proxy's signature; the client's own headers (Host, SigV4) pass unchanged. */
/* vbucket: the bucket of a virtual-host request (the proxy's reading of Host), or NULL. The
 * target reads the request the same way: X-Hoard-Vhost names the bucket, covered by the
 * signature (made over the path-style path), whatever the target's own s3.domain says. */
void hd_proxy_relay(struct hd_req *r, struct hd_proxy *p, const char *bucket, const char *key,
                    const char *vbucket);
/* uname "provider/@#/bucket/object" for placement; *out malloc'd. */
int hd_proxy_uname(struct hd_proxy *p, const char *bucket, const char *key, char **out,
                   size_t *len);
/* Headers that authorise a proxy->target call (X-Hoard-Pid/Ptime/Psig). */
struct hd_proxy_sig {
    struct hd_kv kv[4];
    size_t n;
    char ptime[24];
    char psig[HD_SMAP_SIG_LEN];
};
void hd_proxy_sign(struct hd_proxy *p, const char *method, const char *url,
                   struct hd_proxy_sig *sig);

/* bucket.c */
void hd_proxy_buckets_handle(struct hd_req *r, struct hd_proxy *p);
/* BMD changes (the primary does them; others ask the primary). */
int hd_proxy_bucket_create(struct hd_proxy *p, const char *name, const char *provider);
/* As above with props (JSON text, already validated; NULL = none). */
int hd_proxy_bucket_create_props(struct hd_proxy *p, const char *name, const char *provider,
                                 const char *props);
int hd_proxy_bucket_destroy(struct hd_proxy *p, const char *name, char *msg, size_t msglen);
int hd_proxy_bucket_props(struct hd_proxy *p, const char *name, const char *json);
/* As above; msg says what is wrong with the props. */
int hd_proxy_bucket_props_msg(struct hd_proxy *p, const char *name, const char *json, char *msg,
                              size_t msglen);

/* list.c */
struct hd_plist_opts {
    const char *prefix;      /* NULL = none */
    const char *delimiter;   /* NULL or "" = none */
    const char *start_after; /* exclusive; NULL = from the start */
    size_t limit;            /* 1..10000 */
    int cached_only;         /* S3-backed buckets: only what the targets hold */
};
struct hd_plist_item {
    char *name;
    int is_prefix;
    uint64_t size;
    char etag[48];
    char mtime[32]; /* ISO 8601 with milliseconds, as targets send it */
    int cached;     /* S3-backed buckets: held by a target (-1: native bucket) */
};
struct hd_plist_res {
    struct hd_plist_item *items; /* sorted, unique */
    size_t n;
    int truncated;
    char *last; /* name of the last item (the next start key), NULL when empty */
};
/* Asks every live target for `limit` entries after start_after and merges. HD_EUNAVAIL (msg
 * says which target) when a target is down or does not answer; HD_ENOSUCHBUCKET. For an
 * S3-backed bucket (unless cached_only) the upstream is listed instead (proxy/cloud.c) and
 * each entry says whether it is cached. */
int hd_proxy_list(struct hd_proxy *p, const char *bucket, const struct hd_plist_opts *o,
                  struct hd_plist_res *res, char *msg, size_t msglen);
/* The targets' own objects only (what hd_proxy_list does for native buckets). */
int hd_proxy_list_local(struct hd_proxy *p, const char *bucket, const struct hd_plist_opts *o,
                        struct hd_plist_res *res, char *msg, size_t msglen);
void hd_proxy_list_cleanup(struct hd_plist_res *res);
/* Appends an item (e: a target's JSON entry with size/etag/mtime, or NULL for a prefix). */
int hd_proxy_list_push(struct hd_plist_res *res, size_t *cap, const char *name, int is_prefix,
                       const json_t *e);
/* Native GET /v1/buckets/B?prefix&delimiter&limit&token */
void hd_proxy_list_native(struct hd_req *r, struct hd_proxy *p, const char *bucket);
/* 0 when no target holds an object of bucket, HD_EBUCKETNOTEMPTY, HD_EUNAVAIL. */
int hd_proxy_bucket_empty(struct hd_proxy *p, const char *bucket, char *msg, size_t msglen);

/* cloud.c: S3-backed buckets */
struct hd_proxy_cloud;
int hd_proxy_cloud_new(const struct hd_config *cfg, struct hd_proxy_cloud **out);
void hd_proxy_cloud_free(struct hd_proxy_cloud *c);
/* 1 when bucket is S3-backed (provider aws) in the current BMD. */
int hd_proxy_bucket_cloud(struct hd_proxy *p, const char *bucket);
/* One page of the upstream listing through the designated target, marked cached or not. */
int hd_proxy_list_cloud(struct hd_proxy *p, const char *bucket, const struct hd_plist_opts *o,
                        struct hd_plist_res *res, char *msg, size_t msglen);
/* Props for a new bucket of provider (validated; an aws bucket without an upstream gets the
 * default upstream of the config). *out: canonical JSON or NULL; HD_EBADARG with msg. */
int hd_proxy_cloud_props(struct hd_proxy *p, const char *provider, const char *body, char **out,
                         char *msg, size_t msglen);
/* With upstream.endpoint set: a bucket unknown to the BMD that exists at the default
 * upstream is registered as S3-backed (answers cached for a while). No-op otherwise. */
void hd_proxy_autoreg(struct hd_proxy *p, const char *bucket);

#endif
