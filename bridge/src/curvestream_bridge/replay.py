"""Replaying parked batches, once whatever made the store fail on them is fixed
(``curvestream-bridge replay-dead-letters``, see ``cli.py``).

Each parked batch goes through the ingest pipeline again, as if it had just
arrived: dedupe by (producer, seq) makes a batch stored meanwhile (the trainer
sent it again) a harmless duplicate, so each is stored exactly once; a batch
that is stored, or found stored already, leaves the parked set; one the store
still fails on stays parked, with the new reason.
"""

from __future__ import annotations

import concurrent.futures
from typing import TYPE_CHECKING, Any

from curvestream_bridge.decode import Rejected
from curvestream_bridge.metrics import PARKED_REPLAYED
from curvestream_bridge.store.base import StoreUnavailable

if TYPE_CHECKING:
    from curvestream_bridge.ingest import Ingest

__all__ = ["replay_parked"]


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
            ingest.metrics.inc(PARKED_REPLAYED)
    return {"replayed": replayed, "rejected": rejected, "still_parked": parked.count,
            "parked": [e.to_json() for e in parked.entries()]}
