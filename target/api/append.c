/* append: AIStore's appends (Object.append_content(), ObjectWriter.as_file()):
 *
 *   PUT /v1/objects/B/O?append_type=append&append_handle=H   body: bytes to add
 *       -> 200, ais-append-handle: H (a new one when H is empty)
 *   PUT /v1/objects/B/O?append_type=flush&append_handle=H    body: more bytes, or none
 *       -> 200: the object is now what it was before the first append plus every append
 *
 * A handle is an open put session (target/store: a temp file, its MD5 running) kept here
 * between requests: the first append copies the object's current content into it (none when
 * it does not exist), each append writes its body, flush commits it as the object (fsync,
 * rename, catalog) like any PUT; nobody sees the object change before the flush. Handles are
 * 128 random bits, bound to their bucket and object, and live in this process only: one idle
 * for APPEND_IDLE_S, or any after a restart, is gone (404), its temp file removed. The work
 * runs on the target's pool (copying an existing object, fsyncs), never on an HTTP worker. */
#include "target/api/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/log.h"
#include "target/store/int.h"

#define APPEND_BODY_MAX ((size_t)64 << 20) /* one append's body (the SDK's write() buffer) */
#define APPEND_IDLE_S 600
#define APPEND_MAX 128 /* open handles per target (each holds a 256 KiB write buffer) */

struct asess {
    char handle[33];
    char *bucket, *key;
    struct hd_put *put;
    time_t last;
    int busy; /* a request is using it */
    struct asess *next;
};

static pthread_mutex_t amu = PTHREAD_MUTEX_INITIALIZER;
static struct asess *sessions;
static size_t nsessions;

static void asess_free(struct asess *s)
{
    if (!s)
        return;
    hd_put_free(s->put); /* removes the temp file unless committed */
    free(s->bucket);
    free(s->key);
    free(s);
}

/* Unlinks the idle ones past their time (amu held); the caller frees them. */
static struct asess *expire_locked(time_t now)
{
    struct asess **pp = &sessions, *s, *gone = NULL;

    while ((s = *pp)) {
        if (!s->busy && now - s->last > APPEND_IDLE_S) {
            *pp = s->next;
            s->next = gone;
            gone = s;
            nsessions--;
        } else {
            pp = &s->next;
        }
    }
    return gone;
}

static void free_list(struct asess *s)
{
    while (s) {
        struct asess *n = s->next;
        HD_LOG(HD_INFO, NULL, "append handle for %s/%s expired unflushed", s->bucket, s->key);
        asess_free(s);
        s = n;
    }
}

/* The session of handle h for bucket/key, marked busy; NULL when there is none (or it is
 * another object's), HD_ECONFLICT in *rc when another request is using it. */
static struct asess *take(const char *h, const char *bucket, const char *key, int *rc)
{
    struct asess *s, *gone;

    pthread_mutex_lock(&amu);
    gone = expire_locked(time(NULL));
    for (s = sessions; s; s = s->next)
        if (strcmp(s->handle, h) == 0 && strcmp(s->bucket, bucket) == 0 && strcmp(s->key, key) == 0)
            break;
    *rc = s ? 0 : HD_ENOSUCHKEY;
    if (s && s->busy) {
        *rc = HD_ECONFLICT;
        s = NULL;
    } else if (s) {
        s->busy = 1;
    }
    pthread_mutex_unlock(&amu);
    free_list(gone);
    return s;
}

static void give_back(struct asess *s)
{
    pthread_mutex_lock(&amu);
    s->busy = 0;
    s->last = time(NULL);
    pthread_mutex_unlock(&amu);
}

/* Removes s (busy, ours) from the table. */
static void drop(struct asess *s)
{
    struct asess **pp;

    pthread_mutex_lock(&amu);
    for (pp = &sessions; *pp && *pp != s; pp = &(*pp)->next)
        ;
    if (*pp) {
        *pp = s->next;
        nsessions--;
    }
    pthread_mutex_unlock(&amu);
    asess_free(s);
}

