/* smap: the cluster map (smap) and bucket metadata (BMD) as immutable, refcounted snapshots
 * with AIStore-style JSON; HRW placement over targets; the node's persisted copy in
 * DATA/node.db (table meta); the join/heartbeat client step; the cluster HMACs.
 *
 * Threads: a snapshot is mutable only before it is published (hd_smap_state_set_*); after
 * that any thread holding a reference may read it. struct hd_smap_state is thread-safe.
 * hd_smap_member_tick blocks on the network: call it from a node's background thread. */
#ifndef HD_SMAP_H
#define HD_SMAP_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#ifndef HD_KV_DEFINED
#define HD_KV_DEFINED
struct hd_kv {
    const char *k;
    const char *v;
};
#endif

#define HD_NODE_ID_MAX 64
#define HD_NODE_URL_MAX 256
/* smap node flags */
#define HD_NODE_MAINT 1u  /* maintenance: no placement */
#define HD_NODE_DECOMM 2u /* decommissioning: no placement */
/* with HD_NODE_MAINT: maintenance for a restart (hoardd --prestop), which ends by itself when
 * the node joins again */
#define HD_NODE_RESTART 4u

enum hd_node_type { HD_NODE_PROXY, HD_NODE_TARGET };

/* Node capabilities, announced by the node itself when it joins (so a cluster can be
 * upgraded one node at a time): HD_NODE_CAP_SIGNED_ADMIN, a target that signs its answers
 * to proxies' calls of /v1/jobs, /v1/plans and /v1/daemon; HD_NODE_CAP_SIGNED_BUCKETS, also
 * of /v1/buckets/B (?summary, ?writeback, ?uploads, ?props). A proxy then accepts only signed
 * answers from it on its fan-outs to those paths. */
#define HD_NODE_CAP_SIGNED_ADMIN 1u
#define HD_NODE_CAP_SIGNED_BUCKETS 2u

struct hd_node {
    char id[HD_NODE_ID_MAX];
    enum hd_node_type type;
    char url[HD_NODE_URL_MAX]; /* public_net.direct_url */
    unsigned flags;
    unsigned caps;   /* HD_NODE_CAP_*: what the node's version does ("hoard_caps") */
    int down;        /* a target that left by failure, kept in "tmap_down" for placement */
    uint64_t digest; /* hd_hrw_digest(id) */
    char **mountpaths;
    size_t nmp;
};

struct hd_smap {
    int refs;
    int64_t term; /* of the primary that made this version (docs/cluster.md, election) */
    int64_t version;
    char uuid[40];
    char primary[HD_NODE_ID_MAX];
    char rebalance[HD_NODE_ID_MAX]; /* id of the rebalance in progress, "" when none */
    struct hd_node *nodes;          /* sorted by id */
    size_t n;
};

/* Node entries. from_json fills *out (release with hd_smap_node_cleanup); HD_EBADARG when the
 * JSON is not a node entry. */
int hd_smap_node_from_json(const json_t *j, struct hd_node *out);
json_t *hd_smap_node_to_json(const struct hd_node *n);
int hd_smap_node_copy(struct hd_node *dst, const struct hd_node *src);
void hd_smap_node_cleanup(struct hd_node *n);

/* Order of versions: by term, then by version. <0, 0, >0 as (ta, va) is older, the same,
 * newer than (tb, vb). */
int hd_smap_vcmp(int64_t ta, int64_t va, int64_t tb, int64_t vb);

/* A map's version as "<term>.<version>", the form a proxy's redirect (psv) and relay
 * (X-Hoard-Smap) carry, so the target can tell it routes by an older map than the proxy. */
#define HD_SMAP_VSTR_MAX 48
void hd_smap_vstr(const struct hd_smap *s, char out[HD_SMAP_VSTR_MAX]);
/* Parses that form (network bytes): 0, or HD_EBADARG. */
int hd_smap_vparse(const char *str, int64_t *term, int64_t *version);

/* Snapshots start with one reference; _unref(NULL) is a no-op. */
struct hd_smap *hd_smap_new(void);
struct hd_smap *hd_smap_ref(struct hd_smap *s);
void hd_smap_unref(struct hd_smap *s);
int hd_smap_clone(const struct hd_smap *s, struct hd_smap **out);
int hd_smap_from_json(const json_t *j, struct hd_smap **out);
json_t *hd_smap_to_json(const struct hd_smap *s);
const struct hd_node *hd_smap_find(const struct hd_smap *s, const char *id);
/* The node whose URL url starts with (followed by '/', '?' or the end), or NULL. */
const struct hd_node *hd_smap_find_url(const struct hd_smap *s, const char *url);
/* Adds or replaces the node with n's id (copied). 1 changed, 0 already identical, -ENOMEM. */
int hd_smap_put(struct hd_smap *s, const struct hd_node *n);
/* 0 or -ENOENT. */
int hd_smap_remove(struct hd_smap *s, const char *id);
/* Nodes of type t; live_only leaves out down targets. */
size_t hd_smap_count(const struct hd_smap *s, enum hd_node_type t, int live_only);
/* The owner of uname: the target with the highest HRW weight among live and down targets
 * without flags. 0 with *out set; HD_EUNAVAIL with *out = the owner when it is down;
 * HD_EUNAVAIL with *out = NULL when no target is eligible. */
int hd_smap_owner(const struct hd_smap *s, const char *uname, size_t len,
                  const struct hd_node **out);

/* Bucket metadata. */
struct hd_bmd_bucket {
    char name[64];
    char provider[8];
    int64_t created; /* unix seconds */
    char *props;     /* compact JSON object, NULL = {} */
    /* of props, parsed once by hd_bmd_put (common/bprops.h hd_bprops_access): what unsigned
     * callers may do, the policy's keys and prefixes (owned; NULL none), TLS only */
    int public_objects, public_list;
    json_t *public_keys;
    int tls_only;
};

