/* libFuzzer driver for job arguments that arrive over the network: brace templates
 * (common/brace) and bucket props (common/bprops, parse and merge). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/bprops.h"
#include "common/buf.h"
#include "common/errors.h"
#include "common/brace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct hd_brace *t = NULL;
    struct hd_bprops bp;
    struct hd_buf b;
    char err[256], *s, *half, *merged = NULL;
    uint64_t n, i;

    s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    if (hd_brace_parse(s, &t, err, sizeof(err)) == 0) {
        n = hd_brace_count(t);
        if (n == 0 || n > HD_BRACE_MAX_NAMES)
            __builtin_trap();
        hd_buf_init(&b);
        for (i = 0; i < n && i < 64; i++) { /* first, last, and a few in between */
            uint64_t k = i < 32 ? i : n - 1 - (i - 32);
            hd_buf_reset(&b);
            if (hd_brace_at(t, k, &b) != 0 && !b.oom)
                __builtin_trap();
        }
        if (hd_brace_at(t, n, &b) != HD_EBADARG)
            __builtin_trap();
        hd_buf_cleanup(&b);
        hd_brace_free(t);
    } else if (t) {
        __builtin_trap();
    }
    if (hd_bprops_parse(s, &bp, err, sizeof(err)) == 0) {
        char *d = hd_bprops_dump_from(&bp, s);
        struct hd_bprops again;
        /* the canonical form parses back to the same props */
        if (d && (hd_bprops_parse(d, &again, err, sizeof(err)) != 0 ||
                  memcmp(&again, &bp, sizeof(bp)) != 0))
            __builtin_trap();
        free(d);
    }
    half = strndup(s, size / 2);
    if (half && hd_bprops_merge(half, s + size / 2, &merged, err, sizeof(err)) == 0 &&
        (!merged || hd_bprops_parse(merged, &bp, err, sizeof(err)) != 0))
        __builtin_trap();
    free(merged);
    free(half);
    free(s);
    return 0;
}
