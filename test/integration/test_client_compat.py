"""Client compatibility, end to end: the real client tools on this machine (aws CLI v2 and v1,
s3cmd, rclone, restic (minio-go), s3fs-fuse, Debian boto3 1.26, pyenv boto3 1.4x, curl) upload
and download files and trees
through a standalone target and a cluster proxy; every byte that comes back is compared by SHA-256.

Uses the session fixtures of conftest.py (endpoint, s3, bucket, aws1, aws2, s3cmd, pyenv_python);
rclone's config is a local fixture. Large files: aws v2 100 MiB (13 parts of 8 MiB), boto3
60 MiB, rclone 50 MiB (5 MiB parts), aws v1 and pyenv boto3 20 MiB (CRC32 per part), restic
and s3fs 24 MiB.
"""
import concurrent.futures
import hashlib
import io
import json
import os
import shutil
import subprocess
import time

import botocore.exceptions
import pytest
from boto3.s3.transfer import TransferConfig

import helpers

# every test using `endpoint` runs against a standalone target and through a cluster proxy
ENDPOINTS = ("target", "proxy")

MiB = 1024 * 1024
AWS_PART = 8 * MiB  # aws CLI / s3transfer default multipart_threshold and chunksize
UNICODE_NAME = "\u00fcn\u00efc\u00f6d\u00e9-\u0444\u0430\u0439\u043b-\u6587\u4ef6.txt"


# ---------------------------------------------------------------- helpers

def sha_file(path):
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def sha_bytes(data):
    return hashlib.sha256(data).hexdigest()


def write_random(path, size):
    """Writes `size` random bytes to path (4 MiB at a time); returns the SHA-256 hex."""
    h = hashlib.sha256()
    with open(path, "wb") as f:
        left = size
        while left:
            chunk = os.urandom(min(left, 4 * MiB))
            f.write(chunk)
            h.update(chunk)
            left -= len(chunk)
    return h.hexdigest()


def mpu_etag(path, part_size):
    """The S3 ETag of `path` uploaded in parts of part_size: md5 of the parts' md5s, -N."""
    digests = []
    with open(path, "rb") as f:
        while True:
            chunk = f.read(part_size)
            if not chunk:
                break
            digests.append(hashlib.md5(chunk).digest())
    return '"%s-%d"' % (hashlib.md5(b"".join(digests)).hexdigest(), len(digests))


def make_tree(root, n=50, past=3600):
    """A directory tree of n files: nested directories, an empty file, a 1 MiB file, a unicode
    name and names with spaces (also in a directory name). Every mtime is set `past` seconds
    back, as for files that existed before the sync (no sub-second LastModified races).
    Returns {relative posix path: sha256}."""
    names = ["top.txt", "empty.dat", "name with spaces.txt", UNICODE_NAME,
             "dir with space/inner file.txt", "a/b/c/d/deep.bin", "a/one-mib.bin"]
    i = 0
    while len(names) < n:
        names.append("d%d/sub%d/file-%03d.bin" % (i % 4, i % 3, i))
        i += 1
    then = time.time() - past
    files = {}
    for k, rel in enumerate(names):
        p = os.path.join(str(root), *rel.split("/"))
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if rel == "empty.dat":
            size = 0
        elif rel == "a/one-mib.bin":
            size = MiB
        else:
            size = 1 + (k * 7919) % 60000
        files[rel] = write_random(p, size)
        os.utime(p, (then, then))
    return files


def local_tree(root):
    """{relative posix path: sha256} of every regular file under root."""
    out = {}
    root = str(root)
    for d, _dirs, fnames in os.walk(root):
        for fn in fnames:
            p = os.path.join(d, fn)
            out[os.path.relpath(p, root).replace(os.sep, "/")] = sha_file(p)
    return out


def list_keys(s3, bucket, prefix=""):
    """[{Key, Size, ETag, LastModified}] of every object under prefix (boto3 paginator)."""
    out = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        out.extend(page.get("Contents", []))
    return out


def remote_tree(s3, bucket, prefix):
    """{key without prefix: sha256 of the object's bytes} under prefix, read with boto3."""
    return {o["Key"][len(prefix):]: sha_bytes(
        s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read())
        for o in list_keys(s3, bucket, prefix)}


def run(cmd, timeout=120, env=None, check=True, input=None):
    """Runs a client tool; on a non-zero exit raises with its stdout/stderr."""
    cmd = [str(c) for c in cmd]
    p = subprocess.run(cmd, capture_output=True, timeout=timeout, env=env, input=input)
    if check and p.returncode != 0:
        raise AssertionError("%s failed (%d)\nstdout: %s\nstderr: %s" % (
            " ".join(cmd), p.returncode, p.stdout.decode(errors="replace")[-2000:],
            p.stderr.decode(errors="replace")[-3000:]))
    return p


def jrun(aws, *args):
    """aws CLI call whose stdout is JSON."""
    p = aws(*args)
    try:
        return json.loads(p.stdout or b"{}")
    except ValueError:
        raise AssertionError("aws %s printed no JSON: %r / %r" % (
            " ".join(map(str, args)), p.stdout[-1000:], p.stderr[-1000:]))


def out_lines(p, marker):
    """Lines of a tool's stdout that contain marker."""
    return [ln for ln in p.stdout.decode("utf-8", "replace").splitlines() if marker in ln]


def head_404(s3, bucket, key):
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        s3.head_object(Bucket=bucket, Key=key)
    assert helpers.client_error(ei)[0] == 404, key


