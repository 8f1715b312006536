"""Node traffic cannot be forged or replayed (issue 12, docs/security.md).

A recording forwarder sits where an attacker would: between target t2 and the primary (t2's
cluster.join points at it) and in front of t2 (its public URL points at it, so the primary's
metasync and other targets' rebalance pushes pass through it). Requests captured there are
replayed as they were, with another body, with another node's headers, and to another node:
every one gets 403 and the cluster map, bucket map and objects stay as they were."""

import json
import os
import time
import uuid

import pytest
import requests

import helpers
from conftest import _TARGETS, _free_port, _stop_nodes
from recorder import Recorder, send_raw
from test_cluster import SECRET, Cluster, Node, api, node_headers, node_id

BUCKET = "na-bucket"


@pytest.fixture(scope="module")
def rec(tmp_path_factory, log_dir):
    nodes = []

    def make(name, role, join=None, extra=()):
        root = str(tmp_path_factory.mktemp("na-" + name))
        n = Node(name, root, os.path.join(log_dir, "na-" + name), role, join)
        n.extra_args = list(extra)
        nodes.append(n)
        _TARGETS.append(n)
        return n

    # every call to the primary goes through to_primary: its public URL points there
    to_primary = Recorder()
    p1 = make("p1", "proxy", extra=["--public_url", to_primary.url])
    p1.port = _free_port()
    to_primary.upstream = ("127.0.0.1", p1.port)
    p1.start()
    t1 = make("t1", "target", lambda: to_primary.url)
    t1.start()
    c = Cluster([p1], [t1])
    c.wait_smap(lambda s: len(s["tmap"]) == 1, what="t1")
    # objects on t1 alone; t2 joins later and takes its share by rebalance (recorded)
    r = api("POST", p1.url + "/v1/buckets/" + BUCKET)
    assert r.status_code in (200, 201), r.text
    for i in range(30):
        r = api("PUT", "%s/v1/objects/%s/o%02d" % (p1.url, BUCKET, i), data=b"v1-%02d" % i)
        assert r.status_code == 200, r.text
    to_t2 = Recorder()
    t2 = make("t2", "target", lambda: to_primary.url, extra=["--public_url", to_t2.url])
    t2.port = _free_port()
    to_t2.upstream = ("127.0.0.1", t2.port)
    t2.start()
    c.targets.append(t2)
    c.wait_smap(lambda s: len(s["tmap"]) == 2, what="t2")
    c.wait_converged()
    helpers.wait_until(lambda: to_t2.captured("PUT", "/v1/objects/"), timeout=30,
                       what="a rebalance push to t2")
    helpers.wait_until(lambda: to_primary.captured("POST", "/v1/cluster/heartbeat"),
                       timeout=30, what="a heartbeat")
    # the tests compare the nodes' maps before and after: the rebalance must be over (its end
    # changes the map), seen by every node
    c.wait_smap(lambda s: "rebalance_id" not in s, timeout=120, what="the rebalance to end")
    c.wait_converged(timeout=60)
    yield c, to_primary, to_t2
    to_primary.close()
    to_t2.close()
    _stop_nodes(nodes)


def state(c):
    """What must not change: smap and BMD of every node, and t2's objects."""
    out = []
    for n in c.proxies + c.targets:
        s = n.smap()
        s.pop("heartbeat_age_ms", None)
        out.append((s, n.bmd()))
    return json.dumps(out, sort_keys=True)


def one(rec, method, path):
    got = rec.captured(method, path)
    assert got, "nothing captured for %s %s" % (method, path)
    return got[-1]


