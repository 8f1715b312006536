/* keepalive: a request answered 200 before its work is done (a CompleteMultipartUpload of a
 * large object, as AWS answers it) parks on the pool call doing that work, and every ms
 * (s3.complete_keepalive_ms) without a byte sent it is resumed (hd_acall_nudge), so that its
 * body can send a space. That keeps clients' read timeouts and the proxy relay's low-speed limit (60 s
 * each) from cutting a request that is only slow. One thread for every such request. */
#ifndef HD_TARGET_API_KEEPALIVE_H
#define HD_TARGET_API_KEEPALIVE_H

#include "common/pool.h"

struct hd_ka;

/* Registers a (alive until hd_ka_end), nudged every ms: NULL when out of memory. */
struct hd_ka *hd_ka_start(struct hd_acall *a, unsigned ms);
/* A byte of the body went out now. */
void hd_ka_sent(struct hd_ka *k);
/* Whether its ms passed since the last byte. */
int hd_ka_due(const struct hd_ka *k);
/* Unregisters and frees k (NULL: nothing); from its return the thread leaves a alone. */
void hd_ka_end(struct hd_ka *k);

#endif
