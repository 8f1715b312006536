#include "target/jobs/jobs.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/json.h"
#include "common/log.h"
#include "common/metrics.h"

#define KEEP_FINISHED 64    /* finished jobs kept in memory (and in jobs.db) */
#define BODY_MAX (4u << 20) /* an archive's plan comes inline (proxy/jobs/shard.c) */

#define MAX_KINDS 16

struct kind {
    char name[32];
    hd_job_run_fn run;
    void *ctx;
    int flags; /* HD_JOB_RESUMABLE, HD_JOB_EXCLUSIVE */
};

struct hd_jobs {
    struct kind kinds[MAX_KINDS]; /* registered before hd_jobs_resume; read-only after */
    size_t nkinds;
    sqlite3 *db;              /* guarded by mu */
    pthread_mutex_t mu;       /* the list, refs, db */
    pthread_mutex_t start_mu; /* one hd_jobs_start at a time: check-then-insert is atomic */
    struct hd_job *head;      /* newest first */
    hd_jobs_admit_fn admit;   /* NULL, or what a client's POST must pass (set before serving) */
    void *admit_arg;
    atomic_int closing; /* jobs stopped by shutdown stay "running" in jobs.db */
};

static const struct kind *kind_find(const struct hd_jobs *js, const char *name)
{
    size_t i;

    for (i = 0; i < js->nkinds; i++)
        if (strcmp(js->kinds[i].name, name) == 0)
            return &js->kinds[i];
    return NULL;
}

int hd_jobs_register(struct hd_jobs *js, const char *kind, hd_job_run_fn run, void *ctx, int flags)
{
    struct kind *k;

    if (js->nkinds == MAX_KINDS || strlen(kind) >= sizeof(k->name) || kind_find(js, kind))
        return HD_EBADARG;
    k = &js->kinds[js->nkinds++];
    snprintf(k->name, sizeof(k->name), "%s", kind);
    k->run = run;
    k->ctx = ctx;
    k->flags = flags;
    return 0;
}

static const char *state_name(enum hd_job_state s)
{
    switch (s) {
    case HD_JOB_RUNNING:
        return "running";
    case HD_JOB_DONE:
        return "done";
    case HD_JOB_ABORTED:
        return "aborted";
    default:
        return "failed";
    }
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- progress ---- */

void hd_job_add(struct hd_job *j, uint64_t objs, uint64_t bytes)
{
    pthread_mutex_lock(&j->mu);
    j->objs += objs;
    j->bytes += bytes;
    pthread_mutex_unlock(&j->mu);
}

void hd_job_set_total(struct hd_job *j, uint64_t objs, uint64_t bytes)
{
    pthread_mutex_lock(&j->mu);
    j->total_objs = objs;
    j->total_bytes = bytes;
    pthread_mutex_unlock(&j->mu);
}

void hd_job_set_extra(struct hd_job *j, const char *key, uint64_t v)
{
    pthread_mutex_lock(&j->mu);
    json_object_set_new(j->extra, key, json_integer((json_int_t)v));
    pthread_mutex_unlock(&j->mu);
}

void hd_job_error(struct hd_job *j, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    HD_LOG(HD_WARN, NULL, "job %s (%s): %s", j->id, j->kind, msg);
    pthread_mutex_lock(&j->mu);
    j->nerr++;
    if (json_array_size(j->errors) < HD_JOB_MAX_ERRORS)
        json_array_append_new(j->errors, json_string(msg));
    pthread_mutex_unlock(&j->mu);
}

json_t *hd_job_to_json(struct hd_job *j)
{
    json_t *o;

    pthread_mutex_lock(&j->mu);
    o = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:O, s:O}", "id", j->id,
                  "kind", j->kind, "bucket", j->bucket, "state", state_name(j->state), "started_ms",
                  (json_int_t)j->started_ms, "finished_ms", (json_int_t)j->finished_ms, "objects",
                  (json_int_t)j->objs, "bytes", (json_int_t)j->bytes, "total_objects",
                  (json_int_t)j->total_objs, "total_bytes", (json_int_t)j->total_bytes,
                  "error_count", (json_int_t)j->nerr, "errors", j->errors, "stats", j->extra);
    if (o && j->result)
        json_object_set_new(o, "result", json_string(j->result));
    if (o && json_object_get(j->args, "plan")) { /* an inline shard plan: too big to show */
        json_t *a = json_copy(j->args);
        json_object_del(a, "plan");
        json_object_set_new(o, "args", a ? a : json_object());
    } else if (o) {
        json_object_set(o, "args", j->args);
    }
    pthread_mutex_unlock(&j->mu);
    return o;
}

