"""Crash safety and restarts, each on its own target (the shared one is left alone): kill -9
during uploads, SIGTERM during an upload, and data surviving a restart."""
import http.client
import os
import threading
import time

import requests

import helpers
from helpers import SigV4Requests, md5_hex, pattern_bytes, wait_until

MiB = 1024 * 1024


class SlowUpload(threading.Thread):
    """Streams `total` bytes from a generator, `chunk` bytes at a time with a pause between,
    until stopped or the connection breaks. kind: "s3" (signed, Content-Length) or "native"
    (Transfer-Encoding: chunked)."""

    def __init__(self, t, kind, bucket, key, total=200 * MiB, chunk=256 * 1024, pause=0.01):
        super().__init__(daemon=True)
        self.t, self.kind, self.bucket, self.key = t, kind, bucket, key
        self.total, self.chunk, self.pause = total, chunk, pause
        self.sent = 0
        self.error = None
        self.status = None
        self.stop_ev = threading.Event()

    def gen(self):
        block = pattern_bytes(self.chunk, seed=99)
        while self.sent < self.total and not self.stop_ev.is_set():
            n = min(self.chunk, self.total - self.sent)
            yield block[:n]
            self.sent += n
            time.sleep(self.pause)

    def run(self):
        conn = http.client.HTTPConnection(self.t.host, self.t.port, timeout=60)
        try:
            if self.kind == "s3":
                path = "/%s/%s" % (self.bucket, self.key)
                h = helpers.sign_headers("PUT", self.t.url + path, self.t.access_key,
                                         self.t.secret_key, {"Content-Length": str(self.total)})
                conn.putrequest("PUT", path, skip_accept_encoding=True)
                for k, v in h.items():
                    conn.putheader(k, v)
                conn.endheaders()
                for b in self.gen():
                    conn.send(b)
            else:
                path = "/v1/objects/%s/%s" % (self.bucket, self.key)
                h = helpers.sign_headers("PUT", self.t.url + path, self.t.access_key,
                                         self.t.secret_key, {"Transfer-Encoding": "chunked"})
                conn.putrequest("PUT", path, skip_accept_encoding=True)
                for k, v in h.items():
                    conn.putheader(k, v)
                conn.endheaders()
                for b in self.gen():
                    conn.send(b"%x\r\n" % len(b) + b + b"\r\n")
                conn.send(b"0\r\n\r\n")
            self.status = conn.getresponse().status
        except Exception as e:  # expected: the server dies under us
            self.error = e
        finally:
            conn.close()


def tmp_bytes(t):
    total = 0
    for f in t.tmp_files():
        try:
            total += os.path.getsize(f)
        except OSError:
            pass
    return total


def write_objects(t, s3c, bucket):
    """Objects of assorted sizes through both APIs; returns {key: bytes}."""
    objs = {}
    for i, size in enumerate([0, 1, 1000, 65536, MiB + 3, 4 * MiB]):
        data = pattern_bytes(size, seed=100 + i)
        key = "before/s3-%d" % i
        s3c.put_object(Bucket=bucket, Key=key, Body=data)
        objs[key] = data
    for i, size in enumerate([10, 300000]):
        data = pattern_bytes(size, seed=200 + i)
        key = "before/native-%d" % i
        r = requests.put("%s/v1/objects/%s/%s" % (t.url, bucket, key), data=data, timeout=30,
                         auth=SigV4Requests(t.access_key, t.secret_key))
        assert r.status_code == 200, r.content
        objs[key] = data
    data = b"the old version must survive"
    s3c.put_object(Bucket=bucket, Key="overwritten", Body=data)
    objs["overwritten"] = data
    return objs


def check_objects(t, s3c, bucket, objs):
    listed = {}
    for page in s3c.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        listed.update({o["Key"]: (o["Size"], o["ETag"]) for o in page.get("Contents", [])})
    assert listed == {k: (len(v), '"%s"' % md5_hex(v)) for k, v in objs.items()}
    for key, data in objs.items():
        g = s3c.get_object(Bucket=bucket, Key=key)
        body = g["Body"].read()
        assert len(body) == len(data) and md5_hex(body) == md5_hex(data), key
        assert g["ETag"] == '"%s"' % md5_hex(data), key


