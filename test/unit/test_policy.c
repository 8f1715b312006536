/* Unit tests for common/policy.c: the bucket policies hoard enforces, and what they grant. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/bprops.h"
#include "common/buf.h"
#include "common/errors.h"
#include "common/policy.h"
#include "test/unit/hd_test.h"

static int check(const char *bucket, const char *doc, int *grants)
{
    char msg[512];

    return hd_policy_check(bucket, doc, strlen(doc), grants, msg, sizeof(msg));
}

#define ST(p, a, r)                                                                                \
    "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":" p            \
    ",\"Action\":" a ",\"Resource\":" r "}]}"

HD_SUITE(policy_grants)
{
    int g = -1;

    /* AWS's guide's public-read policy */
    CHECK_EQ_INT(check("data", ST("\"*\"", "\"s3:GetObject\"", "\"arn:aws:s3:::data/*\""), &g), 0);
    CHECK_EQ_INT(g, HD_POLICY_OBJECTS);
    CHECK_EQ_INT(check("data",
                       ST("{\"AWS\":\"*\"}", "[\"s3:ListBucket\"]",
                          "[\"arn:aws:s3:::data\",\"arn:aws:s3:::data/*\"]"),
                       &g),
                 0); /* ceph s3-tests' test_bucket_policy */
    CHECK_EQ_INT(g, HD_POLICY_LIST);
    CHECK_EQ_INT(check("data",
                       ST("{\"AWS\":[\"*\"]}", "[\"s3:getobject\",\"S3:ListBucket\"]",
                          "[\"arn:aws:s3:::data\",\"arn:aws:s3:::data/*\"]"),
                       &g),
                 0);
    CHECK_EQ_INT(g, HD_POLICY_OBJECTS | HD_POLICY_LIST);
    CHECK_EQ_INT(check("data", ST("\"*\"", "\"s3:GetObject\"", "\"*\""), &g), 0);
    CHECK_EQ_INT(g, HD_POLICY_OBJECTS);
    /* one statement as an object, Sid and Id, the older version */
    CHECK_EQ_INT(check("data",
                       "{\"Version\":\"2008-10-17\",\"Id\":\"p\",\"Statement\":{\"Sid\":"
                       "\"pub\",\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
                       "\"s3:ListBucket\",\"Resource\":\"arn:aws:s3:::data\"}}",
                       &g),
                 0);
    CHECK_EQ_INT(g, HD_POLICY_LIST);
    /* bucket NULL (a PATCH of the property): any bucket's resources; what a stored policy
     * grants depends on the bucket it is read for */
    CHECK_EQ_INT(check(NULL, ST("\"*\"", "\"s3:GetObject\"", "\"arn:aws:s3:::other/*\""), &g), 0);
    CHECK_EQ_INT(
        hd_policy_grants("data", ST("\"*\"", "\"s3:GetObject\"", "\"arn:aws:s3:::data/*\"")),
        HD_POLICY_OBJECTS);
    CHECK_EQ_INT(
        hd_policy_grants("datax", ST("\"*\"", "\"s3:GetObject\"", "\"arn:aws:s3:::data/*\"")), 0);
    CHECK_EQ_INT(hd_policy_grants("data", NULL), 0);
    CHECK_EQ_INT(hd_policy_grants("data", "not json"), 0);
}

