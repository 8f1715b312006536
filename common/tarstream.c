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

#define LOCAL_CHUNK ((size_t)256 * 1024)
#define ERRBODY_MAX 4096

enum slot_state { S_FREE, S_LOCAL, S_REMOTE, S_FAILED, S_GROUP };

/* A transfer: one entry's GET, or a group's POST. */
struct xfer {
    CURL *eh;
    struct curl_slist *hl;
    struct hd_buf buf; /* body bytes not written yet (or an error body) */
    size_t off;        /* groups: bytes of buf already taken */
    long status;       /* of the final response; 0 until its status line */
    int64_t clen;      /* Content-Length, -1 when absent */
    int64_t mtime;     /* Last-Modified */
    int hdrs_done;     /* the final response's headers are complete */
    int finished;      /* the transfer is over */
    CURLcode cc;
    int paused;
    size_t cap;
    size_t nocap; /* groups: accept this many bytes before pausing (the index line) */
    char err[CURL_ERROR_SIZE];
};

enum group_state { G_IDLE, G_RUN, G_FAILED };

struct group {
    enum group_state state;
    struct xfer x;
    struct hd_tar_group req;
    struct hd_tar_grec *recs; /* the index, once read */
    size_t assigned;          /* records handed to entries so far */
    char why[300];            /* G_FAILED: why */
};

struct slot {
    enum slot_state state;
    size_t i;
    struct hd_tar_src src;
    struct xfer x;  /* S_REMOTE */
    size_t rec;     /* S_GROUP: its record in the group */
    uint64_t left;  /* S_GROUP: data bytes still to take */
    int in_archive; /* its header is written */
    uint64_t written;
};

struct run {
    const struct hd_tarstream_cfg *cfg;
    const struct hd_tarstream_ops *ops;
    void *ctx;
    struct archive *a;
    CURLM *m;
    struct slot *slots;
    struct group *groups;
    size_t ngroups;
    int sink_err;
    int discard; /* after an error: output is dropped */
    int skip;    /* data handed over by reference (ops->local): libarchive's copy is dropped */
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

