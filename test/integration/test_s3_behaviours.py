"""The S3 behaviours real clients rely on (issue 13), each against a standalone target and
through a cluster proxy: stored object headers and response-* overrides, empty metadata,
listing parameters and ListBuckets pages, dates (SigV4 with Date only, SigV2), conditional
writes (and their race), partNumber reads, UploadPartCopy, checksum errors, storage classes,
ACLs, versioning and presigned expiry. Driven by Debian's boto3 1.26 (botocore 1.29), the
pyenv boto3 (botocore >= 1.36) where the two differ, the aws CLI and rclone; raw requests
where an answer's exact form matters. docs/s3-compatibility.md is the contract."""
import base64
import concurrent.futures
import datetime
import email.utils
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
import urllib.parse
import xml.etree.ElementTree as ET
import zlib

import botocore.exceptions
import pytest
import requests
from botocore.auth import HmacV1Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

import helpers
from conftest import _empty_bucket
from helpers import check_s3_error, client_error, from_requests, md5_hex, pattern_bytes

ENDPOINTS = ("target", "proxy")

S3NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
MiB = 1024 * 1024
PART = 5 * MiB  # S3's smallest part but the last


def err(fn, *a, **kw):
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        fn(*a, **kw)
    return client_error(ei)


def extra(resp, name):
    """Text of an extra element of an S3 <Error> body."""
    return helpers.parse_s3_error(resp.body).get(name)


