"""Caching tier (issue 5): S3-backed buckets in front of real upstreams.

Upstreams: s3rver from npm (an independent S3 implementation, no signature checks) and a second
hoard cluster (which verifies SigV4, so the cache's request signing is really tested). The
cache is a hoard cluster (1 proxy, 2 targets). Covered: cold then warm GET byte-identical,
single-flight (20 concurrent cold GETs of a 100 MiB object, one GET counted at the upstream),
ranged cold GET through an upstream range request, warm GETs with the upstream stopped, cold
ones 503, validate_warm_get, write-through PUT/DELETE, upstream errors (403 with the upstream's
message), listing with the cached flag, prefetch (template, prefix) then reads with the
upstream stopped, evict, an ETag mismatch caching nothing.
"""
import hashlib
import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.parse
import uuid
from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest
import requests
from botocore.config import Config
import botocore.exceptions
from botocore.exceptions import ReadTimeoutError

import helpers
from cachefix import C_KEYS, UP_KEYS, HoardCluster, profiles, s3rver, scripted_s3  # noqa: F401
from conftest import _TARGETS
CACHE_TARGET = ["--space.check_ms", "200", "--cache.atime_flush_ms", "200",
                "--upstream.retries", "1", "--upstream.backoff_ms", "50",
                "--upstream.connect_timeout_ms", "1000"]


def uname(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:10])


@pytest.fixture(scope="module")
def upstream(tmp_path_factory, log_dir):
    c = HoardCluster("up", str(tmp_path_factory.mktemp("up")), log_dir, _TARGETS, UP_KEYS,
                     ntargets=1)
    c.start()
    yield c
    problems = c.stop()
    assert not problems, problems


@pytest.fixture(scope="module")
def cache(tmp_path_factory, log_dir, profiles):
    yield from HoardCluster("cache", str(tmp_path_factory.mktemp("cache")), log_dir, _TARGETS,
                            C_KEYS, ntargets=2, target_extra=CACHE_TARGET).serve()


def up_client(upstream):
    return upstream.s3()


def md5(b):
    return hashlib.md5(b).hexdigest()


def s3rver_bucket(s3rver, objects):
    """A new s3rver bucket holding objects {key: bytes}."""
    name = uname("src")
    c = s3rver.client()
    c.create_bucket(Bucket=name)
    for k, v in objects.items():
        c.put_object(Bucket=name, Key=k, Body=v)
    return name


def cached_names(cache, bucket, prefix=""):
    j = cache.listing(bucket, cached="true", prefix=prefix, limit=10000)
    return {e["name"] for e in j["entries"]}


def cached_sizes(cache, bucket):
    j = cache.listing(bucket, cached="true", limit=10000)
    return {e["name"]: e["size"] for e in j["entries"]}


def wait_cached(cache, bucket, want):
    """A cold GET's client has all its bytes once they are verified; the fill commits the
    object (fsync, catalog row) right after, off the client's path: wait for that."""
    return helpers.wait_until(lambda: cached_names(cache, bucket) == set(want), timeout=20,
                              what="%s cached in %s" % (sorted(want), bucket))


# ---- cold and warm GET ----

def test_cold_then_warm_byte_identical(s3rver, cache):
    objs = {"empty": b"", "one": b"x", "k/small": helpers.pattern_bytes(1000, 1),
            "k/mid": helpers.pattern_bytes(300 * 1024 + 11, 2),
            "k/big with space+plus": helpers.pattern_bytes(5 * 1024 * 1024 + 7, 3)}
    src = s3rver_bucket(s3rver, objs)
    s3rver.client().put_object(Bucket=src, Key="typed", Body=b"{}", ContentType="application/json",
                               Metadata={"color": "blue"})
    b = cache.create_cloud_bucket(src, s3rver.url, "s3rver")
    hits0, miss0 = cache.target_metric("hoard_cache_hits_total"), \
        cache.target_metric("hoard_cache_misses_total")
    for k, v in objs.items():  # native API, 307 to the owner
        r = cache.get(b, k)
        assert r.status_code == 200, (k, r.text)
        assert r.content == v, k
        assert r.headers["ETag"] == '"%s"' % md5(v)
    assert cache.target_metric("hoard_cache_misses_total") - miss0 == len(objs)
    wait_cached(cache, b, objs)
    s3 = cache.s3()  # S3 API through the proxy's relay: warm now
    for k, v in objs.items():
        o = s3.get_object(Bucket=b, Key=k)
        assert o["Body"].read() == v, k
    assert cache.target_metric("hoard_cache_hits_total") - hits0 == len(objs)
    assert cache.target_metric("hoard_cache_misses_total") - miss0 == len(objs)
    o = s3.get_object(Bucket=b, Key="typed")  # cold through S3: type and metadata kept
    assert o["ContentType"] == "application/json" and o["Metadata"] == {"color": "blue"}
    h = s3.head_object(Bucket=b, Key="typed")
    assert h["ContentLength"] == 2 and h["Metadata"] == {"color": "blue"}


def test_head_and_missing_of_uncached(s3rver, cache):
    src = s3rver_bucket(s3rver, {"h": b"12345"})
    b = cache.create_cloud_bucket(src, s3rver.url, "s3rver")
    r = cache.api("HEAD", cache.obj_path(b, "h"))
    assert r.status_code == 200 and r.headers["Content-Length"] == "5"
    assert r.headers["ETag"] == '"%s"' % md5(b"12345")
    assert cached_names(cache, b) == set()  # a HEAD caches nothing
    r = cache.get(b, "nope")
    helpers.check_json_error(r, 404, "NoSuchKey")
    with pytest.raises(Exception) as e:
        cache.s3().get_object(Bucket=b, Key="nope")
    assert e.value.response["Error"]["Code"] == "NoSuchKey"


def test_sse_c_read_of_uncached_and_cached(s3rver, cache):
    """SSE-C parameters on a read of an S3-backed bucket's object: AWS's 400 InvalidRequest
    whether the object is cold (HEAD, ranged GET, GET) or warm, as for a native bucket; a key
    the upstream lacks stays 404."""
    src = s3rver_bucket(s3rver, {"o": b"0123456789"})
    b = cache.create_cloud_bucket(src, s3rver.url, "s3rver")
    s3 = cache.s3()
    ssec = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": "k" * 32}

    def refused(call, **kw):
        with pytest.raises(Exception) as e:
            call(Bucket=b, Key="o", **kw, **ssec)
        resp = e.value.response
        assert resp["ResponseMetadata"]["HTTPStatusCode"] == 400, resp
        assert call == s3.head_object or resp["Error"]["Code"] == "InvalidRequest", resp

    refused(s3.head_object)
    refused(s3.get_object, Range="bytes=0-3")
    refused(s3.get_object)
    assert s3.get_object(Bucket=b, Key="o")["Body"].read() == b"0123456789"
    wait_cached(cache, b, {"o"})
    refused(s3.get_object)
    refused(s3.head_object)
    with pytest.raises(Exception) as e:
        s3.get_object(Bucket=b, Key="nope", **ssec)
    assert e.value.response["Error"]["Code"] == "NoSuchKey"


