"""InfluxDB over the v1 HTTP API (1.x, 2.x OSS through DBRP mappings, 3.x Core):
the store (:mod:`.store`), its HTTP client (:mod:`.http`), line protocol and
InfluxQL text (:mod:`.lineproto`), rollup rows (:mod:`.rows`, :mod:`.rollup`)
and series queries (:mod:`.series`)."""

from curvestream_bridge.store.influx.store import InfluxStore

__all__ = ["InfluxStore"]
