"""``/api/v1/alerts``: the alert engine's alerts (docs/alerts.md)."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from fastapi.responses import Response

from curvestream_bridge.api.answer import GUARDED, answer
from curvestream_bridge.api.deps import READ, Api
from curvestream_bridge.api.models import ApiAlertsResponse

__all__ = ["router"]

router = APIRouter(prefix="/api/v1", tags=["alerts"], dependencies=READ, responses=GUARDED)


@router.get("/alerts", response_model=ApiAlertsResponse)
def alerts(api: Api, project: str | None = None, run: str | None = None,
           state: Literal["firing", "resolved"] | None = None) -> Response:
    """Alerts of the alert engine (docs/alerts.md), oldest first."""
    return answer({"alerts": [a.to_json() for a in api.alerts(project, run, state)]})
