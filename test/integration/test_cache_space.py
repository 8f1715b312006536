"""Caching tier: space management and registration on first access (issue 5, items 1 and 8).

A one-target cluster whose single mountpath has a configured capacity of 8 MiB (watermarks
low 50%, high 80%, out-of-space 95%): the LRU job evicts least-recently-used cached objects
down to the low mark and never touches native objects; a second cluster with 4 MiB and an
out-of-space mark of 90% refuses writes with 507 and keeps nothing partial. The first
cluster's proxy has a default upstream (s3rver), so unknown buckets found there are registered
as S3-backed on first access.
"""
import http.client
import os
import socket
import threading
import time
import uuid

import pytest

import helpers
from cachefix import C_KEYS, HoardCluster, profiles, s3rver  # noqa: F401
from conftest import _TARGETS

KIB = 1024
MIB = 1024 * KIB
OBJ = 256 * KIB


def uname(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:10])


def space_args(capacity, low, high, oos):
    return ["--space.capacity", str(capacity), "--space.low", str(low), "--space.high",
            str(high), "--space.oos", str(oos), "--space.check_ms", "100",
            "--cache.atime_flush_ms", "100", "--upstream.retries", "0"]


@pytest.fixture(scope="module")
def small(tmp_path_factory, log_dir, profiles, s3rver):  # noqa: F811
    c = HoardCluster("small", str(tmp_path_factory.mktemp("small")), log_dir, _TARGETS, C_KEYS,
                     ntargets=1, mountpaths=1,
                     proxy_extra=["--upstream.endpoint", s3rver.url, "--upstream.profile",
                                  "s3rver"],
                     target_extra=space_args(8 * MIB, 50, 80, 95))
    c.start()
    yield c
    problems = c.stop()
    assert not problems, problems


@pytest.fixture
def tiny(tmp_path_factory, log_dir, profiles):  # noqa: F811
    c = HoardCluster("tiny", str(tmp_path_factory.mktemp("tiny")), log_dir, _TARGETS, C_KEYS,
                     ntargets=1, mountpaths=1, target_extra=space_args(4 * MIB, 90, 95, 90))
    c.start()
    yield c
    problems = c.stop()
    assert not problems, problems


@pytest.fixture
def tiny2(tmp_path_factory, log_dir, profiles):  # noqa: F811
    c = HoardCluster("tiny2", str(tmp_path_factory.mktemp("tiny2")), log_dir, _TARGETS, C_KEYS,
                     ntargets=1, mountpaths=1)
    c.start()
    yield c
    problems = c.stop()
    assert not problems, problems


def cached(c, bucket):
    j = c.listing(bucket, cached="true", limit=10000)
    return {e["name"] for e in j["entries"]}


def used(c):
    t = c.targets[0]
    return t.metric("hoard_mountpath_used_bytes", mountpath="0")  # the index: no paths shown


def test_lru_evicts_least_recently_used_down_to_low(s3rver, small):  # noqa: F811
    src = uname("lru")
    up = s3rver.client()
    up.create_bucket(Bucket=src)
    names = ["c%02d" % i for i in range(25)]
    for i, k in enumerate(names):
        up.put_object(Bucket=src, Key=k, Body=helpers.pattern_bytes(OBJ, i))
    b = small.create_cloud_bucket(src, s3rver.url, "s3rver")
    nb = uname("native")
    assert small.api("POST", "/v1/buckets/" + nb).status_code == 201
    small.s3().put_object(Bucket=nb, Key="n0", Body=helpers.pattern_bytes(OBJ, 99))
    for k in names[:19]:  # 20 objects of 256 KiB: 5 MiB, 62.5% of 8 MiB
        assert small.get(b, k).status_code == 200
    helpers.wait_until(lambda: used(small) == 20 * OBJ, timeout=20,
                       what="20 objects committed")  # fills commit right after the client
    time.sleep(0.3)
    for k in names[:9]:  # used again: more recent than c09..c18
        assert small.get(b, k).status_code == 200
    time.sleep(0.3)  # past an atime flush
    ev0 = small.target_metric("hoard_evictions_total")
    for k in names[19:]:  # 26 objects: 6.5 MiB, above the high mark (6.4 MiB)
        assert small.get(b, k).status_code == 200
    # the LRU job brings it down to the low mark (4 MiB = 16 objects), oldest first
    keep = set(names[:9]) | set(names[19:])
    helpers.wait_until(lambda: cached(small, b) == keep, timeout=30,
                       what="LRU eviction of c09..c18")
    assert small.target_metric("hoard_evictions_total") - ev0 == 10
    assert used(small) <= 4 * MIB
    jobs = small.api("GET", "/v1/jobs").json()["jobs"]
    lru = [j for j in jobs if j["kind"] == "lru"]
    assert lru and lru[0]["state"] == "done" and lru[0]["objects"] == 10, lru
    # native objects are never evicted
    r = small.get(nb, "n0")
    assert r.status_code == 200 and r.content == helpers.pattern_bytes(OBJ, 99)
    # the evicted ones are still readable: fetched again
    assert small.get(b, "c10").content == helpers.pattern_bytes(OBJ, 10)


