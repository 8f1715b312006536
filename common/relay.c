#include "common/relay.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <strings.h>
#include <unistd.h>

#include <curl/curl.h>
#include <uv.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/httputil.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/ring.h"
#include "common/tls.h"

#define RELAY_MAGIC 0x726c6179u

/* Each direction's window starts at RING_MIN and grows up to HD_RELAY_BUF only when data
 * backs up, so a small object costs a small buffer (no 1 MiB allocation and page faults per
 * request), and a large stream still gets the whole window. */
#define RING_MIN (64u * 1024)
/* The download window may exceed HD_RELAY_BUF by what libcurl has read when it is paused
 * (on_write): at most one CURLOPT_BUFFERSIZE. */
#define CURL_BUF (256L * 1024)
#define DOWN_SLACK ((size_t)CURL_BUF)
/* A parked side is woken when this much is buffered for it, when its answer or body is
 * complete, or (a trickling peer) LAZY_MS after data came: every suspend/resume or unpause
 * costs a thread wake-up, so it should move a good share of the window. */
#define WAKE_MIN (128u * 1024)
#define LAZY_MS 2
/* Easy handles kept for reuse (each keeps libcurl's 256 KiB transfer buffer). */
#define IDLE_MAX 32
/* Freed relays kept per loop for reuse, with their RING_MIN windows and URL buffer: a small
 * relay allocates nothing of its own but libcurl's header list. */
#define POOL_MAX 64
/* Every TRIM_MS each loop frees the idle handles and pooled relays beyond the most transfers
 * it ran at once in that period: a burst's buffers do not stay for good (a quiet loop keeps
 * none), and the allocator can give them back (common/http.c, hd_http_idle_trim). */
#define TRIM_MS 3000
/* Header text buffers a pooled relay keeps for the next one (larger ones are freed). */
#define KEEP_TEXT (16u * 1024)

struct rloop;

struct relay {
    uint32_t magic;
    atomic_int refs; /* request (on_done), response (free_cb), transfer, loop queue entry */
    struct rloop *loop;
    size_t url_cap;
    pthread_mutex_t mu; /* the fields both threads touch, down to `reqid` */
    struct hd_req *r;   /* NULL once the client side is finished */
    char *url;
    char method[16];
    /* the request's header lines for libcurl: nodes and text of this relay's own, kept with
     * it in the pool (no malloc per line) */
    struct curl_slist *hdrs;
    size_t hdrs_cap;
    struct hd_buf qtext;
    int has_body;
    int64_t body_len;                  /* -1: chunked */
    const struct hd_relay_filter *flt; /* NULL: the body and answer pass as they are */
    void *farg;
    int cancel; /* the filter refused the body: the transfer is aborted */
    int handed; /* given to the loop (at once without a body, else once data is ready) */

    struct hd_ring up; /* client -> node */
    uint64_t up_total;
    int up_eof;
    int mhd_wait_space; /* client side parked until `up` has room */
    int curl_wait_data; /* upload paused until `up` has data or the end */
    int lazy_asked;     /* the loop was asked to unpause it soon even below WAKE_MIN */

    struct hd_ring down; /* node -> client */
    uint64_t down_total;
    int mhd_wait_data;   /* client side parked until headers, data or the end */
    int streaming;       /* the client side has queued its response (reads `down`) */
    int curl_wait_space; /* download paused until `down` has down_need free */
    size_t down_need;
    int unpause; /* the loop is to call curl_easy_pause(CONT) */

    int done;   /* transfer finished (ok or not) */
    int failed; /* before headers: connect/transfer error; after: body cut short */
    char err[CURL_ERROR_SIZE];
    int head_done;
    long status;
    /* the answer's headers passed on: "name\0value\0" each in htext (kept in the pool),
     * made into rh at relay_end */
    struct hd_buf htext;
    size_t nrh;
    struct hd_kv *rh;
    size_t rh_cap;
    int64_t resp_len;
    char reqid[64];

    /* loop thread only (inq: under loop->qmu) */
    CURL *easy;
    curl_socket_t sock; /* its connection's, as libcurl last asked to watch it (-1: none) */
    int inq, on_lazy;
    struct relay *qnext, *lazy_next, *run_prev, *run_next;
    struct relay *wnext; /* on_async's own walk: qnext may be reused once inq is cleared */
};

/* A socket libcurl asked the loop to watch, kept by descriptor number for reuse: curl drops
 * the watch each time a keep-alive connection goes back to its cache. */
struct sock {
    uv_poll_t poll;
    curl_socket_t fd;
    struct rloop *l;
    int ev;     /* the events watched now, 0 when stopped */
    int parked; /* dropped by curl (a cached keep-alive connection) but still watched */
};

/* One libuv loop driving one libcurl multi handle: an HTTP worker's own loop (loop mode,
 * common/http.h: the client and node sides of a relay run on the same thread, no hand-off),
 * or a thread of the relay's own (thread-pool mode). */
struct rloop {
    struct hd_relay *rl;
    uv_loop_t *uv;    /* &own_uv, or the HTTP worker's */
    uv_loop_t own_uv; /* own thread only */
    int own_thread;
    pthread_t thr;     /* the thread that runs uv */
    uv_async_t async;  /* the queue has entries (from another thread), or stop */
    uv_idle_t soon;    /* the queue has entries (from the loop's thread: no wake-up needed) */
    uv_timer_t timer;  /* libcurl's */
    uv_timer_t lazy_t; /* wakes the `lazy` list */
    uv_timer_t trim_t; /* drops what the last TRIM_MS did not need */
    CURLM *multi;
    pthread_mutex_t qmu; /* the queue, `stopping`, the relay pool */
    struct relay *qhead, *qtail;
    int stopping;
    struct relay *pool; /* freed relays kept for reuse, with their small windows */
    int npool;
    struct rloop *next; /* in rl->loops */
    /* loop thread only */
    struct relay *lazy, *run;
    int nrun, peak; /* transfers running; most at once since the last trim */
    CURL *idle[IDLE_MAX];
    int nidle;
    struct sock **socks;
    size_t nsocks;
};