class AccessLog:
    """The target's access log from a mark on: what the server really received."""

    def __init__(self, endpoint):
        self.path = endpoint.access_log
        self.mark()

    def mark(self):
        try:
            self.off = os.path.getsize(self.path)
        except OSError:
            self.off = 0

    def entries(self, bucket):
        """[(method, status, uri)] for requests to bucket since the mark."""
        with open(self.path, "rb") as f:
            f.seek(self.off)
            text = f.read().decode("utf-8", "replace")
        out = []
        for line in text.splitlines():
            fields = dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
            uri = line.split(" uri=", 1)[-1]
            if uri.startswith("/%s/" % bucket) or uri.startswith("/%s?" % bucket) or \
                    uri == "/" + bucket:
                out.append((fields.get("method"), int(fields.get("status", 0)), uri))
        return out


def curl(*args, timeout=60):
    return run(["curl", "-sS", "-g"] + list(args), timeout=timeout, check=False)


# ---------------------------------------------------------------- aws CLI v2

def test_aws2_cp_small_and_100mib(aws2, s3, bucket, tmp_path, endpoint):
    small = tmp_path / "small.txt"
    small_sha = write_random(small, 12345)
    big = tmp_path / "big.bin"
    big_sha = write_random(big, 100 * MiB)

    aws2("s3", "cp", small, "s3://%s/cp/small.txt" % bucket)
    aws2("s3", "cp", big, "s3://%s/cp/big.bin" % bucket, timeout=180)

    h = s3.head_object(Bucket=bucket, Key="cp/big.bin")
    assert h["ContentLength"] == 100 * MiB
    assert h["ETag"] == mpu_etag(big, AWS_PART), "100 MiB in 8 MiB parts: expected 13 parts"
    h = s3.head_object(Bucket=bucket, Key="cp/small.txt")
    assert h["ETag"] == '"%s"' % hashlib.md5(small.read_bytes()).hexdigest()

    down = tmp_path / "down"
    down.mkdir()
    aws2("s3", "cp", "s3://%s/cp/small.txt" % bucket, down / "small.txt")
    log = AccessLog(endpoint)
    aws2("s3", "cp", "s3://%s/cp/big.bin" % bucket, down / "big.bin", timeout=180)
    time.sleep(0.2)
    gets = [e for e in log.entries(bucket) if e[0] == "GET" and e[2] == "/%s/cp/big.bin" % bucket]
    assert len(gets) == 13 and all(e[1] == 206 for e in gets), \
        "expected 13 ranged GETs (206) of 8 MiB: %r" % gets
    assert sha_file(down / "small.txt") == small_sha
    assert os.path.getsize(down / "big.bin") == 100 * MiB
    assert sha_file(down / "big.bin") == big_sha


def test_aws2_sync_tree(aws2, s3, bucket, tmp_path, endpoint):
    src = tmp_path / "src"
    files = make_tree(src, 50)
    dest = "s3://%s/tree/" % bucket
    log = AccessLog(endpoint)

    p = aws2("s3", "sync", src, dest)
    assert len(out_lines(p, "upload:")) == 50, p.stdout.decode()
    assert remote_tree(s3, bucket, "tree/") == files
    first = {o["Key"]: o for o in list_keys(s3, bucket, "tree/")}
    first_done = time.monotonic()

    # nothing changed: a dry run plans nothing
    p = aws2("s3", "sync", "--dryrun", src, dest)
    assert out_lines(p, "upload:") == [], p.stdout.decode()

    changed = "d1/sub1/file-001.bin"
    files[changed] = write_random(os.path.join(str(src), *changed.split("/")), 777)
    p = aws2("s3", "sync", "--dryrun", src, dest)
    planned = out_lines(p, "upload:")
    assert len(planned) == 1 and planned[0].startswith("(dryrun) upload:") and \
        planned[0].endswith(" to %s%s" % (dest, changed)), p.stdout.decode()

    # LastModified has one-second resolution: make the re-upload land in a later second
    time.sleep(max(0.0, first_done + 1.2 - time.monotonic()))
    log.mark()
    p = aws2("s3", "sync", src, dest)
    done = out_lines(p, "upload:")
    assert len(done) == 1 and done[0].endswith(" to %s%s" % (dest, changed)), \
        p.stdout.decode()
    time.sleep(0.2)
    puts = [e for e in log.entries(bucket) if e[0] in ("PUT", "POST")]
    assert len(puts) == 1 and puts[0][2].startswith("/%s/tree/%s" % (bucket, changed)), puts
    second = {o["Key"]: o for o in list_keys(s3, bucket, "tree/")}
    assert set(second) == set(first)
    for key, o in second.items():
        if key == "tree/" + changed:
            assert o["LastModified"] > first[key]["LastModified"], (o, first[key])
            assert o["Size"] == 777
        else:
            assert (o["ETag"], o["LastModified"]) == (
                first[key]["ETag"], first[key]["LastModified"]), key
    assert remote_tree(s3, bucket, "tree/") == files

    # down into an empty directory
    down = tmp_path / "down"
    down.mkdir()
    p = aws2("s3", "sync", dest, down)
    assert len(out_lines(p, "download:")) == 50, p.stdout.decode()
    assert local_tree(down) == files

    p = aws2("s3", "ls", "--recursive", dest)
    listed = {}
    for ln in p.stdout.decode("utf-8").splitlines():
        _date, _time, size, key = ln.split(None, 3)
        listed[key] = int(size)
    assert listed == {"tree/" + rel: os.path.getsize(os.path.join(str(src), *rel.split("/")))
                      for rel in files}, p.stdout.decode()

    p = aws2("s3", "rm", "--recursive", dest)
    assert len(out_lines(p, "delete:")) == 50, p.stdout.decode()
    assert list_keys(s3, bucket) == []


