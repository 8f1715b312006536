"""Epoch plans (issue 16): a loader registers the order it will read a dataset in; targets
prefetch ahead of the reader and evict by next use (Belady's MIN).

A one-target cluster (ownership is then trivial, so the expected cache contents are exact)
with a 1 MiB cache (low 50%, high 80%) over s3rver, plans prefetching at most 4 objects ahead
with 2 workers; a two-target cluster for the split by owner. Orders come from the documented
generator (docs/examples/hoard_plan.py), which the tests thereby check against hoardd's.
"""
import contextlib
import json
import math
import os
import sys
import time
import uuid

import pytest

import helpers
from cachefix import C_KEYS, CNode, HoardCluster, profiles, s3rver  # noqa: F401
from conftest import REPO, _TARGETS

sys.path.insert(0, os.path.join(REPO, "docs", "examples"))
import hoard_plan  # noqa: E402

KIB = 1024
MIB = 1024 * KIB
OBJ = 64 * KIB
WINDOW = 4


def uname(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:10])


@pytest.fixture(scope="module")
def one(tmp_path_factory, log_dir, profiles, s3rver):  # noqa: F811
    c = HoardCluster("plan1", str(tmp_path_factory.mktemp("plan1")), log_dir, _TARGETS, C_KEYS,
                     ntargets=1, mountpaths=1,
                     target_extra=["--space.capacity", str(MIB), "--space.low", "50",
                                   "--space.high", "80", "--space.oos", "95",
                                   "--space.check_ms", "100", "--cache.atime_flush_ms", "100",
                                   "--plan.window", str(WINDOW), "--plan.window_max", str(WINDOW),
                                   "--plan.workers", "2"])
    c.start()
    yield c
    problems = c.stop()
    assert not problems, problems


@pytest.fixture(scope="module")
def two(tmp_path_factory, log_dir, profiles, s3rver):  # noqa: F811
    c = HoardCluster("plan2", str(tmp_path_factory.mktemp("plan2")), log_dir, _TARGETS, C_KEYS,
                     ntargets=2, mountpaths=1)
    c.start()
    yield c
    problems = c.stop()
    assert not problems, problems


@pytest.fixture(autouse=True)
def no_plans_left(request):
    """Every test leaves no plan behind (a failed one would keep prefetching into the next)."""
    yield
    for name in ("one", "two"):
        if name in request.fixturenames:
            c = request.getfixturevalue(name)
            for p in c.api("GET", "/v1/plans").json()["plans"]:
                c.api("DELETE", "/v1/plans/" + p["id"])


@contextlib.contextmanager
def fresh(tmp_path_factory, log_dir, name, ntargets, extra):
    """A cluster of its own for one test (one mountpath per target), stopped afterwards."""
    root = str(tmp_path_factory.mktemp(name))
    c = HoardCluster(name, root, log_dir, _TARGETS, C_KEYS, ntargets=ntargets, mountpaths=1,
                     target_extra=extra)
    c.root = root
    try:
        c.start()
        yield c
    finally:
        problems = c.stop()
    assert not problems, problems


def dataset(s3rver, c, n, prefix="s/"):  # noqa: F811
    src = uname("plan")
    up = s3rver.client()
    up.create_bucket(Bucket=src)
    keys = ["%s%03d" % (prefix, i) for i in range(n)]
    for i, k in enumerate(keys):
        up.put_object(Bucket=src, Key=k, Body=helpers.pattern_bytes(OBJ, i))
    return c.create_cloud_bucket(src, s3rver.url, "s3rver"), keys


def cached(c, bucket):
    j = c.listing(bucket, cached="true", limit=10000)
    return {e["name"] for e in j["entries"]}


def read(c, b, keys, i, plan=None):
    path = c.obj_path(b, keys[i]) + ("?plan=" + plan if plan else "")
    r = c.api("GET", path)
    assert r.status_code == 200 and r.content == helpers.pattern_bytes(OBJ, i), r.status_code


def register(c, body, status=201):
    r = c.api("POST", "/v1/plans", body=body)
    assert r.status_code == status, r.text
    return r.json()


