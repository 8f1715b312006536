"""Integration tests for the `hoard` admin CLI (tools/hoard) against a real hoardd target.

Uses the harness fixture `target` (conftest.py: auth.keys on, so the CLI gets the target's
credentials in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY) when it exists; otherwise starts its
own `hoardd --role target` without auth on a free loopback port in a temp dir:
    /usr/bin/python3 -m pytest -q test/integration/test_cli.py
Redirects (a proxy's 307) are checked against scripted loopback HTTP servers.
"""
import hashlib
import http.server
import json
import os
import re
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from helpers import sign_headers, wait_until


def _wait_for_text(read, needle):
    """read() once it contains needle (access logs are written after the response)."""
    return wait_until(lambda: (lambda text: text if needle in text else None)(read()),
                      timeout=5, what=needle)

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


def _creds(srv):
    """(access key, secret key) the server wants, or None when it runs without auth."""
    ak = getattr(srv, "access_key", None)
    if not ak or getattr(srv, "auth_keys", None) == "":
        return None
    return ak, srv.secret_key


class Hoard:
    def __init__(self, srv, cwd):
        self.url = srv.url
        self.exe = str(Path(getattr(srv, "bin_dir", BIN_DIR)) / "hoard")
        self.cwd = cwd
        self.creds = _creds(srv)

    def __call__(self, *args, env=None, input=None, endpoint=True, creds=True, timeout=120):
        """Runs the CLI with the server's credentials in the environment (creds=False: no
        AWS_* variables at all); env entries are added last."""
        e = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        e.pop("HOARD_PROGRESS", None)
        e.pop("HOARD_ENDPOINT", None)
        if creds and self.creds:
            e["AWS_ACCESS_KEY_ID"], e["AWS_SECRET_ACCESS_KEY"] = self.creds
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
    _destroy_bucket(hoard, name)


def _call(hoard, method, path, data=None):
    """One native request with urllib, SigV4-signed when the server has credentials."""
    url = hoard.url + path
    headers = sign_headers(method, url, *hoard.creds) if hoard.creds else {}
    req = urllib.request.Request(url, data=data, headers=headers, method=method)
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, r.read()


def _destroy_bucket(hoard, name):
    def call(method, path):
        return _call(hoard, method, path)[1]

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


def _put_raw(hoard, bucket, name, data):
    assert _call(hoard, "PUT", f"/v1/objects/{bucket}/{name}", data)[0] == 200


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
        _put_raw(hoard, bucket, n, n.encode())

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
        _put_raw(hoard, bucket, f"k{i:05d}", b"")
    names, _, doc = _names(hoard, bucket)
    assert names == [f"k{i:05d}" for i in range(n)]
    assert "continuation_token" not in doc
    names, _, doc = _names(hoard, bucket, "--limit", "1010")
    assert len(names) == 1010 and doc["continuation_token"]
    lines = hoard.ok("object", "ls", bucket).stdout.decode().splitlines()
    assert len(lines) == n + 1


def test_rm(hoard, bucket, tmp_path):
    _put_raw(hoard, bucket, "gone", b"bye")
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
    # an unknown verb: the noun's verbs; a known verb used wrongly: that verb's usage only
    err = hoard("object", "frob").stderr.decode()
    assert "object ls" in err and "bucket create" not in err
    err = hoard("object", "put").stderr.decode()
    assert "usage: hoard object put" in err and "object ls" not in err


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
    cmds = [ln.split()[0] for ln in r.stdout.decode().split("Command options")[0].splitlines()
            if ln.startswith("  ") and not ln.startswith("      ")]
    assert "bucket rm" in r.stdout.decode() and set(cmds) == {"bucket"}, cmds


# ---- credentials -----------------------------------------------------------------------


def _need_auth(hoard):
    if not hoard.creds:
        pytest.skip("the server runs without auth.keys")


def test_no_credentials_access_denied(hoard, bucket, tmp_path):
    _need_auth(hoard)
    hoard.ok("object", "put", "-", f"{bucket}/o", input=b"data")
    for args, what in ((["bucket", "ls"], "bucket ls"),
                       (["object", "ls", bucket], f"object ls {bucket}"),
                       (["object", "get", f"{bucket}/o", "-"], f"object get {bucket}/o"),
                       (["object", "head", f"{bucket}/o"], f"object head {bucket}/o"),
                       (["object", "put", "-", f"{bucket}/p"], f"object put {bucket}/p"),
                       (["object", "rm", f"{bucket}/o"], f"object rm {bucket}/o")):
        r = hoard(*args, creds=False, input=b"x")
        assert r.returncode == 1, (args, r.stderr)
        err = r.stderr.decode()
        assert err.startswith(f"hoard: {what}: AccessDenied: "), err
        assert "AWS_ACCESS_KEY_ID" in err and "--access-key" in err, err
        assert err.count("\n") == 1, err
        assert r.stdout == b""
    # nothing happened
    assert hoard.ok("object", "get", f"{bucket}/o", "-").stdout == b"data"
    assert hoard.json("object", "ls", bucket)["entries"][0]["name"] == "o"


