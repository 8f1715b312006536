#include "common/errors.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const struct hd_err_info table[] = {
    {HD_EINTERNAL, 500, "InternalError", "We encountered an internal error. Please try again."},
    {HD_EBADREQ, 400, "InvalidRequest", "The request is invalid."},
    {HD_EBADARG, 400, "InvalidArgument", "Invalid argument."},
    {HD_ENOSUCHBUCKET, 404, "NoSuchBucket", "The specified bucket does not exist."},
    {HD_ENOSUCHKEY, 404, "NoSuchKey", "The specified key does not exist."},
    {HD_EBUCKETEXISTS, 409, "BucketAlreadyOwnedByYou",
     "Your previous request to create the named bucket succeeded and you already own it."},
    {HD_EBUCKETNOTEMPTY, 409, "BucketNotEmpty", "The bucket you tried to delete is not empty."},
    {HD_EBADBUCKETNAME, 400, "InvalidBucketName", "The specified bucket is not valid."},
    {HD_EKEYTOOLONG, 400, "KeyTooLongError", "Your key is too long (1024 bytes at most)."},
    {HD_EBADKEY, 400, "InvalidArgument",
     "Object name is not valid (empty, NUL byte, or not UTF-8)."},
    {HD_EBADDIGEST, 400, "BadDigest",
     "The Content-MD5 you specified did not match what we received."},
    {HD_EINVALIDDIGEST, 400, "InvalidDigest", "The Content-MD5 you specified was invalid."},
    {HD_EBADCHECKSUM, 400, "BadDigest",
     "The checksum you specified did not match the calculated checksum."},
    {HD_EBADSIG, 403, "SignatureDoesNotMatch",
     "The request signature we calculated does not match the signature you provided. Check "
     "your key and signing method."},
    {HD_ENOACCESSKEY, 403, "InvalidAccessKeyId",
     "The AWS Access Key Id you provided does not exist in our records."},
    {HD_EACCESS, 403, "AccessDenied", "Access Denied"},
    {HD_EEXPIRED, 403, "AccessDenied", "Request has expired"},
    {HD_ESKEW, 403, "RequestTimeTooSkewed",
     "The difference between the request time and the current time is too large."},
    {HD_EAUTHHDR, 400, "AuthorizationHeaderMalformed", "The authorization header is malformed."},
    {HD_EAUTHQUERY, 400, "AuthorizationQueryParametersError",
     "Error parsing the X-Amz-Credential or other presigned query parameters."},
    {HD_EMISSINGAUTH, 403, "AccessDenied", "Access Denied (request is not signed)"},
    {HD_ESHA256MISMATCH, 400, "XAmzContentSHA256Mismatch",
     "The provided 'x-amz-content-sha256' header does not match what was computed."},
    {HD_EINCOMPLETEBODY, 400, "IncompleteBody",
     "You did not provide the number of bytes specified by the Content-Length HTTP header."},
    {HD_EMISSINGLENGTH, 411, "MissingContentLength",
     "You must provide the Content-Length HTTP header."},
    {HD_ETOOLARGE, 400, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed size."},
    {HD_ERANGE, 416, "InvalidRange", "The requested range is not satisfiable"},
    {HD_EPRECONDITION, 412, "PreconditionFailed",
     "At least one of the pre-conditions you specified did not hold"},
    {HD_ENOTMODIFIED, 304, "NotModified", "Not Modified"},
    {HD_EMETHOD, 405, "MethodNotAllowed",
     "The specified method is not allowed against this resource."},
    {HD_ENOTIMPL, 501, "NotImplemented",
     "A header you provided implies functionality that is not implemented"},
    {HD_EMALFORMEDXML, 400, "MalformedXML",
     "The XML you provided was not well-formed or did not validate against our published schema."},
    {HD_ECHUNK, 400, "InvalidRequest", "Malformed aws-chunked request body."},
    {HD_ENOSPACE, 507, "InsufficientStorage", "Not enough free space on the target's mountpaths."},
    {HD_EUNAVAIL, 503, "ServiceUnavailable", "Service is unavailable. Please retry."},
    {HD_ENOTFOUND, 404, "NotFound", "Not Found"},
    {HD_EBADHEADER, 400, "InvalidArgument", "A header value is not valid."},
    {HD_EMAXKEYS, 400, "InvalidArgument",
     "Argument maxKeys must be an integer between 0 and 2147483647"},
    {HD_EBADTOKEN, 400, "InvalidArgument", "The continuation token provided is incorrect"},
    {HD_ENOSUCHUPLOAD, 404, "NoSuchUpload",
     "The specified multipart upload does not exist. The upload ID may be invalid, or the "
     "upload may have been aborted or completed."},
    {HD_EINVALIDPART, 400, "InvalidPart",
     "One or more of the specified parts could not be found. The part may not have been "
     "uploaded, or the specified entity tag or checksum may not match the part's."},
    {HD_EPARTORDER, 400, "InvalidPartOrder",
     "The list of parts was not in ascending order. Parts must be ordered by part number."},
    {HD_ETOOSMALL, 400, "EntityTooSmall",
     "Your proposed upload is smaller than the minimum allowed object size."},
    {HD_EMETATOOLARGE, 400, "MetadataTooLarge",
     "Your metadata headers exceed the maximum allowed metadata size (2 KiB)."},
    {HD_ENOSUCHJOB, 404, "NoSuchJob", "The specified job does not exist."},
    {HD_EGONE, 410, "Gone", "This node was decommissioned and may not join again."},
    {HD_ENOTARCHIVE, 400, "InvalidArchive",
     "The object is not an uncompressed tar archive, or the archive is corrupt."},
    {HD_ENOSUCHMEMBER, 404, "NoSuchKey", "The archive has no member of that name."},
    {HD_ECKVALUE, 400, "InvalidRequest", "Value for x-amz-checksum header is invalid."},
    {HD_ECONFLICT, 409, "ConditionalRequestConflict",
     "A conflicting conditional operation is currently in progress against this resource. "
     "Please try again."},
    {HD_EPARTNUM, 416, "InvalidPartNumber", "The requested partnumber is not satisfiable"},
    {HD_EBADPARTNUM, 400, "InvalidArgument",
     "Part number must be an integer between 1 and 10000, inclusive"},
    {HD_ERANGEPART, 400, "InvalidRequest",
     "Cannot specify both Range header and partNumber query parameter"},
    {HD_ESTORAGECLASS, 400, "InvalidStorageClass", "The storage class you specified is not valid"},
    {HD_EDATE, 403, "AccessDenied",
     "AWS authentication requires a valid Date or x-amz-date header"},
    {HD_EEXPIRESNAN, 403, "AuthorizationQueryParametersError", "X-Amz-Expires should be a number"},
    {HD_EEXPIRESNEG, 403, "AuthorizationQueryParametersError",
     "X-Amz-Expires must be non-negative"},
    {HD_EEXPIRESMAX, 403, "AuthorizationQueryParametersError",
     "X-Amz-Expires must be less than a week (in seconds); that is, the given X-Amz-Expires must "
     "be less than 604800 seconds"},
    {HD_ENOTYET, 403, "AccessDenied", "Request is not yet valid"},
    {HD_EMAXBUCKETS, 400, "InvalidArgument",
     "Argument max-buckets must be an integer between 1 and 10000."},
    {HD_ENOGRANTS, 501, "NotImplemented",
     "Grants are not supported: hoard keeps no ACLs; access is set by keys (auth.keys) and "
     "bucket properties."},
    {HD_ENOVERSIONING, 501, "NotImplemented",
     "Versioning is not supported: buckets are unversioned."},
    {HD_EANONOVERRIDE, 400, "InvalidRequest",
     "Request specific response headers cannot be used for anonymous GET requests."},
    {HD_ECOPYSELF, 400, "InvalidRequest",
     "This copy request is illegal because it is trying to copy an object to itself without "
     "changing the object's metadata, storage class, website redirect location or encryption "
     "attributes."},
    {HD_ESLOWDOWN, 503, "SlowDown", "Please reduce your request rate."},
    {HD_ETOKEN, 401, "Unauthorized", "The bearer token is invalid or has expired."},
    {HD_EBADVERSION, 400, "InvalidArgument", "Invalid version id specified"},
    {HD_ESSECNA, 400, "InvalidRequest",
     "The encryption parameters are not applicable to this object."},
    {HD_EV2AUTHFORM, 400, "InvalidArgument",
     "AWS authorization header is invalid.  Expected AwsAccessKeyId:signature"},
    {HD_ETAGCOUNT, 400, "BadRequest", "Object tags cannot be greater than 10"},
    {HD_ETAGKEYLEN, 400, "InvalidTag", "The TagKey you have provided is too long, max 128"},
    {HD_ETAGVALLEN, 400, "InvalidTag", "The TagValue you have provided is too long, max 256"},
    {HD_ETAGDUP, 400, "InvalidTag", "Cannot provide multiple Tags with the same key"},
    {HD_ETAGAWS, 400, "InvalidTag", "Your TagKey cannot be prefixed with aws:"},
    {HD_ETAGKEY, 400, "InvalidTag", "The TagKey you have provided is invalid"},
    {HD_ETAGVAL, 400, "InvalidTag", "The TagValue you have provided is invalid"},
    {HD_ETAGHEADER, 400, "InvalidArgument",
     "The header 'x-amz-tagging' shall be encoded as UTF-8 then URLEncoded URL query parameters "
     "without tag name duplicates."},
    {HD_EPOLICY, 400, "InvalidPolicyDocument",
     "The content of the form does not meet the conditions specified in the policy document."},
    {HD_EPOSTFORM, 400, "MalformedPOSTRequest",
     "The body of your POST request is not well-formed multipart/form-data."},
    {HD_EPOSTPRE, 400, "MaxPostPreDataLengthExceeded",
     "Your POST request fields preceding the upload file were too large."},
    {HD_ECORSBAD, 400, "BadRequest", "Insufficient information. Origin request header needed."},
    {HD_EACLNOTSUPP, 400, "AccessControlListNotSupported", "The bucket does not allow ACLs"},
    {HD_ECORSDENY, 403, "AccessForbidden",
     "CORSResponse: This CORS request is not allowed. This is usually because the evalution of "
     "Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers "
     "are not whitelisted by the resource's CORS spec."},
    {HD_EMALFORMEDPOLICY, 400, "MalformedPolicy", "Policies must be valid JSON"},
    {HD_ENOBUCKETPOLICY, 404, "NoSuchBucketPolicy", "The bucket policy does not exist"},
    {HD_ENOLIFECYCLE, 404, "NoSuchLifecycleConfiguration",
     "The lifecycle configuration does not exist"},
    {HD_ENOTAGSET, 404, "NoSuchTagSet", "The TagSet does not exist"},
    {HD_ENOCORS, 404, "NoSuchCORSConfiguration", "The CORS configuration does not exist"},
    {HD_ENOWEBSITE, 404, "NoSuchWebsiteConfiguration",
     "The specified bucket does not have a website configuration"},
    {HD_ENOREPLICATION, 404, "ReplicationConfigurationNotFoundError",
     "The replication configuration was not found"},
    {HD_ENOSSECONFIG, 404, "ServerSideEncryptionConfigurationNotFoundError",
     "The server side encryption configuration was not found"},
    {HD_ENOOBJECTLOCK, 404, "ObjectLockConfigurationNotFoundError",
     "Object Lock configuration does not exist for this bucket"},
    {HD_ENOPUBLICBLOCK, 404, "NoSuchPublicAccessBlockConfiguration",
     "The public access block configuration was not found"},
    {HD_ENOOWNERSHIP, 404, "OwnershipControlsNotFoundError",
     "The bucket ownership controls were not found"},
};

