#include "common/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <malloc.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>
#include <openssl/crypto.h>
#include <uv.h>
#include <openssl/evp.h>

#include "common/buf.h"
#include "common/cksum.h"
#include "common/errors.h"
#include "common/json.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/tls.h"
#include "common/xml.h"

/* Loop mode (hd_http_cfg.loops): each worker thread owns a libmicrohttpd daemon in external
 * epoll mode and a libuv loop that watches the daemon's epoll descriptor, so code running on
 * the worker (the proxy's relay) can put its own sockets on the same loop. */
#define LOOP_HOOKS 4

struct hd_http_worker {
    struct hd_http_server *s;
    struct MHD_Daemon *d;
    pthread_t thr;
    uv_loop_t uv;
    uv_poll_t poll;    /* the daemon's epoll descriptor */
    uv_timer_t timer;  /* the daemon's next timeout */
    uv_prepare_t prep; /* re-arms `timer` before the loop blocks */
    uv_async_t stop;   /* hd_http_stop */
    uv_async_t wake;   /* a connection was resumed from another thread */
    uv_idle_t soon;    /* a connection was resumed from this thread */
    struct {
        void (*fn)(void *arg);
        void *arg;
    } hooks[LOOP_HOOKS]; /* hd_http_loop_at_stop */
    int nhooks;
    int started; /* the thread runs */
};

struct hd_http_server {
    struct MHD_Daemon *d; /* thread-pool mode; in loop mode the first worker's */
    struct hd_http_worker *w;
    unsigned nw;
    hd_http_handler_fn handler;
    void *ctx;
    pthread_mutex_t park_mu; /* the parked list and `stopping` */
    struct hd_req *parked;
    int stopping;
    int tls; /* serves https: file bodies go through read + encrypt, not sendfile */
};

static _Thread_local struct hd_http_worker *cur_worker;
static void on_worker_soon(uv_idle_t *h);

static _Atomic uint64_t req_seq;
static uint64_t req_salt;

uint64_t hd_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Idle trim. glibc keeps what a burst freed in each thread's arena (server/main.c keeps the
 * thresholds high so busy paths do not fault pages in again; the proxy rested at 157 MiB
 * after a benchmark). Once a window of at least HD_TRIM_WINDOW_NS has seen requests at less
 * than HD_TRIM_QUIET per HD_TRIM_WINDOW_NS (heartbeats and probes keep coming: a quiet node is
 * never fully idle), give the free memory back. A node that is never that quiet (the primary
 * of a large cluster gets a heartbeat per node per second; a steady trickle of clients) trims
 * anyway every HD_TRIM_FORCE windows: one trim costs a few milliseconds and the page faults
 * of refilling what is in use, nothing next to 15 s of serving. The caller is one periodic
 * thread (hoardd's main thread). */
#define HD_TRIM_WINDOW_NS (3 * 1000000000ull)
#define HD_TRIM_QUIET 48
#define HD_TRIM_FORCE 5

int hd_http_idle_trim(void)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static uint64_t seen, since;
    static unsigned busy; /* windows since the last trim */
    uint64_t seq = atomic_load(&req_seq), now = hd_now_ns();
    int trim = 0;

    pthread_mutex_lock(&mu);
    if (!since) {
        since = now;
        seen = seq;
    } else if (now - since >= HD_TRIM_WINDOW_NS) {
        /* a rate: a slow tick (heartbeats timing out) makes a long window */
        trim = (seq - seen) * HD_TRIM_WINDOW_NS < (uint64_t)HD_TRIM_QUIET * (now - since);
        if (!trim && ++busy >= HD_TRIM_FORCE)
            trim = 2;
        if (trim)
            busy = 0;
        since = now;
        seen = seq;
    }
    pthread_mutex_unlock(&mu);
    if (trim)
        malloc_trim(0);
    return trim;
}

static void req_free(struct hd_req *r)
{
    size_t i;

    if (!r)
        return;
    for (i = 0; i < r->nrh; i++) {
        free((char *)r->rh[i].k);
        free((char *)r->rh[i].v);
    }
    for (i = 0; i < r->novr; i++) {
        free((char *)r->ovr[i].k);
        free((char *)r->ovr[i].v);
    }
    free(r->ovr);
    if (r->deferred)
        MHD_destroy_response(r->deferred);
    free(r->rh);
    EVP_MD_CTX_free(r->body_md);
    free(r->hdrs);
    hd_query_free(&r->query);
    free(r->raw_uri);
    free(r->raw_path);
    free(r->resource);
    free(r->err_bucket);
    free(r->err_key);
    r->magic = 0;
    free(r);
}

/* MHD hands us the URI exactly as sent, before any unescaping: keep it for SigV4 and for
 * our own decoding (MHD's decoded `url` is never used). The return value becomes con_cls. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    struct hd_http_server *s = cls;
    struct hd_req *r = calloc(1, sizeof(*r));
    const char *q;
    uint64_t id;

    if (!r)
        return NULL;
    r->magic = HD_REQ_MAGIC;
    r->conn = conn;
    r->srv = s;
    r->worker = cur_worker;
    r->t0_ns = hd_now_ns();
    r->content_length = -1;
    id = (atomic_fetch_add(&req_seq, 1) + 1) * 0x9e3779b97f4a7c15ull ^ req_salt;
    snprintf(r->id, sizeof(r->id), "%016llX", (unsigned long long)id);
    r->raw_uri = strdup(uri ? uri : "/");
    if (!r->raw_uri) {
        free(r);
        return NULL;
    }
    q = strchr(r->raw_uri, '?');
    r->raw_path = q ? strndup(r->raw_uri, (size_t)(q - r->raw_uri)) : strdup(r->raw_uri);
    r->raw_query = q ? q + 1 : "";
    if (!r->raw_path) {
        req_free(r);
        return NULL;
    }
    return r;
}

static enum MHD_Result collect_hdr(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
    struct hd_req *r = cls;
    struct hd_kv *n;

    if (r->nhdrs % 16 == 0) {
        n = realloc(r->hdrs, (r->nhdrs + 16) * sizeof(*n));
        if (!n)
            return MHD_NO;
        r->hdrs = n;
    }
    r->hdrs[r->nhdrs].k = k;
    r->hdrs[r->nhdrs].v = v ? v : "";
    r->nhdrs++;
    return MHD_YES;
}

int hd_req_secure(const struct hd_req *r)
{
    return r->srv && r->srv->tls;
}

const char *hd_req_header(const struct hd_req *r, const char *name)
{
    size_t i;

    for (i = 0; i < r->nhdrs; i++)
        if (strcasecmp(r->hdrs[i].k, name) == 0)
            return r->hdrs[i].v;
    return NULL;
}

const char *hd_req_param(const struct hd_req *r, const char *key)
{
    return hd_query_get(&r->query, key);
}

const char *hd_req_remote(const struct hd_req *r, char *buf, size_t len)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;

    if (!sa)
        return "-";
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, (socklen_t)len);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buf, (socklen_t)len);
    else
        return "-";
    return buf;
}

int hd_resp_header(struct hd_req *r, const char *name, const char *value)
{
    struct hd_kv *n;

    if (r->nrh == r->caprh) {
        size_t cap = r->caprh ? r->caprh * 2 : 8;
        n = realloc(r->rh, cap * sizeof(*n));
        if (!n)
            return -ENOMEM;
        r->rh = n;
        r->caprh = cap;
    }
    r->rh[r->nrh].k = strdup(name);
    r->rh[r->nrh].v = strdup(value);
    if (!r->rh[r->nrh].k || !r->rh[r->nrh].v) {
        free((char *)r->rh[r->nrh].k);
        free((char *)r->rh[r->nrh].v);
        return -ENOMEM;
    }
    r->nrh++;
    return 0;
}

int hd_resp_override(struct hd_req *r, const char *name, const char *value)
{
    struct hd_kv *n = realloc(r->ovr, (r->novr + 1) * sizeof(*n));

    if (!n)
        return -ENOMEM;
    r->ovr = n;
    n[r->novr].k = strdup(name);
    n[r->novr].v = strdup(value);
    if (!n[r->novr].k || !n[r->novr].v) {
        free((char *)n[r->novr].k);
        free((char *)n[r->novr].v);
        return -ENOMEM;
    }
    r->novr++;
    return 0;
}

/* libmicrohttpd 0.9.75 refuses an empty header value (MHD_add_response_header answers MHD_NO
 * for ""), which would silently drop e.g. an x-amz-meta-* stored empty. One space is, on the
 * wire, an empty field value after optional whitespace (RFC 7230 3.2), and every client
 * reads it as "". */
