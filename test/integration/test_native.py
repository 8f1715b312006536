"""hoard's native /v1 API on one target, with python requests: buckets, objects, listings,
JSON errors, health and /metrics counters, and SigV4 auth (the target runs with auth.keys, so
every /v1 call but /v1/health is signed like an S3 request)."""
import email.utils
import re
import shutil
import subprocess
import time
import uuid

import pytest
import requests
from botocore.auth import S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

import helpers
from helpers import (REGION, REQUEST_ID_RE, check_json_error, md5_b64, md5_hex, pattern_bytes,
                     sign_headers, wait_until)

ISO_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")

# Request headers covered by the signature besides host, x-amz-date, x-amz-content-sha256.
_SIGNED = {"content-type", "content-md5", "range", "if-match", "if-none-match",
           "if-modified-since", "if-unmodified-since"}


class SigV4(requests.auth.AuthBase):
    """requests auth: SigV4 header auth (service s3, UNSIGNED-PAYLOAD) through helpers'
    botocore signer, over the URL exactly as requests will send it."""

    def __init__(self, access_key, secret_key):
        self.access_key, self.secret_key = access_key, secret_key

    def __call__(self, r):
        h = {k: v for k, v in r.headers.items()
             if k.lower() in _SIGNED or k.lower().startswith("x-amz-")}
        r.headers.update(sign_headers(r.method, r.url, self.access_key, self.secret_key, h))
        return r


def session(access_key=None, secret_key=None):
    """A requests.Session signing with these credentials (None: unsigned)."""
    s = requests.Session()
    if access_key:
        s.auth = SigV4(access_key, secret_key)
    return s


@pytest.fixture
def http(target):
    """Signed with the shared target's credentials."""
    with session(target.access_key, target.secret_key) as s:
        yield s


@pytest.fixture
def anon():
    """No credentials at all."""
    with session() as s:
        yield s


@pytest.fixture
def nb(target, http):
    """A fresh native bucket, emptied and destroyed afterwards."""
    name = "nat-" + uuid.uuid4().hex[:16]
    r = http.post("%s/v1/buckets/%s" % (target.url, name), timeout=10)
    assert r.status_code == 201, r.content
    yield name
    r = http.get("%s/v1/buckets/%s" % (target.url, name), params={"limit": 10000}, timeout=10)
    if r.status_code == 200:
        for e in r.json().get("entries", []):
            http.delete("%s/v1/objects/%s/%s" % (target.url, name, requests.utils.quote(
                e["name"], safe="/")), timeout=10)
    http.delete("%s/v1/buckets/%s" % (target.url, name), timeout=10)


def obj_url(target, bucket, name):
    return "%s/v1/objects/%s/%s" % (target.url, bucket, requests.utils.quote(name, safe="/"))


def test_health(target, http):
    r = http.get(target.url + "/v1/health", timeout=5)
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("application/json")
    assert REQUEST_ID_RE.match(r.headers.get("x-amz-request-id", "")), r.headers
    j = r.json()
    assert j["status"] == "ok" and j["role"] == "target", j


def test_health_has_node_id(target, http):
    """native-api.md: GET /v1/health -> {"status":"ok","role":"target","id":"..."}"""
    j = http.get(target.url + "/v1/health", timeout=5).json()
    assert isinstance(j.get("id"), str) and j["id"], j


