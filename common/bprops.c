#include "common/bprops.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/cors.h"
#include "common/lifecycle.h"
#include "common/errors.h"
#include "common/httputil.h"
#include "common/policy.h"
#include "common/tagging.h"

/* http[s]://host[:port] with host a DNS name, IPv4 or [IPv6]; nothing after. */
static int endpoint_ok(const char *s)
{
    const char *h;
    size_t i, n;

    if (strncmp(s, "http://", 7) == 0)
        h = s + 7;
    else if (strncmp(s, "https://", 8) == 0)
        h = s + 8;
    else
        return 0;
    if (*h == '[') {
        const char *e = strchr(h, ']');
        if (!e || e == h + 1)
            return 0;
        for (i = 1; h + i < e; i++)
            if (!strchr("0123456789abcdefABCDEF:.", h[i]))
                return 0;
        h = e + 1;
    } else {
        n = strcspn(h, ":");
        if (n == 0)
            return 0;
        for (i = 0; i < n; i++) {
            char c = h[i];
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '-' || c == '_'))
                return 0;
        }
        h += n;
    }
    if (*h == ':') {
        uint64_t port;
        if (hd_parse_u64(h + 1, &port) < 0 || port == 0 || port > 65535)
            return 0;
        return 1;
    }
    return *h == '\0';
}

static int name_ok(const char *s)
{
    size_t i;

    for (i = 0; s[i]; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return 0;
    }
    return i < HD_UPSTREAM_NAME_MAX;
}

static int copy_str(json_t *v, char *dst, size_t cap)
{
    const char *s = json_string_value(v);

    if (!s || strlen(s) >= cap)
        return -1;
    memcpy(dst, s, strlen(s) + 1);
    return 0;
}

static int parse_upstream(json_t *u, struct hd_upstream *up, char *err, size_t errlen)
{
    const char *k;
    json_t *v;

    if (!json_is_object(u))
        return hd_err_fmt(err, errlen, HD_EBADARG, "%s must be an object", "upstream");
    memset(up, 0, sizeof(*up));
    snprintf(up->region, sizeof(up->region), "us-east-1");
    json_object_foreach(u, k, v)
    {
        if (strcmp(k, "endpoint") == 0) {
            if (copy_str(v, up->endpoint, sizeof(up->endpoint)) < 0)
                return hd_err_fmt(err, errlen, HD_EBADARG, "upstream.%s must be a URL string", k);
            while (*up->endpoint && up->endpoint[strlen(up->endpoint) - 1] == '/')
                up->endpoint[strlen(up->endpoint) - 1] = '\0';
            if (!endpoint_ok(up->endpoint))
                return hd_err_fmt(err, errlen, HD_EBADARG,
                                  "upstream.%s must look like http[s]://host[:port] (no path)", k);
        } else if (strcmp(k, "region") == 0) {
            if (copy_str(v, up->region, sizeof(up->region)) < 0 || !*up->region ||
                !name_ok(up->region))
                return hd_err_fmt(err, errlen, HD_EBADARG, "upstream.%s must be a region name", k);
        } else if (strcmp(k, "style") == 0) {
            const char *s = json_string_value(v);
            if (s && strcmp(s, "path") == 0)
                up->vhost = 0;
            else if (s && strcmp(s, "virtual") == 0)
                up->vhost = 1;
            else
                return hd_err_fmt(err, errlen, HD_EBADARG,
                                  "upstream.%s must be \"path\" or \"virtual\"", k);
        } else if (strcmp(k, "profile") == 0) {
            if (copy_str(v, up->profile, sizeof(up->profile)) < 0 || !name_ok(up->profile))
                return hd_err_fmt(err, errlen, HD_EBADARG,
                                  "upstream.%s must be a profile name ([A-Za-z0-9._-])", k);
        } else if (strcmp(k, "bucket") == 0) {
            if (copy_str(v, up->bucket, sizeof(up->bucket)) < 0 ||
                (*up->bucket && hd_bucket_name_check(up->bucket) < 0))
                return hd_err_fmt(err, errlen, HD_EBADARG, "upstream.%s must be a bucket name", k);
        } else {
            return hd_err_fmt(err, errlen, HD_EBADARG, "unknown property upstream.%s", k);
        }
    }
    if (!*up->endpoint)
        return hd_err_fmt(err, errlen, HD_EBADARG, "%s.endpoint is required", "upstream");
    return 0;
}

