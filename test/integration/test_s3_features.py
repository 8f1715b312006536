"""The rest of docs/s3-compatibility.md on a standalone target and through a cluster proxy:
CopyObject, DeleteObjects, ListObjectVersions, SigV2 (presigned and header), anonymous-read
buckets, per-key permissions, virtual-host addressing, rclone; the proxy's s3.redirect mode."""
import datetime
import json
import os
import shutil
import subprocess
import time
import urllib.parse

import botocore.exceptions
import pytest
import requests

import helpers
from conftest import (ACCESS_KEY, CLUSTER_KEYS, PERM_BUCKETS, PERM_TAG, S3_DOMAIN, SECRET_KEY,
                      _empty_bucket, _stop_nodes, start_cluster)
from helpers import SigV4Requests, check_s3_error, client_error, from_requests, md5_hex, pattern_bytes

# every test using `endpoint` runs against a standalone target and through a cluster proxy
ENDPOINTS = ("target", "proxy")


# ---------------------------------------------------------------- CopyObject

def test_copy_object(endpoint, s3, bucket):
    """Every destination is owned by another target than the source's (through a proxy)."""
    other = helpers.unique_bucket_name("dst")
    s3.create_bucket(Bucket=other)
    src = (bucket, "src/ob j+1")
    copy1 = helpers.placed_key(endpoint, bucket, "copy1", src, same=False)
    copy2 = helpers.placed_key(endpoint, other, "copy2", src, same=False)
    copy3 = helpers.placed_key(endpoint, bucket, "copy3", src, same=False)
    try:
        data = pattern_bytes(300000, seed=41)
        s3.put_object(Bucket=bucket, Key="src/ob j+1", Body=data, ContentType="text/x-src",
                      Metadata={"a": "1"})
        # same bucket, metadata copied
        r = s3.copy_object(Bucket=bucket, Key=copy1,
                           CopySource={"Bucket": bucket, "Key": "src/ob j+1"})
        assert r["CopyObjectResult"]["ETag"] == '"%s"' % md5_hex(data)
        h = s3.head_object(Bucket=bucket, Key=copy1)
        assert h["Metadata"] == {"a": "1"} and h["ContentType"] == "text/x-src"
        assert s3.get_object(Bucket=bucket, Key=copy1)["Body"].read() == data
        # other bucket, metadata replaced
        s3.copy_object(Bucket=other, Key=copy2, CopySource={"Bucket": bucket,
                                                            "Key": "src/ob j+1"},
                       MetadataDirective="REPLACE", Metadata={"b": "2"},
                       ContentType="text/x-new")
        h = s3.head_object(Bucket=other, Key=copy2)
        assert h["Metadata"] == {"b": "2"} and h["ContentType"] == "text/x-new"
        assert s3.get_object(Bucket=other, Key=copy2)["Body"].read() == data
        # the source is untouched
        assert s3.get_object(Bucket=bucket, Key="src/ob j+1")["Body"].read() == data
        # conditional copies
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            s3.copy_object(Bucket=bucket, Key=copy3,
                           CopySource={"Bucket": bucket, "Key": "src/ob j+1"},
                           CopySourceIfMatch='"%s"' % ("0" * 32))
        assert client_error(ei)[:2] == (412, "PreconditionFailed")
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            s3.copy_object(Bucket=bucket, Key=copy3,
                           CopySource={"Bucket": bucket, "Key": "src/ob j+1"},
                           CopySourceIfNoneMatch='"%s"' % md5_hex(data))
        assert client_error(ei)[:2] == (412, "PreconditionFailed")
        s3.copy_object(Bucket=bucket, Key=copy3, CopySource={"Bucket": bucket,
                                                             "Key": "src/ob j+1"},
                       CopySourceIfMatch='"%s"' % md5_hex(data))
        # missing source key / bucket
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            s3.copy_object(Bucket=bucket, Key="x", CopySource={"Bucket": bucket, "Key": "nope"})
        assert client_error(ei)[:2] == (404, "NoSuchKey")
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            s3.copy_object(Bucket=bucket, Key="x",
                           CopySource={"Bucket": helpers.unique_bucket_name("gone"), "Key": "k"})
        assert client_error(ei)[:2] == (404, "NoSuchBucket")
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
        assert keys == sorted([copy1, copy3, "src/ob j+1"])
    finally:
        for o in s3.list_objects_v2(Bucket=other).get("Contents", []):
            s3.delete_object(Bucket=other, Key=o["Key"])
        s3.delete_bucket(Bucket=other)


def test_copy_object_same_owner(endpoint, s3, bucket):
    """A copy whose destination has the source's owner (through a proxy: relayed to that
    target, which copies locally), with metadata REPLACE and a copy-source conditional."""
    data = pattern_bytes(70000, seed=43)
    s3.put_object(Bucket=bucket, Key="same/src", Body=data, Metadata={"a": "1"})
    dst = helpers.placed_key(endpoint, bucket, "same/dst", (bucket, "same/src"), same=True)
    r = s3.copy_object(Bucket=bucket, Key=dst, CopySource={"Bucket": bucket, "Key": "same/src"},
                       MetadataDirective="REPLACE", Metadata={"c": "3"},
                       CopySourceIfMatch='"%s"' % md5_hex(data))
    assert r["CopyObjectResult"]["ETag"] == '"%s"' % md5_hex(data)
    g = s3.get_object(Bucket=bucket, Key=dst)
    assert g["Body"].read() == data and g["Metadata"] == {"c": "3"}
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        s3.copy_object(Bucket=bucket, Key=dst, CopySource={"Bucket": bucket, "Key": "same/src"},
                       CopySourceIfNoneMatch='"%s"' % md5_hex(data))
    assert client_error(ei)[:2] == (412, "PreconditionFailed")