/* One append or flush, read and then run on the pool. */
struct acall_ctx {
    struct hd_target *t;
    char *bucket, *key;
    char handle[33];
    int flush, gfn;
    int64_t rterm, rversion;
    char *body;
    size_t len;
    struct asess *s; /* the run's: taken, or made */
    char msg[400];
};

static void actx_free(void *arg)
{
    struct acall_ctx *c = arg;

    free(c->bucket);
    free(c->key);
    free(c->body);
    free(c);
}

/* A new session with the object's current content (none when it does not exist). */
static int open_session(struct acall_ctx *c)
{
    struct hd_obj_meta m;
    struct asess *s = calloc(1, sizeof(*s));
    char buf[65536];
    uint64_t off = 0;
    int fd = -1, rc;

    if (!s || !(s->bucket = strdup(c->bucket)) || !(s->key = strdup(c->key))) {
        asess_free(s);
        return -ENOMEM;
    }
    if ((rc = hd_store_random_hex(s->handle, 16)) < 0 ||
        (rc = hd_put_begin(c->t->st, c->bucket, c->key, &s->put)) < 0) {
        asess_free(s);
        return rc;
    }
    rc = hd_store_open_object(c->t->st, c->bucket, c->key, &m, &fd);
    if (rc == HD_ENOSUCHKEY && c->gfn &&
        hd_rebalance_gfn(c->t->rb, c->rterm, c->rversion, c->bucket, c->key) == 0)
        rc = hd_store_open_object(c->t->st, c->bucket, c->key, &m, &fd);
    if (rc == 0) {
        while (rc == 0 && off < m.size) {
            ssize_t n = pread(fd, buf, sizeof(buf), (off_t)off);
            if (n <= 0)
                rc = n < 0 ? -errno : -EIO;
            else if ((rc = hd_put_write(s->put, buf, (size_t)n)) == 0)
                off += (uint64_t)n;
        }
        close(fd);
        hd_obj_meta_cleanup(&m);
    } else if (rc == HD_ENOSUCHKEY) {
        rc = 0; /* a new object */
    }
    if (rc < 0) {
        asess_free(s);
        return rc;
    }
    s->busy = 1;
    s->last = time(NULL);
    pthread_mutex_lock(&amu);
    if (nsessions >= APPEND_MAX) {
        rc = HD_EUNAVAIL;
    } else {
        s->next = sessions;
        sessions = s;
        nsessions++;
    }
    pthread_mutex_unlock(&amu);
    if (rc < 0) {
        snprintf(c->msg, sizeof(c->msg),
                 "Too many open append handles on this target (%d): flush some first.", APPEND_MAX);
        asess_free(s);
        return rc;
    }
    c->s = s;
    return 0;
}

static void append_run(struct hd_acall *a)
{
    struct acall_ctx *c = a->arg;
    struct hd_put_attrs at;
    struct hd_obj_meta m;
    int rc = 0;

    if (!*c->handle)
        rc = open_session(c);
    else if (!(c->s = take(c->handle, c->bucket, c->key, &rc)) && rc == HD_ENOSUCHKEY)
        snprintf(c->msg, sizeof(c->msg),
                 "No append handle %.32s for %.64s/%.96s here (flushed, idle for over %d s, "
                 "or the target restarted): append again without a handle.",
                 c->handle, c->bucket, c->key, APPEND_IDLE_S);
    else if (rc == HD_ECONFLICT)
        snprintf(c->msg, sizeof(c->msg), "Another request is using this append handle.");
    if (rc == 0 && c->len) {
        if (c->t->max_object && hd_put_size(c->s->put) + c->len > c->t->max_object)
            rc = HD_ETOOLARGE;
        else
            rc = hd_put_write(c->s->put, c->body, c->len);
    }
    if (rc == 0 && c->flush) {
        memset(&at, 0, sizeof(at));
        at.ctype = "application/octet-stream";
        if ((rc = hd_put_commit(c->s->put, &at, &m)) == 0) {
            hd_obj_meta_cleanup(&m);
            if (c->gfn) /* older copies elsewhere must not come back when objects move */
                hd_rebalance_delete_elsewhere(c->t->rb, c->bucket, c->key);
        }
    }
    if (c->s && (c->flush || rc < 0)) { /* done with it (a failed write leaves no handle) */
        if (!c->flush || rc == 0)
            HD_LOG(HD_DEBUG, a->rid, "append %s/%s: %s", c->bucket, c->key,
                   rc == 0 ? "flushed" : hd_strerror(rc));
        snprintf(c->handle, sizeof(c->handle), "%s", c->s->handle);
        drop(c->s);
        c->s = NULL;
    } else if (c->s) {
        snprintf(c->handle, sizeof(c->handle), "%s", c->s->handle);
        give_back(c->s);
        c->s = NULL;
    }
    a->rc = rc;
}

