"""The AWS SDK for Go v2 (Debian's golang-github-aws-aws-sdk-go-v2-dev: service/s3 1.29 and
feature/s3/manager, built with Debian's Go 1.19 in GOPATH mode, nothing downloaded; installed
by `make deps`) against a standalone target ([target]), a cluster proxy that relays ([proxy]),
the cluster's second proxy that answers with 307s ([redirect]: s3.redirect=true; net/http
follows them and drops the Authorization header on the way to the target, so what lets the
request in there is the proxy's signed capability in the Location) and an S3-backed bucket of a
cache cluster with s3rver as its upstream ([s3rver]: cold reads, write-through).

What this SDK does that the others in the suite do not: it signs every payload's SHA-256 over
http (`x-amz-content-sha256` is the body's hash, never UNSIGNED-PAYLOAD), its manager's
Uploader sends 5 MiB parts on goroutines and its Downloader reads by ranges, the first of which
learns the size; flexible checksums go in headers (CRC32C included); errors are typed
(`*types.NoSuchKey`).

go_sdk_checks/main.go runs every operation once per endpoint and prints what it saw, with every
request's headers (each hop of a redirect too); the tests below assert on that."""
import json
import os
import shutil
import subprocess

import pytest

import helpers
from cachefix import profiles, s3rver  # noqa: F401
from sdkfix import VARIANTS, sdk_variant

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "go_sdk_checks")
GOPATH = "/usr/share/gocode"
SDK = os.path.join(GOPATH, "src/github.com/aws/aws-sdk-go-v2/service/s3")
MiB = 1024 * 1024


