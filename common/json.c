#include "common/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *hd_json_error(int status, const char *code, const char *msg, const char *resource,
                    const char *reqid)
{
    json_t *j = json_pack("{s:i, s:s, s:s, s:s, s:s}", "status", status, "code", code, "message",
                          msg, "resource", resource ? resource : "", "request_id", reqid);
    return hd_json_dump_steal(j, NULL);
}

char *hd_json_dump_steal(json_t *j, size_t *len)
{
    char *s;

    if (!j)
        return NULL;
    s = json_dumps(j, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(j);
    if (s && len)
        *len = strlen(s);
    return s;
}

void hd_iso8601(time_t t, char out[32])
{
    struct tm tm;

    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void hd_iso8601_ms(int64_t t_ms, char out[32])
{
    struct tm tm;
    time_t t = (time_t)(t_ms / 1000);
    size_t n;

    gmtime_r(&t, &tm);
    n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 32 - n, ".%03dZ", (int)(t_ms % 1000));
}
