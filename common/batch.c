#include "common/batch.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/random.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "common/buf.h"
#include "common/cksum.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/nodeauth.h"
#include "common/ring.h"
#include "common/tarindex.h"

#define BATCH_MAGIC 0x62746368u
#define MAX_BATCHES 64       /* streams in flight per process */
#define FETCH_WINDOW 16      /* remote entries fetched at once per stream */
#define ENTRY_BUF (1u << 20) /* bytes buffered per entry in flight */
#define REFS 64              /* local members handed to the HTTP worker ahead of it */

/* ---- the request body ---- */

static int bad(char *msg, size_t msglen, const char *what, size_t i)
{
    if (i == (size_t)-1)
        snprintf(msg, msglen, "Batch body: %s.", what);
    else
        snprintf(msg, msglen, "Batch body: entry %zu: %s.", i, what);
    return HD_EBADARG;
}

static int str_field(json_t *o, const char *k, const char **out, size_t max)
{
    json_t *v = json_object_get(o, k);

    *out = NULL;
    if (!v)
        return 0;
    if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > max ||
        strlen(json_string_value(v)) != json_string_length(v))
        return -1;
    *out = json_string_value(v);
    return 0;
}

int hd_arch_fmt_json(const json_t *doc)
{
    int gz = json_is_true(json_object_get(doc, "gzip")), fmt;
    const json_t *v = json_object_get(doc, "format");

    if (!v)
        return gz ? HD_ARCH_TGZ : HD_ARCH_TAR;
    fmt = hd_arch_fmt_parse(json_string_value(v));
    return fmt < 0 || (gz && fmt != HD_ARCH_TGZ) ? -1 : fmt;
}

int hd_batch_parse(const char *body, size_t len, struct hd_batch **out, char *msg, size_t msglen)
{
    static const char *const top_keys[] = {"entries", "bucket", "continue_on_error", "gzip",
                                           "format", NULL};
    int fmt;
    static const char *const ent_keys[] = {"bucket", "name", "archpath", "as", NULL};
    json_error_t jerr;
    json_t *doc, *ents, *coe, *v;
    struct hd_batch *b = NULL;
    const char *dflt = NULL, *k;
    size_t i, j;
    int rc = HD_EBADARG;

    *out = NULL;
    doc = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(doc)) {
        snprintf(msg, msglen, "Batch body is not a JSON object: %s.",
                 doc ? "wrong type" : jerr.text);
        goto fail;
    }
    json_object_foreach(doc, k, v)
    {
        for (j = 0; top_keys[j] && strcmp(k, top_keys[j]) != 0; j++)
            ;
        if (!top_keys[j]) {
            snprintf(msg, msglen, "Batch body: unknown field \"%.64s\".", k);
            goto fail;
        }
    }
    ents = json_object_get(doc, "entries");
    coe = json_object_get(doc, "continue_on_error");
    if (!json_is_array(ents) || json_array_size(ents) == 0 ||
        json_array_size(ents) > HD_BATCH_MAX_ENTRIES) {
        bad(msg, msglen, "\"entries\" must be an array of 1 to 100000 entries", (size_t)-1);
        goto fail;
    }
    if (coe && !json_is_boolean(coe)) {
        bad(msg, msglen, "\"continue_on_error\" must be true or false", (size_t)-1);
        goto fail;
    }
    if (json_object_get(doc, "gzip") && !json_is_boolean(json_object_get(doc, "gzip"))) {
        bad(msg, msglen, "\"gzip\" must be true or false", (size_t)-1);
        goto fail;
    }
    if ((fmt = hd_arch_fmt_json(doc)) < 0) {
        bad(msg, msglen, HD_ARCH_FMT_MSG, (size_t)-1);
        goto fail;
    }
    if (str_field(doc, "bucket", &dflt, 63) < 0) {
        bad(msg, msglen, "\"bucket\" must be a bucket name", (size_t)-1);
        goto fail;
    }
    b = calloc(1, sizeof(*b));
    if (!b || !(b->e = calloc(json_array_size(ents), sizeof(*b->e)))) {
        rc = -ENOMEM;
        snprintf(msg, msglen, "Out of memory.");
        goto fail;
    }
    b->n = json_array_size(ents);
    b->continue_on_error = json_is_true(coe);
    b->fmt = fmt;
    json_array_foreach(ents, i, v)
    {
        struct hd_batch_ent *e = &b->e[i];
        if (!json_is_object(v)) {
            bad(msg, msglen, "not an object", i);
            goto fail;
        }
        json_object_foreach(v, k, coe)
        {
            for (j = 0; ent_keys[j] && strcmp(k, ent_keys[j]) != 0; j++)
                ;
            if (!ent_keys[j]) {
                snprintf(msg, msglen, "Batch body: entry %zu: unknown field \"%.64s\".", i, k);
                goto fail;
            }
        }
        if (str_field(v, "bucket", &e->bucket, 63) < 0) {
            bad(msg, msglen, "\"bucket\" must be a bucket name", i);
            goto fail;
        }
        if (!e->bucket)
            e->bucket = dflt;
        if (!e->bucket || hd_bucket_name_check(e->bucket) < 0) {
            bad(msg, msglen, "no valid bucket (give \"bucket\" here or at the top)", i);
            goto fail;
        }
        if (str_field(v, "name", &e->name, 1024) < 0 || !e->name ||
            hd_object_name_check(e->name, strlen(e->name)) < 0) {
            bad(msg, msglen, "\"name\" must be an object name (1-1024 bytes)", i);
            goto fail;
        }
        if (str_field(v, "archpath", &e->archpath, HD_TAR_NAME_MAX) < 0) {
            bad(msg, msglen, "\"archpath\" must be a member name", i);
            goto fail;
        }
        if (str_field(v, "as", &e->as, HD_TAR_NAME_MAX) < 0) {
            bad(msg, msglen, "\"as\" must be a non-empty name", i);
            goto fail;
        }
    }
    b->doc = doc;
    *out = b;
    return 0;