def test_single_flight_20_concurrent_cold_gets(upstream, cache):
    """20 concurrent cold GETs of one 32 MiB object: exactly one GET reaches the upstream.
    (32 MiB, not 100: the fill still outlasts the clients' arrival, and the 20 streams hashed
    in Python took 35 s of the suite.)"""
    size = 32 * 1024 * 1024
    data = helpers.pattern_bytes(size, 7)
    want = md5(data)
    ub = uname("sf")
    u = up_client(upstream)
    u.create_bucket(Bucket=ub)
    u.put_object(Bucket=ub, Key="big.bin", Body=data)
    del data
    b = cache.create_cloud_bucket(ub, upstream.url, "hoardup")
    gets0 = upstream.proxy.metric("hoard_requests_total", op="get", status="200")
    miss0 = cache.target_metric("hoard_cache_misses_total")
    barrier = threading.Barrier(20)

    def one(i):
        barrier.wait()
        r = cache.get(b, "big.bin", stream=True)
        h = hashlib.md5()
        n = 0
        for chunk in r.iter_content(1 << 20):
            h.update(chunk)
            n += len(chunk)
        return r.status_code, n, h.hexdigest()

    with ThreadPoolExecutor(20) as ex:
        res = list(ex.map(one, range(20)))
    assert all(x == (200, size, want) for x in res), res
    gets = upstream.proxy.metric("hoard_requests_total", op="get", status="200") - gets0
    assert gets == 1, "upstream served %d GETs for one object" % gets
    # several clients really arrived while the object was cold (and joined the fill)
    assert cache.target_metric("hoard_cache_misses_total") - miss0 > 1


def test_ranged_cold_get_is_an_upstream_range_request(upstream, cache):
    size = 64 * 1024 * 1024
    data = helpers.pattern_bytes(size, 9)
    ub = uname("rg")
    u = up_client(upstream)
    u.create_bucket(Bucket=ub)
    u.put_object(Bucket=ub, Key="big", Body=data)
    b = cache.create_cloud_bucket(ub, upstream.url, "hoardup")
    ranged0 = upstream.proxy.metric("hoard_requests_total", op="get", status="206")
    full0 = upstream.proxy.metric("hoard_requests_total", op="get", status="200")
    t0 = time.monotonic()
    r = cache.get(b, "big", headers={"Range": "bytes=40000000-40000999"})
    ranged_s = time.monotonic() - t0
    assert r.status_code == 206, r.text
    assert r.content == data[40000000:40001000]
    assert r.headers["Content-Range"] == "bytes 40000000-40000999/%d" % size
    # served by an upstream range request, not after downloading the whole object (the
    # upstream counts a request when it has finished it: it may not have yet)
    helpers.wait_until(lambda: upstream.proxy.metric("hoard_requests_total", op="get",
                                                     status="206") - ranged0 == 1,
                       timeout=20, what="the upstream counting one ranged GET")
    # cache.range_fill (default on): the whole object is filled in the background
    helpers.wait_until(lambda: cached_names(cache, b) == {"big"}, timeout=60,
                       what="background fill after a ranged GET")
    t0 = time.monotonic()
    r = cache.get(b, "big")
    full_s = time.monotonic() - t0
    assert r.status_code == 200 and md5(r.content) == md5(data)
    helpers.wait_until(lambda: upstream.proxy.metric("hoard_requests_total", op="get",
                                                     status="200") - full0 == 1,
                       timeout=20, what="the upstream counting one whole GET (the fill's)")
    assert upstream.proxy.metric("hoard_requests_total", op="get", status="206") - ranged0 == 1
    print("ranged cold GET %.3fs, warm full GET %.3fs" % (ranged_s, full_s))


def test_ranged_cold_get_refuses_a_malformed_upstream_content_range(scripted_s3, cache):
    """The Content-Range of an upstream's 206 is parsed strictly: a sign, trailing bytes, a
    range past the total or one that disagrees with the body's length make the answer an
    upstream error (503) instead of a 206 relaying numbers that were never sent. So does a 206
    without a Content-Range."""
    data = helpers.pattern_bytes(10000, 3)
    bad = {
        "signed": "bytes -1-98/10000",
        "trailing": "bytes 100-199/10000 junk",
        "past-total": "bytes 100-199/150",
        "wrong-length": "bytes 100-150/10000",
        "overflow": "bytes 100-199/99999999999999999999999",
        "missing": None,
    }
    honest = scripted_s3.content_range
    scripted_s3.content_range = lambda key, a, b, total: (
        bad[key] if key in bad else honest(key, a, b, total))
    for k in list(bad) + ["good"]:
        scripted_s3.objects[k] = data
    b = cache.create_cloud_bucket(uname("scr"), scripted_s3.url, "s3rver")
    r = cache.get(b, "good", headers={"Range": "bytes=100-199"})
    assert r.status_code == 206, r.text
    assert r.headers["Content-Range"] == "bytes 100-199/10000"
    assert r.content == data[100:200]
    wrong = []
    for k, v in bad.items():
        r = cache.get(b, k, headers={"Range": "bytes=100-199"})
        if r.status_code != 503 or "Content-Range" not in r.text:
            wrong.append((v, r.status_code, r.headers.get("Content-Range")))
    assert not wrong, wrong


def test_no_reader_joins_a_fill_that_a_delete_overtook(scripted_s3, cache):
    """A cold fill still fetching the old object when a DELETE of it is answered: a GET after
    that answer must not join the fill (it would get the deleted bytes), and the fill must
    not cache what it fetched (a deleted object would come back from the cache). The fill's
    weak fence is cancelled by the delete (store/fence.c); the reader that came first still
    gets the whole old object."""
    data = helpers.pattern_bytes(2 * 1024 * 1024, 7)
    key = "gated-" + uname("k")
    scripted_s3.objects[key] = data
    gate = scripted_s3.gates[key] = threading.Event()
    b = cache.create_cloud_bucket(uname("scr"), scripted_s3.url, "s3rver")
    first = {}

    def read_first():
        r = cache.get(b, key)
        first["status"], first["body"] = r.status_code, r.content

    t = threading.Thread(target=read_first)
    t.start()
    try:
        assert scripted_s3.halfway.setdefault(key, threading.Event()).wait(30), \
            "the fill never reached the upstream"
        r = cache.api("DELETE", "/v1/objects/%s/%s" % (b, key))
        assert r.status_code in (200, 204), r.text
        assert key not in scripted_s3.objects
        # after the delete's answer: not the old fill's bytes (that GET would wait for the
        # gate, so a timeout here means it joined the old fill)
        r = cache.api("GET", cache.obj_path(b, key), timeout=20)
    except (requests.exceptions.Timeout, requests.exceptions.ConnectionError) as e:
        raise AssertionError("a GET after the DELETE joined the fill of the deleted object: %s"
                             % e)
    finally:
        gate.set()
        t.join(60)
    assert first == {"status": 200, "body": data}
    assert r.status_code == 404, (r.status_code, r.text[:200])
    # the old fill finished: nothing of it is cached, and a GET is still 404
    r = cache.get(b, key)
    assert r.status_code == 404, (r.status_code, r.text[:200])
    assert key not in cached_names(cache, b)


# ---- upstream stopped ----

