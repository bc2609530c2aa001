"""The real bridge in its own process over its configured store, wrapped by a
test's seam (:mod:`held_bridge`, :mod:`faulty_bridge`): everything but the
store's behaviour is the bridge users run."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from curvestream_bridge.service import run_bridge
from curvestream_bridge.settings import BridgeSettings
from curvestream_bridge.store import Store, open_store


def run_over(wrap: Callable[[Store], Any]) -> None:
    """Run the bridge of the ``CURVESTREAM_*`` settings over ``wrap(store)`` until interrupted."""
    logging.basicConfig(level="INFO", format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = BridgeSettings()
    store = wrap(open_store(settings.store, writer_id=settings.mqtt_client_id))
    try:
        run_bridge(settings, store)
    except KeyboardInterrupt:
        pass
