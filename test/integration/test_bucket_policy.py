"""Bucket policies (PutBucketPolicy, GetBucketPolicy, DeleteBucketPolicy,
GetBucketPolicyStatus): the subset that publishes a bucket (everyone may s3:GetObject its
objects and/or s3:ListBucket it), enforced for unsigned callers and for keys without access to
the bucket; everything else refused, never stored. Against a standalone target and through a
cluster proxy, with boto3, aws CLI v2 and raw HTTP."""
import base64
import json
import zlib

import botocore.exceptions
import pytest
import requests

import helpers
from conftest import CLUSTER_KEYS, PERM_TAG, _empty_bucket
from helpers import SigV4Requests, client_error

ENDPOINTS = ("target", "proxy")


def _doc(bucket, action="s3:GetObject", resource=None, **extra):
    st = {"Sid": "public", "Effect": "Allow", "Principal": "*", "Action": action,
          "Resource": resource or "arn:aws:s3:::%s/*" % bucket}
    st.update(extra)
    return json.dumps({"Version": "2012-10-17", "Statement": [st]})


def _refused(call, status, code):
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        call()
    got = client_error(ei)
    assert got[:2] == (status, code), got
    return got


def _anon(raw, method, path):
    return raw.request(method, path, sign=False).status


def test_public_read_policy(endpoint, raw, s3, bucket):
    s3.put_object(Bucket=bucket, Key="pub/a.jpg", Body=b"sample bytes")
    assert _anon(raw, "GET", "/%s/pub/a.jpg" % bucket) == 403
    _refused(lambda: s3.get_bucket_policy(Bucket=bucket), 404, "NoSuchBucketPolicy")
    _refused(lambda: s3.get_bucket_policy_status(Bucket=bucket), 404, "NoSuchBucketPolicy")

    # AWS's guide's policy, as the console writes it (pretty-printed)
    doc = json.dumps(json.loads(_doc(bucket)), indent=4)
    r = s3.put_bucket_policy(Bucket=bucket, Policy=doc)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert s3.get_bucket_policy(Bucket=bucket)["Policy"] == doc  # as sent
    assert s3.get_bucket_policy_status(Bucket=bucket)["PolicyStatus"]["IsPublic"] is True
    try:
        r = raw.request("GET", "/%s/pub/a.jpg" % bucket, sign=False)
        assert r.status == 200 and r.body == b"sample bytes", r
        assert _anon(raw, "HEAD", "/%s/pub/a.jpg" % bucket) == 200
        assert _anon(raw, "GET", "/%s/missing" % bucket) == 404
        # the objects, not the listing, not writes, not the settings
        for method, path in (("GET", "/%s?list-type=2" % bucket), ("HEAD", "/%s" % bucket),
                             ("GET", "/v1/buckets/%s" % bucket), ("PUT", "/%s/pub/b" % bucket),
                             ("DELETE", "/%s/pub/a.jpg" % bucket), ("GET", "/%s?policy" % bucket),
                             ("PUT", "/%s?policy" % bucket), ("DELETE", "/%s?policy" % bucket),
                             ("GET", "/%s?policyStatus" % bucket), ("GET", "/%s?acl" % bucket)):
            assert _anon(raw, method, path) == 403, (method, path)
        # the native API reads the same objects
        r = raw.request("GET", "/v1/objects/%s/pub/a.jpg" % bucket, sign=False)
        assert r.status in (200, 307), r
    finally:
        s3.delete_bucket_policy(Bucket=bucket)
    assert _anon(raw, "GET", "/%s/pub/a.jpg" % bucket) == 403
    _refused(lambda: s3.get_bucket_policy(Bucket=bucket), 404, "NoSuchBucketPolicy")
    s3.delete_bucket_policy(Bucket=bucket)  # none: still 204
    assert s3.get_object(Bucket=bucket, Key="pub/a.jpg")["Body"].read() == b"sample bytes"


