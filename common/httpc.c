#include "common/httpc.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "common/log.h"
#include "common/tls.h"

#define CALL_MAGIC 0x68637431u /* "hct1" */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t multi_key;

static void multi_free(void *m)
{
    curl_multi_cleanup(m);
}

static void init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    pthread_key_create(&multi_key, multi_free);
}

/* The calling thread's multi handle: its connection cache outlives single calls. */
static CURLM *thread_multi(void)
{
    CURLM *m;

    pthread_once(&once, init_once);
    m = pthread_getspecific(multi_key);
    if (m)
        return m;
    m = curl_multi_init();
    if (!m)
        return NULL;
    curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, 64L);
    if (pthread_setspecific(multi_key, m) != 0) {
        curl_multi_cleanup(m);
        return NULL;
    }
    return m;
}

void hd_httpc_call_init(struct hd_httpc_call *c, const char *method, const char *url)
{
    memset(c, 0, sizeof(*c));
    c->method = method;
    c->url = url;
    hd_buf_init(&c->resp);
}

void hd_httpc_call_cleanup(struct hd_httpc_call *c)
{
    if (!c)
        return;
    hd_buf_cleanup(&c->resp);
}

/* Per-transfer state kept beside the easy handle (CURLOPT_PRIVATE). */
struct xfer {
    uint32_t magic;
    struct hd_httpc_call *c;
    CURL *e;
    struct curl_slist *hl;
    char errbuf[CURL_ERROR_SIZE]; /* libcurl's detail (a TLS verification failure's reason) */
};

static size_t on_write(char *p, size_t sz, size_t nm, void *arg)
{
    struct xfer *x = arg;
    size_t n = sz * nm;

    if (x->c->resp.len + n > HD_HTTPC_MAX_BODY) {
        x->c->rc = -EFBIG;
        return 0;
    }
    if (hd_buf_append(&x->c->resp, p, n) < 0) {
        x->c->rc = -ENOMEM;
        return 0;
    }
    return n;
}

/* X-Hoard-Node and X-Hoard-Signature of a signed answer. */
static size_t on_header(char *p, size_t sz, size_t nm, void *arg)
{
    struct xfer *x = arg;
    size_t n = sz * nm, k;
    char *dst = NULL;
    size_t max = 0;

    if (n > 13 && strncasecmp(p, "X-Hoard-Node:", 13) == 0) {
        dst = x->c->resp_node;
        max = sizeof(x->c->resp_node);
        k = 13;
    } else if (n > 18 && strncasecmp(p, "X-Hoard-Signature:", 18) == 0) {
        dst = x->c->resp_sig;
        max = sizeof(x->c->resp_sig);
        k = 18;
    }
    if (dst) {
        size_t end = n;
        while (k < end && (p[k] == ' ' || p[k] == '\t'))
            k++;
        while (end > k && (p[end - 1] == '\r' || p[end - 1] == '\n' || p[end - 1] == ' '))
            end--;
        if (end - k < max) {
            memcpy(dst, p + k, end - k);
            dst[end - k] = '\0';
        }
    }
    return n;
}

static int xfer_sign(struct hd_httpc_call *c)
{
    char sha[65];

    hd_nodeauth_sha256_hex(c->body, c->body ? c->blen : 0, sha);
    return hd_nodeauth_sign(c->na, c->method, c->url, c->to[0] ? c->to : NULL, sha, c->hdrs,
                            c->nhdrs, &c->sig);
}

