"""A trainer process that logs at a steady rate and writes down what it logged.

    python tests/paced_trainer.py PROJECT RUN --rate 25000 --seconds 120 --out logged.json \\
        [--runs 25] [--settings '{"mqtt_url": ...}']

Each run logs ``len(KEYS)`` keys per step, ``rate`` points per second in
total, values from :func:`value_at` (so a test can check any stored prefix
without reading the file). With ``--runs N`` the process drives N runs named
``RUN-0`` … ``RUN-{N-1}``, each with its own producer and spool (one MQTT
connection for all of them), round-robin from one thread. It prints the number of steps logged
(per run) after every chunk, and after ``finish()`` writes
``{run: {"steps", "keys": {key: {"count", "sum_step", "sum_value"}}, "report", "complete"}}``
to ``--out``. Killed with ``kill -9``, it leaves only its spools and the last
printed step count.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

KEYS = ("loss", "acc")


def value_at(key_index: int, step: int) -> float:
    """A pseudo-random value that sums exactly in float64: a multiple of 1/4 below 2**18.

    Every partial sum of up to 2**33 such values stays a multiple of 1/4 below 2**51, so a
    sum over a series is the same in any order, on the trainer and inside InfluxDB.
    """
    return ((step * 2_654_435_761 + key_index * 40_503) % 1_000_003) / 4.0


def expected_checksum(key_index: int, steps: int) -> dict[str, float]:
    """count, sum of steps, sum, min and max of values of steps 0..steps-1 (numpy, exact)."""
    import numpy as np

    s = np.arange(steps, dtype=np.int64)
    values = ((s * 2_654_435_761 + key_index * 40_503) % 1_000_003) / 4.0
    return {"count": steps, "sum_step": int(s.sum()), "sum_value": float(values.sum()),
            "max_value": float(values.max()) if steps else 0.0, "min_value": float(values.min()) if steps else 0.0}


def main() -> None:
    import curvestream

    parser = argparse.ArgumentParser()
    parser.add_argument("project")
    parser.add_argument("run")
    parser.add_argument("--rate", type=float, required=True, help="points per second of each run, all keys together")
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--settings", default="{}", help="curvestream.init() settings as JSON")
    args = parser.parse_args()

    settings = json.loads(args.settings)
    names = [args.run] if args.runs == 1 else [f"{args.run}-{j}" for j in range(args.runs)]
    runs = []
    for j, name in enumerate(names):
        each = dict(settings)
        if args.runs > 1 and "spool_dir" in each:
            each["spool_dir"] = os.path.join(each["spool_dir"], str(j))
        runs.append(curvestream.init(project=args.project, id=name, **each))
    steps_per_s = args.rate / len(KEYS)
    chunk_s = 0.02
    steps_per_chunk = max(1, round(steps_per_s * chunk_s))
    total_steps = round(steps_per_s * args.seconds)
    sums = [{k: {"count": 0, "sum_step": 0, "sum_value": 0.0} for k in KEYS} for _ in runs]
    started = time.monotonic()
    step = 0
    while step < total_steps:
        end = min(step + steps_per_chunk, total_steps)
        for run, run_sums in zip(runs, sums):
            for s in range(step, end):
                values = {k: value_at(i, s) for i, k in enumerate(KEYS)}
                run.log(values, step=s)
                for k, v in values.items():
                    acc = run_sums[k]
                    acc["count"] += 1
                    acc["sum_step"] += s
                    acc["sum_value"] += v
        step = end
        print(step, flush=True)
        # a schedule, not a sleep per chunk: a late chunk is followed by an early one
        delay = started + step / steps_per_s - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    streamed_s = time.monotonic() - started
    reports = [run.finish() for run in runs]
    out = {name: {"steps": step, "keys": run_sums, "streamed_s": streamed_s, "report": dataclasses.asdict(report),
                  "complete": report.complete}
           for name, run_sums, report in zip(names, sums, reports)}
    with open(args.out, "w") as fh:
        json.dump(out, fh)
    sys.exit(0 if all(r.complete for r in reports) else 3)


if __name__ == "__main__":
    main()
