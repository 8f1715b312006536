#!/usr/bin/python3
"""`make bench BENCH_ONLY=cache`: the caching tier against direct reads of its upstream, side by
side in one run (Debian /usr/bin/python3; boto3 from python3-boto3 only to fill s3rver).

  1. cold GET, 10 MiB objects: hoard-bench reading objects through hoard the first time (hoard
     fetches them from the upstream while streaming) vs the same hoard-bench reading them
     straight from the upstream (--seq --requests N: each name exactly once). Upstream: nginx serving files path-style (a fast upstream; hoard reaches it
     as an anonymous S3 endpoint). Every repetition reads names never read before. Also with
     the upstream limited to 50 MiB/s per connection (nginx limit_rate), a remote S3's pace,
     and from a standalone hoard target (S3 with MD5 ETags, so fills also compute the MD5;
     nginx's ETags are not MD5s, so fills from it check the size only).
  2. warm GET, 100 KiB objects: hoard-bench against hoard (cached) vs against s3rver directly.
  3. prefetch: a prefetch job of 10 MiB objects from nginx vs curl fetching the same objects
     directly with the same parallelism.
Prints a Markdown table (medians, min-max, ratios) and writes it to $BUILD/bench/cache.md.
Never fails on a missed goal. Env: HOARD_BUILD, BENCH_QUICK=1, BENCH_REPEATS, BENCH_SECS.
Every process it starts is stopped by pid at the end.
"""
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("HOARD_BUILD", "build")
HOARDD = os.path.join(TOP, BUILD, "bin", "hoardd")
HB = os.path.join(TOP, BUILD, "bin", "hoard-bench")
B = os.path.join(TOP, BUILD, "bench", "cache")
HERE = os.path.join(TOP, "test", "bench")
QUICK = os.environ.get("BENCH_QUICK") == "1"
REPEATS = int(os.environ.get("BENCH_REPEATS", "1" if QUICK else "5"))
SECS = int(os.environ.get("BENCH_SECS", "2" if QUICK else "3"))
MIB = 1024 * 1024
COLD_N = 8 if QUICK else 16          # 10 MiB objects per cold measurement
PF_N = 16 if QUICK else 32           # 10 MiB objects per prefetch measurement
WARM_N = 200                          # 100 KiB objects for the warm GET test

procs = []


def port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start(args, log, env=None, cwd=None):
    f = open(log, "ab")
    p = subprocess.Popen(args, stdout=f, stderr=f, stdin=subprocess.DEVNULL, env=env, cwd=cwd,
                         start_new_session=True)
    procs.append(p)
    return p


