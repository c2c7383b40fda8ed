"""The ``gcs`` profile and credential JSON: what is accepted, how it is normalised, what a 400 names."""

from __future__ import annotations

import json

import pytest

from lakekeeper_host.errors import CatalogError
from lakekeeper_host.serde import structure_body
from lakekeeper_host.service.storage import StoragePermission
from lakekeeper_storage_gcs import GcsCredential, GcsProfile, GcsServiceAccountKeyCredential
from lakekeeper_storage_gcs.locations import GcsLocation
from lakekeeper_storage_gcs.sts import access_boundary


def profile(**fields) -> GcsProfile:
    return structure_body({"bucket": "my-bucket", **fields}, GcsProfile)


def test_profile_defaults_and_normalisation():
    parsed = profile(**{"key-prefix": "/warehouse/iceberg/"})
    assert parsed.key_prefix == "warehouse/iceberg"
    assert parsed.sts_enabled is True  # Lakekeeper's default
    assert profile(**{"key-prefix": "/"}).key_prefix is None
    assert profile(bucket="logs.example.com").bucket == "logs.example.com"
    assert profile(bucket="under_score-1").bucket == "under_score-1"


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"bucket": "ab"}, "storage-profile.bucket"),
        ({"bucket": "UPPER"}, "storage-profile.bucket"),
        ({"bucket": "-dash-first"}, "storage-profile.bucket"),
        ({"bucket": "192.168.1.10"}, "storage-profile.bucket"),
        ({"bucket": "goog-storage"}, "storage-profile.bucket"),
        ({"bucket": "a" * 64}, "storage-profile.bucket"),
        ({"key-prefix": "a//b"}, "storage-profile.key-prefix"),
        ({"key-prefix": "line\nbreak"}, "storage-profile.key-prefix"),
        ({"key-prefix": "x" * 900}, "storage-profile.key-prefix"),
    ],
)
def test_bad_profiles_name_the_field(fields, named):
    with pytest.raises(CatalogError) as raised:
        profile(**fields)
    assert raised.value.code == 400 and named in raised.value.message


def test_service_account_key_as_object_or_pasted_string(service_account_key):
    as_object = structure_body({"credential-type": "service-account-key", "key": service_account_key}, GcsCredential)
    assert isinstance(as_object, GcsServiceAccountKeyCredential)
    assert as_object.key.client_email == service_account_key["client_email"]
    assert "PRIVATE KEY" not in repr(as_object)  # the private key is a Secret
    assert as_object.key.info() == service_account_key
    as_string = structure_body(
        {"credential-type": "service-account-key", "key": json.dumps(service_account_key)}, GcsCredential
    )
    assert as_string == as_object


def test_access_boundary_escapes_quotes_in_paths():
    boundary = access_boundary(GcsLocation("b", "wh/it's"), StoragePermission.READ)
    expression = boundary["accessBoundary"]["accessBoundaryRules"][0]["availabilityCondition"]["expression"]
    assert "objects/wh/it\\'s/'" in expression


def test_openapi_describes_the_key_file_with_its_own_field_names():
    from lakekeeper_host.api.openapi_schemas import Schemas

    schemas = Schemas()
    schemas.of(GcsCredential)
    key = schemas.collected["GcsServiceAccountKeyCredential"]["properties"]["key"]
    assert {"project_id", "private_key", "client_email", "token_uri"} <= set(key["required"])
    assert key["properties"]["private_key"]["writeOnly"] is True