/* ---- the registry and jobs.db ---- */

static int db_exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    int s = sqlite3_exec(db, sql, NULL, NULL, &err);

    if (s != SQLITE_OK) {
        HD_LOG(HD_ERROR, NULL, "jobs.db: %s", err ? err : sqlite3_errstr(s));
        sqlite3_free(err);
        return -EIO;
    }
    return 0;
}

/* Records j (caller holds js->mu). */
static void db_save(struct hd_jobs *js, struct hd_job *j)
{
    static const char sql[] = "INSERT OR REPLACE INTO jobs(id, kind, state, doc) "
                              "VALUES(?1, ?2, ?3, ?4)";
    sqlite3_stmt *q = NULL;
    json_t *doc = hd_job_to_json(j);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;

    if (text && sqlite3_prepare_v2(js->db, sql, -1, &q, NULL) == SQLITE_OK) {
        sqlite3_bind_text(q, 1, j->id, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 2, j->kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 3, state_name(j->state), -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 4, text, -1, SQLITE_STATIC);
        if (sqlite3_step(q) != SQLITE_DONE)
            HD_LOG(HD_ERROR, NULL, "jobs.db: saving %s: %s", j->id, sqlite3_errmsg(js->db));
    }
    sqlite3_finalize(q);
    free(text);
    json_decref(doc);
}