def show(c, pid):
    r = c.api("GET", "/v1/plans/" + pid)
    assert r.status_code == 200, r.text
    return r.json()


def test_plan_prefetches_ahead_of_the_reader(s3rver, one):  # noqa: F811
    b, keys = dataset(s3rver, one, 24)
    pid = uname("pf")
    j = register(one, {"id": pid, "bucket": b, "prefix": "s/", "epochs": 2, "seed": 7})
    assert j["total"] == 24 and j["targets"] and sum(j["targets"].values()) == 24, j
    order = hoard_plan.epoch_order(24, 7, 0)
    # the first WINDOW objects of the plan are fetched before anyone reads
    helpers.wait_until(lambda: cached(one, b) == {keys[i] for i in order[:WINDOW]}, timeout=30,
                       what="the plan's first %d objects prefetched" % WINDOW)
    for p in range(6):
        read(one, b, keys, order[p], plan=pid)
    # read 6: the window moved: positions 6..9 are held too, nothing beyond
    want = {keys[i] for i in order[:6 + WINDOW]}
    helpers.wait_until(lambda: cached(one, b) == want, timeout=30,
                       what="prefetch of positions 6..9")
    v = helpers.wait_until(lambda: (lambda v: v if v["lead"] == WINDOW else None)(
        show(one, pid)), timeout=30, what="a lead of %d objects" % WINDOW)
    assert v["epoch"] == 0 and v["cursor"] == 5 and v["read_in_epoch"] == 6, v
    # every object fetched so far was fetched by the plan, unless a read got there first
    assert 4 + WINDOW <= v["prefetched"] <= 6 + WINDOW, v
    assert v["prefetched_bytes"] == v["prefetched"] * OBJ, v
    # the first WINDOW were held before the reads; the next ones may still have been in
    # flight (a read then joins the prefetch: a miss that waits for it, not a second fetch)
    assert v["hits"] + v["misses"] == 6 and v["hits"] >= WINDOW, v
    assert v["wasted"] == 0, v
    # listed, then deleted
    assert pid in [p["id"] for p in one.api("GET", "/v1/plans").json()["plans"]]
    assert one.api("DELETE", "/v1/plans/" + pid).status_code == 200
    assert one.api("GET", "/v1/plans/" + pid).status_code == 404
    assert one.api("DELETE", "/v1/plans/" + pid).status_code == 404


def test_plan_prometheus_series(s3rver, one):  # noqa: F811
    """Per-plan series at a target's /metrics agree with the plans API, and go with the plan."""
    b, keys = dataset(s3rver, one, 24)
    pid = uname("prom")
    register(one, {"id": pid, "bucket": b, "prefix": "s/", "epochs": 2, "seed": 11})
    order = hoard_plan.epoch_order(24, 11, 0)
    t = one.targets[0]

    def snap():
        ms = t.metrics()
        return {k.split("{")[0]: v for k, v in ms.items() if 'plan="%s"' % pid in k}

    # before any read: the window is full, nothing lags, the reader is before the start
    m = helpers.wait_until(lambda: (lambda m: m if m.get("hoard_plan_lead") == WINDOW else None)(
        snap()), timeout=30, what="a lead of %d in /metrics" % WINDOW)
    assert m["hoard_plan_window"] == WINDOW and m["hoard_plan_lag"] == 0, m
    assert m["hoard_plan_cursor"] == -1 and m["hoard_plan_epoch"] == 0, m
    assert m["hoard_plan_objects"] == 24, m
    assert m["hoard_plan_prefetched_total"] >= WINDOW, m
    assert m["hoard_plan_prefetched_bytes_total"] == m["hoard_plan_prefetched_total"] * OBJ, m
    for p in range(6):
        read(one, b, keys, order[p], plan=pid)
    v = helpers.wait_until(lambda: (lambda v: v if v["lead"] == WINDOW else None)(
        show(one, pid)), timeout=30, what="a lead of %d objects" % WINDOW)
    ms = t.metrics()

    def g(name):
        return ms[t.series(name, plan=pid, bucket=b)]

    assert g("hoard_plan_cursor") == 5 == v["cursor"]
    assert g("hoard_plan_hits_total") == v["hits"] and g("hoard_plan_misses_total") == v["misses"]
    assert g("hoard_plan_hits_total") + g("hoard_plan_misses_total") == 6
    assert abs(g("hoard_plan_hit_ratio") - v["hits"] / 6) < 1e-6
    assert g("hoard_plan_prefetched_total") == v["prefetched"]
    assert g("hoard_plan_prefetched_bytes_total") == v["prefetched_bytes"]
    # (the module's small cache is shared with earlier tests: eviction may waste some)
    assert g("hoard_plan_wasted_total") == v["wasted"]
    assert g("hoard_plan_wasted_bytes_total") == v["wasted_bytes"]
    assert one.api("DELETE", "/v1/plans/" + pid).status_code == 200
    assert not [k for k in t.metrics() if 'plan="%s"' % pid in k]


