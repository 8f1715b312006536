/* hd_test_http: shared helpers of the unit tests that talk HTTP (see hd_test_http.h). */
#include "test/unit/hd_test_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/evp.h>

/* ---- servers ---- */

int ht_server_start(hd_http_handler_fn handler, void *ctx, int threads, struct hd_http_server **out,
                    int *port)
{
    return ht_server_start_mode(handler, ctx, threads, 0, out, port);
}

int ht_http_timeout_s = 60;

int ht_server_start_mode(hd_http_handler_fn handler, void *ctx, int threads, int loops,
                         struct hd_http_server **out, int *port)
{
    struct hd_http_cfg hc;
    int rc;

    memset(&hc, 0, sizeof(hc));
    hc.listen = "127.0.0.1:0";
    hc.threads = threads;
    hc.loops = loops;
    hc.timeout_s = (unsigned)ht_http_timeout_s; /* http.timeout */
    hc.max_conns = 4096;                        /* http.max_conns */
    hc.mem_limit = 65536;                       /* http.mem_limit */
    hc.handler = handler;
    hc.ctx = ctx;
    *out = NULL;
    if ((rc = hd_http_start(&hc, out)) < 0)
        return rc;
    *port = hd_http_port(*out);
    return *port > 0 ? 0 : -EINVAL;
}

/* ---- client ---- */

static int grow(char **p, size_t *cap, size_t need)
{
    size_t n = *cap ? *cap : 4096;
    char *np;

    if (need <= *cap)
        return 0;
    while (n < need)
        n *= 2;
    np = realloc(*p, n);
    if (!np)
        return -1;
    *p = np;
    *cap = n;
    return 0;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    struct ht_xfer *x = arg;
    size_t len = size * n;

    if (x->stop_after && x->len + len > x->stop_after)
        return 0; /* the client gives up mid-body */
    if (grow(&x->body, &x->cap, x->len + len + 1) < 0) {
        x->oom = 1;
        return 0;
    }
    memcpy(x->body + x->len, p, len);
    x->len += len;
    x->body[x->len] = '\0';
    return len;
}

static size_t on_hdr(char *p, size_t size, size_t n, void *arg)
{
    struct ht_xfer *x = arg;
    size_t len = size * n;

    if (len >= 5 && strncmp(p, "HTTP/", 5) == 0)
        x->hlen = 0; /* a new header block (after 100 Continue): keep only the last */
    if (grow(&x->hdrs, &x->hcap, x->hlen + len + 1) < 0) {
        x->oom = 1;
        return 0;
    }
    memcpy(x->hdrs + x->hlen, p, len);
    x->hlen += len;
    x->hdrs[x->hlen] = '\0';
    return len;
}

static size_t on_up(char *p, size_t size, size_t n, void *arg)
{
    struct ht_xfer *x = arg;
    size_t want = size * n;

    if (want > x->uplen - x->upoff)
        want = x->uplen - x->upoff;
    memcpy(p, x->up + x->upoff, want);
    x->upoff += want;
    return want;
}

void ht_init(struct ht_xfer *x, const char *method, const char *url)
{
    static int inited;
    CURL *e;

    if (!inited) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        inited = 1;
    }
    memset(x, 0, sizeof(*x));
    x->cc = CURLE_FAILED_INIT;
    e = curl_easy_init();
    x->easy = e;
    if (!e)
        return;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
    /* only for waiting: a test that hangs fails after this instead of hanging the run */
    curl_easy_setopt(e, CURLOPT_TIMEOUT, 120L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_hdr);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(e, CURLOPT_PRIVATE, x);
    if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else if (strcmp(method, "PUT") == 0) {
        curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(e, CURLOPT_READFUNCTION, on_up);
        curl_easy_setopt(e, CURLOPT_READDATA, x);
        curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)0);
    } else if (strcmp(method, "POST") == 0) {
        x->post = 1;
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    }
}

void ht_header(struct ht_xfer *x, const char *line)
{
    struct curl_slist *n = curl_slist_append(x->hl, line);

    if (!n) {
        x->oom = 1;
        return;
    }
    x->hl = n;
    if (x->easy)
        curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, n);
}

void ht_body(struct ht_xfer *x, const void *p, size_t n)
{
    x->up = p;
    x->uplen = n;
    x->upoff = 0;
    if (!x->easy)
        return;
    if (x->post) { /* (POSTFIELDS on a PUT would turn it into a POST) */
        curl_easy_setopt(x->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n);
        curl_easy_setopt(x->easy, CURLOPT_POSTFIELDS, p);
    } else {
        curl_easy_setopt(x->easy, CURLOPT_INFILESIZE_LARGE, (curl_off_t)n);
    }
}

static void finish(struct ht_xfer *x, CURLcode cc)
{
    x->cc = (int)cc;
    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &x->status);
}

int ht_perform(struct ht_xfer *x)
{
    if (!x->easy || x->oom)
        return x->cc = CURLE_FAILED_INIT;
    finish(x, curl_easy_perform(x->easy));
    return x->cc;
}

