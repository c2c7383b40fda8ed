"""The signer's request rules (lakekeeper_host/server/security/signer.py): URL styles, operations, bodies."""

from __future__ import annotations

import pytest

from lakekeeper_host.errors import CatalogError
from lakekeeper_host.server.security.signer import (
    DELETE,
    READ,
    WRITE,
    ObjectLocation,
    ancestor_locations,
    is_inside,
    parse_request,
)


def parsed(uri, method="GET", body=None, style="auto"):
    result = parse_request(uri, method, body, style)
    return result.operation, [(loc.bucket, loc.key) for loc in result.locations]


@pytest.mark.parametrize(
    ("uri", "style", "expected"),
    [
        ("http://127.0.0.1:9000/bucket/wh/t/data/f.parquet", "auto", ("bucket", "wh/t/data/f.parquet")),
        ("https://s3.us-east-1.amazonaws.com/bucket/file", "auto", ("bucket", "file")),
        ("https://bucket.s3.eu-central-1.amazonaws.com/wh/t/f", "auto", ("bucket", "wh/t/f")),
        ("https://bucket.s3-eu-central-1.amazonaws.com/f", "auto", ("bucket", "f")),
        ("https://my.bucket.s3.amazonaws.com/f", "auto", ("my.bucket", "f")),
        ("http://bucket.minio.local:9000/a/b", "virtual_host", ("bucket", "a/b")),
        ("http://s3.local/bucket/a/b", "path", ("bucket", "a/b")),
        ("http://127.0.0.1/bucket/a%20b/c%2Bd", "auto", ("bucket", "a b/c+d")),
    ],
)
def test_url_styles(uri, style, expected):
    assert parsed(uri, style=style) == (READ, [expected])


@pytest.mark.parametrize(
    ("method", "query", "operation"),
    [("GET", "", READ), ("HEAD", "", READ), ("PUT", "", WRITE), ("POST", "?uploads", WRITE), ("DELETE", "", DELETE)],
)
def test_methods_map_to_operations(method, query, operation):
    assert parsed(f"http://127.0.0.1/b/k{query}", method)[0] == operation


def test_other_methods_are_refused():
    with pytest.raises(CatalogError) as excinfo:
        parsed("http://127.0.0.1/b/k", "PATCH")
    assert excinfo.value.code == 405


def test_bulk_delete_names_every_key_of_the_body():
    body = (
        '<?xml version="1.0" encoding="UTF-8"?><Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
        "<Object><Key>wh/t/a.avro</Key></Object><Object><Key>wh/t/b.avro</Key><VersionId>1</VersionId></Object>"
        "<Quiet>true</Quiet></Delete>"
    )
    assert parsed("http://127.0.0.1/bucket?delete", "POST", body) == (
        DELETE,
        [("bucket", "wh/t/a.avro"), ("bucket", "wh/t/b.avro")],
    )


@pytest.mark.parametrize(
    ("body", "error"),
    [(None, "DeleteWithoutBody"), ("<Delete></Delete>", "InvalidDeleteBody"), ("not xml", "InvalidDeleteBody")],
)
def test_bad_bulk_delete_bodies(body, error):
    with pytest.raises(CatalogError) as excinfo:
        parsed("http://127.0.0.1/bucket?delete=", "POST", body)
    assert excinfo.value.type == error


def test_listing_is_checked_by_its_prefix():
    assert parsed("http://127.0.0.1/bucket?list-type=2&prefix=wh/t/metadata/") == (READ, [("bucket", "wh/t/metadata/")])
    assert parsed("http://127.0.0.1/bucket/?list-type=2") == (READ, [("bucket", "")])


@pytest.mark.parametrize("uri", ["ftp://host/b/k", "http://127.0.0.1/bucket-only"])
def test_unsignable_uris(uri):
    with pytest.raises(CatalogError) as excinfo:
        parsed(uri, "PUT")
    assert excinfo.value.code == 400


def test_inside_is_segment_aware_and_scheme_tolerant():
    table = "s3a://bucket/wh/table"
    assert is_inside(ObjectLocation("bucket", "wh/table/data/f"), table)
    assert is_inside(ObjectLocation("bucket", "wh/table"), table + "/")
    assert not is_inside(ObjectLocation("bucket", "wh/table2/f"), table)
    assert not is_inside(ObjectLocation("bucket", "wh/f"), table)
    assert not is_inside(ObjectLocation("other", "wh/table/f"), table)
    assert not is_inside(ObjectLocation("bucket", ""), table)


def test_candidate_table_locations():
    candidates = ancestor_locations(ObjectLocation("b", "wh/t/f"))
    assert "s3://b/wh" in candidates and "s3://b/wh/t/" in candidates and "s3a://b/wh/t/f" in candidates
    assert ancestor_locations(ObjectLocation("b", "")) == []
