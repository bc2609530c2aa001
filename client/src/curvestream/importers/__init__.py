"""Importers of other trackers' files (``curvestream import wandb|mlflow``), on
the shared machinery of :mod:`curvestream.importing`: :mod:`.wandb` (W&B
offline run folders), :mod:`.mlflow` (MLflow's file store). The TensorBoard
importer lives with the TensorBoard drop-in (:mod:`curvestream.tensorboard`).
"""
