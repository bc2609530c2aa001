"""Shared fixtures: real servers on free loopback ports, and small HTTP helpers."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import settings as hypothesis_settings

from servers import Amqtt, BridgeProcess, Influxd, Mosquitto

# property-based tests: no wall-clock deadline (speed lives in bench/), no example database in the tree
hypothesis_settings.register_profile("curvestream", deadline=None, database=None, print_blob=True)
hypothesis_settings.load_profile("curvestream")

# Runs record system metrics every 10 s by default: tests that compare a run's keys with what they
# logged would see system/… keys appear once a run lasts that long. Tests of system metrics turn them on.
os.environ["CURVESTREAM_SYSTEM_METRICS"] = "0"

OUTPUT_DIR = pathlib.Path(__file__).resolve().parent.parent / "test-output"


@pytest.fixture(scope="session")
def output_dir() -> pathlib.Path:
    OUTPUT_DIR.mkdir(exist_ok=True)
    return OUTPUT_DIR


@pytest.fixture(scope="module")
def mosquitto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mosquitto]:
    """One broker per test module: a module that kills bridges or floods the broker leaves sessions and
    queues behind (a killed bridge's persistent session keeps taking messages), never for the next module."""
    server = Mosquitto(tmp_path_factory.mktemp("mosquitto"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def influxd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Influxd]:
    server = Influxd(tmp_path_factory.mktemp("influxd"))
    server.start(timeout=60)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def amqtt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Amqtt]:
    server = Amqtt(tmp_path_factory.mktemp("amqtt"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def spool_dir(tmp_path: pathlib.Path) -> pathlib.Path:
    d = tmp_path / "spool"
    d.mkdir()
    return d


@pytest.fixture
def bridge_factory(tmp_path: pathlib.Path) -> Iterator[Any]:
    started: list[BridgeProcess] = []

    def make(store: str, mqtt_url: str, name: str = "bridge", start: bool = True, **settings: str) -> BridgeProcess:
        bridge = BridgeProcess(tmp_path / name, store, mqtt_url, **settings)
        started.append(bridge)
        if start:
            bridge.start()
        return bridge

    yield make
    for b in started:
        b.stop()


@pytest.fixture
def small_disk(tmp_path: pathlib.Path) -> Iterator[Any]:
    """A 32 MB tmpfs under tmp_path/disk, unmounted afterwards."""
    from disks import SmallDisk

    disk = SmallDisk(tmp_path / "disk", 32)
    disk.mount()
    yield disk
    disk.unmount()
