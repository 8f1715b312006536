"""AIStore wire compatibility (docs/aistore-compat.md): the HTTP requests the AIStore Python
SDK (github.com/NVIDIA/aistore, python/aistore/sdk/) sends, sent here exactly as it sends them
(method, path, query, JSON body, Content-Type/User-Agent/Authorization/Accept headers, 307s
followed by `requests` as the SDK's session does), against a real cluster (1 proxy, 2 targets)
with auth on and a bearer token from hoard's AuthN-style login. Each answer is checked for the
field names and types the SDK parses (its pydantic/msgspec models, named per test). The SDK
itself is not installable here (no PyPI): `SdkClient` mirrors its RequestClient.request().
"""
import base64
import hashlib
import hmac
import io
import json
import os
import subprocess
import tarfile
import time
import uuid

import msgpack
import pytest
import requests

import helpers
from cachefix import profiles, s3rver  # noqa: F401 (fixtures)
from conftest import (ACCESS_KEY, BIN_DIR, CLUSTER_SECRET, COMPLETE_KEEPALIVE, KEEPALIVE_ARGS,
                      PERM_BUCKETS, SECRET_KEY, _stop_nodes, start_cluster)

SDK_UA = "ais/python/1.16.0"  # const.py USER_AGENT_BASE "ais/python" + "/" + version


class SdkClient:
    """What request_client.py's RequestClient.request() does: URL = endpoint + "/v1/" + path,
    headers Content-Type: application/json and User-Agent always, Authorization: Bearer when a
    token is set, params and json passed to requests (which follows the 307s and, as for the
    SDK, drops Authorization when the redirect changes the port)."""

    def __init__(self, endpoint, token=None):
        self.base = endpoint.rstrip("/") + "/v1"
        self.token = token
        self.s = requests.Session()

    def request(self, method, path, headers=None, **kw):
        h = dict(headers or {})
        h["Content-Type"] = "application/json"
        h["User-Agent"] = SDK_UA
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        kw.setdefault("timeout", 30)
        return self.s.request(method, "%s/%s" % (self.base, path.lstrip("/")), headers=h, **kw)


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def forge_token(secret, claims):
    """An HS256 JWT signed with the token key hoard derives (HKDF, info "hoard token key")."""
    key = helpers._hkdf_sha256(secret.encode(), b"hoard/v1", b"hoard token key\0")
    head = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64url(json.dumps(claims).encode())
    mac = hmac.new(key, ("%s.%s" % (head, body)).encode(), hashlib.sha256).digest()
    return "%s.%s.%s" % (head, body, b64url(mac))


def bad_tokens(sdk):
    """No token, and tokens a caller must not get in with: sdk's own with its signature
    changed, one signed with the right key but expired an hour ago, and a fresh one signed with
    another key."""
    now = int(time.time())
    return {
        "none": None,
        "tampered": sdk.token[:-4] + ("AAAA" if not sdk.token.endswith("AAAA") else "BBBB"),
        "expired": forge_token(CLUSTER_SECRET, {"username": ACCESS_KEY, "iat": now - 7200,
                                                "exp": now - 3600}),
        "forged": forge_token("another-secret", {"username": ACCESS_KEY, "iat": now,
                                                 "exp": now + 600}),
    }


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, log_dir, profiles):  # noqa: F811 (s3rver's profile for targets)
    nodes, ep = start_cluster(tmp_path_factory, log_dir, "ais-", 2)
    yield ep
    _stop_nodes(nodes)


@pytest.fixture(scope="module")
def token(cluster):
    # authn_client.py login(): POST {authn}/v1/users/{username} {"password", "expires_in"}
    # -> TokenMsg {"token"}
    c = SdkClient(cluster.url)
    r = c.request("post", "users/" + ACCESS_KEY, json={"password": SECRET_KEY})
    assert r.status_code == 200, r.text
    tok = r.json()["token"]
    assert isinstance(tok, str) and tok.count(".") == 2
    return tok


@pytest.fixture(scope="module")
def sdk(cluster, token):
    return SdkClient(cluster.url, token)


@pytest.fixture
def bucket(sdk):
    name = "ais-" + uuid.uuid4().hex[:10]
    # bucket.py create(): POST buckets/B ?provider=ais, ActionMsg {"action","name","value"}
    r = sdk.request("post", "buckets/" + name, params={"provider": "ais"},
                    json={"action": "create-bck", "name": "", "value": None})
    assert r.status_code == 200, r.text
    yield name
    sdk.request("delete", "buckets/" + name, params={"provider": "ais"},
                json={"action": "destroy-bck", "name": "", "value": None})


def put(sdk, bucket, name, data):
    # object.py / obj writer put_content(): PUT objects/B/O ?provider=ais, data=bytes
    r = sdk.request("put", "objects/%s/%s" % (bucket, name), params={"provider": "ais"},
                    data=data)
    assert r.status_code == 200, r.text


# ---- auth ----

def test_login_and_bearer_tokens(cluster, token):
    c = SdkClient(cluster.url)
    # wrong password, unknown user: refused, no token
    for user, pw in ((ACCESS_KEY, "wrong"), ("NOBODY", SECRET_KEY)):
        r = c.request("post", "users/" + user, json={"password": pw})
        assert r.status_code == 403 and "token" not in r.text, r.text
    # malformed login bodies: refused, no token
    for body in ({"password": 5}, {"password": None}, [SECRET_KEY], "x"):
        r = c.request("post", "users/" + ACCESS_KEY, json=body)
        assert r.status_code in (400, 403) and "token" not in r.text, (body, r.text)
    # lifetimes: huge ones are capped at 24 hours, tiny ones last at least a second
    for ex, life in ((1e300, 86400), (1e30, 86400), (48 * 3600, 86400), (0.5, 1),
                     (120 * 10 ** 9, 120)):
        r = c.request("post", "users/" + ACCESS_KEY, json={"password": SECRET_KEY,
                                                            "expires_in": ex})
        assert r.status_code == 200, r.text
        claims = json.loads(base64.urlsafe_b64decode(r.json()["token"].split(".")[1] + "=="))
        assert claims["exp"] - claims["iat"] == life, (ex, claims)
    # no token, a tampered one, an expired one (signed with the right key), one signed with
    # another secret: all refused
    r = c.request("get", "daemon", params={"what": "smap"})
    assert r.status_code == 403, r.text
    bad = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    now = int(time.time())
    expired = forge_token(CLUSTER_SECRET, {"username": ACCESS_KEY, "iat": now - 7200,
                                           "exp": now - 3600})
    other = forge_token("another-secret", {"username": ACCESS_KEY, "iat": now, "exp": now + 600})
    for t in (bad, expired, other, "not.a.jwt", "x"):
        r = SdkClient(cluster.url, t).request("get", "daemon", params={"what": "smap"})
        # 401 with RFC 6750's challenge, as AIStore answers a bad token
        assert r.status_code == 401, (t, r.text)
        assert r.headers["WWW-Authenticate"].startswith('Bearer error="invalid_token"')
        assert r.json()["code"] == "Unauthorized"
    assert "expired" in SdkClient(cluster.url, expired).request(
        "get", "daemon", params={"what": "smap"}).headers["WWW-Authenticate"]
    # a valid forged token proves the key derivation documented in docs/security.md
    good = forge_token(CLUSTER_SECRET, {"username": ACCESS_KEY, "iat": now, "exp": now + 600})
    assert SdkClient(cluster.url, good).request(
        "get", "daemon", params={"what": "smap"}).status_code == 200
    # a token for a read-only key cannot write
    ro = SdkClient(cluster.url)
    r = ro.request("post", "users/AKRO", json={"password": "secretRO", "expires_in": 60 * 10**9})
    assert r.status_code == 200, r.text
    ro.token = r.json()["token"]
    r = ro.request("post", "buckets/ais-ro-" + uuid.uuid4().hex[:6], params={"provider": "ais"},
                   json={"action": "create-bck", "name": "", "value": None})
    assert r.status_code == 403, r.text


