/* relay: streams one client request to another hoard node and the answer back (the proxy's
 * S3 path), with bounded buffers in both directions: never the whole object in memory.
 * The node side runs on one event-loop thread (libuv + a libcurl multi handle, every curl
 * call there); the client side stays on the MHD worker and parks its connection
 * (suspend/resume) while a buffer is empty or full. No thread per relay.
 * Call hd_relay_start from the request's first handler call (HTTP worker thread). */
#ifndef HD_RELAY_H
#define HD_RELAY_H

#include <stddef.h>

#include "common/http.h"

/* Relay window per direction, bytes. */
#define HD_RELAY_BUF (1024u * 1024)

struct hd_relay;

/* A relay with at most max transfers at once (each may hold two windows). Its loop thread
 * starts on first use. */
int hd_relay_new(int max, struct hd_relay **out);
/* Starts relaying r to url (absolute, with the query to send). All client headers are
 * forwarded (Host included, so SigV4 still verifies) except hop-by-hop ones; extra headers
 * are added. Installs r's on_body/on_end/on_done. On failure (too many relays, no memory,
 * relay loop stopped) returns a negative code and the caller answers. */
int hd_relay_start(struct hd_relay *rl, struct hd_req *r, const char *url,
                   const struct hd_kv *extra, size_t nextra);
/* Relays started and not yet finished (any thread). */
int hd_relay_inflight(struct hd_relay *rl);
/* Aborts the transfers still running, joins the loop thread (logging an error if the loop
 * closed with handles open) and frees. Call after hd_http_stop: no request may still use
 * the relay. NULL is a no-op. */
void hd_relay_free(struct hd_relay *rl);

#endif
