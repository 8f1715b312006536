#!/usr/bin/python3
"""The seeds' experiment on this machine (issue 6): read a dataset of small samples through
hoard as individual objects vs as tar shards, same client (curl, parallel transfers,
following the proxy's 307), same concurrency; samples/s and MiB/s. Also the shard job's
throughput (MiB of tar written per second, fsync on).

  shard_bench.py --hoardd BIN --dir DIR [--repeats N] [--conns 4,16] [--out FILE.md]

A cluster of one proxy and two targets (one mountpath each, store.fsync true, no auth) runs
from DIR on free loopback ports; datasets stay in DIR between runs (re-uploading after mass
deletes is slow on this VM). Sets: 32768 samples of 10 KiB and 4096 of 100 KiB, sharded into
8 MiB shards. Debian /usr/bin/python3, standard library (+ python3-xxhash for placement).
Never fails on a missed goal: benchmarks are not tests.
"""
import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import xxhash

SEED = 1103515245
M64 = (1 << 64) - 1
SETS = [("10k", 10 * 1024, 32768), ("100k", 100 * 1024, 4096)]
SHARD_SIZE = 8 << 20
GOAL = 5.0  # shards at least 5x faster (samples/s) for 10 KiB samples
BATCH_PER = 100  # samples per batch GET (issue 14: a loader's random mini-batch)
BATCH_GOAL = 0.8  # batch GET samples/s >= 0.8 of whole shards


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def weight(nd, od):
    """DESIGN.md's HRW weight (AIStore's mix)."""
    z = ((nd ^ od) + 0x9e3779b97f4a7c15) & M64
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    z = ((z ^ (z >> 31)) + 0x9e3779b97f4a7c15) & M64
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    z = ((z ^ (z >> 31)) * 5) & M64
    return (rotl(z, 7) * 9) & M64


def owner(uname, ids):
    d = xxhash.xxh64_intdigest(uname.encode(), SEED)
    return max(sorted(ids), key=lambda n: weight(xxhash.xxh64_intdigest(n.encode(), SEED), d))


class Cluster:
    def __init__(self, hoardd, top):
        self.hoardd, self.top, self.procs = hoardd, top, []

    def _stale(self):
        """Stops a cluster an interrupted earlier run left on this directory (its pids)."""
        try:
            with open(os.path.join(self.top, "pids")) as f:
                pids = [int(x) for x in f.read().split()]
        except (OSError, ValueError):
            return
        for pid in pids:
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    if self.top.encode() not in f.read():
                        continue
                os.kill(pid, 15)
            except OSError:
                pass
        time.sleep(1)

    def _ports(self):
        """The ports of the previous run when free (a restarted target finds its primary
        where it left it), else new ones."""
        path = os.path.join(self.top, "ports.json")
        try:
            with open(path) as f:
                ports = json.load(f)
            for p in ports:
                s = socket.socket()
                s.bind(("127.0.0.1", p))
                s.close()
        except (OSError, ValueError):
            ports = [free_port() for _ in range(3)]
        with open(path, "w") as f:
            json.dump(ports, f)
        return ports

    def start(self):
        self._stale()
        ports = self._ports()
        try:
            self._start(ports)
        finally:
            with open(os.path.join(self.top, "pids"), "w") as f:
                f.write(" ".join(str(p.pid) for p in self.procs))

    def _start(self, ports):
        self.pport = ports[0]
        self.proxy = "http://127.0.0.1:%d" % self.pport
        self._spawn("p1", ["--role", "proxy", "--listen", "127.0.0.1:%d" % self.pport])
        self.targets = []
        for name, port in (("t1", ports[1]), ("t2", ports[2])):
            mp = os.path.join(self.top, name, "mp1")
            self._spawn(name, ["--role", "target", "--listen", "127.0.0.1:%d" % port,
                               "--mountpaths", mp, "--cluster.join", self.proxy,
                               "--store.fsync", "true"])
            self.targets.append(("127.0.0.1", port, mp))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                smap = json.load(urllib.request.urlopen(self.proxy + "/v1/cluster", timeout=2))
                ports = {int(n["public_net"]["direct_url"].rsplit(":", 1)[1]): tid
                         for tid, n in smap.get("tmap", {}).items()}
                if sorted(ports) == sorted(t[1] for t in self.targets):  # this run's URLs
                    self.ids = {ports[t[1]]: t for t in self.targets}
                    return
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise SystemExit("shard bench: the cluster did not come up (logs in %s)" % self.top)

    def _spawn(self, name, args):
        d = os.path.join(self.top, name)
        os.makedirs(d, exist_ok=True)
        log = open(os.path.join(d, "hoardd.log"), "ab")
        self.procs.append(subprocess.Popen(
            [self.hoardd, "--data", d, "--log.level", "warn", "--node.id", name] + args,
            stdout=log, stderr=log, stdin=subprocess.DEVNULL))

    def stop(self):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()