    if (u->discard || u->skip)
        return (long)n; /* closing after an error, or data the sink's owner already has */
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

/* ---- group answers' index ---- */

int hd_tarstream_group_index(const struct hd_tar_grec *recs, size_t n, struct hd_buf *out)
{
    json_t *a = json_array(), *o;
    char *js = NULL;
    size_t i;
    int rc = -ENOMEM;

    for (i = 0; a && i < n; i++) {
        if (recs[i].kind == HD_GREC_DATA)
            o = json_pack("{s:I, s:I}", "s", (json_int_t)recs[i].size, "t",
                          (json_int_t)recs[i].mtime);
        else if (recs[i].kind == HD_GREC_ERR)
            o = json_pack("{s:i, s:s}", "e", recs[i].err, "m", recs[i].msg ? recs[i].msg : "");
        else
            o = json_pack("{s:i}", "f", 1);
        if (!o || json_array_append_new(a, o) < 0)
            goto out;
    }
    if (a && (js = json_dumps(a, JSON_COMPACT)) && hd_buf_puts(out, js) == 0 &&
        hd_buf_puts(out, "\n") == 0)
        rc = 0;
out:
    free(js);
    json_decref(a);
    return rc;
}

void hd_tarstream_grecs_free(struct hd_tar_grec *recs, size_t n)
{
    size_t i;

    for (i = 0; recs && i < n; i++)
        free(recs[i].msg);
    free(recs);
}

int hd_tarstream_group_parse(const char *line, size_t len, size_t n, struct hd_tar_grec **out)
{
    json_t *a = json_loadb(line, len, 0, NULL), *o;
    struct hd_tar_grec *recs = NULL;
    size_t i;
    int rc = HD_EBADARG;

    *out = NULL;
    if (!json_is_array(a) || json_array_size(a) != n || n == 0 ||
        !(recs = calloc(n, sizeof(*recs))))
        goto out;
    json_array_foreach(a, i, o)
    {
        json_t *sz = json_object_get(o, "s"), *t = json_object_get(o, "t");
        json_t *e = json_object_get(o, "e"), *m = json_object_get(o, "m");
        struct hd_tar_grec *r = &recs[i];
        if (json_is_integer(sz) && json_integer_value(sz) >= 0 && json_is_integer(t)) {
            r->kind = HD_GREC_DATA;
            r->size = (uint64_t)json_integer_value(sz);
            r->mtime = (int64_t)json_integer_value(t);
        } else if (json_is_integer(e) && json_integer_value(e) < 0 &&
                   json_integer_value(e) > -100000 && json_is_string(m)) {
            r->kind = HD_GREC_ERR;
            r->err = (int)json_integer_value(e);
            if (!(r->msg = strdup(json_string_value(m))))
                goto out;
        } else if (json_is_true(json_object_get(o, "f")) ||
                   json_integer_value(json_object_get(o, "f")) == 1) {
            r->kind = HD_GREC_FETCH;
        } else {
            goto out;
        }
    }
    *out = recs;
    recs = NULL;
    rc = 0;
out:
    hd_tarstream_grecs_free(recs, n);
    json_decref(a);
    return rc;
}

/* ---- transfers ---- */

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

static void xfer_init(struct xfer *x, size_t cap)
{
    memset(x, 0, sizeof(*x));
    x->clen = -1;
    x->cap = cap;
    hd_buf_init(&x->buf);
}

static void xfer_cleanup(struct run *u, struct xfer *x)
{
    if (x->eh) {
        curl_multi_remove_handle(u->m, x->eh);
        curl_easy_cleanup(x->eh);
        x->eh = NULL;
    }
    curl_slist_free_all(x->hl);
    x->hl = NULL;
    hd_buf_cleanup(&x->buf);
}

static void slot_release(struct run *u, struct slot *s)
{
    xfer_cleanup(u, &s->x);
    src_free(&s->src);
    s->state = S_FREE;
}

static void group_release(struct run *u, struct group *g)
{
    size_t k;

    xfer_cleanup(u, &g->x);
    free(g->req.url);
    for (k = 0; k < g->req.nhdrs; k++)
        free(g->req.hdrs[k]);
    free(g->req.hdrs);
    free(g->req.body);
    hd_tarstream_grecs_free(g->recs, g->req.n);
    memset(g, 0, sizeof(*g));
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    struct xfer *s = arg;
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
    struct xfer *s = arg;
    size_t len = size * n, held = s->buf.len - s->off;

    if (s->status != 200) { /* an error answer: keep its start for the message */
        if (s->buf.len < ERRBODY_MAX)
            hd_buf_append(&s->buf, p, len < ERRBODY_MAX ? len : ERRBODY_MAX);
        return len;
    }
    if (held && held + len > s->cap && s->buf.len + len > s->nocap) {
        s->paused = 1;
        return CURL_WRITEFUNC_PAUSE; /* redelivered after curl_easy_pause(CONT) */
    }
    if (s->off && s->off == s->buf.len) { /* all taken: start over */
        hd_buf_reset(&s->buf);
        s->off = 0;
    } else if (s->off >= s->cap) { /* the taken part is larger than what is left */
        memmove(s->buf.data, s->buf.data + s->off, s->buf.len - s->off);
        s->buf.len -= s->off;
        s->off = 0;
    }
    if (hd_buf_append(&s->buf, p, len) < 0)
        return 0;
    return len;
}

/* Starts x: a GET of url, or a POST of body when body is not NULL. */
static int xfer_start(struct run *u, struct xfer *x, const char *url, char *const *hdrs,
                      size_t nhdrs, const char *body, size_t blen)
{
    size_t k;

    if (!(x->eh = curl_easy_init()))
        return -ENOMEM;
    for (k = 0; k < nhdrs; k++) {
        struct curl_slist *n = curl_slist_append(x->hl, hdrs[k]);
        if (!n)
            return -ENOMEM;
        x->hl = n;
    }
    if (body) {
        struct curl_slist *n = curl_slist_append(x->hl, "Content-Type: application/json");
        if (!n)
            return -ENOMEM;
        x->hl = n;
        curl_easy_setopt(x->eh, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(x->eh, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
    }
    curl_easy_setopt(x->eh, CURLOPT_URL, url);
    hd_tls_curl(x->eh);
    curl_easy_setopt(x->eh, CURLOPT_HTTPHEADER, x->hl);
    curl_easy_setopt(x->eh, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(x->eh, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(x->eh, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(x->eh, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(x->eh, CURLOPT_PRIVATE, x);
    curl_easy_setopt(x->eh, CURLOPT_ERRORBUFFER, x->err);
    curl_easy_setopt(x->eh, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(x->eh, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(x->eh, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    /* a stalled node: under 1 byte/s for 60 s (paused transfers are not checked) */
    curl_easy_setopt(x->eh, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(x->eh, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(x->eh, CURLOPT_BUFFERSIZE, 256L * 1024);
    curl_easy_setopt(x->eh, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
    if (curl_multi_add_handle(u->m, x->eh) != CURLM_OK)
        return -ENOMEM;
    return 0;
}

/* Fills slot s from its src (resolved or fallen back): local, remote (started), failed or
 * group. */
static void slot_from_src(struct run *u, struct slot *s)
{
    int rc;

    if (s->src.err < 0) {
        s->state = S_FAILED;
    } else if (s->src.fd >= 0) {
        s->state = S_LOCAL;
    } else if (s->src.url) {
        s->state = S_REMOTE;
        xfer_init(&s->x, u->cfg->entry_buf);
        if ((rc = xfer_start(u, &s->x, s->src.url, s->src.hdrs, s->src.nhdrs, NULL, 0)) < 0) {
            s->state = S_FAILED;
            s->src.err = rc;
            snprintf(s->src.msg, sizeof(s->src.msg), "cannot start a transfer");
        }
    } else if (s->src.group && u->ops->group && u->ops->fallback) {
        s->state = S_GROUP;
    } else {
        s->state = S_FAILED;
        s->src.err = HD_EINTERNAL;
        snprintf(s->src.msg, sizeof(s->src.msg), "no source");
    }
}

/* Slot s (a group's entry) is fetched alone from now on. */
static void slot_fallback(struct run *u, struct slot *s)
{
    src_free(&s->src);
    memset(&s->src, 0, sizeof(s->src));
    s->src.fd = -1;
    u->ops->fallback(u->ctx, s->i, &s->src);
    s->src.group = 0;
    slot_from_src(u, s);
}

/* Group gi's state for a new entry: started on its first one. */
static struct group *group_get(struct run *u, size_t gi)
{
    struct group *g;
    int rc;

    if (gi >= u->ngroups) {
        size_t n = gi + 8;
        struct group *ng = realloc(u->groups, n * sizeof(*ng));
        if (!ng)
            return NULL;
        memset(ng + u->ngroups, 0, (n - u->ngroups) * sizeof(*ng));
        u->groups = ng;
        u->ngroups = n;
    }
    g = &u->groups[gi];
    if (g->state != G_IDLE)
        return g;
    g->state = G_RUN;
    xfer_init(&g->x, u->cfg->entry_buf);
    rc = u->ops->group(u->ctx, gi, &g->req);
    if (rc == 0 && (!g->req.url || !g->req.body || g->req.n == 0))
        rc = -EINVAL;
    g->x.nocap = g->req.n * 400 + 64; /* the index line is taken whole */
    if (rc == 0)
        rc = xfer_start(u, &g->x, g->req.url, g->req.hdrs, g->req.nhdrs, g->req.body, g->req.blen);
    if (rc < 0) {
        g->state = G_FAILED;
        snprintf(g->why, sizeof(g->why), "cannot start the group request");
    }
    return g;
}

/* Resolves entry i into its slot and starts its fetch. */
static void start(struct run *u, size_t i)
{
    struct slot *s = &u->slots[i % u->cfg->window];
    struct group *g;

    memset(s, 0, sizeof(*s));
    s->i = i;
    s->src.fd = -1;
    u->ops->resolve(u->ctx, i, &s->src);
    slot_from_src(u, s);
    if (s->state != S_GROUP)
        return;
    if (!(g = group_get(u, s->src.group - 1))) {
        s->state = S_FAILED;
        s->src.err = -ENOMEM;
        snprintf(s->src.msg, sizeof(s->src.msg), "out of memory");
        return;
    }
    s->rec = g->assigned++;
    if (s->rec >= g->req.n && g->state != G_FAILED) {
        g->state = G_FAILED;
        snprintf(g->why, sizeof(g->why), "more entries than the group asked for");
    }
    if (g->state == G_FAILED || (g->recs && g->recs[s->rec].kind == HD_GREC_FETCH))
        slot_fallback(u, s);
}

/* After a group's index arrived or the group failed: its entries in the window that must
 * be fetched alone start now, in parallel, rather than one by one as each reaches the head. */
static void group_settled(struct run *u, size_t gi)
{
    struct group *g = &u->groups[gi];
    size_t k;

    for (k = 0; k < u->cfg->window; k++) {
        struct slot *s = &u->slots[k];
        if (s->state != S_GROUP || s->src.group != gi + 1 || s->in_archive)
            continue;
        if (g->state == G_FAILED || g->recs[s->rec].kind == HD_GREC_FETCH)
            slot_fallback(u, s);
    }
}

/* A group's answer: its index once the line is complete, or a failure before it. */
static void group_poll(struct run *u, size_t gi)
{
    struct group *g = &u->groups[gi];
    struct xfer *x = &g->x;
    const char *nl;

    if (g->state != G_RUN || g->recs)
        return;
    if (x->status != 200 || x->cc != CURLE_OK) {
        if (!x->finished)
            return; /* no answer yet, or its error body is still coming */
        if (x->status && x->status != 200 && x->cc == CURLE_OK)
            hd_tarstream_http_err(x->status, x->buf.data, x->buf.len, g->why, sizeof(g->why));
        else
            snprintf(g->why, sizeof(g->why), "%s", x->err[0] ? x->err : curl_easy_strerror(x->cc));
        g->state = G_FAILED;
        group_settled(u, gi);
        return;
    }
    if (!x->buf.len)
        return;
    nl = memchr(x->buf.data, '\n', x->buf.len);
    if (!nl && !x->finished && x->buf.len < x->nocap)
        return;
    if (!nl ||
        hd_tarstream_group_parse(x->buf.data, (size_t)(nl - x->buf.data), g->req.n, &g->recs) < 0) {
        g->state = G_FAILED;
        snprintf(g->why, sizeof(g->why), "the group answer's index is malformed");
        group_settled(u, gi);
        return;
    }
    x->off = (size_t)(nl - x->buf.data) + 1;
    group_settled(u, gi);
}

/* Waits up to 100 ms (less when libcurl has a timer due) for network activity, then runs
 * the transfers and collects the finished ones. */
static void pump(struct run *u)
{
    CURLMsg *msg;
    int running, left;
    size_t gi;

    curl_multi_poll(u->m, NULL, 0, 100, NULL);
    curl_multi_perform(u->m, &running);
    while ((msg = curl_multi_info_read(u->m, &left))) {
        struct xfer *x = NULL;
        if (msg->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
        if (x) {
            x->finished = 1;
            x->cc = msg->data.result;
        }
    }
    for (gi = 0; gi < u->ngroups; gi++)
        group_poll(u, gi);
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
    if (u->ops->local &&
        (rc = u->ops->local(u->ctx, s->i, s->src.fd, s->src.off, s->src.len)) <= 0) {
        if (rc < 0) {
            snprintf(msg, msglen, "%.300s: handing the local copy over failed", name);
            return rc;
        }
        s->src.fd = -1; /* the owner's now */
        /* libarchive counts the member's bytes (and pads after them): it gets lbuf's bytes in
         * their place, which out_write drops (no copy: the writer has no blocking) */
        u->skip = 1;
        while (rc == 0 && done < s->src.len) {
            size_t want =
                s->src.len - done > LOCAL_CHUNK ? LOCAL_CHUNK : (size_t)(s->src.len - done);
            rc = put_data(u, u->lbuf, want, msg, msglen);
            done += want;
        }
        u->skip = 0;
        if (rc == 0 && u->ops->written)
            u->ops->written(u->ctx, s->i, done);
        return rc;
    }
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

/* Lets a paused transfer go on once its buffer has room. */
static void xfer_unpause(struct xfer *x)
{
    if (x->paused && x->buf.len - x->off < x->cap) {
        x->paused = 0;
        curl_easy_pause(x->eh, CURLPAUSE_CONT); /* may deliver into buf at once */
    }
}

/* One step for the head entry, remote: 1 when it is done with, 0 to come back, or a
 * negative code to stop. */
static int step_remote(struct run *u, struct slot *s, char *msg, size_t msglen)
{
    const char *name = u->ops->name(u->ctx, s->i);
    struct xfer *x = &s->x;
    char why[400];
    int rc;

    if (!s->in_archive) {
        if (!x->finished && !(x->hdrs_done && x->status == 200)) {
            pump(u);
            return 0;
        }
        if (x->status != 200 || x->cc != CURLE_OK) { /* nothing of it is out yet */
            if (x->status != 200 && x->status != 0 && x->cc == CURLE_OK) {
                rc = hd_tarstream_http_err(x->status, x->buf.data, x->buf.len, why, sizeof(why));
            } else {
                rc = HD_EUNAVAIL;
                snprintf(why, sizeof(why), "fetching from %s: %s", s->src.url,
                         x->err[0] ? x->err : curl_easy_strerror(x->cc));
            }
            rc = entry_failed(u, s, rc, why, msg, msglen);
            return rc < 0 ? rc : 1;
        }
        if (x->clen < 0) {
            snprintf(why, sizeof(why), "%s answered without Content-Length", s->src.url);
            rc = entry_failed(u, s, HD_EINTERNAL, why, msg, msglen);
            return rc < 0 ? rc : 1;
        }
        rc = hd_tar_write_header(u->a, name, (uint64_t)x->clen,
                                 x->mtime ? x->mtime : (int64_t)time(NULL), msg, msglen);
        if (rc < 0)
            return rc;
        s->in_archive = 1;
    }
    if (x->buf.len) {
        if (s->written + x->buf.len > (uint64_t)x->clen) {
            snprintf(msg, msglen, "%.300s: more bytes than its Content-Length", name);
            return -EIO;
        }
        if ((rc = put_data(u, x->buf.data, x->buf.len, msg, msglen)) < 0)
            return rc;
        s->written += x->buf.len;
        hd_buf_reset(&x->buf);
        xfer_unpause(x);
        return 0;
    }
    if (x->finished) {
        if (x->cc != CURLE_OK || s->written != (uint64_t)x->clen) {
            snprintf(msg, msglen, "%.300s: transfer cut short after %llu of %lld bytes (%s)", name,
                     (unsigned long long)s->written, (long long)x->clen,
                     x->err[0] ? x->err : curl_easy_strerror(x->cc));
            return HD_EUNAVAIL;
        }
        if (u->ops->written)
            u->ops->written(u->ctx, s->i, s->written);
        return 1;
    }
    pump(u);
    return 0;
}

/* One step for the head entry, the next record of a group: as step_remote. */
static int step_group(struct run *u, struct slot *s, char *msg, size_t msglen)
{
    struct group *g = &u->groups[s->src.group - 1];
    struct xfer *x = &g->x;
    const char *name = u->ops->name(u->ctx, s->i);
    const struct hd_tar_grec *rec;
    int rc;

    if (!s->in_archive) {
        if (g->state == G_FAILED) {
            slot_fallback(u, s);
            return 0;
        }
        if (!g->recs) {
            pump(u);
            return 0;
        }
        rec = &g->recs[s->rec];
        if (rec->kind == HD_GREC_FETCH) {
            slot_fallback(u, s);
            return 0;
        }
        if (rec->kind == HD_GREC_ERR) {
            rc = entry_failed(u, s, rec->err, rec->msg, msg, msglen);
            return rc < 0 ? rc : 1;
        }
        if (x->finished && x->buf.len - x->off < rec->size) {
            /* the group's answer was cut before this record: it and the rest, alone */
            g->state = G_FAILED;
            snprintf(g->why, sizeof(g->why), "the group answer was cut short");
            group_settled(u, s->src.group - 1); /* s included */
            return 0;
        }
        rc = hd_tar_write_header(u->a, name, rec->size, rec->mtime ? rec->mtime : time(NULL), msg,
                                 msglen);
        if (rc < 0)
            return rc;
        s->in_archive = 1;
        s->left = rec->size;
    }
    while (s->left) {
        size_t avail = x->buf.len - x->off, k;
        if (!avail) {
            if (x->finished) {
                g->state = G_FAILED; /* the rest of its entries: alone */
                snprintf(msg, msglen, "%.300s: group transfer cut short after %llu bytes (%s)",
                         name, (unsigned long long)s->written,
                         x->err[0] ? x->err : curl_easy_strerror(x->cc));
                return HD_EUNAVAIL;
            }
            xfer_unpause(x);
            pump(u);
            return 0;
        }
        k = avail < s->left ? avail : (size_t)s->left;
        if ((rc = put_data(u, x->buf.data + x->off, k, msg, msglen)) < 0)
            return rc;
        x->off += k;
        s->left -= k;
        s->written += k;
        if (x->off == x->buf.len) {
            hd_buf_reset(&x->buf);
            x->off = 0;
        }
        xfer_unpause(x);
        if (u->ops->stopped && u->ops->stopped(u->ctx))
            return -ECANCELED;
    }
    if (u->ops->written)
        u->ops->written(u->ctx, s->i, s->written);
    return 1;
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
    u.lbuf = calloc(1, LOCAL_CHUNK);
    u.m = curl_multi_init();
    if (cfg->fmt != HD_ARCH_TAR && ops->local) {
        snprintf(msg, msglen, "a compressed archive cannot take data by reference");
        rc = -EINVAL;
        goto out;
    }
    u.a = hd_tar_writer_new2(out_write, &u, cfg->fmt);
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
        else if (s->state == S_GROUP)
            r = step_group(&u, s, msg, msglen);
        else
            r = step_remote(&u, s, msg, msglen);
        if (r == 0 && (s->state == S_FAILED || s->state == S_LOCAL))
            r = 1; /* done in one step */
        if (r < 0) {
            rc = u.sink_err ? u.sink_err : r;
            break;
        }
        if (r == 1) {
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
    for (k = 0; k < u.ngroups; k++)
        group_release(&u, &u.groups[k]);
    free(u.groups);
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