static void add_header(struct MHD_Response *resp, const char *k, const char *v)
{
    MHD_add_response_header(resp, k, *v ? v : " ");
}

static int overridden(const struct hd_req *r, int status, const char *k)
{
    size_t i;

    if (status != 200 && status != 206)
        return 0;
    for (i = 0; i < r->novr; i++)
        if (strcasecmp(r->ovr[i].k, k) == 0)
            return 1;
    return 0;
}

/* An answer given before a request's body was read (a redirect, an auth error) makes
 * libmicrohttpd close the connection right after it; a client still sending the body then
 * gets a TCP reset, often before it has read the answer. So unless the client waits for
 * "100 Continue" (then it has sent nothing), the answer is held while up to DRAIN_MAX body
 * bytes are read and dropped; a longer body gets the answer at that point (and the close). */
#define DRAIN_MAX HD_HTTP_DRAIN_MAX

static int send_deferred(struct hd_req *r)
{
    struct MHD_Response *resp = r->deferred;
    enum MHD_Result ok;

    r->deferred = NULL;
    ok = MHD_queue_response(r->conn, (unsigned)r->deferred_status, resp);
    MHD_destroy_response(resp);
    return ok == MHD_YES ? 0 : -EIO;
}

int hd_req_body_unannounced(const struct hd_req *r)
{
    const char *expect = hd_req_header(r, "Expect");

    if (expect && strcasecmp(expect, "100-continue") == 0)
        return 0;
    return r->content_length > (int64_t)DRAIN_MAX ||
           (r->content_length < 0 && hd_req_header(r, "Transfer-Encoding") != NULL);
}

int hd_req_body_sent_at_once(const struct hd_req *r)
{
    const char *expect = hd_req_header(r, "Expect");

    if (expect && strcasecmp(expect, "100-continue") == 0)
        return 0;
    return r->content_length > 0 ||
           (r->content_length < 0 && hd_req_header(r, "Transfer-Encoding") != NULL);
}

static int body_unread(const struct hd_req *r)
{
    return hd_req_body_sent_at_once(r) && r->content_length <= (int64_t)DRAIN_MAX;
}

/* The x-amz-id-2 of a request (AWS's "extended request id", <HostId> in error bodies):
 * opaque, derived from the request id alone, so that a proxy relaying a target's answer
 * (which takes the target's request id) sends the same value the target put in the body.
 * base64 of two XXH64 of the id: 24 characters. */
static void host_id(const char *id, char out[HD_HOST_ID_LEN + 1])
{
    unsigned char d[16];
    size_t n = strlen(id);
    uint64_t a = hd_xxh64(id, n, 0x68a0d), b = hd_xxh64(id, n, 0x1d2);

    for (int i = 0; i < 8; i++) {
        d[i] = (unsigned char)(a >> (8 * i));
        d[8 + i] = (unsigned char)(b >> (8 * i));
    }
    if (hd_b64_encode(d, sizeof(d), out, HD_HOST_ID_LEN + 1) < 0)
        out[0] = '\0';
}

/* disown (may be NULL) runs before a response MHD refused is destroyed: hd_resp_stream uses
 * it so that the caller, told of the failure, still owns its reader's state. */
static int queue_ex(struct hd_req *r, int status, struct MHD_Response *resp, uint64_t len,
                    void (*disown)(void *arg), void *arg)
{
    size_t i;
    enum MHD_Result ok;
    char hid[HD_HOST_ID_LEN + 1];

    if (!resp)
        return -ENOMEM;
    MHD_add_response_header(resp, "x-amz-request-id", r->id);
    host_id(r->id, hid);
    MHD_add_response_header(resp, "x-amz-id-2", hid);
    MHD_add_response_header(resp, "Server", "hoard");
    for (i = 0; i < r->nrh; i++)
        if (!overridden(r, status, r->rh[i].k))
            add_header(resp, r->rh[i].k, r->rh[i].v);
    for (i = 0; i < r->nxh; i++)
        if (!overridden(r, status, r->xh[i].k))
            add_header(resp, r->xh[i].k, r->xh[i].v);
    r->xh = NULL;
    r->nxh = 0;
    for (i = 0; i < r->novr; i++)
        if (overridden(r, status, r->ovr[i].k))
            add_header(resp, r->ovr[i].k, r->ovr[i].v);
    if (r->early && body_unread(r)) {
        r->deferred = resp;
        r->deferred_status = status;
    } else {
        ok = MHD_queue_response(r->conn, (unsigned)status, resp);
        if (ok != MHD_YES) {
            HD_LOG(HD_WARN, r->id, "http: MHD refused the %d answer to %s %s", status, r->method,
                   r->raw_path ? r->raw_path : "");
            if (disown)
                disown(arg);
        }
        MHD_destroy_response(resp);
        if (ok != MHD_YES)
            return -EIO;
    }
    r->responded = 1;
    r->status = status;
    if (strcmp(r->method, "HEAD") != 0 && status != 304 && status != 204)
        r->bytes_out = len;
    return 0;
}

static int queue(struct hd_req *r, int status, struct MHD_Response *resp, uint64_t len)
{
    return queue_ex(r, status, resp, len, NULL, NULL);
}

int hd_resp_buf(struct hd_req *r, int status, const char *ctype, char *data, size_t len)
{
    struct MHD_Response *resp;

    if (r->responded) {
        free(data);
        return -EALREADY;
    }
    if (r->resp_sign && r->resp_sign(r->resp_sign_arg, r, status, data, len) < 0) {
        free(data);
        return -ENOMEM;
    }
    resp = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(data);
        return -ENOMEM;
    }
    if (ctype)
        MHD_add_response_header(resp, "Content-Type", ctype);
    return queue(r, status, resp, len);
}

