/* cluster: a target's side of the cluster. Joins the primary proxy and heartbeats from a
 * libuv loop thread of its own; serves /v1/cluster*, /v1/metasync and readiness; applies BMD
 * changes to the local store; checks the proxy signature (pid, ptime, psig) of every other
 * request and strips it from the query before dispatch. hd_tcluster_handle runs on HTTP
 * workers. A target without cluster.join runs standalone: then only its node id (kept in
 * DATA/node.db, shown by /v1/health) comes from here. */
#ifndef HD_TARGET_CLUSTER_H
#define HD_TARGET_CLUSTER_H

#include "common/config.h"
#include "common/http.h"

struct hd_target;
struct hd_tcluster;

/* Sets up the node id, smap and BMD (persisted in DATA/node.db) and applies the held BMD to
 * the store. t must outlive the result. */
int hd_tcluster_new(struct hd_target *t, const struct hd_config *cfg, struct hd_tcluster **out);
/* Starts joining and heartbeating; call once the HTTP server listens. */
int hd_tcluster_start(struct hd_tcluster *c);
/* Stops the loop thread and frees; NULL is a no-op. */
void hd_tcluster_free(struct hd_tcluster *c);
/* Before dispatch: 1 when r has been answered (cluster endpoint, readiness, or refused
 * for lacking a valid proxy signature), 0 to go on (signature parameters removed). */
int hd_tcluster_handle(struct hd_tcluster *c, struct hd_req *r);

/* For rebalance: the current smap (a new reference; NULL when standalone or before the
 * first one arrives), our node id, the cluster secret ("" = none). */
struct hd_smap;
struct hd_smap *hd_tcluster_smap(struct hd_tcluster *c);
const char *hd_tcluster_id(const struct hd_tcluster *c);
/* Waits up to ms for this start's join to complete (a proxy may send us clients as soon as
 * it has added us, before its answer to our join has been applied here). 1 when joined or
 * standalone. HTTP workers only, on a path that is about to answer "not found". */
int hd_tcluster_wait_joined(struct hd_tcluster *c, int ms);
const char *hd_tcluster_secret(const struct hd_tcluster *c);

#endif
