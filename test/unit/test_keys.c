/* Unit tests for common/keys.c's decisions about unsigned callers: what a route's
 * classification (enum hd_pub) lets through a public bucket. */
#include <string.h>

#include "common/bprops.h"
#include "common/http.h"
#include "common/httputil.h"
#include "common/keys.h"
#include "test/unit/hd_test.h"

/* ---- unsigned callers: what a route's classification lets through (common/keys.h) ---- */

static int native_pub(const char *method, const char *query)
{
    struct hd_req r;
    int pub;

    memset(&r, 0, sizeof(r));
    r.method = method;
    if (hd_query_parse(query, &r.query) < 0)
        return -1;
    pub = hd_keys_native_object_pub(&r);
    hd_query_free(&r.query);
    return pub;
}

HD_SUITE(keys_public)
{
    /* public objects open reads, public listings the listings; nothing opens what a route
     * did not name */
    CHECK_EQ_INT(hd_keys_public(HD_PUB_READ, 1, 0), 1);
    CHECK_EQ_INT(hd_keys_public(HD_PUB_LIST, 1, 0), 0);
    CHECK_EQ_INT(hd_keys_public(HD_PUB_READ, 0, 1), 0);
    CHECK_EQ_INT(hd_keys_public(HD_PUB_LIST, 0, 1), 1);
    CHECK_EQ_INT(hd_keys_public(HD_PUB_NONE, 1, 1), 0);
    CHECK_EQ_INT(hd_keys_public(HD_PUB_READ, 0, 0), 0);
    CHECK_EQ_INT(hd_keys_public(HD_PUB_LIST, 0, 0), 0);
    CHECK_EQ_INT(hd_keys_public(42, 1, 1), 0);
    /* the version and upload listings: a public-read ACL's, not a policy's s3:ListBucket */
    CHECK_EQ_INT(hd_keys_public(HD_PUB_LIST, 0, HD_PUBLIC_LIST), 1);
    CHECK_EQ_INT(hd_keys_public(HD_PUB_LIST_MORE, 0, HD_PUBLIC_LIST), 0);
    CHECK_EQ_INT(hd_keys_public(HD_PUB_LIST_MORE, 1, 0), 0);
    CHECK_EQ_INT(hd_keys_public(HD_PUB_LIST_MORE, 0, HD_PUBLIC_LIST | HD_PUBLIC_LIST_MORE), 1);
    CHECK_EQ_INT(hd_keys_public(HD_PUB_LIST, 0, HD_PUBLIC_LIST | HD_PUBLIC_LIST_MORE), 1);

    /* the native object route: GET and HEAD of the object, whatever else the query says;
     * not the multipart calls, not writes */
    CHECK_EQ_INT(native_pub("GET", ""), HD_PUB_READ);
    CHECK_EQ_INT(native_pub("HEAD", ""), HD_PUB_READ);
    CHECK_EQ_INT(native_pub("GET", "archpath=a%2Fb.jpg&provider=ais"), HD_PUB_READ);
    CHECK_EQ_INT(native_pub("GET", "uploadId=x"), HD_PUB_NONE);
    CHECK_EQ_INT(native_pub("GET", "partNumber=1"), HD_PUB_NONE);
    CHECK_EQ_INT(native_pub("PUT", ""), HD_PUB_NONE);
    CHECK_EQ_INT(native_pub("POST", ""), HD_PUB_NONE);
    CHECK_EQ_INT(native_pub("DELETE", ""), HD_PUB_NONE);
    CHECK_EQ_INT(native_pub("PATCH", ""), HD_PUB_NONE);
    CHECK_EQ_INT(native_pub("get", ""), HD_PUB_NONE);
}
