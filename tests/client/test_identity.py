"""Which run an ``init()`` writes to, without a bridge to ask (offline, or none
answering), and what the client says about it; a resumed session whose steps
go back records it in the run's metadata. (With a bridge: tests/e2e/test_run_identity.py.)"""

from __future__ import annotations

import logging
import re

import pytest

from curvestream_wire.v1 import batch_pb2, run_pb2

import curvestream
from curvestream import notices
from curvestream.factory import start_run
from curvestream.identity import Identity, resolve
from curvestream.settings import Settings, default_spool_dir
from curvestream.spool import Spool, list_producers

NOBODY = "http://127.0.0.1:1"  # nothing listens


def _metas(spool_dir) -> list[run_pb2.RunMeta]:
    metas = []
    for directory in list_producers(spool_dir):
        spool = Spool.adopt(directory)
        for seg in spool.segments:
            for _, _, payload in spool.read_from(seg, seg.data_start):
                batch = batch_pb2.Batch.FromString(payload)
                if batch.HasField("meta"):
                    metas.append(batch.meta)
        spool.release(remove_if_empty=False)
    return metas


def test_each_init_under_one_name_is_a_new_run_whose_identity_is_the_name_and_a_suffix(spool_dir):
    runs = [curvestream.init(project="unit", run="lr=0.1", mode="offline", spool_dir=str(spool_dir))
            for _ in range(2)]
    for run in runs:
        run.finish()
        assert re.fullmatch(r"lr=0\.1-[0-9a-z]{6}", run.id) and run.display_name == "lr=0.1" and run.name == run.id
    assert runs[0].id != runs[1].id
    metas = _metas(spool_dir)
    assert sorted(m.run for m in metas) == sorted(r.id for r in runs) and {m.name for m in metas} == {"lr=0.1"}

    given = curvestream.init(project="unit", id="my-run", mode="offline", spool_dir=str(spool_dir))
    assert (given.id, given.display_name) == ("my-run", "my-run")
    given.finish()
    unnamed = curvestream.init(project="unit", mode="offline", spool_dir=str(spool_dir))
    assert unnamed.id == unnamed.display_name and re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{4}", unnamed.id)
    unnamed.finish()


def test_offline_a_resume_by_name_starts_a_new_run_and_says_so_and_must_fails(spool_dir, caplog):
    settings = Settings(mode="offline", spool_dir=str(spool_dir))
    with caplog.at_level(logging.WARNING, logger="curvestream"):
        identity = resolve("unit", "exp", settings, resume="allow")
    assert identity.id.startswith("exp-") and identity.resumed is None
    assert [r.getMessage() for r in caplog.records] == [
        f"curvestream: the run is offline, so no run named 'exp' can be resumed; starting a new run unit/{identity.id}"]
    with pytest.raises(RuntimeError, match="cannot resume a run named 'exp' in project 'unit': the run is offline"):
        resolve("unit", "exp", settings, resume="must")


def test_with_no_bridge_answering_an_id_is_continued_as_given_with_its_last_step_unknown(spool_dir, caplog):
    settings = Settings(bridge_url=NOBODY, spool_dir=str(spool_dir))
    with caplog.at_level(logging.WARNING, logger="curvestream"):
        identity = resolve("unit", None, settings, id="exp-abc123", resume="allow")
    assert (identity.id, identity.name, identity.next_step) == ("exp-abc123", "exp-abc123", 0)
    assert identity.resumed is not None and not identity.resumed.after_step_known
    (said,) = [r.getMessage() for r in caplog.records]
    assert said.startswith(f"curvestream: the bridge at {NOBODY} cannot be asked (")
    assert said.endswith("; run unit/exp-abc123 goes on under its id, with implicit steps from 0 (steps going back "
                         "cannot be checked)")
    with pytest.raises(RuntimeError, match=r"cannot resume run unit/exp-abc123: the bridge at .* cannot be asked"):
        resolve("unit", None, settings, id="exp-abc123", resume="must")


def test_bad_resume_arguments_fail_clearly():
    settings = Settings(mode="offline")
    with pytest.raises(ValueError, match="resume must be 'allow', 'must' or None, got 'yes'"):
        resolve("unit", "exp", settings, resume="yes")
    with pytest.raises(ValueError, match=r"resume= needs the run's name \(run=\) or its identity \(id=\)"):
        resolve("unit", None, settings, resume="allow")


def test_a_resumed_session_that_logs_a_step_at_or_below_where_the_run_ended_records_it_once(spool_dir, caplog):
    resumed = run_pb2.Resume(started_ns=5, after_step=99, after_step_known=True)
    earlier = run_pb2.Resume(started_ns=1, after_step=9, after_step_known=True)
    identity = Identity("exp-abc123", "exp", resumed, (earlier,), started_ns=3, next_step=100)
    run = start_run("unit", "exp-abc123", settings=Settings(mode="offline", spool_dir=str(spool_dir)),
                    identity=identity)
    with caplog.at_level(logging.WARNING, logger="curvestream"):
        run.log({"x": 1.0})  # step 100: implicit steps go on after the stored run
        run.log({"x": 2.0}, step=101)
        run.log({"x": 3.0}, step=50)  # back
        run.log({"x": 4.0}, step=20)  # said and recorded once: the first step back
        run.log_text("note", "hi", step=10)
    run.finish()
    assert [r.getMessage() for r in caplog.records if "go back" in r.getMessage()] == [
        "curvestream: run unit/exp-abc123 was resumed after step 99 and now logs step 50: its steps go back; the "
        "runs list marks it (x = time shows both sessions apart)"]
    metas = _metas(spool_dir)
    assert all((m.name, m.started_ns, [r.after_step for r in m.resumes]) == ("exp", 3, [9, 99]) for m in metas)
    last = metas[-1]  # sent again once the step went back
    assert (last.resumes[-1].went_back, last.resumes[-1].back_to_step) == (True, 50)
    assert not last.resumes[0].went_back


def test_the_sync_command_names_what_a_shell_would_not_know_and_never_a_password(monkeypatch, tmp_path):
    for var in ("CURVESTREAM_BRIDGE_URL", "CURVESTREAM_MQTT_URL", "CURVESTREAM_SPOOL_DIR"):
        monkeypatch.delenv(var, raising=False)
    assert notices.sync_command(Settings(spool_dir=default_spool_dir())) == "curvestream sync"
    assert notices.sync_command(Settings(spool_dir=str(tmp_path / "a b"))) == f"curvestream sync '{tmp_path}/a b'"
    remote = Settings(bridge_url="http://gpu-7:8080", mqtt_url="mqtt://user:secret@gpu-7:1883",
                      spool_dir=default_spool_dir())
    assert notices.sync_command(remote) == "CURVESTREAM_BRIDGE_URL=http://gpu-7:8080 curvestream sync"
    monkeypatch.setenv("CURVESTREAM_BRIDGE_URL", "http://gpu-7:8080")  # the shell has it already
    assert notices.sync_command(remote) == "curvestream sync"
