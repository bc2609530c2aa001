"""Store calls from async routes: in a worker thread, with the store's
unavailability mapped to 503, and reads stopped when their client goes away."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from fastapi import HTTPException, Request

from curvestream_bridge.api.facade import BridgeApi
from curvestream_bridge.metrics import SERIES_READS_CANCELLED
from curvestream_bridge.store.base import StoreUnavailable
from curvestream_bridge.store.cancel import CANCEL, ReadCancel

__all__ = ["in_thread", "read_for"]


async def in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return await asyncio.to_thread(fn, *args)
    except StoreUnavailable as exc:
        raise HTTPException(503, f"store unavailable: {exc}", headers={"Retry-After": "2"}) from None


async def read_for(request: Request, api: BridgeApi, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a thread, stopped if the client goes away meanwhile (a page
    that zoomed again aborts the request before): then 499 (nginx's "client
    closed request"), which nobody receives."""
    gone = ReadCancel()

    def run() -> Any:
        CANCEL.set(gone)  # this thread's copy of the context
        return fn(*args)

    task = asyncio.ensure_future(in_thread(run))
    while not task.done():
        await asyncio.wait({task}, timeout=0.05)
        if not task.done() and await request.is_disconnected():
            gone.set()
            api.count(SERIES_READS_CANCELLED)
            break
    try:
        return await task
    except Exception:
        if gone.is_set():
            raise HTTPException(499, "the client went away") from None
        raise
