"""Small real trainings for the alert tests: minibatch SGD on a linear
regression whose feature scales spread over two decades, so the loss keeps
falling for thousands of steps (the slow directions) while each minibatch
loss is noisy. Each function yields ``(step, loss)`` as training goes."""

from __future__ import annotations

from typing import Callable, Iterator

import numpy as np

__all__ = ["Regression", "sgd"]


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


def sgd(problem: Regression, steps: int, lr: Callable[[int], float], corrupt_at: int | None = None,
        skip_above: float = 1e3) -> Iterator[tuple[int, float]]:
    """Minibatch SGD on mean squared error; ``corrupt_at``: that step's minibatch
    arrives with its inputs scaled by 1000 (a corrupted batch). Like many
    training loops, a step whose loss is ``skip_above`` times the previous one
    is logged but not applied."""
    w = np.zeros(problem.x.shape[1])
    previous = 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        for step in range(steps):
            x, y = problem.minibatch()
            if step == corrupt_at:
                x = x * 1000.0
            err = x @ w - y
            loss = float(np.mean(err ** 2))
            grad = 2 * x.T @ err / len(y)
            if not previous or not loss > skip_above * previous:
                w = w - lr(step) * grad
                previous = loss
            yield step, loss