HD_SUITE(policy_refused)
{
    int g = -1;

    /* 400 MalformedPolicy: what S3 refuses */
    CHECK_EQ_INT(check("data", "", &g), HD_EMALFORMEDPOLICY);
    CHECK_EQ_INT(g, 0);
    CHECK_EQ_INT(check("data", "[]", &g), HD_EMALFORMEDPOLICY);
    CHECK_EQ_INT(check("data", "{\"Version\":\"2012-10-17\"}", &g), HD_EMALFORMEDPOLICY);
    CHECK_EQ_INT(check("data", "{\"Statement\":[]}", &g), HD_EMALFORMEDPOLICY);
    CHECK_EQ_INT(check("data", "{\"Version\":\"2020-01-01\",\"Statement\":{}}", &g),
                 HD_EMALFORMEDPOLICY);
    CHECK_EQ_INT(check("data", "{\"Bogus\":1,\"Statement\":{}}", &g), HD_EMALFORMEDPOLICY);
    CHECK_EQ_INT(check("data", "{\"Statement\":[1]}", &g), HD_EMALFORMEDPOLICY);
    CHECK_EQ_INT(check("data",
                       "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\","
                       "\"Action\":\"s3:GetObject\",\"Resource\":\"x\",\"Extra\":1}}",
                       &g),
                 HD_EMALFORMEDPOLICY);
    CHECK_EQ_INT(check("data",
                       "{\"Statement\":{\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
                       "\"Resource\":\"arn:aws:s3:::data/*\"}}",
                       &g),
                 HD_EMALFORMEDPOLICY); /* no Effect */
    CHECK_EQ_INT(check("data",
                       "{\"Statement\":{\"Effect\":\"Maybe\",\"Principal\":\"*\",\"Action\":"
                       "\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::data/*\"}}",
                       &g),
                 HD_EMALFORMEDPOLICY);
    CHECK_EQ_INT(check("data",
                       "{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"s3:GetObject\","
                       "\"Resource\":\"arn:aws:s3:::data/*\"}}",
                       &g),
                 HD_EMALFORMEDPOLICY); /* no Principal */
    CHECK_EQ_INT(check("data", ST("\"*\"", "\"s3:GetObject\"", "\"arn:aws:s3:::other/*\""), &g),
                 HD_EMALFORMEDPOLICY); /* another bucket */
    CHECK_EQ_INT(check("data", ST("\"*\"", "\"s3:GetObject\"", "\"arn:aws:s3:::dat*\""), &g),
                 HD_EMALFORMEDPOLICY);
    CHECK_EQ_INT(check("data", ST("\"*\"", "\"s3:GetObject\"", "\"data/*\""), &g),
                 HD_EMALFORMEDPOLICY);
    CHECK_EQ_INT(check("data", ST("\"*\"", "\"GetObject\"", "\"arn:aws:s3:::data/*\""), &g),
                 HD_EMALFORMEDPOLICY);
    CHECK_EQ_INT(check("data", ST("\"*\"", "\"s3:GetObject\"", "\"arn:aws:s3:::data\""), &g),
                 HD_EMALFORMEDPOLICY); /* the action applies to no resource given */
    CHECK_EQ_INT(check("data", ST("\"*\"", "[]", "\"arn:aws:s3:::data/*\""), &g),
                 HD_EMALFORMEDPOLICY);
    CHECK_EQ_INT(check("data", ST("\"*\"", "[\"s3:GetObject\",3]", "\"arn:aws:s3:::data/*\""), &g),
                 HD_EMALFORMEDPOLICY);
    CHECK_EQ_INT(check("data", ST("7", "\"s3:GetObject\"", "\"arn:aws:s3:::data/*\""), &g),
                 HD_EMALFORMEDPOLICY);
    CHECK_EQ_INT(check("data", "{\"Statement\":{\"Effect\":\"Allow\",\"Effect\":\"Allow\"}}", &g),
                 HD_EMALFORMEDPOLICY); /* a repeated key */
    CHECK_EQ_INT(check("data",
                       "{\"Statement\":[{\"Sid\":\"a\",\"Effect\":\"Allow\",\"Principal\":\"*\","
                       "\"Action\":\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::data/*\"},"
                       "{\"Sid\":\"a\",\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
                       "\"s3:ListBucket\",\"Resource\":\"arn:aws:s3:::data\"}]}",
                       &g),
                 HD_EMALFORMEDPOLICY); /* Sids are unique */
    CHECK_EQ_INT(check("data",
                       "{\"Statement\":[{\"Sid\":\"a\",\"Effect\":\"Allow\",\"Principal\":\"*\","
                       "\"Action\":\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::data/*\"},"
                       "{\"Sid\":\"b\",\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
                       "\"s3:ListBucket\",\"Resource\":\"arn:aws:s3:::data\"}]}",
                       &g),
                 0);
    CHECK_EQ_INT(g, HD_POLICY_OBJECTS | HD_POLICY_LIST);
    g = -1;

    /* 501 NotImplemented: what S3 has and hoard does not */
    CHECK_EQ_INT(check("data",
                       "{\"Statement\":{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":"
                       "\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::data/*\"}}",
                       &g),
                 HD_ENOTIMPL);
    CHECK_EQ_INT(check("data",
                       "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
                       "\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::data/*\","
                       "\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":\"10.0.0.0/8\"}}}}",
                       &g),
                 HD_ENOTIMPL);
    CHECK_EQ_INT(check("data",
                       ST("{\"AWS\":\"arn:aws:iam::123456789012:root\"}", "\"s3:GetObject\"",
                          "\"arn:aws:s3:::data/*\""),
                       &g),
                 HD_ENOTIMPL);
    CHECK_EQ_INT(check("data",
                       ST("{\"AWS\":[\"*\",\"arn:aws:iam::1:root\"]}", "\"s3:GetObject\"",
                          "\"arn:aws:s3:::data/*\""),
                       &g),
                 HD_ENOTIMPL);
    CHECK_EQ_INT(
        check("data", ST("{\"Service\":\"*\"}", "\"s3:GetObject\"", "\"arn:aws:s3:::data/*\""), &g),
        HD_ENOTIMPL);
    CHECK_EQ_INT(check("data", ST("\"*\"", "\"s3:PutObject\"", "\"arn:aws:s3:::data/*\""), &g),
                 HD_ENOTIMPL);
    CHECK_EQ_INT(check("data", ST("\"*\"", "\"s3:*\"", "\"arn:aws:s3:::data/*\""), &g),
                 HD_ENOTIMPL);
    CHECK_EQ_INT(check("data", ST("\"*\"", "\"s3:Get*\"", "\"arn:aws:s3:::data/*\""), &g),
                 HD_ENOTIMPL);
    CHECK_EQ_INT(check("data", ST("\"*\"", "\"s3:GetObject\"", "\"arn:aws:s3:::data/${aws:username}/*\""),
                       &g),
                 HD_ENOTIMPL); /* a policy variable */
    CHECK_EQ_INT(check("data",
                       "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\","
                       "\"NotAction\":\"s3:PutObject\",\"Resource\":\"arn:aws:s3:::data/*\"}}",
                       &g),
                 HD_ENOTIMPL);
    CHECK_EQ_INT(g, 0);
    /* AWS's finer actions: hoard's reads and listings are wider */
    CHECK_EQ_INT(
        check("data", ST("\"*\"", "\"s3:GetObjectVersion\"", "\"arn:aws:s3:::data/*\""), &g),
        HD_ENOTIMPL);
    CHECK_EQ_INT(check("data",
                       ST("\"*\"", "\"s3:ListBucketMultipartUploads\"", "\"arn:aws:s3:::data\""),
                       &g),
                 HD_ENOTIMPL);
    /* a refused statement refuses the whole document, even after a good one */
    CHECK_EQ_INT(check("data",
                       "{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
                       "\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::data/*\"},{\"Effect\":"
                       "\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
                       "\"Resource\":\"arn:aws:s3:::data/*\"}]}",
                       &g),
                 HD_ENOTIMPL);
    CHECK_EQ_INT(g, 0);
}