@pytest.mark.parametrize("same", [True, False], ids=["same-owner", "other-owner"])
def test_copy_source_if_modified_since(endpoint, s3, bucket, same):
    """x-amz-copy-source-if-modified-since / -if-unmodified-since on CopyObject and
    UploadPartCopy, whether the source is on the destination's target or not: a date after
    the source's Last-Modified fails modified-since (412, not 304), one before it fails
    unmodified-since; the copy happens otherwise."""
    s3.put_object(Bucket=bucket, Key="ims/src", Body=b"dated source")
    lm = s3.head_object(Bucket=bucket, Key="ims/src")["LastModified"]
    later, earlier = lm + datetime.timedelta(days=1), lm - datetime.timedelta(days=1)
    dst = helpers.placed_key(endpoint, bucket, "ims/dst", (bucket, "ims/src"), same=same)
    src = {"Bucket": bucket, "Key": "ims/src"}
    for kw in ({"CopySourceIfModifiedSince": later},
               {"CopySourceIfUnmodifiedSince": earlier}):
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            s3.copy_object(Bucket=bucket, Key=dst, CopySource=src, **kw)
        assert client_error(ei)[:2] == (412, "PreconditionFailed"), kw
    with pytest.raises(botocore.exceptions.ClientError):
        s3.head_object(Bucket=bucket, Key=dst)
    s3.copy_object(Bucket=bucket, Key=dst, CopySource=src, CopySourceIfModifiedSince=earlier,
                   CopySourceIfUnmodifiedSince=later)
    assert s3.get_object(Bucket=bucket, Key=dst)["Body"].read() == b"dated source"
    up = s3.create_multipart_upload(Bucket=bucket, Key=dst)["UploadId"]
    try:
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            s3.upload_part_copy(Bucket=bucket, Key=dst, UploadId=up, PartNumber=1,
                                CopySource=src, CopySourceIfModifiedSince=later)
        assert client_error(ei)[:2] == (412, "PreconditionFailed")
        s3.upload_part_copy(Bucket=bucket, Key=dst, UploadId=up, PartNumber=1, CopySource=src,
                            CopySourceIfModifiedSince=earlier)
    finally:
        s3.abort_multipart_upload(Bucket=bucket, Key=dst, UploadId=up)


# ---------------------------------------------------------------- DeleteObjects

def test_object_tagging_and_aws_cli_copy(aws2, raw, s3, bucket, tmp_path):
    """Object tags (the calls themselves: test_s3_tagging.py) beside the subresources that stay
    501, and aws CLI v2's copies, which read the source's tags (GetObjectTagging) and give them
    to the copy: a multipart copy (objects over 8 MiB) with x-amz-tagging at
    CreateMultipartUpload or PutObjectTagging afterwards."""
    s3.put_object(Bucket=bucket, Key="tags/one", Body=b"x")
    assert s3.get_object_tagging(Bucket=bucket, Key="tags/one")["TagSet"] == []
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        s3.get_object_tagging(Bucket=bucket, Key="tags/none")
    assert client_error(ei)[:2] == (404, "NoSuchKey")
    # another unsupported subresource beside ?tagging, or ?attributes with another method or
    # on the bucket, is 501 (never a PutObject, a DeleteObject or a listing)
    for method, path in (("GET", "/%s/tags/one?tagging&torrent"), ("PUT", "/%s/tags/one?attributes"),
                         ("DELETE", "/%s/tags/one?attributes"), ("GET", "/%s?attributes")):
        r = raw.request(method, path % bucket, body=b"overwritten?" if method == "PUT" else b"")
        assert r.status == 501, (method, path, r.status, r.body[:300])
    assert s3.get_object(Bucket=bucket, Key="tags/one")["Body"].read() == b"x"
    body = pattern_bytes(9 * 1024 * 1024 + 7)
    src = tmp_path / "big"
    src.write_bytes(body)
    aws2("s3", "cp", str(src), "s3://%s/tags/big-src" % bucket)
    s3.put_object_tagging(Bucket=bucket, Key="tags/big-src",
                          Tagging={"TagSet": [{"Key": "owner", "Value": "ml team"},
                                              {"Key": "tier", "Value": "hot"}]})
    aws2("s3", "cp", "s3://%s/tags/big-src" % bucket, "s3://%s/tags/big-dst" % bucket)
    assert s3.get_object(Bucket=bucket, Key="tags/big-dst")["Body"].read() == body
    got = s3.get_object_tagging(Bucket=bucket, Key="tags/big-dst")["TagSet"]
    assert got == [{"Key": "owner", "Value": "ml team"}, {"Key": "tier", "Value": "hot"}], got
    s3.put_object_tagging(Bucket=bucket, Key="tags/one",
                          Tagging={"TagSet": [{"Key": "small", "Value": "1"}]})
    aws2("s3", "cp", "s3://%s/tags/one" % bucket, "s3://%s/tags/one-copy" % bucket)
    assert s3.get_object_tagging(Bucket=bucket, Key="tags/one-copy")["TagSet"] == [
        {"Key": "small", "Value": "1"}]


def test_delete_objects(s3, bucket):
    keys = ["d/%d" % i for i in range(6)] + ["spé cial&<>"]
    for k in keys:
        s3.put_object(Bucket=bucket, Key=k, Body=k.encode())
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[:4]] +
                                                 [{"Key": "never-existed"}]})
    assert sorted(d["Key"] for d in r.get("Deleted", [])) == sorted(keys[:4] + ["never-existed"])
    assert r.get("Errors", []) == []
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[4:]],
                                                 "Quiet": True})
    assert r.get("Deleted", []) == [] and r.get("Errors", []) == []
    assert s3.list_objects_v2(Bucket=bucket)["KeyCount"] == 0


def test_delete_objects_limits(endpoint, raw, bucket):
    body = ("<Delete>%s</Delete>" % "".join("<Object><Key>k%d</Key></Object>" % i
                                            for i in range(1001))).encode()
    r = raw.request("POST", "/%s?delete" % bucket, body=body,
                    headers={"Content-MD5": helpers.md5_b64(body)})
    check_s3_error(r, 400, "MalformedXML")
    r = raw.request("POST", "/%s?delete" % bucket, body=b"<Delete><Object>",
                    headers={"Content-MD5": helpers.md5_b64(b"<Delete><Object>")})
    check_s3_error(r, 400, "MalformedXML")


PYENV_DELETE = r'''
import json, os
import boto3
from botocore.config import Config
s3 = boto3.client("s3", endpoint_url=os.environ["EP"], region_name="us-east-1",
                  aws_access_key_id=os.environ["AK"], aws_secret_access_key=os.environ["SK"],
                  config=Config(s3={"addressing_style": "path"}, retries={"total_max_attempts": 1}))
b = os.environ["BUCKET"]
for i in range(3):
    s3.put_object(Bucket=b, Key="k%d" % i, Body=b"x")
r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "k%d" % i} for i in range(3)]})
left = s3.list_objects_v2(Bucket=b).get("KeyCount")
print(json.dumps({"deleted": sorted(d["Key"] for d in r.get("Deleted", [])), "left": left}))
'''


