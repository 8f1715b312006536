/* rebalance: moves every object to the target and mountpath HRW names for the current cluster
 * map (the "rebalance" job), finds objects that have not moved yet (get-from-neighbour) and
 * keeps deletes from being undone while objects move (tombstones). See rebalance.c. The
 * calls that block on the network say so: never on an HTTP worker. */
#ifndef HD_TARGET_REBALANCE_H
#define HD_TARGET_REBALANCE_H

#include <stdint.h>

#include <curl/curl.h>

#include "target/cluster/cluster.h"
#include "target/jobs/jobs.h"
#include "target/store/store.h"

struct hd_rb;

/* Registers the "rebalance" job kind with js. cl must outlive the result. */
int hd_rb_new(struct hd_tcluster *cl, struct hd_jobs *js, struct hd_rb **out);
void hd_rb_free(struct hd_rb *rb);

/* Object moves, shared with the copy job (copy.c). hd_rb_send_object: a node-signed PUT of
 * the object (m, read from fd) as bucket/key to the target at owner_url, carrying its identity
 * (X-Hoard-Obj-Meta); 0 when the owner holds it (committed, or already held a copy at least
 * as new), else a negative code with msg filled; dirty (write-back) makes the owner queue its
 * upload (X-Hoard-Dirty). Blocks on the network. hd_rb_put_local: the
 * same into this target's store (its HRW mountpath; dirty queues the upload there); a newer
 * copy there is no error. */
int hd_rb_send_object(CURL *cu, struct hd_tcluster *cl, const char *owner_url, const char *bucket,
                      const char *key, const struct hd_obj_meta *m, int fd, int dirty, char *msg,
                      size_t msglen);
int hd_rb_put_local(struct hd_store *st, const char *bucket, const char *key,
                    const struct hd_obj_meta *m, int fd, int dirty);

/* Whether a GET of bucket/key that missed here may find it on another target now: this
 * target has not joined yet, or r was routed by a newer map than ours (a proxy applied it
 * first: we may own the object by it), or objects are moving (a rebalance in progress, or a
 * target in maintenance) and we own it. Does not block. */
int hd_rebalance_may_gfn(struct hd_rb *rb, const struct hd_req *r, const char *bucket,
                         const char *key);
/* Get from neighbour: an object missing here may still sit on its previous owner while the
 * cluster map changes: asks the other targets and stores the first copy found. 0 when the
 * object is now held locally, else HD_ENOSUCHKEY. Waits for this start's join (up to 10 s)
 * and for the map the request was routed by (rterm.rversion, 0.0: none; up to
 * HD_RB_MAP_WAIT_MS), and blocks on the network: a pool thread. */
#define HD_RB_MAP_WAIT_MS 5000
int hd_rebalance_gfn(struct hd_rb *rb, int64_t rterm, int64_t rversion, const char *bucket,
                     const char *key);
/* Whether r, a miss here, was routed by a map older than ours that names another owner
 * (a proxy not yet told of the change): the object may well exist, so the answer is 503
 * (retry: the proxy will know by then), never 404. Does not block. */
int hd_rebalance_stale_route(struct hd_rb *rb, const struct hd_req *r, const char *bucket,
                             const char *key);
/* Whether delete-elsewhere has work: objects are moving now. Does not block. */
int hd_rebalance_moving(struct hd_rb *rb);
/* After a client's delete on the owner while objects move: deletes the copies other targets
 * may still hold and remembers the delete. Returns how many copies were deleted elsewhere.
 * Blocks on the network: a pool thread. */
int hd_rebalance_delete_elsewhere(struct hd_rb *rb, const char *bucket, const char *key);
/* 1 when bucket/key was deleted here (while objects move) at or after mtime_ms: a moved
 * copy that old must not come back. Does not block. */
int hd_rebalance_deleted_since(struct hd_rb *rb, const char *bucket, const char *key,
                               int64_t mtime_ms);

#endif
