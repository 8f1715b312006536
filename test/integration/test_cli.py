"""Integration tests for the `hoard` admin CLI (tools/hoard) against a real hoardd target.

Uses the harness fixture `target` (conftest.py) when it exists; otherwise starts its own
`hoardd --role target` on a free loopback port in a temp dir, so the file also runs alone:
    /usr/bin/python3 -m pytest -q test/integration/test_cli.py
"""
import hashlib
import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN_DIR = Path(os.environ.get("HOARD_BIN") or REPO / os.environ.get("HOARD_BUILD", "build") / "bin")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url, proc, log_path, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"hoardd exited with {proc.returncode}:\n{log_path.read_text()}")
        try:
            with urllib.request.urlopen(url + "/v1/health", timeout=1) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.05)
    raise RuntimeError(f"hoardd not healthy after {timeout}s:\n{log_path.read_text()}")


@pytest.fixture(scope="module")
def _own_target(tmp_path_factory):
    """A private hoardd, started only when the harness provides no `target` fixture."""
    holder = {}

    def start():
        if "srv" in holder:
            return holder["srv"]
        d = tmp_path_factory.mktemp("hoardd-cli")
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        log_path = d / "hoardd.log"
        log = open(log_path, "wb")
        proc = subprocess.Popen(
            [str(BIN_DIR / "hoardd"), "--role", "target", "--listen", f"127.0.0.1:{port}",
             "--data", str(d / "data")],
            stdout=log, stderr=subprocess.STDOUT)
        holder.update(proc=proc, log=log, log_path=log_path)
        _wait_healthy(url, proc, log_path)
        holder["srv"] = SimpleNamespace(url=url, bin_dir=BIN_DIR)
        return holder["srv"]

    yield start
    if "proc" in holder:
        holder["proc"].terminate()
        try:
            holder["proc"].wait(10)
        except subprocess.TimeoutExpired:
            holder["proc"].kill()
        holder["log"].close()


@pytest.fixture
def srv(request, _own_target):
    try:
        return request.getfixturevalue("target")
    except pytest.FixtureLookupError:
        return _own_target()


class Hoard:
    def __init__(self, srv, cwd):
        self.url = srv.url
        self.exe = str(Path(getattr(srv, "bin_dir", BIN_DIR)) / "hoard")
        self.cwd = cwd

    def __call__(self, *args, env=None, input=None, endpoint=True, timeout=120):
        e = dict(os.environ)
        e.pop("HOARD_PROGRESS", None)
        e.pop("HOARD_ENDPOINT", None)
        e.update(env or {})
        argv = [self.exe] + (["--endpoint", self.url] if endpoint else []) + list(args)
        return subprocess.run(argv, capture_output=True, input=input, env=e, cwd=self.cwd,
                              timeout=timeout)

    def ok(self, *args, **kw):
        r = self(*args, **kw)
        assert r.returncode == 0, (args, r.returncode, r.stderr.decode(errors="replace"))
        return r

    def json(self, *args, **kw):
        return json.loads(self.ok("--json", *args, **kw).stdout)


@pytest.fixture
def hoard(srv, tmp_path):
    return Hoard(srv, tmp_path)


@pytest.fixture
def bucket(hoard):
    """A fresh bucket made with the CLI; emptied and removed (best effort) afterwards."""
    name = "cli-" + uuid.uuid4().hex[:12]
    hoard.ok("bucket", "create", name)
    yield name
    _destroy_bucket(hoard.url, name)


def _destroy_bucket(url, name):
    def call(method, path):
        req = urllib.request.Request(url + path, method=method)
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.read()

    try:
        while True:
            doc = json.loads(call("GET", f"/v1/buckets/{name}?limit=10000"))
            for e in doc.get("entries", []):
                call("DELETE", f"/v1/objects/{name}/" + urllib.parse.quote(e["name"], safe="/"))
            if not doc.get("continuation_token"):
                break
        call("DELETE", f"/v1/buckets/{name}")
    except (urllib.error.URLError, OSError, ValueError):
        pass  # already gone (the test removed it) or the server is down


