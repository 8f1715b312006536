"""Cluster: 2 proxies + 3 targets on loopback (fixed cluster secret, SigV4 keys on).

Covers membership (join, heartbeats, smap versions persisted in node.db), placement (every
object on exactly the target DESIGN.md's HRW names, computed here in Python), the 307 flow
with curl -L and requests, merged listings across targets and proxies, buckets through the
BMD, proxy signatures on targets, target failure (tmap_down -> 503) and restarts.
"""
import base64
import ctypes
import ctypes.util
import hashlib
import hmac
import os
import socket
import sqlite3
import subprocess
import threading
import time
import urllib.parse
import uuid
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest
import requests
from botocore.config import Config

import helpers
from conftest import _TARGETS, ACCESS_KEY, SECRET_KEY, ClusterNode, _stop_nodes

SECRET = "cluster-test-secret"
HB_MS = 200
DEAD_AFTER = 5
NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"

# ---- HRW as DESIGN.md defines it (test side) ----

SEED = 1103515245
M64 = (1 << 64) - 1


def _load_xxh64():
    name = ctypes.util.find_library("xxhash") or "libxxhash.so.0"
    try:
        lib = ctypes.CDLL(name)
        fn = lib.XXH64
        fn.restype = ctypes.c_uint64
        fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
        return lambda data, seed=SEED: fn(data, len(data), seed)
    except (OSError, AttributeError):
        return _xxh64_py


P1, P2, P3, P4, P5 = (11400714785074694791, 14029467366897019727, 1609587929392839161,
                      9650029242287828579, 2870177450012600261)


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def _round(acc, lane):
    acc = (acc + lane * P2) & M64
    return (_rotl(acc, 31) * P1) & M64


def _xxh64_py(data, seed=SEED):
    """Pure-Python XXH64 (fallback when libxxhash cannot be loaded)."""
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + P1 + P2) & M64, (seed + P2) & M64, seed & M64, (seed - P1) & M64]
        while i + 32 <= n:
            for k in range(4):
                v[k] = _round(v[k], int.from_bytes(data[i:i + 8], "little"))
                i += 8
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & M64
        for k in range(4):
            h = ((h ^ _round(0, v[k])) * P1 + P4) & M64
    else:
        h = (seed + P5) & M64
    h = (h + n) & M64
    while i + 8 <= n:
        h ^= _round(0, int.from_bytes(data[i:i + 8], "little"))
        h = (_rotl(h, 27) * P1 + P4) & M64
        i += 8
    if i + 4 <= n:
        h ^= (int.from_bytes(data[i:i + 4], "little") * P1) & M64
        h = (_rotl(h, 23) * P2 + P3) & M64
        i += 4
    while i < n:
        h ^= (data[i] * P5) & M64
        h = (_rotl(h, 11) * P1) & M64
        i += 1
    h ^= h >> 33
    h = (h * P2) & M64
    h ^= h >> 29
    h = (h * P3) & M64
    return h ^ (h >> 32)


xxh64 = _load_xxh64()


def hrw_weight(node_digest, obj_digest):
    z = ((node_digest ^ obj_digest) + 0x9e3779b97f4a7c15) & M64
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    z = ((z ^ (z >> 31)) + 0x9e3779b97f4a7c15) & M64
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    z = ((z ^ (z >> 31)) * 5) & M64
    return (_rotl(z, 7) * 9) & M64


def hrw_owner(uname, node_ids):
    d = xxh64(uname.encode())
    return max(sorted(node_ids), key=lambda n: hrw_weight(xxh64(n.encode()), d))


def test_hrw_vectors():
    """The test-side HRW reproduces DESIGN.md's table (both XXH64 implementations)."""
    assert xxh64(b"t1") == 14214570646889990061
    assert _xxh64_py(b"t1") == 14214570646889990061
    assert _xxh64_py(b"x" * 100, 7) == xxh64(b"x" * 100, 7)
    vectors = [
        ("ais/@#/demo/a.txt", 399386463518745780, "t2",
         ("55697e7ea977d986", "703311257030d251", "6b273a4839061911")),
        ("aws/@#/mybucket/images/dog.jpeg", 4920624696789269065, "t1",
         ("daf5c8e09684a7ee", "c00beae571393931", "c3d4a66608cba840")),
        ("ais/@uuid1#ns1/bck/obj", 12658736837621620828, "t2",
         ("84f1e662b0c83c1c", "86d142a136fa9f5e", "5ead853efadbdec5")),
    ]
    for uname, digest, owner, weights in vectors:
        assert xxh64(uname.encode()) == digest
        got = tuple("%016x" % hrw_weight(xxh64(t.encode()), digest) for t in ("t1", "t2", "t3"))
        assert got == weights, uname
        assert hrw_owner(uname, ["t1", "t2", "t3"]) == owner


# ---- the cluster ----

def node_id(node):
    return node.health()["id"]


def psig(method, raw_path, ptime, to, pid, smapv=None, query=None):
    """The redirect capability proxy `pid` gives a client for target `to`."""
    return helpers.redirect_sig(SECRET, pid, method, raw_path, ptime, to, smapv=smapv,
                                query=query)


def node_headers(method, url, to, sender, body=b"", headers=None):
    """Headers of `method url` signed by node `sender` for node `to` (ids)."""
    return helpers.node_sign(SECRET, sender, method, url, to=to, body=body, headers=headers)


class Node(ClusterNode):
    """A hoardd proxy or target of the test cluster."""

    def __init__(self, name, root, log_dir, role, join=None):
        super().__init__(name, root, log_dir, role, join, secret=SECRET, hb_ms=HB_MS,
                         dead_after=DEAD_AFTER)

    def persisted(self, key):
        db = sqlite3.connect("file:%s?mode=ro" % os.path.join(self.data_dir, "node.db"),
                             uri=True, timeout=10)
        try:
            row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        finally:
            db.close()
        return row[0] if row else None


class Cluster:
    def __init__(self, proxies, targets):
        self.proxies, self.targets = proxies, targets

    @property
    def primary(self):
        return self.proxies[0]

    def ids(self):
        return {t.health()["id"]: t for t in self.targets}

    def wait_smap(self, pred, timeout=15.0, what="smap"):
        """Polls the primary's smap until pred(smap); returns that smap."""
        def check():
            s = self.primary.smap()
            return s if pred(s) else None
        return helpers.wait_until(check, timeout=timeout, what=what)

    def wait_converged(self, timeout=15.0):
        """Every live node holds the primary's smap version."""
        def ok():
            v = self.primary.smap()["version"]
            return all(n.smap()["version"] == v for n in self.proxies + self.targets
                       if n.alive())
        helpers.wait_until(ok, timeout=timeout, what="smap versions to converge")


