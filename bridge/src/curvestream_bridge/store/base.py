"""The interface every store engine implements, split into its roles (a
writer for ingest, a reader for queries, the alert engine's state), and the
records it returns. Engines: :mod:`.duckdb` (embedded) and :mod:`.influx` (InfluxDB
over the v1 HTTP API: 1.x, 2.x OSS through DBRP mappings, 3.x Core).

What a write may raise, mapped by each engine from its own errors::

    StoreUnavailable   the store cannot take it now (down, overloaded, disk full):
                       the bridge waits and retries, acknowledging nothing meanwhile
    StoreRejected      the store will never take this batch (InfluxDB refuses its
                       lines): the batch is rejected, alone, and the trainer told so
    anything else      a bug or an answer nobody foresaw: the bridge retries a few
                       times, raises the alarm, then parks the batch (it is never
                       rejected for this)
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol

import numpy as np

from curvestream_wire.v1 import run_pb2

from curvestream_bridge.batch import DecodedBatch
from curvestream_bridge.store.cancel import check

__all__ = ["Store", "StoreWriter", "StoreReader", "AlertStateStore", "SeriesOneByOne", "MetricsOneByOne",
           "StoreUnavailable", "StoreRejected", "RunRecord", "MetricRecord", "SeriesQuery", "SeriesResult",
           "PointColumns", "RunState", "state_name", "XAxis"]

XAxis = Literal["step", "time", "relative"]


class StoreUnavailable(Exception):
    """The store cannot be reached or refused the write for now: retry later."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class StoreRejected(Exception):
    """The store refuses this batch for good (its content, not the store's state,
    is the cause): retrying cannot help."""


class RunState(str, enum.Enum):
    UNKNOWN = "unknown"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    LOST = "lost"


_STATE_BY_PROTO: dict[int, RunState] = {
    run_pb2.RUN_STATE_UNSPECIFIED: RunState.UNKNOWN,
    run_pb2.RUN_STATE_RUNNING: RunState.RUNNING,
    run_pb2.RUN_STATE_FINISHED: RunState.FINISHED,
    run_pb2.RUN_STATE_FAILED: RunState.FAILED,
    run_pb2.RUN_STATE_LOST: RunState.LOST,
}


def state_name(state: int) -> str:
    return _STATE_BY_PROTO.get(state, RunState.UNKNOWN).value


@dataclasses.dataclass
class RunRecord:
    """``run`` is the run's identity; ``name`` the name its trainer gave it, which
    several runs may share (the identity when none was given or none is known yet)."""

    project: str
    run: str
    name: str = ""
    state: str = "unknown"
    reason: str = ""
    started_ns: int = 0
    updated_ns: int = 0
    tags: list[str] = dataclasses.field(default_factory=list)
    group: str = ""
    config: dict[str, Any] = dataclasses.field(default_factory=dict)
    host: str = ""
    git_commit: str = ""
    git_dirty: bool = False
    points: int = 0
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)
    summary: dict[str, Any] = dataclasses.field(default_factory=dict)
    resumes: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    notes: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "project": self.project, "run": self.run, "name": self.name or self.run, "resumes": self.resumes,
            "state": self.state, "reason": self.reason,
            "started_ms": self.started_ns / 1e6 if self.started_ns else None,
            "updated_ms": self.updated_ns / 1e6 if self.updated_ns else None,
            "tags": self.tags, "group": self.group, "config": self.config, "host": self.host,
            "git_commit": self.git_commit, "git_dirty": self.git_dirty, "points": self.points,
            "meta": self.meta, "summary": self.summary, "notes": self.notes,
        }


def meta_fields(meta: run_pb2.RunMeta) -> dict[str, Any]:
    """The stored, JSON-friendly form of a RunMeta."""
    return {
        "config": _json_object(meta.config_json), "summary": _json_object(meta.summary_json),
        "tags": list(meta.tags), "group": meta.group, "started_ns": meta.started_ns, "host": meta.host,
        "pid": meta.pid, "git_commit": meta.git_commit, "git_dirty": meta.git_dirty,
        "python_version": meta.python_version, "frameworks": dict(meta.frameworks),
        "data_version": meta.data_version, "client_version": meta.client_version,
        "name": meta.name, "resumes": [resume_json(r) for r in meta.resumes], "notes": meta.notes,
    }


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {"_unparsed": text}
    return value if isinstance(value, dict) else {"value": value}


def resume_json(resume: run_pb2.Resume) -> dict[str, Any]:
    """A session that continued the run: when it started, the step the stored run had
    ended at (None: unknown, resumed offline) and, when the session's steps went back
    to or below it, the first such step (else None)."""
    return {"started_ms": resume.started_ns / 1e6,
            "after_step": resume.after_step if resume.after_step_known else None,
            "back_to_step": resume.back_to_step if resume.went_back else None}


def record_from_meta(project: str, run: str, fields: dict[str, Any] | None) -> RunRecord:
    rec = RunRecord(project, run, name=(fields or {}).get("name") or run)
    if fields:
        rec.config = fields.get("config", {})
        rec.summary = fields.get("summary", {})
        rec.tags = fields.get("tags", [])
        rec.group = fields.get("group", "")
        rec.started_ns = fields.get("started_ns", 0)
        rec.host = fields.get("host", "")
        rec.git_commit = fields.get("git_commit", "")
        rec.git_dirty = fields.get("git_dirty", False)
        rec.resumes = fields.get("resumes") or []
        rec.notes = fields.get("notes") or ""
        rec.meta = {k: fields.get(k) for k in ("pid", "python_version", "frameworks", "data_version",
                                                 "client_version")}
    return rec


