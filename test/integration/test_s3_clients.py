"""Real S3 clients against a standalone target and a cluster proxy, end to end and byte for
byte: Debian boto3 1.26, aws CLI v2 (/usr/bin/aws) and v1 (PATH), s3cmd, curl --aws-sigv4,
boto3 presigned URLs, the pyenv botocore 1.4x (CRC32 checksums), a hand-made aws-chunked
upload with a trailer, and ListObjects V1/V2 parameters checked on the wire."""
import datetime
import json
import re
import subprocess
import urllib.parse
import xml.etree.ElementTree as ET

import botocore.exceptions
import pytest
import requests

import helpers
from helpers import SigV4Requests, check_s3_error, client_error, md5_hex, pattern_bytes

# every test using `endpoint` runs against a standalone target and through a cluster proxy
ENDPOINTS = ("target", "proxy")
S3NS = "http://s3.amazonaws.com/doc/2006-03-01/"


# ---------------------------------------------------------------- boto3 (Debian 1.26)

def test_boto3_put_get_head_delete(s3, bucket):
    data = pattern_bytes(300 * 1024 + 7, seed=1)
    r = s3.put_object(Bucket=bucket, Key="obj/one.bin", Body=data)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert r["ETag"] == '"%s"' % md5_hex(data)

    g = s3.get_object(Bucket=bucket, Key="obj/one.bin")
    assert g["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert g["Body"].read() == data
    assert g["ContentLength"] == len(data)
    assert g["ETag"] == '"%s"' % md5_hex(data)
    assert isinstance(g["LastModified"], datetime.datetime)

    h = s3.head_object(Bucket=bucket, Key="obj/one.bin")
    assert h["ContentLength"] == len(data)
    assert h["ETag"] == '"%s"' % md5_hex(data)
    assert h["ResponseMetadata"]["HTTPHeaders"].get("accept-ranges") == "bytes"
    lm = h["LastModified"]
    now = datetime.datetime.now(datetime.timezone.utc)
    assert abs((now - lm).total_seconds()) < 120, lm

    d = s3.delete_object(Bucket=bucket, Key="obj/one.bin")
    assert d["ResponseMetadata"]["HTTPStatusCode"] == 204
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        s3.head_object(Bucket=bucket, Key="obj/one.bin")
    assert client_error(ei)[0] == 404
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        s3.get_object(Bucket=bucket, Key="obj/one.bin")
    assert client_error(ei)[:2] == (404, "NoSuchKey")
    # S3 semantics: deleting a missing key succeeds
    assert s3.delete_object(Bucket=bucket, Key="obj/one.bin")[
        "ResponseMetadata"]["HTTPStatusCode"] == 204


def test_boto3_empty_object_and_overwrite(s3, bucket):
    s3.put_object(Bucket=bucket, Key="empty", Body=b"")
    g = s3.get_object(Bucket=bucket, Key="empty")
    assert g["Body"].read() == b""
    assert g["ContentLength"] == 0
    assert g["ETag"] == '"d41d8cd98f00b204e9800998ecf8427e"'
    s3.put_object(Bucket=bucket, Key="empty", Body=b"now with bytes")
    assert s3.get_object(Bucket=bucket, Key="empty")["Body"].read() == b"now with bytes"
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert keys == ["empty"]


def test_boto3_bucket_calls(s3):
    name = helpers.unique_bucket_name("bk")
    assert s3.create_bucket(Bucket=name)["ResponseMetadata"]["HTTPStatusCode"] == 200
    try:
        names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
        assert name in names
        assert s3.head_bucket(Bucket=name)["ResponseMetadata"]["HTTPStatusCode"] == 200
        loc = s3.get_bucket_location(Bucket=name)
        assert loc.get("LocationConstraint") in (None, "")
        # us-east-1: creating a bucket you already own succeeds
        assert s3.create_bucket(Bucket=name)["ResponseMetadata"]["HTTPStatusCode"] == 200
    finally:
        assert s3.delete_bucket(Bucket=name)["ResponseMetadata"]["HTTPStatusCode"] == 204
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        s3.head_bucket(Bucket=name)
    assert client_error(ei)[0] == 404
    assert name not in [b["Name"] for b in s3.list_buckets()["Buckets"]]


KEYS7 = ["a/1", "a/2", "a/b/3", "b", "c/x", "d", "e"]


@pytest.fixture
def bucket7(s3, bucket):
    for k in KEYS7:
        s3.put_object(Bucket=bucket, Key=k, Body=k.encode())
    return bucket


def test_list_v2_plain_prefix_delimiter(s3, bucket7):
    r = s3.list_objects_v2(Bucket=bucket7)
    assert [o["Key"] for o in r["Contents"]] == KEYS7
    assert r["KeyCount"] == 7 and r["IsTruncated"] is False
    sizes = {o["Key"]: o["Size"] for o in r["Contents"]}
    assert sizes == {k: len(k) for k in KEYS7}
    assert all(o["ETag"] == '"%s"' % md5_hex(o["Key"].encode()) for o in r["Contents"])

    r = s3.list_objects_v2(Bucket=bucket7, Prefix="a/")
    assert [o["Key"] for o in r["Contents"]] == ["a/1", "a/2", "a/b/3"]
    assert "CommonPrefixes" not in r

    r = s3.list_objects_v2(Bucket=bucket7, Delimiter="/")
    assert [o["Key"] for o in r["Contents"]] == ["b", "d", "e"]
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/", "c/"]
    assert r["KeyCount"] == 5

    r = s3.list_objects_v2(Bucket=bucket7, Prefix="a/", Delimiter="/")
    assert [o["Key"] for o in r["Contents"]] == ["a/1", "a/2"]
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/b/"]

    r = s3.list_objects_v2(Bucket=bucket7, Prefix="zzz")
    assert r.get("Contents", []) == [] and r["KeyCount"] == 0


def test_list_v2_pagination(s3, bucket7):
    seen, token, pages = [], None, 0
    while True:
        kw = dict(Bucket=bucket7, MaxKeys=2)
        if token:
            kw["ContinuationToken"] = token
        r = s3.list_objects_v2(**kw)
        pages += 1
        keys = [o["Key"] for o in r.get("Contents", [])]
        assert len(keys) <= 2
        assert r["KeyCount"] == len(keys)
        seen += keys
        if not r["IsTruncated"]:
            assert "NextContinuationToken" not in r
            break
        assert len(keys) == 2
        token = r["NextContinuationToken"]
        assert pages < 10, "pagination does not terminate"
    assert seen == KEYS7
    assert pages == 4


def test_list_v2_paginator_with_delimiter(s3, bucket7):
    contents, prefixes = [], []
    for page in s3.get_paginator("list_objects_v2").paginate(
            Bucket=bucket7, Delimiter="/", PaginationConfig={"PageSize": 2}):
        assert page["KeyCount"] <= 2
        contents += [o["Key"] for o in page.get("Contents", [])]
        prefixes += [p["Prefix"] for p in page.get("CommonPrefixes", [])]
    assert contents == ["b", "d", "e"]
    assert prefixes == ["a/", "c/"]


def test_list_v2_start_after(s3, bucket7):
    r = s3.list_objects_v2(Bucket=bucket7, StartAfter="a/b/3")
    assert [o["Key"] for o in r["Contents"]] == ["b", "c/x", "d", "e"]
    assert r["StartAfter"] == "a/b/3"
    r = s3.list_objects_v2(Bucket=bucket7, StartAfter="c")  # not a key itself
    assert [o["Key"] for o in r["Contents"]] == ["c/x", "d", "e"]
    r = s3.list_objects_v2(Bucket=bucket7, StartAfter="e")
    assert r.get("Contents", []) == []
    r = s3.list_objects_v2(Bucket=bucket7, StartAfter="a/2", MaxKeys=2)
    assert [o["Key"] for o in r["Contents"]] == ["a/b/3", "b"]
    assert r["IsTruncated"] is True


def test_list_v1_marker(s3, bucket7):
    r = s3.list_objects(Bucket=bucket7)
    assert [o["Key"] for o in r["Contents"]] == KEYS7
    assert r["IsTruncated"] is False

    # without a delimiter the client continues from the last key
    seen, marker = [], ""
    for _ in range(10):
        r = s3.list_objects(Bucket=bucket7, MaxKeys=3, Marker=marker)
        keys = [o["Key"] for o in r.get("Contents", [])]
        seen += keys
        if not r["IsTruncated"]:
            break
        marker = r.get("NextMarker") or keys[-1]
    assert seen == KEYS7

    r = s3.list_objects(Bucket=bucket7, Marker="c/x")
    assert [o["Key"] for o in r["Contents"]] == ["d", "e"]
    assert r["Marker"] == "c/x"

    # with a delimiter S3 returns NextMarker
    contents, prefixes, marker = [], [], ""
    for _ in range(10):
        r = s3.list_objects(Bucket=bucket7, Delimiter="/", MaxKeys=2, Marker=marker)
        contents += [o["Key"] for o in r.get("Contents", [])]
        prefixes += [p["Prefix"] for p in r.get("CommonPrefixes", [])]
        if not r["IsTruncated"]:
            break
        assert r.get("NextMarker"), "truncated V1 listing with a delimiter lacks NextMarker: %r" % r
        marker = r["NextMarker"]
    assert contents == ["b", "d", "e"]
    assert prefixes == ["a/", "c/"]


# ---------------------------------------------------------------- listings, on the wire

# keys whose names need URL encoding, in S3 (byte) order; with delimiter "/" the first five
# roll up into CommonPrefixes
ODD_KEYS = ["a&b/f", "dir one/a", "dir one/b", "pct%dir/d", "plus+dir/c", "top key+%&\u00fc.txt",
            "z", "\u00fcn\u00ef/e"]
ODD_PREFIXES = ["a&b/", "dir one/", "pct%dir/", "plus+dir/", "\u00fcn\u00ef/"]
ODD_CONTENTS = ["top key+%&\u00fc.txt", "z"]
URL_SAFE = re.compile(r"^(?:[A-Za-z0-9_.~/*+-]|%[0-9A-Fa-f]{2})*$")


@pytest.fixture
def odd_bucket(s3, bucket):
    for k in ODD_KEYS:
        s3.put_object(Bucket=bucket, Key=k, Body=k.encode())
    return bucket


def list_raw(raw, bucket, **params):
    """GET /bucket?params (names with "_" sent with "-"); returns (parsed root, response)."""
    q = "&".join("%s=%s" % (k.replace("_", "-"), urllib.parse.quote(str(v), safe=""))
                 for k, v in sorted(params.items()))
    r = raw.request("GET", "/%s?%s" % (bucket, q) if q else "/" + bucket)
    assert r.status == 200, r
    return ET.fromstring(r.body), r


def texts(root, path):
    return [e.text or "" for e in root.findall(path, {"s": S3NS})]


def url_decoded(values):
    """Every value is URL-encoded (nothing that needs escaping left raw); decoded as botocore
    decodes EncodingType=url answers."""
    for v in values:
        assert URL_SAFE.match(v), "not URL-encoded: %r" % v
    return [urllib.parse.unquote_plus(v) for v in values]


def test_list_v1_encoding_type_url(s3, raw, odd_bucket):
    """EncodingType=url encodes Key, Delimiter, Marker, NextMarker and the CommonPrefixes
    (space, '+', '%', '&', unicode) and, in V2, Prefix; boto3 decodes them back."""
    root, _ = list_raw(raw, odd_bucket, delimiter="/", encoding_type="url")
    assert root.findtext("s:EncodingType", namespaces={"s": S3NS}) == "url"
    assert url_decoded(texts(root, "s:CommonPrefixes/s:Prefix")) == ODD_PREFIXES
    assert url_decoded(texts(root, "s:Contents/s:Key")) == ODD_CONTENTS
    # without it, the same names come back as they are
    root, _ = list_raw(raw, odd_bucket, delimiter="/")
    assert texts(root, "s:CommonPrefixes/s:Prefix") == ODD_PREFIXES
    assert texts(root, "s:Contents/s:Key") == ODD_CONTENTS
    # the delimiter is echoed encoded; V1's top-level Prefix raw (botocore never decodes it)
    root, _ = list_raw(raw, odd_bucket, prefix="dir one/", delimiter=" ", encoding_type="url")
    assert texts(root, "s:Prefix") == ["dir one/"]
    assert url_decoded(texts(root, "s:Delimiter")) == [" "]
    assert url_decoded(texts(root, "s:Contents/s:Key")) == ["dir one/a", "dir one/b"]
    # V2 too
    root, _ = list_raw(raw, odd_bucket, list_type=2, delimiter="/", encoding_type="url",
                       start_after="a&b/f")
    assert url_decoded(texts(root, "s:StartAfter")) == ["a&b/f"]
    assert url_decoded(texts(root, "s:CommonPrefixes/s:Prefix")) == ODD_PREFIXES[1:]
    # boto3 asks for EncodingType=url on its own (then decodes what it gets)
    r = s3.list_objects(Bucket=odd_bucket, Delimiter="/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ODD_PREFIXES
    assert [o["Key"] for o in r["Contents"]] == ODD_CONTENTS


def test_list_v1_marker_next_marker_with_delimiter(raw, odd_bucket):
    """One entry per page with a delimiter: NextMarker is the last key or common prefix of
    the page (encoded with EncodingType=url), Marker echoes the request, and continuing from
    a common prefix skips every key under it."""
    seen, marker, pages = [], None, 0
    while True:
        params = dict(delimiter="/", max_keys=1, encoding_type="url")
        if marker is not None:
            params["marker"] = marker
        root, _ = list_raw(raw, odd_bucket, **params)
        pages += 1
        assert url_decoded(texts(root, "s:Marker")) == [marker or ""]
        page = url_decoded(texts(root, "s:Contents/s:Key") +
                           texts(root, "s:CommonPrefixes/s:Prefix"))
        assert len(page) == 1, page
        seen += page
        truncated = root.findtext("s:IsTruncated", namespaces={"s": S3NS})
        if truncated == "false":
            assert texts(root, "s:NextMarker") == []
            break
        assert truncated == "true"
        nm = url_decoded(texts(root, "s:NextMarker"))
        assert nm == page, (nm, page)
        marker = nm[0]
        assert pages < 20
    assert seen == sorted(ODD_PREFIXES + ODD_CONTENTS, key=lambda s: s.encode())
    assert pages == 7


def test_list_v2_fetch_owner_tokens_keycount(raw, odd_bucket):
    root, _ = list_raw(raw, "")  # ListBuckets: whose ID the listings name
    owner = root.findtext("s:Owner/s:ID", namespaces={"s": S3NS})
    assert owner
    # Owner only with fetch-owner=true in V2; always in V1
    root, _ = list_raw(raw, odd_bucket, list_type=2)
    assert texts(root, "s:Contents/s:Owner/s:ID") == []
    root, _ = list_raw(raw, odd_bucket, list_type=2, fetch_owner="false")
    assert texts(root, "s:Contents/s:Owner/s:ID") == []
    root, _ = list_raw(raw, odd_bucket, list_type=2, fetch_owner="true")
    assert texts(root, "s:Contents/s:Owner/s:ID") == [owner] * len(ODD_KEYS)
    root, _ = list_raw(raw, odd_bucket)
    assert texts(root, "s:Contents/s:Owner/s:ID") == [owner] * len(ODD_KEYS)
    # KeyCount counts CommonPrefixes; ContinuationToken and StartAfter are echoed
    root, _ = list_raw(raw, odd_bucket, list_type=2, delimiter="/", max_keys=3,
                       start_after="a&b/f")
    assert texts(root, "s:KeyCount") == ["3"]
    assert texts(root, "s:StartAfter") == ["a&b/f"]
    assert texts(root, "s:ContinuationToken") == []
    assert texts(root, "s:CommonPrefixes/s:Prefix") == ODD_PREFIXES[1:4]
    token = texts(root, "s:NextContinuationToken")[0]
    root, _ = list_raw(raw, odd_bucket, list_type=2, delimiter="/", max_keys=3,
                       start_after="a&b/f", continuation_token=token)
    assert texts(root, "s:ContinuationToken") == [token]
    assert texts(root, "s:StartAfter") == ["a&b/f"]
    assert texts(root, "s:CommonPrefixes/s:Prefix") == ODD_PREFIXES[4:]
    assert texts(root, "s:Contents/s:Key") == ODD_CONTENTS
    assert texts(root, "s:KeyCount") == ["3"]
    assert texts(root, "s:IsTruncated") == ["false"]


@pytest.mark.parametrize("lt", [1, 2])
def test_list_max_keys(raw, odd_bucket, lt):
    """max-keys: negative or not a number is 400 InvalidArgument; above 1000 is clamped to
    1000; 0 lists nothing."""
    extra = {"list_type": 2} if lt == 2 else {}
    for bad in ("-1", "abc", "1.5", ""):
        q = "max-keys=%s%s" % (bad, "&list-type=2" if lt == 2 else "")
        check_s3_error(raw.request("GET", "/%s?%s" % (odd_bucket, q)), 400, "InvalidArgument")
    root, _ = list_raw(raw, odd_bucket, max_keys=5000, **extra)
    assert texts(root, "s:MaxKeys") == ["1000"]
    assert len(texts(root, "s:Contents/s:Key")) == len(ODD_KEYS)
    root, _ = list_raw(raw, odd_bucket, max_keys=0, **extra)
    assert texts(root, "s:MaxKeys") == ["0"] and texts(root, "s:Contents/s:Key") == []
    root, _ = list_raw(raw, odd_bucket, max_keys=2, **extra)
    assert len(texts(root, "s:Contents/s:Key")) == 2 and texts(root, "s:IsTruncated") == ["true"]


def test_range_get(s3, bucket):
    data = bytes(range(256)) * 40  # 10240 bytes
    s3.put_object(Bucket=bucket, Key="r", Body=data)
    n = len(data)
    cases = [
        ("bytes=0-0", 0, 0),
        ("bytes=0-99", 0, 99),
        ("bytes=100-199", 100, 199),
        ("bytes=10000-", 10000, n - 1),          # open range
        ("bytes=-100", n - 100, n - 1),          # suffix
        ("bytes=-20000", 0, n - 1),              # suffix longer than the object
        ("bytes=10200-99999", 10200, n - 1),     # end past the object: clamped
        ("bytes=%d-%d" % (n - 1, n - 1), n - 1, n - 1),
    ]
    for rng, a, b in cases:
        g = s3.get_object(Bucket=bucket, Key="r", Range=rng)
        assert g["ResponseMetadata"]["HTTPStatusCode"] == 206, rng
        body = g["Body"].read()
        assert body == data[a:b + 1], rng
        assert g["ContentRange"] == "bytes %d-%d/%d" % (a, b, n), rng
        assert g["ContentLength"] == b - a + 1, rng


def test_conditional_get(s3, bucket):
    data = b"conditional body"
    etag = s3.put_object(Bucket=bucket, Key="c", Body=data)["ETag"]
    lm = s3.head_object(Bucket=bucket, Key="c")["LastModified"]
    past = lm - datetime.timedelta(days=1)
    future = lm + datetime.timedelta(days=1)

    assert s3.get_object(Bucket=bucket, Key="c", IfMatch=etag)["Body"].read() == data
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        s3.get_object(Bucket=bucket, Key="c", IfMatch='"0123456789abcdef0123456789abcdef"')
    assert client_error(ei)[:2] == (412, "PreconditionFailed")

    with pytest.raises(botocore.exceptions.ClientError) as ei:
        s3.get_object(Bucket=bucket, Key="c", IfNoneMatch=etag)
    assert client_error(ei)[0] == 304
    assert s3.get_object(Bucket=bucket, Key="c",
                         IfNoneMatch='"0123456789abcdef0123456789abcdef"')["Body"].read() == data

    assert s3.get_object(Bucket=bucket, Key="c", IfModifiedSince=past)["Body"].read() == data
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        s3.get_object(Bucket=bucket, Key="c", IfModifiedSince=future)
    assert client_error(ei)[0] == 304

    assert s3.get_object(Bucket=bucket, Key="c", IfUnmodifiedSince=future)["Body"].read() == data
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        s3.get_object(Bucket=bucket, Key="c", IfUnmodifiedSince=past)
    assert client_error(ei)[:2] == (412, "PreconditionFailed")

    # HEAD honours them too
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        s3.head_object(Bucket=bucket, Key="c", IfMatch='"ffffffffffffffffffffffffffffffff"')
    assert client_error(ei)[0] == 412
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        s3.head_object(Bucket=bucket, Key="c", IfNoneMatch=etag)
    assert client_error(ei)[0] == 304


def test_metadata_and_content_type(endpoint, s3, bucket):
    meta = {"color": "blue", "mixed-case": "Value With Spaces", "num": "42"}
    s3.put_object(Bucket=bucket, Key="m", Body=b"x", Metadata=meta,
                  ContentType="text/x-custom; charset=utf-8")
    h = s3.head_object(Bucket=bucket, Key="m")
    assert h["Metadata"] == meta
    assert h["ContentType"] == "text/x-custom; charset=utf-8"
    g = s3.get_object(Bucket=bucket, Key="m")
    assert g["Metadata"] == meta
    assert g["ContentType"] == "text/x-custom; charset=utf-8"
    assert g["Body"].read() == b"x"

    # upper-case metadata names come back lower-case (as on AWS)
    s3.put_object(Bucket=bucket, Key="m2", Body=b"y", Metadata={"UPPER": "v"})
    assert s3.head_object(Bucket=bucket, Key="m2")["Metadata"] == {"upper": "v"}
    # without a Content-Type, AWS's default is served: binary/octet-stream (the native API
    # keeps application/octet-stream)
    s3.put_object(Bucket=bucket, Key="m3", Body=b"z")
    assert s3.head_object(Bucket=bucket, Key="m3")["ContentType"] == "binary/octet-stream"
    assert s3.get_object(Bucket=bucket, Key="m3")["ContentType"] == "binary/octet-stream"
    r = requests.get(endpoint.url + "/v1/objects/%s/m3" % bucket, timeout=10,
                     auth=SigV4Requests(endpoint.access_key, endpoint.secret_key))
    assert r.status_code == 200 and r.headers["Content-Type"] == "application/octet-stream", r


def test_boto3_upload_download_fileobj(s3, bucket, tmp_path):
    data = pattern_bytes(3 * 1024 * 1024 + 5, seed=2)
    src = tmp_path / "src.bin"
    src.write_bytes(data)
    from boto3.s3.transfer import TransferConfig
    cfg = TransferConfig(multipart_threshold=64 * 1024 * 1024)
    s3.upload_file(str(src), bucket, "tx/src.bin", Config=cfg)
    dst = tmp_path / "dst.bin"
    s3.download_file(bucket, "tx/src.bin", str(dst), Config=cfg)
    assert dst.read_bytes() == data


def test_special_keys_round_trip(s3, bucket):
    keys = [
        "../x", "../../etc/passwd", "a/../b", "./dot", "%2e%2e/enc", "a//b", "//lead",
        "trail/", "sp ace", "plus+sign", "per%cent", "amp&eq=q?hash#", "tilde~star*",
        "données/ünï©ødé 日本語.txt", "emoji-\U0001F600", "semi;colon,comma", "quote\"'",
        "back\\slash", "tab\tch",
    ]
    for i, k in enumerate(keys):
        s3.put_object(Bucket=bucket, Key=k, Body=("body-%d" % i).encode())
    for i, k in enumerate(keys):
        g = s3.get_object(Bucket=bucket, Key=k)
        assert g["Body"].read() == ("body-%d" % i).encode(), k
    listed = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        listed += [o["Key"] for o in page.get("Contents", [])]
    assert listed == sorted(keys, key=lambda s: s.encode()), listed
    for k in keys:
        s3.delete_object(Bucket=bucket, Key=k)
    assert s3.list_objects_v2(Bucket=bucket)["KeyCount"] == 0


def test_key_1024_bytes_works(s3, bucket):
    key = "k" * 1000 + "/" + "é" * 11 + "x"  # 1000 + 1 + 22 + 1 = 1024 bytes
    assert len(key.encode()) == 1024
    s3.put_object(Bucket=bucket, Key=key, Body=b"long")
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == b"long"
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == [key]


# ---------------------------------------------------------------- aws CLI v2 and v1

def _aws_cli_round_trip(aws, s3, bucket, tmp_path):
    """cp up and down (a small file and a 5 MiB one, below the 64MB multipart threshold),
    ls, s3api head-object, rm. Few invocations: each costs about a second of CLI start-up."""
    small_data = b"hello from the aws cli\n"
    small = tmp_path / "small.txt"
    small.write_bytes(small_data)
    big_data = pattern_bytes(5 * 1024 * 1024, seed=3)
    big = tmp_path / "big.bin"
    big.write_bytes(big_data)

    aws("s3", "cp", small, "s3://%s/dir/small.txt" % bucket)
    aws("s3", "cp", big, "s3://%s/dir/big.bin" % bucket)
    assert s3.get_object(Bucket=bucket, Key="dir/small.txt")["Body"].read() == small_data
    assert s3.get_object(Bucket=bucket, Key="dir/big.bin")["Body"].read() == big_data

    out = aws("s3", "ls", "s3://%s/" % bucket).stdout.decode()
    assert [line.split() for line in out.splitlines() if line.strip()] == [["PRE", "dir/"]], out
    out = aws("s3", "ls", "s3://%s/dir/" % bucket).stdout.decode()
    lines = sorted((line.split() for line in out.splitlines() if line.strip()),
                   key=lambda f: f[-1])
    assert [(line[2], line[3]) for line in lines] == [
        (str(len(big_data)), "big.bin"), (str(len(small_data)), "small.txt")], out

    h = json.loads(aws("s3api", "head-object", "--bucket", bucket, "--key",
                       "dir/big.bin").stdout)
    assert h["ContentLength"] == len(big_data)
    assert h["ETag"] == '"%s"' % md5_hex(big_data)  # one part: no "-N" suffix

    dst = tmp_path / "down-big.bin"
    aws("s3", "cp", "s3://%s/dir/big.bin" % bucket, dst)
    assert dst.read_bytes() == big_data
    dst = tmp_path / "down-small.txt"
    aws("s3", "cp", "s3://%s/dir/small.txt" % bucket, dst)
    assert dst.read_bytes() == small_data

    aws("s3", "rm", "s3://%s/dir/small.txt" % bucket)
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        s3.head_object(Bucket=bucket, Key="dir/small.txt")
    assert client_error(ei)[0] == 404
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == ["dir/big.bin"]


def test_aws_cli_v2(aws2, s3, bucket, tmp_path):
    _aws_cli_round_trip(aws2, s3, bucket, tmp_path)


def test_aws_cli_v1(aws1, s3, bucket, tmp_path):
    _aws_cli_round_trip(aws1, s3, bucket, tmp_path)


def test_aws_cli_v2_recursive_sync(aws2, s3, bucket, tmp_path):
    src = tmp_path / "tree"
    files = {"a.txt": b"A" * 10, "empty": b"", "sub/b.txt": b"B" * 2000,
             "sub/deeper/c.bin": pattern_bytes(70000)}
    for rel, data in files.items():
        p = src / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    aws2("s3", "sync", src, "s3://%s/tree/" % bucket)
    got = {o["Key"]: o["Size"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]}
    assert got == {"tree/" + k: len(v) for k, v in files.items()}
    dst = tmp_path / "back"
    aws2("s3", "cp", "--recursive", "s3://%s/tree/" % bucket, dst)
    for rel, data in files.items():
        assert (dst / rel).read_bytes() == data, rel
    out = aws2("s3", "ls", "s3://").stdout.decode()
    assert bucket in out, out
    aws2("s3", "rm", "--recursive", "s3://%s/tree/sub/" % bucket)
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == [
        "tree/a.txt", "tree/empty"]


# ---------------------------------------------------------------- s3cmd

def test_s3cmd(s3cmd, s3, bucket, tmp_path):
    data = pattern_bytes(200 * 1024 + 3, seed=4)
    src = tmp_path / "s3cmd.bin"
    src.write_bytes(data)
    s3cmd("put", src, "s3://%s/s3cmd/obj.bin" % bucket)
    assert s3.get_object(Bucket=bucket, Key="s3cmd/obj.bin")["Body"].read() == data

    out = s3cmd("ls", "s3://%s/s3cmd/" % bucket).stdout.decode()
    assert "s3://%s/s3cmd/obj.bin" % bucket in out, out
    assert str(len(data)) in out, out
    out = s3cmd("ls").stdout.decode()
    assert "s3://%s" % bucket in out, out

    dst = tmp_path / "s3cmd-down.bin"
    s3cmd("get", "s3://%s/s3cmd/obj.bin" % bucket, dst)
    assert dst.read_bytes() == data

    out = s3cmd("info", "s3://%s/s3cmd/obj.bin" % bucket).stdout.decode()
    assert md5_hex(data) in out, out

    s3cmd("del", "s3://%s/s3cmd/obj.bin" % bucket)
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        s3.head_object(Bucket=bucket, Key="s3cmd/obj.bin")
    assert client_error(ei)[0] == 404


def test_s3cmd_bucket_lifecycle(s3cmd, s3):
    name = helpers.unique_bucket_name("s3cmd")
    s3cmd("mb", "s3://%s" % name)
    try:
        s3.head_bucket(Bucket=name)
    finally:
        s3cmd("rb", "s3://%s" % name)
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        s3.head_bucket(Bucket=name)
    assert client_error(ei)[0] == 404


# ---------------------------------------------------------------- curl

def _curl(*args, timeout=60):
    return subprocess.run(["curl", "-sS"] + [str(a) for a in args], capture_output=True,
                          timeout=timeout)


def test_curl_sigv4_put_get(endpoint, s3, bucket, tmp_path):
    data = pattern_bytes(100 * 1024 + 1, seed=5)
    src = tmp_path / "curl.bin"
    src.write_bytes(data)
    url = "%s/%s/curl/obj.bin" % (endpoint.url, bucket)
    auth = ["--aws-sigv4", "aws:amz:us-east-1:s3", "--user",
            "%s:%s" % (endpoint.access_key, endpoint.secret_key),
            "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"]
    p = _curl(*auth, "-T", src, "-o", tmp_path / "put.out", "-w", "%{http_code}", url)
    assert p.returncode == 0, p.stderr
    assert p.stdout == b"200", (p.stdout, (tmp_path / "put.out").read_bytes())
    assert s3.get_object(Bucket=bucket, Key="curl/obj.bin")["Body"].read() == data

    dst = tmp_path / "curl-down.bin"
    p = _curl(*auth, "-o", dst, "-w", "%{http_code}", url)
    assert p.returncode == 0, p.stderr
    assert p.stdout == b"200"
    assert dst.read_bytes() == data

    # curl signing the payload hash itself (signed hex body) also works for a small PUT
    p = _curl("--aws-sigv4", "aws:amz:us-east-1:s3", "--user",
              "%s:%s" % (endpoint.access_key, endpoint.secret_key),
              "-H", "x-amz-content-sha256: %s" % helpers.sha256_hex(b"signed body"),
              "--data-binary", "signed body", "-X", "PUT", "-o", tmp_path / "put2.out",
              "-w", "%{http_code}", url + ".2")
    assert p.stdout == b"200", (p.stdout, (tmp_path / "put2.out").read_bytes())
    assert s3.get_object(Bucket=bucket, Key="curl/obj.bin.2")["Body"].read() == b"signed body"


def test_presigned_get_with_curl(endpoint, s3, bucket, tmp_path):
    data = b"presigned content \x00\xff" * 100
    s3.put_object(Bucket=bucket, Key="pre/sig ned+key.bin", Body=data)
    url = s3.generate_presigned_url("get_object",
                                    Params={"Bucket": bucket, "Key": "pre/sig ned+key.bin"},
                                    ExpiresIn=300)
    assert "X-Amz-Signature=" in url and "X-Amz-Algorithm=AWS4-HMAC-SHA256" in url, url
    dst = tmp_path / "pre.bin"
    p = _curl("-o", dst, "-w", "%{http_code}", url)
    assert p.returncode == 0, p.stderr
    assert p.stdout == b"200", dst.read_bytes()[:500]
    assert dst.read_bytes() == data
    # plain requests too (no headers of its own signed)
    r = requests.get(url, timeout=10)
    assert r.status_code == 200 and r.content == data
    # a ranged GET on a presigned URL: Range is not signed, so it is allowed
    r = requests.get(url, headers={"Range": "bytes=0-8"}, timeout=10)
    assert r.status_code == 206 and r.content == data[:9]


def test_presigned_put(endpoint, s3, bucket):
    url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "pp"},
                                    ExpiresIn=300)
    r = requests.put(url, data=b"put via presigned URL", timeout=10)
    assert r.status_code == 200, r.content
    assert s3.get_object(Bucket=bucket, Key="pp")["Body"].read() == b"put via presigned URL"