def test_aws2_s3api(aws2, s3, bucket, tmp_path, endpoint):
    data = os.urandom(300000)
    f = tmp_path / "obj.bin"
    f.write_bytes(data)
    md5 = '"%s"' % hashlib.md5(data).hexdigest()

    r = jrun(aws2, "s3api", "put-object", "--bucket", bucket, "--key", "api/obj.bin",
             "--body", f, "--metadata", "color=blue", "--content-type", "application/x-test")
    assert r["ETag"] == md5, r
    h = jrun(aws2, "s3api", "head-object", "--bucket", bucket, "--key", "api/obj.bin")
    assert h["ContentLength"] == len(data) and h["ETag"] == md5, h
    assert h["ContentType"] == "application/x-test" and h["Metadata"] == {"color": "blue"}, h
    assert h.get("LastModified"), h

    rng = tmp_path / "range.bin"
    g = jrun(aws2, "s3api", "get-object", "--bucket", bucket, "--key", "api/obj.bin",
             "--range", "bytes=1000-1999", rng)
    assert g["ContentRange"] == "bytes 1000-1999/%d" % len(data), g
    assert g["ContentLength"] == 1000, g
    assert rng.read_bytes() == data[1000:2000]

    c = jrun(aws2, "s3api", "copy-object", "--bucket", bucket, "--key", "api/copy.bin",
             "--copy-source", "%s/api/obj.bin" % bucket)
    assert c["CopyObjectResult"]["ETag"] == md5, c
    g = s3.get_object(Bucket=bucket, Key="api/copy.bin")
    assert sha_bytes(g["Body"].read()) == sha_bytes(data)
    assert g["Metadata"] == {"color": "blue"} and g["ContentType"] == "application/x-test", g

    # list-objects-v2 pagination: --page-size is max-keys on the wire, --max-items cuts
    keys = ["page/%02d" % i for i in range(25)]
    for k in keys:
        s3.put_object(Bucket=bucket, Key=k, Body=k.encode())
    log = AccessLog(endpoint)
    l1 = jrun(aws2, "s3api", "list-objects-v2", "--bucket", bucket, "--prefix", "page/",
              "--page-size", "7", "--max-items", "10")
    assert [o["Key"] for o in l1["Contents"]] == keys[:10], l1
    assert l1.get("NextToken"), l1
    l2 = jrun(aws2, "s3api", "list-objects-v2", "--bucket", bucket, "--prefix", "page/",
              "--page-size", "7", "--starting-token", l1["NextToken"])
    assert [o["Key"] for o in l2["Contents"]] == keys[10:], l2
    assert not l2.get("NextToken"), l2
    assert all(o["Size"] == 7 for o in l1["Contents"] + l2["Contents"])
    time.sleep(0.2)
    lists = [e for e in log.entries(bucket) if e[0] == "GET" and "list-type=2" in e[2]]
    assert len(lists) >= 4 and all("max-keys=7" in e[2] and e[1] == 200 for e in lists), lists

    spec = {"Objects": [{"Key": k} for k in keys[:5]] + [{"Key": "page/missing"}],
            "Quiet": False}
    d = jrun(aws2, "s3api", "delete-objects", "--bucket", bucket, "--delete", json.dumps(spec))
    assert sorted(x["Key"] for x in d.get("Deleted", [])) == keys[:5] + ["page/missing"], d
    assert not d.get("Errors"), d
    assert [o["Key"] for o in list_keys(s3, bucket, "page/")] == keys[5:]

    # multipart by hand
    p1 = tmp_path / "part1"
    p2 = tmp_path / "part2"
    p1.write_bytes(os.urandom(5 * MiB))
    p2.write_bytes(os.urandom(MiB + 5))
    m = jrun(aws2, "s3api", "create-multipart-upload", "--bucket", bucket, "--key",
             "api/mpu.bin")
    uid = m["UploadId"]
    parts = []
    for n, pf in ((1, p1), (2, p2)):
        u = jrun(aws2, "s3api", "upload-part", "--bucket", bucket, "--key", "api/mpu.bin",
                 "--upload-id", uid, "--part-number", str(n), "--body", pf)
        assert u["ETag"] == '"%s"' % hashlib.md5(pf.read_bytes()).hexdigest(), u
        parts.append({"ETag": u["ETag"], "PartNumber": n})
    pj = tmp_path / "parts.json"
    pj.write_text(json.dumps({"Parts": parts}))
    done = jrun(aws2, "s3api", "complete-multipart-upload", "--bucket", bucket, "--key",
                "api/mpu.bin", "--upload-id", uid, "--multipart-upload", "file://%s" % pj)
    whole = p1.read_bytes() + p2.read_bytes()
    want = '"%s-2"' % hashlib.md5(hashlib.md5(p1.read_bytes()).digest() +
                                  hashlib.md5(p2.read_bytes()).digest()).hexdigest()
    assert done["ETag"] == want and done["Key"] == "api/mpu.bin", done
    g = s3.get_object(Bucket=bucket, Key="api/mpu.bin")
    assert g["ContentLength"] == len(whole) and g["ETag"] == want
    assert sha_bytes(g["Body"].read()) == sha_bytes(whole)


