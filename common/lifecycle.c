/* lifecycle: bucket lifecycle rules (see lifecycle.h). */
#include "common/lifecycle.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <xxhash.h>

#include "common/errors.h"
#include "common/s3resp.h"
#include "common/tagging.h"
#include "common/xml.h"

/* "YYYY-MM-DD" (a real day) into ms since the epoch at its midnight UTC; -1 when not one. */
static int64_t day_ms_of(const char *s)
{
    char iso[24];
    int64_t ms;

    if (!s || strlen(s) != 10 || s[4] != '-' || s[7] != '-')
        return -1;
    snprintf(iso, sizeof(iso), "%sT00:00:00Z", s);
    return hd_s3resp_parse_iso8601(iso, &ms) == 0 ? ms : -1;
}

/* ---- the canonical form ---- */

static int is_int_in(const json_t *v, json_int_t lo, json_int_t hi)
{
    return json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi;
}

static int check_filter(const json_t *f, int *has_tags, char *err, size_t errlen)
{
    const json_t *x, *gt = json_object_get(f, "size_gt"), *lt = json_object_get(f, "size_lt");
    const char *k;
    int conds = 0;

    if (!json_is_object(f))
        return hd_err_fmt(err, errlen, HD_EBADARG, "a lifecycle filter must be an object");
    json_object_foreach((json_t *)f, k, x)
    {
        if (strcmp(k, "prefix") == 0) {
            if (!json_is_string(x) || strlen(json_string_value(x)) > HD_LC_PREFIX_MAX)
                return hd_err_fmt(err, errlen, HD_EBADARG, "a lifecycle prefix is at most %d bytes",
                                  HD_LC_PREFIX_MAX);
            conds++;
        } else if (strcmp(k, "tags") == 0) {
            int trc = hd_tags_check(x, HD_LC_TAGS_MAX);
            if (trc == -ENOMEM)
                return trc;
            if (trc < 0)
                return hd_err_fmt(err, errlen, HD_EBADARG, "a filter's tags: %s",
                                  hd_err_info(trc)->message);
            conds += (int)json_object_size(x);
            *has_tags = 1;
        } else if (strcmp(k, "size_gt") == 0 || strcmp(k, "size_lt") == 0) {
            if (!is_int_in(x, 0, INT64_MAX))
                return hd_err_fmt(err, errlen, HD_EBADARG, "%s must be a non-negative integer",
                                  k[5] == 'g' ? "ObjectSizeGreaterThan" : "ObjectSizeLessThan");
            conds++;
        } else if (strcmp(k, "and") == 0) {
            if (!json_is_boolean(x))
                return hd_err_fmt(err, errlen, HD_EBADARG, "filter \"and\" must be true or false");
        } else {
            return hd_err_fmt(err, errlen, HD_EBADARG, "unknown lifecycle filter key '%.64s'", k);
        }
    }
    if (conds > 1 && !json_is_true(json_object_get(f, "and")))
        return hd_err_fmt(err, errlen, HD_EBADARG, "%s",
                          "a filter with more than one condition needs \"and\": true");
    if (lt && json_integer_value(lt) == 0)
        return hd_err_fmt(err, errlen, HD_EBADREQ, "%s",
                          "ObjectSizeLessThan must be greater than 0");
    if (gt && lt && json_integer_value(gt) >= json_integer_value(lt))
        return hd_err_fmt(err, errlen, HD_EBADREQ, "%s",
                          "ObjectSizeGreaterThan must be less than ObjectSizeLessThan");
    return 0;
}

