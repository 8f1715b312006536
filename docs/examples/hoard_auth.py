"""SigV4 for native (/v1) requests to a hoard proxy with `requests`, shared by the examples
(needs python3-botocore; torch is not needed here)."""
import os


class SigV4:
    """requests auth: SigV4 for the first hop only (requests drops Authorization on the
    redirect to another host; the target trusts the proxy's signature in the Location)."""

    def __init__(self, access_key, secret_key, region="us-east-1"):
        from botocore.auth import SigV4Auth
        from botocore.credentials import Credentials
        self.auth = SigV4Auth(Credentials(access_key, secret_key), "s3", region)

    def __call__(self, r):
        from botocore.awsrequest import AWSRequest
        req = AWSRequest(method=r.method, url=r.url,
                         headers={"x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
        self.auth.add_auth(req)
        r.headers.update(dict(req.headers.items()))
        return r


def default_auth():
    """SigV4 with AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (AWS_REGION), or None."""
    ak, sk = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
    return SigV4(ak, sk, os.environ.get("AWS_REGION", "us-east-1")) if ak and sk else None
