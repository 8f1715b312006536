#!/usr/bin/python3
"""`make bench BENCH_ONLY=lifecycle`: what bucket lifecycle rules cost a target.

One standalone target (no auth, `--store.fsync false`, passes every second) and two buckets
of BENCH_LC_OBJECTS (default 100000) objects of 100 bytes, written with hoard-bench:

  - GETs: 10 KiB objects read with hoard-bench from a bucket with a rule (which adds the
    x-amz-expiration header to every answer) and, in the same run, alternating, from one
    without (the reference); medians of BENCH_REPEATS (default 3) and their ratio.
  - a lifecycle pass that deletes nothing (a rule no object is due for yet: every row is
    read) and one that expires every object (a Date in the past), from the job's own
    started_ms/finished_ms.

Never fails on a missed goal. Stops the target it starts.
"""
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("HOARD_BUILD", "build")
BIN = os.path.join(TOP, BUILD, "bin")
N = int(os.environ.get("BENCH_LC_OBJECTS", "100000"))
REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))
GET_OBJECTS = 1000


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, body=None):
    req = urllib.request.Request(url, data=body, method=method)
    with urllib.request.urlopen(req, timeout=120) as r:
        return r.status, r.read()


def bench(*args):
    p = subprocess.run([os.path.join(BIN, "hoard-bench"), "--json"] + list(args),
                       capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        sys.exit("hoard-bench failed: %s" % (p.stdout + p.stderr))
    return json.loads(p.stdout)


def fill(url, bucket, n, size):
    http("PUT", "%s/%s" % (url, bucket))
    out = bench("--base", "%s/%s" % (url, bucket), "--objects", str(n), "--seq", "--put", "100",
                "--size", str(size), "--requests", str(n), "--warmup", "0", "--secs", "900",
                "--conns", "8")
    if out.get("errors"):
        sys.exit("writing %s: %r" % (bucket, out))


def rule(url, bucket, expiration):
    body = ("<LifecycleConfiguration><Rule><ID>bench</ID><Filter/><Status>Enabled</Status>"
            "<Expiration>%s</Expiration></Rule></LifecycleConfiguration>" % expiration)
    http("PUT", "%s/%s?lifecycle" % (url, bucket), body.encode())


def job(url):
    try:
        return json.loads(http("GET", url + "/v1/jobs/lifecycle")[1])
    except OSError:
        return None


def pass_after(url, t_ms):
    """The first lifecycle pass that starts after t_ms, once done: (seconds, objects)."""
    while True:
        j = job(url)
        if j and j["state"] == "done" and j["started_ms"] > t_ms:
            return (j["finished_ms"] - j["started_ms"]) / 1000.0, j["objects"]
        time.sleep(0.2)


def main():
    root = tempfile.mkdtemp(prefix="hd-lc-bench-")
    port = free_port()
    url = "http://127.0.0.1:%d" % port
    log = open(os.path.join(root, "hoardd.log"), "w")
    p = subprocess.Popen([os.path.join(BIN, "hoardd"), "--role", "target", "--listen",
                          "127.0.0.1:%d" % port, "--data", os.path.join(root, "data"),
                          "--store.fsync", "false", "--lifecycle.interval_ms", "1000"],
                         stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(100):
            try:
                http("GET", url + "/v1/health")
                break
            except OSError:
                time.sleep(0.1)
        # GETs with and without rules
        fill(url, "plain", GET_OBJECTS, 10240)
        fill(url, "ruled", GET_OBJECTS, 10240)
        rule(url, "ruled", "<Days>100000</Days>")
        rates = {"plain": [], "ruled": []}
        for i in range(REPEATS):
            for b in (("plain", "ruled") if i % 2 == 0 else ("ruled", "plain")):
                out = bench("--base", "%s/%s" % (url, b), "--objects", str(GET_OBJECTS),
                            "--conns", "8", "--secs", "4", "--warmup", "1")
                rates[b].append(out["rps"])
        pm, rm = statistics.median(rates["plain"]), statistics.median(rates["ruled"])
        print("GET 10 KiB, 8 conns: bucket without rules %.0f req/s (%s), with a rule %.0f req/s "
              "(%s): ratio %.2f" % (pm, ", ".join("%.0f" % r for r in rates["plain"]), rm,
                                    ", ".join("%.0f" % r for r in rates["ruled"]), rm / pm))
        # passes over N objects
        fill(url, "many", N, 100)
        t = int(time.time() * 1000)
        rule(url, "many", "<Days>100000</Days>")
        secs, objs = pass_after(url, t)
        print("pass over %d objects, none due: %.2f s (%.1f us per object)" %
              (N, secs, secs * 1e6 / N))
        t = int(time.time() * 1000)
        rule(url, "many", "<Date>2020-01-01T00:00:00Z</Date>")
        total, left = 0.0, N
        while left > 0:  # a pass stops when the rules change; the next one goes on
            secs, objs = pass_after(url, t)
            t = int(time.time() * 1000)
            total += secs
            left -= objs
            if objs == 0:
                break
        print("expiring %d objects: %.2f s of passes (%.0f deletes/s)" %
              (N - left, total, (N - left) / total if total else 0))
    finally:
        p.terminate()
        p.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