def node_maker(tmp_path_factory, log_dir, prefix, hb_ms=HB_MS, dead_after=DEAD_AFTER):
    """(make, nodes): make(name, role, join=None) starts nothing, it returns a proxy or target
    of the test cluster (SECRET, the given heartbeat) under fresh directories named prefix +
    name, and adds it to nodes (stop them with _stop_nodes(nodes))."""
    nodes = []

    def make(name, role, join=None):
        root = str(tmp_path_factory.mktemp(prefix + name))
        n = Node(name, root, os.path.join(log_dir, prefix + name), role, join)
        n.hb_ms, n.dead_after = hb_ms, dead_after
        nodes.append(n)
        _TARGETS.append(n)
        return n

    return make, nodes


def start_voters(tmp_path_factory, log_dir, prefix, ntargets, hb_ms, dead_after,
                 proxy_args=()):
    """Three proxies (p1 the first primary, p2 and p3 joining it, so all three vote; each
    with proxy_args added) and ntargets targets t1.. joining p1 (node_maker). Waits until
    the primary's map holds them all with no rebalance marked and every node holds that
    map. Returns (Cluster with .make(name, role, join) for more nodes, nodes): stop them
    with _stop_nodes(nodes)."""
    make, nodes = node_maker(tmp_path_factory, log_dir, prefix, hb_ms, dead_after)
    p1 = make("p1", "proxy")
    join = lambda: p1.url  # noqa: E731
    proxies = [p1] + [make("p%d" % i, "proxy", join) for i in (2, 3)]
    for p in proxies:
        p.extra_args += list(proxy_args)
    p1.start()
    targets = [make("t%d" % i, "target", join) for i in range(1, ntargets + 1)]
    for n in proxies[1:] + targets:
        n.start()
    c = Cluster(proxies, targets)
    c.make = make
    c.wait_smap(lambda s: len(s["tmap"]) == ntargets and len(s["pmap"]) == 3 and
                not s.get("rebalance_id"), timeout=60,
                what="%d targets, 3 proxies, no rebalance marked" % ntargets)
    c.wait_converged(timeout=30)
    return c, nodes


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, log_dir):
    make, nodes = node_maker(tmp_path_factory, log_dir, "cl-")
    p1 = make("p1", "proxy")
    p1.start()
    join = lambda: p1.url  # noqa: E731
    p2 = make("p2", "proxy", join)
    targets = [make("t%d" % i, "target", join) for i in (1, 2, 3)]
    for n in [p2] + targets:
        n.start()
    c = Cluster([p1, p2], targets)
    c.wait_smap(lambda s: len(s["tmap"]) == 3 and len(s["pmap"]) == 2, what="3 targets, 2 proxies")
    c.wait_converged()
    yield c
    _stop_nodes(nodes)


# ---- clients ----

_local = threading.local()


def session():
    s = getattr(_local, "s", None)
    if s is None:
        s = _local.s = requests.Session()
    return s


def api(method, url, data=None, follow=True, headers=None, timeout=30):
    """A SigV4-signed native call; redirects followed by requests (which drops the
    Authorization header when the host:port changes: the target trusts the proxy's psig)."""
    h = helpers.sign_headers(method, url, ACCESS_KEY, SECRET_KEY, headers)
    return session().request(method, url, data=data, headers=h, allow_redirects=follow,
                             timeout=timeout)


def s3client(node):
    return boto3.session.Session().client(
        "s3", endpoint_url=node.url, region_name="us-east-1", aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                      retries={"total_max_attempts": 1, "mode": "standard"}))


def target_keys(t, bucket):
    """Names stored on target t (asked directly, signed as the target itself: a node of the
    map)."""
    url = t.url + "/v1/buckets/" + bucket + "?limit=10000"
    tid = node_id(t)
    r = requests.get(url, timeout=30, headers=node_headers("GET", url, tid, tid))
    if r.status_code == 404:
        return set()
    assert r.status_code == 200, r.text
    j = r.json()
    assert "continuation_token" not in j
    return {e["name"] for e in j["entries"]}


def put_many(proxies, bucket, keys, body=lambda k: k.encode()):
    def one(i_k):
        i, k = i_k
        p = proxies[i % len(proxies)]
        r = api("PUT", "%s/v1/objects/%s/%s" % (p.url, bucket, urllib.parse.quote(k)),
                data=body(k))
        assert r.status_code == 200, (k, r.status_code, r.text)
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(one, enumerate(keys)))


@pytest.fixture
def cbucket(cluster):
    name = "cl-" + uuid.uuid4().hex[:12]
    r = api("POST", cluster.proxies[1].url + "/v1/buckets/" + name)  # via the non-primary
    assert r.status_code == 201, r.text
    yield name
    # best effort: empty it (DeleteObjects, 1000 names a call) and drop it
    left = set()
    for t in cluster.targets:
        if t.alive():
            left |= target_keys(t, name)
    left, s3 = sorted(left), s3client(cluster.primary)
    for i in range(0, len(left), 1000):
        try:
            s3.delete_objects(Bucket=name, Delete={
                "Objects": [{"Key": k} for k in left[i:i + 1000]], "Quiet": True})
        except Exception:  # noqa: BLE001 (a test may have left the cluster half down)
            pass
    api("DELETE", cluster.primary.url + "/v1/buckets/" + name)


# ---- membership ----

