#include "common/s3client.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "common/buf.h"
#include "common/cksum.h"
#include "common/errors.h"
#include "common/httputil.h"
#include "common/log.h"
#include "common/sigv4.h"
#include "common/xml.h"

#define ERRBODY_MAX ((size_t)64 * 1024)
#define LISTBODY_MAX (8u << 20)
#define MAX_HDRS 24

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t easy_key;
/* Shutting down: every transfer in flight stops. A generation, not a flag: transfers that
 * start after a stop (another cache in the same process, as in the unit tests) are not
 * cancelled by it. */
static atomic_int abort_gen;

void hd_s3c_abort_all(void)
{
    atomic_fetch_add(&abort_gen, 1);
}

static void easy_free(void *e)
{
    curl_easy_cleanup(e);
}

static void init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    pthread_key_create(&easy_key, easy_free);
}

/* The calling thread's easy handle: its connection cache keeps upstream connections alive
 * between calls. */
static CURL *thread_easy(void)
{
    CURL *e;

    pthread_once(&once, init_once);
    e = pthread_getspecific(easy_key);
    if (e) {
        curl_easy_reset(e);
        return e;
    }
    e = curl_easy_init();
    if (e && pthread_setspecific(easy_key, e) != 0) {
        curl_easy_cleanup(e);
        e = NULL;
    }
    return e;
}

void hd_s3c_obj_cleanup(struct hd_s3c_obj *o)
{
    free(o->meta);
    free(o->hdrs);
    o->meta = o->hdrs = NULL;
}

/* The headers kept besides Content-Type and x-amz-meta-* (lowercase, as the JSON keys). */
static const char *const std_hdrs[] = {"cache-control",    "content-disposition",
                                       "content-encoding", "content-language",
                                       "expires",          NULL};

static int std_hdr(const char *p, size_t kl)
{
    for (int i = 0; std_hdrs[i]; i++)
        if (strlen(std_hdrs[i]) == kl && strncasecmp(p, std_hdrs[i], kl) == 0)
            return i;
    return -1;
}

/* One request (and its retries). */
struct call {
    const struct hd_s3c *c;
    const char *method;
    const char *bucket, *key; /* key NULL: a bucket-level call */
    const char *query;        /* raw, encoded; "" for none */
    struct hd_kv hdrs[MAX_HDRS];
    size_t nh;
    int fd;           /* PUT body: size bytes of fd from off, -1 for none */
    const char *body; /* or a body in memory (size bytes), NULL for none */
    uint64_t off, size, sent;
    const struct hd_s3c_get *g;
    struct hd_buf *sink; /* 2xx body collected here when no g->data (listing) */
    size_t sink_max;

    /* per attempt */
    long status;
    int head_done;
    uint64_t delivered;
    int abort_code;
    struct hd_s3c_obj obj;
    json_t *meta;
    json_t *stdh;      /* the headers of struct hd_s3c_obj.hdrs */
    int content_range; /* a valid Content-Range came */
    char cr[64];       /* the Content-Range as sent, for the error message */
    uint64_t cr_last;  /* its last byte */
    int bad_206;       /* aborted: a 206 whose Content-Range is missing or wrong */
    struct hd_buf errbody;
    char curl_err[CURL_ERROR_SIZE];
    int gen; /* abort_gen when the call started */
};

static void add_hdr(struct call *k, const char *name, const char *value)
{
    if (k->nh < MAX_HDRS) {
        k->hdrs[k->nh].k = name;
        k->hdrs[k->nh].v = value;
        k->nh++;
    }
}

