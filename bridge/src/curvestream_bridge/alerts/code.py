"""Alerts a training script raises itself (``run.alert(title, text, level)``,
``wandb.alert``): kind ``code``, rule the title, severity the level, message
the text, about the whole run (key ``""``) at the step the script was at.

They travel in the run's batches (``Batch.alerts``), so they are as durable
as points: spooled, sent again until committed. Each is raised once: its id
comes from the batch that carried it (producer, seq, index), and a batch seen
again raises nothing the engine already holds. An alert from code fires once
and resolves when its run ends (finished, failed or lost): a run's badge of
firing alerts counts only runs still going.

    >>> from curvestream_wire.v1 import batch_pb2
    >>> from curvestream_bridge.batch import DecodedBatch
    >>> raised = batch_pb2.CodeAlert(title="Low accuracy", text="acc 0.41 < 0.5", level="warning", step=300,
    ...                              wall_ns=2_000_000_000)
    >>> b = DecodedBatch(b"p" * 16, 7, "mnist", "r1", [], [], [], None, None, 0, alerts=[raised])
    >>> [(a.rule, a.kind, a.severity, a.step, a.message) for a in fired(b, {})]
    [('Low accuracy', 'code', 'warning', 300, 'acc 0.41 < 0.5')]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from curvestream_bridge.alerts.alert import Alert, alert_id
from curvestream_bridge.batch import DecodedBatch

__all__ = ["KIND", "fired", "ended"]

KIND = "code"
ENDED = ("finished", "failed", "lost")


def fired(batch: DecodedBatch, known: Mapping[str, Alert]) -> list[Alert]:
    """The alerts of ``batch`` not raised before (a batch sent again raises none)."""
    out = []
    for i, raised in enumerate(batch.alerts):
        ident = alert_id(KIND, batch.project, batch.run, f"{batch.producer_id.hex()}:{batch.seq}:{i}")
        if ident in known:
            continue
        time_ms = raised.wall_ns / 1e6
        out.append(Alert(ident, raised.title, KIND, raised.level, batch.project, batch.run, "", "firing", raised.step,
                         time_ms, None, raised.text or raised.title, raised.step, raised.step, time_ms, None,
                         raised.step, 1, raised.wall_ns))
    return out


def ended(alerts: Iterable[Alert], project: str, run: str, state: str, step: int, wall_ns: int) -> list[Alert]:
    """The run ended (``state``): its alerts from code still firing, resolved at ``step``."""
    if state not in ENDED:
        return []
    return [dataclasses.replace(a, state="resolved", step=max(step, a.step), time_ms=wall_ns / 1e6,
                                message=f"run {project}/{run} {state}; raised at step {a.step}: {a.message}",
                                ended_ms=wall_ns / 1e6, version=a.version + 1, time_ns=wall_ns)
            for a in alerts
            if a.kind == KIND and a.state == "firing" and (a.project, a.run) == (project, run)]