@pytest.fixture(scope="session")
def go_checks(tmp_path_factory):
    """The checks program, built once per session (Go's build cache keeps later builds quick)."""
    if not shutil.which("go") or not os.path.isdir(SDK):
        pytest.skip("go or the AWS SDK for Go v2 missing (make deps installs golang-go and "
                    "golang-github-aws-aws-sdk-go-v2-dev)")
    out = str(tmp_path_factory.mktemp("gosdk") / "go_sdk_checks")
    env = dict(os.environ, GO111MODULE="off", GOPATH=GOPATH, GOFLAGS="")
    if not os.environ.get("HOME") and not os.environ.get("XDG_CACHE_HOME"):
        env["GOCACHE"] = str(tmp_path_factory.mktemp("gocache"))  # go needs one somewhere
    p = subprocess.run(["go", "build", "-o", out, "."], cwd=SRC, env=env, capture_output=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr.decode(errors="replace")[-3000:]
    return out


def run_checks(prog, url, access_key, secret_key, bucket, new_bucket, cold_key=""):
    """Runs the checks program; returns its JSON ({check: result})."""
    env = dict(os.environ, HOARD_ENDPOINT=url, HOARD_ACCESS_KEY=access_key,
               HOARD_SECRET_KEY=secret_key, HOARD_BUCKET=bucket, HOARD_NEW_BUCKET=new_bucket,
               HOARD_COLD_KEY=cold_key)
    env = {k: v for k, v in env.items() if not k.startswith("AWS_")}
    p = subprocess.run([prog], env=env, capture_output=True, timeout=300)
    assert p.returncode == 0, "go checks failed (%d)\nstdout: %s\nstderr: %s" % (
        p.returncode, p.stdout.decode(errors="replace")[-2000:],
        p.stderr.decode(errors="replace")[-3000:])
    return json.loads(p.stdout.decode().strip().splitlines()[-1])


COLD = helpers.pattern_bytes(100 * 1024 + 5, 13)


@pytest.fixture(scope="module", params=VARIANTS)
def gosdk(request, go_checks, log_dir, tmp_path_factory):
    """What the program saw, in a bucket of its own (gosdk["_kind"]: the variant)."""
    yield from sdk_variant(request, tmp_path_factory, log_dir, "go", COLD,
                           lambda *a: run_checks(go_checks, *a[:5], cold_key=a[5]))


def result(gosdk, name):
    """The check's observations; fails with the SDK's error when the check failed."""
    r = dict(gosdk[name])
    wire = r.pop("wire")
    assert r["ok"], "%s: %s\nrequests: %s" % (name, r.get("error"), json.dumps(
        [(w["method"], w["path"], w["query"], w.get("status")) for w in wire]))
    r["wire"] = wire
    return r


def answered(r, method, *query):
    """The requests of a check with that method whose query has all the given names, without
    the [redirect] proxy's 307s (each is followed by the request sent again to the target)."""
    return [w for w in r["wire"] if w["method"] == method and w.get("status") != 307 and
            all(q in w["query"] for q in query)]


def test_go_create_and_delete_bucket(gosdk):
    r = result(gosdk, "create_bucket")
    assert r["head_after_delete"]["status"] == 404, r


def test_go_put_signs_the_payload_hash(gosdk):
    r = result(gosdk, "put_string")
    assert r["same"] and r["etag"] == r["want_etag"], r
    assert r["content_type"] == "text/plain; charset=utf-8"
    assert r["metadata"] == {"color": "blue", "x-mixed": "Case Value"}, r
    put = [w for w in r["wire"] if w["method"] == "PUT"]
    # what makes this client interesting: the body's own SHA-256 is signed
    assert put[0]["headers"].get("x-amz-content-sha256") == r["want_sha256"], put[0]["headers"]
    # its body comes at once (no Expect: 100-continue): even the redirecting proxy relays it
    # (net/http would not send it again after a 307: the SDK would fail with TemporaryRedirect)
    assert [w["status"] for w in put] == [200], put
    get = [w for w in r["wire"] if w["method"] == "GET"]
    if gosdk["_kind"] == "redirect":
        # net/http followed the GET's 307 to the target, without Authorization (another
        # host:port): the proxy's signed capability let it in
        assert [w["status"] for w in get] == [307, 200], get
        assert "authorization" in get[0]["headers"] and "authorization" not in get[1]["headers"]
        assert get[0]["host"] != get[1]["host"] and "psig" in get[1]["query"], get
    else:
        assert [w["status"] for w in get] == [200], get


def test_go_put_3mib(gosdk):
    r = result(gosdk, "put_big")
    assert r["same"] and r["etag"] == r["want_etag"], r


def test_go_manager_uploader_and_downloader(gosdk):
    r = result(gosdk, "uploader_downloader")
    assert r["parts"] == 5 and r["downloaded"] == 22 * MiB + 12345 and r["same"], r
    if gosdk["_kind"] != "s3rver":  # written through: s3rver's ETag, the MD5 of the bytes
        assert r["etag"].endswith('-5"'), r
    parts = answered(r, "PUT", "partNumber", "uploadId")
    assert sorted(int(w["query"]["partNumber"]) for w in parts) == [1, 2, 3, 4, 5], parts
    gets = answered(r, "GET")
    assert len(gets) == 5 and all(w["headers"].get("range", "").startswith("bytes=")
                                  for w in gets), gets
    assert all(w["status"] == 206 for w in gets), gets


def test_go_flexible_checksums_and_bad_md5(gosdk):
    r = result(gosdk, "checksums")
    for alg in ("CRC32", "CRC32C", "SHA1", "SHA256"):
        put = [w for w in answered(r, "PUT") if w["path"].endswith("/alg/" + alg)][0]
        sent = put["headers"].get("x-amz-checksum-" + alg.lower())
        assert sent, (alg, put["headers"])  # else this tests nothing
        assert r[alg]["same"], (alg, r[alg])
        if gosdk["_kind"] != "s3rver":  # a write-through GET may be s3rver's: no checksums
            # hoard returned the stored value; the SDK validated the body against it
            assert r[alg]["value"] == sent, (alg, r[alg])
    assert (r["wrong_md5"]["code"], r["wrong_md5"]["status"]) == ("BadDigest", 400), r
    assert r["wrong_stored"]["status"] == 404, r


def test_go_odd_keys_and_empty_body(gosdk):
    r = result(gosdk, "odd_keys")
    keys = ["odd/sp ace+plus", "odd/per%cent", "odd/\u00fcnic\u00f8de/\u6587", "odd/a=b&c?d#e",
            "odd/tilde~star*(paren)"]
    assert r["bodies"] == {k: "body of " + k for k in keys}, r["bodies"]
    assert r["listed"] == sorted(keys + ["odd/empty"], key=lambda k: k.encode()), r
    assert r["empty_length"] == 0 and r["empty_etag"] == '"d41d8cd98f00b204e9800998ecf8427e"'


def test_go_listings_and_paging(gosdk):
    r = result(gosdk, "list")
    assert r["keys"] == ["list/c", "list/d", "list/e"], r
    assert r["prefixes"] == ["list/a/", "list/b/"], r
    assert r["key_count"] == 5 and r["sizes"] == [6, 6, 6], r
    assert r["v2_pages"] == [["list/a/1", "list/a/2"], ["list/b/1", "list/c"],
                             ["list/d", "list/e"]], r
    assert r["v1_pages"] == [["list/a/1", "list/a/2", "list/b/1", "list/c"],
                             ["list/d", "list/e"]], r


def test_go_copy_object_and_upload_part_copy(gosdk):
    r = result(gosdk, "copy")
    assert r["same"] and r["etag"] == r["want_etag"], r
    assert r["metadata"] == {"color": "blue", "x-mixed": "Case Value"}, r
    assert (r["replaced_metadata"], r["replaced_type"]) == ({"new": "yes"}, "application/x-new")
    assert r["multipart_parts"] == 5 and r["multipart_same"], r


def test_go_conditional_and_range_get(gosdk):
    r = result(gosdk, "conditional_range")
    assert r["same"] and r["content_range"] == "bytes 100-1123/%d" % (3 * MiB + 17), r
    assert r["if_none_match"]["status"] == 304, r
    assert (r["if_match_wrong"]["code"], r["if_match_wrong"]["status"]) == \
        ("PreconditionFailed", 412), r
    assert r["if_modified_since_future"]["status"] == 304, r


def test_go_presigned_put_and_get(gosdk):
    r = result(gosdk, "presigned")
    assert (r["put_status"], r["get_status"], r["same"]) == (200, 200, True), r
    assert r["bad_status"] == 403, r


def test_go_multipart_calls(gosdk):
    r = result(gosdk, "multipart_calls")
    assert r["parts"] == r["want_parts"], r
    assert "mpc/calls.bin" in r["uploads_before"], r
    assert r["same"] and r["content_type"] == "x/y" and r["metadata"] == {"k": "v"}, r
    if gosdk["_kind"] != "s3rver":
        assert r["etag"].endswith('-2"'), r
    assert (r["too_small"]["code"], r["too_small"]["status"]) == ("EntityTooSmall", 400), r
    assert r["uploads_after"] == 0, r
    assert (r["no_upload"]["code"], r["no_upload"]["status"]) == ("NoSuchUpload", 404), r


@pytest.mark.parametrize("case,code,status", [
    ("get_missing_key", "NoSuchKey", 404),
    ("head_missing_key", "NotFound", 404),  # a HEAD has no body: the SDK names it by status
    ("get_missing_bucket", "NoSuchBucket", 404),
    ("list_missing_bucket", "NoSuchBucket", 404),
    ("put_missing_bucket", "NoSuchBucket", 404),
    ("bad_secret", "SignatureDoesNotMatch", 403),
])
def test_go_error_shapes(gosdk, case, code, status):
    e = result(gosdk, "errors")[case]
    assert e is not None, "%s succeeded" % case
    assert (e["code"], e["status"]) == (code, status), e


def test_go_typed_errors_and_nothing_stored(gosdk):
    r = result(gosdk, "errors")
    assert r["typed_no_such_key"], r  # errors.As(err, *types.NoSuchKey)
    assert r["bad_secret_stored"]["status"] == 404, r


def test_go_delete_object_and_objects(gosdk):
    r = result(gosdk, "delete")
    assert r["head_after_delete"]["status"] == 404, r
    assert r["deleted"] == ["list/a/1", "list/a/2", "list/never-existed"], r
    assert r["errors"] == 0, r


def test_go_cold_get_of_s3_backed_bucket(gosdk):
    if gosdk["_kind"] != "s3rver":
        pytest.skip("S3-backed variant only")
    r = result(gosdk, "cold_get")
    assert r["head_length"] == r["length"] == len(COLD), r
    assert r["md5"] == helpers.md5_hex(COLD) and r["etag"] == '"%s"' % r["md5"], r
    assert r["metadata"] == {"origin": "upstream"}, r
    assert bytes.fromhex(r["range"]) == COLD[10:20], r
    assert r["content_range"] == "bytes 10-19/%d" % len(COLD), r


def test_go_writes_reached_the_upstream(gosdk):
    """Write-through: what the SDK wrote through hoard (and did not delete) is at s3rver."""
    if gosdk["_kind"] != "s3rver":
        pytest.skip("S3-backed variant only")
    up = gosdk["_upstream"]
    assert up.get("str/hello.txt") == helpers.sha256_hex(
        "hello from the AWS SDK for Go v2 \u00e9\u00e8".encode()), up
    assert up.get("mpu/big.bin") == up.get("copy/mpu.bin") is not None, up
    assert up.get("copy/str.txt") == up["str/hello.txt"], up
    assert "list/c" not in up and "list/a/1" not in up and "list/b/1" in up, up
    assert "alg/wrong" not in up and "bad/secret" not in up, up
