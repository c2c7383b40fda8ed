"""The built-in ``file`` storage passes the storage conformance suite every storage plugin runs."""

from __future__ import annotations

import pytest

from lakekeeper_testing.storage_conformance import StorageCase, StorageConformance


class TestFileStorageConformance(StorageConformance):
    @pytest.fixture
    def storage_case(self, tmp_path) -> StorageCase:
        root = tmp_path / "warehouse"
        return StorageCase(
            profile={"type": "file", "root": str(root)},
            invalid_profiles=[({"type": "file", "root": "relative/dir"}, "root"), ({"type": "file"}, "root")],
            # the file storage takes no credential at all: any is refused, naming the field
            malformed_credentials=[({"type": "file", "key": "x"}, "storage-credential")],
            foreign_locations=[
                f"file://{tmp_path}/elsewhere/table",
                f"s3://bucket{root}/table",
                f"file://{root}/../escape/table",
            ],
            location_aliases=[
                (f"file:{root}/ns/t/", f"file://{root}/ns/t"),
                (f"file://{root}//ns/./t", f"file://{root}/ns/t"),
            ],
            environment={"LAKEKEEPER__FILE_STORAGE_ALLOWED_ROOTS": str(tmp_path)},
        )