def test_replayed_join(rec):
    c, to_primary, _ = rec
    p1 = c.primary
    join = one(to_primary, "POST", "/v1/cluster/join")
    hb = one(to_primary, "POST", "/v1/cluster/heartbeat")
    before = state(c)
    # the same bytes
    assert send_raw(p1.url, join.raw)[0] == 403
    # the same headers with another body: a fake target at an address of the attacker's
    fake = json.loads(join.body)
    fake.update({"daemon_id": "tfake", "public_net": {"direct_url": "http://127.0.0.1:9"}})
    assert send_raw(p1.url, join.rebuild(body=json.dumps(fake).encode()))[0] == 403
    # another node's headers: t2's heartbeat signature on a join
    hs = [(k, v) for k, v in join.headers if not k.lower().startswith("x-hoard-")]
    hs += [(k, v) for k, v in hb.headers if k.lower().startswith("x-hoard-")]
    assert send_raw(p1.url, join.rebuild(headers=hs))[0] == 403
    # a signature made with a key derived from the wrong secret
    body = json.dumps(fake).encode()
    h = helpers.node_sign("not-the-secret", "tfake", "POST", p1.url + "/v1/cluster/join",
                          body=body, headers={"Content-Type": "application/json"})
    assert requests.post(p1.url + "/v1/cluster/join", data=body, headers=h,
                         timeout=5).status_code == 403
    # the right secret, but joining as another node than the one that signed
    h = helpers.node_sign(SECRET, "t-other", "POST", p1.url + "/v1/cluster/join", body=body,
                          headers={"Content-Type": "application/json"})
    assert requests.post(p1.url + "/v1/cluster/join", data=body, headers=h,
                         timeout=5).status_code == 403
    assert state(c) == before
    assert "tfake" not in p1.smap()["tmap"]


def test_replayed_heartbeat(rec):
    c, to_primary, _ = rec
    hb = one(to_primary, "POST", "/v1/cluster/heartbeat")
    assert send_raw(c.primary.url, hb.raw)[0] == 403
    t1 = node_id(c.targets[0])
    other = json.dumps({"daemon_id": t1, "smap_version": 0, "bmd_version": 0}).encode()
    assert send_raw(c.primary.url, hb.rebuild(body=other))[0] == 403
    # signed for the primary by t2, but the body speaks for t1: refused even when fresh
    url = c.primary.url + "/v1/cluster/heartbeat"
    h = node_headers("POST", url, node_id(c.primary), node_id(c.targets[1]), body=other)
    assert requests.post(url, data=other, headers=h, timeout=5).status_code == 403


def test_replayed_metasync(rec):
    c, _, to_t2 = rec
    t1, t2 = c.targets
    ms = one(to_t2, "PUT", "/v1/metasync")
    before = state(c)
    # the same bytes, to its recipient and to another target
    assert send_raw(t2.url, ms.raw)[0] == 403
    assert send_raw(t1.url, ms.raw)[0] == 403
    # the same headers with a bucket map that destroys the bucket (a newer version)
    j = json.loads(ms.body)
    j["bmd"]["version"] += 100
    j["bmd"]["buckets"] = {}
    assert send_raw(t2.url, ms.rebuild(body=json.dumps(j).encode()))[0] == 403
    # another node's headers: the primary's signature to t2 on a metasync to t1
    assert send_raw(t1.url, ms.rebuild(body=json.dumps(j).encode()))[0] == 403
    # a target may not push maps even with a valid signature of its own
    body = json.dumps(j).encode()
    h = node_headers("PUT", t2.url + "/v1/metasync", node_id(t2), node_id(t1), body=body)
    assert requests.put(t2.url + "/v1/metasync", data=body, headers=h,
                        timeout=5).status_code == 403
    assert state(c) == before
    r = api("GET", "%s/v1/objects/%s/o00" % (c.primary.url, BUCKET))
    assert r.status_code == 200 and r.content == b"v1-00"


def test_replayed_rebalance_push(rec):
    c, _, to_t2 = rec
    t1, t2 = c.targets
    push = one(to_t2, "PUT", "/v1/objects/")
    assert push.header("X-Hoard-Obj-Meta") and push.header("X-Hoard-Signature")
    key = push.path.rsplit("/", 1)[1]
    assert send_raw(t2.url, push.raw)[0] == 403
    assert send_raw(t2.url, push.rebuild(body=b"forged content"))[0] == 403
    meta = json.loads(push.header("X-Hoard-Obj-Meta"))
    meta["size"] = 14
    hs = [(k, json.dumps(meta) if k.lower() == "x-hoard-obj-meta" else v)
          for k, v in push.headers]
    assert send_raw(t2.url, push.rebuild(body=b"forged content", headers=hs))[0] == 403
    r = api("GET", "%s/v1/objects/%s/%s" % (c.primary.url, BUCKET, key))
    assert r.status_code == 200 and r.content == push.body


