"""`hoard` verbs of issue 19 against a real cluster (1 proxy + 2 targets with 2 mountpaths
each, SigV4 keys, cluster secret) with a real s3rver upstream for S3-backed buckets:
per-verb help, JSON errors, recursive put/get, rm by prefix and template, ls --cached,
du, sync both ways, completion and config profiles.
    HOARD_BUILD=build bash test/integration/run.sh test/integration/test_cli_verbs.py
"""
import json
import os
import re
import uuid
from types import SimpleNamespace

import pytest

import helpers
from cachefix import C_KEYS, HoardCluster, profiles, s3rver  # noqa: F401
from conftest import _TARGETS
from test_cli import BIN_DIR, FakeServer, Hoard


@pytest.fixture(scope="module")
def cl(tmp_path_factory, log_dir, profiles):  # noqa: F811
    c = HoardCluster("cliv", str(tmp_path_factory.mktemp("cliv")), log_dir, _TARGETS, C_KEYS,
                     ntargets=2)
    c.start()
    yield c
    problems = c.stop()
    assert not problems, problems


@pytest.fixture
def hoard(cl, tmp_path):
    return Hoard(SimpleNamespace(url=cl.url, access_key=C_KEYS[0], secret_key=C_KEYS[1],
                                 bin_dir=BIN_DIR), tmp_path)


@pytest.fixture
def bkt(hoard):
    name = "cv-" + uuid.uuid4().hex[:10]
    hoard.ok("bucket", "create", name)
    return name


def names(hoard, bucket, prefix=""):
    doc = hoard.json("object", "ls", bucket + ("/" + prefix if prefix else ""))
    return sorted(e["name"] for e in doc["entries"])


def json_err(r):
    """The one JSON error line on stderr of a failed --json run."""
    lines = r.stderr.decode().splitlines()
    assert len(lines) == 1, r.stderr
    doc = json.loads(lines[0])
    assert doc["exit"] == r.returncode
    return doc


# ---- help and errors -------------------------------------------------------------------


def test_help_per_verb(hoard):
    out = hoard.ok("object", "put", "--help").stdout.decode()
    assert out.startswith("usage: hoard object put FILE|DIR|- B/O")
    assert "object get" not in out and "--content-type" in out
    assert hoard.ok("help", "object", "put").stdout == out.encode()
    # the noun's help still lists every verb
    noun = hoard.ok("object", "--help").stdout.decode()
    assert "object get" in noun and "object put" in noun
    # a usage error shows that verb's usage only
    r = hoard("object", "put", "onlyone")
    assert r.returncode == 2
    err = r.stderr.decode()
    assert err.startswith("hoard: 'object put' takes arguments")
    assert "usage: hoard object put" in err and "object get" not in err
    r = hoard("object", "put", "a", "b/c", "--limit", "3")
    assert r.returncode == 2 and "usage: hoard object put" in r.stderr.decode()


def test_shard_create_help_required(hoard):
    out = hoard.ok("shard", "create", "--help").stdout.decode()
    first = out.splitlines()[0]
    assert "--template T --size SIZE" in first and "[--template" not in first
    assert "[--seed N]" in first
    assert re.search(r"--template T\s+\(required\)", out)
    assert re.search(r"--size SIZE\s+\(required\)", out)


def test_json_errors(hoard, bkt):
    r = hoard("--json", "object", "get", bkt + "/nope", "-")
    assert r.returncode == 1 and r.stdout == b""
    doc = json_err(r)
    assert doc["code"] == "NoSuchKey" and bkt + "/nope" in doc["error"]
    r = hoard("--json", "object", "put", "x")
    doc = json_err(r)
    assert (doc["code"], doc["exit"]) == ("Usage", 2)
    assert doc["usage"].startswith("hoard object put FILE|DIR|- B/O")
    r = hoard("--json", "bucket", "ls", "--endpoint", "http://127.0.0.1:1", endpoint=False)
    doc = json_err(r)
    assert (doc["code"], doc["exit"]) == ("Connection", 3)
    r = hoard("--json", "nosuchnoun")
    assert json_err(r)["code"] == "Usage"
    # without --json: the plain line
    r = hoard("object", "get", bkt + "/nope", "-")
    assert r.returncode == 1
    assert r.stderr.decode().startswith("hoard: object get %s/nope: NoSuchKey" % bkt)


# ---- many objects: recursive put/get, rm by prefix/template, sync ----------------------


def make_tree(root):
    """A small directory tree {relative path: bytes}, written under root."""
    files = {"f%d.bin" % i: helpers.pattern_bytes(50000 * i + 7, i) for i in range(1, 6)}
    files.update({"a/b/deep.txt": b"deep\n", "a/empty": b"", "sp ace/ü.txt": b"unicode"})
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return files


