/* Unit tests for common/cors: the CORSConfiguration body (shapes, AWS's refusals, header-safe
 * values, limits), the canonical JSON and the GetBucketCors answer, rule matching (origins
 * with one '*', methods, requested headers), and the "cors" bucket property in bprops. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/bprops.h"
#include "common/buf.h"
#include "common/cors.h"
#include "common/errors.h"
#include "test/unit/hd_test.h"

/* hd_cors_parse_xml of <CORSConfiguration>rules</CORSConfiguration>: the code; *out and msg
 * as it gives them (out may be NULL: freed here). */
static int parse(const char *rules, char **out, char *msg, size_t msglen)
{
    struct hd_buf b;
    char *o = NULL, m[200];
    int rc;

    hd_buf_init(&b);
    hd_buf_printf(&b, "<CORSConfiguration>%s</CORSConfiguration>", rules);
    rc = hd_cors_parse_xml(b.data, b.len, out ? out : &o, msg ? msg : m, msg ? msglen : sizeof(m));
    hd_buf_cleanup(&b);
    free(o);
    return rc;
}

#define RULE(inner) "<CORSRule>" inner "</CORSRule>"
#define GET_ANY "<AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>"

HD_SUITE(cors_parse)
{
    char *out = NULL, msg[200];
    struct hd_buf b;
    size_t i;

    /* every element, in the canonical order whatever the body's */
    CHECK_EQ_INT(parse(RULE("<MaxAgeSeconds>30</MaxAgeSeconds><ExposeHeader>ETag</ExposeHeader>"
                            "<AllowedHeader>x-amz-*</AllowedHeader><AllowedMethod>PUT"
                            "</AllowedMethod><AllowedOrigin>https://a.example</AllowedOrigin>"
                            "<ID>r 1</ID><AllowedMethod>GET</AllowedMethod>"),
                       &out, msg, sizeof(msg)),
                 0);
    CHECK_EQ_STR(out, "[{\"expose\":[\"ETag\"],\"headers\":[\"x-amz-*\"],\"id\":\"r 1\","
                      "\"max_age\":30,\"methods\":[\"PUT\",\"GET\"],\"origins\":"
                      "[\"https://a.example\"]}]");
    free(out);
    out = NULL;
    /* the S3 namespace, whitespace, two rules */
    hd_buf_init(&b);
    hd_buf_puts(&b, "<?xml version=\"1.0\"?>\n<CORSConfiguration xmlns=\"http://s3.amazonaws.com/"
                    "doc/2006-03-01/\">\n  <CORSRule>\n    <AllowedOrigin> * </AllowedOrigin>\n"
                    "    <AllowedMethod>HEAD</AllowedMethod>\n  </CORSRule>" RULE(
                        GET_ANY) "</CORSConfiguration>");
    CHECK_EQ_INT(hd_cors_parse_xml(b.data, b.len, &out, msg, sizeof(msg)), 0);
    CHECK_EQ_STR(out, "[{\"methods\":[\"HEAD\"],\"origins\":[\"*\"]},{\"methods\":[\"GET\"],"
                      "\"origins\":[\"*\"]}]");
    hd_buf_cleanup(&b);
    free(out);
    out = NULL;

    /* shapes: MalformedXML */
    CHECK_EQ_INT(parse("", NULL, NULL, 0), HD_EMALFORMEDXML);
    CHECK_EQ_INT(parse(RULE("<AllowedMethod>GET</AllowedMethod>"), NULL, NULL, 0),
                 HD_EMALFORMEDXML);
    CHECK_EQ_INT(parse(RULE("<AllowedOrigin>*</AllowedOrigin>"), NULL, NULL, 0), HD_EMALFORMEDXML);
    CHECK_EQ_INT(parse(RULE(GET_ANY "<Other>x</Other>"), NULL, NULL, 0), HD_EMALFORMEDXML);
    CHECK_EQ_INT(parse(RULE(GET_ANY) "<Other/>", NULL, NULL, 0), HD_EMALFORMEDXML);
    CHECK_EQ_INT(parse(RULE(GET_ANY "<ID>a</ID><ID>b</ID>"), NULL, NULL, 0), HD_EMALFORMEDXML);
    CHECK_EQ_INT(parse(RULE(GET_ANY "<MaxAgeSeconds>-1</MaxAgeSeconds>"), NULL, NULL, 0),
                 HD_EMALFORMEDXML);
    CHECK_EQ_INT(parse(RULE(GET_ANY "<MaxAgeSeconds>2147483648</MaxAgeSeconds>"), NULL, NULL, 0),
                 HD_EMALFORMEDXML);
    CHECK_EQ_INT(parse(RULE(GET_ANY "<MaxAgeSeconds>1x</MaxAgeSeconds>"), NULL, NULL, 0),
                 HD_EMALFORMEDXML);
    CHECK_EQ_INT(parse(RULE("<AllowedOrigin><a/></AllowedOrigin><AllowedMethod>GET"
                            "</AllowedMethod>"),
                       NULL, NULL, 0),
                 HD_EMALFORMEDXML);
    CHECK_EQ_INT(hd_cors_parse_xml("<X/>", 4, &out, msg, sizeof(msg)), HD_EMALFORMEDXML);
    CHECK(out == NULL);

    /* AWS's InvalidRequest, with its messages */
    CHECK_EQ_INT(parse(RULE("<AllowedOrigin>*</AllowedOrigin><AllowedMethod>PATCH"
                            "</AllowedMethod>"),
                       NULL, msg, sizeof(msg)),
                 HD_EBADREQ);
    CHECK_EQ_STR(msg, "Found unsupported HTTP method in CORS config. Unsupported method is PATCH");
    CHECK_EQ_INT(parse(RULE("<AllowedOrigin>*</AllowedOrigin><AllowedMethod>get"
                            "</AllowedMethod>"),
                       NULL, msg, sizeof(msg)),
                 HD_EBADREQ);
    CHECK_EQ_INT(parse(RULE("<AllowedOrigin>*.*</AllowedOrigin><AllowedMethod>GET"
                            "</AllowedMethod>"),
                       NULL, msg, sizeof(msg)),
                 HD_EBADREQ);
    CHECK_EQ_STR(msg, "AllowedOrigin \"*.*\" can not have more than one wildcard.");
    CHECK_EQ_INT(parse(RULE(GET_ANY "<AllowedHeader>**</AllowedHeader>"), NULL, msg, sizeof(msg)),
                 HD_EBADREQ);
    CHECK_EQ_STR(msg, "AllowedHeader \"**\" can not have more than one wildcard.");
    /* nothing that could split or fold a response header */
    CHECK_EQ_INT(parse(RULE("<AllowedOrigin>a&#xD;&#xA;b</AllowedOrigin><AllowedMethod>GET"
                            "</AllowedMethod>"),
                       NULL, msg, sizeof(msg)),
                 HD_EBADREQ);
    CHECK_EQ_INT(parse(RULE(GET_ANY "<ExposeHeader>a, b</ExposeHeader>"), NULL, msg, sizeof(msg)),
                 HD_EBADREQ);
    CHECK_EQ_INT(
        parse(RULE(GET_ANY "<AllowedHeader>\xc3\xa9</AllowedHeader>"), NULL, msg, sizeof(msg)),
        HD_EBADREQ);
    CHECK_EQ_INT(parse(RULE("<AllowedOrigin></AllowedOrigin><AllowedMethod>GET</AllowedMethod>"),
                       NULL, msg, sizeof(msg)),
                 HD_EBADREQ);
    CHECK_EQ_INT(parse(RULE(GET_ANY "<ID>tab\there</ID>"), NULL, msg, sizeof(msg)), HD_EBADREQ);

    /* at most 100 rules */
    hd_buf_init(&b);
    for (i = 0; i < HD_CORS_RULES_MAX; i++)
        hd_buf_puts(&b, RULE(GET_ANY));
    CHECK_EQ_INT(parse(b.data, NULL, NULL, 0), 0);
    hd_buf_puts(&b, RULE(GET_ANY));
    CHECK_EQ_INT(parse(b.data, NULL, msg, sizeof(msg)), HD_EBADREQ);
    hd_buf_cleanup(&b);
    /* and at most HD_CORS_JSON_MAX of them */
    hd_buf_init(&b);
    hd_buf_puts(&b, "<CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>");
    for (i = 0; i < 80; i++)
        hd_buf_printf(&b, "<ExposeHeader>x-amz-meta-%0900zu</ExposeHeader>", i);
    hd_buf_puts(&b, "</CORSRule>");
    CHECK_EQ_INT(parse(b.data, NULL, msg, sizeof(msg)), HD_EBADREQ);
    CHECK_EQ_STR(msg, "The CORS configuration is too large.");
    hd_buf_cleanup(&b);
}

