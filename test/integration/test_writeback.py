"""Write-back buckets (issue 18): a burst buffer in front of a real upstream (s3rver).

A hoard cluster (1 proxy, 2 targets) fronts s3rver with write_policy=back. Covered: the
property (default, set, refused on native buckets); PUTs (single, multipart, native and S3)
acknowledged while the upstream is stopped, listed and readable, uploaded byte-identical once
it returns, with the flush job as the barrier; 503 SlowDown past writeback.dirty_max; kill -9
of every target before the uploads and a restart (nothing lost); overwrite ordering (the
upstream ends with the last write); DELETE of a dirty object (never uploaded) and of an
uploaded one (gone upstream); eviction keeps dirty objects; status and metrics. With one
slow uploader (writeback.max_bps): multipart uploads to the upstream (the client's own parts,
or writeback.part_size parts past writeback.multipart_threshold) with unchanged local ETags;
an overwrite or DELETE during an upload stops it. A dirty object moved to a new mountpath
leaves no stale copy. The checkpoint example (docs/examples/hoard_checkpoint.py) end to end.
"""
import hashlib
import os
import re
import subprocess
import time
import uuid

import pytest

import helpers
from cachefix import (C_KEYS, S3RVER_KEY, UP_KEYS, CNode, HoardCluster, profiles,  # noqa: F401
                      s3rver)
from conftest import BIN_DIR, REPO, _TARGETS

WB_TARGET = ["--upstream.retries", "0", "--upstream.backoff_ms", "50",
             "--upstream.connect_timeout_ms", "1000", "--upstream.meta_timeout", "5",
             "--writeback.backoff_ms", "50", "--writeback.backoff_max_ms", "400",
             "--writeback.dirty_max", str(24 << 20), "--space.check_ms", "200"]


def uname(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:10])


def md5(b):
    return hashlib.md5(b).hexdigest()


@pytest.fixture(scope="module")
def wb(tmp_path_factory, log_dir, profiles):  # noqa: F811
    c = HoardCluster("wb", str(tmp_path_factory.mktemp("wb")), log_dir, _TARGETS, C_KEYS,
                     ntargets=2, target_extra=WB_TARGET)
    c.start()
    yield c
    problems = c.stop()
    assert not problems, problems


def wb_bucket(c, s3rver, write_back=True):  # noqa: F811
    """A new s3rver bucket and a hoard bucket in front of it (write-back unless told)."""
    name = uname("wb")
    s3rver.client().create_bucket(Bucket=name)
    extra = {"write_policy": "back"} if write_back else None
    c.create_cloud_bucket(name, s3rver.url, "s3rver", extra)
    return name


def upstream_bytes(s3rver, bucket, key):  # noqa: F811
    return s3rver.client().get_object(Bucket=bucket, Key=key)["Body"].read()


def upstream_keys(s3rver, bucket):  # noqa: F811
    r = s3rver.client().list_objects_v2(Bucket=bucket)
    return sorted(o["Key"] for o in r.get("Contents", []))


def status(c, bucket):
    r = c.api("GET", "/v1/buckets/%s?writeback" % bucket)
    assert r.status_code == 200, r.text
    return r.json()


def flush(c, bucket, timeout=120, prefix=None):
    job = c.start_job("flush", bucket, {"prefix": prefix} if prefix else {})
    j = c.wait_job(job, timeout=timeout)
    return j