def call(url, method="GET", body=None):
    req = urllib.request.Request(url, data=body, method=method)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def listing(proxy, bucket, prefix=""):
    out, token = {}, ""
    while True:
        q = "limit=10000&prefix=" + prefix + ("&token=" + urllib.parse.quote(token)
                                             if token else "")
        st, body = call("%s/v1/buckets/%s?%s" % (proxy, bucket, q))
        if st == 404:
            return out
        d = json.loads(body)
        for e in d["entries"]:
            out[e["name"]] = e["size"]
        token = d.get("continuation_token")
        if not token:
            return out


def load(cl, bucket, size, count):
    """Uploads the missing samples straight to their owners (keep-alive, 4 threads)."""
    call("%s/v1/buckets/%s" % (cl.proxy, bucket), "POST")
    have = listing(cl.proxy, bucket, "d/")
    names = ["d/%06d.bin" % i for i in range(count)]
    todo = [n for n in names if have.get(n) != size]
    body = os.urandom(size)
    work = {}
    for n in todo:
        work.setdefault(owner("ais/@#/%s/%s" % (bucket, n), list(cl.ids)), []).append(n)
    errors = []

    def run(items):
        conns = {}
        for tid, n in items:
            host, port, _ = cl.ids[tid]
            c = conns.get(port) or conns.setdefault(port, http.client.HTTPConnection(host, port))
            c.request("PUT", "/v1/objects/%s/%s" % (bucket, n), body=body)
            r = c.getresponse()
            r.read()
            if r.status != 200:
                errors.append((n, r.status))
    items = [(t, n) for t, ns in work.items() for n in ns]
    ths = [threading.Thread(target=run, args=(items[i::4],)) for i in range(4)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    if errors:
        raise SystemExit("shard bench: uploads failed: %r" % errors[:5])
    return names, len(todo)


def shard(cl, bucket, seed):
    """Shards bucket into BUCKET-sh (a new seed each run, so every shard is written)."""
    out = bucket + "-sh"
    call("%s/v1/buckets/%s" % (cl.proxy, out), "POST")
    args = {"output_bucket": out, "template": "train-{0000..}.tar", "shard_size": SHARD_SIZE,
            "seed": seed, "prefix": "d/"}
    t0 = time.monotonic()
    st, body = call(cl.proxy + "/v1/jobs", "POST", json.dumps(
        {"kind": "shard", "bucket": bucket, "args": args}).encode())
    if st != 201:
        raise SystemExit("shard bench: shard job refused: %d %s" % (st, body[:300]))
    jid = json.loads(body)["id"]
    while True:
        j = json.loads(call(cl.proxy + "/v1/jobs/" + jid)[1])
        if j["state"] != "running":
            break
        time.sleep(0.1)
    secs = time.monotonic() - t0
    if j["state"] != "done":
        raise SystemExit("shard bench: shard job %s: %s" % (j["state"], j.get("errors")))
    shards = sorted(n for n in listing(cl.proxy, out) if n.endswith(".tar"))
    return out, shards, secs, j["stats"]["tar_bytes_written"], j["objects"]


def sizes(proxy, bucket, names):
    have = listing(proxy, bucket)
    return sum(have[n] for n in names)


def warm(cl):
    """Reads every content file once (the VM drops idle page cache after ~30 s)."""
    for _, _, mp in cl.targets:
        for root, _dirs, files in os.walk(os.path.join(mp, "objs")):
            for f in files:
                with open(os.path.join(root, f), "rb") as fh:
                    while fh.read(1 << 20):
                        pass


def run_curl(cfg, conns, what):
    """One curl over the transfers in config file cfg: parallel, keep-alive, following
    307s. Seconds and the bytes curl reports."""
    t0 = time.monotonic()
    p = subprocess.run(["curl", "-s", "-S", "-f", "-L", "-Z", "--parallel-max", str(conns),
                        "--parallel-immediate", "-w", "%{size_download}\\n", "-K", cfg],
                       capture_output=True)
    secs = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit("shard bench: %s curl failed (%d): %s" % (what, p.returncode,
                                                                p.stderr.decode()[-500:]))
    return secs, sum(int(x) for x in p.stdout.split())


def curl_read(urls, conns, cfg):
    """Fetches every URL with one curl. Seconds, bytes."""
    with open(cfg, "w") as f:
        for u in urls:
            f.write('url = "%s"\noutput = "/dev/null"\n' % u)
    return run_curl(cfg, conns, "read")


def curl_batch(proxy, bucket, names, per, conns, cfg, seed):
    """Reads every sample once as batch GETs of `per` random samples (POST /v1/batch, one
    curl, parallel, keep-alive, following 307s like the other modes). Seconds, bytes."""
    import random
    order = list(names)
    random.Random(seed).shuffle(order)
    bdir = cfg + ".d"
    os.makedirs(bdir, exist_ok=True)
    with open(cfg, "w") as f:
        for k, i in enumerate(range(0, len(order), per)):
            body = os.path.join(bdir, "b-%05d.json" % k)
            with open(body, "w") as fb:
                json.dump({"bucket": bucket, "entries": [{"name": n} for n in order[i:i + per]]},
                          fb)
            if k:
                f.write("next\n")
            # per transfer: "next" resets every option but the global ones
            f.write('url = "%s/v1/batch"\ndata-binary = "@%s"\noutput = "/dev/null"\n'
                     'header = "Content-Type: application/json"\nlocation\nfail\nsilent\n'
                     'show-error\nwrite-out = "%%{size_download}\\n"\n' % (proxy, body))
    return run_curl(cfg, conns, "batch")


def cpu_secs(procs):
    """utime + stime of these processes so far, seconds (/proc/PID/stat)."""
    tot = 0
    for p in procs:
        with open("/proc/%d/stat" % p.pid) as f:
            st = f.read().rsplit(")", 1)[1].split()
        tot += int(st[11]) + int(st[12])
    return tot / os.sysconf("SC_CLK_TCK")


def fmt(vals, nd=0):
    med = statistics.median(vals)
    f = "%%.%df" % nd
    return ("%s (%s-%s)" % (f % med, f % min(vals), f % max(vals))) if len(vals) > 1 \
        else f % med


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hoardd", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--conns", default="4,16")
    ap.add_argument("--out")
    ap.add_argument("--no-batch", action="store_true", help="skip the batch GET rows")
    ap.add_argument("--only-10k", action="store_true", help="the 10 KiB set only")
    a = ap.parse_args()
    conns = [int(c) for c in a.conns.split(",")]
    os.makedirs(a.dir, exist_ok=True)
    cl = Cluster(a.hoardd, os.path.abspath(a.dir))
    lines, notes = [], []
    try:
        cl.start()
        load0 = open("/proc/loadavg").read().split()[:3]
        rows, brows = [], []
        for sname, size, count in SETS:
            if a.only_10k and sname != "10k":
                continue
            t0 = time.monotonic()
            names, up = load(cl, "bench" + sname, size, count)
            print("shard bench: %s: %d samples (%d uploaded in %.1fs)" % (
                sname, count, up, time.monotonic() - t0), file=sys.stderr)
            out, shards, ssecs, tar_bytes, nobj = shard(cl, "bench" + sname, int(time.time()))
            sh_rate = tar_bytes / ssecs / 1048576
            notes.append("%s: shard job wrote %d shards (%.1f MiB) from %d objects in %.2f s: "
                         "**%.1f MiB/s**, %.0f objects/s" % (
                             sname, len(shards), tar_bytes / 1048576, nobj, ssecs, sh_rate,
                             nobj / ssecs))
            print("shard bench: " + notes[-1].replace("**", ""), file=sys.stderr)
            obj_urls = ["%s/v1/objects/bench%s/%s" % (cl.proxy, sname, n) for n in names]
            sh_urls = ["%s/v1/objects/%s/%s" % (cl.proxy, out, n) for n in shards]
            sh_bytes = sizes(cl.proxy, out, shards)
            cfg = os.path.join(a.dir, "urls.curl")
            for c in conns:
                res = {"objects": [], "shards": [], "batch": []}
                tcpu = {"objects": [], "shards": [], "batch": []}  # the targets' CPU per run
                for rep in range(a.repeats):
                    order = ["objects", "shards"] if rep % 2 == 0 else ["shards", "objects"]
                    if sname == "10k" and not a.no_batch:  # issue 14: batch GET vs shards
                        order.insert(1, "batch")
                    for mode in order:
                        warm(cl)
                        c0 = cpu_secs(cl.procs[1:])
                        if mode == "batch":
                            secs, got = curl_batch(cl.proxy, "bench" + sname, names,
                                                   BATCH_PER, c, cfg, rep)
                            if got < count * size:  # tar headers on top of every sample
                                raise SystemExit("shard bench: batch: %d bytes read, expected"
                                                 " > %d" % (got, count * size))
                            res[mode].append(secs)
                            tcpu[mode].append(cpu_secs(cl.procs[1:]) - c0)
                            print("shard bench: %s c=%d batch rep %d: %.0f samples/s, targets' "
                                  "CPU %.2f s" % (sname, c, rep + 1, count / secs,
                                                  tcpu[mode][-1]), file=sys.stderr)
                            continue
                        secs, got = curl_read(obj_urls if mode == "objects" else sh_urls, c,
                                              cfg)
                        want = count * size if mode == "objects" else sh_bytes
                        if got != want:  # every byte really came (307s followed)
                            raise SystemExit("shard bench: %s %s: %d bytes read, expected %d"
                                             % (sname, mode, got, want))
                        res[mode].append(secs)
                        tcpu[mode].append(cpu_secs(cl.procs[1:]) - c0)
                        print("shard bench: %s c=%d %s rep %d: %.0f samples/s, targets' CPU "
                              "%.2f s" % (sname, c, mode, rep + 1, count / secs,
                                          tcpu[mode][-1]), file=sys.stderr)
                sps = {m: [count / s for s in v] for m, v in res.items()}
                mibs = {m: [count * size / s / 1048576 for s in v] for m, v in res.items()}
                paired = [o / s for o, s in zip(res["objects"], res["shards"])]
                ratio = statistics.median(sps["shards"]) / statistics.median(sps["objects"])
                goal = ">= %.0fx" % GOAL if sname == "10k" else "-"
                verdict = ("PASS" if ratio >= GOAL else "MISS") if sname == "10k" else "-"
                if res["batch"]:
                    bsps = [count / x for x in res["batch"]]
                    bratio = statistics.median(bsps) / statistics.median(sps["shards"])
                    bpaired = [s_ / b_ for s_, b_ in zip(res["shards"], res["batch"])]
                    brows.append("| %d | %d | %s | %s | **%.2f** (%.2f-%.2f) | >= %.1f | %s |" % (
                        BATCH_PER, c, fmt(bsps), fmt(sps["shards"]), bratio, min(bpaired),
                        max(bpaired), BATCH_GOAL, "PASS" if bratio >= BATCH_GOAL else "MISS"))
                    notes.append("%s c=%d: the targets' CPU (utime+stime) per run of the %d "
                                 "samples: batch %s s (**%.0f us** per sample), shards %s s, "
                                 "objects %s s" % (
                                     sname, c, count, fmt(tcpu["batch"], 2),
                                     statistics.median(tcpu["batch"]) / count * 1e6,
                                     fmt(tcpu["shards"], 2), fmt(tcpu["objects"], 2)))
                rows.append("| %s | %d | %s | %s | %s | %s | **%.1fx** (%.1f-%.1f) | %s | %s |" % (
                    "10 KiB" if sname == "10k" else "100 KiB", c, fmt(sps["objects"]),
                    fmt(mibs["objects"], 1), fmt(sps["shards"]), fmt(mibs["shards"], 1), ratio,
                    min(paired), max(paired), goal, verdict))
        load1 = open("/proc/loadavg").read().split()[:3]
        lines.append("Shards vs individual objects through hoard (1 proxy, 2 targets, curl -Z "
                     "-L, %d repeats, medians (min-max); load average %s at start, %s at end)"
                     % (a.repeats, " ".join(load0), " ".join(load1)))
        lines.append("")
        lines.append("| Samples | Conns | objects samples/s | objects MiB/s | shards samples/s "
                     "| shards MiB/s | shards/objects (paired min-max) | Goal | Result |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---|---|")
        lines += rows
        if brows:
            lines.append("")
            lines.append("Batch GET (POST /v1/batch to the proxy, random samples, same curl -Z -L) "
                         "vs whole shards, 10 KiB samples (issue 14):")
            lines.append("")
            lines.append("| Samples per batch | Conns | batch samples/s | shards samples/s "
                         "| batch/shards (paired min-max) | Goal | Result |")
            lines.append("|---:|---:|---:|---:|---:|---|---|")
            lines += brows
        lines.append("")
        lines += ["- " + n for n in notes]
    finally:
        cl.stop()
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
