/* Unit tests for common/postpolicy: the POST Object form (fields added whole or in pieces,
 * repeats joined with ",", names in any case) and hd_post_check against what AWS and ceph
 * s3-tests expect: V2 and V4 form signatures computed here with the library's own
 * primitives, ${filename}, the policy's syntax (400) and its conditions (403), the fields
 * that need no condition, the key's write permission, and auth off. Every refusal is
 * checked for its exact code and a message. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cksum.h"
#include "common/errors.h"
#include "common/keys.h"
#include "common/postpolicy.h"
#include "common/sigv2.h"
#include "common/sigv4.h"
#include "test/unit/hd_test.h"

#define NOW 1746100800             /* 2025-05-01T12:00:00Z */
#define EXP "2025-05-01T13:40:00Z" /* NOW + 6000 s, as s3-tests writes it */
#define DAY "20250501"
#define AMZDATE DAY "T120000Z"
#define CRED "AK/" DAY "/us-east-1/s3/aws4_request"
/* AK writes everywhere, AKRO reads only, AKB2 writes b2 and reads b1 */
#define KEYSPEC "AK:sk,AKRO:skro:ro,AKB2:skb2:b2=rw;b1=ro"

/* s3-tests' standard conditions (C0), for the form key=foo.txt acl=private
 * Content-Type=text/plain posted to bucket b1 */
#define C0_NORANGE                                                                                 \
    "{\"bucket\": \"b1\"}, [\"starts-with\", \"$key\", \"foo\"], {\"acl\": \"private\"}, "         \
    "[\"starts-with\", \"$Content-Type\", \"text/plain\"]"
#define C0 C0_NORANGE ", [\"content-length-range\", 0, 1024]"
#define POLICY(conds) "{\"expiration\": \"" EXP "\", \"conditions\": [" conds "]}"
/* the conditions a V4 form's own fields need */
#define V4C                                                                                        \
    "{\"x-amz-algorithm\": \"AWS4-HMAC-SHA256\"}, [\"starts-with\", \"$x-amz-credential\", "       \
    "\"\"], [\"eq\", \"$x-amz-date\", \"" AMZDATE "\"]"

static struct hd_keys keyset;
static int keyset_ready;

static void keyset_free(void)
{
    hd_keys_cleanup(&keyset);
    keyset_ready = 0;
}

static const struct hd_keys *keys(void)
{
    if (!keyset_ready) {
        keyset_ready = 1;
        CHECK_EQ_INT(hd_keys_parse(&keyset, KEYSPEC), 0);
        CHECK_EQ_INT(keyset.n, 3);
        hd_test_at_end(keyset_free);
    }
    return &keyset;
}

static void add(struct hd_post_form *f, const char *name, const char *value)
{
    CHECK_EQ_INT(hd_post_form_add(f, name, value, strlen(value), 0), 0);
}

/* The form s3-tests sends (F0) without its auth fields. */
static void f0(struct hd_post_form *f)
{
    add(f, "key", "foo.txt");
    add(f, "acl", "private");
    add(f, "Content-Type", "text/plain");
}

/* pol: base64 of json. */
static void b64(const char *json, char *pol, size_t max)
{
    CHECK_EQ_INT(hd_b64_encode((const unsigned char *)json, strlen(json), pol, max), 0);
}

/* The policy field pol as given, AWSAccessKeyId ak (NULL: none), and signature = the V2
 * signature of pol by secret sk (NULL: none). */
static void sign_v2_raw(struct hd_post_form *f, const char *pol, const char *ak, const char *sk)
{
    char sig[HD_SIGV2_SIG_LEN + 1];

    add(f, "policy", pol);
    if (ak)
        add(f, "AWSAccessKeyId", ak);
    if (sk) {
        hd_sigv2_sign(sk, pol, strlen(pol), sig);
        add(f, "signature", sig);
    }
}

/* policy = base64(json), signed with V2 as sign_v2_raw. */
static void sign_v2(struct hd_post_form *f, const char *json, const char *ak, const char *sk)
{
    char pol[4096];

    b64(json, pol, sizeof(pol));
    sign_v2_raw(f, pol, ak, sk);
}

/* hx: the lowercase hex V4 form signature of the base64 policy pol by secret sk, for the
 * scope day/region/s3. */
static void v4sig(const char *sk, const char *day, const char *region, const char *pol, char hx[65])
{
    unsigned char key[32], mac[32];

    hd_sigv4_signing_key(sk, day, region, "s3", key);
    hd_hmac_sha256(key, sizeof(key), pol, strlen(pol), mac);
    hd_hex(mac, sizeof(mac), hx);
}

/* policy = base64(json) and the V4 fields x-amz-algorithm alg, x-amz-credential cred,
 * x-amz-date date (each NULL: none) and x-amz-signature signed by sk (NULL: none) for the
 * scope day/region. */
static void sign_v4(struct hd_post_form *f, const char *json, const char *alg, const char *cred,
                    const char *date, const char *sk, const char *day, const char *region)
{
    char pol[4096], hx[65];

    b64(json, pol, sizeof(pol));
    add(f, "policy", pol);
    if (alg)
        add(f, "x-amz-algorithm", alg);
    if (cred)
        add(f, "x-amz-credential", cred);
    if (date)
        add(f, "x-amz-date", date);
    if (sk) {
        v4sig(sk, day, region, pol, hx);
        add(f, "x-amz-signature", hx);
    }
}

/* A standard V4 form: F0, V4 fields for AK over a policy of C0 and the V4 conditions. */
static void v4form(struct hd_post_form *f, const char *alg, const char *cred, const char *date,
                   const char *sk, const char *day)
{
    f0(f);
    sign_v4(f, POLICY(C0 ", " V4C), alg, cred, date, sk, day, "us-east-1");
}

/* hd_post_check of f posted to bucket with keys k at NOW; *ok as it leaves it (the caller
 * cleans it up), f cleaned up. A refusal must leave a message (with want in it, unless want
 * is NULL) and no key, a success a key. */
static int post_ok(struct hd_post_form *f, const char *bucket, const struct hd_keys *k,
                   const char *want, struct hd_post_ok *ok)
{
    struct hd_post_in in = {bucket, NOW, k};
    char msg[512];
    int rc;

    memset(msg, 'x', sizeof(msg));
    rc = hd_post_check(f, &in, ok, msg, sizeof(msg));
    CHECK(memchr(msg, '\0', sizeof(msg)) != NULL);
    if (rc < 0) {
        CHECK(msg[0] != '\0');
        CHECK(ok->key == NULL);
        if (want && !strstr(msg, want))
            fprintf(stderr, "  msg = \"%s\", expected \"%s\" in it\n", msg, want);
        CHECK(!want || strstr(msg, want) != NULL);
    } else {
        CHECK_EQ_INT(rc, 0);
        CHECK(ok->key != NULL);
    }
    hd_post_form_cleanup(f);
    return rc;
}

/* post_ok with ok cleaned up too: the code only. */
static int post(struct hd_post_form *f, const char *bucket, const struct hd_keys *k,
                const char *want)
{
    struct hd_post_ok ok;
    int rc = post_ok(f, bucket, k, want, &ok);

    hd_post_ok_cleanup(&ok);
    CHECK(ok.key == NULL);
    return rc;
}

/* The code of a V2 form F0 + extra field name=value (NULL: none) over json, signed by AK. */
static int v2_c(const char *json, const char *name, const char *value, const char *want)
{
    struct hd_post_form f = {0};

    f0(&f);
    if (name)
        add(&f, name, value);
    sign_v2(&f, json, "AK", "sk");
    return post(&f, "b1", keys(), want);
}

