"""Ids and clock readings every layer (and every plugin) may use."""

from __future__ import annotations

import time
import uuid


def now_ms() -> int:
    return int(time.time() * 1000)


def new_id() -> str:
    """UUIDv7-style ids: time-ordered, so keyset pagination and indexes stay local."""
    ms = now_ms()
    rand = uuid.uuid4().int & ((1 << 74) - 1)
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | (rand >> 62) << 64 | 0b10 << 62 | (
        rand & ((1 << 62) - 1)
    )
    return str(uuid.UUID(int=value))