/* Whether a policy opens key: every object, or a key or prefix the patterns hd_policy_read
 * gives name. */
static int key_public(const char *bucket, const char *doc, const char *key)
{
    json_t *pats = NULL;
    int g = hd_policy_read(bucket, doc, &pats), yes;

    yes = key && ((g & HD_POLICY_OBJECTS) || hd_policy_patterns_match(pats, key));
    json_decref(pats);
    return yes;
}

static json_t *patterns(const char *bucket, const char *doc)
{
    json_t *pats = NULL;

    hd_policy_read(bucket, doc, &pats);
    return pats;
}

/* s3:GetObject on some objects: a key, a prefix */
HD_SUITE(policy_some_objects)
{
    const char *pre = ST("\"*\"", "\"s3:GetObject\"", "\"arn:aws:s3:::data/public/*\"");
    const char *two = ST("\"*\"", "\"s3:GetObject\"",
                         "[\"arn:aws:s3:::data/readme.txt\",\"arn:aws:s3:::data/img/cat*\"]");
    const char *all = ST("\"*\"", "\"s3:GetObject\"", "[\"arn:aws:s3:::data/x\",\"*\"]");
    json_t *pats;
    int g = -1;

    CHECK_EQ_INT(check("data", pre, &g), 0);
    CHECK_EQ_INT(g, HD_POLICY_SOME_OBJECTS);
    CHECK_EQ_INT(key_public("data", pre, "public/a.jpg"), 1);
    CHECK_EQ_INT(key_public("data", pre, "public/deep/er/b"), 1); /* * spans / */
    CHECK_EQ_INT(key_public("data", pre, "public/"), 1);
    CHECK_EQ_INT(key_public("data", pre, "public"), 0);
    CHECK_EQ_INT(key_public("data", pre, "private/a.jpg"), 0);
    CHECK_EQ_INT(key_public("data", pre, "xpublic/a"), 0);
    CHECK_EQ_INT(key_public("other", pre, "public/a.jpg"), 0); /* another bucket */
    CHECK_EQ_INT(key_public("data", pre, NULL), 0);
    CHECK_EQ_INT(key_public("data", NULL, "public/a"), 0);
    CHECK_EQ_INT(check("data", two, &g), 0);
    CHECK_EQ_INT(g, HD_POLICY_SOME_OBJECTS);
    CHECK_EQ_INT(key_public("data", two, "readme.txt"), 1);
    CHECK_EQ_INT(key_public("data", two, "readme.txt2"), 0);
    CHECK_EQ_INT(key_public("data", two, "readme.tx"), 0);
    CHECK_EQ_INT(key_public("data", two, "img/cat.jpeg"), 1);
    CHECK_EQ_INT(key_public("data", two, "img/cats/b"), 1);
    CHECK_EQ_INT(key_public("data", two, "img/ca"), 0);
    CHECK_EQ_INT(key_public("data", two, "IMG/cat.jpeg"), 0); /* case counts */
    /* the patterns kept beside the bucket, matched per read */
    pats = patterns("data", two);
    CHECK(pats != NULL && json_array_size(pats) == 2);
    CHECK_EQ_INT(hd_policy_patterns_match(pats, "img/cat"), 1);
    CHECK_EQ_INT(hd_policy_patterns_match(pats, "readme.txt"), 1);
    CHECK_EQ_INT(hd_policy_patterns_match(pats, "img/dog"), 0);
    CHECK_EQ_INT(hd_policy_patterns_match(pats, NULL), 0);
    CHECK_EQ_INT(hd_policy_patterns_match(NULL, "img/cat"), 0);
    json_decref(pats);
    CHECK(patterns("other", two) == NULL); /* names another bucket */
    pats = patterns("data", pre);
    CHECK(pats != NULL && json_array_size(pats) == 1);
    json_decref(pats);
    /* every object beside some: every object (no patterns to keep) */
    CHECK_EQ_INT(check("data", all, &g), 0);
    CHECK_EQ_INT(g, HD_POLICY_OBJECTS | HD_POLICY_SOME_OBJECTS);
    CHECK_EQ_INT(key_public("data", all, "anything"), 1);
    CHECK(patterns("data", all) == NULL);
    /* other wildcards: 501, never a wider grant than written */
    CHECK_EQ_INT(check("data", ST("\"*\"", "\"s3:GetObject\"", "\"arn:aws:s3:::data/img/*.jpg\""),
                       &g),
                 HD_ENOTIMPL);
    CHECK_EQ_INT(check("data", ST("\"*\"", "\"s3:GetObject\"", "\"arn:aws:s3:::data/a?b\""), &g),
                 HD_ENOTIMPL);
    CHECK_EQ_INT(check("data", ST("\"*\"", "\"s3:GetObject\"", "\"arn:aws:s3:::data/*/x\""), &g),
                 HD_ENOTIMPL);
    CHECK_EQ_INT(check("data", ST("\"*\"", "\"s3:GetObject\"", "\"arn:aws:s3:::data/a**\""), &g),
                 HD_ENOTIMPL);
    /* ListBucket names the bucket only: on a prefix it applies to nothing (AWS's answer) */
    CHECK_EQ_INT(check("data", ST("\"*\"", "\"s3:ListBucket\"", "\"arn:aws:s3:::data/public/*\""),
                       &g),
                 HD_EMALFORMEDPOLICY);
    /* the TLS-only Deny covers the whole bucket, never a prefix */
    CHECK_EQ_INT(check("data",
                       "{\"Statement\":{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":"
                       "\"s3:*\",\"Resource\":\"arn:aws:s3:::data/secret/*\",\"Condition\":"
                       "{\"Bool\":{\"aws:SecureTransport\":\"false\"}}}}",
                       &g),
                 HD_ENOTIMPL);
    /* an empty key is no resource */
    CHECK_EQ_INT(check("data", ST("\"*\"", "\"s3:GetObject\"", "\"arn:aws:s3:::data/\""), &g),
                 HD_EMALFORMEDPOLICY);
}

