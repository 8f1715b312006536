/* tagging: S3 object tags. Reads the two forms a client sends them in, the Tagging XML body
 * of PutObjectTagging and the x-amz-tagging header of PutObject, CopyObject and
 * CreateMultipartUpload (URL-encoded query form, "k1=v1&k2"), checks them against S3's limits
 * and gives one canonical form: a compact JSON object {key: value} with the keys sorted
 * bytewise (what the target keeps with the object; GetObjectTagging answers in that order, as
 * RGW and the ceph s3-tests expect). Writes the GetObjectTagging answer. Pure; any thread. */
#ifndef HD_TAGGING_H
#define HD_TAGGING_H

#include <stddef.h>

#include <jansson.h>

#include "common/buf.h"

#define HD_TAGS_MAX 10        /* tags per object */
#define HD_BUCKET_TAGS_MAX 50 /* tags per bucket */
#define HD_TAG_KEY_MAX 128    /* Unicode characters of a key (at least 1) */
#define HD_TAG_VALUE_MAX 256  /* Unicode characters of a value (may be 0) */

/* <Tagging><TagSet><Tag><Key>k</Key><Value>v</Value></Tag>...</TagSet></Tagging> (the S3
 * namespace or none) into *out (malloc'd; NULL for the empty set). 0, or: HD_EMALFORMEDXML
 * (not that shape: another root, no TagSet, a Tag without exactly one Key and one Value),
 * HD_ETAGCOUNT (more than HD_TAGS_MAX), HD_ETAGDUP, HD_ETAGKEYLEN, HD_ETAGVALLEN, HD_ETAGAWS
 * (a key starting with "aws:"), HD_ETAGKEY / HD_ETAGVAL (an empty key; not UTF-8; a control
 * character other than tab, LF, CR, which XML could not give back), -ENOMEM.
 * Keys and values are taken verbatim (not trimmed). */
int hd_tags_parse_xml(const char *body, size_t len, char **out);
/* The same with another limit than HD_TAGS_MAX (a bucket's tags: HD_BUCKET_TAGS_MAX). */
int hd_tags_parse_xml_max(const char *body, size_t len, size_t max, char **out);
/* The x-amz-tagging header v (URL-encoded; '+' is a space; "k" alone has the empty value)
 * into *out as above (NULL for "" : no tags). HD_ETAGHEADER for a malformed escape or a key
 * given twice; otherwise the errors of hd_tags_parse_xml but HD_EMALFORMEDXML and HD_ETAGDUP. */
int hd_tags_parse_header(const char *v, char **out);
/* Whether tags (a JSON object {key: value}, as kept) holds 1..max tags that S3 accepts: the
 * checks of hd_tags_parse_xml (lengths in characters, no control characters, no "aws:" key).
 * 0, HD_EMALFORMEDXML (not an object of strings, or empty), HD_ETAGCOUNT, HD_ETAGKEY,
 * HD_ETAGVAL, HD_ETAGKEYLEN, HD_ETAGVALLEN, HD_ETAGAWS, -ENOMEM. */
int hd_tags_check(const json_t *tags, size_t max);
/* The number of tags in a canonical JSON object (NULL or malformed: 0). */
size_t hd_tags_count(const char *json);
/* The GetObjectTagging answer for json (NULL: the empty set), with the XML declaration. */
void hd_tags_xml(struct hd_buf *b, const char *json);

#endif
