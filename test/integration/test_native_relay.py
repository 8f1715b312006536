"""native.redirect = false: a proxy relays native /v1/objects calls to the owning target
instead of answering 307, for clients that cannot reach targets (the Helm chart's
relay.native; AIStore users hit this behind Kubernetes, their issue 135). The proxy still
authorises the call; the target gets the proxy's signature and the client's bytes.
"""
import hashlib
import os

import pytest
import requests

import helpers
from conftest import _TARGETS, ACCESS_KEY, SECRET_KEY
from test_cluster import Node


class RelayNode(Node):
    def cmdline(self):
        args = super().cmdline()
        if self.role == "proxy":
            args += ["--native.redirect", "false"]
        return args


@pytest.fixture(scope="module")
def relay_cluster(tmp_path_factory, log_dir):
    nodes = []

    def make(name, role, join=None):
        n = RelayNode(name, str(tmp_path_factory.mktemp("nr-" + name)),
                      os.path.join(log_dir, "nr-" + name), role, join)
        nodes.append(n)
        _TARGETS.append(n)
        return n

    p = make("p1", "proxy")
    p.start()
    targets = [make("t%d" % i, "target", lambda: p.url) for i in (1, 2)]
    for t in targets:
        t.start()
    helpers.wait_until(lambda: len(p.smap()["tmap"]) == 2, timeout=15, what="2 targets")
    yield p, targets
    for n in nodes:
        n.stop()
        _TARGETS.remove(n)


def signed(method, url, data=None):
    h = helpers.sign_headers(method, url, ACCESS_KEY, SECRET_KEY, None)
    return requests.request(method, url, data=data, headers=h, allow_redirects=False,
                            timeout=30)


def test_native_calls_are_relayed_not_redirected(relay_cluster):
    p, targets = relay_cluster
    r = signed("POST", p.url + "/v1/buckets/nrelay")
    assert r.status_code in (200, 201), r.text
    bodies = {"k%d" % i: os.urandom(1000 + 7919 * i) for i in range(12)}
    for k, b in bodies.items():
        r = signed("PUT", "%s/v1/objects/nrelay/%s" % (p.url, k), b)
        assert r.status_code == 200, (k, r.status_code, r.text)
        assert "Location" not in r.headers
    for k, b in bodies.items():
        r = signed("GET", "%s/v1/objects/nrelay/%s" % (p.url, k))
        assert r.status_code == 200, (k, r.status_code, r.text)
        assert "Location" not in r.headers
        assert hashlib.md5(r.content).hexdigest() == hashlib.md5(b).hexdigest()
    r = signed("HEAD", "%s/v1/objects/nrelay/k3" % p.url)
    assert r.status_code == 200 and int(r.headers["Content-Length"]) == len(bodies["k3"])
    r = signed("GET", "%s/v1/objects/nrelay/missing" % p.url)
    assert r.status_code == 404
    # objects really live on both targets (the relay went to each owner)
    key = targets[0].series("hoard_requests_total", op="put", status="200")
    puts = [t.metrics().get(key, 0) for t in targets]
    assert all(n > 0 for n in puts), puts


def test_relay_still_authorises(relay_cluster):
    p, _ = relay_cluster
    r = requests.get(p.url + "/v1/objects/nrelay/k1", timeout=10, allow_redirects=False)
    assert r.status_code == 403, r.text
    r = signed("DELETE", "%s/v1/objects/nrelay/k1" % p.url)
    assert r.status_code in (200, 204), r.text
    assert signed("GET", "%s/v1/objects/nrelay/k1" % p.url).status_code == 404


def test_object_copy_is_relayed(relay_cluster):
    """AIStore's Object.copy() (PUT ?object_to=ais/@#/B/O, docs/aistore-compat.md) through
    the relay: sent to the destination's owner, which reads the source from its owner."""
    p, _ = relay_cluster
    r = signed("POST", p.url + "/v1/buckets/nrcopy")
    assert r.status_code in (200, 201), r.text
    bodies = {"k%d" % i: os.urandom(500 + 3001 * i) for i in range(6)}
    for k, b in bodies.items():
        assert signed("PUT", "%s/v1/objects/nrcopy/%s" % (p.url, k), b).status_code == 200
    for k in bodies:
        url = ("%s/v1/objects/nrcopy/%s?latest-ver=false&object_to=ais%%2F%%40%%23%%2Fnrcopy"
               "%%2Fc%%2F%s&provider=ais&synchronize=false" % (p.url, k, k))
        r = signed("PUT", url)
        assert r.status_code == 200 and "Location" not in r.headers, (k, r.text)
    for k, b in bodies.items():
        r = signed("GET", "%s/v1/objects/nrcopy/c/%s" % (p.url, k))
        assert r.status_code == 200 and r.content == b, k
    r = signed("PUT", "%s/v1/objects/nrcopy/none?object_to=ais%%2F%%40%%23%%2Fnrcopy%%2Fx"
               % p.url)
    assert r.status_code == 404, r.text


def test_native_multipart_upload_is_relayed(relay_cluster):
    """AIStore's Object.multipart_upload() through the relay: create (the proxy asks the
    owner), parts and completion relayed to the owner."""
    p, _ = relay_cluster
    r = signed("POST", p.url + "/v1/buckets/nrmpt")
    assert r.status_code in (200, 201), r.text
    base = "%s/v1/objects/nrmpt/big?provider=ais" % p.url
    r = signed("POST", base, b'{"action":"mpt-upload","name":"","value":null}')
    assert r.status_code == 200 and "Location" not in r.headers, r.text
    uid = r.text
    parts = [os.urandom(5 * 1024 * 1024), os.urandom(777)]
    for n, d in enumerate(parts, 1):
        r = signed("PUT", "%s&partNumber=%d&uploadId=%s" % (base, n, uid), d)
        assert r.status_code == 200, r.text
    body = ('{"action":"mpt-complete","name":"","value":[{"part-number":1,"etag":""},'
            '{"part-number":2,"etag":""}]}')
    r = signed("POST", "%s&uploadId=%s" % (base, uid), body.encode())
    assert r.status_code == 200, r.text
    r = signed("GET", base)
    assert r.status_code == 200 and r.content == parts[0] + parts[1]
