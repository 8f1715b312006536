"""POST Object: HTML form uploads (POST /B, multipart/form-data, the policy signed inside the
form) through the proxy, with requests as a browser would send them and boto3's own
generate_presigned_post (SigV4 form fields). The cases follow ceph s3-tests test_post_object_*
and AWS's documented checks; each refusal is checked to leave nothing stored."""
import base64
import datetime
import hashlib
import hmac
import json
import socket
import time
import urllib.parse
import xml.etree.ElementTree as ET

import pytest
import requests

import helpers
from helpers import check_s3_error, from_requests


@pytest.fixture(scope="module")
def ep(s3cluster):
    return s3cluster


@pytest.fixture(scope="module")
def s3(ep):
    return helpers.boto3_client(ep)


@pytest.fixture
def bucket(s3):
    name = helpers.unique_bucket_name("post")
    s3.create_bucket(Bucket=name)
    yield name
    for o in s3.list_objects_v2(Bucket=name).get("Contents", []):
        s3.delete_object(Bucket=name, Key=o["Key"])
    s3.delete_bucket(Bucket=name)


def expiry(seconds=6000):
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=seconds)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def std_conditions(bucket, maxlen=1024):
    return [{"bucket": bucket}, ["starts-with", "$key", "foo"], {"acl": "private"},
            ["starts-with", "$Content-Type", "text/plain"], ["content-length-range", 0, maxlen]]


def v2_form(ep, policy, fields, access=None, secret=None, sign=True):
    """fields (a list of pairs, in order) with AWSAccessKeyId, policy and signature added
    after the first (as s3-tests orders them); policy a dict (or a str sent as it is)."""
    text = policy if isinstance(policy, str) else json.dumps(policy)
    b64 = base64.b64encode(text.encode()).decode()
    sig = base64.b64encode(hmac.new((secret or ep.secret_key).encode(), b64.encode(),
                                    hashlib.sha1).digest()).decode()
    out = list(fields[:1]) + [("AWSAccessKeyId", access or ep.access_key)]
    if sign:
        out.append(("signature", sig))
    out.append(("policy", b64))
    return out + list(fields[1:])


def post(ep, bucket, fields, file=b"bar", filename="file", after=(), **kw):
    """The form as requests sends it (every part with a filename, as s3-tests does)."""
    files = [(k, (None, v)) for k, v in fields] + [("file", (filename, file))]
    files += [(k, (None, v)) for k, v in after]
    return requests.post("%s/%s" % (ep.url, bucket), files=files, timeout=60,
                         allow_redirects=False, **kw)


def std_fields(key="foo.txt", ctype="text/plain"):
    f = [("key", key), ("acl", "private")]
    if ctype is not None:
        f.append(("Content-Type", ctype))
    return f


def absent(s3, bucket, key):
    import botocore.exceptions
    try:
        s3.head_object(Bucket=bucket, Key=key)
    except botocore.exceptions.ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    return False


def test_v2_form_upload_stores_the_file(ep, s3, bucket):
    """s3-tests test_post_object_authenticated_request + user_specified_header +
    ignored_header: 204, the object holds the file with the form's Content-Type and
    metadata; the ETag is the body's MD5."""
    pol = {"expiration": expiry(), "conditions": std_conditions(bucket) + [
        ["starts-with", "$x-amz-meta-foo", "bar"]]}
    fields = v2_form(ep, pol, std_fields() + [("x-amz-meta-foo", "barclamp"),
                                               ("x-ignore-foo", "anything")])
    r = post(ep, bucket, fields)
    assert r.status_code == 204, r.text
    assert r.content == b""
    assert r.headers["ETag"] == '"%s"' % hashlib.md5(b"bar").hexdigest()
    assert r.headers["Location"].endswith("/%s/foo.txt" % bucket)
    o = s3.get_object(Bucket=bucket, Key="foo.txt")
    assert o["Body"].read() == b"bar"
    assert o["ContentType"] == "text/plain"
    assert o["Metadata"] == {"foo": "barclamp"}


