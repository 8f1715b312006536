"""Sharding (issue 6): on-server shard jobs into WebDataset tars, the shard index, member
reads (native and S3), batch GET, the hoard CLI commands, and the PyTorch data-loader example
(docs/examples/hoard_webdataset.py) -- against a real cluster (1 proxy + 3 targets, cluster
secret, SigV4 keys) on loopback.

The dataset: 20,000 samples x 3 files (.jpg 100 B - 6 KiB, three of 1.5 MiB; .cls; .json),
20 of them with long unicode names (pax headers), uploaded once per module.
"""
import collections
import hashlib
import io
import json
import os
import random
import sqlite3
import subprocess
import tarfile
import time
import urllib.parse

import boto3
import pytest
import requests
from botocore.config import Config

import helpers
import shardkit as sk
from conftest import ACCESS_KEY, BIN_DIR, REPO, SECRET_KEY
from test_cluster import hrw_owner, node_headers, target_keys

SRC = "shard-src"
KEYS = sk.sample_keys()
NAMES = sk.dataset_names(KEYS)


@pytest.fixture(scope="module")
def cl(tmp_path_factory, log_dir):
    c = sk.start_cluster(tmp_path_factory, log_dir)
    yield c
    sk.stop_cluster(c)


@pytest.fixture(scope="module")
def proxy(cl):
    return cl.proxies[0]


@pytest.fixture(scope="module")
def dataset(cl, proxy):
    """The 60,000-object input bucket (uploaded once)."""
    sk.create_bucket(proxy, SRC)
    t0 = time.monotonic()
    sk.bulk_put(cl, SRC, NAMES)
    print("uploaded %d objects in %.1fs" % (len(NAMES), time.monotonic() - t0))
    return SRC


def fresh_bucket(proxy, prefix="out"):
    name = helpers.unique_bucket_name(prefix)
    sk.create_bucket(proxy, name)
    return name


def tar_entry(name, size):
    """Bytes a member takes (header(s) + padded data), as hoard and Python write it."""
    pad = (size + 511) // 512 * 512
    hdr = 512
    raw = name.encode()
    if len(raw) != len(name) or len(raw) > 100:  # pax for unicode or long names
        fits = False
        if len(raw) == len(name) and len(raw) <= 255:
            for i in range(max(0, len(raw) - 101), len(raw)):
                if raw[i:i + 1] == b"/":
                    fits = i <= 155 and i + 1 < len(raw)
                    break
        if not fits:
            rec = len(raw) + 8
            rec += len(str(rec + len(str(rec))))
            hdr += 512 + (rec + 511) // 512 * 512
    return hdr + pad


def verify_sharding(proxy, out, created, final, shard_size, names, ordered=True):
    """The checks of issue 6 item 7 for one finished shard job. Returns {shard: tar bytes}."""
    assert final["state"] == "done", final
    assert final["error_count"] == 0, final["errors"]
    st = final["stats"]
    assert final["objects"] == len(names) == final["total_objects"]
    assert st["shards_total"] == created["shards"] == st["shards_done"] + st["shards_skipped"]
    assert st["samples_done"] == created["samples"]
    shards = sorted(n for n in sk.list_names(proxy, out) if n.endswith(".tar"))
    assert len(shards) == created["shards"]
    data = sk.fetch_shards(proxy, out, shards)
    seen = collections.Counter()
    key_seq, shard_of_key = [], {}
    sizes = {}
    for sname in shards:
        members = sk.read_tar(data[sname])  # valid for Python's tarfile
        sizes[sname] = len(data[sname])
        last = None
        for mname, body, _off in members:
            seen[mname] += 1
            assert body == sk.content(mname), "bytes differ for %s in %s" % (mname, sname)
            k = sk.key_of(mname)
            if k != last:  # a new sample starts: it must not have appeared before anywhere
                assert k not in shard_of_key, "sample %s split or repeated (%s, %s)" % (
                    k, shard_of_key[k], sname)
                shard_of_key[k] = sname
                key_seq.append(k)
                last = k
    # every input file exactly once
    assert set(seen) == set(names) and all(v == 1 for v in seen.values())
    if ordered:
        assert key_seq == sorted(key_seq)
    # shard sizes: at least the target, and less than the target plus the last sample
    max_sample = max(sum(tar_entry(n, len(sk.content(n))) for n in (k + ".jpg", k + ".cls",
                                                                        k + ".json"))
                     for k in set(sk.key_of(n) for n in names))
    for sname in shards[:-1]:
        assert shard_size + 1024 <= sizes[sname] < shard_size + max_sample + 1024, (
            sname, sizes[sname], shard_size, max_sample)
    assert sizes[shards[-1]] <= shard_size + max_sample + 1024
    return data


