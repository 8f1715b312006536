/* batch: batch GET. One request (GET or POST /v1/batch, JSON body) names many objects and/or
 * members of tar objects; the answer is one tar stream holding them in request order. Shared
 * by proxies (entries fetched from their owners) and targets (local entries read from disk):
 * the role supplies a resolver that says where each entry's bytes are (common/tarstream.h).
 *
 * Body:
 *   {"entries": [{"bucket": "B", "name": "O", "archpath": "M", "as": "NAME"}, ...],
 *    "bucket": "B",                  default bucket of entries without one
 *    "continue_on_error": false}     true: a failed entry becomes a member "__404__/NAME"
 *                                    (missing) or "__error__/NAME" holding the message
 * Member names: "as" when given, else O, or O/M for an archive member.
 *
 * The stream is produced by a thread of its own (tarstream: window of parallel fetches,
 * bounded buffers) into a 256 KiB ring that the HTTP worker drains, parking the connection
 * while the ring is empty. A local member's data does not go through the ring: the thread
 * hands its file range over (tarstream's local op; up to 64 ahead) and the HTTP worker
 * preads it straight into the response after the member's header. The 200 is sent once the first
 * bytes exist, so a batch whose first entry fails (without continue_on_error) gets a plain error
 * answer; a later failure cuts the stream (no end-of-archive blocks: readers see a truncated tar).
 */
#ifndef HD_BATCH_H
#define HD_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/http.h"
#include "common/sigv4.h"
#include "common/smap.h"
#include "common/tarstream.h"

#define HD_BATCH_BODY_MAX (16u << 20)
#define HD_BATCH_MAX_ENTRIES 100000
#define HD_BATCH_RING (256u << 10)
#define HD_BATCH_MULTIPART_MAX (64u << 20) /* archive bytes of a non-streaming answer */

struct hd_batch_ent {
    const char *bucket; /* into the batch's JSON document */
    const char *name;
    const char *archpath; /* NULL: the whole object */
    const char *as;       /* member name in the output */
};

struct hd_batch {
    struct hd_batch_ent *e;
    size_t n;
    int continue_on_error;
    int fmt;   /* HD_ARCH_* (common/tarindex.h): "format" ("tar", "tar.gz", "tar.lz4",
                * "tar.zst", "zip"), or "gzip": true for "tar.gz" */
    void *doc; /* the parsed body (json_t), owning the strings */
};

/* Parses and validates a request body. 0 with *out (free with hd_batch_free), or HD_EBADARG
 * with the reason in msg. */
int hd_batch_parse(const char *body, size_t len, struct hd_batch **out, char *msg, size_t msglen);
/* The archive format (HD_ARCH_*) a batch body or a shard job's args name: "format" (a name,
 * hd_arch_fmt_parse), or "gzip": true for "tar.gz", a tar without either; -1 for an unknown
 * format or "gzip": true with another (HD_ARCH_FMT_MSG says so). "gzip" must be a boolean
 * (the caller checks). */
#define HD_ARCH_FMT_MSG                                                                            \
    "\"format\" must be one of \"tar\", \"tar.gz\", \"tar.lz4\", \"tar.zst\", \"zip\" (and "           \
    "\"tar.gz\" with \"gzip\": true)"
int hd_arch_fmt_json(const json_t *doc);
void hd_batch_free(struct hd_batch *b);

/* When the signature covered the payload (hex x-amz-content-sha256), checks it against the
 * body: 0 or HD_ESHA256MISMATCH. */
int hd_batch_check_payload(const struct hd_sigv4_auth *a, const char *body, size_t len);

/* Where entry e's bytes are (see struct hd_tar_src). Runs on the batch thread. */
typedef void (*hd_batch_resolve_fn)(void *ctx, const struct hd_batch_ent *e,
                                    struct hd_tar_src *src);

/* Entries fetched in groups (common/tarstream.h): the resolver may name a group in src
 * (src->group = g + 1) for an entry another node holds; group(ctx, g, req) then says how to
 * ask that node for all of the group's entries at once, and fallback fills src for one
 * entry the node did not answer (a plain GET). Both run on the batch thread. */
struct hd_batch_groups {
    int (*group)(void *ctx, size_t g, struct hd_tar_group *req);
    void (*fallback)(void *ctx, const struct hd_batch_ent *e, struct hd_tar_src *src);
};

/* Sub-batches (POST /v1/batch/sub on a target, docs/sharding.md): the entries each other node
 * owns, grouped by node in request order, HD_BATCH_SUB_MAX at most per group. */
#define HD_BATCH_SUB_MAX 128 /* each holds an open file on its owner while it streams */
struct hd_batch_group {
    char url[HD_NODE_URL_MAX]; /* the owner's */
    char id[HD_NODE_ID_MAX];   /* its id ("" when the caller signs by URL) */
    size_t *idx;               /* entries, in request order */
    size_t n;
};
struct hd_batch_plan {
    size_t *grp; /* per entry: its group + 1 (struct hd_tar_src's group), or 0 */
    struct hd_batch_group *g;
    size_t ng;
};
/* 0 or -ENOMEM (the plan is then empty: every entry resolved alone). */
int hd_batch_plan_init(struct hd_batch_plan *p, size_t n);
/* Entry i goes to the last group of the node at url (a new one when it is full). 0, or
 * -ENOMEM (i stays ungrouped). */
int hd_batch_plan_add(struct hd_batch_plan *p, const char *url, const char *id, size_t i);
void hd_batch_plan_cleanup(struct hd_batch_plan *p);
/* Group g's request without its signature: url "<owner>/v1/batch/sub", the body naming its
 * entries, n; sha gets the body's hex SHA-256 (to sign). 0, -EINVAL or -ENOMEM. */
int hd_batch_sub_req(const struct hd_batch *b, const struct hd_batch_plan *p, size_t g,
                     struct hd_tar_group *req, char sha[65]);

/* Answers r with the tar stream of b. Call from ready (the request's last callback). Takes b
 * and ctx (ctx_free(ctx) runs when the stream is over) whatever happens. */
void hd_batch_respond(struct hd_req *r, struct hd_batch *b, hd_batch_resolve_fn resolve, void *ctx,
                      void (*ctx_free)(void *ctx));
/* The same with groups (gops: static, not copied). */
void hd_batch_respond_groups(struct hd_req *r, struct hd_batch *b, hd_batch_resolve_fn resolve,
                             const struct hd_batch_groups *gops, void *ctx,
                             void (*ctx_free)(void *ctx));

/* The non-streaming answer of AIStore's GetBatch (strm: false): the archive is built in memory
 * (at most HD_BATCH_MULTIPART_MAX bytes, else the answer is 400 EntityTooLarge) and sent
 * as multipart/form-data: first a JSON part, meta(ctx, b, sizes, errs) (sizes[i]: bytes of
 * entry i's data, errs[i]: why entry i failed, or NULL), then an application/x-tar part.
 * Because nothing is sent before the archive is whole, any failure (a missing entry without
 * continue_on_error too) is a plain error answer. meta runs on an HTTP worker; it returns a
 * new JSON value (NULL: 500). Otherwise as hd_batch_respond_groups (gops may be NULL). */
typedef json_t *(*hd_batch_meta_fn)(void *ctx, const struct hd_batch *b, const uint64_t *sizes,
                                    char *const *errs);
void hd_batch_respond_multipart(struct hd_req *r, struct hd_batch *b, hd_batch_resolve_fn resolve,
                                const struct hd_batch_groups *gops, void *ctx,
                                void (*ctx_free)(void *ctx), hd_batch_meta_fn meta);

#endif
