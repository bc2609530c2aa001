"""The bridge's app in-process for unit tests: a real :class:`Bridge` (store,
ingest writer, live hub) served to starlette's ``TestClient``
(``AppClient`` here)."""

from __future__ import annotations

import contextlib
import itertools
import urllib.parse
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from starlette.exceptions import StarletteDeprecationWarning

with warnings.catch_warnings():
    # starlette 1.10 prefers the httpx2 package; httpx, which the bridge already depends on, works the same
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient` is deprecated",
                            category=StarletteDeprecationWarning)
    from starlette.testclient import TestClient as AppClient  # not Test*: pytest would collect it

from curvestream_bridge.service import Bridge
from curvestream_bridge.settings import BridgeSettings

__all__ = ["AppClient", "served_bridge", "engine_store_url", "served_engine", "q"]

_databases = itertools.count(1)


@contextlib.contextmanager
def served_bridge(**settings: Any) -> Iterator[tuple[Bridge, AppClient]]:
    """A started bridge without a broker (unless ``mqtt_url`` is given) and a client of its app."""
    bridge = Bridge(BridgeSettings(**{"mqtt_url": "", **settings}))
    bridge.start()
    try:
        with AppClient(bridge.app) as client:
            yield bridge, client
    finally:
        bridge.stop()


def engine_store_url(request: Any, tmp_path_factory: Any, name: str) -> str:
    """A fresh store URL on the engine a fixture is parametrized with (``duckdb``
    or ``influxdb``; InfluxDB: a new database of the ``influxd`` fixture's server)."""
    if request.param == "duckdb":
        return f"duckdb:///{tmp_path_factory.mktemp(name)}/store.duckdb"
    return request.getfixturevalue("influxd").store_url(f"{name}{next(_databases)}")


@contextlib.contextmanager
def served_engine(request: Any, tmp_path_factory: Any, name: str, fill: Callable[[Any], None]) -> Iterator[AppClient]:
    """A client of a bridge on a fresh store of the fixture's engine (:func:`engine_store_url`),
    filled by ``fill(store)`` first."""
    with served_bridge(store=engine_store_url(request, tmp_path_factory, name)) as (bridge, client):
        fill(bridge.store)
        yield client


def q(name: str) -> str:
    """A name as one path segment or one side of ``project/run`` (JavaScript's encodeURIComponent)."""
    return urllib.parse.quote(name, safe="")
