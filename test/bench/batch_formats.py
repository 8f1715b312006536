#!/usr/bin/python3
"""Batch GET output formats (make bench, BENCH_ONLY=formats): what each format of a batch GET
costs the serving target, side by side in one run. 1 proxy + 1 target (hoardd as
test/bench/cluster.py starts them), 400 objects of 10 KiB (every other one random bytes, the
others JSON text); one client asks POST /v1/batch for all 400 in a loop, BENCH_SECS (3) per
format, formats rotated, BENCH_REPEATS (3) rounds; medians. The target's CPU from /proc.
The plain tar is the reference: its local entries go out by reference (sendfile)."""
import json
import os
import random
import shutil
import statistics
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster as C  # noqa: E402 (its node start, PUT and /proc helpers)

import requests  # noqa: E402

FORMATS = ("tar", "tar.gz", "tar.lz4", "tar.zst", "zip")
REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))
SECS = float(os.environ.get("BENCH_SECS", "3"))


def main():
    C.OUT = os.path.join(C.TOP, C.BUILD, "bench", "formats")
    shutil.rmtree(C.OUT, ignore_errors=True)
    os.makedirs(C.OUT)
    pport, tport = C.free_port(), C.free_port()
    proxy = "http://127.0.0.1:%d" % pport
    procs = [C.start("proxy", "p1", pport)]
    try:
        C.wait_ready(proxy)
        procs.append(C.start("target", "t1", tport, proxy))
        C.wait_ready("http://127.0.0.1:%d" % tport)
        time.sleep(1.5)
        urllib.request.urlopen(urllib.request.Request(proxy + "/v1/buckets/bfmt",
                                                      method="POST"), timeout=10)
        rnd = random.Random(1)
        for i in range(400):
            body = os.urandom(10240) if i % 2 == 0 else json.dumps(
                {"i": i, "label": "cat" * 50, "w": [rnd.random() for _ in range(300)]}).encode()
            C.put("%s/v1/objects/bfmt/o-%04d" % (proxy, i), body)
        ents = [{"bucket": "bfmt", "name": "o-%04d" % i} for i in range(400)]
        s = requests.Session()
        rows = {}
        for rep in range(REPEATS):
            for k in range(len(FORMATS)):
                fmt = FORMATS[(rep + k) % len(FORMATS)]
                body = json.dumps({"entries": ents, "format": fmt})
                c0 = C.usage_of([procs[1].pid])[0]
                t0 = time.monotonic()
                n = size = 0
                while time.monotonic() - t0 < SECS:
                    r = s.post(proxy + "/v1/batch", data=body, timeout=60)
                    if r.status_code != 200:
                        raise RuntimeError("batch %s: %d %s" % (fmt, r.status_code, r.text))
                    size = len(r.content)
                    n += 1
                dt = time.monotonic() - t0
                cpu = C.usage_of([procs[1].pid])[0] - c0
                rows.setdefault(fmt, []).append((n * 400 / dt, cpu * 1e6 / (n * 400), size))
        tar_us = statistics.median(r[1] for r in rows["tar"])
        print("| format | samples/s | target CPU per sample | vs tar | answer bytes |")
        print("|---|---:|---:|---:|---:|")
        for fmt in FORMATS:
            sps = statistics.median(r[0] for r in rows[fmt])
            us = statistics.median(r[1] for r in rows[fmt])
            print("| %s | %.0f | %.1f us | %.2fx | %d |" % (fmt, sps, us, us / tar_us,
                                                           rows[fmt][0][2]))
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()


if __name__ == "__main__":
    main()
