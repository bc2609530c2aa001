"""The bridge's FastAPI app: the routers by resource, the path middleware and the page."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI

from curvestream_bridge.api import (
    admin,
    alerts,
    export,
    fleet,
    ingest,
    lifecycle,
    live,
    models,
    parked,
    producers,
    runs,
    series,
)
from curvestream_bridge.api.facade import BridgeApi
from curvestream_bridge.api.page import mount_page
from curvestream_bridge.api.paths import KeepEncodedSlashes

__all__ = ["create_app"]

ROUTERS = (admin.router, fleet.router, runs.router, series.router, alerts.router, ingest.router, parked.router,
           live.router, export.router, producers.router, lifecycle.router)


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    api: BridgeApi = app.state.bridge_api
    api.start_live()
    yield
    await api.stop_live()


class _BridgeApp(FastAPI):
    def openapi(self) -> dict[str, Any]:
        """FastAPI's document, with the shapes no HTTP route returns: the live WebSocket's
        messages and the headers of the binary series answers."""
        if self.openapi_schema is None:
            doc = super().openapi()
            doc.setdefault("components", {}).setdefault("schemas", {}).update(
                models.definitions("#/components/schemas/{model}"))
            self.openapi_schema = doc
        return self.openapi_schema


def create_app(api: BridgeApi) -> FastAPI:
    """The HTTP API (docs/http-api.md), the live WebSocket and the page, served from ``api``."""
    app = _BridgeApp(title="curvestream bridge", version="0.1.0", lifespan=_lifespan,
                      description="Training curves: runs, metrics, pixel-exact M4 series, ingest and live push. "
                                  "`WS /api/v1/live` takes `LiveSubscribe` and pushes `LiveMessage` (see the schemas).")
    app.state.bridge_api = api
    app.add_middleware(KeepEncodedSlashes)
    for router in ROUTERS:
        app.include_router(router)
    mount_page(app)
    return app