def test_case_insensitive_names_and_filename_key(ep, s3, bucket):
    """Field names and condition names/operators are case-insensitive (s3-tests
    case_insensitive_condition_fields); ${filename} is the file part's name
    (set_key_from_filename); a backslash in a value is literal (escaped_field_values)."""
    pol = {"expiration": expiry(), "conditions": [
        {"bUcKeT": bucket}, ["StArTs-WiTh", "$KeY", "foo"], {"AcL": "private"},
        ["StArTs-WiTh", "$CoNtEnT-TyPe", "text/plain"], ["content-length-range", 0, 1024]]}
    fields = v2_form(ep, pol, [("kEy", "${filename}"), ("aCl", "private"),
                               ("Content-Type", "text/plain")])
    fields = [("pOLICy", v) if k == "policy" else (k, v) for k, v in fields]
    r = post(ep, bucket, fields, filename="foo.txt", file=b"named")
    assert r.status_code == 204, r.text
    assert s3.get_object(Bucket=bucket, Key="foo.txt")["Body"].read() == b"named"
    pol = {"expiration": expiry(), "conditions": std_conditions(bucket)}
    pol["conditions"][1] = ["starts-with", "$key", "\\$foo"]
    r = post(ep, bucket, v2_form(ep, pol, std_fields(key="\\$foo.txt")))
    assert r.status_code == 204, r.text
    assert s3.get_object(Bucket=bucket, Key="\\$foo.txt")["Body"].read() == b"bar"


def test_success_action_status_and_redirect(ep, s3, bucket):
    """201 answers a PostResponse without a namespace (s3-tests set_success_code); 200 is
    empty; any other value is 204 (set_invalid_success_code); success_action_redirect is a
    303 to the URL with bucket, key and the quoted ETag (success_redirect_action)."""
    etag = hashlib.md5(b"bar").hexdigest()
    for status, want in (("201", 201), ("200", 200), ("404", 204)):
        pol = {"expiration": expiry(), "conditions": std_conditions(bucket) + [
            {"success_action_status": status}]}
        r = post(ep, bucket, v2_form(ep, pol, std_fields() + [
            ("success_action_status", status)]))
        assert r.status_code == want, (status, r.status_code, r.text)
        if want == 201:
            root = ET.fromstring(r.content)
            assert root.tag == "PostResponse"
            assert root.find("Key").text == "foo.txt"
            assert root.find("Bucket").text == bucket
            assert root.find("ETag").text == '"%s"' % etag
            assert root.find("Location").text.endswith("/%s/foo.txt" % bucket)
        else:
            assert r.content == b""
    to = "%s/%s" % (ep.url, bucket)
    pol = {"expiration": expiry(), "conditions": std_conditions(bucket) + [
        ["eq", "$success_action_redirect", to]]}
    r = post(ep, bucket, v2_form(ep, pol, std_fields() + [("success_action_redirect", to)]))
    assert r.status_code == 303, r.text
    assert r.headers["Location"] == "%s?bucket=%s&key=foo.txt&etag=%%22%s%%22" % (
        to, bucket, etag)


def test_large_file_streams_through(ep, s3, bucket):
    """A 4 MiB + 200 file within content-length-range [4 MiB, 12 MiB] (s3-tests
    upload_size_rgw_chunk_size_bug): stored whole, fields after the file ignored."""
    body = bytes(range(256)) * (4 * 1024 * 4) + b"y" * 200
    pol = {"expiration": expiry(), "conditions": std_conditions(bucket, 12 * 1024 * 1024)}
    pol["conditions"][4] = ["content-length-range", 4 * 1024 * 1024, 12 * 1024 * 1024]
    r = post(ep, bucket, v2_form(ep, pol, std_fields()), file=body,
             after=[("key", "other.txt"), ("x-amz-meta-late", "ignored")])
    assert r.status_code == 204, r.text
    o = s3.get_object(Bucket=bucket, Key="foo.txt")
    assert hashlib.md5(o["Body"].read()).hexdigest() == hashlib.md5(body).hexdigest()
    assert o["ContentLength"] == len(body)
    assert "late" not in o["Metadata"]
    assert absent(s3, bucket, "other.txt")