def _put_raw(url, bucket, name, data):
    req = urllib.request.Request(f"{url}/v1/objects/{bucket}/{name}", data=data, method="PUT")
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200


# ---- buckets ---------------------------------------------------------------------------


def test_bucket_create_ls_rm(hoard):
    name = "cli-" + uuid.uuid4().hex[:12]
    r = hoard.ok("bucket", "create", name)
    assert name in r.stdout.decode()

    out = hoard.ok("bucket", "ls").stdout.decode().splitlines()
    assert out[0].split() == ["NAME", "PROVIDER", "CREATED"]
    rows = [line.split() for line in out[1:]]
    assert any(row[0] == name for row in rows)

    doc = hoard.json("bucket", "ls")
    assert name in [b["name"] for b in doc["buckets"]]

    r = hoard("bucket", "create", name)
    assert r.returncode == 1
    assert b"BucketAlreadyOwnedByYou" in r.stderr

    assert hoard.json("bucket", "rm", name) == {"bucket": name, "removed": True}
    assert name not in [b["name"] for b in hoard.json("bucket", "ls")["buckets"]]

    r = hoard("bucket", "rm", name)
    assert r.returncode == 1
    assert b"NoSuchBucket" in r.stderr


def test_bucket_rm_not_empty(hoard, bucket, tmp_path):
    f = tmp_path / "x"
    f.write_bytes(b"x")
    hoard.ok("object", "put", str(f), f"{bucket}/x")
    r = hoard("bucket", "rm", bucket)
    assert r.returncode == 1
    err = r.stderr.decode()
    assert "BucketNotEmpty" in err
    assert err.startswith(f"hoard: bucket rm {bucket}: BucketNotEmpty: ")
    assert err.count("\n") == 1


def test_bucket_create_invalid_name(hoard):
    r = hoard("bucket", "create", "Bad_Name")
    assert r.returncode == 1
    assert b"InvalidBucketName" in r.stderr


# ---- objects ---------------------------------------------------------------------------


def test_put_get_roundtrip(hoard, bucket, tmp_path):
    data = os.urandom(100_000)
    src = tmp_path / "src.bin"
    src.write_bytes(data)
    name = "dir/a b+c ü%.bin"  # needs percent-encoding, keeps '/'

    r = hoard.ok("object", "put", str(src), f"{bucket}/{name}")
    assert b"uploaded" in r.stdout
    assert hashlib.md5(data).hexdigest().encode() in r.stdout

    out = tmp_path / "out.bin"
    hoard.ok("object", "get", f"{bucket}/{name}", str(out))
    assert out.read_bytes() == data
    assert not (tmp_path / "out.bin.tmp").exists()

    r = hoard.ok("object", "get", f"{bucket}/{name}", "-")
    assert r.stdout == data

    # Default destination: ./basename(O); a directory destination gets basename(O) inside.
    hoard.ok("object", "get", f"{bucket}/{name}")
    assert (tmp_path / "a b+c ü%.bin").read_bytes() == data
    d = tmp_path / "dl"
    d.mkdir()
    hoard.ok("object", "get", f"{bucket}/{name}", str(d))
    assert (d / "a b+c ü%.bin").read_bytes() == data


def test_odd_object_names(hoard, bucket, tmp_path):
    """Names reach the server verbatim: percent-encoded, no dot-segment squashing."""
    names = ["q?x#y", "a/../b", "./c", "%2F", "sp ace/+plus", "日本/語", "x//y"]
    for i, n in enumerate(names):
        hoard.ok("object", "put", "-", f"{bucket}/{n}", input=b"%d" % i)
    for i, n in enumerate(names):
        assert hoard.ok("object", "get", f"{bucket}/{n}", "-").stdout == b"%d" % i
    listed, _, _ = _names(hoard, bucket)
    assert listed == sorted(names, key=lambda n: n.encode())
    # The table aligns wide characters by terminal columns.
    lines = hoard.ok("object", "ls", bucket).stdout.decode().splitlines()
    ends = {len(line.rsplit(" ", 1)[0]) + line.count("日") + line.count("本") + line.count("語")
            for line in lines[1:]}
    assert len(ends) == 1, lines


