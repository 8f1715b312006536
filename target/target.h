/* target: the storage node's request handling (native /v1 API and the S3 API) on top of
 * store. hd_target_handle runs on HTTP worker threads. */
#ifndef HD_TARGET_H
#define HD_TARGET_H

#include "common/config.h"
#include "common/http.h"

struct hd_target;

int hd_target_new(const struct hd_config *cfg, struct hd_target **out);
/* Starts the cluster member thread (join, heartbeats) when cluster.join is set; call once the
 * HTTP server listens. 0 or negative code. */
int hd_target_start(struct hd_target *t);
void hd_target_free(struct hd_target *t);
void hd_target_handle(struct hd_req *r, void *ctx);

#endif
