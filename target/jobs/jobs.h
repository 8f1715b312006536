/* jobs: long-running work on a target (AIStore's "xactions"): rebalance, prefetch, evict,
 * shard creation... Each job runs on a thread of its own, reports progress (objects and
 * bytes done out of a total when one is known), keeps its first errors, and stops when asked.
 * Jobs are recorded in DATA/jobs.db: a job of a resumable kind that was running when the
 * target stopped starts again (same id and arguments) when it comes back; others are marked
 * aborted. A proxy starts the same job id on every target and merges their states
 * (proxy/jobs.c).
 *
 * Native API on the target (proxy-signed, or a key with write access to every bucket):
 *   POST   /v1/jobs      {"id","kind","bucket","args":{...}} -> 201 job (200 when running)
 *   GET    /v1/jobs      {"jobs":[job...]}
 *   GET    /v1/jobs/ID   job
 *   DELETE /v1/jobs/ID   asks the job to stop -> job */
#ifndef HD_TARGET_JOBS_H
#define HD_TARGET_JOBS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <jansson.h>

#include "common/http.h"

struct hd_jobs;

enum hd_job_state { HD_JOB_RUNNING, HD_JOB_DONE, HD_JOB_ABORTED, HD_JOB_FAILED };

#define HD_JOB_MAX_ERRORS 100

struct hd_job {
    char id[64];
    char kind[32];
    char bucket[64];
    json_t *args; /* read-only while the job runs */
    void *ctx;    /* the context its kind was registered with */
    struct hd_jobs *jobs;
    atomic_int stop; /* set by hd_job_stop: the run function returns soon after */

    pthread_mutex_t mu; /* guards everything below */
    enum hd_job_state state;
    int64_t started_ms, finished_ms;
    uint64_t objs, bytes;             /* done */
    uint64_t total_objs, total_bytes; /* to do; 0 = not known */
    uint64_t nerr;
    json_t *errors; /* array of the first HD_JOB_MAX_ERRORS messages */
    json_t *extra;  /* kind-specific counters shown as they are */
    char *result;   /* final message, e.g. why it failed */

    pthread_t thr;
    pthread_cond_t cv; /* with mu: signalled when the thread is done */
    int exited;
    int refs; /* guarded by the registry lock */
    struct hd_job *next;
};

/* A job kind: run returns 0 (done; errors may have been recorded), HD_ECANCELED after a stop
 * (aborted), or another negative code (failed). */
typedef int (*hd_job_run_fn)(struct hd_job *j, void *ctx);

/* Progress and errors; any thread. /metrics shows running jobs' progress (hoard_job_objects,
 * hoard_job_bytes) and hoard_jobs_running by kind. */
void hd_job_add(struct hd_job *j, uint64_t objs, uint64_t bytes);
void hd_job_set_total(struct hd_job *j, uint64_t objs, uint64_t bytes);
void hd_job_set_extra(struct hd_job *j, const char *key, uint64_t v);
void hd_job_error(struct hd_job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int hd_job_stopped(struct hd_job *j)
{
    return atomic_load(&j->stop);
}

/* The registry; opens (creates) DATA/jobs.db. The layers above register their kinds
 * (hd_jobs_register) before hd_jobs_resume, which restarts interrupted resumable jobs: call it
 * once the target can serve. hd_jobs_free stops every job and waits for it. */
int hd_jobs_new(const char *data_dir, struct hd_jobs **out);
/* Kind flags: restarted after a target restart; a new one stops the running one. */
#define HD_JOB_RESUMABLE 1
#define HD_JOB_EXCLUSIVE 2
/* Makes `kind` startable: run(j, ctx) runs it on the job's thread. Before any start or resume
 * (the table is read without a lock). 0 or HD_EBADARG (full, too long or known). */
int hd_jobs_register(struct hd_jobs *js, const char *kind, hd_job_run_fn run, void *ctx, int flags);
void hd_jobs_resume(struct hd_jobs *js);
void hd_jobs_free(struct hd_jobs *js);

/* Starts job `id` of `kind` (args: borrowed JSON object or NULL). A job with that id that is
 * still running is left alone (HD_DECLINED); a finished one is replaced. Starting a kind that
 * is exclusive (rebalance) first stops the running one. 0, HD_DECLINED or HD_EBADARG (unknown
 * kind). */
int hd_jobs_start(struct hd_jobs *js, const char *id, const char *kind, const char *bucket,
                  json_t *args);
/* A new reference to the running job of `kind`, or NULL; release with hd_job_unref. */
struct hd_job *hd_jobs_running(struct hd_jobs *js, const char *kind);
void hd_job_unref(struct hd_job *j);
json_t *hd_job_to_json(struct hd_job *j);

/* /v1/jobs[/ID] (after auth). */
/* A check of a client's POST /v1/jobs before the job starts (bucket "" when none): 0, or the
 * code to answer with. */
typedef int (*hd_jobs_admit_fn)(void *arg, struct hd_req *r, const char *bucket,
                                const json_t *args);
void hd_jobs_set_admit(struct hd_jobs *js, hd_jobs_admit_fn fn, void *arg);
void hd_jobs_handle(struct hd_req *r, struct hd_jobs *js);

#endif