def test_upstream_stopped_warm_served_cold_503_listing_cached(s3rver, cache):
    objs = {"w%d" % i: helpers.pattern_bytes(50000 + i, i) for i in range(4)}
    objs["c0"] = b"cold one"
    src = s3rver_bucket(s3rver, objs)
    b = cache.create_cloud_bucket(src, s3rver.url, "s3rver")
    for k in ("w0", "w1", "w2", "w3"):
        assert cache.get(b, k).status_code == 200
    wait_cached(cache, b, ["w0", "w1", "w2", "w3"])
    s3rver.stop()
    try:
        for k in ("w0", "w1", "w2", "w3"):
            r = cache.get(b, k)
            assert r.status_code == 200 and r.content == objs[k], k
            assert cache.s3().get_object(Bucket=b, Key=k)["Body"].read() == objs[k]
        r = cache.get(b, "c0")
        helpers.check_json_error(r, 503, "ServiceUnavailable")
        assert s3rver.url in r.json()["message"] and "unreachable" in r.json()["message"]
        with pytest.raises(Exception) as e:
            cache.s3().get_object(Bucket=b, Key="c0")
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
        r = cache.api("HEAD", cache.obj_path(b, "c0"))
        assert r.status_code == 503
        # listing falls back to the cached objects, with a Warning header (native and S3)
        # and a CLI note
        warm = ["w0", "w1", "w2", "w3"]
        r = cache.api("GET", "/v1/buckets/%s" % b)
        assert r.status_code == 200, r.text
        assert r.headers["Warning"] == \
            '199 hoard "upstream unavailable; listing cached objects only"'
        assert r.json()["upstream_unavailable"] is True
        assert [e["name"] for e in r.json()["entries"]] == warm
        assert all(e["cached"] for e in r.json()["entries"])
        page = cache.s3().list_objects_v2(Bucket=b)
        assert [o["Key"] for o in page["Contents"]] == warm
        assert "upstream unavailable" in page["ResponseMetadata"]["HTTPHeaders"]["warning"]
        p = hoard(cache, "object", "ls", b)
        assert p.returncode == 0, p.stderr
        assert "upstream is unavailable; listing cached objects only" in p.stderr, p.stderr
        assert [ln.split()[0] for ln in p.stdout.splitlines()[1:] if ln.strip()] == warm, \
            p.stdout
        out = subprocess.run(["aws", "--endpoint-url", cache.url, "s3", "ls", "s3://%s/" % b],
                             capture_output=True, text=True, timeout=60, env=dict(
                                 os.environ, AWS_ACCESS_KEY_ID=C_KEYS[0],
                                 AWS_SECRET_ACCESS_KEY=C_KEYS[1],
                                 AWS_DEFAULT_REGION="us-east-1"))
        assert out.returncode == 0 and all(k in out.stdout for k in warm), out.stderr
        assert cached_names(cache, b) == set(warm)  # the local listing works
    finally:
        s3rver.start()
    r = cache.get(b, "c0")
    assert r.status_code == 200 and r.content == b"cold one"


# ---- validation ----

def test_validate_warm_get(s3rver, cache):
    src = s3rver_bucket(s3rver, {"obj": b"version one", "gone": b"soon deleted"})
    val = cache.create_cloud_bucket(uname("val"), s3rver.url, "s3rver")
    stale = cache.create_cloud_bucket(uname("stale"), s3rver.url, "s3rver")
    for b in (val, stale):  # two hoard buckets in front of the same upstream bucket
        r = cache.api("PATCH", "/v1/buckets/" + b, body={"upstream": {
            "endpoint": s3rver.url, "profile": "s3rver", "bucket": src}})
        assert r.status_code == 200, r.text
    r = cache.api("PATCH", "/v1/buckets/" + val, body={"validate_warm_get": True})
    assert r.status_code == 200, r.text
    props = cache.api("GET", "/v1/buckets/%s?props" % val).json()["props"]
    assert props["validate_warm_get"] is True and props["upstream"]["bucket"] == src
    for b in (val, stale):
        assert cache.get(b, "obj").content == b"version one"
        assert cache.get(b, "gone").content == b"soon deleted"
        wait_cached(cache, b, ["obj", "gone"])
    s3rver.client().put_object(Bucket=src, Key="obj", Body=b"version two!")
    s3rver.client().delete_object(Bucket=src, Key="gone")
    stale0 = cache.target_metric("hoard_cache_stale_total")
    assert cache.get(val, "obj").content == b"version two!"
    assert cache.target_metric("hoard_cache_stale_total") - stale0 == 1
    helpers.wait_until(lambda: cached_sizes(cache, val).get("obj") == 12, timeout=20,
                       what="the refetched copy committed")
    assert cache.get(val, "obj").content == b"version two!"  # refetched copy is warm
    assert cache.target_metric("hoard_cache_stale_total") - stale0 == 1
    helpers.check_json_error(cache.get(val, "gone"), 404, "NoSuchKey")
    assert cached_names(cache, val) == {"obj"}
    # without validation a warm GET never asks the upstream: the cached copy is served
    assert cache.get(stale, "obj").content == b"version one"
    assert cache.get(stale, "gone").content == b"soon deleted"


# ---- writes ----

def test_write_through_put_and_delete(upstream, cache):
    ub = uname("wt")
    u = up_client(upstream)
    u.create_bucket(Bucket=ub)
    b = cache.create_cloud_bucket(ub, upstream.url, "hoardup")
    s3 = cache.s3()
    body = helpers.pattern_bytes(700 * 1024 + 3, 4)
    r = s3.put_object(Bucket=b, Key="dir/a b+c", Body=body, ContentType="image/png",
                      Metadata={"who": "me"})
    assert r["ETag"] == '"%s"' % md5(body)
    o = u.get_object(Bucket=ub, Key="dir/a b+c")  # the upstream has it, signed by the cache
    assert o["Body"].read() == body and o["ContentType"] == "image/png"
    assert o["Metadata"] == {"who": "me"}
    assert cached_names(cache, b) == {"dir/a b+c"}
    wt = cache.target_metric("hoard_write_through_total")
    assert wt >= 1
    r = cache.api("PUT", cache.obj_path(b, "native-put"), body=b"via native")
    assert r.status_code == 200, r.text
    assert u.get_object(Bucket=ub, Key="native-put")["Body"].read() == b"via native"
    s3.delete_object(Bucket=b, Key="dir/a b+c")
    with pytest.raises(Exception) as e:
        u.head_object(Bucket=ub, Key="dir/a b+c")
    assert e.value.response["Error"]["Code"] in ("404", "NoSuchKey")
    assert cached_names(cache, b) == {"native-put"}
    # DeleteObjects on the proxy fans out to the owners, which write through
    s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "native-put"}]})
    assert [x["Key"] for x in u.list_objects_v2(Bucket=ub).get("Contents", [])] == []
    assert cached_names(cache, b) == set()