def test_membership(cluster):
    s = cluster.primary.smap()
    ids = cluster.ids()
    assert set(s["tmap"]) == set(ids)
    assert s["primary"] == cluster.primary.health()["id"]
    assert s["self"] == s["primary"]
    assert set(s["pmap"]) == {p.health()["id"] for p in cluster.proxies}
    for tid, t in ids.items():
        e = s["tmap"][tid]
        assert e["daemon_type"] == "target" and e["public_net"]["direct_url"] == t.url
        assert e["flags"] == 0 and e["mountpaths"]
        assert tid.startswith("t")
    assert s["tmap_down"] == {}
    assert all(a < 5000 for a in s["heartbeat_age_ms"].values()), s["heartbeat_age_ms"]
    # every node answers with the same map (a rebalance that ends meanwhile makes a new
    # version: compare once it has); the non-primary forwards nothing for reads
    cluster.wait_smap(lambda m: not m.get("rebalance_id"), timeout=30, what="rebalance over")
    cluster.wait_converged()
    s = cluster.primary.smap()
    for n in cluster.proxies + cluster.targets:
        got = n.smap()
        assert got["version"] == s["version"] and set(got["tmap"]) == set(s["tmap"])
        h = n.health()
        assert h["ready"] is True
    # control-plane calls need a node signature, cluster reads credentials
    r = requests.post(cluster.primary.url + "/v1/cluster/join", json={}, timeout=5)
    assert r.status_code == 403
    r = requests.put(cluster.targets[0].url + "/v1/metasync", json={}, timeout=5)
    assert r.status_code == 403
    for n in cluster.proxies + cluster.targets:
        for path in ("/v1/cluster", "/v1/cluster/smap", "/v1/cluster/bmd"):
            r = requests.get(n.url + path, timeout=5)
            assert r.status_code == 403, (n.url, path, r.text)
        assert requests.get(n.url + "/v1/health", timeout=5).status_code == 200


def test_smap_persisted_and_stale_metasync_refused(cluster):
    import json
    cluster.wait_converged()
    for n in cluster.proxies + cluster.targets:
        # a rebalance that ends meanwhile makes a new version: compare at a quiet moment
        helpers.wait_until(lambda: json.loads(n.persisted("smap"))["version"] ==
                           n.smap()["version"], timeout=15, what="the persisted smap")
        assert n.persisted("node_id") == n.health()["id"]
    t = cluster.targets[0]
    old = dict(t.smap())
    old.pop("self", None)
    old["version"] = 1
    body = json.dumps({"smap": old}).encode()
    url = t.url + "/v1/metasync"
    r = requests.put(url, data=body, timeout=5, headers=node_headers(
        "PUT", url, node_id(t), node_id(cluster.primary), body=body,
        headers={"Content-Type": "application/json"}))
    assert r.status_code == 409, r.text
    assert t.smap()["version"] > 1


# ---- placement and redirects ----

def test_placement_matches_hrw(cluster, cbucket):
    keys = ["obj-%03d" % i for i in range(60)] + ["dir/sub/ü-%d" % i for i in range(10)]
    put_many(cluster.proxies, cbucket, keys)
    ids = cluster.ids()
    stored = {tid: target_keys(t, cbucket) for tid, t in ids.items()}
    for k in keys:
        want = hrw_owner("ais/@#/%s/%s" % (cbucket, k), list(ids))
        holders = [tid for tid, names in stored.items() if k in names]
        assert holders == [want], (k, holders, want)
    assert sum(len(v) for v in stored.values()) == len(keys)
    assert all(stored.values()), "70 keys should land on all 3 targets"
    # ...and inside each target, on the mountpath HRW names (node digest = XXH64 of the
    # mountpath's real path), read straight from each mountpath's catalog
    for tid, t in ids.items():
        mps = [os.path.realpath(m) for m in t.mountpaths]
        for i, mp in enumerate(mps):
            db = sqlite3.connect("file:%s?mode=ro" % os.path.join(mp, "catalog.db"), uri=True,
                                 timeout=10)
            try:
                rows = [r[0] for r in db.execute("SELECT name FROM objects WHERE bucket = ?",
                                                  (cbucket,))]
            finally:
                db.close()
            for k in rows:
                want = hrw_owner("ais/@#/%s/%s" % (cbucket, k), mps)
                assert want == mp, (tid, k, mp, want)
        assert len(mps) == 2