def test_boto3_presigned_post_sigv4(ep, s3, bucket):
    """boto3's generate_presigned_post (SigV4 form fields: x-amz-algorithm, -credential,
    -date, -signature) works as it does against AWS; a field its policy does not name is
    refused (Extra input fields), and so is a changed signature."""
    p = s3.generate_presigned_post(bucket, "uploads/${filename}",
                                   Fields={"Content-Type": "image/png"},
                                   Conditions=[{"Content-Type": "image/png"},
                                               ["content-length-range", 1, 1000]],
                                   ExpiresIn=600)
    fields = dict((k, (None, v)) for k, v in p["fields"].items())
    files = dict(fields, file=("cat.png", b"\x89PNG...."))
    r = requests.post(p["url"], files=files, timeout=30)
    assert r.status_code == 204, r.text
    o = s3.get_object(Bucket=bucket, Key="uploads/cat.png")
    assert o["Body"].read() == b"\x89PNG...." and o["ContentType"] == "image/png"
    extra = dict(fields, **{"x-amz-meta-sneaky": (None, "1")})
    extra["file"] = ("dog.png", b"x")
    r = requests.post(p["url"], files=extra, timeout=30)
    check_s3_error(from_requests(r), 403, "AccessDenied")
    assert "Extra input fields" in r.text
    bad = dict(fields)
    sig = p["fields"]["x-amz-signature"]
    bad["x-amz-signature"] = (None, sig[:-1] + ("0" if sig[-1] != "0" else "1"))
    bad["file"] = ("bad.png", b"x")
    r = requests.post(p["url"], files=bad, timeout=30)
    check_s3_error(from_requests(r), 403, "SignatureDoesNotMatch")
    assert absent(s3, bucket, "uploads/dog.png") and absent(s3, bucket, "uploads/bad.png")


def b64(doc):
    return base64.b64encode(json.dumps(doc).encode()).decode()


REFUSALS = [
    # (id, how the form is changed, status, code)
    ("bad-signature", "badsig", 403, "SignatureDoesNotMatch"),
    ("unknown-key", "badkey", 403, "InvalidAccessKeyId"),
    ("no-signature", "nosig", 400, "InvalidArgument"),
    ("no-key-field", "nokey", 400, "InvalidArgument"),
    ("expired", {"expiration": "2001-01-01T00:00:00Z"}, 403, "AccessDenied"),
    ("python-date", {"expiration": "2031-05-01 12:00:00.123456+00:00"}, 400,
     "InvalidPolicyDocument"),
    ("no-expiration", {"expiration": None}, 400, "InvalidPolicyDocument"),
    ("EXPIRATION", {"EXPIRATION": "2099-01-01T00:00:00Z", "expiration": None}, 400,
     "InvalidPolicyDocument"),
    ("no-conditions", {"conditions": None}, 400, "InvalidPolicyDocument"),
    ("empty-condition", {"conditions": [{}]}, 400, "InvalidPolicyDocument"),
    ("range-2", {"range": ["content-length-range", 0]}, 400, "InvalidPolicyDocument"),
    ("range-neg", {"range": ["content-length-range", -1, 0]}, 400, "InvalidPolicyDocument"),
    ("not-json", "notjson", 400, "InvalidPolicyDocument"),
    ("key-prefix", {"keycond": ["starts-with", "$key", "\\$foo"]}, 403, "AccessDenied"),
    ("eq-failed", {"extra": ["eq", "$x-amz-meta-foo", ""], "field": ("x-amz-meta-foo", "bar")},
     403, "AccessDenied"),
    ("missing-field", {"extra": ["starts-with", "$x-amz-meta-foo", "bar"]}, 403,
     "AccessDenied"),
    ("extra-field", {"field": ("x-amz-meta-foo", "bar")}, 403, "AccessDenied"),
    ("too-large", {"range": ["content-length-range", 0, 0]}, 400, "EntityTooLarge"),
    ("too-small", {"range": ["content-length-range", 512, 1000]}, 400, "EntityTooSmall"),
    ("read-only-key", "rokey", 403, "AccessDenied"),
    ("no-policy", "anonymous", 403, "AccessDenied"),
    ("crlf-in-header", {"field": ("x-amz-meta-foo", "a\r\nX-Hoard-Owner: me"),
                        "extra": ["starts-with", "$x-amz-meta-foo", ""]}, 400,
     "InvalidArgument"),
]


