/* shard: the target's part of a shard job (kind "shard"; proxy/shard.c plans it).
 *
 * Args: {"manifest": NAME, "output_bucket": B}, or {"plan": MANIFEST, "output_bucket": B,
 * "archive": true} (AIStore's archive action: the manifest itself, inline); the job's bucket
 * is the input bucket. The job reads the manifest (an object of the output bucket, fetched through
 * the normal object GET of its owner), takes the shards assigned to this target, and builds them
 * two at a time: each is a tar (common/tarstream.h) of its samples' objects in manifest order,
 * pulled from the local disk when held here and otherwise with a node-signed GET from their owner
 * (the normal object path, so it works the same for cached buckets), streamed into a put
 * session of the output bucket and committed only when complete (never half-written), with
 * metadata x-amz-meta-hoard-shard-digest / -job. The member table then goes into the
 * catalog (archive.c), so member reads need no scan.
 *
 * Restart-safe: a shard already present with the manifest's digest is skipped, so a job
 * resumed after a restart (jobs.db) or planned again with the same input finishes the
 * missing shards and rewrites none. Progress: objects and bytes (the job's counters), and
 * stats shards_total, shards_done, shards_skipped, shards_failed, samples_done,
 * tar_bytes_written, shard_retries. A shard whose members cannot be fetched because a peer is
 * unavailable (down, restarting) is retried with backoff for about half a minute before it
 * counts as failed. Job thread plus one helper thread. */
#include "target/cluster/shard.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/batch.h"
#include "common/buf.h"
#include "common/errors.h"
#include "common/httpc.h"
#include "common/log.h"
#include "common/tarindex.h"
#include "common/tarstream.h"
#include "target/object/archive.h"
#include "target/cluster/cluster.h"
#include "target/jobs/jobs.h"
#include "target/cluster/peer.h"

#define BUILDERS 2                     /* shards built at once per target */
#define FETCH_WINDOW 32                /* member fetches in flight per shard */
#define ENTRY_BUF (1u << 20)           /* bytes buffered per fetch in flight */
#define MANIFEST_MAX HD_HTTPC_MAX_BODY /* what a remote read could fetch too */
#define RETRIES 6 /* attempts per shard while a peer is unavailable: 1+2+4+8+16 s of waits */

struct mshard {
    json_t *j; /* the manifest's entry */
    const char *name, *digest;
    const char **objs;   /* member names in order */
    unsigned char *last; /* 1 where an object ends its sample */
    size_t nobjs;
    uint64_t nsamples, bytes;
};

struct sjob {
    struct hd_job *j;
    struct hd_tcluster *cl;
    struct hd_store *st;
    const char *in, *out;
    struct mshard *sh;
    size_t nsh;
    int fmt; /* HD_ARCH_* (args "format", or "gzip"): only a tar gets a member table; the
              * others are read in order */
    atomic_size_t next;
    atomic_ullong done, skipped, failed, retries, samples, tar_bytes;
};

/* ---- the manifest ---- */

/* Reads object bucket/name, from here when held here, else from its owner. */
static int fetch_object(struct hd_tcluster *cl, const char *bucket, const char *name,
                        struct hd_buf *out, char *msg, size_t msglen)
{
    struct hd_obj_meta m;
    struct hd_httpc_call c;
    char *url = NULL;
    int fd, rc, self = 0;

