"""Bucket lifecycle rules (S3 PutBucketLifecycleConfiguration): the configuration as boto3
and the ceph s3-tests set and read it back, AWS's errors for bad ones, and rules acted on by
the targets: objects expired by Days, Date, prefix, tags and size, incomplete multipart
uploads aborted, on a standalone target and across a cluster. The rule tests shorten a
lifecycle day to one second (lifecycle.day_ms) and run the pass every 300 ms; they wait for
what must go, then check that what must stay is still there (no timing asserts)."""
import datetime
import json
import os
import subprocess
import time

import botocore.exceptions
import pytest
import requests

import helpers
from conftest import _empty_bucket, _stop_nodes, start_cluster
from helpers import check_s3_error, client_error

ENDPOINTS = ("target", "proxy")

FAST = ["--lifecycle.interval_ms", "300", "--lifecycle.day_ms", "1000"]


def err(fn, *a, **kw):
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        fn(*a, **kw)
    return client_error(ei)


def api(node, method, path, body=None):
    """A SigV4-signed native call to node (a Target or the cluster's ProxyEndpoint)."""
    url = node.url + path
    data = json.dumps(body).encode() if body is not None else b""
    h = helpers.sign_headers(method, url, node.access_key, node.secret_key)
    return requests.request(method, url, data=data, headers=h, timeout=30)


def now_ms():
    return int(time.time() * 1000)


def passes_after(node, t_ms):
    """Every target (node: a target, or a proxy merging its targets) has finished a lifecycle
    pass that began after t_ms (wall-clock ms, as the job's started_ms)."""
    r = api(node, "GET", "/v1/jobs/lifecycle")
    if r.status_code != 200:
        return False
    j = r.json()
    jobs = list(j["targets"].values()) if "targets" in j else [j]
    want = len(node.storage)  # every target has run one
    return len(jobs) == want and all(x["state"] == "done" and x["started_ms"] > t_ms
                                     for x in jobs)


def wait_passes(node, t_ms, what):
    helpers.wait_until(lambda: passes_after(node, t_ms), timeout=60, interval=0.2, what=what)


def put_lc(s3, bucket, rules):
    return s3.put_bucket_lifecycle_configuration(Bucket=bucket,
                                                 LifecycleConfiguration={"Rules": rules})


def get_rules(s3, bucket):
    return s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]


def test_lifecycle_roundtrip(endpoint, s3, bucket):
    """What a client sets comes back as it was sent (ceph s3-tests test_lifecycle_get compares
    the rules whole): the rule-level Prefix, each Filter form, every action hoard keeps."""
    assert err(s3.get_bucket_lifecycle_configuration, Bucket=bucket)[:2] == (
        404, "NoSuchLifecycleConfiguration")
    rules = [
        {"ID": "test1/", "Expiration": {"Days": 31}, "Prefix": "test1/", "Status": "Enabled"},
        {"ID": "test2/", "Expiration": {"Days": 120}, "Prefix": "test2/", "Status": "Disabled"},
    ]
    put_lc(s3, bucket, rules)
    assert get_rules(s3, bucket) == rules
    rules = [
        {"ID": "empty", "Filter": {}, "Status": "Enabled",
         "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 2}},
        {"ID": "prefix", "Filter": {"Prefix": "logs/ a&b<c>"}, "Status": "Enabled",
         "Expiration": {"Days": 7}},
        {"ID": "tag", "Filter": {"Tag": {"Key": "class", "Value": "tmp"}}, "Status": "Enabled",
         "Expiration": {"Date": datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)}},
        {"ID": "and", "Filter": {"And": {"Prefix": "ckpt/", "Tags": [
            {"Key": "a", "Value": "1"}, {"Key": "b", "Value": ""}],
            "ObjectSizeGreaterThan": 100, "ObjectSizeLessThan": 1 << 30}},
         "Status": "Enabled", "Expiration": {"Days": 1}},
        {"ID": "size", "Filter": {"ObjectSizeGreaterThan": 0}, "Status": "Disabled",
         "NoncurrentVersionExpiration": {"NoncurrentDays": 3, "NewerNoncurrentVersions": 2}},
        {"ID": "marker", "Filter": {"Prefix": ""}, "Status": "Enabled",
         "Expiration": {"ExpiredObjectDeleteMarker": True}},
    ]
    put_lc(s3, bucket, rules)  # a PUT replaces the whole configuration
    assert get_rules(s3, bucket) == rules
    # kept beside the bucket's other settings
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": [{"Key": "k", "Value": "v"}]})
    assert get_rules(s3, bucket) == rules
    s3.delete_bucket_lifecycle(Bucket=bucket)
    assert err(s3.get_bucket_lifecycle_configuration, Bucket=bucket)[:2] == (
        404, "NoSuchLifecycleConfiguration")
    assert s3.get_bucket_tagging(Bucket=bucket)["TagSet"] == [{"Key": "k", "Value": "v"}]
    s3.delete_bucket_lifecycle(Bucket=bucket)  # none: still 204


