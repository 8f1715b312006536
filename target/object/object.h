/* object: an object as a client sees it, from a local copy (object.c), and tar members of
 * objects (archive.h). Below the cache and cluster layers: it knows the store, not where a
 * copy came from. HTTP workers and job threads; blocks on local disk only. */
#ifndef HD_TARGET_OBJECT_H
#define HD_TARGET_OBJECT_H

#include <jansson.h>

#include "common/http.h"
#include "target/store/store.h"

/* Answers a GET/HEAD from a local copy (conditionals, Range or partNumber, headers,
 * sendfile). fd is the content file (or -1 for HEAD) and is closed on every path; m stays the
 * caller's. A node's call (r->trusted == HD_TRUST_NODE) also gets the object's identity
 * (X-Hoard-Obj-Meta). */
void hd_obj_serve(struct hd_req *r, const struct hd_obj_meta *m, int fd, int head);
/* The same with x-amz-expiration: expiration (NULL: none) on a 200/206 answer only. */
void hd_obj_serve_ex(struct hd_req *r, const struct hd_obj_meta *m, int fd, int head,
                     const char *expiration);
/* A GET/HEAD of an object that exists, sent with SSE-C parameters
 * (x-amz-server-side-encryption-customer-*): no object here was stored with a customer key
 * (such writes are 501), so this is AWS's answer for an object not encrypted that way, 400
 * InvalidRequest, which it answers itself (1); 0 otherwise. Checked once the object is known
 * to exist: a missing one stays 404. */
int hd_obj_ssec_refused(struct hd_req *r);
/* The Content-Type of an object stored without one: S3's "binary/octet-stream" on the S3
 * API (what AWS answers), "application/octet-stream" on the native API. */
const char *hd_obj_default_ctype(const struct hd_req *r);
/* x-amz-meta-* response headers from the catalog's JSON object (NULL: none). */
void hd_obj_meta_headers(struct hd_req *r, const char *meta);
/* x-amz-meta-* headers of r as a JSON object (lowercase names without the prefix) in *out,
 * or NULL when there are none; HD_EMETATOOLARGE past 2 KiB, HD_EBADHEADER when malformed.
 * An empty value is kept (S3 returns it). */
int hd_collect_meta(struct hd_req *r, char **out);

/* The headers S3 stores with an object besides Content-Type and x-amz-meta-*: Cache-Control,
 * Content-Disposition, Content-Encoding (without aws-chunked, which only framed the upload),
 * Content-Language, Expires (verbatim: S3 does not parse it) and x-amz-storage-class (not
 * kept when STANDARD, the default), as the JSON of struct hd_obj_meta.hdrs in *out (NULL
 * when none), and the tags of x-amz-tagging (hd_hdrs_tags). HD_ESTORAGECLASS for a storage
 * class S3 does not have; HD_EBADHEADER for a value that is not UTF-8; the errors of
 * hd_tags_parse_header. */
int hd_collect_hdrs(struct hd_req *r, char **out);
/* The object's tags, also kept in hdrs (under "tags", a JSON object: hd_collect_hdrs reads
 * x-amz-tagging into it), as common/tagging.h's canonical text in *tags (malloc'd; NULL when
 * none). 0 or -ENOMEM. */
int hd_hdrs_tags(const char *hdrs, char **tags);
/* hdrs with its tags replaced by tags (canonical text; NULL: none) in *out (malloc'd; NULL
 * when nothing is left). 0, -ENOMEM, HD_EINTERNAL for tags that are not a JSON object. */
int hd_hdrs_with_tags(const char *hdrs, const char *tags, char **out);
/* The same JSON with its storage class replaced by sclass (NULL or STANDARD: none): *out
 * malloc'd or NULL. 0 or -ENOMEM. */
int hd_hdrs_with_class(const char *hdrs, const char *sclass, char **out);
/* The storage class in hdrs JSON ("STANDARD" when none) into out. */
void hd_hdrs_class(const char *hdrs, char *out, size_t n);
/* 0 when v is a storage class S3 knows, else HD_ESTORAGECLASS. */
int hd_storage_class_check(const char *v);
/* Adds the stored headers (hdrs JSON) to r's answer, and x-amz-tagging-count when the object
 * has tags. */
void hd_obj_hdrs_headers(struct hd_req *r, const char *hdrs);

/* A conditional write (PUT, CompleteMultipartUpload, CopyObject's destination). */
struct hd_wcond {
    const char *if_match; /* If-Match (an ETag list or "*"), or NULL */
    int if_none_match;    /* If-None-Match: * */
};
/* r's If-Match / If-None-Match (pointing into r): 0, or HD_ENOTIMPL for what S3 does not
 * do either (If-None-Match other than "*", or both headers). */
int hd_wcond_parse(struct hd_req *r, struct hd_wcond *w);
/* w against the object as it is (m, or NULL when there is none): 0, HD_EPRECONDITION with
 * *cond the header that failed, or HD_ENOSUCHKEY (If-Match on a missing key). */
int hd_wcond_check(const struct hd_wcond *w, const struct hd_obj_meta *m, const char **cond);
/* Answers rc as S3 does for a write's conditions: 412 with <Condition>, 501 with <Header>. */
void hd_wcond_error(struct hd_req *r, int rc, const char *cond);

/* An object's identity for moving it between nodes (X-Hoard-Obj-Meta: compact ASCII JSON
 * {etag, mtime_ms, ck_type, ck_val, ctype, meta, hdrs, parts}); malloc'd, NULL on OOM. The
 * part sizes are left out past HD_OBJ_PARTS_MAX bytes (thousands of distinct sizes), so the
 * header stays within what a node takes (http.mem_limit). */
#define HD_OBJ_PARTS_MAX 8192
/* The part sizes of a multipart object, in order (m->parts holds runs [size, count]; a bare
 * size counts once): *sizes malloc'd, *n parts; 0 parts (and NULL) when it was not uploaded
 * in parts. HD_EINTERNAL when they are more than 10000 or do not add up to m->size. */
int hd_obj_part_sizes(const struct hd_obj_meta *m, uint64_t **sizes, size_t *n);
char *hd_obj_meta_json(const struct hd_obj_meta *m);
/* Parses such a header into attrs for hd_put_commit (keep_newer set). The strings point into
 * *hold (json_decref it after the commit). HD_EBADHEADER when malformed. */
int hd_obj_meta_attrs(const char *text, struct hd_put_attrs *a, json_t **hold);

#endif