static void append_done(struct hd_req *r, struct hd_acall *a)
{
    struct acall_ctx *c = a->arg;

    if (a->rc < 0) {
        hd_resp_err_msg(r, a->rc, c->msg[0] ? c->msg : NULL);
        return;
    }
    hd_resp_header(r, "ais-append-handle", c->flush ? "" : c->handle);
    hd_resp_empty(r, 200);
}

/* The body reader's context: the call, until handed to the pool. */
struct abody {
    struct acall_ctx *c;
};

static void abody_free(void *arg)
{
    struct abody *b = arg;

    if (b->c)
        actx_free(b->c);
    free(b);
}

static void append_body(struct hd_req *r, void *ctx, const char *body, size_t len)
{
    struct abody *b = ctx;
    struct acall_ctx *c = b->c;

    if (len && !(c->body = malloc(len))) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    if (len)
        memcpy(c->body, body, len);
    c->len = len;
    b->c = NULL; /* handed on: the pool call owns c now */
    hd_acall_request(r, c->t->pool, append_run, append_done, c, actx_free);
    if (!r->responded && r->on_end)
        r->on_end(r); /* park (or answer) now */
}

void hd_target_append(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key)
{
    const char *type = hd_req_param(r, "append_type");
    const char *h = hd_req_param(r, "append_handle");
    struct hd_cbucket *cb;
    struct acall_ctx *c;
    struct abody *b;
    int rc;

    if (!type || (strcmp(type, "append") != 0 && strcmp(type, "flush") != 0)) {
        hd_resp_err_msg(r, HD_EBADARG, "append_type must be append or flush.");
        return;
    }
    if (strcmp(type, "flush") == 0 && (!h || !*h)) {
        hd_resp_err_msg(r, HD_EBADARG, "A flush needs the append_handle of the appends.");
        return;
    }
    if (h && *h && (strlen(h) != 32 || strspn(h, "0123456789abcdef") != 32)) {
        hd_resp_err_msg(r, HD_EBADARG, "append_handle is not a handle this target gave.");
        return;
    }
    if ((rc = hd_store_bucket_exists(t->st, bucket)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    if ((cb = hd_cache_bucket(t->cache, bucket))) {
        hd_cbucket_unref(cb);
        hd_resp_err_msg(r, HD_ENOTIMPL,
                        "Appends are not supported in S3-backed buckets: PUT the whole object.");
        return;
    }
    if (r->content_length > (int64_t)APPEND_BODY_MAX) {
        hd_resp_err_msg(r, HD_ETOOLARGE, "One append may carry at most 64 MiB.");
        return;
    }
    if (!(c = calloc(1, sizeof(*c))) || !(c->bucket = strdup(bucket)) || !(c->key = strdup(key))) {
        if (c)
            actx_free(c);
        hd_resp_err(r, -ENOMEM);
        return;
    }
    c->t = t;
    c->flush = strcmp(type, "flush") == 0;
    snprintf(c->handle, sizeof(c->handle), "%s", h ? h : "");
    c->rterm = r->routed_term;
    c->rversion = r->routed_version;
    c->gfn = hd_rebalance_may_gfn(t->rb, r, bucket, key);
    if (!(b = calloc(1, sizeof(*b)))) {
        actx_free(c);
        hd_resp_err(r, -ENOMEM);
        return;
    }
    b->c = c;
    hd_req_read_body(r, APPEND_BODY_MAX, append_body, b, abody_free);
}
