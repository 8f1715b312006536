"""The endpoints a foreign SDK's checks run against (test_ruby_sdk.py, test_go_sdk.py): a
standalone target ("target"), the session cluster's relaying proxy ("proxy"), its proxy with
s3.redirect=true ("redirect"), or the proxy of a cache cluster whose S3-backed bucket has s3rver
upstream ("s3rver": write-through, with one object only the upstream holds, for cold reads)."""
import helpers
from cachefix import C_KEYS, HoardCluster
from conftest import _TARGETS, _empty_bucket

VARIANTS = ["target", "proxy", "redirect", "s3rver"]
COLD_KEY = "cold/one.bin"


def sdk_variant(request, tmp_path_factory, log_dir, tag, cold, run):
    """Generator for a module fixture: yields run(url, access_key, secret_key, bucket,
    new_bucket, cold_key) (a dict) for the variant request.param, in a bucket of its own, with
    "_kind" set and, for "s3rver", "_upstream": {key: sha256} of what s3rver then holds."""
    if request.param != "s3rver":
        ep = request.getfixturevalue("target" if request.param == "target" else "s3cluster")
        url = ep.redirect_proxy.url if request.param == "redirect" else ep.url
        s3 = helpers.boto3_client(ep)
        name = helpers.unique_bucket_name(tag)
        s3.create_bucket(Bucket=name)
        try:
            out = run(url, ep.access_key, ep.secret_key, name,
                      helpers.unique_bucket_name(tag + "new"), "")
            out["_kind"] = request.param
            yield out
        finally:
            _empty_bucket(s3, name)
        return
    request.getfixturevalue("profiles")
    up = request.getfixturevalue("s3rver")
    name = helpers.unique_bucket_name(tag + "up")
    upc = up.client()
    upc.create_bucket(Bucket=name)
    upc.put_object(Bucket=name, Key=COLD_KEY, Body=cold, Metadata={"origin": "upstream"})
    cache = HoardCluster(tag + "c", str(tmp_path_factory.mktemp(tag + "c")), log_dir, _TARGETS,
                         C_KEYS, ntargets=2, target_extra=["--upstream.retries", "1"])
    gen = cache.serve()
    next(gen)
    try:
        cache.create_cloud_bucket(name, up.url, "s3rver")
        out = run(cache.url, C_KEYS[0], C_KEYS[1], name, helpers.unique_bucket_name(tag + "new"),
                  COLD_KEY)
        out["_kind"] = "s3rver"
        listed = upc.list_objects_v2(Bucket=name).get("Contents", [])
        out["_upstream"] = {o["Key"]: helpers.sha256_hex(upc.get_object(
            Bucket=name, Key=o["Key"])["Body"].read()) for o in listed}
        yield out
    finally:
        next(gen, None)
