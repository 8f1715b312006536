/* rebalance: moves every object to the target and mountpath HRW names for the current
 * cluster map, and finds objects that have not moved yet (get-from-neighbour, GFN).
 *
 * The job (kind "rebalance", started on every target by the primary proxy when the set of
 * targets changes) walks each bucket on each mountpath in name order. An object whose owner
 * is another target is sent there with a node-signed PUT carrying its identity
 * (X-Hoard-Obj-Meta: etag, mtime, checksum, metadata); the receiver keeps a copy at least as
 * new if it has one, so a client's write during rebalance is never undone. The local copy is
 * deleted only after the owner answered and only if nothing overwrote it meanwhile. An
 * object on the wrong local mountpath is copied to the right one the same way. Nothing is
 * deleted before its new home has committed it, so a kill at any point loses nothing: the
 * job is recorded in jobs.db and runs again after a restart (moving what is left).
 *
 * GFN: while a rebalance is in progress (smap rebalance_id) or a target is in maintenance or
 * decommissioning, a GET that misses asks the other targets (X-Hoard-Local: no further
 * hops) and stores the first copy found, so reads keep working while objects move. Only the
 * HRW owner does that (a stale-routed GET at a non-owner must not plant a copy that a later
 * delete at the owner would miss).
 *
 * Deletes while objects move: the owner deletes its copy, every other target's copy
 * (X-Hoard-Local DELETE), and remembers the delete (a tombstone, in memory until the cluster
 * stops moving), so neither GFN nor a rebalance copy still in flight brings the object back:
 * a moved copy older than the tombstone is refused with 412 like any older copy. */
#include "target/cluster/rebalance.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <xxhash.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/hrw.h"
#include "common/httpc.h"
#include "common/httputil.h"
#include "common/log.h"
#include "common/nodeauth.h"
#include "common/smap.h"
#include "common/tls.h"
#include "target/cluster/peer.h"
#include "target/jobs/jobs.h"
#include "target/object/object.h"

#define SCAN_BATCH 256
#define XFER_TIMEOUT_S 600

#define TOMB_SLOTS 4096
#define TOMB_MAX 1000000

struct tomb {
    struct tomb *next;
    int64_t when_ms;
    char name[]; /* bucket "\n" key */
};

struct hd_rb {
    struct hd_tcluster *cl;
    struct hd_store *st;
    pthread_mutex_t mu; /* the tombstones */
    struct tomb *slot[TOMB_SLOTS];
    size_t n;
};

/* ---- node-signed calls ---- */

static size_t read_fd(char *buf, size_t size, size_t n, void *arg)
{
    int fd = *(int *)arg;
    ssize_t got;

    do
        got = read(fd, buf, size * n);
    while (got < 0 && errno == EINTR);
    return got < 0 ? CURL_READFUNC_ABORT : (size_t)got;
}

static size_t discard(char *p, size_t size, size_t n, void *arg)
{
    return size * n;
}

