#include "common/ring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int hd_ring_init(struct hd_ring *g, size_t cap, size_t max)
{
    g->head = g->len = 0;
    g->cap = 0;
    g->max = max > cap ? max : cap;
    g->buf = malloc(cap ? cap : 1);
    if (!g->buf)
        return -ENOMEM;
    g->cap = cap;
    return 0;
}

void hd_ring_cleanup(struct hd_ring *g)
{
    free(g->buf);
    g->buf = NULL;
    g->cap = g->max = g->head = g->len = 0;
}

/* Makes room for want more bytes if the maximum allows (linearising the data). */
static void grow(struct hd_ring *g, size_t want)
{
    size_t cap = g->cap, first;
    char *nb;

    while (cap && cap < g->max && cap - g->len < want)
        cap *= 2;
    if (cap > g->max)
        cap = g->max;
    if (cap <= g->cap || !(nb = malloc(cap)))
        return; /* at the maximum, or no memory: the caller waits for the reader instead */
    first = g->cap - g->head < g->len ? g->cap - g->head : g->len;
    memcpy(nb, g->buf + g->head, first);
    memcpy(nb + first, g->buf, g->len - first);
    free(g->buf);
    g->buf = nb;
    g->cap = cap;
    g->head = 0;
}

size_t hd_ring_room(struct hd_ring *g, size_t want)
{
    if (g->cap - g->len < want)
        grow(g, want);
    return g->cap - g->len;
}

size_t hd_ring_put(struct hd_ring *g, const void *p, size_t n)
{
    size_t room, done = 0;

    if (g->cap - g->len < n)
        grow(g, n);
    room = g->cap - g->len;
    if (n > room)
        n = room;
    while (done < n) {
        size_t tail = (g->head + g->len) % g->cap;
        size_t chunk = g->cap - tail;
        if (chunk > n - done)
            chunk = n - done;
        memcpy(g->buf + tail, (const char *)p + done, chunk);
        g->len += chunk;
        done += chunk;
    }
    return n;
}

size_t hd_ring_get(struct hd_ring *g, void *p, size_t n)
{
    size_t done = 0;

    if (n > g->len)
        n = g->len;
    while (done < n) {
        size_t chunk = g->cap - g->head;
        if (chunk > n - done)
            chunk = n - done;
        memcpy((char *)p + done, g->buf + g->head, chunk);
        g->head = (g->head + chunk) % g->cap;
        g->len -= chunk;
        done += chunk;
    }
    return n;
}
