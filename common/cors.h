/* cors: a bucket's CORS configuration (S3 PutBucketCors), kept as the bucket property "cors"
 * (common/bprops.h) in one canonical JSON form:
 *
 *   [{"id": "...", "origins": ["https://app.example.com", "http://localhost:*"], "methods": ["GET",
 * "PUT"], "headers": ["*"], "expose": ["ETag"], "max_age": 3000}, ...]
 *
 * ("id", "headers", "expose" and "max_age" only when given). Reads the CORSConfiguration XML
 * body, writes the GetBucketCors answer, and finds the rule a browser's request matches, as
 * AWS evaluates them: the first rule whose origin pattern matches Origin exactly (one '*' may
 * stand for any run of characters), whose methods include the method asked for, and whose
 * header patterns (case-insensitive, one '*' each) cover every header the preflight names.
 * Pure functions; any thread. */
#ifndef HD_CORS_H
#define HD_CORS_H

#include <stddef.h>

#include <jansson.h>

#include "common/buf.h"

#define HD_CORS_RULES_MAX 100  /* AWS's limit */
#define HD_CORS_VALUE_MAX 1024 /* an origin, header, id or expose name */
#define HD_CORS_JSON_MAX 65536 /* the canonical JSON of one configuration */

/* The CORSConfiguration body into *out (canonical JSON, malloc'd). 0, or HD_EMALFORMEDXML
 * (not that shape: another root, no rule, a rule without an origin or a method, a MaxAgeSeconds
 * that is not a number), HD_EBADREQ with msg filled (AWS's InvalidRequest: an unsupported
 * method, more than one '*', a character that cannot go into a header, too many rules or too
 * large), -ENOMEM. */
int hd_cors_parse_xml(const char *body, size_t len, char **out, char *msg, size_t msglen);
/* Whether v is a valid canonical rule array (what bprops accepts for "cors"): 0, or
 * HD_EBADARG with err filled. */
int hd_cors_check(const json_t *v, char *err, size_t errlen);
/* The GetBucketCors answer for a canonical rule array, with the XML declaration. */
void hd_cors_xml(struct hd_buf *b, const json_t *rules);

/* The index of the first rule of rules (a canonical array) that allows origin to send method
 * with the comma-separated headers hdrs (NULL or "": none), or -1. */
int hd_cors_find(const json_t *rules, const char *origin, const char *method, const char *hdrs);

#endif