static const struct hd_err_info errno_rows[] = {
    {-ENOENT, 404, "NoSuchKey", "The specified key does not exist."},
    {-ENOSPC, 507, "InsufficientStorage", "Not enough free space on the target's mountpaths."},
    {-EDQUOT, 507, "InsufficientStorage", "Disk quota exceeded on the target."},
    {-ENAMETOOLONG, 400, "KeyTooLongError", "Your key is too long."},
    {-EINVAL, 400, "InvalidArgument", "Invalid argument."},
    {-ETIMEDOUT, 503, "ServiceUnavailable", "Timed out. Please retry."},
    {-ECONNREFUSED, 503, "ServiceUnavailable", "Service is unavailable. Please retry."},
};

const struct hd_err_info *hd_err_info(int code)
{
    size_t i;

    if (code >= HD_EBASE && code < HD_ELAST) {
        const struct hd_err_info *e = &table[code - HD_EBASE];
        if (e->code == code)
            return e;
    }
    for (i = 0; i < sizeof(errno_rows) / sizeof(errno_rows[0]); i++)
        if (errno_rows[i].code == code)
            return &errno_rows[i];
    return &table[0];
}

const char *hd_strerror(int code)
{
    if (code < 0 && code > -4096)
        return strerror(-code);
    if (code == 0)
        return "ok";
    return hd_err_info(code)->s3_code;
}

int hd_err_fmt(char *err, size_t errlen, int code, const char *fmt, ...)
{
    va_list ap;

    if (err && errlen) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}
