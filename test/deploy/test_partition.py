"""A network partition cannot give the cluster two primaries that both change the bucket map
(issue 12, docs/cluster.md "Primary election").

Three proxies and two targets, each in its own network namespace on a bridge (k8semu.Network).
The primary's cable is pulled: it keeps running and a client on its own host keeps asking it
for bucket changes, while clients on the other side ask the other proxies. Only one side ever
accepts a change: the side with the majority, after it has elected a new primary. When the
cable is back, the old primary follows, and every node holds the majority's bucket map.
Skipped where network namespaces cannot be made (not root)."""

import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from k8semu import Network, _setns

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "test", "integration"))
import helpers  # noqa: E402

BIN = os.path.join(REPO, os.environ.get("HOARD_BUILD", "build"), "bin", "hoardd")
AK, SK = "AKPART", "partition-secret-key"
SECRET = "partition-cluster-secret"
PORT = 8080
HB_MS, DEAD_AFTER = 300, 5  # lease 1.5 s


class NsNode:
    def __init__(self, net, short, role, join, root):
        self.net, self.short, self.role = net, short, role
        self.ns, self.ip, _ = net.nodes[short]
        self.url = "http://%s:%d" % (self.ip, PORT)
        self.data = os.path.join(root, short)
        self.log = os.path.join(root, short + ".log")
        os.makedirs(self.data, exist_ok=True)
        args = [BIN, "--role", role, "--listen", "%s:%d" % (self.ip, PORT), "--data", self.data,
                "--auth.keys", "%s:%s" % (AK, SK), "--cluster.secret", SECRET,
                "--cluster.heartbeat_ms", str(HB_MS), "--cluster.dead_after", str(DEAD_AFTER)]
        if role == "target":
            args += ["--mountpaths", os.path.join(self.data, "mp1")]
        if join:
            args += ["--cluster.join", join]
        self.args = args
        self.proc = None
        # a client on this node's own host: the side of the partition it is on
        self.local = ThreadPoolExecutor(4, initializer=_setns, initargs=(self.ns,))

    def start(self):
        with open(self.log, "ab") as f:
            self.proc = subprocess.Popen(["ip", "netns", "exec", self.ns] + self.args,
                                         stdin=subprocess.DEVNULL, stdout=f, stderr=f)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.local.shutdown(wait=False, cancel_futures=True)

    def req(self, method, path, data=None, via=None, timeout=10):
        """A signed request to this node from the hub (via=None) or from another node's
        host (via=that node)."""
        url = self.url + path

        def go():
            h = helpers.sign_headers(method, url, AK, SK)
            return requests.request(method, url, data=data, headers=h, timeout=timeout)
        if via is not None:
            return via.local.submit(go).result()
        return self.net.call(go)

    def smap(self, via=None):
        return self.req("GET", "/v1/cluster", via=via).json()

    def bmd(self, via=None):
        return self.req("GET", "/v1/cluster/bmd", via=via).json()


def wait(pred, timeout, what):
    end = time.monotonic() + timeout
    while True:
        try:
            got = pred()
        except (requests.RequestException, ValueError):
            got = None
        if got:
            return got
        if time.monotonic() > end:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.2)


@pytest.fixture(scope="module")
def part():
    why = Network.can_run()
    if why:
        pytest.skip("network namespaces: " + why)
    if not os.access(BIN, os.X_OK):
        pytest.skip("hoardd not built: " + BIN)
    net = Network("hp%d" % (os.getpid() % 100000))
    names = ["p1", "p2", "p3", "t1", "t2"]
    root = tempfile.mkdtemp(prefix="hoard-partition-")
    nodes = {}
    try:
        net.up(names)
        problems = net.check_isolation()
        assert not problems, problems
        p1 = nodes["p1"] = NsNode(net, "p1", "proxy", None, root)
        p1.start()
        wait(lambda: p1.req("GET", "/v1/health").status_code == 200, 20, "p1")
        for n in names[1:]:
            nodes[n] = NsNode(net, n, "proxy" if n[0] == "p" else "target", p1.url, root)
            nodes[n].start()
        wait(lambda: len(p1.smap()["pmap"]) == 3 and len(p1.smap()["tmap"]) == 2, 30,
             "3 proxies and 2 targets")
        yield net, nodes, root
    finally:
        for n in nodes.values():
            n.stop()
        net.down()
        for n in nodes.values():
            if os.path.exists(n.log):
                with open(n.log, "rb") as f:
                    sys.stderr.write("---- %s log (last 2 KiB) ----\n%s\n" %
                                     (n.short, f.read()[-2048:].decode("utf-8", "replace")))


def test_partition_one_side_changes(part):
    net, nodes, _ = part
    p1, p2, p3 = nodes["p1"], nodes["p2"], nodes["p3"]
    old = p1.smap()["primary"]
    assert old == p1.req("GET", "/v1/health").json()["id"]
    tag = uuid.uuid4().hex[:6]
    accepted = {"minority": [], "majority": []}
    refused = []  # the minority side's answers: it answers, and says no
    stop = threading.Event()

    def minority():
        """A client next to the isolated primary keeps asking it for new buckets."""
        i = 0
        while not stop.is_set():
            name = "min-%s-%d" % (tag, i)
            try:
                r = p1.req("POST", "/v1/buckets/" + name, via=p1, timeout=5)
                if r.status_code in (200, 201):
                    accepted["minority"].append(name)
                else:
                    refused.append(r.status_code)
            except requests.RequestException:
                pass
            i += 1
            time.sleep(0.1)

    net.link("p1", False)  # the cable out: p1 alone, the rest together
    try:
        t = threading.Thread(target=minority, daemon=True)
        t.start()
        # the majority elects and accepts changes
        name = "maj-" + tag

        def create():
            r = p2.req("POST", "/v1/buckets/" + name, timeout=5)
            return r.status_code in (200, 201)
        wait(create, 30, "a bucket created on the majority side")
        accepted["majority"].append(name)
        new = p2.smap()["primary"]
        assert new != old and new == p3.smap()["primary"]
        time.sleep(2 * HB_MS * DEAD_AFTER / 1000.0)  # more minority attempts, past its lease
        stop.set()
        t.join(30)
    finally:
        net.link("p1", True)
    assert accepted["minority"] == [], accepted  # never both sides
    assert len(refused) > 5 and set(refused) == {503}, refused
    # healed: the old primary follows the new one, and all nodes hold the majority's map
    wait(lambda: p1.smap(via=p1)["primary"] == new, 30, "p1 follows the new primary")
    assert p1.req("GET", "/v1/health").json()["primary"] is False

    def converged():
        bmds = [n.bmd() for n in nodes.values()]
        return all(name in b["buckets"] and not any(k.startswith("min-" + tag)
                                                   for k in b["buckets"]) for b in bmds) \
            and len({(b["term"], b["version"]) for b in bmds}) == 1
    wait(converged, 30, "every node holds the majority's bucket map")
    # and changes work through the old primary again (forwarded to the new one)
    r = p1.req("POST", "/v1/buckets/after-" + tag)
    assert r.status_code in (200, 201), r.text
