"""CopyObject and UploadPartCopy with S3-backed buckets (docs/caching.md, "Copies").

A hoard cluster (1 proxy, 2 targets) fronts s3rver. Covered, with boto3, the aws CLI and rclone:
a copy INTO a write-through bucket reaches the upstream before the answer (bytes, Content-Type,
x-amz-meta-*, directive COPY and REPLACE, read back from s3rver directly); a copy into a
write-back bucket is answered while the upstream is stopped and is upstream after a flush;
a copy FROM an object of an S3-backed bucket that no target has cached is read as a GET reads
it (filled from the upstream, on the target that handles the copy or on the source's owner),
also as UploadPartCopy and as the aws CLI's multipart copy; errors: a missing source is 404
NoSuchKey naming the source, an unreachable upstream 503 with nothing left behind; a source
in a validate_warm_get bucket is revalidated as a GET's would be.
Keys are placed (HRW) so that the source's owner is, and is not, the target that copies.
"""
import hashlib
import os
import shutil
import subprocess
import urllib.parse
import uuid

import pytest

import helpers
from cachefix import C_KEYS, HoardCluster, profiles, s3rver  # noqa: F401
from conftest import _TARGETS

COPY_TARGET = ["--upstream.retries", "0", "--upstream.backoff_ms", "50",
               "--upstream.connect_timeout_ms", "1000", "--upstream.meta_timeout", "5",
               "--writeback.backoff_ms", "50", "--writeback.backoff_max_ms", "400"]


def uname(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:10])


def md5(b):
    return hashlib.md5(b).hexdigest()


@pytest.fixture(scope="module")
def cc(tmp_path_factory, log_dir, profiles):  # noqa: F811
    yield from HoardCluster("cpy", str(tmp_path_factory.mktemp("cpy")), log_dir, _TARGETS,
                            C_KEYS, ntargets=2, target_extra=COPY_TARGET).serve()


def cloud_bucket(c, s3rver, objects=None, write_back=False):  # noqa: F811
    """A new s3rver bucket (holding objects {key: (bytes, put_object kwargs)}) and a hoard
    bucket of the same name in front of it."""
    name = uname("cp")
    up = s3rver.client()
    up.create_bucket(Bucket=name)
    for k, (v, kw) in (objects or {}).items():
        up.put_object(Bucket=name, Key=k, Body=v, **kw)
    c.create_cloud_bucket(name, s3rver.url, "s3rver",
                          {"write_policy": "back"} if write_back else None)
    return name


def native_bucket(c):
    n = uname("nat")
    r = c.api("POST", "/v1/buckets/%s" % n)
    assert r.status_code in (200, 201), r.text
    return n


def owner(c, bucket, key):
    r = c.api("HEAD", c.obj_path(bucket, key), follow=False)
    assert r.status_code == 307, (bucket, key, r.status_code)
    p = urllib.parse.urlsplit(r.headers["Location"])
    return p.netloc


def placed(c, bucket, stem, src, same):
    """stem-N in bucket whose owner is (same=True) or is not the owner of src=(bucket, key):
    the copy then runs on the source's owner, or on another target."""
    want = owner(c, *src)
    for i in range(64):
        k = "%s-%d" % (stem, i)
        if (owner(c, bucket, k) == want) == same:
            return k
    raise AssertionError("no %s-N with same=%r" % (stem, same))


def cached_names(c, bucket):
    return {e["name"] for e in c.listing(bucket, cached="true", limit=10000)["entries"]}


def aws(c, *args, check=True):
    """aws CLI v2 (/usr/bin/aws) against the cluster's proxy."""
    if not os.access("/usr/bin/aws", os.X_OK):
        pytest.skip("aws CLI v2 (/usr/bin/aws) not installed")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID=c.keys[0], AWS_SECRET_ACCESS_KEY=c.keys[1],
               AWS_DEFAULT_REGION="us-east-1", AWS_CONFIG_FILE=os.devnull,
               AWS_SHARED_CREDENTIALS_FILE=os.devnull, AWS_EC2_METADATA_DISABLED="true")
    p = subprocess.run(["/usr/bin/aws", "--endpoint-url", c.url] + list(args), env=env,
                       capture_output=True, text=True, timeout=120)
    assert not check or p.returncode == 0, (args, p.stdout[-2000:], p.stderr[-3000:])
    return p


