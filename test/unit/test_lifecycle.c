/* Unit tests for common/lifecycle: the LifecycleConfiguration body (shapes, AWS's codes), the
 * canonical JSON and the answer that gives it back, generated IDs, when a rule's days run out,
 * which objects and uploads a rule takes, and the "lifecycle" bucket property in bprops. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/bprops.h"
#include "common/buf.h"
#include "common/errors.h"
#include "common/lifecycle.h"
#include "test/unit/hd_test.h"

#define DAY 86400000LL

/* hd_lc_parse_xml of <LifecycleConfiguration>rules</LifecycleConfiguration>: the code; *out
 * (when out) and msg as it gives them. */
static int parse(const char *rules, char **out, char *msg, size_t msglen)
{
    struct hd_buf b;
    char *o = NULL, m[200];
    int rc;

    hd_buf_init(&b);
    hd_buf_printf(&b, "<LifecycleConfiguration>%s</LifecycleConfiguration>", rules);
    rc = hd_lc_parse_xml(b.data, b.len, out ? out : &o, msg ? msg : m, msg ? msglen : sizeof(m));
    hd_buf_cleanup(&b);
    free(o);
    return rc;
}

#define RULE(inner) "<Rule>" inner "</Rule>"
#define ON "<Status>Enabled</Status>"
#define ANY "<Filter/>" ON /* a rule for every object */
#define DAYS(n) "<Expiration><Days>" #n "</Days></Expiration>"

