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
/* hoardd --prestop: before this target stops for a restart, hands its objects over to the
 * other targets (maintenance until it rejoins, then a rebalance) and waits for that, at most
 * timeout_s seconds. 0, or -1 with why in err. */
#include <stdio.h>
int hd_target_prestop(const struct hd_config *cfg, long timeout_s, FILE *out, char *err,
                      size_t errlen);

#endif