HD_SUITE(postpolicy_form)
{
    struct hd_post_form f = {0};

    CHECK(hd_post_form_get(&f, "key") == NULL);
    add(&f, "Key", "foo");
    CHECK_EQ_STR(hd_post_form_get(&f, "key"), "foo");
    CHECK_EQ_STR(hd_post_form_get(&f, "KEY"), "foo");
    CHECK_EQ_STR(hd_post_form_get(&f, "kEy"), "foo");
    CHECK(hd_post_form_get(&f, "ke") == NULL);
    CHECK(hd_post_form_get(&f, "keys") == NULL);
    CHECK_EQ_STR(f.v[0].name, "Key"); /* the name as sent */

    /* a value in pieces (the first perhaps empty), appended to the last field */
    CHECK_EQ_INT(hd_post_form_add(&f, "x-amz-meta-a", "", 0, 0), 0);
    CHECK_EQ_INT(hd_post_form_add(&f, "x-amz-meta-a", "ab", 2, 1), 0);
    CHECK_EQ_INT(hd_post_form_add(&f, "x-amz-meta-a", "cdX", 2, 1), 0);
    CHECK_EQ_INT(hd_post_form_add(&f, "x-amz-meta-a", "", 0, 1), 0);
    CHECK_EQ_STR(hd_post_form_get(&f, "X-Amz-Meta-A"), "abcd");
    CHECK_EQ_INT(f.n, 2);
    CHECK_EQ_INT(f.v[1].vlen, 4);
    CHECK_EQ_STR(hd_post_form_get(&f, "key"), "foo");

    /* a repeated field (any case): the values joined with "," in arrival order */
    add(&f, "acl", "private");
    add(&f, "ACL", "public-read");
    CHECK_EQ_STR(hd_post_form_get(&f, "acl"), "private,public-read");
    CHECK_EQ_INT(f.v[2].vlen, strlen("private,public-read"));
    add(&f, "Acl", "");
    CHECK_EQ_STR(hd_post_form_get(&f, "acl"), "private,public-read,");
    CHECK_EQ_INT(f.n, 3);

    /* an append goes to the field the last add went to, also a repeated one (the parser
     * delivers a repeated field's value in pieces too) */
    {
        struct hd_post_form g = {0};
        add(&g, "a", "1");
        add(&g, "b", "2");
        add(&g, "a", "3");
        CHECK_EQ_INT(hd_post_form_add(&g, "a", "4", 1, 1), 0);
        CHECK_EQ_STR(hd_post_form_get(&g, "a"), "1,34");
        CHECK_EQ_STR(hd_post_form_get(&g, "b"), "2");
        hd_post_form_cleanup(&g);
    }

    /* any byte, a NUL-terminated copy beside the length */
    CHECK_EQ_INT(hd_post_form_add(&f, "bin", "a\0b", 3, 0), 0);
    CHECK_EQ_INT(f.v[3].vlen, 3);
    CHECK(memcmp(f.v[3].value, "a\0b", 4) == 0);

    f.filename = strdup("C:\\dir\\a.txt");
    CHECK(f.filename != NULL);
    hd_post_form_cleanup(&f);
    CHECK(f.v == NULL && f.n == 0 && f.cap == 0 && f.filename == NULL);
    hd_post_form_cleanup(&f); /* twice is harmless */

    /* an append with no field yet starts one */
    CHECK_EQ_INT(hd_post_form_add(&f, "key", "k", 1, 1), 0);
    CHECK_EQ_INT(f.n, 1);
    CHECK_EQ_STR(hd_post_form_get(&f, "key"), "k");
    /* many fields: the array grows */
    for (int i = 0; i < 40; i++) {
        char n[16];
        snprintf(n, sizeof(n), "x-ignore-%d", i);
        add(&f, n, n);
    }
    CHECK_EQ_INT(f.n, 41);
    CHECK_EQ_STR(hd_post_form_get(&f, "X-IGNORE-39"), "x-ignore-39");
    CHECK_EQ_STR(hd_post_form_get(&f, "key"), "k");
    hd_post_form_cleanup(&f);
}