@pytest.mark.parametrize("shard_size", [1 << 20, 4 << 20, 16 << 20])
def test_shard_dataset_at_several_sizes(proxy, cl, dataset, shard_size, tmp_path):
    """20,000 samples x 3 files sharded at 1, 4 and 16 MiB: every file exactly once, samples
    adjacent and never split, in key order, sizes within one sample of the target, tars valid
    for tarfile and GNU tar with identical bytes, the manifest and the shard index right."""
    out = fresh_bucket(proxy)
    t0 = time.monotonic()
    created, final = sk.shard(proxy, SRC, {"output_bucket": out, "shard_size": shard_size,
                                           "template": "train-{000000..}.tar"})
    secs = time.monotonic() - t0
    print("sharded %d objects into %d shards of %d bytes in %.1fs" % (
        len(NAMES), created["shards"], shard_size, secs))
    assert created["objects"] == len(NAMES) and created["samples"] == len(KEYS)
    data = verify_sharding(proxy, out, created, final, shard_size, NAMES)
    names = sorted(data)
    assert names[0] == "train-000000.tar" and names[-1] == "train-%06d.tar" % (len(names) - 1)

    # GNU tar reads every shard and extracts identical bytes
    for n in names:
        (tmp_path / n).write_bytes(data[n])
    for n in names:
        p = subprocess.run(["tar", "-tf", str(tmp_path / n)], capture_output=True)
        assert p.returncode == 0, p.stderr
        assert p.stdout.decode().splitlines() == [m[0] for m in sk.read_tar(data[n])]
    xdir = tmp_path / "x"
    xdir.mkdir()
    last = names[-1]  # holds the long unicode names
    p = subprocess.run(["tar", "-xf", str(tmp_path / last), "-C", str(xdir)],
                       capture_output=True)
    assert p.returncode == 0, p.stderr
    for mname, body, _ in sk.read_tar(data[last]):
        assert (xdir / mname).read_bytes() == body
    assert any("ünïcödé" in m[0] for m in sk.read_tar(data[last]))

    # the manifest records which sample went to which shard, and who wrote it
    man = json.loads(sk.api("GET", sk.obj_url(proxy, out, created["manifest"])).content)
    assert man["totals"] == {"objects": len(NAMES), "bytes": sum(
        len(sk.content(n)) for n in NAMES), "samples": len(KEYS), "shards": len(names)}
    ids = sk.target_ids(cl)
    held = {tid: target_keys(t, out) for tid, t in ids.items()}
    for sh in man["shards"]:
        members = [m[0] for m in sk.read_tar(data[sh["name"]])]
        assert members == [o["name"] for s in sh["samples"] for o in s["objects"]]
        assert [s["key"] for s in sh["samples"]] == list(dict.fromkeys(
            sk.key_of(m) for m in members))
        assert sh["target"] == hrw_owner("ais/@#/%s/%s" % (out, sh["name"]), list(ids))
        assert sh["name"] in held[sh["target"]]

    # the shard index in the catalog matches the archive (offsets for ranged reads)
    one = names[len(names) // 2]
    r = sk.api("GET", sk.obj_url(proxy, out, one, "?members"))
    assert r.status_code == 200, r.text
    listed = [(m["name"], m["size"], m["offset"]) for m in r.json()["members"]]
    assert listed == [(n, len(b), off) for n, b, off in sk.read_tar(data[one])]


def test_seeded_shuffle_reproducible(proxy, dataset):
    """The same seed gives the same shards (across jobs); another seed another order; no
    seed: sorted. Samples still never split."""
    args = {"prefix": "d/01", "shard_size": 64 << 10, "template": "s-{0000..}.tar"}
    names = [n for n in NAMES if n.startswith("d/01")]
    runs = {}
    for tag, seed in (("a", 7), ("b", 7), ("c", 8)):
        out = fresh_bucket(proxy, "shuf" + tag)
        created, final = sk.shard(proxy, SRC, dict(args, output_bucket=out, seed=seed))
        data = verify_sharding(proxy, out, created, final, 64 << 10, names, ordered=False)
        runs[tag] = [[m[0] for m in sk.read_tar(data[s])] for s in sorted(data)]
        man = json.loads(sk.api("GET", sk.obj_url(proxy, out, created["manifest"])).content)
        assert man["shuffle"] is True and man["seed"] == seed
    flat = [m for s in runs["a"] for m in s]
    assert runs["a"] == runs["b"]
    assert runs["a"] != runs["c"]
    keys = list(dict.fromkeys(sk.key_of(m) for m in flat))
    assert keys != sorted(keys) and sorted(keys) == sorted(set(sk.key_of(n) for n in names))


def test_member_reads_native_and_s3(proxy, dataset):
    """archpath reads through the proxy (307): bytes, Content-Length and Content-Type of the
    member; Range inside a member; 416; HEAD; 404 naming the member; S3 GetObject?archpath
    (boto3, relayed) byte-identical too."""
    out = fresh_bucket(proxy)
    created, final = sk.shard(proxy, SRC, {"prefix": "d/000", "output_bucket": out,
                                           "shard_size": 256 << 10,
                                           "template": "m-{000..}.tar"})
    assert final["state"] == "done", final
    shard0 = "m-000.tar"
    members = sk.read_tar(sk.get_shard(proxy, out, shard0))
    for mname, body, _ in members[:30]:
        r = sk.api("GET", sk.obj_url(proxy, out, shard0, "?archpath=" +
                                     urllib.parse.quote(mname, safe="")))
        assert r.status_code == 200, r.text
        assert r.content == body == sk.content(mname)
        assert int(r.headers["Content-Length"]) == len(body)
        want = {"jpg": "image/jpeg", "json": "application/json", "cls": "text/plain"}
        assert r.headers["Content-Type"] == want[mname.rsplit(".", 1)[1]]
    jpg = next(m for m in members if m[0].endswith(".jpg") and len(m[1]) > 1000)
    q = "?archpath=" + urllib.parse.quote(jpg[0], safe="")
    for rng, sl in (("bytes=0-9", slice(0, 10)), ("bytes=100-199", slice(100, 200)),
                    ("bytes=-17", slice(-17, None)), ("bytes=500-", slice(500, None))):
        r = sk.api("GET", sk.obj_url(proxy, out, shard0, q), headers={"Range": rng})
        assert r.status_code == 206, r.text
        assert r.content == jpg[1][sl]
        assert r.headers["Content-Range"].endswith("/%d" % len(jpg[1]))
    r = sk.api("GET", sk.obj_url(proxy, out, shard0, q),
               headers={"Range": "bytes=%d-" % len(jpg[1])})
    assert r.status_code == 416 and r.headers["Content-Range"] == "bytes */%d" % len(jpg[1])
    r = sk.api("HEAD", sk.obj_url(proxy, out, shard0, q))
    assert r.status_code == 200 and int(r.headers["Content-Length"]) == len(jpg[1])
    r = sk.api("GET", sk.obj_url(proxy, out, shard0, "?archpath=no%2Fsuch.jpg"))
    helpers.check_json_error(r, 404, "NoSuchKey")
    assert "no member 'no/such.jpg'" in r.json()["message"] and shard0 in r.json()["message"]
    r = sk.api("GET", sk.obj_url(proxy, out, shard0, "?archpath="))
    helpers.check_json_error(r, 400, "InvalidArgument")

    # S3: GetObject with ?archpath through the proxy's relay, boto3 adding the parameter
    s3 = boto3.session.Session().client(
        "s3", endpoint_url=proxy.url, region_name="us-east-1", aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                      retries={"total_max_attempts": 1, "mode": "standard"}))
    member = {"name": None}

    def add_archpath(request, **_):
        sep = "&" if "?" in request.url else "?"
        request.url += sep + "archpath=" + urllib.parse.quote(member["name"], safe="")

    s3.meta.events.register("before-sign.s3.GetObject", add_archpath)
    for mname, body, _ in members[:5] + [jpg]:
        member["name"] = mname
        got = s3.get_object(Bucket=out, Key=shard0)
        assert got["Body"].read() == body
        assert got["ContentLength"] == len(body)
    member["name"] = jpg[0]
    got = s3.get_object(Bucket=out, Key=shard0, Range="bytes=3-12")
    assert got["Body"].read() == jpg[1][3:13]
    member["name"] = "missing.bin"
    with pytest.raises(Exception) as ei:
        s3.get_object(Bucket=out, Key=shard0)
    assert helpers.client_error(ei)[:2] == (404, "NoSuchKey")