def stop_all():
    for p in reversed(procs):
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    for p in procs:
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def wait_http(url, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return
        except Exception:
            pass
        time.sleep(0.1)
    raise SystemExit("bench cache: %s did not come up" % url)


def api(method, url, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    with urllib.request.urlopen(req, timeout=120) as r:
        text = r.read()
    return json.loads(text) if text else None


def curl_all(urls, parallel, outfile):
    """Fetches urls with one curl (keep-alive, `parallel` transfers at once); returns seconds."""
    with open(outfile, "w") as f:
        for u in urls:
            f.write('url = "%s"\noutput = "/dev/null"\n' % u)
    args = ["curl", "-sf", "--no-progress-meter", "-L", "-K", outfile]
    if parallel > 1:
        args += ["--parallel", "--parallel-max", str(parallel)]
    t0 = time.monotonic()
    subprocess.run(args, check=True)
    return time.monotonic() - t0


def hoard_bench(urls, conns, outfile, once=False, follow=False):
    """hoard-bench on URLS (the same client for hoard and its references): for SECS, or with
    once=True every URL exactly once (--seq --requests); follow: follow 307s. Returns its
    JSON report."""
    with open(outfile + ".urls", "w") as f:
        f.write("".join(u + "\n" for u in urls))
    args = [HB, "--urls", outfile + ".urls", "--conns", str(conns), "--threads",
            str(min(2, conns)), "--warmup", "0", "--json", "--timeout", "120"]
    args += ["--seq", "--requests", str(len(urls))] if once else ["--secs", str(SECS)]
    args += ["--follow"] if follow else []
    with open(outfile, "w") as f:
        p = subprocess.run(args, stdout=subprocess.PIPE, stderr=f, text=True)
    try:
        r = json.loads(p.stdout)
    except ValueError:
        raise RuntimeError("hoard-bench failed (rc %d): %s" % (p.returncode, open(outfile).read()))
    if r["errors"]:
        print("  hoard-bench: %d errors (%s)" % (r["errors"], r.get("first_error")),
              file=sys.stderr)
    return r


def stat(vals):
    if not vals:
        return "-"
    m = statistics.median(vals)
    return "%.1f (%.1f-%.1f)" % (m, min(vals), max(vals)) if len(vals) > 1 else "%.1f" % m


def main():
    for t in ("nginx", "curl"):
        if not shutil.which(t):
            raise SystemExit("bench cache: %s not found (make deps)" % t)
    s3rver_exe = os.path.join(TOP, "node_modules", ".bin", "s3rver")
    if not all(os.access(x, os.X_OK) for x in (HOARDD, HB, s3rver_exe)):
        raise SystemExit("bench cache: build hoardd and run make deps first")
    os.makedirs(B, exist_ok=True)
    for d in ("cluster", "s3rver"):  # state from an earlier run: start afresh (names repeat)
        shutil.rmtree(os.path.join(B, d), ignore_errors=True)
    www = os.path.join(B, "www")
    src = os.path.join(www, "src")
    os.makedirs(src, exist_ok=True)
    # 16 real 10 MiB files; every object name is a symlink to one of them, so each
    # repetition reads names hoard has never seen without writing gigabytes upstream
    for i in range(16):
        f = os.path.join(src, "f%02d" % i)
        if not os.path.exists(f) or os.path.getsize(f) != 10 * MIB:
            with open(f + ".tmp", "wb") as out:
                out.write(os.urandom(10 * MIB))
            os.rename(f + ".tmp", f)

    def names(kind, rep, n):
        out = []
        d = os.path.join(www, "nginx-up")
        os.makedirs(d, exist_ok=True)
        for i in range(n):
            name = "%s-r%d-%03d" % (kind, rep, i)
            link = os.path.join(d, name)
            if not os.path.islink(link):
                os.symlink(os.path.join(src, "f%02d" % (i % 16)), link)
            out.append(name)
        return out

    nport, lport = port(), port()
    conf = os.path.join(B, "nginx.conf")
    os.makedirs(os.path.join(B, "nginx-tmp"), exist_ok=True)
    with open(conf, "w") as f:
        f.write("""%s
worker_processes 2; daemon off; pid %s/nginx.pid; error_log %s/nginx.log warn;
events { worker_connections 4096; }
http { access_log off; sendfile on; tcp_nopush on; tcp_nodelay on; keepalive_requests 1000000;
  default_type application/octet-stream; client_body_temp_path %s/nginx-tmp;
  server { listen 127.0.0.1:%d; root %s; }
  server { listen 127.0.0.1:%d; root %s; limit_rate 50m; } }
""" % ("user root;" if os.getuid() == 0 else "", B, B, B, nport, www, lport, www))
    start(["nginx", "-p", B, "-c", conf, "-e", os.path.join(B, "nginx.log")],
          os.path.join(B, "nginx.out"))
    nurl = "http://127.0.0.1:%d" % nport
    lurl = "http://127.0.0.1:%d" % lport  # the same files at 50 MiB/s per connection
    wait_http(nurl + "/src/f00")

    surl = start_s3rver(s3rver_exe, B)

    # a standalone hoard target as a second upstream: S3 with MD5 ETags (so every fill is
    # checked against them), serving with sendfile like nginx
    uport = port()
    start([HOARDD, "--role", "target", "--listen", "127.0.0.1:%d" % uport, "--data",
           os.path.join(B, "cluster", "up"), "--log.level", "warn"], os.path.join(B, "up.log"))
    uurl = "http://127.0.0.1:%d" % uport
    wait_http(uurl + "/v1/health")

    pport, tport = port(), port()
    env = dict(os.environ, HOARD_S3_PROFILE_S3RVER="S3RVER:S3RVER")
    cdir = os.path.join(B, "cluster")
    os.makedirs(cdir, exist_ok=True)
    start([HOARDD, "--role", "proxy", "--listen", "127.0.0.1:%d" % pport, "--data",
           os.path.join(cdir, "p"), "--log.level", "warn"], os.path.join(B, "proxy.log"), env)
    purl = "http://127.0.0.1:%d" % pport
    wait_http(purl + "/v1/health")
    start([HOARDD, "--role", "target", "--listen", "127.0.0.1:%d" % tport, "--data",
           os.path.join(cdir, "t"), "--mountpaths",
           os.path.join(cdir, "t", "mp1") + "," + os.path.join(cdir, "t", "mp2"),
           "--cluster.join", purl, "--log.level", "warn"], os.path.join(B, "target.log"), env)
    turl = "http://127.0.0.1:%d" % tport
    wait_http(turl + "/v1/health?ready=true")
    # nginx as an anonymous S3 upstream (path style: /BUCKET/KEY = www/nginx-up/KEY)
    api("POST", purl + "/v1/buckets/nginx-up?provider=aws",
        {"upstream": {"endpoint": nurl, "profile": "anonymous"}})
    api("POST", purl + "/v1/buckets/nginx-slow?provider=aws",
        {"upstream": {"endpoint": lurl, "profile": "anonymous", "bucket": "nginx-up"}})
    api("POST", purl + "/v1/buckets/hoard-up?provider=aws",
        {"upstream": {"endpoint": uurl, "profile": "anonymous"}})
    api("PUT", uurl + "/hoard-up")  # S3 CreateBucket on the upstream target
    api("POST", purl + "/v1/buckets/warm-s3rver?provider=aws",
        {"upstream": {"endpoint": surl, "profile": "s3rver"}})

    import boto3  # python3-boto3: fills s3rver
    s3 = boto3.client("s3", endpoint_url=surl, aws_access_key_id="S3RVER",
                      aws_secret_access_key="S3RVER", region_name="us-east-1")
    s3.create_bucket(Bucket="warm-s3rver")
    body = os.urandom(100 * 1024)
    for i in range(WARM_N):
        s3.put_object(Bucket="warm-s3rver", Key="o-%03d" % i, Body=body)

    rows = {}
    load0 = open("/proc/loadavg").read().split()[:3]
    print("bench cache: nginx %s, s3rver %s, hoard proxy %s target %s; %d repetitions"
          % (nurl, surl, purl, turl, REPEATS))

    # 1. cold GET, 10 MiB
    def cold(label, rep, conc, objs, direct_base, hoard_bucket):
        """One repetition: the same names read straight from the upstream and through hoard
        (cold: names never read before), in an order that alternates with rep."""
        for who in (["hoard", "direct"] if rep % 2 else ["direct", "hoard"]):
            base = direct_base if who == "direct" else "%s/v1/objects/%s" % (turl, hoard_bucket)
            r = hoard_bench(["%s/%s" % (base, o) for o in objs], conc,
                            os.path.join(B, "hb.out"), once=True)
            mibs = r["mibs"] if r["gets"] == len(objs) else 0.0
            rows.setdefault((label, conc, who), []).append(mibs)
            print("  %s c=%d %-6s rep %d: %7.1f MiB/s" % (label, conc, who, rep, mibs))

    for rep in range(1, REPEATS + 1):
        for c in (1, 4):
            cold("cold GET 10 MiB", rep, c, names("cold-c%d" % c, rep, COLD_N),
                 nurl + "/nginx-up", "nginx-up")
    # 1b. cold GET from an upstream limited to 50 MiB/s per connection (a remote S3's pace)
    for rep in range(1, REPEATS + 1):
        cold("cold GET 10 MiB, upstream at 50 MiB/s", rep, 1, names("slow", rep, COLD_N // 2),
             lurl + "/nginx-up", "nginx-slow")
    # 1c. cold GET from the hoard upstream (MD5 ETags: every fill is checked)
    for rep in range(1, REPEATS + 1):
        objs = ["md5-r%d-%03d" % (rep, i) for i in range(COLD_N // 2)]
        for i, o in enumerate(objs):
            with open(os.path.join(src, "f%02d" % (i % 16)), "rb") as f:
                req = urllib.request.Request("%s/hoard-up/%s" % (uurl, o), data=f.read(),
                                             method="PUT")
            urllib.request.urlopen(req, timeout=120).read()
        cold("cold GET 10 MiB from a hoard target (MD5 ETags)", rep, 1, objs,
             uurl + "/hoard-up", "hoard-up")

    # 2. warm GET, 100 KiB: cache everything first
    j = api("POST", purl + "/v1/jobs", {"kind": "prefetch", "bucket": "warm-s3rver",
                                         "args": {"template": "o-{000..%03d}" % (WARM_N - 1)}})
    while api("GET", purl + "/v1/jobs/" + j["id"])["state"] == "running":
        time.sleep(0.2)
    curl_all(["%s/v1/objects/warm-s3rver/o-%03d" % (turl, i) for i in range(WARM_N)], 4,
             os.path.join(B, "urls.curl"))  # page cache warm
    for rep in range(1, REPEATS + 1):
        for who in (["hoard", "s3rver"] if rep % 2 else ["s3rver", "hoard"]):
            base = turl + "/v1/objects/warm-s3rver/" if who == "hoard" else surl + "/warm-s3rver/"
            r = hoard_bench([base + "o-%03d" % i for i in range(WARM_N)], 16,
                            os.path.join(B, "hb.out"))
            rps, errs = r["rps"], r["errors"]
            rows.setdefault(("warm GET 100 KiB", 16, who), []).append(rps)
            print("  warm  c=16 %-6s rep %d: %9.0f req/s%s" % (who, rep, rps,
                                                              " errors=%d" % errs if errs else ""))

    # 3. prefetch throughput vs direct reads with the same parallelism (prefetch.workers=8)
    for rep in range(1, REPEATS + 1):
        objs = names("pf", rep, PF_N)
        for who in (["hoard", "direct"] if rep % 2 else ["direct", "hoard"]):
            if who == "direct":
                secs = curl_all(["%s/nginx-up/%s" % (nurl, o) for o in objs], 8,
                                os.path.join(B, "urls.curl"))
            else:
                j = api("POST", purl + "/v1/jobs",
                        {"kind": "prefetch", "bucket": "nginx-up", "args": {"names": objs}})
                while True:
                    d = api("GET", purl + "/v1/jobs/" + j["id"])
                    if d["state"] != "running":
                        break
                    time.sleep(0.05)
                secs = (d["finished_ms"] - d["started_ms"]) / 1000.0
                if d["objects"] != PF_N or d["error_count"]:
                    print("  prefetch: %s" % d, file=sys.stderr)
            mibs = PF_N * 10 / secs
            rows.setdefault(("prefetch 10 MiB", 8, who), []).append(mibs)
            print("  prefetch  %-6s rep %d: %7.1f MiB/s" % (who, rep, mibs))

    out = ["# hoard caching-tier benchmark", "",
           "%s, %s, %d CPUs, %d repetitions, hoard %s; load average %s at start, %s at end "
           "(the VM is shared: compare ratios within this run)"
           % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), os.uname().nodename,
              os.cpu_count(), REPEATS,
              subprocess.run(["git", "-C", TOP, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip() or "?",
              " ".join(load0), " ".join(open("/proc/loadavg").read().split()[:3])), "",
           "| test | conc | hoard | direct upstream | ratio (median) | goal |",
           "|---|---|---|---|---|---|"]
    for (test, c, ref, unit, goal) in (("cold GET 10 MiB", 1, "direct", "MiB/s", ">= 0.9"),
                                       ("cold GET 10 MiB", 4, "direct", "MiB/s", ">= 0.9"),
                                       ("cold GET 10 MiB, upstream at 50 MiB/s", 1, "direct",
                                        "MiB/s", "-"),
                                       ("cold GET 10 MiB from a hoard target (MD5 ETags)", 1,
                                        "direct", "MiB/s", "-"),
                                       ("warm GET 100 KiB", 16, "s3rver", "req/s", ">= 5"),
                                       ("prefetch 10 MiB", 8, "direct", "MiB/s", "-")):
        h, d = rows.get((test, c, "hoard"), []), rows.get((test, c, ref), [])
        ratio = statistics.median(h) / statistics.median(d) if h and d else 0
        out.append("| %s (%s) | %d | %s | %s (%s) | %.2f | %s |"
                   % (test, unit, c, stat(h), stat(d), ref, ratio, goal))
    report("cache", out)


def start_s3rver(exe, base):
    """s3rver on a free port with its data under base/s3rver (restarted if it dies, as under
    load it can); its URL once it answers."""
    sport = port()
    start(["bash", "-c", "while true; do NODE_OPTIONS=--openssl-legacy-provider '%s' -d '%s' "
           "-a 127.0.0.1 -p %d --no-vhost-buckets; sleep 0.2; done"
           % (exe, os.path.join(base, "s3rver"), sport)], os.path.join(base, "s3rver.log"))
    surl = "http://127.0.0.1:%d" % sport
    wait_http(surl + "/")
    return surl


def report(name, lines):
    """Prints a result table and writes it to $HOARD_BUILD/bench/NAME.md."""
    text = "\n".join(lines) + "\n"
    with open(os.path.join(TOP, BUILD, "bench", name + ".md"), "w") as f:
        f.write(text)
    print()
    print(text)


def run(fn):
    """Runs a bench's main, stopping every process it started whatever happens."""
    try:
        fn()
    finally:
        stop_all()


if __name__ == "__main__":
    run(main)
