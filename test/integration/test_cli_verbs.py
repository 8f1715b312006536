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
from test_cli import BIN_DIR, Hoard


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
    assert out.startswith("usage: hoard object put FILE|- B/O")
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
    assert doc["usage"].startswith("hoard object put FILE|- B/O")
    r = hoard("--json", "bucket", "ls", "--endpoint", "http://127.0.0.1:1", endpoint=False)
    doc = json_err(r)
    assert (doc["code"], doc["exit"]) == ("Connection", 3)
    r = hoard("--json", "nosuchnoun")
    assert json_err(r)["code"] == "Usage"
    # without --json: the plain line
    r = hoard("object", "get", bkt + "/nope", "-")
    assert r.returncode == 1
    assert r.stderr.decode().startswith("hoard: object get %s/nope: NoSuchKey" % bkt)