fail:
    if (b) {
        free(b->e);
        free(b);
    }
    json_decref(doc);
    return rc;
}

void hd_batch_free(struct hd_batch *b)
{
    if (!b)
        return;
    json_decref(b->doc);
    free(b->e);
    free(b);
}

/* ---- sub-batches ---- */

int hd_batch_plan_init(struct hd_batch_plan *p, size_t n)
{
    memset(p, 0, sizeof(*p));
    return (p->grp = calloc(n, sizeof(*p->grp))) ? 0 : -ENOMEM;
}

int hd_batch_plan_add(struct hd_batch_plan *p, const char *url, const char *id, size_t i)
{
    struct hd_batch_group *g;
    size_t k;

    if (!p->grp)
        return -ENOMEM;
    for (k = p->ng; k > 0 && strcmp(p->g[k - 1].url, url) != 0; k--)
        ;
    if (k == 0 || p->g[k - 1].n == HD_BATCH_SUB_MAX) {
        struct hd_batch_group *ng = realloc(p->g, (p->ng + 1) * sizeof(*ng));
        if (!ng)
            return -ENOMEM;
        p->g = ng;
        g = &ng[p->ng];
        memset(g, 0, sizeof(*g));
        snprintf(g->url, sizeof(g->url), "%s", url);
        snprintf(g->id, sizeof(g->id), "%s", id ? id : "");
        if (!(g->idx = calloc(HD_BATCH_SUB_MAX, sizeof(*g->idx))))
            return -ENOMEM;
        k = ++p->ng;
    }
    g = &p->g[k - 1];
    g->idx[g->n++] = i;
    p->grp[i] = k;
    return 0;
}

void hd_batch_plan_cleanup(struct hd_batch_plan *p)
{
    size_t k;

    for (k = 0; k < p->ng; k++)
        free(p->g[k].idx);
    free(p->g);
    free(p->grp);
    memset(p, 0, sizeof(*p));
}

int hd_batch_sub_req(const struct hd_batch *b, const struct hd_batch_plan *p, size_t g,
                     struct hd_tar_group *req, char sha[65])
{
    json_t *ents = json_array(), *doc = NULL;
    size_t k;
    int rc = -ENOMEM;

