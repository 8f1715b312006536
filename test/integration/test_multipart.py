"""S3 multipart upload on a standalone target and through a cluster proxy: the API calls one
by one through Debian's boto3 1.26 (create, upload part, complete, abort, list parts, list
uploads, error codes), then real transfers: aws CLI v2 `s3 cp` (8 MiB parts), boto3
upload_file/download_file, and the pyenv botocore 1.4x with per-part CRC32 checksums."""
import base64
import hashlib
import json
import os
import re
import time
import zlib

import botocore.exceptions
import pytest

import helpers
from helpers import client_error, md5_hex, pattern_bytes

# every test using `endpoint` runs against a standalone target and through a cluster proxy
ENDPOINTS = ("target", "proxy")

MiB = 1024 * 1024
PART = 5 * MiB  # S3's minimum size of every part but the last


def mpu_etag(parts):
    """The multipart ETag S3 computes: md5 of the concatenated binary part MD5s, "-N"."""
    h = hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest()
    return '"%s-%d"' % (h, len(parts))


def upload_parts(s3, bucket, key, uid, parts, **kw):
    out = []
    for i, data in enumerate(parts, 1):
        r = s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=i, Body=data, **kw)
        assert r["ETag"] == '"%s"' % md5_hex(data)
        out.append({"PartNumber": i, "ETag": r["ETag"]})
    return out


def err(fn, *a, **kw):
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        fn(*a, **kw)
    return client_error(ei)[:2]


def mpu_dirs(endpoint):
    """Files left under the mountpaths' mpu/ directories."""
    out = []
    for mp in endpoint.mountpaths:
        for root, _dirs, files in os.walk(os.path.join(mp, "mpu")):
            out.extend(os.path.join(root, f) for f in files)
    return out


# ---------------------------------------------------------------- the API, call by call

def test_three_parts_round_trip(s3, bucket, endpoint):
    parts = [pattern_bytes(PART, seed=11), pattern_bytes(PART + 3, seed=12),
             pattern_bytes(MiB + 7, seed=13)]
    c = s3.create_multipart_upload(Bucket=bucket, Key="dir/big.bin", ContentType="text/x-big",
                                   Metadata={"color": "blue"})
    assert c["Bucket"] == bucket and c["Key"] == "dir/big.bin"
    uid = c["UploadId"]
    assert len(uid) == 32
    done = upload_parts(s3, bucket, "dir/big.bin", uid, parts)
    r = s3.complete_multipart_upload(Bucket=bucket, Key="dir/big.bin", UploadId=uid,
                                     MultipartUpload={"Parts": done})
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert r["ETag"] == mpu_etag(parts)
    assert r["Bucket"] == bucket and r["Key"] == "dir/big.bin"
    assert r["Location"].endswith("/%s/dir/big.bin" % bucket)

    whole = b"".join(parts)
    g = s3.get_object(Bucket=bucket, Key="dir/big.bin")
    assert g["Body"].read() == whole
    assert g["ETag"] == mpu_etag(parts)
    assert g["ContentLength"] == len(whole)
    assert g["ContentType"] == "text/x-big"
    assert g["Metadata"] == {"color": "blue"}
    # a range across the first part boundary
    g = s3.get_object(Bucket=bucket, Key="dir/big.bin", Range="bytes=%d-%d" % (PART - 5, PART + 4))
    assert g["Body"].read() == whole[PART - 5:PART + 5]
    h = s3.head_object(Bucket=bucket, Key="dir/big.bin")
    assert h["ETag"] == mpu_etag(parts) and h["ContentLength"] == len(whole)
    lst = s3.list_objects_v2(Bucket=bucket)["Contents"]
    assert [(o["Key"], o["Size"], o["ETag"]) for o in lst] == [
        ("dir/big.bin", len(whole), mpu_etag(parts))]
    # the parts are gone; nothing left behind
    assert mpu_dirs(endpoint) == []
    assert endpoint.tmp_files() == []
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []


def test_repeated_complete_same_answer(s3, bucket):
    parts = [pattern_bytes(PART, seed=21), b"tail"]
    uid = s3.create_multipart_upload(Bucket=bucket, Key="again")["UploadId"]
    done = upload_parts(s3, bucket, "again", uid, parts)
    r1 = s3.complete_multipart_upload(Bucket=bucket, Key="again", UploadId=uid,
                                      MultipartUpload={"Parts": done})
    r2 = s3.complete_multipart_upload(Bucket=bucket, Key="again", UploadId=uid,
                                      MultipartUpload={"Parts": done})
    assert r2["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert r1["ETag"] == r2["ETag"] == mpu_etag(parts)
    assert s3.get_object(Bucket=bucket, Key="again")["Body"].read() == b"".join(parts)
    # but a completed upload takes no more parts and cannot be aborted
    assert err(s3.upload_part, Bucket=bucket, Key="again", UploadId=uid, PartNumber=1,
               Body=b"x") == (404, "NoSuchUpload")
    assert err(s3.abort_multipart_upload, Bucket=bucket, Key="again",
               UploadId=uid) == (404, "NoSuchUpload")


def test_abort(s3, bucket, endpoint):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="ab")["UploadId"]
    upload_parts(s3, bucket, "ab", uid, [b"a" * 1000, b"b" * 1000])
    assert mpu_dirs(endpoint)
    r = s3.abort_multipart_upload(Bucket=bucket, Key="ab", UploadId=uid)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert mpu_dirs(endpoint) == []
    assert err(s3.upload_part, Bucket=bucket, Key="ab", UploadId=uid, PartNumber=3,
               Body=b"c") == (404, "NoSuchUpload")
    assert err(s3.abort_multipart_upload, Bucket=bucket, Key="ab",
               UploadId=uid) == (404, "NoSuchUpload")
    assert err(s3.list_parts, Bucket=bucket, Key="ab", UploadId=uid) == (404, "NoSuchUpload")
    assert err(s3.complete_multipart_upload, Bucket=bucket, Key="ab", UploadId=uid,
               MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"%s"' % md5_hex(
                   b"a" * 1000)}]}) == (404, "NoSuchUpload")
    assert err(s3.head_object, Bucket=bucket, Key="ab")[0] == 404


