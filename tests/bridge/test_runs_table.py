"""The runs table's snapshot of the runs (runs_table.RunsTable): read once and
shared while nothing changed; a run that changed read again alone at once, a run
that only got points read again in the background once the snapshot is old (the
old one answering meanwhile), every run read again now and then; the answers equal
those of a full read. The store is a function counting its reads, the clock a seam."""

from __future__ import annotations

import copy
import threading

import pytest

from curvestream_bridge.runs_table import SORT_KEYS, RunsFilter, RunsSnapshot, RunsTable
from curvestream_bridge.store.base import RunRecord
from servers import wait_until


class _Runs:
    def __init__(self) -> None:
        self.records = [RunRecord("p", "a", points=1)]
        self.reads = 0
        self.gate = threading.Event()
        self.gate.set()

    def __call__(self, refs: list[tuple[str, str]] | None = None) -> list[RunRecord]:
        self.gate.wait(10)
        self.reads += 1
        return [copy.deepcopy(r) for r in self.records if refs is None or (r.project, r.run) in refs]


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
    table.changed([("p", "a")], points_only=True)
    runs.gate.clear()  # the store is slow
    now[0] = 1.5
    assert table.snapshot() is old, "no query waits for the store because counts moved"
    runs.gate.set()
    wait_until(lambda: table.snapshot() is not old, 10, "the fresh snapshot")
    assert table.snapshot().rows[0].record.points == 50 and runs.reads == 2


def _fleet(n: int) -> list[RunRecord]:
    return [RunRecord(f"p{i % 3}", f"run-{i}", state="running", group=f"g{i % 4}", tags=[f"t{i % 5}"],
                      config={"lr": [0.1, 1e-3][i % 2], "seed": i % 3}, started_ns=1 + i % 7, points=i)
            for i in range(n)]


def _answers(snap: RunsSnapshot) -> list:
    """What the endpoint answers of a snapshot, for every sort and some filters."""
    firing = {("p1", "run-4"): 2}
    out: list = []
    for sort in [*SORT_KEYS, *(f"-{k}" for k in SORT_KEYS)]:
        for f in (RunsFilter(), RunsFilter(project="p1"), RunsFilter(search="G2 lr=0.1"), RunsFilter(tag="t1"),
                  RunsFilter(state="failed"), RunsFilter(config_key="seed", config_value="1")):
            out.append([row.json for row in snap.matching(f, firing, sort)])
    out += [snap.facets(None), snap.facets("p2"), snap.config_values(None, "lr"), snap.config_values("p0", "seed")]
    return out


def test_a_runs_change_reads_that_run_alone_and_the_answers_equal_a_full_read():
    runs = _Runs()
    runs.records = _fleet(60)
    asked: list = []

    def read(refs=None):
        asked.append(None if refs is None else sorted(refs))
        return runs(refs)

    table = RunsTable(read, max_age_s=1e9, full_every_s=1e9, clock=lambda: 0.0)
    before = _answers(table.snapshot())  # every order kept: the changed runs' rows are moved in them
    assert asked == [None] and before == _answers(RunsSnapshot(runs(None)))
    by_name = {r.run: r for r in runs.records}
    by_name["run-5"].state, by_name["run-5"].tags = "failed", ["t1", "new"]  # a status, an edit
    runs.records.append(RunRecord("p2", "late", state="running", group="g9", config={"lr": 5}, started_ns=9))
    runs.records.remove(by_name["run-7"])  # deleted
    by_name["run-11"].points = 4000
    table.changed({("p2", "run-5"), ("p2", "late"), ("p1", "run-7")})
    table.changed({("p2", "run-11")}, points_only=True)
    patched = table.snapshot()
    assert asked[1:] == [[("p1", "run-7"), ("p2", "late"), ("p2", "run-5")]], "only the changed runs are read"
    assert patched.by_ref[("p2", "run-5")].record.state == "failed" and ("p1", "run-7") not in patched.by_ref
    assert patched.by_ref[("p2", "run-11")].record.points == 11, "points wait for the snapshot to be old"
    assert _answers(patched) != _answers(RunsSnapshot(runs(None))), "the full read sees the new points"
    by_name["run-11"].points = 11
    assert _answers(patched) == _answers(RunsSnapshot(runs(None)))