/* A bucket's tags as S3's PutBucketTagging sets them (common/tagging.c checked the body):
 * {key: value}, at most HD_BUCKET_TAGS_MAX, keys 1..128 and values 0..256 characters. */
static int check_tags(const json_t *v, char *err, size_t errlen)
{
    int rc = hd_tags_check(v, HD_BUCKET_TAGS_MAX);

    if (rc == -ENOMEM)
        return rc;
    if (rc < 0)
        return hd_err_fmt(err, errlen, HD_EBADARG,
                          "tags must be an object of 1..%d tags as S3 takes them: %s",
                          HD_BUCKET_TAGS_MAX, hd_err_info(rc)->message);
    return 0;
}

int hd_bprops_parse(const char *json, struct hd_bprops *out, char *err, size_t errlen)
{
    json_t *j, *v;
    const char *k;
    int rc = 0;

    memset(out, 0, sizeof(*out));
    if (err && errlen)
        err[0] = '\0';
    if (!json || !*json)
        return 0;
    j = json_loads(json, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(j)) {
        json_decref(j);
        return hd_err_fmt(err, errlen, HD_EBADARG, "%s", "bucket properties must be a JSON object");
    }
    json_object_foreach(j, k, v)
    {
        if (strcmp(k, "anonymous_read") == 0 || strcmp(k, "anonymous_list") == 0 ||
            strcmp(k, "validate_warm_get") == 0 || strcmp(k, "validate_cold_get") == 0) {
            if (!json_is_boolean(v)) {
                rc = hd_err_fmt(err, errlen, HD_EBADARG, "%s must be true or false", k);
                break;
            }
            if (strcmp(k, "anonymous_read") == 0)
                out->anonymous_read = json_is_true(v);
            else if (strcmp(k, "anonymous_list") == 0)
                out->anonymous_list = json_is_true(v);
            else if (strcmp(k, "validate_warm_get") == 0)
                out->validate_warm_get = json_is_true(v);
            else
                out->cold_get_unchecked = !json_is_true(v);
        } else if (strcmp(k, "write_policy") == 0) {
            const char *wp = json_string_value(v);
            if (!wp || (strcmp(wp, "through") != 0 && strcmp(wp, "back") != 0)) {
                rc = hd_err_fmt(err, errlen, HD_EBADARG, "%s must be \"through\" or \"back\"", k);
                break;
            }
            out->write_back = wp[0] == 'b';
        } else if (strcmp(k, "upstream") == 0) {
            if ((rc = parse_upstream(v, &out->up, err, errlen)) < 0)
                break;
            out->has_upstream = 1;
        } else if (strcmp(k, "cors") == 0) {
            if ((rc = hd_cors_check(v, err, errlen)) < 0)
                break;
            out->has_cors = 1;
        } else if (strcmp(k, "tags") == 0) {
            if ((rc = check_tags(v, err, errlen)) < 0)
                break;
            out->has_tags = 1;
        } else if (strcmp(k, "policy") == 0) {
            const char *doc = json_string_value(v);
            int grants;
            if (!doc) {
                rc = hd_err_fmt(err, errlen, HD_EBADARG, "%s",
                                "policy must be a string: the bucket policy document (JSON)");
                break;
            }
            if ((rc = hd_policy_check(NULL, doc, json_string_length(v), &grants, err, errlen)) <
                0) {
                rc = HD_EBADARG;
                break;
            }
            out->has_policy = 1;
        } else if (strcmp(k, "public_access_block") == 0) {
            if ((rc = hd_pab_check(v, err, errlen)) < 0)
                break;
            out->has_pab = 1;
        } else if (strcmp(k, "lifecycle") == 0) {
            if ((rc = hd_lc_check(v, err, errlen)) < 0) {
                rc = HD_EBADARG;
                break;
            }
            out->has_lifecycle = 1;
        } else {
            rc = hd_err_fmt(err, errlen, HD_EBADARG, "unknown bucket property '%s'", k);
            break;
        }
    }
    json_decref(j);
    if (rc == 0 && out->has_lifecycle && out->has_upstream)
        rc =
            hd_err_fmt(err, errlen, HD_EBADARG, "%s",
                       "Lifecycle rules are for hoard's own buckets: an S3-backed bucket's objects "
                       "expire by its upstream bucket's rules.");
    return rc;
}

