"""Rebalance: a 1-proxy cluster that grows from 2 to 3 targets, loses one by decommission,
and takes one through maintenance. After each change every object must sit on exactly the
target DESIGN.md's HRW names (computed here), keep its bytes, ETag, metadata and content
type, and stay readable while it moves. Jobs are visible through the proxy; a rebalance
interrupted by a kill resumes when the target comes back.
"""
import os
import threading
import time
import urllib.parse
import uuid

import pytest
import requests

import helpers
from conftest import _TARGETS
from test_cluster import (Cluster, Node, api, hrw_owner, node_maker, put_many,  # noqa: F401
                          target_keys)


@pytest.fixture(scope="module")
def rcluster(tmp_path_factory, log_dir):
    make, nodes = node_maker(tmp_path_factory, log_dir, "rb-")
    p1 = make("p1", "proxy")
    p1.start()
    join = lambda: p1.url  # noqa: E731
    targets = [make("t%d" % i, "target", join) for i in (1, 2)]
    for t in targets:
        t.start()
    c = Cluster([p1], targets)
    c.make = make
    c.join = join
    c.wait_smap(lambda s: len(s["tmap"]) == 2, what="2 targets")
    wait_rebalanced(c)
    yield c
    problems = []
    for n in nodes:
        n.expect_alive = False
        n.stop()
        _TARGETS.remove(n)
        problems += n.sanitizer_reports()
    assert not problems, "sanitizer reports:\n" + "\n".join(problems[:20])


def wait_rebalanced(c, timeout=60):
    """Until the smap carries no rebalance mark; returns the smap."""
    return c.wait_smap(lambda s: "rebalance_id" not in s, timeout=timeout,
                       what="rebalance to finish")


def live_targets(c):
    return [t for t in c.targets if t.alive()]


def check_placement(c, bucket, keys):
    ids = {t.health()["id"]: t for t in live_targets(c)}
    s = c.primary.smap()
    eligible = [i for i, e in s["tmap"].items() if not e.get("flags")]
    held = {i: target_keys(t, bucket) for i, t in ids.items()}
    for k in keys:
        owner = hrw_owner("ais/@#/%s/%s" % (bucket, k), eligible)
        where = [i for i, names in held.items() if k in names]
        assert where == [owner], (k, where, owner)


def check_objects(c, bucket, keys, meta):
    for k in keys:
        r = api("GET", "%s/v1/objects/%s/%s" % (c.primary.url, bucket, qk(k)))
        assert r.status_code == 200, (k, r.status_code, r.text)
        assert r.content == body(k)
        m = meta[k]
        assert r.headers["ETag"] == m["etag"]
        assert r.headers["Last-Modified"] == m["lm"]
        assert r.headers.get("Content-Type") == m["ctype"]
        assert r.headers.get("x-amz-meta-origin") == m["origin"]
        # the stored headers and storage class move with it (X-Hoard-Obj-Meta)
        assert r.headers.get("Cache-Control") == "max-age=%s" % k[-1]
        assert r.headers.get("x-amz-storage-class") == ("GLACIER" if k[-1] in "02468" else None)
        # and so do the object tags (kept with the stored headers)
        assert r.headers.get("x-amz-tagging-count") == ("2" if k[-1] in "13579" else None), k


def body(k):
    return (k * 37).encode()


def qk(k):
    """k for a URL path, its dots escaped: requests would squash "a/../b" to "b"."""
    return urllib.parse.quote(k).replace(".", "%2E")


def fill(c, bucket, n, prefix="o"):
    keys = ["%s/%05d" % (prefix, i) for i in range(n)]

    def hdrs(k):
        h = {"Content-Type": "text/x-%s" % k[-1], "x-amz-meta-origin": "m-" + k,
             "Cache-Control": "max-age=%s" % k[-1]}
        if k[-1] in "02468":
            h["x-amz-storage-class"] = "GLACIER"
        else:
            h["x-amz-tagging"] = "origin=%s&digit=%s" % (urllib.parse.quote(k, safe=""), k[-1])
        return h

    def one(k):
        r = api("PUT", "%s/v1/objects/%s/%s" % (c.primary.url, bucket, qk(k)),
                data=body(k), headers=hdrs(k))
        assert r.status_code == 200, r.text
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(one, keys))
    meta = {}
    for k in keys:
        r = api("HEAD", "%s/v1/objects/%s/%s" % (c.primary.url, bucket, qk(k)))
        meta[k] = {"etag": r.headers["ETag"], "lm": r.headers["Last-Modified"],
                   "ctype": "text/x-%s" % k[-1], "origin": "m-" + k}
    return keys, meta


