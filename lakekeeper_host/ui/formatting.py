"""How the console writes values: one timestamp format (UTC, with the zone), sizes, counts, profiles."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from jinja2 import Undefined

TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S UTC"
_SIZE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def missing(value: Any) -> bool:
    """Nothing to show: None, empty text, or a key the template looked up in vain."""
    return value is None or isinstance(value, Undefined) or (isinstance(value, str) and value == "")


def to_datetime(value: Any) -> datetime | None:
    """Epoch milliseconds, an ISO-8601 text (``Z`` or an offset; none means UTC) or a datetime."""
    if missing(value) or isinstance(value, bool):
        return None
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, (int, float)) or (isinstance(value, str) and value.lstrip("-").isdigit()):
        moment = datetime.fromtimestamp(int(value) / 1000, UTC)
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
    else:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def timestamp(value: Any) -> str:
    """``2026-11-25 14:03:07 UTC``; ``—`` for none; an unreadable value as it is."""
    moment = to_datetime(value)
    if moment is None:
        return "—" if missing(value) else str(value)
    return moment.strftime(TIMESTAMP_FORMAT)


def epoch_ms(value: Any) -> int | None:
    moment = to_datetime(value)
    return None if moment is None else int(moment.timestamp() * 1000)


def size(value: Any) -> str:
    """Bytes as ``12.3 MiB``."""
    if missing(value):
        return "—"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    for unit in _SIZE_UNITS:
        if abs(number) < 1024 or unit == _SIZE_UNITS[-1]:
            return f"{number:.0f} {unit}" if unit == "B" else f"{number:.1f} {unit}"
        number /= 1024
    return str(value)  # pragma: no cover - the loop always returns


def count(value: Any) -> str:
    """A whole number with thousands separators (``1,500``)."""
    if missing(value):
        return "—"
    try:
        return f"{int(value):,}"
    except (TypeError, ValueError):
        return str(value)


def duration(seconds: Any) -> str:
    """Seconds as the largest whole units (``7 days``, ``1 hour 30 minutes``)."""
    try:
        left = int(seconds)
    except (TypeError, ValueError):
        return str(seconds)
    parts = []
    for unit, length in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        amount, left = divmod(left, length)
        if amount:
            parts.append(f"{amount} {unit}{'s' if amount != 1 else ''}")
        if len(parts) == 2:
            break
    return " ".join(parts) or "0 seconds"


def readable_fields(value: Any) -> list[tuple[str, str]]:
    """A storage or delete profile as (label, text) pairs: kebab-case keys as words, booleans as
    yes/no, nested objects flattened (``sts session tags · team``), nothing as JSON."""
    rows: list[tuple[str, str]] = []

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, dict):
            if not node and prefix:
                rows.append((prefix, "none"))
            for key, item in node.items():
                label = str(key).replace("-", " ")
                walk(f"{prefix} · {label}" if prefix else label, item)
        elif isinstance(node, (list, tuple)):
            rows.append((prefix, ", ".join(str(item) for item in node) or "none"))
        elif isinstance(node, bool):
            rows.append((prefix, "yes" if node else "no"))
        elif node is None:
            rows.append((prefix, "—"))
        else:
            rows.append((prefix, str(node)))

    walk("", value)
    return rows


def utc_now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def cell(value: Any, iceberg_type: str) -> str:
    """A value of a table (as the preview API answers it) in the console's format: timestamps with a space,
    those with a time zone in UTC and saying so (``timestamp`` has none: it is shown as stored)."""
    if not isinstance(value, str) or not iceberg_type.startswith("timestamp"):
        return str(value)
    if iceberg_type.startswith("timestamptz"):
        moment = to_datetime(value)
        if moment is not None:
            return moment.strftime("%Y-%m-%d %H:%M:%S") + (f".{moment.microsecond:06d}" if moment.microsecond else "") \
                + " UTC"
    return value.replace("T", " ", 1)
