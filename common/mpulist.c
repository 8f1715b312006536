#include "common/mpulist.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/http.h"
#include "common/json.h"
#include "common/httputil.h"
#include "common/xml.h"

int hd_mpul_opts_parse(const struct hd_req *r, struct hd_mpul_opts *o, const char **msg)
{
    const char *enc = hd_req_param(r, "encoding-type");
    const char *max = hd_req_param(r, "max-uploads");
    int64_t n;

    memset(o, 0, sizeof(*o));
    *msg = NULL;
    if (enc && strcmp(enc, "url") != 0) {
        *msg = "Invalid Encoding Method specified in Request";
        return HD_EBADARG;
    }
    o->url = enc != NULL;
    o->max = HD_MPUL_MAX;
    if (max) {
        if (hd_parse_i64(max, &n) < 0 || n < 0) {
            *msg = "Argument max-uploads must be an integer between 0 and 2147483647.";
            return HD_EBADARG;
        }
        o->max = (uint64_t)n > HD_MPUL_MAX ? HD_MPUL_MAX : (uint64_t)n;
    }
    o->prefix = hd_req_param(r, "prefix");
    o->delim = hd_req_param(r, "delimiter");
    if (o->delim && !*o->delim)
        o->delim = NULL;
    o->key_marker = hd_req_param(r, "key-marker");
    if (o->key_marker && !*o->key_marker)
        o->key_marker = NULL;
    o->id_marker = o->key_marker ? hd_req_param(r, "upload-id-marker") : NULL;
    if (o->id_marker && !*o->id_marker)
        o->id_marker = NULL;
    return 0;
}

int hd_mpul_push(struct hd_mpul *l, const char *key, size_t klen, const char *id, int64_t created,
                 const char *ck, int full)
{
    struct hd_mpul_ent *e;

    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        e = realloc(l->v, cap * sizeof(*e));
        if (!e)
            return -ENOMEM;
        l->v = e;
        l->cap = cap;
    }
    e = &l->v[l->n];
    memset(e, 0, sizeof(*e));
    e->key = strndup(key, klen);
    e->id = id ? strdup(id) : NULL;
    e->created = created;
    snprintf(e->ck, sizeof(e->ck), "%s", ck ? ck : "");
    e->full = full;
    if (!e->key || (id && !e->id)) {
        free(e->key);
        free(e->id);
        return -ENOMEM;
    }
    l->n++;
    return 0;
}

void hd_mpul_truncate(struct hd_mpul *l, size_t n)
{
    size_t i;

    for (i = n; i < l->n; i++) {
        free(l->v[i].key);
        free(l->v[i].id);
    }
    if (n < l->n)
        l->n = n;
}

