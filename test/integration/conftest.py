"""Fixtures for the integration suite: real hoardd targets on loopback, S3 clients pointed at
them, and a hook that shows the server's error log when a test fails.

Contract used by other test files (test_cli.py): the session fixture `target` has at least
`.url` and `.bin_dir`.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import uuid

import pytest
import requests

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helpers  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
BIN_DIR = os.environ.get("HOARD_BIN") or os.path.join(REPO, "build", "bin")
LOG_ROOT = os.path.join(HERE, "logs")

ACCESS_KEY = "AKIDTEST"
SECRET_KEY = "secretTEST123"
REGION = "us-east-1"
CLUSTER_SECRET = "s3-suite-cluster-secret"
S3_DOMAIN = "s3.hoard.test"
# Extra keys of the session cluster (test_s3_features.py's per-key permissions); PERM_TAG makes
# the bucket names in AKMIX's rules unique to this session.
PERM_TAG = uuid.uuid4().hex[:8]
PERM_BUCKETS = {p: "perm-%s-%s" % (PERM_TAG, p) for p in ("rw", "ro", "none")}
CLUSTER_KEYS = ",".join(["%s:%s" % (ACCESS_KEY, SECRET_KEY), "AKRO:secretRO:ro",
                         "AKMIX:secretMIX:%s=rw;%s=ro" % (PERM_BUCKETS["rw"],
                                                          PERM_BUCKETS["ro"])])

# Every target started in this session, so the failure hook can show their logs.
_TARGETS = []


def _pdeathsig_kill():
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def die_with_parent():
    """preexec_fn for a node started by the tests: the kernel kills it (SIGKILL) when pytest
    dies, even by SIGKILL. Only from the main thread: the signal follows the thread that
    forked, and a worker thread ending would take the node with it."""
    import threading
    return _pdeathsig_kill if threading.current_thread() is threading.main_thread() else None


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _session_log_dir():
    """test/integration/logs/<time>-<pid>/; older session dirs beyond the last 10 are pruned."""
    os.makedirs(LOG_ROOT, exist_ok=True)
    old = sorted(d for d in os.listdir(LOG_ROOT) if os.path.isdir(os.path.join(LOG_ROOT, d)))
    for d in old[:-9]:
        shutil.rmtree(os.path.join(LOG_ROOT, d), ignore_errors=True)
    d = os.path.join(LOG_ROOT, time.strftime("%Y%m%d-%H%M%S") + "-%d" % os.getpid())
    os.makedirs(d, exist_ok=True)
    return d


# The S3 suite's target and cluster targets answer a CompleteMultipartUpload of 16 MiB or more
# the keep-alive way (200 at once, a space every 20 ms while the parts are assembled, then the
# document; defaults 1 GiB and 5 s), so every client's larger multipart uploads (aws CLI,
# boto3, rclone, restic, s3fs, the JS SDK...) go through it.
COMPLETE_KEEPALIVE = 16 << 20
KEEPALIVE_ARGS = ["--s3.complete_keepalive", str(COMPLETE_KEEPALIVE),
                  "--s3.complete_keepalive_ms", "20"]


class Target:
    """One `hoardd --role target` process with its own data dir and logs. As an S3 endpoint
    (fixture `endpoint`, kind "target") it is also its own only storage node."""

    kind = "target"
    ready_path = "/v1/health"  # 200 once the node serves requests

    def __init__(self, name, root, log_dir, bin_dir=BIN_DIR, access_key=ACCESS_KEY,
                 secret_key=SECRET_KEY, extra_args=(), auth_keys=None):
        """auth_keys: the full --auth.keys value (default ACCESS:SECRET; "" = auth off);
        access_key/secret_key stay the credentials the helpers sign with."""
        self.name = name
        self.root = root  # everything this target writes lives under root (data) or log_dir
        self.data_dir = os.path.join(root, "data")
        self.mountpaths = [os.path.join(self.data_dir, "mp1"), os.path.join(self.data_dir, "mp2")]
        self.log_dir = log_dir
        self.error_log = os.path.join(log_dir, "error.log")
        self.access_log = os.path.join(log_dir, "access.log")
        self.bin_dir = bin_dir
        self.binary = os.path.join(bin_dir, "hoardd")
        self.access_key, self.secret_key = access_key, secret_key
        self.extra_args = list(extra_args)
        self.auth_keys = ("%s:%s" % (access_key, secret_key) if access_key else "") \
            if auth_keys is None else auth_keys
        self.host = "127.0.0.1"
        self.port = None
        self.proc = None
        self.last_exit_code = None
        self.expect_alive = False  # True: the suite fails a test during which it dies
        self._log_mark = 0
        os.makedirs(self.data_dir, exist_ok=True)
        os.makedirs(log_dir, exist_ok=True)

    # ---- lifecycle ----

    @property
    def url(self):
        return "http://%s:%d" % (self.host, self.port)

    def cmdline(self):
        args = [self.binary, "--role", "target", "--listen", "%s:%d" % (self.host, self.port),
                "--data", self.data_dir, "--mountpaths", ",".join(self.mountpaths),
                "--log.access", self.access_log]
        if self.auth_keys:
            args += ["--auth.keys", self.auth_keys]
        return args + self.extra_args

    def start(self, timeout=15.0):
        if not os.access(self.binary, os.X_OK):
            pytest.skip("hoardd not built: %s (run make)" % self.binary)
        keep_port = self.port is not None
        for attempt in range(5):
            if not keep_port:
                self.port = _free_port()
            with open(self.error_log, "ab") as err:
                err.write(("=== %s start %s port %d ===\n" %
                           (time.strftime("%H:%M:%S"), self.name, self.port)).encode())
                err.flush()
                self.proc = subprocess.Popen(self.cmdline(), stdin=subprocess.DEVNULL,
                                             stdout=err, stderr=err, cwd=self.root,
                                             preexec_fn=die_with_parent())
            if self._wait_ready(timeout):
                return self
            rc = self.proc.poll()
            if rc is None:
                self.kill9()
                raise RuntimeError("hoardd %s did not become ready in %.0fs\n%s" %
                                   (self.name, timeout, self.log_tail(40)))
            tail = self.log_tail(20)
            if "listen" in tail and attempt < 4:
                time.sleep(0.2 * (attempt + 1))  # port race or TIME_WAIT: try again
                continue
            raise RuntimeError("hoardd %s exited with %s at start\n%s" % (self.name, rc, tail))
        raise RuntimeError("hoardd %s could not start" % self.name)

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                r = requests.get(self.url + self.ready_path, timeout=1)
                if r.status_code == 200:
                    return True
            except requests.RequestException:
                pass
            time.sleep(0.05)
        return False

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=15.0):
        """SIGTERM and wait; returns the exit code (also kept in last_exit_code)."""
        if self.proc is None:
            return self.last_exit_code
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self.last_exit_code = "timeout"
                self.proc = None
                return self.last_exit_code
        self.last_exit_code = self.proc.returncode
        self.proc = None
        return self.last_exit_code

    def kill9(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()  # SIGKILL
            self.proc.wait()
            self.last_exit_code = self.proc.returncode
            self.proc = None

    def restart(self, timeout=15.0):
        """Stops (SIGTERM; no-op when already dead) and starts again on the same port and
        data dir. Returns the exit code of the stopped process."""
        rc = self.stop()
        self.start(timeout)
        return rc

    # ---- observation ----

    def metrics(self):
        """GET /metrics parsed into {'name{labels}': float}; unlabelled series by bare name."""
        r = requests.get(self.url + "/metrics", timeout=5)
        assert r.status_code == 200, r
        out = {}
        for line in r.text.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, _, val = line.rpartition(" ")
            out[key.strip()] = float(val)
        return out

    @staticmethod
    def series(name, **labels):
        """The metrics() key for `name` with `labels` in the order given."""
        if not labels:
            return name
        return "%s{%s}" % (name, ",".join('%s="%s"' % kv for kv in labels.items()))

    def log_tail(self, n=40, since_mark=False):
        try:
            with open(self.error_log, "rb") as f:
                if since_mark:
                    f.seek(self._log_mark)
                data = f.read()
        except OSError as e:
            return "(no error log: %s)" % e
        lines = data.decode("utf-8", "replace").splitlines()
        return "\n".join(lines[-n:])

    def mark_log(self):
        try:
            self._log_mark = os.path.getsize(self.error_log)
        except OSError:
            self._log_mark = 0

    def sanitizer_reports(self):
        try:
            with open(self.error_log, "rb") as f:
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return []
        # ThreadSanitizer reports races as WARNINGs
        return re.findall(r"^.*(?:ERROR: (?:Address|Leak|Thread)Sanitizer|"
                          r"WARNING: ThreadSanitizer|runtime error:).*$", text, re.M)

    def tmp_files(self):
        return helpers.tmp_files(self.mountpaths)

    def raw(self):
        return helpers.S3Raw(self.host, self.port, self.access_key, self.secret_key)

    @property
    def storage(self):
        """The targets whose disks hold what this endpoint stores: itself."""
        return [self]

    def owner(self, bucket, key):
        """URL of the storage node that holds bucket/key: this one."""
        return self.url


class ClusterNode(Target):
    """A hoardd proxy or target of a test cluster: cluster.secret and auth.keys set."""

    ready_path = "/v1/health?ready=true"  # 503 until joined and holding the smap

    def __init__(self, name, root, log_dir, role, join=None, secret=None, hb_ms=200,
                 dead_after=5, **kw):
        """join: callable -> URL of the primary, or None for the primary itself."""
        super().__init__(name, root, log_dir, **kw)
        self.role, self.join = role, join
        self.secret = CLUSTER_SECRET if secret is None else secret
        self.hb_ms, self.dead_after = hb_ms, dead_after

    def cmdline(self):
        args = [self.binary, "--role", self.role, "--listen", "%s:%d" % (self.host, self.port),
                "--data", self.data_dir, "--log.access", self.access_log,
                "--auth.keys", self.auth_keys, "--cluster.secret", self.secret,
                "--cluster.heartbeat_ms", str(self.hb_ms),
                "--cluster.dead_after", str(self.dead_after)]
        if self.role == "target":
            args += ["--mountpaths", ",".join(self.mountpaths)]
        if self.join:
            args += ["--cluster.join", self.join()]
        return args + self.extra_args

    def health(self):
        return requests.get(self.url + "/v1/health", timeout=5).json()

    def _cluster_get(self, path):
        """A cluster read, signed with the node's client key (cluster reads need one)."""
        url = self.url + path
        r = requests.get(url, timeout=5, headers=helpers.sign_headers(
            "GET", url, self.access_key, self.secret_key) if self.access_key else None)
        assert r.status_code == 200, r.text
        return r.json()

    def smap(self):
        return self._cluster_get("/v1/cluster")

    def bmd(self):
        return self._cluster_get("/v1/cluster/bmd")


