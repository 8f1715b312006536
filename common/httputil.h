/* httputil: pure parsers and checks for HTTP/S3 request fields (Range, dates, conditionals,
 * URL/query encoding, bucket and object names, strict integers). No state; any thread. */
#ifndef HD_HTTPUTIL_H
#define HD_HTTPUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/buf.h"

/* ---- Range ------------------------------------------------------------------------------ */

/* Parses a single-range "bytes=a-b" / "bytes=a-" / "bytes=-n" against an object of `size`.
 * Returns 0 with *off and *len set (b is clamped to size-1, a suffix longer than the object
 * means the whole object); 1 when the header must be ignored and the whole object served
 * (NULL, other unit, several ranges, bad syntax such as "5-2", numbers beyond uint64);
 * HD_ERANGE (416) when well formed but unsatisfiable (a >= size, "-0", any range of an empty
 * object). The unit name is case-insensitive; whitespace is allowed only around the
 * range-spec ("bytes= 0-5 "). */
int hd_range_parse(const char *hdr, uint64_t size, uint64_t *off, uint64_t *len);
/* Parses the Content-Range of a 206 answer, "bytes first-last/total" (RFC 9110 14.4: one SP
 * after the case-insensitive unit, nothing else around the numbers). 0 with the three set
 * when first <= last < total; HD_EBADARG for anything else: a sign, junk, numbers beyond
 * uint64, an asterisk for the total or the range (unknown length, unsatisfied), NULL. */
int hd_content_range_parse(const char *hdr, uint64_t *first, uint64_t *last, uint64_t *total);

/* ---- Dates ------------------------------------------------------------------------------ */

/* Parses an HTTP-date: IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT", RFC 850
 * "Sunday, 06-Nov-94 08:49:37 GMT" (two-digit years: < 70 -> 20xx, else 19xx) and asctime
 * "Sun Nov  6 08:49:37 1994". Locale independent; field ranges are checked (day against the
 * month), the weekday name is checked for spelling but not against the date. 0 or
 * HD_EBADARG. */
int hd_http_date_parse(const char *s, time_t *out);
/* Any date a client sends in Date, x-amz-date or a conditional header, leading and trailing
 * blanks ignored: the three HTTP-date forms above; RFC 1123 / RFC 2822 with a zone other
 * than GMT ("UT", "UTC", "Z", "+0000", "-0000", "+0130", ...: botocore's formatdate() and
 * s3cmd write -0000 and +0000) and a one- or two-digit day; and ISO 8601 basic
 * "20130524T000000Z" (how SigV4 writes x-amz-date). Years 0000..9999; the result may be
 * before 1970 (negative). 0 or HD_EBADARG. */
int hd_date_parse(const char *s, time_t *out);
/* Formats t as IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), always NUL-terminated. */
void hd_http_date_format(time_t t, char out[32]);
/* Parses the SigV4 basic ISO 8601 form "20130524T000000Z" (exactly 16 chars). 0 or
 * HD_EBADARG. */
int hd_amz_date_parse(const char *s, time_t *out);

/* ---- Conditional requests ----------------------------------------------------------------- */

/* Raw header values, NULL when absent. An empty/blank value counts as absent. */
struct hd_cond {
    const char *if_match;
    const char *if_none_match;
    const char *if_modified_since;
    const char *if_unmodified_since;
};

/* Evaluates preconditions in RFC 9110 section 13.2.2 order, which yields S3's documented
 * precedence (If-Match true + If-Unmodified-Since false -> 200; If-None-Match false +
 * If-Modified-Since true -> 304). `etag` is the object's ETag without quotes ("abc-3").
 * ETag lists are comma separated, quoted or not; "*" matches any existing object. If-Match
 * compares strongly (a W/ tag never matches), If-None-Match weakly (W/ ignored).
 * If-Modified-Since applies only when is_read (GET/HEAD). Dates are read with hd_date_parse;
 * unparsable ones are ignored.
 * Returns 0 (proceed), HD_EPRECONDITION (412) or HD_ENOTMODIFIED (304; only when is_read,
 * a failed If-None-Match on a write is 412). */
int hd_cond_eval(const struct hd_cond *c, const char *etag, time_t mtime, int is_read);
/* The header a read's HD_EPRECONDITION from hd_cond_eval comes from, as AWS names it in
 * the error's <Condition>: "If-Match" when one was given, else "If-Unmodified-Since". */
const char *hd_cond_failed(const struct hd_cond *c);

/* ---- GetObjectAttributes ------------------------------------------------------------------ */

/* x-amz-object-attributes: a comma-separated list of AWS's attribute names (blanks around
 * each ignored, names case-sensitive). Returns the HD_ATTR_* bits it names, 0 when it names
 * none (NULL, empty or only commas), HD_EBADARG for a name AWS does not have. */
enum {
    HD_ATTR_ETAG = 1,
    HD_ATTR_CHECKSUM = 2,
    HD_ATTR_PARTS = 4,
    HD_ATTR_CLASS = 8,
    HD_ATTR_SIZE = 16
};
int hd_s3_attributes_parse(const char *h);

/* ---- URL encoding and query strings ------------------------------------------------------- */

/* Percent-decodes in[0..n) into out ('+' -> ' ' when plus_as_space). out may equal in and
 * must have room for n + 1 bytes; it is NUL-terminated and *outlen excludes the NUL. Decoded
 * NUL bytes are passed through (check *outlen against strlen if that matters). Returns 0 or
 * HD_EBADARG on a malformed escape (out is then unspecified). */
int hd_url_decode(const char *in, size_t n, char *out, size_t *outlen, int plus_as_space);
/* Appends s[0..n) URI-encoded the SigV4/S3 way: all bytes but A-Z a-z 0-9 - . _ ~ become
 * %XX (uppercase hex); '/' is kept when keep_slash. 0 or -ENOMEM. */
