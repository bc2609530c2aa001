"""JSON answers of the routes, and the error answers every guarded router documents."""

from __future__ import annotations

from typing import Any

import pydantic_core
from fastapi.responses import Response

from curvestream_bridge.api.models import ApiError

__all__ = ["answer", "GUARDED"]

GUARDED: dict[int | str, dict[str, Any]] = {
    401: {"model": ApiError, "description": "A token is set and the request carries none"},
    403: {"model": ApiError, "description": "The request's token is not the one set"},
}


def answer(content: Any, status_code: int = 200) -> Response:
    """``content`` as JSON, encoded as FastAPI encodes a returned dict (pydantic's
    serializer: a float that is not finite becomes null), but not validated
    against the route's ``response_model``: that would cost more than the
    encoding for a long runs list. The models document the answers; tests hold
    each answer to its model."""
    body = pydantic_core.to_json(content, inf_nan_mode="null")
    return Response(body, status_code=status_code, media_type="application/json")
