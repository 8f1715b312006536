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

#include "common/buf.h"
#include "common/cksum.h"
#include "common/errors.h"
#include "common/httputil.h"
#include "common/json.h"
#include "common/metrics.h"
#include "common/tagging.h"
#include "common/usermeta.h"

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
    if (m->hdrs)
        json_object_set_new(j, "hdrs", json_loads(m->hdrs, 0, NULL));
    /* the part sizes, unless unusually many distinct ones would make the header too large
     * for a node to take (the moved object then reads as one part) */
    if (m->parts && strlen(m->parts) <= HD_OBJ_PARTS_MAX)
        json_object_set_new(j, "parts", json_loads(m->parts, 0, NULL));
    s = json_dumps(j, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(j);
    return s;
}

/* j[name] (an object or array) as compact text kept in j[keep]; NULL when absent. */
static const char *keep_text(json_t *j, const char *name, const char *keep)
{
    json_t *v = json_object_get(j, name);
    char *text;

    if (!json_is_object(v) && !json_is_array(v))
        return NULL;
    text = json_dumps(v, JSON_COMPACT);
    json_object_set_new(j, keep, json_string(text ? text : json_is_array(v) ? "[]" : "{}"));
    free(text);
    return json_string_value(json_object_get(j, keep));
}

int hd_obj_meta_attrs(const char *text, struct hd_put_attrs *a, json_t **hold)
{
    json_t *j = json_loads(text, 0, NULL);
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
    a->meta = keep_text(j, "meta", "_meta_text");
    a->hdrs = keep_text(j, "hdrs", "_hdrs_text");
    a->parts = keep_text(j, "parts", "_parts_text");
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

/* The headers kept in hdrs, by their JSON key (lowercase) and the name sent back. */
static const char *const std_hdrs[][2] = {
    {"cache-control", "Cache-Control"},
    {"content-disposition", "Content-Disposition"},
    {"content-encoding", "Content-Encoding"},
    {"content-language", "Content-Language"},
    {"expires", "Expires"},
};
#define SCLASS "x-amz-storage-class"
/* the object's tags: a JSON object {key: value} (common/tagging.h), not a header */
#define TAGS "tags"

int hd_storage_class_check(const char *v)
{
    static const char *const classes[] = {
        "STANDARD",        "REDUCED_REDUNDANCY", "STANDARD_IA", "ONEZONE_IA", "INTELLIGENT_TIERING",
        "GLACIER",         "DEEP_ARCHIVE",       "OUTPOSTS",    "GLACIER_IR", "SNOW",
        "EXPRESS_ONEZONE", "FSX_OPENZFS",        "FSX_ONTAP",   NULL};
    size_t i;

    for (i = 0; v && classes[i]; i++)
        if (strcmp(v, classes[i]) == 0)
            return 0;
    return HD_ESTORAGECLASS;
}

static int set_str(json_t *j, const char *k, const char *v)
{
    json_t *s = json_string(v);

    if (!s)
        return HD_EBADHEADER; /* not UTF-8 */
    return json_object_set_new(j, k, s) < 0 ? -ENOMEM : 0;
}

int hd_collect_hdrs(struct hd_req *r, char **out)
{
    json_t *j = json_object();
    const char *v, *sc = hd_req_header(r, SCLASS);
    char enc[1024];
    size_t i;
    const char *tg = hd_req_header(r, "x-amz-tagging");
    char *tags = NULL;
    int rc = 0;

    *out = NULL;
    if (!j)
        return -ENOMEM;
    if (sc && (rc = hd_storage_class_check(sc)) < 0)
        goto out;
    if (tg && (rc = hd_tags_parse_header(tg, &tags)) < 0)
        goto out;
    if (tags && json_object_set_new(j, TAGS, json_loads(tags, 0, NULL)) < 0)
        rc = -ENOMEM;
    for (i = 0; rc == 0 && i < sizeof(std_hdrs) / sizeof(std_hdrs[0]); i++) {
        if (!(v = hd_req_header(r, std_hdrs[i][1])) || !*v)
            continue;
        if (strcmp(std_hdrs[i][0], "content-encoding") == 0) {
            /* aws-chunked framed the upload; what the client means is the rest */
            int n = hd_list_drop_token(v, "aws-chunked", enc, sizeof(enc));
            if (n == 0)
                continue;
            if (n > 0)
                v = enc;
        }
        rc = set_str(j, std_hdrs[i][0], v);
    }
    if (rc == 0 && sc && strcmp(sc, "STANDARD") != 0)
        rc = set_str(j, SCLASS, sc);
    if (rc == 0 && json_object_size(j) && !(*out = json_dumps(j, JSON_COMPACT)))
        rc = -ENOMEM;
out:
    free(tags);
    json_decref(j);
    return rc;
}

int hd_hdrs_tags(const char *hdrs, char **tags)
{
    json_t *j = hdrs ? json_loads(hdrs, 0, NULL) : NULL;
    json_t *t = json_object_get(j, TAGS);
    int rc = 0;

    *tags = NULL;
    if (json_is_object(t) && json_object_size(t) &&
        !(*tags = json_dumps(t, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII)))
        rc = -ENOMEM;
    json_decref(j);
    return rc;
}

int hd_hdrs_with_tags(const char *hdrs, const char *tags, char **out)
{
    json_t *j = hdrs ? json_loads(hdrs, 0, NULL) : NULL;
    json_t *t = tags ? json_loads(tags, 0, NULL) : NULL;
    int rc = 0;

    *out = NULL;
    if (!json_is_object(j)) {
        json_decref(j);
        j = json_object();
    }
    if (!j || (tags && !json_is_object(t))) {
        rc = j ? HD_EINTERNAL : -ENOMEM;
        goto out;
    }
    json_object_del(j, TAGS);
    if (t && json_object_size(t) && json_object_set(j, TAGS, t) < 0)
        rc = -ENOMEM;
    if (rc == 0 && json_object_size(j) && !(*out = json_dumps(j, JSON_COMPACT)))
        rc = -ENOMEM;
out:
    json_decref(t);
    json_decref(j);
    return rc;
}

int hd_hdrs_with_class(const char *hdrs, const char *sclass, char **out)
{
    json_t *j = hdrs ? json_loads(hdrs, 0, NULL) : json_object();
    int rc = 0;

    *out = NULL;
    if (!json_is_object(j)) {
        json_decref(j);
        j = json_object();
    }
    if (!j)
        return -ENOMEM;
    json_object_del(j, SCLASS);
    if (sclass && strcmp(sclass, "STANDARD") != 0 && set_str(j, SCLASS, sclass) < 0)
        rc = -ENOMEM;
    if (rc == 0 && json_object_size(j) && !(*out = json_dumps(j, JSON_COMPACT)))
        rc = -ENOMEM;
    json_decref(j);
    return rc;
}

void hd_hdrs_class(const char *hdrs, char *out, size_t n)
{
    json_t *j = hdrs ? json_loads(hdrs, 0, NULL) : NULL;
    const char *v = json_string_value(json_object_get(j, SCLASS));

    snprintf(out, n, "%s", v ? v : "STANDARD");
    json_decref(j);
}

void hd_obj_hdrs_headers(struct hd_req *r, const char *hdrs)
{
    json_t *j, *v;
    size_t i;

    if (!hdrs || !(j = json_loads(hdrs, 0, NULL)))
        return;
    for (i = 0; i < sizeof(std_hdrs) / sizeof(std_hdrs[0]); i++)
        if (json_is_string(v = json_object_get(j, std_hdrs[i][0])))
            hd_resp_header(r, std_hdrs[i][1], json_string_value(v));
    /* S3 names the class of every object but STANDARD ones */
    if (json_is_string(v = json_object_get(j, SCLASS)))
        hd_resp_header(r, SCLASS, json_string_value(v));
    /* as S3: how many tags the object has, when it has any (GetObjectTagging lists them) */
    if (json_is_object(v = json_object_get(j, TAGS)) && json_object_size(v)) {
        char n[24];
        snprintf(n, sizeof(n), "%zu", json_object_size(v));
        hd_resp_header(r, "x-amz-tagging-count", n);
    }
    json_decref(j);
}

/* ---- conditional writes ---- */

static int blank(const char *s)
{
    while (s && (*s == ' ' || *s == '\t'))
        s++;
    return !s || !*s;
}

int hd_wcond_parse(struct hd_req *r, struct hd_wcond *w)
{
    const char *im = hd_req_header(r, "If-Match"), *inm = hd_req_header(r, "If-None-Match");

    memset(w, 0, sizeof(*w));
    if (blank(im))
        im = NULL;
    if (blank(inm))
        inm = NULL;
    if (inm) {
        while (*inm == ' ' || *inm == '\t')
            inm++;
        if (inm[0] != '*' || !blank(inm + 1))
            return HD_ENOTIMPL; /* S3 takes only "*" on writes */
    }
    if (im && inm)
        return HD_ENOTIMPL;
    w->if_match = im;
    w->if_none_match = inm != NULL;
    return 0;
}

int hd_wcond_check(const struct hd_wcond *w, const struct hd_obj_meta *m, const char **cond)
{
    struct hd_cond c = {.if_match = w->if_match};

    *cond = NULL;
    if (w->if_none_match && m) {
        *cond = "If-None-Match";
        return HD_EPRECONDITION;
    }
    if (w->if_match && !m)
        return HD_ENOSUCHKEY;
    if (w->if_match && hd_cond_eval(&c, m->etag, 0, 0) < 0) {
        *cond = "If-Match";
        return HD_EPRECONDITION;
    }
    return 0;
}

void hd_wcond_error(struct hd_req *r, int rc, const char *cond)
{
    struct hd_kv ex;

    if (rc == HD_EPRECONDITION && cond) {
        ex = (struct hd_kv){"Condition", cond};
        hd_resp_err_ex(r, rc, NULL, &ex, 1);
    } else if (rc == HD_ENOTIMPL) {
        ex = (struct hd_kv){"Header", "If-None-Match"};
        hd_resp_err_ex(r, rc, NULL, &ex, 1);
    } else {
        hd_resp_err(r, rc);
    }
}

/* ---- GET / HEAD ---- */

/* No control characters (a header value cannot carry them). */
static int printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 0;
    return 1;
}

