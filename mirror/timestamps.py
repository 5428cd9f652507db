"""RFC 3339 timestamps compared as instants, in one canonical text form."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

# RFC 3339 date-time. [0-9] rather than \d: \d also matches non-ASCII digits, which SQL does not.
RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:\.([0-9]+))?([Zz]|[+-][0-9]{2}:[0-9]{2})"
)


def instant_key(text: str) -> str | None:
    """`YYYY-MM-DDTHH:MM:SS.fffffffff` in UTC for an RFC 3339 timestamp, or None if it is not one.

    Keys of equal instants are equal and keys sort as instants do, so comparing keys compares
    instants. Fractions are cut to 9 digits (protobuf Timestamp precision). store/db/filter_sql.py
    computes the same key in SQL; the rules here (years 1-9999, hours 0-23, offsets up to
    23:59, no leap seconds) are the ones it reproduces.
    """
    m = RFC3339.fullmatch(text)
    if m is None:
        return None
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    fraction, zone = m.group(7) or "", m.group(8)
    try:
        local = datetime(year, month, day, hour, minute, second)
        if zone in "Zz":
            utc = local
        else:
            off_h, off_m = int(zone[1:3]), int(zone[4:6])
            if off_h > 23 or off_m > 59:
                return None
            offset = timedelta(hours=off_h, minutes=off_m)
            utc = local - offset if zone[0] == "+" else local + offset
    except (ValueError, OverflowError):
        return None
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T"
        f"{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}.{fraction[:9].ljust(9, '0')}"
    )


def canonical_timestamp(text: str) -> str | None:
    """The canonical UTC form (`...Z`, no trailing fraction zeros) of an RFC 3339 timestamp."""
    key = instant_key(text)
    if key is None:
        return None
    seconds, _, fraction = key.partition(".")
    fraction = fraction.rstrip("0")
    return f"{seconds}.{fraction}Z" if fraction else f"{seconds}Z"


# A date alone, or a date and time without a zone (read as UTC), besides full RFC 3339.
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_LOCAL = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt ]([0-9]{2}):([0-9]{2})(?::([0-9]{2}))?")


def parse_instant(text: str, now: float) -> float:
    """Unix seconds of `--as-of` text: RFC 3339 (`2026-01-02T03:04:05Z`), a date and time read
    as UTC (`2026-01-02T03:04`), a date (its first instant, UTC), or a duration ago (`7d`)."""
    from datetime import UTC

    from .config import parse_duration
    from .errors import InvalidInput

    raw = text.strip()
    try:
        if RFC3339.fullmatch(raw):
            key = instant_key(raw)
            if key is None:
                raise ValueError(raw)
            return (
                datetime.strptime(key[:26], "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=UTC).timestamp()
            )
        for pattern in (_LOCAL, _DATE):
            m = pattern.fullmatch(raw)
            if m:
                y, mo, d, hh, mm, ss = (int(g or 0) for g in (*m.groups(), 0, 0, 0)[:6])
                return datetime(y, mo, d, hh, mm, ss, tzinfo=UTC).timestamp()
    except ValueError:
        raise InvalidInput(
            f"{text!r} is not a real date or time", hint="check the month, day and hour"
        ) from None
    try:
        return now - parse_duration(raw)
    except InvalidInput:
        raise InvalidInput(
            f"{text!r} is not a date, a time or a duration",
            hint="give 2026-01-02, 2026-01-02T15:04:05Z (RFC 3339; no zone means UTC) or 7d (ago)",
        ) from None
