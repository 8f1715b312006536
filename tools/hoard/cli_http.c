#include "tools/hoard/cli_http.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "tools/hoard/cli_fmt.h"
#include "tools/hoard/cli_sign.h"

#define XFER_MAGIC 0x68647866u /* "hdxf" */
#define ERR_BODY_MAX ((size_t)1 << 20)
#define XFER_BUFSIZE (512L * 1024)

struct hd_cli_http {
    CURL *curl;
};

/* Per-request state handed to every libcurl callback (checked by magic). */
struct xfer {
    uint32_t magic;
    struct hd_cli *cli;
    const struct hd_cli_req *rq;
    struct hd_cli_resp *rs;
    CURL *curl;
    EVP_MD_CTX *md;
    double t0, tlast;
    uint64_t total;
    int drawn;
    int discarded;
};

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct xfer *xfer_of(void *p)
{
    struct xfer *x = p;

    if (!x || x->magic != XFER_MAGIC)
        abort(); /* a callback got someone else's pointer: a bug, not bad input */
    return x;
}

static void hdrs_clear(struct hd_cli_resp *rs)
{
    size_t i;

    for (i = 0; i < rs->nhdrs; i++) {
        free(rs->hdrs[i].name);
        free(rs->hdrs[i].value);
    }
    free(rs->hdrs);
    rs->hdrs = NULL;
    rs->nhdrs = 0;
}

void hd_cli_resp_init(struct hd_cli_resp *rs)
{
    memset(rs, 0, sizeof(*rs));
    hd_buf_init(&rs->body);
}

void hd_cli_resp_cleanup(struct hd_cli_resp *rs)
{
    hdrs_clear(rs);
    hd_buf_cleanup(&rs->body);
    memset(rs, 0, sizeof(*rs));
}

const char *hd_cli_resp_header(const struct hd_cli_resp *rs, const char *name)
{
    size_t i;

    for (i = 0; i < rs->nhdrs; i++)
        if (strcasecmp(rs->hdrs[i].name, name) == 0)
            return rs->hdrs[i].value;
    return NULL;
}

void hd_cli_http_free(struct hd_cli_http *h)
{
    if (!h)
        return;
    if (h->curl)
        curl_easy_cleanup(h->curl);
    free(h);
}

/* ---- progress ----------------------------------------------------------------------- */

static void draw(struct xfer *x, uint64_t done, uint64_t total, double t)
{
    char line[128];

    hd_cli_fmt_progress(line, sizeof(line), done, total, t - x->t0);
    fprintf(stderr, "\r%s", line);
    fflush(stderr);
    x->drawn = 1;
    x->tlast = t;
}

static int on_xferinfo(void *p, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    struct xfer *x = xfer_of(p);
    int up = x->rq->upload != NULL;
    curl_off_t total = up ? ultotal : dltotal, done = up ? ulnow : dlnow;
    long status = 0;
    double t;

    if (hd_cli_interrupted)
        return 1;
    if (!x->cli->progress)
        return 0;
    if (up && x->rq->upload_size < 0) {
        total = 0; /* stdin: size unknown, show bytes and rate once past the threshold */
        if (done <= (curl_off_t)HD_CLI_PROGRESS_MIN)
            return 0;
    } else if (total <= (curl_off_t)HD_CLI_PROGRESS_MIN) {
        return 0;
    }
    if (!up) {
        curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &status);
        if (status < 200 || status >= 300)
            return 0;
    }
    x->total = (uint64_t)total;
    t = now_s();
    if (!x->drawn || t - x->tlast >= 0.1)
        draw(x, (uint64_t)done, (uint64_t)total, t);
    return 0;
}

/* ---- body callbacks ------------------------------------------------------------------ */

