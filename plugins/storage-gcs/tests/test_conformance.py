"""The GCS plugin passes the storage conformance suite on a real fake-gcs-server.

Tokens come from the local STS test double (sts_double.py). fake-gcs-server checks no tokens, so
``VendedGcs`` asks the double what Google would decide for the vended token (the roles and prefix
condition of its access boundary) before it sends a request, and raises ``PermissionError`` where
Google would answer 403; the requests it lets through go to fake-gcs-server with the vended token
alone. The scope cases therefore test the boundary the plugin writes against Google's rules for
it, and the IO against a real GCS API.
"""

from __future__ import annotations

import pytest

from lakekeeper_host.service.storage import TableConfig
from lakekeeper_testing.storage_conformance import StorageCase, StorageConformance

from .conftest import BUCKET, gcs_env


class VendedGcs:
    """Object IO with nothing but the token of one ``TableConfig``, held to Google's boundary rules."""

    def __init__(self, sts, config: TableConfig):
        from google.cloud import storage
        from google.oauth2.credentials import Credentials

        credentials = config.storage_credentials[0]["config"]
        self._sts = sts
        self._token = credentials["gcs.oauth2.token"]
        self._client = storage.Client(
            project=credentials["gcs.project-id"],
            credentials=Credentials(self._token),
            client_options={"api_endpoint": credentials["gcs.service.host"]},
        )

    def _check(self, action: str, location: str) -> tuple[str, str]:
        bucket, _, name = location.removeprefix("gs://").partition("/")
        if not self._sts.allows(self._token, action, bucket, name):
            raise PermissionError(f"{action} {location}: outside the token's access boundary")
        return bucket, name

    def write(self, location: str, data: bytes) -> None:
        bucket, name = self._check("create", location)
        self._client.bucket(bucket).blob(name).upload_from_string(data)

    def read(self, location: str) -> bytes:
        from google.api_core.exceptions import NotFound

        bucket, name = self._check("get", location)
        try:
            return self._client.bucket(bucket).blob(name).download_as_bytes()
        except NotFound as exc:
            raise FileNotFoundError(location) from exc

    def list(self, prefix: str) -> list[str]:
        bucket, name = self._check("list", prefix.rstrip("/") + "/")
        return [f"gs://{bucket}/{blob.name}" for blob in self._client.list_blobs(bucket, prefix=name)]

    def delete(self, location: str) -> None:
        bucket, name = self._check("delete", location)
        self._client.bucket(bucket).blob(name).delete()


class TestGcsStorageConformance(StorageConformance):
    @pytest.fixture
    def storage_case(self, fake_gcs, sts, gcs_profile, gcs_credential, stranger_key, key_prefix) -> StorageCase:
        profile = gcs_profile()
        stranger = stranger_key
        key = gcs_credential["key"]
        return StorageCase(
            profile=profile,
            credential=gcs_credential,
            invalid_profiles=[
                ({**profile, "bucket": "Not_A_Bucket"}, "storage-profile.bucket"),
                ({**profile, "bucket": "google-data"}, "storage-profile.bucket"),
                ({**profile, "key-prefix": "a/../b"}, "storage-profile.key-prefix"),
                ({k: v for k, v in profile.items() if k != "bucket"}, "bucket"),
            ],
            malformed_credentials=[
                ({"type": "gcs", "credential-type": "service-account-key"}, "storage-credential.key"),
                (
                    {**gcs_credential, "key": {k: v for k, v in key.items() if k != "private_key"}},
                    "storage-credential.key.private_key",
                ),
                ({**gcs_credential, "key": {**key, "private_key": "not a PEM"}}, "storage-credential.key.private_key"),
                ({"type": "gcs", "credential-type": "hmac"}, "storage-credential.credential-type"),
            ],
            # well formed, but its signature does not verify at the token endpoint
            rejected_credential={**gcs_credential, "key": stranger},
            rejected_secrets=[stranger["private_key"], stranger["private_key"].splitlines()[1]],
            foreign_locations=[
                f"gs://other-bucket/{key_prefix}/table",
                f"s3://{BUCKET}/{key_prefix}/table",
                f"abfss://{BUCKET}@account.dfs.core.windows.net/{key_prefix}/table",
            ],
            location_aliases=[(f"GS://{BUCKET}/{key_prefix}/ns/t/", f"gs://{BUCKET}/{key_prefix}/ns/t")],
            vended_io=lambda config: VendedGcs(sts, config),
            location_outside_store=f"gs://other-bucket/{key_prefix}/x.parquet",
            environment=gcs_env(fake_gcs.endpoint, sts),
        )