HD_SUITE(cors_xml)
{
    char *out = NULL, *again = NULL, msg[200];
    json_t *rules;
    struct hd_buf b;

    CHECK_EQ_INT(parse(RULE("<ID>a&amp;b</ID><AllowedOrigin>http://x:*</AllowedOrigin>"
                            "<AllowedMethod>GET</AllowedMethod><AllowedMethod>DELETE"
                            "</AllowedMethod><AllowedHeader>*</AllowedHeader><ExposeHeader>ETag"
                            "</ExposeHeader><MaxAgeSeconds>0</MaxAgeSeconds>") RULE(GET_ANY),
                       &out, msg, sizeof(msg)),
                 0);
    rules = json_loads(out, 0, NULL);
    CHECK(rules != NULL);
    hd_buf_init(&b);
    hd_cors_xml(&b, rules);
    CHECK(strstr(b.data, "<CORSConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                         "<CORSRule><ID>a&amp;b</ID><AllowedHeader>*</AllowedHeader>"
                         "<AllowedMethod>GET</AllowedMethod><AllowedMethod>DELETE</AllowedMethod>"
                         "<AllowedOrigin>http://x:*</AllowedOrigin><ExposeHeader>ETag"
                         "</ExposeHeader><MaxAgeSeconds>0</MaxAgeSeconds></CORSRule><CORSRule>"
                         "<AllowedMethod>GET</AllowedMethod><AllowedOrigin>*</AllowedOrigin>"
                         "</CORSRule></CORSConfiguration>") != NULL);
    /* the answer is a body PUT takes back, to the same rules */
    CHECK_EQ_INT(hd_cors_parse_xml(b.data, b.len, &again, msg, sizeof(msg)), 0);
    CHECK_EQ_STR(again, out);
    hd_buf_cleanup(&b);
    json_decref(rules);
    free(out);
    free(again);
}

