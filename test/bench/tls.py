#!/usr/bin/python3
"""`make bench` HTTPS row (issue 12): warm 10 MiB GETs from one hoard target over TLS against
nginx serving the same files over TLS, with the same certificate (ECDSA P-256 from
deploy/local/mkcerts.sh) and the same cipher (TLS 1.3 TLS_AES_256_GCM_SHA384, checked on
both before measuring). Load: build/bin/hoard-bench (libcurl on OpenSSL, verifying with the
bench CA), keep-alive, c=1 (server pinned to CPU 0, the client to CPU 1, as the plain rows) and
c=16. Goal: hoard >= 0.9 x nginx MiB/s.

Env: HOARD_BUILD, BENCH_REPEATS (default 3), BENCH_SECS (default 5), BENCH_QUICK=1,
     BENCH_HOARDD (another binary). Writes $HOARD_BUILD/bench/results-tls.md.
"""
import json
import os
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("HOARD_BUILD", "build")
HOARDD = os.environ.get("BENCH_HOARDD") or os.path.join(TOP, BUILD, "bin", "hoardd")
OUT = os.path.join(TOP, BUILD, "bench", "tls")
QUICK = os.environ.get("BENCH_QUICK") == "1"
REPEATS = int(os.environ.get("BENCH_REPEATS") or (1 if QUICK else 3))
SECS = int(os.environ.get("BENCH_SECS") or (2 if QUICK else 5))
NOBJ = 16
SIZE = 10 * 1024 * 1024
CIPHER = "TLS_AES_256_GCM_SHA384"
CONNS = (1, 16)
GOAL = 0.9


def port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_tls(p, ca, what):
    ctx = ssl.create_default_context(cafile=ca)
    for _ in range(200):
        try:
            with socket.create_connection(("127.0.0.1", p), timeout=5) as s:
                with ctx.wrap_socket(s, server_hostname="127.0.0.1") as ts:
                    return ts.cipher(), ts.version()
        except OSError:
            time.sleep(0.1)
    raise SystemExit("bench tls: %s did not come up on port %d" % (what, p))


def pids_of(proc, nginx):
    pids = [proc.pid]
    if nginx:
        out = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True)
        pids += [int(x) for x in out.stdout.split()]
    return pids


def pin(pids, cpus):
    for p in pids:
        subprocess.run(["taskset", "-a", "-p", "-c", cpus, str(p)], capture_output=True)


