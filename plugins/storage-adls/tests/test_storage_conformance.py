"""The ADLS plugin passes the storage conformance suite against Azurite.

Two variants: SAS signed with the account key (Azurite over HTTP), and SAS signed with a
user-delegation key obtained with the machine's managed identity (Azurite over HTTPS with
``--oauth basic``; the identity endpoint is a local test double, see ``ManagedIdentityEndpoint``).

Azurite checks container SAS but not directory SAS (``sr=d``, which needs the ADLS Gen2
hierarchical namespace), so both variants use ``sas-scope: filesystem`` and the case "credentials
reach only the table" is skipped with that reason; ``test_storage_azurite.py`` shows Azurite
refusing directory SAS.
"""

from __future__ import annotations

import pytest
from azure.core.exceptions import ClientAuthenticationError, HttpResponseError, ResourceNotFoundError
from azure.storage.blob import ContainerClient

from lakekeeper_host.service.storage import TableConfig
from lakekeeper_storage_adls.locations import AdlsLocation
from lakekeeper_testing.services import Azurite
from lakekeeper_testing.storage_conformance import StorageCase, StorageConformance

FILESYSTEM = "lakekeeper"
SCOPE_NOTE = (
    "Azurite implements no directory-scoped SAS (sr=d, an ADLS Gen2 hierarchical-namespace feature), so "
    "these warehouses use sas-scope filesystem: a SAS covers the whole filesystem, not one table"
)


class VendedAdls:
    """Blob IO with nothing but the SAS of one ``TableConfig``."""

    def __init__(self, azurite: Azurite, config: TableConfig):
        credentials = config.storage_credentials[0]["config"]
        self._sas = credentials[f"adls.sas-token.{azurite.account}.dfs.core.windows.net"]
        self._azurite = azurite

    def _client(self, location: str) -> tuple[ContainerClient, str]:
        parsed = AdlsLocation.parse(location)
        kwargs = {"connection_verify": str(self._azurite.ca_path)} if self._azurite.https else {}
        client = ContainerClient(self._azurite.blob_endpoint, parsed.filesystem, credential=self._sas, **kwargs)
        return client, parsed.path

    def _call(self, operation, *args, **kwargs):
        try:
            return operation(*args, **kwargs)
        except ResourceNotFoundError as exc:
            raise FileNotFoundError(str(exc)) from exc
        except (ClientAuthenticationError, HttpResponseError) as exc:
            if isinstance(exc, ClientAuthenticationError) or exc.status_code == 403:
                raise PermissionError(str(exc).splitlines()[0]) from exc
            raise

    def write(self, location: str, data: bytes) -> None:
        client, name = self._client(location)
        self._call(client.upload_blob, name, data, overwrite=True)

    def read(self, location: str) -> bytes:
        client, name = self._client(location)
        return self._call(lambda: client.download_blob(name).readall())

    def list(self, prefix: str) -> list[str]:
        client, name = self._client(prefix)
        root = AdlsLocation.parse(prefix)
        names = self._call(lambda: [b.name for b in client.list_blobs(name_starts_with=name.rstrip("/") + "/")])
        return [str(root.child(item)) for item in names]

    def delete(self, location: str) -> None:
        client, name = self._client(location)
        self._call(client.delete_blob, name)


def _case(azurite: Azurite, profile: dict, credential: dict, **extra) -> StorageCase:
    key_prefix = profile["key-prefix"]
    wrong_key = "V3JvbmdLZXlXcm9uZ0tleVdyb25nS2V5V3JvbmdLZXk="
    return StorageCase(
        profile=profile,
        credential=credential,
        invalid_profiles=[
            ({**profile, "account-name": "Not-An-Account"}, "account-name"),
            ({**profile, "filesystem": "x"}, "filesystem"),
            ({**profile, "filesystem": "double--hyphen"}, "filesystem"),
            ({**profile, "sas-token-validity-seconds": 8 * 24 * 3600}, "sas-token-validity-seconds"),
            ({**profile, "host": "not a host"}, "host"),
            ({**profile, "endpoint": "ftp://example.com"}, "endpoint"),
            ({**profile, "sas-scope": "table"}, "sas-scope"),
            ({k: v for k, v in profile.items() if k != "filesystem"}, "filesystem"),
        ],
        malformed_credentials=[
            ({"type": "az", "credential-type": "shared-access-key"}, "key"),
            ({"type": "az", "credential-type": "shared-access-key", "key": "not base64!"}, "key"),
            (
                {"type": "az", "credential-type": "client-credentials", "client-id": "c", "tenant-id": "t"},
                "client-secret",
            ),
            ({"type": "az", "credential-type": "sas-token"}, "credential-type"),
            ({"type": "s3", "credential-type": "access-key"}, "storage-credential"),
        ],
        rejected_credential={"type": "az", "credential-type": "shared-access-key", "key": wrong_key},
        rejected_secrets=[wrong_key],
        foreign_locations=[
            f"abfss://other-fs@{azurite.account}.dfs.core.windows.net/{key_prefix}/table",
            f"abfss://{FILESYSTEM}@otheraccount.dfs.core.windows.net/{key_prefix}/table",
            f"s3://{FILESYSTEM}/{key_prefix}/table",
            # wasbs only with allow-alternative-protocols
            f"wasbs://{FILESYSTEM}@{azurite.account}.blob.core.windows.net/{key_prefix}/table",
        ],
        location_aliases=[
            (
                f"wasbs://{FILESYSTEM}@{azurite.account}.blob.core.windows.net/{key_prefix}/ns/t/",
                f"abfss://{FILESYSTEM}@{azurite.account}.dfs.core.windows.net/{key_prefix}/ns/t",
            ),
            (
                f"ABFSS://{FILESYSTEM}@{azurite.account.upper()}.DFS.core.windows.net/{key_prefix}/ns/t",
                f"abfss://{FILESYSTEM}@{azurite.account}.dfs.core.windows.net/{key_prefix}/ns/t",
            ),
        ],
        vended_io=lambda config: VendedAdls(azurite, config),
        vended_scope_note=SCOPE_NOTE,
        location_outside_store=f"abfss://other-fs@{azurite.account}.dfs.core.windows.net/{key_prefix}/x.parquet",
        **extra,
    )


class TestAdlsStorageConformance(StorageConformance):
    storage_cases = ("account_key_case", "user_delegation_case")

    @pytest.fixture
    def account_key_case(self, azurite, key_prefix, adls_profile, shared_key_credential) -> StorageCase:
        return _case(azurite, adls_profile(azurite, key_prefix), shared_key_credential(azurite))

    @pytest.fixture
    def user_delegation_case(
        self, azurite_oauth, managed_identity, key_prefix, adls_profile, monkeypatch
    ) -> StorageCase:
        for name, value in managed_identity.environment.items():
            monkeypatch.setenv(name, value)
        return _case(
            azurite_oauth,
            adls_profile(azurite_oauth, key_prefix),
            {"type": "az", "credential-type": "azure-system-identity"},
            environment={
                "LAKEKEEPER__ENABLE_AZURE_SYSTEM_CREDENTIALS": "true",
                "LAKEKEEPER__ADLS_CA_BUNDLE": str(azurite_oauth.ca_path),
            },
        )