def _tar(members):
    import io
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def test_shard_plan_members_advance_it(s3rver, one):  # noqa: F811
    """A plan over tar shards: the prefetch fetches whole shards in plan order, every member
    read (?archpath=) counts, and reading a shard member by member neither moves the reader
    past it nor starts the next epoch early (it would after half the shards)."""
    nshards, nmem, msize = 8, 4, 4 * KIB
    src = uname("plansh")
    up = s3rver.client()
    up.create_bucket(Bucket=src)
    shards = ["sh/shard-%03d.tar" % i for i in range(nshards)]

    def member(i, k):
        return helpers.pattern_bytes(msize, i * 100 + k)
    for i, sh in enumerate(shards):
        up.put_object(Bucket=src, Key=sh,
                      Body=_tar([("%02d/%d.bin" % (i, k), member(i, k)) for k in range(nmem)]))
    b = one.create_cloud_bucket(src, s3rver.url, "s3rver")
    pid = uname("shards")
    register(one, {"id": pid, "bucket": b, "prefix": "sh/", "epochs": 2, "seed": 9,
                   "shards": True})
    order = hoard_plan.epoch_order(nshards, 9, 0)
    # whole shards, the first WINDOW of the plan, before anyone reads
    helpers.wait_until(lambda: cached(one, b) == {shards[i] for i in order[:WINDOW]},
                       timeout=30, what="the plan's first %d shards prefetched" % WINDOW)

    def read_members(p):
        i = order[p]
        for k in range(nmem):
            path = "%s?archpath=%s&plan=%s" % (one.obj_path(b, shards[i]),
                                              "%02d/%d.bin" % (i, k), pid)
            r = one.api("GET", path)
            assert r.status_code == 200 and r.content == member(i, k), (r.status_code, r.text)
    for p in range(6):  # past half of the shards, member by member
        read_members(p)
        v = show(one, pid)
        assert v["epoch"] == 0 and v["cursor"] == p and v["read_in_epoch"] == p + 1, (p, v)
    assert v["shards"] is True and v["hits"] + v["misses"] == 6 * nmem, v
    # the window moved with the shards: positions 6..7 held too, whole
    helpers.wait_until(lambda: cached(one, b) == set(shards), timeout=30,
                       what="prefetch of the remaining shards")
    for p in (6, 7):
        read_members(p)
    # every shard read: the next epoch begins, and the last shard's further members do not
    # count as reads of the new epoch
    v = show(one, pid)
    assert v["epoch"] == 1 and v["cursor"] == -1 and v["read_in_epoch"] == 0, v
    assert v["hits"] + v["misses"] == nshards * nmem and v["wasted"] == 0, v
    assert one.api("DELETE", "/v1/plans/" + pid).status_code == 200


