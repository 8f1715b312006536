/* Unit tests for target/object: an object's identity between nodes (X-Hoard-Obj-Meta) keeps
 * its stored headers and part sizes; storage classes; the stored-headers JSON with another
 * class; conditional writes against the current object. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/errors.h"
#include "target/object/object.h"
#include "test/unit/hd_test.h"

HD_SUITE(object_identity)
{
    struct hd_obj_meta m;
    struct hd_put_attrs a;
    json_t *hold = NULL;
    char *x;

    memset(&m, 0, sizeof(m));
    m.size = 7;
    m.mtime_ms = 1700000000123;
    snprintf(m.etag, sizeof(m.etag), "%s", "0123456789abcdef0123456789abcdef-2");
    snprintf(m.ck_type, sizeof(m.ck_type), "%s", "CRC32");
    snprintf(m.ck_val, sizeof(m.ck_val), "%s", "AAAAAA==-2");
    m.ctype = "text/plain";
    m.meta = "{\"k\":\"\"}";
    m.hdrs = "{\"cache-control\":\"no-cache\",\"x-amz-storage-class\":\"GLACIER\"}";
    m.parts = "[[5,1],[2,1]]";
    x = hd_obj_meta_json(&m);
    CHECK(x != NULL);
    CHECK_EQ_INT(hd_obj_meta_attrs(x, &a, &hold), 0);
    CHECK_EQ_STR(a.etag, m.etag);
    CHECK_EQ_INT(a.mtime_ms, m.mtime_ms);
    CHECK_EQ_STR(a.ck_val, m.ck_val);
    CHECK_EQ_STR(a.ctype, "text/plain");
    CHECK_EQ_STR(a.meta ? a.meta : "", "{\"k\":\"\"}");
    CHECK_EQ_STR(a.hdrs ? a.hdrs : "", m.hdrs);
    CHECK_EQ_STR(a.parts ? a.parts : "", "[[5,1],[2,1]]");
    CHECK_EQ_INT(a.keep_newer, 1);
    json_decref(hold);
    free(x);
    /* thousands of distinct part sizes stay home: the header must fit a node's limit */
    {
        char *big = malloc(HD_OBJ_PARTS_MAX + 64);
        size_t n = 0;
        n += (size_t)snprintf(big, HD_OBJ_PARTS_MAX + 64, "[");
        while (n < HD_OBJ_PARTS_MAX)
            n += (size_t)snprintf(big + n, HD_OBJ_PARTS_MAX + 64 - n, "[%zu,1],", n);
        big[n - 1] = ']';
        m.parts = big;
        x = hd_obj_meta_json(&m);
        CHECK(x != NULL && strstr(x, "\"parts\"") == NULL && strlen(x) < 1024);
        free(x);
        free(big);
    }
    /* from a node that does not send them yet */
    CHECK_EQ_INT(hd_obj_meta_attrs("{\"etag\":\"e\",\"mtime_ms\":1}", &a, &hold), 0);
    CHECK(a.hdrs == NULL && a.parts == NULL && a.meta == NULL);
    json_decref(hold);
    CHECK_EQ_INT(hd_obj_meta_attrs("{\"etag\":1}", &a, &hold), HD_EBADHEADER);
}

/* Tags live in hdrs (under "tags"): they travel in the identity, survive a change of storage
 * class, are replaced or removed alone, and are read back in canonical form. */
