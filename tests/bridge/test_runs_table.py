"""The runs table's snapshot of the runs (runs_table.RunsTable): read once and
shared while nothing changed; read again at once after a new run, status or
metadata; read again in the background once old, the old one answering
meanwhile. The store is a function counting its reads, the clock a seam."""

from __future__ import annotations

import threading

from curvestream_bridge.runs_table import RunsTable
from curvestream_bridge.store.base import RunRecord
from servers import wait_until


class _Runs:
    def __init__(self) -> None:
        self.records = [RunRecord("p", "a", points=1)]
        self.reads = 0
        self.gate = threading.Event()
        self.gate.set()

    def __call__(self) -> list[RunRecord]:
        self.gate.wait(10)
        self.reads += 1
        return [RunRecord(r.project, r.run, points=r.points) for r in self.records]


def test_the_runs_are_read_once_while_nothing_changes_and_again_at_once_after_a_change():
    runs, now = _Runs(), [0.0]
    table = RunsTable(runs, max_age_s=1.0, clock=lambda: now[0])
    first = table.snapshot()
    assert table.snapshot() is first and runs.reads == 1
    runs.records.append(RunRecord("p", "b"))
    table.invalidate()  # what the live hub calls for a new run, a status, new metadata
    assert [row.record.run for row in table.snapshot().rows] == ["a", "b"] and runs.reads == 2


def test_an_old_snapshot_answers_while_a_fresh_one_is_read_in_the_background():
    runs, now = _Runs(), [0.0]
    table = RunsTable(runs, max_age_s=1.0, clock=lambda: now[0])
    old = table.snapshot()
    runs.records[0].points = 50  # points stored meanwhile
    runs.gate.clear()  # the store is slow
    now[0] = 1.5
    assert table.snapshot() is old, "no query waits for the store because counts moved"
    runs.gate.set()
    wait_until(lambda: table.snapshot() is not old, 10, "the fresh snapshot")
    assert table.snapshot().rows[0].record.points == 50 and runs.reads == 2