struct hd_relay {
    pthread_mutex_t mu; /* `shared`, `loops` */
    struct rloop *shared;
    int shared_running;
    struct rloop *loops; /* one per HTTP worker loop that relayed (loop mode) */
    atomic_int inflight; /* relays started and not yet freed */
    int max;             /* relays at once (each may hold two windows) */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

/* Keeps a ring's buffer for the next relay if it is still at its first size. */
static void ring_keep(struct hd_ring *g)
{
    if (g->cap > RING_MIN)
        hd_ring_cleanup(g);
    g->head = g->len = 0;
}

/* A ring ready for a new relay: the kept buffer, or a new one. */
static int ring_ready(struct hd_ring *g, size_t max)
{
    if (g->buf && g->cap) {
        g->head = g->len = 0;
        g->max = max > g->cap ? max : g->cap;
        return 0;
    }
    return hd_ring_init(g, RING_MIN, max);
}

/* What a pooled relay keeps for the next one. */
struct kept {
    struct hd_ring up, down;
    char *url;
    size_t url_cap;
    struct curl_slist *hdrs;
    size_t hdrs_cap;
    struct hd_buf qtext, htext;
    struct hd_kv *rh;
    size_t rh_cap;
};

static void text_keep(struct hd_buf *b)
{
    if (b->oom || b->cap > KEEP_TEXT)
        hd_buf_cleanup(b);
    hd_buf_reset(b);
}

static void kept_free(struct kept *k)
{
    hd_ring_cleanup(&k->up);
    hd_ring_cleanup(&k->down);
    free(k->url);
    free(k->hdrs);
    hd_buf_cleanup(&k->qtext);
    hd_buf_cleanup(&k->htext);
    free(k->rh);
}

static void kept_take(struct relay *y, struct kept *k)
{
    *k = (struct kept){.up = y->up,
                       .down = y->down,
                       .url = y->url,
                       .url_cap = y->url_cap,
                       .hdrs = y->hdrs,
                       .hdrs_cap = y->hdrs_cap,
                       .qtext = y->qtext,
                       .htext = y->htext,
                       .rh = y->rh,
                       .rh_cap = y->rh_cap};
}

/* Frees a relay that is not pooled (with what it kept). */
static void relay_destroy(struct relay *y)
{
    struct kept k;

    kept_take(y, &k);
    kept_free(&k);
    y->magic = 0;
    free(y);
}

static void relay_unref(struct relay *y)
{
    struct rloop *l = y->loop;
    struct hd_relay *rl = l->rl;
    struct kept k;

    if (atomic_fetch_sub(&y->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&y->mu);
    kept_take(y, &k);
    ring_keep(&k.up);
    ring_keep(&k.down);
    text_keep(&k.qtext);
    text_keep(&k.htext);
    pthread_mutex_lock(&l->qmu);
    if (l->npool < POOL_MAX && !l->stopping) {
        memset(y, 0, sizeof(*y)); /* magic 0 too */
        y->up = k.up;
        y->down = k.down;
        y->url = k.url;
        y->url_cap = k.url_cap;
        y->hdrs = k.hdrs;
        y->hdrs_cap = k.hdrs_cap;
        y->qtext = k.qtext;
        y->htext = k.htext;
        y->rh = k.rh;
        y->rh_cap = k.rh_cap;
        y->loop = l;
        y->qnext = l->pool;
        l->pool = y;
        l->npool++;
        y = NULL;
    }
    pthread_mutex_unlock(&l->qmu);
    if (y)
        relay_destroy(y);
    atomic_fetch_sub(&rl->inflight, 1);
    hd_stats_inc(HD_ST_RELAY_ENDED);
}

/* A relay from l's pool, or a new one (zeroed but for kept buffers). */
static struct relay *relay_get(struct rloop *l)
{
    struct relay *y;

    pthread_mutex_lock(&l->qmu);
    y = l->pool;
    if (y) {
        l->pool = y->qnext;
        l->npool--;
        y->qnext = NULL;
    }
    pthread_mutex_unlock(&l->qmu);
    if (!y && (y = calloc(1, sizeof(*y))))
        y->loop = l;
    return y;
}

static void pool_free(struct rloop *l)
{
    while (l->pool) {
        struct relay *y = l->pool;
        l->pool = y->qnext;
        relay_destroy(y);
    }
    l->npool = 0;
}

static void on_soon(uv_idle_t *h);

/* Any thread: asks the loop to look at y (start it, unpause it, abort it, or put it on the
 * lazy list). -1 when the loop is stopping (the request is dropped). */
static int poke(struct relay *y)
{
    struct rloop *l = y->loop;
    int send = 0, rc = 0;

    pthread_mutex_lock(&l->qmu);
    if (l->stopping) {
        rc = -1;
    } else if (!y->inq) {
        y->inq = 1;
        atomic_fetch_add(&y->refs, 1);
        y->qnext = NULL;
        if (l->qtail)
            l->qtail->qnext = y;
        else
            l->qhead = y;
        l->qtail = y;
        send = 1;
    }
    pthread_mutex_unlock(&l->qmu);
    if (!send)
        return rc;
    /* from the loop's own thread (an HTTP worker's loop): the queue is served once the
     * current callback returns, without a wake-up; from any other thread, the async
     * coalesces: one eventfd write while the loop is busy */
    if (!l->own_thread && pthread_equal(l->thr, pthread_self()))
        uv_idle_start(&l->soon, on_soon);
    else
        uv_async_send(&l->async);
    return rc;
}

/* ---- loop thread ---- */

static void on_lazy(uv_timer_t *t);

static void lazy_add(struct rloop *l, struct relay *y)
{
    if (y->on_lazy)
        return;
    y->on_lazy = 1;
    y->lazy_next = l->lazy;
    l->lazy = y;
    if (!uv_is_active((uv_handle_t *)&l->lazy_t))
        uv_timer_start(&l->lazy_t, on_lazy, LAZY_MS, 0);
}

/* Resumes the client side if what it waits for is there: the whole answer, WAKE_MIN bytes,
 * or, for a parked response head, the head of a big answer. Otherwise a trickle is put on
 * the lazy list. Loop thread, y->mu held. */
static void client_check(struct relay *y)
{
    uint64_t expect;
    int ready;

    if (!y->r || !y->mhd_wait_data || !y->head_done)
        return;
    if (strcmp(y->method, "HEAD") == 0 || y->status == 204 || y->status == 304)
        expect = 0;
    else
        expect = y->resp_len < 0 ? UINT64_MAX : (uint64_t)y->resp_len;
    ready = y->done || y->down_total >= expect || y->down.len >= WAKE_MIN;
    if (ready) {
        y->mhd_wait_data = 0;
        hd_req_resume(y->r);
    } else if (y->down.len || !y->streaming) {
        lazy_add(y->loop, y);
    }
}

/* Response headers not passed on to the client. */
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
                                      "x-amz-id-2",
                                      NULL};
    size_t i;

    for (i = 0; hop[i]; i++)
        if (strcasecmp(k, hop[i]) == 0)
            return 1;
    /* the cluster's own vocabulary (object metadata, node signatures) stays inside it */
    return strncasecmp(k, "x-hoard-", 8) == 0;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    struct relay *y = arg;
    size_t len = size * n, kl;
    char *colon, *v, *e;