static int check_rule(const json_t *r, char *err, size_t errlen)
{
    static const char *const day_keys[] = {"expire_days", "noncurrent_days", "abort_mpu_days",
                                           NULL};
    static const char *const known[] = {"id",
                                        "status",
                                        "prefix",
                                        "filter",
                                        "expire_days",
                                        "expire_date",
                                        "expired_delete_marker",
                                        "noncurrent_days",
                                        "newer_noncurrent",
                                        "abort_mpu_days",
                                        NULL};
    const json_t *x, *id = json_object_get(r, "id"), *st = json_object_get(r, "status");
    const char *k;
    int has_tags = 0, rc, expirations, i;

    if (!json_is_object(r))
        return hd_err_fmt(err, errlen, HD_EBADARG, "a lifecycle rule must be an object");
    json_object_foreach((json_t *)r, k, x)
    {
        for (i = 0; known[i] && strcmp(k, known[i]) != 0; i++)
            ;
        if (!known[i])
            return hd_err_fmt(err, errlen, HD_EBADARG, "unknown lifecycle rule key '%.64s'", k);
    }
    if (!json_is_string(id) || !*json_string_value(id))
        return hd_err_fmt(err, errlen, HD_EBADARG, "every lifecycle rule needs an ID");
    if (strlen(json_string_value(id)) > HD_LC_ID_MAX)
        return hd_err_fmt(err, errlen, HD_EBADARG,
                          "ID length should not exceed allowed limit of %d", HD_LC_ID_MAX);
    if (!json_is_string(st) || (strcmp(json_string_value(st), "Enabled") != 0 &&
                                strcmp(json_string_value(st), "Disabled") != 0))
        return hd_err_fmt(err, errlen, HD_EBADARG, "a rule's status is Enabled or Disabled");
    if ((x = json_object_get(r, "prefix"))) {
        if (json_object_get(r, "filter"))
            return hd_err_fmt(err, errlen, HD_EBADARG, "a rule has a prefix or a filter, not both");
        if (!json_is_string(x) || strlen(json_string_value(x)) > HD_LC_PREFIX_MAX)
            return hd_err_fmt(err, errlen, HD_EBADARG, "a lifecycle prefix is at most %d bytes",
                              HD_LC_PREFIX_MAX);
    }
    if (!json_object_get(r, "prefix") && !json_object_get(r, "filter"))
        return hd_err_fmt(err, errlen, HD_EBADARG, "%s",
                          "a rule needs a prefix or a filter (an empty filter takes every object)");
    if ((x = json_object_get(r, "filter")) && (rc = check_filter(x, &has_tags, err, errlen)) < 0)
        return rc;
    for (i = 0; day_keys[i]; i++)
        if ((x = json_object_get(r, day_keys[i])) && !is_int_in(x, 1, HD_LC_DAYS_MAX))
            return hd_err_fmt(err, errlen, HD_EBADARG,
                              "'%s' for %s action must be a positive integer",
                              i == 0   ? "Days"
                              : i == 1 ? "NoncurrentDays"
                                       : "DaysAfterInitiation",
                              i == 0   ? "Expiration"
                              : i == 1 ? "NoncurrentVersionExpiration"
                                       : "AbortIncompleteMultipartUpload");
    if ((x = json_object_get(r, "expire_date")) &&
        (!json_is_string(x) || day_ms_of(json_string_value(x)) < 0))
        return hd_err_fmt(err, errlen, HD_EBADARG, "%s", "'Date' must be a day, at midnight GMT");
    if ((x = json_object_get(r, "expired_delete_marker")) && !json_is_boolean(x))
        return hd_err_fmt(err, errlen, HD_EBADARG, "%s",
                          "ExpiredObjectDeleteMarker is true or false");
    if ((x = json_object_get(r, "newer_noncurrent"))) {
        if (!is_int_in(x, 1, 100))
            return hd_err_fmt(err, errlen, HD_EBADARG, "%s",
                              "NewerNoncurrentVersions must be between 1 and 100");
        if (!json_object_get(r, "noncurrent_days"))
            return hd_err_fmt(err, errlen, HD_EBADARG, "%s",
                              "NewerNoncurrentVersions needs NoncurrentDays");
    }
    expirations = (json_object_get(r, "expire_days") != NULL) +
                  (json_object_get(r, "expire_date") != NULL) +
                  (json_object_get(r, "expired_delete_marker") != NULL);
    if (expirations > 1)
        return hd_err_fmt(err, errlen, HD_EBADARG, "%s",
                          "an Expiration has one of Days, Date and ExpiredObjectDeleteMarker");
    if (!expirations && !json_object_get(r, "noncurrent_days") &&
        !json_object_get(r, "abort_mpu_days"))
        return hd_err_fmt(err, errlen, HD_EBADREQ, "%s",
                          "At least one action needs to be specified in a rule");
    if (has_tags && json_object_get(r, "abort_mpu_days"))
        return hd_err_fmt(err, errlen, HD_EBADREQ, "%s",
                          "AbortIncompleteMultipartUpload cannot be specified with Tags.");
    x = json_object_get(r, "filter");
    if ((json_object_get(x, "size_gt") || json_object_get(x, "size_lt")) &&
        json_object_get(r, "abort_mpu_days"))
        return hd_err_fmt(err, errlen, HD_EBADREQ, "%s",
                          "AbortIncompleteMultipartUpload cannot be specified with an object size "
                          "filter.");
    if (has_tags && json_object_get(r, "expired_delete_marker"))
        return hd_err_fmt(err, errlen, HD_EBADREQ, "%s",
                          "ExpiredObjectDeleteMarker cannot be specified with Tags.");
    return 0;
}

