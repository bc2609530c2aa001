"""Offline runs, leftovers, `curvestream sync` / `status`, and TLS with a password."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import curvestream
from helpers import metric_counts, run_state, stored_steps
from servers import Mosquitto, wait_until


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("CURVESTREAM_")}
    full_env.update(env)
    return subprocess.run([sys.executable, "-m", "curvestream.cli", *args], capture_output=True, text=True,
                          env=full_env, timeout=300)


def test_an_offline_run_waits_in_the_spool_and_sync_delivers_it_with_its_final_status(
        tmp_path, mosquitto, bridge_factory, spool_dir):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    with curvestream.init(project="offline", id="on a plane", mode="offline", spool_dir=str(spool_dir)) as run:
        for i in range(20_000):
            run.log({"x": float(i)}, step=i)
    assert run.finish().batches_left_in_spool > 0

    status = _cli("status", str(spool_dir), CURVESTREAM_BRIDGE_URL=bridge.url)
    assert status.returncode == 0
    assert "offline/on a plane" in status.stdout and "pending sync" in status.stdout

    sync = _cli("sync", str(spool_dir), CURVESTREAM_MQTT_URL=mosquitto.url, CURVESTREAM_BRIDGE_URL=bridge.url)
    assert sync.returncode == 0, sync.stderr
    report = json.loads(sync.stdout)
    assert report["left_batches"] == 0 and report["runs"][0]["marked_lost"] is False
    wait_until(lambda: metric_counts(bridge.url, "offline", "on a plane") == {"x": 20_000}, 60, "the synced points")
    assert stored_steps(bridge.url, "offline", "on a plane", "x", 19_999) == list(range(20_000))
    assert run_state(bridge.url, "offline", "on a plane") == "finished"
    assert "nothing pending" in _cli("status", str(spool_dir)).stdout


def test_a_new_run_in_the_same_spool_directory_sends_the_leftovers_of_a_dead_one(
        tmp_path, mosquitto, bridge_factory, spool_dir):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    with curvestream.init(project="leftovers", id="first", mode="offline", spool_dir=str(spool_dir)) as first:
        for i in range(5000):
            first.log({"x": float(i)}, step=i)
    with curvestream.init(project="leftovers", id="second", mqtt_url=mosquitto.url, bridge_url=bridge.url,
                          spool_dir=str(spool_dir)) as second:
        second.log({"x": 1.0}, step=0)
    assert second.finish().complete
    wait_until(lambda: metric_counts(bridge.url, "leftovers", "first") == {"x": 5000}, 60, "the leftover points")
    assert not any(spool_dir.iterdir()), "every spool was emptied and removed"


def _tls_material(d: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path, pathlib.Path]:
    ca_key, ca, key, csr, cert = (d / n for n in ("ca.key", "ca.pem", "server.key", "server.csr", "server.pem"))
    ext = d / "san.ext"
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    def run(*a):
        return subprocess.run(["openssl", *a], check=True, capture_output=True)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out", str(ca), "-days", "2",
        "-subj", "/CN=curvestream test CA")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", "/CN=127.0.0.1")
    run("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial", "-out", str(cert),
        "-days", "2", "-extfile", str(ext))
    for p in (ca, key, cert):
        os.chmod(p, 0o644)
    return ca, cert, key


class TlsMosquitto(Mosquitto):
    def __init__(self, workdir: pathlib.Path) -> None:
        super().__init__(workdir)
        ca, cert, key = _tls_material(workdir)
        passwords = workdir / "passwords"
        subprocess.run(["mosquitto_passwd", "-b", "-c", str(passwords), "trainer", "s3cret:pass"], check=True)
        os.chmod(passwords, 0o644)
        self.ca = ca
        self.conf.write_text(
            self.conf.read_text().replace(f"listener {self.port} 127.0.0.1\nallow_anonymous true\n", "")
            + f"listener {self.port} 127.0.0.1\ncertfile {cert}\nkeyfile {key}\n"
            f"allow_anonymous false\npassword_file {passwords}\n"
        )

    @property
    def url(self) -> str:
        return f"mqtts://trainer:s3cret%3Apass@127.0.0.1:{self.port}"


def test_trainer_and_bridge_talk_over_tls_with_a_password(tmp_path, bridge_factory, spool_dir):
    broker = TlsMosquitto(tmp_path / "mosquitto-tls")
    broker.start()
    try:
        bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", broker.url, mqtt_ca_file=str(broker.ca))
        with curvestream.init(project="tls", id="r", mqtt_url=broker.url, mqtt_ca_file=str(broker.ca),
                              bridge_url="", spool_dir=str(spool_dir)) as run:
            for i in range(1000):
                run.log({"x": float(i)}, step=i)
        assert run.finish().complete
        assert run.link.protocol_name == "5"
        wait_until(lambda: metric_counts(bridge.url, "tls", "r") == {"x": 1000}, 30, "points over TLS")
        wrong = curvestream.init(project="tls", id="wrong password", bridge_url="", spool_dir=str(spool_dir),
                                 mqtt_url=f"mqtts://trainer:nope@127.0.0.1:{broker.port}",
                                 mqtt_ca_file=str(broker.ca), finish_timeout_ms=2000)
        wrong.log({"x": 1.0})
        report = wrong.finish()
        assert report.batches_left_in_spool > 0, "refused by the broker: the points wait in the spool"
        assert "Not authorized" in wrong.link.last_error or "authori" in wrong.link.last_error.lower()
    finally:
        broker.stop()