def catalog_rows(cluster, bucket, name, table):
    """Rows of the tar index tables for bucket/name's content file, on whichever target and
    mountpath holds it."""
    for t in cluster.targets:
        for mp in t.mountpaths:
            db = os.path.join(mp, "catalog.db")
            if not os.path.exists(db):
                continue
            c = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=10)
            try:
                row = c.execute("SELECT file FROM objects WHERE bucket=? AND name=?",
                                (bucket, name)).fetchone()
                if row:
                    return row[0], c.execute("SELECT * FROM %s WHERE file=?" % table,
                                             (row[0],)).fetchall()
            finally:
                c.close()
    return None, []


def make_tar(members, fmt=tarfile.PAX_FORMAT, extra=()):
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=fmt) as tf:
        for name, body in members:
            ti = tarfile.TarInfo(name)
            ti.size = len(body)
            tf.addfile(ti, io.BytesIO(body))
        for ti in extra:
            tf.addfile(ti)
    return bio.getvalue()


def put(proxy, bucket, name, body):
    r = sk.api("PUT", sk.obj_url(proxy, bucket, name), data=body)
    assert r.status_code == 200, r.text


def test_user_tar_indexed_on_first_access(cl, proxy):
    """A tar uploaded by a user (GNU and pax, long and unicode names, directories, links) has
    no index until a member is read; then the catalog holds its member table; an overwrite
    gets a fresh index and the old rows go with the old file."""
    b = fresh_bucket(proxy, "user")
    d = tarfile.TarInfo("dir")
    d.type = tarfile.DIRTYPE
    ln = tarfile.TarInfo("dir/link")
    ln.type = tarfile.SYMTYPE
    ln.linkname = "a.txt"
    long = "deep/" + "n" * 180 + "/ünï.bin"
    members = [("a.txt", b"hello"), ("./b/c.json", b'{"x": 1}'), (long, os.urandom(70000)),
               ("empty", b"")]
    for fmt in (tarfile.GNU_FORMAT, tarfile.PAX_FORMAT):
        put(proxy, b, "u.tar", make_tar(members, fmt, [d, ln]))
        _file, rows = catalog_rows(cl, b, "u.tar", "tar_members")
        assert rows == []  # not indexed before the first member access
        for name, body in members:
            want = name[2:] if name.startswith("./") else name  # leading ./ dropped
            r = sk.api("GET", sk.obj_url(proxy, b, "u.tar",
                                         "?archpath=" + urllib.parse.quote(want, safe="")))
            assert r.status_code == 200, (fmt, want, r.text)
            assert r.content == body
        f1, rows = catalog_rows(cl, b, "u.tar", "tar_members")
        assert sorted(r[1] for r in rows) == sorted(
            n[2:] if n.startswith("./") else n for n, _ in members)
        r = sk.api("GET", sk.obj_url(proxy, b, "u.tar", "?members"))
        assert r.json()["count"] == 4  # the directory and the symlink are not members
    # overwrite: new content, new index; the old file's rows are gone
    put(proxy, b, "u.tar", make_tar([("a.txt", b"second")]))
    r = sk.api("GET", sk.obj_url(proxy, b, "u.tar", "?archpath=a.txt"))
    assert r.content == b"second"
    f2, rows = catalog_rows(cl, b, "u.tar", "tar_members")
    assert f2 != f1 and [r[1] for r in rows] == ["a.txt"]
    for t in cl.targets:
        for mp in t.mountpaths:
            db = os.path.join(mp, "catalog.db")
            if os.path.exists(db):
                c = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
                assert c.execute("SELECT count(*) FROM tar_members WHERE file=?",
                                 (f1,)).fetchone()[0] == 0
                c.close()
    r = sk.api("DELETE", sk.obj_url(proxy, b, "u.tar"))
    assert r.status_code == 204
    for t in cl.targets:  # the trigger dropped the index with the row
        for mp in t.mountpaths:
            db = os.path.join(mp, "catalog.db")
            if os.path.exists(db):
                c = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
                for table in ("tar_members", "tar_index"):
                    assert c.execute("SELECT count(*) FROM %s WHERE file=?" % table,
                                     (f2,)).fetchone()[0] == 0
                c.close()


def test_malformed_tars_clear_errors(proxy):
    """Not a tar, a truncated tar, garbage headers: 400 InvalidArchive saying why, for member
    reads and listings; the objects themselves stay readable. A gzipped tar is recognised by
    its bytes, whatever its name, and read in order."""
    b = fresh_bucket(proxy, "bad")
    xbin = os.urandom(50000)
    good = make_tar([("x.bin", xbin), ("y.bin", b"y")])
    import gzip
    put(proxy, b, "gz.tar", gzip.compress(good))
    r = sk.api("GET", sk.obj_url(proxy, b, "gz.tar", "?archpath=x.bin"))
    assert r.status_code == 200 and r.content == xbin, r.text[:300]
    cases = {
        "text.tar": (b"just some text, not an archive\n" * 50, "not an uncompressed tar"),
        "trunc.tar": (good[:20000], "truncated"),
        "garbage.tar": (b"\x00" * 100 + os.urandom(2000), None),
    }
    for name, (body, why) in cases.items():
        put(proxy, b, name, body)
        for q in ("?archpath=x.bin", "?members"):
            r = sk.api("GET", sk.obj_url(proxy, b, name, q))
            helpers.check_json_error(r, 400, "InvalidArchive")
            msg = r.json()["message"]
            assert name in msg, msg
            if why:
                assert why in msg, msg
        assert sk.api("GET", sk.obj_url(proxy, b, name)).content == body


def batch(proxy, body, key=ACCESS_KEY, secret=SECRET_KEY, stream=False):
    """POST /v1/batch with the payload hash signed (the proxy checks it against the body)."""
    data = json.dumps(body).encode()
    return sk.api("POST", proxy.url + "/v1/batch", data=data, key=key, secret=secret,
                  stream=stream, payload=hashlib.sha256(data).hexdigest())