def test_bucket_lifecycle(target, http):
    name = "nat-" + uuid.uuid4().hex[:16]
    burl = "%s/v1/buckets/%s" % (target.url, name)
    assert http.head(burl, timeout=5).status_code == 404
    r = http.post(burl, json={"action": "create-bck"}, timeout=5)
    assert r.status_code == 201, r.content
    assert REQUEST_ID_RE.match(r.headers.get("x-amz-request-id", ""))
    check_json_error(http.post(burl, timeout=5), 409, "BucketAlreadyOwnedByYou")

    r = http.get(target.url + "/v1/buckets", timeout=5)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("application/json")
    mine = [b for b in r.json()["buckets"] if b["name"] == name]
    assert len(mine) == 1, r.json()
    assert mine[0]["provider"] == "ais"
    assert ISO_RE.match(mine[0]["created"]), mine
    h = http.head(burl, timeout=5)
    assert h.status_code == 200 and h.content == b""

    # listing an empty bucket
    r = http.get(burl, timeout=5)
    assert r.status_code == 200
    assert r.json()["entries"] == [] and r.json()["prefixes"] == []
    assert r.json().get("continuation_token", "") == ""

    # non-empty bucket cannot be destroyed
    assert http.put(obj_url(target, name, "o"), data=b"1", timeout=5).status_code == 200
    check_json_error(http.delete(burl, timeout=5), 409, "BucketNotEmpty",
                     resource="/v1/buckets/%s" % name)
    assert http.delete(obj_url(target, name, "o"), timeout=5).status_code == 204

    r = http.delete(burl, timeout=5)
    assert r.status_code == 204 and r.content == b""
    assert http.head(burl, timeout=5).status_code == 404
    check_json_error(http.delete(burl, timeout=5), 404, "NoSuchBucket")
    check_json_error(http.get(burl, timeout=5), 404, "NoSuchBucket")
    assert name not in [b["name"] for b in http.get(target.url + "/v1/buckets").json()["buckets"]]


@pytest.mark.parametrize("name", ["ab", "UPPER", "under_score", "-x-", "a" * 64, "a..b",
                                  "a.-b", "10.0.0.1"])
def test_bucket_invalid_name(target, http, name):
    check_json_error(http.post("%s/v1/buckets/%s" % (target.url, name), timeout=5), 400,
                     "InvalidBucketName")


def test_object_put_get_head_delete(target, http, nb):
    data = pattern_bytes(777777, seed=11)
    url = obj_url(target, nb, "dir/sub/obj.bin")
    r = http.put(url, data=data, headers={"Content-Type": "application/x-test",
                                          "x-amz-meta-origin": "native",
                                          "Content-MD5": md5_b64(data)}, timeout=30)
    assert r.status_code == 200, r.content
    assert r.headers["ETag"] == '"%s"' % md5_hex(data)

    g = http.get(url, timeout=30)
    assert g.status_code == 200
    assert g.content == data
    assert g.headers["Content-Length"] == str(len(data))
    assert g.headers["ETag"] == '"%s"' % md5_hex(data)
    assert g.headers["Content-Type"] == "application/x-test"
    assert g.headers["x-amz-meta-origin"] == "native"
    lm = email.utils.parsedate_to_datetime(g.headers["Last-Modified"])
    assert abs(time.time() - lm.timestamp()) < 120

    h = http.head(url, timeout=5)
    assert h.status_code == 200 and h.content == b""
    for k in ("Content-Length", "ETag", "Last-Modified", "Content-Type", "x-amz-meta-origin"):
        assert h.headers.get(k) == g.headers.get(k), k

    d = http.delete(url, timeout=5)
    assert d.status_code == 204
    check_json_error(http.get(url, timeout=5), 404, "NoSuchKey",
                     resource="/v1/objects/%s/dir/sub/obj.bin" % nb)
    assert http.head(url, timeout=5).status_code == 404
    check_json_error(http.delete(url, timeout=5), 404, "NoSuchKey")


def test_object_chunked_put_and_overwrite(target, http, nb):
    data = pattern_bytes(3 * 1024 * 1024 + 17, seed=12)
    url = obj_url(target, nb, "chunked")

    def gen():
        for i in range(0, len(data), 100003):
            yield data[i:i + 100003]

    r = http.put(url, data=gen(), timeout=30)  # Transfer-Encoding: chunked
    assert r.status_code == 200, r.content
    assert r.headers["ETag"] == '"%s"' % md5_hex(data)
    assert http.get(url, timeout=30).content == data
    r = http.put(url, data=b"short now", timeout=5)
    assert r.status_code == 200
    g = http.get(url, timeout=5)
    assert g.content == b"short now" and g.headers["Content-Length"] == "9"


