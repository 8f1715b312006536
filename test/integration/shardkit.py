"""Helpers for the sharding tests (test_shard.py): a cluster of 1 proxy + 3 targets, a
deterministic WebDataset-style dataset (samples of .jpg/.cls/.json files, mixed sizes, a few
large members and long unicode names), a bulk loader that PUTs straight to each object's
owner with the cluster's node signature (setup only: fast, keep-alive), signed API calls
through the proxy, and shard verification helpers.

Runs under Debian's /usr/bin/python3.
"""
import hashlib
import http.client
import io
import json
import os
import tarfile
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

import helpers
from conftest import ACCESS_KEY, SECRET_KEY, _TARGETS
from test_cluster import Cluster, Node, hrw_owner, node_headers, session

# A second key that may only read bucket LIMITED (batch authorisation tests).
LIMITED = "shard-limited"
LIM_KEY, LIM_SECRET = "AKIDLIMITED", "secretLIMITED1"


class ShardNode(Node):
    """A cluster node with two keys; targets without fsync (setup speed: 60k small PUTs)."""

    def cmdline(self):
        args = super().cmdline()
        i = args.index("--auth.keys")
        args[i + 1] = "%s:%s,%s:%s:%s=ro" % (ACCESS_KEY, SECRET_KEY, LIM_KEY, LIM_SECRET,
                                            LIMITED)
        if self.role == "target":
            args += ["--store.fsync", "false"]
        return args


def start_cluster(tmp_path_factory, log_dir, ntargets=3):
    nodes = []

    def make(name, role, join=None):
        root = str(tmp_path_factory.mktemp("sh-" + name))
        n = ShardNode(name, root, os.path.join(log_dir, "sh-" + name), role, join)
        nodes.append(n)
        _TARGETS.append(n)
        return n

    p1 = make("p1", "proxy")
    p1.start()
    targets = [make("t%d" % i, "target", lambda: p1.url) for i in range(1, ntargets + 1)]
    for t in targets:
        t.start()
    c = Cluster([p1], targets)
    c.wait_smap(lambda s: len(s["tmap"]) == ntargets, what="%d targets" % ntargets)
    c.wait_converged()
    c.nodes = nodes
    return c


def stop_cluster(c):
    problems, bad = [], []
    for n in c.nodes:
        was_alive = n.alive()
        rc = n.stop()
        _TARGETS.remove(n)
        problems += n.sanitizer_reports()
        if was_alive and rc != 0:
            bad.append("%s exited with %r on SIGTERM; see %s" % (n.name, rc, n.error_log))
    assert not bad, "\n".join(bad)
    assert not problems, "sanitizer reports:\n" + "\n".join(problems[:20])


# ---- API calls through the proxy ----

def api(method, url, data=None, headers=None, key=ACCESS_KEY, secret=SECRET_KEY, sign=True,
        payload=helpers.UNSIGNED, **kw):
    """A native call, SigV4-signed (payload: the x-amz-content-sha256 value) unless
    sign=False; 307s followed."""
    h = (helpers.sign_headers(method, url, key, secret, headers, payload=payload) if sign
         else dict(headers or {}))
    kw.setdefault("timeout", 120)
    return session().request(method, url, data=data, headers=h, **kw)


def qname(name):
    return urllib.parse.quote(name, safe="/")


def obj_url(proxy, bucket, name, query=""):
    return "%s/v1/objects/%s/%s%s" % (proxy.url, bucket, qname(name), query)


def create_bucket(proxy, name):
    r = api("POST", proxy.url + "/v1/buckets/" + name)
    assert r.status_code in (201, 409), r.text


def start_shard(proxy, bucket, args, job_id=None):
    body = {"kind": "shard", "bucket": bucket, "args": args}
    if job_id:
        body["id"] = job_id
    return api("POST", proxy.url + "/v1/jobs", data=json.dumps(body))


def job(proxy, jid, tolerate_down=False):
    """The merged job view; None (with tolerate_down) while a target does not answer."""
    r = api("GET", proxy.url + "/v1/jobs/" + jid)
    if tolerate_down and r.status_code == 503:
        return None
    assert r.status_code == 200, r.text
    return r.json()


def wait_job(proxy, jid, timeout=240.0):
    def done():
        j = job(proxy, jid, tolerate_down=True)
        return j if j and j["state"] != "running" else None
    return helpers.wait_until(done, timeout=timeout, interval=0.2, what="job %s" % jid)


