/* object: an object as a client sees it, from a local copy: the GET/HEAD answer (conditionals,
 * Range, headers, sendfile), its metadata headers, and its identity as nodes pass it around
 * (X-Hoard-Obj-Meta). HTTP workers and job threads; blocks on local disk only. */
#include "target/object/object.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>

#include "common/cksum.h"
#include "common/errors.h"
#include "common/json.h"
#include "common/metrics.h"

char *hd_obj_meta_json(const struct hd_obj_meta *m)
{
    json_t *j = json_pack("{s:s, s:I, s:s, s:s}", "etag", m->etag, "mtime_ms",
                          (json_int_t)m->mtime_ms, "ck_type", m->ck_type, "ck_val", m->ck_val);
    char *s;

    if (!j)
        return NULL;
    if (m->ctype)
        json_object_set_new(j, "ctype", json_string(m->ctype));
    if (m->meta)
        json_object_set_new(j, "meta", json_loads(m->meta, 0, NULL));
    s = json_dumps(j, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(j);
    return s;
}

int hd_obj_meta_attrs(const char *text, struct hd_put_attrs *a, json_t **hold)
{
    json_t *j = json_loads(text, 0, NULL), *meta;
    json_t *mt;

    *hold = NULL;
    if (!json_is_object(j) || !json_is_string(json_object_get(j, "etag")) ||
        !json_is_integer(mt = json_object_get(j, "mtime_ms"))) {
        json_decref(j);
        return HD_EBADHEADER;
    }
    memset(a, 0, sizeof(*a));
    a->etag = json_string_value(json_object_get(j, "etag"));
    a->mtime_ms = (int64_t)json_integer_value(mt);
    a->ck_type = json_string_value(json_object_get(j, "ck_type"));
    a->ck_val = json_string_value(json_object_get(j, "ck_val"));
    a->ctype = json_string_value(json_object_get(j, "ctype"));
    meta = json_object_get(j, "meta");
    if (json_is_object(meta)) {
        char *mtext = json_dumps(meta, JSON_COMPACT);
        json_object_set_new(j, "_meta_text", json_string(mtext ? mtext : "{}"));
        free(mtext);
        a->meta = json_string_value(json_object_get(j, "_meta_text"));
    }
    a->keep_newer = 1;
    *hold = j;
    return 0;
}

void hd_obj_meta_headers(struct hd_req *r, const char *meta)
{
    json_t *j;
    const char *k;
    json_t *v;
    char name[300];

    if (!meta)
        return;
    j = json_loads(meta, 0, NULL);
    if (!j)
        return;
    json_object_foreach(j, k, v)
    {
        if (!json_is_string(v))
            continue;
        snprintf(name, sizeof(name), "x-amz-meta-%s", k);
        hd_resp_header(r, name, json_string_value(v));
    }
    json_decref(j);
}

static void add_object_headers(struct hd_req *r, const struct hd_obj_meta *m)
{
    char v[64], date[32];

    snprintf(v, sizeof(v), "\"%s\"", m->etag);
    hd_resp_header(r, "ETag", v);
    hd_http_date_format((time_t)(m->mtime_ms / 1000), date);
    hd_resp_header(r, "Last-Modified", date);
    hd_resp_header(r, "Accept-Ranges", "bytes");
    hd_obj_meta_headers(r, m->meta);
}

void hd_obj_serve(struct hd_req *r, const struct hd_obj_meta *mp, int fd, int head)
{
    const struct hd_obj_meta m = *mp;
    struct hd_cond cond;
    uint64_t off = 0, len;
    int rc, status = 200;
    const char *mode;

    if (r->trusted == HD_TRUST_NODE && hd_req_header(r, "X-Hoard-Want-Meta")) {
        /* another target moving or copying it (peer.c) */
        char *xm = hd_obj_meta_json(&m);
        if (xm)
            hd_resp_header(r, "X-Hoard-Obj-Meta", xm);
        free(xm);
    }
    cond.if_match = hd_req_header(r, "If-Match");
    cond.if_none_match = hd_req_header(r, "If-None-Match");
    cond.if_modified_since = hd_req_header(r, "If-Modified-Since");
    cond.if_unmodified_since = hd_req_header(r, "If-Unmodified-Since");
    rc = hd_cond_eval(&cond, m.etag, (time_t)(m.mtime_ms / 1000), 1);
    if (rc == HD_ENOTMODIFIED) {
        char v[64], date[32];
        snprintf(v, sizeof(v), "\"%s\"", m.etag);
        hd_resp_header(r, "ETag", v);
        hd_http_date_format((time_t)(m.mtime_ms / 1000), date);
        hd_resp_header(r, "Last-Modified", date);
        hd_resp_empty(r, 304);
        goto out;
    }
    if (rc < 0) {
        hd_resp_err(r, rc);
        goto out;
    }
    len = m.size;
    status = hd_resp_range(r, m.size, &off, &len);
    if (status < 0)
        goto out;
    add_object_headers(r, &m);
    hd_resp_header(r, "Content-Type", m.ctype ? m.ctype : "application/octet-stream");
    /* A stored checksum describes the whole object: echo it only when the whole object is
     * served (botocore validates what it receives). */
    mode = hd_req_header(r, "x-amz-checksum-mode");
    if (m.ck_type[0] && status == 200 && mode && strcasecmp(mode, "ENABLED") == 0) {
        enum hd_ck_type ct = hd_cksum_type_from_name(m.ck_type);
        if (ct != HD_CK_NONE)
            hd_resp_header(r, hd_cksum_header(ct), m.ck_val);
    }
    if (head) {
        hd_resp_head(r, status, len);
    } else if (hd_resp_fd(r, status, fd, off, len) == 0) {
        fd = -1; /* the response owns it */
        hd_stats_add(HD_ST_GET_BYTES, len);
    } else {
        hd_resp_err(r, HD_EINTERNAL);
    }
out:
    if (fd >= 0)
        close(fd);
}

/* x-amz-meta-* headers as a JSON object keyed by the lowercase suffix. */
int hd_collect_meta(struct hd_req *r, char **out)
{
    json_t *j = json_object();
    size_t i, total = 0;
    char name[256];

    *out = NULL;
    if (!j)
        return -ENOMEM;
    for (i = 0; i < r->nhdrs; i++) {
        const char *k = r->hdrs[i].k;
        size_t n, c;
        if (strncasecmp(k, "x-amz-meta-", 11) != 0)
            continue;
        n = strlen(k + 11);
        total += n + strlen(r->hdrs[i].v);
        if (n == 0 || n >= sizeof(name) || total > 2048) {
            json_decref(j);
            return n == 0 ? HD_EBADHEADER : HD_EMETATOOLARGE;
        }
        for (c = 0; c <= n; c++)
            name[c] = (char)tolower((unsigned char)k[11 + c]);
        json_t *v = json_string(r->hdrs[i].v);
        if (!v) { /* not UTF-8 */
            json_decref(j);
            return HD_EBADHEADER;
        }
        json_object_set_new(j, name, v);
    }
    if (json_object_size(j) == 0) {
        json_decref(j);
        return 0;
    }
    *out = hd_json_dump_steal(j, NULL);
    return *out ? 0 : -ENOMEM;
}
