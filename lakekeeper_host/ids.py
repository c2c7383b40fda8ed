"""Ids and clock readings every layer (and every plugin) may use."""

from __future__ import annotations

import os
import time


def now_ms() -> int:
    return int(time.time() * 1000)


def new_id() -> str:
    """UUIDv7-style ids: time-ordered, so keyset pagination and indexes stay local."""
    ms = now_ms()
    rand = int.from_bytes(os.urandom(10), "big") & ((1 << 74) - 1)
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | (rand >> 62) << 64 | 0b10 << 62 | (
        rand & ((1 << 62) - 1)
    )
    # str(uuid.UUID(int=value)), without building the UUID object (a request id per request)
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