HD_SUITE(lifecycle_parse)
{
    char *out = NULL, msg[200];
    struct hd_buf b;
    size_t i;

    /* the older rule-level Prefix, Days */
    CHECK_EQ_INT(
        parse(RULE("<ID>a</ID><Prefix>logs/</Prefix>" ON DAYS(30)), &out, msg, sizeof(msg)), 0);
    CHECK_EQ_STR(out, "[{\"expire_days\":30,\"id\":\"a\",\"prefix\":\"logs/\",\"status\":"
                      "\"Enabled\"}]");
    free(out);
    /* every filter form and action, the S3 namespace and whitespace */
    hd_buf_init(&b);
    hd_buf_puts(&b, "<?xml version=\"1.0\"?>\n<LifecycleConfiguration xmlns=\"http://s3.amazonaws"
                    ".com/doc/2006-03-01/\">\n <Rule>\n  <ID>f</ID>\n  <Filter>\n   <And>\n"
                    "    <Prefix> sp </Prefix><Tag><Key>k</Key><Value>v</Value></Tag>"
                    "<Tag><Key>e</Key><Value></Value></Tag>"
                    "<ObjectSizeGreaterThan>10</ObjectSizeGreaterThan>"
                    "<ObjectSizeLessThan>20</ObjectSizeLessThan>\n   </And>\n  </Filter>\n"
                    "  <Status>Disabled</Status>\n  <Expiration><Date>2030-01-01T00:00:00.000Z"
                    "</Date></Expiration>\n  <NoncurrentVersionExpiration><NoncurrentDays>3"
                    "</NoncurrentDays><NewerNoncurrentVersions>2</NewerNoncurrentVersions>"
                    "</NoncurrentVersionExpiration>\n </Rule>\n"
                    " <Rule><ID>t</ID><Filter><Tag><Key>x</Key><Value>y</Value></Tag></Filter>" ON
                    "<Expiration><Days>5</Days></Expiration></Rule>"
                    " <Rule><ID>e</ID><Filter/>" ON "<Expiration><ExpiredObjectDeleteMarker>false"
                    "</ExpiredObjectDeleteMarker></Expiration><AbortIncompleteMultipartUpload>"
                    "<DaysAfterInitiation>7</DaysAfterInitiation>"
                    "</AbortIncompleteMultipartUpload></Rule></LifecycleConfiguration>");
    CHECK_EQ_INT(hd_lc_parse_xml(b.data, b.len, &out, msg, sizeof(msg)), 0);
    hd_buf_cleanup(&b);
    CHECK_EQ_STR(out, "[{\"expire_date\":\"2030-01-01\",\"filter\":{\"and\":true,\"prefix\":\" sp "
                      "\",\"size_gt\":10,\"size_lt\":20,\"tags\":{\"e\":\"\",\"k\":\"v\"}},\"id\":"
                      "\"f\",\"newer_noncurrent\":2,\"noncurrent_days\":3,\"status\":\"Disabled\"},"
                      "{\"expire_days\":5,\"filter\":{\"tags\":{\"x\":\"y\"}},"
                      "\"id\":\"t\",\"status\":\"Enabled\"},{\"abort_mpu_days\":7,"
                      "\"expired_delete_marker\":false,\"filter\":{},"
                      "\"id\":\"e\",\"status\":\"Enabled\"}]");
    free(out);
    /* Date forms at midnight */
    CHECK_EQ_INT(parse(RULE(ANY "<Expiration><Date>2030-02-28T00:00:00+00:00</Date></Expiration>"),
                       NULL, NULL, 0),
                 0);
    CHECK_EQ_INT(parse(RULE(ANY "<Expiration><Date>2030-02-28T00:00:00Z</Date></Expiration>"), NULL,
                       NULL, 0),
                 0);

    /* shapes: MalformedXML */
    {
        static const char *const malformed[] = {
            "",
            RULE("<Prefix>a</Prefix>" DAYS(1)),     /* no Status */
            RULE("<Status>On</Status>" DAYS(1)),    /* another Status */
            RULE(ANY ON DAYS(1)),                   /* twice */
            RULE(ON "<Prefix/><Filter/>" DAYS(1)),  /* both */
            RULE(ANY "<Color>red</Color>" DAYS(1)), /* unknown */
            RULE(ANY "<Expiration/>"),              /* no action in it */
            RULE(ANY "<Expiration><Days>1</Days><Date>2030-01-01T00:00:00Z</Date></Expiration>"),
            RULE(ANY "<Expiration><Days>one</Days></Expiration>"), /* not a number */
            RULE(ANY "<Expiration><Days>1x</Days></Expiration>"),
            RULE(ANY "<Expiration><Days></Days></Expiration>"),
            RULE(ANY "<Expiration><ExpiredObjectDeleteMarker>yes</ExpiredObjectDeleteMarker>"
                     "</Expiration>"),
            RULE(ON "<Filter><Prefix>a</Prefix><ObjectSizeLessThan>3</ObjectSizeLessThan>"
                    "</Filter>" DAYS(1)), /* two without And */
            RULE(ON "<Filter><And><Color/></And></Filter>" DAYS(1)),
            RULE(ON "<Filter><Tag><Value>v</Value></Tag></Filter>" DAYS(1)), /* no Key */
            RULE(ON "<Filter><Prefix><x/></Prefix></Filter>" DAYS(1)),       /* not text */
            RULE(ANY "<NoncurrentVersionExpiration/>"),                      /* no NoncurrentDays */
            RULE(ANY "<AbortIncompleteMultipartUpload/>"),
            "<Other/>",
        };
        for (i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++)
            CHECK_EQ_INT(parse(malformed[i], NULL, NULL, 0), HD_EMALFORMEDXML);
        CHECK_EQ_INT(hd_lc_parse_xml("<Other><Rule/></Other>", 22, &out, msg, sizeof(msg)),
                     HD_EMALFORMEDXML);
        CHECK(out == NULL);
    }
    /* InvalidArgument */
    CHECK_EQ_INT(parse(RULE(ANY DAYS(0)), NULL, msg, sizeof(msg)), HD_EBADARG);
    CHECK(strstr(msg, "'Days' for Expiration action must be a positive integer") != NULL);
    CHECK_EQ_INT(parse(RULE(ANY DAYS(-3)), NULL, NULL, 0), HD_EBADARG);
    CHECK_EQ_INT(parse(RULE(ANY DAYS(2147483648)), NULL, NULL, 0), HD_EBADARG);
    CHECK_EQ_INT(parse(RULE(ANY "<Expiration><Date>2030-01-01T12:00:00Z</Date></Expiration>"), NULL,
                       msg, sizeof(msg)),
                 HD_EBADARG);
    CHECK(strstr(msg, "midnight") != NULL);
    CHECK_EQ_INT(parse(RULE(ANY "<Expiration><Date>2030-01-01T00:00:00.001Z</Date></Expiration>"),
                       NULL, NULL, 0),
                 HD_EBADARG);
    CHECK_EQ_INT(parse(RULE(ANY "<Expiration><Date>2030-02-30T00:00:00Z</Date></Expiration>"), NULL,
                       NULL, 0),
                 HD_EBADARG);
    CHECK_EQ_INT(parse(RULE(ANY "<Expiration><Date>1970-08-23T03:28:21Z</Date></Expiration>"), NULL,
                       NULL, 0),
                 HD_EBADARG);
    CHECK_EQ_INT(parse(RULE(ANY "<NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays>"
                                "<NewerNoncurrentVersions>101</NewerNoncurrentVersions>"
                                "</NoncurrentVersionExpiration>"),
                       NULL, NULL, 0),
                 HD_EBADARG);
    hd_buf_init(&b);
    hd_buf_puts(&b, "<Rule><ID>");
    for (i = 0; i < 256; i++)
        hd_buf_puts(&b, "x");
    hd_buf_puts(&b, "</ID>" ANY DAYS(1) "</Rule>");
    CHECK_EQ_INT(parse(b.data, NULL, msg, sizeof(msg)), HD_EBADARG);
    CHECK(strstr(msg, "255") != NULL);
    hd_buf_cleanup(&b);
    CHECK_EQ_INT(parse(RULE("<ID>s</ID>" ANY DAYS(1)) RULE("<ID>s</ID>" ANY DAYS(2)), NULL, msg,
                       sizeof(msg)),
                 HD_EBADARG);
    CHECK(strstr(msg, "unique") != NULL);
    /* InvalidRequest */
    CHECK_EQ_INT(parse(RULE(ON "<Prefix>a</Prefix>"), NULL, msg, sizeof(msg)), HD_EBADREQ);
    CHECK(strstr(msg, "At least one action") != NULL);
    CHECK_EQ_INT(parse(RULE(ON "<Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter>"
                               "<AbortIncompleteMultipartUpload><DaysAfterInitiation>1"
                               "</DaysAfterInitiation></AbortIncompleteMultipartUpload>"),
                       NULL, NULL, 0),
                 HD_EBADREQ);
    CHECK_EQ_INT(parse(RULE(ON "<Filter><And><Tag><Key>k</Key><Value>v</Value></Tag></And>"
                               "</Filter><Expiration><ExpiredObjectDeleteMarker>true"
                               "</ExpiredObjectDeleteMarker></Expiration>"),
                       NULL, NULL, 0),
                 HD_EBADREQ);
    CHECK_EQ_INT(parse(RULE(ON "<Filter><And><Tag><Key>k</Key><Value>1</Value></Tag><Tag><Key>k"
                               "</Key><Value>2</Value></Tag></And></Filter>" DAYS(1)),
                       NULL, msg, sizeof(msg)),
                 HD_EBADREQ);
    CHECK(strstr(msg, "Duplicate") != NULL);
    CHECK_EQ_INT(parse(RULE(ON "<Filter><And><ObjectSizeGreaterThan>5</ObjectSizeGreaterThan>"
                               "<ObjectSizeLessThan>5</ObjectSizeLessThan></And></Filter>" DAYS(1)),
                       NULL, NULL, 0),
                 HD_EBADREQ);
    CHECK_EQ_INT(
        parse(RULE(ON "<Filter><ObjectSizeLessThan>0</ObjectSizeLessThan></Filter>" DAYS(1)), NULL,
              NULL, 0),
        HD_EBADREQ);
    /* sizes with an upload abort (AWS applies neither to uploads) */
    CHECK_EQ_INT(parse(RULE(ON "<Filter><ObjectSizeGreaterThan>5</ObjectSizeGreaterThan></Filter>"
                               "<AbortIncompleteMultipartUpload><DaysAfterInitiation>1"
                               "</DaysAfterInitiation></AbortIncompleteMultipartUpload>"),
                       NULL, msg, sizeof(msg)),
                 HD_EBADREQ);
    CHECK(strstr(msg, "size") != NULL);
    /* neither Prefix nor Filter, an And of nothing: MalformedXML */
    CHECK_EQ_INT(parse(RULE(ON DAYS(1)), NULL, NULL, 0), HD_EMALFORMEDXML);
    CHECK_EQ_INT(parse(RULE(ON "<Filter><And/></Filter>" DAYS(1)), NULL, NULL, 0),
                 HD_EMALFORMEDXML);
    /* a day alone is its midnight */
    CHECK_EQ_INT(parse(RULE(ANY "<Expiration><Date>2031-01-01</Date></Expiration>"), &out, NULL, 0),
                 0);
    CHECK(out && strstr(out, "\"expire_date\":\"2031-01-01\"") != NULL);
    free(out);
    out = NULL;
    CHECK_EQ_INT(parse(RULE(ANY "<Expiration><Date>2031-01-0</Date></Expiration>"), NULL, NULL, 0),
                 HD_EBADARG);
    /* a Date of another shape */
    CHECK_EQ_INT(parse(RULE(ANY "<Expiration><Date>2027- 1- 1T00:00:00Z</Date></Expiration>"), NULL,
                       NULL, 0),
                 HD_EBADARG);
    CHECK_EQ_INT(parse(RULE(ANY "<Expiration><Date>2027-+1-01T00:00:00Z</Date></Expiration>"), NULL,
                       NULL, 0),
                 HD_EBADARG);
    /* more bad input: long prefixes, tags S3 refuses, repeated elements, overflowing and
     * negative numbers, other zones */
    hd_buf_init(&b);
    hd_buf_puts(&b, "<Rule><Prefix>");
    for (i = 0; i < HD_LC_PREFIX_MAX + 1; i++)
        hd_buf_puts(&b, "p");
    hd_buf_puts(&b, "</Prefix>" ON DAYS(1) "</Rule>");
    CHECK_EQ_INT(parse(b.data, NULL, NULL, 0), HD_EBADARG);
    hd_buf_reset(&b);
    hd_buf_puts(&b, "<Rule><Filter><Prefix>");
    for (i = 0; i < HD_LC_PREFIX_MAX + 1; i++)
        hd_buf_puts(&b, "p");
    hd_buf_puts(&b, "</Prefix></Filter>" ON DAYS(1) "</Rule>");
    CHECK_EQ_INT(parse(b.data, NULL, NULL, 0), HD_EBADARG);
    hd_buf_reset(&b);
    hd_buf_puts(&b, "<Rule><Filter><Tag><Key>");
    for (i = 0; i < 129; i++)
        hd_buf_puts(&b, "k");
    hd_buf_puts(&b, "</Key><Value>v</Value></Tag></Filter>" ON DAYS(1) "</Rule>");
    CHECK_EQ_INT(parse(b.data, NULL, NULL, 0), HD_EBADARG); /* 129 characters */
    hd_buf_cleanup(&b);
    CHECK_EQ_INT(
        parse(RULE(ON "<Filter><Tag><Key>aws:x</Key><Value>v</Value></Tag></Filter>" DAYS(1)), NULL,
              msg, sizeof(msg)),
        HD_EBADARG);
    CHECK(strstr(msg, "tags") != NULL);
    CHECK_EQ_INT(parse(RULE(ON "<Filter><Tag><Key></Key><Value>v</Value></Tag></Filter>" DAYS(1)),
                       NULL, NULL, 0),
                 HD_EBADARG);
    CHECK_EQ_INT(parse(RULE("<ID>a</ID><ID>b</ID>" ANY DAYS(1)), NULL, NULL, 0), HD_EMALFORMEDXML);
    CHECK_EQ_INT(parse(RULE("<Prefix>a</Prefix><Prefix>b</Prefix>" ON DAYS(1)), NULL, NULL, 0),
                 HD_EMALFORMEDXML);
    CHECK_EQ_INT(parse(RULE(ANY "<NoncurrentVersionExpiration><NewerNoncurrentVersions>2"
                                "</NewerNoncurrentVersions></NoncurrentVersionExpiration>"),
                       NULL, NULL, 0),
                 HD_EMALFORMEDXML); /* NoncurrentDays is required */
    CHECK_EQ_INT(
        parse(RULE(ON "<Filter><ObjectSizeGreaterThan>-1</ObjectSizeGreaterThan></Filter>" DAYS(1)),
              NULL, NULL, 0),
        HD_EBADARG);
    CHECK_EQ_INT(parse(RULE(ANY DAYS(99999999999999999999)), NULL, msg, sizeof(msg)), HD_EBADARG);
    CHECK(strstr(msg, "positive integer") != NULL);
    CHECK_EQ_INT(parse(RULE(ANY DAYS(-99999999999999999999)), NULL, NULL, 0), HD_EBADARG);
    CHECK_EQ_INT(parse(RULE(ANY "<Expiration><Date>2030-01-01T00:00:00+01:00</Date></Expiration>"),
                       NULL, NULL, 0),
                 HD_EBADARG);
    CHECK_EQ_INT(parse(RULE(ANY "<Expiration><Date>2030-01-01T00:00:00z</Date></Expiration>"), NULL,
                       NULL, 0),
                 HD_EBADARG);
    /* an empty ID is none: one is made */
    CHECK_EQ_INT(parse(RULE("<ID></ID>" ANY DAYS(1)), &out, NULL, 0), 0);
    CHECK(out && strstr(out, "\"id\":\"\"") == NULL && strstr(out, "\"id\":\"") != NULL);
    free(out);
    out = NULL;
    /* transitions: hoard has one storage class */
    CHECK_EQ_INT(parse(RULE(ANY "<Transition><Days>1</Days><StorageClass>GLACIER</StorageClass>"
                                "</Transition>" DAYS(30)),
                       NULL, msg, sizeof(msg)),
                 HD_ENOTIMPL);
    CHECK(strstr(msg, "storage class") != NULL);
    /* 1000 rules, not 1001 */
    hd_buf_init(&b);
    for (i = 0; i < HD_LC_RULES_MAX; i++)
        hd_buf_printf(&b, "<Rule><ID>%zu</ID>" ANY DAYS(1) "</Rule>", i);
    CHECK_EQ_INT(parse(b.data, NULL, NULL, 0), 0);
    hd_buf_puts(&b, RULE(ANY DAYS(1)));
    CHECK_EQ_INT(parse(b.data, NULL, msg, sizeof(msg)), HD_EBADREQ);
    hd_buf_cleanup(&b);
}

