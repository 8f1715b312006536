/* pool: threads for blocking work and requests parked while they run. See pool.h. */
#include "common/pool.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/errors.h"
#include "common/log.h"

#define ACALL_MAGIC 0x6163616cu /* "acal" */

struct hd_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;   /* work queued, or stopping */
    pthread_cond_t done; /* a thread exited */
    struct hd_task *qh, *qt;
    int nthreads, nidle, queued, maxthreads;
    atomic_int stopping;
};

int hd_pool_new(int maxthreads, struct hd_pool **out)
{
    struct hd_pool *p = calloc(1, sizeof(*p));

    if (!p)
        return -ENOMEM;
    p->maxthreads = maxthreads > 0 ? maxthreads : 1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    pthread_cond_init(&p->done, NULL);
    *out = p;
    return 0;
}

static void *pool_main(void *arg)
{
    struct hd_pool *p = arg;

    pthread_mutex_lock(&p->mu);
    for (;;) {
        struct hd_task *task;
        p->nidle++;
        while (!p->qh && !atomic_load(&p->stopping))
            pthread_cond_wait(&p->cv, &p->mu);
        p->nidle--;
        if (!p->qh)
            break; /* stopping and nothing left */
        task = p->qh;
        p->qh = task->next;
        if (!p->qh)
            p->qt = NULL;
        p->queued--;
        pthread_mutex_unlock(&p->mu);
        task->run(task);
        pthread_mutex_lock(&p->mu);
    }
    p->nthreads--;
    pthread_cond_broadcast(&p->done);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int hd_pool_submit(struct hd_pool *p, struct hd_task *task)
{
    pthread_attr_t at;
    pthread_t th;
    int rc = 0;

    pthread_mutex_lock(&p->mu);
    if (atomic_load(&p->stopping)) {
        rc = HD_EUNAVAIL;
        goto out;
    }
    if (p->nidle <= p->queued && p->nthreads < p->maxthreads) {
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&at, 512u * 1024);
        if (pthread_create(&th, &at, pool_main, p) == 0)
            p->nthreads++;
        pthread_attr_destroy(&at);
        if (p->nthreads == 0) {
            rc = HD_EUNAVAIL;
            goto out;
        }
    }
    task->next = NULL;
    if (p->qt)
        p->qt->next = task;
    else
        p->qh = task;
    p->qt = task;
    p->queued++;
    pthread_cond_signal(&p->cv);
out:
    pthread_mutex_unlock(&p->mu);
    return rc;
}

int hd_pool_stopping(const struct hd_pool *p)
{
    return atomic_load(&p->stopping);
}

