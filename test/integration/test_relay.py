"""S3 relay memory bound: a 1 GiB object PUT and GET through a proxy (relay mode) with curl,
while the proxy's VmRSS is sampled every 100 ms; it must stay under 64 MiB both ways
(common/relay.c keeps two 1 MiB rings per transfer, docs/architecture.md "The S3 relay").
"""
import hashlib
import os
import subprocess
import threading
import time
import uuid

import pytest

from conftest import ACCESS_KEY, BIN_DIR, SECRET_KEY
from test_cluster import cluster, s3client  # noqa: F401  (cluster is a pytest fixture)

SIZE = 1 << 30
RSS_LIMIT_KIB = 64 * 1024
CHUNK = 1 << 20


def _zeros_md5(size):
    """MD5 of `size` zero bytes, computed by streaming (the sparse file's content)."""
    h, zero, left = hashlib.md5(), bytes(CHUNK), size
    while left:
        n = min(left, CHUNK)
        h.update(zero if n == CHUNK else zero[:n])
        left -= n
    return h.hexdigest()


def _vmrss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class RssSampler:
    """Samples VmRSS of pid every 100 ms in a thread; .peak is the maximum in KiB."""

    def __init__(self, pid, interval=0.1):
        self.pid, self.interval = pid, interval
        self.peak, self.samples = 0, 0
        self._stop = threading.Event()
        self._thr = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while True:
            try:
                self.peak = max(self.peak, _vmrss_kib(self.pid))
                self.samples += 1
            except OSError:
                pass
            if self._stop.wait(self.interval):
                break

    def __enter__(self):
        self._thr.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thr.join()
        self.peak = max(self.peak, _vmrss_kib(self.pid))


def _curl_base():
    return ["curl", "-sS", "--aws-sigv4", "aws:amz:us-east-1:s3",
            "--user", "%s:%s" % (ACCESS_KEY, SECRET_KEY),
            "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"]


@pytest.fixture
def big_file(tmp_path):
    path = tmp_path / "big.bin"
    with open(path, "wb") as f:
        f.truncate(SIZE)  # sparse: no disk, reads as zeros
    yield str(path)
    path.unlink(missing_ok=True)


