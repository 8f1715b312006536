/* libFuzzer driver for query strings, URL coding, name checks and virtual-host Host headers
 * (common/httputil). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/httputil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    struct hd_query q;
    struct hd_buf b;
    char *s, *out;
    size_t n;
    uint64_t u;
    int64_t i64;
    int rc;

    s = malloc(size + 1);
    out = malloc(size + 1);
    if (!s || !out)
        goto out;
    memcpy(s, data, size);
    s[size] = '\0';

    /* query parsing: every pair NUL-terminated at its length, findable by its key */
    rc = hd_query_parse(s, &q);
    if (rc == 0) {
        for (size_t i = 0; i < q.n; i++) {
            const struct hd_query_param *p = &q.params[i];
            if (p->key[p->key_len] != '\0' || p->value[p->value_len] != '\0')
                __builtin_trap();
            if (strlen(p->key) == p->key_len && !hd_query_find(&q, p->key))
                __builtin_trap();
        }
    } else if (q.n != 0 || q.params) {
        __builtin_trap();
    }
    if (rc == 0)
        hd_s3_unsupported_subresource(&q, NULL);
    hd_query_free(&q);

    /* virtual-host addressing from a Host header: the bucket is the text before the domain */
    {
        char *vp = hd_s3_vhost_path(s, "s3.example.com", "/k");
        if (vp && (vp[0] != '/' || strlen(vp) < 4 || strcmp(vp + strlen(vp) - 2, "/k") != 0 ||
                   strlen(vp) - 3 >= strlen(s)))
            __builtin_trap();
        free(vp);
    }

    /* decode into a separate buffer and in place: same result */
    for (int plus = 0; plus < 2; plus++) {
        size_t n2;
        rc = hd_url_decode(in, size, out, &n, plus);
        memcpy(s, data, size);
        if (hd_url_decode(s, size, s, &n2, plus) != rc)
            __builtin_trap();
        if (rc == 0 && (n != n2 || n > size || memcmp(out, s, n) != 0 || out[n] != '\0'))
            __builtin_trap();
    }

    /* encode then decode is the identity */
    hd_buf_init(&b);
    for (int ks = 0; ks < 2; ks++) {
        hd_buf_reset(&b);
        if (hd_uri_encode(&b, in, size, ks) == 0 && b.data) {
            char *dec = malloc(b.len + 1);
            if (dec) {
                if (hd_url_decode(b.data, b.len, dec, &n, 0) != 0 || n != size ||
                    memcmp(dec, in, size) != 0)
                    __builtin_trap();
                free(dec);
            }
        }
    }
    hd_buf_cleanup(&b);

    memcpy(s, data, size);
    rc = hd_object_name_check(in, size);
    if (rc != 0 && rc != HD_EBADKEY && rc != HD_EKEYTOOLONG)
        __builtin_trap();
    rc = hd_bucket_name_check(s);
    if (rc == 0 && hd_object_name_check(s, strlen(s)) != 0)
        __builtin_trap(); /* a valid bucket name is plain ASCII */
    hd_parse_u64(s, &u);
    hd_parse_i64(s, &i64);
    hd_str_case_prefix(s, "x-amz-meta-");
out:
    free(s);
    free(out);
    return 0;
}