def hoard_cli(c, *args, timeout=120):
    env = dict(os.environ, HOARD_ENDPOINT=c.url, AWS_ACCESS_KEY_ID=c.keys[0],
               AWS_SECRET_ACCESS_KEY=c.keys[1])
    exe = os.path.join(BIN_DIR, "hoard")
    return subprocess.run([exe] + list(args), env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_write_policy_property(wb, s3rver):  # noqa: F811
    b = wb_bucket(wb, s3rver, write_back=False)
    r = wb.api("GET", "/v1/buckets/%s?props" % b)
    assert r.json()["props"]["write_policy"] == "through"
    p = hoard_cli(wb, "bucket", "props", b, "write_policy=back")
    assert p.returncode == 0, p.stderr
    assert "write_policy" in p.stdout and "back" in p.stdout
    r = wb.api("GET", "/v1/buckets/%s?props" % b)
    assert r.json()["props"]["write_policy"] == "back"
    r = wb.api("PATCH", "/v1/buckets/%s" % b, body={"write_policy": "sometimes"})
    assert r.status_code == 400, r.text
    # a native bucket has no upstream to write back to
    n = uname("native")
    assert wb.api("POST", "/v1/buckets/%s" % n).status_code in (200, 201)
    r = wb.api("PATCH", "/v1/buckets/%s" % n, body={"write_policy": "back"})
    assert r.status_code == 400 and "S3-backed" in r.text, r.text


def test_upstream_down_then_back(wb, s3rver):  # noqa: F811
    """PUTs (native, S3 single and multipart) are acknowledged, listed and readable while the
    upstream is stopped; once it is back, a flush finds everything upstream, byte-identical."""
    b = wb_bucket(wb, s3rver)
    s3 = wb.s3()
    data = {"n/%d" % i: os.urandom(1000 + i * 4099) for i in range(6)}
    big = os.urandom(12 << 20)  # multipart: two parts of 5 MiB and one of 2 MiB
    s3rver.stop()
    try:
        for k, v in data.items():
            if k.endswith(("0", "2", "4")):
                r = wb.api("PUT", wb.obj_path(b, k), body=v)
                assert r.status_code == 200, r.text
            else:
                s3.put_object(Bucket=b, Key=k, Body=v)
        from boto3.s3.transfer import TransferConfig
        import io
        s3.upload_fileobj(io.BytesIO(big), b, "big/ckpt.pt",
                          Config=TransferConfig(multipart_threshold=5 << 20,
                                                multipart_chunksize=5 << 20))
        # readable while dirty
        for k, v in data.items():
            assert s3.get_object(Bucket=b, Key=k)["Body"].read() == v
        assert md5(s3.get_object(Bucket=b, Key="big/ckpt.pt")["Body"].read()) == md5(big)
        # listed while the upstream is down (what the targets hold)
        names = [e["name"] for e in wb.listing(b, cached="true")["entries"]]
        assert sorted(names) == sorted(list(data) + ["big/ckpt.pt"])
        st = status(wb, b)
        assert st["dirty_objects"] == 7, st
        assert st["dirty_bytes"] == sum(map(len, data.values())) + len(big), st
        # the uploaders keep failing meanwhile, and nothing is dropped
        helpers.wait_until(lambda: wb.target_metric("hoard_writeback_errors_total") > 0,
                           timeout=30, what="upload attempts against the stopped upstream")
        assert status(wb, b)["dirty_objects"] == 7
    finally:
        s3rver.start()
    j = flush(wb, b)
    assert j["state"] == "done", j
    assert j["objects"] == j["total_objects"] <= 7, j  # some may have gone up before it
    for k, v in data.items():
        assert upstream_bytes(s3rver, b, k) == v
    assert md5(upstream_bytes(s3rver, b, "big/ckpt.pt")) == md5(big)
    st = status(wb, b)
    assert st["dirty_objects"] == 0 and st["queue_depth"] == 0, st
    # the listing of an S3-backed bucket (the upstream's) now shows them all
    names = [e["name"] for e in wb.listing(b)["entries"]]
    assert sorted(names) == sorted(list(data) + ["big/ckpt.pt"])


def test_slowdown_past_dirty_limit(wb, s3rver):  # noqa: F811
    """With the upstream stopped, PUTs are taken until the dirty bytes would pass
    writeback.dirty_max (24 MiB per target here), then refused with 503 SlowDown; everything
    acknowledged is uploaded once the upstream returns."""
    b = wb_bucket(wb, s3rver)
    s3 = wb.s3()
    acked, refused = {}, 0
    s3rver.stop()
    try:
        for i in range(40):
            v = os.urandom(3 << 20)
            k = "ck/%02d" % i
            r = wb.api("PUT", wb.obj_path(b, k), body=v)
            if r.status_code == 200:
                acked[k] = v
            else:
                assert r.status_code == 503, r.text
                assert "SlowDown" in r.text, r.text
                refused += 1
        assert refused > 0, "no PUT was refused past the dirty limit"
        assert 0 < len(acked) <= 16, len(acked)
        import botocore
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            for i in range(20):
                s3.put_object(Bucket=b, Key="s3/%d" % i, Body=os.urandom(3 << 20))
        assert ei.value.response["Error"]["Code"] == "SlowDown"
    finally:
        s3rver.start()
    j = flush(wb, b)
    assert j["state"] == "done", j
    for k, v in acked.items():
        assert md5(upstream_bytes(s3rver, b, k)) == md5(v)
    # room again
    r = wb.api("PUT", wb.obj_path(b, "after"), body=b"x" * 1000)
    assert r.status_code == 200, r.text


def test_kill9_before_upload_then_restart(wb, s3rver):  # noqa: F811
    """Objects acknowledged while the upstream is down survive kill -9 of every target (the
    queue is in the catalogs) and are uploaded after the restart."""
    b = wb_bucket(wb, s3rver)
    data = {"k9/%d" % i: os.urandom(50000 + i) for i in range(10)}
    s3rver.stop()
    try:
        for k, v in data.items():
            r = wb.api("PUT", wb.obj_path(b, k), body=v)
            assert r.status_code == 200, r.text
        for t in wb.targets:
            t.kill9()
    finally:
        s3rver.start()
    for t in wb.targets:
        t.start()
    helpers.wait_until(lambda: len(wb.smap()["tmap"]) == 2, timeout=30, what="targets back")
    j = flush(wb, b)
    assert j["state"] == "done", j
    for k, v in data.items():
        assert upstream_bytes(s3rver, b, k) == v
    assert upstream_keys(s3rver, b) == sorted(data)


def test_overwrites_end_with_the_last_write(wb, s3rver):  # noqa: F811
    """Many overwrites of one name, some while its upload is in flight: the upstream ends with
    the last acknowledged bytes, and nothing older arrives after it."""
    b = wb_bucket(wb, s3rver)
    last = None
    for i in range(12):
        last = os.urandom((2 << 20) + i)
        r = wb.api("PUT", wb.obj_path(b, "ckpt/latest.pt"), body=last)
        assert r.status_code == 200, r.text
        if i % 4 == 0:
            time.sleep(0.05)
    j = flush(wb, b)
    assert j["state"] == "done", j
    assert md5(upstream_bytes(s3rver, b, "ckpt/latest.pt")) == md5(last)
    # and it stays so: no older upload is still on its way
    time.sleep(1)
    assert md5(upstream_bytes(s3rver, b, "ckpt/latest.pt")) == md5(last)
    assert md5(wb.get(b, "ckpt/latest.pt").content) == md5(last)


def test_delete_dirty_and_uploaded(wb, s3rver):  # noqa: F811
    """DELETE of a dirty object cancels its upload (it never appears upstream); DELETE of an
    uploaded one removes it upstream."""
    b = wb_bucket(wb, s3rver)
    r = wb.api("PUT", wb.obj_path(b, "up"), body=b"uploaded" * 100)
    assert r.status_code == 200
    assert flush(wb, b)["state"] == "done"
    assert upstream_keys(s3rver, b) == ["up"]
    s3rver.stop()
    try:
        r = wb.api("PUT", wb.obj_path(b, "dirty"), body=b"never" * 100)
        assert r.status_code == 200
        assert wb.api("DELETE", wb.obj_path(b, "dirty")).status_code == 204
        assert wb.api("DELETE", wb.obj_path(b, "up")).status_code == 204
        assert wb.get(b, "dirty").status_code == 404
    finally:
        s3rver.start()
    assert flush(wb, b)["state"] == "done"
    assert upstream_keys(s3rver, b) == []


def test_evict_keeps_dirty_objects(wb, s3rver):  # noqa: F811
    b = wb_bucket(wb, s3rver)
    s3rver.stop()
    try:
        for i in range(4):
            assert wb.api("PUT", wb.obj_path(b, "e/%d" % i), body=b"d" * 5000).status_code == 200
        j = wb.wait_job(wb.start_job("evict", b), timeout=60)
        assert j["state"] == "done", j
        names = [e["name"] for e in wb.listing(b, cached="true")["entries"]]
        assert names == ["e/%d" % i for i in range(4)]
        assert j.get("stats", {}).get("dirty_kept") == 4, j
    finally:
        s3rver.start()
    assert flush(wb, b)["state"] == "done"
    j = wb.wait_job(wb.start_job("evict", b), timeout=60)
    assert j["state"] == "done", j
    assert wb.listing(b, cached="true")["entries"] == []
    assert upstream_keys(s3rver, b) == ["e/%d" % i for i in range(4)]


def test_cli_flush_show_and_metrics(wb, s3rver):  # noqa: F811
    b = wb_bucket(wb, s3rver)
    s3rver.stop()
    try:
        for i in range(3):
            assert wb.api("PUT", wb.obj_path(b, "c/%d" % i), body=b"z" * 7000).status_code == 200
        p = hoard_cli(wb, "bucket", "show", b)
        assert p.returncode == 0, p.stderr
        assert "write_policy" in p.stdout
        line = [x for x in p.stdout.splitlines() if x.startswith("dirty_objects")]
        assert line and line[0].split()[-1] == "3", p.stdout
        assert wb.target_metric("hoard_writeback_dirty_objects") >= 3
    finally:
        s3rver.start()
    p = hoard_cli(wb, "bucket", "flush", b, "--prefix", "c/", "--wait")
    assert p.returncode == 0, p.stdout + p.stderr
    assert upstream_keys(s3rver, b) == ["c/0", "c/1", "c/2"]
    assert status(wb, b)["dirty_objects"] == 0


@pytest.fixture(scope="module")
def paused(tmp_path_factory, log_dir, profiles):  # noqa: F811
    """A cluster whose targets upload nothing (writeback.workers 0): objects stay dirty."""
    c = HoardCluster("wbp", str(tmp_path_factory.mktemp("wbp")), log_dir, _TARGETS, C_KEYS,
                     ntargets=2, target_extra=WB_TARGET + ["--writeback.workers", "0"])
    c.start()
    yield c
    problems = c.stop()
    assert not problems, problems


def test_listing_shows_dirty_objects(paused, s3rver):  # noqa: F811
    """The listing of a write-back bucket (the upstream's, merged with what the targets hold)
    shows objects not yet upstream, in order, with pages and common prefixes."""
    wb = paused
    b = wb_bucket(wb, s3rver)
    s3rver.client().put_object(Bucket=b, Key="m/up-only", Body=b"u")
    for k in ("a", "m/d1", "m/d2", "z/deep/x"):
        assert paused.api("PUT", paused.obj_path(b, k), body=k.encode() * 10).status_code == 200
    assert status(paused, b)["dirty_objects"] == 4
    ents = wb.listing(b)["entries"]
    names = [e["name"] for e in ents]
    assert names == ["a", "m/d1", "m/d2", "m/up-only", "z/deep/x"], names
    assert [e["cached"] for e in ents] == [True, True, True, False, True]
    assert upstream_keys(s3rver, b) == ["m/up-only"]
    page = wb.listing(b, limit=2)
    assert [e["name"] for e in page["entries"]] == ["a", "m/d1"]
    nxt = wb.listing(b, limit=10, token=page["continuation_token"])
    assert [e["name"] for e in nxt["entries"]] == ["m/d2", "m/up-only", "z/deep/x"]
    d = wb.listing(b, delimiter="/")
    assert [e["name"] for e in d["entries"]] == ["a"]
    assert d["prefixes"] == ["m/", "z/"]
    s3 = wb.s3()
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=b)["Contents"]]
    assert keys == ["a", "m/d1", "m/d2", "m/up-only", "z/deep/x"]
    assert status(wb, b)["dirty_objects"] == 4


