#!/usr/bin/python3
"""`make bench BENCH_ONLY=checkpoint`: a checkpoint written through hoard (issue 18).

One file (BENCH_CKPT_MIB, default 1024 MiB) is uploaded with boto3 `upload_file` (multipart,
8 MiB parts, 10 threads: its defaults) to
  - a native bucket (through the proxy's S3 relay),
  - the upstream directly (s3rver),
  - an S3-backed bucket with write_policy through (the default),
  - an S3-backed bucket with write_policy back: the time until the upload is acknowledged,
    then the time until a flush job finds it upstream.
The upstream is s3rver behind a relay of this script that holds it to BENCH_UP_MIBS (default
100 MiB/s, each direction, shared by all connections: a remote store's pace). 1 proxy and 2
targets on loopback, no auth. Repetitions alternate the order; medians of BENCH_REPEATS
(default 3). Prints a Markdown table and writes $BUILD/bench/checkpoint.md. Never fails on a
missed goal. Every process it starts is stopped by pid at the end.

  checkpoint.py --relay LISTEN_PORT TO_PORT BYTES_PER_S   (the throttling relay, internal)
"""
import asyncio
import json
import os
import shutil
import statistics
import sys
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("HOARD_BUILD", "build")
HOARDD = os.path.join(TOP, BUILD, "bin", "hoardd")
B = os.path.join(TOP, BUILD, "bench", "checkpoint")
REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))
MIB = 1024 * 1024
SIZE = int(os.environ.get("BENCH_CKPT_MIB", "1024")) * MIB
RATE = int(float(os.environ.get("BENCH_UP_MIBS", "100")) * MIB)
# the rows to run (default all): e.g. BENCH_CKPT_ROWS=direct,through for the write-through goal
ROWS = os.environ.get("BENCH_CKPT_ROWS", "native,direct,through,back").split(",")

# ---- the throttling relay (a process of its own) ----

class Bucket:
    """A token bucket shared by every connection of one direction."""

    def __init__(self, rate):
        self.rate, self.tokens, self.t = rate, 0.0, time.monotonic()

    async def take(self, n):
        while True:
            now = time.monotonic()
            self.tokens = min(self.tokens + (now - self.t) * self.rate, self.rate * 0.05)
            self.t = now
            if self.tokens >= n:
                self.tokens -= n
                return
            await asyncio.sleep((n - self.tokens) / self.rate)


async def pipe(reader, writer, bucket):
    try:
        while True:
            data = await reader.read(64 * 1024)
            if not data:
                break
            await bucket.take(len(data))
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        try:
            writer.close()
        except Exception:
            pass


def relay_main(lport, dport, rate):
    up, down = Bucket(rate), Bucket(rate)

    async def handle(cr, cw):
        try:
            sr, sw = await asyncio.open_connection("127.0.0.1", dport)
        except OSError:
            cw.close()
            return
        await asyncio.gather(pipe(cr, sw, up), pipe(sr, cw, down))

    async def main():
        srv = await asyncio.start_server(handle, "127.0.0.1", lport)
        async with srv:
            await srv.serve_forever()

    asyncio.run(main())


# ---- the benchmark ----

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cache import api, port, start, stop_all, wait_http  # noqa: E402  (same process helpers)


def client(url):
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=url, aws_access_key_id="S3RVER",
                        aws_secret_access_key="S3RVER", region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"},
                                      read_timeout=600, retries={"max_attempts": 1}))


def timed_upload(s3, path, bucket, key):
    """Seconds for the whole upload; prints the parts phase and CompleteMultipartUpload's."""
    marks = {}

    def before(**_):
        marks["c0"] = time.monotonic()

    def after(**_):
        marks["c1"] = time.monotonic()

    ev = "call.s3.CompleteMultipartUpload"
    s3.meta.events.register("before-" + ev, before)
    s3.meta.events.register("after-" + ev, after)
    t0 = time.monotonic()
    try:
        s3.upload_file(path, bucket, key)
    finally:
        s3.meta.events.unregister("before-" + ev, before)
        s3.meta.events.unregister("after-" + ev, after)
    t = time.monotonic() - t0
    if "c1" in marks:
        print("    %s: parts %.2f s, complete %.2f s"
              % (bucket, marks["c0"] - t0, marks["c1"] - marks["c0"]), flush=True)
    return t


