#!/usr/bin/python3
"""Cluster data-path benchmark (make bench, BENCH_ONLY=cluster): GETs of 10 KiB and 10 MiB
objects from 3 targets, three ways side by side in one run:
  direct   - the client asks the owning target itself (the URL a 307 would lead to)
  redirect - the client asks the proxy and follows its 307 (keep-alive to proxy and targets)
  relay    - the client asks the proxy through the S3 API; the proxy streams the object
and, as references for what the extra hop costs on this machine whatever the software, the same
two paths through nginx (when installed) in front of the same targets:
  nginx-307   - nginx answers `return 307` to the owning target's URL (client follows it)
  nginx-relay - nginx proxy_pass to the owning target (keep-alive upstreams, 1 MiB of buffers
                per request, no temp files)
Same client (build/bin/hoard-bench), same connections, same random keys; repeated, modes
rotated within each repeat; medians and per-repeat ratios. Standard library only."""
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("HOARD_BUILD", "build")
BIN = os.path.join(TOP, BUILD, "bin")
OUT = os.path.join(TOP, BUILD, "bench", "cluster")
QUICK = os.environ.get("BENCH_QUICK") == "1"
REPEATS = int(os.environ.get("BENCH_REPEATS", "1" if QUICK else "5"))
SECS = float(os.environ.get("BENCH_SECS", "2" if QUICK else "4"))
CONNS = 16
SETS = {"10k": (10 * 1024, 400), "10m": (10 * 1024 * 1024, 12)}
# BENCH_SETS=10k (or 10m): only those object sets (comma-separated)
if os.environ.get("BENCH_SETS"):
    SETS = {k: v for k, v in SETS.items() if k in os.environ["BENCH_SETS"].split(",")}
# BENCH_SECRET=1: the cluster runs with cluster.secret, as in production (node signatures on
# the relay, the 307's signed capability checked by the target). nginx cannot sign, so its rows
# are left out, and "direct" keeps the 307's capability (re-resolved each repeat: it expires).
SECRET = os.environ.get("BENCH_SECRET", "") not in ("", "0")
GOALS = {("10k", "redirect"): ("rps", 0.75), ("10m", "redirect"): ("mibs", 0.95),
         ("10k", "relay"): ("rps", 0.70), ("10m", "relay"): ("mibs", 0.70)}
# nginx doing the same hop: ratios reported, no goal
REFS = {(n, "nginx-" + m): (k, 0) for n, k in (("10k", "rps"), ("10m", "mibs"))
        for m in ("307", "relay")}


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k):
        return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        try:
            with urllib.request.urlopen(url + "/v1/health?ready=true", timeout=1) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    raise RuntimeError("%s not ready" % url)


def start(role, name, port, join=None):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    args = [os.path.join(BIN, "hoardd"), "--role", role, "--listen", "127.0.0.1:%d" % port,
            "--data", d, "--log.level", "warn", "--log.error", os.path.join(d, "error.log")]
    if role == "target":
        args += ["--mountpaths", "%s/mp1,%s/mp2" % (d, d)]
    if join:
        args += ["--cluster.join", join]
    if SECRET:
        args += ["--cluster.secret", "bench-cluster-secret"]
    args += os.environ.get("BENCH_HOARD_ARGS", "").split()
    return subprocess.Popen(args, stdin=subprocess.DEVNULL)


def put(url, body):
    """PUT through the proxy: its 307 names the owner, which gets the body."""
    op = urllib.request.build_opener(NoRedirect)
    try:
        op.open(urllib.request.Request(url, data=b"", method="PUT"), timeout=10)
        raise RuntimeError("no redirect for PUT " + url)
    except urllib.error.HTTPError as e:
        if e.code != 307:
            raise
        loc = e.headers["Location"]
    with urllib.request.urlopen(urllib.request.Request(loc, data=body, method="PUT"),
                                timeout=120) as r:
        assert r.status == 200, r.status


def location(url):
    op = urllib.request.build_opener(NoRedirect)
    try:
        # GET: with a secret the capability is for the method asked (the rows GET)
        op.open(urllib.request.Request(url, method="GET" if SECRET else "HEAD"), timeout=10)
    except urllib.error.HTTPError as e:
        if e.code == 307:
            loc = e.headers["Location"]
            return loc if SECRET else loc.split("?", 1)[0]
        raise
    raise RuntimeError("no redirect for " + url)


def proc_usage(pid):
    """(CPU seconds, context switches) of a process, all its threads."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    cs = 0
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, t)) as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt", "nonvoluntary_ctxt")):
                        cs += int(line.split()[1])
        except OSError:
            pass
    return cpu, cs


def usage_of(pids):
    """Summed (CPU seconds, context switches) of processes: the proxy, or nginx's workers."""
    cpu = cs = 0
    for pid in pids:
        try:
            c, s = proc_usage(pid)
        except OSError:
            continue
        cpu += c
        cs += s
    return cpu, cs


