"""Shared helpers for the integration suite: SigV4-signed raw requests (paths sent exactly as
given, no client-side normalisation), S3/JSON error checks, small data utilities.

Runs under Debian's /usr/bin/python3 (botocore 1.29 for signing, requests, stdlib http.client).
"""
import base64
import hashlib
import hmac
import http.client
import os
import re
import socket
import subprocess
import uuid
import time
import urllib.parse
import xml.etree.ElementTree as ET
import zlib

from botocore.auth import SIGV4_TIMESTAMP, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

REGION = "us-east-1"
UNSIGNED = "UNSIGNED-PAYLOAD"
REQUEST_ID_RE = re.compile(r"^[0-9A-Fa-f]{16}$")


def md5_hex(data):
    return hashlib.md5(data).hexdigest()


def md5_b64(data):
    return base64.b64encode(hashlib.md5(data).digest()).decode()


def sha256_hex(data):
    return hashlib.sha256(data).hexdigest()


def crc32_b64(data):
    return base64.b64encode((zlib.crc32(data) & 0xFFFFFFFF).to_bytes(4, "big")).decode()


def pattern_bytes(n, seed=0):
    """Deterministic, non-repeating-looking bytes (cheap for large n)."""
    block = hashlib.sha256(b"hoard-%d" % seed).digest() * 2048  # 64 KiB
    reps, rem = divmod(n, len(block))
    out = bytearray()
    for i in range(reps):
        # vary every block so ranges at different offsets differ
        out += bytes([i & 0xFF]) + block[1:]
    out += block[:rem]
    return bytes(out)


def canonical_s3_path(path):
    """The canonical URI S3 signs: no dot-segment removal; each '/'-separated segment decoded
    and re-encoded with SigV4's UriEncode (so %2e signs as '.', %2F stays %2F)."""
    segs = path.split("/")
    return "/".join(urllib.parse.quote(urllib.parse.unquote_to_bytes(s), safe="~")
                    for s in segs)


class _RawSigV4(SigV4Auth):
    """SigV4 for S3 paths sent raw (see canonical_s3_path), honouring a preset
    x-amz-content-sha256 (UNSIGNED-PAYLOAD, STREAMING-..., or a hex digest)."""

    when = None  # datetime (UTC) to sign at; None: now

    def _normalize_url_path(self, path):
        return canonical_s3_path(path)

    def _canonical_query_string_url(self, parts):
        # SigV4: every name and value UriEncoded ('/' too), sorted; "acl" signs as "acl="
        pairs = []
        for item in parts.query.split("&") if parts.query else []:
            k, _, v = item.partition("=")
            pairs.append(tuple(urllib.parse.quote(urllib.parse.unquote_to_bytes(x), safe="~")
                               for x in (k, v)))
        return "&".join("%s=%s" % kv for kv in sorted(pairs))

    def add_auth(self, request):
        if self.when is None:
            return super().add_auth(request)
        request.context["timestamp"] = self.when.strftime(SIGV4_TIMESTAMP)
        self._modify_request_before_signing(request)
        cr = self.canonical_request(request)
        sts = self.string_to_sign(request, cr)
        self._inject_signature_to_request(request, self.signature(sts, request))


def sign_headers(method, url, access_key, secret_key, headers=None, payload=UNSIGNED,
                 region=REGION, when=None):
    """Returns the headers (dict) to send with `method url` so that it is SigV4-signed.
    `url` must be the exact URL sent: path and query already percent-encoded as on the wire.
    `payload` is the x-amz-content-sha256 value (None: leave the header out entirely).
    `when`: a UTC datetime to sign at instead of now."""
    h = dict(headers or {})
    if payload is not None:
        h["x-amz-content-sha256"] = payload
    req = AWSRequest(method=method, url=url, headers=h)
    auth = _RawSigV4(Credentials(access_key, secret_key), "s3", region)
    auth.when = when
    auth.add_auth(req)
    return {k: v for k, v in req.headers.items()}


