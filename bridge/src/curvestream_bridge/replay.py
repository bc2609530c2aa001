"""Replaying parked batches, once whatever made the store fail on them is fixed.

    curvestream-bridge replay-dead-letters             # asks the running bridge to do it (HTTP)
    curvestream-bridge replay-dead-letters --offline   # the bridge is stopped: open the store here

Each parked batch goes through the ingest pipeline again, as if it had just
arrived: dedupe by (producer, seq) makes a batch stored meanwhile (the trainer
sent it again) a harmless duplicate, so each is stored exactly once; a batch
that is stored, or found stored already, leaves the parked set; one the store
still fails on stays parked, with the new reason.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import sys
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any

from curvestream_bridge.decode import Rejected
from curvestream_bridge.settings import BridgeSettings
from curvestream_bridge.store.base import StoreUnavailable

if TYPE_CHECKING:
    from curvestream_bridge.ingest import Ingest

__all__ = ["replay_parked", "main"]


def replay_parked(ingest: Ingest, timeout_s: float = 600.0) -> dict[str, Any]:
    """Send every parked batch through ``ingest`` (its writer must be running);
    returns what became of them."""
    from curvestream_bridge.ingest import Kind, Message

    parked = ingest.parked
    if parked is None:
        return {"replayed": 0, "rejected": 0, "still_parked": 0, "parked": []}
    waiting = []
    for entry in parked.entries():
        try:
            payload = parked.payload(entry)
        except FileNotFoundError:
            continue  # replayed by a concurrent call
        future: concurrent.futures.Future = concurrent.futures.Future()
        ingest.submit(Message(Kind.POINTS, payload, "replay", reply=future, parked=entry), timeout=timeout_s)
        waiting.append((entry, future))
    replayed = rejected = 0
    for entry, future in waiting:
        try:
            future.result(timeout=timeout_s)
        except Rejected:
            rejected += 1
            continue
        except (StoreUnavailable, TimeoutError, concurrent.futures.TimeoutError):
            continue  # still parked; the next replay tries again
        if not entry.path.exists():
            replayed += 1
            ingest.metrics.inc("curvestream_parked_replayed_total")
    return {"replayed": replayed, "rejected": rejected, "still_parked": parked.count,
            "parked": [e.to_json() for e in parked.entries()]}


def _replay_through_bridge(settings: BridgeSettings, url: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {settings.write_token}"} if settings.write_token else {}
    request = urllib.request.Request(url.rstrip("/") + "/api/v1/parked/replay", data=b"", method="POST",
                                     headers=headers)
    with urllib.request.urlopen(request, timeout=3600) as resp:
        return json.loads(resp.read())


def _replay_offline(settings: BridgeSettings) -> dict[str, Any]:
    from curvestream_bridge.service import Bridge

    bridge = Bridge(settings.model_copy(update={"mqtt_url": ""}))
    bridge.start()  # no subscriber without MQTT; the alert state is read so replayed points are evaluated too
    try:
        return replay_parked(bridge.ingest)
    finally:
        bridge.stop()


def main(settings: BridgeSettings, argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="curvestream-bridge replay-dead-letters",
                                     description="Store the parked batches (see CURVESTREAM_PARKED_DIR) again.")
    parser.add_argument("--url", default=None, help="the running bridge (default: http://CURVESTREAM_HTTP_ADDR)")
    parser.add_argument("--offline", action="store_true",
                        help="the bridge is stopped: open the store and the parked set in this process")
    args = parser.parse_args(argv)
    if args.offline:
        report = _replay_offline(settings)
    else:
        host, port = settings.http_addr.rsplit(":", 1)
        url = args.url or f"http://{'127.0.0.1' if host in ('0.0.0.0', '', '[::]') else host}:{port}"
        try:
            report = _replay_through_bridge(settings, url)
        except urllib.error.HTTPError as err:
            print(f"curvestream-bridge replay-dead-letters: the bridge at {url} answered {err.code}: "
                  f"{err.read()[:300].decode(errors='replace')}", file=sys.stderr)
            return 2
        except (urllib.error.URLError, OSError) as exc:
            print(f"curvestream-bridge replay-dead-letters: the bridge at {url} did not answer ({exc}); "
                  "start it, or stop it for good and use --offline", file=sys.stderr)
            return 2
    print(json.dumps(report, indent=2))
    return 0 if report["still_parked"] == 0 else 1