@pytest.fixture
def rbucket(rcluster):
    name = "rb-" + uuid.uuid4().hex[:12]
    r = api("POST", rcluster.primary.url + "/v1/buckets/" + name)
    assert r.status_code == 201, r.text
    return name


class Reader(threading.Thread):
    """Reads every key in a loop through the proxy and records anything but a 200."""

    def __init__(self, c, bucket, keys):
        super().__init__(daemon=True)
        self.c, self.bucket, self.keys = c, bucket, keys
        self.stop = threading.Event()
        self.failures, self.reads = [], 0

    def run(self):
        s = requests.Session()
        while not self.stop.is_set():
            for k in self.keys[::7]:
                if self.stop.is_set():
                    break
                url = "%s/v1/objects/%s/%s" % (self.c.primary.url, self.bucket,
                                               urllib.parse.quote(k))
                h = helpers.sign_headers("GET", url, *_keys())
                r = s.get(url, headers=h, timeout=30)
                self.reads += 1
                if r.status_code != 200 or r.content != body(k):
                    self.failures.append((k, r.status_code, r.text[:200]))


def _keys():
    from conftest import ACCESS_KEY, SECRET_KEY
    return ACCESS_KEY, SECRET_KEY


def test_join_rebalances_and_reads_keep_working(rcluster, rbucket):
    c = rcluster
    keys, meta = fill(c, rbucket, 400)
    # keys with dot segments are names like any other: they move too (libcurl squashed them)
    dkeys, dmeta = fill(c, rbucket, 40, prefix="dot/..")
    check_placement(c, rbucket, keys + dkeys)
    reader = Reader(c, rbucket, keys)
    reader.start()
    t3 = c.make("t3", "target", c.join)
    t3.start()
    c.targets.append(t3)
    s = c.wait_smap(lambda s: len(s["tmap"]) == 3, what="t3 in the smap")
    rid = s.get("rebalance_id") or c.primary.smap().get("rebalance_id")
    s = wait_rebalanced(c)
    reader.stop.set()
    reader.join()
    assert not reader.failures, reader.failures[:5]
    assert reader.reads > 0
    check_placement(c, rbucket, keys + dkeys)
    t3_id = t3.health()["id"]
    moved = target_keys(t3, rbucket)
    assert moved, "no object moved to the new target"
    assert set(moved) & set(dkeys), "no dot-segment key moved to the new target"
    check_objects(c, rbucket, keys, meta)
    check_objects(c, rbucket, dkeys, dmeta)

    # the job, as the proxy shows it
    jobs = api("GET", c.primary.url + "/v1/jobs").json()["jobs"]
    rb = [j for j in jobs if j["kind"] == "rebalance"]
    assert rb and all(j["state"] == "done" for j in rb)
    last = max(rb, key=lambda j: j["started_ms"])
    if rid:
        assert last["id"] == rid
    j = api("GET", c.primary.url + "/v1/jobs/" + last["id"]).json()
    assert j["nodes"] == 3 and set(j["targets"]) >= {t3_id}
    assert j["stats"]["moved_objects"] >= len(moved)
    assert j["error_count"] == 0
    r = api("GET", c.primary.url + "/v1/jobs/nosuch")
    helpers.check_json_error(r, 404, "NoSuchJob")


def test_write_during_rebalance_not_undone(rcluster, rbucket):
    """A newer write at the new owner survives the old owner's rebalance copy."""
    c = rcluster
    keys, meta = fill(c, rbucket, 150, prefix="w")
    # force a rebalance with nothing changed in membership: objects are home, so it is a
    # no-op, but it must not touch them
    r = api("POST", c.primary.url + "/v1/cluster/rebalance")
    assert r.status_code == 202, r.text
    wait_rebalanced(c)
    check_placement(c, rbucket, keys)
    check_objects(c, rbucket, keys, meta)


