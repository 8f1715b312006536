#!/usr/bin/python3
"""`make bench BENCH_ONLY=plan`: epoch plans (issue 16) against plain LRU, side by side.

Setup: 2,000 objects of 64 KiB in an S3-backed bucket over s3rver, one proxy and one target
(one mountpath). The upstream runs in a network namespace of its own behind a veth pair, with
a tc token bucket (tbf) of BENCH_PLAN_RATE (default 100mbit) on its side, towards hoard (needs
root and `ip`/`tc`; without them, or with BENCH_PLAN_RATE=none, s3rver runs on loopback with
no limiter, and the output says so; this VM's kernel has no netem, so no delay is added).
The cache capacity is set so that the high
watermark holds a fraction F of the dataset (space.capacity = F x dataset / 0.90, high 90%,
low 85%, oos 95%). 8 reader threads read each epoch in a fresh permutation (the plan's seeded
order, docs/examples/hoard_plan.py), taking positions from one shared counter, with GETs on
the proxy that follow the 307 to the target (keep-alive sessions), tagged ?plan=ID.
Modes, on a fresh cluster each: "lru" (no plan registered, the same order), "plan" (the
plan registered before epoch 0), and once per repeat "warm" (capacity twice the dataset, no
plan: epochs 1.. are all hits, the all-warm baseline of the p99 goal). Per epoch: hit ratio
(target metrics), upstream bytes as a
fraction of the dataset (hoard_cold_get_bytes_total, prefetch included), wall time, reader
p50/p99 GET latency; and the simulated Belady MIN and LRU hit ratios for the same order and
a cache of F x dataset objects. Medians of BENCH_REPEATS runs (default 3).

Prints a Markdown table and writes it to $BUILD/bench/plan.md. Never fails on a missed goal.
Env: HOARD_BUILD, BENCH_REPEATS, BENCH_PLAN_N (objects, default 2000), BENCH_PLAN_FRACS
(default "0.5,0.25"), BENCH_PLAN_EPOCHS (default 4). Every process it starts is stopped.
"""
import heapq
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from collections import OrderedDict

import requests

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "docs", "examples"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hoard_plan  # noqa: E402
from cache import api, port, wait_http  # noqa: E402  (test/bench/cache.py)

BUILD = os.environ.get("HOARD_BUILD", "build")
HOARDD = os.path.join(TOP, BUILD, "bin", "hoardd")
B = os.path.join(TOP, BUILD, "bench", "plan")
N = int(os.environ.get("BENCH_PLAN_N", "2000"))
FRACS = [float(x) for x in os.environ.get("BENCH_PLAN_FRACS", "0.5,0.25").split(",")]
EPOCHS = int(os.environ.get("BENCH_PLAN_EPOCHS", "4"))
REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))
OBJ = 64 * 1024
THREADS = 8
SEED = 20261127
BUCKET = "plands"

RATE = os.environ.get("BENCH_PLAN_RATE", "100mbit")

procs = []
netns = {}  # name, host veth, upstream address: set while the limited link exists


def start(args, log, env=None):
    f = open(log, "ab")
    p = subprocess.Popen(args, stdout=f, stderr=f, stdin=subprocess.DEVNULL, env=env,
                         start_new_session=True)
    procs.append(p)
    return p


def stop(p):
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    try:
        p.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    if p in procs:
        procs.remove(p)


