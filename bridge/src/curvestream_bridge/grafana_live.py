"""Optional Grafana Live output: new points are pushed as line protocol to
Grafana's ``/api/live/push/<stream>`` so dashboards update without polling.

Grafana turns each measurement into a channel
``stream/<stream>/<measurement>``; we push measurement ``curvestream`` with
tags project, run, metric (the same encoding as the InfluxDB engine) and
fields value and step. Pushing runs in its own thread with a bounded queue: a
slow or absent Grafana drops live frames, never ingest.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Sequence

import httpx
import numpy as np

from curvestream_bridge.batch import DecodedBatch
from curvestream_bridge.settings import BridgeSettings
from curvestream_bridge.store.influx.lineproto import encode_tag

__all__ = ["GrafanaLivePusher", "live_lines"]

log = logging.getLogger("curvestream.bridge.grafana")

MAX_POINTS_PER_SERIES = 2000  # a live frame thins long bursts; Grafana re-queries the store for detail


def live_lines(batches: Sequence[DecodedBatch]) -> list[str]:
    lines = []
    for b in batches:
        tags = f"project={encode_tag(b.project)},run={encode_tag(b.run)}"
        for col in b.scalars:
            idx = np.arange(len(col.values))
            if len(idx) > MAX_POINTS_PER_SERIES:
                idx = np.unique(np.linspace(0, len(idx) - 1, MAX_POINTS_PER_SERIES).astype(int))
            prefix = f"curvestream,metric={encode_tag(col.key)},{tags} "
            for i in idx.tolist():
                v = float(col.values[i])
                if np.isfinite(v):
                    lines.append(f"{prefix}value={v!r},step={int(col.steps[i])}i {int(col.wall_ns[i])}")
    return lines


class GrafanaLivePusher:
    def __init__(self, settings: BridgeSettings, transport: httpx.BaseTransport | None = None) -> None:
        self._url = settings.grafana_live_url.rstrip("/") + f"/api/live/push/{settings.grafana_live_stream}"
        headers = {"Authorization": f"Bearer {settings.grafana_live_token}"} if settings.grafana_live_token else {}
        self._http = httpx.Client(headers=headers, timeout=5.0, transport=transport)
        self._queue: queue.Queue[list[str] | None] = queue.Queue(maxsize=64)
        self.dropped = 0
        self.errors = 0
        self._thread = threading.Thread(target=self._run, name="curvestream-grafana-live", daemon=True)
        self._thread.start()

    def push(self, batches: Sequence[DecodedBatch]) -> None:
        lines = live_lines(batches)
        if not lines:
            return
        try:
            self._queue.put_nowait(lines)
        except queue.Full:
            self.dropped += 1

    def _run(self) -> None:
        while True:
            lines = self._queue.get()
            if lines is None:
                return
            try:
                resp = self._http.post(self._url, content="\n".join(lines).encode())
                if resp.status_code >= 300:
                    self.errors += 1
                    log.debug("curvestream bridge: Grafana Live push answered %s", resp.status_code)
            except httpx.HTTPError as exc:
                self.errors += 1
                log.debug("curvestream bridge: Grafana Live push failed: %s", exc)

    def close(self) -> None:
        try:
            self._queue.put_nowait(None)
        except queue.Full:
            pass
        self._thread.join(2)
        self._http.close()
