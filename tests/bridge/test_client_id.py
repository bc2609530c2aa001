"""The bridge's MQTT client id kept in its data directory (client_id.py)."""

from __future__ import annotations

import gc
import warnings

from curvestream_bridge.client_id import ClientId


def test_an_id_is_made_once_kept_and_locked_while_its_bridge_holds_it(tmp_path):
    first = ClientId.resolve("", tmp_path)
    second = ClientId.resolve("", tmp_path)  # another bridge on the same directory: an id of its own, kept nowhere
    assert second.value != first.value and second.path is None
    first.release()
    again = ClientId.resolve("", tmp_path)
    assert again.value == first.value and again.path == tmp_path / "mqtt-client-id"
    again.release()


def test_an_id_dropped_without_release_lets_go_of_its_file_and_lock_without_a_warning(tmp_path):
    kept = ClientId.resolve("", tmp_path).value
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an unclosed file would be a ResourceWarning here
        gc.collect()
    again = ClientId.resolve("", tmp_path)  # the lock went with the dropped one: the same id again
    assert again.value == kept
    again.release()
