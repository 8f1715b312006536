/* httpc: a small blocking HTTP client over libcurl for intra-cluster calls (join, heartbeat,
 * metasync, listing and bucket fan-out). Any thread may call it and blocks for at most the
 * call's total timeout. Each calling thread keeps one curl multi handle (freed when the thread
 * exits), whose connection cache lets repeated calls to the same node reuse connections. */
#ifndef HD_HTTPC_H
#define HD_HTTPC_H

#include <stddef.h>

#include <jansson.h>

#include "common/buf.h"
#include "common/nodeauth.h"

#ifndef HD_KV_DEFINED
#define HD_KV_DEFINED
struct hd_kv {
    const char *k;
    const char *v;
};
#endif

/* Largest response body kept; a longer one fails the call with -EFBIG. */
#define HD_HTTPC_MAX_BODY (64u << 20)
#define HD_HTTPC_CONNECT_MS 2000
#define HD_HTTPC_TOTAL_MS 10000

/* One request and its outcome. Inputs are borrowed until the call returns; the caller
 * embeds the struct and releases it with hd_httpc_call_cleanup. */
struct hd_httpc_call {
    const char *method;
    const char *url;          /* absolute, already percent-encoded */
    const struct hd_kv *hdrs; /* extra request headers */
    size_t nhdrs;
    const char *body; /* NULL: no body */
    size_t blen;
    const char *ctype; /* Content-Type of body, NULL = none */
    long connect_ms;   /* 0: HD_HTTPC_CONNECT_MS */
    long total_ms;     /* 0: HD_HTTPC_TOTAL_MS */
    /* node signature (common/nodeauth.h): with na set, the call is signed for recipient `to`
     * (a node id; "": HD_NODEAUTH_ANY) over the body and hdrs; with signed_resp also set,
     * an answer not signed by `to` (or, for HD_NODEAUTH_ANY, by the node it names) fails
     * the call with -EACCES */
    struct hd_nodeauth *na;
    char to[HD_NODEAUTH_ID_MAX + 1];
    int signed_resp;
    int fresh; /* a new connection, closed after: the answer must not wait behind another
                * request on a cached connection's server thread (a commit to a proxy whose
                * worker forwards the very change being committed) */

    int rc;             /* 0: an HTTP answer arrived (any status); else -ETIMEDOUT,
                         * -ECONNREFUSED, -EFBIG, -ENOMEM or -EIO */
    long status;        /* HTTP status when rc == 0 */
    struct hd_buf resp; /* response body */
    char err[128];      /* transport error text when rc < 0 */
    char resp_node[HD_NODEAUTH_ID_MAX + 1]; /* X-Hoard-Node of the answer, if any */
    char resp_sig[65];                      /* X-Hoard-Signature of the answer, if any */
    struct hd_nodesig sig;                  /* what was sent (the nonce binds the answer) */
};

void hd_httpc_call_init(struct hd_httpc_call *c, const char *method, const char *url);
void hd_httpc_call_cleanup(struct hd_httpc_call *c);

/* Runs one call; returns c->rc. */
int hd_httpc_run(struct hd_httpc_call *c);
/* Runs n calls concurrently, at most `parallel` at a time (0 = all), and returns when every
 * one has finished; each call's own rc/status tell how it went. Returns 0, or -ENOMEM when
 * the calls could not be started at all (every rc is then set). */
int hd_httpc_run_all(struct hd_httpc_call *calls, size_t n, size_t parallel);

/* JSON round trip signed by na for node `to` (see struct hd_httpc_call; the answer must be
 * signed too): sends `in` (NULL: no body) and parses a JSON answer into *out (NULL when the
 * body is empty or not JSON). Returns the transport rc (-EACCES for an answer without a valid
 * signature); *status gets the HTTP status. */
int hd_httpc_json(struct hd_nodeauth *na, const char *to, const char *method, const char *url,
                  const json_t *in, long total_ms, long *status, json_t **out);

#endif
