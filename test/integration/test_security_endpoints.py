"""Security of the newer endpoints, seen by an attacker who reaches every port and records
and replays traffic (docs/security.md, "Threat model").

One cluster with auth on (cluster.secret, auth.keys): proxy p1 (defaults: S3 relayed, native
307), proxy p2 (s3.redirect = true, native.redirect = false: S3 307, native relayed), targets
t1 and t2; t1's public URL is a recording forwarder, so every node call to t1 (the plan share
push, relayed requests) and every 307 to t1 is captured as an attacker on that wire sees it.
Keys: the admin key (rw everywhere), AKRO (ro everywhere), AKMIX (rw on bucket A only). An
s3rver upstream backs the S3-backed bucket that plans, write-back and flush need.

Covered, endpoint by endpoint: refused without credentials (clear JSON/S3 error, nothing
changes), node-signed traffic cannot be replayed or forged on the target port, SigV4 replays
behave as documented, no X-Hoard-* header leaks out or gets in, and bad input gets a 4xx.
Bugs these tests found (fixed with them): a 307 capability did not bind x-amz-copy-source
(CopyObject from any bucket) nor the Host (virtual-host reinterpretation into another
bucket); target admin endpoints took other targets' and 307 capabilities; a key with rw on
one bucket could choose that bucket's upstream (endpoint, profile)."""

import http.client
import json
import os
import socket
import time
import urllib.parse
import uuid

import pytest
import requests

import helpers
from cachefix import C_KEYS, CNode, profiles, s3rver  # noqa: F401
from conftest import _TARGETS, _free_port
from recorder import Recorder, send_raw

SECRET = "sec-endpoints-secret"
DOMAIN = "s3.sec.test"  # s3.domain of every node: virtual-host requests
ADMIN = C_KEYS
RO = ("AKRO", "secretRO")
MIX = ("AKMIX", "secretMIX")
TAG = uuid.uuid4().hex[:8]
A = "seca-" + TAG        # AKMIX may write here
HIDDEN = "sech-" + TAG   # AKMIX may not read here
CLOUD = "secc-" + TAG    # S3-backed (s3rver), write-back
MINE = "secm-" + TAG     # AKMIX may write here too; not created by the fixture
KEYS = ",".join(["%s:%s" % ADMIN, "%s:%s:ro" % RO,
                 "%s:%s:%s=rw;%s=rw" % (MIX[0], MIX[1], A, MINE)])


class Cl:
    def __init__(self, p1, p2, t1, t2, rec):
        self.p1, self.p2, self.t1, self.t2, self.rec = p1, p2, t1, t2, rec
        self.nodes = [p1, p2, t1, t2]

    def ids(self):
        return {n.url: n for n in self.nodes}


def signed(method, url, keys=ADMIN, body=None, headers=None, follow=True):
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
    h = helpers.sign_headers(method, url, keys[0], keys[1], headers)
    return requests.request(method, url, data=body, headers=h, allow_redirects=follow,
                            timeout=60)


@pytest.fixture(scope="module")
def sc(tmp_path_factory, log_dir, profiles, s3rver):  # noqa: F811
    root = str(tmp_path_factory.mktemp("secep"))
    nodes = []

    def make(name, role, join=None, extra=()):
        n = CNode(name, os.path.join(root, name), os.path.join(log_dir, "secep-" + name), role,
                  ADMIN, SECRET, join, list(extra) + ["--s3.domain", DOMAIN], 1)
        n.auth_keys = KEYS
        nodes.append(n)
        _TARGETS.append(n)
        return n

    rec = Recorder()
    try:
        p1 = make("p1", "proxy")
        p1.start()
        join = lambda: p1.url  # noqa: E731
        p2 = make("p2", "proxy", join, ["--s3.redirect", "true", "--native.redirect", "false"])
        t1 = make("t1", "target", join, ["--public_url", rec.url, "--store.fsync", "false"])
        t1.port = _free_port()
        rec.upstream = ("127.0.0.1", t1.port)
        t2 = make("t2", "target", join, ["--store.fsync", "false"])
        for n in (p2, t1, t2):
            n.start()
        c = Cl(p1, p2, t1, t2, rec)

        def settled():
            s = signed("GET", p1.url + "/v1/cluster").json()
            return len(s["tmap"]) == 2 and len(s["pmap"]) == 2 and "rebalance_id" not in s
        helpers.wait_until(settled, timeout=30, what="two proxies and two targets")
        for b in (A, HIDDEN):
            r = signed("POST", p1.url + "/v1/buckets/" + b)
            assert r.status_code in (200, 201), r.text
        s3rver.client().create_bucket(Bucket=CLOUD)
        r = signed("POST", p1.url + "/v1/buckets/%s?provider=aws" % CLOUD,
                   body={"upstream": {"endpoint": s3rver.url, "profile": "s3rver"},
                         "write_policy": "back"})
        assert r.status_code == 201, r.text
        up = s3rver.client()
        for i in range(4):
            up.put_object(Bucket=CLOUD, Key="d/%02d" % i, Body=b"data-%02d" % i)
        r = signed("PUT", p1.url + "/v1/objects/%s/secret" % HIDDEN, body=b"top secret")
        assert r.status_code == 200, r.text
        yield c
    finally:
        rec.close()
        problems = []
        for n in nodes:
            alive = n.alive()
            rc = n.stop()
            if n in _TARGETS:
                _TARGETS.remove(n)
            problems += n.sanitizer_reports()
            if alive and rc != 0:
                problems.append("%s exited with %r; see %s" % (n.name, rc, n.error_log))
        assert not problems, problems


def json_err(r, status, code=None):
    assert r.status_code == status, (r.status_code, r.text[:300])
    assert r.headers.get("Content-Type", "").startswith("application/json"), r.headers
    j = r.json()
    assert j["status"] == status and j["message"], j
    if code:
        assert j["code"] == code, j
    return j


