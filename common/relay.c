#include "common/relay.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "common/errors.h"
#include "common/log.h"
#include "common/ring.h"

#define RELAY_MAGIC 0x726c6179u

/* Each direction's window starts at RING_MIN and grows up to HD_RELAY_BUF only when data
 * backs up, so a small object costs a small buffer (no 1 MiB allocation and page faults per
 * request), and a large stream still gets the whole window. */
#define RING_MIN (64u * 1024)

struct relay {
    uint32_t magic;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;         /* request (on_done), response (free_cb), transfer thread */
    struct hd_req *r; /* NULL once the client side is finished */
    char *url;
    char method[16];
    struct curl_slist *hdrs;
    int has_body;
    int64_t body_len; /* -1: chunked */

    struct hd_ring up; /* client -> node */
    int up_eof;
    int mhd_wait_space; /* client side parked until `up` has room */

    struct hd_ring down; /* node -> client */
    int mhd_wait_data;   /* client side parked until data, headers or the end */
    int done;            /* transfer finished (ok or not) */
    int failed;          /* before headers: connect/transfer error; after: body cut short */
    char err[CURL_ERROR_SIZE];

    int head_done;
    long status;
    int in_head; /* between a status line and its blank line */
    struct hd_kv *rh;
    size_t nrh;
    int64_t resp_len;
    char reqid[64];
    struct relay *next; /* job queue */
};

/* ---- the pool of transfer threads, each with its own curl handle (keep-alive) ---- */

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_cv = PTHREAD_COND_INITIALIZER;
static struct relay *queue_head, *queue_tail;
static int nthreads, nidle, maxthreads = 256, queued;

void hd_relay_set_max(int n)
{
    pthread_mutex_lock(&pool_mu);
    maxthreads = n > 0 ? n : 1;
    pthread_mutex_unlock(&pool_mu);
}

static void relay_unref(struct relay *y)
{
    size_t i;
    int last;

    pthread_mutex_lock(&y->mu);
    last = --y->refs == 0;
    pthread_mutex_unlock(&y->mu);
    if (!last)
        return;
    for (i = 0; i < y->nrh; i++) {
        free((char *)y->rh[i].k);
        free((char *)y->rh[i].v);
    }
    free(y->rh);
    hd_ring_cleanup(&y->up);
    hd_ring_cleanup(&y->down);
    curl_slist_free_all(y->hdrs);
    free(y->url);
    pthread_mutex_destroy(&y->mu);
    pthread_cond_destroy(&y->cv);
    y->magic = 0;
    free(y);
}

/* Wakes the client side if it is parked waiting for what just changed. Caller holds mu. */
static void wake_client(struct relay *y)
{
    if (y->r && y->mhd_wait_data) {
        y->mhd_wait_data = 0;
        hd_req_resume(y->r);
    }
}

static int hop_by_hop(const char *k)
{
    static const char *const hop[] = {"connection",
                                      "keep-alive",
                                      "proxy-authenticate",
                                      "proxy-authorization",
                                      "te",
                                      "trailer",
                                      "transfer-encoding",
                                      "upgrade",
                                      "content-length",
                                      "date",
                                      "server",
                                      "x-amz-request-id",
                                      NULL};
    size_t i;

    for (i = 0; hop[i]; i++)
        if (strcasecmp(k, hop[i]) == 0)
            return 1;
    return 0;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    struct relay *y = arg;
    size_t len = size * n, kl;
    char *colon, *v, *e;

    pthread_mutex_lock(&y->mu);
    if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) {
        long st = 0;
        const char *sp = memchr(p, ' ', len);
        if (sp)
            st = strtol(sp + 1, NULL, 10);
        y->status = st;
        y->in_head = 1;
        y->resp_len = -1;
        goto out;
    }
    if (len <= 2) { /* blank line: end of one header block */
        y->in_head = 0;
        if (y->status >= 200 && !y->head_done) {
            y->head_done = 1;
            wake_client(y);
        }
        goto out;
    }
    if (y->status < 200 || y->head_done)
        goto out; /* 100 Continue's headers, or trailers */
    colon = memchr(p, ':', len);
    if (!colon)
        goto out;
    kl = (size_t)(colon - p);
    v = colon + 1;
    e = p + len;
    while (v < e && (*v == ' ' || *v == '\t'))
        v++;
    while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' '))
        e--;
    if (kl == 14 && strncasecmp(p, "content-length", 14) == 0) {
        y->resp_len = strtoll(v, NULL, 10);
        goto out;
    }
    if (kl == 16 && strncasecmp(p, "x-amz-request-id", 16) == 0) {
        snprintf(y->reqid, sizeof(y->reqid), "%.*s", (int)(e - v), v);
        goto out;
    }
    {
        char *k = strndup(p, kl), *val = strndup(v, (size_t)(e - v));
        struct hd_kv *nv = realloc(y->rh, (y->nrh + 1) * sizeof(*nv));
        if (!k || !val || !nv || hop_by_hop(k)) {
            free(k);
            free(val);
            if (nv)
                y->rh = nv;
            goto out;
        }
        y->rh = nv;
        y->rh[y->nrh].k = k;
        y->rh[y->nrh].v = val;
        y->nrh++;
    }