def flush_time(purl, bucket, t_start):
    """Starts a flush job; seconds from t_start until it is done."""
    j = api("POST", purl + "/v1/jobs", {"kind": "flush", "bucket": bucket, "args": {}})
    while True:
        s = api("GET", purl + "/v1/jobs/" + j["id"])
        if s.get("state") not in (None, "running"):
            if s["state"] != "done":
                raise SystemExit("bench checkpoint: flush %s" % json.dumps(s))
            return time.monotonic() - t_start
        time.sleep(0.05)


def med(v):
    return statistics.median(v) if v else float("nan")


def main():
    s3rver_exe = os.path.join(TOP, "node_modules", ".bin", "s3rver")
    if not os.access(HOARDD, os.X_OK) or not os.access(s3rver_exe, os.X_OK):
        raise SystemExit("bench checkpoint: build hoardd and run make deps first")
    shutil.rmtree(B, ignore_errors=True)
    os.makedirs(B)
    ckpt = os.path.join(B, "ckpt.bin")
    with open(ckpt, "wb") as f:
        for _ in range(SIZE // MIB):
            f.write(os.urandom(MIB))

    sport, rport = port(), port()
    start(["bash", "-c", "while true; do NODE_OPTIONS=--openssl-legacy-provider '%s' -d '%s' "
           "-a 127.0.0.1 -p %d --no-vhost-buckets; sleep 0.2; done"
           % (s3rver_exe, os.path.join(B, "s3rver"), sport)], os.path.join(B, "s3rver.log"))
    wait_http("http://127.0.0.1:%d/" % sport)
    start([sys.executable, os.path.abspath(__file__), "--relay", str(rport), str(sport),
           str(RATE)], os.path.join(B, "relay.log"))
    uurl = "http://127.0.0.1:%d" % rport  # the throttled upstream
    wait_http(uurl + "/")

    env = dict(os.environ, HOARD_S3_PROFILE_S3RVER="S3RVER:S3RVER")
    pport = port()
    start([HOARDD, "--role", "proxy", "--listen", "127.0.0.1:%d" % pport, "--data",
           os.path.join(B, "p"), "--log.level", "warn"], os.path.join(B, "proxy.log"), env)
    purl = "http://127.0.0.1:%d" % pport
    wait_http(purl + "/v1/health")
    for i in (1, 2):
        tp = port()
        d = os.path.join(B, "t%d" % i)
        start([HOARDD, "--role", "target", "--listen", "127.0.0.1:%d" % tp, "--data", d,
               "--mountpaths", os.path.join(d, "mp1"), "--cluster.join", purl,
               "--log.level", "warn"], os.path.join(B, "t%d.log" % i), env)
        wait_http("http://127.0.0.1:%d/v1/health?ready=true" % tp)
    time.sleep(1)

    up = client(uurl)
    for b in ("up-direct", "ck-through", "ck-back"):
        up.create_bucket(Bucket=b)
    api("POST", purl + "/v1/buckets/ck-native")
    api("POST", purl + "/v1/buckets/ck-through?provider=aws",
        {"upstream": {"endpoint": uurl, "profile": "s3rver"}})
    api("POST", purl + "/v1/buckets/ck-back?provider=aws",
        {"upstream": {"endpoint": uurl, "profile": "s3rver"}, "write_policy": "back"})
    hs3 = client(purl)

    rows = {k: [] for k in ("native", "direct", "through", "back-ack", "back-flush")}
    load0 = open("/proc/loadavg").read().split()[:3]
    print("bench checkpoint: %d MiB, upstream s3rver held to %.0f MiB/s, %d repetitions"
          % (SIZE // MIB, RATE / MIB, REPEATS), flush=True)
    for rep in range(REPEATS):
        order = [w for w in ["native", "direct", "through", "back"] if w in ROWS]
        if rep % 2:
            order.reverse()
        for who in order:
            key = "ckpt-%d.pt" % rep
            if who == "native":
                t = timed_upload(hs3, ckpt, "ck-native", key)
                hs3.delete_object(Bucket="ck-native", Key=key)
            elif who == "direct":
                t = timed_upload(up, ckpt, "up-direct", key)
                up.delete_object(Bucket="up-direct", Key=key)
            elif who == "through":
                t = timed_upload(hs3, ckpt, "ck-through", key)
                hs3.delete_object(Bucket="ck-through", Key=key)
            else:
                t0 = time.monotonic()
                hs3.upload_file(ckpt, "ck-back", key)
                t = time.monotonic() - t0
                tf = flush_time(purl, "ck-back", t0)
                rows["back-flush"].append(tf)
                hs3.delete_object(Bucket="ck-back", Key=key)
                flush_time(purl, "ck-back", time.monotonic())  # the delete reaches it too
                who = "back-ack"
            rows[who].append(t)
            print("  rep %d %-10s %.2f s%s" % (rep + 1, who, t,
                  " (flushed at %.2f s)" % rows["back-flush"][-1] if who == "back-ack" else ""),
                  flush=True)
    load1 = open("/proc/loadavg").read().split()[:3]

    n, d, wt = med(rows["native"]), med(rows["direct"]), med(rows["through"])
    wa, wf = med(rows["back-ack"]), med(rows["back-flush"])
    fmt = lambda v: "%.2f s (%.2f-%.2f)" % (med(v), min(v), max(v)) if v else "not run"  # noqa: E731
    lines = [
        "| %d MiB checkpoint, boto3 upload_file, upstream at %.0f MiB/s | time (median, min-max) "
        "| vs native | vs write-through |" % (SIZE // MIB, RATE / MIB),
        "|---|---|---|---|",
        "| native bucket (proxy relay) | %s | 1.00x | %.2fx |" % (fmt(rows["native"]), n / wt),
        "| upstream directly | %s | %.2fx | %.2fx |" % (fmt(rows["direct"]), d / n, d / wt),
        "| S3-backed, write-through | %s | %.2fx | 1.00x |" % (fmt(rows["through"]), wt / n),
        "| S3-backed, write-back: acknowledged | %s | %.2fx | %.2fx (%.1fx faster) |"
        % (fmt(rows["back-ack"]), wa / n, wa / wt, wt / wa),
        "| S3-backed, write-back: flushed (upstream has it) | %s | %.2fx | %.2fx |"
        % (fmt(rows["back-flush"]), wf / n, wf / wt),
        "",
        "Goals: write-back acknowledgement >= 5x faster than write-through (%.1fx), within 1.5x "
        "of native (%.2fx); write-through within 1.1x of the upstream directly (%.2fx; paired "
        "per repetition, median %.2fx). Load average before %s, after %s."
        % (wt / wa, wa / n, wt / d,
           med([a / b for a, b in zip(rows["through"], rows["direct"])]),
           " ".join(load0), " ".join(load1)),
    ]
    out = "\n".join(lines) + "\n"
    print(out)
    os.makedirs(os.path.join(TOP, BUILD, "bench"), exist_ok=True)
    with open(os.path.join(TOP, BUILD, "bench", "checkpoint.md"), "w") as f:
        f.write(out)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--relay":
        relay_main(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
        sys.exit(0)
    try:
        main()
    finally:
        stop_all()
        if os.environ.get("BENCH_KEEP") != "1":
            for sub in ("s3rver", "t1", "t2", "ckpt.bin"):
                p = os.path.join(B, sub)
                shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else (
                    os.path.exists(p) and os.remove(p))