@pytest.mark.parametrize("how,status,code", [r[1:] for r in REFUSALS],
                         ids=[r[0] for r in REFUSALS])
def test_refusals_store_nothing(ep, s3, bucket, how, status, code):
    pol = {"expiration": expiry(), "conditions": std_conditions(bucket)}
    fields = std_fields()
    access = secret = None
    sign = True
    if isinstance(how, dict):
        for k, v in how.items():
            if k in ("expiration", "conditions", "EXPIRATION"):
                if v is None:
                    del pol[k]
                else:
                    pol[k] = v
            elif k == "range":
                pol["conditions"][4] = v
            elif k == "keycond":
                pol["conditions"][1] = v
            elif k == "extra":
                pol["conditions"].append(v)
            elif k == "field":
                fields.append(v)
    elif how == "badkey":
        access = "AKNOBODY"
    elif how == "rokey":
        access, secret = "AKRO", "secretRO"
    elif how == "nosig":
        sign = False
    elif how == "nokey":
        fields = fields[1:]
        pol["conditions"].pop(1)
    form = v2_form(ep, pol, fields, access, secret, sign)
    if how == "badsig":
        form = [(k, v[::-1]) if k == "signature" else (k, v) for k, v in form]
    elif how == "notjson":
        text = base64.b64encode(b"{not json").decode()
        sig = base64.b64encode(hmac.new(ep.secret_key.encode(), text.encode(),
                                        hashlib.sha1).digest()).decode()
        form = [(k, text if k == "policy" else sig if k == "signature" else v)
                for k, v in form]
    elif how == "anonymous":
        form = fields
    r = post(ep, bucket, form)
    err = check_s3_error(from_requests(r), status, code)
    assert err["Message"]
    assert absent(s3, bucket, "foo.txt")


def test_wrong_bucket_and_unknown_bucket(ep, s3, bucket):
    """A form signed for one bucket posted to another is refused even with a bucket field
    naming the first (s3-tests wrong_bucket); a bucket that does not exist is 404."""
    other = helpers.unique_bucket_name("post2")
    s3.create_bucket(Bucket=other)
    try:
        pol = {"expiration": expiry(), "conditions": std_conditions(bucket)}
        form = v2_form(ep, pol, [("bucket", bucket)] + std_fields())
        r = post(ep, other, form)
        check_s3_error(from_requests(r), 403, "AccessDenied")
        assert absent(s3, other, "foo.txt")
    finally:
        s3.delete_bucket(Bucket=other)
    r = post(ep, "no-such-" + bucket, v2_form(ep, {"expiration": expiry(), "conditions": []},
                                              std_fields()))
    check_s3_error(from_requests(r), 404, "NoSuchBucket")