# ---------------------------------------------------------------- aws CLI v1 (botocore 1.4x)

def test_aws1_cp_sync_ls_rm(aws1, s3, bucket, tmp_path):
    small = tmp_path / "small.txt"
    small_sha = write_random(small, 4321)
    big = tmp_path / "big20.bin"
    big_sha = write_random(big, 20 * MiB)
    aws1("s3", "cp", small, "s3://%s/v1/small.txt" % bucket)
    aws1("s3", "cp", big, "s3://%s/v1/big20.bin" % bucket, timeout=120)
    h = s3.head_object(Bucket=bucket, Key="v1/big20.bin")
    assert h["ContentLength"] == 20 * MiB
    assert h["ETag"] == mpu_etag(big, AWS_PART), "20 MiB in 8 MiB parts: expected 3 parts"

    down = tmp_path / "down"
    down.mkdir()
    aws1("s3", "cp", "s3://%s/v1/big20.bin" % bucket, down / "big20.bin", timeout=120)
    aws1("s3", "cp", "s3://%s/v1/small.txt" % bucket, down / "small.txt")
    assert sha_file(down / "big20.bin") == big_sha
    assert sha_file(down / "small.txt") == small_sha

    src = tmp_path / "tree"
    files = make_tree(src, 12)
    p = aws1("s3", "sync", src, "s3://%s/v1tree/" % bucket)
    assert len(out_lines(p, "upload:")) == 12, p.stdout.decode()
    assert remote_tree(s3, bucket, "v1tree/") == files

    p = aws1("s3", "ls", "--recursive", "s3://%s/" % bucket)
    listed = {ln.split(None, 3)[3] for ln in p.stdout.decode("utf-8").splitlines()}
    assert listed == {"v1/small.txt", "v1/big20.bin"} | {"v1tree/" + k for k in files}, \
        p.stdout.decode()

    p = aws1("s3", "rm", "--recursive", "s3://%s/v1tree/" % bucket)
    assert len(out_lines(p, "delete:")) == 12, p.stdout.decode()
    assert [o["Key"] for o in list_keys(s3, bucket)] == ["v1/big20.bin", "v1/small.txt"]


def test_aws1_presign_with_curl(aws1, s3, bucket, tmp_path):
    data = os.urandom(70000)
    key = "pre/v1 presigned.bin"
    s3.put_object(Bucket=bucket, Key=key, Body=data)
    url = aws1("s3", "presign", "s3://%s/%s" % (bucket, key), "--expires-in", "300"
               ).stdout.decode().strip()
    assert url.startswith("http://"), url
    # aws CLI v1 presigns with SigV2 for a custom endpoint: this is the SigV2 query path
    assert "AWSAccessKeyId=" in url and "Signature=" in url and "Expires=" in url, url
    out = tmp_path / "got.bin"
    p = curl("-o", out, "-w", "%{http_code}", url)
    assert p.returncode == 0, p.stderr
    body = out.read_bytes() if out.exists() else b""
    assert p.stdout == b"200", "GET %s -> %s %r" % (url, p.stdout, body[:500])
    assert sha_bytes(body) == sha_bytes(data)


def test_aws1_cp_100mib_and_s3api(aws1, s3, bucket, tmp_path):
    """aws CLI v1 (botocore 1.4x: CRC32 on every part): a 100 MiB multipart upload with
    `s3 cp` (13 parts of 8 MiB), downloaded again and compared byte for byte; s3api calls."""
    big = tmp_path / "big100.bin"
    big_sha = write_random(big, 100 * MiB)
    aws1("s3", "cp", big, "s3://%s/v1big/big100.bin" % bucket, timeout=300)
    h = jrun(aws1, "s3api", "head-object", "--bucket", bucket, "--key", "v1big/big100.bin")
    assert h["ContentLength"] == 100 * MiB, h
    assert h["ETag"] == mpu_etag(big, AWS_PART), "100 MiB in 8 MiB parts: expected 13 parts"
    down = tmp_path / "down100.bin"
    aws1("s3", "cp", "s3://%s/v1big/big100.bin" % bucket, down, timeout=300)
    assert os.path.getsize(down) == 100 * MiB and sha_file(down) == big_sha

    small = tmp_path / "s.bin"
    small.write_bytes(os.urandom(4097))
    r = jrun(aws1, "s3api", "put-object", "--bucket", bucket, "--key", "v1big/s.bin", "--body",
             small, "--metadata", "k=v")
    assert r["ETag"] == '"%s"' % hashlib.md5(small.read_bytes()).hexdigest(), r
    rng = tmp_path / "rng.bin"
    g = jrun(aws1, "s3api", "get-object", "--bucket", bucket, "--key", "v1big/s.bin",
             "--range", "bytes=100-199", rng)
    assert g["ContentRange"] == "bytes 100-199/4097" and g["Metadata"] == {"k": "v"}, g
    assert rng.read_bytes() == small.read_bytes()[100:200]
    lst = jrun(aws1, "s3api", "list-objects-v2", "--bucket", bucket, "--prefix", "v1big/")
    assert [(o["Key"], o["Size"]) for o in lst["Contents"]] == [
        ("v1big/big100.bin", 100 * MiB), ("v1big/s.bin", 4097)], lst
    aws1("s3api", "delete-object", "--bucket", bucket, "--key", "v1big/s.bin")
    head_404(s3, bucket, "v1big/s.bin")


