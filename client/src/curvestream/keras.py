"""A Keras 3 callback: ``model.fit(..., callbacks=[CurvestreamCallback(project="mnist")])``.

    from curvestream.keras import CurvestreamCallback
    model.fit(x, y, epochs=3, callbacks=[CurvestreamCallback(project="mnist")])

Batch logs go under ``batch/<name>``, epoch logs (validation included) under
``epoch/<name>`` with the epoch number, all at one global step that counts
batches across epochs (Keras restarts ``batch`` at 0 every epoch). The fit's
parameters (epochs, steps) and the optimizer's config are the run's config;
the end of ``fit`` finishes the run.

Keras 3 picks its backend from ``KERAS_BACKEND`` (else ``~/.keras/keras.json``,
else TensorFlow). When neither is set and TensorFlow is not installed, this
module sets ``KERAS_BACKEND=torch`` (or ``jax``) before Keras is imported, so
``from curvestream.keras import ...`` works beside a torch install; set the
variable yourself to choose.
"""

from __future__ import annotations

import importlib.util
import numbers
import os
import pathlib
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from curvestream.lazyrun import LazyRun
from curvestream.settings import Settings


def _default_backend() -> None:
    if "keras" in sys.modules or os.environ.get("KERAS_BACKEND") or importlib.util.find_spec("tensorflow"):
        return
    if (pathlib.Path(os.environ.get("KERAS_HOME", pathlib.Path.home() / ".keras")) / "keras.json").exists():
        return  # Keras reads its backend from there
    for backend in ("torch", "jax"):
        if importlib.util.find_spec(backend):
            os.environ["KERAS_BACKEND"] = backend
            return


_default_backend()
try:
    import keras
except ImportError as exc:
    raise ImportError(f"curvestream.keras needs Keras 3 and a backend it can load ({exc}): pip install keras and "
                      "torch (then KERAS_BACKEND=torch), jax or tensorflow") from exc

__all__ = ["CurvestreamCallback"]


def _numbers(prefix: str, logs: Mapping[str, Any] | None) -> dict[str, Any]:
    out = {}
    for key, value in (logs or {}).items():
        if isinstance(value, numbers.Real) or getattr(value, "shape", None) in ((), (1,)):
            out[prefix + key] = value
    return out


class CurvestreamCallback(keras.callbacks.Callback):
    def __init__(self, project: str = "keras", run: str | None = None, *, config: Any = None,
                 tags: Iterable[str] = (), group: str = "", id: str | None = None,
                 resume: str | None = None, settings: Settings | None = None,
                 log_batches: bool = True, **setting_overrides: Any) -> None:
        super().__init__()
        self._lazy = LazyRun(project, run, id=id, resume=resume, config=config, tags=tags, group=group,
                             settings=settings, **setting_overrides)
        self.log_batches = log_batches
        self.global_step = 0

    @property
    def run(self) -> Any:
        return self._lazy.get()

    def on_train_begin(self, logs: Mapping[str, Any] | None = None) -> None:
        config: dict[str, Any] = {"fit": dict(self.params or {})}
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None and hasattr(optimizer, "get_config"):
            try:
                config["optimizer"] = optimizer.get_config()
            except Exception as exc:
                config["optimizer"] = {"name": type(optimizer).__name__, "error": str(exc)[:200]}
        self._lazy.update_config(config)

    def on_train_batch_end(self, batch: int, logs: Mapping[str, Any] | None = None) -> None:
        self.global_step += 1
        if self.log_batches:
            values = _numbers("batch/", logs)
            if values:
                self._lazy.get().log(values, step=self.global_step)

    def on_epoch_end(self, epoch: int, logs: Mapping[str, Any] | None = None) -> None:
        self._lazy.get().log({"epoch": epoch, **_numbers("epoch/", logs)}, step=self.global_step)

    def on_train_end(self, logs: Mapping[str, Any] | None = None) -> None:
        self._lazy.finish("finished")
