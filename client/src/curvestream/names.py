"""Names of projects, runs and metric keys, and the MQTT topics that carry them.

Metric keys arrive exactly as logged: any Unicode, ``/``, spaces, commas, ``=``
and quotes. Project and run names may hold the same characters; inside MQTT
topics they are percent-encoded where a topic cannot carry a character
(``/ + # %``, NUL and other control characters), which is reversible:

    >>> encode_segment("lr=0.1/bs 64")
    'lr=0.1%2Fbs 64'
    >>> decode_segment(encode_segment("a+b#c%d"))
    'a+b#c%d'
"""

from __future__ import annotations

import urllib.parse

__all__ = [
    "MAX_NAME_CHARS",
    "MAX_KEY_CHARS",
    "validate_name",
    "validate_key",
    "encode_segment",
    "decode_segment",
    "Topics",
]

MAX_NAME_CHARS = 1024
MAX_KEY_CHARS = 16384
PREFIX = "curvestream/v1"

_TOPIC_UNSAFE = frozenset("/+#%")


def _check_text(kind: str, value: object, limit: int) -> str:
    if not isinstance(value, str):
        raise TypeError(f"curvestream {kind} must be a str, got {type(value).__name__}: {value!r:.80}")
    if not value:
        raise ValueError(f"curvestream {kind} must not be empty")
    if len(value) > limit:
        raise ValueError(f"curvestream {kind} is {len(value)} characters long; at most {limit} are allowed")
    if "\x00" in value:
        raise ValueError(f"curvestream {kind} {value!r:.80} contains a NUL character, which no store can carry")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"curvestream {kind} {value!r:.80} is not valid Unicode (lone surrogate)") from None
    return value


def validate_name(kind: str, value: object) -> str:
    """Check a project or run name; return it unchanged."""
    return _check_text(kind, value, MAX_NAME_CHARS)


def validate_key(value: object) -> str:
    """Check a metric key; return it unchanged."""
    return _check_text("metric key", value, MAX_KEY_CHARS)


def encode_segment(name: str) -> str:
    out = []
    for ch in name:
        if ch in _TOPIC_UNSAFE or ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(urllib.parse.quote(ch, safe=""))
        else:
            out.append(ch)
    return "".join(out)


def decode_segment(segment: str) -> str:
    return urllib.parse.unquote(segment, errors="strict")


class Topics:
    """Topic names of the v1 contract.

    >>> Topics.points("mnist", "r1")
    'curvestream/v1/mnist/r1/points'
    >>> Topics.commit(bytes.fromhex("00ff"))
    'curvestream/v1/commit/00ff'
    """

    POINTS_FILTER = f"{PREFIX}/+/+/points"
    META_FILTER = f"{PREFIX}/+/+/meta"
    STATUS_FILTER = f"{PREFIX}/+/+/status"

    @staticmethod
    def _run(project: str, run: str, leaf: str) -> str:
        return f"{PREFIX}/{encode_segment(project)}/{encode_segment(run)}/{leaf}"

    @classmethod
    def points(cls, project: str, run: str) -> str:
        return cls._run(project, run, "points")

    @classmethod
    def meta(cls, project: str, run: str) -> str:
        return cls._run(project, run, "meta")

    @classmethod
    def status(cls, project: str, run: str) -> str:
        return cls._run(project, run, "status")

    @staticmethod
    def commit(producer_id: bytes) -> str:
        return f"{PREFIX}/commit/{producer_id.hex()}"

    @staticmethod
    def parse(topic: str) -> tuple[str, str, str] | None:
        """``(project, run, leaf)`` of a run topic, or None when it is not one."""
        parts = topic.split("/")
        if len(parts) != 5 or f"{parts[0]}/{parts[1]}" != PREFIX:
            return None
        try:
            return decode_segment(parts[2]), decode_segment(parts[3]), parts[4]
        except UnicodeDecodeError:
            return None
