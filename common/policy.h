/* policy: a bucket policy (S3 PutBucketPolicy), the subset that publishes a bucket. hoard has
 * keys, not IAM accounts, so a policy can say one thing: everyone ("Principal": "*") may read
 * the bucket's objects (s3:GetObject on the resource arn:aws:s3:::B/ and a star: every key, or on
 * some keys) and/or
 * list it (s3:ListBucket on arn:aws:s3:::B). That is what AWS's guides use to publish a dataset now
 * that ACLs are off by default. The document is kept as sent, as the bucket property "policy" (a
 * JSON string, common/bprops.h), and what it grants is read from it where access is decided (the
 * proxy's BMD entry, a target's bucket row).
 *
 *   {"Version": "2012-10-17", "Id": "...",
 *    "Statement": [{"Sid": "...", "Effect": "Allow", "Principal": "*" | {"AWS": "*"},
 *                   "Action": "s3:GetObject" | [...], "Resource": "arn:aws:s3:::B" | [...]}]}
 *
 * One Deny is taken too: AWS's "TLS only" statement (Deny everyone "s3:*" on the bucket when
 * {"Bool": {"aws:SecureTransport": "false"}}), which AWS's security guides put beside the public
 * ones. Any other statement is refused, so no stored policy is partly unenforced: 501
 * NotImplemented for what S3 has and hoard does not (another Deny, another Condition,
 * NotAction/NotPrincipal/NotResource, a principal other than everyone, another action (AWS's finer
 * s3:GetObjectVersion, s3:ListBucketVersions, s3:ListBucketMultipartUploads too: hoard's reads and
 * listings are wider), a policy variable), 400 MalformedPolicy for what S3 refuses too. Pure
 * functions; any thread. s3:GetObject may name some objects only: a key, or a prefix (a
 * trailing star); other wildcards are 501. */
#ifndef HD_POLICY_H
#define HD_POLICY_H

#include <stddef.h>

#include <jansson.h>

#include "common/buf.h"

#define HD_POLICY_MAX 20480 /* bytes of a document (AWS's limit) */

/* What a policy grants everyone (a bit set). */
#define HD_POLICY_OBJECTS 1 /* s3:GetObject (GetObject, HeadObject) on every object */
#define HD_POLICY_LIST 2    /* s3:ListBucket (ListObjects and HeadBucket) */
/* s3:GetObject on some objects only: keys (arn:aws:s3:::B/readme.txt) or prefixes
 * (arn:aws:s3:::B/public/ and a star); hd_policy_read lists them */
#define HD_POLICY_SOME_OBJECTS 8
#define HD_POLICY_PUBLIC (HD_POLICY_OBJECTS | HD_POLICY_LIST | HD_POLICY_SOME_OBJECTS)
/* not a grant: AWS's "TLS only" Deny (every action, when aws:SecureTransport is false), which
 * refuses every request to the bucket that did not come over TLS */
#define HD_POLICY_TLS_ONLY 4

/* Checks doc (len bytes) as the policy of bucket (NULL: any bucket's; the resources are then
 * only checked for their form). 0 with *grants (HD_POLICY_*), or HD_EMALFORMEDPOLICY or
 * HD_ENOTIMPL with the reason in msg. */
int hd_policy_check(const char *bucket, const char *doc, size_t len, int *grants, char *msg,
                    size_t msglen);
/* What a stored policy grants everyone on bucket (0 for one that does not check), in one
 * parse; with pats (not NULL), also *pats: the keys and prefixes of its grants of some objects
 * (HD_POLICY_SOME_OBJECTS), a JSON array of strings (a prefix ends in a star) to keep beside
 * the bucket and compare each read with (hd_policy_patterns_match); NULL when there are none
 * or every object is granted. */
int hd_policy_read(const char *bucket, const char *doc, json_t **pats);
/* hd_policy_read without the patterns. */
int hd_policy_grants(const char *bucket, const char *doc);
/* Whether key is one of pats (hd_policy_read): the key itself, or under a prefix. */
int hd_policy_patterns_match(const json_t *pats, const char *key);

/* ---- Block Public Access (S3 PutPublicAccessBlock), the bucket property
 * "public_access_block": {"block_public_acls": b, "ignore_public_acls": b,
 * "block_public_policy": b, "restrict_public_buckets": b} (all four, canonical).
 * block_public_acls refuses calls that ask for a public-read ACL (403); ignore_public_acls
 * makes the public-read state (anonymous_list, anonymous_read) open nothing;
 * block_public_policy refuses a bucket policy that grants anything (403);
 * restrict_public_buckets makes the policy's grants open nothing (common/bprops.c
 * hd_bprops_access). */
#define HD_PAB_MAX 4096 /* bytes of the XML body */
/* The PublicAccessBlockConfiguration body into *out (canonical JSON, malloc'd). 0, or
 * HD_EMALFORMEDXML with the reason in msg. */
int hd_pab_parse_xml(const char *body, size_t len, char **out, char *msg, size_t msglen);
/* Whether v is the canonical property: 0 or HD_EBADARG with the reason. */
int hd_pab_check(const json_t *v, char *err, size_t errlen);
/* The GetPublicAccessBlock answer for the property v. */
void hd_pab_xml(struct hd_buf *b, const json_t *v);
/* Whether the property v (NULL: none) has setting name on. */
int hd_pab_on(const json_t *v, const char *name);

#endif