def test_grown_runs_are_read_alone_in_the_background_once_the_snapshot_is_old():
    runs, now = _Runs(), [0.0]
    runs.records = _fleet(30)
    asked: list = []

    def read(refs=None):
        asked.append(None if refs is None else sorted(refs))
        return runs(refs)

    table = RunsTable(read, max_age_s=5.0, full_every_s=60.0, clock=lambda: now[0])
    first = table.snapshot()
    runs.records[3].points = runs.records[4].points = 999
    table.changed({("p0", "run-3"), ("p1", "run-4")}, points_only=True)
    now[0] = 6.0
    assert table.snapshot() is first
    wait_until(lambda: table.snapshot() is not first, 10, "the grown runs read")
    assert asked == [None, [("p0", "run-3"), ("p1", "run-4")]]
    assert _answers(table.snapshot()) == _answers(RunsSnapshot(runs(None)))
    now[0] = 61.0
    table.snapshot()
    wait_until(lambda: len(asked) == 3, 10, "the read of every run")
    assert asked[2] is None


def test_a_read_of_every_run_installed_after_a_runs_own_read_keeps_that_runs_newer_row():
    runs, now = _Runs(), [0.0]
    runs.records = _fleet(10)
    hold, read_all = threading.Event(), threading.Event()
    hold.set()

    def read(refs=None):
        found = runs(refs)
        if refs is None and not hold.is_set():  # read before the change below, installed after it
            read_all.set()
            hold.wait(10)
        return found

    table = RunsTable(read, max_age_s=5.0, full_every_s=60.0, clock=lambda: now[0])
    table.snapshot()
    hold.clear()
    now[0] = 61.0
    table.snapshot()  # the background read of every run starts
    assert read_all.wait(10)
    runs.records[3].state = "failed"
    table.changed({("p0", "run-3")})
    patched = table.snapshot()
    assert patched.by_ref[("p0", "run-3")].record.state == "failed"
    hold.set()
    wait_until(lambda: table.snapshot() is not patched, 10, "the read of every run installed")
    assert table.snapshot().by_ref[("p0", "run-3")].record.state == "failed", "not the older read's row"
    assert _answers(table.snapshot()) == _answers(RunsSnapshot(runs(None)))


def test_status_changes_coming_all_the_time_do_not_hold_back_the_points():
    runs, now = _Runs(), [0.0]
    runs.records = _fleet(10)
    table = RunsTable(runs, max_age_s=5.0, full_every_s=600.0, clock=lambda: now[0])
    table.snapshot()
    runs.records[1].points = 777
    table.changed({("p1", "run-1")}, points_only=True)
    for second in range(1, 13):  # another run's status every second
        now[0] = float(second)
        table.changed({("p2", "run-2")})
        table.snapshot()
    wait_until(lambda: table.snapshot().by_ref[("p1", "run-1")].record.points == 777, 10, "the grown run read")


def test_a_changed_run_whose_read_failed_is_read_by_the_next_query():
    runs, failing = _Runs(), [False]

    def read(refs=None):
        if failing[0]:
            raise OSError("store unavailable")
        return runs(refs)

    table = RunsTable(read, max_age_s=1e9, full_every_s=1e9, clock=lambda: 0.0)
    table.snapshot()
    runs.records[0].points = 9
    table.changed({("p", "a")})
    failing[0] = True
    with pytest.raises(OSError):
        table.snapshot()
    failing[0] = False
    assert table.snapshot().by_ref[("p", "a")].record.points == 9