static size_t on_read(char *buf, size_t size, size_t n, void *p)
{
    struct xfer *x = xfer_of(p);
    size_t got;

    if (hd_cli_interrupted)
        return CURL_READFUNC_ABORT;
    got = fread(buf, 1, size * n, x->rq->upload);
    if (got == 0 && ferror(x->rq->upload)) {
        x->rs->local_err = errno ? -errno : -EIO;
        return CURL_READFUNC_ABORT;
    }
    if (x->md)
        EVP_DigestUpdate(x->md, buf, got);
    x->rs->bytes += got;
    if (x->rq->moved)
        atomic_fetch_add(x->rq->moved, got);
    return got;
}

/* The upload starts over: what it had moved no longer counts. */
static void unmove(struct xfer *x)
{
    if (x->rq->moved)
        atomic_fetch_sub(x->rq->moved, x->rs->bytes);
}

/* libcurl rewinds the body to resend it after a redirect; only a rewind to 0 is supported. */
static int on_seek(void *p, curl_off_t off, int origin)
{
    struct xfer *x = xfer_of(p);

    if (origin != SEEK_SET || off != 0 || fseeko(x->rq->upload, 0, SEEK_SET) != 0)
        return CURL_SEEKFUNC_CANTSEEK;
    if (x->md)
        EVP_DigestInit_ex(x->md, EVP_md5(), NULL);
    unmove(x);
    x->rs->bytes = 0;
    return CURL_SEEKFUNC_OK;
}

static size_t on_write(char *data, size_t size, size_t n, void *p)
{
    struct xfer *x = xfer_of(p);
    size_t len = size * n;
    long status = 0;

    curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300) {
        if (x->rq->discard_success) {
            x->discarded = 1;
            return 0;
        }
        if (x->rq->download) {
            if (fwrite(data, 1, len, x->rq->download) != len) {
                x->rs->local_err = errno ? -errno : -EIO;
                return 0;
            }
            if (x->md)
                EVP_DigestUpdate(x->md, data, len);
            x->rs->bytes += len;
            if (x->rq->moved)
                atomic_fetch_add(x->rq->moved, len);
            return len;
        }
        if (x->rs->body.len + len > HD_CLI_BODY_MAX) {
            x->rs->local_err = -EFBIG;
            return 0;
        }
    } else if (x->rs->body.len + len > ERR_BODY_MAX) {
        return len; /* an error body this long carries nothing we would print */
    }
    if (hd_buf_append(&x->rs->body, data, len) < 0) {
        x->rs->local_err = -ENOMEM;
        return 0;
    }
    return len;
}

