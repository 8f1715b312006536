"""Cold GET of S3-backed buckets (issue 14 item 3): one pass from the upstream to the client
and the cache file, and the bucket property validate_cold_get.

The upstream is the real s3rver; where a test must control how far the upstream has got, the
target reaches s3rver through a Gate: a TCP relay in this process that forwards the request
at once and the response only as far as the test allows (or cuts both connections, as an
upstream that dies mid-stream). Clients that must not read ahead are raw sockets with a small
receive buffer, so the bytes a client has read bound where the target's reader is.
"""
import hashlib
import os
import socket
import threading
import urllib.parse
import uuid

import pytest

import helpers
from cachefix import C_KEYS, HoardCluster, profiles, s3rver  # noqa: F401
from conftest import _TARGETS

CACHE_TARGET = ["--cache.atime_flush_ms", "200", "--upstream.retries", "0",
                "--upstream.connect_timeout_ms", "1000"]


def uname(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:10])


@pytest.fixture(scope="module")
def cache(tmp_path_factory, log_dir, profiles):  # noqa: F811
    yield from HoardCluster("cg", str(tmp_path_factory.mktemp("cg")), log_dir, _TARGETS, C_KEYS,
                            ntargets=1, target_extra=CACHE_TARGET).serve()


class Gate:
    """A TCP relay to `upstream` (host, port). Requests pass freely; response bytes pass
    while the running total stays within the allowance (None: unlimited). kill() resets
    every connection (ends them mid-response)."""

    def __init__(self, upstream):
        self.upstream = upstream
        self.cv = threading.Condition()
        self.allow = None
        self.passed = 0
        self.socks = []
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.lsock.getsockname()[1]

    def _accept(self):
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            u = socket.create_connection(self.upstream)
            with self.cv:
                self.socks += [c, u]
            threading.Thread(target=self._pipe, args=(c, u, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(u, c, True), daemon=True).start()

    def _pipe(self, src, dst, metered):
        try:
            while True:
                want = 65536
                if metered:
                    with self.cv:
                        while self.allow is not None and self.passed >= self.allow:
                            self.cv.wait()
                        if self.allow is not None:
                            want = min(want, self.allow - self.passed)
                b = src.recv(want)
                if not b:
                    break
                if metered:
                    with self.cv:
                        self.passed += len(b)
                        self.cv.notify_all()
                dst.sendall(b)
        except OSError:
            pass
        for x in (src, dst):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def limit(self, more):
        """Lets `more` further response bytes through (from what has passed so far)."""
        with self.cv:
            self.allow = self.passed + more
            self.cv.notify_all()

    def wait_passed(self, n, timeout=30):
        with self.cv:
            assert self.cv.wait_for(lambda: self.passed >= n, timeout), (self.passed, n)

    def open(self):
        with self.cv:
            self.allow = None
            self.cv.notify_all()

    def kill(self):
        with self.cv:
            for s in self.socks:  # as the upstream's process dying: its connections end
                try:
                    s.shutdown(socket.SHUT_RDWR)  # wakes the relay threads blocked on them
                except OSError:
                    pass
            self.socks = []
            self.allow = None
            self.cv.notify_all()

    def close(self):
        self.lsock.close()
        self.kill()


class RawGet:
    """A GET of a target URL (the proxy's 307 Location) on a raw socket with a small receive
    buffer: what it has read bounds what the target has sent."""

    def __init__(self, url, rcvbuf=64 * 1024):
        u = urllib.parse.urlsplit(url)
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(60)
        self.sock.connect((u.hostname, u.port))
        path = u.path + ("?" + u.query if u.query else "")
        self.sock.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
                           % (path, u.netloc)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            b = self.sock.recv(4096)
            assert b, head
            head += b
        head, self.body = head.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.strip().lower(): v.strip()
                        for k, v in (ln.split(":", 1) for ln in lines[1:])}

    def read_until(self, n):
        """Reads until the body has n bytes or the connection ends; returns the length."""
        while len(self.body) < n:
            b = self.sock.recv(min(1 << 20, n - len(self.body)))
            if not b:
                break
            self.body += b
        return len(self.body)

    def read_all(self):
        """Everything up to the end of the connection (reset or closed)."""
        try:
            while True:
                b = self.sock.recv(1 << 20)
                if not b:
                    break
                self.body += b
        except OSError:
            pass
        return self.body

    def close(self):
        self.sock.close()