def test_batch_get(cl, proxy, dataset):
    """One request, objects and shard members across all targets, one tar in request order
    with identical bytes; continue_on_error records missing entries; fail-fast answers 404
    when the first entry is missing and cuts the stream for a later one; authorisation per
    bucket; malformed bodies get 400 with the reason."""
    out = fresh_bucket(proxy)
    created, final = sk.shard(proxy, SRC, {"prefix": "d/001", "output_bucket": out,
                                           "shard_size": 128 << 10,
                                           "template": "b-{00..}.tar"})
    assert final["state"] == "done"
    members = sk.read_tar(sk.get_shard(proxy, out, "b-01.tar"))
    ids = sk.target_ids(cl)
    picks = NAMES[5000:5400:7] + [n for n in NAMES if "ünï" in n][:2] + ["d/00123.jpg"]
    owners = {hrw_owner("ais/@#/%s/%s" % (SRC, n), list(ids)) for n in picks}
    assert len(owners) == 3  # the batch spans every target
    entries = []
    for i, n in enumerate(picks):
        entries.append({"bucket": SRC, "name": n})
        if i % 10 == 0:
            m = members[i % len(members)][0]
            entries.append({"bucket": out, "name": "b-01.tar", "archpath": m})
    entries.append({"bucket": SRC, "name": picks[0], "as": "renamed/first.jpg"})
    r = batch(proxy, {"entries": entries})
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "application/x-tar"
    # served by a target (issue 14): the proxy's 307 names the body's hash, so the signed
    # redirect reads this body and no other
    assert [h.status_code for h in r.history] == [307]
    loc = r.history[0].headers["Location"]
    digest = hashlib.sha256(json.dumps({"entries": entries}).encode()).hexdigest()
    assert "/v1/batch/%s?" % digest in loc
    other = json.dumps({"entries": [{"bucket": sk.LIMITED, "name": "ok.bin"}]}).encode()
    helpers.check_json_error(requests.post(loc, data=other, timeout=60), 403, "AccessDenied")
    bad = loc.replace(digest, digest[:-1] + ("0" if digest[-1] != "0" else "1"))
    helpers.check_json_error(requests.post(bad, data=json.dumps({"entries": entries}),
                                           timeout=60), 403, "AccessDenied")
    got = sk.read_tar(r.content)
    want = []
    for e in entries:
        if "as" in e:
            want.append((e["as"], sk.content(e["name"])))
        elif "archpath" in e:
            want.append(("b-01.tar/" + e["archpath"], sk.content(e["archpath"])))
        else:
            want.append((e["name"], sk.content(e["name"])))
    assert [(n, b) for n, b, _ in got] == want
    # "gzip": the same tar, compressed (entries from every target, members by reference
    # cannot be used here: every byte goes through the compressor)
    import gzip
    r = batch(proxy, {"entries": entries, "gzip": True})
    assert r.status_code == 200 and r.headers["Content-Type"] == "application/gzip", r.text
    assert [(n, b) for n, b, _ in sk.read_tar(gzip.decompress(r.content))] == want
    helpers.check_json_error(batch(proxy, {"entries": entries, "gzip": "yes"}), 400,
                             "InvalidArgument")
    # "format": the same members as a zip (stored), or a tar compressed with lz4 or zstd
    import zipfile
    r = batch(proxy, {"entries": entries, "format": "zip"})
    assert r.status_code == 200 and r.headers["Content-Type"] == "application/zip", r.text
    with zipfile.ZipFile(io.BytesIO(r.content)) as z:
        assert z.testzip() is None
        assert [(i.filename, z.read(i)) for i in z.infolist()] == want
    for fmt, tool in (("tar.lz4", "lz4"), ("tar.zst", "zstd"), ("tar.gz", "gzip")):
        r = batch(proxy, {"entries": entries, "format": fmt})
        assert r.status_code == 200, r.text
        p = subprocess.run([tool, "-d", "-c"], input=r.content, capture_output=True, timeout=60)
        assert p.returncode == 0, (fmt, p.stderr)
        assert [(n, b) for n, b, _ in sk.read_tar(p.stdout)] == want, fmt
    for bad in ({"format": "rar"}, {"format": 1}, {"format": "zip", "gzip": True}):
        helpers.check_json_error(batch(proxy, dict({"entries": entries}, **bad)), 400,
                                 "InvalidArgument")
    # the 307's capability covers its body: the same entries replayed with "gzip" changed
    # are refused
    helpers.check_json_error(requests.post(loc, data=json.dumps({"entries": entries,
                                                                 "gzip": True}), timeout=60),
                             403, "AccessDenied")

    # continue past missing entries: recorded in the stream, the rest intact
    body = {"bucket": SRC, "continue_on_error": True, "entries": [
        {"name": "d/00001.jpg"}, {"name": "d/nope.jpg"},
        {"bucket": out, "name": "b-01.tar", "archpath": "no-such"},
        {"bucket": "no-such-bucket-x", "name": "a"}, {"name": "d/00002.cls"}]}
    r = batch(proxy, body)
    assert r.status_code == 200, r.text
    got = sk.read_tar(r.content)
    assert [n for n, _, _ in got] == ["d/00001.jpg", "__404__/d/nope.jpg",
                                      "__404__/b-01.tar/no-such", "__404__/a", "d/00002.cls"]
    assert got[0][1] == sk.content("d/00001.jpg") and got[4][1] == sk.content("d/00002.cls")
    assert b"no member" in got[2][1]

    # fail fast: a missing first entry is a plain 404; a later one cuts the stream
    r = batch(proxy, {"bucket": SRC, "entries": [{"name": "d/nope.jpg"}, {"name": "d/1.jpg"}]})
    helpers.check_json_error(r, 404, "NoSuchKey")
    assert "d/nope.jpg" in r.json()["message"]
    r = batch(proxy, {"bucket": SRC, "entries": [{"name": "d/00003.jpg"},
                                                 {"name": "d/nope.jpg"}]}, stream=True)
    assert r.status_code == 200
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        r.content  # the chunked body ends without its last chunk: the client sees an error
    data = json.dumps({"bucket": SRC, "entries": [{"name": "d/00001.jpg"}]}).encode()
    r = sk.api("POST", proxy.url + "/v1/batch", data=data, payload=hashlib.sha256(
        data + b"x").hexdigest())
    helpers.check_json_error(r, 400, "XAmzContentSHA256Mismatch")

    # authorisation per bucket: the limited key reads only its own bucket
    sk.create_bucket(proxy, sk.LIMITED)
    r = sk.api("PUT", sk.obj_url(proxy, sk.LIMITED, "ok.bin"), data=b"ok")
    assert r.status_code == 200
    r = batch(proxy, {"entries": [{"bucket": sk.LIMITED, "name": "ok.bin"}]}, key=sk.LIM_KEY,
              secret=sk.LIM_SECRET)
    assert r.status_code == 200 and sk.read_tar(r.content)[0][1] == b"ok"
    r = batch(proxy, {"entries": [{"bucket": sk.LIMITED, "name": "ok.bin"},
                                  {"bucket": SRC, "name": "d/00001.jpg"}]}, key=sk.LIM_KEY,
              secret=sk.LIM_SECRET)
    helpers.check_json_error(r, 403, "AccessDenied")
    r = sk.api("POST", proxy.url + "/v1/batch", data=json.dumps(
        {"entries": [{"bucket": SRC, "name": "d/00001.jpg"}]}), sign=False)
    helpers.check_json_error(r, 403, "AccessDenied")

    # malformed bodies
    for bad, why in ((b"not json", "not a JSON object"), (b"[]", "not a JSON object"),
                     (b'{"entries": []}', "1 to 100000"),
                     (b'{"entries": [{"name": "x"}]}', "no valid bucket"),
                     (b'{"bucket": "b-x", "entries": [{"name": ""}]}', "\"name\""),
                     (b'{"bucket": "bxx", "entries": [{"name": "x", "oops": 1}]}',
                      "unknown field"),
                     (b'{"bucket": "bxx", "entries": [{"name": "x"}], "continue_on_error": 1}',
                      "continue_on_error")):
        r = sk.api("POST", proxy.url + "/v1/batch", data=bad)
        helpers.check_json_error(r, 400, "InvalidArgument")
        assert why in r.json()["message"], (bad, r.json()["message"])
    r = sk.api("POST", proxy.url + "/v1/batch")
    helpers.check_json_error(r, 400, "InvalidArgument")