/* ais-custom-md: the user metadata (x-amz-meta-*) as AIStore sends custom metadata,
 * "k=v,k2=v2" (ObjectAttributes.custom_metadata splits on ',' and '='): entries whose name
 * or value holds ',', '=' or control characters are left out, as is all past 4 KiB. */
static void add_custom_md(struct hd_req *r, const struct hd_obj_meta *m)
{
    json_t *j = m->meta ? json_loads(m->meta, 0, NULL) : NULL, *v;
    struct hd_buf b;
    const char *k, *s;

    hd_buf_init(&b);
    json_object_foreach(j, k, v)
    {
        s = json_string_value(v);
        if (!s || !*k || strpbrk(k, ",=") || strpbrk(s, ",=") || !printable(k) || !printable(s) ||
            b.len + strlen(k) + strlen(s) + 2 > 4096)
            continue;
        hd_buf_printf(&b, "%s%s=%s", b.len ? "," : "", k, s);
    }
    if (b.len && !b.oom)
        hd_resp_header(r, "ais-custom-md", b.data);
    hd_buf_cleanup(&b);
    json_decref(j);
}

/* AIStore's object property headers on the native API (the SDK's object.props): the MD5 is
 * the checksum (multipart objects have none whole-object), the last write is the atime (as
 * AIStore sends it: unix nanoseconds) and the ETag the version; bucket and object name come
 * from the path /v1/objects/B/O. */