    if (g >= p->ng || !ents) {
        json_decref(ents);
        return ents ? -EINVAL : -ENOMEM;
    }
    for (k = 0; k < p->g[g].n; k++) {
        const struct hd_batch_ent *e = &b->e[p->g[g].idx[k]];
        json_t *o = json_pack("{s:s, s:s}", "bucket", e->bucket, "name", e->name);
        if (o && e->archpath)
            json_object_set_new(o, "archpath", json_string(e->archpath));
        if (!o || json_array_append_new(ents, o) < 0)
            goto out;
    }
    if (!(doc = json_pack("{s:O}", "entries", ents)) ||
        !(req->body = json_dumps(doc, JSON_COMPACT)) ||
        asprintf(&req->url, "%s/v1/batch/sub", p->g[g].url) < 0) {
        req->url = NULL;
        goto out;
    }
    req->blen = strlen(req->body);
    req->n = p->g[g].n;
    hd_nodeauth_sha256_hex(req->body, req->blen, sha);
    rc = 0;
out:
    json_decref(doc);
    json_decref(ents);
    return rc;
}

/* ---- reading the body ---- */

int hd_batch_check_payload(const struct hd_sigv4_auth *a, const char *body, size_t len)
{
    char got[HD_CK_B64_MAX], want[HD_CK_B64_MAX];
    struct hd_cksum c;

    if (!a->access_key[0] || a->payload != HD_PL_HEX)
        return 0;
    if (hd_cksum_init(&c, HD_CK_SHA256) < 0)
        return -ENOMEM;
    hd_cksum_update(&c, body, len);
    hd_cksum_final_b64(&c, got);
    hd_cksum_cleanup(&c);
    hd_b64_encode(a->payload_sha256, 32, want, sizeof(want));
    return strcmp(got, want) == 0 ? 0 : HD_ESHA256MISMATCH;
}

/* ---- the stream ---- */

static atomic_int nbatches;

/* A local member's data, handed over by reference (struct hd_tarstream_ops's local): the HTTP
 * worker preads it straight into the response once it has sent the ring's bytes up to `at`
 * (the member's header), so 10 KiB samples skip two copies through the ring. */
struct ref {
    int fd;
    uint64_t off, len, done;
    uint64_t at; /* ring bytes before it */
};

struct run {
    uint32_t magic;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;         /* request, response, thread; under mu */
    struct hd_req *r; /* NULL once the client side is over */
    struct hd_batch *b;
    hd_batch_resolve_fn resolve;
    const struct hd_batch_groups *gops; /* NULL: no groups */
    void *ctx;
    void (*ctx_free)(void *ctx);
    char **names; /* output member names */
    struct hd_ring ring;
    uint64_t put, got;      /* ring bytes in and out so far */
    struct ref lrefs[REFS]; /* queue: [rhead, rhead + nrefs) mod REFS; under mu except the
                             * head's fd/off/len/done, which only the HTTP worker touches */
    size_t rhead, nrefs;
    int waiting;     /* the client side is parked for data */
    int out_started; /* bytes went into the ring */
    int done;
    int rc;
    char msg[512];
    size_t failed;
    char reqid[17];
    /* multipart (non-streaming) answers: the archive in memory, per-entry outcomes */
    hd_batch_meta_fn meta;
    struct hd_buf tar;
    uint64_t *sizes;
    char **errs;
    char *head; /* the parts before the archive's bytes */
    size_t head_len;
    char tail[48]; /* the closing delimiter after them */
    size_t tail_len;
};

static void run_unref(struct run *u)
{
    size_t i;
    int last;

    pthread_mutex_lock(&u->mu);
    last = --u->refs == 0;
    pthread_mutex_unlock(&u->mu);
    if (!last)
        return;
    if (u->ctx_free)
        u->ctx_free(u->ctx);
    for (i = 0; u->names && i < u->b->n; i++)
        free(u->names[i]);
    free(u->names);
    for (i = 0; u->errs && i < u->b->n; i++)
        free(u->errs[i]);
    free(u->errs);
    free(u->sizes);
    free(u->head);
    for (i = 0; i < u->nrefs; i++)
        close(u->lrefs[(u->rhead + i) % REFS].fd);
    hd_buf_cleanup(&u->tar);
    hd_batch_free(u->b);
    hd_ring_cleanup(&u->ring);
    pthread_cond_destroy(&u->cv);
    pthread_mutex_destroy(&u->mu);
    u->magic = 0;
    free(u);
    atomic_fetch_sub(&nbatches, 1);
}