def test_registered_on_first_access(s3rver, small):  # noqa: F811
    name = uname("auto")
    up = s3rver.client()
    up.create_bucket(Bucket=name)
    up.put_object(Bucket=name, Key="hello.txt", Body=b"found upstream")
    assert name not in [x["name"] for x in small.api("GET", "/v1/buckets").json()["buckets"]]
    r = small.get(name, "hello.txt")
    assert r.status_code == 200 and r.content == b"found upstream"
    info = [x for x in small.api("GET", "/v1/buckets").json()["buckets"] if x["name"] == name]
    assert info and info[0]["provider"] == "aws", info
    props = small.api("GET", "/v1/buckets/%s?props" % name).json()["props"]
    assert props["upstream"]["endpoint"] == s3rver.url
    assert props["upstream"]["profile"] == "s3rver"
    # S3 clients too: a listing of a bucket only the upstream knows
    other = uname("auto")
    up.create_bucket(Bucket=other)
    up.put_object(Bucket=other, Key="k", Body=b"v")
    keys = [o["Key"] for o in small.s3().list_objects_v2(Bucket=other).get("Contents", [])]
    assert keys == ["k"]
    # a bucket the upstream does not have stays unknown
    r = small.get(uname("nowhere"), "x")
    assert r.status_code == 404 and r.json()["code"] == "NoSuchBucket", r.text


def test_out_of_space_refuses_writes_and_keeps_nothing(tiny):
    nb = uname("full")
    assert tiny.api("POST", "/v1/buckets/" + nb).status_code == 201
    s3 = tiny.s3()  # S3 PUTs through the relay (a native PUT's 307 comes before its body)
    for i in range(3):  # 3 MiB of 4: below the 90% mark (3.6 MiB)
        s3.put_object(Bucket=nb, Key="o%d" % i, Body=helpers.pattern_bytes(MIB, i))
    # refused by size before anything is stored (the body is read and dropped, so the client,
    # here through the proxy's S3 relay, gets the answer and not a reset)
    with pytest.raises(Exception) as e:
        s3.put_object(Bucket=nb, Key="too-big", Body=helpers.pattern_bytes(MIB, 7))
    assert e.value.response["Error"]["Code"] == "InsufficientStorage"
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 507

    # no Content-Length (chunked, through the S3 relay): refused once the mark is reached
    # mid-body; the temp file goes
    path = "/%s/streamed" % nb
    h = helpers.sign_headers("PUT", tiny.url + path, C_KEYS[0], C_KEYS[1],
                             {"Transfer-Encoding": "chunked"})
    conn = http.client.HTTPConnection("127.0.0.1", tiny.proxy.port, timeout=60)
    conn.request("PUT", path, body=iter([b"z" * (64 * KIB)] * 16), headers=h,
                 encode_chunked=True)
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    assert resp.status == 507 and b"InsufficientStorage" in body, (resp.status, body)
    s3.put_object(Bucket=nb, Key="small", Body=b"s" * (100 * KIB))  # what fits is accepted
    names = {e["name"] for e in tiny.listing(nb)["entries"]}
    assert names == {"o0", "o1", "o2", "small"}
    assert tiny.targets[0].tmp_files() == []
    assert tiny.get(nb, "too-big").status_code == 404
    # deleting frees room
    assert tiny.api("DELETE", tiny.obj_path(nb, "o0")).status_code == 204
    s3.put_object(Bucket=nb, Key="too-big", Body=helpers.pattern_bytes(MIB, 7))