HD_SUITE(object_tags)
{
    struct hd_obj_meta m;
    struct hd_put_attrs a;
    json_t *hold = NULL;
    char *x, *h = NULL, *t = NULL;

    memset(&m, 0, sizeof(m));
    snprintf(m.etag, sizeof(m.etag), "%s", "0123456789abcdef0123456789abcdef");
    m.hdrs = "{\"cache-control\":\"no-cache\",\"tags\":{\"b\":\"2\",\"a\":\"\"}}";
    x = hd_obj_meta_json(&m);
    CHECK(x != NULL);
    CHECK_EQ_INT(hd_obj_meta_attrs(x, &a, &hold), 0);
    CHECK_EQ_INT(hd_hdrs_tags(a.hdrs, &t), 0);
    CHECK_EQ_STR(t, "{\"a\":\"\",\"b\":\"2\"}");
    free(t);
    json_decref(hold);
    free(x);
    /* another storage class keeps the tags */
    CHECK_EQ_INT(hd_hdrs_with_class(m.hdrs, "GLACIER", &h), 0);
    CHECK_EQ_INT(hd_hdrs_tags(h, &t), 0);
    CHECK_EQ_STR(t, "{\"a\":\"\",\"b\":\"2\"}");
    free(t);
    free(h);
    /* replaced: the other headers stay */
    CHECK_EQ_INT(hd_hdrs_with_tags(m.hdrs, "{\"z\":\"1\"}", &h), 0);
    CHECK_EQ_STR(h, "{\"cache-control\":\"no-cache\",\"tags\":{\"z\":\"1\"}}");
    free(h);
    /* removed; nothing left is NULL */
    CHECK_EQ_INT(hd_hdrs_with_tags(m.hdrs, NULL, &h), 0);
    CHECK_EQ_STR(h, "{\"cache-control\":\"no-cache\"}");
    free(h);
    CHECK_EQ_INT(hd_hdrs_with_tags("{\"tags\":{\"a\":\"1\"}}", NULL, &h), 0);
    CHECK(h == NULL);
    CHECK_EQ_INT(hd_hdrs_with_tags(NULL, "{\"a\":\"1\"}", &h), 0);
    CHECK_EQ_STR(h, "{\"tags\":{\"a\":\"1\"}}");
    free(h);
    CHECK_EQ_INT(hd_hdrs_with_tags(NULL, "[1]", &h), HD_EINTERNAL);
    CHECK(h == NULL);
    /* none */
    CHECK_EQ_INT(hd_hdrs_tags(NULL, &t), 0);
    CHECK(t == NULL);
    CHECK_EQ_INT(hd_hdrs_tags("{\"tags\":{}}", &t), 0);
    CHECK(t == NULL);
}

HD_SUITE(object_storage_class)
{
    static const char *const ok[] = {
        "STANDARD",        "REDUCED_REDUNDANCY", "STANDARD_IA", "ONEZONE_IA", "INTELLIGENT_TIERING",
        "GLACIER",         "DEEP_ARCHIVE",       "OUTPOSTS",    "GLACIER_IR", "SNOW",
        "EXPRESS_ONEZONE", "FSX_OPENZFS",        "FSX_ONTAP"};
    char *out, cls[24];

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        CHECK_EQ_INT(hd_storage_class_check(ok[i]), 0);
    CHECK_EQ_INT(hd_storage_class_check("standard"), HD_ESTORAGECLASS);
    CHECK_EQ_INT(hd_storage_class_check(""), HD_ESTORAGECLASS);
    CHECK_EQ_INT(hd_storage_class_check(NULL), HD_ESTORAGECLASS);
    /* a copy keeps the headers and takes the request's class; STANDARD is not stored */
    CHECK_EQ_INT(hd_hdrs_with_class("{\"expires\":\"x\",\"x-amz-storage-class\":\"GLACIER\"}",
                                    "ONEZONE_IA", &out),
                 0);
    CHECK_EQ_STR(out, "{\"expires\":\"x\",\"x-amz-storage-class\":\"ONEZONE_IA\"}");
    hd_hdrs_class(out, cls, sizeof(cls));
    CHECK_EQ_STR(cls, "ONEZONE_IA");
    free(out);
    CHECK_EQ_INT(hd_hdrs_with_class("{\"x-amz-storage-class\":\"GLACIER\"}", "STANDARD", &out), 0);
    CHECK(out == NULL);
    CHECK_EQ_INT(hd_hdrs_with_class(NULL, NULL, &out), 0);
    CHECK(out == NULL);
    hd_hdrs_class(NULL, cls, sizeof(cls));
    CHECK_EQ_STR(cls, "STANDARD");
}

HD_SUITE(object_write_conditions)
{
    struct hd_obj_meta m;
    struct hd_wcond w;
    const char *cond;

    memset(&m, 0, sizeof(m));
    snprintf(m.etag, sizeof(m.etag), "%s", "abc");
    w = (struct hd_wcond){NULL, 1};
    CHECK_EQ_INT(hd_wcond_check(&w, NULL, &cond), 0);
    CHECK_EQ_INT(hd_wcond_check(&w, &m, &cond), HD_EPRECONDITION);
    CHECK_EQ_STR(cond, "If-None-Match");
    w = (struct hd_wcond){"\"abc\"", 0};
    CHECK_EQ_INT(hd_wcond_check(&w, &m, &cond), 0);
    CHECK_EQ_INT(hd_wcond_check(&w, NULL, &cond), HD_ENOSUCHKEY);
    w = (struct hd_wcond){"abd", 0};
    CHECK_EQ_INT(hd_wcond_check(&w, &m, &cond), HD_EPRECONDITION);
    CHECK_EQ_STR(cond, "If-Match");
    w = (struct hd_wcond){"*", 0};
    CHECK_EQ_INT(hd_wcond_check(&w, &m, &cond), 0);
    CHECK_EQ_INT(hd_wcond_check(&w, NULL, &cond), HD_ENOSUCHKEY);
}