def test_lifecycle_ids(endpoint, s3, bucket):
    """A rule without an ID gets one (s3-tests test_lifecycle_get_no_id), unique and the same
    on every read."""
    rules = [{"Expiration": {"Days": 31}, "Prefix": "test1/", "Status": "Enabled"},
             {"Expiration": {"Days": 31}, "Prefix": "test1/", "Status": "Enabled"},
             {"ID": "given", "Expiration": {"Days": 120}, "Prefix": "test2/",
              "Status": "Enabled"}]
    put_lc(s3, bucket, rules)
    got = get_rules(s3, bucket)
    ids = [r["ID"] for r in got]
    assert len(set(ids)) == 3 and ids[2] == "given" and all(ids), ids
    assert [r["Prefix"] for r in got] == ["test1/", "test1/", "test2/"]
    assert [r["ID"] for r in get_rules(s3, bucket)] == ids


def test_lifecycle_errors(endpoint, s3, raw, bucket):
    """AWS's codes for bad configurations (as ceph s3-tests check them), and a refused PUT
    changes nothing."""
    good = [{"ID": "keep", "Expiration": {"Days": 5}, "Prefix": "k/", "Status": "Enabled"}]
    put_lc(s3, bucket, good)
    day = {"Days": 1}
    cases = [
        ([{"ID": "x" * 256, "Expiration": day, "Prefix": "a", "Status": "Enabled"}],
         "InvalidArgument"),
        ([{"ID": "same", "Expiration": day, "Prefix": "a", "Status": "Enabled"},
          {"ID": "same", "Expiration": day, "Prefix": "b", "Status": "Enabled"}],
         "InvalidArgument"),
        ([{"ID": "s", "Expiration": day, "Prefix": "a", "Status": "invalid"}], "MalformedXML"),
        ([{"ID": "z", "Expiration": {"Days": 0}, "Prefix": "a", "Status": "Enabled"}],
         "InvalidArgument"),
        ([{"ID": "n", "Expiration": {"Days": -1}, "Prefix": "a", "Status": "Enabled"}],
         "InvalidArgument"),
        ([{"ID": "d", "Expiration": {"Date": "20200101"}, "Prefix": "a", "Status": "Enabled"}],
         "InvalidArgument"),
        ([{"ID": "noon", "Expiration": {"Date": datetime.datetime(
            2030, 1, 1, 12, tzinfo=datetime.timezone.utc)}, "Prefix": "a",
           "Status": "Enabled"}], "InvalidArgument"),
        ([{"ID": "none", "Prefix": "a", "Status": "Enabled"}], "InvalidRequest"),
        ([{"ID": "tags", "Filter": {"Tag": {"Key": "k", "Value": "v"}}, "Status": "Enabled",
           "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}], "InvalidRequest"),
        ([{"ID": "sizes", "Filter": {"And": {"ObjectSizeGreaterThan": 10,
                                             "ObjectSizeLessThan": 10}},
           "Status": "Enabled", "Expiration": day}], "InvalidRequest"),
        ([{"ID": "both", "Filter": {"Prefix": "a"}, "Prefix": "a", "Status": "Enabled",
           "Expiration": day}], "MalformedXML"),
        ([{"ID": "t", "Prefix": "a", "Status": "Enabled",
           "Transitions": [{"Days": 1, "StorageClass": "GLACIER"}]}], "NotImplemented"),
    ]
    for rules, code in cases:
        st, got, resp = err(put_lc, s3, bucket, rules)
        assert (st, got) == (501 if code == "NotImplemented" else 400, code), (rules, resp)
    for body in (b"<LifecycleConfiguration/>", b"<Other><Rule/></Other>", b"not xml",
                 b"<LifecycleConfiguration><Rule><Status>Enabled</Status><Expiration><Days>1"
                 b"</Days><Date>2030-01-01T00:00:00Z</Date></Expiration></Rule>"
                 b"</LifecycleConfiguration>",
                 b"<LifecycleConfiguration><Rule><Status>Enabled</Status><Expiration><Days>x"
                 b"</Days></Expiration></Rule></LifecycleConfiguration>",
                 b"<LifecycleConfiguration><Rule><Status>Enabled</Status><Filter><Prefix>a"
                 b"</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></Filter><Expiration><Days>1"
                 b"</Days></Expiration></Rule></LifecycleConfiguration>"):
        check_s3_error(raw.request("PUT", "/%s?lifecycle" % bucket, body=body), 400,
                       "MalformedXML")
    assert get_rules(s3, bucket) == good
    # a body over the XML limit (2 MiB) is refused before it is parsed; nothing changes
    big = b"<LifecycleConfiguration>" + b"<Rule><Filter/><Status>Enabled</Status>" \
        b"<Expiration><Days>1</Days></Expiration></Rule>" * 30000 + b"</LifecycleConfiguration>"
    assert len(big) > 2 << 20
    r = raw.request("PUT", "/%s?lifecycle" % bucket, body=big)
    assert 400 <= r.status < 500, (r.status, r.body[:300])
    # a tag filter S3 refuses
    aws_tag = [{"ID": "t", "Filter": {"Tag": {"Key": "aws:x", "Value": "v"}},
                "Status": "Enabled", "Expiration": day}]
    assert err(put_lc, s3, bucket, aws_tag)[:2] == (400, "InvalidArgument")
    assert get_rules(s3, bucket) == good
    # unsigned callers never see or set it, even in a bucket anyone may list
    lc_body = (b"<LifecycleConfiguration><Rule><ID>x</ID><Filter/><Status>Enabled</Status>"
               b"<Expiration><Days>1</Days></Expiration></Rule></LifecycleConfiguration>")
    for acl in ("private", "public-read"):
        s3.put_bucket_acl(Bucket=bucket, ACL=acl)
        assert raw.request("GET", "/%s?lifecycle" % bucket, sign=False).status == 403
        assert raw.request("PUT", "/%s?lifecycle" % bucket, body=lc_body,
                           sign=False).status == 403
        assert raw.request("DELETE", "/%s?lifecycle" % bucket, sign=False).status == 403
    s3.put_bucket_acl(Bucket=bucket, ACL="private")
    assert get_rules(s3, bucket) == good
    nb = helpers.unique_bucket_name("lc")
    assert err(put_lc, s3, nb, good)[:2] == (404, "NoSuchBucket")
    assert err(s3.get_bucket_lifecycle_configuration, Bucket=nb)[:2] == (404, "NoSuchBucket")


def names(s3, bucket):
    out, token = [], None
    while True:
        kw = {"Bucket": bucket}
        if token:
            kw["ContinuationToken"] = token
        r = s3.list_objects_v2(**kw)
        out += [o["Key"] for o in r.get("Contents", [])]
        if not r.get("IsTruncated"):
            return set(out)
        token = r["NextContinuationToken"]


def expiration_case(s3, bucket):
    """Writes objects that the rules below must expire (gone) and others they must keep;
    sets the rules; returns (gone, kept)."""
    gone, kept = set(), set()

    def put(key, body=b"x" * 10, tags=None, into=gone):
        kw = {"Tagging": tags} if tags else {}
        s3.put_object(Bucket=bucket, Key=key, Body=body, **kw)
        into.add(key)

    for i in range(3):
        put("exp/%d" % i)
    put("expire-not/0", into=kept)  # another prefix
    put("keep/0", into=kept)
    put("dis/0", into=kept)
    put("tag/yes", tags="class=tmp&x=1")
    put("tag/no", tags="class=keep", into=kept)
    put("tag/none", into=kept)
    put("size/big", body=b"y" * 1000)
    put("size/small", body=b"y" * 10, into=kept)
    put("date/0")
    put("future/0", into=kept)
    day = {"Days": 1}
    put_lc(s3, bucket, [
        {"ID": "exp", "Filter": {"Prefix": "exp/"}, "Status": "Enabled", "Expiration": day},
        {"ID": "keep", "Prefix": "keep/", "Status": "Enabled",
         "Expiration": {"Days": 1000000}},
        {"ID": "dis", "Prefix": "dis/", "Status": "Disabled", "Expiration": day},
        {"ID": "tag", "Filter": {"And": {"Prefix": "tag/", "Tags": [
            {"Key": "class", "Value": "tmp"}]}}, "Status": "Enabled", "Expiration": day},
        {"ID": "size", "Filter": {"And": {"Prefix": "size/", "ObjectSizeGreaterThan": 100}},
         "Status": "Enabled", "Expiration": day},
        {"ID": "date", "Prefix": "date/", "Status": "Enabled",
         "Expiration": {"Date": datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)}},
        {"ID": "future", "Prefix": "future/", "Status": "Enabled",
         "Expiration": {"Date": datetime.datetime(2999, 1, 1, tzinfo=datetime.timezone.utc)}},
    ])
    return gone, kept


@pytest.fixture
def fast_target(target_factory):
    return target_factory(extra_args=FAST)


def test_expiration_on_a_target(fast_target):
    s3 = helpers.boto3_client(fast_target)
    bucket = helpers.unique_bucket_name("lc")
    s3.create_bucket(Bucket=bucket)
    gone, kept = expiration_case(s3, bucket)
    helpers.wait_until(lambda: not (names(s3, bucket) & gone), timeout=60, interval=0.3,
                       what="the expired objects gone")
    # a whole pass later, every kept object is still there (a day is 1 s: all were due)
    wait_passes(fast_target, now_ms() + 2500, "a pass two days on")
    assert names(s3, bucket) == kept
    for k in kept:  # readable, not only listed
        assert s3.get_object(Bucket=bucket, Key=k)["Body"].read()
    # an object written after the rules is expired in its turn
    s3.put_object(Bucket=bucket, Key="exp/late", Body=b"z")
    helpers.wait_until(lambda: "exp/late" not in names(s3, bucket), timeout=60, interval=0.3,
                       what="exp/late expired")
    assert names(s3, bucket) == kept
    # with the rules deleted, nothing more goes, while passes go on for another bucket
    s3.delete_bucket_lifecycle(Bucket=bucket)
    other = helpers.unique_bucket_name("lc")
    s3.create_bucket(Bucket=other)
    put_lc(s3, other, [{"ID": "far", "Prefix": "z/", "Status": "Enabled",
                        "Expiration": {"Days": 1000000}}])
    s3.put_object(Bucket=bucket, Key="exp/after", Body=b"z")
    wait_passes(fast_target, now_ms() + 2500, "passes after exp/after was due")
    assert names(s3, bucket) == kept | {"exp/after"}
    # the pass is a job with what it did
    jobs = api(fast_target, "GET", "/v1/jobs").json()["jobs"]
    lc = [j for j in jobs if j["kind"] == "lifecycle"]
    assert lc and lc[0]["id"] == "lifecycle", jobs
    assert fast_target.metrics()["hoard_lifecycle_expired_total"] == len(gone) + 1


def test_abort_incomplete_uploads(fast_target):
    s3 = helpers.boto3_client(fast_target)
    bucket = helpers.unique_bucket_name("lc")
    s3.create_bucket(Bucket=bucket)
    old = s3.create_multipart_upload(Bucket=bucket, Key="tmp/big")["UploadId"]
    s3.upload_part(Bucket=bucket, Key="tmp/big", UploadId=old, PartNumber=1, Body=b"p" * 100)
    keep = s3.create_multipart_upload(Bucket=bucket, Key="ckpt/big")["UploadId"]
    s3.put_object(Bucket=bucket, Key="tmp/object", Body=b"o")  # objects: not this rule's
    put_lc(s3, bucket, [{"ID": "mpu", "Filter": {"Prefix": "tmp/"}, "Status": "Enabled",
                         "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}])

    def uploads():
        return {(u["Key"], u["UploadId"])
                for u in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])}
    helpers.wait_until(lambda: uploads() == {("ckpt/big", keep)}, timeout=60, interval=0.3,
                       what="tmp/big aborted")
    assert err(s3.upload_part, Bucket=bucket, Key="tmp/big", UploadId=old, PartNumber=2,
               Body=b"p")[:2] == (404, "NoSuchUpload")
    assert names(s3, bucket) == {"tmp/object"}
    # counted once the pass's abort step ends (a moment after the upload went)
    helpers.wait_until(
        lambda: fast_target.metrics()["hoard_lifecycle_aborted_uploads_total"] == 1,
        timeout=30, what="the abort counted")
    # the kept upload still completes
    e = s3.upload_part(Bucket=bucket, Key="ckpt/big", UploadId=keep, PartNumber=1,
                       Body=b"c" * 10)["ETag"]
    s3.complete_multipart_upload(Bucket=bucket, Key="ckpt/big", UploadId=keep,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})
    assert s3.get_object(Bucket=bucket, Key="ckpt/big")["Body"].read() == b"c" * 10


@pytest.fixture(scope="module")
def fast_cluster(tmp_path_factory, log_dir):
    nodes, ep = start_cluster(tmp_path_factory, log_dir, "lc-", 2, (), FAST)
    yield ep
    _stop_nodes(nodes)


def test_expiration_in_a_cluster(fast_cluster):
    """Rules set through the proxy reach every target with the BMD; each target expires its
    own objects, so every prefix behaves as on one target whichever target holds it."""
    s3 = helpers.boto3_client(fast_cluster)
    bucket = helpers.unique_bucket_name("lc")
    s3.create_bucket(Bucket=bucket)
    for i in range(12):  # spread over both targets
        s3.put_object(Bucket=bucket, Key="exp/many-%d" % i, Body=b"m")
    owners = {fast_cluster.owner(bucket, "exp/many-%d" % i) for i in range(12)}
    assert len(owners) == 2, owners
    gone, kept = expiration_case(s3, bucket)
    gone |= {"exp/many-%d" % i for i in range(12)}
    helpers.wait_until(lambda: not (names(s3, bucket) & gone), timeout=60, interval=0.3,
                       what="the expired objects gone")
    wait_passes(fast_cluster, now_ms() + 2500, "a pass two days on, on both targets")
    assert names(s3, bucket) == kept
    assert get_rules(s3, bucket)[0]["ID"] == "exp"
    _empty_bucket(s3, bucket)


def test_lifecycle_native_props(endpoint, s3, bucket):
    """The native API shows the rules among the bucket's properties and refuses malformed
    ones with the reason."""
    put_lc(s3, bucket, [{"ID": "r", "Prefix": "p/", "Status": "Enabled",
                         "Expiration": {"Days": 3}}])
    props = api(endpoint, "GET", "/v1/buckets/%s?props" % bucket).json()["props"]
    assert props["lifecycle"] == [{"id": "r", "status": "Enabled", "prefix": "p/",
                                   "expire_days": 3}], props
    r = api(endpoint, "PATCH", "/v1/buckets/" + bucket,
            {"lifecycle": [{"id": "r", "status": "Enabled", "prefix": ""}]})
    assert r.status_code == 400 and "At least one action" in r.text, r.text
    r = api(endpoint, "PATCH", "/v1/buckets/" + bucket,
            {"lifecycle": [{"id": "r", "status": "On", "prefix": "", "expire_days": 1}]})
    assert r.status_code == 400 and "Enabled or Disabled" in r.text, r.text
    assert get_rules(s3, bucket)[0]["ID"] == "r"


def test_lifecycle_clients(endpoint, s3, s3cmd, aws2, bucket, tmp_path):
    """s3cmd's expire / getlifecycle / dellifecycle and the aws CLI's s3api calls, as users
    type them."""
    s3cmd("expire", "s3://%s" % bucket, "--expiry-days=14", "--expiry-prefix=logs/")
    rules = get_rules(s3, bucket)
    assert len(rules) == 1 and rules[0]["Expiration"] == {"Days": 14} and \
        (rules[0].get("Prefix") == "logs/" or rules[0].get("Filter") == {"Prefix": "logs/"}), \
        rules
    out = s3cmd("getlifecycle", "s3://%s" % bucket).stdout.decode()
    assert "<Days>14</Days>" in out and "logs/" in out, out
    s3cmd("expire", "s3://%s" % bucket, "--expiry-date=2031-01-01")  # the whole bucket
    rules = get_rules(s3, bucket)
    assert len(rules) == 1 and rules[0]["Expiration"]["Date"].year == 2031, rules
    s3cmd("dellifecycle", "s3://%s" % bucket)
    assert err(s3.get_bucket_lifecycle_configuration, Bucket=bucket)[:2] == (
        404, "NoSuchLifecycleConfiguration")
    conf = tmp_path / "lc.json"
    conf.write_text(json.dumps({"Rules": [
        {"ID": "cli", "Filter": {"Prefix": "scratch/"}, "Status": "Enabled",
         "Expiration": {"Days": 2},
         "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}]}))
    aws2("s3api", "put-bucket-lifecycle-configuration", "--bucket", bucket,
         "--lifecycle-configuration", "file://%s" % conf)
    got = json.loads(aws2("s3api", "get-bucket-lifecycle-configuration", "--bucket",
                          bucket).stdout)
    assert got["Rules"] == json.loads(conf.read_text())["Rules"], got
    aws2("s3api", "delete-bucket-lifecycle", "--bucket", bucket)
    assert err(s3.get_bucket_lifecycle_configuration, Bucket=bucket)[:2] == (
        404, "NoSuchLifecycleConfiguration")


def test_deleting_rules_stops_a_running_pass(fast_target):
    """DELETE ?lifecycle while a pass is deleting a large bucket: the pass stops within a batch
    of names (it reads the rules again before each), and the rest stays."""
    n = 20000
    bucket = helpers.unique_bucket_name("lc")
    s3 = helpers.boto3_client(fast_target)
    s3.create_bucket(Bucket=bucket)
    bench = os.path.join(fast_target.bin_dir, "hoard-bench")
    p = subprocess.run([bench, "--base", "%s/%s" % (fast_target.url, bucket), "--objects",
                        str(n), "--seq", "--put", "100", "--size", "16", "--requests", str(n),
                        "--warmup", "0", "--secs", "300", "--conns", "8", "--sigv4",
                        "%s:%s" % (fast_target.access_key, fast_target.secret_key)],
                       capture_output=True, timeout=320)
    assert p.returncode == 0 and b" 0 errors" in p.stdout, p.stdout + p.stderr
    assert len(names(s3, bucket)) == n  # every key once
    put_lc(s3, bucket, [{"ID": "all", "Filter": {}, "Status": "Enabled", "Expiration": {
        "Date": datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)}}])

    def expired():
        return fast_target.metrics().get("hoard_lifecycle_expired_total", 0)
    helpers.wait_until(lambda: expired() > 0, timeout=60, interval=0.02, what="a pass begun")
    s3.delete_bucket_lifecycle(Bucket=bucket)
    stopped_at = expired()
    if stopped_at >= n:
        pytest.skip("the pass ended before the DELETE landed (%d objects)" % n)
    # later passes (kept going by another bucket's rules) delete nothing more of it
    other = helpers.unique_bucket_name("lc")
    s3.create_bucket(Bucket=other)
    put_lc(s3, other, [{"ID": "far", "Prefix": "z/", "Status": "Enabled",
                        "Expiration": {"Days": 1000000}}])
    wait_passes(fast_target, now_ms(), "a pass after the DELETE")
    left = len(names(s3, bucket))
    assert expired() < n and left == n - expired() and left > 0, (left, expired())
    assert expired() - stopped_at <= 2000, (stopped_at, expired())  # within two batches


def expiration_header(resp):
    """(expiry-date as a datetime, rule-id) of an x-amz-expiration header, or None."""
    import email.utils
    import re
    import urllib.parse
    h = resp["ResponseMetadata"]["HTTPHeaders"].get("x-amz-expiration")
    if h is None:
        return None
    m = re.fullmatch(r'expiry-date="(.+)", rule-id="(.+)"', h)
    assert m, h
    return email.utils.parsedate_to_datetime(m.group(1)), urllib.parse.unquote(m.group(2))


def test_expiration_header(endpoint, s3, bucket, target_factory):
    """x-amz-expiration on PUT, HEAD and GET of an object a rule expires (ceph s3-tests
    test_lifecycle_expiration_header_put/head/tags_head): the day it goes, at midnight UTC,
    and the rule's ID; none for objects no rule takes."""
    put_lc(s3, bucket, [
        {"ID": "rule1 /&", "Filter": {"Prefix": "days1/"}, "Status": "Enabled",
         "Expiration": {"Days": 1}},
        {"ID": "tagged", "Filter": {"And": {"Prefix": "t/", "Tags": [
            {"Key": "class", "Value": "tmp"}]}}, "Status": "Enabled", "Expiration": {"Days": 5}},
        {"ID": "off", "Prefix": "off/", "Status": "Disabled", "Expiration": {"Days": 1}},
        {"ID": "sooner", "Prefix": "days1/soon", "Status": "Enabled",
         "Expiration": {"Date": datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)}},
    ])
    for resp in (s3.put_object(Bucket=bucket, Key="days1/foo", Body=b"x"),
                 s3.head_object(Bucket=bucket, Key="days1/foo"),
                 s3.get_object(Bucket=bucket, Key="days1/foo")):
        at, rule = expiration_header(resp)
        written = s3.head_object(Bucket=bucket, Key="days1/foo")["LastModified"]
        # a day after Last-Modified, rounded up to the next midnight UTC (as AWS counts)
        want = (written + datetime.timedelta(days=2)).replace(hour=0, minute=0, second=0,
                                                                microsecond=0)
        assert rule == "rule1 /&" and at == want, (at, written)
    # a conditional GET that is refused carries none (412, 304)
    for cond in ({"IfMatch": '"0123"'}, {"IfNoneMatch": resp["ETag"]}):
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            s3.get_object(Bucket=bucket, Key="days1/foo", **cond)
        assert "x-amz-expiration" not in ei.value.response["ResponseMetadata"]["HTTPHeaders"]
    # the earliest of two rules
    at, rule = expiration_header(s3.put_object(Bucket=bucket, Key="days1/soon", Body=b"x"))
    assert rule == "sooner" and at.year == 2020, (at, rule)
    # tags decide
    r = s3.put_object(Bucket=bucket, Key="t/a", Body=b"x", Tagging="class=tmp")
    assert expiration_header(r)[1] == "tagged"
    assert expiration_header(s3.head_object(Bucket=bucket, Key="t/a"))[1] == "tagged"
    assert expiration_header(s3.put_object(Bucket=bucket, Key="t/b", Body=b"x")) is None
    s3.put_object_tagging(Bucket=bucket, Key="t/b",
                          Tagging={"TagSet": [{"Key": "class", "Value": "tmp"}]})
    assert expiration_header(s3.head_object(Bucket=bucket, Key="t/b"))[1] == "tagged"
    # no rule, a disabled one, multipart parts: none
    assert expiration_header(s3.put_object(Bucket=bucket, Key="other", Body=b"x")) is None
    assert expiration_header(s3.put_object(Bucket=bucket, Key="off/x", Body=b"x")) is None
    up = s3.create_multipart_upload(Bucket=bucket, Key="days1/mpu")["UploadId"]
    part = s3.upload_part(Bucket=bucket, Key="days1/mpu", UploadId=up, PartNumber=1, Body=b"p")
    assert expiration_header(part) is None
    # CompleteMultipartUpload and CopyObject give it for the object they wrote
    done = s3.complete_multipart_upload(
        Bucket=bucket, Key="days1/mpu", UploadId=up,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]})
    assert expiration_header(done)[1] == "rule1 /&"
    # (a copy answered the keep-alive way, after s3.complete_keepalive_ms, has sent its headers
    # before the object exists: the suite's servers use 20 ms, which a loaded machine's fsync
    # can pass, so copies are checked on a target with the default 5 s)
    t = target_factory("lc-copy")
    c = helpers.boto3_client(t)
    c.create_bucket(Bucket=bucket)
    put_lc(c, bucket, [{"ID": "rule1 /&", "Filter": {"Prefix": "days1/"}, "Status": "Enabled",
                        "Expiration": {"Days": 1}}])
    c.put_object(Bucket=bucket, Key="other", Body=b"x")
    c.put_object(Bucket=bucket, Key="days1/foo", Body=b"x")
    cp = c.copy_object(Bucket=bucket, Key="days1/copy",
                       CopySource={"Bucket": bucket, "Key": "other"})
    assert expiration_header(cp)[1] == "rule1 /&"
    cp = c.copy_object(Bucket=bucket, Key="other2", CopySource={"Bucket": bucket,
                                                                "Key": "days1/foo"})
    assert expiration_header(cp) is None
    # without the rules, nothing
    s3.delete_bucket_lifecycle(Bucket=bucket)
    assert expiration_header(s3.head_object(Bucket=bucket, Key="days1/foo")) is None
