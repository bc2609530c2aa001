"""``curvestream import mlflow MLRUNS``: every run of MLflow's file store
becomes a run, with every metric line at its step and time.

The store is read as MLflow writes it (``mlflow/store/tracking/file_store.py``);
MLflow itself is not needed::

    MLRUNS/<experiment id>/meta.yaml                 name, lifecycle_stage
    MLRUNS/<experiment id>/<run id>/meta.yaml        run_name, status, start_time, end_time (ms), lifecycle_stage
    MLRUNS/<experiment id>/<run id>/metrics/<key>    one line per value: "<timestamp ms> <value> <step>"
    MLRUNS/<experiment id>/<run id>/params/<key>     the value
    MLRUNS/<experiment id>/<run id>/tags/<key>       the value

(keys with ``/`` are nested folders). MLRUNS may also be one experiment's or
one run's folder. Deleted experiments and runs (``lifecycle_stage: deleted``,
``.trash``) are left out.

What each part becomes: the project is the experiment's name (``--project``
overrides it); the run ``<run name>-<first 12 hex digits of the run id>``;
every metric line a point at its step, at its timestamp (values logged in the
same millisecond at the same step share a row, as ``log_metrics`` logs them;
wall times equal within a run are moved 1 ns apart, as for every run); the
params the config (MLflow's strings, as MLflow returns them); the tags
``key=value`` (plus ``mlflow-import``), except MLflow's own ``mlflow.*`` tags:
``mlflow.source.git.commit`` is the git commit and ``mlflow.parentRunId`` the
group (the parent run's name here); the status finished (FINISHED), failed
(FAILED, KILLED), or none yet (RUNNING, SCHEDULED).

Re-importing sends nothing new (:mod:`curvestream.importing`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from curvestream_wire.v1 import run_pb2

from curvestream.importing import Batches, ImportBatches, ImportRun, import_runs, producer_id_of
from curvestream.settings import Settings
from curvestream.version import __version__

__all__ = ["import_mlflow", "find_runs", "MlflowRun"]

_TAG = "mlflow-import"
_FINISHED, _FAILED, _KILLED = 3, 4, 5
_ID_DIGITS = 12


def _yaml(path: Path) -> dict[str, Any]:
    try:
        import yaml
    except ImportError as exc:
        raise ImportError(f"curvestream import mlflow reads MLflow's meta.yaml files with PyYAML: pip install pyyaml "
                          f"({exc})") from None
    with open(path, encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    return data if isinstance(data, dict) else {}


def _files(folder: Path) -> dict[str, str]:
    """Key (the path under ``folder``, ``/``-joined) -> file contents."""
    if not folder.is_dir():
        return {}
    return {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(folder.rglob("*")) if p.is_file()}


class MlflowRun:
    def __init__(self, folder: Path, meta: dict[str, Any], experiment: str, project: str | None,
                 names: dict[str, str]) -> None:
        self.folder = folder
        self.meta = meta
        self.run_id = str(meta.get("run_id") or meta.get("run_uuid") or folder.name)
        self.tags = _files(folder / "tags")
        self.project = project or experiment
        self.run = names[self.run_id]
        self.producer_id = producer_id_of(_TAG, self.project, self.run, self.run_id)
        self.size = sum(p.stat().st_size for p in (folder / "metrics").rglob("*") if p.is_file()) \
            if (folder / "metrics").is_dir() else 0
        parent = self.tags.get("mlflow.parentRunId", "")
        self.group = names.get(parent, parent)

    def batches(self) -> Batches:
        builder = ImportBatches(self.producer_id, self.project, self.run)
        started = int(self.meta.get("start_time") or 0) * 1_000_000
        meta = run_pb2.RunMeta(
            version=1, project=self.project, run=self.run, config_json=json.dumps(_files(self.folder / "params"),
                                                                                  ensure_ascii=False, sort_keys=True),
            tags=[*(f"{k}={v}" if v else k for k, v in self.tags.items() if not k.startswith("mlflow.")), _TAG],
            group=self.group, started_ns=started, git_commit=self.tags.get("mlflow.source.git.commit", ""),
            producer_id=self.producer_id, client_version=__version__)
        builder.add(meta)
        for step, wall_ns, values, read in _rows(self.folder / "metrics"):
            builder.add_scalars(step, wall_ns, values)
            if builder.full:
                yield (*builder.seal(), read)
        status = int(self.meta.get("status") or 0)
        if status in (_FINISHED, _FAILED, _KILLED):
            state = run_pb2.RUN_STATE_FINISHED if status == _FINISHED else run_pb2.RUN_STATE_FAILED
            reason = {_FINISHED: "imported from MLflow", _FAILED: "imported from MLflow: failed",
                      _KILLED: "imported from MLflow: killed"}[status]
            ended = int(self.meta.get("end_time") or 0) * 1_000_000
            builder.add(run_pb2.RunStatus(version=1, project=self.project, run=self.run, state=state, reason=reason,
                                          updated_ns=max(ended, builder.last_wall_ns + 1),
                                          producer_id=self.producer_id))
        yield (*builder.seal(), self.size)


def _read_metric(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(timestamp ms, value, step) of one metric file, in file order."""
    data = path.read_bytes()
    lines = data.split(b"\n")
    if lines and not lines[-1].strip():
        lines.pop()
    tokens = data.split()
    if len(tokens) == 3 * len(lines):
        return (np.array(tokens[0::3]).astype(np.int64), np.array(tokens[1::3]).astype(np.float64),
                np.array(tokens[2::3]).astype(np.int64))
    ts, values, steps = [], [], []
    for number, line in enumerate(lines, 1):
        parts = line.split()
        if len(parts) not in (2, 3, 5, 6):
            raise ValueError(f"{path}: line {number} has {len(parts)} fields (MLflow writes 'timestamp value step')")
        ts.append(int(parts[0]))
        values.append(float(parts[1]))
        steps.append(int(parts[2]) if len(parts) > 2 else 0)
    return np.array(ts, np.int64), np.array(values, np.float64), np.array(steps, np.int64)


