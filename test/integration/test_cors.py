"""Bucket CORS (PutBucketCors / GetBucketCors / DeleteBucketCors, preflight OPTIONS and the
Access-Control-* headers of a browser's requests), against a standalone target and through a
cluster proxy, with boto3 and raw requests shaped like a browser's (and like ceph s3-tests'
test_cors_*). docs/s3-compatibility.md ("CORS") is the contract."""
import json

import pytest
import requests

import helpers
from conftest import _empty_bucket
from helpers import check_s3_error, client_error

ENDPOINTS = ("target", "proxy")

RULES = [
    {"ID": "app", "AllowedOrigins": ["https://app.example.com", "http://localhost:*"],
     "AllowedMethods": ["GET", "PUT", "HEAD"], "AllowedHeaders": ["content-type", "x-amz-*"],
     "ExposeHeaders": ["ETag", "x-amz-request-id"], "MaxAgeSeconds": 600},
    {"AllowedOrigins": ["*"], "AllowedMethods": ["GET"]},
]


def err(fn, *a, **kw):
    import botocore.exceptions
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        fn(*a, **kw)
    return client_error(ei)


def options(raw, path, origin=None, method=None, hdrs=None):
    h = {}
    if origin is not None:
        h["Origin"] = origin
    if method is not None:
        h["Access-Control-Request-Method"] = method
    if hdrs is not None:
        h["Access-Control-Request-Headers"] = hdrs
    return raw.request("OPTIONS", path, headers=h, sign=False)


def acao(r):
    """Every Access-Control-Allow-Origin value of the answer (one, or none, is right)."""
    return [v for k, v in r.headers_list if k.lower() == "access-control-allow-origin"]


def test_cors_configuration_round_trip(endpoint, s3, bucket):
    assert err(s3.get_bucket_cors, Bucket=bucket)[:2] == (404, "NoSuchCORSConfiguration")
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": RULES})
    got = s3.get_bucket_cors(Bucket=bucket)["CORSRules"]
    assert got == RULES, got
    # a second PUT replaces the whole configuration
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": RULES[1:]})
    assert s3.get_bucket_cors(Bucket=bucket)["CORSRules"] == RULES[1:]
    s3.delete_bucket_cors(Bucket=bucket)
    assert err(s3.get_bucket_cors, Bucket=bucket)[:2] == (404, "NoSuchCORSConfiguration")
    s3.delete_bucket_cors(Bucket=bucket)  # nothing to delete: still 204
    # the bucket's other properties are kept beside it
    s3.put_bucket_acl(Bucket=bucket, ACL="public-read")
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": RULES})
    assert len(s3.get_bucket_acl(Bucket=bucket)["Grants"]) == 2
    s3.put_bucket_acl(Bucket=bucket, ACL="private")
    assert s3.get_bucket_cors(Bucket=bucket)["CORSRules"] == RULES


