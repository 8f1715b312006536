/* libFuzzer driver for bucket CORS configurations (common/cors): the CORSConfiguration XML
 * body of PutBucketCors, and rule matching. Whatever is accepted passes the property check,
 * holds only header-safe text, and comes back unchanged through the GetBucketCors answer; the
 * input's tail is matched against it as a request (origin, method, headers). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/buf.h"
#include "common/cors.h"
#include "common/errors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void header_safe(const json_t *v)
{
    const char *s;
    size_t i;

    if (json_is_array(v) || json_is_object(v)) {
        const char *k;
        json_t *x;
        if (json_is_array(v))
            for (i = 0; i < json_array_size(v); i++)
                header_safe(json_array_get(v, i));
        else
            json_object_foreach((json_t *)v, k, x) header_safe(x);
        return;
    }
    if (!(s = json_string_value(v)))
        return;
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
            __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *out = NULL, *again = NULL, msg[200], *tail;
    const char *origin, *method, *hdrs;
    json_t *rules;
    struct hd_buf b;
    size_t split = size;
    int rc, i;

    /* the body, then (after a NUL) "origin\nmethod\nheaders" */
    if (memchr(data, '\0', size))
        split = (size_t)((const uint8_t *)memchr(data, '\0', size) - data);
    rc = hd_cors_parse_xml((const char *)data, split, &out, msg, sizeof(msg));
    if (rc < 0) {
        if (out)
            __builtin_trap();
        return 0;
    }
    rules = json_loads(out, 0, NULL);
    if (!rules || hd_cors_check(rules, NULL, 0) != 0 || strlen(out) > HD_CORS_JSON_MAX)
        __builtin_trap();
    header_safe(rules);
    hd_buf_init(&b);
    hd_cors_xml(&b, rules);
    if (!b.oom && (hd_cors_parse_xml(b.data, b.len, &again, msg, sizeof(msg)) != 0 || !again ||
                   strcmp(again, out) != 0))
        __builtin_trap();
    hd_buf_cleanup(&b);
    free(again);
    if (split < size && (tail = strndup((const char *)data + split + 1, size - split - 1))) {
        char *nl;
        origin = tail;
        method = "GET";
        hdrs = NULL;
        if ((nl = strchr(tail, '\n'))) {
            *nl = '\0';
            method = nl + 1;
            if ((nl = strchr(nl + 1, '\n'))) {
                *nl = '\0';
                hdrs = nl + 1;
            }
        }
        i = hd_cors_find(rules, origin, method, hdrs);
        if (i >= (int)json_array_size(rules))
            __builtin_trap();
        free(tail);
    }
    json_decref(rules);
    free(out);
    return 0;
}