# ---------------------------------------------------------------- s3cmd

def test_s3cmd_put_get_ls_del_sync_info_du(s3cmd, s3, bucket, tmp_path):
    f = tmp_path / "one.bin"
    f_sha = write_random(f, 150001)
    s3cmd("put", f, "s3://%s/sc/one.bin" % bucket)
    g = s3.get_object(Bucket=bucket, Key="sc/one.bin")
    assert sha_bytes(g["Body"].read()) == f_sha
    got = tmp_path / "one-down.bin"
    s3cmd("get", "s3://%s/sc/one.bin" % bucket, got)
    assert sha_file(got) == f_sha

    out = s3cmd("ls", "s3://%s/sc/" % bucket).stdout.decode()
    rows = [ln.split() for ln in out.splitlines() if ln.strip()]
    assert [(r[-2], r[-1]) for r in rows] == [("150001", "s3://%s/sc/one.bin" % bucket)], out

    out = s3cmd("info", "s3://%s/sc/one.bin" % bucket).stdout.decode()
    assert "150001" in out and hashlib.md5(f.read_bytes()).hexdigest() in out, out

    s3cmd("del", "s3://%s/sc/one.bin" % bucket)
    head_404(s3, bucket, "sc/one.bin")

    src = tmp_path / "tree"
    files = make_tree(src, 20)
    s3cmd("sync", str(src) + "/", "s3://%s/sctree/" % bucket, timeout=90)
    assert remote_tree(s3, bucket, "sctree/") == files
    total = sum(os.path.getsize(os.path.join(str(src), *k.split("/"))) for k in files)

    out = s3cmd("du", "s3://%s/sctree/" % bucket).stdout.decode()
    fields = out.split()
    assert int(fields[0]) == total and "%d objects" % len(files) in out, out

    down = tmp_path / "down"
    down.mkdir()
    s3cmd("sync", "s3://%s/sctree/" % bucket, str(down) + "/", timeout=90)
    assert local_tree(down) == files


# ---------------------------------------------------------------- rclone

@pytest.fixture(scope="module")
def rclone(endpoint, tmp_path_factory):
    """Runs rclone --config FILE ARGS... against the target (remote name `hoard`)."""
    exe = shutil.which("rclone")
    if not exe:
        pytest.skip("rclone not installed")
    d = tmp_path_factory.mktemp("rclone")
    conf = d / "rclone.conf"
    conf.write_text("\n".join([
        "[hoard]",
        "type = s3",
        "provider = Other",
        "env_auth = false",
        "access_key_id = %s" % endpoint.access_key,
        "secret_access_key = %s" % endpoint.secret_key,
        "endpoint = %s" % endpoint.url,
        "force_path_style = true",
        "region = us-east-1",
        "",
    ]))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("RCLONE_") and not k.startswith("AWS_")}
    env["HOME"] = str(d)

    def call(*args, timeout=120, check=True):
        return run([exe, "--config", conf, "--retries", "1", "--low-level-retries", "1"] +
                   list(args), timeout=timeout, env=env, check=check)
    return call


def test_rclone_copy_check_sync_lsf_cat(rclone, s3, bucket, tmp_path):
    src = tmp_path / "tree"
    files = make_tree(src, 30)
    remote = "hoard:%s/rc" % bucket
    rclone("copy", src, remote)
    assert remote_tree(s3, bucket, "rc/") == files

    p = rclone("check", src, remote)
    err = p.stderr.decode("utf-8", "replace")
    assert "0 differences found" in err and "30 matching files" in err, err

    gone = "name with spaces.txt"
    os.unlink(os.path.join(str(src), gone))
    del files[gone]
    rclone("sync", src, remote)
    head_404(s3, bucket, "rc/" + gone)
    assert remote_tree(s3, bucket, "rc/") == files

    p = rclone("lsf", "-R", "--files-only", remote)
    assert sorted(p.stdout.decode("utf-8").splitlines()) == sorted(files), p.stdout.decode()

    p = rclone("cat", remote + "/" + UNICODE_NAME)
    assert sha_bytes(p.stdout) == files[UNICODE_NAME]

    down = tmp_path / "down"
    rclone("copy", remote, down)
    assert local_tree(down) == files


def test_rclone_50mib_multipart(rclone, s3, bucket, tmp_path):
    big = tmp_path / "big50.bin"
    big_sha = write_random(big, 50 * MiB)
    rclone("copyto", big, "hoard:%s/rcbig/big50.bin" % bucket, "--s3-upload-cutoff", "10M",
           "--s3-chunk-size", "5M", timeout=180)
    h = s3.head_object(Bucket=bucket, Key="rcbig/big50.bin")
    assert h["ContentLength"] == 50 * MiB
    assert h["ETag"] == mpu_etag(big, 5 * MiB), "50 MiB in 5 MiB parts: expected 10 parts"
    down = tmp_path / "down.bin"
    rclone("copyto", "hoard:%s/rcbig/big50.bin" % bucket, down, timeout=180)
    assert sha_file(down) == big_sha
    p = rclone("check", big.parent, "hoard:%s/rcbig" % bucket, "--include", "big50.bin")
    assert "0 differences found" in p.stderr.decode(), p.stderr.decode()


# ---------------------------------------------------------------- restic (minio-go)

