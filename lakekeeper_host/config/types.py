"""Value types used in configuration: secrets that never print, and durations."""

from __future__ import annotations

import re
from datetime import timedelta

from attrs import frozen


@frozen(repr=False)
class Secret:
    """A secret value; its repr and str are redacted so config objects are safe to log."""

    value: str

    def __repr__(self) -> str:
        return "Secret('**********')"

    __str__ = __repr__

    def get(self) -> str:
        return self.value


_ISO = re.compile(
    r"^P(?:(?P<d>\d+(?:\.\d+)?)D)?(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?"
    r"(?:(?P<s>\d+(?:\.\d+)?)S)?)?$",
    re.IGNORECASE,
)
_SIMPLE = re.compile(r"^(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>ms|s|m|h|d)?$", re.IGNORECASE)
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}


def parse_duration(value: str | int | float | timedelta) -> timedelta:
    """ISO-8601 (``PT30M``, Lakekeeper's form), ``30s``/``500ms``, or plain seconds."""
    if isinstance(value, timedelta):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return timedelta(seconds=value)
    text = str(value).strip()
    match = _SIMPLE.match(text)
    if match:
        unit = match["unit"].lower() if match["unit"] else None
        return timedelta(seconds=float(match["n"]) * _UNIT_SECONDS[unit])
    match = _ISO.match(text)
    if match and text.upper() not in ("P", "PT"):
        parts = {k: float(v) for k, v in match.groupdict().items() if v}
        return timedelta(
            days=parts.get("d", 0),
            hours=parts.get("h", 0),
            minutes=parts.get("m", 0),
            seconds=parts.get("s", 0),
        )
    raise ValueError(f"not a duration: {value!r} (use ISO-8601 like PT30M, or 30s / 500ms)")


def format_duration(value: timedelta) -> str:
    """ISO-8601 without weeks, as Lakekeeper advertises ``idempotency-key-lifetime``."""
    total = int(value.total_seconds())
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    out = "PT"
    if hours:
        out += f"{hours}H"
    if minutes:
        out += f"{minutes}M"
    if seconds or out == "PT":
        out += f"{seconds}S"
    return out