def pyenv(pyenv_python, endpoint, bucket, script, **env):
    """Runs script (PRELUDE first: `s3` is a pyenv boto3 client, `out` a dict printed as JSON
    at the end) and returns out."""
    p = helpers.run_pyenv(pyenv_python, PRELUDE + script + "\nprint(json.dumps(out))\n", dict(
        {"EP": endpoint.url, "AK": endpoint.access_key, "SK": endpoint.secret_key,
         "BUCKET": bucket}, **env), timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


PRELUDE = r'''
import base64, json, os, zlib
import boto3, botocore
from botocore.config import Config
s3 = boto3.client("s3", endpoint_url=os.environ["EP"], region_name="us-east-1",
                  aws_access_key_id=os.environ["AK"], aws_secret_access_key=os.environ["SK"],
                  config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                                retries={"total_max_attempts": 1}))
b = os.environ["BUCKET"]
out = {"botocore": botocore.__version__}
def code(fn, **kw):
    try:
        fn(**kw)
        return None
    except botocore.exceptions.ClientError as e:
        return [e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"],
                e.response["Error"].get("Message")]
'''


# ---------------------------------------------------------------- object headers

HEADERS = {"CacheControl": "max-age=60, public", "ContentDisposition": 'attachment; filename="a b.txt"',
           "ContentEncoding": "gzip", "ContentLanguage": "de-CH", "ContentType": "text/x-hoard"}


def test_standard_headers_round_trip(s3, bucket):
    expires = datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    s3.put_object(Bucket=bucket, Key="h", Body=b"hello", Expires=expires, **HEADERS)
    for r in (s3.head_object(Bucket=bucket, Key="h"), s3.get_object(Bucket=bucket, Key="h")):
        for k, v in HEADERS.items():
            assert r[k] == v, (k, r)
        assert r["Expires"] == expires, r
        assert r["ResponseMetadata"]["HTTPHeaders"]["expires"] == \
            "Wed, 02 Jan 2030 03:04:05 GMT"
    # a new PUT replaces them all (not merged)
    s3.put_object(Bucket=bucket, Key="h", Body=b"again")
    r = s3.head_object(Bucket=bucket, Key="h")
    for k in ("CacheControl", "ContentDisposition", "ContentEncoding", "ContentLanguage",
              "Expires"):
        assert k not in r, (k, r)


def test_expires_kept_verbatim(raw, bucket):
    """S3 does not parse Expires: whatever was sent comes back."""
    r = raw.request("PUT", "/%s/e" % bucket, body=b"x", headers={"Expires": "not a date"})
    assert r.status == 200, r
    r = raw.request("HEAD", "/%s/e" % bucket)
    assert r.header("Expires") == "not a date", r


@pytest.mark.parametrize("sent,stored", [
    ("gzip", "gzip"), ("deflate, gzip", "deflate, gzip"), ("gzip, aws-chunked", "gzip"),
    ("aws-chunked, gzip", "gzip"), ("aws-chunked", None), ("aws-chunked, aws-chunked", None),
])
def test_content_encoding_aws_chunked(raw, bucket, sent, stored):
    """s3-tests test_object_content_encoding_aws_chunked: aws-chunked framed the upload and is
    not stored; any other coding is. Sent with an aws-chunked body, as SDKs do."""
    data = b"encoded bytes"
    body = helpers.unsigned_chunked_body([data],
                                         [("x-amz-checksum-crc32", helpers.crc32_b64(data))])
    r = raw.request("PUT", "/%s/enc" % bucket, body=body, payload="STREAMING-UNSIGNED-PAYLOAD-TRAILER",
                    headers={"Content-Encoding": sent, "x-amz-trailer": "x-amz-checksum-crc32",
                             "x-amz-decoded-content-length": str(len(data))})
    assert r.status == 200, r
    r = raw.request("GET", "/%s/enc" % bucket)
    assert r.status == 200 and r.body == data, r
    assert r.header("Content-Encoding") == stored, r


def test_headers_pyenv_boto3(pyenv_python, endpoint, bucket):
    """botocore >= 1.36: aws-chunked uploads with a checksum trailer (upload_fileobj of a
    stream) keep the client's Content-Encoding; HEAD reads every header back."""
    out = pyenv(pyenv_python, endpoint, bucket, r'''
import io, datetime
s3.put_object(Bucket=b, Key="p", Body=b"x" * 1000, ContentEncoding="gzip", CacheControl="no-cache",
              ContentLanguage="fr", ContentDisposition="inline",
              Expires=datetime.datetime(2031, 5, 6, 7, 8, 9))
h = s3.head_object(Bucket=b, Key="p")
out["head"] = {k: h.get(k) for k in ("ContentEncoding", "CacheControl", "ContentLanguage",
                                     "ContentDisposition", "ExpiresString")}
class Stream(io.RawIOBase):  # not seekable: botocore streams it aws-chunked with a trailer
    def __init__(self): self.left = 200000
    def readable(self): return True
    def readinto(self, b):
        n = min(len(b), self.left, 65536); b[:n] = b"y" * n; self.left -= n; return n
s3.upload_fileobj(Stream(), b, "stream", ExtraArgs={"ContentEncoding": "br"})
h = s3.head_object(Bucket=b, Key="stream")
out["stream"] = [h.get("ContentEncoding"), h["ContentLength"]]
''')
    assert out["head"] == {"ContentEncoding": "gzip", "CacheControl": "no-cache",
                           "ContentLanguage": "fr", "ContentDisposition": "inline",
                           "ExpiresString": "Tue, 06 May 2031 07:08:09 GMT"}, out
    assert out["stream"] == ["br", 200000], out


# ---------------------------------------------------------------- response-* overrides

OVERRIDES = {"ResponseContentType": "foo/bar", "ResponseContentDisposition": "bla",
             "ResponseContentLanguage": "esperanto", "ResponseContentEncoding": "aaa",
             "ResponseCacheControl": "no-cache", "ResponseExpires": "123"}


def test_response_overrides(endpoint, s3, bucket):
    s3.put_object(Bucket=bucket, Key="o", Body=b"0123456789", ContentType="text/plain",
                  CacheControl="max-age=5")
    # signed GET (s3-tests test_object_raw_response_headers) and a ranged one
    over = {k: v for k, v in OVERRIDES.items() if k != "ResponseExpires"}
    for kw in ({}, {"Range": "bytes=2-4"}):
        r = s3.get_object(Bucket=bucket, Key="o", **kw, **over)
        h = r["ResponseMetadata"]["HTTPHeaders"]
        assert (h["content-type"], h["content-disposition"], h["content-language"],
                h["content-encoding"], h["cache-control"]) == (
            "foo/bar", "bla", "esperanto", "aaa", "no-cache"), h
    # HEAD too
    r = endpoint.raw().request("HEAD", "/%s/o?response-content-type=foo%%2Fbar&"
                                       "response-cache-control=no-cache" % bucket)
    assert (r.header("Content-Type"), r.header("Cache-Control")) == ("foo/bar", "no-cache"), r
    # response-expires is sent as it is (not checked as a date); an empty value is ignored
    url = "/%s/o?response-expires=123&response-content-type=" % bucket
    r = endpoint.raw().request("GET", url)
    assert r.status == 200 and r.header("Expires") == "123", r
    assert r.header("Content-Type") == "text/plain", r
    # presigned
    url = s3.generate_presigned_url("get_object", Params={
        "Bucket": bucket, "Key": "o", "ResponseContentType": "foo/bar"}, ExpiresIn=300)
    r = requests.get(url, timeout=10)
    assert r.status_code == 200 and r.headers["Content-Type"] == "foo/bar", r.headers
    # errors keep their own headers
    r = endpoint.raw().request("GET", "/%s/nope?response-content-type=foo/bar" % bucket)
    assert r.status == 404 and "xml" in r.header("Content-Type"), r


def test_response_overrides_anonymous(endpoint, raw, s3, bucket):
    """An unsigned GET may not override (AWS: 400 InvalidRequest); an anonymous-read bucket
    lets the GET itself through."""
    s3.put_object(Bucket=bucket, Key="pub", Body=b"public")
    r = requests.patch("%s/v1/buckets/%s" % (endpoint.url, bucket), timeout=10,
                       data=b'{"anonymous_read": true}',
                       auth=helpers.SigV4Requests(endpoint.access_key, endpoint.secret_key))
    assert r.status_code == 200, r.content
    r = raw.request("GET", "/%s/pub" % bucket, sign=False)
    assert r.status == 200 and r.body == b"public", r
    r = raw.request("GET", "/%s/pub?response-content-type=foo/bar" % bucket, sign=False)
    e = check_s3_error(r, 400, "InvalidRequest")
    assert e["Message"] == \
        "Request specific response headers cannot be used for anonymous GET requests.", e
    r = raw.request("GET", "/%s/pub?response-content-type=foo/bar" % bucket)
    assert r.status == 200 and r.header("Content-Type") == "foo/bar", r


# ---------------------------------------------------------------- empty metadata

def test_empty_metadata_value(endpoint, raw, s3, bucket):
    """s3-tests test_object_set_get_metadata_none_to_empty: x-amz-meta-k with an empty value
    is stored and returned (the HTTP layer sends it as an empty field value)."""
    s3.put_object(Bucket=bucket, Key="m", Body=b"x", Metadata={"meta1": "", "meta2": "v"})
    assert s3.get_object(Bucket=bucket, Key="m")["Metadata"] == {"meta1": "", "meta2": "v"}
    assert s3.head_object(Bucket=bucket, Key="m")["Metadata"] == {"meta1": "", "meta2": "v"}
    r = raw.request("HEAD", "/%s/m" % bucket)
    assert ("x-amz-meta-meta1", "") in [(k.lower(), v) for k, v in r.headers_list], r
    # overwritten to empty
    s3.put_object(Bucket=bucket, Key="m", Body=b"x", Metadata={"meta1": ""})
    assert s3.head_object(Bucket=bucket, Key="m")["Metadata"] == {"meta1": ""}
    # a copy keeps it
    s3.copy_object(Bucket=bucket, Key="m2", CopySource={"Bucket": bucket, "Key": "m"})
    assert s3.head_object(Bucket=bucket, Key="m2")["Metadata"] == {"meta1": ""}


def test_repeated_metadata_header(raw, s3, bucket):
    """One x-amz-meta-* header sent twice (in any case) is one field whose values are joined
    with a comma, as HTTP defines and S3 stores it (not the last value alone)."""
    r = raw.request("PUT", "/%s/dup" % bucket, body=b"x",
                    headers={"x-amz-meta-twice": "one", "X-Amz-Meta-Twice": "two",
                             "x-amz-meta-once": "solo"})
    assert r.status == 200, r
    assert s3.head_object(Bucket=bucket, Key="dup")["Metadata"] == {"twice": "one,two",
                                                                    "once": "solo"}


# ---------------------------------------------------------------- listings

def test_list_empty_delimiter_and_max_keys_zero(s3, raw, bucket):
    for k in ("a/1", "a/2", "b"):
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    for v2 in (False, True):
        lst = s3.list_objects_v2 if v2 else s3.list_objects
        r = lst(Bucket=bucket, Delimiter="")
        assert "Delimiter" not in r and [o["Key"] for o in r["Contents"]] == ["a/1", "a/2", "b"]
        r = lst(Bucket=bucket, MaxKeys=0)
        assert r["IsTruncated"] is False and "Contents" not in r, r
        assert r["MaxKeys"] == 0
        assert "NextContinuationToken" not in r and "NextMarker" not in r, r
        if v2:
            assert r["KeyCount"] == 0
        r = lst(Bucket=bucket)
        assert r["MaxKeys"] == 1000 and r["Prefix"] == ""
        if not v2:
            assert r["Marker"] == ""
    r = raw.request("GET", "/%s?delimiter=&list-type=2" % bucket)
    assert r.status == 200 and b"<Delimiter" not in r.body, r


def test_list_continuation_tokens(s3, raw, bucket):
    """An empty continuation-token lists from the start (echoed empty); tokens are URL-safe;
    a bad one is AWS's InvalidArgument with ArgumentName."""
    keys = ["k\xff\xfe%d" % i for i in range(5)] + ["??>>%d" % i for i in range(5)]
    for k in keys:
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    r = s3.list_objects_v2(Bucket=bucket, ContinuationToken="")
    assert r["ContinuationToken"] == "" and r["KeyCount"] == 10 and not r["IsTruncated"], r
    got, token = [], None
    while True:
        kw = {"ContinuationToken": token} if token else {}
        r = s3.list_objects_v2(Bucket=bucket, MaxKeys=3, **kw)
        got += [o["Key"] for o in r.get("Contents", [])]
        if not r["IsTruncated"]:
            break
        token = r["NextContinuationToken"]
        assert re.fullmatch(r"[A-Za-z0-9_-]+", token), token
    assert got == sorted(keys, key=lambda k: k.encode())
    r = raw.request("GET", "/%s?list-type=2&continuation-token=%%21%%21" % bucket)
    check_s3_error(r, 400, "InvalidArgument")
    assert extra(r, "ArgumentName") == "continuation-token"
    assert helpers.parse_s3_error(r.body)["Message"] == "The continuation token provided is incorrect"


def test_list_v1_prefix_raw(s3, raw, bucket):
    """ListObjects V1 with encoding-type=url encodes keys but not the top-level Prefix, which
    botocore never decodes; V2 encodes both (and botocore decodes both)."""
    s3.put_object(Bucket=bucket, Key="a b+c/k 1", Body=b"x")
    r = s3.list_objects(Bucket=bucket, Prefix="a b+c/")
    assert r["Prefix"] == "a b+c/" and [o["Key"] for o in r["Contents"]] == ["a b+c/k 1"], r
    r = s3.list_objects_v2(Bucket=bucket, Prefix="a b+c/")
    assert r["Prefix"] == "a b+c/" and [o["Key"] for o in r["Contents"]] == ["a b+c/k 1"], r
    r = raw.request("GET", "/%s?encoding-type=url&prefix=a%%20b%%2Bc%%2F" % bucket)
    root = ET.fromstring(r.body)
    assert root.findtext(S3NS + "Prefix") == "a b+c/"
    assert root.findtext("%sContents/%sKey" % (S3NS, S3NS)) == "a%20b%2Bc/k%201"


def test_list_buckets_pages(endpoint, raw, s3):
    """ListBuckets with max-buckets, prefix and continuation-token (raw: botocore 1.29 predates
    them), as s3-tests test_list_buckets_paginated: no token when nothing follows."""
    tag = "lbp-" + os.urandom(4).hex()
    names = ["%s-%d" % (tag, i) for i in range(3)]
    for n in names:
        s3.create_bucket(Bucket=n)
    try:
        def page(q):
            r = raw.request("GET", "/?" + q)
            assert r.status == 200, r
            root = ET.fromstring(r.body)
            return ([e.text for e in root.iter(S3NS + "Name")],
                    root.findtext(S3NS + "ContinuationToken"), root)
        got, tok, root = page("max-buckets=2&prefix=" + tag)
        assert got == names[:2] and tok and root.findtext(S3NS + "Prefix") == tag
        assert re.fullmatch(r"[A-Za-z0-9_-]+", tok), tok
        assert [e.text for e in root.iter(S3NS + "BucketRegion")] == ["us-east-1"] * 2
        got, tok2, _ = page("max-buckets=2&prefix=%s&continuation-token=%s" % (tag, tok))
        assert got == names[2:] and tok2 is None
        got, tok, _ = page("max-buckets=3&prefix=" + tag)  # exactly full: no token
        assert got == names and tok is None
        got, tok, _ = page("prefix=%s-nothing" % tag)
        assert got == [] and tok is None
        got, _, _ = page("prefix=%s&bucket-region=eu-west-1" % tag)
        assert got == []
        for bad in ("0", "10001", "x", "-1"):
            r = raw.request("GET", "/?max-buckets=" + bad)
            e = check_s3_error(r, 400, "InvalidArgument")
            assert e["Message"] == "Argument max-buckets must be an integer between 1 and 10000."
        # no parameter: every bucket, no region, no token
        r = s3.list_buckets()
        assert set(names) <= {b["Name"] for b in r["Buckets"]} and "ContinuationToken" not in r
    finally:
        for n in names:
            s3.delete_bucket(Bucket=n)


def test_list_buckets_pyenv_paginator(pyenv_python, endpoint, s3):
    tag = "lbq-" + os.urandom(4).hex()
    names = ["%s-%d" % (tag, i) for i in range(3)]
    for n in names:
        s3.create_bucket(Bucket=n)
    try:
        out = pyenv(pyenv_python, endpoint, names[0], r'''
pages = s3.get_paginator("list_buckets").paginate(Prefix=os.environ["TAG"],
                                                  PaginationConfig={"PageSize": 1})
out["pages"] = [[x["Name"] for x in p["Buckets"]] for p in pages]
''', TAG=tag)
        assert out["pages"] == [[n] for n in names], out
    finally:
        for n in names:
            s3.delete_bucket(Bucket=n)


# ---------------------------------------------------------------- dates

def test_sigv4_date_header_only(endpoint, raw, bucket):
    """SigV4 whose time comes from Date alone, in every form clients write (botocore >= 1.36
    uses formatdate()'s "-0000": test_sigv4_date_header_pyenv); the string to sign holds
    that instant in ISO 8601 basic form. With X-Amz-Date present, Date is not looked at
    (botocore 1.29 keeps a caller's Date beside its X-Amz-Date)."""
    s3 = helpers.boto3_client(endpoint)

    def add_date(request, **kw):
        request.headers["Date"] = "not a date"
    s3.meta.events.register("before-sign.s3", add_date)
    s3.put_object(Bucket=bucket, Key="d", Body=b"dated")
    assert s3.get_object(Bucket=bucket, Key="d")["Body"].read() == b"dated"
    when = datetime.datetime.utcnow()
    for form in ("%a, %d %b %Y %H:%M:%S GMT", "%a, %d %b %Y %H:%M:%S -0000",
                 "%A, %d-%b-%y %H:%M:%S GMT", "%a %b %e %H:%M:%S %Y", "%Y%m%dT%H%M%SZ"):
        h = _sigv4_with_date(endpoint, "/%s/d" % bucket, when.strftime(form), when)
        r = helpers.raw_request(endpoint.host, endpoint.port, "GET", "/%s/d" % bucket, h)
        assert r.status == 200 and r.body == b"dated", (form, r)


def _sigv4_with_date(endpoint, path, date, when):
    """SigV4 header auth whose signed time comes from Date (any form), no X-Amz-Date."""
    import hmac
    stamp = when.strftime("%Y%m%dT%H%M%SZ")
    host = "%s:%d" % (endpoint.host, endpoint.port)
    scope = "%s/us-east-1/s3/aws4_request" % stamp[:8]
    # a canonical header's value has its inner runs of spaces folded to one (asctime's
    # "Mon Dec  7" on days 1-9)
    canon = "\n".join(["GET", helpers.canonical_s3_path(path), "",
                       "date:%s\nhost:%s\nx-amz-content-sha256:UNSIGNED-PAYLOAD\n" % (
                           " ".join(date.split()), host),
                       "date;host;x-amz-content-sha256", "UNSIGNED-PAYLOAD"])
    sts = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, helpers.sha256_hex(canon.encode())])
    sig = hmac.new(helpers.sigv4_signing_key(endpoint.secret_key, stamp[:8]), sts.encode(),
                   hashlib.sha256).hexdigest()
    return {"Host": host, "Date": date, "x-amz-content-sha256": "UNSIGNED-PAYLOAD",
            "Authorization": "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=date;host;"
                             "x-amz-content-sha256, Signature=%s" % (endpoint.access_key, scope,
                                                                     sig)}