int hd_lc_check(const json_t *v, char *err, size_t errlen)
{
    size_t i, j, len;
    char *text;
    int rc;

    if (!json_is_array(v) || json_array_size(v) == 0)
        return hd_err_fmt(err, errlen, HD_EBADARG,
                          "lifecycle must be an array of at least one rule");
    if (json_array_size(v) > HD_LC_RULES_MAX)
        return hd_err_fmt(err, errlen, HD_EBADREQ, "a lifecycle configuration has at most %d rules",
                          HD_LC_RULES_MAX);
    for (i = 0; i < json_array_size(v); i++) {
        const json_t *r = json_array_get(v, i);
        if ((rc = check_rule(r, err, errlen)) < 0)
            return rc;
        for (j = 0; j < i; j++)
            if (json_equal(json_object_get(r, "id"), json_object_get(json_array_get(v, j), "id")))
                return hd_err_fmt(err, errlen, HD_EBADARG, "%s",
                                  "Rule ID must be unique. Found same ID for more than one rule");
    }
    if (!(text = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS)))
        return -ENOMEM;
    len = strlen(text);
    free(text);
    if (len > HD_LC_JSON_MAX)
        return hd_err_fmt(err, errlen, HD_EBADREQ,
                          "The lifecycle configuration is too large (over %d KiB).",
                          HD_LC_JSON_MAX >> 10);
    return 0;
}

/* ---- XML in ---- */

/* The only child of n named name in *out (NULL when none): 0, or HD_EMALFORMEDXML when it is
 * given twice. */
static int one(const struct hd_xnode *n, const char *name, const struct hd_xnode **out)
{
    *out = hd_xnode_child(n, name);
    return *out && hd_xnode_next(*out, name) ? HD_EMALFORMEDXML : 0;
}

static int listed(const char *name, const char *const *list)
{
    size_t i;

    for (i = 0; list && list[i]; i++)
        if (strcmp(name, list[i]) == 0)
            return 1;
    return 0;
}

/* Only elements of the lists: text ones (leaf) and ones holding elements (nested). */
static int only(const struct hd_xnode *n, const char *const *leaf, const char *const *nested)
{
    const struct hd_xnode *c;

    for (c = n->child; c; c = c->next)
        if (!(listed(c->name, nested) || (listed(c->name, leaf) && !c->child)))
            return HD_EMALFORMEDXML;
    return 0;
}

/* The integer text of the child name of n into o[key] (absent: nothing; required: malformed).
 * Signs are read so that the check can say a count must be positive. */
static int int_child(const struct hd_xnode *n, const char *name, json_t *o, const char *key,
                     int required)
{
    const struct hd_xnode *c;
    const char *s;
    char *end;
    long long v;

    if (one(n, name, &c) < 0 || (!c && required))
        return HD_EMALFORMEDXML;
    if (!c)
        return 0;
    s = c->text;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (!*s || *end || (*s != '-' && (*s < '0' || *s > '9')))
        return HD_EMALFORMEDXML;
    if (errno == ERANGE) /* a number, out of any range: the check says which */
        v = *s == '-' ? -1 : (long long)INT64_MAX;
    return json_object_set_new(o, key, json_integer(v)) < 0 ? -ENOMEM : 0;
}