def nginx_workers(master):
    """nginx's worker processes (the master only forks them)."""
    try:
        with open("/proc/%d/task/%d/children" % (master, master)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def bench(urls_file, follow, proxy_pids):
    """One hoard-bench run; adds the proxy's (or nginx's workers') CPU microseconds and context
    switches per request, sampled over the measured window (after the 1 s warm-up)."""
    cmd = [os.path.join(BIN, "hoard-bench"), "--urls", urls_file, "--conns", str(CONNS),
           "--threads", "2", "--secs", str(SECS), "--warmup", "1", "--json"]
    if follow:
        cmd.append("--follow")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    u0 = usage_of(proxy_pids)
    time.sleep(SECS)
    u1 = usage_of(proxy_pids)
    out, err = p.communicate(timeout=SECS + 120)
    if p.returncode != 0:
        raise RuntimeError("hoard-bench failed (rc %d): %s %s" % (p.returncode, err, out))
    r = json.loads(out)
    n = max(r["requests"], 1)
    r["proxy_us"] = (u1[0] - u0[0]) * 1e6 / n
    r["proxy_cs"] = (u1[1] - u0[1]) / n
    return r


def start_nginx(targets):
    """nginx with /redir/tN/... (307 to target N) and /relay/tN/... (proxy_pass to target N).
    targets: [(index, port)]. Returns (Popen, base URL) or (None, None) without nginx."""
    exe = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx")
                                    else None)
    if not exe:
        return None, None
    d = os.path.join(OUT, "nginx")
    os.makedirs(os.path.join(d, "tmp"), exist_ok=True)
    port = free_port()
    ups = "".join("    upstream t%d { server 127.0.0.1:%d; keepalive 64; }\n" % (i, p)
                  for i, p in targets)
    locs = "".join(
        "        location ~ ^/redir/t%d/(.*)$ { return 307 http://127.0.0.1:%d/$1; }\n"
        "        location /relay/t%d/ { proxy_pass http://t%d/; }\n" % (i, p, i, i)
        for i, p in targets)
    conf = """%s
worker_processes 2;
daemon off;
pid %s/nginx.pid;
error_log %s/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_timeout 65;
    keepalive_requests 1000000;
    client_body_temp_path %s/tmp;
    proxy_temp_path %s/tmp;
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_buffers 16 64k;
    proxy_max_temp_file_size 0;
%s    server {
        listen 127.0.0.1:%d;
%s    }
}
""" % ("user root;" if os.getuid() == 0 else "", d, d, d, d, ups, port, locs)
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write(conf)
    p = subprocess.Popen([exe, "-p", d, "-c", os.path.join(d, "nginx.conf"), "-e",
                          os.path.join(d, "error.log")], stdin=subprocess.DEVNULL)
    base = "http://127.0.0.1:%d" % port
    end = time.time() + 10
    while time.time() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return p, base
        except OSError:
            time.sleep(0.1)
    p.kill()
    raise RuntimeError("nginx did not start: see %s/error.log" % d)