def batch_counters(cl):
    """Sum over the nodes of the batch counters (sub-batches served, entries in them,
    entries fetched with a GET of their own)."""
    out = collections.Counter()
    for t in cl.targets + cl.proxies:
        m = t.metrics()
        for k in ("hoard_batch_sub_served_total", "hoard_batch_sub_entries_total",
                  "hoard_batch_fetched_alone_total"):
            out[k] += m.get(k, 0)
    return out


def test_batch_groups_entries_by_owner(cl, proxy, dataset):
    """Issue 14: the target a batch is redirected to asks every other owner for all of its
    entries in one node-signed sub-batch (at most 128 entries each), in parallel, and the
    answer keeps the request order with identical bytes. An entry its owner does not hold is
    fetched alone (the normal GET) and reported as documented: a __404__ member with
    continue_on_error, a cut stream without it, a plain 404 when it comes first."""
    ids = sk.target_ids(cl)
    by_owner = collections.defaultdict(list)
    for n in NAMES[1000:9000]:
        if n.endswith(".cls"):
            by_owner[hrw_owner("ais/@#/%s/%s" % (SRC, n), list(ids))].append(n)
    big, mid, small = sorted(by_owner, key=lambda t: -len(by_owner[t]))
    # the designated target owns the most; the others: 140 entries (two sub-batches, 128 +
    # 12) and 10 entries (one)
    picks = by_owner[big][:150] + by_owner[mid][:140] + by_owner[small][:10]
    missing = next("d/nope-%d.cls" % i for i in range(1000)
                   if hrw_owner("ais/@#/%s/d/nope-%d.cls" % (SRC, i), list(ids)) == small)
    random.Random(14).shuffle(picks)
    names = picks[:200] + [missing] + picks[200:]
    before = batch_counters(cl)
    r = batch(proxy, {"bucket": SRC, "continue_on_error": True,
                      "entries": [{"name": n} for n in names]})
    assert r.status_code == 200, r.text
    got = sk.read_tar(r.content)
    assert [n for n, _, _ in got] == [("__404__/" + n) if n == missing else n for n in names]
    for n, data, _ in got:
        if n.startswith("__404__/"):
            assert b"does not exist" in data, data
        else:
            assert data == sk.content(n), n
    delta = batch_counters(cl) - before
    assert delta["hoard_batch_sub_served_total"] == 3, delta
    assert delta["hoard_batch_sub_entries_total"] == 140 + 10 + 1, delta
    assert delta["hoard_batch_fetched_alone_total"] == 1, delta  # the missing one only

    # without continue_on_error: the missing entry (on another target) cuts the stream ...
    r = batch(proxy, {"bucket": SRC, "entries": [{"name": n} for n in names]}, stream=True)
    assert r.status_code == 200
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        r.content
    # ... and, first, is a plain 404 naming it
    r = batch(proxy, {"bucket": SRC, "entries": [{"name": n} for n in [missing] + picks[:20]]})
    helpers.check_json_error(r, 404, "NoSuchKey")
    assert missing in r.json()["message"]

    # a batch the proxy streams itself (it names a bucket the proxy does not know): the
    # proxy asks each target for its entries in sub-batches the same way
    before = batch_counters(cl)
    r = batch(proxy, {"bucket": SRC, "continue_on_error": True, "entries": [
        {"name": n} for n in picks[:60]] + [{"bucket": "no-such-bucket-q", "name": "x"}]})
    assert r.status_code == 200 and not r.history, r.text  # no 307: streamed by the proxy
    got = sk.read_tar(r.content)
    assert [n for n, _, _ in got] == picks[:60] + ["__404__/x"]
    assert all(d == sk.content(n) for n, d, _ in got[:60])
    delta = batch_counters(cl) - before
    owners = {hrw_owner("ais/@#/%s/%s" % (SRC, n), list(ids)) for n in picks[:60]}
    assert delta["hoard_batch_sub_served_total"] == len(owners) == 3, delta
    assert delta["hoard_batch_sub_entries_total"] == 60, delta
    assert delta["hoard_batch_fetched_alone_total"] == 0, delta