/* <Date>: ISO 8601 at midnight UTC ("2027-01-01T00:00:00Z", fractions of a second and
 * "+00:00" too, or the day alone) into "2027-01-01". */
static int date_child(const char *s, json_t *o, char *msg, size_t msglen)
{
    char day[11], iso[64];
    size_t n = strlen(s);
    int64_t ms;

    if (n == 10) { /* a day alone (s3cmd --expiry-date=2031-01-01): its midnight */
        ms = day_ms_of(s);
    } else if (n >= 20 && n < sizeof(iso)) {
        snprintf(iso, sizeof(iso), "%s", s); /* "+00:00" is the Z the parser reads */
        if (n > 6 && strcmp(iso + n - 6, "+00:00") == 0)
            snprintf(iso + n - 6, 7, "Z");
        if (hd_s3resp_parse_iso8601(iso, &ms) < 0)
            ms = -1;
    } else {
        ms = -1;
    }
    if (ms < 0)
        return hd_err_fmt(msg, msglen, HD_EBADARG, "%s", "'Date' must be in ISO 8601 format");
    if (ms % 86400000 != 0)
        return hd_err_fmt(msg, msglen, HD_EBADARG, "%s", "'Date' must be at midnight GMT");
    memcpy(day, s, 10);
    day[10] = '\0';
    return json_object_set_new(o, "expire_date", json_string(day)) < 0 ? -ENOMEM : 0;
}

/* <Tag><Key>k</Key><Value>v</Value></Tag> into tags (an object, made on first use in f). */
static int tag_child(const struct hd_xnode *tag, json_t *f, char *msg, size_t msglen)
{
    static const char *const kv[] = {"Key", "Value", NULL};
    const struct hd_xnode *k, *v;
    json_t *tags = json_object_get(f, "tags"), *s;

    if (only(tag, kv, NULL) < 0 || one(tag, "Key", &k) < 0 || one(tag, "Value", &v) < 0 || !k)
        return HD_EMALFORMEDXML;
    if (!tags && (!(tags = json_object()) || json_object_set_new(f, "tags", tags) < 0))
        return -ENOMEM;
    if (json_object_get(tags, k->raw))
        return hd_err_fmt(msg, msglen, HD_EBADREQ, "%s", "Duplicate Tag Keys are not allowed.");
    if (!(s = json_string(v ? v->raw : "")) || json_object_set_new(tags, k->raw, s) < 0)
        return -ENOMEM;
    return 0;
}

/* The conditions of <Filter> or of its <And> into f. */
static int conditions(const struct hd_xnode *n, json_t *f, char *msg, size_t msglen)
{
    const struct hd_xnode *c;
    int rc;

    if (one(n, "Prefix", &c) < 0)
        return HD_EMALFORMEDXML;
    if (c && json_object_set_new(f, "prefix", json_string(c->raw)) < 0)
        return -ENOMEM;
    for (c = hd_xnode_child(n, "Tag"); c; c = hd_xnode_next(c, "Tag"))
        if ((rc = tag_child(c, f, msg, msglen)) < 0)
            return rc;
    if ((rc = int_child(n, "ObjectSizeGreaterThan", f, "size_gt", 0)) < 0 ||
        (rc = int_child(n, "ObjectSizeLessThan", f, "size_lt", 0)) < 0)
        return rc;
    return 0;
}