def test_headers_write_through_and_cold_get(upstream, cache):
    """The headers S3 stores with an object (Cache-Control ... Expires) go to the upstream on a
    write-through PUT and come back from it on a cold GET, then from the catalog; a
    create-only PUT is checked here before the upstream is written."""
    import datetime
    ub = uname("hdr")
    u = up_client(upstream)
    u.create_bucket(Bucket=ub)
    b = cache.create_cloud_bucket(ub, upstream.url, "hoardup")
    s3 = cache.s3()
    s3.put_object(Bucket=b, Key="w", Body=b"written", CacheControl="no-cache",
                  ContentLanguage="fr", ContentEncoding="gzip")
    for c in (u, s3):  # the upstream got them; the cached copy has them
        h = c.head_object(Bucket=ub if c is u else b, Key="w")
        assert (h["CacheControl"], h["ContentLanguage"], h["ContentEncoding"]) == (
            "no-cache", "fr", "gzip"), h
    exp = datetime.datetime(2031, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    u.put_object(Bucket=ub, Key="cold", Body=b"upstream", ContentDisposition="inline",
                 Expires=exp)
    for _ in range(2):  # cold, then warm once cached
        g = s3.get_object(Bucket=b, Key="cold")
        assert g["Body"].read() == b"upstream"
        assert (g["ContentDisposition"], g["Expires"]) == ("inline", exp), g
        wait_cached(cache, b, {"w", "cold"})
    url = cache.url + "/%s/w" % b
    auth = helpers.SigV4Requests(*cache.keys)
    r = requests.put(url, data=b"again", auth=auth, headers={"If-None-Match": "*"}, timeout=30)
    assert r.status_code == 412, r.content
    assert u.get_object(Bucket=ub, Key="w")["Body"].read() == b"written"


def test_upstream_refuses_403_with_its_message(upstream, cache):
    """A profile with a wrong secret: the upstream (hoard, verifying SigV4) refuses; the
    client gets AccessDenied with the upstream's own message and nothing is cached."""
    ub = uname("deny")
    u = up_client(upstream)
    u.create_bucket(Bucket=ub)
    u.put_object(Bucket=ub, Key="k", Body=b"secret")
    b = cache.create_cloud_bucket(ub, upstream.url, "wrong")
    r = cache.get(b, "k")
    helpers.check_json_error(r, 403, "AccessDenied")
    assert "SignatureDoesNotMatch" in r.json()["message"], r.json()
    assert upstream.url in r.json()["message"]
    r = cache.api("PUT", cache.obj_path(b, "new"), body=b"refused")
    helpers.check_json_error(r, 403, "AccessDenied")
    assert cached_names(cache, b) == set()
    assert [x["Key"] for x in u.list_objects_v2(Bucket=ub).get("Contents", [])] == ["k"]
    for t in cache.targets:
        assert t.tmp_files() == [], t.tmp_files()


def test_write_through_upstream_down_stores_nothing(s3rver, cache):
    src = s3rver_bucket(s3rver, {})
    b = cache.create_cloud_bucket(src, s3rver.url, "s3rver")
    s3rver.stop()
    try:
        r = cache.api("PUT", cache.obj_path(b, "x"), body=b"nowhere to go")
        helpers.check_json_error(r, 503, "ServiceUnavailable")
        r = cache.api("DELETE", cache.obj_path(b, "x"))
        helpers.check_json_error(r, 503, "ServiceUnavailable")
        assert cached_names(cache, b) == set()
    finally:
        s3rver.start()


def test_etag_mismatch_aborts_and_caches_nothing(s3rver, cache):
    """s3rver's stored bytes corrupted behind its back (same length): the body no longer
    matches the ETag the upstream announces, so the client's response is cut off and nothing
    is cached."""
    data = helpers.pattern_bytes(2 * 1024 * 1024, 5)
    src = s3rver_bucket(s3rver, {"victim": data})
    path = os.path.join(s3rver.data, src, "victim._S3rver_object")
    assert os.path.getsize(path) == len(data)
    with open(path, "r+b") as f:
        f.seek(len(data) // 2)
        f.write(b"\xff" * 16)
    b = cache.create_cloud_bucket(src, s3rver.url, "s3rver")
    failed0 = cache.target_metric("hoard_cold_fills_failed_total")
    r = cache.get(b, "victim", stream=True)
    assert r.status_code == 200
    got = b""
    try:  # urllib3 1.26 does not enforce Content-Length: the body just ends early
        for chunk in r.iter_content(65536):
            got += chunk
    except (requests.exceptions.ChunkedEncodingError, requests.exceptions.ConnectionError):
        pass
    assert int(r.headers["Content-Length"]) == len(data) and len(got) < len(data)
    assert cache.target_metric("hoard_cold_fills_failed_total") - failed0 == 1
    assert cached_names(cache, b) == set()
    helpers.wait_until(lambda: all(t.tmp_files() == [] for t in cache.targets),
                       what="no temp files left")


# ---- listing ----

def test_listing_upstream_with_cached_flag(s3rver, cache):
    keys = ["a/%02d" % i for i in range(12)] + ["b/x", "b/y", "top%d" % 1, "top2"]
    src = s3rver_bucket(s3rver, {k: k.encode() for k in keys})
    b = cache.create_cloud_bucket(src, s3rver.url, "s3rver")
    for k in ("a/03", "b/y", "top2"):
        assert cache.get(b, k).status_code == 200
    wait_cached(cache, b, ["a/03", "b/y", "top2"])
    j = cache.listing(b)
    assert [e["name"] for e in j["entries"]] == sorted(keys)
    assert {e["name"] for e in j["entries"] if e["cached"]} == {"a/03", "b/y", "top2"}
    assert all(e["size"] == len(e["name"]) for e in j["entries"])
    assert cached_names(cache, b) == {"a/03", "b/y", "top2"}
    # pages with tokens (native)
    seen, token = [], None
    while True:
        params = {"limit": 5}
        if token:
            params["token"] = token
        j = cache.listing(b, **params)
        seen += [e["name"] for e in j["entries"]]
        token = j.get("continuation_token")
        if not token:
            break
    assert seen == sorted(keys)
    # S3 API: V2 pages with a delimiter (common prefixes resume after their contents)
    s3 = cache.s3()
    got = []
    for page in s3.get_paginator("list_objects_v2").paginate(
            Bucket=b, Delimiter="/", PaginationConfig={"PageSize": 1}):
        got += [p["Prefix"] for p in page.get("CommonPrefixes", [])]
        got += [o["Key"] for o in page.get("Contents", [])]
    assert got == ["a/", "b/", "top1", "top2"]
    got = [o["Key"] for p in s3.get_paginator("list_objects_v2").paginate(
        Bucket=b, Prefix="a/", PaginationConfig={"PageSize": 4}) for o in p.get("Contents", [])]
    assert got == ["a/%02d" % i for i in range(12)]


# ---- jobs ----

def test_prefetch_template_and_prefix_then_upstream_stopped(s3rver, cache):
    shards = {"shard-%03d.tar" % i: helpers.pattern_bytes(20000 + i, i) for i in range(30)}
    others = {"imgs/%d.jpg" % i: b"jpg%d" % i for i in range(7)}
    src = s3rver_bucket(s3rver, dict(shards, **others, **{"not-me": b"left alone"}))
    b = cache.create_cloud_bucket(src, s3rver.url, "s3rver")
    jid = cache.start_job("prefetch", b, {"template": "shard-{000..029}.tar"})
    j = cache.wait_job(jid)
    assert j["state"] == "done" and j["error_count"] == 0, j
    assert j["objects"] == 30 and j["total_objects"] == 30, j
    assert j["bytes"] == sum(len(v) for v in shards.values())
    assert j["nodes"] == 2 and j["stats"]["fetched"] == 30
    jid = cache.start_job("prefetch", b, {"prefix": "imgs/"})
    j = cache.wait_job(jid)
    assert j["state"] == "done" and j["objects"] == 7, j
    assert cached_names(cache, b) == set(shards) | set(others)
    # again: everything is cached already, nothing is fetched
    j = cache.wait_job(cache.start_job("prefetch", b, {"template": "shard-{000..029}.tar"}))
    assert j["stats"]["already_cached"] == 30 and j["bytes"] == 0, j
    # names that do not exist upstream: errors are kept by the job
    j = cache.wait_job(cache.start_job("prefetch", b, {"names": ["nope-1", "nope-2"]}))
    assert j["error_count"] == 2 and len(j["errors"]) == 2, j
    assert all("nope-" in e for e in j["errors"])
    s3rver.stop()
    try:
        for k, v in dict(shards, **others).items():
            r = cache.get(b, k)
            assert r.status_code == 200 and r.content == v, k
        assert cache.get(b, "not-me").status_code == 503
    finally:
        s3rver.start()


def test_prefetch_revalidate_and_stop(s3rver, cache):
    src = s3rver_bucket(s3rver, {"o%d" % i: b"old %d" % i for i in range(10)})
    b = cache.create_cloud_bucket(src, s3rver.url, "s3rver")
    j = cache.wait_job(cache.start_job("prefetch", b, {"template": "o{0..9}"}))
    assert j["objects"] == 10
    s3rver.client().put_object(Bucket=src, Key="o3", Body=b"new 3")
    j = cache.wait_job(cache.start_job("prefetch", b, {"template": "o{0..9}",
                                                        "revalidate": True}))
    assert j["stats"]["fetched"] == 1 and j["stats"]["already_cached"] == 9, j
    assert cache.get(b, "o3").content == b"new 3"
    # a job stops when asked, from any proxy, and says so
    jid = cache.start_job("prefetch", b, {"template": "none-{0..99999}"})
    r = cache.api("DELETE", "/v1/jobs/" + jid)
    assert r.status_code == 200
    j = cache.wait_job(jid)
    assert j["state"] == "aborted", j


def test_evict_by_list_template_prefix_and_bucket(s3rver, cache):
    objs = {"e/%d" % i: b"e%d" % i for i in range(6)}
    objs.update({"t-%d" % i: b"t%d" % i for i in range(4)})
    objs.update({"x": b"x", "y": b"y"})
    src = s3rver_bucket(s3rver, objs)
    b = cache.create_cloud_bucket(src, s3rver.url, "s3rver")
    j = cache.wait_job(cache.start_job("prefetch", b, {"names": sorted(objs)}))
    assert j["objects"] == len(objs) and cached_names(cache, b) == set(objs)
    j = cache.wait_job(cache.start_job("evict", b, {"names": ["x", "missing"]}))
    assert j["state"] == "done" and j["objects"] == 1, j
    assert cached_names(cache, b) == set(objs) - {"x"}
    j = cache.wait_job(cache.start_job("evict", b, {"template": "t-{0..3}"}))
    assert j["objects"] == 4 and j["bytes"] == 8, j
    j = cache.wait_job(cache.start_job("evict", b, {"prefix": "e/"}))
    assert j["objects"] == 6, j
    assert cached_names(cache, b) == {"y"}
    j = cache.wait_job(cache.start_job("evict", b))
    assert j["objects"] == 1 and cached_names(cache, b) == set()
    # the bucket stays, the upstream keeps everything, reads fill again
    assert cache.api("HEAD", "/v1/buckets/" + b).status_code == 200
    assert len(s3rver.client().list_objects_v2(Bucket=src)["Contents"]) == len(objs)
    miss0 = cache.target_metric("hoard_cache_misses_total")
    assert cache.get(b, "e/3").content == b"e3"
    assert cache.target_metric("hoard_cache_misses_total") - miss0 == 1
    assert cache.target_metric("hoard_evictions_total") >= len(objs)


def test_props_validation(s3rver, cache):
    r = cache.api("POST", "/v1/buckets/%s?provider=aws" % uname("bad"), body={})
    helpers.check_json_error(r, 400, "InvalidArgument")
    assert "upstream" in r.json()["message"]
    r = cache.api("POST", "/v1/buckets/%s?provider=aws" % uname("bad"),
                  body={"upstream": {"endpoint": "ftp://x"}})
    helpers.check_json_error(r, 400, "InvalidArgument")
    r = cache.api("POST", "/v1/buckets/%s" % uname("bad"),
                  body={"upstream": {"endpoint": s3rver.url}})
    helpers.check_json_error(r, 400, "InvalidArgument")  # a native bucket has no upstream
    b = cache.create_cloud_bucket(uname("ok"), s3rver.url, "s3rver")
    r = cache.api("PATCH", "/v1/buckets/" + b, body={"validate_warm_get": "yes"})
    helpers.check_json_error(r, 400, "InvalidArgument")
    r = cache.api("PATCH", "/v1/buckets/" + b, body={"upstream": None})
    helpers.check_json_error(r, 400, "InvalidArgument")
    # lifecycle rules are the upstream bucket's business: refused with the reason, by S3 too
    rule = {"ID": "r", "Prefix": "", "Status": "Enabled", "Expiration": {"Days": 1}}
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        cache.s3().put_bucket_lifecycle_configuration(
            Bucket=b, LifecycleConfiguration={"Rules": [rule]})
    e = ei.value.response
    assert (e["ResponseMetadata"]["HTTPStatusCode"], e["Error"]["Code"]) == (
        400, "InvalidArgument") and "upstream bucket's rules" in e["Error"]["Message"], e
    assert "lifecycle" not in cache.api("GET", "/v1/buckets/%s?props" % b).json()["props"]
    j = cache.api("GET", "/v1/buckets").json()
    assert {"name": b, "provider": "aws"}.items() <= \
        [x for x in j["buckets"] if x["name"] == b][0].items()
    # credentials never appear in the BMD or in props
    text = cache.api("GET", "/v1/cluster/bmd").text + \
        cache.api("GET", "/v1/buckets/%s?props" % b).text
    assert "S3RVER:" not in text and UP_KEYS[1] not in text


# ---- CLI ----

def hoard(cache, *args, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    e.update({"HOARD_ENDPOINT": cache.url, "AWS_ACCESS_KEY_ID": C_KEYS[0],
              "AWS_SECRET_ACCESS_KEY": C_KEYS[1]})
    e.update(env or {})
    exe = os.path.join(cache.proxy.bin_dir, "hoard")
    return subprocess.run([exe] + list(args), capture_output=True, text=True, env=e, timeout=120)


def test_cli_bucket_prefetch_evict_jobs(s3rver, cache):
    objs = {"shard-%03d.tar" % i: helpers.pattern_bytes(30000, i) for i in range(12)}
    src = s3rver_bucket(s3rver, objs)
    p = hoard(cache, "bucket", "create", "s3://" + src, "--upstream", s3rver.url,
              "--profile", "s3rver")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "created s3://%s -> %s" % (src, s3rver.url)
    p = hoard(cache, "bucket", "props", src)
    assert p.returncode == 0 and "upstream.endpoint      %s" % s3rver.url in p.stdout, p.stdout
    p = hoard(cache, "bucket", "props", src, "validate_warm_get=true")
    assert p.returncode == 0 and "validate_warm_get      true" in p.stdout, p.stdout
    p = hoard(cache, "--json", "bucket", "props", src)
    assert json.loads(p.stdout)["props"]["validate_warm_get"] is True
    p = hoard(cache, "prefetch", src, "--template", "shard-{000..011}.tar", "--wait",
              env={"HOARD_PROGRESS": "1"})
    assert p.returncode == 0, (p.stdout, p.stderr)
    # a progress line (hoard job wait); its total grows as the targets report their shares
    assert re.search(r"\d+ / \d+ objects", p.stderr), p.stderr
    assert re.match(r"prefetch-\S+ done in .*: 12 objects, .* 0 errors", p.stdout), p.stdout
    assert cached_names(cache, src) == set(objs)
    p = hoard(cache, "job", "ls")
    assert p.returncode == 0 and "prefetch" in p.stdout, p.stdout
    p = hoard(cache, "evict", src, "--list", "shard-000.tar,shard-001.tar", "--wait")
    assert p.returncode == 0 and ": 2 objects" in p.stdout, p.stdout
    p = hoard(cache, "prefetch", src, "--list", "shard-000.tar,missing")
    assert p.returncode == 0, p.stderr
    jid = re.search(r"job (\S+) started", p.stdout).group(1)
    p = hoard(cache, "job", "wait", jid)
    assert p.returncode == 1, p.stdout  # finished with an error: said so, exit 1
    assert "1 errors" in p.stdout and "missing" in p.stderr, (p.stdout, p.stderr)
    p = hoard(cache, "job", "show", jid)
    assert p.returncode == 0 and jid in p.stdout
    p = hoard(cache, "evict", src, "--wait")
    assert p.returncode == 0 and cached_names(cache, src) == set()
    p = hoard(cache, "prefetch", src)
    assert p.returncode == 2 and "needs --list, --template or --prefix" in p.stderr
    p = hoard(cache, "bucket", "create", "s3://" + uname("x"), "--profile", "p")
    assert p.returncode == 2 and "--upstream URL is needed" in p.stderr
    # the spelling: --endpoint after an s3:// bucket names its upstream, while a
    # global --endpoint before the command still names the hoard node
    objs2 = {"e-%d" % i: helpers.pattern_bytes(1000, i) for i in range(3)}
    src2 = s3rver_bucket(s3rver, objs2)
    p = hoard(cache, "--endpoint", cache.url, "bucket", "create", "s3://" + src2,
              "--endpoint", s3rver.url, "--profile", "s3rver")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "created s3://%s -> %s" % (src2, s3rver.url)
    p = hoard(cache, "bucket", "props", src2)
    assert "upstream.endpoint      %s" % s3rver.url in p.stdout, p.stdout


def test_write_through_multipart(upstream, cache):
    """A multipart upload to an S3-backed bucket by boto3's transfer manager: the parts go to
    the upstream's twin upload as they arrive, Complete completes it, and the object is
    committed with the upstream's ETag."""
    from boto3.s3.transfer import TransferConfig
    import io
    ub = uname("mpu")
    u = up_client(upstream)
    u.create_bucket(Bucket=ub)
    b = cache.create_cloud_bucket(ub, upstream.url, "hoardup")
    body = helpers.pattern_bytes(12 * 1024 * 1024 + 5, 11)
    cfg = TransferConfig(multipart_threshold=5 * 1024 * 1024, multipart_chunksize=5 * 1024 * 1024,
                         max_concurrency=2)
    cache.s3().upload_fileobj(io.BytesIO(body), b, "parts.bin", Config=cfg,
                              ExtraArgs={"Metadata": {"m": "1"}})
    o = u.get_object(Bucket=ub, Key="parts.bin")
    assert o["Body"].read() == body and o["Metadata"] == {"m": "1"}
    assert o["ETag"].strip('"').endswith("-3")  # completed from 3 parts, not one PUT
    h = cache.s3().head_object(Bucket=b, Key="parts.bin")
    assert h["ETag"] == o["ETag"] and h["ContentLength"] == len(body)
    wait_cached(cache, b, {"parts.bin"})  # assembled from the parts after the answer
    assert u.list_multipart_uploads(Bucket=ub).get("Uploads", []) == []


def up_uploads(u, bucket):
    return [(x["Key"], x["UploadId"]) for x in u.list_multipart_uploads(Bucket=bucket)
            .get("Uploads", [])]


def wt_bucket(upstream, cache, prefix):
    """A new bucket at the hoard upstream, its client and the S3-backed bucket in front of it."""
    ub = uname(prefix)
    u = up_client(upstream)
    u.create_bucket(Bucket=ub)
    return ub, u, cache.create_cloud_bucket(ub, upstream.url, "hoardup")


def test_write_through_parts_reach_the_upstream_before_complete(upstream, cache):
    """Each part is at the upstream once UploadPart answers (the twin upload exists from
    CreateMultipartUpload on), so Complete only completes; parts 1 and 3 of 3 make the object."""
    ub, u, b = wt_bucket(upstream, cache, "twin")
    s3 = cache.s3()
    up = s3.create_multipart_upload(Bucket=b, Key="ck/model.pt", ContentType="application/x-pt",
                                    Metadata={"step": "7"})
    twins = up_uploads(u, ub)
    assert [k for k, _ in twins] == ["ck/model.pt"]
    assert twins[0][1] != up["UploadId"]  # the upstream's own id, not ours
    p1 = helpers.pattern_bytes(5 * 1024 * 1024, 21)
    p2 = helpers.pattern_bytes(5 * 1024 * 1024, 22)
    p3 = helpers.pattern_bytes(1234, 23)
    etags = {}
    for n, data in ((1, p1), (2, p2), (3, p3)):
        r = s3.upload_part(Bucket=b, Key="ck/model.pt", UploadId=up["UploadId"], PartNumber=n,
                           Body=data)
        etags[n] = r["ETag"]
        assert r["ETag"] == '"%s"' % md5(data)
    got = u.list_parts(Bucket=ub, Key="ck/model.pt", UploadId=twins[0][1])["Parts"]
    assert [(x["PartNumber"], x["Size"], x["ETag"]) for x in got] == \
        [(1, len(p1), etags[1]), (2, len(p2), etags[2]), (3, len(p3), etags[3])]
    with pytest.raises(Exception):  # not there yet
        u.head_object(Bucket=ub, Key="ck/model.pt")
    r = s3.complete_multipart_upload(
        Bucket=b, Key="ck/model.pt", UploadId=up["UploadId"],
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etags[1]},
                                   {"PartNumber": 3, "ETag": etags[3]}]})
    o = u.get_object(Bucket=ub, Key="ck/model.pt")
    assert o["Body"].read() == p1 + p3
    assert o["ContentType"] == "application/x-pt" and o["Metadata"] == {"step": "7"}
    assert r["ETag"] == o["ETag"]
    assert s3.get_object(Bucket=b, Key="ck/model.pt")["Body"].read() == p1 + p3
    assert up_uploads(u, ub) == []


