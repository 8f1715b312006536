"""hoard-bench as a load tool (tools/bench/hoard_bench.c, docs/performance.md): a PUT-only
run, then a GET run over the same keys, SigV4-signed on the S3 API of a target and of a
proxy (which relays); the JSON report must count what the store then holds and what the
servers' own metrics counted (so a tool that miscounts fails here); the native path through
the proxy's 307s; bad arguments refused with a message."""
import json
import os
import subprocess

import pytest

import conftest

ENDPOINTS = ("target", "proxy")
BENCH = os.path.join(conftest.BIN_DIR, "hoard-bench")
OPS = ("requests", "bytes", "rps", "mibs", "p50_ms", "p90_ms", "p99_ms", "mean_ms", "max_ms")


def run_bench(*args):
    # --requests N runs are bounded by --secs too: give them time on a loaded machine
    secs = "100" if "--requests" in args else "1"
    p = subprocess.run([BENCH, "--conns", "4", "--threads", "2", "--secs", secs,
                        "--warmup", "0"] + list(args), capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr + p.stdout
    return p.stdout


def check_report(r):
    """The JSON fields docs/performance.md promises, consistent with each other."""
    for k in OPS + ("gets", "puts", "errors", "redirects", "secs", "conns", "threads",
                    "status", "get", "put"):
        assert k in r, (k, r)
    for op in ("get", "put"):
        assert all(k in r[op] for k in OPS), r[op]
        if r[op]["requests"]:
            assert 0 < r[op]["p50_ms"] <= r[op]["p90_ms"] <= r[op]["p99_ms"] <= r[op]["max_ms"], r
    assert r["gets"] == r["get"]["requests"] and r["puts"] == r["put"]["requests"], r
    assert r["requests"] == r["gets"] + r["puts"], r
    assert r["bytes"] == r["get"]["bytes"] + r["put"]["bytes"], r
    assert sum(r["status"].values()) == r["requests"] + r["errors"], r
    assert r["status"].get("200", 0) == r["requests"], r
    assert r["p50_ms"] <= r["p90_ms"] <= r["p99_ms"], r


def count(endpoint, op, status="200"):
    """Requests the storage nodes answered, as their metrics count them."""
    return endpoint.metrics().get(endpoint.series("hoard_requests_total", op=op, status=status), 0)


def test_put_then_get_mix(endpoint, s3, bucket):
    sig = "%s:%s" % (conftest.ACCESS_KEY, conftest.SECRET_KEY)
    base = "%s/%s" % (endpoint.url, bucket)
    r = json.loads(run_bench("--base", base, "--objects", "8", "--seq", "--put", "100",
                             "--size", "1KiB-3KiB", "--sigv4", sig, "--json"))
    check_report(r)
    assert r["errors"] == 0 and r["puts"] > 0 and r["gets"] == 0, r
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
        check_report(r)
        assert r["errors"] == 0 and r["gets"] == r["requests"] > 0 and r["puts"] == 0, r
        assert r["bytes"] >= 1024 * r["gets"], r
    finally:
        os.unlink(path)


def test_counts_match_server_metrics(endpoint, s3, bucket):
    """--requests N: exactly N requests, and the storage nodes' own counters agree, for
    PUTs of a weighted size mix and for GETs; the bytes reported are the bytes stored."""
    sig = "%s:%s" % (conftest.ACCESS_KEY, conftest.SECRET_KEY)
    base = "%s/%s" % (endpoint.url, bucket)
    puts0 = count(endpoint, "put")
    r = json.loads(run_bench("--base", base, "--objects", "12", "--put", "100", "--requests",
                             "60", "--size", "1KiB:3,5KiB:1", "--sigv4", sig, "--json"))
    check_report(r)
    assert r["requests"] == r["puts"] == 60 and r["errors"] == 0, r
    assert count(endpoint, "put") - puts0 == 60, r
    sizes = {o["Size"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])}
    assert sizes and sizes <= {1024, 5120}, sizes
    assert 60 * 1024 <= r["put"]["bytes"] <= 60 * 5120, r

    # GETs only of keys that exist: a URL list of them
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), bucket + ".urls")
    with open(path, "w") as f:
        f.write("# written by test_bench_tool\n\n")
        f.write("".join("%s/%s\n" % (base, k) for k in keys))
    try:
        gets0 = count(endpoint, "get")
        r = json.loads(run_bench("--urls", path, "--requests", "45", "--sigv4", sig, "--json"))
        check_report(r)
        assert r["requests"] == r["gets"] == 45 and r["errors"] == 0, r
        assert count(endpoint, "get") - gets0 == 45, r
        assert 45 * 1024 <= r["get"]["bytes"] <= 45 * 5120, r
    finally:
        os.unlink(path)


