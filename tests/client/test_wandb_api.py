"""``curvestream.wandb``: W&B's rows, steps, ``define_metric``, config, summary,
alerts and media turned into curvestream calls, checked on a recording stand-in
for the curvestream run (the seam :class:`WandbRun` takes); ``init`` itself on
real offline runs. tests/e2e/test_wandb_switch.py runs a whole W&B script
against a real bridge."""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np
import pytest

import curvestream.wandb as wandb
from curvestream.buckets import Buckets
from curvestream.wandb.config import Config
from curvestream.wandb.run import WandbRun


class Recorded:
    """Stands in for a curvestream Run: records what the W&B layer asks of it."""

    display_name, id = "r", "r-abc123"

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def log(self, values: dict[str, float], step: int) -> None:
        self.calls.append(("log", step, values))

    def log_histogram(self, key: str, values: Any, step: int, bins: int = 64) -> None:
        self.calls.append(("histogram", step, key, values, bins))

    def log_text(self, key: str, text: str, step: int) -> None:
        self.calls.append(("text", step, key, text))

    def update_config(self, values: dict[str, Any]) -> None:
        self.calls.append(("config", values))

    def update_summary(self, values: dict[str, Any]) -> None:
        self.calls.append(("summary", values))

    def alert(self, title: str, text: str, level: str) -> None:
        self.calls.append(("alert", title, text, level))

    def finish(self, status: str = "finished", reason: str = "") -> None:
        self.calls.append(("finish", status, reason))

    def logged(self) -> list[tuple[int, dict[str, float]]]:
        return [(c[1], c[2]) for c in self.calls if c[0] == "log"]


def _run(config: dict[str, Any] | None = None) -> tuple[WandbRun, Recorded]:
    inner = Recorded()
    return WandbRun(inner, Config(config), "p", "r", (), "", ""), inner  # type: ignore[arg-type]


def test_rows_and_steps_follow_wandb_implicit_commit_false_and_explicit_steps(caplog):
    run, inner = _run()
    run.log({"a": 1.0})
    run.log({"b": 2.0}, commit=False)
    run.log({"c": 3})
    run.log({"d": 4.0}, step=10)
    run.log({"e": 5.0}, step=10)
    run.log({"f": True}, step=12)  # a later step sends the open row of step 10
    run.log({"g": 7.0}, step=11)  # before the current step: dropped, said once
    run.log({"h": 8.0}, step=12, commit=True)
    run.log({"i": 9.0})
    assert inner.logged() == [(0, {"a": 1.0}), (1, {"b": 2.0, "c": 3.0}), (10, {"d": 4.0, "e": 5.0}),
                              (12, {"f": 1.0, "h": 8.0}), (13, {"i": 9.0})]
    assert "step 11 is before the current step 12" in caplog.text


def test_values_numbers_nan_nested_arrays_histograms_text_and_media(caplog):
    run, inner = _run()
    from wandb import Histogram as RealHistogram  # the wandb package's own object is taken as it is

    real = RealHistogram(np_histogram=(np.array([1, 2]), np.array([0.0, 0.5, 1.0])))
    run.log({"nan": math.nan, "inf": np.float32("inf"), "one": np.array([0.25]), "nested": {"x": {"y": 1}},
             "arr": np.arange(5.0), "h": wandb.Histogram([1, 2, 3], num_bins=8), "real": real,
             "np_h": wandb.Histogram(np_histogram=([3, 1], [0, 1, 2])), "s": "hello",
             "img": wandb.Image(np.zeros((2, 2))), "imgs": [wandb.Image(None)], "t": wandb.Table(columns=["a"])})
    run.log({"img": wandb.Image(None)})
    (_, logged), = inner.logged()
    assert math.isnan(logged.pop("nan")) and logged == {"inf": math.inf, "one": 0.25, "nested.x.y": 1.0}
    hists = {c[2]: c for c in inner.calls if c[0] == "histogram"}
    assert hists["h"][3] == [1, 2, 3] and hists["h"][4] == 8 and list(hists["arr"][3]) == [0, 1, 2, 3, 4]
    for key, edges, counts in (("real", [0.0, 0.5, 1.0], [1.0, 2.0]), ("np_h", [0.0, 1.0, 2.0], [3.0, 1.0])):
        assert isinstance(hists[key][3], Buckets) and (hists[key][3].edges, hists[key][3].counts) == (edges, counts)
    assert [c for c in inner.calls if c[0] == "text"] == [("text", 0, "s", "hello")]
    assert caplog.text.count("Image values are not stored") == 1 and caplog.text.count("Table values") == 1


