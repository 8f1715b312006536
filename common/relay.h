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

/* Starts relaying r to url (absolute, with the query to send). All client headers are
 * forwarded (Host included, so SigV4 still verifies) except hop-by-hop ones; extra headers
 * are added. Installs r's on_body/on_end/on_done. On failure (too many relays, no memory,
 * relay loop stopped) returns a negative code and the caller answers. Starts the loop thread
 * on first use. */
int hd_relay_start(struct hd_req *r, const char *url, const struct hd_kv *extra, size_t nextra);
/* Upper bound on concurrent relays (each may hold two windows). Default 256. */
void hd_relay_set_max(int n);
/* Aborts the transfers still running and joins the loop thread. Call after hd_http_stop (no
 * request may still use a relay); a later hd_relay_start starts a new loop. */
void hd_relay_stop(void);

#endif