static int find(const char *json, const char *origin, const char *method, const char *hdrs)
{
    json_t *rules = json_loads(json, 0, NULL);
    int i = hd_cors_find(rules, origin, method, hdrs);

    json_decref(rules);
    return i;
}

HD_SUITE(cors_find)
{
    const char *r = "[{\"origins\":[\"*suffix\"],\"methods\":[\"GET\"]},"
                    "{\"origins\":[\"start*end\"],\"methods\":[\"GET\"]},"
                    "{\"origins\":[\"prefix*\"],\"methods\":[\"GET\"]},"
                    "{\"origins\":[\"*.put\"],\"methods\":[\"PUT\"]},"
                    "{\"origins\":[\"https://app\"],\"methods\":[\"PUT\",\"DELETE\"],"
                    "\"headers\":[\"content-type\",\"x-amz-*\"]},"
                    "{\"origins\":[\"*\"],\"methods\":[\"HEAD\"],\"headers\":[\"*\"]}]";

    /* ceph s3-tests' origins */
    CHECK_EQ_INT(find(r, "foo.suffix", "GET", NULL), 0);
    CHECK_EQ_INT(find(r, "suffix", "GET", NULL), 0);
    CHECK_EQ_INT(find(r, "foo.bar", "GET", NULL), -1);
    CHECK_EQ_INT(find(r, "foo.suffix.get", "GET", NULL), -1);
    CHECK_EQ_INT(find(r, "startend", "GET", NULL), 1);
    CHECK_EQ_INT(find(r, "start12end", "GET", NULL), 1);
    CHECK_EQ_INT(find(r, "0start12end", "GET", NULL), -1);
    CHECK_EQ_INT(find(r, "startendend", "GET", NULL), 1);
    CHECK_EQ_INT(find(r, "starten", "GET", NULL), -1);
    CHECK_EQ_INT(find(r, "prefix", "GET", NULL), 2);
    CHECK_EQ_INT(find(r, "bla.prefix", "GET", NULL), -1);
    CHECK_EQ_INT(find(r, "foo.put", "GET", NULL), -1);
    CHECK_EQ_INT(find(r, "foo.put", "PUT", NULL), 3);
    /* origins are exact (case too); methods are exact */
    CHECK_EQ_INT(find(r, "FOO.SUFFIX", "GET", NULL), -1);
    CHECK_EQ_INT(find(r, "foo.suffix", "get", NULL), -1);
    /* requested headers: every one must be allowed, case-insensitively; lists as browsers
     * send them */
    CHECK_EQ_INT(find(r, "https://app", "PUT", ""), 4);
    CHECK_EQ_INT(find(r, "https://app", "PUT", "Content-Type"), 4);
    CHECK_EQ_INT(find(r, "https://app", "PUT", "content-type,x-amz-date, X-Amz-Meta-A ,"), 4);
    CHECK_EQ_INT(find(r, "https://app", "PUT", "content-type, authorization"), -1);
    CHECK_EQ_INT(find(r, "https://app", "PUT", "x-amz"), -1);
    CHECK_EQ_INT(find(r, "https://app", "DELETE", NULL), 4);
    /* the catch-all, in order after the others */
    CHECK_EQ_INT(find(r, "https://app", "HEAD", "anything, at-all"), 5);
    CHECK_EQ_INT(find(r, "", "HEAD", NULL), 5);
    CHECK_EQ_INT(find(r, "x", "POST", NULL), -1);
    CHECK_EQ_INT(find(r, NULL, "GET", NULL), -1);
    CHECK_EQ_INT(find("[]", "x", "GET", NULL), -1);
    CHECK_EQ_INT(hd_cors_find(NULL, "x", "GET", NULL), -1);
}

