"""``SummaryWriter`` with the constructor and methods of
``torch.utils.tensorboard.SummaryWriter`` and ``tensorboardX.SummaryWriter``,
streaming to curvestream instead of (or, with ``tee=True``, besides) event files.

    >>> from curvestream.tensorboard import SummaryWriter   # was: from torch.utils.tensorboard import ...
    >>> with SummaryWriter("runs/exp1") as writer:          # doctest: +SKIP
    ...     for step in range(100):
    ...         writer.add_scalar("train/loss", 1 / (step + 1), step)

The project and run name come from ``log_dir`` (``runs/exp1`` -> project
``runs``, run ``exp1``) unless given. Each writer makes a new run under that
name (identity ``exp1-xxxxxx``), so running a script twice gives two runs
rather than one with every step twice; ``resume="allow"|"must"`` or ``id=``
continues one instead (:mod:`curvestream.identity`). ``add_scalars`` writes one
run per sub-tag, named as TensorBoard names its sub-directories
(``exp1/loss_train``, identity ``exp1-xxxxxx/loss_train``). Steps follow
TensorBoard: a call without ``global_step`` is at step 0. Images, figures,
graphs, embeddings, audio, video and PR curves are accepted and ignored (one
warning each) unless ``tee=True`` writes them to real event files.
"""

from __future__ import annotations

import datetime
import logging
import os
import socket
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from curvestream.factory import start_run
from curvestream.identity import Identity, resolve
from curvestream.run import Run
from curvestream.settings import Settings
from curvestream.tensorboard.histogram import from_tensorboard, tensorboard_buckets
from curvestream.walltime import PinnableClock, seconds_to_ns

__all__ = ["SummaryWriter"]

log = logging.getLogger("curvestream.tensorboard")

_IGNORED = (
    "add_image", "add_images", "add_image_with_boxes", "add_figure", "add_video", "add_audio", "add_graph",
    "add_onnx_graph", "add_openvino_graph", "add_embedding", "add_pr_curve", "add_pr_curve_raw", "add_mesh",
    "add_custom_scalars", "add_custom_scalars_multilinechart", "add_custom_scalars_marginchart", "add_tensor",
    "add_video_raw",
)


def _default_log_dir(comment: str) -> str:
    stamp = datetime.datetime.now().strftime("%b%d_%H-%M-%S")
    return os.path.join("runs", stamp + "_" + socket.gethostname() + comment)


def names_from_log_dir(log_dir: str) -> tuple[str, str]:
    """(project, run): the log directory's parent and its own name."""
    path = os.path.normpath(os.path.abspath(log_dir))
    run = os.path.basename(path) or "run"
    project = os.path.basename(os.path.dirname(path)) or "tensorboard"
    return project, run


def _tee_writer(**kwargs: Any) -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter as TorchWriter
    except ImportError:
        try:
            from tensorboardX import SummaryWriter as XWriter
        except ImportError:
            raise ImportError("curvestream: tee=True writes event files with torch.utils.tensorboard or "
                              "tensorboardX; install one of them (from a clone: pip install ./proto "
                              "'./client[tensorboard]')") from None
        kwargs["logdir"] = kwargs.pop("log_dir")
        return XWriter(**kwargs)
    return TorchWriter(**kwargs)