def test_maintenance_reads_then_objects_return(rcluster, rbucket):
    c = rcluster
    keys, meta = fill(c, rbucket, 200, prefix="m")
    ids = {t.health()["id"]: t for t in live_targets(c)}
    tid = sorted(ids)[0]
    r = api("POST", "%s/v1/cluster/maintenance/%s" % (c.primary.url, tid), data=b'{"on": true}')
    assert r.status_code == 200, r.text
    c.wait_converged()
    # objects on the target in maintenance are found by their substitute owners
    check_objects(c, rbucket, keys, meta)
    # a write while in maintenance lands elsewhere and wins after the return
    k = next(k for k in keys if k in target_keys(ids[tid], rbucket))
    r = api("PUT", "%s/v1/objects/%s/%s" % (c.primary.url, rbucket, urllib.parse.quote(k)),
            data=b"newer", headers={"Content-Type": "text/x-new",
                                    "x-amz-meta-origin": "newer"})
    assert r.status_code == 200
    r = api("POST", "%s/v1/cluster/maintenance/%s" % (c.primary.url, tid),
            data=b'{"on": false}')
    assert r.status_code == 200, r.text
    wait_rebalanced(c)
    check_placement(c, rbucket, keys)
    r = api("GET", "%s/v1/objects/%s/%s" % (c.primary.url, rbucket, urllib.parse.quote(k)))
    assert r.status_code == 200 and r.content == b"newer", (r.status_code, r.content[:40])
    rest = [x for x in keys if x != k]
    check_objects(c, rbucket, rest, meta)


def test_interrupted_rebalance_resumes(rcluster, rbucket):
    c = rcluster
    keys, meta = fill(c, rbucket, 1500, prefix="i")
    wait_rebalanced(c)
    ids = {t.health()["id"]: t for t in live_targets(c)}
    victim_id = sorted(ids)[-1]
    victim = ids[victim_id]
    # decommission another target so the victim has objects to receive and send: kill the
    # victim while its share is running
    leaver_id = sorted(ids)[0]
    victim.mark_log()
    r = api("POST", "%s/v1/cluster/decommission/%s" % (c.primary.url, leaver_id),
            data=b'{"on": true}')
    assert r.status_code == 200, r.text
    leaver = ids[leaver_id]
    leaver.mark_log()

    def running():
        s = c.primary.smap()
        rid = s.get("rebalance_id")
        if not rid:
            return None
        r = api("GET", "%s/v1/jobs/%s" % (c.primary.url, rid))
        if r.status_code != 200:
            return None
        j = r.json()
        t = j.get("targets", {}).get(leaver_id)
        return t if t and t["state"] == "running" and t["objects"] > 0 else None

    helpers.wait_until(running, timeout=30, interval=0.02, what="the leaver's share running")
    leaver.kill9()
    leaver.start()
    wait_rebalanced(c, timeout=90)
    assert "was interrupted: resuming" in leaver.log_tail(400, since_mark=True)
    # the decommissioned target left the smap, holds nothing, and may not rejoin
    s = c.primary.smap()
    assert leaver_id not in s["tmap"] and leaver_id not in s.get("tmap_down", {})
    c.targets.remove(leaver)
    assert target_keys_direct_count(leaver, rbucket) == 0
    check_placement(c, rbucket, keys)
    check_objects(c, rbucket, keys, meta)
    # it heartbeats, is told it is unknown, tries to join again and is refused for good
    helpers.wait_until(lambda: "was decommissioned" in leaver.log_tail(400, since_mark=True),
                       timeout=20, what="the leaver to be refused")
    assert leaver_id not in c.primary.smap()["tmap"]
    leaver.stop()


def target_keys_direct_count(t, bucket):
    return len(target_keys(t, bucket))


def holders(c, bucket, key):
    return sorted(i for i, t in {t.health()["id"]: t for t in live_targets(c)}.items()
                  if key in target_keys(t, bucket))


def test_delete_while_objects_move_stays_deleted(rcluster, rbucket):
    """A delete while a target is in maintenance removes every copy (the substitute's copy
    fetched by GFN, and the original still on the target in maintenance), and neither GFN
    nor the rebalance after maintenance brings it back."""
    c = rcluster
    keys, meta = fill(c, rbucket, 120, prefix="d")
    ids = {t.health()["id"]: t for t in live_targets(c)}
    tid = sorted(ids)[0]
    mine = sorted(target_keys(ids[tid], rbucket))
    assert len(mine) >= 2
    read_first, untouched = mine[0], mine[1]
    r = api("POST", "%s/v1/cluster/maintenance/%s" % (c.primary.url, tid), data=b'{"on": true}')
    assert r.status_code == 200, r.text
    c.wait_converged()
    url = lambda k: "%s/v1/objects/%s/%s" % (c.primary.url, rbucket, urllib.parse.quote(k))  # noqa
    assert api("GET", url(read_first)).status_code == 200  # GFN: now on two targets
    assert len(holders(c, rbucket, read_first)) == 2
    for k in (read_first, untouched):
        r = api("DELETE", url(k))
        assert r.status_code == 204, (k, r.status_code, r.text)
        assert holders(c, rbucket, k) == [], k
        r = api("GET", url(k))
        assert r.status_code == 404, (k, r.status_code)
    r = api("POST", "%s/v1/cluster/maintenance/%s" % (c.primary.url, tid),
            data=b'{"on": false}')
    assert r.status_code == 200, r.text
    wait_rebalanced(c)
    for k in (read_first, untouched):
        assert api("GET", url(k)).status_code == 404, k
        assert holders(c, rbucket, k) == [], k
    rest = [k for k in keys if k not in (read_first, untouched)]
    check_placement(c, rbucket, rest)
    check_objects(c, rbucket, rest, meta)


