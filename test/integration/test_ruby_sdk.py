"""The AWS SDK for Ruby v3 (aws-sdk-s3 1.117, aws-sdk-core 3.168: Debian's ruby-aws-sdk-s3,
installed by `make deps`) against a standalone target ([target]), a cluster proxy that relays
([proxy]), the cluster's second proxy that answers with 307s ([redirect]: s3.redirect=true, which
this SDK follows and re-signs), and an S3-backed bucket of a cache cluster with s3rver as its
upstream ([s3rver]: cold reads, write-through of every write).

What this SDK does that the others in the suite do not: Content-MD5 on every PutObject and
UploadPart (its `compute_checksums` default), `Expect: 100-continue` on bodies of 1 MiB or
more, its own transfer helpers (upload_file in 5 MiB parts on 10 threads; download_file asks
for `?partNumber=1` to learn the part count, then GETs every part on threads, or ranges),
multipart copy_to (UploadPartCopy with ranges), and its own key encoder.

ruby_sdk_checks.rb runs every operation once per endpoint and prints what it saw, with every
request's headers; the tests below assert on that."""
import json
import os
import shutil
import subprocess

import pytest

import helpers
from cachefix import profiles, s3rver  # noqa: F401
from conftest import REPO
from sdkfix import VARIANTS, sdk_variant

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ruby_sdk_checks.rb")
MiB = 1024 * 1024


def run_checks(url, access_key, secret_key, bucket, new_bucket, tmp, cold_key=""):
    """Runs ruby_sdk_checks.rb; returns its JSON ({check: result})."""
    if not shutil.which("ruby") or subprocess.run(
            ["ruby", "-e", "require 'aws-sdk-s3'"], capture_output=True).returncode != 0:
        pytest.skip("ruby or aws-sdk-s3 missing (make deps installs ruby-aws-sdk-s3)")
    env = dict(os.environ, HOARD_ENDPOINT=url, HOARD_ACCESS_KEY=access_key,
               HOARD_SECRET_KEY=secret_key, HOARD_BUCKET=bucket, HOARD_NEW_BUCKET=new_bucket,
               HOARD_TMP=str(tmp), HOARD_COLD_KEY=cold_key)
    env = {k: v for k, v in env.items() if not k.startswith("AWS_")}
    p = subprocess.run(["ruby", SCRIPT], env=env, capture_output=True, timeout=300, cwd=REPO)
    assert p.returncode == 0, "ruby failed (%d)\nstdout: %s\nstderr: %s" % (
        p.returncode, p.stdout.decode(errors="replace")[-2000:],
        p.stderr.decode(errors="replace")[-3000:])
    return json.loads(p.stdout.decode().strip().splitlines()[-1])


COLD = helpers.pattern_bytes(100 * 1024 + 5, 11)


@pytest.fixture(scope="module", params=VARIANTS)
def rb(request, tmp_path_factory, log_dir):
    """What the script saw, in a bucket of its own (rb["_kind"]: the variant)."""
    tmp = tmp_path_factory.mktemp("rb")
    yield from sdk_variant(request, tmp_path_factory, log_dir, "rb", COLD,
                           lambda *a: run_checks(*a[:5], tmp, cold_key=a[5]))


def result(rb, name):
    """The check's observations; fails with the SDK's error when the check raised."""
    r = dict(rb[name])
    wire = r.pop("wire")
    assert r["ok"], "%s: %s %s\nrequests: %s" % (name, r.get("error"), r.get("backtrace"),
                                                   json.dumps([(w["method"], w["path"],
                                                                w["query"], w.get("status"))
                                                               for w in wire]))
    r["wire"] = wire
    return r


def requests_of(r, method, *query):
    """The requests of a check with that method whose query has all the given names."""
    return [w for w in r["wire"] if w["method"] == method and all(q in w["query"] for q in query)]


def answered(r, method, *query):
    """requests_of without the [redirect] proxy's 307s (each is followed by the request the
    SDK sent again to the target, which requests_of also lists)."""
    return [w for w in requests_of(r, method, *query) if w.get("status") != 307]


def test_ruby_create_and_delete_bucket(rb):
    r = result(rb, "create_bucket")
    assert (r["create_status"], r["delete_status"]) == (200, 204), r
    assert r["head_after_delete"]["status"] == 404, r


def test_ruby_put_string_with_content_md5(rb):
    r = result(rb, "put_string")
    assert r["same"] and r["etag"] == r["want_etag"], r
    assert r["content_type"] == "text/plain; charset=utf-8"
    assert r["metadata"] == {"color": "blue", "x-mixed": "Case Value"}, r
    put = requests_of(r, "PUT")
    # what makes this client interesting: it sent Content-MD5 (else this proves nothing)
    assert put[0]["headers"].get("content-md5") == r["want_md5_b64"], put[0]["headers"]


