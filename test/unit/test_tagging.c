/* Unit tests for common/tagging: the Tagging XML body and the x-amz-tagging header against
 * S3's limits (10 tags, keys 1..128 and values 0..256 Unicode characters, no aws: keys, no
 * repeated key) and their error codes; the canonical form (keys sorted) and the answer. */
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/tagging.h"
#include "test/unit/hd_test.h"

/* hd_tags_parse_xml of <Tagging><TagSet>tags</TagSet></Tagging>; *out as it gives it. */
static int xml(const char *tags, char **out)
{
    struct hd_buf b;
    int rc;

    hd_buf_init(&b);
    hd_buf_printf(&b, "<Tagging><TagSet>%s</TagSet></Tagging>", tags);
    rc = hd_tags_parse_xml(b.data, b.len, out);
    hd_buf_cleanup(&b);
    return rc;
}

static char *rep(const char *unit, size_t n)
{
    size_t l = strlen(unit), i;
    char *s = malloc(l * n + 1);

    for (i = 0; s && i < n; i++)
        memcpy(s + i * l, unit, l);
    if (s)
        s[l * n] = '\0';
    return s;
}

static int one_tag(const char *k, const char *v)
{
    struct hd_buf b;
    char *out = NULL;
    int rc;

    hd_buf_init(&b);
    hd_buf_printf(&b, "<Tag><Key>%s</Key><Value>%s</Value></Tag>", k, v);
    rc = xml(b.data, &out);
    hd_buf_cleanup(&b);
    free(out);
    return rc;
}

HD_SUITE(tagging_xml)
{
    struct hd_buf b;
    char *out = NULL, *s;
    int i;

    CHECK_EQ_INT(xml("<Tag><Key>zeta</Key><Value>2</Value></Tag>"
                     "<Tag><Key>alpha</Key><Value></Value></Tag>",
                     &out),
                 0);
    CHECK_EQ_STR(out, "{\"alpha\":\"\",\"zeta\":\"2\"}"); /* sorted */
    CHECK_EQ_INT(hd_tags_count(out), 2);
    free(out);
    /* the S3 namespace, entities, spaces kept */
    s = "<Tagging xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><TagSet><Tag><Key> a b </Key>"
        "<Value>&lt;&amp;&gt;</Value></Tag></TagSet></Tagging>";
    CHECK_EQ_INT(hd_tags_parse_xml(s, strlen(s), &out), 0);
    CHECK_EQ_STR(out, "{\" a b \":\"<&>\"}");
    free(out);
    /* the empty set */
    CHECK_EQ_INT(xml("", &out), 0);
    CHECK(out == NULL);
    s = "<Tagging><TagSet/></Tagging>";
    CHECK_EQ_INT(hd_tags_parse_xml(s, strlen(s), &out), 0);
    CHECK(out == NULL);
    /* 10 is the most */
    hd_buf_init(&b);
    for (i = 0; i < 11; i++) {
        hd_buf_printf(&b, "<Tag><Key>k%d</Key><Value>v</Value></Tag>", i);
        CHECK_EQ_INT(xml(b.data, &out), i < 10 ? 0 : HD_ETAGCOUNT);
        if (i < 10)
            CHECK_EQ_INT(hd_tags_count(out), i + 1);
        free(out);
        out = NULL;
    }
    hd_buf_cleanup(&b);
    /* lengths in Unicode characters: 128 "é" (256 bytes) is a key, 129 is not */
    s = rep("k", 128);
    CHECK_EQ_INT(one_tag(s, "v"), 0);
    free(s);
    s = rep("k", 129);
    CHECK_EQ_INT(one_tag(s, "v"), HD_ETAGKEYLEN);
    free(s);
    s = rep("\xc3\xa9", 128);
    CHECK_EQ_INT(one_tag(s, "v"), 0);
    free(s);
    s = rep("\xc3\xa9", 129);
    CHECK_EQ_INT(one_tag(s, "v"), HD_ETAGKEYLEN);
    free(s);
    s = rep("\xe4\xb8\xad", 256);
    CHECK_EQ_INT(one_tag("k", s), 0);
    free(s);
    s = rep("v", 257);
    CHECK_EQ_INT(one_tag("k", s), HD_ETAGVALLEN);
    free(s);
    CHECK_EQ_INT(one_tag("", "v"), HD_ETAGKEY);
    CHECK_EQ_INT(one_tag("aws:x", "v"), HD_ETAGAWS);
    CHECK_EQ_INT(one_tag("aws", "v"), 0);
    CHECK_EQ_INT(one_tag("AWS:x", "v"), 0);
    CHECK_EQ_INT(xml("<Tag><Key>d</Key><Value>1</Value></Tag><Tag><Key>d</Key><Value>2</Value>"
                     "</Tag>",
                     &out),
                 HD_ETAGDUP);
    CHECK(out == NULL);
    /* not a Tagging document */
    static const char *const bad[] = {
        "",
        "<Tagging>",
        "<Tagging/>",
        "<Other><TagSet/></Other>",
        "<Tagging><TagSet/><TagSet/></Tagging>",
        "<Tagging><TagSet><Tag><Key>k</Key></Tag></TagSet></Tagging>",
        "<Tagging><TagSet><Tag><Value>v</Value></Tag></TagSet></Tagging>",
        "<Tagging><TagSet><Tag><Key>a</Key><Key>b</Key><Value>v</Value></Tag></TagSet></Tagging>",
        "<Tagging><TagSet><Tag><Key>a</Key><Value>v</Value><X/></Tag></TagSet></Tagging>",
        "<Tagging><TagSet><Tag><Key><b/></Key><Value>v</Value></Tag></TagSet></Tagging>",
        "<Tagging><TagSet><Bogus/></TagSet></Tagging>",
    };
    for (i = 0; i < (int)(sizeof(bad) / sizeof(bad[0])); i++) {
        int rc = hd_tags_parse_xml(bad[i], strlen(bad[i]), &out);
        if (rc != HD_EMALFORMEDXML)
            fprintf(stderr, "  bad[%d] = %d\n", i, rc);
        CHECK_EQ_INT(rc, HD_EMALFORMEDXML);
        CHECK(out == NULL);
    }
}