def test_rebalance_moves_dirty_state(wb, s3rver, tmp_path_factory, log_dir):  # noqa: F811
    """A target joins while dirty objects wait for a stopped upstream: the objects it now owns
    move to it with their dirty state, and each object is uploaded by exactly one target."""
    b = wb_bucket(wb, s3rver)
    data = {"rb/%02d" % i: os.urandom(20000 + i) for i in range(24)}
    before = wb.target_metric("hoard_writeback_uploads_total")
    s3rver.stop()
    t3 = None
    try:
        for k, v in data.items():
            assert wb.api("PUT", wb.obj_path(b, k), body=v).status_code == 200
        t3 = CNode("wb-t3", str(tmp_path_factory.mktemp("wb-t3")),
                   os.path.join(log_dir, "wb-t3"), "target", wb.keys, wb.secret,
                   lambda: wb.proxy.url, WB_TARGET, 2)
        wb.nodes.append(t3)
        _TARGETS.append(t3)
        t3.start()
        wb.targets.append(t3)
        helpers.wait_until(lambda: len(wb.smap()["tmap"]) == 3, timeout=30, what="t3 joined")
        helpers.wait_until(lambda: not wb.smap().get("rebalance_id")
                           and t3.metric("hoard_writeback_dirty_objects") > 0,
                           timeout=60, what="rebalance over, with dirty objects on t3")
        assert status(wb, b)["dirty_objects"] == len(data)
        for k, v in data.items():
            assert wb.get(b, k).content == v
    finally:
        s3rver.start()
    assert flush(wb, b)["state"] == "done"
    for k, v in data.items():
        assert upstream_bytes(s3rver, b, k) == v
    # each object once: the old owner dropped its entry with the move
    after = wb.target_metric("hoard_writeback_uploads_total")
    assert after - before == len(data), (before, after)