HD_SUITE(postpolicy_v2)
{
    struct hd_post_form f = {0};
    struct hd_post_ok ok;

    /* s3-tests' authenticated request */
    f0(&f);
    sign_v2(&f, POLICY(C0), "AK", "sk");
    CHECK_EQ_INT(post_ok(&f, "b1", keys(), NULL, &ok), 0);
    CHECK_EQ_STR(ok.key, "foo.txt");
    CHECK_EQ_STR(ok.access, "AK");
    CHECK_EQ_INT(ok.min_len, 0);
    CHECK(ok.max_len == 1024);
    hd_post_ok_cleanup(&ok);
    CHECK(ok.key == NULL);

    /* the form's fields in another order: same answer */
    add(&f, "Content-Type", "text/plain");
    sign_v2(&f, POLICY(C0), "AK", "sk");
    add(&f, "acl", "private");
    add(&f, "key", "foo.txt");
    CHECK_EQ_INT(post(&f, "b1", keys(), NULL), 0);

    /* no content-length-range: no limit */
    f0(&f);
    sign_v2(&f, POLICY(C0_NORANGE), "AK", "sk");
    CHECK_EQ_INT(post_ok(&f, "b1", keys(), NULL, &ok), 0);
    CHECK_EQ_INT(ok.min_len, 0);
    CHECK(ok.max_len == UINT64_MAX);
    hd_post_ok_cleanup(&ok);

    /* a range; two ranges intersect; bounds as digit strings; a huge bound */
    f0(&f);
    sign_v2(&f, POLICY(C0_NORANGE ", [\"content-length-range\", 5, 100]"), "AK", "sk");
    CHECK_EQ_INT(post_ok(&f, "b1", keys(), NULL, &ok), 0);
    CHECK_EQ_INT(ok.min_len, 5);
    CHECK(ok.max_len == 100);
    hd_post_ok_cleanup(&ok);
    f0(&f);
    sign_v2(&f,
            POLICY(C0_NORANGE ", [\"content-length-range\", 0, 100], [\"Content-Length-Range\", "
                              "10, 2000]"),
            "AK", "sk");
    CHECK_EQ_INT(post_ok(&f, "b1", keys(), NULL, &ok), 0);
    CHECK_EQ_INT(ok.min_len, 10);
    CHECK(ok.max_len == 100);
    hd_post_ok_cleanup(&ok);
    f0(&f);
    sign_v2(&f, POLICY(C0_NORANGE ", [\"content-length-range\", \"1\", \"4194304\"]"), "AK", "sk");
    CHECK_EQ_INT(post_ok(&f, "b1", keys(), NULL, &ok), 0);
    CHECK_EQ_INT(ok.min_len, 1);
    CHECK(ok.max_len == 4194304);
    hd_post_ok_cleanup(&ok);
    f0(&f);
    sign_v2(&f, POLICY(C0_NORANGE ", [\"content-length-range\", 4194304, 9007199254740993]"), "AK",
            "sk");
    CHECK_EQ_INT(post_ok(&f, "b1", keys(), NULL, &ok), 0);
    CHECK_EQ_INT(ok.min_len, 4194304);
    CHECK(ok.max_len == 9007199254740993ull);
    hd_post_ok_cleanup(&ok);

    /* s3-tests' case-insensitive condition fields: names in the form and the policy in any
     * case, operators in any case */
    {
        char pol[4096], sig[HD_SIGV2_SIG_LEN + 1];
        b64(POLICY("{\"bUcKeT\": \"b1\"}, [\"StArTs-WiTh\", \"$KeY\", \"foo\"], {\"AcL\": "
                   "\"private\"}, [\"StArTs-WiTh\", \"$CoNtEnT-TyPe\", \"text/plain\"], "
                   "[\"content-length-range\", 0, 1024]"),
            pol, sizeof(pol));
        hd_sigv2_sign("sk", pol, strlen(pol), sig);
        add(&f, "kEy", "foo.txt");
        add(&f, "awsaccesskeyid", "AK");
        add(&f, "aCl", "private");
        add(&f, "SIGNATURE", sig);
        add(&f, "pOLICy", pol);
        add(&f, "Content-Type", "text/plain");
        CHECK_EQ_INT(post_ok(&f, "b1", keys(), NULL, &ok), 0);
        CHECK_EQ_STR(ok.key, "foo.txt");
        CHECK_EQ_STR(ok.access, "AK");
        hd_post_ok_cleanup(&ok);
    }
    /* eq in any case, several conditions on one field */
    CHECK_EQ_INT(v2_c(POLICY(C0 ", [\"EQ\", \"$key\", \"foo.txt\"], [\"eq\", \"$KEY\", "
                                "\"foo.txt\"]"),
                      NULL, NULL, NULL),
                 0);

    /* s3-tests' escaped field values: \$ is two plain characters on both sides */
    add(&f, "key", "\\$foo.txt");
    add(&f, "acl", "private");
    add(&f, "Content-Type", "text/plain");
    sign_v2(&f,
            POLICY("{\"bucket\": \"b1\"}, [\"starts-with\", \"$key\", \"\\\\$foo\"], {\"acl\": "
                   "\"private\"}, [\"starts-with\", \"$Content-Type\", \"text/plain\"]"),
            "AK", "sk");
    CHECK_EQ_INT(post_ok(&f, "b1", keys(), NULL, &ok), 0);
    CHECK_EQ_STR(ok.key, "\\$foo.txt");
    hd_post_ok_cleanup(&ok);

    /* fields that need no condition: x-ignore-*, x-amz-checksum-* (any case), the auth
     * fields; a field only sent, with starts-with "" on it, passes too */
    CHECK_EQ_INT(v2_c(POLICY(C0), "x-ignore-foo", "bar", NULL), 0);
    CHECK_EQ_INT(v2_c(POLICY(C0), "X-Ignore-Foo", "bar", NULL), 0);
    CHECK_EQ_INT(v2_c(POLICY(C0), "x-amz-checksum-sha256",
                      "aTL9MeXa9HObn6eP93eygxsJlcwdCwCTysgGAZAgE7w=", NULL),
                 0);
    CHECK_EQ_INT(v2_c(POLICY(C0), "X-Amz-Checksum-Crc32", "junk", NULL), 0);
    CHECK_EQ_INT(v2_c(POLICY(C0), "file", "bar", NULL), 0);
    CHECK_EQ_INT(v2_c(POLICY(C0 ", [\"starts-with\", \"$tagging\", \"\"]"), "tagging",
                      "<Tagging><TagSet></TagSet></Tagging>", NULL),
                 0);
    CHECK_EQ_INT(v2_c(POLICY(C0 ", [\"starts-with\", \"$x-amz-meta-foo\", \"bar\"]"),
                      "x-amz-meta-foo", "barclamp", NULL),
                 0);
    /* a condition on a missing field sees "": starts-with "" passes (s3-tests, SSE-S3
     * default), eq "" too */
    CHECK_EQ_INT(v2_c(POLICY(C0 ", [\"starts-with\", \"$x-amz-server-side-encryption\", \"\"]"),
                      NULL, NULL, NULL),
                 0);
    CHECK_EQ_INT(v2_c(POLICY(C0 ", [\"eq\", \"$x-amz-meta-none\", \"\"]"), NULL, NULL, NULL), 0);
    /* a repeated field is compared joined */
    CHECK_EQ_INT(v2_c(POLICY(C0 ", {\"x-amz-meta-r\": \"\"}"), NULL, NULL, NULL), 0);
    f0(&f);
    add(&f, "x-amz-meta-r", "1");
    add(&f, "X-Amz-Meta-R", "2");
    sign_v2(&f, POLICY(C0 ", {\"x-amz-meta-r\": \"1,2\"}"), "AK", "sk");
    CHECK_EQ_INT(post(&f, "b1", keys(), NULL), 0);

    /* the bucket condition is the URL's bucket: a "bucket" field is named by it but unused */
    f0(&f);
    add(&f, "bucket", "elsewhere");
    sign_v2(&f, POLICY(C0), "AK", "sk");
    CHECK_EQ_INT(post(&f, "b1", keys(), NULL), 0);
    f0(&f);
    sign_v2(&f, POLICY(C0 ", [\"starts-with\", \"$bucket\", \"b\"]"), "AK", "sk");
    CHECK_EQ_INT(post(&f, "b1", keys(), NULL), 0);

    /* an expiration with a fraction; exactly now is not yet expired */
    CHECK_EQ_INT(v2_c("{\"expiration\": \"2025-05-01T12:00:00.000Z\", \"conditions\": [" C0 "]}",
                      NULL, NULL, NULL),
                 0);
    CHECK_EQ_INT(v2_c("{\"expiration\": \"2031-05-01T12:00:00.123456Z\", \"conditions\": [" C0 "]}",
                      NULL, NULL, NULL),
                 0);
    /* the policy's other keys are ignored; an empty list of conditions with a form of only
     * key needs no more */
    CHECK_EQ_INT(
        v2_c("{\"conditions\": [" C0 "], \"x\": 1, \"expiration\": \"" EXP "\"}", NULL, NULL, NULL),
        0);
    add(&f, "key", "any");
    sign_v2(&f, POLICY("{\"key\": \"any\"}"), "AK", "sk");
    CHECK_EQ_INT(post(&f, "b1", keys(), NULL), 0);

    /* AKB2 writes b2 (but only reads b1) */
    add(&f, "key", "foo.txt");
    sign_v2(&f, POLICY("{\"bucket\": \"b2\"}, {\"key\": \"foo.txt\"}"), "AKB2", "skb2");
    CHECK_EQ_INT(post_ok(&f, "b2", keys(), NULL, &ok), 0);
    CHECK_EQ_STR(ok.access, "AKB2");
    hd_post_ok_cleanup(&ok);
}

HD_SUITE(postpolicy_filename)
{
    static const struct {
        const char *filename, *key, *want;
    } v[] = {
        {"foo.txt", "${filename}", "foo.txt"},
        {"C:\\dir\\foo.txt", "${filename}", "foo.txt"},
        {"x/y/foo2.txt", "${filename}", "foo2.txt"},
        {"a\\b/foo3.txt", "${filename}", "foo3.txt"},
        {"a/b\\foo4.txt", "${filename}", "foo4.txt"},
        {"dir/", "foo/${filename}", "foo/"},
        {"foo.txt", "foo/${filename}/${filename}", "foo/foo.txt/foo.txt"},
        {"f", "foo${filename", "foo${filename"},
        {"${filename}", "foo-${filename}", "foo-${filename}"}, /* expanded once */
        {NULL, "foo${filename}", "foo"},                       /* no filename: "" */
    };
    struct hd_post_form f = {0};
    struct hd_post_ok ok;
    size_t i;

    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        add(&f, "key", v[i].key);
        add(&f, "acl", "private");
        add(&f, "Content-Type", "text/plain");
        if (v[i].filename)
            f.filename = strdup(v[i].filename);
        sign_v2(&f, POLICY(C0), "AK", "sk");
        CHECK_EQ_INT(post_ok(&f, "b1", keys(), NULL, &ok), 0);
        CHECK_EQ_STR(ok.key, v[i].want);
        hd_post_ok_cleanup(&ok);
    }
    /* the conditions see the expanded value (s3-tests: key ${filename}, starts-with foo) */
    add(&f, "key", "${filename}");
    add(&f, "acl", "private");
    add(&f, "Content-Type", "text/plain");
    f.filename = strdup("bar.txt");
    sign_v2(&f, POLICY(C0), "AK", "sk");
    CHECK_EQ_INT(post(&f, "b1", keys(), "Policy Condition failed"), HD_EACCESS);
    /* and it is expanded in every field */
    f0(&f);
    add(&f, "x-amz-meta-name", "up-${filename}");
    f.filename = strdup("C:\\x\\pic.png");
    sign_v2(&f, POLICY(C0 ", {\"x-amz-meta-name\": \"up-pic.png\"}"), "AK", "sk");
    CHECK_EQ_INT(post(&f, "b1", keys(), NULL), 0);
    f0(&f);
    add(&f, "x-amz-meta-name", "up-${filename}");
    f.filename = strdup("pic.png");
    sign_v2(&f, POLICY(C0 ", {\"x-amz-meta-name\": \"up-${filename}\"}"), "AK", "sk");
    CHECK_EQ_INT(post(&f, "b1", keys(), "Policy Condition failed"), HD_EACCESS);
    /* a value with bytes after a NUL keeps them */
    f0(&f);
    CHECK_EQ_INT(hd_post_form_add(&f, "x-ignore-b", "${filename}\0z", 13, 0), 0);
    f.filename = strdup("q");
    sign_v2(&f, POLICY(C0), "AK", "sk");
    {
        struct hd_post_in in = {"b1", NOW, keys()};
        char msg[256];
        CHECK_EQ_INT(hd_post_check(&f, &in, &ok, msg, sizeof(msg)), 0);
        CHECK_EQ_INT(f.v[3].vlen, 3);
        CHECK(memcmp(f.v[3].value, "q\0z", 4) == 0);
        hd_post_ok_cleanup(&ok);
        hd_post_form_cleanup(&f);
    }
}

