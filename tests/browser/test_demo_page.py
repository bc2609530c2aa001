"""`curvestream demo` (the README's demo command) shows curves in the page."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request

from servers import free_port, wait_until


def _alive(url: str) -> bool:
    with urllib.request.urlopen(url + "/healthz", timeout=1) as resp:
        return resp.status == 200


def test_demo_streams_curves_that_the_page_draws(page, tmp_path, output_dir):
    port, mqtt_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CURVESTREAM_")}
    env["CURVESTREAM_SPOOL_DIR"] = str(tmp_path / "spool")
    log = open(tmp_path / "demo.log", "wb")
    demo = subprocess.Popen(
        [sys.executable, "-m", "curvestream.cli", "demo", "--data", str(tmp_path / "data"), "--port", str(port),
         "--mqtt-port", str(mqtt_port), "--duration", "20", "--steps", "2000", "--runs", "3"],
        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_until(lambda: _alive(base), 60, "the embedded stack of `curvestream demo`")
            wait_until(
                lambda: len(json.load(urllib.request.urlopen(base + "/api/v1/runs", timeout=10))["runs"]) == 3,
                60,
                "the three demo runs",
            )
        except AssertionError as e:
            log.flush()
            raise AssertionError(f"{e}; the demo printed:\n{(tmp_path / 'demo.log').read_text()[-4000:]}") from None
        page.goto(base + "/")
        page.wait_for_selector('[data-testid="chart-train/loss"][data-state="ready"]', timeout=60_000)

        def drawn() -> dict:
            raw = page.get_attribute('[data-testid="chart-train/loss"]', "data-points") or "{}"
            return json.loads(raw)

        wait_until(lambda: drawn() and all(n > 10 for n in drawn().values()), 60, "curves with points")
        rows = page.locator('[data-testid="run-row"]').count()
        assert rows == 3
        page.screenshot(path=str(output_dir / "demo-page.png"), full_page=True)
        assert not page.page_errors, page.page_errors
    finally:
        os.killpg(demo.pid, signal.SIGINT)
        try:
            demo.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait(5)
        log.close()
    assert demo.returncode in (0, -signal.SIGINT, 130), (tmp_path / "demo.log").read_text()[-3000:]
