"""Do the alert rules tell the truth on real trainings? False alarms per 100k
steps and detection delay per rule, for the default rules and beside them.

    .venv/bin/python bench/alerts_quality.py [--families numpy,digits,gpt2] [--curves FILE] [--grid]

The trainings (bench/alert_curves.py: numpy SGD, a torch MLP on scikit-learn's
digits, a tiny GPT-2) are run here, then their logged points are fed to the
bridge's own alert engine in batches of 100 steps, as a trainer's batches
arrive. Each alert is judged against the labels:

- plateau: a firing is **false** when the noise-free loss fell by more than
  1 % over the alert's window (the run was still improving), or when it is a
  second or later firing of the same series (flapping). On the runs whose
  learning rate drops to 0 at step K, the **delay** is the first firing at or
  after K minus K (missed: none).
- nonfinite: delay from the first NaN/Inf logged; any other firing is false.
- spike (not a default rule; the one docs/alerts.md suggests): delay from the
  corrupted batch; a firing anywhere else is false.

``stalled`` and ``lost`` depend on wall time and connections, not on curves:
tests/e2e/test_alerts_trainings.py covers them.
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from alert_curves import Training, all_trainings, load, save
from curvestream_bridge.alerts.engine import AlertEngine
from curvestream_bridge.alerts.rules import Rule, default_rules
from curvestream_bridge.decode import DecodedBatch, ScalarColumn
from query_m4 import machine

IMPROVING = 0.01
"""A plateau alert over a window in which the noise-free loss fell by more than this (relative) is false."""
BATCH_STEPS = 100


@dataclasses.dataclass
class Fired:
    training: Training
    key: str
    rule: str
    kind: str
    state: str
    step: int
    from_step: int
    to_step: int


def replay(training: Training, rules: list[Rule]) -> list[Fired]:
    """Feed a training's points to the engine, 100 steps a batch, every key of those steps together."""
    engine = AlertEngine(rules, clock_ns=lambda: 0)
    out: list[Fired] = []
    last = training.steps
    for seq, first in enumerate(range(0, last, BATCH_STEPS), start=1):
        cols = []
        for s in training.series:
            lo, hi = np.searchsorted(s.steps, [first, first + BATCH_STEPS])
            if hi > lo:
                st = s.steps[lo:hi].astype(np.int64)
                cols.append(ScalarColumn(s.key, st, st * 1_000_000 + 1, s.values[lo:hi].astype(np.float64)))
        if not cols:
            continue
        batch = DecodedBatch(b"bench", seq, training.family, training.name, cols, [], [], None, None, 0)
        for a in engine.evaluate([batch]).alerts:
            out.append(Fired(training, a.key, a.rule, a.kind, a.state, a.step, a.from_step, a.to_step))
    return out


@dataclasses.dataclass
class Score:
    steps: int = 0  # steps of the series the rule watched
    firings: int = 0
    false: int = 0
    repeats: int = 0
    delays: list[int] = dataclasses.field(default_factory=list)
    missed: int = 0
    healthy_series: int = 0
    healthy_alerted: int = 0  # healthy series that raised their (one) alert at convergence

    def row(self) -> str:
        rate = 1e5 * self.false / self.steps if self.steps else 0.0
        if self.delays:
            delay = f"{statistics.median(self.delays):,.0f} (max {max(self.delays):,})"
        else:
            delay = "—"
        missed = f", {self.missed} missed" if self.missed else ""
        return (f"{self.false:>4} false ({self.repeats} repeats) in {self.steps:>9,} steps = {rate:>6.1f} per 100k; "
                f"delay median {delay}{missed}")


def score(trainings: list[Training], rules: list[Rule]) -> dict[str, Score]:
    scores: dict[str, Score] = {}
    for t in trainings:
        events = replay(t, rules)
        for rule in rules:
            if rule.kind not in ("plateau", "nonfinite", "spike"):
                continue
            sc = scores.setdefault(rule.name, Score())
            for s in t.series:
                if not rule.matches(t.family, t.name, s.key):
                    continue
                sc.steps += int(s.steps[-1] - s.steps[0]) + 1
                fired = [e for e in events if e.rule == rule.name and e.key == s.key and e.state == "firing"]
                sc.firings += len(fired)
                judge = {"plateau": _plateau, "nonfinite": _nonfinite, "spike": _spike}[rule.kind]
                judge(t, s, fired, sc)
    return scores


def _plateau(t: Training, s, fired: list[Fired], sc: Score) -> None:
    for i, f in enumerate(fired):
        path = s.clean_between(f.from_step, f.to_step)
        fell = (path[0] - path.min()) / abs(path[0]) if path[0] else 0.0
        if i > 0:
            sc.repeats += 1
            sc.false += 1
        elif fell > IMPROVING:
            sc.false += 1
    if t.plateau_at is not None and t.plateau_at <= s.steps[-1]:
        after = [f.step for f in fired if f.step >= t.plateau_at]
        if after:
            sc.delays.append(after[0] - t.plateau_at)
        else:
            sc.missed += 1
    elif t.plateau_at is None:
        sc.healthy_series += 1
        sc.healthy_alerted += bool(fired)


def _nonfinite(t: Training, s, fired: list[Fired], sc: Score) -> None:
    bad = np.flatnonzero(~np.isfinite(s.values))
    truth = int(s.steps[bad[0]]) if len(bad) else None
    for f in fired:
        if truth is None or f.step < truth:
            sc.false += 1
    if truth is not None:
        hits = [f.step for f in fired if f.step >= truth]
        if hits:
            sc.delays.append(hits[0] - truth)
        else:
            sc.missed += 1


