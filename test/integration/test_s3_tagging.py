"""S3 object tagging on native buckets (docs/s3-compatibility.md), on a standalone target and
through a cluster proxy (relay, and the 307 of s3.redirect): PutObjectTagging,
GetObjectTagging, DeleteObjectTagging with S3's limits and error codes (the ceph s3-tests
tagging cases), x-amz-tagging on PutObject, CreateMultipartUpload and CopyObject
(x-amz-tagging-directive), x-amz-tagging-count on GET and HEAD, an overwrite dropping the tags,
and tags left out of the object's content, ETag and Last-Modified. S3-backed buckets:
test_cache_copy.py::test_tags_in_s3_backed_buckets."""
import base64
import hashlib
import json
import time

import botocore.exceptions
import pytest
import requests

import helpers
from conftest import ACCESS_KEY, SECRET_KEY, _empty_bucket
from helpers import check_s3_error, client_error

ENDPOINTS = ("target", "proxy")


def tagset(*pairs):
    return {"TagSet": [{"Key": k, "Value": v} for k, v in pairs]}


def tags_of(s3, bucket, key):
    return [(t["Key"], t["Value"]) for t in s3.get_object_tagging(Bucket=bucket, Key=key)["TagSet"]]


def listed(s3, bucket, key):
    """(ETag, LastModified with milliseconds) as ListObjectsV2 shows the object."""
    for o in s3.list_objects_v2(Bucket=bucket, Prefix=key).get("Contents", []):
        if o["Key"] == key:
            return o["ETag"], o["LastModified"]
    raise AssertionError("%s not listed" % key)


def tagging_xml(pairs):
    return ("<Tagging><TagSet>%s</TagSet></Tagging>" % "".join(
        "<Tag><Key>%s</Key><Value>%s</Value></Tag>" % kv for kv in pairs)).encode()


def raw_put_tagging(raw, bucket, key, body, headers=None, sign=True):
    h = {"Content-MD5": base64.b64encode(hashlib.md5(body).digest()).decode()}
    h.update(headers or {})
    return raw.request("PUT", "/%s/%s?tagging" % (bucket, key), headers=h, body=body, sign=sign)


def test_put_get_delete_tags(s3, raw, bucket):
    """s3-tests test_get_obj_tagging, test_get_obj_head_tagging, test_put_modify_tags,
    test_put_delete_tags; tagging changes neither content, ETag nor Last-Modified."""
    data = helpers.pattern_bytes(70000, seed=7)
    s3.put_object(Bucket=bucket, Key="t/obj", Body=data, Metadata={"m": "1"},
                  ContentType="text/x-tagged")
    before = listed(s3, bucket, "t/obj")
    assert tags_of(s3, bucket, "t/obj") == []
    assert "x-amz-tagging-count" not in s3.head_object(
        Bucket=bucket, Key="t/obj")["ResponseMetadata"]["HTTPHeaders"]
    time.sleep(0.05)  # a rewritten row would get a later mtime (listings show milliseconds)
    r = s3.put_object_tagging(Bucket=bucket, Key="t/obj",
                              Tagging=tagset(("zeta", "last"), ("alpha", "first")))
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    # sorted by key, as RGW answers (s3-tests compare lists)
    assert tags_of(s3, bucket, "t/obj") == [("alpha", "first"), ("zeta", "last")]
    head = s3.head_object(Bucket=bucket, Key="t/obj")
    assert head["ResponseMetadata"]["HTTPHeaders"]["x-amz-tagging-count"] == "2"
    assert head["Metadata"] == {"m": "1"} and head["ContentType"] == "text/x-tagged"
    got = s3.get_object(Bucket=bucket, Key="t/obj")
    assert got["TagCount"] == 2 and got["Body"].read() == data
    assert listed(s3, bucket, "t/obj") == before
    # a new set replaces the old one entirely
    s3.put_object_tagging(Bucket=bucket, Key="t/obj", Tagging=tagset(("only", "")))
    assert tags_of(s3, bucket, "t/obj") == [("only", "")]
    assert s3.head_object(Bucket=bucket, Key="t/obj")["ResponseMetadata"][
        "HTTPHeaders"]["x-amz-tagging-count"] == "1"
    # DeleteObjectTagging: 204, no tags, no count
    r = s3.delete_object_tagging(Bucket=bucket, Key="t/obj")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert tags_of(s3, bucket, "t/obj") == []
    assert "TagCount" not in s3.get_object(Bucket=bucket, Key="t/obj")
    # an empty TagSet is a delete too
    s3.put_object_tagging(Bucket=bucket, Key="t/obj", Tagging=tagset(("k", "v")))
    s3.put_object_tagging(Bucket=bucket, Key="t/obj", Tagging={"TagSet": []})
    assert tags_of(s3, bucket, "t/obj") == []
    assert listed(s3, bucket, "t/obj") == before
    assert s3.get_object(Bucket=bucket, Key="t/obj")["Body"].read() == data


