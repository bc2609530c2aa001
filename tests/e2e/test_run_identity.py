"""Each execution of a script is a run of its own, even under a name used
before; a resume continues one run, and a resumed run whose steps go back is
marked as such. Scripts run as their own processes against real Mosquitto and
a real bridge process on DuckDB."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys
from typing import Any

from helpers import get_json, metric_counts, run_path
from script_trainer import value
from servers import wait_until

TESTS = pathlib.Path(__file__).resolve().parent.parent
N = 300


def _script(spec: dict[str, Any], ok: bool = True) -> tuple[dict[str, Any], str]:
    """Run tests/script_trainer.py with this spec; its last stdout line (parsed) and its stderr."""
    proc = subprocess.run([sys.executable, str(TESTS / "script_trainer.py"), json.dumps(spec)],
                          capture_output=True, text=True, timeout=300)
    if not ok:
        assert proc.returncode != 0, proc.stdout
        return {}, proc.stderr
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1]), proc.stderr


def _points(bridge_url: str, project: str, run: str, count: int) -> list[tuple[int, float]]:
    """Every stored point of ``x``, in step order, once ``count`` are stored."""
    wait_until(lambda: metric_counts(bridge_url, project, run).get("x") == count, 60, f"{count} points of {run}")
    got = get_json(bridge_url, run_path(project, run) + "/series", key="x", width=20000)
    assert got["raw"] is True
    return list(zip(got["points"]["step"], got["points"]["y"]))


def _record(bridge_url: str, project: str, run: str) -> dict[str, Any]:
    (record,) = [r for r in get_json(bridge_url, "/api/v1/runs", project=project)["runs"] if r["run"] == run]
    return record


def test_a_script_run_twice_under_one_name_makes_two_runs_each_exact(mosquitto, bridge_factory, spool_dir, tmp_path):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    settings = {"mqtt_url": mosquitto.url, "bridge_url": bridge.url, "spool_dir": str(spool_dir)}
    offsets = (0.0, 1000.0)
    inits = [_script({"project": "twice", "run": "same name", "init": settings, "steps": [0, N], "value": v})[0]
             for v in offsets]
    writers = [_script({"writer": True, "log_dir": str(tmp_path / "runs" / "tb-dropin"), "init": settings,
                        "steps": [0, N], "value": v})[0] for v in offsets]

    for project, name, sessions in (("twice", "same name", inits), ("runs", "tb-dropin", writers)):
        assert all(s["report"]["batches_left_in_spool"] == 0 for s in sessions)
        first, second = (s["id"] for s in sessions)
        assert first != second and all(re.fullmatch(re.escape(name) + "-[0-9a-z]{6}", s) for s in (first, second))
        listed = get_json(bridge.url, "/api/v1/runs", project=project, name=name)["runs"]
        assert sorted(r["run"] for r in listed) == sorted([first, second])
        assert [r["name"] for r in listed] == [name, name]
        for session, offset in zip(sessions, offsets):  # each run holds its own execution's points, once
            assert _points(bridge.url, project, session["id"], N) == [(i, value(i, offset)) for i in range(N)]
            assert _record(bridge.url, project, session["id"])["resumes"] == []


def test_a_resume_continues_the_run_and_one_whose_steps_go_back_is_marked(mosquitto, bridge_factory, spool_dir,
                                                                          tmp_path):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    settings = {"mqtt_url": mosquitto.url, "bridge_url": bridge.url, "spool_dir": str(spool_dir)}
    project, name = "resume", "long run"

    first, _ = _script({"project": project, "run": name, "init": settings, "implicit": 100})
    run = first["id"]
    _points(bridge.url, project, run, 100)
    other, _ = _script({"project": project, "run": name, "init": settings, "implicit": 10})  # not resumed: a new run
    assert other["id"] != run

    # "must": the newest run of the name is `other`; an id names the one to continue
    second, err = _script({"project": project, "run": name, "init": {**settings, "id": run, "resume": "must"},
                           "implicit": 50, "value": 1000})
    assert (second["id"], second["name"]) == (run, name) and err == ""
    points = _points(bridge.url, project, run, 150)
    assert points == [(i, float(i)) for i in range(100)] + [(100 + i, 1000.0 + i) for i in range(50)]
    wait_until(lambda: len(_record(bridge.url, project, run)["resumes"]) == 1, 30, "the resume recorded")
    (resume,) = _record(bridge.url, project, run)["resumes"]
    assert (resume["after_step"], resume["back_to_step"]) == (99, None)

    # a resume by name continues the newest run of that name; this one goes back to step 120
    third, err = _script({"project": project, "run": name, "init": {**settings, "resume": "allow"},
                          "steps": [5, 15], "value": 5000})
    assert third["id"] == other["id"]
    assert "was resumed after step 9 and now logs step 5: its steps go back" in err
    fourth, err = _script({"project": project, "run": name, "init": {**settings, "id": run, "resume": "allow"},
                           "steps": [120, 130], "value": 7000})
    assert fourth["id"] == run and "resumed after step 149 and now logs step 120" in err
    wait_until(lambda: len(_record(bridge.url, project, run)["resumes"]) == 2
               and _record(bridge.url, project, run)["resumes"][1]["back_to_step"] == 120, 30,
               "the resume that went back recorded")
    record = _record(bridge.url, project, run)
    assert [(r["after_step"], r["back_to_step"]) for r in record["resumes"]] == [(99, None), (149, 120)]
    assert record["resumes"][0]["started_ms"] < record["resumes"][1]["started_ms"]
    assert record["name"] == name
    steps = [s for s, _ in _points(bridge.url, project, run, 160)]
    assert steps == sorted(list(range(150)) + list(range(120, 130)))  # both sessions kept; the record says so

    _, err = _script({"project": project, "run": "never ran", "init": {**settings, "resume": "must"},
                      "implicit": 1}, ok=False)
    assert "cannot resume a run named 'never ran' in project 'resume': the bridge has none" in err