class ProxyEndpoint:
    """The S3 endpoint of the session cluster (fixture `endpoint`, kind "proxy"): requests go
    to `proxy`; what a test reads from disks or metrics is summed over the cluster's targets."""

    kind = "proxy"

    def __init__(self, proxy, targets, redirect_proxy=None, domain=None):
        self.proxy, self.storage = proxy, targets
        self.redirect_proxy = redirect_proxy  # same cluster, s3.redirect=true
        self.domain = domain                  # the proxies' s3.domain
        self.host, self.port = proxy.host, proxy.port
        self.access_key, self.secret_key = proxy.access_key, proxy.secret_key
        self.access_log = proxy.access_log

    @property
    def url(self):
        return self.proxy.url

    @property
    def mountpaths(self):
        return [mp for t in self.storage for mp in t.mountpaths]

    def raw(self):
        return self.proxy.raw()

    def owner(self, bucket, key):
        """URL of the target that owns bucket/key (HRW), from the Location of the proxy's 307
        answer to a native request (nothing is read or written)."""
        url = "%s/v1/objects/%s/%s" % (self.url, bucket, urllib.parse.quote(key, safe=""))
        r = requests.head(url, allow_redirects=False, timeout=10, headers=helpers.sign_headers(
            "HEAD", url, self.access_key, self.secret_key))
        assert r.status_code == 307, (url, r.status_code, r.headers)
        parts = urllib.parse.urlsplit(r.headers["Location"])
        return "%s://%s" % (parts.scheme, parts.netloc)

    def tmp_files(self):
        return helpers.tmp_files(self.mountpaths)

    def metrics(self):
        """The targets' metrics, summed series by series."""
        out = {}
        for t in self.storage:
            for k, v in t.metrics().items():
                out[k] = out.get(k, 0) + v
        return out

    series = staticmethod(Target.series)