def test_tag_limits(s3, raw, bucket):
    """s3-tests test_put_max_tags, test_put_excess_tags, test_put_max_kvsize_tags,
    test_put_excess_key_tags, test_put_excess_val_tags and AWS's other refusals; a refused
    set leaves the tags as they were."""
    s3.put_object(Bucket=bucket, Key="lim", Body=b"x")
    ten = [(str(i), str(i)) for i in range(10)]
    s3.put_object_tagging(Bucket=bucket, Key="lim", Tagging=tagset(*ten))
    assert tags_of(s3, bucket, "lim") == ten

    def refused(pairs, status, code):
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            s3.put_object_tagging(Bucket=bucket, Key="lim", Tagging=tagset(*pairs))
        assert client_error(ei)[:2] == (status, code), (pairs, ei.value.response)
        assert tags_of(s3, bucket, "lim") == ten
        return ei.value.response["Error"]["Message"]

    # AWS: BadRequest (RGW, which s3-tests follow, says InvalidTag; both 400)
    msg = refused([(str(i), "v") for i in range(11)], 400, "BadRequest")
    assert msg == "Object tags cannot be greater than 10"
    big = [("k" * 128, "v" * 256)] + [("%03d" % i + "k" * 125, "v" * 256) for i in range(9)]
    s3.put_object_tagging(Bucket=bucket, Key="lim", Tagging=tagset(*big))
    assert sorted(tags_of(s3, bucket, "lim")) == sorted(big)
    # limits count Unicode characters, not bytes
    uni = [("\u00e9" * 128, "\u4e2d" * 256)]
    s3.put_object_tagging(Bucket=bucket, Key="lim", Tagging=tagset(*uni))
    assert tags_of(s3, bucket, "lim") == uni
    s3.put_object_tagging(Bucket=bucket, Key="lim", Tagging=tagset(*ten))
    assert refused([("k" * 129, "v")], 400, "InvalidTag").startswith("The TagKey")
    assert refused([("k", "v" * 257)], 400, "InvalidTag").startswith("The TagValue")
    assert refused([("\u00e9" * 129, "v")], 400, "InvalidTag").startswith("The TagKey")
    refused([("dup", "1"), ("dup", "2")], 400, "InvalidTag")
    refused([("aws:reserved", "v")], 400, "InvalidTag")
    # (botocore refuses an empty key itself)
    check_s3_error(raw_put_tagging(raw, bucket, "lim", tagging_xml([("", "v")])), 400,
                   "InvalidTag")
    # bodies that are not a Tagging document
    for body in (b"", b"<Tagging>", b"<Other><TagSet/></Other>", b"<Tagging/>",
                 b"<Tagging><TagSet><Tag><Key>k</Key></Tag></TagSet></Tagging>",
                 b"<Tagging><TagSet><Tag><Key>a</Key><Key>b</Key><Value>v</Value></Tag>"
                 b"</TagSet></Tagging>",
                 b"<Tagging><TagSet><Bogus/></TagSet></Tagging>"):
        check_s3_error(raw_put_tagging(raw, bucket, "lim", body), 400, "MalformedXML")
    body = tagging_xml([("a", "b")])
    r = raw_put_tagging(raw, bucket, "lim", body,
                        {"Content-MD5": base64.b64encode(b"0" * 16).decode()})
    check_s3_error(r, 400, "BadDigest")
    # Content-MD5 is optional; the S3 namespace is read too
    r = raw.request("PUT", "/%s/lim?tagging" % bucket, body=(
        b'<Tagging xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><TagSet><Tag><Key> sp </Key>'
        b"<Value>&lt;x&gt;</Value></Tag></TagSet></Tagging>"))
    assert r.status == 200, r
    assert tags_of(s3, bucket, "lim") == [(" sp ", "<x>")]
    # no object, no bucket
    for call, kw in ((s3.put_object_tagging, {"Tagging": tagset(("k", "v"))}),
                     (s3.get_object_tagging, {}), (s3.delete_object_tagging, {})):
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            call(Bucket=bucket, Key="absent", **kw)
        assert client_error(ei)[:2] == (404, "NoSuchKey")
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            call(Bucket=helpers.unique_bucket_name("none"), Key="k", **kw)
        assert client_error(ei)[:2] == (404, "NoSuchBucket")
    # a version other than null is none of this object's
    r = raw.request("PUT", "/%s/lim?tagging&versionId=v1" % bucket, body=body)
    check_s3_error(r, 400, "InvalidArgument")
    # another method on ?tagging is 405, never a write of the object
    r = raw.request("POST", "/%s/lim?tagging" % bucket, body=body)
    check_s3_error(r, 405, "MethodNotAllowed")
    assert s3.get_object(Bucket=bucket, Key="lim")["Body"].read() == b"x"