static void trim(const char **v, const char **e)
{
    while (*v < *e && (**v == ' ' || **v == '\t'))
        (*v)++;
    while (*e > *v && ((*e)[-1] == '\r' || (*e)[-1] == '\n' || (*e)[-1] == ' '))
        (*e)--;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    struct call *k = arg;
    size_t len = size * n, kl;
    const char *colon, *v, *e;
    char val[1024];

    if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) { /* a new response (after 100, redirects) */
        const char *sp = memchr(p, ' ', len);
        k->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        hd_s3c_obj_cleanup(&k->obj);
        memset(&k->obj, 0, sizeof(k->obj));
        json_decref(k->meta);
        k->meta = NULL;
        json_decref(k->stdh);
        k->stdh = NULL;
        k->content_range = 0;
        k->cr[0] = '\0';
        return len;
    }
    colon = memchr(p, ':', len);
    if (!colon)
        return len;
    kl = (size_t)(colon - p);
    v = colon + 1;
    e = p + len;
    trim(&v, &e);
    snprintf(val, sizeof(val), "%.*s", (int)(e - v), v);
    if (kl == 14 && strncasecmp(p, "content-length", kl) == 0) {
        if (hd_parse_u64(val, &k->obj.length) == 0)
            k->obj.have_length = 1;
    } else if (kl == 4 && strncasecmp(p, "etag", kl) == 0) {
        size_t vl = strlen(val);
        const char *s = val;
        if (vl >= 2 && val[0] == '"' && val[vl - 1] == '"') {
            s++;
            vl -= 2;
        }
        snprintf(k->obj.etag, sizeof(k->obj.etag), "%.*s", (int)vl, s);
    } else if (kl == 13 && strncasecmp(p, "last-modified", kl) == 0) {
        time_t t;
        if (hd_http_date_parse(val, &t) == 0)
            k->obj.mtime_ms = (int64_t)t * 1000;
    } else if (kl == 12 && strncasecmp(p, "content-type", kl) == 0) {
        snprintf(k->obj.ctype, sizeof(k->obj.ctype), "%.127s", val);
    } else if (kl == 13 && strncasecmp(p, "content-range", kl) == 0) {
        uint64_t a, b, total;
        snprintf(k->cr, sizeof(k->cr), "%.63s", val);
        if (hd_content_range_parse(val, &a, &b, &total) == 0) {
            k->obj.range_start = a;
            k->obj.size = total;
            k->cr_last = b;
            k->content_range = 1;
        } else {
            k->content_range = 0;
        }
    } else if (std_hdr(p, kl) >= 0) {
        json_t *s = json_string(val);
        if (s) {
            if (!k->stdh)
                k->stdh = json_object();
            json_object_set_new(k->stdh, std_hdrs[std_hdr(p, kl)], s);
        }
    } else if (kl > 11 && strncasecmp(p, "x-amz-meta-", 11) == 0) {
        char name[256];
        size_t i, nl = kl - 11;
        json_t *s = json_string(val);
        if (nl < sizeof(name) && s) {
            for (i = 0; i < nl; i++)
                name[i] = (char)(p[11 + i] >= 'A' && p[11 + i] <= 'Z' ? p[11 + i] + 32 : p[11 + i]);
            name[nl] = '\0';
            if (!k->meta)
                k->meta = json_object();
            json_object_set(k->meta, name, s);
        }
        json_decref(s);
    }
    return len;
}

static int ok_status(long st)
{
    return st >= 200 && st < 300;
}

/* Completes obj from the headers once a 2xx answer's body starts (or ends empty).
 * HD_EUNAVAIL for a 206 without a valid Content-Range as long as its body: which bytes it
 * holds is unknown. */
static int finish_head(struct call *k)
{
    k->obj.status = k->status;
    if (k->status == 206 &&
        (!k->content_range ||
         (k->obj.have_length && k->cr_last - k->obj.range_start + 1 != k->obj.length)))
        return HD_EUNAVAIL;
    if (k->status != 206) {
        k->obj.range_start = 0;
        k->obj.size = k->obj.length;
    }
    if (k->meta && json_object_size(k->meta))
        k->obj.meta = json_dumps(k->meta, JSON_COMPACT | JSON_SORT_KEYS);
    if (k->stdh && json_object_size(k->stdh))
        k->obj.hdrs = json_dumps(k->stdh, JSON_COMPACT);
    return 0;
}

static int deliver_head(struct call *k)
{
    int rc;

    if (k->head_done)
        return 0;
    k->head_done = 1;
    if ((rc = finish_head(k)) != 0) {
        k->bad_206 = 1;
        k->abort_code = rc;
        return rc;
    }
    if (k->g && k->g->head && (rc = k->g->head(k->g->arg, &k->obj)) != 0) {
        k->abort_code = rc;
        return rc;
    }
    return 0;
}

static size_t on_write(char *p, size_t size, size_t n, void *arg)
{
    struct call *k = arg;
    size_t len = size * n;
    int rc;

    if (!ok_status(k->status)) {
        if (k->errbody.len + len <= ERRBODY_MAX)
            hd_buf_append(&k->errbody, p, len);
        return len;
    }
    if (deliver_head(k) != 0)
        return 0;
    if (k->g && k->g->data) {
        k->delivered += len;
        if ((rc = k->g->data(k->g->arg, p, len)) != 0) {
            k->abort_code = rc;
            return 0;
        }
        return len;
    }
    if (k->sink) {
        if (k->sink->len + len > k->sink_max) {
            k->abort_code = HD_EMALFORMEDXML;
            return 0;
        }
        hd_buf_append(k->sink, p, len);
    }
    return len;
}

static size_t on_read(char *buf, size_t size, size_t n, void *arg)
{
    struct call *k = arg;
    size_t want = size * n;
    ssize_t got;

    if (k->sent >= k->size)
        return 0;
    if (want > k->size - k->sent)
        want = (size_t)(k->size - k->sent);
    if (k->body) {
        memcpy(buf, k->body + k->sent, want);
        k->sent += want;
        return want;
    }
    do
        got = pread(k->fd, buf, want, (off_t)(k->off + k->sent));
    while (got < 0 && errno == EINTR);
    if (got <= 0) {
        k->abort_code = got < 0 ? -errno : -EIO;
        return CURL_READFUNC_ABORT;
    }
    k->sent += (uint64_t)got;
    return (size_t)got;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    struct call *k = arg;

    if (atomic_load(&abort_gen) != k->gen || (k->g && k->g->stop && k->g->stop(k->g->arg)) ||
        (k->c->stop && k->c->stop(k->c->stop_arg))) {
        k->abort_code = -ECANCELED;
        return 1;
    }
    return 0;
}

