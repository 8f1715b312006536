/* s3client: a blocking client for an upstream S3 server (AWS, MinIO, s3rver, another hoard
 * cluster) over libcurl, SigV4-signed with common/sigv4.c. Each calling thread keeps one curl
 * easy handle whose connection cache outlives calls (keep-alive per thread). Every call has a
 * connect timeout, a total timeout and a low-speed limit, and retries up to `retries` times
 * with exponential backoff on 5xx answers, timeouts and refused connections, as long as no
 * byte of a body has been handed to the caller yet.
 *
 * Threads: any thread but an HTTP worker (calls block on the network for up to their total
 * timeout). Secrets in struct hd_s3c are never logged. */
#ifndef HD_S3CLIENT_H
#define HD_S3CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/s3resp.h"

#define HD_S3C_SECRET_MAX 256

typedef int (*hd_s3c_stop_fn)(void *arg);

/* An upstream and how to reach it (copied by value; no allocations). */
struct hd_s3c {
    char endpoint[256]; /* scheme://host[:port] */
    char region[64];
    int vhost;     /* virtual-host style: BUCKET.host */
    int anonymous; /* send requests unsigned */
    char access_key[129];
    char secret[HD_S3C_SECRET_MAX];
    char token[1024];    /* session token ("" = none), sent as x-amz-security-token */
    long connect_ms;     /* connect timeout */
    long total_s;        /* whole transfer (GET/PUT of an object) */
    long meta_s;         /* HEAD, DELETE, listing */
    long low_speed_bps;  /* abort when slower than this ... */
    long low_speed_s;    /* ... for this long */
    int retries;         /* extra attempts after the first */
    long backoff_ms;     /* first retry delay, doubled each time */
    long max_send_bps;   /* upload rate limit per transfer, bytes/s (0 = none) */
    hd_s3c_stop_fn stop; /* when set, polled during every call: nonzero aborts it with
                          * -ECANCELED (no retry) */
    void *stop_arg;
};

/* The outcome of a call: 0, or a project code with a message for the client that names the
 * upstream (HD_EUNAVAIL for unreachable/5xx, HD_ENOSUCHKEY, HD_ENOSUCHBUCKET, HD_EACCESS
 * with the upstream's own message, HD_EPRECONDITION, HD_ERANGE, HD_ENOTMODIFIED...). */
struct hd_s3c_err {
    int code;
    long status; /* last HTTP status, 0 when none arrived */
    int attempts;
    char msg[512];
};

/* An object's metadata as the upstream sent it. */
struct hd_s3c_obj {
    long status;
    uint64_t length; /* Content-Length of this response's body */
    uint64_t size;   /* whole object: length, or the total of Content-Range for 206 */
    uint64_t range_start;
    int have_length;
    char etag[48]; /* unquoted */
    int64_t mtime_ms;
    char ctype[128];
    char *meta; /* JSON object of x-amz-meta-* (lowercase names), or NULL */
    char *hdrs; /* JSON object of Cache-Control, Content-Disposition, Content-Encoding,
                 * Content-Language and Expires (lowercase names), or NULL */
};
void hd_s3c_obj_cleanup(struct hd_s3c_obj *o);

/* GET. head(arg, o) runs once when a 2xx answer's headers are complete (return nonzero to
 * abort: the call then fails with that code); data(arg, p, n) receives the body (nonzero
 * aborts). range: "bytes=a-b" or NULL; if_match: ETag (unquoted) or NULL. stop(arg), when
 * given, is polled during the transfer and aborts it (code -ECANCELED). Returns err->code. */
typedef int (*hd_s3c_head_fn)(void *arg, const struct hd_s3c_obj *o);
typedef int (*hd_s3c_data_fn)(void *arg, const char *p, size_t n);
struct hd_s3c_get {
    const char *range;
    const char *if_match;
    hd_s3c_head_fn head;
    hd_s3c_data_fn data;
    hd_s3c_stop_fn stop;
    void *arg;
};
int hd_s3c_get_object(const struct hd_s3c *c, const char *bucket, const char *key,
                      const struct hd_s3c_get *g, struct hd_s3c_obj *out, struct hd_s3c_err *err);