def test_relay_1gib_put_get_bounded_rss(cluster, big_file, tmp_path):  # noqa: F811
    proxy = cluster.primary
    pid = proxy.proc.pid
    s3 = s3client(proxy)
    bucket = "relay-" + uuid.uuid4().hex[:12]
    key = "big/1gib.bin"
    url = "%s/%s/%s" % (proxy.url, bucket, key)
    s3.create_bucket(Bucket=bucket)
    want_md5 = _zeros_md5(SIZE)
    base_kib = _vmrss_kib(pid)
    try:
        # ---- PUT: streaming body from the sparse file ----
        t0 = time.monotonic()
        with RssSampler(pid) as put_rss:
            r = subprocess.run(_curl_base() + ["-T", big_file, "-o", str(tmp_path / "put.out"),
                                               "-w", "%{http_code}", url],
                               capture_output=True, text=True, timeout=120)
        put_s = time.monotonic() - t0
        put_body = (tmp_path / "put.out").read_text(errors="replace") \
            if (tmp_path / "put.out").exists() else ""
        assert r.returncode == 0, (r.returncode, r.stderr)
        assert r.stdout == "200", (r.stdout, put_body)

        head = s3.head_object(Bucket=bucket, Key=key)
        assert head["ContentLength"] == SIZE

        # ---- GET: curl to a pipe, hashed and counted here ----
        t0 = time.monotonic()
        with RssSampler(pid) as get_rss:
            p = subprocess.Popen(_curl_base() + ["-w", "", "-D", str(tmp_path / "get.hdr"),
                                                 "-o", "-", url],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            h, got = hashlib.md5(), 0
            while True:
                chunk = p.stdout.read(CHUNK)
                if not chunk:
                    break
                h.update(chunk)
                got += len(chunk)
            err = p.stderr.read().decode(errors="replace")
            rc = p.wait(timeout=60)
        get_s = time.monotonic() - t0
        status = (tmp_path / "get.hdr").read_text(errors="replace").split("\r\n", 1)[0]
        assert rc == 0, (rc, err)
        assert " 200" in status, status

        report = ("proxy VmRSS KiB: baseline %d, PUT peak %d (%d samples, %.1fs), "
                  "GET peak %d (%d samples, %.1fs)" %
                  (base_kib, put_rss.peak, put_rss.samples, put_s,
                   get_rss.peak, get_rss.samples, get_s))
        print(report)
        assert got == SIZE, (got, report)
        assert h.hexdigest() == want_md5, report
        assert put_rss.peak < RSS_LIMIT_KIB, report
        assert get_rss.peak < RSS_LIMIT_KIB, report
    finally:
        try:
            s3.delete_object(Bucket=bucket, Key=key)
            s3.delete_bucket(Bucket=bucket)
        except Exception:  # best effort; the cluster's data dirs are tmp dirs anyway
            pass


def test_proxy_returns_memory_when_idle(cluster):  # noqa: F811
    """After a burst of 48 concurrent relays the proxy gives the freed heap back to the system
    once idle (common/http.c hd_http_idle_trim): its RSS falls back.
    glibc alone keeps the freed relay rings in each worker thread's arena."""
    if "asan" in os.environ.get("HOARD_BUILD", ""):
        pytest.skip("ASan's allocator ignores malloc_trim")
    proxy = cluster.primary
    pid = proxy.proc.pid
    s3 = s3client(proxy)
    bucket = "idle-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=bucket)
    body = os.urandom(6 << 20)
    keys = ["o%02d" % i for i in range(8)]
    try:
        for k in keys:
            s3.put_object(Bucket=bucket, Key=k, Body=body)
        base_kib = _vmrss_kib(pid)
        with RssSampler(pid) as burst:  # 48 relays at once, by curl processes (no GIL)
            procs = [subprocess.Popen(_curl_base() + ["-o", "/dev/null", "-w", "%{http_code} %{size_download}",
                                                      "%s/%s/%s" % (proxy.url, bucket, k)],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                     for k in keys * 6]
            outs = [p.communicate(timeout=300) for p in procs]
        bad = [(p.returncode, o) for p, o in zip(procs, outs)
               if p.returncode != 0 or o[0] != "200 %d" % len(body)]
        assert not bad, bad[:3]
        grown = burst.peak - base_kib
        if grown < 16 * 1024:  # seen on a loaded machine: the relays did not overlap enough
            pytest.skip("the burst grew the proxy's RSS by only %d KiB: too little to judge" % grown)
        # A fifth of the growth must go back within 60 s. Measured: without the idle trim a
        # proxy kept 85-100% of a burst's growth for good; with it 0-66% stays, depending on
        # what live allocations sit between the freed blocks (caches of docs/architecture.md).
        want = burst.peak - grown // 5
        deadline = time.monotonic() + 60
        now_kib = _vmrss_kib(pid)
        while time.monotonic() < deadline and now_kib > want:
            time.sleep(0.5)
            now_kib = _vmrss_kib(pid)
        assert now_kib <= want, \
            "RSS KiB: before %d, burst peak %d, 60 s idle later %d" % (base_kib, burst.peak, now_kib)
    finally:
        for k in keys:
            s3.delete_object(Bucket=bucket, Key=k)
        s3.delete_bucket(Bucket=bucket)


def test_proxy_rss_bounded_after_benchmark(cluster):  # noqa: F811
    """Resting RSS under 64 MiB after benchmark loads through the relay (issue 14 item 5):
    hoard-bench with 32 connections of 4 MiB relays, then 10 KiB relays, while the proxy keeps
    getting a trickle of requests (this cluster's heartbeats every 200 ms, plus health probes:
    more than hd_http_idle_trim's quiet rate, so only its forced trim every 15 s and the
    relay loops' own trim of idle handles and pooled relays bring the memory back)."""
    if "asan" in os.environ.get("HOARD_BUILD", ""):
        pytest.skip("ASan's allocator ignores malloc_trim")
    bench = os.path.join(BIN_DIR, "hoard-bench")
    proxy = cluster.primary
    pid = proxy.proc.pid
    s3 = s3client(proxy)
    bucket = "rss-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=bucket)
    sig = "%s:%s" % (ACCESS_KEY, SECRET_KEY)
    stop = threading.Event()

    def probes():  # ~25 requests/s whatever the machine's load
        while not stop.wait(0.04):
            subprocess.run(["curl", "-s", "-o", "/dev/null", "%s/v1/health" % proxy.url],
                           timeout=30)

    prober = threading.Thread(target=probes, daemon=True)

    def hb(prefix, *args):
        p = subprocess.run([bench, "--base", "%s/%s/%s" % (proxy.url, bucket, prefix), "--sigv4",
                            sig, "--warmup", "0", "--json"] + list(args),
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        return p.stdout

    try:
        hb("big", "--objects", "8", "--seq", "--put", "100", "--size", "4MiB", "--requests",
           "8", "--conns", "4")
        hb("small", "--objects", "200", "--seq", "--put", "100", "--size", "10KiB",
           "--requests", "200", "--conns", "8")
        base_kib = _vmrss_kib(pid)
        prober.start()
        with RssSampler(pid) as load:
            hb("big", "--objects", "8", "--conns", "32", "--secs", "3")
            hb("small", "--objects", "200", "--conns", "32", "--secs", "3")
        limit = RSS_LIMIT_KIB
        deadline = time.monotonic() + 90
        now_kib = _vmrss_kib(pid)
        while time.monotonic() < deadline and now_kib >= limit:
            time.sleep(0.5)
            now_kib = _vmrss_kib(pid)
        report = "proxy RSS KiB: before %d, peak under load %d, after %d" % (
            base_kib, load.peak, now_kib)
        print(report)
        if load.peak < limit:
            pytest.skip("the load did not take the proxy over the bound: nothing to judge ("
                        + report + ")")
        assert now_kib < limit, report
    finally:
        stop.set()
        if prober.is_alive():
            prober.join(timeout=60)
        resp = s3.list_objects_v2(Bucket=bucket)
        for o in resp.get("Contents", []):
            s3.delete_object(Bucket=bucket, Key=o["Key"])
        s3.delete_bucket(Bucket=bucket)
