"""A run on its own (offline mode: spool only, nothing leaves the machine)."""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import logging
import math
import os
import pathlib
import socket
import threading

import numpy as np
import pydantic
import pytest

from curvestream_wire.v1 import batch_pb2, run_pb2

import curvestream
from curvestream.spool import Spool, list_producers


def _spooled_batches(spool_dir: pathlib.Path) -> list[batch_pb2.Batch]:
    batches = []
    for directory in list_producers(spool_dir):
        spool = Spool.adopt(directory)
        for seg in spool.segments:
            for _, _, payload in spool.read_from(seg, seg.data_start):
                batches.append(batch_pb2.Batch.FromString(payload))
        spool.release(remove_if_empty=False)
    return sorted(batches, key=lambda b: b.seq)


def _points(batches: list[batch_pb2.Batch]) -> dict[str, list[tuple[int, int, float]]]:
    out: dict[str, list[tuple[int, int, float]]] = {}
    for b in batches:
        for s in b.scalars:
            out.setdefault(s.key, []).extend(zip(s.steps, s.wall_ns, s.values))
    return out


def _offline(spool_dir, **kw) -> curvestream.Run:
    return curvestream.init(project="unit", id=kw.pop("run", "r"), mode="offline", spool_dir=str(spool_dir), **kw)


def test_offline_run_spools_every_point_with_steps_times_and_non_finite_values(spool_dir):
    with _offline(spool_dir, max_batch_points=1000) as run:
        for i in range(5000):
            run.log({"loss": 1.0 / (i + 1), "odd": math.nan if i == 7 else (math.inf if i == 8 else float(i))})
    report = run.finish()
    assert report.points_spooled == 10_000 and report.batches_left_in_spool >= 10
    points = _points(_spooled_batches(spool_dir))
    assert [p[0] for p in points["loss"]] == list(range(5000))
    walls = [p[1] for p in points["loss"]]
    assert all(b > a for a, b in itertools.pairwise(walls)), "wall time strictly increasing per key"
    odd = [p[2] for p in points["odd"]]
    assert math.isnan(odd[7]) and odd[8] == math.inf and odd[9] == 9.0


def test_batches_carry_producer_sequence_metadata_and_final_status(spool_dir):
    with _offline(spool_dir, config={"lr": 0.1}, tags=["a", "b"], group="sweep", data_version="v3") as run:
        run.log({"x": 1.0}, step=3)
        run.log({"x": 2.0})
    batches = _spooled_batches(spool_dir)
    assert [b.seq for b in batches] == list(range(1, len(batches) + 1))
    assert {b.producer_id for b in batches} == {run.producer_id}
    meta = next(b.meta for b in batches if b.HasField("meta"))
    assert json.loads(meta.config_json) == {"lr": 0.1}
    assert list(meta.tags) == ["a", "b"] and meta.group == "sweep" and meta.data_version == "v3"
    assert meta.pid == os.getpid() and meta.python_version and meta.host
    assert "numpy" in meta.frameworks
    assert batches[-1].status.state == run_pb2.RUN_STATE_FINISHED
    assert [p[0] for p in _points(batches)["x"]] == [3, 4]


def test_an_exception_in_the_with_block_finishes_the_run_as_failed(spool_dir):
    with pytest.raises(ZeroDivisionError):
        with _offline(spool_dir) as run:
            run.log({"x": 1.0})
            1 / 0  # noqa: B018
    status = _spooled_batches(spool_dir)[-1].status
    assert status.state == run_pb2.RUN_STATE_FAILED and "ZeroDivisionError" in status.reason


def test_a_value_that_is_not_a_real_number_raises_at_the_call_naming_the_key(spool_dir):
    with _offline(spool_dir) as run:
        with pytest.raises(TypeError, match="'bad'"):
            run.log({"ok": 1.0, "bad": "0.5"})
        with pytest.raises(TypeError, match="'vec'"):
            run.log({"vec": np.array([1.0, 2.0])})
        with pytest.raises(TypeError, match="step"):
            run.log({"ok": 1.0}, step=1.5)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="empty"):
            run.log({"": 1.0})
        run.log({"ok": np.float32(2.0)}, step=10)
    points = _points(_spooled_batches(spool_dir))
    assert points == {"ok": [(10, points["ok"][0][1], 2.0)]}


def test_histograms_texts_and_the_logging_handler_share_the_batches(spool_dir):
    logger = logging.getLogger("unit.train")
    with _offline(spool_dir) as run:
        handler = curvestream.LogHandler(run)
        logger.addHandler(handler)
        try:
            run.log({"loss": 0.5}, step=100)
            run.log_histogram("weights", np.random.default_rng(0).normal(size=1000), bins=20)
            run.log_text("sample", "the cat sat", step=100)
            logger.warning("lr dropped to %g", 0.01)
        finally:
            logger.removeHandler(handler)
    batches = _spooled_batches(spool_dir)
    hist = [h for b in batches for h in b.histograms]
    texts = [t for b in batches for t in b.texts]
    assert len(hist) == 1 and hist[0].step == 100 and hist[0].count == 1000 and len(hist[0].counts) == 20
    assert {(t.key, t.text, t.level) for t in texts} == {("sample", "the cat sat", 0),
                                                         ("log", "lr dropped to 0.01", logging.WARNING)}