class SigV4Requests:
    """requests auth hook: signs each prepared request with SigV4 (UNSIGNED-PAYLOAD), the
    way the native /v1 API expects when the server has auth.keys."""

    def __init__(self, access_key, secret_key):
        self.access_key = access_key
        self.secret_key = secret_key

    def __call__(self, r):
        keep = {k: v for k, v in r.headers.items()
                if k.lower() in ("range", "content-md5", "content-type")}
        r.headers.update(sign_headers(r.method, r.url, self.access_key, self.secret_key,
                                      headers=keep))
        return r


class Resp:
    """A minimal response: status, headers (case-insensitive get), body bytes."""

    def __init__(self, status, headers, body):
        self.status = status
        self._h = {}
        for k, v in headers:
            self._h.setdefault(k.lower(), v)
        self.headers_list = headers
        self.body = body

    def header(self, name, default=None):
        return self._h.get(name.lower(), default)

    def __repr__(self):
        return "Resp(%d, %r, %r)" % (self.status, self._h, self.body[:300])


def raw_request(host, port, method, path, headers=None, body=b"", timeout=30):
    """Sends one request with http.client, path byte-for-byte as given (no normalisation).
    A "Host" entry in headers replaces the default host:port."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        h = dict(headers or {})
        own_host = any(k.lower() == "host" for k in h)
        conn.putrequest(method, path, skip_host=own_host, skip_accept_encoding=True)
        if body and not any(k.lower() in ("content-length", "transfer-encoding") for k in h):
            h["Content-Length"] = str(len(body))
        elif method in ("PUT", "POST") and not body and not any(
                k.lower() in ("content-length", "transfer-encoding") for k in h):
            h["Content-Length"] = "0"
        for k, v in h.items():
            conn.putheader(k, v)
        conn.endheaders()
        if body:
            conn.send(body)
        r = conn.getresponse()
        data = r.read()
        return Resp(r.status, r.getheaders(), data)
    finally:
        conn.close()


class S3Raw:
    """Signed S3 requests against one server, with raw (unnormalised) paths."""

    def __init__(self, host, port, access_key, secret_key):
        self.host, self.port = host, port
        self.access_key, self.secret_key = access_key, secret_key

    def url(self, path):
        return "http://%s:%d%s" % (self.host, self.port, path)

    def request(self, method, path, headers=None, body=b"", payload=UNSIGNED, sign=True,
                access_key=None, secret_key=None, timeout=30):
        h = dict(headers or {})
        if sign:
            h = sign_headers(method, self.url(path), access_key or self.access_key,
                             secret_key or self.secret_key, h, payload)
        return raw_request(self.host, self.port, method, path, h, body, timeout)


def from_requests(r):
    """Resp from a requests.Response."""
    return Resp(r.status_code, list(r.headers.items()), r.content)


def parse_s3_error(body):
    """Returns {Code, Message, Resource, RequestId, ...} from an S3 XML error body."""
    root = ET.fromstring(body)
    assert root.tag == "Error", "error root is <%s>, not <Error>: %r" % (root.tag, body)
    return {child.tag: (child.text or "") for child in root}


def check_s3_error(resp, status, code, resource=None):
    """Asserts resp is the S3 error `code` with HTTP `status` and a well-formed XML body whose
    RequestId matches the x-amz-request-id header and HostId the x-amz-id-2 header (AWS's
    extended request id, which botocore reports as HostId). Returns the parsed error."""
    assert resp.status == status, "expected %d %s, got %r" % (status, code, resp)
    rid = resp.header("x-amz-request-id")
    assert rid and REQUEST_ID_RE.match(rid), "bad x-amz-request-id: %r" % rid
    ctype = resp.header("content-type", "")
    assert "xml" in ctype, "error Content-Type is %r, not XML" % ctype
    err = parse_s3_error(resp.body)
    for field in ("Code", "Message", "Resource", "RequestId", "HostId"):
        assert field in err, "error body lacks <%s>: %r" % (field, resp.body)
    hid = resp.header("x-amz-id-2")
    assert hid and err["HostId"] == hid, "<HostId> %r != x-amz-id-2 %r" % (err["HostId"], hid)
    assert err["Code"] == code, "expected <Code>%s</Code>, got %r" % (code, err)
    assert err["Message"], "empty <Message>: %r" % resp.body
    assert err["RequestId"] == rid, "<RequestId> %r != x-amz-request-id %r" % (
        err["RequestId"], rid)
    if resource is not None:
        assert err["Resource"] == resource, "Resource %r != %r" % (err["Resource"], resource)
    return err


def check_json_error(resp, status, code, resource=None):
    """Same as check_s3_error for the native API's JSON error body (a requests.Response)."""
    assert resp.status_code == status, "expected %d %s, got %d %r" % (
        status, code, resp.status_code, resp.content[:300])
    rid = resp.headers.get("x-amz-request-id")
    assert rid and REQUEST_ID_RE.match(rid), "bad x-amz-request-id: %r" % rid
    assert resp.headers.get("Content-Type", "").startswith("application/json"), resp.headers
    j = resp.json()
    assert j.get("status") == status, j
    assert j.get("code") == code, j
    assert j.get("message"), j
    assert j.get("request_id") == rid, (j, rid)
    assert "resource" in j, j
    if resource is not None:
        assert j["resource"] == resource, j
    return j


