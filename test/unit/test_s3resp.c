/* Unit tests for common/s3resp: ListObjectsV2 answers (plain and url-encoded), <Error>
 * bodies, multipart answers' fields, ISO 8601 times, and malformed answers. */
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/s3resp.h"
#include "test/unit/hd_test.h"

static const char list_v2[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
    "<Name>b</Name><Prefix></Prefix><KeyCount>3</KeyCount><MaxKeys>2</MaxKeys>"
    "<IsTruncated>true</IsTruncated><EncodingType>url</EncodingType>"
    "<Contents><Key>a%20b%2Bc</Key><LastModified>2009-10-12T17:50:30.123Z</LastModified>"
    "<ETag>&quot;fba9dede5f27731c9771645a39863328&quot;</ETag><Size>434234</Size>"
    "<StorageClass>STANDARD</StorageClass></Contents>"
    "<Contents><Key>%C3%BC/x</Key><ETag>\"abc-3\"</ETag><Size>0</Size></Contents>"
    "<CommonPrefixes><Prefix>dir%2F</Prefix></CommonPrefixes>"
    "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
    "</ListBucketResult>";

#define LIST(text, out) hd_s3resp_parse_list(text, strlen(text), out)
#define ERRB(text, c, m) hd_s3resp_parse_error(text, strlen(text), c, sizeof(c), m, sizeof(m))

HD_SUITE(s3resp)
{
    struct hd_s3_list l;
    char code[64], msg[256];
    int64_t ms;

    CHECK_EQ_INT(hd_s3resp_parse_list(list_v2, sizeof(list_v2) - 1, &l), 0);
    CHECK_EQ_INT(l.nents, 2);
    CHECK_EQ_STR(l.ents[0].name, "a b+c");
    CHECK_EQ_INT(l.ents[0].size, 434234);
    CHECK_EQ_STR(l.ents[0].etag, "fba9dede5f27731c9771645a39863328");
    CHECK_EQ_INT(l.ents[0].mtime_ms, 1255369830123LL);
    CHECK_EQ_STR(l.ents[1].name, "\xc3\xbc/x");
    CHECK_EQ_STR(l.ents[1].etag, "abc-3");
    CHECK_EQ_INT(l.ents[1].mtime_ms, 0);
    CHECK_EQ_INT(l.nprefixes, 1);
    CHECK_EQ_STR(l.prefixes[0], "dir/");
    CHECK(l.truncated);
    CHECK_EQ_STR(l.next_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
    hd_s3_list_cleanup(&l);

    /* an empty, not truncated answer without EncodingType: keys taken as they are */
    CHECK_EQ_INT(LIST("<ListBucketResult><IsTruncated>false</IsTruncated>"
                      "<Contents><Key>a%20b</Key></Contents>"
                      "</ListBucketResult>",
                      &l),
                 0);
    CHECK_EQ_INT(l.nents, 1);
    CHECK_EQ_STR(l.ents[0].name, "a%20b");
    CHECK(!l.truncated && !l.next_token);
    hd_s3_list_cleanup(&l);

    /* malformed: wrong root, Contents without Key, bad Size, invalid key, bad XML */
    CHECK_EQ_INT(LIST("<Error/>", &l), HD_EMALFORMEDXML);
    CHECK(l.nents == 0 && l.ents == NULL);
    CHECK_EQ_INT(LIST("<ListBucketResult><Contents><Size>1</Size></Contents>"
                      "</ListBucketResult>",
                      &l),
                 HD_EMALFORMEDXML);
    CHECK_EQ_INT(LIST("<ListBucketResult><Contents><Key>k</Key><Size>-1</Size>"
                      "</Contents></ListBucketResult>",
                      &l),
                 HD_EMALFORMEDXML);
    CHECK_EQ_INT(LIST("<ListBucketResult><EncodingType>url</EncodingType>"
                      "<Contents><Key>%00</Key></Contents></ListBucketResult>",
                      &l),
                 HD_EMALFORMEDXML);
    CHECK_EQ_INT(LIST("<ListBucketResult>", &l), HD_EMALFORMEDXML);

    CHECK_EQ_INT(ERRB("<Error><Code>AccessDenied</Code><Message>no way</Message>"
                      "<RequestId>1</RequestId></Error>",
                      code, msg),
                 0);
    CHECK_EQ_STR(code, "AccessDenied");
    CHECK_EQ_STR(msg, "no way");
    CHECK_EQ_INT(ERRB("<html/>", code, msg), HD_EMALFORMEDXML);
    CHECK_EQ_STR(code, "");
    CHECK_EQ_STR(msg, "");

    /* multipart answers */
    {
        static const char init[] = "<?xml version=\"1.0\"?><InitiateMultipartUploadResult "
                                   "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                                   "<Bucket>b</Bucket><Key>k</Key><UploadId>VXBsb2Fk-ID</UploadId>"
                                   "</InitiateMultipartUploadResult>";
        static const char done[] = "<CompleteMultipartUploadResult><ETag>&quot;3858f62230ac3c915f3"
                                   "00c664312c11f-9&quot;</ETag></CompleteMultipartUploadResult>";
        char id[16];
        CHECK_EQ_INT(hd_s3resp_parse_field(init, strlen(init), "InitiateMultipartUploadResult",
                                           "UploadId", msg, sizeof(msg)),
                     0);
        CHECK_EQ_STR(msg, "VXBsb2Fk-ID");
        CHECK_EQ_INT(hd_s3resp_parse_field(done, strlen(done), "CompleteMultipartUploadResult",
                                           "ETag", msg, sizeof(msg)),
                     0);
        CHECK_EQ_STR(msg, "\"3858f62230ac3c915f300c664312c11f-9\"");
        /* absent field: "", truncated when long, another root refused */
        CHECK_EQ_INT(hd_s3resp_parse_field(init, strlen(init), "InitiateMultipartUploadResult",
                                           "Nope", msg, sizeof(msg)),
                     0);
        CHECK_EQ_STR(msg, "");
        CHECK_EQ_INT(hd_s3resp_parse_field(init, strlen(init), "InitiateMultipartUploadResult",
                                           "UploadId", id, 4),
                     0);
        CHECK_EQ_STR(id, "VXB");
        CHECK_EQ_INT(hd_s3resp_parse_field(init, strlen(init), "Error", "Code", msg, sizeof(msg)),
                     HD_EMALFORMEDXML);
        CHECK_EQ_INT(hd_s3resp_parse_field("<a", 2, "a", "b", msg, sizeof(msg)), HD_EMALFORMEDXML);
    }

    CHECK_EQ_INT(hd_s3resp_parse_iso8601("1970-01-01T00:00:01Z", &ms), 0);
    CHECK_EQ_INT(ms, 1000);
    CHECK_EQ_INT(hd_s3resp_parse_iso8601("2024-02-29T23:59:59.5Z", &ms), 0);
    CHECK_EQ_INT(ms % 1000, 500);
    CHECK_EQ_INT(hd_s3resp_parse_iso8601("2024-13-01T00:00:00Z", &ms), HD_EBADARG);
    CHECK_EQ_INT(hd_s3resp_parse_iso8601("2024-01-01 00:00:00Z", &ms), HD_EBADARG);
    CHECK_EQ_INT(hd_s3resp_parse_iso8601("2024-01-01T00:00:00+01:00", &ms), HD_EBADARG);
    CHECK_EQ_INT(hd_s3resp_parse_iso8601("2023-02-29T00:00:00Z", &ms), HD_EBADARG); /* no such day */
    CHECK_EQ_INT(hd_s3resp_parse_iso8601("2024-04-31T12:00:00Z", &ms), HD_EBADARG);
}