class SummaryWriter:
    def __init__(
        self,
        log_dir: str | None = None,
        comment: str = "",
        purge_step: int | None = None,
        max_queue: int = 10,
        flush_secs: int = 120,
        filename_suffix: str = "",
        *,
        logdir: str | None = None,
        write_to_disk: bool = True,
        project: str | None = None,
        run: str | None = None,
        id: str | None = None,
        resume: str | None = None,
        config: Any = None,
        tee: bool = False,
        settings: Settings | None = None,
        **setting_overrides: Any,
    ) -> None:
        log_dir = log_dir or logdir or _default_log_dir(comment)
        self.log_dir = self.logdir = str(log_dir)
        default_project, default_run = names_from_log_dir(self.log_dir)
        self.purge_step = purge_step
        self._settings = settings or Settings.from_env(**setting_overrides)
        self._clock = PinnableClock()
        project = project or default_project
        identity = resolve(project, run or default_run, self._settings, id=id, resume=resume)
        self.run = start_run(project, identity.id, config=config, settings=self._settings, clock_ns=self._clock,
                             identity=identity)
        self._sub_runs: dict[str, Run] = {}
        self._warned: set[str] = set()
        # tensorboardX's write_to_disk=False means "no event files": the tee is off then
        self._tee = (
            _tee_writer(
                log_dir=self.log_dir,
                comment=comment,
                purge_step=purge_step,
                max_queue=max_queue,
                flush_secs=flush_secs,
                filename_suffix=filename_suffix,
            )
            if tee and write_to_disk
            else None
        )

    # ------------------------------------------------------------------ scalars
    def add_scalar(self, tag: str, scalar_value: Any, global_step: int | None = None, walltime: float | None = None,
                   new_style: bool = False, double_precision: bool = False) -> None:
        step = 0 if global_step is None else global_step
        if self._tee is not None:
            walltime = time.time() if walltime is None else walltime
            self._tee.add_scalar(tag, scalar_value, global_step, walltime, new_style, double_precision)
        if walltime is None:
            self.run.log({tag: scalar_value}, step)
            return
        self._clock.pin(seconds_to_ns(walltime))
        try:
            self.run.log({tag: scalar_value}, step)
        finally:
            self._clock.pin(None)

    def add_scalars(self, main_tag: str, tag_scalar_dict: Mapping[str, Any], global_step: int | None = None,
                    walltime: float | None = None) -> None:
        walltime = time.time() if walltime is None else walltime
        if self._tee is not None:
            self._tee.add_scalars(main_tag, tag_scalar_dict, global_step, walltime)
        step = 0 if global_step is None else global_step
        self._clock.pin(seconds_to_ns(walltime))
        try:
            for tag, value in tag_scalar_dict.items():
                self._sub_run(main_tag.replace("/", "_") + "_" + tag).log({main_tag: value}, step)
        finally:
            self._clock.pin(None)

    def _sub_run(self, suffix: str) -> Run:
        sub = self._sub_runs.get(suffix)
        if sub is None:
            identity = Identity(f"{self.run.name}/{suffix}", f"{self.run.display_name}/{suffix}")
            sub = self._sub_runs[suffix] = start_run(self.run.project, identity.id, settings=self._settings,
                                                     clock_ns=self._clock, identity=identity)
        return sub

    # ------------------------------------------------------------------ histograms and text
    def add_histogram(self, tag: str, values: Any, global_step: int | None = None, bins: Any = "tensorflow",
                      walltime: float | None = None, max_bins: int | None = None) -> None:
        walltime = time.time() if walltime is None else walltime
        if self._tee is not None:
            self._tee.add_histogram(tag, values, global_step, bins, walltime, max_bins)
        self._at(walltime, self.run.log_histogram, tag, tensorboard_buckets(values, bins, max_bins), global_step)

    def add_histogram_raw(self, tag: str, min: float, max: float, num: int, sum: float,
                          sum_squares: float, bucket_limits: Any, bucket_counts: Any,
                          global_step: int | None = None, walltime: float | None = None) -> None:
        walltime = time.time() if walltime is None else walltime
        if self._tee is not None:
            self._tee.add_histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts,
                                        global_step, walltime)
        buckets = from_tensorboard(list(bucket_limits), list(bucket_counts), min=float(min), max=float(max),
                                   sum=float(sum), num=num)
        self._at(walltime, self.run.log_histogram, tag, buckets, global_step)

    def add_text(self, tag: str, text_string: str, global_step: int | None = None,
                 walltime: float | None = None) -> None:
        walltime = time.time() if walltime is None else walltime
        if self._tee is not None:
            self._tee.add_text(tag, text_string, global_step, walltime)
        self._at(walltime, self.run.log_text, tag, str(text_string), global_step)

    def _at(self, walltime: float, method: Any, key: str, payload: Any, global_step: int | None) -> None:
        self._clock.pin(seconds_to_ns(walltime))
        try:
            method(key, payload, 0 if global_step is None else global_step)
        finally:
            self._clock.pin(None)

    # ------------------------------------------------------------------ hyperparameters
    def add_hparams(self, hparam_dict: Mapping[str, Any], metric_dict: Mapping[str, Any],
                    hparam_domain_discrete: Any = None, run_name: str | None = None,
                    global_step: int | None = None) -> None:
        """The hyperparameters join the run's config; the metrics are logged at ``global_step`` (0 when None)."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        if self._tee is not None:
            self._tee.add_hparams(hparam_dict, metric_dict, hparam_domain_discrete, run_name, global_step)
        self.run.update_config({k: _plain(v) for k, v in hparam_dict.items()})
        if metric_dict:
            self.run.log(metric_dict, 0 if global_step is None else global_step)

    # ------------------------------------------------------------------ what curvestream does not keep
    def __getattr__(self, name: str) -> Any:
        if name in _IGNORED:
            return lambda *args, **kwargs: self._ignored(name, args, kwargs)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _ignored(self, name: str, args: tuple, kwargs: dict) -> None:
        if self._tee is not None:
            return getattr(self._tee, name)(*args, **kwargs)
        if name not in self._warned:
            self._warned.add(name)
            log.warning("curvestream: SummaryWriter.%s is not stored by curvestream and is ignored "
                        "(tee=True also writes TensorBoard event files)", name)
        return None

    # ------------------------------------------------------------------ life
    def get_logdir(self) -> str:
        return self.log_dir

    def flush(self) -> None:
        """Points are spooled within ``flush_interval_ms`` anyway; this flushes the tee's event files."""
        if self._tee is not None:
            self._tee.flush()

    def close(self, status: str = "finished", reason: str = "") -> None:
        for sub in self._sub_runs.values():
            sub.finish(status, reason)
        self.run.finish(status, reason)
        if self._tee is not None:
            self._tee.close()

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.close()
        else:
            self.close("failed", f"{exc_type.__name__}: {exc}"[:2000])


def _plain(value: Any) -> Any:
    """A hyperparameter as TensorBoard takes it: numbers, strings, bools; tensors as numbers."""
    if hasattr(value, "item") and getattr(value, "shape", None) in ((), (1,), [1]):
        return value.item()
    return value