static char *trim_dup(const char *s, size_t n)
{
    while (n > 0 && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        n--;
    return strndup(s, n);
}

static size_t on_header(char *data, size_t size, size_t n, void *p)
{
    struct xfer *x = xfer_of(p);
    struct hd_cli_resp *rs = x->rs;
    size_t len = size * n;
    const char *colon;
    struct hd_cli_hdr *h;

    if (len >= 5 && memcmp(data, "HTTP/", 5) == 0) {
        /* A new response (100 Continue, a followed redirect, the final one): start over. */
        hdrs_clear(rs);
        hd_buf_reset(&rs->body);
        return len;
    }
    colon = memchr(data, ':', len);
    if (!colon)
        return len;
    h = realloc(rs->hdrs, (rs->nhdrs + 1) * sizeof(*h));
    if (!h)
        goto oom;
    rs->hdrs = h;
    h = &rs->hdrs[rs->nhdrs];
    h->name = trim_dup(data, (size_t)(colon - data));
    h->value = trim_dup(colon + 1, len - (size_t)(colon - data) - 1);
    if (!h->name || !h->value) {
        free(h->name);
        free(h->value);
        goto oom;
    }
    rs->nhdrs++;
    return len;
oom:
    rs->local_err = -ENOMEM;
    return 0;
}

/* ---- request ------------------------------------------------------------------------- */

/* Configures the handle for one hop of rq to url. Only the first hop is signed (see
 * cli_sign.h): redirected hops carry none of our auth headers. */
static int setup(struct xfer *x, struct curl_slist **hdrs, const char *url, int sign)
{
    const struct hd_cli_req *rq = x->rq;
    CURL *c = x->curl;
    CURLcode e = CURLE_OK;

#define SET(opt, val)                                                                              \
    do {                                                                                           \
        if (e == CURLE_OK)                                                                         \
            e = curl_easy_setopt(c, opt, val);                                                     \
    } while (0)
    SET(CURLOPT_URL, url);
    SET(CURLOPT_PATH_AS_IS, 1L); /* "a/../b" is a valid object name, not a path to squash */
    SET(CURLOPT_PROTOCOLS_STR, "http,https");
    SET(CURLOPT_FOLLOWLOCATION, 0L); /* hd_cli_http_do follows them, dropping Authorization */
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_CONNECTTIMEOUT, HD_CLI_CONNECT_TIMEOUT_S);
    SET(CURLOPT_LOW_SPEED_LIMIT, HD_CLI_LOW_SPEED_BPS);
    SET(CURLOPT_LOW_SPEED_TIME, HD_CLI_LOW_SPEED_TIME_S);
    SET(CURLOPT_TCP_KEEPALIVE, 1L);
    SET(CURLOPT_USERAGENT, "hoard-cli/" HD_CLI_VERSION);
    SET(CURLOPT_ERRORBUFFER, x->rs->curl_err);
    SET(CURLOPT_VERBOSE, (long)x->cli->verbose);
    SET(CURLOPT_BUFFERSIZE, XFER_BUFSIZE);
    SET(CURLOPT_HEADERFUNCTION, on_header);
    SET(CURLOPT_HEADERDATA, x);
    SET(CURLOPT_WRITEFUNCTION, on_write);
    SET(CURLOPT_WRITEDATA, x);
    SET(CURLOPT_NOPROGRESS, 0L);
    SET(CURLOPT_XFERINFOFUNCTION, on_xferinfo);
    SET(CURLOPT_XFERINFODATA, x);

    if (strcmp(rq->method, "HEAD") == 0) {
        SET(CURLOPT_NOBODY, 1L);
    } else if (strcmp(rq->method, "PUT") == 0 && rq->upload) {
        SET(CURLOPT_UPLOAD, 1L);
        SET(CURLOPT_UPLOAD_BUFFERSIZE, XFER_BUFSIZE);
        SET(CURLOPT_READFUNCTION, on_read);
        SET(CURLOPT_READDATA, x);
        SET(CURLOPT_SEEKFUNCTION, on_seek);
        SET(CURLOPT_SEEKDATA, x);
        if (rq->upload_size >= 0)
            SET(CURLOPT_INFILESIZE_LARGE, (curl_off_t)rq->upload_size);
    } else if (strcmp(rq->method, "POST") == 0 && rq->upload) { /* a JSON body (batch) */
        SET(CURLOPT_POST, 1L);
        SET(CURLOPT_READFUNCTION, on_read);
        SET(CURLOPT_READDATA, x);
        SET(CURLOPT_SEEKFUNCTION, on_seek);
        SET(CURLOPT_SEEKDATA, x);
        SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->upload_size);
    } else if (strcmp(rq->method, "POST") == 0 || (rq->body && strcmp(rq->method, "GET"))) {
        SET(CURLOPT_POST, 1L);
        SET(CURLOPT_POSTFIELDS, rq->body ? rq->body : "");
        SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(rq->body ? strlen(rq->body) : 0));
        if (strcmp(rq->method, "POST") != 0) /* PATCH with a body */
            SET(CURLOPT_CUSTOMREQUEST, rq->method);
        if (!rq->content_type)
            *hdrs = curl_slist_append(*hdrs, "Content-Type:"); /* drop curl's form default */
    } else if (strcmp(rq->method, "GET") != 0) {
        SET(CURLOPT_CUSTOMREQUEST, rq->method);
    }
