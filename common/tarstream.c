#include "common/tarstream.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <archive.h>
#include <curl/curl.h>
#include <jansson.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/httputil.h"
#include "common/tarindex.h"
#include "common/tls.h"

#define LOCAL_CHUNK (256 * 1024)
#define ERRBODY_MAX 4096

enum slot_state { S_FREE, S_LOCAL, S_REMOTE, S_FAILED };

struct slot {
    enum slot_state state;
    size_t i;
    struct hd_tar_src src;
    CURL *eh;
    struct curl_slist *hl;
    struct hd_buf buf; /* body bytes not written yet (or an error body) */
    long status;       /* of the final response; 0 until its status line */
    int64_t clen;      /* Content-Length, -1 when absent */
    int64_t mtime;     /* Last-Modified */
    int hdrs_done;     /* the final response's headers are complete */
    int finished;      /* the transfer is over */
    CURLcode cc;
    int paused;
    int in_archive; /* its header is written */
    uint64_t written;
    size_t cap;
    char err[CURL_ERROR_SIZE];
};

struct run {
    const struct hd_tarstream_cfg *cfg;
    const struct hd_tarstream_ops *ops;
    void *ctx;
    struct archive *a;
    CURLM *m;
    struct slot *slots;
    int sink_err;
    int discard; /* after an error: output is dropped */
    char *lbuf;  /* LOCAL_CHUNK */
};

int hd_tarstream_http_err(long status, const char *body, size_t len, char *msg, size_t msglen)
{
    json_t *j = body && len ? json_loadb(body, len, 0, NULL) : NULL;
    const char *m = json_string_value(json_object_get(j, "message"));
    const char *code = json_string_value(json_object_get(j, "code"));
    int rc;

    if (status == 404)
        rc = code && strcmp(code, "NoSuchBucket") == 0 ? HD_ENOSUCHBUCKET : HD_ENOSUCHKEY;
    else if (status == 403)
        rc = HD_EACCESS;
    else if (status == 400)
        rc = code && strcmp(code, "InvalidArchive") == 0 ? HD_ENOTARCHIVE : HD_EBADARG;
    else if (status == 416)
        rc = HD_ERANGE;
    else if (status == 503)
        rc = HD_EUNAVAIL;
    else
        rc = HD_EINTERNAL;
    if (m)
        snprintf(msg, msglen, "%s", m);
    else
        snprintf(msg, msglen, "HTTP %ld", status);
    json_decref(j);
    return rc;
}

/* ---- output ---- */

static long out_write(void *arg, const void *buf, size_t n)
{
    struct run *u = arg;
    int rc;

    if (u->discard)
        return (long)n; /* closing after an error: nothing more reaches the sink */
    if (u->sink_err)
        return -1;
    if ((rc = u->ops->sink(u->ctx, buf, n)) < 0) {
        u->sink_err = rc;
        return -1;
    }
    return (long)n;
}

static int put_data(struct run *u, const void *p, size_t n, char *msg, size_t msglen)
{
    la_ssize_t w;

    while (n) {
        w = archive_write_data(u->a, p, n);
        if (w <= 0) {
            snprintf(msg, msglen, "writing the archive: %s",
                     archive_error_string(u->a) ? archive_error_string(u->a) : "failed");
            return u->sink_err ? u->sink_err : -EIO;
        }
        p = (const char *)p + w;
        n -= (size_t)w;
    }
    return 0;
}

/* ---- slots ---- */

static void src_free(struct hd_tar_src *s)
{
    size_t i;

    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    free(s->url);
    s->url = NULL;
    for (i = 0; i < s->nhdrs; i++)
        free(s->hdrs[i]);
    free(s->hdrs);
    s->hdrs = NULL;
    s->nhdrs = 0;
}