static int xfer_setup(struct xfer *x, struct hd_httpc_call *c)
{
    char line[1024];
    size_t i;
    CURL *e;

    memset(x, 0, sizeof(*x));
    x->magic = CALL_MAGIC;
    x->c = c;
    c->rc = 0;
    c->status = 0;
    c->err[0] = '\0';
    c->resp_node[0] = c->resp_sig[0] = '\0';
    hd_buf_reset(&c->resp);
    if (c->na && xfer_sign(c) < 0)
        return -ENOMEM;
    e = curl_easy_init();
    if (!e)
        return -ENOMEM;
    x->e = e;
    x->hl = curl_slist_append(NULL, "Expect:");
    if (c->ctype && c->body) {
        snprintf(line, sizeof(line), "Content-Type: %s", c->ctype);
        x->hl = curl_slist_append(x->hl, line);
    }
    for (i = 0; i < c->nhdrs; i++) {
        snprintf(line, sizeof(line), "%s: %s", c->hdrs[i].k, c->hdrs[i].v);
        x->hl = curl_slist_append(x->hl, line);
    }
    for (i = 0; c->na && i < c->sig.n; i++) {
        snprintf(line, sizeof(line), "%s: %s", c->sig.kv[i].k, c->sig.kv[i].v);
        x->hl = curl_slist_append(x->hl, line);
    }
    if (!x->hl)
        return -ENOMEM;
    curl_easy_setopt(e, CURLOPT_URL, c->url);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
    hd_tls_curl(e);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->hl);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     c->connect_ms > 0 ? c->connect_ms : (long)HD_HTTPC_CONNECT_MS);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS,
                     c->total_ms > 0 ? c->total_ms : (long)HD_HTTPC_TOTAL_MS);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L); /* the signed path is the path sent */
    if (c->fresh) {
        curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
        curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
    }
    curl_easy_setopt(e, CURLOPT_PRIVATE, x);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    if (strcmp(c->method, "HEAD") == 0) {
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else if (c->body) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, c->body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)c->blen);
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, c->method);
    } else if (strcmp(c->method, "GET") != 0) {
        if (strcmp(c->method, "POST") == 0 || strcmp(c->method, "PUT") == 0) {
            curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
            curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
        }
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, c->method);
    }
    return 0;
}

static void xfer_finish(struct xfer *x, CURLcode res)
{
    struct hd_httpc_call *c = x->c;

    if (res == CURLE_OK) {
        curl_easy_getinfo(x->e, CURLINFO_RESPONSE_CODE, &c->status);
        if (c->na && c->signed_resp && hd_nodeauth_on(c->na) &&
            hd_nodeauth_resp_verify(c->na, c->to[0] ? c->to : c->resp_node, c->sig.nonce, c->status,
                                    c->resp.data, c->resp.len, c->resp_sig) != 0) {
            c->rc = -EACCES;
            snprintf(c->err, sizeof(c->err),
                     "%s %s: the answer (HTTP %ld) has no valid node signature", c->method, c->url,
                     c->status);
        }
    } else if (c->rc == 0) {
        switch (res) {
        case CURLE_OPERATION_TIMEDOUT:
            c->rc = -ETIMEDOUT;
            break;
        case CURLE_COULDNT_CONNECT:
        case CURLE_COULDNT_RESOLVE_HOST:
            c->rc = -ECONNREFUSED;
            break;
        case CURLE_OUT_OF_MEMORY:
            c->rc = -ENOMEM;
            break;
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_CACERT_BADFILE:
            c->rc = -EPROTO; /* TLS: a certificate the other side or we do not accept */
            break;
        default:
            c->rc = -EIO;
        }
    }
    if (c->rc < 0 && !c->err[0])
        snprintf(c->err, sizeof(c->err), "%s %s: %.120s", c->method, c->url,
                 res != CURLE_OK ? (x->errbuf[0] ? x->errbuf : curl_easy_strerror(res))
                                 : strerror(-c->rc));
}

static void xfer_release(CURLM *m, struct xfer *x)
{
    if (x->e) {
        curl_multi_remove_handle(m, x->e);
        curl_easy_cleanup(x->e);
    }
    curl_slist_free_all(x->hl);
    x->e = NULL;
    x->hl = NULL;
    x->magic = 0;
}