static int filter_json(const struct hd_xnode *fx, json_t *r, char *msg, size_t msglen)
{
    static const char *const leaf[] = {"Prefix", "ObjectSizeGreaterThan", "ObjectSizeLessThan",
                                       NULL};
    static const char *const nested[] = {"Tag", "And", NULL};
    static const char *const in_and[] = {"Tag", NULL};
    const struct hd_xnode *c, *and;
    json_t *f = json_object();
    size_t n = 0;
    int rc;

    if (!f || json_object_set_new(r, "filter", f) < 0)
        return -ENOMEM;
    if ((rc = only(fx, leaf, nested)) < 0)
        return rc;
    for (c = fx->child; c; c = c->next)
        n++;
    if (n > 1)
        return HD_EMALFORMEDXML; /* more than one condition goes in <And> */
    if ((rc = one(fx, "And", &and)) < 0)
        return rc;
    if (!and)
        return conditions(fx, f, msg, msglen);
    if ((rc = only(and, leaf, in_and)) < 0)
        return rc;
    if (!and->child)
        return HD_EMALFORMEDXML; /* an And of nothing */
    if (json_object_set_new(f, "and", json_true()) < 0)
        return -ENOMEM;
    return conditions(and, f, msg, msglen);
}

static int expiration_json(const struct hd_xnode *ex, json_t *r, char *msg, size_t msglen)
{
    static const char *const known[] = {"Days", "Date", "ExpiredObjectDeleteMarker", NULL};
    const struct hd_xnode *c;
    size_t n = 0;
    int rc;

    if ((rc = only(ex, known, NULL)) < 0)
        return rc;
    for (c = ex->child; c; c = c->next)
        n++;
    if (n != 1)
        return HD_EMALFORMEDXML;
    c = ex->child;
    if (strcmp(c->name, "Days") == 0)
        return int_child(ex, "Days", r, "expire_days", 1);
    if (strcmp(c->name, "Date") == 0)
        return date_child(c->text, r, msg, msglen);
    if (strcmp(c->text, "true") != 0 && strcmp(c->text, "false") != 0)
        return HD_EMALFORMEDXML;
    return json_object_set_new(r, "expired_delete_marker", json_boolean(c->text[0] == 't')) < 0
               ? -ENOMEM
               : 0;
}

static int rule_json(const struct hd_xnode *rx, json_t *r, char *msg, size_t msglen)
{
    static const char *const leaf[] = {"ID", "Status", "Prefix", NULL};
    static const char *const nested[] = {"Filter",
                                         "Expiration",
                                         "Transition",
                                         "NoncurrentVersionExpiration",
                                         "NoncurrentVersionTransition",
                                         "AbortIncompleteMultipartUpload",
                                         NULL};
    static const char *const nve[] = {"NoncurrentDays", "NewerNoncurrentVersions", NULL};
    static const char *const aimu[] = {"DaysAfterInitiation", NULL};
    const struct hd_xnode *c;
    int rc;

    if ((rc = only(rx, leaf, nested)) < 0)
        return rc;
    if ((rc = one(rx, "ID", &c)) < 0)
        return rc;
    if (c && *c->raw && json_object_set_new(r, "id", json_string(c->raw)) < 0)
        return -ENOMEM;
    if (one(rx, "Status", &c) < 0 || !c ||
        (strcmp(c->text, "Enabled") != 0 && strcmp(c->text, "Disabled") != 0))
        return HD_EMALFORMEDXML;
    if (json_object_set_new(r, "status", json_string(c->text)) < 0)
        return -ENOMEM;
    if (!hd_xnode_child(rx, "Prefix") == !hd_xnode_child(rx, "Filter"))
        return HD_EMALFORMEDXML; /* one of them (AWS: Filter is required without Prefix) */
    if ((rc = one(rx, "Prefix", &c)) < 0)
        return rc;
    if (c && json_object_set_new(r, "prefix", json_string(c->raw)) < 0)
        return -ENOMEM;
    if ((rc = one(rx, "Filter", &c)) < 0 || (c && (rc = filter_json(c, r, msg, msglen)) < 0))
        return rc;
    if ((rc = one(rx, "Expiration", &c)) < 0 ||
        (c && (rc = expiration_json(c, r, msg, msglen)) < 0))
        return rc;
    if ((rc = one(rx, "NoncurrentVersionExpiration", &c)) < 0)
        return rc;
    if (c && ((rc = only(c, nve, NULL)) < 0 ||
              (rc = int_child(c, "NoncurrentDays", r, "noncurrent_days", 1)) < 0 ||
              (rc = int_child(c, "NewerNoncurrentVersions", r, "newer_noncurrent", 0)) < 0))
        return rc;
    if ((rc = one(rx, "AbortIncompleteMultipartUpload", &c)) < 0)
        return rc;
    if (c && ((rc = only(c, aimu, NULL)) < 0 ||
              (rc = int_child(c, "DaysAfterInitiation", r, "abort_mpu_days", 1)) < 0))
        return rc;
    if (hd_xnode_child(rx, "Transition") || hd_xnode_child(rx, "NoncurrentVersionTransition"))
        return hd_err_fmt(
            msg, msglen, HD_ENOTIMPL, "%s",
            "hoard keeps one storage class: lifecycle transitions are not supported.");
    return 0;
}