void hd_pool_stop(struct hd_pool *p)
{
    if (!p)
        return;
    atomic_store(&p->stopping, 1);
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

void hd_pool_free(struct hd_pool *p)
{
    if (!p)
        return;
    hd_pool_stop(p);
    pthread_mutex_lock(&p->mu);
    while (p->nthreads > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    pthread_cond_destroy(&p->done);
    free(p);
}

/* ---- parked requests ---- */

static void acall_unref(struct hd_acall *a)
{
    int last;

    pthread_mutex_lock(&a->mu);
    last = --a->refs == 0;
    pthread_mutex_unlock(&a->mu);
    if (!last)
        return;
    if (a->arg_free)
        a->arg_free(a->arg);
    pthread_mutex_destroy(&a->mu);
    a->magic = 0;
    free(a);
}

static void acall_finish(struct hd_acall *a)
{
    pthread_mutex_lock(&a->mu);
    a->finished = 1;
    if (a->r && a->waiting) {
        a->waiting = 0;
        hd_req_resume(a->r);
    }
    pthread_mutex_unlock(&a->mu);
}

static void acall_task(struct hd_task *task)
{
    struct hd_acall *a = (struct hd_acall *)((char *)task - offsetof(struct hd_acall, task));

    if (a->magic == ACALL_MAGIC) {
        hd_log_set_context(a->rid);
        a->run(a);
        hd_log_set_context(NULL);
    }
    acall_finish(a);
    acall_unref(a); /* the task's reference */
}

struct hd_acall *hd_acall_new(struct hd_pool *p, hd_acall_fn run, void *arg,
                              void (*arg_free)(void *arg))
{
    struct hd_acall *a = calloc(1, sizeof(*a));

    if (!a) {
        if (arg_free)
            arg_free(arg);
        return NULL;
    }
    a->magic = ACALL_MAGIC;
    a->pool = p;
    a->run = run;
    a->arg = arg;
    a->arg_free = arg_free;
    a->refs = 1; /* the request's (released by hd_acall_release) */
    a->task.run = acall_task;
    pthread_mutex_init(&a->mu, NULL);
    return a;
}

int hd_acall_submit(struct hd_acall *a, struct hd_req *r)
{
    int rc;

    a->r = r;
    snprintf(a->rid, sizeof(a->rid), "%s", r->id);
    a->refs++; /* the task's */
    if ((rc = hd_pool_submit(a->pool, &a->task)) < 0) {
        a->refs--;
        a->rc = rc;
        snprintf(a->msg, sizeof(a->msg), "The node is shutting down.");
        a->finished = 1;
    }
    return rc;
}

int hd_acall_park(struct hd_acall *a, struct hd_req *r)
{
    int pending;

    pthread_mutex_lock(&a->mu);
    pending = !a->finished;
    if (pending) {
        a->waiting = 1;
        hd_req_suspend(r);
    }
    pthread_mutex_unlock(&a->mu);
    return pending ? HD_AGAIN : HD_OK;
}

void hd_acall_release(struct hd_acall *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    a->r = NULL;
    a->waiting = 0;
    pthread_mutex_unlock(&a->mu);
    acall_unref(a);
}

int hd_acall_nudge(struct hd_acall *a)
{
    int nudged;

    pthread_mutex_lock(&a->mu);
    nudged = a->r && a->waiting && !a->finished;
    if (nudged) {
        a->waiting = 0;
        hd_req_resume(a->r);
    }
    pthread_mutex_unlock(&a->mu);
    return nudged;
}

int hd_acall_finished(struct hd_acall *a)
{
    int f;

    pthread_mutex_lock(&a->mu);
    f = a->finished;
    pthread_mutex_unlock(&a->mu);
    return f;
}

static void acall_end(struct hd_req *r)
{
    struct hd_acall *a = r->data;

    if (!a || a->magic != ACALL_MAGIC) {
        hd_resp_err(r, HD_EINTERNAL);
        return;
    }
    if (hd_acall_park(a, r) == HD_AGAIN)
        return;
    a->done(r, a);
}

static void acall_done(struct hd_req *r)
{
    struct hd_acall *a = r->data;

    if (a && a->magic == ACALL_MAGIC)
        hd_acall_release(a);
    r->data = NULL;
}

void hd_acall_request(struct hd_req *r, struct hd_pool *p, hd_acall_fn run, hd_acall_done_fn done,
                      void *arg, void (*arg_free)(void *arg))
{
    struct hd_acall *a = hd_acall_new(p, run, arg, arg_free);

    if (!a) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    a->done = done;
    r->data = a;
    r->on_end = acall_end;
    r->on_done = acall_done;
    hd_acall_submit(a, r); /* a failure is answered by done() with a->rc */
}

/* ---- deferred requests ---- */

struct defer {
    struct hd_task task;
    pthread_mutex_t mu;
    int refs;         /* the task's and the request's */
    struct hd_req *r; /* NULL once the request went on (or ended) */
    void (*run)(void *arg);
    void *arg;
    void (*arg_free)(void *arg);
    char rid[17]; /* the request's id, the log context of run */
};

static void defer_unref(struct defer *d)
{
    int last;

    pthread_mutex_lock(&d->mu);
    last = --d->refs == 0;
    pthread_mutex_unlock(&d->mu);
    if (!last)
        return;
    if (d->arg_free)
        d->arg_free(d->arg);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

static void defer_task(struct hd_task *task)
{
    struct defer *d = (struct defer *)((char *)task - offsetof(struct defer, task));

    hd_log_set_context(d->rid);
    d->run(d->arg);
    hd_log_set_context(NULL);
    pthread_mutex_lock(&d->mu);
    if (d->r)
        hd_req_resume(d->r);
    pthread_mutex_unlock(&d->mu);
    defer_unref(d);
}

/* On the worker: the request goes on (or ends); the task must not touch it any more. */
static void defer_detach(struct hd_req *r)
{
    struct defer *d = r->defer_data;

    pthread_mutex_lock(&d->mu);
    d->r = NULL;
    pthread_mutex_unlock(&d->mu);
    defer_unref(d);
}

int hd_pool_defer(struct hd_pool *p, struct hd_req *r, void (*run)(void *arg), void *arg,
                  void (*arg_free)(void *arg))
{
    struct defer *d = calloc(1, sizeof(*d));

    if (!d) { /* go on without it */
        if (arg_free)
            arg_free(arg);
        return HD_DECLINED;
    }
    pthread_mutex_init(&d->mu, NULL);
    d->refs = 2;
    d->r = r;
    d->run = run;
    d->arg = arg;
    d->arg_free = arg_free;
    d->task.run = defer_task;
    snprintf(d->rid, sizeof(d->rid), "%s", r->id);
    pthread_mutex_lock(&d->mu); /* the task resumes r only once it is parked */
    hd_req_defer(r, defer_detach, d);
    if (hd_pool_submit(p, &d->task) < 0) {
        d->refs--;        /* no task */
        hd_req_resume(r); /* the handler runs again, deferred once: without it */
    }
    pthread_mutex_unlock(&d->mu);
    return HD_AGAIN;
}