def test_bad_credentials(hoard, bucket):
    _need_auth(hoard)
    hoard.ok("object", "put", "-", f"{bucket}/o", input=b"data")
    r = hoard("object", "get", f"{bucket}/o", "-", env={"AWS_SECRET_ACCESS_KEY": "wrong"})
    assert r.returncode == 1 and r.stdout == b""
    assert r.stderr.decode().startswith(f"hoard: object get {bucket}/o: SignatureDoesNotMatch: ")
    r = hoard("object", "head", f"{bucket}/o", env={"AWS_SECRET_ACCESS_KEY": "wrong"})
    assert r.returncode == 1 and b": SignatureDoesNotMatch: " in r.stderr
    r = hoard("bucket", "ls", env={"AWS_ACCESS_KEY_ID": "AKIDNOSUCHKEY"})
    assert r.returncode == 1
    assert r.stderr.decode().startswith("hoard: bucket ls: InvalidAccessKeyId: ")
    # an access key SigV4 cannot carry is refused before anything is sent
    r = hoard("bucket", "ls", env={"AWS_ACCESS_KEY_ID": "bad key"})
    assert r.returncode == 1 and b"cannot sign" in r.stderr


def test_credentials_from_flags(hoard, bucket):
    _need_auth(hoard)
    ak, sk = hoard.creds
    # flags alone
    r = hoard.ok("--access-key", ak, "--secret-key", sk, "object", "put", "-", f"{bucket}/f",
                 input=b"flags", creds=False)
    assert b"uploaded" in r.stdout
    # flags win over the environment; anywhere on the line, --name=value too
    r = hoard.ok("object", "get", f"{bucket}/f", "-", f"--access-key={ak}", "--secret-key", sk,
                 env={"AWS_ACCESS_KEY_ID": "AKIDNOSUCHKEY", "AWS_SECRET_ACCESS_KEY": "wrong"})
    assert r.stdout == b"flags"
    # half from a flag, half from the environment
    r = hoard.ok("--secret-key", sk, "object", "get", f"{bucket}/f", "-", creds=False,
                 env={"AWS_ACCESS_KEY_ID": ak})
    assert r.stdout == b"flags"
    # any region signs (the server takes the scope as sent)
    for var in ("AWS_DEFAULT_REGION", "AWS_REGION"):
        assert hoard.ok("object", "get", f"{bucket}/f", "-",
                        env={var: "eu-west-3"}).stdout == b"flags"
    # one half only: usage error, nothing sent
    for args, env in ((["--access-key", ak], {}), (["--secret-key", sk], {}),
                      ([], {"AWS_ACCESS_KEY_ID": ak})):
        r = hoard(*args, "bucket", "ls", creds=False, env=env)
        assert r.returncode == 2, (args, env, r.stderr)
        assert b"give both" in r.stderr and b"usage: hoard" in r.stderr


def test_read_only_key(target_factory, tmp_path):
    t = target_factory(auth_keys="AK:SK,RO:ROSK:ro", access_key="AK", secret_key="SK")
    rw = Hoard(t, tmp_path)
    ro = Hoard(t, tmp_path)
    ro.creds = ("RO", "ROSK")
    rw.ok("bucket", "create", "cli-ro-test")
    rw.ok("object", "put", "-", "cli-ro-test/o", input=b"rw")
    assert ro.ok("object", "get", "cli-ro-test/o", "-").stdout == b"rw"
    assert ro.json("object", "head", "cli-ro-test/o")["size"] == 2
    assert ro.json("object", "ls", "cli-ro-test")["entries"][0]["name"] == "o"
    assert "cli-ro-test" in [b["name"] for b in ro.json("bucket", "ls")["buckets"]]
    for args in (["object", "put", "-", "cli-ro-test/o"], ["object", "rm", "cli-ro-test/o"],
                 ["bucket", "create", "cli-ro-other"], ["bucket", "rm", "cli-ro-test"]):
        r = ro(*args, input=b"ro")
        assert r.returncode == 1, (args, r.stderr)
        err = r.stderr.decode()
        assert re.match(r"^hoard: [^:]+: AccessDenied: ", err), err
        assert "AWS_ACCESS_KEY_ID" not in err  # credentials were given; they lack permission
    assert rw.ok("object", "get", "cli-ro-test/o", "-").stdout == b"rw"


