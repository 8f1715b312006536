/* cluster: a target's side of the cluster. Joins the primary proxy and heartbeats from a
 * libuv loop thread of its own; serves /v1/cluster*, /v1/metasync and readiness; applies BMD
 * changes to the local store; checks the node signature (common/nodeauth.h) or the
 * redirect capability (pid, ptime, psig, stripped from the query) of every other request
 * before dispatch. hd_tcluster_handle runs on HTTP
 * workers. A target without cluster.join runs standalone: then only its node id (kept in
 * DATA/node.db, shown by /v1/health) comes from here. */
#ifndef HD_TARGET_CLUSTER_H
#define HD_TARGET_CLUSTER_H

#include "common/config.h"
#include "common/http.h"

struct hd_pool;
struct hd_store;
struct hd_tcluster;

/* Sets up the node id, smap and BMD (persisted in DATA/node.db) and applies the held BMD to
 * the store. st and pool (for requests that must wait for the join) must outlive the
 * result. */
int hd_tcluster_new(const struct hd_config *cfg, struct hd_store *st, struct hd_pool *pool,
                    struct hd_tcluster **out);
/* What the layers above learn of BMD changes (they register this before hd_tcluster_start;
 * called on the cluster's loop thread or an HTTP worker, under the BMD apply lock):
 * bucket_gone after a bucket left the BMD and the store destroyed it, applied after every
 * new BMD was applied to the store. */
struct hd_bmd_hooks {
    void (*bucket_gone)(void *arg, const char *bucket);
    void (*applied)(void *arg);
    /* whether r carries a valid client key (cluster reads; HTTP workers) */
    int (*client_ok)(void *arg, struct hd_req *r);
    void *arg;
};
void hd_tcluster_set_hooks(struct hd_tcluster *c, const struct hd_bmd_hooks *hooks);
/* The store this node's cluster state applies to (for the cluster layer's other modules). */
struct hd_store *hd_tcluster_store(const struct hd_tcluster *c);
/* Starts joining and heartbeating; call once the HTTP server listens. */
int hd_tcluster_start(struct hd_tcluster *c);
/* Stops the loop thread; waits for the join give up. First step of a shutdown; NULL is a
 * no-op. */
void hd_tcluster_stop(struct hd_tcluster *c);
/* Stops (as above) and frees; NULL is a no-op. */
void hd_tcluster_free(struct hd_tcluster *c);
/* Before dispatch: HD_DONE when r has been answered (cluster endpoint, readiness, or refused
 * for lacking a valid proxy signature), HD_AGAIN when r waits for this node's join (the
 * role handler runs again), HD_OK to go on (signature parameters removed). */
int hd_tcluster_handle(struct hd_tcluster *c, struct hd_req *r);

/* For rebalance: the current smap (a new reference; NULL when standalone or before the
 * first one arrives), our node id. */
struct hd_smap;
struct hd_smap *hd_tcluster_smap(struct hd_tcluster *c);
const char *hd_tcluster_id(const struct hd_tcluster *c);
/* 1 when this node owns provider/bucket/name under smap s by HRW (always when s is NULL:
 * standalone). Any thread. */
int hd_tcluster_owns(const struct hd_tcluster *c, const struct hd_smap *s, const char *provider,
                     const char *bucket, const char *name);
/* Whether r, a node call (r->trusted == HD_TRUST_NODE), was signed by a proxy of our map
 * (always true without a secret, the dev mode where nothing is checked). Admin endpoints
 * (plans, jobs, daemon) take node calls from proxies only: targets never send them. */
int hd_tcluster_from_proxy(struct hd_tcluster *c, struct hd_req *r);
/* Signs r's answer for the proxy that called (HD_NODE_CAP_SIGNED_ADMIN); no-op in dev mode. */
void hd_tcluster_sign_answers(struct hd_tcluster *c, struct hd_req *r);
/* Waits up to ms for this start's join to complete (a proxy may send us clients as soon as
 * it has added us, before its answer to our join has been applied here). 1 when joined or
 * standalone. Blocks: pool and job threads only. */
int hd_tcluster_wait_joined(struct hd_tcluster *c, int ms);
/* The same without waiting. */
int hd_tcluster_joined(const struct hd_tcluster *c);
/* This node's signer and verifier (common/nodeauth.h). */
struct hd_nodeauth;
struct hd_nodeauth *hd_tcluster_nodeauth(const struct hd_tcluster *c);
/* cluster.secret ("" when unset): the key material bearer tokens are verified with. */
const char *hd_tcluster_secret(const struct hd_tcluster *c);
/* Whether bearer token id (hd_token_id) is revoked in this target's BMD (arg: the
 * hd_tcluster; an hd_token_revoked_fn). */
int hd_tcluster_token_revoked(void *arg, const char *id);

/* hoardd --prestop (prestop.c): puts this target (cfg: its configuration) into maintenance
 * until it rejoins and waits, at most timeout_s seconds, until its objects are served by the
 * other targets. Progress lines go to out. 0, or -1 with why in err. Blocks. */
#include <stdio.h>
int hd_tcluster_prestop(const struct hd_config *cfg, long timeout_s, FILE *out, char *err,
                        size_t errlen);

#endif