/* Caller holds mu. */
static void wake_client(struct run *u)
{
    if (u->r && u->waiting) {
        u->waiting = 0;
        hd_req_resume(u->r);
    }
}

static void ts_resolve(void *ctx, size_t i, struct hd_tar_src *src)
{
    struct run *u = ctx;

    u->resolve(u->ctx, &u->b->e[i], src);
}

static int ts_group(void *ctx, size_t g, struct hd_tar_group *req)
{
    struct run *u = ctx;

    return u->gops ? u->gops->group(u->ctx, g, req) : -EINVAL;
}

static void ts_fallback(void *ctx, size_t i, struct hd_tar_src *src)
{
    struct run *u = ctx;

    if (u->gops) {
        u->gops->fallback(u->ctx, &u->b->e[i], src);
    } else {
        src->err = HD_EINTERNAL;
        snprintf(src->msg, sizeof(src->msg), "no source");
    }
}

static const char *ts_name(void *ctx, size_t i)
{
    struct run *u = ctx;

    return u->names[i];
}

static int ts_sink(void *ctx, const void *buf, size_t n)
{
    struct run *u = ctx;
    size_t done = 0;

    if (u->meta) { /* multipart: the whole archive first */
        if (u->tar.len + n > HD_BATCH_MULTIPART_MAX)
            return HD_ETOOLARGE;
        return hd_buf_append(&u->tar, buf, n) < 0 ? -ENOMEM : 0;
    }
    pthread_mutex_lock(&u->mu);
    while (done < n) {
        size_t k;
        if (!u->r) {
            pthread_mutex_unlock(&u->mu);
            return -ECONNRESET; /* the client went away */
        }
        k = hd_ring_put(&u->ring, (const char *)buf + done, n - done);
        done += k;
        u->put += k;
        if (k) {
            u->out_started = 1;
            wake_client(u);
        }
        if (done < n)
            pthread_cond_wait(&u->cv, &u->mu);
    }
    pthread_mutex_unlock(&u->mu);
    return 0;
}

static int ts_local(void *ctx, size_t i, int fd, uint64_t off, uint64_t len)
{
    struct run *u = ctx;
    struct ref *f;

    (void)i;
    if (u->meta)
        return 1; /* multipart: the archive is built in memory */
    pthread_mutex_lock(&u->mu);
    while (u->r && u->nrefs == REFS)
        pthread_cond_wait(&u->cv, &u->mu);
    if (!u->r) {
        pthread_mutex_unlock(&u->mu);
        return -ECONNRESET;
    }
    f = &u->lrefs[(u->rhead + u->nrefs) % REFS];
    f->fd = fd;
    f->off = off;
    f->len = len;
    f->done = 0;
    f->at = u->put;
    u->nrefs++;
    u->out_started = 1;
    wake_client(u);
    pthread_mutex_unlock(&u->mu);
    return 0;
}

static int ts_failed(void *ctx, size_t i, int code, const char *msg)
{
    struct run *u = ctx;

    u->failed++;
    HD_LOG(HD_INFO, u->reqid, "batch entry %zu (%s/%s): %s", i, u->b->e[i].bucket, u->b->e[i].name,
           msg);
    if (u->errs && !u->errs[i])
        u->errs[i] = strdup(msg && *msg ? msg : hd_strerror(code));
    return u->b->continue_on_error ? 0 : code;
}

static void ts_written(void *ctx, size_t i, uint64_t bytes)
{
    struct run *u = ctx;

    if (u->sizes)
        u->sizes[i] = bytes;
}

static int ts_stopped(void *ctx)
{
    struct run *u = ctx;
    int gone;

    pthread_mutex_lock(&u->mu);
    gone = u->r == NULL;
    pthread_mutex_unlock(&u->mu);
    return gone;
}

