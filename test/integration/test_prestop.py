"""hoardd --prestop, a target's Kubernetes preStop hook (docs/operations.md, "Upgrades and
rolling restarts"), against a real cluster (1 proxy, 3 targets on loopback):

- the hook puts its own target into maintenance for a restart (flags MAINT|RESTART, signed as
  the target; `hoard cluster show` says maintenance-restart), waits for the rebalance that
  moves its objects away, and exits 0; with the target then stopped every object still reads
  back, readers running throughout see no error, and listings stay complete (no 503 for the
  missing target); when the target starts again it leaves maintenance by itself and gets its
  objects back;
- maintenance an operator set stays after such a restart;
- a wait that ends in its timeout takes the maintenance back (503 while away, not 404);
- without another target in service the hook sets no maintenance (which would leave the
  objects with no owner at all);
- bad input, an unreachable cluster and a wrong cluster secret end the hook with exit 1 and a
  message that says what is wrong, within its timeout; a node the cluster does not know (as
  after a decommission) has nothing to hand over: exit 0, saying so.

The same sequence on the chart's pods (preStop, SIGTERM, start, readiness, for every target
under a GET load) is in test/deploy/test_multihost.py.
"""
import hashlib
import os
import subprocess
import threading
import time
import urllib.parse
import uuid

import pytest
import requests

import helpers
from conftest import ACCESS_KEY, SECRET_KEY, _stop_nodes, start_cluster
from test_cli import Hoard

MAINT, RESTART = 1, 4


@pytest.fixture(scope="module")
def pcluster(tmp_path_factory, log_dir):
    nodes, ep = start_cluster(tmp_path_factory, log_dir, "ps-", 3)
    yield ep
    _stop_nodes(nodes)


def api(method, url, data=None, follow=True, timeout=30):
    h = helpers.sign_headers(method, url, ACCESS_KEY, SECRET_KEY)
    return requests.request(method, url, data=data, headers=h, allow_redirects=follow,
                            timeout=timeout)


def prestop(t, *extra, timeout=120):
    """Runs `hoardd --prestop` with target t's own settings (as the pod's preStop does)."""
    return subprocess.run(t.cmdline() + ["--prestop"] + list(extra), capture_output=True,
                          text=True, timeout=timeout, cwd=t.root)


def tid(t):
    return t.health()["id"]


def smap(ep):
    return ep.proxy.smap()


def wait_settled(ep, what):
    helpers.wait_until(lambda: "rebalance_id" not in smap(ep), timeout=60, interval=0.2,
                       what=what)


@pytest.fixture(scope="module")
def objects(pcluster):
    ep = pcluster
    bucket = "ps-" + uuid.uuid4().hex[:10]
    r = api("POST", ep.url + "/v1/buckets/" + bucket)
    assert r.status_code == 201, r.text
    objs = {}
    for i in range(60):
        body = os.urandom(1000 + 131 * i)
        url = "%s/v1/objects/%s/o%03d" % (ep.url, bucket, i)
        r = api("PUT", url, data=body)
        assert r.status_code == 200, r.text
        objs[url] = hashlib.md5(body).hexdigest()
    return objs


def read_ok(url, md5):
    r = api("GET", url, timeout=30)
    if r.status_code == 200 and hashlib.md5(r.content).hexdigest() == md5:
        return True
    return (url.rsplit("/", 1)[1], r.status_code, r.text[:200])


def all_readable(objs):
    for u, md5 in objs.items():
        assert read_ok(u, md5) is True, read_ok(u, md5)


class Readers:
    """Two threads reading the objects in turn until stop(); every failure is kept."""

    def __init__(self, objs):
        self.objs = sorted(objs.items())
        self.ok, self.failures = 0, []
        self.ev = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True)
                        for i in range(2)]
        for t in self.threads:
            t.start()

    def run(self, i):
        while not self.ev.is_set():
            url, md5 = self.objs[i % len(self.objs)]
            try:
                r = read_ok(url, md5)
            except requests.RequestException as e:
                r = repr(e)
            if r is True:
                self.ok += 1
            else:
                self.failures.append((time.strftime("%H:%M:%S"), r))
            i += 2
            time.sleep(0.005)

    def stop(self):
        self.ev.set()
        for t in self.threads:
            t.join(60)


def owned_by(ep, objs, t):
    return [u for u in objs if ep.owner(*urllib.parse.unquote(
        u.split("/v1/objects/", 1)[1]).split("/", 1)) == t.url]


