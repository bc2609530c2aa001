"""The alert engine inside the bridge: fed by ingest (every round, fresh and
re-sent batches alike, before the commit goes out), by run status changes and
by a one-second tick (``stalled``); its state saved in the store before the
round's commit; its alerts delivered to the live WebSocket, to
``curvestream/v1/<project>/<run>/alerts`` (JSON, the object of
``GET /api/v1/alerts``) and to the webhooks, none of which can slow ingest.

With a shared subscription (``CURVESTREAM_MQTT_SHARED_GROUP``) the engine is
fed by :class:`~curvestream_bridge.alerts.cluster.AlertFeed` instead, keeps its
state under this bridge's name, and delivers only while it leads.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable, Container, Sequence
from typing import Any

from curvestream_wire.backoff import Backoff
from curvestream_wire.topics import Topics

from curvestream_bridge.alerts.engine import SEP, Alert, AlertEngine, Changes
from curvestream_bridge.alerts.rules import Rule, default_rules, load_rules
from curvestream_bridge.alerts.webhook import WebhookSender
from curvestream_bridge.batch import DecodedBatch
from curvestream_bridge.metrics import ALERT_DELIVERIES_RECORDED, ALERT_STATE_ERRORS, ALERTS, Metrics
from curvestream_bridge.settings import BridgeSettings
from curvestream_bridge.store.base import AlertStateStore, StoreUnavailable, state_name

__all__ = ["AlertService", "rules_from_settings"]

log = logging.getLogger("curvestream.bridge.alerts")

MQTT_SINK = "mqtt"


def rules_from_settings(settings: BridgeSettings) -> list[Rule]:
    """The rules file's rules, or the defaults; raises RulesError naming the rule and field."""
    return load_rules(settings.alert_rules) if settings.alert_rules else default_rules()


def _sink_tag(url: str) -> str:
    return hashlib.sha256(url.encode()).hexdigest()[:12]