def test_delete_objects_pyenv_botocore(pyenv_python, endpoint, bucket):
    """botocore >= 1.36 sends DeleteObjects with x-amz-checksum-crc32 and no Content-MD5."""
    p = helpers.run_pyenv(pyenv_python, PYENV_DELETE, {
        "EP": endpoint.url, "AK": endpoint.access_key, "SK": endpoint.secret_key, "BUCKET": bucket})
    assert p.returncode == 0, p.stderr[-3000:]
    assert json.loads(p.stdout.strip().splitlines()[-1]) == {"deleted": ["k0", "k1", "k2"],
                                                             "left": 0}


# ---------------------------------------------------------------- ListObjectVersions

def test_list_object_versions(s3, bucket):
    keys = ["a", "b/1", "b/2", "c", "d"]
    for k in keys:
        s3.put_object(Bucket=bucket, Key=k, Body=k.encode())
    r = s3.list_object_versions(Bucket=bucket)
    vs = r["Versions"]
    assert [v["Key"] for v in vs] == keys
    assert all(v["VersionId"] == "null" and v["IsLatest"] is True for v in vs)
    assert all(v["ETag"] == '"%s"' % md5_hex(v["Key"].encode()) for v in vs)
    seen, marker = [], None
    for _ in range(10):
        kw = {"Bucket": bucket, "MaxKeys": 2}
        if marker:
            kw["KeyMarker"] = marker
        r = s3.list_object_versions(**kw)
        seen += [v["Key"] for v in r.get("Versions", [])]
        if not r["IsTruncated"]:
            break
        marker = r["NextKeyMarker"]
    assert seen == keys
    r = s3.list_object_versions(Bucket=bucket, Prefix="b/")
    assert [v["Key"] for v in r["Versions"]] == ["b/1", "b/2"]


def test_version_ids(raw, s3, bucket):
    """Every object is version "null": versionId=null reads, copies and deletes the object;
    any other versionId (of the object, a copy source or a DeleteObjects entry) is AWS's 400
    InvalidArgument "Invalid version id specified" and touches nothing (it used to be
    ignored, so deleting an "old version" deleted the current object)."""
    s3.put_object(Bucket=bucket, Key="v", Body=b"current")
    other = "3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY"
    for method in ("GET", "DELETE"):
        r = raw.request(method, "/%s/v?versionId=%s" % (bucket, urllib.parse.quote(other, "")))
        err = check_s3_error(r, 400, "InvalidArgument")
        assert err["Message"] == "Invalid version id specified"
        assert err.get("ArgumentName") == "versionId" and err.get("ArgumentValue") == other
    r = raw.request("GET", "/%s/v?versionId=" % bucket)
    assert check_s3_error(r, 400, "InvalidArgument")["Message"] == \
        "Version id cannot be the empty string"
    assert raw.request("HEAD", "/%s/v?versionId=%s" % (bucket, other)).status == 400
    for call in (lambda: s3.get_object(Bucket=bucket, Key="v", VersionId=other),
                 lambda: s3.copy_object(Bucket=bucket, Key="v2", CopySource={
                     "Bucket": bucket, "Key": "v", "VersionId": other})):
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            call()
        assert client_error(ei)[:2] == (400, "InvalidArgument")
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "v", "VersionId": other}]})
    assert not r.get("Deleted") and r["Errors"][0]["Code"] == "InvalidArgument"
    assert r["Errors"][0]["VersionId"] == other
    assert s3.get_object(Bucket=bucket, Key="v", VersionId="null")["Body"].read() == b"current"
    s3.copy_object(Bucket=bucket, Key="v2", CopySource={"Bucket": bucket, "Key": "v",
                                                         "VersionId": "null"})
    assert s3.get_object(Bucket=bucket, Key="v2")["Body"].read() == b"current"
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "v2", "VersionId": "null"}]})
    assert r["Deleted"] == [{"Key": "v2", "VersionId": "null"}]
    s3.delete_object(Bucket=bucket, Key="v", VersionId="null")
    assert not s3.list_objects_v2(Bucket=bucket).get("Contents")


# ---------------------------------------------------------------- SigV2

def test_sigv2_presigned_urls(endpoint, bucket, s3):
    s3.put_object(Bucket=bucket, Key="v2 key+1", Body=b"sigv2 body")
    v2 = helpers.boto3_client(endpoint, signature_version="s3")
    url = v2.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "v2 key+1"},
                                    ExpiresIn=300)
    assert "AWSAccessKeyId=" in url and "Signature=" in url, url
    r = requests.get(url, timeout=10)
    assert r.status_code == 200 and r.content == b"sigv2 body"
    # tampered signature, and an expired URL
    q = urllib.parse.urlsplit(url)
    params = urllib.parse.parse_qs(q.query)
    params["Signature"] = ["AAAAAAAAAAAAAAAAAAAAAAAAAAA="]
    bad = q._replace(query=urllib.parse.urlencode({k: v[0] for k, v in params.items()}))
    check_s3_error(from_requests(requests.get(urllib.parse.urlunsplit(bad), timeout=10)), 403,
                   "SignatureDoesNotMatch")
    params = urllib.parse.parse_qs(q.query)
    params["Expires"] = [str(int(time.time()) - 10)]
    old = q._replace(query=urllib.parse.urlencode({k: v[0] for k, v in params.items()}))
    r = requests.get(urllib.parse.urlunsplit(old), timeout=10)
    assert r.status_code == 403 and r.content != b"sigv2 body"


def test_sigv2_header_auth(endpoint, bucket):
    v2 = helpers.boto3_client(endpoint, signature_version="s3")
    v2.put_object(Bucket=bucket, Key="v2h", Body=b"header signed v2", Metadata={"m": "1"})
    g = v2.get_object(Bucket=bucket, Key="v2h")
    assert g["Body"].read() == b"header signed v2" and g["Metadata"] == {"m": "1"}
    assert [o["Key"] for o in v2.list_objects(Bucket=bucket)["Contents"]] == ["v2h"]
    bad = helpers.boto3_client(endpoint, secret_key="wrong", signature_version="s3")
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        bad.get_object(Bucket=bucket, Key="v2h")
    assert client_error(ei)[:2] == (403, "SignatureDoesNotMatch")