def test_prestop_restart_no_failed_reads(pcluster, objects, tmp_path):
    ep = pcluster
    victim = ep.storage[1]
    vid = tid(victim)
    mine = owned_by(ep, objects, victim)
    assert mine, "the victim should own some of the objects"
    readers = Readers(objects)
    try:
        r = prestop(victim, "--prestop-timeout", "90")
        assert r.returncode == 0, (r.stdout, r.stderr)
        assert "in maintenance until it rejoins" in r.stdout and "done in" in r.stdout, r.stdout
        s = smap(ep)
        assert s["tmap"][vid]["flags"] == MAINT | RESTART, s["tmap"][vid]
        assert "rebalance_id" not in s, "prestop returned before the rebalance finished"
        assert not owned_by(ep, objects, victim), "reads still go to the target in maintenance"
        nodes = {n["id"]: n for n in Hoard(ep.proxy, str(tmp_path)).json("cluster", "show")[
            "nodes"]}
        assert (nodes[vid]["state"], nodes[vid]["flags"]) == ("maintenance-restart", 5), \
            nodes[vid]
        # the kubelet's SIGTERM: the objects it owned are served by the others meanwhile
        assert victim.stop() == 0, victim.log_tail()
        bucket = urllib.parse.urlsplit(next(iter(objects))).path.split("/")[3]
        names = {u.rsplit("/", 1)[1] for u in objects}

        def listed():
            r = api("GET", "%s/v1/buckets/%s?limit=1000" % (ep.url, bucket))
            assert r.status_code == 200, r.text  # complete without it: no 503
            return {e["name"] for e in r.json()["entries"]}
        assert listed() == names  # stopped, perhaps not yet noticed: it does not answer
        helpers.wait_until(lambda: vid in smap(ep).get("tmap_down", {}), timeout=30,
                           what="the primary to notice the stop")
        assert listed() == names  # down
        for u in mine:
            assert read_ok(u, objects[u]) is True, read_ok(u, objects[u])
        victim.start()  # same id, same data: it rejoins and leaves maintenance by itself
        helpers.wait_until(lambda: smap(ep)["tmap"].get(vid, {}).get("flags") == 0, timeout=30,
                           what="maintenance to end on rejoin")
        wait_settled(ep, "the rebalance bringing the objects back")
    finally:
        readers.stop()
    assert readers.ok > 20, readers.ok
    assert not readers.failures, "reads failed: %r" % readers.failures[:10]
    assert sorted(owned_by(ep, objects, victim)) == sorted(mine)
    all_readable(objects)


def test_operator_maintenance_outlives_the_restart(pcluster, objects):
    ep = pcluster
    victim = ep.storage[0]
    vid = tid(victim)
    url = "%s/v1/cluster/maintenance/%s" % (ep.url, vid)
    r = api("POST", url, data=b'{"on": true}')
    assert r.status_code == 200, r.text
    try:
        r = prestop(victim, "--prestop-timeout", "90")
        assert r.returncode == 0, (r.stdout, r.stderr)
        assert smap(ep)["tmap"][vid]["flags"] == MAINT
        assert victim.restart() == 0
        helpers.wait_until(lambda: vid in smap(ep)["tmap"] and "rebalance_id" not in smap(ep),
                           timeout=30, what="the rejoin")
        assert smap(ep)["tmap"][vid]["flags"] == MAINT, "the operator's maintenance stays"
        # an operator's "off" ends it (and would end a restart's maintenance too)
        r = api("POST", url, data=b'{"on": false}')
        assert r.status_code == 200, r.text
        assert smap(ep)["tmap"][vid]["flags"] == 0
    finally:
        api("POST", url, data=b'{"on": false}')
        wait_settled(ep, "the rebalance after maintenance off")
    all_readable(objects)