def _spike(t: Training, s, fired: list[Fired], sc: Score) -> None:
    for f in fired:
        if f.step != t.spike_at:
            sc.false += 1
    if t.spike_at is not None and s.key == "train/loss":
        if any(f.step == t.spike_at for f in fired):
            sc.delays.append(0)
        else:
            sc.missed += 1


def detail(trainings: list[Training], rules: list[Rule]) -> None:
    """Each series' plateau alerts: f@step (firing; F@step when judged false, with how much the
    noise-free loss fell over its window), r@step (resolved)."""
    for t in trainings:
        events = replay(t, rules)
        for s in t.series:
            words = []
            firings = 0
            for e in events:
                if e.key != s.key or e.kind != "plateau":
                    continue
                if e.state == "resolved":
                    words.append(f"r@{e.step}")
                    continue
                path = s.clean_between(e.from_step, e.to_step)
                fell = (path[0] - path.min()) / abs(path[0]) if path[0] else 0.0
                false = firings > 0 or fell > IMPROVING
                words.append(f"{'F' if false else 'f'}@{e.step} (fell {fell:.1%})")
                firings += 1
            onset = f" [lr 0 from {t.plateau_at}]" if t.plateau_at is not None else ""
            print(f"  {t.family:<6} {t.name:<55} {s.key:<11}{onset} plateau: {', '.join(words) or 'none'}")


def plateau_rule(smoothing: float, patience: int, min_delta: float, warmup: int = 0, **extra: object) -> Rule:
    return Rule(name="loss-plateau", kind="plateau", key="*loss*", mode="min", smoothing=smoothing,
                patience_steps=int(patience), min_delta=min_delta, warmup_steps=warmup, **extra)


def grid(trainings: list[Training], smoothings: list[float], patiences: list[float], deltas: list[float],
         margins: list[float]) -> None:
    print("\nplateau rule variants (smoothing, patience, min_delta, noise_margin):")
    for smoothing in smoothings:
        for patience in patiences:
            for min_delta in deltas:
                for margin in margins:
                    sc = score(trainings, [plateau_rule(smoothing, patience, min_delta, noise_margin=margin)])
                    sc = sc["loss-plateau"]
                    print(f"  {smoothing:<5} {patience:>5} {min_delta:<6} {margin:<4} {sc.row()}; healthy series "
                          f"alerted {sc.healthy_alerted}/{sc.healthy_series}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--families", default="demo,numpy,digits,gpt2")
    parser.add_argument("--curves", default=None, help="curves kept by bench/alert_curves.py instead of training")
    parser.add_argument("--keep", default=None, help="also keep the curves in this file (for --curves)")
    parser.add_argument("--grid", action="store_true", help="also score variants of the plateau rule")
    parser.add_argument("--smoothing", default="0.9,0.95,0.98", help="the grid's smoothings (comma-separated)")
    parser.add_argument("--patience", default="500,1000,2000", help="the grid's patience_steps")
    parser.add_argument("--min-delta", default="0,0.005,0.01,0.02", help="the grid's min_delta")
    parser.add_argument("--noise-margin", default="0,2,3,4", help="the grid's noise_margin")
    parser.add_argument("--detail", action="store_true", help="every training's plateau alerts")
    parser.add_argument("--rule", default=None, help="smoothing,patience,min_delta,noise_margin: score this plateau "
                        "rule instead of the default one")
    args = parser.parse_args()
    print(f"# reproduce: {sys.executable} bench/alerts_quality.py --families {args.families}"
          + (f" --curves {args.curves}" if args.curves else "") + (" --grid" if args.grid else "")
          + (" --detail" if args.detail else ""))
    machine("alert quality: before")
    t0 = time.process_time()
    if args.curves:
        trainings = [t for path in args.curves.split(",") for t in load(pathlib.Path(path))
                     if t.family in args.families.split(",")]
    else:
        trainings = all_trainings(args.families.split(","))
    if args.keep:
        save(trainings, pathlib.Path(args.keep))
    steps = sum(t.steps for t in trainings)
    print(f"{len(trainings)} trainings, {steps:,} steps ({time.process_time() - t0:.0f} CPU s)")
    rules = default_rules() + [Rule(name="loss-spike", kind="spike", key="*loss*")]
    if args.rule:
        smoothing, patience, min_delta, margin = (float(v) for v in args.rule.split(","))
        rules = [plateau_rule(smoothing, int(patience), min_delta, noise_margin=margin) if r.kind == "plateau" else r
                 for r in rules]
    print("\nthe default rules (and a spike rule on *loss*):")
    for rule in rules:
        if rule.kind in ("plateau", "nonfinite", "spike"):
            fields = {k: rule.value(k) for k in sorted(rule._ALLOWED[rule.kind])}
            print(f"  {rule.name}: {rule.kind} on {rule.key!r} {fields}")
    t1 = time.process_time()
    scores = score(trainings, rules)
    points = sum(len(s.values) for t in trainings for s in t.series)
    print(f"  (the engine took {points:,} points in {time.process_time() - t1:.1f} CPU s, all rules)")
    for name, sc in scores.items():
        extra = f"; healthy series alerted {sc.healthy_alerted}/{sc.healthy_series}" if sc.healthy_series else ""
        print(f"  {name:<13} {sc.row()}{extra}")
    if args.detail:
        detail(trainings, rules)
    if args.grid:
        grid(trainings, *([float(v) for v in arg.split(",")] for arg in (args.smoothing, args.patience,
                                                                          args.min_delta, args.noise_margin)))
    machine("alert quality: after")


if __name__ == "__main__":
    main()
