/* tagging: S3 object tags, their two request forms and the answer. See tagging.h. */
#include "common/tagging.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/errors.h"
#include "common/httputil.h"
#include "common/xml.h"

/* Unicode characters of valid UTF-8 s[0..n) (jansson checked the encoding already). */
static size_t chars(const char *s, size_t n)
{
    size_t i, c = 0;

    for (i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

/* UTF-8 text that XML 1.0 carries (the GetObjectTagging answer): no NUL or other control
 * character but tab, LF and CR. */
static int text_ok(const char *s, size_t n)
{
    json_t *j;
    size_t i;

    for (i = 0; i < n; i++)
        if (((unsigned char)s[i] < 0x20 && s[i] != '\t' && s[i] != '\n' && s[i] != '\r') ||
            s[i] == 0x7f)
            return 0;
    j = json_stringn(s, n);
    json_decref(j);
    return j != NULL;
}

/* Adds k = v (k NUL-terminated at kl) to the set, checked: 0 or the tag's error (dup: the
 * code for a key already there). */
static int tag_add(json_t *set, const char *k, size_t kl, const char *v, size_t vl, int dup)
{
    if (kl == 0 || !text_ok(k, kl))
        return HD_ETAGKEY;
    if (!text_ok(v, vl))
        return HD_ETAGVAL;
    if (chars(k, kl) > HD_TAG_KEY_MAX)
        return HD_ETAGKEYLEN;
    if (chars(v, vl) > HD_TAG_VALUE_MAX)
        return HD_ETAGVALLEN;
    if (kl >= 4 && strncmp(k, "aws:", 4) == 0)
        return HD_ETAGAWS; /* reserved for AWS's own tags */
    if (json_object_get(set, k))
        return dup;
    return json_object_set_new(set, k, json_stringn(v, vl)) < 0 ? -ENOMEM : 0;
}

int hd_tags_check(const json_t *tags, size_t max)
{
    json_t *seen;
    const char *k;
    json_t *v;
    int rc = 0;

    if (!json_is_object(tags) || json_object_size(tags) == 0)
        return HD_EMALFORMEDXML;
    if (json_object_size(tags) > max)
        return HD_ETAGCOUNT;
    if (!(seen = json_object()))
        return -ENOMEM;
    json_object_foreach((json_t *)tags, k, v)
    {
        if (!json_is_string(v)) {
            rc = HD_ETAGVAL;
            break;
        }
        if ((rc = tag_add(seen, k, strlen(k), json_string_value(v), json_string_length(v),
                          HD_ETAGDUP)) < 0)
            break;
    }
    json_decref(seen);
    return rc;
}

/* The canonical text of set (keys sorted) into *out, NULL when empty; takes set. */
static int tags_out(json_t *set, char **out)
{
    int rc = 0;

    *out = NULL;
    if (json_object_size(set) &&
        !(*out = json_dumps(set, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII)))
        rc = -ENOMEM;
    json_decref(set);
    return rc;
}

/* One <Tag>: exactly one Key and one Value, nothing else. */
static int tag_read(const struct hd_xnode *tag, const char **k, const char **v)
{
    const struct hd_xnode *c;

    *k = *v = NULL;
    if (strcmp(tag->name, "Tag") != 0)
        return HD_EMALFORMEDXML;
    for (c = tag->child; c; c = c->next) {
        const char **slot = strcmp(c->name, "Key") == 0     ? k
                            : strcmp(c->name, "Value") == 0 ? v
                                                            : NULL;
        if (!slot || *slot || c->child)
            return HD_EMALFORMEDXML;
        *slot = c->raw;
    }
    return *k && *v ? 0 : HD_EMALFORMEDXML;
}

int hd_tags_parse_xml(const char *body, size_t len, char **out)
{
    return hd_tags_parse_xml_max(body, len, HD_TAGS_MAX, out);
}

int hd_tags_parse_xml_max(const char *body, size_t len, size_t max, char **out)
{
    struct hd_xnode *root = NULL, *ts, *tag;
    json_t *set;
    const char *k, *v;
    size_t n = 0;
    int rc;

    *out = NULL;
    if ((rc = hd_xml_parse(body, len, &root)) < 0)
        return rc;
    if (strcmp(root->name, "Tagging") != 0 || !(ts = hd_xnode_child(root, "TagSet")) ||
        hd_xnode_next(ts, "TagSet")) {
        hd_xnode_free(root);
        return HD_EMALFORMEDXML;
    }
    for (tag = ts->child; tag; tag = tag->next)
        n++;
    if (n > max) {
        hd_xnode_free(root);
        return HD_ETAGCOUNT;
    }
    if (!(set = json_object())) {
        hd_xnode_free(root);
        return -ENOMEM;
    }
    for (tag = ts->child; rc == 0 && tag; tag = tag->next)
        if ((rc = tag_read(tag, &k, &v)) == 0)
            rc = tag_add(set, k, strlen(k), v, strlen(v), HD_ETAGDUP);
    hd_xnode_free(root);
    if (rc < 0) {
        json_decref(set);
        return rc;
    }
    return tags_out(set, out);
}

int hd_tags_parse_header(const char *v, char **out)
{
    struct hd_query q;
    json_t *set;
    size_t i;
    int rc;

    *out = NULL;
    if (hd_query_parse(v, &q) < 0)
        return HD_ETAGHEADER;
    if (q.n > HD_TAGS_MAX) {
        hd_query_free(&q);
        return HD_ETAGCOUNT;
    }
    if (!(set = json_object())) {
        hd_query_free(&q);
        return -ENOMEM;
    }
    for (i = 0, rc = 0; rc == 0 && i < q.n; i++)
        rc = tag_add(set, q.params[i].key, q.params[i].key_len, q.params[i].value,
                     q.params[i].value_len, HD_ETAGHEADER);
    hd_query_free(&q);
    if (rc < 0) {
        json_decref(set);
        return rc;
    }
    return tags_out(set, out);
}

size_t hd_tags_count(const char *json)
{
    json_t *j = json ? json_loads(json, 0, NULL) : NULL;
    size_t n = json_is_object(j) ? json_object_size(j) : 0;

    json_decref(j);
    return n;
}

void hd_tags_xml(struct hd_buf *b, const char *json)
{
    json_t *j = json ? json_loads(json, 0, NULL) : NULL;
    const char *k;
    json_t *v;

    hd_xml_decl(b);
    hd_xml_open_ns(b, "Tagging", HD_XML_S3_NS);
    hd_xml_open(b, "TagSet");
    json_object_foreach(j, k, v)
    {
        if (!json_is_string(v))
            continue;
        hd_xml_open(b, "Tag");
        hd_xml_elem(b, "Key", k);
        hd_xml_elem(b, "Value", json_string_value(v));
        hd_xml_close(b, "Tag");
    }
    hd_xml_close(b, "TagSet");
    hd_xml_close(b, "Tagging");
    json_decref(j);
}
