"""The engine over batches: rules per key, replay safety, run watches."""

from __future__ import annotations

import json

import numpy as np

from curvestream_bridge.alerts.engine import AlertEngine, alert_id
from curvestream_bridge.alerts.rules import Rule, parse_rules
from curvestream_bridge.decode import DecodedBatch, ScalarColumn

RULES = parse_rules("""
rules:
  - {name: plateau, kind: plateau, key: "*loss*", smoothing: 0.0, patience_steps: 100, min_delta: 0}
  - {name: nonfinite, kind: nonfinite}
  - {name: stalled, kind: stalled, after_s: 15}
  - {name: lost, kind: lost}
""")


def batch(seq, steps, values, key="train/loss", project="p", run="r", producer=b"x"):
    steps = np.asarray(steps, dtype=np.int64)
    return DecodedBatch(producer, seq, project, run,
                        [ScalarColumn(key, steps, steps * 1_000_000, np.asarray(values, dtype=np.float64))],
                        [], [], None, None, 0)


class Clock:
    def __init__(self) -> None:
        self.ns = 10**18

    def __call__(self) -> int:
        return self.ns


def flat_after(step0, steps):
    return np.where(np.asarray(steps) < step0, 10.0 - np.asarray(steps) * 0.01, 10.0 - step0 * 0.01)


def test_rules_apply_only_to_matching_keys():
    engine = AlertEngine(RULES)
    changes = engine.evaluate([batch(1, range(300), np.full(300, 1.0), key="accuracy")])
    assert changes.alerts == []
    changes = engine.evaluate([batch(2, range(300), np.full(300, 1.0), key="val_loss")])
    assert [(a.rule, a.state, a.step) for a in changes.alerts] == [("plateau", "firing", 100)]


def test_a_batch_evaluated_twice_changes_nothing_the_second_time():
    engine = AlertEngine(RULES)
    b = batch(1, range(200), flat_after(50, range(200)))
    first = engine.evaluate([b])
    assert [(a.state, a.step) for a in first.alerts] == [("firing", 150)]
    again = engine.evaluate([b])
    assert again.alerts == [] and again.entries == {}


def test_state_restored_from_entries_continues_where_it_stopped():
    steps = np.arange(1000)
    values = flat_after(600, steps)
    straight = AlertEngine(RULES)
    expected = [(a.state, a.step) for a in straight.evaluate([batch(1, steps[:500], values[:500]),
                                                              batch(2, steps[500:], values[500:])]).alerts]
    assert expected == [("firing", 700)]
    before = AlertEngine(RULES)
    saved = before.evaluate([batch(1, steps[:500], values[:500])]).entries
    after = AlertEngine(RULES)
    after.restore(json.loads(json.dumps(saved)))
    # the trainer re-sends batch 1 (no commit came) and goes on: once, at the same step
    got = after.evaluate([batch(1, steps[:500], values[:500])]).alerts + \
        after.evaluate([batch(2, steps[500:], values[500:])]).alerts
    assert [(a.state, a.step) for a in got] == expected


def test_alert_ids_are_stable_and_versions_count_transitions():
    engine = AlertEngine(RULES)
    engine.evaluate([batch(1, [1, 2, 3], [1.0, float("nan"), 1.0])])
    alert = engine.get(alert_id("nonfinite", "p", "r", "train/loss"))
    assert alert is not None and (alert.state, alert.step, alert.fired_step, alert.version) == ("resolved", 3, 2, 2)
    assert alert.to_json()["window"] == {"from_step": 3, "to_step": 3}


def _running_run_with_ten_steps() -> tuple[Clock, AlertEngine]:
    """An engine on a clock that has seen steps 0-9 of a running run."""
    clock = Clock()
    engine = AlertEngine(RULES, clock_ns=clock)
    engine.status("p", "r", "running")
    engine.evaluate([batch(1, range(10), np.ones(10))])
    return clock, engine


def test_stalled_fires_after_quiet_seconds_of_a_running_run_and_resolves_when_points_resume():
    clock, engine = _running_run_with_ten_steps()
    clock.ns += 14 * 10**9
    assert engine.tick().alerts == []
    clock.ns += 2 * 10**9
    fired = engine.tick().alerts
    assert [(a.rule, a.state, a.step, a.key) for a in fired] == [("stalled", "firing", 9, "")]
    assert "no point for 15 s" in fired[0].message
    assert engine.tick().alerts == []
    resumed = engine.evaluate([batch(2, range(10, 20), np.ones(10))]).alerts
    assert [(a.rule, a.state, a.step) for a in resumed] == [("stalled", "resolved", 10)]


def test_stalled_resolves_at_the_first_new_step_when_the_batch_begins_with_the_last_step_seen():
    clock, engine = _running_run_with_ten_steps()
    clock.ns += 16 * 10**9
    assert [a.state for a in engine.tick().alerts] == ["firing"]
    resumed = engine.evaluate([batch(2, range(9, 20), np.ones(11))]).alerts  # step 9's other keys, then new ones
    assert [(a.rule, a.state, a.step) for a in resumed] == [("stalled", "resolved", 10)]


def test_a_finished_run_never_stalls_and_a_lost_run_raises_lost():
    clock = Clock()
    engine = AlertEngine(RULES, clock_ns=clock)
    engine.status("p", "done", "running")
    engine.evaluate([batch(1, range(10), np.ones(10), run="done")])
    engine.status("p", "done", "finished")
    clock.ns += 100 * 10**9
    assert engine.tick().alerts == []
    lost = engine.status("p", "done", "lost", updated_ns=clock.ns).alerts
    assert [(a.rule, a.state, a.step) for a in lost] == [("lost", "firing", 9)]
    assert "MQTT Last Will" in lost[0].message
    assert engine.status("p", "done", "lost").alerts == []


def test_rules_of_a_project_glob_leave_other_projects_alone():
    rules = [Rule(name="n", kind="nonfinite", project="vision-*")]
    engine = AlertEngine(rules)
    assert engine.evaluate([batch(1, [1], [float("nan")], project="nlp")]).alerts == []
    assert len(engine.evaluate([batch(1, [1], [float("nan")], project="vision-a")]).alerts) == 1


def test_a_run_that_ended_lets_go_of_its_detectors_ignores_re_sends_and_is_watched_anew_if_resumed():
    from curvestream_bridge.alerts.rules import Rule

    engine = AlertEngine([Rule(name="nonfinite", kind="nonfinite")])

    def batch(steps: list[int], values: list[float]) -> DecodedBatch:
        col = ScalarColumn("loss", np.array(steps), np.array(steps) * 1000, np.array(values))
        return DecodedBatch(b"p", steps[0], "proj", "r", [col], [], [], None, None, 0)

    assert [a.state for a in engine.evaluate([batch([1, 2], [1.0, np.nan])]).alerts] == ["firing"]
    engine.status("proj", "r", "finished")
    assert [s.detector for s in engine._series.values()] == [None], "the detector's numbers are let go"
    assert not engine.evaluate([batch([1, 2], [1.0, np.nan])]), "a re-send after the end changes nothing"
    resumed = engine.evaluate([batch([3, 4], [np.nan, 2.0])])
    assert [(a.state, a.step) for a in resumed.alerts] == [("resolved", 4)], \
        "resumed: a new detector, which knows the alert still fires"
