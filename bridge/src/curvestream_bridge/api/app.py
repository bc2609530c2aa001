"""The bridge's FastAPI app: the routers by resource, the path middleware and the page."""

from __future__ import annotations

import contextlib
from typing import AsyncIterator

from fastapi import FastAPI

from curvestream_bridge.api import admin, alerts, ingest, live, parked, runs, series
from curvestream_bridge.api.facade import BridgeApi
from curvestream_bridge.api.page import mount_page
from curvestream_bridge.api.paths import KeepEncodedSlashes

__all__ = ["create_app"]

ROUTERS = (admin.router, runs.router, series.router, alerts.router, ingest.router, parked.router, live.router)


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    api: BridgeApi = app.state.bridge_api
    api.start_live()
    yield
    await api.stop_live()


def create_app(api: BridgeApi) -> FastAPI:
    """The HTTP API (docs/http-api.md), the live WebSocket and the page, served from ``api``."""
    app = FastAPI(title="curvestream bridge", version="0.1.0", lifespan=_lifespan,
                  description="Training curves: runs, metrics, pixel-exact M4 series, ingest and live push.")
    app.state.bridge_api = api
    app.add_middleware(KeepEncodedSlashes)
    for router in ROUTERS:
        app.include_router(router)
    mount_page(app)
    return app