def test_redirect_location_and_clients(cluster, cbucket, tmp_path):
    key = "docs/read me.txt"
    qkey = urllib.parse.quote(key)
    body = b"through the proxy\n" * 100
    url = "%s/v1/objects/%s/%s?foo=bar" % (cluster.proxies[1].url, cbucket, qkey)
    r = api("PUT", url, data=body)
    assert r.status_code == 200, r.text
    assert len(r.history) == 1 and r.history[0].status_code == 307
    r = api("GET", url, follow=False)
    assert r.status_code == 307
    loc = r.headers["Location"]
    ids = cluster.ids()
    owner = ids[hrw_owner("ais/@#/%s/%s" % (cbucket, key), list(ids))]
    raw_path = "/v1/objects/%s/%s" % (cbucket, qkey)
    assert loc.startswith(owner.url + raw_path + "?foo=bar&pid=p"), loc
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(loc).query)
    ptime = int(q["ptime"][0])
    assert time.time() < ptime < time.time() + 3600
    # psv: the map the proxy routed by, bound into the signature
    s = cluster.proxies[1].smap()
    assert q["psv"][0] == "%d.%d" % (s.get("term", 0), s["version"]), (q, s)
    assert q["psig"][0] == psig("GET", raw_path, ptime, node_id(owner), node_id(cluster.proxies[1]),
                                q["psv"][0], urllib.parse.urlsplit(loc).query)
    # the Location works as is, unsigned (the psig is the authorisation)
    r = requests.get(loc, timeout=10)
    assert r.status_code == 200 and r.content == body
    # ... and not with a later map version (a client cannot make the target wait for one)
    t_, v_ = q["psv"][0].split(".")
    r = requests.get(loc.replace("psv=" + q["psv"][0], "psv=%s.%d" % (t_, int(v_) + 1)),
                     timeout=10)
    assert r.status_code == 403, r.text
    # requests follows it
    r = api("GET", url)
    assert r.status_code == 200 and r.content == body
    # curl -L (an independent client and SigV4 signer)
    p = subprocess.run(["curl", "-sS", "-f", "-L", "--aws-sigv4", "aws:amz:us-east-1:s3",
                        "--user", "%s:%s" % (ACCESS_KEY, SECRET_KEY),
                        "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", url],
                       capture_output=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert p.stdout == body
    # curl -L -T FILE: the body is sent again to the target
    f = tmp_path / "up.txt"
    f.write_bytes(b"replaced by curl")
    p = subprocess.run(["curl", "-sS", "-f", "-L", "--aws-sigv4", "aws:amz:us-east-1:s3",
                        "--user", "%s:%s" % (ACCESS_KEY, SECRET_KEY),
                        "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", "-T", str(f), url],
                       capture_output=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert api("GET", url).content == b"replaced by curl"
    r = api("HEAD", url)
    assert r.status_code == 200 and r.headers["Content-Length"] == "16"
    r = api("DELETE", url)
    assert r.status_code == 204
    assert api("GET", url).status_code == 404


def test_redirected_put_body_never_reset(cluster, cbucket):
    """A PUT whose body is sent right behind its headers (no Expect: 100-continue, what
    python requests does) gets its 307 intact: the proxy reads and drops the body before
    answering, so the client is not reset before it reads the redirect; requests then re-sends
    the body to the owner. A body past the drain limit still gets its 307 (and a close)."""
    p = cluster.proxies[0]
    for size in (3 << 20, 64 * 1024):
        body = os.urandom(size)
        for i in range(8):
            key = "big/put-%d-%d" % (size, i)
            path = "/v1/objects/%s/%s" % (cbucket, key)
            h = helpers.sign_headers("PUT", p.url + path, ACCESS_KEY, SECRET_KEY)
            head = "PUT %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Length: %d\r\n" % (
                path, p.host, p.port, size)
            head += "".join("%s: %s\r\n" % (k, v) for k, v in h.items() if k.lower() != "host")
            s = socket.create_connection((p.host, p.port), timeout=10)
            try:
                s.sendall(head.encode() + b"\r\n" + body)
                data = b""
                while b"\r\n\r\n" not in data:
                    c = s.recv(65536)
                    if not c:
                        break
                    data += c
            finally:
                s.close()
            assert data.startswith(b"HTTP/1.1 307"), (size, i, data[:200])
            assert b"\r\nLocation: " in data
        r = api("PUT", p.url + "/v1/objects/%s/big/follow-%d" % (cbucket, size), data=body)
        assert r.status_code == 200 and r.history[0].status_code == 307, r.text
        r = api("GET", p.url + "/v1/objects/%s/big/follow-%d" % (cbucket, size))
        assert r.content == body


def test_proxy_authorises_before_redirect(cluster, cbucket):
    url = "%s/v1/objects/%s/x" % (cluster.primary.url, cbucket)
    r = requests.get(url, allow_redirects=False, timeout=5)
    assert r.status_code == 403  # no redirect for an unsigned request
    r = requests.get(url, allow_redirects=False, timeout=5,
                     headers=helpers.sign_headers("GET", url, ACCESS_KEY, "wrong-secret"))
    assert r.status_code == 403


def test_targets_refuse_direct_requests(cluster, cbucket):
    t = cluster.targets[0]
    path = "/v1/objects/%s/direct" % cbucket
    r = requests.put(t.url + path, data=b"x", timeout=5,
                     headers=helpers.sign_headers("PUT", t.url + path, ACCESS_KEY, SECRET_KEY))
    helpers.check_json_error(r, 403, "AccessDenied")
    assert "through a proxy" in r.json()["message"]
    ptime = int(time.time()) + 60
    pid, tid = node_id(cluster.primary), node_id(t)
    other = node_id(cluster.targets[1])
    bad = "%s%s?pid=%s&ptime=%d&psig=%s" % (t.url, path, pid, ptime, "0" * 64)
    assert requests.put(bad, data=b"x", timeout=5).status_code == 403
    old = int(time.time()) - 5
    expired = "%s%s?pid=%s&ptime=%d&psig=%s" % (t.url, path, pid, old,
                                                 psig("PUT", path, old, tid, pid))
    r = requests.put(expired, data=b"x", timeout=5)
    assert r.status_code == 403 and "expired" in r.json()["message"]
    # a capability for another target, or signed by a node that is not a proxy
    for_other = "%s%s?pid=%s&ptime=%d&psig=%s" % (t.url, path, pid, ptime,
                                                   psig("PUT", path, ptime, other, pid))
    assert requests.put(for_other, data=b"x", timeout=5).status_code == 403
    by_target = "%s%s?pid=%s&ptime=%d&psig=%s" % (t.url, path, other, ptime,
                                                   psig("PUT", path, ptime, tid, other))
    assert requests.put(by_target, data=b"x", timeout=5).status_code == 403
    good = "%s%s?pid=%s&ptime=%d&psig=%s" % (t.url, path, pid, ptime,
                                              psig("PUT", path, ptime, tid, pid))
    assert requests.put(good, data=b"x", timeout=5).status_code == 200
    # the signature covers the method
    assert requests.delete(good, timeout=5).status_code == 403
    # health and metrics stay open
    assert requests.get(t.url + "/v1/health", timeout=5).status_code == 200
    assert requests.get(t.url + "/metrics", timeout=5).status_code == 200


# ---- listing ----

def test_listing_merge_across_proxies(cluster, cbucket):
    """6,000 objects across 3 targets, listed in pages of 97 while switching proxies: every
    key exactly once and in order (AIStore lost objects here: their issue 318)."""
    keys = sorted(["k/%05d" % i for i in range(5900)] +
                  ["a%d/x" % i for i in range(30)] + ["z-%d" % i for i in range(70)])
    import shardkit  # (it imports this module)
    # straight to the owners (the listing is under test, not the PUT path)
    shardkit.bulk_put(cluster, cbucket, keys, body=lambda k: b"")
    seen, token, page = [], None, 0
    while True:
        proxy = cluster.proxies[page % 2]  # switch proxies between pages
        q = "?limit=97" + ("&token=" + urllib.parse.quote(token) if token else "")
        r = api("GET", "%s/v1/buckets/%s%s" % (proxy.url, cbucket, q))
        assert r.status_code == 200, r.text
        j = r.json()
        assert len(j["entries"]) <= 97
        seen += [e["name"] for e in j["entries"]]
        token = j.get("continuation_token")
        page += 1
        if not token:
            break
        assert base64.b64decode(token).decode() == seen[-1]
    assert seen == keys
    assert page == (len(keys) + 96) // 97
    # delimiter: common prefixes come from every target but appear once
    r = api("GET", "%s/v1/buckets/%s?delimiter=%%2F&limit=10" % (cluster.primary.url, cbucket))
    j = r.json()
    assert j["prefixes"] == ["a%d/" % i for i in (0, 1, 10, 11, 12, 13, 14, 15, 16, 17)]
    names, pfx, token = [], [], None
    while True:
        q = "delimiter=%2F&limit=7" + ("&token=" + urllib.parse.quote(token) if token else "")
        j = api("GET", "%s/v1/buckets/%s?%s" % (cluster.proxies[1].url, cbucket, q)).json()
        names += [e["name"] for e in j["entries"]]
        pfx += j["prefixes"]
        token = j.get("continuation_token")
        if not token:
            break
    assert pfx == sorted(["a%d/" % i for i in range(30)] + ["k/"])
    assert names == ["z-%d" % i for i in sorted(range(70), key=str)]
    # prefix
    j = api("GET", "%s/v1/buckets/%s?prefix=k/0199&limit=100" % (cluster.primary.url,
                                                                  cbucket)).json()
    assert [e["name"] for e in j["entries"]] == ["k/%05d" % i for i in range(1990, 2000)]
    assert len(keys) == 6000

    # S3 ListObjectsV2 and V1 through the proxy (boto3 paginators)
    s3 = s3client(cluster.proxies[1])
    got = []
    for pg in s3.get_paginator("list_objects_v2").paginate(Bucket=cbucket,
                                                           PaginationConfig={"PageSize": 999}):
        got += [o["Key"] for o in pg.get("Contents", [])]
    assert got == keys
    s3p = s3client(cluster.primary)
    got = []
    for pg in s3p.get_paginator("list_objects").paginate(Bucket=cbucket, Delimiter="/",
                                                         PaginationConfig={"PageSize": 9}):
        got += [c["Prefix"] for c in pg.get("CommonPrefixes", [])]
        got += [o["Key"] for o in pg.get("Contents", [])]
    assert sorted(got) == sorted(pfx + names) and len(got) == len(set(got))
    r = s3p.list_objects_v2(Bucket=cbucket, MaxKeys=0)  # AWS: an empty, complete page
    assert r["KeyCount"] == 0 and r["IsTruncated"] is False and "NextContinuationToken" not in r


# ---- buckets through the BMD ----

def test_buckets_via_bmd(cluster):
    name = "cl-b-" + uuid.uuid4().hex[:10]
    s3 = s3client(cluster.proxies[1])  # non-primary: forwards to the primary
    s3.create_bucket(Bucket=name)
    bmd_v = cluster.primary.bmd()["version"]
    for n in cluster.proxies:
        assert name in [b["Name"] for b in s3client(n).list_buckets()["Buckets"]]
        s3client(n).head_bucket(Bucket=name)
    for t in cluster.targets:  # the BMD reached every target before the answer
        assert t.bmd()["version"] >= bmd_v
        assert target_keys(t, name) == set()
    assert s3.get_bucket_location(Bucket=name).get("LocationConstraint") in (None, "")
    s3.create_bucket(Bucket=name)  # us-east-1: creating your own bucket again is fine
    r = api("POST", cluster.primary.url + "/v1/buckets/" + name)
    helpers.check_json_error(r, 409, "BucketAlreadyOwnedByYou")

    put_many(cluster.proxies, name, ["o%d" % i for i in range(12)])
    with pytest.raises(Exception) as ei:
        s3.delete_bucket(Bucket=name)
    assert helpers.client_error(ei)[:2] == (409, "BucketNotEmpty")
    r = api("DELETE", cluster.primary.url + "/v1/buckets/" + name)
    helpers.check_json_error(r, 409, "BucketNotEmpty")

    # DeleteObjects fans out to the owners; a missing key counts as deleted
    res = s3.delete_objects(Bucket=name, Delete={
        "Objects": [{"Key": "o%d" % i} for i in range(12)] + [{"Key": "nope"}]})
    assert sorted(d["Key"] for d in res["Deleted"]) == sorted(["o%d" % i for i in range(12)] +
                                                              ["nope"])
    assert not res.get("Errors")
    assert all(target_keys(t, name) == set() for t in cluster.targets)

    # props go through the BMD too
    r = api("PATCH", cluster.proxies[1].url + "/v1/buckets/" + name,
            data=b'{"anonymous_read": true}')
    assert r.status_code == 200, r.text
    r = api("GET", cluster.primary.url + "/v1/buckets/" + name + "?props")
    assert r.json()["props"]["anonymous_read"] is True
    r = requests.get(cluster.primary.url + "/v1/buckets/" + name, timeout=5)  # unsigned list
    assert r.status_code == 200

    s3.delete_bucket(Bucket=name)
    for n in cluster.proxies:
        r = api("HEAD", n.url + "/v1/buckets/" + name)
        assert r.status_code == 404
    for t in cluster.targets:
        helpers.wait_until(lambda: name not in t.bmd()["buckets"], what="BMD on target")
    with pytest.raises(Exception) as ei:
        s3.head_bucket(Bucket=name)
    assert helpers.client_error(ei)[0] == 404


def test_s3_objects_relayed_through_proxies(cluster, cbucket):
    """S3 SDKs do not follow 307: object calls are relayed to the owner, and any proxy
    serves them."""
    a, b = s3client(cluster.primary), s3client(cluster.proxies[1])
    data = os.urandom(3 * 1024 * 1024 + 5)
    a.put_object(Bucket=cbucket, Key="relay/k", Body=data, Metadata={"m": "1"})
    got = b.get_object(Bucket=cbucket, Key="relay/k")
    assert got["Body"].read() == data and got["Metadata"] == {"m": "1"}
    assert b.head_object(Bucket=cbucket, Key="relay/k")["ContentLength"] == len(data)
    part = a.get_object(Bucket=cbucket, Key="relay/k", Range="bytes=10-19")["Body"].read()
    assert part == data[10:20]
    # the native 307 for the same key leads to the target that holds the relayed object
    r = api("GET", "%s/v1/objects/%s/relay/k" % (cluster.primary.url, cbucket))
    assert r.status_code == 200 and r.content == data
    with pytest.raises(Exception) as ei:
        a.get_object(Bucket=cbucket, Key="relay/missing")
    assert helpers.client_error(ei)[:2] == (404, "NoSuchKey")
    b.delete_object(Bucket=cbucket, Key="relay/k")
    with pytest.raises(Exception) as ei:
        a.head_object(Bucket=cbucket, Key="relay/k")
    assert helpers.client_error(ei)[0] == 404


def test_copy_object_across_targets(cluster, cbucket):
    """CopyObject through a proxy whose source is owned by another target than the
    destination: metadata COPY and REPLACE, source conditionals, a missing source."""
    s3 = s3client(cluster.primary)
    ids = sorted(cluster.ids())
    owner = lambda k: hrw_owner("ais/@#/%s/%s" % (cbucket, k), ids)  # noqa: E731
    src = "copy/src"
    dst = next("copy/dst-%d" % i for i in range(100) if owner("copy/dst-%d" % i) != owner(src))
    data = os.urandom(700 * 1024 + 3)
    put = s3.put_object(Bucket=cbucket, Key=src, Body=data, ContentType="image/x-test",
                        Metadata={"origin": "src"})
    res = s3.copy_object(Bucket=cbucket, Key=dst, CopySource={"Bucket": cbucket, "Key": src})
    assert res["CopyObjectResult"]["ETag"] == put["ETag"]
    got = s3.get_object(Bucket=cbucket, Key=dst)
    assert got["Body"].read() == data
    assert got["ContentType"] == "image/x-test" and got["Metadata"] == {"origin": "src"}
    s3.copy_object(Bucket=cbucket, Key=dst, CopySource={"Bucket": cbucket, "Key": src},
                   MetadataDirective="REPLACE", ContentType="text/x-new",
                   Metadata={"origin": "replaced"})
    got = s3.head_object(Bucket=cbucket, Key=dst)
    assert got["ContentType"] == "text/x-new" and got["Metadata"] == {"origin": "replaced"}
    # the destination is stored on its own owner only
    holders = [i for i, t in cluster.ids().items() if dst in target_keys(t, cbucket)]
    assert holders == [owner(dst)]
    with pytest.raises(Exception) as ei:
        s3.copy_object(Bucket=cbucket, Key=dst, CopySource={"Bucket": cbucket, "Key": src},
                       CopySourceIfMatch='"0123456789abcdef0123456789abcdef"')
    assert helpers.client_error(ei)[:2] == (412, "PreconditionFailed")
    with pytest.raises(Exception) as ei:
        s3.copy_object(Bucket=cbucket, Key=dst, CopySource={"Bucket": cbucket, "Key": src},
                       CopySourceIfNoneMatch=put["ETag"])
    assert helpers.client_error(ei)[:2] == (412, "PreconditionFailed")
    s3.copy_object(Bucket=cbucket, Key=dst, CopySource={"Bucket": cbucket, "Key": src},
                   CopySourceIfMatch=put["ETag"])
    with pytest.raises(Exception) as ei:
        s3.copy_object(Bucket=cbucket, Key=dst,
                       CopySource={"Bucket": cbucket, "Key": "copy/missing"})
    assert helpers.client_error(ei)[:2] == (404, "NoSuchKey")
    assert s3.get_object(Bucket=cbucket, Key=dst)["Body"].read() == data


def test_copy_dot_segment_keys_across_targets(cluster, cbucket):
    """Keys with "." and ".." segments are names, not paths: a copy whose source another
    target owns fetches that source, not the key the segments would squash to (libcurl
    removes dot segments unless told not to; the owner then refused the node signature)."""
    s3 = s3client(cluster.primary)
    ids = sorted(cluster.ids())
    owner = lambda k: hrw_owner("ais/@#/%s/%s" % (cbucket, k), ids)  # noqa: E731
    for src in ("dots/../x", "dots/./y", "dots/a/../../z"):
        dst = next("dots-dst-%d" % i for i in range(100)
                   if owner("dots-dst-%d" % i) != owner(src))
        data = os.urandom(3000)
        s3.put_object(Bucket=cbucket, Key=src, Body=data)
        s3.copy_object(Bucket=cbucket, Key=dst, CopySource={"Bucket": cbucket, "Key": src})
        assert s3.get_object(Bucket=cbucket, Key=dst)["Body"].read() == data, src
        up = s3.create_multipart_upload(Bucket=cbucket, Key=dst)["UploadId"]
        part = s3.upload_part_copy(Bucket=cbucket, Key=dst, UploadId=up, PartNumber=1,
                                   CopySource={"Bucket": cbucket, "Key": src})
        s3.complete_multipart_upload(
            Bucket=cbucket, Key=dst, UploadId=up,
            MultipartUpload={"Parts": [{"PartNumber": 1,
                                        "ETag": part["CopyPartResult"]["ETag"]}]})
        assert s3.get_object(Bucket=cbucket, Key=dst)["Body"].read() == data, src
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=cbucket, Prefix="dots")["Contents"]]
    assert {"dots/../x", "dots/./y", "dots/a/../../z"} <= set(keys), keys