def test_kill9_mid_upload(target_factory):
    t = target_factory("crash")
    s3c = helpers.boto3_client(t)
    s3c.create_bucket(Bucket="crash")
    objs = write_objects(t, s3c, "crash")

    ups = [SlowUpload(t, "s3", "crash", "inflight/s3"),
           SlowUpload(t, "native", "crash", "inflight/native"),
           SlowUpload(t, "s3", "crash", "overwritten")]
    for u in ups:
        u.start()
    # all three are streaming into temp files
    wait_until(lambda: len(t.tmp_files()) == 3 and tmp_bytes(t) >= 3 * 4 * MiB, timeout=30,
               what="three uploads in progress")
    assert all(u.status is None for u in ups), [u.status for u in ups]
    t.kill9()
    for u in ups:
        u.stop_ev.set()
        u.join(30)
        assert not u.is_alive()
        assert u.status is None, "upload finished before the kill: %r" % u.status
        assert u.sent < u.total

    t.start()  # same port, same data dir
    assert t.tmp_files() == [], "temp files survived the restart: %r" % t.tmp_files()
    s3c = helpers.boto3_client(t)  # the old client's pooled connections are dead
    for key in ("inflight/s3", "inflight/native"):
        r = t.raw().request("HEAD", "/crash/%s" % key)
        assert r.status == 404, (key, r)
        r = t.raw().request("GET", "/crash/%s" % key)
        helpers.check_s3_error(r, 404, "NoSuchKey")
        r = requests.get("%s/v1/objects/crash/%s" % (t.url, key), timeout=10,
                         auth=SigV4Requests(t.access_key, t.secret_key))
        assert r.status_code == 404
    check_objects(t, s3c, "crash", objs)  # includes the old "overwritten"

    # the store takes new writes
    s3c.put_object(Bucket="crash", Key="after", Body=b"written after the crash")
    assert s3c.get_object(Bucket="crash", Key="after")["Body"].read() == b"written after the crash"
    s3c.put_object(Bucket="crash", Key="inflight/s3", Body=b"retry")
    assert s3c.get_object(Bucket="crash", Key="inflight/s3")["Body"].read() == b"retry"
    objs.update({"after": b"written after the crash", "inflight/s3": b"retry"})
    check_objects(t, s3c, "crash", objs)


def test_kill9_right_after_acknowledged_puts(target_factory):
    """Every PUT that got a 200 before the kill is there afterwards (store.fsync is on)."""
    t = target_factory("ackcrash")
    s3c = helpers.boto3_client(t)
    s3c.create_bucket(Bucket="ack")
    objs = {}
    for i in range(40):
        data = pattern_bytes(1000 + i * 997, seed=300 + i)
        s3c.put_object(Bucket="ack", Key="k%03d" % i, Body=data)
        objs["k%03d" % i] = data
    s3c.delete_object(Bucket="ack", Key="k007")
    del objs["k007"]
    t.kill9()
    t.start()
    check_objects(t, helpers.boto3_client(t), "ack", objs)


def test_sigterm_during_upload(target_factory):
    t = target_factory("term")
    s3c = helpers.boto3_client(t)
    s3c.create_bucket(Bucket="term")
    s3c.put_object(Bucket="term", Key="kept", Body=b"kept")
    u = SlowUpload(t, "s3", "term", "partial")
    u.start()
    wait_until(lambda: tmp_bytes(t) >= 2 * MiB, timeout=30, what="upload in progress")
    t0 = time.monotonic()
    rc = t.stop(timeout=20)
    assert rc == 0, "hoardd exited with %r on SIGTERM during an upload" % rc
    assert time.monotonic() - t0 < 20
    u.stop_ev.set()
    u.join(30)
    assert u.status is None, u.status
    assert t.tmp_files() == [], t.tmp_files()
    t.start()
    s3c = helpers.boto3_client(t)
    assert t.raw().request("HEAD", "/term/partial").status == 404
    assert s3c.get_object(Bucket="term", Key="kept")["Body"].read() == b"kept"


def test_restart_keeps_objects(target_factory):
    t = target_factory("restart")
    s3c = helpers.boto3_client(t)
    for b in ("keep-a", "keep-b"):
        s3c.create_bucket(Bucket=b)
    objs = write_objects(t, s3c, "keep-a")
    s3c.put_object(Bucket="keep-b", Key="meta", Body=b"with metadata",
                   Metadata={"k1": "v1", "k2": "v 2"}, ContentType="text/plain")
    s3c.delete_object(Bucket="keep-a", Key="before/s3-1")
    del objs["before/s3-1"]
    h0 = s3c.head_object(Bucket="keep-b", Key="meta")

    rc = t.restart()
    assert rc == 0, "hoardd exited with %r on SIGTERM" % rc
    s3c = helpers.boto3_client(t)
    names = sorted(b["Name"] for b in s3c.list_buckets()["Buckets"])
    assert names == ["keep-a", "keep-b"]
    check_objects(t, s3c, "keep-a", objs)
    h1 = s3c.head_object(Bucket="keep-b", Key="meta")
    assert h1["Metadata"] == {"k1": "v1", "k2": "v 2"}
    assert h1["ContentType"] == "text/plain"
    assert h1["ETag"] == h0["ETag"] and h1["LastModified"] == h0["LastModified"]
    assert h1["ContentLength"] == len(b"with metadata")

    # twice more, with a kill -9 in between: still all there
    t.kill9()
    t.start()
    assert t.restart() == 0
    check_objects(t, helpers.boto3_client(t), "keep-a", objs)