int hd_uri_encode(struct hd_buf *b, const char *s, size_t n, int keep_slash);

#define HD_QUERY_MAX_PARAMS 1000
#define HD_QUERY_MAX_LEN 65536

struct hd_query_param {
    const char *key;   /* decoded, NUL-terminated; may contain NUL (see key_len) */
    const char *value; /* decoded; "" when the parameter had no '=' */
    size_t key_len;
    size_t value_len;
};

/* Decoded query parameters in document order (duplicates kept). Owns its memory. */
struct hd_query {
    struct hd_query_param *params;
    size_t n;
    char *store; /* backing storage for all keys and values */
};

/* Parses a raw query string (without '?'; NULL or "" gives zero params). Empty segments
 * ("a&&b") are skipped; '+' decodes to space in keys and values. Limits: HD_QUERY_MAX_LEN
 * bytes and HD_QUERY_MAX_PARAMS params, else HD_EBADARG; malformed %XX -> HD_EBADARG;
 * -ENOMEM. On failure *q is left empty (hd_query_free is still safe). */
int hd_query_parse(const char *raw, struct hd_query *q);
/* First parameter whose key equals `key` exactly (a key with an embedded NUL never matches);
 * NULL when absent. */
const struct hd_query_param *hd_query_find(const struct hd_query *q, const char *key);
/* Value of hd_query_find, NULL when absent. */
const char *hd_query_get(const struct hd_query *q, const char *key);
void hd_query_free(struct hd_query *q);
/* 1 when etag (unquoted) is a plain MD5 of the bytes: 32 hex digits (multipart and other
 * ETags are not, and cannot be compared with a digest). */
int hd_etag_is_md5(const char *etag);
/* 1 when q names an S3 subresource hoard does not implement (?policy, ?tagging, ...) other
 * than allowed (NULL: none; the one call of that subresource the caller answers): the caller
 * answers NotImplemented instead of treating it as a plain object call. */
int hd_s3_unsupported_subresource(const struct hd_query *q, const char *allowed);
/* Virtual-host style addressing: for a Host header "BUCKET.<domain>[:port]" (domain matched
 * without case), "/BUCKET" + path on the heap; NULL when host is not of that form, domain is
 * empty, or memory runs out. */
char *hd_s3_vhost_path(const char *host, const char *domain, const char *path);

/* ---- Names ------------------------------------------------------------------------------ */

/* AWS general-purpose bucket rules: 3..63 chars of a-z 0-9 - . ; first and last a letter or
 * digit; no "..", ".-" or "-." (a label may not start or end with '-'); not shaped like an IPv4
 * address; not starting with "xn--", "sthree-" or "amzn-s3-demo-"; not ending with "-s3alias",
 * "--ol-s3", ".mrap", "--x-s3" or
 * "--table-s3". 0 or HD_EBADBUCKETNAME (also for NULL). */
int hd_bucket_name_check(const char *name);
/* A job or plan id, which goes into URL paths: 1..HD_ID_MAX chars of A-Z a-z 0-9 . _ -.
 * 0 or -1 (also for NULL). */
#define HD_ID_MAX 48
int hd_id_check(const char *id);
/* S3 object key: 1..1024 bytes of valid UTF-8 (no overlongs, surrogates or > U+10FFFF), no
 * NUL. "../a", "a//b" and control characters are valid: keys never become file paths.
 * 0, HD_EKEYTOOLONG or HD_EBADKEY. */
int hd_object_name_check(const char *name, size_t len);
/* Percent-decodes s[0..n) into a new NUL-terminated heap string *out (caller frees);
 * *outlen (may be NULL) excludes the NUL and counts decoded NULs. 0, HD_EBADARG or -ENOMEM;
 * *out is NULL on error. */
int hd_url_decode_dup(const char *s, size_t n, char **out, size_t *outlen);
/* Percent-decodes a bucket path segment s[0..n) into a new heap string (*out, caller frees).
 * 0, HD_EBADBUCKETNAME (malformed escape, or a decoded NUL that would cut the name short)
 * or -ENOMEM; *out is NULL on error. The name itself is not checked against the rules
 * (hd_bucket_name_check): lookups of names that cannot exist simply find nothing. */
int hd_bucket_decode(const char *s, size_t n, char **out);
/* x-amz-copy-source ("[/]BUCKET/KEY[?versionId=...]", percent-encoded) into decoded bucket
 * and key (heap strings, caller frees). The bucket must pass hd_bucket_name_check and the key
 * hd_object_name_check, so authorisation and the copy itself see the same names.
 * 0, HD_EBADARG, a name error, or -ENOMEM; both NULL on error. */
int hd_copy_source_parse(const char *src, char **bucket, char **key);

/* ---- Misc ------------------------------------------------------------------------------- */

/* Strict decimal: one or more digits, nothing else (no sign, spaces or overflow).
 * 0 or HD_EBADARG. */
int hd_parse_u64(const char *s, uint64_t *out);
/* As hd_parse_u64 with an optional leading '-'. */
int hd_parse_i64(const char *s, int64_t *out);
/* A comma-separated header list (Content-Encoding, say) without the elements equal to token
 * (ASCII case-insensitively): the others in order, trimmed, joined with ", ", into out (max
 * bytes with the NUL). Returns the length left (0: nothing: drop the header), or -1 when it
 * does not fit. "gzip, aws-chunked" -> "gzip"; "aws-chunked" -> "". */
int hd_list_drop_token(const char *list, const char *token, char *out, size_t max);
/* 1 when s starts with prefix, ASCII case-insensitively; else 0. */
int hd_str_case_prefix(const char *s, const char *prefix);

#endif