def test_gfn_only_on_the_owner(rcluster, rbucket):
    """A GET that reaches a target which does not own the object (a stale redirect) while
    objects move answers 404 and plants no copy there."""
    from test_cluster import node_headers, node_id
    c = rcluster
    if len(live_targets(c)) < 3:  # an earlier test decommissioned one
        t = c.make("t%d" % (len(c.targets) + 1), "target", c.join)
        t.start()
        c.targets.append(t)
        c.wait_smap(lambda s: len(s["tmap"]) >= 3, what="a third target")
        wait_rebalanced(c)
    keys, _ = fill(c, rbucket, 40, prefix="g")
    ids = {t.health()["id"]: t for t in live_targets(c)}
    tid = sorted(ids)[0]
    r = api("POST", "%s/v1/cluster/maintenance/%s" % (c.primary.url, tid), data=b'{"on": true}')
    assert r.status_code == 200, r.text
    try:
        c.wait_converged()
        s = c.primary.smap()
        eligible = [i for i, e in s["tmap"].items() if not e.get("flags")]
        k = next(k for k in keys if k in target_keys(ids[tid], rbucket))
        owner = hrw_owner("ais/@#/%s/%s" % (rbucket, k), eligible)
        other = next(i for i in eligible if i != owner)
        url = ids[other].url + "/v1/objects/%s/%s" % (rbucket, urllib.parse.quote(k))
        r = requests.get(url, timeout=10, headers=node_headers("GET", url, other,
                                                               node_id(c.primary)))
        assert r.status_code == 404, r.text
        assert k not in target_keys(ids[other], rbucket)
    finally:
        r = api("POST", "%s/v1/cluster/maintenance/%s" % (c.primary.url, tid),
                data=b'{"on": false}')
        assert r.status_code == 200, r.text
        wait_rebalanced(c)


def test_tags_while_in_maintenance(rcluster, rbucket):
    """PutObjectTagging, DeleteObjectTagging and GetObjectTagging of objects that sit on a target
    in maintenance reach their substitute owner, which fetches the object first
    (get-from-neighbour) and, for a change, deletes the copy left behind (which has the same
    ETag and mtime and would otherwise win when the target returns): the tags set meanwhile
    are the object's after the return."""
    from test_cluster import s3client
    c = rcluster
    keys, meta = fill(c, rbucket, 60, prefix="tm")
    ids = {t.health()["id"]: t for t in live_targets(c)}
    tid = sorted(ids)[0]
    mine = sorted(k for k in target_keys(ids[tid], rbucket))
    assert len(mine) >= 3, mine
    tagged, untagged, read_only = mine[0], mine[1], mine[2]
    s3 = s3client(c.primary)

    def tags(k):
        return [(t["Key"], t["Value"]) for t in s3.get_object_tagging(Bucket=rbucket,
                                                                      Key=k)["TagSet"]]
    r = api("POST", "%s/v1/cluster/maintenance/%s" % (c.primary.url, tid), data=b'{"on": true}')
    assert r.status_code == 200, r.text
    try:
        c.wait_converged()
        s3.put_object_tagging(Bucket=rbucket, Key=tagged,
                              Tagging={"TagSet": [{"Key": "set", "Value": "in maintenance"}]})
        assert tags(tagged) == [("set", "in maintenance")]
        s3.delete_object_tagging(Bucket=rbucket, Key=untagged)
        assert tags(untagged) == []
        before = tags(read_only)  # a read fetches a copy, changes nothing
        assert len(before) == (2 if read_only[-1] in "13579" else 0), before
        with pytest.raises(Exception) as ei:
            s3.put_object_tagging(Bucket=rbucket, Key="tm/absent",
                                  Tagging={"TagSet": [{"Key": "a", "Value": "1"}]})
        assert "NoSuchKey" in str(ei.value), ei.value
    finally:
        r = api("POST", "%s/v1/cluster/maintenance/%s" % (c.primary.url, tid),
                data=b'{"on": false}')
        assert r.status_code == 200, r.text
    wait_rebalanced(c)
    check_placement(c, rbucket, keys)
    assert tags(tagged) == [("set", "in maintenance")]
    assert tags(untagged) == []
    assert tags(read_only) == before
    check_objects(c, rbucket, [k for k in keys if k not in (tagged, untagged)], meta)


