"""Request payloads and integrity, built here byte by byte with an independent signer
(helpers.ChunkSigner: hmac/hashlib per the AWS documentation, seeded by botocore's SigV4) and
independent checksums (helpers.crc32c / crc64nvme, table-driven): aws-chunked bodies in all
three streaming forms, x-amz-checksum-{crc32,crc32c,crc64nvme,sha1,sha256} in headers,
trailers and CompleteMultipartUpload, SigV4 signed with `Date`, unknown `Expect` values.
Every rejected upload is checked to have stored nothing (and left an older object alone)."""
import base64
import datetime
import functools
import hashlib
import re
import xml.etree.ElementTree as ET

import pytest

import helpers
from helpers import check_s3_error, md5_hex, pattern_bytes

# every test using `endpoint` runs against a standalone target and through a cluster proxy
ENDPOINTS = ("target", "proxy")

ALGOS = ["crc32", "crc32c", "crc64nvme", "sha1", "sha256"]
NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
MiB = 1024 * 1024
SIGNED = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
SIGNED_TRAILER = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
UNSIGNED_TRAILER = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"


def assert_unchanged(endpoint, raw, bucket, key, old):
    """key still holds `old` (None: does not exist) and no temp file is left behind."""
    r = raw.request("GET", "/%s/%s" % (bucket, key))
    if old is None:
        check_s3_error(r, 404, "NoSuchKey")
    else:
        assert r.status == 200 and r.body == old, r
    helpers.wait_until(lambda: not endpoint.tmp_files(), timeout=5, what="no temp files")


def get_checksum(raw, bucket, key, algo):
    """x-amz-checksum-<algo> of a GET with x-amz-checksum-mode: ENABLED, and the body."""
    r = raw.request("GET", "/%s/%s" % (bucket, key), headers={"x-amz-checksum-mode": "ENABLED"})
    assert r.status == 200, r
    return r.header("x-amz-checksum-" + algo), r.body


def chunked_put(endpoint, bucket, key, payload, body, decoded_len, extra=None, signer=False):
    """PUT an aws-chunked body. The headers are SigV4-signed by botocore with
    x-amz-content-sha256 = payload; with signer=True, body is a callable taking the
    ChunkSigner seeded from those headers. Returns the response."""
    path = "/%s/%s" % (bucket, key)
    h = {"Content-Encoding": "aws-chunked", "x-amz-decoded-content-length": str(decoded_len)}
    h.update(extra or {})
    h = helpers.sign_headers("PUT", endpoint.raw().url(path), endpoint.access_key,
                             endpoint.secret_key, h, payload=payload)
    if signer:
        body = body(helpers.ChunkSigner(h, endpoint.secret_key))
    return helpers.raw_request(endpoint.host, endpoint.port, "PUT", path, h, body)


# ---------------------------------------------------------------- the test-side tools

def test_independent_checksums_and_signer():
    """The test's own CRCs and chunk signer reproduce published values: the CRC catalogue's
    check values, and the AWS documentation's chunked-upload examples (seed signature, every
    chunk signature, the trailer signature and its CRC32C)."""
    assert helpers.crc32c(b"123456789") == 0xE3069283
    assert helpers.crc64nvme(b"123456789") == 0xAE8B14860A799888
    assert helpers.crc64nvme(b"6789", helpers.crc64nvme(b"12345")) == 0xAE8B14860A799888
    assert helpers.checksum_b64("crc32", b"hello world") == "DUoRhQ=="
    assert helpers.checksum_b64("crc32c", b"a" * 66560) == "sOO8/Q=="
    auth = ("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
            "aws4_request,SignedHeaders=host,Signature=%s")
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    for seed, sigs, tsig in [
            ("4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
             ["ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
              "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
              "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"], None),
            ("106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e",
             ["b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2",
              "1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7",
              "2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992"],
             "d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435")]:
        s = helpers.ChunkSigner({"X-Amz-Date": "20130524T000000Z",
                                 "Authorization": auth % seed}, secret)
        got = [re.search(rb"chunk-signature=([0-9a-f]{64})", s.chunk(c)).group(1).decode()
               for c in (b"a" * 65536, b"a" * 1024, b"")]
        assert got == sigs
        if tsig:
            assert s.trailer([("x-amz-checksum-crc32c", "sOO8/Q==")]) == (
                b"x-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:%s\r\n\r\n" %
                tsig.encode())


# ---------------------------------------------------------------- STREAMING-...-PAYLOAD

DATA = pattern_bytes(200000, seed=301)
CHUNKS = [DATA[:65536], DATA[65536:131072], DATA[131072:]]


