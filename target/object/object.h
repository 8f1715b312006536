/* object: an object as a client sees it, from a local copy (object.c), and tar members of
 * objects (archive.h). Below the cache and cluster layers: it knows the store, not where a
 * copy came from. HTTP workers and job threads; blocks on local disk only. */
#ifndef HD_TARGET_OBJECT_H
#define HD_TARGET_OBJECT_H

#include <jansson.h>

#include "common/http.h"
#include "target/store/store.h"

/* Answers a GET/HEAD from a local copy (conditionals, Range, headers, sendfile). fd is the
 * content file (or -1 for HEAD) and is closed on every path; m stays the caller's. A node's
 * call (r->trusted == HD_TRUST_NODE) also gets the object's identity (X-Hoard-Obj-Meta). */
void hd_obj_serve(struct hd_req *r, const struct hd_obj_meta *m, int fd, int head);
/* x-amz-meta-* response headers from the catalog's JSON object (NULL: none). */
void hd_obj_meta_headers(struct hd_req *r, const char *meta);
/* x-amz-meta-* headers of r as a JSON object (lowercase names without the prefix) in *out,
 * or NULL when there are none; HD_EMETATOOLARGE past 2 KiB, HD_EBADHEADER when malformed. */
int hd_collect_meta(struct hd_req *r, char **out);

/* An object's identity for moving it between nodes (X-Hoard-Obj-Meta: compact ASCII JSON
 * {etag, mtime_ms, ck_type, ck_val, ctype, meta}); malloc'd, NULL on OOM. */
char *hd_obj_meta_json(const struct hd_obj_meta *m);
/* Parses such a header into attrs for hd_put_commit (keep_newer set). The strings point into
 * *hold (json_decref it after the commit). HD_EBADHEADER when malformed. */
int hd_obj_meta_attrs(const char *text, struct hd_put_attrs *a, json_t **hold);

#endif
