"""Runs learnt only from retained messages are not listed until they prove
real (a stored point, a live meta or status); ingest over a real DuckDB file."""

from __future__ import annotations

import json

from test_ingest import batch

from curvestream_wire.v1 import run_pb2

from curvestream_bridge.ingest import Ingest, IngestListener, Kind, Message
from curvestream_bridge.metrics import Metrics
from curvestream_bridge.settings import BridgeSettings
from curvestream_bridge.store.duckdb.store import DuckDBStore


class Statuses(IngestListener):
    """The statuses ingest applied, as run:STATE, and the runs whose metadata it stored."""

    def __init__(self, heard: list[str], metas: list[str]) -> None:
        self.heard = heard
        self.metas = metas

    def status(self, status) -> None:
        self.heard.append(f"{status.run}:{run_pb2.RunState.Name(status.state)}")

    def meta(self, meta) -> None:
        self.metas.append(meta.run)


class Bridge:
    def __init__(self, path) -> None:
        self.store = DuckDBStore(str(path))
        self.acked: list[int] = []
        self.statuses: list[str] = []
        self.metas: list[str] = []
        settings = BridgeSettings(mqtt_url="", store="duckdb:///unused.duckdb", parked_dir="")
        self.ingest = Ingest(self.store, settings, Metrics(), publish_commit=lambda *_: None,
                             listener=Statuses(self.statuses, self.metas))

    def send(self, kind: str, payload: bytes, run: str, mid: int, retained: bool) -> None:
        self.ingest.process([Message(kind, payload, "mqtt", ("p", run), ack=lambda: self.acked.append(mid),
                                     retained=retained)])

    def runs(self) -> dict[str, dict]:
        return {r.run: r.to_json() for r in self.store.runs()}


def meta(run: str, lr: float) -> bytes:
    return run_pb2.RunMeta(project="p", run=run, config_json=json.dumps({"lr": lr})).SerializeToString()


def status(run: str, state: int, updated_ns: int = 10**18) -> bytes:
    return run_pb2.RunStatus(project="p", run=run, state=state, updated_ns=updated_ns).SerializeToString()


def test_a_run_known_only_from_retained_messages_is_listed_once_a_point_of_it_is_stored(tmp_path):
    bridge = Bridge(tmp_path / "s.duckdb")
    bridge.send(Kind.META, meta("old", 0.1), "old", 1, retained=True)
    bridge.send(Kind.STATUS, status("old", run_pb2.RUN_STATE_FINISHED), "old", 2, retained=True)
    assert bridge.runs() == {} and bridge.statuses == []
    assert bridge.acked == [1, 2]  # the broker keeps retained messages anyway
    bridge.ingest.process([Message(Kind.POINTS, batch(1, run="old"), "mqtt", ("p", "old"), ack=lambda: None)])
    old = bridge.runs()["old"]
    assert (old["config"], old["state"], old["points"]) == ({"lr": 0.1}, "finished", 10)
    assert bridge.statuses == ["old:RUN_STATE_FINISHED"] and bridge.acked == [1, 2]  # applied once, acknowledged once
    bridge.store.close()


def test_a_live_meta_or_status_lists_a_run_at_once_and_brings_what_was_held_for_it(tmp_path):
    bridge = Bridge(tmp_path / "s.duckdb")
    bridge.send(Kind.META, meta("quiet", 0.5), "quiet", 1, retained=True)
    bridge.send(Kind.STATUS, status("quiet", run_pb2.RUN_STATE_RUNNING), "quiet", 2, retained=False)
    quiet = bridge.runs()["quiet"]
    assert (quiet["config"], quiet["state"], quiet["points"]) == ({"lr": 0.5}, "running", 0)
    bridge.send(Kind.META, meta("fresh", 0.2), "fresh", 3, retained=False)  # a trainer starting now
    assert bridge.runs()["fresh"]["config"] == {"lr": 0.2}
    assert bridge.metas == ["quiet", "fresh"], "the listener hears of metadata stored (the runs table reads it)"
    bridge.store.close()


def test_retained_messages_of_a_run_the_store_knows_are_applied_as_ever(tmp_path):
    bridge = Bridge(tmp_path / "s.duckdb")
    bridge.ingest.process([Message(Kind.POINTS, batch(1, run="known"), "mqtt", ("p", "known"), ack=lambda: None)])
    bridge.store.close()
    again = Bridge(tmp_path / "s.duckdb")  # restarted: the broker hands it the retained messages again
    again.send(Kind.STATUS, status("known", run_pb2.RUN_STATE_LOST), "known", 1, retained=True)
    again.send(Kind.META, meta("phantom", 1.0), "phantom", 2, retained=True)
    assert set(again.runs()) == {"known"} and again.runs()["known"]["state"] == "lost"
    assert again.statuses == ["known:RUN_STATE_LOST"]
    again.store.close()