def test_aws_cli_v1_presign_sigv2(aws1, s3, bucket):
    s3.put_object(Bucket=bucket, Key="pre1", Body=b"v1 presign")
    url = aws1("s3", "presign", "s3://%s/pre1" % bucket).stdout.decode().strip()
    r = requests.get(url, timeout=10)
    assert r.status_code == 200 and r.content == b"v1 presign", (url, r.content[:300])


def test_aws_cli_v2_presign(aws2, s3, bucket):
    s3.put_object(Bucket=bucket, Key="pre2", Body=b"v2 presign")
    url = aws2("s3", "presign", "s3://%s/pre2" % bucket).stdout.decode().strip()
    assert "X-Amz-Signature=" in url, url
    r = requests.get(url, timeout=10)
    assert r.status_code == 200 and r.content == b"v2 presign", (url, r.content[:300])


# ---------------------------------------------------------------- anonymous read

def _props(endpoint, bucket, body):
    return requests.patch("%s/v1/buckets/%s" % (endpoint.url, bucket), data=body, timeout=10,
                          auth=SigV4Requests(endpoint.access_key, endpoint.secret_key))


def test_anonymous_read_bucket(endpoint, raw, s3, bucket):
    s3.put_object(Bucket=bucket, Key="pub/obj", Body=b"public bytes")
    assert raw.request("GET", "/%s/pub/obj" % bucket, sign=False).status == 403
    r = _props(endpoint, bucket, b'{"anonymous_read": true}')
    assert r.status_code == 200, r.content
    info = requests.get("%s/v1/buckets/%s?props" % (endpoint.url, bucket), timeout=10,
                        auth=SigV4Requests(endpoint.access_key, endpoint.secret_key)).json()
    assert info["name"] == bucket and info["props"] == {"anonymous_read": True}, info
    try:
        r = raw.request("GET", "/%s/pub/obj" % bucket, sign=False)
        assert r.status == 200 and r.body == b"public bytes", r
        assert raw.request("HEAD", "/%s/pub/obj" % bucket, sign=False).status == 200
        r = raw.request("GET", "/%s?list-type=2" % bucket, sign=False)
        assert r.status == 200 and b"<Key>pub/obj</Key>" in r.body, r
        r = requests.get("%s/%s/pub/obj" % (endpoint.url, bucket), timeout=10)  # curl-like
        assert r.status_code == 200 and r.content == b"public bytes"
        # writes still need a key
        check_s3_error(raw.request("PUT", "/%s/pub/new" % bucket, body=b"x", sign=False), 403,
                       "AccessDenied")
        check_s3_error(raw.request("DELETE", "/%s/pub/obj" % bucket, sign=False), 403,
                       "AccessDenied")
        check_s3_error(raw.request("POST", "/%s/pub/obj?uploads" % bucket, sign=False), 403,
                       "AccessDenied")
        # a bad signature is still refused, not downgraded to anonymous
        check_s3_error(raw.request("GET", "/%s/pub/obj" % bucket, secret_key="wrong"), 403,
                       "SignatureDoesNotMatch")
        # listing all buckets is not anonymous
        check_s3_error(raw.request("GET", "/", sign=False), 403, "AccessDenied")
        # the data and the listing, not the settings or summaries
        for q in ("props", "summary"):
            r = requests.get("%s/v1/buckets/%s?%s" % (endpoint.url, bucket, q), timeout=10)
            assert r.status_code == 403, (q, r.status_code, r.text)
        if endpoint.kind == "proxy":  # AIStore's Bucket.info() and summary-bck
            r = requests.head("%s/v1/buckets/%s?provider=ais&presence=2" % (endpoint.url, bucket),
                              timeout=10)
            assert r.status_code == 403 and "ais-bucket-summ" not in r.headers, r.headers
            r = requests.head("%s/v1/buckets/%s?provider=ais&presence=1" % (endpoint.url, bucket),
                              timeout=10)
            assert r.status_code == 200, r.headers
            r = requests.get("%s/v1/buckets/%s" % (endpoint.url, bucket), timeout=10,
                             json={"action": "summary-bck", "value": {}})
            assert r.status_code == 403, r.text
    finally:
        assert _props(endpoint, bucket, b'{"anonymous_read": false}').status_code == 200
    check_s3_error(raw.request("GET", "/%s/pub/obj" % bucket, sign=False), 403, "AccessDenied")
    info = requests.get("%s/v1/buckets/%s?props" % (endpoint.url, bucket), timeout=10,
                        auth=SigV4Requests(endpoint.access_key, endpoint.secret_key)).json()
    assert info["props"] == {"anonymous_read": False}, info
    assert s3.get_object(Bucket=bucket, Key="pub/obj")["Body"].read() == b"public bytes"


# What an unsigned caller may ask of a public bucket: the reads its route names (AWS's READ
# grant: GetObject, HeadObject, the listings, HeadBucket), whatever other parameters come along
_PUBLIC_CALLS = [("GET", "/{b}/pub/obj"), ("HEAD", "/{b}/pub/obj"),
                 ("GET", "/{b}/pub/obj?x-id=GetObject"), ("GET", "/{b}/pub/obj?partNumber=1"),
                 ("GET", "/{b}?list-type=2&prefix=pub/"), ("GET", "/{b}"), ("HEAD", "/{b}"),
                 ("GET", "/{b}?versions"), ("GET", "/{b}?uploads"),
                 # extra names ride along without naming another call on the targets
                 ("GET", "/{b}?uploads&summary"), ("GET", "/{b}?uploads&props&prefix=pub%2F"),
                 ("GET", "/v1/objects/{b}/pub/obj"), ("HEAD", "/v1/objects/{b}/pub/obj"),
                 ("GET", "/v1/buckets/{b}"), ("HEAD", "/v1/buckets/{b}")]
# and nothing else: every setting, every call hoard does not have, every native summary
_PRIVATE_CALLS = [("GET", "/{b}?acl"), ("GET", "/{b}?tagging"), ("GET", "/{b}?cors"),
                  ("GET", "/{b}?lifecycle"), ("GET", "/{b}?location"), ("GET", "/{b}?versioning"),
                  ("GET", "/{b}?policy"), ("GET", "/{b}?policyStatus"), ("GET", "/{b}?logging"),
                  ("GET", "/{b}?encryption"), ("GET", "/{b}?website"), ("GET", "/{b}?select"),
                  ("GET", "/{b}/pub/obj?acl"), ("GET", "/{b}/pub/obj?tagging"),
                  ("GET", "/{b}/pub/obj?attributes"), ("GET", "/{b}/pub/obj?uploadId=x"),
                  ("GET", "/{b}/pub/obj?restore"), ("GET", "/{b}/pub/obj?torrent"),
                  ("GET", "/{b}/pub/obj?retention"), ("HEAD", "/{b}/pub/obj?acl"),
                  ("GET", "/v1/objects/{b}/pub/obj?uploadId=x&partNumber=1"),
                  ("GET", "/v1/buckets/{b}?props"), ("GET", "/v1/buckets/{b}?summary"),
                  ("GET", "/v1/buckets/{b}?writeback")]


