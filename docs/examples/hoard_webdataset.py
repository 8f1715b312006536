#!/usr/bin/python3
"""Reading hoard shards (WebDataset tars) into PyTorch.

HoardShards is a torch IterableDataset: it lists the shards of a bucket through a hoard
proxy, splits them across DataLoader workers (and across ranks when torch.distributed is
initialised), streams each shard with one HTTP GET (the proxy answers 307 and `requests`
follows it to the target that holds the shard, which serves it with sendfile), and yields
one dict per sample, WebDataset style:

    {"__key__": "train/000123", "__url__": "...", "jpg": b"...", "cls": 7, "json": {...}}

Files of a sample sit next to each other in the tar (hoard's shard jobs guarantee it), so a
sample is complete as soon as the key changes. Decoding: .cls/.idx/.id -> int, .txt -> str,
.json -> object, anything else stays bytes (decode images in your transform, e.g. PIL).

Needs only Debian's python3-torch and python3-requests (python3-botocore for signed
requests). Credentials: a bucket with the anonymous_read property needs none; otherwise set
AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY and requests to the proxy are SigV4-signed (the
redirected request to the target carries the proxy's signature instead).

    python3 hoard_webdataset.py --endpoint http://127.0.0.1:8080 --bucket shards --prefix train-

The same shards work with the webdataset library through a pipe URL:

    wds.WebDataset("pipe:curl -L -s http://127.0.0.1:8080/v1/objects/shards/train-{000000..000099}.tar")
"""
import argparse
import hashlib
import json
import os
import sys
import tarfile
import time
import urllib.parse

import requests
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

# SigV4 stays importable from here (hoard_webdataset.SigV4)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hoard_auth import SigV4, default_auth  # noqa: E402,F401

INT_EXTS = ("cls", "cls2", "idx", "id", "index")


def split_key(name):
    """WebDataset's rule: the key is the name up to the first dot of its last component."""
    slash = name.rfind("/")
    dot = name.find(".", slash + 1)
    if dot < 0:
        return name, ""
    return name[:dot], name[dot + 1:]


def decode(ext, data):
    if ext in INT_EXTS:
        return int(data.decode().strip())
    if ext == "txt":
        return data.decode()
    if ext == "json":
        return json.loads(data)
    return data


class HoardShards(IterableDataset):
    """Samples of the shards `bucket/prefix*suffix` behind a hoard proxy."""

    def __init__(self, endpoint, bucket, prefix="", suffix=".tar", shards=None, auth=None,
                 decode_samples=True, timeout=60):
        super().__init__()
        self.endpoint = endpoint.rstrip("/")
        self.bucket = bucket
        self.prefix = prefix
        self.suffix = suffix
        self.auth = auth
        self.decode_samples = decode_samples
        self.timeout = timeout
        self.shards = list(shards) if shards is not None else self.list_shards()

    def _url(self, path):
        return self.endpoint + path

    def list_shards(self):
        names, token = [], None
        with requests.Session() as s:
            while True:
                q = {"prefix": self.prefix, "limit": "10000"}
                if token:
                    q["token"] = token
                url = self._url("/v1/buckets/%s?%s" % (
                    urllib.parse.quote(self.bucket, safe=""),
                    urllib.parse.urlencode(q, quote_via=urllib.parse.quote)))
                r = s.get(url, auth=self.auth, timeout=self.timeout)
                r.raise_for_status()
                page = r.json()
                names += [e["name"] for e in page.get("entries", [])
                          if e["name"].endswith(self.suffix)]
                token = page.get("continuation_token")
                if not token:
                    return sorted(names)

    def my_shards(self):
        """This worker's share: shards i with i % total == index, over ranks x workers."""
        rank, world = 0, 1
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
        info = get_worker_info()
        wid, nw = (info.id, info.num_workers) if info else (0, 1)
        return self.shards[rank * nw + wid::world * nw]

    def shard_url(self, name):
        return self._url("/v1/objects/%s/%s" % (urllib.parse.quote(self.bucket, safe=""),
                                               urllib.parse.quote(name)))

    def samples_of(self, session, name):
        url = self.shard_url(name)
        with session.get(url, auth=self.auth, stream=True, timeout=self.timeout) as r:
            r.raise_for_status()
            sample = None
            with tarfile.open(fileobj=r.raw, mode="r|") as tf:  # streaming: no seeks
                for m in tf:
                    if not m.isfile():
                        continue
                    key, ext = split_key(m.name)
                    data = tf.extractfile(m).read()
                    if sample is not None and key != sample["__key__"]:
                        yield sample
                        sample = None
                    if sample is None:
                        sample = {"__key__": key, "__url__": url}
                    sample[ext] = decode(ext, data) if self.decode_samples else data
            if sample is not None:
                yield sample

    def __iter__(self):
        with requests.Session() as s:
            for name in self.my_shards():
                yield from self.samples_of(s, name)


def main():
    ap = argparse.ArgumentParser(description="Read hoard shards through a PyTorch DataLoader.")
    ap.add_argument("--endpoint", default=os.environ.get("HOARD_ENDPOINT",
                                                         "http://127.0.0.1:8080"))
    ap.add_argument("--bucket", required=True)
    ap.add_argument("--prefix", default="")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--dump", help="write one line per sample: key, ext=sha256 ... (JSON)")
    a = ap.parse_args()

    ds = HoardShards(a.endpoint, a.bucket, a.prefix, auth=default_auth(), decode_samples=False)
    loader = DataLoader(ds, batch_size=None, num_workers=a.workers)
    t0, n, nbytes = time.monotonic(), 0, 0
    out = open(a.dump, "w") if a.dump else None
    for sample in loader:
        n += 1
        parts = {k: v for k, v in sample.items() if not k.startswith("__")}
        nbytes += sum(len(v) for v in parts.values())
        if out:
            out.write(json.dumps({"key": sample["__key__"], "files": {
                k: hashlib.sha256(v).hexdigest() for k, v in parts.items()}}) + "\n")
    if out:
        out.close()
    secs = time.monotonic() - t0
    print(json.dumps({"shards": len(ds.shards), "samples": n, "bytes": nbytes,
                      "seconds": round(secs, 3),
                      "samples_per_s": round(n / secs, 1) if secs > 0 else None}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
