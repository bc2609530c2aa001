"""The HTTP API (see docs/http-api.md), the WebSocket and the page.

Names in paths: ``/api/v1/runs/{project}/{run}/…`` takes ``encodeURIComponent``
names, so a ``/`` inside a name arrives as ``%2F``. ASGI servers decode the
path before routing, which would split such a name; :class:`_KeepEncodedSlashes`
rebuilds the path from the raw bytes with ``%`` and ``/`` inside a segment
still encoded, and :func:`_name` decodes a path parameter exactly once.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import pathlib
import urllib.parse
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from fastapi import Depends, FastAPI, HTTPException, Query, Request, WebSocket
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles

from curvestream_bridge import series_binary
from curvestream_bridge.decode import Rejected
from curvestream_bridge.jsonnum import json_float, json_floats
from curvestream_bridge.replay import replay_parked as replay_parked_batches
from curvestream_bridge.store.base import SeriesQuery, StoreUnavailable
from curvestream_bridge.store.cancel import CANCEL, ReadCancel

if TYPE_CHECKING:
    from curvestream_bridge.service import Bridge

__all__ = ["create_app"]

STATIC_DIR = pathlib.Path(__file__).parent / "static"


class _KeepEncodedSlashes:
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


def _name(value: str) -> str:
    return urllib.parse.unquote(value)


def _run_pairs(items: list[str]) -> list[tuple[str, str]]:
    """``project/run`` query values (each name URL-encoded) as (project, run) pairs."""
    pairs = []
    for item in items:
        p, sep, r = item.partition("/")
        if not sep:
            raise HTTPException(422, f"run must be 'project/run', got {item!r}")
        pairs.append((_name(p), _name(r)))
    return pairs


def _series_header(project: str, run: str, key: str, q: SeriesQuery, result: Any) -> dict[str, Any]:
    """The JSON answer of one series without its points."""
    def point(i: int | None) -> dict[str, Any] | None:
        if i is None:
            return None
        return {"x": float(result.x[i]), "y": json_float(float(result.y[i])), "step": int(result.step[i]),
                "time_ms": float(result.wall_ns[i]) / 1e6}

    return {
        "project": project, "run": run, "key": key, "x": q.x,
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


def _series_json(project: str, run: str, key: str, q: SeriesQuery, result: Any) -> dict[str, Any]:
    out = _series_header(project, run, key, q, result)
    cols = _series_columns(result)
    out["points"] = {"x": cols["x"].tolist(), "y": json_floats(cols["y"]), "step": cols["step"].tolist(),
                     "time_ms": cols["time_ms"].tolist()}
    return out


def _series_answer(request: Request, answers: list[tuple[str, str, str, SeriesQuery, Any]], many: bool) -> Any:
    """JSON, or the binary columns when the request's ``Accept`` names them (:mod:`.series_binary`)."""
    if series_binary.wants_binary(request.headers.get("accept")):
        headers = [_series_header(*a) for a in answers]
        body = series_binary.encode({"series": headers} if many else headers[0],
                                    [_series_columns(a[-1]) for a in answers])
        return Response(body, media_type=series_binary.MEDIA_TYPE, headers={"Vary": "Accept"})
    out = [_series_json(*a) for a in answers]
    return JSONResponse({"series": out} if many else out[0], headers={"Vary": "Accept"})


_BINARY_ANSWER: dict[int | str, dict[str, Any]] = {200: {
    "description": "JSON, or binary columns when `Accept` names them (docs/http-api.md)",
    "content": {"application/json": {}, series_binary.MEDIA_TYPE: {"schema": {"type": "string", "format": "binary"}}}}}


