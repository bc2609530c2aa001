"""Name rules of projects, runs and metric keys, and their reversible encodings.

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
    "percent_encode",
]

MAX_NAME_CHARS = 1024
MAX_KEY_CHARS = 16384
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


def percent_encode(value: str, unsafe: frozenset[str]) -> str:
    """Percent-encode the characters in ``unsafe`` and every control character;
    ``urllib.parse.unquote`` reverses it.

    >>> percent_encode("a%b\\n", frozenset("%"))
    'a%25b%0A'
    """
    out = []
    for ch in value:
        if ch in unsafe or ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(urllib.parse.quote(ch, safe=""))
        else:
            out.append(ch)
    return "".join(out)


def encode_segment(name: str) -> str:
    """A name as one MQTT topic level."""
    return percent_encode(name, _TOPIC_UNSAFE)


def decode_segment(segment: str) -> str:
    return urllib.parse.unquote(segment, errors="strict")