def test_cli_auth_token(cluster):
    """`hoard auth token` logs in with the CLI's key and prints a token the SDK can use."""
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY)
    out = subprocess.run([os.path.join(BIN_DIR, "hoard"), "--endpoint", cluster.url, "auth",
                          "token", "--ttl", "120"], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    tok = out.stdout.strip()
    claims = json.loads(base64.urlsafe_b64decode(tok.split(".")[1] + "=="))
    assert claims["username"] == ACCESS_KEY and claims["exp"] - claims["iat"] == 120
    r = SdkClient(cluster.url, tok).request("get", "daemon", params={"what": "smap"})
    assert r.status_code == 200, r.text
    env["AWS_SECRET_ACCESS_KEY"] = "wrong"
    out = subprocess.run([os.path.join(BIN_DIR, "hoard"), "--endpoint", cluster.url, "auth",
                          "token"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and not out.stdout.strip()


# ---- cluster ----

def check_snode(n):
    # types.py Snode: daemon_id, daemon_type, public_net/intra_*_net NetInfo
    # {node_hostname: str, daemon_port: str, direct_url: str}, flags: int
    assert isinstance(n["daemon_id"], str) and n["daemon_type"] in ("proxy", "target")
    for net in ("public_net", "intra_control_net", "intra_data_net"):
        ni = n[net]
        assert ni["node_hostname"] == "127.0.0.1"
        assert isinstance(ni["daemon_port"], str) and int(ni["daemon_port"]) > 0
        assert ni["direct_url"] == "http://127.0.0.1:%s" % ni["daemon_port"]
    assert isinstance(n["flags"], int)


def test_cluster_map(cluster, sdk):
    # cluster.py get_info() and request_client.py get_smap(): GET daemon?what=smap -> Smap
    r = sdk.request("get", "daemon", params={"what": "smap"})
    assert r.status_code == 200, r.text
    s = r.json()
    assert isinstance(s["version"], int) and isinstance(s["uuid"], str) and s["uuid"]
    assert len(s["tmap"]) == 2 and len(s["pmap"]) == 1
    for m in ("tmap", "pmap"):
        for k, n in s[m].items():
            assert n["daemon_id"] == k
            check_snode(n)
    check_snode(s["proxy_si"])
    assert s["proxy_si"]["daemon_id"] in s["pmap"]
    assert s["proxy_si"]["public_net"]["direct_url"] == cluster.url
    # /v1/cluster?what=smap answers the same map
    assert sdk.request("get", "cluster", params={"what": "smap"}).json()["uuid"] == s["uuid"]
    # what=snode: this proxy
    assert sdk.request("get", "daemon", params={"what": "snode"}).json()["daemon_id"] == \
        s["proxy_si"]["daemon_id"]
    # cluster.py is_ready()/is_aistore_running(): GET health?prr=true -> 2xx
    r = sdk.request("get", "health", params={"prr": "true"})
    assert r.status_code == 200, r.text
    # an unsupported what= is a clear 501, not a wrong shape
    r = sdk.request("get", "daemon", params={"what": "sysinfo"})
    assert r.status_code == 501 and "smap" in r.json()["message"]


def node_status(client, node_id, what="node_status"):
    # cluster.py get_performance(): per target id of the Smap's tmap, GET reverse/daemon
    # ?what=node_status with header ais-node-id: ID; resp.json() is returned as it is
    h = {"ais-node-id": node_id} if node_id is not None else {}
    return client.request("get", "reverse/daemon", params={"what": what}, headers=h)


def test_get_performance(cluster, sdk, bucket):
    """Cluster.get_performance(): stats.NodeStatus of each target (snode, tracker with
    AIStore's metric names and {"v": "N"} values, capacity as fs.Tcdf, status,
    smap_version as a string)."""
    smap = sdk.request("get", "daemon", params={"what": "smap"}).json()
    tids = list(smap["tmap"])

    def gets():
        total = 0
        for tid in tids:
            r = node_status(sdk, tid)
            assert r.status_code == 200, r.text
            total += int(r.json()["tracker"]["get.n"]["v"])
        return total
    before = gets()
    put(sdk, bucket, "perf", b"x" * 1000)
    for _ in range(3):
        assert sdk.request("get", "objects/%s/perf" % bucket,
                           params={"provider": "ais"}).status_code == 200
    assert gets() >= before + 3
    for tid in tids:
        j = node_status(sdk, tid).json()
        assert j["snode"]["daemon_id"] == tid and j["snode"]["daemon_type"] == "target"
        check_snode(j["snode"])
        for name in ("get.n", "put.n", "del.n", "lst.n", "err.get.n", "get.size", "put.size",
                     "get.ns.total", "up.ns.time"):
            assert isinstance(j["tracker"][name]["v"], str), name
            assert int(j["tracker"][name]["v"]) >= 0
        cap = j["capacity"]
        assert cap["mountpaths"] and int(cap["total_avail"]) > 0
        for mp in cap["mountpaths"].values():
            assert int(mp["capacity"]["avail"]) > 0 and 0 <= mp["capacity"]["pct_used"] <= 100
        assert j["status"] == "online" and int(j["smap_version"]) == smap["version"]
    # what the call does not serve: clear errors, never another node's document
    assert node_status(sdk, "nope").status_code == 404
    assert node_status(sdk, None).status_code == 400
    r = node_status(sdk, smap["proxy_si"]["daemon_id"])
    assert r.status_code == 501 and "targets" in r.json()["message"], r.text
    assert node_status(sdk, tids[0], what="status").status_code == 501
    assert node_status(SdkClient(cluster.url), tids[0]).status_code == 403


# ---- buckets ----

def test_bucket_create_list_destroy(cluster, sdk):
    name = "ais-" + uuid.uuid4().hex[:10]
    act = {"action": "create-bck", "name": "", "value": None}
    r = sdk.request("post", "buckets/" + name, params={"provider": "ais"}, json=act)
    assert r.status_code == 200, r.text
    # again: 409 naming ais://B, what response_handler.py maps to ErrBckAlreadyExists
    r = sdk.request("post", "buckets/" + name, params={"provider": "ais"}, json=act)
    assert r.status_code == 409 and ("ais://%s" % name) in r.text, r.text
    # bucket.py head(): HEAD buckets/B ?provider=ais
    assert sdk.request("head", "buckets/" + name, params={"provider": "ais"}).status_code == 200
    # cluster.py list_buckets(): GET buckets ?provider=ais with ActionMsg "list"
    # -> List[BucketModel {name, provider, namespace}]
    r = sdk.request("get", "buckets", params={"provider": "ais"},
                    json={"action": "list", "name": "", "value": None})
    assert r.status_code == 200, r.text
    lst = r.json()
    assert isinstance(lst, list)
    mine = [b for b in lst if b["name"] == name]
    assert mine and mine[0]["provider"] == "ais" and isinstance(mine[0]["namespace"], dict)
    assert all(b["provider"] == "ais" for b in lst)
    r = sdk.request("get", "buckets", params={"provider": "aws"},
                    json={"action": "list", "name": "", "value": None})
    assert all(b["name"] != name for b in r.json())
    # hoard's own shape without an action message (the hoard CLI)
    r = sdk.request("get", "buckets")
    assert any(b["name"] == name for b in r.json()["buckets"])
    # an action hoard does not do: a clear 501
    r = sdk.request("post", "buckets/" + name, params={"provider": "ais"},
                    json={"action": "move-bck", "name": "", "value": None})
    assert r.status_code == 501, r.text
    # bucket.py delete(): DELETE buckets/B ?provider=ais with ActionMsg destroy-bck
    r = sdk.request("delete", "buckets/" + name, params={"provider": "ais"},
                    json={"action": "destroy-bck", "name": "", "value": None})
    assert r.status_code == 200, r.text
    r = sdk.request("head", "buckets/" + name, params={"provider": "ais"})
    assert r.status_code == 404


# ---- objects ----

def test_object_props_headers(cluster, sdk, bucket):
    data = helpers.pattern_bytes(3000, 7)
    put(sdk, bucket, "dir/a b.bin", data)
    # object.py head(): HEAD objects/B/O ?provider=ais -> ObjectProps from headers
    r = sdk.request("head", "objects/%s/dir/a b.bin" % bucket, params={"provider": "ais"})
    assert r.status_code == 200, r.text
    h = r.headers
    assert h["Content-Length"] == "3000"
    assert h["ais-checksum-type"] == "md5" and h["ais-checksum-value"] == helpers.md5_hex(data)
    assert int(h["ais-atime"]) > 10**18  # unix nanoseconds
    assert h["ais-version"] == helpers.md5_hex(data)
    assert h["ais-name"] == "dir/a b.bin" and h["ais-bucket-name"] == bucket
    assert h["ais-present"] == "true" and h["ais-mirror-copies"] == "1"
    # object reader get: GET objects/B/O ?provider=ais, stream=True; ranged with Range header
    r = sdk.request("get", "objects/%s/dir/a b.bin" % bucket, params={"provider": "ais"})
    assert r.content == data and r.headers["ais-checksum-value"] == helpers.md5_hex(data)
    r = sdk.request("get", "objects/%s/dir/a b.bin" % bucket, params={"provider": "ais"},
                    headers={"Range": "bytes=10-19"})
    assert r.status_code == 206 and r.content == data[10:20]
    # S3 answers stay as they were: no ais-* headers there
    url = "%s/%s/dir/a%%20b.bin" % (cluster.url, bucket)
    r = requests.head(url, headers=helpers.sign_headers("HEAD", url, ACCESS_KEY, SECRET_KEY),
                      timeout=30)
    assert r.status_code == 200 and "ais-checksum-type" not in r.headers


def test_large_put_through_the_proxy(cluster, sdk, bucket):
    """ObjectWriter.put_content() of more than 4 MiB over plain HTTP: requests sends the body at
    once (no 100 Continue); the proxy relays such a PUT to the owner instead of a 307 (whose
    early answer the client met as a connection reset, 9 times in 10 before). Over TLS the SDK
    asks the proxy without the body and sends it to the Location (manual redirect): a 307."""
    for i in range(5):
        data = helpers.pattern_bytes((6 << 20) + i, i)
        r = sdk.request("put", "objects/%s/big%d" % (bucket, i), params={"provider": "ais"},
                        data=data)
        assert r.status_code == 200, (i, r.text)
        r = sdk.request("get", "objects/%s/big%d" % (bucket, i), params={"provider": "ais"})
        assert r.content == data
    # request_client.py _request_with_manual_redirect(): no body to the proxy -> 307
    r = sdk.request("put", "objects/%s/manual" % bucket, params={"provider": "ais"},
                    allow_redirects=False)
    assert r.status_code == 307, r.text
    data = helpers.pattern_bytes(5 << 20, 9)
    r = sdk.s.put(r.headers["Location"], data=data, timeout=60,
                  headers={"User-Agent": SDK_UA, "Content-Type": "application/json"})
    assert r.status_code == 200, r.text
    assert sdk.request("get", "objects/%s/manual" % bucket,
                       params={"provider": "ais"}).content == data
    # small bodies still get the 307
    r = sdk.request("put", "objects/%s/small" % bucket, params={"provider": "ais"},
                    data=b"x" * 1000, allow_redirects=False)
    assert r.status_code == 307
    for i in range(5):
        sdk.request("delete", "objects/%s/big%d" % (bucket, i), params={"provider": "ais"})


def test_object_custom_metadata(cluster, sdk, bucket):
    # user metadata stored with the object (x-amz-meta-*, here on a native PUT)
    r = sdk.request("put", "objects/%s/m" % bucket, params={"provider": "ais"}, data=b"x",
                    headers={"x-amz-meta-label": "cat", "x-amz-meta-split": "train",
                             "x-amz-meta-odd": "a,b=c"})
    assert r.status_code == 200, r.text
    # obj/object.py head() -> ObjectAttributes.custom_metadata (obj/object_attributes.py):
    # ais-custom-md "k=v,k2=v2", split on "," then "="; entries that would not split are
    # left out
    for method in ("head", "get"):
        r = sdk.request(method, "objects/%s/m" % bucket, params={"provider": "ais"})
        assert r.status_code == 200
        md = {}
        for entry in r.headers.get("ais-custom-md", "").split(","):
            kv = entry.strip().split("=")
            if len(kv) == 2:
                md[kv[0]] = kv[1]
        assert md == {"label": "cat", "split": "train"}, r.headers
    put(sdk, bucket, "plain", b"y")
    r = sdk.request("head", "objects/%s/plain" % bucket, params={"provider": "ais"})
    assert "ais-custom-md" not in r.headers


def list_objects(sdk, bucket, accept_msgpack=True, **value):
    # bucket.py list_objects(): GET buckets/B ?provider=ais, Accept: application/msgpack,
    # ActionMsg {"action": "list", "value": ListObjectsMsg.as_dict()} -> BucketList
    v = {"prefix": "", "pagesize": 0, "uuid": "", "props": "", "continuation_token": "",
         "flags": "0", "target": ""}
    v.update(value)
    hdrs = {"Accept": "application/msgpack"} if accept_msgpack else {}
    r = sdk.request("get", "buckets/" + bucket, params={"provider": "ais"}, headers=hdrs,
                    json={"action": "list", "name": "", "value": v})
    assert r.status_code == 200, r.text
    if accept_msgpack:
        assert r.headers["Content-Type"] == "application/msgpack"
        res = msgpack.unpackb(r.content, raw=False)
    else:
        res = r.json()
    # types.py BucketList (msgspec): UUID str, ContinuationToken str, Flags int, Entries
    assert isinstance(res["UUID"], str) and isinstance(res["ContinuationToken"], str)
    assert isinstance(res["Flags"], int)
    for e in res["Entries"]:  # BucketEntry: n str, s int, cs/a/v str, c/f int
        assert isinstance(e["n"], str) and isinstance(e["f"], int)
        assert all(isinstance(e[k], str) for k in ("cs", "a", "v") if k in e)
        assert all(isinstance(e[k], int) for k in ("s", "c") if k in e)
    return res


def test_list_objects(cluster, sdk, bucket):
    names = ["a/%02d" % i for i in range(7)] + ["b/x", "c"]
    for n in names:
        put(sdk, bucket, n, n.encode() * 3)
    # list_all_objects(): pages of pagesize, continuation token until it is ""
    got, tok, pages = [], "", 0
    while True:
        res = list_objects(sdk, bucket, pagesize=3, props="name,size", continuation_token=tok)
        pages += 1
        got += res["Entries"]
        tok = res["ContinuationToken"]
        if not tok:
            break
    assert pages == 3 and [e["n"] for e in got] == sorted(names)
    for e in got:
        assert e["s"] == len(e["n"]) * 3
        assert e["f"] & (1 << 6)  # BucketEntry.is_cached(); is_ok(): low 5 bits clear
        assert e["f"] & 31 == 0
        assert "cs" not in e  # props selected name,size only
    # prefix and the other props; JSON answer when msgpack is not asked for
    res = list_objects(sdk, bucket, False, prefix="a/", props="name,size,checksum,atime,version")
    assert [e["n"] for e in res["Entries"]] == names[:7] and res["ContinuationToken"] == ""
    e = res["Entries"][0]
    assert e["cs"] == helpers.md5_hex(b"a/00" * 3) and e["v"] == e["cs"] and e["a"]
    # flags NAME_ONLY (1 << 4): names only
    res = list_objects(sdk, bucket, flags=str(1 << 4), props="name,size")
    assert all(set(e) == {"n", "f"} for e in res["Entries"])
    # a malformed token or flags: 400
    r = sdk.request("get", "buckets/" + bucket, params={"provider": "ais"},
                    json={"action": "list", "value": {"flags": "x1"}})
    assert r.status_code == 400, r.text
    # fields of the wrong type are refused, not ignored (a numeric prefix is not "all")
    for v in ({"prefix": 7}, {"props": ["name"]}, {"continuation_token": 1},
              {"pagesize": "3"}):
        r = sdk.request("get", "buckets/" + bucket, params={"provider": "ais"},
                        json={"action": "list", "value": v})
        assert r.status_code == 400, (v, r.text)
    # hoard's own listing shape without an action message (the hoard CLI)
    r = sdk.request("get", "buckets/" + bucket, params={"prefix": "b/"})
    assert [e["name"] for e in r.json()["entries"]] == ["b/x"]


def test_get_batch(cluster, sdk, bucket):
    objs = {"s/%d" % i: helpers.pattern_bytes(100 + i, i) for i in range(5)}
    for n, d in objs.items():
        put(sdk, bucket, n, d)
    tbuf = io.BytesIO()
    with tarfile.open(fileobj=tbuf, mode="w") as tf:
        ti = tarfile.TarInfo("m/one.txt")
        ti.size = 3
        tf.addfile(ti, io.BytesIO(b"one"))
    put(sdk, bucket, "shard.tar", tbuf.getvalue())
    # batch/batch.py get(): GET ml/moss/B ?provider=ais, stream, MossReq (batch/types.py):
    # {"in": [{"objname", "archpath"?}], "mime", "coer", "onob", "strm"}
    req = {"in": [{"objname": "s/3"}, {"objname": "s/0"}, {"objname": "missing"},
                  {"objname": "shard.tar", "archpath": "m/one.txt"}],
           "mime": ".tar", "coer": True, "onob": False, "strm": True}
    r = sdk.request("get", "ml/moss/" + bucket, params={"provider": "ais"}, json=req,
                    stream=True)
    assert r.status_code == 200, r.text
    with tarfile.open(fileobj=io.BytesIO(r.raw.read()), mode="r|") as tf:
        members = [(m.name, tf.extractfile(m).read()) for m in tf]
    # the streaming extractor pairs the i-th file with the i-th "in" entry
    assert [m[0] for m in members] == ["%s/s/3" % bucket, "%s/s/0" % bucket,
                                       "__404__/%s/missing" % bucket,
                                       "%s/shard.tar/m/one.txt" % bucket]
    assert members[0][1] == objs["s/3"] and members[1][1] == objs["s/0"]
    assert members[3][1] == b"one"
    # onob: object names only; bucket per entry
    req = {"in": [{"objname": "s/1", "bucket": bucket, "provider": "ais"}], "onob": True,
           "strm": True}
    r = sdk.request("get", "ml/moss", json=req)
    with tarfile.open(fileobj=io.BytesIO(r.content), mode="r|") as tf:
        assert [m.name for m in tf] == ["s/1"]
    # without coer a missing object fails the batch; zip and byte ranges are refused clearly
    req = {"in": [{"objname": "missing"}], "strm": True}
    assert sdk.request("get", "ml/moss/" + bucket, json=req).status_code == 404
    for extra in ({"mime": ".rar"}, {"in": [{"objname": "s/1", "start": 1, "length": 2}]}):
        req = dict({"in": [{"objname": "s/1"}], "strm": True}, **extra)
        r = sdk.request("get", "ml/moss/" + bucket, json=req)
        assert r.status_code == 501, r.text
    # a token is needed like everywhere else
    r = SdkClient(cluster.url).request("get", "ml/moss/" + bucket, json={"in": [{"objname": "s/1"}]})
    assert r.status_code == 403


def test_list_archive(cluster, sdk, bucket):
    # bucket.py list_archive(obj): list_all_objects(prefix=obj, flags=[ARCH_DIR]) and the
    # entries past the archive itself
    tbuf = io.BytesIO()
    with tarfile.open(fileobj=tbuf, mode="w") as tf:
        for n, d in (("x/1.jpg", b"11"), ("x/2.cls", b"222")):
            ti = tarfile.TarInfo(n)
            ti.size = len(d)
            tf.addfile(ti, io.BytesIO(d))
    put(sdk, bucket, "ds/shard-0.tar", tbuf.getvalue())
    put(sdk, bucket, "ds/shard-0.tar.idx", b"not a member")
    res = list_objects(sdk, bucket, prefix="ds/shard-0.tar", props="name,size",
                       flags=str(1 << 3))
    got = [(e["n"], e.get("s"), e["f"]) for e in res["Entries"]]
    assert got == [("ds/shard-0.tar", len(tbuf.getvalue()), 64),
                   ("ds/shard-0.tar/x/1.jpg", 2, 64 | 128),
                   ("ds/shard-0.tar/x/2.cls", 3, 64 | 128),
                   ("ds/shard-0.tar.idx", 12, 64)], got
    # without the flag: objects only
    res = list_objects(sdk, bucket, prefix="ds/", props="name")
    assert [e["n"] for e in res["Entries"]] == ["ds/shard-0.tar", "ds/shard-0.tar.idx"]


# ---- jobs (job.py, bucket.py, multiobj/object_group.py) ----

def action(act, value=None):
    # types.py ActionMsg(action, name="", value).dict()
    return {"action": act, "name": "", "value": value}


def job_status(sdk, job_id, kind=""):
    # job.py status(): GET cluster ?what=status, json JobArgs.as_dict() -> JobStatus
    r = sdk.request("get", "cluster", params={"what": "status"},
                    json={"ID": job_id, "Kind": kind, "DaemonID": "", "Bck": None,
                          "Buckets": None})
    assert r.status_code == 200, r.text
    st = r.json()
    # types.py JobStatus: uuid str, err str, end_time int (ns), aborted bool
    assert st["uuid"] == job_id and isinstance(st["err"], str)
    assert isinstance(st["end_time"], int) and isinstance(st["aborted"], bool)
    return st


def job_wait(sdk, job_id, kind="", timeout=120):
    """job.py wait(): status() until end_time != 0 (then err/aborted are logged, not raised)."""
    box = {}

    def done():
        box["st"] = job_status(sdk, job_id, kind)
        return box["st"]["end_time"] != 0
    helpers.wait_until(done, timeout=timeout, what="job %s to finish" % job_id)
    assert box["st"]["end_time"] > 10**18  # unix nanoseconds
    return box["st"]


def job_details(sdk, job_id):
    # job.py get_details(): GET cluster ?what=qryxstats -> AggregatedJobSnap
    # {node id: [JobSnap {id, kind, start-time, end-time, bck, stats {loc-objs, ...},
    #  aborted, is_idle, abort-err}]}
    r = sdk.request("get", "cluster", params={"what": "qryxstats"},
                    json={"ID": job_id, "Kind": "", "DaemonID": "", "Bck": None,
                          "Buckets": None})
    assert r.status_code == 200, r.text
    d = r.json()
    assert isinstance(d, dict) and d
    for node, snaps in d.items():
        assert isinstance(node, str) and isinstance(snaps, list)
        for sn in snaps:
            assert sn["id"] == job_id and isinstance(sn["kind"], str)
            for k in ("start-time", "end-time"):
                assert isinstance(sn[k], str) and sn[k].endswith("Z")
            assert isinstance(sn["bck"]["name"], str)
            assert all(isinstance(sn["stats"][k], int) for k in ("loc-objs", "loc-bytes"))
            assert isinstance(sn["aborted"], bool) and isinstance(sn["is_idle"], bool)
    return d


def cached_flags(sdk, bucket):
    v = {"prefix": "", "pagesize": 0, "uuid": "", "props": "name", "continuation_token": "",
         "flags": "0", "target": ""}
    r = sdk.request("get", "buckets/" + bucket, params={"provider": "aws"},
                    json=action("list", v))
    assert r.status_code == 200, r.text
    return {e["n"]: bool(e["f"] & (1 << 6)) for e in r.json()["Entries"]}


def test_prefetch_and_evict_jobs(cluster, sdk, s3rver):  # noqa: F811
    src = "aisup-" + uuid.uuid4().hex[:8]
    up = s3rver.client()
    up.create_bucket(Bucket=src)
    objs = {"o%d" % i: helpers.pattern_bytes(1000 + i, i) for i in range(4)}
    objs.update({"t-%d" % i: b"t%d" % i for i in range(3)})
    for k, v in objs.items():
        up.put_object(Bucket=src, Key=k, Body=v)
    # hoard's own create for an S3-backed bucket (the SDK cannot create remote buckets)
    r = sdk.request("post", "buckets/" + src, params={"provider": "aws"},
                    json={"upstream": {"endpoint": s3rver.url, "profile": "s3rver"}})
    assert r.status_code == 201, r.text
    assert not any(cached_flags(sdk, src).values())
    # object_group.py prefetch() with obj_names: POST buckets/B ?provider=aws,
    # ActionMsg prefetch-listrange, value PrefetchMsg {"objnames", "coer", "latest-ver"}
    r = sdk.request("post", "buckets/" + src, params={"provider": "aws"},
                    json=action("prefetch-listrange", {"objnames": ["o0", "o1"], "coer": False,
                                                       "latest-ver": False}))
    assert r.status_code == 200, r.text
    jid = r.text  # the job id as the body, what the SDK returns (.text)
    assert jid and "{" not in jid
    st = job_wait(sdk, jid, "prefetch-listrange")
    assert st["err"] == "" and not st["aborted"]
    d = job_details(sdk, jid)
    snaps = [sn for v in d.values() for sn in v]
    assert len(d) == 2 and all(sn["kind"] == "prefetch-listrange" for sn in snaps)
    assert all(sn["bck"] == {"name": src, "provider": "aws", "namespace": {"uuid": "", "name": ""}}
               for sn in snaps)
    assert sum(sn["stats"]["loc-objs"] for sn in snaps) == 2
    assert all(sn["end-time"] != "0001-01-01T00:00:00Z" for sn in snaps)
    c = cached_flags(sdk, src)
    assert {k for k, v in c.items() if v} == {"o0", "o1"}, c
    # with a template (ObjectRange / obj_template: "t-{0..2}") and with a prefix-only template
    r = sdk.request("post", "buckets/" + src, params={"provider": "aws"},
                    json=action("prefetch-listrange", {"template": "t-{0..2}", "coer": True,
                                                       "latest-ver": False}))
    assert r.status_code == 200, r.text
    job_wait(sdk, r.text)
    r = sdk.request("post", "buckets/" + src, params={"provider": "aws"},
                    json=action("prefetch-listrange", {"template": "o", "coer": True,
                                                       "latest-ver": False}))
    assert r.status_code == 200, r.text
    job_wait(sdk, r.text)
    assert all(cached_flags(sdk, src).values())
    # object_group.py evict(): DELETE buckets/B, ActionMsg evict-listrange, value {"objnames"}
    r = sdk.request("delete", "buckets/" + src, params={"provider": "aws"},
                    json=action("evict-listrange", {"objnames": ["o1", "t-0"]}))
    assert r.status_code == 200, r.text
    job_wait(sdk, r.text, "evict-listrange")
    c = cached_flags(sdk, src)
    assert {k for k, v in c.items() if not v} == {"o1", "t-0"}, c
    # bucket.py evict(keep_md): DELETE buckets/B ?provider=aws&keep_md=..., evict-remote-bck
    r = sdk.request("delete", "buckets/" + src, params={"provider": "aws", "keep_md": "True"},
                    json=action("evict-remote-bck"))
    assert r.status_code == 200, r.text
    job_wait(sdk, r.text)
    assert not any(cached_flags(sdk, src).values())
    # reads still come from the upstream (the bucket stays registered)
    r = sdk.request("get", "objects/%s/o2" % src, params={"provider": "aws"})
    assert r.status_code == 200 and r.content == objs["o2"]
    # bad selections: clear 400s; a native bucket cannot be prefetched; unknown job: 404
    for v in ({"objnames": "o1"}, {"objnames": ["o1"], "template": "t-{0..1}"},
              {"objnames": [""]}):
        r = sdk.request("post", "buckets/" + src, params={"provider": "aws"},
                        json=action("prefetch-listrange", v))
        assert r.status_code == 400, (v, r.text)
    nat = "ais-" + uuid.uuid4().hex[:10]
    assert sdk.request("post", "buckets/" + nat, params={"provider": "ais"},
                       json=action("create-bck")).status_code == 200
    r = sdk.request("post", "buckets/" + nat, params={"provider": "ais"},
                    json=action("prefetch-listrange", {"objnames": ["x"]}))
    assert r.status_code == 400 and "remote" in r.json()["message"], r.text
    sdk.request("delete", "buckets/" + nat, json=action("destroy-bck"))
    r = sdk.request("get", "cluster", params={"what": "status"}, json={"ID": "no-such-job"})
    assert r.status_code == 404, r.text
    r = sdk.request("get", "cluster", params={"what": "status"}, json={"Kind": "copy-bck"})
    assert r.status_code == 400, r.text


def test_get_latest_version(cluster, sdk, s3rver):  # noqa: F811
    src = "aislv-" + uuid.uuid4().hex[:8]
    up = s3rver.client()
    up.create_bucket(Bucket=src)
    up.put_object(Bucket=src, Key="k", Body=b"version-1")
    r = sdk.request("post", "buckets/" + src, params={"provider": "aws"},
                    json={"upstream": {"endpoint": s3rver.url, "profile": "s3rver"}})
    assert r.status_code == 201, r.text
    r = sdk.request("get", "objects/%s/k" % src, params={"provider": "aws"})
    assert r.status_code == 200 and r.content == b"version-1"  # cached now
    up.put_object(Bucket=src, Key="k", Body=b"version-2 longer")
    # a warm GET is served from the cache (validate_warm_get is off by default)
    r = sdk.request("get", "objects/%s/k" % src, params={"provider": "aws"})
    assert r.content == b"version-1"
    # obj/object.py get(latest=True) / get_reader(latest=True): GET ?provider=aws&latest-ver=true
    # checks the upstream's version first and fetches the new one
    r = sdk.request("get", "objects/%s/k" % src,
                    params={"provider": "aws", "latest-ver": "true"})
    assert r.status_code == 200 and r.content == b"version-2 longer"
    r = sdk.request("get", "objects/%s/k" % src, params={"provider": "aws"})
    assert r.content == b"version-2 longer"  # the cache holds the new version


def test_copy_bck_job(cluster, sdk, bucket):
    names = ["a/%d" % i for i in range(5)] + ["b/x"]
    for n in names:
        put(sdk, bucket, n, n.encode() * 100)
    dst = "ais-" + uuid.uuid4().hex[:10]
    # bucket.py copy(to_bck): POST buckets/SRC ?provider=ais&bck_to=ais/@#/DST/,
    # ActionMsg copy-bck, value CopyBckMsg.as_dict()
    value = {"prefix": "", "prepend": "", "dry_run": False, "force": False, "latest-ver": False,
             "synchronize": False}
    r = sdk.request("post", "buckets/" + bucket,
                    params={"provider": "ais", "bck_to": "ais/@#/%s/" % dst},
                    json=action("copy-bck", value))
    assert r.status_code == 200, r.text
    st = job_wait(sdk, r.text, "copy-bck")
    assert st["err"] == "" and not st["aborted"]
    try:
        got = [e["n"] for e in list_objects(sdk, dst)["Entries"]]
        assert got == sorted(names)
        r = sdk.request("get", "objects/%s/a/3" % dst, params={"provider": "ais"})
        assert r.content == b"a/3" * 100
        d = job_details(sdk, st["uuid"])
        assert {sn["kind"] for v in d.values() for sn in v} == {"copy-bck"}
        # a prefix copies only the names under it
        dst2 = "ais-" + uuid.uuid4().hex[:10]
        r = sdk.request("post", "buckets/" + bucket,
                        params={"provider": "ais", "bck_to": "ais/@#/%s/" % dst2},
                        json=action("copy-bck", dict(value, prefix="b/")))
        assert r.status_code == 200, r.text
        job_wait(sdk, r.text)
        assert [e["n"] for e in list_objects(sdk, dst2)["Entries"]] == ["b/x"]
        # bucket.py copy(prepend=...): every copy named PREPEND + name, the owner of that name
        # writes it (the test's names spread over both targets)
        r = sdk.request("post", "buckets/" + bucket,
                        params={"provider": "ais", "bck_to": "ais/@#/%s/" % dst2},
                        json=action("copy-bck", dict(value, prepend="p/")))
        assert r.status_code == 200, r.text
        job_wait(sdk, r.text)
        got = [e["n"] for e in list_objects(sdk, dst2)["Entries"]]
        assert got == sorted(["b/x"] + ["p/" + n for n in names]), got
        r = sdk.request("get", "objects/%s/p/a/3" % dst2, params={"provider": "ais"})
        assert r.content == b"a/3" * 100
        for o in ["b/x"] + ["p/" + n for n in names]:
            sdk.request("delete", "objects/%s/%s" % (dst2, o), params={"provider": "ais"})
        sdk.request("delete", "buckets/" + dst2, json=action("destroy-bck"))
        # malformed or unsupported: 400 / 501, nothing started
        for q, v, code in (("ais/@#/", value, 400), ("ais/@uuid#ns/x1x/", value, 400),
                           ("gcp/@#/x1x/", value, 400), ("ais/@#/" + bucket + "/", value, 400),
                           ("aws/@#/x1x/", value, 501),
                           ("ais/@#/x1x/", dict(value, prepend="p" * 1100), 400),
                           ("ais/@#/x1x/", dict(value, dry_run=True), 501)):
            r = sdk.request("post", "buckets/" + bucket, params={"provider": "ais", "bck_to": q},
                            json=action("copy-bck", v))
            assert r.status_code == code, (q, v, r.text)
        assert sdk.request("head", "buckets/x1x").status_code == 404
        r = sdk.request("post", "buckets/no-such-src",
                        params={"provider": "ais", "bck_to": "ais/@#/x1x/"},
                        json=action("copy-bck", value))
        assert r.status_code == 404, r.text
        # bucket.py rename(): move-bck is not done by hoard
        r = sdk.request("post", "buckets/" + bucket,
                        params={"provider": "ais", "bck_to": "ais/@#/x1x/"},
                        json=action("move-bck"))
        assert r.status_code == 501 and "copy-bck" in r.json()["message"], r.text
    finally:
        for n in names:
            sdk.request("delete", "objects/%s/%s" % (dst, n), params={"provider": "ais"})
        sdk.request("delete", "buckets/" + dst, json=action("destroy-bck"))


def test_copy_listrange_job(cluster, sdk, bucket, s3rver):  # noqa: F811
    names = ["a/%d" % i for i in range(5)] + ["b/x"]
    for n in names:
        put(sdk, bucket, n, n.encode() * 10)
    dsts = []

    def copy(selection, **over):
        # multiobj/object_group.py copy(to_bck, ...): POST buckets/SRC ?provider=ais,
        # ActionMsg copy-listrange, value TCMultiObj.as_dict(): the selection (ObjectNames
        # {"objnames"} / ObjectRange, ObjectTemplate {"template"}), CopyBckMsg's fields,
        # "tobck" BucketModel.as_dict() {"name","provider"}, "coer"
        dst = "ais-" + uuid.uuid4().hex[:10]
        dsts.append(dst)
        value = dict(selection, prefix="", prepend="", dry_run=False, force=False,
                     synchronize=False, tobck={"name": dst, "provider": "ais"}, coer=False)
        value["latest-ver"] = False
        value.update(over)
        r = sdk.request("post", "buckets/" + bucket, params={"provider": "ais"},
                        json=action("copy-listrange", value))
        return dst, r
    try:
        dst, r = copy({"objnames": ["a/1", "a/3", "b/x", "not-there"]})
        assert r.status_code == 200, r.text
        st = job_wait(sdk, r.text, "copy-listrange")
        assert st["kind"] == "copy-listrange" and st["err"] == "" and not st["aborted"]
        assert [e["n"] for e in list_objects(sdk, dst)["Entries"]] == ["a/1", "a/3", "b/x"]
        r = sdk.request("get", "objects/%s/a/3" % dst, params={"provider": "ais"})
        assert r.content == b"a/3" * 10
        # ObjectRange(prefix="a/", min_index=0, max_index=4, step=2) -> "a/{0..4..2}"
        dst, r = copy({"template": "a/{0..4..2}"})
        assert r.status_code == 200, r.text
        job_wait(sdk, r.text)
        assert [e["n"] for e in list_objects(sdk, dst)["Entries"]] == ["a/0", "a/2", "a/4"]
        # prepend: the copies are named PREPEND + name
        dst, r = copy({"objnames": ["a/1", "b/x"]}, prepend="backup/2026/")
        assert r.status_code == 200, r.text
        st = job_wait(sdk, r.text)
        assert st["err"] == "", st
        assert [e["n"] for e in list_objects(sdk, dst)["Entries"]] == ["backup/2026/a/1",
                                                                        "backup/2026/b/x"]
        r = sdk.request("get", "objects/%s/backup/2026/a/1" % dst, params={"provider": "ais"})
        assert r.content == b"a/1" * 10
        # a template without a range is a prefix (AIStore's rule)
        dst, r = copy({"template": "b/"})
        assert r.status_code == 200, r.text
        job_wait(sdk, r.text)
        assert [e["n"] for e in list_objects(sdk, dst)["Entries"]] == ["b/x"]
        # refused, nothing started
        for sel, over, code in (({"objnames": ["a/1"]}, {"tobck": {"name": "x1x",
                                                                    "provider": "aws"}}, 501),
                                ({"objnames": ["a/1"]}, {"dry_run": True}, 501),
                                ({"objnames": ["a/1"]}, {"prepend": "p" * 1100}, 400),
                                ({}, {}, 400),
                                ({"objnames": ["a/1"]}, {"tobck": {"name": bucket,
                                                                    "provider": "ais"}}, 400),
                                ({"objnames": ["a/1"]}, {"tobck": {"provider": "ais"}}, 400),
                                # a template that does not parse, one over 100000 names: refused
                                # here, not as a job that then fails on every target
                                ({"template": "a/{0..4"}, {}, 400),
                                ({"template": "a/{0..100000}"}, {}, 400)):
            _, r = copy(sel, **over)
            assert r.status_code == code, (sel, over, r.text)
        # into an existing S3-backed bucket named as "ais": 501 at once (the job cannot write
        # through), not a job id
        cloud = "aiscp-" + uuid.uuid4().hex[:8]
        s3rver.client().create_bucket(Bucket=cloud)
        r = sdk.request("post", "buckets/" + cloud, params={"provider": "aws"},
                        json={"upstream": {"endpoint": s3rver.url, "profile": "s3rver"}})
        assert r.status_code == 201, r.text
        _, r = copy({"objnames": ["a/1"]}, tobck={"name": cloud, "provider": "ais"})
        assert r.status_code == 501, r.text
    finally:
        for dst in dsts:
            ls = sdk.request("get", "buckets/" + dst, params={"provider": "ais"},
                             json=action("list", {"props": "name"}))
            if ls.status_code != 200:
                continue
            for e in ls.json()["Entries"]:
                sdk.request("delete", "objects/%s/%s" % (dst, e["n"]), params={"provider": "ais"})
            sdk.request("delete", "buckets/" + dst, json=action("destroy-bck"))


def test_delete_listrange_job(cluster, sdk, bucket, s3rver):  # noqa: F811
    names = ["a/%d" % i for i in range(5)] + ["b/x", "c"]
    for n in names:
        put(sdk, bucket, n, n.encode())

    def left():
        return [e["n"] for e in list_objects(sdk, bucket)["Entries"]]

    # multiobj/object_group.py delete(): DELETE buckets/B ?provider=ais, ActionMsg
    # delete-listrange, value the selection: ObjectNames {"objnames"}
    r = sdk.request("delete", "buckets/" + bucket, params={"provider": "ais"},
                    json=action("delete-listrange", {"objnames": ["a/1", "a/3", "not-there"]}))
    assert r.status_code == 200, r.text
    st = job_wait(sdk, r.text, "delete-listrange")
    assert st["kind"] == "delete-listrange" and st["err"] == "" and not st["aborted"]
    assert left() == ["a/0", "a/2", "a/4", "b/x", "c"]
    r = sdk.request("get", "objects/%s/a/1" % bucket, params={"provider": "ais"})
    assert r.status_code == 404
    # ObjectRange / ObjectTemplate {"template"}; a template without a range is a prefix
    for tmpl, rest in (("a/{0..4..2}", ["b/x", "c"]), ("b/", ["c"])):
        r = sdk.request("delete", "buckets/" + bucket, params={"provider": "ais"},
                        json=action("delete-listrange", {"template": tmpl}))
        assert r.status_code == 200, r.text
        job_wait(sdk, r.text)
        assert left() == rest
    # refused, nothing deleted: no selection, the whole bucket (""), a missing bucket, an
    # S3-backed bucket
    for b, value, code in ((bucket, {}, 400), (bucket, {"template": ""}, 400),
                           (bucket, {"template": "a/{0..4"}, 400),
                           (bucket, {"template": "a/{0..100000}"}, 400),
                           ("nope-" + uuid.uuid4().hex[:6], {"objnames": ["c"]}, 404)):
        r = sdk.request("delete", "buckets/" + b, params={"provider": "ais"},
                        json=action("delete-listrange", value))
        assert r.status_code == code, r.text
    assert left() == ["c"]
    src = "aisdl-" + uuid.uuid4().hex[:8]
    s3rver.client().create_bucket(Bucket=src)
    r = sdk.request("post", "buckets/" + src, params={"provider": "aws"},
                    json={"upstream": {"endpoint": s3rver.url, "profile": "s3rver"}})
    assert r.status_code == 201, r.text
    r = sdk.request("delete", "buckets/" + src, params={"provider": "aws"},
                    json=action("delete-listrange", {"objnames": ["x"]}))
    assert r.status_code == 501, r.text
    sdk.request("delete", "objects/%s/c" % bucket, params={"provider": "ais"})


def test_delete_listrange_needs_every_target_in_service(cluster, sdk, bucket):
    """A target the job would skip (down, in maintenance, leaving) would keep its copies, and
    they would come back when it rejoins: the proxy refuses (503) and deletes nothing."""
    put(sdk, bucket, "keep", b"k")
    smap = sdk.request("get", "daemon", params={"what": "smap"}).json()
    tid = sorted(smap["tmap"])[0]

    def maintenance(on):
        url = "%s/v1/cluster/maintenance/%s" % (cluster.url, tid)
        body = json.dumps({"on": on}).encode()
        h = helpers.sign_headers("POST", url, ACCESS_KEY, SECRET_KEY,
                                 headers={"Content-Type": "application/json"},
                                 payload=hashlib.sha256(body).hexdigest())
        r = requests.post(url, data=body, headers=h, timeout=30)
        assert r.status_code == 200, r.text

    def flags():
        m = sdk.request("get", "daemon", params={"what": "smap"}).json()
        return m["tmap"][tid]["flags"]

    maintenance(True)
    try:
        helpers.wait_until(lambda: flags() != 0, timeout=30, what="the maintenance flag")
        r = sdk.request("delete", "buckets/" + bucket, params={"provider": "ais"},
                        json=action("delete-listrange", {"objnames": ["keep"]}))
        assert r.status_code == 503 and "every target" in r.text, r.text
    finally:
        maintenance(False)
        helpers.wait_until(lambda: flags() == 0, timeout=30, what="the flag cleared")
    helpers.wait_until(lambda: sdk.request("get", "objects/%s/keep" % bucket,
                                           params={"provider": "ais"}).status_code == 200,
                       timeout=60, what="keep readable after the rebalance back")


def test_list_jobs(cluster, sdk, bucket):
    put(sdk, bucket, "j1", b"j" * 50)
    dst = "ais-" + uuid.uuid4().hex[:10]
    r = sdk.request("post", "buckets/" + bucket,
                    params={"provider": "ais", "bck_to": "ais/@#/%s/" % dst},
                    json=action("copy-bck", {"prefix": "", "prepend": "", "dry_run": False,
                                             "force": False, "latest-ver": False,
                                             "synchronize": False}))
    assert r.status_code == 200, r.text
    job_id = r.text
    try:
        job_wait(sdk, job_id, "copy-bck")

        # cluster.py list_jobs_status(job_kind, target_id): GET cluster ?what=status_all,
        # json JobQuery(kind, target).as_dict() {"kind","node","show_active"}
        # -> Optional[List[JobStatus]]
        def jobs_status(kind="", active=False):
            r = sdk.request("get", "cluster", params={"what": "status_all"},
                            json={"kind": kind, "node": "", "show_active": active})
            assert r.status_code == 200, r.text
            out = r.json()
            assert isinstance(out, list)
            for st in out:
                assert isinstance(st["uuid"], str) and isinstance(st["err"], str)
                assert isinstance(st["end_time"], int) and isinstance(st["aborted"], bool)
            return {st["uuid"]: st for st in out}
        mine = jobs_status()[job_id]
        assert mine["kind"] == "copy-bck" and mine["end_time"] > 10**18
        assert job_id in jobs_status("copy-bck")
        assert job_id not in jobs_status("prefetch-listrange")
        assert job_id not in jobs_status(active=True)  # finished
        # cluster.py list_running_jobs(job_kind, target_id): GET cluster ?what=running_all,
        # JobQuery(..., active=True) -> List[str] ("KIND[ID]")
        r = sdk.request("get", "cluster", params={"what": "running_all"},
                        json={"kind": "copy-bck", "node": "", "show_active": True})
        assert r.status_code == 200, r.text
        running = r.json()
        assert isinstance(running, list) and all(isinstance(x, str) for x in running)
        assert "copy-bck[%s]" % job_id not in running
        r = sdk.request("get", "cluster", params={"what": "status_all"}, json={"kind": 5})
        assert r.status_code == 400
    finally:
        sdk.request("delete", "objects/%s/j1" % dst, params={"provider": "ais"})
        sdk.request("delete", "buckets/" + dst, json=action("destroy-bck"))


def test_summary_bck(cluster, sdk, bucket):
    sizes = [100, 2000, 30000]
    for i, n in enumerate(sizes):
        put(sdk, bucket, "s%d" % i, b"x" * n)
    # bucket.py summary(): GET buckets/B with ActionMsg summary-bck, value BsummCtrlMsg
    # {uuid, prefix, cached, present}: 202 and the job id, then the same with that uuid
    # until 200 with a JSON list whose [0] is the summary
    msg = {"uuid": "", "prefix": "", "cached": True, "present": True}
    r = sdk.request("get", "buckets/" + bucket, params={"provider": "ais"},
                    json=action("summary-bck", msg))
    assert r.status_code == 202, r.text
    msg["uuid"] = r.text.strip('"')
    assert msg["uuid"]
    r = sdk.request("get", "buckets/" + bucket, params={"provider": "ais"},
                    json=action("summary-bck", msg))
    assert r.status_code == 200, r.text
    s = json.loads(r.content.decode("utf-8"))[0]
    assert s["name"] == bucket and s["provider"] == "ais"
    assert s["obj_count_present"] == "3" and s["size_all_present_objs"] == str(sum(sizes))
    assert s["obj_avg_size"] == sum(sizes) // 3
    r = sdk.request("get", "buckets/" + bucket, params={"provider": "ais"},
                    json=action("summary-bck", dict(msg, prefix="s1")))
    assert r.status_code == 501, r.text
    r = sdk.request("get", "buckets/nope-" + uuid.uuid4().hex[:6], params={"provider": "ais"},
                    json=action("summary-bck", msg))
    assert r.status_code == 404, r.text


def test_bucket_head_and_info(cluster, sdk, bucket):
    sizes = [10, 200, 3000]
    for i, n in enumerate(sizes):
        put(sdk, bucket, "i%d" % i, b"y" * n)
    # bucket.py head(): HEAD buckets/B ?provider=ais, returns the headers (AIStore sets
    # ais-bucket-props, BucketProps as JSON)
    r = sdk.request("head", "buckets/" + bucket, params={"provider": "ais"})
    assert r.status_code == 200
    props = json.loads(r.headers["ais-bucket-props"])
    assert props["provider"] == "ais" and props["checksum"]["type"] == "md5"
    assert isinstance(props["created"], int) and props["created"] > 0
    # bucket.py info(flt_presence=FLT_EXISTS, bsumm_remote=True): HEAD buckets/B
    # ?provider=ais&presence=0&bsumm_remote=True -> 202 with ais-bucket-props and
    # ais-xaction-id; then the same plus uuid=ID until 200, ais-bucket-summ (BsummResult JSON)
    params = {"provider": "ais", "presence": 0, "bsumm_remote": True}
    r = sdk.request("head", "buckets/" + bucket, params=params)
    assert r.status_code == 202, r.headers
    assert json.loads(r.headers.get("ais-bucket-props", "{}"))["provider"] == "ais"
    params["uuid"] = r.headers.get("ais-xaction-id", "").strip('"')
    assert params["uuid"]
    r = sdk.request("head", "buckets/" + bucket, params=params)
    assert r.status_code == 200, r.headers
    summ = json.loads(r.headers.get("ais-bucket-summ", ""))
    assert summ["name"] == bucket and summ["provider"] == "ais"
    assert summ["obj_count_present"] == "3"
    assert summ["size_all_present_objs"] == str(sum(sizes))
    # aistore 1.4.0 bucket.py info(flt_presence, count_remote_objs): one HEAD ?presence=N,
    # json.loads of both headers
    r = sdk.request("head", "buckets/" + bucket, params={"provider": "ais", "presence": 2})
    assert r.status_code in (200, 202)
    assert json.loads(r.headers["ais-bucket-summ"])["obj_count_present"] == "3"
    # FLT_EXISTS_NO_PROPS (1): props, no summary
    r = sdk.request("head", "buckets/" + bucket, params={"provider": "ais", "presence": 1})
    assert r.status_code == 200 and "ais-bucket-summ" not in r.headers
    assert "ais-bucket-props" in r.headers
    # bad presence, prefix (HEAD buckets/B/PREFIX), missing bucket
    r = sdk.request("head", "buckets/" + bucket, params={"provider": "ais", "presence": 9})
    assert r.status_code == 400
    r = sdk.request("head", "buckets/%s/i1" % bucket, params=params)
    assert r.status_code == 501
    r = sdk.request("head", "buckets/nope-" + uuid.uuid4().hex[:6], params=params)
    assert r.status_code == 404


def test_archpath_with_an_empty_archregx(cluster, sdk, bucket):
    """ArchiveConfig(archpath=P) sends an empty archregx: one member, as before."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for n, d in (("a.txt", b"AAA"), ("b.jpg", b"BBBB")):
            ti = tarfile.TarInfo(n)
            ti.size = len(d)
            t.addfile(ti, io.BytesIO(d))
    put(sdk, bucket, "s.tar", buf.getvalue())
    r = sdk.request("get", "objects/%s/s.tar" % bucket,
                    params={"provider": "ais", "archpath": "a.txt", "archregx": ""})
    assert r.status_code == 200 and r.content == b"AAA"


def obj_copy(client, bucket, name, to_uname, **extra):
    # obj/object.py copy(to_obj, etl, latest, sync): PUT objects/B/O with the bucket's
    # qparams plus object_to = to_obj.uname (Bucket.get_path() + name, "ais/@#/B/O"),
    # latest-ver and synchronize "true"/"false"; no body
    params = {"provider": "ais", "object_to": to_uname, "latest-ver": "false",
              "synchronize": "false"}
    params.update(extra)
    return client.request("put", "objects/%s/%s" % (bucket, name), params=params)


def test_object_copy(cluster, sdk, bucket):
    """Object.copy(): the destination's owner copies the object (content, metadata) from
    wherever the source is held; the source stays as it was."""
    data = helpers.pattern_bytes(70000, 11)
    r = sdk.request("put", "objects/%s/src/a b.bin" % bucket, params={"provider": "ais"},
                    data=data, headers={"x-amz-meta-label": "cat"})
    assert r.status_code == 200, r.text
    dst = bucket + "-cp"
    assert sdk.request("post", "buckets/" + dst, params={"provider": "ais"},
                       json=action("create-bck")).status_code == 200
    try:
        for tb, tn in ((bucket, "copies/one"), (dst, "x/y z.bin")):
            r = obj_copy(sdk, bucket, "src/a b.bin", "ais/@#/%s/%s" % (tb, tn))
            assert r.status_code == 200, r.text
            r = sdk.request("get", "objects/%s/%s" % (tb, tn), params={"provider": "ais"})
            assert r.status_code == 200 and r.content == data, r.text
            assert r.headers["ais-checksum-value"] == helpers.md5_hex(data)
            assert r.headers["ais-custom-md"] == "label=cat"
        r = sdk.request("get", "objects/%s/src/a b.bin" % bucket, params={"provider": "ais"})
        assert r.content == data
        # a missing source: 404, nothing created
        r = obj_copy(sdk, bucket, "nope", "ais/@#/%s/never" % dst)
        assert r.status_code == 404, r.text
        assert sdk.request("head", "objects/%s/never" % dst,
                           params={"provider": "ais"}).status_code == 404
        # malformed or unsupported destinations and options: 400 / 501, nothing written
        for to, extra, code in (("ais/@#/%s" % dst, {}, 400),
                                ("ais/@ns#x/%s/o" % dst, {}, 400),
                                ("ais/@#/Bad_Name!/o", {}, 400),
                                ("gcp/@#/%s/o" % dst, {}, 400),
                                ("ais/@#/%s/o" % dst, {"latest-ver": "true"}, 501),
                                ("ais/@#/%s/o" % dst, {"synchronize": "true"}, 501),
                                ("ais/@#/%s/o" % dst, {"etl_name": "e"}, 501)):
            r = obj_copy(sdk, bucket, "src/a b.bin", to, **extra)
            assert r.status_code == code, (to, extra, r.text)
            assert "message" in r.json()
        assert sdk.request("head", "objects/%s/o" % dst,
                           params={"provider": "ais"}).status_code == 404
        # no token: refused before anything happens
        r = obj_copy(SdkClient(cluster.url), bucket, "src/a b.bin", "ais/@#/%s/anon" % dst)
        assert r.status_code == 403, r.text
        sdk.request("delete", "objects/%s/x/y z.bin" % dst, params={"provider": "ais"})
    finally:
        sdk.request("delete", "buckets/" + dst, json=action("destroy-bck"))


def test_object_copy_from_s3_backed_bucket(cluster, sdk, bucket, s3rver):  # noqa: F811
    """Object.copy() from an S3-backed bucket (client.bucket(B, provider="aws")) into an ais
    bucket: a source not cached yet is fetched from the upstream by its owner."""
    src = "aiscp-" + uuid.uuid4().hex[:8]
    up = s3rver.client()
    up.create_bucket(Bucket=src)
    data = helpers.pattern_bytes(200000, 5)
    up.put_object(Bucket=src, Key="d/x.bin", Body=data)
    r = sdk.request("post", "buckets/" + src, params={"provider": "aws"},
                    json={"upstream": {"endpoint": s3rver.url, "profile": "s3rver"}})
    assert r.status_code == 201, r.text
    try:
        assert not any(cached_flags(sdk, src).values())
        r = sdk.request("put", "objects/%s/d/x.bin" % src,
                        params={"provider": "aws", "object_to": "ais/@#/%s/from-s3" % bucket,
                                "latest-ver": "false", "synchronize": "false"})
        assert r.status_code == 200, r.text
        r = sdk.request("get", "objects/%s/from-s3" % bucket, params={"provider": "ais"})
        assert r.status_code == 200 and r.content == data
        r = sdk.request("put", "objects/%s/gone" % src,
                        params={"provider": "aws", "object_to": "ais/@#/%s/g" % bucket})
        assert r.status_code == 404, r.text
    finally:
        sdk.request("delete", "objects/%s/from-s3" % bucket, params={"provider": "ais"})
        sdk.request("delete", "buckets/" + src, params={"provider": "aws"},
                    json=action("destroy-bck"))


def test_object_copy_redirect_binds_the_source(cluster, sdk, bucket):
    """The 307 of a copy names the source in its query (object_from) and the proxy's
    signature covers it: a client cannot swap the source for one the proxy never authorised,
    add x-amz-copy-source, or turn a plain PUT's redirect into a copy. Permissions: read on
    the source, write on the destination."""
    put(sdk, bucket, "s", b"source")
    put(sdk, bucket, "other", b"secret")
    r = obj_copy(sdk, bucket, "s", "ais/@#/%s/d" % bucket, )
    assert r.status_code == 200
    params = {"provider": "ais", "object_to": "ais/@#/%s/d2" % bucket, "latest-ver": "false",
              "synchronize": "false"}
    r = sdk.request("put", "objects/%s/s" % bucket, params=params, allow_redirects=False)
    assert r.status_code == 307, r.text
    loc = r.headers["Location"]
    assert "/v1/objects/%s/d2?" % bucket in loc and "object_from=" in loc
    swapped = loc.replace("object_from=%2F" + bucket + "%2Fs", "object_from=%2F" + bucket +
                          "%2Fother")
    assert swapped != loc
    r = requests.put(swapped, timeout=30)
    assert r.status_code == 403, r.text
    r = requests.put(loc, headers={"x-amz-copy-source": "/%s/s" % bucket}, timeout=30)
    assert r.status_code == 403, r.text
    r = sdk.request("put", "objects/%s/d3" % bucket, params={"provider": "ais"}, data=b"",
                    allow_redirects=False)
    plain = r.headers["Location"]
    r = requests.put(plain + "&object_from=%2F" + bucket + "%2Fother", timeout=30)
    assert r.status_code == 403, r.text
    for n in ("d2", "d3"):
        assert sdk.request("head", "objects/%s/%s" % (bucket, n),
                           params={"provider": "ais"}).status_code == 404
    r = requests.put(loc, timeout=30)  # the redirect as it was: served
    assert r.status_code == 200, r.text
    assert sdk.request("get", "objects/%s/d2" % bucket,
                       params={"provider": "ais"}).content == b"source"
    # a client straight to a target cannot name a source at all
    base = loc.split("/v1/")[0]
    r = requests.put(base + "/v1/objects/%s/d4?object_from=%%2F%s%%2Fother" % (bucket, bucket),
                     headers={"Authorization": "Bearer " + sdk.token}, timeout=30)
    assert r.status_code == 403, r.text
    # AKMIX: rw on PERM_BUCKETS["rw"], ro on PERM_BUCKETS["ro"], nothing on the others
    rw, ro = PERM_BUCKETS["rw"], PERM_BUCKETS["ro"]
    for b in (rw, ro):
        sdk.request("post", "buckets/" + b, params={"provider": "ais"}, json=action("create-bck"))
    try:
        put(sdk, ro, "k", b"readable")
        mix = SdkClient(cluster.url)
        mix.token = mix.request("post", "users/AKMIX",
                                json={"password": "secretMIX"}).json()["token"]
        r = obj_copy(mix, ro, "k", "ais/@#/%s/k" % rw)  # read ro, write rw: allowed
        assert r.status_code == 200, r.text
        r = obj_copy(mix, rw, "k", "ais/@#/%s/k2" % ro)  # write to ro: refused
        assert r.status_code == 403, r.text
        r = obj_copy(mix, bucket, "other", "ais/@#/%s/stolen" % rw)  # read a bucket it lacks
        assert r.status_code == 403, r.text
        assert sdk.request("head", "objects/%s/stolen" % rw,
                           params={"provider": "ais"}).status_code == 404
        assert sdk.request("get", "objects/%s/k" % rw,
                           params={"provider": "ais"}).content == b"readable"
    finally:
        for b, k in ((rw, "k"), (ro, "k")):
            sdk.request("delete", "objects/%s/%s" % (b, k), params={"provider": "ais"})
            sdk.request("delete", "buckets/" + b, json=action("destroy-bck"))


def mpt(client, bucket, name, method, params=None, body=None, data=None):
    # obj/multipart_upload.py: every call on objects/B/O with the bucket's qparams
    q = {"provider": "ais"}
    q.update(params or {})
    path = "objects/%s/%s" % (bucket, name)
    return client.request(method, path, params=q, json=body, data=data)


def test_native_complete_answers_its_outcome(tmp_path_factory, log_dir):
    """A native mpt-complete past s3.complete_keepalive is not the S3 keep-alive answer (a 200
    sent before the outcome, then spaces and an XML document): the SDK reads the status."""
    nodes, ep = start_cluster(tmp_path_factory, log_dir, "aiska-", 1, (), KEEPALIVE_ARGS)
    try:
        c = SdkClient(ep.url)
        c.token = c.request("post", "users/" + ACCESS_KEY,
                            json={"password": SECRET_KEY}).json()["token"]
        assert c.request("post", "buckets/kab", params={"provider": "ais"},
                         json=action("create-bck")).status_code == 200
        uid = mpt(c, "kab", "big", "post", body=action("mpt-upload")).text
        parts = [helpers.pattern_bytes(5 << 20, i) for i in range(3)] + [b"tail" * 300000]
        assert sum(map(len, parts)) >= COMPLETE_KEEPALIVE
        for n, d in enumerate(parts, 1):
            assert mpt(c, "kab", "big", "put", {"uploadId": uid, "partNumber": n},
                       data=d).status_code == 200
        r = mpt(c, "kab", "big", "post", {"uploadId": uid},
                action("mpt-complete", [{"part-number": n, "etag": ""}
                                        for n in range(1, len(parts) + 1)]))
        assert r.status_code == 200 and r.content == b"", r.content[:200]
        r = c.request("get", "objects/kab/big", params={"provider": "ais"})
        assert r.status_code == 200 and r.content == b"".join(parts)
    finally:
        _stop_nodes(nodes)


def test_list_objects_other_props_are_left_out(cluster, sdk, bucket):
    """props the listing has no value for (target_url, location, custom, ec, status) are
    accepted; their fields are absent (BucketEntry's defaults), the known ones are there."""
    put(sdk, bucket, "p1", b"abc")
    r = sdk.request("get", "buckets/" + bucket, params={"provider": "ais"},
                    json=action("list", {"prefix": "", "pagesize": 0, "uuid": "",
                                         "props": "name,size,target_url,location,custom,ec,status",
                                         "continuation_token": "", "flags": "0", "target": ""}))
    assert r.status_code == 200, r.text
    e = [x for x in r.json()["Entries"] if x["n"] == "p1"][0]
    assert e["s"] == 3 and set(e) <= {"n", "s", "f"}, e


def test_native_multipart_upload(cluster, sdk, bucket):
    """Object.multipart_upload(): create() POST {"action":"mpt-upload"} -> the upload id as
    text; add_part(N) -> ObjectWriter PUT ?uploadId=U&partNumber=N; complete() POST
    ?uploadId=U {"action":"mpt-complete","value":[{"part-number":N,"etag":""}..]}; abort()
    DELETE ?uploadId=U {"action":"mpt-abort"}. Until completed the object stays as it was."""
    put(sdk, bucket, "ckpt", b"old")
    r = mpt(sdk, bucket, "ckpt", "post", body=action("mpt-upload"))
    assert r.status_code == 200, r.text
    uid = r.text
    assert uid and "{" not in uid and "<" not in uid
    p1, p2 = helpers.pattern_bytes(5 * 1024 * 1024, 1), helpers.pattern_bytes(12345, 2)
    # parts added out of order; complete() lists them in the order they were added
    for n, d in ((2, p2), (1, p1)):
        r = mpt(sdk, bucket, "ckpt", "put", {"uploadId": uid, "partNumber": n}, data=d)
        assert r.status_code == 200, r.text
    assert sdk.request("get", "objects/%s/ckpt" % bucket,
                       params={"provider": "ais"}).content == b"old"
    # a part that was never uploaded: 400, nothing written
    r = mpt(sdk, bucket, "ckpt", "post", {"uploadId": uid},
            action("mpt-complete", [{"part-number": 2, "etag": ""},
                                    {"part-number": 3, "etag": ""}]))
    assert r.status_code == 400, r.text
    r = mpt(sdk, bucket, "ckpt", "post", {"uploadId": uid}, action("mpt-abort"))
    assert r.status_code == 400, r.text  # not the completion message
    r = mpt(sdk, bucket, "ckpt", "post", {"uploadId": uid},
            action("mpt-complete", [{"part-number": 2, "etag": ""},
                                    {"part-number": 1, "etag": ""}]))
    assert r.status_code == 200, r.text
    r = sdk.request("get", "objects/%s/ckpt" % bucket, params={"provider": "ais"})
    assert r.status_code == 200 and r.content == p1 + p2
    assert int(r.headers["Content-Length"]) == len(p1) + len(p2)
    # abort(): the upload is gone, the object untouched
    uid2 = mpt(sdk, bucket, "ckpt", "post", body=action("mpt-upload")).text
    assert mpt(sdk, bucket, "ckpt", "put", {"uploadId": uid2, "partNumber": 1},
               data=b"zzz").status_code == 200
    r = mpt(sdk, bucket, "ckpt", "delete", {"uploadId": uid2}, action("mpt-abort"))
    assert r.status_code in (200, 204), r.text
    r = mpt(sdk, bucket, "ckpt", "post", {"uploadId": uid2},
            action("mpt-complete", [{"part-number": 1, "etag": ""}]))
    assert r.status_code == 404, r.text
    assert sdk.request("get", "objects/%s/ckpt" % bucket,
                       params={"provider": "ais"}).content == p1 + p2
    # other POST actions on an object, and no message at all: refused, nothing created
    r = mpt(sdk, bucket, "new", "post", body={"action": "rename-obj", "name": "x",
                                              "value": None})
    assert r.status_code == 501, r.text
    assert mpt(sdk, bucket, "new", "post").status_code == 400
    # a part for an upload that does not exist: 404, the object is not replaced
    r = mpt(sdk, bucket, "ckpt", "put", {"uploadId": "0" * 32, "partNumber": 1}, data=b"p")
    assert r.status_code == 404, r.text
    # a read-only key may not start one
    ro = SdkClient(cluster.url)
    ro.token = ro.request("post", "users/AKRO", json={"password": "secretRO"}).json()["token"]
    assert mpt(ro, bucket, "ro", "post", body=action("mpt-upload")).status_code == 403


def test_missing_bucket_errors_parse_as_sdk_exceptions(cluster, sdk):
    """utils.py raise_ais_error(): a 4xx HttpError {"status","message"} whose message has
    "does not exist" and "bucket" is ErrBckNotFound, which Bucket.delete(missing_ok=True)
    swallows; anything else is a plain AISError."""
    name = "nope-" + uuid.uuid4().hex[:8]
    for method, path, body in (
            ("delete", "buckets/" + name, action("destroy-bck")),  # bucket.py delete()
            ("get", "buckets/" + name, action("list", {"prefix": "", "pagesize": 0, "uuid": "",
                                                       "props": "", "continuation_token": "",
                                                       "flags": "0", "target": ""})),
            ("get", "buckets/" + name, action("summary-bck", {"uuid": "", "prefix": "",
                                                              "cached": True,
                                                              "present": True})),
            ("get", "objects/%s/o" % name, None)):
        r = sdk.request(method, path, params={"provider": "ais"}, json=body)
        assert r.status_code == 404, (method, path, r.text)
        err = json.loads(r.text)
        assert err["status"] == 404 and isinstance(err["message"], str)
        assert "does not exist" in err["message"] and "bucket" in err["message"], err


def test_job_actions_need_a_good_token(cluster, sdk, bucket):
    """Every new action and query refuses requests without a token (403), with a forged,
    tampered or expired one (401; before the body is read), and a key without the
    permission (403)."""
    put(sdk, bucket, "k", b"v")
    r = sdk.request("post", "buckets/" + bucket,
                    params={"provider": "ais", "bck_to": "ais/@#/%sc/" % bucket},
                    json=action("copy-bck", {}))
    assert r.status_code == 200, r.text
    jid = r.text
    job_wait(sdk, jid)
    tokens = bad_tokens(sdk)
    calls = [
        ("post", "buckets/" + bucket, {"provider": "ais", "bck_to": "ais/@#/zz-never/"},
         action("copy-bck", {})),
        ("post", "buckets/" + bucket, {"provider": "aws"},
         action("prefetch-listrange", {"objnames": ["k"]})),
        ("delete", "buckets/" + bucket, {"provider": "aws"},
         action("evict-listrange", {"objnames": ["k"]})),
        ("delete", "buckets/" + bucket, {"provider": "aws"}, action("evict-remote-bck")),
        ("get", "buckets/" + bucket, {"provider": "ais"},
         action("summary-bck", {"uuid": "", "prefix": "", "cached": True, "present": True})),
        ("get", "cluster", {"what": "status"}, {"ID": jid}),
        ("get", "cluster", {"what": "qryxstats"}, {"ID": jid}),
        ("post", "buckets/" + bucket, {"provider": "ais"},
         action("copy-listrange", {"objnames": ["k"], "tobck": {"name": "zz-never",
                                                                "provider": "ais"}})),
        ("delete", "buckets/" + bucket, {"provider": "ais"},
         action("delete-listrange", {"objnames": ["k"]})),
        ("get", "cluster", {"what": "status_all"}, {"kind": "", "node": "", "show_active": False}),
        ("get", "cluster", {"what": "running_all"}, {"kind": "", "node": "", "show_active": True}),
        ("head", "buckets/" + bucket, {"provider": "ais", "presence": 0}, None),
    ]
    for name, t in tokens.items():
        c = SdkClient(cluster.url, t)
        for method, path, params, body in calls:
            r = c.request(method, path, params=params, json=body)
            assert r.status_code == (403 if t is None else 401), (name, method, path, body,
                                                                  r.status_code, r.text)
            assert jid not in r.text
    # the read-only key: may ask for status and summaries, not start jobs
    ro = SdkClient(cluster.url)
    ro.token = ro.request("post", "users/AKRO", json={"password": "secretRO"}).json()["token"]
    for method, path, params, body in calls:
        r = ro.request(method, path, params=params, json=body)
        assert r.status_code == (202 if "summary-bck" in str(body) or method == "head" else
                                 200 if path == "cluster" else 403), (method, body, r.text)
    assert sdk.request("head", "objects/%s/k" % bucket,
                       params={"provider": "ais"}).status_code == 200  # not deleted
    # AKMIX may write PERM_BUCKETS["rw"] and read PERM_BUCKETS["ro"]: copying rw -> ro is
    # refused for the destination, and nothing is created
    for b in (PERM_BUCKETS["rw"], PERM_BUCKETS["ro"]):
        sdk.request("post", "buckets/" + b, params={"provider": "ais"},
                    json=action("create-bck"))
    mix = SdkClient(cluster.url)
    mix.token = mix.request("post", "users/AKMIX",
                            json={"password": "secretMIX"}).json()["token"]
    r = mix.request("post", "buckets/" + PERM_BUCKETS["rw"],
                    params={"provider": "ais", "bck_to": "ais/@#/%s/" % PERM_BUCKETS["ro"]},
                    json=action("copy-bck", {}))
    assert r.status_code == 403, r.text
    r = mix.request("post", "buckets/" + PERM_BUCKETS["rw"],
                    params={"provider": "ais", "bck_to": "ais/@#/zz-mix-new/"},
                    json=action("copy-bck", {}))
    assert r.status_code == 403, r.text
    assert sdk.request("head", "buckets/zz-mix-new").status_code == 404
    sdk.request("delete", "objects/%s/k" % (bucket + "c"), params={"provider": "ais"})
    sdk.request("delete", "buckets/" + bucket + "c", json=action("destroy-bck"))
    for b in (PERM_BUCKETS["rw"], PERM_BUCKETS["ro"]):
        sdk.request("delete", "buckets/" + b, json=action("destroy-bck"))


# ---- targets verify bearer tokens too ----

def test_redirected_token_is_checked_by_the_target(cluster, sdk, bucket):
    """A client that keeps Authorization: Bearer when it follows the proxy's 307 (curl
    --location-trusted, clients that keep headers across ports) is served by the target when
    the token is good, refused with 401 when it is not; without the header the proxy's
    signature in the redirect is enough (what `requests`, and so the SDK, does)."""
    data = helpers.pattern_bytes(5000, 3)
    put(sdk, bucket, "t/obj", data)
    now = int(time.time())
    bad = {
        "tampered": sdk.token[:-4] + ("AAAA" if not sdk.token.endswith("AAAA") else "BBBB"),
        "expired": forge_token(CLUSTER_SECRET, {"username": ACCESS_KEY, "iat": now - 7200,
                                                "exp": now - 3600}),
        "forged": forge_token("another-secret", {"username": ACCESS_KEY, "iat": now,
                                                 "exp": now + 600}),
        "garbage": "x.y.z",
    }

    def location(method, path, **kw):
        r = sdk.request(method, path, params={"provider": "ais"}, allow_redirects=False, **kw)
        assert r.status_code == 307, r.text
        loc = r.headers["Location"]
        assert not loc.startswith(cluster.url)  # a target
        return loc

    hdr = {"Authorization": "Bearer " + sdk.token, "User-Agent": SDK_UA}
    # GET and HEAD: good token kept -> served; bad token -> 401 from the target; none -> served
    loc = location("get", "objects/%s/t/obj" % bucket)
    r = requests.get(loc, headers=hdr, timeout=30)
    assert r.status_code == 200 and r.content == data, r.text
    for name, t in bad.items():
        r = requests.get(loc, headers={"Authorization": "Bearer " + t}, timeout=30)
        assert r.status_code == 401, (name, r.status_code, r.text)
        assert r.headers["WWW-Authenticate"].startswith('Bearer error="invalid_token"')
        assert r.content != data
    assert requests.get(loc, timeout=30).content == data
    # PUT through the redirect: good token writes, bad token writes nothing
    loc = location("put", "objects/%s/t/new" % bucket, data=b"first")
    r = requests.put(loc, headers=hdr, data=b"first", timeout=30)
    assert r.status_code == 200, r.text
    loc = location("put", "objects/%s/t/new" % bucket, data=b"second")
    r = requests.put(loc, headers={"Authorization": "Bearer " + bad["expired"]}, data=b"second",
                     timeout=30)
    assert r.status_code == 401, r.text
    assert sdk.request("get", "objects/%s/t/new" % bucket,
                       params={"provider": "ais"}).content == b"first"
    # the target without a proxy's signature: refused whatever the token
    # (clients go through a proxy, docs/aistore-compat.md)
    base = loc.split("/v1/")[0]
    r = requests.get(base + "/v1/objects/%s/t/obj" % bucket, headers=hdr, timeout=30)
    assert r.status_code == 403, r.text


def sdk_multipart_parts(r):
    """What batch/multipart/multipart_decoder.py does (non-streaming): boundary from the
    Content-Type, content split on "--" + boundary, each part split at the first blank line
    into headers and body (the body keeps the CRLF before the next delimiter)."""
    import re
    ct = r.headers["Content-Type"]
    assert "multipart" in ct.lower()
    boundary = re.search(r"boundary=([^;]+)", ct, re.IGNORECASE).group(1).strip("\"'")
    parts = []
    for part in r.content.split(b"--" + boundary.encode())[1:]:
        if not part.strip() or part.strip() == b"--":
            continue
        headers, body = part.split(b"\r\n\r\n", 1)
        parts.append((headers, body))
    return parts


def test_get_batch_compressed(cluster, sdk, bucket):
    """GetBatch with mime ".tgz" (or ".tar.gz"), ".tar.lz4", ".tar.zst" or ".zip": the same
    members, in order, compressed (streaming) or as the multipart answer's archive part; a
    shard member among them; an unknown mime (".tar.xz", ".rar") is 501."""
    objs = {"g/%d" % i: helpers.pattern_bytes(20000 + i, i) for i in range(4)}
    for n, d in objs.items():
        put(sdk, bucket, n, d)
    put(sdk, bucket, "g.tar", make_tar([("in/x.txt", b"xx")]))
    want = [("g/2", objs["g/2"]), ("g.tar/in/x.txt", b"xx"), ("g/0", objs["g/0"])]
    entries = [{"objname": "g/2"}, {"objname": "g.tar", "archpath": "in/x.txt"},
               {"objname": "g/0"}]
    ctypes = {"tar.gz": "application/gzip", "tar.lz4": "application/x-lz4",
              "tar.zst": "application/zstd", "zip": "application/zip"}
    for mime, fmt in ((".tgz", "tar.gz"), ("tar.gz", "tar.gz"), (".tar.lz4", "tar.lz4"),
                      ("tar.zst", "tar.zst"), (".zip", "zip")):
        req = {"in": entries, "mime": mime, "onob": True, "strm": True}
        r = sdk.request("get", "ml/moss/" + bucket, params={"provider": "ais"}, json=req)
        assert r.status_code == 200, r.text
        assert r.headers["Content-Type"] == ctypes[fmt], (mime, r.headers)
        assert archive_members(fmt, r.content) == want, mime
    for mime, fmt in ((".tgz", "tar.gz"), (".zip", "zip")):  # the multipart answer's part
        req = {"in": entries, "mime": mime, "onob": True, "strm": False}
        r = sdk.request("get", "ml/moss/" + bucket, params={"provider": "ais"}, json=req,
                        stream=True)
        assert r.status_code == 200, r.text
        parts = sdk_multipart_parts(r)
        assert ctypes[fmt].encode() in parts[1][0]
        body = parts[1][1]
        assert body.endswith(b"\r\n")  # the delimiter's CRLF, which the SDK's split keeps
        assert archive_members(fmt, body[:-2]) == want
        if fmt == "tar.gz":
            with tarfile.open(fileobj=io.BytesIO(body), mode="r|*") as tf:  # the SDK's reading
                assert [(m.name, tf.extractfile(m).read()) for m in tf] == want
    for mime in (".tar.xz", ".rar"):
        r = sdk.request("get", "ml/moss/" + bucket, json={"in": entries, "mime": mime})
        assert r.status_code == 501 and ".tar.zst" in r.json()["message"], r.text


def test_get_batch_multipart(cluster, sdk, bucket):
    """batch.py get() with streaming_get=False: MossReq "strm": false; the answer is multipart:
    a MossResp JSON part ({"out": [MossOut], "uuid"}), then the tar, paired by index."""
    objs = {"m/%d" % i: helpers.pattern_bytes(300 + i, i) for i in range(3)}
    for n, d in objs.items():
        put(sdk, bucket, n, d)
    tbuf = io.BytesIO()
    with tarfile.open(fileobj=tbuf, mode="w") as tf:
        ti = tarfile.TarInfo("in/two.txt")
        ti.size = 3
        tf.addfile(ti, io.BytesIO(b"two"))
    put(sdk, bucket, "mp.tar", tbuf.getvalue())
    opaque = base64.urlsafe_b64encode(b"user-7").decode()
    req = {"in": [{"objname": "m/2", "opaque": opaque}, {"objname": "nope"},
                  {"objname": "mp.tar", "archpath": "in/two.txt"},
                  {"objname": "m/0", "bucket": bucket, "provider": "ais"}],
           "mime": ".tar", "coer": True, "strm": False}
    r = sdk.request("get", "ml/moss/" + bucket, params={"provider": "ais"}, json=req,
                    stream=True)
    assert r.status_code == 200, r.text
    parts = sdk_multipart_parts(r)
    assert len(parts) == 2
    assert b"application/json" in parts[0][0] and b"application/x-tar" in parts[1][0]
    resp = json.loads(parts[0][1].decode("utf-8"))  # MossResp.parse_raw
    out = resp["out"]
    assert isinstance(resp["uuid"], str) and len(out) == 4
    # MossOut: objname, bucket, provider str; size int; archpath, opaque, err_msg optional
    for o in out:
        assert o["bucket"] == bucket and o["provider"] == "ais" and isinstance(o["size"], int)
    assert [o["objname"] for o in out] == ["m/2", "nope", "mp.tar", "m/0"]
    assert out[0]["opaque"] == opaque and base64.urlsafe_b64decode(out[0]["opaque"]) == b"user-7"
    assert out[0]["size"] == len(objs["m/2"]) and "err_msg" not in out[0]
    assert out[1]["err_msg"] and out[1]["size"] == 0
    assert out[2]["archpath"] == "in/two.txt" and out[2]["size"] == 3
    # tar_stream_extractor.py: the i-th file of the archive goes with out[i]
    with tarfile.open(fileobj=io.BytesIO(parts[1][1]), mode="r|*") as tf:
        members = [(m.name, tf.extractfile(m).read()) for m in tf if m.isfile()]
    assert [m[0] for m in members] == ["%s/m/2" % bucket, "__404__/%s/nope" % bucket,
                                       "%s/mp.tar/in/two.txt" % bucket, "%s/m/0" % bucket]
    assert members[0][1] == objs["m/2"] and members[2][1] == b"two"
    assert members[3][1] == objs["m/0"]
    # AIStore's default (no "strm") is the multipart answer too
    r = sdk.request("get", "ml/moss/" + bucket, json={"in": [{"objname": "m/1"}], "onob": True})
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("multipart/form-data")
    parts = sdk_multipart_parts(r)
    with tarfile.open(fileobj=io.BytesIO(parts[1][1]), mode="r|*") as tf:
        assert [(m.name, tf.extractfile(m).read()) for m in tf] == [("m/1", objs["m/1"])]
    # without coer a missing entry anywhere is a plain 404 (nothing was sent yet)
    r = sdk.request("get", "ml/moss/" + bucket,
                    json={"in": [{"objname": "m/1"}, {"objname": "nope"}], "strm": False})
    assert r.status_code == 404 and r.json()["code"] == "NoSuchKey", r.text
    # no token, a bad token: refused before anything is read
    r = SdkClient(cluster.url).request("get", "ml/moss/" + bucket, json=req)
    assert r.status_code == 403
    r = SdkClient(cluster.url, "a.b.c").request("get", "ml/moss/" + bucket, json=req)
    assert r.status_code == 401


# ---- AuthN token revocation (authn/token_manager.py, authn_client.py logout()) ----

def test_token_revocation(cluster, sdk, bucket):
    put(sdk, bucket, "rv", b"revoke me")

    def login(user, pw):
        r = SdkClient(cluster.url).request("post", "users/" + user, json={"password": pw})
        assert r.status_code == 200, r.text
        return r.json()["token"]

    t1, t2 = login(ACCESS_KEY, SECRET_KEY), login(ACCESS_KEY, SECRET_KEY)
    ro1, ro2 = login("AKRO", "secretRO"), login("AKRO", "secretRO")
    assert len({t1, t2, ro1, ro2, sdk.token}) == 5  # a random "jti": every login differs
    c1 = SdkClient(cluster.url, t1)
    loc = c1.request("get", "objects/%s/rv" % bucket, allow_redirects=False).headers["Location"]
    assert requests.get(loc, headers={"Authorization": "Bearer " + t1}, timeout=30).status_code \
        == 200
    # refused: no credentials (403), a garbage token in the body (400), another key's token
    # by a key that is not an admin (403)
    r = SdkClient(cluster.url).request("delete", "tokens", json={"token": t1})
    assert r.status_code == 403, r.text
    r = c1.request("delete", "tokens", json={"token": "x.y.z"})
    assert r.status_code == 400, r.text
    r = c1.request("delete", "tokens", json={"nottoken": t1})
    assert r.status_code == 400, r.text
    r = SdkClient(cluster.url, ro1).request("delete", "tokens", json={"token": t1})
    assert r.status_code == 403, r.text
    assert c1.request("get", "daemon", params={"what": "smap"}).status_code == 200
    # AuthNClient.logout(): DELETE tokens {"token": own token} with that token as Bearer
    r = c1.request("delete", "tokens", json={"token": t1})
    assert r.status_code == 200, r.text
    # the revoked token is refused by the proxy and, through a redirect, by the target
    r = c1.request("get", "daemon", params={"what": "smap"})
    assert r.status_code == 401 and r.headers["WWW-Authenticate"].startswith("Bearer"), r.text
    helpers.wait_until(lambda: requests.get(loc, headers={"Authorization": "Bearer " + t1},
                                            timeout=30).status_code == 401,
                       timeout=30, what="the target to refuse the revoked token")
    # the revocation is in the BMD every node holds: the token's SHA-256, until its expiry
    bmd = sdk.request("get", "daemon", params={"what": "bmd"}).json()
    claims = json.loads(base64.urlsafe_b64decode(t1.split(".")[1] + "=="))
    assert "revoked" in bmd, bmd
    assert {"id": hashlib.sha256(t1.encode()).hexdigest(), "exp": claims["exp"]} in \
        bmd["revoked"]
    # other tokens of the key keep working
    assert SdkClient(cluster.url, t2).request("get", "daemon",
                                              params={"what": "smap"}).status_code == 200
    # an admin key revokes another key's token; a key its own
    r = SdkClient(cluster.url, t2).request("delete", "tokens", json={"token": ro1})
    assert r.status_code == 200, r.text
    r = SdkClient(cluster.url, ro2).request("delete", "tokens", json={"token": ro2})
    assert r.status_code == 200, r.text
    for t in (ro1, ro2):
        r = SdkClient(cluster.url, t).request("get", "daemon", params={"what": "smap"})
        assert r.status_code == 401, r.text
    # an expired token needs no revoking
    now = int(time.time())
    expired = forge_token(CLUSTER_SECRET, {"username": ACCESS_KEY, "iat": now - 7200,
                                           "exp": now - 3600})
    r = SdkClient(cluster.url, t2).request("delete", "tokens", json={"token": expired})
    assert r.status_code == 200, r.text
    # the login still hands out new, working tokens
    t3 = login(ACCESS_KEY, SECRET_KEY)
    assert SdkClient(cluster.url, t3).request("get", "daemon",
                                              params={"what": "smap"}).status_code == 200


def test_second_proxy_forwards_jobs_and_revocations(tmp_path_factory, log_dir):
    """Through a proxy that is not the primary: copy-bck (its destination is created by the
    primary), Job.wait(), and a revocation (forwarded to the primary, then refused by both
    proxies)."""
    nodes, ep = start_cluster(tmp_path_factory, log_dir, "ais2p-", 1, redirect_proxy=True)
    try:
        p2 = ep.redirect_proxy.url
        r = SdkClient(p2).request("post", "users/" + ACCESS_KEY, json={"password": SECRET_KEY})
        assert r.status_code == 200, r.text
        c2 = SdkClient(p2, r.json()["token"])
        src, dst = "ais-" + uuid.uuid4().hex[:10], "ais-" + uuid.uuid4().hex[:10]
        assert c2.request("post", "buckets/" + src, params={"provider": "ais"},
                          json=action("create-bck")).status_code == 200
        put(c2, src, "x", b"xx")
        r = c2.request("post", "buckets/" + src, params={"provider": "ais",
                                                           "bck_to": "ais/@#/%s/" % dst},
                       json=action("copy-bck", {}))
        assert r.status_code == 200, r.text
        job_wait(c2, r.text)
        c1 = SdkClient(ep.url, c2.token)
        assert c1.request("get", "objects/%s/x" % dst, params={"provider": "ais"}).content == b"xx"
        # revoke through the second proxy: the primary records it, both refuse it
        r = c2.request("delete", "tokens", json={"token": c2.token})
        assert r.status_code == 200, r.text
        for c in (c2, c1):
            helpers.wait_until(lambda c=c: c.request("get", "daemon", params={"what": "smap"})
                               .status_code == 401, timeout=30,
                               what="the revoked token refused by %s" % c.base)
    finally:
        _stop_nodes(nodes)


def test_new_sdk_calls_refuse_bad_credentials_and_replays(cluster, sdk, bucket):
    """Object.copy() (object_to), multipart_upload() (mpt-upload) and get_performance()
    (reverse/daemon): refused without a token (403), with a tampered, expired or forged one
    (401, before any body is read), and as a SigV4 request signed two hours ago (403
    RequestTimeTooSkewed, as a replay captured on the wire); nothing is created."""
    import datetime
    import urllib.parse
    put(sdk, bucket, "sec-src", b"secret bytes")
    tid = next(iter(sdk.request("get", "daemon", params={"what": "smap"}).json()["tmap"]))
    tokens = bad_tokens(sdk)
    for name, t in tokens.items():
        c = SdkClient(cluster.url, t)
        want = 403 if t is None else 401
        r = obj_copy(c, bucket, "sec-src", "ais/@#/%s/sec-copy" % bucket)
        assert r.status_code == want, (name, r.status_code, r.text)
        r = mpt(c, bucket, "sec-mpt", "post", body=action("mpt-upload"))
        assert r.status_code == want, (name, r.status_code, r.text)
        r = node_status(c, tid)
        assert r.status_code == want, (name, r.status_code, r.text)
        assert "tracker" not in r.text
    # SigV4 signed two hours ago (a captured request sent again): refused at the proxy
    when = datetime.datetime.utcnow() - datetime.timedelta(hours=2)
    q = urllib.parse.urlencode({"object_to": "ais/@#/%s/sec-copy" % bucket, "provider": "ais"})
    url = "%s/v1/objects/%s/sec-src?%s" % (cluster.url, bucket, q)
    h = helpers.sign_headers("PUT", url, ACCESS_KEY, SECRET_KEY, when=when)
    r = requests.put(url, headers=h, allow_redirects=False, timeout=30)
    assert r.status_code == 403 and "RequestTimeTooSkewed" in r.text, r.text
    url = "%s/v1/objects/%s/sec-mpt?provider=ais" % (cluster.url, bucket)
    body = json.dumps(action("mpt-upload")).encode()
    h = helpers.sign_headers("POST", url, ACCESS_KEY, SECRET_KEY, when=when,
                             headers={"Content-Type": "application/json"})
    r = requests.post(url, headers=h, data=body, allow_redirects=False, timeout=30)
    assert r.status_code == 403 and "RequestTimeTooSkewed" in r.text, r.text
    for n in ("sec-copy", "sec-mpt"):
        assert sdk.request("head", "objects/%s/%s" % (bucket, n),
                           params={"provider": "ais"}).status_code == 404
    s3 = helpers.boto3_client(cluster, ACCESS_KEY, SECRET_KEY)  # no upload was created
    assert not s3.list_multipart_uploads(Bucket=bucket, Prefix="sec-mpt").get("Uploads")


# ---- ObjectWriter.set_custom_props() ----

def custom_props(client, bucket, name, md, replace=False, provider="ais"):
    # obj/object_writer.py set_custom_props(): PATCH objects/B/O with the bucket's qparams,
    # ?new_custom=true when replace_existing, json ActionMsg(action="", value=md).model_dump()
    q = {"provider": provider}
    if replace:
        q["new_custom"] = "true"
    return client.request("patch", "objects/%s/%s" % (bucket, name), params=q,
                          json=action("", md))


def custom_md(sdk, bucket, name):
    """ObjectAttributes.custom_metadata: HEAD's ais-custom-md "k=v,k2=v2" split as the SDK does."""
    r = sdk.request("head", "objects/%s/%s" % (bucket, name), params={"provider": "ais"})
    assert r.status_code == 200, r.status_code
    v = r.headers.get("ais-custom-md", "")
    return dict(kv.split("=", 1) for kv in v.split(",") if kv)


def test_set_custom_props(cluster, sdk, bucket):
    """set_custom_props(custom_metadata, replace_existing): the entries join the object's user
    metadata (HEAD's ais-custom-md, S3's x-amz-meta-*) or replace it; the content, ETag and
    Last-Modified stay. The PATCH goes through the proxy's 307 to the owner, which `requests`
    follows with its body, as for the SDK."""
    s3 = helpers.boto3_client(cluster, ACCESS_KEY, SECRET_KEY)
    s3.put_object(Bucket=bucket, Key="dir/o", Body=b"content", Metadata={"orig": "1"})
    before = s3.head_object(Bucket=bucket, Key="dir/o")
    r = custom_props(sdk, bucket, "dir/o", {"Color": "blue", "n": "2"})
    assert r.status_code == 200, r.text
    assert [h.status_code for h in r.history] == [307], r.history
    assert custom_md(sdk, bucket, "dir/o") == {"orig": "1", "color": "blue", "n": "2"}
    h = s3.head_object(Bucket=bucket, Key="dir/o")
    assert h["Metadata"] == {"orig": "1", "color": "blue", "n": "2"}, h["Metadata"]
    assert (h["ETag"], h["LastModified"]) == (before["ETag"], before["LastModified"])
    assert s3.get_object(Bucket=bucket, Key="dir/o")["Body"].read() == b"content"
    # a name again: the new value; replace_existing: only the new entries
    assert custom_props(sdk, bucket, "dir/o", {"n": "3"}).status_code == 200
    assert custom_md(sdk, bucket, "dir/o") == {"orig": "1", "color": "blue", "n": "3"}
    assert custom_props(sdk, bucket, "dir/o", {"only": "x"}, replace=True).status_code == 200
    assert s3.head_object(Bucket=bucket, Key="dir/o")["Metadata"] == {"only": "x"}
    # a later PUT replaces it, as S3 metadata always is
    put(sdk, bucket, "dir/o", b"new content")
    assert custom_md(sdk, bucket, "dir/o") == {}


@pytest.mark.parametrize("body,status,code", [
    ({"action": "", "name": "", "value": None}, 400, "InvalidArgument"),
    (action("", ["a", "b"]), 400, "InvalidArgument"),
    (action("", {"n": 1}), 400, "InvalidArgument"),
    (action("", {"a b": "v"}), 400, "InvalidArgument"),
    (action("", {"k\r\nSet-Cookie": "v"}), 400, "InvalidArgument"),
    (action("", {"k": "v\r\nSet-Cookie: x=y"}), 400, "InvalidArgument"),
    (action("", {"k": "v" * 2048}), 400, "MetadataTooLarge"),
])
def test_set_custom_props_refuses_bad_entries(cluster, sdk, bucket, body, status, code):
    """A body that is not {"value": {NAME: VALUE}} with names an HTTP header can carry,
    values without control characters and 2 KiB in all (as a PUT's x-amz-meta-*): 400,
    the metadata unchanged."""
    s3 = helpers.boto3_client(cluster, ACCESS_KEY, SECRET_KEY)
    s3.put_object(Bucket=bucket, Key="o", Body=b"x", Metadata={"keep": "1"})
    r = sdk.request("patch", "objects/%s/o" % bucket, params={"provider": "ais"}, json=body)
    assert r.status_code == status and code in r.text, (body, r.status_code, r.text)
    assert s3.head_object(Bucket=bucket, Key="o")["Metadata"] == {"keep": "1"}


def test_set_custom_props_missing_and_not_json(cluster, sdk, bucket):
    assert custom_props(sdk, bucket, "nope", {"k": "v"}).status_code == 404
    assert custom_props(sdk, "ais-nope-" + uuid.uuid4().hex[:6], "o", {"k": "v"}
                        ).status_code == 404
    put(sdk, bucket, "o", b"x")
    r = sdk.request("patch", "objects/%s/o" % bucket, params={"provider": "ais"},
                    data=b"{not json")
    assert r.status_code == 400, r.text
    assert custom_md(sdk, bucket, "o") == {}


def test_set_custom_props_s3_backed_bucket_is_501(cluster, sdk, s3rver):  # noqa: F811
    """An S3-backed bucket's objects live upstream: hoard does not forward metadata changes
    there, so the call is refused (as object tags are) and nothing changes."""
    src = "aismd-" + uuid.uuid4().hex[:8]
    up = s3rver.client()
    up.create_bucket(Bucket=src)
    up.put_object(Bucket=src, Key="o", Body=b"up", Metadata={"u": "1"})
    r = sdk.request("post", "buckets/" + src, params={"provider": "aws"},
                    json={"upstream": {"endpoint": s3rver.url, "profile": "s3rver"}})
    assert r.status_code == 201, r.text
    assert sdk.request("get", "objects/%s/o" % src, params={"provider": "aws"}).content == b"up"
    r = custom_props(sdk, src, "o", {"k": "v"}, provider="aws")
    assert r.status_code == 501 and "S3-backed" in r.json()["message"], r.text
    assert up.head_object(Bucket=src, Key="o")["Metadata"] == {"u": "1"}


def test_set_custom_props_needs_a_good_token_and_is_not_replayable(cluster, sdk, bucket):
    """Refused without a token (403), with a tampered, expired or forged one (401), from a
    read-only key (403), and as a SigV4 request signed two hours ago (403
    RequestTimeTooSkewed: a replay captured on the wire); the metadata stays."""
    import datetime
    s3 = helpers.boto3_client(cluster, ACCESS_KEY, SECRET_KEY)
    s3.put_object(Bucket=bucket, Key="o", Body=b"x", Metadata={"keep": "1"})
    for name, t in bad_tokens(sdk).items():
        r = custom_props(SdkClient(cluster.url, t), bucket, "o", {"evil": "1"})
        assert r.status_code == (403 if t is None else 401), (name, r.status_code, r.text)
    ro = SdkClient(cluster.url)
    ro.token = ro.request("post", "users/AKRO", json={"password": "secretRO"}).json()["token"]
    assert custom_props(ro, bucket, "o", {"evil": "1"}).status_code == 403
    when = datetime.datetime.utcnow() - datetime.timedelta(hours=2)
    url = "%s/v1/objects/%s/o?provider=ais" % (cluster.url, bucket)
    body = json.dumps(action("", {"evil": "1"})).encode()
    h = helpers.sign_headers("PATCH", url, ACCESS_KEY, SECRET_KEY, when=when,
                             headers={"Content-Type": "application/json"})
    r = requests.patch(url, headers=h, data=body, allow_redirects=False, timeout=30)
    assert r.status_code == 403 and "RequestTimeTooSkewed" in r.text, r.text
    # the same request signed now is let in: the refusal above was the time, not the form
    h = helpers.sign_headers("PATCH", url, ACCESS_KEY, SECRET_KEY,
                             headers={"Content-Type": "application/json"})
    r = requests.patch(url, headers=h, data=body, allow_redirects=False, timeout=30)
    assert r.status_code == 307, r.text
    assert s3.head_object(Bucket=bucket, Key="o")["Metadata"] == {"keep": "1"}


# ---- ObjectGroup.archive() ----

def archive(client, bucket, value):
    # multiobj/object_group.py archive(): PUT buckets/B ?provider=ais, ActionMsg "archive" with
    # ArchiveMultiObj.as_dict(): the selection plus archname, isbn, aate, coer, mime?, tobck
    return client.request("put", "buckets/" + bucket, params={"provider": "ais"},
                          json=action("archive", value))


def archive_value(sel, name, to_bucket, **kw):
    v = dict(sel)
    v.update({"archname": name, "isbn": False, "aate": False, "coer": False,
              "tobck": {"name": to_bucket, "provider": "ais",
                        "namespace": {"uuid": "", "name": ""}}})
    v.update(kw)
    return v


def tar_members(data):
    import io
    import tarfile
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as t:
        return [(m.name, t.extractfile(m).read()) for m in t.getmembers()]


def archive_members(fmt, data):
    """[(name, bytes)] of an archive in format fmt ("tar.gz", "tar.lz4", "tar.zst", "zip"),
    read by independent tools: Python's gzip and zipfile, the lz4 and zstd commands."""
    import gzip
    import zipfile
    magic = {"tar.gz": b"\x1f\x8b", "tar.lz4": b"\x04\x22\x4d\x18",
             "tar.zst": b"\x28\xb5\x2f\xfd", "zip": b"PK\x03\x04"}
    assert data[:len(magic[fmt])] == magic[fmt], (fmt, data[:8])
    if fmt == "zip":
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            assert z.testzip() is None
            return [(i.filename, z.read(i)) for i in z.infolist()]
    if fmt == "tar.gz":
        return tar_members(gzip.decompress(data))
    p = subprocess.run([{"tar.lz4": "lz4", "tar.zst": "zstd"}[fmt], "-d", "-c"], input=data,
                       capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return tar_members(p.stdout)


def test_object_group_archive(cluster, sdk, bucket):
    """archive(archive_name, to_bck): one tar of the selected objects (names, or a template
    expanded), members in name order with their object names, written by the owner of its
    name; the job's status says kind "archive"; no manifest object is left anywhere; the
    archive's members are readable by archpath."""
    objs = {"img/%03d.jpg" % i: helpers.pattern_bytes(700 + 37 * i, i) for i in range(12)}
    for k, v in objs.items():
        put(sdk, bucket, k, v)
    names = ["img/007.jpg", "img/001.jpg", "img/010.jpg"]
    r = archive(sdk, bucket, archive_value({"objnames": names}, "arch/a.tar", bucket))
    assert r.status_code == 200, r.text
    st = job_wait(sdk, r.text)
    assert (st["kind"], st["err"], st["aborted"]) == ("archive", "", False), st
    got = sdk.request("get", "objects/%s/arch/a.tar" % bucket, params={"provider": "ais"})
    assert got.status_code == 200
    assert tar_members(got.content) == [(n, objs[n]) for n in sorted(names)]
    m = sdk.request("get", "objects/%s/arch/a.tar" % bucket,
                    params={"provider": "ais", "archpath": "img/010.jpg"})
    assert m.status_code == 200 and m.content == objs["img/010.jpg"]
    # a template (every second name) into another bucket
    other = "ais-" + uuid.uuid4().hex[:10]
    assert sdk.request("post", "buckets/" + other, params={"provider": "ais"},
                       json=action("create-bck")).status_code == 200
    try:
        r = archive(sdk, bucket, archive_value({"template": "img/{000..011..2}.jpg"},
                                               "even.tar", other))
        assert r.status_code == 200, r.text
        job_wait(sdk, r.text)
        got = sdk.request("get", "objects/%s/even.tar" % other, params={"provider": "ais"})
        want = ["img/%03d.jpg" % i for i in range(0, 12, 2)]
        assert tar_members(got.content) == [(n, objs[n]) for n in want]
        s3 = helpers.boto3_client(cluster, ACCESS_KEY, SECRET_KEY)
        assert [o["Key"] for o in s3.list_objects_v2(Bucket=other)["Contents"]] == ["even.tar"]
    finally:
        s3 = helpers.boto3_client(cluster, ACCESS_KEY, SECRET_KEY)
        for o in s3.list_objects_v2(Bucket=other).get("Contents", []):
            s3.delete_object(Bucket=other, Key=o["Key"])
        sdk.request("delete", "buckets/" + other, params={"provider": "ais"},
                    json=action("destroy-bck"))
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert keys == ["arch/a.tar"] + sorted(objs), keys  # nothing else was written


def test_object_group_archive_compressed(cluster, sdk, bucket):
    """archive() into a .tgz (by the name) or with mime ".tar.gz" (whatever the name): a
    gzip-compressed tar of the members in name order; its members are readable by archpath
    and listed, as any compressed archive's. The same for .zip, .tar.lz4 and .tar.zst."""
    objs = {"z/%02d.bin" % i: helpers.pattern_bytes(5000 + 11 * i, i) for i in range(6)}
    for k, v in objs.items():
        put(sdk, bucket, k, v)
    ctypes = {"tar.gz": "application/gzip", "zip": "application/zip",
              "tar.lz4": "application/x-lz4", "tar.zst": "application/zstd"}
    for archname, mime, fmt in (("out/a.tgz", None, "tar.gz"), ("out/b.bin", ".tar.gz", "tar.gz"),
                                ("out/c.tar.gz", "tgz", "tar.gz"), ("out/d.zip", None, "zip"),
                                ("out/e.bin", ".tar.lz4", "tar.lz4"),
                                ("out/f.tar.zst", None, "tar.zst")):
        kw = {"mime": mime} if mime else {}
        r = archive(sdk, bucket, archive_value({"template": "z/{00..05}.bin"}, archname, bucket,
                                               **kw))
        assert r.status_code == 200, (archname, r.text)
        st = job_wait(sdk, r.text)
        assert (st["err"], st["aborted"]) == ("", False), st
        got = sdk.request("get", "objects/%s/%s" % (bucket, archname), params={"provider": "ais"})
        assert got.status_code == 200, archname
        assert archive_members(fmt, got.content) == sorted(objs.items()), archname
        assert got.headers["Content-Type"] == ctypes[fmt], got.headers
        m = sdk.request("get", "objects/%s/%s" % (bucket, archname),
                        params={"provider": "ais", "archpath": "z/03.bin"})
        assert m.status_code == 200 and m.content == objs["z/03.bin"], m.text[:200]
        assert "," not in m.headers["Content-Type"], m.headers  # one Content-Type
    # the same name again in another format is written again, not skipped as done
    r = archive(sdk, bucket, archive_value({"template": "z/{00..05}.bin"}, "out/d.zip", bucket,
                                           mime=".tar.lz4"))
    assert r.status_code == 200, r.text
    st = job_wait(sdk, r.text)
    assert (st["err"], st["aborted"]) == ("", False), st
    got = sdk.request("get", "objects/%s/out/d.zip" % bucket, params={"provider": "ais"})
    assert archive_members("tar.lz4", got.content) == sorted(objs.items())
    # the shard job's own arguments: gzip must be a boolean, format a known name that agrees
    for args, word in (({"gzip": "yes"}, "gzip"), ({"format": "rar"}, "format"),
                       ({"format": 7}, "format"), ({"gzip": True, "format": "zip"}, "format")):
        r = sdk.request("post", "jobs", json={"kind": "shard", "bucket": bucket, "args": dict({
            "output_bucket": bucket, "template": "s-{0..}.tgz", "shard_size": 1 << 20,
            "prefix": "z/"}, **args)})
        assert r.status_code == 400 and word in r.json()["message"], (args, r.text)


def test_object_group_archive_missing_names(cluster, sdk, bucket):
    """A listed name that does not exist: 404 naming it, nothing written; with
    continue_on_err, the archive holds the others."""
    put(sdk, bucket, "here", b"here")
    v = archive_value({"objnames": ["here", "not-here"]}, "m.tar", bucket)
    r = archive(sdk, bucket, v)
    assert r.status_code == 404 and "not-here" in r.text, r.text
    assert sdk.request("head", "objects/%s/m.tar" % bucket,
                       params={"provider": "ais"}).status_code == 404
    v["coer"] = True
    r = archive(sdk, bucket, v)
    assert r.status_code == 200, r.text
    job_wait(sdk, r.text)
    got = sdk.request("get", "objects/%s/m.tar" % bucket, params={"provider": "ais"})
    assert tar_members(got.content) == [("here", b"here")]


@pytest.mark.parametrize("change,status", [
    ({"mime": ".tar.xz"}, 501),
    ({"mime": "application/zip"}, 501),
    ({"mime": ".rar"}, 501),
    ({"mime": ".tar", "archname": "x.tgz"}, 200),  # the mime decides, as in AIStore
    ({"isbn": True}, 501),
    ({"aate": True}, 501),
    ({"archname": "x-{0..3}.tar"}, 400),
    ({"archname": ""}, 400),
    ({"tobck": {"name": "elsewhere", "provider": "aws"}}, 501),
    ({"tobck": {"name": "ais-never-made", "provider": "ais"}}, 404),
    ({"template": "o-{0..20000}", "objnames": None}, 400),
    ({"objnames": None}, 400),
])
def test_object_group_archive_refusals(cluster, sdk, bucket, change, status):
    put(sdk, bucket, "o", b"o")
    v = archive_value({"objnames": ["o"]}, "x.tar", bucket)
    v.update(change)
    v = {k: x for k, x in v.items() if x is not None}
    r = archive(sdk, bucket, v)
    assert r.status_code == status, (change, r.status_code, r.text)
    if status != 200:
        assert "message" in r.json(), r.text
        for n in ("x.tar", "x.tgz", "x-0.tar"):
            assert sdk.request("head", "objects/%s/%s" % (bucket, n),
                               params={"provider": "ais"}).status_code == 404
    else:
        job_wait(sdk, r.text)


def test_object_group_archive_needs_a_good_token(cluster, sdk, bucket):
    """Refused without a token (403), with a tampered, expired or forged one (401), from a
    read-only key (403), and as a SigV4 request signed two hours ago (403); nothing is
    written."""
    import datetime
    put(sdk, bucket, "o", b"o")
    v = archive_value({"objnames": ["o"]}, "sec.tar", bucket)
    for name, t in bad_tokens(sdk).items():
        r = archive(SdkClient(cluster.url, t), bucket, v)
        assert r.status_code == (403 if t is None else 401), (name, r.status_code, r.text)
    ro = SdkClient(cluster.url)
    ro.token = ro.request("post", "users/AKRO", json={"password": "secretRO"}).json()["token"]
    assert archive(ro, bucket, v).status_code == 403
    when = datetime.datetime.utcnow() - datetime.timedelta(hours=2)
    url = "%s/v1/buckets/%s?provider=ais" % (cluster.url, bucket)
    h = helpers.sign_headers("PUT", url, ACCESS_KEY, SECRET_KEY, when=when,
                             headers={"Content-Type": "application/json"})
    r = requests.put(url, headers=h, data=json.dumps(action("archive", v)).encode(),
                     allow_redirects=False, timeout=30)
    assert r.status_code == 403 and "RequestTimeTooSkewed" in r.text, r.text
    assert sdk.request("head", "objects/%s/sec.tar" % bucket,
                       params={"provider": "ais"}).status_code == 404


# ---- ArchiveConfig(regex, mode) reads ----

def regex_get(client, bucket, name, regex, mode, method="get"):
    # obj/object.py get(archive_config=ArchiveConfig(regex=R, mode=M)): GET objects/B/O
    # ?provider=ais&archpath=&archregx=R&archmode=M
    return client.request(method, "objects/%s/%s" % (bucket, name),
                          params={"provider": "ais", "archpath": "", "archregx": regex,
                                  "archmode": mode})


WDS = [("train/0001.jpg", b"J1"), ("train/0001.cls", b"1"), ("train/0001.meta.json", b"{}"),
       ("train/0002.jpg", b"J2" * 100), ("train/0002.cls", b"2"), ("val/0001.jpg", b"V1"),
       ("readme.txt", b"read me")]


def make_tar(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for n, d in members:
            ti = tarfile.TarInfo(n)
            ti.size = len(d)
            t.addfile(ti, io.BytesIO(d))
    return buf.getvalue()


@pytest.mark.parametrize("regex,mode,want", [
    ("train/0001", "wdskey", ["train/0001.jpg", "train/0001.cls"]),  # AIStore: last extension
    ("train/0001.meta", "wdskey", ["train/0001.meta.json"]),
    (".jpg", "suffix", ["train/0001.jpg", "train/0002.jpg", "val/0001.jpg"]),
    ("train/", "prefix", ["train/0001.jpg", "train/0001.cls", "train/0001.meta.json",
                          "train/0002.jpg", "train/0002.cls"]),
    ("0002", "substr", ["train/0002.jpg", "train/0002.cls"]),
    ("^(val|train)/000[1]\\.jpg$", "regexp", ["train/0001.jpg", "val/0001.jpg"]),
    ("me", "regexp", ["train/0001.meta.json", "readme.txt"]),  # anywhere in the name
])
def test_archive_regex_reads(cluster, sdk, bucket, regex, mode, want):
    """ArchiveConfig(regex, mode): the matching members, in archive order, as a tar of their
    own (what AIStore answers for a tar shard); the WebDataset key of a sample gets all of
    its files in one request."""
    put(sdk, bucket, "s.tar", make_tar(WDS))
    r = regex_get(sdk, bucket, "s.tar", regex, mode)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "application/x-tar"
    assert tar_members(r.content) == [(n, d) for n, d in WDS if n in want]
    h = regex_get(sdk, bucket, "s.tar", regex, mode, method="head")
    assert h.status_code == 200 and int(h.headers["Content-Length"]) == len(r.content)


def test_archive_regex_reads_refused(cluster, sdk, bucket):
    put(sdk, bucket, "s.tar", make_tar(WDS))
    put(sdk, bucket, "plain", b"not a tar at all" * 100)
    # nothing matches: 404 naming the archive; a mode that does not exist or none: 400
    r = regex_get(sdk, bucket, "s.tar", "nope", "prefix")
    assert r.status_code == 404 and "s.tar" in r.json()["message"], r.text
    for mode in ("glob", ""):
        assert regex_get(sdk, bucket, "s.tar", "x", mode).status_code == 400
    r = sdk.request("get", "objects/%s/s.tar" % bucket,
                    params={"provider": "ais", "archregx": "x"})
    assert r.status_code == 400, r.text
    # a regex that does not compile, a back-reference (exponential matching), too long: 400
    for rx in ("([a-z", "(a)\\1", "a" * 600):
        r = regex_get(sdk, bucket, "s.tar", rx, "regexp")
        assert r.status_code == 400 and "regular expression" in r.text, (rx, r.text)
    # both a member and a selection: 400; an object that is not a tar: the archive error
    r = sdk.request("get", "objects/%s/s.tar" % bucket,
                    params={"provider": "ais", "archpath": "readme.txt", "archregx": "x",
                            "archmode": "prefix"})
    assert r.status_code == 400, r.text
    r = regex_get(sdk, bucket, "plain", "x", "prefix")
    assert r.status_code == 400 and "not usable as an archive" in r.text, r.text
    # no token: refused before anything is read
    assert regex_get(SdkClient(cluster.url), bucket, "s.tar", "train", "prefix"
                     ).status_code == 403


def test_archive_regex_read_of_a_hoard_shard(cluster, sdk, bucket):
    """A shard hoard wrote (an archive job, its member table indexed at commit) reads the same
    way: a sample's files by their WebDataset key."""
    for n, d in WDS:
        put(sdk, bucket, n, d)
    r = archive(sdk, bucket, archive_value({"template": "train/000{1,2}.{jpg,cls}"},
                                           "wds.tar", bucket))
    assert r.status_code == 200, r.text
    job_wait(sdk, r.text)
    r = regex_get(sdk, bucket, "wds.tar", "train/0002", "wdskey")
    assert r.status_code == 200, r.text
    assert tar_members(r.content) == [("train/0002.cls", b"2"), ("train/0002.jpg", b"J2" * 100)]


# ---- Object.append_content(), ObjectWriter.as_file() ----

def append(client, bucket, name, data, handle="", flush=False):
    # obj/object_writer.py append_content(content, handle, flush): PUT objects/B/O with the
    # bucket's qparams plus append_type=append|flush and append_handle=H; the answer's
    # ais-append-handle header is the handle for the next call
    q = {"provider": "ais", "append_type": "flush" if flush else "append",
         "append_handle": handle}
    return client.request("put", "objects/%s/%s" % (bucket, name), params=q, data=data)


def get_obj(sdk, bucket, name):
    return sdk.request("get", "objects/%s/%s" % (bucket, name), params={"provider": "ais"})


def test_append_content_and_as_file(cluster, sdk, bucket):
    """as_file('a'): appends to what the object holds, invisible until the flush; as_file('w'):
    put_content(b"") first; an object that does not exist is created; a body over 4 MiB (sent
    without Expect, so relayed by the proxy) is appended whole; the ETag is the MD5 of the
    result."""
    put(sdk, bucket, "log", b"line0\n")
    r = append(sdk, bucket, "log", b"line1\n")
    assert r.status_code == 200, r.text
    h = r.headers["ais-append-handle"]
    assert len(h) == 32, r.headers
    r = append(sdk, bucket, "log", b"line2\n", handle=h)
    assert r.status_code == 200 and r.headers["ais-append-handle"] == h, r.text
    assert get_obj(sdk, bucket, "log").content == b"line0\n"  # not before the flush
    r = append(sdk, bucket, "log", b"", handle=h, flush=True)
    assert r.status_code == 200, r.text
    got = get_obj(sdk, bucket, "log")
    assert got.content == b"line0\nline1\nline2\n"
    assert got.headers["ETag"].strip('"') == helpers.md5_hex(got.content)
    # a flushed handle is gone
    assert append(sdk, bucket, "log", b"x", handle=h).status_code == 404
    # ObjectFileWriter 'w': put_content(b"") then appends; a 5 MiB write goes whole
    big = helpers.pattern_bytes(5 * 1024 * 1024 + 7, 61)
    put(sdk, bucket, "w", b"")
    h = append(sdk, bucket, "w", big[:100]).headers["ais-append-handle"]
    r = append(sdk, bucket, "w", big[100:], handle=h)
    assert r.status_code == 200, r.text
    assert append(sdk, bucket, "w", b"", handle=h, flush=True).status_code == 200
    assert get_obj(sdk, bucket, "w").content == big
    # a new object, and a flush that carries the last bytes
    h = append(sdk, bucket, "new", b"ab").headers["ais-append-handle"]
    assert get_obj(sdk, bucket, "new").status_code == 404
    assert append(sdk, bucket, "new", b"cd", handle=h, flush=True).status_code == 200
    assert get_obj(sdk, bucket, "new").content == b"abcd"


def test_append_handles_are_checked(cluster, sdk, bucket):
    put(sdk, bucket, "a", b"A")
    put(sdk, bucket, "b", b"B")
    h = append(sdk, bucket, "a", b"1").headers["ais-append-handle"]
    # another object's handle, one never given, a malformed one: nothing changes
    assert append(sdk, bucket, "b", b"2", handle=h).status_code == 404
    assert append(sdk, bucket, "a", b"2", handle="0" * 32).status_code == 404
    assert append(sdk, bucket, "a", b"2", handle="../../etc").status_code == 400
    assert append(sdk, bucket, "a", b"", flush=True).status_code == 400  # flush needs one
    r = sdk.request("put", "objects/%s/a" % bucket,
                    params={"provider": "ais", "append_type": "prepend", "append_handle": ""},
                    data=b"x")
    assert r.status_code == 400, r.text
    assert append(sdk, bucket, "a", b"", handle=h, flush=True).status_code == 200
    assert get_obj(sdk, bucket, "a").content == b"A1"
    assert get_obj(sdk, bucket, "b").content == b"B"


def test_append_s3_backed_bucket_is_501(cluster, sdk, s3rver):  # noqa: F811
    src = "aisap-" + uuid.uuid4().hex[:8]
    up = s3rver.client()
    up.create_bucket(Bucket=src)
    up.put_object(Bucket=src, Key="o", Body=b"up")
    r = sdk.request("post", "buckets/" + src, params={"provider": "aws"},
                    json={"upstream": {"endpoint": s3rver.url, "profile": "s3rver"}})
    assert r.status_code == 201, r.text
    r = sdk.request("put", "objects/%s/o" % src,
                    params={"provider": "aws", "append_type": "append", "append_handle": ""},
                    data=b"more")
    assert r.status_code == 501 and "S3-backed" in r.json()["message"], r.text
    assert up.get_object(Bucket=src, Key="o")["Body"].read() == b"up"


def test_append_needs_a_good_token_and_is_not_replayable(cluster, sdk, bucket):
    """Refused without a token (403), with a tampered, expired or forged one (401), from a
    read-only key (403), and as a SigV4 request signed two hours ago (403); the object and an
    open handle stay as they were."""
    import datetime
    put(sdk, bucket, "o", b"O")
    h = append(sdk, bucket, "o", b"1").headers["ais-append-handle"]
    for name, t in bad_tokens(sdk).items():
        c = SdkClient(cluster.url, t)
        for kw in ({}, {"handle": h}, {"handle": h, "flush": True}):
            r = append(c, bucket, "o", b"evil", **kw)
            assert r.status_code == (403 if t is None else 401), (name, kw, r.text)
    ro = SdkClient(cluster.url)
    ro.token = ro.request("post", "users/AKRO", json={"password": "secretRO"}).json()["token"]
    assert append(ro, bucket, "o", b"evil", handle=h).status_code == 403
    when = datetime.datetime.utcnow() - datetime.timedelta(hours=2)
    url = "%s/v1/objects/%s/o?append_handle=%s&append_type=append&provider=ais" % (
        cluster.url, bucket, h)
    hd = helpers.sign_headers("PUT", url, ACCESS_KEY, SECRET_KEY, when=when)
    r = requests.put(url, headers=hd, data=b"evil", allow_redirects=False, timeout=30)
    assert r.status_code == 403 and "RequestTimeTooSkewed" in r.text, r.text
    assert append(sdk, bucket, "o", b"2", handle=h, flush=True).status_code == 200
    assert get_obj(sdk, bucket, "o").content == b"O12"


def test_object_group_archive_plan_too_big(cluster, sdk, bucket):
    """An archive whose plan (it travels inside the job) would pass 3 MiB, here 1600 names of
    about 1000 bytes: 400 before anything is written, never a job the targets refuse."""
    import concurrent.futures
    long = "L" * 990 + "/"
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda i: put(SdkClient(cluster.url, sdk.token), bucket,
                                  "%s%04d" % (long, i), b""), range(1600)))
    r = archive(sdk, bucket, archive_value({"template": long}, "big.tar", bucket))
    assert r.status_code == 400 and "plan" in r.json()["message"], r.text
    assert sdk.request("head", "objects/%s/big.tar" % bucket,
                       params={"provider": "ais"}).status_code == 404


def test_append_body_over_64mib_refused_before_it_is_read(cluster, sdk, bucket):
    """An append announcing more than 64 MiB (Expect: 100-continue, as a careful client sends
    it) is refused by the owning target before any byte is sent: 400 EntityTooLarge; the open
    handle and the object stay as they were."""
    import http.client
    import urllib.parse
    put(sdk, bucket, "big", b"B")
    h = append(sdk, bucket, "big", b"1").headers["ais-append-handle"]
    r = sdk.request("put", "objects/%s/big" % bucket, allow_redirects=False,
                    params={"provider": "ais", "append_type": "append", "append_handle": h},
                    headers={"Expect": "100-continue"}, data=b"")
    assert r.status_code == 307, r.text  # the owner, with the proxy's capability
    loc = urllib.parse.urlsplit(r.headers["Location"])
    c = http.client.HTTPConnection(loc.hostname, loc.port, timeout=30)
    c.putrequest("PUT", "%s?%s" % (loc.path, loc.query))
    for k, v in (("Content-Length", str(65 << 20)), ("Expect", "100-continue")):
        c.putheader(k, v)
    c.endheaders()
    resp = c.getresponse()
    body = resp.read()
    c.close()
    assert resp.status == 400 and b"EntityTooLarge" in body, (resp.status, body)
    assert append(sdk, bucket, "big", b"2", handle=h, flush=True).status_code == 200
    assert get_obj(sdk, bucket, "big").content == b"B12"


def test_append_handles_bounded_per_target(cluster, sdk, bucket):
    """A target keeps at most 128 open append handles (each holds a temp file and a write
    buffer): the next append without a handle is 503 ServiceUnavailable and creates nothing;
    flushing one makes room again; the open ones still work."""
    import urllib.parse

    def owner(name):  # the owning target's port, from the proxy's 307
        r = sdk.request("put", "objects/%s/%s" % (bucket, name), allow_redirects=False,
                        params={"provider": "ais", "append_type": "append", "append_handle": ""},
                        headers={"Expect": "100-continue"}, data=b"")
        assert r.status_code == 307, r.text
        return urllib.parse.urlsplit(r.headers["Location"]).port

    port, names, i = None, [], 0
    while len(names) < 140:  # names that one target owns
        n = "lim/%04d" % i
        i += 1
        p = owner(n)
        port = port or p
        if p == port:
            names.append(n)
    handles, refused = {}, None
    for n in names:
        r = append(sdk, bucket, n, n.encode())
        if r.status_code != 200:
            refused = (n, r)
            break
        handles[n] = r.headers["ais-append-handle"]
    assert refused, "no limit after %d open handles" % len(handles)
    n, r = refused
    # the other tests of this module flush their handles; one may have left a few open
    assert 120 <= len(handles) <= 128, len(handles)
    assert r.status_code == 503 and r.json()["code"] == "ServiceUnavailable", r.text
    assert "append handles" in r.json()["message"], r.text
    assert get_obj(sdk, bucket, n).status_code == 404  # nothing created
    # a flush makes room; every handle still takes appends and flushes to its bytes
    first = names[0]
    assert append(sdk, bucket, first, b"!", handle=handles.pop(first),
                  flush=True).status_code == 200
    r = append(sdk, bucket, n, n.encode())
    assert r.status_code == 200, r.text
    handles[n] = r.headers["ais-append-handle"]
    for k, h in handles.items():
        assert append(sdk, bucket, k, b"+", handle=h, flush=True).status_code == 200, k
    assert get_obj(sdk, bucket, first).content == first.encode() + b"!"
    for k in list(handles)[::20]:
        assert get_obj(sdk, bucket, k).content == k.encode() + b"+"


# ---- compressed archives and zips (AIStore reads members of .tgz, .tar.gz, .zip too) ----

def packed(kind, members):
    """members as a compressed tar ("tgz", "tar.xz", "tar.bz2") or a zip ("zip" deflated,
    "zip-stored")."""
    import zipfile
    buf = io.BytesIO()
    if kind.startswith("zip"):
        how = zipfile.ZIP_STORED if kind == "zip-stored" else zipfile.ZIP_DEFLATED
        with zipfile.ZipFile(buf, "w", how) as z:
            for n, d in members:
                z.writestr(n, d)
        return buf.getvalue()
    mode = {"tgz": "w:gz", "tar.xz": "w:xz", "tar.bz2": "w:bz2"}[kind]
    with tarfile.open(fileobj=buf, mode=mode) as t:
        for n, d in members:
            ti = tarfile.TarInfo(n)
            ti.size = len(d)
            t.addfile(ti, io.BytesIO(d))
    return buf.getvalue()


PACKED = [("train/0001.jpg", os.urandom(3000)), ("train/0001.cls", b"1"),
          ("train/0002.jpg", os.urandom(70000)), ("train/0002.cls", b"2"),
          ("readme.txt", b"read me")]


@pytest.mark.parametrize("kind", ["tgz", "tar.xz", "tar.bz2", "zip", "zip-stored"])
def test_compressed_archive_member_reads(cluster, sdk, bucket, kind):
    """archpath, Range inside the member, HEAD, the member list, ArchiveConfig selections and
    list_archive work on compressed tars and zips as on plain tars (read in order on the
    owning target: there are no byte ranges to index)."""
    name = "shards/s-0." + ("zip" if kind.startswith("zip") else kind)
    data = packed(kind, PACKED)
    put(sdk, bucket, name, data)
    for n, d in PACKED:
        r = sdk.request("get", "objects/%s/%s" % (bucket, name),
                        params={"provider": "ais", "archpath": n})
        assert r.status_code == 200 and r.content == d, (n, r.status_code, r.text[:200])
    big = PACKED[2][1]
    r = sdk.request("get", "objects/%s/%s" % (bucket, name), headers={"Range": "bytes=100-299"},
                    params={"provider": "ais", "archpath": "train/0002.jpg"})
    assert r.status_code == 206 and r.content == big[100:300], r.status_code
    assert r.headers["Content-Range"] == "bytes 100-299/%d" % len(big)
    h = sdk.request("head", "objects/%s/%s" % (bucket, name),
                    params={"provider": "ais", "archpath": "train/0002.jpg"})
    assert h.status_code == 200 and int(h.headers["Content-Length"]) == len(big)
    assert h.headers["Content-Type"] == "image/jpeg"
    r = sdk.request("get", "objects/%s/%s" % (bucket, name),
                    params={"provider": "ais", "archpath": "train/0003.jpg"})
    assert r.status_code == 404 and "train/0003.jpg" in r.json()["message"], r.text
    # the member list: names and sizes in archive order (no offsets: not byte ranges)
    r = sdk.request("get", "objects/%s/%s" % (bucket, name), params={"members": ""})
    assert r.status_code == 200, r.text
    j = r.json()
    assert j["count"] == len(PACKED) and j["size"] == len(data)
    assert [(m["name"], m["size"]) for m in j["members"]] == [(n, len(d)) for n, d in PACKED]
    assert all("offset" not in m for m in j["members"])
    # a WebDataset sample's files in one request, as a tar
    r = regex_get(sdk, bucket, name, "train/0002", "wdskey")
    assert r.status_code == 200 and r.headers["Content-Type"] == "application/x-tar", r.text
    assert tar_members(r.content) == [(n, d) for n, d in PACKED if n.startswith("train/0002")]
    h = regex_get(sdk, bucket, name, "train/0002", "wdskey", method="head")
    assert h.status_code == 200 and int(h.headers["Content-Length"]) == len(r.content)
    assert regex_get(sdk, bucket, name, "nope", "prefix").status_code == 404
    # GetBatch entries that are members of it (decompressed on the owner, sent as a file)
    req = {"in": [{"objname": name, "archpath": "train/0002.jpg"},
                  {"objname": name, "archpath": "readme.txt"},
                  {"objname": name, "archpath": "nope"}],
           "mime": ".tar", "coer": True, "onob": True, "strm": True}
    r = sdk.request("get", "ml/moss/" + bucket, params={"provider": "ais"}, json=req,
                    stream=True)
    assert r.status_code == 200, r.text
    with tarfile.open(fileobj=io.BytesIO(r.raw.read()), mode="r|") as tf:
        got = [(m.name, tf.extractfile(m).read()) for m in tf]
    assert got[:2] == [("%s/train/0002.jpg" % name, big), ("%s/readme.txt" % name, b"read me")]
    assert got[2][0] == "__404__/%s/nope" % name and b"no member 'nope'" in got[2][1], got[2]
    # list_archive: the archive, then its members
    res = list_objects(sdk, bucket, prefix=name, props="name,size", flags=str(1 << 3))
    assert [(e["n"], e.get("s")) for e in res["Entries"]] == [(name, len(data))] + [
        ("%s/%s" % (name, n), len(d)) for n, d in PACKED]


def test_compressed_archive_refusals(cluster, sdk, bucket):
    """Bytes that only start like gzip or zip: 400 InvalidArchive with the reason; a member
    over 64 MiB (read into memory: a 65 MiB member of zeros is a 64 KiB gzip) is refused
    with EntityTooLarge after reading no more than the limit; a truncated archive still serves
    the members before the cut; nothing changes the stored object."""
    import gzip
    for name, body in (("fake.tgz", b"\x1f\x8b" + b"not gzip data " * 50),
                       ("fake.zip", b"PK\x03\x04" + b"\x00" * 20 + b"junk" * 30)):
        put(sdk, bucket, name, body)
        r = sdk.request("get", "objects/%s/%s" % (bucket, name),
                        params={"provider": "ais", "archpath": "a"})
        assert r.status_code == 400 and r.json()["code"] == "InvalidArchive", r.text
        assert "not usable as an archive" in r.json()["message"], r.text
        assert get_obj(sdk, bucket, name).content == body
    # a bomb: small on disk, too big to serve from memory
    tbuf = io.BytesIO()
    with tarfile.open(fileobj=tbuf, mode="w") as t:
        ti = tarfile.TarInfo("zeros.bin")
        ti.size = 65 << 20
        t.addfile(ti, io.BytesIO(b"\0" * ti.size))
        ti = tarfile.TarInfo("small.txt")
        ti.size = 2
        t.addfile(ti, io.BytesIO(b"ok"))
    bomb = gzip.compress(tbuf.getvalue(), compresslevel=9)
    assert len(bomb) < 1 << 20
    put(sdk, bucket, "bomb.tgz", bomb)
    r = sdk.request("get", "objects/%s/bomb.tgz" % bucket,
                    params={"provider": "ais", "archpath": "zeros.bin"})
    assert r.status_code == 400 and r.json()["code"] == "EntityTooLarge", r.text
    assert "64 MiB" in r.json()["message"]
    h = sdk.request("head", "objects/%s/bomb.tgz" % bucket,  # a HEAD says what the GET would
                    params={"provider": "ais", "archpath": "zeros.bin"})
    assert h.status_code == 400, h.status_code
    r = sdk.request("get", "objects/%s/bomb.tgz" % bucket,
                    params={"provider": "ais", "archpath": "small.txt"})
    assert r.status_code == 200 and r.content == b"ok", r.text
    r = regex_get(sdk, bucket, "bomb.tgz", ".bin", "suffix")
    assert r.status_code == 400 and r.json()["code"] == "EntityTooLarge", r.text
    # a list of over 100000 members (names held in memory): refused, the list of a plain
    # tar is the way; the members themselves are still readable
    tbuf = io.BytesIO()
    with tarfile.open(fileobj=tbuf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for i in range(100001):
            t.addfile(tarfile.TarInfo("m%06d" % i))
    put(sdk, bucket, "many.tgz", gzip.compress(tbuf.getvalue(), compresslevel=1))
    r = sdk.request("get", "objects/%s/many.tgz" % bucket, params={"members": ""})
    assert r.status_code == 400 and r.json()["code"] == "EntityTooLarge", r.text
    assert "over 100000 members" in r.json()["message"], r.text
    r = sdk.request("get", "objects/%s/many.tgz" % bucket,
                    params={"provider": "ais", "archpath": "m000007"})
    assert r.status_code == 200 and r.content == b"", r.text
    # truncated: the first member is still there, one past the cut is a corrupt archive
    whole = packed("tgz", PACKED)
    put(sdk, bucket, "cut.tgz", whole[:len(whole) - 40])
    r = sdk.request("get", "objects/%s/cut.tgz" % bucket,
                    params={"provider": "ais", "archpath": "train/0001.jpg"})
    assert r.status_code == 200 and r.content == PACKED[0][1], r.text
    r = sdk.request("get", "objects/%s/cut.tgz" % bucket,
                    params={"provider": "ais", "archpath": "readme.txt"})
    assert r.status_code == 400 and "corrupt, truncated" in r.json()["message"], r.text
    # an encrypted zip member (the flag set in both headers): 400, never garbage bytes
    import struct
    z = bytearray(packed("zip-stored", [("secret.txt", b"plain enough")]))
    for sig, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        i = z.index(sig) + at
        struct.pack_into("<H", z, i, struct.unpack_from("<H", z, i)[0] | 1)
    put(sdk, bucket, "enc.zip", bytes(z))
    r = sdk.request("get", "objects/%s/enc.zip" % bucket,
                    params={"provider": "ais", "archpath": "secret.txt"})
    assert r.status_code == 400 and r.json()["code"] == "InvalidArchive", r.text
    # no token: refused before the archive is opened, for members, lists and selections
    anon = SdkClient(cluster.url)
    for params in ({"archpath": "train/0001.jpg"}, {"members": ""},
                   {"archpath": "", "archregx": "train", "archmode": "prefix"}):
        r = anon.request("get", "objects/%s/cut.tgz" % bucket, params=dict(params, provider="ais"))
        assert r.status_code == 403, (params, r.status_code)