int hd_resp_range(struct hd_req *r, uint64_t size, uint64_t *off, uint64_t *len)
{
    char cr[96];
    int rc = hd_range_parse(hd_req_header(r, "Range"), size, off, len);

    if (rc < 0) {
        char sz[24];
        /* AWS names the range asked for and the object's size in the body */
        const struct hd_kv ex[] = {{"RangeRequested", hd_req_header(r, "Range")},
                                   {"ActualObjectSize", sz}};
        snprintf(cr, sizeof(cr), "bytes */%llu", (unsigned long long)size);
        snprintf(sz, sizeof(sz), "%llu", (unsigned long long)size);
        hd_resp_header(r, "Content-Range", cr);
        hd_resp_err_ex(r, rc, NULL, ex, rc == HD_ERANGE && ex[0].v ? 2 : 0);
        return rc;
    }
    if (rc == 0) {
        snprintf(cr, sizeof(cr), "bytes %llu-%llu/%llu", (unsigned long long)*off,
                 (unsigned long long)(*off + *len - 1), (unsigned long long)size);
        hd_resp_header(r, "Content-Range", cr);
        return 206;
    }
    *off = 0;
    *len = size;
    return 200;
}

void hd_resp_xml(struct hd_req *r, int status, struct hd_buf *b)
{
    size_t len;
    char *s;

    if (b->oom) {
        hd_buf_cleanup(b);
        hd_resp_err(r, -ENOMEM);
        return;
    }
    s = hd_buf_steal(b, &len);
    hd_resp_buf(r, status, "application/xml", s, len);
}

int hd_resp_copy(struct hd_req *r, int status, const char *ctype, const char *data, size_t len)
{
    char *p = malloc(len ? len : 1);

    if (!p)
        return -ENOMEM;
    if (len)
        memcpy(p, data, len);
    return hd_resp_buf(r, status, ctype, p, len);
}

int hd_resp_empty(struct hd_req *r, int status)
{
    return hd_resp_buf(r, status, NULL, NULL, 0);
}

/* target/store.h HD_STORE_SHARED_MAX relies on this: a body up to it is read with pread */
#define HD_SMALL_BODY (64 * 1024)

#define TLS_FILE_BLOCK (256 * 1024)

struct fd_body {
    int fd;
    uint64_t off;
};

static ssize_t fd_body_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct fd_body *fb = cls;
    ssize_t n;

    do
        n = pread(fb->fd, buf, max, (off_t)(fb->off + pos));
    while (n < 0 && errno == EINTR);
    return n > 0 ? n : MHD_CONTENT_READER_END_WITH_ERROR; /* short file: abort, never hang */
}

static void fd_body_free(void *cls)
{
    struct fd_body *fb = cls;

    close(fb->fd);
    free(fb);
}

int hd_resp_fd(struct hd_req *r, int status, int fd, uint64_t off, uint64_t len)
{
    struct MHD_Response *resp;

    if (r->responded)
        return -EALREADY;
    if (len <= HD_SMALL_BODY) {
        /* One read into memory lets MHD send headers and body in a single write; sendfile
         * costs an extra syscall and packet per response, which dominates small GETs. */
        char *p = malloc(len ? len : 1);
        size_t got = 0;
        if (!p)
            return -ENOMEM;
        while (got < len) {
            ssize_t n = pread(fd, p + got, len - got, (off_t)(off + got));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                free(p);
                return n < 0 ? -errno : -EIO;
            }
            got += (size_t)n;
        }
        close(fd);
        hd_resp_buf(r, status, NULL, p, len);
        return 0;
    }
    if (r->srv && r->srv->tls) {
        /* no sendfile under TLS: libmicrohttpd's file responses then read 4 KiB at a time,
         * and each read became one TLS record and one sendmsg (measured: 0.6 x nginx on 10
         * MiB GETs). Larger reads fill whole 16 KiB records, several per wakeup. */
        struct fd_body *fb = malloc(sizeof(*fb));
        if (!fb)
            return -ENOMEM;
        fb->fd = fd;
        fb->off = off;
        resp =
            MHD_create_response_from_callback(len, TLS_FILE_BLOCK, fd_body_read, fb, fd_body_free);
        if (!resp) {
            free(fb);
            return -ENOMEM;
        }
    } else {
        resp = MHD_create_response_from_fd_at_offset64(len, fd, off);
    }
    if (!resp)
        return -ENOMEM;
    /* From here the fd is the response's, whatever queue() says. */
    queue(r, status, resp, len);
    return 0;
}

static ssize_t no_body(void *cls, uint64_t pos, char *buf, size_t max)
{
    return MHD_CONTENT_READER_END_WITH_ERROR;
}

int hd_resp_head(struct hd_req *r, int status, uint64_t len)
{
    if (r->responded)
        return -EALREADY;
    return queue(r, status, MHD_create_response_from_callback(len, 4096, no_body, NULL, NULL), 0);
}

int hd_resp_err_msg(struct hd_req *r, int code, const char *message)
{
    return hd_resp_err_ex(r, code, message, NULL, 0);
}

int hd_req_err_names(struct hd_req *r, const char *bucket, const char *key)
{
    char *b = bucket ? strdup(bucket) : NULL, *k = key ? strdup(key) : NULL;

    if ((bucket && !b) || (key && !k)) {
        free(b);
        free(k);
        return -ENOMEM;
    }
    free(r->err_bucket);
    free(r->err_key);
    r->err_bucket = b;
    r->err_key = k;
    return 0;
}

/* The element AWS adds to an S3 error body of this code naming what was not found
 * (<BucketName>, <Key>, <UploadId>), unless the caller gave it in extra: 1 with *kv set. */
static int err_name(const struct hd_req *r, const char *s3_code, const struct hd_kv *extra,
                    size_t nextra, struct hd_kv *kv)
{
    size_t i;

    kv->v = NULL;
    if (strcmp(s3_code, "NoSuchBucket") == 0)
        *kv = (struct hd_kv){"BucketName", r->err_bucket};
    else if (strcmp(s3_code, "NoSuchKey") == 0)
        *kv = (struct hd_kv){"Key", r->err_key};
    else if (strcmp(s3_code, "NoSuchUpload") == 0)
        *kv = (struct hd_kv){"UploadId", hd_req_param(r, "uploadId")};
    if (!kv->v)
        return 0;
    for (i = 0; i < nextra; i++)
        if (strcmp(extra[i].k, kv->k) == 0)
            return 0;
    return 1;
}

void hd_err_doc(struct hd_req *r, int code, const char *message, const struct hd_kv *extra,
                size_t nextra, int decl, struct hd_buf *b)
{
    const struct hd_err_info *e = hd_err_info(code);
    const char *res = r->resource ? r->resource : r->raw_path;

    if (!message)
        message = e->message;
    if (r->api == HD_API_S3) {
        if (decl)
            hd_xml_decl(b);
        hd_xml_open(b, "Error");
        hd_xml_elem(b, "Code", e->s3_code);
        hd_xml_elem(b, "Message", message);
        struct hd_kv name;
        for (size_t i = 0; i < nextra; i++)
            hd_xml_elem(b, extra[i].k, extra[i].v);
        if (err_name(r, e->s3_code, extra, nextra, &name))
            hd_xml_elem(b, name.k, name.v);
        hd_xml_elem(b, "Resource", res);
        hd_xml_elem(b, "RequestId", r->id);
        char hid[HD_HOST_ID_LEN + 1];
        host_id(r->id, hid);
        hd_xml_elem(b, "HostId", hid);
        hd_xml_close(b, "Error");
    } else {
        char *j = hd_json_error(e->http_status, e->s3_code, message, res, r->id);
        if (j) {
            hd_buf_puts(b, j);
            free(j);
        } else {
            b->oom = 1;
        }
    }
}