@pytest.fixture(scope="module")
def restic(endpoint, tmp_path_factory):
    """Runs restic -r REPO ARGS... with the endpoint's keys (no local cache: every read goes
    to the server)."""
    exe = shutil.which("restic")
    if not exe:
        pytest.skip("restic not installed")
    d = tmp_path_factory.mktemp("restic")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("AWS_") and not k.startswith("RESTIC_")}
    env.update(HOME=str(d), RESTIC_PASSWORD="hoard-test-password",
               AWS_ACCESS_KEY_ID=endpoint.access_key, AWS_SECRET_ACCESS_KEY=endpoint.secret_key)

    def call(repo, *args, timeout=180):
        return run([exe, "--no-cache", "-r", repo] + list(args), timeout=timeout, env=env)
    return call


def test_restic_backup_check_prune_restore(restic, endpoint, s3, bucket, tmp_path):
    """restic (Debian's 0.14), whose S3 backend is minio-go: over http minio-go signs every
    PUT body chunk by chunk (STREAMING-AWS4-HMAC-SHA256-PAYLOAD), here a pack of over 24 MiB in
    one PUT; restic reads packs back by ranges, lists with delimiters, and
    deletes its locks and pruned packs. Every byte is checked by restic itself (check
    --read-data) and by comparing the restored tree."""
    src = tmp_path / "src"
    files = make_tree(src, 20)
    write_random(src / "big.bin", 24 * MiB)
    repo = "s3:%s/%s/restic" % (endpoint.url, bucket)
    restic(repo, "init")
    restic(repo, "backup", "--pack-size", "64", src)
    packs = list_keys(s3, bucket, "restic/data/")
    assert any(o["Size"] > 24 * MiB for o in packs), packs
    p = restic(repo, "check", "--read-data")
    assert b"no errors were found" in p.stdout, p.stdout
    # a second snapshot without the big file; forgetting the first prunes its pack
    os.unlink(src / "big.bin")
    restic(repo, "backup", src)
    restic(repo, "forget", "--keep-last", "1", "--prune")
    assert sum(o["Size"] for o in list_keys(s3, bucket, "restic/data/")) < 8 * MiB
    assert list_keys(s3, bucket, "restic/locks/") == []
    p = restic(repo, "check", "--read-data")
    assert b"no errors were found" in p.stdout, p.stdout
    out = tmp_path / "out"
    restic(repo, "restore", "latest", "--target", out)
    assert local_tree(str(out) + str(src)) == files


# ---------------------------------------------------------------- s3fs-fuse