/* Rules without IDs get distinct ones, the same for the same body, never a given one's. */
HD_SUITE(lifecycle_ids)
{
    char *a = NULL, *b = NULL;
    json_t *j;
    const char *i0, *i1;

    CHECK_EQ_INT(parse(RULE(ANY DAYS(1)) RULE(ANY DAYS(1)), &a, NULL, 0), 0);
    CHECK_EQ_INT(parse(RULE(ANY DAYS(1)) RULE(ANY DAYS(1)), &b, NULL, 0), 0);
    CHECK_EQ_STR(a, b);
    j = json_loads(a, 0, NULL);
    i0 = json_string_value(json_object_get(json_array_get(j, 0), "id"));
    i1 = json_string_value(json_object_get(json_array_get(j, 1), "id"));
    CHECK(i0 && i1 && strlen(i0) == 16 && strcmp(i0, i1) != 0);
    free(b);
    b = NULL;
    /* a given ID equal to the one the first rule would get: the first gets another */
    {
        struct hd_buf x;
        char *c = NULL;
        json_t *k;
        hd_buf_init(&x);
        hd_buf_printf(&x, RULE(ANY DAYS(1)) "<Rule><ID>%s</ID>" ANY DAYS(2) "</Rule>", i0);
        CHECK_EQ_INT(parse(x.data, &c, NULL, 0), 0);
        k = json_loads(c, 0, NULL);
        CHECK(strcmp(json_string_value(json_object_get(json_array_get(k, 0), "id")), i0) != 0);
        json_decref(k);
        free(c);
        hd_buf_cleanup(&x);
    }
    json_decref(j);
    free(a);
}

