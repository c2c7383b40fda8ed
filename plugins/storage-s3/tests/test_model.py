"""Profile and credential JSON: what a user may send, how it is normalised, what is refused."""

from __future__ import annotations

import pytest

from lakekeeper_host.errors import CatalogError
from lakekeeper_host.serde import WIRE, structure_body
from lakekeeper_storage_s3 import S3AccessKeyCredential, S3Credential, S3Profile, S3SystemIdentityCredential


def profile(**body):
    return structure_body({"bucket": "my-bucket", "region": "us-east-1", **body}, S3Profile)


def refused(cls, body) -> CatalogError:
    with pytest.raises(CatalogError) as excinfo:
        structure_body(body, cls)
    assert excinfo.value.code == 400
    return excinfo.value


def test_minimal_profile_gets_lakekeeper_defaults():
    p = profile()
    assert (p.key_prefix, p.endpoint, p.flavor, p.sts_enabled) == (None, None, "aws", False)
    assert p.sts_token_validity_seconds == 3600
    assert p.push_s3_delete_disabled and p.remote_signing_enabled
    assert p.remote_signing_url_style == "auto"


def test_profile_is_normalised_like_lakekeeper():
    p = profile(**{
        "key-prefix": " /iceberg/warehouse/ ",
        "endpoint": "http://minio:9000/my-bucket",  # consoles show the bucket in the API URL
        "flavor": "minio",
        "s3-url-detection-mode": "virtual-host",
        "assume-role-arn": "  ",
    })
    assert p.key_prefix == "iceberg/warehouse"
    assert p.endpoint == "http://minio:9000/"
    assert p.flavor == "s3-compat"
    assert p.remote_signing_url_style == "virtual_host"
    assert p.assume_role_arn is None
    wire = WIRE.unstructure(p)
    assert wire["key-prefix"] == "iceberg/warehouse" and wire["remote-signing-url-style"] == "virtual_host"


def test_normalised_profile_round_trips():
    p = profile(**{"key-prefix": "a/b", "endpoint": "https://s3.example.com", "sts-session-tags": {"team": "x"}})
    assert structure_body(WIRE.unstructure(p), S3Profile) == p


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"bucket": "Upper"}, "bucket"),
        ({"bucket": "a..b"}, "bucket"),
        ({"bucket": "192.168.1.1"}, "bucket"),
        ({"region": "US East"}, "region"),
        ({"endpoint": "ftp://host"}, "endpoint"),
        ({"endpoint": "http://host/some/path"}, "endpoint"),
        ({"flavor": "gcs"}, "flavor"),
        ({"remote-signing-url-style": "sideways"}, "remote-signing-url-style"),
        ({"key-prefix": "k" * 900}, "key-prefix"),
    ],
)
def test_invalid_profiles_name_the_field(body, field):
    error = refused(S3Profile, {"bucket": "my-bucket", "region": "us-east-1", **body})
    assert error.type == "InvalidStorageProfile"
    assert f"storage-profile.{field}" in error.message


def test_aws_flavor_with_sts_needs_a_role():
    error = refused(S3Profile, {"bucket": "my-bucket", "region": "us-east-1", "sts-enabled": True})
    assert "sts-role-arn" in error.message
    assumed = profile(**{"sts-enabled": True, "assume-role-arn": "arn:aws:iam::1:role/r"})
    assert assumed.vended_role_arn == "arn:aws:iam::1:role/r"
    assert profile(**{"sts-enabled": True, "flavor": "s3-compat"}).vended_role_arn is None


def test_json_types_are_strict():
    error = refused(S3Profile, {"bucket": "my-bucket", "region": "us-east-1", "sts-enabled": "true"})
    assert "sts-enabled" in error.message


@pytest.mark.parametrize(
    "keys",
    [
        {"aws-access-key-id": "AKIA1", "aws-secret-access-key": "s3cr3t"},  # as the seeds send it
        {"access-key-id": "AKIA1", "secret-access-key": "s3cr3t"},
    ],
)
def test_access_key_credential_accepts_both_spellings(keys):
    credential = structure_body({"credential-type": "access-key", "external-id": "ext", **keys}, S3Credential)
    assert isinstance(credential, S3AccessKeyCredential)
    assert credential.aws_access_key_id == "AKIA1"
    assert credential.aws_secret_access_key.get() == "s3cr3t"
    assert credential.external_id == "ext"
    assert "s3cr3t" not in repr(credential)


def test_system_identity_credential():
    credential = structure_body({"credential-type": "aws-system-identity"}, S3Credential)
    assert isinstance(credential, S3SystemIdentityCredential) and credential.external_id is None


@pytest.mark.parametrize(
    "body",
    [
        {"credential-type": "access-key", "aws-access-key-id": "AKIA1"},
        {"credential-type": "access-key", "aws-access-key-id": 5, "aws-secret-access-key": "x"},
        {"credential-type": "cloudflare-r2", "access-key-id": "a", "secret-access-key": "b"},
        {"aws-access-key-id": "a", "aws-secret-access-key": "b"},
    ],
)
def test_bad_credentials_are_400(body):
    assert refused(S3Credential, body).type == "InvalidStorageCredential"