def test_cors_configuration_errors(endpoint, raw, s3, bucket):
    bad = [
        ({"AllowedOrigins": ["*"], "AllowedMethods": ["PATCH"]},
         "Found unsupported HTTP method in CORS config. Unsupported method is PATCH"),
        ({"AllowedOrigins": ["*"], "AllowedMethods": ["get"]},
         "Found unsupported HTTP method in CORS config. Unsupported method is get"),
        ({"AllowedOrigins": ["http://*.a.*"], "AllowedMethods": ["GET"]},
         'AllowedOrigin "http://*.a.*" can not have more than one wildcard.'),
        ({"AllowedOrigins": ["*"], "AllowedMethods": ["GET"], "AllowedHeaders": ["x-*-*"]},
         'AllowedHeader "x-*-*" can not have more than one wildcard.'),
    ]
    for rule, msg in bad:
        st, code, resp = err(s3.put_bucket_cors, Bucket=bucket,
                             CORSConfiguration={"CORSRules": [rule]})
        assert (st, code, resp["Error"]["Message"]) == (400, "InvalidRequest", msg), resp
    too_many = [{"AllowedOrigins": ["*"], "AllowedMethods": ["GET"]}] * 101
    assert err(s3.put_bucket_cors, Bucket=bucket,
               CORSConfiguration={"CORSRules": too_many})[:2] == (400, "InvalidRequest")
    for body in (b"<CORSConfiguration/>", b"not xml",
                 b"<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod></CORSRule>"
                 b"</CORSConfiguration>",
                 b"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>"
                 b"<AllowedMethod>GET</AllowedMethod><MaxAgeSeconds>ten</MaxAgeSeconds>"
                 b"</CORSRule></CORSConfiguration>",
                 b"<Other><CORSRule><AllowedOrigin>*</AllowedOrigin>"
                 b"<AllowedMethod>GET</AllowedMethod></CORSRule></Other>"):
        check_s3_error(raw.request("PUT", "/%s?cors" % bucket, body=body), 400, "MalformedXML")
    # a body over the limit (128 KiB) is refused before it is parsed; nothing is kept
    big = b"<CORSConfiguration>" + b"<CORSRule>" * 20000
    r = raw.request("PUT", "/%s?cors" % bucket, body=big)
    assert r.status == 400, r
        # a value that would break a response header
    r = raw.request("PUT", "/%s?cors" % bucket, body=(
        b"<CORSConfiguration><CORSRule><AllowedOrigin>a&#xD;&#xA;Set-Cookie: x</AllowedOrigin>"
        b"<AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>"))
    check_s3_error(r, 400, "InvalidRequest")
    assert err(s3.get_bucket_cors, Bucket=bucket)[:2] == (404, "NoSuchCORSConfiguration")
    nb = helpers.unique_bucket_name("cors")
    assert err(s3.put_bucket_cors, Bucket=nb, CORSConfiguration={"CORSRules": RULES})[:2] == (
        404, "NoSuchBucket")


def test_cors_needs_write(endpoint, s3, bucket):
    if endpoint.kind != "proxy":
        pytest.skip("the read-only key is the session cluster's")
    ro = helpers.boto3_client(endpoint, "AKRO", "secretRO")
    assert err(ro.put_bucket_cors, Bucket=bucket,
               CORSConfiguration={"CORSRules": RULES})[:2] == (403, "AccessDenied")
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": RULES})
    assert err(ro.delete_bucket_cors, Bucket=bucket)[:2] == (403, "AccessDenied")
    assert ro.get_bucket_cors(Bucket=bucket)["CORSRules"] == RULES


