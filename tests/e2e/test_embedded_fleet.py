"""`curvestream up` (the embedded amqtt broker, the bridge, DuckDB): a trainer
is known to the bridge at once, so one killed a second after ``init()`` is
listed, and marked lost by the Last Will of its connection."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time

from helpers import get_json
from servers import free_port, wait_until

TRAINER = textwrap.dedent("""
    import sys, time
    import curvestream
    run = curvestream.init(project="killed early", run="r", mqtt_url=sys.argv[1], bridge_url="",
                           spool_dir=sys.argv[2])
    print("init returned", flush=True)
    step = 0
    while True:
        run.log({"x": float(step)}, step=step)
        step += 1
        time.sleep(0.001)
""")


def _alive(base: str) -> bool:
    try:
        get_json(base, "/api/v1/runs")
        return True
    except OSError:
        return False


def test_a_trainer_killed_one_second_after_init_on_the_embedded_stack_is_listed_and_lost(tmp_path):
    port, mqtt_port = free_port(), free_port()
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CURVESTREAM_")}
    with open(tmp_path / "up.out", "wb") as out:
        up = subprocess.Popen([sys.executable, "-m", "curvestream.cli", "up", "--data", str(tmp_path / "data"),
                               "--port", str(port), "--mqtt-port", str(mqtt_port)],
                              stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    trainer = None
    try:
        wait_until(lambda: _alive(base) or up.poll() is not None, 60, "curvestream up")
        assert up.poll() is None, (tmp_path / "up.out").read_text()[-3000:]
        script = tmp_path / "trainer.py"
        script.write_text(TRAINER)
        trainer = subprocess.Popen([sys.executable, str(script), f"mqtt://127.0.0.1:{mqtt_port}",
                                    str(tmp_path / "spool")], stdout=subprocess.PIPE, text=True, env=env)
        assert trainer.stdout.readline().strip() == "init returned"
        time.sleep(1.0)  # the scenario: a trainer that dies one second into its run
        trainer.kill()
        trainer.wait(10)

        def state() -> str | None:
            runs = get_json(base, "/api/v1/runs", project="killed early")["runs"]
            return runs[0]["state"] if runs else None

        wait_until(lambda: state() == "lost", 30, "the killed trainer's run listed as lost")
    finally:
        if trainer is not None:
            if trainer.poll() is None:
                trainer.kill()
                trainer.wait(10)
            trainer.stdout.close()
        if up.poll() is None:
            up.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                up.wait(30)
            if up.poll() is None:
                up.kill()
                up.wait(5)
