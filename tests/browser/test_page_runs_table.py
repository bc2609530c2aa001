"""The runs table: a status badge per run (running, finished, failed, lost), search and filters, runs of
one name told apart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import curvestream
from helpers import get_json
from page_helpers import duckdb_bridge, open_page, rows_of_runs, start_run, stored_counts, wait_stored
from servers import wait_until

KILLED_TRAINER = textwrap.dedent("""
    import sys, time
    import curvestream
    run = curvestream.init(project="table", id="killed", mqtt_url=sys.argv[1], bridge_url=sys.argv[2],
                           spool_dir=sys.argv[3], tags=["wide"], config={"lr": 0.01})
    run.log({"loss": 1.0}, step=0)
    print("ready", flush=True)
    time.sleep(600)
""")


def shown_runs(page) -> set[str]:
    return set(rows_of_runs(page, "table"))


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


def test_a_finished_run_whose_tail_waits_in_the_spool_is_marked_pending_until_the_rest_arrives(
        page, bridge_factory, mosquitto, spool_dir, tmp_path):
    bridge = duckdb_bridge(bridge_factory, tmp_path, mosquitto)
    run = curvestream.init(project="tail-page", id="r1", mqtt_url=mosquitto.url, bridge_url="",
                           spool_dir=str(spool_dir), finish_timeout_ms=1500, max_batch_points=500,
                           max_inflight_batches=4)
    for step in range(10_000):
        run.log({"loss": 1.0 / (step + 1)}, step=step)
    wait_until(lambda: stored_counts(bridge, "tail-page", "r1").get("loss", 0) > 0, 60, "the first points stored")
    os.kill(bridge.pid, signal.SIGSTOP)  # the store path stalls: finish() gives up after 1.5 s without a commit
    try:
        assert run.finish().batches_left_in_spool > 0
    finally:
        os.kill(bridge.pid, signal.SIGCONT)
    open_page(page, bridge)
    badge = page.locator('[data-testid="run-row"][data-run="r1"][data-project="tail-page"] [data-testid="run-state"]')
    wait_until(lambda: int(badge.get_attribute("data-pending")) > 0, 30, "the run marked pending")
    pending = int(badge.get_attribute("data-pending"))
    assert badge.text_content() == f"finished · {pending} batches pending"

    env = {k: v for k, v in os.environ.items() if not k.startswith("CURVESTREAM_")}
    env.update(CURVESTREAM_MQTT_URL=mosquitto.url, CURVESTREAM_BRIDGE_URL="")
    sync = subprocess.run([sys.executable, "-m", "curvestream.cli", "sync", str(spool_dir)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert sync.returncode == 0, sync.stderr
    wait_stored(bridge, "tail-page", "r1", {"loss": 10_000})
    wait_until(lambda: rows_of_runs(page, "tail-page") == {"r1": "finished"}, 30, "the mark gone, without a reload")
    assert badge.get_attribute("data-pending") == "0"
    assert not page.page_errors, page.page_errors


def test_runs_of_one_name_show_the_name_and_their_suffix_and_a_resume_whose_steps_went_back_is_marked(
        page, bridge_factory, mosquitto, spool_dir, tmp_path):
    bridge = duckdb_bridge(bridge_factory, tmp_path, mosquitto)
    settings = {"mqtt_url": mosquitto.url, "bridge_url": bridge.url, "spool_dir": str(spool_dir)}
    twins = []
    for _ in range(2):
        with curvestream.init(project="twins", run="twin", **settings) as run:
            run.log({"loss": 1.0}, step=0)
            run.log({"loss": 0.5}, step=1)
        twins.append(run.id)
    with curvestream.init(project="twins", id=twins[0], resume="must", **settings) as run:
        run.log({"loss": 0.7}, step=0)  # the run had ended at step 1: its steps go back

    def back_to() -> list:
        return [(r["run"], [x["back_to_step"] for x in r["resumes"]])
                for r in get_json(bridge.url, "/api/v1/runs", project="twins")["runs"]]
    wait_until(lambda: sorted(back_to()) == sorted([(twins[0], [0]), (twins[1], [])]), 30, "the resume recorded")
    open_page(page, bridge)
    shown = """() => [...document.querySelectorAll('[data-testid="run-row"][data-project="twins"]')].map(r => [
        r.dataset.run, r.querySelector('.name > span').textContent,
        r.querySelector('[data-testid="run-id"]').textContent,
        r.querySelector('[data-testid="run-resumed"]')?.dataset.stepsBack ?? null])"""
    wait_until(lambda: len(page.evaluate(shown)) == 2, 30, "both runs listed")
    assert sorted(page.evaluate(shown)) == sorted([[twins[0], "twin", twins[0][-6:], "true"],
                                                   [twins[1], "twin", twins[1][-6:], None]])
    assert not page.page_errors, page.page_errors


def _points_cells(page, project: str) -> dict[str, int]:
    """Run name -> the exact count its Points cell shows, for one project."""
    return page.evaluate("""p => Object.fromEntries([...document.querySelectorAll('[data-testid="run-row"]')]
        .filter(r => r.dataset.project === p)
        .map(r => [r.dataset.run, Number(r.querySelector('[data-testid="run-points"]').dataset.points)]))""", project)


def test_the_points_column_moves_while_runs_grow(
        page, bridge_factory, mosquitto, spool_dir, tmp_path):
    bridge = duckdb_bridge(bridge_factory, tmp_path, mosquitto)
    watched = start_run(mosquitto, bridge, spool_dir, "growing", "watched")
    other = start_run(mosquitto, bridge, spool_dir, "growing", "other")
    try:
        for step in range(100):
            watched.log({"loss": 1.0 / (step + 1)}, step=step)
            other.log({"loss": 2.0 / (step + 1)}, step=step)
        wait_stored(bridge, "growing", "watched", {"loss": 100})
        wait_stored(bridge, "growing", "other", {"loss": 100})
        # one run's chart is open (its points are pushed), the other's is not: both counts move
        open_page(page, bridge, runs=(("growing", "watched"),))
        wait_until(lambda: _points_cells(page, "growing") == {"watched": 100, "other": 100}, 30, "the counts so far")

        for step in range(100, 250):
            watched.log({"loss": 1.0 / (step + 1), "acc": step / 250}, step=step)
            other.log({"loss": 2.0 / (step + 1)}, step=step)
        wait_stored(bridge, "growing", "watched", {"loss": 250, "acc": 150})
        wait_stored(bridge, "growing", "other", {"loss": 250})
        wait_until(lambda: _points_cells(page, "growing") == {"watched": 400, "other": 250}, 60, "the counts moved")
        assert rows_of_runs(page, "growing") == {"watched": "running", "other": "running"}
    finally:
        watched.finish()
        other.finish()
    assert not page.page_errors, page.page_errors