void hd_mpul_free(struct hd_mpul *l)
{
    hd_mpul_truncate(l, 0);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

static int cmp(const void *a, const void *b)
{
    const struct hd_mpul_ent *x = a, *y = b;
    int c = strcmp(x->key, y->key);

    if (c)
        return c;
    if (x->created != y->created)
        return x->created < y->created ? -1 : 1;
    return strcmp(x->id ? x->id : "", y->id ? y->id : "");
}

void hd_mpul_finish(struct hd_mpul *l)
{
    size_t i, j;

    if (l->n)
        qsort(l->v, l->n, sizeof(*l->v), cmp);
    for (i = j = 0; i < l->n; i++) { /* a common prefix may come from several sources */
        if (j && !l->v[i].id && !l->v[j - 1].id && strcmp(l->v[i].key, l->v[j - 1].key) == 0) {
            free(l->v[i].key);
            continue;
        }
        l->v[j++] = l->v[i];
    }
    l->n = j;
}

void hd_mpul_owner_xml(struct hd_buf *b, const char *owner)
{
    static const char *const tags[] = {"Initiator", "Owner"};

    for (size_t i = 0; i < 2; i++) {
        hd_xml_open(b, tags[i]);
        hd_xml_elem(b, "ID", owner);
        hd_xml_elem(b, "DisplayName", owner);
        hd_xml_close(b, tags[i]);
    }
}

int hd_mpul_xml(struct hd_buf *b, const char *bucket, const struct hd_mpul_opts *o,
                const struct hd_mpul *l)
{
    size_t shown = l->n < o->max ? l->n : (size_t)o->max, i;
    char ts[32];

    hd_xml_decl(b);
    hd_xml_open_ns(b, "ListMultipartUploadsResult", HD_XML_S3_NS);
    hd_xml_elem(b, "Bucket", bucket);
    hd_xml_key_elem(b, "KeyMarker", o->key_marker ? o->key_marker : "", o->url);
    hd_xml_elem(b, "UploadIdMarker", o->id_marker ? o->id_marker : "");
    if (l->n > shown && shown > 0) { /* truncated: resume after the last one shown */
        const struct hd_mpul_ent *last = &l->v[shown - 1];
        hd_xml_key_elem(b, "NextKeyMarker", last->key, o->url);
        hd_xml_elem(b, "NextUploadIdMarker", last->id ? last->id : "");
    }
    if (o->delim)
        hd_xml_key_elem(b, "Delimiter", o->delim, o->url);
    hd_xml_key_elem(b, "Prefix", o->prefix ? o->prefix : "", o->url);
    hd_xml_elemf(b, "MaxUploads", "%llu", (unsigned long long)o->max);
    hd_xml_elem(b, "IsTruncated", l->n > shown ? "true" : "false");
    if (o->url)
        hd_xml_elem(b, "EncodingType", "url");
    for (i = 0; i < shown; i++) {
        const struct hd_mpul_ent *e = &l->v[i];
        if (!e->id)
            continue;
        hd_xml_open(b, "Upload");
        hd_xml_key_elem(b, "Key", e->key, o->url);
        hd_xml_elem(b, "UploadId", e->id);
        if (o->owner)
            hd_mpul_owner_xml(b, o->owner);
        hd_xml_elem(b, "StorageClass", "STANDARD");
        hd_iso8601_ms(e->created, ts);
        hd_xml_elem(b, "Initiated", ts);
        if (e->ck[0]) {
            hd_xml_elem(b, "ChecksumAlgorithm", e->ck);
            hd_xml_elem(b, "ChecksumType", e->full ? "FULL_OBJECT" : "COMPOSITE");
        }
        hd_xml_close(b, "Upload");
    }
    for (i = 0; i < shown; i++) {
        if (l->v[i].id)
            continue;
        hd_xml_open(b, "CommonPrefixes");
        hd_xml_key_elem(b, "Prefix", l->v[i].key, o->url);
        hd_xml_close(b, "CommonPrefixes");
    }
    hd_xml_close(b, "ListMultipartUploadsResult");
    return b->oom ? -ENOMEM : 0;
}

json_t *hd_mpul_to_json(const struct hd_mpul *l)
{
    json_t *arr = json_array();
    size_t i;

    for (i = 0; arr && i < l->n; i++) {
        const struct hd_mpul_ent *e = &l->v[i];
        json_t *o = json_pack("{s:s, s:I}", "key", e->key, "created", (json_int_t)e->created);
        if (!o)
            continue;
        if (e->id)
            json_object_set_new(o, "id", json_string(e->id));
        if (e->ck[0]) {
            json_object_set_new(o, "ck", json_string(e->ck));
            json_object_set_new(o, "full", json_boolean(e->full));
        }
        json_array_append_new(arr, o);
    }
    return arr ? json_pack("{s:o}", "entries", arr) : NULL;
}

int hd_mpul_from_json(const json_t *j, struct hd_mpul *l)
{
    const json_t *arr = json_object_get(j, "entries"), *e;
    size_t i;
    int rc;

    if (!json_is_array(arr))
        return HD_EBADARG;
    json_array_foreach(arr, i, e)
    {
        const char *key = json_string_value(json_object_get(e, "key"));
        const json_t *id = json_object_get(e, "id"), *ck = json_object_get(e, "ck");
        if (!key || (id && !json_is_string(id)) || (ck && !json_is_string(ck)) ||
            !json_is_integer(json_object_get(e, "created")))
            return HD_EBADARG;
        rc = hd_mpul_push(l, key, strlen(key), id ? json_string_value(id) : NULL,
                          json_integer_value(json_object_get(e, "created")),
                          ck ? json_string_value(ck) : NULL,
                          json_is_true(json_object_get(e, "full")));
        if (rc < 0)
            return rc;
    }
    return 0;
}