/* A revoked bearer token (DELETE /v1/tokens): its id (common/token.h hd_token_id) until it
 * would have expired anyway. */
#define HD_BMD_REVOKED_MAX 10000
struct hd_bmd_revoked {
    char id[65];
    int64_t exp; /* unix seconds */
};

struct hd_bmd {
    int refs;
    int64_t term;
    int64_t version;
    struct hd_bmd_bucket *b; /* sorted by name */
    size_t n;
    struct hd_bmd_revoked *rv; /* revoked tokens, JSON "revoked": [{"id","exp"}] */
    size_t nrv;
};

struct hd_bmd *hd_bmd_new(void);
/* Adds token id (64 hex digits) to b's revoked tokens until exp, dropping those expired by
 * now. 0, HD_EBADARG (bad id, or HD_BMD_REVOKED_MAX live revocations already), -ENOMEM. */
int hd_bmd_revoke(struct hd_bmd *b, const char *id, int64_t exp, int64_t now);
/* Whether token id is revoked in b (and not expired by now). */
int hd_bmd_is_revoked(const struct hd_bmd *b, const char *id, int64_t now);
struct hd_bmd *hd_bmd_ref(struct hd_bmd *b);
void hd_bmd_unref(struct hd_bmd *b);
int hd_bmd_clone(const struct hd_bmd *b, struct hd_bmd **out);
int hd_bmd_from_json(const json_t *j, struct hd_bmd **out);
json_t *hd_bmd_to_json(const struct hd_bmd *b);
const struct hd_bmd_bucket *hd_bmd_find(const struct hd_bmd *b, const char *name);
/* Adds or replaces a bucket; props is a JSON object text or NULL. 0 or -ENOMEM. */
int hd_bmd_put(struct hd_bmd *b, const char *name, const char *provider, int64_t created,
               const char *props);
/* 0 or -ENOENT. */
int hd_bmd_remove(struct hd_bmd *b, const char *name);
/* 1 when both have the same props (NULL and "{}" are the same). */
int hd_bmd_props_equal(const char *a, const char *b);

/* ---- the node's current copy, persisted in DATA/node.db (meta table) ---- */

struct hd_smap_state;

/* Opens (creating DATA and node.db as needed) and loads the persisted smap and BMD. */
int hd_smap_state_open(const char *data_dir, struct hd_smap_state **out);
void hd_smap_state_close(struct hd_smap_state *st);
/* The node id: `configured` when not empty, else the persisted one, else a new
 * prefix + 8 random hex digits (persisted). */
int hd_smap_state_node_id(struct hd_smap_state *st, const char *configured, char prefix,
                          char out[HD_NODE_ID_MAX]);
/* New references; smap NULL before the node has one; bmd never NULL (empty, version 0). */
struct hd_smap *hd_smap_state_smap(struct hd_smap_state *st);
struct hd_bmd *hd_smap_state_bmd(struct hd_smap_state *st);
/* Installs and persists s when its (term, version) is newer than the held one (or force).
 * 0 installed, 1 same version (nothing done), -ESTALE older (refused). The state takes its
 * own reference. For the BMD, *prev (may be NULL) gets a reference to the replaced one. */
int hd_smap_state_set_smap(struct hd_smap_state *st, struct hd_smap *s, int force);
int hd_smap_state_set_bmd(struct hd_smap_state *st, struct hd_bmd *b, int force,
                          struct hd_bmd **prev);
/* Raw meta rows. get: *out malloc'd, -ENOENT when absent. */
int hd_smap_state_meta_get(struct hd_smap_state *st, const char *key, char **out);
int hd_smap_state_meta_set(struct hd_smap_state *st, const char *key, const char *value);

/* Parses a metasync body {"smap":..,"bmd":..}; either may be absent (NULL). HD_EBADARG. */
int hd_smap_parse_sync(const json_t *j, struct hd_smap **s, struct hd_bmd **b);

/* Seconds a proxy's redirect capability (pid, ptime, psig: common/nodeauth.h) stays valid. */
#define HD_SMAP_PSIG_TTL 300

/* ---- joining and heartbeating (non-primary proxies and targets) ---- */

struct hd_nodeauth;
struct hd_smap_member {
    struct hd_smap_state *st;
    const struct hd_node *self; /* the entry sent with join */
    const char *join_url;       /* cluster.join */
    struct hd_nodeauth *na;     /* signs the calls and checks the answers */
    long timeout_ms;            /* per call */
    /* Installs a BMD (a target applies it to its store); NULL = hd_smap_state_set_bmd. */
    int (*set_bmd)(void *arg, struct hd_bmd *b, int force);
    void *arg;
    /* Whether the node can still count on the primary it heartbeats (after failures the
     * member asks the other proxies of its map who the primary is now). */
    int joined;   /* set by a successful join, cleared when the primary has forgotten us */
    int gone;     /* the primary refused us for good (decommissioned): stop trying */
    int failures; /* consecutive failed calls */
};

/* One step: join when not joined, else heartbeat and pull a newer smap/BMD. 0 or a negative
 * code (already logged). */
int hd_smap_member_tick(struct hd_smap_member *m);
/* PUT /v1/metasync on a member (its body already read and parsed into j): installs the smap
 * and BMD sent unless they are older than what is held (409 {"term", "version"}), or the
 * sender is not the primary the smap names (403), and answers r. HTTP worker. */
struct hd_req;
void hd_smap_member_metasync(struct hd_smap_member *m, struct hd_req *r, json_t *j);

#endif
