"""What a training script tells its user on stderr, with no logging set up:
nothing while all is well; one line when the broker is unreachable and the
HTTP fallback is used, one when neither answers, and at exit what is left in
the spool with the `curvestream sync` command that sends it. ``finish()``
waits for a bridge that is slow (its writes held back) and leaves nothing
behind; ``curvestream status`` never lists a batch the bridge has stored.
Scripts run as their own processes against real Mosquitto and bridge processes."""

from __future__ import annotations

import json
import os
import pathlib
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from held_bridge import HeldBridge
from helpers import get_json, metric_counts, run_path
from script_trainer import value
from servers import BridgeProcess, Mosquitto, free_port, wait_until

TESTS = pathlib.Path(__file__).resolve().parent.parent
N = 2000
# the user's shell: no curvestream settings of its own, the venv's commands on the PATH; system metrics
# off (a sample taken once a trainer lasts 10 s would add its points to the counts the notices say)
ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("CURVESTREAM_")},
       "PATH": f"{pathlib.Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
       "CURVESTREAM_SYSTEM_METRICS": "0"}


def _script(spec: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Run tests/script_trainer.py; its parsed last stdout line and its stderr lines but the
    progress lines of a ``finish()`` that waited over a second (a loaded machine's happy path)."""
    proc = subprocess.run([sys.executable, str(TESTS / "script_trainer.py"), json.dumps(spec)],
                          capture_output=True, text=True, timeout=300, env=ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1]), [line for line in proc.stderr.splitlines()
                                                      if not re.search(r" batches (left|done)\b", line)]


def _exact(bridge_url: str, project: str, run: str) -> None:
    wait_until(lambda: metric_counts(bridge_url, project, run).get("x") == N, 60, f"{N} points of {run}")
    got = get_json(bridge_url, run_path(project, run) + "/series", key="x", width=20000)["points"]
    assert list(zip(got["step"], got["y"])) == [(i, value(i, 0.0)) for i in range(N)]


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "curvestream.cli", *args], capture_output=True, text=True,
                          timeout=300, env={**ENV, **env})


@pytest.fixture(scope="module")
def bridge(tmp_path_factory: pytest.TempPathFactory, mosquitto) -> Iterator[BridgeProcess]:
    workdir = tmp_path_factory.mktemp("notices-bridge")
    server = BridgeProcess(workdir, f"duckdb:///{workdir / 'store.duckdb'}", mosquitto.url)
    server.start()
    yield server
    server.stop()


def test_a_script_on_the_happy_path_prints_nothing(bridge, mosquitto, spool_dir):
    report, lines = _script({"project": "notices", "run": "happy", "steps": [0, N],
                             "init": {"mqtt_url": mosquitto.url, "bridge_url": bridge.url,
                                      "spool_dir": str(spool_dir)}})
    assert lines == [] and report["report"]["batches_left_in_spool"] == 0
    _exact(bridge.url, "notices", report["id"])


def test_with_the_broker_unreachable_a_script_says_once_that_it_sends_over_http(bridge, spool_dir):
    broker = f"mqtt://127.0.0.1:{free_port()}"
    report, lines = _script({"project": "notices", "run": "over http", "steps": [0, N],
                             "init": {"mqtt_url": broker, "bridge_url": bridge.url, "spool_dir": str(spool_dir),
                                      "fallback_after_ms": 200}})
    label = f"run notices/{report['id']}"
    assert lines == [f"curvestream: the broker at {broker} does not answer (connection refused); sending to the bridge "
                     f"over HTTP ({bridge.url}) instead",
                     f"curvestream: {label}: every batch reached the bridge"]
    assert report["report"]["batches_left_in_spool"] == 0
    _exact(bridge.url, "notices", report["id"])


def test_with_neither_broker_nor_bridge_a_script_says_so_and_exits_naming_the_sync_that_sends_the_rest(tmp_path):
    broker = f"mqtt://127.0.0.1:{free_port()}"
    bridge = BridgeProcess(tmp_path / "bridge", f"duckdb:///{tmp_path / 'store.duckdb'}", "")  # its port: unused yet
    spool = tmp_path / "my spool"
    report, lines = _script({"project": "notices", "run": "nowhere", "steps": [0, N],
                             "init": {"mqtt_url": broker, "bridge_url": bridge.url, "spool_dir": str(spool),
                                      "fallback_after_ms": 200, "finish_timeout_ms": 1000}})
    left = report["report"]["batches_left_in_spool"]
    assert left > 0
    fallback, neither, summary = lines
    assert fallback.startswith(f"curvestream: the broker at {broker} does not answer (connection refused); sending to "
                               "the bridge")
    assert neither.startswith(f"curvestream: neither the broker at {broker} nor the bridge at {bridge.url} takes "
                              "the points (bridge at 127.0.0.1")
    assert neither.endswith(f"; they wait in the spool {spool} and go out as soon as one answers")
    command = (f"CURVESTREAM_BRIDGE_URL={bridge.url} CURVESTREAM_MQTT_URL={broker} curvestream sync "
               f"'{spool}'")
    assert summary.startswith(f"curvestream: run notices/{report['id']}: no commit for 1 s and the bridge at "
                              f"{bridge.url} does not answer")
    waiting = f"1 batch (~{N:,} points) waits" if left == 1 else f"{left:,} batches (~{N:,} points) wait"
    assert summary.endswith(f"; {waiting} in the spool {spool}; send {'it' if left == 1 else 'them'} with "
                            f"`{command}`")

    bridge.start()
    try:  # the command as printed, in the user's shell, once the bridge is up
        sync = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=300,
                              env={**ENV, "CURVESTREAM_FALLBACK_AFTER_MS": "0"})
        assert sync.returncode == 0 and '"left_batches": 0' in sync.stdout, sync.stdout + sync.stderr
        _exact(bridge.url, "notices", report["id"])
        status = _cli("status", str(spool), CURVESTREAM_BRIDGE_URL=bridge.url)
        assert "nothing pending" in status.stdout, status.stdout
    finally:
        bridge.stop()


