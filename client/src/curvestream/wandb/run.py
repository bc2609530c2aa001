"""A W&B run over a curvestream run: W&B's steps and rows, ``define_metric``,
config, summary and alerts, turned into curvestream's calls.

Steps follow W&B: each ``log()`` without ``step`` is a row of its own at the
next step; ``commit=False`` adds to the row being built; with ``step=`` the
row stays open until a later step (or ``commit=True``); a step before the
current one is dropped with a warning. A row is sent as one curvestream
``log()`` at its step: numbers (and bools, NaN, ±Inf, one-element arrays) as
points, nested dicts as ``a.b`` keys, histograms (``Histogram``, arrays of
more than one value) as histograms, strings as text; media are dropped with
one warning per type.
"""

from __future__ import annotations

import enum
import fnmatch
import logging
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from curvestream.run import Run
from curvestream.values import to_float
from curvestream.wandb.config import Config, Summary
from curvestream.wandb.data_types import Histogram, Media, buckets_of

__all__ = ["WandbRun", "AlertLevel", "Metric"]

log = logging.getLogger("curvestream.wandb")

SUMMARY_EVERY_S = 1.0
"""A summary that changes is sent at most this often while logging, and at finish()."""


class AlertLevel(str, enum.Enum):
    INFO = "INFO"
    WARN = "WARN"
    ERROR = "ERROR"


class Metric:
    """What ``define_metric`` returns: a key pattern and how it is drawn and summarised."""

    def __init__(self, name: str, step_metric: str | None, summary: str | None, goal: str | None,
                 hidden: bool) -> None:
        self.name, self.step_metric, self.summary, self.goal, self.hidden = name, step_metric, summary, goal, hidden

    def matches(self, key: str) -> bool:
        return key == self.name or ("*" in self.name and fnmatch.fnmatchcase(key, self.name))