# ---- through a proxy ---------------------------------------------------------------------


@pytest.fixture
def proxy_and_target(tmp_path_factory, log_dir):
    """A real one-proxy, one-target cluster (flags as in test_cluster.py), auth keys
    AK:SK (rw) and RO:ROSK (ro). Returns (proxy, target)."""
    import conftest

    class Node(conftest.Target):
        def __init__(self, name, role, join=None):
            root = str(tmp_path_factory.mktemp(name))
            super().__init__(name, root, os.path.join(log_dir, name), access_key="AK",
                             secret_key="SK", auth_keys="AK:SK,RO:ROSK:ro")
            self.role, self.join = role, join

        def cmdline(self):
            args = [self.binary, "--role", self.role, "--listen", "%s:%d" % (self.host, self.port),
                    "--data", self.data_dir, "--log.access", self.access_log,
                    "--auth.keys", self.auth_keys, "--cluster.secret", "cli-test-secret",
                    "--cluster.heartbeat_ms", "200", "--cluster.dead_after", "5"]
            if self.role == "target":
                args += ["--mountpaths", ",".join(self.mountpaths)]
            if self.join:
                args += ["--cluster.join", self.join]
            return args

        def _wait_ready(self, timeout):
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    return False
                try:
                    with urllib.request.urlopen(self.url + "/v1/health?ready=true",
                                                timeout=1) as r:
                        if r.status == 200:
                            return True
                except (urllib.error.URLError, OSError):
                    pass
                time.sleep(0.05)
            return False

    nodes = []
    try:
        p = Node("cli-p1", "proxy")
        nodes.append(p)
        conftest._TARGETS.append(p)
        p.start()
        t = Node("cli-t1", "target", p.url)
        nodes.append(t)
        conftest._TARGETS.append(t)
        t.start()

        def joined():
            try:
                with urllib.request.urlopen(p.url + "/v1/health?ready=true", timeout=1) as r:
                    return r.status == 200 and _call(Hoard(p, "."), "GET", "/v1/buckets")[0] == 200
            except (urllib.error.URLError, OSError):
                return False
        deadline = time.monotonic() + 15
        while not joined():
            assert time.monotonic() < deadline, "the target did not join the proxy"
            time.sleep(0.1)
        yield p, t
    finally:
        for n in nodes:
            n.stop()
            conftest._TARGETS.remove(n)


def test_through_proxy(proxy_and_target, tmp_path):
    """The real 307 flow: signed to the proxy, redirected unsigned to the target with the
    proxy's psig."""
    p, t = proxy_and_target
    h = Hoard(p, tmp_path)
    big = os.urandom(3 * 1024 * 1024)
    (tmp_path / "big").write_bytes(big)
    (tmp_path / "small").write_bytes(b"small")
    h.ok("bucket", "create", "cli-proxied")
    h.ok("object", "put", str(tmp_path / "small"), "cli-proxied/dir/a b ü")
    h.ok("object", "put", str(tmp_path / "big"), "cli-proxied/big")
    h.ok("object", "put", "-", "cli-proxied/stdin", input=big)
    assert h.ok("object", "get", "cli-proxied/dir/a b ü", "-").stdout == b"small"
    assert h.ok("object", "get", "cli-proxied/big", "-").stdout == big
    assert h.ok("object", "get", "cli-proxied/stdin", "-").stdout == big
    assert h.json("object", "head", "cli-proxied/big")["size"] == len(big)
    assert [e["name"] for e in h.json("object", "ls", "cli-proxied")["entries"]] == \
        ["big", "dir/a b ü", "stdin"]
    # the data went to the target, redirected with the proxy's authorisation
    log = _wait_for_text(lambda: open(t.access_log).read(), "uri=/v1/objects/cli-proxied/big")
    assert re.search(r"method=PUT status=200 in=%d .* uri=/v1/objects/cli-proxied/stdin\b"
                     % len(big), log), log
    # the target on its own does not serve clients in a cluster
    r = Hoard(t, tmp_path)("object", "get", "cli-proxied/big", "-")
    assert r.returncode == 1 and b": AccessDenied: " in r.stderr

    r = h("object", "get", "cli-proxied/big", "-", creds=False)
    assert r.returncode == 1 and b": AccessDenied: " in r.stderr and r.stdout == b""
    r = h("object", "get", "cli-proxied/big", "-", env={"AWS_SECRET_ACCESS_KEY": "wrong"})
    assert r.returncode == 1 and b": SignatureDoesNotMatch: " in r.stderr
    ro = Hoard(p, tmp_path)
    ro.creds = ("RO", "ROSK")
    assert ro.ok("object", "get", "cli-proxied/dir/a b ü", "-").stdout == b"small"
    r = ro("object", "rm", "cli-proxied/big")
    assert r.returncode == 1 and b": AccessDenied: " in r.stderr
    r = ro("object", "put", "-", "cli-proxied/ro", input=b"ro")
    assert r.returncode == 1 and b": AccessDenied: " in r.stderr

    for n in ("big", "dir/a b ü", "stdin"):
        h.ok("object", "rm", f"cli-proxied/{n}")
    h.ok("bucket", "rm", "cli-proxied")