def test_put_object_with_tags(s3, raw, bucket):
    """x-amz-tagging on PutObject (s3-tests test_put_obj_with_tags), URL-encoded; an
    overwrite without it drops the tags, as AWS; a bad header stores nothing."""
    r = raw.request("PUT", "/%s/wt" % bucket, headers={"x-amz-tagging": "foo=bar&bar"},
                    body=b"A" * 100)
    assert r.status == 200, r
    assert tags_of(s3, bucket, "wt") == [("bar", ""), ("foo", "bar")]
    assert s3.get_object(Bucket=bucket, Key="wt")["Body"].read() == b"A" * 100
    s3.put_object(Bucket=bucket, Key="wt", Body=b"b", Tagging="a%20b=c%2Bd&e+f=%E2%82%AC")
    assert tags_of(s3, bucket, "wt") == [("a b", "c+d"), ("e f", "\u20ac")]
    assert s3.head_object(Bucket=bucket, Key="wt")["ResponseMetadata"][
        "HTTPHeaders"]["x-amz-tagging-count"] == "2"
    s3.put_object(Bucket=bucket, Key="wt", Body=b"c")  # overwrite: no tags any more
    assert tags_of(s3, bucket, "wt") == []
    for value, code in (("&".join("k%d=v" % i for i in range(11)), "BadRequest"),
                        ("k=1&k=2", "InvalidArgument"), ("k=%zz", "InvalidArgument"),
                        ("aws:x=1", "InvalidTag"), ("k=" + "v" * 257, "InvalidTag")):
        r = raw.request("PUT", "/%s/bad" % bucket, headers={"x-amz-tagging": value}, body=b"x")
        check_s3_error(r, 400, code)
        assert raw.request("HEAD", "/%s/bad" % bucket).status == 404
    r = raw.request("PUT", "/%s/wt" % bucket, headers={"x-amz-tagging": ""}, body=b"d")
    assert r.status == 200 and tags_of(s3, bucket, "wt") == []


def test_multipart_upload_with_tags(s3, raw, bucket):
    """x-amz-tagging at CreateMultipartUpload: the tags are the object's at Complete (and not
    before: until then there is no object)."""
    mpu = s3.create_multipart_upload(Bucket=bucket, Key="mp", Tagging="team=ml&stage=raw")
    part = helpers.pattern_bytes(5 * 1024 * 1024, seed=3)
    e1 = s3.upload_part(Bucket=bucket, Key="mp", UploadId=mpu["UploadId"], PartNumber=1,
                        Body=part)["ETag"]
    e2 = s3.upload_part(Bucket=bucket, Key="mp", UploadId=mpu["UploadId"], PartNumber=2,
                        Body=b"tail")["ETag"]
    s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=mpu["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1},
                                                            {"PartNumber": 2, "ETag": e2}]})
    assert tags_of(s3, bucket, "mp") == [("stage", "raw"), ("team", "ml")]
    assert s3.head_object(Bucket=bucket, Key="mp")["ETag"].endswith('-2"')
    r = raw.request("POST", "/%s/mp2?uploads" % bucket, headers={"x-amz-tagging": "a=1&a=2"})
    check_s3_error(r, 400, "InvalidArgument")
    assert not s3.list_multipart_uploads(Bucket=bucket).get("Uploads")


