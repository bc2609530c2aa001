"""Small real trainings for the alert tests and bench/alerts_quality.py:
minibatch SGD on a linear regression whose feature scales spread over two
decades, so the loss keeps falling for thousands of steps (the slow
directions) while each minibatch loss is noisy; and a torch MLP on
scikit-learn's digits, whose cross-entropy converges noisily (a batch with one
misclassified image stands out)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

__all__ = ["Regression", "sgd", "digits"]


class Regression:
    def __init__(self, seed: int = 0, features: int = 16, samples: int = 8192) -> None:
        rng = np.random.default_rng(seed)
        scales = np.logspace(0, -2, features)
        self.x = rng.normal(size=(samples, features)) * scales
        self.w_true = rng.normal(size=features) * 3
        self.y = self.x @ self.w_true + rng.normal(0, 0.005, samples)
        self.rng = np.random.default_rng(seed + 1)

    def minibatch(self, size: int = 1024) -> tuple[np.ndarray, np.ndarray]:
        idx = self.rng.integers(0, len(self.y), size)
        return self.x[idx], self.y[idx]

    def loss(self, w: np.ndarray) -> float:
        """The mean squared error over every sample: the loss without minibatch noise."""
        return float(np.mean((self.x @ w - self.y) ** 2))


def sgd(problem: Regression, steps: int, lr: Callable[[int], float], corrupt_at: int | None = None,
        skip_above: float = 1e3, on_step: Callable[[int, np.ndarray], None] | None = None,
        ) -> Iterator[tuple[int, float]]:
    """Minibatch SGD on mean squared error; ``corrupt_at``: that step's minibatch
    arrives with its inputs scaled by 1000 (a corrupted batch). Like many
    training loops, a step whose loss is ``skip_above`` times the previous one
    is logged but not applied. ``on_step(step, w)`` sees the weights each step
    was computed with (e.g. to take the loss over every sample)."""
    w = np.zeros(problem.x.shape[1])
    previous = 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        for step in range(steps):
            x, y = problem.minibatch()
            if step == corrupt_at:
                x = x * 1000.0
            if on_step is not None:
                on_step(step, w)
            err = x @ w - y
            loss = float(np.mean(err ** 2))
            grad = 2 * x.T @ err / len(y)
            if not previous or not loss > skip_above * previous:
                w = w - lr(step) * grad
                previous = loss
            yield step, loss


def digits(seed: int, steps: int, lr: float = 0.02, zero_from: int | None = None,
           full_loss_every: int = 0) -> Iterator[tuple[int, dict[str, float]]]:
    """A 64-64-10 MLP on scikit-learn's digits (1,797 8x8 images shipped with it; a fifth held
    out), SGD with momentum 0.9 on batches of 32, one CPU thread. Yields ``(step, metrics)``:
    ``train/loss`` every step, ``val/loss`` on the held-out images every 50 steps, and with
    ``full_loss_every`` ``train/loss (all)`` over every training image that often (taken
    with the weights the step's loss was). The learning rate is 0 from ``zero_from``."""
    import torch
    from sklearn.datasets import load_digits

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    data = load_digits()
    x = torch.tensor(data.data / 16.0, dtype=torch.float32)
    y = torch.tensor(data.target, dtype=torch.int64)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))
    cut = len(y) * 4 // 5
    xt, yt, xv, yv = x[order[:cut]], y[order[:cut]], x[order[cut:]], y[order[cut:]]
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    gen = torch.Generator().manual_seed(seed)
    loss_fn = torch.nn.functional.cross_entropy
    for step in range(steps):
        if step == zero_from:
            for group in opt.param_groups:
                group["lr"] = 0.0
        metrics: dict[str, float] = {}
        if full_loss_every and step % full_loss_every == 0:
            with torch.no_grad():
                metrics["train/loss (all)"] = float(loss_fn(model(xt), yt))
        idx = torch.randint(0, len(yt), (32,), generator=gen)
        loss = loss_fn(model(xt[idx]), yt[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        metrics["train/loss"] = float(loss.detach())
        if step % 50 == 0:
            with torch.no_grad():
                metrics["val/loss"] = float(loss_fn(model(xv), yv))
        yield step, metrics