/* the props side, in one parse: restrict_public_buckets closes the keys too, not TLS only */
HD_SUITE(policy_some_objects_props)
{
    json_t *j = json_pack("{s:s}", "policy",
                          "{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
                          "\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::data/public/*\"},"
                          "{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:*\","
                          "\"Resource\":[\"arn:aws:s3:::data\",\"arn:aws:s3:::data/*\"],"
                          "\"Condition\":{\"Bool\":{\"aws:SecureTransport\":\"false\"}}}]}");
    struct hd_bprops_access acc;

    hd_bprops_access("data", j, &acc);
    CHECK_EQ_INT(acc.objects, HD_PUBLIC_OBJECTS_SOME);
    CHECK_EQ_INT(acc.list, 0);
    CHECK_EQ_INT(acc.tls_only, 1);
    CHECK_EQ_INT(hd_policy_patterns_match(acc.keys, "public/a"), 1);
    CHECK_EQ_INT(hd_policy_patterns_match(acc.keys, "a"), 0);
    json_decref(acc.keys);
    hd_bprops_access("other", j, &acc); /* a policy of another bucket's: nothing */
    CHECK(acc.objects == 0 && acc.tls_only == 0 && acc.keys == NULL);
    json_object_set_new(j, "public_access_block",
                        json_pack("{s:b,s:b,s:b,s:b}", "block_public_acls", 0,
                                  "ignore_public_acls", 0, "block_public_policy", 0,
                                  "restrict_public_buckets", 1));
    hd_bprops_access("data", j, &acc);
    CHECK_EQ_INT(acc.objects, 0);
    CHECK_EQ_INT(acc.tls_only, 1);
    CHECK(acc.keys == NULL);
    /* the public-read state beside it: every object, every listing, no keys kept */
    json_object_set_new(j, "public_access_block", json_null());
    json_object_set_new(j, "anonymous_read", json_true());
    hd_bprops_access("data", j, &acc);
    CHECK_EQ_INT(acc.objects, HD_PUBLIC_OBJECTS);
    CHECK_EQ_INT(acc.list, HD_PUBLIC_LIST | HD_PUBLIC_LIST_MORE);
    CHECK(acc.keys == NULL);
    json_decref(j);
}