    if ((rc = hd_store_open_object(hd_tcluster_store(cl), bucket, name, &m, &fd)) == 0) {
        uint64_t got = 0;
        if (m.size > MANIFEST_MAX)
            rc = HD_ETOOLARGE;
        while (rc == 0 && got < m.size) {
            char buf[65536];
            ssize_t n = pread(fd, buf, sizeof(buf), (off_t)got);
            if (n <= 0) {
                rc = n < 0 ? -errno : -EIO;
                break;
            }
            hd_buf_append(out, buf, (size_t)n);
            got += (uint64_t)n;
        }
        close(fd);
        hd_obj_meta_cleanup(&m);
        if (rc == 0 && out->oom)
            rc = -ENOMEM;
        if (rc < 0)
            snprintf(msg, msglen, "reading %s/%s: %s", bucket, name, hd_strerror(rc));
        return rc;
    }
    if (rc != HD_ENOSUCHKEY)
        return rc;
    if ((rc = hd_peer_object_url(cl, bucket, name, NULL, &url, &self, msg, msglen)) < 0)
        return rc;
    if (self) {
        free(url);
        snprintf(msg, msglen, "%s/%s does not exist", bucket, name);
        return HD_ENOSUCHKEY;
    }
    hd_httpc_call_init(&c, "GET", url);
    hd_peer_call_sign(cl, &c);
    c.total_ms = 120000;
    rc = hd_httpc_run(&c);
    if (rc < 0) {
        snprintf(msg, msglen, "fetching %s/%s: %s", bucket, name, c.err);
        rc = HD_EUNAVAIL;
    } else if (c.status != 200) {
        rc = hd_tarstream_http_err(c.status, c.resp.data, c.resp.len, msg, msglen);
    } else {
        hd_buf_append(out, c.resp.data ? c.resp.data : "", c.resp.len);
        rc = out->oom ? -ENOMEM : 0;
    }
    hd_httpc_call_cleanup(&c);
    free(url);
    return rc;
}

static void shards_free(struct sjob *sj)
{
    size_t i;

    for (i = 0; i < sj->nsh; i++) {
        free(sj->sh[i].objs);
        free(sj->sh[i].last);
    }
    free(sj->sh);
    sj->sh = NULL;
    sj->nsh = 0;
}

/* Picks this target's shards out of the manifest. */
static int load_shards(struct sjob *sj, json_t *man, char *msg, size_t msglen)
{
    const char *self = hd_tcluster_id(sj->cl);
    json_t *shards = json_object_get(man, "shards"), *e;
    uint64_t tobjs = 0, tbytes = 0;
    size_t i, n = 0;

    if (!json_is_array(shards)) {
        snprintf(msg, msglen, "the manifest has no shards array");
        return HD_EBADARG;
    }
    sj->sh = calloc(json_array_size(shards) ? json_array_size(shards) : 1, sizeof(*sj->sh));
    if (!sj->sh)
        return -ENOMEM;
    json_array_foreach(shards, i, e)
    {
        const char *tg = json_string_value(json_object_get(e, "target"));
        json_t *samples = json_object_get(e, "samples"), *smp, *ob;
        struct mshard *m = &sj->sh[n];
        size_t k, q, cap = 0;

        if (!tg || strcmp(tg, self) != 0)
            continue;
        m->j = e;
        m->name = json_string_value(json_object_get(e, "name"));
        m->digest = json_string_value(json_object_get(e, "digest"));
        if (!m->name || !m->digest || !json_is_array(samples)) {
            snprintf(msg, msglen, "manifest shard %zu is malformed", i);
            return HD_EBADARG;
        }
        json_array_foreach(samples, k, smp) cap += json_array_size(json_object_get(smp, "objects"));
        m->objs = calloc(cap ? cap : 1, sizeof(*m->objs));
        m->last = calloc(cap ? cap : 1, 1);
        if (!m->objs || !m->last)
            return -ENOMEM;
        json_array_foreach(samples, k, smp)
        {
            json_array_foreach(json_object_get(smp, "objects"), q, ob)
            {
                const char *nm = json_string_value(json_object_get(ob, "name"));
                if (!nm) {
                    snprintf(msg, msglen, "manifest shard %s: an object without a name", m->name);
                    return HD_EBADARG;
                }
                m->objs[m->nobjs++] = nm;
                m->bytes += (uint64_t)json_integer_value(json_object_get(ob, "size"));
            }
            if (m->nobjs)
                m->last[m->nobjs - 1] = 1;
            m->nsamples++;
        }
        tobjs += m->nobjs;
        tbytes += m->bytes;
        n++;
    }
    sj->nsh = n;
    hd_job_set_total(sj->j, tobjs, tbytes);
    hd_job_set_extra(sj->j, "shards_total", n);
    return 0;
}

