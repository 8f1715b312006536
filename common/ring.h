/* ring: a fixed-size byte FIFO (circular buffer) for streaming between two threads, e.g. a
 * transfer thread and an HTTP worker. Not locked: callers hold their own mutex. */
#ifndef HD_RING_H
#define HD_RING_H

#include <stddef.h>

struct hd_ring {
    char *buf;
    size_t cap, head, len;
};

/* Allocates cap bytes. 0 or -ENOMEM. A zeroed struct is a valid empty ring of capacity 0. */
int hd_ring_init(struct hd_ring *g, size_t cap);
void hd_ring_cleanup(struct hd_ring *g);
/* Copies in as much of p[0..n) as fits; returns the count taken. */
size_t hd_ring_put(struct hd_ring *g, const void *p, size_t n);
/* Copies out up to n bytes; returns the count. */
size_t hd_ring_get(struct hd_ring *g, void *p, size_t n);

#endif
