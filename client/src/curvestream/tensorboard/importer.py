"""``curvestream import tensorboard DIR``: every event file under DIR becomes a
run, with every point (no reservoir sampling), its original step and wall time.

Runs are named by the event file's directory relative to DIR (DIR's own name
for files directly in it; ``<dir>/<file name>`` when one directory holds
several files); the project is ``--project`` or DIR's name.

Re-importing is harmless and an interrupted import can simply be run again
(:mod:`curvestream.importing`): a file's producer id is derived from the file
(its name, its first record, the project and run it goes to) and its batches
are cut at fixed points, so every batch has the same (producer, seq) each
time; a second import sends nothing and says so.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from curvestream_wire.v1 import run_pb2

from curvestream.importing import Batches, ImportBatches, ImportRun, import_runs, producer_id_of
from curvestream.settings import Settings
from curvestream.tensorboard.events import EventDecoder, Histogram, Scalar, Text
from curvestream.tensorboard.records import read_records
from curvestream.values import HistogramItem, TextItem
from curvestream.version import __version__

__all__ = ["import_tensorboard", "find_event_files", "EventFile"]

_TAG = "tensorboard-import"


@dataclasses.dataclass
class EventFile:
    path: Path
    project: str
    run: str

    @property
    def producer_id(self) -> bytes:
        with open(self.path, "rb") as fh:
            first = fh.read(4096)
        return producer_id_of(_TAG, self.project, self.run, self.path.name, first)


def find_event_files(directory: str | Path, project: str | None = None) -> list[EventFile]:
    root = Path(directory).resolve()
    if not root.is_dir():
        raise FileNotFoundError(f"curvestream import: {directory} is not a directory")
    project = project or root.name
    by_dir: dict[Path, list[Path]] = {}
    for path in sorted(root.rglob("*tfevents*")):
        if path.is_file() and not path.name.endswith((".tmp", ".lock")):
            by_dir.setdefault(path.parent, []).append(path)
    files = []
    for folder, paths in sorted(by_dir.items()):
        rel = folder.relative_to(root).as_posix()
        base = root.name if rel == "." else rel
        for path in paths:
            files.append(EventFile(path, project, base if len(paths) == 1 else f"{base}/{path.name}"))
    return files


def _batches(source: EventFile, producer_id: bytes) -> Batches:
    """``(seq, payload, points, bytes read)`` for every batch of one file, always the same."""
    decoder = EventDecoder()
    builder = ImportBatches(producer_id, source.project, source.run)
    meta = run_pb2.RunMeta(version=1, project=source.project, run=source.run, config_json="{}", tags=[_TAG],
                           producer_id=producer_id, client_version=__version__)
    offset = 0
    for offset, payload in read_records(str(source.path)):
        event = decoder.parse(payload)
        wall_ns = round(event.wall_time * 1e9)  # as seconds_to_ns, inline: this loop runs per event
        if not meta.started_ns and wall_ns:
            meta.started_ns = wall_ns
            builder.add(meta)
        step = event.step
        for item in decoder.items(event):
            if type(item) is Scalar:
                builder.add_scalars(step, wall_ns, {item.key: item.value})
            elif type(item) is Histogram:
                builder.add(HistogramItem(item.key, step, wall_ns, item.buckets, 0))
            elif type(item) is Text:
                builder.add(TextItem(item.key, step, wall_ns, item.text, 0))
        if builder.full:
            yield (*builder.seal(), offset)
    final = run_pb2.RunMeta()
    final.CopyFrom(meta)
    final.config_json = _config_json(decoder.hparams)
    builder.add(final)
    builder.add(run_pb2.RunStatus(version=1, project=source.project, run=source.run,
                                  state=run_pb2.RUN_STATE_FINISHED, reason="imported from TensorBoard",
                                  updated_ns=builder.last_wall_ns + 1, producer_id=producer_id))
    yield (*builder.seal(), os.path.getsize(source.path))


def _config_json(hparams: dict[str, Any]) -> str:
    return json.dumps(hparams, ensure_ascii=False, sort_keys=True)


def import_tensorboard(directory: str | Path, settings: Settings, project: str | None = None,
                       timeout_s: float = 600.0,
                       progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Import every event file under ``directory``; ``progress(done_bytes, total_bytes)``."""
    runs = []
    for source in find_event_files(directory, project):
        producer_id = source.producer_id
        runs.append(ImportRun(str(source.path), source.project, source.run, producer_id, source.path.stat().st_size,
                              functools.partial(_batches, source, producer_id)))
    report = import_runs(runs, settings, timeout_s, progress)
    return {"directory": str(directory), **report}
