"""W&B's Python API, streaming to curvestream: switching a script is one line.

    >>> import curvestream.wandb as wandb        # was: import wandb
    >>> run = wandb.init(project="mnist", name="lr=0.1", config={"lr": 0.1}, tags=["baseline"])  # doctest: +SKIP
    >>> wandb.define_metric("val/*", step_metric="epoch")                                         # doctest: +SKIP
    >>> for step in range(100):                                                                  # doctest: +SKIP
    ...     wandb.log({"train/loss": 1 / (step + 1)})
    >>> run.summary["best_acc"] = 0.98                                                            # doctest: +SKIP
    >>> wandb.alert(title="Low accuracy", text="below 0.5", level=wandb.AlertLevel.WARN)           # doctest: +SKIP
    >>> run.finish()                                                                             # doctest: +SKIP

What maps where (see :mod:`curvestream.wandb.run` for rows and steps):

- ``init(project, name, id, config, tags, group, notes, dir, mode, resume)``:
  ``curvestream.init(project, run=name, id=id, resume=...)``: each init is a new
  run named ``name`` unless ``resume`` (``"allow"``, ``"must"``; ``True`` and
  ``"auto"`` mean ``"allow"``) or ``id`` continues one; ``mode="offline"``
  spools for ``curvestream sync``, ``"disabled"`` makes a run that records
  nothing; ``dir`` holds the spool (``DIR/curvestream-spool``) unless
  ``CURVESTREAM_SPOOL_DIR`` is set. ``WANDB_PROJECT``, ``WANDB_NAME``,
  ``WANDB_RUN_ID``, ``WANDB_RUN_GROUP``, ``WANDB_TAGS``, ``WANDB_NOTES`` and
  ``WANDB_MODE`` are read as W&B reads them. Entity, job type, settings and the
  other arguments of W&B's ``init`` are accepted and have no effect.
- ``config`` (attribute and item access, ``update``) is the run's config;
  ``summary`` its summary (``RunMeta.summary_json``); ``alert`` raises a
  curvestream alert at the current step (every alert channel); ``watch`` is
  ignored with a warning; ``finish(exit_code)``: 0 finished, else failed.
- ``Histogram`` is stored as a histogram; ``Table``, ``Image`` and the other
  media are accepted and not stored (one warning per type).
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Iterable
from typing import Any

import curvestream
from curvestream.wandb.config import Config, Summary
from curvestream.wandb.data_types import Audio, Histogram, Html, Image, Molecule, Object3D, Plotly, Table, Video
from curvestream.wandb.run import AlertLevel, Metric, WandbRun

__all__ = ["init", "log", "finish", "define_metric", "alert", "watch", "unwatch", "login", "run", "config",
           "summary", "AlertLevel", "Metric", "Histogram", "Table", "Image", "Audio", "Video", "Html", "Object3D",
           "Plotly", "Molecule", "Config", "Summary", "Error", "WandbRun"]

run: WandbRun | None = None
config: Config = Config()  # before init(): what the script sets is merged into the run's config, as in W&B
summary: Summary = Summary()

_RESUME = {None: None, False: None, "never": None, True: "allow", "auto": "allow", "allow": "allow", "must": "must"}


class Error(Exception):
    """Raised where W&B raises ``wandb.Error`` (a call that needs ``init()`` first)."""


def init(project: str | None = None, name: str | None = None, id: str | None = None,
         config: Any = None, tags: Iterable[str] | None = None, group: str | None = None, notes: str | None = None,
         dir: str | None = None, mode: str | None = None, resume: Any = None,
         *, reinit: Any = None, config_exclude_keys: Iterable[str] | None = None,
         config_include_keys: Iterable[str] | None = None, **ignored: Any) -> WandbRun:
    """Start a run (W&B's ``wandb.init``); see the module docstring for what maps where."""
    global run, summary
    env = os.environ
    project = project or env.get("WANDB_PROJECT") or "uncategorized"
    name = name or env.get("WANDB_NAME") or None
    id = id or env.get("WANDB_RUN_ID") or None
    group = group or env.get("WANDB_RUN_GROUP") or ""
    notes = notes or env.get("WANDB_NOTES") or ""
    tags = tuple(tags) if tags is not None else tuple(t for t in env.get("WANDB_TAGS", "").split(",") if t)
    mode = (mode or env.get("WANDB_MODE") or "online").lower()
    mode = {"dryrun": "offline", "shared": "online"}.get(mode, mode)
    if mode not in ("online", "offline", "disabled"):
        raise ValueError(f"curvestream.wandb: mode must be 'online', 'offline' or 'disabled', got {mode!r}")
    if resume not in _RESUME:
        raise ValueError(f"curvestream.wandb: resume must be one of {sorted(map(str, _RESUME))}, got {resume!r}")
    if run is not None and reinit != "create_new":
        run.finish()  # W&B's default: a new init in a script finishes the one before

    before = globals()["config"].as_dict() if run is None else {}
    values = {**before, **_plain_config(config)}
    if config_include_keys is not None:
        keep = set(config_include_keys)
        values = {k: v for k, v in values.items() if k in keep}
    for key in config_exclude_keys or ():
        values.pop(key, None)
    if mode == "disabled":
        new = WandbRun(None, Config(values), project, name or "disabled", tags, group, notes)
    else:
        settings: dict[str, Any] = {"mode": mode}
        if dir and "CURVESTREAM_SPOOL_DIR" not in env:
            settings["spool_dir"] = os.path.join(dir, "curvestream-spool")
        inner = curvestream.init(project, run=name, id=id, resume=_RESUME[resume], config=values, tags=tags,
                                 group=group, notes=notes, **settings)
        new = WandbRun(inner, Config(values), project, inner.display_name, tags, group, notes)
    new.on_finish = _finished
    atexit.register(new.flush_at_exit)  # before the exit hook that finishes the curvestream run (registered earlier)
    run = new
    globals()["config"] = new.config
    summary = new.summary
    return new


def _finished(finished: WandbRun) -> None:
    """``run.finish()`` or ``wandb.finish()``: no current run any more, as in W&B."""
    global run, summary
    if run is finished:
        run = None
        globals()["config"], summary = Config(), Summary()


def _plain_config(config: Any) -> dict[str, Any]:
    """W&B's ``config=``: a dict, an ``argparse.Namespace``, absl flags (or a dataclass,
    a pydantic model); a path to a YAML file is not read."""
    if config is None:
        return {}
    if isinstance(config, str):
        raise ValueError("curvestream.wandb: a config file path is not read; pass its contents as a dict")
    if isinstance(config, Config):
        return config.as_dict()
    if hasattr(config, "flag_values_dict"):  # absl flags
        config = config.flag_values_dict()
    return curvestream.normalize_config(config)


def _current() -> WandbRun:
    if run is None:
        raise Error("curvestream.wandb: call wandb.init() before this")
    return run


def log(data: dict[str, Any], step: int | None = None, commit: bool | None = None) -> None:
    _current().log(data, step=step, commit=commit)


def define_metric(name: str, step_metric: Any = None, step_sync: bool | None = None, hidden: bool | None = None,
                  summary: str | None = None, goal: str | None = None, overwrite: bool | None = None) -> Metric:
    return _current().define_metric(name, step_metric, step_sync, hidden, summary, goal, overwrite)


def alert(title: str, text: str, level: Any = None, wait_duration: Any = None) -> None:
    _current().alert(title, text, level, wait_duration)


def watch(*args: Any, **kwargs: Any) -> None:
    if run is not None:
        run.watch(*args, **kwargs)


def unwatch(*args: Any, **kwargs: Any) -> None:
    pass


def login(*args: Any, **kwargs: Any) -> bool:
    """Nothing to log in to: curvestream's bridge takes ``CURVESTREAM_WRITE_TOKEN``."""
    return True


def finish(exit_code: int | None = None, quiet: bool | None = None) -> None:
    """Finish the current run (none: nothing to do)."""
    if run is not None:
        run.finish(exit_code, quiet)
