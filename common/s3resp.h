/* s3resp: parsers for what an upstream S3 server answers (ListObjectsV2 result, <Error>
 * bodies), over the limited expat DOM of common/xml.c. These bytes come from the network, so
 * they have a fuzz driver (test/fuzz/fuzz_s3resp.c). Pure; any thread. */
#ifndef HD_S3RESP_H
#define HD_S3RESP_H

#include <stddef.h>
#include <stdint.h>

struct hd_s3_ent {
    char *name;
    uint64_t size;
    int64_t mtime_ms; /* 0 when LastModified is absent or unparsable */
    char etag[48];    /* unquoted, truncated if longer */
};

struct hd_s3_list {
    struct hd_s3_ent *ents; /* in the server's order */
    size_t nents;
    char **prefixes; /* CommonPrefixes */
    size_t nprefixes;
    int truncated;
    char *next_token; /* NextContinuationToken, or NULL */
};

/* ListBucketResult (V2; V1 answers parse too, without a token). Keys and prefixes are
 * URL-decoded when the answer says <EncodingType>url</EncodingType>. HD_EMALFORMEDXML for
 * anything else (wrong root, Contents without Key, bad Size, a key that is not a valid object
 * name); -ENOMEM. On success the caller frees *out with hd_s3_list_cleanup; on failure *out
 * is empty. */
int hd_s3resp_parse_list(const char *body, size_t len, struct hd_s3_list *out);
void hd_s3_list_cleanup(struct hd_s3_list *l);

/* <Error><Code>..</Code><Message>..</Message></Error>: copies both (truncated, NUL-terminated;
 * "" when absent). 0, or HD_EMALFORMEDXML when the body is not such a document. */
int hd_s3resp_parse_error(const char *body, size_t len, char *code, size_t codelen, char *msg,
                          size_t msglen);

/* A document whose root element is root: copies the text of its child field (truncated,
 * NUL-terminated; "" when absent), e.g. InitiateMultipartUploadResult/UploadId. 0, or
 * HD_EMALFORMEDXML for another document. */
int hd_s3resp_parse_field(const char *body, size_t len, const char *root, const char *field,
                          char *out, size_t outlen);

/* ISO 8601 "2009-10-12T17:50:30.000Z" (fraction optional) to milliseconds since the epoch
 * (years from 1970; a day the month does not have is refused). 0 or HD_EBADARG. */
int hd_s3resp_parse_iso8601(const char *s, int64_t *ms);

#endif
