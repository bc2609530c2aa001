"""The engine inside ingest, over a real DuckDB file: state saved before the
commit, a bridge killed mid-patience fires once at the same step, alerts
survive a restart, a store refusing the state keeps the round uncommitted."""

from __future__ import annotations

import numpy as np
import pytest

from curvestream_wire.v1 import batch_pb2

from curvestream_bridge.alerts.rules import parse_rules
from curvestream_bridge.alerts.service import AlertService
from curvestream_bridge.ingest import Ingest, IngestListener, Kind, Message
from curvestream_bridge.metrics import Metrics
from curvestream_bridge.settings import BridgeSettings
from curvestream_bridge.store.base import StoreUnavailable
from curvestream_bridge.store.duckdb.store import DuckDBStore

RULES = parse_rules(
    "rules: [{name: plateau, kind: plateau, key: loss, smoothing: 0.5, patience_steps: 150, min_delta: 0}]"
)
PID = b"\x07" * 16
STEPS = np.arange(2000)
LOSS = np.where(STEPS < 700, 5.0 - STEPS * 0.005, 1.5)  # flat from step 700 on
# the smoothed loss (weight 0.5) reaches its last new low (beyond rounding, 1e-9) at step 721; patience 150 later:
EXPECTED = [("firing", 871)]


def payload(seq: int, per_batch: int = 100, run: str = "r", pid: bytes = PID) -> bytes:
    b = batch_pb2.Batch(version=1, producer_id=pid, seq=seq, project="p", run=run)
    lo = (seq - 1) * per_batch
    s = b.scalars.add(key="loss")
    s.steps.extend(STEPS[lo:lo + per_batch].tolist())
    s.wall_ns.extend((10**18 + STEPS[lo:lo + per_batch] * 10**6).tolist())
    s.values.extend(LOSS[lo:lo + per_batch].tolist())
    return b.SerializeToString()


class Evaluating(IngestListener):
    """What ingest tells the alert service: every round, before its commit."""

    def __init__(self, alerts: AlertService) -> None:
        self.alerts = alerts

    def evaluate(self, batches) -> None:
        self.alerts.on_round(batches)


class Bridge:
    """Ingest + alert service on a DuckDB file; ``crash`` drops everything in memory."""

    def __init__(self, path, store=None) -> None:
        self.store = store or DuckDBStore(str(path))
        self.settings = BridgeSettings(mqtt_url="", store="duckdb:///unused.duckdb")
        self.metrics = Metrics()
        self.published: list[tuple[str, bytes]] = []
        self.alerts = AlertService(self.settings, self.store, self.metrics, rules=RULES,
                                   publish=lambda t, p: self.published.append((t, p)))
        self.alerts.start()
        assert self.alerts.wait_ready(10)
        self.ingest = Ingest(self.store, self.settings, self.metrics, listener=Evaluating(self.alerts),
                             publish_commit=lambda *_: None)

    def send(self, *seqs: int) -> None:
        self.ingest.process([Message(Kind.POINTS, payload(s), "mqtt", ("p", "r"), ack=lambda: None) for s in seqs])

    def fired(self) -> list[tuple[str, int]]:
        return [(a.state, a.step) for a in self.alerts.engine.alerts()]

    def close(self) -> None:
        self.alerts.stop()
        self.store.close()


def test_without_a_crash_the_plateau_fires_once(tmp_path):
    bridge = Bridge(tmp_path / "a.duckdb")
    bridge.send(*range(1, 21))
    assert bridge.fired() == EXPECTED
    topics = [t for t, _ in bridge.published]
    assert topics == ["curvestream/v1/p/r/alerts"]
    bridge.close()


