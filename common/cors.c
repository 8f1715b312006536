/* cors: bucket CORS configurations (see cors.h). */
#include "common/cors.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/errors.h"
#include "common/xml.h"

static const char *const methods[] = {"GET", "PUT", "POST", "DELETE", "HEAD", NULL};

/* A value that may go into a response header as it is: 1..HD_CORS_VALUE_MAX printable ASCII
 * characters (space only where `space`), at most one '*' where `one_star`. */
static const char *value_problem(const char *v, int space, int one_star)
{
    size_t n = strlen(v), i, stars = 0;

    if (n == 0)
        return "is empty";
    if (n > HD_CORS_VALUE_MAX)
        return "is too long";
    for (i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)v[i];
        if (ch < 0x20 || ch > 0x7e || (ch == ' ' && !space) || (ch == ',' && !space))
            return "has a character that cannot be sent in a header";
        stars += ch == '*';
    }
    if (one_star && stars > 1)
        return "can not have more than one wildcard";
    return NULL;
}

static int is_method(const char *m)
{
    size_t i;

    for (i = 0; methods[i]; i++)
        if (strcmp(m, methods[i]) == 0)
            return 1;
    return 0;
}

/* One list of a rule: an array of strings checked by value_problem (what names it for the
 * message: "AllowedOrigin"), at least `min` long. */
static int check_list(const json_t *a, size_t min, const char *what, int one_star, char *err,
                      size_t errlen)
{
    const char *why;
    size_t i;

    if (!json_is_array(a) || json_array_size(a) < min)
        return hd_err_fmt(err, errlen, HD_EBADARG, "every CORS rule needs at least one %s", what);
    for (i = 0; i < json_array_size(a); i++) {
        const char *v = json_string_value(json_array_get(a, i));
        if (!v)
            return hd_err_fmt(err, errlen, HD_EBADARG, "%s must be a string", what);
        if (strcmp(what, "AllowedMethod") == 0 && !is_method(v))
            return hd_err_fmt(
                err, errlen, HD_EBADARG,
                "Found unsupported HTTP method in CORS config. Unsupported method is %.64s", v);
        if ((why = value_problem(v, 0, one_star)))
            return hd_err_fmt(err, errlen, HD_EBADARG, "%s \"%.64s\" %s.", what, v, why);
    }
    return 0;
}

int hd_cors_check(const json_t *v, char *err, size_t errlen)
{
    size_t i;
    int rc;

    if (!json_is_array(v) || json_array_size(v) == 0)
        return hd_err_fmt(err, errlen, HD_EBADARG, "cors must be an array of at least one rule");
    if (json_array_size(v) > HD_CORS_RULES_MAX)
        return hd_err_fmt(err, errlen, HD_EBADARG, "a CORS configuration has at most %d rules",
                          HD_CORS_RULES_MAX);
    for (i = 0; i < json_array_size(v); i++) {
        const json_t *r = json_array_get(v, i), *x;
        const char *k;
        if (!json_is_object(r))
            return hd_err_fmt(err, errlen, HD_EBADARG, "a CORS rule must be an object");
        json_object_foreach((json_t *)r, k, x)
        {
            if (strcmp(k, "origins") == 0)
                rc = check_list(x, 1, "AllowedOrigin", 1, err, errlen);
            else if (strcmp(k, "methods") == 0)
                rc = check_list(x, 1, "AllowedMethod", 0, err, errlen);
            else if (strcmp(k, "headers") == 0)
                rc = check_list(x, 0, "AllowedHeader", 1, err, errlen);
            else if (strcmp(k, "expose") == 0)
                rc = check_list(x, 0, "ExposeHeader", 0, err, errlen);
            else if (strcmp(k, "max_age") == 0)
                rc = json_is_integer(x) && json_integer_value(x) >= 0 &&
                             json_integer_value(x) <= 2147483647
                         ? 0
                         : hd_err_fmt(err, errlen, HD_EBADARG,
                                      "MaxAgeSeconds must be 0..2147483647");
            else if (strcmp(k, "id") == 0)
                rc = !json_is_string(x) || value_problem(json_string_value(x), 1, 0)
                         ? hd_err_fmt(err, errlen, HD_EBADARG,
                                      "a CORS rule's ID must be printable text")
                         : 0;
            else
                rc = hd_err_fmt(err, errlen, HD_EBADARG, "unknown CORS rule key '%.64s'", k);
            if (rc < 0)
                return rc;
        }
        if (!json_object_get(r, "origins") || !json_object_get(r, "methods"))
            return hd_err_fmt(err, errlen, HD_EBADARG,
                              "every CORS rule needs an AllowedOrigin and an AllowedMethod");
    }
    return 0;
}

