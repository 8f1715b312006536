/* errors: the project's one vocabulary of failure codes and their single mapping to
 * HTTP status, S3 <Code> and message. Pure data; callable from any thread. */
#ifndef HD_ERRORS_H
#define HD_ERRORS_H

#include <stddef.h>

/* Results of functions that handle a request (nginx's vocabulary), and the rule for who
 * answers it:
 *   HD_OK        done, nothing answered: the caller goes on (or answers);
 *   HD_DONE      the request has been answered: the caller only returns;
 *   HD_AGAIN     the request is parked (suspended); the function runs again when it is
 *                resumed (from on_end) and answers then;
 *   HD_DECLINED  not this function's case (or already so): the caller tries the next way;
 *   negative     an error, nothing answered: the caller answers it (hd_resp_err).
 * A function never both answers and returns a negative code. */
#define HD_DONE 1
#define HD_AGAIN 2
#define HD_DECLINED 3

/* Project codes are negative and below -4096 so they never collide with -errno. */
enum hd_err {
    HD_OK = 0,
    HD_EBASE = -5000,
    HD_EINTERNAL = HD_EBASE, /* 500 InternalError */
    HD_EBADREQ,              /* 400 InvalidRequest */
    HD_EBADARG,              /* 400 InvalidArgument */
    HD_ENOSUCHBUCKET,        /* 404 NoSuchBucket */
    HD_ENOSUCHKEY,           /* 404 NoSuchKey */
    HD_EBUCKETEXISTS,        /* 409 BucketAlreadyOwnedByYou */
    HD_EBUCKETNOTEMPTY,      /* 409 BucketNotEmpty */
    HD_EBADBUCKETNAME,       /* 400 InvalidBucketName */
    HD_EKEYTOOLONG,          /* 400 KeyTooLongError */
    HD_EBADKEY,              /* 400 InvalidArgument (object name) */
    HD_EBADDIGEST,           /* 400 BadDigest */
    HD_EINVALIDDIGEST,       /* 400 InvalidDigest */
    HD_EBADCHECKSUM,         /* 400 BadDigest (x-amz-checksum-* mismatch) */
    HD_EBADSIG,              /* 403 SignatureDoesNotMatch */
    HD_ENOACCESSKEY,         /* 403 InvalidAccessKeyId */
    HD_EACCESS,              /* 403 AccessDenied */
    HD_EEXPIRED,             /* 403 AccessDenied (request has expired) */
    HD_ESKEW,                /* 403 RequestTimeTooSkewed */
    HD_EAUTHHDR,             /* 400 AuthorizationHeaderMalformed */
    HD_EAUTHQUERY,           /* 400 AuthorizationQueryParametersError */
    HD_EMISSINGAUTH,         /* 403 AccessDenied (anonymous) */
    HD_ESHA256MISMATCH,      /* 400 XAmzContentSHA256Mismatch */
    HD_EINCOMPLETEBODY,      /* 400 IncompleteBody */
    HD_EMISSINGLENGTH,       /* 411 MissingContentLength */
    HD_ETOOLARGE,            /* 400 EntityTooLarge */
    HD_ERANGE,               /* 416 InvalidRange */
    HD_EPRECONDITION,        /* 412 PreconditionFailed */
    HD_ENOTMODIFIED,         /* 304 NotModified */
    HD_EMETHOD,              /* 405 MethodNotAllowed */
    HD_ENOTIMPL,             /* 501 NotImplemented */
    HD_EMALFORMEDXML,        /* 400 MalformedXML */
    HD_ECHUNK,               /* 400 InvalidChunkSizeError / malformed aws-chunked */
    HD_ENOSPACE,             /* 507 InsufficientStorage */
    HD_EUNAVAIL,             /* 503 ServiceUnavailable */
    HD_ENOTFOUND,            /* 404 NotFound (native API, no such route) */
    HD_EBADHEADER,           /* 400 InvalidArgument (bad header value) */
    HD_EMAXKEYS,             /* 400 InvalidArgument (max-keys) */
    HD_EBADTOKEN,            /* 400 InvalidArgument (continuation token) */
    HD_ENOSUCHUPLOAD,        /* 404 NoSuchUpload */
    HD_EINVALIDPART,         /* 400 InvalidPart */
    HD_EPARTORDER,           /* 400 InvalidPartOrder */
    HD_ETOOSMALL,            /* 400 EntityTooSmall */
    HD_EMETATOOLARGE,        /* 400 MetadataTooLarge */
    HD_ENOSUCHJOB,           /* 404 NoSuchJob (native API) */
    HD_EGONE,                /* 410 Gone (a decommissioned node asking to join) */
    HD_ENOTARCHIVE,          /* 400 InvalidArchive (archpath on a non-tar or corrupt tar) */
    HD_ENOSUCHMEMBER,        /* 404 NoSuchKey (archpath names no member of the archive) */
    HD_ECKVALUE,             /* 400 InvalidRequest (x-amz-checksum-* value is malformed) */
    HD_ECONFLICT,            /* 409 ConditionalRequestConflict (a write won the race) */
    HD_EPARTNUM,             /* 416 InvalidPartNumber (partNumber past the part count) */
    HD_EBADPARTNUM,          /* 400 InvalidArgument (partNumber not in 1..10000) */
    HD_ERANGEPART,           /* 400 InvalidRequest (Range together with partNumber) */
    HD_ESTORAGECLASS,        /* 400 InvalidStorageClass */
    HD_EDATE,                /* 403 AccessDenied (SigV2: no valid Date or x-amz-date) */
    HD_EEXPIRESNAN,          /* 403 AuthorizationQueryParametersError (X-Amz-Expires) */
    HD_EEXPIRESNEG,          /* 403 AuthorizationQueryParametersError (X-Amz-Expires < 0) */
    HD_EEXPIRESMAX,          /* 403 AuthorizationQueryParametersError (X-Amz-Expires > 7d) */
    HD_ENOTYET,              /* 403 AccessDenied (presigned, dated in the future) */
    HD_EMAXBUCKETS,          /* 400 InvalidArgument (max-buckets) */
    HD_ENOGRANTS,            /* 501 NotImplemented (ACL grants) */
    HD_ENOVERSIONING,        /* 501 NotImplemented (versioning Enabled) */
    HD_EANONOVERRIDE,        /* 400 InvalidRequest (response-* on an unsigned GET) */
    HD_ECOPYSELF,            /* 400 InvalidRequest (CopyObject onto itself, nothing changed) */
    HD_ESLOWDOWN,            /* 503 SlowDown (write-back: too many dirty bytes) */
    HD_ETOKEN,               /* 401 Unauthorized (bearer token invalid or expired) */
    HD_EBADVERSION,          /* 400 InvalidArgument (versionId other than null) */
    HD_ESSECNA,              /* 400 InvalidRequest (SSE-C parameters, object not SSE-C) */
    HD_EV2AUTHFORM,          /* 400 InvalidArgument (SigV2 header without "AK:signature") */
    HD_ETAGCOUNT,            /* 400 BadRequest (more than 10 object tags) */
    HD_ETAGKEYLEN,           /* 400 InvalidTag (a tag key over 128 characters) */
    HD_ETAGVALLEN,           /* 400 InvalidTag (a tag value over 256 characters) */
    HD_ETAGDUP,              /* 400 InvalidTag (one key twice in a Tagging body) */
    HD_ETAGAWS,              /* 400 InvalidTag (a key starting with aws:) */
    HD_ETAGKEY,              /* 400 InvalidTag (an empty key, or not UTF-8 text) */
    HD_ETAGVAL,              /* 400 InvalidTag (a value that is not UTF-8 text) */
    HD_ETAGHEADER,           /* 400 InvalidArgument (x-amz-tagging malformed or repeating a key) */
    HD_EPOLICY,              /* 400 InvalidPolicyDocument (POST Object's policy) */
    HD_EPOSTFORM,            /* 400 MalformedPOSTRequest (POST Object's form) */
    HD_EPOSTPRE,             /* 400 MaxPostPreDataLengthExceeded (POST fields before the file) */
    HD_ECORSBAD,             /* 400 BadRequest (a CORS preflight without Origin or method) */
    HD_EACLNOTSUPP,          /* 400 AccessControlListNotSupported (an ACL the bucket's overrides) */
    HD_ECORSDENY,            /* 403 AccessForbidden (a CORS preflight no rule allows) */
    HD_EMALFORMEDPOLICY,     /* 400 MalformedPolicy (a bucket policy: common/policy.h) */
    /* a bucket configuration hoard never has (GET answers as AWS for a bucket without one) */
    HD_ENOBUCKETPOLICY, /* 404 NoSuchBucketPolicy */
    HD_ENOLIFECYCLE,    /* 404 NoSuchLifecycleConfiguration */
    HD_ENOTAGSET,       /* 404 NoSuchTagSet */
    HD_ENOCORS,         /* 404 NoSuchCORSConfiguration */
    HD_ENOWEBSITE,      /* 404 NoSuchWebsiteConfiguration */
    HD_ENOREPLICATION,  /* 404 ReplicationConfigurationNotFoundError */
    HD_ENOSSECONFIG,    /* 404 ServerSideEncryptionConfigurationNotFoundError */
    HD_ENOOBJECTLOCK,   /* 404 ObjectLockConfigurationNotFoundError */
    HD_ENOPUBLICBLOCK,  /* 404 NoSuchPublicAccessBlockConfiguration */
    HD_ENOOWNERSHIP,    /* 404 OwnershipControlsNotFoundError */
    HD_ELAST
};

struct hd_err_info {
    int code;
    int http_status;
    const char *s3_code;
    const char *message;
};

/* Returns the table row for a project code or -errno (ENOSPC -> 507, ENOENT -> 404 ...).
 * Unknown codes map to InternalError. Never NULL. */
const struct hd_err_info *hd_err_info(int code);
/* Short human string for logs. */
const char *hd_strerror(int code);
/* Writes the printf-formatted reason into err (when err and errlen) and returns code: for
 * checks that answer a code and say why, `return hd_err_fmt(msg, len, HD_EBADARG, ...)`. */
int hd_err_fmt(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