HD_SUITE(policy_size)
{
    static char doc[HD_POLICY_MAX + 64];
    const char *head = "{\"Id\":\"", *tail = "\",\"Statement\":{\"Effect\":\"Allow\",\"Principal\":"
                                             "\"*\",\"Action\":\"s3:GetObject\",\"Resource\":"
                                             "\"arn:aws:s3:::data/*\"}}";
    size_t n;
    int g;

    /* exactly the limit passes, one byte more does not */
    n = HD_POLICY_MAX - strlen(head) - strlen(tail);
    memcpy(doc, head, strlen(head));
    memset(doc + strlen(head), 'a', n);
    snprintf(doc + strlen(head) + n, sizeof(doc) - strlen(head) - n, "%s", tail);
    CHECK_EQ_INT((int)strlen(doc), HD_POLICY_MAX);
    CHECK_EQ_INT(check("data", doc, &g), 0);
    CHECK_EQ_INT(g, HD_POLICY_OBJECTS);
    memmove(doc + 1, doc, strlen(doc) + 1);
    doc[0] = ' ';
    CHECK_EQ_INT(check("data", doc, &g), HD_EMALFORMEDPOLICY);
}

HD_SUITE(policy_public_access_block)
{
    static const char *const all_on =
        "<PublicAccessBlockConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        "<BlockPublicAcls>true</BlockPublicAcls><IgnorePublicAcls>true</IgnorePublicAcls>"
        "<BlockPublicPolicy>true</BlockPublicPolicy><RestrictPublicBuckets>true"
        "</RestrictPublicBuckets></PublicAccessBlockConfiguration>";
    const char *bad[] = {
        "<PublicAccessBlockConfiguration><BlockPublicAcls>yes</BlockPublicAcls>"
        "</PublicAccessBlockConfiguration>",
        "<PublicAccessBlockConfiguration><BlockPublicAcls>true</BlockPublicAcls><BlockPublicAcls>"
        "true</BlockPublicAcls></PublicAccessBlockConfiguration>",
        "<PublicAccessBlockConfiguration><Other>true</Other></PublicAccessBlockConfiguration>",
        "<PublicAccessBlockConfiguration><BlockPublicAcls><x/></BlockPublicAcls>"
        "</PublicAccessBlockConfiguration>",
        "<Other/>",
        "",
        NULL};
    char *out = NULL, msg[256], err[256];
    struct hd_buf b;
    json_t *v;
    size_t i;

    CHECK_EQ_INT(hd_pab_parse_xml(all_on, strlen(all_on), &out, msg, sizeof(msg)), 0);
    CHECK_EQ_STR(out, "{\"block_public_acls\":true,\"block_public_policy\":true,"
                      "\"ignore_public_acls\":true,\"restrict_public_buckets\":true}");
    v = json_loads(out, 0, NULL);
    CHECK_EQ_INT(hd_pab_check(v, err, sizeof(err)), 0);
    CHECK(hd_pab_on(v, "restrict_public_buckets") && !hd_pab_on(NULL, "restrict_public_buckets"));
    /* the GET answer reads back as the same setting */
    hd_buf_init(&b);
    hd_pab_xml(&b, v);
    free(out);
    out = NULL;
    CHECK_EQ_INT(hd_pab_parse_xml(b.data, b.len, &out, msg, sizeof(msg)), 0);
    {
        json_t *back = out ? json_loads(out, 0, NULL) : NULL;
        CHECK(back && json_equal(back, v) == 1);
        json_decref(back);
    }
    hd_buf_cleanup(&b);
    free(out);
    json_decref(v);
    /* what is not given is off; an empty configuration is all off */
    CHECK_EQ_INT(hd_pab_parse_xml("<PublicAccessBlockConfiguration/>", 33, &out, msg, sizeof(msg)),
                 0);
    CHECK_EQ_STR(out, "{\"block_public_acls\":false,\"block_public_policy\":false,"
                      "\"ignore_public_acls\":false,\"restrict_public_buckets\":false}");
    free(out);
    for (i = 0; bad[i]; i++) {
        out = NULL;
        CHECK_EQ_INT(hd_pab_parse_xml(bad[i], strlen(bad[i]), &out, msg, sizeof(msg)),
                     HD_EMALFORMEDXML);
        CHECK(out == NULL);
    }
    /* the property's form */
    v = json_loads("{\"block_public_acls\":true}", 0, NULL);
    CHECK_EQ_INT(hd_pab_check(v, err, sizeof(err)), HD_EBADARG);
    json_decref(v);
    v = json_loads("{\"block_public_acls\":1,\"block_public_policy\":true,\"ignore_public_acls\":"
                   "true,\"restrict_public_buckets\":true}",
                   0, NULL);
    CHECK_EQ_INT(hd_pab_check(v, err, sizeof(err)), HD_EBADARG);
    json_decref(v);
}

