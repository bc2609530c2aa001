"""Real trainings with labelled ground truth, for bench/alerts_quality.py.

Four families, each run as a user would run it on a CPU:

- ``demo``: what ``curvestream demo`` trains (an MLP on two spirals in numpy,
  warm-up and cosine decay to 0, a learning-rate sweep of 3 runs of 3,000
  steps): ``train/loss`` per step, ``val/loss`` every 25 steps; the loss over
  every training sample is taken every 10 steps.
- ``numpy``: minibatch SGD on a linear regression (tests/alert_trainings.py),
  one loss per step; the loss over every sample is taken every 10 steps.
- ``digits``: a torch MLP on scikit-learn's digits (1,797 8x8 images shipped
  with scikit-learn, nothing downloaded), SGD with momentum, batches of 32:
  ``train/loss`` per step, ``val/loss`` on the held-out fifth every 50 steps;
  the training loss over every training image is taken every 25 steps.
- ``gpt2``: a tiny GPT-2 built from a config with transformers (2 layers, 64
  wide), characters of Python's own ``argparse.py`` source as text, AdamW with
  warm-up and cosine decay: ``train/loss`` per step, ``eval/loss`` on held-out
  text every 50 steps; the training loss over 64 fixed training windows is
  taken every 25 steps.

The labels: each series carries its noise-free curve (``clean``), so a plateau
alert can be judged by what the curve really did over the alert's window; a
run whose learning rate is set to 0 at step K has a plateau from K on, exactly
(its weights no longer change); a corrupted batch is a spike at its step; the
first NaN/Inf is where non-finite must fire.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import math
import pathlib
import sys
from collections.abc import Callable

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
from alert_trainings import Regression, digits, sgd

__all__ = ["Series", "Training", "demo_trainings", "numpy_trainings", "digits_trainings", "gpt2_trainings",
           "all_trainings"]


@dataclasses.dataclass
class Series:
    key: str
    steps: np.ndarray  # int64
    values: np.ndarray  # float64, as logged
    clean_steps: np.ndarray  # where the noise-free loss was taken
    clean: np.ndarray

    def clean_between(self, first: int, last: int) -> np.ndarray:
        """The noise-free curve from ``first`` to ``last``, its ends interpolated."""
        inside = self.clean[(self.clean_steps > first) & (self.clean_steps < last)]
        ends = np.interp([first, last], self.clean_steps, self.clean)
        return np.concatenate([[ends[0]], inside, [ends[1]]])


@dataclasses.dataclass
class Training:
    family: str
    name: str
    series: list[Series]
    plateau_at: int | None = None  # the learning rate is 0 from this step on
    spike_at: int | None = None  # a corrupted batch

    @property
    def steps(self) -> int:
        return int(max(s.steps[-1] for s in self.series)) + 1


# ---------------------------------------------------------------------------------------------- numpy


def _numpy(name: str, seed: int, steps: int, lr: Callable[[int], float], **kw: object) -> Training:
    problem = Regression(seed)
    clean_steps: list[int] = []
    clean: list[float] = []

    def take(step: int, w: np.ndarray) -> None:
        if step % 10 == 0:
            clean_steps.append(step)
            clean.append(problem.loss(w))

    values = np.array([v for _, v in sgd(problem, steps, lr, on_step=take, **kw)])  # type: ignore[arg-type]
    series = Series("train/loss", np.arange(steps, dtype=np.int64), values, np.array(clean_steps), np.array(clean))
    return Training("numpy", name, [series])


def numpy_trainings(seeds: int = 3) -> list[Training]:
    out = []
    for seed in range(seeds):
        out.append(_numpy(f"seed {seed}, lr 0.5, 30k steps", seed, 30_000, lambda s: 0.5))
        for k in (1_000, 3_000):
            t = _numpy(f"seed {seed}, lr 0 from step {k}", seed, k + 6_000, lambda s, k=k: 0.5 if s < k else 0.0)
            t.plateau_at = k
            out.append(t)
    t = _numpy("seed 0, one corrupted batch at step 4000", 0, 10_000, lambda s: 0.5, corrupt_at=4_000)
    t.spike_at = 4_000
    out.append(t)
    out.append(_numpy("seed 0, lr raised from step 800 until overflow", 0, 1_500,
                      lambda s: 0.5 if s < 800 else 0.5 * 1.05 ** (s - 800), skip_above=float("inf")))
    return out


# ---------------------------------------------------------------------------------------------- demo


def demo_trainings(runs: int = 3, steps: int = 3_000) -> list[Training]:
    from curvestream.demo import spirals

    out = []
    for i in range(runs):
        lr = 0.3 / (3 ** i)  # the demo's sweep
        logged: dict[str, list[tuple[int, float]]] = {}
        for step, metrics, _ in spirals(lr, steps, seed=i, full_loss_every=10):
            for key in ("train/loss", "val/loss", "train/loss (all)"):
                if key in metrics:
                    logged.setdefault(key, []).append((step, metrics[key]))
        train, val, clean = (np.array(logged[k]) for k in ("train/loss", "val/loss", "train/loss (all)"))
        out.append(Training("demo", f"spirals lr={lr:g}, seed {i}", [
            Series("train/loss", train[:, 0].astype(np.int64), train[:, 1], clean[:, 0].astype(np.int64), clean[:, 1]),
            Series("val/loss", val[:, 0].astype(np.int64), val[:, 1], val[:, 0].astype(np.int64), val[:, 1]),
        ]))
    return out


# ---------------------------------------------------------------------------------------------- digits


def _digits(name: str, seed: int, steps: int, lr: float, zero_from: int | None = None) -> Training:
    logged: dict[str, list[tuple[int, float]]] = {}
    for step, metrics in digits(seed, steps, lr, zero_from, full_loss_every=25):
        for key, value in metrics.items():
            logged.setdefault(key, []).append((step, value))
    train, val, clean = (np.array(logged[k]) for k in ("train/loss", "val/loss", "train/loss (all)"))
    return Training("digits", name, [
        Series("train/loss", train[:, 0].astype(np.int64), train[:, 1], clean[:, 0].astype(np.int64), clean[:, 1]),
        Series("val/loss", val[:, 0].astype(np.int64), val[:, 1], val[:, 0].astype(np.int64), val[:, 1]),
    ], plateau_at=zero_from)  # val/loss is over the whole held-out set: its own noise-free curve


def digits_trainings(seeds: int = 2) -> list[Training]:
    out = []
    for seed in range(seeds):
        out.append(_digits(f"seed {seed}, lr 0.02, 20k steps", seed, 20_000, 0.02))
        out.append(_digits(f"seed {seed}, lr 0 from step 1500", seed, 7_500, 0.02, zero_from=1_500))
    return out


# ---------------------------------------------------------------------------------------------- gpt2


def _text() -> np.ndarray:
    """Characters of a text every Python ships (argparse's source), as ids below 96."""
    import argparse as source

    text = pathlib.Path(source.__file__).read_text(encoding="utf-8")
    codes = np.frombuffer(text.encode("ascii", "replace"), dtype=np.uint8).astype(np.int64)
    return np.clip(codes - 32, 0, 95)  # printable ASCII; newline and tab become 0 (space)


def _gpt2(name: str, seed: int, steps: int, zero_from: int | None, peak_lr: float = 3e-3) -> list[Training]:
    """One healthy run and, when ``zero_from`` is given, its twin that stops learning there
    (the same model and batches; the twin only needs forward passes after that step)."""
    import torch
    import transformers

    torch.manual_seed(seed)
    ids = torch.tensor(_text())
    cut = len(ids) * 9 // 10
    train_ids, eval_ids = ids[:cut], ids[cut:]
    ctx, batch = 64, 16
    config = transformers.GPT2Config(vocab_size=96, n_positions=ctx, n_embd=64, n_layer=2, n_head=4,
                                     bos_token_id=0, eos_token_id=0)
    model = transformers.GPT2LMHeadModel(config)
    opt = torch.optim.AdamW(model.parameters(), lr=peak_lr, weight_decay=0.01)
    warmup = 100
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup) * (
        0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, s / steps)))))
    gen = torch.Generator().manual_seed(seed)
    fixed = torch.randint(0, len(train_ids) - ctx, (64,), generator=torch.Generator().manual_seed(1))
    held = torch.arange(0, len(eval_ids) - ctx, ctx)[:64]

    def windows(source: torch.Tensor, starts: torch.Tensor) -> torch.Tensor:
        return torch.stack([source[s:s + ctx] for s in starts.tolist()])

    def loss_on(m: torch.nn.Module, x: torch.Tensor) -> float:
        with torch.no_grad():
            return float(m(input_ids=x, labels=x).loss)

    fixed_x, held_x = windows(train_ids, fixed), windows(eval_ids, held)
    batches = [windows(train_ids, torch.randint(0, len(train_ids) - ctx, (batch,), generator=gen))
               for _ in range(steps)]
    logs: dict[str, list] = {"train": [], "eval": [], "clean": []}
    twin_logs: dict[str, list] = {"train": [], "eval": [], "clean": []}
    twin = None
    for step in range(steps):
        if step == zero_from:
            twin = copy.deepcopy(model).eval()
        x = batches[step]
        out = model(input_ids=x, labels=x)
        opt.zero_grad()
        out.loss.backward()
        opt.step()
        sched.step()
        logs["train"].append(float(out.loss.detach()))
        if twin is not None:
            twin_logs["train"].append(loss_on(twin, x))
        if step % 25 == 0:
            for m, book in ((model, logs), (twin, twin_logs)):
                if m is None:
                    continue
                book["clean"].append((step, loss_on(m, fixed_x)))
                if step % 50 == 0:
                    book["eval"].append((step, loss_on(m, held_x)))

    def training(book: dict[str, list], first: int, label: str, plateau_at: int | None) -> Training:
        cs, cv = (np.array(c) for c in zip(*book["clean"]))
        es, ev = (np.array(c) for c in zip(*book["eval"]))
        train = np.array(book["train"])
        return Training("gpt2", label, [
            Series("train/loss", np.arange(first, first + len(train), dtype=np.int64), train, cs.astype(np.int64),
                   cv),
            Series("eval/loss", es.astype(np.int64), ev, es.astype(np.int64), ev),
        ], plateau_at=plateau_at)

    out = [training(logs, 0, name, None)]
    if zero_from is not None:
        # the twin's curves: the healthy run's up to zero_from, its own after
        for key in ("clean", "eval"):
            twin_logs[key] = [p for p in logs[key] if p[0] < zero_from] + twin_logs[key]
        twin_logs["train"] = logs["train"][:zero_from] + twin_logs["train"]
        out.append(training(twin_logs, 0, f"{name}; lr 0 from step {zero_from}", zero_from))
    return out