# X-Hoard-* headers a client is meant to see (documented): the entry count of a batch
PUBLIC = {"x-hoard-batch-entries"}


def no_internal_headers(r):
    bad = [k for k in r.headers
           if k.lower().startswith(("x-hoard-", "hoard-")) and k.lower() not in PUBLIC]
    assert not bad, (r.request.method, r.url, bad)


def plans(c):
    return signed("GET", c.p1.url + "/v1/plans").json()["plans"]


def jobs(c):
    r = signed("GET", c.p1.url + "/v1/jobs")
    assert r.status_code == 200, r.text
    return r.json()


def obj(c, bucket, key):
    return signed("GET", "%s/v1/objects/%s/%s" % (c.p1.url, bucket, key))


def all_alive(c):
    for n in c.nodes:
        assert n.alive(), "%s died; see %s" % (n.name, n.error_log)


PLAN = {"bucket": CLOUD, "prefix": "d/", "epochs": 2, "seed": 1}

# (method, path, body) of every new endpoint a client may call on a proxy
CLIENT_CALLS = [
    ("POST", "/v1/plans", PLAN),
    ("GET", "/v1/plans", None),
    ("GET", "/v1/plans/p-x", None),
    ("DELETE", "/v1/plans/p-x", None),
    ("POST", "/v1/plans/p-x/cursor", {"epoch": 0, "position": 0}),
    ("POST", "/v1/ml/moss", {"in": [{"objname": "secret", "bucket": HIDDEN}]}),
    ("GET", "/v1/ml/moss/" + HIDDEN, {"in": [{"objname": "secret"}]}),
    ("POST", "/v1/batch", {"bucket": HIDDEN, "entries": [{"name": "secret"}]}),
    ("GET", "/v1/buckets/%s?summary" % HIDDEN, None),
    ("GET", "/v1/buckets/%s?writeback" % CLOUD, None),
    ("POST", "/v1/jobs", {"kind": "flush", "bucket": CLOUD, "args": {}}),
    ("POST", "/v1/jobs", {"kind": "copy", "bucket": HIDDEN, "args": {"to": A}}),
    ("GET", "/v1/jobs", None),
    ("GET", "/v1/daemon?what=smap", None),
    ("GET", "/v1/daemon?what=bmd", None),
    ("GET", "/v1/daemon?what=snode", None),
    ("GET", "/v1/cluster?what=smap", None),
    ("GET", "/v1/cluster", None),
    ("GET", "/v1/cluster/capacity", None),
    ("POST", "/v1/cluster/rebalance", None),
    ("PUT", "/v1/objects/%s/planted" % A, b"planted"),
    ("GET", "/v1/objects/%s/secret" % HIDDEN, None),
]


def body_of(b):
    return json.dumps(b).encode() if isinstance(b, (dict, list)) else b


def state(c):
    """What a refused call must not change: plans, jobs, A's objects, the maps."""
    a = signed("GET", "%s/v1/buckets/%s" % (c.p1.url, A)).json()
    sm = signed("GET", c.p1.url + "/v1/cluster").json()
    sm.pop("heartbeat_age_ms", None)
    return json.dumps([sorted(p["id"] for p in plans(c)), sorted(j["id"] for j in jobs(c).get("jobs", [])),
                       sorted(e["name"] for e in a["entries"]), sm.get("version")],
                      sort_keys=True)


@pytest.mark.parametrize("proxy", ["p1", "p2"])
def test_unauthenticated_refused(sc, proxy):
    """No credentials, a wrong secret (403), a forged or expired bearer token (401): a JSON
    error on every new endpoint of both proxies, and nothing changes."""
    url = getattr(sc, proxy).url
    before = state(sc)
    bad_tok = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJ1c2VybmFtZSI6IkFLSURURVNUIn0."
    for method, path, body in CLIENT_CALLS:
        what = "%s %s" % (method, path)
        r = requests.request(method, url + path, data=body_of(body), allow_redirects=False,
                             timeout=30)
        j = json_err(r, 403)
        assert j["code"] == "AccessDenied", (what, j)
        no_internal_headers(r)
        r = signed(method, url + path, keys=(ADMIN[0], "wrong-secret"), body=body,
                   follow=False)
        assert json_err(r, 403)["code"] == "SignatureDoesNotMatch", (what, r.text)
        r = signed(method, url + path, keys=("AKNOBODY", "x"), body=body, follow=False)
        assert json_err(r, 403)["code"] == "InvalidAccessKeyId", (what, r.text)
        r = requests.request(method, url + path, data=body_of(body), allow_redirects=False,
                             headers={"Authorization": "Bearer " + bad_tok}, timeout=30)
        # a bad bearer token is 401 with the RFC 6750 challenge (as AIStore answers it)
        assert json_err(r, 401)["code"] == "Unauthorized", (what, r.text)
        assert r.headers["WWW-Authenticate"].startswith('Bearer error="invalid_token"')
    assert state(sc) == before
    all_alive(sc)


def test_readonly_and_bucket_keys_refused(sc):
    """A read-only key may look but not register plans, start jobs or rebalance; a key with
    rights on bucket A alone reads nothing of another bucket through batch, moss, summary."""
    before = state(sc)
    url = sc.p1.url
    for method, path, body in [("POST", "/v1/plans", PLAN),
                               ("DELETE", "/v1/plans/p-x", None),
                               ("POST", "/v1/plans/p-x/cursor", {"epoch": 0, "position": 0}),
                               ("POST", "/v1/jobs", {"kind": "flush", "bucket": CLOUD}),
                               ("POST", "/v1/cluster/rebalance", None)]:
        json_err(signed(method, url + path, keys=RO, body=body), 403, "AccessDenied")
    assert signed("GET", url + "/v1/plans", keys=RO).status_code == 200
    for method, path, body in [
            ("POST", "/v1/jobs", {"kind": "copy", "bucket": HIDDEN, "args": {"to": A}}),
            ("POST", "/v1/batch", {"bucket": HIDDEN, "entries": [{"name": "secret"}]}),
            ("POST", "/v1/batch", {"bucket": A, "entries": [{"bucket": HIDDEN,
                                                             "name": "secret"}]}),
            ("POST", "/v1/ml/moss", {"in": [{"objname": "secret", "bucket": HIDDEN}]}),
            ("GET", "/v1/buckets/%s?summary" % HIDDEN, None)]:
        r = signed(method, url + path, keys=MIX, body=body)
        assert r.status_code == 403, (method, path, r.status_code, r.text[:200])
        assert b"top secret" not in r.content
    assert state(sc) == before


