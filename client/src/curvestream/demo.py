"""``curvestream demo``: a real, small training loop (a two-layer MLP on a
two-spirals data set, in numpy) streaming its curves: a three-run learning
rate sweep, logged live for about a minute.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Iterator
from typing import Any

__all__ = ["spirals", "train", "run_sweep"]

log = logging.getLogger("curvestream.demo")


def _spirals(np: Any, n: int, noise: float, rng: Any) -> tuple[Any, Any]:
    t = np.sqrt(rng.random(n)) * 3 * math.pi
    cls = rng.integers(0, 2, n)
    sign = np.where(cls == 0, 1.0, -1.0)
    x = np.stack([sign * t * np.cos(t), sign * t * np.sin(t)], axis=1) / 10
    x += rng.normal(0, noise, x.shape)
    return x, cls


def spirals(lr: float, steps: int, hidden: int = 64, seed: int = 0, full_loss_every: int = 0,
            ) -> Iterator[tuple[int, dict[str, float], Any]]:
    """The demo's training, without curvestream: minibatch SGD with momentum, warm-up
    and cosine decay; yields ``(step, metrics, w1)`` each step (the validation metrics
    every 25 steps; ``full_loss_every``: also ``train/loss (all)``, the loss over
    every training sample, that often)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    x_train, y_train = _spirals(np, 4000, 0.03, rng)
    x_val, y_val = _spirals(np, 1000, 0.03, rng)
    w1 = rng.normal(0, 1 / math.sqrt(2), (2, hidden))
    b1 = np.zeros(hidden)
    w2 = rng.normal(0, 1 / math.sqrt(hidden), (hidden, 2))
    b2 = np.zeros(2)
    params = [w1, b1, w2, b2]
    velocity = [np.zeros_like(p) for p in params]
    warmup = max(1, steps // 20)

    def evaluate(x: Any, y: Any) -> tuple[float, float]:
        hv = np.maximum(x @ w1 + b1, 0) @ w2 + b2
        hv -= hv.max(axis=1, keepdims=True)
        pv = np.exp(hv)
        pv /= pv.sum(axis=1, keepdims=True)
        return float(-np.log(pv[np.arange(len(y)), y] + 1e-12).mean()), float((pv.argmax(axis=1) == y).mean())

    for step in range(steps):
        lr_now = lr * min(1.0, (step + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * step / steps))
        full = evaluate(x_train, y_train)[0] if full_loss_every and step % full_loss_every == 0 else None
        idx = rng.integers(0, len(x_train), 128)
        xb, yb = x_train[idx], y_train[idx]
        h = np.maximum(xb @ w1 + b1, 0)
        logits = h @ w2 + b2
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        loss = float(-np.log(p[np.arange(len(yb)), yb] + 1e-12).mean())
        acc = float((p.argmax(axis=1) == yb).mean())
        g_logits = p
        g_logits[np.arange(len(yb)), yb] -= 1
        g_logits /= len(yb)
        g_w2 = h.T @ g_logits
        g_b2 = g_logits.sum(axis=0)
        g_h = g_logits @ w2.T * (h > 0)
        g_w1 = xb.T @ g_h
        g_b1 = g_h.sum(axis=0)
        grads = [g_w1, g_b1, g_w2, g_b2]
        grad_norm = float(math.sqrt(sum(float((g * g).sum()) for g in grads)))
        for prm, g, v in zip(params, grads, velocity):
            v *= 0.9
            v -= lr_now * g
            prm += v
        metrics = {"train/loss": loss, "train/accuracy": acc, "lr": lr_now, "grad_norm": grad_norm}
        if step % 25 == 0 or step == steps - 1:
            metrics["val/loss"], metrics["val/accuracy"] = evaluate(x_val, y_val)
        if full is not None:
            metrics["train/loss (all)"] = full
        yield step, metrics, w1


def train(project: str, run_name: str, lr: float, steps: int, seconds: float, hidden: int = 64,
          seed: int = 0, group: str = "", stop: threading.Event | None = None, **settings: Any) -> None:
    import curvestream

    config = {"lr": lr, "hidden": hidden, "steps": steps, "batch_size": 128, "optimizer": "sgd+momentum",
              "schedule": "warmup+cosine", "seed": seed}
    pause = seconds / steps
    text_log = logging.getLogger(f"demo.{run_name}")
    with curvestream.init(project=project, run=run_name, config=config, group=group, tags=["demo"],
                          **settings) as run:
        text_log.addHandler(curvestream.LogHandler(run))
        text_log.setLevel(logging.INFO)
        text_log.propagate = False
        started = time.monotonic()
        loss = float("nan")
        for step, metrics, w1 in spirals(lr, steps, hidden, seed):
            if stop is not None and stop.is_set():
                text_log.warning("stopped at step %d", step)
                run.finish("failed", "KeyboardInterrupt: the demo was stopped")
                return
            loss = metrics["train/loss"]
            run.log(metrics, step=step)
            if step % 100 == 0:
                run.log_histogram("weights/w1", w1, step=step)
                text_log.info("step %d: loss %.4f, accuracy %.3f, lr %.5f", step, loss, metrics["train/accuracy"],
                              metrics["lr"])
            ahead = started + (step + 1) * pause - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
        text_log.info("done: final train loss %.4f", loss)


def run_sweep(project: str = "demo", runs: int = 3, steps: int = 3000, seconds: float = 60.0,
              stop: threading.Event | None = None, **settings: Any) -> None:
    """Train ``runs`` models at once, one learning rate each."""
    stamp = time.strftime("%H%M%S")
    rates = [0.3 / (3 ** i) for i in range(runs)]
    threads = [
        threading.Thread(
            target=train,
            kwargs=dict(project=project, run_name=f"spirals lr={lr:g} {stamp}", lr=lr, steps=steps,
                        seconds=seconds, seed=i, group=f"sweep-{stamp}", stop=stop, **settings),
            name=f"demo-run-{i}",
        )
        for i, lr in enumerate(rates)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
