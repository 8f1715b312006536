/* pool: a pool of threads for blocking work (upstream calls, calls to other nodes), so that
 * HTTP workers never block on the network, and parked requests (struct hd_acall): a request
 * that needs such work suspends its connection and is resumed when a pool thread is done.
 *
 * Threads start on demand up to a maximum and stay; hd_pool_stop refuses new work and tells
 * running work to give up (hd_pool_stopping), hd_pool_free waits for every thread.
 * Thread rules per function below. */
#ifndef HD_POOL_H
#define HD_POOL_H

#include <pthread.h>

#include "common/http.h"

struct hd_pool;

int hd_pool_new(int maxthreads, struct hd_pool **out);
/* No new tasks from now on; tasks that poll hd_pool_stopping give up. NULL is a no-op. */
void hd_pool_stop(struct hd_pool *p);
/* Stops, waits for every thread (the queued tasks still run), frees. NULL is a no-op. */
void hd_pool_free(struct hd_pool *p);
int hd_pool_stopping(const struct hd_pool *p);

struct hd_task {
    void (*run)(struct hd_task *task); /* on a pool thread; owns the task from here */
    struct hd_task *next;
};
/* Queues task; HD_EUNAVAIL when stopping (run is then not called). Any thread. */
int hd_pool_submit(struct hd_pool *p, struct hd_task *task);

/* ---- requests parked while a pool thread works (HTTP worker side + pool side) ---- */

struct hd_acall;
typedef void (*hd_acall_fn)(struct hd_acall *a); /* pool thread: sets a->rc (and a->msg) */
/* HTTP worker, once run finished: answers r (a is released afterwards by on_done). */
typedef void (*hd_acall_done_fn)(struct hd_req *r, struct hd_acall *a);

struct hd_acall {
    uint32_t magic;
    struct hd_pool *pool;
    struct hd_task task;
    pthread_mutex_t mu;
    int refs;
    struct hd_req *r; /* NULL once the request is finished */
    int finished, waiting;
    hd_acall_fn run;
    hd_acall_done_fn done;
    void *arg;
    void (*arg_free)(void *arg);
    char rid[17]; /* the request's id, the log context of run */
    /* results, written by run */
    int rc;
    char msg[512];
};

/* A call whose run() goes on the pool; arg is freed with arg_free when the call is (also
 * when this fails: NULL). */
struct hd_acall *hd_acall_new(struct hd_pool *p, hd_acall_fn run, void *arg,
                              void (*arg_free)(void *arg));
/* Queues a for r. 0, or a negative code (a is then finished with that rc). */
int hd_acall_submit(struct hd_acall *a, struct hd_req *r);
/* From r's on_end: HD_AGAIN when run has not finished (r is suspended and on_end runs again
 * once it has), HD_OK when its results are there. */
int hd_acall_park(struct hd_acall *a, struct hd_req *r);
/* From r's on_done (or when done with a): detaches r and drops the request's reference. */
void hd_acall_release(struct hd_acall *a);
/* Resumes the request parked on a (hd_acall_park) before a has finished, so that it can send
 * something meanwhile (a keep-alive byte) and park again: 1, or 0 when none is parked. The
 * one resume of a park: either this or a's end. */
int hd_acall_nudge(struct hd_acall *a);
/* Whether a's run has ended (its rc is set). */
int hd_acall_finished(struct hd_acall *a);
/* The whole request is the call: installs r's on_end/on_done; done answers r. On failure to
 * start, answers r itself. */
void hd_acall_request(struct hd_req *r, struct hd_pool *p, hd_acall_fn run, hd_acall_done_fn done,
                      void *arg, void (*arg_free)(void *arg));

/* ---- requests deferred before dispatch (the role handler runs again afterwards) ---- */

/* Parks r (from its role handler, before anything was answered or installed) while run(arg)
 * runs on the pool; then the role handler runs again from the start, with r->deferrals > 0
 * (so a handler that defers on a condition should test it to avoid deferring again). arg
 * is freed with arg_free (NULL: not freed) when both are done. HD_AGAIN: the caller only
 * returns (when the pool cannot take it, r is resumed at once, without run); HD_DECLINED
 * when out of memory: the caller goes on without it. */
int hd_pool_defer(struct hd_pool *p, struct hd_req *r, void (*run)(void *arg), void *arg,
                  void (*arg_free)(void *arg));

#endif