int ht_perform_all(struct ht_xfer **xs, size_t n, void (*tick)(void *arg), void *arg)
{
    CURLM *m = curl_multi_init();
    CURLMsg *msg;
    size_t i;
    int running = 1, left;

    if (!m)
        return -1;
    curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, 0L);
    for (i = 0; i < n; i++)
        if (xs[i]->easy)
            curl_multi_add_handle(m, xs[i]->easy);
    while (running) {
        if (curl_multi_perform(m, &running) != CURLM_OK)
            break;
        while ((msg = curl_multi_info_read(m, &left)))
            if (msg->msg == CURLMSG_DONE) {
                struct ht_xfer *x = NULL;
                curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
                if (x)
                    finish(x, msg->data.result);
            }
        if (tick)
            tick(arg);
        if (running)
            curl_multi_poll(m, NULL, 0, 10, NULL);
    }
    for (i = 0; i < n; i++)
        if (xs[i]->easy)
            curl_multi_remove_handle(m, xs[i]->easy);
    curl_multi_cleanup(m);
    return 0;
}

void ht_cleanup(struct ht_xfer *x)
{
    if (x->easy)
        curl_easy_cleanup(x->easy);
    curl_slist_free_all(x->hl);
    free(x->body);
    free(x->hdrs);
    memset(x, 0, sizeof(*x));
}

int ht_do(struct ht_xfer *x, const char *method, const char *url, const char *const *hdrs,
          const void *body, size_t n)
{
    ht_init(x, method, url);
    for (; hdrs && *hdrs; hdrs++)
        ht_header(x, *hdrs);
    if (body || strcmp(method, "PUT") == 0 || strcmp(method, "POST") == 0)
        ht_body(x, body ? body : "", n);
    return ht_perform(x);
}

const char *ht_resp_header(const struct ht_xfer *x, const char *name, char *out, size_t outlen)
{
    size_t nl = strlen(name);
    const char *p = x->hdrs;

    while (p && *p) {
        const char *eol = strstr(p, "\r\n");
        size_t ll = eol ? (size_t)(eol - p) : strlen(p);
        if (ll > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1, *e = p + ll;
            while (v < e && (*v == ' ' || *v == '\t'))
                v++;
            while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
                e--;
            snprintf(out, outlen, "%.*s", (int)(e - v), v);
            return out;
        }
        p = eol ? eol + 2 : p + ll;
    }
    return NULL;
}

int ht_body_has(const struct ht_xfer *x, const char *s)
{
    return x->body && strstr(x->body, s) != NULL;
}

/* ---- data ---- */

unsigned char ht_pat(uint64_t seed, uint64_t i)
{
    /* splitmix64 of the 8-byte word index: no short period, any offset computed alone */
    uint64_t z = (i >> 3) + seed * 0x632BE59BD9B4E019ull + 0x9E3779B97F4A7C15ull;

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (unsigned char)(z >> ((i & 7) * 8));
}

void ht_pat_fill(void *p, uint64_t seed, uint64_t off, size_t n)
{
    unsigned char *b = p;
    size_t i;

    for (i = 0; i < n; i++)
        b[i] = ht_pat(seed, off + i);
}

int ht_pat_equal(const void *p, uint64_t seed, uint64_t off, size_t n)
{
    const unsigned char *b = p;
    size_t i;

    if (!p && n)
        return 0;
    for (i = 0; i < n; i++)
        if (b[i] != ht_pat(seed, off + i))
            return 0;
    return 1;
}

void ht_md5_hex(const void *p, size_t n, char out[33])
{
    static const char hx[] = "0123456789abcdef";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    size_t i;

    EVP_Digest(p, n, md, &mdlen, EVP_md5(), NULL);
    for (i = 0; i < 16; i++) {
        out[2 * i] = hx[md[i] >> 4];
        out[2 * i + 1] = hx[md[i] & 15];
    }
    out[32] = '\0';
}

void ht_md5_b64(const void *p, size_t n, char out[25])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;

    EVP_Digest(p, n, md, &mdlen, EVP_md5(), NULL);
    EVP_EncodeBlock((unsigned char *)out, md, 16);
}

/* ---- sockets, waiting, files ---- */

int ht_raw_send(int port, const void *p, size_t n)
{
    struct sockaddr_in sa;
    const char *b = p;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        goto fail;
    while (n) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            goto fail;
        b += w;
        n -= (size_t)w;
    }
    return fd;
fail:
    close(fd);
    return -1;
}

int ht_wait(int (*cond)(void *arg), void *arg, int timeout_ms)
{
    struct timespec ts = {0, 10 * 1000000L};
    int waited = 0;

    for (;;) {
        if (cond(arg))
            return 1;
        if (waited >= timeout_ms)
            return 0;
        nanosleep(&ts, NULL);
        waited += 10;
    }
}

int ht_tmpdir(const char *prefix, char *out, size_t outlen)
{
    snprintf(out, outlen, "/tmp/%s-XXXXXX", prefix);
    if (!mkdtemp(out)) {
        int rc = -errno;
        out[0] = '\0';
        return rc;
    }
    return 0;
}

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void ht_rm_rf(const char *path)
{
    if (path && *path)
        nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static size_t nfiles;

static int count_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)path;
    (void)sb;
    (void)ftw;
    if (flag == FTW_F)
        nfiles++;
    return 0;
}

size_t ht_count_files(const char *dir)
{
    nfiles = 0;
    nftw(dir, count_cb, 16, FTW_PHYS);
    return nfiles;
}
