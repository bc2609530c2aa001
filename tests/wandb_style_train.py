"""A training script written against the W&B Python API as documented (wandb
0.31: ``init``, ``config``, ``define_metric``, ``log`` with ``step`` and
``commit``, ``Histogram``, ``Image``, ``Table``, ``summary``, ``alert``,
``finish``). tests/e2e/test_wandb_switch.py runs it as it is with
``WANDB_MODE=disabled`` (the real wandb package) and with its first import
switched to ``import curvestream.wandb as wandb``. Its values are
deterministic: the test knows what it logged (``expected()``)."""

import json
import math

import numpy as np
import wandb  # the one line a user changes

EPOCHS, BATCHES = 3, 40


def loss_at(epoch: int, i: int) -> float:
    return 2.0 / (1 + epoch * BATCHES + i) + 0.001 * i


def val_acc(epoch: int) -> float:
    return 0.5 + 0.1 * epoch


def weights(epoch: int) -> np.ndarray:
    return np.linspace(-1.0, 1.0, 101) * (epoch + 1)


GRAD_COUNTS, GRAD_EDGES = [1, 3, 5, 3, 1], [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5]


def main() -> None:
    run = wandb.init(project="wandb-switch", name="baseline", config={"lr": 0.01, "epochs": EPOCHS,
                     "optimizer": {"name": "adam", "beta1": 0.9}}, tags=["baseline", "from-wandb"],
                     group="sweep-1", notes="first try with the W&B API", job_type="train")
    wandb.config.update({"batch_size": 32})
    wandb.config.dropout = 0.1
    assert wandb.config.lr == 0.01 and wandb.config["epochs"] == EPOCHS

    wandb.define_metric("epoch")
    wandb.define_metric("val/*", step_metric="epoch")
    wandb.define_metric("train/loss", summary="min")
    best = 0.0
    for epoch in range(wandb.config.epochs):
        for i in range(BATCHES):
            wandb.log({"train/loss": loss_at(epoch, i), "train/lr": wandb.config.lr})
        wandb.log({"weights": wandb.Histogram(weights(epoch))}, commit=False)
        wandb.log({"val/acc": val_acc(epoch), "epoch": epoch})
        best = max(best, val_acc(epoch))
    wandb.log({"grad": wandb.Histogram(np_histogram=(np.array(GRAD_COUNTS), np.array(GRAD_EDGES)))})
    wandb.log({"odd/nan": float("nan"), "odd/inf": float("inf"), "odd/ninf": float("-inf")})
    wandb.log({"nested": {"a": 1.5, "b": {"c": 2.5}}})
    wandb.log({"sample": "the cat sat on the mat"})
    wandb.log({"examples": [wandb.Image(np.zeros((4, 4, 3), dtype=np.uint8), caption="zeros")]})
    wandb.log({"table": wandb.Table(columns=["epoch", "acc"], data=[[e, val_acc(e)] for e in range(EPOCHS)])})
    wandb.log({"explicit/a": 1.0}, step=1000)
    wandb.log({"explicit/b": 2.0}, step=1000)
    wandb.log({"explicit/c": 3.0}, step=1001, commit=True)
    run.summary["best_acc"] = best
    run.summary.update({"final_loss": loss_at(EPOCHS - 1, BATCHES - 1)})
    wandb.alert(title="Accuracy below target", text=f"best accuracy {best:.2f} < 0.9", level=wandb.AlertLevel.WARN)
    print(json.dumps({"id": run.id, "name": run.name, "project": run.project}), flush=True)
    run.finish()


def expected() -> dict:
    """What main() logged, as curvestream should store it: key -> (steps, values)."""
    out: dict = {"train/loss": ([], []), "train/lr": ([], []), "val/acc": ([], []), "epoch": ([], [])}
    step = 0
    for epoch in range(EPOCHS):
        for i in range(BATCHES):
            for key, value in (("train/loss", loss_at(epoch, i)), ("train/lr", 0.01)):
                out[key][0].append(step)
                out[key][1].append(value)
            step += 1
        out["val/acc"][0].append(epoch)  # drawn against "epoch" (define_metric)
        out["val/acc"][1].append(val_acc(epoch))
        out["epoch"][0].append(step)
        out["epoch"][1].append(float(epoch))
        step += 1
    grad_step = step
    out["odd/nan"], out["odd/inf"], out["odd/ninf"] = ([step + 1], [math.nan]), ([step + 1], [math.inf]), \
        ([step + 1], [-math.inf])
    out["nested.a"], out["nested.b.c"] = ([step + 2], [1.5]), ([step + 2], [2.5])
    out["explicit/a"], out["explicit/b"], out["explicit/c"] = ([1000], [1.0]), ([1000], [2.0]), ([1001], [3.0])
    return {"scalars": out, "grad_step": grad_step, "text_step": step + 3,
            "weights_steps": [BATCHES * (e + 1) + e for e in range(EPOCHS)]}


if __name__ == "__main__":
    main()