def test_prestop_refused_and_bad_input(pcluster, tmp_path):
    ep = pcluster
    t = ep.storage[2]
    vid = tid(t)
    hoardd = t.binary
    v0 = smap(ep)["version"]

    def run(*args, timeout=60):
        return subprocess.run([hoardd] + list(args), capture_output=True, text=True,
                              timeout=timeout, cwd=str(tmp_path))

    # the cluster cannot be reached: bounded by the timeout, and says where it tried
    t0 = time.monotonic()
    r = run("--prestop", "--role", "target", "--node.id", "t-x", "--data", str(tmp_path / "d"),
            "--cluster.join", "http://127.0.0.1:9", "--prestop-timeout", "2")
    assert r.returncode == 1 and "http://127.0.0.1:9/v1/cluster/smap" in r.stderr, r.stderr
    assert "refused" in r.stderr.lower(), r.stderr
    assert time.monotonic() - t0 < 50, "the wait is bounded by --prestop-timeout"
    # another cluster secret: the primary does not take it
    args = [a for a in t.cmdline()]
    args[args.index("--cluster.secret") + 1] = "not-the-cluster-secret"
    r = run(*(args[1:] + ["--prestop", "--prestop-timeout", "3"]))
    assert r.returncode == 1 and "refused (HTTP 403" in r.stderr, r.stderr
    assert "cluster.secret differs" in r.stderr, r.stderr
    assert smap(ep)["tmap"][vid]["flags"] == 0
    # a node id the cluster does not know (as after a decommission: the primary forgot it),
    # with the right secret: nothing to hand over, which is no error
    args = t.cmdline()[1:] + ["--node.id", "t-not-in-the-map", "--prestop", "--prestop-timeout",
                              "5"]
    r = run(*args)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "t-not-in-the-map is not in the cluster map" in r.stdout, r.stdout
    # bad arguments
    for bad, msg in [(["--prestop", "--prestop-timeout", "0"], "--prestop-timeout takes"),
                     (["--prestop", "--prestop-timeout", "x"], "--prestop-timeout takes"),
                     (["--prestop-timeout", "5"], "goes with --prestop"),
                     (["--prestop", "--role", "proxy"], "only a target")]:
        r = run(*bad)
        assert r.returncode == 1 and msg in r.stderr, (bad, r.stderr)
    # nothing changed in the cluster
    s = smap(ep)
    assert all(e["flags"] == 0 for e in s["tmap"].values()), s["tmap"]
    assert s["version"] >= v0
    # a target may ask maintenance only for itself: signed by t for another target, refused
    other = tid(ep.storage[0])
    url = "%s/v1/cluster/maintenance/%s" % (ep.url, other)
    body = b'{"on": true, "restart": true}'
    r = requests.post(url, data=body, timeout=10, headers=helpers.node_sign(
        t.secret, vid, "POST", url, to=tid(ep.proxy), body=body))
    assert r.status_code == 403, r.text
    # and for itself only its restart's maintenance, or taking that back
    url = "%s/v1/cluster/maintenance/%s" % (ep.url, vid)
    for body in (b'{"on": true}', b'{"on": false}', b'{}'):
        r = requests.post(url, data=body, timeout=10, headers=helpers.node_sign(
            t.secret, vid, "POST", url, to=tid(ep.proxy), body=body))
        assert r.status_code == 403 and "its own restart" in r.text, (body, r.text)
    # "restart" only goes with maintenance on
    r = api("POST", "%s/v1/cluster/maintenance/%s" % (ep.url, vid),
            data=b'{"on": false, "restart": true}')
    assert r.status_code == 400 and "restart" in r.text, r.text
    r = api("POST", "%s/v1/cluster/maintenance/%s" % (ep.url, vid), data=b'{"restart": 1}')
    assert r.status_code == 400, r.text
    assert smap(ep)["tmap"][vid]["flags"] == 0


def test_prestop_without_another_target_in_service(pcluster):
    """When no other target could take the objects over (the rest in maintenance), the hook
    sets no maintenance: that would leave its objects without any owner before the stop."""
    ep = pcluster
    t = ep.storage[2]
    others = [tid(o) for o in ep.storage[:2]]
    try:
        for o in others:
            r = api("POST", "%s/v1/cluster/maintenance/%s" % (ep.url, o), data=b'{"on": true}')
            assert r.status_code == 200, r.text
        r = prestop(t, "--prestop-timeout", "30")
        assert r.returncode == 0, (r.stdout, r.stderr)
        assert "no other target in service" in r.stdout, r.stdout
        assert smap(ep)["tmap"][tid(t)]["flags"] == 0
    finally:
        for o in others:
            api("POST", "%s/v1/cluster/maintenance/%s" % (ep.url, o), data=b'{"on": false}')
        wait_settled(ep, "the rebalance after maintenance off")


class OneSmapThen503:
    """A stand-in for cluster.join: relays the first GET /v1/cluster/smap to the real proxy
    (node signatures cover the path, not the host), then answers 503 to everything, so that
    the hook's wait for the rebalance can only end in its timeout."""

    def __init__(self, upstream):
        import http.server

        outer = self
        self.upstream, self.served = upstream, 0

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _any(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                if outer.served == 0 and self.path == "/v1/cluster/smap":
                    outer.served += 1
                    hdrs = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                    r = requests.request(self.command, outer.upstream + self.path, data=body,
                                         headers=hdrs, timeout=10)
                    self.send_response(r.status_code)
                    for k, v in r.headers.items():
                        if k.lower() not in ("transfer-encoding", "connection",
                                             "content-length"):
                            self.send_header(k, v)
                    self.send_header("Content-Length", str(len(r.content)))
                    self.end_headers()
                    self.wfile.write(r.content)
                    return
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()
            do_GET = do_POST = _any

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        self.th = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.th.start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


def test_prestop_timeout_takes_maintenance_back(pcluster):
    """A wait that ends in its timeout (here: the cluster map cannot be read again) takes the
    maintenance it set back, exit 1: while the target is away its objects then answer 503
    (retry) rather than 404 from a new owner that may lack them."""
    ep = pcluster
    t = ep.storage[1]
    vid = tid(t)
    fake = OneSmapThen503(ep.url)
    try:
        args = t.cmdline()
        args[args.index("--cluster.join") + 1] = fake.url
        r = subprocess.run(args + ["--prestop", "--prestop-timeout", "3"], capture_output=True,
                           text=True, timeout=120, cwd=t.root)
    finally:
        fake.close()
    assert fake.served == 1
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "in maintenance until it rejoins" in r.stdout, r.stdout
    assert "HTTP 503" in r.stderr and "maintenance taken back" in r.stderr, r.stderr
    assert smap(ep)["tmap"][vid]["flags"] == 0
    wait_settled(ep, "the rebalance after maintenance off")