def test_stop_with_requests_parked_on_a_stalled_upstream(s3rver, tiny2):  # noqa: F811
    """SIGTERM while clients are parked on an upstream that accepted their connections but
    never answers (a cold GET, a HEAD, a PUT's write-through) and a prefetch job waits on it:
    the target exits 0 at once (libmicrohttpd aborts a stop with suspended connections:
    they are resumed first) and leaves no temp files; the prefetch job runs again after the
    restart."""
    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(64)
    held = []

    def accept():
        while True:
            try:
                held.append(hole.accept()[0])
            except OSError:
                return
    threading.Thread(target=accept, daemon=True).start()
    src = uname("stall")
    s3rver.client().create_bucket(Bucket=src)
    s3rver.client().put_object(Bucket=src, Key="k1", Body=b"one")
    b = tiny2.create_cloud_bucket(src, "http://127.0.0.1:%d" % hole.getsockname()[1], "s3rver")
    jid = tiny2.start_job("prefetch", b, {"names": ["k1"]})
    t = tiny2.targets[0]
    results = []

    def call(method, key, body=None):
        try:
            results.append(tiny2.api(method, tiny2.obj_path(b, key), body=body,
                                     timeout=60).status_code)
        except Exception as e:  # cut off by the stop
            results.append(repr(e))
    ths = [threading.Thread(target=call, args=a) for a in
           (("GET", "k1"), ("HEAD", "k2"), ("PUT", "k3", b"x"))]
    for th in ths:
        th.start()
    # the GET and the prefetch of k1 share one fill (single-flight): 3 upstream calls
    helpers.wait_until(lambda: len(held) >= 3, timeout=20, what="3 upstream calls stalled")
    t0 = time.monotonic()
    rc = t.stop()
    took = time.monotonic() - t0
    assert rc == 0, t.log_tail(20)
    assert took < 30, "stop took %.1fs" % took  # the stalled calls would hold it for good
    for th in ths:
        th.join(30)
    assert len(results) == 3 and 200 not in results, results
    assert t.tmp_files() == []
    # the interrupted prefetch job runs again after the restart (the upstream is now gone
    # altogether: it says so), and with the upstream fixed the bucket works
    hole.shutdown(socket.SHUT_RDWR)  # wakes the accept() (a plain close() would leave the
    hole.close()                      # listening socket alive under it, accepting)
    for c in held:
        c.close()
    restarted_ms = int(time.time() * 1000)
    t.start()
    j = tiny2.wait_job(jid, timeout=60)
    assert j["state"] == "done" and j["started_ms"] >= restarted_ms - 1000, j
    assert j["error_count"] == 1 and "unreachable" in j["errors"][0], j
    assert tiny2.api("PATCH", "/v1/buckets/" + b, body={"upstream": {
        "endpoint": s3rver.url, "profile": "s3rver"}}).status_code == 200
    assert tiny2.get(b, "k1").content == b"one"


@pytest.fixture
def cramped(tmp_path_factory, log_dir, profiles):  # noqa: F811
    # eviction on the timer is slow here (check_ms 60 s): only the write path makes room
    args = space_args(2 * MIB, 50, 80, 95)
    args[args.index("--space.check_ms") + 1] = "60000"
    c = HoardCluster("cramped", str(tmp_path_factory.mktemp("cramped")), log_dir, _TARGETS,
                     C_KEYS, ntargets=1, mountpaths=1, target_extra=args)
    c.start()
    yield c
    problems = c.stop()
    assert not problems, problems


def test_reads_never_fail_for_lack_of_space(s3rver, cramped):  # noqa: F811
    """Issue 16, item 5: a dataset 4x the capacity read at full speed by 8 threads, and an
    object larger than the whole cache: every GET succeeds with the upstream's bytes (evicted
    on the write path, or passed through uncached), none answers 507."""
    src = uname("cramped")
    up = s3rver.client()
    up.create_bucket(Bucket=src)
    names = ["d%02d" % i for i in range(32)]  # 32 x 256 KiB = 8 MiB, capacity 2 MiB
    for i, k in enumerate(names):
        up.put_object(Bucket=src, Key=k, Body=helpers.pattern_bytes(OBJ, i))
    up.put_object(Bucket=src, Key="huge", Body=helpers.pattern_bytes(3 * MIB, 77))
    b = cramped.create_cloud_bucket(src, s3rver.url, "s3rver")
    errors = []
    s3 = cramped.s3()

    def reader(t):
        for rnd in range(2):
            for j in range(len(names)):
                i = (j * 7 + t * 5 + rnd) % len(names)
                try:
                    if (t + j) % 2:
                        body = s3.get_object(Bucket=b, Key=names[i])["Body"].read()
                    else:
                        r = cramped.get(b, names[i])
                        body = r.content if r.status_code == 200 else r.status_code
                    if body != helpers.pattern_bytes(OBJ, i):
                        errors.append((names[i], body if isinstance(body, int) else len(body)))
                except Exception as e:
                    errors.append((names[i], repr(e)))
    ths = [threading.Thread(target=reader, args=(t,)) for t in range(8)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(300)
    assert errors == [], errors[:5]
    # larger than the cache: served through, not kept
    p0 = cramped.target_metric("hoard_cold_passthrough_total")
    for _ in range(2):
        r = cramped.get(b, "huge")
        assert r.status_code == 200 and r.content == helpers.pattern_bytes(3 * MIB, 77)
    assert cramped.target_metric("hoard_cold_passthrough_total") - p0 == 2
    assert "huge" not in cached(cramped, b)
    assert used(cramped) <= 2 * MIB * 95 // 100
    assert cramped.targets[0].tmp_files() == []
    assert cramped.target_metric("hoard_evictions_total") > 0