/* scheme://host[:port] -> scheme ("http") and hostport. */
static int split_endpoint(const char *ep, char *scheme, size_t sl, const char **hostport)
{
    const char *s = strstr(ep, "://");

    if (!s || (size_t)(s - ep) >= sl)
        return HD_EBADARG;
    memcpy(scheme, ep, (size_t)(s - ep));
    scheme[s - ep] = '\0';
    *hostport = s + 3;
    return **hostport ? 0 : HD_EBADARG;
}

/* Builds the URL, host and path, signs, and sets the curl options for one attempt. */
static int prepare(struct call *k, CURL *e, struct curl_slist **hl, struct hd_buf *url)
{
    const struct hd_s3c *c = k->c;
    struct hd_buf host, path, authz, line;
    struct hd_kv sh[MAX_HDRS + 4];
    char scheme[16], amz_date[17];
    const char *hostport;
    size_t i, n = 0;
    int rc;

    hd_buf_init(&host);
    hd_buf_init(&path);
    hd_buf_init(&authz);
    hd_buf_init(&line);
    if ((rc = split_endpoint(c->endpoint, scheme, sizeof(scheme), &hostport)) < 0)
        goto out;
    if (c->vhost && k->bucket && *k->bucket)
        hd_buf_printf(&host, "%s.%s", k->bucket, hostport);
    else
        hd_buf_puts(&host, hostport);
    hd_buf_puts(&path, "/");
    if (!c->vhost && k->bucket && *k->bucket) {
        hd_uri_encode(&path, k->bucket, strlen(k->bucket), 0);
        if (k->key)
            hd_buf_puts(&path, "/");
    }
    if (k->key)
        hd_uri_encode(&path, k->key, strlen(k->key), 1);
    hd_buf_printf(url, "%s://%s%s%s%s", scheme, host.data ? host.data : "",
                  path.data ? path.data : "/", *k->query ? "?" : "", k->query);
    if (host.oom || path.oom || url->oom) {
        rc = -ENOMEM;
        goto out;
    }
    hd_sigv4_amz_date(time(NULL), amz_date);
    sh[n++] = (struct hd_kv){"host", host.data};
    sh[n++] = (struct hd_kv){"x-amz-date", amz_date};
    sh[n++] = (struct hd_kv){"x-amz-content-sha256", "UNSIGNED-PAYLOAD"};
    if (c->token[0])
        sh[n++] = (struct hd_kv){"x-amz-security-token", c->token};
    for (i = 0; i < k->nh; i++)
        sh[n++] = k->hdrs[i];
    if (!c->anonymous) {
        struct hd_sigv4_sign_in si;
        memset(&si, 0, sizeof(si));
        si.method = k->method;
        si.path = path.data;
        si.query = k->query;
        si.headers = sh;
        si.nheaders = n;
        si.access_key = c->access_key;
        si.secret = c->secret;
        si.region = c->region;
        si.service = "s3";
        si.amz_date = amz_date;
        si.payload_hash = "UNSIGNED-PAYLOAD";
        if ((rc = hd_sigv4_sign(&si, &authz, NULL)) < 0)
            goto out;
    }
    for (i = 0; i < n; i++) {
        hd_buf_reset(&line);
        hd_buf_printf(&line, "%s: %s", i == 0 ? "Host" : sh[i].k, sh[i].v);
        if (line.oom || !(*hl = curl_slist_append(*hl, line.data))) {
            rc = -ENOMEM;
            goto out;
        }
    }
    if (authz.data) {
        hd_buf_reset(&line);
        hd_buf_printf(&line, "Authorization: %s", authz.data);
        if (line.oom || !(*hl = curl_slist_append(*hl, line.data))) {
            rc = -ENOMEM;
            goto out;
        }
    }
    curl_easy_setopt(e, CURLOPT_URL, url->data);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, *hl);
    curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, k->curl_err);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, k);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, k);
    curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 256L * 1024);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, c->connect_ms > 0 ? c->connect_ms : 5000L);
    if (c->low_speed_bps > 0 && c->low_speed_s > 0) {
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, c->low_speed_bps);
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, c->low_speed_s);
    }
    /* set on every call: the thread's handle is reused by calls with other limits */
    curl_easy_setopt(e, CURLOPT_MAX_SEND_SPEED_LARGE, (curl_off_t)c->max_send_bps);
    curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(e, CURLOPT_XFERINFODATA, k);
    if (strcmp(k->method, "HEAD") == 0) {
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
        curl_easy_setopt(e, CURLOPT_TIMEOUT, c->meta_s > 0 ? c->meta_s : 30L);
    } else if (strcmp(k->method, "PUT") == 0 || strcmp(k->method, "POST") == 0) {
        curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
        if (strcmp(k->method, "POST") == 0)
            curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "POST");
        curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(e, CURLOPT_READDATA, k);
        curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)k->size);
        curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, 256L * 1024);
        if (c->total_s > 0)
            curl_easy_setopt(e, CURLOPT_TIMEOUT, c->total_s);
    } else {
        if (strcmp(k->method, "GET") != 0)
            curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, k->method);
        if (k->g && c->total_s > 0)
            curl_easy_setopt(e, CURLOPT_TIMEOUT, c->total_s);
        else if (!k->g)
            curl_easy_setopt(e, CURLOPT_TIMEOUT, c->meta_s > 0 ? c->meta_s : 30L);
    }
    rc = 0;
