#!/usr/bin/python3
"""`make bench BENCH_ONLY=coldget`: cold and warm GETs of an S3-backed bucket against nginx
`proxy_cache` in front of the same s3rver upstream (issue 14), side by side in one run.

  - cold GET, 1 MiB and 10 MiB objects (hoard twice: with the default MD5 check of the bytes
    against s3rver's ETags, and from a second bucket over the same upstream bucket with
    "validate_cold_get": false, which checks the size only, as nginx does), 8 transfers at a time (hoard-bench, keep-alive,
    8 connections, `--seq --requests N`: every object read once): hoard's proxy (native API, 307 followed to the
    target, which fetches from s3rver while streaming) vs nginx with `proxy_cache` (cache
    emptied and nginx restarted before each of its cold repeats; hoard's copies evicted
    before each of its cold repeats with an evict job). Both read from the same s3rver.
  - warm GET of the same objects (all cached): hoard-bench --follow (8 connections) against
    hoard's proxy vs hoard-bench against nginx (cache hits).
Repetitions alternate which side goes first. Prints a Markdown table (medians, min-max, ratio
of medians, each repetition's own ratio) and the servers' CPU seconds per GiB of cold GETs (from
/proc, steadier than MiB/s on a shared machine), and writes it to $BUILD/bench/coldget.md. Never fails on a missed goal.
Env: HOARD_BUILD, BENCH_REPEATS (default 3), BENCH_SECS (warm seconds, default 3),
BENCH_COLDGET_SIZES (default "1,10": MiB sizes to run), BENCH_PERF=1 (a system-wide
`perf record -a -g` of every cold read, in $BUILD/bench/coldget/perf-cold-*.data).
"""
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cache  # noqa: E402  (helpers: port, start, wait_http, api, hoard_bench, stat, report, run)
from cache import api, port, report, run, start, start_s3rver, stat, wait_http  # noqa: E402

TOP, BUILD, HOARDD, MIB = cache.TOP, cache.BUILD, cache.HOARDD, cache.MIB
B = os.path.join(TOP, BUILD, "bench", "coldget")
BENCH = os.path.join(TOP, BUILD, "bin", "hoard-bench")
REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))
SECS = int(os.environ.get("BENCH_SECS", "3"))
SIZES = [int(s) for s in os.environ.get("BENCH_COLDGET_SIZES", "1,10").split(",")]
COUNT = {1: 192, 10: 24}  # objects per size: 192 MiB and 240 MiB per cold repetition
PAR = 8


def nginx_conf(conf, nport, sport):
    with open(conf, "w") as f:
        f.write("""%s
worker_processes 2; daemon off; pid %s/nginx.pid; error_log %s/nginx.log warn;
events { worker_connections 4096; }
http { access_log off; sendfile on; tcp_nopush on; tcp_nodelay on; keepalive_requests 1000000;
  default_type application/octet-stream;
  client_body_temp_path %s/nginx-tmp; proxy_temp_path %s/nginx-ptmp;
  proxy_cache_path %s/ngcache levels=1:2 keys_zone=cg:16m max_size=20g inactive=1d
                   use_temp_path=off;
  upstream s3 { server 127.0.0.1:%d; keepalive 32; }
  server { listen 127.0.0.1:%d;
    location / { proxy_pass http://s3; proxy_http_version 1.1;
      proxy_set_header Connection ""; proxy_cache cg; proxy_cache_valid 200 1d;
      proxy_cache_lock on; proxy_buffers 32 64k; proxy_busy_buffers_size 256k; } } }
""" % ("user root;" if os.getuid() == 0 else "", B, B, B, B, B, sport, nport))


def cpu_secs(pids):
    """utime + stime of the processes pids and their children (nginx workers), in seconds."""
    tick = os.sysconf("SC_CLK_TCK")
    want, total = set(pids), 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            f = open("/proc/%s/stat" % d).read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(d) in want or int(f[1]) in want:  # f[1]: ppid
            total += int(f[11]) + int(f[12])
    return total / tick