HD_SUITE(tagging_header)
{
    char *out = NULL, *s;
    struct hd_buf b;
    int i;

    /* s3-tests test_put_obj_with_tags: "bar" alone has the empty value */
    CHECK_EQ_INT(hd_tags_parse_header("foo=bar&bar", &out), 0);
    CHECK_EQ_STR(out, "{\"bar\":\"\",\"foo\":\"bar\"}");
    free(out);
    CHECK_EQ_INT(hd_tags_parse_header("a%20b=c%2Bd&e+f=%E2%82%AC", &out), 0);
    CHECK_EQ_STR(out, "{\"a b\":\"c+d\",\"e f\":\"\\u20AC\"}");
    free(out);
    CHECK_EQ_INT(hd_tags_parse_header("", &out), 0);
    CHECK(out == NULL);
    CHECK_EQ_INT(hd_tags_parse_header("&&", &out), 0);
    CHECK(out == NULL);
    CHECK_EQ_INT(hd_tags_parse_header("k=1&k=2", &out), HD_ETAGHEADER);
    CHECK_EQ_INT(hd_tags_parse_header("k=%zz", &out), HD_ETAGHEADER);
    CHECK_EQ_INT(hd_tags_parse_header("k=%00", &out), HD_ETAGVAL);
    CHECK_EQ_INT(hd_tags_parse_header("%00=v", &out), HD_ETAGKEY);
    CHECK_EQ_INT(hd_tags_parse_header("k=%ff", &out), HD_ETAGVAL); /* not UTF-8 */
    CHECK_EQ_INT(hd_tags_parse_header("%ff=v", &out), HD_ETAGKEY);
    CHECK_EQ_INT(hd_tags_parse_header("=v", &out), HD_ETAGKEY);
    CHECK_EQ_INT(hd_tags_parse_header("aws%3Ax=1", &out), HD_ETAGAWS);
    s = rep("v", 257);
    hd_buf_init(&b);
    hd_buf_printf(&b, "k=%s", s);
    CHECK_EQ_INT(hd_tags_parse_header(b.data, &out), HD_ETAGVALLEN);
    hd_buf_cleanup(&b);
    free(s);
    hd_buf_init(&b);
    for (i = 0; i < 11; i++) {
        hd_buf_printf(&b, "%sk%d=v", i ? "&" : "", i);
        CHECK_EQ_INT(hd_tags_parse_header(b.data, &out), i < 10 ? 0 : HD_ETAGCOUNT);
        free(out);
        out = NULL;
    }
    hd_buf_cleanup(&b);
}