def test_tagging_and_checksum_fields(ep, s3, bucket):
    """The tagging field's XML becomes the object's tags; x-amz-checksum-sha256 needs no
    condition and is checked against the file (s3-tests upload_checksum: a wrong one is
    400 and stores nothing)."""
    tags = ("<Tagging><TagSet><Tag><Key>0</Key><Value>0</Value></Tag><Tag><Key>1</Key>"
            "<Value>1</Value></Tag></TagSet></Tagging>")
    body = b"x" * 2097152
    good = base64.b64encode(hashlib.sha256(body).digest()).decode()
    pol = {"expiration": expiry(), "conditions": std_conditions(bucket, 5242880) + [
        ["starts-with", "$tagging", ""]]}
    r = post(ep, bucket, v2_form(ep, pol, std_fields() + [
        ("tagging", tags), ("x-amz-checksum-sha256", good)]), file=body)
    assert r.status_code == 204, r.text
    ts = s3.get_object_tagging(Bucket=bucket, Key="foo.txt")["TagSet"]
    assert sorted((t["Key"], t["Value"]) for t in ts) == [("0", "0"), ("1", "1")]
    pol["conditions"][1] = ["starts-with", "$key", "bad"]
    wrong = base64.b64encode(hashlib.sha256(b"other").digest()).decode()
    r = post(ep, bucket, v2_form(ep, pol, std_fields(key="bad.txt") + [
        ("tagging", tags), ("x-amz-checksum-sha256", wrong)]), file=body)
    assert r.status_code == 400, r.text
    assert absent(s3, bucket, "bad.txt")


def raw_form(boundary, parts, close=True):
    out = b""
    for name, value, fname in parts:
        disp = 'form-data; name="%s"' % name + ('; filename="%s"' % fname if fname else "")
        out += b"--" + boundary + b"\r\nContent-Disposition: " + disp.encode() + b"\r\n\r\n"
        out += value + b"\r\n"
    if close:
        out += b"--" + boundary + b"--\r\n"
    return out


def test_malformed_and_cut_forms_store_nothing(ep, s3, bucket):
    """A form without its closing boundary, one without a file, one whose fields before the
    file exceed 20 KB, and a client that disconnects in the middle of the file: each is
    refused (or dropped) and nothing is stored, no temporary file left behind."""
    pol = {"expiration": expiry(), "conditions": std_conditions(bucket, 10 * 1024 * 1024)}
    fields = [(k, v.encode(), None) for k, v in v2_form(ep, pol, std_fields())]
    bnd = b"hoardboundary1234"
    ctype = "multipart/form-data; boundary=" + bnd.decode()
    url = "%s/%s" % (ep.url, bucket)
    body = raw_form(bnd, fields + [("file", b"z" * 300000, "f")], close=False)
    r = requests.post(url, data=body, headers={"Content-Type": ctype}, timeout=30)
    check_s3_error(from_requests(r), 400, "MalformedPOSTRequest")
    r = requests.post(url, data=raw_form(bnd, fields), headers={"Content-Type": ctype},
                      timeout=30)
    check_s3_error(from_requests(r), 400, "InvalidArgument")
    assert "file" in r.text
    big = fields + [("x-ignore-pad", b"p" * 30000, None), ("file", b"z", "f")]
    r = requests.post(url, data=raw_form(bnd, big), headers={"Content-Type": ctype},
                      timeout=30)
    check_s3_error(from_requests(r), 400, "MaxPostPreDataLengthExceeded")
    many = fields + [("x-ignore-%d" % i, b"", None) for i in range(1001)] + [("file", b"z", "f")]
    r = requests.post(url, data=raw_form(bnd, many), headers={"Content-Type": ctype},
                      timeout=30)
    check_s3_error(from_requests(r), 400, "MaxPostPreDataLengthExceeded")
    r = requests.post(url, data=b"x", headers={"Content-Type": "multipart/form-data"},
                      timeout=30)
    check_s3_error(from_requests(r), 400, "MalformedPOSTRequest")
    # the client goes away after half the file: the owner never sees the end of the body
    whole = raw_form(bnd, fields + [("file", b"q" * 4000000, "f")])
    host, port = ep.host, ep.port
    s = socket.create_connection((host, port), timeout=10)
    head = ("POST /%s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n"
            % (bucket, host, port, ctype, len(whole))).encode()
    s.sendall(head + whole[:2000000])
    time.sleep(0.5)
    s.close()
    helpers.wait_until(lambda: not ep.tmp_files(), timeout=30, what="temp files removed")
    assert absent(s3, bucket, "foo.txt")