def test_ruby_put_file_with_expect_continue(rb):
    r = result(rb, "put_file_expect_continue")
    assert r["same"] and r["etag"] == r["want_etag"] and r["length"] == 3 * MiB + 17, r
    put = requests_of(r, "PUT")
    assert put[0]["headers"].get("expect") == "100-continue", put[0]["headers"]
    if rb["_kind"] == "redirect":
        # the redirecting proxy answered the PUT with a 307 before its body (Expect), and the
        # SDK sent it again to the owning target, re-signed
        assert [w["status"] for w in put] == [307, 200], put
        assert put[0]["port"] != put[1]["port"]
    else:
        assert [w["status"] for w in put] == [200], put


def test_ruby_upload_file_and_download_file_by_parts(rb):
    r = result(rb, "upload_download_file")
    size = 22 * MiB + 12345
    assert r["uploaded"] and r["length"] == size and r["same"], r
    parts = requests_of(r, "PUT", "partNumber", "uploadId")
    # 5 MiB parts (the helper's default), each with its Content-MD5
    assert len({w["query"]["partNumber"] for w in parts}) == 5, parts
    assert all(w["headers"].get("content-md5") for w in parts), parts
    if rb["_kind"] == "s3rver":
        # written through: the object keeps the upstream's ETag (s3rver: the MD5 of the bytes)
        assert len(r["etag"].strip('"')) == 32, r
    else:
        assert r["etag"].endswith('-5"'), r
        # download_file learned the part count from ?partNumber=1 and read part by part
        heads = answered(r, "HEAD", "partNumber")
        assert heads and heads[0]["response_headers"].get("x-amz-mp-parts-count") == "5", heads
        gets = answered(r, "GET", "partNumber")
        assert sorted(int(w["query"]["partNumber"]) for w in gets) == [1, 2, 3, 4, 5], gets


def test_ruby_download_file_by_ranges(rb):
    r = result(rb, "download_ranges")
    assert r["same"], r
    gets = answered(r, "GET")
    assert len(gets) == 4 and all(w["headers"].get("range") for w in gets), gets
    assert all(w["status"] == 206 for w in gets), gets


def test_ruby_flexible_checksums_and_bad_md5(rb):
    r = result(rb, "checksums")
    # CRC32C needs the aws-crt gem, which Debian does not package
    for alg in ("CRC32", "SHA1", "SHA256"):
        put = [w for w in requests_of(r, "PUT") if w["path"].endswith("/alg/" + alg)][0]
        sent = put["headers"].get("x-amz-checksum-" + alg.lower())
        assert sent, (alg, put["headers"])  # else this tests nothing
        assert r[alg]["same"], (alg, r[alg])
        if rb["_kind"] == "s3rver":
            continue  # a write-through object's GET may be s3rver's, which keeps no checksums
        # GET with checksum mode: hoard returned the stored value and the SDK validated it
        assert r[alg]["value"] == sent and r[alg]["validated"] == alg, (alg, r[alg])
    assert (r["wrong_md5"]["code"], r["wrong_md5"]["status"]) == ("BadDigest", 400), r
    assert r["wrong_stored"]["status"] == 404, r


def test_ruby_odd_keys_and_empty_body(rb):
    r = result(rb, "odd_keys")
    keys = ["odd/sp ace+plus", "odd/per%cent", "odd/\u00fcnic\u00f8de/\u6587", "odd/a=b&c?d#e",
            "odd/tilde~star*(paren)"]
    assert r["bodies"] == {k: "body of " + k for k in keys}, r["bodies"]
    assert r["listed"] == sorted(keys + ["odd/empty"], key=lambda k: k.encode()), r
    assert r["empty_length"] == 0 and r["empty_etag"] == '"d41d8cd98f00b204e9800998ecf8427e"'


def test_ruby_listings_and_paging(rb):
    r = result(rb, "list")
    assert r["keys"] == ["list/c", "list/d", "list/e"], r
    assert r["prefixes"] == ["list/a/", "list/b/"], r
    assert r["key_count"] == 5 and r["sizes"] == [6, 6, 6], r
    assert r["v2_pages"] == [["list/a/1", "list/a/2"], ["list/b/1", "list/c"],
                             ["list/d", "list/e"]], r
    assert r["v1_pages"] == [["list/a/1", "list/a/2", "list/b/1", "list/c"],
                             ["list/d", "list/e"]], r
    assert r["resource"] == ["list/b/1"], r


def test_ruby_copy_object_and_multipart_copy(rb):
    r = result(rb, "copy")
    assert r["same"] and r["metadata"] == {"color": "blue", "x-mixed": "Case Value"}, r
    assert r["etag"] == r["replaced_etag"] == r["want_etag"], r
    assert (r["replaced_metadata"], r["replaced_type"]) == ({"new": "yes"}, "application/x-new")
    assert r["multipart_same"], r
    copies = requests_of(r, "PUT", "partNumber", "uploadId")
    assert len(copies) >= 2 and all(w["headers"].get("x-amz-copy-source-range", "").startswith(
        "bytes=") for w in copies), copies


