"""The ``adls`` profile and ``az`` credential JSON: Lakekeeper's fields, normalisation and 400s naming the field."""

from __future__ import annotations

import pytest

from lakekeeper_host.errors import CatalogError
from lakekeeper_storage_adls import AdlsProfile, ClientCredentialsCredential, SharedAccessKeyCredential
from lakekeeper_storage_adls.locations import AdlsLocation, canonical
from lakekeeper_testing.storage_conformance import StorageBuilder

PROFILE = {"type": "adls", "account-name": "myaccount", "filesystem": "warehouse", "key-prefix": "/lake/"}


@pytest.fixture(scope="module")
def builder() -> StorageBuilder:
    return StorageBuilder()


def test_lakekeepers_profile_json_parses_with_defaults(builder):
    profile = builder.parse_profile(PROFILE)
    assert isinstance(profile, AdlsProfile)
    assert profile.key_prefix == "lake"
    assert profile.sas_enabled is True and profile.sas_validity_seconds == 3600
    assert profile.allow_alternative_protocols is False and profile.sas_scope == "directory"
    assert profile.blob_endpoint == "https://myaccount.blob.core.windows.net"
    stored = builder.profile_to_json(profile)
    assert stored["type"] == "adls" and stored["account-name"] == "myaccount" and stored["key-prefix"] == "lake"


def test_the_azdls_alias_and_a_sovereign_cloud_host(builder):
    profile = builder.parse_profile({**PROFILE, "type": "azdls", "host": "https://DFS.core.chinacloudapi.cn/"})
    assert profile.host == "dfs.core.chinacloudapi.cn"
    assert profile.blob_endpoint == "https://myaccount.blob.core.chinacloudapi.cn"


def test_base_location_and_wasbs_aliases(builder):
    storage = builder.build(
        {**PROFILE, "allow-alternative-protocols": True},
        {"type": "az", "credential-type": "shared-access-key", "key": "a2V5"},
    )
    assert storage.base_location() == "abfss://warehouse@myaccount.dfs.core.windows.net/lake"
    assert storage.is_allowed_location("wasbs://warehouse@myaccount.blob.core.windows.net/lake/ns/t")
    assert not storage.is_allowed_location("abfss://warehouse@myaccount.dfs.core.windows.net/lake")  # the root
    strict = builder.build(PROFILE, {"type": "az", "credential-type": "shared-access-key", "key": "a2V5"})
    assert not strict.is_allowed_location("wasbs://warehouse@myaccount.blob.core.windows.net/lake/ns/t")


def test_location_parsing():
    location = AdlsLocation.parse("abfss://fs@acct.dfs.core.windows.net/a/b/")
    assert (location.filesystem, location.account, location.host, location.path) == (
        "fs", "acct", "dfs.core.windows.net", "a/b/"
    )  # fmt: skip
    assert location.dir_prefix == "a/b/"
    assert canonical("wasbs://fs@acct.blob.core.windows.net/a/") == "abfss://fs@acct.dfs.core.windows.net/a"
    for bad in ("abfss://acct.dfs.core.windows.net/a", "abfss://fs@/a", "s3://b/k"):
        with pytest.raises(ValueError):
            AdlsLocation.parse(bad)


def test_credentials_of_every_type(builder):
    key = builder.parse_credential("adls", {"type": "az", "credential-type": "shared-access-key", "key": "a2V5"})
    assert isinstance(key, SharedAccessKeyCredential) and repr(key.key) == "Secret('**********')"
    client = builder.parse_credential(
        "adls",
        {
            "type": "az",
            "credential-type": "client-credentials",
            "client-id": "c",
            "client-secret": "s",
            "tenant-id": "t",
        },
    )
    assert isinstance(client, ClientCredentialsCredential) and "s" not in repr(client.client_secret)


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ({"account-name": "ab"}, "account-name"),
        ({"filesystem": "-starts-with-hyphen"}, "filesystem"),
        ({"key-prefix": "x" * 600}, "key-prefix"),
        ({"sas-token-validity-seconds": 0}, "sas-token-validity-seconds"),
        ({"authority-host": "http://login.example.com"}, "authority-host"),
        ({"endpoint": "http://127.0.0.1:1/acct?x=1"}, "endpoint"),
    ],
)
def test_invalid_profiles_name_the_field(builder, override, field):
    with pytest.raises(CatalogError) as raised:
        builder.parse_profile({**PROFILE, **override})
    assert raised.value.code == 400 and f"storage-profile.{field}" in raised.value.message


def test_system_identity_is_refused_unless_the_deployment_allows_it():
    credential = {"type": "az", "credential-type": "azure-system-identity"}
    with pytest.raises(CatalogError) as raised:
        StorageBuilder().build(PROFILE, credential)
    assert "LAKEKEEPER__ENABLE_AZURE_SYSTEM_CREDENTIALS" in raised.value.message
    storage = StorageBuilder({"LAKEKEEPER__ENABLE_AZURE_SYSTEM_CREDENTIALS": "true"}).build(PROFILE, credential)
    assert storage.storage_type == "adls"