# ---- redirects (scripted servers) ---------------------------------------------------------


def _read_body(h):
    """The request body a BaseHTTPRequestHandler is looking at (Content-Length or chunked)."""
    if "chunked" in h.headers.get("Transfer-Encoding", "").lower():
        out = b""
        while True:
            size = int(h.rfile.readline().split(b";")[0], 16)
            if size == 0:
                while h.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return out
            out += h.rfile.read(size)
            h.rfile.readline()
    return h.rfile.read(int(h.headers.get("Content-Length") or 0))


class FakeServer:
    """A scripted HTTP/1.1 server on loopback. respond(rec) -> (status, headers, body) for every
    request; each request is recorded as {method, path, headers (lowercase names), body}.
    answer_early: answer "Expect: 100-continue" requests at once, without taking the body
    (what a proxy does with a PUT it redirects)."""

    def __init__(self, respond, answer_early=True):
        self.requests = []
        srv = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def handle_expect_100(self):
                return True if answer_early else super().handle_expect_100()

            def _any(self):
                early = answer_early and self.headers.get("Expect", "").lower() == "100-continue"
                rec = {"method": self.command, "path": self.path,
                       "headers": {k.lower(): v for k, v in self.headers.items()},
                       "body": None if early else _read_body(self)}
                srv.requests.append(rec)
                status, hdrs, body = respond(rec)
                self.send_response(status)
                for k, v in hdrs.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                if early:  # the body we did not read is still on the wire
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _any

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fake_servers():
    started = []

    def start(respond, **kw):
        s = FakeServer(respond, **kw)
        started.append(s)
        return s

    yield start
    for s in started:
        s.close()


def _redirect_to(base_url, extra_query=""):
    def respond(rec):
        loc = base_url + rec["path"]
        if extra_query:
            loc += ("&" if "?" in loc else "?") + extra_query
        return 307, {"Location": loc}, b""
    return respond


def test_redirect_drops_authorization(fake_servers, tmp_path):
    """The first hop is signed for its own host; the redirected hop (to another port) carries
    the Location's query (a proxy's pid/ptime/psig) and no Authorization."""
    target = fake_servers(lambda rec: (200, {"Content-Type": "application/json"},
                                       b'{"buckets": []}'))
    proxy = fake_servers(_redirect_to(target.url, "pid=p1&ptime=1700000000&psig=abc"))
    h = Hoard(SimpleNamespace(url=proxy.url, bin_dir=BIN_DIR), tmp_path)
    h.creds = ("AKIDREDIR", "secret")
    assert h.json("bucket", "ls") == {"buckets": []}

    (first,), (second,) = proxy.requests, target.requests
    auth = first["headers"]["authorization"]
    assert re.match(r"^AWS4-HMAC-SHA256 Credential=AKIDREDIR/\d{8}/us-east-1/s3/aws4_request, "
                    r"SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=[0-9a-f]{64}$",
                    auth), auth
    assert first["headers"]["host"] == proxy.url[len("http://"):]
    assert first["headers"]["x-amz-content-sha256"] == "UNSIGNED-PAYLOAD"
    assert first["path"] == "/v1/buckets"
    assert second["path"] == "/v1/buckets?pid=p1&ptime=1700000000&psig=abc"
    assert second["headers"]["host"] == target.url[len("http://"):]
    for k in ("authorization", "x-amz-date", "x-amz-content-sha256"):
        assert k not in second["headers"], second["headers"]


