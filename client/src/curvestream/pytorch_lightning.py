"""The Lightning logger for the ``pytorch_lightning`` namespace:
``from curvestream.pytorch_lightning import CurvestreamLogger`` (see :mod:`curvestream.lightning`)."""

from __future__ import annotations

from pytorch_lightning.loggers.logger import Logger as _Base
from pytorch_lightning.loggers.logger import rank_zero_experiment
from pytorch_lightning.utilities.rank_zero import rank_zero_only

from curvestream.lightning_logger import logger_class

__all__ = ["CurvestreamLogger"]

CurvestreamLogger = logger_class(_Base, rank_zero_experiment, rank_zero_only)
