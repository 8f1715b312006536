/* jobs: cluster-wide jobs on the proxy (jobs.c: start, merged views, stop) and the planning
 * of shard jobs (shard.c). On cluster/, data/ and core/. HTTP workers (bounded calls) and
 * the shard planner's own thread. */
#ifndef HD_PROXY_JOBS_H
#define HD_PROXY_JOBS_H

#include "proxy/core/core.h"

/* /v1/jobs[/ID] */
void hd_proxy_jobs_handle(struct hd_req *r, struct hd_proxy *p);

/* A new job id for kind: "KIND-" and 16 random hex digits. */
void hd_proxy_jobs_new_id(const char *kind, char *out, size_t outlen);
/* Job id merged over every target ("state", "finished_ms", "errors", ..., "targets":
 * {node: that target's job}): 0 with *out (the caller's), HD_ENOSUCHJOB, HD_EUNAVAIL with
 * msg filled (no smap yet, a target that did not answer), -ENOMEM. Blocks (bounded). */
int hd_proxy_jobs_view(struct hd_proxy *p, const char *id, json_t **out, char *msg, size_t msglen);

/* Every job of the cluster as merged views (as hd_proxy_jobs_view, without "targets"): 0 with
 * *out (an array, the caller's), or as hd_proxy_jobs_view. Blocks (bounded). */
int hd_proxy_jobs_list(struct hd_proxy *p, json_t **out, char *msg, size_t msglen);

/* shard.c: a shard job request (POST /v1/jobs, kind "shard"), from the jobs body handler:
 * plans it on a thread of its own (listing, grouping, packing), writes the manifest object,
 * starts the job on every target and answers r (parked meanwhile). args is copied. */
void hd_proxy_shard_start(struct hd_req *r, struct hd_proxy *p, const char *id, const char *bucket,
                          json_t *args);
/* The same for AIStore's archive action (ObjectGroup.archive(): one shard named by a template
 * without braces): the plan goes to the targets in the job's args instead of a manifest
 * object, and r is answered 200 with the id as text. args may carry "missing_ok": true (names
 * of a list that do not exist are left out). */
void hd_proxy_archive_start(struct hd_req *r, struct hd_proxy *p, const char *id,
                            const char *bucket, json_t *args);

#endif
