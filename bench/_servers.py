"""Benchmarks reuse the test suite's real-server launchers (tests/servers.py)."""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))

from servers import Amqtt, BridgeProcess, Influxd, Mosquitto, free_port, wait_until  # noqa: F401
