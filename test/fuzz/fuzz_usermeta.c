/* libFuzzer driver for a user metadata edit (common/usermeta: AIStore's set_custom_props
 * body's value). The input is split at its first NUL: the stored metadata (itself taken
 * through the same rules first), then the edit, both JSON as a client could send them. Whatever is
 * accepted is an object of strings within the limits, with names that are lowercase HTTP tokens and
 * values without control characters: what an x-amz-meta-* header can carry. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/usermeta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const char *out)
{
    json_t *j, *v;
    const char *k, *p;
    size_t total = 0;

    if (!out)
        return;
    j = json_loads(out, 0, NULL);
    if (!json_is_object(j) || json_object_size(j) == 0)
        __builtin_trap();
    json_object_foreach(j, k, v)
    {
        if (!json_is_string(v) || !*k || strlen(k) > HD_USERMETA_NAME_MAX)
            __builtin_trap();
        for (p = k; *p; p++)
            if (isupper((unsigned char)*p) || *p == ':' || *p == ' ' || (unsigned char)*p < 0x21)
                __builtin_trap();
        total += strlen(k) + strlen(json_string_value(v));
    }
    if (total > HD_USERMETA_MAX)
        __builtin_trap();
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    char *old = NULL, *out = NULL;
    json_t *set;
    int rc;

    if (nul) {
        /* what is stored came through the same rules (a PUT's header names are tokens) */
        json_t *o = json_loadb((const char *)data, (size_t)(nul - data), 0, NULL);
        if (hd_usermeta_merge(NULL, o, 1, &old) < 0 && old)
            __builtin_trap();
        json_decref(o);
        size -= (size_t)(nul - data) + 1;
        data = nul + 1;
    }
    set = json_loadb((const char *)data, size, 0, NULL);
    rc = hd_usermeta_merge(old, set, size & 1, &out);
    if (rc < 0 && out)
        __builtin_trap();
    check(out);
    free(out);
    free(old);
    json_decref(set);
    return 0;
}
