#!/usr/bin/python3
"""Checkpoints through a hoard write-back bucket (docs/caching.md, "Write-back buckets").

A training job saves its model with torch.save into an S3-backed hoard bucket whose
write_policy is `back`: each save returns as soon as the checkpoint is durable on the owning
target (local disk speed), and the targets copy it to the upstream in the background while
training goes on. At the end of training one flush waits until everything is upstream; the
checkpoint is then loaded back from the upstream directly, without hoard:

    s3 = boto3.client("s3", endpoint_url="http://hoard-proxy:8080", ...)
    for step in ...:
        save_checkpoint(s3, "ckpt", "run7/step-%06d.pt" % step, model.state_dict())
    flush("http://hoard-proxy:8080", "ckpt", "run7/")          # hoard bucket flush --wait
    state = load_checkpoint(upstream_s3, "ckpt", "run7/step-000900.pt")
    model.load_state_dict(state)

With python3-torch the state is a torch.nn model's state_dict (torch.save / torch.load);
without torch (or with --no-torch) the same flow runs with pickle over a dict of lists, which
is what hoard's test suite runs. Needs python3-boto3 and python3-requests.

Credentials: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY for hoard (S3 API and the SigV4-signed
native API); UPSTREAM_ACCESS_KEY_ID / UPSTREAM_SECRET_ACCESS_KEY for the upstream (default:
the same).

    python3 hoard_checkpoint.py --endpoint http://127.0.0.1:8080 --bucket ckpt --prefix run7/ \\
        --upstream http://127.0.0.1:9000 --steps 3
"""
import argparse
import hashlib
import io
import os
import pickle
import sys
import time

import boto3
import requests
from boto3.s3.transfer import TransferConfig
from botocore.config import Config

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hoard_auth import default_auth  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

# parts of 64 MiB, 4 at a time: a multi-GB checkpoint goes as an S3 multipart upload, and the
# upstream later gets the same parts (so the same ETag)
TRANSFER = TransferConfig(multipart_threshold=64 << 20, multipart_chunksize=64 << 20,
                          max_concurrency=4)


def s3_client(endpoint, access_key=None, secret_key=None):
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, region_name=os.environ.get("AWS_REGION", "us-east-1"),
        aws_access_key_id=access_key, aws_secret_access_key=secret_key,
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))


def serialize(state, use_torch):
    buf = io.BytesIO()
    if use_torch:
        torch.save(state, buf)
    else:
        pickle.dump(state, buf, protocol=pickle.HIGHEST_PROTOCOL)
    buf.seek(0)
    return buf


def deserialize(data, use_torch):
    if use_torch:
        return torch.load(io.BytesIO(data), map_location="cpu")
    return pickle.loads(data)


def save_checkpoint(s3, bucket, key, state, use_torch=torch is not None):
    """torch.save(state) to s3://bucket/key through hoard; returns the bytes written. On a
    write-back bucket it returns once the checkpoint is durable on the owning target."""
    buf = serialize(state, use_torch)
    n = buf.getbuffer().nbytes
    s3.upload_fileobj(buf, bucket, key, Config=TRANSFER)  # closes buf
    return n


def flush(endpoint, bucket, prefix="", auth=None, timeout=3600):
    """Waits until every object of bucket (under prefix) written before the call is upstream:
    the flush job of the native API (as `hoard bucket flush B --prefix P --wait`)."""
    endpoint = endpoint.rstrip("/")
    r = requests.post(endpoint + "/v1/jobs", auth=auth, timeout=60,
                      json={"kind": "flush", "bucket": bucket,
                            "args": {"prefix": prefix} if prefix else {}})
    r.raise_for_status()
    job = r.json()["id"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        j = requests.get(endpoint + "/v1/jobs/" + job, auth=auth, timeout=60).json()
        if j.get("state") not in (None, "running"):
            if j["state"] != "done":
                raise RuntimeError("flush %s ended %s: %s" % (job, j["state"], j.get("errors")))
            return j
        time.sleep(0.5)
    raise TimeoutError("flush %s still running after %d s" % (job, timeout))


def load_checkpoint(s3, bucket, key, use_torch=torch is not None):
    """torch.load of s3://bucket/key (here: read from the upstream directly)."""
    return deserialize(s3.get_object(Bucket=bucket, Key=key)["Body"].read(), use_torch)


def make_state(step, use_torch):
    """A model's state after `step` steps: a real torch.nn model with torch, else lists."""
    if use_torch:
        torch.manual_seed(step)
        model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(),
                                    torch.nn.Linear(256, 10))
        return {"step": step, "model": model.state_dict()}
    rnd = hashlib.sha256(b"step-%d" % step).digest()
    return {"step": step, "model": {"w%d" % i: list(rnd * 512) for i in range(4)}}


def same(a, b, use_torch):
    if not use_torch:
        return a == b
    return a["step"] == b["step"] and all(torch.equal(a["model"][k], b["model"][k])
                                          for k in a["model"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--endpoint", required=True, help="hoard proxy URL")
    ap.add_argument("--bucket", required=True, help="an S3-backed bucket, write_policy back")
    ap.add_argument("--prefix", default="run/")
    ap.add_argument("--upstream", required=True, help="the bucket's upstream endpoint URL")
    ap.add_argument("--steps", type=int, default=3, help="checkpoints to write")
    ap.add_argument("--no-torch", action="store_true", help="pickle even if torch is there")
    a = ap.parse_args()
    use_torch = torch is not None and not a.no_torch
    hoard = s3_client(a.endpoint, os.environ.get("AWS_ACCESS_KEY_ID"),
                      os.environ.get("AWS_SECRET_ACCESS_KEY"))
    upstream = s3_client(
        a.upstream,
        os.environ.get("UPSTREAM_ACCESS_KEY_ID", os.environ.get("AWS_ACCESS_KEY_ID")),
        os.environ.get("UPSTREAM_SECRET_ACCESS_KEY", os.environ.get("AWS_SECRET_ACCESS_KEY")))
    states = {}
    for step in range(1, a.steps + 1):
        key = "%sstep-%06d.pt" % (a.prefix, step)
        states[key] = make_state(step, use_torch)
        t0 = time.monotonic()
        n = save_checkpoint(hoard, a.bucket, key, states[key], use_torch)
        print("saved %s: %d bytes (%s), acknowledged in %.2f s"
              % (key, n, "torch" if use_torch else "pickle", time.monotonic() - t0))
    t0 = time.monotonic()
    j = flush(a.endpoint, a.bucket, a.prefix, auth=default_auth())
    print("flush %s: done in %.2f s" % (j.get("id", ""), time.monotonic() - t0))
    bad = 0
    for key, state in states.items():
        ok = same(state, load_checkpoint(upstream, a.bucket, key, use_torch), use_torch)
        bad += not ok
        print("loaded %s from the upstream: %s" % (key, "identical" if ok else "DIFFERENT"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