def test_sub_batch_is_for_nodes_only(cl, proxy, dataset):
    """POST /v1/batch/sub answers a target's own entries without checking the caller's
    permissions, so only a node of the cluster (node signature over the body) may ask: a
    client, with or without credentials, with made-up X-Hoard-* headers, or with a proxy's
    redirect capability for a batch, is refused. A signed call gets the group answer: an
    index line (data, fetch-alone and error records), then the data in order."""
    ids = sk.target_ids(cl)
    tid, t = sorted(ids.items())[0]
    other = sorted(ids)[1]
    mine = [n for n in NAMES[:3000] if n.endswith(".cls")
            and hrw_owner("ais/@#/%s/%s" % (SRC, n), list(ids)) == tid][:3]
    body = json.dumps({"entries": [{"bucket": SRC, "name": mine[0]},
                                   {"bucket": SRC, "name": "d/nope.cls"},
                                   {"bucket": SRC, "name": mine[1], "archpath": "x"},
                                   {"bucket": SRC, "name": mine[2]}]}).encode()
    url = t.url + "/v1/batch/sub"
    for h in ({}, {"X-Hoard-Node": other, "X-Hoard-Signature": "0" * 64,
                   "X-Hoard-Date": str(int(time.time())), "X-Hoard-Nonce": "1" * 32}):
        r = requests.post(url, data=body, headers=h, timeout=60)
        helpers.check_json_error(r, 403, "AccessDenied")
    r = sk.api("POST", url, data=body)  # a client's valid SigV4 credentials: still no
    helpers.check_json_error(r, 403, "AccessDenied")
    # a proxy's signed redirect for a batch body does not open the sub-batch path
    r = requests.post(proxy.url + "/v1/batch", data=body, timeout=60, allow_redirects=False,
                      headers=helpers.sign_headers("POST", proxy.url + "/v1/batch", ACCESS_KEY,
                                                   SECRET_KEY, None,
                                                   payload=hashlib.sha256(body).hexdigest()))
    assert r.status_code == 307, r.text
    loc = urllib.parse.urlsplit(r.headers["Location"])
    forged = "%s://%s/v1/batch/sub?%s" % (loc.scheme, loc.netloc, loc.query)
    helpers.check_json_error(requests.post(forged, data=body, timeout=60), 403, "AccessDenied")
    # signed by another target: the group answer
    r = requests.post(url, data=body, timeout=60,
                      headers=node_headers("POST", url, tid, other, body=body))
    assert r.status_code == 200, r.text
    line, _, rest = r.content.partition(b"\n")
    idx = json.loads(line)
    assert len(idx) == 4
    assert idx[0]["s"] == len(sk.content(mine[0])) and idx[3]["s"] == len(sk.content(mine[2]))
    assert idx[1] == {"f": 1}  # not held here: the asker fetches it alone
    assert idx[2]["e"] < 0 and "not" in idx[2]["m"].lower(), idx[2]  # no tar: an error
    assert rest == sk.content(mine[0]) + sk.content(mine[2])


def vm_hwm_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def test_batch_streams_large_entries(cl, proxy):
    """A batch of 96 MiB is streamed: the proxy's peak RSS grows by far less than that."""
    b = fresh_bucket(proxy, "big")
    blob = os.urandom(1 << 20) * 48
    # straight to the owners: a 48 MiB body sent to a proxy that answers 307 at once may be
    # cut by the proxy closing the connection before the client reads the redirect
    sk.bulk_put(cl, b, ["big1", "big2"], threads=2,
                body=lambda n: blob if n == "big1" else blob[::-1])
    before = vm_hwm_kib(proxy.proc.pid)
    r = batch(proxy, {"bucket": b, "entries": [{"name": "big1"}, {"name": "big2"}]},
              stream=True)
    assert r.status_code == 200
    h = hashlib.sha256()
    total = 0
    for chunk in r.iter_content(1 << 16):
        h.update(chunk)
        total += len(chunk)
    grown = vm_hwm_kib(proxy.proc.pid) - before
    assert total == 2 * (512 + len(blob)) + 1024
    assert grown < 40 * 1024, "proxy peak RSS grew by %d KiB" % grown


def cli(*args, env_extra=None, check=True, timeout=300):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY,
               HOARD_PROGRESS="1")
    env.update(env_extra or {})
    p = subprocess.run([os.path.join(BIN_DIR, "hoard")] + [str(a) for a in args],
                       capture_output=True, timeout=timeout, env=env)
    if check:
        assert p.returncode == 0, (args, p.returncode, p.stdout, p.stderr)
    return p


def test_job_stop_and_rerun(cl, proxy, dataset):
    """Stopping a job leaves only complete shards (no temp files, every shard valid); the
    same command again skips those (not rewritten) and writes the rest; a target killed mid-job
    resumes its part after a restart."""
    # half of the dataset each (d/0* then d/1*): enough shards to stop in the middle of
    out = fresh_bucket(proxy, "stop")
    args = {"output_bucket": out, "shard_size": 48 << 10, "template": "r-{00000..}.tar",
            "prefix": "d/0"}
    names = [n for n in NAMES if n.startswith("d/0")]
    r = sk.start_shard(proxy, SRC, args)
    assert r.status_code == 201, r.text
    jid = r.json()["id"]
    helpers.wait_until(lambda: sk.job(proxy, jid)["stats"].get("shards_done", 0) >= 30,
                       timeout=120, what="30 shards")
    r = sk.api("DELETE", proxy.url + "/v1/jobs/" + jid)
    assert r.status_code == 200
    final = sk.wait_job(proxy, jid)
    assert final["state"] == "aborted", final
    total = final["stats"]["shards_total"]
    first = {n for n in sk.list_names(proxy, out) if n.endswith(".tar")}
    assert 30 <= len(first) < total, (len(first), total)
    for t in cl.targets:
        assert t.tmp_files() == []
    mtimes = {}
    for n in first:  # complete and valid, never half-written
        data = sk.get_shard(proxy, out, n)
        for mname, body, _ in sk.read_tar(data):
            assert body == sk.content(mname)
        mtimes[n] = sk.api("HEAD", sk.obj_url(proxy, out, n)).headers["Last-Modified"]

    # rerun: finishes the missing shards, keeps the others
    created, final = sk.shard(proxy, SRC, args)
    assert final["state"] == "done", final
    assert final["stats"]["shards_skipped"] == len(first)
    assert final["stats"]["shards_done"] == created["shards"] - len(first)
    data = verify_sharding(proxy, out, created, final, 48 << 10, names)
    for n in first:
        assert sk.api("HEAD", sk.obj_url(proxy, out, n)).headers["Last-Modified"] == mtimes[n]

    # a target dies mid-job: its part resumes after the restart (jobs.db), nothing is lost
    out2 = fresh_bucket(proxy, "kill")
    args2 = dict(args, output_bucket=out2, template="k-{00000..}.tar", prefix="d/1")
    r = sk.start_shard(proxy, SRC, args2)
    assert r.status_code == 201, r.text
    jid = r.json()["id"]
    victim = cl.targets[1]
    vid = victim.health()["id"]
    helpers.wait_until(lambda: sk.job(proxy, jid)["targets"][vid]["stats"].get(
        "shards_done", 0) >= 5, timeout=120, interval=0.02, what="victim progress")
    victim.kill9()  # a half-written shard may stay in tmp/: removed when it starts again
    victim.start()
    final = sk.wait_job(proxy, jid)
    assert final["state"] == "done", final
    assert victim.tmp_files() == []
    man = json.loads(sk.api("GET", sk.obj_url(proxy, out2, r.json()["manifest"])).content)
    created = {"shards": len(man["shards"]), "samples": man["totals"]["samples"]}
    shards = sorted(n for n in sk.list_names(proxy, out2) if n.endswith(".tar"))
    assert len(shards) == created["shards"]
    seen = collections.Counter()
    for n, data in sk.fetch_shards(proxy, out2, shards).items():
        for mname, body, _ in sk.read_tar(data):
            seen[mname] += 1
            assert body == sk.content(mname)
    assert set(seen) == {n for n in NAMES if n.startswith("d/1")} and max(seen.values()) == 1