# ---- multipart to the upstream, stopping superseded uploads ----

MiB = 1 << 20


@pytest.fixture(scope="module")
def slow(tmp_path_factory, log_dir, profiles):  # noqa: F811
    """One target whose single uploader is held to 6 MiB/s and sends objects over 5 MiB as
    upstream multipart uploads of 5 MiB parts (so an upload stays in flight for seconds)."""
    c = HoardCluster("wbs", str(tmp_path_factory.mktemp("wbs")), log_dir, _TARGETS, C_KEYS,
                     ntargets=1,
                     target_extra=WB_TARGET + ["--writeback.workers", "1",
                                               "--writeback.max_bps", str(6 * MiB),
                                               "--writeback.multipart_threshold", str(5 * MiB),
                                               "--writeback.part_size", str(5 * MiB),
                                               "--writeback.dirty_max", str(512 * MiB)])
    c.start()
    yield c
    problems = c.stop()
    assert not problems, problems


def test_multipart_upload_to_upstream(slow, s3rver):  # noqa: F811
    """Objects over writeback.multipart_threshold reach the upstream as multipart uploads,
    byte-identical: one written here as a single PUT (cut into writeback.part_size parts) and
    one written by boto3 in parts (sent with its own parts). Small ones stay single PUTs. The
    ETag a client sees through hoard does not change when the upload happens."""
    from boto3.s3.transfer import TransferConfig
    b = wb_bucket(slow, s3rver)
    single = os.urandom(12 * MiB + 1)
    parts = os.urandom(13 * MiB + 7)
    small = os.urandom(100000)
    s3 = slow.s3()
    before = slow.target_metric("hoard_writeback_multipart_uploads_total")
    ups = slow.target_metric("hoard_writeback_uploads_total")
    s3.put_object(Bucket=b, Key="big/single", Body=single)
    s3.put_object(Bucket=b, Key="small", Body=small)
    import io
    s3.upload_fileobj(io.BytesIO(parts), b, "big/parts",
                      Config=TransferConfig(multipart_threshold=5 * MiB,
                                            multipart_chunksize=7 * MiB, max_concurrency=2))
    etags = {k: s3.head_object(Bucket=b, Key=k)["ETag"] for k in ("big/single", "big/parts")}
    assert etags["big/single"] == '"%s"' % md5(single)
    assert etags["big/parts"].endswith('-2"'), etags
    j = flush(slow, b)
    assert j["state"] == "done", j
    assert md5(upstream_bytes(s3rver, b, "big/single")) == md5(single)
    assert md5(upstream_bytes(s3rver, b, "big/parts")) == md5(parts)
    assert upstream_bytes(s3rver, b, "small") == small
    assert slow.target_metric("hoard_writeback_multipart_uploads_total") - before == 2
    assert slow.target_metric("hoard_writeback_uploads_total") - ups == 3
    assert {k: s3.head_object(Bucket=b, Key=k)["ETag"] for k in etags} == etags
    assert md5(s3.get_object(Bucket=b, Key="big/parts")["Body"].read()) == md5(parts)
    # the parts the upstream received, per upload: boto3's own 2 parts (7 MiB + 6 MiB) for
    # big/parts, so an S3 upstream computes the same ETag; 3 of writeback.part_size (5 MiB)
    # for big/single
    ids = {}
    with open(s3rver.log, errors="replace") as f:
        for line in f:
            m = re.search(r'Stored part (\d+) of (\w+) in bucket "%s"' % b, line)
            if m:
                ids[m.group(2)] = max(ids.get(m.group(2), 0), int(m.group(1)))
    assert sorted(ids.values()) == [2, 3], ids