def test_cors_preflight(endpoint, raw, s3, bucket):
    """Preflights are unsigned; the first rule that allows the origin, the method and every
    requested header answers."""
    path = "/%s/obj" % bucket
    # before any configuration (and for a bucket that does not exist: no 404 to probe with)
    for p in (path, "/%s/obj" % helpers.unique_bucket_name("cors")):
        e = check_s3_error(options(raw, p, "https://app.example.com", "GET"), 403,
                           "AccessForbidden")
        assert e["Message"] == "CORSResponse: CORS is not enabled for this bucket.", e
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": RULES})
    e = check_s3_error(options(raw, path), 400, "BadRequest")
    assert e["Message"] == "Insufficient information. Origin request header needed.", e
    e = check_s3_error(options(raw, path, "https://app.example.com"), 400, "BadRequest")
    assert e["Message"] == "Invalid Access-Control-Request-Method: null", e
    e = check_s3_error(options(raw, path, "https://app.example.com", "PATCH"), 400, "BadRequest")
    assert e["Message"] == "Invalid Access-Control-Request-Method: PATCH", e
    # the first rule, with the requested headers (matched case-insensitively, with x-amz-*)
    r = options(raw, path, "https://app.example.com", "PUT", "Content-Type, X-Amz-Meta-Tag")
    assert r.status == 200, r
    assert acao(r) == ["https://app.example.com"]
    assert r.header("Access-Control-Allow-Methods") == "GET, PUT, HEAD"
    assert r.header("Access-Control-Allow-Headers") == "Content-Type, X-Amz-Meta-Tag"
    assert r.header("Access-Control-Expose-Headers") == "ETag, x-amz-request-id"
    assert r.header("Access-Control-Max-Age") == "600"
    assert r.header("Access-Control-Allow-Credentials") == "true"
    assert "Origin" in r.header("Vary")
    # a wildcard origin pattern
    r = options(raw, path, "http://localhost:5173", "HEAD")
    assert r.status == 200 and acao(r) == ["http://localhost:5173"], r
    # a header no rule allows; a method no rule gives that origin
    for args in (("https://app.example.com", "PUT", "content-type, authorization"),
                 ("https://app.example.com", "DELETE", None),
                 ("https://evil.example.com", "PUT", None),
                 ("https://app.example.com.evil", "GET", "content-type")):
        r = options(raw, path, *args)
        e = check_s3_error(r, 403, "AccessForbidden")
        assert e["Message"].startswith("CORSResponse: This CORS request is not allowed."), e
        assert (e["Method"], e["ResourceType"]) == (args[1], "OBJECT"), e
        assert acao(r) == [], r
    # the catch-all rule: any origin may GET, answered "*" and without credentials
    r = options(raw, "/%s" % bucket, "https://elsewhere.org", "GET")
    assert r.status == 200 and acao(r) == ["*"], r
    assert r.header("Access-Control-Allow-Credentials") is None
    assert r.header("Access-Control-Allow-Methods") == "GET"


def test_cors_s3_tests_origins(endpoint, raw, s3, bucket):
    """ceph s3-tests' test_cors_origin_response, its preflight half: '*' at the start, the
    middle or the end of an origin, matched exactly otherwise."""
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": [
        {"AllowedMethods": ["GET"], "AllowedOrigins": ["*suffix"]},
        {"AllowedMethods": ["GET"], "AllowedOrigins": ["start*end"]},
        {"AllowedMethods": ["GET"], "AllowedOrigins": ["prefix*"]},
        {"AllowedMethods": ["PUT"], "AllowedOrigins": ["*.put"]}]})
    url = "/%s" % bucket
    want = {("foo.suffix", "GET"): "foo.suffix", ("foo.bar", "GET"): None,
            ("foo.suffix.get", "GET"): None, ("startend", "GET"): "startend",
            ("start1end", "GET"): "start1end", ("start12end", "GET"): "start12end",
            ("0start12end", "GET"): None, ("prefix", "GET"): "prefix",
            ("prefix.suffix", "GET"): "prefix.suffix", ("bla.prefix", "GET"): None,
            ("foo.put", "GET"): None, ("foo.put", "PUT"): "foo.put"}
    for (origin, method), allowed in want.items():
        r = options(raw, url, origin, method)
        assert r.status == (200 if allowed else 403), (origin, method, r)
        assert acao(r) == ([allowed] if allowed else []), (origin, method, r)
        if allowed:
            assert r.header("Access-Control-Allow-Methods") == method