# ---- failure reporting ----

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    for t in _TARGETS:
        t.mark_log()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call":
        # The shared target must survive every test: a crash (or someone else's pkill) fails
        # the test during which it happened, and the target is restarted for the rest.
        for t in _TARGETS:
            if t.expect_alive and not t.alive():
                code = t.proc.returncode if t.proc is not None else t.last_exit_code
                if not rep.failed:
                    rep.outcome = "failed"
                    rep.longrepr = "hoardd %s died during this test (exit code %r)" % (
                        t.name, code)
                t.proc = None
                with open(t.error_log, "ab") as f:
                    f.write(("=== %s died (exit %r); restarting ===\n" % (t.name, code)).encode())
                t.start()
    if not rep.failed:
        return
    for t in list(_TARGETS):
        recent = t.log_tail(60, since_mark=True)
        if not recent.strip():
            recent = "(nothing new during this test; last lines:)\n" + t.log_tail(15)
        rep.sections.append(("hoardd %s error log (%s)" % (t.name, t.error_log), recent))


# ---- targets ----

@pytest.fixture(scope="session")
def log_dir():
    return _session_log_dir()


@pytest.fixture(scope="session")
def target(tmp_path_factory, log_dir):
    root = str(tmp_path_factory.mktemp("target"))
    t = Target("main", root, os.path.join(log_dir, "main"), extra_args=KEEPALIVE_ARGS)
    t.start()
    t.expect_alive = True
    _TARGETS.append(t)
    yield t
    t.expect_alive = False
    rc = t.stop()
    _TARGETS.remove(t)
    reports = t.sanitizer_reports()
    assert not reports, "sanitizer reports in %s:\n%s" % (t.error_log, "\n".join(reports[:20]))
    assert rc == 0, "hoardd main exited with %r on SIGTERM; see %s" % (rc, t.error_log)


