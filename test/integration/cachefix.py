"""Fixture helpers for the caching-tier tests (test_cache*.py): real upstreams and clusters.

- S3rver: the npm s3rver (an independent S3 implementation; it does not check signatures)
  under a restart loop, as TESTING.md advises (it exits on a few malformed inputs).
- ScriptedS3: a few lines of Python answering object GETs and HEADs with headers a test
  chooses, for upstream answers no real S3 gives (a malformed Content-Range).
- HoardCluster: proxies and targets of hoardd on loopback with their own keys and settings;
  one is used as the *upstream* of another cluster (it verifies SigV4, so the cache's
  request signing is really checked), one as the cache itself.
Every process is started here and stopped by pid (process group for the s3rver loop).
"""
import hashlib
import http.server
import os
import signal
import subprocess
import threading
import time
import urllib.parse

import boto3
import pytest
import requests
from botocore.config import Config

import helpers
from conftest import ACCESS_KEY, REPO, SECRET_KEY, Target, _free_port

S3RVER_KEY = "S3RVER"
UP_KEYS = ("UPSTREAMKEY", "upstreamSecret987")  # the hoard cluster used as an upstream
C_KEYS = (ACCESS_KEY, SECRET_KEY)  # the caching cluster
PROFILES = {
    "HOARD_S3_PROFILE_S3RVER": "S3RVER:S3RVER",
    "HOARD_S3_PROFILE_HOARDUP": "%s:%s" % UP_KEYS,
    "HOARD_S3_PROFILE_WRONG": "%s:not-the-secret" % UP_KEYS[0],
}


@pytest.fixture(scope="module")
def profiles():
    """Credential profiles for the daemons (environment: never in the BMD or logs)."""
    old = {k: os.environ.get(k) for k in PROFILES}
    os.environ.update(PROFILES)
    yield
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="module")
def s3rver(tmp_path_factory, log_dir):
    s = S3rver(str(tmp_path_factory.mktemp("s3rver")), os.path.join(log_dir, "s3rver"))
    s.start()
    yield s
    s.stop()


class S3rver:
    def __init__(self, root, log_dir):
        self.root = root
        self.data = os.path.join(root, "s3rver")
        self.log = os.path.join(log_dir, "s3rver.log")
        self.port = None
        self.proc = None
        self.exe = os.path.join(REPO, "node_modules", ".bin", "s3rver")
        os.makedirs(self.data, exist_ok=True)
        os.makedirs(log_dir, exist_ok=True)

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def start(self, timeout=30):
        if not os.access(self.exe, os.X_OK):
            pytest.skip("s3rver not installed (make deps installs it into node_modules)")
        if self.port is None:
            self.port = _free_port()
        loop = ("while true; do NODE_OPTIONS=--openssl-legacy-provider '%s' -d '%s' "
                "-a 127.0.0.1 -p %d --no-vhost-buckets; sleep 0.2; done"
                % (self.exe, self.data, self.port))
        with open(self.log, "ab") as f:
            self.proc = subprocess.Popen(["bash", "-c", loop], stdin=subprocess.DEVNULL,
                                         stdout=f, stderr=f, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if requests.get(self.url + "/", timeout=1).status_code == 200:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("s3rver did not start; see %s" % self.log)

    def stop(self):
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.proc = None
        # the port must be free before a restart on it
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                requests.get(self.url + "/", timeout=0.5)
            except requests.RequestException:
                return
            time.sleep(0.1)

    def client(self):
        return boto3.session.Session().client(
            "s3", endpoint_url=self.url, region_name="us-east-1",
            aws_access_key_id=S3RVER_KEY, aws_secret_access_key=S3RVER_KEY,
            config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                          retries={"total_max_attempts": 1, "mode": "standard"}))


@pytest.fixture(scope="module")
def scripted_s3():
    s = ScriptedS3()
    yield s
    s.stop()