static void add_ais_headers(struct hd_req *r, const struct hd_obj_meta *m)
{
    const char *rest = r->raw_path + strlen("/v1/objects/"), *slash;
    char v[32], *b = NULL, *o = NULL;
    int md5 = !strchr(m->etag, '-');

    if (r->api != HD_API_NATIVE || strncmp(r->raw_path, "/v1/objects/", 12) != 0)
        return;
    hd_resp_header(r, "ais-checksum-type", md5 ? "md5" : "none");
    hd_resp_header(r, "ais-checksum-value", md5 ? m->etag : "");
    snprintf(v, sizeof(v), "%lld", (long long)m->mtime_ms * 1000000LL);
    hd_resp_header(r, "ais-atime", v);
    hd_resp_header(r, "ais-version", m->etag);
    hd_resp_header(r, "ais-present", "true");
    hd_resp_header(r, "ais-mirror-copies", "1");
    add_custom_md(r, m);
    if ((slash = strchr(rest, '/')) && hd_bucket_decode(rest, (size_t)(slash - rest), &b) == 0 &&
        hd_url_decode_dup(slash + 1, strlen(slash + 1), &o, NULL) == 0 && printable(o)) {
        hd_resp_header(r, "ais-bucket-name", b);
        hd_resp_header(r, "ais-name", o);
    }
    free(b);
    free(o);
}

