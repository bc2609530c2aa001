"""Run edits and deletions in InfluxDB (see :mod:`..lifecycle`).

Measurements (meta retention policy, at time 0)::

    cs_run_edit,project,run                         name, tags (JSON), notes: the fields an edit set
    cs_deleted_run,deleted_project,deleted_run      deleted_ns: a deleted run (its own tag names, so that
                                                    dropping the run's series leaves it)

An edit writes only the fields it sets: InfluxDB merges the fields of a point
written again at the same time, so earlier edits of other fields stay.

A deletion writes the run's ``cs_deleted_run`` row, then ``DROP SERIES WHERE
"project" = … AND "run" = …``, which drops the run's series of every
measurement (points, histograms, texts, rollups and their plans, the run record
and its edits, alert transitions) in every retention policy, and the alert
engine's entries about the run by name. ``DROP SERIES`` is InfluxQL of 1.x;
InfluxDB 2.x and 3.x answer it with an error, which the bridge reports (delete
there with ``influx delete --predicate 'project="…" AND run="…"'``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from curvestream_bridge.store.influx.lineproto import decode_tag, encode_tag, string_field
from curvestream_bridge.store.influx.rows import tag_literal
from curvestream_bridge.store.lifecycle import RunEdits

if TYPE_CHECKING:
    from curvestream_bridge.store.influx.http import InfluxHTTP
    from curvestream_bridge.store.influx.rollup import RollupWriter
    from curvestream_bridge.store.influx.rowcache import RowCache

__all__ = ["InfluxLifecycle"]

EDITS, DELETED = "cs_run_edit", "cs_deleted_run"
_NAMES_PER_STATEMENT = 100


class InfluxLifecycle:
    """The :class:`~..lifecycle.RunLifecycle` methods of :class:`~.store.InfluxStore`."""

    if TYPE_CHECKING:  # the store's parts these methods use
        _db: InfluxHTTP
        _lock: threading.Lock
        _runs_seen: set[tuple[str, str]]
        _rollup: RollupWriter
        rollup_cache: RowCache

    def _known(self, project: str, run: str) -> bool:
        where = f'"project" = {tag_literal(project)} AND "run" = {tag_literal(run)}'
        return bool(self._db.series(f'SELECT "seen" FROM {self._db.meta("cs_run")} WHERE {where} LIMIT 1')
                    or self._db.series(f'SELECT "step" FROM "cs_scalar" WHERE {where} LIMIT 1'))

    def edit_run(self, project: str, run: str, change: RunEdits) -> bool:
        fields = [f"{k}={string_field(json.dumps(v) if k == 'tags' else v)}" for k, v in change.as_json().items()]
        with self._lock:
            if not self._known(project, run):
                return False
            if fields:
                self._db.write([f"{EDITS},project={encode_tag(project)},run={encode_tag(run)} {','.join(fields)} 0"],
                               meta=True)
            return True

    def run_edits(self) -> dict[tuple[str, str], dict[str, Any]]:
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for s in self._db.series(f'SELECT * FROM {self._db.meta(EDITS)} GROUP BY "project", "run"'):
            tags = s.get("tags", {})
            row = dict(zip(s["columns"], s["values"][-1]))
            found = {k: json.loads(row[k]) for k in ("name", "tags", "notes") if row.get(k) is not None}
            if "tags" in found:
                found["tags"] = json.loads(found["tags"])
            out[(decode_tag(tags.get("project", "")), decode_tag(tags.get("run", "")))] = found
        return out

    def delete_run(self, project: str, run: str, alert_entries: Sequence[str] = ()) -> bool:
        db = self._db
        with self._lock:
            if not self._known(project, run):
                return False
            db.write([f"{DELETED},deleted_project={encode_tag(project)},deleted_run={encode_tag(run)} "
                      f"deleted_ns={time.time_ns()}i 0"], meta=True)
            db.query(f'DROP SERIES WHERE "project" = {tag_literal(project)} AND "run" = {tag_literal(run)}',
                     method="POST")
            names = list(alert_entries)
            for i in range(0, len(names), _NAMES_PER_STATEMENT):
                matches = " OR ".join(f'"name" = {tag_literal(n)}' for n in names[i:i + _NAMES_PER_STATEMENT])
                db.query(f'DROP SERIES FROM "cs_alert_state" WHERE {matches}', method="POST")
            self._runs_seen.discard((project, run))
            self._rollup.forget_run(project, run)
            self.rollup_cache.clear()  # rows kept for reads: read again
            return True

    def deleted_runs(self) -> set[tuple[str, str]]:
        return {(decode_tag(s["tags"].get("deleted_project", "")), decode_tag(s["tags"].get("deleted_run", "")))
                for s in self._db.series(f'SELECT "deleted_ns" FROM {self._db.meta(DELETED)} '
                                         'GROUP BY "deleted_project", "deleted_run"')}
