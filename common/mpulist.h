/* mpulist: ListMultipartUploads entries, their order, and the S3 XML answer. Targets build a
 * list from their catalogs; a proxy merges the lists of every target (exchanged as JSON)
 * and renders the same XML. Pure data: any thread. */
#ifndef HD_MPULIST_H
#define HD_MPULIST_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct hd_buf;
struct hd_req;

/* An upload (id set) or a common prefix (id NULL). */
struct hd_mpul_ent {
    char *key;
    char *id;
    int64_t created; /* ms since the epoch */
    char ck[16];     /* checksum algorithm name, "" when none */
    int full;        /* ChecksumType FULL_OBJECT (else COMPOSITE) */
};

struct hd_mpul {
    struct hd_mpul_ent *v;
    size_t n, cap;
};

/* The request's listing parameters (pointers into the request). */
struct hd_mpul_opts {
    const char *prefix;     /* NULL when none */
    const char *delim;      /* NULL when none or empty */
    const char *key_marker; /* NULL when none or empty */
    const char *id_marker;  /* NULL unless key_marker */
    uint64_t max;           /* max-uploads, at most HD_MPUL_MAX */
    int url;                /* encoding-type=url */
    const char *owner;      /* the caller (Owner and Initiator of each upload); NULL: left out */
};

#define HD_MPUL_MAX 1000

/* <Initiator> and <Owner> of an upload: uploads keep no initiator, so both are the caller's
 * key (as ListObjects' Owner). */
void hd_mpul_owner_xml(struct hd_buf *b, const char *owner);
/* Parses prefix, delimiter, key-marker, upload-id-marker, max-uploads and encoding-type.
 * 0, or HD_EBADARG with *msg saying what is wrong. */
int hd_mpul_opts_parse(const struct hd_req *r, struct hd_mpul_opts *o, const char **msg);
/* Appends an entry (key[0..klen) copied). 0 or -ENOMEM. */
int hd_mpul_push(struct hd_mpul *l, const char *key, size_t klen, const char *id, int64_t created,
                 const char *ck, int full);
void hd_mpul_free(struct hd_mpul *l);
/* Sorts (key, then initiation time, then id) and drops repeated common prefixes. */
void hd_mpul_finish(struct hd_mpul *l);
/* Keeps the first n entries. */
void hd_mpul_truncate(struct hd_mpul *l, size_t n);
/* The ListMultipartUploadsResult for a finished list holding up to o->max + 1 entries (the
 * extra one says the answer is truncated). 0 or -ENOMEM. */
int hd_mpul_xml(struct hd_buf *b, const char *bucket, const struct hd_mpul_opts *o,
                const struct hd_mpul *l);
/* {"entries": [{"key", "id"?, "created", "ck"?, "full"?}...]} and back (appending to l;
 * HD_EBADARG when malformed). */
json_t *hd_mpul_to_json(const struct hd_mpul *l);
int hd_mpul_from_json(const json_t *j, struct hd_mpul *l);

#endif