out:
    hd_buf_cleanup(&host);
    hd_buf_cleanup(&path);
    hd_buf_cleanup(&authz);
    hd_buf_cleanup(&line);
    return rc;
}

static int retryable_curl(CURLcode cc)
{
    return cc == CURLE_COULDNT_CONNECT || cc == CURLE_OPERATION_TIMEDOUT ||
           cc == CURLE_SEND_ERROR || cc == CURLE_RECV_ERROR || cc == CURLE_GOT_NOTHING ||
           cc == CURLE_COULDNT_RESOLVE_HOST || cc == CURLE_PARTIAL_FILE;
}

static int retryable_status(long st)
{
    return st == 500 || st == 502 || st == 503 || st == 504;
}

/* Maps a non-2xx answer to a project code and a message naming the upstream. */
static void http_error(struct call *k, struct hd_s3c_err *err)
{
    const struct hd_s3c *c = k->c;
    char code[64] = "", msg[300] = "";
    long st = k->status;

    if (k->errbody.len)
        hd_s3resp_parse_error(k->errbody.data, k->errbody.len, code, sizeof(code), msg,
                              sizeof(msg));
    err->status = st;
    switch (st) {
    case 404:
        err->code = strcmp(code, "NoSuchBucket") == 0 ? HD_ENOSUCHBUCKET : HD_ENOSUCHKEY;
        break;
    case 403:
        err->code = HD_EACCESS;
        break;
    case 412:
        err->code = HD_EPRECONDITION;
        break;
    case 304:
        err->code = HD_ENOTMODIFIED;
        break;
    case 416:
        err->code = HD_ERANGE;
        break;
    case 400:
        err->code = HD_EBADREQ;
        break;
    default:
        err->code = HD_EUNAVAIL;
    }
    if (err->code == HD_ENOSUCHBUCKET)
        snprintf(err->msg, sizeof(err->msg), "Upstream %s has no bucket %s.", c->endpoint,
                 k->bucket);
    else if (err->code == HD_ENOSUCHKEY)
        snprintf(err->msg, sizeof(err->msg), "The specified key does not exist (upstream %s).",
                 c->endpoint);
    else if (code[0] || msg[0])
        snprintf(err->msg, sizeof(err->msg), "Upstream %s answered HTTP %ld: %s%s%s", c->endpoint,
                 st, code, code[0] && msg[0] ? ": " : "", msg);
    else
        snprintf(err->msg, sizeof(err->msg), "Upstream %s answered HTTP %ld.", c->endpoint, st);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* The outcome of a transfer one of our callbacks aborted. */
static void stopped(const struct call *k, struct hd_s3c_err *err)
{
    err->code = k->abort_code;
    if (k->bad_206 && !k->cr[0])
        snprintf(err->msg, sizeof(err->msg),
                 "Upstream %.200s answered 206 without a Content-Range.", k->c->endpoint);
    else if (k->bad_206)
        snprintf(err->msg, sizeof(err->msg),
                 "Upstream %.200s answered 206 with Content-Range '%.64s', which is malformed or "
                 "does not match its %llu-byte body.",
                 k->c->endpoint, k->cr, (unsigned long long)k->obj.length);
    else
        snprintf(err->msg, sizeof(err->msg), "Transfer from upstream %s stopped: %s",
                 k->c->endpoint, hd_strerror(k->abort_code));
}

static int run(struct call *k, struct hd_s3c_err *err)
{
    const struct hd_s3c *c = k->c;
    long backoff = c->backoff_ms > 0 ? c->backoff_ms : 100;
    int attempt, retry;
    CURLcode cc;

    memset(err, 0, sizeof(*err));
    hd_buf_init(&k->errbody);
    k->gen = atomic_load(&abort_gen);
    for (attempt = 0;; attempt++) {
        struct curl_slist *hl = NULL;
        struct hd_buf url;
        CURL *e = thread_easy();
        int rc;

        err->attempts = attempt + 1;
        hd_buf_init(&url);
        hd_buf_reset(&k->errbody);
        hd_s3c_obj_cleanup(&k->obj);
        memset(&k->obj, 0, sizeof(k->obj));
        json_decref(k->meta);
        k->meta = NULL;
        json_decref(k->stdh);
        k->stdh = NULL;
        k->status = 0;
        k->head_done = 0;
        k->abort_code = 0;
        k->bad_206 = 0;
        k->sent = 0;
        k->curl_err[0] = '\0';
        if (k->sink)
            hd_buf_reset(k->sink);
        if (!e) {
            err->code = -ENOMEM;
            snprintf(err->msg, sizeof(err->msg), "out of memory");
            return err->code;
        }
        if ((rc = prepare(k, e, &hl, &url)) < 0) {
            curl_slist_free_all(hl);
            hd_buf_cleanup(&url);
            err->code = rc;
            snprintf(err->msg, sizeof(err->msg), "Cannot build a request for upstream %s: %s",
                     c->endpoint, hd_strerror(rc));
            return rc;
        }
        cc = curl_easy_perform(e);
        curl_slist_free_all(hl);
        hd_buf_cleanup(&url);
        retry = 0;
        if (k->abort_code) {
            stopped(k, err);
        } else if (cc != CURLE_OK) {
            err->code = HD_EUNAVAIL;
            err->status = k->status;
            if (k->delivered || k->head_done)
                snprintf(err->msg, sizeof(err->msg),
                         "Upstream %.200s failed after %llu bytes: %.200s", c->endpoint,
                         (unsigned long long)k->delivered,
                         k->curl_err[0] ? k->curl_err : curl_easy_strerror(cc));
            else
                snprintf(err->msg, sizeof(err->msg), "Upstream %.200s is unreachable: %.250s",
                         c->endpoint, k->curl_err[0] ? k->curl_err : curl_easy_strerror(cc));
            retry = !k->delivered && !k->head_done && retryable_curl(cc);
        } else if (!ok_status(k->status)) {
            http_error(k, err);
            retry = retryable_status(k->status);
        } else {
            if (deliver_head(k) != 0) { /* an empty 2xx body: no write callback ran */
                stopped(k, err);
            } else {
                err->code = 0;
                err->status = k->status;
            }
        }
        if (!retry || attempt >= c->retries || atomic_load(&abort_gen) != k->gen ||
            (k->g && k->g->stop && k->g->stop(k->g->arg)) || (c->stop && c->stop(c->stop_arg)))
            break;
        HD_LOG(HD_DEBUG, NULL, "upstream %s %s/%s: %s; retry %d in %ld ms", k->method,
               k->bucket ? k->bucket : "", k->key ? k->key : "", err->msg, attempt + 1, backoff);
        sleep_ms(backoff);
        backoff *= 2;
    }
    hd_buf_cleanup(&k->errbody);
    json_decref(k->meta);
    k->meta = NULL;
    json_decref(k->stdh);
    k->stdh = NULL;
    return err->code;
}

static void call_init(struct call *k, const struct hd_s3c *c, const char *method,
                      const char *bucket, const char *key, const char *query)
{
    memset(k, 0, sizeof(*k));
    k->c = c;
    k->method = method;
    k->bucket = bucket;
    k->key = key;
    k->query = query ? query : "";
    k->fd = -1;
}

/* Hands the final answer's metadata to out (or drops it). */
static void take_obj(struct call *k, struct hd_s3c_obj *out)
{
    if (out) {
        *out = k->obj;
        out->status = k->status;
    } else {
        hd_s3c_obj_cleanup(&k->obj);
    }
    memset(&k->obj, 0, sizeof(k->obj));
}

int hd_s3c_get_object(const struct hd_s3c *c, const char *bucket, const char *key,
                      const struct hd_s3c_get *g, struct hd_s3c_obj *out, struct hd_s3c_err *err)
{
    struct call k;
    char im[64];
    int rc;

    call_init(&k, c, "GET", bucket, key, NULL);
    k.g = g;
    if (g->range)
        add_hdr(&k, "range", g->range);
    if (g->if_match) {
        snprintf(im, sizeof(im), "\"%s\"", g->if_match);
        add_hdr(&k, "if-match", im);
    }
    rc = run(&k, err);
    take_obj(&k, out);
    return rc;
}

int hd_s3c_head_object(const struct hd_s3c *c, const char *bucket, const char *key,
                       struct hd_s3c_obj *out, struct hd_s3c_err *err)
{
    struct call k;
    int rc;

    call_init(&k, c, "HEAD", bucket, key, NULL);
    rc = run(&k, err);
    take_obj(&k, rc == 0 ? out : NULL);
    return rc;
}

/* The object's headers of a PUT or CreateMultipartUpload: Content-Type, the standard
 * headers of hdrs_json and x-amz-meta-* of meta_json (names kept in names, the JSON in *keep
 * until the call is done). */
struct objhdrs {
    json_t *meta, *hdrs;
    char names[MAX_HDRS - 10][300];
};

static void add_obj_hdrs(struct call *k, struct objhdrs *h, const char *ctype,
                         const char *meta_json, const char *hdrs_json)
{
    const char *name;
    size_t nm = 0;
    json_t *v;

    h->meta = meta_json ? json_loads(meta_json, 0, NULL) : NULL;
    h->hdrs = hdrs_json ? json_loads(hdrs_json, 0, NULL) : NULL;
    add_hdr(k, "content-type", ctype && *ctype ? ctype : "application/octet-stream");
    for (int i = 0; std_hdrs[i]; i++)
        if (json_is_string(v = json_object_get(h->hdrs, std_hdrs[i])))
            add_hdr(k, std_hdrs[i], json_string_value(v));
    json_object_foreach(h->meta, name, v)
    {
        if (!json_is_string(v) || nm >= sizeof(h->names) / sizeof(h->names[0]))
            continue;
        snprintf(h->names[nm], sizeof(h->names[nm]), "x-amz-meta-%s", name);
        add_hdr(k, h->names[nm], json_string_value(v));
        nm++;
    }
}

static void objhdrs_cleanup(struct objhdrs *h)
{
    json_decref(h->meta);
    json_decref(h->hdrs);
}

int hd_s3c_put_object(const struct hd_s3c *c, const char *bucket, const char *key, int fd,
                      uint64_t size, const unsigned char md5[16], const char *ctype,
                      const char *meta_json, const char *hdrs_json, char etag_out[48],
                      struct hd_s3c_err *err)
{
    struct objhdrs h;
    struct call k;
    char b64[32];
    int rc;

    call_init(&k, c, "PUT", bucket, key, NULL);
    k.fd = fd;
    k.size = size;
    hd_b64_encode(md5, 16, b64, sizeof(b64));
    add_hdr(&k, "content-md5", b64);
    add_obj_hdrs(&k, &h, ctype, meta_json, hdrs_json);
    rc = run(&k, err);
    if (rc == 0 && etag_out)
        snprintf(etag_out, 48, "%s", k.obj.etag);
    take_obj(&k, NULL);
    objhdrs_cleanup(&h);
    return rc;
}

/* ---- multipart upload ---- */

/* An answer body of a multipart call: sink collects it; field is the text of one child of
 * root. A 200 whose body is <Error> (Complete can fail that way) is that error. */
static int mpu_answer(struct call *k, struct hd_buf *body, const char *root, const char *field,
                      char *out, size_t outlen, struct hd_s3c_err *err)
{
    char code[64];

    if (body->oom)
        return err->code = -ENOMEM;
    if (hd_s3resp_parse_field(body->data ? body->data : "", body->len, root, field, out, outlen) ==
            0 &&
        *out)
        return 0;
    err->code = HD_EUNAVAIL;
    if (hd_s3resp_parse_error(body->data ? body->data : "", body->len, code, sizeof(code), err->msg,
                              sizeof(err->msg)) == 0)
        snprintf(err->msg + strlen(err->msg), sizeof(err->msg) - strlen(err->msg), " (%s)", code);
    else
        snprintf(err->msg, sizeof(err->msg), "Upstream %.200s answered %s without %s.",
                 k->c->endpoint, root, field);
    return err->code;
}

int hd_s3c_mpu_create(const struct hd_s3c *c, const char *bucket, const char *key,
                      const char *ctype, const char *meta_json, const char *hdrs_json,
                      char *upload_id, size_t idlen, struct hd_s3c_err *err)
{
    struct objhdrs h;
    struct hd_buf body;
    struct call k;
    int rc;

    hd_buf_init(&body);
    call_init(&k, c, "POST", bucket, key, "uploads");
    k.body = "";
    k.sink = &body;
    k.sink_max = ERRBODY_MAX;
    add_obj_hdrs(&k, &h, ctype, meta_json, hdrs_json);
    rc = run(&k, err);
    take_obj(&k, NULL);
    objhdrs_cleanup(&h);
    if (rc == 0)
        rc = mpu_answer(&k, &body, "InitiateMultipartUploadResult", "UploadId", upload_id, idlen,
                        err);
    hd_buf_cleanup(&body);
    return rc;
}

static void mpu_query(struct hd_buf *q, const char *upload_id, int part)
{
    if (part > 0)
        hd_buf_printf(q, "partNumber=%d&", part);
    hd_buf_puts(q, "uploadId=");
    hd_uri_encode(q, upload_id, strlen(upload_id), 0);
}

int hd_s3c_mpu_part(const struct hd_s3c *c, const char *bucket, const char *key,
                    const char *upload_id, int part, int fd, uint64_t off, uint64_t len,
                    const unsigned char md5[16], char etag_out[48], struct hd_s3c_err *err)
{
    struct hd_buf q;
    struct call k;
    char b64[32];
    int rc;

    hd_buf_init(&q);
    mpu_query(&q, upload_id, part);
    if (q.oom) {
        hd_buf_cleanup(&q);
        return err->code = -ENOMEM;
    }
    call_init(&k, c, "PUT", bucket, key, q.data);
    k.fd = fd;
    k.off = off;
    k.size = len;
    hd_b64_encode(md5, 16, b64, sizeof(b64));
    add_hdr(&k, "content-md5", b64);
    rc = run(&k, err);
    if (rc == 0)
        snprintf(etag_out, 48, "%s", k.obj.etag);
    if (rc == 0 && !*etag_out) {
        snprintf(err->msg, sizeof(err->msg), "Upstream %.200s answered UploadPart without ETag.",
                 c->endpoint);
        rc = err->code = HD_EUNAVAIL;
    }
    take_obj(&k, NULL);
    hd_buf_cleanup(&q);
    return rc;
}

int hd_s3c_mpu_complete(const struct hd_s3c *c, const char *bucket, const char *key,
                        const char *upload_id, const unsigned *nums, const char (*etags)[48],
                        size_t nparts, char etag_out[48], struct hd_s3c_err *err)
{
    struct hd_buf q, x, body;
    struct call k;
    char tmp[64];
    size_t i;
    int rc;

    hd_buf_init(&q);
    hd_buf_init(&x);
    hd_buf_init(&body);
    mpu_query(&q, upload_id, 0);
    hd_xml_open(&x, "CompleteMultipartUpload");
    for (i = 0; i < nparts; i++) {
        hd_xml_open(&x, "Part");
        hd_xml_elemf(&x, "PartNumber", "%u", nums ? nums[i] : (unsigned)i + 1);
        snprintf(tmp, sizeof(tmp), "\"%s\"", etags[i]);
        hd_xml_elem(&x, "ETag", tmp);
        hd_xml_close(&x, "Part");
    }
    hd_xml_close(&x, "CompleteMultipartUpload");
    if (q.oom || x.oom) {
        rc = err->code = -ENOMEM;
        goto out;
    }
    call_init(&k, c, "POST", bucket, key, q.data);
    k.body = x.data;
    k.size = x.len;
    k.sink = &body;
    k.sink_max = ERRBODY_MAX;
    add_hdr(&k, "content-type", "application/xml");
    rc = run(&k, err);
    take_obj(&k, NULL);
    if (rc == 0 && (rc = mpu_answer(&k, &body, "CompleteMultipartUploadResult", "ETag", tmp,
                                    sizeof(tmp), err)) == 0) {
        const char *t = tmp;
        size_t n = strlen(t);
        if (n >= 2 && t[0] == '"' && t[n - 1] == '"') {
            t++;
            n -= 2;
        }
        snprintf(etag_out, 48, "%.*s", (int)n, t);
    }
out:
    hd_buf_cleanup(&q);
    hd_buf_cleanup(&x);
    hd_buf_cleanup(&body);
    return rc;
}

int hd_s3c_mpu_abort(const struct hd_s3c *c, const char *bucket, const char *key,
                     const char *upload_id, struct hd_s3c_err *err)
{
    struct hd_buf q;
    struct call k;
    int rc;

    hd_buf_init(&q);
    mpu_query(&q, upload_id, 0);
    if (q.oom) {
        hd_buf_cleanup(&q);
        return err->code = -ENOMEM;
    }
    call_init(&k, c, "DELETE", bucket, key, q.data);
    rc = run(&k, err);
    take_obj(&k, NULL);
    hd_buf_cleanup(&q);
    return rc;
}

int hd_s3c_delete_object(const struct hd_s3c *c, const char *bucket, const char *key,
                         struct hd_s3c_err *err)
{
    struct call k;
    int rc;

    call_init(&k, c, "DELETE", bucket, key, NULL);
    rc = run(&k, err);
    take_obj(&k, NULL);
    return rc;
}

static void qparam(struct hd_buf *q, const char *k, const char *v)
{
    if (!v)
        return;
    hd_buf_printf(q, "%s%s=", q->len ? "&" : "", k);
    hd_uri_encode(q, v, strlen(v), 0);
}

int hd_s3c_list(const struct hd_s3c *c, const char *bucket, const char *prefix,
                const char *delimiter, const char *start_after, const char *token, size_t max,
                struct hd_s3_list *out, struct hd_s3c_err *err)
{
    struct hd_buf q, body;
    char mk[24];
    struct call k;
    int rc;

    memset(out, 0, sizeof(*out));
    hd_buf_init(&q);
    hd_buf_init(&body);
    if (max == 0 || max > 1000)
        max = 1000;
    /* sorted by name: the signer sorts too, but a stable order keeps URLs comparable */
    if (token && *token)
        qparam(&q, "continuation-token", token);
    if (delimiter && *delimiter)
        qparam(&q, "delimiter", delimiter);
    qparam(&q, "encoding-type", "url");
    qparam(&q, "list-type", "2");
    snprintf(mk, sizeof(mk), "%zu", max);
    qparam(&q, "max-keys", mk);
    if (prefix && *prefix)
        qparam(&q, "prefix", prefix);
    if (!(token && *token) && start_after && *start_after)
        qparam(&q, "start-after", start_after);
    if (q.oom) {
        hd_buf_cleanup(&q);
        err->code = -ENOMEM;
        return -ENOMEM;
    }
    call_init(&k, c, "GET", bucket, NULL, q.data);
    k.sink = &body;
    k.sink_max = LISTBODY_MAX;
    rc = run(&k, err);
    take_obj(&k, NULL);
    if (rc == 0) {
        rc = hd_s3resp_parse_list(body.data ? body.data : "", body.len, out);
        if (rc < 0) {
            err->code = rc == -ENOMEM ? rc : HD_EUNAVAIL;
            snprintf(err->msg, sizeof(err->msg),
                     "Upstream %s sent a listing that cannot be parsed.", c->endpoint);
            rc = err->code;
        }
    }
    hd_buf_cleanup(&body);
    hd_buf_cleanup(&q);
    return rc;
}

int hd_s3c_head_bucket(const struct hd_s3c *c, const char *bucket, struct hd_s3c_err *err)
{
    struct call k;
    int rc;

    call_init(&k, c, "HEAD", bucket, NULL, NULL);
    rc = run(&k, err);
    take_obj(&k, NULL);
    if (rc == HD_ENOSUCHKEY) { /* HEAD has no body to tell: a 404 on a bucket is the bucket */
        err->code = rc = HD_ENOSUCHBUCKET;
        snprintf(err->msg, sizeof(err->msg), "Upstream %s has no bucket %s.", c->endpoint, bucket);
    }
    return rc;
}

/* ---- credential profiles ---- */

/* HOARD_S3_PROFILE_<NAME>: the profile name upper-cased, other characters as '_'. */
static const char *profile_env(const char *profile)
{
    char var[128];
    size_t i, n = (size_t)snprintf(var, sizeof(var), "HOARD_S3_PROFILE_");

    for (i = 0; profile[i] && n + 1 < sizeof(var); i++)
        var[n++] =
            isalnum((unsigned char)profile[i]) ? (char)toupper((unsigned char)profile[i]) : '_';
    var[n] = '\0';
    return getenv(var);
}

static char *strip(char *s)
{
    char *e;

    while (isspace((unsigned char)*s))
        s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

/* [profile] section of an AWS-style credentials file: aws_access_key_id,
 * aws_secret_access_key, aws_session_token. 0 when found with both keys. */
static int profile_file(const char *path, const char *profile, struct hd_s3c *s3)
{
    char line[2048], want[96];
    FILE *f = fopen(path, "r");
    int in = 0, ak = 0, sk = 0;

    if (!f)
        return -ENOENT;
    snprintf(want, sizeof(want), "[%s]", profile);
    while (fgets(line, sizeof(line), f)) {
        char *p = strip(line), *eq;
        if (*p == '#' || *p == ';' || !*p)
            continue;
        if (*p == '[') {
            in = strcmp(p, want) == 0;
            continue;
        }
        eq = strchr(p, '=');
        if (!in || !eq)
            continue;
        *eq = '\0';
        p = strip(p);
        eq = strip(eq + 1);
        if (strcmp(p, "aws_access_key_id") == 0)
            ak = snprintf(s3->access_key, sizeof(s3->access_key), "%s", eq) > 0;
        else if (strcmp(p, "aws_secret_access_key") == 0)
            sk = snprintf(s3->secret, sizeof(s3->secret), "%s", eq) > 0;
        else if (strcmp(p, "aws_session_token") == 0)
            snprintf(s3->token, sizeof(s3->token), "%s", eq);
    }
    fclose(f);
    return ak && sk ? 0 : -ENOENT;
}

int hd_s3c_profile(const char *cred_file, const char *profile, struct hd_s3c *s3)
{
    const char *v, *home;
    char path[1024];

    s3->anonymous = 0;
    if (!*profile || strcmp(profile, "anonymous") == 0) {
        s3->anonymous = 1;
        return 0;
    }
    if ((v = profile_env(profile))) { /* ACCESS:SECRET[:TOKEN] */
        const char *colon = strchr(v, ':'), *c2;
        if (!colon || colon == v)
            return -EINVAL;
        snprintf(s3->access_key, sizeof(s3->access_key), "%.*s", (int)(colon - v), v);
        c2 = strchr(colon + 1, ':');
        snprintf(s3->secret, sizeof(s3->secret), "%.*s",
                 (int)(c2 ? (size_t)(c2 - colon - 1) : strlen(colon + 1)), colon + 1);
        if (c2)
            snprintf(s3->token, sizeof(s3->token), "%s", c2 + 1);
        return *s3->secret ? 0 : -EINVAL;
    }
    if (cred_file && *cred_file) {
        snprintf(path, sizeof(path), "%s", cred_file);
    } else if ((v = getenv("AWS_SHARED_CREDENTIALS_FILE")) && *v) {
        snprintf(path, sizeof(path), "%s", v);
    } else if ((home = getenv("HOME")) && *home) {
        snprintf(path, sizeof(path), "%s/.aws/credentials", home);
    } else {
        path[0] = '\0';
    }
    if (path[0] && profile_file(path, profile, s3) == 0)
        return 0;
    if (strcmp(profile, "default") == 0 && (v = getenv("AWS_ACCESS_KEY_ID")) && *v &&
        getenv("AWS_SECRET_ACCESS_KEY")) {
        snprintf(s3->access_key, sizeof(s3->access_key), "%s", v);
        snprintf(s3->secret, sizeof(s3->secret), "%s", getenv("AWS_SECRET_ACCESS_KEY"));
        if ((v = getenv("AWS_SESSION_TOKEN")))
            snprintf(s3->token, sizeof(s3->token), "%s", v);
        return 0;
    }
    return -ENOENT;
}