def test_unknown_upload_ids(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="k")["UploadId"]
    for bad in ("0" * 32, "not-an-id", "../../etc", uid.upper()):
        assert err(s3.upload_part, Bucket=bucket, Key="k", UploadId=bad, PartNumber=1,
                   Body=b"x") == (404, "NoSuchUpload"), bad
    # an id is bound to its key
    assert err(s3.upload_part, Bucket=bucket, Key="other", UploadId=uid, PartNumber=1,
               Body=b"x") == (404, "NoSuchUpload")
    assert err(s3.create_multipart_upload, Bucket="it-no-such-bucket-mpu",
               Key="k") == (404, "NoSuchBucket")
    s3.abort_multipart_upload(Bucket=bucket, Key="k", UploadId=uid)


def test_part_number_bounds(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="pn")["UploadId"]
    for n in (0, 10001):
        assert err(s3.upload_part, Bucket=bucket, Key="pn", UploadId=uid, PartNumber=n,
                   Body=b"x") == (400, "InvalidArgument"), n
    r = s3.upload_part(Bucket=bucket, Key="pn", UploadId=uid, PartNumber=10000, Body=b"last")
    assert r["ETag"] == '"%s"' % md5_hex(b"last")
    s3.abort_multipart_upload(Bucket=bucket, Key="pn", UploadId=uid)


def test_invalid_part_order(s3, bucket):
    parts = [pattern_bytes(PART, seed=31), pattern_bytes(PART, seed=32)]
    uid = s3.create_multipart_upload(Bucket=bucket, Key="order")["UploadId"]
    done = upload_parts(s3, bucket, "order", uid, parts)
    assert err(s3.complete_multipart_upload, Bucket=bucket, Key="order", UploadId=uid,
               MultipartUpload={"Parts": done[::-1]}) == (400, "InvalidPartOrder")
    assert err(s3.complete_multipart_upload, Bucket=bucket, Key="order", UploadId=uid,
               MultipartUpload={"Parts": [done[0], done[0]]}) == (400, "InvalidPartOrder")
    # the upload survives a rejected Complete
    r = s3.complete_multipart_upload(Bucket=bucket, Key="order", UploadId=uid,
                                     MultipartUpload={"Parts": done})
    assert r["ETag"] == mpu_etag(parts)


def test_invalid_part(s3, bucket):
    parts = [pattern_bytes(PART, seed=41), b"end"]
    uid = s3.create_multipart_upload(Bucket=bucket, Key="ip")["UploadId"]
    done = upload_parts(s3, bucket, "ip", uid, parts)
    wrong = [done[0], {"PartNumber": 2, "ETag": '"%s"' % md5_hex(b"other")}]
    assert err(s3.complete_multipart_upload, Bucket=bucket, Key="ip", UploadId=uid,
               MultipartUpload={"Parts": wrong}) == (400, "InvalidPart")
    missing = [done[0], {"PartNumber": 3, "ETag": done[1]["ETag"]}]
    assert err(s3.complete_multipart_upload, Bucket=bucket, Key="ip", UploadId=uid,
               MultipartUpload={"Parts": missing}) == (400, "InvalidPart")
    assert err(s3.head_object, Bucket=bucket, Key="ip")[0] == 404
    # ETags without quotes are accepted
    bare = [{"PartNumber": p["PartNumber"], "ETag": p["ETag"].strip('"')} for p in done]
    r = s3.complete_multipart_upload(Bucket=bucket, Key="ip", UploadId=uid,
                                     MultipartUpload={"Parts": bare})
    assert r["ETag"] == mpu_etag(parts)


def test_entity_too_small(s3, bucket):
    parts = [b"x" * 1024, pattern_bytes(PART, seed=51)]
    uid = s3.create_multipart_upload(Bucket=bucket, Key="small")["UploadId"]
    done = upload_parts(s3, bucket, "small", uid, parts)
    assert err(s3.complete_multipart_upload, Bucket=bucket, Key="small", UploadId=uid,
               MultipartUpload={"Parts": done}) == (400, "EntityTooSmall")
    # only the last part may be small; a subset of the parts may be completed
    r = s3.complete_multipart_upload(Bucket=bucket, Key="small", UploadId=uid,
                                     MultipartUpload={"Parts": done[1:]})
    assert r["ETag"] == mpu_etag(parts[1:])
    assert s3.get_object(Bucket=bucket, Key="small")["Body"].read() == parts[1]