def test_copy_prefers_the_owners_source_to_a_misplaced_copy(cluster, cbucket):
    """A CopyObject whose destination's owner also holds a misplaced copy of the source (an
    older version left behind while objects move) copies the source's owner's version, as a
    GET of the source reads it, not the stale one it happens to hold."""
    s3 = s3client(cluster.primary)
    byid = cluster.ids()
    ids = sorted(byid)
    owner = lambda k: hrw_owner("ais/@#/%s/%s" % (cbucket, k), ids)  # noqa: E731
    src = "stale/src"
    dst = next("stale/dst-%d" % i for i in range(100) if owner("stale/dst-%d" % i) != owner(src))
    old, new = os.urandom(5000), os.urandom(6000)
    s3.put_object(Bucket=cbucket, Key=src, Body=new)
    # the old version on the destination's owner, as a rebalance leaves it before it moves
    x = byid[owner(dst)]
    url = "%s/v1/objects/%s/%s" % (x.url, cbucket, src)
    r = requests.put(url, data=old, timeout=30,
                     headers=node_headers("PUT", url, owner(dst), node_id(cluster.primary), old))
    assert r.status_code == 200, r.text
    assert src in target_keys(x, cbucket)
    s3.copy_object(Bucket=cbucket, Key=dst, CopySource={"Bucket": cbucket, "Key": src})
    assert s3.get_object(Bucket=cbucket, Key=dst)["Body"].read() == new
    up = s3.create_multipart_upload(Bucket=cbucket, Key=dst)["UploadId"]
    part = s3.upload_part_copy(Bucket=cbucket, Key=dst, UploadId=up, PartNumber=1,
                               CopySource={"Bucket": cbucket, "Key": src})
    s3.complete_multipart_upload(
        Bucket=cbucket, Key=dst, UploadId=up,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["CopyPartResult"]["ETag"]}]})
    assert s3.get_object(Bucket=cbucket, Key=dst)["Body"].read() == new


