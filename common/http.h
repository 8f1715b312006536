/* http: the HTTP server glue over libmicrohttpd shared by proxy and target roles.
 * MHD runs an epoll thread pool; every callback on a request runs on the worker thread that
 * owns its connection, so a struct hd_req is touched by one thread at a time.
 *
 * Lifetime of a request: created when MHD reports the raw URI, handed to the role's handler
 * once headers are complete; the handler either responds at once or installs on_body/on_end
 * to stream the body; on_done runs exactly once when MHD is finished with the request
 * (success or not), then the request is freed. */
#ifndef HD_HTTP_H
#define HD_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/httputil.h"

#define HD_REQ_MAGIC 0x68647271u /* "hdrq" */
#define HD_HOST_ID_LEN 24        /* x-amz-id-2 / <HostId>: base64 of 16 bytes */
#define HD_TRUST_REDIRECT 1
#define HD_TRUST_NODE 2

struct MHD_Connection;
struct hd_http_server;
struct hd_http_worker;
struct hd_tls;

#ifndef HD_KV_DEFINED
#define HD_KV_DEFINED
struct hd_kv {
    const char *k;
    const char *v;
};
#endif

enum hd_api { HD_API_NATIVE, HD_API_S3 };

/* What a request is to a caller without credentials, named by the route that classified it
 * (before authentication): a public bucket lets through only what its route names. HD_PUB_NONE,
 * the zero a request starts with, is never let through: a route that says nothing is private. */
enum hd_pub {
    HD_PUB_NONE = 0,
    HD_PUB_READ, /* an object's bytes or metadata (GetObject, HeadObject, a batch GET) */
    HD_PUB_LIST, /* a bucket's listing or existence (ListObjects, HeadBucket, the native list) */
    HD_PUB_LIST_MORE, /* the listings AWS's s3:ListBucket does not cover (ListObjectVersions,
                       * ListMultipartUploads): a public-read ACL opens them, a policy not */
};

struct hd_req {
    uint32_t magic;
    struct MHD_Connection *conn;
    struct hd_http_server *srv;
    char id[17];           /* request id, also sent as x-amz-request-id */
    char bucket[64];       /* bucket named by the request, for per-bucket metrics ("" none) */
    const char *method;    /* MHD-owned */
    char *raw_uri;         /* as sent on the wire: path?query (owned) */
    char *raw_path;        /* path part of raw_uri, still percent-encoded (owned) */
    const char *raw_query; /* into raw_uri after '?', or "" */
    struct hd_query query; /* decoded query parameters */
    struct hd_kv *hdrs;    /* request headers in arrival order (MHD-owned strings) */
    size_t nhdrs;
    int64_t content_length; /* -1 when absent (e.g. chunked) */
    uint64_t t0_ns;
    int op;          /* metrics op (enum hd_metric_op) */
    enum hd_api api; /* decides the error body format */
    char *resource;  /* for error bodies; defaults to raw_path */
    /* what an S3 error body names (hd_req_err_names): NoSuchBucket's <BucketName>,
     * NoSuchKey's <Key> (owned; NULL: not named) */
    char *err_bucket, *err_key;
    int status;
    uint64_t bytes_in, bytes_out;
    int responded;
    int body_err;                  /* first error returned by on_body */
    int suspended;                 /* parked with hd_req_suspend; see below */
    char principal[144];           /* who authenticated: "node <id>", "key <access key>",
                                    * "" (anonymous or not checked); for logs */
    int pub;                       /* what r is to an unsigned caller (enum hd_pub), set by its
                                    * route before it authenticates */
    int policy_call;               /* r reads or changes the bucket's policy (its route says so
                                    * before authentication): a TLS-only policy lets an admin key
                                    * do it without TLS, so that it can be undone */
    int trusted;                   /* carries a valid proxy authorisation (cluster): 0, or
                                    * HD_TRUST_REDIRECT (a client sent by a proxy's 307) or
                                    * HD_TRUST_NODE (a proxy's relay or another node's call) */
    int64_t routed_term;           /* the cluster map version a proxy routed r by (its */
    int64_t routed_version;        /* signed psv or X-Hoard-Smap), 0.0 when none */
    const char *pub_key;           /* the object key an HD_PUB_READ names (borrowed, set with
                                    * pub for its authorisation only; NULL: none), for a policy
                                    * that makes some objects public */
    int dispatched;                /* the role handler has run */
    int early;                     /* inside MHD's first call (headers only, body not read) */
    struct MHD_Response *deferred; /* an early answer held until the body is drained */
    int deferred_status;
    /* the body SHA-256 a node signed (common/nodeauth.c); when set, the body is hashed as it
     * arrives and a mismatch is answered (403) instead of calling on_end */
    char body_sha256[65];
    void *body_md; /* EVP_MD_CTX */
    int body_checked;
    int public_grant; /* r was let in only by what everyone may do (its bucket is public), not by
                       * its credentials: a proxy's 307 capability says so (ppub), and the target
                       * checks again that the bucket is still public when the client arrives */
    int public_source; /* r's CopyObject source was let in only because everyone may read it:
                        * a proxy relays such a copy instead of a 307 (hd_keys_authorize) */
    /* signs buffered answers (hd_resp_buf and what builds on it) just before they are sent:
     * set for node calls whose answers drive decisions (hd_nodeauth_sign_answers) */
    int (*resp_sign)(void *arg, struct hd_req *r, int status, const void *body, size_t len);
    void *resp_sign_arg;

