"""The README's guarantee rows stay short and name tests that exist: each row's
claim is one sentence a reader can check (at most ``CLAIM_LIMIT`` characters;
the cases a test goes through beyond it live in docs/guarantees.md), and every
test its test cell names is a file, folder or test function of the repository."""

from __future__ import annotations

import functools
import pathlib
import re

REPO = pathlib.Path(__file__).resolve().parent.parent
CLAIM_LIMIT = 200
SECTION = "## Guarantees, and the tests that prove them"
REF = re.compile(r"`([^`\s]+?\.(?:py|ts)(?:::\w+)?|[\w./-]+/)`")


def guarantee_rows() -> list[tuple[str, str]]:
    """(claim, test cell) of every row of the guarantee tables."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    body = text.split(f"\n{SECTION}\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in body.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]] if line.startswith("|") else []
        if len(cells) == 2 and cells != ["guarantee", "test"] and not set(cells[0]) <= {"-", " "}:
            rows.append((cells[0], cells[1]))
    return rows


@functools.cache
def _test_files() -> dict[str, list[pathlib.Path]]:
    by_name: dict[str, list[pathlib.Path]] = {}
    panel_tests = (REPO / "panels" / "echarts-plugin" / "src").rglob("*.test.ts")
    for path in [*(REPO / "tests").rglob("test_*.py"), *panel_tests]:
        by_name.setdefault(path.name, []).append(path)
    return by_name


def resolves(ref: str) -> bool:
    """A path from the repository's root, or a test file's name (the README's sections name their folder once),
    with ``::function`` when given."""
    name, _, function = ref.partition("::")
    path = REPO / name
    candidates = [path] if path.exists() else _test_files().get(pathlib.PurePath(name).name, [])
    if not function:
        return bool(candidates)
    return any(re.search(rf"^\s*(?:async )?def {function}\(", c.read_text(encoding="utf-8"), re.M) for c in candidates)


def test_the_readme_has_guarantee_rows():
    rows = guarantee_rows()
    assert len(rows) > 100, len(rows)
    assert all(REF.search(tests) for _, tests in rows), [claim for claim, tests in rows if not REF.search(tests)]


def test_each_guarantee_claim_is_short():
    long = [f"{len(claim)}: {claim}" for claim, _ in guarantee_rows() if len(claim) > CLAIM_LIMIT]
    assert not long, "\n".join(long)


def test_every_test_a_guarantee_row_names_exists():
    missing = [ref for _, tests in guarantee_rows() for ref in REF.findall(tests) if not resolves(ref)]
    assert not missing, missing


def test_a_missing_test_is_seen():
    assert resolves("tests/e2e/test_walking_skeleton.py")
    assert resolves("test_walking_skeleton.py::test_malformed_payloads_are_counted_and_valid_batches_keep_flowing")
    assert not resolves("test_walking_skeleton.py::test_that_was_never_written")
    assert not resolves("tests/e2e/test_never_written.py")
