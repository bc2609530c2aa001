"""Alerts raised by a training script (``run.alert``) in the alert engine: each
raised once, whatever re-sends and restarts do, at the step the script gave;
resolved when the run ends; a malformed one rejects its batch."""

from __future__ import annotations

import json

import pytest

from curvestream_wire.v1 import batch_pb2

from curvestream_bridge.alerts.engine import AlertEngine
from curvestream_bridge.alerts.rules import default_rules
from curvestream_bridge.decode import DecodedBatch, Rejected, decode_batch


def _batch(seq: int, *alerts: tuple[str, str, str, int]) -> DecodedBatch:
    raised = [batch_pb2.CodeAlert(title=t, text=x, level=lv, step=s, wall_ns=10**18 + s) for t, x, lv, s in alerts]
    return DecodedBatch(b"p" * 16, seq, "mnist", "r1", [], [], [], None, None, 0, alerts=raised)


def test_each_alert_is_raised_once_at_its_step_through_resends_and_restarts():
    engine = AlertEngine(default_rules())
    first = _batch(1, ("Low accuracy", "acc 0.41", "warning", 300), ("Low accuracy", "acc 0.40", "warning", 301))
    changes = engine.evaluate([first])
    assert [(a.rule, a.kind, a.severity, a.state, a.step, a.message, a.key) for a in changes.alerts] == [
        ("Low accuracy", "code", "warning", "firing", 300, "acc 0.41", ""),
        ("Low accuracy", "code", "warning", "firing", 301, "acc 0.40", "")]
    assert engine.evaluate([first]).alerts == []  # the same batch again: a re-send
    restarted = AlertEngine(default_rules())
    restarted.restore(changes.entries)
    assert restarted.evaluate([first]).alerts == []
    (later,) = restarted.evaluate([_batch(2, ("Diverged", "", "critical", 310))]).alerts
    assert (later.message, later.severity, later.step) == ("Diverged", "critical", 310)
    assert len(restarted.alerts(state="firing")) == 3


def test_alerts_from_code_resolve_when_their_run_ends_and_at_once_when_it_had():
    engine = AlertEngine(default_rules())
    engine.evaluate([_batch(1, ("Slow epoch", "epoch 3 took 2 h", "info", 30))])
    ended = engine.status("mnist", "r1", "finished", 2 * 10**18)
    (resolved,) = [a for a in ended.alerts if a.kind == "code"]
    assert resolved.state == "resolved" and resolved.fired_step == 30 and "finished" in resolved.message
    assert json.loads(ended.entries[f"a\x1f{resolved.id}"])["state"] == "resolved"
    late = engine.evaluate([_batch(2, ("After the end", "", "info", 40))]).alerts  # the status came first
    assert [(a.rule, a.state) for a in late] == [("After the end", "firing"), ("After the end", "resolved")]
    assert engine.alerts(state="firing") == []


@pytest.mark.parametrize("title, level", [("", "info"), ("x" * 257, "info"), ("ok", "loud")])
def test_a_malformed_alert_rejects_its_batch(title, level):
    b = batch_pb2.Batch(version=1, producer_id=b"p" * 16, seq=1, project="p", run="r")
    b.alerts.add(title=title, text="t", level=level, step=1, wall_ns=1)
    with pytest.raises(Rejected, match="alert") as err:
        decode_batch(b.SerializeToString(), 1 << 20, 10_000)
    assert err.value.reason == "bad_alert"