# ---------------------------------------------------------------- botocore 1.4x (pyenv)

PYENV_SCRIPT = r'''
import base64, json, os, zlib
import boto3, botocore
from botocore.config import Config
s3 = boto3.client("s3", endpoint_url=os.environ["EP"], region_name="us-east-1",
                  aws_access_key_id=os.environ["AK"], aws_secret_access_key=os.environ["SK"],
                  config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                                retries={"total_max_attempts": 1}))
b = os.environ["BUCKET"]
out = {"botocore": botocore.__version__}
data = bytes((i * 7 + 3) % 251 for i in range(int(os.environ["SIZE"])))
r = s3.put_object(Bucket=b, Key="crc/obj", Body=data)
out["put_status"] = r["ResponseMetadata"]["HTTPStatusCode"]
out["put_crc32"] = r.get("ChecksumCRC32")
out["etag"] = r["ETag"]
r = s3.put_object(Bucket=b, Key="crc/explicit", Body=b"hello world", ChecksumAlgorithm="CRC32")
out["explicit_crc32"] = r.get("ChecksumCRC32")
g = s3.get_object(Bucket=b, Key="crc/obj", ChecksumMode="ENABLED")
body = g["Body"].read()
out["get_equal"] = body == data
out["get_crc32"] = g.get("ChecksumCRC32")
out["expect_crc32"] = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
g = s3.get_object(Bucket=b, Key="crc/explicit", ChecksumMode="ENABLED")
out["explicit_body"] = g["Body"].read().decode()
out["explicit_get_crc32"] = g.get("ChecksumCRC32")
h = s3.head_object(Bucket=b, Key="crc/obj", ChecksumMode="ENABLED")
out["head_crc32"] = h.get("ChecksumCRC32")
lst = s3.list_objects_v2(Bucket=b)
out["keys"] = [o["Key"] for o in lst.get("Contents", [])]
print(json.dumps(out))
'''


