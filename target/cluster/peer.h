/* peer: a target's calls to the other targets of its cluster (rebalance, get-from-neighbour,
 * CopyObject across targets, shard jobs, batch GET): the owner of an object under the current
 * cluster map, the URL of the object (or of one of its archive members) there, the node
 * signature (common/nodeauth.h) that authorises the call, and streaming an object from
 * another target into a put. Any thread but HTTP workers for the calls that block on the
 * network (hd_peer_get_into); the others do not block. */
#ifndef HD_TARGET_PEER_H
#define HD_TARGET_PEER_H

#include <stddef.h>

#include "common/buf.h"
#include "common/httputil.h"
#include "target/cluster/cluster.h"
#include "target/store/store.h"

struct curl_slist;

/* *url (malloc'd): "<owner>/v1/objects/B/O[?archpath=M]" for the HRW owner of bucket/name;
 * *self says whether that owner is this target. HD_ENOSUCHKEY when there is no cluster map
 * (standalone: what is not held here does not exist); HD_EUNAVAIL when the owner is down or
 * no target is eligible (msg says which). */
int hd_peer_object_url(struct hd_tcluster *cl, const char *bucket, const char *name,
                       const char *archpath, char **url, int *self, char *msg, size_t msglen);
/* Node signature headers for METHOD url with a body of hex SHA-256 body_sha256 (NULL: an
 * empty body) as "Name: value" strings (malloc'd array of malloc'd strings, for struct
 * hd_tar_src). 0 or -ENOMEM. */
int hd_peer_sign(struct hd_tcluster *cl, const char *method, const char *url,
                 const char *body_sha256, char ***hdrs, size_t *n);
/* The same appended to a libcurl header list, signing the X-Hoard-* lines already in it
 * (add them first) and the body's hex SHA-256 (NULL: unsigned). Returns the list, NULL on
 * failure (h is then freed). */
struct curl_slist *hd_peer_sign_curl(struct curl_slist *h, struct hd_tcluster *cl,
                                     const char *method, const char *url, const char *body_sha256);
/* Signs an intra-cluster call (c->url set) as this target, for the node c->url points to. */
struct hd_httpc_call;
void hd_peer_call_sign(struct hd_tcluster *cl, struct hd_httpc_call *c);
/* Appends "<base>/v1/objects/<bucket>/<key>" (encoded) to b; 0 or -ENOMEM. */
int hd_peer_object_path(struct hd_buf *b, const char *base, const char *bucket, const char *key);

/* Streams bucket/key from the target at node_url into p (node-signed GET; local: no further
 * hops on that side), forwarding the conditionals in cond (NULL: none). 0 with *xmeta = its
 * X-Hoard-Obj-Meta (malloc'd), HD_ENOSUCHKEY, HD_EPRECONDITION (a conditional failed),
 * HD_EUNAVAIL or -EIO. Blocks on the network (bounded): never on an HTTP worker. */
int hd_peer_get_into(struct hd_tcluster *cl, const char *node_url, const char *bucket,
                     const char *key, int local, const struct hd_cond *cond, struct hd_put *p,
                     char **xmeta);
/* The same for the bytes range names ("bytes=a-b", or NULL: all; forwarded as Range), with
 * *total the size of the whole object (from Content-Range or Content-Length). Also
 * HD_ERANGE when the range starts past the object (*total set). */
int hd_peer_get_range_into(struct hd_tcluster *cl, const char *node_url, const char *bucket,
                           const char *key, int local, const struct hd_cond *cond,
                           const char *range, struct hd_put *p, char **xmeta, uint64_t *total);
/* When another target owns bucket/key in the current cluster map: 0 with its URL in url;
 * HD_EUNAVAIL with url when that owner is down; HD_ENOSUCHKEY when we own it (or run
 * standalone). Does not block. */
int hd_peer_owner_elsewhere(struct hd_tcluster *cl, const char *bucket, const char *key, char *url,
                            size_t urlmax);

#endif
