"""The S3 plugin passes the storage conformance suite against a real SeaweedFS with STS.

Vended credentials are the plugin's STS session credentials; SeaweedFS enforces the session policy
the plugin attaches, so the scope cases test what AWS would enforce.
"""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from lakekeeper_host.service.storage import TableConfig
from lakekeeper_testing.storage_conformance import StorageCase, StorageConformance

pytestmark = pytest.mark.s3

BUCKET = "lakekeeper"
_DENIED = {"AccessDenied", "403", "Forbidden"}
_MISSING = {"NoSuchKey", "404", "NotFound"}


class VendedS3:
    """Object IO with nothing but the STS credentials of one ``TableConfig``."""

    def __init__(self, seaweed, config: TableConfig):
        credentials = config.storage_credentials[0]["config"]
        self._client = seaweed.client(
            aws_access_key_id=credentials["s3.access-key-id"],
            aws_secret_access_key=credentials["s3.secret-access-key"],
            aws_session_token=credentials["s3.session-token"],
        )

    @staticmethod
    def _split(location: str) -> tuple[str, str]:
        bucket, _, key = location.removeprefix("s3://").partition("/")
        return bucket, key

    def _call(self, operation, **kwargs):
        try:
            return operation(**kwargs)
        except ClientError as exc:
            code = exc.response["Error"]["Code"]
            if code in _DENIED:
                raise PermissionError(code) from exc
            if code in _MISSING:
                raise FileNotFoundError(code) from exc
            raise

    def write(self, location: str, data: bytes) -> None:
        bucket, key = self._split(location)
        self._call(self._client.put_object, Bucket=bucket, Key=key, Body=data)

    def read(self, location: str) -> bytes:
        bucket, key = self._split(location)
        return self._call(self._client.get_object, Bucket=bucket, Key=key)["Body"].read()

    def list(self, prefix: str) -> list[str]:
        bucket, key = self._split(prefix)
        page = self._call(self._client.list_objects_v2, Bucket=bucket, Prefix=key.rstrip("/") + "/")
        return [f"s3://{bucket}/{item['Key']}" for item in page.get("Contents", [])]

    def delete(self, location: str) -> None:
        bucket, key = self._split(location)
        self._call(self._client.delete_object, Bucket=bucket, Key=key)


class TestS3StorageConformance(StorageConformance):
    @pytest.fixture
    def storage_case(self, seaweed, s3_profile, s3_credential, key_prefix) -> StorageCase:
        profile = s3_profile(**{"allow-alternative-protocols": True})
        wrong_secret = "wrong-secret-" + key_prefix
        return StorageCase(
            profile=profile,
            credential=s3_credential,
            invalid_profiles=[
                ({**profile, "bucket": "Not_A_Bucket"}, "bucket"),
                ({**profile, "region": "Not A Region"}, "region"),
                ({**profile, "endpoint": "ftp://example.com"}, "endpoint"),
                ({k: v for k, v in profile.items() if k != "bucket"}, "bucket"),
            ],
            malformed_credentials=[
                ({"type": "s3", "credential-type": "access-key", "aws-access-key-id": "x"}, "aws-secret-access-key"),
                ({"type": "s3", "credential-type": "password"}, "credential-type"),
            ],
            rejected_credential={**s3_credential, "aws-secret-access-key": wrong_secret},
            rejected_secrets=[wrong_secret],
            foreign_locations=[
                f"s3://other-bucket/{key_prefix}/table",
                f"gs://{BUCKET}/{key_prefix}/table",
                f"abfss://{BUCKET}@account.dfs.core.windows.net/{key_prefix}/table",
            ],
            location_aliases=[
                (f"s3a://{BUCKET}/{key_prefix}/ns/t/", f"s3://{BUCKET}/{key_prefix}/ns/t"),
                (f"s3n://{BUCKET}/{key_prefix}/ns/t", f"s3://{BUCKET}/{key_prefix}/ns/t"),
            ],
            vended_io=lambda config: VendedS3(seaweed, config),
            location_outside_store=f"s3://other-bucket/{key_prefix}/x.parquet",
        )