def test_sigv4_date_header_pyenv(pyenv_python, endpoint, bucket):
    out = pyenv(pyenv_python, endpoint, bucket, r'''
seen = []
s3.meta.events.register("before-sign.s3", lambda request, **kw: request.headers.__setitem__("Date", "x"))
def sent(request, **kw):
    d = request.headers.get("Date")
    seen.append(d.decode() if isinstance(d, bytes) else d)
s3.meta.events.register("before-send.s3", sent)
s3.put_object(Bucket=b, Key="pd", Body=b"pyenv dated")
out["body"] = s3.get_object(Bucket=b, Key="pd")["Body"].read().decode()
out["dates"] = seen
''')
    assert out["body"] == "pyenv dated", out
    assert out["dates"] and all(d.endswith("-0000") for d in out["dates"]), out


def _sigv2_headers(endpoint, method, path, date_headers):
    """SigV2 header auth (botocore's HmacV1Auth) with the given Date / x-amz-date values
    (None: the header is left out)."""
    req = AWSRequest(method=method, url="http://%s:%d%s" % (endpoint.host, endpoint.port, path),
                     headers={k: v for k, v in date_headers.items() if v is not None})
    auth = HmacV1Auth(Credentials(endpoint.access_key, endpoint.secret_key))
    auth._get_date = lambda: date_headers.get("Date") or ""  # sign exactly what is sent
    auth.add_auth(req)
    h = dict(req.headers.items())
    if date_headers.get("Date") is None:
        h.pop("Date", None)
    return h


@pytest.mark.parametrize("dates,status,code", [
    ({"x-amz-date": "Bad Date"}, 403, "AccessDenied"),
    ({"x-amz-date": ""}, 403, "AccessDenied"),
    ({"Date": None}, 403, "AccessDenied"),
    ({"x-amz-date": "Tue, 07 Jul 1950 21:53:04 GMT"}, 403, "AccessDenied"),
    ({"x-amz-date": "Tue, 07 Jul 2010 21:53:04 GMT"}, 403, "RequestTimeTooSkewed"),
    ({"x-amz-date": "Tue, 07 Jul 9999 21:53:04 GMT"}, 403, "RequestTimeTooSkewed"),
])
def test_sigv2_date_errors(endpoint, bucket, dates, status, code):
    """s3-tests test_headers.py *_aws2: a bad, empty or missing date is 403 AccessDenied with
    AWS's message (the one s3cmd reads as 'use SigV2'); a valid but distant one is skew."""
    h = _sigv2_headers(endpoint, "PUT", "/%s/v2d" % bucket, dates)
    r = helpers.raw_request(endpoint.host, endpoint.port, "PUT", "/%s/v2d" % bucket, h, b"x")
    e = check_s3_error(r, status, code)
    if code == "AccessDenied":
        assert e["Message"] == "AWS authentication requires a valid Date or x-amz-date header"


@pytest.mark.parametrize("form", ["%a, %d %b %Y %H:%M:%S GMT", "%a, %d %b %Y %H:%M:%S +0000",
                                  "%a, %d %b %Y %H:%M:%S -0000", "%A, %d-%b-%y %H:%M:%S GMT",
                                  "%a %b %e %H:%M:%S %Y", "%Y%m%dT%H%M%SZ"])
def test_sigv2_date_forms(endpoint, bucket, form):
    date = datetime.datetime.utcnow().strftime(form)
    h = _sigv2_headers(endpoint, "PUT", "/%s/v2f" % bucket, {"x-amz-date": date})
    r = helpers.raw_request(endpoint.host, endpoint.port, "PUT", "/%s/v2f" % bucket, h, b"ok")
    assert r.status == 200, (date, r)


def test_sigv4_bad_date_is_not_the_sigv2_message(endpoint, bucket):
    """A SigV4 request never gets the SigV2 date message (s3cmd would retry with SigV2)."""
    h = helpers.sign_headers("GET", "http://%s:%d/%s" % (endpoint.host, endpoint.port, bucket),
                             endpoint.access_key, endpoint.secret_key)
    h = {k: v for k, v in h.items() if k.lower() != "x-amz-date"}
    r = helpers.raw_request(endpoint.host, endpoint.port, "GET", "/" + bucket, h)
    assert r.status in (400, 403), r
    assert b"requires a valid Date" not in r.body, r


# ---------------------------------------------------------------- conditional writes

def test_conditional_put(endpoint, raw, bucket):
    """If-None-Match: * creates only; If-Match writes only over that ETag (s3-tests
    test_put_object_if_match, with AWS's 501 for If-None-Match: <etag>)."""
    path = "/%s/cw" % bucket
    r = raw.request("PUT", path, body=b"one", headers={"If-None-Match": "*"})
    assert r.status == 200, r
    etag = r.header("ETag")
    r = raw.request("PUT", path, body=b"two", headers={"If-None-Match": "*"})
    check_s3_error(r, 412, "PreconditionFailed")
    assert extra(r, "Condition") == "If-None-Match"
    assert helpers.parse_s3_error(r.body)["Message"] == \
        "At least one of the pre-conditions you specified did not hold"
    assert raw.request("GET", path).body == b"one"
    r = raw.request("PUT", path, body=b"two", headers={"If-None-Match": etag})
    e = check_s3_error(r, 501, "NotImplemented")
    assert e["Message"] == "A header you provided implies functionality that is not implemented"
    r = raw.request("PUT", path, body=b"two", headers={"If-Match": '"%s"' % ("0" * 32)})
    check_s3_error(r, 412, "PreconditionFailed")
    assert extra(r, "Condition") == "If-Match"
    r = raw.request("PUT", path, body=b"two", headers={"If-Match": etag})
    assert r.status == 200, r
    r = raw.request("PUT", path, body=b"three", headers={"If-Match": "*"})
    assert r.status == 200, r
    assert raw.request("GET", path).body == b"three"
    r = raw.request("PUT", "/%s/cw-missing" % bucket, body=b"x", headers={"If-Match": "*"})
    check_s3_error(r, 404, "NoSuchKey")
    # a refused write left nothing behind
    assert raw.request("HEAD", "/%s/cw-missing" % bucket).status == 404
    assert endpoint.tmp_files() == []


def test_conditional_put_pyenv(pyenv_python, endpoint, bucket):
    out = pyenv(pyenv_python, endpoint, bucket, r'''
r = s3.put_object(Bucket=b, Key="pc", Body=b"1", IfNoneMatch="*")
out["again"] = code(s3.put_object, Bucket=b, Key="pc", Body=b"2", IfNoneMatch="*")
out["etag"] = code(s3.put_object, Bucket=b, Key="pc", Body=b"2", IfNoneMatch=r["ETag"])
out["match"] = code(s3.put_object, Bucket=b, Key="pc", Body=b"3", IfMatch=r["ETag"])
out["missing"] = code(s3.put_object, Bucket=b, Key="pc-none", Body=b"3", IfMatch=r["ETag"])
# CompleteMultipartUpload over an existing key, create-only
uid = s3.create_multipart_upload(Bucket=b, Key="pc")["UploadId"]
p = s3.upload_part(Bucket=b, Key="pc", UploadId=uid, PartNumber=1, Body=b"part")
parts = {"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]}
out["complete"] = code(s3.complete_multipart_upload, Bucket=b, Key="pc", UploadId=uid,
                       MultipartUpload=parts, IfNoneMatch="*")
uid = s3.create_multipart_upload(Bucket=b, Key="pc-new")["UploadId"]
p = s3.upload_part(Bucket=b, Key="pc-new", UploadId=uid, PartNumber=1, Body=b"part")
out["complete_new"] = code(s3.complete_multipart_upload, Bucket=b, Key="pc-new", UploadId=uid,
                           MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]},
                           IfNoneMatch="*")
out["body"] = s3.get_object(Bucket=b, Key="pc")["Body"].read().decode()
''')
    assert out["again"][:2] == [412, "PreconditionFailed"], out
    assert out["etag"][:2] == [501, "NotImplemented"], out
    assert out["match"] is None, out
    assert out["missing"][:2] == [404, "NoSuchKey"], out
    assert out["complete"][:2] == [412, "PreconditionFailed"], out
    assert out["complete_new"] is None and out["body"] == "3", out


def test_conditional_copy(endpoint, s3, raw, bucket):
    s3.put_object(Bucket=bucket, Key="src", Body=b"source")
    s3.put_object(Bucket=bucket, Key="dst", Body=b"dest")
    h = {"x-amz-copy-source": "/%s/src" % bucket, "If-None-Match": "*"}
    r = raw.request("PUT", "/%s/dst" % bucket, headers=h)
    check_s3_error(r, 412, "PreconditionFailed")
    assert s3.get_object(Bucket=bucket, Key="dst")["Body"].read() == b"dest"
    r = raw.request("PUT", "/%s/dst2" % bucket, headers=h)
    assert r.status == 200, r
    etag = s3.head_object(Bucket=bucket, Key="dst")["ETag"]
    r = raw.request("PUT", "/%s/dst" % bucket, headers={
        "x-amz-copy-source": "/%s/src" % bucket, "If-Match": etag})
    assert r.status == 200, r
    assert s3.get_object(Bucket=bucket, Key="dst")["Body"].read() == b"source"


