/* postpolicy: S3 POST Object (a browser's HTML form upload), the part that needs no
 * network: the form's fields as they arrive, and the check AWS makes of them before the file
 * is stored. The policy (base64 JSON, signed inside the form with SigV2 or SigV4 form fields)
 * names the conditions every field must meet; jansson reads it. Field names are
 * case-insensitive, the policy's own keys are not (AWS, ceph s3-tests). Any thread. */
#ifndef HD_POSTPOLICY_H
#define HD_POSTPOLICY_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/keys.h"
#include "common/sigv4.h"

/* The fields before the file, in arrival order (later duplicates are joined with ",", as AWS
 * compares them). Values may hold any byte but NUL-terminated copies are kept too. */
struct hd_post_field {
    char *name;
    char *value;
    size_t vlen;
};
struct hd_post_form {
    struct hd_post_field *v;
    size_t n, cap;
    size_t last;    /* the field the last hd_post_form_add went to (where append goes) */
    char *filename; /* the file part's filename= (NULL: none given) */
};

/* Adds data[0..len) to the field name: a new field, or (append) more of the last one's
 * value (a value the parser delivers in pieces). 0 or -ENOMEM. */
int hd_post_form_add(struct hd_post_form *f, const char *name, const char *data, size_t len,
                     int append);
/* The value of field name (any case), or NULL. */
const char *hd_post_form_get(const struct hd_post_form *f, const char *name);
void hd_post_form_cleanup(struct hd_post_form *f);

struct hd_post_in {
    const char *bucket; /* the bucket of the request's URL (never the form's "bucket" field) */
    time_t now;
    const struct hd_keys *keys; /* empty: auth is off (credentials are not checked) */
};
struct hd_post_ok {
    char *key;                    /* the object name, ${filename} expanded (malloc'd) */
    char access[HD_SIGV4_AK_MAX]; /* who signed the form ("" anonymous: auth off) */
    uint64_t min_len;             /* content-length-range, inclusive */
    uint64_t max_len;             /* UINT64_MAX: no maximum */
};

/* Checks the form the way AWS does: the key (with ${filename} expanded, in every field), the
 * signature (V2: AWSAccessKeyId, signature = base64 HMAC-SHA1 of the policy field; V4:
 * x-amz-algorithm, x-amz-credential, x-amz-date, x-amz-signature = hex HMAC-SHA256 of it
 * under the scope's signing key), the policy (expiration, then every condition: exact,
 * starts-with, content-length-range; every field but the exempt ones must be named by one),
 * and the key's write permission on the bucket. Returns 0 with *out (release with
 * hd_post_ok_cleanup), or the code to answer with and msg filled (400 for a malformed form or
 * policy, 403 for a failed condition, an expired policy, a bad signature or key). */
int hd_post_check(struct hd_post_form *f, const struct hd_post_in *in, struct hd_post_ok *out,
                  char *msg, size_t msglen);
void hd_post_ok_cleanup(struct hd_post_ok *o);

#endif