def test_streaming_signed_payload(endpoint, raw, s3, bucket):
    r = chunked_put(endpoint, bucket, "signed", SIGNED, lambda s: s.body(CHUNKS), len(DATA),
                    signer=True)
    assert r.status == 200, r
    assert r.header("ETag") == '"%s"' % md5_hex(DATA)
    g = s3.get_object(Bucket=bucket, Key="signed")
    assert g["Body"].read() == DATA and g["ContentLength"] == len(DATA)
    assert g["ResponseMetadata"]["HTTPHeaders"].get("content-encoding") in (None, "")
    # one byte-sized chunk after another, and a zero-byte object
    r = chunked_put(endpoint, bucket, "tiny", SIGNED, lambda s: s.body([b"x", b"y", b"z"]), 3,
                    signer=True)
    assert r.status == 200, r
    r = chunked_put(endpoint, bucket, "empty", SIGNED, lambda s: s.body([]), 0, signer=True)
    assert r.status == 200, r
    assert raw.request("GET", "/%s/tiny" % bucket).body == b"xyz"
    g = raw.request("GET", "/%s/empty" % bucket)
    assert g.status == 200 and g.body == b"", g


def flip_sig(blob, label=b"chunk-signature="):
    """blob with the first hex digit after the first `label` changed."""
    i = blob.index(label) + len(label)
    return blob[:i] + (b"1" if blob[i:i + 1] == b"0" else b"0") + blob[i + 1:]


def _tamper(kind):
    """A body builder with one defect: kind names which."""
    def build(s):
        parts = [s.chunk(c) for c in CHUNKS]
        last = s.chunk(b"")
        if kind == "first-signature":
            parts[0] = flip_sig(parts[0])
        elif kind == "second-chunk-data":  # right signature, other bytes
            parts[1] = parts[1][:-3] + bytes([parts[1][-3] ^ 1]) + b"\r\n"
        elif kind == "chunks-swapped":
            parts[0], parts[1] = parts[1], parts[0]
        elif kind == "final-signature":
            last = flip_sig(last)
        elif kind == "signature-missing":
            parts[2] = re.sub(rb";chunk-signature=[0-9a-f]{64}", b"", parts[2])
        return b"".join(parts) + last + b"\r\n"
    return build


@pytest.mark.parametrize("kind", ["first-signature", "second-chunk-data", "chunks-swapped",
                                  "final-signature", "signature-missing"])
def test_streaming_signed_bad_chunk(endpoint, raw, bucket, kind):
    """A chunk whose signature does not verify: 403 SignatureDoesNotMatch, and the earlier
    object under that key stays as it was."""
    assert raw.request("PUT", "/%s/victim" % bucket, body=b"original").status == 200
    r = chunked_put(endpoint, bucket, "victim", SIGNED, _tamper(kind), len(DATA), signer=True)
    check_s3_error(r, 403, "SignatureDoesNotMatch")
    assert_unchanged(endpoint, raw, bucket, "victim", b"original")
    r = chunked_put(endpoint, bucket, "fresh", SIGNED, _tamper(kind), len(DATA), signer=True)
    check_s3_error(r, 403, "SignatureDoesNotMatch")
    assert_unchanged(endpoint, raw, bucket, "fresh", None)


@pytest.mark.parametrize("algo", ALGOS)
def test_streaming_signed_trailer(endpoint, raw, bucket, algo):
    """STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER: signed chunks, then the checksum trailer
    and x-amz-trailer-signature; stored, and the checksum echoed and served."""
    name = "x-amz-checksum-" + algo
    want = helpers.checksum_b64(algo, DATA)
    r = chunked_put(endpoint, bucket, "st", SIGNED_TRAILER,
                    lambda s: s.body(CHUNKS, [(name, want)]), len(DATA),
                    {"x-amz-trailer": name}, signer=True)
    assert r.status == 200, r
    assert r.header(name) == want, r
    assert get_checksum(raw, bucket, "st", algo) == (want, DATA)


@pytest.mark.parametrize("defect", ["trailer-signature", "checksum", "trailer-missing"])
def test_streaming_signed_trailer_rejected(endpoint, raw, bucket, defect):
    name = "x-amz-checksum-crc32c"
    good = helpers.checksum_b64("crc32c", DATA)

    def build(s):
        out = b"".join(s.chunk(c) for c in CHUNKS) + s.chunk(b"")
        if defect == "trailer-signature":
            return out + flip_sig(s.trailer([(name, good)]), b"x-amz-trailer-signature:")
        if defect == "checksum":  # correctly signed, but not the data's CRC32C
            return out + s.trailer([(name, helpers.checksum_b64("crc32c", b"other"))])
        return out + s.trailer([])  # promised in x-amz-trailer, never sent
    want = {"trailer-signature": (403, "SignatureDoesNotMatch"),
            "checksum": (400, "BadDigest"), "trailer-missing": (400, None)}[defect]
    assert raw.request("PUT", "/%s/victim" % bucket, body=b"original").status == 200
    r = chunked_put(endpoint, bucket, "victim", SIGNED_TRAILER, build, len(DATA),
                    {"x-amz-trailer": name}, signer=True)
    assert r.status == want[0], r
    code = helpers.parse_s3_error(r.body)["Code"]
    check_s3_error(r, want[0], want[1] or code)
    assert_unchanged(endpoint, raw, bucket, "victim", b"original")