def test_pyenv_botocore_crc32(pyenv_python, endpoint, bucket):
    size = 1024 * 1024 + 13
    p = helpers.run_pyenv(pyenv_python, PYENV_SCRIPT, {
        "EP": endpoint.url, "AK": endpoint.access_key, "SK": endpoint.secret_key,
        "BUCKET": bucket, "SIZE": str(size)})
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    data = bytes((i * 7 + 3) % 251 for i in range(size))
    assert out["put_status"] == 200
    assert out["etag"] == '"%s"' % md5_hex(data)
    assert out["put_crc32"] == helpers.crc32_b64(data), out
    assert out["explicit_crc32"] == "DUoRhQ==", out
    assert out["get_equal"] is True
    assert out["get_crc32"] == out["expect_crc32"] == helpers.crc32_b64(data), out
    assert out["explicit_body"] == "hello world"
    assert out["explicit_get_crc32"] == "DUoRhQ==", out
    assert out["head_crc32"] in (None, helpers.crc32_b64(data)), out
    assert out["keys"] == ["crc/explicit", "crc/obj"]


def test_pyenv_aws_cli_v1_cp(aws1, bucket, tmp_path, s3):
    """aws CLI v1 1.45 runs botocore 1.4x: uploads carry x-amz-checksum-crc32."""
    data = pattern_bytes(2 * 1024 * 1024 + 1, seed=6)
    src = tmp_path / "v1.bin"
    src.write_bytes(data)
    aws1("s3", "cp", src, "s3://%s/v1.bin" % bucket)
    assert s3.get_object(Bucket=bucket, Key="v1.bin")["Body"].read() == data
    dst = tmp_path / "v1-down.bin"
    aws1("s3", "cp", "s3://%s/v1.bin" % bucket, dst)
    assert dst.read_bytes() == data


