/* api: the proxy's HTTP front (proxy.c dispatches): the S3 API (s3.c), the native bucket and
 * object APIs (buckets.c, objects.c), batch GET (batch.c) and cluster capacity (capacity.c).
 * The top of the proxy: nothing below includes this. HTTP workers. */
#ifndef HD_PROXY_API_H
#define HD_PROXY_API_H

#include "proxy/core/core.h"

/* GET /v1/cluster/capacity */
void hd_proxy_capacity_handle(struct hd_req *r, struct hd_proxy *p);
/* GET /v1/buckets/B?summary (B's request already authorised): every target's objects and
 * bytes of B per mountpath, and their sums. */
void hd_proxy_bucket_summary(struct hd_req *r, struct hd_proxy *p, const char *bucket);
/* The same document: 0 with *res (the caller's), HD_ENOSUCHBUCKET, HD_EUNAVAIL (no smap yet),
 * -ENOMEM. Blocks on the network (bounded). */
int hd_proxy_bucket_summary_json(struct hd_proxy *p, const char *bucket, json_t **res);
/* /v1/plans[/ID[/cursor]] (plans.c) */
void hd_proxy_plans_handle(struct hd_req *r, struct hd_proxy *p);
/* GET|POST /v1/batch */
void hd_proxy_batch(struct hd_req *r, struct hd_proxy *p);
/* /v1/buckets[/B] */
void hd_proxy_buckets_handle(struct hd_req *r, struct hd_proxy *p);
/* /v1/objects/B/O */
void hd_proxy_route_object(struct hd_req *r, struct hd_proxy *p);
/* The S3 API (path style at "/" and "/s3/", virtual-host style with s3.domain):
 * SigV4-authenticated bucket calls served from the BMD and merged listings; object calls are
 * redirected (s3.redirect) or relayed. */
void hd_proxy_s3(struct hd_req *r, struct hd_proxy *p);

/* POST Object (postobj.c): an HTML form upload to bucket (known or not), r unauthenticated
 * (the form is signed); vhost: the request named the bucket in Host. */
void hd_proxy_post_object(struct hd_req *r, struct hd_proxy *p, const char *bucket, int vhost);

/* ais.c: AIStore's REST shapes (docs/aistore-compat.md). GET /v1/daemon?what=,
 * GET /v1/cluster?what= */
void hd_proxy_ais_daemon(struct hd_req *r, struct hd_proxy *p);
/* POST /v1/users/NAME {"password"}: a bearer token (AuthN's login) */
void hd_proxy_ais_login(struct hd_req *r, struct hd_proxy *p);
/* DELETE /v1/tokens {"token"}: revokes a bearer token (AuthN's logout/revoke) */
void hd_proxy_ais_tokens(struct hd_req *r, struct hd_proxy *p);
/* GET /v1/buckets with {"action":"list"}: [{"name","provider","namespace"}] */
void hd_proxy_ais_list_buckets(struct hd_req *r, struct hd_proxy *p);
/* GET /v1/buckets/B with {"action":"list","value":{...}}: AIStore's list result */
void hd_proxy_ais_list_objects(struct hd_req *r, struct hd_proxy *p, const char *bucket,
                               const json_t *value);
/* Object.copy(): PUT /v1/objects/SB/SO?object_to=UNAME, authorised (write on the destination,
 * read on the source) and sent to the destination's owner with the source bound to the
 * redirect's signature (docs/aistore-compat.md). */
void hd_proxy_ais_copy_object(struct hd_req *r, struct hd_proxy *p, const char *sb, const char *sk);
/* Object.multipart_upload().create(): POST /v1/objects/B/O {"action":"mpt-upload"} (r
 * authorised): the owner creates the upload, its id is the answer. The parts, completion and
 * abort go to the owner as any object request. */
void hd_proxy_ais_mpt_create(struct hd_req *r, struct hd_proxy *p, const char *bucket,
                             const char *key);
/* aisjobs.c: an AIStore job action on /v1/buckets/B (prefetch-listrange, evict-listrange,
 * evict-remote-bck, copy-bck, summary-bck; move-bck and others 501), body msg already read,
 * the request authenticated as a and authorised for B. */
void hd_proxy_ais_bucket_job(struct hd_req *r, struct hd_proxy *p, const char *bucket,
                             const struct hd_sigv4_auth *a, const json_t *msg);
/* HEAD /v1/buckets/B (Bucket.head(), Bucket.info()): ais-bucket-props; with ?presence=
 * the summary as ais-bucket-summ (202 and ais-xaction-id without ?uuid=, 200 with it). */
void hd_proxy_ais_bucket_head(struct hd_req *r, struct hd_proxy *p, const char *bucket);
/* GET /v1/cluster?what=status|qryxstats (authenticated): reads {"ID"} and answers AIStore's
 * job status or snapshots. */
void hd_proxy_ais_xact(struct hd_req *r, struct hd_proxy *p, const char *what);
/* AIStore's Cluster.get_performance(): GET /v1/reverse/daemon?what=node_status with
 * ais-node-id: TARGET, answered with stats.NodeStatus from the target's GET /v1/daemon
 * (capacity.c); other /v1/reverse calls 501. */
void hd_proxy_ais_node_status(struct hd_req *r, struct hd_proxy *p);
/* GET /v1/ml/moss/B: AIStore's GetBatch (batch.c) */
void hd_proxy_moss(struct hd_req *r, struct hd_proxy *p);

#endif
