/* Unit tests for common/errors: every project code has its own row (catches a table that
 * drifted from the enum), the rows say what the header promises, errno mapping, fallbacks. */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "common/errors.h"
#include "test/unit/hd_test.h"

/* What errors.h documents for each code (the comment beside the enum). */
static const struct {
    int code;
    int status;
    const char *s3;
} want[] = {
    {HD_EINTERNAL, 500, "InternalError"},
    {HD_EBADREQ, 400, "InvalidRequest"},
    {HD_EBADARG, 400, "InvalidArgument"},
    {HD_ENOSUCHBUCKET, 404, "NoSuchBucket"},
    {HD_ENOSUCHKEY, 404, "NoSuchKey"},
    {HD_EBUCKETEXISTS, 409, "BucketAlreadyOwnedByYou"},
    {HD_EBUCKETNOTEMPTY, 409, "BucketNotEmpty"},
    {HD_EBADBUCKETNAME, 400, "InvalidBucketName"},
    {HD_EKEYTOOLONG, 400, "KeyTooLongError"},
    {HD_EBADKEY, 400, "InvalidArgument"},
    {HD_EBADDIGEST, 400, "BadDigest"},
    {HD_EINVALIDDIGEST, 400, "InvalidDigest"},
    {HD_EBADCHECKSUM, 400, "BadDigest"},
    {HD_EBADSIG, 403, "SignatureDoesNotMatch"},
    {HD_ENOACCESSKEY, 403, "InvalidAccessKeyId"},
    {HD_EACCESS, 403, "AccessDenied"},
    {HD_EEXPIRED, 403, "AccessDenied"},
    {HD_ESKEW, 403, "RequestTimeTooSkewed"},
    {HD_EAUTHHDR, 400, "AuthorizationHeaderMalformed"},
    {HD_EAUTHQUERY, 400, "AuthorizationQueryParametersError"},
    {HD_EMISSINGAUTH, 403, "AccessDenied"},
    {HD_ESHA256MISMATCH, 400, "XAmzContentSHA256Mismatch"},
    {HD_EINCOMPLETEBODY, 400, "IncompleteBody"},
    {HD_EMISSINGLENGTH, 411, "MissingContentLength"},
    {HD_ETOOLARGE, 400, "EntityTooLarge"},
    {HD_ERANGE, 416, "InvalidRange"},
    {HD_EPRECONDITION, 412, "PreconditionFailed"},
    {HD_ENOTMODIFIED, 304, "NotModified"},
    {HD_EMETHOD, 405, "MethodNotAllowed"},
    {HD_ENOTAGSET, 404, "NoSuchTagSet"},
    {HD_ENOBUCKETPOLICY, 404, "NoSuchBucketPolicy"},
    {HD_ENOTIMPL, 501, "NotImplemented"},
    {HD_EMALFORMEDXML, 400, "MalformedXML"},
    {HD_ECHUNK, 400, NULL}, /* InvalidChunkSizeError or InvalidRequest: either is fine */
    {HD_ENOSPACE, 507, "InsufficientStorage"},
    {HD_EUNAVAIL, 503, "ServiceUnavailable"},
    {HD_ENOTFOUND, 404, "NotFound"},
    {HD_EBADHEADER, 400, "InvalidArgument"},
    {HD_EMAXKEYS, 400, "InvalidArgument"},
    {HD_EBADTOKEN, 400, "InvalidArgument"},
    {HD_ENOSUCHUPLOAD, 404, "NoSuchUpload"},
    {HD_EINVALIDPART, 400, "InvalidPart"},
    {HD_EPARTORDER, 400, "InvalidPartOrder"},
    {HD_ETOOSMALL, 400, "EntityTooSmall"},
    {HD_EMETATOOLARGE, 400, "MetadataTooLarge"},
    {HD_ECKVALUE, 400, "InvalidRequest"},
    {HD_ECONFLICT, 409, "ConditionalRequestConflict"},
    {HD_EPARTNUM, 416, "InvalidPartNumber"},
    {HD_EBADPARTNUM, 400, "InvalidArgument"},
    {HD_ERANGEPART, 400, "InvalidRequest"},
    {HD_ESTORAGECLASS, 400, "InvalidStorageClass"},
    {HD_EDATE, 403, "AccessDenied"},
    {HD_EEXPIRESNAN, 403, "AuthorizationQueryParametersError"},
    {HD_EEXPIRESNEG, 403, "AuthorizationQueryParametersError"},
    {HD_EEXPIRESMAX, 403, "AuthorizationQueryParametersError"},
    {HD_ENOTYET, 403, "AccessDenied"},
    {HD_EMAXBUCKETS, 400, "InvalidArgument"},
    {HD_ENOGRANTS, 501, "NotImplemented"},
    {HD_ENOVERSIONING, 501, "NotImplemented"},
    {HD_EANONOVERRIDE, 400, "InvalidRequest"},
    {HD_ECOPYSELF, 400, "InvalidRequest"},
    {HD_ETOKEN, 401, "Unauthorized"},
    {HD_EBADVERSION, 400, "InvalidArgument"},
    {HD_ESSECNA, 400, "InvalidRequest"},
    {HD_EV2AUTHFORM, 400, "InvalidArgument"},
    {HD_EPOLICY, 400, "InvalidPolicyDocument"},
    {HD_EPOSTFORM, 400, "MalformedPOSTRequest"},
    {HD_EPOSTPRE, 400, "MaxPostPreDataLengthExceeded"},
    {HD_ECORSBAD, 400, "BadRequest"},
    {HD_EACLNOTSUPP, 400, "AccessControlListNotSupported"},
    {HD_ECORSDENY, 403, "AccessForbidden"},
};
#define NWANT (sizeof(want) / sizeof(want[0]))

