/* lifecycle: a bucket's lifecycle rules (S3 PutBucketLifecycleConfiguration), kept as the
 * bucket property "lifecycle" (common/bprops.h) in one canonical JSON form, an array of rules:
 *
 *   {"id": "logs", "status": "Enabled" | "Disabled",
 *    "prefix": "logs/",                       the rule-level <Prefix> (S3's older form), or
 *    "filter": {"prefix": "tmp/", "tags": {"k": "v"}, "size_gt": 0, "size_lt": 1048576,
 *               "and": true},                 <Filter> (each key only when given; "and": the
 *                                             conditions came in <And>)
 *    "expire_days": 30 | "expire_date": "2027-01-01" | "expired_delete_marker": true,
 *    "noncurrent_days": 7, "newer_noncurrent": 3,
 *    "abort_mpu_days": 2}
 *
 * Reads the LifecycleConfiguration XML body with AWS's checks and error codes, writes the
 * GetBucketLifecycleConfiguration answer (the same rules back), and decides what a rule does
 * to one object or one multipart upload. hoard keeps no versions, so the noncurrent-version
 * actions and ExpiredObjectDeleteMarker are kept and shown but have nothing to act on; a
 * Transition (another storage class) is refused (hoard has one). Pure functions; any thread. */
#ifndef HD_LIFECYCLE_H
#define HD_LIFECYCLE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/buf.h"

#define HD_LC_RULES_MAX 1000  /* AWS's limit */
#define HD_LC_ID_MAX 255      /* bytes of a rule's ID (AWS's limit) */
#define HD_LC_PREFIX_MAX 1024 /* bytes of a prefix (a key's limit) */
#define HD_LC_JSON_MAX 65536  /* the canonical JSON of one configuration (as CORS) */
#define HD_LC_DAYS_MAX 2147483647
#define HD_LC_TAGS_MAX 50 /* tags in one filter (a bucket's tags at most) */

/* The LifecycleConfiguration body into *out (canonical JSON, malloc'd); a rule without an ID
 * gets one (16 hex digits derived from the rule, unique in the configuration). 0, or:
 * HD_EMALFORMEDXML (not that shape: another root, no rule, an unknown element, a Status other
 * than Enabled/Disabled, both or neither of Prefix and Filter, an empty And, an Expiration with
 * not exactly one action, a number that is not one), HD_EBADARG with msg (AWS's InvalidArgument: a
 * day count that is not positive, a Date that is not midnight UTC, an ID over 255 bytes or given
 * twice), HD_EBADREQ with msg (InvalidRequest: a rule without an action, tags with
 * AbortIncompleteMultipartUpload or ExpiredObjectDeleteMarker, sizes with
 * AbortIncompleteMultipartUpload or that leave nothing, over HD_LC_JSON_MAX), HD_ENOTIMPL with msg
 * (a Transition), -ENOMEM. */
int hd_lc_parse_xml(const char *body, size_t len, char **out, char *msg, size_t msglen);
/* Whether v is a valid canonical rule array (what bprops accepts for "lifecycle"): 0, or
 * HD_EBADARG / HD_EBADREQ / HD_ENOTIMPL with err filled (as hd_lc_parse_xml). */
int hd_lc_check(const json_t *v, char *err, size_t errlen);
/* The GetBucketLifecycleConfiguration answer for a canonical rule array, with the XML
 * declaration. */
void hd_lc_xml(struct hd_buf *b, const json_t *rules);

/* When a rule's days run out: day_ms is the length of a day (86400000; tests shorten it). As
 * AWS counts: the time the object was written (or the upload started) plus the days, rounded
 * up to the next multiple of a day since the epoch (midnight UTC). */
int64_t hd_lc_due_ms(int64_t since_ms, int64_t days, int64_t day_ms);
/* Whether an object (name, size, written at mtime_ms, tags: its canonical tag object or
 * NULL) is to be deleted at now_ms by an enabled expiration rule of rules (Days or Date). */
int hd_lc_expired(const json_t *rules, const char *name, uint64_t size, int64_t mtime_ms,
                  const json_t *tags, int64_t now_ms, int64_t day_ms);
/* Whether an enabled expiration rule of rules takes names like name (its prefix only): 0
 * means hd_lc_expired is 0 for every size, time and tags, so the object need not be read. */
int hd_lc_may_expire(const json_t *rules, const char *name);
/* When the object goes: 1 with *at_ms (the earliest time an enabled expiration rule takes it)
 * and *id (that rule's ID, borrowed from rules), or 0 when no rule expires it. S3's
 * x-amz-expiration header. */
int hd_lc_expiry(const json_t *rules, const char *name, uint64_t size, int64_t mtime_ms,
                 const json_t *tags, int64_t day_ms, int64_t *at_ms, const char **id);
/* Whether a multipart upload of name started at created_ms is to be aborted at now_ms by an
 * enabled AbortIncompleteMultipartUpload rule. */
int hd_lc_abort_due(const json_t *rules, const char *name, int64_t created_ms, int64_t now_ms,
                    int64_t day_ms);
/* What acting on rules needs: 1 when an enabled rule expires objects (*tags: one of them
 * filters by tags, so the object's tags must be read), 2 when one aborts uploads (bits). */
#define HD_LC_EXPIRES 1
#define HD_LC_ABORTS 2
int hd_lc_actions(const json_t *rules, int *tags);

#endif