def test_shard_inputs_and_errors(proxy, dataset):
    """Input by list and by name range, key rules, and clear errors for bad jobs."""
    out = fresh_bucket(proxy, "in")
    lst = ["d/00010.jpg", "d/00010.cls", "d/00011.json", "d/00999.jpg"]
    created, final = sk.shard(proxy, SRC, {"list": lst, "output_bucket": out,
                                           "shard_size": 1, "template": "l-{0..}.tar"})
    assert final["state"] == "done" and created["samples"] == 3 and created["shards"] == 3
    got = [[m[0] for m in sk.read_tar(sk.get_shard(proxy, out, "l-%d.tar" % i))]
           for i in range(3)]
    assert got == [["d/00010.cls", "d/00010.jpg"], ["d/00011.json"], ["d/00999.jpg"]]
    created, final = sk.shard(proxy, SRC, {"range": "d/{00020..00029}.jpg", "output_bucket": out,
                                           "shard_size": 1 << 30, "template": "rg.tar"})
    assert final["state"] == "done" and created["objects"] == 10
    assert [m[0] for m in sk.read_tar(sk.get_shard(proxy, out, "rg.tar"))] == [
        "d/%05d.jpg" % i for i in range(20, 30)]
    # key rule "name": every object is a sample of its own
    created, _ = sk.shard(proxy, SRC, {"prefix": "d/0003", "output_bucket": out,
                                       "shard_size": 1 << 30, "template": "kr.tar",
                                       "key_rule": "name"})
    assert created["samples"] == created["objects"] == 30
    # gzip: .tar.gz shards (no member table; members read in order)
    import gzip
    created, final = sk.shard(proxy, SRC, {"prefix": "d/0004", "output_bucket": out,
                                           "shard_size": 16 << 10, "template": "g-{0..}.tgz",
                                           "gzip": True})
    assert final["state"] == "done" and final["error_count"] == 0, final
    names = sorted(n for n in sk.list_names(proxy, out) if n.startswith("g-"))
    assert len(names) == created["shards"] > 1
    seen = []
    for n in names:
        data = sk.get_shard(proxy, out, n)
        assert data[:2] == b"\x1f\x8b", n
        seen += [(m, body) for m, body, _ in sk.read_tar(gzip.decompress(data))]
    assert sorted(seen) == sorted((m, sk.content(m)) for m in NAMES if m.startswith("d/0004"))
    m = seen[0][0]
    r = sk.api("GET", sk.obj_url(proxy, out, names[0], "?archpath=" + m))
    assert r.status_code == 200 and r.content == sk.content(m), r.text[:200]

    def err(args, status, code, text, bucket=SRC):
        r = sk.start_shard(proxy, bucket, args)
        helpers.check_json_error(r, status, code)
        assert text in r.json()["message"], r.json()["message"]

    base = {"output_bucket": out, "shard_size": 1 << 20, "template": "e-{00..}.tar"}
    err(dict(base, oops=1), 400, "InvalidArgument", "unknown argument")
    err({k: v for k, v in base.items() if k != "template"}, 400, "InvalidArgument", "template")
    err(dict(base, template="e-{00..x}.tar"), 400, "InvalidArgument", "template")
    err(dict(base, shard_size=0), 400, "InvalidArgument", "shard_size")
    err(dict(base, output_bucket="no-such-out"), 404, "NoSuchBucket", "no-such-out")
    err(base, 404, "NoSuchBucket", "no-such-in", bucket="no-such-in")
    err(dict(base, prefix="zzz/"), 404, "NoSuchKey", "No objects")
    err(dict(base, list=["d/00001.jpg", "d/missing.jpg"]), 404, "NoSuchKey", "d/missing.jpg")
    err(dict(base, range="d/{19990..20010}.cls"), 404, "NoSuchKey", "of the 21 objects")
    err(dict(base, prefix="d/", template="e-{0..3}.tar"), 400, "InvalidArgument",
        "too few for the shards")
    err(dict(base, key_rule="third_dot"), 400, "InvalidArgument", "key_rule")
    err(dict(base, prefix="d/0", list=["a"]), 400, "InvalidArgument", "at most one")