def test_replace_part(s3, bucket, endpoint):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="rp")["UploadId"]
    upload_parts(s3, bucket, "rp", uid, [b"first version"])
    done = upload_parts(s3, bucket, "rp", uid, [b"second version"])
    assert len(mpu_dirs(endpoint)) == 1  # the replaced part file is gone
    parts = s3.list_parts(Bucket=bucket, Key="rp", UploadId=uid)["Parts"]
    assert [(p["PartNumber"], p["ETag"], p["Size"]) for p in parts] == [
        (1, '"%s"' % md5_hex(b"second version"), 14)]
    s3.complete_multipart_upload(Bucket=bucket, Key="rp", UploadId=uid,
                                 MultipartUpload={"Parts": done})
    assert s3.get_object(Bucket=bucket, Key="rp")["Body"].read() == b"second version"


def test_malformed_complete(endpoint, s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mx")["UploadId"]
    upload_parts(s3, bucket, "mx", uid, [b"data"])
    raw = endpoint.raw()
    for body in (b"<CompleteMultipartUpload><Part>", b"",
                 b"<CompleteMultipartUpload></CompleteMultipartUpload>",
                 b"<Other><Part><PartNumber>1</PartNumber><ETag>x</ETag></Part></Other>"):
        r = raw.request("POST", "/%s/mx?uploadId=%s" % (bucket, uid), body=body)
        helpers.check_s3_error(r, 400, "MalformedXML")
    s3.abort_multipart_upload(Bucket=bucket, Key="mx", UploadId=uid)


def test_list_parts_pagination(endpoint, s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="lp")["UploadId"]
    datas = {n: b"part-%d" % n * (n + 1) for n in (1, 2, 3, 5, 8, 13, 21)}
    for n, d in datas.items():
        s3.upload_part(Bucket=bucket, Key="lp", UploadId=uid, PartNumber=n, Body=d)
    r = s3.list_parts(Bucket=bucket, Key="lp", UploadId=uid, MaxParts=3)
    me = {"ID": endpoint.access_key, "DisplayName": endpoint.access_key}
    assert r["Owner"] == me and r["Initiator"] == me, r  # the caller's key, as ListObjects
    assert r["IsTruncated"] is True
    assert [p["PartNumber"] for p in r["Parts"]] == [1, 2, 3]
    assert r["NextPartNumberMarker"] == 3
    assert r["UploadId"] == uid and r["Key"] == "lp" and r["Bucket"] == bucket
    r = s3.list_parts(Bucket=bucket, Key="lp", UploadId=uid, MaxParts=3, PartNumberMarker=3)
    assert [p["PartNumber"] for p in r["Parts"]] == [5, 8, 13]
    r = s3.list_parts(Bucket=bucket, Key="lp", UploadId=uid, MaxParts=3, PartNumberMarker=13)
    assert [p["PartNumber"] for p in r["Parts"]] == [21]
    assert r["IsTruncated"] is False
    seen = []
    for page in s3.get_paginator("list_parts").paginate(
            Bucket=bucket, Key="lp", UploadId=uid, PaginationConfig={"PageSize": 2}):
        for p in page["Parts"]:
            seen.append((p["PartNumber"], p["Size"], p["ETag"]))
    assert seen == [(n, len(d), '"%s"' % md5_hex(d)) for n, d in sorted(datas.items())]
    s3.abort_multipart_upload(Bucket=bucket, Key="lp", UploadId=uid)


def test_list_multipart_uploads(endpoint, s3, bucket):
    keys = ["a/1", "a/2", "b", "c/x/y", "a/1"]
    ids = [s3.create_multipart_upload(Bucket=bucket, Key=k)["UploadId"] for k in keys]
    r = s3.list_multipart_uploads(Bucket=bucket)
    got = [(u["Key"], u["UploadId"]) for u in r["Uploads"]]
    # every upload names its Owner and Initiator (the caller's key; s3-tests
    # test_list_multipart_upload_owner reads both)
    me = {"ID": endpoint.access_key, "DisplayName": endpoint.access_key}
    assert all(u["Owner"] == me and u["Initiator"] == me for u in r["Uploads"]), r["Uploads"]
    # sorted by key, then initiation time (a/1 twice, in creation order)
    assert [k for k, _ in got] == ["a/1", "a/1", "a/2", "b", "c/x/y"]
    assert got[0][1] == ids[0] and got[1][1] == ids[4]
    assert r["IsTruncated"] is False
    r = s3.list_multipart_uploads(Bucket=bucket, Prefix="a/")
    assert [u["Key"] for u in r["Uploads"]] == ["a/1", "a/1", "a/2"]
    # pages of two, following NextKeyMarker / NextUploadIdMarker
    seen, kw = [], {}
    while True:
        r = s3.list_multipart_uploads(Bucket=bucket, MaxUploads=2, **kw)
        seen += [(u["Key"], u["UploadId"]) for u in r.get("Uploads", [])]
        if not r["IsTruncated"]:
            break
        kw = {"KeyMarker": r["NextKeyMarker"], "UploadIdMarker": r["NextUploadIdMarker"]}
    assert seen == got
    r = s3.list_multipart_uploads(Bucket=bucket, KeyMarker="a/2")
    assert [u["Key"] for u in r["Uploads"]] == ["b", "c/x/y"]
    r = s3.list_multipart_uploads(Bucket=bucket, Delimiter="/")
    assert [u["Key"] for u in r.get("Uploads", [])] == ["b"]
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/", "c/"]
    # completed and aborted uploads leave the list
    s3.abort_multipart_upload(Bucket=bucket, Key="b", UploadId=ids[2])
    done = upload_parts(s3, bucket, "a/2", ids[1], [b"only"])
    s3.complete_multipart_upload(Bucket=bucket, Key="a/2", UploadId=ids[1],
                                 MultipartUpload={"Parts": done})
    r = s3.list_multipart_uploads(Bucket=bucket)
    assert [u["Key"] for u in r["Uploads"]] == ["a/1", "a/1", "c/x/y"]
    for k, u in ((keys[0], ids[0]), (keys[4], ids[4]), (keys[3], ids[3])):
        s3.abort_multipart_upload(Bucket=bucket, Key=k, UploadId=u)
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []


def test_concurrent_completes(endpoint, bucket):
    """Two Completes of one upload at once (a client retrying a slow Complete): both get 200
    and the same ETag, and the object is whole."""
    import concurrent.futures
    s3 = helpers.boto3_client(endpoint, read_timeout=120)
    parts = [pattern_bytes(PART, seed=101 + i) for i in range(4)]
    uid = s3.create_multipart_upload(Bucket=bucket, Key="race")["UploadId"]
    done = upload_parts(s3, bucket, "race", uid, parts)
    clients = [helpers.boto3_client(endpoint, read_timeout=120) for _ in range(3)]

    def complete(c):
        return c.complete_multipart_upload(Bucket=bucket, Key="race", UploadId=uid,
                                           MultipartUpload={"Parts": done})["ETag"]

    with concurrent.futures.ThreadPoolExecutor(3) as ex:
        etags = list(ex.map(complete, clients))
    assert etags == [mpu_etag(parts)] * 3
    assert s3.get_object(Bucket=bucket, Key="race")["Body"].read() == b"".join(parts)
    assert mpu_dirs(endpoint) == [] and endpoint.tmp_files() == []


def test_delete_bucket_drops_uploads(s3, endpoint):
    name = helpers.unique_bucket_name("mpu")
    s3.create_bucket(Bucket=name)
    uids = {}
    for k in ("x", "y/z"):
        uids[k] = s3.create_multipart_upload(Bucket=name, Key=k)["UploadId"]
        upload_parts(s3, name, k, uids[k], [b"part one", b"part two"])
    assert len(mpu_dirs(endpoint)) == 4
    s3.delete_bucket(Bucket=name)
    assert mpu_dirs(endpoint) == []
    # a bucket of the same name starts without them
    s3.create_bucket(Bucket=name)
    assert s3.list_multipart_uploads(Bucket=name).get("Uploads", []) == []
    for k, uid in uids.items():
        assert err(s3.upload_part, Bucket=name, Key=k, UploadId=uid, PartNumber=3,
                   Body=b"x") == (404, "NoSuchUpload"), k
    s3.delete_bucket(Bucket=name)


def test_sha256_composite_checksum(s3, bucket):
    """Debian boto3 1.26 with an explicit ChecksumAlgorithm: parts carry SHA256, Complete
    answers the composite checksum, GET never serves it as a full-object checksum."""
    parts = [pattern_bytes(PART, seed=61), pattern_bytes(1000, seed=62)]
    c = s3.create_multipart_upload(Bucket=bucket, Key="sha", ChecksumAlgorithm="SHA256")
    uid = c["UploadId"]
    assert c.get("ChecksumAlgorithm") == "SHA256"
    done = []
    for i, d in enumerate(parts, 1):
        r = s3.upload_part(Bucket=bucket, Key="sha", UploadId=uid, PartNumber=i, Body=d,
                           ChecksumAlgorithm="SHA256")
        want = base64.b64encode(hashlib.sha256(d).digest()).decode()
        assert r["ChecksumSHA256"] == want
        done.append({"PartNumber": i, "ETag": r["ETag"], "ChecksumSHA256": want})
    lp = s3.list_parts(Bucket=bucket, Key="sha", UploadId=uid)
    assert [p["ChecksumSHA256"] for p in lp["Parts"]] == [p["ChecksumSHA256"] for p in done]
    # a part checksum that does not match what was stored
    bad = [dict(done[0]), done[1]]
    bad[0]["ChecksumSHA256"] = base64.b64encode(hashlib.sha256(b"x").digest()).decode()
    assert err(s3.complete_multipart_upload, Bucket=bucket, Key="sha", UploadId=uid,
               MultipartUpload={"Parts": bad}) == (400, "InvalidPart")
    r = s3.complete_multipart_upload(Bucket=bucket, Key="sha", UploadId=uid,
                                     MultipartUpload={"Parts": done})
    comp = hashlib.sha256(b"".join(hashlib.sha256(d).digest() for d in parts)).digest()
    assert r["ChecksumSHA256"] == "%s-2" % base64.b64encode(comp).decode()
    g = s3.get_object(Bucket=bucket, Key="sha", ChecksumMode="ENABLED")
    assert g["Body"].read() == b"".join(parts)
    assert "x-amz-checksum-sha256" not in g["ResponseMetadata"]["HTTPHeaders"]


def test_part_without_promised_checksum(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="nock",
                                     ChecksumAlgorithm="CRC32")["UploadId"]
    status, code = err(s3.upload_part, Bucket=bucket, Key="nock", UploadId=uid, PartNumber=1,
                       Body=b"no checksum here")
    assert (status, code) == (400, "InvalidRequest")
    s3.abort_multipart_upload(Bucket=bucket, Key="nock", UploadId=uid)


# ---------------------------------------------------------------- real transfers

def _sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(MiB), b""):
            h.update(chunk)
    return h.hexdigest()


