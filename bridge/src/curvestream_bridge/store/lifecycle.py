"""A run's life after the fact, in the store: its name, tags and notes edited
(kept apart from what its trainer sends, and shown over it, so a trainer
that sends its metadata again does not undo an edit), and its deletion.

Deleting a run removes its points, rollups, histograms, texts, run record,
edits, alert transitions and alert engine state, and remembers the deletion:
whatever arrives for the run afterwards (a retained meta or status message, a
batch re-sent or still being logged) is dropped by the bridge. The records of
which (producer, seq) batches were stored are kept (a few bytes per batch, with
nothing of the run in them): they make a re-sent batch a duplicate still.

Each engine implements :class:`RunLifecycle` (``.duckdb.lifecycle``,
``.influx.lifecycle``); the bridge calls ``delete_run`` from its writer
thread, between two rounds of writes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from curvestream_bridge.store.base import RunRecord

__all__ = ["RunEdits", "RunLifecycle", "apply_edits"]


@dataclasses.dataclass(frozen=True)
class RunEdits:
    """What an edit sets; None leaves it as it is."""

    name: str | None = None
    tags: tuple[str, ...] | None = None
    notes: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()
                if v is not None}

    def over(self, earlier: dict[str, Any]) -> dict[str, Any]:
        """The edits stored so far with this one applied."""
        return {**earlier, **self.as_json()}


class RunLifecycle(Protocol):
    def edit_run(self, project: str, run: str, edits: RunEdits) -> bool:
        """Apply ``edits`` over what the run's trainer sent; False when no such run is stored."""

    def delete_run(self, project: str, run: str, alert_entries: Sequence[str]) -> bool:
        """Delete everything of the run (and ``alert_entries``, the alert engine's state entries
        about it) and remember the deletion; False when no such run is stored. Raises
        StoreUnavailable while the store cannot take it."""

    def deleted_runs(self) -> set[tuple[str, str]]:
        """Every run deleted so far."""


def apply_edits(records: Iterable[RunRecord], edits: dict[tuple[str, str], dict[str, Any]]) -> list[RunRecord]:
    """The runs with their stored edits over what their trainers sent."""
    out = []
    for rec in records:
        found = edits.get((rec.project, rec.run))
        if found:
            if "name" in found:
                rec.name = found["name"]
            if "tags" in found:
                rec.tags = list(found["tags"])
            if "notes" in found:
                rec.notes = found["notes"]
        out.append(rec)
    return out
