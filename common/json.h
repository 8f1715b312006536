/* json: small helpers over jansson for the native API's bodies. Any thread. */
#ifndef HD_JSON_H
#define HD_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <time.h>

/* {"status":..,"code":..,"message":..,"resource":..,"request_id":..}; caller frees. */
char *hd_json_error(int status, const char *code, const char *msg, const char *resource,
                    const char *reqid);
/* Serialises compactly and takes the reference (json_decref). NULL on OOM. */
char *hd_json_dump_steal(json_t *j, size_t *len);
/* "2026-11-22T06:00:00Z" */
void hd_iso8601(time_t t, char out[32]);
/* S3 style with milliseconds: "2026-11-22T06:00:00.000Z" */
void hd_iso8601_ms(int64_t t_ms, char out[32]);

#endif
