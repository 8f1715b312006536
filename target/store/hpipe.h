/* hpipe: the MD5 of a large put computed on a pool thread while the put goes on receiving and
 * writing (issue 14: receive, hash and write overlap instead of running in series).
 *
 * The writer fills a buffer, writes it to the temp file and hands it over (hd_hpipe_push);
 * a task on the store's hash pool feeds the buffers to the MD5 in order and gives them back.
 * At most HD_HPIPE_BUFS buffers exist per put, so a writer faster than MD5 waits for one
 * (bounded memory, natural back-pressure). Writer side: one thread at a time (the put's). */
#ifndef HD_STORE_HPIPE_H
#define HD_STORE_HPIPE_H

#include <stddef.h>

#include "common/cksum.h"
#include "common/pool.h"

#define HD_HPIPE_BUFS 4

struct hd_hpipe;

/* A pipe hashing into md5 (which the caller must not touch until hd_hpipe_drain) with
 * buffers of bufsize bytes. first is the writer's current buffer (becomes the pipe's). */
int hd_hpipe_new(struct hd_pool *pool, struct hd_md5 *md5, char *first, size_t bufsize,
                 struct hd_hpipe **out);
/* Hands buf[0..len) over to be hashed and returns the next buffer to fill (waits while every
 * buffer is in flight); NULL when out of memory, after hashing buf itself. */
char *hd_hpipe_push(struct hd_hpipe *h, char *buf, size_t len);
/* Waits until every pushed buffer is hashed: md5 is then the caller's again. */
void hd_hpipe_drain(struct hd_hpipe *h);
/* Drains, frees every buffer but `keep` (the writer's current one, or NULL), frees h. */
void hd_hpipe_free(struct hd_hpipe *h, char *keep);

#endif
