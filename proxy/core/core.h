/* core: the bottom of the proxy. The proxy's one object (struct hd_proxy: settings, the held
 * smap and BMD, the membership loop's handles), who may ask (auth.c), and how a proxy calls
 * other nodes (calls.c: signatures, placement, fan-out to targets, calls to the primary,
 * jobs posted to every target). Every other proxy folder sits on this one.
 *
 * Thread rules: fields above `mu` are set before the HTTP server starts and read-only
 * afterwards; the rest as commented. Calls that block on the network say so; they are
 * bounded (HD_PROXY_FANOUT_MS) and run on HTTP workers or the loop thread. */
#ifndef HD_PROXY_CORE_H
#define HD_PROXY_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <jansson.h>

#include "common/config.h"
#include "common/http.h"
#include "common/httpc.h"
#include "common/keys.h"
#include "common/pool.h"
#include "common/relay.h"
#include "common/sigv4.h"
#include "common/smap.h"
#include "common/ticker.h"

#define HD_PROXY_MAGIC 0x70727831u /* "prx1" */

/* Intra-cluster call timeouts, milliseconds. Calls made from HTTP workers (listing and
 * bucket fan-out, forwarding to the primary) are bounded by HD_PROXY_FANOUT_MS. */
#define HD_PROXY_FANOUT_MS 30000
#define HD_PROXY_SYNC_MS 10000

struct hd_proxy_seen {
    char id[HD_NODE_ID_MAX];
    uint64_t last_ns; /* monotonic time of the last join or heartbeat */
};

/* A voter's last lease grant to this primary (cluster/elect.c). */
struct hd_proxy_grant {
    char id[HD_NODE_ID_MAX];
    uint64_t sent_ns; /* when the lease request it answered was sent (monotonic) */
};

struct hd_proxy_cloud;

struct hd_proxy {
    uint32_t magic;
    struct hd_node self;        /* our smap entry */
    char join[HD_NODE_URL_MAX]; /* cluster.join; "" on the primary */
    char *secret;               /* cluster.secret ("" = no checks) */
    struct hd_nodeauth *na;     /* this proxy's node signatures (common/nodeauth.h) */
    char *data_dir;
    char *region;
    char *domain;       /* s3.domain */
    atomic_int primary; /* the primary of the current term (core/role.c) */
    long hb_ms;
    int dead_after;
    int s3_redirect;
    int native_redirect; /* native.redirect: 307 (default) or relay for /v1/objects */
    struct hd_keys keys;
    struct hd_smap_state *cs;     /* current smap/BMD (thread-safe) */
    struct hd_proxy_cloud *cloud; /* S3-backed buckets: default upstream (cluster/upstream.c) */
    struct hd_pool *pool;         /* blocking lookups off the HTTP workers */
    struct hd_relay *relay;       /* the S3 relay (common/relay.h) */

    pthread_mutex_t mu; /* primary: serialises smap/BMD changes; guards below */
    struct hd_proxy_seen *seen;
    size_t nseen;
    int64_t pushed_smap, pushed_bmd; /* versions every node was sent */

    struct hd_smap_member member; /* non-primary: loop thread only */
    atomic_int ready;             /* holds an smap (and, non-primary, joined) */

    struct hd_ticker ticker; /* the membership loop thread (cluster/membership.c) */
    /* the lease thread (cluster/elect.c): the primary's lease renewal only, so that no
     * fan-out of the loop thread (metasync, rebalance, failure probes) can delay it */
    struct hd_ticker lease_ticker;
    long loop_stall_ms; /* cluster.loop_stall_ms: a stuck loop thread gives the lease up */
    int loop_stuck;     /* lease thread: the loop thread was found stuck */

    /* primary election (core/role.c, cluster/elect.c, docs/cluster.md) */
    long lease_ms;                   /* L = hb_ms * dead_after */
    uint64_t boot_ns;                /* no votes before boot_ns + L (a forgotten promise) */
    pthread_mutex_t term_mu;         /* term and voted_for, persisted together */
    _Atomic int64_t term;            /* written under term_mu */
    char voted_for[HD_NODE_ID_MAX];  /* in term; under term_mu */
    _Atomic uint64_t heard_ns;       /* follower: the last lease it granted */
    _Atomic uint64_t lease_until_ns; /* primary: holds the lease until then */
    uint64_t elect_heard_ns;         /* loop thread: heard_ns the timeout was drawn for */
    uint64_t elect_wait_ns;          /* loop thread: the election timeout drawn */
    pthread_mutex_t grant_mu;        /* grants */
    struct hd_proxy_grant *grants;
    size_t ngrants;