static void add_object_headers(struct hd_req *r, const struct hd_obj_meta *m)
{
    char v[64], date[32];

    add_ais_headers(r, m);
    snprintf(v, sizeof(v), "\"%s\"", m->etag);
    hd_resp_header(r, "ETag", v);
    hd_http_date_format((time_t)(m->mtime_ms / 1000), date);
    hd_resp_header(r, "Last-Modified", date);
    hd_resp_header(r, "Accept-Ranges", "bytes");
    hd_obj_meta_headers(r, m->meta);
    hd_obj_hdrs_headers(r, m->hdrs);
}

int hd_obj_part_sizes(const struct hd_obj_meta *m, uint64_t **sizes, size_t *n)
{
    json_t *a = m->parts ? json_loads(m->parts, 0, NULL) : NULL, *v;
    uint64_t sz, k, total = 0, *out = NULL;
    size_t i, cnt = 0;
    int rc = 0;

    *sizes = NULL;
    *n = 0;
    json_array_foreach(a, i, v)
    {
        json_t *s = json_is_array(v) ? json_array_get(v, 0) : v;
        json_t *c = json_is_array(v) ? json_array_get(v, 1) : NULL;
        uint64_t *grown;
        sz = json_is_integer(s) ? (uint64_t)json_integer_value(s) : 0;
        k = c ? (json_is_integer(c) ? (uint64_t)json_integer_value(c) : 0) : 1;
        if (k > 10000 || cnt + k > 10000 || (sz && k > m->size / sz)) {
            rc = HD_EINTERNAL;
            goto out;
        }
        if (!(grown = realloc(out, (cnt + k + 1) * sizeof(*out)))) {
            rc = -ENOMEM;
            goto out;
        }
        out = grown;
        while (k--)
            out[cnt++] = sz;
        total += sz * (c ? (uint64_t)json_integer_value(c) : 1);
    }
    if (cnt && total != m->size)
        rc = HD_EINTERNAL; /* sizes that do not add up: never serve past the file */
out:
    json_decref(a);
    if (rc < 0 || !cnt) { /* runs of count 0 only: not uploaded in parts either */
        free(out);
        return rc;
    }
    *sizes = out;
    *n = cnt;
    return 0;
}

/* Part n of the object (1-based) as a byte range: *count is the number of parts (0 when it
 * was not a multipart upload: then part 1 is the whole object). HD_EPARTNUM past the last. */
static int part_range(const struct hd_obj_meta *m, uint64_t n, uint64_t *off, uint64_t *len,
                      size_t *count)
{
    uint64_t *sizes;
    size_t i;
    int rc;

    *off = 0;
    *len = m->size;
    if ((rc = hd_obj_part_sizes(m, &sizes, count)) < 0)
        return rc;
    if (!*count) /* not uploaded in parts: part 1 is the object */
        return n == 1 ? 0 : HD_EPARTNUM;
    if (n > *count) {
        free(sizes);
        return HD_EPARTNUM;
    }
    for (i = 0; i + 1 < n; i++)
        *off += sizes[i];
    *len = sizes[n - 1];
    free(sizes);
    return 0;
}