HD_SUITE(postpolicy_v4)
{
    struct hd_post_form f = {0};
    struct hd_post_ok ok;

    v4form(&f, "AWS4-HMAC-SHA256", CRED, AMZDATE, "sk", DAY);
    CHECK_EQ_INT(post_ok(&f, "b1", keys(), NULL, &ok), 0);
    CHECK_EQ_STR(ok.key, "foo.txt");
    CHECK_EQ_STR(ok.access, "AK");
    CHECK(ok.max_len == 1024);
    hd_post_ok_cleanup(&ok);

    /* field names in any case; another region (the credential's); any time of the day */
    {
        char pol[4096], hx[65];
        b64(POLICY(C0 ", {\"x-amz-algorithm\": \"AWS4-HMAC-SHA256\"}, [\"starts-with\", "
                      "\"$x-amz-credential\", \"AK/\"], [\"starts-with\", \"$x-amz-date\", "
                      "\"" DAY "\"]"),
            pol, sizeof(pol));
        v4sig("sk", DAY, "eu-west-1", pol, hx);
        f0(&f);
        add(&f, "X-Amz-Algorithm", "AWS4-HMAC-SHA256");
        add(&f, "X-AMZ-CREDENTIAL", "AK/" DAY "/eu-west-1/s3/aws4_request");
        add(&f, "X-Amz-Date", DAY "T235959Z");
        add(&f, "Policy", pol);
        add(&f, "X-Amz-Signature", hx);
        CHECK_EQ_INT(post_ok(&f, "b1", keys(), NULL, &ok), 0);
        CHECK_EQ_STR(ok.access, "AK");
        hd_post_ok_cleanup(&ok);
    }
    /* a V4 form is judged as V4 even with V2 fields beside it */
    v4form(&f, "AWS4-HMAC-SHA256", CRED, AMZDATE, "sk", DAY);
    add(&f, "AWSAccessKeyId", "NOPE");
    add(&f, "signature", "junk");
    CHECK_EQ_INT(post(&f, "b1", keys(), NULL), 0);

    /* the V4 fields need conditions (only x-amz-signature does not) */
    f0(&f);
    sign_v4(&f, POLICY(C0), "AWS4-HMAC-SHA256", CRED, AMZDATE, "sk", DAY, "us-east-1");
    CHECK_EQ_INT(post(&f, "b1", keys(), "Extra input fields: x-amz-algorithm"), HD_EACCESS);
    f0(&f);
    sign_v4(&f,
            POLICY(C0 ", {\"x-amz-algorithm\": \"AWS4-HMAC-SHA256\"}, [\"eq\", \"$x-amz-date\", "
                      "\"" AMZDATE "\"]"),
            "AWS4-HMAC-SHA256", CRED, AMZDATE, "sk", DAY, "us-east-1");
    CHECK_EQ_INT(post(&f, "b1", keys(), "Extra input fields: x-amz-credential"), HD_EACCESS);
    /* and they are conditions like any other */
    f0(&f);
    sign_v4(&f,
            POLICY(C0 ", {\"x-amz-algorithm\": \"AWS4-HMAC-SHA256\"}, [\"starts-with\", "
                      "\"$x-amz-credential\", \"\"], [\"eq\", \"$x-amz-date\", \"" DAY
                      "T000000Z\"]"),
            "AWS4-HMAC-SHA256", CRED, AMZDATE, "sk", DAY, "us-east-1");
    CHECK_EQ_INT(post(&f, "b1", keys(), "Policy Condition failed"), HD_EACCESS);

    /* the algorithm: exactly AWS4-HMAC-SHA256 */
    v4form(&f, "AWS4-HMAC-SHA1", CRED, AMZDATE, "sk", DAY);
    CHECK_EQ_INT(post(&f, "b1", keys(), "AWS4-HMAC-SHA1"), HD_EBADARG);
    v4form(&f, "aws4-hmac-sha256", CRED, AMZDATE, "sk", DAY);
    CHECK_EQ_INT(post(&f, "b1", keys(), NULL), HD_EBADARG);
    v4form(&f, "", CRED, AMZDATE, "sk", DAY);
    CHECK_EQ_INT(post(&f, "b1", keys(), NULL), HD_EBADARG);

    /* missing fields */
    v4form(&f, "AWS4-HMAC-SHA256", NULL, AMZDATE, "sk", DAY);
    CHECK_EQ_INT(post(&f, "b1", keys(), "x-amz-credential"), HD_EBADARG);
    v4form(&f, "AWS4-HMAC-SHA256", CRED, NULL, "sk", DAY);
    CHECK_EQ_INT(post(&f, "b1", keys(), "x-amz-date"), HD_EBADARG);
    v4form(&f, "AWS4-HMAC-SHA256", CRED, AMZDATE, NULL, DAY);
    CHECK_EQ_INT(post(&f, "b1", keys(), "x-amz-signature"), HD_EBADARG);

    /* malformed credentials */
    {
        static const char *const bad[] = {
            "AK/2025050/us-east-1/s3/aws4_request",
            "AK/202505011/us-east-1/s3/aws4_request",
            "AK/2025O501/us-east-1/s3/aws4_request",
            "AK/20250501/us-east-1/s4/aws4_request",
            "AK/20250501/us-east-1/S3/aws4_request",
            "AK/20250501/us-east-1/s3/aws5_request",
            "AK/20250501/us-east-1/s3/aws4_requests",
            "AK/20250501/us-east-1/s3",
            "AK/20250501/us-east-1/s3/",
            "AK/20250501//s3/aws4_request",
            "/20250501/us-east-1/s3/aws4_request",
            "AK",
            "",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            int rc;
            v4form(&f, "AWS4-HMAC-SHA256", bad[i], AMZDATE, "sk", DAY);
            rc = post(&f, "b1", keys(), "x-amz-credential");
            if (rc != HD_EBADARG)
                fprintf(stderr, "  credential \"%s\": %d\n", bad[i], rc);
            CHECK_EQ_INT(rc, HD_EBADARG);
        }
    }

    /* x-amz-date: of the credential's day, in the basic ISO form */
    v4form(&f, "AWS4-HMAC-SHA256", CRED, "20250502T120000Z", "sk", DAY);
    CHECK_EQ_INT(post(&f, "b1", keys(), "x-amz-date"), HD_EBADARG);
    v4form(&f, "AWS4-HMAC-SHA256", "AK/20250430/us-east-1/s3/aws4_request", AMZDATE, "sk",
           "20250430");
    CHECK_EQ_INT(post(&f, "b1", keys(), "x-amz-date"), HD_EBADARG);
    v4form(&f, "AWS4-HMAC-SHA256", CRED, "2025-05-01T12:00:00Z", "sk", DAY);
    CHECK_EQ_INT(post(&f, "b1", keys(), "x-amz-date"), HD_EBADARG);
    v4form(&f, "AWS4-HMAC-SHA256", CRED, DAY, "sk", DAY);
    CHECK_EQ_INT(post(&f, "b1", keys(), "x-amz-date"), HD_EBADARG);

    /* the signature: right secret, day, region; lowercase hex */
    v4form(&f, "AWS4-HMAC-SHA256", CRED, AMZDATE, "wrong", DAY);
    CHECK_EQ_INT(post(&f, "b1", keys(), "signature"), HD_EBADSIG);
    v4form(&f, "AWS4-HMAC-SHA256", CRED, AMZDATE, "sk", "20250430");
    CHECK_EQ_INT(post(&f, "b1", keys(), NULL), HD_EBADSIG);
    f0(&f);
    sign_v4(&f, POLICY(C0 ", " V4C), "AWS4-HMAC-SHA256", CRED, AMZDATE, "sk", DAY, "eu-west-1");
    CHECK_EQ_INT(post(&f, "b1", keys(), NULL), HD_EBADSIG);
    {
        char pol[4096], hx[65];
        b64(POLICY(C0 ", " V4C), pol, sizeof(pol));
        v4sig("sk", DAY, "us-east-1", pol, hx);
        for (char *p = hx; *p; p++)
            if (*p >= 'a' && *p <= 'f')
                *p = (char)(*p - 'a' + 'A');
        f0(&f);
        add(&f, "policy", pol);
        add(&f, "x-amz-algorithm", "AWS4-HMAC-SHA256");
        add(&f, "x-amz-credential", CRED);
        add(&f, "x-amz-date", AMZDATE);
        add(&f, "x-amz-signature", hx);
        CHECK_EQ_INT(post(&f, "b1", keys(), NULL), HD_EBADSIG);
        v4sig("sk", DAY, "us-east-1", pol, hx);
        hx[63] = '\0'; /* 63 digits */
        f0(&f);
        add(&f, "policy", pol);
        add(&f, "x-amz-algorithm", "AWS4-HMAC-SHA256");
        add(&f, "x-amz-credential", CRED);
        add(&f, "x-amz-date", AMZDATE);
        add(&f, "x-amz-signature", hx);
        CHECK_EQ_INT(post(&f, "b1", keys(), NULL), HD_EBADSIG);
        v4sig("sk", DAY, "us-east-1", pol, hx);
        f0(&f);
        add(&f, "policy", pol);
        add(&f, "x-amz-algorithm", "AWS4-HMAC-SHA256");
        add(&f, "x-amz-credential", CRED);
        add(&f, "x-amz-date", AMZDATE);
        CHECK_EQ_INT(hd_post_form_add(&f, "x-amz-signature", hx, 64, 0), 0);
        CHECK_EQ_INT(hd_post_form_add(&f, "x-amz-signature", "0", 1, 1), 0); /* 65 digits */
        CHECK_EQ_INT(post(&f, "b1", keys(), NULL), HD_EBADSIG);
    }
    /* an unknown key; a read-only one */
    v4form(&f, "AWS4-HMAC-SHA256", "NOPE/" DAY "/us-east-1/s3/aws4_request", AMZDATE, "sk", DAY);
    CHECK_EQ_INT(post(&f, "b1", keys(), "does not exist"), HD_ENOACCESSKEY);
    v4form(&f, "AWS4-HMAC-SHA256", "AKRO/" DAY "/us-east-1/s3/aws4_request", AMZDATE, "skro", DAY);
    CHECK_EQ_INT(post(&f, "b1", keys(), "Access Denied"), HD_EACCESS);
    /* the signature is checked before the policy */
    f0(&f);
    sign_v4(&f, "{\"expiration\": \"2020-01-01T00:00:00Z\", \"conditions\": []}",
            "AWS4-HMAC-SHA256", CRED, AMZDATE, "wrong", DAY, "us-east-1");
    CHECK_EQ_INT(post(&f, "b1", keys(), NULL), HD_EBADSIG);
}