    if (y->magic != RELAY_MAGIC)
        return 0;
    pthread_mutex_lock(&y->mu);
    if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) {
        long st = 0;
        const char *sp = memchr(p, ' ', len);
        if (sp)
            st = strtol(sp + 1, NULL, 10);
        y->status = st;
        y->resp_len = -1;
        goto out;
    }
    if (len <= 2) { /* blank line: end of one header block */
        if (y->status >= 200 && !y->head_done) {
            y->head_done = 1;
            client_check(y);
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
        /* strictly digits (libcurl has checked it too); anything else: length unknown, the
         * answer is streamed chunked to the client */
        char num[24];
        uint64_t cl;
        snprintf(num, sizeof(num), "%.*s", (int)(e - v), v);
        y->resp_len =
            (size_t)(e - v) < sizeof(num) && hd_parse_u64(num, &cl) == 0 && cl <= INT64_MAX
                ? (int64_t)cl
                : -1;
        goto out;
    }
    if (kl == 16 && strncasecmp(p, "x-amz-request-id", 16) == 0) {
        snprintf(y->reqid, sizeof(y->reqid), "%.*s", (int)(e - v), v);
        goto out;
    }
    {
        size_t at = y->htext.len;
        /* the name NUL-terminated in the buffer, then checked; the value after it. A header
         * that does not fit (no memory) is left out, as before. */
        if (hd_buf_append(&y->htext, p, kl) < 0 || hd_buf_append(&y->htext, "", 1) < 0)
            goto out;
        if (hop_by_hop(y->htext.data + at) || hd_buf_append(&y->htext, v, (size_t)(e - v)) < 0 ||
            hd_buf_append(&y->htext, "", 1) < 0) {
            y->htext.len = at;
            goto out;
        }
        y->nrh++;
    }
out:
    pthread_mutex_unlock(&y->mu);
    return len;
}

/* An aborted transfer's connection is never cached, and is reset when closed: the node must
 * see the body cut short, and a FIN alone leaves libmicrohttpd waiting on a half-closed
 * upload until its timeout, holding the put's temporary file. Loop thread. */
static void reset_on_close(struct relay *y)
{
    curl_socket_t fd = y->sock;

    if (!y->easy)
        return;
    if (fd == CURL_SOCKET_BAD) /* a cached connection libcurl had no reason to watch again */
        curl_easy_getinfo(y->easy, CURLINFO_ACTIVESOCKET, &fd);
    if (fd != CURL_SOCKET_BAD) {
        struct linger lg = {1, 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    }
    curl_easy_setopt(y->easy, CURLOPT_FORBID_REUSE, 1L);
}

/* Takes all of p. Once the window holds HD_RELAY_BUF bytes the download is paused from inside
 * the callback (curl_easy_pause(RECV)): libcurl still hands over the rest of the buffer it has
 * read (in 16 KiB calls, into the ring's DOWN_SLACK), and reads no more until the client side,
 * having drained half the window, asks the loop for curl_easy_pause(CONT). Returning
 * CURL_WRITEFUNC_PAUSE instead would make libcurl copy what it holds into a buffer of its own
 * (a malloc and a copy per pause), which is left for a window that cannot grow (no memory). */
static size_t on_write(char *p, size_t size, size_t n, void *arg)
{
    struct relay *y = arg;
    size_t len = size * n;
    int pause_now = 0;

    if (y->magic != RELAY_MAGIC)
        return 0;
    pthread_mutex_lock(&y->mu);
    if (!y->r || y->cancel) { /* client gone: abort the transfer */
        pthread_mutex_unlock(&y->mu);
        reset_on_close(y);
        return 0;
    }
    if (!y->head_done) /* some servers send no blank line callback before the body */
        y->head_done = 1;
    if (hd_ring_room(&y->down, len) < len) {
        if (y->down.len == 0) { /* the window cannot grow: no memory */
            snprintf(y->err, sizeof(y->err), "out of memory");
            pthread_mutex_unlock(&y->mu);
            return 0;
        }
        y->curl_wait_space = 1;
        y->down_need = len;
        client_check(y);
        pthread_mutex_unlock(&y->mu);
        return CURL_WRITEFUNC_PAUSE;
    }
    hd_ring_put(&y->down, p, len);
    y->down_total += len;
    if (!y->curl_wait_space && y->down.len >= HD_RELAY_BUF) {
        y->curl_wait_space = 1;
        y->down_need = 0;
        pause_now = 1;
    }
    client_check(y);
    pthread_mutex_unlock(&y->mu);
    /* loop thread: an unpause the client side asks for is serviced after this returns */
    if (pause_now)
        curl_easy_pause(y->easy, CURLPAUSE_RECV);
    return len;
}

static size_t on_read(char *p, size_t size, size_t n, void *arg)
{
    struct relay *y = arg;
    size_t got;

    if (y->magic != RELAY_MAGIC)
        return CURL_READFUNC_ABORT;
    pthread_mutex_lock(&y->mu);
    got = hd_ring_get(&y->up, p, size * n);
    if (got) {
        if (y->mhd_wait_space && y->r && y->up.len <= y->up.cap / 2) {
            y->mhd_wait_space = 0;
            hd_req_resume(y->r);
        }
    } else if (!y->up_eof || y->cancel) {
        if (!y->r || y->cancel) {
            pthread_mutex_unlock(&y->mu);
            reset_on_close(y);
            return CURL_READFUNC_ABORT;
        }
        y->curl_wait_data = 1;
        y->lazy_asked = 0;
        pthread_mutex_unlock(&y->mu);
        return CURL_READFUNC_PAUSE;
    }
    pthread_mutex_unlock(&y->mu);
    return got;
}

static void run_unlink(struct rloop *l, struct relay *y)
{
    if (y->run_prev)
        y->run_prev->run_next = y->run_next;
    else
        l->run = y->run_next;
    if (y->run_next)
        y->run_next->run_prev = y->run_prev;
    y->run_prev = y->run_next = NULL;
}

static void lazy_remove(struct rloop *l, struct relay *y)
{
    struct relay **pp;

    if (!y->on_lazy)
        return;
    for (pp = &l->lazy; *pp; pp = &(*pp)->lazy_next)
        if (*pp == y) {
            *pp = y->lazy_next;
            break;
        }
    y->on_lazy = 0;
}

/* Ends y's transfer: records the outcome, wakes a parked client side, drops the transfer's
 * reference. msg overrides libcurl's error text. Any thread that owns the transfer. */
static void end_transfer(struct relay *y, CURLcode cc, const char *msg)
{
    pthread_mutex_lock(&y->mu);
    y->done = 1;
    if (cc != CURLE_OK || msg) {
        y->failed = 1;
        if (msg)
            snprintf(y->err, sizeof(y->err), "%s", msg);
        else if (!y->err[0])
            snprintf(y->err, sizeof(y->err), "%s", curl_easy_strerror(cc));
        if (!y->r || msg)
            hd_stats_inc(HD_ST_RELAY_ABORTED);
    }
    y->head_done = 1;
    if (y->r && (y->mhd_wait_data || y->mhd_wait_space)) {
        y->mhd_wait_data = y->mhd_wait_space = 0;
        hd_req_resume(y->r);
    }
    pthread_mutex_unlock(&y->mu);
    relay_unref(y);
}

static void finish(struct rloop *l, struct relay *y, CURLcode cc, const char *msg)
{
    curl_multi_remove_handle(l->multi, y->easy);
    if (l->nidle < IDLE_MAX)
        l->idle[l->nidle++] = y->easy;
    else
        curl_easy_cleanup(y->easy);
    y->easy = NULL;
    run_unlink(l, y);
    l->nrun--;
    lazy_remove(l, y);
    end_transfer(y, cc, msg);
}

static void collect(struct rloop *l)
{
    CURLMsg *m;
    int left;

    while ((m = curl_multi_info_read(l->multi, &left))) {
        struct relay *y = NULL;
        if (m->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&y);
        if (!y || y->magic != RELAY_MAGIC || y->easy != m->easy_handle) {
            HD_LOG(HD_ERROR, NULL, "relay: a finished transfer has no relay");
            curl_multi_remove_handle(l->multi, m->easy_handle);
            continue;
        }
        finish(l, y, m->data.result, NULL);
    }
}

static int on_close_socket(void *arg, curl_socket_t fd);

/* A new easy handle with the options every relay shares (begin sets the rest each time:
 * a handle is reused without curl_easy_reset). */
static CURL *handle_new(struct rloop *l)
{
    CURL *c = curl_easy_init();

    if (!c)
        return NULL;
    /* connections remember these from the handle that opened them */
    curl_easy_setopt(c, CURLOPT_CLOSESOCKETFUNCTION, on_close_socket);
    curl_easy_setopt(c, CURLOPT_CLOSESOCKETDATA, l);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    /* a stalled peer: under 1 byte/s for 60 s ends the transfer (libcurl does not count the
     * time a download is paused for a slow client; MHD's timeout covers that side) */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
    /* large socket reads/writes: fewer callbacks and fewer client-side wakeups */
    curl_easy_setopt(c, CURLOPT_BUFFERSIZE, CURL_BUF);
    curl_easy_setopt(c, CURLOPT_UPLOAD_BUFFERSIZE, CURL_BUF);
    curl_easy_setopt(c, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
    return c;
}

static void begin(struct rloop *l, struct relay *y)
{
    CURL *c = l->nidle ? l->idle[--l->nidle] : handle_new(l);
    const char *custom = NULL;

    if (!c) {
        end_transfer(y, CURLE_OUT_OF_MEMORY, "out of memory");
        return;
    }
    y->sock = CURL_SOCKET_BAD;
    curl_easy_setopt(c, CURLOPT_URL, y->url);
    hd_tls_curl(c); /* each time: a reload (SIGHUP) applies to the next transfer */
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, y->hdrs);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, y);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, y);
    curl_easy_setopt(c, CURLOPT_READDATA, y);
    curl_easy_setopt(c, CURLOPT_PRIVATE, y);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, y->err);
    /* the method, undoing the last transfer's: NOBODY 0 and UPLOAD 0 make it a GET */
    curl_easy_setopt(c, CURLOPT_NOBODY, 0L);
    curl_easy_setopt(c, CURLOPT_UPLOAD, 0L);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)-1);
    curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 0L);
    if (strcmp(y->method, "HEAD") == 0) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (y->has_body) {
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        if (y->body_len >= 0)
            curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)y->body_len);
        if (strcmp(y->method, "PUT") != 0)
            custom = y->method;
    } else if (strcmp(y->method, "GET") != 0) {
        custom = y->method;
    }
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, custom);
    y->easy = c;
    if (curl_multi_add_handle(l->multi, c) != CURLM_OK) {
        y->easy = NULL;
        curl_easy_cleanup(c);
        end_transfer(y, CURLE_OUT_OF_MEMORY, "cannot start the transfer");
        return;
    }
    y->run_prev = NULL;
    y->run_next = l->run;
    if (l->run)
        l->run->run_prev = y;
    l->run = y;
    if (++l->nrun > l->peak)
        l->peak = l->nrun;
}