def test_errors_are_counted_by_status(endpoint, bucket):
    """Missing keys: every request is an error, counted under its status (404), the first
    one named on stderr; no request succeeded, so the exit status is 1."""
    sig = "%s:%s" % (conftest.ACCESS_KEY, conftest.SECRET_KEY)
    p = subprocess.run([BENCH, "--base", "%s/%s" % (endpoint.url, bucket), "--objects", "3",
                        "--requests", "10", "--conns", "2", "--secs", "100", "--sigv4", sig,
                        "--json"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    r = json.loads(p.stdout)
    assert r["requests"] == 0 and r["errors"] == 10 and r["status"] == {"404": 10}, r
    assert "first error: GET " in p.stderr and "HTTP 404" in p.stderr, p.stderr
    # a port nobody listens on: no HTTP answer at all, status 0
    p = subprocess.run([BENCH, "--base", "http://127.0.0.1:1/b", "--objects", "1",
                        "--requests", "2", "--conns", "1", "--json"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and json.loads(p.stdout)["status"] == {"0": 2}, p.stdout


def test_native_path_follows_redirects(endpoint, s3, bucket):
    """The proxy's native API answers 307 to the owning target; --follow goes there (a PUT
    with its body), one redirect per request, and the targets count every request."""
    if endpoint.kind != "proxy":
        pytest.skip("307s come from a proxy")
    sig = "%s:%s" % (conftest.ACCESS_KEY, conftest.SECRET_KEY)
    base = "%s/v1/objects/%s" % (endpoint.url, bucket)
    puts0 = count(endpoint, "put")
    r = json.loads(run_bench("--base", base, "--objects", "6", "--seq", "--put", "100",
                             "--requests", "12", "--size", "2KiB", "--follow", "--sigv4", sig,
                             "--json"))
    check_report(r)
    assert r["puts"] == 12 and r["redirects"] == 12 and r["errors"] == 0, r
    assert count(endpoint, "put") - puts0 == 12, r
    assert len(s3.list_objects_v2(Bucket=bucket)["Contents"]) == 6
    gets0 = count(endpoint, "get")
    r = json.loads(run_bench("--base", base, "--objects", "6", "--requests", "30", "--follow",
                             "--sigv4", sig, "--json"))
    check_report(r)
    assert r["gets"] == 30 and r["redirects"] == 30 and r["get"]["bytes"] == 30 * 2048, r
    assert count(endpoint, "get") - gets0 == 30, r


@pytest.mark.parametrize("args, message", [
    (["--put", "101", "--base", "http://127.0.0.1:1/b", "--objects", "1"], "--put: '101'"),
    (["--size", "3KiB-1KiB", "--base", "http://127.0.0.1:1/b", "--objects", "1"], "--size"),
    (["--size", "1KiB:0", "--base", "http://127.0.0.1:1/b", "--objects", "1"], "--size"),
    (["--size", "5TiB", "--base", "http://127.0.0.1:1/b", "--objects", "1"], "--size"),
    (["--conns", "many", "--base", "http://127.0.0.1:1/b", "--objects", "1"], "--conns: 'many'"),
    (["--secs", "-1", "--base", "http://127.0.0.1:1/b", "--objects", "1"], "--secs"),
    (["--requests", "0", "--base", "http://127.0.0.1:1/b", "--objects", "1"], "--requests"),
    (["--sigv4", "nocolon", "--base", "http://127.0.0.1:1/b", "--objects", "1"], "--sigv4"),
    (["--base", "http://127.0.0.1:1/b"], "--objects"),
    (["--base", "http://127.0.0.1:1/b", "--objects", "1", "--urls", "/dev/null"], "exclude"),
    (["--bogus", "1"], "unknown argument '--bogus'"),
    (["--base", "http://127.0.0.1:1/b", "--objects"], "--objects needs a value"),
    (["--secs", "1"], "no keys"),
    (["--urls", "/nonexistent/urls.txt"], "/nonexistent/urls.txt"),
])
def test_bad_arguments_are_refused(args, message):
    p = subprocess.run([BENCH] + args, capture_output=True, text=True, timeout=30)
    assert p.returncode == 2, (args, p.returncode, p.stderr)
    assert message in p.stderr and p.stdout == "", (args, p.stderr)


def test_help():
    p = subprocess.run([BENCH, "--help"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and p.stderr == "", p
    for opt in ("--urls", "--base", "--put", "--size", "--seq", "--follow", "--sigv4",
                "--requests", "--json", "p99"):
        assert opt in p.stdout, opt