def test_public_bucket_allows_only_reads(endpoint, raw, s3, bucket):
    s3.put_object(Bucket=bucket, Key="pub/obj", Body=b"public bytes")
    private = list(_PRIVATE_CALLS)
    if endpoint.kind == "target":  # the upstream's listing, for proxies
        private.append(("GET", "/v1/buckets/{b}?upstream"))
    else:  # AIStore's Bucket.info(): a summary
        private.append(("HEAD", "/v1/buckets/{b}?provider=ais&presence=2"))
    assert _props(endpoint, bucket, b'{"anonymous_read": true}').status_code == 200
    try:
        for method, path in _PUBLIC_CALLS:
            r = raw.request(method, path.format(b=bucket), sign=False)
            assert r.status in (200, 206, 307), (method, path, r.status, r.body[:300])
            if "uploads" in path:
                assert b"<ListMultipartUploadsResult" in r.body, (path, r.body[:300])
        for method, path in private:
            r = raw.request(method, path.format(b=bucket), sign=False)
            assert r.status == 403, (method, path, r.status, r.body[:300])
            if method == "GET":
                assert b"AccessDenied" in r.body, (path, r.body[:300])
    finally:
        assert _props(endpoint, bucket, b'{"anonymous_read": false}').status_code == 200
    for method, path in _PUBLIC_CALLS:  # private again
        assert raw.request(method, path.format(b=bucket), sign=False).status == 403, path


def test_public_list_bucket_lists_on_both_apis(endpoint, raw, s3, bucket):
    """A public-read bucket ACL (anonymous_list) opens its listings, on the native API as on
    S3, and not its objects."""
    s3.put_object(Bucket=bucket, Key="pub/obj", Body=b"public bytes")
    s3.put_bucket_acl(Bucket=bucket, ACL="public-read")
    try:
        r = raw.request("GET", "/%s?list-type=2" % bucket, sign=False)
        assert r.status == 200 and b"<Key>pub/obj</Key>" in r.body, r
        r = raw.request("GET", "/v1/buckets/%s" % bucket, sign=False)
        assert r.status == 200 and b"pub/obj" in r.body, (r.status, r.body[:300])
        assert raw.request("HEAD", "/v1/buckets/%s" % bucket, sign=False).status == 200
        for path in ("/%s/pub/obj", "/v1/objects/%s/pub/obj", "/%s?acl", "/v1/buckets/%s?props"):
            r = raw.request("GET", path % bucket, sign=False)
            assert r.status == 403, (path, r.status, r.body[:300])
    finally:
        s3.put_bucket_acl(Bucket=bucket, ACL="private")
    assert raw.request("GET", "/v1/buckets/%s" % bucket, sign=False).status == 403


@pytest.mark.parametrize("body", [b"not json", b'{"anonymous_read": "yes"}', b'{"bogus": 1}',
                                  b"[]"])
def test_bucket_props_bad_body(endpoint, bucket, body):
    helpers.check_json_error(_props(endpoint, bucket, body), 400, "InvalidArgument")


def test_bucket_props_missing_bucket(endpoint):
    helpers.check_json_error(_props(endpoint, helpers.unique_bucket_name("nob"),
                                    b'{"anonymous_read": true}'), 404, "NoSuchBucket")


# ---------------------------------------------------------------- per-key permissions

@pytest.fixture
def perm_server(endpoint, target_factory):
    """A server whose auth.keys are conftest.CLUSTER_KEYS (admin AKIDTEST, read-only AKRO,
    AKMIX with rules for PERM_BUCKETS rw/ro): a fresh target, or the session cluster's proxy
    (the proxy authorises; targets trust its signature). The PERM_BUCKETS are removed after."""
    srv = endpoint if endpoint.kind == "proxy" else target_factory("perms", auth_keys=CLUSTER_KEYS)
    yield srv
    admin = helpers.boto3_client(srv)
    for name in PERM_BUCKETS.values():
        _empty_bucket(admin, name)