class ScriptedS3:
    """An upstream serving the objects in self.objects ({key: bytes}, any bucket) without
    checking signatures. A ranged GET answers 206 with self.content_range(key, first, last,
    total) as its Content-Range (the honest header by default; None: no header), so a test can
    script what a broken upstream sends; bucket-level calls get an empty listing. DELETE
    removes a key (204). A key in self.gates ({key: threading.Event}) is sent by halves: the
    first half, then self.halfway[key] is set and the rest waits for the gate's event."""

    def __init__(self):
        self.objects = {}
        self.gates, self.halfway = {}, {}
        self.content_range = lambda key, a, b, total: "bytes %d-%d/%d" % (a, b, total)
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def send(self, status, headers, body):
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def answer(self):
                path = urllib.parse.urlsplit(self.path).path
                parts = urllib.parse.unquote(path).lstrip("/").split("/", 1)
                if len(parts) < 2 or not parts[1]:
                    self.send(200, {"Content-Type": "application/xml"},
                              b'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult>'
                              b'<IsTruncated>false</IsTruncated></ListBucketResult>')
                    return
                data = outer.objects.get(parts[1])
                if data is None:
                    self.send(404, {"Content-Type": "application/xml"},
                              b"<Error><Code>NoSuchKey</Code><Message>no such key</Message>"
                              b"</Error>")
                    return
                h = {"ETag": '"%s"' % hashlib.md5(data).hexdigest(),
                     "Last-Modified": "Mon, 01 Jan 2024 00:00:00 GMT",
                     "Content-Type": "application/octet-stream"}
                rng = self.headers.get("Range", "")
                if self.command == "GET" and rng.startswith("bytes="):
                    a, _, b = rng[6:].partition("-")
                    a, b = int(a), min(int(b), len(data) - 1)
                    cr = outer.content_range(parts[1], a, b, len(data))
                    if cr is not None:
                        h["Content-Range"] = cr
                    self.send(206, h, data[a:b + 1])
                elif self.command == "GET" and parts[1] in outer.gates:
                    self.send_response(200)
                    for k, v in h.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    half = len(data) // 2
                    self.wfile.write(data[:half])
                    self.wfile.flush()
                    outer.halfway.setdefault(parts[1], threading.Event()).set()
                    outer.gates[parts[1]].wait(60)
                    self.wfile.write(data[half:])
                else:
                    self.send(200, h, data)

            def do_DELETE(self):
                path = urllib.parse.urlsplit(self.path).path
                parts = urllib.parse.unquote(path).lstrip("/").split("/", 1)
                outer.objects.pop(parts[1] if len(parts) > 1 else "", None)
                self.send(204, {}, b"")

            do_GET = do_HEAD = answer

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.httpd.server_address[1]

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class CNode(Target):
    """A proxy or target of a test cluster with its own keys and extra settings."""

    def __init__(self, name, root, log_dir, role, keys, secret, join=None, extra=(),
                 mountpaths=2):
        ak, sk = keys
        super().__init__(name, root, log_dir, access_key=ak, secret_key=sk)
        self.role = role
        self.secret = secret
        self.join = join
        self.extra = list(extra)
        self.mountpaths = self.mountpaths[:mountpaths]

    def cmdline(self):
        args = [self.binary, "--role", self.role, "--listen", "%s:%d" % (self.host, self.port),
                "--data", self.data_dir, "--log.access", self.access_log,
                "--auth.keys", self.auth_keys, "--cluster.secret", self.secret,
                "--cluster.heartbeat_ms", "200", "--cluster.dead_after", "5"]
        if self.role == "target":
            args += ["--mountpaths", ",".join(self.mountpaths)]
        if self.join:
            args += ["--cluster.join", self.join()]
        return args + self.extra

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                if requests.get(self.url + "/v1/health?ready=true", timeout=1).status_code == 200:
                    return True
            except requests.RequestException:
                pass
            time.sleep(0.05)
        return False

    def metric(self, name, **labels):
        return self.metrics().get(self.series(name, **labels), 0.0)