/* The answer gives the same rules back: parse(xml(parse(body))) == parse(body). */
HD_SUITE(lifecycle_xml)
{
    static const char *const bodies[] = {
        RULE("<ID>a</ID><Prefix></Prefix>" ON DAYS(1)),
        RULE("<ID>b &amp; &lt;c&gt;</ID><Filter><Prefix>x&amp;y</Prefix></Filter>"
             "<Status>Disabled</Status><Expiration><Date>2031-12-31T00:00:00Z</Date>"
             "</Expiration>"),
        RULE("<ID>c</ID><Filter><And><Prefix>p</Prefix><Tag><Key>b</Key><Value>2</Value></Tag>"
             "<Tag><Key>a</Key><Value>1</Value></Tag><ObjectSizeLessThan>9</ObjectSizeLessThan>"
             "</And></Filter>" ON DAYS(4)),
        RULE("<ID>d</ID><Filter><ObjectSizeGreaterThan>0</ObjectSizeGreaterThan></Filter>" ON
             "<NoncurrentVersionExpiration><NoncurrentDays>2</NoncurrentDays>"
             "</NoncurrentVersionExpiration>"),
        RULE("<ID>e</ID><Filter></Filter>" ON "<Expiration><ExpiredObjectDeleteMarker>true"
             "</ExpiredObjectDeleteMarker></Expiration><AbortIncompleteMultipartUpload>"
             "<DaysAfterInitiation>3</DaysAfterInitiation></AbortIncompleteMultipartUpload>"),
    };
    size_t i;

    for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        char *one = NULL, *two = NULL, msg[200];
        struct hd_buf b;
        json_t *j;
        CHECK_EQ_INT(parse(bodies[i], &one, msg, sizeof(msg)), 0);
        j = json_loads(one, 0, NULL);
        hd_buf_init(&b);
        hd_lc_xml(&b, j);
        CHECK(!b.oom && strstr(b.data, "<LifecycleConfiguration xmlns=") != NULL);
        CHECK_EQ_INT(hd_lc_parse_xml(b.data, b.len, &two, msg, sizeof(msg)), 0);
        CHECK_EQ_STR(two, one);
        if (i == 1)
            CHECK(strstr(b.data, "<Date>2031-12-31T00:00:00.000Z</Date>") != NULL);
        hd_buf_cleanup(&b);
        json_decref(j);
        free(one);
        free(two);
    }
}

