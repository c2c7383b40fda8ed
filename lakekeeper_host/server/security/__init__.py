"""Authentication (OIDC / Kubernetes tokens) and the S3 remote signer."""

from __future__ import annotations

