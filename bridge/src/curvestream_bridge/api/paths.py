"""Names in paths: ``/api/v1/runs/{project}/{run}/…`` takes ``encodeURIComponent``
names, so a ``/`` inside a name arrives as ``%2F``. ASGI servers decode the
path before routing, which would split such a name; :class:`KeepEncodedSlashes`
rebuilds the path from the raw bytes with ``%`` and ``/`` inside a segment
still encoded, and :func:`name` decodes a path parameter exactly once.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from fastapi import HTTPException

__all__ = ["KeepEncodedSlashes", "name", "run_pairs", "RUN_PAIRS_HELP"]

RUN_PAIRS_HELP = "project/run pairs as 'project/run' (URL-encoded names joined by '/')"


class KeepEncodedSlashes:
    """ASGI middleware: keep ``%2F`` (and ``%25``) inside path segments encoded."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket") and scope.get("raw_path"):
            raw = scope["raw_path"].decode("latin-1").split("?", 1)[0]
            if "%" in raw:
                segments = [urllib.parse.unquote(s) for s in raw.split("/")]
                scope = dict(scope)
                scope["path"] = "/".join(s.replace("%", "%25").replace("/", "%2F") for s in segments)
        await self.app(scope, receive, send)


def name(value: str) -> str:
    """A project or run name from its path segment."""
    return urllib.parse.unquote(value)


def run_pairs(items: list[str]) -> list[tuple[str, str]]:
    """``project/run`` query values (each name URL-encoded) as (project, run) pairs."""
    pairs = []
    for item in items:
        p, sep, r = item.partition("/")
        if not sep:
            raise HTTPException(422, f"run must be 'project/run', got {item!r}")
        pairs.append((name(p), name(r)))
    return pairs