static json_t *rules_of(const char *xml_rules)
{
    char *out = NULL;
    json_t *j;

    if (parse(xml_rules, &out, NULL, 0) < 0)
        return NULL;
    j = json_loads(out, 0, NULL);
    free(out);
    return j;
}

HD_SUITE(lifecycle_eval)
{
    const int64_t t0 = 1767225600000LL; /* 2026-01-01T00:00:00Z */
    json_t *r, *tags;
    int need_tags;

    /* Days: written time plus days, rounded up to midnight UTC */
    CHECK_EQ_INT(hd_lc_due_ms(t0, 1, DAY), t0 + DAY);
    CHECK_EQ_INT(hd_lc_due_ms(t0 + 1, 1, DAY), t0 + 2 * DAY);
    CHECK_EQ_INT(hd_lc_due_ms(t0 + DAY - 1, 2, DAY), t0 + 3 * DAY);
    CHECK_EQ_INT(hd_lc_due_ms(1500, 1, 1000), 3000); /* a shortened day */
    CHECK_EQ_INT(hd_lc_due_ms(t0, HD_LC_DAYS_MAX, DAY), t0 + (int64_t)HD_LC_DAYS_MAX * DAY);
    CHECK_EQ_INT(hd_lc_due_ms(INT64_MAX - 5, 1, DAY), INT64_MAX);

    r = rules_of(RULE("<ID>a</ID><Prefix>tmp/</Prefix>" ON DAYS(2))
                     RULE("<ID>b</ID><Prefix>off/</Prefix><Status>Disabled</Status>" DAYS(1))
                         RULE("<ID>c</ID><Filter><And><Prefix>t/</Prefix><Tag><Key>k</Key>"
                              "<Value>v</Value></Tag><ObjectSizeGreaterThan>10"
                              "</ObjectSizeGreaterThan></And></Filter>" ON DAYS(1))
                             RULE("<ID>d</ID><Prefix>old/</Prefix>" ON
                                  "<Expiration><Date>2026-01-10T00:00:00Z</Date></Expiration>")
                                 RULE("<ID>e</ID><Prefix>up/</Prefix>" ON
                                      "<AbortIncompleteMultipartUpload><DaysAfterInitiation>1"
                                      "</DaysAfterInitiation></AbortIncompleteMultipartUpload>"));
    CHECK(r != NULL);
    CHECK_EQ_INT(hd_lc_actions(r, &need_tags), HD_LC_EXPIRES | HD_LC_ABORTS);
    CHECK_EQ_INT(need_tags, 1);
    /* prefix and days */
    CHECK_EQ_INT(hd_lc_expired(r, "tmp/x", 5, t0, NULL, t0 + 2 * DAY - 1, DAY), 0);
    CHECK_EQ_INT(hd_lc_expired(r, "tmp/x", 5, t0, NULL, t0 + 2 * DAY, DAY), 1);
    CHECK_EQ_INT(hd_lc_expired(r, "tmpx", 5, t0, NULL, t0 + 9 * DAY, DAY), 0);
    /* disabled */
    CHECK_EQ_INT(hd_lc_expired(r, "off/x", 5, t0, NULL, t0 + 9 * DAY, DAY), 0);
    /* tags and size, all of them */
    tags = json_pack("{s:s, s:s}", "k", "v", "other", "1");
    CHECK_EQ_INT(hd_lc_expired(r, "t/x", 11, t0, tags, t0 + DAY, DAY), 1);
    CHECK_EQ_INT(hd_lc_expired(r, "t/x", 10, t0, tags, t0 + DAY, DAY), 0); /* not > 10 */
    CHECK_EQ_INT(hd_lc_expired(r, "t/x", 11, t0, NULL, t0 + DAY, DAY), 0);
    json_decref(tags);
    tags = json_pack("{s:s}", "k", "w");
    CHECK_EQ_INT(hd_lc_expired(r, "t/x", 11, t0, tags, t0 + DAY, DAY), 0);
    json_decref(tags);
    /* Date: everything under the prefix once the day has come, whenever it was written */
    CHECK_EQ_INT(hd_lc_expired(r, "old/x", 5, t0, NULL, t0 + 9 * DAY - 1, DAY), 0);
    CHECK_EQ_INT(hd_lc_expired(r, "old/x", 5, t0 + 20 * DAY, NULL, t0 + 20 * DAY, DAY), 1);
    /* uploads: only the abort rule, by prefix */
    CHECK_EQ_INT(hd_lc_abort_due(r, "up/x", t0, t0 + DAY - 1, DAY), 0);
    CHECK_EQ_INT(hd_lc_abort_due(r, "up/x", t0, t0 + DAY, DAY), 1);
    CHECK_EQ_INT(hd_lc_abort_due(r, "tmp/x", t0, t0 + 99 * DAY, DAY), 0);
    CHECK_EQ_INT(hd_lc_expired(r, "up/x", 5, t0, NULL, t0 + 99 * DAY, DAY), 0);
    json_decref(r);

    /* ObjectSizeLessThan (strict), and which names need reading at all */
    r = rules_of(
        RULE("<ID>s</ID><Filter><ObjectSizeLessThan>100</ObjectSizeLessThan></Filter>" ON DAYS(1))
            RULE("<ID>p</ID><Prefix>a/</Prefix><Status>Disabled</Status>" DAYS(1)));
    CHECK(r != NULL);
    CHECK_EQ_INT(hd_lc_expired(r, "x", 99, t0, NULL, t0 + DAY, DAY), 1);
    CHECK_EQ_INT(hd_lc_expired(r, "x", 100, t0, NULL, t0 + DAY, DAY), 0);
    CHECK_EQ_INT(hd_lc_may_expire(r, "anything"), 1);
    json_decref(r);
    r = rules_of(RULE("<ID>p</ID><Prefix>a/</Prefix>" ON DAYS(1))
                     RULE("<ID>q</ID><Prefix>b/</Prefix><Status>Disabled</Status>" DAYS(1))
                         RULE("<ID>u</ID><Prefix>c/</Prefix>" ON
                              "<AbortIncompleteMultipartUpload><DaysAfterInitiation>1"
                              "</DaysAfterInitiation></AbortIncompleteMultipartUpload>"));
    CHECK(r != NULL);
    CHECK_EQ_INT(hd_lc_may_expire(r, "a/1"), 1);
    CHECK_EQ_INT(hd_lc_may_expire(r, "b/1"), 0); /* disabled */
    CHECK_EQ_INT(hd_lc_may_expire(r, "c/1"), 0); /* uploads only */
    CHECK_EQ_INT(hd_lc_may_expire(r, "a"), 0);
    json_decref(r);

    /* the earliest expiry and its rule, for x-amz-expiration */
    r = rules_of(RULE("<ID>late</ID><Prefix>a/</Prefix>" ON DAYS(9))
                     RULE("<ID>early</ID><Prefix>a/b</Prefix>" ON DAYS(2))
                         RULE("<ID>off</ID><Prefix>a/</Prefix><Status>Disabled</Status>" DAYS(1)));
    {
        int64_t at = 0;
        const char *id = NULL;
        CHECK_EQ_INT(hd_lc_expiry(r, "a/bc", 1, t0 + 5, NULL, DAY, &at, &id), 1);
        CHECK_EQ_STR(id, "early");
        CHECK_EQ_INT(at, t0 + 3 * DAY);
        CHECK_EQ_INT(hd_lc_expiry(r, "a/x", 1, t0, NULL, DAY, &at, &id), 1);
        CHECK_EQ_STR(id, "late");
        CHECK_EQ_INT(at, t0 + 9 * DAY);
        CHECK_EQ_INT(hd_lc_expiry(r, "z", 1, t0, NULL, DAY, &at, &id), 0);
    }
    json_decref(r);

    /* nothing enabled: nothing to do */
    r = rules_of(RULE("<Filter/><Status>Disabled</Status>" DAYS(1)));
    CHECK_EQ_INT(hd_lc_actions(r, &need_tags), 0);
    json_decref(r);
    r = rules_of(RULE(ANY "<NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays>"
                          "</NoncurrentVersionExpiration>"));
    CHECK_EQ_INT(hd_lc_actions(r, &need_tags), 0); /* no versions here */
    CHECK_EQ_INT(hd_lc_expired(r, "x", 1, 0, NULL, t0, DAY), 0);
    json_decref(r);
}

