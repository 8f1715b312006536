/* cluster: the proxy's control plane. Membership (joins, heartbeats, failure detection, the
 * loop thread; membership.c), metasync of each new smap/BMD version (metasync.c), rebalance
 * driven by the primary (rebalance.c), bucket changes in the BMD (bmd.c), and S3-backed
 * buckets' upstream settings and registration on first access (upstream.c). On data/ and
 * core/. Thread rules per function. */
#ifndef HD_PROXY_CLUSTER_H
#define HD_PROXY_CLUSTER_H

#include "proxy/core/core.h"

/* ---- membership.c ---- */

int hd_proxy_members_init(struct hd_proxy *p);
int hd_proxy_loop_start(struct hd_proxy *p);
void hd_proxy_loop_stop(struct hd_proxy *p);
/* /v1/cluster..., /v1/metasync (HTTP workers) */
void hd_proxy_cluster_handle(struct hd_req *r, struct hd_proxy *p);

/* ---- elect.c: leases and elections (docs/cluster.md) ---- */

/* Primary, each heartbeat on the lease thread (and once at start): renews the lease with
 * every voter; a newer term in an answer makes it step down. Blocks up to a second. A no-op
 * on a follower. */
void hd_proxy_lease_tick(struct hd_proxy *p);
/* Starts / stops the lease thread (p->lease_ticker), which runs hd_proxy_lease_tick every
 * heartbeat and nothing else; stop is a no-op when it is not running. */
int hd_proxy_lease_start(struct hd_proxy *p);
void hd_proxy_lease_stop(struct hd_proxy *p);
/* Follower's loop thread, each heartbeat: when no lease came for the election timeout,
 * campaigns for the next term (pre-vote, vote, take over). Blocks up to a few seconds. 1
 * when this voter's promise to the primary has run out (it will not heartbeat a primary
 * that stopped renewing its lease: the election decides). */
int hd_proxy_elect_tick(struct hd_proxy *p);
/* POST /v1/cluster/lease and /v1/cluster/vote, body parsed, sender's signature checked
 * (HTTP workers; they block only on node.db). Answers are signed by the caller's setup. */
void hd_proxy_on_lease(struct hd_req *r, struct hd_proxy *p, json_t *j);
void hd_proxy_on_vote(struct hd_req *r, struct hd_proxy *p, json_t *j);

/* ---- metasync.c ---- */

/* Primary only, caller holds p->mu: commits s and/or b (version already bumped; the term is
 * set here): sends them to the voters and waits until a majority holds them (of the old and
 * the new map's voters), then persists and installs them here. 0; HD_EUNAVAIL when no
 * majority holds them (nothing installed here; a voter that learned of a newer term makes
 * us step down). Blocks up to 2 heartbeats. */
int hd_proxy_commit(struct hd_proxy *p, struct hd_smap *s, struct hd_bmd *b);
int hd_proxy_smap_install(struct hd_proxy *p, struct hd_smap *s);
int hd_proxy_bmd_install(struct hd_proxy *p, struct hd_bmd *b);
/* Sends the current smap and BMD to every target now and waits (HTTP worker, bounded);
 * the loop thread then pushes them to the other proxies. */
void hd_proxy_sync_now(struct hd_proxy *p);
/* Loop thread: pushes smap/BMD versions some node has not been sent yet (always: even when
 * every node had them). */
void hd_proxy_push_pending(struct hd_proxy *p, int always);

/* ---- rebalance.c ---- */

/* POST /v1/cluster/rebalance: the primary marks the smap with a new rebalance id at once,
 * which its loop thread then starts (wake it) in place of any marked before, and answers 202
 * {"status", "id"}. Other proxies forward to the primary. HTTP worker. */
void hd_proxy_rebalance_reply(struct hd_req *r, struct hd_proxy *p);
/* Primary, caller holds mu, s is the next smap (version already bumped, not installed):
 * marks it with a new rebalance id, so the map that moves objects is the same version that
 * turns on get-from-neighbour everywhere (no window where a new owner misses an object
 * that has not moved yet), and asks the loop thread to start the job. */
void hd_proxy_rebalance_mark(struct hd_proxy *p, struct hd_smap *s);
/* Primary's loop thread: starts a requested rebalance, watches the one in progress. */
void hd_proxy_rebalance_tick(struct hd_proxy *p);

/* ---- plansplit.c ---- */

/* Primary's loop thread: when placement moved (hd_proxy_rebalance_mark), splits the epoch
 * plans again on a pool thread, until every target took every plan. */
void hd_proxy_plans_tick(struct hd_proxy *p);
/* 1 when id left the cluster by decommission (it may not join again). */
int hd_proxy_decommissioned(struct hd_proxy *p, const char *id);

/* ---- bmd.c: BMD changes (the primary does them; others ask the primary) ---- */

int hd_proxy_bucket_create(struct hd_proxy *p, const char *name, const char *provider);
/* Revokes bearer token (already verified; id its hd_token_id, exp its expiry): the primary
 * adds it to the BMD's revocation list and pushes that to every node; another proxy forwards
 * DELETE /v1/tokens to the primary. 0 or a code. Blocks (bounded). */
int hd_proxy_token_revoke(struct hd_proxy *p, const char *token, const char *id, int64_t exp);
/* As above with props (JSON text, already validated; NULL = none); msg (may be NULL) says
 * why a create was refused (the cluster-wide bound of properties). */
int hd_proxy_bucket_create_props(struct hd_proxy *p, const char *name, const char *provider,
                                 const char *props, char *msg, size_t msglen);
int hd_proxy_bucket_destroy(struct hd_proxy *p, const char *name, char *msg, size_t msglen);
int hd_proxy_bucket_props(struct hd_proxy *p, const char *name, const char *json);
/* As above; msg says what is wrong with the props. */
int hd_proxy_bucket_props_msg(struct hd_proxy *p, const char *name, const char *json, char *msg,
                              size_t msglen);

/* ---- upstream.c: S3-backed buckets ---- */

int hd_proxy_cloud_new(const struct hd_config *cfg, struct hd_proxy_cloud **out);
void hd_proxy_cloud_free(struct hd_proxy_cloud *c);
/* Props for a new bucket of provider (validated; an aws bucket without an upstream gets the
 * default upstream of the config). *out: canonical JSON or NULL; HD_EBADARG with msg. */
int hd_proxy_cloud_props(struct hd_proxy *p, const char *provider, const char *body, char **out,
                         char *msg, size_t msglen);
/* With upstream.endpoint set, a bucket unknown to the BMD that exists at the default
 * upstream is registered as S3-backed (answers cached for a while). From a role handler,
 * before anything is answered: HD_DECLINED when there is nothing to look up (go on),
 * HD_AGAIN when r is parked while a pool thread asks the upstream (the handler runs again,
 * r->deferrals > 0, and then it is HD_DECLINED). */
int hd_proxy_autoreg(struct hd_req *r, struct hd_proxy *p, const char *bucket);

#endif