def main():
    for t in ("nginx", "curl"):
        if not shutil.which(t):
            raise SystemExit("bench coldget: %s not found (make deps)" % t)
    s3rver_exe = os.path.join(TOP, "node_modules", ".bin", "s3rver")
    for exe in (HOARDD, BENCH, s3rver_exe):
        if not os.access(exe, os.X_OK):
            raise SystemExit("bench coldget: %s missing (make all, make deps)" % exe)
    shutil.rmtree(os.path.join(B, "cluster"), ignore_errors=True)
    for d in ("nginx-tmp", "nginx-ptmp"):
        os.makedirs(os.path.join(B, d), exist_ok=True)

    surl = start_s3rver(s3rver_exe, B)
    import boto3  # python3-boto3: fills s3rver (kept between runs)
    s3 = boto3.client("s3", endpoint_url=surl, aws_access_key_id="S3RVER",
                      aws_secret_access_key="S3RVER", region_name="us-east-1")
    have = set()
    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket="cgb"):
            have.update(o["Key"] for o in page.get("Contents", []))
    except s3.exceptions.NoSuchBucket:
        s3.create_bucket(Bucket="cgb")
    objs = {}
    for size in SIZES:
        objs[size] = ["m%d/o-%03d" % (size, i) for i in range(COUNT[size])]
        for k in objs[size]:
            if k not in have:
                s3.put_object(Bucket="cgb", Key=k, Body=os.urandom(size * MIB))

    nport = port()
    conf = os.path.join(B, "nginx.conf")
    nginx_conf(conf, nport, int(surl.rsplit(":", 1)[1]))
    nurl = "http://127.0.0.1:%d" % nport
    ngx = [None]

    def nginx_restart(empty):
        if ngx[0] is not None:
            os.killpg(ngx[0].pid, 15)
            ngx[0].wait(15)
            cache.procs.remove(ngx[0])
        if empty:
            shutil.rmtree(os.path.join(B, "ngcache"), ignore_errors=True)
        ngx[0] = start(["nginx", "-p", B, "-c", conf, "-e", os.path.join(B, "nginx.log")],
                       os.path.join(B, "nginx.out"))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if subprocess.run(["curl", "-s", "-o", "/dev/null", nurl + "/"]).returncode == 0:
                return
            time.sleep(0.1)
        raise SystemExit("bench coldget: nginx did not come up")

    nginx_restart(True)

    pport, tport = port(), port()
    env = dict(os.environ, HOARD_S3_PROFILE_S3RVER="S3RVER:S3RVER")
    cdir = os.path.join(B, "cluster")
    hoard_procs = []
    hoard_procs.append(start([HOARDD, "--role", "proxy", "--listen", "127.0.0.1:%d" % pport, "--data",
           os.path.join(cdir, "p"), "--log.level", "warn"], os.path.join(B, "proxy.log"), env))
    purl = "http://127.0.0.1:%d" % pport
    wait_http(purl + "/v1/health")
    hoard_procs.append(start([HOARDD, "--role", "target", "--listen", "127.0.0.1:%d" % tport,
                              "--data", os.path.join(cdir, "t"), "--log.level", "warn",
                              "--cluster.join", purl]
                             + os.environ.get("BENCH_HOARD_ARGS", "").split(),
                             os.path.join(B, "target.log"), env))
    wait_http("http://127.0.0.1:%d/v1/health?ready=true" % tport)
    api("POST", purl + "/v1/buckets/cgb?provider=aws",
        {"upstream": {"endpoint": surl, "profile": "s3rver"}})
    # the same upstream bucket without the MD5 check of cold GETs (size only, as nginx)
    api("POST", purl + "/v1/buckets/cgbsz?provider=aws",
        {"upstream": {"endpoint": surl, "profile": "s3rver", "bucket": "cgb"},
         "validate_cold_get": False})

    def bucket(who):
        return "cgbsz" if who == "hoard-size" else "cgb"

    def evict(who):
        j = api("POST", purl + "/v1/jobs", {"kind": "evict", "bucket": bucket(who), "args": {}})
        while api("GET", purl + "/v1/jobs/" + j["id"])["state"] == "running":
            time.sleep(0.1)

    def urls(who, size):
        base = nurl + "/cgb" if who == "nginx" else purl + "/v1/objects/" + bucket(who)
        return ["%s/%s" % (base, k) for k in objs[size]]

    def warm(who, size):
        uf = os.path.join(B, "urls-%s.txt" % who)
        with open(uf, "w") as f:
            f.write("\n".join(urls(who, size)) + "\n")
        out = subprocess.run([BENCH, "--urls", uf, "--follow", "--conns", str(PAR), "--threads",
                              "2", "--secs", str(SECS), "--json"], capture_output=True, text=True)
        import json
        try:
            j = json.loads(out.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            print(out.stdout, out.stderr, file=sys.stderr)
            return 0.0
        if j.get("errors"):
            print("  warm %s: %d errors" % (who, j["errors"]), file=sys.stderr)
        return j["mibs"]

    rows = {}
    load0 = open("/proc/loadavg").read().split()[:3]
    print("bench coldget: s3rver %s, nginx %s, hoard proxy %s; %d repetitions"
          % (surl, nurl, purl, REPEATS))
    for rep in range(1, REPEATS + 1):
        for size in SIZES:
            for who in (["hoard", "hoard-size", "nginx"] if rep % 2
                        else ["nginx", "hoard-size", "hoard"]):
                if who == "nginx":
                    nginx_restart(True)
                else:
                    evict(who)
                prof = None
                if os.environ.get("BENCH_PERF"):  # system-wide profile of the cold read
                    prof = subprocess.Popen(["perf", "record", "-a", "-g", "-q", "-o", os.path.join(
                        B, "perf-cold-%s-%d-r%d.data" % (who, size, rep))],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    time.sleep(0.5)
                pids = [ngx[0].pid] if who == "nginx" else [p.pid for p in hoard_procs]
                cpu0 = cpu_secs(pids)
                r = cache.hoard_bench(urls(who, size), PAR, os.path.join(B, "hb.out"),
                                      once=True, follow=True)
                secs = r["secs"] if r["gets"] == len(objs[size]) else float("inf")
                # CPU seconds per GiB served: the server's own cost, steadier than MiB/s
                # on a shared machine
                rows.setdefault(("cpu", size, who), []).append(
                    (cpu_secs(pids) - cpu0) / (len(objs[size]) * size / 1024.0))
                if prof:
                    prof.send_signal(2)
                    prof.wait(60)
                mibs = len(objs[size]) * size / secs
                rows.setdefault(("cold", size, who), []).append(mibs)
                print("  cold %2d MiB %-10s rep %d: %7.1f MiB/s" % (size, who, rep, mibs))
            for who in (["hoard", "nginx"] if rep % 2 else ["nginx", "hoard"]):
                mibs = warm(who, size)
                rows.setdefault(("warm", size, who), []).append(mibs)
                print("  warm %2d MiB %-10s rep %d: %7.1f MiB/s" % (size, who, rep, mibs))

    out = ["# hoard cold/warm GET of an S3-backed bucket vs nginx proxy_cache", "",
           "%s, %d CPUs, %d repetitions, hoard %s; load average %s at start, %s at end"
           % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), os.cpu_count(), REPEATS,
              subprocess.run(["git", "-C", TOP, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip() or "?",
              " ".join(load0), " ".join(open("/proc/loadavg").read().split()[:3])), "",
           "| test | P | hoard MiB/s | nginx proxy_cache MiB/s | ratio (medians) | paired ratios |",
           "|---|---|---|---|---|---|"]
    for kind, who, label in (("cold", "hoard", "cold GET %d MiB (MD5 checked, default)"),
                             ("cold", "hoard-size", "cold GET %d MiB (validate_cold_get=false)"),
                             ("warm", "hoard", "warm GET %d MiB (307 followed)")):
        for size in SIZES:
            h, n = rows.get((kind, size, who), []), rows.get((kind, size, "nginx"), [])
            ratio = statistics.median(h) / statistics.median(n) if h and n else 0
            pr = sorted(a / b for a, b in zip(h, n) if b)  # each repetition's own ratio
            out.append("| %s | %d | %s | %s | %.2f | %s |"
                       % (label % size, PAR, stat(h), stat(n), ratio,
                          "%.2f-%.2f" % (pr[0], pr[-1]) if pr else "-"))
    out += ["", "Server CPU seconds per GiB of cold GETs (hoard: proxy + target; nginx: all its "
            "processes), medians (min-max):", "",
            "| size | hoard (MD5 checked) | hoard (validate_cold_get=false) | nginx proxy_cache |",
            "|---|---|---|---|"]
    for size in SIZES:
        out.append("| %d MiB | %s | %s | %s |" % (size, *(
            "%.2f (%.2f-%.2f)" % (statistics.median(v), min(v), max(v)) if v else "-"
            for v in (rows.get(("cpu", size, w), []) for w in ("hoard", "hoard-size", "nginx")))))
    report("coldget", out)


if __name__ == "__main__":
    run(main)