/* p's canonical JSON with the values of src's "cors", "tags", "lifecycle", "policy" and
 * "public_access_block" (src may be NULL). */
static char *dump_with(const struct hd_bprops *p, json_t *src)
{
    json_t *cors = json_object_get(src, "cors"), *tags = json_object_get(src, "tags");
    json_t *lc = json_object_get(src, "lifecycle"), *pol = json_object_get(src, "policy");
    json_t *pab = json_object_get(src, "public_access_block");
    json_t *j = json_object(), *u;
    char *s;

    if (!j)
        return NULL;
    if (p->anonymous_read)
        json_object_set_new(j, "anonymous_read", json_true());
    if (p->anonymous_list)
        json_object_set_new(j, "anonymous_list", json_true());
    if (p->validate_warm_get)
        json_object_set_new(j, "validate_warm_get", json_true());
    if (p->cold_get_unchecked) /* true is the default */
        json_object_set_new(j, "validate_cold_get", json_false());
    if (p->write_back)
        json_object_set_new(j, "write_policy", json_string("back"));
    if (p->has_upstream) {
        u = json_pack("{s:s, s:s, s:s}", "endpoint", p->up.endpoint, "region", p->up.region,
                      "style", p->up.vhost ? "virtual" : "path");
        if (u && *p->up.profile)
            json_object_set_new(u, "profile", json_string(p->up.profile));
        if (u && *p->up.bucket)
            json_object_set_new(u, "bucket", json_string(p->up.bucket));
        json_object_set_new(j, "upstream", u);
    }
    if (p->has_cors && cors)
        json_object_set(j, "cors", cors);
    if (p->has_tags && tags)
        json_object_set(j, "tags", tags);
    if (p->has_lifecycle && lc)
        json_object_set(j, "lifecycle", lc);
    if (p->has_policy && pol)
        json_object_set(j, "policy", pol);
    if (p->has_pab && pab)
        json_object_set(j, "public_access_block", pab);
    s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(j);
    return s;
}

char *hd_bprops_dump(const struct hd_bprops *p)
{
    return dump_with(p, NULL);
}

char *hd_bprops_dump_from(const struct hd_bprops *p, const char *src)
{
    json_t *j =
        (p->has_cors || p->has_tags || p->has_lifecycle || p->has_policy || p->has_pab) && src
            ? json_loads(src, 0, NULL)
            : NULL;
    char *s = dump_with(p, j);

    json_decref(j);
    return s;
}

/* Block Public Access in the merged props c: a patch p may not turn on what it blocks (what was
 * on before stays, as AWS keeps an ACL or a policy set before the block). Every path that
 * changes props merges here (S3 calls, the native PATCH, on the primary proxy against the
 * current BMD), so none gets around it. 0 or HD_EACCESS. */
