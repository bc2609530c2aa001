"""The line-protocol lines the InfluxDB store writes for a batch's points,
histograms and texts, a run's metadata and an alert transition (the
measurements are listed in :mod:`.store`). Pure text: no I/O.

A non-finite value has no float field in line protocol: it is written as
``nonfinite=1|2|3`` (NaN, +Inf, -Inf) instead of ``value``. A histogram's
min, max and sum that are not finite are written as 0.0.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from curvestream_wire.v1 import run_pb2

from curvestream_bridge.batch import DecodedBatch
from curvestream_bridge.store.base import meta_fields
from curvestream_bridge.store.influx.lineproto import encode_tag, string_field

__all__ = ["batch_lines", "meta_line", "group_line", "alert_line", "alert_now_line"]


def batch_lines(b: DecodedBatch) -> list[str]:
    """The lines of a batch's scalars (``cs_scalar``), histograms and texts."""
    lines: list[str] = []
    run_tags = f"project={encode_tag(b.project)},run={encode_tag(b.run)}"
    for col in b.scalars:
        prefix = f"cs_scalar,metric={encode_tag(col.key)},{run_tags} step="
        values = col.values
        finite = np.isfinite(values)
        steps = col.steps.tolist()
        walls = col.wall_ns.tolist()
        vals = values.tolist()
        if finite.all():
            lines.extend([f"{prefix}{s}i,value={v!r} {t}" for s, v, t in zip(steps, vals, walls)])
        else:
            for s, v, t, ok in zip(steps, vals, walls, finite.tolist()):
                if ok:
                    lines.append(f"{prefix}{s}i,value={v!r} {t}")
                else:
                    lines.append(f"{prefix}{s}i,nonfinite={_nonfinite_code(v)}i {t}")
    for h in b.histograms:
        lines.append(
            f"cs_histogram,metric={encode_tag(h.key)},{run_tags} step={h.step}i,"
            f"edges={string_field(json.dumps(list(h.bucket_edges)))},"
            f"counts={string_field(json.dumps(list(h.counts)))},min={_num(h.min)},max={_num(h.max)},"
            f"sum={_num(h.sum)},count={h.count}i {h.wall_ns}"
        )
    for t in b.texts:
        lines.append(f"cs_text,metric={encode_tag(t.key)},{run_tags} step={t.step}i,level={t.level}i,"
                     f"text={string_field(t.text)} {t.wall_ns}")
    return lines


def meta_line(meta: run_pb2.RunMeta) -> str:
    """A run's metadata, whole, as its ``cs_run`` line."""
    fields = json.dumps(meta_fields(meta), ensure_ascii=False)
    return (f"cs_run,project={encode_tag(meta.project)},run={encode_tag(meta.run)} "
            f"meta={string_field(fields)},seen=true 0")


def group_line(meta: run_pb2.RunMeta) -> str:
    """A run's membership of its group (``-``: none) as its ``cs_group`` line, at time 0:
    the dashboards' group variable, and the runs of the chosen groups, are its tag values."""
    return (f"cs_group,group={encode_tag(meta.group or '-')},project={encode_tag(meta.project)},"
            f"run={encode_tag(meta.run)} seen=true 0")


def alert_line(a: dict[str, Any]) -> str:
    """An alert transition (a JSON object of ``GET /api/v1/alerts``) as its ``cs_alert`` line."""
    tags = ",".join(f"{t}={encode_tag(str(a[f]) or '-')}" for t, f in (
        ("project", "project"), ("run", "run"), ("metric", "key"), ("rule", "rule"), ("kind", "kind"),
        ("severity", "severity"), ("state", "state")))
    value = a["value"]
    fields = (f"id={string_field(a['id'])},message={_plain_text_field(a['message'])},step={a['step']}i,"
              f"from_step={a['window']['from_step']}i,to_step={a['window']['to_step']}i,"
              f"version={a['version']}i,firing={1 if a['state'] == 'firing' else 0}i")
    if isinstance(value, float) and math.isfinite(value):
        fields += f",value={_num(value)}"
    return f"cs_alert,{tags} {fields} {a.get('time_ns') or round(a['time_ms']) * 1_000_000}"


def alert_now_line(a: dict[str, Any]) -> str:
    """An alert's current state (from its latest transition) as its ``cs_alert_now`` line:
    one row per alert, at time 0, rewritten by each transition (Grafana's alert rule reads
    these rows without a time window, so an alert firing for days stays firing there)."""
    tags = ",".join(f"{t}={encode_tag(str(a[f]) or '-')}" for t, f in (
        ("project", "project"), ("run", "run"), ("metric", "key"), ("rule", "rule")))
    return (f"cs_alert_now,{tags} firing={1 if a['state'] == 'firing' else 0}i,state={string_field(a['state'])},"
            f"kind={string_field(a['kind'])},severity={string_field(a['severity'])},step={a['step']}i,"
            f"version={a['version']}i,since={a.get('time_ns') or round(a['time_ms']) * 1_000_000}i,"
            f"message={_plain_text_field(a['message'])} 0")


def _nonfinite_code(v: float) -> int:
    return 1 if math.isnan(v) else (2 if v > 0 else 3)


def _plain_text_field(text: str) -> str:
    """A string field as readers such as Grafana annotations show it (no JSON quoting); newlines become spaces."""
    flat = " ".join(text.splitlines())
    return '"' + flat.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _num(v: float) -> str:
    return repr(float(v)) if math.isfinite(v) else "0.0"
