"""TLS everywhere it matters (issue 12, docs/security.md "TLS").

One cluster on https with mutual TLS (tls.client_auth): a relaying proxy, a proxy that answers
S3 object requests with 307 (s3.redirect), two targets; certificates from a throwaway CA made
by deploy/local/mkcerts.sh (the same script `cluster.sh up --tls` uses). Real clients: the aws
CLI, boto3 and `curl -L`, all trusting only the test CA. A node whose certificate comes from
another CA cannot join and its calls are refused; plain http to a TLS port gets no answer and
harms nothing; SIGHUP serves a new certificate to new connections while an open keep-alive
connection goes on with the old one."""

import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess

import boto3
import pytest
import requests
from botocore.config import Config

import helpers
from conftest import (_TARGETS, ACCESS_KEY, BIN_DIR, CLUSTER_KEYS, REGION, REPO, SECRET_KEY,
                      ClusterNode, _stop_nodes)

MKCERTS = os.path.join(REPO, "deploy", "local", "mkcerts.sh")
BUCKET = "tls-bucket"


def mkcerts(d, *names):
    subprocess.run(["bash", MKCERTS, str(d)] + list(names), check=True, timeout=120,
                   stdout=subprocess.DEVNULL)


class TLSNode(ClusterNode):
    """A cluster node on https with the certificate DIR/NAME.pem of the test CA."""

    def __init__(self, name, root, log_dir, role, certs, cert_name=None, ca=None, join=None,
                 client_auth=True, extra=()):
        self.certs = str(certs)
        self.cert_name = cert_name or name
        self.ca = ca or os.path.join(self.certs, "ca.pem")
        super().__init__(name, root, log_dir, role, join, auth_keys=CLUSTER_KEYS, hb_ms=300,
                         extra_args=list(extra))
        self.extra_args += [
            "--tls.cert", os.path.join(self.certs, self.cert_name + ".pem"),
            "--tls.key", os.path.join(self.certs, self.cert_name + ".key"),
            "--tls.ca", self.ca, "--tls.client_auth", "true" if client_auth else "false"]

    @property
    def url(self):
        return "https://%s:%d" % (self.host, self.port)


@pytest.fixture(scope="module")
def cl(tmp_path_factory, log_dir):
    certs = tmp_path_factory.mktemp("tls-certs")
    mkcerts(certs, "p1", "p2", "t1", "t2")
    ca = os.path.join(str(certs), "ca.pem")
    old_env = os.environ.get("REQUESTS_CA_BUNDLE")
    os.environ["REQUESTS_CA_BUNDLE"] = ca  # the fixtures' readiness and smap reads
    nodes = []

    def make(name, role, join=None, extra=()):
        root = str(tmp_path_factory.mktemp("tls-" + name))
        n = TLSNode(name, root, os.path.join(log_dir, "tls-" + name), role, certs, join=join,
                    extra=extra)
        nodes.append(n)
        _TARGETS.append(n)
        return n

    try:
        p1 = make("p1", "proxy")
        p1.start()
        join = lambda: p1.url  # noqa: E731
        t1 = make("t1", "target", join, ["--store.fsync", "false"])
        t2 = make("t2", "target", join, ["--store.fsync", "false"])
        p2 = make("p2", "proxy", join, ["--s3.redirect", "true"])
        for n in (t1, t2, p2):
            n.start()

        def settled():
            s = p1.smap()
            return (len(s["tmap"]) == 2 and len(s["pmap"]) == 2 and "rebalance_id" not in s and
                    all(n.smap()["version"] == s["version"] for n in nodes))
        helpers.wait_until(settled, timeout=60, what="2 proxies and 2 targets on one smap")
        for n in nodes:
            n.expect_alive = True
        r = api("PUT", p1.url + "/" + BUCKET)
        assert r.status_code == 200, r.text
        yield {"p1": p1, "p2": p2, "t1": t1, "t2": t2, "certs": str(certs), "ca": ca,
               "tmp": tmp_path_factory, "log_dir": log_dir}
    finally:
        _stop_nodes(nodes)
        if old_env is None:
            os.environ.pop("REQUESTS_CA_BUNDLE", None)
        else:
            os.environ["REQUESTS_CA_BUNDLE"] = old_env