def test_define_metric_draws_keys_against_their_step_metric_and_summarises_them():
    run, inner = _run()
    run.define_metric("epoch")
    run.define_metric("val/*", step_metric="epoch")
    run.define_metric("loss", summary="min,max,mean,last")
    acc = run.define_metric("acc", summary="best", goal="maximize")
    assert acc.name == "acc" and acc.goal == "maximize"
    for step in range(5):
        run.log({"loss": [3.0, 1.0, 2.0, 0.5, 4.0][step], "acc": step / 10})
    run.log({"val/acc": 0.7, "epoch": 0})
    run.log({"val/acc": 0.8})  # no epoch in the row: its last value
    run.log({"val/acc": 0.9, "epoch": 1})
    run.finish()
    assert inner.logged()[5:] == [(0, {"val/acc": 0.7}), (5, {"epoch": 0.0}), (0, {"val/acc": 0.8}),
                                  (1, {"val/acc": 0.9}), (7, {"epoch": 1.0})]
    summary = [c[1] for c in inner.calls if c[0] == "summary"][-1]
    assert summary == {"loss": {"min": 0.5, "max": 4.0, "mean": 2.1, "last": 4.0}, "acc": {"best": 0.4}}
    assert inner.calls[-1] == ("finish", "finished", "")


def test_config_summary_and_alerts_go_to_the_run(caplog):
    run, inner = _run({"lr": 0.1})
    run.config.batch = 32
    run.config.update({"lr": 0.1, "layers": [1, 2]})  # the same value again is no change
    with pytest.raises(ValueError, match="allow_val_change=True"):
        run.config.lr = 0.2
    run.config.update({"lr": 0.2}, allow_val_change=True)
    assert run.config.lr == 0.2 and run.config["batch"] == 32 and dict(run.config) == {"lr": 0.2, "batch": 32,
                                                                                        "layers": [1, 2]}
    run.summary["best"] = 0.9
    run.summary.final = 0.8  # sent at most every second while logging, and at finish()
    run.alert("Loss exploded", "at step 3", level=wandb.AlertLevel.ERROR)
    run.alert("Loss exploded", "again", level="ERROR")  # the same title within wait_duration: not sent
    run.alert("Slow", "epoch took 2 h", wait_duration=0)
    with pytest.raises(ValueError, match="INFO"):
        run.alert("x", "y", level="LOUD")
    run.watch(object(), log="all")
    run.finish(exit_code=3)
    assert [c for c in inner.calls if c[0] == "config"] == [("config", {"batch": 32}),
                                                           ("config", {"lr": 0.1, "layers": [1, 2]}),
                                                           ("config", {"lr": 0.2})]
    assert [c for c in inner.calls if c[0] == "summary"][-1] == ("summary", {"best": 0.9, "final": 0.8})
    assert [c for c in inner.calls if c[0] == "alert"] == [("alert", "Loss exploded", "at step 3", "critical"),
                                                          ("alert", "Slow", "epoch took 2 h", "info")]
    assert inner.calls[-1] == ("finish", "failed", "exit code 3")
    assert "watch() is accepted and ignored" in caplog.text


def test_init_maps_wandbs_arguments_and_the_module_follows_the_current_run(tmp_path, monkeypatch):
    monkeypatch.setenv("CURVESTREAM_SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.setenv("WANDB_PROJECT", "from-env")
    wandb.config.update({"set_before_init": 1})
    run = wandb.init(name="exp", config={"lr": 0.1, "secret": "x"}, tags=["a"], group="g", notes="n",
                     mode="offline", config_exclude_keys=["secret"], entity="someone", job_type="train")
    assert wandb.run is run and run.project == "from-env" and run.name == "exp" and run.id.startswith("exp-")
    assert dict(wandb.config) == {"set_before_init": 1, "lr": 0.1} and wandb.summary is run.summary
    inner = run._run
    assert inner.meta.notes == "n" and list(inner.meta.tags) == ["a"] and inner.meta.group == "g"
    wandb.log({"x": 1.0})
    second = wandb.init(project="p2", id="fixed-id", mode="offline")  # a new init finishes the one before
    assert inner._report is not None and second.id == "fixed-id" and wandb.run is second
    with pytest.raises(ValueError, match="resume must be one of"):
        wandb.init(project="p", resume="sometimes", mode="offline")
    second.finish()
    assert wandb.run is None and dict(wandb.config) == {}
    with pytest.raises(wandb.Error):
        wandb.log({"x": 1.0})

    with pytest.raises(RuntimeError):
        with wandb.init(project="p", name="boom", mode="offline") as failing:
            wandb.log({"x": 2.0})
            raise RuntimeError("diverged")
    assert failing._run._report is not None and wandb.run is None

    disabled = wandb.init(project="p", mode="disabled")
    disabled.log({"x": 1.0})
    wandb.alert("t", "x")
    wandb.finish()
    assert disabled._run is None and wandb.run is None


def test_a_spool_dir_follows_wandbs_dir(tmp_path, monkeypatch, caplog):
    monkeypatch.delenv("CURVESTREAM_SPOOL_DIR", raising=False)
    caplog.set_level(logging.WARNING)
    run = wandb.init(project="p", name="d", dir=str(tmp_path), mode="offline")
    assert run._run.settings.spool_dir == str(tmp_path / "curvestream-spool")
    run.finish()