def test_finish_waits_for_a_slow_bridge_shows_progress_and_leaves_nothing_behind(spool_dir, tmp_path):
    mosquitto = Mosquitto(tmp_path / "mosquitto")  # its own: the module's bridge shares the subscription of the other
    mosquitto.start()
    bridge = HeldBridge(tmp_path / "held", mosquitto.url)
    bridge.start()
    bridge.gate.touch()  # every store write waits: the bridge takes the batches and is slow to store them
    err = tmp_path / "stderr"
    proc = None
    spec = {"project": "notices", "run": "slow bridge", "steps": [0, N],
            "init": {"mqtt_url": mosquitto.url, "bridge_url": bridge.url, "spool_dir": str(spool_dir),
                     "finish_timeout_ms": 1000}}
    try:
        with open(err, "w") as fh:
            proc = subprocess.Popen([sys.executable, str(TESTS / "script_trainer.py"), json.dumps(spec)],
                                    stdout=subprocess.PIPE, stderr=fh, text=True, env=ENV)
        wait_until(lambda: "is still storing them; waiting" in err.read_text(), 120,
                   "finish() to say the bridge is slow", interval=0.2)
        wait_until(lambda: " batches left" in err.read_text(), 60, "finish() to show its progress", interval=0.2)
        assert proc.poll() is None, "finish() waits past finish_timeout_ms without a commit"
        assert bridge.writes()["finished"] == 0
        bridge.gate.unlink()
        out, _ = proc.communicate(timeout=120)
    finally:
        bridge.gate.unlink(missing_ok=True)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.communicate()
        bridge.stop()
        mosquitto.stop()
    assert proc.returncode == 0
    report = json.loads(out.splitlines()[-1])
    assert report["report"]["batches_left_in_spool"] == 0 and report["report"]["batches_rejected"] == 0
    printed = err.read_text()
    assert "wait in the spool" not in printed and "Traceback" not in printed, printed
    assert not list(spool_dir.rglob("*.seg"))


def test_status_never_lists_what_the_bridge_stored_after_a_kill_and_after_sync(bridge, mosquitto, spool_dir):
    spec = {"project": "notices", "run": "killed", "steps": [0, N], "hold": True,
            "init": {"mqtt_url": mosquitto.url, "bridge_url": bridge.url, "spool_dir": str(spool_dir),
                     "segment_max_age_ms": 600_000}}  # the open segment stays: stored, never deleted
    proc = subprocess.Popen([sys.executable, str(TESTS / "script_trainer.py"), json.dumps(spec)],
                            stdout=subprocess.PIPE, text=True, env=ENV)
    try:
        assert proc.stdout.readline() == "logged\n"
        wait_until(lambda: get_json(bridge.url, "/api/v1/runs", project="notices", name="killed")["runs"], 60,
                   "the run listed")
        (run,) = [r["run"] for r in get_json(bridge.url, "/api/v1/runs", project="notices", name="killed")["runs"]]
        wait_until(lambda: metric_counts(bridge.url, "notices", run).get("x") == N, 60, "every point stored")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        proc.stdout.close()
    assert list(spool_dir.rglob("*.seg")), "the killed trainer left its stored batches in the spool"

    before = _cli("status", str(spool_dir), CURVESTREAM_BRIDGE_URL=bridge.url)
    assert "nothing pending" in before.stdout and "pending sync" not in before.stdout, before.stdout
    assert re.search(r"\(\d+ batch\(es\) on disk are stored already", before.stdout), before.stdout
    sync = _cli("sync", str(spool_dir), CURVESTREAM_BRIDGE_URL=bridge.url, CURVESTREAM_MQTT_URL=mosquitto.url)
    assert sync.returncode == 0 and '"left_batches": 0' in sync.stdout, sync.stdout + sync.stderr
    after = _cli("status", str(spool_dir), CURVESTREAM_BRIDGE_URL=bridge.url)
    assert after.stdout.splitlines()[2:] == ["nothing pending"], after.stdout
    assert not list(spool_dir.rglob("*.seg"))
    _exact(bridge.url, "notices", run)