def test_owner_refusal_passes_through(ep, s3, bucket):
    """A field the owner refuses as it refuses the header on a PUT (server-side encryption:
    501 NotImplemented naming the header) is answered as the owner answered, with a large
    file still on its way; nothing is stored."""
    pol = {"expiration": expiry(), "conditions": std_conditions(bucket, 8 * 1024 * 1024) + [
        ["starts-with", "$x-amz-server-side-encryption", ""]]}
    r = post(ep, bucket, v2_form(ep, pol, std_fields() + [
        ("x-amz-server-side-encryption", "AES256")]), file=b"s" * (3 * 1024 * 1024))
    err = check_s3_error(from_requests(r), 501, "NotImplemented")
    assert err.get("Header") == "x-amz-server-side-encryption", err
    assert absent(s3, bucket, "foo.txt")


def test_s3tests_style_every_part_a_file(ep, s3, bucket):
    """ceph s3-tests sends every field with requests' files= and plain strings, so every part
    carries a filename (filename="key" for the key field): fields are still told apart by
    name, and only the file part is the object's data."""
    pol = {"expiration": expiry(), "conditions": std_conditions(bucket)}
    form = v2_form(ep, pol, std_fields())
    payload = [(k, v) for k, v in form] + [("file", "bar")]
    r = requests.post("%s/%s" % (ep.url, bucket), files=payload, timeout=30)
    assert r.status_code == 204, r.text
    assert b'filename="key"' in r.request.body
    o = s3.get_object(Bucket=bucket, Key="foo.txt")
    assert o["Body"].read() == b"bar" and o["ContentType"] == "text/plain"


def test_virtual_host_form(ep, s3, bucket):
    """A form posted virtual-host style (the bucket in Host, POST /): stored the same; the
    Location names the object under that host."""
    from conftest import S3_DOMAIN
    pol = {"expiration": expiry(), "conditions": std_conditions(bucket)}
    files = [(k, (None, v)) for k, v in v2_form(ep, pol, std_fields())] + [("file", ("f", b"vh"))]
    host = "%s.%s:%d" % (bucket, S3_DOMAIN, ep.port)
    r = requests.post("%s/" % ep.url, files=files, headers={"Host": host}, timeout=30)
    assert r.status_code == 204, r.text
    assert r.headers["Location"] == "http://%s/foo.txt" % host
    assert s3.get_object(Bucket=bucket, Key="foo.txt")["Body"].read() == b"vh"


def test_cluster_headers_never_pass_from_a_form(ep, s3, bucket):
    """Form fields named like the cluster's own headers (X-Hoard-Vhost would name another
    bucket to the target, X-Hoard-Smap a map version) are never sent on, even when the
    signed policy covers them: the object lands in the posted bucket only."""
    other = helpers.unique_bucket_name("post-other")
    s3.create_bucket(Bucket=other)
    try:
        pol = {"expiration": expiry(), "conditions": std_conditions(bucket) + [
            ["starts-with", "$X-Hoard-Vhost", ""], ["starts-with", "$X-Hoard-Smap", ""],
            ["starts-with", "$x-hoard-owner", ""]]}
        r = post(ep, bucket, v2_form(ep, pol, std_fields() + [
            ("X-Hoard-Vhost", other), ("X-Hoard-Smap", "999.999"), ("x-hoard-owner", "me")]))
        assert r.status_code == 204, r.text
        assert s3.get_object(Bucket=bucket, Key="foo.txt")["Body"].read() == b"bar"
        assert absent(s3, other, "foo.txt")
    finally:
        for o in s3.list_objects_v2(Bucket=other).get("Contents", []):
            s3.delete_object(Bucket=other, Key=o["Key"])
        s3.delete_bucket(Bucket=other)