static void *run_main(void *arg)
{
    static const struct hd_tarstream_ops ops = {.resolve = ts_resolve,
                                                .name = ts_name,
                                                .sink = ts_sink,
                                                .failed = ts_failed,
                                                .written = ts_written,
                                                .stopped = ts_stopped,
                                                .group = ts_group,
                                                .fallback = ts_fallback,
                                                .local = ts_local};
    struct run *u = arg;
    struct hd_tarstream_cfg cfg = {u->b->n, FETCH_WINDOW, ENTRY_BUF, u->b->fmt};
    struct hd_tarstream_ops gz = ops;
    char msg[512];
    int rc;

    gz.local = NULL; /* compressed or a zip: every byte goes through libarchive */
    rc = hd_tarstream_run(&cfg, u->b->fmt != HD_ARCH_TAR ? &gz : &ops, u, msg, sizeof(msg));
    if (rc == HD_ETOOLARGE)
        snprintf(msg, sizeof(msg),
                 "The batch is larger than %u MiB: too large for a non-streaming answer; ask for "
                 "a streaming one.",
                 HD_BATCH_MULTIPART_MAX >> 20);
    if (rc < 0 && rc != -ECONNRESET)
        HD_LOG(HD_WARN, u->reqid, "batch of %zu entries stopped: %s", u->b->n, msg);
    pthread_mutex_lock(&u->mu);
    u->done = 1;
    u->rc = rc;
    snprintf(u->msg, sizeof(u->msg), "%s", msg);
    wake_client(u);
    pthread_mutex_unlock(&u->mu);
    run_unref(u);
    return NULL;
}

/* The head ref's data into buf (HTTP worker, without mu: the batch thread only appends). Bytes
 * read, or -1 when the file is shorter than recorded or unreadable (the stream is cut). */
static long ref_read(struct ref *f, char *buf, size_t max)
{
    uint64_t left = f->len - f->done;
    ssize_t got;

    do
        got = pread(f->fd, buf, left < max ? (size_t)left : max, (off_t)(f->off + f->done));
    while (got < 0 && errno == EINTR);
    if (got <= 0)
        return -1;
    f->done += (uint64_t)got;
    return (long)got;
}

static long stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct run *u = cls;
    size_t n = 0;

    (void)pos;
    pthread_mutex_lock(&u->mu);
    while (n < max) {
        struct ref *f = u->nrefs ? &u->lrefs[u->rhead] : NULL;
        size_t k, want = max - n;
        if (f && u->got == f->at) { /* the member's data, read straight into buf */
            long got = 0;
            if (f->done < f->len) {
                pthread_mutex_unlock(&u->mu);
                got = ref_read(f, buf + n, want);
                pthread_mutex_lock(&u->mu);
            }
            if (got < 0) {
                HD_LOG(HD_WARN, u->reqid, "batch: a local copy is shorter than recorded");
                pthread_mutex_unlock(&u->mu);
                return HD_STREAM_ERROR; /* cut: readers see a truncated tar */
            }
            n += (size_t)got;
            if (f->done == f->len) {
                close(f->fd);
                u->rhead = (u->rhead + 1) % REFS;
                u->nrefs--;
            }
            continue;
        }
        if (f && f->at - u->got < want)
            want = (size_t)(f->at - u->got);
        k = hd_ring_get(&u->ring, buf + n, want);
        if (!k)
            break;
        n += k;
        u->got += k;
    }
    if (n > 0) {
        pthread_cond_broadcast(&u->cv);
    } else if (u->done) {
        pthread_mutex_unlock(&u->mu);
        return u->rc < 0 ? HD_STREAM_ERROR : HD_STREAM_END; /* an error cuts the stream */
    } else if (u->r) {
        u->waiting = 1;
        hd_req_suspend(u->r);
    } else {
        pthread_mutex_unlock(&u->mu);
        return HD_STREAM_ERROR;
    }
    pthread_mutex_unlock(&u->mu);
    return (long)n;
}

static void stream_free(void *cls)
{
    run_unref(cls);
}