def test_list_multipart_uploads_through_proxy(cluster, cbucket):
    """ListMultipartUploads on a proxy merges the uploads held by every target (each lives
    on its key's owner), in key order, with markers that page across targets."""
    s3 = s3client(cluster.proxies[1])
    ids = sorted(cluster.ids())
    keys = ["mpu/%02d" % i for i in range(12)] + ["other/x"]
    owners = {hrw_owner("ais/@#/%s/%s" % (cbucket, k), ids) for k in keys}
    assert len(owners) > 1
    made = {k: s3.create_multipart_upload(Bucket=cbucket, Key=k)["UploadId"] for k in keys}
    got = s3.list_multipart_uploads(Bucket=cbucket)
    assert [(u["Key"], u["UploadId"]) for u in got["Uploads"]] == sorted(made.items())
    assert got["IsTruncated"] is False
    # pages of 5 from alternating proxies
    seen, km, im, n = [], None, None, 0
    while True:
        kw = {"Bucket": cbucket, "MaxUploads": 5, "Prefix": "mpu/"}
        if km:
            kw.update(KeyMarker=km, UploadIdMarker=im)
        page = s3client(cluster.proxies[n % 2]).list_multipart_uploads(**kw)
        n += 1
        seen += [u["Key"] for u in page.get("Uploads", [])]
        if not page["IsTruncated"]:
            break
        km, im = page["NextKeyMarker"], page["NextUploadIdMarker"]
    assert seen == sorted(k for k in keys if k.startswith("mpu/")) and n == 3
    got = s3.list_multipart_uploads(Bucket=cbucket, Delimiter="/")
    assert [p["Prefix"] for p in got["CommonPrefixes"]] == ["mpu/", "other/"]
    assert "Uploads" not in got
    with pytest.raises(Exception) as ei:
        s3.list_multipart_uploads(Bucket=cbucket, MaxUploads=-1)
    assert helpers.client_error(ei)[:2][0] == 400
    for k, u in made.items():
        s3.abort_multipart_upload(Bucket=cbucket, Key=k, UploadId=u)
    assert "Uploads" not in s3.list_multipart_uploads(Bucket=cbucket)
    with pytest.raises(Exception) as ei:
        s3.list_multipart_uploads(Bucket="no-such-bucket-" + cbucket)
    assert helpers.client_error(ei)[:2] == (404, "NoSuchBucket")