def test_copy_object_tags(endpoint, s3, raw, bucket):
    """x-amz-tagging-directive: COPY (the default) copies the source's tags, also to an object
    another target owns (through the proxy); REPLACE takes the request's x-amz-tagging (none:
    no tags); the tagging directive is independent of the metadata directive."""
    src = (bucket, "src")
    s3.put_object(Bucket=bucket, Key="src", Body=b"source bytes", Tagging="k1=v1&k2=v2",
                  Metadata={"m": "src"})
    other = helpers.placed_key(endpoint, bucket, "copy", src, same=False)
    s3.copy_object(Bucket=bucket, Key=other, CopySource={"Bucket": bucket, "Key": "src"})
    assert tags_of(s3, bucket, other) == [("k1", "v1"), ("k2", "v2")]
    assert s3.get_object(Bucket=bucket, Key=other)["Body"].read() == b"source bytes"
    same = helpers.placed_key(endpoint, bucket, "copy-same", src, same=True)
    s3.copy_object(Bucket=bucket, Key=same, CopySource={"Bucket": bucket, "Key": "src"},
                   TaggingDirective="COPY", Tagging="ignored=1")
    assert tags_of(s3, bucket, same) == [("k1", "v1"), ("k2", "v2")]
    s3.copy_object(Bucket=bucket, Key=other, CopySource={"Bucket": bucket, "Key": "src"},
                   TaggingDirective="REPLACE", Tagging="new=tag")
    assert tags_of(s3, bucket, other) == [("new", "tag")]
    s3.copy_object(Bucket=bucket, Key=same, CopySource={"Bucket": bucket, "Key": "src"},
                   TaggingDirective="REPLACE")
    assert tags_of(s3, bucket, same) == []
    # metadata REPLACE, tags COPY (and the other way round)
    s3.copy_object(Bucket=bucket, Key=other, CopySource={"Bucket": bucket, "Key": "src"},
                   MetadataDirective="REPLACE", Metadata={"m": "new"})
    h = s3.head_object(Bucket=bucket, Key=other)
    assert h["Metadata"] == {"m": "new"} and tags_of(s3, bucket, other) == [("k1", "v1"),
                                                                            ("k2", "v2")]
    s3.copy_object(Bucket=bucket, Key=other, CopySource={"Bucket": bucket, "Key": "src"},
                   TaggingDirective="REPLACE", Tagging="x=y")
    h = s3.head_object(Bucket=bucket, Key=other)
    assert h["Metadata"] == {"m": "src"} and tags_of(s3, bucket, other) == [("x", "y")]
    # the tags of the copy are its own: changing them leaves the source's
    s3.delete_object_tagging(Bucket=bucket, Key=other)
    assert tags_of(s3, bucket, "src") == [("k1", "v1"), ("k2", "v2")]
    r = raw.request("PUT", "/%s/bad" % bucket, headers={
        "x-amz-copy-source": "/%s/src" % bucket, "x-amz-tagging-directive": "MERGE"})
    err = check_s3_error(r, 400, "InvalidArgument")
    assert err["Message"] == "Unknown tagging directive.", err
    r = raw.request("PUT", "/%s/bad" % bucket, headers={
        "x-amz-copy-source": "/%s/src" % bucket, "x-amz-tagging-directive": "REPLACE",
        "x-amz-tagging": "aws:no=1"})
    check_s3_error(r, 400, "InvalidTag")
    assert raw.request("HEAD", "/%s/bad" % bucket).status == 404