HD_SUITE(lifecycle_bprops)
{
    struct hd_bprops bp;
    char err[200], *out = NULL;

    CHECK_EQ_INT(
        hd_bprops_parse("{\"lifecycle\":[{\"id\":\"a\",\"prefix\":\"\",\"status\":\"Enabled\","
                        "\"expire_days\":1}]}",
                        &bp, err, sizeof(err)),
        0);
    CHECK(bp.has_lifecycle);
    /* the canonical JSON keeps it */
    out = hd_bprops_dump_from(
        &bp, "{\"lifecycle\":[{\"id\":\"a\",\"prefix\":\"\",\"status\":\"Enabled\","
             "\"expire_days\":1}]}");
    CHECK_EQ_STR(out, "{\"lifecycle\":[{\"expire_days\":1,\"id\":\"a\",\"prefix\":\"\",\"status\":"
                      "\"Enabled\"}]}");
    free(out);
    /* refused: malformed, unknown keys, no ID, an S3-backed bucket */
    CHECK_EQ_INT(hd_bprops_parse("{\"lifecycle\":[]}", &bp, err, sizeof(err)), HD_EBADARG);
    CHECK_EQ_INT(
        hd_bprops_parse("{\"lifecycle\":[{\"id\":\"a\",\"prefix\":\"\",\"status\":\"Enabled\"}]}",
                        &bp, err, sizeof(err)),
        HD_EBADARG);
    CHECK(strstr(err, "At least one action") != NULL);
    CHECK_EQ_INT(
        hd_bprops_parse("{\"lifecycle\":[{\"id\":\"a\",\"prefix\":\"\",\"status\":\"Enabled\","
                        "\"expire_days\":1,\"color\":1}]}",
                        &bp, err, sizeof(err)),
        HD_EBADARG);
    CHECK_EQ_INT(hd_bprops_parse(
                     "{\"lifecycle\":[{\"prefix\":\"\",\"status\":\"Enabled\",\"expire_days\":1}]}",
                     &bp, err, sizeof(err)),
                 HD_EBADARG);
    CHECK_EQ_INT(
        hd_bprops_parse("{\"lifecycle\":[{\"id\":\"a\",\"prefix\":\"\",\"status\":\"Enabled\","
                        "\"expire_date\":\"2030-13-01\"}]}",
                        &bp, err, sizeof(err)),
        HD_EBADARG);
    CHECK_EQ_INT(hd_bprops_parse("{\"lifecycle\":[{\"id\":\"a\",\"status\":\"Enabled\","
                                 "\"expire_days\":1,\"filter\":{\"prefix\":\"a\",\"size_gt\":1}}]}",
                                 &bp, err, sizeof(err)),
                 HD_EBADARG); /* two conditions without "and" */
    CHECK(strstr(err, "\"and\"") != NULL);
    /* bucket tags as S3 takes them: no "aws:" key, no control character, 128 characters */
    CHECK_EQ_INT(hd_bprops_parse("{\"tags\":{\"aws:x\":\"v\"}}", &bp, err, sizeof(err)),
                 HD_EBADARG);
    CHECK_EQ_INT(hd_bprops_parse("{\"tags\":{\"a\\u0001b\":\"v\"}}", &bp, err, sizeof(err)),
                 HD_EBADARG);
    {
        struct hd_buf t;
        size_t k;
        hd_buf_init(&t);
        hd_buf_puts(&t, "{\"tags\":{\"");
        for (k = 0; k < 129; k++)
            hd_buf_puts(&t, "k");
        hd_buf_puts(&t, "\":\"v\"}}");
        CHECK_EQ_INT(hd_bprops_parse(t.data, &bp, err, sizeof(err)), HD_EBADARG);
        hd_buf_reset(&t);
        hd_buf_puts(&t, "{\"tags\":{");
        for (k = 0; k < 51; k++)
            hd_buf_printf(&t, "%s\"k%zu\":\"v\"", k ? "," : "", k);
        hd_buf_puts(&t, "}}");
        CHECK_EQ_INT(hd_bprops_parse(t.data, &bp, err, sizeof(err)), HD_EBADARG);
        hd_buf_cleanup(&t);
    }
    CHECK_EQ_INT(hd_bprops_parse("{\"tags\":{\"\u00e9t\u00e9\":\"ok\"}}", &bp, err, sizeof(err)),
                 0);
    /* neither a prefix nor a filter; a date of another shape; too large */
    CHECK_EQ_INT(hd_bprops_parse("{\"lifecycle\":[{\"id\":\"a\",\"status\":\"Enabled\","
                                 "\"expire_days\":1}]}",
                                 &bp, err, sizeof(err)),
                 HD_EBADARG);
    CHECK(strstr(err, "prefix or a filter") != NULL);
    CHECK_EQ_INT(hd_bprops_parse("{\"lifecycle\":[{\"id\":\"a\",\"prefix\":\"\",\"status\":"
                                 "\"Enabled\",\"expire_date\":\"2027- 1- 1\"}]}",
                                 &bp, err, sizeof(err)),
                 HD_EBADARG);
    CHECK_EQ_INT(hd_bprops_parse("{\"lifecycle\":[{\"id\":\"a\",\"prefix\":\"\",\"status\":"
                                 "\"Enabled\",\"expire_date\":\"2027-+1-01\"}]}",
                                 &bp, err, sizeof(err)),
                 HD_EBADARG);
    {
        struct hd_buf big;
        size_t k;
        json_t *root;
        hd_buf_init(&big);
        hd_buf_puts(&big, "{\"lifecycle\":[");
        for (k = 0; k < 300; k++)
            hd_buf_printf(&big,
                          "%s{\"id\":\"%zu\",\"prefix\":\"%0200zu\",\"status\":\"Enabled\","
                          "\"expire_days\":1}",
                          k ? "," : "", k, k);
        hd_buf_puts(&big, "]}");
        CHECK_EQ_INT(hd_bprops_parse(big.data, &bp, err, sizeof(err)), HD_EBADARG);
        CHECK(strstr(err, "too large") != NULL);
        root = json_loads(big.data, 0, NULL);
        CHECK_EQ_INT(hd_lc_check(json_object_get(root, "lifecycle"), err, sizeof(err)), HD_EBADREQ);
        json_decref(root);
        hd_buf_cleanup(&big);
    }
    CHECK_EQ_INT(
        hd_bprops_parse("{\"upstream\":{\"endpoint\":\"http://127.0.0.1:9\"},"
                        "\"lifecycle\":[{\"id\":\"a\",\"prefix\":\"\",\"status\":\"Enabled\","
                        "\"expire_days\":1}]}",
                        &bp, err, sizeof(err)),
        HD_EBADARG);
    CHECK(strstr(err, "upstream") != NULL);
    /* a merge that sets and one that removes it */
    CHECK_EQ_INT(
        hd_bprops_merge("{\"anonymous_read\":true}",
                        "{\"lifecycle\":[{\"id\":\"a\",\"prefix\":\"\",\"status\":\"Disabled\","
                        "\"abort_mpu_days\":2}]}",
                        &out, err, sizeof(err)),
        0);
    CHECK(strstr(out, "\"abort_mpu_days\":2") != NULL && strstr(out, "anonymous_read") != NULL);
    {
        char *none = NULL;
        CHECK_EQ_INT(hd_bprops_merge(out, "{\"lifecycle\":null}", &none, err, sizeof(err)), 0);
        CHECK_EQ_STR(none, "{\"anonymous_read\":true}");
        free(none);
    }
    free(out);
}
