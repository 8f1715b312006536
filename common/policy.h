/* policy: a bucket policy (S3 PutBucketPolicy), the subset that publishes a bucket. hoard has
 * keys, not IAM accounts, so a policy can say one thing: everyone ("Principal": "*") may read
 * the bucket's objects (s3:GetObject on the resource arn:aws:s3:::B/ and a star: every key) and/or
 * list it (s3:ListBucket on arn:aws:s3:::B). That is what AWS's guides use to publish a dataset now
 * that ACLs are off by default. The document is kept as sent, as the bucket property "policy" (a
 * JSON string, common/bprops.h), and what it grants is read from it where access is decided (the
 * proxy's BMD entry, a target's bucket row).
 *
 *   {"Version": "2012-10-17", "Id": "...",
 *    "Statement": [{"Sid": "...", "Effect": "Allow", "Principal": "*" | {"AWS": "*"},
 *                   "Action": "s3:GetObject" | [...], "Resource": "arn:aws:s3:::B" | [...]}]}
 *
 * Any other statement is refused, so no stored policy is partly unenforced: 501 NotImplemented
 * for what S3 has and hoard does not (Deny, Condition, NotAction/NotPrincipal/NotResource, a
 * principal other than everyone, another action (AWS's finer s3:GetObjectVersion,
 * s3:ListBucketVersions, s3:ListBucketMultipartUploads too: hoard's reads and listings are wider),
 * a grant on a prefix), 400 MalformedPolicy for
 * what S3 refuses too. Pure functions; any thread. */
#ifndef HD_POLICY_H
#define HD_POLICY_H

#include <stddef.h>

#define HD_POLICY_MAX 20480 /* bytes of a document (AWS's limit) */

/* What a policy grants everyone (a bit set). */
#define HD_POLICY_OBJECTS 1 /* s3:GetObject (GetObject, HeadObject) */
#define HD_POLICY_LIST 2    /* s3:ListBucket (the listings and HeadBucket) */

/* Checks doc (len bytes) as the policy of bucket (NULL: any bucket's; the resources are then
 * only checked for their form). 0 with *grants (HD_POLICY_*), or HD_EMALFORMEDPOLICY or
 * HD_ENOTIMPL with the reason in msg. */
int hd_policy_check(const char *bucket, const char *doc, size_t len, int *grants, char *msg,
                    size_t msglen);
/* What a stored policy grants everyone on bucket (0 for one that does not check). */
int hd_policy_grants(const char *bucket, const char *doc);

#endif