# ---------------------------------------------------------------- STREAMING-UNSIGNED-...

@pytest.mark.parametrize("algo", ALGOS)
def test_unsigned_trailer_checksums(endpoint, raw, bucket, algo):
    """STREAMING-UNSIGNED-PAYLOAD-TRAILER (what botocore >= 1.36 sends over https) with every
    checksum algorithm: the right one is stored and echoed, a wrong one is BadDigest."""
    name = "x-amz-checksum-" + algo
    want = helpers.checksum_b64(algo, DATA)
    h = {"x-amz-trailer": name, "x-amz-sdk-checksum-algorithm": algo.upper()}
    r = chunked_put(endpoint, bucket, "ut", UNSIGNED_TRAILER,
                    helpers.unsigned_chunked_body(CHUNKS, [(name, want)]), len(DATA), h)
    assert r.status == 200, r
    assert r.header(name) == want, r
    assert get_checksum(raw, bucket, "ut", algo) == (want, DATA)
    bad = helpers.checksum_b64(algo, DATA[:-1])
    r = chunked_put(endpoint, bucket, "ut", UNSIGNED_TRAILER,
                    helpers.unsigned_chunked_body(CHUNKS[::-1], [(name, want)]), len(DATA), h)
    check_s3_error(r, 400, "BadDigest")
    r = chunked_put(endpoint, bucket, "ut2", UNSIGNED_TRAILER,
                    helpers.unsigned_chunked_body(CHUNKS, [(name, bad)]), len(DATA), h)
    check_s3_error(r, 400, "BadDigest")
    assert_unchanged(endpoint, raw, bucket, "ut", DATA)
    assert_unchanged(endpoint, raw, bucket, "ut2", None)


# ---------------------------------------------------------------- checksum headers

@pytest.mark.parametrize("algo", ALGOS)
def test_checksum_headers(endpoint, raw, bucket, algo):
    name = "x-amz-checksum-" + algo
    want = helpers.checksum_b64(algo, DATA)
    r = raw.request("PUT", "/%s/ck" % bucket, body=DATA, headers={name: want})
    assert r.status == 200, r
    assert r.header(name) == want, r
    assert get_checksum(raw, bucket, "ck", algo) == (want, DATA)
    # a plain GET does not volunteer it
    assert raw.request("GET", "/%s/ck" % bucket).header(name) is None
    # another body under the same checksum: BadDigest, the stored object is untouched
    other = DATA[:-1] + bytes([DATA[-1] ^ 0xFF])
    r = raw.request("PUT", "/%s/ck" % bucket, body=other, headers={name: want})
    check_s3_error(r, 400, "BadDigest")
    assert_unchanged(endpoint, raw, bucket, "ck", DATA)
    r = raw.request("PUT", "/%s/ck-new" % bucket, body=other, headers={name: want},
                    payload=helpers.sha256_hex(other))
    check_s3_error(r, 400, "BadDigest")
    assert_unchanged(endpoint, raw, bucket, "ck-new", None)


# ---------------------------------------------------------------- multipart, per part

@functools.lru_cache(maxsize=None)
def mpu_parts():
    return (pattern_bytes(5 * MiB, seed=311), pattern_bytes(300001, seed=312))


@functools.lru_cache(maxsize=None)
def part_checksums(algo):
    return tuple(helpers.checksum_raw(algo, p) for p in mpu_parts())


def _complete_xml(parts):
    """parts: [(number, etag, {ChecksumXXX: value})]"""
    out = "<CompleteMultipartUpload>"
    for n, etag, extra in parts:
        out += "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag>%s</Part>" % (
            n, etag, "".join("<%s>%s</%s>" % (k, v, k) for k, v in extra.items()))
    return (out + "</CompleteMultipartUpload>").encode()