def wait_uploading(c, bucket):
    helpers.wait_until(lambda: status(c, bucket)["uploading"] >= 1, timeout=60, interval=0.05,
                       what="an upload of %s in flight" % bucket)


def test_newer_write_stops_inflight_upload(slow, s3rver):  # noqa: F811
    """An overwrite that arrives while the previous version is being uploaded (slowly, in
    parts) stops that upload; after flush the upstream holds the newer bytes. A DELETE during
    an upload stops it too, and the name ends absent upstream."""
    b = wb_bucket(slow, s3rver)
    old, new = os.urandom(24 * MiB), os.urandom(3 * MiB)
    s3 = slow.s3()
    stopped = slow.target_metric("hoard_writeback_superseded_total")
    s3.put_object(Bucket=b, Key="ckpt.pt", Body=old)
    wait_uploading(slow, b)
    s3.put_object(Bucket=b, Key="ckpt.pt", Body=new)
    j = flush(slow, b)
    assert j["state"] == "done", j
    assert md5(upstream_bytes(s3rver, b, "ckpt.pt")) == md5(new)
    assert slow.target_metric("hoard_writeback_superseded_total") - stopped == 1

    s3.put_object(Bucket=b, Key="gone.pt", Body=old)
    wait_uploading(slow, b)
    assert slow.api("DELETE", slow.obj_path(b, "gone.pt")).status_code == 204
    j = flush(slow, b)
    assert j["state"] == "done", j
    assert upstream_keys(s3rver, b) == ["ckpt.pt"]
    assert slow.target_metric("hoard_writeback_superseded_total") - stopped == 2
    assert status(slow, b)["dirty_objects"] == 0