HD_SUITE(cors_bprops)
{
    const char *rules = "[{\"origins\":[\"*\"],\"methods\":[\"GET\"]}]";
    struct hd_bprops bp;
    char *out = NULL, *out2 = NULL, err[200], patch[200];

    /* "cors" is a property: merged with the others, kept by the canonical form */
    snprintf(patch, sizeof(patch), "{\"cors\":%s}", rules);
    CHECK_EQ_INT(hd_bprops_merge("{\"anonymous_read\":true}", patch, &out, err, sizeof(err)), 0);
    CHECK_EQ_STR(
        out, "{\"anonymous_read\":true,\"cors\":[{\"methods\":[\"GET\"],\"origins\":[\"*\"]}]}");
    CHECK_EQ_INT(hd_bprops_parse(out, &bp, err, sizeof(err)), 0);
    CHECK(bp.has_cors && bp.anonymous_read);
    out2 = hd_bprops_dump_from(&bp, out);
    CHECK_EQ_STR(out2, out);
    free(out2);
    out2 = hd_bprops_dump(&bp); /* without its source: the rules are not in the struct */
    CHECK_EQ_STR(out2, "{\"anonymous_read\":true}");
    free(out2);
    /* another key's change keeps the rules; null removes them */
    CHECK_EQ_INT(hd_bprops_merge(out, "{\"anonymous_read\":false}", &out2, err, sizeof(err)), 0);
    CHECK(strstr(out2, "\"cors\":[") != NULL);
    free(out2);
    CHECK_EQ_INT(hd_bprops_merge(out, "{\"cors\":null}", &out2, err, sizeof(err)), 0);
    CHECK_EQ_STR(out2, "{\"anonymous_read\":true}");
    free(out2);
    free(out);
    /* "tags" (PutBucketTagging) is carried the same way, beside "cors" */
    CHECK_EQ_INT(hd_bprops_merge("{\"cors\":[{\"origins\":[\"*\"],\"methods\":[\"GET\"]}]}",
                                 "{\"tags\":{\"b\":\"2\",\"a\":\"\"}}", &out, err, sizeof(err)),
                 0);
    CHECK_EQ_STR(out, "{\"cors\":[{\"methods\":[\"GET\"],\"origins\":[\"*\"]}],\"tags\":{\"a\":"
                      "\"\",\"b\":\"2\"}}");
    CHECK_EQ_INT(hd_bprops_parse(out, &bp, err, sizeof(err)), 0);
    CHECK(bp.has_cors && bp.has_tags);
    out2 = hd_bprops_dump_from(&bp, out);
    CHECK_EQ_STR(out2, out);
    free(out2);
    free(out);
    CHECK_EQ_INT(hd_bprops_parse("{\"anonymous_list\":\"yes\"}", &bp, err, sizeof(err)),
                 HD_EBADARG);
    CHECK_EQ_INT(hd_bprops_parse("{\"anonymous_list\":true}", &bp, err, sizeof(err)), 0);
    CHECK(bp.anonymous_list && !bp.anonymous_read);
    CHECK_EQ_INT(hd_bprops_parse("{\"tags\":{}}", &bp, err, sizeof(err)), HD_EBADARG);
    CHECK_EQ_INT(hd_bprops_parse("{\"tags\":{\"\":\"v\"}}", &bp, err, sizeof(err)), HD_EBADARG);
    CHECK_EQ_INT(hd_bprops_parse("{\"tags\":{\"k\":1}}", &bp, err, sizeof(err)), HD_EBADARG);
    CHECK_EQ_INT(hd_bprops_parse("{\"tags\":[\"k\"]}", &bp, err, sizeof(err)), HD_EBADARG);
    /* what PUT ?cors would refuse is refused as a property too */
    CHECK_EQ_INT(hd_bprops_parse("{\"cors\":[]}", &bp, err, sizeof(err)), HD_EBADARG);
    CHECK_EQ_INT(hd_bprops_parse("{\"cors\":{}}", &bp, err, sizeof(err)), HD_EBADARG);
    CHECK_EQ_INT(hd_bprops_parse("{\"cors\":[{\"origins\":[\"*\"]}]}", &bp, err, sizeof(err)),
                 HD_EBADARG);
    CHECK_EQ_INT(hd_bprops_parse("{\"cors\":[{\"origins\":[\"*\"],\"methods\":[\"GET\"],"
                                 "\"x\":1}]}",
                                 &bp, err, sizeof(err)),
                 HD_EBADARG);
    CHECK_EQ_INT(hd_bprops_parse("{\"cors\":[{\"origins\":[\"a\\r\\nb\"],\"methods\":[\"GET\"]}]}",
                                 &bp, err, sizeof(err)),
                 HD_EBADARG);
    CHECK_EQ_INT(hd_bprops_parse("{\"cors\":[{\"origins\":[\"*\"],\"methods\":[\"GET\"],"
                                 "\"max_age\":-1}]}",
                                 &bp, err, sizeof(err)),
                 HD_EBADARG);
}