/* Block Public Access where props are merged: a change may not turn on what is blocked; what
 * was on stays, and other changes go through. */
HD_SUITE(policy_pab_merge)
{
    static const char *const blocked =
        "{\"public_access_block\":{\"block_public_acls\":true,\"block_public_policy\":true,"
        "\"ignore_public_acls\":false,\"restrict_public_buckets\":false}}";
    static const char *const pub_policy =
        "{\"policy\":\"{\\\"Statement\\\":{\\\"Effect\\\":\\\"Allow\\\",\\\"Principal\\\":\\\"*"
        "\\\","
        "\\\"Action\\\":\\\"s3:GetObject\\\",\\\"Resource\\\":\\\"arn:aws:s3:::any/*\\\"}}\"}";
    char *out = NULL, *cur, err[256];

    CHECK_EQ_INT(hd_bprops_merge(blocked, "{\"anonymous_read\":true}", &out, err, sizeof(err)),
                 HD_EACCESS);
    CHECK(out == NULL && strstr(err, "BlockPublicAcls"));
    CHECK_EQ_INT(hd_bprops_merge(blocked, "{\"anonymous_list\":true}", &out, err, sizeof(err)),
                 HD_EACCESS);
    CHECK_EQ_INT(hd_bprops_merge(blocked, pub_policy, &out, err, sizeof(err)), HD_EACCESS);
    CHECK(strstr(err, "BlockPublicPolicy") != NULL);
    /* turning public things off, and other settings, go through */
    CHECK_EQ_INT(hd_bprops_merge(blocked, "{\"anonymous_read\":false,\"tags\":{\"a\":\"b\"}}", &out,
                                 err, sizeof(err)),
                 0);
    free(out);
    /* the block and the public setting in one patch: the block holds */
    CHECK_EQ_INT(hd_bprops_merge(NULL,
                                 "{\"anonymous_read\":true,\"public_access_block\":{"
                                 "\"block_public_acls\":true,\"block_public_policy\":false,"
                                 "\"ignore_public_acls\":false,\"restrict_public_buckets\":false}}",
                                 &out, err, sizeof(err)),
                 HD_EACCESS);
    /* set before the block: stays, and later changes of other keys are taken */
    CHECK_EQ_INT(hd_bprops_merge("{\"anonymous_read\":true}", blocked, &cur, err, sizeof(err)), 0);
    CHECK_EQ_INT(hd_bprops_merge(cur, "{\"tags\":{\"a\":\"b\"}}", &out, err, sizeof(err)), 0);
    CHECK(strstr(out, "\"anonymous_read\":true") != NULL);
    free(out);
    free(cur);
}