    /* pending response headers, copied */
    struct hd_kv *rh;
    size_t nrh, caprh;
    /* headers that replace the pending ones of the same name in a 2xx answer (copied;
     * hd_resp_override) */
    struct hd_kv *ovr;
    size_t novr;
    /* more response headers, borrowed: added after rh by the next response queued (and
     * forgotten then); the caller clears them if nothing was queued */
    const struct hd_kv *xh;
    size_t nxh;

    /* handler hooks and state.
     * on_body returns 0 when it took all of data, a negative code on error, or, for flow
     * control after calling hd_req_suspend, the count n < len of bytes taken (HD_BODY_WAIT
     * for none): the rest is delivered again once the request is resumed. on_end may also
     * suspend instead of responding; it is called again after hd_req_resume. */
    int (*on_body)(struct hd_req *r, const char *data, size_t len);
    void (*on_end)(struct hd_req *r);
    void (*on_done)(struct hd_req *r);
    void *data;

    /* deferred before dispatch (hd_req_defer): how often, and what undoes it */
    int deferrals;
    void (*on_undefer)(struct hd_req *r);
    void *defer_data;

    /* parked connections, so that hd_http_stop can resume them first (http.c only) */
    struct hd_req *park_prev, *park_next;
    int parked;
    struct hd_http_worker *worker; /* loop mode: the worker whose daemon has the connection */
};

typedef void (*hd_http_handler_fn)(struct hd_req *r, void *ctx);

struct hd_http_cfg {
    const char *listen; /* host:port */
    int threads;        /* 0 = one per core */
    int timeout_s;
    int max_conns;
    int mem_limit;
    hd_http_handler_fn handler;
    void *ctx;
    struct hd_tls *tls; /* serve https with these credentials (common/tls.h); NULL: http */
    /* 1: each worker thread runs a libuv loop around its own libmicrohttpd daemon (external
     * epoll mode); handlers may put their own sockets on it (hd_http_loop). 0: a
     * libmicrohttpd thread pool. */
    int loops;
};

int hd_http_start(const struct hd_http_cfg *cfg, struct hd_http_server **out);
void hd_http_stop(struct hd_http_server *s);
/* The port the server listens on (what port 0 in cfg->listen became). */
int hd_http_port(const struct hd_http_server *s);
/* Loop mode: the libuv loop (uv_loop_t *) of the worker thread calling, NULL on any other
 * thread or in thread-pool mode. Everything on it runs on that thread, between the
 * daemon's callbacks. */
void *hd_http_loop(void);
/* Loop mode, on a worker thread: fn(arg) runs on that thread when the server stops, after
 * every request of the worker has ended and before its loop closes (to close what the
 * caller put on the loop). -ENOSPC when the worker has no slot left or this is no worker. */
int hd_http_loop_at_stop(void (*fn)(void *arg), void *arg);