def test_write_through_abort_and_copied_part(upstream, cache):
    """Abort removes the twin upload too. A part made by UploadPartCopy (not forwarded as it
    is made) reaches the upstream at Complete."""
    ub, u, b = wt_bucket(upstream, cache, "twab")
    s3 = cache.s3()
    up = s3.create_multipart_upload(Bucket=b, Key="gone")
    s3.upload_part(Bucket=b, Key="gone", UploadId=up["UploadId"], PartNumber=1, Body=b"x" * 100)
    assert len(up_uploads(u, ub)) == 1
    s3.abort_multipart_upload(Bucket=b, Key="gone", UploadId=up["UploadId"])
    assert up_uploads(u, ub) == []
    with pytest.raises(Exception) as e:
        s3.list_parts(Bucket=b, Key="gone", UploadId=up["UploadId"])
    assert e.value.response["Error"]["Code"] == "NoSuchUpload"

    src = helpers.pattern_bytes(6 * 1024 * 1024, 31)
    s3.put_object(Bucket=b, Key="src", Body=src)
    up = s3.create_multipart_upload(Bucket=b, Key="copied")
    r1 = s3.upload_part_copy(Bucket=b, Key="copied", UploadId=up["UploadId"], PartNumber=1,
                             CopySource={"Bucket": b, "Key": "src"},
                             CopySourceRange="bytes=0-%d" % (5 * 1024 * 1024 - 1))
    r2 = s3.upload_part(Bucket=b, Key="copied", UploadId=up["UploadId"], PartNumber=2,
                        Body=b"tail")
    s3.complete_multipart_upload(
        Bucket=b, Key="copied", UploadId=up["UploadId"],
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": r1["CopyPartResult"]["ETag"]},
                                   {"PartNumber": 2, "ETag": r2["ETag"]}]})
    assert u.get_object(Bucket=ub, Key="copied")["Body"].read() == src[:5 * 1024 * 1024] + b"tail"
    assert up_uploads(u, ub) == []


