/* proxy: the gateway role. Redirects native object requests to the owning target (HRW over
 * the smap), keeps the bucket metadata (BMD), merges listings from the targets and runs
 * membership (the primary: joins, heartbeats, failure detection, metasync; other proxies:
 * join and heartbeat). hd_proxy_handle runs on HTTP worker threads; membership timers run
 * on the proxy's own libuv loop thread, the primary's lease renewal on a thread of its own. */
#ifndef HD_PROXY_H
#define HD_PROXY_H

#include "common/config.h"
#include "common/http.h"

struct hd_proxy;

/* Loads (or creates) the node id, smap and BMD from DATA/node.db. The proxy keeps no
 * pointer to cfg after returning. */
int hd_proxy_new(const struct hd_config *cfg, struct hd_proxy **out);
/* Starts the membership loop thread and the lease thread; call once the HTTP server is
 * listening. */
int hd_proxy_start(struct hd_proxy *p);
/* Stops both threads (if started) and frees everything; NULL is a no-op. Call after the
 * HTTP server has stopped. */
void hd_proxy_free(struct hd_proxy *p);
/* The HTTP handler (hd_http_handler_fn); ctx is the struct hd_proxy. */
void hd_proxy_handle(struct hd_req *r, void *ctx);

/* The S3 API on the proxy (path style at "/" and "/s3/", virtual-host style with
 * s3.domain): SigV4-authenticated bucket calls served from the BMD and merged listings;
 * object calls are redirected (s3.redirect) or relayed. Defined in proxy/s3.c; this is the
 * single entry point the relay hooks into. */
void hd_proxy_s3(struct hd_req *r, struct hd_proxy *p);

#endif
