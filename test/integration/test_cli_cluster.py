"""`hoard cluster ...` and `hoard job ...` against a real cluster (1 proxy + 3 targets, SigV4
keys and a cluster secret as in test_cluster.py): cluster show with mountpath capacity checked
against statvfs of the test dirs, maintenance on/off, rebalance ids that `job wait` follows,
decommission followed by `job wait` with every object still readable, job ls/show JSON shapes,
and clear errors for bad input. The exit codes and progress output of `job wait` for jobs
that fail, time out or start late are checked against a scripted server (FakeServer).
"""
import json
import os
import re
import threading
import urllib.parse
import uuid
from types import SimpleNamespace

import pytest
import requests

import helpers
from conftest import _TARGETS
from test_cli import BIN_DIR, FakeServer, Hoard
from test_cluster import Cluster, Node, api, put_many, target_keys

MiB = 1 << 20


@pytest.fixture(scope="module")
def ccluster(tmp_path_factory, log_dir):
    """1 proxy + 3 targets. (Once conftest has a shared cluster starter, use it here.)"""
    nodes = []

    def make(name, role, join=None):
        n = Node(name, str(tmp_path_factory.mktemp("cc-" + name)),
                 os.path.join(log_dir, "cc-" + name), role, join)
        nodes.append(n)
        _TARGETS.append(n)
        return n.start()

    try:
        p1 = make("p1", "proxy")
        c = Cluster([p1], [make("t%d" % i, "target", lambda: p1.url) for i in (1, 2, 3)])
        c.wait_smap(lambda s: len(s["tmap"]) == 3, what="3 targets")
        wait_no_rebalance(c)
        yield c
    finally:
        reports = []
        for n in nodes:
            n.stop()
            _TARGETS.remove(n)
            reports += n.sanitizer_reports()
    assert not reports, "sanitizer reports:\n" + "\n".join(reports[:20])


def wait_no_rebalance(c, timeout=60):
    return c.wait_smap(lambda s: "rebalance_id" not in s, timeout=timeout,
                       what="rebalance to finish")


@pytest.fixture
def hoard(ccluster, tmp_path):
    return Hoard(ccluster.primary, tmp_path)


@pytest.fixture
def ccbucket(ccluster):
    name = "cc-" + uuid.uuid4().hex[:12]
    r = api("POST", ccluster.primary.url + "/v1/buckets/" + name)
    assert r.status_code == 201, r.text
    return name


def one_line_error(r, code, pattern):
    """Exit code `code`, nothing on stdout, one line on stderr matching pattern."""
    err = r.stderr.decode()
    assert r.returncode == code, (r.returncode, err)
    assert r.stdout == b"", r.stdout
    assert err.count("\n") == 1 and re.match(pattern, err), err
    return err


def statvfs_numbers(path):
    v = os.statvfs(path)
    return {"total": v.f_blocks * v.f_frsize, "free": v.f_bfree * v.f_frsize,
            "available": v.f_bavail * v.f_frsize}


def mountpath_objects(view):
    return {n["id"]: sum(m["objects"] for m in n["mountpaths"])
            for n in view["nodes"] if n["role"] == "target"}


# ---- cluster show ----------------------------------------------------------------------