def test_alerts_notes_and_summary_travel_in_the_runs_batches(spool_dir):
    with _offline(spool_dir, notes="a first try") as run:
        run.log({"loss": 0.5}, step=7)
        run.alert("Loss plateaued", "no progress for 3 epochs", level="WARN")
        run.alert("Diverged", step=9, level="critical")
        with pytest.raises(ValueError, match="title"):
            run.alert("  ")
        with pytest.raises(ValueError, match="level"):
            run.alert("t", level="loud")
        run.update_summary({"best": 0.25, "n": {"a": 1}})
        run.update_summary({"best": 0.2})
    batches = _spooled_batches(spool_dir)
    alerts = [(a.title, a.text, a.level, a.step) for b in batches for a in b.alerts]
    assert alerts == [("Loss plateaued", "no progress for 3 epochs", "warning", 7), ("Diverged", "", "critical", 9)]
    metas = [b.meta for b in batches if b.HasField("meta")]
    assert metas[0].notes == "a first try" and json.loads(metas[-1].summary_json) == {"best": 0.2, "n": {"a": 1}}


@dataclasses.dataclass
class _Hyper:
    lr: float = 0.1
    layers: tuple[int, ...] = (64, 64)


class _Model(pydantic.BaseModel):
    lr: float = pydantic.Field(gt=0)
    batch_size: int = 32


@pytest.mark.parametrize("config, expected", [
    (_Hyper(), {"lr": 0.1, "layers": [64, 64]}),
    (argparse.Namespace(lr=0.2, name="x"), {"lr": 0.2, "name": "x"}),
    (_Model(lr=0.3), {"lr": 0.3, "batch_size": 32}),
    ({"nested": {"a": 1}, "inf": math.inf}, {"nested": {"a": 1}, "inf": "inf"}),
])
def test_config_may_be_a_dict_dataclass_namespace_or_pydantic_model(spool_dir, config, expected):
    with _offline(spool_dir, config=config) as run:
        pass
    assert run.config == expected


def test_an_invalid_pydantic_config_fails_init_before_any_connection(spool_dir):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    model = _Model(lr=0.1)
    model.lr = -1.0  # assignment is not validated by default; init() validates again
    before = {t.name for t in threading.enumerate()}
    with pytest.raises(pydantic.ValidationError, match="greater than 0"):
        curvestream.init(project="unit", run="bad", config=model, spool_dir=str(spool_dir),
                         mqtt_url=f"mqtt://127.0.0.1:{port}", bridge_url=f"http://127.0.0.1:{port}")
    assert {t.name for t in threading.enumerate()} == before
    assert list_producers(spool_dir) == []
    with pytest.raises(socket.timeout):
        listener.accept()
    listener.close()


def test_log_in_a_forked_child_is_ignored_and_leaves_the_parent_spool_intact(spool_dir):
    with _offline(spool_dir) as run:
        run.log({"x": 1.0}, step=0)
        pid = os.fork()
        if pid == 0:  # the child: logging must neither raise nor write
            try:
                run.log({"x": 99.0}, step=1)
                run.log({"x": 98.0}, step=2)
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0
        run.log({"x": 2.0}, step=1)
    points = _points(_spooled_batches(spool_dir))
    assert [(s, v) for s, _, v in points["x"]] == [(0, 1.0), (1, 2.0)]
    assert not list(spool_dir.glob("*/*.tmp"))


def test_module_level_log_uses_the_current_run(spool_dir):
    run = _offline(spool_dir)
    curvestream.log({"a": 1.0}, step=0)
    curvestream.finish()
    assert curvestream.current_run() is None
    assert run.finish() is run.finish()  # idempotent
    assert _points(_spooled_batches(spool_dir))["a"][0][0] == 0
    with pytest.raises(RuntimeError, match="init"):
        curvestream.log({"a": 1.0})


def test_queue_full_with_drop_counts_the_dropped_calls_and_reports_them(spool_dir):
    run = _offline(spool_dir, max_queue_calls=10, queue_full="drop", flush_interval_ms=60_000)
    run.recorder.wake = lambda: None  # type: ignore[method-assign]  # keep the recorder asleep: the queue fills
    for i in range(5000):
        run.log({"x": float(i)})
    del run.recorder.wake
    report = run.finish()
    assert report.points_dropped_queue_full > 0
    assert report.points_spooled + report.points_dropped_queue_full == 5000
    assert not report.complete