def test_aws_cli_tagging(aws2, s3, bucket):
    """aws CLI v2: s3api put-object-tagging / get-object-tagging / delete-object-tagging, and
    put-object --tagging."""
    aws2("s3api", "put-object", "--bucket", bucket, "--key", "cli", "--tagging", "a=1")
    out = json.loads(aws2("s3api", "get-object-tagging", "--bucket", bucket, "--key",
                          "cli").stdout)
    assert out["TagSet"] == [{"Key": "a", "Value": "1"}], out
    aws2("s3api", "put-object-tagging", "--bucket", bucket, "--key", "cli", "--tagging",
         json.dumps(tagset(("b", "2"), ("c", "3"))))
    out = json.loads(aws2("s3api", "get-object-tagging", "--bucket", bucket, "--key",
                          "cli").stdout)
    assert out["TagSet"] == [{"Key": "b", "Value": "2"}, {"Key": "c", "Value": "3"}], out
    aws2("s3api", "delete-object-tagging", "--bucket", bucket, "--key", "cli")
    assert tags_of(s3, bucket, "cli") == []
    p = aws2("s3api", "put-object-tagging", "--bucket", bucket, "--key", "cli", "--tagging",
             json.dumps(tagset(*[(str(i), "v") for i in range(11)])), check=False)
    assert p.returncode != 0 and b"BadRequest" in p.stderr, p.stderr


def test_unsigned_tagging_refused(endpoint, s3, raw, bucket):
    """Tagging calls are authenticated like any write: unsigned is 403 and changes nothing."""
    s3.put_object(Bucket=bucket, Key="sec", Body=b"x", Tagging="keep=1")
    r = raw_put_tagging(raw, bucket, "sec", tagging_xml([("evil", "1")]), sign=False)
    check_s3_error(r, 403, "AccessDenied")
    r = raw.request("DELETE", "/%s/sec?tagging" % bucket, sign=False)
    check_s3_error(r, 403, "AccessDenied")
    r = raw.request("GET", "/%s/sec?tagging" % bucket, sign=False)
    check_s3_error(r, 403, "AccessDenied")
    r = raw.request("PUT", "/%s/sec?tagging" % bucket, body=tagging_xml([("evil", "1")]),
                    secret_key="not-the-secret")
    check_s3_error(r, 403, "SignatureDoesNotMatch")
    assert tags_of(s3, bucket, "sec") == [("keep", "1")]


def test_tagging_through_redirect(s3cluster):
    """A proxy with s3.redirect=true sends ?tagging calls to the owner with a 307, as every
    object call without a body sent at once (a PutObjectTagging body from requests, which
    sends it at once, is relayed instead); a client that follows the 307 (requests,
    re-signing at the new host) reads and deletes the tags there, and the relaying proxy
    reads the same tags."""
    p = s3cluster.redirect_proxy
    s3c = helpers.boto3_client(s3cluster)
    b = helpers.unique_bucket_name("tagredir")
    s3c.create_bucket(Bucket=b)
    try:
        s3c.put_object(Bucket=b, Key="obj", Body=b"x")
        auth = helpers.SigV4Requests(ACCESS_KEY, SECRET_KEY)
        url = "%s/%s/obj?tagging" % (p.url, b)
        r = requests.put(url, data=tagging_xml([("via", "redirect")]), auth=auth, timeout=30)
        assert r.status_code == 200 and r.history == [], r.text
        assert tags_of(s3c, b, "obj") == [("via", "redirect")]
        r = requests.get(url, auth=auth, timeout=30)
        assert r.status_code == 200 and b"<Key>via</Key>" in r.content, r.text
        assert [h.status_code for h in r.history] == [307], r.text
        r = requests.delete(url, auth=auth, timeout=30)
        assert r.status_code == 204 and [h.status_code for h in r.history] == [307], r.text
        assert tags_of(s3c, b, "obj") == []
        r = requests.put(url, data=tagging_xml([("no", "auth")]), allow_redirects=False,
                         timeout=30)
        assert r.status_code == 403 and "Location" not in r.headers, r
    finally:
        _empty_bucket(s3c, b)


