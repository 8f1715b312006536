/* libFuzzer driver for object tags (common/tagging): the Tagging XML body and the
 * x-amz-tagging header. Whatever is accepted keeps S3's limits, is canonical (keys sorted),
 * and comes back unchanged through the GetObjectTagging answer and through the header form. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/httputil.h"
#include "common/tagging.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t chars(const char *s)
{
    size_t c = 0;

    for (; *s; s++)
        c += ((unsigned char)*s & 0xC0) != 0x80;
    return c;
}

/* out: the canonical text of an accepted set (NULL: empty). Traps on any broken rule. */
static void check(const char *out)
{
    json_t *j, *v;
    const char *k, *prev = NULL;
    struct hd_buf b;
    char *again = NULL;
    size_t n;

    if (!out)
        return;
    j = json_loads(out, 0, NULL);
    n = json_object_size(j);
    if (!json_is_object(j) || n == 0 || n > HD_TAGS_MAX)
        __builtin_trap();
    json_object_foreach(j, k, v)
    {
        if (!json_is_string(v) || !*k || chars(k) > HD_TAG_KEY_MAX ||
            chars(json_string_value(v)) > HD_TAG_VALUE_MAX || strncmp(k, "aws:", 4) == 0 ||
            (prev && strcmp(prev, k) >= 0))
            __builtin_trap();
        prev = k;
    }
    /* the answer parses back to the same set (XML 1.0 cannot carry U+FFFE / U+FFFF) */
    if (!strstr(out, "\\uFFFE") && !strstr(out, "\\uFFFF")) {
        hd_buf_init(&b);
        hd_tags_xml(&b, out);
        if (!b.oom &&
            (hd_tags_parse_xml(b.data, b.len, &again) != 0 || !again || strcmp(again, out) != 0))
            __builtin_trap();
        free(again);
        again = NULL;
        hd_buf_cleanup(&b);
    }
    /* and so does the header form */
    hd_buf_init(&b);
    json_object_foreach(j, k, v)
    {
        if (b.len)
            hd_buf_puts(&b, "&");
        hd_uri_encode(&b, k, strlen(k), 0);
        hd_buf_puts(&b, "=");
        hd_uri_encode(&b, json_string_value(v), strlen(json_string_value(v)), 0);
    }
    if (!b.oom && (hd_tags_parse_header(b.data, &again) != 0 || !again || strcmp(again, out) != 0))
        __builtin_trap();
    free(again);
    hd_buf_cleanup(&b);
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s, *out = NULL;
    int rc;

    rc = hd_tags_parse_xml((const char *)data, size, &out);
    if (rc < 0 && out)
        __builtin_trap();
    check(out);
    free(out);
    out = NULL;

    if (!(s = malloc(size + 1)))
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    rc = hd_tags_parse_header(s, &out);
    if (rc < 0 && out)
        __builtin_trap();
    check(out);
    free(out);
    free(s);
    return 0;
}
