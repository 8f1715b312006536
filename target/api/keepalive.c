/* keepalive: the thread that nudges parked keep-alive answers (keepalive.h). */
#include "target/api/keepalive.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/errors.h"
#include "common/http.h"

struct hd_ka {
    struct hd_ka *prev, *next; /* under ka_mu */
    struct hd_acall *a;
    uint64_t every_ns;
    _Atomic uint64_t last_ns; /* the last byte sent */
};

static pthread_mutex_t ka_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ka_cv; /* a new entry (CLOCK_MONOTONIC) */
static struct hd_ka *ka_list;
static pthread_once_t ka_once = PTHREAD_ONCE_INIT;

/* Sleeps until the next entry may be due: half the shortest interval, a second when there
 * is none, and wakes when an entry is added (a slow copy's first nudge comes one interval
 * after its start, not after the sleep in progress). */
static void *ka_main(void *arg)
{
    uint64_t tick;

    (void)arg;

    pthread_mutex_lock(&ka_mu);
    for (;;) {
        struct timespec ts;
        struct hd_ka *k;
        uint64_t now = hd_now_ns();

        tick = 1000000000ull;
        for (k = ka_list; k; k = k->next) {
            uint64_t since = now - atomic_load(&k->last_ns);
            if (since >= k->every_ns)
                hd_acall_nudge(k->a);
            else if (k->every_ns - since < tick)
                tick = k->every_ns - since;
            if (k->every_ns / 2 < tick)
                tick = k->every_ns / 2;
        }
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += (time_t)(tick / 1000000000ull);
        ts.tv_nsec += (long)(tick % 1000000000ull);
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&ka_cv, &ka_mu, &ts);
    }
    pthread_mutex_unlock(&ka_mu);
    return NULL;
}

static void ka_thread(void)
{
    pthread_condattr_t ca;
    pthread_attr_t at;
    pthread_t th;

    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ka_cv, &ca);
    pthread_condattr_destroy(&ca);
    /* without it, answers still come, only without keep-alive bytes */
    if (pthread_attr_init(&at) == 0) {
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        pthread_create(&th, &at, ka_main, NULL);
        pthread_attr_destroy(&at);
    }
}

struct hd_ka *hd_ka_start(struct hd_acall *a, unsigned ms)
{
    struct hd_ka *k = calloc(1, sizeof(*k));

    if (!k)
        return NULL;
    pthread_once(&ka_once, ka_thread);
    k->a = a;
    k->every_ns = (uint64_t)(ms ? ms : 1) * 1000000ull;
    atomic_store(&k->last_ns, hd_now_ns());
    pthread_mutex_lock(&ka_mu);
    k->next = ka_list;
    if (ka_list)
        ka_list->prev = k;
    ka_list = k;
    pthread_cond_signal(&ka_cv);
    pthread_mutex_unlock(&ka_mu);
    return k;
}

void hd_ka_sent(struct hd_ka *k)
{
    atomic_store(&k->last_ns, hd_now_ns());
}

int hd_ka_due(const struct hd_ka *k)
{
    return hd_now_ns() - atomic_load(&k->last_ns) >= k->every_ns;
}

void hd_ka_end(struct hd_ka *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&ka_mu);
    if (k->prev)
        k->prev->next = k->next;
    else
        ka_list = k->next;
    if (k->next)
        k->next->prev = k->prev;
    pthread_mutex_unlock(&ka_mu);
    free(k);
}

enum { KB_OFF, KB_DECL, KB_WAIT, KB_FINAL };

int hd_ka_body_start(struct hd_ka_body *b, struct hd_req *r, struct hd_acall *job, struct hd_ka *k,
                     hd_body_reader_fn read, void *cls)
{
    int rc;

    b->ka = k;
    b->job = job;
    b->state = KB_DECL;
    if ((rc = hd_resp_header(r, "Content-Type", "application/xml")) < 0 ||
        (rc = hd_resp_stream(r, 200, UINT64_MAX, read, cls, NULL)) < 0) {
        hd_ka_end(b->ka);
        b->ka = NULL;
        b->state = KB_OFF;
        return rc;
    }
    return 0;
}

int hd_ka_body_started(const struct hd_ka_body *b)
{
    return b->state != KB_OFF;
}

long hd_ka_body_read(struct hd_ka_body *b, struct hd_req *r, hd_ka_final_fn final, void *arg,
                     char *buf, size_t max)
{
    static const char decl[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    size_t n;

    if (max < sizeof(decl))
        return HD_STREAM_ERROR;
    if (b->state == KB_DECL) {
        memcpy(buf, decl, sizeof(decl) - 1);
        b->state = KB_WAIT;
        hd_ka_sent(b->ka);
        return (long)(sizeof(decl) - 1);
    }
    if (b->state == KB_WAIT) {
        if (!hd_acall_finished(b->job)) {
            if (hd_ka_due(b->ka)) {
                buf[0] = ' ';
                hd_ka_sent(b->ka);
                return 1;
            }
            if (hd_acall_park(b->job, r) == HD_AGAIN)
                return 0; /* resumed by the job's end, or by the keep-alive thread */
        }
        hd_ka_end(b->ka); /* before the job goes */
        b->ka = NULL;
        final(r, arg, &b->out);
        b->off = 0;
        b->state = KB_FINAL;
    }
    if (b->out.oom)
        return HD_STREAM_ERROR;
    if (b->off >= b->out.len)
        return HD_STREAM_END;
    n = b->out.len - b->off < max ? b->out.len - b->off : max;
    memcpy(buf, b->out.data + b->off, n);
    b->off += n;
    return (long)n;
}

void hd_ka_body_cleanup(struct hd_ka_body *b)
{
    hd_ka_end(b->ka);
    b->ka = NULL;
    hd_buf_cleanup(&b->out);
}