def gpt2_trainings(steps: int = 4_000) -> list[Training]:
    import torch

    torch.set_num_threads(1)
    return _gpt2(f"seed 0, {steps} steps, cosine decay", 0, steps, zero_from=steps // 4)


def all_trainings(families: list[str], gpt2_steps: int = 4_000) -> list[Training]:
    out: list[Training] = []
    if "demo" in families:
        out += demo_trainings()
    if "numpy" in families:
        out += numpy_trainings()
    if "digits" in families:
        out += digits_trainings()
    if "gpt2" in families:
        out += gpt2_trainings(gpt2_steps)
    return out


def save(trainings: list[Training], path: pathlib.Path) -> None:
    """Keep the curves to score other rules on them later without training again."""
    arrays: dict[str, np.ndarray] = {}
    for i, t in enumerate(trainings):
        arrays[f"{i}/meta"] = np.array([t.family, t.name, str(t.plateau_at), str(t.spike_at)])
        for j, s in enumerate(t.series):
            arrays[f"{i}/{j}/key"] = np.array([s.key])
            for field in ("steps", "values", "clean_steps", "clean"):
                arrays[f"{i}/{j}/{field}"] = getattr(s, field)
    np.savez_compressed(path, **arrays)


def load(path: pathlib.Path) -> list[Training]:
    data = np.load(path)
    out = []
    i = 0
    while f"{i}/meta" in data:
        family, name, plateau_at, spike_at = (str(v) for v in data[f"{i}/meta"])
        series = []
        j = 0
        while f"{i}/{j}/key" in data:
            series.append(Series(str(data[f"{i}/{j}/key"][0]), *(data[f"{i}/{j}/{f}"] for f in
                                                                   ("steps", "values", "clean_steps", "clean"))))
            j += 1
        out.append(Training(family, name, series, None if plateau_at == "None" else int(plateau_at),
                            None if spike_at == "None" else int(spike_at)))
        i += 1
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="train and keep the curves (bench/alerts_quality.py --curves)")
    parser.add_argument("out")
    parser.add_argument("--families", default="demo,numpy,digits,gpt2")
    args = parser.parse_args()
    save(all_trainings(args.families.split(",")), pathlib.Path(args.out))