@pytest.fixture
def target_factory(tmp_path_factory, log_dir, request):
    """start(name=None, **kw) -> a new running Target with its own data dir; all are stopped
    when the test ends."""
    started = []

    def start(name=None, **kw):
        name = name or "%s-%d" % (re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)[:60],
                                  len(started))
        root = str(tmp_path_factory.mktemp(name))
        t = Target(name, root, os.path.join(log_dir, name), **kw)
        started.append(t)
        _TARGETS.append(t)
        t.mark_log()
        t.start()
        return t

    yield start
    problems = []
    for t in started:
        t.stop()
        _TARGETS.remove(t)
        problems += t.sanitizer_reports()
    assert not problems, "sanitizer reports:\n" + "\n".join(problems[:20])


# ---- the session cluster: the S3 suite's "proxy" endpoint ----

def _stop_nodes(nodes):
    """Stops nodes (SIGTERM); asserts each exited 0 and no sanitizer reported anything."""
    problems, bad = [], []
    for n in nodes:
        n.expect_alive = False
        was_alive = n.alive()
        rc = n.stop()
        if n in _TARGETS:
            _TARGETS.remove(n)
        problems += n.sanitizer_reports()
        if was_alive and rc != 0:
            bad.append("hoardd %s exited with %r on SIGTERM; see %s" % (n.name, rc, n.error_log))
    assert not bad, "\n".join(bad)
    assert not problems, "sanitizer reports:\n" + "\n".join(problems[:20])


