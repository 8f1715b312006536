/* sigv2: verifying AWS Signature Version 2 as S3 uses it: the "Authorization: AWS AK:sig"
 * header and presigned URLs (?AWSAccessKeyId=&Expires=&Signature=). Stateless: any
 * thread; the secret lookup callback runs on the caller's thread.
 *
 * Signature = base64(HMAC-SHA1(secret, StringToSign)), where StringToSign is
 *   METHOD "\n" Content-MD5 "\n" Content-Type "\n" Date-or-Expires "\n"
 *   CanonicalizedAmzHeaders CanonicalizedResource
 * The date line is Expires (query form), "" when an x-amz-date header is present, else the
 * Date header. Amz headers: x-amz-* names lowercased, values trimmed, sorted by name,
 * repeats joined with ',' in arrival order, each "name:value\n"; in the query form x-amz-*
 * query parameters count as headers too, and Content-MD5 / Content-Type may come from the
 * query (botocore moves them there when presigning). The resource is the raw path exactly
 * as on the wire (the caller passes "/bucket" + path for virtual-hosted requests), then the
 * S3 sub-resources present in the query (acl, uploadId, response-content-type ...), sorted
 * by name, values percent-decoded: "?acl&uploadId=x".
 *
 * Clients disagree on a few details, so a request that fails the AWS form is also tried
 * in the spellings they use, in the combinations each client uses, and any match passes:
 * sub-resource values as on the wire (s3cmd); "k=" signed as "k" (MinIO); the extra
 * sub-resources botocore and MinIO sign (accelerate, select, retention ...); the Date value
 * kept beside x-amz-date (botocore); a bucket path "/bucket" signed as "/bucket/" (botocore,
 * s3cmd, and AWS's own definition); the first query part signed a second time, in front
 * ("/b/k?uploads?uploads", "/b?list-type=2": botocore 1.29 puts an operation's fixed query
 * into its auth path). Each spelling covers the same request bytes, so nothing left
 * unsigned by one becomes meaningful by another. At most 14 HMACs, only for such requests. */
#ifndef HD_SIGV2_H
#define HD_SIGV2_H

#include <stddef.h>

#include "common/sigv4.h"

struct hd_buf;

#define HD_SIGV2_SIG_LEN 28 /* base64 of a 20-byte HMAC-SHA1 */

/* Verifies a SigV2 request. Returns:
 *   0                verified: out->access_key is set, out->payload = HD_PL_UNSIGNED,
 *                    out->presigned = 1 for the query form; for the header form out->date
 *                    and out->amz_date hold the request time. Region, service, scope,
 *                    signing_key and signature stay empty (SigV2 has none of them).
 *   HD_DECLINED      no SigV2 auth at all: neither an "Authorization: AWS ..." header nor
 *                    AWSAccessKeyId / Signature query parameters (SigV4 or anonymous)
 *   HD_EBADARG       SigV2 mixed with another mechanism (a second Authorization header
 *                    beside the query form, or X-Amz-Algorithm/-Credential/-Signature)
 *   HD_EV2AUTHFORM   header form without the colon of "AWS AK:signature" (AWS: 400
 *                    InvalidArgument)
 *   HD_EAUTHHDR      malformed header form: an empty or bad access key or signature,
 *                    repeated Authorization
 *   HD_EDATE         header form without a valid date: no Date / x-amz-date, a repeated one,
 *                    one hd_date_parse cannot read, or one before 1970 (AWS: 403)
 *   HD_EAUTHQUERY    malformed query form: AWSAccessKeyId, Expires or Signature missing,
 *                    empty or repeated, Expires not a decimal number, Signature not the
 *                    base64 of 20 bytes (after percent-decoding; '+' is a literal plus)
 *   HD_EBADHEADER    Content-MD5 or Content-Type repeated
 *   HD_ESKEW         header form, request time more than 15 minutes away from in->now
 *   HD_EEXPIRED      query form, in->now > Expires (out->expires_at says when)
 *   HD_ENOACCESSKEY  secret_for does not know the key (or its own negative code)
 *   HD_EBADSIG       signature mismatch
 *   -ENOMEM
 * out is zeroed first; out->access_key is set as soon as it is parsed (for error
 * messages). hd_sigv4_verify refuses SigV2 requests (HD_EAUTHQUERY / HD_EAUTHHDR), so a
 * caller accepting both calls this first and hd_sigv4_verify when this returns HD_DECLINED. */
int hd_sigv2_verify(const struct hd_sigv4_in *in, hd_sigv4_secret_fn secret_for, void *ctx,
                    struct hd_sigv4_auth *out);

/* ---- building blocks, exposed for tests and for callers that sign by hand ---- */

/* Appends the AWS-form StringToSign of in to out. expires: NULL for the header form, else
 * the Expires value of the query form. AWSAccessKeyId / Expires / Signature in in->query are
 * neither sub-resources nor amz headers, so the query may hold them or not. Returns 0,
 * HD_EBADHEADER (Content-MD5 or Content-Type repeated) or -ENOMEM. */
int hd_sigv2_string_to_sign(const struct hd_sigv4_in *in, const char *expires, struct hd_buf *out);
/* base64(HMAC-SHA1(secret, sts[0..n))), NUL-terminated. */
void hd_sigv2_sign(const char *secret, const char *sts, size_t n, char out[HD_SIGV2_SIG_LEN + 1]);

#endif