def test_write_through_upload_survives_kill9(upstream, cache):
    """The twin's id is in the owner's catalog: after kill -9 of every target and a restart,
    the upload goes on and completes at the upstream."""
    ub, u, b = wt_bucket(upstream, cache, "twk9")
    s3 = cache.s3()
    up = s3.create_multipart_upload(Bucket=b, Key="k9")
    p1 = helpers.pattern_bytes(5 * 1024 * 1024, 51)
    e1 = s3.upload_part(Bucket=b, Key="k9", UploadId=up["UploadId"], PartNumber=1, Body=p1)
    for t in cache.targets:
        t.kill9()
    for t in cache.targets:
        t.start()
    helpers.wait_until(lambda: len(cache.smap()["tmap"]) == 2, timeout=30, what="targets back")
    e2 = s3.upload_part(Bucket=b, Key="k9", UploadId=up["UploadId"], PartNumber=2, Body=b"end")
    s3.complete_multipart_upload(
        Bucket=b, Key="k9", UploadId=up["UploadId"],
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1["ETag"]},
                                   {"PartNumber": 2, "ETag": e2["ETag"]}]})
    assert u.get_object(Bucket=ub, Key="k9")["Body"].read() == p1 + b"end"
    assert up_uploads(u, ub) == []


def test_write_through_complete_after_the_twin_completed(upstream, cache):
    """A Complete whose twin the upstream already completed (an earlier try that timed out at
    the client, or a target that died between the upstream's commit and its own): an
    upstream that answers a repeated Complete with its first answer (hoard does, as S3 does
    for a while) is believed only when its ETag is the one these parts make; otherwise the
    Complete is refused and nothing is cached."""
    ub, u, b = wt_bucket(upstream, cache, "twre")
    s3 = cache.s3()
    parts = [helpers.pattern_bytes(5 * 1024 * 1024, 61), b"tail"]
    for key, upto in (("same", 2), ("other", 1)):
        up = s3.create_multipart_upload(Bucket=b, Key=key)
        etags = [s3.upload_part(Bucket=b, Key=key, UploadId=up["UploadId"], PartNumber=i + 1,
                                Body=p)["ETag"] for i, p in enumerate(parts)]
        twin = [i for k, i in up_uploads(u, ub) if k == key][0]
        listed = [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]
        u.complete_multipart_upload(Bucket=ub, Key=key, UploadId=twin,
                                    MultipartUpload={"Parts": listed[:upto]})
        if upto == 2:
            r = s3.complete_multipart_upload(Bucket=b, Key=key, UploadId=up["UploadId"],
                                             MultipartUpload={"Parts": listed})
            assert r["ETag"] == u.head_object(Bucket=ub, Key=key)["ETag"]
            assert s3.get_object(Bucket=b, Key=key)["Body"].read() == b"".join(parts)
            helpers.wait_until(lambda: key in cached_names(cache, b), timeout=30,
                               what="the late copy or the GET's fill committed")
        else:  # the upstream holds something else: not ours to claim
            with pytest.raises(Exception) as e:
                s3.complete_multipart_upload(Bucket=b, Key=key, UploadId=up["UploadId"],
                                             MultipartUpload={"Parts": listed})
            assert e.value.response["Error"]["Code"] == "InvalidPart", e.value.response
            assert key not in cached_names(cache, b)