def test_hoard_upstream_same_etag_and_no_orphan_parts(slow, s3rver, tmp_path_factory,  # noqa: F811
                                                      log_dir):
    """With an upstream that computes ETags as AWS S3 does (another hoard cluster, which also
    implements AbortMultipartUpload and ListMultipartUploads): an object written in parts
    ends upstream with the very ETag hoard gave the client; one written as a single PUT past
    the threshold gets a multipart ETag upstream (documented); an upload stopped by an
    overwrite is aborted upstream, and one cut short by kill -9 is aborted after the restart,
    so no incomplete upload is left behind."""
    from boto3.s3.transfer import TransferConfig
    import io
    up = HoardCluster("wbup", str(tmp_path_factory.mktemp("wbup")), log_dir, _TARGETS, UP_KEYS,
                      ntargets=1)
    up.start()
    try:
        b = uname("wbh")
        ups3 = up.s3()
        ups3.create_bucket(Bucket=b)
        slow.create_cloud_bucket(b, up.url, "hoardup", {"write_policy": "back"})
        s3 = slow.s3()
        parts, single = os.urandom(13 * MiB + 7), os.urandom(12 * MiB + 1)
        s3.upload_fileobj(io.BytesIO(parts), b, "parts",
                          Config=TransferConfig(multipart_threshold=5 * MiB,
                                                multipart_chunksize=7 * MiB))
        s3.put_object(Bucket=b, Key="single", Body=single)
        local = {k: s3.head_object(Bucket=b, Key=k)["ETag"] for k in ("parts", "single")}
        assert local["parts"].endswith('-2"') and local["single"] == '"%s"' % md5(single)
        assert flush(slow, b)["state"] == "done"
        remote = {k: ups3.head_object(Bucket=b, Key=k)["ETag"] for k in local}
        assert remote["parts"] == local["parts"], (local, remote)
        assert remote["single"].endswith('-3"'), remote
        assert md5(ups3.get_object(Bucket=b, Key="parts")["Body"].read()) == md5(parts)
        assert md5(ups3.get_object(Bucket=b, Key="single")["Body"].read()) == md5(single)

        stopped = slow.target_metric("hoard_writeback_superseded_total")
        s3.put_object(Bucket=b, Key="ckpt", Body=os.urandom(24 * MiB))
        wait_uploading(slow, b)
        helpers.wait_until(lambda: ups3.list_multipart_uploads(Bucket=b).get("Uploads"),
                           timeout=60, what="the upstream multipart upload begun")
        newer = os.urandom(1000)
        s3.put_object(Bucket=b, Key="ckpt", Body=newer)
        assert flush(slow, b)["state"] == "done"
        assert slow.target_metric("hoard_writeback_superseded_total") - stopped == 1
        assert ups3.get_object(Bucket=b, Key="ckpt")["Body"].read() == newer
        assert ups3.list_multipart_uploads(Bucket=b).get("Uploads", []) == []

        # kill -9 in the middle of a multipart upload: after the restart the upload is sent
        # again and the one the crash interrupted is aborted upstream
        big = os.urandom(24 * MiB)
        s3.put_object(Bucket=b, Key="crash", Body=big)
        wait_uploading(slow, b)
        first = helpers.wait_until(lambda: ups3.list_multipart_uploads(Bucket=b).get("Uploads"),
                                   timeout=60, what="the upstream multipart upload begun")
        t = slow.targets[0]
        t.kill9()
        t.start()
        helpers.wait_until(lambda: len(slow.smap()["tmap"]) == 1, timeout=30, what="target back")
        assert flush(slow, b)["state"] == "done"
        assert md5(ups3.get_object(Bucket=b, Key="crash")["Body"].read()) == md5(big)
        helpers.wait_until(lambda: not ups3.list_multipart_uploads(Bucket=b).get("Uploads"),
                           timeout=60, what="no incomplete upload left (was %s)" % first)
    finally:
        problems = up.stop()
    assert not problems, problems


