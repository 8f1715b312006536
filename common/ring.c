#include "common/ring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int hd_ring_init(struct hd_ring *g, size_t cap)
{
    g->head = g->len = 0;
    g->cap = 0;
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
    g->cap = g->head = g->len = 0;
}

size_t hd_ring_put(struct hd_ring *g, const void *p, size_t n)
{
    size_t room = g->cap - g->len, done = 0;

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
