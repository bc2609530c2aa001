"""``GET /api/v1/producers/{producer}/batches``: which batches of a producer
the store holds, as inclusive seq ranges, the newest one received and whether
the writer stores now. An import asks before it sends, so that a second import
of the same files sends nothing and says so; a trainer's ``finish()`` that had
no commit for a while asks whether the bridge is slow (it has the batches and
writes) or gone; ``curvestream status`` asks so it never lists a stored batch.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException
from fastapi.responses import Response

from curvestream_bridge.api.answer import GUARDED, answer
from curvestream_bridge.api.deps import READ, Api
from curvestream_bridge.api.models import ApiError, ApiProducerBatches
from curvestream_bridge.api.reads import in_thread

__all__ = ["router"]

router = APIRouter(prefix="/api/v1", tags=["ingest"], dependencies=READ, responses=GUARDED)


@router.get("/producers/{producer}/batches", response_model=ApiProducerBatches,
            responses={422: {"model": ApiError, "description": "Not the hex of a producer id"},
                       503: {"model": ApiError, "description": "The store is unavailable"}})
async def stored_batches(api: Api, producer: str) -> Response:
    """The producer's batches the store holds, the newest received, whether the writer stores."""
    try:
        producer_id = bytes.fromhex(producer)
    except ValueError:
        raise HTTPException(422, "producer must be the hex of a producer id") from None
    ranges = await in_thread(api.reader.stored_ranges, producer_id)
    return answer({"producer": producer_id.hex(), "stored": [[first, last] for first, last in ranges],
                   **api.receipt(producer_id)})