/* Case-insensitive header lookup; first value or NULL. */
const char *hd_req_header(const struct hd_req *r, const char *name);
/* 1 when r came over TLS (the server serves https). */
int hd_req_secure(const struct hd_req *r);
/* How many times header name appears. */
size_t hd_req_header_count(const struct hd_req *r, const char *name);
const char *hd_req_param(const struct hd_req *r, const char *key);
const char *hd_req_remote(const struct hd_req *r, char *buf, size_t len);

/* Adds a response header (copied). Must precede the hd_resp_* call. An empty value is sent
 * as an empty field value (libmicrohttpd refuses "", so it goes out as one space, which
 * RFC 7230's optional whitespace makes an empty value for every client). */
int hd_resp_header(struct hd_req *r, const char *name, const char *value);
/* Sets a header that, if r is answered 200 or 206, replaces every pending header of that
 * name (S3's response-* query parameters); other answers ignore it. Copied. */
int hd_resp_override(struct hd_req *r, const char *name, const char *value);

/* Responses. Each may be called once per request; later calls are ignored. */
int hd_resp_buf(struct hd_req *r, int status, const char *ctype, char *data, size_t len);
int hd_resp_copy(struct hd_req *r, int status, const char *ctype, const char *data, size_t len);
/* The Range header of r against an object of `size` bytes: 206 with *off, *len and a
 * Content-Range header added, 200 with the whole object (no or ignorable Range), or, when
 * unsatisfiable, answers 416 itself (with the unsatisfied-range Content-Range) and returns < 0. */
int hd_resp_range(struct hd_req *r, uint64_t size, uint64_t *off, uint64_t *len);
/* An application/xml answer from b's bytes (taken; b is left empty), or 500 when building b
 * ran out of memory. */
void hd_resp_xml(struct hd_req *r, int status, struct hd_buf *b);
int hd_resp_empty(struct hd_req *r, int status);
/* Serves [off, off+len) of fd with sendfile. fd belongs to the response on success, stays
 * the caller's on failure (negative return). */
int hd_resp_fd(struct hd_req *r, int status, int fd, uint64_t off, uint64_t len);
/* A body-less response that still advertises Content-Length: len (for HEAD). */
int hd_resp_head(struct hd_req *r, int status, uint64_t len);
/* Error response from the errors table: S3 XML or native JSON per r->api. */
int hd_resp_err(struct hd_req *r, int code);
int hd_resp_err_msg(struct hd_req *r, int code, const char *message);
/* The same with extra elements after <Message> in an S3 error body (<Condition>,
 * <ArgumentName> ...: extra[i].k is the element, .v its text); the native JSON body leaves
 * them out. */
int hd_resp_err_ex(struct hd_req *r, int code, const char *message, const struct hd_kv *extra,
                   size_t nextra);
/* That error's document appended to b (with the XML declaration when decl), for a body that
 * reports an error after a 200 went out (CompleteMultipartUpload's keep-alive). */
void hd_err_doc(struct hd_req *r, int code, const char *message, const struct hd_kv *extra,
                size_t nextra, int decl, struct hd_buf *b);
/* The bucket and key (decoded, copied; NULL: none) that an S3 error body names from now on:
 * <BucketName> in NoSuchBucket, <Key> in NoSuchKey, as AWS sends them (NoSuchUpload's
 * <UploadId> comes from the query). The S3 front end sets the request's own names; a call
 * whose error is about other names (a copy source) sets those before answering. 0 or -ENOMEM. */
int hd_req_err_names(struct hd_req *r, const char *bucket, const char *key);
/* GET /metrics: every counter in Prometheus text format (common/metrics.h). */
void hd_resp_metrics(struct hd_req *r);
/* The bearer token /metrics requires from now on (metrics.token; NULL or "" = open). Call
 * before the server starts. */
void hd_http_metrics_token(const char *token);
/* A JSON answer (native API); takes j (json_decref), 500 when j is NULL or on OOM. */
struct json_t;
void hd_resp_json(struct hd_req *r, int status, struct json_t *j);
/* 409 Conflict with a JSON error body (a stale cluster map version, say): a status outside
 * the errors table. */
void hd_resp_conflict(struct hd_req *r, const char *msg);

/* Flow control (libmicrohttpd suspend/resume). suspend: only from this request's callbacks on
 * its worker thread. resume: from any thread, exactly once per suspend; a no-op once
 * hd_http_stop has resumed every parked connection (libmicrohttpd refuses to stop with
 * suspended ones). */
