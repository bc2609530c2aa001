"""``POST /api/v1/ingest``: a protobuf batch over HTTP (the trainer's fallback when the broker is away)."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse, Response

from curvestream_bridge.api.answer import GUARDED
from curvestream_bridge.api.deps import WRITE, Api
from curvestream_bridge.api.models import ApiError, ApiRefusal
from curvestream_bridge.decode import Rejected
from curvestream_bridge.metrics import REJECTED
from curvestream_bridge.store.base import StoreUnavailable

__all__ = ["router"]

router = APIRouter(prefix="/api/v1", tags=["ingest"], dependencies=WRITE, responses=GUARDED)


_PROTOBUF = {"schema": {"type": "string", "format": "binary"}}
_BATCH = {"requestBody": {"required": True, "description": "A serialized curvestream.v1.Batch",
                          "content": {"application/x-protobuf": _PROTOBUF}}}
_ANSWERS: dict[int | str, dict] = {
    200: {"content": {"application/x-protobuf": _PROTOBUF}, "description": "A serialized curvestream.v1.Commit"},
    400: {"model": ApiRefusal, "description": "A batch that can never be stored"},
    413: {"model": ApiError, "description": "A body over CURVESTREAM_MAX_PAYLOAD_BYTES"},
    503: {"model": ApiError, "description": "The store is unavailable: try again after Retry-After"},
}


@router.post("/ingest", response_class=Response, openapi_extra=_BATCH, responses=_ANSWERS)
async def ingest(request: Request, api: Api) -> Response:
    body = await request.body()
    limit = api.settings.max_payload_bytes
    if len(body) > limit:
        api.count(REJECTED, reason="oversized")
        raise HTTPException(413, f"body over {limit} bytes")
    try:
        commit = await asyncio.to_thread(api.submit, body)
    except Rejected as rej:
        return JSONResponse({"detail": str(rej), "reason": rej.reason}, status_code=400)
    except StoreUnavailable as exc:
        return JSONResponse({"detail": f"store unavailable: {exc}"}, status_code=503,
                            headers={"Retry-After": str(int(exc.retry_after_s or 2))})
    except TimeoutError:
        return JSONResponse({"detail": "store write timed out"}, status_code=503, headers={"Retry-After": "2"})
    return Response(commit.SerializeToString(), media_type="application/x-protobuf")