def _write_file(path, size, seed):
    block = pattern_bytes(4 * MiB, seed=seed)
    with open(path, "wb") as f:
        left, i = size, 0
        while left:
            n = min(left, len(block))
            f.write((bytes([i & 0xFF]) + block[1:])[:n])  # every block differs
            left -= n
            i += 1


def test_aws_cli_v2_cp_100mib(aws2, s3, bucket, tmp_path, endpoint):
    src = tmp_path / "big.bin"
    _write_file(src, 100 * MiB, seed=71)
    aws2("s3", "cp", src, "s3://%s/cli/big.bin" % bucket, timeout=300)
    h = s3.head_object(Bucket=bucket, Key="cli/big.bin")
    assert h["ContentLength"] == 100 * MiB
    assert h["ETag"].endswith('-13"'), h["ETag"]  # 8 MiB parts: 12 full + 1
    dst = tmp_path / "down.bin"
    aws2("s3", "cp", "s3://%s/cli/big.bin" % bucket, dst, timeout=300)
    assert _sha256_file(dst) == _sha256_file(src)
    assert mpu_dirs(endpoint) == []


def test_boto3_upload_download_file_40mib(s3, bucket, tmp_path):
    from boto3.s3.transfer import TransferConfig
    src = tmp_path / "forty.bin"
    _write_file(src, 40 * MiB + 123, seed=81)
    cfg = TransferConfig(multipart_threshold=8 * MiB, multipart_chunksize=8 * MiB)
    s3.upload_file(str(src), bucket, "t/forty.bin", Config=cfg)
    h = s3.head_object(Bucket=bucket, Key="t/forty.bin")
    assert h["ContentLength"] == 40 * MiB + 123
    with open(src, "rb") as f:
        data = f.read()
    assert h["ETag"] == mpu_etag([data[i:i + 8 * MiB] for i in range(0, len(data), 8 * MiB)])
    dst = tmp_path / "forty-down.bin"
    s3.download_file(bucket, "t/forty.bin", str(dst), Config=cfg)
    assert _sha256_file(dst) == _sha256_file(src)


