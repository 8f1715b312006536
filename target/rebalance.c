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
 * hops) and stores the first copy found, so reads keep working while objects move. */
#include "target/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/hrw.h"
#include "common/httputil.h"
#include "common/log.h"
#include "common/smap.h"
#include "target/cluster.h"
#include "target/jobs.h"

#define SCAN_BATCH 256
#define XFER_TIMEOUT_S 600
#define GFN_TIMEOUT_S 60

/* ---- node-signed calls ---- */

static int object_url(struct hd_buf *b, const char *base, const char *bucket, const char *key)
{
    hd_buf_puts(b, base);
    hd_buf_puts(b, "/v1/objects/");
    hd_uri_encode(b, bucket, strlen(bucket), 0);
    hd_buf_puts(b, "/");
    hd_uri_encode(b, key, strlen(key), 1);
    return b->oom ? -ENOMEM : 0;
}

/* Appends the X-Hoard-Pid/Ptime/Psig headers for method on url. */
static struct curl_slist *sign(struct curl_slist *h, struct hd_target *t, const char *method,
                               const char *url)
{
    char path[4096], line[512], psig[HD_SMAP_SIG_LEN];
    long long ptime = (long long)time(NULL) + HD_SMAP_PSIG_TTL;

    hd_smap_url_path(url, path, sizeof(path));
    hd_smap_psig(hd_tcluster_secret(t->cl), method, path, ptime, psig);
    snprintf(line, sizeof(line), "X-Hoard-Pid: %s", hd_tcluster_id(t->cl));
    h = curl_slist_append(h, line);
    snprintf(line, sizeof(line), "X-Hoard-Ptime: %lld", ptime);
    h = curl_slist_append(h, line);
    snprintf(line, sizeof(line), "X-Hoard-Psig: %s", psig);
    return curl_slist_append(h, line);
}

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

/* Sends one object to owner_url. 0 when the owner holds it (committed, or already held a
 * copy at least as new), else a negative code with msg filled. */