def test_concurrent_puts_pipeline(target, nb):
    """The PUT pipeline (issue 14): large bodies hash on the hash pool beside their writes,
    commits run on the disk workers and are grouped in the catalog. Concurrent large and small
    PUTs, overwrites of shared keys and Content-MD5 checks all end with the right ETags and
    bytes, a wrong Content-MD5 commits nothing, and no temp file stays."""
    import concurrent.futures
    big = [pattern_bytes(2 * 1024 * 1024 + 1000 * i + 7, seed=40 + i) for i in range(4)]
    small = [pattern_bytes(10240 + i, seed=60 + i) for i in range(24)]

    def put(name, data, md5=None):
        with session(target.access_key, target.secret_key) as s:
            h = {"Content-MD5": md5} if md5 else {}
            r = s.put(obj_url(target, nb, name), data=data, headers=h, timeout=120)
            return r.status_code, r.headers.get("ETag"), r.content

    jobs = [("big-%d" % i, d, md5_b64(d) if i % 2 else None) for i, d in enumerate(big)]
    jobs += [("small-%d" % i, d, None) for i, d in enumerate(small)]
    jobs += [("shared-%d" % (i % 3), d, None) for i, d in enumerate(small[:12])]
    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as ex:
        res = list(ex.map(lambda j: put(*j), jobs))
    for (name, data, _), (status, etag, body) in zip(jobs, res):
        assert status == 200, (name, body)
        assert etag == '"%s"' % md5_hex(data), name
    with session(target.access_key, target.secret_key) as s:
        for name, data, _ in jobs:
            if name.startswith("shared-"):
                continue
            g = s.get(obj_url(target, nb, name), timeout=60)
            assert g.status_code == 200 and g.content == data, name
        for k in range(3):  # one of the overwrites, whole
            g = s.get(obj_url(target, nb, "shared-%d" % k), timeout=10)
            assert g.status_code == 200
            assert g.headers["ETag"] in ['"%s"' % md5_hex(d) for d in small[:12]]
            assert g.headers["ETag"] == '"%s"' % md5_hex(g.content)
        status, _, body = put("bad-md5", big[0], md5_b64(big[1]))
        assert status == 400 and b"BadDigest" in body
        assert s.head(obj_url(target, nb, "bad-md5"), timeout=10).status_code == 404
    wait_until(lambda: target.tmp_files() == [], timeout=30, what="no temp files")


def test_object_names_are_decoded(target, http, nb):
    r = http.put("%s/v1/objects/%s/a%%20b/c%%2Fd%%3F" % (target.url, nb), data=b"1", timeout=5)
    assert r.status_code == 200, r.content
    names = [e["name"] for e in http.get("%s/v1/buckets/%s" % (target.url, nb)).json()["entries"]]
    assert names == ["a b/c/d?"]
    assert http.get(obj_url(target, nb, "a b/c/d?"), timeout=5).content == b"1"
    uni = "日本/ünï code.txt"
    assert http.put(obj_url(target, nb, uni), data=b"2", timeout=5).status_code == 200
    assert http.get(obj_url(target, nb, uni), timeout=5).content == b"2"


def test_object_errors(target, http, nb):
    check_json_error(http.get(obj_url(target, "nobucket-" + uuid.uuid4().hex[:8], "x")), 404,
                     "NoSuchBucket")
    check_json_error(http.put(obj_url(target, "nobucket-" + uuid.uuid4().hex[:8], "x"),
                              data=b"x"), 404, "NoSuchBucket")
    check_json_error(http.put(obj_url(target, nb, "md5"), data=b"body",
                              headers={"Content-MD5": md5_b64(b"other")}), 400, "BadDigest")
    check_json_error(http.put(obj_url(target, nb, "md5"), data=b"body",
                              headers={"Content-MD5": "zz"}), 400, "InvalidDigest")
    check_json_error(http.put(obj_url(target, nb, "k" * 1025), data=b"x"), 400,
                     "KeyTooLongError")
    assert http.put(obj_url(target, nb, "k" * 1024), data=b"x").status_code == 200
    r = http.put("%s/v1/objects/%s/a%%00b" % (target.url, nb), data=b"x")
    assert r.status_code == 400
    check_json_error(r, 400, r.json()["code"])
    names = [e["name"] for e in http.get("%s/v1/buckets/%s" % (target.url, nb)).json()["entries"]]
    assert names == ["k" * 1024]


