"""Making runs: the factory does the I/O and the threads, the constructor none; the runs of a process
share one session (one recorder thread, one uploader, one MQTT connection)."""

from __future__ import annotations

import os
import socket
import threading

import pytest

from curvestream_wire.v1 import run_pb2

from curvestream.encode import BatchBuilder
from curvestream.factory import start_run
from curvestream.recorder import FlushMode, Recorder
from curvestream.run import Run
from curvestream.session import Session
from curvestream.settings import Settings
from curvestream.spool import Spool, list_producers


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _thread_names() -> list[str]:
    return sorted(t.name for t in threading.enumerate())


def test_the_constructor_of_a_run_touches_no_disk_and_starts_no_thread(spool_dir):
    settings = Settings(spool_dir=str(spool_dir), mode="offline")
    before = _thread_names()

    class NoSpool:  # a constructor that touched its spool would fail here
        def __getattr__(self, name: str) -> None:
            raise AssertionError(f"the constructor used the spool ({name})")

    spool = NoSpool()
    recorder = Recorder(settings, spool, lambda next_seq: None)  # type: ignore[arg-type]
    run = Run("p", "r", settings=settings, producer_id=b"\x01" * 16, meta=run_pb2.RunMeta(project="p", run="r"),
              spool=spool, recorder=recorder, session=Session(settings), losses=None,  # type: ignore[arg-type]
              config={}, tags=[], group="")
    assert run.project == "p" and run.recorder is recorder
    assert _thread_names() == before and not any(spool_dir.iterdir())


def test_runs_with_the_same_connection_share_one_session_and_its_threads_end_with_the_last_run(spool_dir):
    port = _closed_port()
    common = {"spool_dir": str(spool_dir), "mqtt_url": f"mqtt://127.0.0.1:{port}", "bridge_url": "",
              "finish_timeout_ms": 0,
              "system_metrics": False}  # the sampler's own thread: tests/client/test_system_metrics.py
    before = _thread_names()
    runs = [start_run("p", f"r{j}", settings=Settings(**common, flush_interval_ms=100 + j)) for j in range(20)]
    other = start_run("p", "elsewhere", settings=Settings(**{**common, "mqtt_url": f"mqtt://localhost:{port}"}))
    assert len({id(r.session) for r in runs}) == 1, "batching settings differ, the connection is the same"
    assert other.session is not runs[0].session
    assert len(list_producers(spool_dir)) == 21, "each run its own spool"
    added = [n for n in _thread_names() if n not in before]
    assert sorted(n for n in added if n.startswith("curvestream")) == ["curvestream-recorder"] * 2 + \
        ["curvestream-uploader"] * 2, added
    assert len(added) <= 6, f"{added}: two sessions, each a recorder, an uploader and paho's network thread"
    for run in [*runs, other]:
        run.log({"x": 1.0}, step=0)
        assert run.finish().batches_left_in_spool > 0  # nothing reachable: the batches wait in the spool
    assert runs[0].session.closed and other.session.closed
    assert not [t for t in threading.enumerate() if t.name.startswith("curvestream") and t.is_alive()
                and t.name not in before]


def test_an_idle_run_gets_no_flush_round_until_it_logs_again(tmp_path):
    settings = Settings(spool_dir=str(tmp_path), flush_interval_ms=100)
    clock = [0.0]
    spool = Spool.create(tmp_path, b"\x01" * 16, "p", "r")
    rec = Recorder(settings, spool, lambda next_seq: BatchBuilder(b"\x01" * 16, "p", "r", next_seq, lambda: 1),
                   clock=lambda: clock[0])
    woken = []
    rec.attach(lambda: woken.append(clock[0]))
    clock[0] = 0.1
    assert rec.due(clock[0]) is FlushMode.INTERVAL
    rec.flush(FlushMode.INTERVAL)  # nothing was logged for a whole interval
    assert rec.idle and rec.wake_at() is None, "the flush loop sleeps for this run"
    assert rec.due(0.35) is None, "a round that another run is due for passes an idle run by"
    clock[0] = 5.0
    rec.queue.append((0, 1, {"x": 1.0}))
    rec.resume()  # what log() does for an idle run
    assert woken == [5.0] and rec.wake_at() == pytest.approx(5.1) and not rec.idle
    spool.release()


def test_a_process_forked_from_one_with_a_session_starts_a_session_of_its_own(spool_dir):
    run = start_run("p", "parent", settings=Settings(spool_dir=str(spool_dir), mode="offline"))
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            child = start_run("p", "child", settings=Settings(spool_dir=str(spool_dir), mode="offline"))
            child.log({"x": 2.0}, step=0)
            code = 0 if child.session is not run.session and child.finish().points_spooled == 1 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    run.log({"x": 1.0}, step=0)
    assert run.finish().points_spooled == 1