def create_app(bridge: "Bridge") -> FastAPI:
    settings = bridge.settings

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> Any:
        bridge.live.start()
        yield
        await bridge.live.stop()

    app = FastAPI(title="curvestream bridge", version="0.1.0", lifespan=lifespan,
                  description="Training curves: runs, metrics, pixel-exact M4 series, ingest and live push.")
    app.add_middleware(_KeepEncodedSlashes)

    def _check(request: Request | WebSocket, token: str) -> None:
        if not token:
            return
        header = request.headers.get("authorization", "")
        given = header[7:] if header.lower().startswith("bearer ") else request.query_params.get("token", "")
        if not given:
            raise HTTPException(401, "missing bearer token", headers={"WWW-Authenticate": "Bearer"})
        if not hmac.compare_digest(given.encode(), token.encode()):
            raise HTTPException(403, "wrong token")

    def can_read(request: Request) -> None:
        _check(request, settings.read_token)

    def can_write(request: Request) -> None:
        _check(request, settings.write_token)

    async def in_thread(fn: Any, *args: Any) -> Any:
        try:
            return await asyncio.to_thread(fn, *args)
        except StoreUnavailable as exc:
            raise HTTPException(503, f"store unavailable: {exc}", headers={"Retry-After": "2"}) from None

    async def read_for(request: Request, fn: Any, *args: Any) -> Any:
        """``fn(*args)`` in a thread, stopped if the client goes away meanwhile (a page
        that zoomed again aborts the request before): then 499 (nginx's "client
        closed request"), which nobody receives."""
        gone = ReadCancel()

        def run() -> Any:
            CANCEL.set(gone)  # this thread's copy of the context
            return fn(*args)

        task = asyncio.ensure_future(in_thread(run))
        while not task.done():
            await asyncio.wait({task}, timeout=0.05)
            if not task.done() and await request.is_disconnected():
                gone.set()
                bridge.metrics.inc("curvestream_series_reads_cancelled_total")
                break
        try:
            return await task
        except Exception:
            if gone.is_set():
                raise HTTPException(499, "the client went away") from None
            raise

    @app.get("/healthz", tags=["ops"])
    def healthz() -> dict[str, Any]:
        return {"ok": True}

    @app.get("/readyz", tags=["ops"])
    def readyz() -> Response:
        store_ok = bridge.store.ping()
        mqtt_ok = bridge.subscriber is None or bridge.subscriber.connected
        ingest = bridge.ingest
        writing = not ingest.unexpected_error  # else the writer is retrying a write that failed unexpectedly
        body = {"store": store_ok, "mqtt": mqtt_ok, "ingest_healthy": ingest.healthy and writing,
                "unexpected_store_error": ingest.unexpected_error or ingest.last_unexpected_error or None,
                "parked_batches": ingest.parked.count if ingest.parked is not None else 0}
        return JSONResponse(body, status_code=200 if store_ok and mqtt_ok and writing else 503)

    @app.get("/metrics", tags=["ops"], response_class=PlainTextResponse)
    def metrics() -> PlainTextResponse:
        return PlainTextResponse(bridge.metrics.render(), media_type="text/plain; version=0.0.4")

    @app.get("/api/v1/runs", tags=["runs"], dependencies=[Depends(can_read)])
    async def runs(request: Request, project: str | None = None, tag: str | None = None,
                   group: str | None = None, state: str | None = None) -> dict[str, Any]:
        records = await in_thread(bridge.store.runs)
        firing: dict[tuple[str, str], int] = {}
        for a in bridge.alerts.engine.alerts(state="firing") if bridge.alerts is not None else []:
            firing[(a.project, a.run)] = firing.get((a.project, a.run), 0) + 1
        config_filters = {k[7:]: v for k, v in request.query_params.items() if k.startswith("config.")}
        wanted = []
        for r in records:
            if project is not None and r.project != project:
                continue
            if tag is not None and tag not in r.tags:
                continue
            if group is not None and r.group != group:
                continue
            if state is not None and r.state != state:
                continue
            if any(not _config_matches(r.config, k, v) for k, v in config_filters.items()):
                continue
            wanted.append(r)
        # a finished run whose tail is still in its trainer's spool: how many batches are missing
        pending = await in_thread(lambda: [bridge.tails.pending_batches(r.project, r.run) for r in wanted])
        out = [{**r.to_json(), "pending_batches": p, "alerts_firing": firing.get((r.project, r.run), 0),
                **_clock_json(bridge.ingest.clocks.of_run(r.project, r.run))}
               for r, p in zip(wanted, pending)]
        return {"runs": out}

    @app.get("/api/v1/alerts", tags=["alerts"], dependencies=[Depends(can_read)])
    def alerts(project: str | None = None, run: str | None = None,
               state: Literal["firing", "resolved"] | None = None) -> dict[str, Any]:
        """Alerts of the alert engine (docs/alerts.md), oldest first."""
        engine = bridge.alerts.engine if bridge.alerts is not None else None
        found = engine.alerts(project, run, state) if engine is not None else []
        return {"alerts": [a.to_json() for a in found]}

    @app.get("/api/v1/runs/{project}/{run}/metrics", tags=["runs"], dependencies=[Depends(can_read)])
    async def metrics_of_run(project: str, run: str) -> dict[str, Any]:
        project, run = _name(project), _name(run)
        records = await in_thread(bridge.store.metrics, project, run)
        return {"project": project, "run": run, "metrics": [m.to_json() for m in records]}

    @app.get("/api/v1/metrics", tags=["runs"], dependencies=[Depends(can_read)])
    async def metrics_of_runs(
        run: list[str] = Query(..., description="project/run pairs as 'project/run' (URL-encoded names joined by '/')"),
    ) -> dict[str, Any]:
        """Several runs' metrics in one request (for overlays), read from the store together:
        each run's entry is the single-run endpoint's answer."""
        pairs = _run_pairs(run)
        records = await in_thread(bridge.store.metrics_many, pairs)
        return {"runs": [{"project": p, "run": r, "metrics": [m.to_json() for m in found]}
                         for (p, r), found in zip(pairs, records)]}

    @app.get("/api/v1/runs/{project}/{run}/series", tags=["series"], dependencies=[Depends(can_read)],
             responses=_BINARY_ANSWER)
    async def series(
        request: Request, project: str, run: str,
        key: str = Query(..., description="metric key, exactly as logged"),
        x: Literal["step", "time", "relative"] = "step",
        start: float | None = None, end: float | None = None,
        width: int = Query(1000, ge=1, le=20000),
    ) -> Response:
        """One series; JSON, or binary columns with ``Accept: application/vnd.curvestream.series``."""
        project, run = _name(project), _name(run)
        if start is not None and end is not None and end < start:
            raise HTTPException(422, "end must not be less than start")
        q = SeriesQuery(project, run, key, x, start, end, width)
        result = await read_for(request, bridge.store.series, q)
        return _series_answer(request, [(project, run, key, q, result)], many=False)

    @app.get("/api/v1/series", tags=["series"], dependencies=[Depends(can_read)], responses=_BINARY_ANSWER)
    async def many_series(
        request: Request,
        run: list[str] = Query(..., description="project/run pairs as 'project/run' (URL-encoded names joined by '/')"),
        key: list[str] = Query(...),
        x: Literal["step", "time", "relative"] = "step",
        start: float | None = None, end: float | None = None,
        width: int = Query(1000, ge=1, le=20000),
    ) -> Response:
        """Several runs × metrics in one request (for overlays), read from the store together:
        each answer is the single-series endpoint's. JSON, or binary columns (see above)."""
        pairs = _run_pairs(run)
        if start is not None and end is not None and end < start:
            raise HTTPException(422, "end must not be less than start")
        queries = [SeriesQuery(p, r, k, x, start, end, width) for p, r in pairs for k in key]
        results = await read_for(request, bridge.store.series_many, queries)
        return _series_answer(request, [(q.project, q.run, q.key, q, res) for q, res in zip(queries, results)],
                              many=True)

    @app.get("/api/v1/runs/{project}/{run}/histograms", tags=["series"], dependencies=[Depends(can_read)])
    async def histograms(project: str, run: str, key: str, limit: int = Query(200, ge=1, le=5000)) -> dict[str, Any]:
        project, run = _name(project), _name(run)
        rows = await in_thread(bridge.store.histograms, project, run, key, limit)
        return {"project": project, "run": run, "key": key, "histograms": rows}

    @app.get("/api/v1/runs/{project}/{run}/texts", tags=["series"], dependencies=[Depends(can_read)])
    async def texts(project: str, run: str, key: str | None = None,
                    limit: int = Query(500, ge=1, le=10000),
                    after_ms: float | None = Query(None, description="only lines newer than this wall time")
                    ) -> dict[str, Any]:
        project, run = _name(project), _name(run)
        rows = await in_thread(bridge.store.texts, project, run, key, limit if after_ms is None else 10000)
        if after_ms is not None:
            rows = [r for r in rows if r["time_ms"] > after_ms][:limit]
        return {"project": project, "run": run, "texts": rows}

    @app.post("/api/v1/ingest", tags=["ingest"], dependencies=[Depends(can_write)],
              responses={200: {"content": {"application/x-protobuf": {}}}})
    async def ingest(request: Request) -> Response:
        body = await request.body()
        if len(body) > settings.max_payload_bytes:
            bridge.metrics.inc("curvestream_rejected_total", reason="oversized")
            raise HTTPException(413, f"body over {settings.max_payload_bytes} bytes")
        try:
            commit = await asyncio.to_thread(bridge.ingest.submit_http, body)
        except Rejected as rej:
            return JSONResponse({"detail": str(rej), "reason": rej.reason}, status_code=400)
        except StoreUnavailable as exc:
            return JSONResponse({"detail": f"store unavailable: {exc}"}, status_code=503,
                                headers={"Retry-After": str(int(exc.retry_after_s or 2))})
        except TimeoutError:
            return JSONResponse({"detail": "store write timed out"}, status_code=503, headers={"Retry-After": "2"})
        return Response(commit.SerializeToString(), media_type="application/x-protobuf")

    @app.get("/api/v1/parked", tags=["ops"], dependencies=[Depends(can_read)])
    def parked() -> dict[str, Any]:
        """Batches parked after unexpected store errors, with why."""
        entries = bridge.ingest.parked.entries() if bridge.ingest.parked is not None else []
        return {"parked": [e.to_json() for e in entries]}

    @app.post("/api/v1/parked/replay", tags=["ops"], dependencies=[Depends(can_write)])
    async def replay_parked() -> dict[str, Any]:
        """Store the parked batches again (``curvestream-bridge replay-dead-letters``)."""
        return await asyncio.to_thread(replay_parked_batches, bridge.ingest)

    @app.websocket("/api/v1/live")
    async def live(ws: WebSocket) -> None:
        if settings.read_token:
            given = ws.query_params.get("token", "")
            header = ws.headers.get("authorization", "")
            if header.lower().startswith("bearer "):
                given = header[7:]
            if not hmac.compare_digest(given.encode(), settings.read_token.encode()):
                await ws.close(code=1008)
                return
        await bridge.live.serve(ws)

    if STATIC_DIR.joinpath("index.html").exists():
        app.mount("/", StaticFiles(directory=STATIC_DIR, html=True), name="page")
    else:
        @app.get("/", response_class=HTMLResponse, include_in_schema=False)
        def no_page() -> str:
            return ("<!doctype html><title>curvestream</title><h1>curvestream bridge</h1>"
                    "<p>The page bundle is not built. Run <code>make page</code> (or <code>npm ci && npm run build"
                    "</code> in panels/echarts-plugin), then restart. The API is at <a href='/docs'>/docs</a>.</p>")

    return app


def _clock_json(clock: tuple[float, float] | None) -> dict[str, float | None]:
    offset, correction = clock if clock is not None else (None, None)
    return {"clock_offset_s": offset, "clock_correction_s": correction}


def _config_matches(config: dict[str, Any], dotted: str, wanted: str) -> bool:
    value: Any = config
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return False
        value = value[part]
    if isinstance(value, str):
        return value == wanted
    return json.dumps(value) == wanted or str(value) == wanted

