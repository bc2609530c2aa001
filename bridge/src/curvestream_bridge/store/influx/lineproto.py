"""Line protocol and InfluxQL text, built so that no name can break out.

Tag values (project, run, metric key) may hold any Unicode. Line protocol
cannot carry a newline in a tag at all and treats backslashes unevenly across
versions, so tag values are first made safe by a reversible percent-encoding
of ``%``, ``\\`` and control characters, then commas, ``=`` and spaces are
backslash-escaped as line protocol wants. What InfluxDB stores (and returns
from queries) is the percent-encoded form; :func:`decode_tag` reverses it.

    >>> encode_tag('val/loss, top-1 = "x"\\n')
    'val/loss\\\\,\\\\ top-1\\\\ \\\\=\\\\ "x"%0A'
    >>> decode_tag(stored_tag('a\\\\b%'))
    'a\\\\b%'
    >>> influxql_string("it's")
    "'it\\\\'s'"
"""

from __future__ import annotations

import json
import urllib.parse

from curvestream_wire.names import percent_encode

__all__ = ["stored_tag", "encode_tag", "decode_tag", "string_field", "influxql_string", "influxql_ident"]


_TAG_UNSAFE = frozenset("%\\")


def stored_tag(value: str) -> str:
    """The form InfluxDB stores: ``%``, ``\\`` and control characters percent-encoded."""
    return percent_encode(value, _TAG_UNSAFE)


def encode_tag(value: str) -> str:
    """A tag value (or tag key) as it goes into a line."""
    return stored_tag(value).replace(",", "\\,").replace("=", "\\=").replace(" ", "\\ ")


def decode_tag(stored: str) -> str:
    return urllib.parse.unquote(stored, errors="strict")


def string_field(value: str) -> str:
    """A string field value: JSON text (ASCII, no raw newlines) inside quotes, with
    line protocol's two escapes. Read it back with ``json.loads``."""
    text = json.dumps(value, ensure_ascii=True)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def influxql_string(value: str) -> str:
    """A single-quoted InfluxQL string literal of a stored tag value."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def influxql_ident(name: str) -> str:
    """A double-quoted identifier (always quoted: ``series``, ``key`` and friends are keywords)."""
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