def b64url(s):
    import base64
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def test_login(sc):
    """POST /v1/users/KEY: a wrong password, an unknown user, a malformed or oversized body
    are refused clearly; a good one gets a token that works, and a tampered token does not."""
    url = sc.p1.url + "/v1/users/" + ADMIN[0]
    json_err(requests.post(url, json={"password": "nope"}, timeout=10), 403)
    assert "invalid credentials" in requests.post(url, json={"password": "nope"},
                                                  timeout=10).text
    r = requests.post(sc.p1.url + "/v1/users/AKNOBODY", json={"password": ADMIN[1]}, timeout=10)
    assert r.status_code == 403 and "invalid credentials" in r.text
    for bad in (b"{", b"[1,2]", b"not json", b'{"password": 5}', b""):
        r = requests.post(url, data=bad, timeout=10)
        assert r.status_code in (400, 403), (bad, r.status_code, r.text)
        assert r.json()["message"]
    r = requests.post(url, data=b'{"password": "' + b"x" * (1 << 20) + b'"}', timeout=30)
    assert r.status_code in (400, 413), r.status_code
    for path in ("/v1/users/..%2f..%2fcluster", "/v1/users/%2e%2e", "/v1/users/a/b",
                 "/v1/users/" + "A" * 5000):
        r = requests.post(sc.p1.url + path, json={"password": ADMIN[1]}, timeout=10)
        assert 400 <= r.status_code < 500 and "token" not in r.text, (path, r.status_code)
    assert requests.get(url, timeout=10).status_code == 405
    r = requests.post(url, json={"password": ADMIN[1]}, timeout=10)
    assert r.status_code == 200, r.text
    no_internal_headers(r)
    tok = r.json()["token"]
    good = requests.get(sc.p1.url + "/v1/plans", headers={"Authorization": "Bearer " + tok},
                        timeout=10)
    assert good.status_code == 200, good.text
    # expires_in past every limit: capped at 24 hours, not wrapped into the past
    for ex in (1e300, 1e30, 2 ** 62, 10 ** 30):
        r = requests.post(url, json={"password": ADMIN[1], "expires_in": ex}, timeout=10)
        if isinstance(ex, int) and ex >= 2 ** 63:  # past jansson's integers: not JSON to it
            assert r.status_code == 400 and "JSON" in r.json()["message"], r.text
            continue
        assert r.status_code == 200, r.text
        claims = json.loads(b64url(r.json()["token"].split(".")[1]))
        assert 86400 - 60 <= claims["exp"] - claims["iat"] <= 86400, claims
    h, p, s = tok.split(".")
    forged = h + "." + p + "." + ("A" if s[0] != "A" else "B") + s[1:]
    json_err(requests.get(sc.p1.url + "/v1/plans", timeout=10,
                          headers={"Authorization": "Bearer " + forged}), 401)
    all_alive(sc)


