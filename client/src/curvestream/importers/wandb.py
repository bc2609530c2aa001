"""``curvestream import wandb DIR``: every W&B run file under DIR
(``wandb/offline-run-*/run-<id>.wandb``, and online runs' local copies)
becomes a run, with every history row at its step and time.

The file's records (:mod:`.wandb_records`) are decoded with the ``Record``
message of the installed ``wandb`` package (``wandb.proto.wandb_internal_pb2``,
W&B's documented protobuf); nothing is sent to W&B. What each record becomes:

- ``run``: the project (``--project`` overrides it; ``uncategorized`` when the
  run names none), the run ``<name>-<id>`` (its id alone when it has no
  name), tags (plus ``wandb-import``), group, host, git commit, start time,
  and the config it starts with;
- ``config``: later config changes (the ``_wandb`` entry, W&B's own, is left out);
- ``history``: one row at the record's step and its ``_timestamp`` (read
  exactly, to the nanosecond, from its decimal text): numbers (bools as 0/1,
  NaN and ±Inf kept) as points, W&B histograms as histograms with their own
  bins, strings as text; other media (images, tables…) are counted in the
  report's ``skipped`` and left out. ``_step``, ``_timestamp`` and ``_runtime``
  are W&B's row fields, not metrics. Nested keys are joined with ``.``;
- ``summary``: the run's final summary (updates and removals applied in order);
- ``exit``: finished (exit code 0) or failed (any other); a file without one
  (a killed run) ends failed, saying so.

Re-importing sends nothing new (:mod:`curvestream.importing`): each file's
producer id comes from its folder, name and first bytes.
"""

from __future__ import annotations

import decimal
import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from curvestream_wire.v1 import run_pb2

from curvestream.buckets import Buckets
from curvestream.importers.wandb_records import read_records
from curvestream.importing import Batches, ImportBatches, ImportRun, import_runs, producer_id_of
from curvestream.settings import Settings
from curvestream.values import HistogramItem, TextItem
from curvestream.version import __version__

__all__ = ["import_wandb", "find_run_files", "WandbRun"]

_TAG = "wandb-import"
_ROW_FIELDS = frozenset(("_step", "_timestamp", "_runtime"))


def _record_class() -> Any:
    try:
        from wandb.proto import wandb_internal_pb2
    except ImportError as exc:
        raise ImportError("curvestream import wandb reads W&B's records with the wandb package's own protobuf: "
                          f"pip install wandb ({exc})") from None
    return wandb_internal_pb2.Record