/* ---- building one shard ---- */

struct build {
    struct sjob *sj;
    struct mshard *m;
    struct hd_put *put;
    uint64_t written;
    uint64_t ndone, nbytes, nsamples; /* progress counted by this attempt */
};

static void b_resolve(void *ctx, size_t i, struct hd_tar_src *src)
{
    struct build *b = ctx;
    struct hd_tcluster *cl = b->sj->cl;
    struct hd_store *st = b->sj->st;
    const char *name = b->m->objs[i];
    struct hd_obj_meta m;
    int fd, rc, self = 0;

    rc = hd_store_open_object(st, b->sj->in, name, &m, &fd);
    if (rc == 0) {
        src->fd = fd;
        src->off = 0;
        src->len = m.size;
        src->mtime = m.mtime_ms / 1000;
        hd_obj_meta_cleanup(&m);
        return;
    }
    if (rc != HD_ENOSUCHKEY) {
        src->err = rc;
        snprintf(src->msg, sizeof(src->msg), "reading %s/%s: %s", b->sj->in, name, hd_strerror(rc));
        return;
    }
    /* not held here: its owner's normal GET (which fills a cache miss where there is one) */
    rc =
        hd_peer_object_url(cl, b->sj->in, name, NULL, &src->url, &self, src->msg, sizeof(src->msg));
    if (rc == 0)
        rc = hd_peer_sign(cl, "GET", src->url, NULL, &src->hdrs, &src->nhdrs);
    if (rc < 0) {
        src->err = rc;
        if (!src->msg[0])
            snprintf(src->msg, sizeof(src->msg), "%s", hd_strerror(rc));
    }
}

static const char *b_name(void *ctx, size_t i)
{
    struct build *b = ctx;

    return b->m->objs[i];
}

static int b_sink(void *ctx, const void *buf, size_t n)
{
    struct build *b = ctx;
    int rc = hd_put_write(b->put, buf, n);

    if (rc == 0)
        b->written += n;
    return rc;
}

static void b_written(void *ctx, size_t i, uint64_t bytes)
{
    struct build *b = ctx;

    hd_job_add(b->sj->j, 1, bytes);
    b->ndone++;
    b->nbytes += bytes;
    if (b->m->last[i]) {
        atomic_fetch_add(&b->sj->samples, 1);
        b->nsamples++;
    }
}

static int b_stopped(void *ctx)
{
    struct build *b = ctx;

    return hd_job_stopped(b->sj->j);
}

/* 1 when bucket/name is already this shard (same digest). */
static int already_built(struct sjob *sj, const struct mshard *m)
{
    struct hd_obj_meta om;
    json_t *meta;
    int same;

    if (hd_store_lookup(sj->st, sj->out, m->name, &om) < 0)
        return 0;
    meta = om.meta ? json_loads(om.meta, 0, NULL) : NULL;
    same = json_is_string(json_object_get(meta, "hoard-shard-digest")) &&
           strcmp(json_string_value(json_object_get(meta, "hoard-shard-digest")), m->digest) == 0;
    json_decref(meta);
    hd_obj_meta_cleanup(&om);
    return same;
}

static void index_shard(struct sjob *sj, const char *name)
{
    struct hd_obj_meta m;
    char msg[300];
    int fd, rc;

    if (hd_store_open_object(sj->st, sj->out, name, &m, &fd) < 0)
        return; /* replaced or deleted meanwhile: indexed on first access */
    rc = hd_arch_index(sj->st, sj->out, name, &m, fd, NULL, msg, sizeof(msg));
    if (rc < 0)
        hd_job_error(sj->j, "shard %s written but not indexed: %s", name,
                     msg[0] ? msg : hd_strerror(rc));
    close(fd);
    hd_obj_meta_cleanup(&m);
}