# ---- maintenance ----

def test_maintenance_flag(cluster, cbucket):
    ids = cluster.ids()
    tid = sorted(ids)[0]
    v0 = cluster.primary.smap()["version"]
    # via the non-primary proxy (forwarded), signed with a full-access key
    url = "%s/v1/cluster/maintenance/%s" % (cluster.proxies[1].url, tid)
    r = api("POST", url, data=b'{"on": true}')
    assert r.status_code == 200, r.text
    s = cluster.primary.smap()
    assert s["tmap"][tid]["flags"] == 1 and s["version"] > v0
    cluster.wait_converged()
    others = [i for i in ids if i != tid]
    for i in range(40):
        key = "m%d" % i
        r = api("GET", "%s/v1/objects/%s/%s" % (cluster.primary.url, cbucket, key), follow=False)
        assert r.status_code == 307
        owner = hrw_owner("ais/@#/%s/%s" % (cbucket, key), others)
        assert r.headers["Location"].startswith(ids[owner].url)
    assert requests.post(url, json={"on": False}, timeout=5).status_code == 403  # unsigned
    body = b'{"on": false}'
    # another proxy's signature will do (a forwarded call); a target's will not
    r = requests.post(url, data=body, timeout=5, headers=node_headers(
        "POST", url, node_id(cluster.proxies[1]), tid, body=body))
    assert r.status_code == 403, r.text
    r = requests.post(url, data=body, timeout=5, headers=node_headers(
        "POST", url, node_id(cluster.proxies[1]), node_id(cluster.primary), body=body))
    assert r.status_code == 200, r.text
    assert cluster.primary.smap()["tmap"][tid]["flags"] == 0
    r = api("POST", "%s/v1/cluster/maintenance/nosuch" % cluster.primary.url, data=b"{}")
    assert r.status_code == 404


def test_target_behind_the_proxys_map_waits_for_it(cluster, cbucket):
    """A proxy routes by a map the new owner has not received yet (metasync is on its way):
    the target must not answer 404 for an object that is still moving to it, but wait for
    that map (the proxy's version rides on the relay as signed X-Hoard-Smap, on a 307 as
    psv) and then get it from its neighbour."""
    ids = cluster.ids()
    key = "behind-" + uuid.uuid4().hex[:8]
    body = os.urandom(3000)
    url = "%s/v1/objects/%s/%s" % (cluster.primary.url, cbucket, key)
    assert api("PUT", url, data=body).status_code == 200
    owner = hrw_owner("ais/@#/%s/%s" % (cbucket, key), list(ids))
    nxt = hrw_owner("ais/@#/%s/%s" % (cbucket, key), [i for i in ids if i != owner])
    s = cluster.primary.smap()
    ahead = "%d.%d" % (s.get("term", 0), s["version"] + 1)  # the map maintenance makes
    turl = ids[nxt].url + "/v1/objects/%s/%s" % (cbucket, key)
    pid = node_id(cluster.primary)
    out = {}

    def read():
        # as the primary's relay sends it, signed for the next owner
        h = node_headers("GET", turl, nxt, pid, headers={"X-Hoard-Smap": ahead})
        out["r"] = requests.get(turl, headers=h, timeout=60)
    th = threading.Thread(target=read)
    th.start()
    murl = "%s/v1/cluster/maintenance/%s" % (cluster.primary.url, owner)
    try:
        time.sleep(0.3)  # the read is (most likely) waiting at the next owner by now
        r = api("POST", murl, data=b'{"on": true}')
        assert r.status_code == 200, r.text
        th.join(60)
        assert not th.is_alive()
        r = out["r"]
        assert r.status_code == 200, (r.status_code, r.text)
        assert r.content == body
    finally:
        th.join(60)
        assert api("POST", murl, data=b'{"on": false}').status_code == 200
        cluster.wait_converged()
        helpers.wait_until(lambda: "rebalance_id" not in cluster.primary.smap(), timeout=60,
                           what="the rebalance after maintenance")
    # an unsigned or forged version is refused like any forged node call
    h = node_headers("GET", turl, nxt, pid, headers={"X-Hoard-Smap": "1.1"})
    h["X-Hoard-Smap"] = "9.999"
    assert requests.get(turl, headers=h, timeout=10).status_code == 403