def shard(proxy, bucket, args, timeout=240.0):
    """Runs a shard job to its end; returns (create answer, final job view)."""
    r = start_shard(proxy, bucket, args)
    assert r.status_code == 201, r.text
    created = r.json()
    return created, wait_job(proxy, created["id"], timeout)


def list_names(proxy, bucket, prefix=""):
    names, token = [], None
    while True:
        q = "?limit=10000&prefix=" + urllib.parse.quote(prefix, safe="")
        if token:
            q += "&token=" + urllib.parse.quote(token, safe="")
        r = api("GET", proxy.url + "/v1/buckets/" + bucket + q)
        assert r.status_code == 200, r.text
        j = r.json()
        names += [e["name"] for e in j["entries"]]
        token = j.get("continuation_token")
        if not token:
            return names


# ---- the dataset ----

BIG = {123, 4567, 15000}  # samples whose .jpg is 1.5 MiB (larger than the fetch buffers)


def sample_keys(n=20000, prefix="d/"):
    """n keys; the last 20 have long (pax) unicode names."""
    keys = ["%s%05d" % (prefix, i) for i in range(n - 20)]
    keys += ["%szz-ünïcödé-%02d-%s" % (prefix, i, "y" * 130) for i in range(20)]
    return keys


def _h(name):
    return hashlib.blake2b(name.encode(), digest_size=32).digest()


def content(name):
    """The bytes of object `name` (a function of the name only)."""
    h = _h(name)
    ext = name.rsplit(".", 1)[-1]
    if ext == "cls":
        return str(int.from_bytes(h[:2], "big") % 1000).encode()
    if ext == "json":
        return json.dumps({"name": name, "v": h[:8].hex()}).encode()
    idx = name.rsplit("/", 1)[-1].split(".")[0]
    if idx.isdigit() and int(idx) in BIG:
        size = 1536 * 1024 + 7
    else:
        size = 100 + int.from_bytes(h[2:4], "big") % 6000
    block = hashlib.sha512(h).digest() * 2
    return (block * (size // len(block) + 1))[:size]


def dataset_names(keys):
    return [k + "." + ext for k in keys for ext in ("jpg", "cls", "json")]


def target_ids(cluster):
    return {t.health()["id"]: t for t in cluster.targets}


def bulk_put(cluster, bucket, names, threads=6, body=None):
    """PUTs every name straight to its HRW owner with a node signature (keep-alive); the
    bytes are content(name), or body(name)."""
    body = body or content
    ids = target_ids(cluster)
    owners = {}
    for n in names:
        owners.setdefault(hrw_owner("ais/@#/%s/%s" % (bucket, n), list(ids)), []).append(n)
    work = [(ids[tid], tid, n) for tid, ns in owners.items() for n in ns]
    chunks = [work[i::threads] for i in range(threads)]

    def run(items):
        conns = {}
        for t, tid, n in items:
            c = conns.get(t.port)
            if c is None:
                c = conns[t.port] = http.client.HTTPConnection(t.host, t.port, timeout=60)
            path = "/v1/objects/%s/%s" % (bucket, urllib.parse.quote(n))
            data = body(n)
            c.request("PUT", path, body=data, headers=node_headers(  # as the target itself
                "PUT", t.url + path, tid, tid, body=data))
            r = c.getresponse()
            answer = r.read()
            assert r.status == 200, (n, r.status, answer[:300])
        for c in conns.values():
            c.close()

    with ThreadPoolExecutor(threads) as ex:
        list(ex.map(run, chunks))


# ---- reading shards ----

def key_of(name):
    slash = name.rfind("/")
    dot = name.find(".", slash + 1)
    return name if dot < 0 else name[:dot]


def get_shard(proxy, bucket, name):
    r = api("GET", obj_url(proxy, bucket, name))
    assert r.status_code == 200, (name, r.status_code, r.text[:300])
    return r.content


def read_tar(data):
    """[(name, bytes, offset_data)] of a tar, read with Python's tarfile."""
    out = []
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tf:
        for m in tf:
            assert m.isfile(), m.name
            out.append((m.name, tf.extractfile(m).read(), m.offset_data))
    return out


def fetch_shards(proxy, bucket, names, threads=4):
    with ThreadPoolExecutor(threads) as ex:
        return dict(zip(names, ex.map(lambda n: get_shard(proxy, bucket, n), names)))