def test_mountpath_move_keeps_one_dirty_copy(tmp_path_factory, log_dir, profiles,  # noqa: F811
                                             s3rver):  # noqa: F811
    """A target restarted with a second mountpath: the rebalance moves dirty objects whose
    HRW mountpath is now the new one with their upload entries, and leaves no stale copy on
    the old mountpath; the upload then happens once, from the new place."""
    c = HoardCluster("wbmp", str(tmp_path_factory.mktemp("wbmp")), log_dir, _TARGETS, C_KEYS,
                     ntargets=1, mountpaths=1,
                     target_extra=WB_TARGET + ["--writeback.workers", "0"])
    c.start()
    try:
        t = c.targets[0]
        b = wb_bucket(c, s3rver)
        data = {"mp/%02d" % i: os.urandom(10000 + i) for i in range(16)}
        for k, v in data.items():
            assert c.api("PUT", c.obj_path(b, k), body=v).status_code == 200

        def objects():
            return sum(t.metric("hoard_mountpath_objects", mountpath=str(i)) for i in range(2))

        def moved():
            if c.smap().get("rebalance_id"):
                return False
            return t.metric("hoard_mountpath_objects", mountpath="1") > 0

        full = os.path.dirname(t.mountpaths[0])
        t.stop()
        t.mountpaths = [os.path.join(full, "mp1"), os.path.join(full, "mp2")]
        t.start()
        helpers.wait_until(lambda: len(c.smap()["tmap"]) == 1, timeout=30, what="target back")
        r = c.api("POST", "/v1/cluster/rebalance")
        assert r.status_code in (200, 201, 202), r.text
        helpers.wait_until(moved, timeout=60, what="the rebalance over, objects on mp2")
        helpers.wait_until(lambda: objects() == len(data), timeout=30,
                           what="one copy per object (%s)" % objects())
        st = status(c, b)
        assert (st["dirty_objects"], st["queue_depth"]) == (len(data), len(data)), st
        for k, v in data.items():
            assert c.get(b, k).content == v
        t.stop()
        t.extra = [x if x != "0" or t.extra[i - 1] != "--writeback.workers" else "2"
                   for i, x in enumerate(t.extra)]
        t.start()
        helpers.wait_until(lambda: len(c.smap()["tmap"]) == 1, timeout=30, what="target back")
        assert flush(c, b)["state"] == "done"
        for k, v in data.items():
            assert upstream_bytes(s3rver, b, k) == v
        assert c.target_metric("hoard_writeback_uploads_total") == len(data)
        assert objects() == len(data)
        assert status(c, b)["dirty_objects"] == 0
    finally:
        problems = c.stop()
    assert not problems, problems