PYENV_MPU = r'''
import base64, hashlib, json, os, zlib
import boto3, botocore
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
s3 = boto3.client("s3", endpoint_url=os.environ["EP"], region_name="us-east-1",
                  aws_access_key_id=os.environ["AK"], aws_secret_access_key=os.environ["SK"],
                  config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                                retries={"total_max_attempts": 1}))
b, src, dst = os.environ["BUCKET"], os.environ["SRC"], os.environ["DST"]
MiB = 1024 * 1024
out = {"botocore": botocore.__version__}
cfg = TransferConfig(multipart_threshold=8 * MiB, multipart_chunksize=8 * MiB)
s3.upload_file(src, b, "py/file.bin", Config=cfg)
h = s3.head_object(Bucket=b, Key="py/file.bin", ChecksumMode="ENABLED")
out["etag"] = h["ETag"]
out["size"] = h["ContentLength"]
s3.download_file(b, "py/file.bin", dst, Config=cfg)
g = s3.get_object(Bucket=b, Key="py/file.bin", ChecksumMode="ENABLED")
out["get_equal"] = g["Body"].read() == open(src, "rb").read()
out["get_crc32"] = g.get("ChecksumCRC32")

# the same by hand, to see the composite checksum Complete answers
data = open(src, "rb").read()
parts = [data[i:i + 8 * MiB] for i in range(0, len(data), 8 * MiB)]
c = s3.create_multipart_upload(Bucket=b, Key="py/manual", ChecksumAlgorithm="CRC32")
uid = c["UploadId"]
done = []
for i, p in enumerate(parts, 1):
    r = s3.upload_part(Bucket=b, Key="py/manual", UploadId=uid, PartNumber=i, Body=p,
                       ChecksumAlgorithm="CRC32")
    done.append({"PartNumber": i, "ETag": r["ETag"], "ChecksumCRC32": r["ChecksumCRC32"]})
r = s3.complete_multipart_upload(Bucket=b, Key="py/manual", UploadId=uid,
                                 MultipartUpload={"Parts": done})
out["manual_crc32"] = r.get("ChecksumCRC32")
out["manual_type"] = r.get("ChecksumType")
out["part_crc32"] = [d["ChecksumCRC32"] for d in done]

# FULL_OBJECT CRC32: the server combines the part CRCs into the object's CRC
full = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
c = s3.create_multipart_upload(Bucket=b, Key="py/full", ChecksumAlgorithm="CRC32",
                               ChecksumType="FULL_OBJECT")
uid = c["UploadId"]
done = []
for i, p in enumerate(parts, 1):
    r = s3.upload_part(Bucket=b, Key="py/full", UploadId=uid, PartNumber=i, Body=p,
                       ChecksumAlgorithm="CRC32")
    done.append({"PartNumber": i, "ETag": r["ETag"], "ChecksumCRC32": r["ChecksumCRC32"]})
r = s3.complete_multipart_upload(Bucket=b, Key="py/full", UploadId=uid, ChecksumCRC32=full,
                                 ChecksumType="FULL_OBJECT", MultipartUpload={"Parts": done})
out["full_crc32"] = r.get("ChecksumCRC32")
out["full_expect"] = full
g = s3.get_object(Bucket=b, Key="py/full", ChecksumMode="ENABLED")
out["full_get_equal"] = g["Body"].read() == data
out["full_get_crc32"] = g.get("ChecksumCRC32")
print(json.dumps(out))
'''


