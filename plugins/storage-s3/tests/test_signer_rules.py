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
    copy_source,
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


def test_a_list_prefix_is_inside_only_below_the_tables_folder():
    table = "s3://bucket/wh/table"
    assert is_inside(ObjectLocation("bucket", "wh/table/", prefix=True), table)
    assert is_inside(ObjectLocation("bucket", "wh/table/data/0", prefix=True), table)
    assert not is_inside(ObjectLocation("bucket", "wh/table", prefix=True), table)  # lists wh/table-private/ too
    assert not is_inside(ObjectLocation("bucket", "wh/tab", prefix=True), table)
    assert not is_inside(ObjectLocation("bucket", "", prefix=True), "s3://bucket")


@pytest.mark.parametrize("segment", ["..", ".", "%2e%2e", "%2E%2E", "%2e.", ".%2E"])
def test_dot_segments_are_refused_everywhere(segment):
    uris = [
        (f"http://127.0.0.1/bucket/wh/t/{segment}/other/f", "PUT", None),
        (f"http://127.0.0.1/bucket?list-type=2&prefix=wh/t/{segment}/other/", "GET", None),
        ("http://127.0.0.1/bucket?delete", "POST", f"<Delete><Object><Key>wh/t/{segment}/o</Key></Object></Delete>"),
    ]
    for uri, method, body in uris:
        with pytest.raises(CatalogError) as excinfo:
            parse_request(uri, method, body, "auto")
        assert (excinfo.value.code, excinfo.value.type) == (400, "InvalidPathSegment"), uri
    assert not is_inside(ObjectLocation("bucket", f"wh/t/{segment}/x"), "s3://bucket/wh/t")


def test_copy_source_is_the_object_a_put_reads():
    assert copy_source({"x-amz-copy-source": ["/bucket/wh/t/a%20b?versionId=3"]}, "PUT") == ObjectLocation(
        "bucket", "wh/t/a b"
    )
    assert copy_source({"X-Amz-Copy-Source": ["bucket/k"]}, "put") == ObjectLocation("bucket", "k")
    assert copy_source({"User-Agent": ["x"]}, "PUT") is None
    for headers, method, error in [
        ({"x-amz-copy-source": ["/bucket/k"]}, "GET", "CopyNotSignable"),
        ({"x-amz-copy-source": ["/bucket/a", "/bucket/b"]}, "PUT", "InvalidHeaderValue"),
        ({"x-amz-copy-source": ["/bucket"]}, "PUT", "InvalidHeaderValue"),
        ({"x-amz-copy-source": ["/bucket/wh/%2e%2e/k"]}, "PUT", "InvalidPathSegment"),
    ]:
        with pytest.raises(CatalogError) as excinfo:
            copy_source(headers, method)
        assert excinfo.value.type == error, headers


def test_candidate_table_locations():
    candidates = ancestor_locations(ObjectLocation("b", "wh/t/f"))
    assert "s3://b/wh" in candidates and "s3://b/wh/t/" in candidates and "s3a://b/wh/t/f" in candidates
    assert ancestor_locations(ObjectLocation("b", "")) == []
