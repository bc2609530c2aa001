"""Every metric the bridge exports is declared once, typed, with its labels:
``/metrics`` has no ``untyped`` family, and every metric name the code, the
docs, the tests or the benches speak of is a declared one."""

from __future__ import annotations

import ast
import math
import os
import pathlib
import re
import time
from collections.abc import Iterator

import pytest

from curvestream_wire.v1 import batch_pb2

from bridge_client import served_bridge
from curvestream_bridge import metrics
from curvestream_bridge.metrics import DECLARED, REJECTED, STORE_WRITE_SECONDS, Metrics, counter

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "bridge" / "src" / "curvestream_bridge"]
TEXTS = [
    *SOURCES,
    ROOT / "docs",
    ROOT / "README.md",
    ROOT / "tests",
    ROOT / "bench",
    ROOT / "compose",
    ROOT / "grafana",
]
# a word that names a Prometheus series: what a metric's name ends in, or a histogram's series
METRIC_WORD = re.compile(r"\bcurvestream_[a-z0-9_]+_(?:total|seconds|bytes|entries|depth|clients|connected|batches|"
                         r"bucket|sum|count)\b")
CALLS = {"inc", "set", "observe", "gauge_fn", "get", "count"}


def _families(text: str) -> tuple[dict[str, str], list[str]]:
    """(family name -> its TYPE, the sample lines' names)."""
    kinds, samples = {}, []
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            kinds[name] = kind
        elif line and not line.startswith("#"):
            samples.append(re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0))
    return kinds, samples


def _family_of(sample: str, kinds: dict[str, str]) -> str | None:
    if sample in kinds:
        return sample
    base, _, suffix = sample.rpartition("_")
    return base if suffix in ("bucket", "sum", "count") and kinds.get(base) == "histogram" else None


def test_a_bridges_metrics_page_has_no_untyped_family_and_each_sample_belongs_to_a_declared_one(tmp_path):
    now = time.time_ns()
    batch = batch_pb2.Batch(version=1, producer_id=b"\x07" * 16, seq=1, project="metrics", run="r1",
                            sealed_ns=now, sent_ns=now)  # sent_ns: the clock offset is measured
    batch.scalars.add(key="loss", steps=[0, 1, 2], wall_ns=[now - 3, now - 2, now - 1], values=[1.0, math.nan, 0.5])
    headers = {"Content-Type": "application/x-protobuf"}
    with served_bridge(store=f"duckdb:///{tmp_path}/store.duckdb", max_payload_bytes=10_000) as (_bridge, client):
        assert client.post("/api/v1/ingest", content=batch.SerializeToString(), headers=headers).status_code == 200
        assert client.post("/api/v1/ingest", content=b"\xff junk", headers=headers).status_code == 400
        assert client.post("/api/v1/ingest", content=b"\0" * 20_000, headers=headers).status_code == 413
        text = client.get("/metrics").text
    kinds, samples = _families(text)
    assert "untyped" not in kinds.values(), text
    assert dict(kinds.items()) == {name: DECLARED[name].kind for name in kinds}, \
        "every family is declared, with its type"
    assert [s for s in samples if _family_of(s, kinds) is None] == []
    # the ones that used to export untyped, and the write time as a histogram
    assert {"curvestream_clock_offset_seconds", "curvestream_alerts_total"} <= kinds.keys()
    assert kinds["curvestream_store_write_seconds"] == "histogram"
    assert 'curvestream_store_write_seconds_bucket{le="+Inf"}' in text


def _metric_arguments(tree: ast.AST) -> list[ast.expr]:
    """The first argument of every call that names a metric: ``….metrics.inc(X, …)``, ``api.count(X)``."""
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CALLS
                and node.args):
            continue
        receiver = ast.unparse(node.func.value)
        if (node.func.attr in CALLS and receiver.endswith("metrics")) or (node.func.attr, receiver) == ("count", "api"):
            found.append(node.args[0])
    return found


def test_every_metric_the_bridge_touches_is_a_declared_object_never_a_name():
    checked = 0
    for path in (p for src in SOURCES for p in src.rglob("*.py")):
        for arg in _metric_arguments(ast.parse(path.read_text(), str(path))):
            where = f"{path.relative_to(ROOT)}:{arg.lineno}: {ast.unparse(arg)}"
            assert isinstance(arg, ast.Name), f"{where}: a metric is named by its declared object"
            if arg.id.isupper():
                assert isinstance(getattr(metrics, arg.id, None), metrics.Metric), f"{where} is not in metrics.py"
                checked += 1
    assert checked >= 25, "the bridge's metric calls were found"


def _texts() -> Iterator[pathlib.Path]:
    for root in TEXTS:
        if root.is_file():
            yield root
            continue
        for folder, subfolders, files in os.walk(root):
            subfolders[:] = [d for d in subfolders if d not in ("node_modules", "static", "__pycache__")]
            yield from (pathlib.Path(folder, f) for f in files if f.endswith((".py", ".md", ".conf", ".yaml", ".yml",
                                                                               ".json")))


def test_every_metric_name_in_the_code_docs_tests_and_benches_is_declared():
    histograms = {m.name for m in DECLARED.values() if m.kind == "histogram"}
    named = set(DECLARED) | {f"{h}_{s}" for h in histograms for s in ("bucket", "sum", "count")}
    unknown = {}
    for path in _texts():
            for word in METRIC_WORD.findall(path.read_text(errors="replace")):
                if word not in named:
                    unknown.setdefault(word, str(path.relative_to(ROOT)))
    assert unknown == {}


def test_a_metric_takes_exactly_its_declared_labels_and_its_kind_of_change():
    m = Metrics()
    with pytest.raises(ValueError, match="takes the labels"):
        m.inc(REJECTED)
    with pytest.raises(ValueError, match="takes the labels"):
        m.inc(REJECTED, reason="x", source="y")
    with pytest.raises(ValueError, match="histogram"):
        m.inc(STORE_WRITE_SECONDS)
    with pytest.raises(ValueError, match="counter"):
        m.inc(REJECTED, -1, reason="x")
    with pytest.raises(ValueError, match="declared twice"):
        counter("curvestream_rejected_total", "again", "reason")
    with pytest.raises(ValueError, match="ends in _total"):
        counter("curvestream_rejected", "a counter without _total")


def test_a_histogram_renders_cumulative_buckets_and_counters_print_exact_integers():
    m = Metrics()
    for seconds in (0.0005, 0.003, 0.003, 7.0, 100.0):
        m.observe(STORE_WRITE_SECONDS, seconds)
    m.inc(REJECTED, 12_345_678, reason="undecodable")
    lines = dict(line.rsplit(" ", 1) for line in m.render().splitlines() if not line.startswith("#"))
    def bucket(le):
        return float(lines[f'curvestream_store_write_seconds_bucket{{le="{le}"}}'])
    assert (bucket("0.001"), bucket("0.0025"), bucket("0.005"), bucket("5"), bucket("10"), bucket("60"),
            bucket("+Inf")) == (1, 1, 3, 3, 4, 4, 5)
    assert float(lines["curvestream_store_write_seconds_sum"]) == pytest.approx(107.0065)
    assert lines["curvestream_store_write_seconds_count"] == "5" and m.get(STORE_WRITE_SECONDS) == 5
    assert lines['curvestream_rejected_total{reason="undecodable"}'] == "12345678"