static void job_free(struct hd_job *j)
{
    json_decref(j->args);
    json_decref(j->errors);
    json_decref(j->extra);
    free(j->result);
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

void hd_job_unref(struct hd_job *j)
{
    struct hd_jobs *js;
    int last;

    if (!j)
        return;
    js = j->jobs;
    pthread_mutex_lock(&js->mu);
    last = --j->refs == 0;
    pthread_mutex_unlock(&js->mu);
    if (last)
        job_free(j);
}

/* Progress gauges of the running jobs (a handful at a time, so the series stay few) and the
 * number running per kind, for /metrics. Ids other than [A-Za-z0-9._-] are left out. */
static void jobs_render(struct hd_buf *b, void *arg)
{
    static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
    struct hd_jobs *js = arg;
    struct hd_job *j;
    size_t k, running[MAX_KINDS] = {0};

    hd_buf_puts(b, "# HELP hoard_job_objects Objects a running job has done (done=\"true\") "
                   "and has to do in all (done=\"false\"; 0 = not known yet).\n"
                   "# TYPE hoard_job_objects gauge\n");
    pthread_mutex_lock(&js->mu);
    for (j = js->head; j; j = j->next) {
        pthread_mutex_lock(&j->mu);
        if (j->state == HD_JOB_RUNNING) {
            for (k = 0; k < js->nkinds && strcmp(js->kinds[k].name, j->kind) != 0; k++)
                ;
            if (k < js->nkinds)
                running[k]++;
            if (strspn(j->id, safe) == strlen(j->id))
                hd_buf_printf(
                    b,
                    "hoard_job_objects{id=\"%s\",kind=\"%s\",bucket=\"%s\",done=\"true\"}"
                    " %llu\n"
                    "hoard_job_objects{id=\"%s\",kind=\"%s\",bucket=\"%s\",done=\"false\"}"
                    " %llu\n",
                    j->id, j->kind, j->bucket, (unsigned long long)j->objs, j->id, j->kind,
                    j->bucket, (unsigned long long)j->total_objs);
        }
        pthread_mutex_unlock(&j->mu);
    }
    hd_buf_puts(b, "# HELP hoard_job_bytes Bytes a running job has done.\n"
                   "# TYPE hoard_job_bytes gauge\n");
    for (j = js->head; j; j = j->next) {
        pthread_mutex_lock(&j->mu);
        if (j->state == HD_JOB_RUNNING && strspn(j->id, safe) == strlen(j->id))
            hd_buf_printf(b, "hoard_job_bytes{id=\"%s\",kind=\"%s\",bucket=\"%s\"} %llu\n", j->id,
                          j->kind, j->bucket, (unsigned long long)j->bytes);
        pthread_mutex_unlock(&j->mu);
    }
    pthread_mutex_unlock(&js->mu);
    hd_buf_puts(b, "# HELP hoard_jobs_running Jobs running on this target, by kind.\n"
                   "# TYPE hoard_jobs_running gauge\n");
    for (k = 0; k < js->nkinds; k++)
        hd_buf_printf(b, "hoard_jobs_running{kind=\"%s\"} %zu\n", js->kinds[k].name, running[k]);
}

int hd_jobs_new(const char *data_dir, struct hd_jobs **out)
{
    struct hd_jobs *js = calloc(1, sizeof(*js));
    struct hd_buf path;
    int rc = 0;

    if (!js)
        return -ENOMEM;
    pthread_mutex_init(&js->mu, NULL);
    pthread_mutex_init(&js->start_mu, NULL);
    hd_buf_init(&path);
    hd_buf_printf(&path, "%s/jobs.db", data_dir);
    if (path.oom ||
        sqlite3_open_v2(path.data, &js->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        NULL) != SQLITE_OK) {
        HD_LOG(HD_ERROR, NULL, "cannot open %s", path.data ? path.data : "jobs.db");
        rc = -EIO;
    } else {
        sqlite3_busy_timeout(js->db, 5000);
        rc = db_exec(js->db, "PRAGMA journal_mode = WAL;"
                             "CREATE TABLE IF NOT EXISTS jobs(id TEXT PRIMARY KEY, kind TEXT "
                             "NOT NULL, state TEXT NOT NULL, doc TEXT NOT NULL);");
    }
    hd_buf_cleanup(&path);
    if (rc < 0) {
        hd_jobs_free(js);
        return rc;
    }
    hd_metrics_set_jobs(jobs_render, js);
    *out = js;
    return 0;
}

static struct hd_job *find_locked(struct hd_jobs *js, const char *id)
{
    struct hd_job *j;

    for (j = js->head; j; j = j->next)
        if (strcmp(j->id, id) == 0)
            return j;
    return NULL;
}

static void *job_main(void *arg)
{
    struct hd_job *j = arg;
    struct hd_jobs *js = j->jobs;
    const struct kind *k = kind_find(js, j->kind);
    int rc, last;

    hd_log_set_context(j->id);
    HD_LOG(HD_INFO, NULL, "job %s (%s) started", j->id, j->kind);
    rc = k->run(j, j->ctx);
    pthread_mutex_lock(&j->mu);
    j->finished_ms = now_ms();
    if (rc == -ECANCELED || (rc < 0 && hd_job_stopped(j)))
        j->state = HD_JOB_ABORTED;
    else
        j->state = rc < 0 ? HD_JOB_FAILED : HD_JOB_DONE;
    if (rc < 0 && rc != -ECANCELED && !j->result)
        j->result = strdup(hd_strerror(rc));
    pthread_mutex_unlock(&j->mu);
    HD_LOG(rc < 0 ? HD_WARN : HD_INFO, NULL,
           "job %s (%s) %s: %llu objects, %llu bytes, %llu errors", j->id, j->kind,
           state_name(j->state), (unsigned long long)j->objs, (unsigned long long)j->bytes,
           (unsigned long long)j->nerr);
    pthread_mutex_lock(&js->mu);
    /* not when a new job of its id replaced it already (it saw the finished state set above
     * and took the row): saving this one now would overwrite the new job's row, and a restart
     * would then neither show nor resume it */
    if (!(atomic_load(&js->closing) && (k->flags & HD_JOB_RESUMABLE)) &&
        find_locked(js, j->id) == j)
        db_save(js, j);
    last = --j->refs == 0; /* the thread's reference */
    pthread_mutex_unlock(&js->mu);
    if (last) { /* nobody else holds it, so nobody waits for it */
        job_free(j);
        return NULL;
    }
    /* the last touch: a stop_wait()er may free j (and the registry) once it sees this */
    pthread_mutex_lock(&j->mu);
    j->exited = 1;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

/* Drops finished jobs beyond KEEP_FINISHED (caller holds mu). */
static void trim(struct hd_jobs *js)
{
    struct hd_job **pp = &js->head, *j;
    size_t kept = 0;

    while ((j = *pp)) {
        int finished;
        pthread_mutex_lock(&j->mu);
        /* and its thread done with it: it touches j until it sets exited, after dropping its
         * reference, so dropping the registry's before that could free j under it */
        finished = j->state != HD_JOB_RUNNING && j->exited;
        pthread_mutex_unlock(&j->mu);
        if (finished && ++kept > KEEP_FINISHED) {
            sqlite3_stmt *q = NULL;
            if (sqlite3_prepare_v2(js->db, "DELETE FROM jobs WHERE id = ?1", -1, &q, NULL) ==
                SQLITE_OK) {
                sqlite3_bind_text(q, 1, j->id, -1, SQLITE_STATIC);
                sqlite3_step(q);
            }
            sqlite3_finalize(q);
            *pp = j->next;
            if (--j->refs == 0)
                job_free(j);
            continue;
        }
        pp = &j->next;
    }
}

static void unlink_locked(struct hd_jobs *js, struct hd_job *j)
{
    struct hd_job **pp;

    for (pp = &js->head; *pp; pp = &(*pp)->next) {
        if (*pp == j) {
            *pp = j->next;
            return;
        }
    }
}

/* Stops job j and waits for its thread (j referenced by the caller, mu not held). */
static void stop_wait(struct hd_job *j)
{
    atomic_store(&j->stop, 1);
    pthread_mutex_lock(&j->mu);
    while (!j->exited)
        pthread_cond_wait(&j->cv, &j->mu);
    pthread_mutex_unlock(&j->mu);
}

/* Drops the registry's reference to a finished job that a new one of its id replaced. Its
 * thread may still be finishing (it touches the job until it sets exited, after dropping its own
 * reference): wait for that first, outside mu, or the job could be freed under it. */
static void release_replaced(struct hd_job *old)
{
    if (!old)
        return;
    stop_wait(old);
    hd_job_unref(old);
}

static int start_serial(struct hd_jobs *js, const char *id, const char *kind, const char *bucket,
                        json_t *args)
{
    const struct kind *k = kind_find(js, kind);
    struct hd_job *j, *old, *prev = NULL;
    int running;

    if (!k)
        return HD_EBADARG;
    if (!*id || strlen(id) >= sizeof(j->id) || strlen(bucket) >= sizeof(j->bucket))
        return HD_EBADARG;
    pthread_mutex_lock(&js->mu);
    old = find_locked(js, id);
    if (old) {
        pthread_mutex_lock(&old->mu);
        running = old->state == HD_JOB_RUNNING;
        pthread_mutex_unlock(&old->mu);
        if (running) {
            pthread_mutex_unlock(&js->mu);
            return HD_DECLINED;
        }
    }
    if ((k->flags & HD_JOB_EXCLUSIVE)) {
        for (j = js->head; j; j = j->next) {
            pthread_mutex_lock(&j->mu);
            running = j->state == HD_JOB_RUNNING && strcmp(j->kind, kind) == 0;
            pthread_mutex_unlock(&j->mu);
            if (running) {
                prev = j;
                prev->refs++;
                break;
            }
        }
    }
    pthread_mutex_unlock(&js->mu);
    if (prev) {
        HD_LOG(HD_INFO, NULL, "job %s (%s) replaced by %s", prev->id, prev->kind, id);
        stop_wait(prev);
        hd_job_unref(prev);
    }

    j = calloc(1, sizeof(*j));
    if (!j)
        return -ENOMEM;
    snprintf(j->id, sizeof(j->id), "%s", id);
    snprintf(j->kind, sizeof(j->kind), "%s", kind);
    snprintf(j->bucket, sizeof(j->bucket), "%s", bucket);
    j->args = args ? json_deep_copy(args) : json_object();
    j->errors = json_array();
    j->extra = json_object();
    j->ctx = k->ctx;
    j->jobs = js;
    j->state = HD_JOB_RUNNING;
    j->started_ms = now_ms();
    j->refs = 2; /* the registry and the thread */
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    if (!j->args || !j->errors || !j->extra) {
        j->refs = 1;
        hd_job_unref(j);
        return -ENOMEM;
    }
    pthread_mutex_lock(&js->mu);
    if ((old = find_locked(js, id))) /* a finished job of that id: replaced (released below) */
        unlink_locked(js, old);
    j->next = js->head;
    js->head = j;
    db_save(js, j);
    if (pthread_create(&j->thr, NULL, job_main, j) != 0) {
        unlink_locked(js, j);
        pthread_mutex_unlock(&js->mu);
        j->refs = 1;
        hd_job_unref(j);
        release_replaced(old);
        return -EAGAIN;
    }
    pthread_detach(j->thr);
    trim(js);
    pthread_mutex_unlock(&js->mu);
    release_replaced(old);
    return 0;
}

int hd_jobs_start(struct hd_jobs *js, const char *id, const char *kind, const char *bucket,
                  json_t *args)
{
    int rc;

    pthread_mutex_lock(&js->start_mu);
    rc = atomic_load(&js->closing) ? HD_EUNAVAIL : start_serial(js, id, kind, bucket, args);
    pthread_mutex_unlock(&js->start_mu);
    return rc;
}

struct hd_job *hd_jobs_running(struct hd_jobs *js, const char *kind)
{
    struct hd_job *j, *found = NULL;

    pthread_mutex_lock(&js->mu);
    for (j = js->head; j && !found; j = j->next) {
        pthread_mutex_lock(&j->mu);
        if (j->state == HD_JOB_RUNNING && strcmp(j->kind, kind) == 0) {
            found = j;
            j->refs++;
        }
        pthread_mutex_unlock(&j->mu);
    }
    pthread_mutex_unlock(&js->mu);
    return found;
}

void hd_jobs_resume(struct hd_jobs *js)
{
    static const char sql[] = "SELECT id, kind, doc FROM jobs WHERE state = 'running'";
    sqlite3_stmt *q = NULL;
    json_t *todo = json_array();
    size_t i;

    pthread_mutex_lock(&js->mu);
    if (sqlite3_prepare_v2(js->db, sql, -1, &q, NULL) == SQLITE_OK) {
        while (sqlite3_step(q) == SQLITE_ROW) {
            json_t *doc = json_loads((const char *)sqlite3_column_text(q, 2), 0, NULL);
            if (doc)
                json_array_append_new(todo, doc);
        }
    }
    sqlite3_finalize(q);
    pthread_mutex_unlock(&js->mu);
    for (i = 0; i < json_array_size(todo); i++) {
        json_t *doc = json_array_get(todo, i);
        const char *id = json_string_value(json_object_get(doc, "id"));
        const char *kind = json_string_value(json_object_get(doc, "kind"));
        const char *bucket = json_string_value(json_object_get(doc, "bucket"));
        const struct kind *k = kind && id ? kind_find(js, kind) : NULL;
        if (k && (k->flags & HD_JOB_RESUMABLE)) {
            HD_LOG(HD_INFO, NULL, "job %s (%s) was interrupted: resuming", id, kind);
            hd_jobs_start(js, id, kind, bucket ? bucket : "", json_object_get(doc, "args"));
        } else if (id) {
            json_object_set_new(doc, "state", json_string("aborted"));
            json_object_set_new(doc, "result", json_string("interrupted by a restart"));
            char *text = json_dumps(doc, JSON_COMPACT);
            sqlite3_stmt *u = NULL;
            pthread_mutex_lock(&js->mu);
            if (text && sqlite3_prepare_v2(js->db,
                                           "UPDATE jobs SET state = 'aborted', doc = ?2 "
                                           "WHERE id = ?1",
                                           -1, &u, NULL) == SQLITE_OK) {
                sqlite3_bind_text(u, 1, id, -1, SQLITE_STATIC);
                sqlite3_bind_text(u, 2, text, -1, SQLITE_STATIC);
                sqlite3_step(u);
            }
            sqlite3_finalize(u);
            pthread_mutex_unlock(&js->mu);
            free(text);
        }
    }
    json_decref(todo);
}

void hd_jobs_free(struct hd_jobs *js)
{
    struct hd_job *j, *next;

    if (!js)
        return;
    hd_metrics_set_jobs(NULL, NULL);
    atomic_store(&js->closing, 1);
    pthread_mutex_lock(&js->start_mu); /* a start in progress finishes first; none after */
    pthread_mutex_unlock(&js->start_mu);
    /* stop jobs whose thread has not exited, without holding mu (their threads take it to
     * finish); a job that just finished is waited for too: its thread still saves it */
    for (;;) {
        struct hd_job *run = NULL;
        pthread_mutex_lock(&js->mu);
        for (j = js->head; j && !run; j = j->next) {
            pthread_mutex_lock(&j->mu);
            if (!j->exited) {
                run = j;
                j->refs++;
            }
            pthread_mutex_unlock(&j->mu);
        }
        pthread_mutex_unlock(&js->mu);
        if (!run)
            break;
        stop_wait(run);
        hd_job_unref(run);
    }
    for (j = js->head; j; j = next) {
        next = j->next;
        job_free(j);
    }
    if (js->db)
        sqlite3_close(js->db);
    pthread_mutex_destroy(&js->mu);
    pthread_mutex_destroy(&js->start_mu);
    free(js);
}

/* ---- /v1/jobs ---- */

static void start_end(struct hd_req *r, void *ctx, json_t *in)
{
    struct hd_jobs *js = ctx;
    json_t *out;
    const char *id, *kind, *bucket;
    struct hd_job *j;
    int rc;

    id = json_string_value(json_object_get(in, "id"));
    kind = json_string_value(json_object_get(in, "kind"));
    bucket = json_string_value(json_object_get(in, "bucket"));
    if (!json_is_object(in) || !id || !kind ||
        (json_object_get(in, "args") && !json_is_object(json_object_get(in, "args")))) {
        hd_resp_err_msg(r, HD_EBADARG,
                        "Expected {\"id\": ID, \"kind\": KIND, \"bucket\": B, \"args\": {...}}.");
        return;
    }
    if (js->admit &&
        (rc = js->admit(js->admit_arg, r, bucket ? bucket : "", json_object_get(in, "args"))) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    rc = hd_jobs_start(js, id, kind, bucket ? bucket : "", json_object_get(in, "args"));
    if (rc == HD_EBADARG) {
        hd_resp_err_msg(r, rc, "Unknown job kind or malformed id/bucket.");
    } else if (rc < 0) {
        hd_resp_err(r, rc);
    } else {
        pthread_mutex_lock(&js->mu);
        j = find_locked(js, id);
        if (j)
            j->refs++;
        pthread_mutex_unlock(&js->mu);
        out = j ? hd_job_to_json(j) : json_pack("{s:s}", "id", id);
        hd_job_unref(j);
        hd_resp_json(r, rc == HD_DECLINED ? 200 : 201, out);
    }
}

static struct hd_job *get_ref(struct hd_jobs *js, const char *id)
{
    struct hd_job *j;

    pthread_mutex_lock(&js->mu);
    j = find_locked(js, id);
    if (j)
        j->refs++;
    pthread_mutex_unlock(&js->mu);
    return j;
}

void hd_jobs_set_admit(struct hd_jobs *js, hd_jobs_admit_fn fn, void *arg)
{
    js->admit = fn;
    js->admit_arg = arg;
}

void hd_jobs_handle(struct hd_req *r, struct hd_jobs *js)
{
    const char *p = r->raw_path + strlen("/v1/jobs");
    struct hd_job *j;
    json_t *arr;

    r->api = HD_API_NATIVE;
    r->op = HD_OP_ADMIN;
    if (*p == '\0' || strcmp(p, "/") == 0) {
        if (strcmp(r->method, "GET") == 0) {
            arr = json_array();
            pthread_mutex_lock(&js->mu);
            for (j = js->head; j; j = j->next)
                json_array_append_new(arr, hd_job_to_json(j));
            pthread_mutex_unlock(&js->mu);
            hd_resp_json(r, 200, json_pack("{s:o}", "jobs", arr));
        } else if (strcmp(r->method, "POST") == 0) {
            hd_req_read_json(r, BODY_MAX, start_end, js, NULL);
        } else {
            hd_resp_err(r, HD_EMETHOD);
        }
        return;
    }
    if (*p != '/' || strchr(p + 1, '/')) {
        hd_resp_err(r, HD_ENOTFOUND);
        return;
    }
    j = get_ref(js, p + 1);
    if (!j) {
        hd_resp_err(r, HD_ENOSUCHJOB);
        return;
    }
    if (strcmp(r->method, "GET") == 0) {
        hd_resp_json(r, 200, hd_job_to_json(j));
    } else if (strcmp(r->method, "DELETE") == 0) {
        atomic_store(&j->stop, 1);
        hd_resp_json(r, 200, hd_job_to_json(j));
    } else {
        hd_resp_err(r, HD_EMETHOD);
    }
    hd_job_unref(j);
}