def test_key_permissions(perm_server):
    t = perm_server
    rw, ro_b, none = PERM_BUCKETS["rw"], PERM_BUCKETS["ro"], PERM_BUCKETS["none"]
    admin = helpers.boto3_client(t)
    ro = helpers.boto3_client(t, access_key="AKRO", secret_key="secretRO")
    mix = helpers.boto3_client(t, access_key="AKMIX", secret_key="secretMIX")
    for b in (rw, ro_b, none):
        admin.create_bucket(Bucket=b)
        admin.put_object(Bucket=b, Key="seed", Body=b"seed-" + b.encode())

    def denied(call):
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            call()
        assert client_error(ei)[:2] == (403, "AccessDenied")

    # read-only key: reads everywhere, no writes
    assert ro.get_object(Bucket=none, Key="seed")["Body"].read() == b"seed-" + none.encode()
    assert ro.list_objects_v2(Bucket=rw)["KeyCount"] == 1
    denied(lambda: ro.put_object(Bucket=rw, Key="x", Body=b"x"))
    denied(lambda: ro.delete_object(Bucket=rw, Key="seed"))
    denied(lambda: ro.create_bucket(Bucket="perm-%s-new" % PERM_TAG))
    denied(lambda: ro.create_multipart_upload(Bucket=rw, Key="m"))
    assert {rw, ro_b, none} <= {b["Name"] for b in ro.list_buckets()["Buckets"]}
    # per-bucket key
    mix.put_object(Bucket=rw, Key="mine", Body=b"mine")
    assert mix.get_object(Bucket=rw, Key="mine")["Body"].read() == b"mine"
    assert mix.get_object(Bucket=ro_b, Key="seed")["Body"].read() == b"seed-" + ro_b.encode()
    denied(lambda: mix.put_object(Bucket=ro_b, Key="x", Body=b"x"))
    denied(lambda: mix.get_object(Bucket=none, Key="seed"))
    denied(lambda: mix.list_objects_v2(Bucket=none))
    denied(lambda: mix.put_object(Bucket=none, Key="x", Body=b"x"))
    # CopyObject needs read on the source too
    denied(lambda: mix.copy_object(Bucket=rw, Key="stolen",
                                   CopySource={"Bucket": none, "Key": "seed"}))
    mix.copy_object(Bucket=rw, Key="copied", CopySource={"Bucket": ro_b, "Key": "seed"})
    _copy_from_public_objects(t, admin, mix, rw, none, denied)
    # the permission is checked on the decoded source name the copy would read: an escaped,
    # NUL-cut or overlong source bucket never reaches a bucket the key cannot read
    raw = helpers.S3Raw(t.host, t.port, "AKMIX", "secretMIX")
    esc = none.replace("none", "n%6Fne")
    for src, want in [("/%s/seed" % esc, (403, "AccessDenied")),
                      ("/%s%%00%s/seed" % (none, "a" * 60), (400, "InvalidBucketName")),
                      ("/%s%%00x/seed" % none, (400, "InvalidBucketName")),
                      ("%s/seed?versionId=null" % none, (403, "AccessDenied")),
                      ("/" + "b" * 70 + "/seed", (400, "InvalidBucketName")),
                      ("/" + ro_b, (400, "InvalidArgument"))]:
        r = raw.request("PUT", "/%s/stolen2" % rw, headers={"x-amz-copy-source": src})
        assert (r.status, helpers.parse_s3_error(r.body)["Code"]) == want, (src, r)
    # a bucket path segment with an escaped NUL names no bucket (not the prefix before it)
    r = raw.request("PUT", "/%s%%00evil/obj" % rw, body=b"x")
    helpers.check_s3_error(r, 400, "InvalidBucketName")
    r = helpers.S3Raw(t.host, t.port, ACCESS_KEY, SECRET_KEY).request(
        "GET", "/v1/buckets/%s%%00x" % rw)
    assert r.status == 400 and b"InvalidBucketName" in r.body, r
    # nothing the denied calls tried exists
    names = {b: [o["Key"] for o in admin.list_objects_v2(Bucket=b).get("Contents", [])]
             for b in (rw, ro_b, none)}
    assert names == {rw: ["copied", "from-pub", "mine", "seed"], ro_b: ["seed"],
                     none: ["seed"]}, names
    assert "perm-%s-new" % PERM_TAG not in [b["Name"] for b in admin.list_buckets()["Buckets"]]


