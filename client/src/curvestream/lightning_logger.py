"""The body of ``CurvestreamLogger``, one for both Lightning namespaces
(``lightning.pytorch`` and ``pytorch_lightning`` have distinct base classes)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from curvestream.lazyrun import LazyRun, flatten
from curvestream.run import Run
from curvestream.settings import Settings

__all__ = ["logger_class"]


def _plain_params(params: Any) -> dict[str, Any]:
    if isinstance(params, argparse.Namespace):
        params = vars(params)
    if not isinstance(params, Mapping):
        return {"hparams": str(params)}
    plain = {}
    for key, value in flatten(params).items():
        if isinstance(value, argparse.Namespace):
            plain.update(flatten(vars(value), prefix=key))
        elif callable(value) and not isinstance(value, type):
            plain[key] = getattr(value, "__name__", None) or repr(value)
        else:
            plain[key] = value
    return plain


def logger_class(base: type, rank_zero_experiment: Callable, rank_zero_only: Callable) -> type:
    class CurvestreamLogger(base):
        """Logs a Lightning fit (or a Fabric loop) to a curvestream run.

        ``CurvestreamLogger(project="mnist", run="lr=0.1", config={...}, **settings)``; any
        :class:`curvestream.Settings` field may be given as a keyword. Each logger makes
        a new run (its ``version`` is the run's identity, ``NAME-xxxxxx``), as Lightning's
        own loggers make a new version; ``version=`` (or ``id=``) names the identity to
        continue, ``resume="allow"|"must"`` continues the newest run named ``run``.
        """

        def __init__(self, project: str = "lightning_logs", run: str | None = None, *, config: Any = None,
                     tags: Iterable[str] = (), group: str = "", version: str | None = None,
                     id: str | None = None, resume: str | None = None,
                     settings: Settings | None = None, **setting_overrides: Any) -> None:
            super().__init__()
            if version is not None and id is not None and version != id:
                raise ValueError("curvestream: give the run's identity as version= or id=, not both")
            self._lazy = LazyRun(project, run, id=id if id is not None else version, resume=resume, config=config,
                                 tags=tags, group=group, settings=settings, **setting_overrides)

        @property
        def name(self) -> str:
            return self._lazy.project

        @property
        def version(self) -> str:
            return self._lazy.name

        @property
        @rank_zero_experiment
        def experiment(self) -> Run:
            """The curvestream run (started on first use)."""
            return self._lazy.get()

        @rank_zero_only
        def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
            self.experiment.log(dict(metrics), step)

        @rank_zero_only
        def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
            self._lazy.update_config(_plain_params(params))

        @rank_zero_only
        def after_save_checkpoint(self, checkpoint_callback: Any) -> None:
            path = (getattr(checkpoint_callback, "_last_checkpoint_saved", "")
                    or getattr(checkpoint_callback, "last_model_path", "")
                    or getattr(checkpoint_callback, "best_model_path", ""))
            if path:
                self.experiment.log_text("checkpoints", str(path))

        @rank_zero_only
        def finalize(self, status: str) -> None:
            self._lazy.finish(status, "" if status in ("success", "finished") else f"Lightning: {status}")

        @rank_zero_only
        def save(self) -> None:
            """Points are spooled continuously; nothing to save."""

    return CurvestreamLogger