def test_unsigned_and_replayed_forms(ep, s3, bucket):
    """An unsigned form (no policy, no signature) is 403 and stores nothing. A signed form is a
    capability until its expiration, as with AWS: posting it again works; the same policy and
    signature with a key outside the policy, or after its expiration, is refused."""
    r = post(ep, bucket, std_fields())
    check_s3_error(from_requests(r), 403, "AccessDenied")
    assert absent(s3, bucket, "foo.txt")
    pol = {"expiration": expiry(), "conditions": std_conditions(bucket)}
    form = v2_form(ep, pol, std_fields())
    for body in (b"one", b"two"):
        r = post(ep, bucket, form, file=body)
        assert r.status_code == 204, r.text
        assert s3.get_object(Bucket=bucket, Key="foo.txt")["Body"].read() == body
    moved = [("key", "elsewhere.txt") if k == "key" else (k, v) for k, v in form]
    r = post(ep, bucket, moved)
    check_s3_error(from_requests(r), 403, "AccessDenied")
    assert absent(s3, bucket, "elsewhere.txt")
    old = {"expiration": expiry(-60), "conditions": std_conditions(bucket)}
    r = post(ep, bucket, v2_form(ep, old, std_fields(key="foo-late.txt")))
    check_s3_error(from_requests(r), 403, "AccessDenied")
    assert "expired" in r.text and absent(s3, bucket, "foo-late.txt")


def test_odd_field_values(ep, s3, bucket):
    """A key with a NUL byte is refused (it would name another object than the policy
    checked); a key field after the file is no key (400, "check the order"); a redirect
    with a line break or of another scheme is ignored (204), never a header of the answer;
    an empty multipart body is 400."""
    pol = {"expiration": expiry(), "conditions": std_conditions(bucket) + [
        ["starts-with", "$success_action_redirect", ""]]}
    r = post(ep, bucket, v2_form(ep, pol, std_fields(key="foo\x00.txt")))
    check_s3_error(from_requests(r), 400, "InvalidArgument")
    r = post(ep, bucket, v2_form(ep, pol, [("acl", "private"), ("Content-Type", "text/plain")]),
             after=[("key", "foo.txt")])
    err = check_s3_error(from_requests(r), 400, "InvalidArgument")
    assert "order of the fields" in err["Message"], err
    assert absent(s3, bucket, "foo.txt")
    for to in ("http://x.test/\r\nSet-Cookie: a=b", "javascript:alert(1)"):
        r = post(ep, bucket, v2_form(ep, pol, std_fields() + [("success_action_redirect", to)]))
        assert r.status_code == 204, (to, r.status_code, r.text)
        assert "Set-Cookie" not in r.headers and "javascript" not in r.headers.get("Location", "")
    bnd = "emptyform"
    r = requests.post("%s/%s" % (ep.url, bucket), data=b"", timeout=30,
                      headers={"Content-Type": "multipart/form-data; boundary=" + bnd})
    check_s3_error(from_requests(r), 400, "InvalidArgument")


def test_tls_only_bucket_refuses_forms_over_http(ep, s3, bucket):
    """A bucket whose policy is AWS's "TLS only" Deny takes no form upload over plain HTTP
    (test_bucket_policy.py: the other calls)."""
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Statement": [{
        "Effect": "Deny", "Principal": "*", "Action": "s3:*",
        "Resource": ["arn:aws:s3:::" + bucket, "arn:aws:s3:::%s/*" % bucket],
        "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]}))
    try:
        p = s3.generate_presigned_post(bucket, "form.txt", ExpiresIn=600)
        files = dict(((k, (None, v)) for k, v in p["fields"].items()),
                     file=("form.txt", b"over http"))
        r = requests.post(p["url"], files=files, timeout=30)
        check_s3_error(from_requests(r), 403, "AccessDenied")
    finally:
        s3.delete_bucket_policy(Bucket=bucket)
    assert absent(s3, bucket, "form.txt")