def test_put_stdin_and_into_prefix(hoard, bucket, tmp_path):
    data = b"from stdin\n" * 1000
    hoard.ok("object", "put", "-", f"{bucket}/piped", input=data)
    assert hoard.ok("object", "get", f"{bucket}/piped", "-").stdout == data

    src = tmp_path / "file.txt"
    src.write_bytes(b"hello")
    hoard.ok("object", "put", str(src), f"{bucket}/docs/")
    assert hoard.ok("object", "get", f"{bucket}/docs/file.txt", "-").stdout == b"hello"

    r = hoard("object", "put", "-", f"{bucket}/docs/", input=b"x")
    assert r.returncode == 2


def test_empty_object(hoard, bucket, tmp_path):
    src = tmp_path / "empty"
    src.write_bytes(b"")
    doc = hoard.json("object", "put", str(src), f"{bucket}/empty")
    assert doc["size"] == 0
    assert doc["etag"] == hashlib.md5(b"").hexdigest()
    out = tmp_path / "empty.out"
    hoard.ok("object", "get", f"{bucket}/empty", str(out))
    assert out.read_bytes() == b""


def test_large_transfer_progress(hoard, bucket, tmp_path):
    data = os.urandom(20 * 1024 * 1024)
    src = tmp_path / "big.bin"
    src.write_bytes(data)
    env = {"HOARD_PROGRESS": "1"}

    r = hoard.ok("object", "put", str(src), f"{bucket}/big.bin", env=env)
    err = r.stderr.decode()
    assert "20.0 MiB / 20.0 MiB" in err and "100%" in err and "MiB/s" in err, err
    assert err.endswith("\n")

    out = tmp_path / "big.out"
    r = hoard.ok("object", "get", f"{bucket}/big.bin", str(out), env=env)
    err = r.stderr.decode()
    assert "20.0 MiB / 20.0 MiB" in err and "100%" in err, err
    assert err.endswith("\n")
    assert out.read_bytes() == data

    # Without a TTY and without HOARD_PROGRESS there is no progress output at all.
    r = hoard.ok("object", "get", f"{bucket}/big.bin", str(out))
    assert r.stderr == b""
    r = hoard.ok("object", "get", f"{bucket}/big.bin", "-", env={"HOARD_PROGRESS": "1"})
    assert r.stdout == data
    assert b"100%" in r.stderr


def test_small_transfer_has_no_progress(hoard, bucket, tmp_path):
    src = tmp_path / "small"
    src.write_bytes(b"x" * 1024)
    r = hoard.ok("object", "put", str(src), f"{bucket}/small", env={"HOARD_PROGRESS": "1"})
    assert r.stderr == b""


def test_head(hoard, bucket, tmp_path):
    data = b"0123456789" * 300
    src = tmp_path / "h"
    src.write_bytes(data)
    hoard.ok("object", "put", "--content-type", "text/plain", str(src), f"{bucket}/h/x.txt")

    text = hoard.ok("object", "head", f"{bucket}/h/x.txt").stdout.decode()
    fields = dict(line.split(None, 1) for line in text.splitlines())
    assert fields["name"] == f"{bucket}/h/x.txt"
    assert fields["size"].startswith("3000 ")
    assert fields["etag"] == hashlib.md5(data).hexdigest()

    doc = hoard.json("object", "head", f"{bucket}/h/x.txt")
    assert doc["bucket"] == bucket and doc["name"] == "h/x.txt"
    assert doc["size"] == 3000
    assert doc["etag"] == hashlib.md5(data).hexdigest()
    assert doc["content_type"].startswith("text/plain")
    assert "last_modified" in doc and isinstance(doc["metadata"], dict)

    r = hoard("object", "head", f"{bucket}/nope")
    assert r.returncode == 1
    assert b"NoSuchKey" in r.stderr


