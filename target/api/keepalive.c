/* keepalive: the thread that nudges parked keep-alive answers (keepalive.h). */
#include "target/api/keepalive.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

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
