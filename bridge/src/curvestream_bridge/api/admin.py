"""Operations: liveness, readiness and the Prometheus metrics (no token)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse, Response

from curvestream_bridge.api.answer import answer
from curvestream_bridge.api.deps import Api
from curvestream_bridge.api.models import ApiHealth, ApiReadiness

__all__ = ["router"]

router = APIRouter(tags=["ops"])


@router.get("/healthz", response_model=ApiHealth)
def healthz() -> Response:
    return answer({"ok": True})


@router.get("/readyz", response_model=ApiReadiness, responses={503: {"model": ApiReadiness}})
def readyz(api: Api) -> Response:
    ok, body = api.readiness()
    return answer(body, status_code=200 if ok else 503)


@router.get("/metrics", response_class=PlainTextResponse)
def metrics(api: Api) -> PlainTextResponse:
    return PlainTextResponse(api.render_metrics(), media_type="text/plain; version=0.0.4")