out:
    pthread_mutex_unlock(&y->mu);
    return len;
}

static size_t on_write(char *p, size_t size, size_t n, void *arg)
{
    struct relay *y = arg;
    size_t len = size * n, done = 0;

    pthread_mutex_lock(&y->mu);
    if (!y->head_done) { /* some servers send no blank line callback before the body */
        y->head_done = 1;
        wake_client(y);
    }
    while (done < len) {
        if (!y->r) { /* client gone: abort the transfer */
            pthread_mutex_unlock(&y->mu);
            return 0;
        }
        size_t k = hd_ring_put(&y->down, p + done, len - done);
        done += k;
        if (k)
            wake_client(y);
        if (done < len)
            pthread_cond_wait(&y->cv, &y->mu);
    }
    pthread_mutex_unlock(&y->mu);
    return len;
}

static size_t on_read(char *p, size_t size, size_t n, void *arg)
{
    struct relay *y = arg;
    size_t got;

    pthread_mutex_lock(&y->mu);
    while (y->up.len == 0 && !y->up_eof && y->r)
        pthread_cond_wait(&y->cv, &y->mu);
    if (!y->r && !y->up_eof) {
        pthread_mutex_unlock(&y->mu);
        return CURL_READFUNC_ABORT;
    }
    got = hd_ring_get(&y->up, p, size * n);
    if (got && y->mhd_wait_space && y->r) {
        y->mhd_wait_space = 0;
        hd_req_resume(y->r);
    }
    pthread_mutex_unlock(&y->mu);
    return got;
}

static void transfer(CURL *c, struct relay *y)
{
    CURLcode cc;

    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, y->url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, y->hdrs);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, y);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, y);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, y->err);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    /* a stalled peer: under 1 byte/s for 60 s ends the transfer */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
    /* large socket reads/writes: fewer callbacks and fewer client-side wakeups */
    curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 256L * 1024);
    curl_easy_setopt(c, CURLOPT_UPLOAD_BUFFERSIZE, 256L * 1024);
    curl_easy_setopt(c, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
    if (strcmp(y->method, "HEAD") == 0) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (y->has_body) {
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(c, CURLOPT_READDATA, y);
        if (y->body_len >= 0)
            curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)y->body_len);
        if (strcmp(y->method, "PUT") != 0)
            curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, y->method);
    } else if (strcmp(y->method, "GET") != 0) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, y->method);
    }
    cc = curl_easy_perform(c);
    pthread_mutex_lock(&y->mu);
    y->done = 1;
    if (cc != CURLE_OK) {
        y->failed = 1;
        if (!y->err[0])
            snprintf(y->err, sizeof(y->err), "%s", curl_easy_strerror(cc));
    }
    if (!y->head_done)
        y->head_done = 1;
    wake_client(y);
    if (y->r && y->mhd_wait_space) {
        y->mhd_wait_space = 0;
        hd_req_resume(y->r);
    }
    pthread_cond_broadcast(&y->cv);
    pthread_mutex_unlock(&y->mu);
}