def _race(endpoint, url_of, n=8):
    """n create-only PUTs of one key at once: (statuses, the body that won)."""
    auth = helpers.SigV4Requests(endpoint.access_key, endpoint.secret_key)

    def put(i):
        return requests.put(url_of, data=b"writer %d" % i, auth=auth, timeout=60,
                            headers={"If-None-Match": "*"}).status_code
    with concurrent.futures.ThreadPoolExecutor(n) as ex:
        return list(ex.map(put, range(n)))


def test_conditional_put_race(endpoint, s3, bucket):
    """Of N concurrent create-only PUTs of one key exactly one wins, through the relay and (on
    a cluster) the 307 path alike: the condition is checked in the commit's transaction."""
    targets = [endpoint] + ([endpoint.redirect_proxy] if endpoint.kind == "proxy" else [])
    for n, ep in enumerate(targets):
        key = "race-%d" % n
        st = _race(endpoint, "%s/%s/%s" % (ep.url, bucket, key))
        assert st.count(200) == 1 and all(s in (200, 409, 412) for s in st), st
        body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        assert re.fullmatch(rb"writer \d", body), body


# ---------------------------------------------------------------- partNumber

def _mpu(s3, bucket, key, parts):
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    done = []
    for i, d in enumerate(parts, 1):
        r = s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=i, Body=d)
        done.append({"PartNumber": i, "ETag": r["ETag"]})
    return s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid,
                                        MultipartUpload={"Parts": done})


def test_get_object_attributes(endpoint, raw, s3, bucket):
    """GetObjectAttributes (GET ?attributes, boto3 get_object_attributes): the ETag
    (unquoted), ObjectSize, StorageClass and Last-Modified; for a multipart object also
    ObjectParts (count and part sizes, paged by MaxParts / PartNumberMarker) and its composite
    checksum (without the "-N", ChecksumType COMPOSITE). No or an unknown attribute name:
    400 InvalidArgument; a missing key: 404 NoSuchKey."""
    allattrs = ["ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"]
    s3.put_object(Bucket=bucket, Key="one", Body=b"hello", StorageClass="STANDARD_IA")
    r = s3.get_object_attributes(Bucket=bucket, Key="one", ObjectAttributes=allattrs)
    assert (r["ETag"], r["ObjectSize"], r["StorageClass"]) == (md5_hex(b"hello"), 5,
                                                                "STANDARD_IA"), r
    assert "ObjectParts" not in r and "Checksum" not in r, r
    assert r["LastModified"] == s3.head_object(Bucket=bucket, Key="one")["LastModified"]
    r = s3.get_object_attributes(Bucket=bucket, Key="one", ObjectAttributes=["ObjectSize"])
    assert r["ObjectSize"] == 5 and "ETag" not in r and "StorageClass" not in r, r

    datas = [pattern_bytes(PART, seed=71), b"tail"]
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp", ChecksumAlgorithm="CRC32")
    parts = []
    for i, d in enumerate(datas, 1):
        p = s3.upload_part(Bucket=bucket, Key="mp", UploadId=up["UploadId"], PartNumber=i,
                           Body=d, ChecksumAlgorithm="CRC32")
        parts.append({"PartNumber": i, "ETag": p["ETag"], "ChecksumCRC32": p["ChecksumCRC32"]})
    done = s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=up["UploadId"],
                                        MultipartUpload={"Parts": parts})
    r = s3.get_object_attributes(Bucket=bucket, Key="mp", ObjectAttributes=allattrs)
    assert r["ETag"] == done["ETag"].strip('"') and r["ObjectSize"] == PART + 4, r
    assert r["StorageClass"] == "STANDARD", r
    composite = base64.b64encode(zlib.crc32(b"".join(
        helpers.checksum_raw("crc32", d) for d in datas)).to_bytes(4, "big")).decode()
    assert r["Checksum"]["ChecksumCRC32"] == composite, r
    op = r["ObjectParts"]
    assert (op["TotalPartsCount"], op["IsTruncated"]) == (2, False), op
    assert [(p["PartNumber"], p["Size"]) for p in op["Parts"]] == [(1, PART), (2, 4)], op
    r = s3.get_object_attributes(Bucket=bucket, Key="mp", ObjectAttributes=["ObjectParts"],
                                 MaxParts=1)["ObjectParts"]
    assert (r["IsTruncated"], r["NextPartNumberMarker"], len(r["Parts"])) == (True, 1, 1), r
    r = s3.get_object_attributes(Bucket=bucket, Key="mp", ObjectAttributes=["ObjectParts"],
                                 MaxParts=1, PartNumberMarker=1)["ObjectParts"]
    assert (r["IsTruncated"], [p["PartNumber"] for p in r["Parts"]]) == (False, [2]), r
    x = raw.request("GET", "/%s/mp?attributes" % bucket,
                    headers={"x-amz-object-attributes": "Checksum"})
    assert x.status == 200, x
    ck = ET.fromstring(x.body).find(S3NS + "Checksum")
    assert ck.find(S3NS + "ChecksumType").text == "COMPOSITE", x.body

    for hdr in (None, "", "Bogus", "ETag,etag"):
        x = raw.request("GET", "/%s/one?attributes" % bucket,
                        headers={} if hdr is None else {"x-amz-object-attributes": hdr})
        check_s3_error(x, 400, "InvalidArgument")
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        s3.get_object_attributes(Bucket=bucket, Key="missing", ObjectAttributes=["ETag"])
    assert client_error(ei)[:2] == (404, "NoSuchKey")


def test_part_number_reads(raw, s3, bucket):
    parts = [pattern_bytes(PART, seed=1), pattern_bytes(PART, seed=2), b"tail" * 100]
    etag = _mpu(s3, bucket, "mp", parts)["ETag"]
    off = 0
    for n, d in enumerate(parts, 1):
        g = s3.get_object(Bucket=bucket, Key="mp", PartNumber=n)
        assert g["ResponseMetadata"]["HTTPStatusCode"] == 206
        assert g["Body"].read() == d and g["ContentLength"] == len(d)
        assert g["PartsCount"] == 3 and g["ETag"] == etag
        assert g["ContentRange"] == "bytes %d-%d/%d" % (off, off + len(d) - 1,
                                                         sum(map(len, parts)))
        h = s3.head_object(Bucket=bucket, Key="mp", PartNumber=n)
        assert h["ContentLength"] == len(d) and h["PartsCount"] == 3 and h["ETag"] == etag
        off += len(d)
    assert "PartsCount" not in s3.head_object(Bucket=bucket, Key="mp")
    r = raw.request("GET", "/%s/mp?partNumber=4" % bucket)
    e = check_s3_error(r, 416, "InvalidPartNumber")
    assert e["Message"] == "The requested partnumber is not satisfiable"
    assert (extra(r, "PartNumberRequested"), extra(r, "ActualPartCount")) == ("4", "3")
    assert raw.request("HEAD", "/%s/mp?partNumber=4" % bucket).status == 416
    for bad in ("0", "10001", "foo", ""):
        r = raw.request("GET", "/%s/mp?partNumber=%s" % (bucket, bad))
        e = check_s3_error(r, 400, "InvalidArgument")
        assert e["Message"] == "Part number must be an integer between 1 and 10000, inclusive"
    r = raw.request("GET", "/%s/mp?partNumber=1" % bucket, headers={"Range": "bytes=0-1"})
    e = check_s3_error(r, 400, "InvalidRequest")
    assert e["Message"] == "Cannot specify both Range header and partNumber query parameter"
    # not uploaded in parts: part 1 is the whole object, without a parts count
    s3.put_object(Bucket=bucket, Key="one", Body=b"single")
    g = s3.get_object(Bucket=bucket, Key="one", PartNumber=1)
    assert g["ResponseMetadata"]["HTTPStatusCode"] == 206 and g["Body"].read() == b"single"
    assert "PartsCount" not in g and g["ContentRange"] == "bytes 0-5/6"
    check_s3_error(raw.request("GET", "/%s/one?partNumber=2" % bucket), 416, "InvalidPartNumber")


def test_part_number_pyenv_checksums(pyenv_python, endpoint, s3, bucket):
    """botocore >= 1.36 asks for checksums on every GET and validates what it gets: a part
    read carries none (like a ranged read), the whole object its FULL_OBJECT one."""
    out = pyenv(pyenv_python, endpoint, bucket, r'''
data = os.urandom(5 * 1024 * 1024 + 10)
uid = s3.create_multipart_upload(Bucket=b, Key="ck", ChecksumAlgorithm="CRC32",
                                 ChecksumType="FULL_OBJECT")["UploadId"]
done = []
for i, d in enumerate([data[:5 * 1024 * 1024], data[5 * 1024 * 1024:]], 1):
    r = s3.upload_part(Bucket=b, Key="ck", UploadId=uid, PartNumber=i, Body=d, ChecksumAlgorithm="CRC32")
    done.append({"PartNumber": i, "ETag": r["ETag"], "ChecksumCRC32": r["ChecksumCRC32"]})
s3.complete_multipart_upload(Bucket=b, Key="ck", UploadId=uid, MultipartUpload={"Parts": done})
g = s3.get_object(Bucket=b, Key="ck", PartNumber=2, ChecksumMode="ENABLED")
out["part2"] = [g["Body"].read() == data[5 * 1024 * 1024:], g.get("ChecksumCRC32"), g["PartsCount"]]
g = s3.get_object(Bucket=b, Key="ck", ChecksumMode="ENABLED")
out["whole"] = [g["Body"].read() == data, g.get("ChecksumCRC32"), g.get("ChecksumType")]
out["crc"] = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
h = s3.head_object(Bucket=b, Key="ck", ChecksumMode="ENABLED")
out["head"] = [h.get("ChecksumCRC32"), h.get("ChecksumType")]
''')
    assert out["part2"] == [True, None, 2], out
    assert out["whole"] == [True, out["crc"], "FULL_OBJECT"], out
    assert out["head"] == [out["crc"], "FULL_OBJECT"], out


# ---------------------------------------------------------------- UploadPartCopy