def rss_mib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def memory_report(proxy, targets, nginx):
    """Resting RSS after the run (issue 14: the proxy under 64 MiB once the load stops):
    right after the last measurement, then once the proxy has trimmed (polled up to 30 s)."""
    at_end = rss_mib(proxy)
    end = time.time() + 30
    while time.time() < end and rss_mib(proxy) >= 64:
        time.sleep(1)
    time.sleep(4)  # one more trim window
    text = ("Resident memory (VmRSS) after the run: proxy %.1f MiB right after the last "
            "measurement, %.1f MiB at rest (goal < 64); targets at rest %s MiB; nginx (master "
            "and workers) %.1f MiB" % (at_end, rss_mib(proxy),
                                       ", ".join("%.1f" % rss_mib(t) for t in targets),
                                       sum(rss_mib(n) for n in nginx)))
    print("\n" + text)
    with open(os.path.join(OUT, "results.md"), "a") as f:
        f.write("\n" + text + "\n")


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    pport = free_port()
    proxy = "http://127.0.0.1:%d" % pport
    procs = [start("proxy", "p1", pport)]
    tports = []
    try:
        wait_ready(proxy)
        for i in range(3):
            port = free_port()
            procs.append(start("target", "t%d" % (i + 1), port, proxy))
            tports.append(port)
            wait_ready("http://127.0.0.1:%d" % port)
        time.sleep(1.5)  # every target in the smap everywhere
        ngx, nbase = (None, None) if SECRET else \
            start_nginx([(i + 1, p) for i, p in enumerate(tports)])
        if ngx:
            procs.append(ngx)
        modes_all = ["direct", "redirect", "relay"] + (["nginx-307", "nginx-relay"]
                                                       if ngx else [])
        urllib.request.urlopen(urllib.request.Request(proxy + "/v1/buckets/bench",
                                                      method="POST"), timeout=10)
        lists = {}
        for name, (size, count) in SETS.items():
            body = os.urandom(size)
            modes = {m: [] for m in modes_all}
            for i in range(count):
                key = "%s/o-%04d" % (name, i)
                put("%s/v1/objects/bench/%s" % (proxy, key), body)
                native = "%s/v1/objects/bench/%s" % (proxy, key)
                modes["redirect"].append(native)
                direct = location(native)
                modes["direct"].append(direct)
                modes["relay"].append("%s/bench/%s" % (proxy, key))
                if ngx:
                    t = tports.index(int(direct.split("/")[2].rsplit(":", 1)[1])) + 1
                    rest = direct.split("/", 3)[3]
                    modes["nginx-307"].append("%s/redir/t%d/%s" % (nbase, t, rest))
                    modes["nginx-relay"].append("%s/relay/t%d/%s" % (nbase, t, rest))
            for mode, urls in modes.items():
                path = os.path.join(OUT, "%s-%s.urls" % (name, mode))
                with open(path, "w") as f:
                    f.write("\n".join(urls) + "\n")
                lists[(name, mode)] = path
        rows = {}
        order = modes_all
        for rep in range(REPEATS):
            if SECRET and rep:  # fresh capabilities for the direct rows
                for name in SETS:
                    with open(lists[(name, "direct")], "w") as f:
                        f.write("\n".join(location(u) for u in
                                          open(lists[(name, "redirect")]).read().split()) + "\n")
            for name in SETS:
                bench(lists[(name, "direct")], False, [procs[0].pid])  # warm cache, connections
                for k in range(len(order)):
                    mode = order[(rep + k) % len(order)]
                    # the "proxy" whose CPU is sampled: hoard's proxy, or nginx's workers
                    r = bench(lists[(name, mode)], mode in ("redirect", "nginx-307"),
                              nginx_workers(ngx.pid) if mode.startswith("nginx")
                              else [procs[0].pid])
                    rows.setdefault((name, mode), []).append(r)
                    print("bench-cluster: %s %-8s rep %d: %8.0f req/s %8.1f MiB/s errors %d "
                          "proxy %.0f us/req %.2f cs/req" %
                          (name, mode, rep + 1, r["rps"], r["mibs"], r["errors"], r["proxy_us"],
                           r["proxy_cs"]), flush=True)
        report(rows)
        memory_report(procs[0].pid, [p.pid for p in procs[1:4]],
                      nginx_workers(ngx.pid) + [ngx.pid] if ngx else [])
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def med(rows, key):
    vals = [r[key] for r in rows]
    return statistics.median(vals), min(vals), max(vals)


def report(rows):
    lines = ["| Objects | Path | req/s | MiB/s | p50 ms | proxy CPU us/req | proxy cs/req "
             "| ratio to direct (paired min-max) | Goal | Result |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|---|"]
    for name in SETS:
        direct = rows[(name, "direct")]
        for mode in ("direct", "redirect", "relay", "nginx-307", "nginx-relay"):
            if (name, mode) not in rows:
                continue
            rs = rows[(name, mode)]
            rps, mib, p50 = med(rs, "rps"), med(rs, "mibs"), med(rs, "p50_ms")
            pus, pcs = med(rs, "proxy_us"), med(rs, "proxy_cs")
            goal = GOALS.get((name, mode))
            ref = REFS.get((name, mode))
            ratio = goal_txt = verdict = ""
            if goal or ref:
                key, want = goal or ref
                paired = [a[key] / b[key] for a, b in zip(rs, direct) if b[key]]
                dm = med(direct, key)[0]
                r = (med(rs, key)[0] / dm) if dm else 0
                ratio = "**%.3f** (%.2f-%.2f)" % (r, min(paired), max(paired))
                goal_txt = ">= %d%% of direct %s" % (want * 100, "req/s" if key == "rps"
                                                     else "MiB/s")
                verdict = "PASS" if r >= want else "MISS"
                if ref:
                    goal_txt, verdict = "reference", ""
            lines.append("| %s | %s | %.0f (%.0f-%.0f) | %.1f (%.1f-%.1f) | %.2f | %.0f | %.2f "
                         "| %s | %s | %s |"
                         % (name, mode, rps[0], rps[1], rps[2], mib[0], mib[1], mib[2], p50[0],
                            pus[0], pcs[0], ratio, goal_txt, verdict))
    text = "\n".join(lines)
    with open(os.path.join(OUT, "results.md"), "w") as f:
        f.write(text + "\n")
    print("\nCluster GET paths, %d connections, %d x %.0f s, medians (min-max):\n" %
          (CONNS, REPEATS, SECS))
    print(text)


if __name__ == "__main__":
    sys.exit(main())