@pytest.fixture(scope="module")
def gate(s3rver):  # noqa: F811
    u = urllib.parse.urlsplit(s3rver.url)
    g = Gate((u.hostname, u.port))
    yield g
    g.close()


def location(cache, bucket, key):
    r = cache.api("GET", cache.obj_path(bucket, key), follow=False)
    assert r.status_code == 307, (r.status_code, r.text)
    return r.headers["Location"]


def gated_object(s3rver, cache, gate, size, seed):  # noqa: F811
    """A new s3rver object of `size` bytes behind the gate: (bucket, key, data)."""
    data = helpers.pattern_bytes(size, seed)
    src = uname("gsrc")
    s3rver.client().create_bucket(Bucket=src)
    s3rver.client().put_object(Bucket=src, Key="big", Body=data)
    gate.open()
    b = cache.create_cloud_bucket(src, gate.url, "s3rver")
    return b, "big", data


def test_cold_get_streams_from_memory_in_one_pass(s3rver, cache, gate):  # noqa: F811
    """The client gets the first bytes while the upstream has sent a fraction of the object
    (the temp file exists, nothing is cached yet); then, with the client keeping up (the
    upstream lets 512 KiB more through only once the client has read what came before), the
    whole body reaches it from the fill's memory window: not one byte is read back from the
    cache file (hoard_cold_get_readback_bytes_total unchanged). Headers are the upstream's,
    the object is cached once, byte-identical."""
    size = 12 * 1024 * 1024 + 4321
    b, k, data = gated_object(s3rver, cache, gate, size, 21)
    t = cache.targets[0]
    assert "hoard_cold_get_readback_bytes_total" in t.metrics()
    rb0 = cache.target_metric("hoard_cold_get_readback_bytes_total")
    loc = location(cache, b, k)
    gate.limit(1024 * 1024)  # headers and about 1 MiB of body
    c = RawGet(loc)
    try:
        assert c.status == 200, c.headers
        assert int(c.headers["content-length"]) == size
        assert c.headers["etag"] == '"%s"' % hashlib.md5(data).hexdigest()
        assert "last-modified" in c.headers
        assert c.read_until(256 * 1024) == 256 * 1024
        assert gate.passed < size // 4  # the upstream is far from done...
        assert t.tmp_files() != []      # ...the fill's temp file is being written...
        assert k not in cached_names(cache, b)  # ...and nothing is visible in the cache
        step = 512 * 1024
        while c.read_until(len(c.body)) < size:
            before = gate.passed
            gate.limit(step)
            gate.wait_passed(min(before + step, before + 1), timeout=60)
            # the client catches up with what was published (all but < 128 KiB of it)
            want = min(size, gate.passed - 1024 - 128 * 1024)
            c.read_until(max(want, len(c.body)))
            if gate.passed >= size:
                gate.open()
                c.read_until(size)
                break
        assert c.body == data
    finally:
        gate.open()
        c.close()
    helpers.wait_until(lambda: cached_names(cache, b) == {k}, timeout=20, what="cached")
    assert cache.target_metric("hoard_cold_get_readback_bytes_total") == rb0
    assert cache.get(b, k).content == data


def test_reader_behind_the_window_reads_the_file(s3rver, cache, gate):  # noqa: F811
    """A client that stops reading while the fill runs on falls more than the window (2 MiB)
    behind: what it reads later comes from the temp file (then the cached copy), counted as
    read back, and is byte-identical."""
    size = 24 * 1024 * 1024
    b, k, data = gated_object(s3rver, cache, gate, size, 22)
    rb0 = cache.target_metric("hoard_cold_get_readback_bytes_total")
    c = RawGet(location(cache, b, k), rcvbuf=16 * 1024)
    try:
        assert c.status == 200
        c.read_until(4096)
        # the fill finishes while this client sits near the start
        helpers.wait_until(lambda: cached_names(cache, b) == {k}, timeout=60, what="cached")
        assert c.read_until(size) == size and c.body == data
    finally:
        c.close()
    assert cache.target_metric("hoard_cold_get_readback_bytes_total") - rb0 >= 8 * 1024 * 1024


