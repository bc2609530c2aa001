"""A trainer session's Last Will: every run of the session still running becomes lost."""

from __future__ import annotations

from curvestream_wire.v1 import run_pb2

from curvestream_bridge.sessions import SessionRuns

RUNNING, LOST, FINISHED = run_pb2.RUN_STATE_RUNNING, run_pb2.RUN_STATE_LOST, run_pb2.RUN_STATE_FINISHED


def status(state: int, session: bytes, producer: bytes = b"") -> run_pb2.RunStatus:
    return run_pb2.RunStatus(state=state, session=session, producer_id=producer)


def lost_runs(statuses: list[run_pb2.RunStatus]) -> set[tuple[str, str, bytes]]:
    assert all(s.state == LOST and s.reason for s in statuses)
    return {(s.project, s.run, s.producer_id) for s in statuses}


def test_the_will_of_a_session_makes_each_of_its_runs_still_running_lost_and_no_other():
    runs = SessionRuns()
    for j in range(3):
        runs.run_status("p", f"r{j}", status(RUNNING, b"s1", bytes([j])))
    runs.run_status("p", "other", status(RUNNING, b"s2", b"o"))
    runs.run_status("p", "r1", status(FINISHED, b"s1", b"\x01"))  # finished before the process died
    assert lost_runs(runs.session_status(status(LOST, b"s1"))) == {("p", "r0", b"\x00"), ("p", "r2", b"\x02")}
    assert lost_runs(runs.session_status(status(LOST, b"s2"))) == {("p", "other", b"o")}


def test_a_run_still_saying_running_after_its_session_was_lost_is_lost_too():
    runs = SessionRuns()  # a bridge starting: the retained Will comes before a run's retained status
    assert runs.session_status(status(LOST, b"s1")) == []
    assert lost_runs(runs.run_status("p", "r0", status(RUNNING, b"s1", b"p0"))) == {("p", "r0", b"p0")}


def test_a_session_that_connects_again_keeps_its_runs_running():
    runs = SessionRuns()
    runs.session_status(status(LOST, b"s1"))
    runs.session_status(status(RUNNING, b"s1"))  # the same process, back after a network outage
    assert runs.run_status("p", "r0", status(RUNNING, b"s1", b"p0")) == []
    assert lost_runs(runs.session_status(status(LOST, b"s1"))) == {("p", "r0", b"p0")}


def test_statuses_without_a_session_are_left_alone_and_lost_sessions_are_bounded():
    runs = SessionRuns(max_lost_sessions=2)
    assert runs.run_status("p", "r0", status(RUNNING, b"")) == []
    for s in (b"a", b"b", b"c"):
        runs.session_status(status(LOST, s))
    assert runs.run_status("p", "r1", status(RUNNING, b"a")) == [], "the oldest lost session was forgotten"
    assert runs.run_status("p", "r2", status(RUNNING, b"c")) != []