static void *worker(void *arg)
{
    CURL *c = curl_easy_init();

    (void)arg;
    for (;;) {
        struct relay *y;
        pthread_mutex_lock(&pool_mu);
        nidle++;
        while (!queue_head)
            pthread_cond_wait(&pool_cv, &pool_mu);
        nidle--;
        y = queue_head;
        queue_head = y->next;
        if (!queue_head)
            queue_tail = NULL;
        queued--;
        pthread_mutex_unlock(&pool_mu);
        if (c)
            transfer(c, y);
        else {
            pthread_mutex_lock(&y->mu);
            y->done = y->failed = y->head_done = 1;
            snprintf(y->err, sizeof(y->err), "out of memory");
            wake_client(y);
            pthread_mutex_unlock(&y->mu);
        }
        relay_unref(y);
    }
    return NULL;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int submit(struct relay *y)
{
    pthread_t th;
    pthread_attr_t at;
    int rc = 0;

    pthread_once(&curl_once, curl_init_once);
    pthread_mutex_lock(&pool_mu);
    if (nidle <= queued) {
        if (nthreads >= maxthreads) {
            rc = HD_EUNAVAIL;
            goto out;
        }
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&at, 256u * 1024);
        if (pthread_create(&th, &at, worker, NULL) != 0)
            rc = nthreads ? 0 : HD_EUNAVAIL; /* someone will pick it up */
        else
            nthreads++;
        pthread_attr_destroy(&at);
        if (rc < 0)
            goto out;
    }
    y->next = NULL;
    if (queue_tail)
        queue_tail->next = y;
    else
        queue_head = y;
    queue_tail = y;
    queued++;
    pthread_cond_signal(&pool_cv);
out:
    pthread_mutex_unlock(&pool_mu);
    return rc;
}

/* ---- client side (HTTP worker thread) ---- */

static int relay_body(struct hd_req *r, const char *data, size_t len)
{
    struct relay *y = r->data;
    size_t k;

    pthread_mutex_lock(&y->mu);
    if (y->done) { /* the node answered early (e.g. an error): drop the rest */
        pthread_mutex_unlock(&y->mu);
        return 0;
    }
    k = hd_ring_put(&y->up, data, len);
    if (k)
        pthread_cond_broadcast(&y->cv);
    if (k < len) {
        y->mhd_wait_space = 1;
        hd_req_suspend(r);
        pthread_mutex_unlock(&y->mu);
        return k ? (int)k : HD_BODY_WAIT;
    }
    pthread_mutex_unlock(&y->mu);
    return 0;
}

static long relay_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct relay *y = cls;
    long n;

    (void)pos;
    pthread_mutex_lock(&y->mu);
    n = (long)hd_ring_get(&y->down, buf, max);
    if (n > 0) {
        pthread_cond_broadcast(&y->cv);
    } else if (y->done) {
        n = y->failed ? HD_STREAM_ERROR : HD_STREAM_END;
    } else if (y->r) {
        y->mhd_wait_data = 1;
        hd_req_suspend(y->r);
        n = 0;
    } else {
        n = HD_STREAM_ERROR;
    }
    pthread_mutex_unlock(&y->mu);
    return n;
}

static void relay_free_cb(void *cls)
{
    relay_unref(cls);
}

static void relay_end(struct hd_req *r)
{
    struct relay *y = r->data;
    size_t i;
    long status;
    int64_t len;
    int failed;
    char err[CURL_ERROR_SIZE];

    pthread_mutex_lock(&y->mu);
    if (!y->up_eof) {
        y->up_eof = 1;
        pthread_cond_broadcast(&y->cv);
    }
    if (!y->head_done) {
        y->mhd_wait_data = 1;
        hd_req_suspend(r);
        pthread_mutex_unlock(&y->mu);
        return;
    }
    failed = y->failed && y->status < 200;
    status = y->status;
    len = y->resp_len;
    snprintf(err, sizeof(err), "%s", y->err);
    for (i = 0; !failed && i < y->nrh; i++)
        hd_resp_header(r, y->rh[i].k, y->rh[i].v);
    if (y->reqid[0])
        snprintf(r->id, sizeof(r->id), "%.16s", y->reqid);
    if (!failed)
        y->refs++; /* the response's */
    pthread_mutex_unlock(&y->mu);
    if (failed) {
        char msg[400];
        snprintf(msg, sizeof(msg), "The storage node did not answer: %s", err);
        HD_LOG(HD_WARN, r->id, "relay %s: %s", y->url, err);
        hd_resp_err_msg(r, HD_EUNAVAIL, msg);
        return;
    }
    if (strcmp(r->method, "HEAD") == 0 || status == 204 || status == 304)
        len = len < 0 ? 0 : len;
    if (hd_resp_stream(r, (int)status, len < 0 ? UINT64_MAX : (uint64_t)len, relay_read, y,
                       relay_free_cb) < 0) {
        relay_unref(y);
        hd_resp_err(r, -ENOMEM);
    }
}