def read_tree(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_recursive_put_get(hoard, bkt, tmp_path):
    files = make_tree(tmp_path / "src")
    r = hoard.ok("object", "put", str(tmp_path / "src"), bkt + "/up", "-j", "3",
                 env={"HOARD_PROGRESS": "1"})
    assert r.stdout.decode().startswith("object put: 8 uploaded"), r.stdout
    # one progress line for the whole transfer, its totals right from the first update
    draws = [d.split("\x1b[K")[0].strip() for d in r.stderr.decode().split("\r") if d.strip()]
    total = sum(len(v) for v in files.values())
    assert draws, r.stderr
    for d in draws:
        m = re.match(r"(\d+) / 8 objects\s+(\S+ \S+) / (\S+ \S+)", d)
        assert m, draws
    assert draws[-1].startswith("8 / 8 objects")
    m = re.match(r"8 / 8 objects\s+(\S+ \S+) / (\S+ \S+)\s+100%", draws[-1])
    assert m and m.group(1) == m.group(2), draws[-1]  # every byte counted once
    assert names(hoard, bkt) == sorted("up/" + k for k in files)
    for k, v in files.items():
        assert hoard.ok("object", "get", "%s/up/%s" % (bkt, k), "-").stdout == v
    # -r: every object under the prefix, into DIR, names below the prefix
    r = hoard.ok("object", "get", "-r", bkt + "/up/", str(tmp_path / "d0"), "-j8",
                 env={"HOARD_PROGRESS": "1"})
    last = [d.split("\x1b[K")[0].strip() for d in r.stderr.decode().split("\r") if d.strip()][-1]
    m = re.match(r"8 / 8 objects\s+(\S+ \S+) / (\S+ \S+)\s+100%", last)
    assert m and m.group(1) == m.group(2), last
    doc = hoard.json("object", "get", "-r", bkt + "/up/", str(tmp_path / "down"), "-j8")
    assert (doc["downloaded"], doc["failed"], doc["bytes"]) == (len(files), 0, total)
    assert read_tree(tmp_path / "down") == files
    assert not list((tmp_path / "down").rglob("*.tmp"))
    # a prefix without the slash works the same; -j is checked
    doc = hoard.json("object", "get", "--recursive", bkt + "/up/a", str(tmp_path / "d2"))
    assert read_tree(tmp_path / "d2") == {"b/deep.txt": b"deep\n", "empty": b""}
    r = hoard("object", "get", "-r", bkt + "/up", str(tmp_path / "d3"), "-j", "0")
    assert r.returncode == 2 and b"-j/--jobs" in r.stderr


def test_recursive_get_error_exit(hoard, bkt, tmp_path):
    _ = make_tree(tmp_path / "src")
    hoard.ok("object", "put", str(tmp_path / "src"), bkt)
    (tmp_path / "down").mkdir()
    (tmp_path / "down" / "a").write_bytes(b"a file where a directory must go")
    r = hoard("object", "get", "-r", bkt, str(tmp_path / "down"))
    assert r.returncode == 1
    err = r.stderr.decode()
    assert "cannot create the directories of" in err and "2 of 8 operations failed" in err, err
    assert (tmp_path / "down" / "f1.bin").exists()


def test_rm_prefix_and_template(hoard, bkt):
    for i in range(12):
        hoard.ok("object", "put", "-", "%s/shard-%04d.tar" % (bkt, i), input=b"x")
    hoard.ok("object", "put", "-", bkt + "/keep/one", input=b"k")
    hoard.ok("object", "put", "-", bkt + "/keep2", input=b"k")
    doc = hoard.json("object", "rm", bkt, "--template", "shard-{0000..0009}.tar", "-j", "4")
    assert (doc["removed"], doc["missing"], doc["failed"]) == (10, 0, 0)
    assert names(hoard, bkt) == ["keep/one", "keep2", "shard-0010.tar", "shard-0011.tar"]
    # names that are not there are counted, not errors
    out = hoard.ok("object", "rm", bkt, "--template", "shard-{0010..0013}.tar").stdout.decode()
    assert out.startswith("object rm: 2 removed, 2 not found"), out
    out = hoard.ok("object", "rm", bkt, "--prefix", "keep/").stdout.decode()
    assert out.startswith("object rm: 1 removed"), out
    assert names(hoard, bkt) == ["keep2"]
    r = hoard("object", "rm", bkt, "--template", "a-{1..")
    assert r.returncode == 2 and b"bad --template" in r.stderr
    r = hoard("object", "rm", bkt + "/x", "--prefix", "k")
    assert r.returncode == 2


def test_sync_both_ways(hoard, bkt, tmp_path):
    src = tmp_path / "src"
    files = make_tree(src)
    dst = "hoard://%s/mirror" % bkt
    doc = hoard.json("sync", str(src), dst)
    assert (doc["direction"], doc["uploaded"], doc["unchanged"]) == ("up", 8, 0)
    doc = hoard.json("sync", str(src), dst)
    assert (doc["uploaded"], doc["unchanged"]) == (0, 8)
    # a changed size, a new file, a removed file (--delete)
    (src / "f1.bin").write_bytes(b"changed")
    (src / "new.txt").write_bytes(b"new")
    (src / "f2.bin").unlink()
    doc = hoard.json("sync", str(src), dst)
    assert (doc["uploaded"], doc["removed"]) == (2, 0)
    assert "mirror/f2.bin" in names(hoard, bkt)
    doc = hoard.json("sync", str(src), dst, "--delete")
    assert (doc["uploaded"], doc["removed"]) == (0, 1)
    want = read_tree(src)
    assert names(hoard, bkt) == sorted("mirror/" + k for k in want)
    # down: into a new directory, then nothing to do, then --delete of a local extra
    down = tmp_path / "down"
    doc = hoard.json("sync", dst, str(down), "-j", "2")
    assert (doc["direction"], doc["downloaded"]) == ("down", len(want))
    assert read_tree(down) == want
    doc = hoard.json("sync", dst, str(down))
    assert (doc["downloaded"], doc["unchanged"]) == (0, len(want))
    (down / "extra").write_bytes(b"e")
    hoard.ok("object", "put", "-", bkt + "/mirror/f3.bin", input=b"replaced upstream")
    doc = hoard.json("sync", dst, str(down), "--delete")
    assert (doc["downloaded"], doc["removed_local"]) == (1, 1)
    assert read_tree(down) == {**want, "f3.bin": b"replaced upstream"}
    r = hoard("sync", str(src), str(down))
    assert r.returncode == 2 and b"one directory and one hoard://" in r.stderr


# ---- S3-backed buckets: ls --cached, CACHED column -------------------------------------


def cloud_bucket(cl, s3rver, objects):  # noqa: F811
    name = "cvs-" + uuid.uuid4().hex[:10]
    c = s3rver.client()
    c.create_bucket(Bucket=name)
    for k, v in objects.items():
        c.put_object(Bucket=name, Key=k, Body=v)
    return cl.create_cloud_bucket(name, s3rver.url, "s3rver")


def cached_set(cl, b):
    return {e["name"] for e in cl.listing(b, cached="true", limit=10000)["entries"]}


def test_ls_cached_column(cl, hoard, s3rver):  # noqa: F811
    objs = {"a.bin": b"a" * 100, "b.bin": b"b" * 2000, "d/c.bin": b"c"}
    b = cloud_bucket(cl, s3rver, objs)
    assert hoard.ok("object", "get", b + "/b.bin", "-").stdout == objs["b.bin"]
    helpers.wait_until(lambda: cached_set(cl, b) == {"b.bin"}, timeout=20, what="b.bin cached")
    lines = hoard.ok("object", "ls", b).stdout.decode().splitlines()
    assert lines[0].split() == ["NAME", "SIZE", "CACHED", "MODIFIED"]
    rows = {ln.split()[0]: ln.split() for ln in lines[1:]}
    assert rows["b.bin"][3] == "yes" and rows["a.bin"][3] == "no" and rows["d/c.bin"][3] == "no"
    doc = hoard.json("object", "ls", b)
    assert {e["name"]: e["cached"] for e in doc["entries"]} == \
        {"a.bin": False, "b.bin": True, "d/c.bin": False}
    doc = hoard.json("object", "ls", b, "--cached")
    assert [e["name"] for e in doc["entries"]] == ["b.bin"]
    lines = hoard.ok("object", "ls", b, "--cached").stdout.decode().splitlines()
    assert [ln.split()[0] for ln in lines[1:]] == ["b.bin"]


def test_ls_plain_bucket_has_no_cached_column(hoard, bkt):
    hoard.ok("object", "put", "-", bkt + "/x", input=b"x")
    lines = hoard.ok("object", "ls", bkt).stdout.decode().splitlines()
    assert lines[0].split() == ["NAME", "SIZE", "MODIFIED"]


# ---- du ----------------------------------------------------------------------------------


def test_du_plain_and_s3_backed(cl, hoard, bkt, s3rver, tmp_path):  # noqa: F811
    files = make_tree(tmp_path / "src")
    hoard.ok("object", "put", str(tmp_path / "src"), bkt)
    total = sum(len(v) for v in files.values())
    doc = hoard.json("bucket", "du", bkt)["buckets"][0]
    assert (doc["bucket"], doc["provider"], doc["objects"], doc["bytes"]) == \
        (bkt, "ais", len(files), total)
    assert "cached_bytes" not in doc and doc["errors"] == 0
    tids = set(cl.smap()["tmap"])
    assert set(doc["targets"]) == tids
    mps = [m for t in doc["targets"].values() for m in t["mountpaths"]]
    assert len(mps) == 2 * len(tids)  # every mountpath, those without objects too
    assert sum(m["objects"] for m in mps) == len(files)
    assert sum(m["bytes"] for m in mps) == total
    # S3-backed: the upstream's totals, and what is cached
    objs = {"a.bin": b"a" * 100, "b.bin": b"b" * 2000, "d/c.bin": b"c"}
    b = cloud_bucket(cl, s3rver, objs)
    hoard.ok("object", "get", b + "/b.bin", "-")
    helpers.wait_until(lambda: cached_set(cl, b) == {"b.bin"}, timeout=20, what="b.bin cached")
    doc = hoard.json("bucket", "du", b)["buckets"][0]
    assert (doc["provider"], doc["objects"], doc["bytes"]) == ("aws", 3, 2101)
    assert (doc["cached_objects"], doc["cached_bytes"]) == (1, 2000)
    # the tables: one row per bucket, one per target mountpath; every bucket without names
    out = hoard.ok("bucket", "du", bkt, b).stdout.decode()
    top, mp = out.split("\n\n")
    rows = [ln.split() for ln in top.splitlines()]
    assert rows[0] == ["BUCKET", "PROVIDER", "OBJECTS", "SIZE", "CACHED", "OBJECTS", "CACHED"]
    assert rows[1][:3] == [bkt, "ais", str(len(files))] and rows[1][-2:] == ["-", "-"]
    assert rows[2][:3] == [b, "aws", "3"] and rows[2][5:] == ["1", "2.0", "KiB"]
    assert len(mp.splitlines()) == 1 + 2 * 2 * len(tids)
    alls = [d["bucket"] for d in hoard.json("bucket", "du")["buckets"]]
    assert bkt in alls and b in alls
    r = hoard("--json", "bucket", "du", "nosuch-" + uuid.uuid4().hex[:6])
    assert r.returncode == 1 and json_err(r)["code"] == "NoSuchBucket"


# ---- config profiles and completion -----------------------------------------------------


def write_config(path, cl, default=None):
    doc = {"profiles": {
        "good": {"endpoint": cl.url, "access_key": C_KEYS[0], "secret_key": C_KEYS[1]},
        "badkey": {"endpoint": cl.url, "access_key": C_KEYS[0], "secret_key": "wrong-secret"},
        "nowhere": {"endpoint": "http://127.0.0.1:1"},
    }}
    if default:
        doc["default"] = default
    path.write_text(json.dumps(doc))
    os.chmod(path, 0o600)
    return str(path)


def test_config_profiles(cl, hoard, bkt, tmp_path):
    cfg = write_config(tmp_path / "config", cl, default="nowhere")
    env = {"HOARD_CONFIG": cfg}
    # no --endpoint, no AWS_* keys: all from the profile
    r = hoard("--profile", "good", "--json", "bucket", "ls", env=env, endpoint=False,
              creds=False)
    assert r.returncode == 0, r.stderr
    assert bkt in [b["name"] for b in json.loads(r.stdout)["buckets"]]
    r = hoard("bucket", "ls", env=dict(env, HOARD_PROFILE="good"), endpoint=False, creds=False)
    assert r.returncode == 0 and bkt in r.stdout.decode(), r.stderr
    # the file's default profile, when none is named
    r = hoard("bucket", "ls", env=env, endpoint=False, creds=False)
    assert r.returncode == 3 and b"127.0.0.1:1" in r.stderr
    # --profile beats HOARD_PROFILE; a flag beats the profile
    r = hoard("--profile", "badkey", "bucket", "ls", env=dict(env, HOARD_PROFILE="good"),
              endpoint=False, creds=False)
    assert r.returncode == 1 and b"SignatureDoesNotMatch" in r.stderr, r.stderr
    r = hoard("--profile", "badkey", "--secret-key", C_KEYS[1], "bucket", "ls", env=env,
              endpoint=False, creds=False)
    assert r.returncode == 0, r.stderr
    # a named profile beats AWS_* in the environment; the default profile does not
    r = hoard("--profile", "good", "bucket", "ls", endpoint=False, creds=False,
              env=dict(env, AWS_ACCESS_KEY_ID="nobody", AWS_SECRET_ACCESS_KEY="x"))
    assert r.returncode == 0, r.stderr
    show = json.loads(hoard("--json", "config", "show", endpoint=False, creds=False,
                            env=dict(env, AWS_ACCESS_KEY_ID="envkey1",
                                     AWS_SECRET_ACCESS_KEY="x")).stdout)
    assert (show["profile"], show["profile_source"], show["endpoint"], show["access_key"]) == \
        ("nowhere", "config default", "http://127.0.0.1:1", "envk...")
    assert C_KEYS[1] not in json.dumps(show)
    out = hoard.ok("config", "profiles", env=env, endpoint=False).stdout.decode().split()
    assert out == ["good", "badkey", "nowhere"]
    # errors: unknown profile, no file, a broken file
    r = hoard("--json", "--profile", "nope", "bucket", "ls", env=env, endpoint=False)
    assert r.returncode == 2 and "no profile 'nope'" in json_err(r)["error"]
    r = hoard("--profile", "good", "bucket", "ls", endpoint=False,
              env={"HOARD_CONFIG": str(tmp_path / "missing")})
    assert r.returncode == 2 and b"no config file" in r.stderr
    (tmp_path / "broken").write_text("{not json")
    r = hoard("bucket", "ls", endpoint=False, env={"HOARD_CONFIG": str(tmp_path / "broken")})
    assert r.returncode == 2 and b"config file" in r.stderr
    # no config file and no profile named: the old behaviour
    hoard.ok("bucket", "ls", env={"HOARD_CONFIG": str(tmp_path / "missing")})
    # ~/.config/hoard/config via HOME, and XDG_CONFIG_HOME
    home = tmp_path / "home"
    (home / ".config" / "hoard").mkdir(parents=True)
    write_config(home / ".config" / "hoard" / "config", cl, default="good")
    r = hoard("bucket", "ls", endpoint=False, creds=False,
              env={"HOME": str(home), "HOARD_CONFIG": "", "XDG_CONFIG_HOME": ""})
    assert r.returncode == 0 and bkt in r.stdout.decode(), r.stderr


def complete(hoard, words, env=None):
    """COMPREPLY of the generated bash completion for the words typed so far."""
    script = hoard.ok("completion", "bash", endpoint=False).stdout.decode()
    line = " ".join("'%s'" % w for w in words)
    prog = script + "\nCOMP_WORDS=(%s); COMP_CWORD=%d; _hoard; printf '%%s\\n' \"${COMPREPLY[@]}\"\n" \
        % (line, len(words) - 1)
    e = dict(os.environ, PATH="%s:%s" % (BIN_DIR, os.environ["PATH"]), **(env or {}))
    r = __import__("subprocess").run(["bash", "--norc", "-c", prog], capture_output=True, env=e,
                                     cwd=hoard.cwd, timeout=60)
    assert r.returncode == 0, r.stderr
    return sorted(x for x in r.stdout.decode().split("\n") if x)


def test_completion_bash(cl, hoard, tmp_path):
    assert complete(hoard, ["hoard", "ob"]) == ["object"]
    assert {"bucket", "object", "sync", "prefetch", "completion", "config"} <= \
        set(complete(hoard, ["hoard", ""]))
    assert complete(hoard, ["hoard", "object", ""]) == ["get", "head", "ls", "put", "rm"]
    assert complete(hoard, ["hoard", "--json", "bucket", "d"]) == ["du"]
    assert complete(hoard, ["hoard", "object", "ls", "b", "--c"]) == ["--cached"]
    opts = complete(hoard, ["hoard", "shard", "create", "--"])
    assert "--template" in opts and "--size" in opts and "--endpoint" in opts
    assert "--cached" not in opts
    assert complete(hoard, ["hoard", "sync", "dir", "--d"]) == ["--delete"]
    (tmp_path / "somefile.txt").write_text("x")
    assert complete(hoard, ["hoard", "object", "put", "somef"]) == ["somefile.txt"]
    cfg = write_config(tmp_path / "config", cl)
    assert complete(hoard, ["hoard", "--profile", "b"], env={"HOARD_CONFIG": cfg}) == ["badkey"]
    r = hoard("completion", "zsh", endpoint=False)
    assert r.returncode == 2 and b"only 'bash'" in r.stderr


# ---- progress totals from the first update ----------------------------------------------


def progress_draws(stderr, marker):
    """The progress lines drawn in place (split at '\\r') that contain marker."""
    return [d.strip() for d in stderr.decode().replace("\n", "\r").split("\r")
            if marker in d]


def test_prefetch_progress_totals(cl, hoard, s3rver):  # noqa: F811
    objs = {"p/%03d.bin" % i: helpers.pattern_bytes(3000 + i, i) for i in range(40)}
    objs.update({"other/x": b"x"})
    b = cloud_bucket(cl, s3rver, objs)
    total = sum(len(v) for k, v in objs.items() if k.startswith("p/"))
    r = hoard("prefetch", b, "--prefix", "p/", "--wait", env={"HOARD_PROGRESS": "1"})
    assert r.returncode == 0, r.stderr
    draws = progress_draws(r.stderr, " objects")
    print(r.stderr.decode(), r.stdout.decode())
    assert draws, r.stderr
    for d in draws:  # the totals are right from the first line on
        assert re.search(r"\d+ / 40 objects", d), draws
    out = r.stdout.decode()
    assert re.match(r"prefetch-\S+ done in .*: 40 objects, .* 0 errors", out), out
    assert cached_set(cl, b) == {k for k in objs if k.startswith("p/")}
    del total


def test_shard_create_progress_totals(cl, hoard, bkt):
    out = "cvo-" + uuid.uuid4().hex[:10]
    hoard.ok("bucket", "create", out)
    for i in range(30):
        for ext, n in (("jpg", 3000), ("cls", 10)):
            hoard.ok("object", "put", "-", "%s/s/%05d.%s" % (bkt, i, ext),
                     input=helpers.pattern_bytes(n + i, i))
    r = hoard("--json", "shard", "create", bkt + "/s/", out, "--template", "t-{000..}.tar",
              "--size", "16KiB", env={"HOARD_PROGRESS": "1"})
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    plan = doc["created"]
    assert plan["objects"] == 60 and plan["shards"] > 2, plan
    draws = progress_draws(r.stderr, "shard ")
    assert draws, r.stderr
    for d in draws:
        m = re.search(r": (\d+)/(\d+) objects \(.* / (.*)\), \d+ samples, (\d+)/(\d+) shards", d)
        assert m, d
        assert (int(m.group(2)), int(m.group(5))) == (60, plan["shards"]), d
    assert draws[-1].startswith("shard %s: 60/60 objects" % doc["id"]), draws


class JobScript:
    """A scripted proxy: POST /v1/jobs answers `created`; GET /v1/jobs/ID answers the docs in
    turn (the last repeats); GET /v1/buckets/B answers `listing`."""

    def __init__(self, created, docs, listing=None):
        self.created, self.docs, self.listing, self.n = created, docs, listing, 0

    def __call__(self, rec):
        js = {"Content-Type": "application/json"}
        if rec["method"] == "POST":
            return 201, js, json.dumps(self.created).encode()
        if rec["path"].startswith("/v1/buckets/"):
            return 200, js, json.dumps(self.listing).encode()
        d = self.docs[min(self.n, len(self.docs) - 1)]
        self.n += 1
        return 200, js, json.dumps(d).encode()


def job(jid, kind, state, objs, tobjs, nbytes, tbytes, stats=None):
    t = {"id": jid, "kind": kind, "state": state, "objects": objs, "total_objects": tobjs,
         "bytes": nbytes, "total_bytes": tbytes, "error_count": 0, "errors": [],
         "started_ms": 1, "finished_ms": 0 if state == "running" else 2, "stats": stats or {}}
    return dict(t, nodes=3, bucket="b", args={}, targets={"t1": t})


@pytest.fixture
def scripted(tmp_path):
    started = []

    def start(script):
        s = FakeServer(script, answer_early=False)
        started.append(s)
        return Hoard(SimpleNamespace(url=s.url, bin_dir=BIN_DIR), tmp_path)

    yield start
    for s in started:
        s.close()


def test_shard_progress_first_update_scripted(scripted):
    """The merged job view first knows one target's share (20 of 60 objects, 2 of 6 shards):
    the progress line shows the plan's totals from the first update."""
    st = lambda done, total: {"samples_done": done, "shards_done": 0, "shards_skipped": 0,  # noqa
                              "shards_total": total, "tar_bytes_written": 0}
    h = scripted(JobScript(
        {"id": "s1", "kind": "shard", "manifest": "m.json", "shards": 6, "samples": 30,
         "objects": 60, "bytes": 60000},
        [job("s1", "shard", "running", 0, 20, 0, 20000, st(0, 2)),
         job("s1", "shard", "running", 30, 60, 30000, 60000, st(15, 6)),
         job("s1", "shard", "done", 60, 60, 60000, 60000, st(30, 6))]))
    r = h("shard", "create", "b", "out", "--template", "t-{0..}.tar", "--size", "10KiB",
          env={"HOARD_PROGRESS": "1"})
    assert r.returncode == 0, r.stderr
    draws = progress_draws(r.stderr, "shard s1")
    assert len(draws) >= 3, draws
    assert draws[0].startswith("shard s1: 0/60 objects (0 B / 58.6 KiB), 0 samples, 0/6 shards")
    assert all("/60 objects" in d and "/6 shards" in d for d in draws), draws


def test_prefetch_prefix_progress_first_update_scripted(scripted):
    """prefetch --prefix: the job has no total while the targets list the upstream; the CLI's
    own listing gives it from the first line."""
    ents = [{"name": "p/%02d" % i, "size": 1024, "etag": "x", "mtime": "2026-01-01T00:00:00Z"}
            for i in range(40)]
    h = scripted(JobScript(
        {"id": "pf1", "kind": "prefetch"},
        [job("pf1", "prefetch", "running", 0, 0, 0, 0),
         job("pf1", "prefetch", "running", 10, 0, 10240, 0),
         job("pf1", "prefetch", "done", 40, 0, 40960, 0,
             {"fetched": 40, "already_cached": 0, "failed": 0})],
        {"entries": ents, "prefixes": []}))
    r = h("prefetch", "b", "--prefix", "p/", "--wait", env={"HOARD_PROGRESS": "1"})
    assert r.returncode == 0, r.stderr
    draws = progress_draws(r.stderr, "pf1 running")
    assert len(draws) >= 2, r.stderr
    assert re.search(r"0 / 40 objects\s+0 B / 40.0 KiB\s+0%", draws[0]), draws
    assert all("/ 40 objects" in d for d in draws), draws
    # the summary as docs/cli.md shows it
    assert r.stdout.decode() == ("pf1 done in 1 ms: 40 objects, 40.0 KiB, 0 errors "
                                 "(fetched 40, already cached 0, failed 0)\n"), r.stdout


# ---- tar members: --archpath errors and batch get ---------------------------------------


def test_archpath_errors_name_the_shard(hoard, bkt, tmp_path):
    import io
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for n in ("a/1.jpg", "a/2.jpg"):
            ti = tarfile.TarInfo(n)
            ti.size = 3
            tf.addfile(ti, io.BytesIO(b"abc"))
    (tmp_path / "s.tar").write_bytes(buf.getvalue())
    hoard.ok("object", "put", str(tmp_path / "s.tar"), bkt + "/sh/s.tar")
    r = hoard("object", "get", bkt + "/sh/s.tar", "-", "--archpath", "nope")
    assert r.returncode == 1 and r.stdout == b""
    assert r.stderr.decode() == (
        "hoard: object get %s/sh/s.tar (member nope): NoSuchKey: Archive %s/sh/s.tar "
        "(2 members) has no member 'nope'.\n" % (bkt, bkt))
    doc = json_err(hoard("--json", "object", "get", bkt + "/sh/s.tar", "x", "--archpath", "a"))
    assert doc["code"] == "NoSuchKey" and "%s/sh/s.tar (member a)" % bkt in doc["error"]
    assert hoard.ok("object", "get", bkt + "/sh/s.tar", "-", "--archpath", "a/2.jpg").stdout \
        == b"abc"
    r = hoard("object", "get", bkt + "/sh/none.tar", "-", "--archpath", "x")
    assert r.returncode == 1 and ("%s/sh/none.tar (member x): NoSuchKey" % bkt) in \
        r.stderr.decode()
    # a fail-fast batch stops at its first missing entry: named, exit 1, no file left
    lst = tmp_path / "l"
    lst.write_text("%s/sh/s.tar\ta/1.jpg\n%s/sh/s.tar\tnope\n%s/missing\n" % (bkt, bkt, bkt))
    r = hoard("batch", "get", str(lst), str(tmp_path / "o.tar"))
    assert r.returncode == 1, r.stderr
    assert r.stderr.decode() == (
        "hoard: batch get: entry 2 (%s/sh/s.tar member nope): NoSuchKey: Archive %s/sh/s.tar "
        "(2 members) has no member 'nope'.\n" % (bkt, bkt)), r.stderr
    assert not (tmp_path / "o.tar").exists() and not (tmp_path / "o.tar.tmp").exists()
    lst.write_text("%s/sh/s.tar\ta/1.jpg\n%s/missing\n" % (bkt, bkt))
    r = hoard("--json", "batch", "get", str(lst), str(tmp_path / "o.tar"))
    doc = json_err(r)
    assert doc["code"] == "NoSuchKey" and doc["error"].startswith(
        "batch get: entry 2 (%s/missing)" % bkt), doc
    # --continue-on-error still completes
    hoard.ok("batch", "get", str(lst), str(tmp_path / "o.tar"), "--continue-on-error")
    assert (tmp_path / "o.tar").exists()


# ---- bucket to bucket copy (a job) ------------------------------------------------------


def test_bucket_cp_job(cl, hoard, bkt, tmp_path, s3rver):  # noqa: F811
    files = make_tree(tmp_path / "src")
    hoard.ok("object", "put", str(tmp_path / "src"), bkt, "--content-type", "text/x-test")
    dst = "cvd-" + uuid.uuid4().hex[:10]
    hoard.ok("bucket", "create", dst)
    r = hoard("bucket", "cp", bkt, dst, "--wait", env={"HOARD_PROGRESS": "1"})
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert re.match(r"copy-\S+ done in .*: 8 objects, .*, 0 errors \(copied \d+", out), out
    draws = progress_draws(r.stderr, " running ")
    assert all("/ 8 objects" in d for d in draws), draws  # totals from the first line
    hoard.ok("object", "get", "-r", dst, str(tmp_path / "got"))
    assert read_tree(tmp_path / "got") == files
    src_doc = {e["name"]: e for e in hoard.json("object", "ls", bkt)["entries"]}
    dst_doc = {e["name"]: e for e in hoard.json("object", "ls", dst)["entries"]}
    assert {k: (v["etag"], v["size"]) for k, v in dst_doc.items()} == \
        {k: (v["etag"], v["size"]) for k, v in src_doc.items()}
    assert hoard.json("object", "head", bkt + "/f1.bin")["content_type"] == "text/x-test"
    assert hoard.json("object", "head", dst + "/f1.bin")["content_type"] == "text/x-test"
    # again: nothing breaks, still 8; a prefix copies only its part
    doc = hoard.json("bucket", "cp", bkt, dst, "--wait")
    assert (doc["state"], doc["objects"], doc["error_count"]) == ("done", 8, 0)
    dst2 = "cvd-" + uuid.uuid4().hex[:10]
    hoard.ok("bucket", "create", dst2)
    doc = hoard.json("bucket", "cp", bkt, dst2, "--prefix", "a/", "--wait")
    assert (doc["state"], doc["objects"]) == ("done", 2), doc
    assert names(hoard, dst2) == ["a/b/deep.txt", "a/empty"]
    # without --wait: the id, then job wait
    out = hoard.ok("bucket", "cp", bkt, dst2).stdout.decode()
    jid = re.match(r"copy job (\S+) started", out).group(1)
    hoard.ok("job", "wait", jid)
    assert len(names(hoard, dst2)) == 8
    # errors: a missing bucket, the same bucket twice
    r = hoard("--json", "bucket", "cp", bkt, "nosuch-" + uuid.uuid4().hex[:6])
    assert r.returncode == 1 and json_err(r)["code"] == "NoSuchBucket"
    r = hoard("bucket", "cp", bkt, bkt)
    assert r.returncode == 2
    cb = cloud_bucket(cl, s3rver, {"x": b"x"})
    r = hoard("--json", "bucket", "cp", bkt, cb)
    assert r.returncode == 1 and json_err(r)["code"] == "NotImplemented"
    # the job API refuses bad arguments before any target starts (a client posting directly)
    before = names(hoard, dst2)
    for args, status in (({"to": cb}, 501), ({"to": bkt}, 400), ({}, 400), ({"to": 5}, 400),
                         ({"to": "nosuch-" + uuid.uuid4().hex[:6]}, 404),
                         ({"to": dst2, "prefix": ["a/"]}, 400),
                         ({"to": dst2, "prefix": 7}, 400)):
        r = cl.api("POST", "/v1/jobs", body={"kind": "copy", "bucket": bkt, "args": args})
        assert r.status_code == status, (args, r.status_code, r.text)
    r = cl.api("POST", "/v1/jobs", body={"kind": "copy", "bucket": "nosuch-" + uuid.uuid4().hex[:6],
                                         "args": {"to": dst2}})
    assert r.status_code == 404, r.text
    for jid in ("a/b", "a?b", "", "x" * 49, 7):
        r = cl.api("POST", "/v1/jobs", body={"kind": "copy", "bucket": bkt, "id": jid,
                                             "args": {"to": dst2}})
        assert r.status_code == 400 and "job id" in r.json()["message"], (jid, r.text)
    assert names(hoard, dst2) == before