/* A queue entry: start y, abort it (client gone), unpause it, or watch a trickling upload. */
static void service(struct rloop *l, struct relay *y)
{
    int unpause, lazy, gone;

    pthread_mutex_lock(&y->mu);
    if (y->done) {
        pthread_mutex_unlock(&y->mu);
        return;
    }
    gone = !y->r || y->cancel;
    unpause = y->unpause;
    y->unpause = 0;
    lazy = y->curl_wait_data && y->lazy_asked;
    pthread_mutex_unlock(&y->mu);
    if (!y->easy) {
        if (gone)
            end_transfer(y, CURLE_ABORTED_BY_CALLBACK, NULL);
        else
            begin(l, y);
    } else if (gone) {
        reset_on_close(y);
        finish(l, y, CURLE_ABORTED_BY_CALLBACK, NULL);
    } else if (unpause) {
        curl_easy_pause(y->easy, CURLPAUSE_CONT);
    } else if (lazy) {
        lazy_add(l, y);
    }
}

static void shutdown_loop(struct rloop *l);

/* Serves the queue (and stops the loop when asked). Loop thread. */
static void drain(struct rloop *l)
{
    struct relay *q, *y;
    int stopping;

    pthread_mutex_lock(&l->qmu);
    q = l->qhead;
    l->qhead = l->qtail = NULL;
    /* Once inq is 0 and the lock is let go, another thread may queue y again, which rewrites
     * y->qnext: the walk below must not follow qnext, or it would run into the new queue and
     * drop its entries' references a second time (a use-after-free, seen under ASan). */
    for (y = q; y; y = y->qnext) {
        y->wnext = y->qnext;
        y->inq = 0;
    }
    stopping = l->stopping;
    pthread_mutex_unlock(&l->qmu);
    while (q) {
        y = q;
        q = q->wnext;
        service(l, y);
        relay_unref(y); /* the queue entry's */
    }
    collect(l);
    if (stopping)
        shutdown_loop(l);
}

static void on_async(uv_async_t *a)
{
    drain(a->data);
}

static void on_soon(uv_idle_t *h)
{
    uv_idle_stop(h);
    drain(h->data);
}

/* The lazy list: client sides parked on less than WAKE_MIN, uploads paused on a trickle. */
static void on_lazy(uv_timer_t *t)
{
    struct rloop *l = t->data;
    struct relay *y = l->lazy, *next;

    l->lazy = NULL;
    for (next = y; next; next = next->lazy_next)
        next->on_lazy = 0;
    for (; y; y = next) {
        int unpause = 0;
        next = y->lazy_next;
        pthread_mutex_lock(&y->mu);
        if (y->r && y->mhd_wait_data && y->head_done && (y->down.len || !y->streaming)) {
            y->mhd_wait_data = 0;
            hd_req_resume(y->r);
        }
        if (y->curl_wait_data && (y->up.len || y->up_eof)) {
            y->curl_wait_data = 0;
            unpause = 1;
        }
        pthread_mutex_unlock(&y->mu);
        if (unpause && y->easy)
            curl_easy_pause(y->easy, CURLPAUSE_CONT);
    }
}

static void on_timeout(uv_timer_t *t)
{
    struct rloop *l = t->data;
    int running;

    curl_multi_socket_action(l->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    collect(l);
}

static int on_curl_timer(CURLM *m, long ms, void *arg)
{
    struct rloop *l = arg;

    (void)m;
    if (ms < 0)
        uv_timer_stop(&l->timer);
    else
        uv_timer_start(&l->timer, on_timeout, (uint64_t)ms, 0);
    return 0;
}

static void on_poll(uv_poll_t *p, int status, int events)
{
    struct sock *s = p->data;
    int flags = 0, running;

    if (s->parked) { /* a cached connection closed by the peer, or stray data: curl finds out
                        when it would reuse it; stop watching */
        uv_poll_stop(&s->poll);
        s->ev = s->parked = 0;
        return;
    }
    if (status < 0)
        flags = CURL_CSELECT_ERR;
    if (events & UV_READABLE)
        flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE)
        flags |= CURL_CSELECT_OUT;
    curl_multi_socket_action(s->l->multi, s->fd, flags, &running);
    collect(s->l);
}