def test_cors_actual_requests(endpoint, raw, s3, bucket):
    """A browser's GET or PUT carries Origin: the answer names it when a rule allows it (one
    set of headers, also through the proxy's relay), errors included."""
    s3.put_object(Bucket=bucket, Key="obj", Body=b"data")
    r = raw.request("GET", "/%s/obj" % bucket, headers={"Origin": "https://app.example.com"})
    assert r.status == 200 and acao(r) == [], r  # no configuration: no CORS headers
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": RULES})
    r = raw.request("GET", "/%s/obj" % bucket, headers={"Origin": "https://app.example.com"})
    assert r.status == 200 and r.body == b"data", r
    assert acao(r) == ["https://app.example.com"], r.headers_list
    assert r.header("Access-Control-Expose-Headers") == "ETag, x-amz-request-id"
    r = raw.request("PUT", "/%s/up" % bucket, body=b"up",
                    headers={"Origin": "https://app.example.com"})
    assert r.status == 200 and acao(r) == ["https://app.example.com"], r
    assert s3.get_object(Bucket=bucket, Key="up")["Body"].read() == b"up"
    # a listing, and a DELETE that no rule allows for that origin
    r = raw.request("GET", "/%s?list-type=2" % bucket, headers={"Origin": "https://x.org"})
    assert r.status == 200 and acao(r) == ["*"], r
    r = raw.request("DELETE", "/%s/up" % bucket, headers={"Origin": "https://app.example.com"})
    assert r.status == 204 and acao(r) == [], r
    # an error answer (an unsigned read of a private bucket) carries them too, so the page
    # can read the error
    r = raw.request("GET", "/%s/obj" % bucket, headers={"Origin": "https://app.example.com"},
                    sign=False)
    assert r.status == 403 and acao(r) == ["https://app.example.com"], r
    # s3-tests' shape: a PUT naming another method in Access-Control-Request-Method is
    # matched by that method
    r = raw.request("PUT", "/%s/bar" % bucket, sign=False, headers={
        "Origin": "https://elsewhere.org", "Access-Control-Request-Method": "GET"})
    assert r.status == 403 and acao(r) == ["*"], r
    # a presigned GET from a page
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "obj"})
    r = requests.get(url, headers={"Origin": "http://localhost:3000"}, timeout=10)
    assert r.status_code == 200 and r.content == b"data", r
    assert r.headers.get("Access-Control-Allow-Origin") == "http://localhost:3000"


def test_cors_public_bucket_from_a_page(endpoint, raw, s3):
    """What a web page showing a public dataset does: preflight-free GETs and listings with
    Origin, unsigned, from an anonymous_read bucket with a catch-all rule."""
    nb = helpers.unique_bucket_name("cors")
    s3.create_bucket(Bucket=nb)
    try:
        r = requests.patch("%s/v1/buckets/%s" % (endpoint.url, nb), timeout=10,
                           data=b'{"anonymous_read": true}',
                           auth=helpers.SigV4Requests(endpoint.access_key, endpoint.secret_key))
        assert r.status_code == 200, r.content
        s3.put_object(Bucket=nb, Key="img/0001.jpg", Body=b"jpeg bytes")
        s3.put_bucket_cors(Bucket=nb, CORSConfiguration={"CORSRules": [
            {"AllowedOrigins": ["*"], "AllowedMethods": ["GET", "HEAD"]}]})
        for path in ("/%s?list-type=2&prefix=img/" % nb, "/%s/img/0001.jpg" % nb):
            r = raw.request("GET", path, headers={"Origin": "https://viewer.example"},
                            sign=False)
            assert r.status == 200 and acao(r) == ["*"], r
        r = raw.request("PUT", "/%s/img/0002.jpg" % nb, body=b"x", sign=False,
                        headers={"Origin": "https://viewer.example"})
        assert r.status == 403 and acao(r) == [], r
    finally:
        _empty_bucket(s3, nb)


def test_cors_form_upload_from_a_page(endpoint, s3, bucket):
    """A browser-based upload (POST Object, as boto3's generate_presigned_post signs it) sent
    by a page's script: the answer carries the rule's headers, once."""
    if endpoint.kind != "proxy":
        pytest.skip("POST Object is served by the proxies")
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": [
        {"AllowedOrigins": ["https://upload.example"], "AllowedMethods": ["POST"],
         "ExposeHeaders": ["ETag"]}]})
    post = s3.generate_presigned_post(bucket, "form/${filename}", ExpiresIn=600)
    r = requests.post(post["url"], data=post["fields"], timeout=30,
                      files={"file": ("a.txt", b"from a page")},
                      headers={"Origin": "https://upload.example"})
    assert r.status_code == 204, r.content
    assert r.headers.get("Access-Control-Allow-Origin") == "https://upload.example", r.headers
    assert "," not in r.headers["Access-Control-Allow-Origin"]
    assert r.headers.get("Access-Control-Expose-Headers") == "ETag"
    assert s3.get_object(Bucket=bucket, Key="form/a.txt")["Body"].read() == b"from a page"


