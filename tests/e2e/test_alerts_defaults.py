"""The default alert rules on a real training that converges noisily: a
torch MLP on scikit-learn's digits through the client, Mosquitto and a bridge
process with no rules file. Its training loss flattens out to a noisy floor
(a batch with one misclassified image stands out) and its validation loss
stops improving: each may raise one plateau alert, never one that resolves
and fires again (the defaults and the hysteresis are tuned in
bench/alerts_quality.py)."""

from __future__ import annotations

import curvestream
from alert_trainings import digits
from helpers import get_json
from servers import BridgeProcess

PROJECT = "alerts-defaults"
STEPS = 12_000


def test_a_converged_noisy_training_raises_at_most_one_plateau_alert_per_loss_and_never_flaps(
        mosquitto, tmp_path):
    bridge = BridgeProcess(tmp_path / "bridge", f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    bridge.start()  # no CURVESTREAM_ALERT_RULES: the default rules
    try:
        with curvestream.init(project=PROJECT, run="digits", mqtt_url=mosquitto.url, bridge_url=bridge.url,
                              spool_dir=str(tmp_path / "spool")) as run:
            for step, metrics in digits(seed=0, steps=STEPS):
                run.log(metrics, step=step)
        assert run.finish().complete  # every batch committed, so evaluated (the engine runs before the commit)
        (stored,) = get_json(bridge.url, "/api/v1/runs", project=PROJECT)["runs"]
        assert stored["points"] == STEPS + STEPS // 50
        alerts = get_json(bridge.url, "/api/v1/alerts", project=PROJECT)["alerts"]
        plateaus = {a["key"]: a for a in alerts if a["rule"] == "loss-plateau"}
        assert set(plateaus) <= {"train/loss", "val/loss"}, alerts
        for _key, alert in plateaus.items():
            # version counts an alert's changes: 1 is one firing that never resolved (no flapping)
            assert (alert["state"], alert["version"]) == ("firing", 1), alert
            assert alert["fired_step"] > 2_000, alert  # not while the loss still falls fast
    finally:
        bridge.stop()