int hd_s3c_head_object(const struct hd_s3c *c, const char *bucket, const char *key,
                       struct hd_s3c_obj *out, struct hd_s3c_err *err);
/* PUT size bytes of fd (from offset 0) with Content-MD5, Content-Type, the x-amz-meta-* of
 * meta_json and the headers of hdrs_json (the five of struct hd_s3c_obj.hdrs; other keys
 * are left out); etag_out gets the upstream's ETag. */
int hd_s3c_put_object(const struct hd_s3c *c, const char *bucket, const char *key, int fd,
                      uint64_t size, const unsigned char md5[16], const char *ctype,
                      const char *meta_json, const char *hdrs_json, char etag_out[48],
                      struct hd_s3c_err *err);
/* Multipart upload. create: CreateMultipartUpload with the object's Content-Type, meta and
 * headers (as hd_s3c_put_object); upload_id gets the id (HD_EUNAVAIL if the answer has none
 * or does not fit idlen). part: UploadPart number part (1..10000) of len bytes of fd from
 * off, with Content-MD5; etag_out gets the part's ETag. complete: CompleteMultipartUpload of
 * the parts nums[0..nparts) (NULL: 1..nparts) with those ETags (unquoted); etag_out gets the
 * object's ETag (a 200 whose body is an <Error> is that error). abort: AbortMultipartUpload. */
int hd_s3c_mpu_create(const struct hd_s3c *c, const char *bucket, const char *key,
                      const char *ctype, const char *meta_json, const char *hdrs_json,
                      char *upload_id, size_t idlen, struct hd_s3c_err *err);
int hd_s3c_mpu_part(const struct hd_s3c *c, const char *bucket, const char *key,
                    const char *upload_id, int part, int fd, uint64_t off, uint64_t len,
                    const unsigned char md5[16], char etag_out[48], struct hd_s3c_err *err);
int hd_s3c_mpu_complete(const struct hd_s3c *c, const char *bucket, const char *key,
                        const char *upload_id, const unsigned *nums, const char (*etags)[48],
                        size_t nparts, char etag_out[48], struct hd_s3c_err *err);
int hd_s3c_mpu_abort(const struct hd_s3c *c, const char *bucket, const char *key,
                     const char *upload_id, struct hd_s3c_err *err);
int hd_s3c_delete_object(const struct hd_s3c *c, const char *bucket, const char *key,
                         struct hd_s3c_err *err);
/* ListObjectsV2: one page of at most max (1..1000) keys. token (a NextContinuationToken)
 * wins over start_after. */
int hd_s3c_list(const struct hd_s3c *c, const char *bucket, const char *prefix,
                const char *delimiter, const char *start_after, const char *token, size_t max,
                struct hd_s3_list *out, struct hd_s3c_err *err);
int hd_s3c_head_bucket(const struct hd_s3c *c, const char *bucket, struct hd_s3c_err *err);
/* Process shutdown: every transfer in flight, and every later one, stops at once
 * (-ECANCELED). */
void hd_s3c_abort_all(void);

/* Fills c's credentials from the named profile, looked up in order:
 *   "" or "anonymous": none (requests go unsigned);
 *   environment HOARD_S3_PROFILE_<NAME> = ACCESS:SECRET[:SESSION_TOKEN] (NAME upper-cased,
 *   other characters as '_');
 *   the AWS-style credentials file cred_file (NULL/"": $AWS_SHARED_CREDENTIALS_FILE, else
 *   $HOME/.aws/credentials), section [NAME]: aws_access_key_id, aws_secret_access_key,
 *   aws_session_token;
 *   for "default" only: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN.
 * 0, or -ENOENT / -EINVAL when the profile has no usable credentials. */
int hd_s3c_profile(const char *cred_file, const char *profile, struct hd_s3c *c);

#endif
