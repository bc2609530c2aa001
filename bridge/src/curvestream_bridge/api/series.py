"""Series and the other per-key reads: ``/api/v1/runs/{project}/{run}/series``,
``/api/v1/series`` (several runs × keys), ``…/histograms``, ``…/texts``.

A series answers JSON, or the same numbers as binary columns when the
request's ``Accept`` names them (:mod:`curvestream_bridge.series_binary`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import JSONResponse, Response

from curvestream_bridge import series_binary
from curvestream_bridge.api.answer import GUARDED, answer
from curvestream_bridge.api.deps import READ, Api
from curvestream_bridge.api.models import (
    ApiHistogramsResponse,
    ApiSeriesManyResponse,
    ApiSeriesResponse,
    ApiTextsResponse,
)
from curvestream_bridge.api.paths import RUN_PAIRS_HELP, name, run_pairs
from curvestream_bridge.api.reads import in_thread, read_for
from curvestream_bridge.jsonnum import json_float, json_floats
from curvestream_bridge.store.base import SeriesQuery

__all__ = ["router"]

router = APIRouter(prefix="/api/v1", tags=["series"], dependencies=READ, responses=GUARDED)

XAxis = Literal["step", "time", "relative"]
Snap = Annotated[bool | None, Query(description="columns of whole grid units, the range widened to them (by at most "
                                                "1/16; start and end answer it), read from rollup rows alone; "
                                                "default: when the store reads them faster (InfluxDB)")]

_BINARY_ANSWER: dict[int | str, dict[str, Any]] = {200: {
    "description": "JSON, or binary columns when `Accept` names them (docs/http-api.md; the binary answer's "
                   "header is `ApiSeriesColumnsHeader` or `ApiSeriesManyColumnsHeader`)",
    "content": {series_binary.MEDIA_TYPE: {"schema": {"type": "string", "format": "binary"}}}}}


@router.get("/runs/{project}/{run}/series", response_model=ApiSeriesResponse, responses=_BINARY_ANSWER)
async def series(
    request: Request, api: Api, project: str, run: str,
    key: str = Query(..., description="metric key, exactly as logged"),
    x: XAxis = "step",
    start: float | None = None, end: float | None = None,
    width: int = Query(1000, ge=1, le=20000),
    snap: Snap = None,
) -> Response:
    """One series; JSON, or binary columns with ``Accept: application/vnd.curvestream.series``."""
    project, run = name(project), name(run)
    _check_range(start, end)
    q = SeriesQuery(project, run, key, x, start, end, width, _snap(api, snap))
    result = await read_for(request, api, api.reader.series, q)
    return _series_answer(request, [(q, result)], many=False)


@router.get("/series", response_model=ApiSeriesManyResponse, responses=_BINARY_ANSWER)
async def many_series(
    request: Request, api: Api,
    run: list[str] = Query(..., description=RUN_PAIRS_HELP),
    key: list[str] = Query(...),
    x: XAxis = "step",
    start: float | None = None, end: float | None = None,
    width: int = Query(1000, ge=1, le=20000),
    snap: Snap = None,
) -> Response:
    """Several runs × metrics in one request (for overlays), read from the store together:
    each answer is the single-series endpoint's. JSON, or binary columns (see above)."""
    pairs = run_pairs(run)
    _check_range(start, end)
    queries = [SeriesQuery(p, r, k, x, start, end, width, _snap(api, snap)) for p, r in pairs for k in key]
    results = await read_for(request, api, api.reader.series_many, queries)
    return _series_answer(request, list(zip(queries, results)), many=True)


@router.get("/runs/{project}/{run}/histograms", response_model=ApiHistogramsResponse)
async def histograms(api: Api, project: str, run: str, key: str,
                     limit: int = Query(200, ge=1, le=5000)) -> Response:
    project, run = name(project), name(run)
    rows = await in_thread(api.reader.histograms, project, run, key, limit)
    return answer({"project": project, "run": run, "key": key, "histograms": rows})


@router.get("/runs/{project}/{run}/texts", response_model=ApiTextsResponse)
async def texts(api: Api, project: str, run: str, key: str | None = None,
                limit: int = Query(500, ge=1, le=10000),
                after_ms: float | None = Query(None, description="only lines newer than this wall time")
                ) -> Response:
    project, run = name(project), name(run)
    rows = await in_thread(api.reader.texts, project, run, key, limit if after_ms is None else 10000)
    if after_ms is not None:
        rows = [r for r in rows if r["time_ms"] > after_ms][:limit]
    return answer({"project": project, "run": run, "texts": rows})


def _snap(api: Api, asked: bool | None) -> bool:
    """Whether a series query snaps its columns (see store/m4/snap.py): as asked, else as the store prefers."""
    return asked if asked is not None else bool(getattr(api.reader, "snaps_columns", False))


def _check_range(start: float | None, end: float | None) -> None:
    if start is not None and end is not None and end < start:
        raise HTTPException(422, "end must not be less than start")


def _series_header(q: SeriesQuery, result: Any) -> dict[str, Any]:
    """The JSON answer of one series without its points."""
    def point(i: int | None) -> dict[str, Any] | None:
        if i is None:
            return None
        return {"x": float(result.x[i]), "y": json_float(float(result.y[i])), "step": int(result.step[i]),
                "time_ms": float(result.wall_ns[i]) / 1e6}

    return {
        "project": q.project, "run": q.run, "key": q.key, "x": q.x,
        "start": result.start, "end": result.end, "width": q.width,
        "raw": bool(result.raw), "total": int(result.total),
        "points": None,
        "before": point(result.before),
        "after": point(result.after),
    }


def _series_columns(result: Any) -> dict[str, np.ndarray]:
    """The points of the range (the neighbours left out), as arrays."""
    lo = 1 if result.before is not None else 0
    hi = len(result.x) - (1 if result.after is not None else 0)
    return {"x": result.x[lo:hi], "y": result.y[lo:hi], "step": result.step[lo:hi],
            "time_ms": result.wall_ns[lo:hi] / 1e6}


def _series_json(q: SeriesQuery, result: Any) -> dict[str, Any]:
    out = _series_header(q, result)
    cols = _series_columns(result)
    out["points"] = {"x": cols["x"].tolist(), "y": json_floats(cols["y"]), "step": cols["step"].tolist(),
                     "time_ms": cols["time_ms"].tolist()}
    return out


def _series_answer(request: Request, answers: list[tuple[SeriesQuery, Any]], many: bool) -> Response:
    """JSON, or the binary columns when the request's ``Accept`` names them."""
    if series_binary.wants_binary(request.headers.get("accept")):
        headers = [_series_header(q, result) for q, result in answers]
        body = series_binary.encode({"series": headers} if many else headers[0],
                                    [_series_columns(result) for _, result in answers])
        return Response(body, media_type=series_binary.MEDIA_TYPE, headers={"Vary": "Accept"})
    out = [_series_json(q, result) for q, result in answers]
    return JSONResponse({"series": out} if many else out[0], headers={"Vary": "Accept"})
