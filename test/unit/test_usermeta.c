/* Unit tests for common/usermeta: an edit of an object's user metadata (AIStore's
 * set_custom_props) merged into what the object has or replacing it, names lowercased, and
 * the limits a PUT's x-amz-meta-* headers have (HTTP token names, no control characters in
 * values, 2 KiB in all). */
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/usermeta.h"
#include "test/unit/hd_test.h"

/* hd_usermeta_merge of old and the JSON text set; *out as it gives it. */
static int merge(const char *old, const char *set, int replace, char **out)
{
    json_t *j = json_loads(set, 0, NULL);
    int rc = hd_usermeta_merge(old, j, replace, out);

    json_decref(j);
    return rc;
}

HD_SUITE(usermeta_merge)
{
    char *out = NULL;

    CHECK_EQ_INT(merge(NULL, "{\"Color\":\"blue\"}", 0, &out), 0);
    CHECK_EQ_STR(out, "{\"color\":\"blue\"}");
    free(out);
    /* a name given again takes the new value; the others stay */
    CHECK_EQ_INT(
        merge("{\"color\":\"blue\",\"size\":\"L\"}", "{\"COLOR\":\"red\",\"new\":\"\"}", 0, &out),
        0);
    CHECK_EQ_STR(out, "{\"color\":\"red\",\"size\":\"L\",\"new\":\"\"}");
    free(out);
    /* replace: only the new entries */
    CHECK_EQ_INT(merge("{\"color\":\"blue\",\"size\":\"L\"}", "{\"k\":\"v\"}", 1, &out), 0);
    CHECK_EQ_STR(out, "{\"k\":\"v\"}");
    free(out);
    /* replace with nothing: none left; merge of nothing: as it was */
    out = (char *)"x";
    CHECK_EQ_INT(merge("{\"color\":\"blue\"}", "{}", 1, &out), 0);
    CHECK(out == NULL);
    CHECK_EQ_INT(merge("{\"color\":\"blue\"}", "{}", 0, &out), 0);
    CHECK_EQ_STR(out, "{\"color\":\"blue\"}");
    free(out);
    /* a stored value that does not parse counts as none */
    CHECK_EQ_INT(merge("not json", "{\"a\":\"1\"}", 0, &out), 0);
    CHECK_EQ_STR(out, "{\"a\":\"1\"}");
    free(out);
    /* UTF-8 values are kept */
    CHECK_EQ_INT(merge(NULL, "{\"a\":\"\\u00e9\\u6587\"}", 0, &out), 0);
    CHECK_EQ_STR(out, "{\"a\":\"\\u00E9\\u6587\"}"); /* JSON_ENSURE_ASCII */
    free(out);
}

HD_SUITE(usermeta_refused)
{
    char *out = (char *)"x";
    char big[HD_USERMETA_MAX + 64], name[HD_USERMETA_NAME_MAX + 2];

    /* not an object of strings */
    CHECK_EQ_INT(hd_usermeta_merge(NULL, NULL, 0, &out), HD_EBADARG);
    CHECK(out == NULL);
    CHECK_EQ_INT(merge(NULL, "[\"a\"]", 0, &out), HD_EBADARG);
    CHECK_EQ_INT(merge(NULL, "{\"a\":1}", 0, &out), HD_EBADARG);
    CHECK_EQ_INT(merge(NULL, "{\"a\":null}", 0, &out), HD_EBADARG);
    CHECK_EQ_INT(merge(NULL, "{\"a\":{\"b\":\"c\"}}", 0, &out), HD_EBADARG);
    /* names that no header could carry: empty, a space, a colon, CR LF (header injection) */
    CHECK_EQ_INT(merge(NULL, "{\"\":\"v\"}", 0, &out), HD_EBADARG);
    CHECK_EQ_INT(merge(NULL, "{\"a b\":\"v\"}", 0, &out), HD_EBADARG);
    CHECK_EQ_INT(merge(NULL, "{\"a:b\":\"v\"}", 0, &out), HD_EBADARG);
    CHECK_EQ_INT(merge(NULL, "{\"a\\r\\nSet-Cookie\":\"v\"}", 0, &out), HD_EBADARG);
    CHECK_EQ_INT(merge(NULL, "{\"\\u00e9\":\"v\"}", 0, &out), HD_EBADARG);
    /* values with control characters */
    CHECK_EQ_INT(merge(NULL, "{\"a\":\"x\\r\\nSet-Cookie: y\"}", 0, &out), HD_EBADARG);
    CHECK_EQ_INT(merge(NULL, "{\"a\":\"x\\u007f\"}", 0, &out), HD_EBADARG);
    CHECK_EQ_INT(merge(NULL, "{\"a\":\"\\t\"}", 0, &out), HD_EBADARG);
    /* a name of 255 bytes is the most */
    memset(name, 'n', sizeof(name) - 1);
    name[HD_USERMETA_NAME_MAX] = '\0';
    json_t *j = json_pack("{s:s}", name, "v");
    CHECK_EQ_INT(hd_usermeta_merge(NULL, j, 0, &out), 0);
    free(out);
    json_decref(j);
    name[HD_USERMETA_NAME_MAX] = 'n';
    name[HD_USERMETA_NAME_MAX + 1] = '\0';
    j = json_pack("{s:s}", name, "v");
    CHECK_EQ_INT(hd_usermeta_merge(NULL, j, 0, &out), HD_EBADARG);
    json_decref(j);
    /* 2 KiB of names and values, counted with what the object has unless replaced */
    memset(big, 'v', sizeof(big));
    big[HD_USERMETA_MAX - 1] = '\0'; /* "k" + 2047 bytes: 2048 */
    j = json_pack("{s:s}", "k", big);
    CHECK_EQ_INT(hd_usermeta_merge(NULL, j, 0, &out), 0);
    free(out);
    CHECK_EQ_INT(hd_usermeta_merge("{\"a\":\"\"}", j, 0, &out), HD_EMETATOOLARGE);
    CHECK(out == NULL);
    CHECK_EQ_INT(hd_usermeta_merge("{\"a\":\"\"}", j, 1, &out), 0);
    free(out);
    json_decref(j);
}
