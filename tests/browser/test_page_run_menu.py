"""The runs table's row menu in Debian's Chromium: a run renamed (its identity
and curves stay) and a run deleted only once the user confirmed, against a
bridge that wants its write token (the page asks for it once)."""

from __future__ import annotations

from typing import Any

from helpers import get_json
from page_helpers import open_page, rows_of_runs, start_run, wait_stored
from servers import wait_until

WRITE = "page-write-secret"


def _choose(page: Any, run: str, item: str) -> None:
    """Open the run's row menu and pick ``item`` (again if the runs table was drawn anew in between)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    row = f'[data-testid="run-row"][data-run="{run}"]'

    def attempt() -> bool:
        try:
            page.click(row + ' [data-testid="run-menu"] summary', timeout=2000)
            page.click(row + f' [data-testid="{item}"]', timeout=2000)
        except PlaywrightTimeout:
            return False
        return True

    wait_until(attempt, 30, f"{item} of {run} picked")


def _names(page: Any) -> dict[str, str]:
    return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('[data-testid="run-row"]')]
        .filter(r => r.dataset.project === 'menu')
        .map(r => [r.dataset.run, r.querySelector('td.name span').textContent]))""")


def test_the_row_menu_renames_a_run_and_deletes_one_once_confirmed(page, bridge_factory, mosquitto, spool_dir,
                                                                  tmp_path):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 's.duckdb'}", mosquitto.url, write_token=WRITE)
    for name in ("typo", "doomed"):
        with start_run(mosquitto, bridge, spool_dir, "menu", name, write_token=WRITE) as run:
            run.log({"loss": 0.5}, step=0)
        wait_stored(bridge, "menu", name, {"loss": 1})
    open_page(page, bridge)
    wait_until(lambda: set(rows_of_runs(page, "menu")) == {"typo", "doomed"}, 30, "both runs listed")

    answers = ["fixed name", WRITE]  # the new name, then the write token the bridge wants
    dialogs: list[str] = []

    def answer(dialog: Any) -> None:
        dialogs.append(dialog.message)
        if dialog.type == "prompt":
            dialog.accept(answers.pop(0))
        else:
            dialog.accept() if len([d for d in dialogs if "cannot be undone" in d]) > 1 else dialog.dismiss()

    page.on("dialog", answer)
    _choose(page, "typo", "run-rename")
    wait_until(lambda: _names(page).get("typo") == "fixed name", 30, "the new name shown")
    assert "write token" in dialogs[1] and answers == []
    (record,) = [r for r in get_json(bridge.url, "/api/v1/runs", project="menu")["runs"] if r["run"] == "typo"]
    assert record["name"] == "fixed name"

    _choose(page, "doomed", "run-delete")  # the first confirmation is dismissed
    wait_until(lambda: len(dialogs) == 3, 10, "the confirmation asked")
    assert "doomed" in dialogs[2] and "cannot be undone" in dialogs[2]
    assert {r["run"] for r in get_json(bridge.url, "/api/v1/runs", project="menu")["runs"]} == {"typo", "doomed"}
    _choose(page, "doomed", "run-delete")
    wait_until(lambda: set(rows_of_runs(page, "menu")) == {"typo"}, 30, "the deleted run gone from the table")
    assert {r["run"] for r in get_json(bridge.url, "/api/v1/runs", project="menu")["runs"]} == {"typo"}
    assert page.page_errors == []