def _rows(metrics: Path) -> Any:
    """``(step, wall_ns, {key: value}, bytes read)`` in time order: the values of
    different keys at the same millisecond and step share a row (a key's values
    at one millisecond keep their order, by step)."""
    files = sorted(p for p in metrics.rglob("*") if p.is_file()) if metrics.is_dir() else []
    if not files:
        return
    keys, parts = [], []
    for i, path in enumerate(files):
        ts, values, steps = _read_metric(path)
        keys.append(path.relative_to(metrics).as_posix())
        parts.append((ts, values, steps, np.full(len(ts), i, np.int64)))
    size = sum(p.stat().st_size for p in files)
    ts, values, steps, key = (np.concatenate([p[j] for p in parts]) for j in range(4))
    order = np.lexsort((key, steps, ts))  # stable: a key's lines keep their file order within a step
    n = len(order)
    row: dict[str, float] = {}
    at: tuple[int, int] | None = None
    for i, (t, v, s, k) in enumerate(zip(ts[order].tolist(), values[order].tolist(), steps[order].tolist(),
                                         key[order].tolist())):
        name = keys[k]
        if (t, s) != at or name in row:
            if at is not None:
                yield at[1], at[0] * 1_000_000, row, size * i // n
            row, at = {}, (t, s)
        row[name] = v
    if at is not None:
        yield at[1], at[0] * 1_000_000, row, size


def _experiments(root: Path) -> list[tuple[Path, dict[str, Any]]]:
    """(folder, meta) of the experiments under ``root`` (``root`` itself when it is one)."""
    meta_path = root / "meta.yaml"
    if meta_path.is_file():
        meta = _yaml(meta_path)
        if "run_id" not in meta and "run_uuid" not in meta:
            return [(root, meta)]
    found = []
    for folder in sorted(root.iterdir()):
        if folder.is_dir() and folder.name != ".trash" and (folder / "meta.yaml").is_file():
            meta = _yaml(folder / "meta.yaml")
            if "experiment_id" in meta and "run_id" not in meta and meta.get("lifecycle_stage") != "deleted":
                found.append((folder, meta))
    return found


def _run_name(meta: dict[str, Any], tags_dir: Path, run_id: str) -> str:
    tag = tags_dir / "mlflow.runName"
    name = str(meta.get("run_name") or (tag.read_text(encoding="utf-8") if tag.is_file() else ""))
    return f"{name}-{run_id[:_ID_DIGITS]}" if name else run_id


def find_runs(directory: str | Path, project: str | None = None) -> list[MlflowRun]:
    root = Path(directory)
    if not root.is_dir():
        raise FileNotFoundError(f"curvestream import: {directory} is not a directory")
    meta_path = root / "meta.yaml"
    single = _yaml(meta_path) if meta_path.is_file() else {}
    if "run_id" in single or "run_uuid" in single:  # one run's folder
        experiments = [(root.parent, _yaml(root.parent / "meta.yaml") if (root.parent / "meta.yaml").is_file()
                        else {"name": root.parent.name})]
        only = root.name
    else:
        experiments, only = _experiments(root), None
    runs: list[MlflowRun] = []
    for folder, exp_meta in experiments:
        metas = {}
        for run_dir in sorted(folder.iterdir()):
            if only is not None and run_dir.name != only:
                continue
            if run_dir.is_dir() and (run_dir / "meta.yaml").is_file():
                meta = _yaml(run_dir / "meta.yaml")
                if ("run_id" in meta or "run_uuid" in meta) and meta.get("lifecycle_stage") != "deleted":
                    metas[run_dir] = meta
        names = {}
        for run_dir, meta in metas.items():
            run_id = str(meta.get("run_id") or meta.get("run_uuid"))
            names[run_id] = _run_name(meta, run_dir / "tags", run_id)
        experiment = str(exp_meta.get("name") or folder.name)
        runs.extend(MlflowRun(run_dir, meta, experiment, project, names) for run_dir, meta in metas.items())
    return runs


def import_mlflow(directory: str | Path, settings: Settings, project: str | None = None, timeout_s: float = 600.0,
                  progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Import every run of the MLflow file store at ``directory``; ``progress(done_bytes, total_bytes)``."""
    runs = [ImportRun(str(r.folder), r.project, r.run, r.producer_id, r.size, r.batches)
            for r in find_runs(directory, project)]
    return {"directory": str(directory), **import_runs(runs, settings, timeout_s, progress)}
