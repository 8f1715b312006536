/* aismsg: AIStore action-message pieces mapped onto hoard job arguments (aismsg.h). */
#include "common/aismsg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/brace.h"
#include "common/errors.h"
#include "common/httputil.h"
#include "common/tarindex.h"
#include "common/xml.h"

static int bad(char *msg, size_t msglen, const char *why)
{
    snprintf(msg, msglen, "%s", why);
    return HD_EBADARG;
}

int hd_ais_bck_parse(const char *s, char *provider, size_t plen, char *name, size_t nlen, char *msg,
                     size_t msglen)
{
    const char *slash, *nm, *end;
    size_t pl, n;

    if (!s || !(slash = strchr(s, '/')))
        return bad(msg, msglen, "a bucket is PROVIDER/@#/NAME/");
    pl = (size_t)(slash - s);
    if (pl == 3 && strncmp(s, "ais", 3) == 0)
        snprintf(provider, plen, "ais");
    else if ((pl == 3 && strncmp(s, "aws", 3) == 0) || (pl == 2 && strncmp(s, "s3", 2) == 0))
        snprintf(provider, plen, "aws");
    else
        return bad(msg, msglen, "the bucket's provider must be ais, aws or s3");
    nm = slash + 1;
    if (*nm == '@') { /* namespace "@UUID#NAME": only the global one */
        if (strncmp(nm, "@#/", 3) != 0)
            return bad(msg, msglen, "hoard has one global namespace (@#)");
        nm += 3;
    }
    end = strchr(nm, '/');
    n = end ? (size_t)(end - nm) : strlen(nm);
    if (end && end[1] != '\0')
        return bad(msg, msglen, "a bucket is PROVIDER/@#/NAME/");
    if (n == 0 || n >= nlen)
        return bad(msg, msglen, "invalid bucket name");
    memcpy(name, nm, n);
    name[n] = '\0';
    if (hd_bucket_name_check(name) < 0)
        return bad(msg, msglen, "invalid bucket name");
    return 0;
}

int hd_ais_selection_args(const json_t *value, int whole_ok, json_t **out, char *msg, size_t msglen)
{
    const json_t *names, *tmpl;
    json_t *args, *arr;
    const char *t;
    size_t i;

    *out = NULL;
    if (value && !json_is_null(value) && !json_is_object(value))
        return bad(msg, msglen, "the action's value must be an object");
    names = json_object_get(value, "objnames");
    tmpl = json_object_get(value, "template");
    if (json_is_null(names))
        names = NULL;
    if (json_is_string(tmpl) && !*json_string_value(tmpl) && names)
        tmpl = NULL; /* the SDK's ObjectNames sends no template; an empty one is no selection */
    if (names && tmpl)
        return bad(msg, msglen, "give objnames or template, not both");
    if (!(args = json_object()))
        return -ENOMEM;
    if (names) {
        if (!json_is_array(names) || json_array_size(names) == 0 ||
            json_array_size(names) > HD_AIS_NAMES_MAX) {
            json_decref(args);
            return bad(msg, msglen, "objnames must be a list of 1 to 100000 object names");
        }
        if (!(arr = json_array()) || json_object_set_new(args, "names", arr) < 0) {
            json_decref(args);
            return -ENOMEM;
        }
        for (i = 0; i < json_array_size(names); i++) {
            const char *n = json_string_value(json_array_get(names, i));
            if (!n || hd_object_name_check(n, json_string_length(json_array_get(names, i))) < 0) {
                json_decref(args);
                snprintf(msg, msglen, "objnames[%zu] is not a valid object name", i);
                return HD_EBADARG;
            }
            if (json_array_append(arr, json_array_get(names, i)) < 0) {
                json_decref(args);
                return -ENOMEM;
            }
        }
    } else if (tmpl) {
        if (!json_is_string(tmpl) || json_string_length(tmpl) != strlen(json_string_value(tmpl))) {
            json_decref(args);
            return bad(msg, msglen, "template must be a string");
        }
        t = json_string_value(tmpl);
        if (!*t && !whole_ok) {
            json_decref(args);
            return bad(msg, msglen, "an empty template selects the whole bucket: not here");
        }
        if (strchr(t, '{')) { /* a template that will not parse fails here, not in a job */
            struct hd_brace *b = NULL;
            char err[160];
            int rc = hd_brace_parse(t, &b, err, sizeof(err));
            hd_brace_free(b);
            if (rc < 0) {
                json_decref(args);
                snprintf(msg, msglen, "template: %s", err);
                return rc == -ENOMEM ? rc : HD_EBADARG;
            }
        }
        /* AIStore takes a template without a range as a prefix ("" the whole bucket) */
        if (json_object_set_new(args, strchr(t, '{') ? "template" : "prefix", json_string(t)) < 0) {
            json_decref(args);
            return -ENOMEM;
        }
    } else if (!whole_ok) {
        json_decref(args);
        return bad(msg, msglen, "the action's value needs objnames or template");
    } else if (json_object_set_new(args, "prefix", json_string("")) < 0) {
        json_decref(args);
        return -ENOMEM;
    }
    if (json_is_true(json_object_get(value, "latest-ver")))
        json_object_set_new(args, "revalidate", json_true());
    *out = args;
    return 0;
}

