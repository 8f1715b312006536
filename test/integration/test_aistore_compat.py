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
from conftest import (ACCESS_KEY, BIN_DIR, CLUSTER_SECRET, SECRET_KEY, _stop_nodes,
                      start_cluster)

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


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, log_dir):
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
        assert r.status_code == 403, (t, r.text)
    assert "expired" in SdkClient(cluster.url, expired).request(
        "get", "daemon", params={"what": "smap"}).json()["message"]
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
    # without coer a missing object fails the batch; zip and multipart are refused clearly
    req = {"in": [{"objname": "missing"}], "strm": True}
    assert sdk.request("get", "ml/moss/" + bucket, json=req).status_code == 404
    for extra in ({"mime": ".zip"}, {"strm": False}):
        req = dict({"in": [{"objname": "s/1"}]}, **extra)
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
