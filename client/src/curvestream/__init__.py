"""curvestream: stream training curves without slowing training.

    >>> import curvestream
    >>> run = curvestream.init(project="mnist", run="lr=0.1", config={"lr": 0.1})  # doctest: +SKIP
    >>> for step in range(100):                                                      # doctest: +SKIP
    ...     run.log({"train/loss": 1 / (step + 1)}, step=step)
    >>> run.finish()                                                                 # doctest: +SKIP

``log()`` only enqueues. A background thread batches points into columnar
protobuf, appends them to a crash-safe spool and publishes them over MQTT;
nothing leaves the spool until the bridge has stored it.
"""

from __future__ import annotations

import datetime
import secrets
from typing import Any, Iterable, Mapping

from curvestream.alerts import Alert
from curvestream.api import Api, ApiError, ApiRun
from curvestream.current import current_run, make_current
from curvestream.handler import LogHandler
from curvestream.run import FinishReport, Run
from curvestream.settings import Settings
from curvestream.version import __version__

__all__ = ["init", "log", "log_histogram", "log_text", "finish", "current_run", "Run", "Settings",
           "FinishReport", "LogHandler", "Alert", "Api", "ApiRun", "ApiError", "__version__"]


def init(
    project: str,
    run: str | None = None,
    *,
    config: Any = None,
    tags: Iterable[str] = (),
    group: str = "",
    data_version: str = "",
    mode: str | None = None,
    settings: Settings | None = None,
    **setting_overrides: Any,
) -> Run:
    """Start a run and make it the current one for ``curvestream.log``.

    ``run`` defaults to a time-stamped name. ``config`` may be a dict, a
    dataclass, an ``argparse.Namespace`` or a pydantic model (validated here,
    before anything is sent). Any :class:`Settings` field may be given as a
    keyword (``flush_interval_ms=100``); the rest come from ``CURVESTREAM_*``.
    """
    if settings is None:
        settings = Settings.from_env(mode=mode, **setting_overrides)
    elif mode is not None or setting_overrides:
        import dataclasses

        settings = dataclasses.replace(settings, **({"mode": mode} if mode else {}), **setting_overrides)
    if run is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        run = f"{stamp}-{secrets.token_hex(2)}"
    new = Run(project, run, config=config, tags=tags, group=group, data_version=data_version, settings=settings)
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


# Silence "No handlers could be found" noise in programs that configure no logging.
import logging as _logging  # noqa: E402

_logging.getLogger("curvestream").addHandler(_logging.NullHandler())