# ---------------------------------------------------------------- hand-made aws-chunked

CHUNKED_BODY = b"b\r\nhello world\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\r\n\r\n"


def _chunked_headers(endpoint, url, extra=None):
    h = {
        "Content-Encoding": "aws-chunked",
        "x-amz-decoded-content-length": "11",
        "x-amz-trailer": "x-amz-checksum-crc32",
        "x-amz-sdk-checksum-algorithm": "CRC32",
    }
    h.update(extra or {})
    return helpers.sign_headers("PUT", url, endpoint.access_key, endpoint.secret_key, h,
                                payload="STREAMING-UNSIGNED-PAYLOAD-TRAILER")


@pytest.mark.parametrize("framing", ["content-length", "http-chunked"])
def test_aws_chunked_trailer_upload(endpoint, s3, bucket, framing):
    key = "chunked-%s" % framing
    url = "%s/%s/%s" % (endpoint.url, bucket, key)
    h = _chunked_headers(endpoint, url)
    if framing == "content-length":
        r = requests.put(url, data=CHUNKED_BODY, headers=h, timeout=10)
    else:
        # HTTP/1.1 Transfer-Encoding: chunked around the aws-chunked body, as botocore 1.4x
        # does over https, split at awkward places
        parts = [CHUNKED_BODY[:3], CHUNKED_BODY[3:17], CHUNKED_BODY[17:40], CHUNKED_BODY[40:]]
        r = requests.put(url, data=iter(parts), headers=h, timeout=10)
    assert r.status_code == 200, r.content
    assert r.headers.get("ETag") == '"%s"' % md5_hex(b"hello world")
    assert r.headers.get("x-amz-checksum-crc32") == "DUoRhQ==", r.headers
    g = s3.get_object(Bucket=bucket, Key=key)
    assert g["Body"].read() == b"hello world"
    assert g["ContentLength"] == 11
    assert g["ResponseMetadata"]["HTTPHeaders"].get("content-encoding") in (None, ""), \
        "aws-chunked must not be stored as the object's Content-Encoding"