@dataclasses.dataclass
class MetricRecord:
    key: str
    kind: str  # scalar | histogram | text
    count: int
    first_step: int
    last_step: int
    first_ns: int
    last_ns: int
    last_value: float

    def to_json(self) -> dict[str, Any]:
        from curvestream_bridge.jsonnum import json_float

        return {"key": self.key, "kind": self.kind, "count": self.count, "first_step": self.first_step,
                "last_step": self.last_step, "first_ms": self.first_ns / 1e6, "last_ms": self.last_ns / 1e6,
                "last_value": json_float(self.last_value)}


@dataclasses.dataclass(frozen=True)
class SeriesQuery:
    project: str
    run: str
    key: str
    x: XAxis = "step"
    start: float | None = None  # in x units: step, ms since the epoch, or seconds since the run start
    end: float | None = None
    width: int = 1000
    snap: bool = False  # columns of whole grid units, the range widened to them (see m4/snap.py)


class PointColumns(NamedTuple):
    """Points of one series: parallel arrays."""

    step: np.ndarray  # int64
    wall_ns: np.ndarray  # int64
    value: np.ndarray  # float64


@dataclasses.dataclass
class SeriesResult:
    raw: bool
    total: int
    x: np.ndarray  # float64 in x units
    step: np.ndarray  # int64
    wall_ns: np.ndarray  # int64
    y: np.ndarray  # float64
    start: float | None
    end: float | None
    before: int | None = None  # index into the arrays of the neighbour left of the range
    after: int | None = None


class StoreWriter(Protocol):
    """The ingest side of a store: used from the bridge's one writer thread."""

    def write(self, batches: Sequence[DecodedBatch]) -> None:
        """Store these batches (points, histograms, texts, metadata, status) and
        their (producer, seq) records, all or nothing, in one write whatever the
        series they hold. Raises StoreUnavailable (retry later) or StoreRejected
        (never); see the module docstring."""

    def stored_ranges(self, producer_id: bytes) -> list[tuple[int, int]]:
        """The seq ranges of this producer already in the store."""

    def stored_ranges_many(self, producer_ids: Sequence[bytes]) -> dict[bytes, list[tuple[int, int]]]:
        """``stored_ranges`` of several producers, read together where the engine
        can (a producer with none may be left out)."""

    def apply_status(self, status: run_pb2.RunStatus) -> bool:
        """Set a run's status unless a newer one is stored; True when applied."""

    def apply_meta(self, meta: run_pb2.RunMeta) -> None: ...


class StoreReader(Protocol):
    """The query side of a store: used from any number of reader threads."""

    def runs(self, refs: Sequence[tuple[str, str]] | None = None) -> list[RunRecord]:
        """Every run, newest first; with ``refs`` (project, run pairs) only those of them
        that are stored, read without reading the others."""

    def metrics(self, project: str, run: str) -> list[MetricRecord]: ...

    def metrics_many(self, runs: Sequence[tuple[str, str]]) -> list[list[MetricRecord]]:
        """``[metrics(p, r) for p, r in runs]``, read together where the engine can
        (the metric keys of an overlay's runs in one statement instead of one each)."""

    def series(self, query: SeriesQuery) -> SeriesResult: ...

    def series_many(self, queries: Sequence[SeriesQuery]) -> list[SeriesResult]:
        """``[series(q) for q in queries]``, read together where the engine can
        (an overlay's runs in one pass over the store instead of one each)."""

    def points(self, project: str, run: str, key: str) -> Iterator[PointColumns]:
        """Every stored point of one scalar series, in wall-time order, a few
        hundred thousand at a time (the export: no view, no downsampling)."""

    def histograms(self, project: str, run: str, key: str, limit: int) -> list[dict[str, Any]]: ...

    def texts(self, project: str, run: str, key: str | None, limit: int) -> list[dict[str, Any]]: ...


class AlertStateStore(Protocol):
    """Where the alert engine keeps its state and its transitions."""

    def load_alert_state(self) -> dict[str, str]:
        """The alert engine's saved state entries (name -> JSON text)."""

    def save_alert_state(self, entries: dict[str, str], alerts: Sequence[dict[str, Any]]) -> None:
        """Upsert state entries and record alert transitions (JSON objects of
        ``GET /api/v1/alerts``), all or nothing, in one write. Raises StoreUnavailable."""


class Store(StoreWriter, StoreReader, AlertStateStore, Protocol):
    """A store engine: the three roles, and its life. Engines are used from one
    writer thread and any number of reader threads."""

    name: str

    def ping(self) -> bool: ...

    def close(self) -> None: ...


class SeriesOneByOne:
    """``series_many`` for an engine that answers one series at a time."""

    if TYPE_CHECKING:
        def series(self, query: SeriesQuery) -> SeriesResult: ...

    def series_many(self, queries: Sequence[SeriesQuery]) -> list[SeriesResult]:
        out = []
        for q in queries:
            check()  # the client may have gone away: the rest is read for nobody
            out.append(self.series(q))
        return out


class MetricsOneByOne:
    """``metrics_many`` for an engine that answers one run's metrics at a time."""

    if TYPE_CHECKING:
        def metrics(self, project: str, run: str) -> list[MetricRecord]: ...

    def metrics_many(self, runs: Sequence[tuple[str, str]]) -> list[list[MetricRecord]]:
        return [self.metrics(project, run) for project, run in runs]