def _names(hoard, *args):
    doc = hoard.json("object", "ls", *args)
    return [e["name"] for e in doc["entries"]], doc.get("prefixes", []), doc


def test_ls_prefix_delimiter_limit(hoard, bucket):
    for n in ["a/1", "a/2", "a/b/3", "b/4", "c"]:
        _put_raw(hoard.url, bucket, n, n.encode())

    names, prefixes, _ = _names(hoard, bucket)
    assert names == ["a/1", "a/2", "a/b/3", "b/4", "c"] and prefixes == []

    names, _, _ = _names(hoard, f"{bucket}/a/")
    assert names == ["a/1", "a/2", "a/b/3"]

    names, prefixes, _ = _names(hoard, bucket, "--delimiter", "/")
    assert names == ["c"] and prefixes == ["a/", "b/"]

    names, prefixes, _ = _names(hoard, f"{bucket}/a/", "--delimiter=/")
    assert names == ["a/1", "a/2"] and prefixes == ["a/b/"]

    # Human table: header, prefixes merged in name order, sizes right-aligned.
    lines = hoard.ok("object", "ls", bucket, "--delimiter", "/").stdout.decode().splitlines()
    assert lines[0].split() == ["NAME", "SIZE", "MODIFIED"]
    assert [line.split()[0] for line in lines[1:]] == ["a/", "b/", "c"]
    assert lines[3].split()[1:3] == ["1", "B"]

    # --limit: one page of N and a token to resume from.
    names, _, doc = _names(hoard, bucket, "--limit", "2")
    assert names == ["a/1", "a/2"]
    tok = doc["continuation_token"]
    assert tok
    names, _, doc = _names(hoard, bucket, "--limit", "2", "--token", tok)
    assert names == ["a/b/3", "b/4"]
    names, _, doc = _names(hoard, bucket, "--token", doc["continuation_token"])
    assert names == ["c"] and "continuation_token" not in doc

    r = hoard.ok("object", "ls", bucket, "--limit", "2")
    assert len(r.stdout.decode().splitlines()) == 3
    assert b"--token" in r.stderr

    r = hoard("object", "ls", "nosuchbucket-" + uuid.uuid4().hex[:8])
    assert r.returncode == 1 and b"NoSuchBucket" in r.stderr


def test_ls_follows_continuation_tokens(hoard, bucket):
    n = 1030  # more than one default page (1000)
    for i in range(n):
        _put_raw(hoard.url, bucket, f"k{i:05d}", b"")
    names, _, doc = _names(hoard, bucket)
    assert names == [f"k{i:05d}" for i in range(n)]
    assert "continuation_token" not in doc
    names, _, doc = _names(hoard, bucket, "--limit", "1010")
    assert len(names) == 1010 and doc["continuation_token"]
    lines = hoard.ok("object", "ls", bucket).stdout.decode().splitlines()
    assert len(lines) == n + 1


def test_rm(hoard, bucket, tmp_path):
    _put_raw(hoard.url, bucket, "gone", b"bye")
    assert hoard.json("object", "rm", f"{bucket}/gone") == {
        "bucket": bucket, "name": "gone", "removed": True}
    r = hoard("object", "get", f"{bucket}/gone", "-")
    assert r.returncode == 1 and b"NoSuchKey" in r.stderr
    r = hoard("object", "rm", f"{bucket}/gone")
    assert r.returncode == 1 and b"NoSuchKey" in r.stderr
    hoard.ok("bucket", "rm", bucket)


