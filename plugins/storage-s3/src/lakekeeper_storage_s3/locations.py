"""``s3://bucket/key`` locations: parsing, canonical form and the scheme aliases."""

from __future__ import annotations

from attrs import frozen

S3_SCHEMES = ("s3", "s3a", "s3n")


class InvalidS3Location(ValueError):
    pass


@frozen
class S3Location:
    scheme: str
    bucket: str
    key: str  # no leading slash; "" for the bucket root

    @classmethod
    def parse(cls, location: str) -> S3Location:
        scheme, sep, rest = location.partition("://")
        if not sep or scheme.lower() not in S3_SCHEMES:
            raise InvalidS3Location(f"Not an S3 location: {location}")
        bucket, _, key = rest.partition("/")
        if not bucket:
            raise InvalidS3Location(f"S3 location without a bucket: {location}")
        return cls(scheme.lower(), bucket, key)

    def __str__(self) -> str:
        return f"{self.scheme}://{self.bucket}/{self.key}" if self.key else f"{self.scheme}://{self.bucket}"

    @property
    def dir_prefix(self) -> str:
        """The key prefix of everything below this location (``key/``, or ``""`` at the bucket root)."""
        key = self.key.strip("/")
        return f"{key}/" if key else ""

    def child(self, key: str) -> S3Location:
        return S3Location(self.scheme, self.bucket, key)

    def with_scheme(self, scheme: str) -> S3Location:
        return S3Location(scheme, self.bucket, self.key)


def canonical(location: str) -> str:
    """``s3a://b/k/`` -> ``s3://b/k``: what comparisons between locations use."""
    try:
        parsed = S3Location.parse(location)
    except InvalidS3Location:
        return location.rstrip("/")
    return str(S3Location("s3", parsed.bucket, parsed.key.rstrip("/")))


def scheme_of(location: str) -> str:
    return location.partition("://")[0].lower()
