"""hoard-bench as a load tool (tools/bench/hoard_bench.c, docs/performance.md): a PUT-only
run, then a GET run over the same keys, SigV4-signed on the S3 API of a target and of a
proxy (which relays); the JSON report must count what the store then holds."""
import json
import os
import subprocess

import conftest

ENDPOINTS = ("target", "proxy")
BENCH = os.path.join(conftest.BIN_DIR, "hoard-bench")


def run_bench(*args):
    p = subprocess.run([BENCH, "--conns", "4", "--threads", "2", "--secs", "1",
                        "--warmup", "0"] + list(args), capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr + p.stdout
    return p.stdout


def test_put_then_get_mix(endpoint, s3, bucket):
    sig = "%s:%s" % (conftest.ACCESS_KEY, conftest.SECRET_KEY)
    base = "%s/%s" % (endpoint.url, bucket)
    r = json.loads(run_bench("--base", base, "--objects", "8", "--seq", "--put", "100",
                             "--size", "1KiB-3KiB", "--sigv4", sig, "--json"))
    assert r["errors"] == 0 and r["puts"] > 0 and r["gets"] == 0, r
    assert r["requests"] == r["puts"]
    keys = {o["Key"]: o["Size"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])}
    assert set(keys) <= {"obj-%06d" % i for i in range(8)} and keys, keys
    assert all(1024 <= n <= 3072 for n in keys.values()), keys
    # GETs of the keys written (sequential, so every key is one of them), text report
    present = sorted(keys)
    with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), bucket + ".urls"), "w") as f:
        f.write("".join("%s/%s\n" % (base, k) for k in present))
        path = f.name
    try:
        out = run_bench("--urls", path, "--sigv4", sig)
        assert "0 errors" in out and "GET" in out and "p90" in out, out
        r = json.loads(run_bench("--urls", path, "--sigv4", sig, "--json", "--put", "0"))
        assert r["errors"] == 0 and r["gets"] == r["requests"] > 0 and r["puts"] == 0, r
        assert r["p50_ms"] <= r["p90_ms"] <= r["p99_ms"], r
    finally:
        os.unlink(path)


def test_bad_arguments_are_refused():
    for args in (["--put", "101", "--base", "http://127.0.0.1:1/b", "--objects", "1"],
                 ["--size", "3KiB-1KiB", "--base", "http://127.0.0.1:1/b", "--objects", "1"],
                 ["--secs", "1"]):
        p = subprocess.run([BENCH] + args, capture_output=True, text=True, timeout=30)
        assert p.returncode == 2 and "usage" in p.stderr, (args, p.stderr)