HD_SUITE(errors)
{
    int code;

    /* Project codes never collide with -errno. */
    CHECK(HD_EBASE < -4096);
    CHECK(HD_ELAST <= -4096);
    CHECK(HD_ELAST > HD_EBASE);

    /* Every code from HD_EBASE to HD_ELAST-1 has its own row. */
    for (code = HD_EBASE; code < HD_ELAST; code++) {
        const struct hd_err_info *e = hd_err_info(code);
        CHECK(e != NULL);
        if (!e)
            continue;
        if (e->code != code)
            fprintf(stderr, "  hd_err_info(%d)->code = %d (table misaligned)\n", code, e->code);
        CHECK_EQ_INT(e->code, code);
        CHECK(e->http_status >= 100 && e->http_status <= 599);
        CHECK(e->s3_code != NULL && e->s3_code[0] != '\0');
        CHECK(e->message != NULL && e->message[0] != '\0');
        /* hd_strerror of a project code is a non-empty, stable string */
        CHECK(hd_strerror(code) != NULL && hd_strerror(code)[0] != '\0');
    }

    /* The rows say what the header documents (codes added later are covered by the loop
     * above; add them here too). */
    CHECK((int)NWANT <= HD_ELAST - HD_EBASE);
    for (size_t i = 0; i < NWANT; i++) {
        const struct hd_err_info *e = hd_err_info(want[i].code);
        if (e->http_status != want[i].status || (want[i].s3 && strcmp(e->s3_code, want[i].s3) != 0))
            fprintf(stderr, "  code %d: got %d %s, want %d %s\n", want[i].code, e->http_status,
                    e->s3_code, want[i].status, want[i].s3 ? want[i].s3 : "*");
        CHECK_EQ_INT(e->code, want[i].code);
        CHECK_EQ_INT(e->http_status, want[i].status);
        if (want[i].s3)
            CHECK_EQ_STR(e->s3_code, want[i].s3);
    }

    /* -errno rows. */
    CHECK_EQ_INT(hd_err_info(-ENOENT)->http_status, 404);
    CHECK_EQ_STR(hd_err_info(-ENOENT)->s3_code, "NoSuchKey");
    CHECK_EQ_INT(hd_err_info(-ENOENT)->code, -ENOENT);
    CHECK_EQ_INT(hd_err_info(-ENOSPC)->http_status, 507);
    CHECK_EQ_STR(hd_err_info(-ENOSPC)->s3_code, "InsufficientStorage");
    CHECK_EQ_INT(hd_err_info(-EDQUOT)->http_status, 507);
    CHECK_EQ_INT(hd_err_info(-ENAMETOOLONG)->http_status, 400);
    CHECK_EQ_STR(hd_err_info(-ENAMETOOLONG)->s3_code, "KeyTooLongError");
    CHECK_EQ_INT(hd_err_info(-EINVAL)->http_status, 400);
    CHECK_EQ_INT(hd_err_info(-ETIMEDOUT)->http_status, 503);
    CHECK_EQ_INT(hd_err_info(-ECONNREFUSED)->http_status, 503);

    /* Anything unknown is InternalError 500, never NULL. */
    {
        static const int unknown[] = {-EPERM,  -EIO,    -4095,        -4096,    1,           12345,
                                      INT_MAX, INT_MIN, HD_EBASE - 1, HD_ELAST, HD_ELAST + 1};
        for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
            const struct hd_err_info *e = hd_err_info(unknown[i]);
            CHECK(e != NULL);
            CHECK_EQ_INT(e->http_status, 500);
            CHECK_EQ_STR(e->s3_code, "InternalError");
            CHECK_EQ_INT(e->code, HD_EINTERNAL);
        }
    }

    /* hd_strerror: system text for -errno, the S3 code for project codes, "ok" for 0. */
    CHECK_EQ_STR(hd_strerror(0), "ok");
    CHECK_EQ_STR(hd_strerror(-ENOENT), strerror(ENOENT));
    CHECK_EQ_STR(hd_strerror(-ENOSPC), strerror(ENOSPC));
    CHECK_EQ_STR(hd_strerror(-EACCES), strerror(EACCES));
    CHECK_EQ_STR(hd_strerror(HD_ENOSUCHKEY), "NoSuchKey");
    CHECK_EQ_STR(hd_strerror(HD_ENOSUCHBUCKET), "NoSuchBucket");
    CHECK_EQ_STR(hd_strerror(HD_EBADSIG), "SignatureDoesNotMatch");
    CHECK_EQ_STR(hd_strerror(HD_EINTERNAL), "InternalError");
    CHECK_EQ_STR(hd_strerror(HD_ELAST), "InternalError");
    CHECK(hd_strerror(12345) != NULL);
}
