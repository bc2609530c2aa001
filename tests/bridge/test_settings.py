from __future__ import annotations

import pathlib

import pytest
from pydantic import ValidationError

from curvestream_bridge.settings import BridgeSettings

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "bridge" / "bridge.example.env"


def test_the_example_config_file_names_only_real_settings_and_loads():
    names = [line.split("=", 1)[0].strip().lstrip("# ") for line in EXAMPLE.read_text().splitlines()
             if "=" in line and line.lstrip("# ").startswith("CURVESTREAM_")]
    fields = {f"CURVESTREAM_{f.upper()}" for f in BridgeSettings.model_fields}
    assert set(names) <= fields, set(names) - fields
    settings = BridgeSettings(_env_file=str(EXAMPLE))  # type: ignore[call-arg]
    assert settings.store.startswith("influxdb://")
    settings.check_exposure()  # tokens are set: a public address is allowed


def test_bad_settings_name_the_field(monkeypatch):
    monkeypatch.setenv("CURVESTREAM_STORE", "postgres://nope")
    with pytest.raises(ValidationError, match="store"):
        BridgeSettings()
    monkeypatch.setenv("CURVESTREAM_STORE", "duckdb:///x.db")
    monkeypatch.setenv("CURVESTREAM_HTTP_ADDR", "nowhere")
    with pytest.raises(ValidationError, match="http_addr"):
        BridgeSettings()


def test_an_open_bridge_on_a_public_address_refuses_with_the_missing_tokens():
    s = BridgeSettings(store="duckdb:///x.db", http_addr="0.0.0.0:8080", read_token="r")
    with pytest.raises(SystemExit, match="CURVESTREAM_WRITE_TOKEN"):
        s.check_exposure()
    BridgeSettings(store="duckdb:///x.db", http_addr="127.0.0.1:8080").check_exposure()
