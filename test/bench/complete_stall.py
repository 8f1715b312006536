#!/usr/bin/python3
"""`make bench BENCH_ONLY=complete`: small reads while a large CompleteMultipartUpload runs.

One target (standalone, no auth, `--http.threads 1`, so every connection shares the one HTTP
worker, as 1/8 of them do on a default target) holds a 10 KB object. A boto3 client uploads
BENCH_COMPLETE_MIB (default 512) MiB in 64 MiB parts and completes the upload while a second
client reads the small object in a loop on its own connection. Reported per repetition: the
Complete's time, the reads done meanwhile and their worst latency. A worker that assembles the
object itself (copy + fsync) holds every read of its connections for the whole Complete; one
that hands the assembly to the disk workers keeps serving them.

  BENCH_HOARDD=PATH       the hoardd to measure (default $HOARD_BUILD/bin/hoardd)
  BENCH_BASE_HOARDD=PATH  another hoardd measured the same way in the same run (A/B)
  BENCH_REPEATS           repetitions per binary (default 3)
Never fails on a missed goal. Stops the target it starts.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import boto3
import requests
from botocore.config import Config

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("HOARD_BUILD", "build")
MIB = 1024 * 1024
SIZE = int(os.environ.get("BENCH_COMPLETE_MIB", "512")) * MIB
PART = 64 * MIB
REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))


def client(url):
    return boto3.client("s3", endpoint_url=url, region_name="us-east-1",
                        aws_access_key_id="bench", aws_secret_access_key="bench",
                        config=Config(s3={"addressing_style": "path"}, read_timeout=600,
                                      retries={"total_max_attempts": 1}))


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(hoardd):
    root = tempfile.mkdtemp(prefix="hd-complete-")
    port = free_port()
    url = "http://127.0.0.1:%d" % port
    log = open(os.path.join(root, "hoardd.log"), "w")
    p = subprocess.Popen([hoardd, "--role", "target", "--listen", "127.0.0.1:%d" % port,
                          "--data", os.path.join(root, "data"), "--http.threads", "1"],
                         stdout=log, stderr=subprocess.STDOUT)
    rows = []
    try:
        for _ in range(200):
            try:
                requests.get(url + "/v1/health", timeout=1)
                break
            except requests.RequestException:
                time.sleep(0.1)
        s3 = client(url)
        s3.create_bucket(Bucket="bench")
        s3.put_object(Bucket="bench", Key="small", Body=b"x" * 10000)
        part = os.urandom(PART)
        for rep in range(REPEATS):
            key = "big%d" % rep
            up = s3.create_multipart_upload(Bucket="bench", Key=key)["UploadId"]
            parts = [{"PartNumber": i + 1,
                      "ETag": s3.upload_part(Bucket="bench", Key=key, UploadId=up,
                                             PartNumber=i + 1, Body=part)["ETag"]}
                     for i in range(SIZE // PART)]
            stop, lat, errs = threading.Event(), [], []

            def reader():
                c = client(url)
                while not stop.is_set():
                    t = time.time()
                    try:
                        body = c.get_object(Bucket="bench", Key="small")["Body"].read()
                    except Exception as e:  # noqa: BLE001 (reported, not raised)
                        errs.append(repr(e))
                        return
                    lat.append(time.time() - t)
                    if len(body) != 10000:
                        errs.append("short read")
                    time.sleep(0.01)
            th = threading.Thread(target=reader)
            th.start()
            time.sleep(0.3)  # the reader is going
            t = time.time()
            s3.complete_multipart_upload(Bucket="bench", Key=key, UploadId=up,
                                         MultipartUpload={"Parts": parts})
            took = time.time() - t
            stop.set()
            th.join()
            s3.delete_object(Bucket="bench", Key=key)
            rows.append((took, len(lat), max(lat) if lat else float("nan"), errs))
    finally:
        p.terminate()
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
        log.close()
        shutil.rmtree(root, ignore_errors=True)
    return rows


def main():
    bins = [("hoardd", os.environ.get("BENCH_HOARDD") or os.path.join(TOP, BUILD, "bin", "hoardd"))]
    if os.environ.get("BENCH_BASE_HOARDD"):
        bins.append(("base", os.environ["BENCH_BASE_HOARDD"]))
    print("| binary | Complete of %d MiB, s (median) | reads during it (median) | worst read, s "
          "(median of the worst) | per repetition: Complete s / worst read s |" % (SIZE // MIB))
    print("|---|---|---|---|---|")
    for name, path in bins:
        rows = measure(path)
        errs = [e for r in rows for e in r[3]]
        print("| %s | %.2f | %d | %.3f | %s |%s" % (
            name, statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows),
            statistics.median(r[2] for r in rows),
            ", ".join("%.2f / %.3f" % (r[0], r[2]) for r in rows),
            (" errors: %s" % errs[:3]) if errs else ""))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