class WandbRun:
    """``wandb.run``: ``name``, ``id``, ``project``, ``config``, ``summary``, ``log``, ``finish``, ..."""

    def __init__(self, run: Run | None, config: Config, project: str, name: str, tags: tuple[str, ...],
                 group: str, notes: str) -> None:
        self._run = run  # None: mode="disabled", every call does nothing
        self.project, self.tags, self.group, self.notes = project, tags, group, notes
        self.name = run.display_name if run is not None else name
        self.id = run.id if run is not None else name
        self.config = config
        self.summary = Summary()
        self._step = 0
        self._row: dict[str, Any] = {}
        self._metrics: list[Metric] = []
        self._step_values: dict[str, float] = {}  # the last value of each step metric
        self._aggregates: dict[str, dict[str, float]] = {}
        self._warned: set[str] = set()
        self._summary_dirty = False
        self._summary_sent = 0.0
        self._alert_sent: dict[str, float] = {}
        self._finished = False
        self.on_finish: Callable[[WandbRun], None] | None = None
        """Called once the run has finished (``wandb.run`` is then None again)."""
        config._bind(self._config_changed)
        self.summary._bind(self._summary_changed)

    @property
    def step(self) -> int:
        return self._step

    @property
    def url(self) -> str:
        return self._run.settings.bridge_url if self._run is not None else ""

    # ------------------------------------------------------------------ logging
    def log(self, data: Mapping[str, Any], step: int | None = None, commit: bool | None = None) -> None:
        if self._finished:
            return self._warn_once("finished", "curvestream.wandb: log() after finish() is ignored")
        if not isinstance(data, Mapping):
            raise TypeError(f"curvestream.wandb: log() takes a dict, got {type(data).__name__}")
        if step is not None:
            step = int(step)
            if step < self._step:
                return self._warn_once(f"step {step}", f"curvestream.wandb: step {step} is before the current step "
                                       f"{self._step}; W&B drops it, and so does curvestream")
            if step > self._step:
                self._commit()
                self._step = step
        _flatten(data, "", self._row)
        if commit or (commit is None and step is None):
            self._commit()
            self._step += 1

    def _commit(self) -> None:
        """Send the row being built at the current step."""
        row, self._row = self._row, {}
        if not row or self._run is None:
            return
        scalars: dict[str, float] = {}
        for key, value in row.items():
            kind = _kind(value)
            if kind == "scalar":
                scalars[key] = to_float(key, value)
            elif kind == "histogram":
                self._run.log_histogram(key, _histogram_values(value), step=self._step_of(key, row),
                                        bins=getattr(value, "num_bins", 64))
            elif kind == "text":
                self._run.log_text(key, value, step=self._step_of(key, row))
            else:
                shown = type(value[0] if isinstance(value, (list, tuple)) and value else value).__name__
                self._warn_once(shown, f"curvestream.wandb: {shown} values are not stored (first: {key!r}); "
                                "numbers, histograms and text are")
        for metric in self._metrics:  # step metrics seen in this row, before keys drawn against them use them
            if metric.step_metric in scalars:
                self._step_values[metric.step_metric] = scalars[metric.step_metric]
        by_step: dict[int, dict[str, float]] = {}
        for key, value in scalars.items():
            by_step.setdefault(self._step_of(key, row), {})[key] = value
            self._aggregate(key, value)
        for step, values in by_step.items():
            self._run.log(values, step=step)
        self._send_summary()

    def _step_of(self, key: str, row: Mapping[str, Any]) -> int:
        """W&B's step, or the value of the step metric ``define_metric`` gave the key."""
        for metric in self._metrics:
            if metric.step_metric and metric.matches(key) and key != metric.step_metric:
                value = row.get(metric.step_metric, self._step_values.get(metric.step_metric))
                if isinstance(value, (int, float)) and math.isfinite(value):
                    return int(value)
        return self._step

    # ------------------------------------------------------------------ define_metric, summary, config
    def define_metric(self, name: str, step_metric: Any = None, step_sync: bool | None = None,
                      hidden: bool | None = None, summary: str | None = None, goal: str | None = None,
                      overwrite: bool | None = None) -> Metric:
        """Keys matching ``name`` (a key, or a glob such as ``val/*``) drawn against ``step_metric``
        (their step is its value in the same row, else its last value) and summarised by
        ``summary`` (``min``, ``max``, ``mean``, ``first``, ``last``, ``best`` with ``goal``)."""
        step_name = getattr(step_metric, "name", step_metric)
        metric = Metric(str(name), str(step_name) if step_name else None, summary, goal, bool(hidden))
        self._metrics = [m for m in self._metrics if m.name != metric.name] + [metric]
        return metric

    def _aggregate(self, key: str, value: float) -> None:
        for metric in self._metrics:
            if not metric.summary or not metric.matches(key):
                continue
            agg = self._aggregates.setdefault(key, {"n": 0.0, "sum": 0.0})
            agg["n"] += 1
            agg["sum"] += value
            agg.setdefault("first", value)
            agg["last"] = value
            if not math.isnan(value):
                agg["min"] = min(agg.get("min", value), value)
                agg["max"] = max(agg.get("max", value), value)
            wanted = {}
            for how in (s.strip() for s in metric.summary.split(",")):
                if how == "mean":
                    wanted["mean"] = agg["sum"] / agg["n"]
                elif how == "best":
                    wanted["best"] = agg.get("max" if metric.goal in ("max", "maximize") else "min", value)
                elif how in agg:
                    wanted[how] = agg[how]
            if wanted:
                self.summary._values[key] = wanted
                self._summary_dirty = True
            return

    def _summary_changed(self, values: dict[str, Any]) -> None:
        self._summary_dirty = True
        self._send_summary()

    def _send_summary(self, now: bool = False) -> None:
        if not self._summary_dirty or self._run is None:
            return
        if now or time.monotonic() - self._summary_sent >= SUMMARY_EVERY_S:
            self._summary_dirty = False
            self._summary_sent = time.monotonic()
            self._run.update_summary(self.summary.as_dict())

    def _config_changed(self, values: dict[str, Any]) -> None:
        if self._run is not None:
            self._run.update_config(values)

    # ------------------------------------------------------------------ alerts, watch, finish
    def alert(self, title: str, text: str, level: str | AlertLevel | None = None,
              wait_duration: float | Any = None) -> None:
        """An alert from the script (``run.alert``), not sent again with the same title
        within ``wait_duration`` (seconds or a timedelta; W&B's default: a minute)."""
        level = level or AlertLevel.INFO
        level = level.value if isinstance(level, AlertLevel) else str(level)
        if level.upper() not in {lv.value for lv in AlertLevel}:
            raise ValueError("curvestream.wandb: level must be one of 'INFO', 'WARN', or 'ERROR'")
        wait_s = wait_duration.total_seconds() if hasattr(wait_duration, "total_seconds") else \
            float(wait_duration or 60.0)
        now = time.monotonic()
        if now - self._alert_sent.get(title, -math.inf) < wait_s:
            return
        self._alert_sent[title] = now
        if self._run is not None:
            self._run.alert(title, text, {"INFO": "info", "WARN": "warning", "ERROR": "critical"}[level.upper()])

    def watch(self, *args: Any, **kwargs: Any) -> None:
        self._warn_once("watch", "curvestream.wandb: watch() is accepted and ignored (no gradients or parameters "
                        "are logged); log them with run.log_histogram if you need them")

    def unwatch(self, *args: Any, **kwargs: Any) -> None:
        pass

    def finish(self, exit_code: int | None = None, quiet: bool | None = None) -> None:
        """Send the last row and the summary, and finish: exit code 0 (or none) is finished, any other failed."""
        if exit_code:
            self._end("failed", f"exit code {exit_code}")
        else:
            self._end("finished", "")

    def _end(self, status: str, reason: str) -> None:
        if self._finished:
            return
        self._commit()
        self._finished = True
        if self._run is not None:
            self._send_summary(now=True)
            self._run.finish(status, reason)
        if self.on_finish is not None:
            self.on_finish(self)

    def flush_at_exit(self) -> None:
        """At interpreter exit, a script that never called ``finish()``: its last row and its
        summary are sent; the exit hook of the curvestream run then finishes it (failed after an
        uncaught exception)."""
        if not self._finished and self._run is not None:
            try:
                self._commit()
                self._send_summary(now=True)
            except Exception:
                log.exception("curvestream.wandb: sending the last row at exit failed")

    def _warn_once(self, what: str, message: str) -> None:
        if what not in self._warned:
            self._warned.add(what)
            log.warning(message)

    def __enter__(self) -> WandbRun:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.finish()
        else:
            self._end("failed", f"{exc_type.__name__}: {exc}"[:2000])

    def __repr__(self) -> str:
        return f"<curvestream.wandb run {self.project}/{self.id}>"


def _flatten(data: Mapping[str, Any], prefix: str, out: dict[str, Any]) -> None:
    for key, value in data.items():
        name = prefix + str(key)
        if isinstance(value, Mapping) and not _is_value(value):
            _flatten(value, name + ".", out)
        else:
            out[name] = value


def _is_value(value: Any) -> bool:
    return isinstance(value, (Histogram, Media))


def _kind(value: Any) -> str:
    if isinstance(value, str):
        return "text"
    if isinstance(value, Histogram) or buckets_of(value) is not None:
        return "histogram"
    if isinstance(value, (bool, int, float)):
        return "scalar"
    shape = getattr(value, "shape", None)
    if shape is not None and hasattr(value, "item"):
        return "scalar" if math.prod(shape) == 1 else "histogram"  # W&B keeps arrays as histograms
    try:
        to_float("", value)
    except TypeError:
        return "media"
    return "scalar"


def _histogram_values(value: Any) -> Any:
    buckets = buckets_of(value)
    if buckets is not None:
        return buckets
    return value.sequence if isinstance(value, Histogram) else value