HD_SUITE(postpolicy_auth)
{
    struct hd_post_form f = {0};
    struct hd_post_ok ok;
    struct hd_keys none = {0};
    char pol[4096], sig[HD_SIGV2_SIG_LEN + 1];

    /* no key field (s3-tests: 400), auth on or off, policy or not */
    add(&f, "acl", "private");
    add(&f, "Content-Type", "text/plain");
    sign_v2(&f, POLICY(C0), "AK", "sk");
    CHECK_EQ_INT(post(&f, "b1", keys(), "'key'"), HD_EBADARG);
    add(&f, "acl", "private");
    CHECK_EQ_INT(post(&f, "b1", &none, "'key'"), HD_EBADARG);
    add(&f, "Key", "");
    add(&f, "acl", "private");
    CHECK_EQ_INT(post(&f, "b1", &none, NULL), 0); /* an empty key is there */

    /* no policy with auth on: anonymous (403), or a half-signed form (400) */
    f0(&f);
    CHECK_EQ_INT(post(&f, "b1", keys(), "'policy'"), HD_EMISSINGAUTH);
    f0(&f);
    add(&f, "AWSAccessKeyId", "AK");
    CHECK_EQ_INT(post(&f, "b1", keys(), "'policy'"), HD_EBADARG);
    f0(&f);
    add(&f, "awsaccesskeyid", "AK");
    add(&f, "signature", "x");
    CHECK_EQ_INT(post(&f, "b1", keys(), NULL), HD_EBADARG);
    f0(&f);
    add(&f, "x-amz-credential", CRED);
    CHECK_EQ_INT(post(&f, "b1", keys(), NULL), HD_EBADARG);

    /* a policy without AWSAccessKeyId or without signature (s3-tests: 400) */
    f0(&f);
    sign_v2(&f, POLICY(C0), NULL, NULL);
    CHECK_EQ_INT(post(&f, "b1", keys(), "AWSAccessKeyId"), HD_EBADARG);
    f0(&f);
    sign_v2(&f, POLICY(C0), NULL, "sk");
    CHECK_EQ_INT(post(&f, "b1", keys(), "AWSAccessKeyId"), HD_EBADARG);
    f0(&f);
    sign_v2(&f, POLICY(C0), "AK", NULL);
    CHECK_EQ_INT(post(&f, "b1", keys(), "'Signature'"), HD_EBADARG);
    f0(&f);
    sign_v2(&f, POLICY(C0), "NOPE", NULL); /* before the key is looked up */
    CHECK_EQ_INT(post(&f, "b1", keys(), "'Signature'"), HD_EBADARG);

    /* a bad signature (s3-tests reverses the right one), the wrong secret, another key's */
    b64(POLICY(C0), pol, sizeof(pol));
    hd_sigv2_sign("sk", pol, strlen(pol), sig);
    for (size_t i = 0, n = strlen(sig); i < n / 2; i++) {
        char c = sig[i];
        sig[i] = sig[n - 1 - i];
        sig[n - 1 - i] = c;
    }
    f0(&f);
    add(&f, "AWSAccessKeyId", "AK");
    add(&f, "signature", sig);
    add(&f, "policy", pol);
    CHECK_EQ_INT(post(&f, "b1", keys(), "signature we calculated"), HD_EBADSIG);
    f0(&f);
    sign_v2(&f, POLICY(C0), "AK", "skro");
    CHECK_EQ_INT(post(&f, "b1", keys(), "signature we calculated"), HD_EBADSIG);
    f0(&f);
    sign_v2(&f, POLICY(C0), "AK", "");
    CHECK_EQ_INT(post(&f, "b1", keys(), NULL), HD_EBADSIG);
    hd_sigv2_sign("sk", pol, strlen(pol), sig);
    f0(&f);
    add(&f, "AWSAccessKeyId", "AK");
    add(&f, "signature", "");
    add(&f, "policy", pol);
    CHECK_EQ_INT(post(&f, "b1", keys(), NULL), HD_EBADSIG);
    f0(&f);
    add(&f, "AWSAccessKeyId", "AK");
    CHECK_EQ_INT(hd_post_form_add(&f, "signature", sig, HD_SIGV2_SIG_LEN - 1, 0), 0);
    add(&f, "policy", pol);
    CHECK_EQ_INT(post(&f, "b1", keys(), NULL), HD_EBADSIG);
    f0(&f);
    add(&f, "AWSAccessKeyId", "AK");
    add(&f, "signature", sig);
    add(&f, "x-ignore-pad", "");
    CHECK_EQ_INT(hd_post_form_add(&f, "signature", "", 0, 0), 0); /* "sig," */
    add(&f, "policy", pol);
    CHECK_EQ_INT(post(&f, "b1", keys(), NULL), HD_EBADSIG);
    /* the signature covers the base64 text as sent */
    {
        char pol2[4096];
        b64(POLICY(C0) " ", pol2, sizeof(pol2));
        f0(&f);
        add(&f, "AWSAccessKeyId", "AK");
        add(&f, "signature", sig);
        add(&f, "policy", pol2);
        CHECK_EQ_INT(post(&f, "b1", keys(), NULL), HD_EBADSIG);
    }

    /* unknown keys (s3-tests: "foo", the key reversed), even with a right signature */
    f0(&f);
    sign_v2(&f, POLICY(C0), "foo", "sk");
    CHECK_EQ_INT(post(&f, "b1", keys(), "does not exist"), HD_ENOACCESSKEY);
    f0(&f);
    sign_v2(&f, POLICY(C0), "KA", "sk");
    CHECK_EQ_INT(post(&f, "b1", keys(), "does not exist"), HD_ENOACCESSKEY);
    f0(&f);
    sign_v2(&f, POLICY(C0), "ak", "sk");
    CHECK_EQ_INT(post(&f, "b1", keys(), NULL), HD_ENOACCESSKEY);
    f0(&f);
    sign_v2(&f, POLICY(C0), "", "sk");
    CHECK_EQ_INT(post(&f, "b1", keys(), NULL), HD_ENOACCESSKEY);

    /* write permission: read-only keys are refused, after a right signature and policy */
    f0(&f);
    sign_v2(&f, POLICY(C0), "AKRO", "skro");
    CHECK_EQ_INT(post(&f, "b1", keys(), "Access Denied"), HD_EACCESS);
    f0(&f);
    sign_v2(&f, POLICY(C0), "AKB2", "skb2");
    CHECK_EQ_INT(post(&f, "b1", keys(), "Access Denied"), HD_EACCESS);
    add(&f, "key", "foo.txt");
    sign_v2(&f, POLICY("{\"bucket\": \"b3\"}, {\"key\": \"foo.txt\"}"), "AKB2", "skb2");
    CHECK_EQ_INT(post(&f, "b3", keys(), "Access Denied"), HD_EACCESS);

    /* auth off: no policy is needed, nobody signs */
    f0(&f);
    CHECK_EQ_INT(post_ok(&f, "b1", &none, NULL, &ok), 0);
    CHECK_EQ_STR(ok.key, "foo.txt");
    CHECK_EQ_STR(ok.access, "");
    CHECK_EQ_INT(ok.min_len, 0);
    CHECK(ok.max_len == UINT64_MAX);
    hd_post_ok_cleanup(&ok);
    {
        struct hd_post_in in = {"b1", NOW, NULL}; /* no key set at all */
        char msg[64];
        f0(&f);
        CHECK_EQ_INT(hd_post_check(&f, &in, &ok, msg, sizeof(msg)), 0);
        CHECK_EQ_STR(ok.access, "");
        CHECK_EQ_STR(msg, "");
        hd_post_ok_cleanup(&ok);
        hd_post_form_cleanup(&f);
    }
    /* a signed form with auth off: the signature is not checked, the policy is */
    f0(&f);
    sign_v2(&f, POLICY(C0), "NOPE", "wrong");
    CHECK_EQ_INT(post_ok(&f, "b1", &none, NULL, &ok), 0);
    CHECK_EQ_STR(ok.access, "");
    CHECK(ok.max_len == 1024);
    hd_post_ok_cleanup(&ok);
    f0(&f);
    sign_v2(&f, "{\"expiration\": \"2025-05-01T10:20:00Z\", \"conditions\": [" C0 "]}", NULL, NULL);
    CHECK_EQ_INT(post(&f, "b1", &none, "expired"), HD_EACCESS);
    f0(&f);
    add(&f, "x-amz-meta-foo", "bar");
    sign_v2(&f, POLICY(C0), NULL, NULL);
    CHECK_EQ_INT(post(&f, "b1", &none, "Extra input fields"), HD_EACCESS);
    f0(&f);
    sign_v2_raw(&f, "!!!!", NULL, NULL);
    CHECK_EQ_INT(post(&f, "b1", &none, NULL), HD_EPOLICY);

    /* a short message buffer: cut, terminated */
    {
        struct hd_post_in in = {"b1", NOW, keys()};
        char msg[8];
        f0(&f);
        CHECK_EQ_INT(hd_post_check(&f, &in, &ok, msg, sizeof(msg)), HD_EMISSINGAUTH);
        CHECK_EQ_INT(strlen(msg), 7);
        CHECK(ok.key == NULL);
        hd_post_ok_cleanup(&ok);
        hd_post_form_cleanup(&f);
    }
}