int hd_httpc_run_all(struct hd_httpc_call *calls, size_t n, size_t parallel)
{
    CURLM *m = thread_multi();
    struct xfer *xs;
    size_t next = 0, active = 0, i;
    int still, rc = 0;

    if (n == 0)
        return 0;
    if (parallel == 0 || parallel > n)
        parallel = n;
    xs = calloc(n, sizeof(*xs));
    if (!m || !xs) {
        for (i = 0; i < n; i++) {
            calls[i].rc = -ENOMEM;
            snprintf(calls[i].err, sizeof(calls[i].err), "out of memory");
        }
        free(xs);
        return -ENOMEM;
    }
    for (;;) {
        CURLMsg *msg;
        int left;
        while (active < parallel && next < n) {
            struct xfer *x = &xs[next];
            struct hd_httpc_call *c = &calls[next++];
            if (xfer_setup(x, c) < 0 || curl_multi_add_handle(m, x->e) != CURLM_OK) {
                c->rc = -ENOMEM;
                snprintf(c->err, sizeof(c->err), "cannot start %s %s", c->method, c->url);
                xfer_release(m, x);
                continue;
            }
            active++;
        }
        if (active == 0)
            break;
        if (curl_multi_perform(m, &still) != CURLM_OK) {
            rc = -EIO;
            break;
        }
        while ((msg = curl_multi_info_read(m, &left))) {
            struct xfer *x;
            char *priv = NULL;
            if (msg->msg != CURLMSG_DONE)
                continue;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
            x = (struct xfer *)(void *)priv;
            if (!x || x->magic != CALL_MAGIC)
                continue;
            xfer_finish(x, msg->data.result);
            xfer_release(m, x);
            active--;
        }
        if (active > 0 && still > 0)
            curl_multi_poll(m, NULL, 0, 100, NULL);
    }
    for (i = 0; i < n; i++) /* only after a multi failure */
        if (xs[i].magic == CALL_MAGIC) {
            calls[i].rc = -EIO;
            snprintf(calls[i].err, sizeof(calls[i].err), "transfer aborted");
            xfer_release(m, &xs[i]);
        }
    free(xs);
    return rc;
}

int hd_httpc_run(struct hd_httpc_call *c)
{
    hd_httpc_run_all(c, 1, 1);
    return c->rc;
}

int hd_httpc_json(struct hd_nodeauth *na, const char *to, const char *method, const char *url,
                  const json_t *in, long total_ms, long *status, json_t **out)
{
    struct hd_httpc_call c;
    char *body = NULL;
    int rc;

    *out = NULL;
    *status = 0;
    if (in) {
        body = json_dumps(in, JSON_COMPACT);
        if (!body)
            return -ENOMEM;
    }
    hd_httpc_call_init(&c, method, url);
    c.na = na;
    snprintf(c.to, sizeof(c.to), "%s", to ? to : "");
    c.signed_resp = 1;
    c.body = body;
    c.blen = body ? strlen(body) : 0;
    c.ctype = body ? "application/json" : NULL;
    c.total_ms = total_ms;
    rc = hd_httpc_run(&c);
    if (rc == 0 || rc == -EACCES)
        *status = c.status; /* -EACCES: an answer came, unsigned (a refusal, as a rule) */
    if (rc == 0) {
        if (c.resp.len)
            *out = json_loadb(c.resp.data, c.resp.len, 0, NULL);
    } else if (rc == -EPROTO) {
        /* a TLS setup error does not heal by itself: say it, but not on every retry */
        static _Atomic int64_t last;
        int64_t now = (int64_t)time(NULL), was = atomic_load(&last);
        if (now - was >= 30 && atomic_compare_exchange_strong(&last, &was, now))
            HD_LOG(HD_WARN, NULL, "httpc: TLS: %s (check tls.ca and the peer's certificate)",
                   c.err);
    } else {
        HD_LOG(HD_DEBUG, NULL, "httpc: %s", c.err);
    }
    hd_httpc_call_cleanup(&c);
    free(body);
    return rc;
}