/* An ID for rule i of a (which has none): 16 hex digits of a hash of the rule and its place,
 * unused by the other rules. */
static int give_id(json_t *a, size_t i)
{
    json_t *r = json_array_get(a, i);
    char *text = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS), id[24];
    uint64_t h;
    size_t j, seed;
    int used;

    if (!text)
        return -ENOMEM;
    for (seed = i;; seed += json_array_size(a)) {
        h = XXH64(text, strlen(text), (unsigned long long)seed);
        snprintf(id, sizeof(id), "%016" PRIx64, h);
        for (used = 0, j = 0; j < json_array_size(a) && !used; j++) {
            const char *o = json_string_value(json_object_get(json_array_get(a, j), "id"));
            used = o && strcmp(o, id) == 0;
        }
        if (!used)
            break;
    }
    free(text);
    return json_object_set_new(r, "id", json_string(id)) < 0 ? -ENOMEM : 0;
}

int hd_lc_parse_xml(const char *body, size_t len, char **out, char *msg, size_t msglen)
{
    struct hd_xnode *root = NULL;
    const struct hd_xnode *c;
    json_t *a = NULL, *o;
    size_t i;
    int rc;

    *out = NULL;
    if (msg && msglen)
        msg[0] = '\0';
    if ((rc = hd_xml_parse_list(body, len, "LifecycleConfiguration", "Rule", &root)) < 0)
        return rc;
    if (!(a = json_array())) {
        rc = -ENOMEM;
        goto out;
    }
    for (c = hd_xnode_child(root, "Rule"); c; c = hd_xnode_next(c, "Rule")) {
        if (json_array_size(a) == HD_LC_RULES_MAX) {
            rc = hd_err_fmt(msg, msglen, HD_EBADREQ,
                            "a lifecycle configuration has at most %d rules", HD_LC_RULES_MAX);
            goto out;
        }
        if (!(o = json_object()) || json_array_append_new(a, o) < 0) {
            rc = -ENOMEM;
            goto out;
        }
        if ((rc = rule_json(c, o, msg, msglen)) < 0)
            goto out;
    }
    for (i = 0; i < json_array_size(a); i++)
        if (!json_object_get(json_array_get(a, i), "id") && (rc = give_id(a, i)) < 0)
            goto out;
    if ((rc = hd_lc_check(a, msg, msglen)) < 0)
        goto out;
    if (!(*out = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS)))
        rc = -ENOMEM;
out:
    json_decref(a);
    hd_xnode_free(root);
    return rc;
}

/* ---- XML out ---- */

