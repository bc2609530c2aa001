"""What the HTTP routes may ask of the bridge, and nothing else: the store's
reads, the alert engine's alerts, each run's clock and pending tail, the
ingest edge, the parked set, the live hub and the metrics.

The routes call this object instead of reaching into the bridge's parts, so a
part can change inside without a route noticing, and a route can be served
against any object with these methods.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.websockets import WebSocket

from curvestream_bridge.replay import replay_parked
from curvestream_bridge.run_lifecycle import DeletedRuns, delete_run

if TYPE_CHECKING:
    from curvestream_wire.v1 import run_pb2

    from curvestream_bridge.alerts.engine import Alert
    from curvestream_bridge.alerts.service import AlertService
    from curvestream_bridge.ingest import Ingest
    from curvestream_bridge.live import LiveHub
    from curvestream_bridge.metrics import Metric, Metrics
    from curvestream_bridge.parked import ParkedBatch
    from curvestream_bridge.receipts import Receipts
    from curvestream_bridge.run_tails import RunTails
    from curvestream_bridge.settings import BridgeSettings
    from curvestream_bridge.store import Store
    from curvestream_bridge.store.lifecycle import RunEdits
    from curvestream_bridge.subscriber import Subscriber

__all__ = ["BridgeApi"]


class BridgeApi:
    """The bridge as its API sees it. ``reader`` answers the read endpoints (runs,
    metrics, series, histograms, texts); the methods cover the rest."""

    def __init__(self, *, settings: BridgeSettings, store: Store, ingest: Ingest, live: LiveHub, metrics: Metrics,
                 tails: RunTails, alerts: AlertService | None = None, subscriber: Subscriber | None = None,
                 receipts: Receipts | None = None, deleted: DeletedRuns | None = None) -> None:
        self.settings = settings
        self.reader = store
        self._ingest = ingest
        self._live = live
        self._metrics = metrics
        self._tails = tails
        self._alerts = alerts
        self._subscriber = subscriber
        self._receipts = receipts
        self._deleted = deleted if deleted is not None else DeletedRuns(store)
        self.deletions = 0  # runs deleted through this API: what is kept of runs is read again when it moves

    @property
    def read_token(self) -> str:
        return self.settings.read_token

    @property
    def write_token(self) -> str:
        return self.settings.write_token

    # runs

    def alerts(self, project: str | None = None, run: str | None = None, state: str | None = None) -> list[Alert]:
        """The alert engine's alerts (none when alerts are off), oldest first; none of a deleted run
        (another bridge sharing the store may have deleted it)."""
        if self._alerts is None:
            return []
        return [a for a in self._alerts.engine.alerts(project, run, state) if (a.project, a.run) not in self._deleted]

    def firing_per_run(self) -> dict[tuple[str, str], int]:
        firing: dict[tuple[str, str], int] = {}
        for a in self.alerts(state="firing"):
            firing[(a.project, a.run)] = firing.get((a.project, a.run), 0) + 1
        return firing

    def clock_of(self, project: str, run: str) -> tuple[float, float] | None:
        """(offset, correction) in seconds of the run's trainer clock, or None when unknown."""
        return self._ingest.clocks.of_run(project, run)

    def on_runs_changed(self, callback: Callable[[set[tuple[str, str]], bool], None]) -> None:
        """``callback(runs, False)`` with the (project, run) pairs concerned (on the ingest's thread) when
        runs are added or their status or metadata come, and (on the API's) when a run is edited or deleted;
        ``callback(runs, True)`` when runs only got points stored."""
        self._live.on_runs_changed = callback

    def _runs_changed(self, project: str, run: str) -> None:
        callback = self._live.on_runs_changed
        if callback is not None:
            callback({(project, run)}, False)

    def pending_batches(self, project: str, run: str) -> int | None:
        """A finished run's batches up to its final status not stored yet (None: no final status seen)."""
        return self._tails.pending_batches(project, run)

    def edit_run(self, project: str, run: str, edits: RunEdits) -> bool:
        """Set a run's name, tags or notes; False when no such run is stored."""
        done = self.reader.edit_run(project, run, edits)  # type: ignore[attr-defined]
        if done:
            self._runs_changed(project, run)
        return done

    def delete_run(self, project: str, run: str) -> bool:
        """Delete a run for good (:mod:`curvestream_bridge.run_lifecycle`); False when no such run is stored."""
        subscriber = self._subscriber
        publish = (lambda topic, payload: subscriber.publish(topic, payload, retain=True)) if subscriber else None
        done = delete_run(project, run, store=self.reader, ingest=self._ingest, deleted=self._deleted,
                          alerts=self._alerts, publish=publish)
        if done:
            self.deletions += 1
            self._runs_changed(project, run)
        return done

    # ingest and parked batches

    def receipt(self, producer_id: bytes) -> dict[str, Any]:
        """The newest batch of a producer received (stored or still being written), and whether
        the writer stores now: a trainer's ``finish()`` tells a slow bridge from a gone one by it."""
        received = (self._receipts.to_json(producer_id) if self._receipts is not None
                    else {"received_last_seq": None, "received_s_ago": None})
        return {**received, "writing": self._ingest.healthy and not self._ingest.unexpected_error}

    def submit(self, payload: bytes) -> run_pb2.Commit:
        """Store a batch that came over HTTP; blocks until it is stored (or parked)."""
        return self._ingest.submit_http(payload)

    def count(self, metric: Metric, **labels: str) -> None:
        self._metrics.inc(metric, 1, **labels)

    def parked(self) -> list[ParkedBatch]:
        parked = self._ingest.parked
        return parked.entries() if parked is not None else []

    def replay_parked(self) -> dict[str, Any]:
        return replay_parked(self._ingest)

    # operations

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Whether the bridge can take and store points, and what ``/readyz`` says about it."""
        store_ok = self.reader.ping()
        mqtt_ok = self._subscriber is None or self._subscriber.connected
        ingest = self._ingest
        writing = not ingest.unexpected_error  # else the writer is retrying a write that failed unexpectedly
        body = {"store": store_ok, "mqtt": mqtt_ok, "ingest_healthy": ingest.healthy and writing,
                "unexpected_store_error": ingest.unexpected_error or ingest.last_unexpected_error or None,
                "parked_batches": ingest.parked.count if ingest.parked is not None else 0}
        return store_ok and mqtt_ok and writing, body

    def render_metrics(self) -> str:
        return self._metrics.render()

    # live push

    def start_live(self) -> None:
        self._live.start()

    async def stop_live(self) -> None:
        await self._live.stop()

    async def serve_live(self, ws: WebSocket) -> None:
        await self._live.serve(ws)