static int on_socket(CURL *e, curl_socket_t fd, int what, void *arg, void *sockp)
{
    struct rloop *l = arg;
    struct sock *s;
    int ev = 0;

    (void)sockp;
    if (fd < 0)
        return -1;
    if (what != CURL_POLL_REMOVE) {
        struct relay *y = NULL;
        if (curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&y) == CURLE_OK && y &&
            y->magic == RELAY_MAGIC && y->easy == e)
            y->sock = fd;
    }
    if ((size_t)fd >= l->nsocks) {
        size_t n = l->nsocks ? l->nsocks : 64;
        struct sock **ns;
        while (n <= (size_t)fd)
            n *= 2;
        ns = realloc(l->socks, n * sizeof(*ns));
        if (!ns)
            return -1;
        memset(ns + l->nsocks, 0, (n - l->nsocks) * sizeof(*ns));
        l->socks = ns;
        l->nsocks = n;
    }
    s = l->socks[fd];
    /* Every uv_poll_start or _stop is an epoll_ctl (two for a start: libuv deletes the
     * descriptor first), and libcurl drops its watch each time a keep-alive connection goes
     * back to its cache and asks for it again when the connection is reused: a connection
     * parked while watched for reading stays watched, so that the next request on it costs
     * no epoll_ctl. on_close_socket stops the watch before libcurl closes the descriptor. */
    if (what == CURL_POLL_REMOVE) {
        if (s && s->ev == UV_READABLE) {
            s->parked = 1;
        } else if (s && s->ev) {
            uv_poll_stop(&s->poll); /* kept: the descriptor number comes back */
            s->ev = 0;
        }
        return 0;
    }
    if (!s) {
        s = calloc(1, sizeof(*s));
        if (!s || uv_poll_init_socket(l->uv, &s->poll, fd) < 0) {
            free(s);
            return -1;
        }
        s->poll.data = s;
        s->fd = fd;
        s->l = l;
        l->socks[fd] = s;
    }
    if (what & CURL_POLL_IN)
        ev |= UV_READABLE;
    if (what & CURL_POLL_OUT)
        ev |= UV_WRITABLE;
    s->parked = 0;
    if (ev == s->ev)
        return 0;
    if (!ev) {
        uv_poll_stop(&s->poll);
        s->ev = 0;
        return 0;
    }
    if (uv_poll_start(&s->poll, ev, on_poll) < 0) {
        s->ev = 0;
        return -1;
    }
    s->ev = ev;
    return 0;
}

/* libcurl closes a connection's descriptor: stop watching it first (it may still be watched
 * while parked), so that the number, reused for another socket, starts afresh. */
static int on_close_socket(void *arg, curl_socket_t fd)
{
    struct rloop *l = arg;
    struct sock *s = fd >= 0 && (size_t)fd < l->nsocks ? l->socks[fd] : NULL;

    if (s && s->ev) {
        uv_poll_stop(&s->poll);
        s->ev = s->parked = 0;
    }
    return close(fd);
}

static void on_trim(uv_timer_t *t)
{
    struct rloop *l = t->data;
    struct relay *drop = NULL, *y;
    int keep = l->peak;

    while (l->nidle > keep)
        curl_easy_cleanup(l->idle[--l->nidle]);
    pthread_mutex_lock(&l->qmu);
    while (l->npool > keep) {
        y = l->pool;
        l->pool = y->qnext;
        l->npool--;
        y->qnext = drop;
        drop = y;
    }
    pthread_mutex_unlock(&l->qmu);
    while ((y = drop)) {
        drop = y->qnext;
        relay_destroy(y);
    }
    l->peak = l->nrun;
}

static void on_closed(uv_handle_t *h)
{
    if (h->type == UV_POLL)
        free(h->data);
}

static void shutdown_loop(struct rloop *l)
{
    size_t i;

    while (l->run)
        finish(l, l->run, CURLE_ABORTED_BY_CALLBACK, "the proxy is shutting down");
    while (l->nidle)
        curl_easy_cleanup(l->idle[--l->nidle]);
    curl_multi_cleanup(l->multi); /* closes the kept connections */
    l->multi = NULL;
    for (i = 0; i < l->nsocks; i++)
        if (l->socks[i])
            uv_close((uv_handle_t *)&l->socks[i]->poll, on_closed);
    free(l->socks);
    l->socks = NULL;
    l->nsocks = 0;
    uv_close((uv_handle_t *)&l->async, on_closed);
    uv_close((uv_handle_t *)&l->soon, on_closed);
    uv_close((uv_handle_t *)&l->timer, on_closed);
    uv_close((uv_handle_t *)&l->lazy_t, on_closed);
    uv_close((uv_handle_t *)&l->trim_t, on_closed);
}

static void *loop_main(void *arg)
{
    struct rloop *l = arg;
    int rc;

    uv_run(l->uv, UV_RUN_DEFAULT); /* until shutdown_loop closed every handle */
    /* every handle and every transfer is gone, or this is a leak (EBUSY) */
    if ((rc = uv_loop_close(l->uv)) < 0)
        HD_LOG(HD_ERROR, NULL, "relay: the loop closed with handles open: %s", uv_strerror(rc));
    return NULL;
}

static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

int hd_relay_new(int max, struct hd_relay **out)
{
    struct hd_relay *rl = calloc(1, sizeof(*rl));

    if (!rl)
        return -ENOMEM;
    pthread_mutex_init(&rl->mu, NULL);
    rl->max = max > 0 ? max : 1;
    *out = rl;
    return 0;
}

int hd_relay_inflight(struct hd_relay *rl)
{
    return atomic_load(&rl->inflight);
}

/* Sets up l on uv (called on the thread that runs uv, or before it starts): 0, or -ENOMEM
 * with nothing left to close. */