/* One attempt at writing shard m: 0, or a negative code with msg filled. */
static int build_try(struct sjob *sj, struct mshard *m, char *msg, size_t msglen)
{
    static const struct hd_tarstream_ops ops = {.resolve = b_resolve,
                                                .name = b_name,
                                                .sink = b_sink,
                                                .written = b_written,
                                                .stopped = b_stopped};
    struct hd_tarstream_cfg cfg = {m->nobjs, FETCH_WINDOW, ENTRY_BUF, sj->fmt};
    struct build b = {.sj = sj, .m = m};
    struct hd_put_attrs a;
    json_t *meta = NULL;
    char *mtext = NULL;
    int rc;

    if ((rc = hd_put_begin(sj->st, sj->out, m->name, &b.put)) < 0) {
        snprintf(msg, msglen, "%s", hd_strerror(rc));
        goto out;
    }
    rc = hd_tarstream_run(&cfg, &ops, &b, msg, msglen);
    if (rc < 0)
        goto out;
    meta = json_pack("{s:s, s:s}", "hoard-shard-digest", m->digest, "hoard-shard-job", sj->j->id);
    mtext = meta ? json_dumps(meta, JSON_COMPACT) : NULL;
    if (!mtext) {
        rc = -ENOMEM;
        snprintf(msg, msglen, "out of memory");
        goto out;
    }
    memset(&a, 0, sizeof(a));
    a.ctype = hd_arch_fmt_ctype(sj->fmt);
    a.meta = mtext;
    if ((rc = hd_put_commit(b.put, &a, NULL)) < 0) {
        snprintf(msg, msglen, "committing: %s", hd_strerror(rc));
        goto out;
    }
    atomic_fetch_add(&sj->tar_bytes, b.written);
out:
    if (rc < 0 && b.ndone) { /* counted again by the next attempt */
        hd_job_add(sj->j, (uint64_t)0 - b.ndone, (uint64_t)0 - b.nbytes);
        atomic_fetch_sub(&sj->samples, b.nsamples);
    }
    hd_put_free(b.put); /* removes the temp file unless committed */
    json_decref(meta);
    free(mtext);
    return rc;
}