static void int_elem(struct hd_buf *b, const char *tag, const json_t *v)
{
    hd_xml_elemf(b, tag, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
}

static void conditions_xml(struct hd_buf *b, const json_t *f)
{
    const json_t *v;
    const char *k;

    if ((v = json_object_get(f, "prefix")))
        hd_xml_elem(b, "Prefix", json_string_value(v));
    json_object_foreach((json_t *)json_object_get(f, "tags"), k, v)
    {
        hd_xml_open(b, "Tag");
        hd_xml_elem(b, "Key", k);
        hd_xml_elem(b, "Value", json_string_value(v));
        hd_xml_close(b, "Tag");
    }
    if ((v = json_object_get(f, "size_gt")))
        int_elem(b, "ObjectSizeGreaterThan", v);
    if ((v = json_object_get(f, "size_lt")))
        int_elem(b, "ObjectSizeLessThan", v);
}

void hd_lc_xml(struct hd_buf *b, const json_t *a)
{
    const json_t *r, *v, *f;
    size_t i;

    hd_xml_decl(b);
    hd_xml_open_ns(b, "LifecycleConfiguration", HD_XML_S3_NS);
    for (i = 0; i < json_array_size(a); i++) {
        r = json_array_get(a, i);
        hd_xml_open(b, "Rule");
        hd_xml_elem(b, "ID", json_string_value(json_object_get(r, "id")));
        if ((v = json_object_get(r, "prefix")))
            hd_xml_elem(b, "Prefix", json_string_value(v));
        if ((f = json_object_get(r, "filter"))) {
            hd_xml_open(b, "Filter");
            if (json_is_true(json_object_get(f, "and"))) {
                hd_xml_open(b, "And");
                conditions_xml(b, f);
                hd_xml_close(b, "And");
            } else {
                conditions_xml(b, f);
            }
            hd_xml_close(b, "Filter");
        }
        hd_xml_elem(b, "Status", json_string_value(json_object_get(r, "status")));
        if ((v = json_object_get(r, "expire_days"))) {
            hd_xml_open(b, "Expiration");
            int_elem(b, "Days", v);
            hd_xml_close(b, "Expiration");
        } else if ((v = json_object_get(r, "expire_date"))) {
            hd_xml_open(b, "Expiration");
            hd_xml_elemf(b, "Date", "%sT00:00:00.000Z", json_string_value(v));
            hd_xml_close(b, "Expiration");
        } else if ((v = json_object_get(r, "expired_delete_marker"))) {
            hd_xml_open(b, "Expiration");
            hd_xml_elem(b, "ExpiredObjectDeleteMarker", json_is_true(v) ? "true" : "false");
            hd_xml_close(b, "Expiration");
        }
        if ((v = json_object_get(r, "noncurrent_days"))) {
            hd_xml_open(b, "NoncurrentVersionExpiration");
            int_elem(b, "NoncurrentDays", v);
            if ((v = json_object_get(r, "newer_noncurrent")))
                int_elem(b, "NewerNoncurrentVersions", v);
            hd_xml_close(b, "NoncurrentVersionExpiration");
        }
        if ((v = json_object_get(r, "abort_mpu_days"))) {
            hd_xml_open(b, "AbortIncompleteMultipartUpload");
            int_elem(b, "DaysAfterInitiation", v);
            hd_xml_close(b, "AbortIncompleteMultipartUpload");
        }
        hd_xml_close(b, "Rule");
    }
    hd_xml_close(b, "LifecycleConfiguration");
}

/* ---- acting on the rules ---- */

int64_t hd_lc_due_ms(int64_t since_ms, int64_t days, int64_t day_ms)
{
    int64_t t;

    if (day_ms <= 0)
        day_ms = 86400000;
    if (since_ms < 0)
        since_ms = 0;
    if (days > (INT64_MAX - since_ms) / day_ms - 1)
        return INT64_MAX;
    t = since_ms + days * day_ms;
    return (t + day_ms - 1) / day_ms * day_ms;
}

static int enabled(const json_t *r)
{
    const char *s = json_string_value(json_object_get(r, "status"));

    return s && strcmp(s, "Enabled") == 0;
}

static const char *rule_prefix(const json_t *r)
{
    const json_t *p = json_object_get(r, "prefix");

    if (!p)
        p = json_object_get(json_object_get(r, "filter"), "prefix");
    return json_is_string(p) ? json_string_value(p) : "";
}

static int prefix_ok(const json_t *r, const char *name)
{
    const char *p = rule_prefix(r);

    return strncmp(name, p, strlen(p)) == 0;
}

/* The rule's filter takes the object (name, size, tags). */
static int matches(const json_t *r, const char *name, uint64_t size, const json_t *tags)
{
    const json_t *f = json_object_get(r, "filter"), *v, *want;
    const char *k;

    if (!prefix_ok(r, name))
        return 0;
    if ((v = json_object_get(f, "size_gt")) && !(size > (uint64_t)json_integer_value(v)))
        return 0;
    if ((v = json_object_get(f, "size_lt")) && !(size < (uint64_t)json_integer_value(v)))
        return 0;
    json_object_foreach((json_t *)json_object_get(f, "tags"), k, want)
    {
        const json_t *have = json_object_get(tags, k);
        if (!json_is_string(have) || strcmp(json_string_value(have), json_string_value(want)) != 0)
            return 0;
    }
    return 1;
}

int hd_lc_expired(const json_t *rules, const char *name, uint64_t size, int64_t mtime_ms,
                  const json_t *tags, int64_t now_ms, int64_t day_ms)
{
    size_t i;

    for (i = 0; i < json_array_size(rules); i++) {
        const json_t *r = json_array_get(rules, i), *d = json_object_get(r, "expire_days");
        const json_t *date = json_object_get(r, "expire_date");
        if (!enabled(r) || (!d && !date) || !matches(r, name, size, tags))
            continue;
        if (d && hd_lc_due_ms(mtime_ms, json_integer_value(d), day_ms) <= now_ms)
            return 1;
        if (date) {
            int64_t at = day_ms_of(json_string_value(date));
            if (at >= 0 && at <= now_ms)
                return 1;
        }
    }
    return 0;
}

int hd_lc_expiry(const json_t *rules, const char *name, uint64_t size, int64_t mtime_ms,
                 const json_t *tags, int64_t day_ms, int64_t *at_ms, const char **id)
{
    size_t i;
    int found = 0;

    for (i = 0; i < json_array_size(rules); i++) {
        const json_t *r = json_array_get(rules, i), *d = json_object_get(r, "expire_days");
        const json_t *date = json_object_get(r, "expire_date");
        int64_t at;
        if (!enabled(r) || (!d && !date) || !matches(r, name, size, tags))
            continue;
        at = d ? hd_lc_due_ms(mtime_ms, json_integer_value(d), day_ms)
               : day_ms_of(json_string_value(date));
        if (at >= 0 && (!found || at < *at_ms)) {
            *at_ms = at;
            *id = json_string_value(json_object_get(r, "id"));
            found = 1;
        }
    }
    return found;
}

int hd_lc_abort_due(const json_t *rules, const char *name, int64_t created_ms, int64_t now_ms,
                    int64_t day_ms)
{
    size_t i;

    for (i = 0; i < json_array_size(rules); i++) {
        const json_t *r = json_array_get(rules, i), *d = json_object_get(r, "abort_mpu_days");
        if (enabled(r) && d && prefix_ok(r, name) &&
            hd_lc_due_ms(created_ms, json_integer_value(d), day_ms) <= now_ms)
            return 1;
    }
    return 0;
}

int hd_lc_may_expire(const json_t *rules, const char *name)
{
    size_t i;

    for (i = 0; i < json_array_size(rules); i++) {
        const json_t *r = json_array_get(rules, i);
        if (enabled(r) &&
            (json_object_get(r, "expire_days") || json_object_get(r, "expire_date")) &&
            prefix_ok(r, name))
            return 1;
    }
    return 0;
}

int hd_lc_actions(const json_t *rules, int *tags)
{
    size_t i;
    int what = 0;

    *tags = 0;
    for (i = 0; i < json_array_size(rules); i++) {
        const json_t *r = json_array_get(rules, i);
        if (!enabled(r))
            continue;
        if (json_object_get(r, "expire_days") || json_object_get(r, "expire_date")) {
            what |= HD_LC_EXPIRES;
            if (json_object_get(json_object_get(r, "filter"), "tags"))
                *tags = 1;
        }
        if (json_object_get(r, "abort_mpu_days"))
            what |= HD_LC_ABORTS;
    }
    return what;
}