class S3fs:
    """s3fs-fuse mounts of a bucket (each a foreground s3fs process), unmounted at the end."""

    def __init__(self, exe, endpoint, d):
        self.exe, self.endpoint, self.d, self.procs = exe, endpoint, d, []
        self.pw = d / "passwd"
        self.pw.write_text("%s:%s\n" % (endpoint.access_key, endpoint.secret_key))
        os.chmod(self.pw, 0o600)

    def mount(self, bucket, mnt):
        os.makedirs(mnt, exist_ok=True)
        p = subprocess.Popen(
            [self.exe, bucket, str(mnt), "-f", "-o", "url=" + self.endpoint.url,
             "-o", "use_path_request_style", "-o", "passwd_file=%s" % self.pw,
             "-o", "retries=1", "-o", "connect_timeout=10", "-o", "readwrite_timeout=60",
             "-o", "dbglevel=warn"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.procs.append((p, str(mnt)))
        deadline = time.time() + 30
        while time.time() < deadline:
            if p.poll() is not None:
                err = p.stderr.read().decode(errors="replace")
                e = err.lower()
                if "fuse" in e and ("permi" in e or "device" in e or "not allowed" in e):
                    pytest.skip("no FUSE mounts here: " + err.strip()[-300:])
                raise AssertionError("s3fs exited %d: %s" % (p.returncode, err[-2000:]))
            with open("/proc/self/mounts") as f:
                if any(line.split()[1] == str(mnt) for line in f):
                    return
            time.sleep(0.2)
        raise AssertionError("s3fs did not mount %s within 30 s" % mnt)

    def unmount_all(self):
        for p, mnt in reversed(self.procs):
            subprocess.run(["umount", mnt], capture_output=True, timeout=60)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []


@pytest.fixture
def s3fs(endpoint, tmp_path):
    exe = shutil.which("s3fs")
    if not exe:
        pytest.skip("s3fs not installed")
    if not os.path.exists("/dev/fuse") or os.geteuid() != 0:
        pytest.skip("no /dev/fuse, or not root (s3fs mounts with FUSE)")
    m = S3fs(exe, endpoint, tmp_path)
    yield m
    m.unmount_all()


def test_s3fs_files_dirs_rename_chmod_remount(s3fs, s3, bucket, tmp_path):
    """s3fs-fuse 1.90 (its own libcurl client and SigV4 signer): files written through the
    mount are the objects boto3 reads; rename and chmod are server-side copies with
    REPLACE metadata (mode, mtime in x-amz-meta-*), a 24 MiB file is a multipart upload,
    appends and an ftruncate rewrite the object, and a new mount sees the same tree, modes,
    times and symlink."""
    mnt = tmp_path / "mnt"
    s3fs.mount(bucket, mnt)
    small = os.urandom(70000)
    (mnt / "small.bin").write_bytes(small)
    os.makedirs(mnt / "d1" / "sub")
    (mnt / "d1" / "sub" / "f").write_bytes(b"first")
    os.rename(mnt / "d1" / "sub" / "f", mnt / "d1" / "sub" / "g")
    os.chmod(mnt / "d1" / "sub" / "g", 0o600)
    big = tmp_path / "big.bin"
    big_sha = write_random(big, 24 * MiB)
    shutil.copyfile(big, mnt / "big.bin")
    with open(mnt / "log.txt", "ab") as f:
        f.write(b"line 1\n")
    with open(mnt / "log.txt", "ab") as f:
        f.write(b"line 2\n")
    with open(mnt / "small.bin", "r+b") as f:  # (s3fs 1.90 zero-fills a truncate(2) by
        f.truncate(1000)                      # path, against s3rver as well: not used)
    os.symlink("small.bin", mnt / "link")
    os.utime(mnt / "log.txt", (1577836800, 1577836800))  # 2020-01-01
    os.rename(mnt / "d1", mnt / "d2")
    assert sorted(os.listdir(mnt)) == ["big.bin", "d2", "link", "log.txt", "small.bin"]

    got = lambda k: s3.get_object(Bucket=bucket, Key=k)  # noqa: E731
    assert got("small.bin")["Body"].read() == small[:1000]
    assert got("log.txt")["Body"].read() == b"line 1\nline 2\n"
    assert got("d2/sub/g")["Body"].read() == b"first"
    assert int(got("d2/sub/g")["Metadata"]["mode"]) & 0o777 == 0o600
    head_404(s3, bucket, "d1/sub/g")
    head_404(s3, bucket, "d2/sub/f")
    b = got("big.bin")
    assert b["ETag"].strip('"').rsplit("-", 1)[-1].isdigit() and "-" in b["ETag"], b["ETag"]
    assert sha_bytes(b["Body"].read()) == big_sha

    s3fs.unmount_all()
    mnt2 = tmp_path / "mnt2"
    s3fs.mount(bucket, mnt2)
    assert sorted(os.listdir(mnt2)) == ["big.bin", "d2", "link", "log.txt", "small.bin"]
    assert os.stat(mnt2 / "d2" / "sub" / "g").st_mode & 0o777 == 0o600
    assert int(os.stat(mnt2 / "log.txt").st_mtime) == 1577836800
    assert os.readlink(mnt2 / "link") == "small.bin"
    assert sha_file(mnt2 / "big.bin") == big_sha
    with open(mnt2 / "big.bin", "rb") as f:  # a read in the middle: a ranged GET
        f.seek(17 * MiB + 5)
        part = f.read(4096)
    with open(big, "rb") as f:
        f.seek(17 * MiB + 5)
        assert part == f.read(4096)
    shutil.rmtree(mnt2 / "d2")
    os.unlink(mnt2 / "big.bin")
    assert sorted(os.listdir(mnt2)) == ["link", "log.txt", "small.bin"]
    assert [o["Key"] for o in list_keys(s3, bucket, "d2")] == []
    head_404(s3, bucket, "big.bin")


# ---------------------------------------------------------------- boto3 (Debian 1.26)

def test_boto3_transfer_manager_60mib(endpoint, s3, bucket, tmp_path):
    big = tmp_path / "big60.bin"
    big_sha = write_random(big, 60 * MiB)
    cfg = TransferConfig(multipart_threshold=AWS_PART, multipart_chunksize=AWS_PART,
                         max_concurrency=8)
    s3.upload_file(str(big), bucket, "tm/big60.bin", Config=cfg)
    h = s3.head_object(Bucket=bucket, Key="tm/big60.bin")
    assert h["ContentLength"] == 60 * MiB
    assert h["ETag"] == mpu_etag(big, AWS_PART), "60 MiB in 8 MiB parts: expected 8 parts"
    # above multipart_threshold the download is concurrent ranged GETs
    down = tmp_path / "down60.bin"
    log = AccessLog(endpoint)
    s3.download_file(bucket, "tm/big60.bin", str(down), Config=cfg)
    assert sha_file(down) == big_sha
    time.sleep(0.2)
    gets = [e for e in log.entries(bucket) if e[0] == "GET" and e[2].endswith("/big60.bin")]
    assert len(gets) == 8 and all(e[1] == 206 for e in gets), \
        "expected 8 ranged GETs (206) of 8 MiB: %r" % gets

    data = os.urandom(9 * MiB + 17)
    s3.upload_fileobj(io.BytesIO(data), bucket, "tm/fileobj.bin", Config=cfg)
    h = s3.head_object(Bucket=bucket, Key="tm/fileobj.bin")
    assert h["ContentLength"] == len(data) and h["ETag"].endswith('-2"'), h
    buf = io.BytesIO()
    s3.download_fileobj(bucket, "tm/fileobj.bin", buf, Config=cfg)
    assert sha_bytes(buf.getvalue()) == sha_bytes(data)


def test_boto3_paginator_1500_keys(s3, bucket):
    keys = ["many/%04d" % i for i in range(1500)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=10) as pool:
        list(pool.map(lambda k: s3.put_object(Bucket=bucket, Key=k, Body=k.encode()), keys))

    pages = list(s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="many/"))
    assert [p["KeyCount"] for p in pages] == [1000, 500], [p.get("KeyCount") for p in pages]
    assert [p["IsTruncated"] for p in pages] == [True, False]
    assert [o["Key"] for p in pages for o in p["Contents"]] == keys

    pages = list(s3.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix="many/", PaginationConfig={"PageSize": 400}))
    assert [p["KeyCount"] for p in pages] == [400, 400, 400, 300]
    got = [o for p in pages for o in p["Contents"]]
    assert [o["Key"] for o in got] == keys
    assert all(o["Size"] == 9 for o in got)

    for i in range(0, 1500, 1000):
        d = s3.delete_objects(Bucket=bucket, Delete={
            "Objects": [{"Key": k} for k in keys[i:i + 1000]], "Quiet": True})
        assert not d.get("Errors"), d["Errors"][:5]
    assert list_keys(s3, bucket) == []