int hd_rb_send_object(CURL *cu, struct hd_tcluster *cl, const char *owner_url, const char *bucket,
                      const char *key, const struct hd_obj_meta *m, int fd, int dirty, char *msg,
                      size_t msglen)
{
    struct curl_slist *h = NULL;
    struct hd_buf url, line;
    char *xm = hd_obj_meta_json(m), sha[65];
    long status = 0;
    CURLcode cc;
    int rc = 0;

    hd_buf_init(&url);
    hd_buf_init(&line);
    if (!xm || hd_peer_object_path(&url, owner_url, bucket, key) < 0) {
        rc = -ENOMEM;
        goto out;
    }
    /* the body is signed too (one more read of the file, from the page cache as a rule):
     * the owner commits it only if it matches */
    if ((rc = hd_nodeauth_sha256_fd(fd, 0, m->size, sha)) < 0) {
        snprintf(msg, msglen, "%s/%s: reading it: %s", bucket, key, hd_strerror(rc));
        goto out;
    }
    hd_buf_printf(&line, "X-Hoard-Obj-Meta: %s", xm);
    h = curl_slist_append(h, line.data);
    if (dirty) /* write-back: the new owner queues its upload (and only it uploads it) */
        h = curl_slist_append(h, "X-Hoard-Dirty: 1");
    h = curl_slist_append(h, "Expect:");
    h = curl_slist_append(h, "Content-Type: application/octet-stream");
    if (line.oom || !h || !(h = hd_peer_sign_curl(h, cl, "PUT", url.data, sha))) {
        rc = -ENOMEM;
        goto out;
    }
    curl_easy_reset(cu);
    curl_easy_setopt(cu, CURLOPT_URL, url.data);
    curl_easy_setopt(cu, CURLOPT_PATH_AS_IS, 1L); /* a key "a/../b" is that key, signed so */
    hd_tls_curl(cu);
    curl_easy_setopt(cu, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(cu, CURLOPT_INFILESIZE_LARGE, (curl_off_t)m->size);
    curl_easy_setopt(cu, CURLOPT_READFUNCTION, read_fd);
    curl_easy_setopt(cu, CURLOPT_READDATA, &fd);
    curl_easy_setopt(cu, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(cu, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(cu, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(cu, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
    curl_easy_setopt(cu, CURLOPT_TIMEOUT, (long)XFER_TIMEOUT_S);
    cc = curl_easy_perform(cu);
    if (cc != CURLE_OK) {
        snprintf(msg, msglen, "%s/%s -> %s: %s", bucket, key, owner_url, curl_easy_strerror(cc));
        rc = HD_EUNAVAIL;
        goto out;
    }
    curl_easy_getinfo(cu, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200 && status != 412) { /* 412: the owner holds a newer copy */
        snprintf(msg, msglen, "%s/%s -> %s: HTTP %ld", bucket, key, owner_url, status);
        rc = HD_EINTERNAL;
    }
out:
    curl_slist_free_all(h);
    hd_buf_cleanup(&url);
    hd_buf_cleanup(&line);
    free(xm);
    return rc;
}

int hd_rb_put_local(struct hd_store *st, const char *bucket, const char *key,
                    const struct hd_obj_meta *m, int fd, int dirty)
{
    struct hd_put_attrs a;
    struct hd_put *p = NULL;
    json_t *hold = NULL;
    char *xm = hd_obj_meta_json(m), buf[256 * 1024];
    ssize_t n;
    int rc;

    if (!xm)
        return -ENOMEM;
    if ((rc = hd_obj_meta_attrs(xm, &a, &hold)) < 0 || (rc = hd_put_begin(st, bucket, key, &p)) < 0)
        goto out;
    a.writeback = dirty;
    while ((n = read(fd, buf, sizeof(buf))) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            goto out;
        }
        if ((rc = hd_put_write(p, buf, (size_t)n)) < 0)
            goto out;
    }
    if (hd_put_size(p) != m->size) {
        rc = -EIO;
        goto out;
    }
    rc = hd_put_commit(p, &a, NULL);
    if (rc == HD_EPRECONDITION)
        rc = 0; /* a newer copy is already in place */
out:
    hd_put_free(p);
    json_decref(hold);
    free(xm);
    return rc;
}

/* ---- tombstones ---- */

static int rebalance_run(struct hd_job *j, void *ctx);

int hd_rb_new(struct hd_tcluster *cl, struct hd_jobs *js, struct hd_rb **out)
{
    struct hd_rb *rb = calloc(1, sizeof(*rb));
    int rc;

    if (!rb)
        return -ENOMEM;
    rb->cl = cl;
    rb->st = hd_tcluster_store(cl);
    pthread_mutex_init(&rb->mu, NULL);
    if ((rc = hd_jobs_register(js, "rebalance", rebalance_run, rb,
                               HD_JOB_RESUMABLE | HD_JOB_EXCLUSIVE)) < 0) {
        hd_rb_free(rb);
        return rc;
    }
    *out = rb;
    return 0;
}

static void tombs_clear(struct hd_rb *rb)
{
    size_t i;

    for (i = 0; i < TOMB_SLOTS; i++)
        while (rb->slot[i]) {
            struct tomb *x = rb->slot[i];
            rb->slot[i] = x->next;
            free(x);
        }
    rb->n = 0;
}

void hd_rb_free(struct hd_rb *rb)
{
    if (!rb)
        return;
    tombs_clear(rb);
    pthread_mutex_destroy(&rb->mu);
    free(rb);
}

static size_t tomb_slot(const char *bucket, const char *key)
{
    uint64_t h = XXH64(bucket, strlen(bucket), 1) ^ XXH64(key, strlen(key), 2);

    return (size_t)(h % TOMB_SLOTS);
}

static struct tomb **tomb_find(struct hd_rb *rb, const char *bucket, const char *key)
{
    struct tomb **pp = &rb->slot[tomb_slot(bucket, key)];
    size_t bl = strlen(bucket);

    for (; *pp; pp = &(*pp)->next)
        if (strncmp((*pp)->name, bucket, bl) == 0 && (*pp)->name[bl] == '\n' &&
            strcmp((*pp)->name + bl + 1, key) == 0)
            return pp;
    return pp;
}

static void tomb_note(struct hd_rb *rb, const char *bucket, const char *key)
{
    struct tomb **pp, *x;
    int64_t now;
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts); /* object mtimes are wall-clock milliseconds */
    now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;

    pthread_mutex_lock(&rb->mu);
    pp = tomb_find(rb, bucket, key);
    if (*pp) {
        (*pp)->when_ms = now;
    } else if (rb->n < TOMB_MAX && (x = malloc(sizeof(*x) + strlen(bucket) + strlen(key) + 2))) {
        x->next = NULL;
        x->when_ms = now;
        snprintf(x->name, strlen(bucket) + strlen(key) + 2, "%s\n%s", bucket, key);
        *pp = x;
        rb->n++;
    } else {
        HD_LOG(HD_WARN, NULL, "rebalance: no room to remember the delete of %s/%s", bucket, key);
    }
    pthread_mutex_unlock(&rb->mu);
}

int hd_rebalance_deleted_since(struct hd_rb *rb, const char *bucket, const char *key,
                               int64_t mtime_ms)
{
    struct tomb **pp;
    int yes;

    if (!rb)
        return 0;
    pthread_mutex_lock(&rb->mu);
    pp = rb->n ? tomb_find(rb, bucket, key) : NULL;
    yes = pp && *pp && (*pp)->when_ms >= mtime_ms;
    pthread_mutex_unlock(&rb->mu);
    return yes;
}

/* Whether objects may sit away from their HRW owner right now. */
static int moving(const struct hd_smap *s)
{
    size_t i;

    if (s->rebalance[0])
        return 1;
    for (i = 0; i < s->n; i++)
        if (s->nodes[i].type == HD_NODE_TARGET && s->nodes[i].flags)
            return 1;
    return 0;
}

/* The smap if objects may be away from their owners now (a new reference), else NULL; a
 * still cluster also forgets its tombstones. */
static struct hd_smap *moving_smap(struct hd_rb *rb)
{
    struct hd_smap *s = hd_tcluster_smap(rb->cl);

    if (s && moving(s))
        return s;
    hd_smap_unref(s);
    pthread_mutex_lock(&rb->mu);
    if (rb->n)
        tombs_clear(rb);
    pthread_mutex_unlock(&rb->mu);
    return NULL;
}

/* 1 when this target is the HRW owner of bucket/key in s. */
static int self_owns(struct hd_rb *rb, const struct hd_smap *s, const char *bucket, const char *key)
{
    const struct hd_node *owner = NULL;
    struct hd_bucket_info bi;
    struct hd_buf u;

    if (hd_store_bucket_get(rb->st, bucket, &bi) < 0)
        return 0;
    hd_buf_init(&u);
    hd_hrw_uname(&u, hd_hrw_provider(bi.provider), NULL, bucket, key);
    if (!u.oom)
        hd_smap_owner(s, u.data, u.len, &owner);
    hd_buf_cleanup(&u);
    return owner && strcmp(owner->id, hd_tcluster_id(rb->cl)) == 0;
}

int hd_rebalance_delete_elsewhere(struct hd_rb *rb, const char *bucket, const char *key)
{
    struct hd_smap *s = moving_smap(rb);
    struct hd_httpc_call *calls = NULL;
    struct hd_buf *urls = NULL;
    struct hd_kv *kv = NULL;
    const char *self = hd_tcluster_id(rb->cl);
    size_t i, n = 0;
    int found = 0;

    if (!s)
        return 0;
    tomb_note(rb, bucket, key);
    calls = calloc(s->n, sizeof(*calls));
    urls = calloc(s->n, sizeof(*urls));
    kv = calloc(s->n, sizeof(*kv));
    if (!calls || !urls || !kv)
        goto out;
    for (i = 0; i < s->n; i++) {
        const struct hd_node *nd = &s->nodes[i];
        if (nd->type != HD_NODE_TARGET || nd->down || strcmp(nd->id, self) == 0)
            continue;
        hd_buf_init(&urls[n]);
        if (hd_peer_object_path(&urls[n], nd->url, bucket, key) < 0)
            goto out;
        kv[n] = (struct hd_kv){"X-Hoard-Local", "1"};
        hd_httpc_call_init(&calls[n], "DELETE", urls[n].data);
        calls[n].hdrs = &kv[n];
        calls[n].nhdrs = 1;
        calls[n].na = hd_tcluster_nodeauth(rb->cl);
        snprintf(calls[n].to, sizeof(calls[n].to), "%s", nd->id);
        n++;
    }
    hd_httpc_run_all(calls, n, 0);
    for (i = 0; i < n; i++) {
        if (calls[i].rc == 0 && calls[i].status == 204)
            found++;
        else if (calls[i].rc < 0 || calls[i].status != 404)
            HD_LOG(HD_WARN, NULL, "rebalance: deleting %s/%s at %s: %s", bucket, key, calls[i].url,
                   calls[i].rc < 0 ? calls[i].err : "unexpected status");
    }
out:
    for (i = 0; calls && i < n; i++)
        hd_httpc_call_cleanup(&calls[i]);
    for (i = 0; urls && i < n; i++)
        hd_buf_cleanup(&urls[i]);
    free(calls);
    free(urls);
    free(kv);
    hd_smap_unref(s);
    return found;
}

/* ---- the job ---- */

static struct hd_smap *wait_smap(struct hd_job *j)
{
    struct hd_rb *rb = j->ctx;
    struct hd_smap *s;

    while (!(s = hd_tcluster_smap(rb->cl)) && !hd_job_stopped(j)) {
        struct timespec ts = {0, 200 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return s;
}

#define RETRY_PASSES 3
#define RETRY_MAX 10000 /* failed objects remembered for another try */

struct retry {
    char *bucket, *name;
    size_t bi, mpi;
};

struct walk {
    struct hd_job *j;
    struct hd_rb *rb;
    CURL *cu;
    uint64_t moved, moved_bytes, local_moves;
    struct retry *retry; /* objects whose move failed in this pass */
    size_t nretry;
    int last_pass; /* failures are errors now, not retries */
};

static void failed(struct walk *w, size_t bi, size_t mpi, const char *bucket, const char *name,
                   const char *msg)
{
    struct retry *nr;

    if (!w->last_pass && w->nretry < RETRY_MAX &&
        (nr = realloc(w->retry, (w->nretry + 1) * sizeof(*nr)))) {
        w->retry = nr;
        nr[w->nretry].bucket = strdup(bucket);
        nr[w->nretry].name = strdup(name);
        nr[w->nretry].bi = bi;
        nr[w->nretry].mpi = mpi;
        if (nr[w->nretry].bucket && nr[w->nretry].name) {
            w->nretry++;
            return;
        }
        free(nr[w->nretry].bucket);
        free(nr[w->nretry].name);
    }
    hd_job_error(w->j, "%s", msg);
}

/* One object on mountpath mpi. Progress counts it once, in the first pass. */
static void one(struct walk *w, struct hd_smap *s, const struct hd_bucket_info *bi, size_t bix,
                size_t mpi, const char *name, int count)
{
    struct hd_rb *rb = w->rb;
    const struct hd_node *owner = NULL;
    struct hd_obj_meta m;
    struct hd_buf u;
    char msg[512];
    int fd = -1, rc, remote, dirty;

    hd_buf_init(&u);
    hd_hrw_uname(&u, hd_hrw_provider(bi->provider), NULL, bi->name, name);
    rc = u.oom ? -ENOMEM : hd_smap_owner(s, u.data, u.len, &owner);
    hd_buf_cleanup(&u);
    if (!owner) {
        hd_job_add(w->j, count, 0);
        return; /* no eligible target at all: stay */
    }
    remote = strcmp(owner->id, hd_tcluster_id(rb->cl)) != 0;
    if (!remote && hd_store_mp_index(rb->st, bi->name, name) == mpi) {
        hd_job_add(w->j, count, 0);
        return; /* home already */
    }
    if (remote && rc < 0) { /* its return starts another rebalance */
        hd_job_error(w->j, "%s/%s: owner %s is down; kept here", bi->name, name, owner->id);
        hd_job_add(w->j, count, 0);
        return;
    }
    if (hd_store_lookup_mp(rb->st, mpi, bi->name, name, &m) < 0) {
        hd_job_add(w->j, count, 0);
        return; /* deleted meanwhile */
    }
    fd = open(m.path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        hd_job_add(w->j, count, 0); /* replaced meanwhile: the new copy is scanned later */
        hd_obj_meta_cleanup(&m);
        return;
    }
    dirty = hd_store_wb_dirty(rb->st, mpi, bi->name, name) > 0;
    if (remote)
        rc = hd_rb_send_object(w->cu, rb->cl, owner->url, bi->name, name, &m, fd, dirty, msg,
                               sizeof(msg));
    else if ((rc = hd_rb_put_local(rb->st, bi->name, name, &m, fd, dirty)) < 0)
        snprintf(msg, sizeof(msg), "%s/%s: moving to its mountpath: %s", bi->name, name,
                 hd_strerror(rc));
    close(fd);
    if (rc < 0) {
        failed(w, bix, mpi, bi->name, name, msg);
    } else {
        rc = dirty ? hd_store_delete_moved(rb->st, mpi, bi->name, name, m.etag, m.mtime_ms)
                   : hd_store_delete_if(rb->st, mpi, bi->name, name, m.etag, m.mtime_ms);
        if (rc == 0 || rc == HD_EPRECONDITION) { /* HD_EPRECONDITION: overwritten here */
            if (remote)
                w->moved++;
            else
                w->local_moves++;
            w->moved_bytes += m.size;
            hd_job_set_extra(w->j, "moved_objects", w->moved);
            hd_job_set_extra(w->j, "moved_local", w->local_moves);
        }
    }
    hd_job_add(w->j, count, rc == 0 ? m.size : 0);
    hd_obj_meta_cleanup(&m);
}

static void retry_free(struct retry *v, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        free(v[i].bucket);
        free(v[i].name);
    }
    free(v);
}

/* Sleeps ms unless the job is stopped first; 0 or -ECANCELED. */
static int nap(struct hd_job *j, long ms)
{
    struct timespec ts = {0, 50 * 1000000L};

    for (; ms > 0; ms -= 50) {
        if (hd_job_stopped(j))
            return -ECANCELED;
        nanosleep(&ts, NULL);
    }
    return hd_job_stopped(j) ? -ECANCELED : 0;
}

/* Waits until this target has joined and holds the map the job was started for: its id,
 * "rebalance-v<N>", names the smap version that carries the mark. A map at or past N with
 * another mark (or none) means the job is superseded. 0 to go on, -ECANCELED otherwise. */
static int wait_own_map(struct hd_job *j)
{
    struct hd_rb *rb = j->ctx;
    const char *v = strncmp(j->id, "rebalance-v", 11) == 0 ? j->id + 11 : NULL;
    long long want = v ? strtoll(v, NULL, 10) : 0;

    for (;;) {
        struct hd_smap *s = hd_tcluster_wait_joined(rb->cl, 200) ? hd_tcluster_smap(rb->cl) : NULL;
        if (s && s->version >= want) {
            int mine = want == 0 || strcmp(s->rebalance, j->id) == 0;
            if (!mine)
                hd_job_error(j, "superseded: the cluster map (v%lld) is marked '%s'",
                             (long long)s->version, s->rebalance);
            hd_smap_unref(s);
            return mine ? 0 : -ECANCELED;
        }
        hd_smap_unref(s);
        if (nap(j, 200) < 0)
            return -ECANCELED;
    }
}

static int rebalance_run(struct hd_job *j, void *ctx)
{
    struct hd_rb *rb = ctx;
    struct walk w = {j, rb, NULL, 0, 0, 0, NULL, 0, 0};
    struct hd_bucket_info *bl = NULL;
    size_t nb = 0, bi, mpi, i;
    int rc = 0, pass;

    if ((rc = wait_own_map(j)) < 0)
        return rc;
    if (!(w.cu = curl_easy_init()))
        return -ENOMEM;
    if ((rc = hd_store_bucket_list(w.rb->st, &bl, &nb)) < 0)
        goto out;
    hd_job_set_total(j, hd_store_count(w.rb->st), 0);
    for (bi = 0; bi < nb && rc == 0; bi++) {
        for (mpi = 0; mpi < hd_store_nmp(w.rb->st) && rc == 0; mpi++) {
            char *after = strdup("");
            for (;;) {
                char **names = NULL;
                size_t n = 0;
                struct hd_smap *s = wait_smap(j); /* the newest map for every batch */
                if (!s || hd_job_stopped(j)) {
                    hd_smap_unref(s);
                    rc = -ECANCELED;
                    break;
                }
                rc = after
                         ? hd_store_scan(w.rb->st, mpi, bl[bi].name, after, SCAN_BATCH, &names, &n)
                         : -ENOMEM;
                for (i = 0; rc == 0 && i < n && !hd_job_stopped(j); i++)
                    one(&w, s, &bl[bi], bi, mpi, names[i], 1);
                hd_smap_unref(s);
                if (rc == 0 && hd_job_stopped(j))
                    rc = -ECANCELED;
                if (rc < 0 || n < SCAN_BATCH) {
                    hd_store_names_free(names, n);
                    break;
                }
                free(after);
                after = names[n - 1];
                names[n - 1] = NULL;
                hd_store_names_free(names, n);
            }
            free(after);
        }
    }
    /* what failed (an owner busy or restarting) gets more tries, with a pause between */
    for (pass = 1; rc == 0 && w.nretry && pass <= RETRY_PASSES; pass++) {
        struct retry *todo = w.retry;
        size_t ntodo = w.nretry;
        struct hd_smap *s;
        w.retry = NULL;
        w.nretry = 0;
        w.last_pass = pass == RETRY_PASSES;
        HD_LOG(HD_INFO, NULL, "rebalance %s: retrying %zu object(s) (pass %d)", j->id, ntodo, pass);
        if ((rc = nap(j, 1000L << (2 * (pass - 1)))) == 0 && (s = wait_smap(j))) {
            for (i = 0; i < ntodo && !hd_job_stopped(j); i++)
                one(&w, s, &bl[todo[i].bi], todo[i].bi, todo[i].mpi, todo[i].name, 0);
            hd_smap_unref(s);
            if (hd_job_stopped(j))
                rc = -ECANCELED;
        }
        retry_free(todo, ntodo);
    }
out:
    retry_free(w.retry, w.nretry);
    free(bl);
    curl_easy_cleanup(w.cu);
    return rc;
}

/* ---- get from neighbour ---- */

static int gfn_from(struct hd_rb *rb, const struct hd_node *n, const char *bucket, const char *key)
{
    struct hd_put_attrs a;
    struct hd_put *p = NULL;
    json_t *hold = NULL;
    char *xmeta = NULL;
    int rc;

    if ((rc = hd_put_begin(rb->st, bucket, key, &p)) < 0)
        return rc;
    if ((rc = hd_peer_get_into(rb->cl, n->url, bucket, key, 1, NULL, p, &xmeta)) < 0)
        goto out;
    if ((rc = hd_obj_meta_attrs(xmeta, &a, &hold)) < 0)
        goto out;
    rc = hd_put_commit(p, &a, NULL);
    if (rc == HD_EPRECONDITION)
        rc = 0; /* written here meanwhile: that copy is newer */
    if (rc == 0)
        HD_LOG(HD_INFO, NULL, "rebalance: %s/%s fetched from %s", bucket, key, n->id);
out:
    hd_put_free(p);
    json_decref(hold);
    free(xmeta);
    return rc;
}

/* Whether our map is older than (term, version), the one a request was routed by. */
static int map_behind(struct hd_rb *rb, int64_t term, int64_t version)
{
    struct hd_smap *s;
    int behind;

    if (!term && !version)
        return 0;
    s = hd_tcluster_smap(rb->cl);
    behind = s && hd_smap_vcmp(s->term, s->version, term, version) < 0;
    hd_smap_unref(s);
    return behind;
}

int hd_rebalance_may_gfn(struct hd_rb *rb, const struct hd_req *r, const char *bucket,
                         const char *key)
{
    struct hd_smap *s;
    int yes;

    if (!hd_tcluster_joined(rb->cl))
        return 1; /* the map may be behind: gfn waits for the join, then decides */
    if (map_behind(rb, r->routed_term, r->routed_version))
        return 1; /* the same: gfn waits for the proxy's map (its metasync is on the way) */
    if (!(s = moving_smap(rb)))
        return 0;
    yes = self_owns(rb, s, bucket, key) && !hd_rebalance_deleted_since(rb, bucket, key, 0);
    hd_smap_unref(s);
    return yes;
}

int hd_rebalance_stale_route(struct hd_rb *rb, const struct hd_req *r, const char *bucket,
                             const char *key)
{
    struct hd_smap *s;
    int stale;

    if (!r->routed_term && !r->routed_version)
        return 0;
    s = hd_tcluster_smap(rb->cl);
    stale = s && hd_smap_vcmp(r->routed_term, r->routed_version, s->term, s->version) < 0 &&
            !self_owns(rb, s, bucket, key);
    hd_smap_unref(s);
    return stale;
}

int hd_rebalance_moving(struct hd_rb *rb)
{
    struct hd_smap *s = moving_smap(rb);

    hd_smap_unref(s);
    return s != NULL;
}

int hd_rebalance_gfn(struct hd_rb *rb, int64_t rterm, int64_t rversion, const char *bucket,
                     const char *key)
{
    struct timespec tick = {0, 5 * 1000000L};
    struct hd_smap *s;
    const char *self = hd_tcluster_id(rb->cl);
    size_t i;
    int rc = HD_ENOSUCHKEY, ms;

    hd_tcluster_wait_joined(rb->cl, 10000);
    for (ms = 0; ms < HD_RB_MAP_WAIT_MS && map_behind(rb, rterm, rversion); ms += 5)
        nanosleep(&tick, NULL);
    if (ms)
        HD_LOG(ms < HD_RB_MAP_WAIT_MS ? HD_DEBUG : HD_WARN, NULL,
               "rebalance: %s/%s was routed by map %lld.%lld; %s after %d ms", bucket, key,
               (long long)rterm, (long long)rversion,
               ms < HD_RB_MAP_WAIT_MS ? "it arrived" : "still older here", ms);
    s = moving_smap(rb);
    if (!s || !self_owns(rb, s, bucket, key) || hd_rebalance_deleted_since(rb, bucket, key, 0))
        goto out;
    for (i = 0; i < s->n && rc != 0; i++) {
        const struct hd_node *n = &s->nodes[i];
        if (n->type != HD_NODE_TARGET || n->down || strcmp(n->id, self) == 0)
            continue;
        rc = gfn_from(rb, n, bucket, key);
    }
out:
    hd_smap_unref(s);
    return rc == 0 ? 0 : HD_ENOSUCHKEY;
}