#undef SET
    if (rq->content_type) {
        struct hd_buf h;
        hd_buf_init(&h);
        hd_buf_printf(&h, "Content-Type: %s", rq->content_type);
        if (!h.oom)
            *hdrs = curl_slist_append(*hdrs, h.data);
        hd_buf_cleanup(&h);
    }
    if (sign && x->cli->cred.access_key && e == CURLE_OK) {
        struct hd_kv extra[1];
        size_t nextra = 0;
        int rc;
        if (rq->content_type)
            extra[nextra++] = (struct hd_kv){"content-type", rq->content_type};
        rc = hd_cli_sign_headers(&x->cli->cred, rq->method, url, extra, nextra, time(NULL), hdrs);
        if (rc < 0) {
            snprintf(x->rs->curl_err, sizeof(x->rs->curl_err), "%s",
                     rc == -ENOMEM ? "out of memory"
                                   : "the access key or region cannot be used in a SigV4 "
                                     "signature, or the endpoint has no host");
            return HD_CLI_ESIGN;
        }
    }
    if (*hdrs && e == CURLE_OK)
        e = curl_easy_setopt(c, CURLOPT_HTTPHEADER, *hdrs);
    if (e != CURLE_OK) {
        snprintf(x->rs->curl_err, sizeof(x->rs->curl_err), "%s", curl_easy_strerror(e));
        return HD_CLI_ECURL;
    }
    return 0;
}