def test_cli_shard_members_archpath_batch(proxy, dataset, tmp_path):
    """hoard shard create (with progress), shard ls-members, object get --archpath, batch get
    from a list file."""
    env = {"HOARD_ENDPOINT": proxy.url}
    out = fresh_bucket(proxy, "cli")
    p = cli("shard", "create", SRC + "/d/0004", out, "--template", "c-{000..}.tar", "--size",
            "64KiB", "--seed", "3", env_extra=env)
    text = p.stdout.decode()
    assert "sharded 30 objects (10 samples" in text and "manifest %s/" % out in text, text
    assert b"\rshard " in p.stderr  # the progress line
    p = cli("shard", "ls-members", out + "/c-000.tar", env_extra=env)
    lines = p.stdout.decode().splitlines()
    assert lines[0].split() == ["SIZE", "OFFSET", "NAME"] and lines[-1].endswith("members")
    first = lines[1].split()[2]
    p = cli("--json", "shard", "ls-members", out + "/c-000.tar", env_extra=env)
    assert json.loads(p.stdout)["members"][0]["name"] == first
    # a zip: its members have sizes but no byte offsets; get --archpath reads one
    import zipfile
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("a/1.txt", b"one" * 100)
        z.writestr("a/2.txt", b"two")
    put(proxy, out, "z.zip", zbuf.getvalue())
    p = cli("shard", "ls-members", out + "/z.zip", env_extra=env)
    assert [ln.split() for ln in p.stdout.decode().splitlines()] == [
        ["SIZE", "OFFSET", "NAME"], ["300", "-", "a/1.txt"], ["3", "-", "a/2.txt"],
        ["2", "members"]], p.stdout
    cli("object", "get", out + "/z.zip", "--archpath", "a/1.txt", tmp_path / "z1",
        env_extra=env)
    assert (tmp_path / "z1").read_bytes() == b"one" * 100
    # --gzip: .tar.gz shards, their members listed and read like any compressed archive's
    import gzip
    p = cli("shard", "create", SRC + "/d/0005", out, "--template", "gz-{0..}.tgz", "--size",
            "1GiB", "--gzip", env_extra=env)
    assert "sharded 30 objects (10 samples" in p.stdout.decode(), p.stdout
    data = sk.get_shard(proxy, out, "gz-0.tgz")
    members = sk.read_tar(gzip.decompress(data))
    assert [(n, b) for n, b, _ in members] == [(n, sk.content(n)) for n in sorted(
        m for m in NAMES if m.startswith("d/0005"))]
    p = cli("shard", "ls-members", out + "/gz-0.tgz", env_extra=env)
    rows = [ln.split() for ln in p.stdout.decode().splitlines()]
    assert rows[-1] == ["30", "members"] and all(r[1] == "-" for r in rows[1:-1]), rows
    dest = tmp_path / "m.bin"
    cli("object", "get", out + "/c-000.tar", "--archpath", first, dest, env_extra=env)
    assert dest.read_bytes() == sk.content(first)
    p = cli("object", "get", out + "/c-000.tar", "--archpath", "nope", tmp_path / "n",
            env_extra=env, check=False)
    assert p.returncode == 1 and b"no member 'nope'" in p.stderr
    assert not (tmp_path / "n").exists()
    lst = tmp_path / "list.txt"
    lst.write_text("# objects and a member\n%s/d/00040.jpg\n%s/c-000.tar\t%s\n\n%s/d/00041.cls\n"
                   % (SRC, out, first, SRC))
    cli("batch", "get", lst, tmp_path / "b.tar", env_extra=env)
    got = sk.read_tar((tmp_path / "b.tar").read_bytes())
    assert [(n, b) for n, b, _ in got] == [
        ("d/00040.jpg", sk.content("d/00040.jpg")), ("c-000.tar/" + first, sk.content(first)),
        ("d/00041.cls", sk.content("d/00041.cls"))]
    # --format: the same entries as a zip; shards as zstd-compressed tars; a bad name: 400
    import zipfile
    cli("batch", "get", lst, tmp_path / "b.zip", "--format", "zip", env_extra=env)
    with zipfile.ZipFile(tmp_path / "b.zip") as z:
        assert [(i.filename, z.read(i)) for i in z.infolist()] == [(n, b) for n, b, _ in got]
    p = cli("shard", "create", SRC + "/d/0005", out, "--template", "zs-{0..}.tar.zst", "--size",
            "1GiB", "--format", "tar.zst", env_extra=env)
    dec = subprocess.run(["zstd", "-d", "-c"], input=sk.get_shard(proxy, out, "zs-0.tar.zst"),
                         capture_output=True, check=True).stdout
    assert [(n, b) for n, b, _ in sk.read_tar(dec)] == [(n, sk.content(n)) for n in sorted(
        m for m in NAMES if m.startswith("d/0005"))]
    p = cli("batch", "get", lst, tmp_path / "b.rar", "--format", "rar", env_extra=env,
            check=False)
    assert p.returncode != 0 and b"format" in p.stderr and not (tmp_path / "b.rar").exists()
    lst.write_text("%s/d/00040.jpg\n%s/d/none\n" % (SRC, SRC))
    p = cli("batch", "get", lst, tmp_path / "c.tar", env_extra=env, check=False)
    assert p.returncode != 0 and not (tmp_path / "c.tar").exists()
    assert not (tmp_path / "c.tar.tmp").exists()
    cli("batch", "get", lst, tmp_path / "c.tar", "--continue-on-error", env_extra=env)
    assert [n for n, _, _ in sk.read_tar((tmp_path / "c.tar").read_bytes())] == [
        "d/00040.jpg", "__404__/d/none"]


def test_pytorch_loader_example(cl, proxy, dataset, tmp_path):
    """docs/examples/hoard_webdataset.py: the PyTorch IterableDataset over shards through the
    proxy (307 followed, 2 DataLoader workers) yields every sample once, decoded, with the
    right bytes; and the WebDataset pipe URL form works with curl -L."""
    try:
        import torch  # noqa: F401
    except ImportError:
        pytest.skip("python3-torch is not installed (make deps)")
    out = fresh_bucket(proxy, "torch")
    keys = [k for k in KEYS if k.startswith("d/015")]
    created, final = sk.shard(proxy, SRC, {"prefix": "d/015", "output_bucket": out,
                                           "shard_size": 96 << 10,
                                           "template": "train-{000000..}.tar"})
    assert final["state"] == "done" and created["samples"] == len(keys) == 100
    ex = os.path.join(REPO, "docs", "examples", "hoard_webdataset.py")
    dump = tmp_path / "dump.jsonl"
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY)
    p = subprocess.run(["/usr/bin/python3", ex, "--endpoint", proxy.url, "--bucket", out,
                        "--prefix", "train-", "--workers", "2", "--dump", str(dump)],
                       capture_output=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr.decode()[-3000:]
    summary = json.loads(p.stdout.decode().strip().splitlines()[-1])
    assert summary["shards"] == created["shards"] and summary["samples"] == len(keys)
    seen = {}
    for line in dump.read_text().splitlines():
        s = json.loads(line)
        assert s["key"] not in seen
        seen[s["key"]] = s["files"]
    assert set(seen) == set(keys)
    for k, files in seen.items():
        assert files == {ext: hashlib.sha256(sk.content(k + "." + ext)).hexdigest()
                         for ext in ("jpg", "cls", "json")}

    # in-process: decoded samples (cls -> int, json -> dict), split across two workers
    import sys
    sys.path.insert(0, os.path.dirname(ex))
    import hoard_webdataset as hw
    from torch.utils.data import DataLoader
    os.environ.setdefault("AWS_REGION", "us-east-1")
    ds = hw.HoardShards(proxy.url, out, "train-", auth=hw.SigV4(ACCESS_KEY, SECRET_KEY))
    got = list(DataLoader(ds, batch_size=None, num_workers=2))
    assert sorted(s["__key__"] for s in got) == sorted(keys)
    for s in got[:20]:
        assert s["cls"] == int(sk.content(s["__key__"] + ".cls"))
        assert s["json"] == json.loads(sk.content(s["__key__"] + ".json"))
        assert s["jpg"] == sk.content(s["__key__"] + ".jpg")

    # WebDataset's URL form: "pipe:curl -L -s http://PROXY/v1/objects/B/train-{...}.tar";
    # webdataset expands the braces and runs the command once per shard (as here)
    r = sk.api("PATCH", proxy.url + "/v1/buckets/" + out, data=b'{"anonymous_read": true}')
    assert r.status_code == 200, r.text
    got = set()
    for i in range(created["shards"]):
        url = "%s/v1/objects/%s/train-%06d.tar" % (proxy.url, out, i)
        p = subprocess.run("curl -L -s '%s'" % url, shell=True, capture_output=True,
                           timeout=60)
        assert p.returncode == 0, p.stderr
        got |= {sk.key_of(m[0]) for m in sk.read_tar(p.stdout)}
    assert got == set(keys)
