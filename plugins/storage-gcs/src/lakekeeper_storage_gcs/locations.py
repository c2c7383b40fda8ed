"""``gs://bucket/object-name`` locations: parsing and canonical form."""

from __future__ import annotations

from attrs import frozen

GCS_SCHEME = "gs"


class InvalidGcsLocation(ValueError):
    pass


@frozen
class GcsLocation:
    bucket: str
    name: str  # object name (or folder) without leading slash; "" for the bucket root

    @classmethod
    def parse(cls, location: str) -> GcsLocation:
        scheme, sep, rest = location.partition("://")
        if not sep or scheme.lower() != GCS_SCHEME:
            raise InvalidGcsLocation(f"Not a GCS location (gs://bucket/path): {location}")
        bucket, _, name = rest.partition("/")
        if not bucket:
            raise InvalidGcsLocation(f"GCS location without a bucket: {location}")
        return cls(bucket, name)

    def __str__(self) -> str:
        return f"gs://{self.bucket}/{self.name}" if self.name else f"gs://{self.bucket}"

    @property
    def dir_prefix(self) -> str:
        """The object-name prefix of everything below this location (``name/``, ``""`` at the bucket root)."""
        name = self.name.strip("/")
        return f"{name}/" if name else ""

    def child(self, name: str) -> GcsLocation:
        return GcsLocation(self.bucket, name)

    def join(self, *parts: str) -> GcsLocation:
        name = "/".join(p.strip("/") for p in (self.name, *parts) if p.strip("/"))
        return GcsLocation(self.bucket, name)


def canonical(location: str) -> str:
    """``GS://b/k/`` -> ``gs://b/k``: what comparisons between locations use."""
    try:
        parsed = GcsLocation.parse(location)
    except InvalidGcsLocation:
        return location.rstrip("/")
    return str(GcsLocation(parsed.bucket, parsed.name.rstrip("/")))