/* The multipart answer: head (JSON part, the archive part's headers), the archive, tail. */
static long mp_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct run *u = cls;
    size_t n = 0, tlen = u->tail_len;
    const char *tail = u->tail;

    while (n < max) {
        uint64_t p = pos + n;
        const char *src;
        size_t avail;
        if (p < u->head_len) {
            src = u->head + p;
            avail = u->head_len - (size_t)p;
        } else if (p < u->head_len + u->tar.len) {
            src = u->tar.data + (p - u->head_len);
            avail = u->tar.len - (size_t)(p - u->head_len);
        } else if (p < u->head_len + u->tar.len + tlen) {
            src = tail + (p - u->head_len - u->tar.len);
            avail = tlen - (size_t)(p - u->head_len - u->tar.len);
        } else {
            break;
        }
        if (avail > max - n)
            avail = max - n;
        memcpy(buf + n, src, avail);
        n += avail;
    }
    return n ? (long)n : HD_STREAM_END;
}

/* Answers a finished multipart run: 0, or a negative code (nothing answered). */
static int mp_answer(struct hd_req *r, struct run *u)
{
    unsigned char rnd[12];
    char bnd[32], ctype[80];
    json_t *meta;
    char *js;
    struct hd_buf h;
    int rc;

    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        memset(rnd, 0x5a, sizeof(rnd));
    hd_hex(rnd, sizeof(rnd), bnd);
    meta = u->meta(u->ctx, u->b, u->sizes, u->errs);
    js = meta ? json_dumps(meta, JSON_COMPACT) : NULL;
    json_decref(meta);
    if (!js)
        return -ENOMEM;
    hd_buf_init(&h);
    hd_buf_printf(&h,
                  "--%s\r\nContent-Type: application/json\r\n\r\n%s\r\n--%s\r\n"
                  "Content-Type: %s\r\n\r\n",
                  bnd, js, bnd, hd_arch_fmt_ctype(u->b->fmt));
    free(js);
    if (h.oom) {
        hd_buf_cleanup(&h);
        return -ENOMEM;
    }
    u->head_len = h.len;
    u->head = hd_buf_steal(&h, NULL);
    u->tail_len = (size_t)snprintf(u->tail, sizeof(u->tail), "\r\n--%s--\r\n", bnd);
    snprintf(ctype, sizeof(ctype), "multipart/form-data; boundary=%s", bnd);
    hd_resp_header(r, "Content-Type", ctype);
    pthread_mutex_lock(&u->mu);
    u->refs++; /* the response's */
    pthread_mutex_unlock(&u->mu);
    rc = hd_resp_stream(r, 200, u->head_len + u->tar.len + u->tail_len, mp_read, u, stream_free);
    if (rc < 0)
        run_unref(u);
    return rc;
}

static void batch_done(struct hd_req *r)
{
    struct run *u = r->data;

    if (!u || u->magic != BATCH_MAGIC)
        return;
    pthread_mutex_lock(&u->mu);
    u->r = NULL;
    u->waiting = 0;
    pthread_cond_broadcast(&u->cv);
    pthread_mutex_unlock(&u->mu);
    r->data = NULL;
    run_unref(u);
}

/* The request's last callback, again after every resume: answers once there is something to
 * say (the first bytes, or the outcome). */
static void batch_end(struct hd_req *r)
{
    struct run *u = r->data;
    int started, done, rc;
    char msg[512], n[24];

    pthread_mutex_lock(&u->mu);
    started = u->out_started;
    done = u->done;
    rc = u->rc;
    snprintf(msg, sizeof(msg), "%s", u->msg);
    if (!done && (!started || u->meta)) { /* multipart: answered once the archive is whole */
        u->waiting = 1;
        hd_req_suspend(r);
        pthread_mutex_unlock(&u->mu);
        return;
    }
    if (started && !u->meta)
        u->refs++; /* the response's */
    pthread_mutex_unlock(&u->mu);
    if (u->meta && rc == 0) {
        if (mp_answer(r, u) < 0)
            hd_resp_err(r, -ENOMEM);
        return;
    }
    if (!started || u->meta) {
        hd_resp_err_msg(r, rc < 0 ? rc : HD_EINTERNAL, msg[0] ? msg : NULL);
        return;
    }
    snprintf(n, sizeof(n), "%zu", u->b->n);
    hd_resp_header(r, "Content-Type", hd_arch_fmt_ctype(u->b->fmt));
    hd_resp_header(r, "X-Hoard-Batch-Entries", n);
    if (hd_resp_stream(r, 200, UINT64_MAX, stream_read, u, stream_free) < 0) {
        run_unref(u);
        hd_resp_err(r, -ENOMEM);
    }
}

