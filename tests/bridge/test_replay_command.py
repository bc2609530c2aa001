"""``curvestream-bridge replay-dead-letters --offline``: with the bridge stopped,
the command opens the store and the parked set itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from test_ingest import PID, batch

from curvestream_bridge.parked import ParkedBatches
from curvestream_bridge.store.base import SeriesQuery
from curvestream_bridge.store.duckdb import DuckDBStore


def test_an_offline_replay_stores_the_parked_batches_once_and_empties_the_parked_set(tmp_path):
    parked = ParkedBatches(tmp_path / "parked")
    for seq in (1, 2, 3):
        parked.park(batch(seq), PID, seq, "TypeError: a bug since fixed", "mqtt")
    store = DuckDBStore(str(tmp_path / "s.duckdb"))
    store.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CURVESTREAM_")}
    env.update(CURVESTREAM_STORE=f"duckdb:///{tmp_path / 's.duckdb'}", CURVESTREAM_MQTT_URL="",
               CURVESTREAM_PARKED_DIR=str(tmp_path / "parked"))
    command = [sys.executable, "-m", "curvestream_bridge", "replay-dead-letters", "--offline"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["replayed"] == 3
    assert ParkedBatches(tmp_path / "parked").entries() == []
    store = DuckDBStore(str(tmp_path / "s.duckdb"))
    try:
        assert store.stored_ranges(PID) == [(1, 3)]
        assert store.series(SeriesQuery("p", "r", "loss", width=1000)).total == 30
    finally:
        store.close()


def test_the_curvestream_command_passes_replay_dead_letters_to_the_bridge():
    done = subprocess.run([sys.executable, "-m", "curvestream.cli", "bridge", "replay-dead-letters", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "--offline" in done.stdout, done.stderr


def test_replay_dead_letters_without_a_running_bridge_says_what_to_do():
    env = {k: v for k, v in os.environ.items() if not k.startswith("CURVESTREAM_")}
    done = subprocess.run([sys.executable, "-m", "curvestream_bridge", "replay-dead-letters",
                           "--url", "http://127.0.0.1:9"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--offline" in done.stderr