def _copy_from_public_objects(t, admin, mix, rw, none, denied):
    """As on AWS, a key may copy an object everyone may read into a bucket it may write, also
    when its own rights do not reach the source's bucket; only the objects the policy opens,
    and only while it does. Through a proxy with s3.redirect the copy is relayed (200), not
    given a 307 whose capability would outlive the policy."""
    admin.put_object(Bucket=none, Key="pub/x", Body=b"public bytes")
    pol = {"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                          "Resource": "arn:aws:s3:::%s/pub/*" % none}]}
    admin.put_bucket_policy(Bucket=none, Policy=json.dumps(pol))
    try:
        mix.copy_object(Bucket=rw, Key="from-pub", CopySource={"Bucket": none, "Key": "pub/x"})
        assert mix.get_object(Bucket=rw, Key="from-pub")["Body"].read() == b"public bytes"
        uid = mix.create_multipart_upload(Bucket=rw, Key="part-from-pub")["UploadId"]
        mix.upload_part_copy(Bucket=rw, Key="part-from-pub", UploadId=uid, PartNumber=1,
                             CopySource={"Bucket": none, "Key": "pub/x"})
        mix.abort_multipart_upload(Bucket=rw, Key="part-from-pub", UploadId=uid)
        # its tags are not public (GetObjectTagging stays closed): copying them is refused,
        # a copy with tags of its own is not
        admin.put_object_tagging(Bucket=none, Key="pub/x",
                                 Tagging={"TagSet": [{"Key": "secret", "Value": "hunter2"}]})
        denied(lambda: mix.get_object_tagging(Bucket=none, Key="pub/x"))
        denied(lambda: mix.copy_object(Bucket=rw, Key="tag-leak",
                                       CopySource={"Bucket": none, "Key": "pub/x"}))
        mix.copy_object(Bucket=rw, Key="from-pub", CopySource={"Bucket": none, "Key": "pub/x"},
                        TaggingDirective="REPLACE", Tagging="mine=1")
        assert mix.get_object_tagging(Bucket=rw, Key="from-pub")["TagSet"] == [
            {"Key": "mine", "Value": "1"}]
        # X-Hoard-Public-Source is the proxy's word, under its node signature: sent by a
        # client (signed into its own request, through the relay or to a target directly) it
        # is dropped or ignored, and a key with its own rights copies the tags
        for src in [t] + ([t.redirect_proxy] if getattr(t, "redirect_proxy", None) else []):
            hdrs = {"x-amz-copy-source": "/%s/pub/x" % none, "X-Hoard-Public-Source": "1"}
            r = helpers.S3Raw(src.host, src.port, ACCESS_KEY, SECRET_KEY).request(
                "PUT", "/%s/own-copy" % rw, headers=hdrs)
            if r.status == 307:  # s3.redirect: the key's own rights, so a 307; followed
                f = requests.put(r.header("Location"), headers=hdrs, timeout=30)
                assert f.status_code == 200 and b"<CopyObjectResult" in f.content, f.text
            else:
                assert r.status == 200 and b"<CopyObjectResult" in r.body, r
            assert admin.get_object_tagging(Bucket=rw, Key="own-copy")["TagSet"] == [
                {"Key": "secret", "Value": "hunter2"}]
            admin.delete_object(Bucket=rw, Key="own-copy")
        # the rest of the bucket stays closed, and writing needs the key's own rights
        denied(lambda: mix.copy_object(Bucket=rw, Key="stolen",
                                       CopySource={"Bucket": none, "Key": "seed"}))
        denied(lambda: mix.copy_object(Bucket=none, Key="pub/y",
                                       CopySource={"Bucket": none, "Key": "pub/x"}))
        rp = getattr(t, "redirect_proxy", None)
        if rp is not None:
            r = helpers.S3Raw(rp.host, rp.port, "AKMIX", "secretMIX").request(
                "PUT", "/%s/from-pub" % rw, headers={"x-amz-copy-source": "/%s/pub/x" % none,
                                                     "x-amz-tagging-directive": "REPLACE"})
            assert r.status == 200 and b"<CopyObjectResult" in r.body, r
            r = helpers.S3Raw(rp.host, rp.port, "AKMIX", "secretMIX").request(
                "PUT", "/%s/from-ro" % rw, headers={"x-amz-copy-source": "/%s/seed" % none})
            assert r.status == 403, r
        admin.delete_bucket_policy(Bucket=none)
        denied(lambda: mix.copy_object(Bucket=rw, Key="from-pub2",
                                       CopySource={"Bucket": none, "Key": "pub/x"}))
    finally:
        admin.delete_bucket_policy(Bucket=none)
        admin.delete_object(Bucket=none, Key="pub/x")


# ---------------------------------------------------------------- virtual-host addressing

@pytest.fixture
def vhost_server(endpoint, target_factory):
    """(server, domain): a target started with --s3.domain, or the session cluster, whose
    proxies and targets all have S3_DOMAIN (a relayed request keeps its Host and path, and the
    target verifies the client's signature over them)."""
    if endpoint.kind == "proxy":
        return endpoint, endpoint.domain
    return target_factory("vhost", extra_args=["--s3.domain", S3_DOMAIN]), S3_DOMAIN


def test_virtual_host_addressing(vhost_server):
    _vhost_round_trip(*vhost_server)


@pytest.fixture(scope="module")
def domain_on_proxy_only(tmp_path_factory, log_dir):
    """A cluster (1 proxy, 2 targets) where only the proxy has s3.domain."""
    nodes, ep = start_cluster(tmp_path_factory, log_dir, "vh-", 2,
                              proxy_args=["--s3.domain", S3_DOMAIN])
    yield ep
    _stop_nodes(nodes)


# The proxy reads Host with its own s3.domain and tells the target which bucket it found
# (X-Hoard-Vhost, under its signature), so the target, with no s3.domain of its own, reads
# the request the same way: the bucket the proxy authorised.
def test_virtual_host_domain_only_on_proxy(domain_on_proxy_only):
    _vhost_round_trip(domain_on_proxy_only, S3_DOMAIN)


def test_virtual_host_domain_only_on_proxy_keeps_permissions(domain_on_proxy_only):
    """AKMIX may write PERM_BUCKETS["rw"] only: a virtual-host PUT for that bucket whose path
    starts with another bucket's name must not land in the other bucket."""
    ep = domain_on_proxy_only
    admin = helpers.boto3_client(ep)
    mine, victim = PERM_BUCKETS["rw"], helpers.unique_bucket_name("victim")
    for b in (mine, victim):
        admin.create_bucket(Bucket=b)
    host = "%s.%s:%d" % (mine, S3_DOMAIN, ep.port)
    path = "/%s/planted" % victim
    h = helpers.sign_headers("PUT", "http://%s%s" % (host, path), "AKMIX", "secretMIX",
                             payload=helpers.sha256_hex(b"planted"))
    h["Host"] = host
    r = helpers.raw_request(ep.host, ep.port, "PUT", path, h, b"planted")
    assert r.status == 200, r  # stored in its own bucket, under the key "victim.../planted"
    assert admin.list_objects_v2(Bucket=victim)["KeyCount"] == 0
    got = admin.get_object(Bucket=mine, Key=path[1:])["Body"].read()
    assert got == b"planted"


def _vhost_round_trip(t, domain):
    s3c = helpers.boto3_client(t)
    vb = helpers.unique_bucket_name("vhost")
    s3c.create_bucket(Bucket=vb)
    s3c.put_object(Bucket=vb, Key="dir/obj", Body=b"virtual host")
    host = "%s.%s:%d" % (vb, domain, t.port)

    def vreq(method, path, body=b"", payload=helpers.UNSIGNED):
        url = "http://%s%s" % (host, path)
        h = helpers.sign_headers(method, url, t.access_key, t.secret_key, payload=payload)
        h["Host"] = host
        return helpers.raw_request(t.host, t.port, method, path, h, body)

    try:
        r = vreq("GET", "/dir/obj")
        assert r.status == 200 and r.body == b"virtual host", r
        r = vreq("PUT", "/dir/new", b"via vhost", payload=helpers.sha256_hex(b"via vhost"))
        assert r.status == 200, r
        assert s3c.get_object(Bucket=vb, Key="dir/new")["Body"].read() == b"via vhost"
        r = vreq("GET", "/?list-type=2&prefix=dir/")
        assert r.status == 200 and b"<Key>dir/new</Key>" in r.body and \
            b"<Key>dir/obj</Key>" in r.body, r
        check_s3_error(vreq("GET", "/missing"), 404, "NoSuchKey")
        r = vreq("HEAD", "/")  # HeadBucket
        assert r.status == 200, r
        assert vreq("DELETE", "/dir/new").status == 204
        check_s3_error(vreq("GET", "/dir/new"), 404, "NoSuchKey")
        # path style still works on the same server
        assert s3c.get_object(Bucket=vb, Key="dir/obj")["Body"].read() == b"virtual host"
    finally:
        _empty_bucket(s3c, vb)


# ---------------------------------------------------------------- s3.redirect=true

def _curl_sigv4(*args, timeout=60):
    return subprocess.run(["curl", "-sS", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user",
                           "%s:%s" % (ACCESS_KEY, SECRET_KEY),
                           "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"] +
                          [str(a) for a in args], capture_output=True, timeout=timeout)


def test_s3_redirect_mode(s3cluster, tmp_path):
    """A proxy with s3.redirect=true answers object calls with 307 to the owner (plus its
    signature) and serves bucket calls itself; clients that follow redirects work end to end:
    curl -L (drops the credentials at the new host:port), curl -L --location-trusted
    (re-signs there) and requests."""
    p = s3cluster.redirect_proxy
    s3c = helpers.boto3_client(p)
    b = helpers.unique_bucket_name("redir")
    s3c.create_bucket(Bucket=b)
    try:
        data = pattern_bytes(3 * 1024 * 1024 + 11, seed=51)
        src = tmp_path / "up.bin"
        src.write_bytes(data)
        url = "%s/%s/dir/ob%%20j" % (p.url, b)
        for n, follow in enumerate((["-L"], ["-L", "--location-trusted"])):
            got = tmp_path / ("got%d" % n)
            r = _curl_sigv4(*follow, "-T", src, "-o", tmp_path / "put.out", "-w", "%{http_code}",
                            url + str(n))
            assert r.stdout == b"200", (follow, r.stdout, r.stderr, (tmp_path / "put.out")
                                        .read_bytes()[:300])
            r = _curl_sigv4(*follow, "-o", got, "-w", "%{http_code}", url + str(n))
            assert r.stdout == b"200" and got.read_bytes() == data, (follow, r.stdout)
        # not followed: 307 to the owner, with the proxy's signature
        r = _curl_sigv4("-o", "/dev/null", "-w", "%{http_code} %{redirect_url}", url + "0")
        status, loc = r.stdout.decode().split(" ", 1)
        assert status == "307" and loc.startswith(s3cluster.owner(b, "dir/ob j0")), loc
        assert "pid=" in loc and "psig=" in loc, loc
        # requests sends a body at once (no Expect: 100-continue): relayed, not sent twice;
        # it follows the GET's 307 and drops Authorization at the new port
        auth = helpers.SigV4Requests(ACCESS_KEY, SECRET_KEY)
        r = requests.put(url + "r", data=b"via requests", auth=auth, timeout=30)
        assert r.status_code == 200 and r.history == [], r
        r = requests.get(url + "r", auth=auth, timeout=30)
        assert r.status_code == 200 and r.content == b"via requests", r
        assert [h.status_code for h in r.history] == [307], r
        # a body over the 4 MiB the proxy would drain to deliver a 307 (a part of the Go SDK's
        # uploader): relayed too, where a 307 used to reach the client as a broken pipe
        five = pattern_bytes(5 * 1024 * 1024 + 3, seed=52)
        r = requests.put(url + "5m", data=five, auth=auth, timeout=60)
        assert r.status_code == 200 and r.history == [], (r, r.text[:300])
        assert r.headers["ETag"] == '"%s"' % helpers.md5_hex(five)
        r = requests.get(url + "5m", auth=auth, timeout=60)
        assert r.content == five and [h.status_code for h in r.history] == [307], r
        # the proxy authenticates before it redirects
        r = requests.get(url + "r", auth=helpers.SigV4Requests(ACCESS_KEY, "wrong"),
                         allow_redirects=False, timeout=30)
        check_s3_error(from_requests(r), 403, "SignatureDoesNotMatch")
        assert "Location" not in r.headers
        # virtual-host style: the 307 goes to the path-style name, so the owner (another Host)
        # stores b/<other>/vh, never <other>/vh in a bucket the proxy did not authorise
        other = helpers.unique_bucket_name("redir-other")
        s3c.create_bucket(Bucket=other)
        vhost = "%s.%s:%d" % (b, s3cluster.domain, p.port)
        vurl = "http://%s/%s/vh" % (vhost, other)
        to_proxy = ["--connect-to", "%s:%s:%d" % (vhost, p.host, p.port)]
        try:
            for follow in (["-L"], ["-L", "--location-trusted"]):
                r = _curl_sigv4(*follow, *to_proxy, "-T", src, "-w", "%{http_code}", vurl)
                assert r.stdout.endswith(b"200"), (follow, r.stdout[-500:], r.stderr)
                r = _curl_sigv4(*follow, *to_proxy, "-o", tmp_path / "vh", "-w",
                                "%{http_code}", vurl)
                assert r.stdout == b"200" and (tmp_path / "vh").read_bytes() == data, r
            assert s3c.list_objects_v2(Bucket=other)["KeyCount"] == 0
        finally:
            _empty_bucket(s3c, other)
        # bucket calls are answered by the proxy itself
        keys = [o["Key"] for o in s3c.list_objects_v2(Bucket=b)["Contents"]]
        assert keys == ["dir/ob j0", "dir/ob j1", "dir/ob j5m", "dir/ob jr", "%s/vh" % other]
        # (boto3 does not follow a 307 from an S3 endpoint: object calls need the relay)
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            s3c.get_object(Bucket=b, Key="dir/ob j1")
        assert client_error(ei)[0] == 307
    finally:
        _empty_bucket(helpers.boto3_client(s3cluster), b)


# ---------------------------------------------------------------- rclone

def test_rclone(endpoint, s3, bucket, tmp_path):
    if not shutil.which("rclone"):
        pytest.skip("rclone not installed")
    # AWS_CA_BUNDLE (set on this machine) makes rclone 1.60's AWS SDK fail on its transport
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "RCLONE_"))}
    env.update({
        "RCLONE_CONFIG": os.devnull,
        "RCLONE_CONFIG_HOARD_TYPE": "s3", "RCLONE_CONFIG_HOARD_PROVIDER": "Other",
        "RCLONE_CONFIG_HOARD_ENV_AUTH": "false",
        "RCLONE_CONFIG_HOARD_ACCESS_KEY_ID": endpoint.access_key,
        "RCLONE_CONFIG_HOARD_SECRET_ACCESS_KEY": endpoint.secret_key,
        "RCLONE_CONFIG_HOARD_ENDPOINT": endpoint.url, "RCLONE_CONFIG_HOARD_REGION": "us-east-1",
        "RCLONE_CONFIG_HOARD_FORCE_PATH_STYLE": "true",
    })

    def rclone(*args):
        p = subprocess.run(["rclone", "--retries", "1", "--low-level-retries", "1"] +
                           [str(a) for a in args], env=env, capture_output=True, timeout=120)
        assert p.returncode == 0, (args, p.stderr.decode(errors="replace")[-3000:])
        return p.stdout.decode()

    src = tmp_path / "src"
    files = {"a.txt": b"alpha", "dir/b.bin": pattern_bytes(1234567, seed=42), "dir/c": b""}
    for rel, data in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(data)
    rclone("copy", src, "hoard:%s/rc" % bucket)
    got = {o["Key"]: o["Size"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]}
    assert got == {"rc/" + k: len(v) for k, v in files.items()}
    out = rclone("lsf", "-R", "hoard:%s/rc" % bucket)
    assert sorted(out.split()) == ["a.txt", "dir/", "dir/b.bin", "dir/c"], out
    rclone("check", src, "hoard:%s/rc" % bucket)  # sizes and MD5s
    dst = tmp_path / "dst"
    rclone("copy", "hoard:%s/rc" % bucket, dst)
    for rel, data in files.items():
        assert (dst / rel).read_bytes() == data, rel
    rclone("delete", "hoard:%s/rc/dir" % bucket)
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == ["rc/a.txt"]
