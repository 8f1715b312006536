"""Multi-host test: the Helm chart's pods (1 primary proxy, 3 targets), rendered with
test/deploy/multihost-values.yaml, each run in its own network namespace with its own
address, configured exactly as the manifests configure them (k8semu.py: env, Secrets,
ConfigMap file, volumes, security context, probes). Clients (curl, aws CLI, requests) run in a
hub namespace, like a host on the pod network.

Checks: redirects point at the targets' own addresses and work; the S3 relay works; a
target's link taken down and back: its objects (and listings) answer 503 while it is down,
the rest keeps working, and it rejoins with everything; rolling restart of every target
(maintenance, rebalance, restart, rejoin, maintenance off) loses nothing and keeps serving;
the chart's RollingUpdate with its preStop hook (hoardd --prestop), as the kubelet runs it,
gives readers and writers no error and needs no operator.
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

import pytest
import requests

from k8semu import Loader, Manifests, Network, Pod, PodSpec, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "test", "integration"))
import helpers  # noqa: E402  (SigV4 signing shared with the integration tests)

HELM = os.path.join(REPO, ".deploy-tools", "bin", "helm")
CHART = os.path.join(REPO, "deploy", "helm", "hoard")
VALUES = os.path.join(HERE, "multihost-values.yaml")
BIN = os.path.join(REPO, os.environ.get("HOARD_BUILD", "build"), "bin", "hoardd")
RELEASE, NAMESPACE = "mh", "hoard-mh"
BUCKET = "mhdata"


def _skip_reason():
    why = Network.can_run()
    return None if why is None else "multi-host test needs network namespaces: " + why


SKIP = _skip_reason()
pytestmark = pytest.mark.skipif(SKIP is not None, reason=SKIP or "")


class Cluster:
    def __init__(self, net, m, pods, keys):
        self.net, self.m = net, m
        self.primary = pods[0]
        self.targets = pods[1:]
        self.ak, self.sk = keys
        self.objects = {}  # name -> md5 hex of what was written
        self.t = threading_local()

    # -- client calls, all made from the hub namespace --
    def _req(self, method, url, data=None, follow=False, timeout=30, signed=True):
        s = self.t.session
        h = helpers.sign_headers(method, url, self.ak, self.sk) if signed else {}
        return s.request(method, url, data=data, headers=h, allow_redirects=follow,
                         timeout=timeout)

    def req(self, *a, **kw):
        return self.net.call(lambda: self._req(*a, **kw))

    def obj_url(self, key, base=None):
        return "%s/v1/objects/%s/%s" % (base or self.primary.spec.url, BUCKET,
                                        urllib.parse.quote(key))

    def smap(self):
        r = self.req("GET", self.primary.spec.url + "/v1/cluster")
        assert r.status_code == 200, r.text
        return r.json()

    def ready(self, pod):
        def probe():
            try:
                return requests.get(pod.spec.probe_url("readinessProbe"), timeout=2).status_code
            except requests.RequestException as e:
                return repr(e)
        return self.net.call(probe) == 200

    def wait_ready(self, pod, timeout=30):
        def ok():
            if not pod.alive():
                raise AssertionError("%s exited:\n%s" % (pod.spec.name, pod.tail()))
            return self.ready(pod)
        wait_for(ok, timeout, "%s readiness probe" % pod.spec.name)

    def put(self, key, body):
        r = self._req("PUT", self.obj_url(key), data=body, follow=True)
        if r.status_code == 200:
            self.objects[key] = hashlib.md5(body).hexdigest()
        return r

    def get_ok(self, key):
        """True when GET returns what was written, else what went wrong."""
        r = self._req("GET", self.obj_url(key), follow=True)
        if r.status_code == 200 and hashlib.md5(r.content).hexdigest() == self.objects[key]:
            return True
        hops = [h.headers.get("Location", "").split("?")[0] for h in r.history]
        return (key, r.status_code, r.text[:200], hops)

    def owner(self, key):
        """The target the proxy redirects `key` to (by its advertised URL)."""
        r = self.req("GET", self.obj_url(key))
        assert r.status_code == 307, (key, r.status_code, r.text)
        host = urllib.parse.urlsplit(r.headers["Location"]).netloc
        for t in self.targets:
            if host == "%s:%d" % (t.spec.ip, t.spec.port("http")):
                return t
        raise AssertionError("redirect to %s, which is no target's address" % host)

    def admin(self, path, body=None):
        r = self.req("POST", self.primary.spec.url + path,
                     data=json.dumps(body) if body is not None else None)
        assert r.status_code in (200, 202), (path, r.status_code, r.text)
        return r

    def wait_rebalanced(self, since, timeout=90):
        """Waits for the rebalance started after smap version `since` to finish: the primary
        marks the smap (rebalance_id) when it starts one and clears the mark, in a newer
        version, when every target is done."""
        def done():
            s = self.smap()
            return s["version"] > since and not s.get("rebalance_id")
        wait_for(done, timeout, "rebalance after smap v%d to finish" % since, interval=0.2)


def threading_local():
    import threading

    class L(threading.local):
        def __init__(self):
            self.session = requests.Session()
    return L()


@pytest.fixture(scope="module")
def cluster(request):
    assert os.path.exists(HELM), "helm missing: run deploy/local/install-deps.sh"
    assert os.path.exists(BIN), "build hoardd first (make)"
    rendered = subprocess.run([HELM, "template", RELEASE, CHART, "--namespace", NAMESPACE,
                               "-f", VALUES], capture_output=True, text=True, check=True).stdout
    m = Manifests(rendered)
    full = "%s-hoard" % RELEASE
    primary_ss = m.get("StatefulSet", full + "-primary")
    target_ss = m.get("StatefulSet", full + "-target")
    assert not m.of_kind("Deployment"), "the test values ask for the primary proxy only"
    ntargets = target_ss["spec"]["replicas"]
    assert ntargets == 3

    tag = "hmh%d" % (os.getpid() % 100000)
    net = Network(tag)
    root = tempfile.mkdtemp(prefix="hoard-multihost-")
    logdir = os.environ.get("HOARD_DEPLOY_LOGS") or os.path.join(root, "logs")
    os.makedirs(logdir, exist_ok=True)
    os.chmod(root, 0o755)
    # pods run as the chart's non-root user, which may not be able to reach the checkout
    # (a clone under a 0700 directory, as `mktemp -d` makes): they run a copy, as a container
    # runs the binary of its image
    podbin = os.path.join(root, "bin", "hoardd")
    os.makedirs(os.path.dirname(podbin), mode=0o755)
    shutil.copy2(BIN, podbin)
    os.chmod(podbin, 0o755)
    pods = []
    try:
        net.up(["p0"] + ["t%d" % i for i in range(ntargets)])
        problems = net.check_isolation()
        assert not problems, "network not isolated; nothing was sent:\n" + "\n".join(problems)
        # cluster DNS: the primary's headless Service names the primary pod
        join = urllib.parse.urlsplit(dict((e["name"], e.get("value")) for e in
                                          target_ss["spec"]["template"]["spec"]["containers"][0]
                                          ["env"])["HOARD_CLUSTER_JOIN"]).hostname
        net.hosts({join: net.nodes["p0"][1]})
        specs = [PodSpec(m, primary_ss, 0, NAMESPACE, net.nodes["p0"][1], root)]
        specs += [PodSpec(m, target_ss, i, NAMESPACE, net.nodes["t%d" % i][1], root)
                  for i in range(ntargets)]
        pods = [Pod(s, net.nodes[("p0" if i == 0 else "t%d" % (i - 1))][0], podbin, logdir)
                for i, s in enumerate(specs)]
        keys = tuple(m.secret_value(full + "-auth", "auth.keys").split(",")[0].split(":")[:2])
        c = Cluster(net, m, pods, keys)
        pods[0].start()
        c.wait_ready(pods[0])
        for p in pods[1:]:
            p.start()
        for p in pods[1:]:
            c.wait_ready(p)
        yield c
    except BaseException:
        for p in pods:
            print("---- %s (%s)\n%s" % (p.spec.name, p.log, p.tail(40)))
        raise
    finally:
        if request.session.testsfailed:
            for p in pods:
                print("---- %s (%s)\n%s" % (p.spec.name, p.log, p.tail(40)))
        codes = {p.spec.name: p.stop() for p in pods}
        net.down()
        if not os.environ.get("HOARD_DEPLOY_KEEP"):
            subprocess.run(["rm", "-rf", root])
    bad = {n: rc for n, rc in codes.items() if rc not in (0, None)}
    assert not bad, "pods did not exit cleanly on SIGTERM: %r" % bad


def test_pods_configured_like_the_chart(cluster):
    """Every HOARD_* variable the chart sets is a setting hoardd takes from the environment,
    and the cluster that formed is the one the manifests describe."""
    for p in [cluster.primary] + cluster.targets:
        out = p.print_config()
        from_env = {line.split()[0] for line in out.splitlines() if line.rstrip().endswith("(env)")}
        missing = [k for k in p.spec.env if k.startswith("HOARD_") and k != "HOARD_CONFIG"
                   and not any(k == "HOARD_" + s.upper().replace(".", "_") for s in from_env)]
        assert not missing, "%s: env not taken by hoardd: %s\n%s" % (p.spec.name, missing, out)
        from_file = {line.split()[0] for line in out.splitlines()
                     if line.rstrip().endswith("(file)")}
        assert {"cluster.heartbeat_ms", "native.redirect", "s3.redirect"} <= from_file, out
    s = cluster.smap()
    assert s["primary"] == cluster.primary.spec.name
    tmap = s["tmap"]
    assert sorted(tmap) == sorted(t.spec.name for t in cluster.targets), tmap
    for t in cluster.targets:
        assert tmap[t.spec.name]["public_net"]["direct_url"] == t.spec.url
        assert len(tmap[t.spec.name]["mountpaths"]) == 2
    # liveness probe and metrics on every pod, from the client host
    for p in [cluster.primary] + cluster.targets:
        r = cluster.net.call(lambda: requests.get(p.spec.probe_url("livenessProbe"), timeout=5))
        assert r.status_code == 200 and r.json()["id"] == p.spec.name
        r = cluster.net.call(lambda: requests.get(p.spec.url + "/metrics", timeout=5))
        assert r.status_code == 200 and "hoard_requests_total" in r.text


def test_redirects_point_at_target_addresses(cluster):
    c = cluster
    r = c.req("POST", c.primary.spec.url + "/v1/buckets/" + BUCKET)
    assert r.status_code in (200, 201), r.text
    bodies = {"obj-%03d" % i: os.urandom(2000 + 997 * i) for i in range(60)}
    for k, b in bodies.items():
        r = c.net.call(c.put, k, b)
        assert r.status_code == 200, (k, r.status_code, r.text)
    owners = {}
    for k in bodies:
        owners.setdefault(c.owner(k).spec.name, []).append(k)
    assert len(owners) == 3, "objects should spread over all 3 targets: %r" % {
        n: len(v) for n, v in owners.items()}
    # curl -L from the client host follows the 307 to the target's own address
    for name, keys in owners.items():
        k = keys[0]
        out = c.net.run("curl", "-sS", "-L", "--aws-sigv4", "aws:amz:us-east-1:s3",
                        "--user", "%s:%s" % (c.ak, c.sk), "-H",
                        "x-amz-content-sha256: UNSIGNED-PAYLOAD", "-w", "\n%{url_effective}",
                        c.obj_url(k))
        assert out.returncode == 0, out.stderr
        body, _, last = out.stdout.rpartition(b"\n")
        t = next(t for t in c.targets if t.spec.name == name)
        assert last.decode().startswith(t.spec.url + "/v1/objects/"), last
        assert hashlib.md5(body).hexdigest() == c.objects[k]


def test_s3_relay(cluster, tmp_path):
    c = cluster
    src = tmp_path / "payload.bin"
    src.write_bytes(os.urandom(5 << 20))
    env = dict(os.environ, AWS_ACCESS_KEY_ID=c.ak, AWS_SECRET_ACCESS_KEY=c.sk,
               AWS_DEFAULT_REGION="us-east-1", AWS_CONFIG_FILE=str(tmp_path / "none"),
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"))
    aws = "/usr/bin/aws" if os.path.exists("/usr/bin/aws") else "aws"
    ep = ["--endpoint-url", c.primary.spec.url]

    def run(*args):
        r = subprocess.run(["ip", "netns", "exec", c.net.hub, aws] + ep + list(args),
                           capture_output=True, env=env, timeout=120)
        assert r.returncode == 0, (args, r.stdout, r.stderr)
        return r.stdout.decode()
    run("s3", "cp", str(src), "s3://%s/s3/payload.bin" % BUCKET)
    run("s3", "cp", "s3://%s/s3/payload.bin" % BUCKET, str(tmp_path / "back.bin"))
    assert (tmp_path / "back.bin").read_bytes() == src.read_bytes()
    c.objects["s3/payload.bin"] = hashlib.md5(src.read_bytes()).hexdigest()
    listing = run("s3", "ls", "s3://%s/" % BUCKET, "--recursive")
    assert listing.count("\n") == len(c.objects), listing


def test_target_down_and_back(cluster):
    c = cluster
    victim = c.targets[1]
    mine = [k for k in sorted(c.objects) if c.owner(k) is victim][:5]
    others = [k for k in sorted(c.objects) if c.owner(k) is not victim][:10]
    assert mine and others
    c.net.link("t1", False)
    t0 = time.monotonic()
    try:
        s = wait_for(lambda: (lambda s: s if victim.spec.name in s.get("tmap_down", {}) else None)(
            c.smap()), 30, "the primary to mark %s down" % victim.spec.name, interval=0.1)
        # bounded: dead_after silent intervals, then one health probe (max(2 intervals, 1 s))
        hb = c.m.get("ConfigMap", "%s-hoard-config" % RELEASE)["data"]["hoard.conf"]
        ms = int(re.search(r"cluster.heartbeat_ms = (\d+)", hb).group(1))
        dead = int(re.search(r"cluster.dead_after = (\d+)", hb).group(1))
        bound = (ms * (dead + 1) + max(2 * ms, 1000)) / 1000.0 + 1.5
        assert time.monotonic() - t0 < bound, "marked down after %.1fs (bound %.1fs)" % (
            time.monotonic() - t0, bound)
        assert victim.spec.name not in s["tmap"]
        for k in mine:
            r = c.req("GET", c.obj_url(k), follow=True)
            assert r.status_code == 503, (k, r.status_code, r.text)
            assert victim.spec.name in r.text
        r = c.req("PUT", c.obj_url(mine[0]), data=b"must not land elsewhere", follow=True)
        assert r.status_code == 503, r.text
        for k in others:
            assert c.net.call(c.get_ok, k) is True, c.net.call(c.get_ok, k)
        r = c.req("GET", c.primary.spec.url + "/v1/buckets/" + BUCKET)
        assert r.status_code == 503, "listing without a target would be incomplete: " + r.text
        assert victim.alive(), "the target process itself keeps running while unplugged"
    finally:
        c.net.link("t1", True)
    s = wait_for(lambda: (lambda s: s if victim.spec.name in s["tmap"] else None)(c.smap()), 30,
                 "%s to rejoin" % victim.spec.name, interval=0.3)
    c.wait_ready(victim)
    c.wait_rebalanced(s["version"] - 1)  # rejoining starts one (marked in that version)
    for k in c.objects:
        r = c.net.call(c.get_ok, k)
        assert r is True, "lost or changed after the target came back: %r" % (r,)
    r = c.req("GET", c.primary.spec.url + "/v1/buckets/" + BUCKET + "?limit=1000")
    assert r.status_code == 200, r.text
    assert {e["name"] for e in r.json()["entries"]} == set(c.objects)


def phase_reader(c, keys, phase):
    """A Loader function reading keys in turn; a failure names the phase it happened in."""
    def reader(i):
        r = c.get_ok(keys[i % len(keys)])
        return r if r is True else r + (phase[0],)
    return reader


def test_rolling_restart_with_maintenance(cluster):
    """StatefulSet order (highest ordinal first), one target at a time: maintenance on,
    rebalance its objects away, SIGTERM, start the same pod again, readiness, maintenance off,
    rebalance back. Readers and writers run throughout and must see no error."""
    c = cluster
    keys = sorted(c.objects)
    written = []
    phase = ["start"]

    reader = phase_reader(c, keys, phase)

    def writer(i):
        k = "rolling/w-%05d" % i
        r = c.put(k, ("written during the rolling restart %d" % i).encode() * 20)
        if r.status_code == 200:
            written.append(k)
            return True
        return (k, r.status_code, r.text[:200])

    loaders = [Loader(c.net, reader), Loader(c.net, writer)]
    for ld in loaders:
        ld.start()
    try:
        for t in reversed(c.targets):
            name = t.spec.name
            phase[0] = name + ": maintenance on"
            c.admin("/v1/cluster/maintenance/" + name, {"on": True})
            phase[0] = name + ": rebalance away"
            v = c.smap()["version"]
            c.admin("/v1/cluster/rebalance")
            c.wait_rebalanced(v)
            phase[0] = name + ": restart"
            hook, rc = t.terminate()  # `kubectl delete pod`: its preStop hook runs too
            assert hook and hook[0] == 0, "%s preStop: %r" % (name, hook)
            assert rc == 0, "%s exited with %r on SIGTERM:\n%s" % (name, rc, t.tail())
            t.start()
            c.wait_ready(t)
            assert c.smap()["tmap"][name]["flags"] & 1, "maintenance survives the restart"
            phase[0] = name + ": maintenance off, rebalance back"
            v = c.smap()["version"]
            c.admin("/v1/cluster/maintenance/" + name, {"on": False})
            c.wait_rebalanced(v)
    finally:
        for ld in loaders:
            ld.stop()
    reads, writes = loaders
    print("rolling restart: %d reads, %d writes, %d+%d failures" % (
        reads.ok, writes.ok, len(reads.failures), len(writes.failures)))
    assert reads.ok > 50 and writes.ok > 20, (reads.ok, writes.ok)
    assert not reads.failures, "reads failed during the rolling restart: %r" % reads.failures[:10]
    assert not writes.failures, "writes failed during the rolling restart: %r" % writes.failures[:10]
    for k in sorted(c.objects):
        r = c.net.call(c.get_ok, k)
        assert r is True, "lost after the rolling restart: %r" % (r,)
    s = c.smap()
    assert all(s["tmap"][t.spec.name]["flags"] == 0 for t in c.targets)
    # every object is back on the target HRW names for the full cluster: no 307 to others
    spread = {}
    for k in keys[:30]:
        spread[c.owner(k).spec.name] = spread.get(c.owner(k).spec.name, 0) + 1
    assert len(spread) == 3, spread



def test_rolling_update_with_prestop(cluster):
    """The chart's default, RollingUpdate with the preStop hook, as the StatefulSet controller
    and the kubelet run it: highest ordinal first, for each target the preStop hook
    (`hoardd --prestop`: maintenance until it rejoins, its objects moved away), SIGTERM, the
    pod started again with the new image (another copy of hoardd) on the same volumes, and
    the next one only once it is Ready. Nobody calls the admin API: the maintenance ends by
    itself on rejoin. Readers (a fixed object set), a writer and a lister run throughout: zero
    failed reads, writes and listings, every object readable after, placement back on all
    three targets."""
    c = cluster
    assert c.targets[0].spec.container["lifecycle"]["preStop"]["exec"]["command"][1] == \
        "--prestop", "the chart's targets have the preStop hook"
    keys = sorted(k for k in c.objects if not k.startswith("rolling/"))
    assert len(keys) >= 30, len(keys)
    phase = ["start"]
    newbin = c.targets[0].binary + "-new"
    shutil.copy2(c.targets[0].binary, newbin)

    reader = phase_reader(c, keys, phase)

    def writer(i):
        k = "rolling/u-%05d" % i
        r = c.put(k, ("written during the rolling update %d" % i).encode() * 30)
        return True if r.status_code == 200 else (k, r.status_code, r.text[:200], phase[0])

    def lister(i):
        r = c._req("GET", c.primary.spec.url + "/v1/buckets/" + BUCKET + "?limit=10000")
        if r.status_code != 200:
            return ("list", r.status_code, r.text[:200], phase[0])
        missing = set(keys) - {e["name"] for e in r.json()["entries"]}
        if missing:  # an object in flight between two targets may be missed by one listing
            misses.append((phase[0], sorted(missing)[:3]))
        return True

    misses = []
    loaders = [Loader(c.net, reader), Loader(c.net, reader), Loader(c.net, reader),
               Loader(c.net, writer), Loader(c.net, lister)]
    for ld in loaders:
        ld.start()
    hooks = {}
    try:
        for t in reversed(c.targets):
            name = t.spec.name
            phase[0] = name + ": preStop and SIGTERM"
            hook, rc = t.terminate()
            hooks[name] = hook
            assert hook and hook[0] == 0, "%s preStop failed: %r" % (name, hook)
            assert rc == 0, "%s exited with %r on SIGTERM:\n%s" % (name, rc, t.tail())
            s = c.smap()
            assert s["tmap"].get(name, s.get("tmap_down", {}).get(name, {})).get("flags") == 5, \
                "in maintenance for its restart while away: %r" % s
            phase[0] = name + ": new pod, same volumes"
            t.binary = newbin
            t.start()
            c.wait_ready(t)
            wait_for(lambda: c.smap()["tmap"][name]["flags"] == 0, 30,
                     "%s to leave maintenance on rejoin" % name)
        phase[0] = "done: last rebalance back"
        wait_for(lambda: not c.smap().get("rebalance_id"), 90, "the last rebalance to finish")
    finally:
        for ld in loaders:
            ld.stop()
    readers, writes, lists = loaders[:3], loaders[3], loaders[4]
    nread = sum(r.ok for r in readers)
    failed = [f for r in readers for f in r.failures]
    print("rolling update with preStop: %d reads, %d writes, %d listings (%d missed an object "
          "in flight), %d+%d+%d failures; hooks: %s" % (
              nread, writes.ok, lists.ok, len(misses), len(failed), len(writes.failures),
              len(lists.failures),
              "; ".join("%s: %s" % (n, h[1].strip().splitlines()[-1]) for n, h in hooks.items())))
    assert not failed, "reads failed during the rolling update: %r" % failed[:10]
    assert not lists.failures, "listings failed during the rolling update: %r" % \
        lists.failures[:10]
    assert not writes.failures, "writes failed during the rolling update: %r" % \
        writes.failures[:10]
    assert nread > 100 and writes.ok > 20, (nread, writes.ok)
    for k in sorted(c.objects):
        r = c.net.call(c.get_ok, k)
        assert r is True, "lost after the rolling update: %r" % (r,)
    s = c.smap()
    assert all(s["tmap"][t.spec.name]["flags"] == 0 for t in c.targets), s["tmap"]
    spread = {}
    for k in keys[:30]:
        spread[c.owner(k).spec.name] = spread.get(c.owner(k).spec.name, 0) + 1
    assert len(spread) == 3, spread