def start_cluster(tmp_path_factory, log_dir, prefix, ntargets=3, proxy_args=(),
                  target_args=(), redirect_proxy=False):
    """Starts a cluster: one proxy (proxy_args), ntargets targets (target_args) and, with
    redirect_proxy, a second proxy with s3.redirect=true; auth.keys = CLUSTER_KEYS. Waits
    until every node is ready and holds the primary's smap with no rebalance running.
    Returns (nodes, ProxyEndpoint of the first proxy); stop them with _stop_nodes(nodes)."""
    nodes = []

    def make(name, role, join=None, extra=()):
        root = str(tmp_path_factory.mktemp(prefix + name))
        n = ClusterNode(name, root, os.path.join(log_dir, prefix + name), role, join,
                        auth_keys=CLUSTER_KEYS, hb_ms=500, extra_args=list(extra) +
                        (["--store.fsync", "false"] if role == "target" else []))
        nodes.append(n)
        _TARGETS.append(n)
        return n

    try:
        p1 = make("p1", "proxy", extra=proxy_args)
        p1.start()
        join = lambda: p1.url  # noqa: E731
        targets = [make("t%d" % i, "target", join, target_args) for i in range(1, ntargets + 1)]
        p2 = make("p2-redirect", "proxy", join, list(proxy_args) + ["--s3.redirect", "true"]) \
            if redirect_proxy else None
        for n in nodes[1:]:
            n.start()

        def settled():
            s = p1.smap()
            return (len(s["tmap"]) == ntargets and len(s["pmap"]) == len(nodes) - ntargets and
                    "rebalance_id" not in s and
                    all(n.smap()["version"] == s["version"] for n in nodes))
        helpers.wait_until(settled, timeout=30, what="targets and proxies on one smap version")
    except BaseException:
        for n in nodes:
            n.kill9()
            _TARGETS.remove(n)
        raise
    for n in nodes:
        n.expect_alive = True
    return nodes, ProxyEndpoint(p1, targets, p2, S3_DOMAIN if "--s3.domain" in proxy_args
                                else None)


@pytest.fixture(scope="session")
def s3cluster(tmp_path_factory, log_dir):
    """The S3 suite's "proxy" endpoint: 1 proxy + 3 targets (cluster.secret, auth.keys =
    CLUSTER_KEYS, s3.domain on every node) plus a second proxy with s3.redirect=true; started
    on the first proxy-variant test, shared by all of them."""
    dom = ["--s3.domain", S3_DOMAIN]
    nodes, ep = start_cluster(tmp_path_factory, log_dir, "s3c-", 3, dom, dom + KEEPALIVE_ARGS,
                              True)
    yield ep
    _stop_nodes(nodes)


def _stop_signal(signum, frame):
    # SIGTERM/SIGHUP (timeout(1), a CI runner) end the run like Ctrl-C: fixture teardowns and
    # pytest_sessionfinish run, so the processes the tests started are stopped
    raise KeyboardInterrupt("signal %d" % signum)


def processes_under(prefix):
    """pids of processes (not us) whose command line names a path under prefix."""
    out, me = [], os.getpid()
    key = prefix.rstrip("/").encode() + b"/"
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == me:
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if key in cmd:
            out.append(int(pid))
    return out


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    """The last line of defence: every process still running with this session's temporary
    directory on its command line (hoardd nodes, including those cluster.sh and `make run`
    start in their own sessions, s3rver loops) is killed, whatever the tests did. trylast:
    after pytest's own sessionfinish, which tears down the session's fixtures (a run stopped
    by -x or a first failure ends there), so that they stop their nodes themselves first."""
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is None:
        return
    try:
        base = str(factory.getbasetemp())
    except Exception:  # noqa: BLE001 - no temporary directory was made
        return
    left = processes_under(base)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if left:
        sys.stderr.write("conftest: killed %d process(es) the tests left running: %s\n" %
                         (len(left), left))