def client_error(exc_info):
    """(HTTP status, S3 Code, response dict) from a botocore ClientError."""
    resp = exc_info.value.response
    return resp["ResponseMetadata"]["HTTPStatusCode"], resp["Error"]["Code"], resp


def wait_until(pred, timeout=10.0, interval=0.05, what="condition"):
    """Polls pred() until it returns a truthy value; returns it, or raises AssertionError."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = pred()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.1fs waiting for %s (last: %r)" %
                                 (timeout, what, last))
        time.sleep(interval)


def tmp_files(mountpaths):
    """Files currently in the mountpaths' tmp/ directories."""
    out = []
    for mp in mountpaths:
        d = os.path.join(mp, "tmp")
        if os.path.isdir(d):
            for root, _dirs, files in os.walk(d):
                out.extend(os.path.join(root, f) for f in files)
    return out


def send_partial(host, port, head, body_part, linger=0.2):
    """Sends raw header bytes plus part of a body on a fresh socket, then closes it
    without finishing the body."""
    s = socket.create_connection((host, port), timeout=10)
    try:
        s.sendall(head + body_part)
        time.sleep(linger)
    finally:
        s.close()


def boto3_client(t, access_key=None, secret_key=None, **cfg):
    """Debian boto3 client for target t (path style, SigV4, no retries)."""
    import boto3
    from botocore.config import Config
    conf = dict(signature_version="s3v4", s3={"addressing_style": "path"},
                retries={"total_max_attempts": 1, "mode": "standard"},
                connect_timeout=5, read_timeout=60)
    conf.update(cfg)
    return boto3.session.Session().client(
        "s3", endpoint_url=t.url, region_name=REGION, aws_access_key_id=access_key or t.access_key,
        aws_secret_access_key=secret_key or t.secret_key, config=Config(**conf))


def unique_bucket_name(prefix="it"):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:16])


