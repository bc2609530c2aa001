"""The HTTP API (see docs/http-api.md), the WebSocket and the page, by resource:

- :mod:`.runs` runs and their metrics, :mod:`.series` series, histograms and texts,
  :mod:`.alerts`, :mod:`.live` (WebSocket), :mod:`.ingest`, :mod:`.parked`,
  :mod:`.admin` (health, readiness, Prometheus metrics), :mod:`.page`;
- :mod:`.deps` the token check every route shares (HTTP and WebSocket alike),
  :mod:`.facade` the only object the routes ask of the bridge,
  :mod:`.paths` names in paths, :mod:`.reads` store calls off the event loop.
"""

from curvestream_bridge.api.app import create_app
from curvestream_bridge.api.facade import BridgeApi

__all__ = ["create_app", "BridgeApi"]