static int rloop_init(struct rloop *l, struct hd_relay *rl, uv_loop_t *uv)
{
    pthread_once(&curl_once, curl_init_once);
    l->rl = rl;
    l->uv = uv;
    l->multi = curl_multi_init();
    if (!l->multi)
        return -ENOMEM;
    if (uv_async_init(uv, &l->async, on_async) < 0) {
        curl_multi_cleanup(l->multi);
        l->multi = NULL;
        return -ENOMEM;
    }
    curl_multi_setopt(l->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(l->multi, CURLMOPT_SOCKETDATA, l);
    curl_multi_setopt(l->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
    curl_multi_setopt(l->multi, CURLMOPT_TIMERDATA, l);
    /* keep-alive connections to every target, as many per target as relays need */
    curl_multi_setopt(l->multi, CURLMOPT_MAXCONNECTS, 1024L);
    curl_multi_setopt(l->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 0L);
    uv_idle_init(uv, &l->soon);
    uv_timer_init(uv, &l->timer);
    uv_timer_init(uv, &l->lazy_t);
    uv_timer_init(uv, &l->trim_t);
    l->async.data = l->soon.data = l->timer.data = l->lazy_t.data = l->trim_t.data = l;
    uv_timer_start(&l->trim_t, on_trim, TRIM_MS, TRIM_MS);
    uv_unref((uv_handle_t *)&l->trim_t); /* housekeeping: keeps no loop alive */
    return 0;
}

/* Thread-pool mode: the relay's own loop thread, started on first use. NULL if it cannot be
 * started. */
static struct rloop *shared_get(struct hd_relay *rl)
{
    struct rloop *l;

    pthread_mutex_lock(&rl->mu);
    if (rl->shared_running) {
        l = rl->shared;
        goto out;
    }
    l = rl->shared;
    if (!l) {
        if (!(l = rl->shared = calloc(1, sizeof(*l))))
            goto out;
        pthread_mutex_init(&l->qmu, NULL);
    }
    l->own_thread = 1;
    if (uv_loop_init(&l->own_uv) < 0) {
        l = NULL;
        goto out;
    }
    if (rloop_init(l, rl, &l->own_uv) < 0) {
        uv_loop_close(&l->own_uv);
        l = NULL;
        goto out;
    }
    pthread_mutex_lock(&l->qmu);
    l->stopping = 0;
    pthread_mutex_unlock(&l->qmu);
    if (pthread_create(&l->thr, NULL, loop_main, l) != 0) {
        curl_multi_cleanup(l->multi);
        l->multi = NULL;
        uv_close((uv_handle_t *)&l->async, NULL);
        uv_close((uv_handle_t *)&l->soon, NULL);
        uv_close((uv_handle_t *)&l->timer, NULL);
        uv_close((uv_handle_t *)&l->lazy_t, NULL);
        uv_run(&l->own_uv, UV_RUN_DEFAULT);
        uv_loop_close(&l->own_uv);
        l = NULL;
        goto out;
    }
    rl->shared_running = 1;
out:
    pthread_mutex_unlock(&rl->mu);
    return l;
}

/* The HTTP server stops (on the worker's thread, every request of the worker ended): end
 * what is left and close l's handles; the worker's loop runs their close callbacks. */
static void rloop_stop(void *arg)
{
    struct rloop *l = arg;

    pthread_mutex_lock(&l->qmu);
    l->stopping = 1;
    pthread_mutex_unlock(&l->qmu);
    if (l->multi)
        drain(l);
}

/* Loop mode: the calling HTTP worker's relay loop, set up on its first relay. NULL if it
 * cannot be. */
static struct rloop *worker_get(struct hd_relay *rl, uv_loop_t *uv)
{
    struct rloop *l;

    pthread_mutex_lock(&rl->mu);
    for (l = rl->loops; l && l->uv != uv; l = l->next)
        ;
    if (l || !(l = calloc(1, sizeof(*l))))
        goto out;
    pthread_mutex_init(&l->qmu, NULL);
    l->rl = rl;
    l->uv = uv;
    l->thr = pthread_self();
    l->next = rl->loops;
    rl->loops = l; /* freed by hd_relay_free, working or not */
    if (hd_http_loop_at_stop(rloop_stop, l) < 0 || rloop_init(l, rl, uv) < 0) {
        HD_LOG(HD_ERROR, NULL, "relay: cannot set up on the HTTP worker's loop");
        l->stopping = 1;
    }
out:
    if (l && l->stopping)
        l = NULL;
    pthread_mutex_unlock(&rl->mu);
    return l;
}

void hd_relay_free(struct hd_relay *rl)
{
    struct rloop *l;

    if (!rl)
        return;
    pthread_mutex_lock(&rl->mu);
    if ((l = rl->shared)) {
        if (rl->shared_running) {
            pthread_mutex_lock(&l->qmu);
            l->stopping = 1;
            pthread_mutex_unlock(&l->qmu);
            uv_async_send(&l->async);
            pthread_join(l->thr, NULL);
            rl->shared_running = 0;
        }
        pool_free(l);
        pthread_mutex_destroy(&l->qmu);
        free(l);
    }
    while ((l = rl->loops)) {
        rl->loops = l->next;
        if (!l->stopping) /* its handles are on a loop that still runs: leave them */
            HD_LOG(HD_ERROR, NULL, "relay: freed before the HTTP server stopped");
        else {
            pool_free(l);
            pthread_mutex_destroy(&l->qmu);
            free(l);
        }
    }
    pthread_mutex_unlock(&rl->mu);
    pthread_mutex_destroy(&rl->mu);
    free(rl);
}

/* ---- client side (HTTP worker thread) ---- */

#define KICK_START 1
#define KICK_POKE 2

/* What the loop must hear about the upload after the client side added data or its end:
 * the start (once the body is complete or WAKE_MIN is buffered), an unpause, or a request to
 * unpause a trickle soon. y->mu held. */
static int upload_progress(struct relay *y)
{
    int ready = y->up_eof || y->up.len >= WAKE_MIN;

    if (!y->handed) {
        if (!ready)
            return 0;
        y->handed = 1;
        return KICK_START;
    }
    if (!y->curl_wait_data)
        return 0;
    if (ready) {
        y->curl_wait_data = 0;
        y->unpause = 1;
        return KICK_POKE;
    }
    if (y->up.len && !y->lazy_asked) {
        y->lazy_asked = 1;
        return KICK_POKE;
    }
    return 0;
}

static void kick(struct relay *y, int what)
{
    if (what && poke(y) < 0 && what == KICK_START)
        end_transfer(y, CURLE_ABORTED_BY_CALLBACK, "the proxy is shutting down");
}

/* hd_relay_out_fn into the upload window (y->mu held; the filter's bound keeps it in room) */
static void filter_out(void *arg, const char *p, size_t len)
{
    struct relay *y = arg;
    size_t k = hd_ring_put(&y->up, p, len);

    y->up_total += k;
    if (k < len && !y->cancel) { /* no memory to grow the window */
        y->cancel = 1;
        snprintf(y->err, sizeof(y->err), "out of memory");
    }
}

/* A filtered body: as much of data as leaves HD_RELAY_FILTER_SLACK free in the window goes
 * through the filter. Returns the count taken. y->mu held. */
static size_t filter_body(struct relay *y, const char *data, size_t len)
{
    size_t room = hd_ring_room(&y->up, len + HD_RELAY_FILTER_SLACK), k;

    if (room <= HD_RELAY_FILTER_SLACK)
        return 0;
    k = room - HD_RELAY_FILTER_SLACK < len ? room - HD_RELAY_FILTER_SLACK : len;
    if (y->flt->body(y->farg, data, k, filter_out, y) < 0)
        y->cancel = 1;
    return k;
}

static int relay_body(struct hd_req *r, const char *data, size_t len)
{
    struct relay *y = r->data;
    size_t k;
    int what, rc = 0;

    pthread_mutex_lock(&y->mu);
    if (y->cancel) { /* the filter refused the body: drop the rest, then relay_end answers */
        pthread_mutex_unlock(&y->mu);
        return 0;
    }
    if (y->done) { /* the node answered early (e.g. an error): drop the rest */
        pthread_mutex_unlock(&y->mu);
        return 0;
    }
    if (y->flt) {
        k = filter_body(y, data, len);
        if (y->cancel) {
            int tell = y->handed && !y->done;
            pthread_mutex_unlock(&y->mu);
            if (tell)
                poke(y); /* the loop aborts the transfer */
            return 0;
        }
    } else {
        k = hd_ring_put(&y->up, data, len);
        y->up_total += k;
        if (y->body_len >= 0 && y->up_total >= (uint64_t)y->body_len)
            y->up_eof = 1;
    }
    what = upload_progress(y);
    if (k < len) {
        y->mhd_wait_space = 1;
        hd_req_suspend(r);
        rc = k ? (int)k : HD_BODY_WAIT;
    }
    pthread_mutex_unlock(&y->mu);
    kick(y, what);
    return rc;
}

static long relay_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct relay *y = cls;
    int unpause = 0;
    long n;

    (void)pos;
    if (y->magic != RELAY_MAGIC)
        return HD_STREAM_ERROR;
    pthread_mutex_lock(&y->mu);
    n = (long)hd_ring_get(&y->down, buf, max);
    if (n > 0) {
        size_t room = y->down.max - y->down.len;
        if (y->curl_wait_space && room >= y->down_need && room >= y->down.max / 2) {
            y->curl_wait_space = 0;
            y->unpause = unpause = 1;
        }
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
    if (unpause)
        poke(y);
    return n;
}

static void relay_free_cb(void *cls)
{
    relay_unref(cls);
}

/* relay_end's first step for a filtered relay: once, the filter says whether the body may end
 * (HD_OK, y->mu still held); if not, the transfer is aborted and r answered (HD_DONE, y->mu
 * released). */
static int filter_end(struct hd_req *r, struct relay *y)
{
    const char *msg = NULL;
    int rc = 0, tell;

    if (!y->cancel && (y->up_eof || y->done))
        return HD_OK; /* asked already (a resume waiting for the answer), or the node answered
                       * before the body's end (an error, passed on as it is) */
    if (!y->cancel) {
        rc = y->flt->end(y->farg, filter_out, y, &msg);
        if (rc == 0 && !y->cancel)
            return HD_OK;
        y->cancel = 1;
    }
    if (rc == 0) /* the body was refused earlier, or the window could not grow */
        rc = y->flt->end(y->farg, NULL, NULL, &msg);
    if (rc == 0) {
        rc = -ENOMEM;
        msg = NULL;
    }
    tell = y->handed && !y->done;
    y->mhd_wait_data = y->mhd_wait_space = 0;
    pthread_mutex_unlock(&y->mu);
    if (tell)
        poke(y);
    hd_resp_err_msg(r, rc, msg);
    return HD_DONE;
}

static void relay_end(struct hd_req *r)
{
    struct relay *y = r->data;
    size_t i;
    long status;
    int64_t len;
    int failed, whole, rc, what = 0;
    size_t nh = 0;
    const char *body = NULL;
    char err[CURL_ERROR_SIZE];

    pthread_mutex_lock(&y->mu);
    if (y->flt && filter_end(r, y) == HD_DONE)
        return; /* answered; y->mu released */
    if (!y->up_eof) {
        y->up_eof = 1;
        what = upload_progress(y);
    }
    if (!y->head_done || (y->flt && !y->done && y->down.len < HD_RELAY_BUF)) {
        y->mhd_wait_data = 1;
        hd_req_suspend(r);
        pthread_mutex_unlock(&y->mu);
        kick(y, what);
        return;
    }
    failed = y->failed && y->status < 200;
    status = y->status;
    len = y->resp_len;
    snprintf(err, sizeof(err), "%s", y->err);
    if (!failed && y->nrh) {
        const char *h = y->htext.data;
        if (y->nrh > y->rh_cap) {
            struct hd_kv *n = realloc(y->rh, y->nrh * sizeof(*n));
            if (n) {
                y->rh = n;
                y->rh_cap = y->nrh;
            }
        }
        for (i = 0; i < y->nrh && i < y->rh_cap; i++) {
            y->rh[i].k = h;
            h += strlen(h) + 1;
            y->rh[i].v = h;
            h += strlen(h) + 1;
        }
        nh = i;
    }
    if (y->reqid[0])
        snprintf(r->id, sizeof(r->id), "%.16s", y->reqid);
    /* the whole body is in the window already (a small object: the client side was resumed
     * once all of it had come): it is answered from there, head and body in one write,
     * instead of through the streaming reader */
    whole = !failed && len >= 0 && y->down_total == (uint64_t)len && y->down.len == (size_t)len &&
            y->down.head + y->down.len <= y->down.cap && strcmp(r->method, "HEAD") != 0 &&
            status != 204 && status != 304;
    if (whole)
        body = y->down.buf + y->down.head;
    if (!failed && y->flt && y->done && !y->failed && len >= 0 &&
        y->down.len == (size_t)len) { /* the filter sees the whole answer */
        char *copy = malloc(len ? (size_t)len : 1);
        if (!copy) {
            pthread_mutex_unlock(&y->mu);
            hd_resp_err(r, -ENOMEM);
            return;
        }
        hd_ring_get(&y->down, copy, (size_t)len);
        pthread_mutex_unlock(&y->mu);
        /* the transfer is over (no kick needed); y lives until relay_done */
        rc = y->flt->answer(y->farg, r, status, y->rh, nh, copy, (size_t)len);
        if (rc != HD_DONE) {
            r->xh = y->rh;
            r->nxh = nh;
            rc = hd_resp_mem(r, (int)status, copy, (size_t)len, free, copy);
            r->xh = NULL;
            r->nxh = 0;
            if (rc < 0)
                hd_resp_err(r, -ENOMEM);
        } else {
            free(copy);
        }
        return;
    }
    if (!failed) {
        atomic_fetch_add(&y->refs, 1); /* the response's */
        y->streaming = 1;
    }
    pthread_mutex_unlock(&y->mu);
    kick(y, what);
    if (failed) {
        char msg[400];
        snprintf(msg, sizeof(msg), "The storage node did not answer: %s", err);
        HD_LOG(HD_WARN, r->id, "relay %s: %s", y->url, err);
        hd_resp_err_msg(r, HD_EUNAVAIL, msg);
        return;
    }
    /* the node's headers, borrowed (no copy) by the response queued next */
    r->xh = y->rh;
    r->nxh = nh;
    if (whole) { /* the response's reference goes with the body, whatever happens */
        rc = hd_resp_mem(r, (int)status, body, (size_t)len, relay_free_cb, y);
    } else {
        if (strcmp(r->method, "HEAD") == 0 || status == 204 || status == 304)
            len = len < 0 ? 0 : len;
        rc = hd_resp_stream(r, (int)status, len < 0 ? UINT64_MAX : (uint64_t)len, relay_read, y,
                            relay_free_cb);
        if (rc < 0)
            relay_unref(y);
    }
    r->xh = NULL;
    r->nxh = 0;
    if (rc < 0)
        hd_resp_err(r, -ENOMEM);
}

static void relay_done(struct hd_req *r)
{
    struct relay *y = r->data;
    int drop, tell;

    if (!y || y->magic != RELAY_MAGIC)
        return;
    pthread_mutex_lock(&y->mu);
    y->r = NULL;
    y->mhd_wait_data = y->mhd_wait_space = 0;
    if (y->flt && y->flt->free)
        y->flt->free(y->farg);
    y->flt = NULL;
    y->farg = NULL;
    drop = !y->handed && !y->done; /* never given to the loop: its reference is ours */
    tell = y->handed && !y->done;  /* running: the loop aborts it */
    if (drop)
        y->done = 1;
    pthread_mutex_unlock(&y->mu);
    r->data = NULL;
    if (tell)
        poke(y);
    if (drop) { /* the client left before its body was complete: nothing was sent on */
        hd_stats_inc(HD_ST_RELAY_ABORTED);
        relay_unref(y);
    }
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
    /* CORS is answered by the node the browser asked (s3front's cors_actual): the target's
     * answer must not carry a second set of Access-Control-* headers */
    if (strcasecmp(k, "origin") == 0 || strncasecmp(k, "access-control-request-", 23) == 0)
        return 1;
    /* X-Hoard-* is the cluster's own vocabulary (proxy signature, rebalance metadata):
     * a client must not be able to smuggle it to a target under the proxy's signature */
    return strncasecmp(k, "x-hoard-", 8) == 0;
}

/* Appends the line for k: v to y->qtext, NUL-terminated ("Name;" sends an empty value;
 * "Name:" would delete a curl default). */
static void add_line(struct relay *y, const char *k, const char *v)
{
    hd_buf_puts(&y->qtext, k);
    if (*v) {
        hd_buf_append(&y->qtext, ": ", 2);
        hd_buf_puts(&y->qtext, v);
    } else {
        hd_buf_append(&y->qtext, ";", 1);
    }
    hd_buf_append(&y->qtext, "", 1);
}

/* y->hdrs: libcurl's header list over the lines in y->qtext, in nodes of the relay's own
 * (CURLOPT_HTTPHEADER only reads the list; it is never given to curl_slist_free_all). */
static int link_lines(struct relay *y, size_t n)
{
    const char *p = y->qtext.data;
    size_t i;

    if (y->qtext.oom)
        return -ENOMEM;
    if (n > y->hdrs_cap) {
        struct curl_slist *nn = realloc(y->hdrs, n * sizeof(*nn));
        if (!nn)
            return -ENOMEM;
        y->hdrs = nn;
        y->hdrs_cap = n;
    }
    for (i = 0; i < n; i++) {
        y->hdrs[i].data = (char *)p;
        y->hdrs[i].next = i + 1 < n ? &y->hdrs[i + 1] : NULL;
        p += strlen(p) + 1;
    }
    return 0;
}

static int start(struct hd_relay *rl, struct hd_req *r, const char *url, const struct hd_kv *extra,
                 size_t nextra, const struct hd_relay_filter *f, void *farg, const char *first,
                 size_t nfirst)
{
    uv_loop_t *uv = hd_http_loop();
    struct rloop *l = uv ? worker_get(rl, uv) : shared_get(rl);
    struct relay *y;
    size_t i, nlines = 0, ulen = strlen(url) + 1;
    int rc = -ENOMEM;

    if (!l)
        rc = HD_EUNAVAIL;
    else if (atomic_fetch_add(&rl->inflight, 1) >= rl->max) {
        atomic_fetch_sub(&rl->inflight, 1);
        rc = HD_EUNAVAIL;
    } else if (!(y = relay_get(l))) {
        atomic_fetch_sub(&rl->inflight, 1);
    } else {
        rc = 0;
    }
    if (rc < 0)
        return rc;
    y->flt = f;
    y->farg = farg;
    hd_stats_inc(HD_ST_RELAY_STARTED);
    y->magic = RELAY_MAGIC;
    pthread_mutex_init(&y->mu, NULL);
    atomic_init(&y->refs, 2); /* request + transfer */
    y->r = r;
    if (ulen > y->url_cap) {
        free(y->url);
        y->url_cap = 0;
        if ((y->url = malloc(ulen)))
            y->url_cap = ulen;
    }
    if (y->url)
        memcpy(y->url, url, ulen);
    y->resp_len = -1;
    snprintf(y->method, sizeof(y->method), "%s", f ? f->method : r->method);
    if (f)
        y->has_body = 1;
    else if (r->content_length >= 0)
        y->has_body = r->content_length > 0 || strcmp(r->method, "PUT") == 0 ||
                      strcmp(r->method, "POST") == 0;
    else
        y->has_body = hd_req_header(r, "Transfer-Encoding") != NULL;
    y->body_len = f ? -1 : r->content_length;
    if (!y->url || ring_ready(&y->down, HD_RELAY_BUF + DOWN_SLACK) < 0 ||
        (y->has_body && ring_ready(&y->up, HD_RELAY_BUF) < 0))
        goto fail;
    if (nfirst) {
        if (hd_ring_put(&y->up, first, nfirst) < nfirst)
            goto fail;
        y->up_total = nfirst;
    }
    for (i = 0; !f && i < r->nhdrs; i++)
        if (!skip_request_header(r->hdrs[i].k)) {
            add_line(y, r->hdrs[i].k, r->hdrs[i].v);
            nlines++;
        }
    for (i = 0; i < nextra; i++, nlines++)
        add_line(y, extra[i].k, extra[i].v);
    /* "Expect:" removes curl's own 100-continue: no extra round trip inside the cluster */
    hd_buf_append(&y->qtext, "Expect:", sizeof("Expect:"));
    if (link_lines(y, nlines + 1) < 0)
        goto fail;
    if (!y->has_body) { /* nothing to wait for: start now */
        y->handed = 1;
        if (poke(y) < 0) {
            rc = HD_EUNAVAIL;
            goto fail;
        }
    }
    r->data = y;
    r->on_body = relay_body;
    r->on_end = relay_end;
    r->on_done = relay_done;
    return 0;
fail:
    y->flt = NULL; /* farg stays the caller's */
    atomic_store(&y->refs, 1);
    relay_unref(y);
    return rc;
}

int hd_relay_start(struct hd_relay *rl, struct hd_req *r, const char *url,
                   const struct hd_kv *extra, size_t nextra)
{
    return start(rl, r, url, extra, nextra, NULL, NULL, NULL, 0);
}

int hd_relay_start_filtered(struct hd_relay *rl, struct hd_req *r, const char *url,
                            const struct hd_kv *extra, size_t nextra,
                            const struct hd_relay_filter *f, void *arg, const char *first,
                            size_t nfirst)
{
    return start(rl, r, url, extra, nextra, f, arg, first, nfirst);
}