def part_files(cache, upload_id):
    """The part files of one of our uploads left on any target's mountpaths."""
    out = []
    for t in cache.targets:
        for mp in t.mountpaths:
            d = os.path.join(mp, "mpu", upload_id)
            if os.path.isdir(d):
                out.extend(os.listdir(d))
    return out


def test_write_through_complete_finishes_after_the_client_left(upstream, cache):
    """A client gives up on a write-through Complete while the upstream is slow (its target
    stopped) and never retries. The upstream completes the twin when it wakes; from then on
    the older cached copy must not be served: the Complete's local half (the old copy
    dropped, the upload marked done) runs although nobody is there to answer."""
    ub, u, b = wt_bucket(upstream, cache, "twleft")
    s3 = cache.s3()
    key = "left"
    s3.put_object(Bucket=b, Key=key, Body=b"the older object")
    wait_cached(cache, b, {key})
    parts = [helpers.pattern_bytes(5 * 1024 * 1024, 81), b"tail"]
    body = b"".join(parts)
    up = s3.create_multipart_upload(Bucket=b, Key=key)
    listed = [{"PartNumber": i + 1,
               "ETag": s3.upload_part(Bucket=b, Key=key, UploadId=up["UploadId"],
                                      PartNumber=i + 1, Body=p)["ETag"]}
              for i, p in enumerate(parts)]
    impatient = boto3.session.Session().client(
        "s3", endpoint_url=cache.url, region_name="us-east-1",
        aws_access_key_id=cache.keys[0], aws_secret_access_key=cache.keys[1],
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                      read_timeout=2, retries={"total_max_attempts": 1, "mode": "standard"}))
    for t in upstream.targets:
        t.proc.send_signal(signal.SIGSTOP)
    try:
        with pytest.raises(ReadTimeoutError):
            impatient.complete_multipart_upload(Bucket=b, Key=key, UploadId=up["UploadId"],
                                                MultipartUpload={"Parts": listed})
    finally:
        for t in upstream.targets:
            t.proc.send_signal(signal.SIGCONT)
    def upstream_has_it():
        try:
            return u.head_object(Bucket=ub, Key=key)["ContentLength"] == len(body)
        except botocore.exceptions.ClientError:
            return False  # waking up

    helpers.wait_until(upstream_has_it, timeout=60, what="the upstream completing the twin")
    helpers.wait_until(lambda: s3.get_object(Bucket=b, Key=key)["Body"].read() == body,
                       timeout=30, what="GETs through the cache to serve the completed object")


