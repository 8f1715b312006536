/* policy: the bucket policies hoard enforces (common/policy.h), read with jansson. */
#include "common/policy.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "common/errors.h"
#include "common/xml.h"

#define ARN "arn:aws:s3:::"

/* What a statement's resource names. */
enum {
    RES_BUCKET = 1,  /* arn:aws:s3:::B */
    RES_OBJECTS = 2, /* arn:aws:s3:::B/ * (every object) */
    RES_SOME = 4,    /* arn:aws:s3:::B/KEY, or B/PREFIX and a star: some objects */
};

/* What an action is about. */
enum { ACT_OBJECT, ACT_BUCKET };

static int malformed(char *msg, size_t msglen, const char *why)
{
    return hd_err_fmt(msg, msglen, HD_EMALFORMEDPOLICY, "%s", why);
}

/* v is a string or a non-empty array of strings: the i-th, or NULL past the end (*bad: not
 * that shape). */
static const char *item(const json_t *v, size_t i, int *bad)
{
    const char *s;

    *bad = 0;
    if (json_is_string(v))
        return i == 0 ? json_string_value(v) : NULL;
    if (!json_is_array(v) || json_array_size(v) == 0) {
        *bad = 1;
        return NULL;
    }
    if (i >= json_array_size(v))
        return NULL;
    if (!(s = json_string_value(json_array_get(v, i))))
        *bad = 1;
    return s;
}

/* Whether key is what a RES_SOME pattern names: the key itself, or (a trailing star) any key
 * that starts with the rest. One comparison, linear in the pattern: an unsigned batch of many
 * keys costs no more than as many string compares. */
static int pattern_match(const char *pat, const char *key)
{
    size_t n = strlen(pat);

    if (n && pat[n - 1] == '*')
        return strncmp(key, pat, n - 1) == 0;
    return strcmp(key, pat) == 0;
}

/* What resource r of bucket names (*kind), and for RES_SOME the pattern after "B/" (*pat,
 * within r). */
static int resource_of(const char *bucket, const char *r, int *kind, const char **pat, char *msg,
                       size_t msglen)
{
    const char *rest, *slash;
    size_t bl;

    *pat = NULL;
    if (strcmp(r, "*") == 0) {
        *kind = RES_BUCKET | RES_OBJECTS;
        return 0;
    }
    if (strncmp(r, ARN, strlen(ARN)) != 0)
        return malformed(msg, msglen, "Policy has invalid resource");
    rest = r + strlen(ARN);
    slash = strchr(rest, '/');
    bl = slash ? (size_t)(slash - rest) : strlen(rest);
    if (bl == 0 || (bucket && (bl != strlen(bucket) || strncmp(rest, bucket, bl) != 0)) ||
        memchr(rest, '*', bl) || memchr(rest, '?', bl))
        return malformed(msg, msglen, "Policy has invalid resource");
    if (!slash) {
        *kind = RES_BUCKET;
        return 0;
    }
    if (strspn(slash + 1, "*") == strlen(slash + 1) && slash[1]) {
        *kind = RES_OBJECTS;
        return 0;
    }
    if (strstr(slash, "${")) /* a policy variable (${aws:username}, ...): IAM's, not here */
        return hd_err_fmt(msg, msglen, HD_ENOTIMPL,
                          "Resource %.300s: policy variables are not supported.", r);
    if (!slash[1])
        return malformed(msg, msglen, "Policy has invalid resource");
    if (strchr(slash + 1, '?') || strcspn(slash + 1, "*") < strlen(slash + 1) - 1)
        return hd_err_fmt(msg, msglen, HD_ENOTIMPL,
                          "Resource %.300s: hoard grants a key (%sBUCKET/KEY) or a prefix "
                          "(%sBUCKET/PREFIX*), not other wildcards.",
                          r, ARN, ARN);
    *kind = RES_SOME;
    *pat = slash + 1;
    return 0;
}