def test_window_grows_with_the_reader_against_a_slow_upstream(s3rver, profiles,
                                                              tmp_path_factory,
                                                              log_dir):  # noqa: F811
    """The look-ahead is sized from measured rates (docs/caching.md, "Prefetch"): before any
    read it is plan.window; a reader that reads faster than the throttled prefetch grows it
    (need = ceil(2 * read_rate * fetch_s) + workers, within plan.window..plan.window_max),
    and the objects held ahead follow it. One prefetch worker at 128 KiB/s, so a 64 KiB fetch
    takes at least 0.5 s; the reader reads back to back (at least 2 objects/s even on a
    loaded machine), so the need is above the floor of 2."""
    floor, wmax = 2, 6
    extra = ["--plan.window", str(floor), "--plan.window_max", str(wmax), "--plan.workers", "1",
             "--plan.max_bps", str(128 * KIB)]
    with fresh(tmp_path_factory, log_dir, "planwin", 1, extra) as c:
        b, keys = dataset(s3rver, c, 40)
        pid = uname("win")
        register(c, {"id": pid, "bucket": b, "prefix": "s/", "epochs": 1, "seed": 4})
        order = hoard_plan.epoch_order(40, 4, 0)
        v = show(c, pid)
        assert "window" not in v, v  # per target only (one here)
        assert next(iter(v["targets"].values()))["window"] == floor, v  # nothing measured yet
        helpers.wait_until(lambda: cached(c, b) == {keys[i] for i in order[:floor]},
                           timeout=30, what="the first %d objects prefetched" % floor)
        for p in range(12):
            read(c, b, keys, order[p], plan=pid)
        v = show(c, pid)
        tv = next(iter(v["targets"].values()))
        need = math.ceil(2 * tv["read_rate"] * tv["fetch_s"]) + 1
        assert tv["fetch_s"] >= 0.4 and tv["read_rate"] > 0, tv
        # the documented formula, from the numbers the same answer reports
        assert tv["window"] == max(floor, min(wmax, need)), (tv, need)
        assert tv["window"] > floor, tv
        # a pause keeps the pace: the prefetch fills the grown window while the reader waits
        # (fetch_s moves with each fetch, so the window is asked for again)
        def ahead():
            held = cached(c, b)
            n = sum(1 for p in range(12, 40) if keys[order[p]] in held)
            w = next(iter(show(c, pid)["targets"].values()))["window"]
            return n if n > floor and n == w else None
        helpers.wait_until(ahead, timeout=60, what="the window held ahead")
        assert c.api("DELETE", "/v1/plans/" + pid).status_code == 200


def test_deleted_plan_stops_prefetching(s3rver, one):  # noqa: F811
    b, keys = dataset(s3rver, one, 12)
    pid = uname("del")
    register(one, {"id": pid, "bucket": b, "keys": keys, "epochs": 1, "order": [
        list(range(12))]})
    helpers.wait_until(lambda: cached(one, b) == set(keys[:WINDOW]), timeout=30,
                       what="first window prefetched")
    assert one.api("DELETE", "/v1/plans/" + pid).status_code == 200
    for i in range(3):
        read(one, b, keys, i)
    time.sleep(1.0)  # time for a prefetch that should not happen (workers poll every 0.2 s)
    assert cached(one, b) == set(keys[:WINDOW]), cached(one, b)


def test_eviction_honours_next_use(s3rver, one):  # noqa: F811
    """20 objects of 64 KiB through a 1 MiB cache (evicting above 819 KiB down to 512 KiB),
    read in the same order twice, prefetch off. LRU would keep the most recently read,
    whose next use is furthest; MIN keeps the first ones of the order."""
    b, keys = dataset(s3rver, one, 20)
    pid = uname("min")
    ident = list(range(20))
    register(one, {"id": pid, "bucket": b, "keys": keys, "epochs": 2, "order": [ident, ident],
                   "prefetch": False})
    for i in range(20):
        read(one, b, keys, i, plan=pid)
    helpers.wait_until(lambda: one.targets[0].metric("hoard_mountpath_used_bytes",
                                                     mountpath="0") <= 819 * KIB, timeout=30,
                       what="eviction under the high mark")
    # an eviction leaves at least 7 objects (512 KiB, less room for the one being fetched
    # when the write path evicts): the 7 nearest next uses are 0..6 (LRU would keep 13..19)
    helpers.wait_until(lambda: set(keys[:7]) <= cached(one, b), timeout=30,
                       what="the first 7 of the order kept")
    v = show(one, pid)
    assert v["epoch"] == 1 and v["cursor"] == -1, v
    h0 = v["hits"]
    for i in range(7):
        read(one, b, keys, i, plan=pid)
    assert show(one, pid)["hits"] - h0 == 7
    assert one.api("DELETE", "/v1/plans/" + pid).status_code == 200