def test_write_through_complete_answers_before_the_cached_copy(upstream, cache):
    """Complete is answered once the upstream has completed the twin; the owner assembles its
    cached copy from the parts afterwards and then drops them. A GET in between reads the
    upstream's bytes. A DELETE or a newer PUT right after the answer is never undone by that
    late copy (the store's fence: unit suite store_fence)."""
    ub, u, b = wt_bucket(upstream, cache, "twlate")
    s3 = cache.s3()
    parts = [helpers.pattern_bytes(5 * 1024 * 1024, 71 + i) for i in range(3)] + [b"tail"]
    body = b"".join(parts)

    def upload(key):
        up = s3.create_multipart_upload(Bucket=b, Key=key)
        etags = [s3.upload_part(Bucket=b, Key=key, UploadId=up["UploadId"], PartNumber=i + 1,
                                Body=p)["ETag"] for i, p in enumerate(parts)]
        r = s3.complete_multipart_upload(
            Bucket=b, Key=key, UploadId=up["UploadId"],
            MultipartUpload={"Parts": [{"PartNumber": i + 1, "ETag": e}
                                       for i, e in enumerate(etags)]})
        return up["UploadId"], r["ETag"]

    def parts_gone(ids):
        helpers.wait_until(lambda: all(not part_files(cache, i) for i in ids), timeout=60,
                           what="the late copies' parts removed")

    uid, etag = upload("late")
    assert etag == u.head_object(Bucket=ub, Key="late")["ETag"]
    assert s3.get_object(Bucket=b, Key="late")["Body"].read() == body
    parts_gone([uid])
    assert "late" in cached_names(cache, b)
    h = s3.head_object(Bucket=b, Key="late")
    assert h["ETag"] == etag and h["ContentLength"] == len(body)
    # a retried Complete gets the first answer
    r = s3.complete_multipart_upload(
        Bucket=b, Key="late", UploadId=uid,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"%s"' % md5(parts[0])}]})
    assert r["ETag"] == etag

    ids = []
    for i in range(3):  # deleted right after each answer: never brought back
        uid, _ = upload("del-%d" % i)
        ids.append(uid)
        s3.delete_object(Bucket=b, Key="del-%d" % i)
    uid, _ = upload("newer")  # overwritten right after the answer: the newer write stays
    ids.append(uid)
    s3.put_object(Bucket=b, Key="newer", Body=b"the newer write")
    parts_gone(ids)
    assert cached_names(cache, b, prefix="del-") == set()
    for i in range(3):
        with pytest.raises(Exception) as e:
            s3.get_object(Bucket=b, Key="del-%d" % i)
        assert e.value.response["Error"]["Code"] == "NoSuchKey"
    assert cached_sizes(cache, b)["newer"] == len(b"the newer write")
    assert s3.get_object(Bucket=b, Key="newer")["Body"].read() == b"the newer write"
    assert u.get_object(Bucket=ub, Key="newer")["Body"].read() == b"the newer write"


def test_write_through_part_with_upstream_down(s3rver, cache):
    """A part the upstream cannot take is refused and not recorded; sent again once the
    upstream is back, the upload completes. s3rver has no AbortMultipartUpload: an abort there
    still ends the local upload."""
    src = s3rver_bucket(s3rver, {})
    b = cache.create_cloud_bucket(src, s3rver.url, "s3rver")
    s3 = cache.s3()
    up = s3.create_multipart_upload(Bucket=b, Key="k")
    body = helpers.pattern_bytes(300 * 1024, 41)
    s3rver.stop()
    try:
        with pytest.raises(Exception) as e:
            s3.upload_part(Bucket=b, Key="k", UploadId=up["UploadId"], PartNumber=1, Body=body)
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
    finally:
        s3rver.start()
    assert s3.list_parts(Bucket=b, Key="k", UploadId=up["UploadId"]).get("Parts", []) == []
    r = s3.upload_part(Bucket=b, Key="k", UploadId=up["UploadId"], PartNumber=1, Body=body)
    s3.complete_multipart_upload(Bucket=b, Key="k", UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1,
                                                             "ETag": r["ETag"]}]})
    assert s3rver.client().get_object(Bucket=src, Key="k")["Body"].read() == body
    up = s3.create_multipart_upload(Bucket=b, Key="k2")
    s3.upload_part(Bucket=b, Key="k2", UploadId=up["UploadId"], PartNumber=1, Body=b"abc")
    s3.abort_multipart_upload(Bucket=b, Key="k2", UploadId=up["UploadId"])
    with pytest.raises(Exception) as e:
        s3.list_parts(Bucket=b, Key="k2", UploadId=up["UploadId"])
    assert e.value.response["Error"]["Code"] == "NoSuchUpload"
    for t in cache.targets:
        assert t.tmp_files() == [], t.tmp_files()


def test_tar_member_of_uncached_shard(s3rver, cache):
    """?archpath= on a shard of an S3-backed bucket: the shard is fetched whole first (the
    member table needs it), then the member is served from the cached copy."""
    import io
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for name, data in (("s1.jpg", b"jpeg bytes"), ("s1.cls", b"7")):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    src = s3rver_bucket(s3rver, {"shard-0.tar": buf.getvalue()})
    b = cache.create_cloud_bucket(src, s3rver.url, "s3rver")
    r = cache.api("GET", cache.obj_path(b, "shard-0.tar") + "?archpath=s1.cls")
    assert r.status_code == 200 and r.content == b"7", r.text
    assert cached_names(cache, b) == {"shard-0.tar"}
    r = cache.api("GET", cache.obj_path(b, "shard-0.tar") + "?archpath=s1.jpg")
    assert r.status_code == 200 and r.content == b"jpeg bytes", r.text


def test_member_of_uncached_compressed_shard(s3rver, cache):
    """The same for a .tgz and a .zip shard (read in order, no member table): the cold read
    fetches the shard and answers the member; the warm ones come from the cached copy."""
    import gzip
    import io
    import tarfile
    import zipfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in (("s1.jpg", b"jpeg bytes"), ("s1.cls", b"7")):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("s1.jpg", b"jpeg bytes")
        z.writestr("s1.cls", b"7")
    src = s3rver_bucket(s3rver, {"shard-0.tgz": gzip.compress(buf.getvalue()),
                                 "shard-1.zip": zbuf.getvalue()})
    b = cache.create_cloud_bucket(src, s3rver.url, "s3rver")
    for shard in ("shard-0.tgz", "shard-1.zip"):
        r = cache.api("GET", cache.obj_path(b, shard) + "?archpath=s1.cls")
        assert r.status_code == 200 and r.content == b"7", (shard, r.text)
        r = cache.api("GET", cache.obj_path(b, shard) + "?archpath=s1.jpg")
        assert r.status_code == 200 and r.content == b"jpeg bytes", (shard, r.text)
    assert cached_names(cache, b) == {"shard-0.tgz", "shard-1.zip"}


def test_batch_get_of_uncached_objects(s3rver, cache):
    """Batch GET of an S3-backed bucket whose objects are not cached yet (issue 14): the
    proxy sends the batch by a 307 to the target owning most entries; that target fetches the
    ones it owns through its own cold GET and the others from their owners, so every entry
    comes back whole, in order, and ends up cached."""
    import io
    import tarfile
    objs = {"b/%02d" % i: helpers.pattern_bytes(3000 + 517 * i, 70 + i) for i in range(12)}
    src = s3rver_bucket(s3rver, objs)
    b = cache.create_cloud_bucket(src, s3rver.url, "s3rver")
    names = sorted(objs)[::-1]
    r = cache.api("POST", "/v1/batch", body={"bucket": b, "entries": [{"name": n}
                                                                     for n in names]})
    assert r.status_code == 200, r.text
    assert [h.status_code for h in r.history] == [307]
    with tarfile.open(fileobj=io.BytesIO(r.content), mode="r:") as tf:
        got = [(m.name, tf.extractfile(m).read()) for m in tf.getmembers()]
    assert got == [(n, objs[n]) for n in names]
    wait_cached(cache, b, objs)