def pytest_configure(config):
    signal.signal(signal.SIGTERM, _stop_signal)
    signal.signal(signal.SIGHUP, _stop_signal)
    config.addinivalue_line(
        "markers", "target_only: in a module with ENDPOINTS, run only against the standalone "
        "target (a comment says why)")
    config.addinivalue_line(
        "markers", "proxy_xfail(reason): the [proxy] variant is xfail(strict=True, reason)")


def pytest_generate_tests(metafunc):
    """A module that sets ENDPOINTS = ("target", "proxy") runs every test using the `endpoint`
    fixture once per kind (ids [target] and [proxy]), except tests marked target_only; a
    proxy_xfail mark makes the [proxy] variant a strict xfail."""
    kinds = getattr(metafunc.module, "ENDPOINTS", None)
    if not kinds or "endpoint" not in metafunc.fixturenames:
        return
    if metafunc.definition.get_closest_marker("target_only"):
        kinds = ("target",)
    xf = metafunc.definition.get_closest_marker("proxy_xfail")
    params = [pytest.param(k, marks=pytest.mark.xfail(strict=True, reason=xf.kwargs["reason"])
                           if xf and k == "proxy" else ()) for k in kinds]
    metafunc.parametrize("endpoint", params, indirect=True, scope="session")


@pytest.fixture(scope="session")
def endpoint(request):
    """The S3 endpoint under test: the standalone `target` (default), or the session
    cluster's proxy (ProxyEndpoint) when the module's ENDPOINTS parametrizes it."""
    if getattr(request, "param", "target") == "proxy":
        return request.getfixturevalue("s3cluster")
    return request.getfixturevalue("target")


# ---- S3 clients ----

@pytest.fixture(scope="session")
def s3(endpoint):
    """Debian's boto3 (1.26) client: path style, us-east-1, SigV4."""
    return helpers.boto3_client(endpoint)


@pytest.fixture
def raw(endpoint):
    """helpers.S3Raw for signed requests with exact, unnormalised paths."""
    return endpoint.raw()


def _empty_bucket(client, name):
    try:
        token = None
        while True:
            kw = {"Bucket": name}
            if token:
                kw["ContinuationToken"] = token
            page = client.list_objects_v2(**kw)
            for o in page.get("Contents", []):
                client.delete_object(Bucket=name, Key=o["Key"])
            if not page.get("IsTruncated"):
                break
            token = page["NextContinuationToken"]
        client.delete_bucket(Bucket=name)
    except Exception:  # cleanup is best-effort; the test already reported what matters
        pass


@pytest.fixture
def bucket(s3):
    """A fresh, uniquely named bucket, emptied and deleted after the test."""
    name = "it-" + uuid.uuid4().hex[:16]
    s3.create_bucket(Bucket=name)
    yield name
    _empty_bucket(s3, name)


# ---- aws CLI, s3cmd, pyenv python ----

class AwsCli:
    """Runs an aws CLI (v2 at /usr/bin/aws, or v1 from PATH) against the target."""

    def __init__(self, exe, env, url, version):
        self.exe, self.env, self.url, self.version = exe, env, url, version

    def __call__(self, *args, check=True, timeout=90):
        cmd = [self.exe, "--endpoint-url", self.url] + [str(a) for a in args]
        p = subprocess.run(cmd, env=self.env, capture_output=True, timeout=timeout)
        if check and p.returncode != 0:
            raise AssertionError("%s failed (%d)\nstdout: %s\nstderr: %s" % (
                " ".join(cmd), p.returncode, p.stdout.decode(errors="replace")[-2000:],
                p.stderr.decode(errors="replace")[-3000:]))
        return p