class WandbRun:
    """One run file: its identity from its ``run`` record, its batches on demand."""

    def __init__(self, path: Path, project: str | None) -> None:
        self.path = path
        record = _record_class()
        first = None
        for _, data in read_records(str(path)):
            rec = record()
            rec.ParseFromString(data)
            if rec.WhichOneof("record_type") == "run":
                first = rec.run
                break
        if first is None:
            raise ValueError(f"{path}: no run record (not a W&B run file, or cut before its start)")
        self.run_id = first.run_id
        self.project = project or first.project or "uncategorized"
        self.run = f"{first.display_name}-{first.run_id}" if first.display_name else first.run_id
        with open(path, "rb") as fh:
            head = fh.read(4096)
        self.producer_id = producer_id_of(_TAG, self.project, self.run, path.parent.name, path.name, head)
        self.skipped: dict[str, int] = {}

    def batches(self) -> Batches:
        record = _record_class()
        builder = ImportBatches(self.producer_id, self.project, self.run)
        meta: run_pb2.RunMeta | None = None
        config: dict[str, Any] = {}
        summary_items: dict[tuple[str, ...], str | None] = {}
        exit_code: int | None = None
        self.skipped = {}
        offset = 0
        for offset, data in read_records(str(self.path)):
            rec = record()
            rec.ParseFromString(data)
            kind = rec.WhichOneof("record_type")
            if kind == "history":
                self._row(builder, rec.history)
                if builder.full:
                    yield (*builder.seal(), offset)
            elif kind == "run" and meta is None:
                _apply(config, rec.run.config.update, rec.run.config.remove)
                meta = self._meta(rec.run, config)
                builder.add(meta)
            elif kind == "config":
                _apply(config, rec.config.update, rec.config.remove)
            elif kind == "summary":  # one per history row: kept as text, decoded once at the end
                _note(summary_items, rec.summary.update, rec.summary.remove)
            elif kind == "exit":
                exit_code = rec.exit.exit_code
        final = run_pb2.RunMeta()
        if meta is not None:
            final.CopyFrom(meta)
        final.config_json = _json(config)
        final.summary_json = _json(_replayed(summary_items))
        builder.add(final)
        if exit_code is None:
            state, reason = run_pb2.RUN_STATE_FAILED, ("imported from W&B: the run file has no exit record "
                                                       "(the run was killed, or was still running)")
        elif exit_code == 0:
            state, reason = run_pb2.RUN_STATE_FINISHED, "imported from W&B"
        else:
            state, reason = run_pb2.RUN_STATE_FAILED, f"imported from W&B: exit code {exit_code}"
        builder.add(run_pb2.RunStatus(version=1, project=self.project, run=self.run, state=state, reason=reason,
                                      updated_ns=builder.last_wall_ns + 1, producer_id=self.producer_id))
        yield (*builder.seal(), os.path.getsize(self.path))

    def _meta(self, run: Any, config: dict[str, Any]) -> run_pb2.RunMeta:
        started = run.start_time.seconds * 1_000_000_000 + run.start_time.nanos
        return run_pb2.RunMeta(version=1, project=self.project, run=self.run, config_json=_json(config),
                               tags=[*run.tags, _TAG], group=run.run_group, started_ns=started, host=run.host,
                               git_commit=run.git.commit, producer_id=self.producer_id,
                               client_version=__version__)

    def _row(self, builder: ImportBatches, history: Any) -> None:
        values: dict[str, float] = {}
        others: list[tuple[str, Any]] = []
        tree: dict[str, Any] = {}
        step: int | None = history.step.num if history.HasField("step") else None
        wall_ns = builder.last_wall_ns + 1
        for item in history.item:
            nested = item.nested_key
            path = None if item.key or len(nested) == 1 else list(nested)
            name = item.key or nested[0]
            if name in _ROW_FIELDS:
                if name == "_timestamp":
                    wall_ns = _seconds_to_ns(item.value_json)
                elif name == "_step" and step is None:
                    step = int(json.loads(item.value_json))
                continue
            if name.startswith("_wandb"):
                continue
            text = item.value_json
            if path is None:
                try:
                    values[name] = float(text)  # a JSON number, NaN, Infinity or -Infinity: the common case, fast
                    continue
                except ValueError:
                    path = [name]
            _set(tree, path, json.loads(text))
        for key, value in _leaves(tree):
            if isinstance(value, (int, float)):  # bool is an int
                values[key] = float(value)
            else:
                others.append((key, value))
        step = step or 0
        if values:
            builder.add_scalars(step, wall_ns, values)
        for key, value in others:
            if isinstance(value, str):
                builder.add(TextItem(key, step, wall_ns, value, 0))
            elif (buckets := _buckets(value)) is not None:
                builder.add(HistogramItem(key, step, wall_ns, buckets, 0))
            else:
                what = value.get("_type", "object") if isinstance(value, dict) else type(value).__name__
                label = f"{key} ({what})"
                self.skipped[label] = self.skipped.get(label, 0) + 1