static char *out_name(const struct hd_batch_ent *e)
{
    struct hd_buf b;

    if (e->as)
        return strdup(e->as);
    hd_buf_init(&b);
    hd_buf_puts(&b, e->name);
    if (e->archpath) {
        hd_buf_puts(&b, "/");
        hd_buf_puts(&b, e->archpath);
    }
    return hd_buf_steal(&b, NULL);
}

static void respond(struct hd_req *r, struct hd_batch *b, hd_batch_resolve_fn resolve,
                    const struct hd_batch_groups *gops, void *ctx, void (*ctx_free)(void *ctx),
                    hd_batch_meta_fn meta)
{
    struct run *u;
    pthread_t th;
    pthread_attr_t at;
    size_t i;
    int rc;

    if (atomic_fetch_add(&nbatches, 1) >= MAX_BATCHES) {
        atomic_fetch_sub(&nbatches, 1);
        hd_batch_free(b);
        if (ctx_free)
            ctx_free(ctx);
        hd_resp_err_msg(r, HD_EUNAVAIL, "Too many batch requests in flight; retry shortly.");
        return;
    }
    u = calloc(1, sizeof(*u));
    if (!u) {
        atomic_fetch_sub(&nbatches, 1);
        hd_batch_free(b);
        if (ctx_free)
            ctx_free(ctx);
        hd_resp_err(r, -ENOMEM);
        return;
    }
    u->magic = BATCH_MAGIC;
    pthread_mutex_init(&u->mu, NULL);
    pthread_cond_init(&u->cv, NULL);
    u->refs = 1; /* the request's */
    u->r = r;
    u->b = b;
    u->resolve = resolve;
    u->gops = gops;
    u->ctx = ctx;
    u->ctx_free = ctx_free;
    snprintf(u->reqid, sizeof(u->reqid), "%s", r->id);
    u->meta = meta;
    hd_buf_init(&u->tar);
    rc = hd_ring_init(&u->ring, HD_BATCH_RING, HD_BATCH_RING); /* no growing: copies */
    if (rc == 0 && meta) {
        u->sizes = calloc(b->n, sizeof(*u->sizes));
        u->errs = calloc(b->n, sizeof(*u->errs));
        if (!u->sizes || !u->errs)
            rc = -ENOMEM;
    }
    u->names = calloc(b->n, sizeof(*u->names));
    for (i = 0; rc == 0 && u->names && i < b->n; i++)
        if (!(u->names[i] = out_name(&b->e[i])))
            rc = -ENOMEM;
    if (rc < 0 || !u->names) {
        run_unref(u);
        hd_resp_err(r, -ENOMEM);
        return;
    }
    r->data = u;
    r->on_end = batch_end;
    r->on_done = batch_done;
    u->refs++; /* the thread's */
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&th, &at, run_main, u);
    pthread_attr_destroy(&at);
    if (rc != 0) {
        u->refs--;
        hd_resp_err_msg(r, HD_EUNAVAIL, "Cannot start the batch; retry shortly.");
        return; /* batch_done drops the request's reference */
    }
    batch_end(r);
}

void hd_batch_respond(struct hd_req *r, struct hd_batch *b, hd_batch_resolve_fn resolve, void *ctx,
                      void (*ctx_free)(void *ctx))
{
    respond(r, b, resolve, NULL, ctx, ctx_free, NULL);
}

void hd_batch_respond_groups(struct hd_req *r, struct hd_batch *b, hd_batch_resolve_fn resolve,
                             const struct hd_batch_groups *gops, void *ctx,
                             void (*ctx_free)(void *ctx))
{
    respond(r, b, resolve, gops, ctx, ctx_free, NULL);
}

void hd_batch_respond_multipart(struct hd_req *r, struct hd_batch *b, hd_batch_resolve_fn resolve,
                                const struct hd_batch_groups *gops, void *ctx,
                                void (*ctx_free)(void *ctx), hd_batch_meta_fn meta)
{
    respond(r, b, resolve, gops, ctx, ctx_free, meta);
}