static void slot_release(struct run *u, struct slot *s)
{
    if (s->eh) {
        curl_multi_remove_handle(u->m, s->eh);
        curl_easy_cleanup(s->eh);
        s->eh = NULL;
    }
    curl_slist_free_all(s->hl);
    s->hl = NULL;
    src_free(&s->src);
    hd_buf_cleanup(&s->buf);
    s->state = S_FREE;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    struct slot *s = arg;
    size_t len = size * n;
    char line[256];
    const char *v;

    if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) {
        const char *sp = memchr(p, ' ', len);
        s->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        s->clen = -1;
        s->hdrs_done = 0;
        return len;
    }
    if (len <= 2) { /* end of a header block; 1xx blocks are followed by another */
        if (s->status >= 200)
            s->hdrs_done = 1;
        return len;
    }
    if (len >= sizeof(line))
        return len;
    memcpy(line, p, len);
    line[len] = '\0';
    line[strcspn(line, "\r\n")] = '\0';
    if (hd_str_case_prefix(line, "content-length:")) {
        uint64_t cl;
        v = line + 15;
        while (*v == ' ' || *v == '\t')
            v++;
        if (hd_parse_u64(v, &cl) == 0 && cl <= INT64_MAX)
            s->clen = (int64_t)cl;
    } else if (hd_str_case_prefix(line, "last-modified:")) {
        time_t t;
        v = line + 14;
        while (*v == ' ' || *v == '\t')
            v++;
        if (hd_http_date_parse(v, &t) == 0)
            s->mtime = (int64_t)t;
    }
    return len;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    struct slot *s = arg;
    size_t len = size * n;

    if (s->status != 200) { /* an error answer: keep its start for the message */
        if (s->buf.len < ERRBODY_MAX)
            hd_buf_append(&s->buf, p, len < ERRBODY_MAX ? len : ERRBODY_MAX);
        return len;
    }
    if (s->buf.len && s->buf.len + len > s->cap) {
        s->paused = 1;
        return CURL_WRITEFUNC_PAUSE; /* redelivered after curl_easy_pause(CONT) */
    }
    if (hd_buf_append(&s->buf, p, len) < 0)
        return 0;
    return len;
}