def hoard_bench(url, prefix, paths, c, ca):
    """MiB/s of 10 MiB GETs by build/bin/hoard-bench (libcurl on OpenSSL, verifying the
    server with the bench CA), the same client for both servers."""
    urls = os.path.join(OUT, "urls.txt")
    with open(paths) as f, open(urls, "w") as o:
        o.write("".join(url + prefix + line.strip() + "\n" for line in f if line.strip()))
    pre = ["taskset", "-c", "1"] if c == 1 and os.cpu_count() >= 2 else []
    cmd = pre + [os.path.join(TOP, BUILD, "bin", "hoard-bench"), "--urls", urls, "--conns",
                 str(c), "--threads", "1" if c == 1 else "2", "--secs", str(SECS), "--warmup",
                 "0", "--timeout", "30", "--cacert", ca, "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    try:
        r = json.loads(p.stdout)
    except ValueError:
        print("bench tls: no result from %s c=%d:\n%s%s" % (url, c, p.stdout, p.stderr),
              file=sys.stderr)
        return None
    if r["errors"]:
        print("bench tls: %d errors from %s c=%d (%s)" % (r["errors"], url, c,
                                                          r.get("first_error")), file=sys.stderr)
    return r["mibs"]


def main():
    for t in ("nginx", "curl", "taskset", "openssl"):
        if not shutil.which(t) and not os.path.exists("/usr/sbin/" + t):
            raise SystemExit("bench tls: %s not found" % t)
    shutil.rmtree(OUT, ignore_errors=True)
    www = os.path.join(OUT, "www", "10m")
    os.makedirs(www)
    os.makedirs(os.path.join(OUT, "nginx", "tmp"))
    certs = os.path.join(OUT, "certs")
    subprocess.run(["bash", os.path.join(TOP, "deploy", "local", "mkcerts.sh"), certs, "bench"],
                   check=True, stdout=subprocess.DEVNULL)
    ca, crt, key = (os.path.join(certs, n) for n in ("ca.pem", "bench.pem", "bench.key"))
    names = ["o-%03d" % i for i in range(NOBJ)]
    block = os.urandom(1 << 20)
    for n in names:
        with open(os.path.join(www, n), "wb") as f:
            for i in range(SIZE >> 20):
                f.write(bytes([i]) + block[1:])
    paths = os.path.join(OUT, "paths.txt")
    with open(paths, "w") as f:
        f.write("".join("%s\n" % n for n in names))
    procs = []
    try:
        hp, np_ = port(), port()
        hoard = subprocess.Popen(
            [HOARDD, "--role", "target", "--listen", "127.0.0.1:%d" % hp, "--data",
             os.path.join(OUT, "hoard"), "--log.level", "warn", "--tls.cert", crt, "--tls.key",
             key, "--tls.ca", ca], stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(OUT, "hoardd.log"), "ab"))
        procs.append(hoard)
        user = "user root;" if os.getuid() == 0 else ""
        conf = os.path.join(OUT, "nginx", "nginx.conf")
        with open(conf, "w") as f:
            f.write("""%s
worker_processes 2; daemon off; pid %s/nginx.pid; error_log %s/error.log warn;
events { worker_connections 4096; }
http {
  access_log off; sendfile on; tcp_nopush on; tcp_nodelay on; keepalive_timeout 65;
  keepalive_requests 1000000; default_type application/octet-stream;
  client_body_temp_path %s/tmp;
  server {
    listen 127.0.0.1:%d ssl;
    ssl_certificate %s; ssl_certificate_key %s;
    ssl_protocols TLSv1.3; ssl_conf_command Ciphersuites %s;
    root %s;
  }
}
""" % (user, os.path.dirname(conf), os.path.dirname(conf), os.path.dirname(conf), np_, crt, key,
       CIPHER, os.path.join(OUT, "www")))
        nginx = subprocess.Popen(["nginx", "-p", os.path.dirname(conf), "-c", conf, "-e",
                                  os.path.join(os.path.dirname(conf), "error.log")],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(nginx)
        hc, nc = wait_tls(hp, ca, "hoardd"), wait_tls(np_, ca, "nginx")
        hurl, nurl = "https://127.0.0.1:%d" % hp, "https://127.0.0.1:%d" % np_
        subprocess.run(["curl", "-sf", "--cacert", ca, "-X", "POST",
                        hurl + "/v1/buckets/bench"], check=True, stdout=subprocess.DEVNULL)
        for n in names:
            subprocess.run(["curl", "-sf", "--cacert", ca, "-T", os.path.join(www, n),
                            "%s/v1/objects/bench/10m/%s" % (hurl, n)], check=True,
                           stdout=subprocess.DEVNULL)
        print("bench tls: hoardd %s %s, nginx %s %s (same certificate); %d x %ds" %
              (hc[1], hc[0][0], nc[1], nc[0][0], REPEATS, SECS))
        if hc[0][0] != nc[0][0] or hc[0][0] != CIPHER:
            print("bench tls: the ciphers differ (hoardd %s, nginx %s)" % (hc[0][0], nc[0][0]),
                  file=sys.stderr)
        res = {}
        for rep in range(REPEATS):
            for c in CONNS:
                order = [("hoard", hoard, hurl, "/v1/objects/bench/10m/"),
                         ("nginx", nginx, nurl, "/10m/")]
                if rep % 2:
                    order.reverse()
                for name, proc, url, prefix in order:
                    pids = pids_of(proc, name == "nginx")
                    if c == 1:
                        pin(pids, "0")
                    mibs = hoard_bench(url, prefix, paths, c, ca)
                    if c == 1:
                        pin(pids, "0-%d" % (os.cpu_count() - 1))
                    if mibs is not None:
                        res.setdefault((c, name), []).append(mibs)
                        print("  GET 10m c=%-2d %-5s rep %d: %8.1f MiB/s" % (c, name, rep + 1,
                                                                            mibs))
        lines = ["# hoard HTTPS benchmark (10 MiB GET, TLS 1.3 %s, same certificate)" % CIPHER,
                 "", "%s, %d CPUs, %d x %ds, load average %s" %
                 (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), os.cpu_count(), REPEATS,
                  SECS, open("/proc/loadavg").read().split()[:3]), "",
                 "| conns | hoard MiB/s (median) | nginx MiB/s (median) | ratio | goal |",
                 "|---|---|---|---|---|"]
        for c in CONNS:
            h, n = res.get((c, "hoard")), res.get((c, "nginx"))
            if not h or not n:
                continue
            hm, nm = statistics.median(h), statistics.median(n)
            r = hm / nm if nm else 0
            lines.append("| %d | %.1f | %.1f | %.2f | >= %.1f %s |" %
                         (c, hm, nm, r, GOAL, "met" if r >= GOAL else "MISSED"))
        text = "\n".join(lines) + "\n"
        with open(os.path.join(TOP, BUILD, "bench", "results-tls.md"), "w") as f:
            f.write(text)
        print()
        print(text)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


if __name__ == "__main__":
    main()