def test_range_and_conditionals(target, http, nb):
    data = b"0123456789" * 10
    url = obj_url(target, nb, "r")
    etag = http.put(url, data=data).headers["ETag"]
    r = http.get(url, headers={"Range": "bytes=10-19"})
    assert r.status_code == 206 and r.content == data[10:20]
    assert r.headers["Content-Range"] == "bytes 10-19/100"
    r = http.get(url, headers={"Range": "bytes=-5"})
    assert r.status_code == 206 and r.content == data[-5:]
    r = http.get(url, headers={"Range": "bytes=95-"})
    assert r.status_code == 206 and r.content == data[95:]
    r = http.get(url, headers={"Range": "bytes=100-"})
    check_json_error(r, 416, "InvalidRange")
    assert r.headers["Content-Range"] == "bytes */100"
    assert http.get(url, headers={"If-None-Match": etag}).status_code == 304
    assert http.get(url, headers={"If-Match": etag}).content == data
    check_json_error(http.get(url, headers={"If-Match": '"nope"'}), 412, "PreconditionFailed")
    lm = http.head(url).headers["Last-Modified"]
    assert http.get(url, headers={"If-Modified-Since": lm}).status_code == 304
    assert http.get(url, headers={"If-Unmodified-Since": lm}).status_code == 200
    old = "Mon, 01 Jan 2001 00:00:00 GMT"
    assert http.get(url, headers={"If-Modified-Since": old}).status_code == 200
    check_json_error(http.get(url, headers={"If-Unmodified-Since": old}), 412,
                     "PreconditionFailed")


NAMES = ["a/1", "a/2", "a/b/3", "b", "c/x", "d", "e", "f/g/h"]


@pytest.fixture
def nb8(target, http, nb):
    for n in NAMES:
        assert http.put(obj_url(target, nb, n), data=n.encode() * 3).status_code == 200
    return nb


def test_list_entries(target, http, nb8):
    r = http.get("%s/v1/buckets/%s" % (target.url, nb8))
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("application/json")
    j = r.json()
    assert [e["name"] for e in j["entries"]] == NAMES
    for e in j["entries"]:
        assert e["size"] == 3 * len(e["name"])
        assert e["etag"] == md5_hex(e["name"].encode() * 3)
        assert ISO_RE.match(e["mtime"]), e
    assert j["prefixes"] == []
    assert j.get("continuation_token", "") == ""


def test_list_prefix_delimiter(target, http, nb8):
    base = "%s/v1/buckets/%s" % (target.url, nb8)
    j = http.get(base, params={"prefix": "a/"}).json()
    assert [e["name"] for e in j["entries"]] == ["a/1", "a/2", "a/b/3"]
    j = http.get(base, params={"delimiter": "/"}).json()
    assert [e["name"] for e in j["entries"]] == ["b", "d", "e"]
    assert j["prefixes"] == ["a/", "c/", "f/"]
    j = http.get(base, params={"prefix": "a/", "delimiter": "/"}).json()
    assert [e["name"] for e in j["entries"]] == ["a/1", "a/2"]
    assert j["prefixes"] == ["a/b/"]
    j = http.get(base, params={"prefix": "nothing"}).json()
    assert j["entries"] == [] and j["prefixes"] == []