static int action_of(const char *a, int *act, char *msg, size_t msglen)
{
    /* exactly these: hoard's reads and listings are wider than AWS's finer actions
     * (s3:GetObjectVersion, s3:ListBucketVersions, s3:ListBucketMultipartUploads), so a grant
     * of one of those alone would open more than it says: 501 */
    if (strcasecmp(a, "s3:GetObject") == 0) {
        *act = ACT_OBJECT;
        return 0;
    }
    if (strcasecmp(a, "s3:ListBucket") == 0) {
        *act = ACT_BUCKET;
        return 0;
    }
    if (strcmp(a, "*") != 0 && strncasecmp(a, "s3:", 3) != 0)
        return malformed(msg, msglen, "Policy has invalid action");
    return hd_err_fmt(msg, msglen, HD_ENOTIMPL,
                      "Action %.200s: a bucket policy can grant s3:GetObject and s3:ListBucket "
                      "only (hoard keeps no ACLs: access is set by keys, auth.keys).",
                      a);
}

/* "*", {"AWS": "*"} or {"AWS": ["*", ...]}: everyone. */
static int principal_check(const json_t *p, char *msg, size_t msglen)
{
    const json_t *aws = json_object_get(p, "AWS");
    const char *s;
    size_t i;
    int bad;

    if (json_is_string(p) && strcmp(json_string_value(p), "*") == 0)
        return 0;
    if (json_is_object(p) && json_object_size(p) == 1 && aws) {
        for (i = 0; (s = item(aws, i, &bad)); i++)
            if (strcmp(s, "*") != 0)
                break;
        if (!bad && !s)
            return 0;
    }
    if (!json_is_string(p) && !json_is_object(p))
        return malformed(msg, msglen, "Invalid principal in policy");
    return hd_err_fmt(msg, msglen, HD_ENOTIMPL, "%s",
                      "A bucket policy can grant everyone (\"Principal\": \"*\") only: hoard has "
                      "keys (auth.keys), not accounts or roles.");
}

/* The one Deny hoard enforces, AWS's "TLS only" statement (the AWS Config rule
 * s3-bucket-ssl-requests-only): everyone, every action ("s3:*" or "*"), this bucket's
 * resources, {"Bool": {"aws:SecureTransport": "false"}}. Taken for the whole bucket. */
static int deny_insecure(const char *bucket, const json_t *st, int *grants, char *msg,
                         size_t msglen)
{
    const json_t *cond = json_object_get(st, "Condition"), *b = json_object_get(cond, "Bool");
    const json_t *v = json_object_get(b, "aws:SecureTransport");
    const char *s, *pat;
    size_t i;
    int kind, bad, rc;

    if (!v) /* the key's case varies in the wild */
        v = json_object_get(b, "aws:securetransport");
    if (json_is_array(v) && json_array_size(v) == 1)
        v = json_array_get(v, 0);
    if (!json_is_object(cond) || json_object_size(cond) != 1 || !json_is_object(b) ||
        json_object_size(b) != 1 ||
        !(json_is_false(v) || (json_is_string(v) && strcmp(json_string_value(v), "false") == 0)))
        return hd_err_fmt(msg, msglen, HD_ENOTIMPL, "%s",
                          "Effect Deny: the one Deny taken is of every request without TLS "
                          "(\"Condition\": {\"Bool\": {\"aws:SecureTransport\": \"false\"}}, "
                          "\"Action\": \"s3:*\"); access is otherwise set by keys (auth.keys).");
    if (!json_object_get(st, "Action"))
        return malformed(msg, msglen, "Missing required field Action");
    for (i = 0; (s = item(json_object_get(st, "Action"), i, &bad)); i++)
        if (strcmp(s, "s3:*") != 0 && strcmp(s, "*") != 0)
            return hd_err_fmt(msg, msglen, HD_ENOTIMPL,
                              "Action %.100s: a Deny of requests without TLS covers every "
                              "action (\"s3:*\").",
                              s);
    if (bad)
        return malformed(msg, msglen, "Action must be a string or a list of strings");
    if (!json_object_get(st, "Resource"))
        return malformed(msg, msglen, "Missing required field Resource");
    for (i = 0; (s = item(json_object_get(st, "Resource"), i, &bad)); i++) {
        if ((rc = resource_of(bucket, s, &kind, &pat, msg, msglen)) < 0)
            return rc;
        if (kind == RES_SOME) /* taken for the whole bucket: it would refuse more than it says */
            return hd_err_fmt(msg, msglen, HD_ENOTIMPL,
                              "Resource %.300s: a Deny of requests without TLS covers the whole "
                              "bucket (%sBUCKET and %sBUCKET/*).",
                              s, ARN, ARN);
    }
    if (bad)
        return malformed(msg, msglen, "Resource must be a string or a list of strings");
    *grants |= HD_POLICY_TLS_ONLY;
    return 0;
}