/* GET/HEAD ?partNumber=N: 206 with the part's bytes, or answers an error itself (< 0). */
static int part_answer(struct hd_req *r, const struct hd_obj_meta *m, const char *pn, uint64_t *off,
                       uint64_t *len)
{
    char cr[96], a[24], b[24];
    struct hd_kv ex[2];
    uint64_t n;
    size_t count;
    int rc;

    if (hd_parse_u64(pn, &n) < 0 || n < 1 || n > 10000) {
        ex[0] = (struct hd_kv){"ArgumentName", "partNumber"};
        ex[1] = (struct hd_kv){"ArgumentValue", pn};
        hd_resp_err_ex(r, HD_EBADPARTNUM, NULL, ex, 2);
        return HD_EBADPARTNUM;
    }
    if (hd_req_header(r, "Range")) {
        hd_resp_err(r, HD_ERANGEPART);
        return HD_ERANGEPART;
    }
    if ((rc = part_range(m, n, off, len, &count)) < 0) {
        snprintf(a, sizeof(a), "%llu", (unsigned long long)n);
        snprintf(b, sizeof(b), "%zu", count ? count : 1);
        ex[0] = (struct hd_kv){"PartNumberRequested", a};
        ex[1] = (struct hd_kv){"ActualPartCount", b};
        hd_resp_err_ex(r, rc, NULL, ex, rc == HD_EPARTNUM ? 2 : 0);
        return rc;
    }
    if (*len) {
        snprintf(cr, sizeof(cr), "bytes %llu-%llu/%llu", (unsigned long long)*off,
                 (unsigned long long)(*off + *len - 1), (unsigned long long)m->size);
        hd_resp_header(r, "Content-Range", cr);
    }
    if (count) { /* only for an object that was uploaded in parts */
        snprintf(a, sizeof(a), "%zu", count);
        hd_resp_header(r, "x-amz-mp-parts-count", a);
    }
    return 206;
}

int hd_obj_ssec_refused(struct hd_req *r)
{
    size_t i;

    for (i = 0; i < r->nhdrs; i++)
        if (hd_str_case_prefix(r->hdrs[i].k, "x-amz-server-side-encryption-customer-")) {
            hd_resp_err(r, HD_ESSECNA);
            return 1;
        }
    return 0;
}

void hd_obj_serve(struct hd_req *r, const struct hd_obj_meta *mp, int fd, int head)
{
    hd_obj_serve_ex(r, mp, fd, head, NULL);
}

void hd_obj_serve_ex(struct hd_req *r, const struct hd_obj_meta *mp, int fd, int head,
                     const char *expiration)
{
    const struct hd_obj_meta m = *mp;
    const char *pn = hd_req_param(r, "partNumber");
    struct hd_cond cond;
    uint64_t off = 0, len;
    int rc, status = 200;
    const char *mode;

    if (hd_obj_ssec_refused(r))
        goto out;
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
        hd_wcond_error(r, rc, rc == HD_EPRECONDITION ? hd_cond_failed(&cond) : NULL);
        goto out;
    }
    len = m.size;
    /* a part read is a ranged read whose range the upload recorded; the ETag stays the
     * whole object's */
    status = pn ? part_answer(r, &m, pn, &off, &len) : hd_resp_range(r, m.size, &off, &len);
    if (status < 0)
        goto out;
    add_object_headers(r, &m);
    if (expiration)
        hd_resp_header(r, "x-amz-expiration", expiration);
    hd_resp_header(r, "Content-Type", m.ctype ? m.ctype : hd_obj_default_ctype(r));
    /* A stored checksum describes the whole object: sent only when the whole object is
     * (botocore validates what it receives). A composite one (checksum of the parts'
     * checksums, "b64-N") describes no bytes at all: HEAD only. */
    mode = hd_req_header(r, "x-amz-checksum-mode");
    if (m.ck_type[0] && status == 200 && mode && strcasecmp(mode, "ENABLED") == 0) {
        enum hd_ck_type ct = hd_cksum_type_from_name(m.ck_type);
        int composite = strchr(m.ck_val, '-') != NULL;
        if (ct != HD_CK_NONE && (head || !composite)) {
            hd_resp_header(r, hd_cksum_header(ct), m.ck_val);
            hd_resp_header(r, "x-amz-checksum-type", composite ? "COMPOSITE" : "FULL_OBJECT");
        }
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

const char *hd_obj_default_ctype(const struct hd_req *r)
{
    return r->api == HD_API_S3 ? "binary/octet-stream" : "application/octet-stream";
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
        if (n == 0 || n >= sizeof(name) || total > HD_USERMETA_MAX) {
            json_decref(j);
            return n == 0 ? HD_EBADHEADER : HD_EMETATOOLARGE;
        }
        for (c = 0; c <= n; c++)
            name[c] = (char)tolower((unsigned char)k[11 + c]);
        /* a header sent twice is one value, joined with a comma (HTTP; what S3 stores) */
        const char *prev = json_string_value(json_object_get(j, name));
        json_t *v = prev ? json_sprintf("%s,%s", prev, r->hdrs[i].v) : json_string(r->hdrs[i].v);
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