void hd_req_suspend(struct hd_req *r);
void hd_req_resume(struct hd_req *r);
/* Reads r's whole body (at most max bytes: HD_ETOOLARGE past it, or a body error, is answered
 * here) and then, from on_end, calls done(r, ctx, body, len): body is NUL-terminated and
 * valid during the call, r's hooks are cleared first (done may install its own). ctx is freed
 * with ctx_free (if not NULL) once done has returned, or when the request ends before.
 * Installs r's hooks; any thread that may, the HTTP worker. */
typedef void (*hd_body_fn)(struct hd_req *r, void *ctx, const char *body, size_t len);
/* Body bytes the HTTP layer reads and drops to deliver an answer given before the body (a
 * 307, an auth error) to a client that sends its body at once; past this the answer is sent
 * and the connection closed, which such a client may see as a reset. */
#define HD_HTTP_DRAIN_MAX (4u << 20)
/* 1 when r's body is coming without "Expect: 100-continue" and is longer than
 * HD_HTTP_DRAIN_MAX (or of unknown length): an early answer would likely not reach it. */
int hd_req_body_unannounced(const struct hd_req *r);
/* 1 when r has a body (a Content-Length above 0, or chunked) coming without
 * "Expect: 100-continue": the client sends it at once, whatever the answer. */
int hd_req_body_sent_at_once(const struct hd_req *r);
void hd_req_read_body(struct hd_req *r, size_t max, hd_body_fn done, void *ctx,
                      void (*ctx_free)(void *ctx));
/* The same for a JSON body: done(r, ctx, j) with the parsed document (NULL for an empty
 * body; a body that is not JSON is answered 400 here). j is borrowed. */
typedef void (*hd_json_fn)(struct hd_req *r, void *ctx, struct json_t *j);
void hd_req_read_json(struct hd_req *r, size_t max, hd_json_fn done, void *ctx,
                      void (*ctx_free)(void *ctx));

/* Parks r from its role handler before anything was answered or installed: once resumed
 * (hd_req_resume, any thread), the role handler runs again from the start, with
 * r->deferrals counting the deferrals. on_undefer(r) runs exactly once, on the worker, before
 * that second run or when the request ends first (the client left, shutdown): it must
 * forget r. data is kept in r->defer_data for it. */
void hd_req_defer(struct hd_req *r, void (*on_undefer)(struct hd_req *r), void *data);
/* Queues a response whose body is produced by `reader` (MHD content-reader semantics:
 * return bytes written, 0 after hd_req_suspend when no data is ready yet, HD_STREAM_END when
 * done (needed for unknown sizes), or HD_STREAM_ERROR to abort the connection). size may be
 * UINT64_MAX for unknown (chunked). free_cb runs when MHD drops the
 * response. When it returns an error, free_cb has not run and never will: cls is still
 * the caller's. */
#define HD_BODY_WAIT 0x7fffffff
#define HD_STREAM_END (-2)
#define HD_STREAM_ERROR (-1)
typedef long (*hd_body_reader_fn)(void *cls, uint64_t pos, char *buf, size_t max);
int hd_resp_stream(struct hd_req *r, int status, uint64_t size, hd_body_reader_fn reader, void *cls,
                   void (*free_cb)(void *cls));
/* Queues a response whose whole body is data[0..len), borrowed (no copy) until MHD drops
 * the response, then free_cb(cls) runs. libmicrohttpd sends the head and a body of this kind
 * in one write. Like hd_resp_stream, the body is not node-signed. Unlike hd_resp_stream, the
 * body is handed over in every case: on an error free_cb(cls) has run when this returns. */
int hd_resp_mem(struct hd_req *r, int status, const void *data, size_t len,
                void (*free_cb)(void *cls), void *cls);

uint64_t hd_now_ns(void);
/* Returns freed heap to the system (malloc_trim) after each 3 s window with fewer than 48
 * requests, and every fifth window (15 s) whatever the load. Call it from one periodic thread
 * (hoardd's main thread, every second); 1 when it trimmed because the node was quiet, 2 when
 * it trimmed after five busy windows, 0 when it did not trim. */
int hd_http_idle_trim(void);

#endif
