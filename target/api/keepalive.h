/* keepalive: a request answered 200 before its work is done (a CompleteMultipartUpload of a
 * large object, as AWS answers it) parks on the pool call doing that work, and every ms
 * (s3.complete_keepalive_ms) without a byte sent it is resumed (hd_acall_nudge), so that its
 * body can send a space. That keeps clients' read timeouts and the proxy relay's low-speed limit
 * (60 s each) from cutting a request that is only slow. One thread for every such request. */
#ifndef HD_TARGET_API_KEEPALIVE_H
#define HD_TARGET_API_KEEPALIVE_H

#include "common/buf.h"
#include "common/http.h"
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

/* The body of a keep-alive answer (HTTP worker): the XML declaration, a space whenever the
 * interval passed while the job runs (parked on it in between), then the document that
 * final() appends to out once the job has ended (the result, or the <Error> a status line
 * would have carried). Zeroed, then hd_ka_body_start when the answer is queued. */
struct hd_ka_body {
    struct hd_ka *ka; /* registered for the job (hd_ka_start): ended here once it ended */
    struct hd_acall *job;
    int state; /* 0: not answering this way; the declaration next; waiting; the document */
    struct hd_buf out;
    size_t off;
};
typedef void (*hd_ka_final_fn)(struct hd_req *r, void *arg, struct hd_buf *out);
/* Takes k (job's, registered) and answers r 200 with this body: 0, or an error (k ended). */
int hd_ka_body_start(struct hd_ka_body *b, struct hd_req *r, struct hd_acall *job, struct hd_ka *k,
                     hd_body_reader_fn read, void *cls);
/* The reader's work (read, above, calls it with its own final and arg). */
long hd_ka_body_read(struct hd_ka_body *b, struct hd_req *r, hd_ka_final_fn final, void *arg,
                     char *buf, size_t max);
/* Whether the answer is this body. */
int hd_ka_body_started(const struct hd_ka_body *b);
/* Ends the registration (before the job goes) and frees the document. */
void hd_ka_body_cleanup(struct hd_ka_body *b);

#endif