/* Checks statement st of bucket's policy, adding what it grants to *grants, and to pats (not
 * NULL) the patterns of its s3:GetObject grants on some objects. */
static int statement(const char *bucket, json_t *st, int *grants, char *msg, size_t msglen,
                     json_t *pats_out)
{
    const json_t *eff = json_object_get(st, "Effect"), *acts = json_object_get(st, "Action");
    const json_t *res = json_object_get(st, "Resource"), *pr = json_object_get(st, "Principal");
    int kinds[64] = {0}, nres = 0, act = ACT_OBJECT, used, rc, bad;
    const char *k, *s, *pats[64];
    json_t *v;
    size_t i, j;

    if (!json_is_object(st))
        return malformed(msg, msglen, "Statement must be an object");
    json_object_foreach(st, k, v)
    {
        if (strcmp(k, "NotAction") == 0 || strcmp(k, "NotPrincipal") == 0 ||
            strcmp(k, "NotResource") == 0)
            return hd_err_fmt(msg, msglen, HD_ENOTIMPL,
                              "%s: a bucket policy can only grant everyone s3:GetObject and "
                              "s3:ListBucket, or deny requests without TLS.",
                              k);
        if (strcmp(k, "Sid") != 0 && strcmp(k, "Effect") != 0 && strcmp(k, "Principal") != 0 &&
            strcmp(k, "Action") != 0 && strcmp(k, "Resource") != 0 && strcmp(k, "Condition") != 0)
            return hd_err_fmt(msg, msglen, HD_EMALFORMEDPOLICY, "Unknown field %.100s", k);
    }
    if (json_object_get(st, "Sid") && !json_is_string(json_object_get(st, "Sid")))
        return malformed(msg, msglen, "Statement IDs (SID) must be strings");
    if (!eff)
        return malformed(msg, msglen, "Missing required field Effect");
    if (!json_is_string(eff) || (strcmp(json_string_value(eff), "Allow") != 0 &&
                                 strcmp(json_string_value(eff), "Deny") != 0))
        return malformed(msg, msglen, "Invalid effect");
    if (!pr)
        return malformed(msg, msglen, "Missing required field Principal");
    if ((rc = principal_check(pr, msg, msglen)) < 0)
        return rc;
    if (strcmp(json_string_value(eff), "Deny") == 0)
        return deny_insecure(bucket, st, grants, msg, msglen);
    if (json_object_get(st, "Condition"))
        return hd_err_fmt(msg, msglen, HD_ENOTIMPL, "%s",
                          "Condition: a bucket policy can only grant everyone s3:GetObject and "
                          "s3:ListBucket without conditions, or deny requests without TLS.");
    if (!acts)
        return malformed(msg, msglen, "Missing required field Action");
    if (!res)
        return malformed(msg, msglen, "Missing required field Resource");
    for (i = 0; (s = item(res, i, &bad)); i++) {
        if (nres == (int)(sizeof(kinds) / sizeof(kinds[0])))
            return malformed(msg, msglen, "Too many resources in one statement");
        if ((rc = resource_of(bucket, s, &kinds[nres], &pats[nres], msg, msglen)) < 0)
            return rc;
        nres++;
    }
    if (bad)
        return malformed(msg, msglen, "Resource must be a string or a list of strings");
    for (i = 0; (s = item(acts, i, &bad)); i++) {
        if ((rc = action_of(s, &act, msg, msglen)) < 0)
            return rc;
        for (j = 0, used = 0; j < (size_t)nres; j++) {
            int u = 0;
            if (act == ACT_OBJECT && (kinds[j] & RES_OBJECTS))
                u = HD_POLICY_OBJECTS;
            else if (act == ACT_OBJECT && kinds[j] == RES_SOME)
                u = HD_POLICY_SOME_OBJECTS;
            else if (act == ACT_BUCKET && (kinds[j] & RES_BUCKET))
                u = HD_POLICY_LIST;
            if (pats_out && u == HD_POLICY_SOME_OBJECTS &&
                json_array_append_new(pats_out, json_string(pats[j])) < 0)
                return -ENOMEM;
            *grants |= u;
            used |= u;
        }
        if (!used)
            return malformed(msg, msglen, "Action does not apply to any resource(s) in statement");
    }
    if (bad)
        return malformed(msg, msglen, "Action must be a string or a list of strings");
    return 0;
}