def test_upload_part_copy(endpoint, s3, raw, bucket):
    """Parts copied from objects held by the destination's target and (through a proxy) by
    another one, whole and by range; then the errors AWS gives."""
    src = pattern_bytes(6 * MiB + 100, seed=7)
    s3.put_object(Bucket=bucket, Key="src", Body=src)
    for same in (True, False) if endpoint.kind == "proxy" else (True,):
        dst = helpers.placed_key(endpoint, bucket, "dst", (bucket, "src"), same=same)
        uid = s3.create_multipart_upload(Bucket=bucket, Key=dst)["UploadId"]
        r1 = s3.upload_part_copy(Bucket=bucket, Key=dst, UploadId=uid, PartNumber=1,
                                 CopySource={"Bucket": bucket, "Key": "src"},
                                 CopySourceRange="bytes=0-%d" % (PART - 1))
        assert r1["CopyPartResult"]["ETag"] == '"%s"' % md5_hex(src[:PART])
        assert r1["CopyPartResult"]["LastModified"]
        r2 = s3.upload_part_copy(Bucket=bucket, Key=dst, UploadId=uid, PartNumber=2,
                                 CopySource={"Bucket": bucket, "Key": "src"})
        assert r2["CopyPartResult"]["ETag"] == '"%s"' % md5_hex(src)
        r3 = s3.upload_part_copy(Bucket=bucket, Key=dst, UploadId=uid, PartNumber=3,
                                 CopySource="%s/src" % bucket, CopySourceRange="bytes=7-7")
        parts = [{"PartNumber": i + 1, "ETag": r["CopyPartResult"]["ETag"]}
                 for i, r in enumerate((r1, r2, r3))]
        s3.complete_multipart_upload(Bucket=bucket, Key=dst, UploadId=uid,
                                     MultipartUpload={"Parts": parts})
        assert s3.get_object(Bucket=bucket, Key=dst)["Body"].read() == src[:PART] + src + src[7:8]
        assert s3.head_object(Bucket=bucket, Key=dst, PartNumber=3)["ContentLength"] == 1
    # an upload with a checksum algorithm gets the copied part's checksum
    uid = s3.create_multipart_upload(Bucket=bucket, Key="cks", ChecksumAlgorithm="SHA256")["UploadId"]
    r = s3.upload_part_copy(Bucket=bucket, Key="cks", UploadId=uid, PartNumber=1,
                            CopySource={"Bucket": bucket, "Key": "src"},
                            CopySourceRange="bytes=10-19")
    want = base64.b64encode(hashlib.sha256(src[10:20]).digest()).decode()
    assert r["CopyPartResult"]["ChecksumSHA256"] == want, r
    s3.complete_multipart_upload(Bucket=bucket, Key="cks", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": r["CopyPartResult"]["ETag"], "ChecksumSHA256": want}]})
    assert s3.get_object(Bucket=bucket, Key="cks")["Body"].read() == src[10:20]
    uid = s3.create_multipart_upload(Bucket=bucket, Key="bad")["UploadId"]
    path = "/%s/bad?partNumber=1&uploadId=%s" % (bucket, uid)
    for rng in ("0-2", "bytes=0", "bytes=hello-world", "bytes=0-bar", "bytes=hello-",
                "bytes=0-2,3-5", "bytes=5-2"):
        r = raw.request("PUT", path, headers={"x-amz-copy-source": "/%s/src" % bucket,
                                              "x-amz-copy-source-range": rng})
        e = check_s3_error(r, 400, "InvalidArgument")
        assert e["Message"].startswith("The x-amz-copy-source-range value must be of the form "
                                       "bytes=first-last"), e
        assert extra(r, "ArgumentName") == "x-amz-copy-source-range"
    r = raw.request("PUT", path, headers={"x-amz-copy-source": "/%s/src" % bucket,
                                          "x-amz-copy-source-range": "bytes=0-%d" % len(src)})
    e = check_s3_error(r, 400, "InvalidArgument")
    assert e["Message"] == "Range specified is not valid for source object of size: %d" % len(src)
    assert err(s3.upload_part_copy, Bucket=bucket, Key="bad", UploadId=uid, PartNumber=1,
               CopySource={"Bucket": bucket, "Key": "nope"})[:2] == (404, "NoSuchKey")
    assert err(s3.upload_part_copy, Bucket=bucket, Key="bad", UploadId="0" * 32, PartNumber=1,
               CopySource={"Bucket": bucket, "Key": "src"})[:2] == (404, "NoSuchUpload")
    assert err(s3.upload_part_copy, Bucket=bucket, Key="bad", UploadId=uid, PartNumber=1,
               CopySource={"Bucket": bucket, "Key": "src"},
               CopySourceIfMatch='"%s"' % ("0" * 32))[:2] == (412, "PreconditionFailed")
    s3.abort_multipart_upload(Bucket=bucket, Key="bad", UploadId=uid)


def test_upload_part_copy_aws_cli(aws1, s3, bucket):
    """aws s3 cp s3->s3 of a source over 8 MiB: CreateMultipartUpload + UploadPartCopy."""
    src = pattern_bytes(9 * MiB, seed=9)
    s3.put_object(Bucket=bucket, Key="big", Body=src)
    aws1("s3", "cp", "s3://%s/big" % bucket, "s3://%s/big-copy" % bucket)
    h = s3.head_object(Bucket=bucket, Key="big-copy")
    assert h["ETag"].endswith('-2"') and h["ContentLength"] == len(src), h
    assert s3.get_object(Bucket=bucket, Key="big-copy")["Body"].read() == src


# ---------------------------------------------------------------- checksums

def test_checksum_errors(endpoint, raw, s3, bucket):
    """Malformed value: 400 InvalidRequest "Value for x-amz-checksum-<algo> header is
    invalid."; a well-formed one that does not match: 400 BadDigest naming the algorithm."""
    body = b"hello world"
    for name, bad in (("crc32", "bad"), ("crc32", "AAAAAAAA"), ("sha256", "AAAAAA=="),
                      ("crc64nvme", "not base64!")):
        r = raw.request("PUT", "/%s/ck" % bucket, body=body,
                        headers={"x-amz-checksum-" + name: bad})
        e = check_s3_error(r, 400, "InvalidRequest")
        assert e["Message"] == "Value for x-amz-checksum-%s header is invalid." % name, e
    for name, wrong in (("crc32", "AAAAAA=="), ("sha1", base64.b64encode(b"\0" * 20).decode())):
        r = raw.request("PUT", "/%s/ck" % bucket, body=body,
                        headers={"x-amz-checksum-" + name: wrong})
        e = check_s3_error(r, 400, "BadDigest")
        assert e["Message"] == "The %s you specified did not match the calculated checksum." \
            % name.upper(), e
    r = raw.request("PUT", "/%s/ck" % bucket, body=body, headers={
        "x-amz-checksum-crc32": helpers.crc32_b64(body),
        "x-amz-checksum-sha256": helpers.checksum_b64("sha256", body)})
    e = check_s3_error(r, 400, "InvalidRequest")
    assert e["Message"].startswith("Expecting a single x-amz-checksum- header"), e
    # the algorithm named beside it is another one: BadDigest (AWS's documentation)
    r = raw.request("PUT", "/%s/ck" % bucket, body=body, headers={
        "x-amz-checksum-crc32": helpers.crc32_b64(body), "x-amz-sdk-checksum-algorithm": "SHA256"})
    check_s3_error(r, 400, "BadDigest")
    assert raw.request("HEAD", "/%s/ck" % bucket).status == 404
    # the right one: stored, and HEAD with checksum mode names its type
    r = raw.request("PUT", "/%s/ck" % bucket, body=body,
                    headers={"x-amz-checksum-crc32": helpers.crc32_b64(body)})
    assert r.status == 200 and r.header("x-amz-checksum-type") == "FULL_OBJECT", r
    h = s3.head_object(Bucket=bucket, Key="ck", ChecksumMode="ENABLED")
    hh = h["ResponseMetadata"]["HTTPHeaders"]
    assert hh["x-amz-checksum-crc32"] == helpers.crc32_b64(body)
    assert hh["x-amz-checksum-type"] == "FULL_OBJECT"
    # Content-MD5 keeps its own codes
    r = raw.request("PUT", "/%s/md" % bucket, body=body, headers={"Content-MD5": "bad"})
    check_s3_error(r, 400, "InvalidDigest")


def test_checksums_pyenv(pyenv_python, endpoint, bucket):
    out = pyenv(pyenv_python, endpoint, bucket, r'''
body = b"checksummed body"
out["bad_value"] = code(s3.put_object, Bucket=b, Key="c", Body=body, ChecksumSHA256="bad")
out["mismatch"] = code(s3.put_object, Bucket=b, Key="c", Body=body, ChecksumCRC32="AAAAAA==")
s3.put_object(Bucket=b, Key="c", Body=body, ChecksumAlgorithm="SHA1")
h = s3.head_object(Bucket=b, Key="c", ChecksumMode="ENABLED")
out["head"] = [h.get("ChecksumSHA1"), h.get("ChecksumType")]
# Complete with a wrong full-object checksum: BadDigest
data = os.urandom(5 * 1024 * 1024 + 3)
full = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
def upload(key, **create):
    uid = s3.create_multipart_upload(Bucket=b, Key=key, **create)["UploadId"]
    done = []
    for i, d in enumerate([data[:5 * 1024 * 1024], data[5 * 1024 * 1024:]], 1):
        kw = {"ChecksumAlgorithm": "CRC32"} if create else {}
        r = s3.upload_part(Bucket=b, Key=key, UploadId=uid, PartNumber=i, Body=d, **kw)
        p = {"PartNumber": i, "ETag": r["ETag"]}
        if create:
            p["ChecksumCRC32"] = r["ChecksumCRC32"]
        done.append(p)
    return uid, {"Parts": done}
uid, parts = upload("full", ChecksumAlgorithm="CRC32", ChecksumType="FULL_OBJECT")
out["full_wrong"] = code(s3.complete_multipart_upload, Bucket=b, Key="full", UploadId=uid,
                         MultipartUpload=parts, ChecksumCRC32="AAAAAA==", ChecksumType="FULL_OBJECT")
out["full_mode"] = code(s3.complete_multipart_upload, Bucket=b, Key="full", UploadId=uid,
                        MultipartUpload=parts, ChecksumType="COMPOSITE")
r = s3.complete_multipart_upload(Bucket=b, Key="full", UploadId=uid, MultipartUpload=parts,
                                 ChecksumCRC32=full, ChecksumType="FULL_OBJECT")
out["full_ok"] = [r.get("ChecksumCRC32"), r.get("ChecksumType")]
# an upload created without an algorithm: a full-object value is checked over the bytes
uid, parts = upload("plain")
out["plain_wrong"] = code(s3.complete_multipart_upload, Bucket=b, Key="plain", UploadId=uid,
                          MultipartUpload=parts, ChecksumCRC32="AAAAAA==")
r = s3.complete_multipart_upload(Bucket=b, Key="plain", UploadId=uid, MultipartUpload=parts,
                                 ChecksumCRC32=full)
h = s3.head_object(Bucket=b, Key="plain", ChecksumMode="ENABLED")
out["plain_ok"] = [h.get("ChecksumCRC32"), h.get("ChecksumType")]
# COMPOSITE: HEAD shows the checksum of checksums and its type; GET shows none
uid, parts = upload("comp", ChecksumAlgorithm="CRC32")
r = s3.complete_multipart_upload(Bucket=b, Key="comp", UploadId=uid, MultipartUpload=parts)
h = s3.head_object(Bucket=b, Key="comp", ChecksumMode="ENABLED")
g = s3.get_object(Bucket=b, Key="comp", ChecksumMode="ENABLED")
out["comp"] = [r.get("ChecksumCRC32"), h.get("ChecksumCRC32"), h.get("ChecksumType"),
               g.get("ChecksumCRC32"), g["Body"].read() == data]
out["full"] = full
''')
    assert out["bad_value"][:2] == [400, "InvalidRequest"], out
    assert out["bad_value"][2] == "Value for x-amz-checksum-sha256 header is invalid.", out
    assert out["mismatch"] == [400, "BadDigest",
                               "The CRC32 you specified did not match the calculated checksum."]
    assert out["head"][0] and out["head"][1] == "FULL_OBJECT", out
    assert out["full_wrong"][:2] == [400, "BadDigest"], out
    assert out["full_mode"][:2] == [400, "BadDigest"], out  # AWS's documentation
    assert out["full_ok"] == [out["full"], "FULL_OBJECT"], out
    assert out["plain_wrong"][:2] == [400, "BadDigest"], out
    assert out["plain_ok"] == [out["full"], "FULL_OBJECT"], out
    comp = out["comp"]
    assert comp[0].endswith("-2") and comp[1] == comp[0] and comp[2] == "COMPOSITE", out
    assert comp[3] is None and comp[4] is True, out


# ---------------------------------------------------------------- storage class

def test_storage_class(endpoint, raw, s3, bucket):
    s3.put_object(Bucket=bucket, Key="g", Body=b"x", StorageClass="GLACIER")
    s3.put_object(Bucket=bucket, Key="s", Body=b"x", StorageClass="STANDARD")
    s3.put_object(Bucket=bucket, Key="z", Body=b"x", StorageClass="FSX_OPENZFS")
    assert s3.head_object(Bucket=bucket, Key="g")["StorageClass"] == "GLACIER"
    assert s3.get_object(Bucket=bucket, Key="g")["StorageClass"] == "GLACIER"
    assert "StorageClass" not in s3.head_object(Bucket=bucket, Key="s")  # S3 omits STANDARD
    assert {o["Key"]: o["StorageClass"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]} \
        == {"g": "GLACIER", "s": "STANDARD", "z": "FSX_OPENZFS"}
    assert [o["StorageClass"] for o in s3.list_objects(Bucket=bucket)["Contents"]] == \
        ["GLACIER", "STANDARD", "FSX_OPENZFS"]
    r = raw.request("PUT", "/%s/bad" % bucket, body=b"x", headers={"x-amz-storage-class": "FOO"})
    e = check_s3_error(r, 400, "InvalidStorageClass")
    assert e["Message"] == "The storage class you specified is not valid"
    assert raw.request("HEAD", "/%s/bad" % bucket).status == 404
    # multipart: given at CreateMultipartUpload
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mp", StorageClass="STANDARD_IA",
                                     ContentLanguage="it", CacheControl="private")["UploadId"]
    p = s3.upload_part(Bucket=bucket, Key="mp", UploadId=uid, PartNumber=1, Body=b"p")
    assert s3.list_parts(Bucket=bucket, Key="mp", UploadId=uid)["StorageClass"] == "STANDARD_IA"
    s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
    h = s3.head_object(Bucket=bucket, Key="mp")
    assert (h["StorageClass"], h["ContentLanguage"], h["CacheControl"]) == (
        "STANDARD_IA", "it", "private"), h
    assert err(s3.create_multipart_upload, Bucket=bucket, Key="mp2",
               StorageClass="NOPE")[:2] == (400, "InvalidStorageClass")
    # copies: the request's class (none: STANDARD)
    s3.copy_object(Bucket=bucket, Key="c1", CopySource={"Bucket": bucket, "Key": "g"})
    assert "StorageClass" not in s3.head_object(Bucket=bucket, Key="c1")
    s3.copy_object(Bucket=bucket, Key="c2", CopySource={"Bucket": bucket, "Key": "g"},
                   StorageClass="ONEZONE_IA")
    assert s3.head_object(Bucket=bucket, Key="c2")["StorageClass"] == "ONEZONE_IA"


