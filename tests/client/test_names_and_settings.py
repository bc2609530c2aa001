from __future__ import annotations

import pytest

from curvestream_wire.names import decode_segment, encode_segment, validate_key, validate_name
from curvestream_wire.topics import Topics

from curvestream.settings import Settings

HOSTILE = ["a/b", "x+y#z", "100%", "line\nbreak", "tab\tand\x7f", "'; DROP", '") |> drop(', "ü" * 1000, "sp ace,=\""]


@pytest.mark.parametrize("name", HOSTILE)
def test_topic_segments_round_trip_any_name_and_never_hold_wildcards_or_separators(name):
    seg = encode_segment(name)
    assert decode_segment(seg) == name
    assert not {"/", "+", "#", "\x00"} & set(seg)
    project, run, leaf = Topics.parse(Topics.points(name, name))
    assert (project, run, leaf) == (name, name, "points")


def test_names_are_checked_with_clear_errors():
    with pytest.raises(ValueError, match="empty"):
        validate_name("run name", "")
    with pytest.raises(TypeError, match="must be a str"):
        validate_name("project name", 3)
    with pytest.raises(ValueError, match="NUL"):
        validate_key("a\x00b")
    with pytest.raises(ValueError, match="at most"):
        validate_name("run name", "x" * 5000)
    assert validate_key("ü" * 10_000) == "ü" * 10_000


def test_settings_come_from_the_environment_and_bad_values_name_the_setting():
    s = Settings.from_env({"CURVESTREAM_FLUSH_INTERVAL_MS": "50", "CURVESTREAM_MQTT_URL": "mqtts://u:p%40ss@h"})
    assert s.flush_interval_ms == 50
    ep = s.mqtt_endpoint()
    assert (ep.host, ep.port, ep.tls, ep.username, ep.password) == ("h", 8883, True, "u", "p@ss")
    with pytest.raises(ValueError, match="flush_interval_ms"):
        Settings.from_env({"CURVESTREAM_FLUSH_INTERVAL_MS": "soon"})
    with pytest.raises(ValueError, match="mqtt_url"):
        Settings(mqtt_url="http://nope")
    with pytest.raises(ValueError, match="queue_full"):
        Settings(queue_full="maybe")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown curvestream setting"):
        Settings.from_env({}, flush_every=3)
