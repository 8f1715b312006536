/* hpipe: MD5 on a pool thread beside a put's writes. See hpipe.h. */
#include "target/store/hpipe.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#define NB (HD_HPIPE_BUFS)

struct hd_hpipe {
    struct hd_pool *pool;
    struct hd_md5 *md5;
    size_t bufsize;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a buffer came back, or the task stopped */
    char *q[NB];       /* pushed, not hashed yet: ring from qh */
    size_t qlen[NB];
    int qh, qn;
    char *freeb[NB]; /* hashed, free to fill */
    int nfree;
    char *all[NB]; /* every buffer the pipe knows, for hd_hpipe_free */
    int nall;
    int running; /* a task is queued or hashing */
    struct hd_task task;
};

/* Hashes what is queued, a few buffers per turn so that one fast writer does not keep a
 * pool thread from the other puts' pipes. */
static void hpipe_task(struct hd_task *task)
{
    struct hd_hpipe *h = (struct hd_hpipe *)((char *)task - offsetof(struct hd_hpipe, task));
    int turn = 0;

    pthread_mutex_lock(&h->mu);
    while (h->qn > 0 && turn < NB) {
        char *b = h->q[h->qh];
        size_t n = h->qlen[h->qh];
        pthread_mutex_unlock(&h->mu);
        hd_md5_update(h->md5, b, n);
        pthread_mutex_lock(&h->mu);
        h->qh = (h->qh + 1) % NB;
        h->qn--;
        h->freeb[h->nfree++] = b;
        turn++;
        pthread_cond_broadcast(&h->cv);
    }
    if (h->qn > 0 && hd_pool_submit(h->pool, &h->task) == 0) {
        pthread_mutex_unlock(&h->mu); /* queued again behind the other pipes */
        return;
    }
    while (h->qn > 0) { /* the pool is stopping: finish here */
        hd_md5_update(h->md5, h->q[h->qh], h->qlen[h->qh]);
        h->freeb[h->nfree++] = h->q[h->qh];
        h->qh = (h->qh + 1) % NB;
        h->qn--;
    }
    h->running = 0;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu); /* h may be freed from here on */
}

int hd_hpipe_new(struct hd_pool *pool, struct hd_md5 *md5, char *first, size_t bufsize,
                 struct hd_hpipe **out)
{
    struct hd_hpipe *h = calloc(1, sizeof(*h));

    if (!h)
        return -ENOMEM;
    h->pool = pool;
    h->md5 = md5;
    h->bufsize = bufsize;
    h->all[h->nall++] = first;
    h->task.run = hpipe_task;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    *out = h;
    return 0;
}

char *hd_hpipe_push(struct hd_hpipe *h, char *buf, size_t len)
{
    char *next = NULL;

    pthread_mutex_lock(&h->mu);
    if (len > 0) {
        h->q[(h->qh + h->qn) % NB] = buf;
        h->qlen[(h->qh + h->qn) % NB] = len;
        h->qn++;
    } else {
        h->freeb[h->nfree++] = buf;
    }
    if (h->qn > 0 && !h->running) {
        h->running = 1;
        if (hd_pool_submit(h->pool, &h->task) < 0) {
            h->running = 0; /* stopping: hash here */
            while (h->qn > 0) {
                hd_md5_update(h->md5, h->q[h->qh], h->qlen[h->qh]);
                h->freeb[h->nfree++] = h->q[h->qh];
                h->qh = (h->qh + 1) % NB;
                h->qn--;
            }
        }
    }
    if (h->nfree == 0 && h->nall < NB) {
        next = malloc(h->bufsize);
        if (next)
            h->all[h->nall++] = next;
    }
    while (!next && h->nfree == 0 && h->running)
        pthread_cond_wait(&h->cv, &h->mu);
    if (!next && h->nfree > 0)
        next = h->freeb[--h->nfree];
    pthread_mutex_unlock(&h->mu);
    return next;
}

void hd_hpipe_drain(struct hd_hpipe *h)
{
    pthread_mutex_lock(&h->mu);
    while (h->running)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
}

void hd_hpipe_free(struct hd_hpipe *h, char *keep)
{
    if (!h)
        return;
    hd_hpipe_drain(h);
    for (int i = 0; i < h->nall; i++)
        if (h->all[i] != keep)
            free(h->all[i]);
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    free(h);
}
