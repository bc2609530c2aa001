"""What init() records of where a run came from: git is asked once per working directory and process."""

from __future__ import annotations

import subprocess

from curvestream import meta


def _collect() -> tuple[str, bool]:
    m = meta.collect_meta("p", "r", b"\x01" * 16, {}, [], "", "", 1, "0")
    return m.git_commit, m.git_dirty


def test_the_git_state_is_asked_once_per_directory_for_all_the_runs_of_a_process(tmp_path, monkeypatch):
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    repo.mkdir()
    elsewhere.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "train.py").write_text("print(1)\n")
    subprocess.run([*git, "add", "train.py"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "one"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    monkeypatch.setattr(meta, "_git_states", {}, raising=False)
    asked: list[tuple[str, ...]] = []
    real_git = meta._git
    monkeypatch.setattr(meta, "_git", lambda *args: asked.append(args) or real_git(*args))

    monkeypatch.chdir(repo)
    assert [_collect() for _ in range(100)] == [(head, False)] * 100
    assert len(asked) == 2, "rev-parse and status, once for a hundred runs"
    monkeypatch.chdir(elsewhere)
    assert _collect() == ("", False), "not a repository"
    assert len(asked) == 3, "another directory is asked again"
