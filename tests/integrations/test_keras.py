"""A real Keras 3 fit on the torch backend, logging through CurvestreamCallback
into real Mosquitto and a bridge on DuckDB: one global step across epochs."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from curvestream.keras import CurvestreamCallback
from helpers import get_json, metric_counts, run_path, run_state
from servers import wait_until

pytestmark = pytest.mark.filterwarnings(  # Keras' optimizer config on the torch backend, numpy 2
    "ignore:__array__ implementation doesn't accept a copy keyword:DeprecationWarning")

EPOCHS, BATCHES = 3, 4


def test_a_keras_fit_logs_batches_and_epochs_at_one_global_step(mosquitto, bridge_factory, spool_dir, tmp_path):
    assert keras.backend.backend() == "torch"
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(BATCHES * 8, 4)).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.01), loss="mse", metrics=["mae"])
    callback = CurvestreamCallback(project="keras", run="dense", mqtt_url=mosquitto.url, bridge_url=bridge.url,
                                   spool_dir=str(spool_dir))
    model.fit(x, y, batch_size=8, epochs=EPOCHS, validation_data=(x, y), verbose=0, callbacks=[callback])

    (identity,) = [r["run"] for r in get_json(bridge.url, "/api/v1/runs", project="keras")["runs"]
                   if r["name"] == "dense"]  # a new run under the name given: its identity has a suffix
    assert identity.startswith("dense-")
    wait_until(lambda: run_state(bridge.url, "keras", identity) == "finished", 60, "the run to finish")
    counts = metric_counts(bridge.url, "keras", identity)
    assert counts["batch/loss"] == counts["batch/mae"] == EPOCHS * BATCHES
    assert counts["epoch/loss"] == counts["epoch/val_loss"] == counts["epoch"] == EPOCHS
    def series(key):
        return get_json(bridge.url, run_path("keras", identity) + "/series", key=key)["points"]
    assert series("batch/loss")["step"] == list(range(1, EPOCHS * BATCHES + 1))  # never restarts at an epoch
    epochs = series("epoch")
    assert epochs["step"] == [BATCHES * (e + 1) for e in range(EPOCHS)] and epochs["y"] == [0.0, 1.0, 2.0]
    (run,) = [r for r in get_json(bridge.url, "/api/v1/runs")["runs"] if r["run"] == identity]
    assert run["config"]["fit"]["epochs"] == EPOCHS and run["config"]["optimizer"]["learning_rate"] == pytest.approx(
        0.01
    )


def test_the_drop_in_imports_without_keras_backend_set_and_tensorflow_absent(tmp_path):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("KERAS_BACKEND", "KERAS_HOME")}
    env["HOME"] = str(tmp_path)  # no ~/.keras/keras.json naming a backend
    done = subprocess.run([sys.executable, "-c", "from curvestream.keras import CurvestreamCallback\n"
                           "import keras\nprint(keras.backend.backend())"], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "torch"