def test_upstream_dying_mid_stream_cuts_the_client_off_and_caches_nothing(
        s3rver, cache, gate):  # noqa: F811
    """The upstream's connection is reset after part of the body: the client, which already
    has a 200 with the full Content-Length, gets a short body (its connection is cut, never a
    complete-looking response), the fill counts as failed, nothing is cached and no temp file
    is left; the next GET fetches the object whole."""
    size = 8 * 1024 * 1024
    b, k, data = gated_object(s3rver, cache, gate, size, 23)
    failed0 = cache.target_metric("hoard_cold_fills_failed_total")
    gate.limit(2 * 1024 * 1024)
    c = RawGet(location(cache, b, k))
    try:
        assert c.status == 200 and int(c.headers["content-length"]) == size
        c.read_until(1024 * 1024)
        gate.kill()
        got = c.read_all()
    finally:
        c.close()
    assert len(got) < size and got == data[:len(got)]
    helpers.wait_until(lambda: cache.target_metric("hoard_cold_fills_failed_total") ==
                       failed0 + 1, timeout=30, what="the fill failed")
    assert cached_names(cache, b) == set()
    t = cache.targets[0]
    helpers.wait_until(lambda: t.tmp_files() == [], timeout=20, what="no temp files")
    gate.open()
    r = cache.get(b, k)
    assert r.status_code == 200 and r.content == data


def cached_names(cache, bucket):
    return {e["name"] for e in cache.listing(bucket, cached="true", limit=1000)["entries"]}


def corrupt_in_s3rver(s3rver, bucket, key, data):  # noqa: F811
    """Overwrites 16 bytes in the middle of s3rver's stored copy (same length): the body no
    longer matches the MD5 ETag s3rver announces."""
    path = os.path.join(s3rver.data, bucket, key + "._S3rver_object")
    assert os.path.getsize(path) == len(data)
    with open(path, "r+b") as f:
        f.seek(len(data) // 2)
        f.write(b"\xff" * 16)
    bad = bytearray(data)
    bad[len(data) // 2:len(data) // 2 + 16] = b"\xff" * 16
    return bytes(bad)


def test_validate_cold_get_false_checks_the_size_only(s3rver, cache):  # noqa: F811
    """With "validate_cold_get": false the bytes are not hashed against the upstream's MD5
    ETag (the size still is): a copy that no longer matches its ETag is served whole and
    cached, where the default (true) cuts the client off and caches nothing
    (test_cache.py::test_etag_mismatch_aborts_and_caches_nothing). The property shows in the
    bucket's props, true by default, and can be switched back."""
    data = helpers.pattern_bytes(3 * 1024 * 1024 + 17, 9)
    src = uname("src")
    s3rver.client().create_bucket(Bucket=src)
    s3rver.client().put_object(Bucket=src, Key="k", Body=data)
    bad = corrupt_in_s3rver(s3rver, src, "k", data)
    b = cache.create_cloud_bucket(src, s3rver.url, "s3rver")
    props = cache.api("GET", "/v1/buckets/%s?props" % b).json()["props"]
    assert props["validate_cold_get"] is True, props
    r = cache.api("PATCH", "/v1/buckets/" + b, body={"validate_cold_get": False})
    assert r.status_code == 200, r.text
    props = cache.api("GET", "/v1/buckets/%s?props" % b).json()["props"]
    assert props["validate_cold_get"] is False, props
    assert cache.api("PATCH", "/v1/buckets/" + b,
                     body={"validate_cold_get": "no"}).status_code == 400
    failed0 = cache.target_metric("hoard_cold_fills_failed_total")
    r = cache.get(b, "k")
    assert r.status_code == 200 and r.content == bad
    assert r.headers["ETag"] == '"%s"' % hashlib.md5(data).hexdigest()  # the upstream's
    helpers.wait_until(lambda: cached_names(cache, b) == {"k"}, timeout=20, what="k cached")
    assert cache.get(b, "k").content == bad
    assert cache.target_metric("hoard_cold_fills_failed_total") == failed0
    # back to the default: the next fill of a corrupted copy is refused again
    s3rver.client().put_object(Bucket=src, Key="k2", Body=data)
    corrupt_in_s3rver(s3rver, src, "k2", data)
    assert cache.api("PATCH", "/v1/buckets/" + b,
                     body={"validate_cold_get": None}).status_code == 200
    props = cache.api("GET", "/v1/buckets/%s?props" % b).json()["props"]
    assert props["validate_cold_get"] is True, props
    r = cache.get(b, "k2", stream=True)
    got = b""
    try:
        for chunk in r.iter_content(65536):
            got += chunk
    except Exception:  # cut off: urllib3 raises or just ends early
        pass
    assert len(got) < len(data)
    helpers.wait_until(lambda: cache.target_metric("hoard_cold_fills_failed_total") == failed0 + 1,
                       timeout=20, what="the failed fill counted")
    assert cached_names(cache, b) == {"k"}
