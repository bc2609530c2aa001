"""Operations: liveness, readiness and the Prometheus metrics (no token)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from curvestream_bridge.api.deps import Api

__all__ = ["router"]

router = APIRouter(tags=["ops"])


@router.get("/healthz")
def healthz() -> dict[str, Any]:
    return {"ok": True}


@router.get("/readyz")
def readyz(api: Api) -> Response:
    ok, body = api.readiness()
    return JSONResponse(body, status_code=200 if ok else 503)


@router.get("/metrics", response_class=PlainTextResponse)
def metrics(api: Api) -> PlainTextResponse:
    return PlainTextResponse(api.render_metrics(), media_type="text/plain; version=0.0.4")