def test_body_rewritten_in_flight(rec):
    """The primary's next metasync to t2 is rewritten on the wire (a fresh, never used
    signature): t2 refuses it, and the change reaches t2 only as the primary sent it."""
    c, _, to_t2 = rec
    t2 = c.targets[1]
    seen = []

    def tamper(req):
        if req.method == "PUT" and req.path == "/v1/metasync" and not seen:
            seen.append(req)
            j = json.loads(req.body)
            j["bmd"]["buckets"].pop(BUCKET, None)
            return req.rebuild(body=json.dumps(j).encode())
        return None

    to_t2.tamper = tamper
    try:
        name = "na-new-%d" % int(time.time())
        r = api("POST", c.primary.url + "/v1/buckets/" + name)
        assert r.status_code in (200, 201), r.text
        helpers.wait_until(lambda: seen, timeout=20, what="a metasync to rewrite")
        helpers.wait_until(lambda: name in t2.bmd()["buckets"], timeout=30,
                           what="the untampered BMD on t2")
        assert BUCKET in t2.bmd()["buckets"]
        assert "the body does not match its signature" in open(t2.error_log).read()
        r = api("GET", "%s/v1/objects/%s/o01" % (c.primary.url, BUCKET))
        assert r.status_code == 200 and r.content == b"v1-01"
    finally:
        to_t2.tamper = None


def with_body(head, body):
    """A recorded answer's head with another body: the raw bytes a tamperer sends on."""
    lines = [ln for ln in head.split(b"\r\n")
             if ln and not ln.lower().startswith(b"content-length:")]
    return b"\r\n".join(lines) + b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body


def test_target_answer_rewritten_in_flight(rec):
    """A target's answers to the proxies' admin calls are signed (HD_NODE_CAP_SIGNED_ADMIN,
    announced in its map entry): t2's answer to the primary's GET /v1/jobs, rewritten on the
    wire to list a forged job, fails that call (503 naming t2) instead of being merged; the
    untouched answer carries t2's signature and the same call answers 200."""
    c, _, to_t2 = rec
    t2 = c.targets[1]
    assert c.primary.smap()["tmap"][node_id(t2)].get("hoard_caps", 0) & 1
    seen = []

    def tamper(req, status, head, body):
        if req.method == "GET" and req.path == "/v1/jobs":
            seen.append((head, body))
            if tamper.on:
                return with_body(head, json.dumps({"jobs": [
                    {"id": "forged-job", "kind": "evict", "state": "running"}]}).encode())
        return None

    tamper.on = False
    to_t2.tamper_answer = tamper
    try:
        r = api("GET", c.primary.url + "/v1/jobs")
        assert r.status_code == 200, r.text
        assert seen and b"x-hoard-signature:" in seen[-1][0].lower(), seen
        tamper.on = True
        r = api("GET", c.primary.url + "/v1/jobs")
        assert r.status_code == 503, r.text
        assert node_id(t2) in r.text and "forged-job" not in r.text, r.text
    finally:
        to_t2.tamper_answer = None
    r = api("GET", c.primary.url + "/v1/jobs")
    assert r.status_code == 200 and "forged-job" not in r.text, r.text


def test_target_bucket_answer_rewritten_in_flight(rec):
    """The same for the proxies' bucket fan-outs (HD_NODE_CAP_SIGNED_BUCKETS): t2's answer
    to GET /v1/buckets/B?summary, rewritten on the wire to claim a million objects, is
    reported as t2's error and left out of the sums; untouched, it is signed and counted."""
    c, _, to_t2 = rec
    t2 = c.targets[1]
    assert c.primary.smap()["tmap"][node_id(t2)].get("hoard_caps", 0) & 2
    name = "na-sum-" + uuid.uuid4().hex[:8]
    r = api("POST", c.primary.url + "/v1/buckets/" + name)
    assert r.status_code in (200, 201), r.text
    helpers.wait_until(lambda: name in t2.bmd()["buckets"], timeout=30, what="the bucket on t2")
    seen = []

    def tamper(req, status, head, body):
        if (req.method == "GET" and req.path == "/v1/buckets/" + name and
                "summary" in req.target.split("?", 1)[-1]):
            seen.append((head, body))
            if tamper.on:
                j = json.loads(body)
                j["objects"], j["bytes"] = 1000000, 1 << 40
                return with_body(head, json.dumps(j).encode())
        return None

    tamper.on = False
    to_t2.tamper_answer = tamper
    try:
        r = api("GET", c.primary.url + "/v1/buckets/" + name + "?summary")
        assert r.status_code == 200, r.text
        assert seen and b"x-hoard-signature:" in seen[-1][0].lower(), seen
        j = r.json()
        assert j["errors"] == 0 and "error" not in j["targets"][node_id(t2)], j
        tamper.on = True
        r = api("GET", c.primary.url + "/v1/buckets/" + name + "?summary")
        assert r.status_code == 200, r.text
        j = r.json()
        assert j["errors"] == 1 and "error" in j["targets"][node_id(t2)], j
        assert j["objects"] < 1000000 and j["bytes"] < 1 << 40, j
    finally:
        to_t2.tamper_answer = None