def test_copy_to_itself(s3, bucket):
    s3.put_object(Bucket=bucket, Key="self", Body=b"me", Metadata={"a": "1"},
                  CacheControl="no-store")
    st, code, resp = err(s3.copy_object, Bucket=bucket, Key="self",
                         CopySource={"Bucket": bucket, "Key": "self"})
    assert (st, code) == (400, "InvalidRequest")
    assert resp["Error"]["Message"] == (
        "This copy request is illegal because it is trying to copy an object to itself without "
        "changing the object's metadata, storage class, website redirect location or "
        "encryption attributes.")
    # changing only the storage class (even to the one it has) is a change
    s3.copy_object(Bucket=bucket, Key="self", CopySource={"Bucket": bucket, "Key": "self"},
                   StorageClass="STANDARD")
    s3.copy_object(Bucket=bucket, Key="self", CopySource={"Bucket": bucket, "Key": "self"},
                   StorageClass="GLACIER_IR")
    h = s3.head_object(Bucket=bucket, Key="self")
    assert h["StorageClass"] == "GLACIER_IR" and h["Metadata"] == {"a": "1"}
    assert h["CacheControl"] == "no-store"  # COPY keeps the headers
    s3.copy_object(Bucket=bucket, Key="self", CopySource={"Bucket": bucket, "Key": "self"},
                   MetadataDirective="REPLACE", Metadata={"b": "2"}, ContentLanguage="en")
    h = s3.head_object(Bucket=bucket, Key="self")
    assert h["Metadata"] == {"b": "2"} and h["ContentLanguage"] == "en"
    assert "CacheControl" not in h and "StorageClass" not in h  # REPLACE takes the request's
    assert s3.get_object(Bucket=bucket, Key="self")["Body"].read() == b"me"


def test_storage_class_aws_cli_self_copy(aws1, s3, bucket):
    """aws s3 cp s3://b/k s3://b/k --storage-class X sends CopyObject with only the storage
    class header (no metadata directive): legal, and the class is stored."""
    s3.put_object(Bucket=bucket, Key="cli", Body=b"cli bytes")
    aws1("s3", "cp", "s3://%s/cli" % bucket, "s3://%s/cli" % bucket, "--storage-class",
         "STANDARD_IA")
    h = s3.head_object(Bucket=bucket, Key="cli")
    assert h["StorageClass"] == "STANDARD_IA"
    assert s3.get_object(Bucket=bucket, Key="cli")["Body"].read() == b"cli bytes"


# ---------------------------------------------------------------- ACLs

NOGRANTS = ("Grants are not supported: hoard keeps no ACLs; access is set by keys (auth.keys) "
            "and bucket properties.")


def test_acls(endpoint, raw, s3, bucket):
    s3.put_object(Bucket=bucket, Key="a", Body=b"x", ACL="private")
    s3.put_object(Bucket=bucket, Key="b", Body=b"x", ACL="bucket-owner-full-control")
    for acl in (s3.get_bucket_acl(Bucket=bucket), s3.get_object_acl(Bucket=bucket, Key="a")):
        assert acl["Owner"]["ID"] == endpoint.access_key, acl
        assert acl["Grants"] == [{"Grantee": {"ID": endpoint.access_key, "DisplayName":
                                              endpoint.access_key, "Type": "CanonicalUser"},
                                  "Permission": "FULL_CONTROL"}], acl
    assert err(s3.get_object_acl, Bucket=bucket, Key="missing")[:2] == (404, "NoSuchKey")
    s3.put_object_acl(Bucket=bucket, Key="a", ACL="private")
    s3.put_bucket_acl(Bucket=bucket, ACL="private")
    s3.put_bucket_acl(Bucket=bucket, ACL="bucket-owner-full-control")
    # the document GET answers may be put back (s3cmd copies it object to object)
    policy = s3.get_object_acl(Bucket=bucket, Key="a")
    policy = {"Owner": policy["Owner"], "Grants": policy["Grants"]}
    s3.put_object_acl(Bucket=bucket, Key="b", AccessControlPolicy=policy)
    # anything else is a grant hoard cannot keep
    for call in (lambda: s3.put_object(Bucket=bucket, Key="c", Body=b"x", ACL="public-read"),
                 lambda: s3.put_object_acl(Bucket=bucket, Key="a", ACL="authenticated-read"),
                 lambda: s3.put_bucket_acl(Bucket=bucket, ACL="public-read-write"),
                 lambda: s3.put_object_acl(Bucket=bucket, Key="a",
                                           GrantRead='uri="http://acs.amazonaws.com/groups/'
                                                     'global/AllUsers"'),
                 lambda: s3.put_object_acl(Bucket=bucket, Key="a", AccessControlPolicy={
                     "Owner": policy["Owner"], "Grants": policy["Grants"] + [{
                         "Grantee": {"Type": "Group", "URI": "http://acs.amazonaws.com/groups/"
                                                             "global/AllUsers"},
                         "Permission": "READ"}]}),
                 lambda: s3.create_multipart_upload(Bucket=bucket, Key="m", ACL="public-read")):
        st, code, resp = err(call)
        assert (st, code, resp["Error"]["Message"]) == (501, "NotImplemented", NOGRANTS), resp
    assert raw.request("HEAD", "/%s/c" % bucket).status == 404
    # an unknown canned ACL: AWS's 400 InvalidArgument (empty message) naming the header
    r = raw.request("PUT", "/%s/d" % bucket, body=b"x", headers={"x-amz-acl": "privatee"})
    assert r.status == 400, r
    e = helpers.parse_s3_error(r.body)
    assert (e["Code"], e["ArgumentName"], e["ArgumentValue"]) == (
        "InvalidArgument", "x-amz-acl", "privatee"), e
    # CreateBucket with a canned ACL hoard cannot keep
    nb = helpers.unique_bucket_name("acl")
    s3.create_bucket(Bucket=nb, ACL="private")
    s3.delete_bucket(Bucket=nb)
    for acl in ("public-read-write", "authenticated-read"):
        assert err(s3.create_bucket, Bucket=nb, ACL=acl)[:2] == (501, "NotImplemented")
    assert err(s3.head_bucket, Bucket=nb)[0] == 404