def test_tags_travel_with_a_copy_job(s3cluster):
    """The copy job (`hoard bucket cp`) sends each object to its new owner with its identity
    (X-Hoard-Obj-Meta), as rebalance does: the tags arrive with it."""
    s3c = helpers.boto3_client(s3cluster)
    src, dst = helpers.unique_bucket_name("tagsrc"), helpers.unique_bucket_name("tagdst")
    s3c.create_bucket(Bucket=src)
    s3c.create_bucket(Bucket=dst)
    auth = helpers.SigV4Requests(ACCESS_KEY, SECRET_KEY)
    try:
        keys = ["k%d" % i for i in range(6)]
        for i, k in enumerate(keys):
            s3c.put_object(Bucket=src, Key=k, Body=b"v%d" % i, Tagging="n=%d&t=x" % i)
        s3c.put_object(Bucket=src, Key="untagged", Body=b"u")
        r = requests.post(s3cluster.url + "/v1/jobs", auth=auth, timeout=30,
                          json={"kind": "copy", "bucket": src, "args": {"to": dst}})
        assert r.status_code == 201, r.text
        jid = r.json()["id"]

        def done():
            j = requests.get("%s/v1/jobs/%s" % (s3cluster.url, jid), auth=auth,
                             timeout=30).json()
            return j if j.get("state") not in (None, "running") else None
        j = helpers.wait_until(done, timeout=60, interval=0.2, what="copy job")
        assert j["state"] == "done", j
        for i, k in enumerate(keys):
            assert tags_of(s3c, dst, k) == [("n", str(i)), ("t", "x")], k
        assert tags_of(s3c, dst, "untagged") == []
    finally:
        _empty_bucket(s3c, src)
        _empty_bucket(s3c, dst)


PYENV_TAGS = r'''
import json, os
import boto3, botocore
from botocore.config import Config
s3 = boto3.client("s3", endpoint_url=os.environ["EP"], region_name="us-east-1",
                  aws_access_key_id=os.environ["AK"], aws_secret_access_key=os.environ["SK"],
                  config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                                retries={"total_max_attempts": 1}))
b = os.environ["BUCKET"]
s3.put_object(Bucket=b, Key="py", Body=b"x", Tagging="a=1")
s3.put_object_tagging(Bucket=b, Key="py",
                      Tagging={"TagSet": [{"Key": "b", "Value": "2"}, {"Key": "c", "Value": ""}]})
out = {"botocore": botocore.__version__,
       "tags": s3.get_object_tagging(Bucket=b, Key="py")["TagSet"],
       "count": s3.get_object(Bucket=b, Key="py")["TagCount"]}
s3.delete_object_tagging(Bucket=b, Key="py")
out["after"] = s3.get_object_tagging(Bucket=b, Key="py")["TagSet"]
print(json.dumps(out))
'''


def test_pyenv_botocore_tagging(pyenv_python, endpoint, bucket):
    """botocore >= 1.36 (CRC32 checksum header instead of Content-MD5 on PutObjectTagging)."""
    p = helpers.run_pyenv(pyenv_python, PYENV_TAGS, {
        "EP": endpoint.url, "AK": endpoint.access_key, "SK": endpoint.secret_key,
        "BUCKET": bucket})
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["tags"] == [{"Key": "b", "Value": "2"}, {"Key": "c", "Value": ""}], out
    assert out["count"] == 2 and out["after"] == [], out


def test_replayed_tagging_writes_refused(endpoint, s3, raw, bucket):
    """PutObjectTagging, DeleteObjectTagging and a PutObject with x-amz-tagging captured on
    the wire and sent again two hours later: 403 RequestTimeTooSkewed before the body is
    read; the tags and the object stay as they were."""
    import datetime
    s3.put_object(Bucket=bucket, Key="rp", Body=b"x", Tagging="keep=1")
    when = datetime.datetime.utcnow() - datetime.timedelta(hours=2)
    for method, path, body, hdrs in (
            ("PUT", "/%s/rp?tagging" % bucket, tagging_xml([("evil", "1")]), {}),
            ("DELETE", "/%s/rp?tagging" % bucket, b"", {}),
            ("PUT", "/%s/rp" % bucket, b"overwritten", {"x-amz-tagging": "evil=1"})):
        h = helpers.sign_headers(method, raw.url(path), endpoint.access_key,
                                 endpoint.secret_key, headers=hdrs, when=when)
        r = helpers.raw_request(endpoint.host, endpoint.port, method, path, h, body)
        check_s3_error(r, 403, "RequestTimeTooSkewed")
    assert tags_of(s3, bucket, "rp") == [("keep", "1")]
    assert s3.get_object(Bucket=bucket, Key="rp")["Body"].read() == b"x"