HD_SUITE(postpolicy_syntax)
{
    static const char *const bad_exp[] = {
        "2031-05-01 12:00:00+00:00",
        "2025-05-01 12:00:00.123456+00:00", /* s3-tests: str(datetime) */
        "2031-05-01 12:00:00Z",
        "2031-05-01T12:00:00",
        "2031-05-01T12:00:00+00:00",
        "2031-05-01T12:00:00.000",
        "2031-05-01T12:00:00.Z",
        "2031-05-01T12:00:00ZZ",
        "2031-05-01T12:00:00z",
        "2031-05-01T12:00Z",
        "2031-5-01T12:00:00Z",
        "20310501T120000Z",
        "2031-13-01T12:00:00Z",
        "2031-00-01T12:00:00Z",
        "2031-05-00T12:00:00Z",
        "2031-05-32T12:00:00Z",
        "2031-05-01T24:00:00Z",
        "2031-05-01T12:60:00Z",
        "2031-05-01T12:00:61Z",
        " 2031-05-01T12:00:00Z",
        "",
    };
    static const char *const bad_doc[] = {
        /* the top-level keys are case-sensitive (s3-tests: 400) */
        "{\"EXPIRATION\": \"" EXP "\", \"conditions\": [" C0 "]}",
        "{\"expiration\": \"" EXP "\", \"CONDITIONS\": [" C0 "]}",
        "{\"Expiration\": \"" EXP "\", \"Conditions\": [" C0 "]}",
        /* missing, or of the wrong type */
        "{\"conditions\": [" C0 "]}",
        "{\"expiration\": \"" EXP "\"}",
        "{}",
        "{\"expiration\": 1999999999, \"conditions\": [" C0 "]}",
        "{\"expiration\": null, \"conditions\": [" C0 "]}",
        "{\"expiration\": \"" EXP "\", \"conditions\": {\"bucket\": \"b1\"}}",
        "{\"expiration\": \"" EXP "\", \"conditions\": \"x\"}",
        "{\"expiration\": \"" EXP "\", \"conditions\": null}",
        /* bad conditions */
        POLICY("{}"), /* s3-tests' empty condition */
        POLICY(C0 ", {}"),
        POLICY(C0 ", {\"acl\": \"private\", \"key\": \"foo.txt\"}"),
        POLICY(C0 ", {\"x-amz-meta-n\": 1}"),
        POLICY(C0 ", {\"x-amz-meta-n\": null}"),
        POLICY(C0_NORANGE ", [\"content-length-range\", 0]"), /* s3-tests */
        POLICY(C0_NORANGE ", [\"content-length-range\", -1, 0]"),
        POLICY(C0_NORANGE ", [\"content-length-range\", 0, -1]"),
        POLICY(C0_NORANGE ", [\"content-length-range\", 10, 5]"),
        POLICY(C0_NORANGE ", [\"content-length-range\", 0, 1024, 2048]"),
        POLICY(C0_NORANGE ", [\"content-length-range\"]"),
        POLICY(C0_NORANGE ", [\"content-length-range\", 0, 1.5]"),
        POLICY(C0_NORANGE ", [\"content-length-range\", 0, \"1k\"]"),
        POLICY(C0_NORANGE ", [\"content-length-range\", 0, \"\"]"),
        POLICY(C0_NORANGE ", [\"content-length-range\", \"-1\", \"5\"]"),
        POLICY(C0_NORANGE ", [\"content-length-range\", 0, \" 5\"]"),
        POLICY(C0_NORANGE ", [\"content-length-range\", 0, \"99999999999999999999\"]"),
        POLICY(C0_NORANGE ", [\"content-length-range\", 0, null]"),
        POLICY(C0_NORANGE ", [\"content-length-range\", 0, true]"),
        POLICY(C0 ", [\"ends-with\", \"$key\", \"txt\"]"),
        POLICY(C0 ", [\"starts_with\", \"$key\", \"foo\"]"),
        POLICY(C0 ", [\"\", \"$key\", \"foo\"]"),
        POLICY(C0 ", [\"eq\", \"key\", \"foo.txt\"]"),
        POLICY(C0 ", [\"eq\", \"$key\"]"),
        POLICY(C0 ", [\"eq\", \"$key\", \"foo.txt\", \"x\"]"),
        POLICY(C0 ", [\"starts-with\", \"$key\", 1]"),
        POLICY(C0 ", [\"starts-with\", 1, \"foo\"]"),
        POLICY(C0 ", []"),
        POLICY(C0 ", [1, 2, 3]"),
        POLICY(C0 ", \"acl\""),
        POLICY(C0 ", null"),
        POLICY(C0 ", 5"),
        /* not a policy at all */
        "[1, 2]",
        "\"expiration\"",
        "not json",
        "{\"expiration\": \"" EXP "\", \"conditions\": [" C0 "]",
        "{\"expiration\": \"" EXP "\", \"conditions\": [" C0 "]} x",
        "{\"expiration\": \"" EXP "\", \"expiration\": \"" EXP "\", \"conditions\": [" C0 "]}",
    };
    static const char *const bad_b64[] = {
        "", "!!!!", "abc", "abcde", "ab=c", "e30 =", "e30=\n", "e30==", "====",
    };
    struct hd_post_form f = {0};
    char json[1024];
    size_t i;

    for (i = 0; i < sizeof(bad_exp) / sizeof(bad_exp[0]); i++) {
        snprintf(json, sizeof(json), "{\"expiration\": \"%s\", \"conditions\": [" C0 "]}",
                 bad_exp[i]);
        int rc = v2_c(json, NULL, NULL, "Invalid 'expiration' value");
        if (rc != HD_EPOLICY)
            fprintf(stderr, "  expiration \"%s\": %d\n", bad_exp[i], rc);
        CHECK_EQ_INT(rc, HD_EPOLICY);
    }
    for (i = 0; i < sizeof(bad_doc) / sizeof(bad_doc[0]); i++) {
        int rc = v2_c(bad_doc[i], NULL, NULL, "Invalid Policy");
        if (rc != HD_EPOLICY)
            fprintf(stderr, "  policy %s: %d\n", bad_doc[i], rc);
        CHECK_EQ_INT(rc, HD_EPOLICY);
    }
    CHECK_EQ_INT(v2_c(POLICY(C0 ", {}"), NULL, NULL, "exactly one property"), HD_EPOLICY);
    CHECK_EQ_INT(v2_c(POLICY(C0 ", [\"ends-with\", \"$key\", \"txt\"]"), NULL, NULL, "ends-with"),
                 HD_EPOLICY);
    CHECK_EQ_INT(v2_c(POLICY(C0_NORANGE ", [\"content-length-range\", 0]"), NULL, NULL,
                      "content-length-range"),
                 HD_EPOLICY);
    CHECK_EQ_INT(v2_c("{\"expiration\": \"" EXP "\"}", NULL, NULL, "missing conditions"),
                 HD_EPOLICY);
    CHECK_EQ_INT(
        v2_c("{\"EXPIRATION\": \"" EXP "\", \"conditions\": []}", NULL, NULL, "missing expiration"),
        HD_EPOLICY);
    CHECK_EQ_INT(v2_c("not json", NULL, NULL, "Invalid JSON"), HD_EPOLICY);
    /* a malformed condition is found even in an expired policy */
    CHECK_EQ_INT(
        v2_c("{\"expiration\": \"2020-01-01T00:00:00Z\", \"conditions\": [{}]}", NULL, NULL, NULL),
        HD_EPOLICY);

    for (i = 0; i < sizeof(bad_b64) / sizeof(bad_b64[0]); i++) {
        f0(&f);
        sign_v2_raw(&f, bad_b64[i], "AK", "sk");
        CHECK_EQ_INT(post(&f, "b1", keys(), "Base64"), HD_EPOLICY);
    }
    /* base64 of nothing JSON can read */
    {
        static const unsigned char junk[] = {0xff, 0xfe, 0x00, 0x7b, 0x7d, 0x80};
        char pol[16];
        CHECK_EQ_INT(hd_b64_encode(junk, sizeof(junk), pol, sizeof(pol)), 0);
        f0(&f);
        sign_v2_raw(&f, pol, "AK", "sk");
        CHECK_EQ_INT(post(&f, "b1", keys(), "JSON"), HD_EPOLICY);
    }
    /* a policy too long to be one */
    {
        size_t n = 100000;
        char *big = malloc(n + 1);
        CHECK(big != NULL);
        if (big) {
            memset(big, 'A', n);
            big[n] = '\0';
            f0(&f);
            sign_v2_raw(&f, big, "AK", "sk");
            CHECK_EQ_INT(post(&f, "b1", keys(), NULL), HD_EPOLICY);
            free(big);
        }
    }

    /* expired (s3-tests: now - 6000 s: 403) */
    CHECK_EQ_INT(v2_c("{\"expiration\": \"2025-05-01T10:20:00Z\", \"conditions\": [" C0 "]}", NULL,
                      NULL, "expired"),
                 HD_EACCESS);
    CHECK_EQ_INT(v2_c("{\"expiration\": \"2025-05-01T11:59:59.999Z\", \"conditions\": [" C0 "]}",
                      NULL, NULL, "expired"),
                 HD_EACCESS);
    CHECK_EQ_INT(v2_c("{\"expiration\": \"1970-01-01T00:00:00Z\", \"conditions\": [" C0 "]}", NULL,
                      NULL, "expired"),
                 HD_EACCESS);
}

