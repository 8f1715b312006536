/* Unit tests for common/bprops: validation, canonical form, merging a PATCH. */
#include <stdlib.h>
#include <string.h>

#include "common/bprops.h"
#include "common/errors.h"
#include "test/unit/hd_test.h"

HD_SUITE(bprops)
{
    struct hd_bprops p;
    char err[256], *s = NULL;

    CHECK_EQ_INT(hd_bprops_parse(NULL, &p, err, sizeof(err)), 0);
    CHECK(!p.anonymous_read && !p.has_upstream);
    CHECK_EQ_INT(hd_bprops_parse("{\"anonymous_read\":true,\"validate_warm_get\":true,"
                                 "\"upstream\":{\"endpoint\":\"http://10.0.0.1:9000/\","
                                 "\"profile\":\"p-1\",\"style\":\"virtual\"}}",
                                 &p, err, sizeof(err)),
                 0);
    CHECK(p.anonymous_read && p.validate_warm_get && p.has_upstream && p.up.vhost);
    CHECK_EQ_STR(p.up.endpoint, "http://10.0.0.1:9000"); /* trailing '/' dropped */
    CHECK_EQ_STR(p.up.region, "us-east-1");
    CHECK_EQ_STR(hd_bprops_remote_bucket(&p, "mine"), "mine");
    s = hd_bprops_dump(&p);
    CHECK_EQ_STR(s, "{\"anonymous_read\":true,\"upstream\":{\"endpoint\":\"http://10.0.0.1:"
                    "9000\",\"profile\":\"p-1\",\"region\":\"us-east-1\",\"style\":\"virtual\"},"
                    "\"validate_warm_get\":true}");
    free(s);

    CHECK_EQ_INT(hd_bprops_parse("{\"upstream\":{\"endpoint\":\"https://[::1]:443\","
                                 "\"bucket\":\"other-name\"}}",
                                 &p, err, sizeof(err)),
                 0);
    CHECK_EQ_STR(hd_bprops_remote_bucket(&p, "mine"), "other-name");

    /* write_policy: "back" on S3-backed buckets only */
    CHECK_EQ_INT(hd_bprops_parse("{\"write_policy\":\"back\",\"upstream\":{\"endpoint\":"
                                 "\"http://h\"}}",
                                 &p, err, sizeof(err)),
                 0);
    CHECK(p.write_back);
    s = hd_bprops_dump(&p);
    CHECK(s && strstr(s, "\"write_policy\":\"back\""));
    free(s);
    CHECK_EQ_INT(hd_bprops_parse("{\"write_policy\":\"through\"}", &p, err, sizeof(err)), 0);
    CHECK(!p.write_back);
    CHECK_EQ_INT(hd_bprops_parse("{\"write_policy\":\"later\"}", &p, err, sizeof(err)), HD_EBADARG);

    /* refused, with a reason */
    CHECK_EQ_INT(hd_bprops_parse("{\"bogus\":1}", &p, err, sizeof(err)), HD_EBADARG);
    CHECK(strstr(err, "bogus"));
    CHECK_EQ_INT(hd_bprops_parse("[]", &p, err, sizeof(err)), HD_EBADARG);
    CHECK_EQ_INT(hd_bprops_parse("{\"anonymous_read\":1}", &p, err, sizeof(err)), HD_EBADARG);
    CHECK_EQ_INT(hd_bprops_parse("{\"upstream\":{}}", &p, err, sizeof(err)), HD_EBADARG);
    CHECK(strstr(err, "endpoint"));
    CHECK_EQ_INT(hd_bprops_parse("{\"upstream\":{\"endpoint\":\"ftp://x\"}}", &p, err, sizeof(err)),
                 HD_EBADARG);
    CHECK_EQ_INT(
        hd_bprops_parse("{\"upstream\":{\"endpoint\":\"http://h/path\"}}", &p, err, sizeof(err)),
        HD_EBADARG);
    CHECK_EQ_INT(
        hd_bprops_parse("{\"upstream\":{\"endpoint\":\"http://h:99999\"}}", &p, err, sizeof(err)),
        HD_EBADARG);
    CHECK_EQ_INT(hd_bprops_parse("{\"upstream\":{\"endpoint\":\"http://h\",\"style\":\"x\"}}", &p,
                                 err, sizeof(err)),
                 HD_EBADARG);
    CHECK_EQ_INT(hd_bprops_parse("{\"upstream\":{\"endpoint\":\"http://h\",\"profile\":\"a b\""
                                 "}}",
                                 &p, err, sizeof(err)),
                 HD_EBADARG);
    CHECK_EQ_INT(
        hd_bprops_parse("{\"anonymous_read\":true,\"anonymous_read\":false}", &p, err, sizeof(err)),
        HD_EBADARG); /* duplicate keys */

    /* merging a patch keeps what it does not name; null removes */
    CHECK_EQ_INT(hd_bprops_merge("{\"upstream\":{\"endpoint\":\"http://h\"}}",
                                 "{\"validate_warm_get\":true}", &s, err, sizeof(err)),
                 0);
    CHECK_EQ_STR(s, "{\"upstream\":{\"endpoint\":\"http://h\",\"region\":\"us-east-1\","
                    "\"style\":\"path\"},\"validate_warm_get\":true}");
    free(s);
    CHECK_EQ_INT(hd_bprops_merge("{\"anonymous_read\":true}", "{\"anonymous_read\":null}", &s, err,
                                 sizeof(err)),
                 0);
    CHECK_EQ_STR(s, "{}");
    free(s);
    s = NULL;
    CHECK_EQ_INT(hd_bprops_merge(NULL, "{\"validate_warm_get\":3}", &s, err, sizeof(err)),
                 HD_EBADARG);
    CHECK(s == NULL);

    /* validate_cold_get: true by default, so only false is kept */
    CHECK_EQ_INT(hd_bprops_parse("{}", &p, err, sizeof(err)), 0);
    CHECK(!p.cold_get_unchecked);
    CHECK_EQ_INT(hd_bprops_merge(NULL, "{\"validate_cold_get\":false}", &s, err, sizeof(err)), 0);
    CHECK_EQ_STR(s, "{\"validate_cold_get\":false}");
    CHECK_EQ_INT(hd_bprops_parse(s, &p, err, sizeof(err)), 0);
    CHECK(p.cold_get_unchecked);
    free(s);
    CHECK_EQ_INT(hd_bprops_merge(NULL, "{\"validate_cold_get\":true}", &s, err, sizeof(err)), 0);
    CHECK_EQ_STR(s, "{}");
    free(s);
    s = NULL;
    CHECK_EQ_INT(hd_bprops_merge(NULL, "{\"validate_cold_get\":\"no\"}", &s, err, sizeof(err)),
                 HD_EBADARG);
    CHECK(s == NULL);
}