@pytest.mark.parametrize("algo", ["CRC32C", "SHA1", "SHA256", "CRC64NVME"])
def test_multipart_part_checksums(endpoint, raw, bucket, algo):
    """Parts uploaded with x-amz-checksum-<algo>, CompleteMultipartUpload listing
    <Checksum<ALGO>> per part: COMPOSITE for CRC32C/SHA1/SHA256 ("b64(H(part checksums))-2",
    never served as the object's checksum), FULL_OBJECT for CRC64NVME (the object's CRC,
    served). A part checksum that does not match what was stored is InvalidPart; a part
    body that does not match its header is BadDigest."""
    lower, tag = algo.lower(), "Checksum" + algo
    parts, raws = mpu_parts(), part_checksums(lower)
    key = "mpu-" + lower
    r = raw.request("POST", "/%s/%s?uploads" % (bucket, key),
                    headers={"x-amz-checksum-algorithm": algo})
    assert r.status == 200, r
    uid = ET.fromstring(r.body).findtext(NS + "UploadId")
    r = raw.request("PUT", "/%s/%s?partNumber=1&uploadId=%s" % (bucket, key, uid), body=parts[1],
                    headers={"x-amz-checksum-" + lower: base64.b64encode(raws[0]).decode()})
    check_s3_error(r, 400, "BadDigest")
    done = []
    for n, (data, ck) in enumerate(zip(parts, raws), 1):
        b64 = base64.b64encode(ck).decode()
        r = raw.request("PUT", "/%s/%s?partNumber=%d&uploadId=%s" % (bucket, key, n, uid),
                        body=data, headers={"x-amz-checksum-" + lower: b64})
        assert r.status == 200, r
        assert r.header("x-amz-checksum-" + lower) == b64, r
        done.append((n, r.header("ETag"), {tag: b64}))
    wrong = [done[0], (2, done[1][1], {tag: base64.b64encode(raws[0]).decode()})]
    r = raw.request("POST", "/%s/%s?uploadId=%s" % (bucket, key, uid), body=_complete_xml(wrong))
    check_s3_error(r, 400, "InvalidPart")
    assert_unchanged(endpoint, raw, bucket, key, None)
    r = raw.request("POST", "/%s/%s?uploadId=%s" % (bucket, key, uid), body=_complete_xml(done))
    assert r.status == 200, r
    res = ET.fromstring(r.body)
    whole = b"".join(parts)
    etag = '"%s-2"' % hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest()
    assert res.findtext(NS + "ETag") == etag
    if algo == "CRC64NVME":
        full = base64.b64encode(helpers.crc64nvme(parts[1], helpers.crc64nvme(parts[0]))
                                .to_bytes(8, "big")).decode()
        assert (res.findtext(NS + tag), res.findtext(NS + "ChecksumType")) == (
            full, "FULL_OBJECT"), r.body
        assert get_checksum(raw, bucket, key, lower) == (full, whole)
    else:
        comp = base64.b64encode(helpers.checksum_raw(lower, b"".join(raws))).decode() + "-2"
        assert (res.findtext(NS + tag), res.findtext(NS + "ChecksumType")) == (
            comp, "COMPOSITE"), r.body
        assert get_checksum(raw, bucket, key, lower) == (None, whole)


# ---------------------------------------------------------------- Date, Expect

def test_sigv4_signed_with_date_header(endpoint, raw, bucket):
    """SigV4 whose time is the `Date` header (no X-Amz-Date), as some clients sign."""
    host = "%s:%d" % (endpoint.host, endpoint.port)
    path = "/%s/dated" % bucket

    def send(method, body=b"", when=None, tamper=False):
        h = helpers.sigv4_date_headers(method, host, path, endpoint.access_key,
                                       endpoint.secret_key, when=when)
        if tamper:  # a second later than what was signed
            h["Date"] = h["Date"][:-6] + "%02d GMT" % ((int(h["Date"][-6:-4]) + 1) % 60)
        return helpers.raw_request(endpoint.host, endpoint.port, method, path, h, body)

    r = send("PUT", b"dated body")
    assert r.status == 200, r
    r = send("GET")
    assert r.status == 200 and r.body == b"dated body", r
    check_s3_error(send("PUT", b"tampered", tamper=True), 403, "SignatureDoesNotMatch")
    old = datetime.datetime.utcnow() - datetime.timedelta(hours=2)
    check_s3_error(send("PUT", b"skewed", when=old), 403, "RequestTimeTooSkewed")
    assert raw.request("GET", path).body == b"dated body"


@pytest.mark.parametrize("expect", ["100-continue", "x-unknown-expectation", "200-ok"])
def test_expect_values(endpoint, raw, bucket, expect):
    """Expect is not signed by SDKs; an unknown value is ignored (S3 does), not 417."""
    body = pattern_bytes(70000, seed=321)
    path = "/%s/exp" % bucket
    h = helpers.sign_headers("PUT", raw.url(path), endpoint.access_key, endpoint.secret_key,
                             payload=helpers.sha256_hex(body))
    h["Expect"] = expect
    r = helpers.raw_request(endpoint.host, endpoint.port, "PUT", path, h, body)
    assert r.status == 200, r
    h = helpers.sign_headers("GET", raw.url(path), endpoint.access_key, endpoint.secret_key)
    h["Expect"] = expect
    r = helpers.raw_request(endpoint.host, endpoint.port, "GET", path, h)
    assert r.status == 200 and r.body == body, r
