"""``WS /api/v1/live``: points, statuses, new runs and alerts pushed to subscribed pages (see ``live.py``)."""

from __future__ import annotations

from fastapi import APIRouter, WebSocket

from curvestream_bridge.api.deps import READ, Api

__all__ = ["router"]

router = APIRouter(prefix="/api/v1")


@router.websocket("/live", dependencies=READ)
async def live(ws: WebSocket, api: Api) -> None:
    await api.serve_live(ws)
