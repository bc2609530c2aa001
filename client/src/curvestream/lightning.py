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

try:
    from lightning.pytorch.loggers.logger import Logger as _Base
    from lightning.pytorch.loggers.logger import rank_zero_experiment
    from lightning.pytorch.utilities.rank_zero import rank_zero_only
except ImportError:  # pragma: no cover - the older namespace only
    from pytorch_lightning.loggers.logger import Logger as _Base  # type: ignore[no-redef]
    from pytorch_lightning.loggers.logger import rank_zero_experiment  # type: ignore[no-redef]
    from pytorch_lightning.utilities.rank_zero import rank_zero_only  # type: ignore[no-redef]

from curvestream.lightning_logger import logger_class

__all__ = ["CurvestreamLogger"]

CurvestreamLogger = logger_class(_Base, rank_zero_experiment, rank_zero_only)
