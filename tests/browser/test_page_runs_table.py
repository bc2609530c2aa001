"""The runs table: a status badge per run (running, finished, failed, lost), search and filters."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

from page_helpers import duckdb_bridge, open_page, rows_of_runs, start_run, wait_stored
from servers import wait_until

KILLED_TRAINER = textwrap.dedent("""
    import sys, time
    import curvestream
    run = curvestream.init(project="table", run="killed", mqtt_url=sys.argv[1], bridge_url=sys.argv[2],
                           spool_dir=sys.argv[3], tags=["wide"], config={"lr": 0.01})
    run.log({"loss": 1.0}, step=0)
    print("ready", flush=True)
    time.sleep(600)
""")


def shown_runs(page) -> set[str]:
    return {r for r in rows_of_runs(page, "table")}


def test_the_runs_table_shows_each_runs_state_and_filters_by_search_tag_and_config(
        page, bridge_factory, mosquitto, spool_dir, tmp_path, output_dir):
    bridge = duckdb_bridge(bridge_factory, tmp_path, mosquitto)
    with start_run(mosquitto, bridge, spool_dir, "table", "done", tags=["baseline"], config={"lr": 0.1}) as run:
        run.log({"loss": 0.5}, step=0)
    failing = start_run(mosquitto, bridge, spool_dir, "table", "crashed", tags=["baseline"], config={"lr": 0.01})
    failing.log({"loss": 0.7}, step=0)
    failing.finish(status="failed", reason="RuntimeError: CUDA out of memory")
    going = start_run(mosquitto, bridge, spool_dir, "table", "going", tags=["wide"], config={"lr": 0.1})
    script = tmp_path / "killed.py"
    script.write_text(KILLED_TRAINER)
    killed = subprocess.Popen([sys.executable, str(script), mosquitto.url, bridge.url, str(tmp_path / "spool-killed")],
                              stdout=subprocess.PIPE, text=True)
    try:
        going.log({"loss": 0.9}, step=0)
        assert killed.stdout.readline().strip() == "ready"
        wait_stored(bridge, "table", "killed", {"loss": 1})
        open_page(page, bridge)
        wait_until(lambda: rows_of_runs(page, "table").get("killed") == "running", 30, "the trainer shown running")
        os.kill(killed.pid, signal.SIGKILL)  # its MQTT Last Will says: lost
        killed.wait(10)
        want = {"done": "finished", "crashed": "failed", "going": "running", "killed": "lost"}
        wait_until(lambda: rows_of_runs(page, "table") == want, 30, "four runs in four states")
        badge = page.locator('[data-testid="run-row"][data-run="crashed"] [data-testid="run-state"]')
        assert "CUDA out of memory" in badge.get_attribute("title"), "a failed run tells why on its badge"
        page.screenshot(path=str(output_dir / "page-runs-table.png"))

        page.get_by_test_id("run-search").fill("table baseline")
        wait_until(lambda: shown_runs(page) == {"done", "crashed"}, 10, "the search for a tag word")
        page.get_by_test_id("run-search").fill("")
        page.get_by_test_id("filter-tag").select_option("wide")
        wait_until(lambda: shown_runs(page) == {"going", "killed"}, 10, "the tag filter")
        page.get_by_test_id("filter-config-key").select_option("lr")
        page.get_by_test_id("filter-config-value").select_option("0.01")
        wait_until(lambda: shown_runs(page) == {"killed"}, 10, "tag and config value together")
        assert "tag=wide" in page.url and "cfg=lr" in page.url and "cfg_value=0.01" in page.url
        page.get_by_test_id("filter-clear").click()
        wait_until(lambda: shown_runs(page) == set(want), 10, "every run again")
    finally:
        if killed.poll() is None:
            killed.kill()
            killed.wait(10)
        killed.stdout.close()
        going.finish()
    assert not page.page_errors, page.page_errors