def test_checkpoint_example(wb, s3rver):  # noqa: F811
    """docs/examples/hoard_checkpoint.py: checkpoints saved through hoard with boto3
    (torch.save when python3-torch is installed, pickle otherwise), one flush job, then each
    one loaded back from the upstream directly and compared."""
    b = wb_bucket(wb, s3rver)
    env = dict(os.environ, AWS_ACCESS_KEY_ID=C_KEYS[0], AWS_SECRET_ACCESS_KEY=C_KEYS[1],
               UPSTREAM_ACCESS_KEY_ID=S3RVER_KEY, UPSTREAM_SECRET_ACCESS_KEY=S3RVER_KEY)
    r = subprocess.run(["/usr/bin/python3",
                        os.path.join(REPO, "docs", "examples", "hoard_checkpoint.py"),
                        "--endpoint", wb.url, "--bucket", b, "--prefix", "run7/",
                        "--upstream", s3rver.url, "--steps", "3"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]
    lines = r.stdout.splitlines()
    assert [x.split(":")[0] for x in lines if x.startswith("saved")] == [
        "saved run7/step-%06d.pt" % i for i in (1, 2, 3)], r.stdout
    assert any(x.startswith("flush ") and "done" in x for x in lines), r.stdout
    assert [x for x in lines if x.startswith("loaded")] == [
        "loaded run7/step-%06d.pt from the upstream: identical" % i for i in (1, 2, 3)], r.stdout
    assert upstream_keys(s3rver, b) == ["run7/step-%06d.pt" % i for i in (1, 2, 3)]
