"""Webhooks in the Alertmanager v4 format, so Alertmanager itself, Grafana
OnCall or a Slack relay take them as they are.

One worker thread per URL keeps that URL's alerts in order (a ``resolved``
never overtakes its ``firing``); a failed POST is retried with jittered
exponential backoff until ``give_up_s`` has passed. The ingest thread only
appends to a bounded queue, so a slow or dead receiver never slows ingest.
"""

from __future__ import annotations

import collections
import datetime
import hashlib
import logging
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

import httpx

from curvestream_wire.backoff import Backoff, parse_retry_after

from curvestream_bridge.alerts.engine import Alert

__all__ = ["alertmanager_body", "WebhookSender", "generator_url"]

log = logging.getLogger("curvestream.bridge.alerts")

_NEVER = "0001-01-01T00:00:00Z"  # Alertmanager's endsAt of a firing alert


def _iso(ms: float) -> str:
    moment = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def generator_url(base: str, alert: Alert) -> str:
    """The page, opened on the alert's run and key, zoomed on its window."""
    lo, hi = alert.from_step, alert.to_step
    pad = max(10, (hi - lo) // 10)
    params = [("run", f"{urllib.parse.quote(alert.project, safe='')}/{urllib.parse.quote(alert.run, safe='')}")]
    if alert.key:
        params.append(("metric", alert.key))
    params.append(("zoom", f"{max(0, lo - pad)},{hi + pad}"))
    return f"{base.rstrip('/')}/?{urllib.parse.urlencode(params, safe='/')}"


def alertmanager_body(alerts: list[Alert], base_url: str, receiver: str = "curvestream") -> dict[str, Any]:
    """The body Alertmanager sends to its webhook receivers (version 4)."""
    items: list[dict[str, Any]] = []
    for a in alerts:
        labels = {"alertname": a.rule, "project": a.project, "run": a.run, "key": a.key, "severity": a.severity,
                  "kind": a.kind}
        items.append({
            "status": a.state,
            "labels": labels,
            "annotations": {"summary": f"{a.kind} on {a.project}/{a.run}" + (f" {a.key}" if a.key else ""),
                            "description": a.message},
            "startsAt": _iso(a.started_ms),
            "endsAt": _iso(a.ended_ms) if a.state == "resolved" and a.ended_ms is not None else _NEVER,
            "generatorURL": generator_url(base_url, a),
            "fingerprint": hashlib.sha256("\x00".join(f"{k}={v}" for k, v in sorted(labels.items())).encode())
                           .hexdigest()[:16],
        })
    common = {k: v for k, v in items[0]["labels"].items() if all(i["labels"].get(k) == v for i in items)} \
        if items else {}
    status = "firing" if any(a.state == "firing" for a in alerts) else "resolved"
    group = {"alertname": common["alertname"]} if "alertname" in common else {}
    return {
        "version": "4",
        "groupKey": "{}:{" + ",".join(f'{k}="{v}"' for k, v in group.items()) + "}",
        "truncatedAlerts": 0,
        "status": status,
        "receiver": receiver,
        "groupLabels": group,
        "commonLabels": common,
        "commonAnnotations": {k: v for k, v in items[0]["annotations"].items()
                              if all(i["annotations"].get(k) == v for i in items)} if items else {},
        "externalURL": base_url,
        "alerts": items,
    }


class WebhookSender:
    """Delivers alerts to one URL, in order, with bounded retries."""

    def __init__(self, url: str, base_url: str, on_delivered: Callable[[str, Alert], None],
                 give_up_s: float = 3600.0, max_queue: int = 10_000,
                 transport: httpx.BaseTransport | None = None, timeout_s: float = 5.0) -> None:
        self.url = url
        self.base_url = base_url
        self.on_delivered = on_delivered
        self.give_up_s = give_up_s
        self._queue: collections.deque[Alert] = collections.deque(maxlen=max_queue)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._client = httpx.Client(timeout=timeout_s, transport=transport)
        self._thread = threading.Thread(target=self._run, name="curvestream-alert-webhook", daemon=True)
        self.delivered = 0
        self.failed = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        self._client.close()

    def send(self, alert: Alert) -> None:
        """Never blocks; past ``max_queue`` waiting alerts the oldest is dropped."""
        if len(self._queue) == self._queue.maxlen:
            log.warning("curvestream bridge: webhook queue for %s is full; dropping the oldest alert", self.url)
            self.failed += 1
        self._queue.append(alert)
        self._wake.set()

    def pending(self) -> int:
        return len(self._queue)

    def _run(self) -> None:
        while not self._stop.is_set():
            if not self._queue:
                self._wake.wait(1.0)
                self._wake.clear()
                continue
            alert = self._queue[0]
            if self._deliver(alert):
                self.delivered += 1
                try:
                    self.on_delivered(self.url, alert)
                except Exception:
                    log.exception("curvestream bridge: could not record a delivered alert")
            else:
                self.failed += 1
            if self._queue and self._queue[0] is alert:
                self._queue.popleft()

    def _deliver(self, alert: Alert) -> bool:
        body = alertmanager_body([alert], self.base_url)
        deadline = time.monotonic() + self.give_up_s
        backoff = Backoff(initial_s=0.25, max_s=5.0)
        while not self._stop.is_set():
            retry_after: float | None = None
            try:
                resp = self._client.post(self.url, json=body)
                if resp.status_code < 300:
                    return True
                if 400 <= resp.status_code < 500 and resp.status_code not in (408, 429):
                    log.warning("curvestream bridge: webhook %s refused alert %s for good: HTTP %s %s",
                                self.url, alert.id, resp.status_code, resp.text[:200])
                    return False
                retry_after = parse_retry_after(resp.headers.get("retry-after"))
                why = f"HTTP {resp.status_code}"
            except httpx.HTTPError as exc:
                why = f"{type(exc).__name__}: {exc}"
            delay = backoff.next_delay(retry_after)
            if time.monotonic() + delay > deadline:
                log.warning("curvestream bridge: giving up on webhook %s for alert %s after %.0f s (%s)",
                            self.url, alert.id, self.give_up_s, why)
                return False
            log.info("curvestream bridge: webhook %s failed (%s); retrying in %.1f s", self.url, why, delay)
            if self._stop.wait(delay):
                return False
        return False
