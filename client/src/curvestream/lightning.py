"""A Lightning logger: ``Trainer(logger=CurvestreamLogger(project="mnist"))``,
``Fabric(loggers=[CurvestreamLogger()])``.

    from curvestream.lightning import CurvestreamLogger
    trainer = lightning.Trainer(logger=CurvestreamLogger(project="mnist"))

Built on ``lightning.pytorch`` when it is installed, else on ``pytorch_lightning``
(``curvestream.pytorch_lightning`` always uses the latter). Only rank zero logs.
``name`` is the project, ``version`` the run. Hyperparameters (dicts, nested
dicts, ``argparse.Namespace``) are flattened into the run's config; each saved
checkpoint's path is a text event under ``checkpoints``; ``finalize`` finishes
the run (``success`` -> finished, ``failed`` -> failed) and logging after it
continues the same run.
"""

from __future__ import annotations

import importlib
from typing import Any

from curvestream.lightning_logger import logger_class


def _lightning() -> tuple[Any, Any, Any]:
    """Lightning's logger base class and rank-zero decorators, from ``lightning`` or the older ``pytorch_lightning``."""
    try:
        logger = importlib.import_module("lightning.pytorch.loggers.logger")
        rank_zero = importlib.import_module("lightning.pytorch.utilities.rank_zero")
    except ImportError:
        logger = importlib.import_module("pytorch_lightning.loggers.logger")
        rank_zero = importlib.import_module("pytorch_lightning.utilities.rank_zero")
    return logger.Logger, logger.rank_zero_experiment, rank_zero.rank_zero_only


__all__ = ["CurvestreamLogger"]

CurvestreamLogger = logger_class(*_lightning())