@pytest.fixture(scope="session")
def aws_env(endpoint, tmp_path_factory):
    """Environment for aws CLI v1/v2: test credentials, us-east-1, a private config file
    (default transfer settings: multipart above 8 MiB)."""
    d = tmp_path_factory.mktemp("aws")
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("AWS_"):
            del env[k]
    env.update({
        "AWS_ACCESS_KEY_ID": endpoint.access_key,
        "AWS_SECRET_ACCESS_KEY": endpoint.secret_key,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "AWS_CONFIG_FILE": str(d / "config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(d / "credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_PAGER": "",
        "AWS_RETRY_MODE": "standard",
        "AWS_MAX_ATTEMPTS": "1",
    })
    (d / "credentials").write_text("")
    (d / "config").write_text("[default]\nregion = %s\n" % REGION)
    return env


def _aws_v1():
    exe = shutil.which("aws")
    if not exe or os.path.realpath(exe) == "/usr/bin/aws":
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout + out.stderr).decode(errors="replace")
    return exe if text.startswith("aws-cli/1.") else None


@pytest.fixture(scope="session")
def aws2(endpoint, aws_env):
    if not os.access("/usr/bin/aws", os.X_OK):
        pytest.skip("aws CLI v2 (/usr/bin/aws) not installed")
    return AwsCli("/usr/bin/aws", aws_env, endpoint.url, 2)


@pytest.fixture(scope="session")
def aws1(endpoint, aws_env):
    exe = _aws_v1()
    if not exe:
        pytest.skip("aws CLI v1 not on PATH")
    return AwsCli(exe, aws_env, endpoint.url, 1)


@pytest.fixture(scope="session")
def s3cmd_cfg(endpoint, tmp_path_factory):
    """Path of an s3cmd config for the endpoint (path style, plain http, SigV4)."""
    if not shutil.which("s3cmd"):
        pytest.skip("s3cmd not installed")
    p = tmp_path_factory.mktemp("s3cmd") / "s3cfg"
    hostport = "%s:%d" % (endpoint.host, endpoint.port)
    p.write_text("\n".join([
        "[default]",
        "access_key = %s" % endpoint.access_key,
        "secret_key = %s" % endpoint.secret_key,
        "host_base = %s" % hostport,
        "host_bucket = %s" % hostport,
        "bucket_location = us-east-1",
        "use_https = False",
        "signature_v2 = False",
        "check_ssl_certificate = False",
        "progress_meter = False",
        "multipart_chunk_size_mb = 64",
        "enable_multipart = False",
        "",
    ]))
    return str(p)


@pytest.fixture(scope="session")
def s3cmd(s3cmd_cfg):
    """Runs s3cmd -c CONFIG ARGS...; raises with its output on failure unless check=False."""
    def run(*args, check=True, timeout=60):
        cmd = ["s3cmd", "-c", s3cmd_cfg] + [str(a) for a in args]
        p = subprocess.run(cmd, capture_output=True, timeout=timeout,
                           env=dict(os.environ, HOME=os.path.dirname(s3cmd_cfg)))
        if check and p.returncode != 0:
            raise AssertionError("%s failed (%d)\nstdout: %s\nstderr: %s" % (
                " ".join(cmd), p.returncode, p.stdout.decode(errors="replace")[-2000:],
                p.stderr.decode(errors="replace")[-3000:]))
        return p
    return run


@pytest.fixture(scope="session")
def pyenv_python():
    """Path of the pyenv python3 on PATH when it has boto3/botocore >= 1.36 (the versions that
    send x-amz-checksum-crc32); otherwise tests using it are skipped."""
    exe = shutil.which("python3")
    if not exe or os.path.realpath(exe).startswith("/usr/bin/"):
        pytest.skip("no non-system python3 on PATH")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    try:
        p = subprocess.run([exe, "-c", "import boto3, botocore; print(botocore.__version__)"],
                           capture_output=True, timeout=60, env=env)
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip("pyenv python3 unusable: %s" % e)
    if p.returncode != 0:
        pytest.skip("pyenv python3 has no boto3")
    ver = tuple(int(x) for x in p.stdout.decode().strip().split(".")[:2])
    if ver < (1, 36):
        pytest.skip("pyenv botocore %s is older than 1.36" % p.stdout.decode().strip())
    return exe
