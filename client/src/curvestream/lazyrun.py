"""The run behind a framework integration (Lightning logger, Transformers and
Keras callbacks): started on first use, finished with a status, and started
again as the same run if the framework logs after finishing (``trainer.fit``
then ``trainer.test``), carrying the config along.

Like ``curvestream.init()``, each integration object makes a new run (identity
``NAME-xxxxxx``) unless given ``resume=`` or ``id=`` (:mod:`curvestream.identity`);
the identity is chosen on first use.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from curvestream.factory import start_run
from curvestream.identity import Identity, resolve
from curvestream.run import Run
from curvestream.settings import Settings

__all__ = ["LazyRun", "flatten", "STATUS_OF"]

STATUS_OF = {"success": "finished", "finished": "finished", "failed": "failed"}
"""Framework words for how training ended -> ``Run.finish`` statuses."""


def flatten(values: Mapping[str, Any], delimiter: str = "/", prefix: str = "") -> dict[str, Any]:
    """``{"opt": {"lr": 0.1}}`` -> ``{"opt/lr": 0.1}``."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        name = f"{prefix}{delimiter}{key}" if prefix else str(key)
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, delimiter, name))
        else:
            out[name] = value
    return out


class LazyRun:
    def __init__(self, project: str, run: str | None, *, id: str | None = None,
                 resume: str | None = None, config: Any = None, tags: Iterable[str] = (), group: str = "",
                 settings: Settings | None = None, **setting_overrides: Any) -> None:
        self.project = project
        self.run_name = run  # may be set until first use (a framework argument read late)
        self._id = id
        self._resume = resume
        self._identity: Identity | None = None
        self._config = dict(config) if isinstance(config, Mapping) else config
        self._tags = list(tags)
        self._group = group
        self._settings = settings or Settings.from_env(**setting_overrides)
        self._run: Run | None = None

    @property
    def started(self) -> bool:
        return self._run is not None

    @property
    def identity(self) -> Identity:
        if self._identity is None:
            self._identity = resolve(self.project, self.run_name, self._settings, id=self._id, resume=self._resume)
        return self._identity

    @property
    def name(self) -> str:
        """The run's identity."""
        return self.identity.id

    def get(self) -> Run:
        if self._run is None:
            identity = self.identity
            self._run = start_run(self.project, identity.id, config=self._config, tags=self._tags, group=self._group,
                                  settings=self._settings, identity=identity)
            # started again after a finish: the same run, its history and start kept, steps going on
            self._identity = Identity(identity.id, identity.name, None, tuple(identity.resumes()),
                                      self._run.started_ns, identity.next_step)
        return self._run

    def update_config(self, values: Mapping[str, Any]) -> None:
        run = self.get()
        run.update_config(values)
        self._config = run.config

    def finish(self, status: str = "finished", reason: str = "") -> None:
        run, self._run = self._run, None
        if run is not None:
            run.finish(STATUS_OF.get(status, "failed"), reason)
            if self._identity is not None:
                self._identity = dataclasses.replace(self._identity, next_step=run._next_step)