static int check(const char *bucket, const char *doc, size_t len, int *grants, char *msg,
                 size_t msglen, json_t *pats)
{
    json_t *j, *sts, *v;
    const char *k, *ver;
    size_t i, n;
    int rc = 0;

    *grants = 0;
    if (msg && msglen)
        msg[0] = '\0';
    if (len > HD_POLICY_MAX)
        return hd_err_fmt(msg, msglen, HD_EMALFORMEDPOLICY,
                          "Policy exceeds the maximum allowed document size (%d bytes)",
                          HD_POLICY_MAX);
    j = json_loadb(doc, len, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(j)) {
        json_decref(j);
        return malformed(msg, msglen, "Policies must be valid JSON and the first byte must be '{'");
    }
    json_object_foreach(j, k, v)
    {
        if (strcmp(k, "Version") != 0 && strcmp(k, "Id") != 0 && strcmp(k, "Statement") != 0) {
            rc = hd_err_fmt(msg, msglen, HD_EMALFORMEDPOLICY, "Unknown field %.100s", k);
            goto out;
        }
    }
    v = json_object_get(j, "Version");
    ver = json_string_value(v);
    if (v && (!ver || (strcmp(ver, "2012-10-17") != 0 && strcmp(ver, "2008-10-17") != 0))) {
        rc = malformed(msg, msglen, "The policy must contain a valid version string");
        goto out;
    }
    if ((v = json_object_get(j, "Id")) && !json_is_string(v)) {
        rc = malformed(msg, msglen, "Id must be a string");
        goto out;
    }
    sts = json_object_get(j, "Statement");
    n = json_is_array(sts) ? json_array_size(sts) : 1;
    if (!sts || (json_is_array(sts) && n == 0)) {
        rc = malformed(msg, msglen, "Missing required field Statement");
        goto out;
    }
    for (i = 0; i < n && rc == 0; i++) {
        json_t *st = json_is_array(sts) ? json_array_get(sts, i) : sts;
        const char *sid = json_string_value(json_object_get(st, "Sid")), *other;
        size_t k2;
        rc = statement(bucket, st, grants, msg, msglen, pats);
        for (k2 = 0; rc == 0 && sid && *sid && k2 < i; k2++) {
            other = json_string_value(json_object_get(json_array_get(sts, k2), "Sid"));
            if (other && strcmp(other, sid) == 0)
                rc =
                    malformed(msg, msglen, "Statement IDs (SID) in a single policy must be unique");
        }
    }
out:
    json_decref(j);
    if (rc < 0)
        *grants = 0;
    return rc;
}

int hd_policy_check(const char *bucket, const char *doc, size_t len, int *grants, char *msg,
                    size_t msglen)
{
    return check(bucket, doc, len, grants, msg, msglen, NULL);
}

int hd_policy_read(const char *bucket, const char *doc, json_t **pats)
{
    json_t *p = pats ? json_array() : NULL;
    int grants = 0;

    if (pats)
        *pats = NULL;
    if (!doc || (pats && !p) || check(bucket, doc, strlen(doc), &grants, NULL, 0, p) < 0) {
        json_decref(p);
        return 0;
    }
    if (p && (grants & HD_POLICY_SOME_OBJECTS) && !(grants & HD_POLICY_OBJECTS))
        *pats = p; /* every object granted: nothing to match */
    else
        json_decref(p);
    return grants;
}

