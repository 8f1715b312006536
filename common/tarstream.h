/* tarstream: writes one tar archive of entries, in the order given, whose bytes come from
 * local files or from other hoard nodes over HTTP (plain GETs, so they take the node's normal
 * object path). Up to `window` entries are in flight at once on one libcurl multi handle
 * (keep-alive connections), each into a buffer of at most `entry_buf` bytes (a full buffer
 * pauses its transfer); the head entry streams into the archive as it arrives. So memory
 * stays near window x entry_buf whatever the entry sizes, and the order is kept. The archive
 * (libarchive, pax-restricted) goes to a sink that may block for back-pressure.
 *
 * Entries may also come in groups: one POST to another node answers many entries at once (a
 * group answer, below), so a batch's 50 samples on another target cost one request instead
 * of 50. Each group streams into its own buffer of `entry_buf` bytes (paused when full) while
 * the entries before its next one are written; its records are taken in entry order.
 *
 * Used by shard jobs (sink: a put session) and batch GET (sink: the response ring). Runs on
 * the calling thread, which it blocks: a job or batch thread, never an HTTP worker. */
#ifndef HD_TARSTREAM_H
#define HD_TARSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "common/http.h"

/* Where entry i's bytes come from, filled by the resolve callback. Exactly one of: a local
 * file range (fd >= 0; the engine closes fd), a URL to GET (malloc'd, with extra request
 * headers in hdrs, each "Name: value", malloc'd array of malloc'd strings; the engine frees
 * all), the next record of a group (group = g + 1), or a failure (err < 0 with msg). */
struct hd_tar_src {
    int fd;
    uint64_t off, len;
    int64_t mtime; /* seconds; 0: now (remote entries use Last-Modified) */
    char *url;
    char **hdrs;
    size_t nhdrs;
    size_t group; /* > 0: the next record of group `group - 1` (ops->group) */
    int err;
    char msg[300];
};

/* A group's request, filled by ops->group: a POST of body to url with extra headers hdrs
 * (all malloc'd; the engine frees them), answering n records. */
struct hd_tar_group {
    char *url;
    char **hdrs;
    size_t nhdrs;
    char *body;
    size_t blen;
    size_t n;
};

/* A group answer (200, Content-Length known) is one index line, a JSON array of n records
 * and "\n", then the data records' bytes back to back, in order. Record kinds: */
enum hd_grec_kind {
    HD_GREC_DATA,  /* {"s": size, "t": mtime seconds}: size bytes follow */
    HD_GREC_ERR,   /* {"e": project code (< 0), "m": message}: the entry failed there */
    HD_GREC_FETCH, /* {"f": 1}: not held there: fetch the entry alone (ops->fallback) */
};
struct hd_tar_grec {
    enum hd_grec_kind kind;
    uint64_t size;
    int64_t mtime;
    int err;
    char *msg; /* HD_GREC_ERR: malloc'd */
};
/* Appends the index line of recs[0..n) to out. 0 or -ENOMEM. */
struct hd_buf;
int hd_tarstream_group_index(const struct hd_tar_grec *recs, size_t n, struct hd_buf *out);
/* Parses an index line (without its "\n") of exactly n records: 0 with *recs (free with
 * hd_tarstream_grecs_free), or HD_EBADARG. */
int hd_tarstream_group_parse(const char *line, size_t len, size_t n, struct hd_tar_grec **recs);
void hd_tarstream_grecs_free(struct hd_tar_grec *recs, size_t n);

struct hd_tarstream_ops {
    /* Fills src for entry i (it arrives with fd = -1, url = NULL, err = 0). Called in entry
     * order, up to `window` entries ahead of the one being written. */
    void (*resolve)(void *ctx, size_t i, struct hd_tar_src *src);
    /* The member name of entry i in the archive. */
    const char *(*name)(void *ctx, size_t i);
    /* Archive bytes out. May block. 0, or a negative code to abort. */
    int (*sink)(void *ctx, const void *buf, size_t n);
    /* Entry i failed before any of its bytes were written (missing object, node error).
     * Return 0 to record it in the archive and go on (a member "__404__/NAME" for a missing
     * entry, "__error__/NAME" otherwise, holding the message), or a negative code to stop
     * (the run returns it, msg set). NULL: always stop. */
    int (*failed)(void *ctx, size_t i, int code, const char *msg);
    /* Entry i is in the archive with `bytes` of data. May be NULL. */
    void (*written)(void *ctx, size_t i, uint64_t bytes);
    /* Polled between steps: non-zero stops the run with -ECANCELED. May be NULL. */
    int (*stopped)(void *ctx);
    /* Group g's request (see struct hd_tar_group), asked once, when its first entry is
     * resolved: 0, or a negative code (its entries then go through fallback). NULL when
     * resolve never names a group. */
    int (*group)(void *ctx, size_t g, struct hd_tar_group *req);
    /* Entry i, named in a group, must be fetched alone (the group's node answered "fetch" for
     * it, or the group's request failed before its index): fills src as resolve does, never
     * with a group. */
    void (*fallback)(void *ctx, size_t i, struct hd_tar_src *src);
    /* Local entry i's data by reference (batch GET: the HTTP worker preads it straight into
     * the response, no copies through the sink): called after the member's header went to
     * the sink; the owner inserts bytes [off, off + len) of fd at that point of the output
     * (everything after them, the member's padding included, still comes through the sink).
     * Return 0 when taken (fd is then the owner's to close), 1 to have the engine write the
     * data through the sink as usual, or a negative code to stop. NULL: always written. */
    int (*local)(void *ctx, size_t i, int fd, uint64_t off, uint64_t len);
};

struct hd_tarstream_cfg {
    size_t n;         /* entries */
    size_t window;    /* remote fetches in flight (>= 1) */
    size_t entry_buf; /* bytes buffered per in-flight entry */
    int fmt;          /* HD_ARCH_* (common/tarindex.h); only a tar with ops->local (data by
                       * reference is sent raw) */
};

/* Writes the whole archive (end-of-archive blocks included) to the sink. 0, or a negative
 * code with msg filled: the sink's error, a failed entry that was not skipped, an entry cut
 * short after its header was written (the archive is then incomplete: the caller must
 * discard or abort it), -ECANCELED, -ENOMEM. */
int hd_tarstream_run(const struct hd_tarstream_cfg *cfg, const struct hd_tarstream_ops *ops,
                     void *ctx, char *msg, size_t msglen);

/* Maps an HTTP error answer of a hoard node (status, JSON body) to a project code and copies
 * the message; for resolvers and callers that fetch things themselves. */
int hd_tarstream_http_err(long status, const char *body, size_t len, char *msg, size_t msglen);

#endif