def test_prefix_policy(endpoint, raw, s3, bucket):
    """AWS's recipe for publishing part of a bucket: s3:GetObject on arn:aws:s3:::B/public/*
    (and single keys). Only those objects open; the rest, the listing and writes stay closed,
    through every read path. Other wildcards are refused, never taken wider."""
    for k in ("public/a.jpg", "public/deep/b.jpg", "private/c.jpg", "readme.txt", "publicx"):
        s3.put_object(Bucket=bucket, Key=k, Body=k.encode())
    doc = _doc(bucket, resource=["arn:aws:s3:::%s/public/*" % bucket,
                                 "arn:aws:s3:::%s/readme.txt" % bucket])
    for res in ("%s/*.jpg", "%s/public/?.jpg", "%s/*/a.jpg"):
        r = raw.request("PUT", "/%s?policy" % bucket, body=_doc(
            bucket, resource="arn:aws:s3:::" + res % bucket).encode())
        helpers.check_s3_error(r, 501, "NotImplemented")
    s3.put_bucket_policy(Bucket=bucket, Policy=doc)
    try:
        assert s3.get_bucket_policy_status(Bucket=bucket)["PolicyStatus"]["IsPublic"] is True
        for k in ("public/a.jpg", "public/deep/b.jpg", "readme.txt"):
            r = raw.request("GET", "/%s/%s" % (bucket, k), sign=False)
            assert r.status == 200 and r.body == k.encode(), (k, r)
            assert _anon(raw, "HEAD", "/%s/%s" % (bucket, k)) == 200, k
            r = requests.get("%s/v1/objects/%s/%s" % (endpoint.url, bucket, k), timeout=10)
            assert r.status_code == 200 and r.content == k.encode(), (k, r.status_code)
        for k in ("private/c.jpg", "publicx", "readme.txt.bak", "Public/a.jpg"):
            assert _anon(raw, "GET", "/%s/%s" % (bucket, k)) == 403, k
            assert _anon(raw, "HEAD", "/%s/%s" % (bucket, k)) == 403, k
            r = requests.get("%s/v1/objects/%s/%s" % (endpoint.url, bucket, k), timeout=10)
            assert r.status_code == 403, (k, r.status_code)
        for method, path in (("GET", "/%s?list-type=2" % bucket), ("HEAD", "/%s" % bucket),
                             ("PUT", "/%s/public/new" % bucket),
                             ("DELETE", "/%s/public/a.jpg" % bucket),
                             ("GET", "/%s/public/a.jpg?tagging" % bucket)):
            assert _anon(raw, method, path) == 403, (method, path)
        # a batch GET reads what everyone may read, entry by entry
        for names, status in ((["public/a.jpg", "readme.txt"], 200),
                              (["public/a.jpg", "private/c.jpg"], 403)):
            r = requests.post("%s/v1/batch" % endpoint.url, timeout=10, json={
                "bucket": bucket, "entries": [{"name": n} for n in names]})
            assert r.status_code == status, (names, r.status_code, r.text[:300])
        if endpoint.kind == "proxy":
            # a 307 given for public/a.jpg is refused once the policy no longer names it
            url = "%s/v1/objects/%s/public/a.jpg" % (endpoint.url, bucket)
            loc = requests.get(url, allow_redirects=False, timeout=10).headers["Location"]
            assert "ppub=1" in loc, loc
            assert requests.get(loc, timeout=10).status_code == 200
            s3.put_bucket_policy(Bucket=bucket, Policy=_doc(
                bucket, resource="arn:aws:s3:::%s/readme.txt" % bucket))
            helpers.wait_until(lambda: requests.get(loc, timeout=10).status_code == 403,
                               what="the 307 refused")
            assert _anon(raw, "GET", "/%s/readme.txt" % bucket) == 200
        # Block Public Access: a pattern is public too
        _pab(s3, bucket, RestrictPublicBuckets=True)
        assert _anon(raw, "GET", "/%s/readme.txt" % bucket) == 403
    finally:
        s3.delete_public_access_block(Bucket=bucket)
        s3.delete_bucket_policy(Bucket=bucket)
    assert _anon(raw, "GET", "/%s/readme.txt" % bucket) == 403
    _pab(s3, bucket, BlockPublicPolicy=True)
    try:
        _refused(lambda: s3.put_bucket_policy(Bucket=bucket, Policy=doc), 403, "AccessDenied")
    finally:
        s3.delete_public_access_block(Bucket=bucket)


def test_list_policy(endpoint, raw, s3, bucket):
    """ceph s3-tests' test_bucket_policy: s3:ListBucket on the bucket and its objects."""
    s3.put_object(Bucket=bucket, Key="k", Body=b"v")
    s3.put_bucket_policy(Bucket=bucket, Policy=_doc(
        bucket, action="s3:ListBucket", resource=["arn:aws:s3:::" + bucket,
                                                  "arn:aws:s3:::%s/*" % bucket]))
    try:
        r = raw.request("GET", "/%s?list-type=2" % bucket, sign=False)
        assert r.status == 200 and b"<Key>k</Key>" in r.body, r
        assert _anon(raw, "HEAD", "/%s" % bucket) == 200
        assert _anon(raw, "GET", "/%s/k" % bucket) == 403  # listing only
        # s3:ListBucket is ListObjects: on AWS the version and upload listings are other
        # actions (s3:ListBucketVersions, s3:ListBucketMultipartUploads), which a public-read
        # ACL opens and this policy does not
        assert _anon(raw, "GET", "/%s?versions" % bucket) == 403
        assert _anon(raw, "GET", "/%s?uploads" % bucket) == 403
        s3.put_bucket_acl(Bucket=bucket, ACL="public-read")
        assert _anon(raw, "GET", "/%s?versions" % bucket) == 200
        assert _anon(raw, "GET", "/%s?uploads" % bucket) == 200
        s3.put_bucket_acl(Bucket=bucket, ACL="private")
        assert _anon(raw, "GET", "/%s?uploads" % bucket) == 403
        assert s3.get_bucket_policy_status(Bucket=bucket)["PolicyStatus"]["IsPublic"] is True
        # a new policy replaces it: objects now, no listing
        s3.put_bucket_policy(Bucket=bucket, Policy=_doc(bucket))
        assert _anon(raw, "GET", "/%s?list-type=2" % bucket) == 403
        assert _anon(raw, "GET", "/%s/k" % bucket) == 200
    finally:
        s3.delete_bucket_policy(Bucket=bucket)
    assert _anon(raw, "GET", "/%s?list-type=2" % bucket) == 403