def test_json_outputs_parse(hoard, bucket, tmp_path):
    src = tmp_path / "j"
    src.write_bytes(b"json")
    doc = hoard.json("object", "put", str(src), f"{bucket}/j")
    assert doc == {"bucket": bucket, "name": "j", "size": 4,
                   "etag": hashlib.md5(b"json").hexdigest()}
    doc = hoard.json("object", "get", f"{bucket}/j", str(tmp_path / "j.out"))
    assert doc["size"] == 4 and doc["file"] == str(tmp_path / "j.out")
    # --json is global: accepted after the command too.
    assert json.loads(hoard.ok("object", "ls", bucket, "--json").stdout)["entries"][0]["name"] == "j"


# ---- errors ----------------------------------------------------------------------------


def test_get_missing_object(hoard, bucket, tmp_path):
    out = tmp_path / "missing.out"
    r = hoard("object", "get", f"{bucket}/missing", str(out))
    assert r.returncode == 1
    err = r.stderr.decode()
    assert err.startswith(f"hoard: object get {bucket}/missing: NoSuchKey: ")
    assert not out.exists() and not (tmp_path / "missing.out.tmp").exists()
    r = hoard("object", "get", f"{bucket}/missing", "-")
    assert r.returncode == 1 and r.stdout == b""


def test_missing_bucket_on_put(hoard, tmp_path):
    src = tmp_path / "f"
    src.write_bytes(b"x" * 2_000_000)
    r = hoard("object", "put", str(src), "nosuch-" + uuid.uuid4().hex[:8] + "/o")
    assert r.returncode == 1 and b"NoSuchBucket" in r.stderr


def test_bad_endpoint(hoard):
    port = _free_port()
    for args in (["bucket", "ls"], ["object", "get", "b/o", "-"]):
        r = hoard("--endpoint", f"http://127.0.0.1:{port}", *args, endpoint=False)
        assert r.returncode == 3, r.stderr
        assert f"127.0.0.1:{port}".encode() in r.stderr
    r = hoard("bucket", "ls", endpoint=False, env={"HOARD_ENDPOINT": f"http://127.0.0.1:{port}"})
    assert r.returncode == 3
    # Environment is the default; --endpoint wins.
    r = hoard("bucket", "ls", env={"HOARD_ENDPOINT": f"http://127.0.0.1:{port}"})
    assert r.returncode == 0


@pytest.mark.parametrize("args", [
    [],
    ["frob"],
    ["object"],
    ["object", "frob"],
    ["object", "put", "onlyone"],
    ["object", "get", "nobucketslash-missing-object/"],
    ["object", "get", "/o"],
    ["object", "ls", "b", "--limit", "0"],
    ["object", "ls", "b", "--limit", "x"],
    ["object", "ls", "b", "--bogus"],
    ["object", "ls", "b", "--limit"],
    ["bucket", "create"],
    ["bucket", "ls", "extra"],
    ["bucket", "ls", "--delimiter", "/"],
    ["--endpoint", "ftp://x", "bucket", "ls"],
    ["-x"],
])
def test_bad_usage(hoard, args):
    r = hoard(*args)
    assert r.returncode == 2, (args, r.stderr)
    err = r.stderr.decode()
    assert err.startswith("hoard: ")
    assert "usage: hoard" in err
    assert r.stdout == b""


def test_noun_usage_names_its_verbs(hoard):
    err = hoard("object", "put").stderr.decode()
    assert "object ls" in err and "bucket create" not in err


def test_help_and_version(hoard):
    r = hoard.ok("--version", endpoint=False)
    assert r.stdout.startswith(b"hoard ")
    r = hoard.ok("help", endpoint=False)
    for cmd in ("bucket create", "bucket ls", "bucket rm", "object put", "object get",
                "object head", "object ls", "object rm"):
        assert cmd.encode() in r.stdout
    r = hoard.ok("object", "--help", endpoint=False)
    assert b"object ls" in r.stdout and b"bucket ls" not in r.stdout
    r = hoard.ok("help", "bucket", endpoint=False)
    assert b"bucket rm" in r.stdout and b"object" not in r.stdout.split(b"Global options")[0]
