/* Unit tests for common/mpulist: the merge order of ListMultipartUploads entries from several
 * sources, the XML page (truncation, markers, url encoding), and the JSON exchanged between
 * targets and proxies (malformed input refused). */
#include <string.h>

#include <jansson.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/mpulist.h"
#include "test/unit/hd_test.h"

static void push(struct hd_mpul *l, const char *key, const char *id, long long created)
{
    CHECK_EQ_INT(hd_mpul_push(l, key, strlen(key), id, created, id ? "CRC32" : NULL, 0), 0);
}

HD_SUITE(mpulist_merge)
{
    struct hd_mpul l = {0};

    /* two "targets" each sent their own sorted part, with a shared common prefix */
    push(&l, "b", "u2", 20);
    push(&l, "dir/", NULL, 0);
    push(&l, "a", "u9", 5);
    push(&l, "b", "u1", 10);
    push(&l, "dir/", NULL, 0);
    push(&l, "b", "u0", 10);
    hd_mpul_finish(&l);
    CHECK_EQ_INT(l.n, 5);
    CHECK_EQ_STR(l.v[0].key, "a");
    CHECK_EQ_STR(l.v[1].id, "u0"); /* same key and time: by id */
    CHECK_EQ_STR(l.v[2].id, "u1");
    CHECK_EQ_STR(l.v[3].id, "u2"); /* same key: by initiation time */
    CHECK_EQ_STR(l.v[4].key, "dir/");
    CHECK(l.v[4].id == NULL);
    hd_mpul_truncate(&l, 2);
    CHECK_EQ_INT(l.n, 2);
    hd_mpul_free(&l);
    CHECK(l.v == NULL && l.n == 0);
}

HD_SUITE(mpulist_xml)
{
    struct hd_mpul l = {0};
    struct hd_mpul_opts o;
    struct hd_buf b;

    memset(&o, 0, sizeof(o));
    o.max = 2;
    o.url = 1;
    o.delim = "/";
    push(&l, "a b", "u1", 1000);
    push(&l, "c&d", "u2", 2000);
    push(&l, "e", "u3", 3000); /* the extra entry: truncated */
    hd_buf_init(&b);
    CHECK_EQ_INT(hd_mpul_xml(&b, "bk", &o, &l), 0);
    CHECK(strstr(b.data, "<Key>a%20b</Key>") != NULL);
    CHECK(strstr(b.data, "<Key>c%26d</Key>") != NULL);
    CHECK(strstr(b.data, "<Key>e</Key>") == NULL);
    CHECK(strstr(b.data, "<IsTruncated>true</IsTruncated>") != NULL);
    CHECK(strstr(b.data, "<NextKeyMarker>c%26d</NextKeyMarker>") != NULL);
    CHECK(strstr(b.data, "<NextUploadIdMarker>u2</NextUploadIdMarker>") != NULL);
    CHECK(strstr(b.data, "<ChecksumAlgorithm>CRC32</ChecksumAlgorithm>") != NULL);
    CHECK(strstr(b.data, "<EncodingType>url</EncodingType>") != NULL);
    hd_buf_cleanup(&b);
    o.url = 0;
    o.max = 5;
    hd_buf_init(&b);
    CHECK_EQ_INT(hd_mpul_xml(&b, "bk", &o, &l), 0);
    CHECK(strstr(b.data, "<Key>c&amp;d</Key>") != NULL);
    CHECK(strstr(b.data, "<IsTruncated>false</IsTruncated>") != NULL);
    CHECK(strstr(b.data, "NextKeyMarker") == NULL);
    hd_buf_cleanup(&b);
    hd_mpul_free(&l);
}

HD_SUITE(mpulist_json)
{
    static const char *const bad[] = {
        "{}",
        "[]",
        "{\"entries\": 3}",
        "{\"entries\": [{\"key\": 1, \"created\": 1}]}",
        "{\"entries\": [{\"key\": \"k\"}]}",
        "{\"entries\": [{\"key\": \"k\", \"created\": 1, "
        "\"id\": 7}]}",
        "{\"entries\": [{\"key\": \"k\", \"created\": 1, \"ck\": []}]}"};
    struct hd_mpul l = {0}, back = {0};
    json_t *j;
    size_t i;

    push(&l, "k1", "id1", 7);
    push(&l, "p/", NULL, 0);
    l.v[0].full = 1;
    j = hd_mpul_to_json(&l);
    CHECK(j != NULL);
    CHECK_EQ_INT(hd_mpul_from_json(j, &back), 0);
    json_decref(j);
    CHECK_EQ_INT(back.n, 2);
    CHECK_EQ_STR(back.v[0].key, "k1");
    CHECK_EQ_STR(back.v[0].id, "id1");
    CHECK_EQ_INT(back.v[0].created, 7);
    CHECK_EQ_STR(back.v[0].ck, "CRC32");
    CHECK_EQ_INT(back.v[0].full, 1);
    CHECK(back.v[1].id == NULL && back.v[1].ck[0] == '\0');
    hd_mpul_free(&back);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *x = json_loads(bad[i], 0, NULL);
        CHECK(x != NULL);
        CHECK_EQ_INT(hd_mpul_from_json(x, &back), HD_EBADARG);
        json_decref(x);
        hd_mpul_free(&back);
    }
    hd_mpul_free(&l);
}
