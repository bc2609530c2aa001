"""A Hugging Face Transformers callback:
``Trainer(..., callbacks=[CurvestreamCallback(project="gpt2-tiny")])``.

    from curvestream.transformers import CurvestreamCallback
    trainer = Trainer(model, args, callbacks=[CurvestreamCallback(project="nlp")])

Third parties cannot join ``TrainingArguments(report_to=...)`` (a fixed table in
transformers): pass the callback instead; ``report_to="none"`` keeps the built-in
integrations out. Only the world's process zero logs. The config is the model's
config plus the training arguments; logged keys are rewritten as TensorBoard's
callback does (``eval_loss`` -> ``eval/loss``, ``loss`` -> ``train/loss``) at
``state.global_step``; the end of training puts a summary (global step, epoch,
best metric and checkpoint, last evaluation) in the config and finishes the run.
The run's name is ``run=``, else ``TrainingArguments.run_name``; each training
makes a new run under it unless ``resume=`` or ``id=`` says otherwise.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping
from typing import Any

from transformers import TrainerCallback

from curvestream.lazyrun import LazyRun
from curvestream.settings import Settings

__all__ = ["CurvestreamCallback", "rewrite_logs"]


def rewrite_logs(logs: Mapping[str, Any]) -> dict[str, float]:
    """TensorBoard's naming: ``eval_*`` -> ``eval/*``, ``test_*`` -> ``test/*``, the rest ``train/*``; numbers only."""
    out = {}
    for key, value in logs.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            continue
        if key.startswith("eval_"):
            out["eval/" + key[5:]] = float(value)
        elif key.startswith("test_"):
            out["test/" + key[5:]] = float(value)
        else:
            out["train/" + key] = float(value)
    return out


class CurvestreamCallback(TrainerCallback):
    def __init__(self, project: str = "huggingface", run: str | None = None, *, config: Any = None,
                 tags: Iterable[str] = (), group: str = "", id: str | None = None,
                 resume: str | None = None, settings: Settings | None = None,
                 **setting_overrides: Any) -> None:
        self._lazy = LazyRun(project, run, id=id, resume=resume, config=config, tags=tags, group=group,
                             settings=settings, **setting_overrides)
        self._last_eval: dict[str, float] = {}

    @property
    def run(self) -> Any:
        return self._lazy.get()

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        if not state.is_world_process_zero:
            return
        if self._lazy.run_name is None and not self._lazy.started and getattr(args, "run_name", None):
            self._lazy.run_name = args.run_name  # the name wandb and mlflow take from the arguments too
        config: dict[str, Any] = {}
        model_config = getattr(model, "config", None)
        if model_config is not None and hasattr(model_config, "to_dict"):
            config.update(model_config.to_dict())
        config.update(args.to_dict())
        self._lazy.update_config(config)

    def on_log(self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None,
               **kwargs: Any) -> None:
        if not state.is_world_process_zero or not logs:
            return
        values = rewrite_logs(logs)
        if values:
            self._lazy.get().log(values, step=state.global_step)

    def on_evaluate(self, args: Any, state: Any, control: Any, metrics: Mapping[str, Any] | None = None,
                    **kwargs: Any) -> None:
        """The metrics arrive through ``on_log`` too; kept here for the summary at the end."""
        if state.is_world_process_zero and metrics:
            self._last_eval = rewrite_logs(metrics)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not state.is_world_process_zero or not self._lazy.started:
            return
        summary = {"global_step": state.global_step, "epoch": state.epoch, "best_metric": state.best_metric,
                   "best_model_checkpoint": state.best_model_checkpoint, **self._last_eval}
        self._lazy.update_config({"summary": summary})
        self._lazy.finish("finished")