def rclone(c, home, *args):
    """rclone (remote `hoard`, path style) against the cluster's proxy."""
    exe = shutil.which("rclone")
    if not exe:
        pytest.skip("rclone not installed")
    conf = os.path.join(home, "rclone.conf")
    with open(conf, "w") as f:
        f.write("[hoard]\ntype = s3\nprovider = Other\nenv_auth = false\n"
                "access_key_id = %s\nsecret_access_key = %s\nendpoint = %s\n"
                "force_path_style = true\nregion = us-east-1\n" % (c.keys[0], c.keys[1], c.url))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("RCLONE_") and not k.startswith("AWS_")}
    env["HOME"] = str(home)
    p = subprocess.run([exe, "--config", conf, "--retries", "1", "--low-level-retries", "1"] +
                       list(args), env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, (args, p.stdout[-2000:], p.stderr[-3000:])
    return p


def err(e):
    return e.value.response["ResponseMetadata"]["HTTPStatusCode"], e.value.response["Error"]


def flush(c, bucket):
    job = c.start_job("flush", bucket)
    j = c.wait_job(job, timeout=120)
    assert j["state"] == "done", j
    return j


def test_copy_into_write_through_reaches_the_upstream(cc, s3rver, tmp_path):  # noqa: F811
    """boto3 copy_object from a native bucket (COPY and REPLACE), aws s3 cp / mv and rclone's
    server-side copy inside the bucket: the upstream has each copy when the answer comes, with
    the right bytes, Content-Type and metadata; hoard holds the same, with the upstream's
    ETag."""
    b = cloud_bucket(cc, s3rver)
    n = native_bucket(cc)
    s3, up = cc.s3(), s3rver.client()
    body = helpers.pattern_bytes(300 * 1024 + 5, 7)
    s3.put_object(Bucket=n, Key="src", Body=body, ContentType="application/x-test",
                  Metadata={"color": "blue"})
    for same in (True, False):
        dk = placed(cc, b, "copy", (n, "src"), same)
        r = s3.copy_object(Bucket=b, Key=dk, CopySource={"Bucket": n, "Key": "src"})
        assert r["CopyObjectResult"]["ETag"] == '"%s"' % md5(body), r
        o = up.get_object(Bucket=b, Key=dk)  # straight from s3rver, no waiting
        assert o["Body"].read() == body, dk
        assert o["ContentType"] == "application/x-test" and o["Metadata"] == {"color": "blue"}
        assert o["ETag"] == r["CopyObjectResult"]["ETag"]
        h = s3.head_object(Bucket=b, Key=dk)
        assert h["ETag"] == o["ETag"] and h["Metadata"] == {"color": "blue"}
        assert h["ContentType"] == "application/x-test"
        assert dk in cached_names(cc, b)  # committed here too, once the upstream had it
    r = s3.copy_object(Bucket=b, Key="replaced", CopySource={"Bucket": n, "Key": "src"},
                       MetadataDirective="REPLACE", ContentType="text/plain",
                       Metadata={"shape": "round"})
    o = up.get_object(Bucket=b, Key="replaced")
    assert o["Body"].read() == body
    assert o["ContentType"] == "text/plain" and o["Metadata"] == {"shape": "round"}
    h = s3.head_object(Bucket=b, Key="replaced")
    assert h["ContentType"] == "text/plain" and h["Metadata"] == {"shape": "round"}
    # onto itself with REPLACE: the metadata changes upstream as well
    s3.copy_object(Bucket=b, Key="replaced", CopySource={"Bucket": b, "Key": "replaced"},
                   MetadataDirective="REPLACE", Metadata={"shape": "square"},
                   ContentType="text/csv")
    o = up.head_object(Bucket=b, Key="replaced")
    assert o["Metadata"] == {"shape": "square"} and o["ContentType"] == "text/csv"
    # the storage class is the request's (COPY keeps the rest)
    s3.copy_object(Bucket=b, Key="glacier", CopySource={"Bucket": n, "Key": "src"},
                   StorageClass="GLACIER")
    h = s3.head_object(Bucket=b, Key="glacier")
    assert h["StorageClass"] == "GLACIER" and h["Metadata"] == {"color": "blue"}, h
    assert up.get_object(Bucket=b, Key="glacier")["Body"].read() == body
    # If-None-Match: * on a destination that exists: 412, the upstream's copy unchanged
    s3.put_object(Bucket=n, Key="other", Body=b"other bytes")
    guarded = cc.s3()
    guarded.meta.events.register(
        "before-sign.s3.CopyObject",
        lambda request, **kw: request.headers.__setitem__("If-None-Match", "*"))
    with pytest.raises(Exception) as e:
        guarded.copy_object(Bucket=b, Key="glacier", CopySource={"Bucket": n, "Key": "other"})
    assert err(e)[0] == 412 and err(e)[1]["Code"] == "PreconditionFailed", err(e)
    assert up.get_object(Bucket=b, Key="glacier")["Body"].read() == body
    guarded.copy_object(Bucket=b, Key="fresh", CopySource={"Bucket": n, "Key": "other"})
    assert up.get_object(Bucket=b, Key="fresh")["Body"].read() == b"other bytes"
    # the aws CLI: server-side copy and move inside the bucket
    aws(cc, "s3", "cp", "s3://%s/replaced" % b, "s3://%s/by-cli" % b)
    assert up.get_object(Bucket=b, Key="by-cli")["Body"].read() == body
    aws(cc, "s3", "mv", "s3://%s/by-cli" % b, "s3://%s/moved" % b)
    assert up.get_object(Bucket=b, Key="moved")["Body"].read() == body
    keys = {o["Key"] for o in up.list_objects_v2(Bucket=b).get("Contents", [])}
    assert "by-cli" not in keys and "moved" in keys
    # rclone: a server-side copy (CopyObject) between two keys of the bucket
    rclone(cc, tmp_path, "copyto", "hoard:%s/moved" % b, "hoard:%s/by-rclone" % b)
    o = up.get_object(Bucket=b, Key="by-rclone")
    assert o["Body"].read() == body and o["Metadata"] == {"shape": "square"}


def test_copy_into_write_back_then_flush(cc, s3rver):  # noqa: F811
    """Copies into a write-back bucket are answered while the upstream is stopped (durable
    here, dirty) and are upstream, with their metadata, after a flush."""
    b = cloud_bucket(cc, s3rver, write_back=True)
    n = native_bucket(cc)
    s3 = cc.s3()
    body = helpers.pattern_bytes(200 * 1024 + 3, 11)
    s3.put_object(Bucket=n, Key="src", Body=body, ContentType="image/png",
                  Metadata={"step": "1000"})
    keys = [placed(cc, b, "ckpt", (n, "src"), same) for same in (True, False)]
    s3rver.stop()
    try:
        for k in keys:
            r = s3.copy_object(Bucket=b, Key=k, CopySource={"Bucket": n, "Key": "src"})
            assert r["CopyObjectResult"]["ETag"] == '"%s"' % md5(body)
        s3.copy_object(Bucket=b, Key="renamed", CopySource={"Bucket": n, "Key": "src"},
                       MetadataDirective="REPLACE", ContentType="application/x-ckpt",
                       Metadata={"step": "2000"})
        st = cc.api("GET", "/v1/buckets/%s?writeback" % b).json()
        assert st["dirty_objects"] == 3, st
        assert s3.get_object(Bucket=b, Key=keys[1])["Body"].read() == body
    finally:
        s3rver.start()
    flush(cc, b)
    up = s3rver.client()
    for k in keys:
        o = up.get_object(Bucket=b, Key=k)
        assert o["Body"].read() == body and o["Metadata"] == {"step": "1000"}
        assert o["ContentType"] == "image/png"
    o = up.get_object(Bucket=b, Key="renamed")
    assert o["Body"].read() == body and o["Metadata"] == {"step": "2000"}
    assert o["ContentType"] == "application/x-ckpt"
    assert cc.api("GET", "/v1/buckets/%s?writeback" % b).json()["dirty_objects"] == 0


def test_copy_from_an_uncached_source(cc, s3rver):  # noqa: F811
    """Sources that no target has cached are read as a GET reads them, whether the target
    that copies owns them or not: CopyObject (into a native bucket and within the S3-backed
    one), a failed x-amz-copy-source-if-match, UploadPartCopy with a range, and the aws
    CLI's multipart copy (UploadPartCopy) of a 9 MiB object."""
    objs = {"s%d" % i: (helpers.pattern_bytes(100 * 1024 + i, 20 + i),
                        {"ContentType": "text/x-%d" % i, "Metadata": {"i": str(i)}})
            for i in range(6)}
    big = helpers.pattern_bytes(9 * 1024 * 1024 + 17, 40)
    objs["big"] = (big, {})
    b = cloud_bucket(cc, s3rver, objs)
    n = native_bucket(cc)
    s3, up = cc.s3(), s3rver.client()
    assert cached_names(cc, b) == set()
    for i, same in ((0, True), (1, False)):  # into a native bucket
        src = "s%d" % i
        dk = placed(cc, n, "c", (b, src), same)
        r = s3.copy_object(Bucket=n, Key=dk, CopySource={"Bucket": b, "Key": src})
        assert r["CopyObjectResult"]["ETag"] == '"%s"' % md5(objs[src][0])
        o = s3.get_object(Bucket=n, Key=dk)
        assert o["Body"].read() == objs[src][0]
        assert o["ContentType"] == "text/x-%d" % i and o["Metadata"] == {"i": str(i)}
    for i, same in ((2, True), (3, False)):  # within the S3-backed bucket: upstream too
        src = "s%d" % i
        dk = placed(cc, b, "c", (b, src), same)
        s3.copy_object(Bucket=b, Key=dk, CopySource={"Bucket": b, "Key": src})
        o = up.get_object(Bucket=b, Key=dk)
        assert o["Body"].read() == objs[src][0] and o["Metadata"] == {"i": str(i)}
    # the sources were cached as a GET caches them
    helpers.wait_until(lambda: {"s0", "s1", "s2", "s3"} <= cached_names(cc, b), timeout=20,
                       what="copied sources cached")
    with pytest.raises(Exception) as e:
        s3.copy_object(Bucket=n, Key="cond", CopySource={"Bucket": b, "Key": "s4"},
                       CopySourceIfMatch='"%s"' % ("0" * 32))
    assert err(e)[0] == 412 and err(e)[1]["Code"] == "PreconditionFailed", err(e)
    # UploadPartCopy: a range of uncached sources, on the source's owner and elsewhere
    parts = []
    mpu = s3.create_multipart_upload(Bucket=n, Key="assembled")
    src5 = objs["s5"][0]
    for pn, (sk, rg) in enumerate((("big", (0, 5 * 1024 * 1024 - 1)), ("s5", (10, 5009))), 1):
        r = s3.upload_part_copy(Bucket=n, Key="assembled", UploadId=mpu["UploadId"],
                                PartNumber=pn, CopySource={"Bucket": b, "Key": sk},
                                CopySourceRange="bytes=%d-%d" % rg)
        parts.append({"PartNumber": pn, "ETag": r["CopyPartResult"]["ETag"]})
    s3.complete_multipart_upload(Bucket=n, Key="assembled", UploadId=mpu["UploadId"],
                                 MultipartUpload={"Parts": parts})
    got = s3.get_object(Bucket=n, Key="assembled")["Body"].read()
    assert got == big[:5 * 1024 * 1024] + src5[10:5010]
    # aws CLI: above 8 MiB it copies with a multipart upload of UploadPartCopy parts
    b2 = cloud_bucket(cc, s3rver, {"big": (big, {}), "big2": (big, {})})
    # (its default --copy-props also reads the source's tags: GetObjectTagging, the empty set)
    aws(cc, "s3", "cp", "s3://%s/big" % b2, "s3://%s/big-copy" % n)
    assert s3.get_object(Bucket=n, Key="big-copy")["Body"].read() == big
    # the same within the write-through bucket: the copied parts reach the twin at Complete
    aws(cc, "s3", "cp", "s3://%s/big2" % b2, "s3://%s/big2-copy" % b2)
    assert up.get_object(Bucket=b2, Key="big2-copy")["Body"].read() == big


def test_copy_errors(cc, s3rver):  # noqa: F811
    """A missing source is 404 NoSuchKey naming the source; with the upstream stopped, a copy
    into a write-through bucket and a copy of an uncached source are 503 and leave nothing
    here (no object, no temp file) nor upstream."""
    b = cloud_bucket(cc, s3rver, {"cold": (b"cold bytes", {})})
    n = native_bucket(cc)
    s3 = cc.s3()
    s3.put_object(Bucket=n, Key="src", Body=b"native bytes")
    for dst in (b, n):
        with pytest.raises(Exception) as e:
            s3.copy_object(Bucket=dst, Key="x", CopySource={"Bucket": b, "Key": "nope"})
        code, e2 = err(e)
        assert code == 404 and e2["Code"] == "NoSuchKey" and e2.get("Key") == "nope", e2
    mps = [mp for t in cc.targets for mp in t.mountpaths]
    s3rver.stop()
    try:
        for dk in (placed(cc, b, "down", (n, "src"), same) for same in (True, False)):
            with pytest.raises(Exception) as e:
                s3.copy_object(Bucket=b, Key=dk, CopySource={"Bucket": n, "Key": "src"})
            assert err(e)[0] == 503 and err(e)[1]["Code"] == "ServiceUnavailable", err(e)
        with pytest.raises(Exception) as e:
            s3.copy_object(Bucket=n, Key="cold-copy", CopySource={"Bucket": b, "Key": "cold"})
        assert err(e)[0] == 503, err(e)
        assert cached_names(cc, b) == set()
        r = cc.api("HEAD", cc.obj_path(n, "cold-copy"))
        assert r.status_code == 404, r.status_code
        assert helpers.tmp_files(mps) == []
    finally:
        s3rver.start()
    keys = {o["Key"] for o in s3rver.client().list_objects_v2(Bucket=b).get("Contents", [])}
    assert keys == {"cold"}, keys


def test_copy_from_a_validated_source(cc, s3rver):  # noqa: F811
    """A source in a bucket with validate_warm_get is revalidated as a GET is: a copy made after
    the object changed upstream behind hoard's back copies the new version (on the source's
    owner and on another target), and one deleted upstream is 404 NoSuchKey."""
    objs = {"v%d" % i: (b"version one of %d" % i, {}) for i in range(2)}
    objs["gone"] = (b"soon deleted", {})
    b = cloud_bucket(cc, s3rver, objs)
    r = cc.api("PATCH", "/v1/buckets/" + b, body={"validate_warm_get": True})
    assert r.status_code == 200, r.text
    n = native_bucket(cc)
    s3, up = cc.s3(), s3rver.client()
    for k in objs:
        assert cc.get(b, k).content == objs[k][0]
    helpers.wait_until(lambda: cached_names(cc, b) == set(objs), timeout=20,
                       what="sources cached")
    for k in ("v0", "v1"):
        up.put_object(Bucket=b, Key=k, Body=b"version two of " + k.encode())
    up.delete_object(Bucket=b, Key="gone")
    for k, same in (("v0", True), ("v1", False)):
        dk = placed(cc, n, "val", (b, k), same)
        s3.copy_object(Bucket=n, Key=dk, CopySource={"Bucket": b, "Key": k})
        assert s3.get_object(Bucket=n, Key=dk)["Body"].read() == b"version two of " + k.encode()
    with pytest.raises(Exception) as e:
        s3.copy_object(Bucket=n, Key="gone-copy", CopySource={"Bucket": b, "Key": "gone"})
    assert err(e)[0] == 404 and err(e)[1]["Code"] == "NoSuchKey", err(e)


def test_tags_in_s3_backed_buckets(cc, s3rver):  # noqa: F811
    """hoard does not forward object tags to an upstream: in S3-backed buckets (write-through
    and write-back) PutObjectTagging, DeleteObjectTagging and a write with x-amz-tagging are
    501 NotImplemented and change nothing here or upstream; GetObjectTagging is the empty set
    (also of an object only the upstream has); a copy of a tagged native object into one keeps
    no tags (x-amz-tagging-directive REPLACE with tags: 501)."""
    import botocore.exceptions
    b = cloud_bucket(cc, s3rver, {"cold": (b"cold bytes", {})})
    wb = cloud_bucket(cc, s3rver, write_back=True)
    n = native_bucket(cc)
    s3, up = cc.s3(), s3rver.client()

    def not_implemented(call, **kw):
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            call(**kw)
        err = ei.value.response
        assert (err["ResponseMetadata"]["HTTPStatusCode"], err["Error"]["Code"]) == (
            501, "NotImplemented"), err
        assert "upstream" in err["Error"]["Message"], err

    for bucket in (b, wb):
        not_implemented(s3.put_object, Bucket=bucket, Key="tagged", Body=b"x", Tagging="a=1")
        not_implemented(s3.create_multipart_upload, Bucket=bucket, Key="tagged",
                        Tagging="a=1")
        with pytest.raises(botocore.exceptions.ClientError):
            s3.head_object(Bucket=bucket, Key="tagged")
        assert not s3.list_multipart_uploads(Bucket=bucket).get("Uploads")
        s3.put_object(Bucket=bucket, Key="plain", Body=b"plain")
        not_implemented(s3.put_object_tagging, Bucket=bucket, Key="plain",
                        Tagging={"TagSet": [{"Key": "a", "Value": "1"}]})
        not_implemented(s3.delete_object_tagging, Bucket=bucket, Key="plain")
        assert s3.get_object_tagging(Bucket=bucket, Key="plain")["TagSet"] == []
        assert s3.get_object(Bucket=bucket, Key="plain")["Body"].read() == b"plain"
    with pytest.raises(botocore.exceptions.ClientError):
        up.head_object(Bucket=b, Key="tagged")
    assert s3.get_object_tagging(Bucket=b, Key="cold")["TagSet"] == []
    # a tagged native source copied in: the copy has no tags (the upstream could not keep them)
    s3.put_object(Bucket=n, Key="src", Body=b"tagged source", Tagging="k=v")
    s3.copy_object(Bucket=b, Key="copied", CopySource={"Bucket": n, "Key": "src"})
    assert up.get_object(Bucket=b, Key="copied")["Body"].read() == b"tagged source"
    assert s3.get_object_tagging(Bucket=b, Key="copied")["TagSet"] == []
    h = s3.head_object(Bucket=b, Key="copied")
    assert "x-amz-tagging-count" not in h["ResponseMetadata"]["HTTPHeaders"], h
    not_implemented(s3.copy_object, Bucket=b, Key="copied2",
                    CopySource={"Bucket": n, "Key": "src"}, TaggingDirective="REPLACE",
                    Tagging="x=y")
    with pytest.raises(botocore.exceptions.ClientError):
        up.head_object(Bucket=b, Key="copied2")
    # and the other way: a copy out of an S3-backed bucket into a native one has none either
    s3.copy_object(Bucket=n, Key="back", CopySource={"Bucket": b, "Key": "cold"},
                   TaggingDirective="REPLACE", Tagging="now=tagged")
    assert s3.get_object_tagging(Bucket=n, Key="back")["TagSet"] == [
        {"Key": "now", "Value": "tagged"}]