def api(method, url, data=None, follow=True, headers=None):
    h = helpers.sign_headers(method, url, ACCESS_KEY, SECRET_KEY, headers)
    return requests.request(method, url, data=data, headers=h, allow_redirects=follow, timeout=60)


def s3client(url, ca):
    return boto3.session.Session().client(
        "s3", endpoint_url=url, region_name=REGION, aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY, verify=ca,
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                      retries={"max_attempts": 1}))


def peer_cn(host, port, ca):
    ctx = ssl.create_default_context(cafile=ca)
    with socket.create_connection((host, port), timeout=30) as s:
        with ctx.wrap_socket(s, server_hostname=host) as ts:
            return dict(x[0] for x in ts.getpeercert()["subject"])["commonName"]


def test_smap_urls_are_https(cl):
    s = cl["p1"].smap()
    urls = [n["public_net"]["direct_url"] for n in list(s["tmap"].values()) + list(s["pmap"].values())]
    assert len(urls) == 4 and all(u.startswith("https://127.0.0.1:") for u in urls), urls


def test_aws_cli_through_the_relay(cl, tmp_path):
    if not os.access("/usr/bin/aws", os.X_OK):
        pytest.skip("aws CLI v2 (/usr/bin/aws) not installed")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("AWS_") and k != "REQUESTS_CA_BUNDLE"}
    env.update({"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                "AWS_DEFAULT_REGION": REGION, "AWS_CA_BUNDLE": cl["ca"],
                "AWS_CONFIG_FILE": str(tmp_path / "config"), "AWS_EC2_METADATA_DISABLED": "true",
                "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "credentials"), "AWS_PAGER": ""})
    (tmp_path / "config").write_text("[default]\nregion = %s\n" % REGION)
    (tmp_path / "credentials").write_text("")
    data = helpers.pattern_bytes(9 * 1024 * 1024 + 17, seed=1)  # multipart upload (> 8 MiB)
    src, back = tmp_path / "src", tmp_path / "back"
    src.write_bytes(data)
    ep = ["--endpoint-url", cl["p1"].url]

    def aws(*args):
        p = subprocess.run(["/usr/bin/aws"] + ep + list(args), env=env, capture_output=True,
                           timeout=300)
        assert p.returncode == 0, p.stderr.decode(errors="replace")[-2000:]
        return p.stdout.decode()

    aws("s3", "cp", str(src), "s3://%s/aws/obj" % BUCKET)
    aws("s3", "cp", "s3://%s/aws/obj" % BUCKET, str(back))
    assert back.read_bytes() == data
    assert " obj" in aws("s3", "ls", "s3://%s/aws/" % BUCKET)
    # the same CLI without the test CA refuses the server
    env2 = dict(env)
    del env2["AWS_CA_BUNDLE"]
    p = subprocess.run(["/usr/bin/aws"] + ep + ["s3", "ls", "s3://" + BUCKET], env=env2,
                       capture_output=True, timeout=120)
    assert p.returncode != 0 and b"SSL" in p.stderr, p.stderr[-1000:]


def test_boto3_through_the_relay(cl):
    s3 = s3client(cl["p1"].url, cl["ca"])
    data = helpers.pattern_bytes(3 * 1024 * 1024 + 5, seed=2)
    key = "boto3/obj"
    s3.put_object(Bucket=BUCKET, Key=key, Body=data)
    got = s3.get_object(Bucket=BUCKET, Key=key)
    assert got["Body"].read() == data
    assert s3.get_object(Bucket=BUCKET, Key=key, Range="bytes=10-19")["Body"].read() == \
        data[10:20]
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="boto3/")["Contents"]]
    assert keys == [key]
    # the S3 307 of a proxy with s3.redirect (S3 SDKs do not follow it; requests does, and the
    # target trusts the proxy's signed capability), to the owner's https URL
    url = "%s/%s/%s" % (cl["p2"].url, BUCKET, key)
    r = api("GET", url, follow=False)
    assert r.status_code == 307 and r.headers["Location"].startswith("https://"), r.headers
    r = api("GET", url)
    assert r.status_code == 200 and r.content == data and r.url.startswith("https://")
    s3.delete_object(Bucket=BUCKET, Key=key)


