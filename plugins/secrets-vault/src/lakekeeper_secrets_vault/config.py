"""``LAKEKEEPER__KV2__*``: where the Vault / OpenBao server is and how to log in (Lakekeeper §4.4).

Two spellings, as in Lakekeeper: nested keys (``LAKEKEEPER__KV2__URL``, ``__USER``, ``__PASSWORD``,
``__SECRET_MOUNT``) or one compound value
``LAKEKEEPER__KV2='{url=http://vault:8200,user=lakekeeper,password=...,secret_mount=kv}'``
(a JSON object works too). The section is read by the host as one raw value and parsed here, so
the compound form does not depend on the host's JSON-first section parser.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from attrs import field, frozen

from lakekeeper_host.config.load import parse_compound
from lakekeeper_host.config.types import Secret
from lakekeeper_host.registry import StartupError

_FIELDS = ("url", "user", "password", "secret_mount")


@frozen
class Kv2Config:
    url: str
    user: str
    password: Secret
    secret_mount: str


@frozen
class Kv2Settings:
    """The plugin's config class; ``kv2`` is the raw section (a mapping or the compound string)."""

    # the Vault / OpenBao server (userpass login, KV version 2): KV2__URL, __USER, __PASSWORD, __SECRET_MOUNT,
    # or all in one value (raw, so it may hold the password in clear: never part of the repr)
    # example: {url=http://vault:8200,user=lakekeeper,password=secret,secret_mount=kv}
    kv2: Any = field(default=None, repr=False)

    def require(self) -> Kv2Config:
        """The structured configuration, or a ``StartupError`` naming what is missing or wrong."""
        section = _as_mapping(self.kv2)
        missing = [f"LAKEKEEPER__KV2__{name.upper()}" for name in _FIELDS if not str(section.get(name) or "").strip()]
        if missing:
            raise StartupError(
                "LAKEKEEPER__SECRET_BACKEND=kv2 needs " + ", ".join(missing) + " (or the compound "
                "LAKEKEEPER__KV2='{url=...,user=...,password=...,secret_mount=...}')"
            )
        url = str(section["url"]).strip().rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise StartupError(f"LAKEKEEPER__KV2__URL: must be an http:// or https:// URL, got {url!r}")
        password = section["password"]
        return Kv2Config(
            url=url,
            user=str(section["user"]).strip(),
            password=password if isinstance(password, Secret) else Secret(str(password)),
            secret_mount=str(section["secret_mount"]).strip().strip("/"),
        )


def _as_mapping(value: Any) -> Mapping[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):
        text = value.strip()
        try:
            value = json.loads(text)
        except ValueError:
            try:
                value = parse_compound(text)
            except ValueError:
                raise StartupError(
                    "LAKEKEEPER__KV2: expected '{url=...,user=...,password=...,secret_mount=...}' or a JSON object"
                ) from None
    if not isinstance(value, Mapping):
        raise StartupError("LAKEKEEPER__KV2: expected a section with url, user, password and secret_mount")
    return {str(k).lower(): v for k, v in value.items()}