static int send_object(CURL *cu, struct hd_target *t, const char *owner_url, const char *bucket,
                       const char *key, const struct hd_obj_meta *m, int fd, char *msg,
                       size_t msglen)
{
    struct curl_slist *h = NULL;
    struct hd_buf url, line;
    char *xm = hd_obj_meta_json(m);
    long status = 0;
    CURLcode cc;
    int rc = 0;

    hd_buf_init(&url);
    hd_buf_init(&line);
    if (!xm || object_url(&url, owner_url, bucket, key) < 0) {
        rc = -ENOMEM;
        goto out;
    }
    hd_buf_printf(&line, "X-Hoard-Obj-Meta: %s", xm);
    h = sign(h, t, "PUT", url.data);
    h = curl_slist_append(h, line.data);
    h = curl_slist_append(h, "Expect:");
    h = curl_slist_append(h, "Content-Type: application/octet-stream");
    curl_easy_reset(cu);
    curl_easy_setopt(cu, CURLOPT_URL, url.data);
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
        snprintf(msg, msglen, "%s/%s -> %s: %s", bucket, key, owner_url,
                 curl_easy_strerror(cc));
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

/* Copies the object at (mpi, m, fd) to its HRW mountpath. */
static int move_local(struct hd_target *t, const char *bucket, const char *key,
                      const struct hd_obj_meta *m, int fd)
{
    struct hd_put_attrs a;
    struct hd_put *p = NULL;
    json_t *hold = NULL;
    char *xm = hd_obj_meta_json(m), buf[256 * 1024];
    ssize_t n;
    int rc;

    if (!xm)
        return -ENOMEM;
    if ((rc = hd_obj_meta_attrs(xm, &a, &hold)) < 0 ||
        (rc = hd_put_begin(t->st, bucket, key, &p)) < 0)
        goto out;
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

/* ---- the job ---- */

struct walk {
    struct hd_job *j;
    struct hd_target *t;
    CURL *cu;
    uint64_t moved, moved_bytes, local_moves;
};

/* One object on mountpath mpi. */
static void one(struct walk *w, struct hd_smap *s, const struct hd_bucket_info *bi, size_t mpi,
                const char *name)
{
    struct hd_target *t = w->t;
    const struct hd_node *owner = NULL;
    struct hd_obj_meta m;
    struct hd_buf u;
    char msg[512];
    int fd = -1, rc, remote;

    hd_buf_init(&u);
    hd_hrw_uname(&u, bi->provider[0] ? bi->provider : "ais", NULL, bi->name, name);
    rc = u.oom ? -ENOMEM : hd_smap_owner(s, u.data, u.len, &owner);
    hd_buf_cleanup(&u);
    if (!owner) {
        hd_job_add(w->j, 1, 0);
        return; /* no eligible target at all: stay */
    }
    remote = strcmp(owner->id, hd_tcluster_id(t->cl)) != 0;
    if (!remote && hd_store_mp_index(t->st, bi->name, name) == mpi) {
        hd_job_add(w->j, 1, 0);
        return; /* home already */
    }
    if (remote && rc < 0) {
        hd_job_error(w->j, "%s/%s: owner %s is down; kept here", bi->name, name, owner->id);
        hd_job_add(w->j, 1, 0);
        return;
    }
    if ((rc = hd_store_lookup_mp(t->st, mpi, bi->name, name, &m)) < 0) {
        hd_job_add(w->j, 1, 0);
        return; /* deleted meanwhile */
    }
    fd = open(m.path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        hd_job_add(w->j, 1, 0); /* replaced meanwhile: the new copy is scanned later */
        hd_obj_meta_cleanup(&m);
        return;
    }
    if (remote)
        rc = send_object(w->cu, t, owner->url, bi->name, name, &m, fd, msg, sizeof(msg));
    else
        rc = move_local(t, bi->name, name, &m, fd);
    close(fd);
    if (rc < 0) {
        if (remote)
            hd_job_error(w->j, "%s", msg);
        else
            hd_job_error(w->j, "%s/%s: moving to its mountpath: %s", bi->name, name,
                         hd_strerror(rc));
    } else {
        rc = hd_store_delete_if(t->st, mpi, bi->name, name, m.etag, m.mtime_ms);
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
    hd_job_add(w->j, 1, rc == 0 ? m.size : 0);
    hd_obj_meta_cleanup(&m);
}

static struct hd_smap *wait_smap(struct hd_job *j)
{
    struct hd_smap *s;

    while (!(s = hd_tcluster_smap(j->t->cl)) && !hd_job_stopped(j)) {
        struct timespec ts = {0, 200 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return s;
}

int hd_rebalance_run(struct hd_job *j)
{
    struct walk w = {j, j->t, NULL, 0, 0, 0};
    struct hd_bucket_info *bl = NULL;
    size_t nb = 0, bi, mpi, i;
    int rc = 0;

    if (!(w.cu = curl_easy_init()))
        return -ENOMEM;
    if ((rc = hd_store_bucket_list(w.t->st, &bl, &nb)) < 0)
        goto out;
    hd_job_set_total(j, hd_store_count(w.t->st), 0);
    for (bi = 0; bi < nb && rc == 0; bi++) {
        for (mpi = 0; mpi < hd_store_nmp(w.t->st) && rc == 0; mpi++) {
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
                rc = after ? hd_store_scan(w.t->st, mpi, bl[bi].name, after, SCAN_BATCH,
                                           &names, &n)
                           : -ENOMEM;
                for (i = 0; rc == 0 && i < n && !hd_job_stopped(j); i++)
                    one(&w, s, &bl[bi], mpi, names[i]);
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
out:
    free(bl);
    curl_easy_cleanup(w.cu);
    return rc;
}

/* ---- get from neighbour ---- */

struct gfn {
    struct hd_put *p;
    char *xmeta;
    long status;
    int werr;
};

static size_t gfn_header(char *p, size_t size, size_t n, void *arg)
{
    struct gfn *g = arg;
    size_t len = size * n;
    static const char key[] = "x-hoard-obj-meta:";

    if (len > sizeof(key) && strncasecmp(p, key, sizeof(key) - 1) == 0) {
        const char *v = p + sizeof(key) - 1;
        size_t vl = len - (sizeof(key) - 1);
        while (vl && (*v == ' ' || *v == '\t'))
            v++, vl--;
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
            vl--;
        free(g->xmeta);
        g->xmeta = strndup(v, vl);
    }
    return len;
}

static size_t gfn_body(char *p, size_t size, size_t n, void *arg)
{
    struct gfn *g = arg;

    if (hd_put_write(g->p, p, size * n) < 0) {
        g->werr = 1;
        return 0;
    }
    return size * n;
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

static int gfn_from(CURL *cu, struct hd_target *t, const struct hd_node *n, const char *bucket,
                    const char *key)
{
    struct curl_slist *h = NULL;
    struct gfn g = {NULL, NULL, 0, 0};
    struct hd_put_attrs a;
    struct hd_buf url;
    json_t *hold = NULL;
    CURLcode cc;
    int rc;

    hd_buf_init(&url);
    if ((rc = object_url(&url, n->url, bucket, key)) < 0)
        goto out;
    if ((rc = hd_put_begin(t->st, bucket, key, &g.p)) < 0)
        goto out;
    h = sign(h, t, "GET", url.data);
    h = curl_slist_append(h, "X-Hoard-Local: 1");
    curl_easy_setopt(cu, CURLOPT_URL, url.data);
    curl_easy_setopt(cu, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(cu, CURLOPT_HEADERFUNCTION, gfn_header);
    curl_easy_setopt(cu, CURLOPT_HEADERDATA, &g);
    curl_easy_setopt(cu, CURLOPT_WRITEFUNCTION, gfn_body);
    curl_easy_setopt(cu, CURLOPT_WRITEDATA, &g);
    curl_easy_setopt(cu, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(cu, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(cu, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
    curl_easy_setopt(cu, CURLOPT_TIMEOUT, (long)GFN_TIMEOUT_S);
    cc = curl_easy_perform(cu);
    curl_easy_getinfo(cu, CURLINFO_RESPONSE_CODE, &g.status);
    if (cc != CURLE_OK || g.status != 200 || g.werr || !g.xmeta) {
        rc = HD_ENOSUCHKEY;
        goto out;
    }
    if ((rc = hd_obj_meta_attrs(g.xmeta, &a, &hold)) < 0)
        goto out;
    rc = hd_put_commit(g.p, &a, NULL);
    if (rc == HD_EPRECONDITION)
        rc = 0; /* written here meanwhile: that copy is newer */
    if (rc == 0)
        HD_LOG(HD_INFO, NULL, "rebalance: %s/%s fetched from %s", bucket, key, n->id);
out:
    hd_put_free(g.p);
    curl_slist_free_all(h);
    hd_buf_cleanup(&url);
    json_decref(hold);
    free(g.xmeta);
    return rc;
}

int hd_rebalance_gfn(struct hd_target *t, const char *bucket, const char *key)
{
    struct hd_smap *s;
    const char *self = hd_tcluster_id(t->cl);
    CURL *cu = NULL;
    size_t i;
    int rc = HD_ENOSUCHKEY;

    hd_tcluster_wait_joined(t->cl, 10000);
    s = hd_tcluster_smap(t->cl);
    if (!s || !moving(s))
        goto out;
    if (!(cu = curl_easy_init())) {
        rc = -ENOMEM;
        goto out;
    }
    for (i = 0; i < s->n && rc != 0; i++) {
        const struct hd_node *n = &s->nodes[i];
        if (n->type != HD_NODE_TARGET || n->down || strcmp(n->id, self) == 0)
            continue;
        curl_easy_reset(cu);
        rc = gfn_from(cu, t, n, bucket, key);
    }
out:
    if (cu)
        curl_easy_cleanup(cu);
    hd_smap_unref(s);
    return rc == 0 ? 0 : HD_ENOSUCHKEY;
}