class HoardCluster:
    def __init__(self, name, root, log_dir, registry, keys, ntargets=2, proxy_extra=(),
                 target_extra=(), mountpaths=2):
        self.name, self.keys = name, keys
        self.secret = "secret-" + name
        self.nodes = []
        self.registry = registry  # conftest._TARGETS: logs shown on failures, kept alive

        def make(n, role, join=None, extra=()):
            node = CNode("%s-%s" % (name, n), os.path.join(root, n),
                         os.path.join(log_dir, "%s-%s" % (name, n)), role, keys, self.secret,
                         join, extra, mountpaths)
            self.nodes.append(node)
            registry.append(node)
            return node

        self.proxy = make("p1", "proxy", extra=proxy_extra)
        self.targets = [make("t%d" % i, "target", lambda: self.proxy.url, target_extra)
                        for i in range(1, ntargets + 1)]

    def start(self):
        self.proxy.start()
        for t in self.targets:
            t.start()
        helpers.wait_until(lambda: len(self.smap()["tmap"]) == len(self.targets), timeout=20,
                           what="%s: every target joined" % self.name)
        return self

    def serve(self):
        """A module fixture's body: started, every node expected to stay up until the end,
        then stopped and checked (`yield from HoardCluster(...).serve()`)."""
        self.start()
        for n in self.nodes:
            n.expect_alive = True
        yield self
        for n in self.nodes:
            n.expect_alive = False
        problems = self.stop()
        assert not problems, problems

    def stop(self):
        problems, bad = [], []
        for n in self.nodes:
            alive = n.alive()
            rc = n.stop()
            if n in self.registry:
                self.registry.remove(n)
            problems += n.sanitizer_reports()
            if alive and rc != 0:
                bad.append("%s exited with %r; see %s" % (n.name, rc, n.error_log))
        return bad + problems

    @property
    def url(self):
        return self.proxy.url

    def smap(self):
        return self.api("GET", "/v1/cluster").json()

    def api(self, method, path, body=None, headers=None, follow=True, timeout=60, stream=False):
        """A SigV4-signed native call to the proxy (path already URL-encoded)."""
        url = self.url + path
        h = helpers.sign_headers(method, url, self.keys[0], self.keys[1], headers)
        if isinstance(body, (dict, list)):
            import json
            body = json.dumps(body).encode()
        return requests.request(method, url, data=body, headers=h, allow_redirects=follow,
                                timeout=timeout, stream=stream)

    def s3(self):
        return boto3.session.Session().client(
            "s3", endpoint_url=self.url, region_name="us-east-1",
            aws_access_key_id=self.keys[0], aws_secret_access_key=self.keys[1],
            config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                          retries={"total_max_attempts": 1, "mode": "standard"}))

    # ---- conveniences ----

    def obj_path(self, bucket, key):
        return "/v1/objects/%s/%s" % (bucket, urllib.parse.quote(key, safe="/"))

    def get(self, bucket, key, headers=None, stream=False):
        return self.api("GET", self.obj_path(bucket, key), headers=headers, stream=stream)

    def create_cloud_bucket(self, name, endpoint, profile, extra=None):
        props = {"upstream": {"endpoint": endpoint, "profile": profile}}
        props.update(extra or {})
        r = self.api("POST", "/v1/buckets/%s?provider=aws" % name, body=props)
        assert r.status_code == 201, r.text
        # every target has the BMD before the proxy answers
        return name

    def listing(self, bucket, **params):
        q = urllib.parse.urlencode(params)
        r = self.api("GET", "/v1/buckets/%s%s%s" % (bucket, "?" if q else "", q))
        assert r.status_code == 200, r.text
        return r.json()

    def start_job(self, kind, bucket, args=None, job_id=None):
        body = {"kind": kind, "bucket": bucket, "args": args or {}}
        if job_id:
            body["id"] = job_id
        r = self.api("POST", "/v1/jobs", body=body)
        assert r.status_code == 201, r.text
        return r.json()["id"]

    def wait_job(self, job_id, timeout=60):
        def done():
            j = self.api("GET", "/v1/jobs/" + job_id).json()
            return j if j.get("state") not in (None, "running") else None
        return helpers.wait_until(done, timeout=timeout, what="job %s to finish" % job_id)

    def target_metric(self, name, **labels):
        return sum(t.metric(name, **labels) for t in self.targets if t.alive())