def test_pyenv_botocore_upload_file_crc32(pyenv_python, endpoint, bucket, tmp_path):
    """botocore >= 1.36 asks for CRC32 at CreateMultipartUpload, sends x-amz-checksum-crc32
    with every part and <ChecksumCRC32> per part in Complete."""
    src = tmp_path / "py.bin"
    size = 20 * MiB + 5
    _write_file(src, size, seed=91)
    p = helpers.run_pyenv(pyenv_python, PYENV_MPU, {
        "EP": endpoint.url, "AK": endpoint.access_key, "SK": endpoint.secret_key, "BUCKET": bucket,
        "SRC": str(src), "DST": str(tmp_path / "py-down.bin")}, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    data = src.read_bytes()
    parts = [data[i:i + 8 * MiB] for i in range(0, len(data), 8 * MiB)]
    assert out["size"] == size
    assert out["etag"] == mpu_etag(parts)
    assert out["get_equal"] is True
    assert out["get_crc32"] is None, out  # no composite value passed off as the object's CRC
    assert _sha256_file(tmp_path / "py-down.bin") == _sha256_file(src)
    assert out["part_crc32"] == [helpers.crc32_b64(x) for x in parts]
    comp = zlib.crc32(b"".join(base64.b64decode(c) for c in out["part_crc32"]))
    assert out["manual_crc32"] == "%s-%d" % (
        base64.b64encode(comp.to_bytes(4, "big")).decode(), len(parts)), out
    assert out["manual_type"] == "COMPOSITE"
    assert out["full_crc32"] == out["full_expect"] == helpers.crc32_b64(data), out
    assert out["full_get_equal"] is True
    assert out["full_get_crc32"] == helpers.crc32_b64(data), out


def test_leftover_parts_of_a_completed_upload_are_pruned(target_factory):
    """A write-through Complete is answered before its cached copy is assembled from the
    parts; a target killed in between keeps a completed upload that still has parts. They go
    with the upload's record once it is older than the hour a retried Complete is answered
    for, when the next upload on that mountpath is created. Simulated here on a native
    bucket: the record aged and a part row and file put back, in the stopped target's
    catalog."""
    import sqlite3
    t = target_factory()
    s3 = helpers.boto3_client(t)
    s3.create_bucket(Bucket="prune")
    c = s3.create_multipart_upload(Bucket="prune", Key="k")
    uid = c["UploadId"]
    listed = upload_parts(s3, "prune", "k", uid, [b"x" * 100])
    s3.complete_multipart_upload(Bucket="prune", Key="k", UploadId=uid,
                                 MultipartUpload={"Parts": listed})
    t.stop()
    def holds(m):
        db = sqlite3.connect(os.path.join(m, "catalog.db"))
        try:
            return db.execute("SELECT count(*) FROM mpu_uploads WHERE id = ?",
                              (uid,)).fetchone()[0] == 1
        except sqlite3.OperationalError:  # no upload was ever made on this mountpath
            return False
        finally:
            db.close()
    mp = [m for m in t.mountpaths if holds(m)][0]
    rel = "mpu/%s/1-left" % uid
    os.makedirs(os.path.join(mp, "mpu", uid), exist_ok=True)
    with open(os.path.join(mp, rel), "wb") as f:
        f.write(b"x" * 100)
    db = sqlite3.connect(os.path.join(mp, "catalog.db"))
    db.execute("INSERT INTO mpu_parts(id, part, size, etag, mtime, file) "
               "VALUES(?, 1, 100, 'e', 0, ?)", (uid, rel))
    db.commit()
    db.close()
    t.start()
    # younger than the hour: kept (a retry of that Complete still gets its answer)
    s3.create_multipart_upload(Bucket="prune", Key="k")
    assert os.path.exists(os.path.join(mp, rel))
    t.stop()
    db = sqlite3.connect(os.path.join(mp, "catalog.db"))
    db.execute("UPDATE mpu_uploads SET done = done - 2 * 3600 * 1000 WHERE id = ?", (uid,))
    db.commit()
    db.close()
    t.start()
    s3.create_multipart_upload(Bucket="prune", Key="k")
    assert not os.path.exists(os.path.join(mp, rel))
    assert not os.path.exists(os.path.join(mp, "mpu", uid))
    db = sqlite3.connect(os.path.join(mp, "catalog.db"))
    assert db.execute("SELECT count(*) FROM mpu_parts WHERE id = ?", (uid,)).fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM mpu_uploads WHERE id = ?", (uid,)).fetchone()[0] == 0
    db.close()
    assert s3.get_object(Bucket="prune", Key="k")["Body"].read() == b"x" * 100


# ---------------------------------------------------------------- keep-alive Complete

def _complete_body(done):
    return ("<CompleteMultipartUpload>%s</CompleteMultipartUpload>" % "".join(
        "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>" % (p["PartNumber"], p["ETag"])
        for p in done)).encode()


def test_large_complete_answers_at_once_then_the_result(endpoint, s3, bucket):
    """A Complete of s3.complete_keepalive bytes or more (16 MiB here, conftest.py) answers
    200 before the parts are assembled, with a body of unknown length (chunked): the XML
    declaration at once, spaces every 5 s while the disk works, then the result. One below
    the threshold is answered the ordinary way, with a Content-Length."""
    from conftest import COMPLETE_KEEPALIVE
    raw = endpoint.raw()
    parts = [pattern_bytes(PART, seed=40 + i) for i in range(3)]
    parts.append(pattern_bytes(COMPLETE_KEEPALIVE - 3 * PART, seed=44))  # exactly the threshold
    uid = s3.create_multipart_upload(Bucket=bucket, Key="ka/big")["UploadId"]
    done = upload_parts(s3, bucket, "ka/big", uid, parts)
    r = raw.request("POST", "/%s/ka/big?uploadId=%s" % (bucket, uid), body=_complete_body(done),
                    timeout=120)
    assert r.status == 200, r.body
    assert r.header("Content-Length") is None and r.header("Transfer-Encoding") == "chunked"
    assert r.body.startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n'), r.body[:100]
    gap, doc = re.match(rb"<\?xml[^>]*\?>\n( *)(<.*)", r.body, re.S).groups()
    print("keep-alive spaces: %d" % len(gap))  # as many as 20 ms intervals of assembly
    assert doc.startswith(b"<CompleteMultipartUploadResult"), r.body
    assert b"<ETag>%s</ETag>" % mpu_etag(parts).replace('"', "&quot;").encode() in doc or \
        b"<ETag>%s</ETag>" % mpu_etag(parts).encode() in doc, doc
    got = s3.get_object(Bucket=bucket, Key="ka/big")
    assert got["ETag"] == mpu_etag(parts) and got["ContentLength"] == COMPLETE_KEEPALIVE
    assert hashlib.md5(got["Body"].read()).hexdigest() == hashlib.md5(b"".join(parts)).hexdigest()
    # a retried Complete gets the same result (the ordinary way: nothing left to assemble)
    r2 = s3.complete_multipart_upload(Bucket=bucket, Key="ka/big", UploadId=uid,
                                      MultipartUpload={"Parts": done})
    assert r2["ETag"] == mpu_etag(parts)

    small = parts[:3]
    uid = s3.create_multipart_upload(Bucket=bucket, Key="ka/small")["UploadId"]
    done = upload_parts(s3, bucket, "ka/small", uid, small)
    r = raw.request("POST", "/%s/ka/small?uploadId=%s" % (bucket, uid), body=_complete_body(done))
    assert r.status == 200 and r.header("Content-Length") == str(len(r.body)), r.headers_list


def test_large_complete_error_after_the_200(endpoint, s3, bucket):
    """What the assembly finds after the 200 went out is an <Error> document in the body (as
    AWS sends it): here a full-object CRC32 that the assembled bytes do not have. boto3 reads
    it as a failure, nothing is stored, and the upload can still be completed."""
    from conftest import COMPLETE_KEEPALIVE
    raw = endpoint.raw()
    parts = [pattern_bytes(PART, seed=50 + i) for i in range(4)]
    assert sum(map(len, parts)) >= COMPLETE_KEEPALIVE
    uid = s3.create_multipart_upload(Bucket=bucket, Key="ka/bad")["UploadId"]
    done = upload_parts(s3, bucket, "ka/bad", uid, parts)
    wrong = helpers.crc32_b64(b"not these bytes")
    r = raw.request("POST", "/%s/ka/bad?uploadId=%s" % (bucket, uid), body=_complete_body(done),
                    headers={"x-amz-checksum-crc32": wrong, "x-amz-checksum-type": "FULL_OBJECT"},
                    timeout=120)
    assert r.status == 200 and r.header("Transfer-Encoding") == "chunked", r.headers_list
    e = helpers.parse_s3_error(r.body.split(b"?>", 1)[1].strip())
    assert e["Code"] == "BadDigest" and "CRC32" in e["Message"], e
    assert e["RequestId"] and e["Resource"], e
    head_missing = err(s3.head_object, Bucket=bucket, Key="ka/bad")
    assert head_missing[0] == 404, head_missing
    # botocore takes a 200 whose body is an <Error> for a failure to retry (this botocore
    # then leaves the code unparsed, as it does against AWS)
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        s3.complete_multipart_upload(Bucket=bucket, Key="ka/bad", UploadId=uid,
                                     MultipartUpload={"Parts": done}, ChecksumCRC32=wrong)
    assert ei.value.response["ResponseMetadata"].get("MaxAttemptsReached"), ei.value.response
    assert err(s3.head_object, Bucket=bucket, Key="ka/bad")[0] == 404
    s3.complete_multipart_upload(Bucket=bucket, Key="ka/bad", UploadId=uid,
                                 MultipartUpload={"Parts": done})
    got = s3.get_object(Bucket=bucket, Key="ka/bad")["Body"].read()
    assert got == b"".join(parts)


def test_replayed_large_complete_refused_before_the_200(endpoint, s3, raw, bucket):
    """A Complete of the keep-alive size signed two hours ago (replayed): 403
    RequestTimeTooSkewed, never the early 200; nothing is assembled and the upload stays."""
    import datetime
    from conftest import COMPLETE_KEEPALIVE
    parts = [pattern_bytes(PART, seed=60 + i) for i in range(4)]
    assert sum(map(len, parts)) >= COMPLETE_KEEPALIVE
    uid = s3.create_multipart_upload(Bucket=bucket, Key="ka/replay")["UploadId"]
    done = upload_parts(s3, bucket, "ka/replay", uid, parts)
    when = datetime.datetime.utcnow() - datetime.timedelta(hours=2)
    path = "/%s/ka/replay?uploadId=%s" % (bucket, uid)
    h = helpers.sign_headers("POST", raw.url(path), endpoint.access_key, endpoint.secret_key,
                             when=when)
    r = helpers.raw_request(endpoint.host, endpoint.port, "POST", path, h, _complete_body(done))
    helpers.check_s3_error(r, 403, "RequestTimeTooSkewed")
    assert err(s3.head_object, Bucket=bucket, Key="ka/replay")[0] == 404
    assert len(s3.list_parts(Bucket=bucket, Key="ka/replay", UploadId=uid)["Parts"]) == 4
    s3.abort_multipart_upload(Bucket=bucket, Key="ka/replay", UploadId=uid)


def test_large_complete_client_leaving_after_the_200(endpoint, s3, raw, bucket):
    """A client that goes away after the keep-alive 200 (before the document): the assembly
    finishes on its own, the object is whole, the node keeps serving, and a retried Complete
    gets the result."""
    import http.client
    parts = [pattern_bytes(PART, seed=70 + i) for i in range(4)]
    uid = s3.create_multipart_upload(Bucket=bucket, Key="ka/left")["UploadId"]
    done = upload_parts(s3, bucket, "ka/left", uid, parts)
    path = "/%s/ka/left?uploadId=%s" % (bucket, uid)
    body = _complete_body(done)
    h = helpers.sign_headers("POST", raw.url(path), endpoint.access_key, endpoint.secret_key)
    conn = http.client.HTTPConnection(endpoint.host, endpoint.port, timeout=60)
    conn.putrequest("POST", path, skip_accept_encoding=True)
    for k, v in dict(h, **{"Content-Length": str(len(body))}).items():
        conn.putheader(k, v)
    conn.endheaders()
    conn.send(body)
    resp = conn.getresponse()
    assert resp.status == 200
    conn.sock.close()  # gone before the document
    conn.close()
    helpers.wait_until(lambda: head_ok(s3, bucket, "ka/left"), timeout=60,
                       what="the abandoned Complete's object")
    got = s3.get_object(Bucket=bucket, Key="ka/left")
    assert got["ETag"] == mpu_etag(parts) and got["Body"].read() == b"".join(parts)
    r = s3.complete_multipart_upload(Bucket=bucket, Key="ka/left", UploadId=uid,
                                     MultipartUpload={"Parts": done})
    assert r["ETag"] == mpu_etag(parts)


def head_ok(s3, bucket, key):
    try:
        s3.head_object(Bucket=bucket, Key=key)
        return True
    except botocore.exceptions.ClientError:
        return False


def test_slow_copy_answers_before_it_ends(endpoint, s3, bucket):
    """A CopyObject still copying after s3.complete_keepalive_ms (20 ms here) answers 200 then,
    as AWS does: the XML declaration, spaces, then <CopyObjectResult> (chunked). boto3 reads
    it as the copy's result; the copy is whole. A copy seen to take far longer than the
    interval (over 12 of them) must have been answered that way; a fast one may be answered
    either way."""
    raw = endpoint.raw()
    body = pattern_bytes(128 << 20, seed=60)
    s3.put_object(Bucket=bucket, Key="cp/src", Body=body)
    want = '"%s"' % hashlib.md5(body).hexdigest()
    t0 = time.monotonic()
    r = raw.request("PUT", "/%s/cp/dst" % bucket, headers={"x-amz-copy-source": "/%s/cp/src" %
                                                           bucket}, timeout=120)
    took = time.monotonic() - t0
    assert r.status == 200, r.body
    gap, doc = re.match(rb"<\?xml[^>]*\?>\n?( *)(<.*)", r.body, re.S).groups()
    print("copy took %.3f s; keep-alive spaces: %d; chunked: %s" % (
        took, len(gap), r.header("Transfer-Encoding")))
    assert doc.startswith(b"<CopyObjectResult"), r.body[:300]
    assert want.encode() in doc.replace(b"&quot;", b'"'), doc
    if took > 0.25:
        assert r.header("Transfer-Encoding") == "chunked" and r.header("Content-Length") is None
        assert gap, r.body[:200]
    got = s3.copy_object(Bucket=bucket, Key="cp/dst2", CopySource={"Bucket": bucket,
                                                                    "Key": "cp/src"})
    assert got["CopyObjectResult"]["ETag"] == want
    for k in ("cp/dst", "cp/dst2"):
        o = s3.get_object(Bucket=bucket, Key=k)
        assert o["ETag"] == want and o["ContentLength"] == len(body)
        assert hashlib.md5(o["Body"].read()).hexdigest() == want.strip('"')


def test_slow_copy_unsigned_or_replayed_refused_first(endpoint, s3, raw, bucket):
    """The slow copy's early 200 comes only after the caller is checked: an unsigned
    CopyObject is 403 AccessDenied and one signed two hours ago (replayed) 403
    RequestTimeTooSkewed, both as ordinary answers (with a Content-Length), nothing copied."""
    import datetime
    body = pattern_bytes(32 << 20, seed=61)
    s3.put_object(Bucket=bucket, Key="cp/src", Body=body)
    hdr = {"x-amz-copy-source": "/%s/cp/src" % bucket}
    r = raw.request("PUT", "/%s/cp/unsigned" % bucket, headers=hdr, sign=False)
    helpers.check_s3_error(r, 403, "AccessDenied")
    assert r.header("Content-Length") is not None
    when = datetime.datetime.utcnow() - datetime.timedelta(hours=2)
    path = "/%s/cp/replayed" % bucket
    h = helpers.sign_headers("PUT", raw.url(path), endpoint.access_key, endpoint.secret_key,
                             headers=hdr, when=when)
    r = helpers.raw_request(endpoint.host, endpoint.port, "PUT", path, h, b"")
    helpers.check_s3_error(r, 403, "RequestTimeTooSkewed")
    assert r.header("Content-Length") is not None
    for k in ("cp/unsigned", "cp/replayed"):
        assert err(s3.head_object, Bucket=bucket, Key=k)[0] == 404