#define MPT_PARTS_MAX 10000

static int part_cmp(const void *a, const void *b)
{
    const struct hd_complete_part *x = a, *y = b;

    return x->part_number < y->part_number ? -1 : x->part_number > y->part_number;
}

int hd_ais_mpt_complete_parse(const json_t *m, struct hd_complete_req *out, char *msg,
                              size_t msglen)
{
    const json_t *v = json_object_get(m, "value"), *e, *pn, *et;
    const char *act = json_string_value(json_object_get(m, "action"));
    size_t i, n = json_array_size(v);
    const char *s;
    json_int_t num;

    memset(out, 0, sizeof(*out));
    if (!act || strcmp(act, "mpt-complete") != 0)
        return bad(msg, msglen, "expected the action mpt-complete");
    if (!json_is_array(v) || n == 0 || n > MPT_PARTS_MAX)
        return bad(msg, msglen, "value: a list of 1 to 10000 parts {\"part-number\", \"etag\"}");
    if (!(out->parts = calloc(n, sizeof(*out->parts))))
        return -ENOMEM;
    for (i = 0; i < n; i++) {
        struct hd_complete_part *p = &out->parts[i];
        e = json_array_get(v, i);
        pn = json_object_get(e, "part-number");
        et = json_object_get(e, "etag");
        num = json_integer_value(pn);
        if (!json_is_integer(pn) || num < 1 || num > MPT_PARTS_MAX ||
            (et && !json_is_string(et) && !json_is_null(et))) {
            hd_xml_complete_cleanup(out);
            return bad(msg, msglen, "a part is {\"part-number\": 1..10000, \"etag\": string}");
        }
        s = json_string_value(et);
        if (s && *s == '"') /* a quoted ETag, as S3 shows it */
            s++;
        p->part_number = (unsigned)num;
        p->any_etag = !s || !*s;
        p->etag = strdup(s && *s ? s : "");
        if (!p->etag) {
            hd_xml_complete_cleanup(out);
            return -ENOMEM;
        }
        if (*p->etag && p->etag[strlen(p->etag) - 1] == '"')
            p->etag[strlen(p->etag) - 1] = '\0';
        out->n++;
    }
    qsort(out->parts, out->n, sizeof(*out->parts), part_cmp);
    for (i = 1; i < out->n; i++)
        if (out->parts[i].part_number == out->parts[i - 1].part_number) {
            hd_xml_complete_cleanup(out);
            return bad(msg, msglen, "a part number is listed twice");
        }
    return 0;
}

int hd_ais_archive_format(const char *mime, const char *name)
{
    static const struct {
        const char *ext;
        int fmt;
    } exts[] = {{".tar", HD_ARCH_TAR},     {".tgz", HD_ARCH_TGZ},      {".tar.gz", HD_ARCH_TGZ},
                {".zip", HD_ARCH_ZIP},     {".tar.lz4", HD_ARCH_TLZ4}, {".tar.zst", HD_ARCH_TZST}};
    size_t i, n, l;
    int fmt = HD_ARCH_TAR;

    if (mime && *mime) {
        if (strcmp(mime, "application/x-tar") == 0)
            return HD_ARCH_TAR;
        for (i = 0; i < sizeof(exts) / sizeof(exts[0]); i++)
            if (strcmp(mime, exts[i].ext) == 0 || strcmp(mime, exts[i].ext + 1) == 0)
                return exts[i].fmt;
        return -1;
    }
    n = name ? strlen(name) : 0;
    for (i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
        l = strlen(exts[i].ext);
        if (n >= l && strcmp(name + n - l, exts[i].ext) == 0)
            fmt = exts[i].fmt; /* the longest match is last: ".tar.gz" after ".tar" */
    }
    return fmt;
}