HD_SUITE(tagging_answer)
{
    struct hd_buf b;

    hd_buf_init(&b);
    hd_tags_xml(&b, "{\"a\":\"<1>\",\"b\":\"\"}");
    CHECK(b.data && strstr(b.data, "<Tagging xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                                   "<TagSet><Tag><Key>a</Key><Value>&lt;1&gt;</Value></Tag>"
                                   "<Tag><Key>b</Key><Value></Value></Tag></TagSet></Tagging>"));
    hd_buf_cleanup(&b);
    hd_buf_init(&b);
    hd_tags_xml(&b, NULL);
    CHECK(b.data && strstr(b.data, "<TagSet></TagSet></Tagging>"));
    hd_buf_cleanup(&b);
    CHECK_EQ_INT(hd_tags_count(NULL), 0);
    CHECK_EQ_INT(hd_tags_count("not json"), 0);
    CHECK_EQ_INT(hd_tags_count("[1,2]"), 0);
}

HD_SUITE(tagging_controls)
{
    char *out = NULL;

    CHECK_EQ_INT(hd_tags_parse_header("k=%01", &out), HD_ETAGVAL);
    CHECK_EQ_INT(hd_tags_parse_header("k%7F=v", &out), HD_ETAGKEY);
    CHECK_EQ_INT(hd_tags_parse_header("k=a%09b%0Ac%0D", &out), 0);
    CHECK_EQ_STR(out, "{\"k\":\"a\\tb\\nc\\r\"}");
    free(out);
}

/* A bucket's tags: the same body, up to HD_BUCKET_TAGS_MAX. */
HD_SUITE(tagging_bucket_max)
{
    struct hd_buf b;
    char *out = NULL;
    int i;

    hd_buf_init(&b);
    hd_buf_puts(&b, "<Tagging><TagSet>");
    for (i = 0; i < HD_BUCKET_TAGS_MAX; i++)
        hd_buf_printf(&b, "<Tag><Key>k%02d</Key><Value>v</Value></Tag>", i);
    hd_buf_puts(&b, "</TagSet></Tagging>");
    CHECK_EQ_INT(hd_tags_parse_xml(b.data, b.len, &out), HD_ETAGCOUNT);
    CHECK(out == NULL);
    CHECK_EQ_INT(hd_tags_parse_xml_max(b.data, b.len, HD_BUCKET_TAGS_MAX, &out), 0);
    CHECK_EQ_INT((int)hd_tags_count(out), HD_BUCKET_TAGS_MAX);
    free(out);
    out = NULL;
    hd_buf_cleanup(&b);
    hd_buf_init(&b);
    hd_buf_puts(&b, "<Tagging><TagSet>");
    for (i = 0; i <= HD_BUCKET_TAGS_MAX; i++)
        hd_buf_printf(&b, "<Tag><Key>k%02d</Key><Value>v</Value></Tag>", i);
    hd_buf_puts(&b, "</TagSet></Tagging>");
    CHECK_EQ_INT(hd_tags_parse_xml_max(b.data, b.len, HD_BUCKET_TAGS_MAX, &out), HD_ETAGCOUNT);
    CHECK(out == NULL);
    hd_buf_cleanup(&b);
}