def test_boto3_presigned_get_put_with_curl(endpoint, s3, bucket, tmp_path):
    data = os.urandom(3 * MiB + 1)
    key = "pre/\u00fc sign+ed.bin"
    s3.put_object(Bucket=bucket, Key=key, Body=data)
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key},
                                    ExpiresIn=300)
    assert "X-Amz-Algorithm=AWS4-HMAC-SHA256" in url, url
    out = tmp_path / "got.bin"
    p = curl("-o", out, "-w", "%{http_code}", url)
    assert p.returncode == 0, p.stderr
    assert p.stdout == b"200", (url, out.read_bytes()[:500])
    assert sha_file(out) == sha_bytes(data)

    up = tmp_path / "up.bin"
    up_sha = write_random(up, 2 * MiB + 3)
    put_key = "pre/put via curl.bin"
    url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": put_key},
                                    ExpiresIn=300)
    resp = tmp_path / "put.out"
    p = curl("-T", up, "-o", resp, "-w", "%{http_code}", url)
    assert p.returncode == 0, p.stderr
    assert p.stdout == b"200", (url, resp.read_bytes()[:500])
    g = s3.get_object(Bucket=bucket, Key=put_key)
    assert g["ContentLength"] == 2 * MiB + 3
    assert sha_bytes(g["Body"].read()) == up_sha


# ---------------------------------------------------------------- boto3 1.4x (pyenv)

PYENV_SCRIPT = r'''
import base64, hashlib, json, os, zlib
import boto3, botocore
from botocore.config import Config
s3 = boto3.client("s3", endpoint_url=os.environ["EP"], region_name="us-east-1",
                  aws_access_key_id=os.environ["AK"], aws_secret_access_key=os.environ["SK"],
                  config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                                retries={"total_max_attempts": 1}))
b = os.environ["BUCKET"]
out = {"botocore": botocore.__version__, "part_crc32": 0, "parts": 0, "create_algo": None}

def seen(request, **kw):
    name = kw["event_name"]
    hdrs = {k.lower(): v.decode() if isinstance(v, bytes) else v
            for k, v in request.headers.items()}
    if name.endswith("CreateMultipartUpload"):
        out["create_algo"] = hdrs.get("x-amz-checksum-algorithm")
    elif name.endswith("UploadPart"):
        out["parts"] += 1
        out["part_crc32"] += "x-amz-checksum-crc32" in hdrs
    elif name.endswith("CompleteMultipartUpload"):
        body = request.body if isinstance(request.body, bytes) else b""
        out["complete_crc32"] = body.count(b"<ChecksumCRC32>")
s3.meta.events.register("before-send.s3.*", seen)
s3.upload_file(os.environ["BIG"], b, "py/big20.bin")
h = s3.head_object(Bucket=b, Key="py/big20.bin")
out["big_etag"], out["big_size"] = h["ETag"], h["ContentLength"]
small = open(os.environ["SMALL"], "rb").read()
r = s3.put_object(Bucket=b, Key="py/small.bin", Body=small)
out["put_crc32"] = r.get("ChecksumCRC32")
g = s3.get_object(Bucket=b, Key="py/small.bin", ChecksumMode="ENABLED")
body = g["Body"].read()  # botocore checks x-amz-checksum-crc32 against the body here
out["get_crc32"] = g.get("ChecksumCRC32")
out["get_sha"] = hashlib.sha256(body).hexdigest()
s3.download_file(b, "py/big20.bin", os.environ["DOWN"])
print(json.dumps(out))
'''


def test_pyenv_boto3_crc32(pyenv_python, endpoint, s3, bucket, tmp_path):
    big = tmp_path / "big20.bin"
    big_sha = write_random(big, 20 * MiB)
    small = tmp_path / "small.bin"
    small_sha = write_random(small, 123457)
    down = tmp_path / "down20.bin"
    log = AccessLog(endpoint)
    p = helpers.run_pyenv(pyenv_python, PYENV_SCRIPT, {
        "EP": endpoint.url, "AK": endpoint.access_key, "SK": endpoint.secret_key,
        "BUCKET": bucket, "BIG": str(big), "SMALL": str(small), "DOWN": str(down)}, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["big_size"] == 20 * MiB, out
    assert out["big_etag"] == mpu_etag(big, AWS_PART), out
    # what this botocore really sent: CRC32 on every part and in the Complete body
    assert (out["create_algo"], out["parts"], out["part_crc32"], out["complete_crc32"]) == (
        "CRC32", 3, 3, 3), out
    parts = [e for e in log.entries(bucket) if e[0] == "PUT" and "partNumber=" in e[2]]
    assert len(parts) == 3 and all(e[1] == 200 for e in parts), parts
    crc = helpers.crc32_b64(small.read_bytes())
    assert out["put_crc32"] == crc, out
    assert out["get_crc32"] == crc, out
    assert out["get_sha"] == small_sha
    assert sha_file(down) == big_sha
    g = s3.get_object(Bucket=bucket, Key="py/small.bin")
    assert sha_bytes(g["Body"].read()) == small_sha