    /* rebalance (primary; cluster/rebalance.c) */
    atomic_int rb_pending;           /* the set of targets changed: start one */
    uint64_t rb_next_ns;             /* loop thread: next poll of the targets */
    char rb_started[HD_NODE_ID_MAX]; /* loop thread: the last rebalance id started */
    char rb_stopped[HD_NODE_ID_MAX]; /* loop thread: the last one found stopped on request */

    /* epoch plans split again after placement moved (primary; cluster/plansplit.c) */
    _Atomic int64_t plans_want;     /* the smap version whose placement plans must follow */
    _Atomic int64_t plans_done;     /* the last one they follow */
    atomic_int plans_busy;          /* a split runs on the pool */
    _Atomic uint64_t plans_next_ns; /* not before (after a failed split) */
    uint64_t plans_retry_ns;        /* the pool task's: the next retry's delay */
};

/* ---- auth.c ---- */

/* Who is asking and may they: SigV4/SigV2 against auth.keys (anonymous when none are set,
 * or for what r->pub names in a public bucket: hd_proxy_public), or the node signature of
 * another proxy (trusted: a->access_key stays empty, a->anonymous 0). bucket NULL means the
 * service (ListBuckets). 0 with *a filled (a->anonymous for an allowed request without
 * credentials), or the error to answer with. */
int hd_proxy_auth(struct hd_req *r, struct hd_proxy *p, const char *bucket,
                  struct hd_sigv4_auth *a);
/* Whether hd_proxy_auth's a is another proxy's node signature (not a client's). */
static inline int hd_proxy_auth_by_node(const struct hd_sigv4_auth *a)
{
    return !a->anonymous && !a->access_key[0];
}
/* Admin calls (maintenance, decommission): another proxy's node signature, or a key with rw
 * on all buckets; open when neither cluster.secret nor auth.keys is set. */
int hd_proxy_auth_admin(struct hd_req *r, struct hd_proxy *p);
/* The cluster-wide views (jobs, plans): any valid key may GET, the rest needs an admin.
 * r->api is set to native; on a refusal r has been answered and the code is returned. */
int hd_proxy_auth_view_or_admin(struct hd_req *r, struct hd_proxy *p);
/* Checks r's node signature (flags: HD_NA_*): 0 with *who (r's answers are then signed),
 * HD_DECLINED when r has none, or HD_DONE after refusing r (403, logged). */
int hd_proxy_node_verify(struct hd_req *r, struct hd_proxy *p, int flags,
                         struct hd_nodeauth_who *who);
/* 1 when bucket lets a request of kind pub (enum hd_pub) through unsigned: its
 * anonymous_read and anonymous_list properties and its policy, as the BMD keeps them parsed; a
 * read of key (NULL: of any object) when the policy makes some objects public: the policy
 * decides that key. */
int hd_proxy_public(struct hd_proxy *p, const char *bucket, const char *key, int pub);
/* 1 when bucket's policy refuses requests without TLS (the BMD entry's tls_only). */
int hd_proxy_tls_only(struct hd_proxy *p, const char *bucket);
/* hd_keys_tls_check and hd_keys_tls_check_job for a client's r: 0 or HD_EACCESS. */
int hd_proxy_tls_check(struct hd_req *r, struct hd_proxy *p, const char *bucket);
int hd_proxy_tls_check_job(struct hd_req *r, struct hd_proxy *p, const char *bucket,
                           const json_t *args);

/* ---- role.c: primary or follower, terms, the primary's books ---- */

/* Loads term and voted_for (DATA/node.db). */
int hd_proxy_role_init(struct hd_proxy *p);
/* The voters of s: every proxy of its map when there are three or more, else only its
 * primary (two proxies cannot outvote a partition: the second is a gateway). At most max
 * entries into out; returns the count. */
size_t hd_proxy_voters(const struct hd_smap *s, const struct hd_node **out, size_t max);
/* A majority of s's voters. */
size_t hd_proxy_quorum(const struct hd_smap *s);
/* Whether id votes in s. */
int hd_proxy_is_voter(const struct hd_smap *s, const char *id);
/* Adopts a newer term (persisted, voted_for cleared); a primary steps down. why is logged.
 * 0, or -ESTALE when term is not newer. Any thread. */
int hd_proxy_term_adopt(struct hd_proxy *p, int64_t term, const char *why);
/* Records a vote in term (persisted first). 1 granted (term adopted if newer); 0 refused
 * (already voted for another in term, or term is older). */
int hd_proxy_term_vote(struct hd_proxy *p, int64_t term, const char *candidate);
/* The primary holds a lease (a majority of voters promised not to elect another for L), or is
 * the only voter. */