class DevNode(Node):
    """A node of a cluster without cluster.secret and without auth.keys (dev mode)."""

    def cmdline(self):
        args = Node.cmdline(self)
        out, skip = [], 0
        for a in args:
            if skip:
                skip -= 1
                continue
            if a in ("--auth.keys", "--cluster.secret"):
                skip = 1
                continue
            out.append(a)
        return out


def test_dev_mode_rebalance_keeps_object_identity(tmp_path_factory, log_dir):
    """Without a cluster secret nothing is signed, and rebalance must still move objects
    with their ETag, mtime, content type and user metadata."""
    nodes = []

    def make(name, role, join=None):
        root = str(tmp_path_factory.mktemp("dev-" + name))
        n = DevNode(name, root, os.path.join(log_dir, "dev-" + name), role, join)
        nodes.append(n)
        _TARGETS.append(n)
        return n
    try:
        p1 = make("p1", "proxy")
        p1.start()
        targets = [make("t%d" % i, "target", lambda: p1.url) for i in (1, 2)]
        for t in targets:
            t.start()
        c = Cluster([p1], targets)
        c.wait_smap(lambda s: len(s["tmap"]) == 2, what="2 targets")
        wait_rebalanced(c)
        b = "dev-" + uuid.uuid4().hex[:8]
        assert requests.post(p1.url + "/v1/buckets/" + b, timeout=10).status_code == 201
        keys, meta = fill(c, b, 150, prefix="v")
        t3 = make("t3", "target", lambda: p1.url)
        t3.start()
        c.targets.append(t3)
        c.wait_smap(lambda s: len(s["tmap"]) == 3, what="t3")
        wait_rebalanced(c)
        assert target_keys(t3, b), "nothing moved"
        check_placement(c, b, keys)
        check_objects(c, b, keys, meta)
    finally:
        for n in nodes:
            n.stop()
            _TARGETS.remove(n)


def test_auth_keys_without_secret_refused(tmp_path):
    """A cluster node with auth.keys but no cluster.secret would trust forged redirects: it
    refuses to start, saying why."""
    import subprocess
    from conftest import BIN_DIR
    out = subprocess.run([os.path.join(BIN_DIR, "hoardd"), "--role", "proxy", "--listen",
                          "127.0.0.1:0", "--data", str(tmp_path), "--auth.keys", "A:B"],
                         capture_output=True, text=True, timeout=20)
    assert out.returncode != 0
    assert "cluster.secret" in out.stderr, out.stderr


def test_delete_job_overlapping_a_join_leaves_no_copy(rcluster, rbucket):
    """delete-listrange started while a joining target's rebalance moves objects: a copy that
    lands on a target after that target's pass went by its name is deleted by the pass the
    job repeats once the rebalance is over. Every selected object is gone from every target
    (and stays gone), every other one is in place with its bytes and metadata."""
    import json
    c = rcluster
    keys, meta = fill(c, rbucket, 300, prefix="j")
    sel, keep = keys[::2], keys[1::2]
    t = c.make("t-join-del", "target", c.join)  # its own name: its own log directory
    t.start()
    c.targets.append(t)
    c.wait_smap(lambda s: len(s["tmap"]) == len(live_targets(c)), what="the new target")
    r = api("DELETE", "%s/v1/buckets/%s" % (c.primary.url, rbucket),
            data=json.dumps({"action": "delete-listrange", "value": {"objnames": sel}}),
            headers={"Content-Type": "application/json"})
    assert r.status_code == 200, r.text
    jid = r.text.strip().strip('"')

    last = []

    def done():  # a 503 while a target of the map does not answer yet: asked again
        r = api("GET", "%s/v1/jobs/%s" % (c.primary.url, jid))
        last[:] = [r.status_code, r.text[:300]]
        j = r.json() if r.status_code == 200 else {}
        return j if j.get("state") in ("done", "failed", "aborted") else None
    j = helpers.wait_until(done, timeout=120, what="the delete job (last answer %s)" % last)
    assert j["state"] == "done" and j["error_count"] == 0, j
    wait_rebalanced(c)
    gone = set(sel)
    for tg in live_targets(c):
        left = gone & target_keys(tg, rbucket)
        assert not left, (tg.name, sorted(left)[:5])
    check_placement(c, rbucket, keep)
    check_objects(c, rbucket, keep, meta)
