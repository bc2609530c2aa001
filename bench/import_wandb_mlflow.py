"""Import speed: ``curvestream import wandb`` and ``curvestream import mlflow``.

    nice .venv/bin/python bench/import_wandb_mlflow.py [--wandb-rows 50000] [--mlflow-steps 100000] [--keys 10]

- W&B: one offline run written by the real ``wandb`` package (``--wandb-rows``
  history rows of ``--keys`` scalars each, ``WANDB_MODE=offline``).
- MLflow: one run of ``--mlflow-steps`` steps of ``--keys`` metrics written
  straight in MLflow's file-store format (as ``log_metrics`` writes a step: one
  line per key, the same millisecond), because MLflow itself appends ~1,500
  lines/s here (a million-point run would take ten minutes to write); beside it,
  MLflow's own reader (``MlflowClient.get_metric_history`` for every key).

For each: reading alone (records read and decoded, batches made, nothing
sent), then the whole command through Mosquitto into a bridge on DuckDB until
the bridge has committed every batch, with the CPU seconds per million points
of the importing process and of the bridge (from /proc).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from import_tensorboard import through_bridge
from query_m4 import machine

WANDB_WRITER = r'''
import sys, wandb
rows, keys = int(sys.argv[1]), int(sys.argv[2])
names = [f"metric/{k}" for k in range(keys)]
run = wandb.init(project="bench", name="bench", mode="offline", config={"lr": 0.1})
for i in range(rows):
    run.log({n: 1.0 / (i + k + 1) for k, n in enumerate(names)}, step=i)
run.finish()
'''


def write_mlflow(root: pathlib.Path, steps: int, keys: int) -> int:
    import yaml

    exp, run_id, t0 = root / "1", "0123456789abcdef0123456789abcdef", 1_765_000_000_000
    (exp / run_id / "metrics" / "metric").mkdir(parents=True)
    for sub in ("params", "tags", "artifacts"):
        (exp / run_id / sub).mkdir()
    (root / ".trash").mkdir()
    (exp / "meta.yaml").write_text(yaml.safe_dump({"experiment_id": "1", "name": "bench", "lifecycle_stage": "active",
                                                   "artifact_location": f"file://{exp}"}))
    (exp / run_id / "meta.yaml").write_text(yaml.safe_dump({
        "run_id": run_id, "run_uuid": run_id, "run_name": "bench", "experiment_id": "1", "status": 3,
        "start_time": t0, "end_time": t0 + steps, "lifecycle_stage": "active", "user_id": "bench",
        "artifact_uri": f"file://{exp / run_id / 'artifacts'}", "source_type": 4, "source_name": "",
        "entry_point_name": "", "source_version": "", "tags": []}))
    (exp / run_id / "params" / "lr").write_text("0.1")
    (exp / run_id / "tags" / "mlflow.runName").write_text("bench")
    for k in range(keys):
        lines = "".join(f"{t0 + i} {1.0 / (i + k + 1)!r} {i}\n" for i in range(steps))
        (exp / run_id / "metrics" / "metric" / str(k)).write_text(lines)
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def mlflow_reader(root: pathlib.Path, keys: int) -> Callable[[], int]:
    """MLflow's own reading of the run, its imports done before the clock starts."""
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"file:{root}")
    return lambda: sum(len(client.get_metric_history("0123456789abcdef0123456789abcdef", f"metric/{k}"))
                       for k in range(keys))


def timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def reading(batches: Callable[[], Any]) -> int:
    return sum(n for _, _, n, _ in batches())


def report(label: str, points: int, wall: float, cpu: float, bridge_cpu: float | None = None) -> None:
    m = points / 1e6
    extra = f", bridge {bridge_cpu / m:.2f}" if bridge_cpu is not None else ""
    print(f"  {label:<42} {wall:7.1f} s  {points / wall:10,.0f} points/s   CPU s per M points: "
          f"this process {cpu / m:.2f}{extra}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--wandb-rows", type=int, default=50_000)
    parser.add_argument("--mlflow-steps", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=10)
    args = parser.parse_args()
    print(f"# reproduce: {sys.executable} bench/import_wandb_mlflow.py --wandb-rows {args.wandb_rows} "
          f"--mlflow-steps {args.mlflow_steps} --keys {args.keys}")
    machine("before")
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        from curvestream.importers.mlflow import find_runs, import_mlflow
        from curvestream.importers.wandb import WandbRun, find_run_files, import_wandb

        env = {**os.environ, "WANDB_DIR": str(work), "WANDB_SILENT": "true", "WANDB_MODE": "offline"}
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", WANDB_WRITER, str(args.wandb_rows), str(args.keys)], env=env, check=True)
        (path,) = find_run_files(work / "wandb")
        points = args.wandb_rows * args.keys
        print(f"\nW&B: {args.wandb_rows:,} rows x {args.keys} keys = {points:,} points "
              f"({path.stat().st_size / 1e6:.0f} MB, written by wandb in {time.perf_counter() - t0:.0f} s)")
        import wandb.proto.wandb_internal_pb2  # noqa: F401 - imported before the clock starts (~1 s)

        got, wall, cpu = timed(lambda: reading(WandbRun(path, None).batches))
        report("reading alone (records, decode, batches)", points, wall, cpu)
        result, wall, cpu, bridge_cpu = through_bridge(
            work / "w", lambda s: import_wandb(work / "wandb", s, timeout_s=3600))
        assert result["left_batches"] == 0, result
        report("curvestream import wandb (committed)", points, wall, cpu, bridge_cpu)

        store = work / "mlruns"
        size = write_mlflow(store, args.mlflow_steps, args.keys)
        points = args.mlflow_steps * args.keys
        print(f"\nMLflow: {args.mlflow_steps:,} steps x {args.keys} keys = {points:,} points ({size / 1e6:.0f} MB)")
        (run,) = find_runs(store)
        got, wall, cpu = timed(lambda: reading(run.batches))
        report("reading alone (lines, rows, batches)", points, wall, cpu)
        result, wall, cpu, bridge_cpu = through_bridge(work / "m", lambda s: import_mlflow(store, s, timeout_s=3600))
        assert result["left_batches"] == 0, result
        report("curvestream import mlflow (committed)", points, wall, cpu, bridge_cpu)
        got, wall, cpu = timed(mlflow_reader(store, args.keys))
        assert got == points, got
        report("MLflow's get_metric_history, every key", points, wall, cpu)
    machine("after")


if __name__ == "__main__":
    main()