def test_two_plans_share_the_cache(s3rver, one):  # noqa: F811
    """Plan A reads 0..19 in order, twice; plan B (not started) will read 19, 18, ... Reads
    tagged with A advance A only; the nearest next use across both plans decides, so
    eviction keeps A's next ones and B's first ones."""
    b, keys = dataset(s3rver, one, 20)
    pa, pb = uname("a"), uname("b")
    ident = list(range(20))
    register(one, {"id": pa, "bucket": b, "keys": keys, "epochs": 2, "order": [ident],
                   "prefetch": False})
    register(one, {"id": pb, "bucket": b, "keys": keys, "epochs": 1,
                   "order": [ident[::-1]], "prefetch": False})
    for i in range(20):
        read(one, b, keys, i, plan=pa)
    helpers.wait_until(lambda: one.targets[0].metric("hoard_mountpath_used_bytes",
                                                     mountpath="0") <= 819 * KIB, timeout=30,
                       what="eviction under the high mark")
    # every eviction keeps at least the 7 nearest next uses across both plans: A's 0 and 1
    # (next epoch) are among them at every position of A's reader, and so are B's first
    # reads 19..17 once read; LRU would have dropped 0 and 1
    want = set(keys[:2]) | set(keys[17:])  # (the last commits land just after the reads)
    helpers.wait_until(lambda: want <= cached(one, b), timeout=30, what="kept: %s" % want)
    va, vb = show(one, pa), show(one, pb)
    assert va["epoch"] == 1 and vb["epoch"] == 0 and vb["read_in_epoch"] == 0, (va, vb)
    plans = {p["id"] for p in one.api("GET", "/v1/plans").json()["plans"]}
    assert {pa, pb} <= plans
    for p in (pa, pb):
        assert one.api("DELETE", "/v1/plans/" + p).status_code == 200


def test_restart_rebuilds_the_plan(s3rver, one):  # noqa: F811
    b, keys = dataset(s3rver, one, 10)
    pid = uname("rs")
    register(one, {"id": pid, "bucket": b, "prefix": "s/", "epochs": 3, "seed": 11,
                   "prefetch": False})
    t = one.targets[0]
    assert t.stop() == 0
    t.start()
    helpers.wait_until(lambda: one.api("GET", "/v1/plans/" + pid).status_code == 200,
                       timeout=30, what="the plan rebuilt after the restart")
    v = show(one, pid)
    assert v["total"] == 10 and v["owned"] == 10 and v["epochs"] == 3, v
    # the explicit cursor: the reader is at epoch 1, position 4
    r = one.api("POST", "/v1/plans/%s/cursor" % pid, body={"epoch": 1, "position": 4})
    assert r.status_code == 200, r.text
    v = show(one, pid)
    assert v["epoch"] == 1 and v["cursor"] == 4 and v["read_in_epoch"] == 5, v
    # an S3 GET through the proxy's relay, tagged with the Hoard-Plan header, advances it
    order = hoard_plan.epoch_order(10, 11, 1)
    s3 = one.s3()

    def tag(request, **kw):
        request.headers["Hoard-Plan"] = pid
    s3.meta.events.register("before-sign.s3.GetObject", tag)
    body = s3.get_object(Bucket=b, Key=keys[order[5]])["Body"].read()
    assert body == helpers.pattern_bytes(OBJ, order[5])
    v = show(one, pid)
    assert v["epoch"] == 1 and v["cursor"] == 5 and v["read_in_epoch"] == 6, v
    r = one.api("POST", "/v1/plans/%s/cursor" % pid, body={"epoch": 9, "position": 0})
    assert r.status_code == 400, r.text
    assert one.api("DELETE", "/v1/plans/" + pid).status_code == 200


def test_plan_split_by_owner(s3rver, two):  # noqa: F811
    b, keys = dataset(s3rver, two, 30)
    pid = uname("split")
    j = register(two, {"id": pid, "bucket": b, "prefix": "s/", "epochs": 1, "seed": 3})
    assert j["total"] == 30 and len(j["targets"]) == 2 and sum(j["targets"].values()) == 30, j
    v = show(two, pid)
    assert v["owned"] == 30 and sorted(v["targets"]) == sorted(j["targets"]), v
    for t, tv in v["targets"].items():
        assert tv["owned"] == j["targets"][t], v
    assert two.api("DELETE", "/v1/plans/" + pid).status_code == 200