/* Sleeps ms milliseconds unless the job is stopped meanwhile; 0 when stopped. */
static int pause_ms(struct sjob *sj, long ms)
{
    for (; ms > 0 && !hd_job_stopped(sj->j); ms -= 100) {
        struct timespec ts = {0, 100 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return !hd_job_stopped(sj->j);
}

static int build_one(struct sjob *sj, struct mshard *m)
{
    char msg[600];
    long backoff = 1000;
    int rc, attempt;

    if (already_built(sj, m)) {
        hd_job_add(sj->j, m->nobjs, m->bytes);
        atomic_fetch_add(&sj->samples, m->nsamples);
        atomic_fetch_add(&sj->skipped, 1);
        return 0;
    }
    /* a peer that is restarting or briefly unreachable (HD_EUNAVAIL) is waited for */
    for (attempt = 1;; attempt++) {
        msg[0] = '\0';
        rc = build_try(sj, m, msg, sizeof(msg));
        if (rc != HD_EUNAVAIL || attempt >= RETRIES || !pause_ms(sj, backoff))
            break;
        HD_LOG(HD_INFO, NULL, "job %s: shard %s: %s; retrying in %ld ms", sj->j->id, m->name, msg,
               backoff);
        atomic_fetch_add(&sj->retries, 1);
        backoff *= 2;
    }
    if (rc == 0) {
        atomic_fetch_add(&sj->done, 1);
        if (sj->fmt == HD_ARCH_TAR)
            index_shard(sj, m->name);
    } else if (rc != -ECANCELED && !hd_job_stopped(sj->j)) {
        atomic_fetch_add(&sj->failed, 1);
        hd_job_error(sj->j, "shard %s: %s", m->name, msg);
    }
    return rc;
}

static void publish(struct sjob *sj)
{
    hd_job_set_extra(sj->j, "shards_done", atomic_load(&sj->done));
    hd_job_set_extra(sj->j, "shards_skipped", atomic_load(&sj->skipped));
    hd_job_set_extra(sj->j, "shards_failed", atomic_load(&sj->failed));
    hd_job_set_extra(sj->j, "samples_done", atomic_load(&sj->samples));
    hd_job_set_extra(sj->j, "tar_bytes_written", atomic_load(&sj->tar_bytes));
    hd_job_set_extra(sj->j, "shard_retries", atomic_load(&sj->retries));
}

static void *builder(void *arg)
{
    struct sjob *sj = arg;
    size_t i;

    while (!hd_job_stopped(sj->j) && (i = atomic_fetch_add(&sj->next, 1)) < sj->nsh) {
        build_one(sj, &sj->sh[i]);
        publish(sj);
    }
    return NULL;
}

static int shard_run(struct hd_job *j, void *ctx)
{
    struct sjob sj;
    struct hd_buf text;
    json_t *man = NULL;
    const char *mname = json_string_value(json_object_get(j->args, "manifest"));
    pthread_t th[BUILDERS - 1];
    int started[BUILDERS - 1] = {0};
    char msg[600] = "";
    size_t k;
    int rc;

    memset(&sj, 0, sizeof(sj));
    sj.j = j;
    sj.cl = ctx;
    sj.st = hd_tcluster_store(sj.cl);
    sj.in = j->bucket;
    sj.out = json_string_value(json_object_get(j->args, "output_bucket"));
    sj.fmt = hd_arch_fmt_json(j->args);
    hd_buf_init(&text);
    if (sj.fmt < 0) { /* a newer proxy's format: refused, not written as a tar */
        snprintf(msg, sizeof(msg), "unknown archive format");
        rc = HD_EBADARG;
        goto out;
    }
    if (json_is_object(json_object_get(j->args, "plan"))) {
        /* AIStore's archive: the plan came with the job (proxy/jobs/shard.c) */
        man = json_incref(json_object_get(j->args, "plan"));
        mname = "(inline)";
    }
    if (!sj.out || !mname || !*sj.in) {
        snprintf(msg, sizeof(msg), "a shard job needs bucket, output_bucket and manifest");
        rc = HD_EBADARG;
        goto out;
    }
    if (!man && (rc = fetch_object(sj.cl, sj.out, mname, &text, msg, sizeof(msg))) < 0)
        goto out;
    if (!man && !(man = json_loadb(text.data ? text.data : "", text.len, 0, NULL))) {
        snprintf(msg, sizeof(msg), "manifest %s/%s is not JSON", sj.out, mname);
        rc = HD_EBADARG;
        goto out;
    }
    hd_buf_cleanup(&text);
    if ((rc = load_shards(&sj, man, msg, sizeof(msg))) < 0)
        goto out;
    for (k = 0; k < BUILDERS - 1; k++)
        started[k] = pthread_create(&th[k], NULL, builder, &sj) == 0;
    builder(&sj);
    for (k = 0; k < BUILDERS - 1; k++)
        if (started[k])
            pthread_join(th[k], NULL);
    publish(&sj);
    if (hd_job_stopped(j))
        rc = -ECANCELED;
    else if (atomic_load(&sj.failed)) {
        snprintf(msg, sizeof(msg),
                 "%llu of %zu shards failed (see errors); run the job again "
                 "to finish them",
                 (unsigned long long)atomic_load(&sj.failed), sj.nsh);
        rc = HD_EINTERNAL;
    }
out:
    if (rc < 0 && rc != -ECANCELED && msg[0]) {
        pthread_mutex_lock(&j->mu);
        free(j->result);
        j->result = strdup(msg);
        pthread_mutex_unlock(&j->mu);
    }
    shards_free(&sj);
    json_decref(man);
    hd_buf_cleanup(&text);
    return rc;
}

int hd_shard_register(struct hd_jobs *js, struct hd_tcluster *cl)
{
    return hd_jobs_register(js, "shard", shard_run, cl, HD_JOB_RESUMABLE);
}