def _set(tree: dict[str, Any], path: list[str], value: Any) -> None:
    """``value`` at ``path`` (W&B writes a logged dict as one item per leaf, under its key's path)."""
    node = tree
    for part in path[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[path[-1]] = value


def _leaves(tree: dict[str, Any], prefix: str = "") -> Any:
    """``(key, value)``: nested dicts joined with ``.``; a dict with a ``_type`` (a W&B media
    object, a histogram) is one value."""
    for name, value in tree.items():
        key = f"{prefix}.{name}" if prefix else name
        if isinstance(value, dict) and "_type" not in value:
            yield from _leaves(value, key)
        else:
            yield key, value


def _seconds_to_ns(text: str) -> int:
    """W&B's ``_timestamp`` (seconds, as JSON text) in nanoseconds, from its digits."""
    try:
        return int(decimal.Decimal(json.loads(text) if text.startswith('"') else text).scaleb(9))
    except (decimal.InvalidOperation, ValueError, TypeError):
        return 0


def _buckets(value: Any) -> Buckets | None:
    """A W&B histogram (``{"_type": "histogram", "values": counts, "bins": edges | "packedBins"}``)."""
    if not isinstance(value, dict) or value.get("_type") != "histogram":
        return None
    counts = value.get("values") or []
    edges = value.get("bins")
    packed = value.get("packedBins")
    if edges is None and isinstance(packed, dict):
        edges = [packed["min"] + packed["size"] * i for i in range(int(packed["count"]) + 1)]
    try:
        return Buckets(edges or [], counts)
    except (ValueError, TypeError):
        return None


def _apply(target: dict[str, Any], updates: Any, removes: Any) -> None:
    """Config or summary items (a ``key`` or a ``nested_key`` path, a JSON value) applied in order."""
    for item in updates:
        path = [item.key] if item.key else list(item.nested_key)
        if path and path[0] != "_wandb":
            _set(target, path, json.loads(item.value_json))
    for item in removes:
        path = [item.key] if item.key else list(item.nested_key)
        node: Any = target
        for part in path[:-1]:
            node = node.get(part)
            if not isinstance(node, dict):
                break
        else:
            if path:
                node.pop(path[-1], None)


def _note(items: dict[tuple[str, ...], str | None], updates: Any, removes: Any) -> None:
    """The last JSON text (None: removed) of each path, in the order of their last change."""
    for item in updates:
        path = (item.key,) if item.key else tuple(item.nested_key)
        items.pop(path, None)
        items[path] = item.value_json
    for item in removes:
        path = (item.key,) if item.key else tuple(item.nested_key)
        items.pop(path, None)
        items[path] = None


def _replayed(items: dict[tuple[str, ...], str | None]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for path, text in items.items():
        if not path or path[0] == "_wandb":
            continue
        if text is not None:
            _set(out, list(path), json.loads(text))
            continue
        node: Any = out
        for part in path[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(path[-1], None)
    return out


def _json(value: dict[str, Any]) -> str:
    return json.dumps(_finite(value), ensure_ascii=False, sort_keys=True)


def _finite(value: Any) -> Any:
    """NaN and ±Inf as the API spells them in JSON ("NaN", "Infinity", "-Infinity")."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def find_run_files(directory: str | Path) -> list[Path]:
    root = Path(directory)
    if root.is_file() and root.suffix == ".wandb":
        return [root]
    if not root.is_dir():
        raise FileNotFoundError(f"curvestream import: {directory} is not a directory")
    seen: dict[Path, Path] = {}
    for path in sorted(root.rglob("run-*.wandb")):
        if path.is_file() and "latest-run" not in path.parts:
            seen.setdefault(path.resolve(), path)
    return sorted(seen.values())


def import_wandb(directory: str | Path, settings: Settings, project: str | None = None, timeout_s: float = 600.0,
                 progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Import every W&B run file under ``directory``; ``progress(done_bytes, total_bytes)``."""
    runs, found = [], []
    for path in find_run_files(directory):
        source = WandbRun(path, project)
        found.append(source)
        runs.append(ImportRun(str(path), source.project, source.run, source.producer_id, path.stat().st_size,
                              source.batches))
    report = import_runs(runs, settings, timeout_s, progress)
    for entry, source in zip(report["runs"], found):
        if source.skipped:
            entry["skipped"] = source.skipped
    return {"directory": str(directory), **report}