def test_bad_plans_get_clear_errors(s3rver, two):  # noqa: F811
    b, keys = dataset(s3rver, two, 3)
    nb = uname("native")
    assert two.api("POST", "/v1/buckets/" + nb).status_code == 201
    ok = {"bucket": b, "prefix": "s/", "epochs": 2, "seed": 1}

    def bad(change, status, words):
        body = dict(ok)
        body.update(change)
        body = {k: v for k, v in body.items() if v is not None}
        r = two.api("POST", "/v1/plans", body=body)
        assert r.status_code == status, (change, r.status_code, r.text)
        assert words in r.json()["message"], (change, r.text)
    bad({"bucket": uname("nope")}, 404, "No such bucket")
    bad({"bucket": nb}, 400, "S3-backed")
    bad({"prefix": "nothing-here/"}, 400, "empty")
    bad({"epochs": 0}, 400, "epochs")
    bad({"epochs": 10 ** 12}, 400, "epochs")
    bad({"seed": -1}, 400, "seed")
    bad({"order": [[0, 1, 2]]}, 400, "one of \"seed\" or \"order\"")
    bad({"seed": None, "order": [[0, 1, 1]]}, 400, "order[0][2]")
    bad({"seed": None, "order": [[0, 1]]}, 400, "order[0]")
    bad({"prefix": None, "keys": ["a", ""]}, 400, "keys[1]")
    bad({"prefix": None}, 400, "\"prefix\" or \"keys\"")
    bad({"id": "a/b"}, 400, "plan id")
    bad({"id": 7}, 400, "plan id")
    bad({"id": "p?x=1"}, 400, "plan id")
    bad({"id": "x" * 49}, 400, "plan id")
    r = two.api("POST", "/v1/plans", body=b"not json")
    assert r.status_code == 400
    assert two.api("GET", "/v1/plans").json()["plans"] == []
    # a failed registration again of an id leaves the registered plan as it was, also when
    # the bad id would name it in a URL
    pid = uname("keep")
    register(two, dict(ok, id=pid))
    bad({"id": pid, "prefix": "nothing-here/"}, 400, "empty")
    bad({"id": pid + "?x=1"}, 400, "plan id")
    bad({"id": pid + "/cursor"}, 400, "plan id")
    v = show(two, pid)
    assert v["total"] == 3 and v["owned"] == 3 and v["epochs"] == 2, v
    # cursors out of the plan or of the wrong type: 400, and the plan does not move
    for body in ({"epoch": 0, "position": 2 ** 63 - 1}, {"epoch": 0, "position": 3},
                 {"epoch": 0, "position": -2}, {"epoch": -1, "position": 0},
                 {"epoch": 2 ** 32, "position": 0}, {"epoch": 3, "position": 0},
                 {"epoch": "0", "position": 0}, {"epoch": 0}, [0, 0]):
        r = two.api("POST", "/v1/plans/%s/cursor" % pid, body=body)
        assert r.status_code == 400, (body, r.status_code, r.text)
    r = two.api("POST", "/v1/plans/%s/cursor" % pid, body=b"{")
    assert r.status_code == 400, r.text
    v = show(two, pid)
    assert v["epoch"] == 0 and v["cursor"] == -1, v
    r = two.api("POST", "/v1/plans/%s/cursor" % uname("none"), body={"epoch": 0, "position": 0})
    assert r.status_code == 404, r.text
    assert two.api("DELETE", "/v1/plans/" + pid).status_code == 200