ALL_USERS = {"Type": "Group", "URI": "http://acs.amazonaws.com/groups/global/AllUsers"}


def _grants(endpoint, public):
    owner = {"Grantee": {"ID": endpoint.access_key, "DisplayName": endpoint.access_key,
                         "Type": "CanonicalUser"}, "Permission": "FULL_CONTROL"}
    return [owner] + ([{"Grantee": ALL_USERS, "Permission": "READ"}] if public else [])


def _public(raw, bucket, key):
    """(status of an unsigned GET of key, of an unsigned listing, of an unsigned PUT)."""
    return (raw.request("GET", "/%s/%s" % (bucket, key), sign=False).status,
            raw.request("GET", "/%s?list-type=2" % bucket, sign=False).status,
            raw.request("PUT", "/%s/anon-put" % bucket, body=b"x", sign=False).status)


def _patch_props(endpoint, bucket, body):
    r = requests.patch("%s/v1/buckets/%s" % (endpoint.url, bucket), timeout=10, data=body,
                       auth=helpers.SigV4Requests(endpoint.access_key, endpoint.secret_key))
    assert r.status_code == 200, r.content


def test_bucket_acl_public_read(endpoint, raw, s3, bucket):
    """A bucket's public-read ACL opens its listing to unsigned requests, as AWS's READ grant on
    a bucket does, never its objects' data (those are public only with the bucket's
    anonymous_read property) nor any write. Objects have their bucket's ACL: public-read is
    accepted on one only when the bucket's objects are public, private only when they are
    not. private on the bucket closes everything."""
    s3.put_object(Bucket=bucket, Key="k", Body=b"data")
    assert _public(raw, bucket, "k") == (403, 403, 403)
    s3.put_bucket_acl(Bucket=bucket, ACL="public-read")
    acl = s3.get_bucket_acl(Bucket=bucket)
    assert acl["Grants"] == _grants(endpoint, True), acl
    assert _public(raw, bucket, "k") == (403, 200, 403)
    assert raw.request("HEAD", "/%s" % bucket, sign=False).status == 200
    assert raw.request("HEAD", "/%s/anon-put" % bucket).status == 404
    # the objects are not public: their ACL says so, and none can be made public alone
    assert s3.get_object_acl(Bucket=bucket, Key="k")["Grants"] == _grants(endpoint, False)
    for call in (lambda: s3.put_object(Bucket=bucket, Key="p", Body=b"pub", ACL="public-read"),
                 lambda: s3.put_object_acl(Bucket=bucket, Key="k", ACL="public-read")):
        assert err(call)[:2] == (501, "NotImplemented")
    s3.put_object(Bucket=bucket, Key="p", Body=b"pub", ACL="private")
    # READ is the listing, not the settings
    for path in ("/%s?acl" % bucket, "/%s?cors" % bucket, "/%s?tagging" % bucket,
                 "/%s?location" % bucket, "/%s?versioning" % bucket, "/%s/k?acl" % bucket):
        check_s3_error(raw.request("GET", path, sign=False), 403, "AccessDenied")
    # the native API's anonymous_read makes the objects public too
    _patch_props(endpoint, bucket, b'{"anonymous_read": true}')
    assert _public(raw, bucket, "k") == (200, 200, 403)
    assert raw.request("GET", "/%s/k" % bucket, sign=False).body == b"data"
    for path in ("/%s/k?tagging" % bucket, "/%s/k?acl" % bucket, "/%s?acl" % bucket):
        check_s3_error(raw.request("GET", path, sign=False), 403, "AccessDenied")
        assert raw.request("GET", path).status == 200, path
    oacl = s3.get_object_acl(Bucket=bucket, Key="k")
    assert oacl["Grants"] == _grants(endpoint, True), oacl
    s3.put_object(Bucket=bucket, Key="p", Body=b"pub", ACL="public-read")
    s3.put_object_acl(Bucket=bucket, Key="k", ACL="public-read")
    s3.put_object_acl(Bucket=bucket, Key="k", AccessControlPolicy={
        "Owner": oacl["Owner"], "Grants": oacl["Grants"]})
    # ... and then one of them cannot be made private: refused as AWS refuses an ACL its
    # bucket overrides, not a silent success; bucket-owner-full-control (which pipelines send on
    # every write) is taken
    for call in (lambda: s3.put_object(Bucket=bucket, Key="q", Body=b"x", ACL="private"),
                 lambda: s3.put_object_acl(Bucket=bucket, Key="k", ACL="private"),
                 lambda: s3.put_object_acl(Bucket=bucket, Key="k", AccessControlPolicy={
                     "Owner": oacl["Owner"], "Grants": _grants(endpoint, False)})):
        st, code, resp = err(call)
        assert (st, code) == (400, "AccessControlListNotSupported"), resp
        assert "cannot be made private" in resp["Error"]["Message"], resp
    assert raw.request("HEAD", "/%s/q" % bucket).status == 404
    s3.put_object(Bucket=bucket, Key="q", Body=b"x", ACL="bucket-owner-full-control")
    s3.put_object_acl(Bucket=bucket, Key="q", ACL="bucket-owner-full-control")
    assert raw.request("GET", "/%s/q" % bucket, sign=False).body == b"x"
    # still no write grant, and none for anyone else
    for call in (lambda: s3.put_bucket_acl(Bucket=bucket, ACL="public-read-write"),
                 lambda: s3.put_object_acl(Bucket=bucket, Key="k", ACL="public-read-write"),
                 lambda: s3.put_bucket_acl(Bucket=bucket, AccessControlPolicy={
                     "Owner": acl["Owner"], "Grants": acl["Grants"] + [
                         {"Grantee": ALL_USERS, "Permission": "WRITE"}]}),
                 lambda: s3.put_bucket_acl(Bucket=bucket, AccessControlPolicy={
                     "Owner": acl["Owner"], "Grants": [
                         {"Grantee": ALL_USERS, "Permission": "READ"}]})):
        assert err(call)[:2] == (501, "NotImplemented")
    assert _public(raw, bucket, "k") == (200, 200, 403)
    # private on the bucket (here as the owner-only policy) closes the listing and the objects
    s3.put_bucket_acl(Bucket=bucket, AccessControlPolicy={
        "Owner": acl["Owner"], "Grants": _grants(endpoint, False)})
    assert _public(raw, bucket, "p") == (403, 403, 403)
    assert s3.get_bucket_acl(Bucket=bucket)["Grants"] == _grants(endpoint, False)
    assert s3.get_object_acl(Bucket=bucket, Key="p")["Grants"] == _grants(endpoint, False)
    # the document GET answers may be put back; canned ones both ways
    s3.put_bucket_acl(Bucket=bucket, AccessControlPolicy={
        "Owner": acl["Owner"], "Grants": acl["Grants"]})
    assert _public(raw, bucket, "p") == (403, 200, 403)
    s3.put_bucket_acl(Bucket=bucket, ACL="private")
    assert _public(raw, bucket, "p") == (403, 403, 403)
    s3.put_bucket_acl(Bucket=bucket, ACL="public-read")
    assert _public(raw, bucket, "p") == (403, 200, 403)
    s3.put_bucket_acl(Bucket=bucket, ACL="bucket-owner-full-control")
    assert _public(raw, bucket, "p") == (403, 403, 403)
    # a missing bucket
    nb = helpers.unique_bucket_name("acl")
    assert err(s3.put_bucket_acl, Bucket=nb, ACL="public-read")[:2] == (404, "NoSuchBucket")
    assert err(s3.put_object, Bucket=nb, Key="x", Body=b"x", ACL="public-read")[:2] == (
        404, "NoSuchBucket")


def test_bucket_tagging(endpoint, raw, s3, bucket):
    """A bucket's tags (what Terraform and cost tools set): up to 50, replaced whole by each
    PUT, kept beside its other settings, removed by DELETE; S3's tag rules as on objects."""
    assert err(s3.get_bucket_tagging, Bucket=bucket)[:2] == (404, "NoSuchTagSet")
    tags = [{"Key": "team", "Value": "vision"}, {"Key": "cost-center", "Value": "ml 42"},
            {"Key": "empty", "Value": ""}]
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": tags})
    got = s3.get_bucket_tagging(Bucket=bucket)["TagSet"]
    assert sorted(got, key=lambda t: t["Key"]) == sorted(tags, key=lambda t: t["Key"]), got
    # the bucket's ACL is another property: changing one keeps the other
    s3.put_bucket_acl(Bucket=bucket, ACL="public-read")
    assert len(s3.get_bucket_tagging(Bucket=bucket)["TagSet"]) == 3
    s3.put_bucket_acl(Bucket=bucket, ACL="private")
    # fifty, and a PUT replaces the whole set
    fifty = [{"Key": "k%02d" % i, "Value": "v%d" % i} for i in range(50)]
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": fifty})
    assert len(s3.get_bucket_tagging(Bucket=bucket)["TagSet"]) == 50
    st, code, resp = err(s3.put_bucket_tagging, Bucket=bucket,
                         Tagging={"TagSet": fifty + [{"Key": "one", "Value": "more"}]})
    assert (st, code) == (400, "BadRequest"), resp
    assert resp["Error"]["Message"] == "Bucket tag count cannot be greater than 50"
    for bad, code in (([{"Key": "aws:x", "Value": "v"}], "InvalidTag"),
                      ([{"Key": "a", "Value": "1"}, {"Key": "a", "Value": "2"}], "InvalidTag"),
                      ([{"Key": "k" * 129, "Value": "v"}], "InvalidTag")):
        assert err(s3.put_bucket_tagging, Bucket=bucket, Tagging={"TagSet": bad})[:2] == (
            400, code), bad
    check_s3_error(raw.request("PUT", "/%s?tagging" % bucket, body=b"<Tagging/>"), 400,
                   "MalformedXML")
    assert len(s3.get_bucket_tagging(Bucket=bucket)["TagSet"]) == 50
    # unsigned: no
    assert raw.request("GET", "/%s?tagging" % bucket, sign=False).status == 403
    s3.delete_bucket_tagging(Bucket=bucket)
    assert err(s3.get_bucket_tagging, Bucket=bucket)[:2] == (404, "NoSuchTagSet")
    s3.delete_bucket_tagging(Bucket=bucket)  # none: still 204
    # objects' tags are their own
    s3.put_object(Bucket=bucket, Key="o", Body=b"x", Tagging="a=b")
    assert s3.get_object_tagging(Bucket=bucket, Key="o")["TagSet"] == [{"Key": "a", "Value": "b"}]
    nb = helpers.unique_bucket_name("tags")
    assert err(s3.put_bucket_tagging, Bucket=nb, Tagging={"TagSet": tags})[:2] == (
        404, "NoSuchBucket")