static int pab_refuses(const json_t *c, const json_t *p, char *err, size_t errlen)
{
    const json_t *pab = json_object_get(c, "public_access_block"), *pol;
    int g = 0;

    if (hd_pab_on(pab, "block_public_acls") &&
        (json_is_true(json_object_get(p, "anonymous_read")) ||
         json_is_true(json_object_get(p, "anonymous_list"))))
        return hd_err_fmt(err, errlen, HD_EACCESS, "%s",
                          "Access Denied: public ACLs are blocked by the BlockPublicAcls block "
                          "public access setting.");
    pol = json_object_get(p, "policy");
    if (hd_pab_on(pab, "block_public_policy") && json_is_string(pol) &&
        hd_policy_check(NULL, json_string_value(pol), json_string_length(pol), &g, NULL, 0) == 0 &&
        (g & HD_POLICY_PUBLIC))
        return hd_err_fmt(err, errlen, HD_EACCESS, "%s",
                          "Access Denied: public policies are blocked by the BlockPublicPolicy "
                          "block public access setting.");
    return 0;
}

int hd_bprops_merge(const char *cur, const char *patch, char **out, char *err, size_t errlen)
{
    json_t *c = cur && *cur ? json_loads(cur, 0, NULL) : json_object();
    json_t *p = json_loads(patch ? patch : "", JSON_REJECT_DUPLICATES, NULL), *v;
    struct hd_bprops bp;
    const char *k;
    char *text = NULL;
    int rc;

    *out = NULL;
    if (!json_is_object(c)) {
        json_decref(c);
        c = json_object();
    }
    if (!json_is_object(p)) {
        json_decref(c);
        json_decref(p);
        return hd_err_fmt(err, errlen, HD_EBADARG, "%s",
                          "expected a JSON object of bucket properties");
    }
    json_object_foreach(p, k, v)
    {
        if (json_is_null(v))
            json_object_del(c, k);
        else
            json_object_set(c, k, v);
    }
    if ((rc = pab_refuses(c, p, err, errlen)) < 0) {
        json_decref(c);
        json_decref(p);
        return rc;
    }
    text = json_dumps(c, JSON_COMPACT);
    json_decref(p);
    if (!text) {
        json_decref(c);
        return -ENOMEM;
    }
    rc = hd_bprops_parse(text, &bp, err, errlen);
    free(text);
    if (rc == 0 && !(*out = dump_with(&bp, c)))
        rc = -ENOMEM;
    json_decref(c);
    return rc;
}

void hd_bprops_access(const char *bucket, const json_t *props, struct hd_bprops_access *out)
{
    const json_t *pab = json_object_get(props, "public_access_block");
    int acls = !hd_pab_on(pab, "ignore_public_acls"), read, grants;
    json_t *keys = NULL;

    read = acls && json_is_true(json_object_get(props, "anonymous_read"));
    grants = hd_policy_read(bucket, json_string_value(json_object_get(props, "policy")), &keys);
    out->tls_only = (grants & HD_POLICY_TLS_ONLY) != 0; /* Block Public Access leaves it */
    if (hd_pab_on(pab, "restrict_public_buckets")) { /* the policy's grants open nothing */
        grants = 0;
        json_decref(keys);
        keys = NULL;
    }
    out->objects = read || (grants & HD_POLICY_OBJECTS) ? HD_PUBLIC_OBJECTS
                   : grants & HD_POLICY_SOME_OBJECTS    ? HD_PUBLIC_OBJECTS_SOME
                                                        : 0;
    out->list = read || (acls && json_is_true(json_object_get(props, "anonymous_list")))
                    ? HD_PUBLIC_LIST | HD_PUBLIC_LIST_MORE
                : grants & HD_POLICY_LIST ? HD_PUBLIC_LIST
                                          : 0;
    if (out->objects != HD_PUBLIC_OBJECTS_SOME) {
        json_decref(keys);
        keys = NULL;
    }
    out->keys = keys;
}

const char *hd_bprops_remote_bucket(const struct hd_bprops *p, const char *name)
{
    return p->has_upstream && p->up.bucket[0] ? p->up.bucket : name;
}
