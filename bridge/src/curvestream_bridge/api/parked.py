"""Batches parked after unexpected store errors: ``/api/v1/parked`` and its replay."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter
from fastapi.responses import Response

from curvestream_bridge.api.answer import GUARDED, answer
from curvestream_bridge.api.deps import READ, WRITE, Api
from curvestream_bridge.api.models import ApiParkedResponse, ApiReplayResponse

__all__ = ["router"]

router = APIRouter(prefix="/api/v1", tags=["ops"], responses=GUARDED)


@router.get("/parked", dependencies=READ, response_model=ApiParkedResponse)
def parked(api: Api) -> Response:
    """Batches parked after unexpected store errors, with why."""
    return answer({"parked": [e.to_json() for e in api.parked()]})


@router.post("/parked/replay", dependencies=WRITE, response_model=ApiReplayResponse)
async def replay_parked(api: Api) -> Response:
    """Store the parked batches again (``curvestream-bridge replay-dead-letters``)."""
    return answer(await asyncio.to_thread(api.replay_parked))
