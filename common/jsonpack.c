#include "common/jsonpack.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <msgpack.h>

#define DEPTH_MAX 64

static int pack(msgpack_packer *pk, const json_t *j, int depth)
{
    const char *k;
    json_t *v;
    size_t i, n;
    int rc = 0;

    if (depth > DEPTH_MAX)
        return -EINVAL;
    switch (json_typeof(j)) {
    case JSON_OBJECT:
        rc = msgpack_pack_map(pk, json_object_size(j));
        json_object_foreach((json_t *)j, k, v)
        {
            n = strlen(k);
            if (rc == 0)
                rc = msgpack_pack_str(pk, n);
            if (rc == 0)
                rc = msgpack_pack_str_body(pk, k, n);
            if (rc == 0)
                rc = pack(pk, v, depth + 1);
        }
        break;
    case JSON_ARRAY:
        rc = msgpack_pack_array(pk, json_array_size(j));
        json_array_foreach(j, i, v)
        {
            if (rc == 0)
                rc = pack(pk, v, depth + 1);
        }
        break;
    case JSON_STRING:
        n = json_string_length(j);
        rc = msgpack_pack_str(pk, n);
        if (rc == 0)
            rc = msgpack_pack_str_body(pk, json_string_value(j), n);
        break;
    case JSON_INTEGER:
        rc = msgpack_pack_int64(pk, (int64_t)json_integer_value(j));
        break;
    case JSON_REAL:
        rc = msgpack_pack_double(pk, json_real_value(j));
        break;
    case JSON_TRUE:
        rc = msgpack_pack_true(pk);
        break;
    case JSON_FALSE:
        rc = msgpack_pack_false(pk);
        break;
    default:
        rc = msgpack_pack_nil(pk);
        break;
    }
    return rc == -EINVAL ? rc : rc ? -ENOMEM : 0;
}

int hd_jsonpack(const json_t *j, char **out, size_t *len)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    int rc;

    *out = NULL;
    *len = 0;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    rc = pack(&pk, j, 0);
    if (rc < 0) {
        msgpack_sbuffer_destroy(&sb);
        return rc;
    }
    *len = sb.size;
    *out = msgpack_sbuffer_release(&sb);
    if (!*out) { /* an empty buffer: nothing was packed */
        *out = malloc(1);
        if (!*out)
            return -ENOMEM;
    }
    return 0;
}

int hd_jsonpack_wanted(const char *accept)
{
    const char *s = accept;

    for (; s && *s; s++)
        if (strncasecmp(s, "application/msgpack", 19) == 0)
            return 1;
    return 0;
}
