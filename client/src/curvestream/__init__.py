"""curvestream: stream training curves without slowing training.

    >>> import curvestream
    >>> run = curvestream.init(project="mnist", run="lr=0.1", config={"lr": 0.1})  # doctest: +SKIP
    >>> for step in range(100):                                                      # doctest: +SKIP
    ...     run.log({"train/loss": 1 / (step + 1)}, step=step)
    >>> run.finish()                                                                 # doctest: +SKIP

``log()`` only enqueues. A background thread batches points into columnar
protobuf, appends them to a crash-safe spool and publishes them over MQTT;
nothing leaves the spool until the bridge has stored it.

Each ``init()`` starts a new run, even under a name used before (its identity
is the name and a random suffix); ``resume="allow"`` or ``"must"`` continues
the newest run of that name instead, ``id=`` a run of that identity
(:mod:`curvestream.identity`). When data is left behind, or neither the broker
nor the bridge answers, one line says so on stderr (:mod:`curvestream.notices`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from curvestream.alerts import Alert
from curvestream.api import Api, ApiError, ApiRun
from curvestream.current import current_run, make_current
from curvestream.factory import start_run
from curvestream.handler import LogHandler
from curvestream.identity import resolve
from curvestream.meta import normalize_config
from curvestream.run import FinishReport, Run
from curvestream.settings import Settings
from curvestream.version import __version__

__all__ = ["init", "log", "log_histogram", "log_text", "finish", "current_run", "Run", "Settings",
           "FinishReport", "LogHandler", "Alert", "Api", "ApiRun", "ApiError", "__version__"]


def init(
    project: str,
    run: str | None = None,
    *,
    id: str | None = None,
    resume: str | None = None,
    config: Any = None,
    tags: Iterable[str] = (),
    group: str = "",
    data_version: str = "",
    notes: str = "",
    mode: str | None = None,
    settings: Settings | None = None,
    **setting_overrides: Any,
) -> Run:
    """Start a run and make it the current one for ``curvestream.log``.

    ``run`` is the run's name; each call makes a new run (identity
    ``NAME-xxxxxx``, see ``Run.id``) unless ``resume="allow"`` (the newest run of
    that name if there is one, else a new one) or ``resume="must"`` (that run,
    else an error) asks the bridge for the run to continue, or ``id=`` names the
    identity itself (continued if stored). A resumed run's implicit steps go on
    after the stored run's last step. ``run`` defaults to a time-stamped name,
    which is its own identity. ``config`` may be a dict, a
    dataclass, an ``argparse.Namespace`` or a pydantic model (validated here,
    before anything is sent); ``notes``: free text about the run. Any :class:`Settings` field may be given as a
    keyword (``flush_interval_ms=100``); the rest come from ``CURVESTREAM_*``.
    """
    if settings is None:
        settings = Settings.from_env(mode=mode, **setting_overrides)
    elif mode is not None or setting_overrides:
        import dataclasses

        if mode:
            setting_overrides["mode"] = mode
        settings = dataclasses.replace(settings, **setting_overrides)
    config = normalize_config(config)  # a bad config fails here, before the bridge is asked anything
    identity = resolve(project, run, settings, id=id, resume=resume)
    new = start_run(project, identity.id, config=config, tags=tags, group=group, data_version=data_version,
                    notes=notes, settings=settings, identity=identity)
    make_current(new)
    return new


def _require_run() -> Run:
    run = current_run()
    if run is None:
        raise RuntimeError("curvestream: call curvestream.init() before curvestream.log()")
    return run


def log(data: Mapping[str, Any], step: int | None = None) -> None:
    """``curvestream.log({"loss": 0.3}, step=7)`` on the current run."""
    _require_run().log(data, step)


def log_histogram(key: str, values: Any, step: int | None = None, bins: int = 64) -> None:
    _require_run().log_histogram(key, values, step, bins)


def log_text(key: str, text: str, step: int | None = None, level: int = 0) -> None:
    _require_run().log_text(key, text, step, level)


def finish(status: str = "finished", reason: str = "") -> FinishReport | None:
    """Finish the current run (if any)."""
    run = make_current(None)
    return run.finish(status, reason) if run is not None else None


# No NullHandler: in a program that configures no logging, the client's warnings
# (data left in the spool, an unreachable broker or bridge) reach stderr through
# Python's last-resort handler; a program that configures logging gets them there.