int hd_policy_patterns_match(const json_t *pats, const char *key)
{
    size_t i;

    for (i = 0; key && i < json_array_size(pats); i++)
        if (pattern_match(json_string_value(json_array_get(pats, i)), key))
            return 1;
    return 0;
}

int hd_policy_grants(const char *bucket, const char *doc)
{
    return hd_policy_read(bucket, doc, NULL);
}

/* ---- Block Public Access ---- */

static const struct {
    const char *xml, *json;
} pab_names[] = {
    {"BlockPublicAcls", "block_public_acls"},
    {"IgnorePublicAcls", "ignore_public_acls"},
    {"BlockPublicPolicy", "block_public_policy"},
    {"RestrictPublicBuckets", "restrict_public_buckets"},
};
#define PAB_N (sizeof(pab_names) / sizeof(pab_names[0]))

int hd_pab_parse_xml(const char *body, size_t len, char **out, char *msg, size_t msglen)
{
    struct hd_xnode *root = NULL, *n;
    int on[PAB_N] = {0}, seen[PAB_N] = {0}, rc;
    json_t *j;
    size_t i;

    *out = NULL;
    if (msg && msglen)
        msg[0] = '\0';
    if ((rc = hd_xml_parse(body, len, &root)) < 0)
        return rc;
    if (strcmp(root->name, "PublicAccessBlockConfiguration") != 0) {
        hd_xnode_free(root);
        return hd_err_fmt(msg, msglen, HD_EMALFORMEDXML, "%s",
                          "Expected a PublicAccessBlockConfiguration document.");
    }
    for (n = root->child; n; n = n->next) {
        for (i = 0; i < PAB_N && strcmp(n->name, pab_names[i].xml) != 0; i++)
            ;
        if (i == PAB_N || seen[i] || n->child ||
            (strcmp(n->text, "true") != 0 && strcmp(n->text, "false") != 0)) {
            rc = hd_err_fmt(msg, msglen, HD_EMALFORMEDXML,
                            "%.64s: expected each of BlockPublicAcls, IgnorePublicAcls, "
                            "BlockPublicPolicy and RestrictPublicBuckets at most once, true or "
                            "false.",
                            n->name);
            hd_xnode_free(root);
            return rc;
        }
        seen[i] = 1;
        on[i] = strcmp(n->text, "true") == 0;
    }
    hd_xnode_free(root);
    if (!(j = json_object()))
        return -ENOMEM;
    for (i = 0; i < PAB_N; i++)
        json_object_set_new(j, pab_names[i].json, json_boolean(on[i]));
    *out = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(j);
    return *out ? 0 : -ENOMEM;
}

int hd_pab_check(const json_t *v, char *err, size_t errlen)
{
    size_t i;

    if (!json_is_object(v) || json_object_size(v) != PAB_N)
        goto bad;
    for (i = 0; i < PAB_N; i++)
        if (!json_is_boolean(json_object_get(v, pab_names[i].json)))
            goto bad;
    return 0;
bad:
    return hd_err_fmt(err, errlen, HD_EBADARG, "%s",
                      "public_access_block must be {\"block_public_acls\": bool, "
                      "\"ignore_public_acls\": bool, \"block_public_policy\": bool, "
                      "\"restrict_public_buckets\": bool}");
}

void hd_pab_xml(struct hd_buf *b, const json_t *v)
{
    size_t i;

    hd_xml_decl(b);
    hd_xml_open_ns(b, "PublicAccessBlockConfiguration", HD_XML_S3_NS);
    for (i = 0; i < PAB_N; i++)
        hd_xml_elem(b, pab_names[i].xml, hd_pab_on(v, pab_names[i].json) ? "true" : "false");
    hd_xml_close(b, "PublicAccessBlockConfiguration");
}

int hd_pab_on(const json_t *v, const char *name)
{
    return json_is_true(json_object_get(v, name));
}