/* ---- XML ---- */

/* Appends the text of every child of rule named name to a new array set as key in o. */
static int add_list(json_t *o, const struct hd_xnode *rule, const char *name, const char *key)
{
    const struct hd_xnode *c;
    json_t *a = NULL;

    for (c = hd_xnode_child(rule, name); c; c = hd_xnode_next(c, name)) {
        if (!a && (!(a = json_array()) || json_object_set_new(o, key, a) < 0))
            return -ENOMEM;
        if (json_array_append_new(a, json_string(c->text)) < 0)
            return -ENOMEM;
    }
    return 0;
}

static int rule_json(const struct hd_xnode *rule, json_t *o)
{
    static const char *const known[] = {
        "ID", "AllowedOrigin", "AllowedMethod", "AllowedHeader", "ExposeHeader", "MaxAgeSeconds",
        NULL};
    const struct hd_xnode *c;
    const char *v;
    size_t i;
    int rc;

    for (c = rule->child; c; c = c->next) {
        for (i = 0; known[i] && strcmp(c->name, known[i]) != 0; i++)
            ;
        if (!known[i] || c->child)
            return HD_EMALFORMEDXML;
    }
    if (!hd_xnode_child(rule, "AllowedOrigin") || !hd_xnode_child(rule, "AllowedMethod"))
        return HD_EMALFORMEDXML;
    if ((c = hd_xnode_child(rule, "ID"))) {
        if (hd_xnode_next(c, "ID"))
            return HD_EMALFORMEDXML;
        if (json_object_set_new(o, "id", json_string(c->text)) < 0)
            return -ENOMEM;
    }
    if ((rc = add_list(o, rule, "AllowedOrigin", "origins")) < 0 ||
        (rc = add_list(o, rule, "AllowedMethod", "methods")) < 0 ||
        (rc = add_list(o, rule, "AllowedHeader", "headers")) < 0 ||
        (rc = add_list(o, rule, "ExposeHeader", "expose")) < 0)
        return rc;
    if ((c = hd_xnode_child(rule, "MaxAgeSeconds"))) {
        char *end;
        long long n;
        v = c->text;
        errno = 0;
        n = strtoll(v, &end, 10);
        if (hd_xnode_next(c, "MaxAgeSeconds") || !*v || *end || errno || n < 0 || n > 2147483647)
            return HD_EMALFORMEDXML;
        if (json_object_set_new(o, "max_age", json_integer(n)) < 0)
            return -ENOMEM;
    }
    return 0;
}

int hd_cors_parse_xml(const char *body, size_t len, char **out, char *msg, size_t msglen)
{
    struct hd_xnode *root = NULL;
    const struct hd_xnode *c;
    json_t *a = NULL, *o;
    int rc;

    *out = NULL;
    if (msg && msglen)
        msg[0] = '\0';
    if ((rc = hd_xml_parse_list(body, len, "CORSConfiguration", "CORSRule", &root)) < 0)
        return rc;
    if (!(a = json_array())) {
        rc = -ENOMEM;
        goto out;
    }
    for (c = hd_xnode_child(root, "CORSRule"); c; c = hd_xnode_next(c, "CORSRule")) {
        if (!(o = json_object()) || json_array_append_new(a, o) < 0) {
            rc = -ENOMEM;
            goto out;
        }
        if ((rc = rule_json(c, o)) < 0)
            goto out;
    }
    if ((rc = hd_cors_check(a, msg, msglen)) == HD_EBADARG) {
        rc = HD_EBADREQ;
        goto out;
    }
    if (!(*out = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS))) {
        rc = -ENOMEM;
    } else if (strlen(*out) > HD_CORS_JSON_MAX) {
        free(*out);
        *out = NULL;
        rc = hd_err_fmt(msg, msglen, HD_EBADREQ, "The CORS configuration is too large.");
    }