def test_miss_routed_by_an_older_map_is_retried_not_404(cluster, cbucket):
    """The reverse window: a proxy that has not heard of the latest map sends a GET to a
    target that does not own the object by the newer map and does not hold it. That is not
    proof the object is missing (it may have moved), so the answer is 503 (clients retry,
    and the proxy routes by the new map by then), never 404. The same miss routed by the
    current map is a plain 404."""
    ids = cluster.ids()
    key = "stale-" + uuid.uuid4().hex[:8]
    body = os.urandom(2000)
    assert api("PUT", "%s/v1/objects/%s/%s" % (cluster.primary.url, cbucket, key),
               data=body).status_code == 200
    owner = hrw_owner("ais/@#/%s/%s" % (cbucket, key), list(ids))
    other = next(i for i in ids if i != owner)
    url = ids[other].url + "/v1/objects/%s/%s" % (cbucket, key)
    s = cluster.primary.smap()
    pid = node_id(cluster.primary)
    older = "%d.%d" % (s.get("term", 0), s["version"] - 1)
    current = "%d.%d" % (s.get("term", 0), s["version"])
    helpers.wait_until(lambda: ids[other].smap()["version"] >= s["version"], timeout=30,
                       what="the target to hold the current map")
    r = requests.get(url, timeout=30, headers=node_headers("GET", url, other, pid,
                                                           headers={"X-Hoard-Smap": older}))
    assert r.status_code == 503 and "retry" in r.text, (r.status_code, r.text)
    r = requests.get(url, timeout=30, headers=node_headers("GET", url, other, pid,
                                                           headers={"X-Hoard-Smap": current}))
    assert r.status_code == 404, (r.status_code, r.text)
    # the owner, asked with the older map, serves it
    ourl = ids[owner].url + "/v1/objects/%s/%s" % (cbucket, key)
    r = requests.get(ourl, timeout=30, headers=node_headers("GET", ourl, owner, pid,
                                                            headers={"X-Hoard-Smap": older}))
    assert r.status_code == 200 and r.content == body


# ---- failures and restarts (last: they disturb the cluster) ----

def test_target_failure_and_rejoin(cluster, cbucket):
    keys = ["f%03d" % i for i in range(60)]
    put_many(cluster.proxies, cbucket, keys)
    ids = cluster.ids()
    victim_id = sorted(ids)[1]
    victim = ids[victim_id]
    lost = [k for k in keys if hrw_owner("ais/@#/%s/%s" % (cbucket, k), list(ids)) == victim_id]
    kept = [k for k in keys if k not in lost]
    assert lost and kept
    v0 = cluster.primary.smap()["version"]
    victim.expect_alive = False
    t0 = time.monotonic()
    victim.kill9()
    s = cluster.wait_smap(lambda s: victim_id in s["tmap_down"], timeout=20,
                          what="the killed target in tmap_down")
    took = time.monotonic() - t0
    # heartbeat_ms * dead_after plus a tick, and slack for a loaded CI machine
    assert took < HB_MS * DEAD_AFTER / 1000.0 + 8, took
    assert victim_id not in s["tmap"] and s["version"] > v0
    cluster.wait_converged()
    for p in cluster.proxies:
        for k in lost[:5]:
            r = api("GET", "%s/v1/objects/%s/%s" % (p.url, cbucket, k))
            helpers.check_json_error(r, 503, "ServiceUnavailable")
            assert victim_id in r.json()["message"]
        for k in kept[:5]:
            r = api("GET", "%s/v1/objects/%s/%s" % (p.url, cbucket, k))
            assert r.status_code == 200 and r.content == k.encode()
    r = api("GET", "%s/v1/buckets/%s" % (cluster.primary.url, cbucket))
    helpers.check_json_error(r, 503, "ServiceUnavailable")  # a listing would miss objects

    victim.start()
    s = cluster.wait_smap(lambda s: victim_id in s["tmap"] and not s["tmap_down"], timeout=20,
                          what="the target back in tmap")
    assert victim.health()["id"] == victim_id  # the id survived the restart
    cluster.wait_converged()
    for k in lost:
        r = api("GET", "%s/v1/objects/%s/%s" % (cluster.proxies[1].url, cbucket, k))
        assert r.status_code == 200 and r.content == k.encode()
    r = api("GET", "%s/v1/buckets/%s?limit=1000" % (cluster.primary.url, cbucket))
    assert [e["name"] for e in r.json()["entries"]] == keys


def test_proxy_restarts(cluster, cbucket):
    put_many(cluster.proxies, cbucket, ["r%d" % i for i in range(10)])
    p1, p2 = cluster.proxies
    before = p1.smap()
    rc = p1.restart()
    assert rc == 0
    after = p1.smap()
    assert after["version"] >= before["version"]
    assert after["primary"] == before["primary"] and after["uuid"] == before["uuid"]
    assert set(after["tmap"]) == set(before["tmap"])
    import json
    assert json.loads(p1.persisted("smap"))["version"] == after["version"]
    for i in range(10):
        r = api("GET", "%s/v1/objects/%s/r%d" % (p1.url, cbucket, i))
        assert r.status_code == 200 and r.content == b"r%d" % i
    # the targets keep heartbeating to the restarted primary: nobody is dropped
    time.sleep(HB_MS * DEAD_AFTER / 1000.0 + 0.5)
    s = p1.smap()
    assert len(s["tmap"]) == 3 and not s["tmap_down"]
    # the non-primary proxy too, and bucket changes still go through it
    assert p2.restart() == 0
    cluster.wait_smap(lambda s: len(s["pmap"]) == 2)
    name = "cl-r-" + uuid.uuid4().hex[:8]
    assert api("POST", p2.url + "/v1/buckets/" + name).status_code == 201
    assert api("DELETE", p2.url + "/v1/buckets/" + name).status_code == 204
    r = api("GET", "%s/v1/buckets/%s?limit=100" % (p2.url, cbucket))
    assert [e["name"] for e in r.json()["entries"]] == sorted("r%d" % i for i in range(10))