HD_SUITE(postpolicy_cond)
{
    struct hd_post_form f = {0};

    /* failed eq (s3-tests: 403), with the condition in the message */
    CHECK_EQ_INT(v2_c(POLICY(C0 ", {\"acl\": \"public-read\"}"), NULL, NULL,
                      "Policy Condition failed: {\"acl\":\"public-read\"}"),
                 HD_EACCESS);
    CHECK_EQ_INT(v2_c(POLICY(C0 ", [\"eq\", \"$x-amz-meta-foo\", \"\"]"), "x-amz-meta-foo",
                      "barclamp", "Policy Condition failed"),
                 HD_EACCESS);
    CHECK_EQ_INT(v2_c(POLICY(C0 ", [\"eq\", \"$key\", \"foo.tx\"]"), NULL, NULL, NULL), HD_EACCESS);
    CHECK_EQ_INT(v2_c(POLICY(C0 ", [\"eq\", \"$key\", \"foo.txt2\"]"), NULL, NULL, NULL),
                 HD_EACCESS);
    CHECK_EQ_INT(v2_c(POLICY(C0 ", [\"eq\", \"$key\", \"FOO.TXT\"]"), NULL, NULL, NULL),
                 HD_EACCESS);
    CHECK_EQ_INT(v2_c(POLICY(C0 ", {\"acl\": \"\"}"), NULL, NULL, NULL), HD_EACCESS);
    /* failed starts-with: a prefix that is not (s3-tests' \$foo), a longer one, case */
    CHECK_EQ_INT(v2_c(POLICY("{\"bucket\": \"b1\"}, [\"starts-with\", \"$key\", \"\\\\$foo\"], "
                             "{\"acl\": \"private\"}, [\"starts-with\", \"$Content-Type\", "
                             "\"text/plain\"]"),
                      NULL, NULL, "Policy Condition failed: [\"starts-with\""),
                 HD_EACCESS);
    CHECK_EQ_INT(v2_c(POLICY(C0 ", [\"starts-with\", \"$key\", \"foo.txt.\"]"), NULL, NULL, NULL),
                 HD_EACCESS);
    CHECK_EQ_INT(v2_c(POLICY(C0 ", [\"starts-with\", \"$key\", \"Foo\"]"), NULL, NULL, NULL),
                 HD_EACCESS);
    /* a missing field is "": starts-with "bar" fails (s3-tests: 403) */
    CHECK_EQ_INT(v2_c(POLICY(C0 ", [\"starts-with\", \"$x-amz-meta-foo\", \"bar\"]"), NULL, NULL,
                      "Policy Condition failed"),
                 HD_EACCESS);
    CHECK_EQ_INT(v2_c(POLICY(C0 ", {\"x-amz-meta-foo\": \"x\"}"), NULL, NULL, NULL), HD_EACCESS);

    /* bucket: the URL's (s3-tests' wrong bucket: a form for b1 posted to b2, whose "bucket"
     * field says b1) */
    add(&f, "key", "${filename}");
    add(&f, "bucket", "b1");
    f.filename = strdup("foo.txt");
    add(&f, "acl", "private");
    add(&f, "Content-Type", "text/plain");
    sign_v2(&f, POLICY(C0), "AK", "sk");
    CHECK_EQ_INT(post(&f, "b2", keys(), "Policy Condition failed: {\"bucket\":\"b1\"}"),
                 HD_EACCESS);
    f0(&f);
    sign_v2(&f, POLICY(C0), "AK", "sk");
    CHECK_EQ_INT(post(&f, "b1x", keys(), "bucket"), HD_EACCESS);
    f0(&f);
    sign_v2(&f, POLICY(C0 ", {\"bucket\": \"B1\"}"), "AK", "sk");
    CHECK_EQ_INT(post(&f, "b1", keys(), NULL), HD_EACCESS);
    f0(&f);
    sign_v2(&f, POLICY(C0 ", [\"starts-with\", \"$bucket\", \"b2\"]"), "AK", "sk");
    CHECK_EQ_INT(post(&f, "b1", keys(), NULL), HD_EACCESS);
    /* s3-tests' missing policy condition: no bucket condition, a key prefix that fails */
    CHECK_EQ_INT(v2_c(POLICY("[\"starts-with\", \"$key\", \"\\\\$foo\"], {\"acl\": \"private\"}, "
                             "[\"starts-with\", \"$Content-Type\", \"text/plain\"], "
                             "[\"content-length-range\", 0, 1024]"),
                      NULL, NULL, NULL),
                 HD_EACCESS);

    /* fields no condition names (AWS: 403 "Extra input fields") */
    CHECK_EQ_INT(v2_c(POLICY(C0), "x-amz-meta-foo", "bar", "Extra input fields: x-amz-meta-foo"),
                 HD_EACCESS);
    CHECK_EQ_INT(v2_c(POLICY("[\"starts-with\", \"$key\", \"foo\"], {\"acl\": \"private\"}, "
                             "[\"starts-with\", \"$Content-Type\", \"text/plain\"]"),
                      "bucket", "b1", "Extra input fields: bucket"),
                 HD_EACCESS);
    CHECK_EQ_INT(v2_c(POLICY(C0), "success_action_status", "201", "Extra input fields"),
                 HD_EACCESS);
    CHECK_EQ_INT(v2_c(POLICY(C0), "x-ignore", "1", "Extra input fields"), HD_EACCESS);
    CHECK_EQ_INT(v2_c(POLICY(C0), "x-amz-checksum", "1", "Extra input fields"), HD_EACCESS);
    CHECK_EQ_INT(v2_c(POLICY(C0), "x-amz-credential", "1", NULL), HD_EACCESS);
    CHECK_EQ_INT(v2_c(POLICY(C0), "filename", "a.txt", "Extra input fields: filename"), HD_EACCESS);
    CHECK_EQ_INT(v2_c(POLICY(C0), "", "", "Extra input fields"), HD_EACCESS);
    /* a range names no field */
    CHECK_EQ_INT(v2_c(POLICY(C0 ", [\"content-length-range\", 0, 10]"), "content-length-range", "5",
                      "Extra input fields"),
                 HD_EACCESS);
    /* s3-tests' authenticated request without a key condition */
    CHECK_EQ_INT(v2_c(POLICY("{\"bucket\": \"b1\"}, {\"acl\": \"private\"}, [\"starts-with\", "
                             "\"$Content-Type\", \"text/plain\"]"),
                      NULL, NULL, "Extra input fields: key"),
                 HD_EACCESS);
    /* the exempt ones, all together and in odd cases */
    f0(&f);
    add(&f, "X-IGNORE-a", "1");
    add(&f, "x-ignore-", "2");
    add(&f, "x-amz-checksum-sha1", "3");
    add(&f, "X-AMZ-CHECKSUM-CRC64NVME", "4");
    add(&f, "x-amz-signature", "5"); /* V2 form: not used, and exempt */
    add(&f, "File", "6");
    sign_v2(&f, POLICY(C0), "AK", "sk");
    CHECK_EQ_INT(post(&f, "b1", keys(), NULL), 0);
}

