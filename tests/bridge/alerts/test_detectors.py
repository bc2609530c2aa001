"""The detectors on their own: exact steps, windows and words."""

from __future__ import annotations

import json

import numpy as np

from curvestream_bridge.alerts.detectors import NonFinite, Plateau, Spike, Threshold
from curvestream_bridge.alerts.rules import Rule


def feed(detector, steps, values, chunk=37):
    steps = np.asarray(steps, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    out = []
    for i in range(0, len(steps), chunk):
        out += detector.update(steps[i:i + chunk], steps[i:i + chunk] * 1000, values[i:i + chunk])
    return out


def plateau_rule(**kw):
    base = {"name": "p", "kind": "plateau", "smoothing": 0.0, "patience_steps": 100, "min_delta": 0.0}
    return Rule(**{**base, **kw})


def test_nonfinite_fires_at_exactly_the_first_nan_or_inf_and_resolves_when_finite_again():
    values = [1.0] * 50 + [np.inf, np.nan] + [2.0] * 10 + [np.nan]
    events = feed(NonFinite("loss"), range(100, 163), values, chunk=7)
    assert [(e.state, e.step) for e in events] == [("firing", 150), ("resolved", 152), ("firing", 162)]
    assert "became +Inf at step 150 (last finite value 1 at step 149)" in events[0].message


def test_plateau_fires_patience_steps_after_the_best_and_resolves_when_improvement_resumes():
    steps = np.arange(1000)
    values = np.where(steps < 400, 10 - steps * 0.01, 6.0)
    values = np.where(steps >= 700, 6.0 - (steps - 700) * 0.01, values)
    events = feed(Plateau("loss", plateau_rule(min_delta=0.0)), steps, values)
    assert [(e.state, e.step) for e in events] == [("firing", 500), ("resolved", 701)]
    assert (events[0].from_step, events[0].to_step) == (400, 500)
    assert "has not improved for 100 steps" in events[0].message and "best 6 at step 400" in events[0].message


def test_plateau_min_delta_is_relative_and_right_for_negative_values():
    # a negative loss getting slowly worse: best * (1 - min_delta) would call -4.96 "better" than -5
    steps = np.arange(400)
    worse = -5.0 + steps * 1e-4
    events = feed(Plateau("loss", plateau_rule(min_delta=0.01)), steps, worse)
    assert [(e.state, e.step) for e in events] == [("firing", 100)]
    # a negative loss improving by 2 % every 10 steps: better by more than 1 % of |best| each time
    better = -1.0 * (1.02 ** (steps // 10))
    assert feed(Plateau("loss", plateau_rule(min_delta=0.01)), steps, better) == []


def test_plateau_mode_max_and_warmup():
    steps = np.arange(600)
    acc = np.minimum(steps / 100, 1.0)  # rises, then flat from step 100
    events = feed(Plateau("acc", plateau_rule(mode="max", warmup_steps=50)), steps, acc)
    assert [(e.state, e.step) for e in events] == [("firing", 200)]


def test_nan_is_never_better_for_a_plateau():
    steps = np.arange(300)
    values = np.where(steps % 2 == 0, 5.0, np.nan)
    events = feed(Plateau("loss", plateau_rule()), steps, values)
    assert [(e.state, e.step) for e in events] == [("firing", 100)]


def test_one_corrupted_point_is_a_spike_at_its_step_and_not_a_plateau():
    rng = np.random.default_rng(3)
    steps = np.arange(3000)
    loss = 3 * np.exp(-steps / 800) + 0.2 + rng.normal(0, 0.02, len(steps))
    loss[1234] = 5e4
    spikes = feed(Spike("loss", Rule(name="s", kind="spike", threshold=10)), steps, loss)
    assert [(e.state, e.step) for e in spikes] == [("firing", 1234), ("resolved", 1235)]
    assert "spiked to 5e+04 at step 1234" in spikes[0].message
    rule = plateau_rule(smoothing=0.98, patience_steps=500, min_delta=0.001)
    assert feed(Plateau("loss", rule), steps, loss) == []


def test_a_falling_noisy_curve_raises_no_spike():
    rng = np.random.default_rng(4)
    steps = np.arange(4000)
    loss = 2.3 * np.exp(-steps / 300) + 0.05 + np.abs(rng.normal(0, 0.05, len(steps)))
    for chunk in (1, 50, 4000):
        assert feed(Spike("loss", Rule(name="s", kind="spike", threshold=10)), steps, loss, chunk=chunk) == []


def test_threshold_fires_above_and_resolves_below():
    rule = Rule(name="t", kind="threshold", threshold=1.0)
    events = feed(Threshold("gnorm", rule), range(10), [0, 0.5, 2, 3, 0.2, 0, 5, 0, 0, 0])
    assert [(e.state, e.step) for e in events] == [("firing", 2), ("resolved", 4), ("firing", 6), ("resolved", 7)]


def test_a_detector_saved_mid_patience_and_loaded_continues_as_if_never_stopped():
    steps = np.arange(2000)
    values = np.where(steps < 900, 5 - steps * 0.004, 1.4) + np.random.default_rng(5).normal(0, 0.01, 2000)
    rule = plateau_rule(smoothing=0.9, patience_steps=300, min_delta=0.001)
    straight = feed(Plateau("loss", rule), steps, values)
    first = Plateau("loss", rule)
    before = feed(first, steps[:1000], values[:1000])
    again = Plateau("loss", rule)
    again.load(json.loads(json.dumps(first.to_dict())))
    after = feed(again, steps[1000:], values[1000:])
    assert [(e.state, e.step) for e in before + after] == [(e.state, e.step) for e in straight]
    assert straight and straight[0].state == "firing"


def test_a_fired_plateau_stays_firing_through_noise_and_resolves_only_on_real_progress():
    rng = np.random.default_rng(7)
    steps = np.arange(30_000)
    level = np.where(steps < 2_000, 2.0 - steps * 5e-4, 1.0)  # falls, then flat from step 2000...
    level = np.where(steps >= 20_000, 1.0 - (steps - 20_000) * 2e-5, level)  # ...and falls 20 % more from 20000
    loss = level * (1 + rng.normal(0, 0.05, len(steps)))  # 5 % noise, as a minibatch loss
    rule = Rule(name="p", kind="plateau")  # the plateau kind's defaults
    events = feed(Plateau("loss", rule), steps, loss, chunk=100)
    states = [(e.state, e.step) for e in events]
    assert [s for s, _ in states] == ["firing", "resolved"], states  # no flapping on the noisy floor
    fired, resolved = states[0][1], states[1][1]
    assert 3_000 <= fired <= 4_000 and 20_000 < resolved <= 21_500, states
    without = feed(Plateau("loss", Rule(name="p", kind="plateau", noise_margin=0)), steps, loss, chunk=100)
    assert len(without) > 2  # min_delta alone: the floor's dips pass for progress
