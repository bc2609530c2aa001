"""A round's series evaluated together (alerts/many.py) give exactly what each
detector's own ``update`` gives, series by series: the same transitions and the
same saved state, down to the last bit."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from curvestream_bridge.alerts.detectors import NonFinite, Plateau, detector_for
from curvestream_bridge.alerts.many import update_many
from curvestream_bridge.alerts.rules import Rule, default_rules

RULES = [
    Rule(name="nf", kind="nonfinite"),
    next(r for r in default_rules() if r.kind == "plateau"),
    Rule(name="p-fast", kind="plateau", smoothing=0.9, patience_steps=60, min_delta=0.01, window=40),
    Rule(name="p-max", kind="plateau", mode="max", smoothing=0.95, patience_steps=80, warmup_steps=50,
         noise_margin=0.0, ignore_spikes=0.0),
    Rule(name="p-every-best", kind="plateau", smoothing=0.8, patience_steps=40, min_delta=0.0, window=30),
]


def _curve(rng: np.random.Generator, kind: int, steps: np.ndarray) -> np.ndarray:
    """Falling, flat, noisy, rising or stepped curves, some with spikes and NaN/Inf."""
    t = steps.astype(np.float64)
    base = [2.0 / (1 + t / 200), np.full(len(t), 0.7), 1 - np.exp(-t / 300), 0.5 + 0.1 * (t // 150 % 2)][kind % 4]
    values = base + rng.normal(0, [0.001, 0.02, 0.05][kind % 3], len(t))
    spikes = rng.random(len(t)) < 0.004
    values[spikes] *= rng.choice([50.0, -30.0], spikes.sum())
    bad = rng.random(len(t)) < (0.003 if kind % 5 == 0 else 0.0)
    values[bad] = rng.choice([np.nan, np.inf, -np.inf], bad.sum())
    return values


def _rounds(seed: int, series: int, rounds: int):
    """Per round, each series' next column: mostly 20 steps, some longer, gaps, some series silent."""
    rng = np.random.default_rng(seed)
    step = np.zeros(series, dtype=np.int64)
    kinds = rng.integers(0, 20, series)
    for _ in range(rounds):
        cols = {}
        for i in range(series):
            if rng.random() < 0.1:
                continue
            n = int(rng.choice([20, 20, 20, 40, 7, 60]))
            stride = int(rng.choice([1, 1, 1, 3]))
            steps = step[i] + 1 + np.arange(n, dtype=np.int64) * stride
            step[i] = steps[-1] + (int(rng.integers(0, 400)) if rng.random() < 0.02 else 0)
            cols[i] = (steps, steps * 1000, _curve(rng, int(kinds[i]), steps))
        yield cols


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_series_evaluated_together_give_exactly_what_each_gives_alone(rule, monkeypatch):
    series = 60
    alone = [detector_for(rule, f"k{i}") for i in range(series)]
    together = copy.deepcopy(alone)
    kind = type(alone[0])
    one_by_one = {"rows": 0}
    original = kind.update

    def counted(self, *args):
        one_by_one["rows"] += 1
        return original(self, *args)

    fired = 0
    total = 0
    for cols in _rounds(7, series, 60):
        expected = {i: original(alone[i], *c) for i, c in cols.items()}
        monkeypatch.setattr(kind, "update", counted)
        got = update_many(rule, [together[i] for i in cols], list(cols.values()))
        monkeypatch.setattr(kind, "update", original)
        total += len(cols)
        for (i, _), transitions in zip(cols.items(), got):
            assert repr(list(transitions)) == repr(expected[i]), (rule.name, i)  # repr: NaN values equal
            assert together[i].state_json() == alone[i].state_json(), (rule.name, i)
            fired += len(transitions)
    assert fired > 0  # the curves do make the detectors speak
    assert one_by_one["rows"] < total / 2  # and most rows were computed together


def test_a_series_whose_batch_starts_a_new_chunk_or_holds_a_spike_is_still_exact():
    rule = RULES[1]
    dets = [detector_for(rule, f"k{i}") for i in range(4)]
    steps = np.arange(0, 200, dtype=np.int64)
    for d in dets:
        d.update(steps, steps, 1.0 / (1 + steps))
    alone = copy.deepcopy(dets)
    new = np.arange(200, 280, dtype=np.int64)  # longer than half the window: two chunks of robust z
    cols = [(new, new, 1.0 / (1 + new)) for _ in dets]
    cols[1] = (new, new, np.where(new == 230, 1e6, 1.0 / (1 + new)))  # a spike, left out of the smoothing
    cols[2] = (new + 5000, new, 1.0 / (1 + new))  # a gap longer than the EMA's chunk
    got = update_many(rule, dets, cols)
    for d, a, c, t in zip(dets, alone, cols, got):
        assert repr(list(t)) == repr(a.update(*c))
        assert d.state_json() == a.state_json()


@pytest.mark.parametrize("detector", [
    NonFinite("loss"),
    Plateau("val/loss", RULES[1]),
    detector_for(Rule(name="s", kind="spike"), "x"),
    detector_for(Rule(name="t", kind="threshold", threshold=3.0), "x"),
], ids=lambda d: d.kind)
def test_state_json_is_the_json_of_to_dict_in_every_state(detector):
    steps = np.arange(300, dtype=np.int64)
    values = 1.0 / (1 + steps)
    values[[50, 120]] = [np.nan, np.inf]
    assert json.loads(detector.state_json()) == detector.to_dict()
    for start in range(0, 300, 23):
        detector.update(steps[start:start + 23], steps[start:start + 23], values[start:start + 23])
        assert detector.state_json() == json.dumps(detector.to_dict())
    if isinstance(detector, Plateau):
        detector.best, detector.curvature, detector.last_values = float("-inf"), float("nan"), [1.0]
    assert json.loads(detector.state_json()) == json.loads(json.dumps(detector.to_dict()))
