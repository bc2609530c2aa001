"""Batches parked after unexpected store errors: ``/api/v1/parked`` and its replay."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter

from curvestream_bridge.api.deps import READ, WRITE, Api

__all__ = ["router"]

router = APIRouter(prefix="/api/v1", tags=["ops"])


@router.get("/parked", dependencies=READ)
def parked(api: Api) -> dict[str, Any]:
    """Batches parked after unexpected store errors, with why."""
    return {"parked": [e.to_json() for e in api.parked()]}


@router.post("/parked/replay", dependencies=WRITE)
async def replay_parked(api: Api) -> dict[str, Any]:
    """Store the parked batches again (``curvestream-bridge replay-dead-letters``)."""
    return await asyncio.to_thread(api.replay_parked)
