/* ticker: a libuv loop thread with a periodic timer and a wake-up. See ticker.h. */
#include "common/ticker.h"

#include <signal.h>
#include <stdio.h>

#include "common/http.h"
#include "common/log.h"

static void beat(struct hd_ticker *t)
{
    atomic_store(&t->beat_ns, hd_now_ns());
}

static void on_tick(uv_timer_t *h)
{
    struct hd_ticker *t = h->data;

    if (!atomic_load(&t->stopping)) {
        beat(t);
        t->tick(t->arg);
        beat(t);
    }
}

static void on_close(uv_handle_t *h)
{
    (void)h;
}

static void on_async(uv_async_t *a)
{
    struct hd_ticker *t = a->data;

    if (atomic_load(&t->stopping)) {
        uv_timer_stop(&t->timer);
        uv_close((uv_handle_t *)&t->timer, on_close);
        uv_close((uv_handle_t *)&t->async, on_close);
        return;
    }
    beat(t);
    if (t->wake)
        t->wake(t->arg);
    else
        t->tick(t->arg);
    beat(t);
}

static void *ticker_main(void *arg)
{
    struct hd_ticker *t = arg;
    sigset_t all;

    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    pthread_setname_np(pthread_self(), t->name);
    uv_run(&t->loop, UV_RUN_DEFAULT);
    return NULL;
}

int hd_ticker_start(struct hd_ticker *t, const char *name, uint64_t period_ms,
                    void (*tick)(void *arg), void (*wake)(void *arg), void *arg)
{
    int rc;

    if (atomic_load(&t->running))
        return 0;
    t->tick = tick;
    t->wake = wake;
    t->arg = arg;
    snprintf(t->name, sizeof(t->name), "%s", name);
    atomic_store(&t->stopping, 0);
    beat(t);
    if ((rc = uv_loop_init(&t->loop)) < 0)
        return rc;
    uv_timer_init(&t->loop, &t->timer);
    uv_async_init(&t->loop, &t->async, on_async);
    t->timer.data = t;
    t->async.data = t;
    uv_timer_start(&t->timer, on_tick, 0, period_ms);
    if ((rc = pthread_create(&t->thr, NULL, ticker_main, t)) != 0) {
        uv_close((uv_handle_t *)&t->timer, on_close);
        uv_close((uv_handle_t *)&t->async, on_close);
        uv_run(&t->loop, UV_RUN_DEFAULT);
        uv_loop_close(&t->loop);
        return -rc;
    }
    atomic_store(&t->running, 1);
    return 0;
}

void hd_ticker_wake(struct hd_ticker *t)
{
    if (atomic_load(&t->running) && !atomic_load(&t->stopping))
        uv_async_send(&t->async);
}

void hd_ticker_stop(struct hd_ticker *t)
{
    int rc;

    if (!atomic_load(&t->running))
        return;
    atomic_store(&t->stopping, 1);
    uv_async_send(&t->async);
    pthread_join(t->thr, NULL);
    if ((rc = uv_loop_close(&t->loop)) < 0) /* every handle closed, or it is a leak */
        HD_LOG(HD_ERROR, NULL, "ticker: the loop closed with handles open: %s", uv_strerror(rc));
    atomic_store(&t->running, 0);
}

uint64_t hd_ticker_silent_ns(const struct hd_ticker *t)
{
    uint64_t now = hd_now_ns(), b = atomic_load(&t->beat_ns);

    return atomic_load(&t->running) && now > b ? now - b : 0;
}

int hd_ticker_stopping(const struct hd_ticker *t)
{
    return atomic_load(&t->stopping);
}