def test_cluster_show(ccluster, hoard, ccbucket):
    c = ccluster
    ids = c.ids()
    before = mountpath_objects(hoard.json("cluster", "show"))
    keys = ["show/%03d" % i for i in range(60)]
    put_many(c.proxies, ccbucket, keys)
    view = hoard.json("cluster", "show")

    smap = c.primary.smap()
    assert view["smap_version"] == smap["version"] and view["uuid"] == smap["uuid"]
    assert view["primary"] == c.primary.health()["id"]
    assert view["rebalance_id"] is None
    nodes = {n["id"]: n for n in view["nodes"]}
    assert set(nodes) == set(ids) | {view["primary"]}
    assert [n["role"] for n in view["nodes"]] == ["proxy", "target", "target", "target"]
    p = nodes[view["primary"]]
    assert p["primary"] is True and p["url"] == c.primary.url and p["state"] == "online"
    for tid, t in ids.items():
        n = nodes[tid]
        assert (n["role"], n["primary"], n["url"], n["state"], n["flags"]) == \
            ("target", False, t.url, "online", 0), n
        assert 0 <= n["heartbeat_age_ms"] < 5000
        assert "capacity_error" not in n, n
        assert sorted(os.path.realpath(m["path"]) for m in n["mountpaths"]) == \
            sorted(os.path.realpath(m) for m in t.mountpaths)
        for m in n["mountpaths"]:
            want = statvfs_numbers(m["path"])
            tol = max(256 * MiB, want["total"] // 100)  # other processes write meanwhile
            assert m["total"] == want["total"], (m, want)
            assert m["used"] == m["total"] - m["free"]
            assert abs(m["free"] - want["free"]) <= tol, (m, want)
            assert abs(m["available"] - want["available"]) <= tol, (m, want)
            used, avail = m["used"], m["available"]
            assert m["percent_used"] == -(-used * 100 // (used + avail))  # df: rounded up
            assert m["fsid"]
    # object counts per mountpath add up to what each target holds
    after = mountpath_objects(view)
    for tid, t in ids.items():
        assert after[tid] - before[tid] == len(target_keys(t, ccbucket)), tid
    assert sum(after.values()) - sum(before.values()) == len(keys)

    # the human view: every node with its role and state, every mountpath with a percentage
    out = hoard.ok("cluster", "show").stdout.decode()
    lines = out.splitlines()
    assert lines[0] == "cluster %s, smap v%d, primary %s" % (view["uuid"], view["smap_version"],
                                                             view["primary"])
    assert lines[1] == "rebalance: none in progress"
    assert re.search(r"^%s\s+proxy \(primary\)\s+%s\s+online\s+-$" %
                     (view["primary"], re.escape(c.primary.url)), out, re.M), out
    for tid, t in ids.items():
        assert re.search(r"^%s\s+target\s+%s\s+online\s+\d.* ago$" % (tid, re.escape(t.url)),
                         out, re.M), out
        for m in nodes[tid]["mountpaths"]:
            assert re.search(r"^%s\s+%s\s+\S+ \S+\s+\S+ \S+\s+\S+ \S+\s+%d%%\s+%d$" %
                             (tid, re.escape(m["path"]), m["percent_used"], m["objects"]),
                             out, re.M), out


def test_capacity_endpoint_needs_a_key(ccluster):
    r = requests.get(ccluster.primary.url + "/v1/cluster/capacity", timeout=10)
    helpers.check_json_error(r, 403, "AccessDenied")
    # targets answer /v1/daemon only to a proxy (or a key), like every other call
    t = ccluster.targets[0]
    r = requests.get(t.url + "/v1/daemon", timeout=10)
    assert r.status_code == 403, r.text
    r = api("GET", ccluster.primary.url + "/v1/cluster/capacity")
    assert r.status_code == 200 and set(r.json()["targets"]) == set(ccluster.ids())


# ---- maintenance -----------------------------------------------------------------------


def test_maintenance_on_off(ccluster, hoard):
    c = ccluster
    tid = sorted(c.ids())[0]
    r = hoard.ok("cluster", "maintenance", tid)
    assert re.match(r"^%s: maintenance on: .*\(smap v\d+\)\n" % tid, r.stdout.decode()), r.stdout
    assert c.primary.smap()["tmap"][tid]["flags"] == 1
    node = {n["id"]: n for n in hoard.json("cluster", "show")["nodes"]}[tid]
    assert node["state"] == "maintenance" and node["flags"] == 1
    assert re.search(r"^%s\s+target\s+\S+\s+maintenance\s" % tid,
                     hoard.ok("cluster", "show").stdout.decode(), re.M)

    j = hoard.json("cluster", "maintenance", tid, "--off")
    assert j["node"] == tid and j["maintenance"] is False and j["in_smap"] is True
    assert j["smap_version"] >= c.primary.smap()["version"] - 1
    assert c.primary.smap()["tmap"][tid]["flags"] == 0
    node = {n["id"]: n for n in hoard.json("cluster", "show")["nodes"]}[tid]
    assert node["state"] == "online" and node["flags"] == 0
    # objects return to the target after maintenance: a rebalance, which job wait follows
    rid = j["rebalance_id"]
    assert rid, j
    r = hoard.ok("job", "wait", rid, "--timeout", "120")
    assert r.stdout.decode().startswith("%s done in " % rid), r.stdout
    wait_no_rebalance(c)


# ---- rebalance and jobs ----------------------------------------------------------------


JOB_KEYS = {"id", "kind", "bucket", "args", "state", "started_ms", "finished_ms", "errors",
            "stats", "nodes", "objects", "bytes", "total_objects", "total_bytes", "error_count"}


def test_rebalance_and_job_json(ccluster, hoard, ccbucket):
    c = ccluster
    put_many(c.proxies, ccbucket, ["rb/%03d" % i for i in range(40)])
    wait_no_rebalance(c)
    j = hoard.json("cluster", "rebalance")
    rid = j["id"]
    assert j["status"] == "rebalance requested" and rid.startswith("rebalance-"), j
    # the id is marked in the cluster map before the answer: job wait finds it at once, even
    # before a target has started it, and follows it to its end
    assert int(rid.rsplit("v", 1)[1]) <= c.primary.smap()["version"]
    r = hoard.ok("cluster", "rebalance")
    rid2 = re.match(r"^rebalance (rebalance-v\d+) requested; follow it with: hoard job wait "
                    r"(rebalance-v\d+)\n$", r.stdout.decode()).group(1)
    assert rid2 != rid
    r = hoard.ok("job", "wait", rid2)
    assert re.match(r"^%s done in .*: \d+ objects, .*, 0 errors" % rid2, r.stdout.decode())
    assert c.primary.smap().get("rebalance_id") is None
    # the first was replaced by the second: done before it came, stopped by it, or never
    # started; job wait says which and never claims success for a job that did not finish
    r = hoard("job", "wait", rid)
    if r.returncode == 0:
        assert r.stdout.decode().startswith("%s done in " % rid)
    else:
        assert r.returncode == 1 and re.match(
            r"^hoard: job wait %s: (the job was aborted|NoSuchJob: )" % rid,
            r.stderr.decode().splitlines()[-1]), r.stderr
    rid = rid2

    doc = hoard.json("job", "ls")
    assert set(doc) == {"jobs"}
    mine = [x for x in doc["jobs"] if x["id"] == rid]
    assert len(mine) == 1 and JOB_KEYS <= set(mine[0]), mine
    assert mine[0]["kind"] == "rebalance" and mine[0]["state"] == "done"
    assert mine[0]["nodes"] == 3 and mine[0]["error_count"] == 0

    show = hoard.json("job", "show", rid)
    assert JOB_KEYS | {"targets"} <= set(show)
    assert set(show["targets"]) == set(c.ids())
    assert show["objects"] == sum(t["objects"] for t in show["targets"].values())
    assert show["total_objects"] >= 40
    for t in show["targets"].values():
        assert t["state"] == "done" and t["id"] == rid

    out = hoard.ok("job", "ls").stdout.decode().splitlines()
    assert re.match(r"^ID\s+KIND\s+STATE\s+STARTED\s+TOOK\s+OBJECTS\s+BYTES\s+ERRORS$", out[0])
    started = [x["started_ms"] for x in sorted(doc["jobs"], key=lambda x: -x["started_ms"])]
    assert len(out) == 1 + len(started)
    assert any(re.match(r"^%s\s+rebalance\s+done\s+\d{4}-\d\d-\d\dT" % rid, ln) for ln in out)
    text = hoard.ok("job", "show", rid).stdout.decode()
    assert re.search(r"^state\s+done$", text, re.M) and re.search(r"^targets\s+3$", text, re.M)
    for tid in c.ids():
        assert re.search(r"^%s\s+done\s" % tid, text, re.M), text

    # stopping a finished job changes nothing and says so
    r = hoard.ok("job", "stop", rid)
    assert r.stdout.decode() == "%s is not running (done)\n" % rid
    assert hoard.json("job", "show", rid)["state"] == "done"


# ---- bad input -------------------------------------------------------------------------


def test_bad_input(ccluster, hoard):
    c = ccluster
    one_line_error(hoard("cluster", "maintenance", "tnosuch"), 1,
                   r"^hoard: cluster maintenance tnosuch: NotFound: No such target")
    one_line_error(hoard("cluster", "decommission", "tnosuch"), 1,
                   r"^hoard: cluster decommission tnosuch: NotFound: No such target")
    pid = c.primary.health()["id"]  # a proxy is no target
    one_line_error(hoard("cluster", "maintenance", pid), 1,
                   r"^hoard: cluster maintenance %s: NotFound: " % pid)
    for verb in ("show", "wait", "stop"):
        one_line_error(hoard("job", verb, "nosuch-job"), 1,
                       r"^hoard: job %s nosuch-job: NoSuchJob: " % verb)
    # usage errors: exit 2, the message, then the noun's usage
    for args, msg in ((["cluster", "frob"], "unknown command 'cluster frob'"),
                      (["job"], "missing verb for 'job'"),
                      (["cluster", "maintenance"], "'cluster maintenance' takes arguments NODE"),
                      (["cluster", "show", "--off"], "unknown option '--off' for 'cluster show'"),
                      (["job", "wait", "x", "--timeout", "soon"], "bad --timeout 'soon'"),
                      (["job", "wait", "x", "--timeout", "0"], "bad --timeout '0'")):
        r = hoard(*args)
        err = r.stderr.decode()
        assert r.returncode == 2 and err.startswith("hoard: " + msg), (args, err)
        assert "usage: hoard" in err
    # nothing changed on the way
    assert all(e["flags"] == 0 for e in c.primary.smap()["tmap"].values())


def test_cluster_commands_need_credentials(ccluster, hoard):
    r = hoard("cluster", "maintenance", sorted(ccluster.ids())[0], creds=False)
    err = one_line_error(r, 1, r"^hoard: cluster maintenance \S+: AccessDenied: ")
    assert "AWS_ACCESS_KEY_ID" in err
    r = hoard("cluster", "show", env={"AWS_SECRET_ACCESS_KEY": "wrong"})
    assert r.returncode == 1 and b"SignatureDoesNotMatch" in r.stderr


# ---- decommission (last: the cluster has 2 targets afterwards) ---------------------------


def test_decommission_and_wait(ccluster, hoard, ccbucket):
    c = ccluster
    keys = ["dc/%04d" % i for i in range(300)]

    def body(k):
        return ("%s|" % k).encode() * 50
    put_many(c.proxies, ccbucket, keys, body=body)
    wait_no_rebalance(c)
    ids = c.ids()
    leaver_id = max(ids, key=lambda i: len(target_keys(ids[i], ccbucket)))
    assert target_keys(ids[leaver_id], ccbucket)

    # a reader goes through the keys over and over while the leaver's objects move
    stop, failures, reads = threading.Event(), [], [0]

    def reader():
        s = requests.Session()
        from conftest import ACCESS_KEY, SECRET_KEY
        while not stop.is_set():
            for k in keys[::5]:
                url = "%s/v1/objects/%s/%s" % (c.primary.url, ccbucket, urllib.parse.quote(k))
                r = s.get(url, timeout=30,
                          headers=helpers.sign_headers("GET", url, ACCESS_KEY, SECRET_KEY))
                reads[0] += 1
                if r.status_code != 200 or r.content != body(k):
                    failures.append((k, r.status_code, r.text[:200]))
    th = threading.Thread(target=reader, daemon=True)
    th.start()
    j = hoard.json("cluster", "decommission", leaver_id)
    assert j["node"] == leaver_id and j["decommission"] is True and j["in_smap"] is True
    rid = j["rebalance_id"]
    assert rid
    r = hoard("--json", "job", "wait", rid, "--timeout", "180")
    stop.set()
    th.join()
    assert r.returncode == 0, r.stderr.decode()
    assert not failures, failures[:5]
    assert reads[0] > 0
    done = json.loads(r.stdout)
    assert done["id"] == rid and done["state"] == "done" and done["error_count"] == 0
    # the leaver drops out of the merged view once it is removed; job wait keeps its last
    # report when it saw one
    assert leaver_id not in done["targets"]
    assert set(done.get("left_targets", {leaver_id: 0})) == {leaver_id}
    out = hoard.ok("job", "wait", rid).stdout.decode()  # finished: answers at once
    assert re.match(r"^%s done in .*, 0 errors\n$" % rid, out), out
    # the leaver is gone from the map, and from `cluster show`
    s = c.primary.smap()
    assert leaver_id not in s["tmap"] and leaver_id not in s.get("tmap_down", {})
    view = hoard.json("cluster", "show")
    assert leaver_id not in {n["id"] for n in view["nodes"]}
    assert len([n for n in view["nodes"] if n["role"] == "target"]) == 2
    # every object is still readable through the proxy, with its bytes
    for k in keys:
        r = api("GET", "%s/v1/objects/%s/%s" % (c.primary.url, ccbucket, urllib.parse.quote(k)))
        assert r.status_code == 200 and r.content == body(k), (k, r.status_code)
    assert sum(mountpath_objects(view).values()) >= len(keys)
    c.targets.remove(ids[leaver_id])


# ---- job wait against a scripted server --------------------------------------------------


def job_doc(jid, state, objs, total, nerr=0, kind="export", errors=(), result=None):
    t = {"id": jid, "kind": kind, "state": state, "objects": objs, "total_objects": total,
         "bytes": objs * MiB, "total_bytes": 0, "error_count": nerr, "errors": list(errors),
         "started_ms": 1, "finished_ms": 0 if state == "running" else 2, "stats": {}}
    if result:
        t["result"] = result
    d = dict(t, nodes=1, bucket="", args={}, targets={"t1": t})
    return d


class Script:
    """Answers GET /v1/jobs/ID from a list of (status, doc) (the last repeats) and GET
    /v1/cluster from a list of rebalance marks (likewise)."""

    def __init__(self, jobs, marks=(None,)):
        self.jobs, self.marks = list(jobs), list(marks)
        self.nj = self.nm = 0

    def __call__(self, rec):
        h = {"Content-Type": "application/json"}
        if rec["path"] == "/v1/cluster":
            m = self.marks[min(self.nm, len(self.marks) - 1)]
            self.nm += 1
            doc = {"version": 3, "tmap": {}, "pmap": {}}
            if m:
                doc["rebalance_id"] = m
            return 200, h, json.dumps(doc).encode()
        if rec["path"].startswith("/v1/jobs/"):
            st, doc = self.jobs[min(self.nj, len(self.jobs) - 1)]
            self.nj += 1
            if st != 200:
                doc = {"status": st, "code": "NoSuchJob", "message": "The specified job does "
                       "not exist."}
            return st, h, json.dumps(doc).encode()
        return 404, h, b'{"code":"NotFound","message":"no"}'


@pytest.fixture
def scripted(tmp_path):
    started = []

    def start(script):
        s = FakeServer(script, answer_early=False)
        started.append(s)
        return Hoard(SimpleNamespace(url=s.url, bin_dir=BIN_DIR), tmp_path), s

    yield start
    for s in started:
        s.close()


def test_wait_progress_and_errors(scripted):
    h, _ = scripted(Script([(200, job_doc("j1", "running", 1, 4)),
                            (200, job_doc("j1", "running", 3, 4)),
                            (200, job_doc("j1", "done", 4, 4, nerr=2,
                                          errors=["t1: a/b: disk on fire", "t1: a/c: gone"]))]))
    r = h("job", "wait", "j1", env={"HOARD_PROGRESS": "1"})
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert r.stdout.decode().startswith("j1 done in "), r.stdout
    assert "\rj1 running  1 / 4 objects   25%" in err and "\rj1 running  3 / 4 objects   75%" in err
    assert "  t1: a/b: disk on fire\n  t1: a/c: gone\n" in err
    assert err.endswith("hoard: job wait j1: the job finished with 2 errors\n"), err
    # not on a terminal: plain lines (the first poll's at once), no carriage returns
    h2, _ = scripted(Script([(200, job_doc("j2", "running", 1, 4)),
                             (200, job_doc("j2", "done", 4, 4))]))
    r = h2("job", "wait", "j2")
    assert r.returncode == 0, r.stderr
    assert r.stderr.decode().startswith("j2 running  1 / 4 objects   25%")
    assert b"\r" not in r.stderr
    assert r.stdout.decode().startswith("j2 done in ")


def test_wait_failed_and_timeout(scripted):
    h, _ = scripted(Script([(200, job_doc("j3", "failed", 1, 4, result="No space left"))]))
    r = h("--json", "job", "wait", "j3")
    assert r.returncode == 1
    assert json.loads(r.stdout)["state"] == "failed"
    err = r.stderr.decode().splitlines()  # --json: the failure is a JSON line
    assert err[-2:] == ["  t1: failed: No space left",
                        '{"error":"job wait j3: the job failed","code":"Error","exit":1}'], err
    h, _ = scripted(Script([(200, job_doc("j4", "running", 1, 4))]))
    r = h("job", "wait", "j4", "--timeout", "1")
    assert r.returncode == 4, r.stderr
    assert r.stderr.decode().splitlines()[-1] == \
        "hoard: job wait j4: still running after 1 s; it keeps running (hoard job stop j4 " \
        "stops it)"


def test_wait_rebalance_until_unmarked(scripted):
    """A rebalance id the smap marks is waited for before any target has it, and is over only
    when the mark is cleared (a target may start its share late); the view is then fetched
    once more, as the map had it after the mark went."""
    rid = "rebalance-v9"
    done = job_doc(rid, "done", 4, 4, kind="rebalance")
    sc = Script([(404, None), (200, done), (200, done)], marks=[rid, rid, None])
    h, _ = scripted(sc)
    r = h("job", "wait", rid)
    assert r.returncode == 0, r.stderr
    assert r.stderr.decode().startswith("%s pending: waiting for it to start" % rid)
    assert sc.nj == 4 and sc.nm == 3
    # an id neither running nor marked: NoSuchJob at once, naming the rebalance that
    # replaced it when there is one
    h, _ = scripted(Script([(404, None)], marks=["rebalance-v10"]))
    one_line_error(h("job", "wait", rid), 1,
                   r"^hoard: job wait %s: NoSuchJob: no target has it; rebalance-v10 replaced it "
                   r"\(hoard job wait rebalance-v10\)$" % rid)
    h, _ = scripted(Script([(404, None)]))
    one_line_error(h("job", "wait", "export-1"), 1,
                   r"^hoard: job wait export-1: NoSuchJob: The specified job does not exist\.$")


def test_wait_keeps_a_leavers_last_report(scripted):
    """A target that leaves the cluster map while job wait runs (a decommission's leaver) is
    no longer in the proxy's merged view: its last report is shown, not lost."""
    both = job_doc("rebalance-v5", "running", 3, 8, kind="rebalance")
    both["targets"]["t2"] = dict(both["targets"]["t1"], objects=5, bytes=5 * MiB,
                                 state="done")
    h, _ = scripted(Script([(200, both), (200, job_doc("rebalance-v5", "done", 3, 3,
                                                       kind="rebalance"))]))
    out = h.ok("job", "wait", "rebalance-v5").stdout.decode().splitlines()
    assert out[0].startswith("rebalance-v5 done in ") and "3 objects" in out[0]
    assert out[1] == "  t2 left the cluster; its last report: done, 5/8 objects, 5.0 MiB, " \
        "0 errors"
    h, _ = scripted(Script([(200, both), (200, job_doc("rebalance-v5", "done", 3, 3,
                                                       kind="rebalance"))]))
    doc = h.json("job", "wait", "rebalance-v5")
    assert set(doc["left_targets"]) == {"t2"} and doc["left_targets"]["t2"]["objects"] == 5


def test_wait_rebalance_view_after_the_mark_clears(scripted):
    """The primary clears the mark and removes the leaver in one map update. A view fetched
    just before (every share done, the leaver still listed) is not the final word: wait asks
    again once it sees the mark gone, and reports the leaver as having left."""
    rid = "rebalance-v7"
    both = job_doc(rid, "done", 3, 3, kind="rebalance")
    both["targets"]["t2"] = dict(both["targets"]["t1"], objects=5, bytes=5 * MiB)
    sc = Script([(200, both), (200, job_doc(rid, "done", 3, 3, kind="rebalance"))],
                marks=[None])
    h, _ = scripted(sc)
    doc = h.json("job", "wait", rid)
    assert sc.nj == 2 and sc.nm == 1
    assert set(doc["targets"]) == {"t1"}, doc
    assert set(doc["left_targets"]) == {"t2"} and doc["left_targets"]["t2"]["objects"] == 5
