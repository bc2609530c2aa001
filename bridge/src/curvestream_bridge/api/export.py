"""``GET /api/v1/runs/{project}/{run}/export?format=parquet|csv|binary&key=…``:
every point of a run's scalar series (the keys given, or all of them),
streamed (docs/http-api.md).

``binary`` is sent page by page as the store yields them, so a client reads
while the bridge reads; an error after the first byte ends the stream with an
error frame (:mod:`curvestream_bridge.export.binary`). Parquet and CSV are
written whole first (a Parquet file's footer is only known at its end,
:mod:`curvestream_bridge.export.files`), then streamed; an error while
writing them answers 503 before any byte is sent.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from typing import Literal

from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import Response, StreamingResponse
from starlette.concurrency import iterate_in_threadpool

from curvestream_wire import pointstream

from curvestream_bridge.api.answer import GUARDED
from curvestream_bridge.api.deps import READ, Api
from curvestream_bridge.api.models import ApiError
from curvestream_bridge.api.paths import name
from curvestream_bridge.api.reads import in_thread
from curvestream_bridge.export.binary import binary_stream
from curvestream_bridge.export.files import FORMATS, write_file

__all__ = ["router"]

router = APIRouter(prefix="/api/v1", tags=["series"], dependencies=READ, responses=GUARDED)

_MEDIA = {**FORMATS, "binary": pointstream.MEDIA_TYPE}
_ANSWERS: dict[int | str, dict] = {
    200: {"description": "The file (columns key, step, time_ns, value), or binary frames (docs/http-api.md)",
          "content": {m.split(";")[0]: {"schema": {"type": "string", "format": "binary"}} for m in _MEDIA.values()}},
    404: {"model": ApiError, "description": "No key given and the run has no scalar series"},
    503: {"model": ApiError, "description": "The store is unavailable: try again after Retry-After"},
}


@router.get("/runs/{project}/{run}/export", response_class=Response, responses=_ANSWERS)
async def export(api: Api, project: str, run: str, format: Literal["parquet", "csv", "binary"] = "parquet",
                 key: list[str] | None = Query(None, description="metric keys, exactly as logged (repeated); "
                                                                  "default: every scalar key of the run")
                 ) -> Response:
    """Every point of the run's scalar series, never downsampled: Parquet or CSV with columns
    key, step, time_ns, value; or `binary` frames (curvestream_wire.pointstream)."""
    project, run = name(project), name(run)
    keys = key
    if not keys:
        keys = [m.key for m in await in_thread(api.reader.metrics, project, run) if m.kind == "scalar"]
        if not keys:
            raise HTTPException(404, f"{project}/{run} has no scalar series")
    headers = {"Content-Disposition": f"attachment; {_filename(run, format)}"}
    if format == "binary":
        body: Iterator[bytes] = binary_stream(api.reader, project, run, keys)
    else:
        pieces = write_file(keys, lambda k: api.reader.points(project, run, k), format)
        first = await in_thread(next, pieces, b"")  # the whole file is written here: errors get their status
        body = _chain(first, pieces)
    return StreamingResponse(iterate_in_threadpool(body), media_type=_MEDIA[format], headers=headers)


def _chain(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    if first:
        yield first
    yield from rest


def _filename(run: str, fmt: str) -> str:
    safe = "".join(c if (c.isascii() and c.isalnum()) or c in "-_.=" else "_" for c in run)[:100] or "run"
    ext = "bin" if fmt == "binary" else fmt
    return f"filename=\"{safe}.{ext}\"; filename*=UTF-8''{urllib.parse.quote(run, safe='')}.{ext}"
