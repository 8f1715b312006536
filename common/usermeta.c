#include "common/usermeta.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "common/errors.h"
#include "common/json.h"

/* RFC 9110 tchar */
static int name_ok(const char *k)
{
    size_t n = strlen(k);

    if (n == 0 || n > HD_USERMETA_NAME_MAX)
        return 0;
    for (; *k; k++)
        if (!isalnum((unsigned char)*k) && !strchr("!#$%&'*+-.^_`|~", *k))
            return 0;
    return 1;
}

static int value_ok(const char *v)
{
    for (; *v; v++)
        if ((unsigned char)*v < 0x20 || *v == 0x7f)
            return 0;
    return 1;
}

int hd_usermeta_merge(const char *json, const json_t *set, int replace, char **out)
{
    json_t *j = NULL, *v;
    const char *k;
    char name[HD_USERMETA_NAME_MAX + 1];
    size_t total = 0, i;
    int rc = 0;

    *out = NULL;
    if (!json_is_object(set))
        return HD_EBADARG;
    if (!replace && json)
        j = json_loads(json, 0, NULL);
    if (!json_is_object(j)) {
        json_decref(j);
        j = json_object();
    }
    if (!j)
        return -ENOMEM;
    json_object_foreach((json_t *)set, k, v)
    {
        if (!json_is_string(v) || !name_ok(k) || !value_ok(json_string_value(v))) {
            rc = HD_EBADARG;
            goto out;
        }
        for (i = 0; k[i]; i++)
            name[i] = (char)tolower((unsigned char)k[i]);
        name[i] = '\0';
        if (json_object_set(j, name, v) < 0) {
            rc = -ENOMEM;
            goto out;
        }
    }
    json_object_foreach(j, k, v)
    {
        total += strlen(k) + (json_is_string(v) ? strlen(json_string_value(v)) : 0);
    }
    if (total > HD_USERMETA_MAX) {
        rc = HD_EMETATOOLARGE;
        goto out;
    }
    if (json_object_size(j) == 0)
        goto out;
    *out = hd_json_dump_steal(j, NULL);
    return *out ? 0 : -ENOMEM;
out:
    json_decref(j);
    return rc;
}
