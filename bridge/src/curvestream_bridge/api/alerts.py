"""``/api/v1/alerts``: the alert engine's alerts (docs/alerts.md)."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter

from curvestream_bridge.api.deps import READ, Api

__all__ = ["router"]

router = APIRouter(prefix="/api/v1", tags=["alerts"], dependencies=READ)


@router.get("/alerts")
def alerts(api: Api, project: str | None = None, run: str | None = None,
           state: Literal["firing", "resolved"] | None = None) -> dict[str, Any]:
    """Alerts of the alert engine (docs/alerts.md), oldest first."""
    return {"alerts": [a.to_json() for a in api.alerts(project, run, state)]}
