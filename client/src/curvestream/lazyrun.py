"""The run behind a framework integration (Lightning logger, Transformers and
Keras callbacks): started on first use, finished with a status, and started
again under the same name if the framework logs after finishing (``trainer.fit``
then ``trainer.test``), carrying the config along.
"""

from __future__ import annotations

import datetime
import secrets
from typing import Any, Iterable, Mapping

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
    def __init__(self, project: str, run: str | None, *, config: Any = None, tags: Iterable[str] = (),
                 group: str = "", settings: Settings | None = None, **setting_overrides: Any) -> None:
        self.project = project
        self.name = run or f"{datetime.datetime.now():%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
        self._config = dict(config) if isinstance(config, Mapping) else config
        self._tags = list(tags)
        self._group = group
        self._settings = settings or Settings.from_env(**setting_overrides)
        self._run: Run | None = None

    @property
    def started(self) -> bool:
        return self._run is not None

    def get(self) -> Run:
        if self._run is None:
            self._run = Run(self.project, self.name, config=self._config, tags=self._tags, group=self._group,
                            settings=self._settings)
        return self._run

    def update_config(self, values: Mapping[str, Any]) -> None:
        run = self.get()
        run.update_config(values)
        self._config = run.config

    def finish(self, status: str = "finished", reason: str = "") -> None:
        run, self._run = self._run, None
        if run is not None:
            run.finish(STATUS_OF.get(status, "failed"), reason)