def test_cors_and_tags_set_together(endpoint, s3, bucket):
    """A bucket's settings are one property set: PutBucketCors and PutBucketTagging sent at
    the same time both land (each merges its key into the set as one step)."""
    import concurrent.futures
    rules = [{"AllowedOrigins": ["*"], "AllowedMethods": ["GET"]}]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        for i in range(12):
            tags = [{"Key": "round", "Value": str(i)}]
            a = pool.submit(s3.put_bucket_cors, Bucket=bucket,
                            CORSConfiguration={"CORSRules": rules})
            b = pool.submit(s3.put_bucket_tagging, Bucket=bucket, Tagging={"TagSet": tags})
            a.result()
            b.result()
            assert s3.get_bucket_cors(Bucket=bucket)["CORSRules"] == rules, i
            assert s3.get_bucket_tagging(Bucket=bucket)["TagSet"] == tags, i
            s3.delete_bucket_cors(Bucket=bucket)
    # the native API's PATCH keeps the keys it does not name
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": rules})
    r = requests.patch("%s/v1/buckets/%s" % (endpoint.url, bucket), timeout=10,
                       data=b'{"anonymous_read": false}',
                       auth=helpers.SigV4Requests(endpoint.access_key, endpoint.secret_key))
    assert r.status_code == 200, r.content
    assert s3.get_bucket_cors(Bucket=bucket)["CORSRules"] == rules
    assert s3.get_bucket_tagging(Bucket=bucket)["TagSet"] == [{"Key": "round", "Value": "11"}]


def test_cluster_bounds_bucket_settings(endpoint, s3):
    """Every node keeps every bucket's settings (the cluster map goes to all of them on each
    change): past 1 MiB of them in all, a change is refused (400) instead of making the map
    too large to send."""
    if endpoint.kind != "proxy":
        pytest.skip("the cluster map is a cluster's")
    rule = {"AllowedOrigins": ["*"], "AllowedMethods": ["GET"],
            "ExposeHeaders": ["x-amz-meta-%04d-%s" % (i, "h" * 980) for i in range(60)]}
    names, refused = [], None
    try:
        for i in range(25):
            nb = helpers.unique_bucket_name("big")
            s3.create_bucket(Bucket=nb)
            names.append(nb)
            try:
                s3.put_bucket_cors(Bucket=nb, CORSConfiguration={"CORSRules": [rule]})
            except Exception as e:  # noqa: BLE001
                refused = (i, client_error_of(e))
                break
        assert refused, "1.5 MiB of CORS rules were all taken"
        i, (st, code, resp) = refused
        assert 14 <= i <= 19 and (st, code) == (400, "InvalidArgument"), refused
        assert "properties" in resp["Error"]["Message"], resp
        # a bucket created with settings past the bound: refused with the same reason
        big = {"cors": [{"origins": ["*"], "methods": ["GET"],
                         "expose": ["x-amz-meta-%04d-%s" % (i, "h" * 980) for i in range(60)]}]}
        nb = helpers.unique_bucket_name("big")
        r = endpoint.raw().request("POST", "/v1/buckets/" + nb, body=json.dumps(big).encode(),
                                   headers={"Content-Type": "application/json"})
        assert r.status == 400 and b"properties" in r.body, (r.status, r.body[:300])
        assert endpoint.raw().request("HEAD", "/" + nb).status == 404
        # the cluster still works, and a bucket's settings can still be removed
        s3.delete_bucket_cors(Bucket=names[0])
        s3.put_bucket_cors(Bucket=names[-1], CORSConfiguration={"CORSRules": [rule]})
    finally:
        for nb in names:
            s3.delete_bucket_cors(Bucket=nb)
            _empty_bucket(s3, nb)


def client_error_of(e):
    import botocore.exceptions
    assert isinstance(e, botocore.exceptions.ClientError), e
    return (e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"],
            e.response)