def test_cli_plan_create_show_rm(s3rver, two, tmp_path):  # noqa: F811
    from test_cli import Hoard
    hoard = Hoard(two.proxy, tmp_path)
    b, keys = dataset(s3rver, two, 5)
    pid = uname("cli")
    j = hoard.json("plan", "create", b, "--prefix", "s/", "--epochs", "3", "--seed", "5",
                   "--id", pid, "--no-prefetch")
    assert j["id"] == pid and j["total"] == 5 and j["epochs"] == 3, j
    out = hoard.ok("plan", "show", pid).stdout.decode()
    assert pid in out and "5 objects" in out and "epoch 0 of 3" in out, out
    assert pid in hoard.ok("plan", "ls").stdout.decode()
    assert hoard.json("plan", "show", pid)["prefetch"] is False
    assert hoard.json("plan", "show", pid)["shards"] is False
    j = hoard.json("plan", "create", b, "--prefix", "s/", "--epochs", "1", "--seed", "2",
                   "--id", pid + "-sh", "--shards")
    assert hoard.json("plan", "show", pid + "-sh")["shards"] is True
    hoard.ok("plan", "rm", pid + "-sh")
    j = hoard.json("plan", "create", b, "--list", ",".join(keys[:2]), "--epochs", "1",
                   "--seed", "0")
    assert j["total"] == 2, j
    assert hoard.ok("plan", "rm", pid).stdout.decode().strip() == "deleted plan " + pid
    r = hoard("plan", "show", pid)
    assert r.returncode == 1 and b"No such plan" in r.stderr, r.stderr
    r = hoard("plan", "create", b, "--prefix", "s/", "--seed", "1")
    assert r.returncode == 2 and b"--epochs" in r.stderr, r.stderr
    r = hoard("plan", "create", b, "--prefix", "none/", "--epochs", "1", "--seed", "1")
    assert r.returncode == 1 and b"empty" in r.stderr, r.stderr