def test_aws_chunked_multi_chunk(endpoint, s3, bucket):
    data = pattern_bytes(200000, seed=7)
    chunks = [data[:65536], data[65536:131072], data[131072:]]
    body = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks)
    body += b"0\r\nx-amz-checksum-crc32:%s\r\n\r\n" % helpers.crc32_b64(data).encode()
    url = "%s/%s/multi" % (endpoint.url, bucket)
    h = _chunked_headers(endpoint, url, {"x-amz-decoded-content-length": str(len(data))})
    r = requests.put(url, data=body, headers=h, timeout=10)
    assert r.status_code == 200, r.content
    assert s3.get_object(Bucket=bucket, Key="multi")["Body"].read() == data


def test_aws_chunked_bad_trailer_checksum(endpoint, s3, bucket):
    body = CHUNKED_BODY.replace(b"DUoRhQ==", b"AAAAAA==")
    url = "%s/%s/badtrailer" % (endpoint.url, bucket)
    r = requests.put(url, data=body, headers=_chunked_headers(endpoint, url), timeout=10)
    resp = helpers.Resp(r.status_code, list(r.headers.items()), r.content)
    helpers.check_s3_error(resp, 400, "BadDigest")
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        s3.head_object(Bucket=bucket, Key="badtrailer")
    assert client_error(ei)[0] == 404


def test_native_and_s3_share_objects(endpoint, s3, bucket):
    data = pattern_bytes(5000, seed=8)
    r = requests.put("%s/v1/objects/%s/from/native" % (endpoint.url, bucket), data=data,
                     auth=SigV4Requests(endpoint.access_key, endpoint.secret_key),
                     timeout=10)
    assert r.status_code == 200, r.content
    assert s3.get_object(Bucket=bucket, Key="from/native")["Body"].read() == data
    s3.put_object(Bucket=bucket, Key="from/s3", Body=data[::-1])
    r = requests.get("%s/v1/objects/%s/from/s3" % (endpoint.url, bucket), timeout=10,
                     auth=SigV4Requests(endpoint.access_key, endpoint.secret_key))
    assert r.status_code == 200 and r.content == data[::-1]
    # the /s3/ prefix serves the same API
    g = requests.get("%s/s3/%s/from/s3" % (endpoint.url, bucket), timeout=10,
                     headers=helpers.sign_headers(
                         "GET", "%s/s3/%s/from/s3" % (endpoint.url, bucket),
                         endpoint.access_key, endpoint.secret_key))
    assert g.status_code == 200 and g.content == data[::-1]