int hd_resp_err_ex(struct hd_req *r, int code, const char *message, const struct hd_kv *extra,
                   size_t nextra)
{
    const struct hd_err_info *e = hd_err_info(code);
    struct hd_buf b;
    char *body;
    size_t len;

    if (r->responded)
        return -EALREADY;
    if (e->http_status == 304 || strcmp(r->method, "HEAD") == 0)
        return hd_resp_empty(r, e->http_status);
    hd_buf_init(&b);
    hd_err_doc(r, code, message, extra, nextra, 1, &b);
    if (b.oom) {
        hd_buf_cleanup(&b);
        return hd_resp_empty(r, e->http_status);
    }
    body = hd_buf_steal(&b, &len);
    return hd_resp_buf(r, e->http_status,
                       r->api == HD_API_S3 ? "application/xml" : "application/json", body, len);
}

int hd_resp_err(struct hd_req *r, int code)
{
    return hd_resp_err_msg(r, code, NULL);
}

size_t hd_req_header_count(const struct hd_req *r, const char *name)
{
    size_t i, n = 0;

    for (i = 0; i < r->nhdrs; i++)
        if (strcasecmp(r->hdrs[i].k, name) == 0)
            n++;
    return n;
}

/* The signed body hash (r->body_sha256, set by node-signature checks): fed as bytes arrive,
 * checked once when the body is complete. A hashing failure counts as a mismatch. */