static int start_remote(struct run *u, struct slot *s)
{
    size_t k;

    if (!(s->eh = curl_easy_init()))
        return -ENOMEM;
    for (k = 0; k < s->src.nhdrs; k++) {
        struct curl_slist *n = curl_slist_append(s->hl, s->src.hdrs[k]);
        if (!n)
            return -ENOMEM;
        s->hl = n;
    }
    curl_easy_setopt(s->eh, CURLOPT_URL, s->src.url);
    hd_tls_curl(s->eh);
    curl_easy_setopt(s->eh, CURLOPT_HTTPHEADER, s->hl);
    curl_easy_setopt(s->eh, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(s->eh, CURLOPT_HEADERDATA, s);
    curl_easy_setopt(s->eh, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(s->eh, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(s->eh, CURLOPT_PRIVATE, s);
    curl_easy_setopt(s->eh, CURLOPT_ERRORBUFFER, s->err);
    curl_easy_setopt(s->eh, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(s->eh, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(s->eh, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    /* a stalled node: under 1 byte/s for 60 s (paused transfers are not checked) */
    curl_easy_setopt(s->eh, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(s->eh, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(s->eh, CURLOPT_BUFFERSIZE, 256L * 1024);
    curl_easy_setopt(s->eh, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
    if (curl_multi_add_handle(u->m, s->eh) != CURLM_OK)
        return -ENOMEM;
    return 0;
}

/* Resolves entry i into its slot and starts its fetch. */
static void start(struct run *u, size_t i)
{
    struct slot *s = &u->slots[i % u->cfg->window];
    int rc;

    memset(s, 0, sizeof(*s));
    s->i = i;
    s->src.fd = -1;
    s->clen = -1;
    s->cap = u->cfg->entry_buf;
    hd_buf_init(&s->buf);
    u->ops->resolve(u->ctx, i, &s->src);
    if (s->src.err < 0) {
        s->state = S_FAILED;
    } else if (s->src.fd >= 0) {
        s->state = S_LOCAL;
    } else if (s->src.url) {
        s->state = S_REMOTE;
        if ((rc = start_remote(u, s)) < 0) {
            s->state = S_FAILED;
            s->src.err = rc;
            snprintf(s->src.msg, sizeof(s->src.msg), "cannot start a transfer");
        }
    } else {
        s->state = S_FAILED;
        s->src.err = HD_EINTERNAL;
        snprintf(s->src.msg, sizeof(s->src.msg), "no source");
    }
}

/* Waits up to 100 ms (less when libcurl has a timer due) for network activity, then runs
 * the transfers and collects the finished ones. */
static void pump(struct run *u)
{
    CURLMsg *msg;
    int running, left;

    curl_multi_poll(u->m, NULL, 0, 100, NULL);
    curl_multi_perform(u->m, &running);
    while ((msg = curl_multi_info_read(u->m, &left))) {
        struct slot *s = NULL;
        if (msg->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
        if (s) {
            s->finished = 1;
            s->cc = msg->data.result;
        }
    }
}

/* Entry failed before any of its bytes went out: record it or stop. */
static int entry_failed(struct run *u, struct slot *s, int code, const char *why, char *msg,
                        size_t msglen)
{
    const char *name = u->ops->name(u->ctx, s->i);
    struct hd_buf pn;
    int rc;

    rc = u->ops->failed ? u->ops->failed(u->ctx, s->i, code, why) : code;
    if (rc < 0) {
        snprintf(msg, msglen, "entry '%.300s': %.400s", name, why);
        return rc;
    }
    hd_buf_init(&pn);
    hd_buf_printf(&pn, "%s/%s",
                  code == HD_ENOSUCHKEY || code == HD_ENOSUCHBUCKET || code == HD_ENOSUCHMEMBER
                      ? "__404__"
                      : "__error__",
                  name);
    if (pn.oom)
        rc = -ENOMEM;
    else if ((rc = hd_tar_write_header(u->a, pn.data, strlen(why), (int64_t)time(NULL), msg,
                                       msglen)) == 0)
        rc = put_data(u, why, strlen(why), msg, msglen);
    hd_buf_cleanup(&pn);
    return rc;
}

static int write_local(struct run *u, struct slot *s, char *msg, size_t msglen)
{
    const char *name = u->ops->name(u->ctx, s->i);
    uint64_t done = 0;
    int rc;

    rc = hd_tar_write_header(u->a, name, s->src.len,
                             s->src.mtime ? s->src.mtime : (int64_t)time(NULL), msg, msglen);
    if (rc < 0)
        return rc;
    while (done < s->src.len) {
        size_t want = s->src.len - done > LOCAL_CHUNK ? LOCAL_CHUNK : (size_t)(s->src.len - done);
        ssize_t n = pread(s->src.fd, u->lbuf, want, (off_t)(s->src.off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            snprintf(msg, msglen, "%.300s: reading the local copy: %s", name,
                     n < 0 ? strerror(errno) : "file shorter than recorded");
            return n < 0 ? -errno : -EIO;
        }
        if ((rc = put_data(u, u->lbuf, (size_t)n, msg, msglen)) < 0)
            return rc;
        done += (uint64_t)n;
        if (u->ops->stopped && u->ops->stopped(u->ctx))
            return -ECANCELED;
    }
    if (u->ops->written)
        u->ops->written(u->ctx, s->i, done);
    return 0;
}

/* One step for the head entry, remote: 1 when it is done with, 0 to come back, or a
 * negative code to stop. */
static int step_remote(struct run *u, struct slot *s, char *msg, size_t msglen)
{
    const char *name = u->ops->name(u->ctx, s->i);
    char why[400];
    int rc;

    if (!s->in_archive) {
        if (!s->finished && !(s->hdrs_done && s->status == 200)) {
            pump(u);
            return 0;
        }
        if (s->status != 200 || s->cc != CURLE_OK) { /* nothing of it is out yet */
            if (s->status != 200 && s->status != 0 && s->cc == CURLE_OK) {
                rc = hd_tarstream_http_err(s->status, s->buf.data, s->buf.len, why, sizeof(why));
            } else {
                rc = HD_EUNAVAIL;
                snprintf(why, sizeof(why), "fetching from %s: %s", s->src.url,
                         s->err[0] ? s->err : curl_easy_strerror(s->cc));
            }
            rc = entry_failed(u, s, rc, why, msg, msglen);
            return rc < 0 ? rc : 1;
        }
        if (s->clen < 0) {
            snprintf(why, sizeof(why), "%s answered without Content-Length", s->src.url);
            rc = entry_failed(u, s, HD_EINTERNAL, why, msg, msglen);
            return rc < 0 ? rc : 1;
        }
        rc = hd_tar_write_header(u->a, name, (uint64_t)s->clen,
                                 s->mtime ? s->mtime : (int64_t)time(NULL), msg, msglen);
        if (rc < 0)
            return rc;
        s->in_archive = 1;
    }
    if (s->buf.len) {
        if (s->written + s->buf.len > (uint64_t)s->clen) {
            snprintf(msg, msglen, "%.300s: more bytes than its Content-Length", name);
            return -EIO;
        }
        if ((rc = put_data(u, s->buf.data, s->buf.len, msg, msglen)) < 0)
            return rc;
        s->written += s->buf.len;
        hd_buf_reset(&s->buf);
        if (s->paused) {
            s->paused = 0;
            curl_easy_pause(s->eh, CURLPAUSE_CONT); /* may deliver into buf at once */
        }
        return 0;
    }
    if (s->finished) {
        if (s->cc != CURLE_OK || s->written != (uint64_t)s->clen) {
            snprintf(msg, msglen, "%.300s: transfer cut short after %llu of %lld bytes (%s)", name,
                     (unsigned long long)s->written, (long long)s->clen,
                     s->err[0] ? s->err : curl_easy_strerror(s->cc));
            return HD_EUNAVAIL;
        }
        if (u->ops->written)
            u->ops->written(u->ctx, s->i, s->written);
        return 1;
    }
    pump(u);
    return 0;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

int hd_tarstream_run(const struct hd_tarstream_cfg *cfg, const struct hd_tarstream_ops *ops,
                     void *ctx, char *msg, size_t msglen)
{
    struct run u = {.cfg = cfg, .ops = ops, .ctx = ctx};
    size_t head = 0, next = 0, k;
    void *loc = hd_tar_locale_enter();
    int rc = 0;

    msg[0] = '\0';
    pthread_once(&curl_once, curl_init_once);
    if (cfg->window == 0 || cfg->entry_buf == 0) {
        snprintf(msg, msglen, "bad window");
        rc = -EINVAL;
        goto out;
    }
    u.slots = calloc(cfg->window, sizeof(*u.slots));
    u.lbuf = malloc(LOCAL_CHUNK);
    u.m = curl_multi_init();
    u.a = hd_tar_writer_new(out_write, &u);
    if (!u.slots || !u.lbuf || !u.m || !u.a) {
        snprintf(msg, msglen, "out of memory");
        rc = -ENOMEM;
        goto out;
    }
    while (head < cfg->n) {
        struct slot *s;
        int r;

        if (ops->stopped && ops->stopped(ctx)) {
            snprintf(msg, msglen, "stopped");
            rc = -ECANCELED;
            break;
        }
        while (next < cfg->n && next < head + cfg->window)
            start(&u, next++);
        s = &u.slots[head % cfg->window];
        if (s->state == S_FAILED)
            r = entry_failed(&u, s, s->src.err, s->src.msg, msg, msglen);
        else if (s->state == S_LOCAL)
            r = write_local(&u, s, msg, msglen);
        else
            r = step_remote(&u, s, msg, msglen);
        if (r < 0) {
            rc = u.sink_err ? u.sink_err : r;
            break;
        }
        if (r == 1 || s->state != S_REMOTE) {
            slot_release(&u, s);
            head++;
        }
    }
    if (rc == 0 && archive_write_close(u.a) != ARCHIVE_OK) {
        rc = u.sink_err ? u.sink_err : -EIO;
        snprintf(msg, msglen, "finishing the archive: %s",
                 archive_error_string(u.a) ? archive_error_string(u.a) : "failed");
    }
out:
    if (u.slots)
        for (k = 0; k < cfg->window; k++)
            if (u.slots[k].state != S_FREE)
                slot_release(&u, &u.slots[k]);
    if (u.a) {
        if (rc < 0) { /* no padding or end-of-archive blocks after an error: closed into the
                       * void (archive_write_fail would leak libarchive 3.6's output state) */
            u.discard = 1;
            archive_write_close(u.a);
        }
        archive_write_free(u.a);
    }
    if (u.m)
        curl_multi_cleanup(u.m);
    free(u.slots);
    free(u.lbuf);
    hd_tar_locale_leave(loc);
    return rc;
}
