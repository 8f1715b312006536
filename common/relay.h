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
/* A relay that changes what it forwards (POST Object: the form's file becomes a PUT's body,
 * and the node's answer becomes the form's). Its calls run on the request's HTTP worker.
 * The client's headers are not forwarded: only the extra ones are sent, with `method`, and
 * the body goes chunked. */
typedef void (*hd_relay_out_fn)(void *oarg, const char *p, size_t len);
struct hd_relay_filter {
    const char *method;
    /* Turns n client bytes into body bytes for the node, at most n + HD_RELAY_FILTER_SLACK,
     * each handed to out (which takes them all). A negative code aborts the node's transfer
     * (it never sees a complete body); the rest of the client's body is dropped and end is
     * asked for the answer. */
    int (*body)(void *arg, const char *data, size_t n, hd_relay_out_fn out, void *oarg);
    /* The client's body is complete (or body failed): 0 lets the node's body end (out may
     * still be given up to HD_RELAY_FILTER_SLACK bytes first); a negative code, with *msg
     * (NULL: the table's) aborts the transfer and is answered. */
    int (*end)(void *arg, hd_relay_out_fn out, void *oarg, const char **msg);
    /* The node's whole answer (headers and body): answers r and returns HD_DONE, or returns
     * HD_DECLINED to pass it on as it is. */
    int (*answer)(void *arg, struct hd_req *r, long status, const struct hd_kv *h, size_t nh,
                  const char *body, size_t len);
    void (*free)(void *arg); /* once the request is finished */
};
#define HD_RELAY_FILTER_SLACK (64u * 1024)
/* hd_relay_start with a filter f (static) and its arg, the relay's once started (the
 * caller's on failure); first[0..nfirst) (at most HD_RELAY_FILTER_SLACK bytes) opens the
 * node's body. */
int hd_relay_start_filtered(struct hd_relay *rl, struct hd_req *r, const char *url,
                            const struct hd_kv *extra, size_t nextra,
                            const struct hd_relay_filter *f, void *arg, const char *first,
                            size_t nfirst);
/* Relays started and not yet finished (any thread). */
int hd_relay_inflight(struct hd_relay *rl);
/* Aborts the transfers still running, joins the loop thread (logging an error if the loop
 * closed with handles open) and frees. Call after hd_http_stop: no request may still use
 * the relay. NULL is a no-op. */
void hd_relay_free(struct hd_relay *rl);

#endif
