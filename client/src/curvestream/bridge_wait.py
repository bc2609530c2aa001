"""How ``finish()`` waits for the bridge: slow is not gone.

It waits as long as commits come. After ``finish_timeout_ms`` without one it
asks the bridge (``GET /api/v1/producers/{id}/batches``) about each producer it still
waits for:

- batches the bridge has stored but whose commit never arrived (lost on the
  way) count as committed, and the wait goes on;
- when the bridge has received the first batch still waited for and its
  writer is storing (no store outage, no failing write), the bridge is slow,
  not gone: the wait goes on (said once, beside the progress it shows);
- otherwise — no answer, a store the bridge cannot write to, batches that
  never reached it — the wait ends, and the reason is given with what stays
  in the spool.
"""

from __future__ import annotations

from collections.abc import Callable

from curvestream_wire.v1 import run_pb2

from curvestream import notices
from curvestream.http_fallback import BridgeHttp, Permanent, Retryable
from curvestream.settings import Settings
from curvestream.spool import Spool
from curvestream.uploader import Uploader

__all__ = ["wait_for_bridge"]

_ASK_TIMEOUT_S = 5.0


def wait_for_bridge(uploader: Uploader, spools: list[Spool], settings: Settings, label: str,
                    on_progress: Callable[[int], None] | None, stall_s: float) -> str:
    """Block until every batch of these spools is committed (return ``""``) or the
    bridge is found gone (return why, in words)."""
    producers = [s.producer_id for s in spools]
    while not uploader.wait_committed(producers, on_progress=on_progress, stall_s=stall_s):
        why = _ask(uploader, spools, settings, label, stall_s)
        if why:
            return why
    return ""


def _ask(uploader: Uploader, spools: list[Spool], settings: Settings, label: str, stall_s: float) -> str:
    """Ask the bridge about the batches still waited for: ``""`` to go on waiting, else why not."""
    quiet = f"no commit for {stall_s:g} s"
    if not settings.bridge_url:
        return f"{quiet} and no bridge URL to ask (CURVESTREAM_BRIDGE_URL)"
    http = BridgeHttp(settings.bridge_url, timeout_s=_ASK_TIMEOUT_S)
    try:
        for spool in spools:
            first = _first_uncommitted(uploader, spool)
            if first is None:
                continue
            try:
                answer = http.get_json(f"/api/v1/producers/{spool.producer_id.hex()}/batches", settings.read_token)
            except (Retryable, Permanent, ValueError) as exc:
                return f"{quiet} and the bridge at {settings.bridge_url} does not answer ({exc})"
            if not isinstance(answer, dict):
                return f"{quiet} and the bridge at {settings.bridge_url} gives no answer it can use"
            stored = [(int(a), int(b)) for a, b in answer.get("stored") or []]
            if any(a <= first <= b for a, b in stored):  # stored, its commit lost on the way
                commit = run_pb2.Commit(producer_id=spool.producer_id)
                for a, b in stored:
                    commit.stored.add(first=a, last=b)
                uploader.on_commit(commit)
                continue
            received = answer.get("received_last_seq")
            if not answer.get("writing", False):
                return (f"{quiet}; the bridge at {settings.bridge_url} answers but cannot store now "
                        "(its store is unavailable or failing: see its /readyz)")
            if received is None or int(received) < first:
                via = (f" (is it subscribed to the broker at {settings.mqtt_endpoint().host}:"
                       f"{settings.mqtt_endpoint().port}?)" if uploader.channel == "mqtt" else "")
                return f"{quiet}; the bridge at {settings.bridge_url} answers but has not received batch {first}{via}"
            notices.say_once(f"busy {label}", f"curvestream: {label}: {quiet}, but the bridge has the batches and "
                                              "is still storing them; waiting (Ctrl-C leaves the rest in the spool "
                                              f"for `{notices.sync_command(settings)}`)")
        return ""
    finally:
        http.close()


def _first_uncommitted(uploader: Uploader, spool: Spool) -> int | None:
    for seg in spool.snapshot():
        if not seg.records or uploader.is_committed(spool.producer_id, seg.first_seq, seg.last_seq):
            continue
        for seq in range(seg.first_seq, seg.last_seq + 1):
            if not uploader.is_committed(spool.producer_id, seq, seq):
                return seq
    return None