def login_from(url, src, password):
    """POST a login from source address src (any 127/8 address reaches a loopback listener)."""
    import http.client
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=10, source_address=(src, 0))
    try:
        c.request("POST", u.path, body=json.dumps({"password": password}),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        c.close()


def test_login_guessing_is_slowed(sc):
    """Ten refused logins from one address in a minute: every login from it (even with the
    right secret) gets 503 SlowDown with Retry-After for the rest of the minute, while another
    address still logs in."""
    url = sc.p1.url + "/v1/users/" + ADMIN[0]
    for _ in range(10):
        st, _, body = login_from(url, "127.0.0.7", "guess")
        assert st == 403, body
    st, h, body = login_from(url, "127.0.0.7", ADMIN[1])
    assert st == 503 and b"SlowDown" in body and b"token" not in body, (st, body)
    assert 0 < int(h["Retry-After"]) <= 60, h
    st, _, body = login_from(url, "127.0.0.8", ADMIN[1])
    assert st == 200 and json.loads(body)["token"], body
    all_alive(sc)


def test_targets_refuse_clients(sc):
    """On a target's own port every endpoint but health and metrics wants a node signature or
    a proxy's redirect capability: a client with a valid key, without one, or with a forged
    node signature is refused and nothing changes."""
    before = state(sc)
    for t in (sc.t1, sc.t2):
        for method, path, body in [
                ("POST", "/v1/plans", PLAN), ("GET", "/v1/plans", None),
                ("DELETE", "/v1/plans/p-x", None),
                ("POST", "/v1/plans/p-x/cursor", {"epoch": 0, "position": 0}),
                ("GET", "/v1/daemon", None),
                ("POST", "/v1/jobs", {"kind": "flush", "bucket": CLOUD}),
                ("GET", "/v1/jobs", None),
                ("POST", "/v1/batch", {"bucket": HIDDEN, "entries": [{"name": "secret"}]}),
                ("GET", "/v1/buckets/%s?summary" % HIDDEN, None),
                ("GET", "/v1/buckets/%s?writeback" % CLOUD, None),
                ("PUT", "/v1/objects/%s/planted" % A, b"planted"),
                ("PUT", "/%s/planted" % A, b"planted"),
                ("GET", "/v1/objects/%s/secret" % HIDDEN, None),
                ("PATCH", "/v1/buckets/" + A, {"anonymous_read": True}),
                ("GET", "/v1/buckets/%s?upstream" % CLOUD, None),
                ("DELETE", "/v1/jobs/x", None),
                ("PUT", "/v1/metasync", {"smap": {"version": 999}, "bmd": {"version": 999}})]:
            u = "http://127.0.0.1:%d%s" % (t.port, path)
            data = body_of(body)
            tid = node_id(t)
            rebalance = {"X-Hoard-Obj-Meta": json.dumps({"etag": "x", "size": 7})}
            for h in ({}, helpers.sign_headers(method, u, ADMIN[0], ADMIN[1]),
                      helpers.node_sign("wrong-secret", node_id(sc.p1), method, u, to=tid,
                                        body=data or b""),
                      helpers.node_sign(SECRET, "pnobody", method, u, to=tid,
                                        body=data or b""),
                      helpers.node_sign("wrong-secret", node_id(sc.t2), method, u, to=tid,
                                        body=data or b"", headers=rebalance)):
                r = requests.request(method, u, data=data, headers=h, timeout=30)
                assert r.status_code == 403, (t.name, method, path, h, r.status_code, r.text)
                assert b"top secret" not in r.content
                no_internal_headers(r)
    assert state(sc) == before
    props = signed("GET", "%s/v1/buckets/%s?props" % (sc.p1.url, A)).json()["props"]
    assert not props.get("anonymous_read"), props
    all_alive(sc)


def node_id(n):
    return requests.get(n.url + "/v1/health", timeout=5).json()["id"]


def test_plan_push_replay_and_forgery(sc):
    """The proxy's plan share push to t1, captured on the wire: replayed as is, with another
    body, to the other target, or re-signed by a target, or signed with a wrong secret, it is
    refused on the target port; so are the delete and cursor pushes."""
    t1, t2 = sc.t1, sc.t2
    r = signed("POST", sc.p1.url + "/v1/plans", body=dict(PLAN, id="plan-sec-" + TAG))
    assert r.status_code == 201, r.text
    no_internal_headers(r)
    try:
        push = sc.rec.captured("POST", "/v1/plans")
        assert push, "the plan push to t1 was not captured"
        push = push[-1]
        assert push.header("X-Hoard-Signature")
        t1u = "http://127.0.0.1:%d" % t1.port
        other = json.dumps(dict(PLAN, id="plan-forged-" + TAG)).encode()
        assert send_raw(t1u, push.raw)[0] == 403                      # replay
        assert send_raw(t1u, push.rebuild(body=other))[0] == 403      # another body
        assert send_raw(t2.url, push.raw)[0] == 403                   # another target
        # signed by a target (targets may not push plans) and by a wrong secret
        for sender, secret in ((node_id(t2), SECRET), (node_id(sc.p1), "wrong")):
            h = helpers.node_sign(secret, sender, "POST", t1u + "/v1/plans", to=node_id(t1),
                                  body=other, headers={"Content-Type": "application/json"})
            r = requests.post(t1u + "/v1/plans", data=other, headers=h, timeout=10)
            assert r.status_code == 403, (sender, r.status_code, r.text)
        ids = [p["id"] for p in plans(sc)]
        assert "plan-forged-" + TAG not in ids and "plan-sec-" + TAG in ids
        # cursor and delete, through the proxy (captured), then replayed
        r = signed("POST", sc.p1.url + "/v1/plans/plan-sec-%s/cursor" % TAG,
                   body={"epoch": 0, "position": 1})
        assert r.status_code == 200, r.text
        cur = sc.rec.captured("POST", "/v1/plans/plan-sec-%s/cursor" % TAG)[-1]
        assert send_raw(t1u, cur.raw)[0] == 403
        # cursors outside the plan or past every integer: 400, the plan stays
        for bad in ({"epoch": -1, "position": 0}, {"epoch": 2 ** 32, "position": 0},
                    {"epoch": 0, "position": -2 ** 63}, {"epoch": 0, "position": 2 ** 63 - 1},
                    {"epoch": 10 ** 6, "position": 0}, {"epoch": 0.5, "position": 0},
                    {"epoch": "0", "position": 0}, {"epoch": 0}):
            r = signed("POST", sc.p1.url + "/v1/plans/plan-sec-%s/cursor" % TAG, body=bad)
            assert r.status_code == 400, (bad, r.status_code, r.text)
        r = signed("GET", sc.p1.url + "/v1/plans/plan-sec-" + TAG)
        assert r.status_code == 200 and r.json()["epoch"] == 0, r.text
    finally:
        r = signed("DELETE", sc.p1.url + "/v1/plans/plan-sec-" + TAG)
    assert r.status_code == 200, r.text
    dele = sc.rec.captured("DELETE", "/v1/plans/plan-sec-" + TAG)[-1]
    assert send_raw("http://127.0.0.1:%d" % t1.port, dele.raw)[0] == 403
    assert plans(sc) == []


def test_relay_replay_and_header_injection(sc):
    """A PUT relayed to t1 (S3 through p1), captured and replayed after a newer write, is
    refused and the newer bytes stay; X-Hoard-* headers a client sends are neither trusted
    nor forwarded (the object lands where the client's path says, its metadata is its own);
    responses carry no X-Hoard-* headers."""
    # find a key t1 owns (its 307 points at the recorder)
    key = next(k for k in ("r%03d" % i for i in range(200)) if owner(sc, A, k) == sc.rec.url)
    raw = helpers.S3Raw("127.0.0.1", sc.p1.port, ADMIN[0], ADMIN[1])
    r = raw.request("PUT", "/%s/%s" % (A, key), body=b"version-1",
                    headers={"X-Hoard-Vhost": HIDDEN, "X-Hoard-Local": "1",
                             "X-Hoard-Obj-Meta": '{"etag":"forged"}',
                             "X-Hoard-Node": "p1"})
    assert r.status == 200, r
    assert not [k for k, _ in r.headers_list if k.lower().startswith("x-hoard-")]
    got = sc.rec.captured("PUT", "/%s/%s" % (A, key))[-1]
    sent = {k.lower(): v for k, v in got.headers}
    assert sent.get("x-hoard-node") == node_id(sc.p1)  # the proxy's own, not the client's
    assert "x-hoard-vhost" not in sent and "x-hoard-local" not in sent
    assert "x-hoard-obj-meta" not in sent
    g = obj(sc, A, key)
    assert g.content == b"version-1" and g.headers["ETag"] != '"forged"'
    assert obj(sc, HIDDEN, key).status_code == 404
    r = raw.request("PUT", "/%s/%s" % (A, key), body=b"version-2")
    assert r.status == 200
    assert send_raw("http://127.0.0.1:%d" % sc.t1.port, got.raw)[0] == 403
    assert obj(sc, A, key).content == b"version-2"
    # the native API's relay (p2: native.redirect = false) drops them as well
    u = "%s/v1/objects/%s/%s" % (sc.p2.url, A, key)
    r = signed("PUT", u, body=b"version-3", follow=False, headers={
        "X-Hoard-Obj-Meta": '{"etag":"forged","size":9}', "X-Hoard-Local": "1",
        "X-Hoard-Vhost": HIDDEN})
    assert r.status_code == 200, r.text
    no_internal_headers(r)
    sent = {k.lower(): v for k, v in sc.rec.captured("PUT", "/v1/objects/%s/%s" % (A, key))[-1]
            .headers}
    assert sent.get("x-hoard-node") == node_id(sc.p2) and "x-hoard-obj-meta" not in sent
    g = obj(sc, A, key)
    assert g.content == b"version-3" and "forged" not in g.headers["ETag"], g.headers


def owner(c, bucket, key):
    u = "%s/v1/objects/%s/%s" % (c.p1.url, bucket, key)
    r = signed("HEAD", u, follow=False)
    assert r.status_code == 307, r.status_code
    p = urllib.parse.urlsplit(r.headers["Location"])
    return "%s://%s" % (p.scheme, p.netloc)


def test_client_node_headers_not_trusted(sc):
    """A client that adds node-signature headers (made up, or copied from a captured node
    call) is not taken for a node: 403, nothing created."""
    before = state(sc)
    push = sc.rec.captured("POST", "/v1/plans") or sc.rec.captured("PUT", "/")
    for px in (sc.p1, sc.p2):
        u = px.url + "/v1/plans"
        body = json.dumps(PLAN).encode()
        fake = {"X-Hoard-Node": node_id(sc.p1), "X-Hoard-Date": str(int(time.time())),
                "X-Hoard-Nonce": "0" * 32, "X-Hoard-Content-Sha256": "UNSIGNED-PAYLOAD",
                "X-Hoard-Signature": "ab" * 32}
        r = requests.post(u, data=body, headers=fake, timeout=10)
        assert r.status_code == 403, r.text
        no_internal_headers(r)
        # a node header alone, next to a read-only client key: still the read-only key
        h = helpers.sign_headers("POST", u, RO[0], RO[1], {"X-Hoard-Node": node_id(sc.p1)})
        r = requests.post(u, data=body, headers=h, timeout=10)
        assert r.status_code == 403, r.text
        if push:
            hs = [(k, v) for k, v in push[-1].headers if k.lower().startswith("x-hoard-")]
            r = requests.post(u, data=body, headers=dict(hs), timeout=10)
            assert r.status_code == 403, r.text
    assert state(sc) == before


def test_redirect_copy_source_not_widened(sc):
    """A 307 capability names one method on one path. A key with rights on bucket A alone
    that follows a redirect for PUT A/x must not turn it into a CopyObject (or UploadPartCopy)
    from a bucket it may not read: the proxy authorised no copy source."""
    key = "stolen-" + TAG
    body = b""
    u = "%s/%s/%s" % (sc.p2.url, A, key)
    h = helpers.sign_headers("PUT", u, MIX[0], MIX[1])
    r = requests.put(u, data=body, headers=h, allow_redirects=False, timeout=10)
    assert r.status_code == 307, r.text
    no_internal_headers(r)
    loc = r.headers["Location"]
    # the redirected request, with a copy source added after the proxy's check
    r = requests.put(loc, headers={"x-amz-copy-source": "/%s/secret" % HIDDEN}, timeout=10)
    assert r.status_code == 403, (r.status_code, r.text)
    assert b"top secret" not in r.content
    # UploadPartCopy: neither the query nor the copy source may be added to the capability
    r = requests.put(loc + "&partNumber=1&uploadId=x",
                     headers={"x-amz-copy-source": "/%s/secret" % HIDDEN}, timeout=10)
    assert r.status_code == 403 and b"top secret" not in r.content, (r.status_code, r.text)
    assert obj(sc, A, key).status_code == 404
    # the same through the proxy is refused there
    h = helpers.sign_headers("PUT", u, MIX[0], MIX[1], {"x-amz-copy-source": "/%s/secret" % HIDDEN})
    r = requests.put(u, headers=h, allow_redirects=False, timeout=10)
    assert r.status_code == 403, r.text
    # a legit copy within A through the redirect still works
    src = "src-" + TAG
    h = helpers.sign_headers("PUT", u.replace(key, src), MIX[0], MIX[1])
    r = requests.put(u.replace(key, src), data=b"mine", headers=h, timeout=10)
    assert r.status_code == 200, r.text
    h = helpers.sign_headers("PUT", u, MIX[0], MIX[1], {"x-amz-copy-source": "/%s/%s" % (A, src)})
    r = requests.put(u, headers=h, timeout=10)
    assert r.status_code == 200, r.text
    assert obj(sc, A, key).content == b"mine"


def test_redirect_query_bound(sc):
    """A 307 capability covers the query the proxy authorised: a client may follow it, but not
    add a subresource (the object's ACL or tags, which the proxy never checked) or a
    response-* override to it."""
    key = "q-" + TAG
    u = "%s/%s/%s" % (sc.p2.url, A, key)
    h = helpers.sign_headers("PUT", u, MIX[0], MIX[1])
    r = requests.put(u, data=b"query bound", headers=h, timeout=10)
    assert r.status_code == 200, r.text
    h = helpers.sign_headers("GET", u, MIX[0], MIX[1])
    r = requests.get(u, headers=h, allow_redirects=False, timeout=10)
    assert r.status_code == 307, r.text
    loc = r.headers["Location"]
    assert requests.get(loc, timeout=10).content == b"query bound"
    path, query = loc.split("?", 1)
    for changed in (loc + "&tagging", loc + "&acl", path + "?tagging&" + query,
                    loc + "&response-content-type=text/html", loc + "&partNumber=1"):
        r = requests.get(changed, timeout=10)
        assert r.status_code == 403, (changed, r.status_code, r.text)
        assert b"query bound" not in r.content
    # a query the proxy saw is carried and honoured
    h = helpers.sign_headers("GET", u + "?partNumber=1", MIX[0], MIX[1])
    r = requests.get(u + "?partNumber=1", headers=h, timeout=10)
    assert r.status_code in (200, 206) and r.content == b"query bound", r.text


def test_redirect_host_not_reinterpreted(sc):
    """The 307 for a path-style PUT of A/KEY authorises bucket A. Following it with a Host
    naming another bucket in virtual-host style (HIDDEN.<s3.domain>) must not make the target
    read the path as HIDDEN's key "A/KEY": neither a write into HIDDEN nor a read of it."""
    key = "vh-" + TAG
    r = signed("PUT", "%s/v1/objects/%s/%s/%s" % (sc.p1.url, HIDDEN, A, key),
               body=b"hidden under A/")
    assert r.status_code == 200, r.text
    u = "%s/%s/%s" % (sc.p2.url, A, key)
    for method, body in (("PUT", b"planted"), ("GET", None)):
        h = helpers.sign_headers(method, u, MIX[0], MIX[1])
        if body:
            # announced (Expect: 100-continue) and not sent: the 307 comes first, as to curl;
            # a body sent at once would be relayed instead (docs/cluster.md)
            c = http.client.HTTPConnection(sc.p2.host, sc.p2.port, timeout=10)
            c.putrequest(method, urllib.parse.urlsplit(u).path)  # Host as signed
            for k, v in [(k, v) for k, v in h.items() if k.lower() != "host"] + [
                    ("Content-Length", str(len(body))), ("Expect", "100-continue")]:
                c.putheader(k, v)
            c.endheaders()
            resp = c.getresponse()
            status, location = resp.status, resp.getheader("Location")
            c.close()
        else:
            r = requests.request(method, u, allow_redirects=False, timeout=10, headers=h)
            status, location = r.status_code, r.headers.get("Location")
        assert status == 307, (method, status)
        loc = urllib.parse.urlsplit(location)
        r = requests.request(method, "http://127.0.0.1:%d%s?%s" % (
            sc.t1.port if loc.port == urllib.parse.urlsplit(sc.rec.url).port else loc.port,
            loc.path, loc.query), data=body, timeout=10,
            headers={"Host": "%s.%s:%d" % (HIDDEN, DOMAIN, loc.port)})
        assert b"hidden under A/" not in r.content, (method, r.status_code)
        if method == "PUT":
            assert r.status_code in (200, 403), r.text
    g = obj(sc, HIDDEN, "%s/%s" % (A, key))
    assert g.content == b"hidden under A/", g.content


def test_redirect_header_injection(sc):
    """A client following a 307 to a target cannot pass for a node: X-Hoard-Obj-Meta (a
    rebalance push's metadata) and X-Hoard-Local are ignored, node-signature headers next to
    the capability are refused, and the capability of an object path opens no admin
    endpoint (plans, jobs, daemon) at that target."""
    key = "inject-" + TAG
    u = "%s/v1/objects/%s/%s" % (sc.p1.url, A, key)
    r = signed("PUT", u, keys=MIX, follow=False)
    assert r.status_code == 307, r.text
    loc = r.headers["Location"]
    forged = json.dumps({"etag": "forged", "size": 3, "mtime": 1}).encode()
    r = requests.put(loc, data=b"mine", headers={"X-Hoard-Obj-Meta": forged,
                                                 "X-Hoard-Local": "1"}, timeout=10)
    assert r.status_code == 200, r.text
    g = obj(sc, A, key)
    assert g.content == b"mine" and "forged" not in g.headers["ETag"], g.headers
    h = helpers.node_sign("wrong", node_id(sc.p1), "PUT", loc, body=b"x")
    r = requests.put(loc, data=b"x", headers=h, timeout=10)
    assert r.status_code == 403, r.text
    assert obj(sc, A, key).content == b"mine"
    parts = urllib.parse.urlsplit(loc)
    for method, path in (("GET", "/v1/plans"), ("GET", "/v1/daemon"), ("GET", "/v1/jobs")):
        r = requests.request(method, "%s://%s%s?%s" % (parts.scheme, parts.netloc, path,
                                                     parts.query), timeout=10)
        assert r.status_code == 403, (path, r.status_code, r.text)


def test_upstream_needs_admin(sc, s3rver):  # noqa: F811
    """Choosing an S3-backed bucket's upstream (endpoint, profile, upstream bucket) needs a
    key with rw on every bucket: a key with rights on its own buckets cannot point one at
    another upstream bucket with the nodes' credentials (or at any address), neither when
    creating it nor by PATCH; its other props and native buckets stay its own business."""
    up = {"upstream": {"endpoint": s3rver.url, "profile": "s3rver", "bucket": CLOUD}}
    for px in (sc.p1, sc.p2):
        r = signed("POST", "%s/v1/buckets/%s?provider=aws" % (px.url, MINE), keys=MIX, body=up)
        json_err(r, 403, "AccessDenied")
        assert "upstream" in r.json()["message"]
        r = signed("PATCH", "%s/v1/buckets/%s" % (px.url, A), keys=MIX, body=up)
        json_err(r, 403, "AccessDenied")
        r = signed("HEAD", "%s/v1/buckets/%s" % (px.url, MINE))
        assert r.status_code == 404, r.status_code
    props = signed("GET", "%s/v1/buckets/%s?props" % (sc.p1.url, A)).json()
    assert props["provider"] == "ais" and "upstream" not in props["props"], props
    r = signed("PATCH", "%s/v1/buckets/%s" % (sc.p2.url, A), keys=MIX,
               body={"anonymous_read": False})
    assert r.status_code == 200, r.text
    r = signed("POST", "%s/v1/buckets/%s" % (sc.p2.url, MINE), keys=MIX)
    assert r.status_code == 201, r.text
    r = signed("DELETE", "%s/v1/buckets/%s" % (sc.p1.url, MINE), keys=MIX)
    assert r.status_code == 204, r.text


def test_sigv4_replay_within_skew(sc):
    """S3 design: a header-signed request captured from a client may be replayed while its
    date is within the 15-minute window (docs/security.md says so); one signed outside it is
    refused with RequestTimeTooSkewed."""
    import datetime
    u = "%s/%s/replayed-%s" % (sc.p1.url, A, TAG)
    h = helpers.sign_headers("PUT", u, ADMIN[0], ADMIN[1])
    assert requests.put(u, data=b"one", headers=h, timeout=10).status_code == 200
    assert requests.put(u, data=b"one", headers=h, timeout=10).status_code == 200
    old = datetime.datetime.utcnow() - datetime.timedelta(minutes=20)
    h = helpers.sign_headers("PUT", u, ADMIN[0], ADMIN[1], when=old)
    r = requests.put(u, data=b"two", headers=h, timeout=10)
    assert r.status_code == 403 and b"RequestTimeTooSkewed" in r.content, r.text
    assert obj(sc, A, "replayed-" + TAG).content == b"one"


def test_no_internal_headers_in_answers(sc):
    """Answers of the new endpoints, through both proxies (307 and relay paths), carry no
    X-Hoard-* or Hoard-* header."""
    r = signed("PUT", "%s/v1/objects/%s/hdr" % (sc.p1.url, A), body=b"hdr")
    assert r.status_code == 200
    for px in (sc.p1, sc.p2):
        for method, path, body in [
                ("GET", "/v1/plans", None), ("GET", "/v1/jobs", None),
                ("GET", "/v1/buckets/%s?summary" % A, None),
                ("GET", "/v1/buckets/%s?writeback" % CLOUD, None),
                ("GET", "/v1/daemon?what=smap", None), ("GET", "/v1/daemon?what=snode", None),
                ("GET", "/v1/cluster?what=smap", None), ("GET", "/v1/cluster/capacity", None),
                ("POST", "/v1/batch", {"bucket": A, "entries": [{"name": "hdr"}]}),
                ("POST", "/v1/ml/moss/" + A, {"in": [{"objname": "hdr"}]}),
                ("GET", "/v1/objects/%s/hdr" % A, None), ("HEAD", "/v1/objects/%s/hdr" % A, None),
                ("GET", "/%s/hdr" % A, None), ("GET", "/v1/plans/nope", None),
                ("GET", "/v1/objects/%s/missing" % A, None), ("GET", "/metrics", None)]:
            r = signed(method, px.url + path, body=body, follow=False)
            no_internal_headers(r)
            if r.status_code == 307:
                loc = r.headers["Location"]
                r = requests.request(method, loc, data=body_of(body), timeout=30)
                no_internal_headers(r)
            assert r.status_code in (200, 404), (px.name, method, path, r.status_code, r.text)


def test_bad_input(sc):
    """Malformed JSON, oversized bodies and headers, path tricks: a clear 4xx, nothing
    created, every node alive."""
    before = state(sc)
    url = sc.p1.url
    for path in ("/v1/plans", "/v1/plans/x/cursor", "/v1/batch", "/v1/ml/moss", "/v1/jobs"):
        for bad in (b"{", b"[]", b"\x00\xff", b'{"bucket": 5}', b"null"):
            r = signed("POST", url + path, body=bad)
            assert 400 <= r.status_code < 500, (path, bad, r.status_code, r.text)
            assert r.json()["message"], r.text
    # bodies past the limits: refused before being read in full
    big = b"{" + b" " * (5 << 20)
    for path in ("/v1/plans/x/cursor", "/v1/users/" + ADMIN[0]):
        r = requests.post(url + path, data=big, headers=helpers.sign_headers(
            "POST", url + path, ADMIN[0], ADMIN[1]), timeout=60)
        assert r.status_code in (400, 413), (path, r.status_code)
    # plan and bucket names with dot segments, raw and encoded
    raw = helpers.S3Raw("127.0.0.1", sc.p1.port, ADMIN[0], ADMIN[1])
    for path in ("/v1/plans/../cluster", "/v1/plans/%2e%2e/cluster", "/v1/plans/%2e%2e",
                 "/v1/plans/..%2fcluster/cursor", "/v1/plans/" + "p" * 200,
                 "/v1/buckets/..?summary", "/v1/buckets/%2e%2e?summary",
                 "/v1/buckets/..%2f" + HIDDEN + "?writeback", "/v1/ml/moss/..%2f" + HIDDEN,
                 "/v1/plans/x/../../cluster"):
        r = raw.request("GET", path)
        assert 400 <= r.status < 500, (path, r)
        assert b"top secret" not in r.body and b"tmap" not in r.body, (path, r)
    for body in ({"bucket": "..", "prefix": "d/", "epochs": 1, "seed": 1},
                 {"bucket": "../" + CLOUD, "prefix": "d/", "epochs": 1, "seed": 1},
                 {"bucket": CLOUD, "prefix": "d/", "epochs": 1, "seed": 1, "id": "../x"},
                 {"bucket": CLOUD, "prefix": "d/", "epochs": 1, "seed": 1, "id": "a/b"},
                 {"bucket": CLOUD, "prefix": "d/", "epochs": 1, "seed": 1, "id": "%2e%2e"},
                 {"bucket": CLOUD, "prefix": "d/", "epochs": 1, "seed": 1, "id": "x" * 300},
                 {"bucket": CLOUD, "prefix": "d/", "epochs": 0, "seed": 1},
                 {"bucket": CLOUD, "prefix": "d/", "epochs": 10 ** 12, "seed": 1}):
        r = signed("POST", url + "/v1/plans", body=body)
        assert 400 <= r.status_code < 500, (body, r.status_code, r.text)
    for body in ({"bucket": "../" + HIDDEN, "entries": [{"name": "secret"}]},
                 {"bucket": A, "entries": [{"name": "../%s/secret" % HIDDEN}]},
                 {"bucket": A, "entries": [{"bucket": "..", "name": HIDDEN + "/secret"}]}):
        r = signed("POST", url + "/v1/batch", keys=MIX, body=body)
        assert b"top secret" not in r.content, body
    # object names with dot segments stay names inside their bucket
    for name in ("..%2f..%2f" + HIDDEN + "%2fsecret", "%2e%2e%2f" + HIDDEN + "%2fsecret"):
        r = signed("PUT", "%s/v1/objects/%s/%s" % (url, A, name), keys=MIX, body=b"mine")
        assert r.status_code == 200, r.text
        r = signed("DELETE", "%s/v1/objects/%s/%s" % (url, A, name), keys=MIX)
        assert r.status_code == 204, r.text
    assert obj(sc, HIDDEN, "secret").content == b"top secret"
    # raw dot segments in S3 paths, through the relay (p1) and the 307 (p2), with the key of A
    for px in (sc.p1, sc.p2):
        mraw = helpers.S3Raw("127.0.0.1", px.port, MIX[0], MIX[1])
        for path in ("/%s/../%s/secret" % (A, HIDDEN), "/%s/%%2e%%2e/%s/secret" % (A, HIDDEN),
                     "/%s/..%%2f%s%%2fsecret" % (A, HIDDEN), "/s3/%s/../../%s/secret" % (A, HIDDEN),
                     "/%s/./../%s/secret" % (A, HIDDEN)):
            r = mraw.request("GET", path)
            if r.status == 307:
                loc = urllib.parse.urlsplit(r.header("Location"))
                r = helpers.raw_request("127.0.0.1", loc.port, "GET", loc.path + "?" + loc.query)
            assert b"top secret" not in r.body, (px.name, path, r)
            assert r.status in (403, 404, 400), (px.name, path, r)
    # oversized headers: one huge, many small
    for h in ({"X-Big": "a" * 200000}, {"X-H%d" % i: "v" * 100 for i in range(2000)}):
        try:
            r = requests.get(url + "/v1/plans", headers=h, timeout=30)
            assert 400 <= r.status_code < 500, r.status_code
        except requests.ConnectionError:
            pass  # closing the connection is an answer too
    # a request line past every limit
    s = socket.create_connection(("127.0.0.1", sc.p1.port), timeout=30)
    try:
        s.sendall(b"GET /v1/plans/" + b"a" * 300000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        got = s.recv(200)
        assert not got or got.split(b" ")[1][:1] == b"4", got
    except (ConnectionError, socket.timeout):
        pass
    finally:
        s.close()
    assert state(sc) == before
    all_alive(sc)


def test_metrics_open_and_free_of_secrets(sc):
    """/metrics is open by default on every port (docs/security.md) and shows counters only:
    no secrets, keys or paths; the refusals above are counted in auth_failed."""
    for n in sc.nodes:
        r = requests.get("http://127.0.0.1:%d/v1/plans" % n.port, timeout=10)
        assert r.status_code == 403, r.text  # one refusal to count, at least
        r = requests.get("http://127.0.0.1:%d/metrics" % n.port, timeout=10)
        assert r.status_code == 200, (n.name, r.status_code)
        no_internal_headers(r)
        text = r.text
        for s in (SECRET, ADMIN[1], RO[1], MIX[1], MIX[0], RO[0], ADMIN[0], n.data_dir):
            assert s not in text, (n.name, s)
        failed = [ln for ln in text.splitlines() if ln.startswith("hoard_auth_failures_total")]
        assert failed and float(failed[0].split()[-1]) > 0, (n.name, failed)


def test_keys_without_secret_refused(tmp_path):
    """hoardd refuses auth.keys without cluster.secret on a proxy and on a target that joins
    a cluster (a target could not tell a proxy's redirect from a forged one)."""
    import subprocess
    from conftest import BIN_DIR
    for role, extra in (("proxy", []), ("target", ["--cluster.join", "http://127.0.0.1:9"])):
        d = tmp_path / role
        d.mkdir()
        p = subprocess.run([os.path.join(BIN_DIR, "hoardd"), "--role", role, "--listen",
                            "127.0.0.1:%d" % _free_port(), "--data", str(d),
                            "--auth.keys", "AK:SK"] + extra,
                           capture_output=True, timeout=30)
        assert p.returncode != 0, (role, p.stdout, p.stderr)
        assert b"needs cluster.secret" in p.stderr, p.stderr