static void md5_hex(EVP_MD_CTX *md, char out[33])
{
    unsigned char d[EVP_MAX_MD_SIZE];
    static const char hex[] = "0123456789abcdef";
    unsigned int n = 0;
    size_t i;

    out[0] = '\0';
    if (EVP_DigestFinal_ex(md, d, &n) != 1 || n != 16)
        return;
    for (i = 0; i < n; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[32] = '\0';
}

static int is_redirect(long status)
{
    return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

/* Before re-sending an upload to a redirect's Location: rewind it if any of it was read (a
 * proxy that answers 307 to "Expect: 100-continue" gets no body, so stdin works then). */
static int rewind_upload(struct xfer *x)
{
    if (!x->rq->upload || x->rs->bytes == 0)
        return 0;
    if (fseeko(x->rq->upload, 0, SEEK_SET) != 0)
        return HD_CLI_ENOREWIND;
    if (x->md && EVP_DigestInit_ex(x->md, EVP_md5(), NULL) != 1)
        return -ENOMEM;
    unmove(x);
    x->rs->bytes = 0;
    return 0;
}

/* One transfer to url. 0 when a response arrived, else as hd_cli_http_do. */
static int perform(struct xfer *x, const char *url, int hop)
{
    struct curl_slist *hdrs = NULL;
    CURLcode ce;
    int rc;

    if (hop > 0)
        curl_easy_reset(x->curl); /* keeps the connection cache */
    rc = setup(x, &hdrs, url, hop == 0);
    if (rc < 0)
        goto out;
    x->t0 = now_s();
    ce = curl_easy_perform(x->curl);
    x->rs->curl_code = (int)ce;
    x->rs->status = 0;
    curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &x->rs->status);
    if (ce == CURLE_OK || (x->discarded && ce == CURLE_WRITE_ERROR))
        rc = 0;
    else if (x->rs->local_err)
        rc = x->rs->local_err;
    else if (hd_cli_interrupted)
        rc = -EINTR;
    else {
        if (x->rs->curl_err[0] == '\0')
            snprintf(x->rs->curl_err, sizeof(x->rs->curl_err), "%s", curl_easy_strerror(ce));
        rc = HD_CLI_ECURL;
    }
out:
    curl_slist_free_all(hdrs);
    return rc;
}

int hd_cli_http_do(struct hd_cli *cli, const struct hd_cli_req *rq, struct hd_cli_resp *rs)
{
    struct xfer x;
    struct hd_buf url;
    char *loc;
    int rc, hop;

    hdrs_clear(rs);
    hd_buf_reset(&rs->body);
    rs->status = 0;
    rs->bytes = 0;
    rs->md5[0] = '\0';
    rs->local_err = 0;
    rs->curl_err[0] = '\0';
    rs->curl_code = 0;

    memset(&x, 0, sizeof(x));
    x.magic = XFER_MAGIC;
    x.cli = cli;
    x.rq = rq;
    x.rs = rs;
    hd_buf_init(&url);

    if (!cli->http) {
        cli->http = calloc(1, sizeof(*cli->http));
        if (!cli->http)
            return -ENOMEM;
    }
    if (!cli->http->curl) {
        cli->http->curl = curl_easy_init();
        if (!cli->http->curl) {
            snprintf(rs->curl_err, sizeof(rs->curl_err), "curl_easy_init failed");
            return HD_CLI_ECURL;
        }
    } else {
        curl_easy_reset(cli->http->curl); /* keeps the connection cache */
    }
    x.curl = cli->http->curl;
    {
        /* a cluster with its own CA (cluster.sh up --tls): the same variable as the aws CLI */
        const char *ca = getenv("AWS_CA_BUNDLE");
        if (ca && *ca)
            curl_easy_setopt(x.curl, CURLOPT_CAINFO, ca);
    }
    if (rq->hash) {
        x.md = EVP_MD_CTX_new();
        if (!x.md || EVP_DigestInit_ex(x.md, EVP_md5(), NULL) != 1) {
            rc = -ENOMEM;
            goto out;
        }
    }
    hd_buf_puts(&url, cli->endpoint);
    hd_buf_puts(&url, rq->path);
    if (url.oom) {
        rc = -ENOMEM;
        goto out;
    }

    /* Redirects are followed here rather than by libcurl so that no hop after the first
     * carries our Authorization (libcurl keeps it when only the path changes). */
    for (hop = 0;; hop++) {
        rc = perform(&x, url.data, hop);
        if (rc != 0 || !is_redirect(rs->status))
            break;
        loc = NULL;
        if (curl_easy_getinfo(x.curl, CURLINFO_REDIRECT_URL, &loc) != CURLE_OK || !loc)
            break; /* a 3xx without Location: reported as the error it is */
        if (hop == HD_CLI_MAX_REDIRS) {
            snprintf(rs->curl_err, sizeof(rs->curl_err), "more than %d redirects (last to %s)",
                     HD_CLI_MAX_REDIRS, loc);
            rc = HD_CLI_ECURL;
            break;
        }
        hd_buf_reset(&url);
        hd_buf_puts(&url, loc); /* copied: loc dies with the next transfer */
        if (url.oom) {
            rc = -ENOMEM;
            break;
        }
        if ((rc = rewind_upload(&x)) < 0) {
            snprintf(rs->curl_err, sizeof(rs->curl_err), "%s", url.data);
            break;
        }
    }

    if (x.drawn) {
        draw(&x, rs->bytes, x.total, now_s());
        fputc('\n', stderr);
        fflush(stderr);
    }
    if (x.md)
        md5_hex(x.md, rs->md5);
out:
    EVP_MD_CTX_free(x.md);
    hd_buf_cleanup(&url);
    return rc;
}

/* ---- errors ------------------------------------------------------------------------- */

void hd_cli_resp_error(const struct hd_cli_resp *rs, char *code, size_t codelen, char *msg,
                       size_t msglen)
{
    json_t *j = NULL;
    const char *c = NULL, *m = NULL;

    snprintf(code, codelen, "HTTP %ld", rs->status);
    msg[0] = '\0';
    if (rs->body.len > 0) {
        j = json_loadb(rs->body.data, rs->body.len, 0, NULL);
        if (json_is_object(j)) {
            c = json_string_value(json_object_get(j, "code"));
            m = json_string_value(json_object_get(j, "message"));
        }
    }
    if (c && *c)
        snprintf(code, codelen, "%s", c);
    if (m) {
        snprintf(msg, msglen, "%s", m);
    } else if (!j && rs->body.len > 0) {
        /* Not our JSON (an intermediary's HTML or text page): its first non-empty line. */
        const char *s = rs->body.data;
        size_t n;
        while (*s == '\n' || *s == '\r' || *s == ' ')
            s++;
        n = strcspn(s, "\r\n");
        if (n > 200)
            n = 200;
        snprintf(msg, msglen, "%.*s", (int)n, s);
    }
    if (msg[0] == '\0') {
        const char *r = "request failed";
        switch (rs->status) {
        case 400:
            r = "Bad Request";
            break;
        case 403:
            r = "Forbidden";
            break;
        case 404:
            r = "Not Found";
            break;
        case 405:
            r = "Method Not Allowed";
            break;
        case 409:
            r = "Conflict";
            break;
        case 412:
            r = "Precondition Failed";
            break;
        case 416:
            r = "Range Not Satisfiable";
            break;
        case 500:
            r = "Internal Server Error";
            break;
        case 502:
            r = "Bad Gateway";
            break;
        case 503:
            r = "Service Unavailable";
            break;
        case 504:
            r = "Gateway Timeout";
            break;
        }
        snprintf(msg, msglen, "%s", r);
    }
    json_decref(j);
}

int hd_cli_report(struct hd_cli *cli, const char *what, int rc, const struct hd_cli_resp *rs)
{
    char code[128], msg[512];

    if (rc == -EINTR)
        return hd_cli_fail(HD_CLI_EXIT_INTR, "%s: interrupted", what);
    if (rc == HD_CLI_ECURL) {
        int never_connected = rs->curl_code == CURLE_COULDNT_CONNECT ||
                              rs->curl_code == CURLE_COULDNT_RESOLVE_HOST ||
                              rs->curl_code == CURLE_COULDNT_RESOLVE_PROXY ||
                              (rs->curl_code == CURLE_OPERATION_TIMEDOUT && rs->status == 0);
        if (never_connected)
            return hd_cli_fail(HD_CLI_EXIT_CONN, "%s: cannot reach %s: %s", what, cli->endpoint,
                               rs->curl_err);
        return hd_cli_fail(HD_CLI_EXIT_CONN, "%s: connection to %s failed: %s", what, cli->endpoint,
                           rs->curl_err);
    }
    if (rc == HD_CLI_ESIGN)
        return hd_cli_fail(HD_CLI_EXIT_API, "%s: cannot sign the request: %s", what, rs->curl_err);
    if (rc == HD_CLI_ENOREWIND)
        return hd_cli_fail(HD_CLI_EXIT_API,
                           "%s: redirected to %s, but the body already sent cannot be read "
                           "again (stdin); upload from a file instead",
                           what, rs->curl_err);
    if (rc < 0)
        return hd_cli_fail(HD_CLI_EXIT_API, "%s: %s", what, strerror(-rc));
    hd_cli_resp_error(rs, code, sizeof(code), msg, sizeof(msg));
    if (rs->status == 403 && !cli->cred.access_key)
        return hd_cli_fail_code(HD_CLI_EXIT_API, code,
                                "%s: %s: %s (no credentials: set AWS_ACCESS_KEY_ID and "
                                "AWS_SECRET_ACCESS_KEY, or pass --access-key and --secret-key)",
                                what, code, msg);
    return hd_cli_fail_code(HD_CLI_EXIT_API, code, "%s: %s: %s", what, code, msg);
}

int hd_cli_json_do(struct hd_cli *cli, const char *method, const char *path, const char *body,
                   const char *what, json_t **out)
{
    struct hd_cli_req rq = {.method = method, .path = path, .body = body};
    struct hd_cli_resp rs;
    json_error_t jerr;
    int rc;

    *out = NULL;
    if (body)
        rq.content_type = "application/json";
    hd_cli_resp_init(&rs);
    rc = hd_cli_http_do(cli, &rq, &rs);
    if (rc != 0 || rs.status >= 300) {
        rc = hd_cli_report(cli, what, rc, &rs);
        goto out;
    }
    *out = json_loadb(rs.body.data ? rs.body.data : "", rs.body.len, 0, &jerr);
    if (!json_is_object(*out)) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "%s: unexpected response from %s: %s", what,
                         cli->endpoint, *out ? "not a JSON object" : jerr.text);
        json_decref(*out);
        *out = NULL;
        goto out;
    }
    rc = HD_CLI_EXIT_OK;
out:
    hd_cli_resp_cleanup(&rs);
    return rc;
}
