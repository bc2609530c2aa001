"""The runs table of 10,000 runs: the bridge filters, sorts and pages them
(``GET /api/v1/runs/table``); the page holds one page of rows, never the list."""

from __future__ import annotations

import urllib.parse

from fleet_store import LRS, add_runs, fleet_run_name
from page_helpers import page_context
from servers import wait_until

N = 10_000
PAGE = 100


def rows(page) -> list[str]:
    return page.evaluate("""() => [...document.querySelectorAll('[data-testid="run-row"]')].map(r => r.dataset.run)""")


def names(indices) -> list[str]:
    return [fleet_run_name(i) for i in indices]


def test_a_table_of_ten_thousand_runs_pages_filters_and_sorts_on_the_bridge(browser, bridge_factory, tmp_path):
    add_runs(tmp_path / "s.duckdb", "fleet", N)
    bridge = bridge_factory(f"duckdb:///{tmp_path / 's.duckdb'}", "")
    with page_context(browser, 1280, 800, 1) as page:
        paths: list[str] = []
        page.on("request", lambda r: paths.append(urllib.parse.urlsplit(r.url).path) if "/api/" in r.url else None)
        page.goto(bridge.url)
        count = page.get_by_test_id("runs-count")
        shown_range = page.get_by_test_id("runs-range")
        wait_until(
            lambda: count.text_content() == f"{N} of {N} runs · 1 selected", 60, "the first page, newest selected"
        )
        newest_first = list(range(N - 1, -1, -1))
        assert rows(page) == names(newest_first[:PAGE])
        assert shown_range.text_content() == "1–100 of 10,000"
        assert page.evaluate("window.__curvestream.selected") == [{"project": "fleet", "run": fleet_run_name(N - 1)}]

        page.get_by_test_id("runs-next").click()
        wait_until(lambda: shown_range.text_content() == "101–200 of 10,000", 30, "the second page")
        assert rows(page) == names(newest_first[PAGE:2 * PAGE])

        # words of the search, on the bridge: the page's own rule (every word in the run's texts)
        page.get_by_test_id("run-search").fill("sweep-7 GPU-3")
        found = [i for i in newest_first if i % 20 == 7 and i % 8 == 3]
        wait_until(lambda: count.text_content() == f"{len(found)} of {N} runs · 1 selected", 30, "the search")
        assert rows(page) == names(found[:PAGE]) and shown_range.text_content().startswith("1–")
        page.get_by_test_id("run-search").fill("")

        # a config key and value, chosen from the choices the bridge lists
        page.get_by_test_id("filter-config-key").select_option("lr")
        page.get_by_test_id("filter-config-value").select_option("0.001")
        lr = [i for i in newest_first if LRS[i % 3] == 0.001]
        wait_until(lambda: count.text_content() == f"{len(lr)} of {N} runs · 1 selected", 30, "the config filter")
        group_options = page.get_by_test_id("filter-group").locator("option").all_text_contents()
        assert f"sweep-2 ({sum(1 for i in lr if i % 20 == 2)})" in group_options, "runs per group of those matching"

        # sorts: by name, both ways; by state (failed before finished), ties by name
        page.locator("th[data-sort='run']").click()
        wait_until(lambda: rows(page)[:1] == [fleet_run_name(min(lr))], 30, "sorted by name")
        assert rows(page) == names(sorted(lr)[:PAGE])
        page.locator("th[data-sort='run']").click()
        wait_until(lambda: rows(page)[:1] == [fleet_run_name(max(lr))], 30, "by name, descending")
        page.locator("th[data-sort='state']").click()
        failed_first = sorted(lr, key=lambda i: (i % 7 != 0, i))
        wait_until(lambda: rows(page) == names(failed_first[:PAGE]), 30, "failed runs first")
        assert "sort=state" in page.url and "cfg=lr" in page.url
        page.get_by_test_id("runs-next").click()
        wait_until(lambda: rows(page) == names(failed_first[PAGE:2 * PAGE]), 30, "the next page in that order")

        page.get_by_test_id("filter-clear").click()
        wait_until(lambda: count.text_content() == f"{N} of {N} runs · 1 selected", 30, "every run again")
        assert len(rows(page)) == PAGE
        assert len(page.evaluate("window.__curvestream.runs")) <= PAGE + 1, "the page knows one page and the selection"
        assert "/api/v1/runs" not in paths, "the whole list is never asked for"
        assert page.get_by_test_id("chart-loss").count() == 0
        assert not page.page_errors, page.page_errors