@pytest.mark.parametrize("doc,status,code", [
    ("not json", 400, "MalformedPolicy"),
    ("[]", 400, "MalformedPolicy"),
    ('{"Version": "2012-10-17"}', 400, "MalformedPolicy"),
    ('{"Version": "2012-10-17", "Statement": []}', 400, "MalformedPolicy"),
    ("OTHER", 400, "MalformedPolicy"),  # a resource of another bucket
    ("VARIABLE", 501, "NotImplemented"),
    ("DENY", 501, "NotImplemented"),
    ("CONDITION", 501, "NotImplemented"),
    ("PUT", 501, "NotImplemented"),
    ("ACCOUNT", 501, "NotImplemented"),
])
def test_policy_refused(endpoint, raw, s3, bucket, doc, status, code):
    good = _doc(bucket)
    s3.put_bucket_policy(Bucket=bucket, Policy=good)
    s3.put_object(Bucket=bucket, Key="k", Body=b"v")
    doc = {"OTHER": _doc(bucket, resource="arn:aws:s3:::not-%s/*" % bucket),
           "VARIABLE": _doc(bucket, resource="arn:aws:s3:::%s/${aws:username}/*" % bucket),
           "DENY": _doc(bucket).replace('"Allow"', '"Deny"'),
           "CONDITION": _doc(bucket, Condition={"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}),
           "PUT": _doc(bucket, action=["s3:GetObject", "s3:PutObject"]),
           "ACCOUNT": _doc(bucket).replace('"*"', '{"AWS": "arn:aws:iam::123456789012:root"}'),
           }.get(doc, doc)
    r = raw.request("PUT", "/%s?policy" % bucket, body=doc.encode())
    helpers.check_s3_error(r, status, code)
    # nothing changed: the earlier policy stands, exactly
    assert s3.get_bucket_policy(Bucket=bucket)["Policy"] == good
    assert _anon(raw, "GET", "/%s/k" % bucket) == 200
    s3.delete_bucket_policy(Bucket=bucket)


def test_policy_too_large(endpoint, raw, s3, bucket):
    doc = json.loads(_doc(bucket))
    doc["Id"] = "x" * (20480 - len(_doc(bucket)) - len(', "Id": ""'))
    text = json.dumps(doc)
    assert len(text) == 20480
    r = raw.request("PUT", "/%s?policy" % bucket, body=text.encode())
    assert r.status == 204, r
    r = raw.request("PUT", "/%s?policy" % bucket, body=(text + " ").encode())
    helpers.check_s3_error(r, 400, "MalformedPolicy")
    assert s3.get_bucket_policy(Bucket=bucket)["Policy"] == text


def test_policy_aws_cli(endpoint, aws2, raw, bucket, tmp_path):
    p = tmp_path / "policy.json"
    p.write_text(_doc(bucket, action=["s3:GetObject", "s3:ListBucket"],
                      resource=["arn:aws:s3:::" + bucket, "arn:aws:s3:::%s/*" % bucket]))
    src = tmp_path / "sample.bin"
    src.write_bytes(b"0123456789" * 100)
    aws2("s3", "cp", str(src), "s3://%s/data/sample.bin" % bucket)
    aws2("s3api", "put-bucket-policy", "--bucket", bucket, "--policy", "file://%s" % p)
    got = json.loads(aws2("s3api", "get-bucket-policy", "--bucket", bucket).stdout)
    assert json.loads(got["Policy"]) == json.loads(p.read_text())
    st = json.loads(aws2("s3api", "get-bucket-policy-status", "--bucket", bucket).stdout)
    assert st["PolicyStatus"]["IsPublic"] is True
    # what a reader of a public dataset runs
    out = tmp_path / "out.bin"
    aws2("s3", "cp", "--no-sign-request", "s3://%s/data/sample.bin" % bucket, str(out))
    assert out.read_bytes() == src.read_bytes()
    ls = aws2("s3", "ls", "--no-sign-request", "s3://%s/data/" % bucket).stdout.decode()
    assert "sample.bin" in ls
    aws2("s3api", "delete-bucket-policy", "--bucket", bucket)
    p = aws2("s3", "cp", "--no-sign-request", "s3://%s/data/sample.bin" % bucket, str(out),
             check=False)
    assert p.returncode != 0 and b"403" in p.stderr + p.stdout


@pytest.fixture
def perm_server(endpoint, target_factory):
    """A server with conftest.CLUSTER_KEYS (admin, read-only AKRO, AKMIX with rights on two
    buckets only): a fresh target, or the session cluster's proxy."""
    return endpoint if endpoint.kind == "proxy" else target_factory("perms",
                                                                    auth_keys=CLUSTER_KEYS)


def test_policy_opens_to_every_key(perm_server):
    """"Everyone" includes keys without rights on the bucket: what an unsigned caller may do,
    a signed one may too; and setting a policy needs write access."""
    admin = helpers.boto3_client(perm_server)
    ro = helpers.boto3_client(perm_server, access_key="AKRO", secret_key="secretRO")
    mix = helpers.boto3_client(perm_server, access_key="AKMIX", secret_key="secretMIX")
    name = "perm-%s-pol" % PERM_TAG  # AKMIX has no rights on it
    admin.create_bucket(Bucket=name)
    try:
        admin.put_object(Bucket=name, Key="k", Body=b"v")
        _refused(lambda: mix.get_object(Bucket=name, Key="k"), 403, "AccessDenied")
        _refused(lambda: ro.put_bucket_policy(Bucket=name, Policy=_doc(name)), 403,
                 "AccessDenied")
        _refused(lambda: mix.put_bucket_policy(Bucket=name, Policy=_doc(name)), 403,
                 "AccessDenied")
        admin.put_bucket_policy(Bucket=name, Policy=_doc(name))
        assert mix.get_object(Bucket=name, Key="k")["Body"].read() == b"v"
        _refused(lambda: mix.list_objects_v2(Bucket=name), 403, "AccessDenied")
        # a batch GET of the public objects, as an unsigned caller may
        r = requests.post("%s/v1/batch" % perm_server.url, timeout=10, allow_redirects=False,
                          auth=SigV4Requests("AKMIX", "secretMIX"),
                          json={"bucket": name, "entries": [{"name": "k"}]})
        assert r.status_code in (200, 307), (r.status_code, r.text[:300])
        # a public listing opens the listing, not the bucket's jobs and summaries
        admin.put_bucket_policy(Bucket=name, Policy=_doc(
            name, action=["s3:GetObject", "s3:ListBucket"],
            resource=["arn:aws:s3:::" + name, "arn:aws:s3:::%s/*" % name]))
        assert mix.list_objects_v2(Bucket=name)["KeyCount"] == 1
        if perm_server.kind == "proxy":
            url = "%s/v1/buckets/%s" % (perm_server.url, name)
            for act in ("summary-bck", "evict-remote-bck"):
                r = requests.get(url, timeout=10, auth=SigV4Requests("AKMIX", "secretMIX"),
                                 json={"action": act, "value": {}})
                assert r.status_code == 403, (act, r.status_code, r.text[:300])
            r = requests.get(url, timeout=10, auth=SigV4Requests("AKMIX", "secretMIX"),
                             json={"action": "list", "value": {}})
            assert r.status_code == 200, r.text[:300]
        _refused(lambda: mix.put_object(Bucket=name, Key="k", Body=b"x"), 403, "AccessDenied")
        _refused(lambda: mix.get_bucket_policy(Bucket=name), 403, "AccessDenied")
        admin.delete_bucket_policy(Bucket=name)
        _refused(lambda: mix.get_object(Bucket=name, Key="k"), 403, "AccessDenied")
    finally:
        _empty_bucket(admin, name)


def test_policy_native_props(endpoint, raw, s3, bucket):
    """The property behind it: GET ?props shows the document, a PATCH is checked as a PUT is
    (the bucket named in its resources decides what it grants)."""
    s3.put_bucket_policy(Bucket=bucket, Policy=_doc(bucket))
    r = raw.request("GET", "/v1/buckets/%s?props" % bucket)
    assert r.status == 200, r
    assert json.loads(r.body)["props"]["policy"] == _doc(bucket)
    r = raw.request("PATCH", "/v1/buckets/%s" % bucket,
                    body=json.dumps({"policy": _doc(bucket, action="s3:Delete*")}).encode())
    assert r.status == 400 and b"s3:Delete*" in r.body, r
    r = raw.request("PATCH", "/v1/buckets/%s" % bucket, body=b'{"policy": null}')
    assert r.status == 200, r
    _refused(lambda: s3.get_bucket_policy(Bucket=bucket), 404, "NoSuchBucketPolicy")


def _pab(s3, bucket, **on):
    cfg = {k: on.get(k, False) for k in ("BlockPublicAcls", "IgnorePublicAcls",
                                          "BlockPublicPolicy", "RestrictPublicBuckets")}
    s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration=cfg)
    return cfg


def test_public_access_block(endpoint, raw, s3, bucket):
    """AWS's guides turn Block Public Access off before they set a public policy; each of the
    four settings does what AWS's does to hoard's two ways of being public."""
    s3.put_object(Bucket=bucket, Key="k", Body=b"v")
    _refused(lambda: s3.get_public_access_block(Bucket=bucket), 404,
             "NoSuchPublicAccessBlockConfiguration")
    cfg = _pab(s3, bucket)  # all off, as the guides do first
    assert s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"] == cfg
    s3.put_bucket_policy(Bucket=bucket, Policy=_doc(bucket))
    assert _anon(raw, "GET", "/%s/k" % bucket) == 200
    try:
        # RestrictPublicBuckets: the policy stays, and opens nothing
        cfg = _pab(s3, bucket, RestrictPublicBuckets=True)
        assert s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"] == cfg
        assert _anon(raw, "GET", "/%s/k" % bucket) == 403
        assert s3.get_bucket_policy(Bucket=bucket)["Policy"] == _doc(bucket)
        # BlockPublicPolicy: a public policy cannot be set (the one there stays)
        _pab(s3, bucket, BlockPublicPolicy=True)
        assert _anon(raw, "GET", "/%s/k" % bucket) == 200
        _refused(lambda: s3.put_bucket_policy(Bucket=bucket, Policy=_doc(
            bucket, action="s3:ListBucket", resource="arn:aws:s3:::" + bucket)), 403,
            "AccessDenied")
        assert s3.get_bucket_policy(Bucket=bucket)["Policy"] == _doc(bucket)
        s3.delete_bucket_policy(Bucket=bucket)
        # BlockPublicAcls: a public-read ACL cannot be set; IgnorePublicAcls: one set opens
        # nothing
        _pab(s3, bucket, BlockPublicAcls=True)
        _refused(lambda: s3.put_bucket_acl(Bucket=bucket, ACL="public-read"), 403,
                 "AccessDenied")
        assert _anon(raw, "GET", "/%s?list-type=2" % bucket) == 403
        _pab(s3, bucket)
        s3.put_bucket_acl(Bucket=bucket, ACL="public-read")
        assert _anon(raw, "GET", "/%s?list-type=2" % bucket) == 200
        _pab(s3, bucket, IgnorePublicAcls=True)
        assert _anon(raw, "GET", "/%s?list-type=2" % bucket) == 403
        s3.delete_public_access_block(Bucket=bucket)
        assert _anon(raw, "GET", "/%s?list-type=2" % bucket) == 200
        _refused(lambda: s3.get_public_access_block(Bucket=bucket), 404,
                 "NoSuchPublicAccessBlockConfiguration")
    finally:
        s3.put_bucket_acl(Bucket=bucket, ACL="private")
        s3.delete_public_access_block(Bucket=bucket)
    # the native PATCH is held to the same settings (every change of props merges through one
    # check, on the primary proxy against the current BMD)
    _pab(s3, bucket, BlockPublicAcls=True, BlockPublicPolicy=True)
    try:
        for patch in ({"anonymous_read": True}, {"anonymous_list": True}, {"policy": _doc(bucket)}):
            r = raw.request("PATCH", "/v1/buckets/%s" % bucket, body=json.dumps(patch).encode())
            assert r.status == 403 and b"block public access" in r.body, (patch, r)
        assert _anon(raw, "GET", "/%s/k" % bucket) == 403
        # what blocks nothing still changes, and a setting made before the block stays
        r = raw.request("PATCH", "/v1/buckets/%s" % bucket, body=b'{"tags": {"team": "ml"}}')
        assert r.status == 200, r
        _pab(s3, bucket)
        s3.put_bucket_acl(Bucket=bucket, ACL="public-read")
        _pab(s3, bucket, BlockPublicAcls=True)
        r = raw.request("PATCH", "/v1/buckets/%s" % bucket, body=b'{"tags": {"team": "cv"}}')
        assert r.status == 200, r
        assert _anon(raw, "GET", "/%s?list-type=2" % bucket) == 200
    finally:
        s3.delete_public_access_block(Bucket=bucket)
        s3.put_bucket_acl(Bucket=bucket, ACL="private")
    # refused documents change nothing
    for body in (b"<PublicAccessBlockConfiguration><BlockPublicAcls>yes</BlockPublicAcls>"
                 b"</PublicAccessBlockConfiguration>",
                 b"<PublicAccessBlockConfiguration><Bogus>true</Bogus>"
                 b"</PublicAccessBlockConfiguration>",
                 b"<Other/>", b"not xml"):
        helpers.check_s3_error(raw.request("PUT", "/%s?publicAccessBlock" % bucket, body=body),
                               400, "MalformedXML")
    _refused(lambda: s3.get_public_access_block(Bucket=bucket), 404,
             "NoSuchPublicAccessBlockConfiguration")
    assert _anon(raw, "PUT", "/%s?publicAccessBlock" % bucket) == 403


def test_public_access_block_aws_cli(endpoint, aws2, raw, bucket, tmp_path):
    """The AWS guide's commands, in order."""
    aws2("s3api", "put-public-access-block", "--bucket", bucket,
         "--public-access-block-configuration",
         "BlockPublicAcls=false,IgnorePublicAcls=false,BlockPublicPolicy=false,"
         "RestrictPublicBuckets=false")
    p = tmp_path / "policy.json"
    p.write_text(_doc(bucket))
    aws2("s3api", "put-bucket-policy", "--bucket", bucket, "--policy", "file://%s" % p)
    got = json.loads(aws2("s3api", "get-public-access-block", "--bucket", bucket).stdout)
    assert got["PublicAccessBlockConfiguration"]["BlockPublicPolicy"] is False
    aws2("s3api", "delete-bucket-policy", "--bucket", bucket)
    aws2("s3api", "delete-public-access-block", "--bucket", bucket)


def test_bucket_settings_checksums(endpoint, raw, s3, bucket, pyenv_python):
    """Newer SDKs (botocore >= 1.36) send x-amz-checksum-crc32 instead of Content-MD5 on the
    bucket calls with a body: a right one is taken, a wrong one is 400 BadDigest and changes
    nothing."""
    import test_s3_behaviours as sb
    out = sb.pyenv(pyenv_python, endpoint, bucket, r'''
pol = json.dumps({"Statement": {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                                "Resource": "arn:aws:s3:::%s/*" % b}})
s3.put_bucket_policy(Bucket=b, Policy=pol)
out["policy"] = s3.get_bucket_policy(Bucket=b)["Policy"] == pol
s3.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration={"BlockPublicAcls": True})
out["pab"] = s3.get_public_access_block(Bucket=b)["PublicAccessBlockConfiguration"]
s3.put_object(Bucket=b, Key="x", Body=b"x")
out["deleted"] = len(s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "x"}]})["Deleted"])
s3.delete_public_access_block(Bucket=b)
s3.delete_bucket_policy(Bucket=b)
''')
    assert out["policy"] is True and out["pab"]["BlockPublicAcls"] is True, out
    assert out["deleted"] == 1, out
    body = _doc(bucket).encode()
    good = base64.b64encode(zlib.crc32(body).to_bytes(4, "big")).decode()
    bad = base64.b64encode((zlib.crc32(body) ^ 1).to_bytes(4, "big")).decode()
    r = raw.request("PUT", "/%s?policy" % bucket, body=body,
                    headers={"x-amz-checksum-crc32": bad})
    helpers.check_s3_error(r, 400, "BadDigest")
    # a value that is no CRC32 in base64 at all is AWS's InvalidRequest, as on object PUTs
    for malformed in ("not-base64!", base64.b64encode(b"12345").decode()):
        r = raw.request("PUT", "/%s?policy" % bucket, body=body,
                        headers={"x-amz-checksum-crc32": malformed})
        helpers.check_s3_error(r, 400, "InvalidRequest")
    _refused(lambda: s3.get_bucket_policy(Bucket=bucket), 404, "NoSuchBucketPolicy")
    r = raw.request("PUT", "/%s?policy" % bucket, body=body,
                    headers={"x-amz-checksum-crc32": good})
    assert r.status == 204, r
    s3.delete_bucket_policy(Bucket=bucket)


def _tls_only(bucket):
    return {"Sid": "AllowSSLRequestsOnly", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
            "Resource": ["arn:aws:s3:::" + bucket, "arn:aws:s3:::%s/*" % bucket],
            "Condition": {"Bool": {"aws:SecureTransport": "false"}}}


def test_tls_only_policy_on_plain_http(endpoint, raw, s3, bucket):
    """AWS's "TLS only" Deny, beside a public-read statement as the guides write them: over
    plain HTTP every request to the bucket is refused, signed or not; the policy calls stay
    open so that it can be read and undone. (test_tls.py: the same policy over TLS.)"""
    s3.put_object(Bucket=bucket, Key="k", Body=b"v")
    doc = json.loads(_doc(bucket))
    doc["Statement"].append(_tls_only(bucket))
    text = json.dumps(doc)
    other = "it-cp-" + bucket[3:]
    s3.create_bucket(Bucket=other)
    s3.put_bucket_policy(Bucket=bucket, Policy=text)
    try:
        _refused(lambda: s3.get_object(Bucket=bucket, Key="k"), 403, "AccessDenied")
        _refused(lambda: s3.put_object(Bucket=bucket, Key="n", Body=b"x"), 403, "AccessDenied")
        _refused(lambda: s3.list_objects_v2(Bucket=bucket), 403, "AccessDenied")
        assert _anon(raw, "GET", "/%s/k" % bucket) == 403
        assert raw.request("GET", "/v1/objects/%s/k" % bucket).status == 403
        assert raw.request("GET", "/v1/buckets/%s" % bucket).status == 403
        r = raw.request("POST", "/v1/batch",
                        body=json.dumps({"bucket": bucket, "entries": [{"name": "k"}]}).encode(),
                        headers={"Content-Type": "application/json"})
        assert r.status == 403, r
        # nor read as a copy's source into another bucket
        _refused(lambda: s3.copy_object(Bucket=other, Key="c",
                                        CopySource={"Bucket": bucket, "Key": "k"}),
                 403, "AccessDenied")
        # nor copied out or in by a job, nor changed by a native PATCH (the S3 policy calls
        # are the way to undo it)
        r = raw.request("POST", "/v1/jobs", body=json.dumps(
            {"kind": "copy", "id": "tls-out", "bucket": bucket, "args": {"to": other}}).encode())
        assert r.status == 403, r
        plain = "it-pl-" + bucket[3:]
        s3.create_bucket(Bucket=plain)
        try:
            r = raw.request("POST", "/v1/jobs", body=json.dumps(
                {"kind": "copy", "id": "tls-in", "bucket": plain, "args": {"to": bucket}}).encode())
            assert r.status == 403, r
            if endpoint.kind == "proxy":  # AIStore's copy-bck into it
                r = raw.request("POST", "/v1/buckets/%s?bck_to=ais/@%%23/%s/" % (plain, bucket),
                                body=json.dumps({"action": "copy-bck", "value": {}}).encode())
                assert r.status == 403, r
        finally:
            s3.delete_bucket(Bucket=plain)
        r = raw.request("PATCH", "/v1/buckets/%s" % bucket, body=b'{"tags": {"a": "b"}}')
        assert r.status == 403, r
        # nor copied out by a native PUT naming a copy source (relayed: a chunked body)
        r = requests.put("%s/v1/objects/%s/stolen?object_from=%%2F%s%%2Fk" % (
            endpoint.url, other, bucket), data=iter([b""]), timeout=10, allow_redirects=False,
            auth=SigV4Requests(endpoint.access_key, endpoint.secret_key))
        assert r.status_code == 403, (r.status_code, r.text[:300])
        _refused(lambda: s3.head_object(Bucket=other, Key="stolen"), 404, "404")
        # the policy itself stays readable and changeable by its owner
        assert s3.get_bucket_policy(Bucket=bucket)["Policy"] == text
        assert s3.get_bucket_policy_status(Bucket=bucket)["PolicyStatus"]["IsPublic"] is True
        assert raw.request("GET", "/v1/buckets/%s?props" % bucket).status == 200
    finally:
        s3.delete_bucket_policy(Bucket=bucket)
        s3.delete_bucket(Bucket=other)
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"v"
    # TLS only, alone, is not public
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Statement": [_tls_only(bucket)]}))
    assert s3.get_bucket_policy_status(Bucket=bucket)["PolicyStatus"]["IsPublic"] is False
    s3.delete_bucket_policy(Bucket=bucket)


def test_tls_only_undone_by_admin_only(perm_server):
    """Over plain HTTP a TLS-only policy is the admin key's to read or undo (AWS lets only the
    root user past its Deny): a key with write rights on the bucket, which could set it, is
    refused like every other plain-HTTP call, and the policy stays."""
    from conftest import PERM_BUCKETS
    admin = helpers.boto3_client(perm_server)
    mix = helpers.boto3_client(perm_server, access_key="AKMIX", secret_key="secretMIX")
    name = PERM_BUCKETS["rw"]  # AKMIX may write it
    admin.create_bucket(Bucket=name)
    try:
        doc = json.dumps({"Statement": [_tls_only(name)]})
        mix.put_bucket_policy(Bucket=name, Policy=doc)
        for call in (lambda: mix.delete_bucket_policy(Bucket=name),
                     lambda: mix.get_bucket_policy(Bucket=name),
                     lambda: mix.put_bucket_policy(Bucket=name, Policy=_doc(name)),
                     lambda: mix.put_object(Bucket=name, Key="k", Body=b"v")):
            _refused(call, 403, "AccessDenied")
        assert admin.get_bucket_policy(Bucket=name)["Policy"] == doc
        admin.delete_bucket_policy(Bucket=name)
        mix.put_object(Bucket=name, Key="k", Body=b"v")
        # without the policy the key manages its bucket's policy as before
        mix.put_bucket_policy(Bucket=name, Policy=_doc(name))
        mix.delete_bucket_policy(Bucket=name)
    finally:
        try:
            admin.delete_bucket_policy(Bucket=name)
        finally:
            _empty_bucket(admin, name)


def test_policy_calls_unsigned_or_replayed(endpoint, raw, s3, bucket):
    """The new bucket calls authenticate before they read a body: unsigned is 403, and a signed
    PutBucketPolicy replayed with another body (a public grant swapped in) is refused and
    changes nothing."""
    import hashlib
    for method, q in (("PUT", "policy"), ("DELETE", "policy"), ("GET", "policyStatus"),
                      ("PUT", "publicAccessBlock"), ("DELETE", "publicAccessBlock")):
        r = raw.request(method, "/%s?%s" % (bucket, q), body=b"{}" if method == "PUT" else b"",
                        sign=False)
        assert r.status == 403, (method, q, r)
    tls = json.dumps({"Statement": [_tls_only(bucket)]}).encode()
    url = "%s/%s?policy" % (endpoint.url, bucket)
    h = helpers.sign_headers("PUT", url, endpoint.access_key, endpoint.secret_key,
                             payload=hashlib.sha256(tls).hexdigest())
    r = requests.put(url, data=tls, headers=h, timeout=10)
    assert r.status_code == 204, r.text
    r = requests.put(url, data=_doc(bucket).encode(), headers=h, timeout=10)  # replayed
    assert r.status_code in (400, 403), r.text
    assert s3.get_bucket_policy(Bucket=bucket)["Policy"] == tls.decode()
    s3.delete_bucket_policy(Bucket=bucket)


def test_redirect_given_by_a_public_bucket_ends_with_it(endpoint, raw, s3, bucket):
    """A 307 the proxy gives because the bucket is public says so in its signed capability
    (ppub): once the bucket is private again the target refuses it, instead of honouring it
    until it expires. A 307 given to a key with rights on the bucket still works; any 307 is
    refused over plain HTTP once the bucket is TLS only."""
    if endpoint.kind != "proxy":
        pytest.skip("307 capabilities are a cluster's")
    s3.put_object(Bucket=bucket, Key="k", Body=b"v")
    url = "%s/v1/objects/%s/k" % (endpoint.url, bucket)

    def location(signed, method="GET", body=None):
        h = helpers.sign_headers(method, url if body is None else endpoint.url + "/v1/batch",
                                 endpoint.access_key, endpoint.secret_key,
                                 payload=helpers.sha256_hex(body or b"")) if signed else {}
        if body is None:
            r = requests.request(method, url, headers=h, allow_redirects=False, timeout=10)
        else:
            r = requests.post(endpoint.url + "/v1/batch", data=body, headers=h,
                              allow_redirects=False, timeout=10)
        assert r.status_code == 307, (r.status_code, r.text[:300])
        return r.headers["Location"]

    def follow(loc, body=None):
        if body is None:
            return requests.get(loc, allow_redirects=False, timeout=10).status_code
        return requests.post(loc, data=body, allow_redirects=False, timeout=10).status_code

    batch = json.dumps({"bucket": bucket, "entries": [{"name": "k"}]}).encode()
    assert requests.get(url, allow_redirects=False, timeout=10).status_code == 403
    s3.put_bucket_policy(Bucket=bucket, Policy=_doc(bucket))
    try:
        anon, anon_batch = location(False), location(False, body=batch)
        own = location(True)
        assert "ppub=1" in anon and "ppub=1" in anon_batch and "ppub" not in own, (anon, own)
        r = requests.get(anon, allow_redirects=False, timeout=10)
        assert r.status_code == 200 and r.content == b"v", r.status_code
        assert follow(anon_batch, batch) == 200
        # ppub is signed with the rest: a client cannot drop it
        assert follow(anon.replace("?ppub=1&", "?")) == 403
    finally:
        s3.delete_bucket_policy(Bucket=bucket)
    # the targets hear of the change by the proxy's metasync
    helpers.wait_until(lambda: follow(anon) == 403, what="the old 307 refused")
    assert follow(anon_batch, batch) == 403
    assert follow(own) == 200  # the key's rights, not the bucket's state, let it in
    # only the proxy's ppub=1 counts: a parameter of that name the client sends does not
    # make its own keyed redirect a public one
    for q in ("ppub=0", "ppub", "x=1&ppub=no"):
        u = url + "?" + q
        r = requests.get(u, allow_redirects=False, timeout=10, headers=helpers.sign_headers(
            "GET", u, endpoint.access_key, endpoint.secret_key))
        assert r.status_code == 307, (q, r.status_code)
        assert follow(r.headers["Location"]) == 200, q

    # a 307 given before the bucket turned TLS only is refused over plain HTTP, and so is
    # an AIStore copy's 307 that reads it (its source is in ?object_from)
    dst = "it-cd-" + bucket[3:]
    s3.create_bucket(Bucket=dst)
    cu = "%s/v1/objects/%s/k?provider=ais&object_to=ais/@%%23/%s/dk" % (endpoint.url, bucket, dst)
    r = requests.put(cu, allow_redirects=False, timeout=10, headers=helpers.sign_headers(
        "PUT", cu, endpoint.access_key, endpoint.secret_key))
    assert r.status_code == 307, (r.status_code, r.text[:300])
    copy = r.headers["Location"]
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Statement": [_tls_only(bucket)]}))
    try:
        helpers.wait_until(lambda: follow(own) == 403, what="a 307 refused over plain HTTP")
        assert requests.put(copy, allow_redirects=False, timeout=10).status_code == 403
        _refused(lambda: s3.head_object(Bucket=dst, Key="dk"), 404, "404")
    finally:
        s3.delete_bucket_policy(Bucket=bucket)
        s3.delete_bucket(Bucket=dst)
    helpers.wait_until(lambda: follow(own) == 200, what="the 307 valid again")


def test_public_listing_does_not_open_archives(endpoint, s3, bucket):
    """AIStore's list action with flags 8 lists the members of every archive: it reads the
    archives, so a public listing alone does not open it (the names of the objects, not
    what is inside them); public objects do."""
    import io
    import tarfile
    if endpoint.kind != "proxy":
        pytest.skip("AIStore's list action is the proxy's")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        info = tarfile.TarInfo("secret-member.txt")
        info.size = 6
        tf.addfile(info, io.BytesIO(b"secret"))
    s3.put_object(Bucket=bucket, Key="shard.tar", Body=buf.getvalue())
    url = "%s/v1/buckets/%s" % (endpoint.url, bucket)
    msg = {"action": "list", "value": {"flags": "8"}}

    def unsigned(m):
        return requests.get(url, json=m, timeout=10)

    r = requests.get(url, json=msg, timeout=10,
                     auth=SigV4Requests(endpoint.access_key, endpoint.secret_key))
    assert r.status_code == 200 and b"secret-member.txt" in r.content, r.text[:300]
    s3.put_bucket_policy(Bucket=bucket, Policy=_doc(
        bucket, action="s3:ListBucket", resource="arn:aws:s3:::" + bucket))
    try:
        r = unsigned({"action": "list", "value": {}})
        assert r.status_code == 200 and b"shard.tar" in r.content, r.text[:300]
        r = unsigned(msg)
        assert r.status_code == 403 and b"secret-member" not in r.content, r.text[:300]
        s3.put_bucket_policy(Bucket=bucket, Policy=_doc(
            bucket, action=["s3:GetObject", "s3:ListBucket"],
            resource=["arn:aws:s3:::" + bucket, "arn:aws:s3:::%s/*" % bucket]))
        r = unsigned(msg)
        assert r.status_code == 200 and b"secret-member.txt" in r.content, r.text[:300]
    finally:
        s3.delete_bucket_policy(Bucket=bucket)