@pytest.mark.parametrize("limit", [1, 2, 3, 7, 8])
def test_list_paging(target, http, nb8, limit):
    base = "%s/v1/buckets/%s" % (target.url, nb8)
    seen, token, pages = [], None, 0
    while True:
        params = {"limit": limit}
        if token:
            params["token"] = token
        j = http.get(base, params=params).json()
        pages += 1
        assert len(j["entries"]) <= limit
        seen += [e["name"] for e in j["entries"]]
        token = j.get("continuation_token")
        if not token:
            break
        assert len(j["entries"]) == limit
        assert pages < 20
    assert seen == NAMES
    assert pages == -(-len(NAMES) // limit) or (len(NAMES) % limit == 0 and
                                                pages == len(NAMES) // limit + 1)


def test_list_paging_with_delimiter(target, http, nb8):
    base = "%s/v1/buckets/%s" % (target.url, nb8)
    ents, pfx, token = [], [], None
    for _ in range(20):
        params = {"limit": 2, "delimiter": "/"}
        if token:
            params["token"] = token
        j = http.get(base, params=params).json()
        assert len(j["entries"]) + len(j["prefixes"]) <= 2
        ents += [e["name"] for e in j["entries"]]
        pfx += j["prefixes"]
        token = j.get("continuation_token")
        if not token:
            break
    assert ents == ["b", "d", "e"]
    assert pfx == ["a/", "c/", "f/"]


@pytest.mark.parametrize("params", [{"limit": "0"}, {"limit": "10001"}, {"limit": "x"},
                                    {"token": "%%%"}])
def test_list_bad_params(target, http, nb8, params):
    check_json_error(http.get("%s/v1/buckets/%s" % (target.url, nb8), params=params), 400,
                     "InvalidArgument")


def test_list_limit_max_ok(target, http, nb8):
    r = http.get("%s/v1/buckets/%s" % (target.url, nb8), params={"limit": 10000})
    assert r.status_code == 200 and len(r.json()["entries"]) == len(NAMES)


def test_unknown_route_and_method(target, http):
    check_json_error(http.get(target.url + "/v1/nothing-here"), 404, "NotFound")
    check_json_error(http.post(target.url + "/v1/buckets"), 405, "MethodNotAllowed")
    check_json_error(http.put(target.url + "/v1/objects/onlybucket", data=b"x"), 400,
                     "InvalidArgument")


def test_every_response_has_request_id(target, http, nb):
    ids = set()
    for r in (http.get(target.url + "/v1/health"), http.get(target.url + "/metrics"),
              http.get(target.url + "/v1/buckets"), http.head("%s/v1/buckets/%s" % (target.url, nb)),
              http.put(obj_url(target, nb, "x"), data=b"x"), http.get(obj_url(target, nb, "x")),
              http.get(obj_url(target, nb, "missing"))):
        rid = r.headers.get("x-amz-request-id", "")
        assert REQUEST_ID_RE.match(rid), (r.url, r.headers)
        ids.add(rid)
    assert len(ids) == 7, "request ids are not unique: %r" % ids


# ---------------------------------------------------------------- metrics

def req_series(op, status):
    return 'hoard_requests_total{op="%s",status="%s"}' % (op, status)


def test_metrics_format(target, http):
    r = http.get(target.url + "/metrics")
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("text/plain")
    assert "# TYPE hoard_requests_total counter" in r.text
    m = target.metrics()
    assert m, "no series in /metrics"
    for name in ("hoard_put_bytes_total", "hoard_get_bytes_total", "hoard_put_aborted_total",
                 "hoard_auth_failures_total", "hoard_http_bytes_in_total",
                 "hoard_http_bytes_out_total"):
        assert name in m, name


def test_metrics_counters_grow(target, http, nb):
    # a request is counted when libmicrohttpd reports it complete, which may be just after
    # the client has the response: poll for the counts (they must then be exact)
    def metrics_when(check):
        return helpers.wait_until(lambda: (lambda m: m if check(m) else None)(target.metrics()),
                                  timeout=30, what="the request counters")

    data = pattern_bytes(12345, seed=13)
    url = obj_url(target, nb, "counted")
    m0 = target.metrics()
    assert http.put(url, data=data).status_code == 200
    m1 = metrics_when(lambda m: m.get(req_series("put", 200), 0) >
                      m0.get(req_series("put", 200), 0))
    assert m1.get(req_series("put", 200), 0) == m0.get(req_series("put", 200), 0) + 1
    assert m1["hoard_put_bytes_total"] == m0.get("hoard_put_bytes_total", 0) + len(data)
    assert m1["hoard_http_bytes_in_total"] >= m0.get("hoard_http_bytes_in_total", 0) + len(data)

    assert http.get(url).content == data
    m2 = metrics_when(lambda m: m.get(req_series("get", 200), 0) >
                      m1.get(req_series("get", 200), 0))
    assert m2.get(req_series("get", 200), 0) == m1.get(req_series("get", 200), 0) + 1
    assert m2["hoard_get_bytes_total"] == m1.get("hoard_get_bytes_total", 0) + len(data)
    assert m2["hoard_http_bytes_out_total"] >= m1.get("hoard_http_bytes_out_total", 0) + len(data)

    assert http.get(url, headers={"Range": "bytes=0-9"}).status_code == 206
    assert http.head(url).status_code == 200
    assert http.get(obj_url(target, nb, "absent")).status_code == 404
    assert http.delete(url).status_code == 204
    sts = (("get", 206), ("head", 200), ("get", 404), ("delete", 204))
    m3 = metrics_when(lambda m: all(m.get(req_series(op, st), 0) > m2.get(req_series(op, st), 0)
                                    for op, st in sts))
    for op, st in sts:
        assert m3.get(req_series(op, st), 0) == m2.get(req_series(op, st), 0) + 1, (op, st)
    assert m3["hoard_get_bytes_total"] == m2["hoard_get_bytes_total"] + 10

    assert http.get("%s/v1/buckets/%s" % (target.url, nb)).status_code == 200
    m4 = metrics_when(lambda m: m.get(req_series("list", 200), 0) >
                      m3.get(req_series("list", 200), 0))
    assert m4.get(req_series("list", 200), 0) == m3.get(req_series("list", 200), 0) + 1


def test_metrics_auth_failures_and_latency(target, http, raw, nb):
    m0 = target.metrics()
    r = raw.request("GET", "/%s" % nb, secret_key="wrong")
    assert r.status == 403
    r = raw.request("GET", "/%s" % nb, sign=False)
    assert r.status == 403
    m1 = target.metrics()
    assert m1["hoard_auth_failures_total"] == m0.get("hoard_auth_failures_total", 0) + 2
    # latency histogram: count equals the sum over statuses for an op
    get_count = m1.get('hoard_request_duration_seconds_count{op="get"}')
    assert get_count is not None
    total_get = sum(v for k, v in m1.items() if k.startswith('hoard_requests_total{op="get",'))
    assert get_count == total_get
    assert m1.get('hoard_request_duration_seconds_bucket{op="get",le="+Inf"}') == get_count


def test_s3_metrics_count_too(target, s3, bucket):
    m0 = target.metrics()
    s3.put_object(Bucket=bucket, Key="m", Body=b"abc")
    s3.get_object(Bucket=bucket, Key="m")["Body"].read()
    # counted on completion, which may be just after the client has the response
    m1 = helpers.wait_until(
        lambda: (lambda m: m if m.get(req_series("get", 200), 0) > m0.get(req_series("get", 200), 0)
                 else None)(target.metrics()), timeout=30, what="the GET counted")
    assert m1.get(req_series("put", 200), 0) == m0.get(req_series("put", 200), 0) + 1
    assert m1.get(req_series("get", 200), 0) == m0.get(req_series("get", 200), 0) + 1


def test_continuation_token_is_opaque_but_stable(target, http, nb8):
    j = http.get("%s/v1/buckets/%s" % (target.url, nb8), params={"limit": 3}).json()
    tok = j["continuation_token"]
    assert tok
    j2 = http.get("%s/v1/buckets/%s" % (target.url, nb8),
                  params={"limit": 3, "token": tok}).json()
    j3 = http.get("%s/v1/buckets/%s" % (target.url, nb8),
                  params={"limit": 3, "token": tok}).json()
    assert [e["name"] for e in j2["entries"]] == [e["name"] for e in j3["entries"]] == NAMES[3:6]


# ---------------------------------------------------------------- auth (SigV4 on /v1)

def test_unsigned_requests_are_denied(target, http, anon, nb):
    url = obj_url(target, nb, "o")
    burl = "%s/v1/buckets/%s" % (target.url, nb)
    assert http.put(url, data=b"secret").status_code == 200
    for r in (anon.get(target.url + "/v1/buckets"), anon.get(burl), anon.head(burl),
              anon.get(url), anon.head(url), anon.put(url, data=b"x"), anon.delete(url),
              anon.post("%s/v1/buckets/%s" % (target.url, "nat-" + uuid.uuid4().hex[:16])),
              anon.delete(burl), anon.patch(burl, json={"anonymous_read": True})):
        if r.request.method == "HEAD":
            assert r.status_code == 403 and r.content == b"", (r.url, r.status_code)
            continue
        j = check_json_error(r, 403, "AccessDenied")
        assert "not signed" in j["message"], j
    # nothing was changed by them
    assert http.get(url).content == b"secret"
    assert http.get(burl, params={"props": ""}).json()["props"]["anonymous_read"] is False
    # health and metrics stay open
    assert anon.get(target.url + "/v1/health").status_code == 200
    assert anon.get(target.url + "/metrics").status_code == 200


def test_bad_credentials(target, http, nb):
    url = obj_url(target, nb, "o")
    assert http.put(url, data=b"x").status_code == 200
    with session(target.access_key, "wrong-" + target.secret_key) as s:
        check_json_error(s.get(url), 403, "SignatureDoesNotMatch")
        check_json_error(s.put(url, data=b"y"), 403, "SignatureDoesNotMatch")
        check_json_error(s.get(target.url + "/v1/buckets"), 403, "SignatureDoesNotMatch")
    with session("AKIDNOSUCHKEY", target.secret_key) as s:
        check_json_error(s.get(url), 403, "InvalidAccessKeyId")
    # signed for one object, sent for another
    h = sign_headers("GET", url, target.access_key, target.secret_key)
    check_json_error(requests.get(obj_url(target, nb, "other"), headers=h), 403,
                     "SignatureDoesNotMatch")
    # a signed Range must not be changed
    h = sign_headers("GET", url, target.access_key, target.secret_key, {"Range": "bytes=0-0"})
    h["Range"] = "bytes=0-1"
    check_json_error(requests.get(url, headers=h), 403, "SignatureDoesNotMatch")
    assert http.get(url).content == b"x"


def _presign(url, method, access_key, secret_key, expires=60):
    req = AWSRequest(method=method, url=url)
    S3SigV4QueryAuth(Credentials(access_key, secret_key), "s3", REGION,
                     expires=expires).add_auth(req)
    return req.url


def test_presigned_urls(target, http, nb):
    url = obj_url(target, nb, "pre")
    assert http.put(url, data=b"presigned").status_code == 200
    r = requests.get(_presign(url, "GET", target.access_key, target.secret_key))
    assert r.status_code == 200 and r.content == b"presigned"
    r = requests.put(_presign(obj_url(target, nb, "pre2"), "PUT", target.access_key,
                              target.secret_key), data=b"up")
    assert r.status_code == 200, r.content
    assert http.get(obj_url(target, nb, "pre2")).content == b"up"
    # a presigned GET does not authorise a PUT of the same URL
    check_json_error(requests.put(_presign(url, "GET", target.access_key, target.secret_key),
                                  data=b"x"), 403, "SignatureDoesNotMatch")
    check_json_error(requests.get(_presign(url, "GET", target.access_key, "wrong")), 403,
                     "SignatureDoesNotMatch")
    short = _presign(url, "GET", target.access_key, target.secret_key, expires=1)
    time.sleep(2.1)
    check_json_error(requests.get(short), 403, "AccessDenied")


def test_curl_aws_sigv4(target, nb, tmp_path):
    """curl's own SigV4 signer (docs/api.md) against /v1."""
    if not shutil.which("curl"):
        pytest.skip("curl not installed")
    src = tmp_path / "src"
    src.write_bytes(pattern_bytes(5000, seed=14))
    url = obj_url(target, nb, "curl obj")
    base = ["curl", "-sS", "--aws-sigv4", "aws:amz:%s:s3" % REGION, "--user",
            "%s:%s" % (target.access_key, target.secret_key),
            "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", "-o", str(tmp_path / "out"),
            "-w", "%{http_code}"]
    p = subprocess.run(base + ["-T", str(src), url], capture_output=True, timeout=30)
    assert p.stdout == b"200", (p.stdout, p.stderr, (tmp_path / "out").read_bytes()[:300])
    p = subprocess.run(base + [url], capture_output=True, timeout=30)
    assert p.stdout == b"200", (p.stdout, p.stderr)
    assert (tmp_path / "out").read_bytes() == src.read_bytes()


def test_read_only_key(target_factory):
    t = target_factory(auth_keys="AK:SK,RO:ROSK:ro", access_key="AK", secret_key="SK")
    name = "nat-" + uuid.uuid4().hex[:16]
    burl = "%s/v1/buckets/%s" % (t.url, name)
    with session("AK", "SK") as rw, session("RO", "ROSK") as ro:
        assert rw.post(burl).status_code == 201
        assert rw.put(obj_url(t, name, "o"), data=b"rw").status_code == 200
        # reads
        assert ro.get(obj_url(t, name, "o")).content == b"rw"
        assert ro.head(obj_url(t, name, "o")).status_code == 200
        assert [e["name"] for e in ro.get(burl).json()["entries"]] == ["o"]
        assert ro.head(burl).status_code == 200
        assert name in [b["name"] for b in ro.get(t.url + "/v1/buckets").json()["buckets"]]
        # writes
        for r in (ro.put(obj_url(t, name, "o"), data=b"ro"),
                  ro.put(obj_url(t, name, "new"), data=b"ro"),
                  ro.delete(obj_url(t, name, "o")),
                  ro.post("%s/v1/buckets/%s" % (t.url, "nat-" + uuid.uuid4().hex[:16])),
                  ro.patch(burl, json={"anonymous_read": True}),
                  ro.delete(burl)):
            check_json_error(r, 403, "AccessDenied")
        assert [e["name"] for e in rw.get(burl).json()["entries"]] == ["o"]
        assert rw.get(obj_url(t, name, "o")).content == b"rw"
        # the RO key with the RW key's secret
        with session("RO", "SK") as bad:
            check_json_error(bad.get(obj_url(t, name, "o")), 403, "SignatureDoesNotMatch")
        assert rw.delete(obj_url(t, name, "o")).status_code == 204
        assert rw.delete(burl).status_code == 204


def test_anonymous_read_bucket(target, http, anon, nb):
    burl = "%s/v1/buckets/%s" % (target.url, nb)
    url = obj_url(target, nb, "pub/x")
    assert http.put(url, data=b"public").status_code == 200
    assert http.get(burl, params={"props": ""}).json()["props"] == {"anonymous_read": False}
    check_json_error(anon.get(url), 403, "AccessDenied")

    r = http.patch(burl, json={"anonymous_read": True})
    assert r.status_code == 200, r.content
    assert http.get(burl, params={"props": ""}).json()["props"] == {"anonymous_read": True}

    # unsigned reads: GET, HEAD, listing
    r = anon.get(url)
    assert r.status_code == 200 and r.content == b"public"
    h = anon.head(url)
    assert h.status_code == 200 and h.headers["Content-Length"] == "6"
    assert h.headers["ETag"] == '"%s"' % md5_hex(b"public")
    assert [e["name"] for e in anon.get(burl).json()["entries"]] == ["pub/x"]
    assert anon.get(burl, params={"prefix": "pub/", "delimiter": "/"}).status_code == 200
    assert anon.head(burl).status_code == 200
    r = anon.get(url, headers={"Range": "bytes=0-2"})
    assert r.status_code == 206 and r.content == b"pub"
    check_json_error(anon.get(obj_url(target, nb, "missing")), 404, "NoSuchKey")

    # unsigned writes stay forbidden
    for r in (anon.put(url, data=b"defaced"), anon.put(obj_url(target, nb, "new"), data=b"x"),
              anon.delete(url), anon.post(burl), anon.delete(burl),
              anon.patch(burl, json={"anonymous_read": False})):
        check_json_error(r, 403, "AccessDenied")
    assert http.get(url).content == b"public"
    assert [e["name"] for e in http.get(burl).json()["entries"]] == ["pub/x"]

    # the bucket list and other buckets stay closed
    check_json_error(anon.get(target.url + "/v1/buckets"), 403, "AccessDenied")
    other = "nat-" + uuid.uuid4().hex[:16]
    assert http.post("%s/v1/buckets/%s" % (target.url, other)).status_code == 201
    try:
        check_json_error(anon.get("%s/v1/buckets/%s" % (target.url, other)), 403,
                         "AccessDenied")
    finally:
        http.delete("%s/v1/buckets/%s" % (target.url, other))

    # a bad signature is an error, not a fallback to anonymous
    with session(target.access_key, "wrong") as s:
        check_json_error(s.get(url), 403, "SignatureDoesNotMatch")

    # switched off, the bucket is closed again
    assert http.patch(burl, json={"anonymous_read": False}).status_code == 200
    check_json_error(anon.get(url), 403, "AccessDenied")
    check_json_error(anon.get(burl), 403, "AccessDenied")