def test_create_bucket_public_read(endpoint, raw, s3):
    """CreateBucket with x-amz-acl public-read makes a bucket anyone may list; again with
    private (us-east-1: the owner may create its bucket again) closes it."""
    nb = helpers.unique_bucket_name("acl")
    s3.create_bucket(Bucket=nb, ACL="public-read")
    try:
        s3.put_object(Bucket=nb, Key="k", Body=b"data")
        assert _public(raw, nb, "k") == (403, 200, 403)
        assert s3.get_bucket_acl(Bucket=nb)["Grants"] == _grants(endpoint, True)
        s3.create_bucket(Bucket=nb, ACL="private")
        assert _public(raw, nb, "k") == (403, 403, 403)
        s3.create_bucket(Bucket=nb)  # no ACL: unchanged
        assert _public(raw, nb, "k") == (403, 403, 403)
    finally:
        _empty_bucket(s3, nb)


def test_bucket_acl_needs_write(endpoint, raw, s3, bucket):
    """Opening a bucket to everyone is a write: a read-only key may not."""
    if endpoint.kind != "proxy":
        pytest.skip("the read-only key is the session cluster's")
    ro = helpers.boto3_client(endpoint, "AKRO", "secretRO")
    s3.put_object(Bucket=bucket, Key="k", Body=b"data")
    assert ro.get_bucket_acl(Bucket=bucket)["Grants"][0]["Permission"] == "FULL_CONTROL"
    assert err(ro.put_bucket_acl, Bucket=bucket, ACL="public-read")[:2] == (403, "AccessDenied")
    assert _public(raw, bucket, "k") == (403, 403, 403)


def test_bucket_acl_clients(endpoint, raw, s3, bucket, s3cmd, aws1):
    """s3cmd setacl --acl-public reads the ACL and puts it back with an AllUsers READ grant;
    the aws CLI sends the canned name."""
    s3.put_object(Bucket=bucket, Key="k", Body=b"data")
    s3cmd("setacl", "s3://%s" % bucket, "--acl-public")
    assert _public(raw, bucket, "k") == (403, 200, 403)
    p = s3cmd("info", "s3://%s" % bucket)
    assert b"*anon*: READ" in p.stdout, p.stdout
    s3cmd("setacl", "s3://%s" % bucket, "--acl-private")
    assert _public(raw, bucket, "k") == (403, 403, 403)
    aws1("s3api", "put-bucket-acl", "--bucket", bucket, "--acl", "public-read")
    assert _public(raw, bucket, "k") == (403, 200, 403)
    aws1("s3api", "put-bucket-acl", "--bucket", bucket, "--acl", "private")
    assert _public(raw, bucket, "k") == (403, 403, 403)


def test_s3cmd_remote_copy(s3cmd, s3, bucket):
    """s3cmd cp s3->s3 reads the source's ACL and puts it on the copy: both must work."""
    s3.put_object(Bucket=bucket, Key="s3cmd-src", Body=b"from s3cmd")
    s3cmd("cp", "s3://%s/s3cmd-src" % bucket, "s3://%s/s3cmd-dst" % bucket)
    assert s3.get_object(Bucket=bucket, Key="s3cmd-dst")["Body"].read() == b"from s3cmd"
    p = s3cmd("info", "s3://%s/s3cmd-dst" % bucket)
    assert b"FULL_CONTROL" in p.stdout, p.stdout


# ---------------------------------------------------------------- versioning

def test_list_versions_version_id_marker(raw, s3, bucket):
    """ListObjectVersions' version-id-marker as AWS takes it: echoed in <VersionIdMarker>;
    "null" (every object's version) after a key-marker resumes after that key; without a
    key-marker, or naming another version: 400 InvalidArgument."""
    for k in ("a", "b", "c"):
        s3.put_object(Bucket=bucket, Key=k, Body=b"v")
    r = s3.list_object_versions(Bucket=bucket, KeyMarker="a", VersionIdMarker="null")
    assert r["VersionIdMarker"] == "null" and r["KeyMarker"] == "a", r
    assert [v["Key"] for v in r["Versions"]] == ["b", "c"], r
    page = s3.list_object_versions(Bucket=bucket, MaxKeys=1)
    assert (page["NextKeyMarker"], page["NextVersionIdMarker"]) == ("a", "null"), page
    r = s3.list_object_versions(Bucket=bucket, KeyMarker=page["NextKeyMarker"],
                                VersionIdMarker=page["NextVersionIdMarker"], MaxKeys=1)
    assert [v["Key"] for v in r["Versions"]] == ["b"], r
    for q, msg in [("version-id-marker=null",
                    "A version-id marker cannot be specified without a key marker."),
                   ("key-marker=a&version-id-marker=3HL4kqtJlcpXroDTDmJ",
                    "Invalid version id specified")]:
        x = raw.request("GET", "/%s?versions&%s" % (bucket, q))
        err = check_s3_error(x, 400, "InvalidArgument")
        assert err["Message"] == msg, err


def test_versioning(endpoint, raw, s3, bucket):
    r = s3.get_bucket_versioning(Bucket=bucket)
    assert "Status" not in r and "MFADelete" not in r, r
    r = raw.request("GET", "/%s?versioning" % bucket)
    assert r.status == 200 and b"<Status>" not in r.body and b"VersioningConfiguration" in r.body
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Suspended"})
    st, code, resp = err(s3.put_bucket_versioning, Bucket=bucket,
                         VersioningConfiguration={"Status": "Enabled"})
    assert (st, code) == (501, "NotImplemented")
    assert resp["Error"]["Message"] == "Versioning is not supported: buckets are unversioned."
    assert "Status" not in s3.get_bucket_versioning(Bucket=bucket)
    nb = helpers.unique_bucket_name("nover")
    assert err(s3.get_bucket_versioning, Bucket=nb)[:2] == (404, "NoSuchBucket")


def test_rclone_purge(endpoint, s3, tmp_path):
    """rclone purge asks GetBucketVersioning first and logs an ERROR when that fails."""
    if not shutil.which("rclone"):
        pytest.skip("rclone not installed")
    b = helpers.unique_bucket_name("purge")
    s3.create_bucket(Bucket=b)
    for k in ("a", "d/b", "d/e/c"):
        s3.put_object(Bucket=b, Key=k, Body=k.encode())
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
    try:
        p = subprocess.run(["rclone", "--retries", "1", "--low-level-retries", "1", "-v", "purge",
                            "hoard:" + b], env=env, capture_output=True, timeout=120)
        text = (p.stdout + p.stderr).decode(errors="replace")
        assert p.returncode == 0, text[-3000:]
        assert "ERROR" not in text, text[-3000:]
        with open(endpoint.access_log) as f:  # it did ask, and got its answer
            asked = [line for line in f if "uri=/%s?versioning" % b in line]
        assert asked and all("status=200" in line for line in asked), asked
        assert b not in [x["Name"] for x in s3.list_buckets()["Buckets"]]
    finally:
        _empty_bucket(s3, b)


# ---------------------------------------------------------------- presigned expiry

def _replace(url, name, value):
    parts = urllib.parse.urlsplit(url)
    q = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    q = [(k, value if k == name else v) for k, v in q]
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(q)))


@pytest.mark.parametrize("value,status,code,message", [
    ("-7", 403, "AuthorizationQueryParametersError", "X-Amz-Expires must be non-negative"),
    ("609901", 403, "AuthorizationQueryParametersError",
     "X-Amz-Expires must be less than a week (in seconds); that is, the given X-Amz-Expires "
     "must be less than 604800 seconds"),
    ("soon", 403, "AuthorizationQueryParametersError", "X-Amz-Expires should be a number"),
    ("0", 403, "AccessDenied", "Request has expired"),
])
def test_presigned_expires_out_of_range(endpoint, s3, bucket, value, status, code, message):
    """s3-tests test_object_raw_get_x_amz_expires_out_*: 403 (AWS, checked in 2022)."""
    s3.put_object(Bucket=bucket, Key="pe", Body=b"secret")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "pe"},
                                    ExpiresIn=300)
    r = from_requests(requests.get(_replace(url, "X-Amz-Expires", value), timeout=10))
    e = check_s3_error(r, status, code)
    assert e["Message"] == message, e


def test_presigned_expired_body(endpoint, s3, bucket):
    """AWS's body for an expired URL names X-Amz-Expires, Expires and ServerTime."""
    s3.put_object(Bucket=bucket, Key="px", Body=b"x")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "px"},
                                    ExpiresIn=1)
    time.sleep(2.1)
    r = from_requests(requests.get(url, timeout=10))
    e = check_s3_error(r, 403, "AccessDenied")
    assert e["Message"] == "Request has expired" and e["X-Amz-Expires"] == "1", e
    for k in ("Expires", "ServerTime"):
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", e[k]), e
    assert e["Expires"] < e["ServerTime"], e
