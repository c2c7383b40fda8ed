"""The inline STS session policy that scopes vended credentials to one table (Lakekeeper §2.5)."""

from __future__ import annotations

import json

from lakekeeper_host.service.storage import StoragePermission
from lakekeeper_storage_s3.locations import S3Location

_READ = ("s3:GetObject", "s3:GetObjectVersion")
_WRITE = ("s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts")
ACTIONS: dict[StoragePermission, tuple[str, ...]] = {
    StoragePermission.READ: _READ,
    StoragePermission.READ_WRITE: (*_READ, *_WRITE),
    StoragePermission.READ_WRITE_DELETE: (*_READ, "s3:PutObject", "s3:DeleteObject", *_WRITE[1:]),
}


def escape_iam_glob(value: str) -> str:
    """IAM treats ``*``, ``?`` and ``$`` in resources and StringLike values as patterns."""
    return "".join({"*": "${*}", "?": "${?}", "$": "${$}"}.get(c, c) for c in value)


def session_policy(
    table_location: S3Location, permission: StoragePermission, kms_key_arn: str | None = None
) -> str:
    bucket_arn = f"arn:aws:s3:::{table_location.bucket}"
    key = escape_iam_glob(table_location.dir_prefix)
    statements: list[dict] = [
        {
            "Sid": "TableAccess",
            "Effect": "Allow",
            "Action": list(ACTIONS[permission]),
            "Resource": [f"{bucket_arn}/{key}", f"{bucket_arn}/{key}*"],
        },
        {
            "Sid": "ListBucketForFolder",
            "Effect": "Allow",
            "Action": "s3:ListBucket",
            "Resource": bucket_arn,
            "Condition": {"StringLike": {"s3:prefix": f"{key}*"}},
        },
        # some clients ask for the bucket's region before their first data request
        {"Sid": "GetBucketLocation", "Effect": "Allow", "Action": "s3:GetBucketLocation", "Resource": bucket_arn},
    ]
    if kms_key_arn:
        statements.append(
            {
                "Sid": "KmsAccess",
                "Effect": "Allow",
                "Action": ["kms:Decrypt", "kms:GenerateDataKey"],
                "Resource": kms_key_arn,
            }
        )
    return json.dumps({"Version": "2012-10-17", "Statement": statements}, separators=(",", ":"))
