/* ticker: a thread of its own that runs a libuv loop with one periodic timer and a wake-up
 * (the membership loops of both roles: joins, heartbeats, failure detection, metasync; the
 * proxy's lease thread).
 * tick(arg) runs every period_ms (the first at once), wake(arg) after hd_ticker_wake; both on
 * the ticker's thread, never at the same time. Signals are blocked there: they belong to the
 * main thread. The thread carries the name given (top -H, gdb, /proc/PID/task/TID/comm). The
 * struct is embedded by its owner; zeroed it is "not started".
 * Liveness: hd_ticker_silent_ns tells another thread how long ago this one last began or ended
 * a tick or a wake-up; an idle ticker begins one every period, so a large value means the
 * thread is stuck (the proxy's lease thread watches its loop thread this way). */
#ifndef HD_TICKER_H
#define HD_TICKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <uv.h>

struct hd_ticker {
    uv_loop_t loop;
    uv_timer_t timer;
    uv_async_t async;
    pthread_t thr;
    atomic_int running;
    atomic_int stopping;
    _Atomic uint64_t beat_ns; /* hd_now_ns() when a tick or wake began or ended */
    char name[16];
    void (*tick)(void *arg);
    void (*wake)(void *arg); /* NULL: a wake-up only ticks early */
    void *arg;
};

/* 0 or a negative code (nothing started). name: the thread's name, up to 15 characters. */
int hd_ticker_start(struct hd_ticker *t, const char *name, uint64_t period_ms,
                    void (*tick)(void *arg), void (*wake)(void *arg), void *arg);
/* Any thread; a no-op when not running or stopping. */
void hd_ticker_wake(struct hd_ticker *t);
/* Stops the timer, joins the thread and closes the loop; a no-op when not running. */
void hd_ticker_stop(struct hd_ticker *t);
/* Nanoseconds since the ticker's thread last began or ended a tick or wake-up; 0 when it is
 * not running. Any thread. */
uint64_t hd_ticker_silent_ns(const struct hd_ticker *t);
/* Whether hd_ticker_stop has begun (tick and wake may check it to return early). */
int hd_ticker_stopping(const struct hd_ticker *t);

#endif