def test_pytorch_sampler_and_dataset(s3rver, two):  # noqa: F811
    """docs/examples/hoard_plan_torch.py: registers the plan, reads 2 epochs in the plan's
    order through DataLoader workers, tagged with the plan."""
    import subprocess
    pytest.importorskip("torch")
    b, keys = dataset(s3rver, two, 12)
    env = dict(os.environ, AWS_ACCESS_KEY_ID=C_KEYS[0], AWS_SECRET_ACCESS_KEY=C_KEYS[1])
    r = subprocess.run(["/usr/bin/python3", os.path.join(REPO, "docs", "examples",
                                                         "hoard_plan_torch.py"),
                        "--endpoint", two.url, "--bucket", b, "--prefix", "s/", "--epochs", "2",
                        "--seed", "9", "--plan", "torch-" + b, "--workers", "2"],
                       capture_output=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    assert r.stdout.decode().split("\n")[:2] == [
        "epoch %d: 12 samples, %d bytes" % (e, 12 * OBJ) for e in range(2)], r.stdout
    v = show(two, "torch-" + b)
    assert v["hits"] + v["misses"] == 24 and v["epoch"] == 2, v


def _owners(c, b, keys, ids_by_url):
    """Who owns each key now, as the proxy routes a GET (the 307's Location)."""
    out = {}
    for k in keys:
        r = c.api("GET", c.obj_path(b, k), follow=False)
        assert r.status_code == 307, r.text
        loc = r.headers["Location"]
        out[k] = next(i for u, i in ids_by_url.items() if loc.startswith(u + "/"))
    return out


def _shares_follow_placement(c, b, keys, pid, ids_by_url):
    """The plan's per-target shares when they are what placement says, else None."""
    own = _owners(c, b, keys, ids_by_url)
    want = {}
    for k, t in own.items():
        want[t] = want.get(t, 0) + 1
    v = show(c, pid)
    got = {t: tv["owned"] for t, tv in v["targets"].items() if tv["owned"]}
    return (v, own) if got == want and v["owned"] == len(keys) else None


def test_plan_split_again_when_targets_join_and_leave(s3rver, profiles, tmp_path_factory,
                                                       log_dir):  # noqa: F811
    """A target joins, then one leaves by decommission: the proxy splits the plan again by
    HRW, every target's share is what placement says, and the reader's place carries over
    (also to the new target, which then follows the reads it serves)."""
    with fresh(tmp_path_factory, log_dir, "plansplit", 2,
               ["--plan.workers", "1", "--plan.window", "2"]) as c:
        b, keys = dataset(s3rver, c, 40)
        pid = uname("resplit")
        register(c, {"id": pid, "bucket": b, "prefix": "s/", "epochs": 3, "seed": 5})
        order = hoard_plan.epoch_order(40, 5, 0)
        pos = {keys[d]: p for p, d in enumerate(order)}
        for p in range(10):
            read(c, b, keys, order[p], plan=pid)
        assert show(c, pid)["cursor"] == 9

        # a third target joins
        t3 = CNode("plansplit-t3", os.path.join(c.root, "t3"),
                   os.path.join(log_dir, "plansplit-t3"), "target", C_KEYS, c.secret,
                   lambda: c.proxy.url, [], 1)
        c.nodes.append(t3)
        c.registry.append(t3)
        c.targets.append(t3)
        t3.start()
        helpers.wait_until(lambda: len(c.smap()["tmap"]) == 3, timeout=30, what="t3 joined")
        ids = {n["public_net"]["direct_url"]: i for i, n in c.smap()["tmap"].items()}
        t3id = ids[t3.url]
        v, own = helpers.wait_until(lambda: _shares_follow_placement(c, b, keys, pid, ids),
                                    timeout=60, what="the plan split again over 3 targets")
        mine = [k for k, t in own.items() if t == t3id]
        assert mine and len(v["targets"]) == 3, v
        tv = v["targets"][t3id]
        # the new target starts where the reader is: positions 0..9 count as read there
        assert tv["epoch"] == 0 and tv["cursor"] == 9, tv
        assert tv["read_in_epoch"] == sum(1 for k in mine if pos[k] <= 9), tv
        # and follows the reads it serves from now on
        for p in range(10, 20):
            read(c, b, keys, order[p], plan=pid)
        tv = show(c, pid)["targets"][t3id]
        served = sum(1 for p in range(10, 20) if own[keys[order[p]]] == t3id)
        assert tv["hits"] + tv["misses"] == served, (tv, served)
        assert tv["read_in_epoch"] == sum(1 for k in mine if pos[k] <= 19), tv

        # an original target leaves (decommission): its share goes to the others
        leaver = sorted(i for i in ids.values() if i != t3id)[0]
        r = c.api("POST", "/v1/cluster/decommission/" + leaver, body={"on": True})
        assert r.status_code == 200, r.text
        left = {u: i for u, i in ids.items() if i != leaver}
        v, own = helpers.wait_until(lambda: _shares_follow_placement(c, b, keys, pid, left),
                                    timeout=90, what="the plan split again without the leaver")
        assert leaver not in set(own.values())
        for t, tv in v["targets"].items():
            if t != leaver:
                assert tv["epoch"] == 0 and tv["cursor"] == 19, (t, tv)
        assert sum(tv["owned"] for tv in v["targets"].values()) == 40, v
        assert c.api("DELETE", "/v1/plans/" + pid).status_code == 200


def test_tls_only_bucket_takes_no_plan_over_http(s3rver, one):  # noqa: F811
    """A bucket whose policy is AWS's "TLS only" Deny takes no epoch plan over plain HTTP
    (a plan lists the bucket and fills the cache from it); with the policy gone it does."""
    b, keys = dataset(s3rver, one, 4)
    policy = json.dumps({"Statement": [{
        "Effect": "Deny", "Principal": "*", "Action": "s3:*",
        "Resource": ["arn:aws:s3:::" + b, "arn:aws:s3:::%s/*" % b],
        "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]})
    r = one.api("PATCH", "/v1/buckets/" + b, body={"policy": policy})
    assert r.status_code == 200, r.text
    try:
        register(one, {"bucket": b, "keys": keys, "epochs": 1, "order": [[0, 1, 2, 3]]},
                 status=403)
    finally:  # DeleteBucketPolicy: the S3 policy calls stay open over plain HTTP
        r = one.api("DELETE", "/%s?policy" % b)
    assert r.status_code == 204, r.text
    time.sleep(1.0)  # time for a prefetch that should not happen (workers poll every 0.2 s)
    assert cached(one, b) == set()
    register(one, {"bucket": b, "keys": keys, "epochs": 1, "order": [[0, 1, 2, 3]]})