def metrics(turl):
    out = {}
    with urllib.request.urlopen(turl + "/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("#") or " " not in line:
                continue
            k, v = line.rsplit(" ", 1)
            out[k] = float(v)
    return out


# ---- simulations over the same order ----

def sim_lru(seq, k):
    cache, hits = OrderedDict(), []
    for x in seq:
        h = x in cache
        hits.append(h)
        if h:
            cache.move_to_end(x)
        else:
            cache[x] = 1
            if len(cache) > k:
                cache.popitem(last=False)
    return hits


def sim_min(seq, k):
    nxt, last = [0] * len(seq), {}
    for t in range(len(seq) - 1, -1, -1):
        nxt[t] = last.get(seq[t], float("inf"))
        last[seq[t]] = t
    cache, heap, hits = {}, [], []
    for t, x in enumerate(seq):
        h = x in cache
        hits.append(h)
        cache[x] = nxt[t]
        heapq.heappush(heap, (-nxt[t], x))
        while len(cache) > k:
            d, y = heapq.heappop(heap)
            if cache.get(y) == -d:
                del cache[y]
    return hits


def per_epoch(hits):
    return [sum(hits[e * N:(e + 1) * N]) / N for e in range(EPOCHS)]


# ---- one run ----

def run(mode, frac, rep, purl_env, surl):
    """A fresh proxy + target; returns per-epoch rows."""
    d = os.path.join(B, "run-%s-%g-%d-%d" % (mode, frac, rep, os.getpid()))
    os.makedirs(d)
    env = dict(os.environ, HOARD_S3_PROFILE_S3RVER="S3RVER:S3RVER")
    pport, tport = port(), port()
    cap = int((2.0 if mode == "warm" else frac) * N * OBJ / 0.90) + OBJ // 2
    p = start([HOARDD, "--role", "proxy", "--listen", "127.0.0.1:%d" % pport, "--data",
               os.path.join(d, "p"), "--log.level", "warn"], os.path.join(d, "proxy.log"), env)
    purl = "http://127.0.0.1:%d" % pport
    wait_http(purl + "/v1/health")
    t = start([HOARDD, "--role", "target", "--listen", "127.0.0.1:%d" % tport, "--data",
               os.path.join(d, "t"), "--mountpaths", os.path.join(d, "t", "mp1"),
               "--cluster.join", purl, "--log.level", "warn", "--space.capacity", str(cap),
               "--space.high", "90", "--space.low", "85", "--space.oos", "95",
               "--space.check_ms", "200", "--cache.atime_flush_ms", "200"],
              os.path.join(d, "target.log"), env)
    turl = "http://127.0.0.1:%d" % tport
    wait_http(turl + "/v1/health?ready=true")
    api("POST", purl + "/v1/buckets/%s?provider=aws" % BUCKET,
        {"upstream": {"endpoint": surl, "profile": "s3rver"}})
    pid = "bench"
    if mode == "plan":
        api("POST", purl + "/v1/plans", {"id": pid, "bucket": BUCKET, "prefix": "d/",
                                          "epochs": EPOCHS, "seed": SEED})
    keys = ["d/%05d" % i for i in range(N)]  # sorted: the dataset's order
    rows = []
    local = threading.local()
    for e in range(EPOCHS):
        order = hoard_plan.epoch_order(N, SEED, e)
        lat, errs, nxt = [], [], [0]
        lock = threading.Lock()
        m0 = metrics(turl)

        def reader():
            if not hasattr(local, "s"):
                local.s = requests.Session()
            s = local.s
            while True:
                with lock:
                    i = nxt[0]
                    nxt[0] += 1
                if i >= N:
                    return
                url = "%s/v1/objects/%s/%s?plan=%s" % (purl, BUCKET, keys[order[i]], pid)
                t0 = time.monotonic()
                try:
                    r = s.get(url, timeout=120)
                    ok = r.status_code == 200 and len(r.content) == OBJ
                except requests.RequestException as ex:
                    ok, r = False, ex
                dt = time.monotonic() - t0
                with lock:
                    lat.append(dt)
                    if not ok:
                        errs.append(str(getattr(r, "status_code", r)))
        t0 = time.monotonic()
        ths = [threading.Thread(target=reader) for _ in range(THREADS)]
        for th in ths:
            th.start()
        for th in ths:
            th.join()
        wall = time.monotonic() - t0
        time.sleep(0.5)  # the last fills commit
        m1 = metrics(turl)

        def delta(k):
            return m1.get(k, 0) - m0.get(k, 0)
        hits, misses = delta("hoard_cache_hits_total"), delta("hoard_cache_misses_total")
        lat.sort()
        rows.append({"epoch": e, "hit": hits / max(1, hits + misses),
                     "up": delta("hoard_cold_get_bytes_total") / (N * OBJ), "wall": wall,
                     "p50": lat[len(lat) // 2] * 1000, "p99": lat[int(len(lat) * 0.99)] * 1000,
                     "errors": len(errs), "pass": delta("hoard_cold_passthrough_total")})
        if errs:
            print("  %s F=%g epoch %d: %d errors, e.g. %s" % (mode, frac, e, len(errs), errs[:3]))
    stop(t)
    stop(p)
    return rows


def sh(*args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def link_up():
    """A network namespace for the upstream behind a veth pair with netem (delay each way,
    rate towards hoard). Returns the upstream's address, or None (no root, no ip/tc)."""
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("tc"):
        print("bench plan: no root or no ip/tc: s3rver on loopback, no limiter")
        return None
    k = os.getpid() % 10000
    name, hv, nv = "hbplan%d" % k, "hbp%dh" % k, "hbp%dn" % k
    used = subprocess.run(["ip", "-br", "addr"], capture_output=True, text=True).stdout
    net = next(n for n in ("10.213.%d" % x for x in list(range(k % 200 + 20, 250)) + [19])
               if n + "." not in used)
    sh("ip", "netns", "add", name)
    netns.update(name=name, hv=hv)
    sh("ip", "link", "add", hv, "type", "veth", "peer", "name", nv)
    sh("ip", "link", "set", nv, "netns", name)
    sh("ip", "addr", "add", net + ".1/30", "dev", hv)
    sh("ip", "link", "set", hv, "mtu", "65535", "up")
    sh("ip", "netns", "exec", name, "ip", "addr", "add", net + ".2/30", "dev", nv)
    sh("ip", "netns", "exec", name, "ip", "link", "set", nv, "mtu", "65535", "up")
    sh("ip", "netns", "exec", name, "ip", "link", "set", "lo", "up")
    # the answers (the data) at RATE: a token bucket on the upstream's side of the pair (this
    # kernel has no netem, so no added delay)
    sh("ip", "netns", "exec", name, "tc", "qdisc", "add", "dev", nv, "root", "tbf", "rate", RATE,
       "burst", "256k", "latency", "200ms")
    route = subprocess.run(["ip", "route", "get", net + ".2"], capture_output=True,
                           text=True).stdout
    if "dev " + hv not in route:  # never send anything off the machine
        raise SystemExit("bench plan: %s.2 does not route through %s: %s" % (net, hv, route))
    return net + ".2"


def link_down():
    if netns:
        subprocess.run(["ip", "netns", "del", netns["name"]], stderr=subprocess.DEVNULL)
        subprocess.run(["ip", "link", "del", netns["hv"]], stderr=subprocess.DEVNULL)
        netns.clear()


def main():
    s3rver_exe = os.path.join(TOP, "node_modules", ".bin", "s3rver")
    if not os.access(HOARDD, os.X_OK) or not os.access(s3rver_exe, os.X_OK):
        raise SystemExit("bench plan: build hoardd and run make deps (s3rver) first")
    os.makedirs(B, exist_ok=True)
    for x in os.listdir(B):  # runs of earlier invocations (the s3rver dataset is kept)
        if x.startswith("run-"):
            shutil.rmtree(os.path.join(B, x), ignore_errors=True)
    sport = port()
    host = link_up() if RATE != "none" else None
    loop = "while true; do NODE_OPTIONS=--openssl-legacy-provider '%s' -d '%s' -a %s -p %d " \
        "--no-vhost-buckets; sleep 0.2; done" % (s3rver_exe, os.path.join(B, "s3rver"),
                                                 host or "127.0.0.1", sport)
    if host:
        start(["ip", "netns", "exec", netns["name"], "bash", "-c", loop],
              os.path.join(B, "s3rver.log"))
    else:
        start(["bash", "-c", loop], os.path.join(B, "s3rver.log"))
    surl = "http://%s:%d" % (host or "127.0.0.1", sport)
    wait_http(surl + "/")
    import boto3
    s3 = boto3.client("s3", endpoint_url=surl, aws_access_key_id="S3RVER",
                      aws_secret_access_key="S3RVER", region_name="us-east-1")
    try:
        s3.create_bucket(Bucket=BUCKET)
    except Exception:
        pass
    have = sum(pg.get("KeyCount", 0) for pg in
               s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix="d/"))
    if have != N:
        body = os.urandom(OBJ)
        for i in range(N):
            s3.put_object(Bucket=BUCKET, Key="d/%05d" % i, Body=body)
    seq = []
    for e in range(EPOCHS):
        seq += hoard_plan.epoch_order(N, SEED, e)
    load0 = open("/proc/loadavg").read().split()[:3]
    res = {}
    for frac in FRACS:
        k = int(frac * N)
        res[("min", frac)] = per_epoch(sim_min(seq, k))
        res[("simlru", frac)] = per_epoch(sim_lru(seq, k))
        for rep in range(REPEATS):
            modes = ("lru", "plan") if rep % 2 == 0 else ("plan", "lru")
            if frac == FRACS[0]:
                modes += ("warm",)
            for mode in modes:
                rows = run(mode, frac, rep, None, surl)
                res.setdefault((mode, frac), []).append(rows)
                if mode == "warm":
                    res.setdefault("warm", []).append(rows)
                print("  %s F=%g rep %d: hit %s up %s" % (
                    mode, frac, rep, " ".join("%.2f" % r["hit"] for r in rows),
                    " ".join("%.2f" % r["up"] for r in rows)), flush=True)
    out = ["# epoch plans vs LRU (test/bench/plan.py)", "",
           "%s, %d objects x 64 KiB over s3rver (%s), 1 proxy + 1 target, %d "
           "readers, %d epochs (fresh permutation each), median of %d runs; load %s at start, "
           "%s at end" % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), N,
                          "in a netns, tc tbf %s towards hoard" % RATE if host
                          else "loopback, no limiter", THREADS,
                          EPOCHS, REPEATS, " ".join(load0),
                          " ".join(open("/proc/loadavg").read().split()[:3])), "",
           "| F | epoch | hit LRU | hit plan | sim LRU | sim MIN | upstream/dataset LRU | "
           "upstream/dataset plan | wall s LRU | wall s plan | p50 ms LRU / plan | "
           "p99 ms LRU / plan | errors |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for frac in FRACS:
        for e in range(EPOCHS):
            def med(mode, key):
                return statistics.median(r[e][key] for r in res[(mode, frac)])
            errs = sum(r[e]["errors"] for m in ("lru", "plan") for r in res[(m, frac)])
            out.append("| %.2f | %d | %.3f | %.3f | %.3f | %.3f | %.2f | %.2f | %.1f | %.1f | "
                       "%.1f / %.1f | %.1f / %.1f | %d |" % (
                           frac, e, med("lru", "hit"), med("plan", "hit"),
                           res[("simlru", frac)][e], res[("min", frac)][e], med("lru", "up"),
                           med("plan", "up"), med("lru", "wall"), med("plan", "wall"),
                           med("lru", "p50"), med("plan", "p50"), med("lru", "p99"),
                           med("plan", "p99"), errs))
    # the p99 goal: epochs 1.. against the all-warm epochs (1..) of the warm runs
    warm = [r[e]["p99"] for r in res.get("warm", []) for e in range(1, EPOCHS)]
    if warm:
        w99 = statistics.median(warm)
        whit = statistics.median(r[e]["hit"] for r in res["warm"] for e in range(1, EPOCHS))
        out += ["", "All-warm baseline (capacity 2x the dataset, epochs 1-%d of %d runs): p99 "
                "%.1f ms (median; range %.1f-%.1f), p50 %.1f ms, hit %.3f." % (
                    EPOCHS - 1, len(res["warm"]), w99, min(warm), max(warm),
                    statistics.median(r[e]["p50"] for r in res["warm"]
                                      for e in range(1, EPOCHS)), whit), "",
                "| F | mode | p99 ms epochs 1-%d (median of runs, per epoch) | / warm p99 |"
                % (EPOCHS - 1), "|---|---|---|---|"]
        for frac in FRACS:
            for mode in ("lru", "plan"):
                ps = [statistics.median(r[e]["p99"] for r in res[(mode, frac)])
                      for e in range(1, EPOCHS)]
                out.append("| %.2f | %s | %s | %s |" % (
                    frac, mode, " / ".join("%.1f" % x for x in ps),
                    " / ".join("%.2f" % (x / w99) for x in ps)))
    text = "\n".join(out) + "\n"
    with open(os.path.join(B, "..", "plan.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    try:
        main()
    finally:
        for p in list(procs):
            stop(p)
        link_down()
