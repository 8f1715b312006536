"""Cold GET of S3-backed buckets (issue 14 item 3): the bucket property validate_cold_get."""
import hashlib
import os
import uuid

import pytest

import helpers
from cachefix import C_KEYS, HoardCluster, profiles, s3rver  # noqa: F401
from conftest import _TARGETS

CACHE_TARGET = ["--cache.atime_flush_ms", "200", "--upstream.retries", "0",
                "--upstream.connect_timeout_ms", "1000"]


def uname(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:10])


@pytest.fixture(scope="module")
def cache(tmp_path_factory, log_dir, profiles):  # noqa: F811
    c = HoardCluster("cg", str(tmp_path_factory.mktemp("cg")), log_dir, _TARGETS, C_KEYS,
                     ntargets=1, target_extra=CACHE_TARGET)
    c.start()
    for n in c.nodes:
        n.expect_alive = True
    yield c
    for n in c.nodes:
        n.expect_alive = False
    problems = c.stop()
    assert not problems, problems


def cached_names(cache, bucket):
    return {e["name"] for e in cache.listing(bucket, cached="true", limit=1000)["entries"]}


def corrupt_in_s3rver(s3rver, bucket, key, data):  # noqa: F811
    """Overwrites 16 bytes in the middle of s3rver's stored copy (same length): the body no
    longer matches the MD5 ETag s3rver announces."""
    path = os.path.join(s3rver.data, bucket, key + "._S3rver_object")
    assert os.path.getsize(path) == len(data)
    with open(path, "r+b") as f:
        f.seek(len(data) // 2)
        f.write(b"\xff" * 16)
    bad = bytearray(data)
    bad[len(data) // 2:len(data) // 2 + 16] = b"\xff" * 16
    return bytes(bad)


def test_validate_cold_get_false_checks_the_size_only(s3rver, cache):  # noqa: F811
    """With "validate_cold_get": false the bytes are not hashed against the upstream's MD5
    ETag (the size still is): a copy that no longer matches its ETag is served whole and
    cached, where the default (true) cuts the client off and caches nothing
    (test_cache.py::test_etag_mismatch_aborts_and_caches_nothing). The property shows in the
    bucket's props, true by default, and can be switched back."""
    data = helpers.pattern_bytes(3 * 1024 * 1024 + 17, 9)
    src = uname("src")
    s3rver.client().create_bucket(Bucket=src)
    s3rver.client().put_object(Bucket=src, Key="k", Body=data)
    bad = corrupt_in_s3rver(s3rver, src, "k", data)
    b = cache.create_cloud_bucket(src, s3rver.url, "s3rver")
    props = cache.api("GET", "/v1/buckets/%s?props" % b).json()["props"]
    assert props["validate_cold_get"] is True, props
    r = cache.api("PATCH", "/v1/buckets/" + b, body={"validate_cold_get": False})
    assert r.status_code == 200, r.text
    props = cache.api("GET", "/v1/buckets/%s?props" % b).json()["props"]
    assert props["validate_cold_get"] is False, props
    assert cache.api("PATCH", "/v1/buckets/" + b,
                     body={"validate_cold_get": "no"}).status_code == 400
    failed0 = cache.target_metric("hoard_cold_fills_failed_total")
    r = cache.get(b, "k")
    assert r.status_code == 200 and r.content == bad
    assert r.headers["ETag"] == '"%s"' % hashlib.md5(data).hexdigest()  # the upstream's
    helpers.wait_until(lambda: cached_names(cache, b) == {"k"}, timeout=20, what="k cached")
    assert cache.get(b, "k").content == bad
    assert cache.target_metric("hoard_cold_fills_failed_total") == failed0
    # back to the default: the next fill of a corrupted copy is refused again
    s3rver.client().put_object(Bucket=src, Key="k2", Body=data)
    corrupt_in_s3rver(s3rver, src, "k2", data)
    assert cache.api("PATCH", "/v1/buckets/" + b,
                     body={"validate_cold_get": None}).status_code == 200
    props = cache.api("GET", "/v1/buckets/%s?props" % b).json()["props"]
    assert props["validate_cold_get"] is True, props
    r = cache.get(b, "k2", stream=True)
    got = b""
    try:
        for chunk in r.iter_content(65536):
            got += chunk
    except Exception:  # cut off: urllib3 raises or just ends early
        pass
    assert len(got) < len(data)
    helpers.wait_until(lambda: cache.target_metric("hoard_cold_fills_failed_total") == failed0 + 1,
                       timeout=20, what="the failed fill counted")
    assert cached_names(cache, b) == {"k"}
