"""A real Lightning fit (tiny MLP, checkpointing on), a fit that raises, a
Fabric loop and the ``pytorch_lightning`` namespace, logging through
CurvestreamLogger into real Mosquitto and a bridge on DuckDB."""

from __future__ import annotations

import argparse
import os

import lightning as L
import pytest
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

from curvestream.lightning import CurvestreamLogger
from helpers import get_json, metric_counts, run_path, run_state
from servers import wait_until

pytestmark = [
    pytest.mark.filterwarnings("ignore:The '(train|val)_dataloader' does not have many workers"),
    pytest.mark.filterwarnings("ignore:The number of training batches .* is smaller than the logging interval"),
    pytest.mark.filterwarnings(r"ignore:`isinstance\(treespec, LeafSpec\)` is deprecated:FutureWarning"),
    pytest.mark.filterwarnings("ignore:Checkpoint directory .* exists and is not empty"),
]

EPOCHS, BATCHES = 3, 4


def _data() -> DataLoader:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(BATCHES * 8, 4, generator=g)
    return DataLoader(TensorDataset(x, x.sum(dim=1, keepdim=True)), batch_size=8)


def _module(base: type, fail_at: int | None = None) -> object:
    class TinyMLP(base):  # type: ignore[misc, valid-type]
        def __init__(self, lr: float = 0.05, hidden: int = 8, extra: dict | None = None) -> None:
            super().__init__()
            self.save_hyperparameters()
            self.net = nn.Sequential(nn.Linear(4, hidden), nn.ReLU(), nn.Linear(hidden, 1))

        def training_step(self, batch, index):
            if fail_at is not None and self.global_step == fail_at:
                raise RuntimeError("loss diverged")
            x, y = batch
            loss = F.mse_loss(self.net(x), y)
            self.log("train_loss", loss)
            return loss

        def validation_step(self, batch, index):
            x, y = batch
            self.log("val_loss", F.mse_loss(self.net(x), y))

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

    return TinyMLP(extra={"optimizer": {"momentum": 0.9, "nesterov": False}})


def _trainer(lightning: object, logger: object, root, **kw) -> object:
    return lightning.Trainer(
        max_epochs=EPOCHS, logger=logger, log_every_n_steps=1, accelerator="cpu", devices=1,
        enable_progress_bar=False, enable_model_summary=False, default_root_dir=str(root),
        callbacks=[lightning.pytorch.callbacks.ModelCheckpoint(dirpath=str(root / "ckpt"), save_top_k=-1)]
        if hasattr(lightning, "pytorch") else [lightning.callbacks.ModelCheckpoint(dirpath=str(root / "ckpt"),
                                                                                   save_top_k=-1)],
        **kw)


def test_a_lightning_fit_logs_metrics_hyperparameters_checkpoints_and_finishes(
        mosquitto, bridge_factory, spool_dir, tmp_path):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    logger = CurvestreamLogger(project="lightning", run="tiny-mlp", version="tiny-mlp", mqtt_url=mosquitto.url,
                               bridge_url=bridge.url, spool_dir=str(spool_dir))
    assert (logger.name, logger.version) == ("lightning", "tiny-mlp")  # version=: the run's identity, as given
    _trainer(L, logger, tmp_path).fit(_module(L.LightningModule), _data(), _data())

    wait_until(lambda: run_state(bridge.url, "lightning", "tiny-mlp") == "finished", 60, "the run to finish")
    counts = metric_counts(bridge.url, "lightning", "tiny-mlp")
    assert counts["train_loss"] == EPOCHS * BATCHES and counts["val_loss"] == EPOCHS
    steps = get_json(bridge.url, run_path("lightning", "tiny-mlp") + "/series", key="train_loss")["points"]["step"]
    assert steps == list(range(EPOCHS * BATCHES))
    (run,) = [r for r in get_json(bridge.url, "/api/v1/runs")["runs"] if r["run"] == "tiny-mlp"]
    assert run["config"] == {"lr": 0.05, "hidden": 8, "extra/optimizer/momentum": 0.9,
                             "extra/optimizer/nesterov": False}
    texts = get_json(bridge.url, run_path("lightning", "tiny-mlp") + "/texts", key="checkpoints")["texts"]
    assert len(texts) == EPOCHS
    assert [os.path.basename(t["text"]) for t in texts] == [
        f"epoch={e}-step={(e + 1) * BATCHES}.ckpt" for e in range(EPOCHS)]
    assert all(os.path.exists(t["text"]) for t in texts)


def test_a_lightning_fit_that_raises_ends_the_run_as_failed(mosquitto, bridge_factory, spool_dir, tmp_path):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    logger = CurvestreamLogger(project="lightning", id="diverges", mqtt_url=mosquitto.url, bridge_url=bridge.url,
                               spool_dir=str(spool_dir))
    with pytest.raises(RuntimeError, match="loss diverged"):
        _trainer(L, logger, tmp_path).fit(_module(L.LightningModule, fail_at=5), _data(), _data())
    wait_until(lambda: run_state(bridge.url, "lightning", "diverges") == "failed", 60, "the run to be failed")
    assert metric_counts(bridge.url, "lightning", "diverges")["train_loss"] == 5


def test_a_fabric_loop_logs_without_steps_and_with_namespace_hyperparameters(
        mosquitto, bridge_factory, spool_dir, tmp_path):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    logger = CurvestreamLogger(project="fabric", run="loop", mqtt_url=mosquitto.url, bridge_url=bridge.url,
                               spool_dir=str(spool_dir))
    assert logger.version.startswith("loop-")  # a new run each time, as Lightning makes a new version
    fabric = L.Fabric(accelerator="cpu", devices=1, loggers=[logger])
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer = fabric.setup(model, optimizer)
    fabric.logger.log_hyperparams(argparse.Namespace(lr=0.1, schedule={"warmup": 2}))
    for x, y in fabric.setup_dataloaders(_data()):
        loss = F.mse_loss(model(x), y)
        fabric.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        fabric.log_dict({"loss": loss, "lr": 0.1})  # no step: curvestream counts them
    fabric.log("done", 1.0, step=100)
    logger.finalize("success")

    wait_until(lambda: run_state(bridge.url, "fabric", logger.version) == "finished", 60, "the run to finish")
    loss = get_json(bridge.url, run_path("fabric", logger.version) + "/series", key="loss")["points"]
    assert loss["step"] == list(range(BATCHES))
    (run,) = [r for r in get_json(bridge.url, "/api/v1/runs")["runs"] if r["name"] == "loop"]
    assert run["run"] == logger.version
    assert run["config"] == {"lr": 0.1, "schedule/warmup": 2}


def test_the_pytorch_lightning_namespace_has_its_own_logger(mosquitto, bridge_factory, spool_dir, tmp_path):
    import pytorch_lightning as pl

    from curvestream.pytorch_lightning import CurvestreamLogger as PlLogger

    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    logger = PlLogger(project="pl", id="tiny", mqtt_url=mosquitto.url, bridge_url=bridge.url,
                      spool_dir=str(spool_dir))
    assert isinstance(logger, pl.loggers.Logger)
    _trainer(pl, logger, tmp_path).fit(_module(pl.LightningModule), _data(), _data())
    wait_until(lambda: run_state(bridge.url, "pl", "tiny") == "finished", 60, "the run to finish")
    assert metric_counts(bridge.url, "pl", "tiny")["train_loss"] == EPOCHS * BATCHES