def test_fake_target_never_joins(rec, tmp_path_factory, log_dir):
    """hoardd targets with the wrong cluster secret, or none, keep knocking but never enter
    the map."""
    c = rec[0]
    fakes = []
    try:
        for name, secret in (("fake-wrong", "wrong-secret"), ("fake-none", "")):
            root = str(tmp_path_factory.mktemp("na-" + name))
            n = Node(name, root, os.path.join(log_dir, "na-" + name), "target",
                     lambda: c.primary.url)
            n.secret = secret
            if not secret:
                n.auth_keys = ""  # dev mode: hoardd refuses auth.keys without a secret
            n.ready_path = "/v1/health"  # it never becomes ready
            fakes.append(n)
            _TARGETS.append(n)
            n.start()
        before = c.primary.smap()["version"]
        helpers.wait_until(lambda: all("refused" in open(f.error_log).read() or
                                       "403" in open(f.error_log).read() for f in fakes),
                           timeout=20, what="the fakes' joins refused")
        s = c.primary.smap()
        ids = {node_id(f) for f in fakes}
        assert not ids & set(s["tmap"]), s["tmap"]
        assert s["version"] == before
    finally:
        _stop_nodes(fakes)


def test_secret_rotation(tmp_path_factory, log_dir):
    """cluster.secret changes with rolling restarts and no outage: OLD -> "OLD,NEW" (accept
    both) -> "NEW,OLD" (sign with the new one) -> "NEW"; objects flow after every restart,
    and at the end a node with the old secret alone is refused."""
    nodes = []

    def make(name, role, join=None):
        root = str(tmp_path_factory.mktemp("rot-" + name))
        n = Node(name, root, os.path.join(log_dir, "rot-" + name), role, join)
        n.secret = "old-secret-0123456789"
        nodes.append(n)
        _TARGETS.append(n)
        return n

    try:
        p1 = make("p1", "proxy")
        p1.start()
        ts = [make("t%d" % i, "target", lambda: p1.url) for i in (1, 2)]
        for t in ts:
            t.start()
        c = Cluster([p1], ts)
        c.wait_smap(lambda s: len(s["tmap"]) == 2, what="2 targets")
        bucket = "rot-%d" % int(time.time())
        assert api("POST", p1.url + "/v1/buckets/" + bucket).status_code in (200, 201)
        n = 0
        for secret in ("old-secret-0123456789,new-secret-9876543210",
                       "new-secret-9876543210,old-secret-0123456789", "new-secret-9876543210"):
            for node in [p1] + ts:
                node.secret = secret
                node.restart()
                c.wait_smap(lambda s: len(s["tmap"]) == 2 and not s.get("tmap_down"),
                            timeout=30, what="both targets live")
                for k in range(6):  # through the proxy, to both targets
                    url = "%s/v1/objects/%s/k%d-%d" % (p1.url, bucket, n, k)
                    r = api("PUT", url, data=b"x%d" % k)
                    assert r.status_code == 200, (secret, node.name, r.text)
                    assert api("GET", url).content == b"x%d" % k
                n += 1
        old = make("t-old", "target", lambda: p1.url)
        old.ready_path = "/v1/health"
        old.start()
        helpers.wait_until(lambda: "refused" in open(old.error_log).read(), timeout=20,
                           what="the old-secret node refused")
        assert node_id(old) not in p1.smap()["tmap"]
    finally:
        _stop_nodes(nodes)