def test_tls_only_bucket_policy(cl):
    """AWS's "TLS only" bucket policy (Deny s3:* when aws:SecureTransport is false) changes
    nothing for a cluster that serves https: reads and writes through the relay and through the
    307 to a target's https URL work (test_bucket_policy.py: refused over plain HTTP)."""
    s3 = s3client(cl["p1"].url, cl["ca"])
    bucket = "tlsonly-" + os.urandom(4).hex()
    s3.create_bucket(Bucket=bucket)
    policy = json.dumps({"Version": "2012-10-17", "Statement": [{
        "Sid": "AllowSSLRequestsOnly", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
        "Resource": ["arn:aws:s3:::" + bucket, "arn:aws:s3:::%s/*" % bucket],
        "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]})
    s3.put_bucket_policy(Bucket=bucket, Policy=policy)
    try:
        s3.put_object(Bucket=bucket, Key="k", Body=b"over tls")
        assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"over tls"
        assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == ["k"]
        r = api("GET", "%s/%s/k" % (cl["p2"].url, bucket))  # the 307 to the target, followed
        assert r.status_code == 200 and r.content == b"over tls" and r.url.startswith("https://")
    finally:
        s3.delete_bucket_policy(Bucket=bucket)
        s3.delete_object(Bucket=bucket, Key="k")
        s3.delete_bucket(Bucket=bucket)


def test_redirect_points_to_the_target_https_url(cl):
    data = helpers.pattern_bytes(1024 * 1024, seed=3)
    url = "%s/v1/objects/%s/curl/obj" % (cl["p1"].url, BUCKET)
    r = api("PUT", url, data=data)
    assert r.status_code == 200, r.text
    r = api("GET", url, follow=False)
    assert r.status_code == 307, r.text
    loc = r.headers["Location"]
    targets = {cl["t1"].url, cl["t2"].url}
    assert any(loc.startswith(t + "/") for t in targets), (loc, targets)
    # curl -L with the test CA follows it to the target over https
    h = helpers.sign_headers("GET", url, ACCESS_KEY, SECRET_KEY)
    cmd = ["curl", "-sS", "-L", "--fail", "--cacert", cl["ca"], "-o", "-", url]
    for k, v in h.items():
        cmd += ["-H", "%s: %s" % (k, v)]
    p = subprocess.run(cmd, capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout == data
    # and without it, curl refuses the proxy's certificate
    p = subprocess.run(["curl", "-sS", "-o", "/dev/null", cl["p1"].url + "/v1/health"],
                       capture_output=True, timeout=60)
    assert p.returncode == 60, (p.returncode, p.stderr)  # CURLE_PEER_FAILED_VERIFICATION


def test_plain_http_to_a_tls_port_fails_cleanly(cl):
    t = cl["t1"]
    with pytest.raises(requests.ConnectionError):
        requests.get("http://127.0.0.1:%d/v1/health" % t.port, timeout=30)
    # a raw request: no HTTP answer comes back, the connection just ends
    with socket.create_connection(("127.0.0.1", t.port), timeout=30) as s:
        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        got = b""
        try:
            while True:
                b = s.recv(4096)
                if not b:
                    break
                got += b
        except ConnectionResetError:
            pass
    assert not got.startswith(b"HTTP/"), got[:100]
    assert t.alive() and t.health()["status"] == "ok"


def test_node_from_another_ca_is_refused(cl):
    """A target with a certificate of another CA (and the cluster's secret, and the cluster's
    CA to check the primary with) asks to join: the primary refuses it for its client
    certificate, it never enters the map, and its direct node calls to a target are refused
    as well."""
    other = cl["tmp"].mktemp("tls-other-ca")
    mkcerts(other, "rogue")
    # it trusts both CAs: its own (hoardd checks its certificate against tls.ca at start)
    # and the cluster's (to reach the primary)
    both = os.path.join(str(other), "both.pem")
    with open(both, "w") as f:
        for ca in (os.path.join(str(other), "ca.pem"), cl["ca"]):
            f.write(open(ca).read())
    root = str(cl["tmp"].mktemp("tls-rogue"))
    rogue = TLSNode("rogue", root, os.path.join(cl["log_dir"], "tls-rogue"), "target", other,
                    ca=both, join=lambda: cl["p1"].url, extra=["--store.fsync", "false"])
    _TARGETS.append(rogue)
    before = cl["p1"].smap()
    cl["p1"].mark_log()
    try:
        rogue.port = helpers_free_port()
        with open(rogue.error_log, "ab") as err:
            rogue.proc = subprocess.Popen(rogue.cmdline(), stdin=subprocess.DEVNULL, stdout=err,
                                          stderr=err, cwd=rogue.root)
        helpers.wait_until(lambda: "client certificate" in cl["p1"].log_tail(200, True),
                           timeout=60, what="the primary refusing the rogue's join")
        after = cl["p1"].smap()
        assert after["version"] == before["version"] and len(after["tmap"]) == 2, after
        assert "certificate verify failed" not in rogue.log_tail(200)  # it did reach p1
        # a node call signed as the primary with the cluster secret (a stolen secret), over a
        # connection with the rogue's client certificate: refused for the certificate
        t1 = cl["t1"]
        url = "%s/v1/objects/%s/no-such-object" % (t1.url, BUCKET)
        pid, tid = cl["p1"].health()["id"], t1.health()["id"]

        def call(cert):
            h = helpers.node_sign(rogue.secret, pid, "GET", url, to=tid)
            return requests.get(url, headers=h, timeout=30, cert=cert)

        r = call((os.path.join(str(other), "rogue.pem"), os.path.join(str(other), "rogue.key")))
        assert r.status_code == 403 and "client certificate" in r.text, r.text
        r = call(None)  # no client certificate at all
        assert r.status_code == 403 and "client certificate" in r.text, r.text
        # the same call with a certificate of the cluster's CA gets past authentication (404:
        # no such object): the certificate was what decided
        r = call((os.path.join(cl["certs"], "p1.pem"), os.path.join(cl["certs"], "p1.key")))
        assert r.status_code == 404, r.text
    finally:
        rogue.kill9()
        _TARGETS.remove(rogue)


def helpers_free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sighup_reloads_the_certificate_and_keeps_connections(cl, tmp_path):
    t = cl["t2"]
    certs = cl["certs"]
    ctx = ssl.create_default_context(cafile=cl["ca"])
    conn = http.client.HTTPSConnection("127.0.0.1", t.port, context=ctx, timeout=30)
    conn.request("GET", "/v1/health")
    r = conn.getresponse()
    assert r.status == 200 and b'"ok"' in r.read()
    sock = conn.sock
    old_cn = dict(x[0] for x in sock.getpeercert()["subject"])["commonName"]
    assert old_cn == "t2"
    # a new certificate for t2 (same CA, CN t2-rotated) replaces the files, then SIGHUP
    mkcerts(certs, "t2-rotated")
    for ext in ("pem", "key"):
        shutil.copy(os.path.join(certs, "t2-rotated." + ext), os.path.join(certs, "t2.tmp"))
        os.rename(os.path.join(certs, "t2.tmp"), os.path.join(certs, "t2." + ext))
    t.mark_log()
    t.proc.send_signal(signal.SIGHUP)
    helpers.wait_until(lambda: peer_cn("127.0.0.1", t.port, cl["ca"]) == "t2-rotated",
                       timeout=30, what="new connections served the new certificate")
    assert "TLS certificate reloaded" in t.log_tail(50, True)
    # the connection opened before the reload still works, on the same socket and session
    for _ in range(3):
        conn.request("GET", "/v1/health")
        r = conn.getresponse()
        assert r.status == 200 and b'"ok"' in r.read()
    assert conn.sock is sock
    assert dict(x[0] for x in sock.getpeercert()["subject"])["commonName"] == "t2"
    conn.close()
    # node calls to t2 keep working with the new certificate: an object through the relay
    s3 = s3client(cl["p1"].url, cl["ca"])
    for i in range(6):  # some land on t2
        s3.put_object(Bucket=BUCKET, Key="rot/%d" % i, Body=b"x%d" % i)
        assert s3.get_object(Bucket=BUCKET, Key="rot/%d" % i)["Body"].read() == b"x%d" % i
    # a bad file: the reload fails, the node keeps serving the certificate it has
    with open(os.path.join(certs, "t2.key"), "w") as f:
        f.write("not a key\n")
    t.mark_log()
    t.proc.send_signal(signal.SIGHUP)
    helpers.wait_until(lambda: "TLS reload failed" in t.log_tail(50, True), timeout=30,
                       what="the failed reload logged")
    assert peer_cn("127.0.0.1", t.port, cl["ca"]) == "t2-rotated"
    assert t.alive()


def test_node_trusting_another_ca_cannot_call_the_cluster(cl):
    """The other direction: a node verifies whom it calls. A target whose tls.ca is another CA
    (with a certificate of that CA) cannot join: its call to the primary fails certificate
    verification before any request is sent, and the primary never hears of it."""
    other = cl["tmp"].mktemp("tls-other-ca2")
    mkcerts(other, "stranger")
    root = str(cl["tmp"].mktemp("tls-stranger"))
    n = TLSNode("stranger", root, os.path.join(cl["log_dir"], "tls-stranger"), "target", other,
                join=lambda: cl["p1"].url, extra=["--store.fsync", "false"])
    _TARGETS.append(n)
    before = cl["p1"].smap()
    cl["p1"].mark_log()
    try:
        n.port = helpers_free_port()
        with open(n.error_log, "ab") as err:
            n.proc = subprocess.Popen(n.cmdline(), stdin=subprocess.DEVNULL, stdout=err,
                                      stderr=err, cwd=n.root)
        helpers.wait_until(lambda: "SSL certificate problem" in n.log_tail(100), timeout=60,
                           what="the stranger's join failing on the primary's certificate")
        assert "httpc: TLS: POST %s/v1/cluster/join" % cl["p1"].url in n.log_tail(100)
        assert n.alive()
        after = cl["p1"].smap()
        assert after["version"] == before["version"] and len(after["tmap"]) == 2, after
        assert "stranger" not in cl["p1"].log_tail(200, True)
    finally:
        n.kill9()
        _TARGETS.remove(n)


def test_tls_settings_without_a_certificate_are_refused(cl, tmp_path):
    """A CA or client_auth without tls.cert/tls.key would serve plain http while the operator
    thinks TLS is on: hoardd refuses to start and says which setting needs what."""
    for extra, word in ((["--tls.ca", os.path.join(cl["certs"], "ca.pem")], b"tls.ca"),
                        (["--tls.client_auth", "true"], b"tls.client_auth")):
        p = subprocess.run([os.path.join(BIN_DIR, "hoardd"), "--role", "target", "--listen",
                            "127.0.0.1:%d" % helpers_free_port(), "--data",
                            str(tmp_path / "data")] + extra, capture_output=True, timeout=60)
        assert p.returncode != 0, p.stderr
        assert word + b" needs tls.cert and tls.key" in p.stderr, p.stderr
