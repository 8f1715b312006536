#!/usr/bin/python3
"""PyTorch sampler and dataset for hoard's epoch plans (docs/caching.md, "Epoch plans").

PlanSampler registers the job's plan with a hoard proxy (dataset = the objects under a prefix
of an S3-backed bucket, N epochs, a seed) and yields, each epoch, the dataset indices in the
plan's order (hoard_plan.epoch_order: the same permutation the targets prefetch by), split
across DDP ranks as DistributedSampler does (rank r reads positions r, r+W, ...). PlanDataset
reads sample i through the proxy (307 to the owning target, followed by requests) and tags
each GET with ?plan=ID so the targets follow the reader. Both work with DataLoader workers.

    sampler = PlanSampler(endpoint, "imagenet", "train/", epochs=90, seed=1234, plan_id="job-42")
    data = PlanDataset(endpoint, "imagenet", sampler.keys, plan_id="job-42")
    loader = DataLoader(data, batch_size=256, sampler=sampler, num_workers=8)
    for epoch in range(90):
        sampler.set_epoch(epoch)
        for batch in loader: ...

Register once per job: only rank 0 registers (registering an id again resets its progress);
the other ranks only read the plan's order. Needs python3-torch and python3-requests;
credentials as in hoard_webdataset.py (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY: SigV4).

    python3 hoard_plan_torch.py --endpoint http://127.0.0.1:8080 --bucket ds --prefix train/
"""
import argparse
import json
import os
import sys
import urllib.parse

import requests
import torch
from torch.utils.data import DataLoader, Dataset, Sampler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hoard_plan  # noqa: E402
from hoard_webdataset import default_auth  # noqa: E402


def list_keys(endpoint, bucket, prefix, auth=None):
    """The plan's dataset order: every object under prefix, sorted by UTF-8 bytes."""
    keys, token = [], None
    while True:
        q = {"prefix": prefix, "limit": "10000"}
        if token:
            q["token"] = token
        r = requests.get("%s/v1/buckets/%s?%s" % (endpoint, bucket, urllib.parse.urlencode(q)),
                         auth=auth, timeout=120)
        r.raise_for_status()
        doc = r.json()
        keys += [e["name"] for e in doc.get("entries", [])]
        token = doc.get("continuation_token")
        if not token:
            return sorted(keys, key=lambda k: k.encode())


class PlanSampler(Sampler):
    def __init__(self, endpoint, bucket, prefix, epochs, seed, plan_id, rank=None,
                 world_size=None, register=None, auth=None):
        self.endpoint, self.bucket, self.plan_id = endpoint.rstrip("/"), bucket, plan_id
        self.seed, self.epochs, self.epoch = seed, epochs, 0
        dist = torch.distributed.is_available() and torch.distributed.is_initialized()
        self.rank = rank if rank is not None else (torch.distributed.get_rank() if dist else 0)
        self.world = world_size if world_size is not None else (
            torch.distributed.get_world_size() if dist else 1)
        self.auth = auth if auth is not None else default_auth()
        self.keys = list_keys(self.endpoint, bucket, prefix, self.auth)
        if register if register is not None else self.rank == 0:
            r = requests.post(self.endpoint + "/v1/plans", auth=self.auth, timeout=600,
                              data=json.dumps({"id": plan_id, "bucket": bucket,
                                               "prefix": prefix, "epochs": epochs,
                                               "seed": seed}))
            if r.status_code != 201:
                raise RuntimeError("registering plan %s: %s" % (plan_id, r.text))
            if r.json()["total"] != len(self.keys):
                raise RuntimeError("the plan has %d objects, the listing %d"
                                   % (r.json()["total"], len(self.keys)))

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        order = hoard_plan.epoch_order(len(self.keys), self.seed, self.epoch)
        return iter(hoard_plan.rank_slice(order, self.rank, self.world))

    def __len__(self):
        return len(range(self.rank, len(self.keys), self.world))


class PlanDataset(Dataset):
    """Sample i = the bytes of keys[i], read through the proxy and tagged with the plan."""

    def __init__(self, endpoint, bucket, keys, plan_id, auth=None, timeout=120):
        self.endpoint, self.bucket, self.keys = endpoint.rstrip("/"), bucket, keys
        self.plan_id, self.timeout = plan_id, timeout
        self.auth = auth if auth is not None else default_auth()
        self.session = None  # one per DataLoader worker (created there)

    def __len__(self):
        return len(self.keys)

    def __getitem__(self, i):
        if self.session is None:
            self.session = requests.Session()
        url = "%s/v1/objects/%s/%s?plan=%s" % (self.endpoint, self.bucket,
                                               urllib.parse.quote(self.keys[i], safe="/"),
                                               urllib.parse.quote(self.plan_id))
        r = self.session.get(url, auth=self.auth, timeout=self.timeout)
        r.raise_for_status()
        return r.content


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--endpoint", default="http://127.0.0.1:8080")
    ap.add_argument("--bucket", required=True)
    ap.add_argument("--prefix", default="")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--plan", default="example-plan")
    ap.add_argument("--workers", type=int, default=4)
    a = ap.parse_args()
    sampler = PlanSampler(a.endpoint, a.bucket, a.prefix, a.epochs, a.seed, a.plan)
    data = PlanDataset(a.endpoint, a.bucket, sampler.keys, a.plan)
    loader = DataLoader(data, batch_size=None, sampler=sampler, num_workers=a.workers)
    for e in range(a.epochs):
        sampler.set_epoch(e)
        n = sum(len(x) for x in loader)
        print("epoch %d: %d samples, %d bytes" % (e, len(sampler), n))


if __name__ == "__main__":
    main()