def test_ruby_conditional_and_range_get(rb):
    r = result(rb, "conditional_range")
    assert r["status"] == 206 and r["same"], r
    assert r["content_range"] == "bytes 100-1123/%d" % (3 * MiB + 17), r
    assert r["if_none_match"]["status"] == 304, r
    assert (r["if_match_wrong"]["code"], r["if_match_wrong"]["status"]) == \
        ("PreconditionFailed", 412), r
    assert r["if_modified_since_future"]["status"] == 304, r


def test_ruby_presigned_put_and_get(rb):
    r = result(rb, "presigned")
    assert r["signed"] and (r["put_status"], r["get_status"]) == (200, 200) and r["same"], r
    # the redirecting proxy answers a presigned URL with a 307 to the owning target, whose
    # capability lets the followed request in; the others answer it themselves
    # (a PUT whose body comes at once, without Expect, is relayed by that proxy too)
    assert r["seen"] == ([200, 307, 200] if rb["_kind"] == "redirect" else [200, 200]), r
    assert r["bad_status"] == 403, r


def test_ruby_multipart_calls(rb):
    r = result(rb, "multipart_calls")
    assert r["parts"] == r["want_parts"], r
    assert "mpc/calls.bin" in r["uploads_before"], r
    assert r["same"] and r["content_type"] == "x/y" and r["metadata"] == {"k": "v"}, r
    if rb["_kind"] != "s3rver":
        assert r["etag"].endswith('-2"'), r
    assert (r["too_small"]["code"], r["too_small"]["status"]) == ("EntityTooSmall", 400), r
    assert r["abort_status"] == 204 and r["uploads_after"] == [], r
    assert (r["no_upload"]["code"], r["no_upload"]["status"]) == ("NoSuchUpload", 404), r


@pytest.mark.parametrize("case,code,status", [
    ("get_missing_key", "NoSuchKey", 404),
    ("head_missing_key", "NotFound", 404),  # a HEAD has no body: the SDK names it by status
    ("get_missing_bucket", "NoSuchBucket", 404),
    ("list_missing_bucket", "NoSuchBucket", 404),
    ("put_missing_bucket", "NoSuchBucket", 404),
    ("bad_secret", "SignatureDoesNotMatch", 403),
])
def test_ruby_error_shapes(rb, case, code, status):
    e = result(rb, "errors")[case]
    assert e is not None, "%s succeeded" % case
    assert (e["code"], e["status"]) == (code, status), e


def test_ruby_bad_secret_stores_nothing(rb):
    assert result(rb, "errors")["bad_secret_stored"]["status"] == 404


def test_ruby_delete_object_objects_and_batch_delete(rb):
    r = result(rb, "delete")
    assert r["delete_status"] == 204 and r["head_after_delete"]["status"] == 404, r
    assert r["deleted"] == ["list/a/1", "list/a/2", "list/never-existed"], r
    assert r["errors"] == [] and r["left"] == [], r
    post = requests_of(r, "POST", "delete")
    assert len(post) == 2 and all(w["headers"].get("content-md5") for w in post), post


def test_ruby_cold_get_of_s3_backed_bucket(rb):
    if rb["_kind"] != "s3rver":
        pytest.skip("S3-backed variant only")
    r = result(rb, "cold_get")
    assert r["head_length"] == r["length"] == len(COLD), r
    assert r["md5"] == helpers.md5_hex(COLD) and r["etag"] == '"%s"' % r["md5"], r
    assert r["warm_head_etag"] == r["etag"] and r["metadata"] == {"origin": "upstream"}, r
    assert bytes(r["range"]) == COLD[10:20] and \
        r["content_range"] == "bytes 10-19/%d" % len(COLD), r


def test_ruby_writes_reached_the_upstream(rb):
    """Write-through: what the SDK wrote through hoard (and did not delete) is at s3rver."""
    if rb["_kind"] != "s3rver":
        pytest.skip("S3-backed variant only")
    up = rb["_upstream"]
    assert up.get("str/hello.txt") == helpers.sha256_hex(
        "hello from the AWS SDK for Ruby \u00e9\u00e8".encode()), up
    assert up.get("file/big.bin") == up.get("file/ranged.bin") is not None, up
    assert up.get("mpu/big.bin") == up.get("copy/mpu.bin") is not None, up
    assert up.get("copy/str.txt") == up["str/hello.txt"], up
    assert not [k for k in up if k.startswith("list/")], up
    assert "alg/wrong" not in up and "bad/secret" not in up, up