def test_a_bridge_killed_mid_patience_fires_once_at_the_same_step(tmp_path):
    path = tmp_path / "b.duckdb"
    bridge = Bridge(path)
    bridge.send(*range(1, 8))  # steps 0..699: the best is at 700-ish, patience runs
    # killed after storing batch 8 but before evaluating it: store it behind the engine's back
    bridge.store.write([__import__("curvestream_bridge.decode", fromlist=["decode_batch"])
                        .decode_batch(payload(8), 1 << 30, 1 << 30)])
    bridge.alerts.stop()
    bridge.store.close()
    again = Bridge(path)
    again.send(8, *range(9, 21))  # the trainer re-sends 8 (no commit came), then goes on
    assert again.fired() == EXPECTED
    again.close()
    third = Bridge(path)  # and the alert is still there after another restart, not fired again
    third.send(*range(1, 21))
    assert third.fired() == EXPECTED and third.published == []
    third.close()


class RefusingStore(DuckDBStore):
    refuse = False

    def save_alert_state(self, entries, alerts):
        if self.refuse:
            raise StoreUnavailable("down for the test")
        super().save_alert_state(entries, alerts)


def test_a_store_refusing_the_alert_state_holds_the_commit_back(tmp_path):
    store = RefusingStore(str(tmp_path / "c.duckdb"))
    bridge = Bridge(None, store=store)
    commits = []
    bridge.ingest.publish_commit = lambda pid, c: commits.append(c)
    store.refuse = True
    import threading
    worker = threading.Thread(target=bridge.send, args=(1,))
    worker.start()
    worker.join(1.0)
    assert worker.is_alive() and commits == []  # retrying: no commit while the state is not saved
    store.refuse = False
    worker.join(10.0)
    assert not worker.is_alive() and len(commits) == 1
    assert "plateau" in "".join(store.load_alert_state())
    bridge.close()


@pytest.mark.parametrize("state", ["firing", "resolved"])
def test_alerts_survive_a_restart_for_the_api(tmp_path, state):
    path = tmp_path / "d.duckdb"
    bridge = Bridge(path)
    bridge.send(*range(1, 21))
    bridge.close()
    again = Bridge(path)
    assert [a.state for a in again.alerts.engine.alerts(state=state)] == (["firing"] if state == "firing" else [])
    again.close()


class CountingStore(DuckDBStore):
    """Each alert state save's entry names, in order."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.saves: list[list[str]] = []

    def save_alert_state(self, entries, alerts):
        self.saves.append(list(entries))
        super().save_alert_state(entries, alerts)


def test_alerts_of_many_runs_firing_in_one_round_are_remembered_as_delivered_by_one_save(tmp_path):
    store = CountingStore(str(tmp_path / "f.duckdb"))
    bridge = Bridge(None, store=store)
    runs = range(30)
    for seq in range(1, 21):  # a batch of every run in each round: all reach their patience in the same round
        bridge.ingest.process([Message(Kind.POINTS, payload(seq, run=f"r{r}", pid=r.to_bytes(16, "big")), "mqtt",
                                       ("p", f"r{r}"), ack=lambda: None) for r in runs])
    assert sorted(t for t, _ in bridge.published) == sorted(f"curvestream/v1/p/r{r}/alerts" for r in runs)
    deliveries = [names for names in store.saves if any(n.startswith("d\x1f") for n in names)]
    assert len(deliveries) == 1 and len(deliveries[0]) == len(runs)
    bridge.close()
    again = Bridge(None, store=CountingStore(str(tmp_path / "f.duckdb")))  # remembered: not published again
    assert again.published == []
    again.close()


class DownAtStart(DuckDBStore):
    down = True

    def load_alert_state(self):
        if self.down:
            raise StoreUnavailable("not yet")
        return super().load_alert_state()


def test_a_store_down_at_start_holds_rounds_back_until_the_alert_state_is_read(tmp_path):
    store = DownAtStart(str(tmp_path / "e.duckdb"))
    settings = BridgeSettings(mqtt_url="", store="duckdb:///unused.duckdb")
    alerts = AlertService(settings, store, Metrics(), rules=RULES)
    alerts.start()  # returns at once: the bridge serves while the store is down
    assert not alerts.wait_ready(0.5)
    with pytest.raises(StoreUnavailable):
        alerts.on_round([])
    store.down = False
    assert alerts.wait_ready(10)
    alerts.on_round([])
    alerts.stop()
    store.close()