/* AWS's "TLS only" statement, the one Deny taken. */
#define TLS_ONLY(cond, act, res)                                                                   \
    "{\"Sid\":\"AllowSSLRequestsOnly\",\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":" act    \
    ",\"Resource\":" res ",\"Condition\":" cond "}"
#define SECURE_FALSE "{\"Bool\":{\"aws:SecureTransport\":\"false\"}}"
#define BOTH "[\"arn:aws:s3:::data\",\"arn:aws:s3:::data/*\"]"

HD_SUITE(policy_tls_only)
{
    int g = -1;

    CHECK_EQ_INT(check("data",
                       "{\"Version\":\"2012-10-17\",\"Statement\":[" TLS_ONLY(
                           SECURE_FALSE, "\"s3:*\"", BOTH) "]}",
                       &g),
                 0);
    CHECK_EQ_INT(g, HD_POLICY_TLS_ONLY);
    /* beside the public-read statement, as AWS's guides write them together */
    CHECK_EQ_INT(check("data",
                       "{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
                       "\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::data/*\"}," TLS_ONLY(
                           SECURE_FALSE, "\"s3:*\"", BOTH) "]}",
                       &g),
                 0);
    CHECK_EQ_INT(g, HD_POLICY_OBJECTS | HD_POLICY_TLS_ONLY);
    CHECK_EQ_INT(
        hd_policy_grants("data", "{\"Statement\":[" TLS_ONLY(SECURE_FALSE, "\"*\"", "\"*\"") "]}"),
        HD_POLICY_TLS_ONLY);
    /* the forms the value and the key take in the wild */
    CHECK_EQ_INT(check("data",
                       "{\"Statement\":" TLS_ONLY("{\"Bool\":{\"aws:SecureTransport\":false}}",
                                                  "[\"s3:*\"]", BOTH) "}",
                       &g),
                 0);
    CHECK_EQ_INT(
        check("data",
              "{\"Statement\":" TLS_ONLY("{\"Bool\":{\"aws:securetransport\":[\"false\"]}}",
                                         "\"s3:*\"", "\"arn:aws:s3:::data/*\"") "}",
              &g),
        0);
    CHECK_EQ_INT(g, HD_POLICY_TLS_ONLY);
    /* any other Deny or Condition: 501; another bucket: 400 */
    CHECK_EQ_INT(check("data",
                       "{\"Statement\":" TLS_ONLY("{\"Bool\":{\"aws:SecureTransport\":"
                                                  "\"true\"}}",
                                                  "\"s3:*\"", BOTH) "}",
                       &g),
                 HD_ENOTIMPL);
    CHECK_EQ_INT(
        check("data", "{\"Statement\":" TLS_ONLY(SECURE_FALSE, "\"s3:GetObject\"", BOTH) "}", &g),
        HD_ENOTIMPL);
    CHECK_EQ_INT(check("data",
                       "{\"Statement\":" TLS_ONLY(
                           "{\"Bool\":{\"aws:SecureTransport\":\"false\"},\"IpAddress\":{"
                           "\"aws:SourceIp\":\"10.0.0.0/8\"}}",
                           "\"s3:*\"", BOTH) "}",
                       &g),
                 HD_ENOTIMPL);
    CHECK_EQ_INT(
        check("data",
              "{\"Statement\":" TLS_ONLY("{\"NumericLessThan\":{\"s3:TlsVersion\":\"1.2\"}}",
                                         "\"s3:*\"", BOTH) "}",
              &g),
        HD_ENOTIMPL);
    CHECK_EQ_INT(check("data",
                       "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
                       "\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::data/*\",\"Condition\":"
                       "" SECURE_FALSE "}}",
                       &g),
                 HD_ENOTIMPL);
    CHECK_EQ_INT(
        check("data",
              "{\"Statement\":" TLS_ONLY(SECURE_FALSE, "\"s3:*\"", "\"arn:aws:s3:::other/*\"") "}",
              &g),
        HD_EMALFORMEDPOLICY);
    CHECK_EQ_INT(g, 0);
}