def test_redirect_same_origin_drops_authorization(fake_servers, tmp_path):
    """Even a redirect to the same host and port is sent unsigned (libcurl's own redirect
    following would keep the Authorization header there)."""
    def respond(rec):
        if rec["path"].startswith("/v1/objects/"):
            return 307, {"Location": "/other" + rec["path"]}, b""
        return 200, {"ETag": '"%s"' % hashlib.md5(rec["body"] or b"").hexdigest()}, b""
    s = fake_servers(respond, answer_early=False)  # takes the body before the 307
    h = Hoard(SimpleNamespace(url=s.url, bin_dir=BIN_DIR), tmp_path)
    h.creds = ("AKIDREDIR", "secret")
    src = tmp_path / "small"
    src.write_bytes(b"resent body")
    h.ok("object", "put", "--content-type", "text/x-test", str(src), "bkt/o")
    first, second = s.requests
    assert "authorization" in first["headers"]
    assert "content-type;host;x-amz-content-sha256;x-amz-date" in \
        first["headers"]["authorization"]
    assert first["body"] == b"resent body"  # sent before the 307 came back ...
    assert second["path"] == "/other/v1/objects/bkt/o"
    assert second["body"] == b"resent body"  # ... and sent again, rewound
    assert second["headers"]["content-type"] == "text/x-test"
    assert "authorization" not in second["headers"]


def test_redirect_to_real_target(fake_servers, target_factory, tmp_path):
    """A scripted 'proxy' answering every request with 307 to a real target (auth off there,
    so a leaked Authorization would be refused with InvalidAccessKeyId): all commands work,
    and uploads are re-sent to the target."""
    t = target_factory(auth_keys="")
    proxy = fake_servers(_redirect_to(t.url))
    h = Hoard(SimpleNamespace(url=proxy.url, bin_dir=BIN_DIR), tmp_path)
    h.creds = ("AKIDREDIR", "secret")
    small = b"small file"
    big = os.urandom(3 * 1024 * 1024)  # above libcurl's Expect: 100-continue threshold
    (tmp_path / "small").write_bytes(small)
    (tmp_path / "big").write_bytes(big)

    h.ok("bucket", "create", "cli-redir")
    h.ok("object", "put", str(tmp_path / "small"), "cli-redir/small")
    h.ok("object", "put", str(tmp_path / "big"), "cli-redir/big")
    h.ok("object", "put", "-", "cli-redir/stdin", input=big)
    assert h.ok("object", "get", "cli-redir/small", "-").stdout == small
    assert h.ok("object", "get", "cli-redir/big", "-").stdout == big
    assert h.ok("object", "get", "cli-redir/stdin", "-").stdout == big
    assert h.json("object", "head", "cli-redir/big")["size"] == len(big)
    assert [e["name"] for e in h.json("object", "ls", "cli-redir")["entries"]] == \
        ["big", "small", "stdin"]
    r = h("object", "get", "cli-redir/nope", "-")
    assert r.returncode == 1 and b"NoSuchKey" in r.stderr
    for n in ("big", "small", "stdin"):
        h.ok("object", "rm", f"cli-redir/{n}")
    h.ok("bucket", "rm", "cli-redir")
    assert all("authorization" in rec["headers"] for rec in proxy.requests)
    assert len(proxy.requests) >= 14


def test_redirect_stdin_already_sent(fake_servers, tmp_path):
    """A redirect after stdin was sent cannot be followed: a clear error, exit 1."""
    proxy = fake_servers(_redirect_to("http://127.0.0.1:9"), answer_early=False)
    h = Hoard(SimpleNamespace(url=proxy.url, bin_dir=BIN_DIR), tmp_path)
    r = h("object", "put", "-", "bkt/o", input=b"piped")
    assert r.returncode == 1, r.stderr
    err = r.stderr.decode()
    assert err.startswith("hoard: object put bkt/o: redirected to http://127.0.0.1:9/"), err
    assert "stdin" in err and err.count("\n") == 1
    assert proxy.requests[0]["body"] == b"piped"


def test_redirect_loop(fake_servers, tmp_path):
    s = fake_servers(lambda rec: (307, {"Location": rec["path"]}, b""))
    h = Hoard(SimpleNamespace(url=s.url, bin_dir=BIN_DIR), tmp_path)
    r = h("bucket", "ls")
    assert r.returncode == 3 and b"more than 5 redirects" in r.stderr, r.stderr
    assert len(s.requests) == 6