static void body_hash(struct hd_req *r, const char *p, size_t n)
{
    if (!r->body_sha256[0] || r->body_checked || !n)
        return;
    if (!r->body_md && (r->body_md = EVP_MD_CTX_new()) &&
        EVP_DigestInit_ex(r->body_md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(r->body_md);
        r->body_md = NULL;
    }
    if (!r->body_md || EVP_DigestUpdate(r->body_md, p, n) != 1)
        r->body_checked = -1;
}

static int body_check(struct hd_req *r)
{
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    char got[65];

    if (!r->body_sha256[0] || r->body_checked > 0)
        return 0;
    if (r->body_checked < 0)
        return -1;
    r->body_checked = 1;
    if (!r->body_md) { /* no byte came: the hash of nothing */
        if (!(r->body_md = EVP_MD_CTX_new()) ||
            EVP_DigestInit_ex(r->body_md, EVP_sha256(), NULL) != 1)
            return -1;
    }
    if (EVP_DigestFinal_ex(r->body_md, d, &n) != 1 || n != 32)
        return -1;
    hd_hex(d, n, got);
    return strcmp(got, r->body_sha256) == 0 ? 0 : -1;
}

/* Whether the request line holds bytes a URI cannot have: control bytes (C0, DEL), seen
 * in the raw URI, and a NUL, which cuts the C string MHD hands us: MHD parses the line in
 * place, so the URI string must run up to the single space before the version. */
static int bad_request_line(const struct hd_req *r, const char *url, const char *version)
{
    const unsigned char *p;
    size_t n = strlen(r->raw_uri);

    for (p = (const unsigned char *)r->raw_uri; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return 1;
    return url && version && version > url && (size_t)(version - url) != n + 1;
}

static void undefer(struct hd_req *r)
{
    void (*fn)(struct hd_req * r) = r->on_undefer;

    if (fn) {
        r->on_undefer = NULL;
        fn(r);
        r->defer_data = NULL;
    }
}

/* An error answered here, before the role's handler says which API the request is for, in
 * the format of the path's API: the native API's JSON under /v1/ (and /metrics), else an S3
 * XML body with its <Resource> and <RequestId>. */
static int early_err(struct hd_req *r, int code, const char *message)
{
    const char *p = r->raw_path;

    r->api = strncmp(p, "/v1/", 4) == 0 || strcmp(p, "/v1") == 0 || strcmp(p, "/metrics") == 0
                 ? HD_API_NATIVE
                 : HD_API_S3;
    return hd_resp_err_msg(r, code, message);
}

static enum MHD_Result access_cb(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **con_cls)
{
    struct hd_http_server *s = cls;
    struct hd_req *r = *con_cls;
    const char *cl;
    int rc;

    if (!r || r->magic != HD_REQ_MAGIC)
        return MHD_NO;
    r->suspended = 0; /* set again by this call's callbacks if they park the request */
    if (!r->method) {
        r->method = method;
        MHD_get_connection_values(conn, MHD_HEADER_KIND, collect_hdr, r);
        if (bad_request_line(r, url, version)) {
            /* a NUL would silently cut the key ("a\0b" -> "a"), other control bytes have
             * no business in a name either */
            early_err(r, HD_EBADREQ, "The request line contains a NUL or another control byte.");
            return MHD_YES;
        }
        cl = hd_req_header(r, "Content-Length");
        if (cl && (hd_req_header_count(r, "Content-Length") > 1 ||
                   hd_req_header(r, "Transfer-Encoding"))) {
            /* two framings of one body: the way request smuggling starts; the early answer
             * also closes the connection */
            early_err(r, HD_EBADREQ,
                      hd_req_header_count(r, "Content-Length") > 1
                          ? "More than one Content-Length header."
                          : "Content-Length and Transfer-Encoding together.");
            return MHD_YES;
        }
        if (cl) {
            uint64_t v;
            if (hd_parse_u64(cl, &v) < 0 || v > INT64_MAX) {
                early_err(r, HD_EBADHEADER, "Content-Length is not a valid number.");
                return MHD_YES;
            }
            r->content_length = (int64_t)v;
        }
        rc = hd_query_parse(r->raw_query, &r->query);
        if (rc < 0) {
            early_err(r, rc, "The query string is malformed.");
            return MHD_YES;
        }
        /* A request without a body is dispatched on MHD's next call: a response queued
         * during the first call counts as "early" and MHD would close the connection
         * afterwards, losing keep-alive for every GET/HEAD/DELETE. */
        if (r->content_length > 0 || hd_req_header(r, "Transfer-Encoding")) {
            r->dispatched = 1;
            r->early = 1;
            s->handler(r, s->ctx);
            r->early = 0;
        }
        return MHD_YES;
    }
    if (!r->dispatched && !r->responded) {
        int body = r->content_length > 0 || hd_req_header(r, "Transfer-Encoding");
        undefer(r);
        r->dispatched = 1;
        r->early = r->deferrals && body && r->bytes_in == 0; /* see DRAIN_MAX */
        s->handler(r, s->ctx);
        r->early = 0;
        /* a request deferred from its first call is dispatched again from a call that has
         * no body bytes yet (MHD resumes it in its headers state): the body, and the call
         * that ends it, are still to come */
        if (r->responded || r->suspended || *upload_data_size || (body && r->bytes_in == 0))
            return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        if (!r->responded && r->on_body && !r->body_err) {
            rc = r->on_body(r, upload_data, n);
            if (rc < 0) {
                r->body_err = rc;
            } else if (rc > 0) {
                size_t taken = rc == HD_BODY_WAIT ? 0 : (size_t)rc;
                if (taken < n) {
                    body_hash(r, upload_data, taken);
                    r->bytes_in += taken;
                    *upload_data_size = n - taken; /* the rest comes again after resume */
                    return MHD_YES;
                }
            }
        }
        body_hash(r, upload_data, n);
        r->bytes_in += n;
        *upload_data_size = 0;
        if (r->deferred && r->bytes_in > DRAIN_MAX)
            send_deferred(r); /* chunked and long: answer now, the connection closes */
        return MHD_YES;
    }
    if (r->deferred) {
        send_deferred(r); /* the body is read: the connection may even stay open */
        return MHD_YES;
    }
    if (!r->responded && body_check(r) < 0) {
        char addr[64];
        HD_LOG(HD_WARN, NULL,
               "auth: node call %s %s from %s: the body does not match its "
               "signature",
               r->method, r->raw_path, hd_req_remote(r, addr, sizeof(addr)));
        hd_stats_inc(HD_ST_AUTH_FAILED);
        hd_resp_err_msg(r, HD_EACCESS,
                        "The body does not match the node signature (X-Hoard-Content-Sha256).");
        return MHD_YES;
    }
    if (!r->responded) {
        if (r->on_end)
            r->on_end(r);
        else if (r->body_err)
            hd_resp_err(r, r->body_err);
        if (!r->responded && !r->suspended)
            hd_resp_err(r, HD_EINTERNAL);
    }
    return MHD_YES;
}

/* Every callback of a request logs with its id (common/log.h). */
static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **con_cls)
{
    struct hd_req *r = *con_cls;
    enum MHD_Result ok;

    hd_log_set_context(r && r->magic == HD_REQ_MAGIC ? r->id : NULL);
    ok = access_cb(cls, conn, url, method, version, upload_data, upload_data_size, con_cls);
    hd_log_set_context(NULL);
    return ok;
}

static void park_unlink(struct hd_http_server *s, struct hd_req *r)
{
    if (r->park_prev)
        r->park_prev->park_next = r->park_next;
    else
        s->parked = r->park_next;
    if (r->park_next)
        r->park_next->park_prev = r->park_prev;
    r->park_prev = r->park_next = NULL;
    r->parked = 0;
}

void hd_req_suspend(struct hd_req *r)
{
    struct hd_http_server *s = r->srv;

    r->suspended = 1;
    pthread_mutex_lock(&s->park_mu);
    if (s->stopping) { /* closing anyway: do not park it again */
        pthread_mutex_unlock(&s->park_mu);
        return;
    }
    r->park_prev = NULL;
    r->park_next = s->parked;
    if (s->parked)
        s->parked->park_prev = r;
    s->parked = r;
    r->parked = 1;
    MHD_suspend_connection(r->conn);
    pthread_mutex_unlock(&s->park_mu);
}

void hd_req_defer(struct hd_req *r, void (*on_undefer)(struct hd_req *r), void *data)
{
    r->dispatched = 0;
    r->deferrals++;
    r->on_undefer = on_undefer;
    r->defer_data = data;
    hd_req_suspend(r);
}

void hd_req_resume(struct hd_req *r)
{
    struct hd_http_server *s = r->srv;

    /* r->suspended belongs to the worker thread; it is reset on the next callback */
    pthread_mutex_lock(&s->park_mu);
    if (r->parked) { /* else hd_http_stop resumed it already */
        park_unlink(s, r);
        MHD_resume_connection(r->conn);
        /* loop mode: the daemon processes resumed connections when it runs next, and its
         * epoll descriptor does not say so: run it once the current callback returns (this
         * thread) or wake its loop (another thread) */
        if (r->worker && !s->stopping) {
            if (r->worker == cur_worker)
                uv_idle_start(&r->worker->soon, on_worker_soon);
            else
                uv_async_send(&r->worker->wake);
        }
    }
    pthread_mutex_unlock(&s->park_mu);
}

struct stream_cls {
    hd_body_reader_fn reader;
    void *cls;
    void (*free_cb)(void *cls);
    struct MHD_Connection *conn; /* valid while the response is being sent */
};

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct stream_cls *s = cls;
    long n = s->reader(s->cls, pos, buf, max);
    const union MHD_ConnectionInfo *ci;

    if (n == HD_STREAM_END)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (n < 0) {
        /* MHD 0.9.75 with MHD_USE_TURBO may keep the socket open after an error return until
         * the connection times out, leaving the client waiting for the rest of the body: shut
         * it down so that the client sees the cut at once */
        ci = s->conn ? MHD_get_connection_info(s->conn, MHD_CONNECTION_INFO_CONNECTION_FD) : NULL;
        if (ci)
            shutdown(ci->connect_fd, SHUT_RDWR);
        return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    return (ssize_t)n;
}

static void stream_free(void *cls)
{
    struct stream_cls *s = cls;

    if (s->free_cb)
        s->free_cb(s->cls);
    free(s);
}

static void stream_disown(void *arg)
{
    struct stream_cls *s = arg;

    s->free_cb = NULL;
}

#define STREAM_BLOCK ((size_t)256 * 1024)

int hd_resp_stream(struct hd_req *r, int status, uint64_t size, hd_body_reader_fn reader, void *cls,
                   void (*free_cb)(void *cls))
{
    struct stream_cls *s;
    struct MHD_Response *resp;

    if (r->responded)
        return -EALREADY;
    s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->reader = reader;
    s->cls = cls;
    s->free_cb = free_cb;
    s->conn = r->conn;
    /* libmicrohttpd callocs the block with the response: zeroing 256 KiB (and freeing it,
     * which makes glibc consolidate its heap) cost a relayed 10 KiB GET more than anything
     * else hoard did. A body known to be smaller gets a block of its size. */
    resp = MHD_create_response_from_callback(
        size == UINT64_MAX ? MHD_SIZE_UNKNOWN : size,
        size < STREAM_BLOCK ? (size_t)(size < 4096 ? 4096 : size) : STREAM_BLOCK, stream_read, s,
        stream_free);
    if (!resp) {
        free(s);
        return -ENOMEM;
    }
    /* from here the response owns s: free_cb runs when MHD drops it, unless MHD refuses the
     * response: then hd_resp_stream fails and cls stays the caller's (free_cb never runs;
     * it used to run here too, and every caller freed cls again on the failure: a double
     * free, e.g. of a relay, that corrupted the proxy's heap) */
    return queue_ex(r, status, resp, size == UINT64_MAX ? 0 : size, stream_disown, s);
}

int hd_resp_mem(struct hd_req *r, int status, const void *data, size_t len,
                void (*free_cb)(void *cls), void *cls)
{
    struct MHD_Response *resp;

    resp = r->responded ? NULL
                        : MHD_create_response_from_buffer_with_free_callback_cls(len, (void *)data,
                                                                                 free_cb, cls);
    if (!resp) {
        if (free_cb)
            free_cb(cls);
        return r->responded ? -EALREADY : -ENOMEM;
    }
    /* a response MHD refuses is destroyed in queue_ex, which runs free_cb */
    return queue(r, status, resp, len);
}

/* The bucket of a native object or bucket call (/v1/objects/B/..., /v1/buckets/B), for the
 * per-bucket metrics; S3 calls have theirs set by the S3 front. Names that are not valid
 * bucket names (a bad request) are not counted. */
static void native_bucket(struct hd_req *r)
{
    static const char *const pre[] = {"/v1/objects/", "/v1/buckets/"};
    const char *p = r->raw_path, *e;
    size_t i, n;

    for (i = 0; p && i < 2; i++) {
        if (strncmp(p, pre[i], strlen(pre[i])) != 0)
            continue;
        p += strlen(pre[i]);
        e = strchr(p, '/');
        n = e ? (size_t)(e - p) : strlen(p);
        if (n < 3 || n >= sizeof(r->bucket) ||
            strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789.-") < n)
            return;
        memcpy(r->bucket, p, n);
        r->bucket[n] = '\0';
        return;
    }
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct hd_req *r = *con_cls;
    char remote[64];
    double secs;

    if (!r || r->magic != HD_REQ_MAGIC)
        return;
    if (r->parked) { /* cannot happen outside shutdown; never leave a dangling entry */
        pthread_mutex_lock(&r->srv->park_mu);
        if (r->parked)
            park_unlink(r->srv, r);
        pthread_mutex_unlock(&r->srv->park_mu);
    }
    hd_log_set_context(r->id);
    undefer(r);
    if (!r->responded)
        r->status = 0; /* client went away or MHD refused the request */
    else if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
        r->bytes_out = 0;
    if (r->on_done)
        r->on_done(r);
    if (r->method) {
        secs = (double)(hd_now_ns() - r->t0_ns) / 1e9;
        hd_metrics_request(r->op, r->status, r->bytes_in, r->bytes_out, secs);
        if (!r->bucket[0])
            native_bucket(r);
        if (r->bucket[0])
            hd_metrics_bucket(r->bucket, r->op, r->status, r->bytes_in, r->bytes_out);
        hd_log_access(r->id, hd_req_remote(r, remote, sizeof(remote)), r->method, r->raw_uri,
                      r->status, r->bytes_in, r->bytes_out, secs);
        if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
            HD_LOG(HD_DEBUG, r->id, "request ended early: mhd_code=%d uri=%.256s", (int)toe,
                   r->raw_uri);
    }
    *con_cls = NULL;
    req_free(r);
    hd_log_set_context(NULL);
}

/* We never use MHD's decoded URL or argument values, so do not let it decode (it would
 * also cut keys at %00). */
static size_t no_unescape(void *cls, struct MHD_Connection *c, char *s)
{
    return strlen(s);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char line[512];

    vsnprintf(line, sizeof(line), fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    HD_LOG(HD_WARN, NULL, "http: %s", line);
}

static int parse_listen(const char *listen, struct sockaddr_storage *ss, socklen_t *sl)
{
    char host[256];
    const char *colon = strrchr(listen, ':');
    struct addrinfo hints, *ai = NULL;
    int rc;

    if (!colon || colon == listen || (size_t)(colon - listen) >= sizeof(host))
        return -EINVAL;
    memcpy(host, listen, (size_t)(colon - listen));
    host[colon - listen] = '\0';
    if (host[0] == '[') { /* [::1]:8080 */
        size_t n = strlen(host);
        if (n < 2 || host[n - 1] != ']')
            return -EINVAL;
        memmove(host, host + 1, n - 2);
        host[n - 2] = '\0';
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    rc = getaddrinfo(host, colon + 1, &hints, &ai);
    if (rc != 0 || !ai)
        return -EINVAL;
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    *sl = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

/* The listening socket, bound by us: SO_REUSEADDR (a restart reuses a port in TIME_WAIT)
 * but not SO_REUSEPORT, so a second process on a port in use fails here with EADDRINUSE
 * instead of sharing it. fd, or a negative errno. */
static int listen_socket(const struct sockaddr_storage *ss, socklen_t sl)
{
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, e;

    if (fd < 0)
        return -errno;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(fd, (const struct sockaddr *)ss, sl) < 0 || listen(fd, 1024) < 0) {
        e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

/* Under TLS every connection carries what its client certificate was found to be
 * (common/tls.h), so a node call pays for the chain check once per connection. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    (void)cls;
    (void)conn;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        *socket_context = hd_tls_conn_new();
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        hd_tls_conn_free(*socket_context);
        *socket_context = NULL;
    }
}

/* MHD_OPTION_THREAD_POOL_SIZE, or (no pool: libmicrohttpd warns about a size of 0) the
 * connection timeout once more */
#define POOL_OPT(pool, cfg)                                                                        \
    (pool) ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_CONNECTION_TIMEOUT,                          \
        (pool) ? (pool) : (unsigned)(cfg)->timeout_s

/* One libmicrohttpd daemon on listen socket fd: a thread pool of `pool` workers, or (pool 0)
 * one in external epoll mode for a loop worker. */
static struct MHD_Daemon *start_daemon(struct hd_http_server *s, const struct hd_http_cfg *cfg,
                                       unsigned flags, int fd, unsigned pool, unsigned conns)
{
    const char *trust = cfg->tls ? hd_tls_mhd_trust(cfg->tls) : NULL;

    /* TLS options as arguments (an MHD_OPTION_ARRAY that lost its MHD_OPTION_END in a
     * merge made libmicrohttpd read past it and fail to start, silently, in about half
     * the processes with tls.client_auth) */
    if (cfg->tls)
        return MHD_start_daemon(
            flags, 0, NULL, NULL, on_access, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
            MHD_OPTION_LISTEN_SOCKET, fd, POOL_OPT(pool, cfg), MHD_OPTION_CONNECTION_TIMEOUT,
            (unsigned)cfg->timeout_s, MHD_OPTION_CONNECTION_LIMIT, conns,
            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)cfg->mem_limit,
            MHD_OPTION_PER_IP_CONNECTION_LIMIT, 0u, MHD_OPTION_URI_LOG_CALLBACK, on_uri, s,
            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_UNESCAPE_CALLBACK, no_unescape,
            s, MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_HTTPS_CERT_CALLBACK,
            hd_tls_mhd_cert_callback(), trust ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END, trust,
            MHD_OPTION_END);
    return MHD_start_daemon(flags, 0, NULL, NULL, on_access, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
                            s, MHD_OPTION_LISTEN_SOCKET, fd, POOL_OPT(pool, cfg),
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->timeout_s,
                            MHD_OPTION_CONNECTION_LIMIT, conns, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                            (size_t)cfg->mem_limit, MHD_OPTION_PER_IP_CONNECTION_LIMIT, 0u,
                            MHD_OPTION_URI_LOG_CALLBACK, on_uri, s, MHD_OPTION_NOTIFY_COMPLETED,
                            on_completed, s, MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, s,
                            MHD_OPTION_END);
}

/* ---- loop mode ---- */

void *hd_http_loop(void)
{
    return cur_worker ? &cur_worker->uv : NULL;
}

int hd_http_loop_at_stop(void (*fn)(void *arg), void *arg)
{
    struct hd_http_worker *w = cur_worker;

    if (!w || w->nhooks == LOOP_HOOKS)
        return -ENOSPC;
    w->hooks[w->nhooks].fn = fn;
    w->hooks[w->nhooks].arg = arg;
    w->nhooks++;
    return 0;
}

static void worker_run(struct hd_http_worker *w)
{
    MHD_run(w->d);
}

static void on_worker_timer(uv_timer_t *t)
{
    worker_run(t->data);
}

static void on_worker_wake(uv_async_t *a)
{
    worker_run(a->data);
}

static void on_worker_soon(uv_idle_t *h)
{
    uv_idle_stop(h);
    worker_run(h->data);
}

static void on_worker_poll(uv_poll_t *p, int status, int events)
{
    (void)status;
    (void)events;
    worker_run(p->data);
}

/* Before the loop blocks: wake up for the daemon's next timeout (0 while it has data
 * already read and not processed: its epoll is edge-triggered). */
static void on_worker_prepare(uv_prepare_t *h)
{
    struct hd_http_worker *w = h->data;
    MHD_UNSIGNED_LONG_LONG ms;

    if (MHD_get_timeout(w->d, &ms) == MHD_YES)
        uv_timer_start(&w->timer, on_worker_timer, (uint64_t)ms, 0);
    else
        uv_timer_stop(&w->timer);
}

static void worker_close_all(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

static void on_worker_stop(uv_async_t *a)
{
    struct hd_http_worker *w = a->data;
    int i;

    /* on this thread: the requests' on_done callbacks (e.g. a relay's) run where they ran
     * all along, then the hooks tear down what they put on the loop */
    uv_poll_stop(&w->poll); /* before the daemon closes the descriptor */
    MHD_stop_daemon(w->d);
    w->d = NULL;
    for (i = 0; i < w->nhooks; i++)
        w->hooks[i].fn(w->hooks[i].arg);
    uv_close((uv_handle_t *)&w->poll, NULL);
    uv_close((uv_handle_t *)&w->timer, NULL);
    uv_close((uv_handle_t *)&w->prep, NULL);
    uv_close((uv_handle_t *)&w->stop, NULL);
    uv_close((uv_handle_t *)&w->wake, NULL);
    uv_close((uv_handle_t *)&w->soon, NULL);
}

static void *worker_main(void *arg)
{
    struct hd_http_worker *w = arg;
    int rc;

    cur_worker = w;
    uv_run(&w->uv, UV_RUN_DEFAULT); /* until on_worker_stop closed the handles */
    if ((rc = uv_loop_close(&w->uv)) < 0) {
        HD_LOG(HD_ERROR, NULL, "http: a worker loop closed with handles open: %s", uv_strerror(rc));
        uv_walk(&w->uv, worker_close_all, NULL);
        uv_run(&w->uv, UV_RUN_DEFAULT);
        uv_loop_close(&w->uv);
    }
    cur_worker = NULL;
    return NULL;
}

/* Starts w's daemon (on its own duplicate of the listen socket: each daemon closes its own)
 * and thread. */
static int worker_start(struct hd_http_worker *w, const struct hd_http_cfg *cfg, unsigned flags,
                        int fd, unsigned conns)
{
    const union MHD_DaemonInfo *di;
    int dfd = dup(fd);

    if (dfd < 0)
        return -errno;
    w->d = start_daemon(w->s, cfg, flags, dfd, 0, conns);
    if (!w->d) {
        close(dfd);
        return -EIO;
    }
    di = MHD_get_daemon_info(w->d, MHD_DAEMON_INFO_EPOLL_FD);
    if (!di || uv_loop_init(&w->uv) < 0) {
        MHD_stop_daemon(w->d);
        w->d = NULL;
        return -EIO;
    }
    uv_poll_init(&w->uv, &w->poll, di->epoll_fd);
    uv_timer_init(&w->uv, &w->timer);
    uv_prepare_init(&w->uv, &w->prep);
    uv_async_init(&w->uv, &w->stop, on_worker_stop);
    uv_async_init(&w->uv, &w->wake, on_worker_wake);
    uv_idle_init(&w->uv, &w->soon);
    w->poll.data = w->timer.data = w->prep.data = w->stop.data = w->wake.data = w->soon.data = w;
    uv_poll_start(&w->poll, UV_READABLE, on_worker_poll);
    uv_prepare_start(&w->prep, on_worker_prepare);
    if (pthread_create(&w->thr, NULL, worker_main, w) != 0) {
        uv_async_send(&w->stop); /* run the teardown here */
        worker_main(w);
        return -EAGAIN;
    }
    w->started = 1;
    return 0;
}

static void workers_stop(struct hd_http_server *s)
{
    unsigned i;

    for (i = 0; i < s->nw; i++)
        if (s->w[i].started) {
            uv_async_send(&s->w[i].stop);
            pthread_join(s->w[i].thr, NULL);
        }
    free(s->w);
    s->w = NULL;
    s->nw = 0;
}

static int workers_start(struct hd_http_server *s, const struct hd_http_cfg *cfg, unsigned flags,
                         int fd, unsigned threads)
{
    unsigned i, conns = (unsigned)cfg->max_conns / threads;
    int rc = 0;

    s->w = calloc(threads, sizeof(*s->w));
    if (!s->w)
        return -ENOMEM;
    s->nw = threads;
    for (i = 0; i < threads && rc == 0; i++) {
        s->w[i].s = s;
        rc = worker_start(&s->w[i], cfg, flags & ~(unsigned)MHD_USE_INTERNAL_POLLING_THREAD, fd,
                          conns ? conns : 1);
    }
    if (rc < 0) {
        workers_stop(s);
        return rc;
    }
    s->d = s->w[0].d;
    close(fd); /* every daemon has its own duplicate */
    return 0;
}

int hd_http_start(const struct hd_http_cfg *cfg, struct hd_http_server **out)
{
    struct hd_http_server *s;
    struct sockaddr_storage ss;
    socklen_t sl;
    unsigned threads;
    unsigned flags;
    long n;
    int fd;

    if (parse_listen(cfg->listen, &ss, &sl) < 0)
        return -EINVAL;
    if ((fd = listen_socket(&ss, sl)) < 0)
        return fd;
    signal(SIGPIPE, SIG_IGN);
    {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        req_salt = ((uint64_t)ts.tv_nsec << 32) ^ (uint64_t)ts.tv_sec ^ (uint64_t)getpid();
    }
    s = calloc(1, sizeof(*s));
    if (!s) {
        close(fd);
        return -ENOMEM;
    }
    s->handler = cfg->handler;
    s->ctx = cfg->ctx;
    s->tls = cfg->tls != NULL;
    pthread_mutex_init(&s->park_mu, NULL);
    n = sysconf(_SC_NPROCESSORS_ONLN);
    threads = cfg->threads > 0 ? (unsigned)cfg->threads : (unsigned)(n > 0 ? n : 1);
    flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_TURBO | MHD_USE_ERROR_LOG |
            MHD_ALLOW_SUSPEND_RESUME;
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    if (cfg->tls) {
        /* GnuTLS inside libmicrohttpd asks for the certificate at every handshake
         * (common/tls.h): a reload reaches new connections only */
        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES ||
            MHD_is_feature_supported(MHD_FEATURE_HTTPS_CERT_CALLBACK) != MHD_YES) {
            close(fd);
            pthread_mutex_destroy(&s->park_mu);
            free(s);
            return -ENOTSUP;
        }
        flags |= MHD_USE_TLS;
        /* with tls.client_auth, HTTPS_MEM_TRUST makes GnuTLS ask for a client certificate;
         * hd_tls_peer_ok checks it */
    }
    if (cfg->loops) {
        int rc = workers_start(s, cfg, flags, fd, threads);
        if (rc < 0) {
            close(fd);
            pthread_mutex_destroy(&s->park_mu);
            free(s);
            return rc;
        }
    } else {
        s->d = start_daemon(s, cfg, flags, fd, threads, (unsigned)cfg->max_conns);
    }
    if (!s->d) {
        close(fd);
        pthread_mutex_destroy(&s->park_mu);
        free(s);
        return -EIO;
    }
    *out = s;
    return 0;
}

void hd_http_stop(struct hd_http_server *s)
{
    if (!s)
        return;
    /* libmicrohttpd aborts the process when stopped with suspended connections: resume every
     * parked one first (cold GETs, write-through, relays waiting on the network); later
     * resumes by their owners are no-ops */
    pthread_mutex_lock(&s->park_mu);
    s->stopping = 1;
    while (s->parked) {
        struct hd_req *r = s->parked;
        park_unlink(s, r);
        MHD_resume_connection(r->conn);
    }
    pthread_mutex_unlock(&s->park_mu);
    if (s->w)
        workers_stop(s);
    else
        MHD_stop_daemon(s->d);
    pthread_mutex_destroy(&s->park_mu);
    free(s);
}

void hd_resp_json(struct hd_req *r, int status, json_t *j)
{
    size_t len;
    char *s = j ? hd_json_dump_steal(j, &len) : NULL;

    if (!s) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    hd_resp_buf(r, status, "application/json", s, len);
}

void hd_resp_conflict(struct hd_req *r, const char *msg)
{
    char *j = hd_json_error(409, "Conflict", msg, r->raw_path, r->id);

    if (!j) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    hd_resp_buf(r, 409, "application/json", j, strlen(j));
}

/* ---- whole request bodies ---- */

#define BODY_MAGIC 0x626f6479u /* "body" */

struct body_reader {
    uint32_t magic;
    struct hd_buf b;
    size_t max;
    hd_body_fn done;
    hd_json_fn json_done;
    void *ctx;
    void (*ctx_free)(void *ctx);
};

static void body_reader_free(struct body_reader *br)
{
    hd_buf_cleanup(&br->b);
    if (br->ctx_free)
        br->ctx_free(br->ctx);
    br->magic = 0;
    free(br);
}

static int body_reader_chunk(struct hd_req *r, const char *d, size_t n)
{
    struct body_reader *br = r->data;

    if (br->b.len + n > br->max)
        return HD_ETOOLARGE;
    return hd_buf_append(&br->b, d, n) < 0 ? -ENOMEM : 0;
}

static void body_reader_done(struct hd_req *r)
{
    struct body_reader *br = r->data;

    if (br && br->magic == BODY_MAGIC)
        body_reader_free(br);
    r->data = NULL;
}

static void body_reader_end(struct hd_req *r)
{
    struct body_reader *br = r->data;
    const char *body;
    json_t *j = NULL;

    if (!br || br->magic != BODY_MAGIC) {
        hd_resp_err(r, HD_EINTERNAL);
        return;
    }
    if (r->body_err) {
        hd_resp_err(r, r->body_err);
        return;
    }
    if (br->b.oom || hd_buf_append(&br->b, "", 1) < 0) { /* NUL-terminated, not counted */
        hd_resp_err(r, -ENOMEM);
        return;
    }
    br->b.len--;
    body = br->b.data;
    if (br->json_done && br->b.len && !(j = json_loadb(body, br->b.len, 0, NULL))) {
        hd_resp_err_msg(r, HD_EBADARG, "The request body is not valid JSON.");
        return;
    }
    /* hand over: done may install its own state on r */
    r->data = NULL;
    r->on_done = NULL;
    r->on_body = NULL;
    r->on_end = NULL;
    if (br->json_done)
        br->json_done(r, br->ctx, j);
    else
        br->done(r, br->ctx, body, br->b.len);
    json_decref(j);
    body_reader_free(br);
}

static void body_reader_start(struct hd_req *r, size_t max, hd_body_fn done, hd_json_fn json_done,
                              void *ctx, void (*ctx_free)(void *ctx))
{
    struct body_reader *br = calloc(1, sizeof(*br));

    if (!br) {
        if (ctx_free)
            ctx_free(ctx);
        hd_resp_err(r, -ENOMEM);
        return;
    }
    br->magic = BODY_MAGIC;
    hd_buf_init(&br->b);
    br->max = max;
    br->done = done;
    br->json_done = json_done;
    br->ctx = ctx;
    br->ctx_free = ctx_free;
    r->data = br;
    r->on_body = body_reader_chunk;
    r->on_end = body_reader_end;
    r->on_done = body_reader_done;
}

void hd_req_read_body(struct hd_req *r, size_t max, hd_body_fn done, void *ctx,
                      void (*ctx_free)(void *ctx))
{
    body_reader_start(r, max, done, NULL, ctx, ctx_free);
}

void hd_req_read_json(struct hd_req *r, size_t max, hd_json_fn done, void *ctx,
                      void (*ctx_free)(void *ctx))
{
    body_reader_start(r, max, NULL, done, ctx, ctx_free);
}

static char *metrics_token; /* set once at startup, before the server starts */

void hd_http_metrics_token(const char *token)
{
    free(metrics_token);
    metrics_token = token && *token ? strdup(token) : NULL;
}

void hd_resp_metrics(struct hd_req *r)
{
    const char *auth = hd_req_header(r, "Authorization");
    struct hd_buf b;
    size_t len;
    char *s;

    r->op = HD_OP_ADMIN;
    if (metrics_token) {
        size_t n = strlen(metrics_token);
        int ok = auth && strncasecmp(auth, "Bearer ", 7) == 0 && strlen(auth + 7) == n &&
                 CRYPTO_memcmp(auth + 7, metrics_token, n) == 0;
        if (!ok) {
            hd_resp_header(r, "WWW-Authenticate", "Bearer realm=\"hoard metrics\"");
            hd_resp_err_msg(r, HD_EACCESS, "/metrics needs Authorization: Bearer <metrics.token>.");
            return;
        }
    }
    hd_buf_init(&b);
    hd_metrics_render(&b);
    if (b.oom) {
        hd_buf_cleanup(&b);
        hd_resp_err(r, -ENOMEM);
        return;
    }
    s = hd_buf_steal(&b, &len);
    hd_resp_buf(r, 200, "text/plain; version=0.0.4", s, len);
}

int hd_http_port(const struct hd_http_server *s)
{
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);

    return di ? (int)di->port : -1;
}