static void relay_done(struct hd_req *r)
{
    struct relay *y = r->data;

    if (!y || y->magic != RELAY_MAGIC)
        return;
    pthread_mutex_lock(&y->mu);
    y->r = NULL;
    y->mhd_wait_data = y->mhd_wait_space = 0;
    pthread_cond_broadcast(&y->cv);
    pthread_mutex_unlock(&y->mu);
    r->data = NULL;
    relay_unref(y);
}

static int skip_request_header(const char *k)
{
    static const char *const skip[] = {
        "connection", "keep-alive", "proxy-authorization", "te", "trailer", "transfer-encoding",
        "upgrade",    "expect",     "content-length",      NULL};
    size_t i;

    for (i = 0; skip[i]; i++)
        if (strcasecmp(k, skip[i]) == 0)
            return 1;
    /* X-Hoard-* is the cluster's own vocabulary (proxy signature, rebalance metadata):
     * a client must not be able to smuggle it to a target under the proxy's signature */
    return strncasecmp(k, "x-hoard-", 8) == 0;
}

static int add_header(struct curl_slist **l, const char *k, const char *v)
{
    char line[8192];
    struct curl_slist *n;

    /* "Name;" sends an empty value; "Name:" would delete a curl default */
    if (*v)
        snprintf(line, sizeof(line), "%s: %s", k, v);
    else
        snprintf(line, sizeof(line), "%s;", k);
    n = curl_slist_append(*l, line);
    if (!n)
        return -ENOMEM;
    *l = n;
    return 0;
}

int hd_relay_start(struct hd_req *r, const char *url, const struct hd_kv *extra, size_t nextra)
{
    struct relay *y = calloc(1, sizeof(*y));
    size_t i;
    int rc = -ENOMEM;

    if (!y)
        return -ENOMEM;
    y->magic = RELAY_MAGIC;
    pthread_mutex_init(&y->mu, NULL);
    pthread_cond_init(&y->cv, NULL);
    y->refs = 2; /* request + transfer */
    y->r = r;
    y->url = strdup(url);
    snprintf(y->method, sizeof(y->method), "%s", r->method);
    if (r->content_length >= 0)
        y->has_body = r->content_length > 0 || strcmp(r->method, "PUT") == 0 ||
                      strcmp(r->method, "POST") == 0;
    else
        y->has_body = hd_req_header(r, "Transfer-Encoding") != NULL;
    y->body_len = r->content_length;
    if (!y->url || hd_ring_init(&y->down, RING_MIN, HD_RELAY_BUF) < 0 ||
        (y->has_body && hd_ring_init(&y->up, RING_MIN, HD_RELAY_BUF) < 0))
        goto fail;
    for (i = 0; i < r->nhdrs; i++)
        if (!skip_request_header(r->hdrs[i].k) &&
            add_header(&y->hdrs, r->hdrs[i].k, r->hdrs[i].v) < 0)
            goto fail;
    for (i = 0; i < nextra; i++)
        if (add_header(&y->hdrs, extra[i].k, extra[i].v) < 0)
            goto fail;
    /* "Expect:" removes curl's own 100-continue: no extra round trip inside the cluster */
    {
        struct curl_slist *n = curl_slist_append(y->hdrs, "Expect:");
        if (!n)
            goto fail;
        y->hdrs = n;
    }
    if ((rc = submit(y)) < 0)
        goto fail;
    r->data = y;
    r->on_body = relay_body;
    r->on_end = relay_end;
    r->on_done = relay_done;
    return 0;
fail:
    y->refs = 1;
    relay_unref(y);
    return rc;
}
