#!/usr/bin/python3
"""Warm GETs of 10 KiB objects from one target: an S3-backed bucket (every object cached by a
prefetch from s3rver) against a native bucket holding the same objects, hoard-bench with 16
connections for BENCH_SECS (default 3 s) each, 3 repetitions in alternating order. Prints
both req/s lists and the ratio of medians (paired ratios too). Not part of `make bench`:

    python3 test/bench/warm_small.py build/bin/hoardd     # HOARD_BUILD names hoard-bench's build
"""
import os
import shutil
import statistics
import sys
import time
import urllib.request

import boto3

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cache  # noqa: E402
from cache import api, hoard_bench, port, start, start_s3rver, stop_all, wait_http  # noqa: E402

HOARDD = sys.argv[1]
B = os.path.join(cache.TOP, cache.BUILD, "bench", "warm_small")
shutil.rmtree(B, ignore_errors=True)
os.makedirs(B)
N = 200
try:
    surl = start_s3rver(os.path.join(cache.TOP, "node_modules", ".bin", "s3rver"), B)
    pport, tport = port(), port()
    env = dict(os.environ, HOARD_S3_PROFILE_S3RVER="S3RVER:S3RVER")
    start([HOARDD, "--role", "proxy", "--listen", "127.0.0.1:%d" % pport, "--data", B + "/p",
           "--log.level", "warn"], B + "/proxy.log", env)
    purl = "http://127.0.0.1:%d" % pport
    wait_http(purl + "/v1/health")
    start([HOARDD, "--role", "target", "--listen", "127.0.0.1:%d" % tport, "--data", B + "/t",
           "--mountpaths", B + "/t/mp1," + B + "/t/mp2", "--cluster.join", purl,
           "--log.level", "warn"], B + "/target.log", env)
    turl = "http://127.0.0.1:%d" % tport
    wait_http(turl + "/v1/health?ready=true")
    time.sleep(1)
    s3 = boto3.client("s3", endpoint_url=surl, aws_access_key_id="S3RVER",
                      aws_secret_access_key="S3RVER", region_name="us-east-1")
    s3.create_bucket(Bucket="warm")
    api("POST", purl + "/v1/buckets/warm?provider=aws", {"upstream": {"endpoint": surl, "profile": "s3rver"}})
    api("POST", purl + "/v1/buckets/nat")
    body = os.urandom(10 * 1024)
    for i in range(N):
        s3.put_object(Bucket="warm", Key="o-%03d" % i, Body=body)
        req = urllib.request.Request("%s/v1/objects/nat/o-%03d" % (turl, i), data=body, method="PUT")
        urllib.request.urlopen(req).read()
    j = api("POST", purl + "/v1/jobs", {"kind": "prefetch", "bucket": "warm",
                                         "args": {"template": "o-{000..%03d}" % (N - 1)}})
    while api("GET", purl + "/v1/jobs/" + j["id"])["state"] == "running":
        time.sleep(0.2)
    rows = {"s3": [], "native": []}
    for rep in range(3):
        for who in (["s3", "native"] if rep % 2 else ["native", "s3"]):
            b = "warm" if who == "s3" else "nat"
            r = hoard_bench(["%s/v1/objects/%s/o-%03d" % (turl, b, i) for i in range(N)], 16, B + "/hb.out")
            rows[who].append(r["rps"])
            assert r["errors"] == 0, r
    s, n = statistics.median(rows["s3"]), statistics.median(rows["native"])
    print("s3-backed %s  native %s  ratio %.2f (paired %s)" % (
        [round(x) for x in rows["s3"]], [round(x) for x in rows["native"]], s / n,
        [round(a / b, 2) for a, b in zip(rows["s3"], rows["native"])]))
finally:
    stop_all()