int hd_proxy_has_lease(struct hd_proxy *p);
/* Becomes a follower (already in the current term); the loop thread then joins whoever is
 * primary. */
void hd_proxy_step_down(struct hd_proxy *p, const char *why);
/* The primary's books (caller holds mu): who was heard from when. */
struct hd_proxy_seen *hd_proxy_seen_find(struct hd_proxy *p, const char *id);
void hd_proxy_seen_mark(struct hd_proxy *p, const char *id, uint64_t now);

/* ---- core.c: the held BMD ---- */

/* 0 when the BMD has bucket, else HD_ENOSUCHBUCKET. */
int hd_proxy_bucket_known(struct hd_proxy *p, const char *bucket);
/* 1 when bucket is S3-backed (provider aws) in the current BMD. */
int hd_proxy_bucket_cloud(struct hd_proxy *p, const char *bucket);
/* Wakes the membership loop thread (metasync, rebalance) now; a no-op before it runs. */
void hd_proxy_wake(struct hd_proxy *p);

/* ---- calls.c ---- */

/* uname "provider/@#/bucket/object" for placement; *out malloc'd. */
int hd_proxy_uname(struct hd_proxy *p, const char *bucket, const char *key, char **out,
                   size_t *len);
/* Signs c (a call to another node; c->url set) as this proxy for the node whose URL c->url
 * starts with in the current smap. */
void hd_proxy_call_sign(struct hd_proxy *p, struct hd_httpc_call *c);
/* The node signature of METHOD url for callers that send the request themselves (the relay,
 * batch sources): the recipient comes from the smap, body_sha256 NULL means an unsigned
 * (streamed) payload, hdrs are the other headers sent (X-Hoard-* ones are signed). 0 or
 * -ENOMEM/-EIO. */
int hd_proxy_sign(struct hd_proxy *p, const char *method, const char *url, const char *body_sha256,
                  const struct hd_kv *hdrs, size_t nhdrs, struct hd_nodesig *sig);
/* The owner of bucket/key (decoded names; provider: the request's provider query, NULL:
 * from the BMD) in the current smap: 0 with *url (its public URL, malloc'd), or
 * HD_EUNAVAIL/-ENOMEM with msg filled; id gets its node id, smapv (NULL: not wanted) the
 * version of the map that decided (hd_smap_vstr). */
int hd_proxy_owner(struct hd_proxy *p, const char *bucket, const char *key, const char *provider,
                   char **url, char id[HD_NODE_ID_MAX], char smapv[HD_SMAP_VSTR_MAX], char *msg,
                   size_t msglen);

/* One call per live target of s (flagged ones too when all): METHOD path (absolute, with
 * query) with the proxy's signature and an optional JSON body, all in parallel; returns when
 * all have finished (each call's rc/status tell how). 0 or -ENOMEM. Release with
 * hd_proxy_fan_cleanup. Blocks on the network (bounded by total_ms). */
struct hd_proxy_fan {
    struct hd_httpc_call *calls;
    char (*urls)[HD_NODE_URL_MAX + 96];
    const struct hd_node **nodes;
    size_t n;
};
int hd_proxy_fan_out(struct hd_proxy *p, struct hd_smap *s, const char *method, const char *path,
                     const char *body, int all, long total_ms, struct hd_proxy_fan *f);
void hd_proxy_fan_cleanup(struct hd_proxy_fan *f);
/* A call's answer as JSON, NULL when it failed or is not JSON. */
json_t *hd_proxy_call_json(const struct hd_httpc_call *c);
/* Calls the primary's `path` (absolute, with query) with the cluster header. Returns the
 * transport rc; *status and *out as hd_httpc_json. Blocks on the network (bounded). */
int hd_proxy_primary_call(struct hd_proxy *p, const char *method, const char *path,
                          const json_t *in, long *status, json_t **out);
/* Maps a native JSON error answer ({"code":"BucketNotEmpty",...}) back to a project code. */
int hd_proxy_err_from_json(long status, const json_t *j);
/* Starts job `id` of `kind` on every live target of s (flagged ones too when all). 0, or a
 * negative code with msg filled after asking the targets that did start to stop again.
 * Blocks on the network (bounded). */
int hd_proxy_jobs_start_all(struct hd_proxy *p, struct hd_smap *s, const char *id, const char *kind,
                            const char *bucket, json_t *args, int all, char *msg, size_t msglen);
/* The same without the stop: *ok counts the targets that started it (rebalance restarts a
 * target's share this way). */
int hd_proxy_post_job(struct hd_proxy *p, struct hd_smap *s, const char *id, const char *kind,
                      const char *bucket, json_t *args, int all, char *msg, size_t msglen,
                      size_t *ok);

#endif