/* An access key of the longest length SigV4 allows (128) signs forms of both kinds; a V4
 * credential with anything but its five slash-separated parts of visible characters is
 * malformed, even when the signature over the policy is right. */
HD_SUITE(postpolicy_limits)
{
    struct hd_keys k = {0};
    struct hd_post_form f = {0};
    struct hd_post_ok ok;
    char spec[300], ak[129], cred[300];
    static const char *const bad[] = {CRED " junk",
                                      "AK/" DAY "/us-east-1/s3/ aws4_request",
                                      "AK/" DAY "/us-east-1/s3/\taws4_request",
                                      "AK/" DAY "/us-east-1/s3/aws4_request/x",
                                      "AK/2025050/us-east-1/s3/aws4_request",
                                      "AK/2025050x/us-east-1/s3/aws4_request",
                                      "AK/" DAY "//s3/aws4_request",
                                      "/" DAY "/us-east-1/s3/aws4_request",
                                      "AK/" DAY "/us-east-1/s4/aws4_request",
                                      NULL};
    size_t i;

    memset(ak, 'A', 128);
    ak[128] = '\0';
    snprintf(spec, sizeof(spec), "%s:sk", ak);
    CHECK_EQ_INT(hd_keys_parse(&k, spec), 0);
    f0(&f);
    sign_v2(&f, POLICY(C0), ak, "sk");
    CHECK_EQ_INT(post_ok(&f, "b1", &k, NULL, &ok), 0);
    CHECK_EQ_STR(ok.access, ak);
    hd_post_ok_cleanup(&ok);
    snprintf(cred, sizeof(cred), "%s/" DAY "/us-east-1/s3/aws4_request", ak);
    f0(&f);
    sign_v4(&f,
            POLICY(C0 ", {\"x-amz-algorithm\": \"AWS4-HMAC-SHA256\"}, [\"starts-with\", "
                      "\"$x-amz-credential\", \"\"], [\"starts-with\", \"$x-amz-date\", \"\"]"),
            "AWS4-HMAC-SHA256", cred, AMZDATE, "sk", DAY, "us-east-1");
    CHECK_EQ_INT(post_ok(&f, "b1", &k, NULL, &ok), 0);
    CHECK_EQ_STR(ok.access, ak);
    hd_post_ok_cleanup(&ok);
    hd_keys_cleanup(&k);

    for (i = 0; bad[i]; i++) {
        f0(&f);
        sign_v4(&f,
                POLICY(C0 ", {\"x-amz-algorithm\": \"AWS4-HMAC-SHA256\"}, [\"starts-with\", "
                          "\"$x-amz-credential\", \"\"], [\"starts-with\", \"$x-amz-date\", "
                          "\"\"]"),
                "AWS4-HMAC-SHA256", bad[i], AMZDATE, "sk", DAY, "us-east-1");
        CHECK_EQ_INT(post(&f, "b1", keys(), "Invalid x-amz-credential"), HD_EBADARG);
    }

    /* a key with a NUL byte names another object than the one the policy checks */
    CHECK_EQ_INT(hd_post_form_add(&f, "key", "foo\0.txt", 8, 0), 0);
    add(&f, "acl", "private");
    add(&f, "Content-Type", "text/plain");
    sign_v2(&f, POLICY(C0), "AK", "sk");
    CHECK_EQ_INT(post(&f, "b1", keys(), "NUL"), HD_EBADKEY);
}
