/* ring: a byte FIFO (circular buffer) for streaming between two threads, e.g. a transfer
 * thread and an HTTP worker (the relay, batch GET). It starts at a small capacity and grows,
 * doubling, up to its maximum only when data backs up, so a short stream costs a small
 * buffer. Not locked: callers hold their own mutex. */
#ifndef HD_RING_H
#define HD_RING_H

#include <stddef.h>

struct hd_ring {
    char *buf;
    size_t cap, max, head, len;
};

/* Allocates cap bytes (grows up to max). 0 or -ENOMEM. A zeroed struct is a valid empty ring
 * that holds nothing. */
int hd_ring_init(struct hd_ring *g, size_t cap, size_t max);
void hd_ring_cleanup(struct hd_ring *g);
/* Copies in as much of p[0..n) as fits (growing first if the maximum allows); returns the
 * count taken. */
size_t hd_ring_put(struct hd_ring *g, const void *p, size_t n);
/* Grows the ring, if its maximum allows, until want more bytes fit; returns the free space
 * (cap - len), which is below want when the maximum (or memory) does not allow it. Lets a
 * writer that must take all or nothing (a libcurl write callback) decide before copying. */
size_t hd_ring_room(struct hd_ring *g, size_t want);
/* Copies out up to n bytes; returns the count. */
size_t hd_ring_get(struct hd_ring *g, void *p, size_t n);

#endif
