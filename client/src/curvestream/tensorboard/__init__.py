"""TensorBoard drop-in and import.

- ``curvestream.tensorboard.SummaryWriter``: the writer of ``torch.utils.tensorboard``
  and ``tensorboardX``, streaming to curvestream (change one import line).
- ``curvestream import tensorboard DIR``: every event file under DIR becomes a
  run, every point kept (:mod:`curvestream.tensorboard.importer`).
"""

from curvestream.tensorboard.writer import SummaryWriter

__all__ = ["SummaryWriter"]
