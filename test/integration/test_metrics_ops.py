"""/metrics for operations (issue 19): per-bucket request and byte counters with a bounded
number of buckets (the rest as bucket="_other"), build and process series, the jobs'
progress gauges, and prefetch fills counted as cache misses."""
import os
import socket
import threading
import time

import requests

import helpers
from cachefix import C_KEYS, HoardCluster, S3rver, profiles  # noqa: F401
from conftest import ACCESS_KEY, SECRET_KEY, _TARGETS


def test_per_bucket_counters_bounded_build_and_process(target_factory):
    t = target_factory(extra_args=["--metrics.buckets", "2", "--store.fsync", "false"])
    auth = helpers.SigV4Requests(ACCESS_KEY, SECRET_KEY)
    bodies = {"mb-aaa": b"a" * 1000, "mb-bbb": b"b" * 2000, "mb-ccc": b"c" * 3000,
              "mb-ddd": b"d" * 4000}
    # refused requests for made-up buckets (no credentials, or no such bucket) take no slot
    for b in ("mb-x1", "mb-x2", "mb-x3"):
        assert requests.get("%s/v1/objects/%s/k" % (t.url, b), timeout=10).status_code in (
            401, 403)
        assert requests.put("%s/%s/k" % (t.url, b), data=b"zz", timeout=10).status_code in (
            401, 403)
        assert requests.get("%s/v1/objects/%s/k" % (t.url, b), auth=auth,
                            timeout=10).status_code == 404
    for b, body in bodies.items():
        assert requests.post(t.url + "/v1/buckets/" + b, auth=auth, timeout=10).status_code == 201
        r = requests.put("%s/v1/objects/%s/k" % (t.url, b), data=body, auth=auth, timeout=10)
        assert r.status_code == 200, r.text
        r = requests.get("%s/v1/objects/%s/k" % (t.url, b), auth=auth, timeout=10)
        assert r.content == body
    # S3 calls are counted under their bucket as well
    r = requests.put("%s/mb-aaa/s3key" % t.url, data=b"x" * 10, auth=auth, timeout=10)
    assert r.status_code == 200, r.text
    m = t.metrics()
    s = t.series
    # the first two buckets seen have series of their own, the others share "_other"
    assert m[s("hoard_bucket_requests_total", bucket="mb-aaa", op="put")] == 2
    assert m[s("hoard_bucket_requests_total", bucket="mb-aaa", op="get")] == 1
    assert m[s("hoard_bucket_bytes_in_total", bucket="mb-aaa")] == 1010
    assert m[s("hoard_bucket_bytes_out_total", bucket="mb-bbb")] == 2000
    assert m[s("hoard_bucket_bytes_in_total", bucket="_other")] == 7000
    # (the refused requests above count under "_other" too)
    assert m[s("hoard_bucket_requests_total", bucket="_other", op="get")] >= 2
    assert not [k for k in m if "mb-ccc" in k or "mb-ddd" in k or "mb-x" in k]
    # build and process
    info = [k for k in m if k.startswith("hoard_build_info{")]
    assert len(info) == 1 and 'version="0.1.0"' in info[0] and 'commit="' in info[0], info
    assert 'commit=""' not in info[0]
    assert m["process_resident_memory_bytes"] > 1 << 20
    assert m["process_open_fds"] >= 3
    assert m["process_max_fds"] >= m["process_open_fds"]
    assert m["process_cpu_seconds_total"] >= 0
    assert time.time() - 3600 < m["process_start_time_seconds"] <= time.time() + 1


class Silent:
    """An upstream that accepts connections and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.conns = []
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self):
        while True:
            try:
                self.conns.append(self.sock.accept()[0])
            except OSError:
                return

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.sock.getsockname()[1]

    def close(self):
        for c in self.conns:
            c.close()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() (close alone does not)
        except OSError:
            pass
        self.sock.close()


def test_prefetch_fills_are_misses_and_job_gauges(tmp_path, log_dir, profiles):
    s3 = S3rver(str(tmp_path / "s3rver"), os.path.join(log_dir, "mops-s3rver"))
    s3.start()
    silent = Silent()
    c = HoardCluster("mops", str(tmp_path / "c"), log_dir, _TARGETS, C_KEYS, ntargets=2,
                     target_extra=["--upstream.retries", "0"])
    try:
        c.start()
        cl = s3.client()
        cl.create_bucket(Bucket="mops-src")
        for i in range(6):
            cl.put_object(Bucket="mops-src", Key="o%d" % i, Body=b"x" * (1000 + i))
        c.create_cloud_bucket("mops-src", s3.url, "S3RVER")
        before = c.target_metric("hoard_cache_misses_total")
        j = c.wait_job(c.start_job("prefetch", "mops-src", {"template": "o{0..5}"}))
        assert j["state"] == "done", j
        assert c.target_metric("hoard_cache_misses_total") - before == 6
        assert c.target_metric("hoard_jobs_running", kind="prefetch") == 0
        # a prefetch stuck on an upstream that never answers: its progress gauges show
        c.create_cloud_bucket("mops-stuck", silent.url, "S3RVER")
        jid = c.start_job("prefetch", "mops-stuck", {"template": "s{0..3}"})
        helpers.wait_until(lambda: c.target_metric("hoard_jobs_running", kind="prefetch") >= 1,
                           timeout=30, what="the stuck prefetch running")
        done = c.target_metric("hoard_job_objects", id=jid, kind="prefetch",
                               bucket="mops-stuck", done="true")
        total = c.target_metric("hoard_job_objects", id=jid, kind="prefetch",
                                bucket="mops-stuck", done="false")
        assert done == 0 and total == 4, (done, total)
        assert c.api("DELETE", "/v1/jobs/" + jid).status_code == 200
    finally:
        problems = c.stop()
        silent.close()
        s3.stop()
    assert not problems, problems
