/* libFuzzer driver for what upstream S3 servers answer (common/s3resp): ListObjectsV2 pages,
 * <Error> bodies and the fields of multipart answers. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/httputil.h"
#include "common/s3resp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *body = (const char *)data;
    struct hd_s3_list l;
    char code[64], msg[256], *s;
    int64_t ms;
    size_t i;

    if (hd_s3resp_parse_list(body, size, &l) == 0) {
        for (i = 0; i < l.nents; i++) /* every name handed on is a valid object name */
            if (!l.ents[i].name ||
                hd_object_name_check(l.ents[i].name, strlen(l.ents[i].name)) != 0 ||
                strlen(l.ents[i].etag) >= sizeof(l.ents[i].etag))
                __builtin_trap();
        for (i = 0; i < l.nprefixes; i++)
            if (!l.prefixes[i])
                __builtin_trap();
        hd_s3_list_cleanup(&l);
    } else if (l.nents || l.ents || l.nprefixes || l.next_token) {
        __builtin_trap();
    }
    if (hd_s3resp_parse_error(body, size, code, sizeof(code), msg, sizeof(msg)) == 0 &&
        (strlen(code) >= sizeof(code) || strlen(msg) >= sizeof(msg)))
        __builtin_trap();
    if (hd_s3resp_parse_field(body, size, "InitiateMultipartUploadResult", "UploadId", msg,
                              sizeof(msg)) == 0 &&
        strlen(msg) >= sizeof(msg))
        __builtin_trap();
    s = malloc(size + 1);
    if (s) {
        memcpy(s, data, size);
        s[size] = '\0';
        hd_s3resp_parse_iso8601(s, &ms);
        free(s);
    }
    return 0;
}