def run_pyenv(exe, script, env_extra, timeout=90):
    """Runs `script` with the pyenv python; returns CompletedProcess (text)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYTHON") and not k.startswith("AWS_")}
    env.update(env_extra)
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    env["AWS_CONFIG_FILE"] = os.devnull
    env["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull
    return subprocess.run([exe, "-c", script], capture_output=True, text=True, timeout=timeout,
                          env=env)


def placed_key(endpoint, bucket, stem, src, same):
    """A destination key for a copy of src = (bucket, key): `stem` on a standalone target;
    through a proxy the first stem-N that the source's owner also owns (same=True) or that
    another target owns (same=False), so the proxy variant always exercises that case."""
    if endpoint.kind == "target":
        return stem
    want = endpoint.owner(*src)
    for i in range(64):
        k = "%s-%d" % (stem, i)
        if (endpoint.owner(bucket, k) == want) == same:
            return k
    raise AssertionError("no key %s-N with same=%r owner as %r" % (stem, same, src))


# ---- checksums S3 names (x-amz-checksum-*), computed here, independently of the server ----

def _crc_table(poly, width):
    """Table for a reflected CRC of `width` bits with reflected polynomial `poly`."""
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C_TABLE = _crc_table(0x82F63B78, 32)                # Castagnoli, reflected
_CRC64NVME_TABLE = _crc_table(0x9A6C9329AC4BC9B5, 64)     # 0xAD93D23594C93659, reflected


def _crc_reflected(table, mask, data, crc):
    c = crc ^ mask
    for b in data:
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ mask


def crc32c(data, crc=0):
    """CRC-32C (Castagnoli): init and xorout 0xFFFFFFFF, reflected; check("123456789") =
    0xE3069283. crc: the value of the bytes before `data` (to continue a running CRC)."""
    return _crc_reflected(_CRC32C_TABLE, 0xFFFFFFFF, data, crc)


def crc64nvme(data, crc=0):
    """CRC-64/NVME: poly 0xAD93D23594C93659, init and xorout all ones, reflected;
    check("123456789") = 0xAE8B14860A799888. Pure Python (about 1 s per 5 MiB)."""
    return _crc_reflected(_CRC64NVME_TABLE, 0xFFFFFFFFFFFFFFFF, data, crc)


def checksum_raw(algo, data):
    """The binary checksum S3 sends base64-encoded in x-amz-checksum-<algo> (algo: crc32,
    crc32c, crc64nvme, sha1, sha256; any case)."""
    algo = algo.lower()
    if algo == "crc32":
        return (zlib.crc32(data) & 0xFFFFFFFF).to_bytes(4, "big")
    if algo == "crc32c":
        return crc32c(data).to_bytes(4, "big")
    if algo == "crc64nvme":
        return crc64nvme(data).to_bytes(8, "big")
    return hashlib.new(algo, data).digest()


def checksum_b64(algo, data):
    return base64.b64encode(checksum_raw(algo, data)).decode()


# ---- an independent SigV4 signer (hmac/hashlib, per the AWS documentation) ----

def hmac_sha256(key, msg):
    return hmac.new(key, msg.encode() if isinstance(msg, str) else msg, hashlib.sha256).digest()


def sigv4_signing_key(secret_key, date, region=REGION, service="s3"):
    k = hmac_sha256(("AWS4" + secret_key).encode(), date)
    for part in (region, service, "aws4_request"):
        k = hmac_sha256(k, part)
    return k


class ChunkSigner:
    """Builds the body of an aws-chunked upload whose request headers `headers` were signed
    (seed signature) with x-amz-content-sha256 STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]:
    every chunk signs "AWS4-HMAC-SHA256-PAYLOAD", the time, the scope, the previous
    signature, the empty-string hash and the chunk's hash; trailers sign
    "AWS4-HMAC-SHA256-TRAILER" ... and the hash of the trailer lines, each "name:value\\n"."""

    def __init__(self, headers, secret_key, region=REGION):
        h = {k.lower(): v for k, v in headers.items()}
        self.when = h["x-amz-date"]
        self.scope = "%s/%s/s3/aws4_request" % (self.when[:8], region)
        self.key = sigv4_signing_key(secret_key, self.when[:8], region)
        self.prev = re.search(r"Signature=([0-9a-f]{64})", h["authorization"]).group(1)

    def _sign(self, kind, last_line):
        sts = "\n".join([kind, self.when, self.scope, self.prev, last_line])
        self.prev = hmac.new(self.key, sts.encode(), hashlib.sha256).hexdigest()
        return self.prev

    def chunk(self, data):
        """One chunk, framed and signed (b"" is the final chunk, without its closing CRLF)."""
        sig = self._sign("AWS4-HMAC-SHA256-PAYLOAD",
                         sha256_hex(b"") + "\n" + sha256_hex(data))
        head = b"%x;chunk-signature=%s\r\n" % (len(data), sig.encode())
        return head + data + b"\r\n" if data else head

    def trailer(self, trailers):
        """Trailer lines plus x-amz-trailer-signature and the closing blank line."""
        lines = "".join("%s:%s\n" % kv for kv in trailers)
        sig = self._sign("AWS4-HMAC-SHA256-TRAILER", sha256_hex(lines.encode()))
        return (lines.replace("\n", "\r\n") + "x-amz-trailer-signature:%s\r\n\r\n" % sig).encode()

    def body(self, chunks, trailers=None):
        """The whole body: chunks, the final chunk, then trailers (signed) or a blank line."""
        out = b"".join(self.chunk(c) for c in chunks) + self.chunk(b"")
        return out + (self.trailer(trailers) if trailers is not None else b"\r\n")


def unsigned_chunked_body(chunks, trailers=()):
    """An aws-chunked body without signatures (STREAMING-UNSIGNED-PAYLOAD-TRAILER)."""
    out = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks if c) + b"0\r\n"
    return out + "".join("%s:%s\r\n" % kv for kv in trailers).encode() + b"\r\n"


def sigv4_date_headers(method, host, path, access_key, secret_key, when=None,
                       payload=UNSIGNED, region=REGION):
    """SigV4 header auth whose time comes from the `Date` header (RFC 1123), no X-Amz-Date:
    the signed headers are date;host;x-amz-content-sha256. Query-less paths only."""
    import datetime
    when = when or datetime.datetime.utcnow()
    date = when.strftime("%a, %d %b %Y %H:%M:%S GMT")
    stamp = when.strftime("%Y%m%dT%H%M%SZ")
    scope = "%s/%s/s3/aws4_request" % (stamp[:8], region)
    canon = "\n".join([method, canonical_s3_path(path), "",
                       "date:%s\nhost:%s\nx-amz-content-sha256:%s\n" % (date, host, payload),
                       "date;host;x-amz-content-sha256", payload])
    sts = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, sha256_hex(canon.encode())])
    sig = hmac.new(sigv4_signing_key(secret_key, stamp[:8], region), sts.encode(),
                   hashlib.sha256).hexdigest()
    return {"Host": host, "Date": date, "x-amz-content-sha256": payload,
            "Authorization": "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=date;host;"
                             "x-amz-content-sha256, Signature=%s" % (access_key, scope, sig)}


# ---- node signatures (common/nodeauth.h), written from docs/security.md ----

def _hkdf_sha256(ikm, salt, info, n=32):
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    out, t, i = b"", b"", 1
    while len(out) < n:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest()
        out += t
        i += 1
    return out[:n]


def node_key(secret, node_id):
    """HKDF-SHA256(secret, salt "hoard/v1", info "hoard node key" NUL id)."""
    return _hkdf_sha256(secret.encode(), b"hoard/v1", b"hoard node key\0" + node_id.encode())


def node_sign(secret, sender, method, url, to="*", body=b"", headers=None, date=None,
              nonce=None, unsigned=False):
    """The headers (dict) that make `method url` a request signed by node `sender` for node
    `to`, over body and the X-Hoard-* entries of headers (which are included)."""
    parts = urllib.parse.urlsplit(url)
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    h = dict(headers or {})
    date = str(int(time.time())) if date is None else str(date)
    nonce = nonce or os.urandom(16).hex()
    sha = "UNSIGNED-PAYLOAD" if unsigned else hashlib.sha256(body or b"").hexdigest()
    lines = sorted("%s:%s\n" % (k.lower(), str(v).strip()) for k, v in h.items()
                   if k.lower().startswith("x-hoard-"))
    sts = "HOARD1-HMAC-SHA256\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n" % (
        method, target, date, nonce, sha, sender, to) + "".join(lines)
    sig = hmac.new(node_key(secret, sender), sts.encode(), hashlib.sha256).hexdigest()
    h.update({"X-Hoard-Node": sender, "X-Hoard-Date": date, "X-Hoard-Nonce": nonce,
              "X-Hoard-Content-Sha256": sha, "X-Hoard-Signature": sig})
    return h


def redirect_sig(secret, pid, method, raw_path, ptime, to, copy_src=None, smapv=None,
                 query=None):
    """A proxy's 307 capability (psig) for target `to` (copy_src: the x-amz-copy-source the
    proxy authorised, bound into it; smapv: the psv it routed by, "<term>.<version>"; query:
    the Location's raw query, bound without pid/ptime/psig/psv and empty parameters)."""
    msg = "HOARD1-PSIG\n%s\n%s\n%d\n%s" % (method, raw_path, ptime, to)
    if copy_src:
        msg += "\ncopy-source:" + copy_src
    if smapv:
        msg += "\nsmap:" + smapv
    kept = [p for p in (query or "").split("&")
            if p and p.split("=", 1)[0] not in ("pid", "ptime", "psig", "psv")]
    if kept:
        msg += "\nquery:" + "&".join(kept)
    return hmac.new(node_key(secret, pid), msg.encode(), hashlib.sha256).hexdigest()