out:
    json_decref(a);
    hd_xnode_free(root);
    return rc;
}

static void xml_list(struct hd_buf *b, const json_t *rule, const char *key, const char *tag)
{
    const json_t *a = json_object_get(rule, key);
    size_t i;

    for (i = 0; i < json_array_size(a); i++)
        hd_xml_elem(b, tag, json_string_value(json_array_get(a, i)));
}

void hd_cors_xml(struct hd_buf *b, const json_t *a)
{
    const json_t *r;
    size_t i;

    hd_xml_decl(b);
    hd_xml_open_ns(b, "CORSConfiguration", HD_XML_S3_NS);
    for (i = 0; i < json_array_size(a); i++) {
        r = json_array_get(a, i);
        hd_xml_open(b, "CORSRule");
        if (json_is_string(json_object_get(r, "id")))
            hd_xml_elem(b, "ID", json_string_value(json_object_get(r, "id")));
        xml_list(b, r, "headers", "AllowedHeader");
        xml_list(b, r, "methods", "AllowedMethod");
        xml_list(b, r, "origins", "AllowedOrigin");
        xml_list(b, r, "expose", "ExposeHeader");
        if (json_is_integer(json_object_get(r, "max_age")))
            hd_xml_elemf(b, "MaxAgeSeconds", "%lld",
                         (long long)json_integer_value(json_object_get(r, "max_age")));
        hd_xml_close(b, "CORSRule");
    }
    hd_xml_close(b, "CORSConfiguration");
}

/* ---- matching ---- */

/* s[0..n) against pattern p (at most one '*', any run of characters). */
static int wild(const char *p, const char *s, size_t n, int icase)
{
    const char *star = strchr(p, '*');
    size_t pre, suf;

    if (!star)
        return strlen(p) == n && (icase ? strncasecmp(p, s, n) : strncmp(p, s, n)) == 0;
    pre = (size_t)(star - p);
    suf = strlen(star + 1);
    if (n < pre + suf)
        return 0;
    if (icase)
        return strncasecmp(p, s, pre) == 0 && strncasecmp(star + 1, s + n - suf, suf) == 0;
    return strncmp(p, s, pre) == 0 && strncmp(star + 1, s + n - suf, suf) == 0;
}

static int any(const json_t *a, const char *s, size_t n, int icase)
{
    size_t i;

    for (i = 0; i < json_array_size(a); i++) {
        const char *p = json_string_value(json_array_get(a, i));
        if (p && wild(p, s, n, icase))
            return 1;
    }
    return 0;
}

/* Every name of the list hdrs is allowed by the patterns a. */
static int headers_ok(const json_t *a, const char *hdrs)
{
    const char *p = hdrs, *e;

    while (p && *p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (!*p)
            break;
        e = p + strcspn(p, ",");
        {
            const char *t = e;
            while (t > p && (t[-1] == ' ' || t[-1] == '\t'))
                t--;
            if (!any(a, p, (size_t)(t - p), 1))
                return 0;
        }
        p = e;
    }
    return 1;
}

int hd_cors_find(const json_t *rules, const char *origin, const char *method, const char *hdrs)
{
    size_t i, j;

    if (!origin || !method)
        return -1;
    for (i = 0; i < json_array_size(rules); i++) {
        const json_t *r = json_array_get(rules, i), *m = json_object_get(r, "methods");
        int mok = 0;
        if (!any(json_object_get(r, "origins"), origin, strlen(origin), 0))
            continue;
        for (j = 0; j < json_array_size(m) && !mok; j++)
            mok = json_is_string(json_array_get(m, j)) &&
                  strcmp(json_string_value(json_array_get(m, j)), method) == 0;
        if (mok && headers_ok(json_object_get(r, "headers"), hdrs))
            return (int)i;
    }
    return -1;
}
