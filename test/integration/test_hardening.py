"""Small holes closed (issue 12): a port in use, control bytes in the request line, internal
headers leaking to clients, a batch body parsed before its credentials were checked, and
what /metrics shows."""

import os
import socket
import subprocess
import urllib.parse

import boto3
import requests
from botocore.config import Config

import helpers
from conftest import ACCESS_KEY, BIN_DIR, SECRET_KEY
from test_cluster import api, cbucket, cluster  # noqa: F401 (fixtures)


def raw(url, data):
    host, port = urllib.parse.urlsplit(url).netloc.split(":")
    s = socket.create_connection((host, int(port)), timeout=10)
    try:
        s.sendall(data)
        got = b""
        while b"\r\n\r\n" not in got:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        return int(got.split(b" ", 2)[1]), got
    finally:
        s.close()


def test_port_in_use_is_an_error(cluster, tmp_path):  # noqa: F811
    """A second hoardd on a port another one listens on exits with a clear error instead of
    sharing the port."""
    t = cluster.targets[0]
    p = subprocess.run([os.path.join(BIN_DIR, "hoardd"), "--role", "target", "--listen",
                        "127.0.0.1:%d" % t.port, "--data", str(tmp_path / "d"),
                        "--mountpaths", str(tmp_path / "mp")],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode != 0
    assert "127.0.0.1:%d" % t.port in p.stderr and "in use" in p.stderr, p.stderr
    assert t.health()["ready"] is True  # the first one is untouched


def test_control_bytes_in_the_path(cluster, cbucket):  # noqa: F811
    """A raw NUL used to cut the key ("a\\0b" wrote "a"); any control byte is now 400, on the
    proxy and on the target, and nothing is written."""
    p = cluster.primary
    for node in (p, cluster.targets[0]):
        for bad in (b"a\x00b", b"a\x01b", b"a\x1fb", b"a\x7f"):
            req = (b"PUT /" + cbucket.encode() + b"/" + bad + b" HTTP/1.1\r\nHost: x\r\n"
                   b"Content-Length: 1\r\n\r\nx")
            status, _ = raw(node.url, req)
            assert status == 400, (node.url, bad, status)
    for key in ("a", "a%00b", "ab"):
        r = api("HEAD", "%s/v1/objects/%s/%s" % (p.url, cbucket, key))
        assert r.status_code in (400, 404), (key, r.status_code)


def test_internal_headers_stay_inside(cluster, cbucket):  # noqa: F811
    """No X-Hoard-* header (object metadata, node signatures) reaches an S3 client through
    the relay, nor a client that followed a 307 to a target."""
    p = cluster.primary
    s3 = boto3.session.Session().client(
        "s3", endpoint_url=p.url, region_name="us-east-1", aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
    s3.put_object(Bucket=cbucket, Key="hdr/k", Body=b"data", Metadata={"m": "1"})
    for call in (lambda: s3.get_object(Bucket=cbucket, Key="hdr/k"),
                 lambda: s3.head_object(Bucket=cbucket, Key="hdr/k")):
        h = call()["ResponseMetadata"]["HTTPHeaders"]
        assert not [k for k in h if k.lower().startswith("x-hoard-")], h
    r = api("GET", "%s/v1/objects/%s/hdr/k" % (p.url, cbucket))  # 307 followed
    assert r.status_code == 200 and r.content == b"data"
    assert len(r.history) == 1
    assert not [k for k in r.headers if k.lower().startswith("x-hoard-")], r.headers


def test_batch_checks_credentials_before_the_body(cluster):  # noqa: F811
    """Bad credentials on /v1/batch are refused before the body is parsed: a malformed body
    with a wrong signature is 403, not 400."""
    url = cluster.primary.url + "/v1/batch"
    body = b"{this is not json"
    h = helpers.sign_headers("POST", url, ACCESS_KEY, "wrong-secret")
    r = requests.post(url, data=body, headers=h, timeout=10)
    assert r.status_code == 403, r.text
    r = requests.post(url, data=body, timeout=10)  # anonymous, and no bucket allows it
    assert r.status_code == 403, r.text
    h = helpers.sign_headers("POST", url, ACCESS_KEY, SECRET_KEY)
    r = requests.post(url, data=body, headers=h, timeout=10)  # good credentials: the body
    assert r.status_code == 400, r.text


def test_metrics_show_no_paths(cluster):  # noqa: F811
    for n in cluster.proxies + cluster.targets:
        text = requests.get(n.url + "/metrics", timeout=10).text
        assert "hoard_" in text
        assert n.data_dir not in text and n.root not in text
        for mp in getattr(n, "mountpaths", []):
            assert mp not in text


def test_metrics_token(tmp_path, log_dir):
    from conftest import Target
    t = Target("metrics-token", str(tmp_path), os.path.join(log_dir, "metrics-token"),
               extra_args=["--metrics.token", "s3cr3t-token"])
    t.start()
    try:
        assert requests.get(t.url + "/metrics", timeout=5).status_code == 403
        r = requests.get(t.url + "/metrics", timeout=5,
                         headers={"Authorization": "Bearer wrong"})
        assert r.status_code == 403
        r = requests.get(t.url + "/metrics", timeout=5,
                         headers={"Authorization": "Bearer s3cr3t-token"})
        assert r.status_code == 200 and "hoard_" in r.text
        assert requests.get(t.url + "/v1/health", timeout=5).status_code == 200
    finally:
        t.stop()