class AlertService:
    def __init__(self, settings: BridgeSettings, store: AlertStateStore, metrics: Metrics,
                 publish: Callable[[str, bytes], None] | None = None,
                 on_alert: Callable[[dict[str, Any]], None] | None = None,
                 rules: Sequence[Rule] | None = None, cluster: bool = False,
                 deleted: Container[tuple[str, str]] = frozenset()) -> None:
        self.settings = settings
        self.store = store
        self.metrics = metrics
        self.publish = publish
        self.on_alert = on_alert
        self.cluster = cluster
        self.deleted = deleted  # (project, run) of deleted runs: nothing of theirs is evaluated
        self.leading = not cluster  # a lone bridge always delivers
        self._own = f"{settings.mqtt_client_id}{SEP}" if cluster else ""  # this bridge's state entries
        self.engine = AlertEngine(rules if rules is not None else rules_from_settings(settings))
        base = settings.alert_public_url or f"http://{settings.http_addr}"
        urls = [u.strip() for u in settings.alert_webhook_url.split(",") if u.strip()]
        self.webhooks = [WebhookSender(u, base, self._webhook_delivered, give_up_s=settings.alert_webhook_give_up_s)
                         for u in urls]
        self._lock = threading.Lock()
        self._unsaved = Changes()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._sent: dict[tuple[str, str], int] = {}  # (sink, alert id) -> version delivered
        self._queued: set[tuple[str, str, int]] = set()  # (url, alert id, version) handed to a webhook
        self._ready = threading.Event()  # the saved state is read
        self._early_statuses: list[Any] = []

    # ------------------------------------------------------------------ life
    def start(self) -> None:
        """Reads the saved state in the background (the store may be down at start);
        until it is read, rounds are refused (ingest retries them) and statuses wait."""
        threading.Thread(target=self._restore, name="curvestream-alert-restore", daemon=True).start()

    def _restore(self) -> None:
        entries = self._load()
        if self._stop.is_set():
            return
        mine = {k[len(self._own):]: v for k, v in entries.items() if k.startswith(self._own)} if self._own \
            else entries
        self.engine.restore(mine)
        self._remember_deliveries(entries)
        for hook in self.webhooks:
            hook.start()
        with self._lock:
            if self.leading:
                self._deliver_pending()
            self._ready.set()
            early, self._early_statuses = self._early_statuses, []
        for status in early:
            self.on_status(status)
        self._ticker = threading.Thread(target=self._tick_forever, name="curvestream-alert-tick", daemon=True)
        self._ticker.start()

    def wait_ready(self, timeout: float) -> bool:
        return self._ready.wait(timeout)

    def stop(self) -> None:
        self._stop.set()
        if self._ticker is not None and self._ticker.is_alive():
            self._ticker.join(2.0)
        for hook in self.webhooks:
            hook.stop()

    def _load(self) -> dict[str, str]:
        backoff = Backoff(initial_s=0.2, max_s=5.0)
        while True:
            try:
                return self.store.load_alert_state()
            except StoreUnavailable as exc:
                log.warning("curvestream bridge: cannot read the alert state yet: %s", exc)
                if backoff.wait(self._stop, exc.retry_after_s):
                    return {}

    def _remember_deliveries(self, entries: dict[str, str]) -> None:
        for name, text in entries.items():
            parts = name.split(SEP)
            if parts[0] == "d" and len(parts) == 3:
                key = (parts[1], parts[2])
                self._sent[key] = max(self._sent.get(key, 0), int(json.loads(text)))

    # ------------------------------------------------------------------ inputs
    def on_round(self, batches: Sequence[DecodedBatch]) -> None:
        """Evaluate a round (fresh and re-sent batches, and the statuses they carry)
        and save the state, once, before the commit goes out; raises StoreUnavailable while the store refuses, so
        the round is not committed and its batches come again."""
        if not self._ready.is_set():
            raise StoreUnavailable("the alert state is not read yet", retry_after_s=0.5)
        ordered = sorted((b for b in batches if (b.project, b.run) not in self.deleted),
                         key=lambda b: (b.producer_id, b.seq))  # re-sends come after fresh ones
        with self._lock:
            changes = self.engine.evaluate(ordered)
            for b in ordered:  # a status riding in a batch, after its points: saved with them, once per round
                if b.status is not None:
                    st = b.status
                    changes.merge(self.engine.status(st.project, st.run, state_name(st.state), st.updated_ns))
            self._apply(changes, must_save=True)

    def on_status(self, status: Any) -> None:
        if (status.project, status.run) in self.deleted:
            return
        with self._lock:
            if not self._ready.is_set():
                self._early_statuses.append(status)
                return
            self._apply(self.engine.status(status.project, status.run, state_name(status.state), status.updated_ns))

    def run_entries(self, project: str, run: str) -> list[str]:
        """The names of this bridge's state entries about a run, as stored (its detectors, its
        watch, its alerts and their deliveries): what a deletion takes from the store."""
        with self._lock:
            ids = {a.id for a in self.engine.alerts(project, run)}
            return ([self._own + name for name in self.engine.entries_of_run(project, run)]
                    + [SEP.join(("d", sink, ident)) for sink, ident in self._sent if ident in ids])

    def forget_run(self, project: str, run: str) -> None:
        """A deleted run: its alerts, detectors and deliveries are forgotten (and not saved again)."""
        with self._lock:
            names = set(self.engine.entries_of_run(project, run))
            ids = set(self.engine.forget_run(project, run))
            for key in [k for k in self._sent if k[1] in ids]:
                del self._sent[key]
            self._unsaved.entries = {k: v for k, v in self._unsaved.entries.items() if k not in names}
            self._unsaved.alerts = [a for a in self._unsaved.alerts if a.id not in ids]

    def leader_changed(self, leading: bool) -> None:
        """From the cluster feed: this bridge now delivers (what others have not) or stops delivering."""
        with self._lock:
            self.leading = leading
            if leading:
                self._deliver_pending()

    def _tick_forever(self) -> None:
        while not self._stop.wait(1.0):
            try:
                with self._lock:
                    self._apply(self.engine.tick())
            except Exception:
                log.exception("curvestream bridge: alert tick failed")

    # ------------------------------------------------------------------ outputs
    def _apply(self, changes: Changes, must_save: bool = False) -> None:
        self._unsaved.merge(changes)
        if not self._unsaved:
            return
        pending = self._unsaved
        try:
            self.store.save_alert_state({self._own + k: v for k, v in pending.entries.items()},
                                        [a.to_json() for a in pending.alerts])
        except StoreUnavailable:
            self.metrics.inc(ALERT_STATE_ERRORS)
            if must_save:
                raise
            log.warning("curvestream bridge: alert state not saved yet; it goes with the next change")
            return
        self._unsaved = Changes()
        for alert in pending.alerts:
            self.metrics.inc(ALERTS, kind=alert.kind, state=alert.state)
            log.warning("curvestream alert %s on %s/%s: %s", alert.state, alert.project, alert.run, alert.message)
            if self.on_alert is not None:  # this bridge's own WebSocket clients
                try:
                    self.on_alert(alert.to_json())
                except Exception:
                    log.exception("curvestream bridge: live alert push failed")
        if self.leading:
            self._deliver(pending.alerts)

    def _deliver_pending(self) -> None:
        """Alerts changed but not delivered: after a crash, or while another bridge led."""
        self._deliver(self.engine.alerts())

    def _deliver(self, alerts: Sequence[Alert]) -> None:
        """Each change not delivered yet published on MQTT and handed to the webhooks. The MQTT
        deliveries are remembered by one state save for all of them: a fleet's alerts change
        together (a sweep's runs reach their patience in the same round), and a save each would
        cost a store transaction per alert."""
        if not alerts:
            return
        if self.cluster:  # another bridge may have led when these changes happened
            self._remember_deliveries(self._load())
        published = []
        for alert in alerts:
            if self.publish is not None and self._sent.get((MQTT_SINK, alert.id), 0) < alert.version:
                try:
                    self.publish(Topics.alerts(alert.project, alert.run), json.dumps(alert.to_json(),
                                                                                     allow_nan=False).encode())
                    published.append(alert)
                except Exception:
                    log.exception("curvestream bridge: publishing an alert on MQTT failed")
            for hook in self.webhooks:
                ident = (hook.url, alert.id, alert.version)
                if self._sent.get((_sink_tag(hook.url), alert.id), 0) < alert.version and ident not in self._queued:
                    self._queued.add(ident)
                    hook.send(alert)
        if published:
            try:
                self._record(MQTT_SINK, published)
            except Exception:
                log.exception("curvestream bridge: remembering the alerts published on MQTT failed")

    def _webhook_delivered(self, url: str, alert: Alert) -> None:
        self._record(_sink_tag(url), [alert])

    def _record(self, sink: str, alerts: Sequence[Alert]) -> None:
        entries = {}
        for alert in alerts:
            sent = self._sent[(sink, alert.id)] = max(self._sent.get((sink, alert.id), 0), alert.version)
            entries[SEP.join(("d", sink, alert.id))] = json.dumps(sent)
        self.store.save_alert_state(entries, [])
        # delivered and remembered: a bridge taking over will not send them again
        self.metrics.inc(ALERT_DELIVERIES_RECORDED, len(alerts), sink="mqtt" if sink == MQTT_SINK else "webhook")
